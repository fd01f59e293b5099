//! Pinned task sets (`run --task-set`): the tasks folder is checked against the set before
//! anything runs — a task whose digest differs or that is missing refuses the run by name, and
//! `--allow-drift` runs it with what differed recorded; resuming a run whose task folders changed
//! since it began is refused the same way. No Docker is touched: the refusals come first, and the
//! runs that are allowed point at a Docker endpoint that does not exist and wait for it 0 s, so
//! they register, record and stop.

use std::path::{Path, PathBuf};

use skillscope::engine::{Engine, EngineError, Pinning, RunRequest};
use skillscope::skillsbench::Condition;
use skillscope::skillsbench::pinned::PinnedSet;
use skillscope::store::queries;
use tokio_util::sync::CancellationToken;

use crate::support::common::Scratch;

/// Harbor 0.26's digests (`Packager.compute_content_hash`) of two fixture tasks.
const PASSES: &str = "sha256:32e0c0157002203a1ff62e7370baac7de225e81d757e8c557a132c7c86217dd5";
const FAILS: &str = "sha256:b7cde98ac14f49d39da724e1f5209de4ba6df5498f184402a5f889316dafbd11";

/// A copy of fixture tasks `names` in a folder of its own (so a test can change them).
fn copy_tasks(root: &Path, names: &[&str]) -> PathBuf {
    let dst = root.join("tasks");
    for n in names {
        copy_dir(&crate::support::common::fixtures().join(n), &dst.join(n));
    }
    dst
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
        }
    }
}

/// A request over `tasks` that can only register: Docker is an endpoint that does not exist,
/// waited for 0 s.
fn request(s: &Scratch, name: &str, tasks: &Path, pin: Pinning) -> RunRequest {
    let mut req = s.request(name, &[], vec![Condition::NoSkills], 1);
    req.tasks_dir = tasks.to_path_buf();
    req.settings.docker_hosts = vec!["unix:///nonexistent/skillscope-test.sock".into()];
    req.settings.docker_wait_secs = Some(0);
    req.pin = pin;
    req
}

fn pinning(file: &Path, allow_drift: bool) -> Pinning {
    Pinning {
        set: Some(PinnedSet::read(file.to_str().unwrap()).unwrap()),
        allow_drift,
    }
}

async fn run(s: &Scratch, req: RunRequest) -> Result<(), EngineError> {
    Engine::new(s.store.clone())
        .run(
            crate::support::common::prepared(req),
            CancellationToken::new(),
        )
        .await
        .map(|_| ())
}

#[tokio::test]
async fn a_task_that_differs_from_the_set_is_refused_by_name() {
    let s = Scratch::new();
    let tasks = copy_tasks(s.dir.path(), &["passes", "fails"]);
    // A SkillsBench registry.json pins BenchFlow's digests: computed here for `passes`, a wrong
    // one for `fails`, and a task the folder lacks.
    let bench =
        skillscope::skillsbench::digest::benchflow::task_digest(&tasks.join("passes")).unwrap();
    let wrong = format!("sha256:{}", "0".repeat(64));
    let registry = s.dir.path().join("registry.json");
    std::fs::write(
        &registry,
        serde_json::json!([{
            "name": "skillsbench", "version": "1.1", "git_tag": "v1.1",
            "tasks": [
                {"name": "passes", "git_url": "https://github.com/x/y.git", "git_commit_id": "a",
                 "path": "tasks/passes", "digest": bench},
                {"name": "fails", "git_url": "https://github.com/x/y.git", "git_commit_id": "a",
                 "path": "tasks/fails", "digest": wrong},
                {"name": "gone", "git_url": "https://github.com/x/y.git", "git_commit_id": "a",
                 "path": "tasks/gone", "digest": wrong},
            ]
        }])
        .to_string(),
    )
    .unwrap();
    let err = run(&s, request(&s, "pinned", &tasks, pinning(&registry, false)))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, EngineError::TaskSet(_)), "{text}");
    assert!(
        text.contains("task set skillsbench@1.1")
            && text.contains("2 of 3 pinned task(s) do not match")
            && text.contains("fails (digest differs:")
            && text.contains("gone (missing from the tasks folder)")
            && !text.contains("passes (")
            && text.contains("--allow-drift"),
        "{text}"
    );
    // Nothing ran, nothing was recorded.
    let c = s.store.connect().unwrap();
    assert!(queries::find_run(&c, "pinned").unwrap().is_none());

    // --allow-drift runs the tasks the folder has and records what differed.
    let _ = run(&s, request(&s, "pinned", &tasks, pinning(&registry, true))).await;
    let runrow = queries::find_run(&c, "pinned")
        .unwrap()
        .expect("registered");
    let pin = runrow.task_set.expect("the pin is recorded");
    assert_eq!(pin.label(), "skillsbench@1.1");
    assert_eq!(pin.algorithm, "benchflow");
    assert!(pin.allow_drift);
    let drifted: Vec<(&str, &str)> = pin
        .drift
        .iter()
        .map(|d| (d.task.as_str(), d.reason.as_str()))
        .collect();
    assert_eq!(
        drifted,
        [
            ("fails", "digest differs"),
            ("gone", "missing from the tasks folder")
        ]
    );
    // The run's tasks carry Harbor's digest as it was when the run began.
    let digests: Vec<(String, Option<String>)> = queries::run_tasks(&c, runrow.id)
        .unwrap()
        .into_iter()
        .map(|t| (t.task_id, t.digest))
        .collect();
    assert_eq!(
        digests,
        [
            ("fails".to_string(), Some(FAILS.to_string())),
            ("passes".to_string(), Some(PASSES.to_string()))
        ]
    );
    let events: Vec<String> = queries::recent_events(&c, runrow.id, 100)
        .unwrap()
        .into_iter()
        .map(|e| e.2)
        .collect();
    assert!(
        events
            .iter()
            .any(|e| e.contains("--allow-drift runs tasks that do not match it: fails")),
        "{events:#?}"
    );
}

#[tokio::test]
async fn a_list_of_harbor_digests_pins_and_leaves_other_tasks_out() {
    let s = Scratch::new();
    let tasks = copy_tasks(s.dir.path(), &["passes", "fails"]);
    // `tasks --json`'s shape: ids and Harbor digests.
    let list = s.dir.path().join("set.json");
    std::fs::write(
        &list,
        serde_json::json!({"name": "mine", "version": "2", "digest_algorithm": "harbor-0.26",
                           "tasks": [{"id": "passes", "digest": PASSES}]})
        .to_string(),
    )
    .unwrap();
    let _ = run(&s, request(&s, "listed", &tasks, pinning(&list, false))).await;
    let c = s.store.connect().unwrap();
    let runrow = queries::find_run(&c, "listed")
        .unwrap()
        .expect("registered");
    assert_eq!(runrow.task_set.as_ref().unwrap().label(), "mine@2");
    assert!(runrow.task_set.as_ref().unwrap().drift.is_empty());
    let ids: Vec<String> = queries::run_tasks(&c, runrow.id)
        .unwrap()
        .into_iter()
        .map(|t| t.task_id)
        .collect();
    assert_eq!(ids, ["passes"], "the unpinned task is left out");
    // A --task the set does not pin is refused by name.
    let mut req = request(&s, "listed-2", &tasks, pinning(&list, false));
    req.task_filter = vec!["fails".into()];
    let err = run(&s, req).await.unwrap_err().to_string();
    assert!(
        err.contains("task set mine@2") && err.contains("does not pin fails"),
        "{err}"
    );
}

#[tokio::test]
async fn resuming_after_a_task_changed_is_refused_unless_drift_is_allowed() {
    let s = Scratch::new();
    let tasks = copy_tasks(s.dir.path(), &["passes", "fails"]);
    let _ = run(&s, request(&s, "changing", &tasks, Pinning::default())).await;
    std::fs::write(
        tasks.join("fails/instruction.md"),
        "Edited after the run began.\n",
    )
    .unwrap();
    let err = run(&s, request(&s, "changing", &tasks, Pinning::default()))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("the tasks folder changed since the run began")
            && err.contains("fails (changed since the run began: sha256:")
            && !err.contains("passes (")
            && err.contains("--allow-drift"),
        "{err}"
    );
    let allowed = Pinning {
        set: None,
        allow_drift: true,
    };
    let _ = run(&s, request(&s, "changing", &tasks, allowed)).await;
    let c = s.store.connect().unwrap();
    let runrow = queries::find_run(&c, "changing").unwrap().unwrap();
    let events: Vec<String> = queries::recent_events(&c, runrow.id, 100)
        .unwrap()
        .into_iter()
        .map(|e| e.2)
        .collect();
    assert!(
        events
            .iter()
            .any(|e| e.contains("resumed with --allow-drift") && e.contains("fails (changed")),
        "{events:#?}"
    );
    // The digest the run began with is kept.
    let fails = queries::run_tasks(&c, runrow.id)
        .unwrap()
        .into_iter()
        .find(|t| t.task_id == "fails")
        .unwrap();
    assert_eq!(fails.digest.as_deref(), Some(FAILS));
}

#[test]
fn task_set_files_name_every_wrong_entry() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.json");
    std::fs::write(
        &f,
        r#"[{"name": "skillsbench", "version": "1.1", "tasks": [
            {"path": "tasks/a", "digest": "sha256:XYZ"},
            {"digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000"},
            {"path": "tasks/c"}]}]"#,
    )
    .unwrap();
    let err = PinnedSet::read(f.to_str().unwrap())
        .unwrap_err()
        .to_string();
    for part in [
        "bad.json",
        "[0].tasks[0].digest: expected sha256:<64 lowercase hex digits>, found \"sha256:XYZ\"",
        "[0].tasks[1].path: expected a task name",
        "[0].tasks[2].digest: expected a digest string",
    ] {
        assert!(err.contains(part), "{part} missing from {err}");
    }
    // Several datasets: one is chosen with FILE#NAME@VERSION.
    let two = dir.path().join("registry.json");
    let task = |d: &str| serde_json::json!({"path": "tasks/t", "digest": d});
    std::fs::write(
        &two,
        serde_json::json!([
            {"name": "skillsbench", "version": "1.0", "tasks": [task(PASSES)]},
            {"name": "skillsbench", "version": "1.1", "tasks": [task(FAILS)]},
        ])
        .to_string(),
    )
    .unwrap();
    let err = PinnedSet::read(two.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("skillsbench@1.0, skillsbench@1.1") && err.contains("FILE#NAME@VERSION"),
        "{err}"
    );
    let set = PinnedSet::read(&format!("{}#skillsbench@1.1", two.display())).unwrap();
    assert_eq!(set.tasks["t"], FAILS);
    // An AgentBeats task set and plain text lines.
    let ab = dir.path().join("skillsbench-v1.1.json");
    std::fs::write(
        &ab,
        serde_json::json!({"schema_version": "skillsbench.agentbeats.task_set.v1",
            "source_registry": {"name": "skillsbench", "version": "1.1"},
            "tasks": [{"task_id": "t", "task_digest": PASSES}]})
        .to_string(),
    )
    .unwrap();
    let set = PinnedSet::read(ab.to_str().unwrap()).unwrap();
    assert_eq!(
        (set.label(), set.algorithm.as_str()),
        ("skillsbench@1.1".to_string(), "benchflow")
    );
    let txt = dir.path().join("pins.txt");
    std::fs::write(
        &txt,
        format!("# mine\npasses {PASSES}\n\nfails {FAILS}  # edited\n"),
    )
    .unwrap();
    let set = PinnedSet::read(txt.to_str().unwrap()).unwrap();
    assert_eq!(
        (set.name.as_str(), set.tasks.len(), set.algorithm.as_str()),
        ("pins", 2, "harbor-0.26")
    );
}
