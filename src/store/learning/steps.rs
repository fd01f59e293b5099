//! Each trial's step in the learning pipeline ([`Step`], stored as text in `learn_steps.step`).

use rusqlite::{Connection, Row, params};
use serde::{Deserialize, Serialize};

use super::{all, json_list, now};
use crate::store::StoreError;

/// Where one trial is in a space's learning pipeline (`learn_steps`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LearnStepRow {
    /// Space row id.
    pub space_id: i64,
    /// Trial attempt row id.
    pub trial_id: i64,
    /// Position in the learning order (0-based).
    pub seq: i64,
    /// Task.
    pub task_id: String,
    /// Trial index.
    pub trial_index: u32,
    /// `success` or `failed`, from the verifier.
    pub verdict: String,
    /// Session UUID (sent as `use_uuid`, so re-creating it is idempotent).
    pub session_id: String,
    /// Pipeline step (`store::learning::Step` as text).
    pub step: String,
    /// `patch` or `criteria`.
    pub mode: Option<String>,
    /// Acontext task ids of the session.
    pub task_ids: Vec<String>,
    /// Their statuses as last seen.
    pub task_statuses: Vec<String>,
    /// Learning status as last seen (`pending` … `completed`, `failed`).
    pub learning_status: Option<String>,
    /// The space's skills (name → `updated_at`) just before this trial's verdict was set, to
    /// find which skills its learning created or changed.
    pub skills_before: Option<serde_json::Value>,
    /// Times the current step was tried and failed.
    pub tries: u32,
    /// Last error or why the trial was not learned.
    pub error: Option<String>,
    /// Last change.
    pub updated_at: String,
    /// When it reached a final step.
    pub finished_at: Option<String>,
}

/// A trial to add to a space's learning order.
#[derive(Debug, Clone)]
pub struct NewStep {
    /// Trial attempt row id.
    pub trial_id: i64,
    /// Task.
    pub task_id: String,
    /// Trial index.
    pub trial_index: u32,
    /// `success` or `failed`.
    pub verdict: String,
    /// Session UUID.
    pub session_id: String,
    /// Initial step.
    pub step: String,
    /// Why it is skipped, when it is.
    pub note: Option<String>,
}

pub(super) const STEP_COLS: &str = "space_id, trial_id, seq, task_id, trial_index, verdict, session_id, step, \
     mode, task_ids, task_statuses, learning_status, skills_before, tries, error, updated_at, finished_at";

pub(super) fn step_row(r: &Row) -> rusqlite::Result<LearnStepRow> {
    Ok(LearnStepRow {
        space_id: r.get(0)?,
        trial_id: r.get(1)?,
        seq: r.get(2)?,
        task_id: r.get(3)?,
        trial_index: r.get(4)?,
        verdict: r.get(5)?,
        session_id: r.get(6)?,
        step: r.get(7)?,
        mode: r.get(8)?,
        task_ids: json_list(r.get(9)?),
        task_statuses: json_list(r.get(10)?),
        learning_status: r.get(11)?,
        skills_before: r
            .get::<_, Option<String>>(12)?
            .and_then(|t| serde_json::from_str(&t).ok()),
        tries: r.get(13)?,
        error: r.get(14)?,
        updated_at: r.get(15)?,
        finished_at: r.get(16)?,
    })
}

/// Adds trials to a space's learning order, after the ones it has; trials already planned keep
/// their row and progress. Returns how many were added.
///
/// # Errors
/// SQL errors.
pub fn plan_steps(
    conn: &Connection,
    space_id: i64,
    steps: &[NewStep],
) -> Result<usize, StoreError> {
    let mut next: i64 = conn.query_row(
        "SELECT COALESCE(MAX(seq) + 1, 0) FROM learn_steps WHERE space_id = ?1",
        [space_id],
        |r| r.get(0),
    )?;
    let mut stmt = conn.prepare(
        "INSERT OR IGNORE INTO learn_steps (space_id, trial_id, seq, task_id, trial_index, verdict,
             session_id, step, error, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    let t = now();
    let mut added = 0;
    for s in steps {
        let n = stmt.execute(params![
            space_id,
            s.trial_id,
            next,
            s.task_id,
            s.trial_index,
            s.verdict,
            s.session_id,
            s.step,
            s.note,
            t
        ])?;
        if n > 0 {
            next += 1;
            added += 1;
        }
    }
    Ok(added)
}

/// A space's steps in learning order.
///
/// # Errors
/// SQL errors.
pub fn steps(conn: &Connection, space_id: i64) -> Result<Vec<LearnStepRow>, StoreError> {
    all(
        conn,
        &format!("SELECT {STEP_COLS} FROM learn_steps WHERE space_id = ?1 ORDER BY seq"),
        [space_id],
        step_row,
    )
}

/// The steps of one trial attempt, in every space.
///
/// # Errors
/// SQL errors.
pub fn steps_of_trial(conn: &Connection, trial_id: i64) -> Result<Vec<LearnStepRow>, StoreError> {
    all(
        conn,
        &format!("SELECT {STEP_COLS} FROM learn_steps WHERE trial_id = ?1 ORDER BY space_id"),
        [trial_id],
        step_row,
    )
}

/// Changes to a step row (`None` leaves a field as it is).
#[derive(Debug, Clone, Default)]
pub struct StepPatch {
    /// New step.
    pub step: Option<String>,
    /// Mode.
    pub mode: Option<String>,
    /// Task ids.
    pub task_ids: Option<Vec<String>>,
    /// Task statuses.
    pub task_statuses: Option<Vec<String>>,
    /// Learning status.
    pub learning_status: Option<String>,
    /// Skills before the verdict.
    pub skills_before: Option<serde_json::Value>,
    /// Tries (`Some(0)` resets).
    pub tries: Option<u32>,
    /// Error (`Some(None)` clears it).
    pub error: Option<Option<String>>,
    /// Marks the step final now.
    pub finished: bool,
}

/// Applies `p` to the step of `(space, trial)`.
///
/// # Errors
/// SQL errors.
pub fn patch_step(
    conn: &Connection,
    space_id: i64,
    trial_id: i64,
    p: &StepPatch,
) -> Result<(), StoreError> {
    let t = now();
    conn.execute(
        "UPDATE learn_steps SET
             step = COALESCE(?3, step),
             mode = COALESCE(?4, mode),
             task_ids = COALESCE(?5, task_ids),
             task_statuses = COALESCE(?6, task_statuses),
             learning_status = COALESCE(?7, learning_status),
             tries = COALESCE(?8, tries),
             error = CASE WHEN ?9 THEN ?10 ELSE error END,
             finished_at = CASE WHEN ?11 THEN ?12 ELSE finished_at END,
             updated_at = ?12,
             skills_before = COALESCE(?13, skills_before)
         WHERE space_id = ?1 AND trial_id = ?2",
        params![
            space_id,
            trial_id,
            p.step,
            p.mode,
            p.task_ids.as_ref().map(serde_json::to_string).transpose()?,
            p.task_statuses
                .as_ref()
                .map(serde_json::to_string)
                .transpose()?,
            p.learning_status,
            p.tries,
            p.error.is_some(),
            p.error.clone().flatten(),
            p.finished,
            t,
            p.skills_before.as_ref().map(|v| v.to_string())
        ],
    )?;
    Ok(())
}

/// Gives every unfinished step of space `space_id` its tries back (`tries = 0`): a new learning
/// pass retries the trials that ran out of tries in an earlier one. Returns how many steps.
///
/// # Errors
/// SQL errors.
pub fn reset_unfinished_tries(conn: &Connection, space_id: i64) -> Result<usize, StoreError> {
    Ok(conn.execute(
        "UPDATE learn_steps SET tries = 0 WHERE space_id = ?1 AND finished_at IS NULL",
        [space_id],
    )?)
}

/// Where a trial is in the pipeline (stored as text in `learn_steps.step`; the Acontext pipeline in
/// `acontext::learn` moves trials through it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    /// Planned.
    Queued,
    /// The session exists.
    Session,
    /// The session is attached to the space.
    Attached,
    /// Instruction and summary are stored.
    Messages,
    /// The task agent ran.
    Flushed,
    /// Task statuses match the verdict; learning was triggered.
    Labeled,
    /// A task status contradicts the verdict (criteria mode): learned with the wrong label.
    Mislabeled,
    /// Learning finished (`completed` or `failed`).
    Done,
    /// Deliberately not learned (session deleted).
    Rejected,
    /// No verdict to learn from.
    Skipped,
}

impl Step {
    /// Every step, in pipeline order.
    pub const ALL: [Step; 10] = [
        Step::Queued,
        Step::Session,
        Step::Attached,
        Step::Messages,
        Step::Flushed,
        Step::Labeled,
        Step::Mislabeled,
        Step::Done,
        Step::Rejected,
        Step::Skipped,
    ];

    /// Stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Queued => "queued",
            Step::Session => "session",
            Step::Attached => "attached",
            Step::Messages => "messages",
            Step::Flushed => "flushed",
            Step::Labeled => "labeled",
            Step::Mislabeled => "mislabeled",
            Step::Done => "done",
            Step::Rejected => "rejected",
            Step::Skipped => "skipped",
        }
    }

    /// Parses stored text (unknown text reads as `Queued`, so the trial is redone).
    pub fn parse(s: &str) -> Step {
        Step::ALL
            .into_iter()
            .find(|x| x.as_str() == s)
            .unwrap_or(Step::Queued)
    }

    /// No more work for this trial. A `mislabeled` trial is final once its learning finished.
    pub fn is_final(self, finished: bool) -> bool {
        match self {
            Step::Done | Step::Rejected | Step::Skipped => true,
            Step::Mislabeled => finished,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_round_trip() {
        for s in Step::ALL {
            assert_eq!(Step::parse(s.as_str()), s);
        }
        assert!(!Step::Mislabeled.is_final(false));
        assert!(Step::Mislabeled.is_final(true));
    }
}
