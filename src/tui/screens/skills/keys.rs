//! What keys and the mouse do to the skill browser.

use super::{SkillsFocus, SkillsState};
use crate::tui::keymap::Action;
use crate::tui::screens::{Effect, Hits, Reply, Then, contains};
use crate::tui::theme::Theme;
use crate::tui::worker::Request;

impl SkillsState {
    /// A browser on the first of the learning spaces (`space_id`, its row id, if there is one)
    /// with its document built, and the request for its data.
    pub fn open(space_id: Option<i64>, theme: &Theme) -> (SkillsState, Vec<Effect>) {
        let mut sk = SkillsState::new(0, space_id);
        sk.rebuild_doc(theme);
        // Without a learning space: the skills the conditions' trials saw, from the analysis.
        let effects = match space_id {
            Some(id) => vec![Effect::Request(Request::Skills(Some(id)))],
            None => vec![Effect::Request(Request::Results(true))],
        };
        (sk, effects)
    }

    /// An action of the browser's keys. `spaces` are the row ids of the snapshot's learning
    /// spaces in the order listed; what the key says goes to `status`.
    pub fn on_action(
        &mut self,
        action: Action,
        spaces: &[i64],
        theme: &Theme,
        status: &mut Option<String>,
    ) -> Reply {
        let ids = spaces;
        let mut effects = Vec::new();
        // Spaces that appeared after the browser opened: ask for the selected one now.
        self.space = self.space.min(ids.len().saturating_sub(1));
        let want = ids.get(self.space).copied();
        if want != self.space_id {
            self.space_id = want;
            self.data = None;
            if let Some(id) = want {
                effects.push(Effect::Request(Request::Skills(Some(id))));
            }
        }
        let close = if ids.is_empty() {
            Effect::Request(Request::Results(false))
        } else {
            Effect::Request(Request::Skills(None))
        };
        let page = self.page.max(1) as isize;
        let delta: Option<isize> = match action {
            Action::Up => Some(-1),
            Action::Down => Some(1),
            Action::PageUp => Some(-page),
            Action::PageDown => Some(page),
            Action::Top => Some(isize::MIN / 2),
            Action::Bottom => Some(isize::MAX / 2),
            _ => None,
        };
        let mut rebuild = false;
        match action {
            Action::Quit => return Then::Quit.into(),
            Action::CloseView => {
                effects.push(close);
                return Reply::then(effects, Then::Close);
            }
            Action::Help => return Reply::then(effects, Then::Help),
            Action::NextTab | Action::PrevTab => self.tab = (self.tab + 1) % 2,
            Action::Back if self.tab == 1 => self.tab = 0,
            Action::Back => match self.focus.back() {
                Some(f) => self.focus = f,
                None => {
                    effects.push(close);
                    return Reply::then(effects, Then::Close);
                }
            },
            Action::Open if self.tab == 0 && !ids.is_empty() => self.focus = self.focus.deeper(),
            Action::ToggleDiff => {
                self.diff = !self.diff;
                self.scroll = 0;
                rebuild = true;
                *status = Some(
                    if self.diff {
                        "diff: curated → latest learned version"
                    } else {
                        "showing the file"
                    }
                    .into(),
                );
            }
            _ => {}
        }
        if let Some(d) = delta {
            rebuild |= self.move_cursor(d, ids, &mut effects);
        }
        if rebuild {
            self.rebuild_doc(theme);
        }
        Reply::effects(effects)
    }

    /// Moves the cursor of the focused list (or the sessions list, or scrolls the document) by
    /// `d` rows; a new space asks for its data. True when the document must be rebuilt.
    fn move_cursor(&mut self, d: isize, ids: &[i64], effects: &mut Vec<Effect>) -> bool {
        let step = |cur: usize, len: usize, d: isize| -> usize {
            (cur as isize)
                .saturating_add(d)
                .clamp(0, len.saturating_sub(1) as isize) as usize
        };
        let (n_skills, n_files, n_steps) = self.data.as_ref().map_or((0, 0, 0), |b| {
            (
                b.skills.len(),
                b.skills.get(self.skill).map_or(0, |s| s.files.len()),
                b.steps.len(),
            )
        });
        if self.tab == 1 {
            self.session = step(self.session, n_steps, d);
            return false;
        }
        if ids.is_empty() {
            // The skills the trials saw: one scrolled list (drawing keeps it on the screen).
            self.scroll = (self.scroll as isize).saturating_add(d).max(0) as usize;
            return false;
        }
        match self.focus {
            SkillsFocus::Spaces => {
                let next = step(self.space, ids.len(), d);
                if next == self.space {
                    return false;
                }
                self.space = next;
                self.space_id = ids.get(next).copied();
                self.data = None;
                self.skill = 0;
                self.file = 0;
                self.scroll = 0;
                self.session = 0;
                effects.push(Effect::Request(Request::Skills(self.space_id)));
                true
            }
            SkillsFocus::Skills => {
                self.skill = step(self.skill, n_skills, d);
                self.file = 0;
                self.scroll = 0;
                true
            }
            SkillsFocus::Files => {
                self.file = step(self.file, n_files, d);
                self.scroll = 0;
                true
            }
            SkillsFocus::Doc => {
                self.scroll_by(d);
                false
            }
        }
    }

    /// The mouse: tabs and list rows select, the wheel moves the cursor of the list under the
    /// pointer (or scrolls the document), three rows a notch (`wheel`). Steps go through the
    /// keys' path, so a new space asks for its data.
    pub fn on_mouse(
        &mut self,
        (hits, x, y): (&Hits, u16, u16),
        wheel: Option<isize>,
        spaces: &[i64],
        theme: &Theme,
        status: &mut Option<String>,
    ) -> Vec<Effect> {
        if wheel.is_none()
            && let Some((_, tab)) = hits.tabs.iter().find(|(r, _)| contains(*r, x, y))
        {
            self.tab = *tab;
            return Vec::new();
        }
        let list = hits
            .lists
            .iter()
            .find(|(r, _, _)| contains(*r, x, y))
            .copied();
        let (action, steps) = match (list, wheel) {
            (Some((_, focus, _)), Some(d)) => {
                self.focus = focus;
                (
                    if d < 0 { Action::Up } else { Action::Down },
                    d.unsigned_abs(),
                )
            }
            (Some((r, focus, top)), None) => {
                let index = top + (y - r.y) as usize;
                self.focus = focus;
                let current = match focus {
                    SkillsFocus::Spaces => self.space,
                    SkillsFocus::Skills => self.skill,
                    SkillsFocus::Files => self.file,
                    SkillsFocus::Doc => 0,
                };
                // Step to the row clicked.
                let action = if index < current {
                    Action::Up
                } else {
                    Action::Down
                };
                (action, index.abs_diff(current))
            }
            (None, Some(d)) => {
                if self.tab == 0 {
                    self.focus = SkillsFocus::Doc;
                }
                (
                    if d < 0 { Action::Up } else { Action::Down },
                    d.unsigned_abs(),
                )
            }
            (None, None) => return Vec::new(),
        };
        let mut effects = Vec::new();
        for _ in 0..steps {
            effects.extend(self.on_action(action, spaces, theme, status).effects);
        }
        effects
    }
}
