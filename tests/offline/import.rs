//! Importing Harbor job folders: the real published SkillsBench outputs in `../shared/skillsbench`
//! (pass rates checked against an independent computation from the raw result.json files), re-import
//! as a no-op, broken folders reported without losing the rest, skill use from trajectories, and
//! trajectory summaries of real trials.

use crate::support::common;
use common::shared;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use skillscope::analysis::metrics::summarize_planned;
use skillscope::harbor::atif::Trajectory;
use skillscope::harbor::ctrf::Report;
use skillscope::harbor::summary::{DEFAULT_LIMIT, SummaryInput, summarize as summarize_trajectory};
use skillscope::import::{ImportOptions, import};
use skillscope::skillsbench::Catalog;
use skillscope::store::{Outcome, Store, queries};

/// Harbor job folders only (`published/` also holds a per-trial CSV and a results registry).
fn real_roots() -> Vec<PathBuf> {
    vec![
        shared().join("skillsbench/sample-jobs"),
        shared().join("skillsbench/published/shenghan/gemini-cli"),
    ]
}

fn opts(roots: Vec<PathBuf>) -> ImportOptions {
    ImportOptions {
        roots,
        condition: None,
        run: None,
        catalog: Catalog::shipped(),
        batch: 3,
    }
}

fn files_named(dir: &Path, name: &str, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files_named(&p, name, out);
        } else if p.file_name().is_some_and(|n| n == name) {
            out.push(p);
        }
    }
}

/// The pass rates computed straight from the files, without skillscope: trial results grouped by
/// agent × model; condition "no-skills" when the path says "noskills", else "curated"; per
/// condition, the mean over the tasks *that condition* has trials of (each job planned the trials
/// it holds) of each task's mean reward — Method D over each condition's own tasks, a task the
/// condition never ran left out rather than counted 0.
/// task → rewards of its trials.
type PerTask = BTreeMap<String, Vec<f64>>;

fn by_hand() -> BTreeMap<(String, String), f64> {
    let mut results = Vec::new();
    for r in real_roots() {
        files_named(&r, "result.json", &mut results);
    }
    // (agent, model) -> condition -> task -> rewards
    let mut groups: BTreeMap<(String, String), BTreeMap<String, PerTask>> = BTreeMap::new();
    for f in results {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let Some(task) = v["task_name"].as_str() else {
            continue;
        };
        let agent = v["agent_info"]["name"].as_str().unwrap().to_string();
        let model = v["agent_info"]["model_info"]["name"]
            .as_str()
            .unwrap()
            .to_string();
        let cond = if f.to_string_lossy().contains("noskills") {
            "no-skills"
        } else {
            "curated"
        };
        let reward = v["verifier_result"]["rewards"]["reward"]
            .as_f64()
            .unwrap_or(0.0);
        groups
            .entry((agent, model))
            .or_default()
            .entry(cond.into())
            .or_default()
            .entry(task.into())
            .or_default()
            .push(reward);
    }
    let mut out = BTreeMap::new();
    for ((agent, model), conds) in groups {
        for (cond, per_task) in &conds {
            let sum: f64 = per_task
                .values()
                .map(|r| r.iter().sum::<f64>() / r.len() as f64)
                .sum();
            out.insert(
                (format!("{agent}|{model}"), cond.clone()),
                sum / per_task.len() as f64,
            );
        }
    }
    out
}

#[test]
fn real_published_jobs_import_with_the_pass_rates_of_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("i.db")).unwrap();
    let report = import(&store, &opts(real_roots())).unwrap();
    assert_eq!(report.trials_seen, 8, "{report:?}");
    assert_eq!(report.jobs, 5, "{report:?}");
    assert_eq!(report.imported, 8);
    assert!(report.broken.is_empty(), "{:?}", report.broken);
    // The README beside the job folders is named, with why it was not imported.
    assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
    assert!(report.skipped[0].0.ends_with("sample-jobs/README.md"));
    assert!(
        report.skipped[0]
            .1
            .contains("expected a Harbor jobs folder")
    );
    assert_eq!(report.missing_trajectory.len(), 4);
    assert_eq!(report.unknown_condition, 0);

    let conn = store.connect().unwrap();
    let expected = by_hand();
    let mut checked = 0;
    for name in &report.runs {
        let run = queries::find_run(&conn, name).unwrap().unwrap();
        assert_eq!(run.source, "harbor-import");
        let tasks: Vec<String> = queries::run_tasks(&conn, run.id)
            .unwrap()
            .into_iter()
            .map(|t| t.task_id)
            .collect();
        let trials = queries::current_trials(&conn, run.id).unwrap();
        let plan = queries::trial_plan(&conn, &run).unwrap();
        for s in summarize_planned(&tasks, &plan, &run.conditions, &trials) {
            let key = (
                format!("{}|{}", run.agent, run.model.clone().unwrap()),
                s.condition.clone(),
            );
            let want = expected[&key];
            assert!(
                (s.pass_rate - want).abs() < 1e-12,
                "{key:?}: {} vs {want}",
                s.pass_rate
            );
            checked += 1;
        }
    }
    assert_eq!(checked, expected.len());

    // Each trial's reward, tokens and outcome come from its file.
    let all: Vec<_> = report
        .runs
        .iter()
        .flat_map(|n| {
            queries::current_trials(&conn, queries::find_run(&conn, n).unwrap().unwrap().id)
                .unwrap()
        })
        .collect();
    let mut results = Vec::new();
    for r in real_roots() {
        files_named(&r, "result.json", &mut results);
    }
    for f in results {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let Some(id) = v["id"].as_str().filter(|_| v["trial_name"].is_string()) else {
            continue;
        };
        let row = all
            .iter()
            .find(|t| t.import_key.as_deref() == Some(id))
            .expect("imported");
        assert_eq!(
            row.reward,
            v["verifier_result"]["rewards"]["reward"].as_f64(),
            "{}",
            f.display()
        );
        assert_eq!(
            row.n_input_tokens,
            v["agent_result"]["n_input_tokens"].as_i64()
        );
        assert_eq!(
            row.n_output_tokens,
            v["agent_result"]["n_output_tokens"].as_i64()
        );
        let pass = row.reward.is_some_and(|r| r >= 1.0);
        assert_eq!(row.outcome == Some(Outcome::Pass), pass);
        assert!(row.trial_dir.as_deref().is_some_and(|d| f.starts_with(d)));
    }
    // Trajectories were read: step counts match the files.
    let with_traj = all.iter().filter(|t| t.n_steps.is_some()).count();
    assert_eq!(with_traj, 4);

    // Importing again adds nothing.
    let before = all.len();
    let again = import(&store, &opts(real_roots())).unwrap();
    assert_eq!((again.imported, again.already_present), (0, 8));
    let count: i64 = conn
        .query_row("SELECT COUNT(*) FROM trials", [], |r| r.get(0))
        .unwrap();
    assert_eq!(count as usize, before);
    store.writer().stop();
}

/// `import published/` reads everything in it: the Harbor job folders, the per-trial CSV and the
/// results registry beside them.
#[test]
fn a_folder_imports_every_format_inside_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("i.db")).unwrap();
    let report = import(&store, &opts(vec![shared().join("skillsbench/published")])).unwrap();
    assert_eq!(report.trials_seen, 6, "Harbor trial folders: {report:?}");
    let mut formats: Vec<&str> = report.files.iter().map(|f| f.format.as_str()).collect();
    formats.sort();
    assert_eq!(formats, ["csv", "registry"]);
    assert!(report.files.iter().all(|f| f.imported > 0));
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    // With --condition, the result files are named as skipped (their rows name conditions).
    let dir2 = tempfile::tempdir().unwrap();
    let store2 = Store::open(&dir2.path().join("i.db")).unwrap();
    let mut o = opts(vec![shared().join("skillsbench/published")]);
    o.condition = Some("curated".into());
    let report = import(&store2, &o).unwrap();
    assert!(report.files.is_empty());
    assert_eq!(report.skipped.len(), 2, "{:?}", report.skipped);
    assert!(
        report
            .skipped
            .iter()
            .all(|(_, why)| why.contains("--condition"))
    );
    store.writer().stop();
    store2.writer().stop();
}

#[test]
fn broken_folders_are_reported_and_the_rest_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("b.db")).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/harbor");
    let report = import(&store, &opts(vec![fixtures.clone()])).unwrap();
    let broken: Vec<String> = report
        .broken
        .iter()
        .map(|(p, why)| format!("{} {why}", p.display()))
        .collect();
    assert_eq!(report.broken.len(), 2, "{broken:#?}");
    assert!(
        broken
            .iter()
            .any(|b| b.contains("truncated__Aaaaaaa") && b.contains("not valid JSON")),
        "{broken:#?}"
    );
    assert!(
        broken
            .iter()
            .any(|b| b.contains("foreign") && b.contains("not a Harbor trial")),
        "{broken:#?}"
    );
    assert_eq!(report.imported, 2);
    assert_eq!(report.missing_trajectory.len(), 1);
    assert!(report.missing_trajectory[0].ends_with("plain-task__Bbbbbbb"));

    let conn = store.connect().unwrap();
    let run = queries::find_run(&conn, &report.runs[0]).unwrap().unwrap();
    assert_eq!(
        run.conditions,
        vec!["no-skills".to_string(), "curated".to_string()]
    );
    let trials = queries::current_trials(&conn, run.id).unwrap();
    let timeout = trials.iter().find(|t| t.task_id == "plain-task").unwrap();
    assert_eq!(timeout.outcome, Some(Outcome::AgentTimeout));
    assert_eq!(timeout.condition, "no-skills");
    assert_eq!(
        timeout.started_at.as_deref(),
        Some("2026-02-01T10:00:00.000Z")
    );
    assert_eq!(timeout.n_input_tokens, None, "null tokens stay unknown");
    let skilled = trials.iter().find(|t| t.task_id == "skilled-task").unwrap();
    assert_eq!(
        (skilled.outcome, skilled.condition.as_str()),
        (Some(Outcome::Pass), "curated")
    );
    assert_eq!(
        (skilled.tests_total, skilled.tests_passed),
        (Some(3), Some(3))
    );
    assert_eq!((skilled.n_steps, skilled.n_tool_calls), (Some(5), Some(4)));
    assert_eq!(skilled.cost_usd, Some(0.021));
    let uses = queries::skill_uses(&conn, skilled.id).unwrap();
    let kinds: Vec<(String, String)> = uses
        .iter()
        .map(|u| (u.skill.clone(), u.kind.clone()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("lab-units".into(), "invoke".into()),
            ("lab-units".into(), "read".into()),
            ("lab-units".into(), "resource".into()),
            ("lab-units".into(), "shell".into()),
        ]
    );
    store.writer().stop();
}

/// A trial whose trajectory is not ATIF is imported (its outcome counts) and named as such — not
/// listed among broken files it "skipped", which it did not.
#[test]
fn trials_with_foreign_trajectories_are_imported_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/harbor");
    let root = dir.path().join("jobs");
    for e in walkdir::WalkDir::new(&fixtures) {
        let e = e.unwrap();
        let to = root.join(e.path().strip_prefix(&fixtures).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
    let trial = root.join("job-claude-skills-y/skilled-task__Ccccccc");
    std::fs::write(
        trial.join("agent/trajectory.json"),
        r#"{"events": [{"type": "message", "text": "hi"}]}"#,
    )
    .unwrap();
    let store = Store::open(&dir.path().join("f.db")).unwrap();
    let report = import(&store, &opts(vec![root.clone()])).unwrap();
    assert_eq!(report.imported, 2, "{report:?}");
    assert_eq!(report.not_atif, vec![trial.clone()]);
    assert_eq!(report.broken.len(), 2, "only the broken files: {report:?}");
    store.writer().stop();
    // What the command prints.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .args(["import", "--db"])
        .arg(dir.path().join("cli.db"))
        .arg(&root)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("skipped 2 broken file(s)"), "{text}");
    assert!(
        text.contains(
            "1 trial(s) imported whose agent/trajectory.json is not ATIF v1.x (steps and skill use unknown):"
        ),
        "{text}"
    );
    assert!(text.contains("skilled-task__Ccccccc"), "{text}");
}

/// An imported run's trials ran elsewhere: `retry` refuses them at once (exit 1, saying why),
/// rather than queueing a command no engine can ever apply.
#[test]
fn an_imported_run_refuses_retries() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/harbor");
    let db = dir.path().join("i.db");
    let bin = env!("CARGO_BIN_EXE_skillscope");
    let out = std::process::Command::new(bin)
        .args(["import", "--db"])
        .arg(&db)
        .arg(&fixtures)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let json = std::process::Command::new(bin)
        .args(["status", "--json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let name = v["runs"][0]["run"]["name"].as_str().unwrap();
    let out = std::process::Command::new(bin)
        .args(["retry", name, "--failed", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("was imported"), "{err}");
}

#[test]
fn summary_of_a_real_trajectory_says_what_failed() {
    let trial = shared().join(
        "skillsbench/published/shenghan/gemini-cli/gemini3flash/noskills/gemini-cli-gemini3flash-noskills-3d-scan-calc-a2c944/3d-scan-calc__35QwY5n",
    );
    let t = Trajectory::read(&trial.join("agent/trajectory.json")).unwrap();
    let ctrf = Report::read(&trial.join("verifier/ctrf.json")).unwrap();
    let s = summarize_trajectory(
        &SummaryInput {
            trajectory: Some(&t),
            instruction: None,
            ctrf: Some(&ctrf),
            test_output: None,
            outcome: Some(Outcome::Fail),
            reward: Some(0.0),
        },
        DEFAULT_LIMIT,
    );
    let text = &s.text;
    assert!(text.len() <= DEFAULT_LIMIT);
    assert!(
        text.starts_with("Outcome: fail, reward 0, 1/2 tests passed"),
        "{text}"
    );
    assert!(
        text.contains("Goal: You need to calculate the mass of a 3D printed part."),
        "{text}"
    );
    assert!(
        text.contains("[s3] run_shell_command: od -j 80 -N 4 -t u4 scan_data.stl"),
        "{text}"
    );
    assert!(
        text.contains("FAILED test_outputs.py::TestOutputs::test_values_correct"),
        "{text}"
    );
    assert!(text.contains("Final message [s15]"), "{text}");
    // Every quoted step exists in the trajectory.
    let ids: BTreeSet<u64> = t.steps.iter().map(|s| s.step_id).collect();
    assert!(
        s.parts
            .iter()
            .flat_map(|p| &p.step_ids)
            .all(|i| ids.contains(i))
    );
}

/// Imported runs read in the dashboard like native ones: the detail of an imported trial shows
/// its trajectory, rendered, and the skills it used.
#[test]
fn imported_trials_open_in_the_dashboard_detail() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("d.db")).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/harbor");
    let report = import(&store, &opts(vec![fixtures])).unwrap();
    let conn = store.connect().unwrap();
    let run = queries::find_run(&conn, &report.runs[0]).unwrap().unwrap();
    let snap = skillscope::tui::worker::load_snapshot(&conn, run.id).unwrap();
    let skilled = snap
        .trials
        .iter()
        .find(|t| t.task_id == "skilled-task")
        .unwrap();
    let detail = skillscope::tui::worker::load_detail(&conn, run.id, &skilled.key()).unwrap();
    let traj = detail
        .logs
        .iter()
        .find(|l| l.label == "trajectory")
        .unwrap();
    assert!(traj.text.contains("#3 agent"), "{}", traj.text);
    assert!(
        traj.text
            .contains("→ Read /root/.claude/skills/lab-units/SKILL.md"),
        "{}",
        traj.text
    );
    assert_eq!(detail.skill_uses.len(), 4);
    store.writer().stop();
}

/// Writes a Harbor job folder as `harbor run -a oracle` leaves it: the job's `config.json`
/// (`JobConfig`: `n_attempts`, `tasks[].path`) and `result.json` (`JobResult`), and one trial folder
/// per (task, reward) with its `TrialResult`.
fn oracle_job(root: &Path, job: &str, n_attempts: u32, listed: &[&str], trials: &[(&str, f64)]) {
    let dir = root.join(job);
    std::fs::create_dir_all(&dir).unwrap();
    let config = serde_json::json!({
        "job_name": job,
        "jobs_dir": root.display().to_string(),
        "n_attempts": n_attempts,
        "timeout_multiplier": 1.0,
        "agents": [{"name": "oracle", "model_name": null, "kwargs": {}}],
        "datasets": [],
        "tasks": listed.iter().map(|t| serde_json::json!({"path": format!("/bench/tasks/{t}")})).collect::<Vec<_>>(),
    });
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let result = serde_json::json!({
        "id": format!("{job}-id"),
        "started_at": "2026-11-20T10:00:00",
        "finished_at": "2026-11-20T10:05:00",
        "n_total_trials": listed.len() as u32 * n_attempts,
        "stats": {"n_trials": trials.len(), "n_errors": 0, "evals": {}},
    });
    std::fs::write(dir.join("result.json"), result.to_string()).unwrap();
    for (i, (task, reward)) in trials.iter().enumerate() {
        let name = format!("{task}__J{i}{}", &job[job.len() - 2..]);
        let t = dir.join(&name);
        std::fs::create_dir_all(t.join("verifier")).unwrap();
        let trial = serde_json::json!({
            "id": format!("{job}-{name}"),
            "task_name": task,
            "trial_name": name,
            "trial_uri": format!("file://{}", t.display()),
            "task_id": {"path": format!("/bench/tasks/{task}")},
            "task_checksum": "0",
            "config": {"task": {"path": format!("/bench/tasks/{task}")}, "trial_name": name,
                       "trials_dir": dir.display().to_string(), "agent": {"name": "oracle"}},
            "agent_info": {"name": "oracle", "version": "0.25.0", "model_info": null},
            "agent_result": null,
            "verifier_result": {"rewards": {"reward": reward}},
            "exception_info": null,
            "started_at": "2026-11-20T10:00:00",
            "finished_at": "2026-11-20T10:01:00",
        });
        std::fs::write(t.join("result.json"), trial.to_string()).unwrap();
    }
}

/// The pass rate of the oracle jobs straight from their files: per task, the rewards of its
/// trials over the trials Harbor planned for it (`n_attempts` summed over the jobs whose
/// `config.json` lists it), then the mean over every listed task.
fn planned_pass_rate_by_hand(root: &Path) -> f64 {
    let mut planned: BTreeMap<String, f64> = BTreeMap::new();
    let mut rewards: BTreeMap<String, f64> = BTreeMap::new();
    for job in std::fs::read_dir(root).unwrap() {
        let job = job.unwrap().path();
        let cfg: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(job.join("config.json")).unwrap())
                .unwrap();
        for t in cfg["tasks"].as_array().unwrap() {
            let name = t["path"].as_str().unwrap().rsplit('/').next().unwrap();
            *planned.entry(name.into()).or_default() += cfg["n_attempts"].as_f64().unwrap();
        }
        for trial in std::fs::read_dir(&job).unwrap() {
            let trial = trial.unwrap().path();
            if trial.is_dir() {
                let v: serde_json::Value = serde_json::from_str(
                    &std::fs::read_to_string(trial.join("result.json")).unwrap(),
                )
                .unwrap();
                *rewards
                    .entry(v["task_name"].as_str().unwrap().into())
                    .or_default() += v["verifier_result"]["rewards"]["reward"].as_f64().unwrap();
            }
        }
    }
    planned
        .iter()
        .map(|(t, n)| rewards.get(t).copied().unwrap_or(0.0) / n)
        .sum::<f64>()
        / planned.len() as f64
}

fn pass_rate_of(store: &Store, run: &str) -> (f64, usize) {
    let conn = store.connect().unwrap();
    let run = queries::find_run(&conn, run).unwrap().unwrap();
    let tasks: Vec<String> = queries::run_tasks(&conn, run.id)
        .unwrap()
        .into_iter()
        .map(|t| t.task_id)
        .collect();
    let plan = queries::trial_plan(&conn, &run).unwrap();
    let trials = queries::current_trials(&conn, run.id).unwrap();
    let s =
        skillscope::analysis::metrics::summarize_planned(&tasks, &plan, &run.conditions, &trials);
    // The report's analysis agrees with the dashboard's and status's summary.
    let r = skillscope::analysis::results::analyze(
        &conn,
        &skillscope::analysis::results::Selection::Runs(vec![run.name.clone()]),
        &skillscope::analysis::results::Scoring::default(),
    )
    .unwrap();
    assert!((r.conditions[0].pass_rate - s[0].pass_rate).abs() < 1e-12);
    assert_eq!(r.conditions[0].planned, s[0].n_planned);
    (s[0].pass_rate, tasks.len())
}

/// Fourteen oracle jobs, one attempt per task; one task runs in two jobs. 11 of 14 tasks pass:
/// 78.6 %, not the 42.9 % a run-wide "2 trials per task" gives.
#[test]
fn uneven_harbor_jobs_are_scored_against_what_each_task_planned() {
    let jobs = tempfile::tempdir().unwrap();
    let tasks: Vec<String> = (1..=14).map(|i| format!("task-{i:02}")).collect();
    // Tasks 1–11 pass, 12–14 fail; task-01 also runs in the fourteenth job (and passes again).
    let reward = |i: usize| if i < 11 { 1.0 } else { 0.0 };
    for (i, task) in tasks.iter().enumerate().take(13) {
        oracle_job(
            jobs.path(),
            &format!("oracle-{i:02}"),
            1,
            &[task],
            &[(task, reward(i))],
        );
    }
    oracle_job(
        jobs.path(),
        "oracle-13",
        1,
        &[&tasks[13], &tasks[0]],
        &[(&tasks[13], reward(13)), (&tasks[0], 1.0)],
    );
    let by_hand = planned_pass_rate_by_hand(jobs.path());
    assert!((by_hand - 11.0 / 14.0).abs() < 1e-12, "{by_hand}");

    let db = tempfile::tempdir().unwrap();
    let store = Store::open(&db.path().join("o.db")).unwrap();
    let mut o = opts(vec![jobs.path().to_path_buf()]);
    o.run = Some("oracle-jobs".into());
    o.condition = Some("no-skills".into());
    let report = import(&store, &o).unwrap();
    assert_eq!(report.imported, 15);
    let (rate, n) = pass_rate_of(&store, "oracle-jobs");
    assert_eq!(n, 14);
    assert!((rate - by_hand).abs() < 1e-12, "{rate} vs {by_hand}");
    assert!((rate * 100.0 - 78.6).abs() < 0.05, "{rate}");

    // Importing again adds nothing and changes nothing.
    let again = import(&store, &o).unwrap();
    assert_eq!((again.imported, again.already_present), (0, 15));
    assert!((pass_rate_of(&store, "oracle-jobs").0 - by_hand).abs() < 1e-12);

    // `status` says what was planned — not "14 tasks × 2 trials" (issue 36).
    store.writer().stop();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .args(["status", "--db"])
        .arg(db.path().join("o.db"))
        .arg("oracle-jobs")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("15 trials planned over 14 tasks"), "{text}");
    assert!(!text.contains("14 tasks × 2 trials"), "{text}");
}

/// A job that planned more than it holds (stopped, or trials lost): its missing trials count 0,
/// and a task it lists without any trial joins the fixed denominator.
#[test]
fn missing_trials_of_an_imported_job_count_zero() {
    let jobs = tempfile::tempdir().unwrap();
    oracle_job(
        jobs.path(),
        "oracle-ab",
        2,
        &["alpha", "beta", "gamma"],
        &[("alpha", 1.0), ("alpha", 1.0), ("beta", 1.0)],
    );
    let by_hand = planned_pass_rate_by_hand(jobs.path());
    // alpha 2/2, beta 1/2, gamma 0/2.
    assert!((by_hand - 0.5).abs() < 1e-12, "{by_hand}");
    let db = tempfile::tempdir().unwrap();
    let store = Store::open(&db.path().join("o.db")).unwrap();
    let mut o = opts(vec![jobs.path().to_path_buf()]);
    o.run = Some("stopped-job".into());
    import(&store, &o).unwrap();
    let (rate, n) = pass_rate_of(&store, "stopped-job");
    assert_eq!(n, 3);
    assert!((rate - by_hand).abs() < 1e-12, "{rate}");
}

/// A trial folder skillscope wrote carries what its agent could see of skills: importing it
/// keeps the record, so the imported run's report flags a no-skills trial that saw a skill.
#[test]
fn an_imported_trial_keeps_its_skill_exposure() {
    let root = tempfile::tempdir().unwrap();
    oracle_job(root.path(), "demo-noskills-01", 1, &["t1"], &[("t1", 1.0)]);
    let trial = std::fs::read_dir(root.path().join("demo-noskills-01"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    std::fs::create_dir_all(trial.join("agent")).unwrap();
    let record = serde_json::json!({
        "captured_at": "2026-11-20T10:00:01Z",
        "agent": "oracle",
        "condition": "no-skills",
        "workdir": "/root",
        "folders": ["/root/.claude/skills"],
        "skills": [{
            "name": "planted", "dir": "planted", "path": "/root/.claude/skills/planted",
            "paths": ["/root/.claude/skills/planted"], "origin": "other",
            "sha256": "ab", "files": 1, "bytes": 10, "enabled": true
        }],
        "builtins": null,
        "hash": "",
        "error": null,
        "used": {"state": "unknown", "skills": []}
    });
    std::fs::write(trial.join("agent/skill-exposure.json"), record.to_string()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    import(&store, &opts(vec![root.path().to_path_buf()])).unwrap();
    let conn = store.connect().unwrap();
    let run = queries::list_runs(&conn).unwrap().remove(0);
    assert_eq!(run.conditions, ["no-skills"]);
    let r = skillscope::analysis::results::analyze(
        &conn,
        &skillscope::analysis::results::Selection::Runs(vec![run.name.clone()]),
        &skillscope::analysis::results::Scoring::default(),
    )
    .unwrap();
    let e = &r.exposure.conditions[0];
    assert_eq!((e.recorded, e.stray, e.use_unknown), (1, 1, 0), "{e:#?}");
    assert_eq!(r.exposure.flags.len(), 1, "{:?}", r.exposure.flags);
}

/// Harbor 0.26 job folders, written by Harbor 0.26.0's own models and writers
/// (`TrialConfig`/`TrialResult.model_dump_json(indent=4)`, `build_trial_lock`, `JobStats.increment`;
/// each file validates and round-trips byte for byte with 0.26's models): an oracle job with a
/// passing trial and a multi-step trial (steps scoring 1 and 0, trial reward their mean 0.5), and
/// a Claude Code job whose trial recorded `ApiRateLimitError` although its verifier wrote a reward
/// file of 0.
fn harbor_026() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/harbor-0.26")
}

/// Harbor 0.26.0's packager digest of `tests/fixtures/tasks/passes`, as the fixtures' locks say.
const PASSES_DIGEST: &str =
    "sha256:32e0c0157002203a1ff62e7370baac7de225e81d757e8c557a132c7c86217dd5";

#[test]
fn harbor_026_trials_are_judged_by_its_error_policy() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("h.db")).unwrap();
    let report = import(&store, &opts(vec![harbor_026()])).unwrap();
    assert!(report.broken.is_empty(), "{:?}", report.broken);
    assert_eq!(
        (report.trials_seen, report.imported, report.jobs),
        (3, 3, 2)
    );
    assert_eq!(report.multi_step, 1);
    let conn = store.connect().unwrap();

    // The passing oracle trial: a verdict, its digest from lock.json.
    let oracle = queries::find_run(&conn, "harbor-oracle-no-model")
        .unwrap()
        .unwrap();
    let trials = queries::current_trials(&conn, oracle.id).unwrap();
    let pass = trials.iter().find(|t| t.task_id == "passes").unwrap();
    assert_eq!(
        (pass.outcome, pass.reward),
        (Some(Outcome::Pass), Some(1.0))
    );
    assert_eq!(pass.condition, "no-skills");
    assert_eq!(pass.task_digest.as_deref(), Some(PASSES_DIGEST));
    assert_eq!(pass.error, None);
    // The multi-step trial: scored by its trial-level reward, times and tokens from its steps.
    let stepped = trials.iter().find(|t| t.task_id == "stepped").unwrap();
    assert_eq!(
        (stepped.outcome, stepped.reward),
        (Some(Outcome::Fail), Some(0.5))
    );
    assert_eq!(
        (stepped.n_input_tokens, stepped.n_output_tokens),
        (Some(200), Some(50))
    );
    assert!((stepped.cost_usd.unwrap() - 0.003).abs() < 1e-12);
    assert_eq!(
        (
            stepped.agent_started_at.as_deref(),
            stepped.agent_finished_at.as_deref(),
            stepped.verifier_finished_at.as_deref()
        ),
        (
            Some("2026-11-20T09:31:06.125Z"),
            Some("2026-11-20T09:32:10.125Z"),
            Some("2026-11-20T09:32:20.125Z")
        )
    );
    assert!(
        stepped
            .task_digest
            .as_deref()
            .is_some_and(|d| d.starts_with("sha256:"))
    );

    // ApiRateLimitError with a reward file of 0: Harbor 0.26's policy says the reward is not
    // valid, so the trial is infrastructure — a provider error, no verdict, no reward.
    let claude = queries::find_run(&conn, "harbor-claude-code-claude-sonnet-4-5")
        .unwrap()
        .unwrap();
    let trials = queries::current_trials(&conn, claude.id).unwrap();
    let [limited] = trials.as_slice() else {
        panic!("{trials:#?}")
    };
    assert_eq!(limited.outcome, Some(Outcome::ProviderError));
    assert!(!limited.outcome.unwrap().is_verdict(), "no verdict");
    assert_eq!((limited.reward, &limited.rewards), (None, &None));
    assert_eq!(limited.failure_category, None);
    let error = limited.error.as_deref().unwrap();
    assert!(
        error.starts_with("ApiRateLimitError: Rate limit exceeded")
            && error
                .contains("Harbor 0.26 error policy: no valid reward; its reward 0 does not count"),
        "{error}"
    );
    assert_eq!(limited.task_digest.as_deref(), Some(PASSES_DIGEST));
    assert_eq!(limited.n_input_tokens, Some(5230));
    assert_eq!(report.without_valid_reward.len(), 1);
    assert!(report.without_valid_reward[0].ends_with("passes__Vw4kR2x"));
    // Method D counts it 0 over the fixed denominator; the rate over judged trials has nothing.
    let tasks = vec!["passes".to_string()];
    assert_eq!(
        skillscope::analysis::metrics::method_d(&tasks, 1, "no-skills", &trials),
        0.0
    );
    let judged = summarize_planned(
        &tasks,
        &skillscope::store::TrialPlan::uniform(1),
        &["no-skills".to_string()],
        &trials,
    );
    assert_eq!(judged[0].pass_rate_judged, None, "{judged:?}");
    // Importing again adds nothing.
    let again = import(&store, &opts(vec![harbor_026()])).unwrap();
    assert_eq!((again.imported, again.already_present), (0, 3));
    store.writer().stop();
}

/// What skillscope writes, read back: each outcome's `result.json` (and `lock.json`) imported as
/// a Harbor 0.26 trial keeps its verdict when Harbor 0.26 would count its reward, and has none
/// otherwise — a provider failure stays a provider error, a cancel a cancel.
#[test]
fn our_own_trial_folders_import_by_harbor_026s_reading() {
    use skillscope::harbor::jobdir::{
        TrialFacts, trial_lock, trial_result, write_json_atomic, write_lock,
    };
    use skillscope::store::{TrialRow, TrialStatus};
    let dir = tempfile::tempdir().unwrap();
    let job_dir = dir.path().join("jobs/roundtrip__noskills");
    let facts = TrialFacts {
        task_path: PathBuf::from("/t/passes"),
        task_checksum: "0".repeat(64),
        agent_name: "oracle".into(),
        agent_version: "1".into(),
        model: None,
        job_dir: job_dir.clone(),
        job_id: "j".into(),
        cpus: Some(2.0),
        memory_mb: None,
        kwargs: Default::default(),
        task_digest: Some(PASSES_DIGEST.into()),
        task_version: None,
        skills: Vec::new(),
    };
    let cases = [
        (Outcome::Pass, Some(1.0), Outcome::Pass),
        (Outcome::Fail, Some(0.4), Outcome::Fail),
        (Outcome::AgentTimeout, Some(0.0), Outcome::AgentTimeout),
        (Outcome::AgentTimeout, None, Outcome::RuntimeError),
        (Outcome::VerifierTimeout, None, Outcome::RuntimeError),
        (Outcome::NoReward, None, Outcome::RuntimeError),
        (Outcome::BuildError, None, Outcome::RuntimeError),
        (Outcome::RuntimeError, None, Outcome::RuntimeError),
        (Outcome::ProviderError, None, Outcome::ProviderError),
        (Outcome::Cancelled, None, Outcome::Cancelled),
    ];
    for (i, (outcome, reward, _)) in cases.iter().enumerate() {
        let row = TrialRow {
            task_id: format!("task-{i}"),
            condition: "no-skills".into(),
            trial_index: 1,
            attempt: 1,
            status: TrialStatus::Done,
            outcome: Some(*outcome),
            reward: *reward,
            rewards: reward.map(|r| serde_json::json!({ "reward": r })),
            agent: "oracle".into(),
            trial_name: format!("task-{i}__Abcdefg"),
            started_at: Some("2026-11-20T09:30:00.000Z".into()),
            finished_at: Some("2026-11-20T09:31:00.000Z".into()),
            ..TrialRow::default()
        };
        let trial_dir = job_dir.join(&row.trial_name);
        write_lock(
            &trial_dir.join("lock.json"),
            &trial_lock(&row, &facts).unwrap(),
        )
        .unwrap();
        write_json_atomic(
            &trial_dir.join("result.json"),
            &trial_result(&row, &facts, &trial_dir),
        )
        .unwrap();
    }
    let store = Store::open(&dir.path().join("r.db")).unwrap();
    let report = import(&store, &opts(vec![dir.path().join("jobs")])).unwrap();
    assert_eq!(report.imported, cases.len(), "{:?}", report.broken);
    let conn = store.connect().unwrap();
    let run = queries::find_run(&conn, &report.runs[0]).unwrap().unwrap();
    let trials = queries::current_trials(&conn, run.id).unwrap();
    for (i, (written, reward, read)) in cases.iter().enumerate() {
        let t = trials
            .iter()
            .find(|t| t.task_id == format!("task-{i}"))
            .unwrap();
        assert_eq!(t.outcome, Some(*read), "{written:?} with reward {reward:?}");
        assert_eq!(t.task_digest.as_deref(), Some(PASSES_DIGEST));
        if read.is_verdict() {
            assert_eq!(t.reward, *reward);
        } else {
            assert_eq!(t.reward, None, "{written:?}");
        }
    }
    store.writer().stop();
}

/// Imported text is untrusted: a model name holding an OSC 52 (clipboard) sequence is printed by
/// `import` and `status` without it; and a trial whose `agent/` folder is a link leading out of
/// the imported folder is refused, its target never read.
#[test]
fn imported_metadata_is_sanitized_and_links_out_are_refused() {
    let s = common::Scratch::new();
    let root = s.dir.path().join("jobs");
    let outside = s.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        outside.join("trajectory.json"),
        r#"{"schema_version":"ATIF-v1.2","agent":{"name":"x","version":"1"},"steps":[]}"#,
    )
    .unwrap();
    let evil_model = "evil\u{1b}]52;c;cHduZWQ=\u{7}model";
    for (name, linked) in [("task-a__Aaaaaaa", false), ("task-b__Bbbbbbb", true)] {
        let t = root.join("job-1").join(name);
        std::fs::create_dir_all(t.join("verifier")).unwrap();
        if linked {
            std::os::unix::fs::symlink(&outside, t.join("agent")).unwrap();
        }
        let task = name.split("__").next().unwrap();
        let trial = serde_json::json!({
            "id": format!("id-{name}"),
            "task_name": task,
            "trial_name": name,
            "trial_uri": format!("file://{}", t.display()),
            "task_id": {"path": format!("/bench/tasks/{task}")},
            "task_checksum": "0",
            "config": {"task": {"path": format!("/bench/tasks/{task}")}, "trial_name": name,
                       "agent": {"name": "claude-code"}},
            "agent_info": {"name": "claude-code", "version": "1",
                           "model_info": {"name": evil_model, "provider": "anthropic"}},
            "agent_result": null,
            "verifier_result": {"rewards": {"reward": 1.0}},
            "exception_info": null,
            "started_at": "2026-11-20T10:00:00",
            "finished_at": "2026-11-20T10:01:00",
        });
        std::fs::write(t.join("result.json"), trial.to_string()).unwrap();
    }
    let db = s.db().display().to_string();
    let out = common::skillscope(&s, &["import", "--db", &db, root.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    assert!(
        text.contains("task-b__Bbbbbbb/agent is a link leading out of"),
        "{text}"
    );
    let status = common::skillscope(&s, &["status", "--db", &db]);
    let st = String::from_utf8_lossy(&status.stdout);
    assert!(st.contains("evil") && st.contains("model"), "{st}");
    assert!(!st.contains('\u{1b}') && !st.contains('\u{7}'), "{st:?}");
    let conn = s.store.connect().unwrap();
    let runs = queries::list_runs(&conn).unwrap();
    let trials = queries::current_trials(&conn, runs[0].id).unwrap();
    assert_eq!(
        trials.len(),
        1,
        "only the trial without the link: {trials:#?}"
    );
    assert_eq!(trials[0].task_id, "task-a");
}

/// `v` as the noise floor reads it.
fn as_trials(v: &[(String, Vec<f64>)]) -> Vec<skillscope::analysis::noise::TaskTrials<'_>> {
    v.iter()
        .map(|(t, r)| skillscope::analysis::noise::TaskTrials {
            task: t,
            rewards: r,
        })
        .collect()
}

/// Per condition and task the rewards of the trials in Harbor job folders, straight from their
/// `result.json` files: condition `no-skills` when the job's name says `noskills`, else
/// `curated`.
fn rewards_by_hand(root: &Path) -> BTreeMap<String, BTreeMap<String, Vec<f64>>> {
    let mut files = Vec::new();
    files_named(root, "result.json", &mut files);
    let mut out: BTreeMap<String, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    for f in files {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let Some(task) = v["task_name"].as_str() else {
            continue; // the job's own result.json
        };
        let cond = if f.to_string_lossy().contains("noskills") {
            "no-skills"
        } else {
            "curated"
        };
        out.entry(cond.into())
            .or_default()
            .entry(task.into())
            .or_default()
            .push(v["verifier_result"]["rewards"]["reward"].as_f64().unwrap());
    }
    out
}

/// The noise floor recomputed from the raw trial folders: the flip rate counted by hand from the
/// rewards in `result.json` (reward ≥ 1 succeeds; every trial here has a verdict), and the A/A
/// noise of each condition and of the comparison drawn from the files' rewards — equal to what
/// the report computes from the store.
#[test]
fn the_noise_floor_is_recomputed_from_the_trial_folders() {
    use skillscope::analysis::ci::CiMethod;
    use skillscope::analysis::noise::{self, NoiseMethod, TaskTrials};
    use skillscope::analysis::results::{Scoring, Selection, analyze};

    let jobs = tempfile::tempdir().unwrap();
    let tasks = ["t1", "t2", "t3", "t4", "t5"];
    // 4 trials planned per task; t5 holds one trial only (no halves, no flip).
    oracle_job(
        jobs.path(),
        "oracle-noskills-01",
        4,
        &tasks,
        &[
            ("t1", 1.0),
            ("t1", 1.0),
            ("t1", 1.0),
            ("t1", 1.0),
            ("t2", 1.0),
            ("t2", 0.0),
            ("t2", 1.0),
            ("t2", 0.0),
            ("t3", 0.5),
            ("t3", 1.0),
            ("t3", 0.0),
            ("t3", 0.25),
            ("t4", 0.0),
            ("t4", 0.0),
            ("t4", 0.0),
            ("t4", 0.0),
            ("t5", 1.0),
        ],
    );
    oracle_job(
        jobs.path(),
        "oracle-curated-01",
        4,
        &tasks,
        &[
            ("t1", 1.0),
            ("t1", 0.0),
            ("t1", 1.0),
            ("t1", 1.0),
            ("t2", 1.0),
            ("t2", 1.0),
            ("t2", 1.0),
            ("t2", 1.0),
            ("t3", 0.75),
            ("t3", 0.75),
            ("t3", 0.5),
            ("t3", 0.75),
            ("t4", 1.0),
            ("t4", 0.0),
            ("t5", 1.0),
            ("t5", 0.0),
        ],
    );
    let by_hand = rewards_by_hand(jobs.path());

    let db = tempfile::tempdir().unwrap();
    let store = Store::open(&db.path().join("n.db")).unwrap();
    let mut o = opts(vec![jobs.path().to_path_buf()]);
    o.run = Some("noise".into());
    let report = import(&store, &o).unwrap();
    assert_eq!(report.imported, 33, "{report:?}");
    let conn = store.connect().unwrap();
    let r = analyze(
        &conn,
        &Selection::Runs(report.runs.clone()),
        &Scoring::default(),
    )
    .unwrap();
    let m = NoiseMethod::from(&CiMethod::default());
    let mut checked = 0;
    for c in &r.conditions {
        let per_task = &by_hand[&c.condition];
        // Flip rate: tasks with 2+ trials whose rewards fall on both sides of 1.0.
        let eligible: Vec<&Vec<f64>> = per_task.values().filter(|v| v.len() >= 2).collect();
        let flipped = eligible
            .iter()
            .filter(|v| v.iter().any(|&x| x >= 1.0) && v.iter().any(|&x| x < 1.0))
            .count();
        assert_eq!(
            (c.flip.flipped, c.flip.tasks),
            (flipped, eligible.len()),
            "{}",
            c.label
        );
        // A/A noise from the files' rewards.
        let trials: Vec<TaskTrials<'_>> = per_task
            .iter()
            .map(|(t, v)| TaskTrials {
                task: t,
                rewards: v,
            })
            .collect();
        let want = noise::aa_noise(&c.label, &trials, &m);
        assert_eq!(c.aa_noise.n_tasks, eligible.len());
        let (got, want) = (c.aa_noise.spread_pp.unwrap(), want.spread_pp.unwrap());
        assert!((got - want).abs() < 1e-9, "{}: {got} vs {want}", c.label);
        assert!(got > 0.0);
        checked += 1;
    }
    assert_eq!(checked, 2);
    // no-skills: t2 and t3 flip of t1–t4; curated: t1, t4 and t5 of all five (t3 never reaches 1).
    let by = |cond: &str| r.conditions.iter().find(|c| c.condition == cond).unwrap();
    assert_eq!(
        (by("no-skills").flip.flipped, by("no-skills").flip.tasks),
        (2, 4)
    );
    assert_eq!(
        (by("curated").flip.flipped, by("curated").flip.tasks),
        (3, 5)
    );

    // The comparison pools both sides over the tasks both can split (t1–t4).
    let x = &r.comparisons[0];
    let side = |label: &str| {
        let c = r.conditions.iter().find(|c| c.label == label).unwrap();
        by_hand[&c.condition]
            .iter()
            .map(|(t, v)| (t.clone(), v.clone()))
            .collect::<Vec<_>>()
    };
    let (w, wo) = (side(&x.with), side(&x.without));
    let want = noise::aa_noise_paired((&x.with, &as_trials(&w)), (&x.without, &as_trials(&wo)), &m);
    assert_eq!(x.aa_noise.n_tasks, 4);
    assert!((x.aa_noise.spread_pp.unwrap() - want.spread_pp.unwrap()).abs() < 1e-9);
    store.writer().stop();
}

/// skillscope's own job folder holds every attempt of a retried trial (Harbor's holds one
/// folder per trial). Imported, a retried trial is one trial whose latest attempt counts —
/// whichever folder is read first, in one import or across two — and the pass rate is the
/// one recomputed by hand from the job's latest attempts (its `result.json` names them).
#[test]
fn retried_trials_of_our_own_jobs_count_once() {
    use skillscope::harbor::jobdir::{
        TrialFacts, job_name, trial_name, trial_result, write_json_atomic,
    };
    use skillscope::store::{TrialRow, TrialStatus};
    let run = "r1-oracle-curated-x1";
    // (task, attempt, outcome, reward): task-a failed on the machine, then passed on a retry;
    // task-b failed twice, then failed its verdict on a third attempt; task-c ran once; task-d
    // got a partial reward on its retry; task-e passed after its agent's time ran out.
    let attempts = [
        ("task-a", 1, Outcome::RuntimeError, None),
        ("task-a", 2, Outcome::Pass, Some(1.0)),
        ("task-b", 1, Outcome::NoReward, None),
        ("task-b", 2, Outcome::RuntimeError, None),
        ("task-b", 3, Outcome::Fail, Some(0.0)),
        ("task-c", 1, Outcome::Pass, Some(1.0)),
        ("task-d", 1, Outcome::RuntimeError, None),
        ("task-d", 2, Outcome::Fail, Some(0.4)),
        ("task-e", 1, Outcome::AgentTimeout, Some(1.0)),
    ];
    let write = |root: &Path, which: &[usize]| {
        let job_dir = root.join("jobs").join(job_name(run, "curated"));
        let facts = TrialFacts {
            task_path: PathBuf::from("/t/x"),
            task_checksum: "0".repeat(64),
            agent_name: "oracle".into(),
            agent_version: "1".into(),
            model: None,
            job_dir: job_dir.clone(),
            job_id: "j".into(),
            cpus: None,
            memory_mb: None,
            kwargs: BTreeMap::from([("condition".to_string(), serde_json::json!("curated"))]),
            task_digest: None,
            task_version: None,
            skills: Vec::new(),
        };
        for &i in which {
            let (task, attempt, outcome, reward) = attempts[i];
            let row = TrialRow {
                task_id: task.into(),
                condition: "curated".into(),
                trial_index: 1,
                attempt,
                status: TrialStatus::Done,
                outcome: Some(outcome),
                reward,
                rewards: reward.map(|r| serde_json::json!({ "reward": r })),
                agent: "oracle".into(),
                trial_name: trial_name(task, run, "curated", 1, attempt),
                started_at: Some("2026-11-20T09:30:00.000Z".into()),
                finished_at: Some("2026-11-20T09:31:00.000Z".into()),
                ..TrialRow::default()
            };
            let trial_dir = job_dir.join(&row.trial_name);
            write_json_atomic(
                &trial_dir.join("result.json"),
                &trial_result(&row, &facts, &trial_dir),
            )
            .unwrap();
        }
    };
    let current = |store: &Store| {
        let conn = store.connect().unwrap();
        let run = queries::find_run(&conn, "retried").unwrap().unwrap();
        let mut t: Vec<(String, u32, u32, Option<Outcome>)> =
            queries::current_trials(&conn, run.id)
                .unwrap()
                .into_iter()
                .map(|t| (t.task_id, t.trial_index, t.attempt, t.outcome))
                .collect();
        t.sort_by(|a, b| a.0.cmp(&b.0));
        t
    };
    let expected = vec![
        ("task-a".to_string(), 1, 2, Some(Outcome::Pass)),
        ("task-b".to_string(), 1, 3, Some(Outcome::Fail)),
        ("task-c".to_string(), 1, 1, Some(Outcome::Pass)),
        ("task-d".to_string(), 1, 2, Some(Outcome::Fail)),
        ("task-e".to_string(), 1, 1, Some(Outcome::AgentTimeout)),
    ];
    let import_opts = |root: &Path| ImportOptions {
        run: Some("retried".into()),
        ..opts(vec![root.join("jobs")])
    };
    // One import of the whole folder.
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &[0, 1, 2, 3, 4, 5, 6, 7, 8]);
    let store = Store::open(&dir.path().join("r.db")).unwrap();
    let report = import(&store, &import_opts(dir.path())).unwrap();
    assert_eq!(report.imported, 9, "{:?}", report.broken);
    assert_eq!(report.superseded_attempts, 4);
    assert_eq!(current(&store), expected);
    // By hand from the raw folders: the latest attempt of each (task, trial index) by its
    // attempt number in skillscope's names, scored by its reward (none counts 0).
    let by_hand = {
        let mut latest: BTreeMap<&str, (u32, f64)> = BTreeMap::new();
        for (task, attempt, _, reward) in attempts {
            let e = latest.entry(task).or_insert((0, 0.0));
            if attempt > e.0 {
                *e = (attempt, reward.unwrap_or(0.0));
            }
        }
        latest.values().map(|(_, r)| *r).sum::<f64>() / latest.len() as f64
    };
    let (rate, tasks) = pass_rate_of(&store, "retried");
    assert_eq!(tasks, 5);
    // (0 + 1 + 1 + 0.4 + 1) / 5: the partial reward and the pass after a timeout as recorded.
    assert!((by_hand - 0.68).abs() < 1e-12, "{by_hand}");
    assert!((rate - by_hand).abs() < 1e-12, "{rate} vs {by_hand}");
    store.writer().stop();

    // Two imports: the later attempts first, then the earlier ones (a job copied while it ran),
    // and the other way round. Either way one trial per task, its latest attempt current.
    for (first, then) in [
        (&[1usize, 4, 5, 7, 8][..], &[0usize, 2, 3, 6][..]),
        (&[0, 2, 5, 6][..], &[1, 3, 4, 7, 8][..]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("r.db")).unwrap();
        write(dir.path(), first);
        let once = import(&store, &import_opts(dir.path())).unwrap();
        write(dir.path(), then);
        let again = import(&store, &import_opts(dir.path())).unwrap();
        assert_eq!(again.imported, then.len());
        assert_eq!(again.already_present, first.len());
        // Each earlier attempt is counted superseded once, across both imports.
        assert_eq!(once.superseded_attempts + again.superseded_attempts, 4);
        assert_eq!(current(&store), expected, "{first:?} then {then:?}");
        let (rate, _) = pass_rate_of(&store, "retried");
        assert!((rate - by_hand).abs() < 1e-12);
        store.writer().stop();
    }
}
