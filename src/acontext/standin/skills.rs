//! Agent-skill routes: upload (ZIP), list, get, delete, files, material and ZIP downloads; the
//! project's configs.

use std::collections::BTreeMap;

use axum::extract::{Multipart, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::FakeSkill;
use super::sessions::St;
use super::wire::{
    err, ok, ok_msg, page_json, paginate, parse_frontmatter, skill_json, unzip, zip_files,
};

pub(super) async fn upload_skill(State(s): St, mut form: Multipart) -> Response {
    let mut zip_bytes = None;
    let mut meta = json!({});
    while let Ok(Some(field)) = form.next_field().await {
        match field.name() {
            Some("file") => {
                let name = field.file_name().unwrap_or("").to_string();
                if !name.ends_with(".zip") {
                    return err(StatusCode::BAD_REQUEST, "parameter error");
                }
                zip_bytes = field.bytes().await.ok();
            }
            Some("meta") => match field
                .text()
                .await
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
            {
                Some(m) => meta = m,
                None => return err(StatusCode::BAD_REQUEST, "invalid meta JSON format"),
            },
            _ => {}
        }
    }
    let Some(bytes) = zip_bytes else {
        return err(StatusCode::BAD_REQUEST, "parameter error");
    };
    let files = match unzip(&bytes) {
        Ok(f) => f,
        Err(_) => return err(StatusCode::BAD_REQUEST, "parameter error"),
    };
    let Some(md) = files
        .iter()
        .find(|(k, _)| k.to_lowercase().ends_with("skill.md"))
        .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
    else {
        return err(
            StatusCode::BAD_REQUEST,
            "SKILL.md file is required in the zip package",
        );
    };
    let (name, description) = match parse_frontmatter(&md) {
        Ok(x) => x,
        Err(e) => return err(StatusCode::BAD_REQUEST, &e),
    };
    let mut st = s.lock().expect("state");
    let id = st.new_id();
    let now = st.now();
    let skill = FakeSkill {
        id: id.clone(),
        name,
        description,
        meta,
        files,
        updated_at: now,
    };
    let out = skill_json(&skill);
    st.skills.insert(id.clone(), skill);
    st.skill_order.push(id);
    ok(out, StatusCode::CREATED)
}

pub(super) async fn list_skills(
    State(s): St,
    Query(q): Query<BTreeMap<String, String>>,
) -> Response {
    let st = s.lock().expect("state");
    let (page, next, more) = match paginate(&st.skill_order, &q) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let items = page
        .iter()
        .map(|id| {
            let mut v = skill_json(&st.skills[id]);
            v.as_object_mut().expect("object").remove("disk_id");
            v
        })
        .collect();
    ok(page_json(items, next, more), StatusCode::OK)
}

pub(super) async fn get_skill(State(s): St, Path(id): Path<String>) -> Response {
    let st = s.lock().expect("state");
    match st.skills.get(&id) {
        Some(k) => ok(skill_json(k), StatusCode::OK),
        None => (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"code": 500, "msg": "database error"})),
        )
            .into_response(),
    }
}

pub(super) async fn delete_skill(State(s): St, Path(id): Path<String>) -> Response {
    let mut st = s.lock().expect("state");
    st.skills.remove(&id);
    st.skill_order.retain(|k| k != &id);
    ok_msg()
}

/// `GET /agent_skills/{id}/file`: text content inline, anything else as an absolute material URL
/// (like the real server's presigned S3 URL: fetched without the API key, see
/// [`auth_log_faults`]) on the host the request came to.
pub(super) async fn skill_file(
    State(s): St,
    Path(id): Path<String>,
    Query(q): Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1")
        .to_string();
    let mut st = s.lock().expect("state");
    let Some(path) = q.get("file_path").cloned() else {
        return err(StatusCode::BAD_REQUEST, "parameter error");
    };
    let Some(bytes) = st.skills.get(&id).and_then(|k| k.files.get(&path)).cloned() else {
        return err(StatusCode::NOT_FOUND, "file not found");
    };
    match String::from_utf8(bytes.clone()) {
        Ok(text) => ok(
            json!({"path": path, "mime": "text/markdown", "content": {"type": "text", "raw": text}}),
            StatusCode::OK,
        ),
        Err(_) => {
            let token = st.new_id();
            st.materials.insert(token.clone(), bytes);
            // Released: the API's own material route; skill-bench: a presigned object-store URL.
            let url = if st.api.released() {
                format!("http://{host}/api/v1/material/{token}?X-Amz-Expires=900")
            } else {
                format!("http://{host}/presigned/{token}?X-Amz-Expires=900&X-Amz-Signature=standin")
            };
            ok(
                json!({"path": path, "mime": "application/octet-stream", "url": url}),
                StatusCode::OK,
            )
        }
    }
}

pub(super) async fn material(State(s): St, Path(token): Path<String>) -> Response {
    let st = s.lock().expect("state");
    match st.materials.get(&token) {
        Some(b) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/octet-stream")],
            b.clone(),
        )
            .into_response(),
        None => err(StatusCode::NOT_FOUND, "not found"),
    }
}

pub(super) async fn download_zip(State(s): St, Path(id): Path<String>) -> Response {
    let st = s.lock().expect("state");
    match st.skills.get(&id) {
        Some(k) => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "application/zip".to_string()),
                (
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"{}.zip\"", k.name),
                ),
            ],
            zip_files(&k.files),
        )
            .into_response(),
        None => err(StatusCode::NOT_FOUND, "skill not found"),
    }
}

pub(super) async fn get_configs(State(s): St) -> Response {
    let st = s.lock().expect("state");
    let mut v = Value::Object(st.configs.clone());
    v["encryption_enabled"] = json!(false);
    ok(v, StatusCode::OK)
}

pub(super) async fn patch_configs(State(s): St, axum::Json(body): axum::Json<Value>) -> Response {
    let mut st = s.lock().expect("state");
    let Some(obj) = body.as_object().filter(|o| !o.is_empty()) else {
        return err(StatusCode::BAD_REQUEST, "parameter error");
    };
    for key in ["task_success_criteria", "task_failure_criteria"] {
        if let Some(v) = obj.get(key).filter(|v| !v.is_null()) {
            match v.as_str() {
                Some(t) if t.chars().count() <= 2000 => {}
                Some(_) => {
                    return err(
                        StatusCode::BAD_REQUEST,
                        &format!("{key} exceeds max length (2000 chars)"),
                    );
                }
                None => return err(StatusCode::BAD_REQUEST, &format!("{key} must be a string")),
            }
        }
    }
    for (k, v) in obj {
        if v.is_null() {
            st.configs.remove(k);
        } else {
            st.configs.insert(k.clone(), v.clone());
        }
    }
    ok(Value::Object(st.configs.clone()), StatusCode::OK)
}
