//! OpenAI Responses API, as Codex CLI calls it: `POST /v1/responses` with `stream: true`, answered
//! as server-sent events (`event: <type>\ndata: <json>\n\n`).
//!
//! Observed with `@openai/codex@0.169.0` (`codex exec --json`, custom model provider with
//! `wire_api = "responses"`, `supports_websockets = false`): the request body is `{model, stream:
//! true, input: [...], tools: [...], tool_choice: "auto", parallel_tool_calls, reasoning:
//! {summary}, store: false, include: ["reasoning.encrypted_content"], prompt_cache_key,
//! client_metadata}`; the shell tool it offers is the function `exec_command` with arguments
//! `{"cmd": "<shell command>", "workdir"?, "login"?, "tty"?, "yield_time_ms"?, …}` (only `cmd` is
//! required). It runs the command as `/bin/bash -lc '<cmd>'` and sends the result back as an
//! `input` item `{"type": "function_call_output", "call_id", "output": "Chunk ID: …\nWall time:
//! …\nProcess exited with code N\nOriginal token count: …\nOutput:\n…"}`. The built-in `openai`
//! provider first tries a WebSocket upgrade (`GET /v1/responses`, five times) before falling back
//! to this; those GETs are recorded as `unknown` and refused with 404.
//!
//! A reply is `response.created`, then per output item `response.output_item.added` and
//! `response.output_item.done` (a `reasoning` item with a summary, then a `function_call` to
//! `exec_command` or an assistant `message` with `output_text`), then `response.completed`
//! carrying `usage {input_tokens (cached included), input_tokens_details {cached_tokens},
//! output_tokens (reasoning included), output_tokens_details {reasoning_tokens}, total_tokens}`.
//! Reasoning tokens are reported as a fifth of the output tokens.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::{Next, ScriptState};

/// The shell tool Codex 0.169 offers (unified exec).
pub const SHELL_TOOL: &str = "exec_command";

/// Model id the fake `GET /v1/models` lists.
const LISTED_MODEL: &str = "gpt-5.2";

/// Routes of this provider: `POST /v1/responses` (and `/responses`), `GET /v1/models` (and
/// `/models`); a `GET` on the responses path (a WebSocket upgrade) is recorded and refused.
pub fn routes() -> Router<Arc<ScriptState>> {
    Router::new()
        .route("/v1/responses", post(responses).get(refuse_websocket))
        .route("/responses", post(responses).get(refuse_websocket))
        .route("/v1/models", get(models))
        .route("/models", get(models))
}

/// `POST …/responses`.
async fn responses(
    State(state): State<Arc<ScriptState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let line = format!("{method} {uri}");
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if let Some(status) = state.failure() {
        state.record(line, &headers, &json, &format!("error {status}"));
        return error_response(status);
    }
    let model = json
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or(LISTED_MODEL)
        .to_string();
    let offers_tools = json
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    if !offers_tools {
        state.record(line, &headers, &json, "side");
        let item = message_item("side", "OK.");
        return sse(stream_for(&state, &model, "side", vec![item]));
    }
    let results = tool_results(&json);
    state.hold(results).await;
    let (next, label) = state.next_for(&json, results);
    state.record(line, &headers, &json, &label);
    let tag = format!("t{results}");
    let items = match next {
        Next::Command { index, command } => vec![
            json!({
                "type": "reasoning",
                "id": format!("rs_{tag}"),
                "summary": [{
                    "type": "summary_text",
                    "text": format!("Running scripted command {}.", index + 1),
                }],
            }),
            json!({
                "type": "function_call",
                "id": format!("fc_{tag}"),
                "call_id": format!("call_{tag}"),
                "name": SHELL_TOOL,
                "arguments": json!({ "cmd": command }).to_string(),
                "status": "completed",
            }),
        ],
        Next::Final(text) => vec![message_item(&tag, text)],
    };
    sse(stream_for(&state, &model, &tag, items))
}

/// Number of tool results in a request's `input`.
fn tool_results(body: &Value) -> usize {
    body.get("input")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter(|i| {
                    matches!(
                        i.get("type").and_then(Value::as_str),
                        Some("function_call_output" | "custom_tool_call_output")
                    )
                })
                .count()
        })
        .unwrap_or(0)
}

/// An assistant message output item.
fn message_item(tag: &str, text: &str) -> Value {
    json!({
        "type": "message",
        "id": format!("msg_{tag}"),
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    })
}

/// The SSE body: created, each item added and done, completed with usage.
fn stream_for(state: &ScriptState, model: &str, tag: &str, items: Vec<Value>) -> String {
    let id = format!("resp_{tag}");
    let u = state.script.usage;
    let input = u.input + u.cached;
    let reasoning = u.output / 5;
    let mut out = String::new();
    let mut seq = 0u64;
    let mut event = |kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(seq);
        seq += 1;
        out.push_str(&format!("event: {kind}\ndata: {data}\n\n"));
    };
    let skeleton = |status: &str, output: Value| {
        json!({
            "id": id,
            "object": "response",
            "created_at": 1_767_225_600,
            "status": status,
            "model": model,
            "output": output,
        })
    };
    event(
        "response.created",
        json!({ "response": skeleton("in_progress", json!([])) }),
    );
    for (i, item) in items.iter().enumerate() {
        let mut added = item.clone();
        added["status"] = json!("in_progress");
        event(
            "response.output_item.added",
            json!({ "output_index": i, "item": added }),
        );
        if item.get("type").and_then(Value::as_str) == Some("message") {
            let text = item["content"][0]["text"].clone();
            event(
                "response.output_text.delta",
                json!({ "output_index": i, "item_id": item["id"], "content_index": 0, "delta": text }),
            );
        }
        event(
            "response.output_item.done",
            json!({ "output_index": i, "item": item }),
        );
    }
    let mut done = skeleton("completed", Value::Array(items));
    done["usage"] = json!({
        "input_tokens": input,
        "input_tokens_details": { "cached_tokens": u.cached },
        "output_tokens": u.output,
        "output_tokens_details": { "reasoning_tokens": reasoning },
        "total_tokens": input + u.output,
    });
    event("response.completed", json!({ "response": done }));
    out
}

/// `200 text/event-stream` with `body`.
fn sse(body: String) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// OpenAI's error body for `status`.
fn error_response(status: u16) -> Response {
    let (message, kind, code) = match status {
        401 => (
            "Incorrect API key provided: sk-****. You can find your API key at \
             https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            json!("invalid_api_key"),
        ),
        403 => (
            "You are not allowed to sample from this model",
            "invalid_request_error",
            json!("model_not_allowed"),
        ),
        429 => (
            "Rate limit reached for requests in organization org-scripted on requests per min \
             (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.",
            "requests",
            json!("rate_limit_exceeded"),
        ),
        500..=599 => (
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            Value::Null,
        ),
        404 => (
            "The model does not exist or you do not have access to it.",
            "invalid_request_error",
            json!("model_not_found"),
        ),
        _ => ("Scripted failure.", "invalid_request_error", Value::Null),
    };
    let body = json!({
        "error": { "message": message, "type": kind, "param": null, "code": code }
    });
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// `GET …/models`: a plausible OpenAI model list (never failed: not a model request).
async fn models(State(state): State<Arc<ScriptState>>, uri: Uri, headers: HeaderMap) -> Response {
    if super::anthropic::is_anthropic(&headers) {
        return super::anthropic::model_list(&state, &uri, &headers);
    }
    state.record(format!("GET {uri}"), &headers, &Value::Null, "side");
    if let Some(status) = state.models_refusal(&headers) {
        return error_response(status);
    }
    let mut ids: Vec<String> = vec![LISTED_MODEL.into(), "gpt-5-mini".into()];
    ids.extend(state.script.models.iter().cloned());
    ids.dedup();
    let data: Vec<Value> = ids
        .iter()
        .map(|id| json!({ "id": id, "object": "model", "created": 1_765_000_000, "owned_by": "openai" }))
        .collect();
    let body = json!({ "object": "list", "data": data });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// `GET /v1/models/{model}` (routed here by the Gemini module, which owns the path, for a
/// request carrying `Authorization: Bearer`): the model, 404 `model_not_found`, or 401 for a key
/// [`super::Script::accepts_key`] refuses.
pub fn model_info(state: &ScriptState, model: &str, uri: &Uri, headers: &HeaderMap) -> Response {
    state.record(format!("GET {uri}"), headers, &Value::Null, "side");
    if let Some(status) = state.models_refusal(headers) {
        return error_response(status);
    }
    if !state.knows(model) {
        return error_response(404);
    }
    axum::Json(
        json!({ "id": model, "object": "model", "created": 1_765_000_000, "owned_by": "openai" }),
    )
    .into_response()
}

/// Whether a request is OpenAI's (`Authorization: Bearer`, no `anthropic-version`).
pub fn is_openai(headers: &HeaderMap) -> bool {
    !super::anthropic::is_anthropic(headers)
        && headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("Bearer "))
}

/// `GET …/responses`: the built-in provider's WebSocket upgrade; refused so Codex falls back to
/// HTTP SSE.
async fn refuse_websocket(
    State(state): State<Arc<ScriptState>>,
    uri: Uri,
    headers: HeaderMap,
) -> (StatusCode, &'static str) {
    state.record(format!("GET {uri}"), &headers, &Value::Null, "unknown");
    (
        StatusCode::NOT_FOUND,
        "scripted model: no WebSocket transport; use supports_websockets = false",
    )
}
