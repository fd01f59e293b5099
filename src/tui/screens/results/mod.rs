//! Results: the evaluation's analysis of the run or experiment being watched (conditions,
//! comparisons, pass@2-adaptive, the breakdown by domain or difficulty, failure modes, notes),
//! scrolling when it does not fit. The state is here, the keys in `keys.rs`, the drawing in
//! `draw.rs`.

mod draw;
mod keys;

pub use draw::draw;

use std::sync::Arc;

use crate::tui::model::Grouping;
use crate::tui::worker::analysis::ResultsData;

/// The Results view: breakdown, scroll, and its data.
#[derive(Debug, Default)]
pub struct ResultsState {
    /// The breakdown table: by domain or by difficulty.
    pub grouping: Grouping,
    /// First drawn line.
    pub scroll: usize,
    /// Data from the worker (`None` until it arrives).
    pub data: Option<Arc<ResultsData>>,
    /// Lines that fit, remembered from the last frame (for page moves).
    pub page: usize,
    /// Lines of the last frame (for scrolling to the end).
    pub lines: usize,
    /// Columns the tables are scrolled sideways (`←` `→`).
    pub offset: usize,
    /// The most columns a table of the last frame left out (how far `→` goes).
    pub hidden: usize,
}

impl ResultsState {
    /// The deepest scroll: the last page shows the last line.
    pub fn max_scroll(&self) -> usize {
        self.lines.saturating_sub(self.page.max(1))
    }

    /// Scrolls by `delta` lines.
    pub fn scroll_by(&mut self, delta: isize) {
        let max = self.max_scroll() as isize;
        self.scroll = (self.scroll.min(max as usize) as isize)
            .saturating_add(delta)
            .clamp(0, max) as usize;
    }
}
