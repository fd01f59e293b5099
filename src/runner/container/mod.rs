//! One trial's container: create/start, exec with streamed output and a deadline, copy files in and
//! out as tar streams (works the same against a remote daemon), and forced removal.
//!
//! PID 1 is `sh -c "exec sleep infinity"` (after the image's ENTRYPOINT, as Harbor's compose file
//! does), so `kill -9 -1` run inside the container stops every process but PID 1 — how an agent or
//! verifier that overran its budget is stopped without losing the container. Removal is forced
//! (SIGKILL), so teardown never waits out Docker's stop timeout.

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
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use super::RunnerError;
use output::OutputFile;
pub use prelude::Prelude;

mod output;
mod prelude;

/// Most bytes kept per output file of an exec; the rest is dropped with a note.
pub const MAX_OUTPUT_BYTES: u64 = 64 * 1024 * 1024;
/// Most bytes accepted when copying a folder out of a container.
pub const MAX_DOWNLOAD_BYTES: u64 = 512 * 1024 * 1024;

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
}

impl TrialContainer {
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
        let mut req = ExecRequest::sh(script, &never);
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
        let cmd = match &gate {
            Some(g) => g.command(&req.cmd, &req.env),
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
                    env: Some(req.env.clone()),
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
        let mut out = OutputFile::open(req.stdout).await?;
        let mut err = match req.stderr {
            Some(p) => Some(OutputFile::open(Some(p)).await?),
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
        let mut req = ExecRequest::sh("kill -9 -1 2>/dev/null; true", &never);
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

    /// Copies `src` (an absolute folder in the container) into `host_dir`, dropping the folder's own
    /// name (`/logs/agent/x` → `host_dir/agent/x` for `src = /logs`). Container output is untrusted:
    /// only regular files and folders are written, paths cannot leave `host_dir`, and at most
    /// [`MAX_DOWNLOAD_BYTES`] are read. Returns the number of files written.
    ///
    /// # Errors
    /// [`RunnerError::Docker`] for the transfer, [`RunnerError::Io`] for local writes.
    pub async fn download_dir(&self, src: &str, host_dir: &Path) -> Result<usize, RunnerError> {
        let (buf, truncated) = self.download_tar(src, MAX_DOWNLOAD_BYTES).await?;
        let host_dir = host_dir.to_path_buf();
        let n = tokio::task::spawn_blocking(move || untar_safely(&buf, &host_dir, truncated))
            .await
            .map_err(|e| RunnerError::Task(e.to_string()))??;
        Ok(n)
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
/// process), then the networks carrying it. Returns how many containers were removed.
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
/// one is using right now. Networks with the label go too (unless still in use). Returns how many
/// containers were removed.
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
    remove_matching(docker, label_filter, age, |c| {
        c.created
            .is_none_or(|t| now.saturating_sub(t) >= age.as_secs() as i64)
    })
    .await
}

/// Removes the containers labelled `label=value` except those whose `keep_label` is one of
/// `keep` (the attempts still running): what an interrupted attempt on a host that went down and
/// came back left behind. Returns how many were removed.
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
    remove_matching(docker, &format!("{label}={value}"), Duration::ZERO, |c| {
        let kept = c
            .labels
            .as_ref()
            .and_then(|l| l.get(keep_label))
            .is_some_and(|v| keep.contains(v));
        !kept
    })
    .await
}

/// Removes (forced, with anonymous volumes) the containers matching `label_filter` for which
/// `pick` holds, then the networks matching it created at least `network_age` ago (one still in
/// use stays). Returns how many containers were removed.
async fn remove_matching(
    docker: &Docker,
    label_filter: &str,
    network_age: Duration,
    pick: impl Fn(&bollard::models::ContainerSummary) -> bool,
) -> Result<usize, RunnerError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs() as i64;
    let filters = HashMap::from([("label".to_string(), vec![label_filter.to_string()])]);
    let list = docker
        .list_containers(Some(ListContainersOptions {
            all: true,
            filters: Some(filters.clone()),
            ..Default::default()
        }))
        .await
        .map_err(|e| RunnerError::docker("listing containers", e))?;
    let mut n = 0;
    for c in list {
        let Some(id) = c.id.clone().filter(|_| pick(&c)) else {
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
    remove_networks_older_than(docker, filters, now, network_age).await;
    Ok(n)
}

/// Removes the networks matching `filters` created at least `age` ago (a compose task's trial
/// networks carry its containers' labels). Best effort: a network still in use stays.
async fn remove_networks_older_than(
    docker: &Docker,
    filters: HashMap<String, Vec<String>>,
    now: i64,
    age: Duration,
) {
    let Ok(list) = docker
        .list_networks(Some(bollard::query_parameters::ListNetworksOptions {
            filters: Some(filters),
        }))
        .await
    else {
        return;
    };
    for net in list {
        let created = net
            .created
            .as_deref()
            .and_then(|c| chrono::DateTime::parse_from_rfc3339(c).ok())
            .map(|t| t.timestamp());
        let old_enough = created.is_none_or(|t| now.saturating_sub(t) >= age.as_secs() as i64);
        if let Some(id) = net.id.filter(|_| old_enough) {
            let _ = docker.remove_network(&id).await;
        }
    }
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

/// Extracts regular files and folders of a tar into `dest`, skipping the first path component and
/// anything that is not a plain relative path.
fn untar_safely(tar_bytes: &[u8], dest: &Path, truncated: bool) -> Result<usize, RunnerError> {
    let mut archive = tar::Archive::new(tar_bytes);
    let mut files = 0;
    let entries = match archive.entries() {
        Ok(e) => e,
        Err(e) => return Err(RunnerError::io(dest, e)),
    };
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
        if !ok || rel.as_os_str().is_empty() {
            continue;
        }
        let target = dest.join(&rel);
        match entry.header().entry_type() {
            tar::EntryType::Directory => {
                std::fs::create_dir_all(&target).map_err(|e| RunnerError::io(&target, e))?;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| RunnerError::io(parent, e))?;
                }
                // Never write through a symlink planted by an earlier entry or run.
                if std::fs::symlink_metadata(&target).is_ok_and(|m| m.file_type().is_symlink()) {
                    continue;
                }
                let mut f =
                    std::fs::File::create(&target).map_err(|e| RunnerError::io(&target, e))?;
                std::io::copy(&mut entry, &mut f).map_err(|e| RunnerError::io(&target, e))?;
                files += 1;
            }
            _ => {}
        }
    }
    if truncated {
        let note = dest.join("TRUNCATED.txt");
        let _ = std::fs::write(
            &note,
            format!("skillscope copied at most {MAX_DOWNLOAD_BYTES} bytes out of the container\n"),
        );
    }
    Ok(files)
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
        let n = untar_safely(&bytes, tmp.path(), false).unwrap();
        assert_eq!(n, 1);
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("verifier/reward.txt")).unwrap(),
            "1\n"
        );
        assert!(!tmp.path().parent().unwrap().join("escape.txt").exists());
    }
}
