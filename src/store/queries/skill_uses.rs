//! The `skill_uses` table: which skills an attempt's agent read or ran, and when first.

use rusqlite::{Connection, params};

use crate::store::StoreError;
use crate::store::model::*;

/// Replaces the skill uses recorded for attempt `trial_id`.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn set_skill_uses(
    conn: &Connection,
    trial_id: i64,
    uses: &[SkillUseRow],
) -> Result<(), StoreError> {
    conn.execute("DELETE FROM skill_uses WHERE trial_id = ?1", [trial_id])?;
    let mut st = conn.prepare_cached(
        "INSERT INTO skill_uses (trial_id, skill, kind, first_step, count) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for u in uses {
        st.execute(params![trial_id, u.skill, u.kind, u.first_step, u.count])?;
    }
    Ok(())
}

/// The skill uses of attempt `trial_id`, by skill and kind.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn skill_uses(conn: &Connection, trial_id: i64) -> Result<Vec<SkillUseRow>, StoreError> {
    let mut st = conn.prepare_cached(
        "SELECT skill, kind, first_step, count FROM skill_uses WHERE trial_id = ?1 ORDER BY skill, kind",
    )?;
    let rows = st.query_map([trial_id], |r| {
        Ok(SkillUseRow {
            skill: r.get(0)?,
            kind: r.get(1)?,
            first_step: r.get(2)?,
            count: r.get(3)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}
