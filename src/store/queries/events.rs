//! The `run_events` table: a run's event log.

use rusqlite::{Connection, params};

use crate::store::StoreError;
use crate::store::model::*;

/// Appends a run event (`info`, `warn` or `error`).
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn add_event(
    conn: &Connection,
    run_id: i64,
    level: &str,
    message: &str,
) -> Result<(), StoreError> {
    add_event_at(conn, run_id, &now_rfc3339(), level, message)
}

/// Appends a run event stamped `at` (RFC 3339).
///
/// # Errors
/// SQL errors.
pub fn add_event_at(
    conn: &Connection,
    run_id: i64,
    at: &str,
    level: &str,
    message: &str,
) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO run_events (run_id, at, level, message) VALUES (?1, ?2, ?3, ?4)",
        params![run_id, at, level, message],
    )?;
    Ok(())
}

/// A run's events after event `after` (row id; 0 for all), oldest first, at most `limit`:
/// (id, time, level, message). Read incrementally by the dashboard's event log.
///
/// # Errors
/// SQL errors.
pub fn events_after(
    conn: &Connection,
    run_id: i64,
    after: i64,
    limit: usize,
) -> Result<Vec<(i64, String, String, String)>, StoreError> {
    let mut st = conn.prepare_cached(
        "SELECT id, at, level, message FROM run_events WHERE run_id = ?1 AND id > ?2
         ORDER BY id LIMIT ?3",
    )?;
    let rows = st.query_map(params![run_id, after, limit as i64], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The latest `limit` events of a run, oldest first: (time, level, message).
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn recent_events(
    conn: &Connection,
    run_id: i64,
    limit: usize,
) -> Result<Vec<(String, String, String)>, StoreError> {
    let mut st = conn.prepare(
        "SELECT at, level, message FROM (SELECT id, at, level, message FROM run_events WHERE run_id = ?1
         ORDER BY id DESC LIMIT ?2) ORDER BY id",
    )?;
    let rows = st.query_map(params![run_id, limit as i64], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}
