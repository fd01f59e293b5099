//! Learning spaces: one per experiment space (condition × round), with its Acontext ids.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};

use super::{all, now};
use crate::store::StoreError;

/// A learning space as skillscope tracks it (`learning_spaces`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpaceRow {
    /// Row id.
    pub id: i64,
    /// Label (`LS-A`, `LS-B`, …), unique per source run.
    pub label: String,
    /// The run whose trials it learns from.
    pub run_id: i64,
    /// Condition key of those trials.
    pub condition: String,
    /// Experiment name, when part of one.
    pub experiment: Option<String>,
    /// Acontext base URL.
    pub base_url: String,
    /// Acontext learning space UUID, once created or found.
    pub remote_id: Option<String>,
    /// Starts with the tasks' curated skills.
    pub curated: bool,
    /// Keeps Acontext's default skills (`daily-logs`, `user-general-facts`).
    pub keep_defaults: bool,
    /// How verifier verdicts reach Acontext: `patch` or `criteria` (see `acontext::learn`).
    pub status_mode: Option<String>,
    /// `setup`, `learning` or `learned`.
    pub state: String,
    /// Created.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
    /// Why the last pass stopped, if it did.
    pub error: Option<String>,
    /// While Acontext is away: since when this space waits for it, RFC 3339.
    #[serde(default)]
    pub waiting_since: Option<String>,
    /// While waiting: the last error (names the endpoint).
    #[serde(default)]
    pub waiting_reason: Option<String>,
    /// While waiting: when the next retry is made, RFC 3339.
    #[serde(default)]
    pub next_retry_at: Option<String>,
}

/// A space to create (or find again).
#[derive(Debug, Clone)]
pub struct NewSpace {
    /// Label.
    pub label: String,
    /// Source run.
    pub run_id: i64,
    /// Condition key.
    pub condition: String,
    /// Experiment.
    pub experiment: Option<String>,
    /// Base URL.
    pub base_url: String,
    /// Curated start.
    pub curated: bool,
    /// Keep default skills.
    pub keep_defaults: bool,
}

pub(super) const SPACE_COLS: &str = "id, label, run_id, condition, experiment, base_url, remote_id, curated, \
     keep_defaults, status_mode, state, created_at, updated_at, error, waiting_since, waiting_reason, \
     next_retry_at";

pub(super) fn space_row(r: &Row) -> rusqlite::Result<SpaceRow> {
    Ok(SpaceRow {
        id: r.get(0)?,
        label: r.get(1)?,
        run_id: r.get(2)?,
        condition: r.get(3)?,
        experiment: r.get(4)?,
        base_url: r.get(5)?,
        remote_id: r.get(6)?,
        curated: r.get(7)?,
        keep_defaults: r.get(8)?,
        status_mode: r.get(9)?,
        state: r.get(10)?,
        created_at: r.get(11)?,
        updated_at: r.get(12)?,
        error: r.get(13)?,
        waiting_since: r.get(14)?,
        waiting_reason: r.get(15)?,
        next_retry_at: r.get(16)?,
    })
}

/// Records that space `label` of run `run` waits for Acontext — `Some((since, reason, next
/// retry))`, RFC 3339 times — or, with `None`, that it no longer does.
///
/// # Errors
/// SQL errors.
pub fn set_space_waiting(
    conn: &Connection,
    run: &str,
    label: &str,
    waiting: Option<(&str, &str, &str)>,
) -> Result<(), StoreError> {
    let (since, reason, next) = match waiting {
        Some((s, r, n)) => (Some(s), Some(r), Some(n)),
        None => (None, None, None),
    };
    conn.execute(
        "UPDATE learning_spaces SET waiting_since = ?3, waiting_reason = ?4, next_retry_at = ?5
         WHERE label = ?2 AND run_id = (SELECT id FROM runs WHERE name = ?1)",
        params![run, label, since, reason, next],
    )?;
    Ok(())
}

/// The space of `(run, label)`, created when missing. An existing space keeps its remote id
/// and progress; its settings must match.
///
/// # Errors
/// [`StoreError::Conflict`] when the stored space learns from another condition, another
/// server or with other options; SQL errors.
pub fn find_or_insert_space(conn: &Connection, s: &NewSpace) -> Result<SpaceRow, StoreError> {
    let existing = conn
        .query_row(
            &format!("SELECT {SPACE_COLS} FROM learning_spaces WHERE run_id = ?1 AND label = ?2"),
            params![s.run_id, s.label],
            space_row,
        )
        .optional()?;
    if let Some(row) = existing {
        let differs = [
            (row.condition != s.condition, "condition"),
            (row.base_url != s.base_url, "Acontext base URL"),
            (row.curated != s.curated, "curated start"),
            (
                row.keep_defaults != s.keep_defaults,
                "default-skill setting",
            ),
        ];
        if let Some((_, what)) = differs.iter().find(|(d, _)| *d) {
            return Err(StoreError::Conflict(format!(
                "learning space {} of this run already exists with another {what}; use another label",
                s.label
            )));
        }
        return Ok(row);
    }
    let t = now();
    conn.execute(
        "INSERT INTO learning_spaces (label, run_id, condition, experiment, base_url, curated,
             keep_defaults, state, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'setup', ?8, ?8)",
        params![
            s.label,
            s.run_id,
            s.condition,
            s.experiment,
            s.base_url,
            s.curated,
            s.keep_defaults,
            t
        ],
    )?;
    get_space(conn, conn.last_insert_rowid())
}

/// One space.
///
/// # Errors
/// [`StoreError::NotFound`]; SQL errors.
pub fn get_space(conn: &Connection, id: i64) -> Result<SpaceRow, StoreError> {
    conn.query_row(
        &format!("SELECT {SPACE_COLS} FROM learning_spaces WHERE id = ?1"),
        [id],
        space_row,
    )
    .optional()?
    .ok_or_else(|| StoreError::NotFound(format!("no learning space {id}")))
}

/// Every space, oldest first.
///
/// # Errors
/// SQL errors.
pub fn list_spaces(conn: &Connection) -> Result<Vec<SpaceRow>, StoreError> {
    all(
        conn,
        &format!("SELECT {SPACE_COLS} FROM learning_spaces ORDER BY id"),
        [],
        space_row,
    )
}

/// Changes to a space (`None` leaves a field as it is).
#[derive(Debug, Clone, Default)]
pub struct SpacePatch {
    /// Remote id.
    pub remote_id: Option<String>,
    /// Status mode.
    pub status_mode: Option<String>,
    /// State.
    pub state: Option<String>,
    /// Error (`Some(None)` clears it).
    pub error: Option<Option<String>>,
}

/// Applies `p` to space `id`.
///
/// # Errors
/// SQL errors.
pub fn patch_space(conn: &Connection, id: i64, p: &SpacePatch) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE learning_spaces SET
             remote_id = COALESCE(?2, remote_id),
             status_mode = COALESCE(?3, status_mode),
             state = COALESCE(?4, state),
             error = CASE WHEN ?5 THEN ?6 ELSE error END,
             updated_at = ?7
         WHERE id = ?1",
        params![
            id,
            p.remote_id,
            p.status_mode,
            p.state,
            p.error.is_some(),
            p.error.clone().flatten(),
            now()
        ],
    )?;
    Ok(())
}
