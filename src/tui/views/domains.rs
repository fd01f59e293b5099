//! Pass rates per domain (or difficulty) and condition, from the live run: the breakdown table of
//! the results model ([`crate::report::model::breakdowns::groups_table`], the report's own table
//! and number formats) with the overall row — Method D per condition (`—` for a group the
//! condition ran no task of), Δ in percentage points and normalized gain g of each condition
//! against the first over the tasks both ran. Conditions are headed by their short labels (`A`,
//! `B`, `A'` …), named in full in the pane's last line. While the run is unfinished each condition
//! also shows its pass rate over judged trials beside Method D — Method D counts every trial
//! without a verdict 0, so mid-run it reads low; the judged rate says where it is heading,
//! labelled so the two are not confused. Nothing is cut without a sign: columns that do not fit are
//! counted in the legend and reached with `←` `→` (the task count stays; those scrolled off to
//! the left are named), groups that do not fit are counted there too and scrolled with `↑` `↓`
//! while the overall row stays under them, and the legend wraps rather than being cut.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::report::model::Table;
use crate::report::model::breakdowns::{Groups, groups_table};
use crate::skillsbench::condition::condition_label;
use crate::tui::app::App;
use crate::tui::model::Grouping;
use crate::tui::widgets::{fit, framed, table, wrap};

/// True while some planned trial has no verdict yet.
fn unfinished(app: &App) -> bool {
    app.progress.done + app.progress.cancelled < app.progress.total
}

/// Rows the pane wants at `width` columns, borders included: a header, one per group and the
/// overall row, and the legend as wrapped.
pub fn height(app: &App, width: u16) -> u16 {
    let inner = width.saturating_sub(2) as usize;
    let drawn = table::draw_compact(&app.theme, &pane_table(app), inner, app.domains.offset);
    let legend = legend_lines(&app.theme, &legend_items(app, &drawn, 0, 0), inner).len();
    (app.rates.rows.len() + 1 + legend + 2) as u16
}

/// The label of condition `i` (`A`, or its position when the snapshot has no labels).
fn label_of(app: &App, i: usize) -> String {
    app.snapshot
        .as_ref()
        .and_then(|s| s.labels.get(i).cloned())
        .unwrap_or_else(|| format!("{}", i + 1))
}

/// The pane's table: the analysis's live breakdown ([`crate::analysis::results::live_breakdown`])
/// with the overall row and, while the run is unfinished, the judged rates.
pub fn pane_table(app: &App) -> Table {
    let what = match app.domains.grouping {
        Grouping::Domain => "domain",
        Grouping::Difficulty => "difficulty",
    };
    let n = app.snapshot.as_ref().map_or(0, |s| s.run.conditions.len());
    let labels: Vec<String> = (0..n).map(|i| label_of(app, i)).collect();
    let (body, overall) = match app.rates.rows.split_last() {
        Some((last, rest)) => (rest, Some(last.clone())),
        None => (&app.rates.rows[..], None),
    };
    let judged = unfinished(app).then(|| app.rates.judged.clone());
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
        rows: body,
        overall,
        judged,
    })
}

/// What a frame of the pane could not show, for the keys: the largest useful sideways offset
/// and the largest useful row scroll.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reach {
    /// [`crate::tui::widgets::table::Drawn::max_offset`].
    pub max_offset: usize,
    /// Body rows (groups) that can be scrolled past.
    pub max_scroll: usize,
}

/// The legend's items: what is off-screen first (columns left and right, groups above and
/// below) — none of it may go unnoticed — then each label's condition in full and, while the
/// run is unfinished, what the judged column is.
fn legend_items(app: &App, drawn: &table::Drawn, above: usize, below: usize) -> Vec<String> {
    let mut legend = Vec::new();
    if !drawn.left_heads.is_empty() {
        legend.push(format!("← {} off-screen", drawn.left_heads.join(" ")));
    }
    if drawn.hidden > 0 {
        legend.push(format!(
            "+{} →",
            crate::format::count(drawn.hidden, "column", "columns")
        ));
    }
    let what = match app.domains.grouping {
        Grouping::Domain => ("domain", "domains"),
        Grouping::Difficulty => ("difficulty", "difficulties"),
    };
    let of = |n: usize| if n == 1 { what.0 } else { what.1 };
    match (above, below) {
        (0, 0) => {}
        (0, b) => legend.push(format!("↓ {b} more {} (j)", of(b))),
        (a, 0) => legend.push(format!("↑ {a} more {} (k)", of(a))),
        (a, b) => legend.push(format!("↑ {a} ↓ {b} more {}", what.1)),
    }
    if let Some(s) = &app.snapshot {
        legend.extend(
            s.run
                .conditions
                .iter()
                .enumerate()
                .map(|(i, c)| format!("{} {}", label_of(app, i), condition_label(c))),
        );
    }
    if unfinished(app) {
        legend.push(
            "Method D counts unfinished trials 0; judged = over judged trials only".to_string(),
        );
    }
    legend
}

/// The legend's items laid into lines of `width` (an item is never cut: one wider than the
/// pane takes its own lines).
fn legend_lines(
    t: &crate::tui::theme::Theme,
    items: &[String],
    width: usize,
) -> Vec<Line<'static>> {
    let mut lines: Vec<String> = vec![String::new()];
    for item in items {
        let last = lines.last_mut().expect("one line");
        let sep = if last.is_empty() { "" } else { " · " };
        if !last.is_empty()
            && last.chars().count() + sep.chars().count() + item.chars().count() > width
        {
            lines.push(item.clone());
        } else {
            last.push_str(sep);
            last.push_str(item);
        }
    }
    lines
        .into_iter()
        .flat_map(|l| wrap::wrap(&Line::from(Span::styled(l, t.dim)), width.max(1)))
        .collect()
}

/// Draws the pane into `area`: the header, the groups (scrolled), the overall row always under
/// them, and the legend below, wrapped whole. Returns how far the keys can scroll.
pub fn draw(f: &mut Frame, area: Rect, app: &App, focused: bool) -> Reach {
    let Some(_) = &app.snapshot else {
        return Reach::default();
    };
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
        return Reach::default();
    }
    let width = inner.width as usize;
    let drawn = table::draw_compact(t, &pane_table(app), width, app.domains.offset);
    let n_rows = app.rates.rows.len();
    let has_overall = n_rows > 0;
    let n_body = n_rows.saturating_sub(1);
    let mut it = drawn.lines.iter().cloned();
    let head = it.next();
    let data: Vec<Line> = it.by_ref().take(n_rows).collect();
    let notes: Vec<Line> = it.collect();
    let (body, overall) = if has_overall {
        let (o, b) = data
            .split_last()
            .map_or((None, &data[..]), |(o, b)| (Some(o), b));
        (b.to_vec(), o.cloned())
    } else {
        (data.clone(), None)
    };
    let fixed = 1 + usize::from(overall.is_some());
    // The legend as wrapped with every off-screen item, to see how many body rows fit beside it.
    let rows_for = |legend_h: usize| (inner.height as usize).saturating_sub(fixed + legend_h);
    let scroll_max = |fit: usize| n_body.saturating_sub(fit);
    let mut legend = legend_lines(t, &legend_items(app, &drawn, 0, 0), width);
    let mut fit = rows_for(legend.len()).min(n_body);
    let mut scroll = app.domains.scroll.min(scroll_max(fit));
    for _ in 0..2 {
        let (above, below) = (scroll, n_body.saturating_sub(scroll + fit));
        legend = legend_lines(t, &legend_items(app, &drawn, above, below), width);
        // Rows first, the legend's first line always: a legend too long for the pane keeps
        // what is off-screen (its first items) and says the rest is cut.
        let room = (inner.height as usize).saturating_sub(fixed + fit.min(1));
        if legend.len() > room.max(1) {
            legend.truncate(room.max(1));
            if let Some(last) = legend.last_mut() {
                *last = Line::from(Span::styled(fit_text(&last.to_string(), width), t.dim));
            }
        }
        fit = rows_for(legend.len()).min(n_body);
        scroll = app.domains.scroll.min(scroll_max(fit));
    }
    let mut lines: Vec<Line> = Vec::new();
    lines.extend(head);
    lines.extend(body.into_iter().skip(scroll).take(fit));
    lines.extend(overall);
    // Footnotes and reasons of undefined cells where room is left.
    let room = (inner.height as usize).saturating_sub(lines.len() + legend.len());
    lines.extend(notes.into_iter().take(room));
    let legend_h = legend.len() as u16;
    let legend_area = Rect {
        y: inner.y + inner.height - legend_h.min(inner.height),
        height: legend_h.min(inner.height),
        ..inner
    };
    f.render_widget(Paragraph::new(lines), inner);
    f.render_widget(Paragraph::new(legend), legend_area);
    Reach {
        max_offset: drawn.max_offset,
        max_scroll: scroll_max(fit),
    }
}

/// `text` cut to `width` with a final `…` when it is longer (a legend cut short says so).
fn fit_text(text: &str, width: usize) -> String {
    if text.chars().count() < width {
        format!("{text}…")
    } else {
        fit(text, width)
    }
}
