//! Codex CLI's native logs — the session rollout `$CODEX_HOME/sessions/YYYY/MM/DD/
//! rollout-<local time>-<thread id>.jsonl` and, as secondary evidence, the `codex exec --json`
//! event stream on stdout — read into an ATIF trajectory, token totals and a verdict on provider
//! failures.
//!
//! Observed with `@openai/codex@0.169.0` (`codex exec --json`, Responses API over HTTP SSE;
//! captures in `tests/fixtures/harness/codex/`), checked against Harbor's
//! `agents/installed/codex.py`. The rollout, one `{"timestamp", "ordinal"?, "type", "payload"}`
//! object per line:
//! - `session_meta`: `payload {id, session_id?, timestamp, cwd, originator, cli_version,
//!   source, model_provider, base_instructions, …}` — first line.
//! - `turn_context`: `payload {turn_id, cwd, model, approval_policy, sandbox_policy, …}`.
//! - `response_item`: the conversation as the Responses API sees it. `payload.type`:
//!   `message` (`role` `developer`|`user`|`assistant`, `content [{type: input_text|output_text,
//!   text}]`; the first user messages are harness context such as `<environment_context>`),
//!   `reasoning` (`summary [{type: summary_text, text}]`, `content`?, `encrypted_content`?),
//!   `function_call` (`name`, `arguments` a JSON string, `call_id`; 0.169's shell tool is
//!   `exec_command` with `{"cmd": "<command>", "workdir"?, …}`), `function_call_output`
//!   (`call_id`, `output` a string — for `exec_command` `Chunk ID: …\nWall time: …\nProcess
//!   exited with code N\nOriginal token count: …\nOutput:\n…` — or content items),
//!   `custom_tool_call`/`custom_tool_call_output` (free-form `input`, e.g. `apply_patch`),
//!   `local_shell_call` (older CLIs: `action {command: [argv]}`), `web_search_call`.
//! - `token_usage_record` (0.169; top-level type): `payload {response_id, usage {input_tokens
//!   (cached included), cached_input_tokens, cache_write_input_tokens, output_tokens (reasoning
//!   included), reasoning_output_tokens, total_tokens}, turn_token_usage, …}` — one per model
//!   response, right after its output items.
//! - `event_msg`: `payload.type` `token_count` (`info {total_token_usage, last_token_usage}` —
//!   the total is cumulative over the session, so the last one is the run's total; `info` may
//!   be null), `task_started`, `task_complete` (`last_agent_message`, `duration_ms`, and on
//!   failure `error {message, codex_error_info}` with `codex_error_info` e.g.
//!   `{"http_connection_failed": {"http_status_code": 401}}`,
//!   `{"response_too_many_failed_attempts": {"http_status_code": 429}}`,
//!   `"internal_server_error"`, `"other"`), `error`/`stream_error` (`message`; older CLIs),
//!   `item_completed` (UI items: `UserMessage`, `Reasoning`, `CommandExecution {command: argv,
//!   aggregated_output, exit_code}`, `AgentMessage` — duplicates of the response items, not
//!   read), `thread_settings_applied`, …
//! - `world_state`: environment snapshots, not read.
//!
//! The `--json` stream ([`CodexEvents`]) is `thread.started {thread_id}`, `turn.started`,
//! `item.started`/`item.completed {item {id, type: reasoning|command_execution|agent_message|
//! error|…}}`, `error {message}` (API errors and retries: `Reconnecting... 2/5 (unexpected status
//! 401 Unauthorized: …)`), `turn.completed {usage {input_tokens, cached_input_tokens,
//! cache_write_input_tokens, output_tokens, reasoning_output_tokens}}` or `turn.failed {error
//! {message}}`. An `item.completed` of type `error` is a warning (e.g. "Model metadata for `m`
//! not found", "Falling back from WebSockets to HTTPS transport") and is never provider evidence.
//!
//! Everything read here is untrusted container output: it is stored as data and never printed or
//! logged by this module.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

pub use super::TrajectoryOptions;
use super::convert::{
    AgentTurn, RunTotals, agent_step, assemble, step_metrics, text_step, unreadable_note,
};
use super::pricing::TokenCounts;
use super::provider::in_stray_or_stderr;
pub use super::provider::{
    Evidence, ProviderFailure, ProviderFailureKind, classify_error_text, kind_for_status,
};
use crate::harbor::atif::{AgentRef, Content, ObservationResult, Step, ToolCall, Trajectory};

/// Harness name, as Harbor reports it (`agent_info.name`).
pub const AGENT_NAME: &str = "codex";

/// At most this many non-JSON lines of the event stream are kept as evidence, each cut to
/// [`STRAY_LINE_MAX`] bytes.
const STRAY_LINES_MAX: usize = 200;
const STRAY_LINE_MAX: usize = 2048;
/// At most this many error messages are kept, each cut to [`STRAY_LINE_MAX`] bytes.
const ERRORS_MAX: usize = 200;

/// Prefixes of user messages that Codex injects as context (not the task's prompt).
const CONTEXT_PREFIXES: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "<skills_instructions>",
    "<permissions instructions>",
    "<turn_aborted>",
    "# AGENTS.md instructions",
];

/// Token usage as Codex reports it (`token_count`, `token_usage_record`, `turn.completed`).
/// Counts are tokens; OpenAI semantics: `input_tokens` includes the cached tokens and
/// `output_tokens` includes the reasoning tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// All input, cached included.
    pub input_tokens: u64,
    /// Input served from the prompt cache.
    pub cached_input_tokens: u64,
    /// Input written to a cache (0 for OpenAI).
    pub cache_write_input_tokens: u64,
    /// All output, reasoning included.
    pub output_tokens: u64,
    /// Of which reasoning.
    pub reasoning_output_tokens: u64,
}

impl Usage {
    /// From a usage object; absent fields are 0.
    fn from_json(v: &Value) -> Usage {
        let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
        Usage {
            input_tokens: n("input_tokens"),
            cached_input_tokens: n("cached_input_tokens"),
            cache_write_input_tokens: n("cache_write_input_tokens"),
            output_tokens: n("output_tokens"),
            reasoning_output_tokens: n("reasoning_output_tokens"),
        }
    }

    /// Field-wise sum.
    fn add(self, o: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens + o.input_tokens,
            cached_input_tokens: self.cached_input_tokens + o.cached_input_tokens,
            cache_write_input_tokens: self.cache_write_input_tokens + o.cache_write_input_tokens,
            output_tokens: self.output_tokens + o.output_tokens,
            reasoning_output_tokens: self.reasoning_output_tokens + o.reasoning_output_tokens,
        }
    }

    /// The split prices use: fresh input = input − cached − cache writes.
    pub fn tokens(&self) -> TokenCounts {
        TokenCounts {
            input: self
                .input_tokens
                .saturating_sub(self.cached_input_tokens)
                .saturating_sub(self.cache_write_input_tokens),
            cached_input: self.cached_input_tokens,
            cache_write: self.cache_write_input_tokens,
            output: self.output_tokens,
        }
    }
}

/// Where [`CodexRun::usage`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TotalsSource {
    /// The rollout's last `token_count` event (`total_token_usage`, cumulative).
    TokenCount,
    /// The sum of the rollout's per-response `token_usage_record`s (no `token_count` seen).
    ResponseRecords,
    /// The event stream's `turn.completed` usage (no usage in the rollout).
    TurnCompleted,
    /// No usage anywhere: zeros.
    None,
}

/// The error a turn ended with (`task_complete.error` in the rollout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunError {
    /// Codex's message, e.g. `exceeded retry limit, last status: 429 Too Many Requests`.
    /// Untrusted.
    pub message: String,
    /// `codex_error_info`'s variant: `http_connection_failed`,
    /// `response_too_many_failed_attempts`, `internal_server_error`, `usage_limit_exceeded`,
    /// `other`, …
    pub info: Option<String>,
    /// `codex_error_info.<variant>.http_status_code`.
    pub http_status: Option<u16>,
}

impl RunError {
    fn from_json(e: &Value) -> RunError {
        let info = e.get("codex_error_info");
        let (variant, http_status) = match info {
            Some(Value::String(s)) => (Some(s.clone()), None),
            Some(Value::Object(m)) => match m.iter().next() {
                Some((k, v)) => (
                    Some(k.clone()),
                    v.get("http_status_code")
                        .and_then(Value::as_u64)
                        .and_then(|s| u16::try_from(s).ok()),
                ),
                None => (None, None),
            },
            _ => (None, None),
        };
        RunError {
            message: crate::sanitize::head(
                e.get("message").and_then(Value::as_str).unwrap_or(""),
                STRAY_LINE_MAX,
            )
            .to_string(),
            info: variant,
            http_status,
        }
    }
}

/// What the `codex exec --json` stdout stream says (secondary to the rollout).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodexEvents {
    /// `thread.started.thread_id` (the session id).
    pub thread_id: Option<String>,
    /// Sum of the `turn.completed` usages.
    pub usage: Option<Usage>,
    /// `turn.completed` lines.
    pub turns_completed: usize,
    /// `turn.failed` error messages, in order. Untrusted.
    pub turn_failures: Vec<String>,
    /// `error` event messages (API errors and retry notices), in order. Untrusted.
    pub errors: Vec<String>,
    /// `item.completed` items of type `error` (warnings), in order. Untrusted.
    pub warnings: Vec<String>,
    /// True when the last turn line is `turn.completed`.
    pub completed: bool,
    /// Non-JSON lines (stderr merged with `2>&1`), capped. Untrusted.
    pub stray: Vec<String>,
    /// 1-based numbers of lines that start like JSON but do not parse (a cut-off stream).
    pub bad_lines: Vec<usize>,
}

impl CodexEvents {
    /// Reads the `--json` stream. Never fails.
    pub fn parse(stdout: &[u8]) -> CodexEvents {
        let mut ev = CodexEvents::default();
        let text = String::from_utf8_lossy(stdout);
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                if line.starts_with('{') {
                    ev.bad_lines.push(i + 1);
                } else if ev.stray.len() < STRAY_LINES_MAX {
                    ev.stray
                        .push(crate::sanitize::head(line, STRAY_LINE_MAX).to_string());
                }
                continue;
            };
            let msg = |v: &Value| v.get("message").and_then(Value::as_str).map(str::to_string);
            match v.get("type").and_then(Value::as_str) {
                Some("thread.started") => {
                    ev.thread_id = v.get("thread_id").and_then(Value::as_str).map(Into::into);
                }
                Some("turn.completed") => {
                    ev.turns_completed += 1;
                    ev.completed = true;
                    if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
                        let u = Usage::from_json(u);
                        ev.usage = Some(ev.usage.unwrap_or_default().add(u));
                    }
                }
                Some("turn.failed") => {
                    ev.completed = false;
                    let m = v.get("error").and_then(msg).unwrap_or_default();
                    push_capped(&mut ev.turn_failures, &m);
                }
                Some("error") => {
                    if let Some(m) = msg(&v) {
                        push_capped(&mut ev.errors, &m);
                    }
                }
                Some("item.completed") => {
                    let item = v.get("item").unwrap_or(&Value::Null);
                    if item.get("type").and_then(Value::as_str) == Some("error")
                        && let Some(m) = msg(item)
                    {
                        push_capped(&mut ev.warnings, &m);
                    }
                }
                _ => {}
            }
        }
        ev
    }
}

/// Where a step came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TurnSource {
    Agent,
    User,
}

/// One ATIF step in the making: one model response (or a later user message).
#[derive(Debug, Clone)]
struct Turn {
    source: TurnSource,
    timestamp: Option<String>,
    model: Option<String>,
    texts: Vec<String>,
    reasoning: Vec<String>,
    calls: Vec<ToolCall>,
    results: Vec<ObservationResult>,
    usage: Option<Usage>,
}

impl Turn {
    fn new(source: TurnSource, timestamp: Option<String>, model: Option<String>) -> Turn {
        Turn {
            source,
            timestamp,
            model,
            texts: Vec::new(),
            reasoning: Vec::new(),
            calls: Vec::new(),
            results: Vec::new(),
            usage: None,
        }
    }
}

/// A Codex run read from its rollout (and optionally its `--json` stream).
#[derive(Debug, Clone, Default)]
pub struct CodexRun {
    /// `session_meta.id` (the thread id), else `thread.started.thread_id`.
    pub session_id: Option<String>,
    /// `session_meta.cli_version`, e.g. `0.169.0`.
    pub cli_version: Option<String>,
    /// `session_meta.model_provider` (the `model_provider` config key, e.g. `openai`).
    pub model_provider: Option<String>,
    /// `session_meta.cwd`.
    pub cwd: Option<String>,
    /// `session_meta.timestamp` (RFC 3339, UTC).
    pub started_at: Option<String>,
    /// The task prompt: the first user message that is not injected context. Untrusted.
    pub prompt: Option<String>,
    /// `task_complete` lines seen.
    pub tasks_completed: usize,
    /// Errors turns ended with (`task_complete.error`), in order.
    pub run_errors: Vec<RunError>,
    /// `error`/`stream_error` event messages in the rollout (older CLIs), in order. Untrusted.
    pub error_events: Vec<String>,
    /// 1-based numbers of rollout lines that are not JSON (a file cut off mid-line).
    pub bad_lines: Vec<usize>,
    /// The `--json` stream, when [`CodexRun::with_events`] was given one.
    pub events: Option<CodexEvents>,
    model: Option<String>,
    turns: Vec<Turn>,
    /// Index of the agent turn still receiving output items.
    open: Option<usize>,
    /// Turn index of each call id.
    call_turn: HashMap<String, usize>,
    /// Last `token_count.info.total_token_usage`.
    total_usage: Option<Usage>,
    /// Sum of `token_usage_record.usage`.
    record_sum: Option<Usage>,
    /// True once a `token_usage_record` was seen (then per-step usage comes from those).
    has_records: bool,
    /// Whether the last `task_complete` carried no error.
    last_task_ok: Option<bool>,
}

impl CodexRun {
    /// Reads a rollout file. Never fails: lines that are not JSON are counted in
    /// [`CodexRun::bad_lines`], unknown record types are skipped.
    pub fn parse(rollout: &[u8]) -> CodexRun {
        let mut run = CodexRun::default();
        let text = String::from_utf8_lossy(rollout);
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            match serde_json::from_str::<Value>(line) {
                Ok(v) => run.line(&v),
                Err(_) => run.bad_lines.push(i + 1),
            }
        }
        run.open = None;
        run
    }

    /// Adds the `codex exec --json` stdout stream as secondary evidence: the session id and
    /// token totals when the rollout lacks them, and error events and stray output for
    /// [`CodexRun::provider_failure`].
    pub fn with_events(mut self, stdout: &[u8]) -> CodexRun {
        let ev = CodexEvents::parse(stdout);
        if self.session_id.is_none() {
            self.session_id = ev.thread_id.clone();
        }
        self.events = Some(ev);
        self
    }

    fn line(&mut self, v: &Value) {
        let ts = v
            .get("timestamp")
            .and_then(Value::as_str)
            .map(str::to_string);
        let payload = v.get("payload").unwrap_or(&Value::Null);
        let s = |k: &str| payload.get(k).and_then(Value::as_str).map(str::to_string);
        match v.get("type").and_then(Value::as_str) {
            Some("session_meta") => {
                // Older CLIs nest the meta under `payload.meta`.
                let meta = payload.get("meta").unwrap_or(payload);
                let m = |k: &str| meta.get(k).and_then(Value::as_str).map(str::to_string);
                self.session_id = self.session_id.take().or_else(|| m("id"));
                self.cli_version = self.cli_version.take().or_else(|| m("cli_version"));
                self.model_provider = self.model_provider.take().or_else(|| m("model_provider"));
                self.cwd = self.cwd.take().or_else(|| m("cwd"));
                self.started_at = self.started_at.take().or_else(|| m("timestamp"));
            }
            Some("turn_context") => {
                if let Some(m) = s("model").filter(|m| !m.is_empty()) {
                    self.model = Some(m);
                }
            }
            Some("response_item") => self.response_item(payload, ts),
            Some("token_usage_record") => {
                if let Some(u) = payload.get("usage").filter(|u| u.is_object()) {
                    let u = Usage::from_json(u);
                    self.has_records = true;
                    self.record_sum = Some(self.record_sum.unwrap_or_default().add(u));
                    self.attach_usage(u);
                }
            }
            Some("event_msg") => match payload.get("type").and_then(Value::as_str) {
                Some("token_count") => {
                    let info = payload.get("info").filter(|i| i.is_object());
                    if let Some(t) = info
                        .and_then(|i| i.get("total_token_usage"))
                        .filter(|u| u.is_object())
                    {
                        self.total_usage = Some(Usage::from_json(t));
                    }
                    match info
                        .and_then(|i| i.get("last_token_usage"))
                        .filter(|u| u.is_object())
                    {
                        Some(last) if !self.has_records => {
                            self.attach_usage(Usage::from_json(last));
                        }
                        _ => self.open = None,
                    }
                }
                Some("task_complete") => {
                    self.open = None;
                    self.tasks_completed += 1;
                    match payload.get("error").filter(|e| !e.is_null()) {
                        Some(e) => {
                            self.run_errors.push(RunError::from_json(e));
                            self.last_task_ok = Some(false);
                        }
                        None => self.last_task_ok = Some(true),
                    }
                }
                Some("turn_aborted") => {
                    self.open = None;
                    self.last_task_ok = Some(false);
                }
                Some("error" | "stream_error") => {
                    if let Some(m) = s("message") {
                        push_capped(&mut self.error_events, &m);
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }

    /// Gives `u` to the response it measures: the open turn, else the last agent turn still
    /// without usage. Closes the open turn.
    fn attach_usage(&mut self, u: Usage) {
        let target = self.open.take().or_else(|| {
            self.turns
                .iter()
                .rposition(|t| t.source == TurnSource::Agent)
                .filter(|&i| self.turns[i].usage.is_none())
        });
        if let Some(i) = target
            && self.turns[i].usage.is_none()
        {
            self.turns[i].usage = Some(u);
        }
    }

    /// The agent turn receiving output items, opened at `ts` if none is.
    fn agent_turn(&mut self, ts: Option<String>) -> &mut Turn {
        let i = match self.open {
            Some(i) => i,
            None => {
                self.turns
                    .push(Turn::new(TurnSource::Agent, ts, self.model.clone()));
                self.turns.len() - 1
            }
        };
        self.open = Some(i);
        &mut self.turns[i]
    }

    fn add_call(&mut self, call: ToolCall, ts: Option<String>) {
        let id = call.tool_call_id.clone();
        self.agent_turn(ts).calls.push(call);
        if let Some(i) = self.open {
            self.call_turn.insert(id, i);
        }
    }

    fn response_item(&mut self, p: &Value, ts: Option<String>) {
        let s = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
        let call_id = || s("call_id").or_else(|| s("id")).unwrap_or_default();
        match p.get("type").and_then(Value::as_str) {
            Some("message") => {
                let text = content_text(p.get("content").unwrap_or(&Value::Null));
                match p.get("role").and_then(Value::as_str) {
                    Some("assistant") if !text.is_empty() => {
                        self.agent_turn(ts).texts.push(text);
                    }
                    Some("user") => {
                        let trimmed = text.trim_start();
                        if text.is_empty()
                            || CONTEXT_PREFIXES.iter().any(|p| trimmed.starts_with(p))
                        {
                            return;
                        }
                        self.open = None;
                        if self.prompt.is_none() {
                            self.prompt = Some(text);
                        } else {
                            let mut t = Turn::new(TurnSource::User, ts, None);
                            t.texts.push(text);
                            self.turns.push(t);
                        }
                    }
                    _ => {}
                }
            }
            Some("reasoning") => {
                let mut parts = texts_of(p.get("summary"));
                if parts.is_empty() {
                    parts = texts_of(p.get("content"));
                }
                let turn = self.agent_turn(ts);
                if !parts.is_empty() {
                    turn.reasoning.push(parts.join("\n"));
                }
            }
            Some("function_call") => {
                let name = s("name").unwrap_or_default();
                let raw = s("arguments").unwrap_or_default();
                let args = match serde_json::from_str::<Value>(&raw) {
                    Ok(v @ Value::Object(_)) => normalize_args(v),
                    Ok(other) => json!({ "input": other }),
                    Err(_) => json!({ "input": raw }),
                };
                let call = ToolCall {
                    tool_call_id: call_id(),
                    function_name: name,
                    arguments: args,
                };
                self.add_call(call, ts);
            }
            Some("custom_tool_call") => {
                let call = ToolCall {
                    tool_call_id: call_id(),
                    function_name: s("name").unwrap_or_default(),
                    arguments: json!({ "input": s("input").unwrap_or_default() }),
                };
                self.add_call(call, ts);
            }
            Some("local_shell_call") => {
                let action = p.get("action").cloned().unwrap_or(Value::Null);
                let args = match action {
                    Value::Object(mut m) => {
                        m.remove("type");
                        normalize_args(Value::Object(m))
                    }
                    _ => json!({}),
                };
                let call = ToolCall {
                    tool_call_id: call_id(),
                    function_name: "local_shell".into(),
                    arguments: args,
                };
                self.add_call(call, ts);
            }
            Some("web_search_call") => {
                let call = ToolCall {
                    tool_call_id: call_id(),
                    function_name: "web_search".into(),
                    arguments: p.get("action").cloned().unwrap_or_else(|| json!({})),
                };
                self.add_call(call, ts);
            }
            Some(
                "function_call_output" | "custom_tool_call_output" | "local_shell_call_output",
            ) => {
                self.open = None;
                let id = call_id();
                let text = output_text(p.get("output").unwrap_or(&Value::Null));
                let result = ObservationResult {
                    source_call_id: Some(id.clone()),
                    content: Some(Content::Text(text)),
                };
                let target = self.call_turn.get(&id).copied().or_else(|| {
                    self.turns
                        .iter()
                        .rposition(|t| t.source == TurnSource::Agent)
                });
                match target {
                    Some(i) => self.turns[i].results.push(result),
                    None => {
                        let mut t = Turn::new(TurnSource::Agent, ts, self.model.clone());
                        t.results.push(result);
                        self.turns.push(t);
                    }
                }
            }
            _ => {}
        }
    }

    /// The model (`turn_context.model`, the last one seen).
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The CLI version (`session_meta.cli_version`).
    pub fn cli_version(&self) -> Option<&str> {
        self.cli_version.as_deref()
    }

    /// True when the rollout has no `task_complete` (killed, timed out, cut off).
    pub fn incomplete(&self) -> bool {
        self.tasks_completed == 0
    }

    /// True when the run finished its turn without an error: the rollout's last `task_complete`
    /// has no `error`, or — without a rollout verdict — the event stream's last turn line is
    /// `turn.completed`.
    pub fn completed(&self) -> bool {
        match self.last_task_ok {
            // A stream that ends in `turn.failed` overrules.
            Some(ok) => {
                ok && self
                    .events
                    .as_ref()
                    .is_none_or(|e| e.completed || e.turn_failures.is_empty())
            }
            None => self.events.as_ref().is_some_and(|e| e.completed),
        }
    }

    /// Tool calls in the rollout.
    pub fn tool_call_count(&self) -> usize {
        self.turns.iter().map(|t| t.calls.len()).sum()
    }

    /// The run's token usage and where it came from: the last cumulative `token_count` total,
    /// else the sum of `token_usage_record`s, else the event stream's `turn.completed` usage.
    pub fn usage(&self) -> (Usage, TotalsSource) {
        if let Some(u) = self.total_usage {
            return (u, TotalsSource::TokenCount);
        }
        if let Some(u) = self.record_sum {
            return (u, TotalsSource::ResponseRecords);
        }
        if let Some(u) = self.events.as_ref().and_then(|e| e.usage) {
            return (u, TotalsSource::TurnCompleted);
        }
        (Usage::default(), TotalsSource::None)
    }

    /// The run's totals split the way prices are (see [`CodexRun::usage`]; cache writes are 0
    /// for OpenAI).
    pub fn token_counts(&self) -> TokenCounts {
        self.usage().0.tokens()
    }

    /// The run as an ATIF trajectory: step 1 is the instruction (`opts.instruction`, else the
    /// prompt the rollout recorded), then one `agent` step per model response — its
    /// `output_text` as `message`, its reasoning summary as `reasoning_content`, its function
    /// calls as `tool_calls` (arguments the parsed JSON object; see [`normalize_args`] for argv
    /// commands), their outputs as the observation (tied by `call_id`) and its
    /// `token_usage_record` as `metrics` — and a `user` step for any later user message.
    /// `final_metrics` carries [`CodexRun::usage`]; `total_cost_usd` is left to the price table.
    pub fn to_trajectory(&self, opts: &TrajectoryOptions<'_>) -> Trajectory {
        let mut steps: Vec<Step> = Vec::new();
        if let Some(instruction) = opts.instruction.or(self.prompt.as_deref()) {
            let at = opts.started_at.map(str::to_string);
            let at = at.or_else(|| self.started_at.clone());
            steps.push(text_step("user", at, instruction.to_string()));
        }
        for t in &self.turns {
            let message = t.texts.join("\n\n");
            steps.push(match t.source {
                TurnSource::User => text_step("user", t.timestamp.clone(), message),
                TurnSource::Agent => agent_step(AgentTurn {
                    timestamp: t.timestamp.clone(),
                    model_name: t.model.clone().or_else(|| self.model.clone()),
                    message,
                    reasoning: Some(t.reasoning.join("\n\n")),
                    calls: t.calls.clone(),
                    results: t.results.clone(),
                    metrics: t.usage.map(|u| {
                        step_metrics(u.input_tokens, u.output_tokens, u.cached_input_tokens)
                    }),
                }),
            });
        }
        let (usage, source) = self.usage();
        let mut notes = format!(
            "converted by skillscope from the Codex CLI session rollout; token totals from {}",
            match source {
                TotalsSource::TokenCount => "the last token_count event (cumulative)",
                TotalsSource::ResponseRecords => "the sum of token_usage_record lines",
                TotalsSource::TurnCompleted => "the --json stream's turn.completed usage",
                TotalsSource::None => "nowhere (no usage recorded)",
            }
        );
        if self.incomplete() {
            notes.push_str("; the rollout ended without task_complete");
        }
        notes.push_str(&unreadable_note(self.bad_lines.len()));
        let agent = AgentRef {
            name: AGENT_NAME.into(),
            version: opts.agent_version_or(self.cli_version.as_deref()),
            model_name: self.model.clone(),
        };
        let totals = RunTotals {
            prompt: usage.input_tokens,
            completion: usage.output_tokens,
            cached: usage.cached_input_tokens,
            cost_usd: None,
        };
        assemble(agent, self.session_id.clone(), steps, totals, notes)
    }

    /// A provider failure the run ended with, if any. `None` when the run completed
    /// ([`CodexRun::completed`]: retries Codex got past do not matter). Otherwise evidence is
    /// sought, most authoritative first: the rollout's `task_complete.error` (last first; its
    /// `codex_error_info` status and variant, then its message) and the stream's `turn.failed`
    /// ([`Evidence::ResultLine`]); then `error` events of the rollout and the stream, last first
    /// ([`Evidence::ApiErrorMessage`]; e.g. `Reconnecting... 3/5 (unexpected status 429 …)` of a
    /// run killed mid-retry); then the stream's non-JSON lines ([`Evidence::StrayOutput`]); then
    /// the last 64 KiB of `stderr` ([`Evidence::Stderr`]). Tool output is never read: a `curl`
    /// that printed 401 is the task's business, and warnings (`item.completed` of type `error`)
    /// are not evidence.
    pub fn provider_failure(&self, stderr: &str) -> Option<ProviderFailure> {
        if self.completed() {
            return None;
        }
        let found = ProviderFailure::seen;
        for e in self.run_errors.iter().rev() {
            if let Some(hit) = classify_run_error(e) {
                return Some(found(hit, Evidence::ResultLine));
            }
        }
        let events = self.events.as_ref();
        for m in events.iter().flat_map(|e| e.turn_failures.iter().rev()) {
            if let Some(hit) = classify_codex_text(m) {
                return Some(found(hit, Evidence::ResultLine));
            }
        }
        let stream_errors = events.iter().flat_map(|e| e.errors.iter().rev());
        for m in stream_errors.chain(self.error_events.iter().rev()) {
            if let Some(hit) = classify_codex_text(m) {
                return Some(found(hit, Evidence::ApiErrorMessage));
            }
        }
        let stray = events.map(|e| e.stray.as_slice()).unwrap_or_default();
        in_stray_or_stderr(stray, stderr, classify_codex_text)
    }
}

/// A turn's closing error: a known phrase in its message first (a quota phrase beats a 429),
/// then `codex_error_info`'s HTTP status, then its variant.
fn classify_run_error(e: &RunError) -> Option<(ProviderFailureKind, Option<u16>)> {
    if let Some((kind, status)) = classify_codex_text(&e.message) {
        return Some((kind, e.http_status.or(status)));
    }
    if let Some(kind) = e.http_status.and_then(kind_for_status) {
        return Some((kind, e.http_status));
    }
    let kind = match e.info.as_deref()? {
        "unauthorized" => ProviderFailureKind::Authentication,
        "usage_limit_exceeded" | "quota_exceeded" => ProviderFailureKind::QuotaExhausted,
        "server_overloaded" => ProviderFailureKind::Overloaded,
        "internal_server_error" => ProviderFailureKind::ServerError,
        _ => return None,
    };
    Some((kind, e.http_status))
}

/// [`classify_error_text`] plus what Codex writes: `unexpected status 401 Unauthorized: …`
/// (the status after "status "), "We're currently experiencing high demand" (its text for 5xx
/// answers: a server error) and "Missing environment variable: `OPENAI_API_KEY`" (no key: an
/// authentication failure, which needs the operator).
fn classify_codex_text(text: &str) -> Option<(ProviderFailureKind, Option<u16>)> {
    let lower = text.to_lowercase();
    let status = status_after_word(&lower);
    if let Some((kind, s)) = classify_error_text(text) {
        return Some((kind, s.or(status)));
    }
    if let Some(kind) = status.and_then(kind_for_status) {
        return Some((kind, status));
    }
    if lower.contains("experiencing high demand") {
        return Some((ProviderFailureKind::ServerError, None));
    }
    if lower.contains("missing environment variable") && lower.contains("api_key") {
        return Some((ProviderFailureKind::Authentication, None));
    }
    None
}

/// The first HTTP status written as `status NNN` in `lower` (Codex's `unexpected status 401`).
fn status_after_word(lower: &str) -> Option<u16> {
    lower.match_indices("status ").find_map(|(pos, m)| {
        let rest = &lower[pos + m.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits
            .parse::<u16>()
            .ok()
            .filter(|c| digits.len() == 3 && (100..600).contains(c))
    })
}

/// Makes a shell call's command detectable as a string: when `command` (or `cmd`) is an argv
/// array — the older `shell` tool and `local_shell_call` give `["bash", "-lc", "<script>"]` —
/// the array moves to `argv` and `command` becomes the script (the argument after `-c`/`-lc`,
/// else the argv joined by spaces). Other arguments are kept as they are. 0.169's
/// `exec_command` already gives `{"cmd": "<script>"}` and is left alone.
pub fn normalize_args(args: Value) -> Value {
    let Value::Object(mut m) = args else {
        return args;
    };
    for key in ["command", "cmd"] {
        if let Some(Value::Array(argv)) = m.get(key) {
            let parts: Vec<String> = argv
                .iter()
                .map(|a| match a {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            let script = script_of(&parts);
            let argv = Value::Array(argv.clone());
            let mut out = Map::new();
            out.insert("command".into(), Value::String(script));
            out.insert("argv".into(), argv);
            m.remove(key);
            for (k, v) in m {
                out.entry(k).or_insert(v);
            }
            return Value::Object(out);
        }
    }
    Value::Object(m)
}

/// The script of a shell argv: the argument after `-c`, `-lc` or `-ic`, else all joined.
fn script_of(argv: &[String]) -> String {
    argv.iter()
        .position(|a| a.starts_with('-') && a.ends_with('c') && a.len() <= 4)
        .and_then(|i| argv.get(i + 1))
        .cloned()
        .unwrap_or_else(|| argv.join(" "))
}

/// Text of a message's content: a string, or the `text` of its parts, joined by newlines.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(_) => texts_of(Some(content)).join("\n"),
        _ => String::new(),
    }
}

/// The non-empty `text` fields of a list of parts (strings taken as they are).
fn texts_of(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| match p {
                    Value::String(s) => Some(s.clone()),
                    _ => p.get("text").and_then(Value::as_str).map(str::to_string),
                })
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// A tool output as text: a string; `{content, success}` (older CLIs); or content items
/// (`input_text` parts as text, images as `[image]`).
fn output_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(m) => m
            .get("content")
            .map(output_text)
            .unwrap_or_else(|| v.to_string()),
        Value::Array(items) => items
            .iter()
            .map(|i| match i.get("text").and_then(Value::as_str) {
                Some(t) => t.to_string(),
                None => match i.get("type").and_then(Value::as_str) {
                    Some(t) => format!("[{}]", t.trim_start_matches("input_")),
                    None => output_text(i),
                },
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Pushes `m`, cut, unless [`ERRORS_MAX`] messages are kept already.
fn push_capped(list: &mut Vec<String>, m: &str) {
    if list.len() < ERRORS_MAX {
        list.push(crate::sanitize::head(m, STRAY_LINE_MAX).to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harbor::atif::WRITE_VERSION;
    use crate::harbor::skill_use::{UseKind, detect};

    const SKILL_ROLLOUT: &str =
        include_str!("../../tests/fixtures/harness/codex/skill_run.rollout.jsonl");
    const SKILL_STDOUT: &str =
        include_str!("../../tests/fixtures/harness/codex/skill_run.stdout.jsonl");
    const SKILL_STDERR: &str =
        include_str!("../../tests/fixtures/harness/codex/skill_run.stderr.txt");
    const AUTH_ROLLOUT: &str =
        include_str!("../../tests/fixtures/harness/codex/auth_401.rollout.jsonl");
    const AUTH_STDOUT: &str =
        include_str!("../../tests/fixtures/harness/codex/auth_401.stdout.jsonl");
    const AUTH_STDERR: &str =
        include_str!("../../tests/fixtures/harness/codex/auth_401.stderr.txt");
    const RATE_ROLLOUT: &str =
        include_str!("../../tests/fixtures/harness/codex/rate_limit_429.rollout.jsonl");
    const RATE_STDOUT: &str =
        include_str!("../../tests/fixtures/harness/codex/rate_limit_429.stdout.jsonl");
    const RATE_STDERR: &str =
        include_str!("../../tests/fixtures/harness/codex/rate_limit_429.stderr.txt");

    /// The temporary directory the fixtures were captured in.
    const TMP: &str = "/tmp/skillscope-codex-s2sp5J";

    fn opts() -> TrajectoryOptions<'static> {
        TrajectoryOptions {
            instruction: Some("Write hello to out.txt and read the demo skill."),
            started_at: Some("2026-11-21T10:42:49Z"),
            agent_version: None,
        }
    }

    fn skill_run() -> CodexRun {
        CodexRun::parse(SKILL_ROLLOUT.as_bytes()).with_events(SKILL_STDOUT.as_bytes())
    }

    #[test]
    fn skill_run_metadata_and_totals() {
        let run = skill_run();
        assert_eq!(
            run.session_id.as_deref(),
            Some("01a1fdb3-9f05-7cd2-ba50-352dc82684ff")
        );
        assert_eq!(run.cli_version(), Some("0.169.0"));
        assert_eq!(run.model(), Some("gpt-5.2"));
        assert_eq!(run.model_provider.as_deref(), Some("skillscope"));
        assert_eq!(
            run.prompt.as_deref(),
            Some("Write hello to out.txt and read the demo skill.")
        );
        assert!(run.bad_lines.is_empty() && !run.incomplete() && run.completed());
        assert_eq!(run.tool_call_count(), 3);
        // Four responses of 1,200 input (200 cached) and 50 output (10 reasoning) each; the
        // last cumulative token_count says 4,800 / 800 / 200 — not the 12,000 a sum of the
        // cumulative totals would give.
        let (u, source) = run.usage();
        assert_eq!(source, TotalsSource::TokenCount);
        assert_eq!(u.input_tokens, 4800);
        assert_eq!(u.reasoning_output_tokens, 40);
        assert_eq!(
            run.token_counts(),
            TokenCounts {
                input: 4000,
                cached_input: 800,
                cache_write: 0,
                output: 200,
            }
        );
        // The stream's turn.completed agrees.
        assert_eq!(run.events.as_ref().unwrap().usage, Some(u));
        assert_eq!(run.provider_failure(SKILL_STDERR), None);
    }

    #[test]
    fn skill_run_becomes_the_expected_steps() {
        let t = skill_run().to_trajectory(&opts());
        assert_eq!(t.schema_version, WRITE_VERSION);
        assert_eq!(t.agent.name, "codex");
        assert_eq!(t.agent.version, "0.169.0");
        assert_eq!(t.agent.model_name.as_deref(), Some("gpt-5.2"));
        let shape = crate::agent_logs::convert::step_shapes(&t);
        assert_eq!(
            shape,
            vec![
                (1, "user", vec![], 0),
                (2, "agent", vec!["exec_command"], 1),
                (3, "agent", vec!["exec_command"], 1),
                (4, "agent", vec!["exec_command"], 1),
                (5, "agent", vec![], 0),
            ]
        );
        let s = &t.steps;
        assert_eq!(s[0].timestamp.as_deref(), Some("2026-11-21T10:42:49Z"));
        assert_eq!(
            s[1].reasoning_content.as_deref(),
            Some("Running scripted command 1.")
        );
        let call = &s[1].calls()[0];
        assert_eq!(call.tool_call_id, "call_t0");
        assert_eq!(
            call.command(),
            Some(format!("echo hello > {TMP}/work/out.txt").as_str())
        );
        assert_eq!(s[1].results()[0].source_call_id.as_deref(), Some("call_t0"));
        assert!(
            s[1].results()[0]
                .text()
                .contains("Process exited with code 0")
        );
        assert!(
            s[2].results()[0]
                .text()
                .contains("description: A demo skill")
        );
        let failed = s[3].results()[0].text();
        assert!(failed.contains("Process exited with code 2"));
        assert!(crate::harbor::atif::looks_failed(&failed));
        assert_eq!(t.error_step_count(), 1);
        assert_eq!(s[4].message_text(), "Done.");
        assert!(t.ends_with_message());
        assert_eq!(s[1].timestamp.as_deref(), Some("2026-11-21T10:42:49.820Z"));
        for step in &s[1..] {
            let m = step.metrics.as_ref().expect("per-step metrics");
            assert_eq!(
                (m.prompt_tokens, m.cached_tokens, m.completion_tokens),
                (Some(1200), Some(200), Some(50))
            );
        }
        let f = t.final_metrics.as_ref().unwrap();
        assert_eq!(f.total_prompt_tokens, Some(4800));
        assert_eq!(f.total_cached_tokens, Some(800));
        assert_eq!(f.total_completion_tokens, Some(200));
        assert_eq!(f.total_cost_usd, None);
        assert_eq!(f.total_steps, Some(5));
        assert_eq!(t.token_totals(), (Some(4800), Some(800), Some(200), None));
    }

    #[test]
    fn skill_read_through_the_shell_is_detected() {
        let t = skill_run().to_trajectory(&opts());
        let uses = detect(&t, &[]);
        assert_eq!(uses.len(), 1);
        assert_eq!(uses[0].skill, "demo");
        assert_eq!(uses[0].kind, UseKind::Shell);
        assert_eq!(uses[0].first_step, 3);
    }

    #[test]
    fn instruction_falls_back_to_the_recorded_prompt() {
        let run = CodexRun::parse(SKILL_ROLLOUT.as_bytes());
        let t = run.to_trajectory(&TrajectoryOptions::default());
        assert_eq!(
            t.steps[0].message_text(),
            "Write hello to out.txt and read the demo skill."
        );
        assert_eq!(
            t.steps[0].timestamp.as_deref(),
            Some("2026-11-21T10:42:49.736Z")
        );
        assert_eq!(t.steps.len(), 5);
        let v = TrajectoryOptions {
            agent_version: Some("0.169.0-pinned"),
            ..TrajectoryOptions::default()
        };
        assert_eq!(run.to_trajectory(&v).agent.version, "0.169.0-pinned");
    }

    #[test]
    fn refused_key_is_an_authentication_failure() {
        let run = CodexRun::parse(AUTH_ROLLOUT.as_bytes()).with_events(AUTH_STDOUT.as_bytes());
        assert!(!run.completed() && !run.incomplete());
        assert_eq!(run.tool_call_count(), 0);
        assert_eq!(
            run.run_errors[0].info.as_deref(),
            Some("http_connection_failed")
        );
        assert_eq!(
            run.provider_failure(AUTH_STDERR),
            Some(ProviderFailure {
                kind: ProviderFailureKind::Authentication,
                evidence: Evidence::ResultLine,
                http_status: Some(401),
            })
        );
        // The stream alone (no rollout) says the same; six `error` events were retries.
        let ev = CodexRun::default().with_events(AUTH_STDOUT.as_bytes());
        assert_eq!(ev.events.as_ref().unwrap().errors.len(), 6);
        assert_eq!(
            ev.provider_failure(""),
            Some(ProviderFailure {
                kind: ProviderFailureKind::Authentication,
                evidence: Evidence::ResultLine,
                http_status: Some(401),
            })
        );
        let t = run.to_trajectory(&opts());
        assert_eq!(t.steps.len(), 1);
        assert_eq!(t.final_metrics.unwrap().total_prompt_tokens, Some(0));
    }

    #[test]
    fn rate_limit_is_recognised() {
        let run = CodexRun::parse(RATE_ROLLOUT.as_bytes()).with_events(RATE_STDOUT.as_bytes());
        assert_eq!(
            run.provider_failure(RATE_STDERR),
            Some(ProviderFailure {
                kind: ProviderFailureKind::RateLimit,
                evidence: Evidence::ResultLine,
                http_status: Some(429),
            })
        );
    }

    #[test]
    fn evidence_order_and_fallbacks() {
        // Killed mid-retry: only `Reconnecting…` events.
        let stdout = concat!(
            r#"{"type":"thread.started","thread_id":"t"}"#,
            "\n",
            r#"{"type":"turn.started"}"#,
            "\n",
            r#"{"type":"error","message":"Reconnecting... 2/5 (unexpected status 503 Service Unavailable: x, url: http://h/v1/responses)"}"#,
            "\n",
        );
        let run = CodexRun::default().with_events(stdout.as_bytes());
        assert_eq!(
            run.provider_failure(""),
            Some(ProviderFailure {
                kind: ProviderFailureKind::ServerError,
                evidence: Evidence::ApiErrorMessage,
                http_status: Some(503),
            })
        );
        // Stray output (stderr merged), then stderr.
        let run = CodexRun::default().with_events(b"Error: stream error: 429 Too Many Requests\n");
        assert_eq!(
            run.provider_failure("").map(|f| (f.kind, f.evidence)),
            Some((ProviderFailureKind::RateLimit, Evidence::StrayOutput))
        );
        let run = CodexRun::default();
        assert_eq!(
            run.provider_failure("boom\nunexpected status 401 Unauthorized\n")
                .map(|f| (f.kind, f.evidence, f.http_status)),
            Some((
                ProviderFailureKind::Authentication,
                Evidence::Stderr,
                Some(401)
            ))
        );
        // Codex's own texts for 5xx and a missing key.
        let high = r#"{"type":"event_msg","payload":{"type":"task_complete","error":{"message":"We’re currently experiencing high demand, which may cause temporary errors.","codex_error_info":"internal_server_error"}}}"#;
        assert_eq!(
            CodexRun::parse(high.as_bytes())
                .provider_failure("")
                .map(|f| f.kind),
            Some(ProviderFailureKind::ServerError)
        );
        let key = r#"{"type":"event_msg","payload":{"type":"task_complete","error":{"message":"Missing environment variable: `OPENAI_API_KEY`.","codex_error_info":"other"}}}"#;
        assert_eq!(
            CodexRun::parse(key.as_bytes())
                .provider_failure("")
                .map(|f| f.kind),
            Some(ProviderFailureKind::Authentication)
        );
        // A quota phrase beats the 429 status.
        let quota = r#"{"type":"event_msg","payload":{"type":"task_complete","error":{"message":"Quota exceeded. Check your plan and billing details.","codex_error_info":{"response_too_many_failed_attempts":{"http_status_code":429}}}}}"#;
        assert_eq!(
            CodexRun::parse(quota.as_bytes())
                .provider_failure("")
                .map(|f| (f.kind, f.http_status)),
            Some((ProviderFailureKind::QuotaExhausted, Some(429)))
        );
    }

    #[test]
    fn tool_output_and_warnings_are_not_evidence() {
        // A run cut off after a curl printed 401, with the usual warnings on the stream.
        let rollout = concat!(
            r#"{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"curl -i http://api\"}","call_id":"c1"}}"#,
            "\n",
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"HTTP/1.1 401 Unauthorized\nInvalid API key"}}"#,
            "\n",
        );
        let stdout = concat!(
            r#"{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Falling back from WebSockets to HTTPS transport. unexpected status 404 Not Found"}}"#,
            "\n",
            r#"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"curl","aggregated_output":"HTTP/1.1 429 Too Many Requests","exit_code":0,"status":"completed"}}"#,
            "\n",
        );
        let run = CodexRun::parse(rollout.as_bytes()).with_events(stdout.as_bytes());
        assert!(run.incomplete() && !run.completed());
        assert_eq!(run.events.as_ref().unwrap().warnings.len(), 1);
        assert_eq!(run.provider_failure(""), None);
        // A completed run ignores retries it got past.
        let run = skill_run();
        assert_eq!(
            run.provider_failure("unexpected status 429 Too Many Requests"),
            None
        );
    }

    #[test]
    fn cut_off_last_line_is_tolerated() {
        let full = SKILL_ROLLOUT.trim_end();
        let cut_at = full.rfind('\n').unwrap() + 40;
        let run = CodexRun::parse(&full.as_bytes()[..cut_at]);
        assert_eq!(run.bad_lines, vec![35]);
        assert!(run.incomplete() && !run.completed());
        assert_eq!(run.tool_call_count(), 3);
        assert_eq!(run.token_counts().output, 200);
        let t = run.to_trajectory(&opts());
        assert_eq!(t.steps.len(), 5);
        let notes = t.notes.unwrap();
        assert!(notes.contains("without task_complete") && notes.contains("1 unreadable"));
        // Nothing says why it stopped: not a provider failure.
        assert_eq!(run.provider_failure(""), None);
        // The stream cut likewise.
        let ev = CodexEvents::parse(&SKILL_STDOUT.as_bytes()[..SKILL_STDOUT.len() - 30]);
        assert_eq!(ev.bad_lines.len(), 1);
        assert!(!ev.completed);
    }

    #[test]
    fn argv_commands_become_detectable_strings() {
        let rollout = concat!(
            r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"cat /root/.codex/skills/xlsx/SKILL.md\"],\"workdir\":\"/root\"}","call_id":"c1"}}"#,
            "\n",
            r#"{"type":"response_item","payload":{"type":"local_shell_call","call_id":"c2","status":"completed","action":{"type":"exec","command":["python3","/root/.codex/skills/pdf/scripts/x.py"]}}}"#,
            "\n",
            r#"{"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch","call_id":"c3"}}"#,
            "\n",
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":{"content":"---\nname: xlsx","success":true}}}"#,
            "\n",
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"ok"},{"type":"input_image","image_url":"data:"}]}}"#,
            "\n",
        );
        let run = CodexRun::parse(rollout.as_bytes());
        let t = run.to_trajectory(&TrajectoryOptions::default());
        assert_eq!(t.steps.len(), 1);
        let calls = t.steps[0].calls();
        assert_eq!(calls.len(), 3);
        assert_eq!(
            calls[0].command(),
            Some("cat /root/.codex/skills/xlsx/SKILL.md")
        );
        assert_eq!(calls[0].arguments["argv"][1], "-lc");
        assert_eq!(calls[0].arguments["workdir"], "/root");
        assert_eq!(calls[1].function_name, "local_shell");
        assert_eq!(
            calls[1].command(),
            Some("python3 /root/.codex/skills/pdf/scripts/x.py")
        );
        assert_eq!(calls[2].arguments["input"], "*** Begin Patch");
        let results = t.steps[0].results();
        assert_eq!(results[0].text(), "---\nname: xlsx");
        assert_eq!(results[1].text(), "ok\n[image]");
        let names: Vec<String> = detect(&t, &[]).into_iter().map(|u| u.skill).collect();
        assert_eq!(names, vec!["pdf".to_string(), "xlsx".to_string()]);
    }
}
