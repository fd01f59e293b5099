//! The SQL of the analysis (`analysis::results`) and the report: every trial row of a run as
//! typed facts, read in one sequential pass over the run's rows of the table; the agent settings
//! and environment marks that pass gathers; the newest skill invocation of a set of runs. Reads
//! only.

use rusqlite::Connection;
use rusqlite::types::ValueRef;

use super::queries::EnvironmentMark;
use super::{Outcome, StoreError, TrialStatus};

/// One trial row (any attempt) as the analysis's single pass reads it, borrowed from the row
/// being read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrialFacts<'a> {
    /// Row id.
    pub id: i64,
    /// Task id.
    pub task: &'a str,
    /// Condition key.
    pub condition: &'a str,
    /// Trial index (1-based).
    pub trial_index: i64,
    /// Attempt number.
    pub attempt: i64,
    /// True for an attempt a retry replaced (only the latest attempt counts).
    pub superseded: bool,
    /// Status text (`done`, `queued`, …).
    pub status: &'a str,
    /// Whether the trial finished (status `done`).
    pub done: bool,
    /// Its outcome, when recorded and known.
    pub outcome: Option<Outcome>,
    /// Verifier reward clamped to [0, 1]; `None` when there is none.
    pub reward: Option<f64>,
    /// From a published aggregate rather than a trial folder.
    pub aggregated: bool,
    /// The stored failure category.
    pub failure_category: Option<&'a str>,
    /// Trial folder, when kept.
    pub trial_dir: Option<&'a str>,
    /// The agent's exit code.
    pub agent_exit_code: Option<i64>,
    /// The agent settings it recorded (JSON text).
    pub agent_settings: Option<&'a str>,
    /// Environment values left empty (JSON list of names).
    pub missing_env: Option<&'a str>,
    /// CPU or memory requests cut to the host's (JSON).
    pub clamped: Option<&'a str>,
    /// The task digest the attempt ran (`sha256:<hex>`), when recorded.
    pub task_digest: Option<&'a str>,
}

/// The row ids that bound every attempt of run `run_id`: `None` when it has none. One index seek
/// per status and superseded flag (`trials_by_run_state` ends in the row id), so it costs no
/// scan; rows of a status outside [`TrialStatus::ALL`] are outside it (and count as not run, as
/// a missing row does).
///
/// # Errors
/// [`StoreError`] from SQLite.
pub(crate) fn row_range(conn: &Connection, run_id: i64) -> Result<Option<(i64, i64)>, StoreError> {
    let mut first = conn.prepare_cached(
        "SELECT min(id) FROM trials WHERE run_id = ?1 AND superseded = ?2 AND status = ?3",
    )?;
    let mut last = conn.prepare_cached(
        "SELECT max(id) FROM trials WHERE run_id = ?1 AND superseded = ?2 AND status = ?3",
    )?;
    let mut range: Option<(i64, i64)> = None;
    for superseded in [0, 1] {
        for status in TrialStatus::ALL {
            let args = rusqlite::params![run_id, superseded, status.as_str()];
            let lo: Option<i64> = first.query_row(args, |r| r.get(0))?;
            let hi: Option<i64> = last.query_row(args, |r| r.get(0))?;
            if let (Some(lo), Some(hi)) = (lo, hi) {
                range = Some(range.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
            }
        }
    }
    Ok(range)
}

/// Calls `each` with every trial row (every attempt, superseded ones too) of run `run_id`, in
/// row-id order: one sequential read of the run's rows of the table, bounded by their first and
/// last row id — no index lookup per row, no sort. The results' single pass: the tally, the
/// judged failures' categories, the agent settings and the environment marks all come from it.
///
/// # Errors
/// [`StoreError`] from SQLite or from `each`; [`StoreError::Decode`] when a task, condition or
/// other text column is not text.
pub fn for_each_trial(
    conn: &Connection,
    run_id: i64,
    mut each: impl FnMut(TrialFacts<'_>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let Some((lo, hi)) = row_range(conn, run_id)? else {
        return Ok(());
    };
    let mut stmt = conn.prepare_cached(
        "SELECT id, task_id, condition, trial_index, attempt, superseded, status, outcome, reward,
                aggregated, failure_category, trial_dir, agent_exit_code, agent_settings,
                missing_env, clamped, task_digest
         FROM trials NOT INDEXED
         WHERE id BETWEEN ?2 AND ?3 AND run_id = ?1",
    )?;
    let done_str = TrialStatus::Done.as_str();
    let mut rows = stmt.query(rusqlite::params![run_id, lo, hi])?;
    while let Some(r) = rows.next()? {
        let outcome = match r.get_ref(7)? {
            ValueRef::Text(s) => Outcome::ALL
                .into_iter()
                .find(|o| o.as_str().as_bytes() == s),
            _ => None,
        };
        let reward = match r.get_ref(8)? {
            ValueRef::Real(v) => Some(v.clamp(0.0, 1.0)),
            ValueRef::Integer(v) => Some((v as f64).clamp(0.0, 1.0)),
            _ => None,
        };
        let status = text(r.get_ref(6)?)?;
        each(TrialFacts {
            id: r.get(0)?,
            task: text(r.get_ref(1)?)?,
            condition: text(r.get_ref(2)?)?,
            trial_index: r.get(3)?,
            attempt: r.get(4)?,
            superseded: r.get::<_, i64>(5)? != 0,
            status,
            done: status == done_str,
            outcome,
            reward,
            aggregated: r.get::<_, i64>(9)? != 0,
            failure_category: optional_text(r.get_ref(10)?)?,
            trial_dir: optional_text(r.get_ref(11)?)?,
            agent_exit_code: r.get(12)?,
            agent_settings: optional_text(r.get_ref(13)?)?,
            missing_env: optional_text(r.get_ref(14)?)?,
            clamped: optional_text(r.get_ref(15)?)?,
            task_digest: optional_text(r.get_ref(16)?)?,
        })?;
    }
    Ok(())
}

/// A text cell as text (`""` for NULL).
fn text(v: ValueRef<'_>) -> Result<&str, StoreError> {
    Ok(optional_text(v)?.unwrap_or(""))
}

/// A text cell as text (`None` for NULL).
fn optional_text(v: ValueRef<'_>) -> Result<Option<&str>, StoreError> {
    match v {
        ValueRef::Null => Ok(None),
        ValueRef::Text(t) => std::str::from_utf8(t)
            .map(Some)
            .map_err(|e| StoreError::Decode(format!("trial text column not UTF-8: {e}"))),
        other => Err(StoreError::Decode(format!(
            "expected text, got {:?}",
            other.data_type()
        ))),
    }
}

/// The distinct agent settings of a run's trials (every attempt), gathered from
/// [`for_each_trial`]'s rows: each JSON text once, in the order the rows sort by (superseded,
/// status, row id) — the order of the run's `trials_by_run_state` index.
#[derive(Debug, Default)]
pub struct AgentSettingsSeen {
    first: std::collections::HashMap<String, (bool, String, i64)>,
}

impl AgentSettingsSeen {
    /// Adds the settings of one row.
    pub fn add(&mut self, row: &TrialFacts<'_>) {
        let Some(text) = row.agent_settings else {
            return;
        };
        let key = (row.superseded, row.status, row.id);
        match self.first.get_mut(text) {
            Some(k) if (k.0, k.1.as_str(), k.2) <= key => {}
            Some(k) => *k = (row.superseded, row.status.to_string(), row.id),
            None => {
                self.first.insert(
                    text.to_string(),
                    (row.superseded, row.status.to_string(), row.id),
                );
            }
        }
    }

    /// The distinct texts in order.
    pub fn into_texts(self) -> Vec<String> {
        let mut v: Vec<(String, (bool, String, i64))> = self.first.into_iter().collect();
        v.sort_by(|a, b| a.1.cmp(&b.1));
        v.into_iter().map(|(t, _)| t).collect()
    }
}

/// The environment marks of a run's latest attempts, gathered from [`for_each_trial`]'s rows:
/// those with a `missing_env` or `clamped` mark, by task, condition and trial index.
#[derive(Debug, Default)]
pub struct EnvironmentMarks {
    marks: Vec<((String, String, i64, i64), EnvironmentMark)>,
}

impl EnvironmentMarks {
    /// Adds one row when it is a latest attempt with a mark.
    pub fn add(&mut self, row: &TrialFacts<'_>) {
        if row.superseded || (row.missing_env.is_none() && row.clamped.is_none()) {
            return;
        }
        let json = |s: Option<&str>| s.and_then(|s| serde_json::from_str(s).ok());
        let mark = EnvironmentMark {
            task_id: row.task.to_string(),
            condition: row.condition.to_string(),
            missing_env: json(row.missing_env)
                .and_then(|v: serde_json::Value| serde_json::from_value(v).ok())
                .unwrap_or_default(),
            clamped: json(row.clamped),
        };
        let key = (
            row.task.to_string(),
            row.condition.to_string(),
            row.trial_index,
            row.attempt,
        );
        self.marks.push((key, mark));
    }

    /// The marks in task, condition, trial index order.
    pub fn into_marks(mut self) -> Vec<EnvironmentMark> {
        self.marks.sort_by(|a, b| a.0.cmp(&b.0));
        self.marks.into_iter().map(|(_, m)| m).collect()
    }
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
