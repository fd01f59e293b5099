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
    /// The pinned task set the run was checked against before it began (`--task-set`).
    pub task_set: Option<TaskSetPin>,
}

/// A pinned task set as a run records it: which set, from which file, how its digests were
/// compared, and what differed when the run was allowed to start anyway (`--allow-drift`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TaskSetPin {
    /// The set's name (`skillsbench`).
    pub name: String,
    /// Its version (`1.1`), when it has one.
    pub version: Option<String>,
    /// The file it was read from.
    pub file: String,
    /// Whose digests the file holds: `benchflow` (a SkillsBench `registry.json`, an AgentBeats
    /// task set) or `harbor-0.26` (a list of name + digest, as `skillscope tasks --json` prints).
    pub algorithm: String,
    /// Tasks the set pins.
    pub n_tasks: usize,
    /// The run started although tasks differed (`--allow-drift`).
    pub allow_drift: bool,
    /// Every task that differed from the set when the run began.
    #[serde(default)]
    pub drift: Vec<TaskDrift>,
}

impl TaskSetPin {
    /// `skillsbench@1.1`, or the name alone.
    pub fn label(&self) -> String {
        match &self.version {
            Some(v) => format!("{}@{v}", self.name),
            None => self.name.clone(),
        }
    }
}

/// One task that did not match its pinned digest.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TaskDrift {
    /// Task id.
    pub task: String,
    /// The digest the set pins.
    pub expected: String,
    /// The folder's digest (same algorithm), `None` when the tasks folder lacks the task or it
    /// could not be read.
    pub found: Option<String>,
    /// Why it differs: `digest differs`, `missing from the tasks folder`, `cannot be read: …`,
    /// `changed since the run began`.
    pub reason: String,
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
    /// Harbor 0.26's digest of the task folder when the run began (`sha256:<hex>`); `None` when
    /// it could not be computed (the folder is unreadable) or is not known (imports).
    #[serde(default)]
    pub digest: Option<String>,
}

/// Every drifted task in one phrase: `hvac-control (digest differs: sha256:ea07c7b4… instead of
/// sha256:a134cc15…), x (missing from the tasks folder)`.
pub fn describe_drift(drift: &[TaskDrift]) -> String {
    let short = |d: &str| {
        d.get(..15)
            .map(|s| format!("{s}…"))
            .unwrap_or_else(|| d.to_string())
    };
    drift
        .iter()
        .map(|d| match &d.found {
            Some(found) => format!(
                "{} ({}: {} instead of {})",
                d.task,
                d.reason,
                short(found),
                short(&d.expected)
            ),
            None => format!("{} ({})", d.task, d.reason),
        })
        .collect::<Vec<_>>()
        .join(", ")
}
