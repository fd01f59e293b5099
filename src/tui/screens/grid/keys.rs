//! What keys and the mouse do to the trial grid.

use crossterm::event::{KeyCode, KeyEvent};

use super::GridState;
use crate::domain::{TrialBrief, TrialStatus};
use crate::tui::keymap::Action;
use crate::tui::model::{CellState, Filter, GridModel};
use crate::tui::screens::{Effect, Hits, Reply, Then, contains, edit_line, typing_start};
use crate::tui::worker::{Request, Snapshot};

impl GridState {
    /// The attempt under the cursor.
    pub fn selected<'a>(
        &self,
        model: &GridModel,
        snapshot: Option<&'a Snapshot>,
    ) -> Option<&'a TrialBrief> {
        let s = snapshot?;
        let i = model.cell(self.row, self.col)?;
        s.trials.get(i)
    }

    /// A key while a filter is being typed: the grid follows the text as it is typed (a term that
    /// cannot match leaves it as it was and says why in the input line), Enter keeps the filter
    /// when it applies, Esc goes back to the one before. `None` when no filter is being typed;
    /// else whether the grid must be re-derived.
    pub fn on_typing(&mut self, key: &KeyEvent, snapshot: Option<&Snapshot>) -> Option<bool> {
        let buf = self.editing.as_mut()?;
        let mut rebuild = false;
        match key.code {
            // A filter that cannot apply stays open with its reason shown.
            KeyCode::Enter if self.error.is_none() => {
                self.editing = None;
                self.before = None;
            }
            KeyCode::Enter => {}
            KeyCode::Esc => {
                let before = self.before.take().unwrap_or_default();
                self.editing = None;
                self.error = None;
                if self.filter.query != before {
                    self.filter.query = before;
                    rebuild = true;
                }
            }
            _ => {
                if edit_line(buf, key) {
                    rebuild = self.apply_typing(snapshot);
                }
            }
        }
        Some(rebuild)
    }

    /// Applies the filter being typed, if it can be; true when the filter changed.
    fn apply_typing(&mut self, snapshot: Option<&Snapshot>) -> bool {
        let Some(buf) = self.editing.clone() else {
            return false;
        };
        let check = match snapshot {
            Some(s) => Filter::check(&buf, s),
            None => Ok(()),
        };
        match check {
            Ok(()) => {
                self.error = None;
                if self.filter.query != buf {
                    self.filter.query = buf;
                    self.row = 0;
                    return true;
                }
            }
            Err(e) => self.error = Some(e),
        }
        false
    }

    /// An action of the grid's own keys (moves, filter, status and sort, open, retry, cancel);
    /// what it says goes to `status`.
    pub fn on_action(
        &mut self,
        action: Action,
        model: &GridModel,
        snapshot: Option<&Snapshot>,
        status: &mut Option<String>,
    ) -> Reply {
        let page = self.page.max(1) as isize;
        match action {
            Action::Up => self.move_by(model, -1, 0),
            Action::Down => self.move_by(model, 1, 0),
            Action::Left => self.move_by(model, 0, -1),
            Action::Right => self.move_by(model, 0, 1),
            Action::PageUp => self.move_by(model, -page, 0),
            Action::PageDown => self.move_by(model, page, 0),
            Action::Top => self.row = 0,
            Action::Bottom => self.row = model.task_rows.len().saturating_sub(1),
            Action::Filter => {
                self.before = Some(self.filter.query.clone());
                self.editing = Some(typing_start(&self.filter.query));
                self.error = None;
            }
            Action::CycleStatus => {
                self.filter.status = self.filter.status.next();
                self.row = 0;
                return Then::Rebuild.into();
            }
            Action::CycleSort => {
                self.sort = self.sort.next();
                return Then::Rebuild.into();
            }
            Action::Open => {
                if let Some(t) = self.selected(model, snapshot) {
                    let key = t.key();
                    return Reply::then(
                        vec![Effect::Request(Request::Detail(Some(key.clone())))],
                        Then::OpenDetail(key),
                    );
                }
            }
            Action::Retry => return Then::Retry(self.selected(model, snapshot).cloned()).into(),
            Action::RetryAllFailed => {
                let Some(s) = snapshot else {
                    return Reply::default();
                };
                // Failed as `retry --failed` means it: a trial the operator cancelled is a
                // decision, not a failure (`retry --cancelled` runs those).
                let shown: Vec<&TrialBrief> = model
                    .shown_trials()
                    .map(|i| &s.trials[i])
                    .filter(|t| {
                        t.status == TrialStatus::Done && CellState::of(t, &s.success).is_failed()
                    })
                    .collect();
                let ids: Vec<i64> = shown
                    .iter()
                    .filter(|t| t.outcome.is_none_or(|o| o.is_failed_for_retry()))
                    .map(|t| t.id)
                    .collect();
                let cancelled = shown.len() - ids.len();
                if ids.is_empty() {
                    *status = Some(if cancelled > 0 {
                        format!(
                            "no failed trials in the current filter; {} cancelled: `skillscope retry {} --cancelled` runs them",
                            cancelled,
                            crate::sanitize::one_line(&s.run.name)
                        )
                    } else {
                        "no failed trials in the current filter".into()
                    });
                } else {
                    return Then::RetryAll(ids).into();
                }
            }
            Action::Cancel => return Then::Cancel(self.selected(model, snapshot).cloned()).into(),
            _ => {}
        }
        Reply::default()
    }

    /// A click at (`x`, `y`): selects the cell under it. True when it was the cell already
    /// selected (the click opens it).
    pub fn on_click(&mut self, hits: &Hits, x: u16, y: u16, model: &GridModel) -> bool {
        let Some(g) = &hits.grid else {
            return false;
        };
        if !contains(g.body, x, y) {
            return false;
        }
        let row = g.top + (y - g.body.y) as usize;
        let Some(task_row) = model.task_rows.iter().position(|r| *r == row) else {
            return false;
        };
        let col = g
            .cols
            .iter()
            .find(|(cx, w, _)| x >= *cx && x < cx + w)
            .map(|(_, _, c)| *c);
        let again = task_row == self.row && col == Some(self.col);
        self.row = task_row;
        if let Some(c) = col {
            self.col = c;
        }
        again
    }
}
