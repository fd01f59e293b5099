//! A snapshot of the watched run: its trials, tasks, conditions, learning spaces and
//! self-generated skill sets, experiment and events — what the grid, the overview and the event
//! log draw. Remote text is sanitized when read.

use std::sync::Arc;

use rusqlite::Connection;

use crate::analysis::success::SuccessRule;
use crate::domain::{RunRow, RunTaskRow, TrialBrief, TrialPlan};
use crate::sanitize::one_line;
use crate::store::learning::{self as lq, ExperimentRow, SpaceProgress};
use crate::store::{StoreError, queries};

use super::skills::{clean_space, clean_step};

/// A run event.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    /// Time, RFC 3339.
    pub at: String,
    /// `info`, `warn`, `error`.
    pub level: String,
    /// Text.
    pub message: String,
}

/// Everything the dashboard draws about a run, read in one transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The run.
    pub run: RunRow,
    /// The pass rule the dashboard shows success by — the grid's cells, the trial detail, the
    /// Results view — the report's own ([`SuccessRule::trial_succeeded`]; `watch
    /// --pass-threshold`, default reward ≥ 1).
    pub success: SuccessRule,
    /// Its tasks (the fixed denominator), by id.
    pub tasks: Vec<RunTaskRow>,
    /// The latest attempt of every trial (brief form, unordered).
    pub trials: Vec<TrialBrief>,
    /// The run's events, oldest first: every one up to the latest [`MAX_EVENTS`] (messages
    /// sanitized, one line each).
    pub events: Arc<Vec<EventRow>>,
    /// Short labels of the run's conditions, in `run.conditions` order: `A`, `B`, `A'`, `B'`,
    /// `C` … ([`crate::skillsbench::condition::short_labels`]).
    pub labels: Vec<String>,
    /// Operator commands not yet applied by the engine.
    pub pending_commands: usize,
    /// The experiment whose round-1 or round-2 run this is, if any (note sanitized).
    pub experiment: Option<ExperimentRow>,
    /// Learning spaces relevant to this run: those learning from it and, for an experiment,
    /// those learning from its round-1 run; oldest first, with their progress counted in SQL.
    pub spaces: Vec<SpaceProgress>,
    /// The skills agents generated under the self-generated conditions of this run (and of an
    /// experiment's round-1 run), as the skill browser lists them.
    pub generated: Vec<SpaceProgress>,
    /// Tokens and cost so far, per condition (conditions without usage are absent).
    pub spend: Vec<queries::ConditionSpend>,
    /// Every attempt's tokens, cost and spending time, and a running agent's live activity, by
    /// id (the last tool call sanitized again when read).
    pub activity: Vec<queries::AttemptActivity>,
    /// Whether the run's owner process exists, when it runs on this machine (`None`: elsewhere,
    /// or no owner) — with the heartbeat, what tells a live engine from a gone one.
    pub owner_alive: Option<bool>,
    /// The run's Docker hosts and their health.
    pub hosts: Vec<crate::store::HostRow>,
    /// Trials planned per task and condition (uneven for imported runs).
    pub plan: TrialPlan,
    /// The run's group-sequential design, its looks and early stops, when it applies one.
    pub sequential: Option<crate::domain::sequential::SequentialRecord>,
}

/// The experiment of run `run` and the learning spaces relevant to it (see [`Snapshot::spaces`]),
/// sanitized, with their steps counted by step in pipeline order.
///
/// # Errors
/// Database errors.
pub fn load_learning(
    conn: &Connection,
    run: &RunRow,
) -> Result<(Option<ExperimentRow>, Vec<SpaceProgress>), StoreError> {
    let mut experiment = lq::experiment_of_run(conn, &run.name)?;
    let mut runs = vec![run.id];
    if let Some(e) = &mut experiment {
        e.name = one_line(&e.name);
        e.phase = one_line(&e.phase);
        e.note = e.note.as_deref().map(one_line);
        if let Some(r1) = queries::find_run(conn, &e.round1_run)? {
            runs.push(r1.id);
        }
    }
    let mut spaces = Vec::new();
    for space in lq::spaces_of_runs(conn, &runs)? {
        let mut p = lq::space_progress(conn, space)?;
        clean_space(&mut p.space);
        if let Some(c) = &mut p.current {
            clean_step(c);
        }
        for (step, _) in &mut p.by_step {
            *step = one_line(step);
        }
        p.by_step
            .sort_by_key(|(step, _)| crate::store::learning::Step::parse(step));
        spaces.push(p);
    }
    Ok((experiment, spaces))
}

/// Most events a snapshot holds (the newest).
pub const MAX_EVENTS: usize = 5000;

/// A run's events as last read, so the next snapshot reads only the rows added since.
#[derive(Debug, Default, Clone)]
pub struct EventCache {
    run_id: i64,
    last_id: i64,
    events: Arc<Vec<EventRow>>,
}

impl EventCache {
    /// The events of run `run_id` now: those cached plus any newer rows (all of them on a new
    /// run), keeping the newest [`MAX_EVENTS`].
    ///
    /// # Errors
    /// Database errors.
    pub fn refresh(
        &mut self,
        conn: &Connection,
        run_id: i64,
    ) -> Result<Arc<Vec<EventRow>>, StoreError> {
        if run_id != self.run_id {
            *self = EventCache {
                run_id,
                ..EventCache::default()
            };
        }
        let new = queries::events_after(conn, run_id, self.last_id, 100_000)?;
        if let Some((id, ..)) = new.last() {
            self.last_id = *id;
            let mut all: Vec<EventRow> = self.events.as_ref().clone();
            all.extend(new.into_iter().map(|(_, at, level, message)| EventRow {
                at: one_line(&at),
                level: one_line(&level),
                message: one_line(&message),
            }));
            if all.len() > MAX_EVENTS {
                all.drain(..all.len() - MAX_EVENTS);
            }
            self.events = Arc::new(all);
        }
        Ok(self.events.clone())
    }
}

/// The short labels of `run`'s conditions ([`Snapshot::labels`]): by its round in `experiment`,
/// and for skills folders by the learning space whose export they are.
///
/// # Errors
/// Database errors.
pub fn condition_labels(
    conn: &Connection,
    run: &RunRow,
    experiment: Option<&ExperimentRow>,
) -> Result<Vec<String>, StoreError> {
    let round = experiment.and_then(|e| {
        if e.round1_run == run.name {
            Some(1)
        } else if e.round2_run == run.name {
            Some(2)
        } else {
            None
        }
    });
    let mut exported: Vec<(String, String)> = Vec::new();
    if run.conditions.iter().any(|c| c.starts_with("skills:")) {
        for space in lq::list_spaces(conn)? {
            for e in lq::exports(conn, space.id)? {
                exported.push((e.dir, space.condition.clone()));
            }
        }
    }
    // Both are absolute paths as recorded (a condition key resolves its folder when parsed).
    let same = |a: &str, b: &str| a.trim_end_matches('/') == b.trim_end_matches('/');
    Ok(crate::skillsbench::condition::short_labels(
        &run.conditions,
        round,
        |dir| {
            exported
                .iter()
                .find(|(d, _)| same(d, dir))
                .map(|(_, c)| c.clone())
        },
    ))
}

/// Reads a snapshot of run `run_id` (all its events).
///
/// # Errors
/// Database errors.
pub fn load_snapshot(conn: &Connection, run_id: i64) -> Result<Snapshot, StoreError> {
    load_snapshot_with(conn, run_id, &mut EventCache::default())
}

/// Reads a snapshot of run `run_id`, its events through `events` (only new rows are read).
///
/// # Errors
/// Database errors.
pub fn load_snapshot_with(
    conn: &Connection,
    run_id: i64,
    events: &mut EventCache,
) -> Result<Snapshot, StoreError> {
    let tx = conn.unchecked_transaction()?;
    let run = queries::get_run(&tx, run_id)?;
    let (experiment, spaces) = load_learning(&tx, &run)?;
    let mut runs = vec![run.clone()];
    if let Some(e) = &experiment
        && let Some(r1) = queries::find_run(&tx, &e.round1_run)?
        && r1.id != run.id
    {
        runs.push(r1);
    }
    // A run without learning spaces lists its conditions' skill folders too (curated skills).
    let generated = super::skills::generated_sets(&tx, &runs, spaces.is_empty())?;
    let snap = Snapshot {
        tasks: queries::run_tasks(&tx, run_id)?,
        trials: queries::current_briefs(&tx, run_id)?,
        events: events.refresh(&tx, run_id)?,
        labels: condition_labels(&tx, &run, experiment.as_ref())?,
        pending_commands: queries::pending_commands(&tx, run_id)?.len(),
        spend: queries::run_spend(&tx, run_id)?,
        activity: queries::attempt_activity(&tx, run_id)?
            .into_iter()
            .map(|mut a| {
                a.live_tool = a.live_tool.as_deref().map(one_line);
                a
            })
            .collect(),
        owner_alive: crate::store::owner_alive_here(&run, &crate::store::owner::host_name()),
        hosts: queries::run_hosts(&tx, run_id)?,
        plan: queries::trial_plan(&tx, &run)?,
        sequential: queries::sequential_record(&tx, run_id)?,
        success: SuccessRule::default(),
        run,
        experiment,
        spaces,
        generated,
    };
    tx.finish()?;
    Ok(snap)
}

impl Snapshot {
    /// The learning spaces, then the self-generated skill sets: what the skill browser lists.
    pub fn skill_sets(&self) -> Vec<SpaceProgress> {
        self.spaces.iter().chain(&self.generated).cloned().collect()
    }
}
