//! Footer line: the filter or search being typed, else the status message, else key hints for the
//! current context (from the keymap).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::fit;
use crate::tui::app::{App, Mode};
use crate::tui::keymap::{Action, hints};

/// Draws the footer into the one-line `area`.
pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let w = area.width as usize;
    let line = if let Some(buf) = &app.grid.editing {
        Line::from(vec![
            Span::styled("filter /", t.accent),
            Span::styled(format!("{buf}█"), t.text),
            Span::styled(
                "  (text, domain:…, status:…, cond:…, diff:… · Enter applies · Esc cancels)",
                t.dim,
            ),
        ])
    } else if let Some(buf) = app.detail.as_ref().and_then(|d| d.editing.as_ref()) {
        Line::from(vec![
            Span::styled("search /", t.accent),
            Span::styled(format!("{buf}█"), t.text),
        ])
    } else if let Some(msg) = &app.status {
        Line::from(Span::styled(fit(msg, w), t.warn))
    } else {
        let ctx = app.context();
        let actions: &[Action] = if app.results.is_some() && app.detail.is_none() {
            &[
                Action::Back,
                Action::PageDown,
                Action::Top,
                Action::ToggleDifficulty,
                Action::Help,
            ]
        } else if app.skills.is_some() && app.detail.is_none() {
            &[
                Action::Back,
                Action::Open,
                Action::ToggleDiff,
                Action::NextTab,
                Action::CloseView,
                Action::Help,
            ]
        } else if app.detail.is_some() {
            &[
                Action::Back,
                Action::NextTab,
                Action::Search,
                Action::ToggleFollow,
                Action::Retry,
                Action::Help,
            ]
        } else {
            &[
                Action::Quit,
                Action::Help,
                Action::Open,
                Action::OpenResults,
                Action::Filter,
                Action::CycleStatus,
                Action::Retry,
                Action::RetryAllFailed,
                Action::NextPane,
            ]
        };
        // The skill browser's key, once there is learning to browse.
        let learning = app
            .snapshot
            .as_ref()
            .is_some_and(|s| !s.spaces.is_empty() || !s.generated.is_empty());
        let with_skills: Vec<Action>;
        let actions: &[Action] =
            if learning && app.detail.is_none() && app.skills.is_none() && app.results.is_none() {
                with_skills = actions
                    .iter()
                    .flat_map(|a| match a {
                        Action::Open => vec![Action::Open, Action::OpenSkills],
                        a => vec![*a],
                    })
                    .collect();
                &with_skills
            } else {
                actions
            };
        let mut spans = Vec::new();
        for (key, help) in hints(ctx, actions) {
            spans.push(Span::styled(key, t.accent));
            spans.push(Span::styled(format!(" {help}  "), t.dim));
        }
        let mode = match app.mode {
            Mode::Run => "run",
            Mode::Watch => "watch",
        };
        spans.push(Span::styled(
            format!("[{mode} · {}]", app.theme.name),
            t.dim,
        ));
        Line::from(spans)
    };
    f.render_widget(Paragraph::new(line), area);
}
