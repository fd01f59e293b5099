//! The SQL of the analysis (`analysis::results`) and the report: every trial row of a run as
//! typed facts ([`for_each_trial`]: from the packed facts of [`super::slot_facts`] and the table
//! rows of [`super::trial_facts`]); the agent settings and environment marks that pass gathers;
//! the newest skill invocation of a set of runs. Reads only.

use rusqlite::Connection;

use super::StoreError;
use super::queries::EnvironmentMark;
pub use super::trial_facts::TrialFacts;

/// Calls `each` with every trial row (every attempt, superseded ones too) of run `run_id`: the
/// results' single pass — the tally, the judged failures' categories, the agent settings and
/// the environment marks all come from it.
///
/// Rows come grouped by (task, condition), in row-id order within each group; the groups in no
/// set order. Everything is read in one read transaction (when `conn` is not already in one):
/// the packed facts of the (task, condition)s whose rows did not change since they were packed
/// ([`super::slot_facts`]), and the rows of the others from the table. When most changed, or
/// the packed facts cannot be used (a database this binary could not migrate), it is one
/// sequential read of the run's rows, bounded by their first and last row id — no index lookup
/// per row, no sort. Either way `each` sees the same rows with the same facts.
///
/// # Errors
/// [`StoreError`] from SQLite or from `each`; [`StoreError::Decode`] when a task, condition or
/// other text column is not text, or packed facts do not decode.
pub fn for_each_trial(
    conn: &Connection,
    run_id: i64,
    mut each: impl FnMut(TrialFacts<'_>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    // One snapshot for the packed facts, the changed groups' rows and the counts that check them.
    let _snapshot = if conn.is_autocommit() {
        Some(conn.unchecked_transaction()?)
    } else {
        None
    };
    if super::slot_facts::for_each_trial(conn, run_id, &mut each)? {
        return Ok(());
    }
    super::trial_facts::scan_trials(conn, run_id, &mut each)
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
