//! Trial grid: rows are tasks grouped by domain, columns are condition × trial; each cell shows its
//! state by glyph and colour. Only visible rows and columns are drawn, so a frame costs the same for
//! 100 or 10,000 trials.
//!
//! The state is here, the keys (the filter typed with `/`, status and sort, opening, retrying and
//! cancelling trials) and the mouse in `keys.rs`, the drawing in `draw.rs`.

mod draw;
mod keys;

pub use draw::{draw, wanted_width};

use ratatui::layout::Rect;

use crate::tui::model::{Filter, GridModel, Sort};

/// The trial grid's cursor, scroll, filter and sort.
#[derive(Debug, Default)]
pub struct GridState {
    /// Cursor row (index into `GridModel::task_rows`).
    pub row: usize,
    /// Cursor column.
    pub col: usize,
    /// First drawn row (index into `GridModel::rows`), kept by drawing.
    pub top: usize,
    /// First drawn column, kept by drawing.
    pub left: usize,
    /// Rows that fit, remembered from the last frame (for page moves).
    pub page: usize,
    /// The filter.
    pub filter: Filter,
    /// The sort.
    pub sort: Sort,
    /// Filter text being typed (`/`), if any; the grid follows it as it is typed.
    pub editing: Option<String>,
    /// The query before typing began (Esc goes back to it).
    pub before: Option<String>,
    /// Why the text typed cannot be applied (`unknown status "bogus" …`), shown in the input line.
    pub error: Option<String>,
}

impl GridState {
    /// Moves the cursor by rows and columns, staying inside the grid.
    pub fn move_by(&mut self, model: &GridModel, rows: isize, cols: isize) {
        let n_rows = model.task_rows.len();
        let n_cols = model.columns.len();
        if n_rows == 0 {
            self.row = 0;
        } else {
            self.row = (self.row as isize + rows).clamp(0, n_rows as isize - 1) as usize;
        }
        if n_cols == 0 {
            self.col = 0;
        } else {
            self.col = (self.col as isize + cols).clamp(0, n_cols as isize - 1) as usize;
        }
    }

    /// Keeps the cursor inside a (possibly smaller) new model.
    pub fn clamp(&mut self, model: &GridModel) {
        self.move_by(model, 0, 0);
    }
}

/// The grid as drawn.
#[derive(Debug, Default, Clone)]
pub struct GridHits {
    /// The rows' area (task labels and cells).
    pub body: Rect,
    /// Index into `GridModel::rows` of the first drawn row.
    pub top: usize,
    /// Each drawn column: x, width and column index.
    pub cols: Vec<(u16, u16, usize)>,
}
