//! A trial's environment as the protocol uses it, the same on every backend: execs with a
//! deadline, a cancel token, output files and a prelude; tar streams in and out with caps; every
//! process killed on a timeout. The backend ([`super::backend::Environment`]) only starts
//! processes and moves tar streams.
//!
//! The trial's environment values live in each exec's environment ([`Sandbox::with_env`]), not
//! in the environment's configuration, and every byte an exec prints or a copy brings out has the
//! trial's secrets redacted ([`Sandbox::with_secrets`]). skillscope's own scripts run with its
//! static shell ([`STATIC_SHELL_DIR`], mounted read-only in every environment), never the
//! image's `sh`.

mod output;
mod prelude;
pub mod tar;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use super::RunnerError;
use super::backend::{Chunk, Environment, ExecSpec, TarBody};
use super::secrets::Secrets;
use output::OutputFile;
pub use prelude::Prelude;
pub use tar::CopyOut;

/// Most bytes kept per output file of an exec; the rest is dropped with a note.
pub const MAX_OUTPUT_BYTES: u64 = 64 * 1024 * 1024;
/// Most bytes of tar stream accepted when copying a folder out of an environment (256 MiB): the
/// rest is left there and `TRUNCATED.txt` in the folder says so.
pub const MAX_DOWNLOAD_BYTES: u64 = 256 * 1024 * 1024;

/// Longest a copy out of an environment may go without a byte: a backend that stops feeding a
/// stream without ending it is a fault ([`crate::runner::Fault::DaemonTimeout`]), never a wait
/// without end.
pub const COPY_STALL_LIMIT: Duration = Duration::from_secs(120);

/// The next chunk of the copy of `src`, or the stall fault when none comes within `limit`
/// ([`COPY_STALL_LIMIT`]).
async fn next_chunk(
    stream: &mut futures_util::stream::BoxStream<'static, Result<bytes::Bytes, RunnerError>>,
    src: &str,
    limit: Duration,
) -> Option<Result<bytes::Bytes, RunnerError>> {
    match tokio::time::timeout(limit, stream.next()).await {
        Ok(next) => next,
        Err(_) => Some(Err(RunnerError::Backend {
            context: format!("copying {src} out of the environment"),
            message: format!("no data for {limit:?}"),
            fault: crate::runner::Fault::DaemonTimeout,
        })),
    }
}

pub use super::STATIC_SHELL_DIR;

/// How an exec ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecEnd {
    /// The process exited by itself.
    Exited,
    /// The deadline passed; the environment's processes were killed.
    TimedOut,
    /// The cancel token fired; the environment's processes were killed.
    Cancelled,
}

/// Result of an exec.
#[derive(Debug, Clone)]
pub struct ExecResult {
    /// How it ended.
    pub end: ExecEnd,
    /// Exit code, when the process exited and the backend reported one.
    pub exit_code: Option<i64>,
}

impl ExecResult {
    /// True when it exited, with code 0.
    pub fn succeeded(&self) -> bool {
        self.end == ExecEnd::Exited && self.exit_code == Some(0)
    }
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

/// How a [`Sandbox::exec_raw`] ended.
#[derive(Debug, Clone, Default)]
pub struct RawExec {
    /// Its output was cut at the cap.
    pub cut: bool,
    /// Its exit code, when the backend reported one.
    pub exit_code: Option<i64>,
    /// The end of its stderr (sanitized).
    pub stderr: String,
}

impl RawExec {
    /// True when it exited 0.
    pub fn ok(&self) -> bool {
        self.exit_code == Some(0)
    }
}

/// A running environment of a trial, with the trial's exec values and secrets.
#[derive(Clone)]
pub struct Sandbox {
    inner: Arc<dyn Environment>,
    /// `KEY=VALUE`s every exec gets before its own ([`Sandbox::with_env`]).
    env: Arc<Vec<String>>,
    /// Redacted from every exec's output and every copy out ([`Sandbox::with_secrets`]).
    secrets: Arc<Secrets>,
}

impl Sandbox {
    /// `inner`, with no exec values and no secrets yet.
    pub fn new(inner: Arc<dyn Environment>) -> Sandbox {
        Sandbox {
            inner,
            env: Arc::default(),
            secrets: Arc::default(),
        }
    }

    /// This environment, with `env` given to every exec (before the exec's own values): the
    /// trial's environment, kept out of the environment's configuration.
    pub fn with_env(mut self, env: Vec<String>) -> Sandbox {
        self.env = Arc::new(env);
        self
    }

    /// This environment, with `secrets` redacted from every exec output and copy out.
    pub fn with_secrets(mut self, secrets: Arc<Secrets>) -> Sandbox {
        self.secrets = secrets;
        self
    }

    /// The backend's environment.
    pub fn environment(&self) -> &Arc<dyn Environment> {
        &self.inner
    }

    /// Its id on the host.
    pub fn id(&self) -> &str {
        self.inner.id()
    }

    /// Its name.
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// The user an exec that names none runs as (the image's `USER` when it is not root);
    /// `None`: root ([`Environment::default_user`]).
    pub fn default_user(&self) -> Option<&str> {
        self.inner.default_user()
    }

    /// [`Environment::end_all_from_pid_1`].
    ///
    /// # Errors
    /// As [`Environment::end_all_from_pid_1`].
    pub async fn end_all_from_pid_1(&self) -> Result<bool, RunnerError> {
        self.inner.end_all_from_pid_1().await
    }

    /// [`Environment::end_all_from_outside`].
    ///
    /// # Errors
    /// As [`Environment::end_all_from_outside`].
    pub async fn end_all_from_outside(
        &self,
        execs_ended: bool,
    ) -> Option<Result<Vec<String>, RunnerError>> {
        self.inner.end_all_from_outside(execs_ended).await
    }

    /// [`Environment::lift_cpu_limit`]: only once nothing of the agent's runs.
    pub async fn lift_cpu_limit(&self) {
        self.inner.lift_cpu_limit().await;
    }

    /// [`Environment::processes_seen_from_outside`].
    pub async fn processes_seen_from_outside(&self) -> Option<Vec<String>> {
        self.inner.processes_seen_from_outside().await
    }

    /// The secrets redacted from this environment's output.
    pub fn secrets(&self) -> &Arc<Secrets> {
        &self.secrets
    }

    /// An exec request running `script` with skillscope's static shell (its applets first on
    /// `PATH`, nothing of the image's), without output capture or timeout.
    pub fn own_sh<'a>(&self, script: &str, cancel: &'a CancellationToken) -> ExecRequest<'a> {
        let dir = STATIC_SHELL_DIR;
        ExecRequest {
            cmd: vec![format!("{dir}/sh"), "-c".into(), script.into()],
            env: vec![format!("PATH={dir}")],
            ..ExecRequest::sh("", cancel)
        }
    }

    /// Runs a script of skillscope's own (static shell, as root) under `timeout` and returns how
    /// it ended with its whole stdout (lossily decoded; for short outputs).
    ///
    /// # Errors
    /// As [`Sandbox::exec`]; [`RunnerError::Io`] when the output cannot be spooled.
    pub async fn sh_output(
        &self,
        script: &str,
        timeout: Duration,
    ) -> Result<(ExecResult, String), RunnerError> {
        self.sh_output_as(script, timeout, Some("0".into())).await
    }

    /// [`Sandbox::sh_output`] as `user` (`None`: the image's user, with its environment: what
    /// the verifier's programs would see).
    ///
    /// # Errors
    /// As [`Sandbox::sh_output`].
    pub async fn sh_output_as(
        &self,
        script: &str,
        timeout: Duration,
        user: Option<String>,
    ) -> Result<(ExecResult, String), RunnerError> {
        let out =
            tempfile::NamedTempFile::new().map_err(|e| RunnerError::io(std::env::temp_dir(), e))?;
        let never = CancellationToken::new();
        let mut req = self.own_sh(script, &never);
        req.user = user;
        req.timeout = Some(timeout);
        req.stdout = Some(out.path());
        let r = self.exec(req).await?;
        let bytes = std::fs::read(out.path()).map_err(|e| RunnerError::io(out.path(), e))?;
        Ok((r, String::from_utf8_lossy(&bytes).into_owned()))
    }

    /// Makes each of `dirs` (absolute folders of a fresh environment: nothing of an agent's is
    /// there yet) exist and writable by every user, and each of `programs` (files skillscope
    /// put there: `/tests/test.sh`, `/solution/solve.sh`) executable where it exists, when
    /// execs run as a user who is not root ([`Sandbox::default_user`]; Harbor's `chmod 777` of
    /// `/logs/agent` and `/logs/verifier` at start, and its root's `chmod +x`): one exec of
    /// skillscope's, as root. Nothing where execs run as root (they do it themselves).
    ///
    /// # Errors
    /// As [`Sandbox::sh_output`]; [`RunnerError::Backend`] when the script fails.
    pub async fn open_to_user(&self, dirs: &[&str], programs: &[&str]) -> Result<(), RunnerError> {
        if self.default_user().is_none() || (dirs.is_empty() && programs.is_empty()) {
            return Ok(());
        }
        let quoted = |v: &[&str]| v.iter().map(|d| format!(" '{d}'")).collect::<String>();
        let script = format!(
            "for d in{}; do mkdir -p \"$d\" && chmod 0777 \"$d\" || exit 1; done; \
             for p in{}; do [ -f \"$p\" ] && {{ chmod +x \"$p\" || exit 1; }}; done; true",
            quoted(dirs),
            quoted(programs)
        );
        let (r, out) = self.sh_output(&script, Duration::from_secs(60)).await?;
        if r.succeeded() {
            return Ok(());
        }
        Err(RunnerError::backend_text(
            format!(
                "opening {} to the user {} in {}",
                [dirs, programs].concat().join(", "),
                self.default_user().unwrap_or_default(),
                self.name()
            ),
            format!("exit {:?}: {}", r.exit_code, out.trim()),
        ))
    }

    /// Runs a command, streaming output to files, until it exits, its timeout passes or the token
    /// is cancelled. On timeout or cancel, every process but PID 1 is killed (`kill -9 -1`).
    ///
    /// # Errors
    /// [`RunnerError::Backend`] when the exec cannot be started or its stream is cut,
    /// [`RunnerError::Io`] when an output file cannot be written.
    pub async fn exec(&self, req: ExecRequest<'_>) -> Result<ExecResult, RunnerError> {
        let mut gate = match req.prelude {
            Some(p) => Some(prelude::Gate::open(p).await?),
            None => None,
        };
        // The environment's values first, the exec's own after them (a later one wins).
        let env: Vec<String> = self.env.iter().chain(&req.env).cloned().collect();
        let cmd = match &gate {
            Some(g) => g.command(&req.cmd, &env),
            None => req.cmd.clone(),
        };
        let spec = ExecSpec {
            cmd,
            env,
            user: req.user.clone(),
            working_dir: None,
            stdin: gate.is_some(),
        };
        let started = self.inner.spawn(&spec).await?;
        let (mut output, mut input) = (started.output, started.input);
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
                    Some(Ok(chunk)) => {
                        let (is_err, message) = match chunk {
                            Chunk::Stderr(m) => (true, m),
                            Chunk::Stdout(m) => (false, m),
                        };
                        let message = match gate.as_mut() {
                            Some(g) => {
                                let rest = g.take(usize::from(is_err), &message).await?;
                                if g.done() {
                                    // The prelude ended: taken in, then the command may start.
                                    let g = gate.take().expect("gate");
                                    let taken = g.prelude.ended(self, g.exit_code()).await;
                                    let word: &[u8] = if taken.is_ok() { b"go\n" } else { b"stop\n" };
                                    if let Some(i) = input.as_mut() {
                                        let _ = i.write_all(word).await;
                                        let _ = i.flush().await;
                                    }
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
                        // The backend cut the stream: a fault, never the process's own end.
                        out.note(&format!("[skillscope] output stream error: {e}")).await?;
                        out.finish().await?;
                        if let Some(err) = err.as_mut() {
                            err.finish().await?;
                        }
                        return Err(e);
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
                    "[skillscope] timed out after {:.0}s; killing every process in the environment",
                    req.timeout.unwrap_or_default().as_secs_f64()
                ),
                _ => "[skillscope] cancelled; killing every process in the environment".to_string(),
            };
            out.note(&note).await?;
            if !killed {
                self.kill_all().await;
            }
            // Let the killed process's last output arrive, briefly.
            let _ = tokio::time::timeout(Duration::from_secs(2), async {
                while let Some(Ok(chunk)) = output.next().await {
                    let bytes = match chunk {
                        Chunk::Stdout(b) | Chunk::Stderr(b) => b,
                    };
                    let _ = out.write(&bytes).await;
                }
            })
            .await;
        }
        out.finish().await?;
        if let Some(e) = err.as_mut() {
            e.finish().await?;
        }
        tracing::debug!(environment = %self.name(), cmd = ?req.cmd.last(), "exec stream ended");
        let exit_code = if end == ExecEnd::Exited {
            started.exit.code().await?
        } else {
            None
        };
        Ok(ExecResult { end, exit_code })
    }

    /// Runs a script of skillscope's own (static shell, as root) with `stdin` written to it (the
    /// script reads exactly its length through the static `head -c`: no backend needs to close
    /// an exec's stdin), its stdout written raw (no redaction: data, never shown) to `out` up to `cap`
    /// bytes, the last 2 KiB of its stderr kept. Past `cap` the exec is ended — every process of
    /// the environment but its PID 1 ([`Sandbox::kill_all`]: callers run it when nothing else
    /// runs there) — and `cut` is set: an output without end (a sparse file of 100 GB in a tar)
    /// holds the slot seconds, not until the caller's time limit.
    ///
    /// # Errors
    /// [`RunnerError::Backend`] when the exec fails or its stream is cut; [`RunnerError::Io`]
    /// when `out` cannot be written.
    pub async fn exec_raw(
        &self,
        script: &str,
        stdin: Option<Vec<u8>>,
        out: &Path,
        cap: u64,
    ) -> Result<RawExec, RunnerError> {
        let dir = STATIC_SHELL_DIR;
        let script = match &stdin {
            Some(bytes) => format!("{dir}/head -c {} | ( {script} )", bytes.len()),
            None => script.to_string(),
        };
        let spec = ExecSpec {
            cmd: vec![format!("{dir}/sh"), "-c".into(), script],
            env: vec![format!("PATH={dir}")],
            user: Some("0".into()),
            working_dir: Some("/".into()),
            stdin: stdin.is_some(),
        };
        let started = self.inner.spawn(&spec).await?;
        let (mut output, input) = (started.output, started.input);
        let feed = async move {
            if let (Some(mut i), Some(bytes)) = (input, stdin) {
                let _ = i.write_all(&bytes).await;
                let _ = i.flush().await;
            }
        };
        let mut file = tokio::fs::File::create(out)
            .await
            .map_err(|e| RunnerError::io(out, e))?;
        let read = async {
            let (mut written, mut cut) = (0u64, false);
            let mut err_tail: Vec<u8> = Vec::new();
            while let Some(chunk) = output.next().await {
                match chunk? {
                    Chunk::Stdout(b) if !cut => {
                        if written + b.len() as u64 > cap {
                            cut = true;
                            break;
                        }
                        written += b.len() as u64;
                        file.write_all(&b)
                            .await
                            .map_err(|e| RunnerError::io(out, e))?;
                    }
                    Chunk::Stderr(b) => {
                        err_tail.extend_from_slice(&b);
                        let n = err_tail.len().saturating_sub(2048);
                        err_tail.drain(..n);
                    }
                    Chunk::Stdout(_) => {}
                }
            }
            file.flush().await.map_err(|e| RunnerError::io(out, e))?;
            Ok::<_, RunnerError>((cut, err_tail))
        };
        let ((), read) = tokio::join!(feed, read);
        let (cut, err_tail) = read?;
        if cut {
            self.kill_all().await;
            let _ = tokio::time::timeout(Duration::from_secs(10), async {
                while output.next().await.is_some() {}
            })
            .await;
        }
        let exit_code = started.exit.code().await?;
        Ok(RawExec {
            cut,
            exit_code,
            stderr: crate::sanitize::text(String::from_utf8_lossy(&err_tail).trim()),
        })
    }

    /// Kills every process in the environment except its PID 1 (skillscope's), best effort:
    /// where the backend can, PID 1 is asked from outside ([`Environment::end_all_from_pid_1`]:
    /// Docker's signal, no exec started — an exec's runtime setup process stopped by what runs
    /// inside, the tests' own `kill -STOP -1` as `test.sh` exits included, would hold the
    /// daemon's lock on the environment for good); elsewhere `kill -9 -1` from the static shell,
    /// as root.
    pub async fn kill_all(&self) {
        match self.inner.end_all_from_pid_1().await {
            Ok(true) => return,
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(environment = %self.name(), error = %e, "cannot ask PID 1 to end the rest");
                return;
            }
        }
        let never = CancellationToken::new();
        let mut req = self.own_sh("kill -9 -1 2>/dev/null; true", &never);
        req.user = Some("0".into());
        let spec = ExecSpec {
            cmd: req.cmd,
            env: req.env,
            user: req.user,
            working_dir: None,
            stdin: false,
        };
        // kill -9 -1 spares the caller; its own end is expected either way.
        if let Ok(s) = self.inner.spawn(&spec).await {
            let mut output = s.output;
            let _ = tokio::time::timeout(Duration::from_secs(10), async {
                while output.next().await.is_some() {}
            })
            .await;
        }
    }

    /// Copies a host folder's contents to `dest` (absolute) in the environment, keeping file
    /// modes.
    ///
    /// # Errors
    /// [`RunnerError::Io`] for unreadable files; [`RunnerError::Backend`] for the upload.
    pub async fn upload_dir(&self, local: &Path, dest: &str) -> Result<(), RunnerError> {
        let local = local.to_path_buf();
        let rel = dest.trim_start_matches('/').to_string();
        let tar = tokio::task::spawn_blocking(move || tar::tar_dir(Vec::new(), &local, &rel))
            .await
            .map_err(|e| RunnerError::Task(e.to_string()))??;
        self.inner.upload_tar(TarBody::Memory(tar), "/").await
    }

    /// As [`Sandbox::upload_dir`] for folders of hundreds of MB (a harness kit): the tar is
    /// spooled to a temporary file and streamed from it, so memory stays flat.
    ///
    /// # Errors
    /// [`RunnerError::Io`] for unreadable files or a temporary file that cannot be written;
    /// [`RunnerError::Backend`] for the upload.
    pub async fn upload_large_dir(&self, local: &Path, dest: &str) -> Result<(), RunnerError> {
        let dir = local.to_path_buf();
        let rel = dest.trim_start_matches('/').to_string();
        let spool = tokio::task::spawn_blocking(move || -> Result<_, RunnerError> {
            let spool = tempfile::NamedTempFile::new()
                .map_err(|e| RunnerError::io(std::env::temp_dir(), e))?;
            tar::tar_dir(spool.as_file(), &dir, &rel)?;
            Ok(spool)
        })
        .await
        .map_err(|e| RunnerError::Task(e.to_string()))??;
        let file = tokio::fs::File::open(spool.path())
            .await
            .map_err(|e| RunnerError::io(spool.path(), e))?;
        self.inner.upload_tar(TarBody::Spooled(file), "/").await
    }

    /// Unpacks a tar (its entries relative to `dir`) into the folder `dir`, which must exist.
    ///
    /// # Errors
    /// [`RunnerError::Backend`] for the upload.
    pub async fn upload_tar_at(
        &self,
        tar: impl Into<TarBody>,
        dir: &str,
    ) -> Result<(), RunnerError> {
        self.inner.upload_tar(tar.into(), dir).await
    }

    /// Copies `src` (an absolute folder in the environment) into `host_dir` (made when missing),
    /// dropping the folder's own name (`/logs/agent/x` → `host_dir/x`). Environment output is
    /// untrusted: the tar stream is spooled to a temporary file up to `cap` bytes (the rest left,
    /// `TRUNCATED.txt` says so); only regular files and folders are written, never through a
    /// link, never over a file already there (skillscope's own records win), never outside
    /// `host_dir`; the secrets are redacted as each file is written. A folder that does not
    /// exist copies nothing. Works on a stopped environment.
    ///
    /// # Errors
    /// [`RunnerError::Backend`] for the transfer, [`RunnerError::Io`] for local writes.
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
            Err(RunnerError::NotFound { .. }) => return Ok(CopyOut::default()),
            Err(e) => return Err(e),
        };
        drop(file);
        let (dest, secrets) = (host_dir.to_path_buf(), self.secrets.clone());
        tokio::task::spawn_blocking(move || {
            let f =
                std::fs::File::open(spool.path()).map_err(|e| RunnerError::io(spool.path(), e))?;
            tar::untar_safely(std::io::BufReader::new(f), &dest, truncated, cap, &secrets)
        })
        .await
        .map_err(|e| RunnerError::Task(e.to_string()))?
    }

    /// The tar of `src` (an absolute path; its own name the top entry), read into memory up to
    /// `cap` bytes; `true` when it was cut there. The content is untrusted: the caller checks
    /// every entry.
    ///
    /// # Errors
    /// [`RunnerError::NotFound`] for a path that does not exist; [`RunnerError::Backend`] for
    /// the transfer, also when no byte comes for [`COPY_STALL_LIMIT`].
    pub async fn download_tar(&self, src: &str, cap: u64) -> Result<(Vec<u8>, bool), RunnerError> {
        let mut stream = self.inner.download_tar(src).await?;
        let mut buf = Vec::new();
        while let Some(chunk) = next_chunk(&mut stream, src, COPY_STALL_LIMIT).await {
            let chunk = chunk?;
            if (buf.len() + chunk.len()) as u64 > cap {
                return Ok((buf, true));
            }
            buf.extend_from_slice(&chunk);
        }
        Ok((buf, false))
    }

    /// As [`Sandbox::download_tar`], spooled into `out` instead of memory (for folders that may
    /// be large); `true` when it was cut at `cap` bytes.
    ///
    /// # Errors
    /// As [`Sandbox::download_tar`]; [`RunnerError::Io`] when `out` cannot be written.
    pub async fn download_tar_to(
        &self,
        src: &str,
        out: &mut tokio::fs::File,
        out_path: &Path,
        cap: u64,
    ) -> Result<bool, RunnerError> {
        let mut stream = self.inner.download_tar(src).await?;
        let mut written = 0u64;
        while let Some(chunk) = next_chunk(&mut stream, src, COPY_STALL_LIMIT).await {
            let chunk = chunk?;
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

    /// Removes the environment (forced). Never fails.
    pub async fn remove(&self) {
        self.inner.remove().await;
    }
}

/// Removes what trials leave in the background, off the trials' critical path (the host's
/// teardown then overlaps the next trial's start). [`Reaper::drain`] waits for every removal;
/// the engine calls it before a run ends, and a killed process's leftovers are found by label on
/// resume.
#[derive(Default)]
pub struct Reaper {
    pending: std::sync::Mutex<tokio::task::JoinSet<()>>,
    /// Told how long each cleanup took.
    on_done: Option<Arc<dyn Fn(Duration) + Send + Sync>>,
}

impl Reaper {
    /// A reaper that tells `on_done` how long each cleanup took.
    pub fn timed(on_done: Arc<dyn Fn(Duration) + Send + Sync>) -> Reaper {
        Reaper {
            on_done: Some(on_done),
            ..Default::default()
        }
    }

    /// Schedules a cleanup (a trial's site closing).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::backend::{ExecExit, ExecStream};
    use futures_util::stream::{self, BoxStream};

    /// An environment whose one exec writes output without end until PID 1 is asked to end
    /// every other process.
    struct Endless {
        ended: Arc<std::sync::atomic::AtomicBool>,
    }

    struct Exit;

    #[async_trait::async_trait]
    impl ExecExit for Exit {
        async fn code(self: Box<Self>) -> Result<Option<i64>, RunnerError> {
            Ok(Some(137))
        }
    }

    #[async_trait::async_trait]
    impl Environment for Endless {
        fn id(&self) -> &str {
            "endless"
        }
        fn name(&self) -> &str {
            "endless"
        }
        fn default_user(&self) -> Option<&str> {
            None
        }
        async fn spawn(&self, _: &ExecSpec) -> Result<ExecStream, RunnerError> {
            let ended = self.ended.clone();
            let output = stream::unfold((), move |()| {
                let ended = ended.clone();
                async move {
                    tokio::task::yield_now().await;
                    (!ended.load(std::sync::atomic::Ordering::SeqCst)).then(|| {
                        (
                            Ok(Chunk::Stdout(bytes::Bytes::from(vec![0u8; 64 << 10]))),
                            (),
                        )
                    })
                }
            })
            .boxed();
            Ok(ExecStream {
                output,
                input: None,
                exit: Box::new(Exit),
            })
        }
        async fn upload_tar(&self, _: TarBody, _: &str) -> Result<(), RunnerError> {
            Ok(())
        }
        async fn download_tar(
            &self,
            _: &str,
        ) -> Result<BoxStream<'static, Result<bytes::Bytes, RunnerError>>, RunnerError> {
            Ok(stream::empty().boxed())
        }
        async fn remove(&self) {}
        async fn end_all_from_pid_1(&self) -> Result<bool, RunnerError> {
            self.ended.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(true)
        }
    }

    /// Past its cap an exec of skillscope's is ended, not drained to its end.
    #[tokio::test]
    async fn an_output_past_the_cap_ends_the_exec() {
        let ended = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sandbox = Sandbox::new(Arc::new(Endless {
            ended: ended.clone(),
        }));
        let out = tempfile::NamedTempFile::new().unwrap();
        let read = tokio::time::timeout(
            Duration::from_secs(20),
            sandbox.exec_raw("tar", None, out.path(), 1 << 20),
        )
        .await
        .expect("ended at the cap, not drained")
        .unwrap();
        assert!(read.cut);
        assert!(ended.load(std::sync::atomic::Ordering::SeqCst));
        assert!(std::fs::metadata(out.path()).unwrap().len() <= 1 << 20);
    }

    /// A copy whose stream stops feeding without ending is the daemon's fault once the limit
    /// passes; chunks and the stream's end come through as they are.
    #[tokio::test]
    async fn a_copy_stream_that_stalls_is_a_daemon_timeout() {
        let limit = Duration::from_millis(50);
        let mut stalled = stream::pending().boxed();
        let err = tokio::time::timeout(
            Duration::from_secs(10),
            next_chunk(&mut stalled, "/logs", limit),
        )
        .await
        .expect("the stall told within the limit, not waited out")
        .expect("an item")
        .expect_err("a stall");
        assert_eq!(
            err.fault(),
            Some(crate::runner::Fault::DaemonTimeout),
            "{err}"
        );
        assert!(err.to_string().contains("/logs"), "{err}");

        let mut flowing = stream::iter([Ok(bytes::Bytes::from_static(b"tar"))]).boxed();
        let chunk = next_chunk(&mut flowing, "/logs", limit).await;
        assert_eq!(chunk.unwrap().unwrap(), bytes::Bytes::from_static(b"tar"));
        assert!(next_chunk(&mut flowing, "/logs", limit).await.is_none());
    }
}
