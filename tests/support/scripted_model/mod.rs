//! A scripted model server for the harness tests: it speaks the providers' HTTP APIs (Anthropic
//! Messages with SSE in [`anthropic`], OpenAI Responses in [`openai`], Gemini
//! `streamGenerateContent` in [`gemini`]) and, instead of thinking, replies with a fixed sequence
//! of shell commands and then a closing text. The real harness CLI, in a real container, reaches
//! it through its base-URL setting.
//!
//! Which command comes next is read off the conversation the CLI sends (the number of tool results
//! in it), so side requests a CLI makes on its own (titles, quota probes) do not advance the
//! script. Every request is recorded for the test to inspect.

#![allow(dead_code)]

pub mod anthropic;
pub mod gemini;
pub mod openai;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, Uri};

/// What the scripted model does.
#[derive(Debug, Clone, Default)]
pub struct Script {
    /// Shell commands the model asks to run, one per turn, in order.
    pub commands: Vec<String>,
    /// The closing text, sent once the last command's result came back.
    pub final_text: String,
    /// Answer every model request with this HTTP status and the provider's error body instead
    /// (401 for a refused key, 429 for a rate limit, …).
    pub fail_with: Option<u16>,
    /// Answer the first this many model requests with 429 (a burst of rate limits), then
    /// normally.
    pub fail_first: usize,
    /// Usage reported on every model response: input (uncached prompt), cached prompt and output
    /// tokens.
    pub usage: Usage,
    /// Other scripts for conversations whose request holds a marker text (e.g. the skill-writing
    /// session of a two-phase run): (marker, commands, closing text); the first match wins.
    pub phases: Vec<(String, Vec<String>, String)>,
    /// Answer the model request of a conversation holding this many tool results only after this
    /// long: the CLI waits on the model and writes nothing meanwhile (a provider that stalls).
    pub hold: Option<(usize, std::time::Duration)>,
    /// The models endpoints (what a preflight calls) accept only this key, refusing any other
    /// as the provider does; `None`: any key.
    pub accepts_key: Option<String>,
    /// The models the provider offers on its models endpoints; empty: any model id asked for.
    pub models: Vec<String>,
}

/// Tokens reported per response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Uncached prompt tokens.
    pub input: u64,
    /// Prompt tokens read from the cache.
    pub cached: u64,
    /// Output tokens.
    pub output: u64,
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Method and path with query, e.g. `POST /v1/messages?beta=true`.
    pub line: String,
    /// Request headers (lowercase names).
    pub headers: Vec<(String, String)>,
    /// The body, as JSON (`Null` when it was not JSON).
    pub body: serde_json::Value,
    /// How the route answered: `command N`, `final`, `error 429`, `side`, `unknown`.
    pub answer: String,
}

/// Shared by the handlers.
#[derive(Debug, Default)]
pub struct ScriptState {
    /// The script.
    pub script: Script,
    /// Everything received, in order.
    pub requests: Mutex<Vec<Recorded>>,
    /// Model requests answered so far (for [`Script::fail_first`]).
    pub answered: std::sync::atomic::AtomicUsize,
}

impl ScriptState {
    /// Records a request and how it was answered.
    pub fn record(
        &self,
        line: String,
        headers: &HeaderMap,
        body: &serde_json::Value,
        answer: &str,
    ) {
        let headers = headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    v.to_str().unwrap_or("?").to_string(),
                )
            })
            .collect();
        self.requests.lock().unwrap().push(Recorded {
            line,
            headers,
            body: body.clone(),
            answer: answer.to_string(),
        });
    }

    /// What to send for a conversation holding `tool_results` tool results: the next command, or
    /// the closing text when every command has run.
    pub fn next(&self, tool_results: usize) -> Next<'_> {
        match self.script.commands.get(tool_results) {
            Some(cmd) => Next::Command {
                index: tool_results,
                command: cmd,
            },
            None => Next::Final(&self.script.final_text),
        }
    }

    /// The error status to answer this model request with, if any: [`Script::fail_with`], or
    /// 429 while [`Script::fail_first`] requests have not been answered yet.
    pub fn failure(&self) -> Option<u16> {
        let n = self
            .answered
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.script
            .fail_with
            .or((n < self.script.fail_first).then_some(429))
    }

    /// Waits as [`Script::hold`] says before answering a conversation holding `tool_results`
    /// tool results.
    pub async fn hold(&self, tool_results: usize) {
        if let Some((n, d)) = self.script.hold
            && n == tool_results
        {
            tokio::time::sleep(d).await;
        }
    }

    /// [`ScriptState::next`] for the conversation in request `body`: the commands of the first
    /// phase whose marker the body holds, else the main script's. Returns the move and its label
    /// (`command N` / `final`, prefixed `phase K ` for phase K, 1-based).
    pub fn next_for(&self, body: &serde_json::Value, tool_results: usize) -> (Next<'_>, String) {
        let text = body.to_string();
        for (k, (marker, commands, final_text)) in self.script.phases.iter().enumerate() {
            if text.contains(marker.as_str()) {
                let next = match commands.get(tool_results) {
                    Some(cmd) => Next::Command {
                        index: tool_results,
                        command: cmd,
                    },
                    None => Next::Final(final_text),
                };
                let label = format!("phase {} {}", k + 1, next.label());
                return (next, label);
            }
        }
        let next = self.next(tool_results);
        let label = next.label();
        (next, label)
    }

    /// For a models-endpoint request with `headers`: `Some(401)` when [`Script::accepts_key`]
    /// is set and no header carries that key (`x-api-key`, `Authorization: Bearer`,
    /// `x-goog-api-key`).
    pub fn models_refusal(&self, headers: &HeaderMap) -> Option<u16> {
        let key = self.script.accepts_key.as_deref()?;
        let carried = headers.iter().any(|(_, v)| {
            v.to_str()
                .is_ok_and(|v| v == key || v.strip_prefix("Bearer ") == Some(key))
        });
        (!carried).then_some(401)
    }

    /// Whether the models endpoints know `model` ([`Script::models`]).
    pub fn knows(&self, model: &str) -> bool {
        self.script.models.is_empty() || self.script.models.iter().any(|m| m == model)
    }

    /// Recorded requests, copied.
    pub fn recorded(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

/// The scripted model's next move.
#[derive(Debug, Clone, Copy)]
pub enum Next<'a> {
    /// Ask to run this shell command (0-based position in the script).
    Command { index: usize, command: &'a str },
    /// Say this and stop.
    Final(&'a str),
}

impl Next<'_> {
    /// How the answer is recorded.
    pub fn label(&self) -> String {
        match self {
            Next::Command { index, .. } => format!("command {index}"),
            Next::Final(_) => "final".into(),
        }
    }
}

/// A running scripted model server, listening on every interface (containers reach it through
/// the Docker bridge gateway).
pub struct ScriptedModel {
    /// The port.
    pub port: u16,
    /// Script and recorded requests.
    pub state: Arc<ScriptState>,
    server: tokio::task::JoinHandle<()>,
}

impl ScriptedModel {
    /// Starts serving `script` on `0.0.0.0` at a free port.
    pub async fn start(script: Script) -> ScriptedModel {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([0, 0, 0, 0], 0)))
            .await
            .expect("bind the scripted model server");
        ScriptedModel::serve(listener, script)
    }

    /// Starts serving `script` on `127.0.0.1` only, as a model proxy on this machine's loopback
    /// (LiteLLM, a company gateway) listens.
    pub async fn start_loopback(script: Script) -> ScriptedModel {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .expect("bind the scripted model server on loopback");
        ScriptedModel::serve(listener, script)
    }

    /// Serves `script` on a listener bound elsewhere (e.g. inside another network namespace).
    pub fn start_on(listener: std::net::TcpListener, script: Script) -> ScriptedModel {
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
        ScriptedModel::serve(listener, script)
    }

    fn serve(listener: tokio::net::TcpListener, script: Script) -> ScriptedModel {
        let state = Arc::new(ScriptState {
            script,
            requests: Mutex::default(),
            answered: Default::default(),
        });
        let app: Router = anthropic::routes()
            .merge(openai::routes())
            .merge(gemini::routes())
            .fallback(unknown)
            .with_state(state.clone());
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            axum::serve(listener, app)
                .await
                .expect("scripted model server");
        });
        ScriptedModel {
            port,
            state,
            server,
        }
    }

    /// `http://<host>:<port>`.
    pub fn base_url(&self, host: &str) -> String {
        format!("http://{host}:{}", self.port)
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Any route no provider module knows: recorded, answered 404 with the path, so a CLI that calls
/// something unexpected shows up in the test's failure message.
async fn unknown(
    axum::extract::State(state): axum::extract::State<Arc<ScriptState>>,
    method: axum::http::Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    let json = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    state.record(format!("{method} {uri}"), &headers, &json, "unknown");
    (
        StatusCode::NOT_FOUND,
        format!("scripted model: no route for {method} {uri}"),
    )
}
