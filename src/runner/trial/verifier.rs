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
    /// Carried modules that shadow a package `test.sh` installed (path, why): flagged.
    pub(super) shadowed: Vec<(String, String)>,
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
    searched_modules: &[(String, String)],
) -> Result<Verified, Failed> {
    let Scope { job, cancel, .. } = *scope;
    let task = &job.task;
    let dir = &job.trial_dir;
    scope
        .tell(TrialEvent::VerifierStarted { at: now_rfc3339() })
        .await;
    let verifier_dir = dir.join("verifier");
    // A user who is not root can write the reward and run test.sh (Harbor's `chmod`s).
    container
        .open_to_user(&["/logs/verifier"], &["/tests/test.sh"])
        .await
        .map_err(|e| Failed::runner(e, "opening /logs/verifier to the image's user"))?;
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
    // Which packages test.sh installed is known only now: a carried module of such a name in a
    // folder searched first was what the tests imported. Only after a test run that ended (a
    // cancelled or timed-out one gives no pass to take away, and a stop must not wait on it).
    let shadowed = if searched_modules.is_empty() || left.is_err() || !exited {
        Ok(Vec::new())
    } else {
        shadowed_installs(container, searched_modules).await
    };
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
    let shadowed =
        shadowed.map_err(|e| Failed::runner(e, "listing the packages the tests installed"))?;
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
        shadowed,
        contradiction,
    })
}

/// Longest the listing of the verifier's package folders may take.
const PACKAGES_LISTING_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);
/// Most bytes of that listing.
const MAX_PACKAGES_LISTING: u64 = 32 << 20;

/// The carried modules of `searched` (path, top-level module: in folders the verifier's Python
/// searches first) that a package folder of the verifier's environment holds once `test.sh`
/// has run — what it installed at verify time, dependencies and unguessable names included
/// (`pip install openpyxl` brings `et_xmlfile`): each with why, to be flagged. The listing
/// (every `site-packages` and `dist-packages` folder on the environment's own file system) runs
/// with skillscope's static shell after every process of the tests ended; a listing cut at its
/// cap, or one that ran out of time, is a limit of the check and flags the trial.
///
/// # Errors
/// [`crate::runner::RunnerError`] when the exec fails (a fault).
async fn shadowed_installs(
    container: &Sandbox,
    searched: &[(String, String)],
) -> Result<Vec<(String, String)>, crate::runner::RunnerError> {
    let s = crate::runner::sandbox::STATIC_SHELL_DIR;
    let script = format!(
        "{s}/find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path {s} \\) -prune \
         -o -type d \\( -name site-packages -o -name dist-packages \\) -print 2>/dev/null | \
         while read -r d; do echo \"== $d\"; {s}/ls -1 \"$d\" 2>/dev/null; done"
    );
    let out = tempfile::NamedTempFile::new()
        .map_err(|e| crate::runner::RunnerError::io(std::env::temp_dir(), e))?;
    let ran = tokio::time::timeout(
        PACKAGES_LISTING_LIMIT,
        container.exec_raw(&script, None, out.path(), MAX_PACKAGES_LISTING),
    )
    .await;
    let limit = |what: String| vec![("/".to_string(), what)];
    let r = match ran {
        Ok(r) => r?,
        Err(_) => {
            return Ok(limit(format!(
                "the check after the tests could not list the installed packages within {}s: \
                 it fails closed",
                PACKAGES_LISTING_LIMIT.as_secs()
            )));
        }
    };
    if r.cut {
        return Ok(limit(format!(
            "the installed packages' listing passed {} MiB: the check after the tests fails \
             closed",
            MAX_PACKAGES_LISTING >> 20
        )));
    }
    let listing =
        std::fs::read(out.path()).map_err(|e| crate::runner::RunnerError::io(out.path(), e))?;
    Ok(shadowed_in(&String::from_utf8_lossy(&listing), searched))
}

/// [`shadowed_installs`]' reading of a listing (`== FOLDER` lines, each followed by its
/// entries): the carried modules of `searched` a package folder holds a module of, each with
/// why. Entries named like a careless package's folders (`tests`, `docs`: never imported
/// as such) are no modules here.
fn shadowed_in(listing: &str, searched: &[(String, String)]) -> Vec<(String, String)> {
    use crate::runner::work::rule::{NOT_NAMESPACES, module_name};
    let mut found: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    let mut folder = "";
    for line in listing.lines() {
        if let Some(d) = line.strip_prefix("== ") {
            folder = d;
            continue;
        }
        let m = module_name(line, false).or_else(|| module_name(line, true));
        if let Some(m) = m.filter(|m| !NOT_NAMESPACES.contains(m)) {
            found.entry(m).or_insert(folder);
        }
    }
    searched
        .iter()
        .filter_map(|(path, m)| {
            let at = found.get(m.as_str())?;
            Some((
                path.clone(),
                format!(
                    "shadows the module {m}, which test.sh installed at verify time (in {at}): \
                     found after the tests"
                ),
            ))
        })
        .collect()
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

    #[test]
    fn a_carried_module_an_install_brought_is_told() {
        let listing = "== /usr/local/lib/python3.11/site-packages\nopenpyxl\n\
                       openpyxl-3.1.5.dist-info\net_xmlfile\nsix.py\n\
                       _cffi_backend.cpython-311-x86_64-linux-gnu.so\ntests\n\
                       == /root/.cache/uv/archive-v0/x/lib/python3.11/site-packages\nfontTools\n";
        let searched: Vec<(String, String)> = [
            ("/app/et_xmlfile.py", "et_xmlfile"),
            ("/app/fontTools/__init__.py", "fontTools"),
            ("/app/six.py", "six"),
            ("/app/_cffi_backend.py", "_cffi_backend"),
            ("/app/solution.py", "solution"),
            ("/app/tests/__init__.py", "tests"),
        ]
        .iter()
        .map(|(p, m)| (p.to_string(), m.to_string()))
        .collect();
        let got = shadowed_in(listing, &searched);
        let paths: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/app/et_xmlfile.py",
                "/app/fontTools/__init__.py",
                "/app/six.py",
                "/app/_cffi_backend.py"
            ]
        );
        assert!(
            got[1]
                .1
                .contains("/root/.cache/uv/archive-v0/x/lib/python3.11/site-packages")
        );
        assert!(shadowed_in("", &searched).is_empty());
    }
}
