//! Early stopping end to end (issues 38, 47): `skillscope experiment --dry-run --headless` with a
//! group-sequential design of 5 stages over copies of the sequential fixture tasks, real
//! containers and the in-repo Acontext stand-in. A planted effect — the fixture's `planted-*`
//! tasks are solved only with a skill holding what the stand-in's learner writes, so round 1's A
//! and B fail and round 2's A′ and B′ pass — stops round 2 at stage 2 of 5 over 8 tasks (every
//! task moved by +1: the identity is the most extreme of the 256 sign flips, and O'Brien–Fleming
//! has spent more than 1/256 of α at stage 2's planned fraction 0.71, not at stage 1's 0.48), and
//! says so in the headless output, `skillscope status` and the report; the `steady-*` tasks
//! (solved with or without skills) never show an effect. Both runs stay balanced in
//! per_task.csv.

use crate::support::common;
use std::path::{Path, PathBuf};

/// `n` copies of the sequential fixture task `base` (`planted-a`, `steady-a`) in `dir`, named
/// `<kind>-1` …; returns their ids.
fn copies(dir: &Path, base: &str, n: usize) -> Vec<String> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sequential-tasks");
    let kind = base.trim_end_matches("-a");
    (1..=n)
        .map(|i| {
            let id = format!("{kind}-{i}");
            common::copy_tree(&fixtures.join(base), &dir.join(&id), Some((base, &id)));
            id
        })
        .collect()
}

/// Runs the dry run of a 5-trial, 5-stage experiment `name` over `n` copies of fixture task
/// `base` in `dir`; returns (stdout + stderr, the database path, the report's folder).
async fn dry_run(dir: &Path, name: &str, base: &str, n: usize) -> (String, PathBuf, PathBuf) {
    let fixtures = dir.join("tasks");
    let tasks = copies(&fixtures, base, n);
    let list: Vec<String> = tasks.iter().map(|t| format!("{t:?}")).collect();
    let plan = format!(
        "name = {name:?}\nagent = \"oracle\"\ntrials = 5\nconcurrency = 4\ntasks = {:?}\ntask = [{}]\n\n[acontext]\nbase_url = \"http://localhost:8029/api/v1\"\napi_key_env = \"ACONTEXT_API_KEY\"\n\n[sequential]\nstages = 5\n",
        fixtures.display().to_string(),
        list.join(", ")
    );
    std::fs::write(dir.join(format!("{name}.toml")), plan).unwrap();
    let db = dir.join(format!("{name}.db"));
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .args([
            "experiment",
            &format!("{name}.toml"),
            "--dry-run",
            "--headless",
        ])
        .arg("--db")
        .arg(&db)
        .current_dir(dir)
        .env_remove("ACONTEXT_API_KEY")
        .env_remove("ACONTEXT_BASE_URL")
        .output()
        .await
        .expect("run skillscope experiment --dry-run");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{text}");
    let db = text
        .split("status --db ")
        .nth(1)
        .and_then(|s| s.split('`').next())
        .map(PathBuf::from)
        .unwrap_or(db);
    let report = text
        .split("report: ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .map(|p| PathBuf::from(p).parent().unwrap().to_path_buf())
        .unwrap_or_else(|| panic!("no report in {text}"));
    (text, db, report)
}

fn status(db: &Path) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .arg("status")
        .arg("--db")
        .arg(db)
        .output()
        .expect("skillscope status");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every task of each condition has the same planned trials in a run's per_task.csv; returns
/// them per condition label.
fn planned_per_condition(csv: &Path) -> std::collections::BTreeMap<String, u32> {
    let text = std::fs::read_to_string(csv).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let (c, p) = (col("condition"), col("planned"));
    let mut out = std::collections::BTreeMap::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        let n: u32 = f[p].parse().unwrap();
        let prev = out.insert(f[c].to_string(), n);
        assert!(prev.is_none_or(|m| m == n), "{} unbalanced: {text}", f[c]);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_a_planted_effect_stops_round_2_at_stage_2_of_5() {
    common::require_docker().await;
    let dir = tempfile::tempdir().unwrap();
    let t0 = std::time::Instant::now();
    let (out, db, report) = dry_run(dir.path(), "planted", "planted-a", 8).await;
    // The headless output (the dashboard's log): the looks and the early stops.
    for want in [
        "sequential A'-A, stage 1 of 5",
        "sequential A'-A, stage 2 of 5",
        "answered early: effect shown",
        "early stop: condition",
        "experiment planted-dry-run — done",
    ] {
        assert!(out.contains(want), "{want:?} in {out}");
    }
    assert!(!out.contains("sequential A'-A, stage 3 of 5"), "{out}");
    let st = status(&db);
    for want in [
        "design: 5 stages at 1/2/3/4/5 trials per task",
        "A'-A (skills:ls-a-v1 − no-skills): stage 2 of 5 (2 trials per task, 8 tasks) — answered early: effect shown: Z = 16.00 ≥ efficacy bound 16.00: the effect is shown",
        "median-unbiased",
        "stage-wise ordering",
        "keeps 2 trials per task",
        "round 1's conditions run every trial",
    ] {
        assert!(st.contains(want), "{want:?} in {st}");
    }
    // `status --json` carries the same record: both round-2 conditions stopped at stage 2.
    let json = std::process::Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .args(["status", "--json", "--db"])
        .arg(&db)
        .output()
        .expect("skillscope status --json");
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("status --json");
    let stops: Vec<(String, u64)> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["sequential"]["stops"].as_array())
        .flatten()
        .map(|s| {
            (
                s["condition"].as_str().unwrap().to_string(),
                s["stage"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(stops.len(), 2, "{stops:?}");
    assert!(stops.iter().all(|(_, stage)| *stage == 2), "{stops:?}");
    // Both round-2 comparisons stopped at stage 2.
    assert_eq!(
        st.matches("stage 2 of 5 (2 trials per task, 8 tasks) — answered early: effect shown")
            .count(),
        2,
        "{st}"
    );
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains("## Sequential design (early stopping)"), "{md}");
    assert!(md.contains("A' − A): stage 2 of 5"), "{md}");
    assert!(md.contains("answered early: effect shown"), "{md}");
    // Balanced: round 1's conditions 5 trials per task, round 2's 2.
    let planned = planned_per_condition(&report.join("per_task.csv"));
    let mut ns: Vec<u32> = planned.values().copied().collect();
    ns.sort_unstable();
    assert_eq!(ns, vec![2, 2, 5, 5], "{planned:?}");
    eprintln!("planted effect: {:.0}s", t0.elapsed().as_secs_f64());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_no_effect_stops_for_futility_or_runs_to_the_end() {
    common::require_docker().await;
    let dir = tempfile::tempdir().unwrap();
    let t0 = std::time::Instant::now();
    let (out, db, report) = dry_run(dir.path(), "steady", "steady-a", 6).await;
    assert!(!out.contains(": effect shown"), "{out}");
    let st = status(&db);
    assert!(!st.contains(": effect shown"), "{st}");
    for cmp in ["A'-A (", "B'-B ("] {
        let line = st
            .lines()
            .find(|l| l.contains(cmp) && l.contains("stage"))
            .unwrap_or_else(|| panic!("{cmp} in {st}"));
        assert!(
            line.contains("no effect shown") || line.contains("stage 5 of 5"),
            "{line}"
        );
    }
    planned_per_condition(&report.join("per_task.csv"));
    eprintln!("no effect: {:.0}s", t0.elapsed().as_secs_f64());
}
