//! Session routes: create, delete, messages, flush (the stand-in task agent), tasks and the
//! status PATCH.

use std::collections::BTreeMap;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::learner::{marker_in, on_terminal_status};
use super::wire::{err, ok, ok_msg, page_json, paginate, session_json, task_json};
use super::{FakeSession, FakeTask, Shared};

pub(super) type St = State<Shared>;

pub(super) async fn create_session(State(s): St, axum::Json(body): axum::Json<Value>) -> Response {
    let mut st = s.lock().expect("state");
    let id = match body.get("use_uuid").and_then(Value::as_str) {
        Some(u) => match uuid::Uuid::parse_str(u) {
            Ok(u) => u.to_string(),
            Err(_) => return err(StatusCode::BAD_REQUEST, "invalid UUID format for use_uuid"),
        },
        None => st.new_id(),
    };
    if let Some(existing) = st.sessions.get(&id) {
        // Servers before main's 200-on-existing (the skill-bench branch among them) answer 409.
        if st.legacy_409 || !st.api.released() {
            return err(
                StatusCode::CONFLICT,
                "session with this UUID already exists",
            );
        }
        return ok(
            session_json(existing, st.api.status_patch()),
            StatusCode::OK,
        );
    }
    let manual = st.api.status_patch()
        && body
            .get("disable_task_status_change")
            .and_then(Value::as_bool)
            .unwrap_or(false);
    let created_at = st.now();
    let sess = FakeSession {
        id: id.clone(),
        configs: body.get("configs").cloned().unwrap_or(json!({})),
        manual_status: manual,
        no_tracking: body
            .get("disable_task_tracking")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        created_at,
        ..Default::default()
    };
    let out = session_json(&sess, st.api.status_patch());
    st.sessions.insert(id.clone(), sess);
    st.session_order.push(id);
    ok(out, StatusCode::CREATED)
}

pub(super) async fn delete_session(State(s): St, Path(id): Path<String>) -> Response {
    let mut st = s.lock().expect("state");
    if st.sessions.remove(&id).is_none() {
        return err(StatusCode::NOT_FOUND, "session not found");
    }
    st.session_order.retain(|x| x != &id);
    if let Some(space) = st.session_space.remove(&id)
        && let Some(sp) = st.spaces.get_mut(&space)
    {
        sp.sessions.remove(&id);
        sp.order.retain(|x| x != &id);
    }
    ok_msg()
}

pub(super) async fn store_message(
    State(s): St,
    Path(id): Path<String>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let mut st = s.lock().expect("state");
    let Some(blob) = body.get("blob").cloned() else {
        return err(StatusCode::BAD_REQUEST, "parameter error");
    };
    let format = body
        .get("format")
        .and_then(Value::as_str)
        .unwrap_or("openai");
    if !["acontext", "openai", "anthropic", "gemini"].contains(&format) {
        return err(StatusCode::BAD_REQUEST, "parameter error");
    }
    let mid = st.new_id();
    let now = st.now();
    let Some(sess) = st.sessions.get_mut(&id) else {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"code": 500, "msg": "database error", "error": "session not found"})),
        )
            .into_response();
    };
    let mut stored = blob.clone();
    stored["meta"] = body.get("meta").cloned().unwrap_or(json!({}));
    stored["id"] = json!(mid);
    stored["created_at"] = json!(now);
    sess.messages.push(stored);
    let text = blob.get("content").and_then(Value::as_str).unwrap_or("");
    // A session without task tracking never hands its messages to the task agent.
    let process = if sess.no_tracking {
        "disable_tracking"
    } else {
        "pending"
    };
    ok(
        json!({"id": mid, "session_id": id, "parent_id": null, "role": blob.get("role").cloned().unwrap_or(json!("user")),
               "meta": body.get("meta").cloned().unwrap_or(json!({})), "parts": [{"type": "text", "text": text}],
               "task_id": null, "session_task_process_status": process, "created_at": now, "updated_at": now}),
        StatusCode::CREATED,
    )
}

/// `GET /session/{id}/messages` as `converter.GetMessagesOutput`: `items` in the requested
/// `format` (`acontext` Message objects, or `{role, content}` for the provider formats), their
/// `ids` and `metas`, `this_time_tokens` (the returned text's length / 4, rounded up, standing in
/// for the server's tokenizer), and cursor pagination — all messages without `limit` (or with
/// `limit = 0`), else pages of `limit` (≤ 200) with `next_cursor` and `has_more`.
pub(super) async fn get_messages(
    State(s): St,
    Path(id): Path<String>,
    Query(q): Query<BTreeMap<String, String>>,
) -> Response {
    let st = s.lock().expect("state");
    let Some(sess) = st.sessions.get(&id) else {
        return err(StatusCode::NOT_FOUND, "session not found");
    };
    let format = q.get("format").map(String::as_str).unwrap_or("openai");
    if !["acontext", "openai", "anthropic", "gemini"].contains(&format) {
        return err(StatusCode::BAD_REQUEST, "parameter error");
    }
    let ids: Vec<String> = sess
        .messages
        .iter()
        .map(|m| m["id"].as_str().unwrap_or_default().to_string())
        .collect();
    let (page, next, more) = match q.get("limit").map(String::as_str) {
        None | Some("0") => (ids.clone(), None, false),
        Some(_) => match paginate(&ids, &q) {
            Ok(p) => p,
            Err(r) => return *r,
        },
    };
    let picked: Vec<&Value> = page
        .iter()
        .filter_map(|mid| sess.messages.iter().find(|m| m["id"] == mid.as_str()))
        .collect();
    let text_of = |m: &Value| m["content"].as_str().unwrap_or_default().to_string();
    let process = if sess.no_tracking {
        "disable_tracking"
    } else {
        "success"
    };
    let items: Vec<Value> = picked
        .iter()
        .map(|m| {
            if format == "acontext" {
                json!({"id": m["id"], "session_id": id, "parent_id": null, "role": m["role"],
                       "meta": m["meta"], "parts": [{"type": "text", "text": text_of(m)}],
                       "task_id": null, "session_task_process_status": process,
                       "created_at": m["created_at"], "updated_at": m["created_at"]})
            } else {
                json!({"role": m["role"], "content": text_of(m)})
            }
        })
        .collect();
    let tokens: usize = picked.iter().map(|m| text_of(m).len().div_ceil(4)).sum();
    let mut data = json!({
        "items": items,
        "ids": page,
        "metas": picked.iter().map(|m| m["meta"].clone()).collect::<Vec<_>>(),
        "has_more": more,
        "this_time_tokens": tokens,
    });
    if let Some(n) = next {
        data["next_cursor"] = json!(n);
    }
    if format == "acontext" {
        data["public_urls"] = json!({});
    }
    ok(data, StatusCode::OK)
}

pub(super) async fn flush(State(s): St, Path(id): Path<String>) -> Response {
    let mut st = s.lock().expect("state");
    let success_marker = st
        .configs
        .get("task_success_criteria")
        .and_then(Value::as_str)
        .and_then(marker_in);
    let failure_marker = st
        .configs
        .get("task_failure_criteria")
        .and_then(Value::as_str)
        .and_then(marker_in);
    let mislabel = st.mislabel;
    let never_resolve = st.never_resolve;
    let tid = st.new_id();
    let Some(sess) = st.sessions.get_mut(&id) else {
        return err(StatusCode::NOT_FOUND, "session not found");
    };
    if sess.no_tracking {
        // Task tracking off: the messages are kept, no task agent runs.
        return ok(json!({"status": 200, "errmsg": ""}), StatusCode::OK);
    }
    if sess.tasks.is_empty() {
        let description = sess
            .messages
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .and_then(|c| c.lines().find(|l| !l.trim().is_empty()))
            .unwrap_or("task")
            .to_string();
        sess.tasks.push(FakeTask {
            id: tid,
            order: 1,
            description,
            status: "running".into(),
        });
    }
    let assistant: String = sess
        .messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m["content"].as_str())
        .collect();
    let mut decided = None;
    if !sess.manual_status && !never_resolve {
        if mislabel
            || success_marker
                .as_ref()
                .is_some_and(|m| assistant.contains(m.as_str()))
        {
            decided = Some("success");
        } else if failure_marker
            .as_ref()
            .is_some_and(|m| assistant.contains(m.as_str()))
        {
            decided = Some("failed");
        }
    }
    if let Some(d) = decided {
        for t in &mut sess.tasks {
            t.status = d.into();
        }
        on_terminal_status(&mut st, &id);
    }
    ok(json!({"status": 200, "errmsg": ""}), StatusCode::OK)
}

/// The quoted marker a criteria text names (`… contains "VERDICT: PASS" …`).
pub(super) async fn get_tasks(
    State(s): St,
    Path(id): Path<String>,
    Query(q): Query<BTreeMap<String, String>>,
) -> Response {
    let st = s.lock().expect("state");
    let Some(sess) = st.sessions.get(&id) else {
        return err(StatusCode::NOT_FOUND, "session not found");
    };
    let ids: Vec<String> = sess.tasks.iter().map(|t| t.id.clone()).collect();
    let (page, next, more) = match paginate(&ids, &q) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let items = page
        .iter()
        .filter_map(|tid| sess.tasks.iter().find(|t| &t.id == tid))
        .map(|t| task_json(&id, t))
        .collect();
    ok(page_json(items, next, more), StatusCode::OK)
}

pub(super) async fn patch_task_status(
    State(s): St,
    Path((sid, tid)): Path<(String, String)>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let mut st = s.lock().expect("state");
    let status = body.get("status").and_then(Value::as_str).unwrap_or("");
    if !["success", "failed", "running", "pending"].contains(&status) {
        return err(
            StatusCode::BAD_REQUEST,
            "invalid status value, must be one of: success, failed, running, pending",
        );
    }
    let Some(sess) = st.sessions.get_mut(&sid) else {
        return err(
            StatusCode::NOT_FOUND,
            "task not found or does not belong to this session",
        );
    };
    let Some(task) = sess.tasks.iter_mut().find(|t| t.id == tid) else {
        return err(
            StatusCode::NOT_FOUND,
            "task not found or does not belong to this session",
        );
    };
    task.status = status.into();
    let out = task_json(&sid, task);
    if status == "success" || status == "failed" {
        on_terminal_status(&mut st, &sid);
    }
    ok(out, StatusCode::OK)
}
