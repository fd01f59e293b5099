//! The learning pipeline against the in-repo fake Acontext server, on a real round 1 (the
//! example tasks with the oracle agent in Docker, run once and copied per test): both spaces,
//! the status PATCH and its fallback, mislabeled and undecided tasks, faults (5xx, stalls,
//! dropped connections before and after the server acted), a server restart and a stop in the
//! middle — always ending with one session per trial, two messages per session, and every
//! verdict where the verifier put it.

use crate::support::{common, fake_acontext};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use fake_acontext::{Api, FakeServer, FakeState, Fault};
use skillscope::acontext::learn::{LearnError, LearnOptions, Learner, StatusMode};
use skillscope::acontext::{AcontextConfig, Client};
use skillscope::engine::Engine;
use skillscope::skillsbench::Condition;
use skillscope::store::learning as lq;
use skillscope::store::learning::Step;
use skillscope::store::{Store, queries};
use tokio_util::sync::CancellationToken;

const KEY: &str = "sk-ac-test";
const ROUND1: &str = "examples-round1";

/// A finished round 1 (A and B, 2 trials) on the example tasks, made once per test binary.
fn round1_template() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        std::thread::spawn(|| {
            let rt = tokio::runtime::Runtime::new().expect("runtime");
            rt.block_on(async {
                common::require_docker().await;
                let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
                    .join(format!("acontext-learn-{}", std::process::id()));
                let _ = std::fs::remove_dir_all(&dir);
                std::fs::create_dir_all(&dir).expect("dir");
                let tasks = skillscope::skillsbench::examples::materialize(&dir).expect("examples");
                let store = Store::open(&dir.join("round1.db")).expect("store");
                let req = common::oracle_request(
                    ROUND1,
                    &tasks,
                    &[],
                    vec![Condition::NoSkills, Condition::Curated],
                    2,
                    &dir.join("jobs"),
                );
                let out = Engine::new(store.clone())
                    .run(common::prepared(req), CancellationToken::new())
                    .await
                    .expect("round 1");
                assert!(out.finished);
                store.writer().stop();
                dir
            })
        })
        .join()
        .expect("round 1 thread")
    })
}

struct Env {
    _dir: tempfile::TempDir,
    store: Store,
    server: FakeServer,
    client: Client,
}

impl Env {
    async fn new(status_patch: bool) -> Env {
        Env::with_api(if status_patch {
            Api::ReleasedWithStatusPatch
        } else {
            Api::Released
        })
        .await
    }

    async fn with_api(api: Api) -> Env {
        let template = round1_template();
        let dir = tempfile::tempdir().expect("tempdir");
        for f in ["round1.db", "round1.db-wal"] {
            if template.join(f).exists() {
                std::fs::copy(template.join(f), dir.path().join(f)).expect("copy db");
            }
        }
        let store = Store::open(&dir.path().join("round1.db")).expect("store");
        let server =
            FakeServer::start(FakeState::with_api(KEY, api), ([127, 0, 0, 1], 0).into()).await;
        let client = Client::new(&AcontextConfig {
            base_url: server.base_url(),
            api_key: KEY.into(),
            timeout: Duration::from_secs(5),
            retries: 2,
            max_backoff: Duration::from_millis(20),
        })
        .expect("client");
        Env {
            _dir: dir,
            store,
            server,
            client,
        }
    }

    fn learner(&self) -> Learner {
        Learner {
            store: self.store.clone(),
            client: self.client.clone(),
            cancel: CancellationToken::new(),
            progress: None,
        }
    }

    fn steps(&self, label: &str) -> Vec<lq::LearnStepRow> {
        let c = self.store.connect().unwrap();
        let space = lq::list_spaces(&c)
            .unwrap()
            .into_iter()
            .find(|s| s.label == label)
            .expect("space");
        lq::steps(&c, space.id).unwrap()
    }

    fn space(&self, label: &str) -> lq::SpaceRow {
        let c = self.store.connect().unwrap();
        lq::list_spaces(&c)
            .unwrap()
            .into_iter()
            .find(|s| s.label == label)
            .expect("space")
    }

    /// Every trial learned exactly once with its verdict: one session, two messages, task
    /// statuses equal to the verdict, learning completed.
    fn assert_learned_exactly_once(&self, label: &str) {
        let steps = self.steps(label);
        assert_eq!(steps.len(), 10, "{label}: 5 tasks × 2 trials");
        let st = self.server.state.lock().unwrap();
        for s in &steps {
            assert_eq!(
                s.step, "done",
                "{label} {}#{}: {s:?}",
                s.task_id, s.trial_index
            );
            assert!(st.has_session(&s.session_id));
            assert_eq!(st.messages_of(&s.session_id), 2, "{s:?}");
            assert_eq!(
                st.task_statuses(&s.session_id),
                vec![s.verdict.clone()],
                "{s:?}"
            );
            assert_eq!(
                st.learning_status(&s.session_id).as_deref(),
                Some("completed")
            );
            assert_eq!(s.learning_status.as_deref(), Some("completed"));
        }
    }
}

fn opts(label: &str, condition: Condition, curated: bool) -> LearnOptions {
    let mut o = LearnOptions::new(label, ROUND1, &condition.key());
    o.curated = curated;
    o.poll = (Duration::from_millis(2), Duration::from_millis(10));
    o.server_wait = Duration::from_secs(3);
    o.learn_timeout = Duration::from_secs(10);
    o
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_spaces_learn_in_order_with_the_status_patch() {
    let env = Env::new(true).await;
    let learner = env.learner();
    let (oa, ob) = (
        opts("LS-A", Condition::NoSkills, false),
        opts("LS-B", Condition::Curated, true),
    );
    let (a, b) = tokio::join!(learner.learn(&oa), learner.learn(&ob));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(a.errors.is_empty() && b.errors.is_empty(), "{a:?} {b:?}");
    assert!(a.mislabeled.is_empty() && b.mislabeled.is_empty());
    env.assert_learned_exactly_once("LS-A");
    env.assert_learned_exactly_once("LS-B");
    // 20 sessions, no probe left behind.
    assert_eq!(env.server.state.lock().unwrap().session_count(), 20);

    let space_a = env.space("LS-A");
    let space_b = env.space("LS-B");
    assert_eq!(space_a.status_mode.as_deref(), Some("patch"));
    assert_eq!(space_a.state, "learned");

    // Order: domain, then difficulty, all trials of a task together.
    let c = env.store.connect().unwrap();
    let run = queries::find_run(&c, ROUND1).unwrap().unwrap();
    let tasks: std::collections::BTreeMap<String, (String, u8)> = queries::run_tasks(&c, run.id)
        .unwrap()
        .into_iter()
        .map(|t| {
            let rank = skillscope::acontext::learn::difficulty_rank(&t.difficulty);
            (t.task_id, (t.domain, rank))
        })
        .collect();
    let steps = env.steps("LS-A");
    let keys: Vec<_> = steps
        .iter()
        .map(|s| (tasks[&s.task_id].clone(), s.task_id.clone(), s.trial_index))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "learning order");

    // Verdicts come from the verifier: A has failures on the skill-gated example tasks.
    let trials = queries::current_trials(&c, run.id).unwrap();
    for s in &steps {
        let t = trials.iter().find(|t| t.id == s.trial_id).unwrap();
        let expected = if t.reward == Some(1.0) {
            "success"
        } else {
            "failed"
        };
        assert_eq!(s.verdict, expected);
    }
    assert!(steps.iter().any(|s| s.verdict == "failed"));

    {
        let st = env.server.state.lock().unwrap();
        // Defaults removed; curated skills included in LS-B; learned skills in both.
        let names_a = st.space_skill_names(space_a.remote_id.as_deref().unwrap());
        let names_b = st.space_skill_names(space_b.remote_id.as_deref().unwrap());
        assert!(
            !names_a
                .iter()
                .any(|n| n == "daily-logs" || n == "user-general-facts"),
            "{names_a:?}"
        );
        assert!(
            names_a.iter().all(|n| n.ends_with("-learned")),
            "{names_a:?}"
        );
        let uploads = lq::uploads(&c, space_b.id).unwrap();
        assert!(!uploads.is_empty());
        for u in &uploads {
            assert_eq!(u.state, "included", "{u:?}");
            assert!(names_b.contains(&u.name), "{} not in {names_b:?}", u.name);
        }
        // Patch mode keeps the verifier out of the messages: the status says it.
        for s in &steps {
            let msgs = st.message_texts(&s.session_id);
            assert_eq!(msgs[0].0, "user");
            assert_eq!(msgs[1].0, "assistant");
            assert!(!msgs[1].1.contains("SKILLSCOPE VERIFIER VERDICT"));
            assert!(msgs[1].1.starts_with("Outcome:"), "{}", msgs[1].1);
        }
        // Provenance: each learned skill names the trials it came from.
        let sources = lq::sources(&c, space_a.id).unwrap();
        for s in &steps {
            assert!(
                sources.iter().any(
                    |x| x.trial_id == s.trial_id && x.skill == format!("{}-learned", s.task_id)
                ),
                "no source for {}#{}",
                s.task_id,
                s.trial_index
            );
        }
        // The curated versions are stored for diffs.
        let versions = lq::versions(&c, space_b.id).unwrap();
        assert_eq!(
            versions.iter().filter(|v| v.origin == "curated").count(),
            uploads.len()
        );
    }

    // A second pass has nothing to do and sends no session request.
    let before = env.server.state.lock().unwrap().log.len();
    let again = learner
        .learn(&opts("LS-A", Condition::NoSkills, false))
        .await
        .unwrap();
    assert_eq!(again.steps.get("done"), Some(&10));
    let st = env.server.state.lock().unwrap();
    assert!(
        st.log[before..]
            .iter()
            .all(|e| !e.route.ends_with("/session")),
        "re-created sessions"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn released_servers_get_explicit_verdicts_and_criteria() {
    let env = Env::new(false).await;
    let report = env
        .learner()
        .learn(&opts("LS-A", Condition::NoSkills, false))
        .await
        .unwrap();
    assert!(
        report.errors.is_empty() && report.mislabeled.is_empty(),
        "{report:?}"
    );
    assert_eq!(env.space("LS-A").status_mode.as_deref(), Some("criteria"));
    env.assert_learned_exactly_once("LS-A");
    let st = env.server.state.lock().unwrap();
    assert!(
        st.configs["task_success_criteria"]
            .as_str()
            .unwrap()
            .contains("VERDICT: PASS")
    );
    assert!(
        st.configs["task_failure_criteria"]
            .as_str()
            .unwrap()
            .contains("VERDICT: FAIL")
    );
    for s in env.steps("LS-A") {
        assert_eq!(s.mode.as_deref(), Some("criteria"));
        let text = &st.message_texts(&s.session_id)[1].1;
        let line = if s.verdict == "success" {
            "VERDICT: PASS"
        } else {
            "VERDICT: FAIL"
        };
        assert!(text.trim_end().ends_with(line), "{text}");
    }
    // No session asked for the flag the server does not know.
    assert!(
        st.log
            .iter()
            .filter(|e| e.route.ends_with("/session")
                && e.request["configs"]["skillscope"]["probe"].is_null())
            .all(|e| e.request.get("disable_task_status_change").is_none())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_agent_that_contradicts_the_verifier_is_reported() {
    let env = Env::new(false).await;
    env.server.state.lock().unwrap().mislabel = true;
    let report = env
        .learner()
        .learn(&opts("LS-A", Condition::NoSkills, false))
        .await
        .unwrap();
    let steps = env.steps("LS-A");
    let failed: Vec<_> = steps.iter().filter(|s| s.verdict == "failed").collect();
    assert!(!failed.is_empty());
    assert_eq!(report.mislabeled.len(), failed.len(), "{report:?}");
    for s in failed {
        assert_eq!(s.step, "mislabeled");
        assert!(s.finished_at.is_some());
        assert!(s.error.as_deref().unwrap().contains("MISLABELED"), "{s:?}");
    }
    for s in steps.iter().filter(|s| s.verdict == "success") {
        assert_eq!(s.step, "done");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_trials_left_undecided_are_never_learned_as_successes() {
    let env = Env::new(false).await;
    env.server.state.lock().unwrap().never_resolve = true;
    env.learner()
        .learn(&opts("LS-A", Condition::NoSkills, false))
        .await
        .unwrap();
    let st = env.server.state.lock().unwrap();
    let remote = env.space("LS-A").remote_id.unwrap();
    for s in env.steps("LS-A") {
        if s.verdict == "failed" {
            assert_eq!(s.step, "rejected", "{s:?}");
            assert!(!st.has_session(&s.session_id), "session kept: {s:?}");
        } else {
            // Undecided successes are resolved as success by the server when polled.
            assert_eq!(s.step, "done", "{s:?}");
            assert_eq!(st.task_statuses(&s.session_id), vec!["success".to_string()]);
        }
    }
    // Nothing learned from a failed trial: no Warning entries anywhere.
    for name in st.space_skill_names(&remote) {
        let md = String::from_utf8(st.skill_file(&remote, &name, "SKILL.md").unwrap()).unwrap();
        assert!(!md.contains("Avoid the"), "{name}: {md}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_never_duplicate_sessions_messages_or_uploads() {
    let env = Env::new(true).await;
    {
        let mut st = env.server.state.lock().unwrap();
        for (route, fault) in [
            ("POST /learning_spaces", Fault::DropAfter),
            ("GET /learning_spaces/{id}/skills", Fault::Status(429)),
            ("POST /agent_skills", Fault::DropAfter),
            ("POST /learning_spaces/{id}/skills", Fault::Drop),
            ("POST /session", Fault::DropAfter),
            ("POST /session", Fault::DropAfter),
            ("POST /learning_spaces/{id}/learn", Fault::DropAfter),
            ("POST /session/{session_id}/messages", Fault::DropAfter),
            ("POST /session/{session_id}/messages", Fault::Drop),
            ("GET /session/{session_id}/messages", Fault::Status(500)),
            ("POST /session/{session_id}/flush", Fault::Status(500)),
            ("POST /session/{session_id}/flush", Fault::Status(502)),
            ("POST /session/{session_id}/flush", Fault::Status(503)),
            ("POST /session/{session_id}/flush", Fault::Status(500)),
            (
                "GET /session/{session_id}/task",
                Fault::Stall(Duration::from_millis(300)),
            ),
            ("PATCH /status", Fault::DropAfter),
            ("PATCH /status", Fault::DropAfter),
            (
                "GET /learning_spaces/{id}/sessions/{session_id}",
                Fault::Status(500),
            ),
            (
                "GET /learning_spaces/{id}/sessions/{session_id}",
                Fault::Drop,
            ),
        ] {
            st.faults.push_back((route.to_string(), fault));
        }
    }
    let learner = env.learner();
    let a = learner
        .learn(&opts("LS-A", Condition::NoSkills, false))
        .await
        .unwrap();
    let b = learner
        .learn(&opts("LS-B", Condition::Curated, true))
        .await
        .unwrap();
    assert!(a.errors.is_empty() && b.errors.is_empty(), "{a:?} {b:?}");
    env.assert_learned_exactly_once("LS-A");
    env.assert_learned_exactly_once("LS-B");
    let st = env.server.state.lock().unwrap();
    assert!(st.faults.is_empty(), "faults not hit: {:?}", st.faults);
    assert_eq!(st.session_count(), 20);
    assert_eq!(st.space_ids().len(), 2, "a space was created twice");
    let c = env.store.connect().unwrap();
    let uploads = lq::uploads(&c, env.space("LS-B").id).unwrap();
    // Two default skills per space, the curated uploads once, one learned skill per task and space.
    // (LS-B's learner writes into the curated skills; LS-A gets one learned skill per task.)
    assert_eq!(st.skill_count(), 2 * 2 + uploads.len() + 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_and_a_stop_resume_at_the_exact_step() {
    let mut env = Env::new(true).await;
    // Stop the server once a few trials are through.
    let seen = Arc::new(Mutex::new(0usize));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let counter = seen.clone();
    let mut learner = env.learner();
    learner.progress = Some(Arc::new(move |_space, row| {
        if row.step == "done" {
            let mut n = counter.lock().unwrap();
            *n += 1;
            if *n == 3 {
                let _ = tx.send(());
            }
        }
    }));
    let mut o = opts("LS-A", Condition::NoSkills, false);
    o.server_wait = Duration::from_millis(400);
    let l2 = learner.clone();
    let o2 = o.clone();
    let pass = tokio::spawn(async move { l2.learn(&o2).await });
    rx.recv().await.unwrap();
    env.server.stop().await;
    let err = pass.await.unwrap().unwrap_err();
    assert!(matches!(err, LearnError::Unavailable { .. }), "{err}");
    assert!(
        err.to_string().contains("127.0.0.1"),
        "names the endpoint: {err}"
    );
    let mid = env.steps("LS-A");
    let done = mid.iter().filter(|s| s.step == "done").count();
    assert!((3..10).contains(&done), "{done} done");
    assert!(env.space("LS-A").error.is_some());

    // Back up: the next pass finishes, then a stop in the middle of another space.
    env.server.restart().await;
    learner.progress = None;
    let report = learner.learn(&o).await.unwrap();
    assert!(report.errors.is_empty(), "{report:?}");
    env.assert_learned_exactly_once("LS-A");
    assert_eq!(env.space("LS-A").error, None);

    let stopper = learner.clone();
    stopper.cancel.cancel();
    let err = stopper
        .learn(&opts("LS-B", Condition::Curated, true))
        .await
        .unwrap_err();
    assert!(matches!(err, LearnError::Cancelled), "{err}");
    let fresh = env.learner();
    fresh
        .learn(&opts("LS-B", Condition::Curated, true))
        .await
        .unwrap();
    env.assert_learned_exactly_once("LS-B");
    assert_eq!(env.server.state.lock().unwrap().session_count(), 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_error_costs_one_trial_not_the_pass() {
    let env = Env::new(true).await;
    {
        let mut st = env.server.state.lock().unwrap();
        for _ in 0..3 {
            st.faults
                .push_back(("/session/{session_id}/flush".into(), Fault::Status(400)));
        }
    }
    let learner = env.learner();
    let mut o = opts("LS-A", Condition::NoSkills, false);
    o.max_tries = 3;
    let report = learner.learn(&o).await.unwrap();
    assert_eq!(report.errors.len(), 1, "{report:?}");
    assert!(report.errors[0].contains("flush"), "{report:?}");
    let steps = env.steps("LS-A");
    let stuck: Vec<_> = steps.iter().filter(|s| s.step != "done").collect();
    assert_eq!(stuck.len(), 1);
    assert_eq!(stuck[0].step, Step::Messages.as_str());
    assert_eq!(env.space("LS-A").state, "learning");
    // The next pass retries it.
    learner.learn(&o).await.unwrap();
    env.assert_learned_exactly_once("LS-A");
    assert_eq!(env.space("LS-A").state, "learned");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_key_stops_setup_with_a_clear_error() {
    let env = Env::new(true).await;
    let client = Client::new(&AcontextConfig {
        base_url: env.server.base_url(),
        api_key: "sk-ac-wrong".into(),
        timeout: Duration::from_secs(5),
        retries: 0,
        max_backoff: Duration::from_millis(10),
    })
    .unwrap();
    let learner = Learner {
        client,
        ..env.learner()
    };
    let err = learner
        .learn(&opts("LS-A", Condition::NoSkills, false))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("401") && text.contains("/learning_spaces"),
        "{text}"
    );
    assert!(!text.contains("sk-ac-wrong"));
    assert_eq!(env.server.state.lock().unwrap().session_count(), 0);
    let _ = StatusMode::Auto;
}

/// The learning statuses the stand-in reported for each session polled, in order, from its log.
fn learning_statuses(env: &Env) -> std::collections::BTreeMap<String, Vec<String>> {
    let st = env.server.state.lock().unwrap();
    let mut out: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for e in st.log.iter().filter(|e| {
        e.route
            .ends_with("/learning_spaces/{id}/sessions/{session_id}")
    }) {
        let data = &e.response["data"];
        let (sid, status) = (
            data["session_id"].as_str().unwrap_or_default().to_string(),
            data["status"].as_str().unwrap_or_default().to_string(),
        );
        let seen = out.entry(sid).or_default();
        if seen.last() != Some(&status) {
            seen.push(status);
        }
    }
    out
}

/// Acontext as released (main, SDK 0.1.22): verdicts go as project criteria and verdict lines,
/// and the pipeline polls every learning status the released server reports — `distilling`,
/// `skill_writing`, `queued` (the space's skill agent busy) — until `completed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_released_api_learns_through_its_learning_statuses() {
    let env = Env::with_api(Api::Released).await;
    env.server.state.lock().unwrap().queue_learning = true;
    let report = env
        .learner()
        .learn(&opts("LS-B", Condition::Curated, true))
        .await
        .unwrap();
    assert!(
        report.errors.is_empty() && report.mislabeled.is_empty(),
        "{report:?}"
    );
    assert_eq!(env.space("LS-B").status_mode.as_deref(), Some("criteria"));
    env.assert_learned_exactly_once("LS-B");
    let statuses = learning_statuses(&env);
    assert_eq!(statuses.len(), 10);
    for (sid, seen) in &statuses {
        assert_eq!(
            seen,
            &["distilling", "skill_writing", "queued", "completed"],
            "{sid}"
        );
    }
    let st = env.server.state.lock().unwrap();
    // The probe session had task tracking off, and is gone.
    let probe = st
        .log
        .iter()
        .find(|e| {
            e.route.ends_with("/session") && !e.request["configs"]["skillscope"]["probe"].is_null()
        })
        .expect("probe");
    assert_eq!(probe.request["disable_task_tracking"], true);
    assert_eq!(probe.response["data"]["disable_task_tracking"], true);
    assert_eq!(st.session_count(), 10);
}

/// The `skill-bench` branch as it is: no project criteria, no download_zip, a duplicate
/// `use_uuid` refused — verdicts go by the status PATCH, learning statuses are `pending →
/// running → completed`, and the export falls back to file-by-file downloads (binary files
/// through presigned URLs, fetched without the key).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_skill_bench_branch_learns_with_the_status_patch() {
    let env = Env::with_api(Api::SkillBench).await;
    let learner = env.learner();
    let (oa, ob) = (
        opts("LS-A", Condition::NoSkills, false),
        opts("LS-B", Condition::Curated, true),
    );
    let (a, b) = tokio::join!(learner.learn(&oa), learner.learn(&ob));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(a.errors.is_empty() && b.errors.is_empty(), "{a:?} {b:?}");
    assert!(a.mislabeled.is_empty() && b.mislabeled.is_empty());
    for label in ["LS-A", "LS-B"] {
        assert_eq!(env.space(label).status_mode.as_deref(), Some("patch"));
        env.assert_learned_exactly_once(label);
    }
    let statuses = learning_statuses(&env);
    assert_eq!(statuses.len(), 20);
    for (sid, seen) in &statuses {
        assert_eq!(seen, &["running", "completed"], "{sid}");
    }
    {
        let st = env.server.state.lock().unwrap();
        assert!(
            st.log.iter().all(|e| !e.route.contains("/project/configs")
                && !e.route.contains("download_zip")),
            "the branch has neither route"
        );
    }
    // Export of LS-A (its `<task>-learned` skills): file by file, the ZIP route missing.
    let remote = env.space("LS-A").remote_id.unwrap();
    env.server.state.lock().unwrap().put_skill_file(
        &remote,
        "ledger-code-mapping-learned",
        "assets/blob.bin",
        &[0, 159, 146, 150],
    );
    let out = env._dir.path().join("export");
    let r = skillscope::acontext::export::export_space(
        &env.client,
        &remote,
        &out,
        &skillscope::acontext::export::ExportLimits::default(),
    )
    .await
    .unwrap();
    assert!(r.refused.is_empty(), "{:?}", r.refused);
    assert!(!r.skills.is_empty());
    for s in &r.skills {
        assert!(out.join(&s.dir_name).join("SKILL.md").is_file(), "{s:?}");
    }
    assert_eq!(
        std::fs::read(out.join("ledger-code-mapping-learned/assets/blob.bin")).unwrap(),
        [0, 159, 146, 150]
    );
}
