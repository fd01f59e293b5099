//! What the whole-run fault tests share (`run_faults.rs` here and the API server's restart in
//! `tests/cluster_restart/`): a one-task tasks folder, its run request, the run's attempts, and
//! the checks that a fault of the cluster was never a verdict.

use std::path::Path;
use std::time::{Duration, Instant};

use skillscope::engine::{Engine, RunOutcome, RunRequest};
use skillscope::store::{Outcome, TrialRow, TrialStatus, queries};
use tokio_util::sync::CancellationToken;

use crate::support::common::{Scratch, fixtures};
use crate::support::lifecycle::Target;

/// A tasks folder in `s` with fixture `passes` as `name`, its oracle printing `at work` and then
/// sleeping `sleep` seconds first, its image made unique (a file of `unique` content) when given.
pub fn task(s: &Scratch, name: &str, sleep: u32, unique: Option<&str>) -> std::path::PathBuf {
    let root = s.dir.path().join("fault-tasks");
    let dir = root.join(name);
    for sub in ["environment", "solution", "tests"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    let from = fixtures().join("passes");
    for f in [
        "task.toml",
        "instruction.md",
        "environment/Dockerfile",
        "tests/test.sh",
    ] {
        std::fs::copy(from.join(f), dir.join(f)).unwrap();
    }
    std::fs::write(
        dir.join("solution/solve.sh"),
        format!("#!/bin/sh\necho at work\nsleep {sleep}\necho 42 > /root/answer.txt\n"),
    )
    .unwrap();
    if let Some(u) = unique {
        let mut df = std::fs::read_to_string(dir.join("environment/Dockerfile")).unwrap();
        df.push_str(&format!("RUN echo {u} > /unique.txt\n"));
        std::fs::write(dir.join("environment/Dockerfile"), df).unwrap();
    }
    root
}

pub fn request(t: Target, s: &Scratch, name: &str, dir: &Path, task: &str) -> RunRequest {
    t.request(s, name, Some(dir), &[task], 1)
}

/// The run's attempts of its one trial, oldest first, once the run ended.
pub fn attempts(s: &Scratch, out: &RunOutcome) -> Vec<TrialRow> {
    let c = s.store.connect().unwrap();
    let current = queries::current_trials(&c, out.run.id).unwrap();
    assert_eq!(current.len(), 1, "{current:#?}");
    queries::trial_attempts(&c, out.run.id, &current[0].key()).unwrap()
}

/// Every attempt but the last was interrupted by a fault of the cluster with `reason` in its
/// error, never judged.
pub fn assert_faults_without_verdict(history: &[TrialRow], upto: usize, reason: &str) {
    for a in &history[..upto] {
        assert_eq!(
            a.outcome,
            Some(Outcome::Interrupted),
            "a fault became a verdict: {a:#?}"
        );
        assert!(a.fault.is_some(), "no fault recorded: {a:#?}");
        assert_eq!(a.reward, None, "{a:#?}");
        assert!(
            a.error.as_deref().unwrap_or_default().contains(reason),
            "expected {reason:?} in {a:#?}"
        );
    }
}

/// A run in flight ([`spawn_run`]).
pub type RunTask = tokio::task::JoinHandle<Result<RunOutcome, skillscope::engine::EngineError>>;

/// Starts `req` on `s`'s store in a task of its own, for a test to act while it runs.
pub fn spawn_run(s: &Scratch, req: RunRequest) -> RunTask {
    let engine = Engine::new(s.store.clone());
    tokio::spawn(async move {
        engine
            .run(
                crate::support::common::prepared(req),
                CancellationToken::new(),
            )
            .await
    })
}

/// The outcome of `run` once it ended, within `secs`, finished.
pub async fn finished(run: RunTask, secs: u64) -> RunOutcome {
    let out = tokio::time::timeout(Duration::from_secs(secs), run)
        .await
        .expect("the run ends")
        .unwrap()
        .expect("run");
    assert!(out.finished, "{:?}", out.stop);
    out
}

/// The run `run` ends within 5 minutes, finished: its one trial's first attempt a fault
/// without a verdict, its second a pass, and nothing of run `name` is left on the cluster.
pub async fn one_fault_then_a_pass(t: Target, s: &Scratch, run: RunTask, name: &str) {
    let out = finished(run, 300).await;
    let history = attempts(s, &out);
    assert_eq!(history.len(), 2, "{history:#?}");
    assert_faults_without_verdict(&history, 1, "");
    assert_eq!(history[1].outcome, Some(Outcome::Pass), "{history:#?}");
    t.assert_nothing_left(s, name).await;
}

/// Run `name`'s uid once its one trial's agent is at work: its `solve.sh` ([`task`]) printed its
/// first line, so the agent's exec is open (the status `agent` alone is recorded before the
/// oracle's upload and exec: a fault injected then would hit a step that is retried, or none).
pub async fn agent_at_work(s: &Scratch, name: &str) -> String {
    let t0 = Instant::now();
    loop {
        let c = s.store.connect().unwrap();
        if let Some(r) = queries::find_run(&c, name).unwrap()
            && queries::current_trials(&c, r.id)
                .unwrap()
                .iter()
                .filter(|x| x.status == TrialStatus::Agent)
                .filter_map(|x| x.trial_dir.as_deref())
                .any(|d| {
                    std::fs::read_to_string(Path::new(d).join("agent/oracle.txt"))
                        .is_ok_and(|t| t.contains("at work"))
                })
        {
            return r.uid;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(180),
            "the agent never started"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs `req` in `s` to its end: its one trial given up after three attempts, each a fault with
/// `reason` in its error and no verdict. The run's outcome.
pub async fn given_up_after_three_faults(s: &Scratch, req: RunRequest, reason: &str) -> RunOutcome {
    let out = Engine::new(s.store.clone())
        .run(
            crate::support::common::prepared(req),
            CancellationToken::new(),
        )
        .await
        .expect("run");
    let history = attempts(s, &out);
    assert_eq!(history.len(), 3, "given up after 3 faults: {history:#?}");
    assert_faults_without_verdict(&history, 3, reason);
    out
}
