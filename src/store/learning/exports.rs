//! Exports of a space's learned skills.

use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

use super::now;
use crate::store::StoreError;

/// A skill a export refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefusedSkill {
    /// Skill name.
    pub skill: String,
    /// The offending file, when one.
    pub path: Option<String>,
    /// Why.
    pub reason: String,
}

/// An export of a space (`space_exports`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportRow {
    /// Row id.
    pub id: i64,
    /// Space row id.
    pub space_id: i64,
    /// The skills folder written.
    pub dir: String,
    /// When.
    pub exported_at: String,
    /// Skills written.
    pub n_skills: u32,
    /// Skills refused.
    pub refused: Vec<RefusedSkill>,
}

/// Records an export.
///
/// # Errors
/// SQL errors.
pub fn add_export(
    conn: &Connection,
    space_id: i64,
    dir: &str,
    n_skills: u32,
    refused: &[RefusedSkill],
) -> Result<ExportRow, StoreError> {
    conn.execute(
        "INSERT INTO space_exports (space_id, dir, exported_at, n_skills, refused) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![space_id, dir, now(), n_skills, serde_json::to_string(refused)?],
    )?;
    let id = conn.last_insert_rowid();
    Ok(exports(conn, space_id)?
        .into_iter()
        .find(|e| e.id == id)
        .expect("just inserted"))
}

/// A space's exports, oldest first.
///
/// # Errors
/// SQL errors.
pub fn exports(conn: &Connection, space_id: i64) -> Result<Vec<ExportRow>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT id, space_id, dir, exported_at, n_skills, refused FROM space_exports
         WHERE space_id = ?1 ORDER BY id",
    )?;
    let rows = stmt.query_map([space_id], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, u32>(4)?,
            r.get::<_, String>(5)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (id, space_id, dir, exported_at, n_skills, refused) = row?;
        out.push(ExportRow {
            id,
            space_id,
            dir,
            exported_at,
            n_skills,
            refused: serde_json::from_str(&refused)?,
        });
    }
    Ok(out)
}
