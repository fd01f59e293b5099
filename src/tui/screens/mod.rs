//! Screens: the dashboard's features that own their state, their keys and their drawing, as
//! gitui's components do (`Component::event` + `DrawableComponent::draw`). One folder a screen:
//! its `mod.rs` holds the state, `keys.rs` what a key (an [`Action`](crate::tui::keymap::Action) of the keymap) or the mouse
//! does to it, `draw.rs` how it is drawn. A screen knows nothing of the others or of the app: the
//! router ([`crate::tui::app`]) owns the screens, sends each key to the focused one and acts on
//! the [`Reply`] it gets back (close the screen, quit, open the help, retry or cancel a trial).
//!
//! - [`grid`]: the trial grid (tasks × condition and trial), its filter and sort.
//! - [`detail`]: one trial's summary and logs.
//! - [`results`]: the evaluation's analysis of the watched run or experiment.
//! - [`skills`]: the skill browser (learning spaces, skills, files, rubric, sessions).
//!
//! Also here: what every screen draws with besides its own state ([`Shared`]), where the last
//! frame put what a click can hit ([`Hits`]), and what the event loop must do ([`Effect`]).

pub mod detail;
pub mod grid;
pub mod results;
pub mod skills;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::text::Span;

use super::state::Pane;
use super::theme::Theme;
use super::worker::{Request, Snapshot};
use crate::domain::{TrialBrief, TrialKey};
use chrono::{DateTime, Utc};
use grid::GridHits;
use skills::SkillsFocus;

/// What the event loop must do after a key.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Send to the data worker.
    Request(Request),
    /// Stop the engine (run mode) and quit when it has stopped.
    StopRun,
    /// Every planned trial has its verdict: let the engine finish the run (it was kept up only
    /// for retries from this dashboard) and quit when it has.
    FinishRun,
    /// Leave now. In run mode (a second Ctrl-C) the process quits at once without stopping the
    /// engine cleanly; the next `run` of the same command recovers what it left.
    Quit,
}

/// What a screen's key asks of the router besides the changes to its own state.
#[derive(Debug, Default)]
pub struct Reply {
    /// For the event loop (requests to the data worker), in order.
    pub effects: Vec<Effect>,
    /// What the router does next.
    pub then: Then,
}

impl Reply {
    /// Stay on the screen and send `effects`.
    pub fn effects(effects: Vec<Effect>) -> Reply {
        Reply {
            effects,
            then: Then::Stay,
        }
    }

    /// Send `effects`, then do `then`.
    pub fn then(effects: Vec<Effect>, then: Then) -> Reply {
        Reply { effects, then }
    }
}

impl From<Then> for Reply {
    fn from(then: Then) -> Reply {
        Reply::then(Vec::new(), then)
    }
}

/// What the router does after a screen's key.
#[derive(Debug, Default, PartialEq)]
pub enum Then {
    /// Nothing: the screen stays.
    #[default]
    Stay,
    /// Close the screen (its effects already told the worker).
    Close,
    /// Quit the dashboard (in run mode the router asks first while trials run).
    Quit,
    /// Open the key list.
    Help,
    /// Retry this trial, if it finished and failed.
    Retry(Option<TrialBrief>),
    /// Ask whether to cancel this trial, if it has not finished.
    Cancel(Option<TrialBrief>),
    /// The filter or sort changed: re-derive what is drawn from the snapshot.
    Rebuild,
    /// Open the detail of this trial (the effects ask the worker for its data).
    OpenDetail(TrialKey),
    /// Ask whether to retry these attempts.
    RetryAll(Vec<i64>),
}

/// What a view's drawing reads besides its own state (which it gets as `&mut`): the colours,
/// the latest snapshot and the clock.
#[derive(Clone, Copy)]
pub struct Shared<'a> {
    /// Colours and glyphs.
    pub theme: &'a Theme,
    /// The latest snapshot, once one arrived.
    pub snapshot: Option<&'a Snapshot>,
    /// The clock (elapsed time, time since output).
    pub now: DateTime<Utc>,
}

/// Where the last frame put what a click can hit: panes, grid cells, tabs, list rows. Views fill
/// it while drawing; [`crate::tui::app::App::on_mouse`] reads it.
#[derive(Debug, Default, Clone)]
pub struct Hits {
    /// The main panes.
    pub panes: Vec<(Rect, Pane)>,
    /// The grid's cells.
    pub grid: Option<GridHits>,
    /// Tabs of the detail view or the skill browser: (area, tab index).
    pub tabs: Vec<(Rect, usize)>,
    /// Rows of the skill browser's lists: (list area, which list, index of its first drawn row).
    pub lists: Vec<(Rect, SkillsFocus, usize)>,
    /// The help overlay.
    pub help: Option<Rect>,
}

impl Hits {
    /// The pane at (`x`, `y`), if any.
    pub fn pane_at(&self, x: u16, y: u16) -> Option<Pane> {
        self.panes
            .iter()
            .find(|(r, _)| contains(*r, x, y))
            .map(|(_, p)| *p)
    }
}

/// True when (`x`, `y`) lies in `r`.
pub fn contains(r: Rect, x: u16, y: u16) -> bool {
    x >= r.x && x < r.x + r.width && y >= r.y && y < r.y + r.height
}

/// Records where ratatui's `Tabs` (padding of one on each side, a one-column divider) put each
/// of `titles` in `area`, for the mouse.
pub fn record_tabs(hits: &mut Hits, area: Rect, titles: &[&str]) {
    let mut x = area.x;
    for (i, title) in titles.iter().enumerate() {
        let w = Span::raw(*title).width() as u16 + 2;
        let width = w.min((area.x + area.width).saturating_sub(x));
        if width == 0 {
            break;
        }
        hits.tabs.push((
            Rect {
                x,
                y: area.y,
                width,
                height: 1,
            },
            i,
        ));
        x += w + 1;
    }
}

/// The first row to draw of a list of `len` rows in `height` rows so `cursor` stays visible,
/// starting from the last frame's `top`.
pub fn list_top(top: &mut usize, cursor: usize, len: usize, height: usize) -> usize {
    let h = height.max(1);
    let mut t = (*top).min(len.saturating_sub(h));
    if cursor < t {
        t = cursor;
    } else if cursor >= t + h {
        t = cursor + 1 - h;
    }
    *top = t;
    t
}

/// A line edit on `buf`: typing, Backspace, Ctrl-U (clear), Ctrl-W (last word). Returns false
/// for keys it does not edit with.
pub fn edit_line(buf: &mut String, key: &KeyEvent) -> bool {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    match key.code {
        KeyCode::Char('u') if ctrl => buf.clear(),
        KeyCode::Char('w') if ctrl => {
            let trimmed = buf.trim_end().len();
            buf.truncate(trimmed);
            let cut = buf.rfind(' ').map_or(0, |i| i + 1);
            buf.truncate(cut);
        }
        KeyCode::Backspace => {
            buf.pop();
        }
        KeyCode::Char(c) if !ctrl => buf.push(c),
        _ => return false,
    }
    true
}

/// What `/` starts from: the filter in force, with a space to type the next term after it.
pub fn typing_start(query: &str) -> String {
    if query.trim().is_empty() {
        String::new()
    } else {
        format!("{} ", query.trim_end())
    }
}
