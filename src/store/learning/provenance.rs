//! Which trials changed which skill.

use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

use super::all;
use crate::store::StoreError;

/// A trial whose learning created or changed a skill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillSourceRow {
    /// Skill name.
    pub skill: String,
    /// Trial attempt row id.
    pub trial_id: i64,
    /// Task.
    pub task_id: String,
    /// Trial index.
    pub trial_index: u32,
    /// `success` or `failed`.
    pub verdict: String,
    /// `created` or `updated`.
    pub change: String,
}

/// Records that learning from `trial_id` created or updated `skill`.
///
/// # Errors
/// SQL errors.
pub fn add_source(
    conn: &Connection,
    space_id: i64,
    skill: &str,
    trial_id: i64,
    change: &str,
) -> Result<(), StoreError> {
    conn.execute(
        "INSERT OR IGNORE INTO skill_sources (space_id, skill, trial_id, change) VALUES (?1, ?2, ?3, ?4)",
        params![space_id, skill, trial_id, change],
    )?;
    Ok(())
}

/// The trials each skill of a space came from, in learning order.
///
/// # Errors
/// SQL errors.
pub fn sources(conn: &Connection, space_id: i64) -> Result<Vec<SkillSourceRow>, StoreError> {
    all(
        conn,
        "SELECT s.skill, s.trial_id, l.task_id, l.trial_index, l.verdict, s.change
         FROM skill_sources s JOIN learn_steps l ON l.space_id = s.space_id AND l.trial_id = s.trial_id
         WHERE s.space_id = ?1 ORDER BY s.skill, l.seq",
        [space_id], |r| {
        Ok(SkillSourceRow {
            skill: r.get(0)?,
            trial_id: r.get(1)?,
            task_id: r.get(2)?,
            trial_index: r.get(3)?,
            verdict: r.get(4)?,
            change: r.get(5)?,
        })
    },
    )
}
