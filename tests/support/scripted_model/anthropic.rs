//! The Anthropic Messages API (`POST /v1/messages`, with `stream: true` as server-sent events),
//! as Claude Code calls it through `ANTHROPIC_BASE_URL`. Event sequence per the Messages
//! streaming reference: `message_start`, then per content block `content_block_start`,
//! `content_block_delta` (`text_delta` or `input_json_delta`), `content_block_stop`, then
//! `message_delta` (stop reason, output tokens) and `message_stop`.
//!
//! The agent loop is the request that offers the `Bash` tool; its next move is read off the number
//! of `tool_result` blocks in `messages`. Other requests (titles, summaries) get a short text.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use super::{Next, ScriptState};

/// Routes: `POST /v1/messages` and `POST /v1/messages/count_tokens`. Anthropic's models
/// endpoints (`GET /v1/models`, `GET /v1/models/{model}`, what a preflight calls) share their
/// paths with OpenAI's and Gemini's: those handlers pass a request carrying `anthropic-version`
/// to [`model_list`] and [`model_info`].
pub fn routes() -> Router<Arc<ScriptState>> {
    Router::new()
        .route("/v1/messages", post(messages))
        .route("/v1/messages/count_tokens", post(count_tokens))
}

/// Whether a request is Anthropic's (it carries `anthropic-version`).
pub fn is_anthropic(headers: &HeaderMap) -> bool {
    headers.contains_key("anthropic-version")
}

/// `GET /v1/models/{model}`: the model, or 404; 401 for a key [`super::Script::accepts_key`]
/// refuses.
pub fn model_info(state: &ScriptState, model: &str, uri: &Uri, headers: &HeaderMap) -> Response {
    state.record(format!("GET {uri}"), headers, &Value::Null, "side");
    if let Some(status) = state.models_refusal(headers) {
        return (
            StatusCode::from_u16(status).unwrap(),
            axum::Json(error_body(status)),
        )
            .into_response();
    }
    if !state.knows(model) {
        return (StatusCode::NOT_FOUND, axum::Json(error_body(404))).into_response();
    }
    axum::Json(json!({
        "type": "model", "id": model, "display_name": model, "created_at": "2026-02-05T00:00:00Z",
    }))
    .into_response()
}

/// `GET /v1/models`: the script's models; 401 for a refused key.
pub fn model_list(state: &ScriptState, uri: &Uri, headers: &HeaderMap) -> Response {
    state.record(format!("GET {uri}"), headers, &Value::Null, "side");
    if let Some(status) = state.models_refusal(headers) {
        return (
            StatusCode::from_u16(status).unwrap(),
            axum::Json(error_body(status)),
        )
            .into_response();
    }
    let data: Vec<Value> = state
        .script
        .models
        .iter()
        .map(|m| json!({"type": "model", "id": m, "display_name": m}))
        .collect();
    axum::Json(json!({ "data": data, "has_more": false })).into_response()
}

async fn count_tokens(
    State(state): State<Arc<ScriptState>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    state.record(format!("POST {uri}"), &headers, &json, "side");
    axum::Json(json!({ "input_tokens": 100 })).into_response()
}

/// Number of `tool_result` blocks in the conversation.
fn tool_results(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .count()
}

fn offers_bash(body: &Value) -> bool {
    body["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "Bash"))
}

/// The error body Anthropic sends for `status`.
pub fn error_body(status: u16) -> Value {
    let (kind, message) = match status {
        401 => ("authentication_error", "invalid x-api-key"),
        403 => ("permission_error", "Your API key does not have permission"),
        404 => ("not_found_error", "model: not found"),
        429 => (
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
        ),
        529 => ("overloaded_error", "Overloaded"),
        _ => ("api_error", "Internal server error"),
    };
    json!({ "type": "error", "error": { "type": kind, "message": message } })
}

async fn messages(
    State(state): State<Arc<ScriptState>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let line = format!("POST {uri}");
    if let Some(status) = state.failure() {
        state.record(line, &headers, &json, &format!("error {status}"));
        let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return (
            code,
            [("retry-after", "0"), ("x-should-retry", "false")],
            axum::Json(error_body(status)),
        )
            .into_response();
    }
    let model = json["model"].as_str().unwrap_or("claude").to_string();
    let stream = json["stream"].as_bool().unwrap_or(false);
    let (blocks, stop, label) = if offers_bash(&json) {
        state.hold(tool_results(&json)).await;
        let (next, label) = state.next_for(&json, tool_results(&json));
        match next {
            Next::Command { index, command } => (
                vec![
                    json!({ "type": "text", "text": format!("Running step {}.", index + 1) }),
                    json!({
                        "type": "tool_use",
                        "id": format!("toolu_scripted_{index:02}"),
                        "name": "Bash",
                        "input": { "command": command, "description": format!("step {}", index + 1) },
                    }),
                ],
                "tool_use",
                label,
            ),
            Next::Final(text) => (
                vec![json!({ "type": "text", "text": text })],
                "end_turn",
                label,
            ),
        }
    } else {
        (
            vec![json!({ "type": "text", "text": "Scripted task" })],
            "end_turn",
            "side".to_string(),
        )
    };
    state.record(line, &headers, &json, &label);
    let u = state.script.usage;
    let usage = json!({
        "input_tokens": u.input,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": u.cached,
        "output_tokens": u.output,
    });
    let id = format!("msg_scripted_{}", uuid_like(&state));
    if !stream {
        return axum::Json(json!({
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": blocks, "stop_reason": stop, "stop_sequence": null, "usage": usage,
        }))
        .into_response();
    }
    let mut sse = String::new();
    let mut event = |name: &str, data: Value| {
        sse.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    let mut start_usage = usage.clone();
    start_usage["output_tokens"] = json!(1);
    event(
        "message_start",
        json!({ "type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null, "usage": start_usage,
        }}),
    );
    for (i, b) in blocks.iter().enumerate() {
        if b["type"] == "tool_use" {
            event(
                "content_block_start",
                json!({ "type": "content_block_start", "index": i, "content_block": {
                    "type": "tool_use", "id": b["id"], "name": b["name"], "input": {} }}),
            );
            event(
                "content_block_delta",
                json!({ "type": "content_block_delta", "index": i, "delta": {
                    "type": "input_json_delta", "partial_json": b["input"].to_string() }}),
            );
        } else {
            event(
                "content_block_start",
                json!({ "type": "content_block_start", "index": i,
                    "content_block": { "type": "text", "text": "" }}),
            );
            event(
                "content_block_delta",
                json!({ "type": "content_block_delta", "index": i,
                    "delta": { "type": "text_delta", "text": b["text"] }}),
            );
        }
        event(
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": i }),
        );
    }
    event(
        "message_delta",
        json!({ "type": "message_delta", "delta": { "stop_reason": stop, "stop_sequence": null },
            "usage": { "output_tokens": u.output }}),
    );
    event("message_stop", json!({ "type": "message_stop" }));
    ([(header::CONTENT_TYPE, "text/event-stream")], sse).into_response()
}

/// A per-server message counter (ids only need to be distinct).
fn uuid_like(state: &ScriptState) -> usize {
    state.requests.lock().unwrap().len()
}
