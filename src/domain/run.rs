//! A run and its fixed task set: [`RunRow`] and [`RunTaskRow`].

use serde::{Deserialize, Serialize};

/// A run: one task selection × conditions × trials with one agent and model.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunRow {
    /// Row id.
    pub id: i64,
    /// Unique run name (also the prefix of its Harbor job folders).
    pub name: String,
    /// Creation time, RFC 3339 UTC.
    pub created_at: String,
    /// Absolute tasks folder.
    pub tasks_dir: String,
    /// Agent (harness) name.
    pub agent: String,
    /// Model name, when the agent has one.
    pub model: Option<String>,
    /// Trials per task and condition.
    pub n_trials: u32,
    /// Condition keys, in order.
    pub conditions: Vec<String>,
    /// Folder holding the run's Harbor job folders.
    pub jobs_dir: String,
    /// `running`, `stopped` or `finished`.
    pub status: String,
    /// Last start, RFC 3339.
    pub started_at: Option<String>,
    /// Finish time, when finished.
    pub finished_at: Option<String>,
    /// Process id of the engine that owns the run while it runs.
    pub owner_pid: Option<u32>,
    /// Host name of that engine.
    pub owner_host: Option<String>,
    /// Last heartbeat of that engine, RFC 3339.
    pub heartbeat_at: Option<String>,
    /// Run settings as JSON (no secret values).
    pub settings: serde_json::Value,
    /// Unique id (32 hex digits), used to label the run's containers.
    pub uid: String,
    /// `native` (run here) or `harbor-import`.
    pub source: String,
    /// Why the run stopped, when it is `stopped` (operator, Docker unreachable, full disk, …).
    pub stop_reason: Option<String>,
    /// While every Docker host is down: since when, RFC 3339.
    pub waiting_since: Option<String>,
    /// While waiting for Docker: the last error.
    pub waiting_reason: Option<String>,
    /// When a stop was asked for from another process (`skillscope stop`).
    pub stop_requested_at: Option<String>,
    /// The command line that resumes the run (no secret values).
    pub resume_command: Option<String>,
    /// The cost budget in force, USD (`--max-cost`), when one is set.
    pub max_cost_usd: Option<f64>,
    /// The current limit on concurrent agent sessions with the model provider (adaptive: halved
    /// on a rate limit or overload, grown back slowly), when the agent uses one.
    pub provider_limit: Option<u32>,
}

/// A task as selected into a run (the fixed denominator of its pass rates).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunTaskRow {
    /// Task id.
    pub task_id: String,
    /// Domain label.
    pub domain: String,
    /// Difficulty label.
    pub difficulty: String,
    /// Task folder.
    pub path: String,
    /// Problems that make the task unrunnable.
    pub problems: Vec<String>,
}
