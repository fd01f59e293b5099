//! Claude Code's headless log — `claude -p --output-format stream-json --verbose` — read into an
//! ATIF trajectory, token totals, the CLI's own cost, and a verdict on how the run ended
//! (finished, provider failure, or ordinary task failure).
//!
//! The format, one JSON object per line (Agent SDK message types; checked against Harbor's
//! `agents/installed/claude_code.py`, which tees this stream to `agent/claude-code.txt`, and against
//! published SkillsBench `claude-code.txt` files):
//! - `{"type":"system","subtype":"init","session_id","model","tools":[…],"claude_code_version",…}`;
//!   other `system` subtypes are ignored.
//! - `{"type":"assistant","message":{"id","model","content":[…],"usage":{…}},"parent_tool_use_id",
//!   "error"?}` — one line per content block, so one API response (one `message.id`) spans several
//!   lines. Blocks: `text`, `thinking` (`thinking` field), `tool_use` (`id`, `name`, `input`).
//!   `usage` is `{input_tokens, cache_creation_input_tokens, cache_read_input_tokens,
//!   output_tokens}` as of the response's start: input and cache counts are final, `output_tokens`
//!   is not (often 1). API failures arrive as a `"model":"<synthetic>"` message whose text is e.g.
//!   `API Error: 429 {…}`, with `"error"` one of `authentication_failed`, `billing_error`,
//!   `rate_limit`, `invalid_request`, `server_error`, `unknown` and, in newer CLIs,
//!   `isApiErrorMessage`/`apiErrorStatus`.
//! - `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id","content",
//!   "is_error"?}]}}` — `content` a string or a list of parts (`text`, `image`); plain `text`
//!   blocks are harness-injected user text (e.g. a skill's body after a `Skill` call).
//! - `{"type":"result","subtype":"success"|"error_max_turns"|"error_during_execution"|…,
//!   "is_error","duration_ms","num_turns","result","total_cost_usd","usage":{…},
//!   "modelUsage":{model:{inputTokens,outputTokens,cacheReadInputTokens,
//!   cacheCreationInputTokens,costUSD}}}` — last line; its usage is the run's true total, and
//!   `modelUsage` also lists side models (Haiku) that `total_cost_usd` includes.
//!
//! Lines that are not JSON (stderr merged with `2>&1`, as Harbor runs it) are kept only as
//! evidence for [`classify`]; a line that starts like JSON but does not parse (a stream cut off
//! by a timeout) is counted in [`ClaudeCodeRun::bad_lines`]. Everything read here is untrusted
//! container output: it is stored as data and never printed or logged by this module.

use std::collections::HashMap;

use serde_json::Value;

pub use super::TrajectoryOptions;
use super::convert::{
    AgentTurn, RunTotals, agent_step, assemble, step_metrics, text_step, unreadable_note,
};
use super::pricing::{PriceTable, PricingError, TokenCounts};
use super::provider::in_stray_or_stderr;
pub use super::provider::{
    Evidence, ProviderFailure, ProviderFailureKind, classify_error_text, kind_for_status,
};
use crate::harbor::atif::{AgentRef, Content, ObservationResult, Step, ToolCall, Trajectory};

/// Harness name, as Harbor reports it (`agent_info.name`).
pub const AGENT_NAME: &str = "claude-code";

/// Line appended to a tool result the CLI flagged `is_error` (an `Error:` line, which
/// [`crate::harbor::atif::looks_failed`] recognises).
pub const TOOL_ERROR_MARK: &str = "Error: the tool reported a failure (is_error)";

/// At most this many non-JSON lines are kept as evidence, each cut to [`STRAY_LINE_MAX`] bytes.
const STRAY_LINES_MAX: usize = 200;
const STRAY_LINE_MAX: usize = 2048;

/// Anthropic token usage (the Messages API `usage` block). Counts are tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Fresh input (excludes cache reads and writes).
    pub input_tokens: u64,
    /// Input written to the prompt cache.
    pub cache_creation_input_tokens: u64,
    /// Input read from the prompt cache.
    pub cache_read_input_tokens: u64,
    /// Output, thinking included.
    pub output_tokens: u64,
}

impl Usage {
    /// From a snake_case `usage` object; absent fields are 0.
    fn from_api(v: &Value) -> Usage {
        let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
        Usage {
            input_tokens: n("input_tokens"),
            cache_creation_input_tokens: n("cache_creation_input_tokens"),
            cache_read_input_tokens: n("cache_read_input_tokens"),
            output_tokens: n("output_tokens"),
        }
    }

    /// From a camelCase `modelUsage` entry.
    fn from_model_usage(v: &Value) -> Usage {
        let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
        Usage {
            input_tokens: n("inputTokens"),
            cache_creation_input_tokens: n("cacheCreationInputTokens"),
            cache_read_input_tokens: n("cacheReadInputTokens"),
            output_tokens: n("outputTokens"),
        }
    }

    /// Field-wise maximum (the lines of one message only ever grow).
    fn max(self, o: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.max(o.input_tokens),
            cache_creation_input_tokens: self
                .cache_creation_input_tokens
                .max(o.cache_creation_input_tokens),
            cache_read_input_tokens: self.cache_read_input_tokens.max(o.cache_read_input_tokens),
            output_tokens: self.output_tokens.max(o.output_tokens),
        }
    }

    /// The split prices use.
    pub fn tokens(&self) -> TokenCounts {
        TokenCounts {
            input: self.input_tokens,
            cached_input: self.cache_read_input_tokens,
            cache_write: self.cache_creation_input_tokens,
            output: self.output_tokens,
        }
    }

    /// All input: fresh + cache writes + cache reads (ATIF `prompt_tokens`; Harbor counts the same).
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens
    }
}

/// One model's share of a run, from the result line's `modelUsage`.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelUsage {
    /// Model id as the CLI names it (may be a Bedrock/Vertex id).
    pub model: String,
    /// Its tokens.
    pub usage: Usage,
    /// Its cost as the CLI computed it, USD.
    pub cost_usd: Option<f64>,
}

/// The final `result` line.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    /// `success`, `error_max_turns`, `error_during_execution`, `error_max_budget_usd`, …
    pub subtype: String,
    /// True when the run ended in an error (even with subtype `success`, as API errors do).
    pub is_error: bool,
    /// Newer CLIs: why the loop ended (`api_error`, …).
    pub terminal_reason: Option<String>,
    /// Wall time, milliseconds.
    pub duration_ms: Option<u64>,
    /// Turns the CLI counted.
    pub num_turns: Option<u64>,
    /// Final text (the answer, or the error message). Untrusted.
    pub result: Option<String>,
    /// Newer CLIs (2.1.x): the HTTP status of the API error that ended the run
    /// (`api_error_status`), and its Anthropic error type (`api_error_type`, e.g.
    /// `authentication_error`).
    pub api_error_status: Option<u16>,
    /// See `api_error_status`.
    pub api_error_type: Option<String>,
    /// The CLI's cost of the whole run, all models, USD.
    pub total_cost_usd: Option<f64>,
    /// Main-model usage totals.
    pub usage: Option<Usage>,
    /// Per-model usage (main model and side models).
    pub model_usage: Vec<ModelUsage>,
}

/// Where the token totals came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TotalsSource {
    /// The result line's `modelUsage`: every model the CLI called (matches `total_cost_usd`).
    ModelUsage,
    /// The result line's `usage`: the main model only.
    ResultUsage,
    /// No result line: summed from assistant messages (output is then a lower bound).
    Messages,
}

/// A run's token totals. Counts are tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenTotals {
    /// All input, cache reads and writes included.
    pub input: u64,
    /// Input read from the cache.
    pub cached: u64,
    /// Input written to the cache.
    pub cache_write: u64,
    /// Output.
    pub output: u64,
    /// Where they came from.
    pub source: TotalsSource,
}

/// An API failure the CLI reported in the stream.
#[derive(Debug, Clone, PartialEq)]
struct ApiErrorLine {
    code: Option<String>,
    status: Option<u16>,
    text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TurnSource {
    Agent,
    User,
}

/// One ATIF step in the making.
#[derive(Debug, Clone)]
struct Turn {
    source: TurnSource,
    model: Option<String>,
    texts: Vec<String>,
    reasoning: Vec<String>,
    calls: Vec<ToolCall>,
    results: Vec<ObservationResult>,
    usage: Option<Usage>,
}

impl Turn {
    fn new(source: TurnSource, model: Option<String>) -> Turn {
        Turn {
            source,
            model,
            texts: Vec::new(),
            reasoning: Vec::new(),
            calls: Vec::new(),
            results: Vec::new(),
            usage: None,
        }
    }
}

/// A parsed Claude Code stream.
#[derive(Debug, Clone)]
pub struct ClaudeCodeRun {
    /// From the init line (or any later line).
    pub session_id: Option<String>,
    /// Main model, from the init line.
    pub model: Option<String>,
    /// `claude_code_version` from the init line.
    pub cli_version: Option<String>,
    /// Tools the CLI offered.
    pub tools: Vec<String>,
    /// The final line, when the stream got that far.
    pub result: Option<RunResult>,
    /// 1-based numbers of lines that looked like JSON but did not parse (e.g. a cut-off last line).
    pub bad_lines: Vec<usize>,
    /// Non-JSON lines seen (stderr merged into stdout).
    pub stray_line_count: usize,
    turns: Vec<Turn>,
    api_errors: Vec<ApiErrorLine>,
    stray: Vec<String>,
}

/// Text of a tool result's `content`: a string, or its parts read as ATIF content
/// ([`crate::harbor::atif::Content::text`]: `text` parts joined by newlines, other parts as
/// `[type]`); anything else as JSON.
fn content_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(_) | Value::Array(_) => {
            match serde_json::from_value::<crate::harbor::atif::Content>(v.clone()) {
                Ok(c) => c.text(),
                Err(_) => v.to_string(),
            }
        }
        other => other.to_string(),
    }
}

impl ClaudeCodeRun {
    /// Reads a stream-json log. Never fails: unreadable lines are counted, not fatal.
    pub fn parse(bytes: &[u8]) -> ClaudeCodeRun {
        let mut run = ClaudeCodeRun {
            session_id: None,
            model: None,
            cli_version: None,
            tools: Vec::new(),
            result: None,
            bad_lines: Vec::new(),
            stray_line_count: 0,
            turns: Vec::new(),
            api_errors: Vec::new(),
            stray: Vec::new(),
        };
        let mut by_message: HashMap<String, usize> = HashMap::new();
        let mut by_call: HashMap<String, usize> = HashMap::new();
        for (i, raw) in bytes.split(|b| *b == b'\n').enumerate() {
            let text = String::from_utf8_lossy(raw);
            let line = text.trim();
            if line.is_empty() {
                continue;
            }
            if !line.starts_with('{') {
                run.stray_line_count += 1;
                if run.stray.len() < STRAY_LINES_MAX {
                    run.stray
                        .push(crate::sanitize::head(line, STRAY_LINE_MAX).to_string());
                }
                continue;
            }
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                run.bad_lines.push(i + 1);
                continue;
            };
            if run.session_id.is_none() {
                run.session_id = v
                    .get("session_id")
                    .and_then(Value::as_str)
                    .map(str::to_string);
            }
            match v.get("type").and_then(Value::as_str) {
                Some("system") => run.read_system(&v),
                Some("assistant") => run.read_assistant(&v, &mut by_message, &mut by_call),
                Some("user") => run.read_user(&v, &by_call),
                Some("result") => run.read_result(&v),
                _ => {}
            }
        }
        run
    }

    fn read_system(&mut self, v: &Value) {
        if v.get("subtype").and_then(Value::as_str) != Some("init") {
            return;
        }
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        self.model = s("model").or(self.model.take());
        self.cli_version = s("claude_code_version").or(self.cli_version.take());
        if let Some(id) = s("session_id") {
            self.session_id = Some(id);
        }
        if let Some(tools) = v.get("tools").and_then(Value::as_array) {
            self.tools = tools
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
        }
    }

    fn read_assistant(
        &mut self,
        v: &Value,
        by_message: &mut HashMap<String, usize>,
        by_call: &mut HashMap<String, usize>,
    ) {
        let Some(msg) = v.get("message") else {
            return;
        };
        let model = msg.get("model").and_then(Value::as_str);
        let synthetic = model == Some("<synthetic>");
        let idx = match msg.get("id").and_then(Value::as_str) {
            Some(id) if by_message.contains_key(id) => by_message[id],
            id => {
                self.turns.push(Turn::new(
                    TurnSource::Agent,
                    model.filter(|_| !synthetic).map(str::to_string),
                ));
                let idx = self.turns.len() - 1;
                if let Some(id) = id {
                    by_message.insert(id.to_string(), idx);
                }
                idx
            }
        };
        let mut line_text = Vec::new();
        let blocks: &[Value] = match msg.get("content") {
            Some(Value::Array(a)) => a,
            _ => &[],
        };
        if let Some(Value::String(s)) = msg.get("content") {
            line_text.push(s.clone());
        }
        for b in blocks {
            match b.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let Some(t) = b.get("text").and_then(Value::as_str) {
                        line_text.push(t.to_string());
                    }
                }
                Some("thinking") => {
                    if let Some(t) = b
                        .get("thinking")
                        .or_else(|| b.get("text"))
                        .and_then(Value::as_str)
                        .filter(|t| !t.trim().is_empty())
                    {
                        self.turns[idx].reasoning.push(t.to_string());
                    }
                }
                Some("tool_use") | Some("server_tool_use") => {
                    let Some(id) = b.get("id").and_then(Value::as_str) else {
                        continue;
                    };
                    if by_call.contains_key(id) {
                        continue;
                    }
                    let arguments = match b.get("input") {
                        Some(Value::Object(m)) => Value::Object(m.clone()),
                        None | Some(Value::Null) => Value::Object(Default::default()),
                        Some(other) => serde_json::json!({ "input": other }),
                    };
                    self.turns[idx].calls.push(ToolCall {
                        tool_call_id: id.to_string(),
                        function_name: b
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        arguments,
                    });
                    by_call.insert(id.to_string(), idx);
                }
                _ => {}
            }
        }
        let flagged = ["isApiErrorMessage", "is_api_error_message"]
            .iter()
            .any(|k| v.get(k).and_then(Value::as_bool) == Some(true));
        let code = v.get("error").and_then(Value::as_str).map(str::to_string);
        let status = ["apiErrorStatus", "api_error_status"]
            .iter()
            .find_map(|k| v.get(k).and_then(Value::as_u64))
            .and_then(|s| u16::try_from(s).ok());
        let joined = line_text.join("\n\n");
        if code.is_some()
            || flagged
            || status.is_some()
            || (synthetic && joined.trim_start().starts_with("API Error"))
        {
            self.api_errors.push(ApiErrorLine {
                code,
                status,
                text: joined,
            });
        }
        self.turns[idx].texts.extend(line_text);
        if !synthetic && let Some(u) = msg.get("usage").filter(|u| u.is_object()) {
            let u = Usage::from_api(u);
            let t = &mut self.turns[idx];
            t.usage = Some(t.usage.map_or(u, |old| old.max(u)));
        }
    }

    fn read_user(&mut self, v: &Value, by_call: &HashMap<String, usize>) {
        let Some(content) = v.get("message").and_then(|m| m.get("content")) else {
            return;
        };
        let mut texts = Vec::new();
        match content {
            Value::String(s) => texts.push(s.clone()),
            Value::Array(blocks) => {
                for b in blocks {
                    match b.get("type").and_then(Value::as_str) {
                        Some("tool_result") => {
                            let mut out = content_text(b.get("content").unwrap_or(&Value::Null));
                            if b.get("is_error").and_then(Value::as_bool) == Some(true) {
                                if !out.is_empty() {
                                    out.push('\n');
                                }
                                out.push_str(TOOL_ERROR_MARK);
                            }
                            let id = b.get("tool_use_id").and_then(Value::as_str);
                            let (turn, source_call_id) = match id.and_then(|i| by_call.get(i)) {
                                Some(&t) => (t, id.map(str::to_string)),
                                // A result without its call: keep it on the latest agent step.
                                None => (self.latest_agent_turn(), None),
                            };
                            self.turns[turn].results.push(ObservationResult {
                                source_call_id,
                                content: Some(Content::Text(out)),
                            });
                        }
                        Some("text") => {
                            if let Some(t) = b.get("text").and_then(Value::as_str) {
                                texts.push(t.to_string());
                            }
                        }
                        Some(other) => texts.push(format!("[{other}]")),
                        None => {}
                    }
                }
            }
            _ => {}
        }
        let text = texts.join("\n\n");
        if !text.trim().is_empty() {
            let mut t = Turn::new(TurnSource::User, None);
            t.texts.push(text);
            self.turns.push(t);
        }
    }

    fn latest_agent_turn(&mut self) -> usize {
        if let Some(i) = self
            .turns
            .iter()
            .rposition(|t| t.source == TurnSource::Agent)
        {
            return i;
        }
        self.turns
            .push(Turn::new(TurnSource::Agent, self.model.clone()));
        self.turns.len() - 1
    }

    fn read_result(&mut self, v: &Value) {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let model_usage = v
            .get("modelUsage")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(model, u)| ModelUsage {
                        model: model.clone(),
                        usage: Usage::from_model_usage(u),
                        cost_usd: u.get("costUSD").and_then(Value::as_f64),
                    })
                    .collect()
            })
            .unwrap_or_default();
        self.result = Some(RunResult {
            subtype: s("subtype").unwrap_or_default(),
            is_error: v.get("is_error").and_then(Value::as_bool).unwrap_or(false),
            terminal_reason: s("terminal_reason"),
            duration_ms: v.get("duration_ms").and_then(Value::as_u64),
            num_turns: v.get("num_turns").and_then(Value::as_u64),
            result: s("result"),
            api_error_status: v
                .get("api_error_status")
                .and_then(Value::as_u64)
                .and_then(|n| u16::try_from(n).ok()),
            api_error_type: s("api_error_type"),
            total_cost_usd: v.get("total_cost_usd").and_then(Value::as_f64),
            usage: v
                .get("usage")
                .filter(|u| u.is_object())
                .map(Usage::from_api),
            model_usage,
        });
    }

    /// True when the stream ended without its result line (killed, timed out, cut off).
    pub fn incomplete(&self) -> bool {
        self.result.is_none()
    }

    /// Tool calls in the stream, in order.
    pub fn tool_call_count(&self) -> usize {
        self.turns.iter().map(|t| t.calls.len()).sum()
    }

    /// Tokens per model: the result line's `modelUsage` when present (every model the CLI
    /// called), else its `usage` under the main model, else the sum over assistant messages
    /// (each message's largest usage counted once; output then a lower bound).
    pub fn usage_by_model(&self) -> (Vec<(String, Usage)>, TotalsSource) {
        let main = self.model.clone().unwrap_or_else(|| "unknown".into());
        if let Some(r) = &self.result {
            if !r.model_usage.is_empty() {
                let v = r
                    .model_usage
                    .iter()
                    .map(|m| (m.model.clone(), m.usage))
                    .collect();
                return (v, TotalsSource::ModelUsage);
            }
            if let Some(u) = r.usage {
                return (vec![(main, u)], TotalsSource::ResultUsage);
            }
        }
        let mut sum = Usage::default();
        for u in self.turns.iter().filter_map(|t| t.usage) {
            sum.input_tokens += u.input_tokens;
            sum.cache_creation_input_tokens += u.cache_creation_input_tokens;
            sum.cache_read_input_tokens += u.cache_read_input_tokens;
            sum.output_tokens += u.output_tokens;
        }
        (vec![(main, sum)], TotalsSource::Messages)
    }

    /// Token totals over all models (see [`ClaudeCodeRun::usage_by_model`]).
    pub fn token_totals(&self) -> TokenTotals {
        let (per_model, source) = self.usage_by_model();
        let t = per_model
            .iter()
            .fold(TokenCounts::default(), |acc, (_, u)| acc + u.tokens());
        TokenTotals {
            input: t.prompt_total(),
            cached: t.cached_input,
            cache_write: t.cache_write,
            output: t.output,
            source,
        }
    }

    /// The CLI's own cost of the run (`total_cost_usd`), USD.
    pub fn reported_cost_usd(&self) -> Option<f64> {
        self.result.as_ref().and_then(|r| r.total_cost_usd)
    }

    /// Our cost of the run from `table`, USD: each model's tokens at its row in effect on `on`.
    ///
    /// # Errors
    /// [`PricingError`] when a model the run used has no price.
    pub fn priced_cost_usd(
        &self,
        table: &PriceTable,
        on: Option<chrono::NaiveDate>,
    ) -> Result<f64, PricingError> {
        let (per_model, _) = self.usage_by_model();
        let mut usd = 0.0;
        for (model, u) in per_model {
            if u == Usage::default() {
                continue;
            }
            usd += table.cost(&model, on, &u.tokens())?.usd;
        }
        Ok(usd)
    }

    /// The run as an ATIF trajectory (`agent/trajectory.json`): step 1 is the instruction (when
    /// given), then one `agent` step per API response — its text as `message`, thinking as
    /// `reasoning_content`, `tool_use` blocks as `tool_calls`, their `tool_result`s as the
    /// observation, and its input/cache token counts as `metrics` — and a `user` step for
    /// harness-injected user text. `final_metrics` carries [`ClaudeCodeRun::token_totals`] and
    /// the CLI's `total_cost_usd`, as Harbor's converter does.
    pub fn to_trajectory(&self, opts: &TrajectoryOptions<'_>) -> Trajectory {
        let mut steps: Vec<Step> = Vec::new();
        if let Some(instruction) = opts.instruction {
            let at = opts.started_at.map(str::to_string);
            steps.push(text_step("user", at, instruction.to_string()));
        }
        for t in &self.turns {
            let message = t.texts.join("\n\n");
            steps.push(match t.source {
                TurnSource::User => text_step("user", None, message),
                TurnSource::Agent => agent_step(AgentTurn {
                    timestamp: None,
                    model_name: t.model.clone().or_else(|| self.model.clone()),
                    message,
                    reasoning: Some(t.reasoning.join("\n\n")),
                    calls: t.calls.clone(),
                    results: t.results.clone(),
                    metrics: t.usage.map(|u| {
                        step_metrics(
                            u.prompt_tokens(),
                            u.output_tokens,
                            u.cache_read_input_tokens,
                        )
                    }),
                }),
            });
        }
        let totals = self.token_totals();
        let mut notes = format!(
            "converted by skillscope from Claude Code stream-json; token totals from {}; \
             per-step completion_tokens are what the stream printed before each response \
             finished (a lower bound)",
            match totals.source {
                TotalsSource::ModelUsage => "the result line's modelUsage (all models called)",
                TotalsSource::ResultUsage => "the result line's usage (main model)",
                TotalsSource::Messages => "assistant messages (no result line)",
            }
        );
        if self.incomplete() {
            notes.push_str("; the stream ended without its result line");
        }
        notes.push_str(&unreadable_note(self.bad_lines.len()));
        let agent = AgentRef {
            name: AGENT_NAME.into(),
            version: opts.agent_version_or(self.cli_version.as_deref()),
            model_name: self.model.clone(),
        };
        let run_totals = RunTotals {
            prompt: totals.input,
            completion: totals.output,
            cached: totals.cached,
            cost_usd: self.reported_cost_usd(),
        };
        assemble(agent, self.session_id.clone(), steps, run_totals, notes)
    }
}

/// An ordinary task failure: the agent ran and the provider was not at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskFailure {
    /// The result line reports an error (`error_max_turns`, `error_during_execution`, …).
    ResultError {
        /// Its subtype.
        subtype: String,
    },
    /// No result line and no provider error (killed, timed out, crashed).
    NoResultLine,
    /// No result line; the process exited with this code.
    ExitCode(i64),
}

/// How a Claude Code run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The result line says `success` without `is_error`; whether the task passed is the
    /// verifier's call.
    Completed,
    /// The provider failed (see [`ProviderFailureKind`]).
    Provider(ProviderFailure),
    /// The agent's own failure.
    Task(TaskFailure),
}

/// Result subtypes that end a run for the agent's own reasons (limits it hit).
const AGENT_LIMIT_SUBTYPES: &[&str] = &[
    "error_max_turns",
    "error_max_budget_usd",
    "error_max_structured_output_retries",
];

/// Classifies how a run ended from its stream, its stderr and its exit code.
///
/// A `success` result line without `is_error` is [`Outcome::Completed`] (provider retries that
/// the CLI got past do not matter). A result line for an agent limit (`error_max_turns`, …) is a
/// task failure. Otherwise provider evidence is sought, most authoritative first: the result
/// line's error text, the API-error assistant messages (last first; their text, then their
/// `apiErrorStatus`, then their `error` code), stray non-JSON output, then the last 64 KiB of
/// `stderr` — each read by [`classify_error_text`]. Tool output is never read: a `curl` that
/// printed "401" is the task's business. With no provider evidence the run is a
/// [`TaskFailure`].
pub fn classify(run: &ClaudeCodeRun, stderr: &str, exit_code: Option<i64>) -> Outcome {
    if let Some(r) = &run.result {
        if !r.is_error && r.subtype == "success" {
            return Outcome::Completed;
        }
        if AGENT_LIMIT_SUBTYPES.contains(&r.subtype.as_str()) {
            return Outcome::Task(TaskFailure::ResultError {
                subtype: r.subtype.clone(),
            });
        }
    }
    let found = |hit, evidence| Outcome::Provider(ProviderFailure::seen(hit, evidence));
    if let Some(r) = &run.result {
        // The error type and text first (a quota message beats its 429), then the status.
        let text = format!(
            "{} {}",
            r.api_error_type.as_deref().unwrap_or(""),
            r.result.as_deref().unwrap_or("")
        );
        let hit = classify_error_text(&text)
            .map(|(k, s)| (k, s.or(r.api_error_status)))
            .or_else(|| {
                r.api_error_status
                    .and_then(kind_for_status)
                    .map(|k| (k, r.api_error_status))
            });
        if let Some(hit) = hit {
            return found(hit, Evidence::ResultLine);
        }
    }
    for e in run.api_errors.iter().rev() {
        let hit = classify_error_text(&e.text)
            .map(|(k, s)| (k, s.or(e.status)))
            .or_else(|| e.status.and_then(kind_for_status).map(|k| (k, e.status)))
            .or_else(|| {
                e.code
                    .as_deref()
                    .and_then(kind_for_code)
                    .map(|k| (k, e.status))
            });
        if let Some(hit) = hit {
            return found(hit, Evidence::ApiErrorMessage);
        }
    }
    if let Some(failure) = in_stray_or_stderr(&run.stray, stderr, classify_error_text) {
        return Outcome::Provider(failure);
    }
    match (&run.result, exit_code) {
        (Some(r), _) => Outcome::Task(TaskFailure::ResultError {
            subtype: r.subtype.clone(),
        }),
        (None, Some(code)) if code != 0 => Outcome::Task(TaskFailure::ExitCode(code)),
        (None, _) => Outcome::Task(TaskFailure::NoResultLine),
    }
}

/// The Agent SDK's `SDKAssistantMessage.error` codes.
fn kind_for_code(code: &str) -> Option<ProviderFailureKind> {
    match code {
        "authentication_failed" => Some(ProviderFailureKind::Authentication),
        "billing_error" => Some(ProviderFailureKind::QuotaExhausted),
        "rate_limit" => Some(ProviderFailureKind::RateLimit),
        "server_error" => Some(ProviderFailureKind::ServerError),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harbor::atif::{Metrics, WRITE_VERSION};
    use crate::harbor::skill_use::{UseKind, detect};

    const SKILL_RUN: &str = include_str!("../../tests/fixtures/harness/skill_run.jsonl");
    const AUTH_401: &str = include_str!("../../tests/fixtures/harness/auth_401.jsonl");
    const RATE_429: &str = include_str!("../../tests/fixtures/harness/rate_limit_429.jsonl");
    const TRUNCATED: &str = include_str!("../../tests/fixtures/harness/truncated.jsonl");

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    fn opts() -> TrajectoryOptions<'static> {
        TrajectoryOptions {
            instruction: Some("Fill the totals sheet of /root/output.xlsx."),
            started_at: Some("2026-03-02T10:00:00Z"),
            agent_version: None,
        }
    }

    #[test]
    fn skill_run_becomes_the_expected_steps() {
        let run = ClaudeCodeRun::parse(SKILL_RUN.as_bytes());
        assert_eq!(
            run.session_id.as_deref(),
            Some("5b1f0c2e-7a43-4d8e-9b2a-3c6d1e0f9a81")
        );
        assert_eq!(run.model.as_deref(), Some("claude-opus-4-6"));
        assert_eq!(run.cli_version.as_deref(), Some("2.1.34"));
        assert!(run.tools.contains(&"Skill".to_string()));
        assert!(run.bad_lines.is_empty() && !run.incomplete());
        assert_eq!(run.tool_call_count(), 4);

        let t = run.to_trajectory(&opts());
        assert_eq!(t.schema_version, WRITE_VERSION);
        assert_eq!(t.agent.name, "claude-code");
        assert_eq!(t.agent.version, "2.1.34");
        let shape = crate::agent_logs::convert::step_shapes(&t);
        assert_eq!(
            shape,
            vec![
                (1, "user", vec![], 0),
                (2, "agent", vec!["Read"], 1),
                (3, "agent", vec!["Bash"], 1),
                (4, "agent", vec!["Bash"], 1),
                (5, "agent", vec!["Skill"], 1),
                (6, "user", vec![], 0),
                (7, "agent", vec![], 0),
            ]
        );
        let s = &t.steps;
        assert_eq!(
            s[0].message_text(),
            "Fill the totals sheet of /root/output.xlsx."
        );
        assert_eq!(s[0].timestamp.as_deref(), Some("2026-03-02T10:00:00Z"));
        // Three lines of msg_01A: thinking, text, tool_use — one step.
        assert_eq!(s[1].message_text(), "I'll read the xlsx skill first.");
        assert_eq!(
            s[1].reasoning_content.as_deref(),
            Some("The task edits a workbook; the xlsx skill should say how to recalculate.")
        );
        assert_eq!(s[1].model_name.as_deref(), Some("claude-opus-4-6"));
        assert_eq!(s[1].calls()[0].tool_call_id, "toolu_01Read");
        assert_eq!(
            s[1].calls()[0].arguments,
            serde_json::json!({"file_path": "/root/.claude/skills/xlsx/SKILL.md"})
        );
        assert_eq!(
            s[1].results()[0].source_call_id.as_deref(),
            Some("toolu_01Read")
        );
        assert!(s[1].results()[0].text().contains("name: xlsx"));
        // Per-step metrics: input incl. cache; output as printed (largest of the lines: 9).
        assert_eq!(
            s[1].metrics,
            Some(Metrics {
                prompt_tokens: Some(3 + 5120 + 11264),
                completion_tokens: Some(9),
                cached_tokens: Some(11264),
                cost_usd: None,
            })
        );
        // The failed Bash call: result text kept, error marked so looks_failed sees it.
        let failed = s[2].results()[0].text();
        assert!(failed.starts_with("Exit code 1\nTraceback (most recent call last):"));
        assert!(failed.ends_with(TOOL_ERROR_MARK));
        assert!(crate::harbor::atif::looks_failed(&failed));
        assert_eq!(t.error_step_count(), 1);
        // Text part content and a two-line message (text block + tool_use block).
        assert_eq!(
            s[3].message_text(),
            "openpyxl is missing; installing it and retrying."
        );
        assert_eq!(
            s[3].results()[0].text(),
            "Successfully installed openpyxl-3.1.5\nRecalculated 12 formulas"
        );
        assert_eq!(s[4].results()[0].text(), "Launching skill: xlsx");
        assert!(
            s[5].message_text()
                .starts_with("Base directory for this skill:")
        );
        assert_eq!(
            s[6].message_text(),
            "Done: /root/output.xlsx is recalculated and the totals sheet is filled."
        );
        assert!(t.ends_with_message());

        // Totals: modelUsage, Opus 4.6 + Haiku 4.5.
        assert_eq!(
            run.token_totals(),
            TokenTotals {
                input: (23 + 1843) + 7530 + 82790,
                cached: 82790,
                cache_write: 7530,
                output: 366 + 52,
                source: TotalsSource::ModelUsage,
            }
        );
        let fm = t.final_metrics.as_ref().unwrap();
        assert_eq!(fm.total_prompt_tokens, Some(92186));
        assert_eq!(fm.total_cached_tokens, Some(82790));
        assert_eq!(fm.total_completion_tokens, Some(418));
        assert_eq!(fm.total_steps, Some(7));
        assert!(close(fm.total_cost_usd.unwrap(), 0.0998255));
        assert_eq!(
            t.token_totals(),
            (Some(92186), Some(82790), Some(418), Some(0.0998255))
        );
        assert_eq!(classify(&run, "", Some(0)), Outcome::Completed);
    }

    #[test]
    fn our_price_matches_the_cli_cost() {
        let run = ClaudeCodeRun::parse(SKILL_RUN.as_bytes());
        // Opus 4.6: 23×5 + 7,530×6.25 + 82,790×0.5 + 366×25 = 97,722.5 µ$;
        // Haiku 4.5: 1,843×1 + 52×5 = 2,103 µ$; total $0.0998255.
        let ours = run
            .priced_cost_usd(
                PriceTable::builtin(),
                chrono::NaiveDate::from_ymd_opt(2026, 3, 2),
            )
            .unwrap();
        assert!(close(ours, 0.0998255), "{ours}");
        assert!(close(ours, run.reported_cost_usd().unwrap()));
        let per_model: Vec<Option<f64>> = run
            .result
            .as_ref()
            .unwrap()
            .model_usage
            .iter()
            .map(|m| m.cost_usd)
            .collect();
        assert_eq!(per_model.len(), 2);
    }

    #[test]
    fn trajectory_round_trips_and_shows_skill_use() {
        let run = ClaudeCodeRun::parse(SKILL_RUN.as_bytes());
        let t = run.to_trajectory(&opts());
        let json = serde_json::to_vec_pretty(&t).unwrap();
        let back = Trajectory::parse(&json, "trajectory.json").unwrap();
        assert_eq!(back, t);
        let uses: Vec<(String, UseKind, u64, u32)> = detect(&back, &[])
            .into_iter()
            .map(|u| (u.skill, u.kind, u.first_step, u.count))
            .collect();
        assert_eq!(
            uses,
            vec![
                ("xlsx".into(), UseKind::Read, 2, 1),
                ("xlsx".into(), UseKind::Shell, 3, 2),
                ("xlsx".into(), UseKind::Invoke, 5, 1),
            ]
        );
        // Without an instruction, agent steps start at 1.
        let bare = run.to_trajectory(&TrajectoryOptions::default());
        assert_eq!(bare.steps[0].source, "agent");
        assert_eq!(bare.steps.len(), 6);
    }

    #[test]
    fn auth_failure_401() {
        let run = ClaudeCodeRun::parse(AUTH_401.as_bytes());
        assert_eq!(
            classify(&run, "", Some(1)),
            Outcome::Provider(ProviderFailure {
                kind: ProviderFailureKind::Authentication,
                evidence: Evidence::ResultLine,
                http_status: Some(401),
            })
        );
        let t = run.to_trajectory(&opts());
        assert_eq!(t.steps.len(), 2);
        // The synthetic message is kept as data, without the fake model name.
        assert!(t.steps[1].message_text().starts_with("API Error: 401"));
        assert_eq!(t.steps[1].model_name.as_deref(), Some("claude-opus-4-6"));
        assert_eq!(t.steps[1].metrics, None);
        assert_eq!(
            run.token_totals(),
            TokenTotals {
                input: 0,
                cached: 0,
                cache_write: 0,
                output: 0,
                source: TotalsSource::ResultUsage,
            }
        );
        assert_eq!(run.reported_cost_usd(), Some(0.0));
        assert_eq!(
            run.priced_cost_usd(PriceTable::builtin(), None).unwrap(),
            0.0
        );
        // Without the result line the assistant message's own code decides.
        let cut: String = AUTH_401.lines().take(2).collect::<Vec<_>>().join("\n");
        let run = ClaudeCodeRun::parse(cut.as_bytes());
        assert!(matches!(
            classify(&run, "", Some(1)),
            Outcome::Provider(ProviderFailure {
                kind: ProviderFailureKind::Authentication,
                evidence: Evidence::ApiErrorMessage,
                http_status: Some(401),
            })
        ));
    }

    #[test]
    fn rate_limit_429_keeps_partial_tokens() {
        let run = ClaudeCodeRun::parse(RATE_429.as_bytes());
        assert_eq!(
            classify(&run, "", Some(1)),
            Outcome::Provider(ProviderFailure {
                kind: ProviderFailureKind::RateLimit,
                evidence: Evidence::ResultLine,
                http_status: Some(429),
            })
        );
        assert!(ProviderFailureKind::RateLimit.is_transient());
        let totals = run.token_totals();
        assert_eq!((totals.input, totals.cached, totals.output), (4099, 0, 2));
        // 3×5 + 4,096×6.25 + 2×25 = 25,665 µ$.
        let ours = run.priced_cost_usd(PriceTable::builtin(), None).unwrap();
        assert!(close(ours, 0.025665), "{ours}");
        assert!(close(run.reported_cost_usd().unwrap(), 0.025665));
        let t = run.to_trajectory(&opts());
        assert_eq!(t.steps.len(), 3);
        assert_eq!(
            t.steps[1].results()[0].text(),
            "input.xlsx\nsolution_template.py"
        );
    }

    #[test]
    fn truncated_stream_is_a_task_failure_with_what_was_read() {
        let run = ClaudeCodeRun::parse(TRUNCATED.as_bytes());
        assert_eq!(run.bad_lines, vec![4]);
        assert!(run.incomplete());
        assert_eq!(
            classify(&run, "", None),
            Outcome::Task(TaskFailure::NoResultLine)
        );
        assert_eq!(
            classify(&run, "", Some(137)),
            Outcome::Task(TaskFailure::ExitCode(137))
        );
        // Totals from the one complete assistant message.
        assert_eq!(
            run.token_totals(),
            TokenTotals {
                input: 5 + 3000 + 8000,
                cached: 8000,
                cache_write: 3000,
                output: 1,
                source: TotalsSource::Messages,
            }
        );
        let t = run.to_trajectory(&opts());
        assert_eq!(t.steps.len(), 2);
        assert_eq!(
            t.steps[1].calls()[0].command(),
            Some("cat /root/.claude/skills/xlsx/SKILL.md")
        );
        assert_eq!(t.final_metrics.as_ref().unwrap().total_cost_usd, None);
        assert!(
            t.notes
                .as_deref()
                .unwrap()
                .contains("without its result line")
        );
        assert!(t.notes.as_deref().unwrap().contains("1 unreadable line"));
        // A skill read through Bash still counts.
        assert_eq!(detect(&t, &[])[0].kind, UseKind::Shell);
    }

    #[test]
    fn classifies_stderr_exit_codes_and_limits() {
        let empty = ClaudeCodeRun::parse(b"");
        let provider = |stderr: &str| match classify(&empty, stderr, Some(1)) {
            Outcome::Provider(p) => Some((p.kind, p.http_status)),
            _ => None,
        };
        use ProviderFailureKind::*;
        assert_eq!(
            provider("Invalid API key · Please run /login"),
            Some((Authentication, None))
        );
        assert_eq!(
            provider(
                "API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"
            ),
            Some((Overloaded, Some(529)))
        );
        assert_eq!(
            provider(
                "API Error: 400 {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"Your credit balance is too low to access the Anthropic API.\"}}"
            ),
            Some((QuotaExhausted, Some(400)))
        );
        assert_eq!(
            provider(
                "API Error: 429 {\"error\":{\"type\":\"rate_limit_error\",\"message\":\"You have reached your specified workspace API usage limits.\"}}"
            ),
            Some((QuotaExhausted, Some(429)))
        );
        assert_eq!(
            provider("HTTP/1.1 503 Service Unavailable"),
            Some((ServerError, Some(503)))
        );
        assert_eq!(provider("Error: ENOENT: no such file or directory"), None);
        assert_eq!(
            classify(&empty, "Error: ENOENT: no such file or directory", Some(1)),
            Outcome::Task(TaskFailure::ExitCode(1))
        );
        assert_eq!(
            classify(&empty, "", Some(0)),
            Outcome::Task(TaskFailure::NoResultLine)
        );

        // Stray non-JSON lines in the stream are evidence too (2>&1).
        let mixed = ClaudeCodeRun::parse(b"Error: Invalid API key\n");
        assert_eq!(mixed.stray_line_count, 1);
        assert!(matches!(
            classify(&mixed, "", Some(1)),
            Outcome::Provider(ProviderFailure {
                kind: Authentication,
                evidence: Evidence::StrayOutput,
                ..
            })
        ));

        // An agent limit is the agent's failure even if a retry was logged on stderr.
        let max_turns = ClaudeCodeRun::parse(
            br#"{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":50,"total_cost_usd":1.5}"#,
        );
        assert_eq!(
            classify(&max_turns, "API Error: 529 Overloaded, retrying", Some(1)),
            Outcome::Task(TaskFailure::ResultError {
                subtype: "error_max_turns".into()
            })
        );

        // apiErrorStatus + server_error code without helpful text → 529 overloaded.
        let coded = ClaudeCodeRun::parse(
            br#"{"type":"assistant","message":{"id":"e1","model":"<synthetic>","content":[{"type":"text","text":"Request failed"}]},"error":"server_error","isApiErrorMessage":true,"apiErrorStatus":529}"#,
        );
        assert_eq!(
            classify(&coded, "", Some(1)),
            Outcome::Provider(ProviderFailure {
                kind: Overloaded,
                evidence: Evidence::ApiErrorMessage,
                http_status: Some(529),
            })
        );

        // A 401 inside tool output is not a provider failure.
        let tool_401 = ClaudeCodeRun::parse(
            concat!(
                r#"{"type":"assistant","message":{"id":"m1","model":"claude-opus-4-6","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"curl -i https://api.example.com"}}]}}"#,
                "\n",
                r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"HTTP/1.1 401 Unauthorized\ninvalid api key"}]}}"#,
                "\n",
                r#"{"type":"result","subtype":"error_during_execution","is_error":true}"#,
            )
            .as_bytes(),
        );
        assert_eq!(
            classify(&tool_401, "", Some(1)),
            Outcome::Task(TaskFailure::ResultError {
                subtype: "error_during_execution".into()
            })
        );
    }

    #[test]
    fn odd_lines_are_tolerated() {
        let text = concat!(
            "\r\n",
            r#"{"type":"stream_event","event":{"type":"message_start"}}"#,
            "\r\n",
            r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"nope","content":[{"type":"image","source":{"type":"base64","data":"AAAA"}}]}]}}"#,
            "\n",
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"x","name":"Write","input":"raw"}]}}"#,
            "\n",
        );
        let run = ClaudeCodeRun::parse(text.as_bytes());
        assert!(run.bad_lines.is_empty());
        let t = run.to_trajectory(&TrajectoryOptions::default());
        // The orphan result lands on a placeholder agent step; the non-object input is wrapped.
        assert_eq!(t.steps.len(), 2);
        assert_eq!(t.steps[0].results()[0].source_call_id, None);
        assert_eq!(t.steps[0].results()[0].text(), "[image]");
        assert_eq!(
            t.steps[1].calls()[0].arguments,
            serde_json::json!({"input": "raw"})
        );
        let json = serde_json::to_vec(&t).unwrap();
        assert!(Trajectory::parse(&json, "t.json").is_ok());
    }
}
