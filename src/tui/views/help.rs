//! Help overlay: every key, generated from the keymap (pairs such as ↑/↓ on one row), and the
//! grid legend. The current view's keys come first. From 100 columns on the keys flow into two
//! columns, so the whole table fits a 120×40 terminal; smaller screens scroll it (↑↓, the wheel),
//! the title saying which rows show.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use crate::tui::app::App;
use crate::tui::keymap::help_sections;
use crate::tui::widgets::{LEGEND_STATES, cell_look, centered, fit, flow, framed};

/// Width of the keys column.
const KEYS_W: usize = 19;

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
        vec![Span::styled("-", t.fail), Span::styled(" removed", t.dim)],
    ];
    lines.extend(flow(marks, width, "  "));
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
        lines.extend(flow(names, width, "  "));
    }
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
    let mut keys: Vec<Line> = Vec::new();
    for (title, rows) in sections {
        keys.push(Line::from(Span::styled(title, t.header)));
        for (k, help) in rows {
            keys.push(Line::from(vec![
                Span::styled(format!("  {:<KEYS_W$} ", fit(&k, KEYS_W)), t.accent),
                Span::styled(fit(&help, col_w.saturating_sub(KEYS_W + 3)), t.text),
            ]));
        }
    }
    let legend = legend(app, col_w);
    // Two columns of keys (split at a section boundary near the middle), the legend under the
    // shorter one.
    let (left, right): (Vec<Line>, Vec<Line>) = if two {
        let half = keys.len().div_ceil(2);
        let split = (half..keys.len())
            .find(|&i| keys[i].spans.len() == 1)
            .unwrap_or(half);
        let mut right = keys.split_off(split);
        let mut left = keys;
        if right.len() <= left.len() {
            right.extend(legend);
        } else {
            left.extend(legend);
        }
        (left, right)
    } else {
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
