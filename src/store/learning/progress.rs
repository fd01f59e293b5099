//! A space's learning progress counted in SQL, for the dashboard's overview.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use super::all;
use super::experiments::{EXPERIMENT_COLS, ExperimentRow, experiment_row, finish_experiment};
use super::exports::{ExportRow, exports};
use super::spaces::{SPACE_COLS, SpaceRow, space_row};
use super::steps::Step;
use super::steps::{LearnStepRow, STEP_COLS, step_row};
use crate::store::StoreError;

/// A space's learning progress, counted in SQL so the dashboard never loads every step to draw
/// the overview (a few indexed queries per space, whatever the number of trials).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpaceProgress {
    /// The space.
    pub space: SpaceRow,
    /// Trials in its learning order.
    pub total: u64,
    /// Trials that need no more work (final step).
    pub finished: u64,
    /// Trials per step (`queued`, `session`, … as stored), in no particular order.
    pub by_step: Vec<(String, u64)>,
    /// Trials learned with a label that contradicts the verifier.
    pub mislabeled: u64,
    /// Trials deliberately not learned (session deleted).
    pub rejected: u64,
    /// Trials whose last step failed or whose learning failed (the explanations stored with
    /// `skipped`, `rejected` and `mislabeled` rows are not counted).
    pub errors: u64,
    /// The first trial in learning order that is not final (the one being learned now).
    pub current: Option<LearnStepRow>,
    /// The latest export.
    pub export: Option<ExportRow>,
}

impl SpaceProgress {
    /// `space` with nothing learned yet: no trial counted, no step, no export.
    pub fn empty(space: SpaceRow) -> SpaceProgress {
        SpaceProgress {
            space,
            total: 0,
            finished: 0,
            by_step: Vec::new(),
            mislabeled: 0,
            rejected: 0,
            errors: 0,
            current: None,
            export: None,
        }
    }
}

/// The experiment whose round-1 or round-2 run is `run_name` (the newest, if several).
///
/// # Errors
/// SQL errors.
pub fn experiment_of_run(
    conn: &Connection,
    run_name: &str,
) -> Result<Option<ExperimentRow>, StoreError> {
    conn.query_row(
        &format!(
            "SELECT {EXPERIMENT_COLS} FROM experiments
             WHERE round1_run = ?1 OR round2_run = ?1 ORDER BY id DESC LIMIT 1"
        ),
        [run_name],
        experiment_row,
    )
    .optional()?
    .map(|p| finish_experiment(Ok(p)))
    .transpose()
}

/// The spaces that learn from any of `run_ids`, oldest first.
///
/// # Errors
/// SQL errors.
pub fn spaces_of_runs(conn: &Connection, run_ids: &[i64]) -> Result<Vec<SpaceRow>, StoreError> {
    let ids = serde_json::to_string(run_ids)?;
    all(
        conn,
        &format!(
            "SELECT {SPACE_COLS} FROM learning_spaces
             WHERE run_id IN (SELECT value FROM json_each(?1)) ORDER BY id"
        ),
        [ids],
        space_row,
    )
}

/// The progress of `space`: one grouped pass over its steps (by step, finished, and whether the
/// row counts as an error), the current step's row, and the latest export.
///
/// # Errors
/// SQL errors.
pub fn space_progress(conn: &Connection, space: SpaceRow) -> Result<SpaceProgress, StoreError> {
    // One pass over the space's steps, grouped by (step, finished, has an error) — a handful of
    // groups — with each group's first `seq`; the rest is worked out from the groups. Only
    // columns the grouping needs are read, so the pass stays cheap at thousands of trials.
    let groups = all(
        conn,
        "SELECT step, finished_at IS NOT NULL,
                (error IS NOT NULL AND step NOT IN ('skipped', 'rejected', 'mislabeled'))
                    OR COALESCE(learning_status, '') = 'failed',
                COUNT(*), MIN(seq)
         FROM learn_steps WHERE space_id = ?1 GROUP BY 1, 2, 3",
        [space.id],
        |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, bool>(1)?,
                r.get::<_, bool>(2)?,
                r.get::<_, i64>(3)? as u64,
                r.get::<_, i64>(4)?,
            ))
        },
    )?;
    let mut p = SpaceProgress::empty(space);
    let mut first_open: Option<i64> = None;
    for (step, fin, err, n, seq) in groups {
        p.total += n;
        if Step::parse(&step).is_final(fin) {
            p.finished += n;
        } else {
            first_open = Some(first_open.map_or(seq, |s| s.min(seq)));
        }
        match step.as_str() {
            "mislabeled" => p.mislabeled += n,
            "rejected" => p.rejected += n,
            _ => {}
        }
        if err {
            p.errors += n;
        }
        match p.by_step.iter_mut().find(|(s, _)| *s == step) {
            Some((_, c)) => *c += n,
            None => p.by_step.push((step, n)),
        }
    }
    if let Some(seq) = first_open {
        p.current = conn
            .query_row(
                &format!("SELECT {STEP_COLS} FROM learn_steps WHERE space_id = ?1 AND seq = ?2"),
                params![p.space.id, seq],
                step_row,
            )
            .optional()?;
    }
    p.export = conn
        .query_row(
            "SELECT id FROM space_exports WHERE space_id = ?1 ORDER BY id DESC LIMIT 1",
            [p.space.id],
            |r| r.get::<_, i64>(0),
        )
        .optional()?
        .and_then(|id| {
            exports(conn, p.space.id)
                .ok()
                .and_then(|e| e.into_iter().find(|x| x.id == id))
        });
    Ok(p)
}
