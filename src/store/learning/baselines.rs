//! Reused baselines (`experiment_baselines`): the stored run an experiment took round 1's
//! conditions from (`experiment --baseline-from RUN`), where it came from and the differences
//! `--allow-drift` accepted.

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::now;
use crate::domain::provenance::Mismatch;
use crate::store::StoreError;

/// An experiment's reused baseline, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineRow {
    /// The experiment.
    pub experiment: String,
    /// The run reused as round 1.
    pub run: String,
    /// Its row id.
    pub run_id: i64,
    /// `native`, or the import's source (`harbor`, …).
    pub source: String,
    /// The database it was read in (a path, as given).
    pub db: String,
    /// When it was checked (RFC 3339).
    pub checked_at: String,
    /// The differences accepted with `--allow-drift` (baseline = left, plan = right).
    pub accepted: Vec<Mismatch>,
}

/// Records (or replaces) experiment `row.experiment`'s baseline; `checked_at` is set now.
///
/// # Errors
/// SQL errors.
pub fn put_baseline(conn: &Connection, row: &BaselineRow) -> Result<(), StoreError> {
    conn.execute(
        "INSERT OR REPLACE INTO experiment_baselines
             (experiment, run, run_id, source, db, checked_at, accepted)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            row.experiment,
            row.run,
            row.run_id,
            row.source,
            row.db,
            now(),
            serde_json::to_string(&row.accepted)?
        ],
    )?;
    Ok(())
}

/// Experiment `experiment`'s reused baseline, if it has one.
///
/// # Errors
/// SQL errors; [`StoreError::Decode`] for an unreadable `accepted` list.
pub fn find_baseline(
    conn: &Connection,
    experiment: &str,
) -> Result<Option<BaselineRow>, StoreError> {
    let row = conn
        .query_row(
            "SELECT experiment, run, run_id, source, db, checked_at, accepted
             FROM experiment_baselines WHERE experiment = ?1",
            [experiment],
            |r| {
                Ok((
                    BaselineRow {
                        experiment: r.get(0)?,
                        run: r.get(1)?,
                        run_id: r.get(2)?,
                        source: r.get(3)?,
                        db: r.get(4)?,
                        checked_at: r.get(5)?,
                        accepted: Vec::new(),
                    },
                    r.get::<_, String>(6)?,
                ))
            },
        )
        .optional()?;
    row.map(|(mut b, accepted)| {
        b.accepted = serde_json::from_str(&accepted).map_err(|e| {
            StoreError::Decode(format!(
                "experiment_baselines.accepted of {experiment}: {e}"
            ))
        })?;
        Ok(b)
    })
    .transpose()
}
