//! Tests of the Kubernetes client layer (`skillscope::runner::kubernetes`) against a real
//! cluster: the project's local test cluster (`eval "$(scripts/k8s-up.sh)"`, which CI runs) or
//! any cluster the environment names. They find it through `KUBECONFIG` and
//! `SKILLSCOPE_REGISTRY` (the lines k8s-up.sh prints) and the Docker daemon (skillscope's
//! busybox image is pushed from it to the registry); without them every test fails, saying so.
//!
//! Each test keeps to its own run uid (and its own namespace where it changes the namespace),
//! so the tests run in parallel on one cluster and never touch each other's pods.

mod copy;
mod exec;
mod faults;
mod harness;
mod lifecycle;
mod preflight;
