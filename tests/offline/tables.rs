//! The command line's tables at 80 and 120 columns: headers shortened (the abbreviations listed
//! under the table) or wrapped at word boundaries, never split inside a word, and no line wider
//! than the terminal.

use std::collections::BTreeMap;

use skillscope::analysis::metrics::ConditionSummary;
use skillscope::commands::shared::table::conditions_table_in;

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
        for line in text.lines().filter(|l| !l.starts_with("abbreviations")) {
            assert!(
                line.chars().count() <= width as usize,
                "{width}: {line:?}\n{text}"
            );
        }
        assert_words_whole(&text, width);
        // Every outcome column there is, and nothing worse: a table too wide for its words is
        // wider than the terminal rather than cut inside a word.
        let text = conditions_table_in(&busy_run(), Some(width)).to_string();
        insta::assert_snapshot!(format!("conditions_table_busy_{width}"), text);
        assert_words_whole(&text, width);
        assert!(words(&text).iter().any(|w| w == "self-generated"), "{text}");
    }
    // At 120 columns the usual table needs no abbreviation.
    let wide = conditions_table_in(&cancelled_run(), Some(120)).to_string();
    assert!(!wide.contains("abbreviations"), "{wide}");
}
