//! The trial runner: one trial's life from image to teardown ([`trial`]), the agents, the
//! verifier, and the machines that run them behind one seam ([`backend`]): Docker daemons
//! ([`docker`]), the in-memory fake of offline tests ([`fake`]). Nothing outside [`docker`]
//! talks to Docker.

pub mod agents;
pub mod backend;
pub mod docker;
pub mod events;
pub mod exposure;
pub mod fake;
pub mod fault;
pub mod image;
pub mod kubernetes;
pub mod limits;
pub mod proxy;
pub mod sandbox;
pub mod secrets;
pub mod selfgen;
pub mod tamper;
pub mod trial;
pub mod verifier;
pub mod work;

use std::path::PathBuf;

pub use agents::{Agent, AgentContext, AgentRun, agent_by_name};
pub use backend::{Backend, BackendKind, Host};
pub use events::{Step, TrialEvent, TrialEvents};
pub use fault::Fault;
pub use sandbox::{ExecEnd, ExecRequest, ExecResult, Sandbox};
pub use trial::{TrialCancel, TrialEnd, TrialEnv, TrialJob, Verdict, run_trial};

/// Where every environment finds skillscope's static shell (`<dir>/sh`, `<dir>/busybox` and its
/// applets), mounted read-only: its PID 1 and every script of skillscope's run from it.
pub const STATIC_SHELL_DIR: &str = "/skillscope/static";

/// True for the users that are root: `""` (an image without `USER`), `root`, `0`, with or
/// without a group (`0:0`, `root:root`).
pub fn is_root_user(user: &str) -> bool {
    let name = user.split(':').next().unwrap_or_default();
    matches!(name, "" | "root" | "0")
}

/// `argv` run as `user` (a name of the image's `/etc/passwd`) from skillscope's root PID 1: the
/// static shell running [`su_line`] with `argv` as its arguments (`sh -c LINE skillscope-su
/// ARGV…`). `su` takes the user's own group from `/etc/passwd`, not a group the image's `USER`
/// names.
pub fn as_user(user: &str, argv: &[String]) -> Vec<String> {
    let quoted = format!("'{}'", user.replace('\'', "'\\''"));
    let mut out = vec![
        format!("{STATIC_SHELL_DIR}/sh"),
        "-c".to_string(),
        su_line(&quoted),
        "skillscope-su".to_string(),
    ];
    out.extend(argv.iter().cloned());
    out
}

/// A line of the static shell that `exec`s its arguments (`"$@"`) as `user` (already quoted for
/// the shell) through the static `su`, with the environment a `docker exec --user` gives: what
/// the caller's environment holds, `HOME`, `USER` and `LOGNAME` of that user (as `su` sets
/// them) — and `SHELL` as it was before `su` (set to the same value, or unset), never `su`'s
/// shell: that is skillscope's static shell, and a harness that runs its commands in `$SHELL`
/// would otherwise get busybox's instead of the image's. `su`'s options come before `--` and
/// the user: busybox parses options anywhere in its arguments, so a command's own `-c` or `-l`
/// (`sh -c …`, `ls -l`) would otherwise be taken for `su`'s.
pub fn su_line(user: &str) -> String {
    let s = STATIC_SHELL_DIR;
    format!(
        "{s}/env SKILLSCOPE_SHELL_SET=\"${{SHELL+1}}\" SKILLSCOPE_SHELL=\"${{SHELL-}}\" \
         {s}/su -s {s}/sh -c 'if [ -n \"$SKILLSCOPE_SHELL_SET\" ]; then \
         SHELL=\"$SKILLSCOPE_SHELL\"; else unset SHELL; fi; \
         unset SKILLSCOPE_SHELL SKILLSCOPE_SHELL_SET; exec \"$0\" \"$@\"' -- {user} \"$@\""
    )
}

/// Errors of the runner. Trial-level failures never surface as errors of the run: they become
/// outcomes (see [`crate::domain::Outcome`]).
#[derive(Debug, Clone, thiserror::Error)]
pub enum RunnerError {
    /// A call to the backend (a Docker daemon, a cluster's API server) failed.
    #[error("{context}: {message}")]
    Backend {
        /// What skillscope was doing (names the endpoint, image or environment).
        context: String,
        /// The backend's message.
        message: String,
        /// Which infrastructure fault it was.
        fault: Fault,
    },
    /// A path asked for does not exist in the environment.
    #[error("{path}: no such file or folder")]
    NotFound {
        /// The path.
        path: String,
    },
    /// The image could not be built.
    #[error("image build failed: {message}")]
    Build {
        /// The failing step's message.
        message: String,
    },
    /// A local file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS message.
        message: String,
        /// The disk (or quota) is full: an infrastructure failure, not the trial's.
        disk_full: bool,
    },
    /// The task or condition cannot be run as given.
    #[error("{0}")]
    Task(String),
}

impl RunnerError {
    /// An I/O error naming `path`.
    pub fn io(path: impl Into<PathBuf>, e: std::io::Error) -> RunnerError {
        RunnerError::Io {
            path: path.into(),
            disk_full: is_disk_full(&e),
            message: e.to_string(),
        }
    }

    /// True when this is a full disk or quota.
    pub fn is_disk_full(&self) -> bool {
        matches!(
            self,
            RunnerError::Io {
                disk_full: true,
                ..
            }
        )
    }

    /// A backend failure known only by its text (a stream's message, a protocol surprise),
    /// classified by [`Fault::of_message`] or else as [`Fault::DaemonError`].
    pub fn backend_text(context: impl Into<String>, message: impl Into<String>) -> RunnerError {
        let message = message.into();
        RunnerError::Backend {
            context: context.into(),
            fault: Fault::of_message(&message).unwrap_or(Fault::DaemonError),
            message,
        }
    }

    /// The infrastructure fault this error is, when it is one: every backend error (a path
    /// skillscope expected and did not find too), a full disk, an unwritable local file. `None`
    /// for [`RunnerError::Task`] and [`RunnerError::Build`] (the task's own definition or
    /// Dockerfile failed).
    pub fn fault(&self) -> Option<Fault> {
        match self {
            RunnerError::Backend { fault, .. } => Some(*fault),
            RunnerError::NotFound { .. } => Some(Fault::Refused),
            RunnerError::Io {
                disk_full: true, ..
            } => Some(Fault::DiskFull),
            RunnerError::Io { .. } => Some(Fault::LocalIo),
            RunnerError::Build { .. } | RunnerError::Task(_) => None,
        }
    }
}

/// True for "no space left on device" and "disk quota exceeded".
pub fn is_disk_full(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::StorageFull
        || matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
}

/// Labels put on every environment (container, pod) skillscope creates.
pub mod labels {
    /// Marks containers as skillscope's.
    pub const MANAGED: &str = "skillscope.managed";
    /// Run name (for people reading `docker ps`).
    pub const RUN: &str = "skillscope.run";
    /// Run uid (what cleanup goes by: names may repeat across databases).
    pub const RUN_UID: &str = "skillscope.run-uid";
    /// Marks a short-lived helper container that belongs to no run: a no-skills image's leak
    /// check (value `leak-check`) or the filling of a harness kit volume (`kit-fill`). One a
    /// killed process left is swept by age.
    pub const HELPER: &str = "skillscope.helper";
    /// Harbor trial name.
    pub const TRIAL: &str = "skillscope.trial";
    /// Attempt row id.
    pub const ATTEMPT_ID: &str = "skillscope.attempt-id";
    /// Image content hash.
    pub const CONTENT_HASH: &str = "skillscope.content-hash";
    /// Compose service name, on a compose task's service containers (they also carry the trial's
    /// labels; its networks carry the trial's labels too).
    pub const SERVICE: &str = "skillscope.service";
    /// What a trial's environment is for: `agent` or `verifier`.
    pub const ROLE: &str = "skillscope.role";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_users_need_no_switch() {
        for u in ["", "root", "0", "0:0", "root:root", "root:staff"] {
            assert!(is_root_user(u), "{u}");
        }
        for u in ["app", "1000:1000", "rooted"] {
            assert!(!is_root_user(u), "{u}");
        }
    }

    #[test]
    fn an_entrypoint_runs_as_the_user_through_the_static_su() {
        let argv = as_user("app", &["/entry.sh".into(), "sleep infinity".into()]);
        assert_eq!(argv[..2], ["/skillscope/static/sh", "-c"]);
        assert_eq!(argv[2], su_line("'app'"));
        assert_eq!(argv[3..], ["skillscope-su", "/entry.sh", "sleep infinity"]);
        assert!(
            argv[2].contains("/skillscope/static/su -s /skillscope/static/sh -c '"),
            "{}",
            argv[2]
        );
        assert!(argv[2].ends_with("-- 'app' \"$@\""), "{}", argv[2]);
    }

    /// Runs `su_line`'s shell text with the host's `sh` standing in for the static tools: the
    /// restore of `SHELL` is plain shell, checked here with `su` replaced by a stub that sets
    /// `SHELL` as the real one does.
    #[test]
    fn su_keeps_the_shell_the_caller_had() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path();
        // Busybox's `su` parses options anywhere in its arguments: the stub refuses any other
        // order than options, `--`, the user, then the command's own arguments.
        let stub = "#!/bin/sh\n# su -s SHELL -c CMD -- USER ARGS...: sets SHELL as su does\n\
                    [ \"$1\" = -s ] && [ \"$3\" = -c ] && [ \"$5\" = -- ] && [ \"$6\" = app ] \
                    || { echo \"su argv: $*\" >&2; exit 99; }\n\
                    export SHELL=\"$2\"; c=\"$4\"; shift 6; exec /bin/sh -c \"$c\" \"$@\"\n";
        std::fs::write(bin.join("su"), stub).unwrap();
        std::os::unix::fs::symlink("/usr/bin/env", bin.join("env")).unwrap();
        std::os::unix::fs::symlink("/bin/sh", bin.join("sh")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(bin.join("su"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let line = su_line("app").replace(STATIC_SHELL_DIR, &bin.display().to_string());
        let run = |shell: Option<&str>| {
            let mut c = std::process::Command::new("/bin/sh");
            c.args([
                "-c",
                &line,
                "x",
                "/bin/sh",
                "-c",
                "echo \"${SHELL-unset}\" \"$0\"",
            ]);
            c.env_remove("SHELL");
            if let Some(v) = shell {
                c.env("SHELL", v);
            }
            let out = c.output().unwrap();
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        };
        assert_eq!(run(None), "unset /bin/sh");
        assert_eq!(run(Some("/bin/bash")), "/bin/bash /bin/sh");
        assert_eq!(run(Some("")), "/bin/sh");
    }
}
