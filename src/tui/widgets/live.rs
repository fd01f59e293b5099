//! One line of what a running attempt is doing (phase, steps, last tool call, tokens, cost, time
//! since output), its parts dropped whole by priority when the line is short.

use ratatui::text::{Line, Span};

use super::{cell_look, clock, fit, hms, tokens_text, usd_text};
use crate::tui::model::CellState;
use crate::tui::theme::Theme;

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
