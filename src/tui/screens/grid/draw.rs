//! Drawing the trial grid: only visible rows and columns are drawn, so a frame costs the same
//! for 100 or 10,000 trials.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{GridHits, GridState};
use crate::skillsbench::condition::condition_label;
use crate::tui::model::{CellState, GridModel, GridRow};
use crate::tui::screens::{Hits, Shared};
use crate::tui::theme::Theme;
use crate::tui::widgets::{LEGEND_STATES, cell_look, fit, flow, framed, live_line};
use crate::tui::worker::Snapshot;

/// Narrowest cell (glyph + gap).
const CELL_W: u16 = 2;
/// Widest cell, used when few columns leave room for whole condition names.
const CELL_W_MAX: u16 = 4;
/// Columns between condition groups.
const GROUP_GAP: u16 = 1;

/// Columns of the longest task id shown (4 when none is).
fn longest_task(m: &crate::tui::model::GridModel) -> u16 {
    m.rows
        .iter()
        .filter_map(|r| match r {
            GridRow::Task { task_id, .. } => Some(task_id.chars().count()),
            GridRow::Domain { .. } => None,
        })
        .max()
        .unwrap_or(4) as u16
}

/// The width the grid would like beside the other panes: task names up to 36 columns and every
/// cell at its widest, borders included (the layout gives it between 45 % and 62 % of the screen).
pub fn wanted_width(m: &GridModel, cx: Shared) -> u16 {
    let longest = longest_task(m);
    let groups = cx.snapshot.map_or(1, |s| s.run.conditions.len().max(1)) as u16;
    let cells = m.columns.len() as u16 * CELL_W_MAX + GROUP_GAP * groups;
    (longest + 2).clamp(14, 36) + 1 + cells + 2
}

/// Draws the grid into `area`, keeping the cursor's row and column in view (`g.top`, `g.left`),
/// remembering the rows that fit (`g.page`) and recording the cells for the mouse.
pub fn draw(
    f: &mut Frame,
    area: Rect,
    cx: Shared,
    m: &GridModel,
    g: &mut GridState,
    hits: &mut Hits,
    focused: bool,
) {
    let Some(s) = cx.snapshot else { return };
    let t = cx.theme;
    let inner = framed(t, "", focused).inner(area);
    // Rows, scrolled so the cursor's row is visible; those left out are counted in the title.
    let body_h = (inner.height.saturating_sub(2)) as usize;
    let cursor_row = m.task_rows.get(g.row).copied().unwrap_or(0);
    let mut top = g.top.min(m.rows.len().saturating_sub(1));
    if cursor_row < top {
        top = cursor_row.saturating_sub(1);
    }
    if cursor_row >= top + body_h {
        top = (cursor_row + 1).saturating_sub(body_h);
    }
    let (mut title, live) = heading(cx, s, m, g, area.width);
    if let Some(more) = rows_off_screen(m, top, body_h) {
        title.push_str(&format!(" · {more}"));
    }
    let mut block = framed(t, &title, focused);
    // Columns first: what they leave off-screen goes on the bottom border.
    let cols = (!m.task_rows.is_empty() && inner.height >= 3 && inner.width >= 10)
        .then(|| Columns::fit(s, m, g, inner));
    let off = cols.as_ref().map(|c| c.off_screen()).unwrap_or_default();
    let hint = off_screen_hint(
        &off,
        inner.width as usize / if live.is_some() { 2 } else { 1 },
    );
    if let Some(line) = live {
        block = block.title_bottom(line);
    }
    if let Some(hint) = hint {
        block = block
            .title_bottom(Line::from(Span::styled(format!(" {hint} "), t.accent)).right_aligned());
    }
    f.render_widget(block, area);
    let Some(cols) = cols else {
        if m.task_rows.is_empty() && inner.height >= 3 && inner.width >= 10 {
            f.render_widget(
                Paragraph::new(Span::styled(
                    "no task matches the filter (Esc clears it)",
                    t.dim,
                )),
                inner,
            );
        }
        return;
    };
    g.left = cols.left;
    header(f.buffer_mut(), inner, t, &cols, &off);
    g.page = body_h.saturating_sub(1);
    g.top = top;
    hits.grid = Some(cols.hits(inner, top, body_h));
    rows(f.buffer_mut(), inner, t, &cols, g, top, body_h);
    legend(f, inner, t, &cols, top, body_h);
}

/// The grid's title (sort, filter, task count) and, for a running cell under the cursor, what
/// its agent is doing, for the bottom border.
fn heading(
    cx: Shared,
    s: &Snapshot,
    m: &GridModel,
    g: &GridState,
    width: u16,
) -> (String, Option<Line<'static>>) {
    let t = cx.theme;
    let mut title = format!("trials · sort {}", g.sort.label());
    if !g.filter.is_empty() {
        title.push_str(&format!(
            " · filter {}{}",
            g.filter.status.label(),
            if g.filter.query.is_empty() {
                String::new()
            } else {
                format!(" \"{}\"", g.filter.query)
            }
        ));
    }
    title.push_str(&format!(
        " · {}",
        crate::format::count(m.task_rows.len(), "task", "tasks")
    ));
    let mut live = None;
    if let Some(k) = m.cell(g.row, g.col)
        && m.state(s, k).is_running()
    {
        let label = s
            .run
            .conditions
            .iter()
            .position(|c| *c == s.trials[k].condition)
            .and_then(|i| s.labels.get(i).cloned())
            .unwrap_or_default();
        let head = format!(" {label} #{} ", s.trials[k].trial_index);
        let room = (width as usize).saturating_sub(head.chars().count() + 4);
        let mut line = live_line(
            t,
            m.state(s, k),
            crate::tui::model::activity_of(s, s.trials[k].id),
            cx.now,
            room,
        );
        line.spans.insert(0, Span::styled(head, t.header));
        line.spans.push(Span::raw(" "));
        live = Some(line);
    }
    (title, live)
}

/// The tasks above and below the rows drawn from `top` (`body_h` rows), for the title:
/// `↓ 3 more tasks (j)`, `↑ 2 ↓ 3 more tasks`; `None` when every task row shows.
fn rows_off_screen(m: &GridModel, top: usize, body_h: usize) -> Option<String> {
    let above = m.task_rows.iter().filter(|&&r| r < top).count();
    let below = m.task_rows.iter().filter(|&&r| r >= top + body_h).count();
    let n = |k: usize| crate::format::count(k, "more task", "more tasks");
    match (above, below) {
        (0, 0) => None,
        (0, b) => Some(format!("↓ {} (j)", n(b))),
        (a, 0) => Some(format!("↑ {} (k)", n(a))),
        (a, b) => Some(format!("↑ {a} ↓ {}", n(b))),
    }
}

/// A condition by its short label (A, B, A', B', C …); the legend names them in full.
fn short_label(s: &Snapshot, cond: &str) -> String {
    s.run
        .conditions
        .iter()
        .position(|c| c == cond)
        .and_then(|i| s.labels.get(i).cloned())
        .unwrap_or_else(|| condition_label(cond))
}

/// How the grid's columns are laid out in one frame: the cell width, the task-name column and
/// which columns show (scrolled so the cursor's column is in view).
struct Columns<'a> {
    s: &'a Snapshot,
    m: &'a GridModel,
    /// Columns of one cell.
    cell_w: u16,
    /// Columns of the task names.
    label_w: u16,
    /// The first column shown.
    left: usize,
    /// How many columns show.
    shown: usize,
    /// Where the first cell starts.
    x0: u16,
}

impl<'a> Columns<'a> {
    /// Lays the columns out in `inner` from the last frame's first column `g.left`.
    fn fit(s: &'a Snapshot, m: &'a GridModel, g: &GridState, inner: Rect) -> Columns<'a> {
        let n_cols = m.columns.len();
        let n_groups = s.run.conditions.len().max(1) as u16;
        // Cells widen (up to CELL_W_MAX) while every column still fits beside a task name of 24.
        let cells_at = |w: u16| w * n_cols as u16 + GROUP_GAP * n_groups;
        let longest_task = longest_task(m);
        let mut cell_w = CELL_W;
        for w in (CELL_W..=CELL_W_MAX).rev() {
            if cells_at(w) + 24.min(longest_task + 1) < inner.width {
                cell_w = w;
                break;
            }
        }
        // Task names take the width the cells leave (all of a long id when it fits); when the
        // columns do not all fit they scroll, and names keep a third of the pane.
        let label_w = if cells_at(cell_w) + 13 <= inner.width {
            (inner.width - cells_at(cell_w) - 1)
                .min(longest_task + 2)
                .max(12)
        } else {
            ((inner.width as usize) / 3).clamp(12, 32) as u16
        };
        let mut c = Columns {
            s,
            m,
            cell_w,
            label_w,
            left: 0,
            shown: 0,
            x0: inner.x + label_w + 1,
        };
        // When the columns do not all fit, one column at the right edge is kept for the `›`
        // that says more lie beyond (the `‹` of those to the left takes the gap after the names).
        let all = c.width_from(0, n_cols);
        let avail = inner.width.saturating_sub(label_w + 1);
        let avail = if all > avail {
            avail.saturating_sub(1)
        } else {
            avail
        };
        let mut left = g.left.min(n_cols.saturating_sub(1));
        if g.col < left {
            left = g.col;
        }
        let fits = |left: usize| -> usize {
            let mut k = 0;
            while left + k < n_cols && c.width_from(left, k + 1) <= avail {
                k += 1;
            }
            k.max(1)
        };
        while g.col >= left + fits(left) {
            left += 1;
        }
        let shown = fits(left).min(n_cols - left);
        c.left = left;
        c.shown = shown;
        c
    }

    /// The condition group of column `c`.
    fn group_of(&self, c: usize) -> usize {
        self.s
            .run
            .conditions
            .iter()
            .position(|x| *x == self.m.columns[c].condition)
            .unwrap_or(0)
    }

    /// Columns `count` cells take from column `left` on, gaps between groups included.
    fn width_from(&self, left: usize, count: usize) -> u16 {
        let mut w = 0;
        for c in left..left + count {
            if c > left && self.group_of(c) != self.group_of(c - 1) {
                w += GROUP_GAP;
            }
            w += self.cell_w;
        }
        w
    }

    /// The columns left of and right of the view, by condition: what the `‹ ›` markers and the
    /// bottom-border hint name.
    fn off_screen(&self) -> OffScreen {
        let mut off = OffScreen::default();
        let ranges = |cols: std::ops::Range<usize>| -> Vec<(String, u32, u32)> {
            let mut out: Vec<(String, u32, u32)> = Vec::new();
            for c in cols {
                let col = &self.m.columns[c];
                let label = short_label(self.s, &col.condition);
                match out.last_mut() {
                    Some((l, _, hi)) if *l == label => *hi = col.trial_index,
                    _ => out.push((label, col.trial_index, col.trial_index)),
                }
            }
            out
        };
        off.left = ranges(0..self.left);
        off.right = ranges(self.left + self.shown..self.m.columns.len());
        off
    }

    /// Where the cells are, for the mouse.
    fn hits(&self, inner: Rect, top: usize, body_h: usize) -> GridHits {
        let mut cols = Vec::new();
        let mut x = self.x0;
        for c in self.left..self.left + self.shown {
            if c > self.left && self.group_of(c) != self.group_of(c - 1) {
                x += GROUP_GAP;
            }
            cols.push((x, self.cell_w, c));
            x += self.cell_w;
        }
        GridHits {
            body: Rect {
                x: inner.x,
                y: inner.y + 2,
                width: inner.width,
                height: body_h as u16,
            },
            top,
            cols,
        }
    }
}

/// The trials a grid's view leaves out, left and right, as (condition label, first trial, last
/// trial) runs in column order.
#[derive(Debug, Default, PartialEq)]
struct OffScreen {
    left: Vec<(String, u32, u32)>,
    right: Vec<(String, u32, u32)>,
}

/// `← A #1–5 · A #18–30, B #1–30 → (←/→)` cut to `width` columns (the per-condition ranges go
/// first, the arrows stay); `None` when everything shows.
fn off_screen_hint(off: &OffScreen, width: usize) -> Option<String> {
    if off.left.is_empty() && off.right.is_empty() {
        return None;
    }
    let runs = |v: &[(String, u32, u32)]| -> String {
        v.iter()
            .map(|(l, a, b)| {
                if a == b {
                    format!("{l} #{a}")
                } else {
                    format!("{l} #{a}–{b}")
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let full = match (off.left.is_empty(), off.right.is_empty()) {
        (false, true) => format!("← {} off-screen (h/←)", runs(&off.left)),
        (true, false) => format!("{} off-screen → (l/→)", runs(&off.right)),
        _ => format!("← {} · {} → (h l)", runs(&off.left), runs(&off.right)),
    };
    if full.chars().count() <= width {
        return Some(full);
    }
    // Conditions only, then the arrows alone.
    let names = |v: &[(String, u32, u32)]| -> String {
        let mut n: Vec<&str> = v.iter().map(|(l, _, _)| l.as_str()).collect();
        n.dedup();
        n.join(" ")
    };
    let short = match (off.left.is_empty(), off.right.is_empty()) {
        (false, true) => format!("← {} more", names(&off.left)),
        (true, false) => format!("more {} →", names(&off.right)),
        _ => format!("← {} · {} →", names(&off.left), names(&off.right)),
    };
    if short.chars().count() <= width {
        return Some(short);
    }
    let arrows = match (off.left.is_empty(), off.right.is_empty()) {
        (false, true) => "←",
        (true, false) => "→",
        _ => "← →",
    };
    (arrows.chars().count() <= width).then(|| arrows.to_string())
}

/// Header: condition labels over their cells, then trial indices; `‹` / `›` at the edges when
/// columns lie off-screen on that side.
fn header(buf: &mut Buffer, inner: Rect, t: &Theme, cols: &Columns, off: &OffScreen) {
    if !off.left.is_empty() {
        put(
            buf,
            inner,
            cols.x0 - 1,
            inner.y,
            &t.glyphs.more_left,
            t.accent,
        );
        put(
            buf,
            inner,
            cols.x0 - 1,
            inner.y + 1,
            &t.glyphs.more_left,
            t.accent,
        );
    }
    if !off.right.is_empty() {
        let x = inner.right() - 1;
        put(buf, inner, x, inner.y, &t.glyphs.more_right, t.accent);
        put(buf, inner, x, inner.y + 1, &t.glyphs.more_right, t.accent);
    }
    let m = cols.m;
    let (cell_w, left, shown_cols) = (cols.cell_w, cols.left, cols.shown);
    let header_y = inner.y;
    put(
        buf,
        inner,
        inner.x,
        header_y,
        &fit("task", cols.label_w as usize),
        t.dim,
    );
    // The second header row numbers the trials: say so where the task names stand.
    put(
        buf,
        inner,
        inner.x,
        header_y + 1,
        &fit("trial", cols.label_w as usize),
        t.dim,
    );
    let mut x = cols.x0;
    let mut c = left;
    while c < left + shown_cols {
        let grp = cols.group_of(c);
        let mut k = 0;
        while c + k < left + shown_cols && cols.group_of(c + k) == grp {
            k += 1;
        }
        let w = (k as u16) * cell_w;
        put(
            buf,
            inner,
            x,
            header_y,
            &fit(&short_label(cols.s, &m.columns[c].condition), w as usize),
            t.header,
        );
        // Trial numbers: all of them when they fit their cells, else 1 and every fifth (10
        // would run into 11 in cells two wide), the trials between marked `·` so that every
        // cell has its mark and `1 · · · 5` reads as trials 1 to 5, not as two trials.
        let all_fit = m.columns[c..c + k]
            .iter()
            .all(|col| (col.trial_index.to_string().len() as u16) < cell_w);
        let mut free_from = x;
        for j in 0..k {
            let i = m.columns[c + j].trial_index;
            let cx = x + j as u16 * cell_w;
            let text = i.to_string();
            if cx < free_from {
                continue;
            }
            if all_fit || i == 1 || i.is_multiple_of(5) {
                put(buf, inner, cx, header_y + 1, &text, t.dim);
                free_from = cx + text.len() as u16 + 1;
            } else {
                put(buf, inner, cx, header_y + 1, "·", t.dim);
                free_from = cx + 1;
            }
        }
        x += w + GROUP_GAP;
        c += k;
    }
}

/// The domain and task rows from `top`, the cursor's row and cell selected.
fn rows(
    buf: &mut Buffer,
    inner: Rect,
    t: &Theme,
    cols: &Columns,
    g: &GridState,
    top: usize,
    body_h: usize,
) {
    let (s, m) = (cols.s, cols.m);
    let (left, label_w) = (cols.left, cols.label_w);
    let cursor_row = m.task_rows.get(g.row).copied().unwrap_or(0);
    let body_y = inner.y + 2;
    for (i, row) in m.rows.iter().enumerate().skip(top).take(body_h) {
        let y = body_y + (i - top) as u16;
        match row {
            GridRow::Domain { name, tasks } => {
                put(
                    buf,
                    inner,
                    inner.x,
                    y,
                    &fit(&format!("{name} ({tasks})"), inner.width as usize),
                    t.header,
                );
            }
            GridRow::Task { task_id, cells, .. } => {
                let selected_row = i == cursor_row;
                let label_style = if selected_row { t.selected } else { t.text };
                put(
                    buf,
                    inner,
                    inner.x,
                    y,
                    &format!(
                        "{:w$}",
                        fit(task_id, label_w as usize - 1),
                        w = label_w as usize - 1
                    ),
                    label_style,
                );
                let mut x = cols.x0;
                for (c, cell) in cells.iter().enumerate().skip(left).take(cols.shown) {
                    if c > left && cols.group_of(c) != cols.group_of(c - 1) {
                        put(buf, inner, x, y, &t.glyphs.divider, t.border);
                        x += GROUP_GAP;
                    }
                    let state = cell.map(|k| m.state(s, k)).unwrap_or(CellState::Missing);
                    let (glyph, mut style) = cell_look(t, state);
                    if selected_row && c == g.col {
                        style = t.selected;
                    }
                    put(buf, inner, x, y, glyph, style);
                    x += cols.cell_w;
                }
            }
        }
    }
}

/// Legend at the bottom when there is room below the rows (two lines on narrow panes): the
/// conditions in full under their short labels, then the cell states.
fn legend(f: &mut Frame, inner: Rect, t: &Theme, cols: &Columns, top: usize, body_h: usize) {
    let (s, m) = (cols.s, cols.m);
    let items: Vec<Vec<Span>> = LEGEND_STATES
        .iter()
        .map(|st| {
            let (glyph, style) = cell_look(t, *st);
            vec![
                Span::styled(glyph.to_string(), style),
                Span::styled(format!(" {} ", st.label()), t.dim),
            ]
        })
        .collect();
    let names: Vec<Vec<Span>> = s
        .run
        .conditions
        .iter()
        .map(|c| {
            vec![
                Span::styled(short_label(s, c), t.header),
                Span::styled(format!(" {}  ", condition_label(c)), t.dim),
            ]
        })
        .collect();
    let mut legend = flow(names, inner.width as usize, "");
    legend.extend(flow(items, inner.width as usize, ""));
    let rows_drawn = m.rows.len().saturating_sub(top).min(body_h);
    if rows_drawn + legend.len() <= body_h {
        let h = legend.len() as u16;
        let area = Rect {
            y: inner.y + inner.height - h,
            height: h,
            ..inner
        };
        f.render_widget(Paragraph::new(legend), area);
    }
}

/// Writes `s` at (x, y), clipped to `clip`.
fn put(buf: &mut Buffer, clip: Rect, x: u16, y: u16, s: &str, style: Style) {
    if y < clip.y || y >= clip.bottom() || x < clip.x || x >= clip.right() {
        return;
    }
    let max = (clip.right() - x) as usize;
    buf.set_stringn(x, y, s, max, style);
}
