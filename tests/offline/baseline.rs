//! `experiment --baseline-from RUN` without Docker: a finished native run written through the
//! store (as the engine writes one) and an imported Harbor job are checked against the plan's
//! round 1 computed from the example tasks; every differing field is refused by name with both
//! values unless `--allow-drift` accepts it, and what was accepted is recorded.

use std::path::Path;

use skillscope::acontext::learn::LearnOptions;
use skillscope::config::RunSettings;
use skillscope::domain::provenance::Field;
use skillscope::engine::RunRequest;
use skillscope::experiment::ExperimentSetup;
use skillscope::experiment::baseline::{BaselineFrom, check, planned};
use skillscope::experiment::plan::Plan;
use skillscope::import::{ImportOptions, import};
use skillscope::skillsbench::{Catalog, Condition, TaskSet};
use skillscope::store::learning as lq;
use skillscope::store::queries::{self, NewRun, TrialPatch};
use skillscope::store::{Outcome, RunTaskRow, TrialStatus};

use crate::support::common::Scratch;

/// The experiment's setup over the tasks in `tasks` with `model`.
fn setup(tasks: &Path, model: Option<&str>) -> ExperimentSetup {
    let plan: Plan = toml::from_str("name = \"reuse\"\ntrials = 1\n").unwrap();
    ExperimentSetup {
        plan,
        round1: RunRequest {
            name: None,
            tasks_dir: tasks.to_path_buf(),
            task_filter: Vec::new(),
            conditions: Vec::new(),
            n_trials: 1,
            agent: "oracle".into(),
            model: model.map(str::to_string),
            jobs_dir: tasks.join("../jobs"),
            catalog: Catalog::shipped(),
            settings: RunSettings::default(),
            stay_alive: None,
            resume_command: None,
            pin: Default::default(),
            sequential: None,
        },
        exports_root: tasks.join("../exports"),
        learn: LearnOptions::new("", "", ""),
        baseline: None,
    }
}

fn round1() -> Vec<Condition> {
    vec![Condition::NoSkills, Condition::Curated]
}

/// A finished native run `name` over the example tasks in `tasks`, one passing trial per task
/// and condition, each with its trajectory, task digest and the oracle's agent settings with
/// its version replaced by `version` when given.
fn native_run(s: &Scratch, name: &str, tasks: &Path, version: Option<&str>) {
    let conn = s.store.connect().unwrap();
    let mut set = TaskSet::load(tasks, &Catalog::shipped(), &[]).unwrap();
    set.compute_digests();
    let run = queries::insert_run(
        &conn,
        &NewRun {
            name: name.into(),
            tasks_dir: tasks.display().to_string(),
            agent: "oracle".into(),
            model: None,
            n_trials: 1,
            conditions: vec!["no-skills".into(), "curated".into()],
            jobs_dir: s.jobs().display().to_string(),
            settings: serde_json::json!({}),
        },
    )
    .unwrap();
    let rows: Vec<RunTaskRow> = set
        .tasks
        .iter()
        .map(|t| RunTaskRow {
            task_id: t.id.clone(),
            domain: t.domain.clone(),
            difficulty: t.difficulty.clone(),
            path: t.dir.display().to_string(),
            problems: vec![],
            digest: t.digest.clone(),
        })
        .collect();
    queries::upsert_run_tasks(&conn, run.id, &rows).unwrap();
    queries::plan_trials(&conn, &run, &set.ids(), &|k, a| {
        format!("{}__{}-{}-{a}", k.task_id, k.condition, k.trial_index)
    })
    .unwrap();
    let mut settings = skillscope::runner::agent_by_name("oracle", None, &Default::default())
        .unwrap()
        .settings();
    if let Some(v) = version {
        settings["version"] = serde_json::json!(v);
    }
    for t in queries::current_trials(&conn, run.id).unwrap() {
        let dir = s.jobs().join(name).join(&t.trial_name);
        std::fs::create_dir_all(dir.join("agent")).unwrap();
        std::fs::write(dir.join("agent/trajectory.json"), "{}").unwrap();
        let digest = rows
            .iter()
            .find(|r| r.task_id == t.task_id)
            .unwrap()
            .digest
            .clone();
        queries::finish_trial(
            &conn,
            t.id,
            &TrialPatch {
                status: Some(TrialStatus::Done),
                outcome: Some(Outcome::Pass),
                reward: Some(1.0),
                trial_dir: Some(dir.display().to_string()),
                agent_settings: Some(settings.clone()),
                task_digest: digest,
                ..Default::default()
            },
        )
        .unwrap();
    }
    queries::release_run(&conn, run.id, true, None).unwrap();
}

fn from(run: &str, allow: &[Field]) -> BaselineFrom {
    BaselineFrom {
        run: run.into(),
        allow: allow.to_vec(),
    }
}

#[tokio::test]
async fn a_matching_native_run_is_accepted_with_nothing_to_record() {
    let s = Scratch::new();
    let tasks = skillscope::skillsbench::examples::materialize(s.dir.path()).unwrap();
    native_run(&s, "base", &tasks, None);
    let plan = planned(&setup(&tasks, None), &round1()).await.unwrap();
    let row = check(&s.store, "reuse", &from("base", &[]), &plan).unwrap();
    assert_eq!((row.run.as_str(), row.source.as_str()), ("base", "native"));
    assert!(row.accepted.is_empty(), "{:?}", row.accepted);
    assert_eq!(row.db, s.db().display().to_string());
}

#[tokio::test]
async fn a_task_whose_digest_changed_is_refused_by_name_with_both_digests() {
    let s = Scratch::new();
    let tasks = skillscope::skillsbench::examples::materialize(s.dir.path()).unwrap();
    native_run(&s, "base", &tasks, None);
    let set = TaskSet::load(&tasks, &Catalog::shipped(), &[]).unwrap();
    let changed = &set.tasks[0];
    std::fs::write(
        changed.dir.join("instruction.md"),
        "Something else entirely.\n",
    )
    .unwrap();
    let plan = planned(&setup(&tasks, None), &round1()).await.unwrap();
    let err = check(&s.store, "reuse", &from("base", &[]), &plan)
        .unwrap_err()
        .to_string();
    let conn = s.store.connect().unwrap();
    let run = queries::find_run(&conn, "base").unwrap().unwrap();
    let old = queries::run_tasks(&conn, run.id)
        .unwrap()
        .into_iter()
        .find(|t| t.task_id == changed.id)
        .unwrap()
        .digest
        .unwrap();
    assert!(
        err.contains(&format!(
            "task-digest of {}: run {old} ≠ plan sha256:",
            changed.id
        )),
        "{err}"
    );
    assert!(err.contains("--allow-drift task-digest"), "{err}");
    // Only that task, only that field.
    assert_eq!(err.matches("task-digest of").count(), 1, "{err}");
    for other in ["harness-version", "model:", "trials:", "conditions:"] {
        assert!(!err.contains(other), "{other} in {err}");
    }

    // Accepted, it is what the record keeps.
    let row = check(
        &s.store,
        "reuse",
        &from("base", &[Field::TaskDigest]),
        &plan,
    )
    .unwrap();
    assert_eq!(row.accepted.len(), 1);
    assert_eq!(row.accepted[0].field, Field::TaskDigest);
    assert_eq!(row.accepted[0].task.as_deref(), Some(changed.id.as_str()));
    lq::put_baseline(&conn, &row).unwrap();
    let stored = lq::find_baseline(&conn, "reuse").unwrap().unwrap();
    assert_eq!(stored.accepted, row.accepted);
    assert!(!stored.checked_at.is_empty());
}

#[tokio::test]
async fn a_different_model_is_refused_by_name() {
    let s = Scratch::new();
    let tasks = skillscope::skillsbench::examples::materialize(s.dir.path()).unwrap();
    native_run(&s, "base", &tasks, None);
    let plan = planned(&setup(&tasks, Some("frontier-2")), &round1())
        .await
        .unwrap();
    let err = check(&s.store, "reuse", &from("base", &[]), &plan)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("model: run not recorded ≠ plan frontier-2"),
        "{err}"
    );
    assert!(err.contains("--allow-drift model"), "{err}");
}

#[tokio::test]
async fn a_harness_version_bump_is_refused_by_name_with_both_versions() {
    let s = Scratch::new();
    let tasks = skillscope::skillsbench::examples::materialize(s.dir.path()).unwrap();
    native_run(&s, "base", &tasks, Some("0.0.1-old"));
    let plan = planned(&setup(&tasks, None), &round1()).await.unwrap();
    let now = skillscope::runner::agent_by_name("oracle", None, &Default::default())
        .unwrap()
        .settings()["version"]
        .as_str()
        .unwrap()
        .to_string();
    let err = check(&s.store, "reuse", &from("base", &[]), &plan)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("harness-version: run 0.0.1-old ≠ plan {now}")),
        "{err}"
    );
    // More trials per task is a second field, named in the same error.
    let mut more = setup(&tasks, None);
    more.round1.n_trials = 3;
    let plan = planned(&more, &round1()).await.unwrap();
    let err = check(&s.store, "reuse", &from("base", &[]), &plan)
        .unwrap_err()
        .to_string();
    assert!(err.contains("harness-version: run 0.0.1-old"), "{err}");
    assert!(err.contains("trials: run 1 ≠ plan 3"), "{err}");
    assert!(
        err.contains("--allow-drift harness-version --allow-drift trials"),
        "{err}"
    );
    let ok = check(
        &s.store,
        "reuse",
        &from("base", &[Field::HarnessVersion, Field::Trials]),
        &plan,
    )
    .unwrap();
    assert_eq!(ok.accepted.len(), 2);
}

#[tokio::test]
async fn an_imported_job_without_trajectories_is_refused_with_the_reason() {
    let s = Scratch::new();
    let tasks = skillscope::skillsbench::examples::materialize(s.dir.path()).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/harbor-0.26/harbor026-oracle-noskills-7f3a2c");
    let store = s.store.clone();
    tokio::task::spawn_blocking(move || {
        import(
            &store,
            &ImportOptions {
                roots: vec![fixture],
                condition: None,
                run: Some("harbor-base".into()),
                catalog: Catalog::shipped(),
                batch: 3,
            },
        )
    })
    .await
    .unwrap()
    .unwrap();
    let plan = planned(&setup(&tasks, None), &round1()).await.unwrap();
    let err = check(&s.store, "reuse", &from("harbor-base", &[]), &plan)
        .unwrap_err()
        .to_string();
    assert!(err.contains("run harbor-base (harbor-import)"), "{err}");
    for want in [
        "tasks: run 2 task(s)",
        "conditions: run no-skills ≠ plan no-skills, curated",
        "harness-version: run not recorded ≠ plan ",
        "agent-settings: run not recorded ≠ plan none",
        "trajectories: run 2 of 2 judged trial(s) without agent/trajectory.json",
        "; learning reads every judged trial's trajectory",
    ] {
        assert!(err.contains(want), "{want:?} in {err}");
    }
    // A run that is not in the database is named with the database.
    let err = check(&s.store, "reuse", &from("nowhere", &[]), &plan)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--baseline-from nowhere: no run of that name in"),
        "{err}"
    );
}

#[test]
fn allow_drift_needs_a_baseline_and_a_known_field() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_skillscope"))
            .args(args)
            .current_dir(dir.path())
            .env_remove("SKILLSCOPE_DB")
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    let out = run(&["experiment", "p.toml", "--allow-drift", "model"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--baseline-from <RUN>"), "{err}");
    let out = run(&[
        "experiment",
        "p.toml",
        "--baseline-from",
        "r",
        "--allow-drift",
        "colour",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("unknown drift field \"colour\" (one of: tasks, task-digest,"),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "nothing made: {left:?}");
}
