//! The `commands` table: operator commands (retry, skip, …) the engine picks up.

use rusqlite::{Connection, params};

use crate::store::StoreError;
use crate::store::model::*;

/// Writes an operator command for the engine.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn insert_command(
    conn: &Connection,
    run_id: i64,
    kind: CommandKind,
    trial_id: i64,
) -> Result<i64, StoreError> {
    conn.execute(
        "INSERT INTO commands (run_id, kind, trial_id, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![run_id, kind, trial_id, now_rfc3339()],
    )?;
    Ok(conn.last_insert_rowid())
}

/// Pending commands of a run, oldest first.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn pending_commands(conn: &Connection, run_id: i64) -> Result<Vec<CommandRow>, StoreError> {
    let mut st = conn.prepare(
        "SELECT id, run_id, kind, trial_id, created_at, state, note FROM commands
         WHERE run_id = ?1 AND state = 'pending' ORDER BY id",
    )?;
    let rows = st.query_map([run_id], |r| {
        Ok(CommandRow {
            id: r.get(0)?,
            run_id: r.get(1)?,
            kind: r.get(2)?,
            trial_id: r.get(3)?,
            created_at: r.get(4)?,
            state: r.get(5)?,
            note: r.get(6)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Marks a command handled (`done` or `rejected`) with a note.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn close_command(conn: &Connection, id: i64, done: bool, note: &str) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE commands SET state = ?2, handled_at = ?3, note = ?4 WHERE id = ?1",
        params![
            id,
            if done { "done" } else { "rejected" },
            now_rfc3339(),
            note
        ],
    )?;
    Ok(())
}
