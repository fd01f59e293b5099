//! The dashboard's router: keys, the mouse and data updates in, effects (worker requests, stop the
//! run, quit) out. It owns the screens ([`crate::tui::screens`]), sends a key to the one in front
//! (the detail, the Results view, the skill browser, else the grid) and acts on the [`Reply`] it
//! returns; it handles itself what belongs to no screen: Ctrl-C and quitting, the help overlay,
//! confirmations, the side panes (pass rates, event log) and switching between them. No I/O
//! happens here, so every behaviour is testable without a terminal.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

use super::keymap::{self, Action, Context};
use super::model::{
    CellState, EventFilter, GridModel, Grouping, Progress, event_rows, progress, rate_rows,
};
pub use super::screens::Effect;
use super::screens::detail::DetailState;
use super::screens::grid::GridState;
use super::screens::results::ResultsState;
use super::screens::skills::SkillsState;
use super::screens::{Hits, Reply, Then, edit_line, typing_start};
use super::state::{DomainsState, EventsState, Pane};
use super::theme::Theme;
use super::worker::{Request, Snapshot, Update};
use crate::domain::{TrialBrief, TrialStatus};

/// Whether this dashboard started the run (quitting stops it) or watches one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `skillscope run`: the engine runs in this process.
    Run,
    /// `skillscope watch`: the engine runs elsewhere; closing never stops it.
    Watch,
}

/// What a confirmation is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confirm {
    /// Retry these attempts.
    RetryAll(Vec<i64>),
    /// Cancel this attempt.
    Cancel {
        /// Attempt id.
        id: i64,
        /// What it is, for the question.
        what: String,
    },
    /// Stop the run started by this dashboard.
    StopRun,
}

impl Confirm {
    /// The question; `resumable` says whether the same command resumes a stopped run (false for
    /// a dry run, which the next one replaces).
    pub fn question(&self, resumable: bool) -> String {
        match self {
            Confirm::RetryAll(ids) => {
                format!("Retry {} failed trial(s) in the current filter?", ids.len())
            }
            Confirm::Cancel { what, .. } => format!("Cancel {what}?"),
            Confirm::StopRun if resumable => "Stop the run? Its running trials go back to the \
                 queue, and running the same command again resumes it."
                .to_string(),
            Confirm::StopRun => "Stop the dry run? A dry run is not resumed: running the same \
                 command again starts a new one."
                .to_string(),
        }
    }

    /// The answers under the question: what `y` and `n` do, and for the stop question the
    /// second Ctrl-C (quit without waiting for the containers to go).
    pub fn answers(&self) -> &'static [(&'static str, &'static str)] {
        match self {
            Confirm::StopRun => &[
                ("[y]", " stop   "),
                ("[n]", " keep running   "),
                ("[Ctrl-C]", " quit without waiting"),
            ],
            _ => &[("[y]", " yes   "), ("[n]", " no")],
        }
    }
}

/// Seconds a status message stays on the footer (a key press clears it sooner).
pub const STATUS_SECS: i64 = 8;

/// Overlays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Popup {
    /// The key list.
    Help,
    /// A yes/no question.
    Confirm(Confirm),
}

/// The whole UI state.
pub struct App {
    /// Run or watch.
    pub mode: Mode,
    /// Colours and glyphs.
    pub theme: Theme,
    /// The database shown (for the title).
    pub db_label: String,
    /// Latest snapshot.
    pub snapshot: Option<Arc<Snapshot>>,
    /// Why there is no snapshot yet.
    pub waiting: Option<String>,
    /// Grid derived from the snapshot, filter and sort.
    pub grid_model: GridModel,
    /// The pass-rate breakdown of the snapshot, by the analysis ([`rate_rows`]): one row per
    /// group, the overall row last.
    pub rates: crate::analysis::results::LiveBreakdown,
    /// Progress derived from the snapshot and `now`.
    pub progress: Progress,
    /// Grid state.
    pub grid: GridState,
    /// Domain pane state.
    pub domains: DomainsState,
    /// Open trial detail.
    pub detail: Option<DetailState>,
    /// Open skill browser.
    pub skills: Option<SkillsState>,
    /// Open Results view.
    pub results: Option<ResultsState>,
    /// Focused pane.
    pub pane: Pane,
    /// Open overlay.
    pub popup: Option<Popup>,
    /// Status line message.
    pub status: Option<String>,
    /// The status message as first seen by [`App::on_tick`], and when: it goes after
    /// [`STATUS_SECS`] (a key clears it sooner), except while the run is being stopped.
    status_seen: Option<(String, DateTime<Utc>)>,
    /// Clock for elapsed time and ETA (set on each tick; fixed in tests).
    pub now: DateTime<Utc>,
    /// The run is being stopped (run mode).
    pub stopping: bool,
    /// The engine this dashboard watched has ended, and how (`finished`, `done`, `stopped: …`):
    /// the dashboard stays until `q` (run mode), so a run and an experiment end alike.
    pub ended: Option<String>,
    /// First line shown of the help overlay.
    pub help_scroll: usize,
    /// Capture the mouse (clicks select, the wheel scrolls); off with `--no-mouse`.
    pub mouse: bool,
    /// True when the same command resumes a stopped run; false for a dry run, which the next
    /// one replaces (the stop dialog says which).
    pub resumable: bool,
    /// The engine goes on working once every trial shown has its verdict (an experiment:
    /// learning, export, the next round), and ends by itself: `q` then stops it, after asking —
    /// it never "finishes" it.
    pub works_past_its_trials: bool,
    /// The event log pane.
    pub events: EventsState,
    /// Where the last frame drew what a click can hit.
    pub hits: Hits,
}

impl App {
    /// A new dashboard.
    pub fn new(mode: Mode, theme: Theme, db_label: String, now: DateTime<Utc>) -> App {
        App {
            mode,
            theme,
            db_label,
            snapshot: None,
            waiting: Some("loading…".into()),
            grid_model: GridModel::default(),
            rates: Default::default(),
            progress: Progress::default(),
            grid: GridState::default(),
            domains: DomainsState::default(),
            detail: None,
            skills: None,
            results: None,
            pane: Pane::Grid,
            popup: None,
            status: None,
            status_seen: None,
            now,
            stopping: false,
            ended: None,
            help_scroll: 0,
            mouse: true,
            resumable: true,
            works_past_its_trials: false,
            events: EventsState::default(),
            hits: Hits::default(),
        }
    }

    /// The key context now.
    pub fn context(&self) -> Context {
        match (&self.popup, &self.detail, self.pane) {
            (Some(Popup::Confirm(_)), _, _) => Context::Confirm,
            (_, Some(_), _) => Context::Detail,
            _ if self.results.is_some() => Context::Results,
            _ if self.skills.is_some() => Context::Skills,
            (_, None, Pane::Grid) => Context::Grid,
            (_, None, Pane::Domains) => Context::Domains,
            (_, None, Pane::Events) => Context::Events,
        }
    }

    /// Applies a worker update.
    pub fn on_update(&mut self, u: Update) {
        match u {
            Update::Waiting(w) => self.waiting = Some(w),
            Update::Snapshot(s) => {
                self.waiting = None;
                self.snapshot = Some(s);
                self.rebuild();
            }
            Update::Detail(d) => {
                if let Some(det) = self.detail.as_mut()
                    && det.key == d.key
                {
                    det.data = Some(d);
                    if det.follow {
                        det.to_end();
                    }
                }
            }
            Update::Skills(b) => {
                if let Some(sk) = self.skills.as_mut()
                    && sk.space_id == Some(b.space.id)
                {
                    sk.data = Some(b);
                    sk.rebuild_doc(&self.theme);
                }
            }
            Update::Results(d) => {
                if let Some(sk) = self.skills.as_mut() {
                    sk.seen = Some(d.clone());
                }
                if let Some(r) = self.results.as_mut() {
                    r.data = Some(d);
                }
            }
            Update::Rubric(d) => {
                if let Some(sk) = self.skills.as_mut() {
                    sk.rubric = Some(d);
                }
            }
            Update::Notice(n) => self.status = Some(n),
        }
    }

    /// Advances the clock (elapsed, ETA) and lets a status message go once it has been shown for
    /// [`STATUS_SECS`] (not while the run stops: that message stays until it has stopped).
    pub fn on_tick(&mut self, now: DateTime<Utc>) {
        self.now = now;
        match (&self.status, &self.status_seen) {
            (None, _) => self.status_seen = None,
            (Some(s), Some((seen, since))) if s == seen => {
                if !self.stopping && (now - *since).num_seconds() >= STATUS_SECS {
                    self.status = None;
                    self.status_seen = None;
                }
            }
            (Some(s), _) => self.status_seen = Some((s.clone(), now)),
        }
        if let Some(s) = &self.snapshot {
            self.progress = progress(s, now);
        }
    }

    /// Re-derives the grid, rates and progress after a snapshot, filter, sort or grouping change.
    pub fn rebuild(&mut self) {
        let Some(s) = self.snapshot.clone() else {
            return;
        };
        self.grid_model = GridModel::build(&s, &self.grid.filter, self.grid.sort);
        self.grid.clamp(&self.grid_model);
        self.rates = rate_rows(&s, self.domains.grouping);
        self.progress = progress(&s, self.now);
        self.events.rows = event_rows(&s.events, &self.events.filter);
        self.events.scroll_by(0);
    }

    /// Applies the event filter being typed, as the grid does its own: the log follows the text
    /// as it is typed; a filter that cannot parse says why in the input line.
    fn apply_events_typing(&mut self) {
        let Some(buf) = self.events.editing.clone() else {
            return;
        };
        match EventFilter::parse(&buf) {
            Ok(f) => {
                self.events.error = None;
                self.events.query = buf;
                if self.events.filter != f {
                    self.events.filter = f;
                    self.events.scroll = 0;
                    self.rebuild();
                }
            }
            Err(e) => self.events.error = Some(e),
        }
    }

    /// The attempt under the grid cursor.
    pub fn selected_trial(&self) -> Option<&TrialBrief> {
        self.grid
            .selected(&self.grid_model, self.snapshot.as_deref())
    }

    /// Handles a key press.
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            match (&self.popup, self.mode) {
                // The second Ctrl-C of a run (the stop dialog open, or the run already
                // stopping) quits at once, as it does outside the dashboard
                // (docs/operations.md): the next `run` recovers what it leaves.
                (Some(Popup::Confirm(Confirm::StopRun)), Mode::Run) => return vec![Effect::Quit],
                (_, Mode::Run) if self.stopping => return vec![Effect::Quit],
                (None | Some(Popup::Help), _) => {
                    self.popup = None;
                    return self.quit();
                }
                // Any other question: Ctrl-C answers no.
                (Some(Popup::Confirm(_)), _) => {
                    self.popup = None;
                    return Vec::new();
                }
            }
        }
        if let Some(rebuild) = self.grid.on_typing(&key, self.snapshot.as_deref()) {
            if rebuild {
                self.rebuild();
            }
            return Vec::new();
        }
        if let Some(buf) = self.events.editing.as_mut() {
            match key.code {
                KeyCode::Enter if self.events.error.is_none() => {
                    self.events.editing = None;
                    self.events.before = None;
                }
                KeyCode::Enter => {}
                KeyCode::Esc => {
                    let before = self.events.before.take().unwrap_or_default();
                    self.events.editing = None;
                    self.events.error = None;
                    self.events.query = before.clone();
                    self.events.filter = EventFilter::parse(&before).unwrap_or_default();
                    self.rebuild();
                }
                _ => {
                    if edit_line(buf, &key) {
                        self.apply_events_typing();
                    }
                }
            }
            return Vec::new();
        }
        if let Some(det) = self.detail.as_mut()
            && det.on_typing(&key, &mut self.status)
        {
            return Vec::new();
        }
        if self.popup == Some(Popup::Help) {
            // Arrows scroll the help; any other key closes it (and does nothing else).
            match key.code {
                KeyCode::Up | KeyCode::Char('k') => {
                    self.help_scroll = self.help_scroll.saturating_sub(1)
                }
                KeyCode::Down | KeyCode::Char('j') => self.help_scroll += 1,
                KeyCode::PageUp => self.help_scroll = self.help_scroll.saturating_sub(10),
                KeyCode::PageDown | KeyCode::Char(' ') => self.help_scroll += 10,
                _ => self.popup = None,
            }
            return Vec::new();
        }
        let Some(action) = keymap::lookup(self.context(), &key) else {
            return Vec::new();
        };
        self.status = None;
        match self.context() {
            Context::Confirm => self.on_confirm(action),
            Context::Detail => match self.detail.as_mut() {
                Some(det) => {
                    let reply = det.on_action(action, &mut self.status);
                    self.follow(reply, |app| app.detail = None)
                }
                None => Vec::new(),
            },
            Context::Skills => {
                let ids = self.space_ids();
                match self.skills.as_mut() {
                    Some(sk) => {
                        let reply = sk.on_action(action, &ids, &self.theme, &mut self.status);
                        self.follow(reply, |app| app.skills = None)
                    }
                    None => Vec::new(),
                }
            }
            Context::Results => match self.results.as_mut() {
                Some(r) => {
                    let reply = r.on_action(action);
                    self.follow(reply, |app| app.results = None)
                }
                None => Vec::new(),
            },
            Context::Grid | Context::Domains | Context::Events | Context::Global => {
                self.on_main(action)
            }
        }
    }

    /// Acts on what a screen's key asked ([`Reply`]); `close` closes that screen.
    fn follow(&mut self, reply: Reply, close: fn(&mut App)) -> Vec<Effect> {
        let Reply { mut effects, then } = reply;
        match then {
            Then::Stay => {}
            Then::Close => close(self),
            Then::Help => self.open_help(),
            Then::Quit => effects.extend(self.quit()),
            Then::Retry(t) => effects.extend(self.retry(t)),
            Then::Cancel(t) => effects.extend(self.cancel(t)),
            Then::Rebuild => self.rebuild(),
            Then::OpenDetail(key) => self.detail = Some(DetailState::new(key)),
            Then::RetryAll(ids) => self.popup = Some(Popup::Confirm(Confirm::RetryAll(ids))),
        }
        effects
    }

    /// Opens the key list at its top.
    fn open_help(&mut self) {
        self.popup = Some(Popup::Help);
        self.help_scroll = 0;
    }

    fn quit(&mut self) -> Vec<Effect> {
        match self.mode {
            Mode::Watch => vec![Effect::Quit],
            // The engine has ended: nothing to stop.
            Mode::Run if self.ended.is_some() => vec![Effect::Quit],
            Mode::Run if self.stopping => Vec::new(),
            Mode::Run
                if self.works_past_its_trials
                    || self.progress.running + self.progress.queued > 0 =>
            {
                self.popup = Some(Popup::Confirm(Confirm::StopRun));
                Vec::new()
            }
            // Every planned trial has its verdict: quitting finishes the run, never stops it.
            Mode::Run => {
                self.stopping = true;
                self.status = Some("finishing the run…".into());
                vec![Effect::FinishRun]
            }
        }
    }

    fn on_confirm(&mut self, action: Action) -> Vec<Effect> {
        let Some(Popup::Confirm(c)) = self.popup.take() else {
            return Vec::new();
        };
        if action != Action::Yes {
            return Vec::new();
        }
        match c {
            Confirm::RetryAll(ids) => vec![Effect::Request(Request::Retry(ids))],
            Confirm::Cancel { id, .. } => vec![Effect::Request(Request::Cancel(id))],
            Confirm::StopRun => {
                self.stopping = true;
                self.status = Some("stopping the run: removing containers…".into());
                vec![Effect::StopRun]
            }
        }
    }

    fn retry(&mut self, t: Option<TrialBrief>) -> Vec<Effect> {
        match t {
            Some(t)
                if t.status == TrialStatus::Done
                    && self
                        .snapshot
                        .as_ref()
                        .is_some_and(|s| CellState::of(&t, &s.success).is_failed()) =>
            {
                self.status = Some(format!("retry queued for {} #{}", t.task_id, t.trial_index));
                vec![Effect::Request(Request::Retry(vec![t.id]))]
            }
            Some(t) if t.status == TrialStatus::Done => {
                self.status =
                    Some("this trial passed; only failed or errored trials are retried".into());
                Vec::new()
            }
            Some(_) => {
                self.status = Some("this trial has not finished yet".into());
                Vec::new()
            }
            None => Vec::new(),
        }
    }

    fn cancel(&mut self, t: Option<TrialBrief>) -> Vec<Effect> {
        match t {
            Some(t) if t.status != TrialStatus::Done => {
                let what = format!(
                    "{} {} #{} ({})",
                    t.task_id,
                    crate::skillsbench::condition::condition_label(&t.condition),
                    t.trial_index,
                    t.status
                );
                self.popup = Some(Popup::Confirm(Confirm::Cancel { id: t.id, what }));
                Vec::new()
            }
            Some(_) => {
                self.status = Some("this trial has already finished".into());
                Vec::new()
            }
            None => Vec::new(),
        }
    }

    fn on_main(&mut self, action: Action) -> Vec<Effect> {
        match action {
            Action::Quit => return self.quit(),
            Action::Help => self.open_help(),
            Action::NextPane => self.pane = self.pane.next(),
            Action::Events => self.pane = Pane::Events,
            Action::Back if self.pane == Pane::Events && !self.events.filter.is_empty() => {
                self.events.query.clear();
                self.events.filter = EventFilter::default();
                self.rebuild();
            }
            Action::Back if self.pane == Pane::Events => self.pane = Pane::Grid,
            Action::Back if !self.grid.filter.is_empty() => {
                self.grid.filter = Default::default();
                self.rebuild();
            }
            _ if self.pane == Pane::Events => {
                let page = self.events.page.max(1) as isize;
                match action {
                    Action::Up => self.events.scroll_by(-1),
                    Action::Down => self.events.scroll_by(1),
                    Action::PageUp => self.events.scroll_by(-page),
                    Action::PageDown => self.events.scroll_by(page),
                    Action::Top => self.events.scroll = 0,
                    Action::Bottom => self.events.to_end(),
                    Action::Filter => {
                        self.events.before = Some(self.events.query.clone());
                        self.events.editing = Some(typing_start(&self.events.query));
                    }
                    Action::OpenSkills => return self.open_skills(),
                    Action::OpenResults => return self.open_results(),
                    _ => {}
                }
            }
            _ if self.pane == Pane::Domains => match action {
                Action::Left => self.domains.offset = self.domains.offset.saturating_sub(1),
                // Up to where the last column shows (the last frame says where), no further.
                Action::Right => {
                    self.domains.offset = (self.domains.offset + 1).min(self.domains.max_offset)
                }
                Action::Up => self.domains.scroll = self.domains.scroll.saturating_sub(1),
                Action::Down => {
                    self.domains.scroll = (self.domains.scroll + 1).min(self.domains.max_scroll)
                }
                Action::ToggleDifficulty => {
                    self.domains.grouping = match self.domains.grouping {
                        Grouping::Domain => Grouping::Difficulty,
                        Grouping::Difficulty => Grouping::Domain,
                    };
                    self.domains.scroll = 0;
                    self.rebuild();
                }
                Action::OpenSkills => return self.open_skills(),
                Action::OpenResults => return self.open_results(),
                _ => {}
            },
            Action::OpenSkills => return self.open_skills(),
            Action::OpenResults => return self.open_results(),
            _ => {
                let reply = self.grid.on_action(
                    action,
                    &self.grid_model,
                    self.snapshot.as_deref(),
                    &mut self.status,
                );
                return self.follow(reply, |_| {});
            }
        }
        Vec::new()
    }

    /// Handles a mouse event: a left click selects the grid cell, pane, tab or list row under it
    /// (a click on the cell already selected opens its detail); the wheel scrolls what is under
    /// the pointer (three rows a notch). Positions are matched against [`App::hits`], which the
    /// last frame filled.
    pub fn on_mouse(&mut self, m: MouseEvent) -> Vec<Effect> {
        const NOTCH: isize = 3;
        let (x, y) = (m.column, m.row);
        let wheel = match m.kind {
            MouseEventKind::ScrollUp => Some(-NOTCH),
            MouseEventKind::ScrollDown => Some(NOTCH),
            _ => None,
        };
        let click = matches!(m.kind, MouseEventKind::Down(MouseButton::Left));
        if wheel.is_none() && !click {
            return Vec::new();
        }
        let hits = self.hits.clone();
        match &self.popup {
            Some(Popup::Help) => {
                match wheel {
                    Some(d) => {
                        self.help_scroll = (self.help_scroll as isize + d).max(0) as usize;
                    }
                    None => self.popup = None,
                }
                return Vec::new();
            }
            Some(Popup::Confirm(_)) => return Vec::new(),
            None => {}
        }
        if self.grid.editing.is_some() || self.events.editing.is_some() {
            return Vec::new();
        }
        if let Some(det) = self.detail.as_mut() {
            det.on_mouse(&hits, x, y, wheel);
            return Vec::new();
        }
        if let Some(r) = self.results.as_mut() {
            r.on_mouse(wheel);
            return Vec::new();
        }
        if self.skills.is_some() {
            let ids = self.space_ids();
            if let Some(sk) = self.skills.as_mut() {
                return sk.on_mouse((&hits, x, y), wheel, &ids, &self.theme, &mut self.status);
            }
        }
        let Some(pane) = hits.pane_at(x, y) else {
            return Vec::new();
        };
        match (pane, wheel) {
            (Pane::Grid, Some(d)) => self.grid.move_by(&self.grid_model, d, 0),
            (Pane::Domains, Some(d)) => {
                self.domains.scroll = (self.domains.scroll as isize + d)
                    .clamp(0, self.domains.max_scroll as isize)
                    as usize;
            }
            (Pane::Events, Some(d)) => self.events.scroll_by(d),
            (Pane::Grid, None) => {
                self.pane = Pane::Grid;
                if self.grid.on_click(&hits, x, y, &self.grid_model) {
                    return self.on_main(Action::Open);
                }
            }
            (p, None) => self.pane = p,
        }
        Vec::new()
    }

    /// Opens the Results view; the worker sends its data.
    fn open_results(&mut self) -> Vec<Effect> {
        let (results, effects) = ResultsState::open();
        self.results = Some(results);
        effects
    }

    /// Opens the skill browser on the first learning space of the snapshot.
    fn open_skills(&mut self) -> Vec<Effect> {
        let (skills, effects) = SkillsState::open(self.space_ids().first().copied(), &self.theme);
        self.skills = Some(skills);
        effects
    }

    /// Row ids of the snapshot's learning spaces (or skill sets), in the skill browser's order.
    fn space_ids(&self) -> Vec<i64> {
        self.snapshot
            .as_ref()
            .map(|s| s.skill_sets().iter().map(|p| p.space.id).collect())
            .unwrap_or_default()
    }
}
