//! Exec in a trial's pod through the API (WebSocket, `v4.channel.k8s.io` on a 1.20 cluster):
//! stdout and stderr streamed as they come, stdin given, the exit code read from the status
//! channel. A stream that ends without its status, or breaks, is [`KubeFault::StreamCut`]; an
//! exec that ends by a signal (code ≥ 128) or without status is followed by a check of the pod,
//! so a pod deleted, evicted or lost mid-exec is reported as that fault, not as an exit code.
//!
//! Kubernetes' exec has no environment, user or working-folder parameters, and its v4 protocol
//! cannot close stdin without closing the whole stream (the status would be lost). With the
//! static shell in the pod, the command runs under a small `sh` prelude instead: the
//! environment arrives first on stdin (read byte-exactly by `dd`, so values — secrets among
//! them — never appear in the request's URL or in the API server's logs), the trial's Secret is
//! exported when asked, the folder changed, the user switched (`su`), and the command's own stdin
//! is exactly the given bytes (`head -c`), then end-of-file.

use std::time::Duration;

use bytes::Bytes;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use super::SECRET_DIR;
use super::fault::{KubeError, KubeFault};
use super::pod::{CONTAINER, TrialPod};
use crate::runner::sandbox::STATIC_SHELL_DIR;

/// One command to run in a pod.
#[derive(Debug, Clone, Default)]
pub struct ExecSpec {
    /// Command and arguments (`argv[0]` is looked up in the container's `PATH`).
    pub argv: Vec<String>,
    /// Environment for this exec only (names `[A-Za-z_][A-Za-z0-9_]*`); passed on stdin, never
    /// logged.
    pub env: Vec<(String, String)>,
    /// Also export the trial's Secret of verifier-only values (the verifier's pod mounts it).
    pub secret_env: bool,
    /// User to run as (a name in the image's `/etc/passwd`); `None`: the container's.
    pub user: Option<String>,
    /// Working folder; `None`: the container's.
    pub workdir: Option<String>,
    /// The command's stdin (then end-of-file); `None`: empty.
    pub stdin: Option<ExecStdin>,
    /// Leave the command's stdin open after [`ExecSpec::stdin`]'s bytes, for the bytes a caller
    /// writes while it runs ([`TrialPod::spawn_open`]); the command never sees its end (the v4
    /// protocol cannot close stdin alone), so it must read by length or by line.
    pub open_stdin: bool,
}

/// What an exec's command reads on stdin.
#[derive(Debug, Clone)]
pub enum ExecStdin {
    /// These bytes.
    Bytes(Bytes),
    /// The first `len` bytes of this file, streamed (large tar archives).
    File {
        /// The file.
        path: std::path::PathBuf,
        /// How many bytes of it.
        len: u64,
    },
}

impl ExecStdin {
    /// How many bytes the command reads.
    pub fn len(&self) -> u64 {
        match self {
            ExecStdin::Bytes(b) => b.len() as u64,
            ExecStdin::File { len, .. } => *len,
        }
    }

    /// True when there is nothing to read.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl ExecSpec {
    /// Runs `argv` with nothing else.
    pub fn argv<I, S>(argv: I) -> ExecSpec
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ExecSpec {
            argv: argv.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }
}

/// What an exec yields, in order: output chunks as they come, then the exit code last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecEvent {
    /// Bytes the command wrote to stdout.
    Stdout(Bytes),
    /// Bytes the command wrote to stderr.
    Stderr(Bytes),
    /// The command's exit code (the stream ends after it).
    Exit(i32),
}

/// A running exec. Dropping it stops reading and closes the stream (the command itself may go
/// on: [`TrialPod::stop_processes`] ends it).
pub struct ExecStream {
    rx: mpsc::Receiver<Result<ExecEvent, KubeError>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ExecStream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ExecStream {
    /// The next event; `None` after [`ExecEvent::Exit`] or an error.
    pub async fn next(&mut self) -> Option<Result<ExecEvent, KubeError>> {
        self.rx.recv().await
    }

    /// Reads to the end, keeping at most `cap` bytes of each stream.
    ///
    /// # Errors
    /// The stream's [`KubeError`].
    pub async fn output(mut self, cap: usize) -> Result<ExecOutput, KubeError> {
        let mut out = ExecOutput::default();
        while let Some(ev) = self.next().await {
            match ev? {
                ExecEvent::Stdout(b) => keep(&mut out.stdout, &b, cap, &mut out.truncated),
                ExecEvent::Stderr(b) => keep(&mut out.stderr, &b, cap, &mut out.truncated),
                ExecEvent::Exit(code) => {
                    out.exit_code = code;
                    return Ok(out);
                }
            }
        }
        Err(KubeError::new(
            "reading an exec",
            KubeFault::StreamCut,
            "the stream ended without an exit code",
        ))
    }
}

fn keep(buf: &mut Vec<u8>, b: &[u8], cap: usize, truncated: &mut bool) {
    let room = cap.saturating_sub(buf.len());
    if b.len() > room {
        *truncated = true;
    }
    buf.extend_from_slice(&b[..b.len().min(room)]);
}

/// An exec's whole output (capped) and exit code.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutput {
    /// Stdout, at most the cap.
    pub stdout: Vec<u8>,
    /// Stderr, at most the cap.
    pub stderr: Vec<u8>,
    /// Exit code.
    pub exit_code: i32,
    /// True when either stream was cut at the cap.
    pub truncated: bool,
}

/// The argv and the first stdin bytes (the environment preamble; the command's own stdin follows
/// them) that run `spec` (see the module doc): with the static shell, the prelude script;
/// without it, `spec.argv` alone.
///
/// # Errors
/// A message naming what cannot be done: an environment name that is not a shell name, or
/// anything but a bare argv in a pod without the static shell.
pub fn wrap(
    spec: &ExecSpec,
    static_shell: bool,
    secret: bool,
) -> Result<(Vec<String>, Vec<u8>), String> {
    if spec.argv.is_empty() {
        return Err("an exec needs a command".into());
    }
    if !static_shell {
        if !spec.env.is_empty()
            || spec.secret_env
            || spec.user.is_some()
            || spec.workdir.is_some()
            || spec.stdin.is_some()
            || spec.open_stdin
        {
            return Err(
                "environment, user, folder and stdin need skillscope's static shell in the pod"
                    .into(),
            );
        }
        return Ok((spec.argv.clone(), Vec::new()));
    }
    if spec.secret_env && !secret {
        return Err("the exec asks for the trial's Secret, which this pod does not mount".into());
    }
    let mut preamble = String::new();
    for (k, v) in &spec.env {
        let valid = k
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!("environment name '{k}' is not a shell name"));
        }
        preamble.push_str(&format!("export {k}={}\n", quote(v)));
    }
    let s = STATIC_SHELL_DIR;
    let mut script = String::new();
    if !preamble.is_empty() {
        script.push_str(&format!(
            "eval \"$({s}/dd bs=1 count={} 2>/dev/null)\"\n",
            preamble.len()
        ));
    }
    if spec.secret_env {
        script.push_str(&format!(
            "for f in {SECRET_DIR}/*; do [ -f \"$f\" ] && export \"${{f##*/}}=$({s}/cat \"$f\")\"; done\n"
        ));
    }
    if let Some(dir) = &spec.workdir {
        script.push_str(&format!("cd -- {} || exit 126\n", quote(dir)));
    }
    let run = match &spec.user {
        Some(user) => crate::runner::su_line(&quote(user)),
        None => "\"$@\"".to_string(),
    };
    let payload = spec.stdin.as_ref().map_or(0, ExecStdin::len);
    if payload > 0 && spec.open_stdin {
        return Err("an exec takes fixed stdin bytes or an open stdin, not both".into());
    }
    if payload > 0 {
        script.push_str(&format!("{s}/head -c {payload} | {run}\n"));
    } else if spec.open_stdin {
        script.push_str(&format!("exec {run}\n"));
    } else {
        script.push_str(&format!("exec {run} </dev/null\n"));
    }
    let mut argv = vec![
        format!("{s}/sh"),
        "-c".to_string(),
        script,
        "skillscope-exec".to_string(),
    ];
    argv.extend(spec.argv.iter().cloned());
    Ok((argv, preamble.into_bytes()))
}

/// `s` in single quotes for a POSIX shell.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The exit code a status-channel message carries: `Success` is 0; `NonZeroExitCode` carries
/// the code as the `ExitCode` cause.
///
/// # Errors
/// The status's message for anything else: a failed exec (the command could not be started,
/// the container is gone).
pub fn exit_code(status: &Status) -> Result<i32, String> {
    if status.status.as_deref() == Some("Success") {
        return Ok(0);
    }
    if status.reason.as_deref() == Some("NonZeroExitCode")
        && let Some(code) = status
            .details
            .as_ref()
            .and_then(|d| d.causes.as_ref())
            .and_then(|c| c.iter().find(|c| c.reason.as_deref() == Some("ExitCode")))
            .and_then(|c| c.message.as_deref())
            .and_then(|m| m.trim().parse().ok())
    {
        return Ok(code);
    }
    Err(status
        .message
        .clone()
        .unwrap_or_else(|| "the exec failed without a message".into()))
}

/// Size of the buffers between the WebSocket and the readers.
const BUFFER: usize = 64 * 1024;

impl TrialPod {
    /// Starts `spec` in the trial container and streams its events.
    ///
    /// # Errors
    /// [`KubeError`] when the spec cannot run here ([`wrap`]; [`KubeFault::Refused`]) or the
    /// exec cannot start (the pod's own fault when the pod is gone or lost).
    pub async fn spawn(&self, spec: &ExecSpec) -> Result<ExecStream, KubeError> {
        self.spawn_with(spec, None).await
    }

    /// [`TrialPod::spawn`] of a spec with [`ExecSpec::open_stdin`]: what is sent on the
    /// returned sender reaches the command's stdin, in order. Dropping the sender sends no
    /// end-of-file (the stream stays open until the command's status came).
    ///
    /// # Errors
    /// As [`TrialPod::spawn`]; [`KubeFault::Refused`] for a spec without `open_stdin`.
    pub async fn spawn_open(
        &self,
        spec: &ExecSpec,
    ) -> Result<(ExecStream, mpsc::Sender<Bytes>), KubeError> {
        if !spec.open_stdin {
            return Err(KubeError::new(
                format!("exec in pod {}", self.name),
                KubeFault::Refused,
                "an open stdin needs a spec with open_stdin",
            ));
        }
        let (tx, rx) = mpsc::channel(16);
        Ok((self.spawn_with(spec, Some(rx)).await?, tx))
    }

    async fn spawn_with(
        &self,
        spec: &ExecSpec,
        more: Option<mpsc::Receiver<Bytes>>,
    ) -> Result<ExecStream, KubeError> {
        let context = format!("exec in pod {}", self.name);
        let (argv, prefix) = wrap(spec, self.static_shell, self.secret)
            .map_err(|m| KubeError::new(&context, KubeFault::Refused, m))?;
        let payload = spec.stdin.clone().filter(|s| !s.is_empty());
        let stdin = Stdin {
            prefix,
            payload,
            more,
        };
        let pods: Api<Pod> = self.cluster.api();
        let ap = AttachParams {
            container: Some(CONTAINER.to_string()),
            stdin: !stdin.prefix.is_empty() || stdin.payload.is_some() || stdin.more.is_some(),
            stdout: true,
            stderr: true,
            tty: false,
            max_stdin_buf_size: Some(BUFFER),
            max_stdout_buf_size: Some(BUFFER),
            max_stderr_buf_size: Some(BUFFER),
        };
        let attached = match pods.exec(&self.name, argv, &ap).await {
            Ok(a) => a,
            Err(e) => {
                self.health().await?;
                return Err(KubeError::kube(&context, &e));
            }
        };
        let (tx, rx) = mpsc::channel(64);
        let pod = self.clone();
        let task = tokio::spawn(async move {
            let end = pump(attached, stdin, &tx).await;
            let end = match end {
                Ok(code) if code < 128 => Ok(code),
                other => match pod.health().await {
                    Err(fault) => Err(fault),
                    Ok(()) => other.map_err(|(fault, m)| KubeError::new(&context, fault, m)),
                },
            };
            let _ = tx.send(end.map(ExecEvent::Exit)).await;
        });
        Ok(ExecStream { rx, task })
    }

    /// Runs `spec` to the end, keeping at most `cap` bytes of each stream.
    ///
    /// # Errors
    /// As [`TrialPod::spawn`] and [`ExecStream::output`].
    pub async fn run_output(&self, spec: &ExecSpec, cap: usize) -> Result<ExecOutput, KubeError> {
        self.spawn(spec).await?.output(cap).await
    }
}

/// What an exec's stdin carries: the prelude's preamble, then the command's own bytes, then
/// what the caller sends while it runs.
struct Stdin {
    prefix: Vec<u8>,
    payload: Option<ExecStdin>,
    more: Option<mpsc::Receiver<Bytes>>,
}

impl Stdin {
    async fn write_to<W: tokio::io::AsyncWrite + Unpin>(
        mut self,
        w: &mut W,
    ) -> std::io::Result<()> {
        w.write_all(&self.prefix).await?;
        match self.payload {
            None => {}
            Some(ExecStdin::Bytes(b)) => w.write_all(&b).await?,
            Some(ExecStdin::File { path, len }) => {
                let f = tokio::fs::File::open(&path).await?;
                let copied = tokio::io::copy(&mut f.take(len), w).await?;
                if copied < len {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        format!("{} is shorter than {len} bytes", path.display()),
                    ));
                }
            }
        }
        w.flush().await?;
        if let Some(more) = self.more.as_mut() {
            while let Some(b) = more.recv().await {
                w.write_all(&b).await?;
                w.flush().await?;
            }
        }
        Ok(())
    }
}

/// Feeds stdin, forwards output chunks, and reads the exit status. The stdin writer is kept
/// open until the status came (closing it would close the v4 stream). `Err` carries the fault
/// and message of a stream that broke or ended without status, or of a failed exec.
async fn pump(
    mut attached: kube::api::AttachedProcess,
    stdin: Stdin,
    tx: &mpsc::Sender<Result<ExecEvent, KubeError>>,
) -> Result<i32, (KubeFault, String)> {
    let mut stdout = attached.stdout();
    let mut stderr = attached.stderr();
    let status = attached.take_status();
    let writer = attached.stdin();
    let feed = async move {
        match writer {
            Some(mut w) => {
                // A failed write shows as the command's error (it reads too few bytes).
                let written = stdin.write_to(&mut w).await;
                // Held (not shut down) until the caller drops it after the status.
                (Some(w), written.err())
            }
            None => (None, None),
        }
    };
    // The status future resolves when the client's message loop ends: with the status (the
    // loop then closes stdout and stderr), or empty (the stream broke or closed; on an error the
    // loop leaves the output pipes open, so what is buffered is drained with a short wait and
    // reading stops).
    let mut status = match status {
        Some(s) => futures_util::future::Either::Left(s),
        None => futures_util::future::Either::Right(std::future::ready(None)),
    };
    let read = async {
        let mut out_buf = vec![0u8; BUFFER];
        let mut err_buf = vec![0u8; BUFFER];
        let mut ended: Option<Option<Box<Status>>> = None;
        loop {
            if stdout.is_none() && stderr.is_none() {
                break;
            }
            let drain = matches!(ended, Some(None));
            let step = async {
                tokio::select! {
                    n = read_some(&mut stdout, &mut out_buf), if stdout.is_some() => Step::Out(n),
                    n = read_some(&mut stderr, &mut err_buf), if stderr.is_some() => Step::Err(n),
                    st = &mut status, if ended.is_none() => Step::Status(st.map(Box::new)),
                }
            };
            let step = if drain {
                match tokio::time::timeout(Duration::from_millis(200), step).await {
                    Ok(s) => s,
                    Err(_) => break,
                }
            } else {
                step.await
            };
            let event = match step {
                Step::Status(st) => {
                    ended = Some(st);
                    continue;
                }
                Step::Out(None) => {
                    stdout = None;
                    continue;
                }
                Step::Err(None) => {
                    stderr = None;
                    continue;
                }
                Step::Out(Some(n)) => ExecEvent::Stdout(Bytes::copy_from_slice(&out_buf[..n])),
                Step::Err(Some(n)) => ExecEvent::Stderr(Bytes::copy_from_slice(&err_buf[..n])),
            };
            if tx.send(Ok(event)).await.is_err() {
                return None;
            }
        }
        match ended {
            Some(st) => Some(st.map(|b| *b)),
            None => Some((&mut status).await),
        }
    };
    // The feed may wait on its caller for more stdin past the command's end: the status does
    // not wait for it (the writer is then dropped with the feed, after the status came).
    tokio::pin!(feed, read);
    let mut fed = None;
    let status = loop {
        tokio::select! {
            f = &mut feed, if fed.is_none() => fed = Some(f),
            s = &mut read => break s,
        }
    };
    let write_error = fed.and_then(|(_held, e)| e);
    let Some(status) = status else {
        return Err((KubeFault::StreamCut, "the reader went away".into()));
    };
    if let Some(e) = write_error
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err((KubeFault::LocalIo, format!("feeding the exec's stdin: {e}")));
    }
    match status {
        Some(s) => exit_code(&s).map_err(|m| (KubeFault::ApiError, m)),
        None => {
            let why = match tokio::time::timeout(Duration::from_secs(5), attached.join()).await {
                Ok(Err(e)) => format!("the exec stream broke: {e}"),
                _ => "the exec stream ended without an exit status".to_string(),
            };
            Err((KubeFault::StreamCut, why))
        }
    }
}

/// What one wait of [`pump`] brought.
enum Step {
    Out(Option<usize>),
    Err(Option<usize>),
    Status(Option<Box<Status>>),
}

/// One read; `None` at end of stream or on an error (the status tells which).
async fn read_some<R: tokio::io::AsyncRead + Unpin>(
    r: &mut Option<R>,
    buf: &mut [u8],
) -> Option<usize> {
    let r = r.as_mut()?;
    match r.read(buf).await {
        Ok(0) | Err(_) => None,
        Ok(n) => Some(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{StatusCause, StatusDetails};

    #[test]
    fn exit_codes_come_from_the_status_channel() {
        let ok = Status {
            status: Some("Success".into()),
            ..Default::default()
        };
        assert_eq!(exit_code(&ok), Ok(0));
        let three = Status {
            status: Some("Failure".into()),
            reason: Some("NonZeroExitCode".into()),
            message: Some("command terminated with non-zero exit code".into()),
            details: Some(StatusDetails {
                causes: Some(vec![StatusCause {
                    reason: Some("ExitCode".into()),
                    message: Some("3".into()),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(exit_code(&three), Ok(3));
        let failed = Status {
            status: Some("Failure".into()),
            reason: Some("InternalError".into()),
            message: Some("container not found (\"trial\")".into()),
            ..Default::default()
        };
        assert_eq!(
            exit_code(&failed),
            Err("container not found (\"trial\")".into())
        );
    }

    #[test]
    fn the_environment_goes_on_stdin_never_in_the_argv() {
        let spec = ExecSpec {
            argv: vec!["python3".into(), "-c".into(), "print(1)".into()],
            env: vec![("API_KEY".into(), "s3cr'et".into())],
            workdir: Some("/app".into()),
            stdin: Some(ExecStdin::Bytes(Bytes::from_static(b"prompt"))),
            ..Default::default()
        };
        let (argv, stdin) = wrap(&spec, true, false).unwrap();
        assert!(argv.iter().all(|a| !a.contains("s3cr")), "{argv:?}");
        assert_eq!(&argv[argv.len() - 3..], &spec.argv[..]);
        let preamble = "export API_KEY='s3cr'\\''et'\n";
        assert_eq!(stdin, preamble.as_bytes());
        let script = &argv[2];
        assert!(
            script.contains(&format!("dd bs=1 count={}", preamble.len())),
            "{script}"
        );
        assert!(script.contains("cd -- '/app'"), "{script}");
        assert!(script.contains("head -c 6 | \"$@\""), "{script}");
    }

    #[test]
    fn without_stdin_the_command_reads_nothing_and_bad_specs_are_refused() {
        let (argv, stdin) = wrap(&ExecSpec::argv(["true"]), true, false).unwrap();
        assert!(stdin.is_empty());
        assert!(argv[2].contains("exec \"$@\" </dev/null"), "{}", argv[2]);
        let bare = wrap(&ExecSpec::argv(["true"]), false, false).unwrap();
        assert_eq!(bare, (vec!["true".to_string()], Vec::new()));
        let mut with_env = ExecSpec::argv(["true"]);
        with_env.env = vec![("A".into(), "1".into())];
        assert!(wrap(&with_env, false, false).is_err());
        with_env.env = vec![("A-B".into(), "1".into())];
        assert!(wrap(&with_env, true, false).unwrap_err().contains("'A-B'"));
        let mut secret = ExecSpec::argv(["true"]);
        secret.secret_env = true;
        assert!(wrap(&secret, true, false).is_err());
        assert!(wrap(&secret, true, true).unwrap().0[2].contains(SECRET_DIR));
        assert!(wrap(&ExecSpec::default(), true, true).is_err());
    }
}
