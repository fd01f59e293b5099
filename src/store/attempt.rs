//! What is recorded of one attempt while it runs and when it ends, in the trial's terms (its
//! phase, image, container, agent, trajectory, verifier, verdict). The engine builds an
//! [`AttemptRecord`] from the runner's events and hands it to [`super::RunLedger`]; which
//! columns of `trials` that fills is this file's business alone.

use super::queries::TrialPatch;
use super::{Outcome, TrialStatus};

/// Tokens and cost of one agent session (`None`: not reported).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tokens {
    /// Input tokens (cached included).
    pub input: Option<i64>,
    /// Cached input tokens.
    pub cached: Option<i64>,
    /// Output tokens.
    pub output: Option<i64>,
    /// Cost, USD.
    pub cost: Option<f64>,
}

/// What a running agent did so far, as its log tells (recorded every few seconds).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveActivity {
    /// When the agent last wrote output, RFC 3339.
    pub last_output_at: String,
    /// Steps of its trajectory so far (`None`: its log cannot say).
    pub steps: Option<i64>,
    /// Its last tool call, one line.
    pub tool: Option<String>,
    /// Tokens and cost so far.
    pub tokens: Tokens,
}

/// How an attempt ended, as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptVerdict {
    /// Its outcome.
    pub outcome: Outcome,
    /// The scalar reward.
    pub reward: Option<f64>,
    /// Every reward, JSON.
    pub rewards: Option<serde_json::Value>,
    /// What went wrong, one line.
    pub error: Option<String>,
    /// Its failure category (`analysis::failure_category`).
    pub failure_category: Option<String>,
    /// The infrastructure fault that interrupted it.
    pub fault: Option<String>,
    /// What its agent changed where a task's work never goes, when anything was flagged.
    pub tamper: Option<crate::domain::TamperFlag>,
    /// When it ended, RFC 3339.
    pub finished_at: String,
}

/// What is known of one attempt so far; every setter records a fact the runner reported.
#[derive(Debug, Clone, Default)]
pub struct AttemptRecord {
    patch: TrialPatch,
}

impl AttemptRecord {
    /// The attempt began setting up its environment at `at` (phase `building`).
    pub fn started(
        &mut self,
        at: &str,
        host: &str,
        trial_dir: &std::path::Path,
        agent_settings: serde_json::Value,
    ) {
        let p = &mut self.patch;
        p.agent_settings = Some(agent_settings);
        p.started_at = Some(at.to_string());
        p.build_started_at = Some(at.to_string());
        p.status = Some(TrialStatus::Building);
        p.host = Some(host.to_string());
        p.trial_dir = Some(trial_dir.display().to_string());
    }

    /// Harbor 0.26's digest of the task folder it runs (`sha256:<hex>`).
    pub fn task_digest(&mut self, digest: &str) {
        self.patch.task_digest = Some(digest.to_string());
    }

    /// Needed environment values nobody set (names).
    pub fn missing_env(&mut self, names: &[String]) {
        self.patch.missing_env = Some(serde_json::json!(names));
    }

    /// The image it runs in, and the images built for it with their seconds (JSON).
    pub fn image(&mut self, tag: &str, builds: Option<serde_json::Value>) {
        self.patch.image = Some(tag.to_string());
        self.patch.image_builds = builds;
    }

    /// Its CPU or memory request cut to the host's (JSON; `None`: not cut).
    pub fn clamped(&mut self, clamped: Option<serde_json::Value>) {
        self.patch.clamped = clamped;
    }

    /// Its main container.
    pub fn container(&mut self, id: &str) {
        self.patch.container_id = Some(id.to_string());
    }

    /// The environment was ready and the agent started at `at` (phase `agent`).
    pub fn agent_started(&mut self, at: &str) {
        self.patch.build_finished_at = Some(at.to_string());
        self.patch.agent_started_at = Some(at.to_string());
        self.patch.status = Some(TrialStatus::Agent);
    }

    /// What a self-generated trial's agent wrote (JSON of
    /// [`crate::skillsbench::selfgen::GeneratedSkills`]).
    pub fn generated_skills(&mut self, generated: Option<serde_json::Value>) {
        self.patch.generated_skills = generated;
    }

    /// The agent's session ended at `at`.
    pub fn agent_ended(&mut self, at: &str) {
        self.patch.agent_finished_at = Some(at.to_string());
    }

    /// The agent's exit code.
    pub fn agent_exit(&mut self, code: Option<i64>) {
        self.patch.agent_exit_code = code;
    }

    /// The agent's exit code, when it exited.
    pub fn agent_exit_code(&self) -> Option<i64> {
        self.patch.agent_exit_code
    }

    /// The agent's trajectory at `path` and what it counts: steps, tool calls, failed-looking
    /// steps, whether it ended with a message, and the session's tokens and cost.
    pub fn trajectory(
        &mut self,
        path: &std::path::Path,
        (steps, tool_calls, error_steps): (i64, i64, i64),
        final_message: bool,
        tokens: Tokens,
    ) {
        let p = &mut self.patch;
        p.trajectory_path = Some(path.display().to_string());
        p.n_steps = Some(steps);
        p.n_tool_calls = Some(tool_calls);
        p.n_error_steps = Some(error_steps);
        p.final_message = Some(final_message);
        p.n_input_tokens = tokens.input;
        p.n_cache_tokens = tokens.cached;
        p.n_output_tokens = tokens.output;
        p.cost_usd = tokens.cost;
    }

    /// Adds the tokens and cost of another session of the trial (a trial of two sessions costs
    /// both; unknown plus known is the known).
    pub fn add_session(&mut self, t: Tokens) {
        fn sum<T: std::ops::Add<Output = T>>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            }
        }
        let p = &mut self.patch;
        p.n_input_tokens = sum(p.n_input_tokens, t.input);
        p.n_cache_tokens = sum(p.n_cache_tokens, t.cached);
        p.n_output_tokens = sum(p.n_output_tokens, t.output);
        p.cost_usd = sum(p.cost_usd, t.cost);
    }

    /// The verifier started at `at` (phase `verifying`).
    pub fn verifier_started(&mut self, at: &str) {
        self.patch.verifier_started_at = Some(at.to_string());
        self.patch.status = Some(TrialStatus::Verifying);
    }

    /// The verifier ended at `at`, with its exit code when it exited.
    pub fn verifier_ended(&mut self, at: &str, exit_code: Option<i64>) {
        self.patch.verifier_finished_at = Some(at.to_string());
        if exit_code.is_some() {
            self.patch.verifier_exit_code = exit_code;
        }
    }

    /// The verifier's CTRF report counted `total` tests, `passed` of them passed.
    pub fn tests(&mut self, total: i64, passed: i64) {
        self.patch.tests_total = Some(total);
        self.patch.tests_passed = Some(passed);
    }

    /// The record closed with its verdict (phase `done`).
    pub fn judged(self, v: AttemptVerdict) -> AttemptRecord {
        AttemptRecord {
            patch: TrialPatch {
                status: Some(TrialStatus::Done),
                outcome: Some(v.outcome),
                reward: v.reward,
                rewards: v.rewards,
                error: v.error,
                failure_category: v.failure_category,
                fault: v.fault,
                tamper: v.tamper.and_then(|t| serde_json::to_value(t).ok()),
                finished_at: Some(v.finished_at),
                ..self.patch
            },
        }
    }

    /// Its phase now (`None` before it began).
    pub fn status(&self) -> Option<TrialStatus> {
        self.patch.status
    }

    /// Its outcome (`None` until judged).
    pub fn outcome(&self) -> Option<Outcome> {
        self.patch.outcome
    }

    /// The columns it sets.
    pub(super) fn patch(&self) -> &TrialPatch {
        &self.patch
    }
}

impl LiveActivity {
    /// The columns it sets.
    pub(super) fn patch(&self) -> TrialPatch {
        TrialPatch {
            last_output_at: Some(self.last_output_at.clone()),
            live_steps: self.steps,
            live_tool: self.tool.clone(),
            n_input_tokens: self.tokens.input,
            n_cache_tokens: self.tokens.cached,
            n_output_tokens: self.tokens.output,
            cost_usd: self.tokens.cost,
            ..Default::default()
        }
    }
}
