//! The event log: what happened during the run, newest first — starts, stops and resumes, Docker
//! hosts going down and coming back, waits for Docker, retries and cancels, provider back-offs,
//! learning phases — each with its time (UTC) and level, scrollable and filterable (`/`: text,
//! `level:warn`). The engine and the learning pipeline store the events (`run_events`); the
//! worker reads only new rows.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::overview::event_lines;
use crate::tui::screens::Shared;
use crate::tui::state::EventsState;
use crate::tui::widgets::{fit, framed};

/// Draws the event log into `area`.
pub fn draw(f: &mut Frame, area: Rect, cx: Shared, ev: &mut EventsState, focused: bool) {
    let Some(s) = cx.snapshot else { return };
    let t = cx.theme;
    let total = s.events.len();
    let shown = ev.rows.len();
    let mut title = format!(
        "event log · {}",
        crate::format::count(total, "event", "events")
    );
    if !ev.filter.is_empty() {
        title = format!(
            "event log · {shown} of {total} · filter \"{}\"",
            ev.query.trim()
        );
    }
    let block = framed(t, &title, focused);
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.height == 0 {
        return;
    }
    let page = inner.height as usize;
    // A page of events (they may wrap: one row each is the most a page holds).
    ev.page = page.saturating_sub(1).max(1);
    if ev.rows.is_empty() {
        let msg = if total == 0 {
            "no events yet: starts, stops, hosts, retries, cancels and back-offs appear here"
        } else {
            "no event matches the filter (Esc clears it)"
        };
        f.render_widget(Paragraph::new(Line::from(Span::styled(msg, t.dim))), inner);
        return;
    }
    let top = ev.scroll.min(shown.saturating_sub(1));
    // Events from `top` on, long messages wrapped, as many as fit.
    let mut lines: Vec<Line> = Vec::new();
    let mut last = top;
    for (k, &i) in ev.rows.iter().enumerate().skip(top) {
        let Some(e) = s.events.get(i) else { continue };
        let ls = event_lines(t, e, cx.now, inner.width as usize);
        if !lines.is_empty() && lines.len() + ls.len() > page {
            break;
        }
        lines.extend(ls);
        last = k;
        if lines.len() >= page {
            break;
        }
    }
    lines.truncate(page);
    // Where in the log this page is, on its last line when not everything shows.
    if top > 0 || last + 1 < shown {
        let more = format!(
            "… events {}–{} of {shown}, newest first (↑↓ PgUp PgDn)",
            top + 1,
            last + 1
        );
        if lines.len() >= page {
            lines.pop();
        }
        lines.push(Line::from(Span::styled(
            fit(&more, inner.width as usize),
            t.dim,
        )));
    }
    f.render_widget(Paragraph::new(lines), inner);
}
