//! Harbor's trial and job files, as serde models.
//!
//! Field names, shapes and key order follow Harbor 0.26 (`harbor/models/trial/result.py`,
//! `models/trial/config.py`, `models/job/result.py`), which Harbor 0.25's models accept too:
//! `TrialResult` is the trial's `result.json`, `TrialConfig` its `config.json`, `JobResult` the
//! job's `result.json`. 0.26 added `schema_version` (always 1) as the first key of each, a
//! computed `reward_valid` as the last key of a trial result and a computed `policy` as the last
//! key of its `exception_info` ([`super::error_policy`]). Every field skillscope does not set is
//! optional, and unknown fields are ignored when reading, so the same types read real Harbor
//! output of either version.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Start and end of a phase (`TimingInfo`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TimingInfo {
    /// Phase start, ISO 8601.
    pub started_at: Option<String>,
    /// Phase end, ISO 8601.
    pub finished_at: Option<String>,
}

/// `ExceptionInfo`: what stopped a trial.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ExceptionInfo {
    /// Python class name in Harbor (`AgentTimeoutError`, `VerifierTimeoutError`,
    /// `RewardFileNotFoundError`, …).
    pub exception_type: String,
    /// Message.
    pub exception_message: String,
    /// Traceback (skillscope writes the error chain).
    #[serde(default)]
    pub exception_traceback: String,
    /// When it happened.
    pub occurred_at: String,
    /// The override of the error policy the trial was judged by, when one was configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_override: Option<super::error_policy::ErrorPolicyOverride>,
    /// Harbor 0.26's policy for this exception type (computed: Harbor ignores it on input).
    #[serde(default)]
    pub policy: Option<super::error_policy::ErrorPolicy>,
}

/// `ModelInfo`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ModelInfo {
    /// Model name.
    pub name: String,
    /// Provider (`anthropic`, `google`, …).
    #[serde(default)]
    pub provider: Option<String>,
}

/// `AgentInfo`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AgentInfo {
    /// Harness name.
    pub name: String,
    /// Harness version.
    pub version: String,
    /// Model, when there is one.
    #[serde(default)]
    pub model_info: Option<ModelInfo>,
}

/// `AgentContext` (the trial's `agent_result`): token counts and cost; `None` = unknown.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct AgentResult {
    /// Input tokens (cache included).
    pub n_input_tokens: Option<i64>,
    /// Cached input tokens.
    pub n_cache_tokens: Option<i64>,
    /// Output tokens.
    pub n_output_tokens: Option<i64>,
    /// Cost, USD.
    pub cost_usd: Option<f64>,
}

/// `VerifierResult`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct VerifierResult {
    /// Reward name → value (`{"reward": 1.0}` for `reward.txt`).
    pub rewards: Option<BTreeMap<String, f64>>,
}

/// `LocalTaskId`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TaskIdPath {
    /// Task folder.
    pub path: String,
}

/// `TaskConfig` inside a trial config.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TaskRef {
    /// Task folder.
    pub path: String,
}

/// `AgentConfig` inside a trial config.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AgentConfig {
    /// Harness name.
    pub name: String,
    /// Model name.
    #[serde(default)]
    pub model_name: Option<String>,
    /// Harness arguments.
    #[serde(default)]
    pub kwargs: BTreeMap<String, serde_json::Value>,
}

/// Always 1: the `schema_version` Harbor 0.26 writes first in every result and config.
pub const SCHEMA_VERSION: u32 = 1;

fn schema_version() -> u32 {
    SCHEMA_VERSION
}

/// `EnvironmentConfig` inside a trial config.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EnvironmentConfig {
    /// Always `docker` for skillscope.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// Rebuild even when cached.
    #[serde(default)]
    pub force_build: bool,
    /// Remove the container afterwards.
    #[serde(default = "yes")]
    pub delete: bool,
    /// CPU override (a whole number written as an integer, as Harbor 0.26 normalizes it).
    #[serde(default, serialize_with = "cpus")]
    pub override_cpus: Option<f64>,
    /// Memory override, MiB.
    #[serde(default)]
    pub override_memory_mb: Option<u64>,
    /// Extra settings (skillscope records env variable *names* and mounts here, never values).
    #[serde(default)]
    pub kwargs: BTreeMap<String, serde_json::Value>,
}

fn yes() -> bool {
    true
}

/// Writes a CPU count as Harbor's `normalize_cpus` leaves it: `2.0` as `2`, `0.5` as `0.5`.
pub(super) fn cpus<S: serde::Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(c) if c.fract() == 0.0 && c.abs() < 1e15 => s.serialize_i64(*c as i64),
        Some(c) => s.serialize_f64(*c),
        None => s.serialize_none(),
    }
}

/// `VerifierConfig` inside a trial config.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct VerifierConfig {
    /// Verifier switched off.
    #[serde(default)]
    pub disable: bool,
}

/// `TrialConfig`: the trial's `config.json` and `result.json`'s `config`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TrialConfig {
    /// Format version ([`SCHEMA_VERSION`]).
    #[serde(default = "schema_version")]
    pub schema_version: u32,
    /// Task reference.
    pub task: TaskRef,
    /// Trial name.
    pub trial_name: String,
    /// Folder holding the trial (the job folder).
    pub trials_dir: String,
    /// Timeout multiplier.
    #[serde(default = "one")]
    pub timeout_multiplier: f64,
    /// Agent.
    pub agent: AgentConfig,
    /// Environment.
    pub environment: EnvironmentConfig,
    /// Verifier.
    #[serde(default)]
    pub verifier: VerifierConfig,
    /// Job id.
    #[serde(default)]
    pub job_id: Option<String>,
}

fn one() -> f64 {
    1.0
}

/// `TrialResult`: the trial's `result.json`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TrialResult {
    /// Format version ([`SCHEMA_VERSION`]; absent in Harbor 0.25's files).
    #[serde(default = "schema_version")]
    pub schema_version: u32,
    /// Trial id (UUID).
    pub id: String,
    /// Task name.
    pub task_name: String,
    /// Trial name `<task>__<suffix>`.
    pub trial_name: String,
    /// `file://` URI of the trial folder.
    pub trial_uri: String,
    /// Task id.
    pub task_id: TaskIdPath,
    /// Dataset name.
    #[serde(default)]
    pub source: Option<String>,
    /// SHA-256 of the task folder.
    pub task_checksum: String,
    /// The trial's config.
    pub config: TrialConfig,
    /// The agent.
    pub agent_info: AgentInfo,
    /// Tokens and cost.
    #[serde(default)]
    pub agent_result: Option<AgentResult>,
    /// Rewards.
    #[serde(default)]
    pub verifier_result: Option<VerifierResult>,
    /// Where the verifier ran: `shared` (in the agent's container, as skillscope runs it) or
    /// `separate` (a fresh one); `None` for multi-step trials.
    #[serde(default)]
    pub verifier_environment_mode: Option<String>,
    /// What stopped the trial.
    #[serde(default)]
    pub exception_info: Option<ExceptionInfo>,
    /// Trial start.
    #[serde(default)]
    pub started_at: Option<String>,
    /// Trial end.
    #[serde(default)]
    pub finished_at: Option<String>,
    /// Image build/reuse and container start.
    #[serde(default)]
    pub environment_setup: Option<TimingInfo>,
    /// Agent installation.
    #[serde(default)]
    pub agent_setup: Option<TimingInfo>,
    /// Agent run.
    #[serde(default)]
    pub agent_execution: Option<TimingInfo>,
    /// Verifier run.
    #[serde(default)]
    pub verifier: Option<TimingInfo>,
    /// Multi-step trials: one `StepResult` per step that started; `None` for single-step ones.
    #[serde(default)]
    pub step_results: Option<Vec<serde_json::Value>>,
    /// Harbor 0.26's `reward_valid` (computed: Harbor ignores it on input): rewards exist and
    /// every recorded exception's policy leaves them valid.
    #[serde(default)]
    pub reward_valid: Option<bool>,
}

/// Per agent × model × dataset statistics (`AgentDatasetStats`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct EvalStats {
    /// Trials with a verifier result.
    pub n_trials: u64,
    /// Trials with an exception.
    pub n_errors: u64,
    /// Metric results (`[{"mean": …}]`).
    pub metrics: Vec<BTreeMap<String, f64>>,
    /// Reward key → value (as text) → trial names.
    pub reward_stats: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    /// Exception type → trial names.
    pub exception_stats: BTreeMap<String, Vec<String>>,
}

/// `JobStats`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct JobStats {
    /// Trials finished.
    pub n_trials: u64,
    /// Trials with an exception.
    pub n_errors: u64,
    /// `<agent>__<model>__<dataset>` → stats.
    pub evals: BTreeMap<String, EvalStats>,
}

/// `JobResult`: the job's `result.json`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobResult {
    /// Format version ([`SCHEMA_VERSION`]).
    #[serde(default = "schema_version")]
    pub schema_version: u32,
    /// Job id.
    pub id: String,
    /// Job start.
    pub started_at: String,
    /// Job end.
    #[serde(default)]
    pub finished_at: Option<String>,
    /// Trials planned.
    pub n_total_trials: u64,
    /// Statistics.
    pub stats: JobStats,
}
