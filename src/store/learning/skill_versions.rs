//! Skill versions and their files (curated and learned), for diffs.

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::{all, json_list, now};
use crate::store::StoreError;

/// One file of a skill version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillFileRow {
    /// Path within the skill (`/`-separated).
    pub path: String,
    /// Size, bytes.
    pub size: u64,
    /// SHA-256, hex.
    pub sha256: String,
    /// Text content, when UTF-8 and small enough to diff.
    pub text: Option<String>,
}

/// A skill version to record.
#[derive(Debug, Clone)]
pub struct NewSkillVersion {
    /// `curated` or `learned`.
    pub origin: String,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Content hash.
    pub content_hash: String,
    /// Acontext skill UUID.
    pub remote_id: Option<String>,
    /// Folder on disk.
    pub dir: Option<String>,
    /// SKILL.md warnings.
    pub problems: Vec<String>,
    /// Files.
    pub files: Vec<SkillFileRow>,
}

/// A recorded skill version (`skill_versions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillVersionRow {
    /// Row id.
    pub id: i64,
    /// Space row id.
    pub space_id: i64,
    /// `curated` or `learned`.
    pub origin: String,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Content hash.
    pub content_hash: String,
    /// Acontext skill UUID.
    pub remote_id: Option<String>,
    /// Folder on disk.
    pub dir: Option<String>,
    /// When first recorded.
    pub recorded_at: String,
    /// SKILL.md warnings.
    pub problems: Vec<String>,
}

/// Records a version with its files; a version with the same content is recorded once.
/// Returns `(row id, newly recorded)`.
///
/// # Errors
/// SQL errors.
pub fn record_version(
    conn: &Connection,
    space_id: i64,
    v: &NewSkillVersion,
) -> Result<(i64, bool), StoreError> {
    let existing: Option<i64> = conn
        .query_row(
            "SELECT id FROM skill_versions
             WHERE space_id = ?1 AND origin = ?2 AND name = ?3 AND content_hash = ?4",
            params![space_id, v.origin, v.name, v.content_hash],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(id) = existing {
        return Ok((id, false));
    }
    conn.execute(
        "INSERT INTO skill_versions (space_id, origin, name, description, content_hash, remote_id,
             dir, recorded_at, problems)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            space_id,
            v.origin,
            v.name,
            v.description,
            v.content_hash,
            v.remote_id,
            v.dir,
            now(),
            serde_json::to_string(&v.problems)?
        ],
    )?;
    let id = conn.last_insert_rowid();
    let mut stmt = conn.prepare(
        "INSERT INTO skill_files (version_id, path, size, sha256, text) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for f in &v.files {
        stmt.execute(params![id, f.path, f.size as i64, f.sha256, f.text])?;
    }
    Ok((id, true))
}

/// A space's skill versions: by name, then oldest first.
///
/// # Errors
/// SQL errors.
pub fn versions(conn: &Connection, space_id: i64) -> Result<Vec<SkillVersionRow>, StoreError> {
    all(
        conn,
        "SELECT id, space_id, origin, name, description, content_hash, remote_id, dir, recorded_at,
                problems
         FROM skill_versions WHERE space_id = ?1 ORDER BY name, id",
        [space_id],
        |r| {
            Ok(SkillVersionRow {
                id: r.get(0)?,
                space_id: r.get(1)?,
                origin: r.get(2)?,
                name: r.get(3)?,
                description: r.get(4)?,
                content_hash: r.get(5)?,
                remote_id: r.get(6)?,
                dir: r.get(7)?,
                recorded_at: r.get(8)?,
                problems: json_list(r.get(9)?),
            })
        },
    )
}

/// The files of a version, by path.
///
/// # Errors
/// SQL errors.
pub fn version_files(conn: &Connection, version_id: i64) -> Result<Vec<SkillFileRow>, StoreError> {
    all(
        conn,
        "SELECT path, size, sha256, text FROM skill_files WHERE version_id = ?1 ORDER BY path",
        [version_id],
        |r| {
            Ok(SkillFileRow {
                path: r.get(0)?,
                size: r.get::<_, i64>(1)? as u64,
                sha256: r.get(2)?,
                text: r.get(3)?,
            })
        },
    )
}
