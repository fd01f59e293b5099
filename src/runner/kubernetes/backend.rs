//! The Kubernetes backend behind the seam ([`crate::runner::backend`]): a trial is a pod.
//!
//! - [`KubernetesBackend`] (a [`Backend`]): one place, a namespace of a cluster reached through a
//!   kubeconfig ([`ClusterSpec`]). Images are built where skillscope builds them today (this
//!   machine's Docker daemon, through the Docker backend) and pushed to the registry the cluster
//!   pulls from; pods name them by digest.
//! - [`KubePlace`] (a [`Host`]): the connected namespace. Its capacity is the cluster's Ready
//!   nodes' allocatable CPUs and memory; its sweeps go by the run's label, never another run's;
//!   what an image holds is read once from the local image it was pushed from.
//! - [`KubeSite`] (a [`TrialSite`]): the trial's NetworkPolicy (ingress denied, egress too
//!   unless the task allows the internet); its environments are pods ([`KubeEnvironment`])
//!   whose PID 1 is skillscope's static shell, hardened and limited as [`super::pod`] says.
//!
//! What the seam asks that a pod cannot give is refused, never done differently: mounts of this
//! machine's folders or volumes, `/etc/hosts` lines (a relay to a model proxy on this machine),
//! compose tasks' services. [`unsupported`] names them before a run starts.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use tokio::sync::OnceCell;

use super::cluster::{Cluster, ClusterSpec};
use super::exec::{ExecEvent, ExecSpec as KubeExec};
use super::fault::KubeError;
use super::pod::{EnvironmentSpec as PodSpec, PodCommand, TrialLabels, TrialPod};
use super::policy::{TrialSite as KubeTrialSite, TrialSiteSpec};
use super::registry::{self, PushedImage};
use crate::runner::backend::{
    Backend, BackendKind, Capacity, Chunk, Environment, EnvironmentSpec, ExecExit, ExecSpec,
    ExecStream, Host, Mount, Place, Role, SiteError, SiteSpec, Sweep, TarBody, TrialSite,
};
use crate::runner::docker::{DockerBackend, OWN_INIT};
use crate::runner::image::{BuildFailure, BuildOutcome, ImageFacts};
use crate::runner::is_root_user;
use crate::runner::sandbox::STATIC_SHELL_DIR;
use crate::runner::{RunnerError, labels as run_labels};
use crate::skillsbench::{Condition, Task};

/// How long a trial's pod may take to be Running (scheduling, pull, start) by default: 5
/// minutes. Past it the attempt is a runner fault ([`KubeFault::PendingTooLong`]) and retried.
pub const DEFAULT_START_DEADLINE: Duration = Duration::from_secs(300);

/// Trials as pods in one namespace of a cluster.
pub struct KubernetesBackend {
    spec: ClusterSpec,
    slots: usize,
    start_deadline: Duration,
    /// This machine's Docker daemon, where images are built.
    builder: Arc<DockerBackend>,
    shared: Arc<Shared>,
}

/// What every connection of the backend shares: images pushed, the static shell's image.
#[derive(Default)]
struct Shared {
    /// Pushed images by local tag and content hash (one push per image and process).
    pushed: tokio::sync::Mutex<HashMap<String, Arc<OnceCell<PushedImage>>>>,
    /// The local tag of each pushed reference (for reading what an image holds).
    local_of: Mutex<HashMap<String, String>>,
    /// skillscope's busybox in the registry.
    static_image: OnceCell<PushedImage>,
}

impl KubernetesBackend {
    /// The namespace `spec` names, `slots` trials at once, pods given `start_deadline` to be
    /// Running; images built on this machine's Docker daemon with `images`.
    pub fn new(
        spec: ClusterSpec,
        slots: usize,
        start_deadline: Duration,
        images: crate::runner::docker::image::ImageSettings,
    ) -> KubernetesBackend {
        KubernetesBackend {
            spec,
            slots: slots.max(1),
            start_deadline,
            builder: Arc::new(DockerBackend::new(&[], slots, images)),
            shared: Arc::default(),
        }
    }

    /// The place's name before connecting: `<context>/<namespace>` as given (`current` and
    /// `default` when not).
    fn place_name(&self) -> String {
        format!(
            "{}/{}",
            self.spec.context.as_deref().unwrap_or("current"),
            self.spec.namespace.as_deref().unwrap_or("default")
        )
    }
}

#[async_trait]
impl Backend for KubernetesBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Kubernetes
    }

    fn places(&self) -> Vec<Place> {
        vec![Place {
            name: self.place_name(),
            slots: self.slots,
        }]
    }

    async fn connect(
        &self,
        _index: usize,
        run_uid: Option<&str>,
    ) -> Result<Arc<dyn Host>, RunnerError> {
        let registry = self.spec.registry.clone().ok_or_else(|| {
            RunnerError::Task(
                "the Kubernetes backend needs the registry the cluster pulls from \
                 (--registry, [backend] registry or SKILLSCOPE_REGISTRY)"
                    .into(),
            )
        })?;
        let cluster = Cluster::connect(&self.spec).await?;
        let version = cluster.ping().await?;
        // `list nodes` is optional (cluster-scoped): without it the run's concurrency is the cap.
        // A trial holds two pods for a moment (the verifier's starts before the agent's goes),
        // so it is given half the cluster: two trials can never hold every CPU with their agents'
        // pods while their verifiers' wait.
        let capacity = cluster.capacity().await.ok().filter(|c| c.nodes > 0);
        let builder = self.builder.connect(0, run_uid).await?;
        Ok(Arc::new(KubePlace {
            name: cluster.name(),
            cluster,
            registry,
            version,
            capacity: Capacity {
                cpus: capacity.map_or(1, |c| (c.cpus / 2.0).floor().max(1.0) as u32),
                memory_bytes: capacity.map_or(0, |c| (c.memory_bytes / 2) as i64),
                slots: self.slots,
            },
            start_deadline: self.start_deadline,
            builder,
            shared: self.shared.clone(),
        }))
    }

    async fn forget_build_failures(&self) {
        self.builder.forget_build_failures().await;
    }
}

/// A connected namespace.
pub struct KubePlace {
    name: String,
    cluster: Cluster,
    registry: String,
    version: String,
    capacity: Capacity,
    start_deadline: Duration,
    /// This machine's Docker daemon (builds, image facts).
    builder: Arc<dyn Host>,
    shared: Arc<Shared>,
}

impl KubePlace {
    /// A client of this machine's Docker daemon, for pushing.
    fn docker() -> Result<bollard::Docker, RunnerError> {
        bollard::Docker::connect_with_local_defaults().map_err(|e| {
            RunnerError::backend_text("connecting to this machine's Docker daemon", e.to_string())
        })
    }

    /// Pushes local image `tag` (content `hash`) to the registry, once per process.
    async fn push(&self, tag: &str, hash: &str) -> Result<PushedImage, RunnerError> {
        let cell = {
            let mut map = self.shared.pushed.lock().await;
            map.entry(format!("{tag}#{hash}")).or_default().clone()
        };
        let pushed = cell
            .get_or_try_init(|| async {
                let (repo, version) = split_tag(tag);
                registry::push_image(&Self::docker()?, tag, &self.registry, &repo, &version).await
            })
            .await?
            .clone();
        self.shared
            .local_of
            .lock()
            .expect("lock")
            .insert(pushed.reference.clone(), tag.to_string());
        Ok(pushed)
    }

    /// skillscope's busybox in the registry (the static shell's init container).
    async fn static_image(&self) -> Result<String, RunnerError> {
        let image = self
            .shared
            .static_image
            .get_or_try_init(|| async {
                registry::ensure_static_image(&Self::docker()?, &self.registry).await
            })
            .await?;
        Ok(image.reference.clone())
    }
}

impl Shared {
    /// The local tag `reference` was pushed from (itself when it was not pushed here).
    fn local_tag(&self, reference: &str) -> String {
        self.local_of
            .lock()
            .expect("lock")
            .get(reference)
            .cloned()
            .unwrap_or_else(|| reference.to_string())
    }
}

/// `repo:tag` split at the tag's colon (`latest` when none).
fn split_tag(tag: &str) -> (String, String) {
    match tag.rsplit_once(':') {
        Some((repo, version)) if !version.contains('/') => (repo.to_string(), version.to_string()),
        _ => (tag.to_string(), "latest".to_string()),
    }
}

#[async_trait]
impl Host for KubePlace {
    fn name(&self) -> &str {
        &self.name
    }

    fn capacity(&self) -> Capacity {
        self.capacity
    }

    fn local(&self) -> bool {
        false
    }

    fn version(&self) -> &str {
        &self.version
    }

    fn data_root(&self) -> Option<&str> {
        self.builder.data_root()
    }

    async fn ping(&self) -> Result<(), RunnerError> {
        self.cluster.ping().await.map(|_| ()).map_err(Into::into)
    }

    async fn sweep(&self, sweep: &Sweep) -> Result<usize, RunnerError> {
        // The local daemon's helpers (image facts) go too.
        let local = self.builder.sweep(sweep).await.unwrap_or(0);
        let n = match sweep {
            Sweep::Run { uid, keep } => self.cluster.sweep_run(uid, keep).await?,
            Sweep::StaleHelpers(age) => self.cluster.sweep_helpers(*age).await?,
        };
        Ok(n + local)
    }

    async fn has_image(&self, reference: &str) -> bool {
        self.builder.has_image(reference).await
    }

    async fn prepare_image(
        &self,
        task: &Arc<Task>,
        condition: &Condition,
        timeout: Duration,
    ) -> BuildOutcome {
        let mut ready = self.builder.prepare_image(task, condition, timeout).await?;
        let pushed = self
            .push(&ready.tag, &ready.hash)
            .await
            .map_err(|e| BuildFailure::runner("pushing the image to the cluster's registry", e))?;
        ready.log = Arc::new(format!(
            "{}\npushed {} as {}\n",
            ready.log, ready.tag, pushed.reference
        ));
        ready.tag = pushed.reference;
        Ok(ready)
    }

    async fn image_facts(&self, reference: &str) -> Result<Arc<ImageFacts>, RunnerError> {
        self.builder
            .image_facts(&self.shared.local_tag(reference))
            .await
    }

    async fn open_site(&self, spec: &SiteSpec<'_>) -> Result<Box<dyn TrialSite>, SiteError> {
        if let Some(why) = task_refusal(spec.task) {
            return Err(SiteError::Task(why));
        }
        let static_image = self.static_image().await.map_err(SiteError::Runner)?;
        let get = |k: &str| spec.labels.get(k).cloned().unwrap_or_default();
        let trial = TrialLabels {
            run_uid: get(run_labels::RUN_UID),
            trial: get(run_labels::TRIAL),
            attempt_id: get(run_labels::ATTEMPT_ID).parse().unwrap_or_default(),
        };
        let verifier_values = verifier_values(spec.task, spec.env_values);
        let secret_keys = verifier_values.iter().map(|(k, _)| k.clone()).collect();
        let site = KubeTrialSite::open(
            self.cluster.clone(),
            &TrialSiteSpec {
                labels: trial,
                allow_internet: spec.task.config.environment.allow_internet,
                verifier_values,
                static_image: Some(static_image),
            },
        )
        .await
        .map_err(|e| SiteError::Runner(e.into()))?;
        Ok(Box::new(KubeSite {
            site,
            start_deadline: self.start_deadline,
            cpus: self.capacity.cpus,
            secret_keys,
        }))
    }

    async fn kit_mount(
        &self,
        _dir: &std::path::Path,
        id: &str,
        _target: &str,
    ) -> Result<Mount, RunnerError> {
        Err(RunnerError::Task(format!(
            "harness kit {id}: the Kubernetes backend does not mount harness kits"
        )))
    }

    async fn relay(&self, _target: SocketAddr) -> Result<(String, SocketAddr), RunnerError> {
        Err(RunnerError::Task(
            "the Kubernetes backend cannot relay a trial to a model proxy on this machine".into(),
        ))
    }
}

/// The values only the verifier's `[verifier] env` names (not `[environment]` or `[solution]`
/// env), resolved: they go into the trial's Secret, which only the verifier's pod mounts, and
/// leave the verifier's execs' own environment.
pub fn verifier_values(
    task: &Task,
    values: &crate::skillsbench::env::EnvValues,
) -> Vec<(String, String)> {
    let c = &task.config;
    values
        .resolve(&c.verifier.env)
        .into_iter()
        .filter_map(|e| {
            let (k, v) = e.split_once('=')?;
            let shared = c.environment.env.contains_key(k) || c.solution.env.contains_key(k);
            (!shared).then(|| (k.to_string(), v.to_string()))
        })
        .collect()
}

/// Why `task` cannot run on the Kubernetes backend, if it cannot: a compose file's services.
pub fn task_refusal(task: &Task) -> Option<String> {
    crate::skillsbench::compose::find(&task.environment_dir()).map(|f| {
        format!(
            "task {} has a compose file ({}): the Kubernetes backend does not run a task's \
             services (run it with --backend docker)",
            task.id,
            f.file_name().unwrap_or_default().to_string_lossy()
        )
    })
}

/// What a run asks that the Kubernetes backend cannot do, one line each (empty: nothing):
/// operator mounts (`mounts`), an agent that needs a harness kit or a relay to a model proxy on
/// this machine (`harness`: its name), compose tasks.
pub fn unsupported(mounts: &[String], harness: Option<&str>, tasks: &[Task]) -> Vec<String> {
    let mut out = Vec::new();
    if !mounts.is_empty() {
        out.push(format!(
            "--mount {}: the Kubernetes backend cannot mount this machine's folders into pods",
            mounts.join(", ")
        ));
    }
    if let Some(h) = harness {
        out.push(format!(
            "agent {h}: harness agents need their kit mounted and a relay to the model proxy on \
             this machine, which the Kubernetes backend does not have (use --backend docker)"
        ));
    }
    out.extend(tasks.iter().filter_map(task_refusal));
    out
}

/// One trial's NetworkPolicy and pods.
pub struct KubeSite {
    site: KubeTrialSite,
    start_deadline: Duration,
    cpus: u32,
    /// The names of the trial's Secret (its verifier-only values).
    secret_keys: Vec<String>,
}

#[async_trait]
impl TrialSite for KubeSite {
    async fn start(&self, env: &EnvironmentSpec) -> Result<Arc<dyn Environment>, RunnerError> {
        if let Some(m) = env.mounts.first() {
            return Err(RunnerError::Task(format!(
                "the Kubernetes backend cannot mount {:?} at {}",
                m.source, m.target
            )));
        }
        if !env.extra_hosts.is_empty() {
            return Err(RunnerError::Task(format!(
                "the Kubernetes backend cannot add /etc/hosts lines ({})",
                env.extra_hosts.join(", ")
            )));
        }
        // `su` switches by name, to the user's own group.
        let image_user = env
            .user
            .as_deref()
            .or(env.image_user.as_deref())
            .filter(|u| !is_root_user(u))
            .map(|u| u.split(':').next().unwrap_or_default().to_string());
        if let Some(id) = image_user
            .as_deref()
            .filter(|u| u.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(RunnerError::Task(format!(
                "the user {id} has no name in the image's /etc/passwd: the Kubernetes backend \
                 switches execs to it with `su`, which needs one (use --backend docker)"
            )));
        }
        let role = env.role.unwrap_or(Role::Helper);
        // skillscope's static shell is PID 1 (it reaps orphans), as on Docker; the agent's pod
        // runs the image's ENTRYPOINT in the background under it.
        let mut command = vec![
            format!("{STATIC_SHELL_DIR}/sh"),
            "-c".to_string(),
            OWN_INIT.to_string(),
            "sh".to_string(),
        ];
        if role == Role::Agent {
            command.extend(env.image_entry.iter().cloned());
        }
        let secret = role == Role::Verifier && !self.secret_keys.is_empty();
        let spec = PodSpec {
            mount_secret: secret,
            command: PodCommand::Exact {
                command: Some(command),
                args: Some(Vec::new()),
            },
            cpus: env.cpus.map(|c| c.min(f64::from(self.cpus))),
            memory_bytes: env.memory_bytes,
            // Root in the container, as Docker's `exec --user 0` of skillscope's own scripts
            // needs; execs without a user switch to the image's ([`KubeEnvironment::spawn`]).
            run_as_user: Some(0),
            run_as_group: Some(0),
            empty_dirs: env.empty_dirs.clone(),
            start_deadline: self.start_deadline,
            ..PodSpec::idle(role, env.image.clone())
        };
        let pod = self.site.start(&spec).await?;
        Ok(Arc::new(KubeEnvironment {
            pod,
            image_user,
            secret_keys: secret.then(|| self.secret_keys.clone()),
        }))
    }

    async fn close(self: Box<Self>) {
        self.site.close().await;
    }
}

/// One trial pod.
pub struct KubeEnvironment {
    pod: TrialPod,
    /// The image's `USER` when it is not root: execs without a user run as it.
    image_user: Option<String>,
    /// The verifier's pod: the names its Secret holds (every exec exports them from there, and
    /// they are dropped from the exec's own environment).
    secret_keys: Option<Vec<String>>,
}

/// The exit code of a finished exec, once its output ended.
type ExitSlot = Arc<Mutex<Option<Result<i32, KubeError>>>>;

struct KubeExit {
    slot: ExitSlot,
    what: String,
}

#[async_trait]
impl ExecExit for KubeExit {
    async fn code(self: Box<Self>) -> Result<Option<i64>, RunnerError> {
        match self.slot.lock().expect("lock").take() {
            Some(Ok(code)) => Ok(Some(i64::from(code))),
            Some(Err(e)) => Err(e.into()),
            None => Err(RunnerError::backend_text(
                &self.what,
                "the exec's output ended before its exit status",
            )),
        }
    }
}

/// Writes to an exec's open stdin through a channel (the exec's stream stays open when this is
/// dropped: see [`TrialPod::spawn_open`]).
struct ChannelInput {
    tx: tokio_util::sync::PollSender<Bytes>,
}

impl tokio::io::AsyncWrite for ChannelInput {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        use std::task::Poll;
        match self.tx.poll_reserve(cx) {
            Poll::Ready(Ok(())) => {
                let n = buf.len();
                match self.tx.send_item(Bytes::copy_from_slice(buf)) {
                    Ok(()) => Poll::Ready(Ok(n)),
                    Err(_) => Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into())),
                }
            }
            Poll::Ready(Err(_)) => Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into())),
            Poll::Pending => Poll::Pending,
        }
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

#[async_trait]
impl Environment for KubeEnvironment {
    fn id(&self) -> &str {
        self.pod.id()
    }

    fn name(&self) -> &str {
        self.pod.id()
    }

    fn default_user(&self) -> Option<&str> {
        self.image_user.as_deref()
    }

    async fn spawn(&self, exec: &ExecSpec) -> Result<ExecStream, RunnerError> {
        let user = match exec.user.as_deref() {
            Some(u) if is_root_user(u) => None,
            Some(u) => Some(u.to_string()),
            None => self.image_user.clone(),
        };
        let spec = KubeExec {
            argv: exec.cmd.clone(),
            env: exec
                .env
                .iter()
                .filter_map(|e| e.split_once('='))
                .filter(|(k, _)| !self.secret_keys.iter().flatten().any(|s| s == k))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            secret_env: self.secret_keys.is_some(),
            user,
            workdir: exec.working_dir.clone(),
            open_stdin: exec.stdin,
            ..Default::default()
        };
        let (mut stream, input) = if exec.stdin {
            let (s, tx) = self.pod.spawn_open(&spec).await?;
            let input: std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>> =
                Box::pin(ChannelInput {
                    tx: tokio_util::sync::PollSender::new(tx),
                });
            (s, Some(input))
        } else {
            (self.pod.spawn(&spec).await?, None)
        };
        let slot: ExitSlot = Arc::default();
        let out_slot = slot.clone();
        let output = async_stream(move |tx| async move {
            while let Some(ev) = stream.next().await {
                let chunk = match ev {
                    Ok(ExecEvent::Stdout(b)) => Chunk::Stdout(b),
                    Ok(ExecEvent::Stderr(b)) => Chunk::Stderr(b),
                    Ok(ExecEvent::Exit(code)) => {
                        *out_slot.lock().expect("lock") = Some(Ok(code));
                        return;
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e.into())).await;
                        return;
                    }
                };
                if tx.send(Ok(chunk)).await.is_err() {
                    return;
                }
            }
        });
        Ok(ExecStream {
            output,
            input,
            exit: Box::new(KubeExit {
                slot,
                what: format!("exec in pod {}", self.pod.id()),
            }),
        })
    }

    async fn upload_tar(&self, tar: TarBody, dir: &str) -> Result<(), RunnerError> {
        let body = match tar {
            TarBody::Memory(bytes) => super::TarBody::Bytes(Bytes::from(bytes)),
            TarBody::Spooled(mut file) => {
                let mut bytes = Vec::new();
                tokio::io::AsyncReadExt::read_to_end(&mut file, &mut bytes)
                    .await
                    .map_err(|e| RunnerError::io(std::env::temp_dir(), e))?;
                super::TarBody::Bytes(Bytes::from(bytes))
            }
        };
        Ok(self.pod.upload_tar(body, dir).await?)
    }

    async fn download_tar(
        &self,
        src: &str,
    ) -> Result<BoxStream<'static, Result<Bytes, RunnerError>>, RunnerError> {
        let pod = self.pod.clone();
        let src = src.to_string();
        Ok(async_stream(move |tx| async move {
            let (mut w, r) = tokio::io::duplex(1 << 16);
            let copy = async move {
                let res = pod.download_tar(&src, &mut w, u64::MAX).await;
                drop(w);
                res
            };
            let chunks = tx.clone();
            let forward = async move {
                let mut stream = tokio_util::io::ReaderStream::new(r);
                while let Some(c) = stream.next().await {
                    let c = c.map_err(|e| RunnerError::io(std::env::temp_dir(), e));
                    if chunks.send(c).await.is_err() {
                        return;
                    }
                }
            };
            let (res, ()) = tokio::join!(copy, forward);
            if let Err(e) = res {
                let _ = tx.send(Err(e.into())).await;
            }
        }))
    }

    async fn remove(&self) {
        self.pod.remove().await;
    }
}

/// A stream of what `produce` sends on its channel (a task that ends with the stream's reader).
fn async_stream<T, F, Fut>(produce: F) -> BoxStream<'static, T>
where
    T: Send + 'static,
    F: FnOnce(tokio::sync::mpsc::Sender<T>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    let task = tokio::spawn(produce(tx));
    let guard = AbortOnDrop(task);
    futures_util::stream::unfold((rx, guard), |(mut rx, guard)| async move {
        rx.recv().await.map(|item| (item, (rx, guard)))
    })
    .boxed()
}

/// Aborts its task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_split_at_the_tag_s_colon() {
        assert_eq!(
            split_tag("skillscope/task-a:cond-1"),
            ("skillscope/task-a".into(), "cond-1".into())
        );
        assert_eq!(
            split_tag("localhost:5000/x"),
            ("localhost:5000/x".into(), "latest".into())
        );
    }

    #[test]
    fn what_pods_cannot_do_is_named() {
        let lines = unsupported(&["/a:/b".into()], Some("claude-code"), &[]);
        assert_eq!(lines.len(), 2);
        assert!(lines[0].contains("--mount /a:/b"), "{lines:?}");
        assert!(lines[1].contains("claude-code"), "{lines:?}");
        assert!(unsupported(&[], None, &[]).is_empty());
    }
}
