//! The whole experiment end to end against the fake Acontext server, with real containers: round 1
//! on the example tasks, learning into LS-A and LS-B, export, round 2 with the exported skills,
//! results for the four conditions — stopped by a dead server in the learning phase and resumed.
//! And an exported folder is exactly what the agent finds in round 2.

use crate::support::{common, fake_acontext};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use fake_acontext::{FakeServer, FakeState};
use serde_json::json;
use skillscope::acontext::learn::LearnOptions;
use skillscope::acontext::versions::export_version;
use skillscope::acontext::{AcontextConfig, Client};
use skillscope::engine::{Engine, RunRequest};
use skillscope::experiment::plan::Plan;
use skillscope::experiment::{Experiment, ExperimentError, ExperimentSetup};
use skillscope::skillsbench::Condition;
use skillscope::store::learning as lq;
use skillscope::store::{Outcome, Store, queries};
use tokio_util::sync::CancellationToken;

pub(crate) const KEY: &str = "sk-ac-test";

pub(crate) fn client(base: &str) -> Client {
    Client::new(&AcontextConfig {
        base_url: base.to_string(),
        api_key: KEY.into(),
        timeout: Duration::from_secs(5),
        retries: 1,
        max_backoff: Duration::from_millis(20),
    })
    .unwrap()
}

/// An experiment of `plan` on `tasks` against `server`, its folders in `dir`, learning with short
/// polls and a short wait for a dead server.
pub(crate) fn experiment(
    store: &Store,
    server: &FakeServer,
    plan: Plan,
    tasks: &Path,
    dir: &Path,
) -> (ExperimentSetup, Experiment) {
    let mut learn = LearnOptions::new("", "", "");
    learn.poll = (Duration::from_millis(2), Duration::from_millis(10));
    learn.server_wait = Duration::from_millis(300);
    let setup = ExperimentSetup {
        plan,
        round1: request("ignored", tasks, &[], &dir.join("jobs"), 1),
        exports_root: dir.join("exports"),
        learn,
        baseline: None,
    };
    let exp = Experiment {
        store: store.clone(),
        engine: Engine::new(store.clone()),
        client: client(&server.base_url()),
        cancel: CancellationToken::new(),
        progress: None,
        notify: None,
    };
    (setup, exp)
}

fn request(name: &str, tasks: &Path, filter: &[&str], jobs: &Path, trials: u32) -> RunRequest {
    common::oracle_request(name, tasks, filter, vec![], trials, jobs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_experiment_runs_every_phase_and_resumes_after_a_dead_server() {
    common::require_docker().await;
    let dir = tempfile::tempdir().unwrap();
    let tasks = skillscope::skillsbench::examples::materialize(dir.path()).unwrap();
    let store = Store::open(&dir.path().join("exp.db")).unwrap();
    let mut server = FakeServer::start(FakeState::new(KEY, true), ([127, 0, 0, 1], 0).into()).await;
    let plan: Plan = toml::from_str("name = \"e2e\"\ntrials = 1\n").unwrap();
    let (setup, exp) = experiment(&store, &server, plan, &tasks, dir.path());

    // The server is down when learning starts: round 1 is kept, the experiment waits in `learn`.
    server.stop().await;
    let err = exp.run(&setup).await.unwrap_err();
    assert!(matches!(err, ExperimentError::Learn(_)), "{err}");
    let conn = store.connect().unwrap();
    assert_eq!(
        lq::find_experiment(&conn, "e2e").unwrap().unwrap().phase,
        "learn"
    );
    let r1 = queries::find_run(&conn, "e2e-round1").unwrap().unwrap();
    assert_eq!(r1.status, "finished");

    // Back up: the same call finishes every phase without re-running round 1.
    server.restart().await;
    let trials_before = queries::current_trials(&conn, r1.id).unwrap();
    let out = bounded(&store, exp.run(&setup)).await.unwrap();
    assert!(out.finished);
    assert_eq!(out.experiment.phase, "done");
    assert_eq!(
        queries::current_trials(&conn, r1.id).unwrap(),
        trials_before
    );

    // Four conditions, every trial done, scored over the same five tasks.
    let labels: Vec<&str> = out.results.iter().map(|r| r.label).collect();
    assert_eq!(labels, ["A", "B", "A'", "B'"]);
    for r in &out.results {
        assert_eq!(r.summary.n_tasks, 5, "{r:?}");
        assert_eq!(r.summary.done, 5, "{r:?}");
    }
    let r2 = queries::find_run(&conn, "e2e-round2").unwrap().unwrap();
    // The learning phases are in round 1's event log, round 2's end in its own.
    let log_of = |run: i64| -> Vec<String> {
        queries::recent_events(&conn, run, 500)
            .unwrap()
            .into_iter()
            .map(|(_, _, m)| m)
            .collect()
    };
    let r1_log = log_of(r1.id);
    for want in [
        "run finished",
        "e2e: learning (LS-A from A, LS-B from B)",
        "learning stopped by an error",
        "LS-A: learning pass finished",
        "LS-B: exported",
    ] {
        assert!(
            r1_log.iter().any(|m| m.contains(want)),
            "{want:?} in {r1_log:#?}"
        );
    }
    assert!(log_of(r2.id).iter().any(|m| m.starts_with("run finished")));
    let mut spaces = lq::list_spaces(&conn).unwrap();
    spaces.sort_by(|a, b| a.label.cmp(&b.label));
    assert_eq!(spaces.len(), 2);
    // Round 2's conditions are A' = LS-A's export, B' = LS-B's.
    for (space, cond) in spaces.iter().zip(&r2.conditions) {
        assert_eq!(space.state, "learned");
        let export = lq::exports(&conn, space.id).unwrap().pop().unwrap();
        assert_eq!(cond, &format!("skills:{}", export.dir));
        assert!(
            export
                .dir
                .ends_with(&format!("{}-v1", space.label.to_lowercase()))
        );
    }
    // LS-A's export holds one learned skill per task.
    let a_dir = lq::exports(&conn, spaces[0].id).unwrap().pop().unwrap().dir;
    assert!(
        Path::new(&a_dir)
            .join("ledger-code-mapping-learned/SKILL.md")
            .exists()
    );
    // LS-B's holds the curated skills, which the learner updated in place.
    let b_dir = lq::exports(&conn, spaces[1].id).unwrap().pop().unwrap().dir;
    let md = std::fs::read_to_string(Path::new(&b_dir).join("unit-conversion/SKILL.md")).unwrap();
    assert!(md.contains("## Solve "), "{md}");
    // Curated and learned versions of the same skill are both stored, for the browser's diff.
    let b_versions = lq::versions(&conn, spaces[1].id).unwrap();
    let uc: Vec<&str> = b_versions
        .iter()
        .filter(|v| v.name == "unit-conversion")
        .map(|v| v.origin.as_str())
        .collect();
    assert_eq!(uc, ["curated", "learned"]);
    // Exports are versions: learned skills are recorded with their files.
    let versions = lq::versions(&conn, spaces[0].id).unwrap();
    assert!(versions.iter().all(|v| v.origin == "learned"));
    assert_eq!(versions.len(), 5);

    // The report of the finished experiment: the same four pass rates, the plan's comparisons,
    // and every format on disk.
    let report = skillscope::report::build(
        &conn,
        &skillscope::analysis::results::Selection::Experiment("e2e".into()),
        &skillscope::analysis::results::Scoring::default(),
    )
    .unwrap();
    let cond_labels: Vec<&str> = report
        .results
        .conditions
        .iter()
        .map(|c| c.label.as_str())
        .collect();
    assert_eq!(cond_labels, ["A", "B", "A'", "B'"]);
    for (r, c) in out.results.iter().zip(&report.results.conditions) {
        assert!(
            (r.summary.pass_rate - c.pass_rate).abs() < 1e-12,
            "{}",
            c.label
        );
    }
    let names: Vec<&str> = report
        .results
        .comparisons
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    // Round 1's own curated effect first (issue 36), then the plan's four.
    assert_eq!(
        names,
        ["B vs A", "A' vs A", "B' vs B", "A' vs B", "B' vs A'"]
    );
    let report_dir = dir.path().join("report");
    use skillscope::report::Format;
    let written = skillscope::report::write(
        &report,
        &report_dir,
        &[Format::Md, Format::Json, Format::Csv],
    )
    .unwrap();
    let md = std::fs::read_to_string(report_dir.join("report.md")).unwrap();
    assert!(md.contains("| A' vs A |"), "{md}");
    assert!(md.contains("| B vs A |"), "{md}");
    for f in &written.files {
        assert!(std::fs::metadata(f).unwrap().len() > 0, "{}", f.display());
    }
    assert!(report_dir.join("charts/pass_rate.png").exists());
    for section in [
        "## Pass@2-adaptive",
        "### Failure categories",
        "## Skill content",
        "## Flaky tasks",
    ] {
        assert!(md.contains(section), "{section}: {md}");
    }
    assert!(report.results.interim.is_none());
    assert!(
        !out.adaptive.is_empty(),
        "the closing table has pass@2-adaptive"
    );
    check_report_against_csv_and_store(&report_dir, &conn);

    // Running the finished experiment again changes nothing.
    let again = exp.run(&setup).await.unwrap();
    assert!(again.finished);
    assert_eq!(server.state.lock().unwrap().session_count(), 10);
    server.stop().await;
}

/// The report's pass@2 figures recomputed from `per_task.csv` alone, its failure categories
/// against the store's judged failures, and its skill token counts from the exported SKILL.md
/// files — independently of skillscope's analysis code.
fn check_report_against_csv_and_store(dir: &Path, conn: &rusqlite::Connection) {
    use std::collections::BTreeMap;
    // task → label → (pass@1, planned, passed), by the files' own headers.
    let mut per: BTreeMap<String, BTreeMap<String, (f64, f64, f64)>> = BTreeMap::new();
    let mut rd = csv::Reader::from_path(dir.join("per_task.csv")).unwrap();
    let head = rd.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let (task, label, p1, planned, passed) = (
        col("task"),
        col("condition"),
        col("pass_at_1"),
        col("planned"),
        col("passed"),
    );
    for rec in rd.records() {
        let rec = rec.unwrap();
        per.entry(rec[task].to_string()).or_default().insert(
            rec[label].to_string(),
            (
                rec[p1].parse().unwrap(),
                rec[planned].parse().unwrap(),
                rec[passed].parse().unwrap(),
            ),
        );
    }
    // Chen et al. 2021 eq. 1 for k = 2; undefined with fewer than 2 trials.
    let pass2 =
        |n: f64, c: f64| (n >= 2.0).then(|| 1.0 - ((n - c) * (n - c - 1.0)) / (n * (n - 1.0)));
    let mut rd = csv::Reader::from_path(dir.join("pass_at_2.csv")).unwrap();
    let head = rd.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let (c_adaptive, c_pass2, c_why, c_gain) = (
        col("pass2_adaptive"),
        col("pass2"),
        col("pass2_undefined"),
        col("gain_pp"),
    );
    let mut overall = 0;
    for rec in rd.records() {
        let rec = rec.unwrap();
        if &rec[1] != "overall" {
            continue;
        }
        overall += 1;
        let (r1, r2) = rec[0].split_once(" → ").unwrap();
        let n = per.len() as f64;
        let adaptive: f64 = per
            .values()
            .map(|m| 1.0 - (1.0 - m[r1].0) * (1.0 - m[r2].0))
            .sum::<f64>()
            / n;
        let got: f64 = rec[c_adaptive].parse().unwrap();
        assert!((got - adaptive).abs() < 1e-12, "{rec:?} vs {adaptive}");
        let independent: Option<f64> = per
            .values()
            .map(|m| pass2(m[r1].1, m[r1].2))
            .sum::<Option<f64>>()
            .map(|s| s / n);
        match independent {
            Some(independent) => {
                let p2: f64 = rec[c_pass2].parse().unwrap();
                let gain: f64 = rec[c_gain].parse().unwrap();
                assert!((p2 - independent).abs() < 1e-12, "{rec:?} vs {independent}");
                assert!((gain - (adaptive - independent) * 100.0).abs() < 1e-9);
            }
            // One trial per task: pass@2 and the gain are undefined, with the reason.
            None => {
                assert!(rec[c_pass2].is_empty() && rec[c_gain].is_empty(), "{rec:?}");
                assert!(!rec[c_why].is_empty(), "{rec:?}");
            }
        }
    }
    assert_eq!(overall, 2, "A → A' and B → B'");
    // Every judged failure of the store (a verdict without full marks) has one category in the
    // report.
    let judged: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM trials WHERE superseded = 0 AND status = 'done'
             AND outcome IN ('fail', 'agent-timeout', 'verifier-timeout')
             AND NOT COALESCE(reward >= 1.0 - 1e-9, 0)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let mut rd = csv::Reader::from_path(dir.join("failure_categories.csv")).unwrap();
    let counted: i64 = rd
        .records()
        .map(|r| r.unwrap()[2].parse::<i64>().unwrap())
        .sum();
    assert_eq!(counted, judged);
    // Token counts: the exported SKILL.md bodies, counted again here.
    let mut rd = csv::Reader::from_path(dir.join("skill_content.csv")).unwrap();
    let mut learned_changes = 0;
    let mut rows = 0;
    for rec in rd.records() {
        let rec = rec.unwrap();
        rows += 1;
        if let Some(label) = rec[0].strip_prefix("skills:") {
            let export: String = conn
                .query_row(
                    "SELECT dir FROM space_exports WHERE dir LIKE '%' || ?1",
                    [label],
                    |r| r.get(0),
                )
                .unwrap();
            let md =
                std::fs::read_to_string(Path::new(&export).join(&rec[2]).join("SKILL.md")).unwrap();
            let body = skillscope::analysis::skill_content::body(&md);
            assert_eq!(
                rec[3].parse::<usize>().unwrap(),
                skillscope::analysis::skill_content::count_tokens(body)
            );
            if rec[8].parse::<usize>().is_ok_and(|n| n > 0) {
                learned_changes += 1;
            }
        }
    }
    assert!(rows > 0);
    assert!(
        learned_changes > 0,
        "LS-B's learned versions of curated skills changed lines"
    );
}

fn skill_zip(name: &str, files: &[(&str, &str)]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (path, text) in files {
        w.start_file(
            format!("{name}/{path}"),
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        w.write_all(text.as_bytes()).unwrap();
    }
    w.finish().unwrap().into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exported_skill_is_what_the_agent_finds_in_round_2() {
    common::require_docker().await;
    let scratch = common::Scratch::new();
    let server = FakeServer::start(FakeState::new(KEY, true), ([127, 0, 0, 1], 0).into()).await;
    let client = client(&server.base_url());

    // Round 1 without skills: the skill-gated task needs its answer key and fails.
    let mut req = request(
        "gated-r1",
        &common::fixtures(),
        &["skill-gated"],
        &scratch.jobs(),
        1,
    );
    req.conditions = vec![Condition::NoSkills];
    let out = scratch.run(req).await;
    let r1 = scratch.trials(out.run.id);
    assert_eq!(r1[0].outcome, Some(Outcome::Fail));

    // A space holding the answer key (as a learner would write it) and a hostile skill.
    let space = client
        .create_learning_space(json!({"test": true}))
        .await
        .unwrap();
    let key = client
        .upload_skill(
            "answer-key.zip",
            skill_zip(
                "answer-key",
                &[
                    ("SKILL.md", "---\nname: answer-key\ndescription: The answer to the gated task.\n---\n# Answer key\nThe answer is in key.txt.\n"),
                    ("key.txt", "42\n"),
                ],
            ),
            &json!({}),
        )
        .await
        .unwrap();
    client.include_skill(&space.id, &key.id).await.unwrap();
    {
        let mut st = server.state.lock().unwrap();
        st.put_skill_file(
            &space.id,
            "sneaky",
            "SKILL.md",
            b"---\nname: sneaky\ndescription: x\n---\n",
        );
        st.put_skill_file(&space.id, "sneaky", "../../outside.txt", b"escaped");
    }
    let row = scratch
        .store
        .writer()
        .write(move |c| {
            let s = lq::find_or_insert_space(
                c,
                &lq::NewSpace {
                    label: "LS-A".into(),
                    run_id: out.run.id,
                    condition: "no-skills".into(),
                    experiment: None,
                    base_url: "http://fake".into(),
                    curated: false,
                    keep_defaults: true,
                },
            )?;
            lq::patch_space(
                c,
                s.id,
                &lq::SpacePatch {
                    remote_id: Some(space.id.clone()),
                    ..Default::default()
                },
            )?;
            lq::get_space(c, s.id)
        })
        .await
        .unwrap();
    let exports = scratch.dir.path().join("exports");
    let (export, report) = export_version(&scratch.store, &client, &row, &exports)
        .await
        .unwrap();
    assert_eq!(report.refused.len(), 1, "{:?}", report.refused);
    assert_eq!(report.refused[0].skill, "sneaky");
    assert!(!scratch.dir.path().join("outside.txt").exists());
    assert!(!exports.join("outside.txt").exists());
    let dir = Path::new(&export.dir);
    assert_eq!(
        std::fs::read_to_string(dir.join("answer-key/key.txt")).unwrap(),
        "42\n"
    );
    assert!(!dir.join("sneaky").exists());

    // Round 2 with the exported folder: the agent finds the key where every harness looks.
    let mut req = request(
        "gated-r2",
        &common::fixtures(),
        &["skill-gated"],
        &scratch.jobs(),
        1,
    );
    req.conditions = vec![Condition::parse(&format!("skills:{}", export.dir)).unwrap()];
    let out = scratch.run(req).await;
    let r2 = scratch.trials(out.run.id);
    assert_eq!(r2[0].outcome, Some(Outcome::Pass), "{:?}", r2[0]);
    assert_eq!(r2[0].reward, Some(1.0));
}

/// The split fixture tasks: two domains (`alpha`, `beta`) of two tasks each, each with one curated
/// skill `<task>-notes`; their solutions print the skills the image holds where Claude Code looks.
fn split_tasks() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/split-tasks")
}

/// The skill folders a trial's container held where the harness looks, from its oracle output.
fn skills_seen(trial_dir: &str) -> Vec<String> {
    let out = std::fs::read_to_string(Path::new(trial_dir).join("agent/oracle.txt")).unwrap();
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("skills-seen:"))
        .unwrap_or_else(|| panic!("no skills-seen line in {trial_dir}: {out}"));
    let mut v: Vec<String> = line.split_whitespace().map(String::from).collect();
    v.sort();
    v
}

/// A held-out experiment per `round2_skills` mode against the fake server: learning reads only the
/// train tasks' trials (the server's sessions show it), round 2 gives every task the skills its
/// mode selects — recorded in `round2_skills` and found inside the task's container — and the
/// report has same-task and held-out results and the hypotheses on each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_split_experiment_learns_from_train_tasks_and_selects_round_2_skills() {
    use std::collections::BTreeMap;
    common::require_docker().await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("split.db")).unwrap();
    for mode in ["all", "domain", "task"] {
        let server = FakeServer::start(FakeState::new(KEY, true), ([127, 0, 0, 1], 0).into()).await;
        let name = format!("split-{mode}");
        let plan: Plan = toml::from_str(&format!(
            "name = \"{name}\"\ntrials = 1\nround2_skills = \"{mode}\"\n\
             [split]\ntest_fraction = 0.5\nseed = 7\nround2 = \"all\"\n"
        ))
        .unwrap();
        let (setup, exp) = experiment(&store, &server, plan, &split_tasks(), dir.path());
        let out = bounded(&store, exp.run(&setup)).await.unwrap();
        assert!(out.finished, "{mode}: {:?}", out.experiment);
        let conn = store.connect().unwrap();

        // The split: one train and one test task per domain, stored with the experiment.
        let split = out.experiment.split.clone().expect("a stored split");
        let train: Vec<String> = serde_json::from_value(split["train"].clone()).unwrap();
        let test: Vec<String> = serde_json::from_value(split["test"].clone()).unwrap();
        assert_eq!((train.len(), test.len()), (2, 2), "{split}");
        let domain = |t: &str| t.split('-').next().unwrap().to_string();
        for d in ["alpha", "beta"] {
            assert_eq!(
                train.iter().filter(|t| domain(t) == d).count(),
                1,
                "{split}"
            );
        }
        // Learning read only the train tasks' trials: two spaces × two train tasks × one trial.
        let learned: Vec<String> = server
            .state
            .lock()
            .unwrap()
            .session_tasks()
            .into_iter()
            .filter(|t| !t.is_empty())
            .collect();
        assert_eq!(learned.len(), 4, "{learned:?}");
        assert!(
            learned.iter().all(|t| train.contains(t)),
            "{learned:?} vs {train:?}"
        );

        // What each task should get: LS-A learned one skill per train task; LS-B holds every
        // task's curated skill (the train tasks' updated by learning).
        let learned_of = |t: &str| format!("{t}-learned");
        let notes_of = |t: &str| format!("{t}-notes");
        let all_tasks: Vec<String> = train.iter().chain(&test).cloned().collect();
        let want = |space: &str, task: &str| -> Vec<String> {
            let mut v: Vec<String> = match (space, mode) {
                ("LS-A", "all") => train.iter().map(|t| learned_of(t)).collect(),
                ("LS-A", "domain") => train
                    .iter()
                    .filter(|t| domain(t) == domain(task))
                    .map(|t| learned_of(t))
                    .collect(),
                ("LS-A", _) => train
                    .iter()
                    .filter(|t| *t == task)
                    .map(|t| learned_of(t))
                    .collect(),
                (_, "all") => all_tasks.iter().map(|t| notes_of(t)).collect(),
                (_, "domain") => all_tasks
                    .iter()
                    .filter(|t| domain(t) == domain(task))
                    .map(|t| notes_of(t))
                    .collect(),
                _ => vec![notes_of(task)],
            };
            v.sort();
            v
        };
        let rows = lq::round2_skills(&conn, &name).unwrap();
        assert_eq!(rows.len(), 8, "{rows:#?}");
        let recorded: BTreeMap<(String, String), Vec<String>> = rows
            .iter()
            .map(|r| {
                assert_eq!(r.mode, mode);
                assert_eq!(r.n_skills as usize, r.skills.len());
                ((r.label.clone(), r.task_id.clone()), r.skills.clone())
            })
            .collect();
        for space in ["LS-A", "LS-B"] {
            for t in &all_tasks {
                assert_eq!(
                    recorded[&(space.to_string(), t.clone())],
                    want(space, t),
                    "{mode} {space} {t}"
                );
            }
        }
        // …and exactly those were in each round-2 container.
        let r2 = queries::find_run(&conn, &format!("{name}-round2"))
            .unwrap()
            .unwrap();
        if mode != "all" {
            assert!(
                r2.conditions
                    .iter()
                    .all(|c| c.starts_with("skills-by-task:")),
                "{:?}",
                r2.conditions
            );
        }
        let space_of = |condition: &str| {
            if condition == r2.conditions[0] {
                "LS-A"
            } else {
                "LS-B"
            }
        };
        let trials = queries::current_trials(&conn, r2.id).unwrap();
        assert_eq!(trials.len(), 8);
        for t in &trials {
            assert_eq!(t.outcome, Some(Outcome::Pass), "{t:?}");
            assert_eq!(
                skills_seen(t.trial_dir.as_deref().unwrap()),
                want(space_of(&t.condition), &t.task_id),
                "{mode}: {} in {}",
                t.task_id,
                t.condition
            );
        }

        // Same-task and held-out results, each with the hypotheses.
        let report = skillscope::report::build(
            &conn,
            &skillscope::analysis::results::Selection::Experiment(name.clone()),
            &skillscope::analysis::results::Scoring::default(),
        )
        .unwrap();
        let held = report.results.held_out.as_ref().expect("held-out results");
        let names: Vec<&str> = held.subsets.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["same-task", "held-out"]);
        assert_eq!(held.subsets[1].tasks, test);
        for s in &held.subsets {
            assert_eq!(s.conditions.len(), 4, "{s:?}");
            assert!(s.comparisons.iter().any(|c| c.name == "A' vs A"));
            assert!(!s.adaptive.is_empty());
        }
        let scopes: std::collections::BTreeSet<&str> = report
            .results
            .hypotheses
            .iter()
            .map(|h| h.scope.as_str())
            .collect();
        assert_eq!(
            scopes,
            ["all tasks", "held-out", "same-task"].into_iter().collect()
        );
        // Provenance by content hash agrees with the split: every round-2 trial of a train task
        // saw a skill learned from that task's round-1 trials, no test task's did — so the
        // hypotheses are not answered a second time under other names.
        let x = &report.results.exposure;
        let split = x
            .split
            .as_ref()
            .expect("tasks on both sides of the provenance split");
        let mut train_sorted = train.clone();
        train_sorted.sort();
        assert_eq!(split.same_task, train_sorted, "{mode}: {x:#?}");
        assert!(split.same_as_split, "{mode}: {split:?}");
        assert!(!x.provenance.is_empty());
        for p in &x.provenance {
            assert_eq!(p.trials, 1, "{p:?}");
            assert_eq!(p.same_task > 0, train.contains(&p.task), "{mode}: {p:?}");
        }
        assert_eq!(report.results.round2_skills.len(), 8);
        for r in &report.results.round2_skills {
            let want = if r.space == "LS-A" { "A'" } else { "B'" };
            assert_eq!(r.condition, want, "{r:?}");
        }
    }
}

/// Acceptance: `skillscope experiment plans/held-out.toml` — condition C, a held-out split and
/// `round2_skills = "domain"` — runs to the end on the example tasks against the fake server, and
/// its report answers the three hypotheses with same-task and held-out numbers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_held_out_plan_runs_to_the_end_and_answers_the_hypotheses() {
    common::require_docker().await;
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(FakeState::new(KEY, true), ([127, 0, 0, 1], 0).into()).await;
    let plans = dir.path().join("plans");
    std::fs::create_dir_all(&plans).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/held-out.toml"),
        plans.join("held-out.toml"),
    )
    .unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .args([
            "experiment",
            "plans/held-out.toml",
            "--headless",
            "--db",
            "exp.db",
        ])
        .current_dir(dir.path())
        .env("ACONTEXT_BASE_URL", server.base_url())
        .env("ACONTEXT_API_KEY", KEY)
        .output()
        .await
        .expect("run skillscope experiment");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("experiment held-out — done"), "{stdout}");
    assert!(stdout.contains("A' vs C"), "{stdout}");
    assert!(stdout.contains("H2 [held-out]"), "{stdout}");

    // Round 1 ran A, B and C; the split and the skills per task are in the store.
    let store = Store::open(&dir.path().join("exp.db")).unwrap();
    let conn = store.connect().unwrap();
    let r1 = queries::find_run(&conn, "held-out-round1")
        .unwrap()
        .unwrap();
    assert_eq!(r1.conditions, ["no-skills", "curated", "self-generated"]);
    let exp = lq::find_experiment(&conn, "held-out").unwrap().unwrap();
    let test = exp.split.as_ref().unwrap()["test"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(test, 2, "{:?}", exp.split);
    let rows = lq::round2_skills(&conn, "held-out").unwrap();
    assert_eq!(rows.len(), 10);
    assert!(rows.iter().all(|r| r.mode == "domain"));
    // Every self-generated trial recorded what it generated (the oracle writes no skill).
    let generated = queries::generated_skills(&conn, r1.id).unwrap();
    assert_eq!(generated.len(), 10);
    assert!(generated.iter().all(|g| g.generated.skills.is_empty()));

    // The report answers the hypotheses over all, same-task and held-out tasks.
    let md =
        std::fs::read_to_string(dir.path().join("reports/held-out/report.md")).expect("report");
    for part in [
        "## Hypotheses",
        "## Held-out transfer",
        "### same-task",
        "### held-out",
        "(A' − A) / (B − A)",
        "Δ A' − C",
        "Δ B' − B",
        "## Round-2 skills per task",
        "## Self-generated skills",
        "### Learned skills and the tasks they were learned from",
        "provenance agrees with the split",
    ] {
        assert!(md.contains(part), "{part}:\n{md}");
    }
    let mut rd =
        csv::Reader::from_path(dir.path().join("reports/held-out/hypotheses.csv")).unwrap();
    let scopes: std::collections::BTreeSet<String> =
        rd.records().map(|r| r.unwrap()[1].to_string()).collect();
    assert_eq!(
        scopes,
        ["all tasks", "held-out", "same-task"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    );
    assert!(dir.path().join("reports/held-out/held_out.csv").exists());
}

/// Acceptance: the dry run of the example plan finishes from the binary alone — a cleared
/// environment (no cargo on `PATH`, no Acontext key or URL, no `HOME`), its folder outside the
/// repository — with a report, and every learned skill says it came from the stand-in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dry_run_of_the_example_plan_needs_only_the_binary() {
    common::require_docker().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/examples.toml"),
        dir.path().join("examples.toml"),
    )
    .unwrap();
    let path = "/usr/sbin:/usr/bin:/sbin:/bin";
    for d in path.split(':') {
        assert!(!Path::new(d).join("cargo").exists(), "cargo in {d}");
    }
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_skillscope"));
    cmd.args(["experiment", "examples.toml", "--dry-run", "--headless"])
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", path);
    if let Ok(host) = std::env::var("DOCKER_HOST") {
        cmd.env("DOCKER_HOST", host);
    }
    let t0 = std::time::Instant::now();
    let out = tokio::task::spawn_blocking(move || {
        crate::support::process::bounded_output(&mut cmd, crate::support::process::OUTPUT_LIMIT)
    })
    .await
    .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    for want in [
        "dry run of experiment examples-dry-run",
        "learns nothing real",
        "experiment examples-dry-run — done",
        "report: ",
    ] {
        assert!(stdout.contains(want), "{want:?} in {stdout}");
    }
    // The forecast printed at the start comes from the examples' measured durations, not the
    // timeouts, and is within a few times of the real run (issue 48: 20 min forecast for 2).
    assert!(
        stderr.contains("time from: the built-in example tasks' measured oracle trials"),
        "{stderr}"
    );
    let total = stderr
        .lines()
        .find(|l| l.contains("│ total"))
        .expect("the forecast's total row");
    let cell = total
        .rsplit('┆')
        .next()
        .unwrap()
        .trim_end_matches('│')
        .trim();
    let point = cell.split(" (").next().unwrap();
    let secs = match point.split_once(' ') {
        Some((n, "s")) => n.parse::<f64>().unwrap(),
        Some((n, "min")) => n.parse::<f64>().unwrap() * 60.0,
        _ => panic!("a duration: {cell}"),
    };
    let took = t0.elapsed().as_secs_f64();
    assert!(
        secs * 5.0 >= took && secs <= took * 5.0,
        "forecast {secs} s for a dry run of {took:.0} s: {total}"
    );
    let root = dir.path().join("dry-run/examples-dry-run");
    assert!(
        root.join("reports/examples-dry-run/report.md").is_file(),
        "{stdout}"
    );
    // LS-A's export: every skill the stand-in wrote carries its label.
    let exports = root.join("exports/examples-dry-run");
    let ls_a = std::fs::read_dir(&exports)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("ls-a-v")
        })
        .expect("LS-A's export");
    let md = std::fs::read_to_string(ls_a.join("ledger-code-mapping-learned/SKILL.md")).unwrap();
    assert!(
        md.contains(skillscope::acontext::standin::STANDIN_NOTE),
        "{md}"
    );
    eprintln!("dry run: {:.0}s", t0.elapsed().as_secs_f64());
}

/// Ctrl-C in a dry run stops it without promising a resume (issue 48: it said "state is saved;
/// re-run to resume", but a dry run is made afresh each time): the stop line, the engine's
/// notice and the closing line all say a dry run is not resumed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_in_a_dry_run_promises_no_resume() {
    use crate::support::process::{Skillscope, stderr_lines, wait};
    use std::process::Stdio;
    common::require_docker().await;
    let dir = tempfile::tempdir().unwrap();
    let mut child = Skillscope::new(["experiment", "--dry-run", "--headless"])
        .bare(dir.path())
        .spawn(Stdio::piped(), Stdio::piped());
    let mut stdout = child.stdout.take().unwrap();
    let (rx, reader) = stderr_lines(&mut child);
    let mut said = Vec::new();
    loop {
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(180))
            .expect("no trial line from the dry run");
        let first_trial = line.contains("[1/");
        said.push(line);
        if first_trial {
            break;
        }
    }
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let code = wait(&mut child, std::time::Duration::from_secs(120));
    reader.join().unwrap();
    said.extend(rx.try_iter());
    let err = said.join("\n");
    let mut out = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut out).unwrap();
    assert_eq!(code, 130, "{out}\n{err}");
    assert!(
        err.contains("a dry run is not resumed, the next one starts afresh"),
        "{err}"
    );
    for promise in [
        "saving state",
        "re-run to resume",
        "run the same command again to resume",
    ] {
        assert!(!err.contains(promise), "{promise:?}: {err}");
        assert!(!out.contains(promise), "{promise:?}: {out}");
    }
    assert!(
        out.contains("a dry run is not resumed: the same command starts a new one"),
        "{out}"
    );
}

/// `run` (an experiment in this process), at most 15 minutes: past that the test fails with each
/// run's trials that have no verdict yet and their phase, so a hang names where it stopped.
async fn bounded<T>(store: &Store, run: impl std::future::Future<Output = T>) -> T {
    let limit = std::time::Duration::from_secs(15 * 60);
    match tokio::time::timeout(limit, run).await {
        Ok(v) => v,
        Err(_) => {
            let conn = store.connect().unwrap();
            let mut open = Vec::new();
            for r in queries::list_runs(&conn).unwrap() {
                for t in queries::current_trials(&conn, r.id).unwrap() {
                    if t.outcome.is_none() {
                        open.push(format!("{} {} {}", r.name, t.trial_name, t.status));
                    }
                }
            }
            panic!(
                "the experiment did not end within {limit:?}; trials without a verdict: {open:#?}"
            );
        }
    }
}
