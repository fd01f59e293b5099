//! A trial row as the analysis's single pass reads it ([`TrialFacts`]): the columns
//! ([`PASS_COLUMNS`]), the decoding of one row ([`decode_row`]) and the sequential read of a
//! run's rows of the table ([`scan_trials`]). [`super::slot_facts`] packs the same facts;
//! [`super::analysis::for_each_trial`] gives them from either.

use rusqlite::Connection;
use rusqlite::types::ValueRef;

use super::{Outcome, StoreError, TrialStatus};
use crate::domain::FailureCategory;

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
    /// Trial folder, given only where its failure category is decided from it ([`decode_row`]).
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

/// The columns of `trials` the analysis's single pass reads, in [`decode_row`]'s order. The
/// triggers that keep [`super::slot_facts`] fresh fire on updates of exactly these and `run_id`
/// (migration 21; a test holds the two lists together).
pub(crate) const PASS_COLUMNS: [&str; 17] = [
    "id",
    "task_id",
    "condition",
    "trial_index",
    "attempt",
    "superseded",
    "status",
    "outcome",
    "reward",
    "aggregated",
    "failure_category",
    "trial_dir",
    "agent_exit_code",
    "agent_settings",
    "missing_env",
    "clamped",
    "task_digest",
];

/// `PASS_COLUMNS` joined for a `SELECT`.
pub(crate) fn pass_select() -> String {
    PASS_COLUMNS.join(", ")
}

/// [`for_each_trial`] as one sequential read of the run's rows of the table, in row-id order.
///
/// # Errors
/// As [`for_each_trial`].
pub(crate) fn scan_trials(
    conn: &Connection,
    run_id: i64,
    each: &mut impl FnMut(TrialFacts<'_>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let Some((lo, hi)) = row_range(conn, run_id)? else {
        return Ok(());
    };
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {} FROM trials NOT INDEXED WHERE id BETWEEN ?2 AND ?3 AND run_id = ?1",
        pass_select()
    ))?;
    let mut rows = stmt.query(rusqlite::params![run_id, lo, hi])?;
    while let Some(r) = rows.next()? {
        if let Some(f) = decode_row(r)? {
            each(f)?;
        }
    }
    Ok(())
}

/// One row of a `SELECT` of [`PASS_COLUMNS`] as [`TrialFacts`]; `None` for a row whose status
/// is none of [`TrialStatus::ALL`] or whose superseded flag is neither 0 nor 1 (written by
/// something else): it is not given, and counts as not run, as a missing row does.
///
/// The trial folder is given only where the analysis reads it: a finished attempt with outcome
/// fail, agent timeout or verifier timeout and no stored failure category (its category is then
/// decided from the folder). Other rows' folders are `None`, so the packed facts need not hold
/// a path per trial.
///
/// # Errors
/// [`StoreError::Decode`] when a text column is not text or not UTF-8.
pub(crate) fn decode_row<'r>(
    r: &'r rusqlite::Row<'_>,
) -> Result<Option<TrialFacts<'r>>, StoreError> {
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
    let superseded = match r.get::<_, i64>(5)? {
        0 => false,
        1 => true,
        _ => return Ok(None),
    };
    if !TrialStatus::ALL.iter().any(|s| s.as_str() == status) {
        return Ok(None);
    }
    let done = status == TrialStatus::Done.as_str();
    let failure_category = optional_text(r.get_ref(10)?)?;
    let trial_dir = optional_text(r.get_ref(11)?)?;
    Ok(Some(TrialFacts {
        id: r.get(0)?,
        task: text(r.get_ref(1)?)?,
        condition: text(r.get_ref(2)?)?,
        trial_index: r.get(3)?,
        attempt: r.get(4)?,
        superseded,
        status,
        done,
        outcome,
        reward,
        aggregated: r.get::<_, i64>(9)? != 0,
        failure_category,
        trial_dir: trial_dir.filter(|_| folder_decides(done, outcome, failure_category)),
        agent_exit_code: r.get(12)?,
        agent_settings: optional_text(r.get_ref(13)?)?,
        missing_env: optional_text(r.get_ref(14)?)?,
        clamped: optional_text(r.get_ref(15)?)?,
        task_digest: optional_text(r.get_ref(16)?)?,
    }))
}

/// Whether a row's failure category may be decided from its trial folder: finished, outcome
/// fail or a timeout, and no stored category this binary knows.
pub(crate) fn folder_decides(
    done: bool,
    outcome: Option<Outcome>,
    failure_category: Option<&str>,
) -> bool {
    done && outcome.is_some_and(FailureCategory::applies_to)
        && failure_category.and_then(FailureCategory::parse).is_none()
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
