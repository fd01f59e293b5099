//! Drawing: one file per view, each a function of the [`App`] state; the four screens draw
//! themselves ([`crate::tui::screens`]). This module lays the dashboard out — the grid beside the domain pane and the event log from 100×30 up, one pane at a time (Tab
//! switches) on smaller terminals such as 80×24. The drawing helpers they share are in
//! [`crate::tui::widgets`]. Drawing records where panes, cells, tabs and list rows went
//! ([`App::hits`]) for the mouse.

pub mod confirm;
pub mod domains;
pub mod events;
pub mod footer;
pub mod help;
pub mod overview;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::app::{App, Popup};
use super::screens::{Hits, Shared, detail, grid, results, skills};
use super::state::Pane;
use super::widgets::framed;

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
    let foot_h = footer::height(app, area.width);
    let [body, foot] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(foot_h)]).areas(area);
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
                Pane::Domains => {
                    let reach = domains::draw(f, main, app, true);
                    app.domains.max_offset = reach.max_offset;
                    app.domains.max_scroll = reach.max_scroll;
                }
                Pane::Events => events::draw(f, main, cx, &mut app.events, true),
            }
        } else {
            // The grid as wide as its names and cells want (45–62 %), the rest to the right.
            let grid_w = grid::wanted_width(&app.grid_model, cx)
                .clamp(main.width * 45 / 100, main.width * 62 / 100);
            let [left, right] =
                Layout::horizontal([Constraint::Length(grid_w), Constraint::Min(20)]).areas(main);
            // The domain pane as tall as its rows (up to half), the event log below it.
            let domains_h = domains::height(app, right.width)
                .min(right.height / 2)
                .max(5);
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
            let reach = domains::draw(f, r_top, app, pane == Pane::Domains);
            app.domains.max_offset = reach.max_offset;
            app.domains.max_scroll = reach.max_scroll;
            let cx = Shared {
                theme: &app.theme,
                snapshot: app.snapshot.as_deref(),
                now: app.now,
            };
            events::draw(f, r_bottom, cx, &mut app.events, pane == Pane::Events);
        }
    }
}
