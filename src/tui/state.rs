//! View state — cursors, scroll offsets, filters, tabs — kept apart from drawing. Drawing reads it
//! and, through a `&mut` borrow of the view's own state, records what depends on the screen size
//! (scroll offsets, rows that fit); nothing is written through a shared reference.

use std::sync::Arc;

use super::model::{EventFilter, Filter, GridModel, Grouping, Sort};
use super::skilldoc::DocLine;
use super::worker::analysis::RubricData;
use super::worker::{SkillBrowser, SkillEntry};

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

/// The pass-rate pane's grouping and scroll.
#[derive(Debug, Default)]
pub struct DomainsState {
    /// Domains or difficulties.
    pub grouping: Grouping,
    /// First drawn row.
    pub scroll: usize,
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

/// Tabs of the skill browser.
pub const SKILLS_TABS: [&str; 2] = ["skills", "sessions"];

/// Which list of the skill browser has the cursor keys (or the document, to scroll it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillsFocus {
    /// Learning spaces.
    Spaces,
    /// Skills of the selected space.
    Skills,
    /// Files of the selected skill.
    Files,
    /// The selected file (scrolls).
    Doc,
}

impl SkillsFocus {
    /// One level deeper (spaces → skills → files → document).
    pub fn deeper(self) -> SkillsFocus {
        match self {
            SkillsFocus::Spaces => SkillsFocus::Skills,
            SkillsFocus::Skills => SkillsFocus::Files,
            SkillsFocus::Files | SkillsFocus::Doc => SkillsFocus::Doc,
        }
    }

    /// One level back; `None` from the spaces list (the browser closes).
    pub fn back(self) -> Option<SkillsFocus> {
        match self {
            SkillsFocus::Spaces => None,
            SkillsFocus::Skills => Some(SkillsFocus::Spaces),
            SkillsFocus::Files => Some(SkillsFocus::Skills),
            SkillsFocus::Doc => Some(SkillsFocus::Files),
        }
    }
}

/// The skill browser: tab, focus, cursors, diff toggle, scroll, and its data.
#[derive(Debug)]
pub struct SkillsState {
    /// Index into [`SKILLS_TABS`].
    pub tab: usize,
    /// Where the cursor keys go.
    pub focus: SkillsFocus,
    /// Selected space (index into `Snapshot::spaces`).
    pub space: usize,
    /// Its row id, once known (the data shown must be of this space).
    pub space_id: Option<i64>,
    /// Selected skill (index into `SkillBrowser::skills`).
    pub skill: usize,
    /// Selected file (index into `SkillEntry::files`).
    pub file: usize,
    /// Show the diff curated → learned instead of the file.
    pub diff: bool,
    /// First drawn row of the document (after wrapping).
    pub scroll: usize,
    /// Cursor in the sessions list (index into `SkillBrowser::steps`).
    pub session: usize,
    /// Data from the worker (`None` until it arrives).
    pub data: Option<Arc<SkillBrowser>>,
    /// The rubric report of the watched runs' skills (`None` until it arrives).
    pub rubric: Option<Arc<RubricData>>,
    /// The selected file as shown, rebuilt when the selection, diff toggle or data changes.
    pub doc: Vec<DocLine>,
    /// Rows of the document that fit, remembered from the last frame (for page moves).
    pub page: usize,
    /// Rows after wrapping, remembered from the last frame (for scrolling to the end).
    pub doc_rows: usize,
    /// First drawn row of the skills, files and sessions lists, kept by drawing.
    pub tops: [usize; 3],
}

impl SkillsState {
    /// A browser on space `space` (index) with row id `space_id`, waiting for its data.
    pub fn new(space: usize, space_id: Option<i64>) -> SkillsState {
        SkillsState {
            tab: 0,
            focus: SkillsFocus::Spaces,
            space,
            space_id,
            skill: 0,
            file: 0,
            diff: false,
            scroll: 0,
            session: 0,
            data: None,
            rubric: None,
            doc: Vec::new(),
            page: 20,
            doc_rows: 0,
            tops: Default::default(),
        }
    }

    /// The selected skill, once the data arrived.
    pub fn selected_skill(&self) -> Option<&SkillEntry> {
        self.data.as_ref()?.skills.get(self.skill)
    }

    /// Keeps the cursors inside the data.
    pub fn clamp(&mut self) {
        let Some(d) = self.data.clone() else { return };
        self.skill = self.skill.min(d.skills.len().saturating_sub(1));
        let files = d.skills.get(self.skill).map_or(0, |s| s.files.len());
        self.file = self.file.min(files.saturating_sub(1));
        self.session = self.session.min(d.steps.len().saturating_sub(1));
    }

    /// Scrolls the document by `delta` rows.
    pub fn scroll_by(&mut self, delta: isize) {
        let max = self.doc_rows.saturating_sub(self.page.max(1));
        self.scroll = (self.scroll as isize + delta).clamp(0, max as isize) as usize;
    }
}
