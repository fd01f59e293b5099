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

/// An experiment `e` whose round 2 ran harness 2.1.0 (round 1: 2.0.1) and another digest of
/// `t1`.
fn drifted() -> (crate::support::common::Scratch, rusqlite::Connection) {
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
    (scratch, conn)
}

#[test]
fn a_harness_upgrade_between_rounds_is_named_beside_every_delta_across_them() {
    let (scratch, conn) = drifted();
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

/// The dashboard's Results view over the same experiment, watched from round 2: the note is
/// beside the Δ of the comparisons across rounds.
#[test]
fn the_results_view_notes_the_drift_beside_its_delta() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use skillscope::tui::app::Mode;
    use skillscope::tui::worker::Update;
    let (_scratch, conn) = drifted();
    let run = skillscope::store::queries::find_run(&conn, "e-round2")
        .unwrap()
        .unwrap();
    let mut app = crate::support::dashboard::watching(
        &conn,
        run.id,
        Mode::Watch,
        "dark",
        crate::support::dashboard::clock(),
    );
    app.on_key(KeyEvent::new(KeyCode::Char('a'), KeyModifiers::NONE));
    app.on_update(Update::Results(std::sync::Arc::new(
        skillscope::tui::worker::analysis::load_results(&conn, run.id).unwrap(),
    )));
    for (w, h) in [(120u16, 40u16), (80, 24)] {
        let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
        t.draw(|f| skillscope::tui::views::draw(f, &mut app))
            .unwrap();
        let screen = t.backend().to_string();
        if w == 120 {
            assert!(screen.contains("version drift"), "{screen}");
        }
        insta::assert_snapshot!(format!("results_drift_{w}x{h}"), screen);
    }
}
