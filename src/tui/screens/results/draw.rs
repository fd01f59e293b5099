//! Results: the evaluation's analysis of the run or experiment being watched, as
//! [`crate::analysis::results::analyze`] computes it — per condition (A, B, A', B' in an
//! experiment) the Method D pass rate with its 95 % CI, tasks, finished/planned trials,
//! infrastructure failures and the pass rate over trials with a verdict; the comparisons (Δ in
//! percentage points with its CI, normalized gain g, tasks better/worse/same); for an experiment
//! pass@2-adaptive beside round 1's pass@2 and the adaptive gain with its CI, overall and by the
//! chosen grouping; the breakdown by
//! domain (or difficulty, `d`); the failure modes; and the analysis's notes.
//!
//! Every table is a table of the results model ([`crate::report::model`]) — the same rows and
//! number formats as the report — drawn by [`crate::tui::widgets::table`]: columns kept by
//! priority, the others counted under the table and reached with `→` (sideways scroll) or a wider
//! terminal. The text scrolls when it does not fit. Everything drawn from the store was sanitized
//! when the data worker read it.

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::ResultsState;
use crate::analysis::results::Results;
use crate::report::model::{Table, breakdowns, comparisons, conditions, exposure};
use crate::tui::model::Grouping;
use crate::tui::screens::Shared;
use crate::tui::theme::Theme;
use crate::tui::widgets::{fit, framed, table, wrap};

/// Draws the Results view into `area`.
pub fn draw(f: &mut Frame, area: Rect, cx: Shared, r: &mut ResultsState) {
    let t = cx.theme;
    let by = match r.grouping {
        Grouping::Domain => "domain",
        Grouping::Difficulty => "difficulty",
    };
    let what = r.data.as_ref().map_or("…", |d| d.title.as_str());
    let title = fit(
        &format!("results · {what} · Method D · by {by}"),
        area.width.saturating_sub(4) as usize,
    );
    let mut block = framed(t, &title, true);
    let inner = block.inner(area);
    let lines: Vec<Line<'static>> = match &r.data {
        None => vec![Line::from(Span::styled("computing the analysis…", t.dim))],
        Some(d) => match &d.results {
            None => vec![
                Line::from(Span::styled("no finished trials yet", t.text)),
                Line::from(Span::styled(
                    format!(
                        "The analysis of {} appears here when its first trial finishes.",
                        d.title
                    ),
                    t.dim,
                )),
            ],
            Some(res) => {
                let (lines, hidden) = body(t, res, r.grouping, inner.width as usize, r.offset);
                r.hidden = hidden;
                lines
            }
        },
    };
    let page = inner.height as usize;
    r.page = page;
    r.lines = lines.len();
    let top = r.scroll.min(r.max_scroll());
    if lines.len() > page {
        block = block.title_bottom(
            Line::from(Span::styled(
                format!(
                    " {}–{} of {} · ↑↓ scroll ",
                    top + 1,
                    (top + page).min(lines.len()),
                    lines.len()
                ),
                t.dim,
            ))
            .alignment(Alignment::Right),
        );
    }
    f.render_widget(block, area);
    let shown: Vec<Line> = lines.into_iter().skip(top).take(page).collect();
    f.render_widget(Paragraph::new(shown), inner);
}

/// `text` wrapped to `width`, its first line after `mark` (in `mark_style`), the others indented
/// as far.
fn bullet(
    mark: &'static str,
    text: Span<'static>,
    mark_style: Style,
    width: usize,
) -> Vec<Line<'static>> {
    wrap::wrap(&Line::from(text), width.saturating_sub(4))
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let mut spans = vec![Span::styled(if i == 0 { mark } else { "    " }, mark_style)];
            spans.extend(l.spans);
            Line::from(spans)
        })
        .collect()
}

/// Every line of the analysis for `width` columns, the tables scrolled `offset` columns
/// sideways; and the most columns any table left out.
fn body(
    t: &Theme,
    res: &Results,
    grouping: Grouping,
    width: usize,
    offset: usize,
) -> (Vec<Line<'static>>, usize) {
    let mut lines: Vec<Line<'static>> = Vec::new();
    let runs: Vec<String> = res
        .runs
        .iter()
        .map(|r| {
            let agent = match &r.model {
                Some(m) => format!("{}/{m}", r.agent),
                None => r.agent.clone(),
            };
            format!(
                "{} ({agent}, {}, {})",
                r.name,
                crate::format::tasks_by_trials(res.tasks.len(), r.n_trials),
                r.status
            )
        })
        .collect();
    // The header lines wrap (and scroll with the rest) rather than being cut at the edge.
    for head in [
        format!("runs {}", runs.join(" · ")),
        format!(
            "CI: {} · success: {} · comparisons over the tasks both sides ran",
            res.ci_method.short(),
            res.success_description
        ),
    ] {
        lines.extend(wrap::hanging(Vec::new(), Span::styled(head, t.dim), width));
    }
    lines.push(Line::default());
    // Skills that reached a condition without skills: first, before any number.
    for f in &res.exposure.flags {
        lines.extend(bullet(
            "  ! ",
            Span::styled(f.clone(), t.warn),
            t.warn,
            width,
        ));
    }
    let mut hidden = 0;
    for tab in tables(res, grouping) {
        if tab.rows.is_empty() {
            continue;
        }
        let drawn = table::draw(t, &tab, width, offset);
        if drawn.lines.is_empty() {
            continue;
        }
        hidden = hidden.max(drawn.hidden);
        lines.extend(drawn.lines);
        if tab.name == "skill_exposure_wide" {
            lines.extend(bullet(
                "  ",
                Span::styled(exposure::LEGEND.to_string(), t.dim),
                t.dim,
                width,
            ));
        }
        lines.push(Line::default());
    }
    lines.extend(notes(t, res, width));
    while lines.last().is_some_and(|l| l.width() == 0) {
        lines.pop();
    }
    (lines, hidden)
}

/// The tables the view shows, in order: conditions, skill exposure, comparisons, the breakdown
/// by the chosen grouping, pass@2-adaptive overall and by it, failure modes and categories.
fn tables(res: &Results, grouping: Grouping) -> Vec<Table> {
    let (what, rows) = match grouping {
        Grouping::Domain => ("domain", &res.domains),
        Grouping::Difficulty => ("difficulty", &res.difficulties),
    };
    let mut out = vec![conditions::table(res)];
    if res.exposure.conditions.iter().any(|c| c.recorded > 0) {
        out.push(exposure::table(&res.exposure));
        out.push(exposure::skills_table(&res.exposure));
    }
    out.push(comparisons::table(res));
    if !rows.is_empty() {
        out.push(breakdowns::groups_table(&breakdowns::groups_of(
            res, what, rows,
        )));
    }
    out.push(comparisons::adaptive_table(res, "overall"));
    out.push(comparisons::adaptive_table(res, what));
    if res
        .conditions
        .iter()
        .any(|c| c.failures.values().any(|n| *n > 0))
    {
        out.push(conditions::modes_table(res));
    }
    if res.conditions.iter().any(|c| !c.categories.is_empty()) {
        out.push(conditions::categories_table(res));
    }
    out
}

/// The analysis's notes, wrapped.
fn notes(t: &Theme, res: &Results, width: usize) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    if res.notes.is_empty() {
        return lines;
    }
    lines.push(Line::from(Span::styled("notes", t.header)));
    for n in &res.notes {
        lines.extend(bullet(
            "  • ",
            Span::styled(n.clone(), t.text),
            t.warn,
            width,
        ));
    }
    lines
}
