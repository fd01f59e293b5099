//! The verifier: copy `tests/` to `/tests`, run `tests/test.sh`, read the reward.
//!
//! Follows Harbor's `verifier/verifier.py`: stale reward files are removed first; `tests/` is
//! uploaded after the agent ran; `chmod +x /tests/test.sh; (/tests/test.sh)` runs with the task's
//! `[verifier] env`, output to `verifier/test-stdout.txt`; the script's exit code is recorded but
//! does not decide the outcome — the reward file does. `reward.json` (a map of finite numbers)
//! wins over `reward.txt` (one number); an empty or malformed file is no reward.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::RunnerError;
use super::container::{ExecRequest, ExecResult, TrialContainer};
use crate::skillsbench::Task;

/// Resolves `${NAME}` and `${NAME:-default}` in task env values from the operator's environment
/// and returns `KEY=VALUE` strings. Values are only ever handed to the container, never stored.
pub fn resolve_env(env: &BTreeMap<String, String>) -> Vec<String> {
    env.iter()
        .map(|(k, v)| format!("{k}={}", expand(v, |name| std::env::var(name).ok())))
        .collect()
}

/// Expands `${NAME}` / `${NAME:-default}` with `lookup`; other text is kept as is.
pub fn expand(value: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        match lookup(name).filter(|v| !v.is_empty()) {
            Some(v) => out.push_str(&v),
            None => out.push_str(default.unwrap_or("")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Uploads `tests/` and runs the verifier, streaming its output to `verifier_dir/test-stdout.txt`.
/// With `chown_logs = Some((uid, gid))`, `/logs` is handed to that owner afterwards (bind mounts
/// of a non-root operator).
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
        env: resolve_env(&task.config.verifier.env),
        user: None,
        timeout: Some(timeout),
        cancel,
        stdout: Some(&out),
        stderr: None,
    };
    container.exec(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_templates() {
        let look = |n: &str| (n == "KEY").then(|| "secret".to_string());
        assert_eq!(expand("${KEY}", look), "secret");
        assert_eq!(expand("a-${MISSING:-dflt}-b", look), "a-dflt-b");
        assert_eq!(expand("plain", look), "plain");
        assert_eq!(expand("${UNCLOSED", look), "${UNCLOSED");
    }
}
