//! The trial-lifecycle cases every backend passes ([`crate::support::lifecycle`]), on the
//! cluster: a trial is a pod.

use crate::support::lifecycle::{Target, lifecycle_cases};

lifecycle_cases!(Target::kubernetes());
