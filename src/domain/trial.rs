//! A trial and its attempts: [`TrialRow`] (one attempt, every column), [`TrialBrief`] (the few
//! columns pass rates and the grid read in bulk), [`TrialKey`] (task × condition × trial index),
//! [`TrialPlan`] (trials planned per task and condition) and [`SkillUseRow`].

use serde::{Deserialize, Serialize};

use super::{Outcome, TrialStatus};

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
    /// Harbor 0.26's digest of the task folder the attempt ran (`sha256:<64 hex>`, the
    /// `task.digest` of its `lock.json`): the same digest means the same task files, here and
    /// in a Harbor run. `None` when it could not be computed or the row predates it.
    pub task_digest: Option<String>,
    /// What the agent changed where a task's work never goes, when anything was flagged
    /// ([`crate::domain::TamperFlag`], JSON; the whole record is the trial's
    /// `agent/tamper.json`): the attempt is judged a failure of the agent. `None` when nothing
    /// was flagged, or the attempt never got that far.
    pub tamper: Option<serde_json::Value>,
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
    /// The first attempt of trial `index` of `task` under `condition`, queued, of run 1 by the
    /// `oracle` agent, every other column empty: the one row tests and synthetic stores build on
    /// (`TrialRow { outcome, reward, ..TrialRow::fixture(…) }`) instead of writing out its ~40
    /// columns each time.
    pub fn fixture(task: &str, condition: &str, index: u32) -> TrialRow {
        TrialRow {
            id: 0,
            run_id: 1,
            task_id: task.into(),
            condition: condition.into(),
            trial_index: index,
            attempt: 1,
            status: TrialStatus::Queued,
            agent: "oracle".into(),
            trial_name: format!("{task}__x"),
            ..Default::default()
        }
    }

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
