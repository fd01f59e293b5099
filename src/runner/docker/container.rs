//! Containers on a Docker daemon: create and start (a trial's environments, skillscope's
//! helpers, a compose task's services), exec with streamed output, tar streams in and out, the
//! forced stop and removal, and the sweeps by label.
//!
//! A trial's environment and a helper have skillscope's static shell as PID 1
//! ([`super::static_shell`]: a read-only volume on [`STATIC_SHELL_DIR`]) — a loop of its `sleep`
//! that reaps every orphan, which `kill -9 -1` in the container never reaches, so every other
//! process can be stopped without losing the container. An agent's environment runs the image's
//! ENTRYPOINT in the background under it, as Harbor's environments keep it; a verifier's runs
//! nothing of the image. Removal is forced (SIGKILL), so teardown never waits out Docker's stop
//! timeout. A trial's container is kept to itself ([`ContainerSpec::hardened`]): a process
//! limit, the capabilities in [`KEPT_CAPABILITIES`] only, `no-new-privileges`.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use bollard::Docker;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptions, DownloadFromContainerOptions, KillContainerOptions,
    ListContainersOptions, RemoveContainerOptions, TopOptions, UploadToContainerOptions,
};
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;

use super::docker_error;
use crate::runner::backend::{
    Chunk, Environment, ExecExit, ExecSpec, ExecStream, KEPT_CAPABILITIES, TarBody,
};
use crate::runner::sandbox::STATIC_SHELL_DIR;
use crate::runner::{Fault, RunnerError, labels};

/// What to create.
#[derive(Debug, Clone, Default)]
pub struct ContainerSpec {
    /// Image reference.
    pub image: String,
    /// Container name.
    pub name: String,
    /// Labels (see [`crate::runner::labels`]).
    pub labels: HashMap<String, String>,
    /// `KEY=VALUE` environment.
    pub env: Vec<String>,
    /// Bind mounts, `host:container[:ro]` (a volume by name too).
    pub binds: Vec<String>,
    /// CPU limit in cores.
    pub cpus: Option<f64>,
    /// Memory limit in bytes.
    pub memory_bytes: Option<i64>,
    /// `--network none`.
    pub network_none: bool,
    /// User-defined networks to join, with the extra DNS aliases on each (a compose task's
    /// project networks); the first is joined at creation, the others before the start.
    pub networks: Vec<(String, Vec<String>)>,
    /// What PID 1 runs.
    pub cmd: ContainerCmd,
    /// Overrides the image's ENTRYPOINT.
    pub entrypoint: Option<Vec<String>>,
    /// User (`uid[:gid]` or a name); `None` = the image's.
    pub user: Option<String>,
    /// Working folder; `None` = the image's.
    pub working_dir: Option<String>,
    /// Host name.
    pub hostname: Option<String>,
    /// Extra `/etc/hosts` lines, `host:ip`.
    pub extra_hosts: Vec<String>,
    /// Healthcheck; `None` = the image's.
    pub healthcheck: Option<bollard::models::HealthConfig>,
    /// Allocate a TTY.
    pub tty: bool,
    /// Keep stdin open.
    pub open_stdin: bool,
    /// Run an init process as PID 1.
    pub init: bool,
    /// Most processes (threads included) the container may have at once (`--pids-limit`);
    /// `None`: no limit.
    pub pids_limit: Option<i64>,
    /// Keep only [`KEPT_CAPABILITIES`] and set `no-new-privileges` (a trial's own container; a
    /// compose task's services keep Docker's defaults).
    pub hardened: bool,
    /// Folders that get a fresh, empty anonymous volume of their own (nothing copied in from the
    /// image, so whatever the image holds there is hidden), removed with the container.
    pub empty_volumes: Vec<String>,
}

/// What a container's PID 1 runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ContainerCmd {
    /// skillscope's static shell (its volume bind must be in the spec's binds): a loop of its
    /// `sleep` that reaps orphans, with these arguments (the image's ENTRYPOINT and CMD) started
    /// in the background first when not empty.
    #[default]
    OwnInit,
    /// The image's own ENTRYPOINT and CMD (a compose service without `command`).
    Image,
    /// These arguments (after the image's ENTRYPOINT).
    Args(Vec<String>),
}

/// PID 1 of skillscope's own containers: the static shell runs its arguments in the background
/// when there are any, then sleeps in a loop (its `sleep`, never the image's), reaping every
/// orphan the container's processes leave. On `USR1` it counts the live processes of its pid
/// namespace (`/proc/[0-9]*`, its own shell's glob, each `stat`'s state read with its builtin
/// `read` — the field after the last `) `, so no name can fake it; zombies not counted; no
/// process started) and ends every other
/// (`kill -9 -1`, the shell's builtin): the daemon sends it when an exec of skillscope's was
/// ended ([`crate::runner::backend::Environment::end_all_from_pid_1`]) and to end everything
/// from outside; a process inside that sends it ends itself with the rest. Its `wait` returns
/// on the signal, so the kill runs at once, not after the `sleep`. The next `sleep` carries the
/// count as a second argument (`sleep 3600 N`: busybox sums them; `0` before any signal), so
/// the daemon's listing of PID 1's children says how many processes were alive at the kill —
/// PID 1 and its old `sleep` included — even those no listing caught (a process that forks a
/// copy of itself and exits, over and over).
pub const OWN_INIT: &str = "c=0; trap 'c=0; for d in /proc/[0-9]*; do \
     { read -r s < $d/stat; } 2>/dev/null && case ${s##*) } in Z*) ;; *) c=$((c+1));; esac; \
     done; kill -9 -1' USR1; \
     if [ $# -gt 0 ]; then \"$@\" & fi; \
     while :; do /skillscope/static/sleep 3600 $c & wait $!; done";

impl ContainerSpec {
    /// A short-lived helper of `image` that belongs to no run (a leak check, a kit-volume fill,
    /// reading an image's facts): named `skillscope-<kind>-<uuid>`, labelled
    /// [`labels::MANAGED`] and [`labels::HELPER`]` = kind` (swept by age when a killed process
    /// leaves it), no network, the static shell as PID 1 (`shell`: its bind).
    pub fn helper(image: &str, kind: &str, shell: &str) -> ContainerSpec {
        ContainerSpec {
            image: image.to_string(),
            name: format!("skillscope-{kind}-{}", uuid::Uuid::new_v4().simple()),
            labels: HashMap::from([
                (labels::MANAGED.to_string(), "1".to_string()),
                (labels::HELPER.to_string(), kind.to_string()),
            ]),
            binds: vec![shell.to_string()],
            network_none: true,
            ..Default::default()
        }
    }
}

/// How long a container's create (with its networks joined) and its start took.
#[derive(Debug, Clone, Copy, Default)]
pub struct StartTimes {
    /// The create call (and the joins of networks after the first).
    pub create: Duration,
    /// The start call.
    pub start: Duration,
}

/// A container on a Docker daemon.
#[derive(Clone)]
pub struct DockerContainer {
    docker: Docker,
    /// Container id.
    pub id: String,
    /// Container name.
    pub name: String,
    /// The host's CPUs, in billionths, when the container was started with a lower CPU limit
    /// that [`Environment::lift_cpu_limit`] may lift (a trial's environment on its site).
    lift_to_nano_cpus: Option<i64>,
    /// The user an exec that names none runs as (a trial's environment, whose PID 1 runs as
    /// root: [`DockerContainer::with_default_user`]); `None`: the container's own user.
    default_user: Option<String>,
}

impl DockerContainer {
    /// Creates and starts a container.
    ///
    /// # Errors
    /// [`RunnerError::Backend`] naming the image; a half-created container is removed.
    pub async fn start(
        docker: &Docker,
        spec: &ContainerSpec,
    ) -> Result<DockerContainer, RunnerError> {
        Self::start_timed(docker, spec, &mut StartTimes::default()).await
    }

    /// [`DockerContainer::start`], keeping in `times` how long the create and the start took.
    ///
    /// # Errors
    /// As [`DockerContainer::start`].
    pub async fn start_timed(
        docker: &Docker,
        spec: &ContainerSpec,
        times: &mut StartTimes,
    ) -> Result<DockerContainer, RunnerError> {
        let t0 = std::time::Instant::now();
        let first_network = spec.networks.first().filter(|_| !spec.network_none);
        let endpoint = |aliases: &Vec<String>| bollard::models::EndpointSettings {
            aliases: (!aliases.is_empty()).then(|| aliases.clone()),
            ..Default::default()
        };
        let (entrypoint, cmd) = match &spec.cmd {
            ContainerCmd::OwnInit => {
                let mut args = vec![
                    format!("{STATIC_SHELL_DIR}/sh"),
                    "-c".to_string(),
                    OWN_INIT.to_string(),
                    "sh".to_string(),
                ];
                args.extend(spec.entrypoint.iter().flatten().cloned());
                (Some(args), Some(Vec::new()))
            }
            ContainerCmd::Image => (spec.entrypoint.clone(), None),
            ContainerCmd::Args(a) => (spec.entrypoint.clone(), Some(a.clone())),
        };
        let body = ContainerCreateBody {
            image: Some(spec.image.clone()),
            cmd,
            entrypoint,
            user: spec.user.clone(),
            working_dir: spec.working_dir.clone(),
            hostname: spec.hostname.clone(),
            healthcheck: spec.healthcheck.clone(),
            tty: spec.tty.then_some(true),
            open_stdin: spec.open_stdin.then_some(true),
            labels: Some(spec.labels.clone()),
            env: Some(spec.env.clone()),
            host_config: Some(host_config(spec, first_network)),
            networking_config: first_network.map(|(n, aliases)| {
                bollard::models::NetworkingConfig {
                    endpoints_config: Some(HashMap::from([(n.clone(), endpoint(aliases))])),
                }
            }),
            ..Default::default()
        };
        let created = docker
            .create_container(
                Some(CreateContainerOptions {
                    name: Some(spec.name.clone()),
                    ..Default::default()
                }),
                body,
            )
            .await
            .map_err(|e| docker_error(format!("creating a container from {}", spec.image), e))?;
        let c = DockerContainer {
            docker: docker.clone(),
            id: created.id,
            name: spec.name.clone(),
            lift_to_nano_cpus: None,
            default_user: None,
        };
        // API 1.41 joins one network at creation; the others are joined before the start.
        for (n, aliases) in spec.networks.iter().skip(1).filter(|_| !spec.network_none) {
            let joined = docker
                .connect_network(
                    n,
                    bollard::models::NetworkConnectRequest {
                        container: c.id.clone(),
                        endpoint_config: Some(endpoint(aliases)),
                    },
                )
                .await;
            if let Err(e) = joined {
                c.remove_now().await;
                return Err(docker_error(
                    format!("connecting {} to network {n}", spec.name),
                    e,
                ));
            }
        }
        times.create = t0.elapsed();
        let t0 = std::time::Instant::now();
        let started = docker.start_container(&c.id, None).await;
        times.start = t0.elapsed();
        if let Err(e) = started {
            c.remove_now().await;
            return Err(docker_error(
                format!("starting a container from {}", spec.image),
                e,
            ));
        }
        Ok(c)
    }

    /// Every process of the container but PID 1 and its own `sleep`, as [`others_than_init`]
    /// lists them.
    /// PID 1's host pid and the rows of `docker top -o pid,ppid,stat,nlwp,args` (host pids),
    /// each call held to [`OUTSIDE_LIMIT`].
    ///
    /// # Errors
    /// [`RunnerError::Backend`] naming `what` when the daemon does not answer in time, fails, or
    /// the container does not run.
    async fn top_rows(&self, what: &str) -> Result<(String, Vec<Vec<String>>), RunnerError> {
        let init =
            tokio::time::timeout(OUTSIDE_LIMIT, self.docker.inspect_container(&self.id, None))
                .await
                .map_err(|_| RunnerError::backend_text(what, "no answer in 30s"))?
                .map_err(|e| docker_error(what, e))?
                .state
                .and_then(|s| s.pid)
                .filter(|p| *p > 0)
                .ok_or_else(|| RunnerError::backend_text(what, "the container does not run"))?;
        Ok((init.to_string(), self.rows(what).await?))
    }

    /// The rows of `docker top -o pid,ppid,stat,nlwp,args`, held to [`OUTSIDE_LIMIT`].
    async fn rows(&self, what: &str) -> Result<Vec<Vec<String>>, RunnerError> {
        let top = tokio::time::timeout(
            OUTSIDE_LIMIT,
            self.docker.top_processes(
                &self.id,
                Some(TopOptions {
                    ps_args: format!("-o {TOP_COLUMNS}"),
                }),
            ),
        )
        .await
        .map_err(|_| RunnerError::backend_text(what, "no answer in 30s"))?
        .map_err(|e| docker_error(what, e))?;
        Ok(top.processes.unwrap_or_default())
    }

    /// The container's processes but PID 1's own, seen from outside ([`others_than_init`]).
    async fn top(&self, what: &str) -> Result<Vec<String>, RunnerError> {
        let (init, rows) = self.top_rows(what).await?;
        Ok(others_than_init(&rows, &init))
    }

    /// Ends every process but PID 1 without an exec: lists them from outside, sends PID 1 its
    /// `USR1` through the daemon, and waits until the daemon's listing shows PID 1's handler
    /// has run — its `sleep` replaced by a new one and nothing else left but an exec's process
    /// tree — polling every 10 ms for at most [`CONFIRM_LIMIT`]. Returns the listing taken
    /// before the signal ([`others_than_init`]; with `execs_ended`, an exec's process tree
    /// listed too: none of skillscope's runs) and, with `execs_ended` only, a line more when
    /// PID 1 counted more processes at its kill than that listing had rows ([`unlisted`]; a
    /// running exec of skillscope's could start one in between).
    ///
    /// # Errors
    /// [`RunnerError::Backend`] when the daemon does not answer, or the end is not confirmed in
    /// time (PID 1 gone or held: a fault either way).
    async fn end_all_confirmed(&self, execs_ended: bool) -> Result<Vec<String>, RunnerError> {
        let what = format!("ending the processes of {} from outside", self.name);
        let (init, rows) = self.top_rows(&what).await?;
        let mut before = if execs_ended {
            all_but_init(&rows, &init)
        } else {
            others_than_init(&rows, &init)
        };
        let old_sleep = own_sleep(&rows, &init).map(|(pid, _)| pid);
        self.end_all_from_pid_1().await?;
        let t0 = std::time::Instant::now();
        loop {
            let after = self.rows(&what).await?;
            let left = others_than_init(&after, &init);
            let sleep = own_sleep(&after, &init);
            if let Some((pid, counted)) = sleep.filter(|(pid, _)| Some(pid) != old_sleep.as_ref())
                && left.is_empty()
            {
                tracing::debug!(container = %self.name, %pid, counted, listed = rows.len(), "ended from outside");
                if execs_ended && let Some(line) = unlisted(counted, live(&rows)) {
                    before.push(line);
                }
                return Ok(before);
            }
            if t0.elapsed() > CONFIRM_LIMIT {
                return Err(RunnerError::backend_text(
                    what,
                    format!(
                        "PID 1 did not confirm the end in {}s; left: {}",
                        CONFIRM_LIMIT.as_secs(),
                        crate::sanitize::one_line(&left.join("; "))
                    ),
                ));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The container, its CPU limit (`spec_cpus`) liftable to `host_cpus` by
    /// [`Environment::lift_cpu_limit`] when it is lower.
    pub fn with_liftable_cpus(mut self, spec_cpus: Option<f64>, host_cpus: u32) -> Self {
        self.lift_to_nano_cpus = lift_to(spec_cpus, host_cpus);
        self
    }

    /// This container with execs that name no user run as `user` (its PID 1 runs as root; the
    /// image's `USER` is the one its execs run as): [`Environment::default_user`].
    pub fn with_default_user(mut self, user: Option<String>) -> Self {
        self.default_user = user;
        self
    }

    /// Removes the container (forced, with its anonymous volumes), held to [`REMOVE_LIMIT`]; true
    /// once the daemon no longer lists it. Never fails.
    pub async fn remove_now(&self) -> bool {
        remove_forced(&self.docker, &self.id).await
    }
}

/// Longest one container's forced removal may take. Docker 20.10 holds a container whose exec's
/// runtime setup process was stopped (SIGSTOP from inside) for good: the removal never answers,
/// and a run must not wait on it forever (the container is left, named in the log).
const REMOVE_LIMIT: Duration = Duration::from_secs(60);

/// How often a removal another request started is asked after.
const REMOVAL_POLL: Duration = Duration::from_millis(100);

/// Removes container `id` (forced, with its anonymous volumes), held to [`REMOVE_LIMIT`]; true
/// once the container is gone. While the daemon answers 409 (a removal already in progress, as
/// when a trial's background removal and its site's close meet) or 5xx (Docker 20.10's "could
/// not kill" of a container whose processes are still being ended, under load) the removal is
/// asked again until the daemon no longer knows the container (404), so a caller never goes on —
/// or a stopping run exits — while the daemon still holds it. A daemon that does not answer at
/// all ends the removal at once (false).
async fn remove_forced(docker: &Docker, id: &str) -> bool {
    let gone = async {
        loop {
            let removed = docker
                .remove_container(
                    id,
                    Some(RemoveContainerOptions {
                        force: true,
                        v: true,
                        ..Default::default()
                    }),
                )
                .await;
            match removed {
                Ok(()) => break true,
                Err(e) if status_of(&e) == Some(404) => break true,
                Err(e) if status_of(&e).is_some_and(removal_asked_again) => {
                    tokio::time::sleep(REMOVAL_POLL).await
                }
                Err(_) => break false,
            }
        }
    };
    match tokio::time::timeout(REMOVE_LIMIT, gone).await {
        Ok(gone) => gone,
        Err(_) => {
            tracing::warn!(
                container = %id,
                "the daemon did not remove the container in 60s; left (docs/operations.md)"
            );
            false
        }
    }
}

/// Whether a removal the daemon answered with `status` is asked again: 409 (another removal
/// is under way) and 5xx (the daemon could not end the container yet).
fn removal_asked_again(status: u16) -> bool {
    status == 409 || (500..600).contains(&status)
}

/// The HTTP status of a daemon's error answer; `None` for a fault of the connection.
fn status_of(e: &bollard::errors::Error) -> Option<u16> {
    match e {
        bollard::errors::Error::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

/// The CPUs, in billionths, a container started with `spec_cpus` is lifted to on a host of
/// `host_cpus`: the host's, when the limit is lower; `None` when there is nothing to lift.
fn lift_to(spec_cpus: Option<f64>, host_cpus: u32) -> Option<i64> {
    let host = i64::from(host_cpus) * 1_000_000_000;
    spec_cpus
        .map(|c| (c * 1e9).round() as i64)
        .filter(|c| *c < host)
        .map(|_| host)
}

/// The host configuration of `spec`.
fn host_config(spec: &ContainerSpec, first_network: Option<&(String, Vec<String>)>) -> HostConfig {
    HostConfig {
        nano_cpus: spec.cpus.map(|c| (c * 1e9).round() as i64),
        memory: spec.memory_bytes,
        pids_limit: spec.pids_limit,
        cap_drop: spec.hardened.then(|| vec!["ALL".to_string()]),
        cap_add: spec
            .hardened
            .then(|| KEPT_CAPABILITIES.iter().map(|c| c.to_string()).collect()),
        security_opt: spec
            .hardened
            .then(|| vec!["no-new-privileges:true".to_string()]),
        mounts: (!spec.empty_volumes.is_empty()).then(|| {
            spec.empty_volumes
                .iter()
                .map(|target| bollard::models::Mount {
                    target: Some(target.clone()),
                    typ: Some(bollard::models::MountType::VOLUME),
                    volume_options: Some(bollard::models::MountVolumeOptions {
                        no_copy: Some(true),
                        ..Default::default()
                    }),
                    ..Default::default()
                })
                .collect()
        }),
        network_mode: if spec.network_none {
            Some("none".to_string())
        } else {
            first_network.map(|(n, _)| n.clone())
        },
        binds: (!spec.binds.is_empty()).then(|| spec.binds.clone()),
        extra_hosts: (!spec.extra_hosts.is_empty()).then(|| spec.extra_hosts.clone()),
        init: spec.init.then_some(true),
        ..Default::default()
    }
}

/// The exit code of a Docker exec, asked once its output ended.
struct DockerExit {
    docker: Docker,
    exec_id: String,
    what: String,
}

#[async_trait]
impl ExecExit for DockerExit {
    /// The stream also ends when the daemon dies or restarts, so the end is confirmed: an exec
    /// the daemon cannot report on, or one still running after its output ended, is a fault.
    async fn code(self: Box<Self>) -> Result<Option<i64>, RunnerError> {
        let t0 = tokio::time::Instant::now();
        loop {
            match self.docker.inspect_exec(&self.exec_id).await {
                Ok(i) if i.running == Some(false) => return Ok(i.exit_code),
                Ok(_) if t0.elapsed() > Duration::from_secs(10) => {
                    return Err(RunnerError::Backend {
                        context: self.what.clone(),
                        message: "the output stream ended while the process still ran".into(),
                        fault: Fault::ConnectionLost,
                    });
                }
                Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                Err(e) => return Err(docker_error(&self.what, e)),
            }
        }
    }
}

#[async_trait]
impl Environment for DockerContainer {
    fn id(&self) -> &str {
        &self.id
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn default_user(&self) -> Option<&str> {
        self.default_user.as_deref()
    }

    async fn spawn(&self, exec: &ExecSpec) -> Result<ExecStream, RunnerError> {
        let what = format!("exec in container {}", self.name);
        let created = self
            .docker
            .create_exec(
                &self.id,
                CreateExecOptions::<String> {
                    attach_stdin: exec.stdin.then_some(true),
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    cmd: Some(exec.cmd.clone()),
                    env: Some(exec.env.clone()),
                    user: exec.user.clone().or_else(|| self.default_user.clone()),
                    working_dir: exec.working_dir.clone(),
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| docker_error(&what, e))?;
        let started = self
            .docker
            .start_exec(&created.id, None)
            .await
            .map_err(|e| docker_error(&what, e))?;
        let StartExecResults::Attached { output, input } = started else {
            return Err(RunnerError::backend_text(&what, "exec started detached"));
        };
        let context = what.clone();
        let output = output
            .filter_map(move |item| {
                use bollard::container::LogOutput;
                let out = match item {
                    Ok(LogOutput::StdErr { message }) => Some(Ok(Chunk::Stderr(message))),
                    Ok(LogOutput::StdOut { message } | LogOutput::Console { message }) => {
                        Some(Ok(Chunk::Stdout(message)))
                    }
                    Ok(LogOutput::StdIn { .. }) => None,
                    Err(e) => Some(Err(docker_error(&context, e))),
                };
                std::future::ready(out)
            })
            .boxed();
        Ok(ExecStream {
            output,
            input: exec.stdin.then_some(input),
            exit: Box::new(DockerExit {
                docker: self.docker.clone(),
                exec_id: created.id,
                what,
            }),
        })
    }

    async fn upload_tar(&self, tar: TarBody, dir: &str) -> Result<(), RunnerError> {
        let body = match tar {
            TarBody::Memory(bytes) => bollard::body_full(bytes.into()),
            TarBody::Spooled(file) => {
                bollard::body_try_stream(tokio_util::io::ReaderStream::with_capacity(file, 1 << 20))
            }
        };
        self.docker
            .upload_to_container(
                &self.id,
                Some(UploadToContainerOptions {
                    path: dir.into(),
                    ..Default::default()
                }),
                body,
            )
            .await
            .map_err(|e| docker_error(format!("copying into {dir} of {}", self.name), e))
    }

    async fn download_tar(
        &self,
        src: &str,
    ) -> Result<BoxStream<'static, Result<Bytes, RunnerError>>, RunnerError> {
        let what = format!("copying {src} out of {}", self.name);
        let mut stream = self.docker.download_from_container(
            &self.id,
            Some(DownloadFromContainerOptions { path: src.into() }),
        );
        // The first chunk tells a missing path apart before the caller reads on.
        let first = match stream.next().await {
            None => return Ok(futures_util::stream::empty().boxed()),
            Some(Ok(b)) => b,
            Some(Err(e)) => {
                let e = docker_error(&what, e);
                return Err(if is_missing_path(&e) {
                    RunnerError::NotFound {
                        path: src.to_string(),
                    }
                } else {
                    e
                });
            }
        };
        let rest = stream.map(move |r| r.map_err(|e| docker_error(&what, e)));
        Ok(futures_util::stream::once(async move { Ok(first) })
            .chain(rest)
            .boxed())
    }

    async fn remove(&self) {
        self.remove_now().await;
    }

    /// `docker top` (the daemon's `ps` of the container's processes).
    async fn processes_seen_from_outside(&self) -> Option<Vec<String>> {
        let what = format!("listing the processes of {} from outside", self.name);
        self.top(&what)
            .await
            .inspect_err(
                |e| tracing::warn!(container = %self.name, error = %e, "docker top failed"),
            )
            .ok()
    }

    /// `docker update --cpus <host's CPUs>`, when the container was started with fewer.
    async fn lift_cpu_limit(&self) {
        let Some(nano_cpus) = self.lift_to_nano_cpus else {
            return;
        };
        let update = self.docker.update_container(
            &self.id,
            bollard::models::ContainerUpdateBody {
                nano_cpus: Some(nano_cpus),
                ..Default::default()
            },
        );
        match tokio::time::timeout(OUTSIDE_LIMIT, update).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::debug!(container = %self.name, error = %e, "CPU limit not lifted");
            }
            Err(_) => tracing::debug!(container = %self.name, "CPU limit not lifted in 30s"),
        }
    }

    /// [`DockerContainer::end_all_confirmed`].
    async fn end_all_from_outside(
        &self,
        execs_ended: bool,
    ) -> Option<Result<Vec<String>, RunnerError>> {
        Some(self.end_all_confirmed(execs_ended).await)
    }

    /// `USR1` to PID 1, sent by the daemon.
    async fn end_all_from_pid_1(&self) -> Result<bool, RunnerError> {
        let what = format!("asking PID 1 of {} to end the rest", self.name);
        tokio::time::timeout(
            OUTSIDE_LIMIT,
            self.docker.kill_container(
                &self.id,
                Some(KillContainerOptions {
                    signal: "USR1".into(),
                }),
            ),
        )
        .await
        .map_err(|_| RunnerError::backend_text(&what, "no answer in 30s"))?
        .map_err(|e| docker_error(&what, e))?;
        Ok(true)
    }
}

/// Longest the daemon may take to list a container's processes or to signal its PID 1.
const OUTSIDE_LIMIT: Duration = Duration::from_secs(30);

/// Longest PID 1's handler may take, once signalled, to be seen to have ended every other
/// process ([`DockerContainer::end_all_confirmed`]).
const CONFIRM_LIMIT: Duration = Duration::from_secs(30);

/// The host pid of the one `sleep 3600 N` PID 1 (host pid `init`) runs, and its `N` (the
/// processes PID 1 counted at its last `USR1`, [`OWN_INIT`]), from the rows of [`TOP_COLUMNS`];
/// not a zombie. A new pid after PID 1's `USR1` shows its handler has run (`kill -9 -1` ends
/// the old one, and PID 1's loop starts the next).
fn own_sleep(rows: &[Vec<String>], init: &str) -> Option<(String, u64)> {
    let own = format!("{STATIC_SHELL_DIR}/sleep 3600 ");
    rows.iter().find_map(|r| match r.as_slice() {
        [pid, ppid, stat, _, args] if ppid == init && !stat.starts_with('Z') => {
            let n = args.strip_prefix(&own)?;
            let counted = n
                .parse::<u64>()
                .ok()
                .filter(|_| n.bytes().all(|b| b.is_ascii_digit()))?;
            Some((pid.clone(), counted))
        }
        _ => None,
    })
}

/// The host pids of the rows of an exec's process tree: a parent outside the container but
/// PID 1 (host pid `init`; skillscope's own exec), and their descendants.
fn exec_tree<'a>(rows: &'a [Vec<String>], init: &str) -> std::collections::HashSet<&'a str> {
    let inside: std::collections::HashSet<&str> = rows
        .iter()
        .filter_map(|r| r.first().map(String::as_str))
        .collect();
    let mut tree: std::collections::HashSet<&str> = std::collections::HashSet::new();
    // Roots: a parent outside the container but PID 1's; then their descendants, to a fixpoint.
    loop {
        let before = tree.len();
        for r in rows {
            if let [pid, ppid, ..] = r.as_slice()
                && pid != init
                && (!inside.contains(ppid.as_str()) || tree.contains(ppid.as_str()))
            {
                tree.insert(pid);
            }
        }
        if tree.len() == before {
            return tree;
        }
    }
}

/// The evidence line for the processes PID 1 counted at its `USR1` (`counted`, itself and its
/// old `sleep` included) beyond the `listed` rows of the listing taken just before the signal,
/// if any: processes alive at the kill that the listing did not show (one that forks a copy of
/// itself and exits is never caught by `docker top`, which reads the pids first and their rows
/// after). Asked only once the tests' exec exited: a running exec may start a process between
/// the listing and the signal.
fn unlisted(counted: u64, listed: usize) -> Option<String> {
    let more = counted.checked_sub(listed as u64).filter(|n| *n > 0)?;
    Some(format!(
        "? ? ? {more} process(es) PID 1 counted at its kill that the listing did not show"
    ))
}

/// How many of `rows` ([`TOP_COLUMNS`]) are not zombies, as PID 1 counts at its kill
/// ([`OWN_INIT`]); a row of another shape counts (it is evidence already).
fn live(rows: &[Vec<String>]) -> usize {
    rows.iter()
        .filter(|r| !matches!(r.as_slice(), [_, _, stat, _, _] if stat.starts_with('Z')))
        .count()
}

/// The columns [`others_than_init`] reads, as `ps -o` names them.
const TOP_COLUMNS: &str = "pid,ppid,stat,nlwp,args";

/// The rows of `docker top -o pid,ppid,stat,nlwp,args` (host pids) that are neither PID 1 (host
/// pid `init`), nor the one `sleep 3600` it runs (its child, by its whole command line), nor a
/// zombie (one with threads still running is kept), nor an exec's process or its descendants
/// (a parent outside the container: skillscope's own, as the tests have ended): one
/// `pid ppid state name` line each, the name made printable. A row of another shape is kept,
/// as `? ? ? <row>`: a listing read wrong must not hide a process.
fn others_than_init(rows: &[Vec<String>], init: &str) -> Vec<String> {
    listed(rows, init, &exec_tree(rows, init))
}

/// [`others_than_init`] with an exec's process tree kept: for the end of the tests once their
/// exec exited, when a process whose parent is not in the listing is no exec of skillscope's
/// but one whose parent ended after the listing read the pids (or was never caught).
fn all_but_init(rows: &[Vec<String>], init: &str) -> Vec<String> {
    listed(rows, init, &std::collections::HashSet::new())
}

/// The rows of `rows` but PID 1 (host pid `init`), its own `sleep`, zombies and the pids in
/// `exempt`, as [`others_than_init`] writes them.
fn listed(
    rows: &[Vec<String>],
    init: &str,
    exempt: &std::collections::HashSet<&str>,
) -> Vec<String> {
    let own_sleep = own_sleep(rows, init).map(|(pid, _)| pid);
    let mut out = Vec::new();
    for row in rows {
        let [pid, ppid, stat, nlwp, args] = row.as_slice() else {
            out.push(format!(
                "? ? ? {}",
                crate::sanitize::one_line(&row.join(" "))
            ));
            continue;
        };
        if pid == init || exempt.contains(pid.as_str()) {
            continue;
        }
        if stat.starts_with('Z') && nlwp == "1" {
            continue;
        }
        if own_sleep.as_ref() == Some(pid) {
            continue;
        }
        let state = stat.chars().next().unwrap_or('?');
        out.push(format!(
            "{pid} {ppid} {state} {}",
            crate::sanitize::one_line(args)
        ));
    }
    out
}

/// True for the daemon's "no such file or directory" when copying a path out.
fn is_missing_path(e: &RunnerError) -> bool {
    matches!(e, RunnerError::Backend { message, .. }
        if message.contains("status code 404")
            && (message.contains("Could not find the file")
                || message.contains("no such file or directory")))
}

/// Removes the containers matching `label_filter` (`key` or `key=value`, as `docker ps --filter
/// label=…`) created at least `age` ago (the container's `Created`, seconds since the epoch by
/// the daemon's clock, against this machine's): what a killed process left, sparing what a live
/// one is using right now. Networks with the label go too, by the same age (a network still in
/// use stays). Returns how many containers were removed.
///
/// # Errors
/// [`RunnerError::Backend`] when the containers cannot be listed.
pub async fn remove_labeled_older_than(
    docker: &Docker,
    label_filter: &str,
    age: Duration,
) -> Result<usize, RunnerError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs() as i64;
    remove_matching(docker, label_filter, |created, _| {
        created_before(created, now, age)
    })
    .await
}

/// Whether a container created at `created` (seconds since the epoch, by the daemon's clock;
/// `None`: unknown) is at least `age` old at `now`. Age zero takes every container, also one
/// created in the second after `now` was read (the sweep of a stopping run: it lists after
/// reading the clock).
fn created_before(created: Option<i64>, now: i64, age: Duration) -> bool {
    age.is_zero() || created.is_none_or(|t| now.saturating_sub(t) >= age.as_secs() as i64)
}

/// Removes the containers (and networks) labelled `label=value` except those whose
/// `keep_label` is one of `keep` (the attempts still running). Returns how many containers were
/// removed.
///
/// # Errors
/// [`RunnerError::Backend`] when the containers cannot be listed.
pub async fn remove_labeled_except(
    docker: &Docker,
    label: &str,
    value: &str,
    keep_label: &str,
    keep: &[String],
) -> Result<usize, RunnerError> {
    remove_matching(docker, &format!("{label}={value}"), |_, labels| {
        !labels.get(keep_label).is_some_and(|v| keep.contains(v))
    })
    .await
}

/// Removes (forced, with anonymous volumes) the containers matching `label_filter` for which
/// `pick(created, labels)` holds (`created`: seconds since the epoch, when known), then the
/// networks matching it for which it holds (a network still in use stays). Returns how many
/// containers were removed.
async fn remove_matching(
    docker: &Docker,
    label_filter: &str,
    pick: impl Fn(Option<i64>, &HashMap<String, String>) -> bool,
) -> Result<usize, RunnerError> {
    let filters = HashMap::from([("label".to_string(), vec![label_filter.to_string()])]);
    let list = docker
        .list_containers(Some(ListContainersOptions {
            all: true,
            filters: Some(filters.clone()),
            ..Default::default()
        }))
        .await
        .map_err(|e| docker_error("listing containers", e))?;
    let none = HashMap::new();
    let mut n = 0;
    for c in list {
        let labels = c.labels.as_ref().unwrap_or(&none);
        let Some(id) = c.id.clone().filter(|_| pick(c.created, labels)) else {
            continue;
        };
        if remove_forced(docker, &id).await {
            n += 1;
        }
    }
    if let Ok(list) = docker
        .list_networks(Some(bollard::query_parameters::ListNetworksOptions {
            filters: Some(filters.clone()),
        }))
        .await
    {
        for net in list {
            let created = net
                .created
                .as_deref()
                .and_then(|c| chrono::DateTime::parse_from_rfc3339(c).ok())
                .map(|t| t.timestamp());
            if pick(created, net.labels.as_ref().unwrap_or(&none))
                && let Some(id) = net.id
            {
                let _ = docker.remove_network(&id).await;
            }
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[&str]) -> Vec<String> {
        cells.iter().map(|c| c.to_string()).collect()
    }

    /// Only a limit below the host's CPUs is lifted, and to the host's CPUs (the daemon refuses
    /// more than it has).
    #[test]
    fn a_cpu_limit_is_lifted_to_the_hosts_cpus_only_when_lower() {
        assert_eq!(lift_to(Some(0.25), 2), Some(2_000_000_000));
        assert_eq!(lift_to(Some(1.0), 4), Some(4_000_000_000));
        assert_eq!(lift_to(Some(2.0), 2), None);
        assert_eq!(lift_to(None, 2), None);
    }

    /// A sweep of age zero (a stopping run's) takes every container, also one the daemon dates
    /// a second after the sweep read the clock; an older age spares what is younger.
    #[test]
    fn age_zero_takes_every_container_and_an_age_spares_younger_ones() {
        let zero = Duration::ZERO;
        assert!(created_before(Some(101), 100, zero));
        assert!(created_before(Some(100), 100, zero));
        assert!(created_before(None, 100, zero));
        let minute = Duration::from_secs(60);
        assert!(created_before(Some(40), 100, minute));
        assert!(!created_before(Some(41), 100, minute));
        assert!(!created_before(Some(101), 100, minute));
        assert!(created_before(None, 100, minute));
    }

    /// A removal is asked again while another is under way (409) or the daemon failed to end
    /// the container yet (5xx); a refusal of the request itself (400, 403) is final.
    #[test]
    fn removals_are_asked_again_after_a_conflict_or_a_daemon_error() {
        for status in [409, 500, 503] {
            assert!(removal_asked_again(status), "{status}");
        }
        for status in [400, 403, 404] {
            assert!(!removal_asked_again(status), "{status}");
        }
    }

    #[test]
    fn what_runs_beside_pid_1_is_listed_but_its_own_sleep() {
        let own = "/skillscope/static/sleep 3600 0";
        let top = vec![
            row(&["100", "90", "Ss", "1", "/skillscope/static/sh -c trap"]),
            row(&["101", "100", "S", "1", own]),
            row(&["150", "100", "R", "1", "sh -c while :; do kill; done"]),
            row(&["151", "100", "S", "1", own]),
            row(&["152", "150", "Z", "1", "[python3] <defunct>"]),
            row(&["153", "100", "Zl", "2", "[python3] <defunct>"]),
            row(&["154", "100", "S", "1", "sleep 3600"]),
            // An exec (parent outside) and its child: skillscope's own.
            row(&[
                "200",
                "90",
                "S",
                "1",
                "/skillscope/static/sh -c kill -STOP -1",
            ]),
            row(&["201", "200", "S", "1", "/skillscope/static/sed -n"]),
            row(&["300", "100", "S"]),
        ];
        assert_eq!(
            others_than_init(&top, "100"),
            vec![
                "150 100 R sh -c while :; do kill; done".to_string(),
                format!("151 100 S {own}"),
                "153 100 Z [python3] <defunct>".to_string(),
                "154 100 S sleep 3600".to_string(),
                "? ? ? 300 100 S".to_string(),
            ],
            "a second sleep under PID 1 is not its own; a zombie with threads and a row read \
             wrong are kept"
        );
        let quiet = vec![
            row(&["100", "90", "Ss", "1", "sh"]),
            row(&["101", "100", "S", "1", own]),
        ];
        assert!(others_than_init(&quiet, "100").is_empty());
        let odd = vec![
            row(&["100", "90", "Ss", "1", "sh"]),
            row(&["7", "100", "S", "1", "a\u{1b}[2Jb"]),
        ];
        assert!(!others_than_init(&odd, "100")[0].contains('\u{1b}'));
    }

    #[test]
    fn pid_1s_sleep_is_told_by_parent_and_command_line_not_by_name() {
        let own = "/skillscope/static/sleep 3600 0";
        let before = vec![
            row(&["100", "90", "Ss", "1", "sh"]),
            row(&["150", "100", "S", "1", "sleep 3600 0"]),
            row(&["151", "150", "S", "1", own]),
            row(&["153", "100", "S", "1", "/skillscope/static/sleep 3600"]),
            row(&["154", "100", "S", "1", "/skillscope/static/sleep 3600 1x"]),
            row(&["152", "100", "T", "1", own]),
        ];
        assert_eq!(own_sleep(&before, "100"), Some(("152".to_string(), 0)));
        // PID 1's handler ran: the old sleep a zombie not yet reaped, a new one started with
        // the count of what was alive at the kill.
        let after = vec![
            row(&["100", "90", "Ss", "1", "sh"]),
            row(&["152", "100", "Z", "1", "[sleep] <defunct>"]),
            row(&["160", "100", "S", "1", "/skillscope/static/sleep 3600 7"]),
        ];
        assert_eq!(own_sleep(&after, "100"), Some(("160".to_string(), 7)));
        assert!(others_than_init(&after, "100").is_empty());
        let gone = vec![row(&["100", "90", "Ss", "1", "sh"])];
        assert_eq!(own_sleep(&gone, "100"), None);
    }

    #[test]
    fn the_listing_is_compared_with_pid_1_s_count_by_its_live_rows() {
        let rows = vec![
            row(&["100", "90", "Ss", "1", "sh"]),
            row(&["101", "100", "S", "1", "/skillscope/static/sleep 3600 0"]),
            row(&["102", "100", "Z", "1", "[python3] <defunct>"]),
            row(&["103", "100", "Zl", "3", "python3"]),
            vec!["odd".to_string()],
        ];
        // PID 1 counts no zombie: neither does the comparison; a row read wrong counts.
        assert_eq!(live(&rows), 3);
        // A zombie listed, reaped before the kill, must not cover a live process never listed.
        assert!(unlisted(3, live(&rows[..3])).is_some());
    }

    #[test]
    fn processes_counted_by_pid_1_beyond_the_listing_are_evidence() {
        // PID 1 and its sleep: the listing's two rows, counted as two — nothing unseen.
        assert_eq!(unlisted(2, 2), None);
        // A process that ended between the listing and the kill: fewer counted, nothing unseen.
        assert_eq!(unlisted(2, 3), None);
        // A process that forks a copy of itself and exits: counted, never listed.
        let line = unlisted(4, 2).unwrap();
        assert!(line.starts_with("? ? ? 2 process(es)"), "{line}");
        let rows = vec![
            row(&["100", "90", "Ss", "1", "sh"]),
            row(&["101", "100", "S", "1", "/skillscope/static/sleep 3600 0"]),
            row(&["200", "90", "S", "1", "/skillscope/static/sh -c x"]),
            row(&["201", "200", "S", "1", "python3"]),
            row(&["202", "100", "S", "1", "python3"]),
        ];
        let tree = exec_tree(&rows, "100");
        assert_eq!(tree.len(), 2, "{tree:?}");
        assert!(tree.contains("200") && tree.contains("201"));
        // Once the tests' exec exited, a parent outside the listing is no exec of skillscope's
        // (a hopper's generation whose parent ended after the pids were read): listed.
        assert_eq!(others_than_init(&rows, "100"), vec!["202 100 S python3"]);
        assert_eq!(
            all_but_init(&rows, "100"),
            vec![
                "200 90 S /skillscope/static/sh -c x",
                "201 200 S python3",
                "202 100 S python3"
            ]
        );
    }

    #[test]
    fn pid_1_ends_the_others_on_usr1_at_once() {
        // The count, then the kill, in the handler; what it counts is checked on the real shell
        // (tests/docker/own_init.rs).
        assert!(
            OWN_INIT.starts_with("c=0; trap 'c=0; for d in /proc/[0-9]*; do "),
            "{OWN_INIT}"
        );
        assert!(OWN_INIT.contains("done; kill -9 -1' USR1;"), "{OWN_INIT}");
        assert!(OWN_INIT.contains("sleep 3600 $c & wait $!"), "{OWN_INIT}");
    }
}
