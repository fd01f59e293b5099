//! One trial's container: create/start, exec with streamed output and a deadline, copy files in and
//! out as tar streams (works the same against a remote daemon), and forced removal.
//!
//! PID 1 is `sh -c "exec sleep infinity"` (after the image's ENTRYPOINT, as Harbor's compose file
//! does), so `kill -9 -1` run inside the container stops every process but PID 1 — how an agent or
//! verifier that overran its budget is stopped without losing the container. Removal is forced
//! (SIGKILL), so teardown never waits out Docker's stop timeout.
//!
//! A trial's container is kept to itself ([`ContainerSpec::hardened`]): a process limit, the
//! capabilities in [`KEPT_CAPABILITIES`] only, `no-new-privileges`. The trial's environment
//! values live in each exec's environment ([`TrialContainer::with_env`]), not in the container's
//! configuration, and every byte an exec prints or a copy brings out has the trial's secrets
//! redacted ([`TrialContainer::with_secrets`]). When the agent is done, the container is stopped
//! through the daemon ([`TrialContainer::kill_and_confirm`]), its changes read
//! ([`TrialContainer::changes`]) and its filesystem committed ([`TrialContainer::commit`]) for
//! the verifier's own container.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bollard::Docker;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptions, DownloadFromContainerOptions, ListContainersOptions,
    RemoveContainerOptions, UploadToContainerOptions,
};
use futures_util::StreamExt;
use std::io::Write;
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use super::RunnerError;
use super::secrets::Secrets;
use output::OutputFile;
pub use prelude::Prelude;

mod output;
mod prelude;

/// Most bytes kept per output file of an exec; the rest is dropped with a note.
pub const MAX_OUTPUT_BYTES: u64 = 64 * 1024 * 1024;
/// Most bytes of tar stream accepted when copying a folder out of a container (256 MiB): the
/// rest is left in the container and `TRUNCATED.txt` in the folder says so.
pub const MAX_DOWNLOAD_BYTES: u64 = 256 * 1024 * 1024;

/// The capabilities a hardened container keeps (all others dropped): what package managers and
/// real SkillsBench `test.sh` scripts use — file ownership and modes (`CHOWN`, `DAC_OVERRIDE`,
/// `FOWNER`, `FSETID`), dropping to another user (`SETUID`, `SETGID`: apt runs its downloads as
/// `_apt`), signalling its own processes (`KILL`) and serving on ports below 1024
/// (`NET_BIND_SERVICE`). Dropped from Docker's default set: `NET_RAW` (raw sockets, spoofing on
/// the bridge), `MKNOD`, `SETFCAP`, `SETPCAP`, `SYS_CHROOT`, `AUDIT_WRITE`.
pub const KEPT_CAPABILITIES: &[&str] = &[
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "NET_BIND_SERVICE",
    "SETGID",
    "SETUID",
];

/// What to create.
#[derive(Debug, Clone, Default)]
pub struct ContainerSpec {
    /// Image reference.
    pub image: String,
    /// Container name.
    pub name: String,
    /// Labels (see [`super::labels`]).
    pub labels: HashMap<String, String>,
    /// `KEY=VALUE` environment.
    pub env: Vec<String>,
    /// Bind mounts, `host:container[:ro]`.
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

/// What a container's PID 1 runs (after the image's ENTRYPOINT).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ContainerCmd {
    /// `sh -c "exec sleep infinity"`: idle, for execs (trial and helper containers).
    #[default]
    Idle,
    /// The image's own CMD (a compose service without `command`).
    Image,
    /// These arguments.
    Args(Vec<String>),
}

impl ContainerSpec {
    /// A short-lived helper of `image` that belongs to no run (a leak check, a kit-volume fill):
    /// named `skillscope-<kind>-<uuid>`, labelled [`super::labels::MANAGED`] and
    /// [`super::labels::HELPER`]` = kind` (swept by age when a killed process leaves it), no
    /// network.
    pub fn helper(image: &str, kind: &str) -> ContainerSpec {
        ContainerSpec {
            image: image.to_string(),
            name: format!("skillscope-{kind}-{}", uuid::Uuid::new_v4().simple()),
            labels: HashMap::from([
                (super::labels::MANAGED.to_string(), "1".to_string()),
                (super::labels::HELPER.to_string(), kind.to_string()),
            ]),
            network_none: true,
            ..Default::default()
        }
    }
}

/// A tar archive to upload: in memory (small folders, single files) or spooled to a file and
/// streamed (hundreds of MB).
enum Tar {
    Memory(Vec<u8>),
    Spooled(tokio::fs::File),
}

impl From<Vec<u8>> for Tar {
    fn from(bytes: Vec<u8>) -> Tar {
        Tar::Memory(bytes)
    }
}

/// How an exec ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecEnd {
    /// The process exited by itself.
    Exited,
    /// The deadline passed; the container's processes were killed.
    TimedOut,
    /// The cancel token fired; the container's processes were killed.
    Cancelled,
}

/// Result of an exec.
#[derive(Debug, Clone)]
pub struct ExecResult {
    /// How it ended.
    pub end: ExecEnd,
    /// Exit code, when the process exited and Docker reported one.
    pub exit_code: Option<i64>,
}

/// An exec request.
pub struct ExecRequest<'a> {
    /// Command and arguments.
    pub cmd: Vec<String>,
    /// Extra `KEY=VALUE` environment (never logged).
    pub env: Vec<String>,
    /// User to run as (`None` = the image's user).
    pub user: Option<String>,
    /// Budget; `None` = none.
    pub timeout: Option<Duration>,
    /// Stops the exec early.
    pub cancel: &'a CancellationToken,
    /// Host file receiving stdout (and stderr when `stderr` is `None`).
    pub stdout: Option<&'a Path>,
    /// Host file receiving stderr.
    pub stderr: Option<&'a Path>,
    /// Runs first in the same exec, its output apart; the command (and its `timeout`) starts
    /// when the prelude has ended and been taken in ([`Prelude`]).
    pub prelude: Option<&'a dyn Prelude>,
}

impl<'a> ExecRequest<'a> {
    /// A shell command (`sh -c <script>`) without output capture or timeout.
    pub fn sh(script: impl Into<String>, cancel: &'a CancellationToken) -> Self {
        ExecRequest {
            cmd: vec!["sh".into(), "-c".into(), script.into()],
            env: Vec::new(),
            user: None,
            timeout: None,
            cancel,
            stdout: None,
            stderr: None,
            prelude: None,
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

/// A running trial container.
#[derive(Clone)]
pub struct TrialContainer {
    docker: Docker,
    /// Container id.
    pub id: String,
    /// Container name.
    pub name: String,
    /// `KEY=VALUE`s every exec gets before its own ([`TrialContainer::with_env`]).
    env: Arc<Vec<String>>,
    /// Redacted from every exec's output and every copy out ([`TrialContainer::with_secrets`]).
    secrets: Arc<Secrets>,
    /// The folder of a static shell mounted read-only, used for skillscope's own scripts instead
    /// of the image's `sh` ([`TrialContainer::with_static_shell`]).
    static_shell: Option<String>,
}

/// What the daemon says of a container's configuration and mounts.
#[derive(Debug, Clone, Default)]
pub struct ContainerFacts {
    /// The working folder execs start in (`/` when the image sets none).
    pub working_dir: String,
    /// The image's (or the container's) ENTRYPOINT.
    pub entrypoint: Vec<String>,
    /// The folders of `PATH` in the container's environment, in order.
    pub path: Vec<String>,
    /// Volumes mounted in it (an image's `VOLUME`s): `(volume name, container folder)`.
    pub volumes: Vec<(String, String)>,
}

/// One change of a container's filesystem against its image (`docker diff`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Change {
    /// The path in the container.
    pub path: String,
    /// `A` added, `C` changed (a file's content or a folder's entries), `D` deleted.
    pub kind: char,
}

/// What a copy out of a container brought.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyOut {
    /// Regular files written.
    pub files: usize,
    /// The tar stream was cut at its cap.
    pub truncated: bool,
    /// Entries left out: links, devices, paths leaving the folder, names already taken by
    /// skillscope's own files.
    pub skipped: Vec<String>,
}

impl TrialContainer {
    /// This container, with `env` given to every exec (before the exec's own values): the
    /// trial's environment, kept out of the container's configuration (`docker inspect`).
    pub fn with_env(mut self, env: Vec<String>) -> TrialContainer {
        self.env = Arc::new(env);
        self
    }

    /// This container, with `secrets` redacted from every exec output and copy out.
    pub fn with_secrets(mut self, secrets: Arc<Secrets>) -> TrialContainer {
        self.secrets = secrets;
        self
    }

    /// This container, running skillscope's own scripts with the static shell mounted at `dir`
    /// (`<dir>/sh`, its applets first on `PATH`) instead of anything of the image's.
    pub fn with_static_shell(mut self, dir: &str) -> TrialContainer {
        self.static_shell = Some(dir.to_string());
        self
    }

    /// The argv running `script` with skillscope's shell, and the environment it needs.
    fn own_script(&self, script: &str) -> (Vec<String>, Vec<String>) {
        match &self.static_shell {
            Some(dir) => (
                vec![format!("{dir}/sh"), "-c".into(), script.into()],
                vec![format!("PATH={dir}")],
            ),
            None => (vec!["sh".into(), "-c".into(), script.into()], Vec::new()),
        }
    }

    /// An exec request running `script` with skillscope's own shell (see
    /// [`TrialContainer::with_static_shell`]), without output capture or timeout.
    pub fn own_sh<'a>(&self, script: &str, cancel: &'a CancellationToken) -> ExecRequest<'a> {
        let (cmd, env) = self.own_script(script);
        ExecRequest {
            cmd,
            env,
            ..ExecRequest::sh("", cancel)
        }
    }

    /// The secrets redacted from this container's output.
    pub fn secrets(&self) -> &Arc<Secrets> {
        &self.secrets
    }

    /// Creates and starts a container.
    ///
    /// # Errors
    /// [`RunnerError::Docker`] naming the image; a half-created container is removed.
    pub async fn start(
        docker: &Docker,
        spec: &ContainerSpec,
    ) -> Result<TrialContainer, RunnerError> {
        Self::start_timed(docker, spec, &mut StartTimes::default()).await
    }

    /// [`TrialContainer::start`], keeping in `times` how long the create and the start took.
    ///
    /// # Errors
    /// As [`TrialContainer::start`].
    pub async fn start_timed(
        docker: &Docker,
        spec: &ContainerSpec,
        times: &mut StartTimes,
    ) -> Result<TrialContainer, RunnerError> {
        let t0 = std::time::Instant::now();
        let first_network = spec.networks.first().filter(|_| !spec.network_none);
        let host_config = HostConfig {
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
        };
        let endpoint = |aliases: &Vec<String>| bollard::models::EndpointSettings {
            aliases: (!aliases.is_empty()).then(|| aliases.clone()),
            ..Default::default()
        };
        let body = ContainerCreateBody {
            image: Some(spec.image.clone()),
            cmd: match &spec.cmd {
                ContainerCmd::Idle => {
                    Some(vec!["sh".into(), "-c".into(), "exec sleep infinity".into()])
                }
                ContainerCmd::Image => None,
                ContainerCmd::Args(a) => Some(a.clone()),
            },
            entrypoint: spec.entrypoint.clone(),
            user: spec.user.clone(),
            working_dir: spec.working_dir.clone(),
            hostname: spec.hostname.clone(),
            healthcheck: spec.healthcheck.clone(),
            tty: spec.tty.then_some(true),
            open_stdin: spec.open_stdin.then_some(true),
            labels: Some(spec.labels.clone()),
            env: Some(spec.env.clone()),
            host_config: Some(host_config),
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
            .map_err(|e| {
                RunnerError::docker(format!("creating a container from {}", spec.image), e)
            })?;
        let c = TrialContainer {
            docker: docker.clone(),
            id: created.id,
            name: spec.name.clone(),
            env: Arc::default(),
            secrets: Arc::default(),
            static_shell: None,
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
                c.remove().await;
                return Err(RunnerError::docker(
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
            c.remove().await;
            return Err(RunnerError::docker(
                format!("starting a container from {}", spec.image),
                e,
            ));
        }
        Ok(c)
    }

    /// Runs a shell script of skillscope's own (not the agent's) under `timeout` and returns how
    /// it ended with its whole stdout (lossily decoded; for short outputs).
    ///
    /// # Errors
    /// As [`TrialContainer::exec`]; [`RunnerError::Io`] when the output cannot be spooled.
    pub async fn sh_output(
        &self,
        script: &str,
        timeout: Duration,
    ) -> Result<(ExecResult, String), RunnerError> {
        let out =
            tempfile::NamedTempFile::new().map_err(|e| RunnerError::io(std::env::temp_dir(), e))?;
        let never = CancellationToken::new();
        let mut req = self.own_sh(script, &never);
        req.timeout = Some(timeout);
        req.stdout = Some(out.path());
        let r = self.exec(req).await?;
        let bytes = std::fs::read(out.path()).map_err(|e| RunnerError::io(out.path(), e))?;
        Ok((r, String::from_utf8_lossy(&bytes).into_owned()))
    }

    /// Runs a command, streaming output to files, until it exits, its timeout passes or the token
    /// is cancelled. On timeout or cancel, every process but PID 1 is killed (`kill -9 -1`).
    ///
    /// # Errors
    /// [`RunnerError::Docker`] when the exec cannot be created or started, [`RunnerError::Io`] when
    /// an output file cannot be written.
    pub async fn exec(&self, req: ExecRequest<'_>) -> Result<ExecResult, RunnerError> {
        let what = format!("exec in container {}", self.name);
        let mut gate = match req.prelude {
            Some(p) => Some(prelude::Gate::open(p).await?),
            None => None,
        };
        // The container's values first, the exec's own after them (a later one wins).
        let env: Vec<String> = self.env.iter().chain(&req.env).cloned().collect();
        let cmd = match &gate {
            Some(g) => g.command(&req.cmd, &env),
            None => req.cmd.clone(),
        };
        let created = self
            .docker
            .create_exec(
                &self.id,
                CreateExecOptions::<String> {
                    attach_stdin: gate.is_some().then_some(true),
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    cmd: Some(cmd),
                    env: Some(env),
                    user: req.user.clone(),
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| RunnerError::docker(&what, e))?;
        let started = self
            .docker
            .start_exec(&created.id, None)
            .await
            .map_err(|e| RunnerError::docker(&what, e))?;
        let StartExecResults::Attached {
            mut output,
            mut input,
        } = started
        else {
            return Err(RunnerError::docker_text(&what, "exec started detached"));
        };
        let mut out = OutputFile::open(req.stdout, &self.secrets).await?;
        let mut err = match req.stderr {
            Some(p) => Some(OutputFile::open(Some(p), &self.secrets).await?),
            None => None,
        };
        let budget = |t: Option<Duration>| t.map(|t| tokio::time::Instant::now() + t);
        let mut deadline = match &gate {
            Some(g) => budget(Some(g.prelude.timeout())),
            None => budget(req.timeout),
        };
        let end = loop {
            let sleep = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                chunk = output.next() => match chunk {
                    None => break ExecEnd::Exited,
                    Some(Ok(log)) => {
                        use bollard::container::LogOutput;
                        let (is_err, message) = match log {
                            LogOutput::StdErr { message } => (true, message),
                            LogOutput::StdOut { message } | LogOutput::Console { message } => {
                                (false, message)
                            }
                            LogOutput::StdIn { .. } => continue,
                        };
                        let message = match gate.as_mut() {
                            Some(g) => {
                                let rest = g.take(usize::from(is_err), &message).await?;
                                if g.done() {
                                    // The prelude ended: taken in, then the command may start.
                                    let g = gate.take().expect("gate");
                                    let taken = g.prelude.ended(self, g.exit_code()).await;
                                    let word: &[u8] = if taken.is_ok() { b"go\n" } else { b"stop\n" };
                                    let _ = input.write_all(word).await;
                                    let _ = input.flush().await;
                                    taken?;
                                    deadline = budget(req.timeout);
                                }
                                bytes::Bytes::from(rest)
                            }
                            None => message,
                        };
                        match err.as_mut().filter(|_| is_err) {
                            Some(e) => e.write(&message).await?,
                            None => out.write(&message).await?,
                        }
                    }
                    Some(Err(e)) => {
                        // The daemon cut the stream: a fault, never the process's own end.
                        out.note(&format!("[skillscope] output stream error: {e}")).await?;
                        out.finish().await?;
                        if let Some(err) = err.as_mut() {
                            err.finish().await?;
                        }
                        return Err(RunnerError::docker(&what, e));
                    }
                },
                _ = sleep => break ExecEnd::TimedOut,
                _ = req.cancel.cancelled() => break ExecEnd::Cancelled,
            }
        };
        let mut killed = false;
        if let Some(mut g) = gate {
            // The prelude did not end by itself: it is stopped and taken in as it is.
            if end != ExecEnd::Exited {
                self.kill_all().await;
                killed = true;
            }
            g.cut_off().await?;
            g.prelude.ended(self, None).await?;
            if end == ExecEnd::TimedOut {
                // Only the prelude overran: the command runs with its whole budget.
                return Box::pin(self.exec(ExecRequest {
                    prelude: None,
                    ..req
                }))
                .await;
            }
        }
        if end != ExecEnd::Exited {
            let note = match end {
                ExecEnd::TimedOut => format!(
                    "[skillscope] timed out after {:.0}s; killing every process in the container",
                    req.timeout.unwrap_or_default().as_secs_f64()
                ),
                _ => "[skillscope] cancelled; killing every process in the container".to_string(),
            };
            out.note(&note).await?;
            if !killed {
                self.kill_all().await;
            }
            // Let the killed process's last output arrive, briefly.
            let _ = tokio::time::timeout(Duration::from_secs(2), async {
                while let Some(Ok(log)) = output.next().await {
                    let _ = out.write(&log.into_bytes()).await;
                }
            })
            .await;
        }
        out.finish().await?;
        if let Some(e) = err.as_mut() {
            e.finish().await?;
        }
        tracing::debug!(container = %self.name, cmd = ?req.cmd.last(), "exec stream ended");
        let exit_code = if end == ExecEnd::Exited {
            self.exit_code(&created.id, &what).await?
        } else {
            None
        };
        Ok(ExecResult { end, exit_code })
    }

    /// The exit code of an exec whose output stream ended. The stream also ends when the daemon
    /// dies or restarts, so the end is confirmed: an exec the daemon cannot report on, or one still
    /// running after its output ended, is a fault, not an exit.
    async fn exit_code(&self, exec_id: &str, what: &str) -> Result<Option<i64>, RunnerError> {
        let t0 = tokio::time::Instant::now();
        loop {
            match self.docker.inspect_exec(exec_id).await {
                Ok(i) if i.running == Some(false) => return Ok(i.exit_code),
                Ok(_) if t0.elapsed() > Duration::from_secs(10) => {
                    return Err(RunnerError::Docker {
                        context: what.to_string(),
                        message: "the output stream ended while the process still ran".into(),
                        fault: super::Fault::ConnectionLost,
                    });
                }
                Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                Err(e) => return Err(RunnerError::docker(what, e)),
            }
        }
    }

    /// Kills every process in the container except PID 1 (best effort).
    pub async fn kill_all(&self) {
        let never = CancellationToken::new();
        let mut req = self.own_sh("kill -9 -1 2>/dev/null; true", &never);
        req.user = Some("0".into());
        req.timeout = Some(Duration::from_secs(10));
        // kill -9 -1 would also kill this exec; its own end is expected.
        let _ = Box::pin(self.exec_quiet(req)).await;
    }

    async fn exec_quiet(&self, req: ExecRequest<'_>) -> Result<(), RunnerError> {
        let created = self
            .docker
            .create_exec(
                &self.id,
                CreateExecOptions::<String> {
                    cmd: Some(req.cmd),
                    env: Some(req.env),
                    user: req.user,
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| RunnerError::docker("kill", e))?;
        if let Ok(StartExecResults::Attached { mut output, .. }) =
            self.docker.start_exec(&created.id, None).await
        {
            let _ = tokio::time::timeout(req.timeout.unwrap_or(Duration::from_secs(10)), async {
                while output.next().await.is_some() {}
            })
            .await;
        }
        Ok(())
    }

    /// Copies a host folder's contents to `dest` (absolute) in the container, keeping file modes.
    ///
    /// # Errors
    /// [`RunnerError::Io`] for unreadable files; [`RunnerError::Docker`] for the upload.
    pub async fn upload_dir(&self, local: &Path, dest: &str) -> Result<(), RunnerError> {
        let local = local.to_path_buf();
        let rel = dest.trim_start_matches('/').to_string();
        let tar = tokio::task::spawn_blocking(move || tar_dir(Vec::new(), &local, &rel))
            .await
            .map_err(|e| RunnerError::Task(e.to_string()))??;
        self.upload_tar(tar, dest).await
    }

    /// As [`TrialContainer::upload_dir`] for folders of hundreds of MB (a harness kit): the tar is
    /// spooled to a temporary file and streamed from it in 1 MiB chunks, so memory stays flat.
    ///
    /// # Errors
    /// [`RunnerError::Io`] for unreadable files or a temporary file that cannot be written;
    /// [`RunnerError::Docker`] for the upload.
    pub async fn upload_large_dir(&self, local: &Path, dest: &str) -> Result<(), RunnerError> {
        let dir = local.to_path_buf();
        let rel = dest.trim_start_matches('/').to_string();
        let spool = tokio::task::spawn_blocking(move || -> Result<_, RunnerError> {
            let spool = tempfile::NamedTempFile::new()
                .map_err(|e| RunnerError::io(std::env::temp_dir(), e))?;
            tar_dir(spool.as_file(), &dir, &rel)?;
            Ok(spool)
        })
        .await
        .map_err(|e| RunnerError::Task(e.to_string()))??;
        let file = tokio::fs::File::open(spool.path())
            .await
            .map_err(|e| RunnerError::io(spool.path(), e))?;
        self.upload_tar(Tar::Spooled(file), dest).await
    }

    /// Unpacks a tar (as Docker archives a path: its own name at the top) into the folder `dir`
    /// of the container, which must exist.
    ///
    /// # Errors
    /// [`RunnerError::Docker`] for the upload.
    pub async fn upload_tar_at(&self, tar: Vec<u8>, dir: &str) -> Result<(), RunnerError> {
        self.docker
            .upload_to_container(
                &self.id,
                Some(UploadToContainerOptions {
                    path: dir.into(),
                    ..Default::default()
                }),
                bollard::body_full(tar.into()),
            )
            .await
            .map_err(|e| RunnerError::docker(format!("copying into {dir} of {}", self.name), e))
    }

    /// Unpacks `tar` at the container's root.
    async fn upload_tar(&self, tar: impl Into<Tar>, what: &str) -> Result<(), RunnerError> {
        let body = match tar.into() {
            Tar::Memory(bytes) => bollard::body_full(bytes.into()),
            Tar::Spooled(file) => {
                bollard::body_try_stream(tokio_util::io::ReaderStream::with_capacity(file, 1 << 20))
            }
        };
        self.docker
            .upload_to_container(
                &self.id,
                Some(UploadToContainerOptions {
                    path: "/".into(),
                    ..Default::default()
                }),
                body,
            )
            .await
            .map_err(|e| RunnerError::docker(format!("copying {what} into {}", self.name), e))
    }

    /// Copies `src` (an absolute folder in the container) into `host_dir` (made when missing),
    /// dropping the folder's own name (`/logs/agent/x` → `host_dir/x`). Container output is
    /// untrusted: the tar stream is spooled to a temporary file up to `cap` bytes (the rest left,
    /// `TRUNCATED.txt` says so); only regular files and folders are written, never through a
    /// link, never over a file already there (skillscope's own records win), never outside
    /// `host_dir`; the container's secrets are redacted as each file is written. A folder that
    /// does not exist in the container copies nothing. Works on a stopped container.
    ///
    /// # Errors
    /// [`RunnerError::Docker`] for the transfer, [`RunnerError::Io`] for local writes.
    pub async fn download_dir(
        &self,
        src: &str,
        host_dir: &Path,
        cap: u64,
    ) -> Result<CopyOut, RunnerError> {
        let spool =
            tempfile::NamedTempFile::new().map_err(|e| RunnerError::io(std::env::temp_dir(), e))?;
        let mut file = tokio::fs::File::from_std(
            spool
                .reopen()
                .map_err(|e| RunnerError::io(spool.path(), e))?,
        );
        let truncated = match self
            .download_tar_to(src, &mut file, spool.path(), cap)
            .await
        {
            Ok(t) => t,
            Err(e) if is_missing_path(&e) => return Ok(CopyOut::default()),
            Err(e) => return Err(e),
        };
        drop(file);
        let (dest, secrets) = (host_dir.to_path_buf(), self.secrets.clone());
        tokio::task::spawn_blocking(move || {
            let f =
                std::fs::File::open(spool.path()).map_err(|e| RunnerError::io(spool.path(), e))?;
            untar_safely(std::io::BufReader::new(f), &dest, truncated, cap, &secrets)
        })
        .await
        .map_err(|e| RunnerError::Task(e.to_string()))?
    }

    /// Stops every process of the container at once — SIGKILL to its PID 1 through the daemon,
    /// which ends its PID namespace and so every process in it, whatever the container's own
    /// binaries now are — and waits until the daemon reports it stopped with no process
    /// (`State.Running` false, `State.Pid` 0), for at most `limit`.
    ///
    /// # Errors
    /// [`RunnerError::Docker`] when the kill or the inspection fails, or the container still
    /// runs after `limit` (a fault: the trial cannot get to a clean verifier).
    pub async fn kill_and_confirm(&self, limit: Duration) -> Result<(), RunnerError> {
        let what = format!("stopping container {}", self.name);
        match self
            .docker
            .kill_container(
                &self.id,
                Some(bollard::query_parameters::KillContainerOptions {
                    signal: "SIGKILL".into(),
                }),
            )
            .await
        {
            Ok(()) => {}
            // 409: it was not running (its PID 1 already gone).
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 409, ..
            }) => {}
            Err(e) => return Err(RunnerError::docker(&what, e)),
        }
        let t0 = tokio::time::Instant::now();
        loop {
            let i = self
                .docker
                .inspect_container(&self.id, None)
                .await
                .map_err(|e| RunnerError::docker(&what, e))?;
            let state = i.state.unwrap_or_default();
            if state.running == Some(false) && state.pid.unwrap_or(0) == 0 {
                return Ok(());
            }
            if t0.elapsed() > limit {
                return Err(RunnerError::Docker {
                    context: what,
                    message: format!(
                        "it still runs {}s after SIGKILL (pid {:?})",
                        limit.as_secs(),
                        state.pid
                    ),
                    fault: super::Fault::DaemonError,
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The container's working folder, ENTRYPOINT, `PATH` and volumes, as the daemon has them.
    ///
    /// # Errors
    /// [`RunnerError::Docker`] when the container cannot be inspected.
    pub async fn facts(&self) -> Result<ContainerFacts, RunnerError> {
        let i = self
            .docker
            .inspect_container(&self.id, None)
            .await
            .map_err(|e| RunnerError::docker(format!("inspecting {}", self.name), e))?;
        let config = i.config.unwrap_or_default();
        let path = config
            .env
            .unwrap_or_default()
            .iter()
            .find_map(|e| e.strip_prefix("PATH=").map(str::to_string))
            .unwrap_or_default();
        Ok(ContainerFacts {
            working_dir: config
                .working_dir
                .filter(|w| !w.is_empty())
                .unwrap_or_else(|| "/".into()),
            entrypoint: config.entrypoint.unwrap_or_default(),
            path: path
                .split(':')
                .filter(|p| p.starts_with('/'))
                .map(|p| p.trim_end_matches('/').to_string())
                .filter(|p| !p.is_empty())
                .collect(),
            volumes: i
                .mounts
                .unwrap_or_default()
                .into_iter()
                .filter(|m| m.typ.as_deref() == Some("volume"))
                .filter_map(|m| Some((m.name?, m.destination?)))
                .collect(),
        })
    }

    /// What changed in the container's filesystem against its image (`docker diff`; works on a
    /// stopped container), sorted by path.
    ///
    /// # Errors
    /// [`RunnerError::Docker`] when the daemon cannot say.
    pub async fn changes(&self) -> Result<Vec<Change>, RunnerError> {
        let list = self
            .docker
            .container_changes(&self.id)
            .await
            .map_err(|e| RunnerError::docker(format!("reading the changes of {}", self.name), e))?
            .unwrap_or_default();
        let mut out: Vec<Change> = list
            .into_iter()
            .map(|c| Change {
                path: c.path,
                kind: match c.kind {
                    bollard::models::ChangeType::_0 => 'C',
                    bollard::models::ChangeType::_1 => 'A',
                    bollard::models::ChangeType::_2 => 'D',
                },
            })
            .collect();
        out.sort();
        Ok(out)
    }

    /// What `path` is in the container now (works on a stopped one): `Some(true)` a folder,
    /// `Some(false)` anything else, `None` when it does not exist.
    ///
    /// # Errors
    /// [`RunnerError::Docker`] for a failure other than a missing path.
    pub async fn is_dir(&self, path: &str) -> Result<Option<bool>, RunnerError> {
        match self
            .docker
            .get_container_archive_info(
                &self.id,
                Some(bollard::query_parameters::ContainerArchiveInfoOptions {
                    path: path.to_string(),
                }),
            )
            .await
        {
            // Go's os.ModeDir.
            Ok(stat) => Ok(Some(stat.file_mode & (1 << 31) != 0)),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(None),
            Err(e) => Err(RunnerError::docker(
                format!("looking at {path} in {}", self.name),
                e,
            )),
        }
    }

    /// Commits the container's filesystem as a new untagged image carrying `labels` (with the
    /// container's own) and returns its id.
    ///
    /// # Errors
    /// [`RunnerError::Docker`] when the commit fails.
    pub async fn commit(&self, labels: &HashMap<String, String>) -> Result<String, RunnerError> {
        let mut pairs: Vec<String> = labels
            .iter()
            .map(|(k, v)| format!("{}={}", serde_json::json!(k), serde_json::json!(v)))
            .collect();
        pairs.sort();
        let r = self
            .docker
            .commit_container(
                bollard::query_parameters::CommitContainerOptions {
                    container: Some(self.id.clone()),
                    pause: false,
                    changes: (!pairs.is_empty()).then(|| format!("LABEL {}", pairs.join(" "))),
                    ..Default::default()
                },
                bollard::models::ContainerConfig::default(),
            )
            .await
            .map_err(|e| RunnerError::docker(format!("committing {}", self.name), e))?;
        Ok(r.id)
    }

    /// The tar of `src` (an absolute path in the container) as Docker archives it (the path's own
    /// name as the top entry), read into memory up to `cap` bytes; `true` when it was cut there.
    /// The content is untrusted: the caller checks every entry.
    ///
    /// # Errors
    /// [`RunnerError::Docker`] for the transfer (a path that does not exist too).
    pub async fn download_tar(&self, src: &str, cap: u64) -> Result<(Vec<u8>, bool), RunnerError> {
        let mut stream = self.docker.download_from_container(
            &self.id,
            Some(DownloadFromContainerOptions { path: src.into() }),
        );
        let mut buf = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| {
                RunnerError::docker(format!("copying {src} out of {}", self.name), e)
            })?;
            if (buf.len() + chunk.len()) as u64 > cap {
                truncated = true;
                break;
            }
            buf.extend_from_slice(&chunk);
        }
        Ok((buf, truncated))
    }

    /// As [`TrialContainer::download_tar`], spooled into `out` instead of memory (for folders that
    /// may be large); `true` when it was cut at `cap` bytes.
    ///
    /// # Errors
    /// [`RunnerError::Docker`] for the transfer; [`RunnerError::Io`] when `out` cannot be written.
    pub async fn download_tar_to(
        &self,
        src: &str,
        out: &mut tokio::fs::File,
        out_path: &Path,
        cap: u64,
    ) -> Result<bool, RunnerError> {
        let mut stream = self.docker.download_from_container(
            &self.id,
            Some(DownloadFromContainerOptions { path: src.into() }),
        );
        let mut written = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| {
                RunnerError::docker(format!("copying {src} out of {}", self.name), e)
            })?;
            if written + chunk.len() as u64 > cap {
                return Ok(true);
            }
            written += chunk.len() as u64;
            out.write_all(&chunk)
                .await
                .map_err(|e| RunnerError::io(out_path, e))?;
        }
        out.flush()
            .await
            .map_err(|e| RunnerError::io(out_path, e))?;
        Ok(false)
    }

    /// Removes the container (forced, with its anonymous volumes). Never fails: a container that is
    /// already gone is fine.
    pub async fn remove(&self) {
        let _ = self
            .docker
            .remove_container(
                &self.id,
                Some(RemoveContainerOptions {
                    force: true,
                    v: true,
                    ..Default::default()
                }),
            )
            .await;
    }
}

/// Removes containers in the background, off the trials' critical path (the daemon's teardown
/// then overlaps the next trial's start). [`Reaper::drain`] waits for every removal; the engine
/// calls it before a run ends, and a killed process's leftovers are found by label on resume.
#[derive(Default)]
pub struct Reaper {
    pending: std::sync::Mutex<tokio::task::JoinSet<()>>,
    /// Told how long each cleanup took.
    on_done: Option<Arc<dyn Fn(Duration) + Send + Sync>>,
}

impl Reaper {
    /// Schedules the removal of `c`.
    pub fn remove(&self, c: TrialContainer) {
        self.spawn(async move { c.remove().await });
    }

    /// A reaper that tells `on_done` how long each cleanup took.
    pub fn timed(on_done: Arc<dyn Fn(Duration) + Send + Sync>) -> Reaper {
        Reaper {
            on_done: Some(on_done),
            ..Default::default()
        }
    }

    /// Schedules a cleanup (removing a trial's container and then its services and networks).
    pub fn spawn(&self, cleanup: impl std::future::Future<Output = ()> + Send + 'static) {
        let on_done = self.on_done.clone();
        let mut set = self.pending.lock().expect("reaper lock");
        // Reap finished removals so the set stays small on long runs.
        while set.try_join_next().is_some() {}
        set.spawn(async move {
            let t0 = std::time::Instant::now();
            cleanup.await;
            if let Some(f) = on_done {
                f(t0.elapsed());
            }
        });
    }

    /// Waits until every scheduled removal has finished.
    pub async fn drain(&self) {
        let mut set = std::mem::take(&mut *self.pending.lock().expect("reaper lock"));
        while set.join_next().await.is_some() {}
    }
}

/// Removes every container carrying `label=value` (e.g. all containers of a run left by a killed
/// process), then the networks and the verifiers' filesystem commits carrying it. Returns how
/// many containers were removed.
///
/// # Errors
/// [`RunnerError::Docker`] when the containers cannot be listed.
pub async fn remove_labeled(
    docker: &Docker,
    label: &str,
    value: &str,
) -> Result<usize, RunnerError> {
    remove_labeled_older_than(docker, &format!("{label}={value}"), Duration::ZERO).await
}

/// Removes the containers matching `label_filter` (`key` or `key=value`, as `docker ps --filter
/// label=…`) created at least `age` ago (the container's `Created`, seconds since the epoch by
/// the daemon's clock, against this machine's): what a killed process left, sparing what a live
/// one is using right now. Networks and commits with the label go too, by the same age (a
/// network still in use stays). Returns how many containers were removed.
///
/// # Errors
/// [`RunnerError::Docker`] when the containers cannot be listed.
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
        created.is_none_or(|t| now.saturating_sub(t) >= age.as_secs() as i64)
    })
    .await
}

/// Removes the containers (and networks and commits) labelled `label=value` except those whose
/// `keep_label` is one of `keep` (the attempts still running): what an interrupted attempt on a
/// host that went down and came back left behind. Returns how many containers were removed.
///
/// # Errors
/// [`RunnerError::Docker`] when the containers cannot be listed.
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
/// networks and the verifiers' filesystem commits ([`super::labels::COMMIT`]) matching it for
/// which it holds (a network still in use stays). Returns how many containers were removed.
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
        .map_err(|e| RunnerError::docker("listing containers", e))?;
    let none = HashMap::new();
    let mut n = 0;
    for c in list {
        let labels = c.labels.as_ref().unwrap_or(&none);
        let Some(id) = c.id.clone().filter(|_| pick(c.created, labels)) else {
            continue;
        };
        let r = docker
            .remove_container(
                &id,
                Some(RemoveContainerOptions {
                    force: true,
                    v: true,
                    ..Default::default()
                }),
            )
            .await;
        if r.is_ok() {
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
    let commits = HashMap::from([(
        "label".to_string(),
        vec![label_filter.to_string(), super::labels::COMMIT.to_string()],
    )]);
    if let Ok(list) = docker
        .list_images(Some(bollard::query_parameters::ListImagesOptions {
            all: true,
            filters: Some(commits),
            ..Default::default()
        }))
        .await
    {
        for image in list {
            if pick(Some(image.created), &image.labels) {
                remove_image(docker, &image.id).await;
            }
        }
    }
    Ok(n)
}

/// Tars a folder's contents under `prefix/` (modes kept, times zeroed, symlinks kept as links).
/// Into `out`: in memory for small folders, a spool file for large ones.
fn tar_dir<W: std::io::Write>(out: W, local: &Path, prefix: &str) -> Result<W, RunnerError> {
    let mut b = tar::Builder::new(out);
    b.follow_symlinks(false);
    b.mode(tar::HeaderMode::Deterministic);
    b.append_dir_all(prefix, local)
        .map_err(|e| RunnerError::io(local, e))?;
    b.into_inner().map_err(|e| RunnerError::io(local, e))
}

/// True for the daemon's "no such file or directory" when copying a path out.
pub fn is_missing_path(e: &RunnerError) -> bool {
    matches!(e, RunnerError::Docker { message, .. }
        if message.contains("status code 404")
            && (message.contains("Could not find the file")
                || message.contains("no such file or directory")))
}

/// Extracts the regular files and folders of a tar (as Docker archives a folder: its own name
/// first) into `dest`, dropping the first path component. Refused, and named in the result:
/// links (symbolic and hard), devices and pipes, paths that are absolute or hold `..`, names
/// already taken in `dest` (skillscope's own files, or a folder where a file should go). No write
/// follows a link ([`crate::fs::create_dir_within`], [`crate::fs::create_new`]); `secrets` are
/// redacted as each file is written. A stream cut at `cap` (`truncated`) keeps what arrived
/// whole and ends with `TRUNCATED.txt`; a damaged stream ends the copy where it broke.
fn untar_safely(
    tar: impl std::io::Read,
    dest: &Path,
    truncated: bool,
    cap: u64,
    secrets: &Arc<Secrets>,
) -> Result<CopyOut, RunnerError> {
    let mut archive = tar::Archive::new(tar);
    let mut out = CopyOut {
        truncated,
        ..Default::default()
    };
    std::fs::create_dir_all(dest).map_err(|e| RunnerError::io(dest, e))?;
    let entries = archive.entries().map_err(|e| RunnerError::io(dest, e))?;
    for entry in entries {
        let Ok(mut entry) = entry else { break };
        let Ok(path) = entry.path().map(|p| p.into_owned()) else {
            continue;
        };
        let mut rel = PathBuf::new();
        let mut ok = true;
        for (i, c) in path.components().enumerate() {
            match c {
                Component::Normal(p) if i > 0 => rel.push(p),
                Component::Normal(_) | Component::CurDir => {}
                _ => ok = false,
            }
        }
        let shown = path.display().to_string();
        if !ok {
            out.skipped.push(format!("{shown} (leaves the folder)"));
            continue;
        }
        match entry.header().entry_type() {
            tar::EntryType::Directory => {
                if rel.as_os_str().is_empty() {
                    continue;
                }
                if let Err(e) = crate::fs::create_dir_within(dest, &rel) {
                    out.skipped.push(format!("{shown} ({e})"));
                }
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
                    continue;
                };
                let dir = match crate::fs::create_dir_within(dest, parent) {
                    Ok(d) => d,
                    Err(e) => {
                        out.skipped.push(format!("{shown} ({e})"));
                        continue;
                    }
                };
                let target = dir.join(name);
                let file =
                    crate::fs::create_new(&target).map_err(|e| RunnerError::io(&target, e))?;
                let Some(file) = file else {
                    out.skipped.push(format!("{shown} (the name is taken)"));
                    continue;
                };
                let mut w = std::io::BufWriter::new(file);
                let copied = secrets.copy(&mut entry, &mut w);
                w.flush().map_err(|e| RunnerError::io(&target, e))?;
                out.files += 1;
                if let Err(e) = copied {
                    if crate::runner::is_disk_full(&e) {
                        return Err(RunnerError::io(&target, e));
                    }
                    // The stream ended inside this file (cut at the cap, or damaged).
                    break;
                }
            }
            other => out
                .skipped
                .push(format!("{shown} ({other:?} entries are not copied)")),
        }
    }
    if truncated {
        let note = format!(
            "skillscope copied at most {cap} bytes of this folder out of the container; the rest was left there\n"
        );
        let _ = crate::fs::write_fresh(&dest.join("TRUNCATED.txt"), note.as_bytes());
    }
    Ok(out)
}

/// Removes an image (forced; its untagged parents too). Never fails: one already gone is fine.
pub async fn remove_image(docker: &Docker, id: &str) {
    let _ = docker
        .remove_image(
            id,
            Some(bollard::query_parameters::RemoveImageOptions {
                force: true,
                ..Default::default()
            }),
            None,
        )
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tar_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (p, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_entry_type(tar::EntryType::Regular);
            // Write the raw name so paths such as `../x` reach the extractor unchanged.
            let name = p.as_bytes();
            h.as_old_mut().name[..name.len()].copy_from_slice(name);
            h.set_cksum();
            b.append(&h, *data).unwrap();
        }
        b.into_inner().unwrap()
    }

    #[test]
    fn untar_drops_first_component_and_refuses_escapes() {
        let tmp = tempfile::tempdir().unwrap();
        let bytes = tar_of(&[
            ("logs/verifier/reward.txt", b"1\n"),
            ("logs/../../escape.txt", b"x"),
            ("/etc/abs.txt", b"x"),
        ]);
        let n = untar_safely(&bytes[..], tmp.path(), false, 1 << 20, &Arc::default()).unwrap();
        assert_eq!(n.files, 1);
        assert_eq!(n.skipped.len(), 2, "{n:?}");
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("verifier/reward.txt")).unwrap(),
            "1\n"
        );
        assert!(!tmp.path().parent().unwrap().join("escape.txt").exists());
    }

    /// Links (symbolic and hard) are never made, no write goes through a link already in the
    /// folder, skillscope's own files are kept, secrets are redacted, and a stream cut at its cap
    /// ends with a note.
    #[test]
    fn untar_makes_no_link_and_overwrites_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let dest = tmp.path().join("agent");
        std::fs::create_dir(&dest).unwrap();
        std::fs::write(dest.join("trajectory.json"), "skillscope's").unwrap();
        std::os::unix::fs::symlink(outside.path(), dest.join("sub")).unwrap();
        let mut b = tar::Builder::new(Vec::new());
        let mut link = |name: &str, target: &Path, kind: tar::EntryType| {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(kind);
            h.set_size(0);
            h.set_mode(0o777);
            b.append_link(&mut h, name, target).unwrap();
        };
        link("agent/oracle.txt", &victim, tar::EntryType::Symlink);
        link("agent/hard.txt", &victim, tar::EntryType::Link);
        let mut file = |name: &str, data: &[u8]| {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Regular);
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            b.append_data(&mut h, name, data).unwrap();
        };
        file("agent/trajectory.json", b"forged");
        file("agent/sub/victim", b"through a link");
        file("agent/env.txt", b"KEY=sk-0123456789abcdef\n");
        let bytes = b.into_inner().unwrap();
        let secrets = Arc::new(Secrets::new([("KEY", "sk-0123456789abcdef")]));
        let out = untar_safely(&bytes[..], &dest, false, 1 << 20, &secrets).unwrap();
        assert_eq!(out.files, 1, "{out:?}");
        assert_eq!(out.skipped.len(), 4, "{out:?}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(!outside.path().join("victim.txt").exists());
        assert_eq!(
            std::fs::read_to_string(dest.join("trajectory.json")).unwrap(),
            "skillscope's"
        );
        assert!(std::fs::symlink_metadata(dest.join("oracle.txt")).is_err());
        assert_eq!(
            std::fs::read_to_string(dest.join("env.txt")).unwrap(),
            "KEY=[redacted KEY]\n"
        );
        // Cut at the cap: what arrived is kept, and a note says so.
        let cut = tempfile::tempdir().unwrap();
        let big = tar_of(&[("logs/a.bin", &[7u8; 4096]), ("logs/b.bin", &[8u8; 4096])]);
        let out = untar_safely(&big[..5000], cut.path(), true, 5000, &Arc::default()).unwrap();
        assert!(out.truncated && out.files >= 1, "{out:?}");
        let note = std::fs::read_to_string(cut.path().join("TRUNCATED.txt")).unwrap();
        assert!(note.contains("5000 bytes"), "{note}");
    }
}
