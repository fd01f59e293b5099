//! The main screen's panes and the state of the two beside the grid (the pass-rate pane, the event
//! log) — scroll offsets, filters — kept apart from drawing. The grid, the trial detail, the skill
//! browser and the Results view keep theirs in [`crate::tui::screens`]. Drawing reads the state
//! and, through a `&mut` borrow of the pane's own state, records what depends on the screen size
//! (scroll offsets, rows that fit); nothing is written through a shared reference.

use super::model::{EventFilter, Grouping};

/// The main panes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    /// Trial grid.
    Grid,
    /// Per-domain pass rates.
    Domains,
    /// The run's event log.
    Events,
}

impl Pane {
    /// The pane Tab goes to next.
    pub fn next(self) -> Pane {
        match self {
            Pane::Grid => Pane::Domains,
            Pane::Domains => Pane::Events,
            Pane::Events => Pane::Grid,
        }
    }
}

/// The pass-rate pane's grouping and scroll.
#[derive(Debug, Default)]
pub struct DomainsState {
    /// Domains or difficulties.
    pub grouping: Grouping,
    /// First drawn row.
    pub scroll: usize,
    /// Columns scrolled sideways (`←` `→`).
    pub offset: usize,
    /// The largest useful `offset` and `scroll` at the last frame's size (recorded by drawing):
    /// the keys stop there instead of scrolling into nothing.
    pub max_offset: usize,
    /// See `max_offset`.
    pub max_scroll: usize,
}

/// The event log's scroll, filter and the rows it keeps.
#[derive(Debug, Default)]
pub struct EventsState {
    /// First drawn row (index into `rows`).
    pub scroll: usize,
    /// The filter as typed.
    pub query: String,
    /// The filter in force.
    pub filter: EventFilter,
    /// Filter text being typed, if any (applied as it is typed).
    pub editing: Option<String>,
    /// The query before typing began.
    pub before: Option<String>,
    /// Why the text typed cannot be applied.
    pub error: Option<String>,
    /// Indices into `Snapshot::events` the filter keeps, newest first.
    pub rows: Vec<usize>,
    /// Rows that fit, remembered from the last frame.
    pub page: usize,
}

impl EventsState {
    /// Scrolls by `delta` events within the kept ones (the oldest can come to the top).
    pub fn scroll_by(&mut self, delta: isize) {
        let max = self.rows.len().saturating_sub(1);
        self.scroll = (self.scroll as isize + delta).clamp(0, max as isize) as usize;
    }

    /// Scrolls to the last page: the oldest events.
    pub fn to_end(&mut self) {
        self.scroll = self.rows.len().saturating_sub(self.page.max(1));
    }
}
