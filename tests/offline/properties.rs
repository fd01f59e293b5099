//! Property tests of the metrics over random experiments (`proptest`): partial rewards, agent
//! timeouts with and without a reward, missing and unfinished trials, cancelled ones, 1–5 trials
//! per task, native runs (every task planned) and imported ones (each condition plans its own
//! tasks, unevenly, some disjoint), at a pass threshold of 1.0 or 0.5. For every one:
//!
//! - `per_task.csv` equals what the generated trials say (reward mean over planned trials,
//!   successes = reward ≥ the threshold, planned trials, tasks not run empty);
//! - every rate is in [0, 1];
//! - pass@2 ≥ pass@1 per task and overall, and pass@2 is undefined exactly when a task has fewer
//!   than 2 trials;
//! - pass@2-adaptive ≥ max(p₁, p₂) per task and overall;
//! - each comparison is over the tasks both sides ran, lists the others as not run, and its Δ is
//!   their mean difference;
//! - each condition's Method D and pass@1 are the means of its `per_task.csv` rows;
//! - no task whose every trial succeeded is flaky.

use std::collections::BTreeMap;

use proptest::prelude::*;
use rusqlite::Connection;
use serde_json::Value;

use crate::support::planned_run::{PlannedRun, RunPlan, empty_store};
use skillscope::analysis::ci::CiMethod;
use skillscope::analysis::results::{Scoring, Selection};
use skillscope::analysis::success::SuccessRule;
use skillscope::report::{self, Format};
use skillscope::store::queries::{self, TrialPatch};
use skillscope::store::{Outcome, TrialStatus};

/// How one trial ended.
#[derive(Debug, Clone, Copy)]
enum Ending {
    Pass,
    Fail(f64),
    AgentTimeout(Option<f64>),
    VerifierTimeout(Option<f64>),
    NoReward,
    BuildError,
    Cancelled,
    /// Still queued: never ran.
    Unfinished,
}

impl Ending {
    /// The outcome and reward the store records for it; `None` while it is unfinished.
    fn stored(self) -> Option<(Outcome, Option<f64>)> {
        Some(match self {
            Ending::Pass => (Outcome::Pass, Some(1.0)),
            Ending::Fail(r) => (Outcome::Fail, Some(r)),
            Ending::AgentTimeout(r) => (Outcome::AgentTimeout, r),
            Ending::VerifierTimeout(r) => (Outcome::VerifierTimeout, r),
            Ending::NoReward => (Outcome::NoReward, None),
            Ending::BuildError => (Outcome::BuildError, None),
            Ending::Cancelled => (Outcome::Cancelled, None),
            Ending::Unfinished => return None,
        })
    }

    /// The reward Method D counts: the verifier's for a finished trial, else 0.
    fn reward(self) -> Option<f64> {
        match self {
            Ending::Pass => Some(1.0),
            Ending::Fail(r) => Some(r),
            Ending::AgentTimeout(r) | Ending::VerifierTimeout(r) => r,
            _ => None,
        }
    }
}

fn ending() -> impl Strategy<Value = Ending> {
    let reward = prop::sample::select(vec![0.0, 0.25, 0.5, 0.99]);
    let maybe = prop::option::of(prop::sample::select(vec![0.0, 0.6, 1.0]));
    prop_oneof![
        4 => Just(Ending::Pass),
        4 => reward.prop_map(Ending::Fail),
        2 => maybe.clone().prop_map(Ending::AgentTimeout),
        1 => maybe.prop_map(Ending::VerifierTimeout),
        1 => Just(Ending::NoReward),
        1 => Just(Ending::BuildError),
        1 => Just(Ending::Cancelled),
        1 => Just(Ending::Unfinished),
    ]
}

/// One run: imported (each task × condition plans its own trials, or none) or native (every
/// task × condition the same `n`), and per task, per condition, its trials.
#[derive(Debug, Clone)]
struct RunSpec {
    imported: bool,
    n_trials: u32,
    cells: Vec<Vec<Option<Vec<Ending>>>>,
}

fn run_spec(n_tasks: usize) -> impl Strategy<Value = RunSpec> {
    (any::<bool>(), 1u32..=5).prop_flat_map(move |(imported, n)| {
        let cell = if imported {
            prop::option::weighted(0.75, prop::collection::vec(ending(), 1..=5)).boxed()
        } else {
            prop::collection::vec(ending(), n as usize)
                .prop_map(Some)
                .boxed()
        };
        let cells = prop::collection::vec(prop::collection::vec(cell, 2), n_tasks);
        (Just(imported), Just(n), cells)
            .prop_map(|(imported, n_trials, cells)| RunSpec {
                imported,
                n_trials,
                cells,
            })
            // An import holds at least one trial (else there is no run to import).
            .prop_filter("an import holds a trial", |s| {
                !s.imported || s.cells.iter().flatten().any(Option::is_some)
            })
    })
}

const TASKS: [(&str, &str, &str); 6] = [
    ("t0", "Finance", "easy"),
    ("t1", "Finance", "hard"),
    ("t2", "Healthcare", "medium"),
    ("t3", "Healthcare", "middle"),
    ("t4", "Energy", "hard"),
    ("t5", "Energy", "easy"),
];

/// Writes `spec` as run `name` of conditions `conds` over the first `n` tasks.
fn write_run(conn: &Connection, name: &str, conds: &[&str], n: usize, spec: &RunSpec) {
    let run = PlannedRun::new(
        conn,
        &RunPlan {
            name,
            n_trials: if spec.imported { 5 } else { spec.n_trials },
            conditions: conds,
            tasks: &TASKS[..n],
            ..Default::default()
        },
    );
    for (ti, (task, _, _)) in TASKS[..n].iter().enumerate() {
        for (ci, cond) in conds.iter().enumerate() {
            let cell = &spec.cells[ti][ci];
            let planned = cell.as_ref().map_or(0, Vec::len) as u32;
            if spec.imported {
                // What an import records: each task × condition plans what its jobs held; the
                // rows beyond it do not exist.
                if planned > 0 {
                    queries::set_trial_plan(conn, run.run.id, "generated", task, cond, planned)
                        .unwrap();
                }
                conn.execute(
                    "DELETE FROM trials WHERE run_id = ?1 AND task_id = ?2 AND condition = ?3
                     AND trial_index > ?4",
                    rusqlite::params![run.run.id, task, cond, planned],
                )
                .unwrap();
            }
            for (k, e) in cell.iter().flatten().enumerate() {
                let k = k as u32 + 1;
                let Some((outcome, reward)) = e.stored() else {
                    continue;
                };
                run.finish(
                    conn,
                    task,
                    cond,
                    k,
                    &TrialPatch {
                        status: Some(TrialStatus::Done),
                        outcome: Some(outcome),
                        reward,
                        ..Default::default()
                    },
                );
            }
        }
    }
}

/// `per_task.csv` by (condition label, task): (mean reward, pass@1, planned, passed); the mean
/// and pass@1 `None` when the condition did not run the task.
type Rows = BTreeMap<(String, String), (Option<f64>, Option<f64>, f64, f64)>;

/// The noise floor of condition `label` (column `ci` of `spec`) in the report's JSON against the
/// generated trials: the flip counts by hand (successes by `threshold`; failures with a verdict:
/// fail and the timeouts), the A/A noise over the tasks with 2+ finished trials (not cancelled,
/// not unfinished), ≥ 0, and 0 when every task's finished trials have one reward.
fn noise_floor(res: &Value, label: &str, spec: &RunSpec, ci: usize, n: usize, threshold: f64) {
    let Some(c) = res["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["label"] == label)
    else {
        return; // it ran none of the tasks
    };
    let (mut flipped, mut eligible, mut splittable, mut flat) = (0, 0, 0, true);
    for cell in spec.cells[..n].iter().filter_map(|t| t[ci].as_ref()) {
        let ok = |e: &Ending| e.reward().is_some_and(|r| r >= threshold - 1e-9);
        let succeeded = cell.iter().filter(|e| ok(e)).count();
        let failed = cell
            .iter()
            .filter(|e| {
                !ok(e)
                    && matches!(
                        e,
                        Ending::Pass
                            | Ending::Fail(_)
                            | Ending::AgentTimeout(_)
                            | Ending::VerifierTimeout(_)
                    )
            })
            .count();
        if succeeded + failed >= 2 {
            eligible += 1;
            flipped += usize::from(succeeded > 0 && failed > 0);
        }
        let finished: Vec<f64> = cell
            .iter()
            .filter(|e| !matches!(e, Ending::Cancelled | Ending::Unfinished))
            .map(|e| e.reward().unwrap_or(0.0))
            .collect();
        if finished.len() >= 2 {
            splittable += 1;
            flat &= finished.iter().all(|r| *r == finished[0]);
        }
    }
    let f = &c["flip"];
    assert_eq!(
        (f["flipped"].as_u64().unwrap(), f["tasks"].as_u64().unwrap()),
        (flipped as u64, eligible as u64),
        "{label} flips"
    );
    let a = &c["aa_noise"];
    assert_eq!(a["n_tasks"].as_u64().unwrap(), splittable as u64, "{label}");
    match a["spread_pp"].as_f64() {
        Some(h) => {
            assert!(splittable > 0 && h >= 0.0, "{label}: {a}");
            if flat {
                assert!(h.abs() < 1e-9, "{label}: equal rewards, spread {h}");
            }
        }
        None => assert!(
            splittable == 0 && a["undefined"].is_string(),
            "{label}: {a}"
        ),
    }
}

/// Chen et al. 2021 eq. 1 for k = 2, written again: 1 − C(n − c, 2) / C(n, 2).
fn chen2(n: f64, c: f64) -> f64 {
    1.0 - ((n - c) * (n - c - 1.0)) / (n * (n - 1.0))
}

fn num(v: &str) -> Option<f64> {
    (!v.is_empty()).then(|| v.parse().unwrap())
}

fn in_unit(v: f64, what: &str) {
    assert!(
        (-1e-12..=1.0 + 1e-12).contains(&v),
        "{what} = {v} outside [0, 1]"
    );
}

fn close(a: f64, b: f64, what: &str) {
    assert!((a - b).abs() < 1e-9, "{what}: {a} vs {b}");
}

/// One random experiment, reported; every property checked.
fn check(n: usize, round1: &RunSpec, round2: &RunSpec, threshold: f64) {
    let (scratch, conn) = empty_store();
    write_run(&conn, "p-round1", &["no-skills", "curated"], n, round1);
    write_run(
        &conn,
        "p-round2",
        &["skills:/x/a", "skills:/x/b"],
        n,
        round2,
    );
    skillscope::store::learning::find_or_insert_experiment(
        &conn,
        "p",
        &serde_json::json!({}),
        "p-round1",
        "p-round2",
    )
    .unwrap();
    let scoring = Scoring {
        ci: CiMethod {
            resamples: 200,
            ..CiMethod::default()
        },
        success: SuccessRule::new(threshold).unwrap(),
        ..Scoring::default()
    };
    let r = report::build(&conn, &Selection::Experiment("p".into()), &scoring).unwrap();
    let out = scratch.dir.path().join("report");
    report::write(&r, &out, &[Format::Csv, Format::Json]).unwrap();
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let res = &json["results"];

    // per_task.csv against the generated trials.
    let mut rd = csv::Reader::from_path(out.join("per_task.csv")).unwrap();
    let head = rd.headers().unwrap().clone();
    let col = |h: &str| head.iter().position(|x| x == h).unwrap();
    let (c_task, c_cond, c_mean, c_p1, c_planned, c_passed) = (
        col("task"),
        col("condition"),
        col("mean_reward"),
        col("pass_at_1"),
        col("planned"),
        col("passed"),
    );
    let mut rows: Rows = BTreeMap::new();
    for rec in rd.records() {
        let rec = rec.unwrap();
        rows.insert(
            (rec[c_cond].to_string(), rec[c_task].to_string()),
            (
                num(&rec[c_mean]),
                num(&rec[c_p1]),
                rec[c_planned].parse().unwrap(),
                rec[c_passed].parse().unwrap(),
            ),
        );
    }
    let labels = [
        ("A", round1, 0),
        ("B", round1, 1),
        ("A'", round2, 0),
        ("B'", round2, 1),
    ];
    for (label, spec, ci) in labels {
        noise_floor(res, label, spec, ci, n, threshold);
    }
    // The CSVs carry each A/A noise with its splits and seed, as a CI its resamples and seed.
    for file in ["conditions.csv", "comparisons.csv"] {
        if file == "comparisons.csv" && res["comparisons"].as_array().unwrap().is_empty() {
            continue; // no comparison, no file
        }
        let mut rd = csv::Reader::from_path(out.join(file)).unwrap();
        let head = rd.headers().unwrap().clone();
        let at = |h: &str| head.iter().position(|x| x == h).unwrap();
        let (v, k, seed) = (
            at("aa_noise_pp"),
            at("aa_noise_splits"),
            at("aa_noise_seed"),
        );
        for rec in rd.records() {
            let rec = rec.unwrap();
            if rec[v].is_empty() {
                assert!(rec[k].is_empty() && rec[seed].is_empty(), "{file}: {rec:?}");
            } else {
                assert!(rec[v].parse::<f64>().unwrap() >= 0.0);
                assert_eq!((&rec[k], &rec[seed]), ("2000", "20260212"), "{file}");
            }
        }
    }
    for x in res["comparisons"].as_array().unwrap() {
        let a = &x["aa_noise"];
        match a["spread_pp"].as_f64() {
            Some(h) => assert!(h >= 0.0 && a["n_tasks"].as_u64().unwrap() > 0, "{x}"),
            None => assert!(a["undefined"].is_string() && a["n_tasks"] == 0, "{x}"),
        }
    }
    for (label, spec, ci) in labels {
        for (ti, (task, _, _)) in TASKS[..n].iter().enumerate() {
            // A condition that ran none of the tasks has no rows at all.
            let got = rows
                .get(&(label.to_string(), task.to_string()))
                .copied()
                .unwrap_or((None, None, 0.0, 0.0));
            match &spec.cells[ti][ci] {
                None => assert_eq!((got.0, got.1, got.2), (None, None, 0.0), "{label} {task}"),
                Some(trials) => {
                    let planned = trials.len() as f64;
                    let sum: f64 = trials.iter().filter_map(|e| e.reward()).sum();
                    let passed = trials
                        .iter()
                        .filter(|e| e.reward().is_some_and(|r| r >= threshold - 1e-9))
                        .count() as f64;
                    close(
                        got.0.unwrap(),
                        sum / planned,
                        &format!("{label} {task} mean"),
                    );
                    close(
                        got.1.unwrap(),
                        passed / planned,
                        &format!("{label} {task} pass@1"),
                    );
                    assert_eq!((got.2, got.3), (planned, passed), "{label} {task}");
                    // Never flaky when every trial succeeded.
                    if passed == planned {
                        let flaky = res["flaky"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .any(|f| f["condition"] == label && f["task"] == *task);
                        assert!(!flaky, "{label} {task} succeeded every time but is flaky");
                    }
                }
            }
        }
    }

    // Each condition: Method D and pass@1 are the means of its rows; every rate in [0, 1].
    for c in res["conditions"].as_array().unwrap() {
        let label = c["label"].as_str().unwrap();
        let mine: Vec<(f64, f64)> = rows
            .iter()
            .filter(|((l, _), _)| l == label)
            .filter_map(|(_, v)| Some((v.0?, v.1?)))
            .collect();
        let m = mine.len() as f64;
        assert_eq!(
            c["n_tasks"].as_u64().unwrap() as usize,
            mine.len(),
            "{label}"
        );
        close(
            c["pass_rate"].as_f64().unwrap(),
            mine.iter().map(|v| v.0).sum::<f64>() / m,
            &format!("{label} Method D"),
        );
        close(
            c["pass_at_1"].as_f64().unwrap(),
            mine.iter().map(|v| v.1).sum::<f64>() / m,
            &format!("{label} pass@1"),
        );
        for k in ["pass_rate", "pass_at_1", "pass_rate_judged"] {
            if let Some(v) = c[k].as_f64() {
                in_unit(v, &format!("{label} {k}"));
            }
        }
    }
    for g in res["domains"]
        .as_array()
        .unwrap()
        .iter()
        .chain(res["difficulties"].as_array().unwrap())
    {
        for v in g["rates"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_f64)
        {
            in_unit(v, "group rate");
        }
        assert_ne!(g["group"], "middle", "one level, one row");
    }

    // Trials of `label` on task `ti` that finished (not cancelled, not unfinished).
    let finished = |label: &str, ti: usize| -> usize {
        let (_, spec, ci) = labels.iter().find(|(l, _, _)| *l == label).unwrap();
        spec.cells[ti][*ci]
            .iter()
            .flatten()
            .filter(|e| !matches!(e, Ending::Cancelled | Ending::Unfinished))
            .count()
    };
    // Comparisons: over the tasks both ran, the others not run, Δ their mean difference —
    // undefined while a side has no finished trial on them (Method D would count it 0).
    for c in res["comparisons"].as_array().unwrap() {
        let (w, wo) = (c["with"].as_str().unwrap(), c["without"].as_str().unwrap());
        let mut matched = Vec::new();
        let (mut not_w, mut not_wo) = (Vec::new(), Vec::new());
        let (mut finished_w, mut finished_wo) = (0, 0);
        for (ti, (task, _, _)) in TASKS[..n].iter().enumerate() {
            let a = rows
                .get(&(w.to_string(), task.to_string()))
                .and_then(|r| r.0);
            let b = rows
                .get(&(wo.to_string(), task.to_string()))
                .and_then(|r| r.0);
            match (a, b) {
                (Some(a), Some(b)) => {
                    matched.push(a - b);
                    finished_w += finished(w, ti);
                    finished_wo += finished(wo, ti);
                }
                (None, Some(_)) => not_w.push(task.to_string()),
                (Some(_), None) => not_wo.push(task.to_string()),
                (None, None) => {}
            }
        }
        assert_eq!(
            c["n_tasks"].as_u64().unwrap() as usize,
            matched.len(),
            "{c}"
        );
        let names = |v: &Value| -> Vec<String> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(names(&c["not_run_with"]), not_w, "{c}");
        assert_eq!(names(&c["not_run_without"]), not_wo, "{c}");
        match c["delta_pp"].as_f64() {
            Some(d) => close(
                d,
                matched.iter().sum::<f64>() / matched.len() as f64 * 100.0,
                "Δ",
            ),
            None => assert!(
                (matched.is_empty() || finished_w == 0 || finished_wo == 0)
                    && c["delta_undefined"].is_string(),
                "{c}"
            ),
        }
        if !matched.is_empty() {
            let unstarted = finished_w == 0 || finished_wo == 0;
            assert_eq!(c["delta_pp"].is_null(), unstarted, "{c}");
            // Nor is any task's change told against a side with no finished trial.
            let told: u64 = ["improved", "degraded", "unchanged"]
                .iter()
                .map(|k| c[*k].as_u64().unwrap())
                .sum();
            assert_eq!(
                told as usize,
                if unstarted { 0 } else { matched.len() },
                "{c}"
            );
        }
        if matched.len() < 2 {
            assert!(c["delta_ci_pp"].is_null(), "{c}");
        }
        for k in ["p_with", "p_without"] {
            if let Some(v) = c[k].as_f64() {
                in_unit(v, k);
            }
        }
    }

    // pass@2 ≥ pass@1 and pass@2-adaptive ≥ max(p₁, p₂), per task and overall.
    for a in res["adaptive"].as_array().unwrap() {
        let (r1, r2) = a["name"].as_str().unwrap().split_once(" → ").unwrap();
        let (p1, p2, adaptive) = (
            a["pass1_round1"].as_f64().unwrap(),
            a["pass1_round2"].as_f64().unwrap(),
            a["pass2_adaptive"].as_f64().unwrap(),
        );
        for v in [p1, p2, adaptive] {
            in_unit(v, "pass@2-adaptive row");
        }
        assert!(adaptive + 1e-12 >= p1.max(p2), "{a}");
        if a["scope"] != "overall" {
            continue;
        }
        let both: Vec<&str> = TASKS[..n]
            .iter()
            .map(|t| t.0)
            .filter(|t| {
                let ran = |l: &str| rows.get(&(l.to_string(), t.to_string())).and_then(|r| r.0);
                ran(r1).is_some() && ran(r2).is_some()
            })
            .collect();
        assert_eq!(a["n_tasks"].as_u64().unwrap() as usize, both.len());
        let mut chen = Vec::new();
        let mut defined = true;
        for t in &both {
            let (_, q1, planned, passed) = rows[&(r1.to_string(), t.to_string())];
            let q2 = rows[&(r2.to_string(), t.to_string())].1.unwrap();
            let q1 = q1.unwrap();
            assert!(1.0 - (1.0 - q1) * (1.0 - q2) + 1e-12 >= q1.max(q2));
            if planned < 2.0 {
                defined = false;
            } else {
                let c2 = chen2(planned, passed);
                in_unit(c2, "pass@2");
                assert!(c2 + 1e-12 >= q1, "{t}: pass@2 {c2} below pass@1 {q1}");
                chen.push(c2);
            }
        }
        match a["pass2"].as_f64() {
            Some(p) => {
                assert!(defined, "pass@2 given with a task of one trial: {a}");
                close(p, chen.iter().sum::<f64>() / chen.len() as f64, "pass@2");
                in_unit(p, "pass@2");
                assert!(p + 1e-12 >= p1, "overall pass@2 {p} below pass@1 {p1}");
            }
            None => {
                assert!(!defined, "pass@2 undefined without a reason: {a}");
                assert!(
                    a["pass2_undefined"].is_string() && a["gain_pp"].is_null(),
                    "{a}"
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn metrics_hold_their_invariants_on_random_experiments(
        (n, round1, round2) in (1usize..=6).prop_flat_map(|n| (Just(n), run_spec(n), run_spec(n))),
        threshold in prop::sample::select(vec![1.0, 0.5]),
    ) {
        check(n, &round1, &round2, threshold);
    }
}

/// The pass rule in one place (issue 48): for any threshold in (0, 1] and any ending of a trial
/// — the outcome the runner stored is kept as it is — the grid's cell ([`CellState::of`]), the
/// trial detail's outcome line ([`outcome_words`]) and the report (its per-task successes and
/// its trial marks) say the same about whether the trial succeeded, and the dashboard's domain
/// pane is the report's breakdown.
fn pass_rule_agrees(endings: &[Ending], threshold: f64) {
    use skillscope::tui::model::{CellState, Grouping, outcome_words, rate_rows};
    let rule = SuccessRule::new(threshold).unwrap();
    let (_scratch, conn) = empty_store();
    let n = endings.len();
    let run = PlannedRun::new(
        &conn,
        &RunPlan {
            name: "rule",
            n_trials: 1,
            conditions: &["no-skills"],
            tasks: &TASKS[..n],
            ..Default::default()
        },
    );
    for ((task, _, _), e) in TASKS[..n].iter().zip(endings) {
        let Some((outcome, reward)) = e.stored() else {
            continue;
        };
        run.finish(
            &conn,
            task,
            "no-skills",
            1,
            &TrialPatch {
                status: Some(TrialStatus::Done),
                outcome: Some(outcome),
                reward,
                trial_dir: Some(format!("/j/{task}")),
                ..Default::default()
            },
        );
    }
    let scoring = Scoring {
        ci: CiMethod {
            resamples: 20,
            ..CiMethod::default()
        },
        success: rule,
        ..Scoring::default()
    };
    let report = report::build(&conn, &Selection::Runs(vec!["rule".into()]), &scoring).unwrap();
    let c = &report.results.conditions[0];
    let mut snap = skillscope::tui::worker::load_snapshot(&conn, run.run.id).unwrap();
    snap.success = rule;
    let rows = queries::current_trials(&conn, run.run.id).unwrap();
    for (i, (task, _, _)) in TASKS[..n].iter().enumerate() {
        let row = rows.iter().find(|t| t.task_id == *task).unwrap();
        let brief = snap.trials.iter().find(|t| t.task_id == *task).unwrap();
        let grid = CellState::of(brief, &snap.success) == CellState::Pass;
        let detail = outcome_words(row, &snap.success).1 == Some(true);
        let ti = report
            .results
            .tasks
            .iter()
            .position(|t| t.id == *task)
            .unwrap();
        let counted = c.per_task_passed[ti] == 1;
        let marked = report
            .trials
            .iter()
            .find(|l| l.task == *task)
            .is_some_and(|l| l.succeeded);
        let e = endings[i];
        assert_eq!(grid, detail, "{e:?} at {threshold}: grid vs detail");
        assert_eq!(grid, counted, "{e:?} at {threshold}: grid vs report count");
        assert_eq!(grid, marked, "{e:?} at {threshold}: grid vs report mark");
    }
    // The domain pane draws the report's breakdown: the same rates, task counts and Δ.
    let pane = rate_rows(&snap, Grouping::Domain);
    let (overall, body) = pane.rows.split_last().unwrap();
    assert_eq!(body.len(), report.results.domains.len());
    for (p, r) in body.iter().zip(&report.results.domains) {
        assert_eq!((&p.group, p.n_tasks), (&r.group, r.n_tasks));
        assert_eq!(p.rates, r.rates);
    }
    assert_eq!(
        overall.rates[0],
        Some(c.pass_rate).filter(|_| c.n_tasks > 0)
    );
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_grid_the_detail_and_the_report_agree_on_success_at_any_threshold(
        endings in prop::collection::vec(ending(), 1..=6),
        threshold in (1u32..=1000).prop_map(|k| k as f64 / 1000.0),
    ) {
        pass_rule_agrees(&endings, threshold);
    }
}
