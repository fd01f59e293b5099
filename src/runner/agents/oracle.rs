//! The oracle agent: runs the task's reference solution (`solution/solve.sh`) as Harbor's
//! `agents/oracle.py` does, to prove a task solvable and its verifier sound.

use async_trait::async_trait;

use super::{Agent, AgentContext, AgentRun, instruction_step, trajectory_of};
use crate::harbor::atif::{Content, Observation, ObservationResult, Step, ToolCall, Trajectory};
use crate::runner::RunnerError;
use crate::runner::sandbox::{ExecEnd, ExecRequest};
use crate::skillsbench::Task;

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
    fn runs_solution(&self) -> bool {
        true
    }
    fn takes_prelude(&self) -> bool {
        true
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
        let copy = format!("rm -rf /solution; cp -a {ORACLE_MOUNT} /solution; ");
        let copy_in = if ctx.mounted && ctx.container.default_user().is_none() {
            copy
        } else if ctx.mounted {
            // `/` is not the image's user's to write: the copy runs as root first, as Harbor's
            // upload does.
            let (r, out) = ctx
                .container
                .sh_output(
                    &format!("{copy}chmod +x /solution/solve.sh"),
                    std::time::Duration::from_secs(60),
                )
                .await?;
            if !r.succeeded() {
                return Err(RunnerError::backend_text(
                    format!("copying the solution into {}", ctx.container.name()),
                    format!("exit {:?}: {}", r.exit_code, out.trim()),
                ));
            }
            String::new()
        } else {
            ctx.container.upload_dir(&solution, "/solution").await?;
            // Uploaded as root's: a user who is not root cannot make it executable.
            ctx.container
                .open_to_user(&[], &["/solution/solve.sh"])
                .await?;
            String::new()
        };
        let mut env = vec!["DEBIAN_FRONTEND=noninteractive".to_string()];
        env.extend(ctx.env_values.resolve(&ctx.task.config.solution.env));
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
            prelude: ctx.prelude,
        };
        let r = ctx.container.exec(req).await?;
        if let Some(code) = r.exit_code.filter(|c| *c != 0) {
            let path = ctx.agent_dir.join("exit-code.txt");
            use std::io::Write;
            crate::fs::create_fresh(&path)
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
        let tail = crate::fs::read_tail(&ctx.agent_dir.join("oracle.txt"), 16 * 1024)
            .map(|(bytes, _)| crate::sanitize::bytes(&bytes))
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
