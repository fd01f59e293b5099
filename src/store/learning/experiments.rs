//! Experiments and their rounds.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};

use super::{all, json_list, now};
use crate::store::StoreError;

/// An experiment (`experiments`): the two-round pipeline and the phase it is in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentRow {
    /// Row id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Created.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
    /// The plan as JSON (no secret values).
    pub plan: serde_json::Value,
    /// `round1`, `learn`, `export`, `round2` or `done`.
    pub phase: String,
    /// Round-1 run name.
    pub round1_run: String,
    /// Round-2 run name.
    pub round2_run: String,
    /// Last message (why it stopped, or the result).
    pub note: Option<String>,
    /// The held-out split (`experiment::split::Split` as JSON), when the plan has one.
    pub split: Option<serde_json::Value>,
}

pub(super) fn experiment_row(r: &Row) -> rusqlite::Result<(ExperimentRow, String)> {
    Ok((
        ExperimentRow {
            id: r.get(0)?,
            name: r.get(1)?,
            created_at: r.get(2)?,
            updated_at: r.get(3)?,
            plan: serde_json::Value::Null,
            phase: r.get(5)?,
            round1_run: r.get(6)?,
            round2_run: r.get(7)?,
            note: r.get(8)?,
            split: r
                .get::<_, Option<String>>(9)?
                .and_then(|t| serde_json::from_str(&t).ok()),
        },
        r.get(4)?,
    ))
}

pub(super) const EXPERIMENT_COLS: &str =
    "id, name, created_at, updated_at, plan, phase, round1_run, round2_run, note, split";

pub(super) fn finish_experiment(
    pair: rusqlite::Result<(ExperimentRow, String)>,
) -> Result<ExperimentRow, StoreError> {
    let (mut row, plan) = pair?;
    row.plan = serde_json::from_str(&plan)?;
    Ok(row)
}

/// The experiment called `name`, if any.
///
/// # Errors
/// SQL errors.
pub fn find_experiment(conn: &Connection, name: &str) -> Result<Option<ExperimentRow>, StoreError> {
    conn.query_row(
        &format!("SELECT {EXPERIMENT_COLS} FROM experiments WHERE name = ?1"),
        [name],
        experiment_row,
    )
    .optional()?
    .map(|p| finish_experiment(Ok(p)))
    .transpose()
}

/// Every experiment, oldest first.
///
/// # Errors
/// SQL errors.
pub fn list_experiments(conn: &Connection) -> Result<Vec<ExperimentRow>, StoreError> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {EXPERIMENT_COLS} FROM experiments ORDER BY id"
    ))?;
    let rows = stmt.query_map([], experiment_row)?;
    rows.map(finish_experiment).collect()
}

/// Finds the experiment `name`, or creates it in phase `round1`. An existing one must have the
/// same plan.
///
/// # Errors
/// [`StoreError::Conflict`] when the stored plan differs; SQL errors.
pub fn find_or_insert_experiment(
    conn: &Connection,
    name: &str,
    plan: &serde_json::Value,
    round1_run: &str,
    round2_run: &str,
) -> Result<ExperimentRow, StoreError> {
    if let Some(row) = find_experiment(conn, name)? {
        if let Some(why) = plan_conflict(&row, plan) {
            return Err(StoreError::Conflict(why));
        }
        return Ok(row);
    }
    let t = now();
    conn.execute(
        "INSERT INTO experiments (name, created_at, updated_at, plan, phase, round1_run, round2_run)
         VALUES (?1, ?2, ?2, ?3, 'round1', ?4, ?5)",
        params![name, t, plan.to_string(), round1_run, round2_run],
    )?;
    find_experiment(conn, name)?.ok_or_else(|| StoreError::NotFound(name.to_string()))
}

/// Why experiment `row` refuses to go on with plan `plan` (its public JSON) — the tables that
/// differ, each with both values — or `None` when it is the plan the experiment was created
/// with. A plan, its `[sequential]` design among it, is fixed when its experiment is created
/// (issue 47).
pub fn plan_conflict(row: &ExperimentRow, plan: &serde_json::Value) -> Option<String> {
    (design_of(&row.plan) != design_of(plan)).then(|| {
        format!(
            "experiment {} exists with another plan — {}; a plan (its [sequential] design among it) is fixed when its experiment is created: give the plan another name",
            row.name,
            plan_differences(&row.plan, plan)
        )
    })
}

/// Keys of a plan that say how it runs, not what it measures: a stopped experiment resumes with
/// another value (`--concurrency`, as `run` does).
const NOT_THE_DESIGN: &[&str] = &["concurrency"];

/// `plan` without [`NOT_THE_DESIGN`].
fn design_of(plan: &serde_json::Value) -> serde_json::Value {
    let mut p = plan.clone();
    if let Some(o) = p.as_object_mut() {
        for k in NOT_THE_DESIGN {
            o.remove(*k);
        }
    }
    p
}

/// The top-level keys (tables) of two plans that differ, each with both values:
/// `[sequential] {"stages":3} (now {"stages":5})`.
fn plan_differences(stored: &serde_json::Value, asked: &serde_json::Value) -> String {
    let empty = serde_json::Map::new();
    let (a, b) = (
        stored.as_object().unwrap_or(&empty),
        asked.as_object().unwrap_or(&empty),
    );
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let shown = |v: Option<&serde_json::Value>| v.map_or("(none)".to_string(), |v| v.to_string());
    let diffs: Vec<String> = keys
        .into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| {
            let name = if a.get(k).or(b.get(k)).is_some_and(|v| v.is_object()) {
                format!("[{k}]")
            } else {
                k.clone()
            };
            format!("{name} {} (now {})", shown(a.get(k)), shown(b.get(k)))
        })
        .collect();
    if diffs.is_empty() {
        format!("stored: {stored}")
    } else {
        diffs.join("; ")
    }
}

/// Moves an experiment to `phase`, with a note.
///
/// # Errors
/// SQL errors.
pub fn set_experiment_phase(
    conn: &Connection,
    name: &str,
    phase: &str,
    note: Option<&str>,
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE experiments SET phase = ?2, note = ?3, updated_at = ?4 WHERE name = ?1",
        params![name, phase, note, now()],
    )?;
    Ok(())
}

/// Stores the held-out split of experiment `name` (JSON).
///
/// # Errors
/// SQL errors.
pub fn set_experiment_split(
    conn: &Connection,
    name: &str,
    split: &serde_json::Value,
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE experiments SET split = ?2, updated_at = ?3 WHERE name = ?1",
        params![name, split.to_string(), now()],
    )?;
    Ok(())
}

/// The skills one task received in round 2 from one space (`round2_skills`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round2SkillsRow {
    /// The space's label (`LS-A`, `LS-B`).
    pub label: String,
    /// Task.
    pub task_id: String,
    /// `all`, `domain` or `task`.
    pub mode: String,
    /// Skills it received.
    pub n_skills: u32,
    /// Their folder names.
    pub skills: Vec<String>,
}

/// Records (replacing earlier rows of the same space) what each task received in round 2.
///
/// # Errors
/// SQL errors.
pub fn put_round2_skills(
    conn: &Connection,
    experiment: &str,
    rows: &[Round2SkillsRow],
) -> Result<(), StoreError> {
    let mut stmt = conn.prepare(
        "INSERT INTO round2_skills (experiment, label, task_id, mode, n_skills, skills)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (experiment, label, task_id) DO UPDATE SET mode = excluded.mode,
             n_skills = excluded.n_skills, skills = excluded.skills",
    )?;
    for r in rows {
        stmt.execute(params![
            experiment,
            r.label,
            r.task_id,
            r.mode,
            r.n_skills,
            serde_json::to_string(&r.skills)?
        ])?;
    }
    Ok(())
}

/// What each task received in round 2 of `experiment`, by space label then task.
///
/// # Errors
/// SQL errors.
pub fn round2_skills(
    conn: &Connection,
    experiment: &str,
) -> Result<Vec<Round2SkillsRow>, StoreError> {
    all(
        conn,
        "SELECT label, task_id, mode, n_skills, skills FROM round2_skills
         WHERE experiment = ?1 ORDER BY label, task_id",
        [experiment],
        |r| {
            Ok(Round2SkillsRow {
                label: r.get(0)?,
                task_id: r.get(1)?,
                mode: r.get(2)?,
                n_skills: r.get(3)?,
                skills: json_list(r.get(4)?),
            })
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_resumes_with_another_concurrency_but_not_another_design() {
        let row = |plan: serde_json::Value| ExperimentRow {
            id: 1,
            name: "ex".into(),
            created_at: String::new(),
            updated_at: String::new(),
            plan,
            phase: "round1".into(),
            round1_run: "r1".into(),
            round2_run: "r2".into(),
            note: None,
            split: None,
        };
        let stored = row(serde_json::json!({"concurrency": 2, "trials": 3}));
        assert_eq!(
            plan_conflict(&stored, &serde_json::json!({"concurrency": 1, "trials": 3})),
            None
        );
        let why = plan_conflict(&stored, &serde_json::json!({"concurrency": 2, "trials": 5}));
        assert!(why.is_some_and(|w| w.contains("trials")));
    }
}
