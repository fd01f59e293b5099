//! Per-run figures read from the `trials` table: spend per condition, each attempt's live
//! activity, the skills self-generated trials wrote; the environment mark type.

use rusqlite::Connection;

use crate::store::StoreError;
use crate::store::model::*;

/// The skills generated in one self-generated trial (its latest attempt).
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedOfTrial {
    /// Attempt row id.
    pub trial_id: i64,
    /// Task.
    pub task_id: String,
    /// Condition key.
    pub condition: String,
    /// Trial index.
    pub trial_index: u32,
    /// The trial folder.
    pub trial_dir: Option<String>,
    /// Its outcome, when it has one.
    pub outcome: Option<String>,
    /// What was generated ([`crate::skillsbench::selfgen::GeneratedSkills`]).
    pub generated: crate::skillsbench::selfgen::GeneratedSkills,
}

/// The generated skills of every latest attempt of `run_id` that recorded some, by task, then
/// condition and trial index.
///
/// # Errors
/// SQL errors (an unreadable record is skipped).
pub fn generated_skills(
    conn: &Connection,
    run_id: i64,
) -> Result<Vec<GeneratedOfTrial>, StoreError> {
    let mut st = conn.prepare_cached(
        "SELECT id, task_id, condition, trial_index, trial_dir, generated_skills, outcome FROM trials
         WHERE run_id = ?1 AND superseded = 0 AND generated_skills IS NOT NULL
         ORDER BY task_id, condition, trial_index",
    )?;
    let rows = st.query_map([run_id], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, u32>(3)?,
            r.get::<_, Option<String>>(4)?,
            r.get::<_, String>(5)?,
            r.get::<_, Option<String>>(6)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (trial_id, task_id, condition, trial_index, trial_dir, json, outcome) = row?;
        if let Ok(generated) = serde_json::from_str(&json) {
            out.push(GeneratedOfTrial {
                trial_id,
                task_id,
                condition,
                trial_index,
                trial_dir,
                outcome,
                generated,
            });
        }
    }
    Ok(out)
}

/// Tokens and cost spent on one condition of a run, over every attempt (superseded and
/// provider-failed ones too: they were paid for).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConditionSpend {
    /// Condition key.
    pub condition: String,
    /// Finished attempts that reported token usage.
    pub attempts: usize,
    /// Input tokens (cache included).
    pub input_tokens: i64,
    /// Output tokens.
    pub output_tokens: i64,
    /// Cost, USD, of the attempts that have one.
    pub cost_usd: f64,
    /// Attempts with a cost.
    pub priced: usize,
    /// Finished attempts without a cost (unknown: never counted as $0).
    pub unpriced: usize,
    /// Finished attempts without token counts (unknown: never counted as 0 tokens).
    pub untokened: usize,
}

/// [`ConditionSpend`] per condition of run `run_id` that has any attempt with usage (tokens or
/// a cost), by condition key.
///
/// # Errors
/// Database errors.
pub fn run_spend(conn: &Connection, run_id: i64) -> Result<Vec<ConditionSpend>, StoreError> {
    let mut st = conn.prepare_cached(
        "SELECT condition,
                COUNT(CASE WHEN n_input_tokens IS NOT NULL OR n_output_tokens IS NOT NULL THEN 1 END),
                SUM(COALESCE(n_input_tokens, 0)), SUM(COALESCE(n_output_tokens, 0)),
                SUM(COALESCE(cost_usd, 0.0)), COUNT(cost_usd),
                COUNT(CASE WHEN status = 'done' AND cost_usd IS NULL THEN 1 END),
                COUNT(CASE WHEN status = 'done' AND n_input_tokens IS NULL
                                AND n_output_tokens IS NULL THEN 1 END)
         FROM trials
         WHERE run_id = ?1
         GROUP BY condition
         HAVING COUNT(CASE WHEN n_input_tokens IS NOT NULL OR n_output_tokens IS NOT NULL
                           OR cost_usd IS NOT NULL THEN 1 END) > 0
         ORDER BY condition",
    )?;
    let rows = st.query_map([run_id], |r| {
        Ok(ConditionSpend {
            condition: r.get(0)?,
            attempts: r.get::<_, i64>(1)? as usize,
            input_tokens: r.get(2)?,
            output_tokens: r.get(3)?,
            cost_usd: r.get(4)?,
            priced: r.get::<_, i64>(5)? as usize,
            unpriced: r.get::<_, i64>(6)? as usize,
            untokened: r.get::<_, i64>(7)? as usize,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// What one attempt of a run spent and, while it runs, what its agent is doing: the dashboard's
/// cost, burn rate and live-activity figures ([`attempt_activity`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttemptActivity {
    /// Attempt row id.
    pub id: i64,
    /// Condition key.
    pub condition: String,
    /// Status (a running attempt's tokens and cost are its figures so far).
    pub status: TrialStatus,
    /// Input + output tokens, when the agent reported any.
    pub tokens: Option<i64>,
    /// Cost, USD, when priced.
    pub cost_usd: Option<f64>,
    /// When spending began: the agent's start, else the attempt's (RFC 3339).
    pub spend_from: Option<String>,
    /// When it ended: the agent's end, else the attempt's (RFC 3339); `None` while it runs.
    pub spend_to: Option<String>,
    /// Steps of the agent's trajectory so far.
    pub live_steps: Option<i64>,
    /// The agent's last tool call, one sanitized line.
    pub live_tool: Option<String>,
    /// When the agent last wrote output (RFC 3339).
    pub last_output_at: Option<String>,
    /// Since when the agent has been silent past the run's stall time (RFC 3339).
    pub stalled_at: Option<String>,
}

/// [`AttemptActivity`] of every attempt of run `run_id`, superseded ones included (they were paid
/// for), by id.
///
/// # Errors
/// Database errors.
pub fn attempt_activity(
    conn: &Connection,
    run_id: i64,
) -> Result<Vec<AttemptActivity>, StoreError> {
    let mut st = conn.prepare_cached(
        "SELECT id, condition, status,
                CASE WHEN n_input_tokens IS NULL AND n_output_tokens IS NULL THEN NULL
                     ELSE COALESCE(n_input_tokens, 0) + COALESCE(n_output_tokens, 0) END,
                cost_usd, COALESCE(agent_started_at, started_at),
                COALESCE(agent_finished_at, finished_at),
                live_steps, live_tool, last_output_at, stalled_at
         FROM trials WHERE run_id = ?1 ORDER BY id",
    )?;
    let rows = st.query_map([run_id], |r| {
        Ok(AttemptActivity {
            id: r.get(0)?,
            condition: r.get(1)?,
            status: r.get(2)?,
            tokens: r.get(3)?,
            cost_usd: r.get(4)?,
            spend_from: r.get(5)?,
            spend_to: r.get(6)?,
            live_steps: r.get(7)?,
            live_tool: r.get(8)?,
            last_output_at: r.get(9)?,
            stalled_at: r.get(10)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// A current attempt whose environment differed from what its task asked: needed values left
/// empty (`--allow-missing-env`) or a CPU or memory request cut to the host's (gathered by the
/// analysis's pass, [`crate::store::analysis::EnvironmentMarks`]).
#[derive(Debug, Clone, PartialEq)]
pub struct EnvironmentMark {
    /// Task id.
    pub task_id: String,
    /// Condition key.
    pub condition: String,
    /// Names of the values left empty.
    pub missing_env: Vec<String>,
    /// What was cut (`trials.clamped`).
    pub clamped: Option<serde_json::Value>,
}

/// How far run `run_id` has got: its finished latest attempts and the largest row id among them
/// (0 when none) — any new verdict, retry or import moves one of them. One index-only read
/// (`trials_by_run_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DoneMark {
    /// Run row id.
    pub run_id: i64,
    /// Finished latest attempts.
    pub done: i64,
    /// The largest row id among them; 0 when none.
    pub last_id: i64,
}

/// The [`DoneMark`] of every run in `run_ids`, in that order.
///
/// # Errors
/// Database errors.
pub fn done_marks(conn: &Connection, run_ids: &[i64]) -> Result<Vec<DoneMark>, StoreError> {
    let mut st = conn.prepare_cached(
        "SELECT COUNT(*), COALESCE(MAX(id), 0) FROM trials
         WHERE run_id = ?1 AND superseded = 0 AND status = 'done'",
    )?;
    let mut out = Vec::with_capacity(run_ids.len());
    for &run_id in run_ids {
        let (done, last_id) = st.query_row([run_id], |row| Ok((row.get(0)?, row.get(1)?)))?;
        out.push(DoneMark {
            run_id,
            done,
            last_id,
        });
    }
    Ok(out)
}
