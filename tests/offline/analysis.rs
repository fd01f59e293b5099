//! Results on hand-computed runs: Method D with missing and errored trials, Δ, g, the pass rate
//! over trials with a verdict, breakdowns, task changes, failure modes, and an experiment's
//! labels, comparisons, failure shifts and learning efficiency.

use crate::support::planned_run::{PlannedRun, RunPlan, empty_store};
use rusqlite::Connection;
use skillscope::analysis::results::{Change, FailureMode, Scoring, Selection, analyze};
use skillscope::store::Outcome;

const TASKS: [(&str, &str, &str); 3] = [
    ("t1", "Finance", "easy"),
    ("t2", "Finance", "hard"),
    ("t3", "Healthcare", "medium"),
];

/// A run of the three tasks with the given results; trials not listed stay queued.
fn add_run(
    conn: &Connection,
    name: &str,
    conditions: &[&str],
    n_trials: u32,
    results: &[(&str, &str, u32, Outcome, Option<f64>)],
) {
    let run = PlannedRun::new(
        conn,
        &RunPlan {
            name,
            n_trials,
            conditions,
            tasks: &TASKS,
            ..Default::default()
        },
    );
    for (task, cond, idx, outcome, reward) in results {
        run.verdict(conn, (task, cond, *idx), *outcome, *reward);
    }
}

use Outcome::*;

#[test]
fn method_d_delta_gain_judged_rates_and_breakdowns_by_hand() {
    let (_d, conn) = empty_store();
    add_run(
        &conn,
        "r",
        &["no-skills", "curated"],
        2,
        &[
            // no-skills: t1 0.5, t2 0 (two runs without a reward), t3 1.0 → 0.5
            ("t1", "no-skills", 1, Pass, Some(1.0)),
            ("t1", "no-skills", 2, Fail, Some(0.0)),
            ("t2", "no-skills", 1, NoReward, None),
            ("t2", "no-skills", 2, NoReward, None),
            ("t3", "no-skills", 1, Pass, Some(1.0)),
            ("t3", "no-skills", 2, Pass, Some(1.0)),
            // curated: t1 1.0, t2 0.5 (one pass, one never run), t3 0.75 → 0.75
            ("t1", "curated", 1, Pass, Some(1.0)),
            ("t1", "curated", 2, Pass, Some(1.0)),
            ("t2", "curated", 1, Pass, Some(1.0)),
            ("t3", "curated", 1, Fail, Some(0.5)),
            ("t3", "curated", 2, Pass, Some(1.0)),
        ],
    );
    let r = analyze(
        &conn,
        &Selection::Runs(vec!["r".into()]),
        &Scoring::default(),
    )
    .unwrap();
    assert_eq!(r.tasks.len(), 3);
    let (a, b) = (&r.conditions[0], &r.conditions[1]);
    assert_eq!(
        (a.label.as_str(), b.label.as_str()),
        ("no-skills", "curated")
    );
    assert!((a.pass_rate - 0.5).abs() < 1e-12);
    assert!((b.pass_rate - 0.75).abs() < 1e-12);
    assert_eq!(a.per_task, vec![Some(0.5), Some(0.0), Some(1.0)]);
    assert_eq!(b.per_task, vec![Some(1.0), Some(0.5), Some(0.75)]);
    // Judged: no-skills leaves t2 out (0.5 + 1) / 2; curated (1 + 1 + 0.75) / 3.
    assert!((a.pass_rate_judged.unwrap() - 0.75).abs() < 1e-12);
    assert!((b.pass_rate_judged.unwrap() - 2.75 / 3.0).abs() < 1e-12);
    // Failure modes.
    assert_eq!(a.failures.get(&FailureMode::NoReward), Some(&2));
    assert_eq!(a.failures.get(&FailureMode::WrongOutput), Some(&1));
    assert_eq!(b.failures.get(&FailureMode::NotRun), Some(&1));
    assert_eq!(b.failures.get(&FailureMode::WrongOutput), Some(&1));
    assert_eq!((a.infrastructure(), b.infrastructure()), (2, 0));
    assert_eq!((a.done, b.done, a.passed, b.passed), (6, 5, 3, 4));
    // CIs around the rates.
    for c in [a, b] {
        let ci = c.ci.unwrap();
        assert!(ci.low <= c.pass_rate && c.pass_rate <= ci.high, "{c:?}");
    }

    let cmp = &r.comparisons[0];
    assert_eq!(cmp.name, "curated vs no-skills");
    assert!((cmp.delta_pp.unwrap() - 25.0).abs() < 1e-9);
    assert_eq!((cmp.n_tasks, cmp.n_tasks_total), (3, 3));
    assert!((cmp.g.unwrap() - 0.5).abs() < 1e-12);
    // Paired over t1 and t3, the tasks judged on both sides (issue 36): curated (1 + 0.75) / 2
    // less no-skills (0.5 + 1) / 2.
    assert!((cmp.delta_pp_judged.unwrap() - (0.875 - 0.75) * 100.0).abs() < 1e-9);
    assert_eq!((cmp.improved, cmp.degraded, cmp.unchanged), (2, 1, 0));
    let ci = cmp.delta_ci_pp.unwrap();
    assert!(ci.low <= 25.0 && 25.0 <= ci.high);
    // Task deltas, best first.
    let deltas: Vec<(&str, f64, Change)> = r
        .task_deltas
        .iter()
        .map(|d| (d.task.as_str(), d.delta_pp.unwrap(), d.change))
        .collect();
    assert_eq!(
        deltas,
        vec![
            ("t1", 50.0, Change::Improved),
            ("t2", 50.0, Change::Improved),
            ("t3", -25.0, Change::Degraded)
        ]
    );
    // Domains and difficulties.
    let fin = r.domains.iter().find(|g| g.group == "Finance").unwrap();
    assert_eq!(fin.rates, vec![Some(0.25), Some(0.75)]);
    assert_eq!(fin.deltas_pp, vec![Some(50.0)]);
    let order: Vec<&str> = r.difficulties.iter().map(|g| g.group.as_str()).collect();
    assert_eq!(order, ["easy", "medium", "hard"]);
    // The infrastructure note.
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("without a verdict") && n.contains("+25.0")),
        "{:?}",
        r.notes
    );
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("1 of 6 planned trials have not run")),
        "{:?}",
        r.notes
    );
}

/// Round 2's conditions in the experiments below: LS-A's and LS-B's skills.
const ROUND2: [&str; 2] = ["skills:/x/ls-a-v1", "skills:/x/ls-b-v1"];

/// Experiment `e` of one trial per task: round 1 (`e-round1`: no-skills, curated) and round 2
/// (`e-round2`: [`ROUND2`]), the rewards of the three tasks in A, B, A' and B' order.
fn one_trial_experiment(conn: &Connection, rewards: [[f64; 3]; 4]) {
    let all = |cond: &'static str, rewards: [f64; 3]| {
        TASKS
            .iter()
            .zip(rewards)
            .map(|(t, r)| (t.0, cond, 1, if r >= 1.0 { Pass } else { Fail }, Some(r)))
            .collect::<Vec<_>>()
    };
    let mut r1 = all("no-skills", rewards[0]);
    r1.extend(all("curated", rewards[1]));
    add_run(conn, "e-round1", &["no-skills", "curated"], 1, &r1);
    let mut r2 = all(ROUND2[0], rewards[2]);
    r2.extend(all(ROUND2[1], rewards[3]));
    add_run(conn, "e-round2", &ROUND2, 1, &r2);
    skillscope::store::learning::find_or_insert_experiment(
        conn,
        "e",
        &serde_json::json!({}),
        "e-round1",
        "e-round2",
    )
    .unwrap();
}

#[test]
fn an_experiment_is_labelled_and_compared_as_the_plan_says() {
    let (_d, conn) = empty_store();
    one_trial_experiment(
        &conn,
        [
            [0.0, 0.0, 1.0],
            [1.0, 0.0, 1.0],
            [1.0, 0.0, 1.0],
            [1.0, 1.0, 1.0],
        ],
    );

    let r = analyze(
        &conn,
        &Selection::Experiment("e".into()),
        &Scoring::default(),
    )
    .unwrap();
    let labels: Vec<&str> = r.conditions.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels, ["A", "B", "A'", "B'"]);
    let names: Vec<(&str, f64)> = r
        .comparisons
        .iter()
        .map(|c| (c.name.as_str(), c.delta_pp.unwrap()))
        .collect();
    let third = 100.0 / 3.0;
    // Round 1's own curated effect first (issue 36): B = A' here, so B − A = A' − A.
    let expect = [
        ("B vs A", third),
        ("A' vs A", third),
        ("B' vs B", third),
        ("A' vs B", 0.0),
        ("B' vs A'", third),
    ];
    assert_eq!(names.len(), expect.len(), "{names:?}");
    for ((n, d), (en, ed)) in names.iter().zip(expect) {
        assert_eq!(*n, en);
        assert!((d - ed).abs() < 1e-9, "{n}: {d} vs {ed}");
    }
    // Wrong output falls from 2 of 3 trials in A to 1 of 3 in A'.
    let shift = r
        .failure_shifts
        .iter()
        .find(|s| s.name == "A → A'" && s.mode == FailureMode::WrongOutput)
        .unwrap();
    assert!(
        (shift.from_rate - 2.0 / 3.0).abs() < 1e-12 && (shift.to_rate - 1.0 / 3.0).abs() < 1e-12
    );
    // Learning efficiency: A' vs A gains on the easy task only; B' vs B on the hard one.
    let eff = |cmp: &str, d: &str| {
        r.efficiency
            .iter()
            .find(|e| e.comparison == cmp && e.difficulty == d)
            .unwrap()
            .delta_pp
    };
    assert_eq!(eff("A' vs A", "easy"), 100.0);
    assert_eq!(eff("A' vs A", "hard"), 0.0);
    assert_eq!(eff("B' vs B", "hard"), 100.0);
    assert!(r.ci_description.contains("bootstrap over tasks"));
    // One trial per task (n = 1): pass@2 is undefined — one trial cannot say how a second,
    // independent one would go — and so is the adaptive gain. pass@2-adaptive itself is defined:
    // A = [0, 0, 1], A' = [1, 0, 1] → per task [1, 0, 1] → 2/3.
    let a = r
        .adaptive
        .iter()
        .find(|a| a.name == "A → A'" && a.scope == "overall")
        .unwrap();
    assert_eq!(
        (a.pass2, a.gain_pp, a.gain_ci_pp),
        (None, None, None),
        "{a:?}"
    );
    assert!(
        a.pass2_undefined
            .as_deref()
            .unwrap()
            .contains("2 or more trials"),
        "{a:?}"
    );
    assert!((a.pass2_adaptive - 2.0 / 3.0).abs() < 1e-12, "{a:?}");
}

/// pass@2-adaptive, round 1's unbiased pass@2 and the adaptive gain by hand, with four trials
/// per task: c = 0, c = n and partial passes in both round pairs.
#[test]
fn pass_at_2_adaptive_and_pass_at_2_by_hand() {
    let (_d, conn) = empty_store();
    // passes[task] of 4 trials → rows (trial k passes when k ≤ passes).
    let rows = |cond: &'static str, passes: [u32; 3]| {
        let mut out = Vec::new();
        for (t, p) in TASKS.iter().zip(passes) {
            for k in 1..=4 {
                let pass = k <= p;
                out.push((
                    t.0,
                    cond,
                    k,
                    if pass { Pass } else { Fail },
                    Some(if pass { 1.0 } else { 0.0 }),
                ));
            }
        }
        out
    };
    let mut r1 = rows("no-skills", [2, 0, 4]);
    r1.extend(rows("curated", [1, 3, 0]));
    add_run(&conn, "p-round1", &["no-skills", "curated"], 4, &r1);
    let mut r2 = rows("skills:/x/a", [1, 2, 0]);
    r2.extend(rows("skills:/x/b", [0, 4, 2]));
    add_run(&conn, "p-round2", &["skills:/x/a", "skills:/x/b"], 4, &r2);
    skillscope::store::learning::find_or_insert_experiment(
        &conn,
        "p",
        &serde_json::json!({}),
        "p-round1",
        "p-round2",
    )
    .unwrap();
    let r = analyze(
        &conn,
        &Selection::Experiment("p".into()),
        &Scoring::default(),
    )
    .unwrap();
    let get = |name: &str, scope: &str, group: &str| {
        r.adaptive
            .iter()
            .find(|a| a.name == name && a.scope == scope && a.group == group)
            .unwrap_or_else(|| panic!("{name} {scope} {group}: {:?}", r.adaptive))
            .clone()
    };
    // A: t1 2 of 4 → pass@2 = 1 − C(2,2)/C(4,2) = 5/6; t2 0 of 4 → 0; t3 4 of 4 → 1.
    // A': p₂ = [1/4, 2/4, 0]; adaptive = [1 − ½·¾, 1 − 1·½, 1 − 0·1] = [5/8, 1/2, 1].
    let a = get("A → A'", "overall", "all");
    let pass2 = (5.0 / 6.0 + 0.0 + 1.0) / 3.0;
    let adaptive = (5.0 / 8.0 + 0.5 + 1.0) / 3.0;
    assert!((a.pass2.unwrap() - pass2).abs() < 1e-12, "{a:?}");
    assert!((a.pass2_adaptive - adaptive).abs() < 1e-12, "{a:?}");
    assert!(
        (a.gain_pp.unwrap() - (adaptive - pass2) * 100.0).abs() < 1e-9,
        "{a:?}"
    );
    assert!((a.pass1_round1 - 0.5).abs() < 1e-12 && (a.pass1_round2 - 0.25).abs() < 1e-12);
    let ci = a.gain_ci_pp.unwrap();
    assert!(
        ci.low <= a.gain_pp.unwrap() && a.gain_pp.unwrap() <= ci.high,
        "{ci:?}"
    );
    // B: t1 1 of 4 → 1 − C(3,2)/C(4,2) = 1/2; t2 3 of 4 → 1; t3 0 → 0.
    // B': p₂ = [0, 1, 1/2]; adaptive = [1 − ¾·1, 1 − ¼·0, 1 − 1·½] = [1/4, 1, 1/2].
    let b = get("B → B'", "overall", "all");
    assert!((b.pass2.unwrap() - 0.5).abs() < 1e-12, "{b:?}");
    assert!((b.pass2_adaptive - 1.75 / 3.0).abs() < 1e-12, "{b:?}");
    // By domain: Finance holds t1 and t2.
    let f = get("A → A'", "domain", "Finance");
    assert_eq!(f.n_tasks, 2);
    assert!((f.pass2.unwrap() - 5.0 / 12.0).abs() < 1e-12, "{f:?}");
    assert!((f.pass2_adaptive - 1.125 / 2.0).abs() < 1e-12, "{f:?}");
    // By difficulty: the hard task t2 alone.
    let h = get("B → B'", "difficulty", "hard");
    // One task: pass@2 is defined, its CI is not (an interval needs 2 tasks).
    assert!((h.pass2.unwrap() - 1.0).abs() < 1e-12 && (h.pass2_adaptive - 1.0).abs() < 1e-12);
    assert_eq!(h.gain_ci_pp, None);
    assert!(h.gain_ci_undefined.is_some());
    // Flaky: A has t1 (2 of 4); A' t1 (1 of 4) and t2 (2 of 4). A' vs A rests on t1 and t2:
    // ((¼ − ½) + (½ − 0)) / 3 = +8.3 pp of its Δ.
    let flaky = |c: &str| r.flaky.iter().filter(|f| f.condition == c).count();
    assert_eq!((flaky("A"), flaky("A'")), (1, 2));
    let c = r.comparisons.iter().find(|c| c.name == "A' vs A").unwrap();
    assert_eq!(c.n_flaky, 2);
    assert!((c.delta_pp_flaky - 25.0 / 3.0).abs() < 1e-9, "{c:?}");
}

#[test]
fn unknown_selections_are_named() {
    let (_d, conn) = empty_store();
    let e = analyze(
        &conn,
        &Selection::Runs(vec!["nope".into()]),
        &Scoring::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("nope"));
    let e = analyze(
        &conn,
        &Selection::Experiment("x".into()),
        &Scoring::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("x"));
}

/// Round 2 of an experiment without a split: every A' trial saw the learned skill `stl-mass`
/// (the exported version's content hash), which LS-A learned from one round-1 trial of one
/// task. That task's trials are "same task", every other task's are not; the report says so per
/// task, and the hypotheses are answered over each side as well as over all tasks.
#[test]
fn learned_skills_are_traced_to_the_tasks_they_were_learned_from() {
    use crate::support::learning_fixture;
    use skillscope::skillsbench::exposure::{ExposedSkill, Origin, SkillExposure};
    use skillscope::store::learning as lq;
    let l = learning_fixture::learning();
    let r2 = learning_fixture::round2(&l.conn);
    let conn = &l.conn;
    let stl = lq::versions(conn, l.a.id)
        .unwrap()
        .into_iter()
        .find(|v| v.name == "stl-mass" && v.origin == "learned")
        .unwrap();
    let source_task = lq::sources(conn, l.a.id).unwrap()[0].task_id.clone();
    for t in skillscope::store::queries::current_trials(conn, r2.id).unwrap() {
        if !t.condition.ends_with("LS-A-v1") || t.status != skillscope::store::TrialStatus::Done {
            continue;
        }
        let mut x = SkillExposure {
            captured_at: "2026-11-21T10:00:00Z".into(),
            agent: "claude-code".into(),
            condition: t.condition.clone(),
            workdir: "/root".into(),
            folders: vec!["/root/.claude/skills".into()],
            skills: vec![ExposedSkill {
                name: "stl-mass".into(),
                dir: "stl-mass".into(),
                path: "/root/.claude/skills/stl-mass".into(),
                paths: vec!["/root/.claude/skills/stl-mass".into()],
                origin: Origin::Learned,
                sha256: stl.content_hash.clone(),
                files: 1,
                bytes: 10,
                enabled: true,
            }],
            builtins: None,
            hash: String::new(),
            error: None,
            used: None,
        };
        x.set_used(Some(&[]), &[]);
        skillscope::store::exposure::record(conn, t.id, &x).unwrap();
    }
    let r = analyze(
        conn,
        &Selection::Experiment("demo".into()),
        &Scoring::default(),
    )
    .unwrap();
    let x = &r.exposure;
    let a2 = x.conditions.iter().find(|c| c.label == "A'").unwrap();
    assert!(
        a2.with_learned > 0 && a2.same_task > 0 && a2.same_task < a2.with_learned,
        "{a2:#?}"
    );
    // Nobody used the skill: every known trial counts, the share is 0 and the comparisons say so.
    assert_eq!((a2.used, a2.used_share), (0, Some(0.0)));
    assert!(
        x.notes_of("A' vs A")
            .iter()
            .any(|n| n.starts_with("only 0 of ")),
        "{:?}",
        x.comparisons
    );
    for p in x.provenance.iter().filter(|p| p.condition == "A'") {
        assert_eq!(p.same_task > 0, p.task == source_task, "{p:?}");
        assert!(p.same_task <= p.with_learned && p.with_learned <= p.trials);
    }
    let split = x.split.as_ref().expect("tasks on both sides");
    assert_eq!(split.same_task, vec![source_task.clone()]);
    assert!(!split.same_as_split);
    assert_eq!(split.same_task.len() + split.held_out.len(), r.tasks.len());
    let scopes: std::collections::BTreeSet<&str> =
        r.hypotheses.iter().map(|h| h.scope.as_str()).collect();
    assert_eq!(
        scopes,
        [
            "all tasks",
            "learned from the task",
            "not learned from the task"
        ]
        .into_iter()
        .collect()
    );
}

/// "Δ, judged trials only" is paired (issue 36): over the matched tasks judged on both sides,
/// never the difference of two rates over different task sets. Here curated has a verdict on
/// t1, t2 and t3, no-skills on t1 and t2 only (its t3 trial ended without one).
#[test]
fn the_judged_delta_is_paired_over_tasks_judged_on_both_sides() {
    let (_s, conn) = empty_store();
    add_run(
        &conn,
        "judged",
        &["no-skills", "curated"],
        1,
        &[
            ("t1", "no-skills", 1, Fail, Some(0.0)),
            ("t2", "no-skills", 1, Pass, Some(1.0)),
            ("t3", "no-skills", 1, BuildError, None),
            ("t1", "curated", 1, Pass, Some(1.0)),
            ("t2", "curated", 1, Pass, Some(1.0)),
            ("t3", "curated", 1, Fail, Some(0.0)),
        ],
    );
    let r = analyze(
        &conn,
        &Selection::Runs(vec!["judged".into()]),
        &Scoring::default(),
    )
    .unwrap();
    let c = &r.comparisons[0];
    // Paired over t1 and t2: curated (1 + 1)/2 − no-skills (0 + 1)/2 = +50 pp. Unpaired, curated
    // over t1–t3 (2/3) less no-skills over t1–t2 (1/2) would give +16.7.
    assert!((c.delta_pp_judged.unwrap() - 50.0).abs() < 1e-9, "{c:?}");
}

/// The Δ an experiment's summary shows for a condition is the Δ `status` shows for it in its own
/// round's run (issue 48: round 2's `status` showed B′ at "Δ +40.0" while the experiment summary
/// showed "—"): against A in round 1 and A' in round 2; A' itself, round 2's baseline, has none.
/// Δs across rounds are the comparisons' (B' vs B here differs from B' vs A').
#[test]
fn an_experiment_row_shows_the_delta_status_shows_for_its_round() {
    use skillscope::report::model::{self, View};
    let (scratch, conn) = empty_store();
    // B' vs A' (+66.7) differs from B' vs B (+33.3).
    one_trial_experiment(
        &conn,
        [
            [0.0, 0.0, 1.0],
            [1.0, 0.0, 1.0],
            [1.0, 0.0, 0.0],
            [1.0, 1.0, 1.0],
        ],
    );
    // Δ of each row of the conditions table as the terminal shows it, by label.
    let deltas = |sel: Selection| -> Vec<(String, String)> {
        let r = analyze(&conn, &sel, &Scoring::default()).unwrap();
        let t = model::conditions::table(&r);
        let d = t.columns.iter().position(|c| c.key == "delta_pp").unwrap();
        assert!(t.shown(View::Terminal).contains(&d));
        t.rows
            .iter()
            .map(|row| {
                (
                    row.cells[0].value.human(true),
                    row.cells[d].value.human(true),
                )
            })
            .collect()
    };
    let experiment = deltas(Selection::Experiment("e".into()));
    let of = |rows: &[(String, String)], label: &str| {
        rows.iter()
            .find(|(l, _)| l == label)
            .unwrap_or_else(|| panic!("no {label} in {rows:?}"))
            .1
            .clone()
    };
    let round1 = deltas(Selection::Runs(vec!["e-round1".into()]));
    let round2 = deltas(Selection::Runs(vec!["e-round2".into()]));
    assert_eq!(of(&experiment, "B"), of(&round1, "curated"));
    assert_eq!(of(&experiment, "B"), "+33.3");
    // A round's run labels a condition by its skills folder's name.
    assert_eq!(of(&experiment, "B'"), of(&round2, "skills:ls-b-v1"));
    assert_eq!(of(&experiment, "B'"), "+66.7");
    assert_eq!(of(&experiment, "A"), "—");
    assert_eq!(of(&experiment, "A'"), "—");

    // `status` of round 2, the binary as an operator runs it, shows that same Δ for B'.
    let out = crate::support::process::Skillscope::new(["status", "e-round2"])
        .scratch(&scratch)
        .output();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let row = text
        .lines()
        .find(|l| l.contains("ls-b-v1") && l.contains('%'))
        .unwrap_or_else(|| panic!("no B' row in {text}"));
    assert!(row.contains("+66.7"), "{row}");
}
