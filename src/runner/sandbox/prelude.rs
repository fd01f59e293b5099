//! A prelude: a script of skillscope's own run by an exec before its command, in the same process
//! tree (one exec instead of two). Its output is kept apart from the command's, and the command
//! starts only when skillscope has taken in what the prelude found and says go — so what the
//! prelude reads is the state before the command ran, whatever the command then does.
//!
//! The exec runs `sh -c '<wrapper>' sh <command…>`; the wrapper runs the prelude in a subshell
//! (without the exec's own environment values, `HOME` and `PATH` aside), ends each of its two
//! streams with a line `SKILLSCOPE-PRELUDE-<nonce>:<exit code>` (the nonce fresh per exec, so no
//! file the prelude copies out can hold it), then waits for `go` on its standard input and
//! `exec`s the command with standard input from `/dev/null` (as an exec without attached input
//! has).

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;

use super::Sandbox;
use super::output::OutputFile;
use crate::runner::RunnerError;

/// What runs before an exec's command ([`super::ExecRequest::prelude`]).
#[async_trait]
pub trait Prelude: Send + Sync {
    /// The `sh` script (run in a subshell; its exit code is reported).
    fn script(&self) -> String;
    /// Longest the script may take; past it every process in the container is killed and the
    /// command runs in an exec of its own, with its whole budget.
    fn timeout(&self) -> Duration;
    /// Host files receiving the script's stdout and stderr.
    fn outputs(&self) -> (&Path, &Path);
    /// Called once, before the command starts: with the script's exit code when it ended, `None`
    /// when it did not (timed out, cancelled, its stream ended); its outputs are complete then.
    ///
    /// # Errors
    /// A [`RunnerError`] stops the exec: the command never starts and the error is the exec's.
    async fn ended(&self, container: &Sandbox, exit_code: Option<i64>) -> Result<(), RunnerError>;
}

/// One stream's search for the prelude's end line.
#[derive(Default)]
struct Stream {
    /// Bytes held back because they may begin the end line.
    pending: Vec<u8>,
    /// The exit code on the end line, once seen.
    exit_code: Option<Option<i64>>,
}

/// An exec's prelude while it runs: where its output goes and whether it has ended.
pub(super) struct Gate<'a> {
    pub(super) prelude: &'a dyn Prelude,
    marker: String,
    out: OutputFile,
    err: OutputFile,
    streams: [Stream; 2],
}

impl<'a> Gate<'a> {
    /// Opens the prelude's output files.
    pub(super) async fn open(prelude: &'a dyn Prelude) -> Result<Gate<'a>, RunnerError> {
        let (out, err) = prelude.outputs();
        Self::open_at(prelude, out, err).await
    }

    /// [`Gate::open`] with the prelude's output going to `out` and `err`.
    async fn open_at(
        prelude: &'a dyn Prelude,
        out: &Path,
        err: &Path,
    ) -> Result<Gate<'a>, RunnerError> {
        Ok(Gate {
            prelude,
            marker: format!("SKILLSCOPE-PRELUDE-{}:", uuid::Uuid::new_v4().simple()),
            // The prelude's output is skillscope's own spool (never a trial file): kept as read.
            out: OutputFile::open(Some(out), &Default::default()).await?,
            err: OutputFile::open(Some(err), &Default::default()).await?,
            streams: Default::default(),
        })
    }

    /// The exec's argv: the wrapper, then `cmd` as its arguments. `env`: the exec's own
    /// `KEY=VALUE`s, unset for the prelude except `HOME` and `PATH`.
    pub(super) fn command(&self, cmd: &[String], env: &[String]) -> Vec<String> {
        let valid = |k: &&str| {
            !k.is_empty()
                && !k.starts_with(|c: char| c.is_ascii_digit())
                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !matches!(*k, "HOME" | "PATH")
        };
        let names: Vec<&str> = env
            .iter()
            .filter_map(|e| e.split_once('=').map(|(k, _)| k))
            .filter(valid)
            .collect();
        let unset = if names.is_empty() {
            String::new()
        } else {
            format!("unset {} 2>/dev/null; ", names.join(" "))
        };
        let mut argv = vec![
            "sh".to_string(),
            "-c".to_string(),
            format!(
                "({unset}{script}\n); rc=$?\n\
                 printf '%s%s\\n' '{m}' \"$rc\"; printf '%s%s\\n' '{m}' \"$rc\" >&2\n\
                 IFS= read -r go; [ \"$go\" = go ] || exit 125\n\
                 exec \"$@\" </dev/null",
                script = self.prelude.script(),
                m = self.marker
            ),
            "sh".to_string(),
        ];
        argv.extend(cmd.iter().cloned());
        argv
    }

    /// True once both streams carried the end line.
    pub(super) fn done(&self) -> bool {
        self.streams.iter().all(|s| s.exit_code.is_some())
    }

    /// The prelude's exit code (from stdout's end line).
    pub(super) fn exit_code(&self) -> Option<i64> {
        self.streams[0].exit_code.flatten()
    }

    /// Takes a chunk of stdout (`stream` 0) or stderr (1): the prelude's part goes to its file;
    /// returns what follows the end line (the command's output).
    pub(super) async fn take(
        &mut self,
        stream: usize,
        bytes: &[u8],
    ) -> Result<Vec<u8>, RunnerError> {
        let s = &mut self.streams[stream];
        if s.exit_code.is_some() {
            return Ok(bytes.to_vec());
        }
        s.pending.extend_from_slice(bytes);
        let file = if stream == 0 {
            &mut self.out
        } else {
            &mut self.err
        };
        let marker = self.marker.as_bytes();
        if let Some(at) = find(&s.pending, marker) {
            let rest = &s.pending[at + marker.len()..];
            let Some(nl) = rest.iter().position(|b| *b == b'\n') else {
                return Ok(Vec::new());
            };
            let code = std::str::from_utf8(&rest[..nl])
                .ok()
                .and_then(|c| c.trim().parse::<i64>().ok());
            let after = rest[nl + 1..].to_vec();
            file.write(&s.pending[..at]).await?;
            file.finish().await?;
            s.exit_code = Some(code);
            s.pending = Vec::new();
            return Ok(after);
        }
        // Keep what may begin the end line; the rest is the prelude's.
        let keep = (marker.len() + 24).min(s.pending.len());
        let cut = s.pending.len() - keep;
        if cut > 0 {
            file.write(&s.pending[..cut]).await?;
            s.pending.drain(..cut);
        }
        Ok(Vec::new())
    }

    /// Ends the prelude that did not end by itself: what it wrote goes to its files.
    pub(super) async fn cut_off(&mut self) -> Result<(), RunnerError> {
        for (i, s) in self.streams.iter_mut().enumerate() {
            if s.exit_code.is_none() {
                let file = if i == 0 { &mut self.out } else { &mut self.err };
                file.write(&std::mem::take(&mut s.pending)).await?;
                file.finish().await?;
            }
        }
        Ok(())
    }
}

/// Where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Spool(tempfile::TempDir);

    #[async_trait]
    impl Prelude for Spool {
        fn script(&self) -> String {
            "echo found".into()
        }
        fn timeout(&self) -> Duration {
            Duration::from_secs(1)
        }
        fn outputs(&self) -> (&Path, &Path) {
            (self.0.path(), self.0.path())
        }
        async fn ended(&self, _: &Sandbox, _: Option<i64>) -> Result<(), RunnerError> {
            Ok(())
        }
    }

    /// The end line is found however the stream is cut into chunks; what precedes it is the
    /// prelude's, what follows it the command's, and the exit code is read from it.
    #[tokio::test]
    async fn the_end_line_splits_the_stream_across_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let (out, err) = (dir.path().join("out"), dir.path().join("err"));
        let spool = Spool(tempfile::tempdir().unwrap());
        let prelude: &dyn Prelude = &spool;
        for cut in [1, 3, 7, 64, 4096] {
            let mut g = Gate {
                prelude,
                marker: "SKILLSCOPE-PRELUDE-0f:".into(),
                out: OutputFile::open(Some(&out), &Default::default())
                    .await
                    .unwrap(),
                err: OutputFile::open(Some(&err), &Default::default())
                    .await
                    .unwrap(),
                streams: Default::default(),
            };
            let tar: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
            let mut stdout = tar.clone();
            stdout.extend_from_slice(b"SKILLSCOPE-PRELUDE-0f:3\nagent says hi\n");
            let mut after = Vec::new();
            for chunk in stdout.chunks(cut) {
                after.extend(g.take(0, chunk).await.unwrap());
            }
            assert!(!g.done());
            after.extend(
                g.take(1, b"D\t/a\t/a\nSKILLSCOPE-PRELUDE-0f:3\n")
                    .await
                    .unwrap(),
            );
            assert!(g.done());
            assert_eq!(g.exit_code(), Some(3));
            assert_eq!(after, b"agent says hi\n");
            assert_eq!(std::fs::read(&out).unwrap(), tar, "cut {cut}");
            assert_eq!(std::fs::read(&err).unwrap(), b"D\t/a\t/a\n");
            // Once ended, everything is the command's.
            assert_eq!(g.take(0, b"more").await.unwrap(), b"more");
        }
    }

    /// The wrapper keeps the command's argv as given and unsets the exec's own values for the
    /// prelude, `HOME` and `PATH` aside.
    #[tokio::test]
    async fn the_wrapper_runs_the_prelude_then_the_command_on_go() {
        let spool = Spool(tempfile::tempdir().unwrap());
        let dir = tempfile::tempdir().unwrap();
        let g = Gate::open_at(&spool, &dir.path().join("o"), &dir.path().join("e"))
            .await
            .unwrap();
        let argv = g.command(
            &["printf".into(), "%s|".into(), "a b".into(), "$x".into()],
            &["SECRET=1".into(), "HOME=/h".into(), "1BAD=x".into()],
        );
        assert!(argv[2].contains("unset SECRET 2>/dev/null;"), "{}", argv[2]);
        let o = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .env("SECRET", "1")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        o.stdin.as_ref().unwrap().write_all(b"go\n").unwrap();
        let o = o.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            text.starts_with(&format!("found\n{}0\na b|$x|", g.marker)),
            "{text}"
        );
    }
}
