//! Version drift, named (issue 38): an experiment whose round 2 ran another harness version and,
//! for one task, another task digest than round 1 says so beside the Δ of every comparison
//! across the rounds — in the results, the Markdown and HTML reports, the CSV and the terminal
//! table — and says nothing where both sides ran alike.

use crate::support::planned_run::{PlannedRun, RunPlan, empty_store};
use skillscope::analysis::results::{Scoring, Selection, analyze};
use skillscope::commands::shared::table::model_table;
use skillscope::domain::provenance::Field;
use skillscope::report::model::comparisons;
use skillscope::store::queries::TrialPatch;
use skillscope::store::{Outcome, TrialStatus};

const TASKS: [(&str, &str, &str); 3] = [
    ("t1", "Finance", "easy"),
    ("t2", "Energy", "medium"),
    ("t3", "Robotics", "hard"),
];

/// Run `name` of `conditions` over [`TASKS`], one trial each, passing where `pass` says, its
/// attempts recording harness `version` and task digests (`t1`'s is `t1_digest`).
fn run(
    conn: &rusqlite::Connection,
    name: &str,
    conditions: &[&str],
    version: &str,
    t1_digest: &str,
    pass: &[bool; 3],
) {
    let r = PlannedRun::new(
        conn,
        &RunPlan {
            name,
            agent: "claude-code",
            model: Some("m"),
            n_trials: 1,
            conditions,
            tasks: &TASKS,
        },
    );
    for c in conditions {
        for ((task, _, _), ok) in TASKS.iter().zip(pass) {
            let digest = if *task == "t1" {
                t1_digest.to_string()
            } else {
                format!("sha256:{task}")
            };
            r.finish(
                conn,
                task,
                c,
                1,
                &TrialPatch {
                    status: Some(TrialStatus::Done),
                    outcome: Some(if *ok { Outcome::Pass } else { Outcome::Fail }),
                    reward: Some(if *ok { 1.0 } else { 0.0 }),
                    agent_settings: Some(serde_json::json!({
                        "harness": "claude-code", "version": version, "model": "m",
                        "sampling": {}, "unpinned": ["temperature"],
                    })),
                    task_digest: Some(digest),
                    ..Default::default()
                },
            );
        }
    }
}

#[test]
fn a_harness_upgrade_between_rounds_is_named_beside_every_delta_across_them() {
    let (scratch, conn) = empty_store();
    run(
        &conn,
        "e-round1",
        &["no-skills", "curated"],
        "2.0.1",
        "sha256:aa",
        &[false, false, true],
    );
    run(
        &conn,
        "e-round2",
        &["skills:/x/ls-a-v1", "skills:/x/ls-b-v1"],
        "2.1.0",
        "sha256:bb",
        &[true, false, true],
    );
    skillscope::store::learning::find_or_insert_experiment(
        &conn,
        "e",
        &serde_json::json!({}),
        "e-round1",
        "e-round2",
    )
    .unwrap();
    let selection = Selection::Experiment("e".into());
    let r = analyze(&conn, &selection, &Scoring::default()).unwrap();
    let note = |name: &str| {
        r.comparisons
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("{name}"))
            .drift_note()
    };
    // Within a round both sides ran alike.
    assert_eq!(note("B vs A"), None);
    assert_eq!(note("B' vs A'"), None);
    // Across the rounds: the version and t1's digest, with side first.
    let expected =
        "version drift: harness-version 2.1.0 ≠ 2.0.1; task-digest differs for 1 task(s)";
    for name in ["A' vs A", "B' vs B", "A' vs B"] {
        assert_eq!(note(name).as_deref(), Some(expected), "{name}");
    }
    let a = r.comparisons.iter().find(|c| c.name == "A' vs A").unwrap();
    let fields: Vec<(Field, Option<&str>)> = a
        .drift
        .iter()
        .map(|m| (m.field, m.task.as_deref()))
        .collect();
    assert_eq!(
        fields,
        [
            (Field::TaskDigest, Some("t1")),
            (Field::HarnessVersion, None)
        ]
    );

    // Every renderer: the terminal table (and the dashboard, which draws the same model),
    // Markdown, HTML and the CSV.
    for width in [80u16, 120] {
        let text = model_table(&comparisons::table(&r), Some(width)).to_string();
        for word in ["(version", "drift:", "harness-version", "2.1.0", "2.0.1"] {
            assert!(text.contains(word), "{width}: {word}:\n{text}");
        }
        insta::assert_snapshot!(format!("comparisons_table_drift_{width}"), text);
    }
    let report = skillscope::report::build(&conn, &selection, &Scoring::default()).unwrap();
    let dir = scratch.dir.path().join("report");
    skillscope::report::write(&report, &dir, &skillscope::report::Format::DEFAULT).unwrap();
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains(&format!("({expected})")), "{md}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("version drift: harness-version"), "html");
    let mut rd = csv::Reader::from_path(dir.join("comparisons.csv")).unwrap();
    let headers = rd.headers().unwrap().clone();
    let at = headers
        .iter()
        .position(|h| h == "drift")
        .expect("drift column");
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    let of = |name: &str| {
        rows.iter()
            .find(|r| &r[0] == name)
            .map(|r| r[at].to_string())
            .unwrap()
    };
    assert_eq!(of("A' vs A"), expected);
    assert_eq!(of("B vs A"), "");
}
