//! Agents (harnesses) behind one trait. `oracle` runs the task's reference solution and `nop` does
//! nothing — both as Harbor defines them (`agents/oracle.py`, `agents/nop.py`); LLM harnesses plug
//! in here too: the harness CLIs ([`harness`], with their pinned [`kit`]s and kit [`volume`]s).

pub mod builtins;
pub mod harness;
pub mod kit;
pub mod nop;
pub mod oracle;

pub use nop::NopAgent;
pub use oracle::{ORACLE_MOUNT, OracleAgent};

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::RunnerError;
use super::backend::Mount;
use super::sandbox::{ExecEnd, Sandbox};
use crate::agent_logs::convert::text_step;
use crate::harbor::atif::{AgentRef, FinalMetrics, Step, Trajectory, WRITE_VERSION};
use crate::skillsbench::Task;

/// What an agent gets for one trial.
pub struct AgentContext<'a> {
    /// The trial's running environment.
    pub container: &'a Sandbox,
    /// The host it runs on.
    pub host: &'a dyn super::Host,
    /// The task.
    pub task: &'a Task,
    /// `instruction.md`.
    pub instruction: &'a str,
    /// Host folder for the agent's logs (the trial's `agent/`).
    pub agent_dir: &'a Path,
    /// The agent's budget (`[agent] timeout_sec`).
    pub timeout: Duration,
    /// Fires when the trial is cancelled or the run stops.
    pub cancel: &'a CancellationToken,
    /// True when the folders from [`Agent::local_mounts`] are bind-mounted read-only (a local
    /// daemon); else they are copied in.
    pub mounted: bool,
    /// The container folder the agent copies its native logs to: `/logs/agent`, or a folder of
    /// its own for the first session of a two-phase self-generated trial. Never mounted: it is
    /// copied out through the API.
    pub logs: &'a str,
    /// The operator's values for the task's `${NAME}` references (the oracle's `[solution] env`).
    pub env_values: &'a crate::skillsbench::env::EnvValues,
    /// Names (frontmatter names and folder names) of the skills visible at the start that are not
    /// the harness's own: a harness that switches its built-ins off by name spares these (a
    /// skill of the same name replaces the built-in).
    pub skills: &'a [String],
    /// What the agent's exec runs first when the agent takes one ([`Agent::takes_prelude`]): the
    /// skill-exposure scan, read before the agent's own command starts. `skills` is then empty.
    pub prelude: Option<&'a dyn super::sandbox::Prelude>,
}

/// The container folder of the agent's logs (Harbor's `/logs/agent`).
pub const AGENT_LOGS: &str = "/logs/agent";

/// How an agent run ended.
#[derive(Debug, Clone)]
pub struct AgentRun {
    /// Exited, timed out or cancelled.
    pub end: ExecEnd,
    /// Exit code of the agent process, when it exited.
    pub exit_code: Option<i64>,
    /// Set when the run ended because the model provider failed (refused key, rate limit,
    /// overload, quota, server error): the task was not fairly attempted.
    pub provider_failure: Option<crate::agent_logs::provider::ProviderFailure>,
    /// An LLM harness's native log, parsed once when the run ended (for
    /// [`Agent::trajectory`]); `None` for agents without one or when the log is empty.
    pub native: Option<std::sync::Arc<dyn crate::agent_logs::NativeLog>>,
}

/// What a running agent has done so far, read from its log while it is written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Activity {
    /// Steps of its trajectory so far (the instruction included).
    pub steps: i64,
    /// Tool calls so far.
    pub tool_calls: i64,
    /// The last tool call: its name and a one-line argument (`Bash: pytest -q`), sanitized and
    /// cut to [`ACTIVITY_TOOL_CHARS`] bytes.
    pub last_tool: Option<String>,
    /// Input tokens so far (cached included), when the log says.
    pub input_tokens: Option<i64>,
    /// Cached input tokens so far.
    pub cache_tokens: Option<i64>,
    /// Output tokens so far.
    pub output_tokens: Option<i64>,
    /// Cost so far, USD, when known or priced.
    pub cost_usd: Option<f64>,
}

/// Longest `last_tool` line kept, bytes (cut at a character boundary).
pub const ACTIVITY_TOOL_CHARS: usize = 120;

impl Activity {
    /// The activity a trajectory shows: steps, tool calls, the last tool call, tokens and cost.
    pub fn of(t: &Trajectory) -> Activity {
        let (input, cached, output, cost) = t.token_totals();
        let last_tool = t
            .steps
            .iter()
            .rev()
            .find_map(|s| s.calls().last())
            .map(|c| {
                let line = format!("{}: {}", c.function_name, c.brief());
                let line = crate::sanitize::text(&line).replace(['\n', '\r', '\t'], " ");
                crate::sanitize::head(&line, ACTIVITY_TOOL_CHARS).to_string()
            });
        Activity {
            steps: t.steps.len() as i64,
            tool_calls: t.tool_call_count() as i64,
            last_tool,
            input_tokens: input,
            cache_tokens: cached,
            output_tokens: output,
            cost_usd: cost,
        }
    }
}

/// A harness that attempts a task inside the trial container.
#[async_trait]
pub trait Agent: Send + Sync {
    /// Harness name as Harbor reports it (`agent_info.name`).
    fn name(&self) -> &str;
    /// Harness version (`agent_info.version`).
    fn version(&self) -> &str;
    /// Model name, for harnesses that use one.
    fn model(&self) -> Option<&str> {
        None
    }
    /// The model provider the agent's sessions talk to (`anthropic`, `openai`, `google`), for
    /// agents that call one; the engine limits concurrent sessions per provider.
    fn provider(&self) -> Option<&str> {
        None
    }
    /// Checks that the agent can run on the Docker host `endpoint` (`local`: a daemon on this
    /// machine) before a run starts; fine by default.
    ///
    /// # Errors
    /// [`RunnerError::Task`] saying why not (e.g. a model proxy on this machine's loopback,
    /// which a remote daemon's containers cannot reach).
    fn check_host(&self, _endpoint: &str, _local: bool) -> Result<(), RunnerError> {
        Ok(())
    }
    /// The operator's secrets this agent holds (`(NAME, value)`: a harness's provider keys),
    /// redacted from every file of the trial folder; none by default.
    fn secrets(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// True when the agent runs the task's reference solution (the oracle), so the task's
    /// `[solution] env` must have its values.
    fn runs_solution(&self) -> bool {
        false
    }
    /// True when the agent runs in one exec whose command does not depend on
    /// [`AgentContext::skills`] and passes [`AgentContext::prelude`] to it, so what it can see of
    /// skills is read in that exec instead of one of its own; false for every other agent.
    fn takes_prelude(&self) -> bool {
        false
    }
    /// Extra `/etc/hosts` entries the trial container needs for this agent.
    fn extra_hosts(&self) -> Vec<String> {
        Vec::new()
    }
    /// Sampling settings the harness is given (name → value); none by default.
    fn sampling(&self) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::new()
    }
    /// Settings that decide the agent's behaviour but cannot be pinned through this harness
    /// (e.g. `temperature`, `seed`: the Claude Code, Codex and Gemini CLIs take neither).
    fn unpinned(&self) -> Vec<&'static str> {
        Vec::new()
    }
    /// Everything that decides the agent's behaviour in a trial, recorded with it
    /// (`trials.agent_settings`): `{harness, version, model, sampling, unpinned}`.
    fn settings(&self) -> serde_json::Value {
        serde_json::json!({
            "harness": self.name(),
            "version": self.version(),
            "model": self.model(),
            "sampling": self.sampling(),
            "unpinned": self.unpinned(),
        })
    }
    /// The harness's own skills — what its CLI bundles or enables by itself, whether a trial
    /// switches them off and with which setting, where they lie in the container — recorded in
    /// every trial's skill exposure; `None` for agents that are no harness (oracle, nop).
    fn builtin_skills(&self) -> Option<crate::skillsbench::exposure::Builtins> {
        None
    }
    /// True when the agent's trajectory records a model's own choices, so the skills it used can
    /// be read from it; false for agents whose steps nobody chose (oracle, nop): their use of
    /// skills is unknown.
    fn reports_skill_use(&self) -> bool {
        false
    }
    /// Host folders to bind-mount read-only (host path, container path) when the daemon is local,
    /// instead of copying them in through the API.
    fn local_mounts(&self, _task: &Task) -> Vec<(std::path::PathBuf, String)> {
        Vec::new()
    }
    /// Gets the agent ready on `host` before a trial's environment is created (an LLM harness
    /// fetches its pinned kit once) and returns extra read-only mounts for it.
    ///
    /// # Errors
    /// [`RunnerError`] when the agent cannot be made ready (recorded as a runtime error).
    async fn prepare(&self, _host: &dyn super::Host) -> Result<Vec<Mount>, RunnerError> {
        Ok(Vec::new())
    }
    /// Attempts the task; returns when the agent exits, overruns `ctx.timeout` or is cancelled.
    ///
    /// # Errors
    /// [`RunnerError`] when the agent could not be started at all (recorded as a runtime error).
    async fn run(&self, ctx: &AgentContext<'_>) -> Result<AgentRun, RunnerError>;

    /// What the agent has done so far, read from what its log holds now in `agent_dir` (called
    /// every few seconds while it runs; `started` is the agent phase's RFC 3339 start). `None`
    /// for agents whose log says nothing of steps, tools or tokens.
    fn activity(&self, _agent_dir: &Path, _instruction: &str, _started: &str) -> Option<Activity> {
        None
    }

    /// The run's trajectory in ATIF, written to `agent/trajectory.json`. `started`/`finished` are
    /// the agent phase's RFC 3339 times.
    fn trajectory(
        &self,
        ctx: &AgentContext<'_>,
        run: &AgentRun,
        started: &str,
        finished: &str,
    ) -> Option<Trajectory>;
}

/// The first step of every trajectory: the instruction, from the user.
fn instruction_step(ctx: &AgentContext<'_>, at: &str) -> Step {
    let mut step = text_step("user", Some(at.to_string()), ctx.instruction.to_string());
    step.step_id = 1;
    step
}

fn trajectory_of(agent: &dyn Agent, steps: Vec<Step>) -> Trajectory {
    Trajectory {
        schema_version: WRITE_VERSION.into(),
        session_id: None,
        agent: AgentRef {
            name: agent.name().into(),
            version: agent.version().into(),
            model_name: agent.model().map(str::to_string),
        },
        final_metrics: Some(FinalMetrics {
            total_steps: Some(steps.len() as i64),
            ..Default::default()
        }),
        notes: Some(
            "written by skillscope; no language model was called, so no token counts".into(),
        ),
        steps,
    }
}

/// Every agent's name, as `run --agent` takes it (the command line refuses others: exit 2).
pub const AGENT_NAMES: &[&str] = &["oracle", "nop", "claude-code", "codex", "gemini-cli"];

/// Looks an agent up by name: `oracle`, `nop`, or a harness (`claude-code`, `codex`,
/// `gemini-cli`; see [`harness`]) at the versions pinned in `harness`.
///
/// # Errors
/// [`RunnerError::Task`] for an unknown name, a harness without its API key in the environment
/// or without a required model.
pub fn agent_by_name(
    name: &str,
    model: Option<&str>,
    harness: &crate::config::HarnessSettings,
) -> Result<Arc<dyn Agent>, RunnerError> {
    if let Some(agent) = harness::harness_agent(name, model, harness) {
        return agent;
    }
    match name {
        "oracle" => Ok(Arc::new(OracleAgent)),
        "nop" => Ok(Arc::new(NopAgent)),
        other => Err(RunnerError::Task(format!(
            "unknown agent {other:?}{} (available: {})",
            model
                .map(|m| format!(" with model {m}"))
                .unwrap_or_default(),
            AGENT_NAMES.join(", ")
        ))),
    }
}
