//! The verifier phase and the verdict, in the verifier's own environment
//! ([`super::handover::to_verifier`]: fresh from the task's image, the agent's work carried in):
//! its copies of skills put in place, its test run ([`crate::runner::verifier`]), every process
//! the tests left ended (one that outlived them flags the trial), `/logs/verifier` and
//! `/logs/artifacts` copied out, and the outcome decided from the reward file it wrote (a missing
//! reward told apart from an infrastructure fault) — checked against the evidence that must agree
//! with it ([`crate::harbor::agreement`]: a contradicted verdict is no pass) and the agent's
//! tamper evidence (a flagged attempt is judged a failure of the agent whatever the reward:
//! [`crate::domain::TAMPER_RULE`]).

use super::handover::MAX_LOGS_BYTES;
use super::{Done, Failed, Scope};
use crate::domain::{Outcome, TamperFlag, now_rfc3339};
use crate::harbor::reward::{self, is_pass, scalar_reward};
use crate::runner::Sandbox;
use crate::runner::events::{Step, TrialEvent};
use crate::runner::sandbox::ExecEnd;
use crate::runner::tamper::TamperRecord;
use crate::skillsbench::Task;

/// What the verifier phase found.
pub(super) struct Verified {
    /// The verdict from the reward (or why there is none).
    pub(super) done: Result<Done, Failed>,
    /// Processes the tests left running, when there were any (the trial is flagged).
    pub(super) outlived: Option<String>,
    /// How the evidence contradicted the reward, when it did.
    pub(super) contradiction: Option<TamperFlag>,
}

/// The verifier after the agent (it still runs after an agent timeout), in `container` (its
/// own): its copies of skills put in place, its test run under `[verifier] timeout_sec`, what it
/// left running ended, its folders copied out, and the verdict from the reward it wrote with the
/// evidence that must agree (the agent's tamper evidence is applied to it afterwards:
/// [`tampered`]).
pub(super) async fn verify(
    scope: &Scope<'_>,
    container: &Sandbox,
    verifier_files: Option<&crate::runner::image::VerifierFiles>,
    agent_timed_out: bool,
) -> Result<Verified, Failed> {
    let Scope { job, cancel, .. } = *scope;
    let task = &job.task;
    let dir = &job.trial_dir;
    scope
        .tell(TrialEvent::VerifierStarted { at: now_rfc3339() })
        .await;
    let verifier_dir = dir.join("verifier");
    // The verifier's own copies of skills arrive now, after the agent (never in its image).
    if let Some(v) = verifier_files {
        let t0 = std::time::Instant::now();
        install_copies(v, container)
            .await
            .map_err(|e| Failed::runner(e, "giving the verifier its copies of skills"))?;
        scope.took(Step::Upload, t0).await;
    }
    let t0 = std::time::Instant::now();
    let verified = crate::runner::verifier::run_verifier(
        container,
        task,
        &verifier_dir,
        task.verifier_timeout(),
        &cancel.token,
        scope.values,
    )
    .await;
    scope.took(Step::Verifier, t0).await;
    tracing::debug!(trial = %job.row.trial_name, ms = t0.elapsed().as_millis() as u64, "verifier done");
    // What the tests left running ends before the reward is read.
    let t0 = std::time::Instant::now();
    // When test.sh exited, no exec of skillscope's runs: every process left is the tests'.
    let exited = matches!(&verified, Ok(r) if r.end == ExecEnd::Exited);
    let left =
        super::handover::end_processes(container, std::time::Duration::from_secs(30), exited).await;
    scope.took(Step::Sweep, t0).await;
    let t0 = std::time::Instant::now();
    let mut download = container
        .download_dir("/logs/verifier", &verifier_dir, MAX_LOGS_BYTES)
        .await;
    if download.is_ok() {
        download = container
            .download_dir("/logs/artifacts", &dir.join("artifacts"), MAX_LOGS_BYTES)
            .await;
    }
    scope.took(Step::Download, t0).await;
    let verified = verified.map_err(|e| Failed::runner(e, ""));
    scope
        .tell(TrialEvent::VerifierEnded {
            at: now_rfc3339(),
            exit_code: verified.as_ref().ok().and_then(|v| v.exit_code),
        })
        .await;
    let verified = verified?;
    let left = left.map_err(|e| Failed::runner(e, "ending what the tests left running"))?;
    if let Ok(report) = crate::harbor::ctrf::Report::read(&verifier_dir.join("ctrf.json")) {
        scope
            .tell(TrialEvent::Tests {
                total: report.results.summary.tests as i64,
                passed: report.results.summary.passed as i64,
            })
            .await;
    }
    match verified.end {
        ExecEnd::Cancelled => {
            return Err(cancel.failed("stopped while the verifier ran"));
        }
        ExecEnd::TimedOut => {
            return Err(Failed::new(
                Outcome::VerifierTimeout,
                format!(
                    "verifier exceeded [verifier] timeout_sec = {:.0}s",
                    task.verifier_timeout().as_secs_f64()
                ),
            ));
        }
        ExecEnd::Exited => {}
    }
    if let Err(e) = download {
        return Err(Failed::runner(e, "copying the verifier's folders out"));
    }
    let outlived = (!left.is_empty()).then(|| {
        format!(
            "{} process(es) outlived test.sh: {}",
            left.len(),
            crate::sanitize::one_line(&left.join("; "))
        )
    });
    let done = judge(container, task, &verifier_dir, agent_timed_out).await;
    let contradiction = match &done {
        Ok((_, Some(r), _, _)) => {
            let test_sh =
                std::fs::read_to_string(task.tests_dir().join("test.sh")).unwrap_or_default();
            let why = crate::harbor::agreement::contradictions(&verifier_dir, &test_sh, *r);
            (!why.is_empty()).then(|| TamperFlag::contradicted(why))
        }
        _ => None,
    };
    Ok(Verified {
        done,
        outlived,
        contradiction,
    })
}

/// The verdict of an attempt whose agent was flagged (`tamper`) or whose verifier's evidence
/// contradicts its reward (`contradiction`): a failure of the agent, reward 0, whatever the
/// verifier said — its rewards kept as `verifier.<key>` beside `reward: 0`. An agent timeout
/// stays one (with reward 0); an infrastructure fault stays a fault (no verdict). Attempts
/// without either keep `judged` as it is.
pub(super) fn tampered(
    tamper: Option<&TamperRecord>,
    contradiction: &Option<TamperFlag>,
    judged: Result<Done, Failed>,
) -> Result<Done, Failed> {
    let why = match (tamper.and_then(TamperRecord::flag), contradiction) {
        (Some(flag), _) => format!(
            "tampered: the agent changed {} — judged a failure of the agent (docs/scoring.md)",
            crate::sanitize::text(&flag.describe())
        ),
        (None, Some(c)) => format!(
            "verdict contradicted: {} — not a pass (docs/scoring.md)",
            crate::sanitize::text(&c.describe())
        ),
        (None, None) => return judged,
    };
    let (outcome, rewards, said) = match judged {
        Ok((outcome, reward, rewards, _)) => (
            outcome,
            rewards,
            format!(
                "the verifier's reward was {}",
                reward.map_or("none".into(), |r| r.to_string())
            ),
        ),
        Err(f) if f.fault.is_some() || f.provider.is_some() => return Err(f),
        Err(f) => (f.outcome, None, f.error),
    };
    let mut map = serde_json::Map::new();
    map.insert("reward".into(), serde_json::json!(0.0));
    if let Some(serde_json::Value::Object(m)) = rewards {
        for (k, v) in m {
            map.insert(format!("verifier.{k}"), v);
        }
    }
    let outcome = match outcome {
        Outcome::AgentTimeout => Outcome::AgentTimeout,
        _ => Outcome::Fail,
    };
    Ok((
        outcome,
        Some(0.0),
        Some(serde_json::Value::Object(map)),
        Some(format!("{why}; {said}")),
    ))
}

/// Puts every copy of `files` at its path in `container` (before the verifier runs).
///
/// # Errors
/// [`crate::runner::RunnerError`] when a folder cannot be made or a copy cannot be uploaded.
async fn install_copies(
    files: &crate::runner::image::VerifierFiles,
    container: &Sandbox,
) -> Result<(), crate::runner::RunnerError> {
    for (path, tar) in &files.copies {
        let parent = std::path::Path::new(path)
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "/".into());
        let (code, out) = container
            .sh_output(
                &format!(
                    "mkdir -p {}",
                    crate::runner::work::rule::shell_quote(&parent)
                ),
                std::time::Duration::from_secs(60),
            )
            .await?;
        if code.exit_code != Some(0) {
            return Err(crate::runner::RunnerError::Task(format!(
                "cannot make {parent} for the verifier's copy of skills: {out}"
            )));
        }
        container
            .upload_tar_at(tar.as_ref().clone(), &parent)
            .await?;
    }
    Ok(())
}

/// The verdict from the reward the verifier wrote: pass at a passing reward, else fail; an agent
/// that timed out keeps that outcome whatever the reward (its reward is kept). A missing reward
/// is the infrastructure's fault when a disk was full or the container went away, else
/// `no-reward`.
async fn judge(
    container: &Sandbox,
    task: &Task,
    verifier_dir: &std::path::Path,
    agent_timed_out: bool,
) -> Result<Done, Failed> {
    let agent_timeout_note = || {
        format!(
            "agent exceeded [agent] timeout_sec = {:.0}s",
            task.agent_timeout().as_secs_f64()
        )
    };
    match reward::parse_rewards(verifier_dir) {
        Ok(rewards) => {
            let reward = scalar_reward(&rewards);
            let json = serde_json::to_value(&rewards).ok();
            let outcome = if agent_timed_out {
                Outcome::AgentTimeout
            } else if reward.is_some_and(is_pass) {
                Outcome::Pass
            } else {
                Outcome::Fail
            };
            let error = match outcome {
                Outcome::AgentTimeout => Some(agent_timeout_note()),
                Outcome::Fail => Some(format!("verifier reward {}", reward.unwrap_or(0.0))),
                _ => None,
            };
            Ok((outcome, reward, json, error))
        }
        Err(e) if agent_timed_out => Err(Failed::new(
            Outcome::AgentTimeout,
            format!("{}; {e}", agent_timeout_note()),
        )),
        Err(e) => match reward_fault(container).await {
            // The test could not write its reward because a disk was full (or the container went
            // away): the infrastructure's failure, not a verdict.
            Some((k, why)) => Err(Failed::fault(k, format!("{e}; {why}"))),
            None => Err(Failed::new(Outcome::NoReward, e.to_string())),
        },
    }
}

/// Free space (KiB) at or below which the reward's filesystem counts as full.
const FULL_KIB: u64 = 64;

/// Why a verifier left no reward, when the reason is the infrastructure's: the filesystem
/// holding `/logs/verifier` (an anonymous volume on the daemon's disk, beside the container's
/// own layer) has (almost) no space left, or the container cannot be asked any more. `None`
/// when the task's test simply wrote no reward. What the verifier printed is never evidence of a
/// fault: the tests run the agent's code, which can print the kernel's disk-full message and
/// kill `test.sh` (a failure of the agent's dressed as a fault); only skillscope's own
/// measurement counts.
async fn reward_fault(container: &Sandbox) -> Option<(crate::runner::Fault, String)> {
    match container
        .sh_output(
            "df -Pk /logs/verifier 2>/dev/null | tail -n 1",
            std::time::Duration::from_secs(30),
        )
        .await
    {
        Ok((_, line)) => full_disk(&line).map(|why| (crate::runner::Fault::DiskFull, why)),
        Err(e) => e
            .fault()
            .map(|k| (k, format!("the container could not be checked: {e}"))),
    }
}

/// Why a `df -Pk` line says its filesystem is full (at most [`FULL_KIB`] free), if it does.
fn full_disk(df_line: &str) -> Option<String> {
    let avail = df_line
        .split_whitespace()
        .nth(3)
        .and_then(|v| v.parse::<u64>().ok())?;
    (avail <= FULL_KIB)
        .then(|| format!("the disk is full: the filesystem of /logs/verifier has {avail} KiB free"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only skillscope's own measurement makes a missing reward a fault: the tests run the
    /// agent's code, which printed the kernel's disk-full message and killed test.sh (the
    /// attack of tests/fixtures/hostile-pytest/fault-by-message turned a failure of the agent's
    /// into an infrastructure fault, requeued without end).
    #[test]
    fn a_disk_is_full_only_by_its_free_space() {
        let full = "overlay 98304 98300 0 100% /logs/verifier";
        assert!(full_disk(full).unwrap().contains("disk is full"));
        let roomy = "overlay 98304 1000 97304 2% /logs/verifier";
        assert_eq!(full_disk(roomy), None);
        assert_eq!(
            full_disk("df: /logs/verifier: No space left on device"),
            None
        );
        assert_eq!(full_disk(""), None);
    }
}
