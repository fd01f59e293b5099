//! A compose task's services for one trial, as Harbor's `docker compose up --wait` runs them —
//! through the Docker API, never the `docker compose` CLI.
//!
//! Per attempt: the task's compose file is read with Harbor's variables for this trial
//! ([`crate::skillsbench::compose`]); each service's image is built (or reused by its context hash) like
//! a task image; private networks are created (internal when `[environment] allow_internet` is
//! false, so the trial still reaches no outside host while its services stay reachable); services
//! start in dependency order, each after its `depends_on` conditions hold (`service_started`,
//! `service_healthy` by the service's healthcheck, `service_completed_successfully`); then every
//! service must be running (healthy when it has a healthcheck) before the main container starts on
//! those networks with `main`'s overrides. Everything carries the trial container's labels, so a
//! killed process's leftovers are swept by run uid, and the trial's site removes the main
//! container, the services and the networks on every stop path. A task without a compose file
//! gets an empty [`TrialServices`] and runs as before.
//!
//! What happens is written to `environment/services.log` in the trial folder (names, images,
//! waits, ignored keys — never environment values).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bollard::Docker;
use bollard::models::{ContainerStateStatusEnum, HealthConfig, HealthStatusEnum};
use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::bind_copies::{BindCopies, CopyError};
use super::container::{ContainerCmd, ContainerSpec, DockerContainer};
use super::docker_error;
use super::host::DockerHost;
use super::image::ImageCache;
use crate::runner::{RunnerError, labels};
use crate::skillsbench::Task;
use crate::skillsbench::compose::{
    self, ComposePlan, DependsOn, NetworkDef, ServiceDef, Variables,
};
use crate::skillsbench::env::EnvValues;

/// Where the trial's `/logs` folders are inside containers (Harbor's `EnvironmentPaths`).
const ENV_LOG_DIRS: [(&str, &str); 3] = [
    ("VERIFIER", "/logs/verifier"),
    ("AGENT", "/logs/agent"),
    ("ARTIFACTS", "/logs/artifacts"),
];
/// How often a waited-on service is inspected.
const POLL: Duration = Duration::from_millis(250);

/// Why a trial's services could not start.
#[derive(Debug)]
pub enum ServiceError {
    /// The task's environment cannot run as defined (compose file, a service's build, a service
    /// that exits or never becomes healthy): recorded as a build error of the trial.
    Task(String),
    /// Docker failed.
    Runner(RunnerError),
    /// The attempt was cancelled while services started.
    Cancelled,
}

/// What [`start`] needs from the trial.
pub struct ServicesInput<'a> {
    /// The Docker host.
    pub host: &'a DockerHost,
    /// Builds and caches service images.
    pub images: &'a ImageCache,
    /// The task.
    pub task: &'a Arc<Task>,
    /// The trial folder (`HOST_*_LOGS_PATH` point into it; `environment/services.log` is written).
    pub trial_dir: &'a Path,
    /// The operator's `--env` values: with the task's `[environment] env`, the only outside
    /// variables a compose file may use ([`EnvValues::compose_variables`]).
    pub env_values: &'a EnvValues,
    /// The main container's image tag (`MAIN_IMAGE_NAME`).
    pub main_image: &'a str,
    /// Stops waits and builds.
    pub cancel: &'a CancellationToken,
}

/// A trial's running services and networks (empty for a task without a compose file).
#[derive(Default)]
pub struct TrialServices {
    docker: Option<Docker>,
    containers: Vec<DockerContainer>,
    networks: Vec<String>,
    /// The trial's copies of the compose file's writable bind folders.
    copies: BindCopies,
}

impl TrialServices {
    /// True when the task started no services and no networks.
    pub fn is_empty(&self) -> bool {
        self.containers.is_empty() && self.networks.is_empty()
    }

    /// The trial's copies of the compose file's writable bind folders.
    pub fn copies(&self) -> &BindCopies {
        &self.copies
    }

    /// `binds` for a verifier's environment (the `n`th of the trial): each writable bind a fresh
    /// copy of the task's folder ([`BindCopies::for_verifier`]), made off the async threads.
    ///
    /// # Errors
    /// [`RunnerError`] when a copy cannot be made (a full disk).
    pub async fn verifier_binds(
        &self,
        n: usize,
        binds: &[String],
    ) -> Result<Vec<String>, RunnerError> {
        if self.copies.is_empty() {
            return Ok(binds.to_vec());
        }
        let (copies, binds) = (self.copies.clone(), binds.to_vec());
        tokio::task::spawn_blocking(move || copies.for_verifier(n, &binds))
            .await
            .map_err(|e| RunnerError::Task(e.to_string()))?
            .map_err(|e| match e {
                CopyError::Io(p, e) => RunnerError::io(p, e),
                CopyError::TooLarge(m) => RunnerError::Task(m),
            })
    }

    /// Removes the services (forced) and then the networks, and the trial's copies of bind
    /// folders; true when every service container is gone. Never fails.
    pub async fn remove(&self) -> bool {
        let gone = futures_util::future::join_all(self.containers.iter().map(|c| c.remove_now()))
            .await
            .into_iter()
            .all(|g| g);
        if let Some(docker) = &self.docker {
            for n in &self.networks {
                let _ = docker.remove_network(n).await;
            }
        }
        if !self.copies.is_empty() {
            let copies = self.copies.clone();
            let _ = tokio::task::spawn_blocking(move || copies.remove()).await;
        }
        gone
    }
}

/// The variables a compose file is interpolated with: the operator's `--env` values and the task's
/// `[environment] env` ([`EnvValues::compose_variables`]), overridden by Harbor's own (`docker.py`'s `DockerEnvironmentEnvVars`: paths for this trial, the task's
/// CPU and memory limits — the host's when the task sets none — and `TEST_DIR=/tests`).
pub fn variables(input: &ServicesInput<'_>) -> Variables {
    let mut vars: Variables = input.env_values.compose_variables(input.task);
    let env = &input.task.config.environment;
    let abs = |p: &Path| {
        std::path::absolute(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .display()
            .to_string()
    };
    vars.insert("CONTEXT_DIR".into(), abs(&input.task.environment_dir()));
    vars.insert("MAIN_IMAGE_NAME".into(), input.main_image.to_string());
    for (kind, dir) in ENV_LOG_DIRS {
        let host = input.trial_dir.join(dir.trim_start_matches("/logs/"));
        let key = if kind == "ARTIFACTS" {
            "ARTIFACTS_PATH".to_string()
        } else {
            format!("{kind}_LOGS_PATH")
        };
        vars.insert(format!("HOST_{key}"), abs(&host));
        vars.insert(format!("ENV_{key}"), dir.to_string());
    }
    let cpus = env.cpus.unwrap_or(input.host.ncpu as f64);
    vars.insert("CPUS".into(), format_cpus(cpus));
    let memory_mb = env
        .memory_mb
        .unwrap_or((input.host.mem_total.max(0) as u64) >> 20);
    vars.insert("MEMORY".into(), format!("{memory_mb}M"));
    vars.insert("TEST_DIR".into(), "/tests".into());
    vars
}

fn format_cpus(c: f64) -> String {
    if c.fract() == 0.0 {
        format!("{}", c as i64)
    } else {
        format!("{c}")
    }
}

/// Reads the task's compose file and, when there is one, builds and starts its services and
/// networks and applies `main`'s overrides to `spec` (the main container, not yet created).
///
/// # Errors
/// [`ServiceError::Task`] for a compose file skillscope cannot run as written (naming every
/// unsupported key), a service image that does not build or is missing, or a service that exits
/// or never becomes healthy; [`ServiceError::Runner`] for Docker failures; [`ServiceError::Cancelled`].
/// Whatever was started is removed before an error returns.
pub async fn start(
    input: &ServicesInput<'_>,
    spec: &mut ContainerSpec,
) -> Result<TrialServices, ServiceError> {
    let env_dir = input.task.environment_dir();
    let vars = variables(input);
    let plan = {
        let (dir, vars) = (env_dir.clone(), vars.clone());
        tokio::task::spawn_blocking(move || compose::load(&dir, &vars))
            .await
            .map_err(|e| ServiceError::Runner(RunnerError::Task(e.to_string())))?
            .map_err(ServiceError::Task)?
    };
    let Some(plan) = plan else {
        return Ok(TrialServices::default());
    };
    let mut log = ServiceLog::new(input.trial_dir, &plan);
    let mut services = TrialServices {
        docker: Some(input.host.docker.clone()),
        ..Default::default()
    };
    let result = start_plan(input, &plan, spec, &mut services, &mut log).await;
    if let Err(e) = &result {
        log.line(format!("failed: {}", describe(e)));
        services.remove().await;
    }
    log.write();
    result.map(|()| services)
}

fn describe(e: &ServiceError) -> String {
    match e {
        ServiceError::Task(m) => m.clone(),
        ServiceError::Runner(e) => e.to_string(),
        ServiceError::Cancelled => "cancelled".into(),
    }
}

/// `environment/services.log` of the trial.
struct ServiceLog {
    path: std::path::PathBuf,
    lines: Vec<String>,
    t0: Instant,
}

impl ServiceLog {
    fn new(trial_dir: &Path, plan: &ComposePlan) -> ServiceLog {
        let mut lines = vec![format!("compose file {}", plan.file.display())];
        lines.extend(plan.notes.iter().cloned());
        ServiceLog {
            path: trial_dir.join("environment/services.log"),
            lines,
            t0: Instant::now(),
        }
    }

    fn line(&mut self, s: String) {
        self.lines
            .push(format!("[{:>6.1}s] {s}", self.t0.elapsed().as_secs_f64()));
    }

    fn write(&self) {
        let _ = crate::fs::write_fresh(&self.path, (self.lines.join("\n") + "\n").as_bytes());
    }
}

async fn start_plan(
    input: &ServicesInput<'_>,
    plan: &ComposePlan,
    spec: &mut ContainerSpec,
    services: &mut TrialServices,
    log: &mut ServiceLog,
) -> Result<(), ServiceError> {
    let docker = &input.host.docker;
    let task = input.task;
    let allow_internet = task.config.environment.allow_internet;
    // Images first: a service that cannot build fails the trial before anything starts.
    let mut images: HashMap<String, (String, String)> = HashMap::new();
    for svc in &plan.services {
        let image = match (&svc.build, &svc.image) {
            (Some(build), _) => {
                let built = tokio::select! {
                    r = input.images.ensure_service(input.host, task, &svc.name, build, task.build_timeout()) => r,
                    _ = input.cancel.cancelled() => return Err(ServiceError::Cancelled),
                };
                let ready = built.map_err(|e| match e.fault {
                    // The infrastructure failed the build: a fault, not the task's.
                    Some(fault) => ServiceError::Runner(RunnerError::Backend {
                        context: format!("building service {}", svc.name),
                        message: e.message,
                        fault,
                    }),
                    None => ServiceError::Task(format!("service {} does not build: {e}", svc.name)),
                })?;
                log.line(format!(
                    "service {}: image {} ({})",
                    svc.name,
                    ready.tag,
                    if ready.built { "built" } else { "reused" }
                ));
                let _ = crate::fs::write_fresh(
                    &input
                        .trial_dir
                        .join(format!("environment/build-{}.log", file_safe(&svc.name))),
                    ready.log.as_bytes(),
                );
                (ready.tag, ready.hash)
            }
            (None, Some(image)) => {
                match docker.inspect_image(image).await {
                    Ok(_) => {}
                    Err(bollard::errors::Error::DockerResponseServerError {
                        status_code: 404,
                        ..
                    }) => {
                        return Err(ServiceError::Task(format!(
                            "service {}: image {image} is not on this Docker host (skillscope pulls no images)",
                            svc.name
                        )));
                    }
                    Err(e) => {
                        return Err(ServiceError::Runner(docker_error(
                            format!("looking up image {image} of service {}", svc.name),
                            e,
                        )));
                    }
                }
                log.line(format!("service {}: image {image}", svc.name));
                (image.clone(), String::new())
            }
            (None, None) => unreachable!("the compose parser requires build or image"),
        };
        images.insert(svc.name.clone(), image);
    }
    let mut binds = bind_lines(input, plan, services, log).await?;
    // Starting and waiting get `[environment] build_timeout_sec` of their own.
    let deadline = Instant::now() + task.build_timeout();
    // Networks.
    let mut net_names: HashMap<String, String> = HashMap::new();
    for net in &plan.networks {
        let name = format!("{}-{}", spec.name, file_safe(&net.name));
        let internal = net.internal || !allow_internet;
        let created = docker
            .create_network(bollard::models::NetworkCreateRequest {
                name: name.clone(),
                driver: Some("bridge".into()),
                internal: Some(internal),
                labels: Some(spec.labels.clone()),
                ..Default::default()
            })
            .await
            .map_err(|e| {
                ServiceError::Runner(docker_error(format!("creating network {name}"), e))
            })?;
        services.networks.push(created.id);
        log.line(format!(
            "network {} as {name}{}",
            net.name,
            if internal {
                " (internal: no outside access)"
            } else {
                ""
            }
        ));
        net_names.insert(net.name.clone(), name);
    }
    // Services, dependencies first.
    let mut started: HashMap<String, DockerContainer> = HashMap::new();
    for svc in &plan.services {
        wait_for_dependencies(docker, svc, &started, deadline, input.cancel, log).await?;
        let (image, hash) = &images[&svc.name];
        let lines = binds.remove(&Some(svc.name.clone())).unwrap_or_default();
        let sspec = service_spec(input, svc, image, hash, spec, &net_names, lines);
        let c = DockerContainer::start(docker, &sspec)
            .await
            .map_err(ServiceError::Runner)?;
        log.line(format!("service {} started as {}", svc.name, sspec.name));
        services.containers.push(c.clone());
        started.insert(svc.name.clone(), c);
    }
    // `up --wait`: every service running, healthy when it has a healthcheck (one a dependent
    // waits to complete may have exited with 0).
    for svc in &plan.services {
        let completes = plan
            .services
            .iter()
            .chain(std::iter::once(&plan.main))
            .any(|d| {
                d.depends_on
                    .iter()
                    .any(|(n, c)| n == &svc.name && *c == DependsOn::Completed)
            });
        let want = if completes {
            DependsOn::Completed
        } else {
            DependsOn::Started
        };
        wait_ready(
            docker,
            &svc.name,
            &started[&svc.name],
            want,
            true,
            deadline,
            input.cancel,
        )
        .await?;
    }
    wait_for_dependencies(docker, &plan.main, &started, deadline, input.cancel, log).await?;
    let main_binds = binds.remove(&None).unwrap_or_default();
    apply_main(input, &plan.main, spec, &net_names, main_binds, log);
    Ok(())
}

/// How one bind is mounted in the trial.
enum Mounted {
    /// As the compose file says (`source:target[:ro]`).
    AsIs(String),
    /// From the trial's copy of its source.
    Copy(compose::BindDef),
}

/// Every service's bind mounts as Docker's `source:target[:ro]` lines, by service name (`main`'s
/// under `None`, its `/logs` folders left out: skillscope mounts them). A bind that
/// cannot be mounted is logged and left out; a writable one from outside the trial folder is
/// mounted from the trial's copy ([`BindCopies`]), made here off the async threads.
///
/// # Errors
/// [`ServiceError::Task`] when a writable folder is too large to copy, [`ServiceError::Runner`]
/// when the copy fails (a full disk).
async fn bind_lines(
    input: &ServicesInput<'_>,
    plan: &ComposePlan,
    services: &mut TrialServices,
    log: &mut ServiceLog,
) -> Result<HashMap<Option<String>, Vec<String>>, ServiceError> {
    // (service, how each bind is mounted), in the file's order.
    let mut wanted: Vec<(Option<String>, Mounted)> = Vec::new();
    let main = std::iter::once((None, &plan.main));
    for (key, svc) in main.chain(plan.services.iter().map(|s| (Some(s.name.clone()), s))) {
        let who = key.as_deref().unwrap_or("main");
        for b in &svc.binds {
            if key.is_none()
                && ENV_LOG_DIRS
                    .iter()
                    .any(|(_, d)| b.target.trim_end_matches('/') == *d)
            {
                log.line(format!(
                    "main: {} is mounted by skillscope itself",
                    b.target
                ));
                continue;
            }
            match bind_line(input, b) {
                Err(why) => log.line(format!("{who}: {} not mounted: {why}", b.target)),
                // A socket or a device is shared as it is (nothing to copy).
                Ok(line)
                    if b.read_only
                        || b.source.starts_with(input.trial_dir)
                        || !std::fs::metadata(&b.source)
                            .is_ok_and(|m| m.is_dir() || m.is_file()) =>
                {
                    wanted.push((key.clone(), Mounted::AsIs(line)));
                }
                Ok(_) => {
                    log.line(format!(
                        "{who}: {} mounted from this trial's copy of {}",
                        b.target,
                        b.source.display()
                    ));
                    wanted.push((key.clone(), Mounted::Copy(b.clone())));
                }
            }
        }
    }
    let mut copies = std::mem::take(&mut services.copies);
    let (lines, copies) = tokio::task::spawn_blocking(move || {
        let mut out: HashMap<Option<String>, Vec<String>> = HashMap::new();
        for (key, want) in wanted {
            let line = match want {
                Mounted::AsIs(line) => line,
                Mounted::Copy(b) => {
                    let main_target = key.is_none().then_some(b.target.as_str());
                    match copies.site_source(&b.source, main_target) {
                        Ok(copy) => format!("{}:{}", copy.display(), b.target),
                        Err(e) => return (Err(e), copies),
                    }
                }
            };
            out.entry(key).or_default().push(line);
        }
        (Ok(out), copies)
    })
    .await
    .map_err(|e| ServiceError::Runner(RunnerError::Task(e.to_string())))?;
    if let Some(root) = copies.root() {
        log.line(format!(
            "copies in {} (removed with the trial's environments)",
            root.display()
        ));
    }
    services.copies = copies;
    lines.map_err(|e| match e {
        CopyError::TooLarge(m) => ServiceError::Task(format!("a writable bind mount: {m}")),
        CopyError::Io(p, e) => ServiceError::Runner(RunnerError::io(p, e)),
    })
}

fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

async fn wait_for_dependencies(
    docker: &Docker,
    svc: &ServiceDef,
    started: &HashMap<String, DockerContainer>,
    deadline: Instant,
    cancel: &CancellationToken,
    log: &mut ServiceLog,
) -> Result<(), ServiceError> {
    for (dep, cond) in &svc.depends_on {
        let Some(c) = started.get(dep) else { continue };
        wait_ready(docker, dep, c, *cond, false, deadline, cancel).await?;
        log.line(format!(
            "{} waited for {dep}: {}",
            svc.name,
            match cond {
                DependsOn::Started => "started",
                DependsOn::Healthy => "healthy",
                DependsOn::Completed => "completed successfully",
            }
        ));
    }
    Ok(())
}

/// Waits until service `name` satisfies `want`. With `healthy_if_checked`, a service that has a
/// healthcheck must also be healthy (`up --wait`).
#[allow(clippy::too_many_arguments)]
async fn wait_ready(
    docker: &Docker,
    name: &str,
    c: &DockerContainer,
    want: DependsOn,
    healthy_if_checked: bool,
    deadline: Instant,
    cancel: &CancellationToken,
) -> Result<(), ServiceError> {
    loop {
        let info = docker.inspect_container(&c.id, None).await.map_err(|e| {
            ServiceError::Runner(docker_error(format!("inspecting service {name}"), e))
        })?;
        let state = info.state.unwrap_or_default();
        let exited = matches!(
            state.status,
            Some(ContainerStateStatusEnum::EXITED) | Some(ContainerStateStatusEnum::DEAD)
        );
        let code = state.exit_code.unwrap_or(-1);
        let health = state.health.as_ref().and_then(|h| h.status);
        let has_check =
            health.is_some_and(|h| h != HealthStatusEnum::NONE && h != HealthStatusEnum::EMPTY);
        match want {
            DependsOn::Completed if exited && code == 0 => return Ok(()),
            _ if exited => {
                let why = if want == DependsOn::Completed {
                    format!("service {name} exited with code {code}")
                } else {
                    format!("service {name} exited (code {code}) instead of staying up")
                };
                return Err(ServiceError::Task(format!(
                    "{why}{}",
                    logs_tail(docker, c).await
                )));
            }
            DependsOn::Healthy if !has_check => {
                return Err(ServiceError::Task(format!(
                    "service {name} has no healthcheck, but a service depends on it being healthy"
                )));
            }
            DependsOn::Started if !(healthy_if_checked && has_check) => return Ok(()),
            DependsOn::Completed => {}
            _ => match health {
                Some(HealthStatusEnum::HEALTHY) => return Ok(()),
                Some(HealthStatusEnum::UNHEALTHY) => {
                    let last = state
                        .health
                        .and_then(|h| h.log)
                        .and_then(|l| l.last().cloned())
                        .and_then(|r| r.output)
                        .unwrap_or_default();
                    return Err(ServiceError::Task(format!(
                        "service {name} is unhealthy; last check said: {}",
                        crate::sanitize::text(last.trim())
                    )));
                }
                _ => {}
            },
        }
        if Instant::now() >= deadline {
            return Err(ServiceError::Task(format!(
                "service {name} was not ready within [environment] build_timeout_sec{}",
                logs_tail(docker, c).await
            )));
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = cancel.cancelled() => return Err(ServiceError::Cancelled),
        }
    }
}

/// The last lines a service printed, sanitized, for an error message.
async fn logs_tail(docker: &Docker, c: &DockerContainer) -> String {
    let mut stream = docker.logs(
        &c.id,
        Some(bollard::query_parameters::LogsOptions {
            stdout: true,
            stderr: true,
            tail: "15".into(),
            ..Default::default()
        }),
    );
    let mut out = String::new();
    let read = async {
        while let Some(Ok(chunk)) = stream.next().await {
            out.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
            if out.len() > 4000 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), read).await;
    let out = crate::sanitize::text(out.trim());
    if out.is_empty() {
        String::new()
    } else {
        format!("; its last output:\n{out}")
    }
}

/// A bind mount as the Docker API takes it, or why it is left out.
fn bind_line(input: &ServicesInput<'_>, b: &compose::BindDef) -> Result<String, String> {
    if !input.host.local {
        return Err("the Docker host is remote: host folders cannot be mounted".into());
    }
    if !b.source.exists() {
        return Err(format!("host path {} does not exist", b.source.display()));
    }
    // Skills reach the main container only through the condition's image.
    let skills = input.task.environment_dir().join("skills");
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let (source, skills) = (canon(&b.source), canon(&skills));
    if skills.starts_with(&source) || source.starts_with(&skills) {
        return Err("it would expose the task's skills folder".into());
    }
    Ok(format!(
        "{}:{}{}",
        b.source.display(),
        b.target,
        if b.read_only { ":ro" } else { "" }
    ))
}

fn health_config(h: &compose::HealthDef) -> HealthConfig {
    let ns = |d: Option<Duration>| d.map(|d| d.as_nanos() as i64);
    HealthConfig {
        test: (!h.test.is_empty()).then(|| h.test.clone()),
        interval: ns(h.interval),
        timeout: ns(h.timeout),
        retries: h.retries,
        start_period: ns(h.start_period),
        ..Default::default()
    }
}

fn networks_of(
    svc: &ServiceDef,
    net_names: &HashMap<String, String>,
) -> (Vec<(String, Vec<String>)>, Option<bool>) {
    match &svc.network {
        NetworkDef::Project(nets) => (
            nets.iter()
                .filter_map(|(n, aliases)| {
                    let mut all = vec![svc.name.clone()];
                    all.extend(aliases.iter().cloned());
                    net_names.get(n).map(|real| (real.clone(), all))
                })
                .collect(),
            Some(false),
        ),
        NetworkDef::Bridge => (Vec::new(), None),
        NetworkDef::None => (Vec::new(), Some(true)),
    }
}

fn service_spec(
    input: &ServicesInput<'_>,
    svc: &ServiceDef,
    image: &str,
    hash: &str,
    main: &ContainerSpec,
    net_names: &HashMap<String, String>,
    binds: Vec<String>,
) -> ContainerSpec {
    let mut labels: HashMap<String, String> = svc
        .labels
        .iter()
        .filter(|(k, _)| !k.starts_with("skillscope."))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    labels.extend(main.labels.clone());
    labels.insert(labels::SERVICE.into(), svc.name.clone());
    labels.insert(labels::CONTENT_HASH.into(), hash.to_string());
    let (networks, none) = networks_of(svc, net_names);
    ContainerSpec {
        image: image.to_string(),
        name: format!("{}-{}", main.name, file_safe(&svc.name)),
        labels,
        env: svc.environment.clone(),
        binds,
        cpus: svc.cpus.map(|c| c.min(input.host.ncpu as f64)),
        memory_bytes: svc.memory_bytes,
        network_none: none.unwrap_or(!input.task.config.environment.allow_internet),
        networks,
        cmd: match &svc.command {
            Some(a) => ContainerCmd::Args(a.clone()),
            None => ContainerCmd::Image,
        },
        entrypoint: svc.entrypoint.clone(),
        user: svc.user.clone(),
        working_dir: svc.working_dir.clone(),
        hostname: svc.hostname.clone(),
        extra_hosts: svc.extra_hosts.clone(),
        healthcheck: svc.healthcheck.as_ref().map(health_config),
        tty: svc.tty,
        open_stdin: svc.stdin_open,
        init: svc.init,
        // A service is the task's own program (a database, an API), run as its image says; the
        // agent reaches it only over the network.
        pids_limit: None,
        hardened: false,
        empty_volumes: Vec::new(),
    }
}

/// `main`'s overrides on the trial container: its networks (with the alias `main`), environment
/// (before the operator's `--env`), bind mounts (`binds`, from [`bind_lines`]), limits and the
/// other settings it names.
fn apply_main(
    input: &ServicesInput<'_>,
    main: &ServiceDef,
    spec: &mut ContainerSpec,
    net_names: &HashMap<String, String>,
    binds: Vec<String>,
    log: &mut ServiceLog,
) {
    let (networks, none) = networks_of(main, net_names);
    if let Some(none) = none {
        spec.network_none = none;
    }
    spec.networks = networks;
    let mut env = main.environment.clone();
    env.append(&mut spec.env);
    spec.env = env;
    spec.binds.extend(binds);
    if let Some(c) = main.cpus {
        spec.cpus = Some(c.min(input.host.ncpu as f64));
    }
    if main.memory_bytes.is_some() {
        spec.memory_bytes = main.memory_bytes;
    }
    for (k, v) in &main.labels {
        if !k.starts_with("skillscope.") {
            spec.labels.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    spec.user = main.user.clone();
    spec.working_dir = main.working_dir.clone();
    spec.hostname = main.hostname.clone();
    spec.extra_hosts = main.extra_hosts.clone();
    spec.tty = main.tty;
    spec.open_stdin = main.stdin_open;
    spec.init = main.init;
    log.line(format!(
        "main joins {}",
        if spec.network_none {
            "no network".to_string()
        } else if spec.networks.is_empty() {
            "Docker's default bridge".to_string()
        } else {
            spec.networks
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
    ));
}
