//! Acceptance: `skillscope plan` on the example experiment's round 1 (run for real, in
//! containers) prints its cost, wall time and minimum detectable effects, which this test
//! recomputes from the round's trials by the formulas of docs/scoring.md.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::support::common::{self, Scratch};
use skillscope::store::{Outcome, TrialStatus, queries};

const Z_SUM: f64 = 1.959_963_984_540_054 + 0.841_621_233_572_914_3;

fn mv(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    let v = if x.len() > 1 {
        x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (m, v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_on_the_example_experiments_round_1_is_what_the_formulas_give() {
    common::require_docker().await;
    let s = Scratch::new();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/examples.toml"),
        s.dir.path().join("examples.toml"),
    )
    .unwrap();
    // The plan's round 1, as the experiment names and runs it (2 trials, A and B).
    let out = common::skillscope(
        &s,
        &[
            "run",
            "--headless",
            "--trials",
            "2",
            "--run",
            "examples-round1",
            "--jobs-dir",
            "jobs",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = common::skillscope(&s, &["plan", "examples.toml", "--json"]);
    assert!(
        json.status.success(),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let f = &v["forecast"];

    // From the store: each task's rewards per condition, and every trial's duration.
    let conn = s.store.connect().unwrap();
    let run = queries::find_run(&conn, "examples-round1")
        .unwrap()
        .unwrap();
    let mut rewards: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    let mut secs: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for t in queries::current_trials(&conn, run.id).unwrap() {
        assert_eq!(t.status, TrialStatus::Done);
        if t.outcome.is_some_and(Outcome::is_verdict) {
            rewards
                .entry((t.task_id.clone(), t.condition.clone()))
                .or_default()
                .push(t.reward.unwrap_or(0.0));
        }
        let p = |x: &Option<String>| {
            chrono::DateTime::parse_from_rfc3339(x.as_deref().unwrap()).unwrap()
        };
        secs.entry(t.condition.clone())
            .or_default()
            .push((p(&t.finished_at) - p(&t.started_at)).num_milliseconds() as f64 / 1000.0);
    }
    let close =
        |a: f64, b: f64, what: &str| assert!((a - b).abs() < 1e-6, "{what}: {a} vs {b}\n{f:#}");

    // Cost: the oracle calls no model.
    assert!(
        f["estimates"]["cost_source"]
            .as_str()
            .unwrap()
            .contains("calls no model"),
        "{f:#}"
    );
    let total = f["rows"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(total["label"], "total");
    assert_eq!(
        total["remaining"], 20,
        "round 2 is left: A' and B', 5 tasks × 2 trials"
    );
    close(total["cost_usd"]["high"].as_f64().unwrap(), 0.0, "cost");
    // Wall time: round 2's 20 trials over the plan's 4 slots, each condition at its round-1
    // counterpart's durations (A' at A's, B' at B's), the two intervals added end to end.
    let (mut point, mut high) = (0.0, 0.0);
    for counterpart in ["no-skills", "curated"] {
        let xs = &secs[counterpart];
        let (m, var) = mv(xs);
        let n = xs.len() as f64;
        point += 10.0 * m / 4.0;
        high += (10.0 * m + 1.96 * (var * (10.0 + 100.0 / n)).sqrt()) / 4.0;
    }
    close(total["wall_secs"]["point"].as_f64().unwrap(), point, "wall");
    close(
        total["wall_secs"]["high"].as_f64().unwrap(),
        high,
        "wall high",
    );

    // B − A: the paired differences of the task means and the trials' variance within tasks.
    let tasks: Vec<String> = queries::run_tasks(&conn, run.id)
        .unwrap()
        .into_iter()
        .map(|t| t.task_id)
        .collect();
    let (mut d, mut wa, mut wb) = (Vec::new(), Vec::new(), Vec::new());
    for t in &tasks {
        let (ma, va) = mv(&rewards[&(t.clone(), "no-skills".to_string())]);
        let (mb, vb) = mv(&rewards[&(t.clone(), "curated".to_string())]);
        d.push(mb - ma);
        wa.push(va);
        wb.push(vb);
    }
    let (md, sd2) = mv(&d);
    let (wa, wb) = (mv(&wa).0, mv(&wb).0);
    let between = (sd2 - (wa + wb) / 2.0).max(0.0);
    let k = tasks.len() as f64;
    let mde = |between: f64, within: f64| Z_SUM * ((between + within / 2.0) / k).sqrt() * 100.0;
    let p = &f["power"];
    close(
        p[0]["mde"].as_f64().unwrap(),
        mde(between, wa + wb),
        "MDE B − A",
    );
    close(p[0]["measured"].as_f64().unwrap(), md * 100.0, "Δ B − A");
    // H1 and H3 before round 2: their sides' trial variance, B − A's between-task variance.
    close(
        p[1]["mde"].as_f64().unwrap(),
        mde(between, 2.0 * wa),
        "MDE H1",
    );
    close(
        p[3]["mde"].as_f64().unwrap(),
        mde(between, 2.0 * wb),
        "MDE H3",
    );
    assert_eq!(p[0]["n_tasks"], 5);
    assert_eq!(p[0]["trials"], 2);

    // And the command's tables say it in words.
    let text = Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .args(["plan", "examples.toml"])
        .current_dir(s.dir.path())
        .env("SKILLSCOPE_DB", s.db())
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&text.stdout);
    for want in [
        "plan of experiment examples",
        "cost from: the oracle agent calls no model",
        "time from: this experiment's 20 timed trial(s)",
        &format!("{:.1} pp", mde(between, wa + wb)),
        "variances of B − A",
    ] {
        assert!(t.contains(want), "{want:?} in {t}");
    }
}
