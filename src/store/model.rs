//! Row types and the trial state machine stored in SQLite.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Where a trial attempt is in its life. Stored as lower-case text.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord, Default,
)]
#[serde(rename_all = "kebab-case")]
pub enum TrialStatus {
    /// Waiting for a slot.
    #[default]
    Queued,
    /// Building or reusing the image, starting the container.
    Building,
    /// The agent runs.
    Agent,
    /// The verifier runs.
    Verifying,
    /// Finished; see the outcome.
    Done,
}

impl TrialStatus {
    /// All statuses.
    pub const ALL: [TrialStatus; 5] = [
        TrialStatus::Queued,
        TrialStatus::Building,
        TrialStatus::Agent,
        TrialStatus::Verifying,
        TrialStatus::Done,
    ];

    /// Stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            TrialStatus::Queued => "queued",
            TrialStatus::Building => "building",
            TrialStatus::Agent => "agent",
            TrialStatus::Verifying => "verifying",
            TrialStatus::Done => "done",
        }
    }

    /// True while a process works on the attempt (building, agent, verifying).
    pub fn is_active(self) -> bool {
        matches!(
            self,
            TrialStatus::Building | TrialStatus::Agent | TrialStatus::Verifying
        )
    }
}

/// How a finished attempt ended. The first seven are the trial outcomes of the evaluation;
/// `cancelled` and `interrupted` mark attempts stopped by the operator or by a shutdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The verifier wrote a reward of 1 (full marks).
    Pass,
    /// The verifier ran and wrote a reward below 1 (wrong output).
    Fail,
    /// The agent exceeded `[agent] timeout_sec`; the verifier still ran (as Harbor does) and its
    /// reward, if any, is kept.
    AgentTimeout,
    /// The verifier exceeded `[verifier] timeout_sec`.
    VerifierTimeout,
    /// The image could not be built (or the task definition is unusable).
    BuildError,
    /// Docker or skillscope failed while running the trial.
    RuntimeError,
    /// The verifier finished without writing a usable reward file.
    NoReward,
    /// The model provider failed (refused key, rate limit, overload, used-up quota, server
    /// error): the task was not fairly attempted, so the attempt is neither a pass nor a failure
    /// and is retried (automatically with backoff for transient failures).
    ProviderError,
    /// The operator cancelled the attempt.
    Cancelled,
    /// The process stopped (Ctrl-C, kill) while the attempt ran; it was re-queued.
    Interrupted,
}

impl Outcome {
    /// Every outcome, in display order.
    pub const ALL: [Outcome; 10] = [
        Outcome::Pass,
        Outcome::Fail,
        Outcome::AgentTimeout,
        Outcome::VerifierTimeout,
        Outcome::BuildError,
        Outcome::RuntimeError,
        Outcome::NoReward,
        Outcome::ProviderError,
        Outcome::Cancelled,
        Outcome::Interrupted,
    ];

    /// Stored text (`pass`, `agent-timeout`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::AgentTimeout => "agent-timeout",
            Outcome::VerifierTimeout => "verifier-timeout",
            Outcome::BuildError => "build-error",
            Outcome::RuntimeError => "runtime-error",
            Outcome::NoReward => "no-reward",
            Outcome::ProviderError => "provider-error",
            Outcome::Cancelled => "cancelled",
            Outcome::Interrupted => "interrupted",
        }
    }

    /// True for outcomes a retry makes sense for (everything but pass).
    pub fn is_retryable(self) -> bool {
        self != Outcome::Pass
    }

    /// True for a verdict about the task: the verifier's reward (pass, fail), a timeout the task
    /// caused, a reward its own test failed to write, an image its own Dockerfile cannot build.
    /// False for attempts without one: a runtime error of skillscope's, a provider failure, a
    /// cancel, an interruption. A run is `finished` only when every planned trial has a verdict.
    pub fn is_verdict(self) -> bool {
        matches!(
            self,
            Outcome::Pass
                | Outcome::Fail
                | Outcome::AgentTimeout
                | Outcome::VerifierTimeout
                | Outcome::NoReward
                | Outcome::BuildError
        )
    }

    /// The exception type Harbor records for this outcome in `result.json`, if any.
    pub fn harbor_exception_type(self) -> Option<&'static str> {
        match self {
            Outcome::Pass | Outcome::Fail => None,
            Outcome::AgentTimeout => Some("AgentTimeoutError"),
            Outcome::VerifierTimeout => Some("VerifierTimeoutError"),
            Outcome::BuildError => Some("EnvironmentBuildError"),
            Outcome::RuntimeError => Some("RuntimeError"),
            Outcome::NoReward => Some("RewardFileNotFoundError"),
            Outcome::ProviderError => Some("ProviderError"),
            Outcome::Cancelled | Outcome::Interrupted => Some("CancelledError"),
        }
    }
}

/// Error for unknown stored text.
#[derive(Debug, thiserror::Error)]
#[error("unknown {what} {value:?}")]
pub struct ParseEnumError {
    what: &'static str,
    value: String,
}

macro_rules! text_enum {
    ($t:ty, $what:literal) => {
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl FromStr for $t {
            type Err = ParseEnumError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                <$t>::ALL
                    .into_iter()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| ParseEnumError {
                        what: $what,
                        value: s.to_string(),
                    })
            }
        }
        impl rusqlite::ToSql for $t {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(self.as_str().into())
            }
        }
        impl rusqlite::types::FromSql for $t {
            fn column_result(
                v: rusqlite::types::ValueRef<'_>,
            ) -> rusqlite::types::FromSqlResult<Self> {
                v.as_str()?
                    .parse()
                    .map_err(|e| rusqlite::types::FromSqlError::Other(Box::new(e)))
            }
        }
    };
}
text_enum!(TrialStatus, "trial status");
text_enum!(Outcome, "outcome");

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

/// One attempt of one trial (task × condition × trial index).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct TrialRow {
    /// Row id.
    pub id: i64,
    /// Run row id.
    pub run_id: i64,
    /// Task id.
    pub task_id: String,
    /// Condition key.
    pub condition: String,
    /// Trial index, 1-based.
    pub trial_index: u32,
    /// Attempt number, 1-based; retries and re-queues add attempts.
    pub attempt: u32,
    /// True when a later attempt of the same trial exists.
    pub superseded: bool,
    /// Current status.
    pub status: TrialStatus,
    /// Outcome once done.
    pub outcome: Option<Outcome>,
    /// Scalar reward (see `harbor::reward::scalar_reward`), when the verifier produced one.
    pub reward: Option<f64>,
    /// Every reward key the verifier wrote, as JSON.
    pub rewards: Option<serde_json::Value>,
    /// Agent name.
    pub agent: String,
    /// Model name.
    pub model: Option<String>,
    /// Docker host the attempt ran on.
    pub host: Option<String>,
    /// Image tag.
    pub image: Option<String>,
    /// Container id.
    pub container_id: Option<String>,
    /// Harbor trial name `<task>__<id>`.
    pub trial_name: String,
    /// Trial folder.
    pub trial_dir: Option<String>,
    /// Times, RFC 3339 UTC.
    pub queued_at: String,
    /// Attempt start.
    pub started_at: Option<String>,
    /// Attempt end.
    pub finished_at: Option<String>,
    /// Environment setup (image + container) start.
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
    /// Agent process exit code.
    pub agent_exit_code: Option<i64>,
    /// Verifier process exit code.
    pub verifier_exit_code: Option<i64>,
    /// Error text for non-pass outcomes.
    pub error: Option<String>,
    /// Input tokens (cached included), when known.
    pub n_input_tokens: Option<i64>,
    /// Cached input tokens, when known.
    pub n_cache_tokens: Option<i64>,
    /// Output tokens, when known.
    pub n_output_tokens: Option<i64>,
    /// Cost, USD, when known.
    pub cost_usd: Option<f64>,
    /// For imported trials: Harbor's trial id (or its folder), so a re-import adds nothing.
    pub import_key: Option<String>,
    /// ATIF trajectory file.
    pub trajectory_path: Option<String>,
    /// Steps in the trajectory.
    pub n_steps: Option<i64>,
    /// Tool calls in the trajectory.
    pub n_tool_calls: Option<i64>,
    /// Tests in the verifier's CTRF report.
    pub tests_total: Option<i64>,
    /// Of which passed.
    pub tests_passed: Option<i64>,
    /// Trajectory steps whose observations look like failures (tracebacks, non-zero exit codes,
    /// `Error:` lines), when a trajectory was read.
    pub n_error_steps: Option<i64>,
    /// The agent's last step carries a message (it explained where it got to), when known.
    pub final_message: Option<bool>,
    /// Synthesized from a published aggregate (`passCount` of n trials), not a trial folder.
    pub aggregated: bool,
    /// The infrastructure fault that interrupted the attempt (`daemon-unreachable`, `disk-full`, …;
    /// see `runner::Fault`), when one did.
    pub fault: Option<String>,
    /// While (and after) the agent runs: the steps of its trajectory so far.
    pub live_steps: Option<i64>,
    /// Its last tool call, one sanitized line (`Bash: pytest -q`).
    pub live_tool: Option<String>,
    /// When the agent last wrote output, RFC 3339.
    pub last_output_at: Option<String>,
    /// Since when the agent has written nothing for longer than the run's stall time (RFC 3339);
    /// cleared when it writes again.
    pub stalled_at: Option<String>,
    /// The evaluation plan's failure category of a judged failure (`timeout`, `execution`,
    /// `coherence`, `verification`, `unclassified`; see `analysis::failure_category`), once
    /// decided; `None` for passes, infrastructure failures and rows recorded before it existed.
    pub failure_category: Option<String>,
    /// What decided the agent's behaviour in this attempt (harness and version, model, sampling
    /// settings the harness accepts, and what could not be pinned), JSON; `None` when unknown.
    pub agent_settings: Option<serde_json::Value>,
    /// Names (never values) of environment values the task needs that were empty because the run
    /// allowed it (`--allow-missing-env`), JSON array; `None` when every value was set. A report
    /// can leave such trials out: they did not test the agent.
    pub missing_env: Option<serde_json::Value>,
    /// The task's CPU or memory request cut to what the Docker host has
    /// (`{"cpus": {"requested": 8, "applied": 2}}`), JSON; `None` when nothing was cut.
    pub clamped: Option<serde_json::Value>,
    /// Each image of the trial's chain (`[{"tag", "seconds", "built"}]`, the base image first):
    /// the seconds its build took, 0 when it was reused. `None` before an image was ready.
    pub image_builds: Option<serde_json::Value>,
}

/// The few columns of an attempt that pass rates and the dashboard grid need — read in bulk
/// (10,000 trials in a few milliseconds) where a full [`TrialRow`] would be too slow.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TrialBrief {
    /// Row id.
    pub id: i64,
    /// Task id.
    pub task_id: String,
    /// Condition key.
    pub condition: String,
    /// Trial index, 1-based.
    pub trial_index: u32,
    /// Attempt number, 1-based.
    pub attempt: u32,
    /// True when a later attempt exists.
    pub superseded: bool,
    /// Status.
    pub status: TrialStatus,
    /// Outcome once done.
    pub outcome: Option<Outcome>,
    /// Scalar reward.
    pub reward: Option<f64>,
    /// Attempt end, RFC 3339.
    pub finished_at: Option<String>,
}

impl TrialBrief {
    /// The trial this attempt belongs to.
    pub fn key(&self) -> TrialKey {
        TrialKey {
            task_id: self.task_id.clone(),
            condition: self.condition.clone(),
            trial_index: self.trial_index,
        }
    }
}

impl TrialRow {
    /// The brief form of this attempt.
    pub fn brief(&self) -> TrialBrief {
        TrialBrief {
            id: self.id,
            task_id: self.task_id.clone(),
            condition: self.condition.clone(),
            trial_index: self.trial_index,
            attempt: self.attempt,
            superseded: self.superseded,
            status: self.status,
            outcome: self.outcome,
            reward: self.reward,
            finished_at: self.finished_at.clone(),
        }
    }
}

/// The trials planned per task and condition of a run: `default` (the run's trials per task)
/// unless `per_task` names a count — what an imported Harbor job or published file planned for
/// that task (`trial_plans`), never fewer than the trials recorded for it. An imported run's
/// plan is `explicit`: a task and condition it names no count for planned nothing (each condition
/// plans what its own jobs held, never another condition's tasks).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialPlan {
    /// Trials per task and condition where nothing else is known.
    pub default: u32,
    /// (task id, condition key) → trials planned.
    pub per_task: std::collections::HashMap<(String, String), u32>,
    /// True when only `per_task` plans: every other task and condition planned 0 trials.
    #[serde(default)]
    pub explicit: bool,
}

impl TrialPlan {
    /// The same `n` trials for every task and condition (a native run).
    pub fn uniform(n: u32) -> TrialPlan {
        TrialPlan {
            default: n,
            per_task: Default::default(),
            explicit: false,
        }
    }

    /// Trials planned for `task` under `condition` (0: the condition did not run the task).
    pub fn of(&self, task: &str, condition: &str) -> u32 {
        if self.per_task.is_empty() && !self.explicit {
            return self.default;
        }
        let fallback = if self.explicit { 0 } else { self.default };
        self.per_task
            .get(&(task.to_string(), condition.to_string()))
            .copied()
            .unwrap_or(fallback)
    }

    /// The largest count planned for any task.
    pub fn max(&self) -> u32 {
        self.per_task
            .values()
            .copied()
            .chain([self.default])
            .max()
            .unwrap_or(0)
    }

    /// True when every task and condition has the same count.
    pub fn is_uniform(&self) -> bool {
        self.per_task.values().all(|n| *n == self.default)
    }
}

/// Identity of a trial (all its attempts share it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TrialKey {
    /// Task id.
    pub task_id: String,
    /// Condition key.
    pub condition: String,
    /// Trial index, 1-based.
    pub trial_index: u32,
}

impl TrialRow {
    /// The trial this attempt belongs to.
    pub fn key(&self) -> TrialKey {
        TrialKey {
            task_id: self.task_id.clone(),
            condition: self.condition.clone(),
            trial_index: self.trial_index,
        }
    }
}

/// A skill's use in a trial (see `harbor::skill_use` for how it is detected).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillUseRow {
    /// Skill (folder) name.
    pub skill: String,
    /// `read`, `resource`, `shell` or `invoke`.
    pub kind: String,
    /// First step showing it.
    pub first_step: Option<i64>,
    /// Tool calls showing it.
    pub count: i64,
}

/// Operator commands the engine picks up from the `commands` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CommandKind {
    /// Re-run a finished trial as a new attempt.
    Retry,
    /// Stop a queued or running attempt.
    Cancel,
}

impl CommandKind {
    /// Every kind.
    pub const ALL: [CommandKind; 2] = [CommandKind::Retry, CommandKind::Cancel];
    /// Stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            CommandKind::Retry => "retry",
            CommandKind::Cancel => "cancel",
        }
    }
}
text_enum!(CommandKind, "command kind");

/// A pending or handled operator command.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CommandRow {
    /// Row id.
    pub id: i64,
    /// Run row id.
    pub run_id: i64,
    /// Retry or cancel.
    pub kind: CommandKind,
    /// The attempt it targets.
    pub trial_id: i64,
    /// When it was written.
    pub created_at: String,
    /// `pending`, `done` or `rejected`.
    pub state: String,
    /// Why it was rejected, or what it did.
    pub note: Option<String>,
}

/// One Docker host of a run and its health, as the engine last saw it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HostRow {
    /// Endpoint name (`unix:///var/run/docker.sock`, `tcp://host:2376`).
    pub host: String,
    /// `up`, `down` or `draining`.
    pub state: String,
    /// Since when it is in that state, RFC 3339.
    pub since: String,
    /// The error that made it `down` or `draining`.
    pub last_error: Option<String>,
    /// Trials it may run at once.
    pub slots: usize,
    /// Trials running on it.
    pub running: usize,
    /// Last check, RFC 3339.
    pub checked_at: String,
}

/// Seconds after which a running run's heartbeat is stale: its engine is presumed gone (unless
/// it is on this machine and its process still exists).
pub const STALE_AFTER_SECS: i64 = 30;

/// Whether a run's engine is alive, as another process can tell from the store.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum Liveness {
    /// Not running (`stopped` or `finished`).
    Idle,
    /// An engine runs it; its last heartbeat was `heartbeat_age_secs` ago.
    Live {
        /// Seconds since the last heartbeat.
        heartbeat_age_secs: i64,
    },
    /// Marked running, but its engine is gone: the owner process no longer exists on this
    /// machine, or its heartbeat is older than [`STALE_AFTER_SECS`].
    Stale {
        /// The last heartbeat, RFC 3339 (when the engine was last seen).
        since: Option<String>,
        /// Seconds since the last heartbeat.
        heartbeat_age_secs: Option<i64>,
    },
}

impl Liveness {
    /// How `run` looks at `now`, asked from `host` (this machine's name): the owner's process is
    /// checked when it runs here.
    pub fn of(run: &RunRow, now: chrono::DateTime<chrono::Utc>, host: &str) -> Liveness {
        Liveness::at(run, now, owner_alive_here(run, host))
    }

    /// How `run` looks at `now`, given whether its owner's process exists (`None` when the owner
    /// runs on another machine and only its heartbeat tells). Pure: what a view draws from a
    /// snapshot.
    pub fn at(
        run: &RunRow,
        now: chrono::DateTime<chrono::Utc>,
        owner_alive: Option<bool>,
    ) -> Liveness {
        if run.status != "running" {
            return Liveness::Idle;
        }
        let age = run
            .heartbeat_at
            .as_deref()
            .and_then(|h| chrono::DateTime::parse_from_rfc3339(h).ok())
            .map(|h| now.signed_duration_since(h).num_seconds().max(0));
        match (age, owner_alive) {
            (Some(a), Some(true)) | (Some(a), None)
                if a < STALE_AFTER_SECS || owner_alive.is_some() =>
            {
                Liveness::Live {
                    heartbeat_age_secs: a,
                }
            }
            _ => Liveness::Stale {
                since: run.heartbeat_at.clone(),
                heartbeat_age_secs: age,
            },
        }
    }

    /// True for a run whose engine is gone.
    pub fn is_stale(&self) -> bool {
        matches!(self, Liveness::Stale { .. })
    }

    /// What happens to a command (retry, cancel) queued for `run`: applied by its live engine,
    /// or waiting for one — then naming the command that resumes the run.
    pub fn command_note(&self, run: &RunRow) -> String {
        let resume = run.resume_command.clone().unwrap_or_else(|| {
            format!(
                "skillscope run --run {} (with the options it was started with)",
                run.name
            )
        });
        match self {
            Liveness::Live { .. } => "the run's engine applies it within a second".to_string(),
            Liveness::Stale { since, .. } => format!(
                "run {} has no live engine (stale — engine gone since {}); it applies once the run is resumed: {resume}",
                run.name,
                since.as_deref().unwrap_or("?")
            ),
            Liveness::Idle => format!(
                "run {} is {} and has no engine; it applies once the run is resumed: {resume}",
                run.name, run.status
            ),
        }
    }
}

/// Whether `run`'s owner process exists, when it runs on `host` (this machine); `None` when it
/// runs elsewhere or the run has no owner.
pub fn owner_alive_here(run: &RunRow, host: &str) -> Option<bool> {
    match (run.owner_host.as_deref(), run.owner_pid) {
        (Some(h), Some(pid)) if h == host => Some(super::owner::process_alive(pid)),
        _ => None,
    }
}

/// Current UTC time as RFC 3339 with milliseconds (the format of every stored timestamp).
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
