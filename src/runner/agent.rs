//! Agents (harnesses) behind one trait. `oracle` runs the task's reference solution and `nop` does
//! nothing — both as Harbor defines them (`agents/oracle.py`, `agents/nop.py`); LLM harnesses plug
//! in here too.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::container::{ExecEnd, ExecRequest, TrialContainer};
use super::{RunnerError, verifier};
use crate::bench::Task;
use crate::harbor::atif::{
    AgentRef, Content, FinalMetrics, Observation, ObservationResult, Step, ToolCall, Trajectory,
    WRITE_VERSION,
};
use crate::harness::convert::text_step;

/// What an agent gets for one trial.
pub struct AgentContext<'a> {
    /// The trial's running container.
    pub container: &'a TrialContainer,
    /// The Docker host it runs on.
    pub host: &'a super::DockerHost,
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
    /// True when the folders from [`Agent::local_mounts`] are bind-mounted (local daemon) and
    /// `logs` is the bind-mounted trial `agent/` folder.
    pub mounted: bool,
    /// The container folder the agent copies its native logs to: `/logs/agent`, or a folder of
    /// its own for the first session of a two-phase self-generated trial (then not mounted).
    pub logs: &'a str,
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
    pub provider_failure: Option<crate::harness::provider::ProviderFailure>,
    /// An LLM harness's native log, parsed once when the run ended (for
    /// [`Agent::trajectory`]); `None` for agents without one or when the log is empty.
    pub native: Option<std::sync::Arc<crate::harness::NativeRun>>,
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
                let line = crate::text::sanitize(&line).replace(['\n', '\r', '\t'], " ");
                crate::text::head(&line, ACTIVITY_TOOL_CHARS).to_string()
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
    /// Host folders to bind-mount read-only (host path, container path) when the daemon is local,
    /// instead of copying them in through the API.
    fn local_mounts(&self, _task: &Task) -> Vec<(std::path::PathBuf, String)> {
        Vec::new()
    }
    /// Gets the agent ready on `host` before a trial's container is created (an LLM harness
    /// fetches its pinned kit once) and returns extra bind mounts for the container
    /// (`host:container:ro`).
    ///
    /// # Errors
    /// [`RunnerError`] when the agent cannot be made ready (recorded as a runtime error).
    async fn prepare(&self, _host: &super::DockerHost) -> Result<Vec<String>, RunnerError> {
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

/// Looks an agent up by name: `oracle`, `nop`, or a harness (`claude-code`, `codex`,
/// `gemini-cli`; see [`super::harness`]) at the versions pinned in `harness`.
///
/// # Errors
/// [`RunnerError::Task`] for an unknown name, a harness without its API key in the environment
/// or without a required model.
pub fn agent_by_name(
    name: &str,
    model: Option<&str>,
    harness: &crate::config::HarnessSettings,
) -> Result<Arc<dyn Agent>, RunnerError> {
    if let Some(agent) = super::harness::harness_agent(name, model, harness) {
        return agent;
    }
    match name {
        "oracle" => Ok(Arc::new(OracleAgent)),
        "nop" => Ok(Arc::new(NopAgent)),
        other => Err(RunnerError::Task(format!(
            "unknown agent {other:?}{} (available: oracle, nop, claude-code, codex, gemini-cli)",
            model
                .map(|m| format!(" with model {m}"))
                .unwrap_or_default()
        ))),
    }
}

/// Runs `solution/solve.sh`: puts `solution/` at `/solution`, then
/// `chmod +x /solution/solve.sh; (/solution/solve.sh)` with `DEBIAN_FRONTEND=noninteractive` and
/// the task's `[solution] env`, output to `agent/oracle.txt`, as Harbor's oracle does. With a local
/// daemon the folder is bind-mounted read-only at [`ORACLE_MOUNT`] and copied to `/solution` by
/// the same exec (no separate upload).
pub struct OracleAgent;

/// Where the oracle's solution folder is mounted with a local daemon.
pub const ORACLE_MOUNT: &str = "/skillscope/solution";

#[async_trait]
impl Agent for OracleAgent {
    fn name(&self) -> &str {
        "oracle"
    }
    fn version(&self) -> &str {
        "1.0.0"
    }
    fn local_mounts(&self, task: &Task) -> Vec<(std::path::PathBuf, String)> {
        let solution = task.solution_dir();
        if solution.join("solve.sh").is_file() {
            vec![(solution, ORACLE_MOUNT.to_string())]
        } else {
            Vec::new()
        }
    }
    async fn run(&self, ctx: &AgentContext<'_>) -> Result<AgentRun, RunnerError> {
        let solution = ctx.task.solution_dir();
        if !solution.join("solve.sh").is_file() {
            return Err(RunnerError::Task(format!(
                "the oracle needs {}, which does not exist",
                solution.join("solve.sh").display()
            )));
        }
        let copy_in = if ctx.mounted {
            format!("rm -rf /solution; cp -a {ORACLE_MOUNT} /solution; ")
        } else {
            ctx.container.upload_dir(&solution, "/solution").await?;
            String::new()
        };
        let mut env = vec!["DEBIAN_FRONTEND=noninteractive".to_string()];
        env.extend(verifier::resolve_env(&ctx.task.config.solution.env));
        let out = ctx.agent_dir.join("oracle.txt");
        let req = ExecRequest {
            cmd: vec![
                "sh".into(),
                "-c".into(),
                format!(
                    "{copy_in}mkdir -p /logs/agent; chmod +x /solution/solve.sh 2>/dev/null; (/solution/solve.sh)"
                ),
            ],
            env,
            user: None,
            timeout: Some(ctx.timeout),
            cancel: ctx.cancel,
            stdout: Some(&out),
            stderr: None,
        };
        let r = ctx.container.exec(req).await?;
        if let Some(code) = r.exit_code.filter(|c| *c != 0) {
            let path = ctx.agent_dir.join("exit-code.txt");
            use std::io::Write;
            super::safe_fs::create_fresh(&path)
                .and_then(|mut f| f.write_all(format!("{code}\n").as_bytes()))
                .map_err(|e| RunnerError::io(&path, e))?;
        }
        Ok(AgentRun {
            end: r.end,
            exit_code: r.exit_code,
            provider_failure: None,
            native: None,
        })
    }

    fn trajectory(
        &self,
        ctx: &AgentContext<'_>,
        run: &AgentRun,
        started: &str,
        finished: &str,
    ) -> Option<Trajectory> {
        // The observation is the end of what solve.sh printed, sanitized, with its exit status.
        let tail = super::safe_fs::read_tail(&ctx.agent_dir.join("oracle.txt"), 16 * 1024)
            .map(|(bytes, _)| crate::text::sanitize_bytes(&bytes))
            .unwrap_or_default();
        let status = match (run.end, run.exit_code) {
            (ExecEnd::TimedOut, _) => format!(
                "Stopped after {:.0}s ([agent] timeout_sec)",
                ctx.timeout.as_secs_f64()
            ),
            (ExecEnd::Cancelled, _) => "Cancelled".to_string(),
            (ExecEnd::Exited, Some(c)) => format!("Exit Code: {c}"),
            (ExecEnd::Exited, None) => "Exit Code: unknown".to_string(),
        };
        let call = ToolCall {
            tool_call_id: "solve".into(),
            function_name: "bash".into(),
            arguments: serde_json::json!({ "command": "/solution/solve.sh" }),
        };
        let act = Step {
            step_id: 2,
            timestamp: Some(finished.to_string()),
            source: "agent".into(),
            model_name: None,
            message: Some(Content::Text(
                "Ran the task's reference solution (solution/solve.sh).".into(),
            )),
            reasoning_content: None,
            tool_calls: Some(vec![call]),
            observation: Some(Observation {
                results: vec![ObservationResult {
                    source_call_id: Some("solve".into()),
                    content: Some(Content::Text(format!("{tail}\n{status}"))),
                }],
            }),
            metrics: None,
        };
        Some(trajectory_of(
            self,
            vec![instruction_step(ctx, started), act],
        ))
    }
}

/// Does nothing (the no-op baseline: the verifier sees the untouched environment).
pub struct NopAgent;

#[async_trait]
impl Agent for NopAgent {
    fn name(&self) -> &str {
        "nop"
    }
    fn version(&self) -> &str {
        "1.0.0"
    }
    async fn run(&self, _ctx: &AgentContext<'_>) -> Result<AgentRun, RunnerError> {
        Ok(AgentRun {
            end: ExecEnd::Exited,
            exit_code: Some(0),
            provider_failure: None,
            native: None,
        })
    }

    fn trajectory(
        &self,
        ctx: &AgentContext<'_>,
        _run: &AgentRun,
        started: &str,
        finished: &str,
    ) -> Option<Trajectory> {
        let idle = Step {
            step_id: 2,
            timestamp: Some(finished.to_string()),
            source: "agent".into(),
            model_name: None,
            message: Some(Content::Text("Did nothing (nop agent).".into())),
            reasoning_content: None,
            tool_calls: None,
            observation: None,
            metrics: None,
        };
        Some(trajectory_of(
            self,
            vec![instruction_step(ctx, started), idle],
        ))
    }
}
