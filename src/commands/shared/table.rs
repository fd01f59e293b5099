//! Terminal tables: per-condition outcomes and Method D pass rates.
//!
//! On a terminal the tables fit its width the way cargo's and comfy-table's do: headers that do
//! not fit are first shortened (`cancelled` → `canc`, the abbreviations listed under the table),
//! then wrapped by comfy-table's dynamic content arrangement — at word boundaries only: no column
//! is made narrower than its longest word, so `condition` never reads `conditio`/`n`.

use comfy_table::{
    Cell, CellAlignment, ColumnConstraint, ContentArrangement, Table, Width,
    presets::UTF8_FULL_CONDENSED,
};

/// A table fitted to a width, with the abbreviations its headers took to fit; `Display` prints
/// the table and, when there are any, a line `abbreviations: canc = cancelled · …` under it.
pub struct Fitted {
    /// The table.
    pub table: Table,
    /// `short = full` for each shortened header.
    pub abbreviations: Vec<String>,
}

impl std::fmt::Display for Fitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.table)?;
        if !self.abbreviations.is_empty() {
            write!(f, "\nabbreviations: {}", self.abbreviations.join(" · "))?;
        }
        Ok(())
    }
}

/// The widest line of `t` laid out without any width limit.
fn natural_width(t: &Table) -> usize {
    let mut t = t.clone();
    t.set_content_arrangement(ContentArrangement::Disabled);
    t.to_string()
        .lines()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
}

/// Fits `t` (its rows added, no header yet) to `width` columns (`None`: no limit, as when
/// printing into a pipe): `headers` are (full, short) pairs; the short ones are used when the
/// full ones make the table wider than `width` (and then, if still too wide, one space between
/// columns instead of two); then comfy-table wraps cells at word boundaries, each column at least
/// as wide as its longest word — a table whose words cannot fit is wider than `width` rather than
/// cut inside a word.
pub fn fit_table(mut t: Table, headers: &[(String, Option<&str>)], width: Option<u16>) -> Fitted {
    t.set_header(headers.iter().map(|(full, _)| full.clone()));
    let mut abbreviations = Vec::new();
    if let Some(w) = width
        && natural_width(&t) > w as usize
    {
        t.set_header(headers.iter().map(|(full, short)| match short {
            Some(s) if *s != full => {
                abbreviations.push(format!("{s} = {full}"));
                s.to_string()
            }
            _ => full.clone(),
        }));
        // Still too wide: one space between columns instead of two.
        if natural_width(&t) > w as usize {
            for c in t.column_iter_mut() {
                c.set_padding((1, 0));
            }
        }
    }
    t.set_content_arrangement(ContentArrangement::Dynamic);
    if let Some(w) = width {
        t.set_width(w);
    }
    let longest_word = |text: &str| {
        text.split_whitespace()
            .map(|w| w.chars().count())
            .max()
            .unwrap_or(0)
    };
    let n = t.column_count();
    let mut least = vec![0usize; n];
    for row in t.header().into_iter().chain(t.row_iter()) {
        for (i, cell) in row.cell_iter().enumerate().take(n) {
            least[i] = least[i].max(longest_word(&cell.content()));
        }
    }
    for (i, w) in least.into_iter().enumerate() {
        if let Some(c) = t.column_mut(i) {
            // comfy-table counts a lower boundary with the column's padding (one space a side).
            let w = w + c.padding_width() as usize;
            c.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(
                w.min(u16::MAX as usize) as u16,
            )));
        }
    }
    Fitted {
        table: t,
        abbreviations,
    }
}

/// The width tables are fitted to: the terminal's when standard output is one, else none.
pub fn terminal_width() -> Option<u16> {
    Table::new().width()
}

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

use crate::analysis::metrics::{ConditionSummary, Paired, paired};
use crate::skillsbench::condition::condition_label;
use crate::store::Outcome;

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

/// [`conditions_table`] fitted to `width` columns (see [`fit_table`]).
pub fn conditions_table_in(summaries: &[ConditionSummary], width: Option<u16>) -> Fitted {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
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
    let mut header: Vec<(String, Option<&str>)> = vec![
        ("condition".into(), Some("cond")),
        ("tasks".into(), Some("n")),
        ("done".into(), None),
    ];
    for o in &columns {
        header.push((o.as_str().to_string(), Some(short_outcome(*o))));
        if *o == Outcome::Fail && partial {
            header.push(("partial".into(), Some("part")));
        }
        if *o == Outcome::AgentTimeout && timeout_passed {
            header.push(("t/o+reward".into(), Some("t/o+r")));
        }
    }
    header.push(("pass rate".into(), None));
    if unfinished {
        header.push(("judged".into(), None));
    }
    header.extend([("Δ pp".into(), None), ("g".into(), None)]);
    let base = summaries.first();
    for (i, s) in summaries.iter().enumerate() {
        let mut row = vec![
            Cell::new(condition_label(&s.condition)),
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
        t.add_row(row);
    }
    fit_table(t, &header, width)
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
) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_content_arrangement(ContentArrangement::Dynamic);
    t.set_header(vec!["comparison", "tasks", "with", "without", "Δ pp", "g"]);
    let of = |l: &str| conditions.iter().find(|(k, _)| *k == l).map(|(_, s)| *s);
    for (name, with, without) in comparisons {
        let (Some(w), Some(wo)) = (of(with), of(without)) else {
            continue;
        };
        let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
        let Some(p) = paired(&w.per_task, &wo.per_task) else {
            t.add_row(vec![
                Cell::new(name),
                right("0".into()),
                right("—".into()),
                right("—".into()),
                right("— (no task both ran)".into()),
                right("—".into()),
            ]);
            continue;
        };
        t.add_row(vec![
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
    t
}

/// pass@2-adaptive per round pair (`analysis::pass_at_k`): round 1's and round 2's pass@1,
/// pass@2-adaptive, round 1's independent pass@2, the adaptive gain (pp) and its 95% CI —
/// overall rows, then one per domain and difficulty; `—` where pass@2 is undefined (a task with
/// fewer than 2 trials).
pub fn adaptive_table(rows: &[crate::analysis::results::Adaptive]) -> Fitted {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    let header: Vec<(String, Option<&str>)> = [
        ("rounds", None),
        ("group", None),
        ("tasks", None),
        ("pass@1 r1", Some("p@1 r1")),
        ("pass@1 r2", Some("p@1 r2")),
        ("pass@2-adaptive", Some("p@2-adapt")),
        ("pass@2", None),
        ("gain pp", None),
        ("95% CI", None),
    ]
    .into_iter()
    .map(|(full, short)| (full.to_string(), short))
    .collect();
    let pct = |p: f64| format!("{:.1}%", p * 100.0);
    for a in rows {
        let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
        t.add_row(vec![
            Cell::new(crate::text::sanitize(&a.name)),
            Cell::new(if a.scope == "overall" {
                "all".to_string()
            } else {
                format!("{}: {}", a.scope, crate::text::sanitize(&a.group))
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
    fit_table(t, &header, terminal_width())
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
