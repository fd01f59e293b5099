//! The wire: the `{code, data, msg}` envelope, the JSON shapes of sessions, tasks, skills and
//! spaces, cursor pagination, SKILL.md frontmatter and ZIPs.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{FakeSession, FakeSkill, FakeSpace, FakeTask};

pub(super) fn ok(data: Value, status: StatusCode) -> Response {
    (
        status,
        axum::Json(json!({"code": 0, "data": data, "msg": ""})),
    )
        .into_response()
}

pub(super) fn ok_msg() -> Response {
    (StatusCode::OK, axum::Json(json!({"code": 0, "msg": "ok"}))).into_response()
}

pub(super) fn err(status: StatusCode, msg: &str) -> Response {
    (
        status,
        axum::Json(json!({"code": status.as_u16(), "msg": msg})),
    )
        .into_response()
}

pub(super) fn session_json(s: &FakeSession, status_patch: bool) -> Value {
    let mut v = json!({
        "id": s.id, "project_id": "p-1", "user_id": "", "configs": s.configs,
        "disable_task_tracking": s.no_tracking, "created_at": s.created_at, "updated_at": s.created_at
    });
    if status_patch {
        v["disable_task_status_change"] = json!(s.manual_status);
    }
    v
}

pub(super) fn task_json(session: &str, t: &FakeTask) -> Value {
    json!({"id": t.id, "session_id": session, "project_id": "p-1", "order": t.order,
           "data": {"task_description": t.description, "progresses": []}, "status": t.status,
           "is_planning": false, "created_at": "2026-11-21T10:00:00Z", "updated_at": "2026-11-21T10:00:00Z"})
}

pub(super) fn skill_json(k: &FakeSkill) -> Value {
    json!({"id": k.id, "user_id": "", "name": k.name, "description": k.description, "disk_id": format!("disk-{}", k.id),
           "file_index": k.files.keys().map(|p| json!({"path": p, "mime": if p.ends_with(".md") { "text/markdown" } else { "text/plain" }})).collect::<Vec<_>>(),
           "meta": k.meta, "created_at": "2026-11-21T10:00:00Z", "updated_at": k.updated_at})
}

pub(super) fn space_json(s: &FakeSpace) -> Value {
    json!({"id": s.id, "user_id": "", "meta": s.meta, "created_at": "2026-11-21T10:00:00Z", "updated_at": "2026-11-21T10:00:00Z"})
}

pub(super) fn ls_session_json(space: &str, session: &str, status: &str) -> Value {
    json!({"id": format!("lss-{session}"), "learning_space_id": space, "session_id": session, "status": status,
           "created_at": "2026-11-21T10:00:00Z", "updated_at": "2026-11-21T10:00:00Z"})
}

/// Pagination over ids: (page, next_cursor, has_more), or an error response.
pub(super) fn paginate(
    ids: &[String],
    q: &BTreeMap<String, String>,
) -> Result<(Vec<String>, Option<String>, bool), Box<Response>> {
    let limit: usize = match q.get("limit") {
        Some(l) => match l.parse::<usize>() {
            Ok(n) if (1..=200).contains(&n) => n,
            _ => return Err(Box::new(err(StatusCode::BAD_REQUEST, "parameter error"))),
        },
        None => 20,
    };
    let start = match q.get("cursor") {
        Some(c) => match c.strip_prefix('c').and_then(|n| n.parse::<usize>().ok()) {
            Some(n) => n,
            None => {
                return Err(Box::new(err(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "database error",
                )));
            }
        },
        None => 0,
    };
    let page: Vec<String> = ids.iter().skip(start).take(limit).cloned().collect();
    let more = start + limit < ids.len();
    Ok((page, more.then(|| format!("c{}", start + limit)), more))
}

pub(super) fn page_json(items: Vec<Value>, next: Option<String>, more: bool) -> Value {
    let mut v = json!({"items": items, "has_more": more});
    if let Some(n) = next {
        v["next_cursor"] = json!(n);
    }
    v
}

pub(super) fn parse_frontmatter(md: &str) -> Result<(String, String), String> {
    let rest = md
        .trim_start_matches('\u{feff}')
        .strip_prefix("---")
        .ok_or("SKILL.md must contain YAML front matter")?;
    let end = rest
        .find("\n---")
        .ok_or("SKILL.md must contain YAML front matter")?;
    let y: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&rest[..end]).map_err(|e| format!("parse SKILL.md YAML: {e}"))?;
    let name = y
        .get("name")
        .and_then(|v| v.as_str())
        .filter(|s| !s.is_empty())
        .ok_or("name is required in SKILL.md")?;
    let desc = y
        .get("description")
        .and_then(|v| v.as_str())
        .filter(|s| !s.is_empty())
        .ok_or("description is required in SKILL.md")?;
    Ok((name.to_string(), desc.to_string()))
}

pub(super) fn unzip(bytes: &[u8]) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut z = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| e.to_string())?;
    let mut files = BTreeMap::new();
    for i in 0..z.len() {
        let mut f = z.by_index(i).map_err(|e| e.to_string())?;
        if f.is_dir() {
            continue;
        }
        let name = f.name().map_err(|e| e.to_string())?.to_string();
        if name.contains("__MACOSX") || name.ends_with(".DS_Store") {
            continue;
        }
        let mut buf = Vec::new();
        f.read_to_end(&mut buf).map_err(|e| e.to_string())?;
        files.insert(name, buf);
    }
    // Strip a shared top-level folder.
    let tops: std::collections::BTreeSet<&str> = files
        .keys()
        .map(|k| k.split('/').next().unwrap_or(""))
        .collect();
    if tops.len() == 1 && files.keys().all(|k| k.contains('/')) {
        let top = format!("{}/", tops.into_iter().next().unwrap_or_default());
        files = files
            .into_iter()
            .map(|(k, v)| (k.trim_start_matches(&top).to_string(), v))
            .collect();
    }
    Ok(files)
}

pub(super) fn zip_files(files: &BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (p, b) in files {
        w.start_file(p.as_str(), zip::write::SimpleFileOptions::default())
            .expect("zip");
        w.write_all(b).expect("zip");
    }
    w.finish().expect("zip").into_inner()
}
