//! The dispatcher and the attempts, offline: real runs of the example tasks through the engine
//! on the in-memory fake backend ([`crate::runner::fake`]) and a real SQLite store — placement
//! within each host's slots, a runner fault never a verdict, failover when a host goes down,
//! an operator's cancel and retry, a stop that leaves nothing running.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{Engine, PreparedRun, RunOutcome, RunRequest};
use crate::config::RunSettings;
use crate::domain::{Outcome, TrialRow, TrialStatus};
use crate::runner::Fault;
use crate::runner::fake::{FakeBackend, FakeCall, FakePhase, FakeTrial, FakeVerdict};
use crate::skillsbench::{Catalog, Condition};
use crate::store::{CommandKind, Store, queries};

/// A scratch folder with the example tasks, a database and a jobs folder.
/// `req` with its task set loaded, as `skillscope run` hands it to the engine.
fn prepared(req: RunRequest) -> PreparedRun {
    PreparedRun::load(req).expect("example tasks load")
}

struct Scratch {
    dir: tempfile::TempDir,
    store: Store,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::tempdir().expect("tempdir");
        crate::skillsbench::examples::materialize(&dir.path().join("examples"))
            .expect("example tasks");
        let store = Store::open(&dir.path().join("skillscope.db")).expect("store");
        Scratch { dir, store }
    }

    fn request(&self, name: &str, tasks: &[&str], trials: u32, concurrency: usize) -> RunRequest {
        let tasks_dir =
            crate::skillsbench::examples::materialize(&self.dir.path().join("examples"))
                .expect("example tasks");
        RunRequest {
            name: Some(name.to_string()),
            tasks_dir,
            task_filter: tasks.iter().map(|t| t.to_string()).collect(),
            conditions: vec![Condition::NoSkills],
            n_trials: trials,
            agent: "oracle".into(),
            model: None,
            jobs_dir: self.dir.path().join("jobs"),
            catalog: Catalog::shipped(),
            settings: RunSettings {
                concurrency,
                docker_wait_secs: Some(2),
                ..Default::default()
            },
            stay_alive: None,
            resume_command: None,
            pin: Default::default(),
            sequential: None,
        }
    }

    async fn run(&self, req: RunRequest, backend: Arc<FakeBackend>) -> RunOutcome {
        Engine::new(self.store.clone())
            .run_on(prepared(req), backend, CancellationToken::new())
            .await
            .expect("run")
    }

    fn latest(&self, run_id: i64) -> Vec<TrialRow> {
        queries::current_trials(&self.store.connect().unwrap(), run_id).unwrap()
    }

    fn attempts(&self, run_id: i64) -> Vec<TrialRow> {
        queries::all_trials(&self.store.connect().unwrap(), run_id).unwrap()
    }
}

/// The example tasks' ids (one folder per task).
const TASKS: &[&str] = &[
    "ledger-code-mapping",
    "sales-region-totals",
    "sensor-drift-correction",
    "service-log-triage",
    "temperature-unit-normalization",
];

/// Counts the attempts of each task: the nth call for a task's attempt returns n.
fn attempt_counter() -> impl Fn(&FakeCall) -> u32 + Send + Sync + 'static {
    let calls = std::sync::Mutex::new(std::collections::HashMap::<String, u32>::new());
    move |c| {
        let mut calls = calls.lock().unwrap();
        let n = calls.entry(c.task.clone()).or_default();
        *n += 1;
        *n
    }
}

fn script(
    f: impl Fn(&FakeCall) -> FakeTrial + Send + Sync + 'static,
) -> Arc<dyn crate::runner::fake::FakeScript> {
    Arc::new(f)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trials_are_placed_within_each_hosts_slots() {
    let s = Scratch::new();
    let backend = Arc::new(FakeBackend::scripted(
        2,
        2,
        script(|_| FakeTrial::pass(Duration::from_millis(150))),
    ));
    let out = s
        .run(s.request("placed", TASKS, 2, 2), backend.clone())
        .await;
    assert!(out.finished, "{out:?}");
    let rows = s.latest(out.run.id);
    assert_eq!(rows.len(), 10);
    assert!(
        rows.iter().all(|r| r.outcome == Some(Outcome::Pass)),
        "{rows:#?}"
    );
    for h in 0..2 {
        let peak = backend
            .host(h)
            .counts
            .peak_agents
            .load(std::sync::atomic::Ordering::SeqCst);
        assert!(peak <= 2, "host {h} ran {peak} agents at once");
        assert!(peak >= 1, "host {h} got no trial");
    }
    // Every environment the trials opened is gone.
    for h in 0..2 {
        assert_eq!(
            backend
                .host(h)
                .counts
                .alive
                .load(std::sync::atomic::Ordering::SeqCst),
            0
        );
    }
}

/// A fault of the machine on the first attempt of a task is no verdict: the trial is queued
/// again and judged on its next attempt; the interrupted attempt keeps its fault.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_fault_is_never_a_verdict() {
    let s = Scratch::new();
    // The first two attempts of each task (one per trial) meet a fault.
    let nth = attempt_counter();
    let backend = Arc::new(FakeBackend::scripted(
        1,
        2,
        script(move |c| {
            let n = nth(c);
            let mut t = FakeTrial::pass(Duration::from_millis(20));
            if n <= 2 {
                t.fault = Some((FakePhase::Agent, Fault::ConnectionLost));
            }
            t
        }),
    ));
    let out = s.run(s.request("faults", &TASKS[..2], 2, 2), backend).await;
    assert!(out.finished, "{out:?}");
    let latest = s.latest(out.run.id);
    assert!(
        latest.iter().all(|r| r.outcome == Some(Outcome::Pass)),
        "{latest:#?}"
    );
    let all = s.attempts(out.run.id);
    let interrupted: Vec<&TrialRow> = all
        .iter()
        .filter(|r| r.outcome == Some(Outcome::Interrupted))
        .collect();
    assert_eq!(interrupted.len(), 4, "one per trial: {all:#?}");
    for r in interrupted {
        assert_eq!(r.reward, None, "a fault carries no reward: {r:#?}");
        assert!(
            r.error
                .as_deref()
                .unwrap_or_default()
                .contains("infrastructure fault"),
            "{r:#?}"
        );
    }
}

/// A host that goes down mid-run loses its attempts (interrupted, queued again); the other host
/// finishes the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trials_fail_over_when_a_host_goes_down() {
    let s = Scratch::new();
    let backend = Arc::new(FakeBackend::scripted(
        2,
        2,
        script(|_| FakeTrial::pass(Duration::from_millis(400))),
    ));
    let b = backend.clone();
    let down = tokio::spawn(async move {
        // Once host 0 runs something, it goes down for good.
        for _ in 0..500 {
            if b.host(0)
                .counts
                .agents
                .load(std::sync::atomic::Ordering::SeqCst)
                > 0
            {
                b.host(0).set_up(false);
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    });
    let out = s
        .run(s.request("failover", TASKS, 1, 2), backend.clone())
        .await;
    assert!(down.await.unwrap(), "host 0 never ran a trial");
    assert!(out.finished, "{out:?}");
    let latest = s.latest(out.run.id);
    assert!(
        latest.iter().all(|r| r.outcome == Some(Outcome::Pass)),
        "{latest:#?}"
    );
    assert!(
        s.attempts(out.run.id)
            .iter()
            .any(|r| r.outcome == Some(Outcome::Interrupted)),
        "the attempts on the host that went down are interrupted"
    );
}

/// The operator cancels a running trial and retries a failed one, through the store as `watch`
/// and `skillscope cancel`/`retry` do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_cancel_and_retry_through_the_store() {
    let s = Scratch::new();
    let failed_once = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let f = failed_once.clone();
    let backend = Arc::new(FakeBackend::scripted(
        1,
        2,
        script(move |c| match c.task.as_str() {
            // Runs until cancelled.
            "ledger-code-mapping" => FakeTrial::pass(Duration::from_secs(600)),
            // Fails the first time, passes on the retry.
            _ if !f.swap(true, std::sync::atomic::Ordering::SeqCst) => {
                FakeTrial::fail(Duration::from_millis(10))
            }
            _ => FakeTrial::pass(Duration::from_millis(10)),
        }),
    ));
    let mut req = s.request("steer", &TASKS[..2], 1, 2);
    let stay = CancellationToken::new();
    req.stay_alive = Some(stay.clone());
    let engine = Engine::new(s.store.clone());
    let run = {
        let backend = backend.clone();
        tokio::spawn(async move {
            engine
                .run_on(prepared(req), backend, CancellationToken::new())
                .await
        })
    };
    let conn = s.store.connect().unwrap();
    let wait_for = |pred: &dyn Fn(&[TrialRow]) -> bool| -> Vec<TrialRow> {
        for _ in 0..1000 {
            if let Ok(Some(r)) = queries::find_run(&conn, "steer")
                && let Ok(rows) = queries::current_trials(&conn, r.id)
                && pred(&rows)
            {
                return rows;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the run never got there");
    };
    let rows = wait_for(&|rows| {
        rows.iter()
            .any(|r| r.task_id == "ledger-code-mapping" && r.status == TrialStatus::Agent)
            && rows.iter().any(|r| r.outcome == Some(Outcome::Fail))
    });
    let run_id = rows[0].run_id;
    let long = rows
        .iter()
        .find(|r| r.task_id == "ledger-code-mapping")
        .unwrap();
    let failed = rows
        .iter()
        .find(|r| r.outcome == Some(Outcome::Fail))
        .unwrap();
    queries::insert_command(&conn, run_id, CommandKind::Cancel, long.id).unwrap();
    queries::insert_command(&conn, run_id, CommandKind::Retry, failed.id).unwrap();
    wait_for(&|rows| {
        rows.iter().any(|r| r.outcome == Some(Outcome::Cancelled))
            && rows
                .iter()
                .any(|r| r.outcome == Some(Outcome::Pass) && r.attempt == 2)
    });
    stay.cancel();
    let out = run.await.unwrap().expect("run");
    assert!(
        out.finished,
        "cancelled trials are a decision, not work left: {out:?}"
    );
    assert_eq!(out.cancelled, 1);
    assert_eq!(
        backend
            .host(0)
            .counts
            .alive
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
}

/// A stop (Ctrl-C, SIGTERM) interrupts what runs, queues it again and leaves no environment
/// behind; the resume runs it to the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_leaves_nothing_running_and_the_resume_finishes() {
    let s = Scratch::new();
    let slow = Arc::new(FakeBackend::scripted(
        1,
        2,
        script(|_| FakeTrial::pass(Duration::from_secs(600))),
    ));
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    let host = slow.clone();
    tokio::spawn(async move {
        for _ in 0..500 {
            if host
                .host(0)
                .counts
                .agents
                .load(std::sync::atomic::Ordering::SeqCst)
                >= 2
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        stop.cancel();
    });
    let out = Engine::new(s.store.clone())
        .run_on(
            prepared(s.request("stopped", &TASKS[..2], 1, 2)),
            slow.clone(),
            shutdown,
        )
        .await
        .expect("run");
    assert!(!out.finished);
    assert_eq!(
        slow.host(0)
            .counts
            .alive
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    let rows = s.latest(out.run.id);
    assert!(
        rows.iter().all(|r| r.status == TrialStatus::Queued),
        "{rows:#?}"
    );
    let fast = Arc::new(FakeBackend::new(1, 2));
    let out = s.run(s.request("stopped", &TASKS[..2], 1, 2), fast).await;
    assert!(out.finished);
    assert!(
        s.latest(out.run.id)
            .iter()
            .all(|r| r.outcome == Some(Outcome::Pass))
    );
}

/// The agent's work reaches the verifier, which starts from the image: what the agent wrote is
/// there, what it left running is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_verifier_sees_the_work_and_nothing_else() {
    let s = Scratch::new();
    let backend = Arc::new(FakeBackend::scripted(
        1,
        1,
        script(|c| FakeTrial {
            writes: vec![
                ("/app/answer.txt".into(), "42".into()),
                (format!("/usr/bin/{}", c.task), "forged".into()),
            ],
            verdict: FakeVerdict::RewardIfFile("/app/answer.txt".into(), "42".into()),
            leaves_process: true,
            ..FakeTrial::pass(Duration::ZERO)
        }),
    ));
    let out = s.run(s.request("work", &TASKS[..1], 1, 1), backend).await;
    let rows = s.latest(out.run.id);
    assert_eq!(rows[0].outcome, Some(Outcome::Pass), "{rows:#?}");
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            std::path::Path::new(rows[0].trial_dir.as_deref().unwrap()).join("agent/tamper.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let listed = record["listed"].as_array().unwrap();
    let class = |p: &str| {
        listed
            .iter()
            .find(|c| c["path"] == p)
            .map(|c| c["class"].as_str().unwrap().to_string())
    };
    assert_eq!(class("/app/answer.txt").as_deref(), Some("work"));
    assert!(
        class("/usr/bin/ledger-code-mapping")
            .unwrap()
            .starts_with("toolchain")
    );
}

/// Where the site lets the verifier's environment start beside the agent's
/// (`TrialSite::verifier_may_wait`), the verdict is the same — the work carried, what the agent
/// left running not — and a fault at the agent's start or in its exec is no verdict and leaves
/// no environment behind, the waiting verifier's included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verifier_that_waits_beside_the_agent() {
    let s = Scratch::new();
    let nth = attempt_counter();
    let backend = Arc::new(FakeBackend::scripted(
        1,
        2,
        script(move |c| {
            let n = nth(c);
            let mut t = FakeTrial {
                writes: vec![("/app/answer.txt".into(), "42".into())],
                verdict: FakeVerdict::RewardIfFile("/app/answer.txt".into(), "42".into()),
                leaves_process: true,
                verifier_waits: true,
                ..FakeTrial::pass(Duration::from_millis(20))
            };
            t.fault = match n {
                1 => Some((FakePhase::Start, Fault::ConnectionLost)),
                2 => Some((FakePhase::Agent, Fault::ConnectionLost)),
                _ => None,
            };
            t
        }),
    ));
    let out = s
        .run(s.request("waits", &TASKS[..2], 1, 2), backend.clone())
        .await;
    assert!(out.finished, "{out:?}");
    let latest = s.latest(out.run.id);
    assert!(
        latest.iter().all(|r| r.outcome == Some(Outcome::Pass)),
        "{latest:#?}"
    );
    let all = s.attempts(out.run.id);
    let interrupted = all
        .iter()
        .filter(|r| r.outcome == Some(Outcome::Interrupted))
        .count();
    assert_eq!(interrupted, 4, "two per trial: {all:#?}");
    let counts = &backend.host(0).counts;
    let load = |a: &std::sync::atomic::AtomicUsize| a.load(std::sync::atomic::Ordering::SeqCst);
    // Per task: the start fault's waiting verifier, then two environments each for the
    // agent fault and the pass.
    assert_eq!(load(&counts.started), 2 * (1 + 2 + 2));
    assert_eq!(load(&counts.alive), 0, "every environment is gone");
}

/// A trial's `lock.json` names the image it ran (`environment.kwargs.image`, the tag the
/// backend gave — under Kubernetes the pushed digest reference), besides what Harbor's lock
/// holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_names_the_image_the_trial_ran() {
    let s = Scratch::new();
    let backend = Arc::new(FakeBackend::new(1, 2));
    let out = s.run(s.request("lock", &TASKS[..2], 1, 2), backend).await;
    let rows = s.latest(out.run.id);
    assert_eq!(rows.len(), 2, "{rows:#?}");
    for row in &rows {
        let dir = std::path::Path::new(row.trial_dir.as_deref().expect("trial folder"));
        let lock: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("lock.json")).expect("lock.json"))
                .expect("a lock");
        let tag = row.image.as_deref().expect("the image is recorded");
        assert!(tag.starts_with(&format!("fake/{}:", row.task_id)), "{tag}");
        assert_eq!(lock["environment"]["kwargs"]["image"], tag, "{lock:#}");
        assert!(lock["task"]["digest"].as_str().is_some(), "{lock:#}");
    }
}
