//! What keys and the mouse do to the trial detail.

use crossterm::event::{KeyCode, KeyEvent};

use super::{DETAIL_TABS, DetailState};
use crate::domain::TrialBrief;
use crate::tui::keymap::Action;
use crate::tui::screens::{Effect, Hits, Reply, Then, contains};
use crate::tui::worker::Request;

impl DetailState {
    /// The latest attempt of the trial shown, once its data arrived.
    pub fn trial(&self) -> Option<TrialBrief> {
        Some(self.data.as_ref()?.latest()?.brief())
    }

    /// A key while a search term is being typed: Enter searches (saying `no match` in `status`
    /// when nothing matches), Esc gives up. Returns false when no term is being typed.
    pub fn on_typing(&mut self, key: &KeyEvent, status: &mut Option<String>) -> bool {
        let Some(buf) = self.editing.as_mut() else {
            return false;
        };
        match key.code {
            KeyCode::Enter => {
                let term = self.editing.take().unwrap_or_default();
                self.search = (!term.is_empty()).then_some(term);
                if !self.jump_to_match(true) && self.search.is_some() {
                    *status = Some("no match".into());
                }
            }
            KeyCode::Esc => self.editing = None,
            KeyCode::Backspace => {
                buf.pop();
            }
            KeyCode::Char(c) => buf.push(c),
            _ => {}
        }
        true
    }

    /// An action of the detail's keys; what it says goes to `status`.
    pub fn on_action(&mut self, action: Action, status: &mut Option<String>) -> Reply {
        let page = self.page.max(1) as isize;
        match action {
            Action::Back => {
                return Reply::then(vec![Effect::Request(Request::Detail(None))], Then::Close);
            }
            Action::Quit => return Then::Quit.into(),
            Action::Help => return Then::Help.into(),
            Action::NextTab | Action::PrevTab => {
                let n = DETAIL_TABS.len();
                self.tab = if action == Action::NextTab {
                    (self.tab + 1) % n
                } else {
                    (self.tab + n - 1) % n
                };
                self.scroll = 0;
                if self.follow {
                    self.to_end();
                }
            }
            Action::Up => self.scroll_by(-1),
            Action::Down => self.scroll_by(1),
            Action::PageUp => self.scroll_by(-page),
            Action::PageDown => self.scroll_by(page),
            Action::Top => {
                self.scroll = 0;
                self.follow = false;
            }
            Action::Bottom => self.to_end(),
            Action::Search => self.editing = Some(self.search.clone().unwrap_or_default()),
            Action::NextMatch | Action::PrevMatch
                if !self.jump_to_match(action == Action::NextMatch) =>
            {
                *status = Some("no match".into());
            }
            Action::ToggleFollow => {
                self.follow = !self.follow;
                if self.follow {
                    self.to_end();
                }
                *status = Some(
                    if self.follow {
                        "following the log"
                    } else {
                        "not following"
                    }
                    .into(),
                );
            }
            Action::ToggleWrap => {
                self.wrap = !self.wrap;
                *status = Some(
                    if self.wrap {
                        "wrapping long lines"
                    } else {
                        "cutting long lines at the edge"
                    }
                    .into(),
                );
            }
            Action::Retry => return Then::Retry(self.trial()).into(),
            Action::Cancel => return Then::Cancel(self.trial()).into(),
            _ => {}
        }
        Reply::default()
    }

    /// The mouse: the wheel scrolls (`wheel` rows), a click on a tab opens it.
    pub fn on_mouse(&mut self, hits: &Hits, x: u16, y: u16, wheel: Option<isize>) {
        match wheel {
            Some(d) => self.scroll_by(d),
            None => {
                if let Some((_, tab)) = hits.tabs.iter().find(|(r, _)| contains(*r, x, y)) {
                    self.tab = *tab;
                    self.scroll = 0;
                    if self.follow {
                        self.to_end();
                    }
                }
            }
        }
    }
}
