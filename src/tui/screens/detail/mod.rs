//! Trial detail: one attempt's summary (identity, outcome, live activity, phases, history) and
//! its logs (trajectory, verifier, agent, build) in tabs — scrollable, searchable (`/`, `n`, `N`),
//! following a growing log (`f`), wrapping long lines (`w`). The state is here, the keys in
//! `keys.rs`, the drawing in `draw.rs`.

mod draw;
mod keys;

pub use draw::draw;

use std::sync::Arc;

use crate::domain::TrialKey;
use crate::tui::worker::Detail;

/// Tabs of the trial detail.
pub const DETAIL_TABS: [&str; 5] = ["summary", "trajectory", "verifier", "agent", "build"];

/// The trial detail's tab, scroll, search and data.
#[derive(Debug)]
pub struct DetailState {
    /// Which trial.
    pub key: TrialKey,
    /// Index into [`DETAIL_TABS`].
    pub tab: usize,
    /// First drawn line of the tab's text.
    pub scroll: usize,
    /// Keep the view at the end while the log grows.
    pub follow: bool,
    /// Wrap long lines (`w`) instead of cutting them at the edge.
    pub wrap: bool,
    /// Search term, once entered.
    pub search: Option<String>,
    /// Search text being typed, if any.
    pub editing: Option<String>,
    /// Data from the worker (`None` until it arrives).
    pub data: Option<Arc<Detail>>,
    /// Lines that fit, remembered from the last frame (for page moves and follow).
    pub page: usize,
}

impl DetailState {
    /// A detail view for a trial, waiting for its data.
    pub fn new(key: TrialKey) -> DetailState {
        DetailState {
            key,
            tab: 0,
            scroll: 0,
            follow: false,
            wrap: false,
            search: None,
            editing: None,
            data: None,
            page: 20,
        }
    }

    /// The text of the current log tab (`None` on the summary tab or before data arrives).
    pub fn log_text(&self) -> Option<&str> {
        let label = DETAIL_TABS.get(self.tab)?;
        let data = self.data.as_ref()?;
        data.logs
            .iter()
            .find(|l| l.label == *label)
            .map(|l| l.text.as_str())
    }

    /// Lines of the current log tab.
    pub fn line_count(&self) -> usize {
        self.log_text().map(|t| t.lines().count()).unwrap_or(0)
    }

    /// Scrolls by `delta` lines within the text.
    pub fn scroll_by(&mut self, delta: isize) {
        let max = self.line_count().saturating_sub(1);
        self.scroll = (self.scroll as isize + delta).clamp(0, max as isize) as usize;
        if delta < 0 {
            self.follow = false;
        }
    }

    /// Scrolls so the last page is shown.
    pub fn to_end(&mut self) {
        self.scroll = self.line_count().saturating_sub(self.page.max(1));
    }

    /// Moves to the next (or previous) line matching the search, wrapping around.
    pub fn jump_to_match(&mut self, forward: bool) -> bool {
        let (Some(term), Some(text)) = (self.search.clone(), self.log_text()) else {
            return false;
        };
        let term = term.to_lowercase();
        let hits: Vec<usize> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| l.to_lowercase().contains(&term))
            .map(|(i, _)| i)
            .collect();
        let next = if forward {
            hits.iter().find(|&&i| i > self.scroll).or(hits.first())
        } else {
            hits.iter()
                .rev()
                .find(|&&i| i < self.scroll)
                .or(hits.last())
        };
        match next {
            Some(&i) => {
                self.scroll = i;
                self.follow = false;
                true
            }
            None => false,
        }
    }
}
