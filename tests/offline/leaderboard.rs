//! `report --format leaderboard` over the example run: SkillsBench's AgentBeats leaderboard rows,
//! checked against the board's rules (`benchflow-ai/skillsbench-leaderboard`
//! `scripts/validate_results_schema.py` at 40d7d1b, reimplemented in
//! `report::leaderboard::validate`), with infrastructure failures ineligible rather than failed.

use skillscope::analysis::results::Selection;
use skillscope::report::leaderboard::{self, validate};
use skillscope::skillsbench::Catalog;
use skillscope::store::queries::TrialPatch;
use skillscope::store::{Outcome, TrialStatus};

use crate::support::planned_run::{PlannedRun, RunPlan, empty_store};

/// The built-in example tasks with their catalog-free domains and difficulties.
const EXAMPLE_TASKS: [(&str, &str, &str); 5] = [
    ("ledger-code-mapping", "Office & White Collar", "medium"),
    ("sales-region-totals", "Office & White Collar", "easy"),
    ("sensor-drift-correction", "Natural Science", "medium"),
    ("service-log-triage", "Software Engineering", "easy"),
    ("temperature-unit-normalization", "Natural Science", "easy"),
];

#[test]
fn the_example_run_writes_rows_the_board_accepts() {
    let (scratch, conn) = empty_store();
    let run = PlannedRun::new(
        &conn,
        &RunPlan {
            name: "examples",
            tasks: &EXAMPLE_TASKS,
            ..RunPlan::default()
        },
    );
    let digest = "sha256:8c8248a0915aa358663a8720dc47f643de2ee4c6225384ca130f33954308149e";
    let timed = |outcome, reward| TrialPatch {
        status: Some(TrialStatus::Done),
        outcome: Some(outcome),
        reward,
        started_at: Some("2026-11-20T09:30:00.000Z".into()),
        finished_at: Some("2026-11-20T09:30:42.500Z".into()),
        task_digest: Some(digest.into()),
        ..Default::default()
    };
    // no-skills: 2 passes, a wrong answer, a partial reward, and a provider failure (no verdict,
    // whatever the verifier wrote).
    run.finish(
        &conn,
        "ledger-code-mapping",
        "no-skills",
        1,
        &timed(Outcome::Pass, Some(1.0)),
    );
    run.verdict(
        &conn,
        ("sales-region-totals", "no-skills", 1),
        Outcome::Pass,
        Some(1.0),
    );
    run.verdict(
        &conn,
        ("sensor-drift-correction", "no-skills", 1),
        Outcome::Fail,
        Some(0.0),
    );
    run.verdict(
        &conn,
        ("service-log-triage", "no-skills", 1),
        Outcome::Fail,
        Some(0.4),
    );
    run.verdict(
        &conn,
        ("temperature-unit-normalization", "no-skills", 1),
        Outcome::ProviderError,
        None,
    );
    // curated: passes, an agent timeout (a verdict), a Docker failure, a cancel, and one trial
    // still running (no row, the shard is partial).
    run.verdict(
        &conn,
        ("ledger-code-mapping", "curated", 1),
        Outcome::Pass,
        Some(1.0),
    );
    run.verdict(
        &conn,
        ("sales-region-totals", "curated", 1),
        Outcome::AgentTimeout,
        Some(0.0),
    );
    run.verdict(
        &conn,
        ("sensor-drift-correction", "curated", 1),
        Outcome::RuntimeError,
        None,
    );
    run.verdict(
        &conn,
        ("service-log-triage", "curated", 1),
        Outcome::Cancelled,
        None,
    );

    let board = leaderboard::build(
        &conn,
        &Selection::Runs(vec!["examples".into()]),
        None,
        &Catalog::shipped(),
    )
    .unwrap();
    let value = serde_json::to_value(&board).unwrap();
    assert_eq!(validate(&value), Vec::<String>::new(), "{value:#}");
    assert_eq!(board.status, "partial");
    assert!(leaderboard::is_agentbeats_id(&board.participants.agent));
    let shards: Vec<(&str, &str, usize)> = board
        .results
        .iter()
        .map(|s| {
            (
                s.participants.agent.as_str(),
                s.status.as_str(),
                s.results.len(),
            )
        })
        .collect();
    assert_eq!(
        shards,
        [
            ("skillscope:examples/no-skills", "completed", 5),
            ("skillscope:examples/curated", "partial", 4)
        ]
    );
    let row = |shard: usize, task: &str| {
        board.results[shard]
            .results
            .iter()
            .find(|r| r.task_id == task)
            .unwrap()
            .clone()
    };
    let pass = row(0, "ledger-code-mapping");
    assert!(pass.score_eligible && pass.passed);
    assert_eq!((pass.reward, pass.time_used), (1.0, Some(42.5)));
    assert_eq!(pass.task_digest.as_deref(), Some(digest));
    assert_eq!(
        (pass.condition.as_str(), pass.has_skills),
        ("no_skills", false)
    );
    assert_eq!(pass.category.as_deref(), Some("Office & White Collar"));
    assert_eq!(pass.difficulty.as_deref(), Some("medium"));
    let partial = row(0, "service-log-triage");
    assert!(partial.score_eligible && !partial.passed);
    assert_eq!(partial.reward, 0.4);
    // Infrastructure failures: ineligible, not failed.
    for (shard, task, kind) in [
        (0, "temperature-unit-normalization", "participant_error"),
        (1, "sensor-drift-correction", "sandbox_error"),
        (1, "service-log-triage", "cancelled"),
    ] {
        let r = row(shard, task);
        assert!(!r.score_eligible && !r.passed, "{task}");
        assert_eq!(r.reward, 0.0);
        assert_eq!(r.infra_failure_type.as_deref(), Some(kind), "{task}");
        assert_eq!(r.error_type, r.infra_failure_type);
    }
    let timeout = row(1, "sales-region-totals");
    assert!(
        timeout.score_eligible && !timeout.passed,
        "an agent timeout is a verdict"
    );
    assert_eq!(timeout.infra_failure_type, None);
    assert_eq!(
        (timeout.condition.as_str(), timeout.has_skills),
        ("with_skills", true)
    );

    // The board's overall query (queries/overall.sql): pass rate over eligible distinct tasks.
    let eligible: Vec<&leaderboard::Row> = board
        .results
        .iter()
        .flat_map(|s| &s.results)
        .filter(|r| r.score_eligible)
        .collect();
    let tasks: std::collections::BTreeSet<&str> =
        eligible.iter().map(|r| r.task_id.as_str()).collect();
    let passed: std::collections::BTreeSet<&str> = eligible
        .iter()
        .filter(|r| r.passed)
        .map(|r| r.task_id.as_str())
        .collect();
    assert_eq!((passed.len(), tasks.len()), (2, 4));

    // Written through the report's writer, read back, still accepted.
    let out = scratch.dir.path().join("report");
    let (path, _) = leaderboard::write(
        &conn,
        &Selection::Runs(vec!["examples".into()]),
        Some("019e2db7-2a23-7673-a2f4-e09ec4bbf4d1"),
        &Catalog::shipped(),
        &out,
    )
    .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let back: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(validate(&back), Vec::<String>::new());
    assert_eq!(
        back["participants"]["agent"],
        "019e2db7-2a23-7673-a2f4-e09ec4bbf4d1"
    );
}

#[test]
fn the_board_rules_name_every_wrong_field() {
    let bad = serde_json::json!({
        "participants": {"agent": "not-a-uuid"},
        "results": [
            {"task_id": "legacy", "results": []},
            {"results": [
                {"task_id": "", "score_eligible": "yes", "passed": true, "reward": null,
                 "infra_failure_type": 3, "category": null},
                {"task_id": "t", "score_eligible": false, "passed": false, "reward": 0,
                 "time_used": null, "infra_failure_type": null, "category": null, "difficulty": null},
                {"task_id": "u", "score_eligible": true, "passed": true, "reward": true,
                 "time_used": 1, "infra_failure_type": "sandbox_error", "category": null,
                 "difficulty": null}
            ]}
        ]
    });
    let errors = validate(&bad);
    for e in [
        "participants.agent must be a registered AgentBeats UUID",
        "results[0] uses legacy direct-row shape; wrap rows under results[0].results",
        "results[0].results must contain at least one task row",
        "results[1].results[0].task_id must be a non-empty string",
        "results[1].results[0].score_eligible must be boolean",
        "results[1].results[0].reward must be numeric",
        "results[1].results[0].time_used is required",
        "results[1].results[0].infra_failure_type must be a string or null",
        "results[1].results[0].difficulty is required",
        "results[1].results[1].infra_failure_type is required for non-scoreable rows",
        "results[1].results[2].infra_failure_type must be null for scoreable rows",
    ] {
        assert!(
            errors.iter().any(|x| x == e),
            "{e} missing from {errors:#?}"
        );
    }
    // A boolean passes as a number, as in the board's Python.
    assert!(
        !errors
            .iter()
            .any(|x| x.starts_with("results[1].results[2].reward"))
    );
    assert_eq!(validate(&serde_json::json!({"participants": {}})).len(), 2);
    assert!(leaderboard::is_agentbeats_id(
        "019e2db7-2a23-7673-a2f4-e09ec4bbf4d1"
    ));
    assert!(!leaderboard::is_agentbeats_id(
        "019e2db7-2a23-7673-c2f4-e09ec4bbf4d1"
    ));
}
