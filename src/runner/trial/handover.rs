//! Between the agent and the verifier: the verifier runs on the task's own toolchain, with the
//! agent's work and nothing else of the agent's.
//!
//! 1. Every process of the agent ends: `kill -9 -1` from skillscope's static shell, which spares
//!    only PID 1 (skillscope's own loop) — however the agent hid them (`setsid`, double forks, a
//!    replaced `kill`); a process that is still there after is dying (a SIGKILL cannot be held
//!    off) and is waited for ([`stop_agent`]). `/logs/agent` is copied out, capped, never through
//!    a link and never over skillscope's own files.
//! 2. What the agent changed is read by content against the image ([`crate::runner::work`]) and
//!    sorted: its work, and the rest (the toolchain, the verifier's folders, skill folders) left
//!    behind. `agent/tamper.json` records every change and what it became.
//! 3. The verifier's environment starts fresh **from the task's image** — never from the agent's
//!    filesystem — with skillscope's static shell as its PID 1 (the image's ENTRYPOINT does not
//!    run), on the same site (a compose task's services), with an empty `/tests` and
//!    `/logs/verifier` of its own. Steps 2 and 3 run at once; where the site allows it
//!    ([`TrialSite::verifier_may_wait`]: a Docker trial without services) it started with the
//!    agent's and has waited, idle, since.
//! 4. The agent's work is carried in as data: its deletions, then its files, and after them the
//!    task's tests at `/tests` ([`super::changes::carry`]).
//!
//! A trial that cannot get there (the kill, the reading, the new environment or the carrying
//! fails) is an infrastructure fault: interrupted and queued again, never a verdict.

use std::sync::Arc;
use std::time::Duration;

use super::changes::HandedOver;
use super::scripts::{RETRIES, ended_early, kill_script, parse_kill};
use super::{Failed, Scope};
use crate::runner::Sandbox;
use crate::runner::agents::AGENT_LOGS;
use crate::runner::backend::{Environment, EnvironmentSpec, TrialSite};
use crate::runner::events::Step;
use crate::runner::image::{ImageFacts, VerifierFiles};
use crate::runner::sandbox::MAX_DOWNLOAD_BYTES;
use crate::runner::tamper::{self, TamperRecord};
use crate::runner::work::{self, Collected, Rules};

/// Most bytes copied out of each of `/logs/agent`, `/logs/verifier` and `/logs/artifacts`.
pub const MAX_LOGS_BYTES: u64 = MAX_DOWNLOAD_BYTES;

/// How long killed processes get to be gone.
const KILL_LIMIT: Duration = Duration::from_secs(30);

/// What the verifier's environment is made from.
pub(super) struct VerifierPlan<'a> {
    /// Its spec: the task's image, the trial's limits and the operator's mounts — none of the
    /// agent's own.
    pub(super) spec: EnvironmentSpec,
    /// The verifier's environment when it started beside the agent's
    /// ([`TrialSite::verifier_may_wait`]); `None`: it starts from `spec` once the agent is gone.
    pub(super) early: Option<Arc<dyn Environment>>,
    /// The trial's environment, for each exec.
    pub(super) env: Vec<String>,
    /// The task's `[verifier] env`, resolved: the verifier's exec alone gets it, over `env`.
    pub(super) verifier_env: Vec<String>,
    /// The verifier's copies of skills.
    pub(super) files: Option<&'a VerifierFiles>,
    /// What the image holds.
    pub(super) facts: &'a Arc<ImageFacts>,
    /// The trial's site.
    pub(super) site: &'a dyn TrialSite,
    /// Where the agent's own folders are mounted (never read as its changes).
    pub(super) mounts: Vec<String>,
}

/// The skill folders of the tamper rules.
pub(super) struct Skills<'a> {
    /// The folders the exposure scan looked in.
    pub(super) folders: &'a [String],
    /// The harness's own built-ins.
    pub(super) exempt: &'a [String],
    /// What skillscope installed itself.
    pub(super) installed: &'a [String],
}

/// Ends every process in `sandbox` but skillscope's PID 1, until none is left or `limit`
/// passes; returns what was running before the first kill (one line each). Where the backend
/// can, that is done from outside, without an exec ([`Sandbox::end_all_from_outside`]: Docker,
/// held to that backend's own limit instead of `limit`; `execs_ended` as there); elsewhere by
/// skillscope's kill script in an exec. When the kill script is ended before it finishes (a
/// process that kills every new one), PID 1 is asked from outside to end every other process
/// ([`Sandbox::end_all_from_pid_1`]) and the script runs again; when a signal from inside ended
/// it, what ran is listed from outside first ([`Sandbox::processes_seen_from_outside`]), or else
/// the signal is listed.
///
/// # Errors
/// [`crate::runner::RunnerError`] when the environment cannot be asked (a fault), or processes
/// are left after `limit` (a fault: a clean hand-over cannot be confirmed).
pub(crate) async fn end_processes(
    sandbox: &Sandbox,
    limit: Duration,
    execs_ended: bool,
) -> Result<Vec<String>, crate::runner::RunnerError> {
    // Where the backend can, without an exec: nothing left can stop or end one.
    if let Some(ended) = sandbox.end_all_from_outside(execs_ended).await {
        return ended;
    }
    let t0 = tokio::time::Instant::now();
    let mut first: Option<Vec<String>> = None;
    let mut ended: Vec<String> = Vec::new();
    let mut again = 0;
    loop {
        // The exec's own limit runs from its start; starting it can hang too (a process that
        // stops every new one stops the runtime's setup process): a hang is the machine's,
        // and PID 1's kill below ends what hangs it.
        let run = tokio::time::timeout(
            KILL_SCRIPT_LIMIT + Duration::from_secs(30),
            sandbox.sh_output(&kill_script(), KILL_SCRIPT_LIMIT),
        )
        .await
        .unwrap_or_else(|_| {
            Err(crate::runner::RunnerError::backend_text(
                format!("ending the processes of {}", sandbox.name()),
                "skillscope's kill script did not start or end in 60s",
            ))
        });
        let early = match &run {
            Ok((r, _)) => ended_early(r.exit_code),
            Err(_) => true,
        };
        if early && again < RETRIES {
            // Ended from inside (its code says a signal, or its setup process was ended): what
            // runs now, seen from outside before PID 1 ends it, the tests left — and when
            // nothing is seen, the signal itself is the evidence. An error or a time limit of
            // the exec's own is the machine's: run again, no evidence.
            let inside = match &run {
                Ok((r, _)) => r.exit_code.filter(|c| *c == 126 || *c > 128),
                Err(_) => None,
            };
            let seen = match inside {
                Some(_) => sandbox.processes_seen_from_outside().await,
                None => None,
            };
            if sandbox.end_all_from_pid_1().await? {
                again += 1;
                match (inside, seen) {
                    (Some(_), Some(seen)) if !seen.is_empty() => ended.extend(seen),
                    (Some(code), _) if code > 128 => ended.push(format!(
                        "? ? ? (skillscope's kill script ended by signal {})",
                        code - 128
                    )),
                    _ => {}
                }
                tokio::time::sleep(Duration::from_millis(40 << again)).await;
                continue;
            }
        }
        let (r, out) = run?;
        if r.exit_code != Some(0) {
            return Err(crate::runner::RunnerError::backend_text(
                format!("ending the processes of {}", sandbox.name()),
                format!("skillscope's kill ended {:?} with {:?}", r.end, r.exit_code),
            ));
        }
        let (before, left) = parse_kill(&out);
        let done = left.is_empty();
        first.get_or_insert(before);
        if done {
            let mut seen = ended;
            seen.extend(first.unwrap_or_default());
            return Ok(seen);
        }
        if t0.elapsed() > limit {
            return Err(crate::runner::RunnerError::backend_text(
                format!("ending the processes of {}", sandbox.name()),
                format!(
                    "{} process(es) still there {}s after SIGKILL: {}",
                    left.len(),
                    limit.as_secs(),
                    crate::sanitize::one_line(&left.join("; "))
                ),
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Longest one run of the kill script may take once started.
const KILL_SCRIPT_LIMIT: Duration = Duration::from_secs(30);

/// Ends every process of the agent — and, when the trial goes on to its verifier (`read`: the
/// plan and when the agent started), reads what it changed in the same exec — then copies
/// `/logs/agent` out. The copy is tried even when the stop failed (what the agent wrote is
/// kept); the stop's failure is then the error.
pub(super) async fn stop_agent(
    scope: &Scope<'_>,
    container: &Sandbox,
    read: Option<(&VerifierPlan<'_>, std::time::SystemTime)>,
) -> Result<Option<HandedOver>, Failed> {
    let t0 = std::time::Instant::now();
    let stopped = match read {
        Some((plan, started_at)) => super::changes::hand_over(
            container,
            &Rules::pruned(&plan.mounts),
            minutes_since(started_at),
            KILL_LIMIT,
            work::Limits::default(),
        )
        .await
        .map(Some),
        None => end_processes(container, KILL_LIMIT, false)
            .await
            .map(|_| None),
    };
    scope.took(Step::Kill, t0).await;
    let t0 = std::time::Instant::now();
    let dir = scope.job.trial_dir.join("agent");
    let copied = container
        .download_dir(AGENT_LOGS, &dir, MAX_LOGS_BYTES)
        .await;
    scope.took(Step::Evidence, t0).await;
    let stopped = stopped.map_err(|e| Failed::runner(e, "ending the agent's processes"))?;
    let copied = copied.map_err(|e| Failed::runner(e, "copying /logs/agent out"))?;
    if !copied.skipped.is_empty() {
        tracing::info!(
            trial = %scope.job.row.trial_name,
            skipped = ?copied.skipped,
            "entries of /logs/agent not copied"
        );
    }
    Ok(stopped)
}

/// Minutes since `since` (rounded up, at least 1): the window of `find -cmin`.
fn minutes_since(since: std::time::SystemTime) -> u64 {
    let secs = since.elapsed().unwrap_or_default().as_secs();
    secs.div_ceil(60).max(1) + 1
}

/// Sorts what the agent changed (`handed`, read when it stopped) while the verifier's
/// environment starts, records the tamper evidence, and carries the work in; returns the
/// verifier's environment and the record.
pub(super) async fn to_verifier(
    scope: &Scope<'_>,
    agent: &Sandbox,
    plan: &VerifierPlan<'_>,
    skills: &Skills<'_>,
    handed: HandedOver,
) -> Result<(Sandbox, TamperRecord), Failed> {
    let job = scope.job;
    let facts = plan.facts;
    let test_sh = std::fs::read_to_string(job.task.tests_dir().join("test.sh")).unwrap_or_default();
    let tests = super::tests_folder::TestsFolder::read(&job.task.tests_dir());
    let skill_dirs: Vec<String> = skills
        .folders
        .iter()
        .map(|f| f.trim_end_matches('/').to_string())
        .chain(
            crate::skillsbench::dockerfile::SKILL_DESTINATIONS
                .iter()
                .map(|d| d.to_string()),
        )
        .collect();
    // The rule reads the environment as the verifier's exec gets it, not the image's alone:
    // what the site sets (a compose file's `main`), the task's `[environment] env` and the
    // operator's `--env`, the task's `[verifier] env` — each later one winning — and the
    // working folder and user the site gives (the tenth red team: a `[verifier] env` `PATH` or
    // `PYTHONPATH` naming a folder of the work, a compose `working_dir`).
    let main = plan.site.main_settings();
    let env = verifier_env(&facts.env, &[&main.env, &plan.env, &plan.verifier_env]);
    let rule_sh = format!("{}{test_sh}", exports(&facts.env, &env));
    let working_dir = main.working_dir.as_deref().unwrap_or(&facts.working_dir);
    let user = plan
        .spec
        .user
        .as_deref()
        .or(main.user.as_deref())
        .or(plan.spec.image_user.as_deref())
        .unwrap_or_default();
    let rules = Arc::new(
        Rules::new(
            &facts.files,
            &facts.toolchain,
            working_dir,
            &rule_sh,
            // The verifier's home: its user's, which the task may name apart from the image's.
            &facts.home_of(user),
            &skill_dirs,
        )
        .with_image_env(&env, &rule_sh)
        .with_verifier_env(&env)
        .with_test_sources(&tests.sources)
        .with_test_requirements(&facts.files, &tests.requirements)
        .with_test_names(&tests.names),
    );
    let collect = async {
        let t0 = std::time::Instant::now();
        let c = super::changes::sort_handed(handed, facts, &rules, work::Limits::default()).await;
        scope.took(Step::Collect, t0).await;
        c
    };
    let start = async {
        if let Some(v) = &plan.early {
            return Ok(v.clone());
        }
        let t0 = std::time::Instant::now();
        let v = plan.site.start(&plan.spec).await;
        scope.took(Step::VerifierStart, t0).await;
        v
    };
    let (collected, verifier) = tokio::join!(collect, start);
    let verifier =
        verifier.map_err(|e| Failed::runner(e, "starting the verifier's environment"))?;
    let verifier = Sandbox::new(verifier)
        .with_env(plan.env.clone())
        .with_secrets(scope.secrets.clone());
    let collected = collected.map_err(|e| Failed::runner(e, "reading what the agent changed"))?;
    // The agent's environment has given all it will: it goes now, in the background (a compose
    // task's `main` alias is then the verifier's alone; its memory is free for the tests).
    let gone = agent.clone();
    tokio::spawn(async move { gone.remove().await });
    let t0 = std::time::Instant::now();
    let record = record_tamper(
        scope,
        &collected,
        facts,
        skills,
        &own_path(&facts.env, &env, working_dir),
    )?;
    scope.took(Step::Evidence, t0).await;
    let t0 = std::time::Instant::now();
    super::changes::carry(&verifier, &collected, &job.task.tests_dir())
        .await
        .map_err(|e| Failed::runner(e, "carrying the agent's work to the verifier"))?;
    scope.took(Step::Carry, t0).await;
    Ok((verifier, record))
}

/// Writes `agent/tamper.json` from what the agent changed and returns it.
fn record_tamper(
    scope: &Scope<'_>,
    collected: &Collected,
    facts: &ImageFacts,
    skills: &Skills<'_>,
    path: &[String],
) -> Result<TamperRecord, Failed> {
    let head = |p: &str| collected.head(p, tamper::MAX_SCRIPT);
    let ev = tamper::Evidence {
        collected,
        image: facts,
        skill_folders: skills.folders,
        path,
        exempt: skills.exempt,
        installed: skills.installed,
        head: &head,
    };
    let record = tamper::assess(&ev);
    record
        .write(&scope.job.trial_dir)
        .map_err(|e| Failed::runner(e, "recording the agent's changes"))?;
    Ok(record)
}

/// The environment the verifier's exec gets: the image's `image` (`NAME=value` each), then each
/// of `layers` in order, a later value winning for its name; in the image's order, new names
/// after.
fn verifier_env(image: &[String], layers: &[&[String]]) -> Vec<String> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for e in image.iter().chain(layers.iter().flat_map(|l| l.iter())) {
        let Some((k, v)) = e.split_once('=') else {
            continue;
        };
        match out.iter_mut().find(|(n, _)| *n == k) {
            Some(slot) => slot.1 = v,
            None => out.push((k, v)),
        }
    }
    out.into_iter().map(|(k, v)| format!("{k}={v}")).collect()
}

/// The verifier's `PATH` folders in order — `working_dir` in place of an empty or `.` entry,
/// which searches the folder a program runs in — when they are not the image's: `env`'s `PATH`
/// is another than `image`'s, or has such an entry. Empty otherwise.
fn own_path(image: &[String], env: &[String], working_dir: &str) -> Vec<String> {
    let Some(path) = env.iter().find(|e| e.starts_with("PATH=")) else {
        return Vec::new();
    };
    let entries = || path["PATH=".len()..].split(':');
    let searches_here = entries().any(|e| matches!(e, "" | "." | "./"));
    if image.contains(path) && !searches_here {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    for e in entries() {
        let d = match e {
            "" | "." | "./" => working_dir.to_string(),
            e if e.starts_with('/') => match e.trim_end_matches('/') {
                "" => "/".to_string(),
                d => d.to_string(),
            },
            _ => continue,
        };
        if !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

/// `export NAME=VALUE` lines for each variable of `env` that `image` does not hold with that
/// value: what the work rule reads as `test.sh`'s first lines. A name no shell could assign is
/// left out, and so is a value `test.sh`'s reader would not take as written
/// ([`crate::runner::work::rule::plain`]: `/opt/my project`, `~/lib`, `$X`): those the rule
/// reads literally ([`Rules::with_verifier_env`]), and a `test.sh` that uses such a variable
/// fails the rule closed.
fn exports(image: &[String], env: &[String]) -> String {
    let valid = |k: &str| {
        k.chars()
            .next()
            .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
            && k.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
    };
    env.iter()
        .filter(|e| !image.contains(e))
        .filter_map(|e| e.split_once('='))
        .filter(|(k, v)| valid(k) && crate::runner::work::rule::plain(v))
        .map(|(k, v)| format!("export {k}={v}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verifier_s_environment_is_read_as_its_exec_gets_it() {
        let image = vec!["PATH=/usr/bin:/bin".to_string(), "LANG=C".to_string()];
        let site = vec!["PYTHONPATH=/srv/lib".to_string()];
        let exec = vec![
            "PATH=/opt/grader:/usr/bin:/bin".to_string(),
            "LANG=C".to_string(),
        ];
        let verifier = vec![
            "PYTHONPATH=/opt/project/src".to_string(),
            "A B=x".to_string(),
        ];
        let env = verifier_env(&image, &[&site, &exec, &verifier]);
        assert_eq!(
            env,
            [
                "PATH=/opt/grader:/usr/bin:/bin",
                "LANG=C",
                "PYTHONPATH=/opt/project/src",
                "A B=x"
            ]
        );
        assert_eq!(
            exports(&image, &env),
            "export PATH=/opt/grader:/usr/bin:/bin\nexport PYTHONPATH=/opt/project/src\n",
            "the image's own values and names no shell assigns are left out"
        );
        assert_eq!(
            own_path(&image, &env, "/app"),
            ["/opt/grader", "/usr/bin", "/bin"]
        );
        assert!(own_path(&image, &image, "/app").is_empty());
        let empty_entry = vec!["PATH=:/usr/bin".to_string()];
        assert_eq!(
            own_path(&empty_entry, &empty_entry, "/app"),
            ["/app", "/usr/bin"]
        );
        let odd = vec![
            "X=a b".to_string(),
            "Y=~/lib".to_string(),
            "Z=/o/$X".to_string(),
        ];
        assert_eq!(
            exports(&[], &odd),
            "",
            "read literally, never as shell text"
        );
    }

    #[test]
    fn the_window_covers_the_whole_session() {
        let now = std::time::SystemTime::now();
        assert_eq!(minutes_since(now), 2);
        let before = now - Duration::from_secs(61);
        assert_eq!(minutes_since(before), 3);
    }
}
