//! The verifier: run `/tests/test.sh`, read the reward.
//!
//! Follows Harbor's `verifier/verifier.py`, in the verifier's own environment
//! ([`crate::runner::trial`]'s handover: fresh from the task's image with the agent's work
//! carried in, an empty `/tests` and `/logs/verifier` of its own): `tests/` is in `/tests`, carried
//! in after the agent is gone with its work (`trial::changes::carry`);
//! `chmod +x /tests/test.sh; (/tests/test.sh)` runs with the task's `[verifier] env` in this exec
//! only, started by skillscope's static shell (never the image's `sh`), output
//! to `verifier/test-stdout.txt`; the script's exit code is recorded but does not decide the
//! outcome — the reward file does. `reward.json` (a map of finite numbers) wins over `reward.txt`
//! (one number); an empty or malformed file is no reward.

use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::RunnerError;
use super::sandbox::{ExecRequest, ExecResult, STATIC_SHELL_DIR, Sandbox};
use crate::skillsbench::Task;
use crate::skillsbench::env::EnvValues;

/// Runs the verifier in `container` (the verifier's own, the task's `tests/` already at
/// `/tests`), streaming its output to `verifier_dir/test-stdout.txt`. `[verifier] env` is
/// resolved from `values` ([`EnvValues::resolve`]) and given to this exec alone.
///
/// # Errors
/// [`RunnerError`] when the exec cannot start.
pub async fn run_verifier(
    container: &Sandbox,
    task: &Task,
    verifier_dir: &Path,
    timeout: Duration,
    cancel: &CancellationToken,
    values: &EnvValues,
) -> Result<ExecResult, RunnerError> {
    let out = verifier_dir.join("test-stdout.txt");
    let s = STATIC_SHELL_DIR;
    let req = ExecRequest {
        cmd: vec![
            format!("{s}/sh"),
            "-c".into(),
            // The reward folder is an empty volume of the verifier's own; open to a test that
            // runs as another user. Only the test itself runs anything of the image's. The
            // moment test.sh exits, this shell stops every other process but PID 1 (its
            // builtin `kill`: nothing new is started): whatever outlived test.sh is frozen as
            // it was — it can write nothing more, fork nothing, exit nothing — until PID 1 ends
            // it, and the listing before that sees it (`trial::handover::end_processes`).
            format!(
                "{s}/mkdir -p /logs/verifier; {s}/chmod 777 /logs/verifier 2>/dev/null; \
                 {s}/chmod +x /tests/test.sh 2>/dev/null; (/tests/test.sh); t=$?; \
                 kill -STOP -1 2>/dev/null; exit $t"
            ),
        ],
        env: values.resolve(&task.config.verifier.env),
        user: None,
        timeout: Some(timeout),
        cancel,
        stdout: Some(&out),
        stderr: None,
        prelude: None,
    };
    container.exec(req).await
}
