//! Terminal tables: the tables of the results model ([`crate::report::model`]) as the terminal
//! shows them — per condition (pass rate with its CI, tasks, trials done of planned, successes,
//! the failure modes that occurred, Δ and g against the baseline), the comparisons and
//! pass@2-adaptive — fitted to the terminal as every table of the command line is
//! ([`crate::console::table`]). The numbers and their formats are the report's.

use comfy_table::{Cell, CellAlignment};

use crate::analysis::results::{Results, Scoring, Selection};
use crate::console::table::fit;
pub use crate::console::table::{Column, Fitted, terminal_width};
use crate::report::model::{self, Table, View};

/// The results of run `name` (every condition, default scoring), as `report` computes them.
///
/// # Errors
/// An unknown run; SQL errors.
pub fn run_results(
    conn: &rusqlite::Connection,
    name: &str,
) -> Result<Results, crate::store::StoreError> {
    crate::analysis::results::analyze(
        conn,
        &Selection::Runs(vec![name.to_string()]),
        &Scoring::default(),
    )
}

/// `table` as the terminal shows it, fitted to `width` (see [`crate::console::table`]): the
/// columns of [`View::Terminal`], short headers (abbreviated further when they do not fit),
/// numbers right-aligned, undefined cells with their reason.
pub fn model_table(table: &Table, width: Option<u16>) -> Fitted {
    let cols = table.shown(View::Terminal);
    let header: Vec<Column> = cols
        .iter()
        .map(|&i| {
            let c = &table.columns[i];
            let col = Column::new(c.header(View::Terminal));
            match &c.abbr {
                Some(a) => col.short(a),
                None => col,
            }
        })
        .collect();
    let rows: Vec<Vec<Cell>> = table
        .rows_in(View::Terminal)
        .map(|r| {
            cols.iter()
                .map(|&i| {
                    let text = crate::sanitize::one_line(&r.cells[i].value.human(true));
                    if table.columns[i].numeric {
                        // A number (`[8.3, 58.3]`, `+5.0 (11 tasks)`) is never broken across
                        // lines on a terminal; its reason may wrap.
                        let text = match (width, text.split_once(" (")) {
                            (Some(_), Some((n, why))) => {
                                format!("{} ({why}", n.replace(' ', "\u{a0}"))
                            }
                            (Some(_), None) => text.replace(' ', "\u{a0}"),
                            (None, _) => text,
                        };
                        Cell::new(text).set_alignment(CellAlignment::Right)
                    } else {
                        Cell::new(text)
                    }
                })
                .collect()
        })
        .collect();
    fit(&header, rows, width)
}

/// One row per condition: pass rate and its CI, tasks, trials done of planned, successes, the
/// failure modes that occurred, and Δ (pp) and normalized gain g against the baseline over the
/// tasks both ran (an imported condition may have run other tasks: those are left out, never
/// counted 0). `judged` (the pass rate over judged trials) shows while a condition is unfinished;
/// [`condition_notes`] explains the columns.
pub fn conditions_table(r: &Results) -> Fitted {
    model_table(&model::conditions::table(r), terminal_width())
}

/// The sentences that explain [`conditions_table`]'s columns, when they are shown: `infra` and
/// `A/A ±pp` always, the others when their column is there.
pub fn condition_notes(r: &Results) -> Vec<String> {
    let mut notes = vec![
        "infra = trials an infrastructure fault ended (no reward, a build, runtime or provider \
         error): not failures of the agent; Method D counts them 0"
            .to_string(),
        "A/A ±pp = how far Δ moves by trial noise alone: the spread of Δ between halves of each \
         condition's own trials (— with fewer than 2 trials per task)"
            .to_string(),
    ];
    if r.experiment.is_some() {
        notes.push(
            "Δ pp, g = against the first condition of the same round (A in round 1, A' in round \
             2), as `status` shows each round's run; across rounds: the comparisons"
                .to_string(),
        );
    }
    if r.conditions.iter().any(|c| c.timeout_passed > 0) {
        notes.push(
            "t/o passed = agent timeouts whose verifier still gave full marks: they succeeded, \
             and Method D counts them 1"
                .to_string(),
        );
    }
    if r.conditions.iter().any(|c| c.done < c.planned) {
        notes.push(
            "judged = pass rate over judged trials only (pass, fail, timeouts), while the run is \
             unfinished; Method D (pass rate) counts every trial without a verdict 0"
                .to_string(),
        );
    }
    if r.conditions.iter().any(|c| c.partial > 0) {
        notes.push(
            "partial = failed trials with a reward between 0 and 1 (partial credit); Method D \
             averages rewards, so they count fractionally: the pass rate can be above 0 with \
             passed 0"
                .to_string(),
        );
    }
    notes
}

/// Prints `notes` (gathered from several tables, each once), sanitized, each wrapped at the
/// terminal's width ([`crate::console::table::note`]).
pub fn print_notes(notes: &[String]) {
    let width = crate::console::table::terminal_width();
    for n in notes {
        println!(
            "{}",
            crate::console::table::note(&crate::sanitize::text(n), width)
        );
    }
}

/// The comparisons: Δ with its CI, tasks compared, g, tasks better / worse / same.
pub fn comparisons_table(r: &Results) -> Fitted {
    model_table(&model::comparisons::table(r), terminal_width())
}

/// pass@2-adaptive per round pair, overall: round 1's and round 2's pass@1, pass@2-adaptive,
/// round 1's independent pass@2, the adaptive gain (pp) and its 95% CI; `—` where pass@2 is
/// undefined (a task with fewer than 2 trials).
pub fn adaptive_table(r: &Results) -> Fitted {
    model_table(
        &model::comparisons::adaptive_table(r, "overall"),
        terminal_width(),
    )
}
