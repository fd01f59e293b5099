//! What keys and the mouse do to the Results view.

use super::ResultsState;
use crate::tui::keymap::Action;
use crate::tui::model::Grouping;
use crate::tui::screens::{Effect, Reply, Then};
use crate::tui::worker::Request;

impl ResultsState {
    /// A new Results view, and the request for its data.
    pub fn open() -> (ResultsState, Vec<Effect>) {
        (
            ResultsState::default(),
            vec![Effect::Request(Request::Results(true))],
        )
    }

    /// An action of the Results view's keys.
    pub fn on_action(&mut self, action: Action) -> Reply {
        let page = self.page.max(1) as isize;
        match action {
            Action::Back => {
                return Reply::then(vec![Effect::Request(Request::Results(false))], Then::Close);
            }
            Action::Quit => return Then::Quit.into(),
            Action::Help => return Then::Help.into(),
            Action::Up => self.scroll_by(-1),
            Action::Down => self.scroll_by(1),
            Action::PageUp => self.scroll_by(-page),
            Action::PageDown => self.scroll_by(page),
            Action::Left => self.offset = self.offset.saturating_sub(1),
            Action::Right if self.hidden > 0 => self.offset += 1,
            Action::Top => self.scroll = 0,
            Action::Bottom => self.scroll = self.max_scroll(),
            Action::ToggleDifficulty => {
                self.grouping = match self.grouping {
                    Grouping::Domain => Grouping::Difficulty,
                    Grouping::Difficulty => Grouping::Domain,
                };
            }
            _ => {}
        }
        Reply::default()
    }

    /// The mouse: the wheel scrolls (`wheel` lines).
    pub fn on_mouse(&mut self, wheel: Option<isize>) {
        if let Some(d) = wheel {
            self.scroll_by(d);
        }
    }
}
