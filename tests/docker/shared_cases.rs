//! The trial-lifecycle cases every backend passes ([`crate::support::lifecycle`]), on Docker.

use crate::support::lifecycle::{Target, lifecycle_cases};

lifecycle_cases!(Target::docker());
