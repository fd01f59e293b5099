//! Help overlay: every key, generated from the keymap (pairs such as ↑/↓ on one row), and the
//! grid legend. The current view's keys come first. A section's keys column is as wide as its
//! widest key and descriptions wrap under themselves, so no text is cut and no column runs into the next.
//! From 100 columns on the sections flow into two balanced columns, so the whole table fits a
//! 120×40 terminal; smaller screens scroll it (↑↓, the wheel), the title saying which rows show.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use crate::tui::app::App;
use crate::tui::keymap::help_sections;
use crate::tui::widgets::wrap::{hanging, width_of};
use crate::tui::widgets::{LEGEND_STATES, cell_look, centered, fit, flow, framed};

/// The widest the keys column gets; a longer key (none today) is cut with `…`.
const KEYS_MAX: usize = 22;

/// The help rows of one section, `key  description`: the keys column as wide as the widest key
/// (`keys_w`), two spaces before the description, which wraps under itself (never cut) within
/// `col_w` (under the description's start, as [`hanging`] does).
fn section_lines(
    app: &App,
    rows: &[(String, String)],
    keys_w: usize,
    col_w: usize,
) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut out = Vec::new();
    for (k, help) in rows {
        let head = Span::styled(format!("  {:<keys_w$}  ", fit(k, keys_w)), t.accent);
        out.extend(hanging(
            vec![head],
            Span::styled(help.clone(), t.text),
            col_w,
        ));
    }
    out
}

/// Where to split `blocks` (each section's lines, in order) into two columns, and which column
/// takes the legend (`true`: the right), so the taller column is as short as it can be.
fn balance(blocks: &[usize], legend: usize) -> (usize, bool) {
    let total: usize = blocks.iter().sum();
    let mut best = (blocks.len(), false, usize::MAX);
    let mut left = 0;
    for split in 0..=blocks.len() {
        let right = total - left;
        for legend_right in [false, true] {
            let (l, r) = if legend_right {
                (left, right + legend)
            } else {
                (left + legend, right)
            };
            if l.max(r) < best.2 {
                best = (split, legend_right, l.max(r));
            }
        }
        if split < blocks.len() {
            left += blocks[split];
        }
    }
    (best.0, best.1)
}

/// The legend lines under the keys, wrapped to `width`: cell glyphs, the skill browser's marks,
/// and the run's conditions by their short labels.
fn legend(app: &App, width: usize) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut lines = vec![Line::from(Span::styled("Legend", t.header))];
    let cells: Vec<Vec<Span<'static>>> = LEGEND_STATES
        .into_iter()
        .map(|st| {
            let (g, style) = cell_look(t, st);
            vec![
                Span::styled(g.to_string(), style),
                Span::styled(format!(" {} ", st.label()), t.dim),
            ]
        })
        .collect();
    lines.extend(flow(cells, width, "  "));
    let marks = vec![
        vec![
            Span::styled("S┃", t.sop.add_modifier(Modifier::BOLD)),
            Span::styled(" learned SOP entry  ", t.dim),
        ],
        vec![
            Span::styled("W┃", t.warning.add_modifier(Modifier::BOLD)),
            Span::styled(" learned Warning entry  ", t.dim),
        ],
        vec![Span::styled("~", t.warn), Span::styled(" changed  ", t.dim)],
        vec![Span::styled("+", t.pass), Span::styled(" added  ", t.dim)],
        vec![Span::styled("-", t.fail), Span::styled(" removed  ", t.dim)],
    ];
    // The run's conditions flow on after the marks (a line saved where they fit beside them).
    let mut marks = marks;
    if let Some(s) = &app.snapshot {
        let names: Vec<Vec<Span<'static>>> = s
            .run
            .conditions
            .iter()
            .enumerate()
            .map(|(i, c)| {
                vec![
                    Span::styled(s.labels.get(i).cloned().unwrap_or_default(), t.header),
                    Span::styled(
                        format!(" {}  ", crate::skillsbench::condition::condition_label(c)),
                        t.dim,
                    ),
                ]
            })
            .collect();
        marks.extend(names);
    }
    lines.extend(flow(marks, width, "  "));
    lines
}

/// Draws the help overlay centred in `area`; returns where it went (a click outside closes it).
pub fn draw(f: &mut Frame, area: Rect, app: &App) -> Rect {
    let t = &app.theme;
    // The current view's keys first, then the rest.
    let here = app.context().title();
    let mut sections = help_sections();
    sections.sort_by_key(|(title, _)| match *title {
        t if t == here => 0,
        "Everywhere" => 1,
        _ => 2,
    });
    let two = area.width >= 100;
    let col_w = if two {
        ((area.width.min(160) as usize).saturating_sub(3)) / 2
    } else {
        (area.width.min(76) as usize).saturating_sub(2)
    };
    // Each section's keys column as wide as its widest key.
    let blocks: Vec<Vec<Line>> = sections
        .iter()
        .map(|(title, rows)| {
            let keys_w = rows
                .iter()
                .map(|(k, _)| width_of(k))
                .max()
                .unwrap_or(0)
                .min(KEYS_MAX);
            let mut lines = vec![Line::from(Span::styled(*title, t.header))];
            lines.extend(section_lines(app, rows, keys_w, col_w));
            lines
        })
        .collect();
    let legend = legend(app, col_w);
    // Two columns of keys split at the section boundary that makes the taller column shortest,
    // the legend under whichever column that puts it.
    let (left, right): (Vec<Line>, Vec<Line>) = if two {
        let sizes: Vec<usize> = blocks.iter().map(Vec::len).collect();
        let (split, legend_right) = balance(&sizes, legend.len());
        let mut blocks = blocks;
        let mut right: Vec<Line> = blocks.split_off(split).into_iter().flatten().collect();
        let mut left: Vec<Line> = blocks.into_iter().flatten().collect();
        if legend_right {
            right.extend(legend);
        } else {
            left.extend(legend);
        }
        (left, right)
    } else {
        let mut keys: Vec<Line> = blocks.into_iter().flatten().collect();
        keys.extend(legend);
        (keys, Vec::new())
    };
    let inner_h = area.height.saturating_sub(2) as usize;
    let total = left.len().max(right.len());
    let max_scroll = total.saturating_sub(inner_h);
    let scroll = app.help_scroll.min(max_scroll);
    let title = if max_scroll > 0 {
        format!(
            "keys · rows {}-{} of {} · ↑↓ scroll · other keys close",
            scroll + 1,
            (scroll + inner_h).min(total),
            total
        )
    } else {
        "keys · any key closes".to_string()
    };
    // Two columns take the whole width up to 160 (an odd column left over would show the view
    // underneath through the overlay's edge).
    let w = if two {
        area.width.min(160)
    } else {
        (col_w + 2) as u16
    };
    let h = (total as u16 + 2).min(area.height);
    let r = centered(area, w, h);
    f.render_widget(Clear, r);
    let block = framed(t, &title, true);
    let inner = block.inner(r);
    f.render_widget(block, r);
    let take = |v: Vec<Line<'static>>| -> Vec<Line<'static>> {
        v.into_iter()
            .skip(scroll)
            .take(inner.height as usize)
            .collect()
    };
    if two {
        let [a, _, b] = Layout::horizontal([
            Constraint::Length(col_w as u16),
            Constraint::Length(1),
            Constraint::Min(1),
        ])
        .areas(inner);
        f.render_widget(Paragraph::new(take(left)), a);
        f.render_widget(Paragraph::new(take(right)), b);
    } else {
        f.render_widget(Paragraph::new(take(left)), inner);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::balance;

    #[test]
    fn the_taller_column_is_as_short_as_a_section_boundary_allows() {
        // 10 + legend 5 | 10 + 10: 15 vs 20, the first of the shortest.
        assert_eq!(balance(&[10, 10, 10], 5), (1, false));
        assert_eq!(balance(&[10, 10, 30], 5), (2, false));
        // One section: it in one column, the legend in the other.
        assert_eq!(balance(&[12], 5), (0, false));
        assert_eq!(balance(&[], 3), (0, false));
    }
}
