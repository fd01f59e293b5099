//! The Kubernetes client layer (issue 46): what a trial needs from a cluster, through the `kube`
//! crate (k8s-openapi's oldest API feature; only core v1, authorization v1 and networking v1
//! objects, which every supported cluster and the 1.20 test cluster serve).
//!
//! The shapes follow the backend seam (issue 45) so they can be put behind its traits:
//! - [`Cluster`] is a connected place (the seam's `Host`): one namespace of one cluster, reached
//!   through a kubeconfig as kubectl reads it. [`Cluster::ping`], [`Cluster::capacity`] (from the
//!   nodes' allocatable CPUs and memory), [`Cluster::sweep_run`] (a run's objects, by label, never
//!   another run's).
//! - [`TrialSite`] is what one trial's pods share (the seam's `TrialSite`): a NetworkPolicy that
//!   denies ingress (and egress unless the task allows the internet) and a Secret of
//!   verifier-only values mounted into the verifier's pod alone ([`TrialSite::open`]);
//!   [`TrialSite::close`] deletes all of the trial's objects.
//! - [`TrialPod`] is one running environment (the seam's `Environment`): a pod with the task's
//!   CPUs and memory as requests and limits, hardened as Docker's trial containers are
//!   ([`pod`]), exec over WebSocket with streamed output and the exit code from the status
//!   channel ([`exec`]), tar in and out through exec ([`copy`]), every process but PID 1 stopped
//!   and confirmed, removal.
//! - [`preflight`] names what is wrong with a cluster in one line each; [`registry`] pushes a
//!   locally built Docker image to the registry the cluster pulls from and records its digest.
//!
//! Every failure is a [`KubeError`] carrying a [`KubeFault`] (pending too long, image pull,
//! eviction, node lost, pod gone, stream cut, …) that maps onto the runner's [`crate::runner::Fault`]:
//! a fault of the cluster is never a verdict.
//!
//! skillscope's static shell reaches a pod through an init container: the busybox image
//! ([`crate::runner::base_image::BUSYBOX_IMAGE`], pushed to the registry) copies its `/bin` into
//! an emptyDir that the trial's container mounts read-only at
//! [`crate::runner::static_shell::STATIC_SHELL_DIR`]. Kubernetes has no copy API, so files move
//! as tar through an exec of that busybox — in the agent's pod too (Docker's agent containers do
//! not mount it).

pub mod backend;
pub mod cluster;
pub mod copy;
pub mod exec;
pub mod fault;
pub mod pod;
pub mod policy;
pub mod preflight;
pub mod quantity;
pub mod registry;

pub use backend::KubernetesBackend;
pub use cluster::{Cluster, ClusterCapacity, ClusterSpec};
pub use copy::TarBody;
pub use exec::{ExecEvent, ExecOutput, ExecSpec, ExecStream};
pub use fault::{KubeError, KubeFault};
pub use pod::{EnvironmentSpec, PodCommand, Role, TrialLabels, TrialPod};
pub use policy::{TrialSite, TrialSiteSpec};

/// Labels (and one annotation) on every object skillscope creates in a cluster. Label values
/// are at most 63 characters of `[A-Za-z0-9_.-]` ([`labels::value`] makes them so).
pub mod labels {
    /// The well-known label naming the managing tool; value [`MANAGED_BY_VALUE`].
    pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
    /// Value of [`MANAGED_BY`].
    pub const MANAGED_BY_VALUE: &str = "skillscope";
    /// Run uid (what a run's sweep goes by).
    pub const RUN_UID: &str = "skillscope/run-uid";
    /// Harbor trial name (shortened to a label value; the full name is the annotation
    /// [`TRIAL_NAME`]).
    pub const TRIAL: &str = "skillscope/trial";
    /// Attempt row id.
    pub const ATTEMPT_ID: &str = "skillscope/attempt-id";
    /// What a pod is for: `agent`, `verifier` or `helper`.
    pub const ROLE: &str = "skillscope/role";
    /// Marks a pod that belongs to no run (a preflight probe); swept by age.
    pub const HELPER: &str = "skillscope/helper";
    /// Annotation with the full Harbor trial name.
    pub const TRIAL_NAME: &str = "skillscope/trial-name";

    /// `s` as a label value: characters outside `[A-Za-z0-9_.-]` become `_`, at most 63 characters,
    /// starting and ending with an alphanumeric (a long value keeps its head and an 8-hex digest of
    /// the whole, so two long names stay apart).
    pub fn value(s: &str) -> String {
        let clean: String = s
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let clean = if clean.len() > 63 {
            use sha2::Digest;
            let digest = hex::encode(sha2::Sha256::digest(s.as_bytes()));
            format!("{}-{}", &clean[..54], &digest[..8])
        } else {
            clean
        };
        clean
            .trim_matches(|c: char| !c.is_ascii_alphanumeric())
            .to_string()
    }
}

/// Where a verifier's pod mounts its trial's Secret of verifier-only values (one file per
/// variable, readable by root only).
pub const SECRET_DIR: &str = "/skillscope/secret";
