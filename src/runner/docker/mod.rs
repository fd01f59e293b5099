//! The Docker backend: trials on one or more Docker daemons (this machine's socket,
//! `DOCKER_HOST`, `--docker-host` endpoints, TCP with TLS). Everything here is private behind
//! [`crate::runner::backend`]; nothing else in skillscope names bollard.
//!
//! - [`DockerBackend`]: the configured daemons, connected on demand; one image cache for all.
//! - [`DockerPlace`] (a [`Host`]): one connected daemon — images built or reused
//!   ([`image`]), what an image holds read once ([`DockerPlace::image_facts`]), sweeps by label,
//!   harness kits in volumes ([`kit_volume`]), relays to a model proxy on this machine
//!   ([`relay`]).
//! - [`DockerSite`] (a [`TrialSite`]): one trial's compose services ([`services`]) and own
//!   network ([`network`]); its environments are containers ([`container`]) whose PID 1 is
//!   skillscope's static shell ([`static_shell`]).

pub mod base_image;
mod bind_copies;
mod container;
mod fault;
mod host;
pub mod image;
mod kit_volume;
mod network;
mod relay;
mod services;
mod static_shell;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::OnceCell;

use crate::runner::backend::{
    Backend, BackendKind, Capacity, Environment, EnvironmentSpec, Host, Mount, MountSource, Place,
    Role, SiteError, SiteSpec, Sweep, TrialSite,
};
use crate::runner::image::{BuildOutcome, ImageFacts};
use crate::runner::work::{Manifest, Toolchain, rule};
use crate::runner::{Fault, RunnerError, labels};
use crate::skillsbench::{Condition, Task};
use container::{ContainerCmd, ContainerSpec, DockerContainer};
use host::DockerHost;
use image::{ImageCache, ImageSettings};

pub use base_image::BUSYBOX_IMAGE;
pub use container::{OWN_INIT, remove_labeled_older_than};
pub use fault::fault_of;

/// A short-lived helper container of `image` on `docker` (the daemon named `daemon`, for
/// instance its endpoint), with skillscope's static shell as its PID 1, on Docker's default
/// bridge when `network` (else on none), labelled as a helper of `kind`: for tools and tests that
/// need a container of their own. Remove it with [`crate::runner::Sandbox::remove`].
///
/// # Errors
/// [`RunnerError`] when the static shell or the container cannot be made.
pub async fn start_helper(
    docker: &bollard::Docker,
    daemon: &str,
    image: &str,
    kind: &str,
    network: bool,
) -> Result<crate::runner::Sandbox, RunnerError> {
    let shell = static_shell::ensure_on(docker, daemon).await?;
    let spec = ContainerSpec {
        network_none: !network,
        ..ContainerSpec::helper(image, kind, &shell)
    };
    let c = DockerContainer::start(docker, &spec).await?;
    Ok(crate::runner::Sandbox::new(Arc::new(c)))
}

/// A Docker API error with what was being done, classified as a fault.
pub(crate) fn docker_error(context: impl Into<String>, e: bollard::errors::Error) -> RunnerError {
    RunnerError::Backend {
        context: context.into(),
        fault: fault::fault_of(&e),
        message: e.to_string(),
    }
}

/// The name of a Docker endpoint, or of the default one (`DOCKER_HOST`, else the local socket).
pub fn endpoint_name(endpoint: Option<&str>) -> String {
    DockerHost::endpoint_name(endpoint)
}

/// Makes sure the offline base image [`BUSYBOX_IMAGE`] exists on the default daemon; returns the
/// daemon's name.
///
/// # Errors
/// [`RunnerError`] when the daemon does not answer or the image cannot be made.
pub async fn ensure_base_image() -> Result<String, RunnerError> {
    let host = DockerHost::connect(None, 1).await?;
    base_image::ensure_busybox(&host.docker).await?;
    Ok(host.name)
}

/// What an image's facts are kept under: the daemon and the image id (or its content's digest,
/// [`content_key`]).
type FactsKey = (String, String);

/// Each image's facts, read once per daemon and image.
type FactsCache = tokio::sync::Mutex<HashMap<FactsKey, Arc<OnceCell<Arc<ImageFacts>>>>>;

/// What an image's facts hold apart from its id: its layers (the `RootFS` diff ids, each a digest
/// of a layer's content) and the configuration the facts read (environment, working folder,
/// entrypoint, user), as a SHA-256 hex digest. Two images that differ only in their labels (a
/// task copied under another name, the same environment built for two tasks) have the same
/// files and toolchain: their facts are read once. `None` when the daemon names no layers.
fn content_key(inspect: &bollard::models::ImageInspect) -> Option<String> {
    use sha2::Digest;
    let layers = inspect.root_fs.as_ref()?.layers.as_ref()?;
    let config = inspect.config.clone().unwrap_or_default();
    let text = serde_json::json!({
        "layers": layers,
        "env": config.env,
        "working_dir": config.working_dir,
        "entrypoint": config.entrypoint,
        "user": config.user,
    })
    .to_string();
    Some(hex::encode(sha2::Sha256::digest(text.as_bytes())))
}

/// Trials on Docker daemons.
pub struct DockerBackend {
    /// Configured endpoints (`None`: the default daemon).
    endpoints: Vec<Option<String>>,
    /// Trials per daemon at once.
    slots: usize,
    /// Images built or found, shared by every daemon (keyed by daemon).
    images: Arc<ImageCache>,
    /// What each image holds, read once per daemon and image.
    facts: Arc<FactsCache>,
    /// Relays to model proxies on this machine.
    relays: Arc<relay::Relays>,
    /// Harness kit volumes per daemon (remote daemons).
    kits: Arc<tokio::sync::Mutex<HashMap<(String, String), String>>>,
    /// Trial networks free for the next `allow_internet` trial, per daemon and run.
    networks: Arc<NetworkPool>,
}

/// Trial networks kept for reuse: a trial's own bridge is made once per slot, not once per
/// trial, and handed to the next trial only once every container of the last one is removed.
#[derive(Default)]
struct NetworkPool {
    free: Mutex<HashMap<(String, String), Vec<network::TrialNetwork>>>,
}

impl NetworkPool {
    fn take(&self, host: &str, run: &str) -> Option<network::TrialNetwork> {
        self.free
            .lock()
            .expect("lock")
            .get_mut(&(host.to_string(), run.to_string()))?
            .pop()
    }

    fn give(&self, host: &str, run: &str, n: network::TrialNetwork) {
        self.free
            .lock()
            .expect("lock")
            .entry((host.to_string(), run.to_string()))
            .or_default()
            .push(n);
    }

    /// Forgets every network kept for `host` (one may be gone: a sweep, a daemon restart).
    fn forget(&self, host: &str) {
        self.free
            .lock()
            .expect("lock")
            .retain(|(h, _), _| h != host);
    }
}

impl DockerBackend {
    /// The daemons `endpoints` (the default one when empty), `slots` trials each; images built
    /// with `settings`.
    pub fn new(endpoints: &[String], slots: usize, settings: ImageSettings) -> DockerBackend {
        let endpoints = if endpoints.is_empty() {
            vec![None]
        } else {
            endpoints.iter().cloned().map(Some).collect()
        };
        DockerBackend {
            endpoints,
            slots: slots.max(1),
            images: Arc::new(ImageCache::new(settings)),
            facts: Arc::default(),
            relays: Arc::default(),
            kits: Arc::default(),
            networks: Arc::default(),
        }
    }
}

#[async_trait]
impl Backend for DockerBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Docker
    }

    fn places(&self) -> Vec<Place> {
        self.endpoints
            .iter()
            .map(|e| Place {
                name: DockerHost::endpoint_name(e.as_deref()),
                slots: self.slots,
            })
            .collect()
    }

    async fn connect(
        &self,
        index: usize,
        run_uid: Option<&str>,
    ) -> Result<Arc<dyn Host>, RunnerError> {
        let endpoint = self.endpoints.get(index).cloned().flatten();
        let mut host = DockerHost::connect(endpoint.as_deref(), self.slots).await?;
        if let Some(uid) = run_uid {
            host = host.for_run(uid);
        }
        Ok(Arc::new(DockerPlace {
            host,
            images: self.images.clone(),
            facts: self.facts.clone(),
            relays: self.relays.clone(),
            kits: self.kits.clone(),
            networks: self.networks.clone(),
        }))
    }

    async fn forget_build_failures(&self) {
        self.images.forget_failures().await;
    }
}

/// One connected Docker daemon.
pub struct DockerPlace {
    host: DockerHost,
    images: Arc<ImageCache>,
    facts: Arc<FactsCache>,
    relays: Arc<relay::Relays>,
    kits: Arc<tokio::sync::Mutex<HashMap<(String, String), String>>>,
    networks: Arc<NetworkPool>,
}

/// A helper container's budget for reading an image's toolchain.
const PROBE_LIMIT: Duration = Duration::from_secs(120);

/// The budget for reading what an image holds: its export (a stream the daemon may stop
/// feeding without ending) and the toolchain probe. Past it the facts are a fault of the
/// daemon's, and the helper's removal ends the export.
const FACTS_LIMIT: Duration = Duration::from_secs(600);

impl DockerPlace {
    /// The cell of this daemon's facts kept under `key` (an image id, or `content:<digest>` of
    /// [`content_key`]).
    async fn facts_cell(&self, key: &str) -> Arc<OnceCell<Arc<ImageFacts>>> {
        let mut map = self.facts.lock().await;
        map.entry((self.host.name.clone(), key.to_string()))
            .or_default()
            .clone()
    }

    /// Reads what image `id` holds: its files by content (the export of a container created from
    /// it, never started) and its interpreters' search paths (asked in a helper container with
    /// skillscope's static shell as PID 1).
    async fn read_facts(&self, id: &str) -> Result<ImageFacts, RunnerError> {
        let docker = &self.host.docker;
        let inspect = docker
            .inspect_image(id)
            .await
            .map_err(|e| docker_error(format!("inspecting image {id}"), e))?;
        let config = inspect.config.unwrap_or_default();
        let env = config.env.unwrap_or_default();
        let shell = static_shell::ensure(&self.host).await?;
        let spec = self.host.helper_spec(id, "image-facts", &shell);
        let c = DockerContainer::start(docker, &spec).await?;
        let read = async {
            let stream = docker.export_container(&c.id);
            let reader =
                tokio_util::io::StreamReader::new(futures_util::StreamExt::map(stream, |r| {
                    r.map_err(std::io::Error::other)
                }));
            let bridge = tokio_util::io::SyncIoBridge::new(reader);
            let files =
                tokio::task::spawn_blocking(move || Manifest::from_tar(bridge, Default::default()))
                    .await
                    .map_err(|e| RunnerError::Task(e.to_string()))?
                    .map_err(|e| {
                        RunnerError::backend_text(
                            format!("reading the files of image {id}"),
                            e.to_string(),
                        )
                    })?;
            let path = ImageFacts::path_dirs(&env);
            let has_python = path.iter().any(|d| {
                files
                    .children(d)
                    .any(|n| n == "python" || n.starts_with("python3"))
            });
            let python = if has_python {
                let sandbox = crate::runner::Sandbox::new(Arc::new(c.clone()));
                let (_, out) = sandbox
                    .sh_output_as(&rule::python_probe(&path), PROBE_LIMIT, None)
                    .await?;
                rule::parse_python_probe(&out)
            } else {
                Vec::new()
            };
            Ok::<_, RunnerError>((files, python, path))
        };
        let result = tokio::time::timeout(FACTS_LIMIT, read)
            .await
            .unwrap_or_else(|_| {
                Err(RunnerError::Backend {
                    context: format!("reading the files of image {id}"),
                    message: format!("the daemon's export did not end within {FACTS_LIMIT:?}"),
                    fault: crate::runner::Fault::DaemonTimeout,
                })
            });
        c.remove_now().await;
        let (files, python, path) = result?;
        Ok(ImageFacts {
            id: inspect.id.unwrap_or_else(|| id.to_string()),
            working_dir: config
                .working_dir
                .filter(|w| !w.is_empty())
                .unwrap_or_else(|| "/".into()),
            entrypoint: config.entrypoint.unwrap_or_default(),
            user: config.user.unwrap_or_default(),
            toolchain: Toolchain {
                path,
                python,
                user: String::new(),
            },
            env,
            files,
        })
    }
}

#[async_trait]
impl Host for DockerPlace {
    fn name(&self) -> &str {
        &self.host.name
    }

    fn capacity(&self) -> Capacity {
        Capacity {
            cpus: self.host.ncpu,
            memory_bytes: self.host.mem_total,
            slots: self.host.slots,
        }
    }

    fn local(&self) -> bool {
        self.host.local
    }

    fn version(&self) -> &str {
        &self.host.server_version
    }

    fn data_root(&self) -> Option<&str> {
        self.host.local.then_some(self.host.data_root.as_str())
    }

    async fn ping(&self) -> Result<(), RunnerError> {
        self.host
            .docker
            .ping()
            .await
            .map(|_| ())
            .map_err(|e| docker_error("ping", e))
    }

    async fn sweep(&self, sweep: &Sweep) -> Result<usize, RunnerError> {
        let docker = &self.host.docker;
        match sweep {
            Sweep::Run { uid, keep } if keep.is_empty() => {
                container::remove_labeled_older_than(
                    docker,
                    &format!("{}={uid}", labels::RUN_UID),
                    Duration::ZERO,
                )
                .await
            }
            Sweep::Run { uid, keep } => {
                let keep: Vec<String> = keep.iter().map(i64::to_string).collect();
                container::remove_labeled_except(
                    docker,
                    labels::RUN_UID,
                    uid,
                    labels::ATTEMPT_ID,
                    &keep,
                )
                .await
            }
            Sweep::StaleHelpers(age) => {
                // The bind copies a killed run left in this machine's temporary folder.
                let tmp = std::env::temp_dir();
                let folders = tokio::task::spawn_blocking(move || bind_copies::sweep_unheld(&tmp))
                    .await
                    .unwrap_or(0);
                if folders > 0 {
                    tracing::info!("removed {folders} bind copies' folders a killed run left");
                }
                container::remove_labeled_older_than(docker, labels::HELPER, *age).await
            }
        }
    }

    async fn has_image(&self, reference: &str) -> bool {
        self.host.docker.inspect_image(reference).await.is_ok()
    }

    async fn prepare_image(
        &self,
        task: &Arc<Task>,
        condition: &Condition,
        timeout: Duration,
    ) -> BuildOutcome {
        self.images
            .ensure(&self.host, task, condition, timeout)
            .await
    }

    async fn image_facts(&self, reference: &str) -> Result<Arc<ImageFacts>, RunnerError> {
        let inspect = self
            .host
            .docker
            .inspect_image(reference)
            .await
            .map_err(|e| docker_error(format!("inspecting image {reference}"), e))?;
        let id = inspect.id.clone().unwrap_or_else(|| reference.to_string());
        let cell = self.facts_cell(&id).await;
        cell.get_or_try_init(|| async {
            let key = content_key(&inspect).map_or_else(|| id.clone(), |k| format!("content:{k}"));
            let shared = self.facts_cell(&key).await;
            let facts = shared
                .get_or_try_init(|| async { self.read_facts(&id).await.map(Arc::new) })
                .await?
                .clone();
            Ok(if facts.id == id {
                facts
            } else {
                Arc::new(ImageFacts {
                    id: id.clone(),
                    ..(*facts).clone()
                })
            })
        })
        .await
        .cloned()
    }

    async fn open_site(&self, spec: &SiteSpec<'_>) -> Result<Box<dyn TrialSite>, SiteError> {
        let shell = static_shell::ensure(&self.host)
            .await
            .map_err(SiteError::Runner)?;
        let env_cfg = &spec.task.config.environment;
        let mut template = ContainerSpec {
            name: spec.name.clone(),
            labels: spec.labels.clone().into_iter().collect(),
            network_none: !env_cfg.allow_internet,
            ..Default::default()
        };
        let input = services::ServicesInput {
            host: &self.host,
            images: &self.images,
            task: spec.task,
            trial_dir: spec.trial_dir,
            env_values: spec.env_values,
            main_image: spec.main_image,
            cancel: spec.cancel,
        };
        let services = services::start(&input, &mut template)
            .await
            .map_err(|e| match e {
                services::ServiceError::Task(m) => SiteError::Task(m),
                services::ServiceError::Runner(e) => SiteError::Runner(e),
                services::ServiceError::Cancelled => SiteError::Cancelled,
            })?;
        let mut network = None;
        let run = spec
            .labels
            .get(labels::RUN_UID)
            .cloned()
            .unwrap_or_default();
        // A task on the internet without networks of its own gets a bridge of its own: one the
        // last trial of this slot left (its containers all removed), else a new one.
        if !template.network_none && template.networks.is_empty() && services.is_empty() {
            let n = match self.networks.take(&self.host.name, &run) {
                Some(n) => n,
                None => {
                    let name = format!("skillscope-net-{}", uuid::Uuid::new_v4().simple());
                    let labels = HashMap::from([
                        (labels::MANAGED.to_string(), "1".to_string()),
                        (labels::RUN_UID.to_string(), run.clone()),
                    ]);
                    match network::TrialNetwork::create(&self.host.docker, &name, &labels).await {
                        Ok(n) => n,
                        Err(e) => {
                            services.remove().await;
                            return Err(SiteError::Runner(e));
                        }
                    }
                }
            };
            template.networks = vec![(n.name.clone(), Vec::new())];
            network = Some(n);
        }
        Ok(Box::new(DockerSite {
            docker: self.host.docker.clone(),
            host_name: self.host.name.clone(),
            run,
            pool: self.networks.clone(),
            shell,
            cpus: self.host.ncpu,
            template,
            services,
            network,
            started: Mutex::default(),
            verifiers: Default::default(),
        }))
    }

    async fn kit_mount(
        &self,
        dir: &std::path::Path,
        id: &str,
        target: &str,
    ) -> Result<Mount, RunnerError> {
        if self.host.local {
            return Ok(Mount {
                source: MountSource::HostDir(dir.to_path_buf()),
                target: target.to_string(),
                read_only: true,
            });
        }
        let mut kits = self.kits.lock().await;
        let key = (self.host.name.clone(), id.to_string());
        let name = match kits.get(&key) {
            Some(v) => v.clone(),
            None => {
                let v = kit_volume::ensure_kit_volume(&self.host, dir, id)
                    .await?
                    .name;
                kits.insert(key, v.clone());
                v
            }
        };
        Ok(Mount {
            source: MountSource::Volume(name),
            target: target.to_string(),
            read_only: true,
        })
    }

    async fn relay(&self, target: SocketAddr) -> Result<(String, SocketAddr), RunnerError> {
        let addr = self.relays.relay_to(&self.host.docker, target).await?;
        Ok((crate::runner::proxy::HOST_ALIAS.to_string(), addr))
    }
}

/// One trial's services and network on a Docker daemon, and the containers started in them.
pub struct DockerSite {
    docker: bollard::Docker,
    /// The daemon's name.
    host_name: String,
    /// The run's uid (its networks are kept for its next trials).
    run: String,
    /// Where its network goes back to.
    pool: Arc<NetworkPool>,
    /// The static shell's volume bind.
    shell: String,
    /// The daemon's CPUs (a compose task's limits are clamped to them).
    cpus: u32,
    /// The main container's settings from the site: networks and aliases, a compose file's
    /// `main` overrides.
    template: ContainerSpec,
    services: services::TrialServices,
    network: Option<network::TrialNetwork>,
    started: Mutex<Vec<DockerContainer>>,
    /// Verifier environments started so far (each gets fresh copies of writable binds).
    verifiers: std::sync::atomic::AtomicUsize,
}

/// A mount as Docker's bind syntax.
fn bind(m: &Mount) -> String {
    let source = match &m.source {
        MountSource::HostDir(p) => p.display().to_string(),
        MountSource::Volume(v) => v.clone(),
    };
    let ro = if m.read_only { ":ro" } else { "" };
    format!("{source}:{}{ro}", m.target)
}

#[async_trait]
impl TrialSite for DockerSite {
    async fn start(&self, env: &EnvironmentSpec) -> Result<Arc<dyn Environment>, RunnerError> {
        let mut spec = self.template.clone();
        spec.image = env.image.clone();
        spec.name = env.name.clone();
        spec.labels.extend(env.labels.clone());
        // A compose file's `main` limits win over the task's; both within the daemon's CPUs.
        spec.cpus = spec.cpus.or(env.cpus).map(|c| c.min(f64::from(self.cpus)));
        spec.memory_bytes = spec.memory_bytes.or(env.memory_bytes);
        spec.pids_limit = env.pids_limit;
        spec.hardened = true;
        spec.empty_volumes = env.empty_dirs.clone();
        if env.role == Some(Role::Verifier) {
            // The verifier finds the task's folders as they were, never the agent's copy.
            let n = self
                .verifiers
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            spec.binds = self.services.verifier_binds(n, &spec.binds).await?;
        }
        spec.binds.extend(env.mounts.iter().map(bind));
        spec.binds.push(self.shell.clone());
        spec.extra_hosts.extend(env.extra_hosts.iter().cloned());
        // skillscope's shell is PID 1 and reaps orphans: no other init.
        spec.init = false;
        spec.cmd = ContainerCmd::OwnInit;
        spec.entrypoint = match env.role {
            Some(Role::Agent) if !env.image_entry.is_empty() => Some(env.image_entry.clone()),
            _ => None,
        };
        // PID 1 runs as root, execs that name no user as the image's (a compose file's `main`
        // user first): skillscope's scripts must see and end every process.
        let user = env
            .user
            .clone()
            .or(spec.user.take())
            .or_else(|| env.image_user.clone())
            .filter(|u| !crate::runner::is_root_user(u));
        spec.user = Some("0:0".into());
        let started = DockerContainer::start(&self.docker, &spec)
            .await
            .map(|c| c.with_default_user(user));
        let c = match started {
            // Only the agent's limit is ever lifted (after its processes ended): the verifier's
            // tests run under the task's.
            Ok(c) if env.role == Some(Role::Agent) => c.with_liftable_cpus(spec.cpus, self.cpus),
            Ok(c) => c,
            Err(e) => {
                // The shell's volume or a kept network may be gone (a prune, a sweep): the next
                // trial makes them again.
                static_shell::forget(&self.host_name);
                self.pool.forget(&self.host_name);
                return Err(e);
            }
        };
        self.started.lock().expect("lock").push(c.clone());
        Ok(Arc::new(c))
    }

    /// A container reserves no CPU or memory of the daemon while it idles; a compose task's
    /// services would see two `main`s, so there the verifier starts after the agent.
    fn verifier_may_wait(&self) -> bool {
        self.services.is_empty()
    }

    fn mounted(&self) -> &[(String, crate::runner::work::Manifest)] {
        self.services.copies().mounted()
    }

    fn main_settings(&self) -> crate::runner::backend::MainSettings {
        crate::runner::backend::MainSettings {
            env: self.template.env.clone(),
            working_dir: self.template.working_dir.clone(),
            user: self.template.user.clone(),
        }
    }

    async fn close(self: Box<Self>) {
        let started = std::mem::take(&mut *self.started.lock().expect("lock"));
        let mut all_gone = true;
        for c in started.iter().rev() {
            all_gone &= c.remove_now().await;
        }
        all_gone &= self.services.remove().await;
        if let Some(n) = self.network {
            if all_gone {
                // Nothing is attached to the network any more: the next trial of the run takes it.
                self.pool.give(&self.host_name, &self.run, n);
            } else {
                // A container the daemon still holds may still be attached: the network is not
                // handed to another trial (the run's sweep removes it when it can).
                let _ = self.docker.remove_network(&n.name).await;
            }
        }
    }
}

/// The fault a failed Docker call stands for, for callers outside this module that only see
/// [`RunnerError`] (kept here so the classification stays with bollard).
pub fn is_fault(e: &RunnerError) -> Option<Fault> {
    e.fault()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bollard::models::{ImageConfig, ImageInspect, ImageInspectRootFs};

    fn image(layers: &[&str], env: &[&str], label: &str) -> ImageInspect {
        ImageInspect {
            id: Some(format!("sha256:{label}")),
            root_fs: Some(ImageInspectRootFs {
                typ: "layers".into(),
                layers: Some(layers.iter().map(|l| l.to_string()).collect()),
            }),
            config: Some(ImageConfig {
                env: Some(env.iter().map(|e| e.to_string()).collect()),
                labels: Some(HashMap::from([("skillscope.task".into(), label.into())])),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn images_that_differ_only_in_labels_share_their_facts() {
        let a = content_key(&image(&["sha256:1", "sha256:2"], &["PATH=/bin"], "a")).unwrap();
        let b = content_key(&image(&["sha256:1", "sha256:2"], &["PATH=/bin"], "b")).unwrap();
        assert_eq!(a, b);
        let other_layer = content_key(&image(&["sha256:1", "sha256:3"], &["PATH=/bin"], "a"));
        let other_env = content_key(&image(&["sha256:1", "sha256:2"], &["PATH=/usr/bin"], "a"));
        let reordered = content_key(&image(&["sha256:2", "sha256:1"], &["PATH=/bin"], "a"));
        for k in [other_layer, other_env, reordered] {
            assert_ne!(k.as_deref(), Some(a.as_str()));
        }
        let mut user = image(&["sha256:1", "sha256:2"], &["PATH=/bin"], "a");
        user.config.as_mut().unwrap().user = Some("1000".into());
        assert_ne!(content_key(&user).unwrap(), a);
        let mut no_layers = image(&[], &[], "a");
        no_layers.root_fs = None;
        assert_eq!(content_key(&no_layers), None);
    }
}
