//! The skill scoring rubric (`skill-scoring-rubric.md`) on the store: invocations from trials and
//! their `skill_uses` rows (`analysis::invocations`), each invocation's four component scores
//! hand-computed from the rubric's code and the mapping table at the top of
//! `src/analysis/invocations.rs`, and the rubric's dashboard queries and per-skill report
//! (leaderboard, tier distribution, improvement opportunities, tier, trend, weak component,
//! recommendation, gates) with hand-computed expected values.
//!
//! The store is built through the crate's store API (runs, planned trials, `finish_trial`
//! patches, `set_skill_uses`, `new_attempt`); only the `aggregated` flag, which no patch sets (the
//! published-results importer writes it), is set by SQL.

use std::collections::HashMap;

use crate::support::planned_run::{PlannedRun, RunPlan, empty_store, namer};
use rusqlite::Connection;
use skillscope::analysis::invocations::{
    CategoryTable, DistributionRow, LeaderboardRow, OpportunityRow, Window,
    improvement_opportunities, leaderboard, quality_distribution, score_run, skill_report,
};
use skillscope::analysis::rubric::{Component, Direction, Gate, Tier, Trend};
use skillscope::store::queries::{self, TrialPatch};
use skillscope::store::{Outcome, RunRow, SkillUseRow, TrialStatus};

/// What a trial looked like, and the four component scores the rubric gives an invocation of a
/// skill in it: `[completion, efficiency, quality, satisfaction]`.
///
/// Mapping (invocations.rs): errors = error steps + 1 if reward < 1 (none = 0) + 1 if the outcome
/// is neither pass nor fail; recovered = reward ≥ 1; partial = 0 < reward < 1 or tests passed > 0;
/// failure_explained = final message; tokens = input + output; tool calls = n_tool_calls;
/// duration = agent phase, else started → finished, else 0; validated = reward ≥ 1;
/// requested/delivered = CTRF total/passed, else 1/(1 if passed else 0); code output for the
/// "Software Engineering" domain (category code_generation: 50 tokens, 3 calls, 30 s), else
/// analysis (200 tokens, 5 calls, 20 s); linter and types default true, tests_passed = passed;
/// satisfaction always 0 + int(8·(1 − 0.5)) + 7 = 11.
#[derive(Debug, Clone, Copy)]
struct Profile {
    /// `fin` (Finance → analysis, other output) or `se` (Software Engineering → code).
    task: &'static str,
    outcome: Outcome,
    reward: Option<f64>,
    /// CTRF (total, passed).
    tests: Option<(i64, i64)>,
    /// (input, output) tokens.
    tokens: Option<(i64, i64)>,
    tool_calls: Option<i64>,
    error_steps: Option<i64>,
    final_message: Option<bool>,
    /// Agent phase, seconds (ends 5 s before the trial).
    agent_secs: Option<i64>,
    /// Whole trial, seconds (started_at → finished_at).
    whole_secs: Option<i64>,
    expect: [i64; 4],
}

/// Clean pass, analysis. errors 0 → completion 25. Efficiency: 8·min(1, 200/200) = 8,
/// 6·min(1, 5/5) = 6, 6·min(1, 20000/20000) = 6 → 20. Quality: validated 12 + int(10·5/5) = 10 +
/// other 8 → 30. Satisfaction 11. Total 86 (Good).
const P1: Profile = Profile {
    task: "fin",
    outcome: Outcome::Pass,
    reward: Some(1.0),
    tests: Some((5, 5)),
    tokens: Some((150, 50)),
    tool_calls: Some(5),
    error_steps: Some(0),
    final_message: Some(true),
    agent_secs: Some(20),
    whole_secs: Some(30),
    expect: [25, 20, 30, 11],
};

/// Pass after 2 failed steps, code. errors 2, recovered → 20. Efficiency (code_generation):
/// 8·50/1000 = 0.4, 6·3/9 = 2.0, 6·30000/60000 = 3.0 → int(5.4) = 5. Quality: validated 12 +
/// int(10·4/4) = 10 + linter 3 + types 2 + tests 3 → 30. Total 66 (Acceptable).
const P2: Profile = Profile {
    task: "se",
    outcome: Outcome::Pass,
    reward: Some(1.0),
    tests: Some((4, 4)),
    tokens: Some((800, 200)),
    tool_calls: Some(9),
    error_steps: Some(2),
    final_message: Some(false),
    agent_secs: Some(60),
    whole_secs: Some(90),
    expect: [20, 5, 30, 11],
};

/// Fail with 1 of 4 tests, analysis. errors 1 + 1 (reward 0) = 2, not recovered, partial (1 test
/// passed) → 15. Efficiency: 8·200/400 = 4, 6·5/10 = 3, 6·20000/40000 = 3 → 10. Quality: not
/// validated and errors → 0, int(10·1/4) = int(2.5) = 2, other 8 → 10. Total 46 (Below Average).
const P3: Profile = Profile {
    task: "fin",
    outcome: Outcome::Fail,
    reward: Some(0.0),
    tests: Some((4, 1)),
    tokens: Some((400, 0)),
    tool_calls: Some(10),
    error_steps: Some(1),
    final_message: Some(true),
    agent_secs: Some(40),
    whole_secs: None,
    expect: [15, 10, 10, 11],
};

/// Agent timeout without reward, explained, analysis, nothing else known but the trial's span.
/// errors 0 + 1 (no reward = 0) + 1 (exception) = 2, not recovered, not partial, no workaround,
/// explained → 5. Efficiency: tokens 0 → 8, calls 0 → 6, no agent phase → whole trial 100 s:
/// 6·20000/100000 = 1.2 → int(15.2) = 15. Quality: 0 + requested 1 / delivered 0 → 0 + other 8
/// → 8. Total 39 (Poor).
const P4: Profile = Profile {
    task: "fin",
    outcome: Outcome::AgentTimeout,
    reward: None,
    tests: None,
    tokens: None,
    tool_calls: None,
    error_steps: None,
    final_message: Some(true),
    agent_secs: None,
    whole_secs: Some(100),
    expect: [5, 15, 8, 11],
};

/// Build error, code, nothing known (only the end time). errors 0 + 1 + 1 = 2, nothing else →
/// hard failure 0. Efficiency: 8 + 6 + duration 0 → max(0, 1) → 6 → 20. Quality: 0 + 0/1 → 0 +
/// linter 3 + types 2 + tests (not passed) 0 → 5. Total 36 (Poor).
const P5: Profile = Profile {
    task: "se",
    outcome: Outcome::BuildError,
    reward: None,
    tests: None,
    tokens: None,
    tool_calls: None,
    error_steps: None,
    final_message: None,
    agent_secs: None,
    whole_secs: None,
    expect: [0, 20, 5, 11],
};

/// Half reward, wasteful, analysis. errors 0 + 1 = 1, partial (0.5) → 15. Efficiency:
/// 8·200/2000 = 0.8, 6·5/30 = 1.0, 6·20000/120000 = 1.0 → int(2.8) = 2. Quality: 0 +
/// int(10·1/2) = 5 + 8 → 13. Total 41 (Below Average).
const P6: Profile = Profile {
    task: "fin",
    outcome: Outcome::Fail,
    reward: Some(0.5),
    tests: Some((2, 1)),
    tokens: Some((2000, 0)),
    tool_calls: Some(30),
    error_steps: Some(0),
    final_message: Some(false),
    agent_secs: Some(120),
    whole_secs: None,
    expect: [15, 2, 13, 11],
};

/// Runtime error after a long wasteful run, analysis. errors 5 + 1 + 1 = 7, nothing saves it → 0.
/// Efficiency: 8·200/100000 = 0.016, 6·5/500 = 0.06, 6·20000/2000000 = 0.06 → int(0.136) = 0.
/// Quality: 0 + 0 + 8 → 8. Total 19 (Failing).
const P7: Profile = Profile {
    task: "fin",
    outcome: Outcome::RuntimeError,
    reward: None,
    tests: None,
    tokens: Some((90_000, 10_000)),
    tool_calls: Some(500),
    error_steps: Some(5),
    final_message: Some(false),
    agent_secs: Some(2000),
    whole_secs: Some(2100),
    expect: [0, 0, 8, 11],
};

/// Agent timeout whose work passed, analysis. errors 0 steps + 0 (reward 1) + 1 (exception) = 1,
/// recovered → 20. Efficiency: tokens 300 + 100 = 400 → 8·200/400 = 4, 6·min(1, 5/4) = 6,
/// 6·min(1, 20000/10000) = 6 → 16. Quality: validated 12 + int(10·3/3) = 10 + other 8 → 30.
/// Total 77 (Good); errored.
const P8: Profile = Profile {
    task: "fin",
    outcome: Outcome::AgentTimeout,
    reward: Some(1.0),
    tests: Some((3, 3)),
    tokens: Some((300, 100)),
    tool_calls: Some(4),
    error_steps: Some(0),
    final_message: Some(false),
    agent_secs: Some(10),
    whole_secs: Some(20),
    expect: [20, 16, 30, 11],
};

impl Profile {
    fn total(&self) -> i64 {
        self.expect.iter().sum()
    }

    /// The invocation had errors: completion is below 25 exactly when errors > 0.
    fn errored(&self) -> bool {
        self.expect[0] != 25
    }
}

const BASE: &str = "2026-03-01T10:00:00Z";

/// `BASE` + `secs`, as the runner stores times (RFC 3339, milliseconds, `Z`).
fn at(secs: i64) -> String {
    let t = chrono::DateTime::parse_from_rfc3339(BASE).unwrap() + chrono::Duration::seconds(secs);
    t.with_timezone(&chrono::Utc)
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The trials of a run, handed out slot by slot.
struct Builder<'a> {
    conn: &'a Connection,
    run: RunRow,
    slots: HashMap<(String, String), Vec<i64>>,
}

impl<'a> Builder<'a> {
    fn new(conn: &'a Connection, name: &str, conditions: &[&str]) -> Builder<'a> {
        let PlannedRun { run, mut trials } = PlannedRun::new(
            conn,
            &RunPlan {
                name,
                agent: "claude-code",
                model: Some("m"),
                n_trials: 40,
                conditions,
                tasks: &[
                    ("fin", "Finance", "medium"),
                    ("se", "Software Engineering", "medium"),
                ],
            },
        );
        let mut slots: HashMap<(String, String), Vec<i64>> = HashMap::new();
        trials.sort_by_key(|t| std::cmp::Reverse(t.trial_index));
        for t in trials {
            slots
                .entry((t.task_id.clone(), t.condition.clone()))
                .or_default()
                .push(t.id);
        }
        Builder { conn, run, slots }
    }

    /// A queued trial of `task` × `condition`, not yet used.
    fn slot(&mut self, task: &str, condition: &str) -> i64 {
        self.slots
            .get_mut(&(task.to_string(), condition.to_string()))
            .unwrap()
            .pop()
            .unwrap()
    }

    /// Finishes a fresh trial as `p`, ending at `BASE` + `end` seconds, with `skills` used
    /// (each with the given kinds). Returns its id and end time.
    fn trial(
        &mut self,
        p: &Profile,
        condition: &str,
        end: i64,
        skills: &[(&str, &[&str])],
    ) -> (i64, String) {
        let id = self.slot(p.task, condition);
        self.finish(id, p, end, skills)
    }

    fn finish(&self, id: i64, p: &Profile, end: i64, skills: &[(&str, &[&str])]) -> (i64, String) {
        let finished = at(end);
        let patch = TrialPatch {
            status: Some(TrialStatus::Done),
            outcome: Some(p.outcome),
            reward: p.reward,
            tests_total: p.tests.map(|t| t.0),
            tests_passed: p.tests.map(|t| t.1),
            n_input_tokens: p.tokens.map(|t| t.0),
            n_output_tokens: p.tokens.map(|t| t.1),
            n_tool_calls: p.tool_calls,
            n_error_steps: p.error_steps,
            final_message: p.final_message,
            agent_started_at: p.agent_secs.map(|s| at(end - 5 - s)),
            agent_finished_at: p.agent_secs.map(|_| at(end - 5)),
            started_at: p.whole_secs.map(|s| at(end - s)),
            finished_at: Some(finished.clone()),
            ..Default::default()
        };
        queries::finish_trial(self.conn, id, &patch).unwrap();
        let uses: Vec<SkillUseRow> = skills
            .iter()
            .flat_map(|(skill, kinds)| {
                kinds.iter().map(|k| SkillUseRow {
                    skill: skill.to_string(),
                    kind: k.to_string(),
                    first_step: Some(3),
                    count: 1,
                })
            })
            .collect();
        queries::set_skill_uses(self.conn, id, &uses).unwrap();
        (id, finished)
    }
}

/// One expected `skill_invocations` row.
type Row = (i64, String, String, [i64; 4], i64, bool);

/// Expects one invocation of each of `skills` in trial `t` (id, end time) with `p`'s scores.
/// A trial's RFC 3339 end as `skill_invocations` stores it: SQLite's `datetime()` form, UTC.
fn stored_time(rfc3339: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .unwrap()
        .with_timezone(&chrono::Utc)
        .format("%Y-%m-%d %H:%M:%S")
        .to_string()
}

fn add(expected: &mut Vec<Row>, t: (i64, String), p: &Profile, skills: &[&str]) {
    for s in skills {
        expected.push((
            t.0,
            s.to_string(),
            stored_time(&t.1),
            p.expect,
            p.total(),
            p.errored(),
        ));
    }
}

fn stored(conn: &Connection, run_id: i64) -> Vec<Row> {
    let mut st = conn
        .prepare(
            "SELECT trial_id, skill_name, timestamp, completion_score, efficiency_score,
                    quality_score_component, satisfaction_score, quality_score, errored
             FROM skill_invocations WHERE run_id = ?1 ORDER BY trial_id, skill_name",
        )
        .unwrap();
    st.query_map([run_id], |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            [r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?],
            r.get(7)?,
            r.get(8)?,
        ))
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

const READ: &[&str] = &["read"];

/// The window of every dashboard query below: the 30 days before 2026-03-31 00:00 UTC, i.e.
/// timestamps after 2026-03-01 00:00:00.
const REFERENCE: &str = "2026-03-31T00:00:00Z";

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn invocations_scores_queries_and_report_by_hand() {
    let (_dir, conn) = empty_store();
    let mut b = Builder::new(&conn, "r1", &["no-skills", "curated"]);
    let run_id = b.run.id;
    let mut expected: Vec<Row> = Vec::new();
    let min = |m: i64| m * 60;

    // epsilon's own three (minutes 0–2), all P1.
    for m in 0..3 {
        let t = b.trial(&P1, "curated", min(m), &[("epsilon", READ)]);
        add(&mut expected, t, &P1, &["epsilon"]);
    }
    // alpha: P3 ×3 (minutes 3–5), then P1 ×7 (minutes 6–12) shared with epsilon; the first four
    // also used delta. The first one used alpha twice (read + shell): one invocation.
    for m in 3..6 {
        let t = b.trial(&P3, "curated", min(m), &[("alpha", READ)]);
        add(&mut expected, t, &P3, &["alpha"]);
    }
    for m in 6..13 {
        let mut skills: Vec<(&str, &[&str])> = vec![("alpha", READ), ("epsilon", &["invoke"])];
        if m == 6 {
            skills[0] = ("alpha", &["read", "shell"]);
        }
        if m < 10 {
            skills.push(("delta", &["resource"]));
        }
        let t = b.trial(&P1, "curated", min(m), &skills);
        let names: Vec<&str> = skills.iter().map(|s| s.0).collect();
        add(&mut expected, t, &P1, &names);
    }
    // beta: one P3 on 2026-01-20 (stored, but outside the window), P1 ×4 (minutes 13–16), P6 ×7
    // (minutes 17–23).
    let t = b.trial(&P3, "curated", -40 * 86_400, &[("beta", READ)]);
    assert_eq!(t.1, "2026-01-20T10:00:00.000Z");
    add(&mut expected, t, &P3, &["beta"]);
    for m in 13..17 {
        let t = b.trial(&P1, "curated", min(m), &[("beta", READ)]);
        add(&mut expected, t, &P1, &["beta"]);
    }
    for m in 17..24 {
        let t = b.trial(&P6, "curated", min(m), &[("beta", READ)]);
        add(&mut expected, t, &P6, &["beta"]);
    }
    // gamma: P5, P7, P4, P4, P2 (minutes 24–28).
    for (m, p) in [(24, &P5), (25, &P7), (26, &P4), (27, &P4), (28, &P2)] {
        let t = b.trial(p, "curated", min(m), &[("gamma", READ)]);
        add(&mut expected, t, p, &["gamma"]);
    }

    // No invocation: a curated trial that used no skill; a no-skills trial whose trajectory
    // touched alpha; a queued trial with a recorded use; an aggregated trial with a use.
    b.trial(&P1, "curated", min(31), &[]);
    b.trial(&P1, "no-skills", min(32), &[("alpha", READ)]);
    let queued = b.slot("fin", "curated");
    queries::set_skill_uses(
        &conn,
        queued,
        &[SkillUseRow {
            skill: "alpha".into(),
            kind: "read".into(),
            first_step: None,
            count: 1,
        }],
    )
    .unwrap();
    let (agg, _) = b.trial(&P1, "curated", min(33), &[("alpha", READ)]);
    conn.execute("UPDATE trials SET aggregated = 1 WHERE id = ?1", [agg])
        .unwrap();

    // zeta: used in attempt 1 (a P1 at minute 29), which is then retried; attempt 2 (a P3 at
    // minute 30) used no skill.
    let (zeta, zeta_ts) = b.trial(&P1, "curated", min(29), &[("zeta", READ)]);

    // The evidence read in chunks of any size is the evidence read at once, in order.
    let whole = skillscope::store::invocations::run_evidence(&conn, run_id, "no-skills").unwrap();
    assert_eq!(whole.len(), 42);
    for chunk in [1, 5, 41, 42, 1000] {
        let mut parts = Vec::new();
        skillscope::store::invocations::for_each_evidence(&conn, run_id, "no-skills", chunk, |c| {
            assert!(c.len() <= chunk);
            parts.append(c);
            Ok(())
        })
        .unwrap();
        assert_eq!(parts, whole, "chunks of {chunk}");
    }

    // First scoring: 41 invocations + zeta's.
    assert_eq!(
        score_run(&conn, run_id, &CategoryTable::default()).unwrap(),
        42
    );
    let mut with_zeta = expected.clone();
    with_zeta.push((
        zeta,
        "zeta".into(),
        stored_time(&zeta_ts),
        P1.expect,
        86,
        false,
    ));
    with_zeta.sort();
    assert_eq!(stored(&conn, run_id), with_zeta);

    let retry = queries::new_attempt(&conn, zeta, &namer).unwrap();
    b.finish(retry.id, &P3, min(30), &[]);
    assert!(queries::get_trial(&conn, zeta).unwrap().superseded);

    // Re-scoring drops the superseded attempt's invocation, and is idempotent.
    assert_eq!(
        score_run(&conn, run_id, &CategoryTable::default()).unwrap(),
        41
    );
    expected.sort();
    assert_eq!(expected.len(), 41);
    let first = stored(&conn, run_id);
    assert_eq!(first, expected);
    assert_eq!(
        score_run(&conn, run_id, &CategoryTable::default()).unwrap(),
        41
    );
    assert_eq!(stored(&conn, run_id), first);

    // A second run with one more alpha invocation (P1, minute 40) and one of eta (P8, minute 41).
    let mut b2 = Builder::new(&conn, "r2", &["curated"]);
    let r2 = b2.run.id;
    let mut expected2 = Vec::new();
    let t = b2.trial(&P1, "curated", min(40), &[("alpha", READ)]);
    add(&mut expected2, t, &P1, &["alpha"]);
    let t = b2.trial(&P8, "curated", min(41), &[("eta", &["invoke"])]);
    add(&mut expected2, t, &P8, &["eta"]);
    assert_eq!(score_run(&conn, r2, &CategoryTable::default()).unwrap(), 2);
    assert_eq!(stored(&conn, r2), expected2);
    assert_eq!(
        score_run(&conn, run_id, &CategoryTable::default()).unwrap(),
        41
    );
    assert_eq!(stored(&conn, r2), expected2, "scoring r1 leaves r2's rows");

    let w = Window::at(REFERENCE, &[run_id]);

    // ---- Leaderboard: HAVING uses >= 5 keeps gamma (5) and drops delta (4); best first.
    // epsilon 10 × 86. alpha (3·46 + 7·86)/10 = 74.0; components (3·15 + 7·25)/10 = 22,
    // (3·10 + 7·20)/10 = 17, (3·10 + 7·30)/10 = 24, 11. beta in the window (4 P1 + 7 P6):
    // (4·86 + 7·41)/11 = 631/11; (100 + 105)/11 = 205/11, (80 + 14)/11 = 94/11,
    // (120 + 91)/11 = 211/11, 11. gamma (36 + 19 + 39 + 39 + 66)/5 = 39.8; (0+0+5+5+20)/5 = 6,
    // (20+0+15+15+5)/5 = 11, (5+8+8+8+30)/5 = 11.8, 11.
    let lb = leaderboard(&conn, &w).unwrap();
    let want: Vec<(&str, i64, [f64; 5])> = vec![
        ("epsilon", 10, [86.0, 25.0, 20.0, 30.0, 11.0]),
        ("alpha", 10, [74.0, 22.0, 17.0, 24.0, 11.0]),
        (
            "beta",
            11,
            [631.0 / 11.0, 205.0 / 11.0, 94.0 / 11.0, 211.0 / 11.0, 11.0],
        ),
        ("gamma", 5, [39.8, 6.0, 11.0, 11.8, 11.0]),
    ];
    assert_eq!(lb.len(), want.len(), "{lb:#?}");
    for (row, (skill, uses, avgs)) in lb.iter().zip(&want) {
        let LeaderboardRow {
            skill_name,
            uses: n,
            avg_score,
            avg_completion,
            avg_efficiency,
            avg_quality,
            avg_satisfaction,
        } = row;
        assert_eq!((skill_name.as_str(), *n), (*skill, *uses), "{row:?}");
        let got = [
            *avg_score,
            *avg_completion,
            *avg_efficiency,
            *avg_quality,
            *avg_satisfaction,
        ];
        for (g, x) in got.iter().zip(avgs) {
            assert!(close(*g, *x), "{row:?} vs {avgs:?}");
        }
    }
    // Every run: alpha gains r2's invocation, (740 + 86)/11.
    let all = leaderboard(&conn, &Window::at(REFERENCE, &[])).unwrap();
    let alpha = all.iter().find(|r| r.skill_name == "alpha").unwrap();
    assert_eq!(alpha.uses, 11);
    assert!(close(alpha.avg_score, 826.0 / 11.0));
    // Only r2.
    let only2 = leaderboard(&conn, &Window::at(REFERENCE, &[r2])).unwrap();
    assert!(only2.is_empty(), "1 use each < 5: {only2:?}");
    // The window compares times, not text: cut-off 2026-03-01 10:05:30 keeps alpha's minutes
    // 6–12 (7 × P1) and drops its P3s at minutes 3–5.
    let late = leaderboard(&conn, &Window::at("2026-03-31T10:05:30Z", &[run_id])).unwrap();
    let alpha = late.iter().find(|r| r.skill_name == "alpha").unwrap();
    assert_eq!(alpha.uses, 7);
    assert!(close(alpha.avg_score, 86.0));

    // ---- Tier distribution, per skill, best tier first.
    let dist = quality_distribution(&conn, &w).unwrap();
    let got: Vec<(&str, Tier, i64)> = dist
        .iter()
        .map(
            |DistributionRow {
                 skill_name,
                 tier,
                 count,
             }| (skill_name.as_str(), *tier, *count),
        )
        .collect();
    assert_eq!(
        got,
        vec![
            ("alpha", Tier::Good, 7),         // 86
            ("alpha", Tier::BelowAverage, 3), // 46
            ("beta", Tier::Good, 4),          // 86
            ("beta", Tier::BelowAverage, 7),  // 41 (the old 46 is outside the window)
            ("delta", Tier::Good, 4),         // 86
            ("epsilon", Tier::Good, 10),      // 86
            ("gamma", Tier::Acceptable, 1),   // 66
            ("gamma", Tier::Poor, 3),         // 36, 39, 39
            ("gamma", Tier::Failing, 1),      // 19
        ]
    );

    // ---- Improvement opportunities: every component average below 70 % of its maximum,
    // weakest first (ties by skill). gamma completion 6/25 = 0.24, quality 11.8/30 = 0.3933,
    // beta efficiency (94/11)/20 = 0.4273, satisfaction 11/25 = 0.44 for all five skills, gamma
    // efficiency 11/20 = 0.55, beta quality (211/11)/30 = 0.6394. Not listed: beta completion
    // (205/11)/25 = 0.7455, alpha quality 24/30 = 0.8, alpha efficiency 0.85, ….
    let ops = improvement_opportunities(&conn, &w).unwrap();
    let got: Vec<(&str, Component, f64)> = ops
        .iter()
        .map(
            |OpportunityRow {
                 skill_name,
                 weak_area,
                 normalized_score,
             }| (skill_name.as_str(), *weak_area, *normalized_score),
        )
        .collect();
    let want = vec![
        ("gamma", Component::Completion, 0.24),
        ("gamma", Component::Quality, 11.8 / 30.0),
        ("beta", Component::Efficiency, 94.0 / 11.0 / 20.0),
        ("alpha", Component::Satisfaction, 0.44),
        ("beta", Component::Satisfaction, 0.44),
        ("delta", Component::Satisfaction, 0.44),
        ("epsilon", Component::Satisfaction, 0.44),
        ("gamma", Component::Satisfaction, 0.44),
        ("gamma", Component::Efficiency, 0.55),
        ("beta", Component::Quality, 211.0 / 11.0 / 30.0),
    ];
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for (g, x) in got.iter().zip(&want) {
        assert_eq!((g.0, g.1), (x.0, x.1), "{got:#?}");
        assert!(close(g.2, x.2), "{g:?} vs {x:?}");
    }

    // ---- The per-skill report, best average first (ties by name).
    let report = skill_report(&conn, &w).unwrap();
    let order: Vec<&str> = report.iter().map(|s| s.skill_name.as_str()).collect();
    assert_eq!(order, vec!["delta", "epsilon", "alpha", "beta", "gamma"]);
    let by = |name: &str| report.iter().find(|s| s.skill_name == name).unwrap();
    let gates = |name: &str| -> Vec<(Gate, bool, Vec<String>)> {
        by(name)
            .gates
            .iter()
            .map(|g| (g.gate, g.passed, g.failures.clone()))
            .collect()
    };
    let s = |v: &[&str]| -> Vec<String> { v.iter().map(|x| x.to_string()).collect() };

    // alpha: 10 invocations → trend. previous = 3 × 46, recent (last 7) = 7 × 86:
    // (86 − 46)/46·100 = +86.96 % → improving. Tier of 74.0: Acceptable. Weak: satisfaction
    // 11/25 = 0.44 (completion 0.88, efficiency 0.85, quality 0.8). Error rate 3/10.
    let a = by("alpha");
    assert_eq!(a.invocations, 10);
    assert!(close(a.avg_score, 74.0));
    assert_eq!(
        (a.tier, a.tier_action.as_str()),
        (Tier::Acceptable, "Review for patterns")
    );
    assert_eq!(a.weak_component, Component::Satisfaction);
    assert_eq!(
        a.recommendation,
        "Gather user feedback, analyze edit patterns"
    );
    assert!(close(a.error_rate, 0.3));
    assert!(close(a.components.completion, 22.0) && close(a.components.quality, 24.0));
    match &a.trend {
        Trend::Analyzed(t) => {
            assert_eq!(t.trend, Direction::Improving);
            assert!(close(t.previous_avg, 46.0) && close(t.current_avg, 86.0));
            assert!(close(t.change_percent, 40.0 / 46.0 * 100.0), "{t:?}");
            assert_eq!(t.weak_component, Component::Satisfaction);
        }
        t => panic!("alpha: {t:?}"),
    }
    // Publish: 74.0 ≥ 70 and 10 ≥ 10, but 30 % > 10 %.
    assert_eq!(
        gates("alpha"),
        vec![
            (Gate::Publish, false, s(&["Error rate 30.00% > 10.00%"])),
            (
                Gate::Feature,
                false,
                s(&[
                    "Score 74.0 < 85",
                    "Invocations 10 < 50",
                    "Error rate 30.00% > 5.00%"
                ])
            ),
            (Gate::Deprecation, false, s(&["Invocations 10 < 20"])),
        ]
    );

    // beta: 11 in the window. previous = first 4 = 86, recent = 7 × 41:
    // (41 − 86)/86·100 = −52.33 % → declining. 631/11 = 57.36 → Below Average. Weak: efficiency
    // (94/11)/20 = 0.4273 < satisfaction 0.44; its average 8.55 < 50 → the "low" text.
    // Error rate 7/11 = 63.64 %.
    let bt = by("beta");
    assert_eq!(bt.invocations, 11);
    assert!(close(bt.avg_score, 631.0 / 11.0));
    assert_eq!(bt.tier, Tier::BelowAverage);
    assert_eq!(bt.tier_action, "Prioritize improvements");
    assert_eq!(bt.weak_component, Component::Efficiency);
    assert_eq!(
        bt.recommendation,
        "Reduce context size, consider progressive disclosure"
    );
    assert!(close(bt.error_rate, 7.0 / 11.0));
    match &bt.trend {
        Trend::Analyzed(t) => {
            assert_eq!(t.trend, Direction::Declining);
            assert!(close(t.previous_avg, 86.0) && close(t.current_avg, 41.0));
            assert!(close(t.change_percent, -45.0 / 86.0 * 100.0), "{t:?}");
        }
        t => panic!("beta: {t:?}"),
    }
    assert_eq!(
        gates("beta"),
        vec![
            (
                Gate::Publish,
                false,
                s(&["Score 57.4 < 70", "Error rate 63.64% > 10.00%"])
            ),
            (
                Gate::Feature,
                false,
                s(&[
                    "Score 57.4 < 85",
                    "Invocations 11 < 50",
                    "Error rate 63.64% > 5.00%"
                ])
            ),
            (Gate::Deprecation, false, s(&["Invocations 11 < 20"])),
        ]
    );

    // gamma: 5 → insufficient data. 39.8 lies between Poor (20–39) and Below Average (40–59):
    // the lower tier, Poor. Weak: completion 6/25 = 0.24; recommendation for low completion.
    // Every invocation errored. Deprecation review: 39.8 ≤ 40 but 5 < 20 → not triggered.
    let g = by("gamma");
    assert_eq!(g.invocations, 5);
    assert!(close(g.avg_score, 39.8));
    assert_eq!(
        (g.tier, g.tier_action.as_str()),
        (Tier::Poor, "Immediate attention needed")
    );
    assert_eq!(g.trend, Trend::InsufficientData);
    assert_eq!(g.weak_component, Component::Completion);
    assert_eq!(
        g.recommendation,
        "Add more error handling and recovery patterns to SKILL.md"
    );
    assert!(close(g.error_rate, 1.0));
    assert!(close(g.components.efficiency, 11.0) && close(g.components.quality, 11.8));
    assert_eq!(
        gates("gamma"),
        vec![
            (
                Gate::Publish,
                false,
                s(&[
                    "Score 39.8 < 70",
                    "Invocations 5 < 10",
                    "Error rate 100.00% > 10.00%"
                ])
            ),
            (
                Gate::Feature,
                false,
                s(&[
                    "Score 39.8 < 85",
                    "Invocations 5 < 50",
                    "Error rate 100.00% > 5.00%"
                ])
            ),
            (Gate::Deprecation, false, s(&["Invocations 5 < 20"])),
        ]
    );
    let d = &g.deprecation_review;
    assert!(d.low_score && !d.enough_invocations && !d.triggered);
    assert_eq!(d.stale, None);
    assert_eq!(
        d.reasons,
        s(&[
            "Score 39.8 <= 40",
            "Invocations 5 < 20",
            "Age without improvement unknown (not checked)"
        ])
    );

    // delta: 4 × 86 → Good, too few for a trend, no errors: only the invocation counts fail.
    let dl = by("delta");
    assert_eq!((dl.invocations, dl.tier), (4, Tier::Good));
    assert!(close(dl.avg_score, 86.0) && close(dl.error_rate, 0.0));
    assert_eq!(dl.trend, Trend::InsufficientData);
    assert_eq!(dl.weak_component, Component::Satisfaction);
    assert_eq!(
        gates("delta"),
        vec![
            (Gate::Publish, false, s(&["Invocations 4 < 10"])),
            (Gate::Feature, false, s(&["Invocations 4 < 50"])),
            (Gate::Deprecation, false, s(&["Invocations 4 < 20"])),
        ]
    );

    // epsilon: 10 × 86: stable (0 %), passes the publish gate (86 ≥ 70, 10 ≥ 10, 0 ≤ 0.1);
    // feature needs 50 invocations.
    let e = by("epsilon");
    assert_eq!((e.invocations, e.tier), (10, Tier::Good));
    assert_eq!(e.tier_action, "Monitor for consistency");
    match &e.trend {
        Trend::Analyzed(t) => {
            assert_eq!(t.trend, Direction::Stable);
            assert!(close(t.change_percent, 0.0));
        }
        t => panic!("epsilon: {t:?}"),
    }
    assert_eq!(
        gates("epsilon"),
        vec![
            (Gate::Publish, true, vec![]),
            (Gate::Feature, false, s(&["Invocations 10 < 50"])),
            (Gate::Deprecation, false, s(&["Invocations 10 < 20"])),
        ]
    );
    assert!(!e.deprecation_review.triggered && !e.deprecation_review.low_score);

    // zeta's only invocation was superseded: it is in no query.
    assert!(report.iter().all(|s| s.skill_name != "zeta"));
    assert!(ops.iter().all(|o| o.skill_name != "zeta"));
}

/// A failed trial like [`P3`] (completion 15, quality 10, satisfaction 11 → 36 + efficiency)
/// with the efficiency set by its tokens, tool calls and agent time.
const fn fail_with(tokens: i64, calls: i64, agent_secs: i64, efficiency: i64) -> Profile {
    Profile {
        tokens: Some((tokens, 0)),
        tool_calls: Some(calls),
        agent_secs: Some(agent_secs),
        expect: [15, efficiency, 10, 11],
        ..P3
    }
}

/// Total 40: 8·200/400 = 4 + 6·5/1000 = 0.03 + 6·20000/4000000 = 0.03 → int(4.06) = 4.
const F40: Profile = fail_with(400, 1000, 4000, 4);
/// Total 44: 8·200/200 = 8 + 0.03 + 0.03 → int(8.06) = 8.
const F44: Profile = fail_with(200, 1000, 4000, 8);
/// Total 45: 8 + 6·5/30 = 1.0 + 0.03 → int(9.03) = 9.
const F45: Profile = fail_with(200, 30, 4000, 9);
/// Total 50: 8 + 6·5/5 = 6 + 0.03 → int(14.03) = 14.
const F50: Profile = fail_with(200, 5, 4000, 14);

#[test]
fn trend_thresholds_through_the_store() {
    // Ten invocations of one skill: previous = the first 3, recent = the last 7;
    // change = (recent − previous)/max(previous, 1)·100, improving above +10, declining below −10.
    // 1. 3 × 40 then 7 × 44: (44 − 40)/40·100 = +10.0 exactly → stable.
    // 2. 3 × 40 then 6 × 44 + 45: 309/7 = 44.14 → +10.36 % → improving.
    // 3. 3 × 50 then 7 × 45: (45 − 50)/50·100 = −10.0 exactly → stable.
    // 4. 3 × 50 then 6 × 45 + 44: 314/7 = 44.86 → −10.29 % → declining.
    let cases: [(&[&Profile], &[&Profile], Direction, f64); 4] = [
        (&[&F40; 3], &[&F44; 7], Direction::Stable, 10.0),
        (
            &[&F40; 3],
            &[&F44, &F44, &F44, &F44, &F44, &F44, &F45],
            Direction::Improving,
            (309.0 / 7.0 - 40.0) / 40.0 * 100.0,
        ),
        (&[&F50; 3], &[&F45; 7], Direction::Stable, -10.0),
        (
            &[&F50; 3],
            &[&F45, &F45, &F45, &F45, &F45, &F45, &F44],
            Direction::Declining,
            (314.0 / 7.0 - 50.0) / 50.0 * 100.0,
        ),
    ];
    let (_dir, conn) = empty_store();
    for (i, (prev, recent, direction, change)) in cases.iter().enumerate() {
        let mut b = Builder::new(&conn, &format!("t{i}"), &["curated"]);
        // The recent ones are recorded first (lower trial ids) but end later: the order is by
        // time, not by id.
        let mut totals = Vec::new();
        for (k, p) in recent.iter().enumerate() {
            let (id, _) = b.trial(p, "curated", 3600 + k as i64 * 60, &[("s", READ)]);
            totals.push((id, p.total()));
        }
        for (k, p) in prev.iter().enumerate() {
            let (id, _) = b.trial(p, "curated", k as i64 * 60, &[("s", READ)]);
            totals.push((id, p.total()));
        }
        assert_eq!(
            score_run(&conn, b.run.id, &CategoryTable::default()).unwrap(),
            10
        );
        totals.sort();
        let got: Vec<(i64, i64)> = stored(&conn, b.run.id)
            .into_iter()
            .map(|r| (r.0, r.4))
            .collect();
        assert_eq!(got, totals, "case {i}: the profiles' totals");
        let r = skill_report(&conn, &Window::at(REFERENCE, &[b.run.id])).unwrap();
        assert_eq!(r.len(), 1);
        match &r[0].trend {
            Trend::Analyzed(t) => {
                assert_eq!(t.trend, *direction, "case {i}: {t:?}");
                assert!(close(t.change_percent, *change), "case {i}: {t:?}");
            }
            t => panic!("case {i}: {t:?}"),
        }
        // Nine (the window's cut-off just after the first) are not enough.
        let nine = skill_report(&conn, &Window::at("2026-03-31T10:00:30Z", &[b.run.id])).unwrap();
        assert_eq!(nine[0].invocations, 9);
        assert_eq!(nine[0].trend, Trend::InsufficientData);
    }
}

/// `report` while a run is in flight: another connection commits (the engine's writer, here a
/// thread changing `skill_uses`) between the scoring's reads and its writes. Each call must wait
/// its turn for the write lock, not fail with "database is locked" (a deferred transaction that
/// read before the other's commit cannot become a writer in WAL mode: SQLite answers BUSY at
/// once, without waiting out the busy timeout).
#[test]
fn scoring_beside_a_writer_waits_instead_of_failing() {
    let (scratch, conn) = empty_store();
    let mut b = Builder::new(&conn, "live", &["curated"]);
    let mut ids = Vec::new();
    for k in 0..20 {
        let (id, _) = b.trial(&P1, "curated", k * 60, &[("s", READ)]);
        ids.push(id);
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        let other = scratch.store.connect().unwrap();
        let id = ids[0];
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // Each commit changes the evidence's marker: the next scoring writes again.
                let uses = vec![SkillUseRow {
                    skill: format!("s{}", n % 3),
                    kind: "read".into(),
                    first_step: Some(3),
                    count: 1,
                }];
                queries::set_skill_uses(&other, id, &uses).unwrap();
                n += 1;
            }
            n
        })
    };
    let mut scored = 0;
    for _ in 0..200 {
        score_run(&conn, b.run.id, &CategoryTable::default())
            .expect("scoring beside a writer waits for the lock");
        scored += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let commits = writer.join().unwrap();
    assert_eq!(scored, 200);
    assert!(commits > 0, "the writer committed while the scoring ran");
}
