//! Curated skills uploaded into a learning space.

use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

use super::all;
use crate::store::StoreError;

/// A curated skill put into a space (`space_uploads`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UploadRow {
    /// Space row id.
    pub space_id: i64,
    /// Skill name (from SKILL.md).
    pub name: String,
    /// Content hash of the uploaded folder.
    pub content_hash: String,
    /// The task whose `environment/skills` it came from.
    pub source_task: String,
    /// Acontext skill UUID, once uploaded.
    pub remote_skill_id: Option<String>,
    /// `planned`, `uploaded`, `included` or `skipped`.
    pub state: String,
    /// Why it was skipped, or other tasks that had the same skill.
    pub note: Option<String>,
}

/// Inserts or replaces the upload row of `(space, name)`.
///
/// # Errors
/// SQL errors.
pub fn put_upload(conn: &Connection, u: &UploadRow) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO space_uploads (space_id, name, content_hash, source_task, remote_skill_id, state, note)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (space_id, name) DO UPDATE SET content_hash = excluded.content_hash,
             source_task = excluded.source_task, remote_skill_id = excluded.remote_skill_id,
             state = excluded.state, note = excluded.note",
        params![
            u.space_id,
            u.name,
            u.content_hash,
            u.source_task,
            u.remote_skill_id,
            u.state,
            u.note
        ],
    )?;
    Ok(())
}

/// A space's curated uploads, by name.
///
/// # Errors
/// SQL errors.
pub fn uploads(conn: &Connection, space_id: i64) -> Result<Vec<UploadRow>, StoreError> {
    all(
        conn,
        "SELECT space_id, name, content_hash, source_task, remote_skill_id, state, note
         FROM space_uploads WHERE space_id = ?1 ORDER BY name",
        [space_id],
        |r| {
            Ok(UploadRow {
                space_id: r.get(0)?,
                name: r.get(1)?,
                content_hash: r.get(2)?,
                source_task: r.get(3)?,
                remote_skill_id: r.get(4)?,
                state: r.get(5)?,
                note: r.get(6)?,
            })
        },
    )
}
