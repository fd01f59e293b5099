//! The nop agent: does nothing, as Harbor's `agents/nop.py` (the no-op baseline: the verifier sees
//! the untouched environment).

use async_trait::async_trait;

use super::{Agent, AgentContext, AgentRun, instruction_step, trajectory_of};
use crate::harbor::atif::{Content, Step, Trajectory};
use crate::runner::RunnerError;
use crate::runner::sandbox::ExecEnd;

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
