//! Overview: run identity and state, progress gauges (all trials and per condition), counts,
//! throughput, elapsed time, ETA, running containers; tokens and cost so far, the burn rate, the
//! projected total cost ± its 95 % interval, the budget and the provider limit; and, when the run is part
//! of learning, the experiment's phase strip and one line per learning space (state, trials
//! learned, status mode, the trial being learned, mislabeled trials — loudly — and the export);
//! for a run with a group-sequential design, where each comparison stands and the trials early
//! stops saved.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::skillsbench::condition::condition_label;
use crate::store::Liveness;
use crate::store::learning::{ExperimentRow, SpaceProgress};
use crate::tui::app::{App, Mode};
use crate::tui::model::{Progress, Spend};
use crate::tui::theme::Theme;
use crate::tui::widgets::{bar, clock, fit, fit_items, framed, hms, tokens_text, usd_text, wrap};
use crate::tui::worker::Snapshot;

/// Most learning spaces listed in the overview (the skill browser lists them all).
pub const MAX_SPACES: usize = 4;

/// Lines the learning part adds to the overview: the phase strip when the run belongs to an
/// experiment, and one per space (at most [`MAX_SPACES`]).
pub fn learning_rows(s: &Snapshot) -> u16 {
    (s.experiment.is_some() as usize
        + s.sequential.is_some() as usize
        + s.spaces.len().min(MAX_SPACES)) as u16
}

/// The run's group-sequential design in one line: its stages, then per comparison where it
/// stands — answered (efficacy or futility) at a stage with Z against the bound, or going on
/// from its last look — and the queued trials early stops took out of the queue.
pub fn sequential_line(
    t: &Theme,
    rec: &crate::domain::sequential::SequentialRecord,
    width: usize,
) -> Line<'static> {
    use crate::domain::sequential::LookDecision;
    let d = &rec.design;
    let wide = width >= 100;
    let mut spans = vec![Span::styled(
        if wide {
            format!("sequential {} stages", d.stages())
        } else {
            format!("seq {}st", d.stages())
        },
        t.dim,
    )];
    if !d.early_stop {
        spans.push(Span::styled(" (no early stop)", t.dim));
    }
    for c in &d.comparisons {
        let label = crate::sanitize::one_line(&c.label);
        spans.push(Span::styled(" · ", t.dim));
        let (text, style) = match rec.last_look(&c.label) {
            None => (format!("{label} waits for stage 1"), t.dim),
            Some(l) => {
                let z = l.z.map_or("—".to_string(), |z| format!("{z:.2}"));
                let bound = l.bound.map_or("—".to_string(), |b| format!("{b:.2}"));
                // (wide verb, narrow verb, how Z stands to the bound, colour) per decision.
                let (long, short, relation, style) = match l.decision {
                    LookDecision::Efficacy => ("efficacy at", "eff", "≥", t.pass),
                    LookDecision::Futility => ("futility at", "fut", "vs", t.warn),
                    LookDecision::Continue => ("goes on after", "on", "<", t.running),
                };
                let text = if wide {
                    format!(
                        "{label} {long} {}/{} (Z {z} {relation} {bound})",
                        l.stage,
                        d.stages()
                    )
                } else {
                    format!("{label} {short} {}/{}", l.stage, d.stages())
                };
                (text, style)
            }
        };
        spans.push(Span::styled(text, style));
    }
    let saved: usize = rec.stops.iter().map(|s| s.not_run).sum();
    if saved > 0 {
        spans.push(Span::styled(
            if wide {
                format!(" · {saved} trials not run")
            } else {
                format!(" · {saved} saved")
            },
            t.accent,
        ));
    }
    // Fit the line: drop spans from the end until it fits, marking the cut.
    let mut used: usize = spans.iter().map(|s| s.width()).sum();
    if used > width {
        while used + 1 > width && spans.len() > 1 {
            let s = spans.pop().expect("a span");
            used -= s.width();
        }
        spans.push(Span::styled("…", t.dim));
    }
    Line::from(spans)
}

/// The experiment's phases: finished ones marked with the pass glyph, the current one
/// highlighted, then the note.
pub fn phase_line(t: &Theme, e: &ExperimentRow, width: usize) -> Line<'static> {
    let phases = crate::experiment::PHASES;
    let current = phases.iter().position(|p| *p == e.phase);
    let mut strip: Vec<Span<'static>> = Vec::new();
    for (i, p) in phases.iter().enumerate() {
        if i > 0 {
            strip.push(Span::styled(" ▸ ", t.dim));
        }
        let finished = current.is_some_and(|c| i < c || (i == c && *p == "done"));
        if finished {
            strip.push(Span::styled(format!("{} {p}", t.glyphs.pass), t.pass));
        } else if current == Some(i) {
            strip.push(Span::styled(format!(" {p} "), t.selected));
        } else {
            strip.push(Span::styled(p.to_string(), t.dim));
        }
    }
    if current.is_none() {
        strip.push(Span::styled(format!("  phase {}", e.phase), t.warn));
    }
    let strip_w: usize = strip.iter().map(|s| s.width()).sum();
    let label = if width >= strip_w + 30 {
        "experiment "
    } else {
        ""
    };
    let name_w = e
        .name
        .chars()
        .count()
        .min(24)
        .min(width.saturating_sub(strip_w + label.len() + 2));
    let mut spans = vec![
        Span::styled(label, t.dim),
        Span::styled(fit(&e.name, name_w), t.accent),
        Span::raw("  "),
    ];
    spans.extend(strip);
    let used: usize = spans.iter().map(|s| s.width()).sum();
    if let Some(note) = &e.note {
        let room = width.saturating_sub(used + 3);
        if room >= 8 {
            spans.push(Span::styled(" · ", t.dim));
            spans.push(Span::styled(fit(note, room), t.warn));
        }
    }
    Line::from(spans)
}

/// One learning space: label, state, trials learned with a bar, status mode, the trial being
/// learned (step and learning status), mislabeled / error / rejected counts and the export
/// folder. Abbreviates below 100 columns; the trial being learned takes what room is left.
pub fn space_line(t: &Theme, p: &SpaceProgress, width: usize) -> Line<'static> {
    let wide = width >= 98;
    let s = &p.space;
    let state_style = if s.error.is_some() {
        t.fail
    } else {
        match s.state.as_str() {
            "learned" => t.pass,
            "learning" => t.running,
            _ => t.dim,
        }
    };
    let mode = crate::tui::widgets::verdict_route(s.status_mode.as_deref(), wide);
    let frac = if p.total > 0 {
        p.finished as f64 / p.total as f64
    } else {
        0.0
    };
    let mut head: Vec<Span<'static>> = vec![
        Span::styled(format!("{:<6}", fit(&s.label, 10)), t.accent),
        Span::styled(format!(" {:<8} ", fit(&s.state, 8)), state_style),
        Span::styled(format!("{}/{} ", p.finished, p.total), t.text),
    ];
    head.extend(bar(t, frac, if wide { 12 } else { 6 }));
    head.push(Span::styled(format!(" {mode}"), t.dim));
    let mut tail: Vec<Span<'static>> = Vec::new();
    if p.mislabeled > 0 {
        tail.push(Span::raw(" "));
        tail.push(Span::styled(
            format!("{} {} MISLABELED", t.glyphs.fail, p.mislabeled),
            t.error.add_modifier(Modifier::BOLD),
        ));
    }
    if p.errors > 0 {
        tail.push(Span::styled(
            format!(
                " {} {}",
                p.errors,
                match (wide, p.errors) {
                    (false, _) => "err",
                    (true, 1) => "error",
                    (true, _) => "errors",
                }
            ),
            t.fail,
        ));
    }
    if p.rejected > 0 {
        tail.push(Span::styled(
            format!(" {} {}", p.rejected, if wide { "rejected" } else { "rej" }),
            t.warn,
        ));
    }
    let export = p.export.as_ref().map(|e| {
        let name = std::path::Path::new(&e.dir)
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_else(|| e.dir.clone());
        let name = crate::sanitize::one_line(&name);
        let skills = if e.n_skills == 1 { "skill" } else { "skills" };
        Span::styled(
            if wide {
                format!(" → {} ({} {skills})", fit(&name, 24), e.n_skills)
            } else {
                format!(" → {}", fit(&name, 14))
            },
            t.accent,
        )
    });
    if let Some(next) = &s.next_retry_at {
        // Waiting for Acontext: that, and when it is tried again, instead of the current trial.
        head.push(Span::styled(
            if wide {
                format!(" waiting for Acontext · next retry {}", clock(next))
            } else {
                format!(" waiting · retry {}", clock(next))
            },
            t.warn,
        ));
        head.extend(tail);
        return Line::from(head);
    }
    let used: usize = head.iter().chain(&tail).map(|s| s.width()).sum();
    let room = width.saturating_sub(used + 1);
    let export_w = export.as_ref().map_or(0, |e| e.width());
    match &p.current {
        Some(c) => {
            // The trial being learned first; an older export only when both fit.
            let status = match (&c.learning_status, wide) {
                (Some(ls), true) => format!("{}·{ls}", c.step),
                (Some(ls), false) => ls.clone(),
                (None, _) => c.step.clone(),
            };
            let suffix = format!("#{} {status}", c.trial_index);
            let full = c.task_id.chars().count() + suffix.chars().count() + 1;
            let (text, show_export) = if room >= full + export_w {
                (format!("{}{suffix}", c.task_id), true)
            } else if room >= suffix.chars().count() + 5 {
                let task_w = room - 1 - suffix.chars().count();
                (format!("{}{suffix}", fit(&c.task_id, task_w)), false)
            } else {
                (fit(&suffix, room.saturating_sub(1)), false)
            };
            if !text.is_empty() {
                head.push(Span::raw(" "));
                head.push(Span::styled(text, t.running));
            }
            head.extend(tail);
            if show_export {
                head.extend(export);
            }
        }
        None => {
            if p.total == 0 && room >= 18 + export_w {
                head.push(Span::styled(" no trials planned", t.dim));
            }
            head.extend(tail);
            if room >= export_w {
                head.extend(export);
            }
        }
    }
    Line::from(head)
}

/// The learning lines of the overview (see [`learning_rows`]).
pub fn learning_lines(t: &Theme, s: &Snapshot, width: usize) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    if let Some(e) = &s.experiment {
        lines.push(phase_line(t, e, width));
    }
    if let Some(rec) = &s.sequential {
        lines.push(sequential_line(t, rec, width));
    }
    let n = s.spaces.len();
    for (i, p) in s.spaces.iter().take(MAX_SPACES).enumerate() {
        if i + 1 == MAX_SPACES && n > MAX_SPACES {
            lines.push(Line::from(Span::styled(
                format!("… {} more learning spaces (K: skill browser)", n - i),
                t.dim,
            )));
        } else {
            lines.push(space_line(t, p, width));
        }
    }
    lines
}

/// When an event happened, UTC: `HH:MM:SS` on the day of `now`, `MM-DD HH:MM` before it (runs
/// last days).
pub fn event_time(rfc3339: &str, now: chrono::DateTime<chrono::Utc>) -> String {
    match chrono::DateTime::parse_from_rfc3339(rfc3339) {
        Ok(t) => {
            let t = t.with_timezone(&chrono::Utc);
            if t.date_naive() == now.date_naive() {
                t.format("%H:%M:%S").to_string()
            } else {
                t.format("%m-%d %H:%M").to_string()
            }
        }
        Err(_) => crate::sanitize::text(rfc3339),
    }
}

/// `text` in lines of at most `width` characters, broken at spaces where it can be (a word longer
/// than a line is split).
pub fn wrap_words(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            let used = line.chars().count();
            let sep = usize::from(used > 0);
            if used + sep + word.len() <= width {
                if sep == 1 {
                    line.push(' ');
                }
                line.extend(word.iter());
                break;
            }
            if used > 0 {
                lines.push(std::mem::take(&mut line));
                continue;
            }
            // A word longer than a line.
            let rest = word.split_off(width);
            lines.push(word.iter().collect());
            word = rest;
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// An event's time and level (coloured), the style of its message, and their width.
fn event_head(
    t: &Theme,
    e: &crate::tui::worker::EventRow,
    now: chrono::DateTime<chrono::Utc>,
) -> (Vec<Span<'static>>, ratatui::style::Style, usize) {
    let style = match e.level.as_str() {
        "error" => t.fail,
        "warn" => t.warn,
        _ => t.text,
    };
    let time = event_time(&e.at, now);
    let level = format!("{:<5}", e.level);
    let width = time.chars().count() + level.chars().count() + 2;
    (
        vec![
            Span::styled(time, t.dim),
            Span::raw(" "),
            Span::styled(level, style),
            Span::raw(" "),
        ],
        style,
        width,
    )
}

/// One event as lines of at most `width`: time, level (coloured) and the message, which wraps
/// under itself.
pub fn event_lines(
    t: &Theme,
    e: &crate::tui::worker::EventRow,
    now: chrono::DateTime<chrono::Utc>,
    width: usize,
) -> Vec<Line<'static>> {
    let (head, style, _) = event_head(t, e, now);
    wrap::hanging(head, Span::styled(e.message.clone(), style), width)
}

/// One event as a line: time, level (coloured), message, fitted to `width`.
pub fn event_line(
    t: &Theme,
    e: &crate::tui::worker::EventRow,
    now: chrono::DateTime<chrono::Utc>,
    width: usize,
) -> Line<'static> {
    let (mut spans, style, indent) = event_head(t, e, now);
    spans.push(Span::styled(
        fit(&e.message, width.saturating_sub(indent)),
        style,
    ));
    Line::from(spans)
}

/// Events shown in the overview: the newest one on small screens, three otherwise.
pub fn event_rows(small: bool) -> u16 {
    if small { 1 } else { 3 }
}

/// True when the overview of `s` has money or provider figures to show: tokens or cost, a
/// budget, or a provider limit while the run runs with a `live` engine.
pub fn has_money(s: &Snapshot, live: bool) -> bool {
    !s.spend.is_empty()
        || s.run.max_cost_usd.is_some()
        || (s.run.provider_limit.is_some() && s.run.status == "running" && live)
}

/// Height of the overview of `s` in `width` columns, borders included, before its learning
/// lines: on small screens the counts, the engine, timing and cost line and the newest event;
/// otherwise the run's identity, the counts, one line per condition, timing, the cost line (when
/// [`has_money`]), and the newest events; for a stale run also the command that resumes it
/// ([`resume_lines`]).
pub fn height(app: &App, small: bool, s: &Snapshot, width: u16) -> u16 {
    let stale = Liveness::at(&s.run, app.now, s.owner_alive).is_stale();
    // The resume lines; on large screens they take the place of the timing line, which a stale
    // run has nothing for (unless commands are pending).
    let resume = if stale {
        let n = resume_lines(&s.run, width.saturating_sub(2) as usize).len() as u16;
        n - u16::from(!small && s.pending_commands == 0).min(n)
    } else {
        0
    };
    2 + if small {
        2
    } else {
        4 + u16::from(has_money(s, !stale))
    } + event_rows(small)
        + resume
}

/// The command that resumes a stale run (stored with the run; values of `--env` never are), as
/// `resume: …` wrapped at spaces into lines of at most `width` columns, so it can be read and
/// copied whole.
pub fn resume_lines(run: &crate::domain::RunRow, width: usize) -> Vec<String> {
    let command = run.resume_command.as_deref().map_or_else(
        || {
            format!(
                "skillscope run --run {} (with the options it was started with)",
                run.name
            )
        },
        crate::sanitize::one_line,
    );
    wrap_words(&format!("resume: {command}"), width)
}

/// The money parts of the overview as (priority, spans), for [`fit_items`]: cost so far (finished
/// and running attempts), the budget (in the warning style once the projection passes it), the
/// projected total ± its 95 % interval while trials remain, the burn rate, the provider limit
/// while the run runs, and tokens so far. The projection, burn rate and provider limit are live
/// figures: a run whose engine is gone (not `live`) shows none of them. The priorities rank them
/// among the timing parts of a small screen (engine 0, ETA 1, throughput 6, elapsed 8).
fn money_items(
    t: &Theme,
    s: &Snapshot,
    sp: Option<&crate::tui::model::Spend>,
    small: bool,
    live: bool,
) -> Vec<(u8, Vec<Span<'static>>)> {
    let run = &s.run;
    let mut items: Vec<(u8, Vec<Span<'static>>)> = Vec::new();
    let projection = sp.and_then(|sp| sp.projection.as_ref()).filter(|_| live);
    if let Some(sp) = sp {
        // Unknown is shown as unknown, with the attempts that lack a cost.
        let mut spans = vec![
            Span::styled("cost ", t.dim),
            Span::styled(sp.cost_usd.map_or_else(|| "—".into(), usd_text), t.text),
            Span::styled(if small { "" } else { " so far" }, t.dim),
        ];
        if sp.unpriced > 0 {
            spans.push(Span::styled(format!(" ({} unpriced)", sp.unpriced), t.dim));
        }
        items.push((2, spans));
    }
    if let Some(max) = run.max_cost_usd {
        let over = projection.is_some_and(|p| p.total > max);
        items.push((
            3,
            vec![
                Span::styled("budget ", t.dim),
                Span::styled(usd_text(max), if over { t.warn } else { t.text }),
            ],
        ));
    }
    if let Some(p) = projection.filter(|p| p.total > p.spent + 1e-9) {
        items.push((
            4,
            vec![
                Span::styled("projected ", t.dim),
                Span::styled(usd_text(p.total), t.accent),
                Span::styled(format!(" ± {}", usd_text(p.plus_minus)), t.text),
            ],
        ));
    }
    if let Some(b) = sp.and_then(|sp| sp.burn_usd_per_hour).filter(|_| live) {
        items.push((
            5,
            vec![
                Span::styled("burn ", t.dim),
                Span::styled(format!("{}/h", usd_text(b)), t.text),
            ],
        ));
    }
    if let Some(limit) = run
        .provider_limit
        .filter(|_| run.status == "running" && live)
    {
        items.push((
            7,
            vec![
                Span::styled("provider limit ", t.dim),
                Span::styled(limit.to_string(), t.text),
            ],
        ));
    }
    if let Some(sp) = sp {
        let mut spans = vec![
            Span::styled("tokens ", t.dim),
            Span::styled(sp.tokens.map_or_else(|| "—".into(), tokens_text), t.text),
        ];
        if sp.untokened > 0 {
            spans.push(Span::styled(
                format!(" ({} without counts)", sp.untokened),
                t.dim,
            ));
        }
        items.push((9, spans));
    }
    items
}

/// The engine's state for the operator: its pid and heartbeat when live, what to do when gone;
/// `full` (large screens) with its host and, for a stale run, the pointer to the resume line —
/// small screens keep room for the cost beside it.
fn engine_text(liveness: &Liveness, run: &crate::domain::RunRow, full: bool) -> String {
    let host = run
        .owner_host
        .as_deref()
        .filter(|_| full)
        .map(|h| format!(" on {h}"))
        .unwrap_or_default();
    let below = if full {
        " — the command below resumes the run"
    } else {
        ""
    };
    match (liveness, run.owner_pid) {
        (Liveness::Live { heartbeat_age_secs }, Some(pid)) => {
            format!("engine pid {pid}{host} · heartbeat {heartbeat_age_secs}s ago")
        }
        (Liveness::Live { heartbeat_age_secs }, None) => {
            format!("engine heartbeat {heartbeat_age_secs}s ago")
        }
        (Liveness::Stale { .. }, Some(pid)) => {
            format!("no live engine (pid {pid}{host} gone){below}")
        }
        (Liveness::Stale { .. }, None) => format!("no live engine{below}"),
        (Liveness::Idle, _) => "no engine attached".to_string(),
    }
}

/// The trial counts after the progress bar: done/planned, percentage, pass, fail, cancelled (when
/// any), running and queued — with `short` words and no separators for narrow screens.
fn count_spans(
    t: &Theme,
    p: &crate::tui::model::Progress,
    pct: f64,
    short: bool,
) -> Vec<Span<'static>> {
    let label = |long: &'static str, brief: &'static str, first: bool| {
        let sep = if short || first { " " } else { " · " };
        Span::styled(format!("{sep}{} ", if short { brief } else { long }), t.dim)
    };
    let mut counts = vec![
        Span::styled(format!(" {}/{} ", p.done, p.total), t.accent),
        Span::styled(format!("{:>3.0}% ", pct * 100.0), t.text),
        label("pass", "pass", true),
        Span::styled(p.passed.to_string(), t.pass),
        label("fail", "fail", false),
        Span::styled(
            p.failed.to_string(),
            if p.failed > 0 { t.fail } else { t.text },
        ),
    ];
    if p.cancelled > 0 {
        counts.push(label("cancelled", "canc", false));
        counts.push(Span::styled(p.cancelled.to_string(), t.cancelled));
    }
    counts.extend([
        label("running", "run", false),
        Span::styled(p.running.to_string(), t.running),
        label("queued", "queued", false),
        Span::styled(p.queued.to_string(), t.queued),
    ]);
    counts
}

/// Draws the overview into `area` ([`height`] lines, then the learning lines).
pub fn draw(f: &mut Frame, area: Rect, app: &App, small: bool) {
    let Some(s) = &app.snapshot else { return };
    let t = &app.theme;
    let p = &app.progress;
    let run = &s.run;
    let liveness = Liveness::at(run, app.now, s.owner_alive);
    let title = format!("{} · {}", fit(&run.name, 48), state_text(app, s, &liveness));
    let block = framed(t, &title, false);
    let inner_w = area.width.saturating_sub(2) as usize;
    let total_line = total_line(t, p, inner_w);
    // Timing: only what is known (no throughput before a trial finished, no tokens for agents
    // that report none).
    let spend = crate::tui::model::spend(s, app.now);
    let stale = liveness.is_stale();
    let timing = Line::from(fit_items(
        t,
        timing_items(t, s, p, spend.as_ref(), &liveness, small),
        inner_w,
    ));
    let money = (!small && has_money(s, !stale)).then(|| {
        Line::from(fit_items(
            t,
            money_items(t, s, spend.as_ref(), false, !stale),
            inner_w,
        ))
    });
    let events = recent_events(t, s, app.now, small, inner_w);
    let mut lines = if small {
        vec![Line::from(total_line), timing]
    } else {
        let per_cond = per_condition(t, s, p, spend.as_ref(), inner_w);
        let ident = ident_line(t, s, &liveness);
        let mut v = vec![ident, Line::from(total_line), Line::from(per_cond)];
        if !(stale && timing.spans.is_empty()) {
            v.push(timing);
        }
        v.extend(money);
        v
    };
    if stale {
        lines.extend(
            resume_lines(run, inner_w)
                .into_iter()
                .map(|l| Line::from(Span::styled(l, t.warn))),
        );
    }
    lines.extend(events);
    lines.extend(learning_lines(t, s, inner_w));
    f.render_widget(Paragraph::new(lines).block(block), area);
}

/// The run's state for the title: waiting for Acontext or Docker, stale, stopping, done, or why
/// it finished or stopped.
fn state_text(app: &App, s: &Snapshot, liveness: &Liveness) -> String {
    let (p, run) = (&app.progress, &s.run);
    // Learning that waits for Acontext is the state to see, whatever the round-1 run says.
    let acontext_wait = s
        .spaces
        .iter()
        .filter_map(|p| p.space.waiting_since.as_deref())
        .min();
    match (run.status.as_str(), app.mode, liveness) {
        _ if app.ended.is_some() => {
            format!("{} · q closes", app.ended.as_deref().unwrap_or_default())
        }
        _ if acontext_wait.is_some() => format!(
            "waiting for Acontext since {}",
            acontext_wait.map(clock).unwrap_or_default()
        ),
        (_, _, Liveness::Stale { since, .. }) => format!(
            "stale — engine gone since {}",
            since.as_deref().map(clock).unwrap_or_else(|| "?".into())
        ),
        ("running", Mode::Run, _) if app.stopping => "stopping".to_string(),
        ("running", _, _) if run.waiting_since.is_some() => format!(
            "waiting for Docker since {}",
            run.waiting_since.as_deref().map(clock).unwrap_or_default()
        ),
        ("running", Mode::Run, _) if p.running + p.queued == 0 => {
            let ended = if p.cancelled > 0 {
                format!(
                    "every trial ended ({} cancelled)",
                    crate::format::count(p.cancelled, "trial", "trials")
                )
            } else {
                "every trial judged".to_string()
            };
            // An experiment's engine goes on (learning, export, the next round): q stops it.
            if app.works_past_its_trials {
                format!("{ended} · r retries")
            } else {
                format!("{ended} · q finishes the run, r retries")
            }
        }
        ("running", _, _) if p.running + p.queued == 0 => "running · all trials done".to_string(),
        ("finished", _, _) => match &run.stop_reason {
            Some(r) => crate::sanitize::text(r),
            None => "finished".to_string(),
        },
        ("stopped", _, _) => match &run.stop_reason {
            Some(r) => format!("stopped: {}", crate::sanitize::text(r)),
            None => "stopped".to_string(),
        },
        (st, _, _) => st.to_string(),
    }
}

/// The trials bar and the counts beside it.
fn total_line(t: &Theme, p: &Progress, inner_w: usize) -> Vec<Span<'static>> {
    let pct = if p.total > 0 {
        p.done as f64 / p.total as f64
    } else {
        0.0
    };
    // The counts in words; when they leave the bar less than 8 cells, in short words (`canc`,
    // `run`) without separators, so the bar and its label stay.
    let mut counts = count_spans(t, p, pct, false);
    let width_of = |c: &[Span]| c.iter().map(|s| s.width()).sum::<usize>();
    if inner_w.saturating_sub(width_of(&counts) + 7) < 8 {
        counts = count_spans(t, p, pct, true);
    }
    let counts_w = width_of(&counts);
    let bar_w = inner_w.saturating_sub(counts_w + 7).min(40);
    let mut total_line = Vec::new();
    if bar_w >= 4 {
        total_line.push(Span::styled("trials ", t.dim));
        total_line.extend(bar(t, pct, bar_w));
    }
    total_line.extend(counts);
    total_line
}

/// The timing line's parts (priority, spans): the engine first, then what says when it ends and
/// what it costs.
fn timing_items(
    t: &Theme,
    s: &Snapshot,
    p: &Progress,
    spend: Option<&Spend>,
    liveness: &Liveness,
    small: bool,
) -> Vec<(u8, Vec<Span<'static>>)> {
    let run = &s.run;
    // (priority, spans): the engine first, then what says when it ends and what it costs.
    let mut timing: Vec<(u8, Vec<Span<'static>>)> = Vec::new();
    // A stale run's engine is gone: its throughput, ETA, clock, containers, burn rate and
    // projected cost are not live.
    let stale = liveness.is_stale();
    if small {
        timing.push((
            0,
            vec![Span::styled(
                engine_text(liveness, run, false),
                match liveness {
                    Liveness::Stale { .. } => t.fail,
                    _ => t.text,
                },
            )],
        ));
        // Small screens: money on the timing line, ranked among its parts.
        timing.extend(money_items(t, s, spend, true, !stale));
    }
    if let Some(r) = p.per_minute.filter(|_| !stale) {
        timing.push((
            6,
            vec![
                Span::styled(if small { "" } else { "throughput " }, t.dim),
                Span::styled(format!("{r:.1}/min"), t.text),
            ],
        ));
    }
    if let Some(eta) = p.eta_secs.filter(|_| !stale) {
        timing.push((
            1,
            vec![
                Span::styled("ETA ", t.dim),
                Span::styled(hms(eta), t.accent),
            ],
        ));
    }
    if let Some(e) = p.elapsed_secs.filter(|_| !stale) {
        timing.push((
            8,
            vec![
                Span::styled("elapsed ", t.dim),
                Span::styled(hms(e), t.text),
            ],
        ));
    }
    if !small && !stale {
        timing.push((
            10,
            vec![
                Span::styled("containers ", t.dim),
                Span::styled(p.running.to_string(), t.running),
            ],
        ));
    }
    if s.pending_commands > 0 {
        timing.push((
            1,
            vec![Span::styled(
                format!("{} command(s) pending", s.pending_commands),
                t.warn,
            )],
        ));
    }
    timing
}

/// The last events, one line each (`small`: fewer), newest first — the order of the event log
/// pane, so the two never read in opposite directions.
fn recent_events(
    t: &Theme,
    s: &Snapshot,
    now: chrono::DateTime<chrono::Utc>,
    small: bool,
    inner_w: usize,
) -> Vec<Line<'static>> {
    let n_events = event_rows(small) as usize;
    let mut events: Vec<Line> = s
        .events
        .iter()
        .rev()
        .take(n_events)
        .map(|e| event_line(t, e, now, inner_w))
        .collect();
    if events.is_empty() {
        events.push(Line::from(Span::styled(
            "no events yet (e: event log)",
            t.dim,
        )));
    }
    events
}

/// Each condition's short label and name, progress bar, trials done and cost.
fn per_condition(
    t: &Theme,
    s: &Snapshot,
    p: &Progress,
    spend: Option<&Spend>,
    inner_w: usize,
) -> Vec<Span<'static>> {
    let mut per_cond: Vec<Span> = Vec::new();
    let n = p.per_condition.len().max(1);
    let each = (inner_w / n).saturating_sub(2);
    for (i, (c, done, total)) in p.per_condition.iter().enumerate() {
        let short = s.labels.get(i).cloned().unwrap_or_default();
        let cost = spend
            .and_then(|sp| sp.per_condition.iter().find(|(k, _, _)| k == c))
            .map(|(_, _, usd)| format!(" {}", usd.map_or_else(|| "—".into(), usd_text)))
            .unwrap_or_default();
        let nums = format!(" {done}/{total}{cost}");
        // The short label, then as much of the condition's name as leaves a bar of 8.
        let name_room = each.saturating_sub(short.chars().count() + 1 + nums.len() + 1 + 8);
        let name = fit(&condition_label(c), name_room.min(24));
        let label_w = short.chars().count() + 1 + name.chars().count();
        let w = each.saturating_sub(label_w + nums.len() + 1).min(24);
        per_cond.push(Span::styled(format!("{short} "), t.accent));
        per_cond.push(Span::styled(format!("{name} "), t.text));
        let frac = if *total > 0 {
            *done as f64 / *total as f64
        } else {
            0.0
        };
        per_cond.extend(bar(t, frac, w));
        per_cond.push(Span::styled(nums, t.dim));
        per_cond.push(Span::raw("  "));
    }
    per_cond
}

/// Agent and model, tasks × trials, and the engine's state.
fn ident_line(t: &Theme, s: &Snapshot, liveness: &Liveness) -> Line<'static> {
    let run = &s.run;
    Line::from(vec![
        Span::styled("agent ", t.dim),
        Span::styled(
            format!(
                "{}{}",
                run.agent,
                run.model
                    .as_deref()
                    .map(|m| format!(" · {m}"))
                    .unwrap_or_default()
            ),
            t.text,
        ),
        Span::styled(" · ", t.dim),
        Span::styled(
            crate::format::tasks_by_trials(s.tasks.len(), run.n_trials),
            t.text,
        ),
        Span::styled(" · ", t.dim),
        Span::styled(
            engine_text(liveness, run, true),
            match liveness {
                Liveness::Stale { .. } => t.fail,
                _ => t.dim,
            },
        ),
    ])
}
