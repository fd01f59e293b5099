//! The SQL of the analysis (`analysis::results`) and the report: the latest attempts of a run
//! as typed rows, streamed in the order of the covering `trials_brief` index; its judged
//! failures with what classifies them; which conditions came from published aggregates; the
//! agent settings its trials recorded; the newest skill invocation of a set of runs. Reads only.

use rusqlite::Connection;
use rusqlite::types::ValueRef;

use super::{Outcome, StoreError, TrialStatus};

/// One latest attempt as the results tally reads it (borrowed from the row being read).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttemptRow<'a> {
    /// Task id.
    pub task: &'a str,
    /// Condition key.
    pub condition: &'a str,
    /// Whether the trial finished (status `done`).
    pub done: bool,
    /// Its outcome, when recorded and known.
    pub outcome: Option<Outcome>,
    /// Verifier reward clamped to [0, 1]; `None` when there is none.
    pub reward: Option<f64>,
    /// Trial index (1-based).
    pub trial_index: i64,
}

/// Calls `each` with every latest attempt (not superseded) of run `run_id` whose trial index
/// is in 1..=`max_index`, ordered by (task, condition) — the order of the covering
/// `trials_brief` index: no table lookups, no sort, nothing copied per row. At a million
/// trials this beats both a `GROUP BY … status, outcome` (a temporary B-tree) and per-outcome
/// conditional sums (SQLite evaluates each per row).
///
/// # Errors
/// [`StoreError`] from SQLite or from `each`; [`StoreError::Decode`] when a task or condition is
/// not text.
pub fn for_each_latest_attempt(
    conn: &Connection,
    run_id: i64,
    max_index: u32,
    mut each: impl FnMut(AttemptRow<'_>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT task_id, condition, status, outcome, reward, trial_index
         FROM trials
         WHERE run_id = ?1 AND superseded = 0 AND trial_index BETWEEN 1 AND ?2
         ORDER BY task_id, condition",
    )?;
    let done_str = TrialStatus::Done.as_str().as_bytes();
    let mut rows = stmt.query(rusqlite::params![run_id, max_index])?;
    while let Some(r) = rows.next()? {
        let outcome = match r.get_ref(3)? {
            ValueRef::Text(s) => Outcome::ALL
                .into_iter()
                .find(|o| o.as_str().as_bytes() == s),
            _ => None,
        };
        let reward = match r.get_ref(4)? {
            ValueRef::Real(v) => Some(v.clamp(0.0, 1.0)),
            ValueRef::Integer(v) => Some((v as f64).clamp(0.0, 1.0)),
            _ => None,
        };
        each(AttemptRow {
            task: text(r.get_ref(0)?)?,
            condition: text(r.get_ref(1)?)?,
            done: matches!(r.get_ref(2)?, ValueRef::Text(s) if s == done_str),
            outcome,
            reward,
            trial_index: r.get(5)?,
        })?;
    }
    Ok(())
}

/// A task or condition cell as text (`""` for NULL).
fn text(v: ValueRef<'_>) -> Result<&str, StoreError> {
    match v {
        ValueRef::Null => Ok(""),
        ValueRef::Text(t) => std::str::from_utf8(t)
            .map_err(|e| StoreError::Decode(format!("task or condition not UTF-8: {e}"))),
        other => Err(StoreError::Decode(format!(
            "expected text, got {:?}",
            other.data_type()
        ))),
    }
}

/// The conditions of run `run_id` that hold trials from published aggregates.
///
/// # Errors
/// [`StoreError`] from SQLite.
pub fn aggregated_conditions(conn: &Connection, run_id: i64) -> Result<Vec<String>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT DISTINCT condition FROM trials WHERE run_id = ?1 AND aggregated = 1",
    )?;
    let rows = stmt
        .query_map([run_id], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}

/// A finished latest attempt with a failing verdict (fail, agent or verifier timeout) and what
/// its failure category is decided from.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgedFailureRow {
    /// Task id.
    pub task: String,
    /// Condition key.
    pub condition: String,
    /// Trial index (1-based).
    pub trial_index: u32,
    /// Outcome.
    pub outcome: Outcome,
    /// The stored failure category, when one was recorded.
    pub category: Option<String>,
    /// Trial folder, when kept.
    pub trial_dir: Option<String>,
    /// The agent's exit code.
    pub agent_exit_code: Option<i64>,
    /// Verifier reward (unclamped): a timeout can still have succeeded.
    pub reward: Option<f64>,
}

/// The judged failures of run `run_id`: finished latest attempts whose outcome is fail, agent
/// timeout or verifier timeout (the caller drops those whose reward still succeeds).
///
/// # Errors
/// [`StoreError`] from SQLite.
pub fn judged_failures(
    conn: &Connection,
    run_id: i64,
) -> Result<Vec<JudgedFailureRow>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT task_id, condition, trial_index, outcome, failure_category, trial_dir, agent_exit_code, reward
         FROM trials
         WHERE run_id = ?1 AND superseded = 0 AND status = 'done'
           AND outcome IN ('fail', 'agent-timeout', 'verifier-timeout')",
    )?;
    let rows = stmt
        .query_map([run_id], |r| {
            Ok(JudgedFailureRow {
                task: r.get(0)?,
                condition: r.get(1)?,
                trial_index: r.get(2)?,
                outcome: r.get(3)?,
                category: r.get(4)?,
                trial_dir: r.get(5)?,
                agent_exit_code: r.get(6)?,
                reward: r.get(7)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}

/// The distinct `agent_settings` JSON texts the trials of run `run_id` recorded.
///
/// # Errors
/// [`StoreError`] from SQLite.
pub fn agent_settings(conn: &Connection, run_id: i64) -> Result<Vec<String>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT DISTINCT agent_settings FROM trials WHERE run_id = ?1 AND agent_settings IS NOT NULL",
    )?;
    let rows = stmt
        .query_map([run_id], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}

/// The timestamp of the newest skill invocation of the runs `run_ids` (RFC 3339 as stored);
/// `None` when they have none.
///
/// # Errors
/// [`StoreError`] from SQLite.
pub fn latest_invocation(conn: &Connection, run_ids: &[i64]) -> Result<Option<String>, StoreError> {
    let ids = serde_json::to_string(run_ids).map_err(|e| StoreError::Decode(e.to_string()))?;
    Ok(conn.query_row(
        "SELECT MAX(timestamp) FROM skill_invocations
         WHERE run_id IN (SELECT value FROM json_each(?1))",
        [ids],
        |r| r.get(0),
    )?)
}

/// How many trial rows (every attempt) the store holds.
///
/// # Errors
/// [`StoreError`] from SQLite.
pub fn count_trials(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.query_row("SELECT COUNT(*) FROM trials", [], |r| r.get(0))?)
}
