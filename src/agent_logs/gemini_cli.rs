//! Gemini CLI's native logs — its session file and its headless stdout — read into an ATIF
//! trajectory, token totals and a verdict on provider failures.
//!
//! Observed with `@google/gemini-cli` 0.61.0 run headless (`gemini --yolo --model=<m>
//! --output-format=stream-json --prompt=<instruction>`) against a scripted Gemini API, and checked
//! against Harbor's `agents/installed/gemini_cli.py`, which copies the newest
//! `~/.gemini/tmp/<project>/chats/session-*.json(l)` to `agent/gemini-cli.trajectory.json(l)`.
//!
//! **The session file** (`session-<YYYY-MM-DDTHH-MM>-<session id prefix>.jsonl`; older CLIs wrote
//! one JSON object `{sessionId, …, messages: […]}`, also read here) is an append-only log, one JSON
//! record a line:
//! - a header `{"sessionId","projectHash","startTime","lastUpdated","kind":"main"}`;
//! - `{"$set": {…}}` metadata updates. `$set.messages` rewrites the whole message list: the CLI
//!   uses it for the `<session_context>` preamble and to drop a turn that failed (a refused key,
//!   an exhausted retry budget). Here its messages are merged in, never deleted, so a failed turn
//!   stays visible;
//! - message records `{"id","timestamp","type","content",…}`, written again in full (same `id`)
//!   each time the CLI adds to them — the last copy wins. `type` is `user` (`content` a list of
//!   parts: `{text}`, or `{functionResponse:{id,name,response:{output}}}` for tool results),
//!   `gemini` (`content` the reply text; `thoughts: [{subject, description, timestamp}]`;
//!   `tokens: {input, output, cached, thoughts, tool, total}`; `model`; `toolCalls: [{id, name,
//!   args, result: [{functionResponse}], status, displayName, …}]`), or `info`/`error`/`warning`;
//! - `{"$rewindTo": id}` — the conversation was rewound to before that message.
//!
//! Token units: `tokens.input` is the API's `promptTokenCount`, cached tokens **included**;
//! `cached` its `cachedContentTokenCount`; `output` the `candidatesTokenCount`, thoughts
//! **excluded**; `thoughts` the `thoughtsTokenCount`; `tool` the `toolUsePromptTokenCount` (input
//! the API adds for tool use, billed as input).
//!
//! **Stdout** with `--output-format stream-json` is one JSON event a line: `init` (`session_id`,
//! `model`), `message` (`role` user/assistant, `content`, `delta`), `tool_use`, `tool_result`,
//! `error` (`severity` error/warning, `message`) and a closing `result` (`status`
//! success/error, `error: {type, message}`, `stats: {total_tokens, input_tokens (prompt, cached
//! included), output_tokens (candidates, thoughts excluded), cached, input (uncached), tool_calls,
//! models: {<model>: {…}}}`). Its stats cover every API call — the router's classifier and other
//! side requests too — where the session file holds only the main chat. With `--output-format
//! json` stdout is one object `{session_id, response, stats: {models: {<model>: {tokens: {input,
//! prompt, candidates, total, cached, thoughts, tool}}}}, error?}`; plain text mode prints the
//! answer only. Non-JSON stdout lines (stderr merged with `2>&1`, as Harbor runs it) are kept as
//! evidence only.
//!
//! API failures: the CLI retries 429 and 5xx itself (`general.maxAttempts`, default 10, backoff
//! 5 s doubling to 30 s) and gives up with a `result` of status `error` whose message is
//! `[API Error: <Google error JSON or message>]` (plus "Please wait and try again later…" for a
//! 429); stderr carries `Error when talking to Gemini API … status: 401`. The process then exits
//! with the HTTP status modulo 256 (401 → 145, 429 → 173) in the JSON formats, 1 in text mode.
//!
//! Everything read here is untrusted container output: it is stored as data and never printed
//! or logged by this module.

use std::collections::HashMap;

use serde_json::Value;

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
pub const AGENT_NAME: &str = "gemini-cli";

/// The shell tool of Gemini CLI (arguments `{command, description?, dir_path?, is_background?}`).
pub const SHELL_TOOL: &str = "run_shell_command";

/// Gemini CLI's own skill tool (arguments `{name}`), offered when skills are installed
/// (`~/.gemini/skills/<name>/SKILL.md`, setting `skills.enabled`, on by default in 0.61.0).
pub const SKILL_TOOL: &str = "activate_skill";

/// Line appended to a tool result the CLI recorded with `status` `error`/`cancelled` (an
/// `Error:` line, which [`crate::harbor::atif::looks_failed`] recognises).
pub const TOOL_ERROR_MARK: &str = "Error: the tool call did not succeed";

/// The preamble the CLI sends as the first user message (working directory, OS, date).
const SESSION_CONTEXT_TAG: &str = "<session_context>";

/// At most this many non-JSON stdout lines are kept as evidence, each cut to [`STRAY_LINE_MAX`]
/// bytes.
const STRAY_LINES_MAX: usize = 200;
const STRAY_LINE_MAX: usize = 2048;

/// Token usage of one Gemini API response, as the session file's `tokens` records it. Counts
/// are tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    /// `promptTokenCount`: all input, cached included.
    pub input: u64,
    /// `cachedContentTokenCount`: input served from the cache.
    pub cached: u64,
    /// `candidatesTokenCount`: output, thoughts excluded.
    pub output: u64,
    /// `thoughtsTokenCount`: thinking output.
    pub thoughts: u64,
    /// `toolUsePromptTokenCount`: input added for tool use.
    pub tool: u64,
}

impl Tokens {
    fn from_session(v: &Value) -> Tokens {
        let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
        Tokens {
            input: n("input"),
            cached: n("cached"),
            output: n("output"),
            thoughts: n("thoughts"),
            tool: n("tool"),
        }
    }

    /// The split prices use: fresh input = prompt − cached + tool-use prompt; output includes
    /// thoughts; no cache writes (Gemini's implicit caching has none).
    pub fn counts(&self) -> TokenCounts {
        TokenCounts {
            input: self.input.saturating_sub(self.cached) + self.tool,
            cached_input: self.cached.min(self.input),
            cache_write: 0,
            output: self.output + self.thoughts,
        }
    }
}

/// Where [`GeminiCliRun::token_counts`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TotalsSource {
    /// The stdout `result` line's (or JSON object's) `stats`: every API call, side requests too.
    StdoutStats,
    /// Summed over the session file's `gemini` messages: the main chat only.
    Session,
}

/// The closing `result` of stream-json stdout, or the single object of `--output-format json`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    /// `success` or `error` (`error` when the JSON object carries an `error`).
    pub status: String,
    /// `error.type` (often `unknown`).
    pub error_type: Option<String>,
    /// `error.message`, e.g. `[API Error: {"error":{"code":401,…}}]`. Untrusted.
    pub error_message: Option<String>,
    /// Per-model token totals from `stats.models`, in the stats' order.
    pub model_usage: Vec<(String, TokenCounts)>,
    /// `stats.tool_calls` (stream-json) or `stats.tools.totalCalls` (json).
    pub tool_calls: Option<u64>,
    /// `stats.duration_ms`, milliseconds.
    pub duration_ms: Option<u64>,
}

/// One tool call of a `gemini` message.
#[derive(Debug, Clone, PartialEq)]
struct Call {
    id: String,
    name: String,
    args: Value,
    status: Option<String>,
    /// What the tool returned to the model (`functionResponse.response.output`/`error`).
    output: Option<String>,
}

impl Call {
    /// The ATIF tool call.
    fn tool_call(&self) -> ToolCall {
        ToolCall {
            tool_call_id: self.id.clone(),
            function_name: self.name.clone(),
            arguments: self.args.clone(),
        }
    }

    /// What the call returned, when it has finished (an output or a status); a call that did not
    /// succeed ends with [`TOOL_ERROR_MARK`].
    fn result(&self) -> Option<ObservationResult> {
        if self.output.is_none() && self.status.is_none() {
            return None;
        }
        let mut text = self.output.clone().unwrap_or_default();
        if self.status.as_deref().is_some_and(|s| s != "success") {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(TOOL_ERROR_MARK);
        }
        Some(ObservationResult {
            source_call_id: (!self.id.is_empty()).then(|| self.id.clone()),
            content: Some(Content::Text(text)),
        })
    }
}

/// One message of the session, after merging its copies.
#[derive(Debug, Clone, PartialEq)]
struct Message {
    id: String,
    timestamp: Option<String>,
    kind: String,
    /// Text parts joined (user, info, error, warning) or the reply text (gemini).
    text: String,
    /// Only `functionResponse` parts (a tool-result message).
    tool_results_only: bool,
    /// `subject: description` per thought.
    thoughts: Vec<String>,
    tokens: Option<Tokens>,
    model: Option<String>,
    calls: Vec<Call>,
}

/// A Gemini CLI run read from its session file and, optionally, its stdout.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GeminiCliRun {
    /// `sessionId` (or stdout's `init.session_id`).
    session_id: Option<String>,
    /// `startTime` of the session, RFC 3339.
    start_time: Option<String>,
    messages: Vec<Message>,
    /// Session lines that did not parse (a file cut off mid-line).
    bad_lines: usize,
    /// Model from stdout's `init` event.
    init_model: Option<String>,
    /// The stdout `result`.
    result: Option<RunResult>,
    /// stdout `error` events of severity `error`, in order. Untrusted.
    stdout_errors: Vec<String>,
    /// stdout `tool_use` events.
    stdout_tool_uses: usize,
    /// Non-JSON stdout lines, capped. Untrusted.
    stray: Vec<String>,
}

impl GeminiCliRun {
    /// Reads a session file: JSONL (0.40+) or a single JSON object with `messages` (older).
    /// Never fails: unreadable lines are counted ([`GeminiCliRun::bad_lines`]), a cut-off file
    /// yields what was written before the cut.
    pub fn parse(session: &[u8]) -> GeminiCliRun {
        let text = String::from_utf8_lossy(session);
        let mut log = SessionLog::default();
        match serde_json::from_str::<Value>(text.trim()) {
            Ok(Value::Object(obj)) if obj.get("messages").is_some_and(Value::is_array) => {
                log.header(&Value::Object(obj));
            }
            _ => {
                for line in text.lines() {
                    let line = line.trim();
                    if line.is_empty() {
                        continue;
                    }
                    match serde_json::from_str::<Value>(line) {
                        Ok(v) if v.is_object() => log.record(&v),
                        _ => log.bad_lines += 1,
                    }
                }
            }
        }
        GeminiCliRun {
            session_id: log.session_id,
            start_time: log.start_time,
            messages: log
                .order
                .iter()
                .filter_map(|id| log.by_id.get(id))
                .map(message)
                .collect(),
            bad_lines: log.bad_lines,
            ..GeminiCliRun::default()
        }
    }

    /// Adds the CLI's stdout (stream-json, json or text; stderr possibly merged in) as evidence:
    /// its `result` (status, error, token stats), `error` events and non-JSON lines.
    pub fn with_output(mut self, stdout: &[u8]) -> GeminiCliRun {
        let text = String::from_utf8_lossy(stdout);
        // `--output-format json`: one pretty-printed object.
        if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(text.trim())
            && (v.get("stats").is_some() || v.get("error").is_some() || v.get("response").is_some())
        {
            self.read_json_object(&v);
            return self;
        }
        for line in text.lines() {
            let trimmed = line.trim();
            if trimmed.is_empty() {
                continue;
            }
            match serde_json::from_str::<Value>(trimmed) {
                Ok(v) if v.get("type").and_then(Value::as_str).is_some() => self.read_event(&v),
                _ => {
                    if self.stray.len() < STRAY_LINES_MAX {
                        self.stray
                            .push(crate::sanitize::head(trimmed, STRAY_LINE_MAX).to_string());
                    }
                }
            }
        }
        self
    }

    fn read_event(&mut self, v: &Value) {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        match v["type"].as_str().unwrap_or("") {
            "init" => {
                self.init_model = s("model");
                if self.session_id.is_none() {
                    self.session_id = s("session_id");
                }
            }
            "tool_use" => self.stdout_tool_uses += 1,
            "error" => {
                if v["severity"].as_str() != Some("warning")
                    && let Some(m) = s("message")
                {
                    self.stdout_errors.push(m);
                }
            }
            "result" => {
                let stats = &v["stats"];
                let model_usage = stats["models"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(m, u)| (m.clone(), stream_stats_counts(u)))
                    .collect();
                self.result = Some(RunResult {
                    status: s("status").unwrap_or_default(),
                    error_type: v["error"]["type"].as_str().map(str::to_string),
                    error_message: v["error"]["message"].as_str().map(str::to_string),
                    model_usage,
                    tool_calls: stats["tool_calls"].as_u64(),
                    duration_ms: stats["duration_ms"].as_u64(),
                });
            }
            _ => {}
        }
    }

    fn read_json_object(&mut self, v: &Value) {
        if self.session_id.is_none() {
            self.session_id = v["session_id"].as_str().map(str::to_string);
        }
        let stats = &v["stats"];
        let model_usage = stats["models"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(m, u)| {
                let t = &u["tokens"];
                let n = |k: &str| t.get(k).and_then(Value::as_u64).unwrap_or(0);
                let tokens = Tokens {
                    input: n("prompt"),
                    cached: n("cached"),
                    output: n("candidates"),
                    thoughts: n("thoughts"),
                    tool: n("tool"),
                };
                (m.clone(), tokens.counts())
            })
            .collect();
        let error = v.get("error").filter(|e| !e.is_null());
        self.result = Some(RunResult {
            status: if error.is_some() { "error" } else { "success" }.into(),
            error_type: error.and_then(|e| e["type"].as_str()).map(str::to_string),
            error_message: error
                .and_then(|e| e["message"].as_str())
                .map(str::to_string),
            model_usage,
            tool_calls: stats["tools"]["totalCalls"].as_u64(),
            duration_ms: None,
        });
    }

    /// Session id: the session file's `sessionId`, else stdout's.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The main model: the first `gemini` message's `model`, else stdout's `init.model`.
    pub fn model(&self) -> Option<&str> {
        self.messages
            .iter()
            .find_map(|m| m.model.as_deref())
            .or(self.init_model.as_deref())
    }

    /// The session's `startTime`, RFC 3339.
    pub fn start_time(&self) -> Option<&str> {
        self.start_time.as_deref()
    }

    /// Session lines that did not parse.
    pub fn bad_lines(&self) -> usize {
        self.bad_lines
    }

    /// The stdout `result`, when stdout was given and held one.
    pub fn result(&self) -> Option<&RunResult> {
        self.result.as_ref()
    }

    /// True when the run reached its end: the stdout `result` says `success`, or (no result)
    /// the session's last message is a `gemini` reply with text and no tool calls.
    pub fn completed(&self) -> bool {
        match &self.result {
            Some(r) => r.status == "success",
            None => self
                .messages
                .last()
                .is_some_and(|m| m.kind == "gemini" && m.calls.is_empty() && !m.text.is_empty()),
        }
    }

    /// Tool calls the session records (stdout's count when the session holds no messages).
    pub fn tool_call_count(&self) -> usize {
        if self.messages.is_empty() {
            return self
                .result
                .as_ref()
                .and_then(|r| r.tool_calls)
                .map_or(self.stdout_tool_uses, |n| n as usize);
        }
        self.messages.iter().map(|m| m.calls.len()).sum()
    }

    /// Tokens per model, and where they came from: stdout's stats when present (every API call,
    /// keyed by the model the API reported), else the session's `gemini` messages (main chat,
    /// keyed by their `model`).
    ///
    /// From stream-json stats output is `total_tokens − input_tokens` (thoughts included; any
    /// tool-use prompt tokens would land there too, as those stats do not split them out).
    pub fn usage_by_model(&self) -> (Vec<(String, TokenCounts)>, TotalsSource) {
        if let Some(r) = &self.result
            && !r.model_usage.is_empty()
        {
            return (r.model_usage.clone(), TotalsSource::StdoutStats);
        }
        let mut per: Vec<(String, TokenCounts)> = Vec::new();
        for m in &self.messages {
            let Some(t) = m.tokens else { continue };
            let model = m
                .model
                .clone()
                .or_else(|| self.model().map(str::to_string))
                .unwrap_or_default();
            match per.iter_mut().find(|(name, _)| *name == model) {
                Some((_, c)) => *c = *c + t.counts(),
                None => per.push((model, t.counts())),
            }
        }
        (per, TotalsSource::Session)
    }

    /// Run totals over all models (see [`GeminiCliRun::usage_by_model`]): fresh input, cached
    /// input, no cache writes, output with thoughts.
    pub fn token_counts(&self) -> TokenCounts {
        self.usage_by_model()
            .0
            .iter()
            .fold(TokenCounts::default(), |acc, (_, c)| acc + *c)
    }

    /// Where [`GeminiCliRun::token_counts`] came from.
    pub fn totals_source(&self) -> TotalsSource {
        self.usage_by_model().1
    }

    /// The run as an ATIF trajectory (`agent/trajectory.json`): the CLI's `<session_context>`
    /// preamble as a `system` step; the instruction as a `user` step (from the session, or
    /// `opts.instruction` put first when the session does not hold it); one `agent` step per
    /// `gemini` message — reply text as `message`, thoughts as `reasoning_content`, `toolCalls`
    /// as `tool_calls` and their results as the observation (tied by call id), `tokens` as
    /// `metrics` (prompt = input incl. cached + tool-use prompt, completion = output + thoughts);
    /// `info`/`error`/`warning` messages as `system` steps. Tool-result user messages are not
    /// steps (their content is the observation). `final_metrics` carries
    /// [`GeminiCliRun::token_counts`]; `total_cost_usd` is left to the price table.
    pub fn to_trajectory(&self, opts: &TrajectoryOptions<'_>) -> Trajectory {
        let mut steps: Vec<Step> = Vec::new();
        if let Some(instruction) = opts.instruction {
            let held = self.messages.iter().any(|m| {
                m.kind == "user" && !m.tool_results_only && m.text.trim() == instruction.trim()
            });
            if !held {
                let at = opts.started_at.map(str::to_string);
                steps.push(text_step("user", at, instruction.to_string()));
            }
        }
        for m in &self.messages {
            let at = m.timestamp.clone();
            let step = match m.kind.as_str() {
                "user" if m.tool_results_only => continue,
                "user" if m.text.trim_start().starts_with(SESSION_CONTEXT_TAG) => {
                    text_step("system", at, m.text.clone())
                }
                "user" => text_step("user", at, m.text.clone()),
                "gemini" => agent_step(AgentTurn {
                    timestamp: at,
                    model_name: m.model.clone().or_else(|| self.model().map(str::to_string)),
                    message: m.text.clone(),
                    reasoning: Some(m.thoughts.join("\n")),
                    calls: m.calls.iter().map(Call::tool_call).collect(),
                    results: m.calls.iter().filter_map(Call::result).collect(),
                    metrics: m
                        .tokens
                        .map(|t| step_metrics(t.input + t.tool, t.output + t.thoughts, t.cached)),
                }),
                _ => text_step("system", at, format!("[{}] {}", m.kind, m.text)),
            };
            steps.push(step);
        }
        let (_, source) = self.usage_by_model();
        let totals = self.token_counts();
        let mut notes = format!(
            "converted by skillscope from the Gemini CLI session file (0.61.0 format); token \
             totals from {}",
            match source {
                TotalsSource::StdoutStats => "the stdout stats (every API call, side requests too)",
                TotalsSource::Session => "the session's gemini messages (main chat only)",
            }
        );
        notes.push_str(&unreadable_note(self.bad_lines));
        let agent = AgentRef {
            name: AGENT_NAME.into(),
            version: opts.agent_version_or(None),
            model_name: self.model().map(str::to_string),
        };
        let run_totals = RunTotals {
            prompt: totals.prompt_total(),
            completion: totals.output,
            cached: totals.cached_input,
            cost_usd: None,
        };
        assemble(agent, self.session_id.clone(), steps, run_totals, notes)
    }

    /// A provider failure, if the run shows one. A completed run ([`GeminiCliRun::completed`])
    /// has none: retries the CLI got past do not count. Otherwise evidence is sought, most
    /// authoritative first: the stdout `result`'s error message ([`Evidence::ResultLine`]); stdout
    /// `error` events and the session's `error` messages, last first
    /// ([`Evidence::ApiErrorMessage`]); non-JSON stdout lines ([`Evidence::StrayOutput`]); the
    /// last 64 KiB of `stderr` ([`Evidence::Stderr`]) — each read by [`classify_gemini_error`].
    /// Tool output is never read.
    pub fn provider_failure(&self, stderr: &str) -> Option<ProviderFailure> {
        if self.completed() {
            return None;
        }
        let found = |hit, evidence| Some(ProviderFailure::seen(hit, evidence));
        if let Some(hit) = self
            .result
            .as_ref()
            .and_then(|r| r.error_message.as_deref())
            .and_then(classify_gemini_error)
        {
            return found(hit, Evidence::ResultLine);
        }
        let session_errors = self
            .messages
            .iter()
            .filter(|m| m.kind == "error")
            .map(|m| m.text.as_str());
        let api_errors: Vec<&str> = session_errors
            .chain(self.stdout_errors.iter().map(String::as_str))
            .collect();
        if let Some(hit) = api_errors
            .iter()
            .rev()
            .find_map(|t| classify_gemini_error(t))
        {
            return found(hit, Evidence::ApiErrorMessage);
        }
        in_stray_or_stderr(&self.stray, stderr, classify_gemini_error)
    }
}

/// Gemini API phrases, lowercased, tried in order before the shared table of
/// [`classify_error_text`].
const GEMINI_PHRASES: &[(ProviderFailureKind, &[&str])] = &[
    (
        ProviderFailureKind::Authentication,
        &[
            "api key not valid",
            "api_key_invalid",
            "api key expired",
            "unauthenticated",
            "permission_denied",
        ],
    ),
    (
        ProviderFailureKind::QuotaExhausted,
        &[
            // The CLI's TerminalQuotaError (a per-day quota in the error details).
            "exhausted your daily quota",
            "exceeded your current quota",
            "quota exceeded",
        ],
    ),
    (
        ProviderFailureKind::RateLimit,
        &[
            "resource has been exhausted",
            "resource_exhausted",
            // What the CLI appends to every 429 it gives up on.
            "please wait and try again later",
            "possible quota limitations",
        ],
    ),
    (
        ProviderFailureKind::Overloaded,
        &["the model is overloaded"],
    ),
    (
        ProviderFailureKind::ServerError,
        &["internal error encountered", "\"status\":\"internal\""],
    ),
];

/// Recognises a provider failure in Gemini CLI error text: Google's error phrases and RPC
/// statuses (`UNAUTHENTICATED`, `PERMISSION_DENIED` → authentication; `RESOURCE_EXHAUSTED`,
/// "Resource has been exhausted" → rate limit; "exhausted your daily quota", "exceeded your
/// current quota" → quota; "The model is overloaded" → overloaded; `INTERNAL` → server error),
/// then [`classify_error_text`]'s shared phrases and markers, then an HTTP status in a JSON error
/// body (`"code":429`) or Node's `status: 429`. Returns the kind and the status, if one was given.
///
/// A bare 429 `RESOURCE_EXHAUSTED` is a rate limit: Google sends that generic text for
/// per-minute limits, and the CLI itself treats it as retryable; a used-up daily quota comes
/// with quota details the CLI turns into "You have exhausted your daily quota".
pub fn classify_gemini_error(text: &str) -> Option<(ProviderFailureKind, Option<u16>)> {
    if text.trim().is_empty() {
        return None;
    }
    let lower = text.to_lowercase();
    let status = json_code(&lower);
    for (kind, phrases) in GEMINI_PHRASES {
        if phrases.iter().any(|p| lower.contains(p)) {
            return Some((*kind, status));
        }
    }
    if let Some((kind, s)) = classify_error_text(text) {
        return Some((kind, s.or(status)));
    }
    status.and_then(kind_for_status).map(|k| (k, status))
}

/// The first HTTP status in a Google JSON error body (`"code":401`, `"code": 401`) or
/// `(Status: 429)`.
fn json_code(lower: &str) -> Option<u16> {
    for marker in ["\"code\":", "(status: "] {
        for (pos, _) in lower.match_indices(marker) {
            let rest = lower[pos + marker.len()..].trim_start();
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if digits.len() == 3
                && let Ok(code) = digits.parse::<u16>()
                && (100..600).contains(&code)
            {
                return Some(code);
            }
        }
    }
    None
}

/// Stream-json `stats.models.<m>`: `{total_tokens, input_tokens, output_tokens, cached, input}`.
fn stream_stats_counts(u: &Value) -> TokenCounts {
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    let prompt = n("input_tokens");
    let cached = n("cached");
    let total = n("total_tokens");
    let output = total
        .checked_sub(prompt)
        .filter(|o| *o >= n("output_tokens"))
        .unwrap_or(n("output_tokens"));
    TokenCounts {
        input: prompt.saturating_sub(cached),
        cached_input: cached.min(prompt),
        cache_write: 0,
        output,
    }
}

/// The session log being replayed.
#[derive(Debug, Default)]
struct SessionLog {
    session_id: Option<String>,
    start_time: Option<String>,
    order: Vec<String>,
    by_id: HashMap<String, Value>,
    bad_lines: usize,
}

impl SessionLog {
    fn header(&mut self, v: &Value) {
        if let Some(id) = v["sessionId"].as_str() {
            self.session_id = Some(id.to_string());
        }
        if let Some(t) = v["startTime"].as_str() {
            self.start_time = Some(t.to_string());
        }
        for m in v["messages"].as_array().into_iter().flatten() {
            self.upsert(m);
        }
    }

    fn upsert(&mut self, m: &Value) {
        let Some(id) = m["id"].as_str() else { return };
        if m["type"].as_str().is_none() {
            return;
        }
        if !self.by_id.contains_key(id) {
            self.order.push(id.to_string());
        }
        self.by_id.insert(id.to_string(), m.clone());
    }

    fn record(&mut self, v: &Value) {
        if let Some(target) = v.get("$rewindTo") {
            match target
                .as_str()
                .and_then(|id| self.order.iter().position(|x| x == id))
            {
                Some(pos) => {
                    for id in self.order.drain(pos..) {
                        self.by_id.remove(&id);
                    }
                }
                None => {
                    self.order.clear();
                    self.by_id.clear();
                }
            }
        } else if let Some(set) = v.get("$set") {
            self.header(set);
        } else if v["type"].as_str() == Some("message_update") {
            // Older CLIs: a partial update of a message.
            if let Some(id) = v["id"].as_str()
                && let Some(Value::Object(msg)) = self.by_id.get_mut(id)
                && let Value::Object(update) = v
            {
                for (k, val) in update {
                    if k != "type" && k != "id" {
                        msg.insert(k.clone(), val.clone());
                    }
                }
            }
        } else if v.get("id").is_some() && v.get("type").is_some() {
            self.upsert(v);
        } else if v.get("sessionId").is_some() {
            self.header(v);
        }
    }
}

/// Text of `content`: a string, or the `text` of its parts joined by newlines.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// What a tool returned, from a call's `result` parts.
fn call_output(result: &Value) -> Option<String> {
    let mut out: Vec<String> = Vec::new();
    for part in result.as_array().into_iter().flatten() {
        if let Some(resp) = part.get("functionResponse") {
            let r = &resp["response"];
            if let Some(s) = r["output"].as_str().or_else(|| r["error"].as_str()) {
                out.push(s.to_string());
            } else if !r.is_null() {
                out.push(r.to_string());
            }
        } else if let Some(t) = part.get("text").and_then(Value::as_str) {
            out.push(t.to_string());
        }
    }
    (!out.is_empty()).then(|| out.join("\n"))
}

fn message(v: &Value) -> Message {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let content = &v["content"];
    let tool_results_only = content.as_array().is_some_and(|parts| {
        !parts.is_empty() && parts.iter().all(|p| p.get("functionResponse").is_some())
    });
    let thoughts = v["thoughts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            let subject = t["subject"].as_str().unwrap_or("").trim();
            let description = t["description"].as_str().unwrap_or("").trim();
            match (subject.is_empty(), description.is_empty()) {
                (false, false) => Some(format!("{subject}: {description}")),
                (true, false) => Some(description.to_string()),
                (false, true) => Some(subject.to_string()),
                (true, true) => None,
            }
        })
        .collect();
    let calls = v["toolCalls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| Call {
            id: c["id"].as_str().unwrap_or("").to_string(),
            name: c["name"].as_str().unwrap_or("").to_string(),
            args: match &c["args"] {
                Value::Null => Value::Object(Default::default()),
                a => a.clone(),
            },
            status: c["status"].as_str().map(str::to_string),
            output: call_output(&c["result"]),
        })
        .collect();
    Message {
        id: s("id").unwrap_or_default(),
        timestamp: s("timestamp"),
        kind: s("type").unwrap_or_default(),
        text: text_of(content),
        tool_results_only,
        thoughts,
        tokens: v
            .get("tokens")
            .filter(|t| t.is_object())
            .map(Tokens::from_session),
        model: s("model"),
        calls,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harbor::skill_use::{UseKind, detect};

    // Captured from the real `@google/gemini-cli` 0.61.0 against the scripted model server
    // (`tests/support/scripted_model/gemini.rs`), usage 1000 fresh + 200 cached input and 50
    // output tokens per response; `thoughts_run` from a probe that also sent a thought part and
    // `thoughtsTokenCount` 30.
    const SKILL_SESSION: &str =
        include_str!("../../tests/fixtures/harness/gemini/skill_run.session.jsonl");
    const SKILL_STDOUT: &str =
        include_str!("../../tests/fixtures/harness/gemini/skill_run.stdout.jsonl");
    const SKILL_STDERR: &str =
        include_str!("../../tests/fixtures/harness/gemini/skill_run.stderr.txt");
    const THOUGHTS_SESSION: &str =
        include_str!("../../tests/fixtures/harness/gemini/thoughts_run.session.jsonl");
    const THOUGHTS_STDOUT: &str =
        include_str!("../../tests/fixtures/harness/gemini/thoughts_run.stdout.jsonl");
    const AUTH_SESSION: &str =
        include_str!("../../tests/fixtures/harness/gemini/auth_401.session.jsonl");
    const AUTH_STDOUT: &str =
        include_str!("../../tests/fixtures/harness/gemini/auth_401.stdout.jsonl");
    const AUTH_STDERR: &str =
        include_str!("../../tests/fixtures/harness/gemini/auth_401.stderr.txt");
    const RATE_SESSION: &str =
        include_str!("../../tests/fixtures/harness/gemini/rate_limit_429.session.jsonl");
    const RATE_STDOUT: &str =
        include_str!("../../tests/fixtures/harness/gemini/rate_limit_429.stdout.jsonl");
    const RATE_STDERR: &str =
        include_str!("../../tests/fixtures/harness/gemini/rate_limit_429.stderr.txt");

    const INSTRUCTION: &str = "Write hello to out.txt, then read the demo skill.";

    fn skill_run() -> GeminiCliRun {
        GeminiCliRun::parse(SKILL_SESSION.as_bytes()).with_output(SKILL_STDOUT.as_bytes())
    }

    fn opts() -> TrajectoryOptions<'static> {
        TrajectoryOptions {
            instruction: Some(INSTRUCTION),
            started_at: Some("2026-11-21T10:43:27Z"),
            agent_version: Some("0.61.0"),
        }
    }

    #[test]
    fn session_tokens_and_calls() {
        let run = GeminiCliRun::parse(SKILL_SESSION.as_bytes());
        assert_eq!(run.model(), Some("gemini-2.5-pro"));
        assert_eq!(run.bad_lines(), 0);
        assert_eq!(run.tool_call_count(), 2);
        assert!(run.completed());
        assert_eq!(run.totals_source(), TotalsSource::Session);
        // Three responses of 1200 prompt (200 cached) and 50 output tokens.
        assert_eq!(
            run.token_counts(),
            TokenCounts {
                input: 3000,
                cached_input: 600,
                cache_write: 0,
                output: 150
            }
        );
    }

    #[test]
    fn stdout_stats_agree_and_win() {
        let run = skill_run();
        assert_eq!(run.totals_source(), TotalsSource::StdoutStats);
        let r = run.result().unwrap();
        assert_eq!(r.status, "success");
        assert_eq!(r.tool_calls, Some(2));
        assert_eq!(
            run.token_counts(),
            TokenCounts {
                input: 3000,
                cached_input: 600,
                cache_write: 0,
                output: 150
            }
        );
        assert_eq!(run.provider_failure(SKILL_STDERR), None);
    }

    #[test]
    fn thoughts_count_as_output_and_reasoning() {
        let session = GeminiCliRun::parse(THOUGHTS_SESSION.as_bytes());
        let with_stdout = session.clone().with_output(THOUGHTS_STDOUT.as_bytes());
        // 3 × (50 output + 30 thoughts); stream-json's output_tokens (150) leaves thoughts out,
        // total_tokens − input_tokens (3840 − 3600) keeps them.
        for run in [&session, &with_stdout] {
            let t = run.token_counts();
            assert_eq!((t.input, t.cached_input, t.output), (3000, 600, 240));
        }
        let traj = session.to_trajectory(&TrajectoryOptions::default());
        let agent: Vec<&Step> = traj.steps.iter().filter(|s| s.source == "agent").collect();
        assert_eq!(agent.len(), 3);
        assert_eq!(
            agent[0].reasoning_content.as_deref(),
            Some("Planning the step: I should run command 0.")
        );
        assert_eq!(agent[0].message_text(), "Running step 1.");
        assert_eq!(agent[0].calls().len(), 1);
        let m = agent[0].metrics.as_ref().unwrap();
        assert_eq!(
            (m.prompt_tokens, m.completion_tokens, m.cached_tokens),
            (Some(1200), Some(80), Some(200))
        );
    }

    #[test]
    fn trajectory_steps_observations_and_totals() {
        let t = skill_run().to_trajectory(&opts());
        let kinds: Vec<&str> = t.steps.iter().map(|s| s.source.as_str()).collect();
        // Preamble, the instruction (held by the session, not repeated), three responses.
        assert_eq!(kinds, ["system", "user", "agent", "agent", "agent"]);
        assert!(t.steps[0].message_text().starts_with("<session_context>"));
        assert_eq!(t.steps[1].message_text(), INSTRUCTION);
        assert_eq!(
            t.steps.iter().map(|s| s.step_id).collect::<Vec<_>>(),
            [1, 2, 3, 4, 5]
        );
        assert_eq!(t.tool_call_count(), 2);
        let s3 = &t.steps[2];
        assert_eq!(s3.calls()[0].function_name, SHELL_TOOL);
        assert_eq!(
            s3.calls()[0].command(),
            Some("echo hello > /tmp/gcprobe-ok/work/out.txt")
        );
        assert_eq!(
            s3.results()[0].source_call_id.as_deref(),
            Some(s3.calls()[0].tool_call_id.as_str())
        );
        assert!(t.steps[3].results()[0].text().contains("name: demo"));
        assert_eq!(t.steps[4].message_text(), "Done.");
        assert!(t.ends_with_message());
        let f = t.final_metrics.as_ref().unwrap();
        assert_eq!(f.total_prompt_tokens, Some(3600));
        assert_eq!(f.total_cached_tokens, Some(600));
        assert_eq!(f.total_completion_tokens, Some(150));
        assert_eq!(f.total_cost_usd, None);
        assert_eq!(f.total_steps, Some(5));
        assert_eq!(t.agent.name, AGENT_NAME);
        assert_eq!(t.agent.version, "0.61.0");
        assert_eq!(t.agent.model_name.as_deref(), Some("gemini-2.5-pro"));
        assert!(t.session_id.is_some());
        // Round-trips through the ATIF reader.
        let json = serde_json::to_vec(&t).unwrap();
        assert_eq!(Trajectory::parse(&json, "t").unwrap(), t);
    }

    #[test]
    fn instruction_prepended_when_session_lacks_it() {
        let t = skill_run().to_trajectory(&TrajectoryOptions {
            instruction: Some("Another prompt"),
            started_at: Some("2026-11-21T10:43:27Z"),
            agent_version: None,
        });
        assert_eq!(t.steps[0].source, "user");
        assert_eq!(t.steps[0].message_text(), "Another prompt");
        assert_eq!(
            t.steps[0].timestamp.as_deref(),
            Some("2026-11-21T10:43:27Z")
        );
        assert_eq!(t.steps.len(), 6);
        assert_eq!(t.agent.version, "unknown");
    }

    #[test]
    fn skill_read_by_shell_is_detected() {
        let t = skill_run().to_trajectory(&opts());
        let uses = detect(&t, &[]);
        assert_eq!(uses.len(), 1);
        assert_eq!(uses[0].skill, "demo");
        assert_eq!(uses[0].kind, UseKind::Shell);
        assert_eq!(uses[0].first_step, 4);
    }

    #[test]
    fn activate_skill_is_detected() {
        let session = r#"{"sessionId":"s","projectHash":"p","startTime":"2026-01-01T00:00:00Z","kind":"main"}
{"id":"u1","timestamp":"t","type":"user","content":[{"text":"go"}]}
{"id":"g1","timestamp":"t","type":"gemini","content":"","tokens":{"input":10,"output":2,"cached":0,"thoughts":0,"tool":0,"total":12},"model":"gemini-2.5-pro","toolCalls":[{"id":"activate_skill_1","name":"activate_skill","args":{"name":"demo"},"result":[{"functionResponse":{"id":"activate_skill_1","name":"activate_skill","response":{"output":"<activated_skill>…</activated_skill>"}}}],"status":"success"}]}"#;
        let t = GeminiCliRun::parse(session.as_bytes()).to_trajectory(&opts());
        let uses = detect(&t, &[]);
        assert_eq!(uses.len(), 1);
        assert_eq!(
            (uses[0].skill.as_str(), uses[0].kind),
            ("demo", UseKind::Invoke)
        );
    }

    #[test]
    fn auth_401_is_authentication() {
        let run = GeminiCliRun::parse(AUTH_SESSION.as_bytes()).with_output(AUTH_STDOUT.as_bytes());
        assert!(!run.completed());
        assert_eq!(run.tool_call_count(), 0);
        assert_eq!(run.token_counts(), TokenCounts::default());
        assert_eq!(
            run.provider_failure(AUTH_STDERR),
            Some(ProviderFailure {
                kind: ProviderFailureKind::Authentication,
                evidence: Evidence::ResultLine,
                http_status: Some(401),
            })
        );
        // Without stdout (text mode), stderr says the same.
        let bare = GeminiCliRun::parse(AUTH_SESSION.as_bytes());
        assert_eq!(
            bare.provider_failure(AUTH_STDERR),
            Some(ProviderFailure {
                kind: ProviderFailureKind::Authentication,
                evidence: Evidence::Stderr,
                http_status: Some(401),
            })
        );
        // The failed turn was dropped by a `$set.messages` rewrite; it is kept here.
        let t = bare.to_trajectory(&opts());
        assert_eq!(t.steps.len(), 2);
        assert_eq!(t.steps[1].message_text(), INSTRUCTION);
    }

    #[test]
    fn rate_limit_429_is_rate_limit() {
        let run = GeminiCliRun::parse(RATE_SESSION.as_bytes()).with_output(RATE_STDOUT.as_bytes());
        // The result message has no status code: "[API Error: Resource has been exhausted (e.g.
        // check quota).]\nPlease wait and try again later. …".
        assert_eq!(
            run.provider_failure(RATE_STDERR),
            Some(ProviderFailure {
                kind: ProviderFailureKind::RateLimit,
                evidence: Evidence::ResultLine,
                http_status: None,
            })
        );
        let bare = GeminiCliRun::parse(RATE_SESSION.as_bytes());
        let f = bare.provider_failure(RATE_STDERR).unwrap();
        assert_eq!(f.kind, ProviderFailureKind::RateLimit);
        assert_eq!(f.evidence, Evidence::Stderr);
    }

    #[test]
    fn gemini_error_texts() {
        let k = |t: &str| classify_gemini_error(t);
        assert_eq!(
            k(
                r#"[API Error: {"error":{"code":403,"message":"Permission denied","status":"PERMISSION_DENIED"}}]"#
            ),
            Some((ProviderFailureKind::Authentication, Some(403)))
        );
        assert_eq!(
            k("[API Error: You have exhausted your daily quota on this model.]"),
            Some((ProviderFailureKind::QuotaExhausted, None))
        );
        assert_eq!(
            k(
                r#"{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}"#
            ),
            Some((ProviderFailureKind::Overloaded, Some(503)))
        );
        assert_eq!(
            k(
                r#"{"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}}"#
            ),
            Some((ProviderFailureKind::ServerError, Some(500)))
        );
        assert_eq!(
            k("[API Error: fetch failed (Status: 502)]"),
            Some((ProviderFailureKind::ServerError, Some(502)))
        );
        assert_eq!(k("Error: model not found"), None);
        assert_eq!(k(""), None);
    }

    #[test]
    fn tool_output_is_never_evidence() {
        // A run killed mid-way whose tool printed an auth error: not a provider failure.
        let session = r#"{"sessionId":"s","projectHash":"p","startTime":"t","kind":"main"}
{"id":"g1","timestamp":"t","type":"gemini","content":"","model":"m","toolCalls":[{"id":"c1","name":"run_shell_command","args":{"command":"curl x"},"result":[{"functionResponse":{"id":"c1","name":"run_shell_command","response":{"output":"401 API key not valid"}}}],"status":"success"}]}"#;
        let run = GeminiCliRun::parse(session.as_bytes());
        assert!(!run.completed());
        assert_eq!(run.provider_failure(""), None);
    }

    #[test]
    fn cut_off_session_is_tolerated() {
        // Cut in the middle of the second command's record.
        let cut_at = SKILL_SESSION.find("cat ~/.gemini").unwrap();
        let run = GeminiCliRun::parse(&SKILL_SESSION.as_bytes()[..cut_at]);
        assert!(run.bad_lines() >= 1);
        assert_eq!(run.model(), Some("gemini-2.5-pro"));
        assert!(!run.completed());
        let t = run.to_trajectory(&opts());
        assert!(t.steps.iter().any(|s| s.source == "agent"));
        assert!(t.notes.as_deref().unwrap().contains("unreadable"));
        // Garbage and empty input never panic.
        assert_eq!(GeminiCliRun::parse(b"").tool_call_count(), 0);
        assert_eq!(GeminiCliRun::parse(b"\xff{not json").bad_lines(), 1);
        let empty = GeminiCliRun::parse(b"").with_output(b"plain text answer\n");
        assert_eq!(empty.to_trajectory(&opts()).steps.len(), 1);
    }

    #[test]
    fn legacy_single_json_session() {
        let legacy = r#"{"sessionId":"s1","projectHash":"p","startTime":"t","messages":[
            {"id":"a","timestamp":"t","type":"user","content":"hi"},
            {"id":"b","timestamp":"t","type":"gemini","content":"hello","tokens":{"input":100,"cached":40,"output":7,"thoughts":3,"tool":0},"model":"gemini-2.5-flash"}]}"#;
        let run = GeminiCliRun::parse(legacy.as_bytes());
        assert_eq!(run.session_id(), Some("s1"));
        assert_eq!(
            run.token_counts(),
            TokenCounts {
                input: 60,
                cached_input: 40,
                cache_write: 0,
                output: 10
            }
        );
        assert!(run.completed());
    }

    #[test]
    fn json_output_format_stats() {
        let out = r#"{
  "session_id": "x",
  "response": "Done.",
  "stats": {"models": {"gemini-2.5-pro": {"tokens": {"input": 3000, "prompt": 3600, "candidates": 150, "total": 3840, "cached": 600, "thoughts": 90, "tool": 0}}},
            "tools": {"totalCalls": 2}}
}"#;
        let run = GeminiCliRun::parse(b"").with_output(out.as_bytes());
        assert_eq!(run.totals_source(), TotalsSource::StdoutStats);
        assert_eq!(
            run.token_counts(),
            TokenCounts {
                input: 3000,
                cached_input: 600,
                cache_write: 0,
                output: 240
            }
        );
        assert_eq!(run.tool_call_count(), 2);
        assert!(run.completed());
    }
}
