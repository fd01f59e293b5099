//! Footer: the filter or search being typed (with why it cannot apply, if so), else key hints for
//! the current context from the keymap — as many as fit, the most needed first (help, and the key
//! to the other panes, always), shown in their usual order — and above that row the status
//! message while there is one (on up to two rows; it goes after a few seconds or at the next
//! key, [`crate::tui::app::STATUS_SECS`]).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::tui::app::{App, Mode, Popup};
use crate::tui::keymap::{Action, Context, hints};
use crate::tui::widgets::{fit, wrap};

/// The footer's hints for `app`, most needed first.
fn wanted(app: &App) -> (Context, Vec<Action>) {
    let ctx = app.context();
    let learning = app
        .snapshot
        .as_ref()
        .is_some_and(|s| !s.spaces.is_empty() || !s.generated.is_empty());
    if app.snapshot.is_none() && app.detail.is_none() {
        return (ctx, vec![Action::Quit, Action::Help]);
    }
    let actions: Vec<Action> = match ctx {
        Context::Confirm => vec![Action::Yes, Action::No],
        Context::Results => vec![
            Action::Back,
            Action::Help,
            Action::PageDown,
            Action::ToggleDifficulty,
            Action::Top,
        ],
        // Without a learning space the browser is one list of the skills the trials saw.
        Context::Skills
            if app
                .snapshot
                .as_ref()
                .is_some_and(|s| s.skill_sets().is_empty()) =>
        {
            vec![Action::Back, Action::Help, Action::PageDown, Action::Top]
        }
        Context::Skills => vec![
            Action::Back,
            Action::Help,
            Action::Open,
            Action::NextTab,
            Action::ToggleDiff,
            Action::CloseView,
        ],
        Context::Detail => vec![
            Action::Back,
            Action::Help,
            Action::NextTab,
            Action::Search,
            Action::ToggleWrap,
            Action::ToggleFollow,
            Action::Retry,
        ],
        Context::Events => {
            let mut v = vec![
                Action::Quit,
                Action::Help,
                Action::NextPane,
                Action::Filter,
                Action::PageDown,
                Action::Top,
                Action::OpenResults,
            ];
            if learning {
                v.push(Action::OpenSkills);
            }
            v
        }
        Context::Domains => {
            let mut v = vec![
                Action::Quit,
                Action::Help,
                Action::NextPane,
                Action::ToggleDifficulty,
                Action::Events,
                Action::OpenResults,
            ];
            if learning {
                v.push(Action::OpenSkills);
            }
            v
        }
        Context::Grid | Context::Global => {
            let mut v = vec![
                Action::Quit,
                Action::Help,
                Action::NextPane,
                Action::Open,
                Action::Filter,
                Action::Events,
                Action::OpenResults,
            ];
            if learning {
                v.push(Action::OpenSkills);
            }
            v.extend([
                Action::Retry,
                Action::CycleStatus,
                Action::RetryAllFailed,
                Action::CycleSort,
                Action::Cancel,
            ]);
            v
        }
    };
    (ctx, actions)
}

/// The hints that fit `width`, in the order the keymap lists them; the mode tag when it fits too.
fn hint_line(app: &App, width: usize) -> Line<'static> {
    let t = &app.theme;
    let (ctx, actions) = wanted(app);
    let mut all = hints(ctx, &actions);
    // What `q` does in run mode, said where the key is: stop a run with trials left, finish one
    // whose every trial has its verdict, close once the engine has ended.
    let quit_key = hints(ctx, &[Action::Quit]).pop().map(|(k, _)| k);
    if app.mode == Mode::Run
        && let Some(i) = all.iter().position(|(k, _)| Some(k) == quit_key.as_ref())
    {
        let p = &app.progress;
        all[i].1 = if app.ended.is_some() {
            "close"
        } else if p.running + p.queued == 0 && app.snapshot.is_some() && !app.works_past_its_trials
        {
            "finish the run"
        } else {
            "stop the run"
        };
    }
    let item_w = |(k, h): &(String, &str)| k.chars().count() + 1 + h.chars().count() + 2;
    let mut used = 0;
    let mut keep: Vec<usize> = Vec::new();
    for (i, h) in all.iter().enumerate() {
        if used + item_w(h) <= width {
            used += item_w(h);
            keep.push(i);
        }
    }
    // Usual order: the position of each action in the keymap table.
    let pos = |a: &Action| {
        crate::tui::keymap::KEYMAP
            .iter()
            .position(|b| b.action == *a && (b.context == ctx || b.context == Context::Global))
            .unwrap_or(usize::MAX)
    };
    keep.sort_by_key(|&i| pos(&actions[i]));
    let mut spans = Vec::new();
    for i in keep {
        let (key, help) = &all[i];
        spans.push(Span::styled(key.clone(), t.accent));
        spans.push(Span::styled(format!(" {help}  "), t.dim));
    }
    let mode = format!(
        "[{} · {}]",
        match app.mode {
            Mode::Run => "run",
            Mode::Watch => "watch",
        },
        app.theme.name
    );
    if used + mode.chars().count() <= width {
        spans.push(Span::styled(mode, t.dim));
    }
    Line::from(spans)
}

/// The input line of a filter being typed: the text with a cursor, then why it cannot apply, or
/// what it takes.
fn input_line(
    app: &App,
    label: &'static str,
    buf: &str,
    error: Option<&str>,
    syntax: &'static str,
    width: usize,
) -> Line<'static> {
    let t = &app.theme;
    let mut spans = vec![
        Span::styled(label, t.accent),
        Span::styled(format!("{buf}█"), t.text),
    ];
    let used = label.chars().count() + buf.chars().count() + 1;
    let room = width.saturating_sub(used + 2);
    match error {
        Some(e) => spans.push(Span::styled(format!("  {}", fit(e, room)), t.fail)),
        None => spans.push(Span::styled(format!("  {}", fit(syntax, room)), t.dim)),
    }
    Line::from(spans)
}

/// The most rows a status message takes; a longer one is cut with `…` on the last. The key
/// hints keep their row below it.
const STATUS_ROWS: usize = 2;

/// The status message wrapped to `width` (at most [`STATUS_ROWS`] rows), when there is one and no
/// input line is being typed.
fn status_rows(app: &App, width: usize) -> Option<Vec<Line<'static>>> {
    let editing = app.grid.editing.is_some()
        || app.events.editing.is_some()
        || app.detail.as_ref().is_some_and(|d| d.editing.is_some());
    let msg = app.status.as_ref().filter(|_| !editing)?;
    let mut rows = wrap::wrap(
        &Line::from(Span::styled(msg.clone(), app.theme.warn)),
        width.max(1),
    );
    if rows.len() > STATUS_ROWS {
        rows.truncate(STATUS_ROWS);
        let last = rows[STATUS_ROWS - 1].to_string();
        rows[STATUS_ROWS - 1] = Line::from(Span::styled(
            fit(&format!("{last} …"), width),
            app.theme.warn,
        ));
    }
    Some(rows)
}

/// The footer's height at `width`: the hint (or input) row, and above it as many rows as the
/// status message needs (at most [`STATUS_ROWS`]), so a message is read whole and never covers
/// the keys.
pub fn height(app: &App, width: u16) -> u16 {
    1 + status_rows(app, width as usize).map_or(0, |r| r.len() as u16)
}

/// Draws the footer into `area` ([`height`] rows).
pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let w = area.width as usize;
    let line = if let Some(buf) = &app.grid.editing {
        input_line(
            app,
            "filter /",
            buf,
            app.grid.error.as_deref(),
            "text, domain:…, status:…, cond:…, diff:… · Enter keeps · Esc undoes · C-u clears",
            w,
        )
    } else if let Some(buf) = &app.events.editing {
        input_line(
            app,
            "events /",
            buf,
            app.events.error.as_deref(),
            "text, level:warn, level:error · Enter keeps · Esc undoes · C-u clears",
            w,
        )
    } else if let Some(buf) = app.detail.as_ref().and_then(|d| d.editing.as_ref()) {
        Line::from(vec![
            Span::styled("search /", t.accent),
            Span::styled(format!("{buf}█"), t.text),
        ])
    } else if app.popup == Some(Popup::Help) {
        Line::from(Span::styled(
            fit("↑↓ PgUp PgDn scroll the keys · any other key closes", w),
            t.dim,
        ))
    } else {
        hint_line(app, w)
    };
    // The status message above the last row, which keeps the keys (or the input being typed).
    let mut rows = status_rows(app, w).unwrap_or_default();
    rows.truncate(area.height.saturating_sub(1) as usize);
    rows.push(line);
    f.render_widget(Paragraph::new(rows), area);
}
