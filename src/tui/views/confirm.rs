//! Confirmation dialog for destructive or wide actions (retry all, cancel, stop the run).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use crate::tui::app::{App, Confirm};
use crate::tui::widgets::{centered, framed};

/// Draws the dialog centred in `area`.
pub fn draw(f: &mut Frame, area: Rect, app: &App, c: &Confirm) {
    let t = &app.theme;
    let q = c.question(app.resumable);
    let w = (q.chars().count() as u16 + 4).clamp(30, 64).min(area.width);
    let text_rows = (q.chars().count() as u16).div_ceil(w.saturating_sub(4).max(1));
    let r = centered(area, w, text_rows + 4);
    f.render_widget(Clear, r);
    let answers: Vec<Span> = c
        .answers()
        .iter()
        .flat_map(|(key, what)| [Span::styled(*key, t.accent), Span::styled(*what, t.text)])
        .collect();
    let lines = vec![
        Line::from(Span::styled(q, t.text)),
        Line::default(),
        Line::from(answers),
    ];
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(framed(t, "confirm", true)),
        r,
    );
}
