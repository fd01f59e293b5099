//! The verifier: copy `tests/` to `/tests`, run `tests/test.sh`, read the reward.
//!
//! Follows Harbor's `verifier/verifier.py`: stale reward files are removed first; `tests/` is
//! uploaded after the agent ran; `chmod +x /tests/test.sh; (/tests/test.sh)` runs with the task's
//! `[verifier] env`, output to `verifier/test-stdout.txt`; the script's exit code is recorded but
//! does not decide the outcome — the reward file does. `reward.json` (a map of finite numbers)
//! wins over `reward.txt` (one number); an empty or malformed file is no reward.

use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::RunnerError;
use super::container::{ExecRequest, ExecResult, TrialContainer};
use crate::skillsbench::Task;
use crate::skillsbench::env::EnvValues;

/// Uploads `tests/` and runs the verifier, streaming its output to `verifier_dir/test-stdout.txt`.
/// `[verifier] env` is resolved from `values` ([`EnvValues::resolve`]). With `chown_logs =
/// Some((uid, gid))`, `/logs` is handed to that owner afterwards (bind mounts of a non-root
/// operator).
///
/// # Errors
/// [`RunnerError`] when the tests cannot be copied in or the exec cannot start.
pub async fn run_verifier(
    container: &TrialContainer,
    task: &Task,
    verifier_dir: &Path,
    timeout: Duration,
    cancel: &CancellationToken,
    chown_logs: Option<(u32, u32)>,
    values: &EnvValues,
) -> Result<ExecResult, RunnerError> {
    container.upload_dir(&task.tests_dir(), "/tests").await?;
    let out = verifier_dir.join("test-stdout.txt");
    let chown = chown_logs
        .map(|(u, g)| format!("; rc=$?; chown -R {u}:{g} /logs 2>/dev/null; exit $rc"))
        .unwrap_or_default();
    let req = ExecRequest {
        cmd: vec![
            "sh".into(),
            "-c".into(),
            // Stale rewards are removed first so only this run's verdict counts.
            format!(
                "rm -f -- /logs/verifier/reward.txt /logs/verifier/reward.json; mkdir -p /logs/verifier; \
                 chmod +x /tests/test.sh 2>/dev/null; (/tests/test.sh){chown}"
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
