//! Tests of the Kubernetes backend (`skillscope::runner::kubernetes`: the client layer, the
//! README's example run, and the trial-lifecycle cases shared with the Docker tests) against a
//! real cluster: the project's local test cluster (`eval "$(scripts/k8s-up.sh)"`, which CI runs) or
//! any cluster the environment names. They find it through `KUBECONFIG` and
//! `SKILLSCOPE_REGISTRY` (the lines k8s-up.sh prints) and the Docker daemon (skillscope's
//! busybox image is pushed from it to the registry); without them every test fails, saying so.
//!
//! Each test keeps to its own run uid (and its own namespace where it changes the namespace),
//! so the tests run in parallel on one cluster and never touch each other's pods.

#[allow(dead_code, unused_imports)]
#[path = "../support/mod.rs"]
mod support;

mod copy;
mod example_run;
mod exec;
mod faults;
mod harness;
mod lifecycle;
mod preflight;
mod run_faults;
mod run_support;
mod shared_cases;
