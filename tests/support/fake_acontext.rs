//! A fake Acontext server for tests and offline trials — never part of the shipped binary.
//!
//! It answers the endpoints skillscope uses as `shared/acontext/openapi.json` and the Go server
//! describe them: the `{code, data, msg}` envelope (code 0 on success), Bearer auth (401),
//! cursor pagination (`limit` ≤ 200, `next_cursor`, `has_more`), `use_uuid` idempotency (200 with
//! the existing session; 409 in `legacy` mode, like the older `skill-bench` server), 409 for a
//! session learned twice or a skill included twice, the two default skills of a new learning space,
//! ZIP skill uploads with SKILL.md frontmatter checks, and — when `status_patch` is on — the
//! `PATCH /session/{id}/task/{task_id}/status` route and the `disable_task_status_change` flag.
//!
//! Its task agent and learner are deterministic stand-ins for the LLM ones: `flush` makes one task
//! per session from the first user message and, when the project's `task_success_criteria` /
//! `task_failure_criteria` name a marker the assistant message carries, resolves it accordingly;
//! a learning session advances one state per status poll (pending → distilling → skill_writing →
//! completed) and, on completion, appends an SOP entry (success) or a Warning entry (failure) to the
//! task's skill in the space — its curated upload (tagged `meta.skillscope.source_task`) or else
//! `<task>-learned`. Like the Go server, polling a pending learning session whose
//! tasks are undecided promotes them to success.
//!
//! Every request and response is logged with its route template, for schema checks; faults (5xx,
//! stalls, dropped connections) can be queued.

#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{MatchedPath, Multipart, Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, patch, post};
use serde_json::{Value, json};

/// One logged exchange.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// HTTP method.
    pub method: String,
    /// Route template (`/api/v1/session/{session_id}/flush`).
    pub route: String,
    /// Request body as JSON (`Null` for none or non-JSON).
    pub request: Value,
    /// Response status.
    pub status: u16,
    /// Response body as JSON (`Null` for non-JSON).
    pub response: Value,
}

/// A fault to inject into the next matching request.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Answer with this status and an error envelope.
    Status(u16),
    /// Wait this long before answering.
    Stall(Duration),
    /// Close the connection mid-response, before the handler runs (nothing happened).
    Drop,
    /// Run the handler, then close the connection mid-response (it happened, but the client
    /// cannot know).
    DropAfter,
}

#[derive(Debug, Clone, Default)]
struct FakeTask {
    id: String,
    order: i64,
    description: String,
    status: String,
}

#[derive(Debug, Clone, Default)]
struct FakeSession {
    id: String,
    configs: Value,
    manual_status: bool,
    messages: Vec<Value>,
    tasks: Vec<FakeTask>,
    created_at: String,
}

#[derive(Debug, Clone, Default)]
struct FakeSkill {
    id: String,
    name: String,
    description: String,
    meta: Value,
    files: BTreeMap<String, Vec<u8>>,
    updated_at: String,
}

#[derive(Debug, Clone, Default)]
struct FakeSpace {
    id: String,
    meta: Value,
    skills: Vec<String>,
    /// session id → learning status
    sessions: BTreeMap<String, String>,
    /// session ids in attach order
    order: Vec<String>,
}

/// The server's whole state (shared across restarts).
#[derive(Debug, Default)]
pub struct FakeState {
    /// Accepted key.
    pub api_key: String,
    /// Serve the status PATCH and honour `disable_task_status_change` (the skill-bench server).
    pub status_patch: bool,
    /// Answer duplicate `use_uuid` with 409 (older servers) instead of 200.
    pub legacy_409: bool,
    /// The fake task agent resolves every task as success, whatever the criteria say.
    pub mislabel: bool,
    /// The fake task agent never resolves a task (criteria or not).
    pub never_resolve: bool,
    sessions: BTreeMap<String, FakeSession>,
    session_order: Vec<String>,
    spaces: BTreeMap<String, FakeSpace>,
    space_order: Vec<String>,
    skills: BTreeMap<String, FakeSkill>,
    skill_order: Vec<String>,
    session_space: BTreeMap<String, String>,
    materials: BTreeMap<String, Vec<u8>>,
    /// Project configs.
    pub configs: serde_json::Map<String, Value>,
    /// Logged exchanges.
    pub log: Vec<Exchange>,
    /// Queued faults: (pattern, fault). A pattern `"METHOD /path"` matches that method on a
    /// route template ending with `/path`; a pattern without a method matches any route
    /// template containing it.
    pub faults: VecDeque<(String, Fault)>,
    clock: u64,
}

/// Shared handle.
pub type Shared = Arc<Mutex<FakeState>>;

impl FakeState {
    /// A state accepting `api_key`.
    pub fn new(api_key: &str, status_patch: bool) -> Shared {
        Arc::new(Mutex::new(FakeState {
            api_key: api_key.to_string(),
            status_patch,
            ..Default::default()
        }))
    }

    fn now(&mut self) -> String {
        self.clock += 1;
        let base = 1_763_700_000 + self.clock;
        chrono::DateTime::from_timestamp(base as i64, 0)
            .expect("valid")
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    }

    fn new_id(&mut self) -> String {
        self.clock += 1;
        uuid::Uuid::new_v4().to_string()
    }

    /// Number of sessions.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// Messages of a session.
    pub fn messages_of(&self, session_id: &str) -> usize {
        self.sessions
            .get(session_id)
            .map_or(0, |s| s.messages.len())
    }

    /// (role, content) of a session's messages.
    pub fn message_texts(&self, session_id: &str) -> Vec<(String, String)> {
        self.sessions
            .get(session_id)
            .map(|s| {
                s.messages
                    .iter()
                    .map(|m| {
                        (
                            m["role"].as_str().unwrap_or("").to_string(),
                            m["content"].as_str().unwrap_or("").to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The task each session was made for (`configs.skillscope.task_id`), in creation order.
    pub fn session_tasks(&self) -> Vec<String> {
        self.session_order
            .iter()
            .filter_map(|id| self.sessions.get(id))
            .map(|s| {
                s.configs
                    .pointer("/skillscope/task_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    }

    /// Whether a session exists.
    pub fn has_session(&self, session_id: &str) -> bool {
        self.sessions.contains_key(session_id)
    }

    /// Ids of the skills in the catalog.
    pub fn skill_count(&self) -> usize {
        self.skills.len()
    }

    /// A file of a space's skill, by skill name.
    pub fn skill_file(&self, space_id: &str, skill_name: &str, path: &str) -> Option<Vec<u8>> {
        let sp = self.spaces.get(space_id)?;
        sp.skills
            .iter()
            .filter_map(|k| self.skills.get(k))
            .find(|k| k.name == skill_name)
            .and_then(|k| k.files.get(path).cloned())
    }

    /// Task statuses of a session.
    pub fn task_statuses(&self, session_id: &str) -> Vec<String> {
        self.sessions
            .get(session_id)
            .map(|s| s.tasks.iter().map(|t| t.status.clone()).collect())
            .unwrap_or_default()
    }

    /// Learning status of a session in its space.
    pub fn learning_status(&self, session_id: &str) -> Option<String> {
        let space = self.session_space.get(session_id)?;
        self.spaces.get(space)?.sessions.get(session_id).cloned()
    }

    /// Skill names of a space.
    pub fn space_skill_names(&self, space_id: &str) -> Vec<String> {
        self.spaces
            .get(space_id)
            .map(|s| {
                s.skills
                    .iter()
                    .filter_map(|k| self.skills.get(k))
                    .map(|k| k.name.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Space ids.
    pub fn space_ids(&self) -> Vec<String> {
        self.space_order.clone()
    }

    /// Puts a file into a skill (to test exports with hostile content).
    pub fn put_skill_file(&mut self, space_id: &str, skill_name: &str, path: &str, content: &[u8]) {
        let id = self.new_id();
        let now = self.now();
        let space = self.spaces.get(space_id).cloned().unwrap_or_default();
        let existing = space
            .skills
            .iter()
            .find(|k| self.skills.get(*k).is_some_and(|s| s.name == skill_name))
            .cloned();
        let sid = match existing {
            Some(s) => s,
            None => {
                self.skills.insert(
                    id.clone(),
                    FakeSkill {
                        id: id.clone(),
                        name: skill_name.into(),
                        description: format!("{skill_name} (planted)"),
                        ..Default::default()
                    },
                );
                self.skill_order.push(id.clone());
                self.spaces
                    .get_mut(space_id)
                    .expect("space")
                    .skills
                    .push(id.clone());
                id
            }
        };
        let sk = self.skills.get_mut(&sid).expect("skill");
        sk.files.insert(path.to_string(), content.to_vec());
        sk.updated_at = now;
    }
}

fn ok(data: Value, status: StatusCode) -> Response {
    (
        status,
        axum::Json(json!({"code": 0, "data": data, "msg": ""})),
    )
        .into_response()
}

fn ok_msg() -> Response {
    (StatusCode::OK, axum::Json(json!({"code": 0, "msg": "ok"}))).into_response()
}

fn err(status: StatusCode, msg: &str) -> Response {
    (
        status,
        axum::Json(json!({"code": status.as_u16(), "msg": msg})),
    )
        .into_response()
}

fn session_json(s: &FakeSession, status_patch: bool) -> Value {
    let mut v = json!({
        "id": s.id, "project_id": "p-1", "user_id": "", "configs": s.configs,
        "disable_task_tracking": false, "created_at": s.created_at, "updated_at": s.created_at
    });
    if status_patch {
        v["disable_task_status_change"] = json!(s.manual_status);
    }
    v
}

fn task_json(session: &str, t: &FakeTask) -> Value {
    json!({"id": t.id, "session_id": session, "project_id": "p-1", "order": t.order,
           "data": {"task_description": t.description, "progresses": []}, "status": t.status,
           "is_planning": false, "created_at": "2026-11-21T10:00:00Z", "updated_at": "2026-11-21T10:00:00Z"})
}

fn skill_json(k: &FakeSkill) -> Value {
    json!({"id": k.id, "user_id": "", "name": k.name, "description": k.description, "disk_id": format!("disk-{}", k.id),
           "file_index": k.files.keys().map(|p| json!({"path": p, "mime": if p.ends_with(".md") { "text/markdown" } else { "text/plain" }})).collect::<Vec<_>>(),
           "meta": k.meta, "created_at": "2026-11-21T10:00:00Z", "updated_at": k.updated_at})
}

fn space_json(s: &FakeSpace) -> Value {
    json!({"id": s.id, "user_id": "", "meta": s.meta, "created_at": "2026-11-21T10:00:00Z", "updated_at": "2026-11-21T10:00:00Z"})
}

fn ls_session_json(space: &str, session: &str, status: &str) -> Value {
    json!({"id": format!("lss-{session}"), "learning_space_id": space, "session_id": session, "status": status,
           "created_at": "2026-11-21T10:00:00Z", "updated_at": "2026-11-21T10:00:00Z"})
}

/// Pagination over ids: (page, next_cursor, has_more), or an error response.
fn paginate(
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

fn page_json(items: Vec<Value>, next: Option<String>, more: bool) -> Value {
    let mut v = json!({"items": items, "has_more": more});
    if let Some(n) = next {
        v["next_cursor"] = json!(n);
    }
    v
}

fn parse_frontmatter(md: &str) -> Result<(String, String), String> {
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

fn unzip(bytes: &[u8]) -> Result<BTreeMap<String, Vec<u8>>, String> {
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

fn zip_files(files: &BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (p, b) in files {
        w.start_file(p.as_str(), zip::write::SimpleFileOptions::default())
            .expect("zip");
        w.write_all(b).expect("zip");
    }
    w.finish().expect("zip").into_inner()
}

/// The deterministic learner: appends an SOP or Warning entry for a finished task to its skill in
/// the space (the curated one, or `<task>-learned`, created on first use and included).
fn learn_into(state: &mut FakeState, space_id: &str, session_id: &str) {
    let Some(session) = state.sessions.get(session_id).cloned() else {
        return;
    };
    let task_name = session
        .configs
        .pointer("/skillscope/task_id")
        .and_then(Value::as_str)
        .unwrap_or("task")
        .to_string();
    let success = session.tasks.iter().any(|t| t.status == "success");
    let assistant = session
        .messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m["content"].as_str())
        .next_back()
        .unwrap_or("")
        .to_string();
    let first_action = assistant
        .lines()
        .find(|l| l.trim_start().starts_with('['))
        .map(|l| l.trim().to_string())
        .unwrap_or_else(|| "follow the task instructions".into());
    let failure_line = assistant
        .lines()
        .find(|l| l.contains("FAILED") || l.contains("Error"))
        .map(|l| l.trim().to_string())
        .unwrap_or_else(|| "the verifier rejected the output".into());
    let skill_name = format!("{task_name}-learned");
    let entry = if success {
        format!(
            "\n## Solve {task_name} (date: 2026-11-21)\n- Principle: Repeat the approach that passed the verifier.\n- When to Apply: Tasks like {task_name}.\n- Steps: 1. {first_action}\n"
        )
    } else {
        format!(
            "\n## Avoid the {task_name} failure (date: 2026-11-21)\n- Symptom: {failure_line}\n- Root Cause: The output did not match what the verifier checks.\n- Correct Approach: Check the task's requirements before writing the output.\n- Prevention: Verify the result against the instruction.\n"
        )
    };
    let space_skills = state
        .spaces
        .get(space_id)
        .map(|s| s.skills.clone())
        .unwrap_or_default();
    // Like Acontext's skill agent, update the skill the task already has in the space (a
    // curated upload tagged with its source task), else the space's `<task>-learned` skill.
    let existing = space_skills
        .iter()
        .find(|k| {
            state.skills.get(*k).is_some_and(|s| {
                s.meta
                    .pointer("/skillscope/source_task")
                    .and_then(Value::as_str)
                    == Some(task_name.as_str())
            })
        })
        .or_else(|| {
            space_skills
                .iter()
                .find(|k| state.skills.get(*k).is_some_and(|s| s.name == skill_name))
        })
        .cloned();
    let now = state.now();
    match existing {
        Some(id) => {
            let sk = state.skills.get_mut(&id).expect("skill");
            let md = sk.files.entry("SKILL.md".into()).or_default();
            md.extend_from_slice(entry.as_bytes());
            sk.updated_at = now;
        }
        None => {
            let id = state.new_id();
            let md = format!(
                "---\nname: \"{skill_name}\"\ndescription: \"Lessons learned from {task_name} trials\"\n---\n# {task_name} lessons\n\n## File Structure\n- SKILL.md\n\n## Guidelines\n{entry}"
            );
            state.skills.insert(
                id.clone(),
                FakeSkill {
                    id: id.clone(),
                    name: skill_name.clone(),
                    description: format!("Lessons learned from {task_name} trials"),
                    meta: json!({}),
                    files: BTreeMap::from([("SKILL.md".to_string(), md.into_bytes())]),
                    updated_at: now,
                },
            );
            state.skill_order.push(id.clone());
            if let Some(sp) = state.spaces.get_mut(space_id) {
                sp.skills.push(id);
            }
        }
    }
}

/// A status change to success/failed starts learning when the session is in a space.
fn on_terminal_status(state: &mut FakeState, session_id: &str) {
    if let Some(space) = state.session_space.get(session_id).cloned()
        && let Some(sp) = state.spaces.get_mut(&space)
    {
        sp.sessions
            .insert(session_id.to_string(), "distilling".into());
    }
}

type St = State<Shared>;

async fn create_session(State(s): St, axum::Json(body): axum::Json<Value>) -> Response {
    let mut st = s.lock().expect("state");
    let id = match body.get("use_uuid").and_then(Value::as_str) {
        Some(u) => match uuid::Uuid::parse_str(u) {
            Ok(u) => u.to_string(),
            Err(_) => return err(StatusCode::BAD_REQUEST, "invalid UUID format for use_uuid"),
        },
        None => st.new_id(),
    };
    if let Some(existing) = st.sessions.get(&id) {
        if st.legacy_409 {
            return err(
                StatusCode::CONFLICT,
                "session with this UUID already exists",
            );
        }
        return ok(session_json(existing, st.status_patch), StatusCode::OK);
    }
    let manual = st.status_patch
        && body
            .get("disable_task_status_change")
            .and_then(Value::as_bool)
            .unwrap_or(false);
    let created_at = st.now();
    let sess = FakeSession {
        id: id.clone(),
        configs: body.get("configs").cloned().unwrap_or(json!({})),
        manual_status: manual,
        created_at,
        ..Default::default()
    };
    let out = session_json(&sess, st.status_patch);
    st.sessions.insert(id.clone(), sess);
    st.session_order.push(id);
    ok(out, StatusCode::CREATED)
}

async fn delete_session(State(s): St, Path(id): Path<String>) -> Response {
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

async fn store_message(
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
    ok(
        json!({"id": mid, "session_id": id, "parent_id": null, "role": blob.get("role").cloned().unwrap_or(json!("user")),
               "meta": body.get("meta").cloned().unwrap_or(json!({})), "parts": [{"type": "text", "text": text}],
               "task_id": null, "session_task_process_status": "pending", "created_at": now, "updated_at": now}),
        StatusCode::CREATED,
    )
}

/// `GET /session/{id}/messages` as `converter.GetMessagesOutput`: `items` in the requested
/// `format` (`acontext` Message objects, or `{role, content}` for the provider formats), their
/// `ids` and `metas`, `this_time_tokens` (the returned text's length / 4, rounded up, standing in
/// for the server's tokenizer), and cursor pagination — all messages without `limit` (or with
/// `limit = 0`), else pages of `limit` (≤ 200) with `next_cursor` and `has_more`.
async fn get_messages(
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
    let items: Vec<Value> = picked
        .iter()
        .map(|m| {
            if format == "acontext" {
                json!({"id": m["id"], "session_id": id, "parent_id": null, "role": m["role"],
                       "meta": m["meta"], "parts": [{"type": "text", "text": text_of(m)}],
                       "task_id": null, "session_task_process_status": "success",
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

async fn flush(State(s): St, Path(id): Path<String>) -> Response {
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
fn marker_in(criteria: &str) -> Option<String> {
    let start = criteria.find('"')? + 1;
    let len = criteria[start..].find('"')?;
    Some(criteria[start..start + len].to_string())
}

async fn get_tasks(
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

async fn patch_task_status(
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

async fn create_space(State(s): St, axum::Json(body): axum::Json<Value>) -> Response {
    let mut st = s.lock().expect("state");
    let id = st.new_id();
    let mut skills = Vec::new();
    for (name, desc) in [
        ("daily-logs", "Daily activity logs"),
        ("user-general-facts", "General facts about the user"),
    ] {
        let kid = st.new_id();
        let now = st.now();
        st.skills.insert(
            kid.clone(),
            FakeSkill {
                id: kid.clone(),
                name: name.into(),
                description: desc.into(),
                meta: json!({}),
                files: BTreeMap::from([(
                    "SKILL.md".into(),
                    format!("---\nname: {name}\ndescription: {desc}\n---\n# {name}\n").into_bytes(),
                )]),
                updated_at: now,
            },
        );
        st.skill_order.push(kid.clone());
        skills.push(kid);
    }
    let space = FakeSpace {
        id: id.clone(),
        meta: body.get("meta").cloned().unwrap_or(json!({})),
        skills,
        ..Default::default()
    };
    let out = space_json(&space);
    st.spaces.insert(id.clone(), space);
    st.space_order.push(id);
    ok(out, StatusCode::CREATED)
}

fn contains(hay: &Value, needle: &Value) -> bool {
    match (hay, needle) {
        (Value::Object(h), Value::Object(n)) => n
            .iter()
            .all(|(k, v)| h.get(k).is_some_and(|hv| contains(hv, v))),
        (a, b) => a == b,
    }
}

async fn list_spaces(State(s): St, Query(q): Query<BTreeMap<String, String>>) -> Response {
    let st = s.lock().expect("state");
    let filter: Option<Value> = match q.get("filter_by_meta") {
        Some(f) => match serde_json::from_str(f) {
            Ok(v) => Some(v),
            Err(_) => return err(StatusCode::BAD_REQUEST, "invalid filter_by_meta JSON"),
        },
        None => None,
    };
    let ids: Vec<String> = st
        .space_order
        .iter()
        .filter(|id| {
            filter
                .as_ref()
                .is_none_or(|f| contains(&st.spaces[*id].meta, f))
        })
        .cloned()
        .collect();
    let (page, next, more) = match paginate(&ids, &q) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    ok(
        page_json(
            page.iter().map(|id| space_json(&st.spaces[id])).collect(),
            next,
            more,
        ),
        StatusCode::OK,
    )
}

async fn get_space(State(s): St, Path(id): Path<String>) -> Response {
    let st = s.lock().expect("state");
    match st.spaces.get(&id) {
        Some(sp) => ok(space_json(sp), StatusCode::OK),
        None => err(StatusCode::NOT_FOUND, "learning space not found"),
    }
}

async fn learn(
    State(s): St,
    Path(id): Path<String>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let mut st = s.lock().expect("state");
    let Some(sid) = body
        .get("session_id")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return err(StatusCode::BAD_REQUEST, "parameter error");
    };
    if !st.spaces.contains_key(&id) {
        return err(StatusCode::NOT_FOUND, "learning space not found");
    }
    if !st.sessions.contains_key(&sid) {
        return err(StatusCode::NOT_FOUND, "session not found");
    }
    if st.session_space.contains_key(&sid) {
        return err(
            StatusCode::CONFLICT,
            "session already learned by another space",
        );
    }
    st.session_space.insert(sid.clone(), id.clone());
    let sp = st.spaces.get_mut(&id).expect("space");
    sp.sessions.insert(sid.clone(), "pending".into());
    sp.order.push(sid.clone());
    ok(ls_session_json(&id, &sid, "pending"), StatusCode::CREATED)
}

/// One poll: advances learning by a step; a pending session with undecided tasks is promoted to
/// success (the Go server's lazy resolution).
fn advance(st: &mut FakeState, space: &str, sid: &str) -> String {
    let status = st.spaces[space].sessions[sid].clone();
    let next = match status.as_str() {
        "pending" => {
            let tasks = st
                .sessions
                .get(sid)
                .map(|s| s.tasks.clone())
                .unwrap_or_default();
            if tasks.is_empty() {
                "completed".to_string()
            } else if tasks
                .iter()
                .any(|t| t.status == "success" || t.status == "failed")
            {
                "distilling".to_string()
            } else if let Some(sess) = st.sessions.get_mut(sid) {
                for t in &mut sess.tasks {
                    t.status = "success".into();
                }
                "distilling".to_string()
            } else {
                "failed".to_string()
            }
        }
        "distilling" => "skill_writing".to_string(),
        "skill_writing" | "queued" => {
            learn_into(st, space, sid);
            "completed".to_string()
        }
        other => other.to_string(),
    };
    st.spaces
        .get_mut(space)
        .expect("space")
        .sessions
        .insert(sid.to_string(), next.clone());
    next
}

async fn space_session(State(s): St, Path((id, sid)): Path<(String, String)>) -> Response {
    let mut st = s.lock().expect("state");
    if !st
        .spaces
        .get(&id)
        .is_some_and(|sp| sp.sessions.contains_key(&sid))
    {
        return err(StatusCode::NOT_FOUND, "session not found");
    }
    let status = advance(&mut st, &id, &sid);
    ok(ls_session_json(&id, &sid, &status), StatusCode::OK)
}

async fn space_sessions(State(s): St, Path(id): Path<String>) -> Response {
    let st = s.lock().expect("state");
    let Some(sp) = st.spaces.get(&id) else {
        return err(StatusCode::NOT_FOUND, "learning space not found");
    };
    ok(
        Value::Array(
            sp.order
                .iter()
                .map(|sid| ls_session_json(&id, sid, &sp.sessions[sid]))
                .collect(),
        ),
        StatusCode::OK,
    )
}

async fn space_skills(State(s): St, Path(id): Path<String>) -> Response {
    let st = s.lock().expect("state");
    let Some(sp) = st.spaces.get(&id) else {
        return err(StatusCode::NOT_FOUND, "learning space not found");
    };
    ok(
        Value::Array(
            sp.skills
                .iter()
                .filter_map(|k| st.skills.get(k))
                .map(skill_json)
                .collect(),
        ),
        StatusCode::OK,
    )
}

async fn include_skill(
    State(s): St,
    Path(id): Path<String>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let mut st = s.lock().expect("state");
    let Some(kid) = body
        .get("skill_id")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return err(StatusCode::BAD_REQUEST, "parameter error");
    };
    let Some(skill) = st.skills.get(&kid).cloned() else {
        return err(StatusCode::NOT_FOUND, "skill not found");
    };
    let Some(sp) = st.spaces.get(&id).cloned() else {
        return err(StatusCode::NOT_FOUND, "learning space not found");
    };
    if sp.skills.contains(&kid) {
        return err(StatusCode::CONFLICT, "skill already included in this space");
    }
    if sp
        .skills
        .iter()
        .any(|k| st.skills.get(k).is_some_and(|x| x.name == skill.name))
    {
        return err(
            StatusCode::CONFLICT,
            &format!(
                "skill with name '{}' already exists in this space",
                skill.name
            ),
        );
    }
    st.spaces
        .get_mut(&id)
        .expect("space")
        .skills
        .push(kid.clone());
    ok(
        json!({"id": format!("lsk-{kid}"), "learning_space_id": id, "skill_id": kid, "created_at": "2026-11-21T10:00:00Z"}),
        StatusCode::CREATED,
    )
}

async fn exclude_skill(State(s): St, Path((id, kid)): Path<(String, String)>) -> Response {
    let mut st = s.lock().expect("state");
    if let Some(sp) = st.spaces.get_mut(&id) {
        sp.skills.retain(|k| k != &kid);
    }
    ok_msg()
}

async fn upload_skill(State(s): St, mut form: Multipart) -> Response {
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

async fn list_skills(State(s): St, Query(q): Query<BTreeMap<String, String>>) -> Response {
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

async fn get_skill(State(s): St, Path(id): Path<String>) -> Response {
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

async fn delete_skill(State(s): St, Path(id): Path<String>) -> Response {
    let mut st = s.lock().expect("state");
    st.skills.remove(&id);
    st.skill_order.retain(|k| k != &id);
    ok_msg()
}

/// `GET /agent_skills/{id}/file`: text content inline, anything else as an absolute material URL
/// (like the real server's presigned S3 URL: fetched without the API key, see
/// [`auth_log_faults`]) on the host the request came to.
async fn skill_file(
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
            ok(
                json!({"path": path, "mime": "application/octet-stream",
                       "url": format!("http://{host}/api/v1/material/{token}?X-Amz-Expires=900")}),
                StatusCode::OK,
            )
        }
    }
}

async fn material(State(s): St, Path(token): Path<String>) -> Response {
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

async fn download_zip(State(s): St, Path(id): Path<String>) -> Response {
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

async fn get_configs(State(s): St) -> Response {
    let st = s.lock().expect("state");
    let mut v = Value::Object(st.configs.clone());
    v["encryption_enabled"] = json!(false);
    ok(v, StatusCode::OK)
}

async fn patch_configs(State(s): St, axum::Json(body): axum::Json<Value>) -> Response {
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

fn fault_matches(pattern: &str, method: &str, route: &str) -> bool {
    match pattern.split_once(' ') {
        Some((m, path)) => m.eq_ignore_ascii_case(method) && route.ends_with(path),
        None => route.contains(pattern),
    }
}

async fn auth_log_faults(State(s): St, req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_string())
        .unwrap_or_else(|| req.uri().path().to_string());
    let method = req.method().clone();
    let headers: HeaderMap = req.headers().clone();
    let fault = {
        let mut st = s.lock().expect("state");
        let idx = st
            .faults
            .iter()
            .position(|(r, _)| fault_matches(r, method.as_str(), &route));
        idx.and_then(|i| st.faults.remove(i)).map(|(_, f)| f)
    };
    let key = s.lock().expect("state").api_key.clone();
    // Material URLs stand for presigned object-store URLs: they carry their own signature and
    // no API key (a client must not send its key to them).
    let presigned = route.ends_with("/material/{token}");
    let authorized = presigned
        || headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v == format!("Bearer {key}"));
    let (parts, body) = req.into_parts();
    let bytes: Bytes = axum::body::to_bytes(body, 64 * 1024 * 1024)
        .await
        .unwrap_or_default();
    let req_json: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let resp = if !authorized {
        err(StatusCode::UNAUTHORIZED, "Unauthorized")
    } else {
        match fault {
            Some(Fault::Status(code)) => err(
                StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                "injected fault",
            ),
            Some(Fault::Stall(d)) => {
                tokio::time::sleep(d).await;
                next.run(Request::from_parts(parts, Body::from(bytes.clone())))
                    .await
            }
            Some(Fault::Drop) => return dropped_response(),
            Some(Fault::DropAfter) => {
                let _ = next
                    .run(Request::from_parts(parts, Body::from(bytes.clone())))
                    .await;
                return dropped_response();
            }
            None => {
                next.run(Request::from_parts(parts, Body::from(bytes.clone())))
                    .await
            }
        }
    };
    let (rparts, rbody) = resp.into_parts();
    let rbytes = axum::body::to_bytes(rbody, 64 * 1024 * 1024)
        .await
        .unwrap_or_default();
    let resp_json: Value = serde_json::from_slice(&rbytes).unwrap_or(Value::Null);
    s.lock().expect("state").log.push(Exchange {
        method: method.to_string(),
        route,
        request: req_json,
        status: rparts.status.as_u16(),
        response: resp_json,
    });
    Response::from_parts(rparts, Body::from(rbytes))
}

/// A body that ends early: the client sees the connection close mid-response.
fn dropped_response() -> Response {
    let stream = futures_util::stream::iter(vec![
        Ok::<_, std::io::Error>(Bytes::from_static(b"{\"code\":0,")),
        Err(std::io::Error::other("connection dropped")),
    ]);
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(stream))
        .expect("response")
}

/// The router (under `/api/v1`).
pub fn router(state: Shared) -> Router {
    let mut api = Router::new()
        .route("/session", post(create_session))
        .route("/session/{session_id}", delete(delete_session))
        .route(
            "/session/{session_id}/messages",
            post(store_message).get(get_messages),
        )
        .route("/session/{session_id}/flush", post(flush))
        .route("/session/{session_id}/task", get(get_tasks))
        .route("/learning_spaces", post(create_space).get(list_spaces))
        .route("/learning_spaces/{id}", get(get_space))
        .route("/learning_spaces/{id}/learn", post(learn))
        .route("/learning_spaces/{id}/sessions", get(space_sessions))
        .route(
            "/learning_spaces/{id}/sessions/{session_id}",
            get(space_session),
        )
        .route(
            "/learning_spaces/{id}/skills",
            get(space_skills).post(include_skill),
        )
        .route(
            "/learning_spaces/{id}/skills/{skill_id}",
            delete(exclude_skill),
        )
        .route("/agent_skills", post(upload_skill).get(list_skills))
        .route("/agent_skills/{id}", get(get_skill).delete(delete_skill))
        .route("/agent_skills/{id}/file", get(skill_file))
        .route("/agent_skills/{id}/download_zip", get(download_zip))
        .route("/material/{token}", get(material))
        .route("/project/configs", get(get_configs).patch(patch_configs));
    if state.lock().expect("state").status_patch {
        api = api.route(
            "/session/{session_id}/task/{task_id}/status",
            patch(patch_task_status),
        );
    }
    let api = api
        .layer(middleware::from_fn_with_state(
            state.clone(),
            auth_log_faults,
        ))
        .with_state(state);
    // Unknown routes answer like gin: 404 with a plain-text body (no envelope).
    Router::new()
        .nest("/api/v1", api)
        .fallback(|| async { (StatusCode::NOT_FOUND, "404 page not found") })
}

/// A running fake server.
pub struct FakeServer {
    /// Its state (survives restarts).
    pub state: Shared,
    /// Where it listens.
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl FakeServer {
    /// Starts a server for `state` on `addr` (port 0 = any).
    pub async fn start(state: Shared, addr: SocketAddr) -> FakeServer {
        let listener = tokio::net::TcpListener::bind(addr).await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let app = router(state.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await;
        });
        FakeServer {
            state,
            addr,
            stop: Some(tx),
            task: Some(task),
        }
    }

    /// Base URL (`http://127.0.0.1:N/api/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/api/v1", self.addr)
    }

    /// Stops the server (the state stays).
    pub async fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.task.take() {
            t.abort();
            let _ = t.await;
        }
    }

    /// Stops and starts again on the same port with the same state.
    pub async fn restart(&mut self) {
        self.stop().await;
        let again = FakeServer::start(self.state.clone(), self.addr).await;
        *self = again;
    }
}
