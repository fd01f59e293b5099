//! The Gemini API (`generativelanguage` v1beta), as Gemini CLI 0.61.0 calls it through
//! `GOOGLE_GEMINI_BASE_URL` with the `@google/genai` SDK (1.30):
//! - `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` — the agent loop. The answer is
//!   server-sent events, each `data: <GenerateContentResponse JSON>` followed by a blank line; one
//!   event carries the whole reply here.
//! - `POST /v1beta/models/<model>:generateContent` — side requests: the model router's complexity
//!   classifier (with `--model` unset or `auto`), the next-speaker check and the loop detector
//!   (both off or rare in headless runs), each with `generationConfig.responseJsonSchema` and no
//!   tools; chat compression, plain text.
//! - `POST /v1beta/models/<model>:countTokens` — `{"totalTokens": N}`.
//!
//! The key arrives in the `x-goog-api-key` header. The agent loop is a request that offers the
//! `run_shell_command` function; its next move is read off the number of `functionResponse` parts
//! in `contents`. Side requests are answered with a JSON object filling their schema (an `enum`
//! takes `"user"` when offered, so a next-speaker check hands the turn back; numbers are 0, so a
//! loop detector sees no loop; integers 1, so the router calls the task simple) or a short text.
//!
//! Gemini CLI rejects a reply with neither text nor a function call (`InvalidStreamError`, then
//! retries), so every answer has one of them.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};

use super::{Next, ScriptState};

/// The shell tool Gemini CLI offers (`{command, description?, dir_path?, is_background?}`).
pub const SHELL_TOOL: &str = "run_shell_command";

/// Routes: everything under `/v1beta/models/` and `/v1/models/` (`<model>:<method>` is one path
/// segment, so a catch-all dispatches on the suffix).
pub fn routes() -> Router<Arc<ScriptState>> {
    Router::new()
        .route("/v1beta/models/{*rest}", post(model_call).get(model_info))
        .route("/v1/models/{*rest}", post(model_call).get(model_info))
        .route("/v1beta/models", get(model_list))
}

/// What Google answers for `status` (the `google.rpc.Status` JSON error body).
pub fn error_body(status: u16) -> Value {
    let (rpc, message) = match status {
        400 => ("INVALID_ARGUMENT", "Request contains an invalid argument."),
        401 => (
            "UNAUTHENTICATED",
            "API key not valid. Please pass a valid API key.",
        ),
        403 => (
            "PERMISSION_DENIED",
            "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
        ),
        404 => ("NOT_FOUND", "Requested entity was not found."),
        429 => (
            "RESOURCE_EXHAUSTED",
            "Resource has been exhausted (e.g. check quota).",
        ),
        503 => (
            "UNAVAILABLE",
            "The model is overloaded. Please try again later.",
        ),
        _ => ("INTERNAL", "Internal error encountered."),
    };
    json!({ "error": { "code": status, "message": message, "status": rpc } })
}

/// Number of `functionResponse` parts in the conversation.
fn tool_results(body: &Value) -> usize {
    body["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["parts"].as_array())
        .flatten()
        .filter(|p| p.get("functionResponse").is_some())
        .count()
}

/// True when the request offers the shell tool (the agent loop).
fn offers_shell(body: &Value) -> bool {
    body["tools"].as_array().into_iter().flatten().any(|t| {
        t["functionDeclarations"]
            .as_array()
            .is_some_and(|d| d.iter().any(|d| d["name"] == SHELL_TOOL))
    })
}

/// A value satisfying a (Gemini-flavoured, upper- or lowercase) JSON schema: `"user"` for an enum
/// offering it, else the enum's first value; `"scripted"`, 0, 1, false, `[]`, objects filled.
fn fill_schema(schema: &Value) -> Value {
    if let Some(options) = schema["enum"].as_array() {
        return options
            .iter()
            .find(|v| *v == "user")
            .or_else(|| options.first())
            .cloned()
            .unwrap_or(Value::Null);
    }
    match schema["type"]
        .as_str()
        .unwrap_or("object")
        .to_ascii_lowercase()
        .as_str()
    {
        "string" => json!("scripted"),
        "number" => json!(0),
        "integer" => json!(1),
        "boolean" => json!(false),
        "array" => json!([]),
        _ => {
            let mut out = Map::new();
            if let Some(props) = schema["properties"].as_object() {
                for (k, v) in props {
                    out.insert(k.clone(), fill_schema(v));
                }
            }
            Value::Object(out)
        }
    }
}

/// The model name and method of `<model>:<method>`.
fn split_rest(rest: &str) -> (&str, &str) {
    let rest = rest.trim_start_matches('/');
    rest.rsplit_once(':').unwrap_or((rest, ""))
}

/// `usageMetadata` from the script's per-response usage.
fn usage_metadata(state: &ScriptState) -> Value {
    let u = state.script.usage;
    let prompt = u.input + u.cached;
    json!({
        "promptTokenCount": prompt,
        "cachedContentTokenCount": u.cached,
        "candidatesTokenCount": u.output,
        "totalTokenCount": prompt + u.output,
    })
}

/// One `GenerateContentResponse`.
fn response(state: &ScriptState, model: &str, parts: Value) -> Value {
    json!({
        "candidates": [{
            "content": { "role": "model", "parts": parts },
            "finishReason": "STOP",
            "index": 0,
        }],
        "usageMetadata": usage_metadata(state),
        "modelVersion": model,
        "responseId": "scripted",
    })
}

fn sse(body: &Value) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        format!("data: {body}\r\n\r\n"),
    )
        .into_response()
}

async fn model_call(
    State(state): State<Arc<ScriptState>>,
    Path(rest): Path<String>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let line = format!("POST {uri}");
    let (model, method) = split_rest(&rest);
    let model = model.to_string();
    match method {
        "countTokens" => {
            state.record(line, &headers, &json, "side");
            let chars = body.len() as u64;
            return axum::Json(json!({ "totalTokens": (chars / 4).max(1) })).into_response();
        }
        "streamGenerateContent" | "generateContent" => {}
        _ => {
            state.record(line, &headers, &json, "unknown");
            return (StatusCode::NOT_FOUND, axum::Json(error_body(404))).into_response();
        }
    }
    if let Some(status) = state.failure() {
        state.record(line, &headers, &json, &format!("error {status}"));
        let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return (code, axum::Json(error_body(status))).into_response();
    }
    let streaming = method == "streamGenerateContent";
    let reply = if offers_shell(&json) {
        state.hold(tool_results(&json)).await;
        let (next, label) = state.next_for(&json, tool_results(&json));
        state.record(line, &headers, &json, &label);
        let parts = match next {
            Next::Command { index, command } => json!([{
                "functionCall": {
                    "name": SHELL_TOOL,
                    "args": { "command": command, "description": format!("scripted step {}", index + 1) },
                }
            }]),
            Next::Final(text) => json!([{ "text": text }]),
        };
        response(&state, &model, parts)
    } else {
        state.record(line, &headers, &json, "side");
        let schema = json
            .pointer("/generationConfig/responseJsonSchema")
            .or_else(|| json.pointer("/generationConfig/responseSchema"));
        let text = match schema {
            Some(s) => fill_schema(s).to_string(),
            None => "Scripted side answer.".to_string(),
        };
        response(&state, &model, json!([{ "text": text }]))
    };
    if streaming {
        sse(&reply)
    } else {
        axum::Json(reply).into_response()
    }
}

/// `GET /v1beta/models/<model>`: a minimal model resource.
async fn model_info(
    State(state): State<Arc<ScriptState>>,
    Path(rest): Path<String>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    if super::anthropic::is_anthropic(&headers) {
        return super::anthropic::model_info(&state, rest.trim_start_matches('/'), &uri, &headers);
    }
    if super::openai::is_openai(&headers) {
        return super::openai::model_info(&state, rest.trim_start_matches('/'), &uri, &headers);
    }
    state.record(format!("GET {uri}"), &headers, &Value::Null, "side");
    let (model, _) = split_rest(&rest);
    // Gemini answers a bad key with 400 INVALID_ARGUMENT "API key not valid".
    if state.models_refusal(&headers).is_some() {
        let mut body = error_body(400);
        body["error"]["message"] = json!("API key not valid. Please pass a valid API key.");
        return (StatusCode::BAD_REQUEST, axum::Json(body)).into_response();
    }
    if !state.knows(model) {
        return (StatusCode::NOT_FOUND, axum::Json(error_body(404))).into_response();
    }
    axum::Json(json!({
        "name": format!("models/{model}"),
        "inputTokenLimit": 1_048_576,
        "outputTokenLimit": 65_536,
    }))
    .into_response()
}

/// `GET /v1beta/models`: an empty list.
async fn model_list(
    State(state): State<Arc<ScriptState>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    state.record(format!("GET {uri}"), &headers, &Value::Null, "side");
    axum::Json(json!({ "models": [] })).into_response()
}
