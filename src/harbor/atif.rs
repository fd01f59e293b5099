//! ATIF, the Agent Trajectory Interchange Format (Harbor RFC 0001; `harbor.models.trajectories`).
//!
//! Schema versions 1.0–1.8 read (1.2 to 1.6 are what SkillsBench runs produced): a trajectory is
//! `schema_version`, `session_id`, `agent {name, version, model_name}`, `steps [{step_id,
//! timestamp, source (system|user|agent), model_name, message, reasoning_content, tool_calls
//! [{tool_call_id, function_name, arguments}], observation {results [{source_call_id, content}]},
//! metrics}]` and `final_metrics`. A message or an observation's content is a string or (1.6+) a
//! list of content parts. Unknown fields are ignored when reading; what skillscope writes passes
//! Harbor's own models (the conformance test checks it).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The version skillscope writes.
pub const WRITE_VERSION: &str = "ATIF-v1.6";

/// A whole trajectory.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Trajectory {
    /// `ATIF-v1.x`.
    pub schema_version: String,
    /// Run-scoped session id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The agent.
    pub agent: AgentRef,
    /// Steps, in order (step ids from 1).
    pub steps: Vec<Step>,
    /// Free-form notes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// Totals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_metrics: Option<FinalMetrics>,
}

/// `agent` of a trajectory.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AgentRef {
    /// Harness name.
    pub name: String,
    /// Harness version.
    pub version: String,
    /// Default model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
}

/// Text or content parts (ATIF 1.6 multimodal).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Content parts (`{"type": "text", "text": …}`, images, audio).
    Parts(Vec<Value>),
}

impl Content {
    /// The text of the content (parts of type text joined by newlines; media as placeholders).
    pub fn text(&self) -> String {
        match self {
            Content::Text(s) => s.clone(),
            Content::Parts(parts) => parts
                .iter()
                .map(|p| match p.get("type").and_then(Value::as_str) {
                    Some("text") => p
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    Some(other) => format!("[{other}]"),
                    None => String::new(),
                })
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// One step.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Step {
    /// Ordinal, from 1.
    pub step_id: u64,
    /// ISO 8601.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// `system`, `user` or `agent`.
    pub source: String,
    /// Model of this turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// The message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Content>,
    /// The agent's stated reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Actions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// What the actions returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<Observation>,
    /// Token counts of this turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
}

impl Step {
    /// The message text ("" when absent).
    pub fn message_text(&self) -> String {
        self.message.as_ref().map(Content::text).unwrap_or_default()
    }

    /// Tool calls (empty when absent).
    pub fn calls(&self) -> &[ToolCall] {
        self.tool_calls.as_deref().unwrap_or(&[])
    }

    /// Observation results (empty when absent).
    pub fn results(&self) -> &[ObservationResult] {
        self.observation
            .as_ref()
            .map(|o| o.results.as_slice())
            .unwrap_or(&[])
    }
}

/// A tool call.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ToolCall {
    /// Call id.
    pub tool_call_id: String,
    /// Tool name (`run_shell_command`, `Bash`, `read_file`, `Read`, `Skill`, …).
    pub function_name: String,
    /// Arguments (an object).
    #[serde(default)]
    pub arguments: Value,
}

impl ToolCall {
    /// The shell command of a shell tool call, if this is one.
    pub fn command(&self) -> Option<&str> {
        ["command", "cmd", "script"]
            .iter()
            .find_map(|k| self.arguments.get(k).and_then(Value::as_str))
    }

    /// A one-line rendering: the command, else the path, else compact JSON arguments.
    pub fn brief(&self) -> String {
        if let Some(c) = self.command() {
            return c.to_string();
        }
        for k in [
            "file_path",
            "path",
            "absolute_path",
            "filename",
            "pattern",
            "query",
            "url",
            "skill",
        ] {
            if let Some(v) = self.arguments.get(k).and_then(Value::as_str) {
                return v.to_string();
            }
        }
        match &self.arguments {
            Value::Object(m) if m.is_empty() => String::new(),
            Value::Null => String::new(),
            v => v.to_string(),
        }
    }
}

/// An observation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Observation {
    /// Results, one per tool call (or per system event).
    #[serde(default)]
    pub results: Vec<ObservationResult>,
}

/// One observation result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ObservationResult {
    /// The tool call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_call_id: Option<String>,
    /// Output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
}

impl ObservationResult {
    /// Output text ("" when absent).
    pub fn text(&self) -> String {
        self.content.as_ref().map(Content::text).unwrap_or_default()
    }
}

/// Per-step token counts.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Metrics {
    /// Input tokens, cached included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<i64>,
    /// Output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<i64>,
    /// Cached input tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<i64>,
    /// Cost, USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// Trajectory totals.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FinalMetrics {
    /// Input tokens, cached included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_prompt_tokens: Option<i64>,
    /// Output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_completion_tokens: Option<i64>,
    /// Cached input tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cached_tokens: Option<i64>,
    /// Cost, USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cost_usd: Option<f64>,
    /// Steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_steps: Option<i64>,
}

/// Errors reading a trajectory.
#[derive(Debug, thiserror::Error)]
pub enum AtifError {
    /// Not readable or not ATIF.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

impl Trajectory {
    /// Parses ATIF JSON; `origin` names the file in errors.
    ///
    /// # Errors
    /// [`AtifError::Invalid`] for JSON that is not an ATIF trajectory.
    pub fn parse(bytes: &[u8], origin: &str) -> Result<Trajectory, AtifError> {
        let t: Trajectory = serde_json::from_slice(bytes).map_err(|e| AtifError::Invalid {
            path: origin.to_string(),
            message: e.to_string(),
        })?;
        if !t.schema_version.starts_with("ATIF-v1.") {
            return Err(AtifError::Invalid {
                path: origin.to_string(),
                message: format!("unsupported schema_version {:?}", t.schema_version),
            });
        }
        Ok(t)
    }

    /// Reads a trajectory file (at most 64 MiB, no symlinks: container output is untrusted).
    ///
    /// # Errors
    /// [`AtifError::Invalid`] for unreadable or malformed files.
    pub fn read(path: &std::path::Path) -> Result<Trajectory, AtifError> {
        let bytes =
            crate::fs::read_capped(path, 64 * 1024 * 1024).map_err(|e| AtifError::Invalid {
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
        Trajectory::parse(&bytes, &path.display().to_string())
    }

    /// Steps whose observations look like failures ([`looks_failed`]): tracebacks, non-zero
    /// exit codes, `Error:` lines, missing files or commands.
    pub fn error_step_count(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| s.results().iter().any(|r| looks_failed(&r.text())))
            .count()
    }

    /// True when the last agent step carries a non-empty message (the agent said where it got
    /// to, rather than stopping mid-action).
    pub fn ends_with_message(&self) -> bool {
        self.steps
            .iter()
            .rev()
            .find(|s| s.source == "agent")
            .is_some_and(|s| !s.message_text().trim().is_empty())
    }

    /// Number of tool calls over all steps.
    pub fn tool_call_count(&self) -> usize {
        self.steps.iter().map(|s| s.calls().len()).sum()
    }

    /// Token totals: `final_metrics` when present, else the sum of step metrics.
    /// Returns (input incl. cached, cached, output, cost USD), each `None` when unknown.
    pub fn token_totals(&self) -> (Option<i64>, Option<i64>, Option<i64>, Option<f64>) {
        if let Some(f) = &self.final_metrics
            && (f.total_prompt_tokens.is_some() || f.total_completion_tokens.is_some())
        {
            return (
                f.total_prompt_tokens,
                f.total_cached_tokens,
                f.total_completion_tokens,
                f.total_cost_usd,
            );
        }
        let sum = |get: fn(&Metrics) -> Option<i64>| -> Option<i64> {
            let vals: Vec<i64> = self
                .steps
                .iter()
                .filter_map(|s| s.metrics.as_ref().and_then(get))
                .collect();
            (!vals.is_empty()).then(|| vals.iter().sum())
        };
        let cost: Vec<f64> = self
            .steps
            .iter()
            .filter_map(|s| s.metrics.as_ref().and_then(|m| m.cost_usd))
            .collect();
        (
            sum(|m| m.prompt_tokens),
            sum(|m| m.cached_tokens),
            sum(|m| m.completion_tokens),
            (!cost.is_empty()).then(|| cost.iter().sum()),
        )
    }
}

/// A Terminus-2 trajectory (`[{episode, prompt, response}]`: Harbor's terminus agents log each
/// turn's prompt — the terminal screen after the previous turn's keystrokes — and the model's
/// JSON response `{analysis, plan, commands: [{keystrokes, duration}], task_complete}`) as ATIF:
/// the first prompt as the user step, then per turn an agent step whose message is the analysis
/// and plan (and `task_complete: true` when the model said so), one `terminal` tool call per
/// command, and the next turn's screen as the result of its last command. `None` when the bytes
/// are not such a list.
pub fn from_terminus(bytes: &[u8]) -> Option<Trajectory> {
    #[derive(Deserialize)]
    struct Turn {
        #[serde(default)]
        prompt: String,
        #[serde(default)]
        response: String,
    }
    let turns: Vec<Turn> = serde_json::from_slice(bytes).ok()?;
    if turns.is_empty() {
        return None;
    }
    let mut steps = vec![Step {
        step_id: 1,
        timestamp: None,
        source: "user".into(),
        model_name: None,
        message: Some(Content::Text(turns[0].prompt.clone())),
        reasoning_content: None,
        tool_calls: None,
        observation: None,
        metrics: None,
    }];
    for (i, turn) in turns.iter().enumerate() {
        let parsed: Option<Value> = match (turn.response.find('{'), turn.response.rfind('}')) {
            (Some(a), Some(b)) if a < b => serde_json::from_str(&turn.response[a..=b]).ok(),
            _ => None,
        };
        let text = |k: &str| {
            parsed
                .as_ref()
                .and_then(|v| v.get(k))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let mut message = match &parsed {
            Some(_) => [text("analysis"), text("plan")]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("\n"),
            None => turn.response.clone(),
        };
        if parsed
            .as_ref()
            .and_then(|v| v.get("task_complete"))
            .and_then(Value::as_bool)
            == Some(true)
        {
            message.push_str("\ntask_complete: true");
        }
        let calls: Vec<ToolCall> = parsed
            .as_ref()
            .and_then(|v| v.get("commands"))
            .and_then(Value::as_array)
            .map(|cmds| {
                cmds.iter()
                    .enumerate()
                    .map(|(j, c)| ToolCall {
                        tool_call_id: format!("t{i}c{j}"),
                        function_name: "terminal".into(),
                        arguments: serde_json::json!({
                            "command": c.get("keystrokes").and_then(Value::as_str).unwrap_or("")
                        }),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let screen = turns.get(i + 1).map(|n| n.prompt.clone());
        let observation = match (&screen, calls.len()) {
            (Some(s), n) if n > 0 => Some(Observation {
                results: calls
                    .iter()
                    .enumerate()
                    .map(|(j, c)| ObservationResult {
                        source_call_id: Some(c.tool_call_id.clone()),
                        content: (j + 1 == n).then(|| Content::Text(s.clone())),
                    })
                    .collect(),
            }),
            _ => None,
        };
        steps.push(Step {
            step_id: steps.len() as u64 + 1,
            timestamp: None,
            source: "agent".into(),
            model_name: None,
            message: Some(Content::Text(message)),
            reasoning_content: None,
            tool_calls: (!calls.is_empty()).then_some(calls),
            observation,
            metrics: None,
        });
    }
    Some(Trajectory {
        schema_version: WRITE_VERSION.into(),
        session_id: None,
        agent: AgentRef {
            name: "terminus-2".into(),
            version: "unknown".into(),
            model_name: None,
        },
        steps,
        notes: Some("converted from a Terminus episode list".into()),
        final_metrics: None,
    })
}

/// True when an observation looks like a failure.
pub fn looks_failed(text: &str) -> bool {
    let t = text;
    t.contains("Traceback (most recent call last)")
        || t.contains("command not found")
        || t.contains("No such file or directory")
        || t.contains("Permission denied")
        || t.lines().any(|l| {
            let l = l.trim();
            (l.starts_with("Exit Code:") && !l.ends_with(" 0") && !l.ends_with("(none)"))
                || l.starts_with("Error:") && !l.ends_with("(none)")
                || l.starts_with("error:")
                || l.starts_with("ERROR")
                || l.starts_with("FAILED")
                || l.ends_with("Error") && l.contains("Error:")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const V12: &str = r#"{"schema_version":"ATIF-v1.2","session_id":"s","agent":{"name":"gemini-cli","version":"unknown","model_name":"m"},
      "steps":[{"step_id":1,"timestamp":"2026-01-25T21:38:04.062Z","source":"user","message":"do it"},
               {"step_id":2,"source":"agent","message":"ok","unknown_field":1,
                "tool_calls":[{"tool_call_id":"c1","function_name":"run_shell_command","arguments":{"command":"ls /root"}}],
                "observation":{"results":[{"source_call_id":"c1","content":"a b"}]},
                "metrics":{"prompt_tokens":10,"completion_tokens":2,"cached_tokens":4}}],
      "final_metrics":{"total_prompt_tokens":10,"total_completion_tokens":2,"total_cached_tokens":4,"total_steps":2}}"#;

    #[test]
    fn reads_v12_and_ignores_unknown_fields() {
        let t = Trajectory::parse(V12.as_bytes(), "t.json").unwrap();
        assert_eq!(t.steps.len(), 2);
        assert_eq!(t.steps[1].calls()[0].command(), Some("ls /root"));
        assert_eq!(t.steps[1].results()[0].text(), "a b");
        assert_eq!(t.tool_call_count(), 1);
        assert_eq!(t.token_totals(), (Some(10), Some(4), Some(2), None));
    }

    #[test]
    fn reads_v16_content_parts() {
        let j = r#"{"schema_version":"ATIF-v1.6","agent":{"name":"a","version":"1"},
          "steps":[{"step_id":1,"source":"user","message":[{"type":"text","text":"look"},{"type":"image","source":{"media_type":"image/png","path":"x.png"}}]}]}"#;
        let t = Trajectory::parse(j.as_bytes(), "t.json").unwrap();
        assert_eq!(t.steps[0].message_text(), "look\n[image]");
    }

    #[test]
    fn rejects_non_atif() {
        assert!(
            Trajectory::parse(
                br#"{"schema_version":"other","agent":{"name":"a","version":"1"},"steps":[]}"#,
                "x"
            )
            .is_err()
        );
        assert!(Trajectory::parse(b"{\"truncated\": ", "x").is_err());
    }
}
