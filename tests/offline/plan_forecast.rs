//! `skillscope plan` over a store holding an experiment's round 1 of an LLM agent (trials with
//! rewards, costs and durations, made through the store API): the test recomputes, from the same
//! trials and by the formulas of docs/scoring.md, round 2's projected cost and wall time and the
//! minimum detectable effects the command prints — and the inverse answers meet their effect.

use std::collections::BTreeMap;

use crate::support::common::fixtures;
use crate::support::planned_run::{PlannedRun, RunPlan, empty_store};
use skillscope::store::queries::TrialPatch;
use skillscope::store::{Outcome, TrialStatus};

const TASKS: [&str; 6] = [
    "passes",
    "fails",
    "slow",
    "sleeper",
    "partial-reward",
    "no-reward",
];
const Z_SUM: f64 = 1.959_963_984_540_054 + 0.841_621_233_572_914_3;

/// Mean and sample variance.
fn mv(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    (
        m,
        x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0),
    )
}

#[test]
fn plan_prints_cost_time_and_mdes_that_the_formulas_give() {
    let (scratch, conn) = empty_store();
    let tasks: Vec<(&str, &str, &str)> = TASKS.iter().map(|t| (*t, "Testing", "easy")).collect();
    let run = PlannedRun::new(
        &conn,
        &RunPlan {
            name: "costly-round1",
            agent: "claude-code",
            model: Some("claude-opus-4-6"),
            n_trials: 3,
            conditions: &["no-skills", "curated"],
            tasks: &tasks,
        },
    );
    // Rewards, costs and durations that differ by task, condition and trial.
    let mut rewards: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
    let (mut costs, mut secs): (BTreeMap<&str, Vec<f64>>, Vec<f64>) = Default::default();
    for (ti, task) in TASKS.iter().enumerate() {
        for (ci, cond) in ["no-skills", "curated"].iter().enumerate() {
            for i in 1..=3u32 {
                let pass = !(ti + ci * 2 + i as usize).is_multiple_of(3);
                let reward = if pass { 1.0 } else { 0.0 };
                let cost = 0.5 + 0.1 * (ti as f64) + 0.05 * f64::from(i) + 0.2 * ci as f64;
                let s = 30 + 7 * ti as i64 + 3 * i64::from(i);
                let start = chrono::DateTime::parse_from_rfc3339("2026-11-20T10:00:00Z").unwrap();
                let end = start + chrono::Duration::seconds(s);
                run.finish(
                    &conn,
                    task,
                    cond,
                    i,
                    &TrialPatch {
                        status: Some(TrialStatus::Done),
                        outcome: Some(if pass { Outcome::Pass } else { Outcome::Fail }),
                        reward: Some(reward),
                        cost_usd: Some(cost),
                        started_at: Some(start.to_rfc3339()),
                        finished_at: Some(end.to_rfc3339()),
                        ..Default::default()
                    },
                );
                rewards.entry((task, cond)).or_default().push(reward);
                costs.entry(cond).or_default().push(cost);
                secs.push(s as f64);
            }
        }
    }
    drop(conn);
    let plan = scratch.dir.path().join("costly.toml");
    std::fs::write(
        &plan,
        format!(
            "name = \"costly\"\nagent = \"claude-code\"\nmodel = \"claude-opus-4-6\"\ntrials = 3\nconcurrency = 3\ntasks = \"{}\"\ntask = [{}]\n",
            fixtures().display(),
            TASKS.map(|t| format!("\"{t}\"")).join(", ")
        ),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .arg("plan")
        .arg(&plan)
        .args(["--json", "--db"])
        .arg(scratch.db())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = &v["forecast"];
    let row = |label: &str| {
        f["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["label"] == label)
            .unwrap_or_else(|| panic!("no row {label}: {f:#}"))
            .clone()
    };
    let close = |a: f64, b: f64, what: &str| assert!((a - b).abs() < 1e-6, "{what}: {a} vs {b}");

    // Cost: round 1 is spent; A' is drawn from A's 18 trials: r·m ± 1.96·s·√(r + r²/n).
    let (m, var) = mv(&costs["no-skills"]);
    let r = 18.0;
    let half = 1.96 * (var * (r + r * r / 18.0)).sqrt();
    let a2 = row("A'");
    assert_eq!(a2["remaining"], 18);
    close(a2["cost_usd"]["point"].as_f64().unwrap(), r * m, "A' cost");
    close(
        a2["cost_usd"]["high"].as_f64().unwrap(),
        r * m + half,
        "A' high",
    );
    let spent_a: f64 = costs["no-skills"].iter().sum();
    close(
        row("A")["cost_usd"]["point"].as_f64().unwrap(),
        spent_a,
        "A spent",
    );
    // Wall time: the 36 remaining trials' durations over 3 slots.
    let (ms, vs) = mv(&secs);
    let total = row("total");
    close(
        total["wall_secs"]["point"].as_f64().unwrap(),
        36.0 * ms / 3.0,
        "wall",
    );
    let wh = (36.0 * ms + 1.96 * (vs * (36.0 + 36.0 * 36.0 / secs.len() as f64)).sqrt()) / 3.0;
    close(
        total["wall_secs"]["high"].as_f64().unwrap(),
        wh,
        "wall high",
    );
    assert!(
        f["estimates"]["cost_source"]
            .as_str()
            .unwrap()
            .contains("36 priced trial"),
        "{f:#}"
    );

    // Power of B − A: per task d = mean(B) − mean(A); ω² = s²_d − mean(s²_A/3 + s²_B/3).
    let mut d = Vec::new();
    let (mut wa, mut wb) = (Vec::new(), Vec::new());
    for task in TASKS {
        let (ma, va) = mv(&rewards[&(task, "no-skills")]);
        let (mb, vb) = mv(&rewards[&(task, "curated")]);
        d.push(mb - ma);
        wa.push(va);
        wb.push(vb);
    }
    let (md, sd2) = mv(&d);
    let (wa, wb) = (mv(&wa).0, mv(&wb).0);
    let between = (sd2 - (wa + wb) / 3.0).max(0.0);
    let n = TASKS.len() as f64;
    let mde = Z_SUM * ((between + (wa + wb) / 3.0) / n).sqrt() * 100.0;
    let p = &f["power"][0];
    close(p["mde"].as_f64().unwrap(), mde, "MDE B − A");
    close(
        p["measured"].as_f64().unwrap(),
        md * 100.0,
        "measured B − A",
    );
    close(
        p["se_pp"].as_f64().unwrap(),
        ((between + (wa + wb) / 3.0) / n).sqrt() * 100.0,
        "SE",
    );
    // H1 before round 2: A's trial variance on both sides, B − A's between-task variance.
    let h1 = Z_SUM * ((between + 2.0 * wa / 3.0) / n).sqrt() * 100.0;
    close(f["power"][1]["mde"].as_f64().unwrap(), h1, "MDE H1");
    // The inverse: the tasks it names are enough for the effect, one fewer is not.
    let need = p["tasks_needed"].as_u64().unwrap() as f64;
    let at = |n: f64| Z_SUM * ((between + (wa + wb) / 3.0) / n).sqrt();
    assert!(at(need) <= 0.162 + 1e-9 && at(need - 1.0) > 0.162, "{need}");

    // The tables say the same in words.
    let text = std::process::Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .arg("plan")
        .arg(&plan)
        .arg("--db")
        .arg(scratch.db())
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&text.stdout);
    for want in [
        "cost from: this experiment's 36 priced trial(s)",
        "minimum detectable effects at 80% power",
        "Miller 2024",
        &format!("{mde:.1} pp"),
    ] {
        assert!(t.contains(want), "{want:?} in {t}");
    }
}
