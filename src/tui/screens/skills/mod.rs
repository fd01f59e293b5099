//! Skill browser: on a run without learning spaces, the skills each condition's trials saw
//! (curated included) with which trials used each; else the run's learning spaces → a space's skills (origin: curated, learned, or
//! curated+learned) → a skill's files, with the selected file on the right — SKILL.md rendered as
//! Markdown with learned SOP and Warning entries marked, or the diff curated → learned (`d`) — and
//! the trials each skill came from. A second tab lists the space's sessions: every learn step in
//! learning order, errors and mislabeled trials styled loudly. Below 100 columns the lists take
//! the whole width and an opened file does too.
//!
//! Each skill also shows its rubric score (`skill-scoring-rubric.md`) over the watched runs'
//! trials that invoked it: the average in the skills list, coloured by tier, and for the selected
//! skill a panel with the score and tier, the four components against their maxima (25/20/30/25),
//! invocations, error rate and trend, the weak component with the rubric's recommendation, and the
//! publish, feature and deprecation gates with the reasons they fail — above the file when side by
//! side, in place of the files list below 100 columns while a space or skill is being chosen.
//!
//! Everything drawn from the database was sanitized by the data worker when it was read.
//!
//! The state is here, the keys and the mouse in `keys.rs`, the drawing in `draw.rs` and
//! `rubric.rs`.

mod draw;
mod keys;
mod rubric;

pub use draw::draw;

use std::sync::Arc;

use crate::tui::skilldoc::{self, DocLine};
use crate::tui::theme::Theme;
use crate::tui::worker::analysis::{ResultsData, RubricData};
use crate::tui::worker::{SkillBrowser, SkillEntry};

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
    /// A run without learning spaces: the analysis whose skill exposure says which skills each
    /// condition's trials saw and which trials used each (`None` until it arrives).
    pub seen: Option<Arc<ResultsData>>,
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
            seen: None,
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

    /// Re-derives the document shown after a selection, diff toggle or data change.
    pub fn rebuild_doc(&mut self, theme: &Theme) {
        self.clamp();
        self.doc = match self.selected_skill() {
            Some(skill) => skilldoc::document(theme, skill, self.file, self.diff),
            None => Vec::new(),
        };
    }

    /// Scrolls the document by `delta` rows.
    pub fn scroll_by(&mut self, delta: isize) {
        let max = self.doc_rows.saturating_sub(self.page.max(1));
        self.scroll = (self.scroll as isize + delta).clamp(0, max as isize) as usize;
    }
}
