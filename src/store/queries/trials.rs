//! The `trials` table read and planned: one row per attempt, the latest of each trial current,
//! attempts queued in execution order, retries and requeues keeping the history.

use rusqlite::{Connection, Row, params};

use super::patch::{TrialPatch, finish_trial};
use crate::store::StoreError;
use crate::store::model::*;

const TRIAL_COLS: &str = "id, run_id, task_id, condition, trial_index, attempt, superseded, status, outcome, \
     reward, rewards, agent, model, host, image, container_id, trial_name, trial_dir, queued_at, started_at, \
     finished_at, build_started_at, build_finished_at, agent_started_at, agent_finished_at, \
     verifier_started_at, verifier_finished_at, agent_exit_code, verifier_exit_code, error, \
     n_input_tokens, n_cache_tokens, n_output_tokens, cost_usd, import_key, trajectory_path, n_steps, \
     n_tool_calls, tests_total, tests_passed, n_error_steps, final_message, aggregated, fault, \
     failure_category, agent_settings, live_steps, live_tool, last_output_at, stalled_at, \
     missing_env, clamped, image_builds";

fn trial_from_row(r: &Row<'_>) -> rusqlite::Result<TrialRow> {
    let rewards: Option<String> = r.get(10)?;
    Ok(TrialRow {
        id: r.get(0)?,
        run_id: r.get(1)?,
        task_id: r.get(2)?,
        condition: r.get(3)?,
        trial_index: r.get(4)?,
        attempt: r.get(5)?,
        superseded: r.get::<_, i64>(6)? != 0,
        status: r.get(7)?,
        outcome: r.get(8)?,
        reward: r.get(9)?,
        rewards: rewards.and_then(|s| serde_json::from_str(&s).ok()),
        agent: r.get(11)?,
        model: r.get(12)?,
        host: r.get(13)?,
        image: r.get(14)?,
        container_id: r.get(15)?,
        trial_name: r.get(16)?,
        trial_dir: r.get(17)?,
        queued_at: r.get(18)?,
        started_at: r.get(19)?,
        finished_at: r.get(20)?,
        build_started_at: r.get(21)?,
        build_finished_at: r.get(22)?,
        agent_started_at: r.get(23)?,
        agent_finished_at: r.get(24)?,
        verifier_started_at: r.get(25)?,
        verifier_finished_at: r.get(26)?,
        agent_exit_code: r.get(27)?,
        verifier_exit_code: r.get(28)?,
        error: r.get(29)?,
        n_input_tokens: r.get(30)?,
        n_cache_tokens: r.get(31)?,
        n_output_tokens: r.get(32)?,
        cost_usd: r.get(33)?,
        import_key: r.get(34)?,
        trajectory_path: r.get(35)?,
        n_steps: r.get(36)?,
        n_tool_calls: r.get(37)?,
        tests_total: r.get(38)?,
        tests_passed: r.get(39)?,
        n_error_steps: r.get(40)?,
        final_message: r.get(41)?,
        aggregated: r.get::<_, i64>(42)? != 0,
        failure_category: r.get(44)?,
        agent_settings: r
            .get::<_, Option<String>>(45)?
            .and_then(|s| serde_json::from_str(&s).ok()),
        fault: r.get(43)?,
        live_steps: r.get(46)?,
        live_tool: r.get(47)?,
        last_output_at: r.get(48)?,
        stalled_at: r.get(49)?,
        missing_env: json_column(r, 50)?,
        clamped: json_column(r, 51)?,
        image_builds: json_column(r, 52)?,
    })
}

/// A JSON text column (`None` when NULL or not JSON).
fn json_column(r: &Row<'_>, i: usize) -> rusqlite::Result<Option<serde_json::Value>> {
    Ok(r.get::<_, Option<String>>(i)?
        .and_then(|s| serde_json::from_str(&s).ok()))
}

fn trials_where(
    conn: &Connection,
    clause: &str,
    p: impl rusqlite::Params,
) -> Result<Vec<TrialRow>, StoreError> {
    let mut st = conn.prepare(&format!("SELECT {TRIAL_COLS} FROM trials WHERE {clause}"))?;
    let rows = st.query_map(p, trial_from_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// One attempt by row id.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn get_trial(conn: &Connection, id: i64) -> Result<TrialRow, StoreError> {
    trials_where(conn, "id = ?1", [id])?
        .pop()
        .ok_or_else(|| StoreError::NotFound(format!("no trial with id {id}")))
}

/// The latest attempt of every trial of a run, ordered by task, condition, trial index.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn current_trials(conn: &Connection, run_id: i64) -> Result<Vec<TrialRow>, StoreError> {
    trials_where(
        conn,
        "run_id = ?1 AND superseded = 0 ORDER BY task_id, condition, trial_index",
        [run_id],
    )
}

/// The latest attempt of every trial of a run, brief form, in no particular order. One cached
/// statement over the `(run_id, superseded, status)` index.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn current_briefs(conn: &Connection, run_id: i64) -> Result<Vec<TrialBrief>, StoreError> {
    let mut st = conn.prepare_cached(
        "SELECT id, task_id, condition, trial_index, attempt, status, outcome, reward, finished_at
         FROM trials WHERE run_id = ?1 AND superseded = 0",
    )?;
    let rows = st.query_map([run_id], |r| {
        Ok(TrialBrief {
            id: r.get(0)?,
            task_id: r.get(1)?,
            condition: r.get(2)?,
            trial_index: r.get(3)?,
            attempt: r.get(4)?,
            superseded: false,
            status: r.get(5)?,
            outcome: r.get(6)?,
            reward: r.get(7)?,
            finished_at: r.get(8)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Every attempt of one trial, oldest first.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn trial_attempts(
    conn: &Connection,
    run_id: i64,
    key: &TrialKey,
) -> Result<Vec<TrialRow>, StoreError> {
    trials_where(
        conn,
        "run_id = ?1 AND task_id = ?2 AND condition = ?3 AND trial_index = ?4 ORDER BY attempt",
        params![run_id, key.task_id, key.condition, key.trial_index],
    )
}

/// Every attempt of a run, superseded ones included, by id.
///
/// # Errors
/// SQL errors.
pub fn all_trials(conn: &Connection, run_id: i64) -> Result<Vec<TrialRow>, StoreError> {
    trials_where(conn, "run_id = ?1 ORDER BY id", [run_id])
}

/// Queued attempts in execution order: trial index first, so every task and condition gets its
/// first trial before any gets its second (early, unbiased pass rates on a partial run).
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn queued_trials(conn: &Connection, run_id: i64) -> Result<Vec<TrialRow>, StoreError> {
    trials_where(
        conn,
        "run_id = ?1 AND superseded = 0 AND status = 'queued' ORDER BY trial_index, task_id, condition, id",
        [run_id],
    )
}

/// Inserts attempt 1 (queued) of every planned trial that does not exist yet. `name` gives the
/// Harbor trial name of (key, attempt). Returns how many were added.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn plan_trials(
    conn: &Connection,
    run: &RunRow,
    task_ids: &[String],
    name: &dyn Fn(&TrialKey, u32) -> String,
) -> Result<usize, StoreError> {
    let mut st = conn.prepare(
        "INSERT OR IGNORE INTO trials (run_id, task_id, condition, trial_index, attempt, status, agent, model,
                                       trial_name, queued_at)
         VALUES (?1, ?2, ?3, ?4, 1, 'queued', ?5, ?6, ?7, ?8)",
    )?;
    let now = now_rfc3339();
    let mut added = 0;
    for task in task_ids {
        for cond in &run.conditions {
            for idx in 1..=run.n_trials {
                let key = TrialKey {
                    task_id: task.clone(),
                    condition: cond.clone(),
                    trial_index: idx,
                };
                added += st.execute(params![
                    run.id,
                    task,
                    cond,
                    idx,
                    run.agent,
                    run.model,
                    name(&key, 1),
                    now
                ])?;
            }
        }
    }
    Ok(added)
}

/// Marks attempt `id` superseded and inserts the next attempt, queued. Returns the new attempt.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn new_attempt(
    conn: &Connection,
    id: i64,
    name: &dyn Fn(&TrialKey, u32) -> String,
) -> Result<TrialRow, StoreError> {
    let old = get_trial(conn, id)?;
    let attempts = trial_attempts(conn, old.run_id, &old.key())?;
    let next = attempts.iter().map(|a| a.attempt).max().unwrap_or(0) + 1;
    conn.execute(
        "UPDATE trials SET superseded = 1 WHERE run_id = ?1 AND task_id = ?2 AND condition = ?3 AND trial_index = ?4",
        params![old.run_id, old.task_id, old.condition, old.trial_index],
    )?;
    conn.execute(
        "INSERT INTO trials (run_id, task_id, condition, trial_index, attempt, status, agent, model, trial_name, queued_at)
         VALUES (?1, ?2, ?3, ?4, ?5, 'queued', ?6, ?7, ?8, ?9)",
        params![
            old.run_id,
            old.task_id,
            old.condition,
            old.trial_index,
            next,
            old.agent,
            old.model,
            name(&old.key(), next),
            now_rfc3339()
        ],
    )?;
    get_trial(conn, conn.last_insert_rowid())
}

/// Attempts left active (building/agent/verifying) — by a killed process or an interrupted one —
/// are closed as `interrupted` and a fresh queued attempt replaces each. Returns the closed ones.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn requeue_active(
    conn: &Connection,
    run_id: i64,
    name: &dyn Fn(&TrialKey, u32) -> String,
) -> Result<Vec<TrialRow>, StoreError> {
    let active = trials_where(
        conn,
        "run_id = ?1 AND superseded = 0 AND status IN ('building', 'agent', 'verifying')",
        [run_id],
    )?;
    for t in &active {
        finish_trial(
            conn,
            t.id,
            &TrialPatch {
                outcome: Some(Outcome::Interrupted),
                error: Some("the process running this attempt stopped; re-queued".into()),
                finished_at: Some(now_rfc3339()),
                ..Default::default()
            },
        )?;
        new_attempt(conn, t.id, name)?;
    }
    Ok(active)
}

/// The conditions run `run_id` has attempts of, each once, in no particular order.
///
/// # Errors
/// Database errors.
pub fn trial_conditions(conn: &Connection, run_id: i64) -> Result<Vec<String>, StoreError> {
    let mut st = conn.prepare("SELECT DISTINCT condition FROM trials WHERE run_id = ?1")?;
    let rows = st.query_map([run_id], |r| r.get(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}
