//! Importing the published SkillsBench result files that are not Harbor job folders — the
//! website's results registry (`website-data/results-registry.json`) and the per-trial CSV
//! (`shenghan/experiment_runs__gemini-cli-gemini3flash_subset.csv`) — and analysing them.
//!
//! Every expected number is computed here from the raw files (serde_json values and the CSV text
//! split on commas — the file has no quoted fields), without any code of the crate: Method D per
//! condition (per task: mean reward; per condition: mean over the tasks), Δ in pp and
//! g = (p_with − p_without)/(1 − p_without). Then: re-importing adds nothing, a corrected copy
//! records a new attempt that the analysis sees, and malformed rows are reported with file and
//! line (and, in the registry, index) while the rest is imported.

use crate::support::common;
use common::shared;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde_json::Value;
use skillscope::analysis::results::Scoring;
use skillscope::analysis::results::{ConditionResult, FailureMode, Results, Selection, analyze};
use skillscope::import::Format;
use skillscope::import::{ImportOptions, ImportReport, import};
use skillscope::skillsbench::Catalog;
use skillscope::store::{Outcome, RunRow, Store, TrialKey, queries};

fn registry_path() -> PathBuf {
    shared().join("skillsbench/published/website-data/results-registry.json")
}

/// The CSV's file name carries the agent and model (`gemini-cli`, `gemini3flash`): copies keep it.
const CSV_NAME: &str = "experiment_runs__gemini-cli-gemini3flash_subset.csv";

fn csv_path() -> PathBuf {
    shared()
        .join("skillsbench/published/shenghan")
        .join(CSV_NAME)
}

fn opts(roots: Vec<PathBuf>) -> ImportOptions {
    ImportOptions {
        roots,
        condition: None,
        run: None,
        catalog: Catalog::shipped(),
        batch: 64,
    }
}

fn new_store(dir: &Path) -> Store {
    Store::open(&dir.join("p.db")).unwrap()
}

fn run_analysis(conn: &Connection, run: &str) -> Results {
    analyze(
        conn,
        &Selection::Runs(vec![run.to_string()]),
        &Scoring::default(),
    )
    .unwrap()
}

fn condition<'a>(r: &'a Results, key: &str) -> &'a ConditionResult {
    r.conditions
        .iter()
        .find(|c| c.condition == key)
        .unwrap_or_else(|| panic!("no condition {key} in {:?}", r.conditions))
}

fn trial_count(conn: &Connection) -> (i64, i64) {
    conn.query_row(
        "SELECT COUNT(*), COALESCE(SUM(superseded), 0) FROM trials",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .unwrap()
}

// -------------------------------------------------------------------------------------------
// The registry, by hand

/// The registry's rows as raw JSON values.
fn registry_rows(path: &Path) -> Vec<Value> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v.as_array().unwrap().clone()
}

/// One config's scores: condition ("No Skills" / "With Skills") → task → score (0–100).
type ConfigScores = BTreeMap<String, BTreeMap<String, f64>>;

/// Config label (`model`, e.g. "Codex (GPT-5.5)", unique per harness × model) → its scores.
fn registry_by_hand(rows: &[Value]) -> BTreeMap<String, ConfigScores> {
    let mut out: BTreeMap<String, ConfigScores> = BTreeMap::new();
    for r in rows {
        let prev = out
            .entry(r["model"].as_str().unwrap().to_string())
            .or_default()
            .entry(r["condition"].as_str().unwrap().to_string())
            .or_default()
            .insert(
                r["task"].as_str().unwrap().to_string(),
                r["score"].as_f64().unwrap(),
            );
        assert!(prev.is_none(), "duplicate row {r}");
    }
    out
}

/// Method D from the scores: mean over tasks of score/100.
fn method_d(scores: &BTreeMap<String, f64>) -> f64 {
    scores.values().map(|s| s / 100.0).sum::<f64>() / scores.len() as f64
}

/// The run a registry config was imported into, found by the config label the importer keeps in
/// the run's settings (not by re-deriving its name).
fn run_of_config<'a>(runs: &'a [RunRow], label: &str) -> &'a RunRow {
    let found: Vec<&RunRow> = runs
        .iter()
        .filter(|r| r.settings["model"].as_str() == Some(label))
        .collect();
    assert_eq!(found.len(), 1, "runs for config {label}");
    found[0]
}

/// The score is the task's mean reward ×100 rounded to 0.1, so score/100 is within 0.0005 of the
/// true mean; the importer's per-task means (reconstructed from score, passCount, perfectCount)
/// are within that of score/100, and so is any mean of them over tasks. 1e-6 covers the
/// importer's clamp margin for partial rewards and float noise.
const TASK_TOL: f64 = 0.0005 + 1e-6;

#[test]
fn registry_pass_rates_delta_and_gain_match_the_raw_json_for_every_config() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path());
    let report = import(&store, &opts(vec![registry_path()])).unwrap();
    assert!(report.broken.is_empty(), "{:?}", report.broken);

    let rows = registry_rows(&registry_path());
    assert_eq!(rows.len(), 3132);
    let trials_in_file: u64 = rows.iter().map(|r| r["trials"].as_u64().unwrap()).sum();
    assert_eq!(trials_in_file, 3132 * 3);
    let by_hand = registry_by_hand(&rows);
    assert_eq!(by_hand.len(), 18, "18 harness × model configs");
    let all_tasks: BTreeSet<&str> = rows.iter().map(|r| r["task"].as_str().unwrap()).collect();
    assert_eq!(all_tasks.len(), 87);

    // The file report.
    assert_eq!(report.files.len(), 1);
    let f = &report.files[0];
    assert_eq!(f.format, Format::Registry);
    assert_eq!((f.rows, f.broken_rows), (3132, 0));
    assert_eq!((f.trials, f.imported, f.already_present), (9396, 9396, 0));
    assert_eq!(f.tasks, 87);
    assert_eq!(report.imported, 9396);
    assert_eq!(report.runs.len(), 18);

    let conn = store.connect().unwrap();
    let runs = queries::list_runs(&conn).unwrap();
    assert_eq!(runs.len(), 18, "one run per config");
    // One name checked literally: `registry-<harness>-<modelShort>`, slugged.
    assert!(
        runs.iter()
            .any(|r| r.name == "registry-claude-code-opus-4.7"
                && r.agent == "claude-code"
                && r.model.as_deref() == Some("Opus 4.7")),
        "{:?}",
        runs.iter().map(|r| &r.name).collect::<Vec<_>>()
    );

    for (label, conds) in &by_hand {
        let run = run_of_config(&runs, label);
        assert_eq!(run.source, "registry");
        assert_eq!(run.n_trials, 3, "{label}");
        assert_eq!(run.conditions, vec!["no-skills", "curated"], "{label}");

        // 3 aggregated trials per task and condition, indices 1..=3, each one attempt.
        let trials = queries::current_trials(&conn, run.id).unwrap();
        assert_eq!(trials.len(), 87 * 2 * 3, "{label}");
        let mut per_slot: BTreeMap<(String, String), Vec<u32>> = BTreeMap::new();
        for t in &trials {
            assert!(t.aggregated, "{label}: {t:?}");
            assert_eq!(t.attempt, 1);
            per_slot
                .entry((t.task_id.clone(), t.condition.clone()))
                .or_default()
                .push(t.trial_index);
        }
        assert_eq!(per_slot.len(), 87 * 2);
        assert!(per_slot.values().all(|v| v == &vec![1, 2, 3]), "{label}");
        // passCount / perfectCount survive the reconstruction: reward > 0 and passes.
        for r in rows.iter().filter(|r| r["model"] == label.as_str()) {
            let cond = match r["condition"].as_str().unwrap() {
                "No Skills" => "no-skills",
                _ => "curated",
            };
            let mine: Vec<_> = trials
                .iter()
                .filter(|t| t.task_id == r["task"].as_str().unwrap() && t.condition == cond)
                .collect();
            let pos = mine.iter().filter(|t| t.reward.unwrap() > 0.0).count();
            let perfect = mine
                .iter()
                .filter(|t| t.outcome == Some(Outcome::Pass))
                .count();
            assert_eq!(pos as u64, r["passCount"].as_u64().unwrap(), "{r}");
            assert_eq!(perfect as u64, r["perfectCount"].as_u64().unwrap(), "{r}");
        }

        let res = run_analysis(&conn, &run.name);
        assert_eq!(res.tasks.len(), 87);
        let without = method_d(&conds["No Skills"]);
        let with = method_d(&conds["With Skills"]);
        let (a, b) = (condition(&res, "no-skills"), condition(&res, "curated"));
        for (c, want, raw) in [
            (a, without, &conds["No Skills"]),
            (b, with, &conds["With Skills"]),
        ] {
            assert!(c.aggregated, "{label}");
            assert_eq!((c.n_tasks, c.planned, c.done), (87, 261, 261), "{label}");
            assert!(
                (c.pass_rate - want).abs() <= TASK_TOL,
                "{label} {}: {} vs {want}",
                c.condition,
                c.pass_rate
            );
            // Each task's mean as well.
            for (i, t) in res.tasks.iter().enumerate() {
                let s = raw[&t.id] / 100.0;
                assert!(
                    (c.per_task[i].unwrap() - s).abs() <= TASK_TOL,
                    "{label} {} {}: {:?} vs {s}",
                    c.condition,
                    t.id,
                    c.per_task[i]
                );
            }
        }
        let cmp = res
            .comparisons
            .iter()
            .find(|c| c.name == "curated vs no-skills")
            .unwrap();
        // Δ: each rate is off by at most TASK_TOL, so Δ by at most 2·TASK_TOL·100 pp.
        let delta = (with - without) * 100.0;
        assert!(
            (cmp.delta_pp.unwrap() - delta).abs() <= 2.0 * TASK_TOL * 100.0,
            "{label}: Δ {:?} vs {delta}",
            cmp.delta_pp
        );
        // g = (w − wo)/(1 − wo): |∂g/∂w| = 1/(1 − wo), |∂g/∂wo| = (1 − w)/(1 − wo)², so an error
        // of ε in each rate moves g by at most ε·(1/(1 − wo) + (1 − w)/(1 − wo)²) (first order;
        // the 1.01 covers the second order at these magnitudes).
        let g = (with - without) / (1.0 - without);
        let g_tol = 1.01
            * TASK_TOL
            * (1.0 / (1.0 - without - TASK_TOL)
                + (1.0 - with + TASK_TOL) / (1.0 - without - TASK_TOL).powi(2));
        let got = cmp.g.unwrap();
        assert!(
            (got - g).abs() <= g_tol,
            "{label}: g {got} vs {g} (tolerance {g_tol})"
        );
        assert_eq!(
            (cmp.p_with, cmp.p_without),
            (Some(b.pass_rate), Some(a.pass_rate))
        );
        assert!(
            res.notes
                .iter()
                .any(|n| n.contains("reconstructed from published aggregates")),
            "{:?}",
            res.notes
        );
    }
    store.writer().stop();
}

// -------------------------------------------------------------------------------------------
// The per-trial CSV, by hand

/// One CSV row as text fields.
struct CsvRow {
    job_name: String,
    task: String,
    condition: String,
    all_tests_counted: String,
    tests_total: String,
    tests_passed: String,
    reward: String,
}

fn csv_rows(text: &str) -> Vec<CsvRow> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let (job, task, cond, counted, total, passed, reward) = (
        col("job_name"),
        col("task"),
        col("condition"),
        col("all_tests_counted"),
        col("tests_total"),
        col("tests_passed"),
        col("reward"),
    );
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), header.len(), "{l}");
            CsvRow {
                job_name: f[job].into(),
                task: f[task].into(),
                condition: f[cond].into(),
                all_tests_counted: f[counted].into(),
                tests_total: f[total].into(),
                tests_passed: f[passed].into(),
                reward: f[reward].into(),
            }
        })
        .collect()
}

/// Per CSV condition (`noskills`, `skills`): (Method D with empty reward = 0, trials without a
/// reward, pass rate over the trials with a reward, tasks, trials with reward ≥ 1, wrong output).
struct CsvHand {
    rate: f64,
    no_reward: usize,
    judged: f64,
    tasks: usize,
    passed: usize,
    wrong: usize,
}

fn csv_by_hand(rows: &[CsvRow], cond: &str) -> CsvHand {
    // One trial per task and condition in this file: a task's mean reward is its one reward.
    let mine: Vec<&CsvRow> = rows.iter().filter(|r| r.condition == cond).collect();
    let tasks: BTreeSet<&str> = mine.iter().map(|r| r.task.as_str()).collect();
    assert_eq!(tasks.len(), mine.len(), "one trial per task");
    let reward = |r: &CsvRow| r.reward.parse::<f64>().unwrap_or(0.0);
    let judged: Vec<f64> = mine
        .iter()
        .filter(|r| !r.reward.is_empty())
        .map(|r| reward(r))
        .collect();
    CsvHand {
        rate: mine.iter().map(|r| reward(r)).sum::<f64>() / tasks.len() as f64,
        no_reward: mine.iter().filter(|r| r.reward.is_empty()).count(),
        judged: judged.iter().sum::<f64>() / judged.len() as f64,
        tasks: tasks.len(),
        passed: judged.iter().filter(|x| **x >= 1.0).count(),
        wrong: judged.iter().filter(|x| **x < 1.0).count(),
    }
}

#[test]
fn csv_pass_rates_no_reward_failures_and_judged_delta_match_the_raw_text() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path());
    let report = import(&store, &opts(vec![csv_path()])).unwrap();
    assert!(report.broken.is_empty(), "{:?}", report.broken);

    let text = std::fs::read_to_string(csv_path()).unwrap();
    let rows = csv_rows(&text);
    assert_eq!(rows.len(), 172);
    let ns = csv_by_hand(&rows, "noskills");
    let sk = csv_by_hand(&rows, "skills");
    // The independent numbers, also written out (from the file: 16 and 2 empty rewards).
    assert_eq!((ns.tasks, sk.tasks), (86, 86));
    assert_eq!((ns.no_reward, sk.no_reward), (16, 2));
    assert_eq!((ns.passed, sk.passed), (21, 37));
    assert_eq!((ns.wrong, sk.wrong), (49, 47));
    assert!((ns.rate - 0.276_415_534_883_720_95).abs() < 1e-12);
    assert!((sk.rate - 0.457_077_709_302_325_6).abs() < 1e-12);
    assert!((ns.judged - 0.339_596_228_571_428_57).abs() < 1e-12);
    assert!((sk.judged - 0.467_960_511_904_761_96).abs() < 1e-12);
    let delta = (sk.rate - ns.rate) * 100.0;
    // Δ over trials with a verdict, paired (issue 36): over the 70 tasks with a reward on both
    // sides — not 84 tasks' rate less 70 tasks' (+12.8 pp, over different task sets).
    let with_reward = |cond: &str| -> std::collections::BTreeMap<&str, f64> {
        rows.iter()
            .filter(|r| r.condition == cond && !r.reward.is_empty())
            .map(|r| (r.task.as_str(), r.reward.parse::<f64>().unwrap()))
            .collect()
    };
    let (nsr, skr) = (with_reward("noskills"), with_reward("skills"));
    let both: Vec<&str> = nsr
        .keys()
        .filter(|t| skr.contains_key(*t))
        .copied()
        .collect();
    assert_eq!(both.len(), 70);
    let mean = |m: &std::collections::BTreeMap<&str, f64>| {
        both.iter().map(|t| m[t]).sum::<f64>() / both.len() as f64
    };
    let delta_judged = (mean(&skr) - mean(&nsr)) * 100.0;
    assert!((delta - 18.066_217_441_860_47).abs() < 1e-9);
    assert!((delta_judged - 12.452_781_428_571_418).abs() < 1e-9);
    // Infrastructure moved Δ by ~5.6 pp.
    assert!((delta - delta_judged - 5.613_436_013_289_048).abs() < 1e-9);

    let f = &report.files[0];
    assert_eq!(f.format, Format::Csv);
    assert_eq!(
        (f.rows, f.broken_rows, f.trials, f.imported),
        (172, 0, 172, 172)
    );
    assert_eq!((f.no_reward, f.tasks), (18, 86));
    assert_eq!(report.runs, vec!["csv-gemini-cli-gemini3flash".to_string()]);

    let conn = store.connect().unwrap();
    let run = queries::find_run(&conn, "csv-gemini-cli-gemini3flash")
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            run.agent.as_str(),
            run.model.as_deref(),
            run.source.as_str()
        ),
        ("gemini-cli", Some("gemini3flash"), "csv")
    );
    assert_eq!(run.n_trials, 1);
    assert_eq!(run.conditions, vec!["no-skills", "curated"]);

    // Every trial from its row: reward, outcome, test counts (none when no test report at all:
    // 0 tests and all_tests_counted False), not aggregated.
    let trials = queries::current_trials(&conn, run.id).unwrap();
    assert_eq!(trials.len(), 172);
    for r in &rows {
        let t = trials
            .iter()
            .find(|t| t.trial_name == r.job_name)
            .unwrap_or_else(|| panic!("{} not imported", r.job_name));
        let cond = if r.condition == "noskills" {
            "no-skills"
        } else {
            "curated"
        };
        assert_eq!(
            (t.task_id.as_str(), t.condition.as_str()),
            (r.task.as_str(), cond)
        );
        assert_eq!(t.trial_index, 1);
        assert!(!t.aggregated);
        let reward = r.reward.parse::<f64>().ok();
        assert_eq!(t.reward, reward, "{}", r.job_name);
        let outcome = match reward {
            None => Outcome::NoReward,
            Some(x) if x >= 1.0 => Outcome::Pass,
            Some(_) => Outcome::Fail,
        };
        assert_eq!(t.outcome, Some(outcome), "{}", r.job_name);
        let no_report = r.tests_total == "0" && r.all_tests_counted == "False";
        let tests = (!no_report).then(|| {
            (
                r.tests_total.parse::<i64>().unwrap(),
                r.tests_passed.parse::<i64>().unwrap(),
            )
        });
        assert_eq!(t.tests_total.zip(t.tests_passed), tests, "{}", r.job_name);
    }

    let res = run_analysis(&conn, &run.name);
    assert_eq!(res.tasks.len(), 86);
    let (a, b) = (condition(&res, "no-skills"), condition(&res, "curated"));
    assert!((a.pass_rate - ns.rate).abs() < 1e-12, "{}", a.pass_rate);
    assert!((b.pass_rate - sk.rate).abs() < 1e-12, "{}", b.pass_rate);
    assert!(!a.aggregated && !b.aggregated);
    for (c, h) in [(a, &ns), (b, &sk)] {
        assert_eq!((c.planned, c.done, c.passed), (86, 86, h.passed));
        // The trials without a reward are their own failure mode, counted as infrastructure,
        // apart from wrong output.
        assert_eq!(
            c.failures.get(&FailureMode::NoReward).copied(),
            Some(h.no_reward)
        );
        assert_eq!(
            c.failures.get(&FailureMode::WrongOutput).copied(),
            Some(h.wrong)
        );
        assert_eq!(c.failures.len(), 2, "{:?}", c.failures);
        assert_eq!(c.infrastructure(), h.no_reward);
        assert!((c.pass_rate_judged.unwrap() - h.judged).abs() < 1e-12);
    }
    let cmp = &res.comparisons[0];
    assert_eq!(cmp.name, "curated vs no-skills");
    assert!(
        (cmp.delta_pp.unwrap() - delta).abs() < 1e-9,
        "{:?}",
        cmp.delta_pp
    );
    assert!(
        (cmp.delta_pp_judged.unwrap() - delta_judged).abs() < 1e-9,
        "{:?}",
        cmp.delta_pp_judged
    );
    let g = (sk.rate - ns.rate) / (1.0 - ns.rate);
    assert!((cmp.g.unwrap() - g).abs() < 1e-12);
    // The report says how much infrastructure moved Δ.
    assert!(
        res.notes.iter().any(|n| n
            .contains("2 of 86 trials (curated) and 16 of 86 (no-skills) ended without a verdict")
            && n.contains("Δ = +18.1 pp")
            && n.contains("Δ = +12.5 pp")),
        "{:#?}",
        res.notes
    );
    store.writer().stop();
}

// -------------------------------------------------------------------------------------------
// Re-import, corrections, malformed rows

fn write_rows_one_per_line(path: &Path, rows: &[Value]) {
    // `[`, then one row per line: row i is on line i + 2.
    let body: Vec<String> = rows.iter().map(|r| r.to_string()).collect();
    std::fs::write(path, format!("[\n{}\n]\n", body.join(",\n"))).unwrap();
}

fn key(task: &str, cond: &str, idx: u32) -> TrialKey {
    TrialKey {
        task_id: task.into(),
        condition: cond.into(),
        trial_index: idx,
    }
}

fn file_report(report: &ImportReport, format: Format) -> &skillscope::import::FileReport {
    report.files.iter().find(|f| f.format == format).unwrap()
}

#[test]
fn reimport_is_a_no_op_and_a_corrected_copy_replaces_the_changed_trials() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path());
    let first = import(&store, &opts(vec![registry_path(), csv_path()])).unwrap();
    assert_eq!(first.imported, 9396 + 172);
    assert!(first.broken.is_empty());
    let conn = store.connect().unwrap();
    assert_eq!(trial_count(&conn), (9568, 0));

    // The same files again: nothing new.
    let again = import(&store, &opts(vec![registry_path(), csv_path()])).unwrap();
    assert_eq!((again.imported, again.already_present), (0, 9568));
    for f in &again.files {
        assert_eq!((f.imported, f.replaced), (0, 0), "{f:?}");
    }
    assert_eq!(trial_count(&conn), (9568, 0));
    assert_eq!(queries::list_runs(&conn).unwrap().len(), 19);

    // Corrected copies, elsewhere (identity comes from the data, not the path).
    // Registry: row 0 is 3d-scan-calc, Claude Code (Opus 4.7), No Skills, 0.0 (0 of 3 pass);
    // it becomes 33.3 (1 of 3 perfect).
    let mut rows = registry_rows(&registry_path());
    assert_eq!(
        (
            rows[0]["task"].as_str(),
            rows[0]["model"].as_str(),
            rows[0]["condition"].as_str(),
            rows[0]["score"].as_f64()
        ),
        (
            Some("3d-scan-calc"),
            Some("Claude Code (Opus 4.7)"),
            Some("No Skills"),
            Some(0.0)
        )
    );
    let opus = by_hand_rate(&rows, "Claude Code (Opus 4.7)", "No Skills");
    rows[0]["score"] = serde_json::json!(33.3);
    rows[0]["passCount"] = serde_json::json!(1);
    rows[0]["perfectCount"] = serde_json::json!(1);
    let opus_fixed = by_hand_rate(&rows, "Claude Code (Opus 4.7)", "No Skills");
    // One task of 87 goes from 0 to 1/3.
    assert!((opus_fixed - opus - 0.333 / 87.0).abs() < 1e-12);
    let fixed_dir = dir.path().join("fixed");
    std::fs::create_dir(&fixed_dir).unwrap();
    let reg_copy = fixed_dir.join("results-registry.json");
    std::fs::write(
        &reg_copy,
        serde_json::to_string(&Value::Array(rows)).unwrap(),
    )
    .unwrap();

    // CSV: line 88 (data row 86) is azure-bgp-oscillation-route-leak, noskills, no reward; it
    // becomes a pass that finished normally.
    let text = std::fs::read_to_string(csv_path()).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let target = &lines[87];
    assert!(
        target.contains(",azure-bgp-oscillation-route-leak,noskills,") && target.ends_with(','),
        "{target}"
    );
    let mut fields: Vec<&str> = target.split(',').collect();
    fields[6] = "True"; // finished_normally
    fields[11] = "1.0"; // reward
    lines[87] = fields.join(",");
    let csv_copy = fixed_dir.join(CSV_NAME);
    std::fs::write(&csv_copy, lines.join("\n") + "\n").unwrap();
    let hand = csv_by_hand(
        &csv_rows(&std::fs::read_to_string(&csv_copy).unwrap()),
        "noskills",
    );
    assert_eq!(hand.no_reward, 15);

    let fixed = import(&store, &opts(vec![reg_copy.clone(), csv_copy.clone()])).unwrap();
    assert!(fixed.broken.is_empty(), "{:?}", fixed.broken);
    // The registry row stands for 3 trials (its content changed for each), the CSV row for 1.
    let (fr, fc) = (
        file_report(&fixed, Format::Registry),
        file_report(&fixed, Format::Csv),
    );
    assert_eq!((fr.imported, fr.replaced, fr.already_present), (3, 3, 9393));
    assert_eq!((fc.imported, fc.replaced, fc.already_present), (1, 1, 171));
    assert_eq!((fixed.imported, fixed.already_present), (4, 9564));
    assert_eq!(trial_count(&conn), (9572, 4));
    assert_eq!(queries::list_runs(&conn).unwrap().len(), 19, "no new run");

    // The registry trial has two attempts; the latest carries the new reward.
    let runs = queries::list_runs(&conn).unwrap();
    let opus_run = run_of_config(&runs, "Claude Code (Opus 4.7)");
    let attempts =
        queries::trial_attempts(&conn, opus_run.id, &key("3d-scan-calc", "no-skills", 1)).unwrap();
    assert_eq!(attempts.len(), 2);
    assert!(attempts[0].superseded && !attempts[1].superseded);
    assert_eq!(
        (attempts[0].reward, attempts[1].reward),
        (Some(0.0), Some(1.0))
    );
    assert_eq!(attempts[1].attempt, 2);
    let res = run_analysis(&conn, &opus_run.name);
    let a = condition(&res, "no-skills");
    let i = res
        .tasks
        .iter()
        .position(|t| t.id == "3d-scan-calc")
        .unwrap();
    assert!((a.per_task[i].unwrap() - 1.0 / 3.0).abs() < 1e-12);
    assert!(
        (a.pass_rate - opus_fixed).abs() <= TASK_TOL,
        "{}",
        a.pass_rate
    );
    assert_eq!(a.done, 261, "superseded attempts are not counted");

    // The CSV trial too; the analysis sees 15 trials without reward and the new pass.
    let csv_run = queries::find_run(&conn, "csv-gemini-cli-gemini3flash")
        .unwrap()
        .unwrap();
    let attempts = queries::trial_attempts(
        &conn,
        csv_run.id,
        &key("azure-bgp-oscillation-route-leak", "no-skills", 1),
    )
    .unwrap();
    assert_eq!(attempts.len(), 2);
    assert_eq!(
        (attempts[0].outcome, attempts[1].outcome),
        (Some(Outcome::NoReward), Some(Outcome::Pass))
    );
    let res = run_analysis(&conn, &csv_run.name);
    let a = condition(&res, "no-skills");
    assert!((a.pass_rate - hand.rate).abs() < 1e-12);
    assert!((a.pass_rate - (0.276_415_534_883_720_95 + 1.0 / 86.0)).abs() < 1e-12);
    assert!((a.pass_rate_judged.unwrap() - hand.judged).abs() < 1e-12);
    assert_eq!(a.failures.get(&FailureMode::NoReward), Some(&15));
    assert_eq!((a.done, a.passed), (86, 22));

    // Importing the corrected copies again adds nothing either.
    let again = import(&store, &opts(vec![reg_copy, csv_copy])).unwrap();
    assert_eq!((again.imported, again.already_present), (0, 9568));
    assert_eq!(trial_count(&conn), (9572, 4));
    store.writer().stop();
}

/// Method D of one config and condition, from the rows.
fn by_hand_rate(rows: &[Value], label: &str, cond: &str) -> f64 {
    method_d(&registry_by_hand(rows)[label][cond])
}

#[test]
fn malformed_rows_are_reported_with_file_and_line_and_the_rest_is_imported() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path());

    // Registry: row 5 loses its score, row 9's score is text, row 20's score contradicts its
    // counts (3 of 3 perfect but 50.0).
    let mut rows = registry_rows(&registry_path());
    let broken_rows = [5usize, 9, 20];
    let ids: Vec<(String, String, String)> = broken_rows
        .iter()
        .map(|&i| {
            (
                rows[i]["model"].as_str().unwrap().to_string(),
                rows[i]["condition"].as_str().unwrap().to_string(),
                rows[i]["task"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    rows[5].as_object_mut().unwrap().remove("score");
    rows[9]["score"] = Value::String("abc".into());
    assert_eq!(
        (
            rows[20]["trials"].as_u64(),
            rows[20]["perfectCount"].as_u64()
        ),
        (Some(3), Some(3))
    );
    rows[20]["score"] = serde_json::json!(50.0);
    let reg_copy = dir.path().join("registry-broken.json");
    write_rows_one_per_line(&reg_copy, &rows);

    // CSV: data row 3 (line 5) has reward "abc", data row 10 (line 12) lost its last field.
    let text = std::fs::read_to_string(csv_path()).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut f: Vec<&str> = lines[4].split(',').collect();
    f[11] = "abc";
    lines[4] = f.join(",");
    let short = lines[11].rsplit_once(',').unwrap().0.to_string();
    lines[11] = short;
    let csv_dir = dir.path().join("csv");
    std::fs::create_dir(&csv_dir).unwrap();
    let csv_copy = csv_dir.join(CSV_NAME);
    std::fs::write(&csv_copy, lines.join("\n") + "\n").unwrap();

    let report = import(&store, &opts(vec![reg_copy.clone(), csv_copy.clone()])).unwrap();
    let broken: Vec<(PathBuf, String)> = report.broken.clone();
    assert_eq!(broken.len(), 5, "{broken:#?}");
    let of = |p: &Path| -> Vec<&str> {
        broken
            .iter()
            .filter(|(q, _)| q == p)
            .map(|(_, m)| m.as_str())
            .collect()
    };
    let reg_msgs = of(&reg_copy);
    assert_eq!(reg_msgs.len(), 3, "{broken:#?}");
    assert!(
        reg_msgs[0].starts_with("row 5 (line 7): ")
            && reg_msgs[0].contains("missing field `score`"),
        "{reg_msgs:#?}"
    );
    assert!(
        reg_msgs[1].starts_with("row 9 (line 11): ")
            && reg_msgs[1].contains("invalid type: string \"abc\""),
        "{reg_msgs:#?}"
    );
    assert!(
        reg_msgs[2].starts_with("row 20 (line 22): ") && reg_msgs[2].contains("score 50"),
        "{reg_msgs:#?}"
    );
    let csv_msgs = of(&csv_copy);
    assert_eq!(
        csv_msgs,
        vec![
            "line 5: reward \"abc\" is not a number",
            "line 12: 11 fields, the header has 12"
        ],
        "{broken:#?}"
    );

    let fr = file_report(&report, Format::Registry);
    assert_eq!((fr.rows, fr.broken_rows), (3132, 3));
    assert_eq!((fr.trials, fr.imported), (3129 * 3, 3129 * 3));
    let fc = file_report(&report, Format::Csv);
    assert_eq!((fc.rows, fc.broken_rows), (172, 2));
    assert_eq!((fc.trials, fc.imported), (170, 170));

    // The rest is analysed; a task whose row was malformed stays in the fixed denominator and
    // counts 0, its 3 trials "not run".
    let conn = store.connect().unwrap();
    let runs = queries::list_runs(&conn).unwrap();
    assert_eq!(runs.len(), 19);
    let raw = registry_rows(&registry_path());
    let by_hand = registry_by_hand(&raw);
    for (label, cond, task) in &ids {
        let run = run_of_config(&runs, label);
        let res = run_analysis(&conn, &run.name);
        let key = if cond == "No Skills" {
            "no-skills"
        } else {
            "curated"
        };
        let c = condition(&res, key);
        assert_eq!(res.tasks.len(), 87);
        assert_eq!(
            c.failures.get(&FailureMode::NotRun),
            Some(&3),
            "{label} {cond}"
        );
        assert_eq!(c.done, 258);
        let i = res.tasks.iter().position(|t| &t.id == task).unwrap();
        assert_eq!(c.per_task[i], Some(0.0));
        let mut scores = by_hand[label][cond].clone();
        scores.insert(task.clone(), 0.0);
        let want = method_d(&scores);
        assert!(
            (c.pass_rate - want).abs() <= TASK_TOL,
            "{label} {cond}: {} vs {want}",
            c.pass_rate
        );
    }
    // The CSV run: both broken rows are `skills` rows, so curated has 84 of 86 trials.
    let csv_run = queries::find_run(&conn, "csv-gemini-cli-gemini3flash")
        .unwrap()
        .unwrap();
    let res = run_analysis(&conn, &csv_run.name);
    assert_eq!(
        res.tasks.len(),
        86,
        "the broken rows' tasks stay in the denominator"
    );
    let b = condition(&res, "curated");
    assert_eq!(
        (b.done, b.failures.get(&FailureMode::NotRun)),
        (84, Some(&2))
    );
    store.writer().stop();
}
