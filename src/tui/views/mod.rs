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
pub mod wrap;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::app::{App, Popup};
use super::model::CellState;
use super::state::{Hits, Pane, Shared};
use super::theme::Theme;

/// Below either size the panes are shown one at a time.
pub const WIDE: (u16, u16) = (100, 30);

/// True when the terminal is too small for panes side by side.
pub fn compact(area: Rect) -> bool {
    area.width < WIDE.0 || area.height < WIDE.1
}

/// Draws the whole dashboard.
pub fn draw(f: &mut Frame, app: &mut App) {
    let mut hits = Hits::default();
    let area = f.area();
    let [body, foot] = Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(area);
    let cx = Shared {
        theme: &app.theme,
        snapshot: app.snapshot.as_deref(),
        now: app.now,
    };
    if let Some(det) = app.detail.as_mut() {
        detail::draw(f, body, cx, det, &mut hits);
    } else if let Some(r) = app.results.as_mut() {
        results::draw(f, body, cx, r);
    } else if let Some(sk) = app.skills.as_mut() {
        skills::draw(f, body, cx, sk, &mut hits);
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
        main(f, body, app, &mut hits);
    }
    footer::draw(f, foot, app);
    match &app.popup {
        Some(Popup::Help) => hits.help = Some(help::draw(f, area, app)),
        Some(Popup::Confirm(c)) => confirm::draw(f, area, app, c),
        None => {}
    }
    app.hits = hits;
}

/// The main screen in `body`: the overview above the grid, the domain pane and the event log.
fn main(f: &mut Frame, body: Rect, app: &mut App, hits: &mut Hits) {
    let area = f.area();
    {
        let small = compact(area);
        let learning = app
            .snapshot
            .as_ref()
            .map_or(0, |s| overview::learning_rows(s));
        let overview_h = app
            .snapshot
            .as_ref()
            .map_or(0, |s| overview::height(app, small, s, area.width))
            + learning;
        let [top, main] =
            Layout::vertical([Constraint::Length(overview_h), Constraint::Min(3)]).areas(body);
        overview::draw(f, top, app, small);
        let cx = Shared {
            theme: &app.theme,
            snapshot: app.snapshot.as_deref(),
            now: app.now,
        };
        if small {
            hits.panes.push((main, app.pane));
            match app.pane {
                Pane::Grid => grid::draw(f, main, cx, &app.grid_model, &mut app.grid, hits, true),
                Pane::Domains => domains::draw(f, main, app, true),
                Pane::Events => events::draw(f, main, cx, &mut app.events, true),
            }
        } else {
            // The grid as wide as its names and cells want (45–62 %), the rest to the right.
            let grid_w = grid::wanted_width(&app.grid_model, cx)
                .clamp(main.width * 45 / 100, main.width * 62 / 100);
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
            let pane = app.pane;
            grid::draw(
                f,
                left,
                cx,
                &app.grid_model,
                &mut app.grid,
                hits,
                pane == Pane::Grid,
            );
            domains::draw(f, r_top, app, pane == Pane::Domains);
            let cx = Shared {
                theme: &app.theme,
                snapshot: app.snapshot.as_deref(),
                now: app.now,
            };
            events::draw(f, r_bottom, cx, &mut app.events, pane == Pane::Events);
        }
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
pub const LEGEND_STATES: [CellState; 10] = [
    CellState::Queued,
    CellState::Building,
    CellState::Agent,
    CellState::Stalled,
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
        CellState::Stalled => (g.stalled.as_str(), theme.stalled),
        CellState::Verifying => (g.verifying.as_str(), theme.running),
        CellState::Pass => (g.pass.as_str(), theme.pass),
        CellState::Fail => (g.fail.as_str(), theme.fail),
        CellState::Timeout => (g.timeout.as_str(), theme.timeout),
        CellState::Error => (g.error.as_str(), theme.error),
        CellState::Cancelled => (g.cancelled.as_str(), theme.cancelled),
    }
}

/// `1234` → `1.2k`, `3_400_000` → `3.4M`.
pub fn tokens_text(n: i64) -> String {
    match n {
        n if n >= 1_000_000 => format!("{:.1}M", n as f64 / 1e6),
        n if n >= 1_000 => format!("{:.1}k", n as f64 / 1e3),
        n => n.to_string(),
    }
}

/// A rate (0–1) as a percentage with one decimal: `0.333` → `33.3%`.
pub fn pct_text(rate: f64) -> String {
    format!("{:.1}%", rate * 100.0)
}

/// A difference in percentage points with its sign and one decimal: `+33.3`.
pub fn pp_text(d: f64) -> String {
    format!("{d:+.1}")
}

/// Dollars with cents, or four decimals under a dime.
pub fn usd_text(usd: f64) -> String {
    if usd < 0.1 {
        format!("${usd:.4}")
    } else {
        format!("${usd:.2}")
    }
}

/// `HH:MM:SS` (UTC) of an RFC 3339 time; the text itself when it does not parse.
pub fn clock(rfc3339: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| t.with_timezone(&chrono::Utc).format("%H:%M:%S").to_string())
        .unwrap_or_else(|_| crate::text::sanitize(rfc3339))
}

/// Which of `items` (priority, width) fit in `width` when taken by priority (0 first), each left
/// out when it does not fit, with ` · ` (3 columns) between kept ones; and the width they use.
fn keep_by_priority(items: &[(u8, usize)], width: usize) -> (Vec<bool>, usize) {
    let mut used = 0;
    let mut keep = vec![false; items.len()];
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| items[i].0);
    for i in order {
        let w = items[i].1 + if used > 0 { 3 } else { 0 };
        if used + w <= width {
            keep[i] = true;
            used += w;
        }
    }
    (keep, used)
}

/// `items` joined by ` · `, `keep`ing only some.
fn join_kept(t: &Theme, items: Vec<Vec<Span<'static>>>, keep: &[bool]) -> Vec<Span<'static>> {
    let mut out = Vec::new();
    for (item, k) in items.into_iter().zip(keep) {
        if !k {
            continue;
        }
        if !out.is_empty() {
            out.push(Span::styled(" · ", t.dim));
        }
        out.extend(item);
    }
    out
}

/// Spans that fit in `width`: `items` (priority, spans) taken by priority (0 first), each left out
/// whole when it does not fit (nothing is cut mid-word); shown in their given order, separated by
/// ` · `.
pub fn fit_items(
    t: &Theme,
    items: Vec<(u8, Vec<Span<'static>>)>,
    width: usize,
) -> Vec<Span<'static>> {
    let widths: Vec<(u8, usize)> = items
        .iter()
        .map(|(p, spans)| (*p, spans.iter().map(|s| s.width()).sum()))
        .collect();
    let (keep, _) = keep_by_priority(&widths, width);
    join_kept(t, items.into_iter().map(|(_, s)| s).collect(), &keep)
}

/// Narrowest room the last tool call is shown in (cut with an ellipsis to fit).
const TOOL_MIN_W: usize = 12;

/// What a running attempt is doing, as one line of at most `width` columns: its phase (glyph and
/// label; `stalled since HH:MM:SS` when stalled), the agent's steps so far, its last tool call
/// (sanitized when read, cut to the room left), tokens and cost so far, and how long ago the
/// agent last wrote output. Parts are dropped whole from the least important (tokens, cost, the
/// time since output, steps) when the line is short; the tool call takes what room is left.
pub fn live_line(
    t: &Theme,
    state: CellState,
    a: Option<&crate::store::queries::AttemptActivity>,
    now: chrono::DateTime<chrono::Utc>,
    width: usize,
) -> Line<'static> {
    let (glyph, style) = cell_look(t, state);
    let mut phase = format!("{glyph} {}", state.label());
    if let Some(since) = a
        .and_then(|a| a.stalled_at.as_deref())
        .filter(|_| state == CellState::Stalled)
    {
        phase.push_str(&format!(" since {}", clock(since)));
    }
    // (priority, spans); the tool call goes after the steps.
    let mut items: Vec<(u8, Vec<Span<'static>>)> = vec![(0, vec![Span::styled(phase, style)])];
    let mut tool = None;
    let mut tool_at = 1;
    if let Some(a) = a {
        if let Some(n) = a.live_steps {
            let unit = if n == 1 { "step" } else { "steps" };
            items.push((1, vec![Span::styled(format!("{n} {unit}"), t.text)]));
            tool_at = 2;
        }
        tool = a.live_tool.clone().filter(|s| !s.is_empty());
        if let Some(at) = a
            .last_output_at
            .as_deref()
            .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        {
            let ago = (now - at.with_timezone(&chrono::Utc)).num_milliseconds() as f64 / 1000.0;
            items.push((
                2,
                vec![
                    Span::styled("output ", t.dim),
                    Span::styled(
                        format!("{} ago", hms(ago)),
                        if state == CellState::Stalled {
                            t.stalled
                        } else {
                            t.text
                        },
                    ),
                ],
            ));
        }
        if let Some(n) = a.tokens {
            items.push((
                4,
                vec![
                    Span::styled(tokens_text(n), t.text),
                    Span::styled(" tokens", t.dim),
                ],
            ));
        }
        if let Some(c) = a.cost_usd {
            items.push((3, vec![Span::styled(usd_text(c), t.text)]));
        }
    }
    let reserve = if tool.is_some() { TOOL_MIN_W + 3 } else { 0 };
    let widths: Vec<(u8, usize)> = items
        .iter()
        .map(|(p, spans)| (*p, spans.iter().map(|s| s.width()).sum()))
        .collect();
    let (mut keep, used) = keep_by_priority(&widths, width.saturating_sub(reserve));
    let mut spans: Vec<Vec<Span<'static>>> = items.into_iter().map(|(_, s)| s).collect();
    if let Some(tool) = tool {
        let room = width.saturating_sub(used + 3);
        if room >= TOOL_MIN_W.min(tool.chars().count()) {
            spans.insert(tool_at, vec![Span::styled(fit(&tool, room), t.accent)]);
            keep.insert(tool_at, true);
        }
    }
    Line::from(join_kept(t, spans, &keep))
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
