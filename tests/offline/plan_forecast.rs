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
    let mut costs: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut secs: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
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
                secs.entry(cond).or_default().push(s as f64);
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
        .args(["--json", "--stages", "3", "--db"])
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
    // Wall time: each round-2 condition's 18 trials from its round-1 counterpart's durations
    // (A' from A, B' from B — issue 36: not one pooled sample), over 3 slots, end to end.
    let (mut point, mut high) = (0.0, 0.0);
    for cond in ["no-skills", "curated"] {
        let (ms, vs) = mv(&secs[cond]);
        let n = secs[cond].len() as f64;
        point += 18.0 * ms / 3.0;
        high += (18.0 * ms + 1.96 * (vs * (18.0 + 18.0 * 18.0 / n)).sqrt()) / 3.0;
    }
    let total = row("total");
    close(total["wall_secs"]["point"].as_f64().unwrap(), point, "wall");
    close(
        total["wall_secs"]["high"].as_f64().unwrap(),
        high,
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
        .args(["--stages", "3", "--db"])
        .arg(scratch.db())
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&text.stdout);
    for want in [
        "cost from: this experiment's 36 priced trial(s)",
        "minimum detectable effects at 80% power",
        "Miller 2024",
        &format!("{mde:.1} pp"),
        "sequential design, fixed when the experiment is created: 3 stages at 1/2/3 trials",
        "stage 1 (1 trial per task, α spent ",
        "expected trials used: ",
    ] {
        assert!(t.contains(want), "{want:?} in {t}");
    }

    // The sequential design of B − A: stages at 1, 2, 3 trials per task, information fractions
    // as planned before the data, (1 + ρ/3)/(1 + ρ/k) at the noise ratio ρ = 1.9 (not this
    // data's components), each bound's Δ = z · SE at that stage's trials and this data's
    // variance components.
    let seq = &v["sequential"][0]["design"];
    let var = |k: f64| between + (wa + wb) / k;
    for (s, st) in seq["stages"].as_array().unwrap().iter().enumerate() {
        let k = (s + 1) as f64;
        assert_eq!(st["trials"].as_u64().unwrap(), s as u64 + 1);
        close(
            st["fraction"].as_f64().unwrap(),
            (1.0 + 1.9 / 3.0) / (1.0 + 1.9 / k),
            "fraction",
        );
        close(
            st["efficacy_pp"].as_f64().unwrap(),
            st["efficacy_z"].as_f64().unwrap() * (var(k) / n).sqrt() * 100.0,
            "efficacy Δ",
        );
    }
    let share = seq["share_null"].as_f64().unwrap();
    assert!(share > 1.0 / 3.0 && share < 1.0, "{share}");
    let fixed = std::process::Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .arg("plan")
        .arg(&plan)
        .args(["--stages", "3", "--no-early-stop", "--db"])
        .arg(scratch.db())
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&fixed.stdout);
    assert!(
        t.contains("early stopping off (--no-early-stop or early_stop = false)")
            && t.contains("every planned trial runs"),
        "{t}"
    );
}

/// Ends trial `i` of `task` × `cond` of `run` with `outcome`, `reward`, `cost` and `secs`.
#[allow(clippy::too_many_arguments)]
fn end(
    conn: &rusqlite::Connection,
    run: &PlannedRun,
    (task, cond, i): (&str, &str, u32),
    outcome: Outcome,
    reward: Option<f64>,
    cost: f64,
    secs: i64,
) {
    let start = chrono::DateTime::parse_from_rfc3339("2026-11-20T10:00:00Z").unwrap();
    run.finish(
        conn,
        task,
        cond,
        i,
        &TrialPatch {
            status: Some(TrialStatus::Done),
            outcome: Some(outcome),
            reward,
            cost_usd: Some(cost),
            started_at: Some(start.to_rfc3339()),
            finished_at: Some((start + chrono::Duration::seconds(secs)).to_rfc3339()),
            ..Default::default()
        },
    );
}

/// `plan`'s inputs are Method D's (issue 36): a reward of 2 counts 1, a runtime error counts 0,
/// and another run of the same harness and model is borrowed from only when it ran the same
/// tasks — named as what it is (`run …`, not `imported run …`).
#[test]
fn plan_reads_rewards_as_method_d_and_borrows_only_from_runs_of_the_same_tasks() {
    let (scratch, conn) = empty_store();
    let tasks: Vec<(&str, &str, &str)> = TASKS.iter().map(|t| (*t, "Testing", "easy")).collect();
    let plan_run = |name: &str, tasks: &[(&str, &str, &str)]| {
        PlannedRun::new(
            &conn,
            &RunPlan {
                name,
                agent: "claude-code",
                model: Some("claude-opus-4-6"),
                n_trials: 2,
                conditions: &["no-skills", "curated"],
                tasks,
            },
        )
    };
    // A native run over other tasks, much dearer and slower: never a source for these tasks.
    let other_tasks = [("elsewhere", "Testing", "easy"), ("too", "Testing", "easy")];
    let other = plan_run("other-tasks", &other_tasks);
    for (t, _, _) in other_tasks {
        for c in ["no-skills", "curated"] {
            for i in 1..=2 {
                end(
                    &conn,
                    &other,
                    (t, c, i),
                    Outcome::Pass,
                    Some(1.0),
                    50.0,
                    900,
                );
            }
        }
    }
    // A native run over the same tasks: rewards of 2 (clamped to 1) and runtime errors (0).
    let same = plan_run("same-tasks", &tasks);
    let mut rewards: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
    for (ti, task) in TASKS.iter().enumerate() {
        for (ci, cond) in ["no-skills", "curated"].iter().enumerate() {
            for i in 1..=2u32 {
                let (outcome, reward, counted) = match (ti + ci + i as usize) % 3 {
                    0 => (Outcome::Pass, Some(2.0), 1.0),
                    1 => (Outcome::RuntimeError, None, 0.0),
                    _ => (Outcome::Fail, Some(0.0), 0.0),
                };
                end(&conn, &same, (task, cond, i), outcome, reward, 1.0, 60);
                rewards.entry((task, cond)).or_default().push(counted);
            }
        }
    }
    drop(conn);
    let plan = scratch.dir.path().join("fresh.toml");
    std::fs::write(
        &plan,
        format!(
            "name = \"fresh\"\nagent = \"claude-code\"\nmodel = \"claude-opus-4-6\"\ntrials = 2\nconcurrency = 1\ntasks = \"{}\"\ntask = [{}]\n",
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
    let est = &f["estimates"];
    for source in [
        &est["cost_source"],
        &est["seconds_source"],
        &f["power"][0]["source"],
    ] {
        let s = source.as_str().unwrap();
        assert!(s.contains("run same-tasks"), "{s}");
        assert!(!s.contains("imported") && !s.contains("other-tasks"), "{s}");
    }
    // The B − A variances are Method D's rewards: clamped, runtime errors 0.
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
    let between = (sd2 - (wa + wb) / 2.0).max(0.0);
    let n = TASKS.len() as f64;
    let p = &f["power"][0];
    let close = |a: f64, b: f64, what: &str| assert!((a - b).abs() < 1e-6, "{what}: {a} vs {b}");
    close(p["measured"].as_f64().unwrap(), md * 100.0, "B − A");
    close(
        p["mde"].as_f64().unwrap(),
        Z_SUM * ((between + (wa + wb) / 2.0) / n).sqrt() * 100.0,
        "MDE",
    );
    // Per-trial cost and time are the same-task run's ($1, 60 s), not the other run's.
    let a = f["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == "A")
        .unwrap();
    close(a["cost_usd"]["point"].as_f64().unwrap(), 12.0, "A cost");
    close(a["wall_secs"]["point"].as_f64().unwrap(), 720.0, "A wall");
}

/// A plan of absurdly many trials is refused by name, and `plan` warns of a merely large one.
#[test]
fn an_absurd_number_of_trials_is_refused_and_a_large_one_warned_of() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("huge.toml");
    std::fs::write(&p, "trials = 4294967295\n").unwrap();
    let e = skillscope::experiment::plan::Plan::load(&p)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("trials = 4294967295") && e.contains("at most 1000"),
        "{e}"
    );
    let p = dir.path().join("large.toml");
    std::fs::write(
        &p,
        format!(
            "agent = \"oracle\"\ntrials = 40\ntasks = \"{}\"\ntask = [\"passes\"]\n",
            fixtures().display()
        ),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .arg("plan")
        .arg(&p)
        .args(["--db"])
        .arg(dir.path().join("s.db"))
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(t.contains("trials = 40 per task and condition"), "{t}");
}

/// With round 1 in the store, `plan` prints each condition's noise floor — the flip rate counted
/// from the trials and the A/A noise drawn from the same rewards at the plan's trials per task —
/// puts the pooled A/A noise beside each comparison's MDE, and notes a planned effect within it.
#[test]
fn plan_prints_the_noise_floor_of_round_1_and_warns_of_an_effect_within_it() {
    use skillscope::analysis::ci::CiMethod;
    use skillscope::analysis::noise::{self, NoiseMethod, TaskTrials};

    let (scratch, conn) = empty_store();
    let tasks: Vec<(&str, &str, &str)> = TASKS.iter().map(|t| (*t, "Testing", "easy")).collect();
    let run = PlannedRun::new(
        &conn,
        &RunPlan {
            name: "noisy-round1",
            agent: "claude-code",
            model: Some("claude-opus-4-6"),
            n_trials: 4,
            conditions: &["no-skills", "curated"],
            tasks: &tasks,
        },
    );
    // Per condition and task: 4 rewards, some flipping, one partial.
    let mut rewards: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
    for (ti, task) in TASKS.iter().enumerate() {
        for (ci, cond) in ["no-skills", "curated"].iter().enumerate() {
            for i in 1..=4u32 {
                let reward = match (ti + ci + i as usize) % 4 {
                    0 => 0.0,
                    1 if ti == 4 => 0.5,
                    _ => 1.0,
                };
                let reward = if ti == 1 { 0.0 } else { reward };
                run.finish(
                    &conn,
                    task,
                    cond,
                    i,
                    &TrialPatch {
                        status: Some(TrialStatus::Done),
                        outcome: Some(if reward >= 1.0 {
                            Outcome::Pass
                        } else {
                            Outcome::Fail
                        }),
                        reward: Some(reward),
                        ..Default::default()
                    },
                );
                rewards.entry((cond, task)).or_default().push(reward);
            }
        }
    }
    drop(conn);
    let plan = scratch.dir.path().join("noisy.toml");
    std::fs::write(
        &plan,
        format!(
            "name = \"noisy\"\nagent = \"claude-code\"\nmodel = \"claude-opus-4-6\"\ntrials = 4\nconcurrency = 3\ntasks = \"{}\"\ntask = [{}]\n",
            fixtures().display(),
            TASKS.map(|t| format!("\"{t}\"")).join(", ")
        ),
    )
    .unwrap();
    let plan_out = |extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_skillscope"))
            .arg("plan")
            .arg(&plan)
            .args(extra)
            .arg("--db")
            .arg(scratch.db())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let v: serde_json::Value = serde_json::from_str(&plan_out(&["--json"])).unwrap();
    let f = &v["forecast"];
    let m = NoiseMethod::from(&CiMethod::default());
    let mut spread = BTreeMap::new();
    for (label, cond) in [("A", "no-skills"), ("B", "curated")] {
        let row = f["noise"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["label"] == label)
            .unwrap_or_else(|| panic!("no noise row {label}: {f:#}"));
        // Flip rate by hand: a task flips when some reward is 1 and some below.
        let per: Vec<(&str, &Vec<f64>)> =
            TASKS.iter().map(|t| (*t, &rewards[&(cond, *t)])).collect();
        let flipped = per
            .iter()
            .filter(|(_, r)| r.iter().any(|&x| x >= 1.0) && r.iter().any(|&x| x < 1.0))
            .count();
        assert_eq!(
            row["flip"]["flipped"].as_u64().unwrap() as usize,
            flipped,
            "{label}"
        );
        assert_eq!(row["flip"]["tasks"].as_u64().unwrap(), 6);
        assert!(flipped > 0 && flipped < 6, "{flipped}");
        // A/A noise from the same rewards, at the plan's 4 trials.
        let trials: Vec<TaskTrials<'_>> = per
            .iter()
            .map(|(t, r)| TaskTrials {
                task: t,
                rewards: r,
            })
            .collect();
        let want = noise::aa_noise_at(label, &trials, &m, Some(4))
            .spread_pp
            .unwrap();
        let got = row["aa_noise"]["spread_pp"].as_f64().unwrap();
        assert!((got - want).abs() < 1e-9, "{label}: {got} vs {want}");
        assert!(got > 0.0);
        spread.insert(label, got);
    }
    // Beside B − A's MDE: the comparison's own A/A noise as the report takes it (both sides'
    // splits paired over the tasks both measured, at the plan's 4 trials); H1 borrows A for A'
    // (not run yet).
    let side = |cond: &'static str| -> Vec<TaskTrials<'_>> {
        TASKS
            .iter()
            .map(|t| TaskTrials {
                task: t,
                rewards: &rewards[&(cond, *t)],
            })
            .collect()
    };
    let (with, without) = (side("curated"), side("no-skills"));
    let paired = noise::aa_noise_paired_at(("B", &with), ("A", &without), &m, Some(4))
        .spread_pp
        .unwrap();
    let b_a = f["power"][0]["aa_noise_pp"].as_f64().unwrap();
    assert!((b_a - paired).abs() < 1e-9, "{b_a} vs {paired}");
    let h1 = f["power"][1]["aa_noise_pp"].as_f64().unwrap();
    assert!((h1 - spread["A"]).abs() < 1e-9, "{h1}");
    assert!(f["power"][2]["aa_noise_pp"].is_null(), "a share has none");
    // An undefined A/A noise says why: in the JSON and in words under the table.
    let why = f["power"][2]["aa_noise_undefined"].as_str().unwrap();
    assert!(why.contains("a share of the gap"), "{why}");
    assert!(f["power"][0]["aa_noise_undefined"].is_null(), "{f:#}");

    // In words: the floor, and a note for an effect within the noise — none for one above it.
    let small = plan_out(&["--effect", "1"]);
    for want in [
        "noise floor of the trials so far",
        "A: flip rate ",
        "A/A noise ±",
        "the planned effect +1.0 pp is within the A/A noise",
        "A/A noise — for H2 share of the B − A gap",
    ] {
        assert!(small.contains(want), "{want:?} in {small}");
    }
    let large = plan_out(&["--effect", "95"]);
    assert!(!large.contains("is within the A/A noise"), "{large}");
}
