//! A trial's pod: its spec (built as a pure function of what the trial asks), its creation with
//! a deadline for getting Running, the reading of its state into typed faults, stopping every
//! process but PID 1, and removal.
//!
//! Every pod skillscope creates is hardened as Docker's trial containers are: only
//! [`KEPT_CAPABILITIES`], `allowPrivilegeEscalation: false` (no-new-privileges), the runtime's
//! default seccomp profile, no service-account token, no service links in the environment,
//! `restartPolicy: Never` (a container that exits is a lost environment, not a restart), and the
//! task's CPUs and memory as both requests and limits (Guaranteed QoS when both are given).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerStatus, EmptyDirVolumeSource, EnvVar, Pod,
    PodSecurityContext, PodSpec, ResourceRequirements, SeccompProfile, SecretVolumeSource,
    SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};

use super::cluster::{Cluster, delete_pod};
use super::fault::{KubeError, KubeFault};
use super::{SECRET_DIR, labels, quantity};
use crate::runner::backend::KEPT_CAPABILITIES;
use crate::runner::sandbox::STATIC_SHELL_DIR;

/// The name of the trial's container in its pod.
pub const CONTAINER: &str = "trial";
/// The init container that fills the static shell's emptyDir.
pub const STATIC_INIT: &str = "skillscope-static";
const STATIC_VOLUME: &str = "skillscope-static";
const SECRET_VOLUME: &str = "skillscope-secret";

/// What a pod is for (the seam's role: its `as_str` is the role label's value).
pub use crate::runner::backend::Role;

/// The ids a trial's objects carry as labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrialLabels {
    /// Run uid.
    pub run_uid: String,
    /// Harbor trial name.
    pub trial: String,
    /// Attempt row id.
    pub attempt_id: i64,
}

impl TrialLabels {
    /// The labels of an object of this trial (`role`: a pod's role, `None` for shared objects).
    pub fn map(&self, role: Option<Role>) -> BTreeMap<String, String> {
        let mut m = BTreeMap::from([
            (
                labels::MANAGED_BY.to_string(),
                labels::MANAGED_BY_VALUE.to_string(),
            ),
            (labels::RUN_UID.to_string(), labels::value(&self.run_uid)),
            (labels::TRIAL.to_string(), labels::value(&self.trial)),
            (labels::ATTEMPT_ID.to_string(), self.attempt_id.to_string()),
        ]);
        if let Some(r) = role {
            m.insert(labels::ROLE.to_string(), r.as_str().to_string());
        }
        m
    }

    /// A label selector for every object of this trial (run uid and attempt id).
    pub fn selector(&self) -> String {
        format!(
            "{}={},{}={},{}={}",
            labels::MANAGED_BY,
            labels::MANAGED_BY_VALUE,
            labels::RUN_UID,
            labels::value(&self.run_uid),
            labels::ATTEMPT_ID,
            self.attempt_id
        )
    }

    /// The annotation with the full trial name.
    pub fn annotations(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(labels::TRIAL_NAME.to_string(), self.trial.clone())])
    }

    /// A DNS-1123 name for an object of this trial: `ss-<attempt>-<what>-<8 hex>`.
    pub fn object_name(&self, what: &str) -> String {
        let short = uuid::Uuid::new_v4().simple().to_string();
        format!("ss-{}-{what}-{}", self.attempt_id, &short[..8])
    }
}

/// What the trial container's PID 1 runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PodCommand {
    /// skillscope's static busybox `sleep infinity` (the image's ENTRYPOINT is overridden; needs
    /// the static shell): idle, for execs.
    #[default]
    Idle,
    /// The image's ENTRYPOINT with `sh -c "exec sleep infinity"` as its arguments (as Harbor's
    /// compose file runs a trial's main container; the image's own `sh`).
    EntrypointIdle,
    /// Exactly these: `command` overrides the ENTRYPOINT, `args` the CMD (`None` keeps the
    /// image's).
    Exact {
        /// ENTRYPOINT override.
        command: Option<Vec<String>>,
        /// CMD override.
        args: Option<Vec<String>>,
    },
}

/// One environment of a trial (an agent's or a verifier's pod).
#[derive(Debug, Clone)]
pub struct EnvironmentSpec {
    /// What it is for.
    pub role: Role,
    /// Image reference the cluster pulls (a registry reference, best with `@sha256:` digest).
    pub image: String,
    /// `imagePullPolicy` (`IfNotPresent` when `None`).
    pub image_pull_policy: Option<String>,
    /// What PID 1 runs.
    pub command: PodCommand,
    /// CPU cores, as request and limit.
    pub cpus: Option<f64>,
    /// Memory in bytes, as request and limit.
    pub memory_bytes: Option<i64>,
    /// `runAsUser` (`None`: the image's user).
    pub run_as_user: Option<i64>,
    /// `runAsGroup`.
    pub run_as_group: Option<i64>,
    /// Working folder (`None`: the image's).
    pub working_dir: Option<String>,
    /// Container environment (never secrets: those go per exec or in the trial's Secret).
    pub env: Vec<(String, String)>,
    /// Folders that get an emptyDir of their own (the verifier's `/tests`, `/logs/verifier`).
    pub empty_dirs: Vec<String>,
    /// Mount skillscope's static shell read-only at [`STATIC_SHELL_DIR`] (needs the site's
    /// static image).
    pub static_shell: bool,
    /// Mount the trial's Secret of verifier-only values at [`SECRET_DIR`] (verifier only).
    pub mount_secret: bool,
    /// How long the pod may take to be Running (scheduling, image pull, start).
    pub start_deadline: Duration,
}

impl EnvironmentSpec {
    /// An idle environment of `image` for `role` with the static shell, no limits, and a
    /// 5-minute start deadline.
    pub fn idle(role: Role, image: impl Into<String>) -> EnvironmentSpec {
        EnvironmentSpec {
            role,
            image: image.into(),
            image_pull_policy: None,
            command: PodCommand::Idle,
            cpus: None,
            memory_bytes: None,
            run_as_user: None,
            run_as_group: None,
            working_dir: None,
            env: Vec::new(),
            empty_dirs: Vec::new(),
            static_shell: true,
            mount_secret: false,
            start_deadline: Duration::from_secs(300),
        }
    }
}

/// The pod object for `spec`: named `name`, labelled with `trial`'s labels and the role,
/// `static_image` running the init container that fills the static shell, `secret` the trial's
/// Secret to mount (when the spec asks for it).
///
/// # Errors
/// A message when the spec asks for the static shell without a static image, or for the Secret
/// when the trial has none.
pub fn build_pod(
    name: &str,
    trial: &TrialLabels,
    spec: &EnvironmentSpec,
    static_image: Option<&str>,
    secret: Option<&str>,
) -> Result<Pod, String> {
    let mut volumes = Vec::new();
    let mut mounts = Vec::new();
    let mut init = Vec::new();
    if spec.static_shell {
        let image = static_image
            .ok_or("the static shell needs skillscope's busybox image in the registry")?;
        volumes.push(Volume {
            name: STATIC_VOLUME.into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Default::default()
        });
        mounts.push(VolumeMount {
            name: STATIC_VOLUME.into(),
            mount_path: STATIC_SHELL_DIR.into(),
            read_only: Some(true),
            ..Default::default()
        });
        init.push(Container {
            name: STATIC_INIT.into(),
            image: Some(image.to_string()),
            image_pull_policy: Some("IfNotPresent".into()),
            // The image's /bin: the static busybox and one relative link per applet.
            command: Some(vec![
                "/bin/busybox".into(),
                "cp".into(),
                "-a".into(),
                "/bin/.".into(),
                "/static/".into(),
            ]),
            volume_mounts: Some(vec![VolumeMount {
                name: STATIC_VOLUME.into(),
                mount_path: "/static".into(),
                ..Default::default()
            }]),
            resources: Some(resources(Some(0.1), Some(32 * 1024 * 1024))),
            security_context: Some(hardened(None, None)),
            ..Default::default()
        });
    }
    if spec.mount_secret {
        let secret = secret.ok_or("the verifier's Secret was asked for, but the trial has none")?;
        volumes.push(Volume {
            name: SECRET_VOLUME.into(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(secret.to_string()),
                default_mode: Some(0o400),
                ..Default::default()
            }),
            ..Default::default()
        });
        mounts.push(VolumeMount {
            name: SECRET_VOLUME.into(),
            mount_path: SECRET_DIR.into(),
            read_only: Some(true),
            ..Default::default()
        });
    }
    for (i, dir) in spec.empty_dirs.iter().enumerate() {
        let vol = format!("empty-{i}");
        volumes.push(Volume {
            name: vol.clone(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Default::default()
        });
        mounts.push(VolumeMount {
            name: vol,
            mount_path: dir.clone(),
            ..Default::default()
        });
    }
    let (command, args) = match &spec.command {
        PodCommand::Idle => {
            if !spec.static_shell {
                return Err("an idle pod sleeps with the static shell's busybox".into());
            }
            (
                Some(vec![
                    format!("{STATIC_SHELL_DIR}/busybox"),
                    "sleep".into(),
                    "infinity".into(),
                ]),
                None,
            )
        }
        PodCommand::EntrypointIdle => (
            None,
            Some(vec!["sh".into(), "-c".into(), "exec sleep infinity".into()]),
        ),
        PodCommand::Exact { command, args } => (command.clone(), args.clone()),
    };
    let env: Vec<EnvVar> = spec
        .env
        .iter()
        .map(|(k, v)| EnvVar {
            name: k.clone(),
            value: Some(v.clone()),
            ..Default::default()
        })
        .collect();
    let container = Container {
        name: CONTAINER.into(),
        image: Some(spec.image.clone()),
        image_pull_policy: Some(
            spec.image_pull_policy
                .clone()
                .unwrap_or_else(|| "IfNotPresent".into()),
        ),
        command,
        args,
        env: (!env.is_empty()).then_some(env),
        working_dir: spec.working_dir.clone(),
        volume_mounts: (!mounts.is_empty()).then_some(mounts),
        resources: Some(resources(spec.cpus, spec.memory_bytes)),
        security_context: Some(hardened(spec.run_as_user, spec.run_as_group)),
        ..Default::default()
    };
    Ok(Pod {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(trial.map(Some(spec.role))),
            annotations: Some(trial.annotations()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![container],
            init_containers: (!init.is_empty()).then_some(init),
            volumes: (!volumes.is_empty()).then_some(volumes),
            restart_policy: Some("Never".into()),
            automount_service_account_token: Some(false),
            enable_service_links: Some(false),
            termination_grace_period_seconds: Some(1),
            security_context: Some(PodSecurityContext {
                seccomp_profile: Some(SeccompProfile {
                    type_: "RuntimeDefault".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    })
}

fn resources(cpus: Option<f64>, memory_bytes: Option<i64>) -> ResourceRequirements {
    let mut m = BTreeMap::new();
    if let Some(c) = cpus {
        m.insert("cpu".to_string(), Quantity(quantity::cpu(c)));
    }
    if let Some(b) = memory_bytes {
        m.insert("memory".to_string(), Quantity(quantity::memory(b)));
    }
    ResourceRequirements {
        requests: (!m.is_empty()).then(|| m.clone()),
        limits: (!m.is_empty()).then_some(m),
        ..Default::default()
    }
}

fn hardened(user: Option<i64>, group: Option<i64>) -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        privileged: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            add: Some(KEPT_CAPABILITIES.iter().map(|c| c.to_string()).collect()),
        }),
        run_as_user: user,
        run_as_group: group,
        ..Default::default()
    }
}

/// Where a pod stands, read from its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodState {
    /// Every container is running (and none has restarted).
    Running,
    /// Not yet: why (scheduling, pulling, creating).
    Pending(String),
    /// Lost for good: which fault, and what the cluster said.
    Failed(KubeFault, String),
}

const PULL_ERRORS: [&str; 5] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "RegistryUnavailable",
];

/// Reads a pod's phase, conditions and container states: an evicted pod, an OOM-killed or
/// exited container, an image that cannot be pulled, a node that stopped reporting (`Unknown`
/// phase, `NodeLost` reason), a pod being deleted — each a [`PodState::Failed`] with its fault;
/// an unschedulable pod is [`PodState::Pending`] with the scheduler's message.
pub fn pod_state(pod: &Pod) -> PodState {
    if pod.metadata.deletion_timestamp.is_some() {
        return PodState::Failed(KubeFault::PodGone, "the pod is being deleted".into());
    }
    let Some(status) = &pod.status else {
        return PodState::Pending("no status yet".into());
    };
    let reason = status.reason.clone().unwrap_or_default();
    let message = status.message.clone().unwrap_or_default();
    let said = |fallback: &str| {
        let s = [reason.as_str(), message.as_str()]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(": ");
        if s.is_empty() {
            fallback.to_string()
        } else {
            s
        }
    };
    if reason == "NodeLost" {
        return PodState::Failed(KubeFault::NodeLost, said("node lost"));
    }
    let init = status
        .init_container_statuses
        .as_deref()
        .unwrap_or_default();
    let main = status.container_statuses.as_deref().unwrap_or_default();
    match status.phase.as_deref().unwrap_or("Pending") {
        "Failed" => {
            if reason == "Evicted" || reason == "Preempting" {
                return PodState::Failed(KubeFault::Evicted, said("evicted"));
            }
            if let Some(oom) = terminated_with(main, "OOMKilled") {
                return PodState::Failed(KubeFault::OutOfMemory, oom);
            }
            PodState::Failed(KubeFault::PodGone, said(&exits(init.iter().chain(main))))
        }
        "Succeeded" => PodState::Failed(
            KubeFault::PodGone,
            format!("the pod's containers exited: {}", exits(main.iter())),
        ),
        "Unknown" => PodState::Failed(
            KubeFault::NodeLost,
            said("the pod's node stopped reporting"),
        ),
        "Running" => {
            if let Some(oom) = terminated_with(main, "OOMKilled") {
                return PodState::Failed(KubeFault::OutOfMemory, oom);
            }
            for c in main {
                if c.restart_count > 0 {
                    return PodState::Failed(
                        KubeFault::PodGone,
                        format!("container {} restarted", c.name),
                    );
                }
                let st = c.state.as_ref();
                if let Some(t) = st.and_then(|s| s.terminated.as_ref()) {
                    return PodState::Failed(
                        KubeFault::PodGone,
                        format!(
                            "container {} exited ({}, code {})",
                            c.name,
                            t.reason.as_deref().unwrap_or("no reason"),
                            t.exit_code
                        ),
                    );
                }
                if st.and_then(|s| s.running.as_ref()).is_none() {
                    return PodState::Pending(format!("container {} is not running yet", c.name));
                }
            }
            if main.is_empty() {
                return PodState::Pending("no container status yet".into());
            }
            PodState::Running
        }
        _ => pending_state(status, init, main),
    }
}

fn pending_state(
    status: &k8s_openapi::api::core::v1::PodStatus,
    init: &[ContainerStatus],
    main: &[ContainerStatus],
) -> PodState {
    for c in init.iter().chain(main) {
        let Some(st) = &c.state else { continue };
        if let Some(w) = &st.waiting {
            let r = w.reason.as_deref().unwrap_or_default();
            let m = w.message.as_deref().unwrap_or_default();
            if PULL_ERRORS.contains(&r) {
                return PodState::Failed(KubeFault::ImagePull, format!("{r} for {}: {m}", c.image));
            }
            if matches!(
                r,
                "CreateContainerConfigError" | "CreateContainerError" | "RunContainerError"
            ) {
                return PodState::Failed(KubeFault::Refused, format!("{r} ({}): {m}", c.name));
            }
        }
        if let Some(t) = &st.terminated
            && t.exit_code != 0
        {
            return PodState::Failed(
                KubeFault::PodGone,
                format!(
                    "container {} exited with code {} ({})",
                    c.name,
                    t.exit_code,
                    t.message
                        .as_deref()
                        .or(t.reason.as_deref())
                        .unwrap_or("no message")
                ),
            );
        }
    }
    let unschedulable = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False");
    if let Some(c) = unschedulable {
        return PodState::Pending(format!(
            "{}: {}",
            c.reason.as_deref().unwrap_or("Unschedulable"),
            c.message.as_deref().unwrap_or("no node fits")
        ));
    }
    let waiting: Vec<String> = init
        .iter()
        .chain(main)
        .filter_map(|c| {
            let w = c.state.as_ref()?.waiting.as_ref()?;
            Some(format!(
                "{}: {}",
                c.name,
                w.reason.as_deref().unwrap_or("waiting")
            ))
        })
        .collect();
    if waiting.is_empty() {
        PodState::Pending("pending".into())
    } else {
        PodState::Pending(waiting.join(", "))
    }
}

fn terminated_with(statuses: &[ContainerStatus], reason: &str) -> Option<String> {
    statuses.iter().find_map(|c| {
        let t = c.state.as_ref()?.terminated.as_ref()?;
        (t.reason.as_deref() == Some(reason)).then(|| {
            format!(
                "container {} was {reason} (exit code {})",
                c.name, t.exit_code
            )
        })
    })
}

fn exits<'a>(statuses: impl Iterator<Item = &'a ContainerStatus>) -> String {
    let v: Vec<String> = statuses
        .filter_map(|c| {
            let t = c.state.as_ref()?.terminated.as_ref()?;
            Some(format!(
                "{} exited with code {} ({})",
                c.name,
                t.exit_code,
                t.reason.as_deref().unwrap_or("no reason")
            ))
        })
        .collect();
    if v.is_empty() {
        "the pod failed".into()
    } else {
        v.join("; ")
    }
}

/// A running trial pod (the seam's `Environment`). Cloning shares the pod.
#[derive(Clone)]
pub struct TrialPod {
    pub(crate) cluster: Cluster,
    pub(crate) name: String,
    pub(crate) static_shell: bool,
    pub(crate) secret: bool,
}

impl TrialPod {
    /// Creates `pod` and waits until it is Running, at most `deadline`. A namespace quota that
    /// refuses the pod is waited out like a pod Pending for want of a node (capacity may come
    /// free), until the deadline. On any failure the pod is deleted before the error returns.
    ///
    /// # Errors
    /// [`KubeFault::PendingTooLong`] with the scheduler's or the quota's message when the
    /// deadline passes; [`KubeFault::ImagePull`], [`KubeFault::Evicted`],
    /// [`KubeFault::NodeLost`], [`KubeFault::OutOfMemory`], [`KubeFault::PodGone`] as
    /// [`pod_state`] reads them; the API's own errors.
    pub async fn create(
        cluster: &Cluster,
        pod: &Pod,
        deadline: Duration,
    ) -> Result<TrialPod, KubeError> {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let spec = pod.spec.as_ref();
        let static_shell = spec
            .and_then(|s| s.init_containers.as_ref())
            .is_some_and(|i| i.iter().any(|c| c.name == STATIC_INIT));
        let secret = spec
            .and_then(|s| s.volumes.as_ref())
            .is_some_and(|v| v.iter().any(|v| v.name == SECRET_VOLUME));
        let handle = TrialPod {
            cluster: cluster.clone(),
            name: name.clone(),
            static_shell,
            secret,
        };
        let started = Instant::now();
        let result = async {
            handle.create_within(pod, started, deadline).await?;
            handle.wait_running(started, deadline).await
        }
        .await;
        match result {
            Ok(()) => Ok(handle),
            Err(e) => {
                handle.remove().await;
                Err(e)
            }
        }
    }

    async fn create_within(
        &self,
        pod: &Pod,
        started: Instant,
        deadline: Duration,
    ) -> Result<(), KubeError> {
        let pods: Api<Pod> = self.cluster.api();
        let context = format!("creating pod {}", self.name);
        loop {
            match pods.create(&PostParams::default(), pod).await {
                Ok(_) => return Ok(()),
                // A create retried after a lost answer.
                Err(kube::Error::Api(s)) if s.code == 409 => return Ok(()),
                Err(kube::Error::Api(s))
                    if s.code == 403 && s.message.contains("exceeded quota") =>
                {
                    if started.elapsed() >= deadline {
                        return Err(KubeError::new(
                            context,
                            KubeFault::PendingTooLong,
                            format!(
                                "refused for {}s by the namespace's quota: {}",
                                deadline.as_secs(),
                                s.message
                            ),
                        ));
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(e) => {
                    let err = KubeError::kube(&context, &e);
                    // The API server restarting: retried within the deadline.
                    if matches!(
                        err.fault,
                        KubeFault::ApiUnreachable | KubeFault::ApiError | KubeFault::ApiTimeout
                    ) && started.elapsed() < deadline
                    {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                    return Err(err);
                }
            }
        }
    }

    async fn wait_running(&self, started: Instant, deadline: Duration) -> Result<(), KubeError> {
        let pods: Api<Pod> = self.cluster.api();
        let context = format!("starting pod {}", self.name);
        let mut pause = Duration::from_millis(100);
        let mut last: String;
        loop {
            match pods.get_opt(&self.name).await {
                Ok(Some(pod)) => match pod_state(&pod) {
                    PodState::Running => return Ok(()),
                    PodState::Failed(fault, message) => {
                        return Err(KubeError::new(context, fault, message));
                    }
                    PodState::Pending(why) => last = why,
                },
                Ok(None) => {
                    return Err(KubeError::new(
                        context,
                        KubeFault::PodGone,
                        "the pod was deleted while it started",
                    ));
                }
                Err(e) => last = KubeError::kube("reading the pod", &e).to_string(),
            }
            if started.elapsed() >= deadline {
                return Err(KubeError::new(
                    context,
                    KubeFault::PendingTooLong,
                    format!("not Running after {}s: {last}", deadline.as_secs()),
                ));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }

    /// The pod's name.
    pub fn id(&self) -> &str {
        &self.name
    }

    /// The cluster it runs on.
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// True when the pod has skillscope's static shell at [`STATIC_SHELL_DIR`].
    pub fn has_static_shell(&self) -> bool {
        self.static_shell
    }

    /// Checks the pod is still Running with its container as started; when not, the fault
    /// ([`pod_state`]; a pod whose Ready condition is false on a node that is not Ready is
    /// [`KubeFault::NodeLost`]).
    ///
    /// # Errors
    /// The fault that took the pod; [`KubeFault::PodGone`] when it no longer exists.
    pub async fn health(&self) -> Result<(), KubeError> {
        let context = format!("checking pod {}", self.name);
        let pods: Api<Pod> = self.cluster.api();
        let pod = pods
            .get_opt(&self.name)
            .await
            .map_err(|e| KubeError::kube(&context, &e))?
            .ok_or_else(|| KubeError::new(&context, KubeFault::PodGone, "the pod was deleted"))?;
        match pod_state(&pod) {
            PodState::Running => {}
            PodState::Failed(fault, message) => {
                return Err(KubeError::new(context, fault, message));
            }
            PodState::Pending(why) => {
                return Err(KubeError::new(context, KubeFault::PodGone, why));
            }
        }
        let not_ready = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status != "True"));
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
        if not_ready && let Some(node) = node {
            let nodes: Api<k8s_openapi::api::core::v1::Node> =
                Api::all(self.cluster.client().clone());
            if let Ok(Some(n)) = nodes.get_opt(&node).await {
                let ready = n
                    .status
                    .and_then(|s| s.conditions)
                    .unwrap_or_default()
                    .into_iter()
                    .find(|c| c.type_ == "Ready");
                if let Some(c) = ready
                    && c.status != "True"
                {
                    return Err(KubeError::new(
                        context,
                        KubeFault::NodeLost,
                        format!(
                            "node {node} is not Ready ({}: {})",
                            c.reason.unwrap_or_default(),
                            c.message.unwrap_or_default()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Kills every process in the trial container but its PID 1 (the static shell's builtin
    /// `kill -9 -1`, which spares the shell itself, repeated) and confirms none is left (dead children of PID 1 that it never reaps
    /// count as gone).
    ///
    /// # Errors
    /// [`KubeError`] when the exec fails or processes survive 5 s of killing (their pids named).
    pub async fn stop_processes(&self) -> Result<(), KubeError> {
        let s = STATIC_SHELL_DIR;
        let script = format!(
            "i=0\n\
             while :; do\n\
             kill -9 -1 2>/dev/null\n\
             left=\n\
             for p in /proc/[0-9]*; do\n\
               n=${{p#/proc/}}\n\
               [ \"$n\" = 1 ] || [ \"$n\" = $$ ] && continue\n\
               read -r line < \"$p/stat\" 2>/dev/null || continue\n\
               st=${{line##*) }}; st=${{st%% *}}\n\
               [ \"$st\" = Z ] || left=\"$left $n\"\n\
             done\n\
             [ -z \"$left\" ] && exit 0\n\
             i=$((i+1)); [ $i -ge 50 ] && {{ echo \"processes left:$left\"; exit 1; }}\n\
             {s}/sleep 0.1\n\
             done"
        );
        let out = self
            .run_output(
                &super::ExecSpec::argv([format!("{s}/sh"), "-c".into(), script]),
                4096,
            )
            .await?;
        if out.exit_code == 0 {
            Ok(())
        } else {
            Err(KubeError::new(
                format!("stopping the processes of pod {}", self.name),
                KubeFault::PodGone,
                String::from_utf8_lossy(&out.stdout).trim().to_string(),
            ))
        }
    }

    /// Deletes the pod at once (grace period 0); errors are logged, not returned (teardown is
    /// off the critical path; a run's sweep catches what is left).
    pub async fn remove(&self) {
        let pods: Api<Pod> = self.cluster.api();
        if let Err(e) = delete_pod(&pods, &self.name).await {
            tracing::warn!("removing pod {}: {e}", self.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
        PodCondition, PodStatus,
    };

    fn trial() -> TrialLabels {
        TrialLabels {
            run_uid: "0b7c1a2e-uid".into(),
            trial: "3d-scan-calc__AbC1234".into(),
            attempt_id: 42,
        }
    }

    #[test]
    fn label_values_are_valid_and_long_ones_stay_apart() {
        assert_eq!(
            labels::value("3d-scan-calc__AbC1234"),
            "3d-scan-calc__AbC1234"
        );
        assert_eq!(labels::value("a b/c"), "a_b_c");
        assert_eq!(labels::value("-x-"), "x");
        let a = labels::value(&"t".repeat(80));
        let b = labels::value(&format!("{}u", "t".repeat(79)));
        assert!(a.len() <= 63 && b.len() <= 63);
        assert_ne!(a, b);
    }

    #[test]
    fn a_trial_pod_is_hardened_limited_labelled_and_gets_the_static_shell() {
        let mut spec = EnvironmentSpec::idle(Role::Verifier, "127.0.0.1:15000/task@sha256:ab");
        spec.cpus = Some(1.5);
        spec.memory_bytes = Some(512 * 1024 * 1024);
        spec.mount_secret = true;
        spec.empty_dirs = vec!["/tests".into(), "/logs/verifier".into()];
        let pod = build_pod(
            "ss-42-verifier-0",
            &trial(),
            &spec,
            Some("127.0.0.1:15000/skillscope/busybox@sha256:cd"),
            Some("ss-42-verifier-env"),
        )
        .unwrap();
        let labels = pod.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["app.kubernetes.io/managed-by"], "skillscope");
        assert_eq!(labels["skillscope/run-uid"], "0b7c1a2e-uid");
        assert_eq!(labels["skillscope/attempt-id"], "42");
        assert_eq!(labels["skillscope/role"], "verifier");
        let ps = pod.spec.as_ref().unwrap();
        assert_eq!(ps.automount_service_account_token, Some(false));
        assert_eq!(ps.restart_policy.as_deref(), Some("Never"));
        let c = &ps.containers[0];
        let sc = c.security_context.as_ref().unwrap();
        assert_eq!(sc.allow_privilege_escalation, Some(false));
        let caps = sc.capabilities.as_ref().unwrap();
        assert_eq!(caps.drop.as_deref(), Some(&["ALL".to_string()][..]));
        assert!(!caps.add.as_ref().unwrap().iter().any(|c| c == "NET_RAW"));
        let r = c.resources.as_ref().unwrap();
        assert_eq!(r.requests, r.limits);
        assert_eq!(r.limits.as_ref().unwrap()["cpu"].0, "1500m");
        assert_eq!(r.limits.as_ref().unwrap()["memory"].0, "536870912");
        assert_eq!(
            c.command.as_ref().unwrap()[0],
            format!("{STATIC_SHELL_DIR}/busybox")
        );
        let mounts = c.volume_mounts.as_ref().unwrap();
        let static_mount = mounts
            .iter()
            .find(|m| m.mount_path == STATIC_SHELL_DIR)
            .unwrap();
        assert_eq!(static_mount.read_only, Some(true));
        assert!(
            mounts
                .iter()
                .any(|m| m.mount_path == SECRET_DIR && m.read_only == Some(true))
        );
        assert!(mounts.iter().any(|m| m.mount_path == "/logs/verifier"));
        let init = &ps.init_containers.as_ref().unwrap()[0];
        assert_eq!(init.name, STATIC_INIT);
        assert!(init.resources.as_ref().unwrap().limits.is_some());
        let secret_vol = ps
            .volumes
            .as_ref()
            .unwrap()
            .iter()
            .find_map(|v| v.secret.as_ref())
            .unwrap();
        assert_eq!(secret_vol.default_mode, Some(0o400));
    }

    #[test]
    fn specs_that_cannot_be_met_are_refused() {
        let mut spec = EnvironmentSpec::idle(Role::Agent, "img");
        assert!(build_pod("p", &trial(), &spec, None, None).is_err());
        spec.mount_secret = true;
        assert!(build_pod("p", &trial(), &spec, Some("bb"), None).is_err());
        spec.mount_secret = false;
        spec.static_shell = false;
        assert!(build_pod("p", &trial(), &spec, None, None).is_err());
        spec.command = PodCommand::EntrypointIdle;
        let pod = build_pod("p", &trial(), &spec, None, None).unwrap();
        let ps = pod.spec.unwrap();
        assert!(ps.init_containers.is_none());
        assert_eq!(ps.containers[0].command, None);
    }

    fn with_status(phase: &str, f: impl FnOnce(&mut PodStatus)) -> Pod {
        let mut status = PodStatus {
            phase: Some(phase.into()),
            ..Default::default()
        };
        f(&mut status);
        Pod {
            status: Some(status),
            ..Default::default()
        }
    }

    fn container(state: ContainerState, restarts: i32) -> ContainerStatus {
        ContainerStatus {
            name: CONTAINER.into(),
            image: "img:1".into(),
            state: Some(state),
            restart_count: restarts,
            ..Default::default()
        }
    }

    fn waiting(reason: &str) -> ContainerState {
        ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some(reason.into()),
                message: Some("the kubelet says so".into()),
            }),
            ..Default::default()
        }
    }

    fn terminated(reason: &str, code: i32) -> ContainerState {
        ContainerState {
            terminated: Some(ContainerStateTerminated {
                reason: Some(reason.into()),
                exit_code: code,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn running() -> ContainerState {
        ContainerState {
            running: Some(ContainerStateRunning::default()),
            ..Default::default()
        }
    }

    #[test]
    fn pod_states_name_each_fault() {
        let fault = |p: &Pod| match pod_state(p) {
            PodState::Failed(f, _) => Some(f),
            _ => None,
        };
        let ok = with_status("Running", |s| {
            s.container_statuses = Some(vec![container(running(), 0)])
        });
        assert_eq!(pod_state(&ok), PodState::Running);
        let pull = with_status("Pending", |s| {
            s.container_statuses = Some(vec![container(waiting("ImagePullBackOff"), 0)])
        });
        assert_eq!(fault(&pull), Some(KubeFault::ImagePull));
        let init_pull = with_status("Pending", |s| {
            s.init_container_statuses = Some(vec![container(waiting("ErrImagePull"), 0)])
        });
        assert_eq!(fault(&init_pull), Some(KubeFault::ImagePull));
        let evicted = with_status("Failed", |s| {
            s.reason = Some("Evicted".into());
            s.message = Some("The node was low on resource: memory.".into());
        });
        assert_eq!(fault(&evicted), Some(KubeFault::Evicted));
        let oom = with_status("Running", |s| {
            s.container_statuses = Some(vec![container(terminated("OOMKilled", 137), 0)])
        });
        assert_eq!(fault(&oom), Some(KubeFault::OutOfMemory));
        let restarted = with_status("Running", |s| {
            s.container_statuses = Some(vec![container(running(), 1)])
        });
        assert_eq!(fault(&restarted), Some(KubeFault::PodGone));
        let lost = with_status("Unknown", |_| {});
        assert_eq!(fault(&lost), Some(KubeFault::NodeLost));
        let node_lost = with_status("Running", |s| s.reason = Some("NodeLost".into()));
        assert_eq!(fault(&node_lost), Some(KubeFault::NodeLost));
        let exited = with_status("Succeeded", |s| {
            s.container_statuses = Some(vec![container(terminated("Completed", 0), 0)])
        });
        assert_eq!(fault(&exited), Some(KubeFault::PodGone));
        let config = with_status("Pending", |s| {
            s.container_statuses = Some(vec![container(waiting("CreateContainerConfigError"), 0)])
        });
        assert_eq!(fault(&config), Some(KubeFault::Refused));
        let mut deleting = ok.clone();
        deleting.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ));
        assert_eq!(fault(&deleting), Some(KubeFault::PodGone));
    }

    #[test]
    fn an_unschedulable_pod_is_pending_with_the_scheduler_s_words() {
        let pod = with_status("Pending", |s| {
            s.conditions = Some(vec![PodCondition {
                type_: "PodScheduled".into(),
                status: "False".into(),
                reason: Some("Unschedulable".into()),
                message: Some("0/1 nodes are available: 1 Insufficient cpu.".into()),
                ..Default::default()
            }])
        });
        assert_eq!(
            pod_state(&pod),
            PodState::Pending("Unschedulable: 0/1 nodes are available: 1 Insufficient cpu.".into())
        );
        let creating = with_status("Pending", |s| {
            s.container_statuses = Some(vec![container(waiting("ContainerCreating"), 0)])
        });
        assert_eq!(
            pod_state(&creating),
            PodState::Pending("trial: ContainerCreating".into())
        );
    }
}
