//! The command line's tables at 80 and 120 columns — conditions, comparisons, pass@2-adaptive,
//! `tasks` and the health check: headers wrapped at word boundaries or shortened (the
//! abbreviations listed under the table), never split inside a word, a table too wide for its
//! words split into tables that fit, and no line wider than the terminal.

use std::collections::BTreeMap;

use skillscope::analysis::health_check::{Cause, Reason, TaskReadiness};
use skillscope::analysis::metrics::ConditionSummary;
use skillscope::analysis::results::Adaptive;
use skillscope::commands::shared::table::{
    adaptive_table_in, comparisons_table_in, conditions_table_in,
};
use skillscope::commands::tasks::{readiness_table, tasks_table};
use skillscope::skillsbench::{Catalog, TaskSet};

fn summary(cond: &str, rate: f64, outcomes: &[(&str, usize)], done: usize) -> ConditionSummary {
    ConditionSummary {
        condition: cond.into(),
        pass_rate: rate,
        n_tasks: 12,
        n_planned: 60,
        outcomes: outcomes
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect::<BTreeMap<_, _>>(),
        queued: 60 - done,
        running: 0,
        done,
        partial: 2,
        pass_rate_judged: Some(rate * 60.0 / done.max(1) as f64),
        per_task: (0..12).map(|i| (format!("task-{i}"), rate)).collect(),
        timeout_passed: 0,
    }
}

/// A run mid-way with every kind of outcome column: cancelled, timeouts, errors, partial credit
/// and the judged rate.
fn busy_run() -> Vec<ConditionSummary> {
    vec![
        summary(
            "no-skills",
            0.35,
            &[
                ("pass", 20),
                ("fail", 9),
                ("agent-timeout", 2),
                ("build-error", 1),
                ("cancelled", 1),
            ],
            33,
        ),
        summary(
            "curated",
            0.45,
            &[("pass", 27), ("fail", 4), ("provider-error", 1)],
            32,
        ),
        summary("self-generated", 0.4, &[("pass", 24), ("fail", 5)], 29),
    ]
}

/// What an operator saw at 80 columns: two conditions mid-run with cancelled trials and a timeout.
fn cancelled_run() -> Vec<ConditionSummary> {
    let mut v = busy_run();
    v.truncate(2);
    v[0].outcomes.remove("build-error");
    v[1].outcomes.remove("provider-error");
    for s in &mut v {
        s.partial = 0;
    }
    v
}

/// Every line of `text` — the tables' and the abbreviations' — at most `width` characters.
fn assert_fits(text: &str, width: u16) {
    for line in text.lines() {
        assert!(
            line.chars().count() <= width as usize,
            "{width}: {line:?} is wider\n{text}"
        );
    }
}

/// The words of the table part of `text` (above the abbreviations), split at spaces and borders.
fn words(text: &str) -> Vec<String> {
    text.lines()
        .take_while(|l| !l.starts_with("abbreviations"))
        .flat_map(|l| {
            l.split(|c: char| c.is_whitespace() || "│┆┌┐└┘─┬┴╞╪╡═".contains(c))
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Every header and condition name of `text` whole (its full or its short form), and every short
/// form explained under the table.
fn assert_words_whole(text: &str, width: u16) {
    let words = words(text);
    for word in ["no-skills", "curated", "pass", "fail", "judged", "rate"] {
        assert!(
            words.iter().any(|w| w == word),
            "{width}: {word} split:\n{text}"
        );
    }
    for (full, brief) in [
        ("condition", "cond"),
        ("cancelled", "canc"),
        ("agent-timeout", "a-tmo"),
        ("tasks", "n"),
    ] {
        assert!(
            words.iter().any(|w| w == full || w == brief),
            "{width}: neither {full} nor {brief} whole:\n{text}"
        );
        if !words.iter().any(|w| w == full) {
            assert!(
                text.contains(&format!("{brief} = {full}")),
                "{width}: {brief} is not explained under the table:\n{text}"
            );
        }
    }
}

#[test]
fn condition_tables_fit_80_and_120_columns_without_splitting_a_word() {
    for width in [80u16, 120] {
        let text = conditions_table_in(&cancelled_run(), Some(width)).to_string();
        insta::assert_snapshot!(format!("conditions_table_cancelled_{width}"), text);
        assert_fits(&text, width);
        assert_words_whole(&text, width);
        // Every outcome column there is: too wide for 80 columns even with short headers and
        // one space between columns, the table is split in two, each beginning with the
        // condition, rather than wider than the terminal or cut inside a word.
        let text = conditions_table_in(&busy_run(), Some(width)).to_string();
        insta::assert_snapshot!(format!("conditions_table_busy_{width}"), text);
        assert_fits(&text, width);
        assert_words_whole(&text, width);
        let tables = text.lines().filter(|l| l.starts_with('┌')).count();
        assert_eq!(tables, if width == 80 { 2 } else { 1 }, "{text}");
        for condition in ["no-skills", "curated", "self-generated"] {
            let rows = words(&text).iter().filter(|w| *w == condition).count();
            assert_eq!(rows, tables, "{condition} begins every row:\n{text}");
        }
    }
    // At 120 columns the usual table needs no abbreviation.
    let wide = conditions_table_in(&cancelled_run(), Some(120)).to_string();
    assert!(!wide.contains("abbreviations"), "{wide}");
}

/// Round 2's comparisons and pass@2-adaptive as the experiment prints them at its end.
#[test]
fn comparison_and_adaptive_tables_fit_80_and_120_columns() {
    let comparisons = [
        ("A' vs A", "A'", "A"),
        ("B' vs B", "B'", "B"),
        ("A' vs B", "A'", "B"),
        ("B' vs A'", "B'", "A'"),
    ];
    let runs: Vec<(&str, ConditionSummary)> = [("A", 0.35), ("B", 0.45), ("A'", 0.4), ("B'", 0.5)]
        .into_iter()
        .map(|(label, rate)| (label, summary(label, rate, &[("pass", 20)], 60)))
        .collect();
    let conditions: Vec<(&str, &ConditionSummary)> = runs.iter().map(|(l, s)| (*l, s)).collect();
    let row = |scope: &str, group: &str, n: usize| Adaptive {
        name: "A → A'".into(),
        scope: scope.into(),
        group: group.into(),
        n_tasks: n,
        pass1_round1: 0.35,
        pass1_round2: 0.4,
        pass2_adaptive: 0.52,
        pass2: Some(0.47),
        pass2_undefined: None,
        gain_pp: Some(5.0),
        gain_ci_pp: Some(skillscope::analysis::ci::Ci {
            low: -2.5,
            high: 12.5,
            low_mc: [-2.6, -2.4],
            high_mc: [12.4, 12.6],
            resamples: 10_000,
            seed: 7,
        }),
        gain_ci_undefined: None,
    };
    let adaptive = [
        row("overall", "all", 12),
        row("domain", "Office & White Collar", 3),
        row("difficulty", "medium", 5),
    ];
    for width in [80u16, 120] {
        let text = comparisons_table_in(&comparisons, &conditions, Some(width)).to_string();
        insta::assert_snapshot!(format!("comparisons_table_{width}"), text);
        assert_fits(&text, width);
        let w = words(&text);
        for word in ["comparison", "B' vs A'", "+10.0", "+0.167"] {
            let word = word.split(' ').next().unwrap();
            assert!(w.iter().any(|x| x == word), "{width}: {word}:\n{text}");
        }
        let text = adaptive_table_in(&adaptive, Some(width)).to_string();
        insta::assert_snapshot!(format!("adaptive_table_{width}"), text);
        assert_fits(&text, width);
        let w = words(&text);
        for word in ["rounds", "Office", "Collar", "[-2.5,", "+12.5]"] {
            assert!(w.iter().any(|x| x == word), "{width}: {word}:\n{text}");
        }
        for (full, short) in [("pass@2-adaptive", "p@2-adapt"), ("tasks", "n")] {
            assert!(
                w.iter().any(|x| x == full) || text.contains(&format!("{short} = {full}")),
                "{width}: {full} neither whole nor explained:\n{text}"
            );
        }
    }
}

/// `skillscope tasks` on the fixtures, three of them invalid: at 80 columns the problems (long
/// messages with paths) go to a table of their own beside each task that has one, every word of
/// a message whole except a path longer than the room; at 120 the table is one.
#[test]
fn the_tasks_table_fits_80_and_120_columns_and_shows_every_problem_whole() {
    let set = TaskSet::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tasks"),
        &Catalog::shipped(),
        &[],
    )
    .unwrap();
    for width in [80u16, 120] {
        let text = tasks_table(&set, Some(width)).to_string();
        assert_fits(&text, width);
        let w = words(&text);
        for word in [
            "difficulty",
            "verifier",
            "problems",
            "huge-timeout",
            "unicodé-tâsk",
            "1e308",
            "\"soon\"",
            "(line",
            "13,",
        ] {
            assert!(w.iter().any(|x| x == word), "{width}: {word}:\n{text}");
        }
        let tables = text.lines().filter(|l| l.starts_with('┌')).count();
        assert_eq!(tables, if width == 80 { 2 } else { 1 }, "{text}");
        if width == 80 {
            // The problems' table lists only the tasks that have problems.
            let second = text.split('┌').nth(2).unwrap();
            assert!(
                second.contains("huge-timeout") && !second.contains("passes"),
                "{text}"
            );
        }
    }
    // Into a pipe (no width): one table, one line a task, nothing wrapped.
    let piped = tasks_table(&set, None).to_string();
    assert_eq!(piped.lines().count(), set.tasks.len() + 4, "{piped}");
}

/// The health check's table (`tasks --check`) with three conditions and long reasons.
#[test]
fn the_health_check_table_fits_80_and_120_columns() {
    let conditions: Vec<String> = ["no-skills", "curated", "self-generated"]
        .map(String::from)
        .to_vec();
    let cause = |reason: Reason, evidence: &str| Cause {
        reason,
        evidence: Some(evidence.into()),
        line: None,
    };
    let task = |name: &str, reward: Option<f64>, reason: Option<Cause>| TaskReadiness {
        task: name.into(),
        builds: if reason.is_some() { "no" } else { "yes" }.into(),
        rewards: conditions.iter().map(|c| (c.clone(), reward)).collect(),
        outcomes: conditions
            .iter()
            .map(|c| (c.clone(), "build-error".to_string()))
            .collect(),
        seconds: 41.0,
        build_seconds: conditions.iter().map(|c| (c.clone(), 12.0)).collect(),
        clamped: None,
        reasons: BTreeMap::new(),
        reason,
        differ: None,
    };
    let rows = [
        task("3d-scan-calc", Some(1.0), None),
        task(
            "azure-bgp-oscillation-route-leak",
            None,
            Some(cause(
                Reason::MissingDataFile(
                    "data/topology/bgp_routes_2024_q3.json (COPY data/ /root/data/)".into(),
                ),
                "environment/Dockerfile:14",
            )),
        ),
        task(
            "huge-timeout",
            None,
            Some(cause(
                Reason::TaskInvalid(format!(
                    "invalid task.toml /srv/skillsbench/tasks/huge-timeout/task.toml: {}",
                    "[verifier] timeout_sec: must be a number of seconds above 0 and at most 604800 (7 days), found 1e308 (line 13, column 15)"
                )),
                "task.toml:13",
            )),
        ),
    ];
    for width in [80u16, 120] {
        let text = readiness_table(&conditions, &rows, Some(width)).to_string();
        insta::assert_snapshot!(format!("health_check_table_{width}"), text);
        assert_fits(&text, width);
        let w = words(&text);
        for word in [
            "azure-bgp-oscillation-route-leak",
            "self-generated",
            "builds?",
            "1e308",
            "column",
            "(environment/Dockerfile:14)",
        ] {
            assert!(w.iter().any(|x| x == word), "{width}: {word}:\n{text}");
        }
    }
}
