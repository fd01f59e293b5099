//! Terminal tables: per-condition outcomes and Method D pass rates, the experiment's
//! comparisons and pass@2-adaptive — fitted to the terminal as every table of the command line
//! is ([`crate::console::table`]).

use comfy_table::{Cell, CellAlignment};

use crate::analysis::metrics::{ConditionSummary, Paired, paired};
use crate::console::table::fit;
pub use crate::console::table::{Column, Fitted, terminal_width};
use crate::domain::Outcome;
use crate::skillsbench::condition::condition_label;

/// A short header for an outcome column (`canc` for `cancelled`).
fn short_outcome(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass => "pass",
        Outcome::Fail => "fail",
        Outcome::AgentTimeout => "a-tmo",
        Outcome::VerifierTimeout => "v-tmo",
        Outcome::BuildError => "b-err",
        Outcome::RuntimeError => "r-err",
        Outcome::NoReward => "no-rwd",
        Outcome::ProviderError => "p-err",
        Outcome::Cancelled => "canc",
        Outcome::Interrupted => "intr",
    }
}

/// One row per condition: done/planned, counts by outcome, Method D pass rate, and Δ (pp) and
/// normalized gain g against the first condition over the tasks both planned (an imported
/// condition may have run other tasks: those are left out, never counted 0). Outcome columns
/// other than pass and fail are shown only when some condition has such trials, so the usual table
/// fits 80 columns; so are `partial` (fails with a reward between 0 and 1), `t/o+reward` (agent
/// timeouts whose verifier still gave full marks) and, while a condition is unfinished, `judged`
/// (the pass rate over judged trials). [`condition_notes`] explains them.
pub fn conditions_table(summaries: &[ConditionSummary]) -> Fitted {
    conditions_table_in(summaries, terminal_width())
}

/// [`conditions_table`] fitted to `width` columns (see [`crate::console::table`]).
pub fn conditions_table_in(summaries: &[ConditionSummary], width: Option<u16>) -> Fitted {
    // An interrupted attempt is always superseded by its re-queued successor: never a column.
    let columns: Vec<Outcome> = Outcome::ALL
        .into_iter()
        .filter(|o| *o != Outcome::Interrupted)
        .filter(|o| {
            matches!(o, Outcome::Pass | Outcome::Fail)
                || summaries
                    .iter()
                    .any(|s| s.outcomes.get(o.as_str()).is_some_and(|n| *n > 0))
        })
        .collect();
    let partial = summaries.iter().any(|s| s.partial > 0);
    let timeout_passed = summaries.iter().any(|s| s.timeout_passed > 0);
    let unfinished = summaries.iter().any(|s| s.done < s.n_planned);
    let mut header = vec![
        Column::new("condition").short("cond"),
        Column::new("tasks").short("n"),
        Column::new("done"),
    ];
    for o in &columns {
        header.push(Column::new(o.as_str()).short(short_outcome(*o)));
        if *o == Outcome::Fail && partial {
            header.push(Column::new("partial").short("part"));
        }
        if *o == Outcome::AgentTimeout && timeout_passed {
            header.push(Column::new("t/o+reward").short("t/o+r"));
        }
    }
    header.push(Column::new("pass rate"));
    if unfinished {
        header.push(Column::new("judged"));
    }
    header.extend([Column::new("Δ pp"), Column::new("g")]);
    let mut rows = Vec::new();
    let base = summaries.first();
    for (i, s) in summaries.iter().enumerate() {
        let mut row = vec![
            Cell::new(crate::sanitize::one_line(&condition_label(&s.condition))),
            Cell::new(s.n_tasks).set_alignment(CellAlignment::Right),
            Cell::new(format!("{}/{}", s.done, s.n_planned)).set_alignment(CellAlignment::Right),
        ];
        for &o in &columns {
            let n = s.outcomes.get(o.as_str()).copied().unwrap_or(0);
            row.push(Cell::new(n).set_alignment(CellAlignment::Right));
            if o == Outcome::Fail && partial {
                row.push(Cell::new(s.partial).set_alignment(CellAlignment::Right));
            }
            if o == Outcome::AgentTimeout && timeout_passed {
                row.push(Cell::new(s.timeout_passed).set_alignment(CellAlignment::Right));
            }
        }
        row.push(
            Cell::new(format!("{:.1}%", s.pass_rate * 100.0)).set_alignment(CellAlignment::Right),
        );
        if unfinished {
            row.push(
                Cell::new(
                    s.pass_rate_judged
                        .map_or_else(|| "—".into(), |p| format!("{:.1}%", p * 100.0)),
                )
                .set_alignment(CellAlignment::Right),
            );
        }
        let (d, g) = match (i, base.and_then(|b| paired(&s.per_task, &b.per_task))) {
            (0, _) | (_, None) => ("—".to_string(), "—".to_string()),
            (
                _,
                Some(Paired {
                    delta_pp: d,
                    g,
                    n_tasks: n,
                    ..
                }),
            ) => {
                // Over fewer tasks than either condition ran: say over how many.
                let of = if n < s.n_tasks || base.is_some_and(|b| n < b.n_tasks) {
                    format!(" ({n} task{})", if n == 1 { "" } else { "s" })
                } else {
                    String::new()
                };
                (
                    format!("{d:+.1}{of}"),
                    g.map(|g| format!("{g:+.3}")).unwrap_or_else(|| "—".into()),
                )
            }
        };
        row.push(Cell::new(d).set_alignment(CellAlignment::Right));
        row.push(Cell::new(g).set_alignment(CellAlignment::Right));
        rows.push(row);
    }
    fit(&header, rows, width)
}

/// The sentences that explain [`conditions_table`]'s optional columns, when they are shown.
pub fn condition_notes(summaries: &[ConditionSummary]) -> Vec<String> {
    let mut notes = Vec::new();
    if summaries.iter().any(|s| s.partial > 0) {
        notes.push(
            "partial = failed trials with a reward between 0 and 1 (partial credit); Method D \
             averages rewards, so they count fractionally: the pass rate can be above 0 with pass 0"
                .to_string(),
        );
    }
    if summaries.iter().any(|s| s.timeout_passed > 0) {
        notes.push(
            "t/o+reward = agent timeouts whose verifier still gave full marks: they succeeded, \
             and Method D counts them 1"
                .to_string(),
        );
    }
    if summaries.iter().any(|s| s.done < s.n_planned) {
        notes.push(
            "judged = pass rate over judged trials only (pass, fail, timeouts), while the run is \
             unfinished; Method D (pass rate) counts every trial without a verdict 0"
                .to_string(),
        );
    }
    notes
}

/// The experiment's comparisons: one row per `(name, with, without)` whose two conditions have
/// results — both Method D pass rates, Δ in percentage points and normalized gain g
/// (`analysis::metrics`), all over the tasks both conditions planned, and how many that is.
pub fn comparisons_table(
    comparisons: &[(&str, &str, &str)],
    conditions: &[(&str, &ConditionSummary)],
) -> Fitted {
    comparisons_table_in(comparisons, conditions, terminal_width())
}

/// [`comparisons_table`] fitted to `width` columns.
pub fn comparisons_table_in(
    comparisons: &[(&str, &str, &str)],
    conditions: &[(&str, &ConditionSummary)],
    width: Option<u16>,
) -> Fitted {
    let header = [
        Column::new("comparison").short("cmp"),
        Column::new("tasks").short("n"),
        Column::new("with"),
        Column::new("without").short("w/o"),
        Column::new("Δ pp"),
        Column::new("g"),
    ];
    let mut rows = Vec::new();
    let of = |l: &str| conditions.iter().find(|(k, _)| *k == l).map(|(_, s)| *s);
    for (name, with, without) in comparisons {
        let (Some(w), Some(wo)) = (of(with), of(without)) else {
            continue;
        };
        let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
        let Some(p) = paired(&w.per_task, &wo.per_task) else {
            rows.push(vec![
                Cell::new(name),
                right("0".into()),
                right("—".into()),
                right("—".into()),
                right("— (no task both ran)".into()),
                right("—".into()),
            ]);
            continue;
        };
        rows.push(vec![
            Cell::new(name),
            right(p.n_tasks.to_string()),
            right(format!("{:.1}%", p.with * 100.0)),
            right(format!("{:.1}%", p.without * 100.0)),
            right(format!("{:+.1}", p.delta_pp)),
            right(
                p.g.map(|g| format!("{g:+.3}"))
                    .unwrap_or_else(|| "—".into()),
            ),
        ]);
    }
    fit(&header, rows, width)
}

/// pass@2-adaptive per round pair (`analysis::pass_at_k`): round 1's and round 2's pass@1,
/// pass@2-adaptive, round 1's independent pass@2, the adaptive gain (pp) and its 95% CI —
/// overall rows, then one per domain and difficulty; `—` where pass@2 is undefined (a task with
/// fewer than 2 trials).
pub fn adaptive_table(rows: &[crate::analysis::results::Adaptive]) -> Fitted {
    adaptive_table_in(rows, terminal_width())
}

/// [`adaptive_table`] fitted to `width` columns.
pub fn adaptive_table_in(
    rows: &[crate::analysis::results::Adaptive],
    width: Option<u16>,
) -> Fitted {
    let header = [
        Column::new("rounds"),
        Column::new("group"),
        Column::new("tasks").short("n"),
        Column::new("pass@1 r1").short("p@1 r1"),
        Column::new("pass@1 r2").short("p@1 r2"),
        Column::new("pass@2-adaptive").short("p@2-adapt"),
        Column::new("pass@2").short("p@2"),
        Column::new("gain pp").short("gain"),
        Column::new("95% CI"),
    ];
    let pct = |p: f64| format!("{:.1}%", p * 100.0);
    let mut cells = Vec::new();
    for a in rows {
        let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
        cells.push(vec![
            Cell::new(crate::sanitize::text(&a.name)),
            Cell::new(if a.scope == "overall" {
                "all".to_string()
            } else {
                format!("{}: {}", a.scope, crate::sanitize::text(&a.group))
            }),
            right(a.n_tasks.to_string()),
            right(pct(a.pass1_round1)),
            right(pct(a.pass1_round2)),
            right(pct(a.pass2_adaptive)),
            right(a.pass2.map_or_else(|| "—".into(), pct)),
            right(a.gain_pp.map_or_else(|| "—".into(), |g| format!("{g:+.1}"))),
            right(a.gain_ci_pp.map_or_else(
                || "—".into(),
                |c| format!("[{:+.1}, {:+.1}]", c.low, c.high),
            )),
        ]);
    }
    fit(&header, cells, width)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn summary(cond: &str, rate: f64, outcomes: &[(&str, usize)]) -> ConditionSummary {
        ConditionSummary {
            condition: cond.into(),
            pass_rate: rate,
            n_tasks: 5,
            n_planned: 10,
            outcomes: outcomes
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect::<BTreeMap<_, _>>(),
            queued: 0,
            running: 0,
            done: 10,
            partial: 0,
            pass_rate_judged: Some(rate),
            per_task: (1..=5).map(|i| (format!("t{i}"), rate)).collect(),
            timeout_passed: 0,
        }
    }

    #[test]
    fn only_outcomes_that_occur_get_a_column_and_delta_is_against_the_first() {
        let t = conditions_table(&[
            summary("no-skills", 0.6, &[("pass", 6), ("fail", 4)]),
            summary("curated", 1.0, &[("pass", 9), ("agent-timeout", 1)]),
        ])
        .to_string();
        assert!(t.contains("agent-timeout"), "{t}");
        assert!(!t.contains("build-error"), "{t}");
        assert!(t.contains("+40.0") && t.contains("+1.000"), "{t}");
        assert!(t.lines().all(|l| l.chars().count() <= 100), "{t}");
    }
}
