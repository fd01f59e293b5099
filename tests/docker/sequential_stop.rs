//! A stop is clean everywhere (issue 47): `skillscope run --stages 4` in real containers over
//! eight copies of the `skill-gated` fixture (solved with its curated skill, failed without), so
//! the design shows the effect at stage 2 of 4 (every task moved by +1: the identity alone is
//! the most extreme of the 256 sign flips, and O'Brien–Fleming has spent more than 1/256 of α by
//! then) and stops both conditions at 2 trials per task. Trials of stage 3 that were already
//! running finish and are kept, beyond the stop: the leaderboard shards, `per_task.csv`,
//! `report.json` and `report.html` all count 2 trials per task and condition, and list none of
//! them as counted.

use std::collections::BTreeMap;
use std::path::Path;

use crate::support::common::{self, Scratch, copy_tree, fixtures, skillscope};

/// Tasks of the run: as many as make stage 2 the first at which the sign-flip test can reject.
const TASKS: usize = 8;

/// `TASKS` copies of `skill-gated`, `gated-1` … ; `gated-1`'s solution sleeps 4 s, so its
/// stage-3 trials (the first of that stage to start) are still running when stage 2 completes.
fn tasks(dir: &Path) {
    let from = fixtures().join("skill-gated");
    for i in 1..=TASKS {
        let to = dir.join(format!("gated-{i}"));
        copy_tree(&from, &to, None);
        if i == 1 {
            let solve = to.join("solution/solve.sh");
            let text = std::fs::read_to_string(&solve).unwrap();
            std::fs::write(
                &solve,
                text.replacen("#!/bin/sh\n", "#!/bin/sh\nsleep 4\n", 1),
            )
            .unwrap();
        }
    }
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_with_a_trial_in_flight_is_counted_alike_everywhere() {
    common::require_docker().await;
    let s = Scratch::new();
    let dir = s.dir.path().join("gated");
    tasks(&dir);
    let dir = dir.display().to_string();
    let out = skillscope(
        &s,
        &[
            "run",
            "--tasks",
            &dir,
            "--conditions",
            "no-skills,curated",
            "--trials",
            "4",
            "--stages",
            "4",
            "--concurrency",
            "4",
            "--run",
            "gated",
            "--jobs-dir",
            "jobs",
            "--headless",
        ],
    );
    let log = text(&out);
    assert_eq!(out.status.code(), Some(0), "{log}");
    assert!(
        log.contains("sequential B-A, stage 2 of 4")
            && log.contains("answered early: effect shown"),
        "{log}"
    );
    assert!(!log.contains("stage 3 of 4"), "{log}");

    // The store: both conditions stopped at 2 trials per task; a trial of index 3 that was
    // running at the stop finished and was kept.
    let conn = rusqlite::Connection::open(s.db()).unwrap();
    let stops: Vec<(String, i64, String)> = conn
        .prepare("SELECT condition, trials, at FROM early_stops ORDER BY condition")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(stops.len(), 2, "{stops:?}");
    assert!(stops.iter().all(|(_, k, _)| *k == 2), "{stops:?}");
    let stop_at = stops.iter().map(|s| s.2.clone()).min().unwrap();
    let beyond: Vec<(String, String, i64, String, String)> = conn
        .prepare(
            "SELECT task_id, condition, trial_index, started_at, finished_at FROM trials
             WHERE trial_index > 2 AND status = 'done' AND superseded = 0",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        beyond
            .iter()
            .any(|(_, _, _, started, finished)| *started < stop_at && *finished > stop_at),
        "no trial was in flight at the stop ({stop_at}): {beyond:?}"
    );

    // The reports, every format.
    let rep = skillscope(
        &s,
        &[
            "report",
            "gated",
            "--format",
            "json,csv,html,leaderboard",
            "--out",
            "rep",
        ],
    );
    assert!(rep.status.success(), "{}", text(&rep));
    let rep_dir = s.dir.path().join("rep");

    // report.json: 16 trials counted per condition, no-skills 0 %, curated 100 %.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(rep_dir.join("report.json")).unwrap())
            .unwrap();
    let conditions = json["results"]["conditions"].as_array().unwrap();
    let mut counted = BTreeMap::new();
    for c in conditions {
        let key = c["condition"].as_str().unwrap().to_string();
        assert_eq!(c["planned"], (2 * TASKS) as u64, "{c}");
        assert_eq!(c["done"], (2 * TASKS) as u64, "{c}");
        counted.insert(key, c["pass_rate"].as_f64().unwrap());
    }
    assert_eq!(counted["no-skills"], 0.0, "{counted:?}");
    assert_eq!(counted["curated"], 1.0, "{counted:?}");
    // Its comparison carries the design's verdict as the verdict.
    let cmp = &json["results"]["comparisons"][0];
    assert_eq!(cmp["sequential"]["look"]["decision"], "efficacy", "{cmp}");
    assert_eq!(cmp["sequential"]["look"]["stage"], 2, "{cmp}");
    // Its trial list marks exactly the trials past the stop.
    let links = json["trials"].as_array().unwrap();
    let marked = links.iter().filter(|l| l["beyond_stop"] == true).count();
    assert!(
        links
            .iter()
            .all(|l| (l["trial_index"].as_i64().unwrap() > 2) == (l["beyond_stop"] == true)),
        "{links:?}"
    );
    assert_eq!(marked, beyond.len(), "{links:?}");

    // per_task.csv: 2 planned trials per task and condition, all done.
    let csv = std::fs::read_to_string(rep_dir.join("per_task.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| {
        head.iter()
            .position(|h| *h == n)
            .unwrap_or_else(|| panic!("{n}: {csv}"))
    };
    let (planned, condition) = (col("planned"), col("condition"));
    let mut rows_per_condition: BTreeMap<String, usize> = BTreeMap::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(f[planned], "2", "{l}");
        *rows_per_condition
            .entry(f[condition].to_string())
            .or_default() += 1;
    }
    assert!(
        rows_per_condition.values().all(|n| *n == TASKS),
        "{rows_per_condition:?}"
    );

    // The leaderboard: one shard per condition, each with 16 rows, completed, balanced.
    let board_path = std::fs::read_dir(&rep_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("leaderboard"))
        .unwrap_or_else(|| panic!("no leaderboard file in {}", rep_dir.display()));
    let board: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&board_path).unwrap()).unwrap();
    let shards = board["results"].as_array().unwrap();
    assert_eq!(shards.len(), 2, "{board}");
    for shard in shards {
        let rows = shard["results"].as_array().unwrap();
        assert_eq!(rows.len(), 2 * TASKS, "{}", shard["participants"]);
        assert_eq!(shard["status"], "completed", "{}", shard["participants"]);
        let mut per_task: BTreeMap<&str, usize> = BTreeMap::new();
        for r in rows {
            *per_task.entry(r["task_id"].as_str().unwrap()).or_default() += 1;
        }
        assert!(per_task.values().all(|n| *n == 2), "{per_task:?}");
    }

    // report.html: every trial beyond the stop is listed in parentheses, every kept one bare.
    let html = std::fs::read_to_string(rep_dir.join("report.html")).unwrap();
    assert!(html.contains("finished beyond an early stop"), "legend");
    for (task, condition, index, _, _) in &beyond {
        let folder = conn
            .query_row(
                "SELECT trial_dir FROM trials WHERE task_id = ?1 AND condition = ?2 AND trial_index = ?3
                 AND superseded = 0",
                rusqlite::params![task, condition, index],
                |r| r.get::<_, String>(0),
            )
            .unwrap();
        let name = Path::new(&folder)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let at = html
            .find(&name)
            .unwrap_or_else(|| panic!("{name} not linked in report.html"));
        let after = &html[at..];
        let label = &after[after.find('>').unwrap() + 1..after.find("</a>").unwrap()];
        assert!(label.starts_with(&format!("({index}")), "{name}: {label}");
    }
    let kept_links = html.matches(">1✓<").count() + html.matches(">2✓<").count();
    assert_eq!(kept_links, 2 * TASKS, "curated's kept trials, linked bare");
}
