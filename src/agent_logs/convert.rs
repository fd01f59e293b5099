//! What every native-log converter ([`super::claude_code`], [`super::codex`],
//! [`super::gemini_cli`]) builds its ATIF trajectory from: plain text steps, agent steps with
//! their tool calls and observations, and the closing assembly (step numbering, `agent`,
//! `final_metrics`). The shapes are ATIF's (Harbor RFC 0001, [`crate::harbor::atif`]); the
//! converters decide only what goes in.

use crate::harbor::atif::{
    AgentRef, Content, FinalMetrics, Metrics, Observation, ObservationResult, Step, ToolCall,
    Trajectory, WRITE_VERSION,
};

/// A step that is only a message: the instruction, a user turn, harness context (`system`).
/// `source` is `user`, `system` or `agent`; the step id is given by [`assemble`].
pub fn text_step(source: &str, timestamp: Option<String>, text: String) -> Step {
    Step {
        step_id: 0,
        timestamp,
        source: source.into(),
        model_name: None,
        message: Some(Content::Text(text)),
        reasoning_content: None,
        tool_calls: None,
        observation: None,
        metrics: None,
    }
}

/// One model response as a converter collected it.
#[derive(Debug, Default)]
pub struct AgentTurn {
    /// RFC 3339, when the log has one.
    pub timestamp: Option<String>,
    /// The model that answered.
    pub model_name: Option<String>,
    /// Its text.
    pub message: String,
    /// Its stated reasoning (thinking, reasoning summaries, thoughts), if any.
    pub reasoning: Option<String>,
    /// Its tool calls, in order.
    pub calls: Vec<ToolCall>,
    /// What those calls returned.
    pub results: Vec<ObservationResult>,
    /// Its token counts.
    pub metrics: Option<Metrics>,
}

/// An agent step from a turn; empty call and result lists are left out, as ATIF writers do.
/// The step id is given by [`assemble`].
pub fn agent_step(turn: AgentTurn) -> Step {
    Step {
        step_id: 0,
        timestamp: turn.timestamp,
        source: "agent".into(),
        model_name: turn.model_name,
        message: Some(Content::Text(turn.message)),
        reasoning_content: turn.reasoning.filter(|r| !r.is_empty()),
        tool_calls: (!turn.calls.is_empty()).then_some(turn.calls),
        observation: (!turn.results.is_empty()).then_some(Observation {
            results: turn.results,
        }),
        metrics: turn.metrics,
    }
}

/// Per-step token counts, tokens: `prompt` includes cached input, `completion` includes
/// reasoning output (ATIF's convention, as Harbor's converters count).
pub fn step_metrics(prompt: u64, completion: u64, cached: u64) -> Metrics {
    Metrics {
        prompt_tokens: Some(prompt as i64),
        completion_tokens: Some(completion as i64),
        cached_tokens: Some(cached as i64),
        cost_usd: None,
    }
}

/// Run totals for `final_metrics`, tokens (same convention as [`step_metrics`]); `cost_usd` is the
/// harness's own figure when it printed one (pricing from the table is the runner's business).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RunTotals {
    /// Input tokens, cached included.
    pub prompt: u64,
    /// Output tokens, reasoning included.
    pub completion: u64,
    /// Cached input tokens.
    pub cached: u64,
    /// USD, as the harness reported it.
    pub cost_usd: Option<f64>,
}

/// The finished trajectory: steps numbered from 1 in order, `final_metrics` from `totals` with
/// `total_steps` the step count, schema [`WRITE_VERSION`].
pub fn assemble(
    agent: AgentRef,
    session_id: Option<String>,
    mut steps: Vec<Step>,
    totals: RunTotals,
    notes: String,
) -> Trajectory {
    for (i, s) in steps.iter_mut().enumerate() {
        s.step_id = i as u64 + 1;
    }
    Trajectory {
        schema_version: WRITE_VERSION.into(),
        session_id,
        agent,
        final_metrics: Some(FinalMetrics {
            total_prompt_tokens: Some(totals.prompt as i64),
            total_completion_tokens: Some(totals.completion as i64),
            total_cached_tokens: Some(totals.cached as i64),
            total_cost_usd: totals.cost_usd,
            total_steps: Some(steps.len() as i64),
        }),
        notes: Some(notes),
        steps,
    }
}

/// `"; N unreadable line(s)"` for a converter's notes, or nothing when every line was read.
pub fn unreadable_note(bad_lines: usize) -> String {
    if bad_lines == 0 {
        String::new()
    } else {
        format!("; {bad_lines} unreadable line(s)")
    }
}

/// Each step as `(step_id, source, tool names, result count)`: what the converters' tests
/// compare against the steps they expect.
#[cfg(test)]
pub fn step_shapes(t: &Trajectory) -> Vec<(u64, &str, Vec<&str>, usize)> {
    t.steps
        .iter()
        .map(|s| {
            let tools = s.calls().iter().map(|c| c.function_name.as_str()).collect();
            (s.step_id, s.source.as_str(), tools, s.results().len())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn assemble_numbers_steps_and_counts_them() {
        let steps = vec![
            text_step("user", None, "do it".into()),
            agent_step(AgentTurn {
                message: "ok".into(),
                reasoning: Some(String::new()),
                calls: vec![ToolCall {
                    tool_call_id: "c1".into(),
                    function_name: "Bash".into(),
                    arguments: json!({"command": "ls"}),
                }],
                metrics: Some(step_metrics(10, 2, 4)),
                ..AgentTurn::default()
            }),
        ];
        let agent = AgentRef {
            name: "h".into(),
            version: "1".into(),
            model_name: None,
        };
        let totals = RunTotals {
            prompt: 10,
            completion: 2,
            cached: 4,
            cost_usd: Some(0.5),
        };
        let t = assemble(agent, None, steps, totals, "n".into());
        assert_eq!(
            t.steps.iter().map(|s| s.step_id).collect::<Vec<_>>(),
            [1, 2]
        );
        assert_eq!(
            t.steps[1].reasoning_content, None,
            "empty reasoning dropped"
        );
        assert!(
            t.steps[1].observation.is_none(),
            "no results, no observation"
        );
        assert_eq!(t.steps[1].calls().len(), 1);
        let f = t.final_metrics.unwrap();
        assert_eq!(f.total_steps, Some(2));
        assert_eq!(f.total_cached_tokens, Some(4));
        assert_eq!(f.total_cost_usd, Some(0.5));
        assert_eq!(unreadable_note(0), "");
        assert_eq!(unreadable_note(3), "; 3 unreadable line(s)");
    }
}
