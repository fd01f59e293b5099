//! Drawing: one file per view, each a function of the [`App`] state. This module lays the views out
//! — the grid beside the domain pane and the event log from 100×30 up, one pane at a time (Tab
//! switches) on smaller terminals such as 80×24 — and holds the helpers they share. Drawing
//! records where panes, cells, tabs and list rows went ([`App::hits`]) for the mouse.

pub mod confirm;
pub mod detail;
pub mod domains;
pub mod events;
pub mod footer;
pub mod grid;
pub mod help;
pub mod overview;
pub mod results;
pub mod skills;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::app::{App, Pane, Popup};
use super::model::CellState;
use super::theme::Theme;

/// Below either size the panes are shown one at a time.
pub const WIDE: (u16, u16) = (100, 30);

/// True when the terminal is too small for panes side by side.
pub fn compact(area: Rect) -> bool {
    area.width < WIDE.0 || area.height < WIDE.1
}

/// Draws the whole dashboard.
pub fn draw(f: &mut Frame, app: &App) {
    app.hits.replace(Default::default());
    let area = f.area();
    let [body, foot] = Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(area);
    if let Some(det) = &app.detail {
        detail::draw(f, body, app, det);
    } else if let Some(r) = &app.results {
        results::draw(f, body, app, r);
    } else if let Some(sk) = &app.skills {
        skills::draw(f, body, app, sk);
    } else if app.snapshot.is_none() {
        let msg = app.waiting.clone().unwrap_or_default();
        let p = Paragraph::new(vec![
            Line::from(Span::styled(
                format!("skillscope · {}", app.db_label),
                app.theme.title,
            )),
            Line::from(Span::styled(msg, app.theme.dim)),
        ])
        .block(framed(&app.theme, "skillscope", true));
        f.render_widget(p, body);
    } else {
        let small = compact(area);
        let learning = app
            .snapshot
            .as_ref()
            .map_or(0, |s| overview::learning_rows(s));
        let overview_h = overview::height(small) + learning;
        let [top, main] =
            Layout::vertical([Constraint::Length(overview_h), Constraint::Min(3)]).areas(body);
        overview::draw(f, top, app, small);
        let mut hits = app.hits.borrow_mut();
        if small {
            hits.panes.push((main, app.pane));
            drop(hits);
            match app.pane {
                Pane::Grid => grid::draw(f, main, app, true),
                Pane::Domains => domains::draw(f, main, app, true),
                Pane::Events => events::draw(f, main, app, true),
            }
        } else {
            // The grid as wide as its names and cells want (45–62 %), the rest to the right.
            let grid_w =
                grid::wanted_width(app).clamp(main.width * 45 / 100, main.width * 62 / 100);
            let [left, right] =
                Layout::horizontal([Constraint::Length(grid_w), Constraint::Min(20)]).areas(main);
            // The domain pane as tall as its rows (up to half), the event log below it.
            let domains_h = domains::height(app).min(right.height / 2).max(5);
            let [r_top, r_bottom] =
                Layout::vertical([Constraint::Length(domains_h), Constraint::Min(3)]).areas(right);
            hits.panes.extend([
                (left, Pane::Grid),
                (r_top, Pane::Domains),
                (r_bottom, Pane::Events),
            ]);
            drop(hits);
            grid::draw(f, left, app, app.pane == Pane::Grid);
            domains::draw(f, r_top, app, app.pane == Pane::Domains);
            events::draw(f, r_bottom, app, app.pane == Pane::Events);
        }
    }
    footer::draw(f, foot, app);
    match &app.popup {
        Some(Popup::Help) => help::draw(f, area, app),
        Some(Popup::Confirm(c)) => confirm::draw(f, area, app, c),
        None => {}
    }
}

/// A bordered block with a title; the border uses the focus style when focused.
pub fn framed<'a>(theme: &Theme, title: &'a str, focused: bool) -> Block<'a> {
    Block::bordered()
        .border_style(if focused { theme.focus } else { theme.border })
        .title(Span::styled(format!(" {title} "), theme.title))
}

/// `items` laid into lines of at most `width` columns, each line starting with `indent` (an item
/// never breaks).
pub fn flow<'a>(items: Vec<Vec<Span<'a>>>, width: usize, indent: &'a str) -> Vec<Line<'a>> {
    let mut lines: Vec<Line<'a>> = vec![Line::from(Span::raw(indent))];
    for item in items {
        let w: usize = item.iter().map(|s| s.width()).sum();
        let last = lines.last_mut().expect("one line");
        if last.width() + w > width && last.width() > indent.len() {
            lines.push(Line::from(Span::raw(indent)));
        }
        lines.last_mut().expect("one line").spans.extend(item);
    }
    lines
}

/// The cell states a legend explains, in the order a trial goes through them.
pub const LEGEND_STATES: [CellState; 9] = [
    CellState::Queued,
    CellState::Building,
    CellState::Agent,
    CellState::Verifying,
    CellState::Pass,
    CellState::Fail,
    CellState::Timeout,
    CellState::Error,
    CellState::Cancelled,
];

/// Glyph and style of a cell state.
pub fn cell_look(theme: &Theme, s: CellState) -> (&str, Style) {
    let g = &theme.glyphs;
    match s {
        CellState::Missing => (g.missing.as_str(), theme.dim),
        CellState::Queued => (g.queued.as_str(), theme.queued),
        CellState::Building => (g.building.as_str(), theme.running),
        CellState::Agent => (g.agent.as_str(), theme.running),
        CellState::Verifying => (g.verifying.as_str(), theme.running),
        CellState::Pass => (g.pass.as_str(), theme.pass),
        CellState::Fail => (g.fail.as_str(), theme.fail),
        CellState::Timeout => (g.timeout.as_str(), theme.timeout),
        CellState::Error => (g.error.as_str(), theme.error),
        CellState::Cancelled => (g.cancelled.as_str(), theme.cancelled),
    }
}

/// A text bar of `width` cells filled to `fraction` (glyphs from the theme, so it reads without
/// colour).
pub fn bar<'a>(theme: &Theme, fraction: f64, width: usize) -> Vec<Span<'a>> {
    let f = if fraction.is_finite() {
        fraction.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let full = (f * width as f64).round() as usize;
    vec![
        Span::styled(theme.glyphs.bar_full.repeat(full), theme.bar),
        Span::styled(theme.glyphs.bar_empty.repeat(width - full), theme.bar_empty),
    ]
}

/// `h:mm:ss` (or `m:ss` under an hour).
pub fn hms(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    let (h, m, s) = (s / 3600, (s % 3600) / 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// Truncates to `width` columns with an ellipsis.
pub fn fit(s: &str, width: usize) -> String {
    if width == 0 {
        return String::new();
    }
    let n = s.chars().count();
    if n <= width {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

/// A rectangle of `w`×`h` centred in `area` (clamped to it).
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}
