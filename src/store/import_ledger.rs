//! The import ledger: the importers' typed view of the store. Every write `skillscope import`
//! makes — Harbor job folders, the per-trial CSV, the results registry — goes through a named
//! method of [`ImportTx`] (finding or creating an imported run, its tasks and planned trials,
//! one [`insert_trial`](ImportTx::insert_trial) for every format, superseding a changed trial,
//! bringing a run up to date with its trials), inside one job of the single
//! [`Writer`](super::Writer) that [`ImportLedger`] hands out — as [`RunLedger`](super::RunLedger)
//! does for the engine — so the importers read as parsing rather than SQL.

use std::collections::HashSet;

use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::oneshot;

use super::queries::{self, NewRun};
use super::{RunRow, RunTaskRow, SkillUseRow, Store, StoreError, TrialRow};
use crate::skillsbench::exposure::SkillExposure;

/// The store as the importers write it. Cheap to clone.
#[derive(Clone)]
pub struct ImportLedger {
    store: Store,
}

/// One write transaction of an import (a batch of trials, a published file): the importers'
/// typed writes and the few reads they decide by.
pub struct ImportTx<'c> {
    conn: &'c Connection,
}

/// A trial slot of a run as stored now: the latest attempt at one (task, condition, trial
/// index).
#[derive(Debug, Clone, PartialEq)]
pub struct TrialSlot {
    /// The attempt's row id.
    pub id: i64,
    /// Task id.
    pub task_id: String,
    /// Condition key.
    pub condition: String,
    /// Trial index, 1-based.
    pub trial_index: u32,
    /// Attempt number, 1-based.
    pub attempt: u32,
    /// Its import key (`None` for a trial the engine ran).
    pub import_key: Option<String>,
}

impl ImportLedger {
    /// The ledger of `store`.
    pub fn new(store: &Store) -> ImportLedger {
        ImportLedger {
            store: store.clone(),
        }
    }

    /// Queues `job` as one write transaction without waiting for it; the receiver yields its
    /// result once committed (or rolled back).
    ///
    /// # Errors
    /// [`StoreError::WriterGone`] when the writer has stopped.
    pub fn submit<T, F>(
        &self,
        job: F,
    ) -> Result<oneshot::Receiver<Result<T, StoreError>>, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&ImportTx<'_>) -> Result<T, StoreError> + Send + 'static,
    {
        self.store
            .writer()
            .submit(move |conn| job(&ImportTx { conn }))
    }

    /// Runs `job` as one write transaction and waits for it. Blocking; call from a blocking
    /// thread.
    ///
    /// # Errors
    /// What `job` returns; commit failures; [`StoreError::WriterGone`].
    pub fn write_blocking<T, F>(&self, job: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&ImportTx<'_>) -> Result<T, StoreError> + Send + 'static,
    {
        self.store
            .writer()
            .write_blocking(move |conn| job(&ImportTx { conn }))
    }
}

impl ImportTx<'_> {
    /// True when an attempt with import key `key` is stored.
    ///
    /// # Errors
    /// Database errors.
    pub fn is_imported(&self, key: &str) -> Result<bool, StoreError> {
        let mut st = self
            .conn
            .prepare_cached("SELECT 1 FROM trials WHERE import_key = ?1")?;
        Ok(st.query_row([key], |_| Ok(())).optional()?.is_some())
    }

    /// The stored attempt with import key `key`, when it is one of run `run_id`'s trials:
    /// (row id, trial index, attempt, superseded).
    ///
    /// # Errors
    /// Database errors.
    pub fn attempt_by_key(
        &self,
        run_id: i64,
        key: &str,
    ) -> Result<Option<(i64, u32, u32, bool)>, StoreError> {
        let mut st = self.conn.prepare_cached(
            "SELECT id, trial_index, attempt, superseded FROM trials
             WHERE import_key = ?1 AND run_id = ?2",
        )?;
        Ok(st
            .query_row(rusqlite::params![key, run_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get::<_, i64>(3)? != 0))
            })
            .optional()?)
    }

    /// Every stored import key of `source` (`csv`, `registry`: keys `<source>:…`), in one range
    /// scan of the import-key index.
    ///
    /// # Errors
    /// Database errors.
    pub fn import_keys(&self, source: &str) -> Result<HashSet<String>, StoreError> {
        let mut st = self
            .conn
            .prepare("SELECT import_key FROM trials WHERE import_key >= ?1 AND import_key < ?2")?;
        let keys = st.query_map([format!("{source}:"), format!("{source};")], |r| r.get(0))?;
        Ok(keys.collect::<Result<_, _>>()?)
    }

    /// The run named `name`, if any.
    ///
    /// # Errors
    /// Database errors.
    pub fn find_run(&self, name: &str) -> Result<Option<RunRow>, StoreError> {
        queries::find_run(self.conn, name)
    }

    /// Creates run `new` as imported from `source` (`harbor-import`, `csv`, `registry`): status
    /// `imported`. Returns the stored row.
    ///
    /// # Errors
    /// Database errors (a taken name among them).
    pub fn create_run(&self, new: &NewRun, source: &str) -> Result<RunRow, StoreError> {
        let run = queries::insert_run(self.conn, new)?;
        self.conn.execute(
            "UPDATE runs SET source = ?2, status = 'imported' WHERE id = ?1",
            params![run.id, source],
        )?;
        queries::get_run(self.conn, run.id)
    }

    /// Adds `tasks` to run `run_id`'s task list (a task already listed is updated).
    ///
    /// # Errors
    /// Database errors.
    pub fn add_tasks(&self, run_id: i64, tasks: &[RunTaskRow]) -> Result<(), StoreError> {
        queries::upsert_run_tasks(self.conn, run_id, tasks)
    }

    /// Run `run_id`'s task list.
    ///
    /// # Errors
    /// Database errors.
    pub fn run_tasks(&self, run_id: i64) -> Result<Vec<RunTaskRow>, StoreError> {
        queries::run_tasks(self.conn, run_id)
    }

    /// Records that `source` planned `n_trials` trials of `task_id` under `condition` (see
    /// [`queries::set_trial_plan`]).
    ///
    /// # Errors
    /// Database errors.
    pub fn set_trial_plan(
        &self,
        run_id: i64,
        source: &str,
        task_id: &str,
        condition: &str,
        n_trials: u32,
    ) -> Result<(), StoreError> {
        queries::set_trial_plan(self.conn, run_id, source, task_id, condition, n_trials)
    }

    /// The highest trial index run `run_id` holds of `task_id` under `condition` (superseded
    /// attempts included), `None` without one.
    ///
    /// # Errors
    /// Database errors.
    pub fn top_trial_index(
        &self,
        run_id: i64,
        task_id: &str,
        condition: &str,
    ) -> Result<Option<u32>, StoreError> {
        Ok(self.conn.query_row(
            "SELECT MAX(trial_index) FROM trials WHERE run_id = ?1 AND task_id = ?2 AND condition = ?3",
            params![run_id, task_id, condition],
            |r| r.get(0),
        )?)
    }

    /// The latest attempt of every trial of run `run_id`, as slots.
    ///
    /// # Errors
    /// Database errors.
    pub fn current_slots(&self, run_id: i64) -> Result<Vec<TrialSlot>, StoreError> {
        let mut st = self.conn.prepare(
            "SELECT id, task_id, condition, trial_index, attempt, import_key FROM trials
             WHERE run_id = ?1 AND superseded = 0",
        )?;
        let rows = st.query_map([run_id], |r| {
            Ok(TrialSlot {
                id: r.get(0)?,
                task_id: r.get(1)?,
                condition: r.get(2)?,
                trial_index: r.get(3)?,
                attempt: r.get(4)?,
                import_key: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Records one imported attempt, whatever format it came from (see
    /// [`queries::insert_trial`]); returns its row id.
    ///
    /// # Errors
    /// Database errors.
    pub fn insert_trial(&self, trial: &TrialRow) -> Result<i64, StoreError> {
        queries::insert_trial(self.conn, trial)
    }

    /// Marks attempt `id` superseded (a corrected file brought a newer attempt of its trial).
    ///
    /// # Errors
    /// Database errors.
    pub fn supersede(&self, id: i64) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("UPDATE trials SET superseded = 1 WHERE id = ?1")?
            .execute([id])?;
        Ok(())
    }

    /// Records the skills attempt `id`'s agent used.
    ///
    /// # Errors
    /// Database errors.
    pub fn set_skill_uses(&self, id: i64, uses: &[SkillUseRow]) -> Result<(), StoreError> {
        queries::set_skill_uses(self.conn, id, uses)
    }

    /// Records what attempt `id`'s agent could see of skills.
    ///
    /// # Errors
    /// Database errors.
    pub fn set_exposure(&self, id: i64, exposure: &SkillExposure) -> Result<(), StoreError> {
        super::exposure::record(self.conn, id, exposure)
    }

    /// The conditions run `run_id` has attempts of, each once, in no particular order.
    ///
    /// # Errors
    /// Database errors.
    pub fn trial_conditions(&self, run_id: i64) -> Result<Vec<String>, StoreError> {
        queries::trial_conditions(self.conn, run_id)
    }

    /// Brings a run imported from Harbor job folders up to date with its trials: `conditions`,
    /// its trial count the highest trial index, started at its first trial's start and finished
    /// at its last trial's end, status `imported`.
    ///
    /// # Errors
    /// Database errors.
    pub fn finish_harbor_run(&self, run_id: i64, conditions: &[String]) -> Result<(), StoreError> {
        let (n, started, finished): (u32, Option<String>, Option<String>) = self.conn.query_row(
            "SELECT COALESCE(MAX(trial_index), 0), MIN(started_at), MAX(finished_at)
             FROM trials WHERE run_id = ?1",
            [run_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        self.conn.execute(
            "UPDATE runs SET conditions = ?2, n_trials = ?3, status = 'imported', started_at = ?4,
                 finished_at = ?5 WHERE id = ?1",
            params![
                run_id,
                serde_json::to_string(conditions)?,
                n,
                started,
                finished
            ],
        )?;
        Ok(())
    }

    /// Brings a run imported from a published file up to date with its trials: `conditions`,
    /// its trial count at least `n_trials` and the highest current trial index, status
    /// `imported`.
    ///
    /// # Errors
    /// Database errors.
    pub fn finish_published_run(
        &self,
        run_id: i64,
        conditions: &[String],
        n_trials: u32,
    ) -> Result<(), StoreError> {
        let top: u32 = self.conn.query_row(
            "SELECT COALESCE(MAX(trial_index), 0) FROM trials WHERE run_id = ?1 AND superseded = 0",
            [run_id],
            |r| r.get(0),
        )?;
        self.conn.execute(
            "UPDATE runs SET conditions = ?2, n_trials = MAX(n_trials, ?3), status = 'imported'
             WHERE id = ?1",
            params![
                run_id,
                serde_json::to_string(conditions)?,
                top.max(n_trials)
            ],
        )?;
        Ok(())
    }
}
