//! Writes to one attempt of the `trials` table: a [`TrialPatch`] of the columns to change, the
//! attempt's close, its stall mark.

use rusqlite::{Connection, params};

use crate::store::StoreError;
use crate::store::model::*;

/// Fields to change on an attempt; `None` leaves a column as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrialPatch {
    /// New status.
    pub status: Option<TrialStatus>,
    /// Outcome.
    pub outcome: Option<Outcome>,
    /// Scalar reward.
    pub reward: Option<f64>,
    /// All rewards.
    pub rewards: Option<serde_json::Value>,
    /// Docker host.
    pub host: Option<String>,
    /// Image tag.
    pub image: Option<String>,
    /// Container id.
    pub container_id: Option<String>,
    /// Trial folder.
    pub trial_dir: Option<String>,
    /// Attempt start.
    pub started_at: Option<String>,
    /// Attempt end.
    pub finished_at: Option<String>,
    /// Environment setup start.
    pub build_started_at: Option<String>,
    /// Environment setup end.
    pub build_finished_at: Option<String>,
    /// Agent start.
    pub agent_started_at: Option<String>,
    /// Agent end.
    pub agent_finished_at: Option<String>,
    /// Verifier start.
    pub verifier_started_at: Option<String>,
    /// Verifier end.
    pub verifier_finished_at: Option<String>,
    /// Agent exit code.
    pub agent_exit_code: Option<i64>,
    /// Verifier exit code.
    pub verifier_exit_code: Option<i64>,
    /// Error text.
    pub error: Option<String>,
    /// Input tokens (cached included).
    pub n_input_tokens: Option<i64>,
    /// Cached input tokens.
    pub n_cache_tokens: Option<i64>,
    /// Output tokens.
    pub n_output_tokens: Option<i64>,
    /// Cost, USD.
    pub cost_usd: Option<f64>,
    /// Trajectory file.
    pub trajectory_path: Option<String>,
    /// Steps in the trajectory.
    pub n_steps: Option<i64>,
    /// Tool calls in the trajectory.
    pub n_tool_calls: Option<i64>,
    /// CTRF tests.
    pub tests_total: Option<i64>,
    /// CTRF tests passed.
    pub tests_passed: Option<i64>,
    /// Trajectory steps that look failed.
    pub n_error_steps: Option<i64>,
    /// The agent ended with a message.
    pub final_message: Option<bool>,
    /// The infrastructure fault that interrupted the attempt.
    pub fault: Option<String>,
    /// Steps of the agent's trajectory so far.
    pub live_steps: Option<i64>,
    /// The agent's last tool call, one line.
    pub live_tool: Option<String>,
    /// When the agent last wrote output.
    pub last_output_at: Option<String>,
    /// Failure category (`analysis::failure_category`).
    pub failure_category: Option<String>,
    /// Agent settings, JSON.
    pub agent_settings: Option<serde_json::Value>,
    /// Skills the agent generated in a self-generated trial, JSON
    /// ([`crate::skillsbench::selfgen::GeneratedSkills`]).
    pub generated_skills: Option<serde_json::Value>,
    /// Names of needed environment values left empty (`--allow-missing-env`), JSON array.
    pub missing_env: Option<serde_json::Value>,
    /// The task's CPU or memory request cut to the host's, JSON.
    pub clamped: Option<serde_json::Value>,
    /// The trial's images and their build seconds, JSON.
    pub image_builds: Option<serde_json::Value>,
    /// Harbor 0.26's digest of the task folder.
    pub task_digest: Option<String>,
    /// The agent's flagged changes, JSON ([`crate::domain::TamperFlag`]).
    pub tamper: Option<serde_json::Value>,
}

/// Applies a patch to attempt `id`.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn patch_trial(conn: &Connection, id: i64, p: &TrialPatch) -> Result<(), StoreError> {
    let mut sets: Vec<String> = Vec::new();
    let mut vals: Vec<rusqlite::types::Value> = Vec::new();
    let mut set = |col: &str, v: rusqlite::types::Value| {
        vals.push(v);
        sets.push(format!("{col} = ?{}", vals.len()));
    };
    use rusqlite::types::Value as V;
    let text = |s: &Option<String>| s.clone().map(V::Text);
    let json = |v: &Option<serde_json::Value>| v.as_ref().map(|v| V::Text(v.to_string()));
    let fields: [(&str, Option<V>); 42] = [
        ("status", p.status.map(|s| V::Text(s.as_str().into()))),
        ("outcome", p.outcome.map(|o| V::Text(o.as_str().into()))),
        ("reward", p.reward.map(V::Real)),
        (
            "rewards",
            p.rewards.as_ref().map(|r| V::Text(r.to_string())),
        ),
        ("host", text(&p.host)),
        ("image", text(&p.image)),
        ("container_id", text(&p.container_id)),
        ("trial_dir", text(&p.trial_dir)),
        ("started_at", text(&p.started_at)),
        ("finished_at", text(&p.finished_at)),
        ("build_started_at", text(&p.build_started_at)),
        ("build_finished_at", text(&p.build_finished_at)),
        ("agent_started_at", text(&p.agent_started_at)),
        ("agent_finished_at", text(&p.agent_finished_at)),
        ("verifier_started_at", text(&p.verifier_started_at)),
        ("verifier_finished_at", text(&p.verifier_finished_at)),
        ("agent_exit_code", p.agent_exit_code.map(V::Integer)),
        ("verifier_exit_code", p.verifier_exit_code.map(V::Integer)),
        ("error", text(&p.error)),
        ("n_input_tokens", p.n_input_tokens.map(V::Integer)),
        ("n_cache_tokens", p.n_cache_tokens.map(V::Integer)),
        ("n_output_tokens", p.n_output_tokens.map(V::Integer)),
        ("cost_usd", p.cost_usd.map(V::Real)),
        ("trajectory_path", text(&p.trajectory_path)),
        ("n_steps", p.n_steps.map(V::Integer)),
        ("n_tool_calls", p.n_tool_calls.map(V::Integer)),
        ("tests_total", p.tests_total.map(V::Integer)),
        ("tests_passed", p.tests_passed.map(V::Integer)),
        ("n_error_steps", p.n_error_steps.map(V::Integer)),
        (
            "final_message",
            p.final_message.map(|b| V::Integer(b as i64)),
        ),
        ("fault", text(&p.fault)),
        ("live_steps", p.live_steps.map(V::Integer)),
        ("live_tool", text(&p.live_tool)),
        ("last_output_at", text(&p.last_output_at)),
        ("failure_category", text(&p.failure_category)),
        (
            "agent_settings",
            p.agent_settings.as_ref().map(|v| V::Text(v.to_string())),
        ),
        (
            "generated_skills",
            p.generated_skills.as_ref().map(|v| V::Text(v.to_string())),
        ),
        ("missing_env", json(&p.missing_env)),
        ("clamped", json(&p.clamped)),
        ("image_builds", json(&p.image_builds)),
        ("task_digest", text(&p.task_digest)),
        ("tamper", json(&p.tamper)),
    ];
    for (col, v) in fields {
        if let Some(v) = v {
            set(col, v);
        }
    }
    if sets.is_empty() {
        return Ok(());
    }
    vals.push(V::Integer(id));
    let sql = format!(
        "UPDATE trials SET {} WHERE id = ?{}",
        sets.join(", "),
        vals.len()
    );
    conn.execute(&sql, rusqlite::params_from_iter(vals))?;
    Ok(())
}

/// Marks attempt `id` stalled since `since`, or not stalled (`None`).
///
/// # Errors
/// SQL errors.
pub fn set_stalled(conn: &Connection, id: i64, since: Option<&str>) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE trials SET stalled_at = ?2 WHERE id = ?1",
        params![id, since],
    )?;
    Ok(())
}

/// Closes attempt `id`: status `done` plus the patch (outcome, reward, times, error).
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn finish_trial(conn: &Connection, id: i64, p: &TrialPatch) -> Result<(), StoreError> {
    patch_trial(
        conn,
        id,
        &TrialPatch {
            status: Some(TrialStatus::Done),
            ..p.clone()
        },
    )
}
