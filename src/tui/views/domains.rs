//! Pass rates per domain (or difficulty) and condition, from the live run: the breakdown table of
//! the results model ([`crate::report::model::breakdowns::groups_table`], the report's own table
//! and number formats) with the overall row — Method D per condition (`—` for a group the
//! condition ran no task of), Δ in percentage points and normalized gain g of each condition
//! against the first over the tasks both ran. Conditions are headed by their short labels (`A`,
//! `B`, `A'` …), named in full in the pane's last line. While the run is unfinished each condition
//! also shows its pass rate over judged trials beside Method D — Method D counts every trial
//! without a verdict 0, so mid-run it reads low; the judged rate says where it is heading,
//! labelled so the two are not confused. Columns that do not fit are counted under the table and
//! reached with `←` `→`.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::analysis::results::GroupRow;
use crate::report::model::Table;
use crate::report::model::breakdowns::{Groups, groups_table};
use crate::skillsbench::condition::condition_label;
use crate::tui::app::App;
use crate::tui::model::{Grouping, RateRow};
use crate::tui::widgets::{fit, framed, table};

/// True while some planned trial has no verdict yet.
fn unfinished(app: &App) -> bool {
    app.progress.done + app.progress.cancelled < app.progress.total
}

/// Rows the pane wants, borders included: a header, one per group and the overall row, and the
/// legend line.
pub fn height(app: &App) -> u16 {
    (app.rates.len() + 2 + 2) as u16
}

/// The label of condition `i` (`A`, or its position when the snapshot has no labels).
fn label_of(app: &App, i: usize) -> String {
    app.snapshot
        .as_ref()
        .and_then(|s| s.labels.get(i).cloned())
        .unwrap_or_else(|| format!("{}", i + 1))
}

/// A live row as a breakdown row: Δ and g of each condition against the first, shown only once
/// both have a judged trial (a Method D rate of nothing judged is 0 by definition, not a result
/// to compare).
fn group_row(row: &RateRow) -> GroupRow {
    let judged = |k: usize| row.judged.get(k).copied().flatten().is_some();
    let paired: Vec<_> = (1..row.rates.len())
        .map(|i| row.deltas.get(i - 1).copied().flatten())
        .collect();
    let deltas: Vec<_> = paired
        .iter()
        .enumerate()
        .map(|(k, p)| p.filter(|_| judged(0) && judged(k + 1)))
        .collect();
    GroupRow {
        group: row.label.clone(),
        n_tasks: row.n_tasks,
        rates: row.rates.clone(),
        n_ran: row.n_ran.clone(),
        deltas_pp: deltas.iter().map(|p| p.map(|p| p.delta_pp)).collect(),
        gains: deltas.iter().map(|p| p.and_then(|p| p.g)).collect(),
        n_matched: paired.iter().map(|p| p.map_or(0, |p| p.n_tasks)).collect(),
    }
}

/// The pane's table: the live breakdown with the overall row and, while the run is unfinished,
/// the judged rates.
pub fn pane_table(app: &App) -> Table {
    let what = match app.domains.grouping {
        Grouping::Domain => "domain",
        Grouping::Difficulty => "difficulty",
    };
    let n = app.snapshot.as_ref().map_or(0, |s| s.run.conditions.len());
    let labels: Vec<String> = (0..n).map(|i| label_of(app, i)).collect();
    let (body, overall) = match app.rates.split_last() {
        Some((last, rest)) if last.total => (rest, Some(last)),
        _ => (&app.rates[..], None),
    };
    let rows: Vec<GroupRow> = body.iter().map(group_row).collect();
    let judged = unfinished(app).then(|| {
        body.iter()
            .chain(overall)
            .map(|r| r.judged.clone())
            .collect()
    });
    groups_table(&Groups {
        what,
        comparisons: (1..n)
            .map(|i| {
                (
                    format!("{} vs {}", labels[i], labels[0]),
                    labels[i].clone(),
                    labels[0].clone(),
                )
            })
            .collect(),
        conditions: labels,
        rows: &rows,
        overall: overall.map(group_row),
        judged,
    })
}

/// Draws the pane into `area`.
pub fn draw(f: &mut Frame, area: Rect, app: &App, focused: bool) {
    let Some(s) = &app.snapshot else { return };
    let t = &app.theme;
    let by = match app.domains.grouping {
        Grouping::Domain => "domain",
        Grouping::Difficulty => "difficulty",
    };
    let title = format!("pass rate (Method D) by {by}");
    let block = framed(t, &title, focused);
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.height < 2 || inner.width < 20 {
        return;
    }
    let drawn = table::draw_compact(
        t,
        &pane_table(app),
        inner.width as usize,
        app.domains.offset,
    );
    let (hidden, left) = (drawn.hidden, drawn.left);
    // The header stays; the rows scroll.
    let body_h = (inner.height as usize).saturating_sub(1);
    let mut lines: Vec<Line> = Vec::new();
    let mut it = drawn.lines.into_iter();
    if let Some(head) = it.next() {
        lines.push(head);
    }
    lines.extend(
        it.skip(app.domains.scroll.min(app.rates.len().saturating_sub(1)))
            .take(body_h.saturating_sub(1)),
    );
    // The legend: each label's condition in full, and what the judged column is.
    let names: Vec<String> = s
        .run
        .conditions
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{} {}", label_of(app, i), condition_label(c)))
        .collect();
    // Columns off-screen first: they must not go unnoticed.
    let mut legend = Vec::new();
    if left > 0 {
        legend.push(format!("← {left} more"));
    }
    if hidden > 0 {
        legend.push(format!(
            "+{} →",
            crate::format::count(hidden, "column", "columns")
        ));
    }
    legend.extend(names);
    if unfinished(app) {
        legend.push(
            "Method D counts unfinished trials 0; judged = over judged trials only".to_string(),
        );
    }
    let legend = legend.join(" · ");
    let legend_area = Rect {
        y: inner.y + inner.height - 1,
        height: 1,
        ..inner
    };
    f.render_widget(Paragraph::new(lines), inner);
    f.render_widget(
        Paragraph::new(Line::from(Span::styled(
            fit(&legend, inner.width as usize),
            t.dim,
        ))),
        legend_area,
    );
}

#[cfg(test)]
mod tests {
    use crate::analysis::metrics::Paired;
    use crate::tui::model::RateRow;

    #[test]
    fn a_difference_waits_for_a_verdict_on_both_sides() {
        let p = Paired {
            with: 0.5,
            without: 0.0,
            delta_pp: 50.0,
            g: Some(0.5),
            n_tasks: 2,
        };
        let row = RateRow {
            label: "Finance".into(),
            n_tasks: 2,
            rates: vec![Some(0.0), Some(0.5)],
            n_ran: vec![2, 2],
            deltas: vec![Some(p)],
            judged: vec![None, Some(0.5)],
            total: false,
        };
        let g = super::group_row(&row);
        assert_eq!(
            g.deltas_pp,
            vec![None],
            "nothing judged under the baseline yet"
        );
        assert_eq!(
            g.n_matched,
            vec![2],
            "the tasks are shared: the difference waits"
        );
        let judged = RateRow {
            judged: vec![Some(0.0), Some(0.5)],
            ..row
        };
        let g = super::group_row(&judged);
        assert_eq!(g.deltas_pp, vec![Some(50.0)]);
        assert_eq!(g.gains, vec![Some(0.5)]);
        assert_eq!(g.n_matched, vec![2]);
    }
}
