//! The `trials` table read and planned: one row per attempt, the latest of each trial current,
//! attempts queued in execution order, retries and requeues keeping the history.

use std::sync::LazyLock;

use rusqlite::types::ToSqlOutput;
use rusqlite::{Connection, Row, params};

use super::patch::{TrialPatch, finish_trial};
use crate::store::StoreError;
use crate::store::model::*;

/// The `trials` table's columns in one list, each with how it is stored (`plain`: the field's
/// own SQL type; `json`: JSON text, read back as `None` when NULL or not JSON). The list makes the
/// SELECT column list, [`TrialRow`]'s decoding and [`insert_trial`]'s values, so a column is
/// named once.
macro_rules! trial_columns {
    ($($col:ident: $kind:ident),* $(,)?) => {
        /// Every column of a [`TrialRow`], in the list's order.
        const TRIAL_COLUMNS: &[&str] = &[$(stringify!($col)),*];

        fn trial_from_row(r: &Row<'_>) -> rusqlite::Result<TrialRow> {
            let mut i = 0;
            let mut next = || {
                i += 1;
                i - 1
            };
            Ok(TrialRow {
                $($col: read::$kind(r, next())?,)*
            })
        }

        /// `t`'s values in [`TRIAL_COLUMNS`]' order.
        fn trial_values(t: &TrialRow) -> rusqlite::Result<Vec<ToSqlOutput<'_>>> {
            Ok(vec![$(write::$kind(&t.$col)?),*])
        }
    };
}

trial_columns! {
    id: plain, run_id: plain, task_id: plain, condition: plain, trial_index: plain,
    attempt: plain, superseded: plain, status: plain, outcome: plain, reward: plain,
    rewards: json, agent: plain, model: plain, host: plain, image: plain, container_id: plain,
    trial_name: plain, trial_dir: plain, queued_at: plain, started_at: plain,
    finished_at: plain, build_started_at: plain, build_finished_at: plain,
    agent_started_at: plain, agent_finished_at: plain, verifier_started_at: plain,
    verifier_finished_at: plain, agent_exit_code: plain, verifier_exit_code: plain,
    error: plain, n_input_tokens: plain, n_cache_tokens: plain, n_output_tokens: plain,
    cost_usd: plain, import_key: plain, trajectory_path: plain, n_steps: plain,
    n_tool_calls: plain, tests_total: plain, tests_passed: plain, n_error_steps: plain,
    final_message: plain, aggregated: plain, fault: plain, failure_category: plain,
    agent_settings: json, live_steps: plain, live_tool: plain, last_output_at: plain,
    stalled_at: plain, missing_env: json, clamped: json, image_builds: json,
    task_digest: plain, tamper: json,
}

/// Reading one column of each kind.
mod read {
    use rusqlite::Row;
    use rusqlite::types::FromSql;

    pub(super) fn plain<T: FromSql>(r: &Row<'_>, i: usize) -> rusqlite::Result<T> {
        r.get(i)
    }

    /// A JSON text column (`None` when NULL or not JSON).
    pub(super) fn json(r: &Row<'_>, i: usize) -> rusqlite::Result<Option<serde_json::Value>> {
        Ok(r.get::<_, Option<String>>(i)?
            .and_then(|s| serde_json::from_str(&s).ok()))
    }
}

/// Writing one column of each kind.
mod write {
    use rusqlite::ToSql;
    use rusqlite::types::{ToSqlOutput, Value};

    pub(super) fn plain<T: ToSql>(v: &T) -> rusqlite::Result<ToSqlOutput<'_>> {
        v.to_sql()
    }

    /// JSON text, or NULL.
    pub(super) fn json(v: &Option<serde_json::Value>) -> rusqlite::Result<ToSqlOutput<'static>> {
        Ok(ToSqlOutput::Owned(
            v.as_ref()
                .map_or(Value::Null, |v| Value::Text(v.to_string())),
        ))
    }
}

/// The SELECT list of a whole [`TrialRow`].
fn trial_cols() -> String {
    TRIAL_COLUMNS.join(", ")
}

/// Inserts `t` as a new attempt (its `id` is not used: the row gets a fresh one) and returns the
/// new row id. Every column of [`TrialRow`] is written, so what is read back is what was given.
/// What importers and synthetic runs write; the engine plans and patches attempts instead.
///
/// # Errors
/// [`StoreError`] when the database fails (a taken `(run, task, condition, index, attempt)` or
/// import key among them).
pub fn insert_trial(conn: &Connection, t: &TrialRow) -> Result<i64, StoreError> {
    static SQL: LazyLock<String> = LazyLock::new(|| {
        let cols = &TRIAL_COLUMNS[1..];
        let marks: Vec<String> = (1..=cols.len()).map(|i| format!("?{i}")).collect();
        format!(
            "INSERT INTO trials ({}) VALUES ({})",
            cols.join(", "),
            marks.join(", ")
        )
    });
    let values = trial_values(t)?;
    conn.prepare_cached(&SQL)?
        .execute(rusqlite::params_from_iter(&values[1..]))?;
    Ok(conn.last_insert_rowid())
}

fn trials_where(
    conn: &Connection,
    clause: &str,
    p: impl rusqlite::Params,
) -> Result<Vec<TrialRow>, StoreError> {
    trials_from(conn, "trials", clause, p)
}

/// [`trials_where`] over `from` (`trials`, or `trials INDEXED BY <index>`).
fn trials_from(
    conn: &Connection,
    from: &str,
    clause: &str,
    p: impl rusqlite::Params,
) -> Result<Vec<TrialRow>, StoreError> {
    let mut st = conn.prepare(&format!(
        "SELECT {} FROM {from} WHERE {clause}",
        trial_cols()
    ))?;
    let rows = st.query_map(p, trial_from_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// One attempt by row id.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn get_trial(conn: &Connection, id: i64) -> Result<TrialRow, StoreError> {
    trials_where(conn, "id = ?1", [id])?
        .pop()
        .ok_or_else(|| StoreError::NotFound(format!("no trial with id {id}")))
}

/// The latest attempt of every trial of a run, ordered by task, condition, trial index.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn current_trials(conn: &Connection, run_id: i64) -> Result<Vec<TrialRow>, StoreError> {
    trials_where(
        conn,
        "run_id = ?1 AND superseded = 0 ORDER BY task_id, condition, trial_index",
        [run_id],
    )
}

/// Where the latest attempt of a trial left its folder (what a report links to).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TrialFolder {
    /// Task id.
    pub task_id: String,
    /// Condition key.
    pub condition: String,
    /// Trial index, 1-based.
    pub trial_index: u32,
    /// Its outcome, once finished.
    pub outcome: Option<Outcome>,
    /// True once it finished (status `done`).
    pub done: bool,
    /// Its reward, when the verifier gave one.
    pub reward: Option<f64>,
    /// The trial folder (absolute for native runs; an imported run's as recorded).
    pub dir: String,
}

/// The folder of the latest attempt of every trial of run `run_id` that has one, ordered by task,
/// condition and trial index.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn trial_folders(conn: &Connection, run_id: i64) -> Result<Vec<TrialFolder>, StoreError> {
    let mut st = conn.prepare_cached(
        "SELECT task_id, condition, trial_index, outcome, trial_dir, status = 'done', reward
         FROM trials
         WHERE run_id = ?1 AND superseded = 0 AND trial_dir IS NOT NULL
         ORDER BY task_id, condition, trial_index",
    )?;
    let rows = st.query_map([run_id], |r| {
        Ok(TrialFolder {
            task_id: r.get(0)?,
            condition: r.get(1)?,
            trial_index: r.get(2)?,
            outcome: r.get(3)?,
            dir: r.get(4)?,
            done: r.get(5)?,
            reward: r.get(6)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The latest attempts of a run whose agent was flagged for tampering (`tamper` set), in task,
/// condition, trial order. They are few: the partial index `trials_tampered` holds only them,
/// so the query reads no other row (the `(run_id, superseded)` indexes would visit every one).
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn tampered_trials(conn: &Connection, run_id: i64) -> Result<Vec<TrialRow>, StoreError> {
    trials_from(
        conn,
        "trials INDEXED BY trials_tampered",
        "run_id = ?1 AND superseded = 0 AND tamper IS NOT NULL ORDER BY task_id, condition, trial_index",
        [run_id],
    )
}

/// The latest attempt of every trial of a run, brief form, in no particular order. One cached
/// statement over the `(run_id, superseded, status)` index.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn current_briefs(conn: &Connection, run_id: i64) -> Result<Vec<TrialBrief>, StoreError> {
    let mut st = conn.prepare_cached(
        "SELECT id, task_id, condition, trial_index, attempt, status, outcome, reward, finished_at
         FROM trials WHERE run_id = ?1 AND superseded = 0",
    )?;
    let rows = st.query_map([run_id], |r| {
        Ok(TrialBrief {
            id: r.get(0)?,
            task_id: r.get(1)?,
            condition: r.get(2)?,
            trial_index: r.get(3)?,
            attempt: r.get(4)?,
            superseded: false,
            status: r.get(5)?,
            outcome: r.get(6)?,
            reward: r.get(7)?,
            finished_at: r.get(8)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Every attempt of one trial, oldest first.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn trial_attempts(
    conn: &Connection,
    run_id: i64,
    key: &TrialKey,
) -> Result<Vec<TrialRow>, StoreError> {
    trials_where(
        conn,
        "run_id = ?1 AND task_id = ?2 AND condition = ?3 AND trial_index = ?4 ORDER BY attempt",
        params![run_id, key.task_id, key.condition, key.trial_index],
    )
}

/// Every attempt of a run, superseded ones included, by id.
///
/// # Errors
/// SQL errors.
pub fn all_trials(conn: &Connection, run_id: i64) -> Result<Vec<TrialRow>, StoreError> {
    trials_where(conn, "run_id = ?1 ORDER BY id", [run_id])
}

/// The latest attempts of run `?1` a process works on ([`TrialStatus::is_active`]: building,
/// agent, verifying), as a clause of [`trials_where`] (the `(run_id, superseded, status)` index).
const ACTIVE: &str =
    "run_id = ?1 AND superseded = 0 AND status IN ('building', 'agent', 'verifying')";

/// The latest attempts of a run that a process works on now (building, agent, verifying), in
/// task, condition, trial order — read through the status index, never the run's other rows.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn active_trials(conn: &Connection, run_id: i64) -> Result<Vec<TrialRow>, StoreError> {
    trials_where(
        conn,
        &format!("{ACTIVE} ORDER BY task_id, condition, trial_index"),
        [run_id],
    )
}

/// Calls `each` with the condition, status and cost (USD, when priced) of every attempt of a
/// run, superseded ones included (every attempt was paid for), in row order: what a spend
/// projection needs, without building each attempt's whole row (a run's status once held every
/// row twice: 70 MiB at 20,000 trials).
///
/// # Errors
/// [`StoreError`] when the database fails or a status is not one this binary writes.
pub fn for_each_attempt_cost(
    conn: &Connection,
    run_id: i64,
    mut each: impl FnMut(&str, TrialStatus, Option<f64>),
) -> Result<(), StoreError> {
    let mut st = conn.prepare_cached(
        "SELECT condition, status, cost_usd FROM trials WHERE run_id = ?1 ORDER BY id",
    )?;
    let mut rows = st.query([run_id])?;
    while let Some(r) = rows.next()? {
        let condition = r
            .get_ref(0)?
            .as_str()
            .map_err(|e| StoreError::Decode(format!("trials.condition: {e}")))?;
        each(condition, r.get(1)?, r.get(2)?);
    }
    Ok(())
}

/// Queued attempts trial index first, so every task and condition gets its first trial before
/// any gets its second. This is the order they start in, but the engine's schedule decides it
/// (`engine/schedule.rs`, `stage_order`: trial index, task id, condition key), whatever order it
/// is given; this order is the same for readers of the queue (its test checks both agree).
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn queued_trials(conn: &Connection, run_id: i64) -> Result<Vec<TrialRow>, StoreError> {
    trials_where(
        conn,
        "run_id = ?1 AND superseded = 0 AND status = 'queued' ORDER BY trial_index, task_id, condition, id",
        [run_id],
    )
}

/// Inserts attempt 1 (queued) of every planned trial that does not exist yet. `name` gives the
/// Harbor trial name of (key, attempt). Returns how many were added.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn plan_trials(
    conn: &Connection,
    run: &RunRow,
    task_ids: &[String],
    name: &dyn Fn(&TrialKey, u32) -> String,
) -> Result<usize, StoreError> {
    let mut st = conn.prepare(
        "INSERT OR IGNORE INTO trials (run_id, task_id, condition, trial_index, attempt, status, agent, model,
                                       trial_name, queued_at)
         VALUES (?1, ?2, ?3, ?4, 1, 'queued', ?5, ?6, ?7, ?8)",
    )?;
    let now = now_rfc3339();
    let mut added = 0;
    for task in task_ids {
        for cond in &run.conditions {
            for idx in 1..=run.n_trials {
                let key = TrialKey {
                    task_id: task.clone(),
                    condition: cond.clone(),
                    trial_index: idx,
                };
                added += st.execute(params![
                    run.id,
                    task,
                    cond,
                    idx,
                    run.agent,
                    run.model,
                    name(&key, 1),
                    now
                ])?;
            }
        }
    }
    Ok(added)
}

/// Marks attempt `id` superseded and inserts the next attempt, queued. Returns the new attempt.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn new_attempt(
    conn: &Connection,
    id: i64,
    name: &dyn Fn(&TrialKey, u32) -> String,
) -> Result<TrialRow, StoreError> {
    let old = get_trial(conn, id)?;
    let attempts = trial_attempts(conn, old.run_id, &old.key())?;
    let next = attempts.iter().map(|a| a.attempt).max().unwrap_or(0) + 1;
    conn.execute(
        "UPDATE trials SET superseded = 1 WHERE run_id = ?1 AND task_id = ?2 AND condition = ?3 AND trial_index = ?4",
        params![old.run_id, old.task_id, old.condition, old.trial_index],
    )?;
    conn.execute(
        "INSERT INTO trials (run_id, task_id, condition, trial_index, attempt, status, agent, model, trial_name, queued_at)
         VALUES (?1, ?2, ?3, ?4, ?5, 'queued', ?6, ?7, ?8, ?9)",
        params![
            old.run_id,
            old.task_id,
            old.condition,
            old.trial_index,
            next,
            old.agent,
            old.model,
            name(&old.key(), next),
            now_rfc3339()
        ],
    )?;
    get_trial(conn, conn.last_insert_rowid())
}

/// Attempts left active (building/agent/verifying) — by a killed process or an interrupted one —
/// are closed as `interrupted` and a fresh queued attempt replaces each. Returns the closed ones.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn requeue_active(
    conn: &Connection,
    run_id: i64,
    name: &dyn Fn(&TrialKey, u32) -> String,
) -> Result<Vec<TrialRow>, StoreError> {
    let active = trials_where(conn, ACTIVE, [run_id])?;
    for t in &active {
        finish_trial(
            conn,
            t.id,
            &TrialPatch {
                outcome: Some(Outcome::Interrupted),
                error: Some("the process running this attempt stopped; re-queued".into()),
                finished_at: Some(now_rfc3339()),
                ..Default::default()
            },
        )?;
        new_attempt(conn, t.id, name)?;
    }
    Ok(active)
}

/// The conditions run `run_id` has attempts of, each once, in no particular order.
///
/// # Errors
/// Database errors.
pub fn trial_conditions(conn: &Connection, run_id: i64) -> Result<Vec<String>, StoreError> {
    let mut st = conn.prepare("SELECT DISTINCT condition FROM trials WHERE run_id = ?1")?;
    let rows = st.query_map([run_id], |r| r.get(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}
