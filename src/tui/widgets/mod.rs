//! Drawing helpers every view and screen shares: framed blocks, cell glyphs, bars, centred
//! overlays, text cut to a width, number and time formats ([`live`] the one-line account of a
//! running attempt, [`wrap`] line wrapping). They draw from the theme and plain values only; none
//! of them knows a screen's state.

pub mod live;
pub mod table;
pub mod wrap;

pub use live::{fit_items, live_line};

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Block;

use super::model::CellState;
use super::theme::Theme;

/// A bordered block with a title; the border uses the focus style when focused.
pub fn framed<'a>(theme: &Theme, title: &'a str, focused: bool) -> Block<'a> {
    Block::bordered()
        .border_set(theme.glyphs.borders.set())
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
        .unwrap_or_else(|_| crate::sanitize::text(rfc3339))
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

/// How a learning space's verdicts reach Acontext, in words: its status mode (`patch`: the
/// status PATCH of skill-bench servers; `criteria`: an explicit verdict and the project's
/// criteria on released servers) as the operator reads it — `verdicts via status PATCH`, or
/// `via PATCH` where room is short (`wide` false); `—` before the mode is known.
pub fn verdict_route(mode: Option<&str>, wide: bool) -> String {
    let how = match mode {
        None => return "—".to_string(),
        Some("patch") => "status PATCH",
        Some("criteria") if !wide => "criteria",
        Some("criteria") => "verdict + criteria",
        Some(other) => other,
    };
    match (wide, mode) {
        (true, _) => format!("verdicts via {how}"),
        (false, Some("patch")) => "via PATCH".to_string(),
        (false, _) => how.to_string(),
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
