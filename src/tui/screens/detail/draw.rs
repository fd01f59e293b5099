//! Trial detail: the attempt's identity, outcome, what a running agent is doing now (phase,
//! steps, last tool call, tokens and cost so far, time since its last output, stalled since
//! when), phases and attempt history (summary tab), and its
//! verifier output, agent output and build log (scrollable, searchable, live while the attempt
//! runs). Log text was sanitized when read; nothing from a container reaches the terminal raw.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Tabs};

use super::{DETAIL_TABS, DetailState};
use crate::domain::{SkillUseRow, TrialRow};
use crate::skillsbench::condition::condition_label;
use crate::tui::screens::{Hits, Shared, record_tabs};
use crate::tui::theme::Theme;
use crate::tui::widgets::{clock, fit, framed, live_line, wrap};
use crate::tui::worker::Detail;

fn secs_between(a: &Option<String>, b: &Option<String>) -> Option<f64> {
    let a = chrono::DateTime::parse_from_rfc3339(a.as_deref()?).ok()?;
    let b = chrono::DateTime::parse_from_rfc3339(b.as_deref()?).ok()?;
    Some((b - a).num_milliseconds() as f64 / 1000.0)
}

fn dur(a: &Option<String>, b: &Option<String>) -> String {
    secs_between(a, b)
        .map(|s| format!("{s:.2}s"))
        .unwrap_or_else(|| "—".into())
}

/// Draws the detail view into `area`.
pub fn draw(f: &mut Frame, area: Rect, cx: Shared, det: &mut DetailState, hits: &mut Hits) {
    let t = cx.theme;
    let key = &det.key;
    // The condition by its short label and in full.
    let short = cx.snapshot.and_then(|s| {
        s.run
            .conditions
            .iter()
            .position(|c| *c == key.condition)
            .and_then(|i| s.labels.get(i).cloned())
    });
    let title = format!(
        "{} · {}{} · trial {}",
        key.task_id,
        short.map(|l| format!("{l} ")).unwrap_or_default(),
        condition_label(&key.condition),
        key.trial_index
    );
    let block = framed(t, &title, true);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let [tabs_area, body] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(inner);
    let tabs = Tabs::new(DETAIL_TABS.iter().map(|s| Span::raw(*s)))
        .select(det.tab)
        .style(t.dim)
        .highlight_style(t.selected)
        .divider(Span::styled(t.glyphs.divider.clone(), t.border));
    f.render_widget(tabs, tabs_area);
    record_tabs(hits, tabs_area, &DETAIL_TABS);
    det.page = body.height.saturating_sub(1) as usize;
    let Some(data) = det.data.clone() else {
        f.render_widget(Paragraph::new(Span::styled("loading…", t.dim)), body);
        return;
    };
    if det.tab == 0 {
        f.render_widget(
            Paragraph::new(summary(cx, &data, body.width as usize, det.wrap)),
            body,
        );
        return;
    }
    let label = DETAIL_TABS[det.tab];
    let Some(log) = data.logs.iter().find(|l| l.label == label) else {
        f.render_widget(
            Paragraph::new(Span::styled(
                "no trial folder recorded for this attempt",
                t.dim,
            )),
            body,
        );
        return;
    };
    let lines: Vec<&str> = log.text.lines().collect();
    let running = data.latest().is_some_and(|a| a.status.is_active());
    let needle = det.search.as_ref().map(|s| s.to_lowercase());
    let width = body.width as usize;
    // The log's path in full when it fits beside the line counts; else on a line of its own,
    // wrapped — never cut.
    let path = log.path.display().to_string();
    let page_of = |rows: usize| (body.height as usize).saturating_sub(rows).max(1);
    let stats = |top: usize, last: usize| {
        let mut spans = vec![Span::styled(
            format!(
                "lines {}-{} of {}{}{}{}{}",
                if lines.is_empty() { 0 } else { top + 1 },
                last,
                lines.len(),
                if log.truncated { " (end of file)" } else { "" },
                if running { " · live" } else { "" },
                if det.follow { " · following" } else { "" },
                if det.wrap { " · wrapped" } else { "" },
            ),
            t.dim,
        )];
        if let Some(q) = &det.search {
            spans.push(Span::styled(format!("  search \"{q}\""), t.accent));
        }
        spans
    };
    // The longest the counts get (the last page), to place the path beside them or above.
    let stats_w: usize = stats(lines.len(), lines.len())
        .iter()
        .map(|s| s.width())
        .sum();
    let path_rows: Vec<Line> = if wrap::width_of(&path) + 2 + stats_w <= width {
        Vec::new()
    } else {
        wrap::wrap(&Line::from(Span::styled(path.clone(), t.dim)), width)
    };
    let head_rows = path_rows.len() + 1;
    let page = page_of(head_rows);
    let top = det
        .scroll
        .min(lines.len().saturating_sub(page))
        .min(lines.len());
    // The rows shown: each line from `top` on, wrapped (`w`) or cut at the edge, until the page
    // is full; `last` is the last line shown (a wrapped line may show only its first rows).
    let mut shown: Vec<Line> = Vec::new();
    let mut last = top;
    for l in lines.iter().skip(top) {
        if shown.len() >= page {
            break;
        }
        let line = highlight(l, needle.as_deref(), t.text, t.matched);
        if det.wrap {
            let owned = Line::from(
                line.spans
                    .into_iter()
                    .map(|s| Span::styled(s.content.into_owned(), s.style))
                    .collect::<Vec<_>>(),
            );
            shown.extend(wrap::wrap(&owned, width));
        } else {
            shown.push(cut_at(line, width, t.accent));
        }
        last += 1;
    }
    shown.truncate(page);
    det.page = page;
    let mut head: Vec<Line> = path_rows;
    let mut counts = stats(top, last);
    if head.is_empty() {
        counts.insert(0, Span::styled(format!("{path}  "), t.dim));
    }
    head.push(Line::from(counts));
    let [info, text_area] =
        Layout::vertical([Constraint::Length(head_rows as u16), Constraint::Min(1)]).areas(body);
    f.render_widget(Paragraph::new(head), info);
    f.render_widget(Paragraph::new(shown), text_area);
}

/// `line` as it is when it fits `width`, else cut to `width - 1` columns and marked `…` (in
/// `mark`): a log line longer than the pane says so (`w` wraps it whole).
fn cut_at(line: Line<'_>, width: usize, mark: Style) -> Line<'_> {
    if line.width() <= width || width == 0 {
        return line;
    }
    let mut left = width - 1;
    let mut out: Vec<Span> = Vec::new();
    for s in line.spans {
        let w = s.width();
        if w <= left {
            left -= w;
            out.push(s);
            continue;
        }
        let mut text = String::new();
        for c in s.content.chars() {
            let mut buf = [0u8; 4];
            let cw = wrap::width_of(c.encode_utf8(&mut buf));
            if cw > left {
                break;
            }
            left -= cw;
            text.push(c);
        }
        out.push(Span::styled(text, s.style));
        break;
    }
    out.push(Span::styled("…", mark));
    Line::from(out)
}

/// A line with case-insensitive matches of `needle` styled as matches.
fn highlight<'a>(
    line: &'a str,
    needle: Option<&str>,
    normal: ratatui::style::Style,
    hit: ratatui::style::Style,
) -> Line<'a> {
    let Some(needle) = needle.filter(|n| !n.is_empty()) else {
        return Line::from(Span::styled(line, normal));
    };
    let lower = line.to_lowercase();
    // Lower-casing can change byte lengths; only highlight when it did not.
    if lower.len() != line.len() {
        return Line::from(Span::styled(line, normal));
    }
    let mut spans = Vec::new();
    let mut at = 0;
    for (i, _) in lower.match_indices(needle) {
        if i < at {
            continue;
        }
        spans.push(Span::styled(&line[at..i], normal));
        spans.push(Span::styled(&line[i..i + needle.len()], hit));
        at = i + needle.len();
    }
    spans.push(Span::styled(&line[at..], normal));
    Line::from(spans)
}

/// The summary tab: the attempt's identity, live activity, record and history. A value longer
/// than the line is cut with `…`, or wrapped under itself with `w` (`wrap`); the trial folder is
/// always whole (a cut path cannot be pasted).
fn summary(cx: Shared, data: &Detail, width: usize, wrap: bool) -> Vec<Line<'static>> {
    let t = cx.theme;
    let attempts: &[TrialRow] = &data.attempts;
    let Some(a) = attempts.last() else {
        return vec![Line::from(Span::styled("no attempt recorded", t.dim))];
    };
    let mut kvs = identity(cx, a, attempts.len());
    if a.status.is_active() {
        kvs.extend(activity(cx, a, width));
    }
    kvs.extend(record(t, a, &data.skill_uses));
    let mut lines: Vec<Line<'static>> = Vec::new();
    for line in kvs {
        let whole = wrap
            || line
                .spans
                .first()
                .is_some_and(|k| k.content.trim() == "trial dir");
        lines.extend(cut_or_wrap(line, width, whole));
    }
    lines.extend(history(t, a, attempts, width));
    lines
}

/// A `key  value` line of the summary at `width`: as it is when it fits; else wrapped under the
/// value's start (`whole`) or cut with `…`.
fn cut_or_wrap(line: Line<'static>, width: usize, whole: bool) -> Vec<Line<'static>> {
    if line.width() <= width {
        return vec![line];
    }
    let mut spans = line.spans.into_iter();
    let head = spans.next().unwrap_or_default();
    let head_w = head.width();
    let rest: Vec<Span<'static>> = spans.collect();
    let room = width.saturating_sub(head_w).max(8);
    if whole {
        return wrap::hanging_line(vec![head], Line::from(rest), width);
    }
    // Cut: the spans up to `room - 1` columns, then `…` in the last span's style.
    let mut out = vec![head];
    let mut left = room.saturating_sub(1);
    let mut style = Style::default();
    for s in rest {
        style = s.style;
        let w = s.width();
        if w <= left {
            left -= w;
            out.push(s);
        } else {
            out.push(Span::styled(
                fit(&s.content, left + 1).trim_end_matches('…').to_string(),
                s.style,
            ));
            break;
        }
    }
    out.push(Span::styled("…", style));
    vec![Line::from(out)]
}

/// A line of the summary: the key in a column of 12, then the value whole ([`cut_or_wrap`]
/// fits it to the screen).
fn kv(t: &Theme, k: &str, v: String, style: Style) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{k:<12}"), t.dim),
        Span::styled(v, style),
    ])
}

/// Which task (domain, difficulty), condition, trial and attempt, and the outcome with its reward.
fn identity(cx: Shared, a: &TrialRow, n_attempts: usize) -> Vec<Line<'static>> {
    let t = cx.theme;
    let kv = |k: &str, v: String, style| kv(t, k, v, style);
    let task = cx
        .snapshot
        .and_then(|s| s.tasks.iter().find(|x| x.task_id == a.task_id));
    // The pass rule of the grid and the report decides what the line says and its colour.
    let rule = cx.snapshot.map(|s| s.success).unwrap_or_default();
    let (outcome, succeeded) = crate::tui::model::outcome_words(a, &rule);
    let outcome_style = match succeeded {
        Some(true) => t.pass,
        Some(false) => t.fail,
        None => t.running,
    };
    let mut lines = vec![
        kv(
            "task",
            format!(
                "{}{}",
                a.task_id,
                task.map(|x| format!(" ({}, {})", x.domain, x.difficulty))
                    .unwrap_or_default()
            ),
            t.text,
        ),
        kv(
            "condition",
            format!(
                "{} · trial {} · attempt {} of {}",
                condition_label(&a.condition),
                a.trial_index,
                a.attempt,
                n_attempts
            ),
            t.text,
        ),
        kv("outcome", outcome, outcome_style),
    ];
    // The agent changed what a task's work never touches: judged a failure, with what it changed.
    if let Some(flag) = a
        .tamper
        .as_ref()
        .and_then(crate::domain::TamperFlag::of_json)
    {
        let (key, verdict) = match flag.kind {
            crate::domain::FlagKind::Tampered => ("tampered", "judged a failure"),
            crate::domain::FlagKind::Contradicted => {
                ("contradicted", "verdict contradicted, not a pass")
            }
        };
        lines.push(kv(
            key,
            format!(
                "{verdict} · {}",
                crate::sanitize::one_line(&flag.describe())
            ),
            t.fail,
        ));
    }
    lines
}

/// What a running agent is doing now (the attempt is re-read on every poll while it runs): its
/// live line, last tool call and since when it is stalled.
fn activity(cx: Shared, a: &TrialRow, width: usize) -> Vec<Line<'static>> {
    let t = cx.theme;
    let kv = |k: &str, v: String, style| kv(t, k, v, style);
    let mut lines = Vec::new();
    // What the agent is doing now (the attempt is re-read on every poll while it runs).
    let activity = crate::store::queries::AttemptActivity {
        id: a.id,
        condition: a.condition.clone(),
        status: a.status,
        tokens: match (a.n_input_tokens, a.n_output_tokens) {
            (None, None) => None,
            (i, o) => Some(i.unwrap_or(0) + o.unwrap_or(0)),
        },
        cost_usd: a.cost_usd,
        spend_from: a.agent_started_at.clone(),
        spend_to: None,
        live_steps: a.live_steps,
        live_tool: a.live_tool.as_deref().map(crate::sanitize::one_line),
        last_output_at: a.last_output_at.clone(),
        stalled_at: a.stalled_at.clone(),
    };
    let rule = cx.snapshot.map(|s| s.success).unwrap_or_default();
    let state =
        crate::tui::model::CellState::of(&a.brief(), &rule).with_stall(a.stalled_at.is_some());
    let mut live = live_line(t, state, Some(&activity), cx.now, width.saturating_sub(12));
    live.spans
        .insert(0, Span::styled(format!("{:<12}", "activity"), t.dim));
    lines.push(live);
    if let Some(tool) = &activity.live_tool {
        lines.push(kv("last tool", tool.clone(), t.accent));
    }
    if let Some(since) = &a.stalled_at {
        lines.push(kv(
            "stalled",
            format!(
                "since {} · silent; it keeps running until its agent timeout",
                clock(since)
            ),
            t.stalled,
        ));
    }
    lines
}

/// The attempt's record: error, phase durations, start, image and container, skills used, the
/// agent's counts, tests and its trial folder.
fn record(t: &Theme, a: &TrialRow, uses: &[SkillUseRow]) -> Vec<Line<'static>> {
    let kv = |k: &str, v: String, style| kv(t, k, v, style);
    let mut lines = Vec::new();
    if let Some(e) = &a.error {
        lines.push(kv(
            "error",
            crate::sanitize::text(e)
                .lines()
                .next()
                .unwrap_or_default()
                .to_string(),
            t.fail,
        ));
    }
    lines.push(kv(
        "phases",
        format!(
            "environment {} · agent {} (exit {}) · verifier {} (exit {}) · total {}",
            dur(&a.build_started_at, &a.build_finished_at),
            dur(&a.agent_started_at, &a.agent_finished_at),
            a.agent_exit_code
                .map(|c| c.to_string())
                .unwrap_or_else(|| "—".into()),
            dur(&a.verifier_started_at, &a.verifier_finished_at),
            a.verifier_exit_code
                .map(|c| c.to_string())
                .unwrap_or_else(|| "—".into()),
            dur(&a.started_at, &a.finished_at),
        ),
        t.text,
    ));
    lines.push(kv(
        "started",
        a.started_at
            .clone()
            .unwrap_or_else(|| format!("queued {}", a.queued_at)),
        t.text,
    ));
    if let Some(img) = &a.image {
        lines.push(kv("image", img.clone(), t.text));
    }
    if let Some(c) = &a.container_id {
        lines.push(kv(
            "container",
            format!(
                "{} on {}",
                &c[..c.len().min(12)],
                a.host.as_deref().unwrap_or("?")
            ),
            t.text,
        ));
    }
    let skills = if uses.is_empty() {
        "none detected".to_string()
    } else {
        uses.iter()
            .map(|u| {
                format!(
                    "{} ({}{})",
                    u.skill,
                    u.kind,
                    u.first_step
                        .map(|s| format!(", step {s}"))
                        .unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join(" · ")
    };
    lines.push(kv(
        "skills used",
        skills,
        if uses.is_empty() { t.dim } else { t.accent },
    ));
    if a.n_input_tokens.is_some() || a.n_output_tokens.is_some() || a.n_steps.is_some() {
        // What the agent did not report is unknown: `—`, never `?` or 0 (docs/dashboard.md).
        let n = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_else(|| "—".into());
        // `1 step`, `2 steps`, `— steps`.
        let of = |v: Option<i64>, one: &str, many: &str| match v {
            Some(v) => crate::format::count(usize::try_from(v).unwrap_or(0), one, many),
            None => format!("— {many}"),
        };
        let tokens = match (a.n_input_tokens, a.n_cache_tokens, a.n_output_tokens) {
            (None, None, None) => "tokens — (none reported)".to_string(),
            (i, c, o) => format!("tokens in {} (cached {}) out {}", n(i), n(c), n(o)),
        };
        lines.push(kv(
            "agent",
            format!(
                "{} · {} · {tokens} · cost {}",
                of(a.n_steps, "step", "steps"),
                of(a.n_tool_calls, "tool call", "tool calls"),
                a.cost_usd
                    .map(|c| format!("${c:.4}"))
                    .unwrap_or_else(|| "—".into())
            ),
            t.text,
        ));
    }
    if let (Some(total), Some(passed)) = (a.tests_total, a.tests_passed) {
        lines.push(kv(
            "tests",
            format!("{passed}/{total} passed (ctrf.json)"),
            t.text,
        ));
    }
    if let Some(d) = &a.trial_dir {
        lines.push(kv("trial dir", d.clone(), t.accent));
        lines.push(kv(
            "",
            "config.json · result.json · agent/ · verifier/ · environment/build.log".into(),
            t.dim,
        ));
    }
    lines
}

/// Every attempt of the trial, the one shown highlighted.
fn history(t: &Theme, a: &TrialRow, attempts: &[TrialRow], width: usize) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    lines.push(Line::default());
    lines.push(Line::from(Span::styled("attempts", t.header)));
    lines.push(Line::from(Span::styled(
        format!(
            "{:>3}  {:<16} {:>7}  {:<24} {:>9}  {}",
            "#", "outcome", "reward", "started", "duration", "trial"
        ),
        t.dim,
    )));
    for x in attempts {
        let style = if x.id == a.id { t.accent } else { t.text };
        lines.push(Line::from(Span::styled(
            fit(
                &format!(
                    "{:>3}  {:<16} {:>7}  {:<24} {:>9}  {}",
                    x.attempt,
                    x.outcome
                        .map(|o| o.as_str().to_string())
                        .unwrap_or_else(|| x.status.to_string()),
                    x.reward
                        .map(|r| format!("{r}"))
                        .unwrap_or_else(|| "—".into()),
                    x.started_at.as_deref().unwrap_or("—"),
                    dur(&x.started_at, &x.finished_at),
                    x.trial_name
                ),
                width,
            ),
            style,
        )));
    }
    lines
}
