//! The Acontext client against the in-repo fake server (`tests/support/fake_acontext.rs`):
//! every exchange checked against the OpenAPI spec (`tests/fixtures/acontext/openapi.json`, a copy
//! of `shared/acontext/openapi.json`), auth, pagination, retries, optional routes, idempotency
//! conflicts and key hygiene.

use crate::support::fake_acontext;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{Read, Write};
use std::time::Duration;

use fake_acontext::{Exchange, FakeServer, FakeState, Fault, Shared};
use futures_util::StreamExt;
use serde_json::{Value, json};
use skillscope::acontext::model::{CreateSession, LearningSpace};
use skillscope::acontext::{AcontextConfig, AcontextError, Client};

const KEY: &str = "sk-ac-test";
/// The spec, copied so the tests do not depend on `../shared` (CI has a clean clone).
const SPEC: &str = include_str!("../fixtures/acontext/openapi.json");
/// The client's source: its doc comments name every endpoint it calls (`` `GET /path` ``).
const CLIENT_SRC: &str = include_str!("../../src/acontext/client.rs");

fn config(base_url: &str, key: &str) -> AcontextConfig {
    AcontextConfig {
        base_url: base_url.to_string(),
        api_key: key.to_string(),
        timeout: Duration::from_secs(2),
        retries: 3,
        max_backoff: Duration::from_millis(50),
    }
}

async fn start(status_patch: bool) -> (FakeServer, Client) {
    let server = FakeServer::start(
        FakeState::new(KEY, status_patch),
        ([127, 0, 0, 1], 0).into(),
    )
    .await;
    let client = Client::new(&config(&server.base_url(), KEY)).expect("client");
    (server, client)
}

fn log_of(state: &Shared) -> Vec<Exchange> {
    state.lock().unwrap().log.clone()
}

/// Logged exchanges of one method and route template.
fn exchanges(state: &Shared, method: &str, route: &str) -> Vec<Exchange> {
    log_of(state)
        .into_iter()
        .filter(|e| e.method == method && e.route == route)
        .collect()
}

fn queue(state: &Shared, route: &str, fault: Fault) {
    state
        .lock()
        .unwrap()
        .faults
        .push_back((route.to_string(), fault));
}

fn api_status(e: &AcontextError) -> Option<u16> {
    match e {
        AcontextError::Api { status, .. } => Some(*status),
        _ => None,
    }
}

/// A skill ZIP: `my-skill/SKILL.md` (frontmatter), `my-skill/scripts/run.sh` and a binary file.
fn skill_zip(binary: &[u8]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let files: [(&str, &[u8]); 3] = [
        (
            "my-skill/SKILL.md",
            b"---\nname: my-skill\ndescription: Writes hello.txt the way the verifier wants\n---\n# my-skill\n\nRun `scripts/run.sh`.\n",
        ),
        (
            "my-skill/scripts/run.sh",
            b"#!/bin/sh\necho hello > hello.txt\n",
        ),
        ("my-skill/assets/logo.bin", binary),
    ];
    for (path, bytes) in files {
        w.start_file(path, zip::write::SimpleFileOptions::default())
            .expect("zip");
        w.write_all(bytes).expect("zip");
    }
    w.finish().expect("zip").into_inner()
}

fn unzip(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut z = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("a ZIP");
    let mut out = BTreeMap::new();
    for i in 0..z.len() {
        let mut f = z.by_index(i).expect("entry");
        let name = f.name().expect("name").to_string();
        let mut buf = Vec::new();
        f.read_to_end(&mut buf).expect("read");
        out.insert(name, buf);
    }
    out
}

// ---- the spec ------------------------------------------------------------------------------------

/// A deliberate difference between the spec and what servers send, applied to the in-memory
/// spec. Each one checks that the spec still has the quirk, so a fixed spec fails the test until
/// the entry is removed: none of them can silently hide a regression.
struct Deviation {
    what: &'static str,
    apply: fn(&mut Value) -> Result<(), String>,
}

fn schema_mut<'a>(doc: &'a mut Value, name: &str) -> Result<&'a mut Value, String> {
    doc.pointer_mut(&format!("/components/schemas/{name}"))
        .ok_or_else(|| format!("components/schemas/{name} is gone"))
}

const DEVIATIONS: &[Deviation] = &[
    Deviation {
        // Known quirk: swag puts the multipart form (`payload` + `file`) under application/json
        // too. The JSON body the Go handler binds is handler.StoreMessageReq.
        what: "POST /session/{session_id}/messages: the JSON body is handler.StoreMessageReq, \
               not the multipart form schema",
        apply: |doc| {
            let s = doc
                .pointer_mut(
                    "/paths/~1session~1{session_id}~1messages/post/requestBody/content/application~1json/schema",
                )
                .ok_or("POST /session/{session_id}/messages has no JSON body")?;
            if s["$ref"] != "#/components/schemas/_session__session_id__messages_post_request" {
                return Err(format!("JSON body is now {s}; drop this deviation"));
            }
            *s = json!({"$ref": "#/components/schemas/handler.StoreMessageReq"});
            Ok(())
        },
    },
    Deviation {
        // The skill-bench server (shared/acontext/plans/disable-task-status-change.md) adds a
        // boolean `disable_task_status_change` to the create request and to model.Session.
        what: "skill-bench extension: disable_task_status_change (boolean) in \
               handler.CreateSessionReq and model.Session",
        apply: |doc| {
            for name in ["handler.CreateSessionReq", "model.Session"] {
                let props = &mut schema_mut(doc, name)?["properties"];
                if props.get("disable_task_status_change").is_some() {
                    return Err(format!("{name} now has disable_task_status_change"));
                }
                props["disable_task_status_change"] = json!({"type": "boolean"});
            }
            Ok(())
        },
    },
    Deviation {
        // shared/acontext/plans/task-status-update-sdk.md: request `{status}` (required, one of
        // four), response the task in the envelope, 400 for a bad status, 404 for a foreign task.
        what: "skill-bench extension: PATCH /session/{session_id}/task/{task_id}/status",
        apply: |doc| {
            if doc["paths"]
                .get("/session/{session_id}/task/{task_id}/status")
                .is_some()
            {
                return Err("the spec now has the status PATCH".into());
            }
            doc["components"]["schemas"]["handler.UpdateTaskStatusReq"] = json!({
                "type": "object",
                "required": ["status"],
                "properties": {"status": {"type": "string", "enum": ["success", "failed", "running", "pending"]}}
            });
            doc["components"]["schemas"]["_task_status_patch_200_response"] = json!({
                "allOf": [
                    {"$ref": "#/components/schemas/serializer.Response"},
                    {"type": "object", "properties": {"data": {"$ref": "#/components/schemas/model.Task"}}}
                ]
            });
            let envelope = json!({"content": {"application/json": {"schema": {"$ref": "#/components/schemas/serializer.Response"}}}});
            doc["paths"]["/session/{session_id}/task/{task_id}/status"] = json!({"patch": {
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/handler.UpdateTaskStatusReq"}}}},
                "responses": {
                    "200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/_task_status_patch_200_response"}}}},
                    "400": envelope.clone(),
                    "404": envelope
                }
            }});
            Ok(())
        },
    },
    Deviation {
        // Go `*uuid.UUID` fields: null for a message without parent or task. swag drops the
        // nullability (the spec has no `nullable` anywhere); only these two fields are relaxed.
        what: "model.Message.parent_id and task_id may be null (Go pointers)",
        apply: |doc| {
            let props = &mut schema_mut(doc, "model.Message")?["properties"];
            for field in ["parent_id", "task_id"] {
                if props[field] != json!({"type": "string"}) {
                    return Err(format!("model.Message.{field} is now {}", props[field]));
                }
                props[field] = json!({"type": ["string", "null"]});
            }
            Ok(())
        },
    },
    Deviation {
        // Go `Items interface{}` renders as `type: object`; the server sends an array of
        // messages in the requested format. The client always asks for `format=acontext`, whose
        // items are model.Message — so this is a tighter schema, not a looser one.
        what: "converter.GetMessagesOutput.items is an array (of model.Message for \
               format=acontext), not an object",
        apply: |doc| {
            let items = &mut schema_mut(doc, "converter.GetMessagesOutput")?["properties"]["items"];
            if items["type"] != "object" {
                return Err(format!("items is now {items}"));
            }
            *items =
                json!({"type": "array", "items": {"$ref": "#/components/schemas/model.Message"}});
            Ok(())
        },
    },
    Deviation {
        // The spec documents 201 and 409 ("Session with this UUID already exists"); current
        // servers (and the fake unless `legacy_409`) answer a known use_uuid with 200 and the
        // existing session, which the client's retry of POST /session relies on.
        what: "POST /session answers 200 with the existing session for a known use_uuid",
        apply: |doc| {
            let responses = doc
                .pointer_mut("/paths/~1session/post/responses")
                .ok_or("POST /session has no responses")?;
            if responses.get("200").is_some() {
                return Err("POST /session now documents 200".into());
            }
            responses["200"] = responses["201"].clone();
            Ok(())
        },
    },
];

/// Multipart bodies are not logged by the fake; the client's form fields per operation
/// (`Body::Zip` in client.rs: a `file` part plus the extra text fields of `upload_skill`).
const MULTIPART_FIELDS: &[(&str, &str, &[&str])] = &[("POST", "/agent_skills", &["file", "meta"])];

struct Spec {
    doc: Value,
    base: String,
    validators: HashMap<String, jsonschema::Validator>,
}

fn is_param(segment: &str) -> bool {
    (segment.starts_with('{') && segment.ends_with('}')) || segment.starts_with(':')
}

/// Same segments, parameters in the same places (parameter names may differ).
fn same_shape(a: &str, b: &str) -> bool {
    let a: Vec<&str> = a.trim_matches('/').split('/').collect();
    let b: Vec<&str> = b.trim_matches('/').split('/').collect();
    a.len() == b.len()
        && a.iter()
            .zip(&b)
            .all(|(x, y)| (is_param(x) && is_param(y)) || x == y)
}

impl Spec {
    fn load() -> Spec {
        let mut doc: Value = serde_json::from_str(SPEC).expect("spec JSON");
        for d in DEVIATIONS {
            if let Err(e) = (d.apply)(&mut doc) {
                panic!("deviation no longer applies ({}): {e}", d.what);
            }
        }
        let base = doc["servers"][0]["url"]
            .as_str()
            .expect("servers[0].url")
            .to_string();
        Spec {
            doc,
            base,
            validators: HashMap::new(),
        }
    }

    /// Follows `$ref`s (local ones only) to the object they name.
    fn deref<'a>(&'a self, mut v: &'a Value) -> &'a Value {
        for _ in 0..32 {
            match v.get("$ref").and_then(Value::as_str) {
                Some(r) => {
                    let ptr = r.strip_prefix('#').expect("local $ref");
                    v = self
                        .doc
                        .pointer(ptr)
                        .unwrap_or_else(|| panic!("dangling {r}"));
                }
                None => return v,
            }
        }
        panic!("$ref loop");
    }

    /// The spec path of a route (`/api/v1/session/{session_id}` or a path relative to the base)
    /// that has an operation for `method`.
    fn path_for(&self, method: &str, route: &str) -> Result<String, String> {
        let rel = route.strip_prefix(self.base.as_str()).unwrap_or(route);
        let m = method.to_lowercase();
        let found: Vec<&String> = self.doc["paths"]
            .as_object()
            .expect("paths")
            .iter()
            .filter(|(p, item)| same_shape(p, rel) && item.get(&m).is_some())
            .map(|(p, _)| p)
            .collect();
        match found.as_slice() {
            [one] => Ok((*one).clone()),
            [] => Err(format!("{method} {route}: no such operation in the spec")),
            many => Err(format!("{method} {route}: ambiguous ({many:?})")),
        }
    }

    /// Validates `instance` against `schema` (a schema object from anywhere in the spec): the
    /// whole spec is the root resource, so `#/components/schemas/…` resolve.
    fn validate(&mut self, schema: &Value, instance: &Value) -> Vec<String> {
        let key = schema.to_string();
        if !self.validators.contains_key(&key) {
            let mut root = self.doc.clone();
            root["allOf"] = json!([schema]);
            // OpenAPI 3.0 schemas are (an extended subset of) draft 4/5.
            let v = jsonschema::options()
                .with_draft(jsonschema::Draft::Draft4)
                .build(&root)
                .unwrap_or_else(|e| panic!("schema {key} does not compile: {e}"));
            self.validators.insert(key.clone(), v);
        }
        self.validators[&key]
            .iter_errors(instance)
            .map(|e| format!("{e} (at `{}`)", e.instance_path()))
            .collect()
    }

    /// Top-level property names a request schema declares; `None` when it admits any.
    fn declared(&self, schema: &Value) -> Option<BTreeSet<String>> {
        let s = self.deref(schema);
        if s.get("additionalProperties").is_some_and(|a| a != false) {
            return None;
        }
        let mut out = BTreeSet::new();
        let props = s.get("properties").and_then(Value::as_object);
        let all_of = s.get("allOf").and_then(Value::as_array);
        if props.is_none() && all_of.is_none() {
            return None;
        }
        out.extend(props.into_iter().flat_map(|p| p.keys().cloned()));
        for sub in all_of.into_iter().flatten() {
            out.extend(self.declared(sub)?);
        }
        Some(out)
    }

    /// Checks one logged exchange; returns the (method, spec path) it used.
    fn check(&mut self, ex: &Exchange, violations: &mut Vec<String>) -> Option<(String, String)> {
        let at = format!("{} {} → {}", ex.method, ex.route, ex.status);
        if !ex.route.starts_with(&format!("{}/", self.base)) {
            violations.push(format!("{at}: route outside {}", self.base));
            return None;
        }
        let path = match self.path_for(&ex.method, &ex.route) {
            Ok(p) => p,
            Err(e) => {
                violations.push(e);
                return None;
            }
        };
        let op = self.doc["paths"][&path][ex.method.to_lowercase()].clone();

        // Request.
        let body = op.get("requestBody").map(|b| self.deref(b).clone());
        let content = body.as_ref().and_then(|b| b.get("content"));
        let json_schema = content
            .and_then(|c| c.get("application/json"))
            .and_then(|c| c.get("schema"));
        let multipart = content
            .and_then(|c| c.get("multipart/form-data"))
            .and_then(|c| c.get("schema"));
        match (&ex.request, json_schema, multipart) {
            (Value::Null, _, Some(form)) => {
                // Multipart: the fake logs no body; check the client's form fields instead.
                let form = self.deref(form).clone();
                match MULTIPART_FIELDS
                    .iter()
                    .find(|(m, p, _)| *m == ex.method && *p == path)
                {
                    None => violations.push(format!("{at}: multipart body with no known fields")),
                    Some((_, _, fields)) => {
                        for req in form["required"].as_array().into_iter().flatten() {
                            if !fields.contains(&req.as_str().unwrap_or_default()) {
                                violations
                                    .push(format!("{at}: required form field {req} not sent"));
                            }
                        }
                        for f in *fields {
                            if form["properties"].get(f).is_none() {
                                violations.push(format!("{at}: form field `{f}` not in the spec"));
                            }
                        }
                    }
                }
            }
            (Value::Null, Some(_), None) => {
                if body.as_ref().is_some_and(|b| b["required"] == true) {
                    violations.push(format!("{at}: required JSON body missing"));
                }
            }
            (Value::Null, None, None) => {}
            (req, Some(schema), _) => {
                let schema = schema.clone();
                for e in self.validate(&schema, req) {
                    violations.push(format!("{at}: request: {e}"));
                }
                if let (Some(declared), Some(obj)) = (self.declared(&schema), req.as_object()) {
                    for k in obj.keys().filter(|k| !declared.contains(*k)) {
                        violations.push(format!("{at}: request field `{k}` is not in the spec"));
                    }
                }
            }
            (req, None, _) => violations.push(format!("{at}: spec has no JSON body, sent {req}")),
        }

        // Response.
        let responses = &op["responses"];
        let family = format!("{}XX", ex.status / 100);
        let Some(resp) = [ex.status.to_string(), "default".into(), family]
            .iter()
            .find_map(|k| responses.get(k))
        else {
            violations.push(format!("{at}: status not documented"));
            return Some((ex.method.clone(), path));
        };
        let resp = self.deref(resp).clone();
        let json_schema = resp.pointer("/content/application~1json/schema").cloned();
        match (&ex.response, json_schema) {
            (Value::Null, Some(_)) => {
                violations.push(format!("{at}: spec promises JSON, body is not JSON"));
            }
            (Value::Null, None) => {}
            (body, Some(schema)) => {
                for e in self.validate(&schema, body) {
                    violations.push(format!("{at}: response: {e}"));
                }
            }
            (_, None) => violations.push(format!("{at}: JSON body, spec has no JSON schema")),
        }
        Some((ex.method.clone(), path))
    }
}

/// `(METHOD, path)` of every endpoint the client's doc comments name (`` `GET /x/{id}` ``).
fn client_endpoints() -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for line in CLIENT_SRC
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("///"))
    {
        for chunk in line.split('`').skip(1).step_by(2) {
            let Some((method, path)) = chunk.split_once(' ') else {
                continue;
            };
            if ["GET", "POST", "PUT", "PATCH", "DELETE"].contains(&method) && path.starts_with('/')
            {
                let path = path.split('?').next().unwrap_or(path);
                out.insert((method.to_string(), path.to_string()));
            }
        }
    }
    out
}

// ---- 1. the spec -----------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_exchange_matches_openapi() {
    let (server, c) = start(true).await;
    let state = server.state.clone();

    // Sessions and messages.
    let uuid = uuid::Uuid::new_v4().to_string();
    let req = CreateSession {
        use_uuid: Some(uuid.clone()),
        configs: Some(json!({"skillscope": {"task_id": "demo-task", "trial": "t1"}})),
        user: None,
        disable_task_status_change: Some(true),
        disable_task_tracking: None,
    };
    let session = c.create_session(&req).await.expect("create_session");
    assert_eq!(session.id, uuid);
    assert_eq!(session.disable_task_status_change, Some(true));
    assert_eq!(session.configs["skillscope"]["task_id"], "demo-task");
    // The same use_uuid again: the same session (what a retry of POST /session relies on).
    let again = c.create_session(&req).await.expect("create_session again");
    assert_eq!(again.id, uuid);
    assert_eq!(state.lock().unwrap().session_count(), 1);

    let user = c
        .store_message(
            &uuid,
            json!({"role": "user", "content": "Write hello.txt containing hello"}),
            "openai",
            Some(json!({"trial": "t1", "step": 0})),
        )
        .await
        .expect("store user message");
    assert_eq!(user.role, "user");
    assert_eq!(user.meta["step"], 0);
    let assistant = c
        .store_message(
            &uuid,
            json!({"role": "assistant", "content": "[bash] echo hello > hello.txt\nVERDICT: PASS"}),
            "openai",
            Some(json!({"trial": "t1", "step": 1})),
        )
        .await
        .expect("store assistant message");
    assert_eq!(assistant.session_id, uuid);
    let messages = c.get_messages(&uuid).await.expect("get_messages");
    assert_eq!(
        messages.iter().map(|m| m.role.as_str()).collect::<Vec<_>>(),
        ["user", "assistant"]
    );
    assert_eq!(messages[1].meta, json!({"trial": "t1", "step": 1}));

    // Tasks: manual status, so flush leaves the task running until the PATCH.
    let flag = c.flush(&uuid).await.expect("flush");
    assert_eq!(flag.status, 200, "{flag:?}");
    let tasks = c.get_tasks(&uuid).await.expect("get_tasks");
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].status, "running");
    assert_eq!(
        tasks[0].data.task_description,
        "Write hello.txt containing hello"
    );

    // Learning spaces.
    let meta = json!({"skillscope": {"run": "r1", "task": "demo-task"}});
    let space = c
        .create_learning_space(meta.clone())
        .await
        .expect("create_learning_space");
    let other = c
        .create_learning_space(json!({"skillscope": {"run": "r2"}}))
        .await
        .expect("create_learning_space");
    let found = c
        .list_learning_spaces(Some(&json!({"skillscope": {"run": "r1"}})))
        .await
        .expect("list_learning_spaces");
    assert_eq!(
        found.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        [space.id.as_str()]
    );
    assert_ne!(other.id, space.id);
    let got = c
        .get_learning_space(&space.id)
        .await
        .expect("get_learning_space");
    assert_eq!(got.meta, meta);

    let link = c.learn(&space.id, &uuid).await.expect("learn");
    assert_eq!(link.status, "pending");
    assert_eq!(link.session_id, uuid);
    let dup = c.learn(&other.id, &uuid).await.expect_err("learned twice");
    assert_eq!(api_status(&dup), Some(409), "{dup}");

    let task = c
        .update_task_status(&uuid, &tasks[0].id, "success")
        .await
        .expect("update_task_status");
    assert_eq!(task.status, "success");
    assert_eq!(task.id, tasks[0].id);

    let mut polls = 0;
    let learned = loop {
        let s = c
            .learning_session(&space.id, &uuid)
            .await
            .expect("learning_session");
        polls += 1;
        if s.is_terminal() {
            break s;
        }
        assert!(polls < 10, "learning never finished: {s:?}");
    };
    assert_eq!(learned.status, "completed");
    let sessions = c.space_sessions(&space.id).await.expect("space_sessions");
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].session_id, uuid);
    assert_eq!(sessions[0].status, "completed");
    let skills = c.space_skills(&space.id).await.expect("space_skills");
    let names: BTreeSet<&str> = skills.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(
        names,
        BTreeSet::from(["daily-logs", "user-general-facts", "demo-task-learned"])
    );

    // Agent skills.
    let binary: Vec<u8> = (0u8..=255).rev().chain([0xff, 0xfe, 0x00]).collect();
    let skill = c
        .upload_skill(
            "my-skill.zip",
            skill_zip(&binary),
            &json!({"origin": "test"}),
        )
        .await
        .expect("upload_skill");
    assert_eq!(skill.name, "my-skill");
    assert_eq!(
        skill.description,
        "Writes hello.txt the way the verifier wants"
    );
    assert_eq!(skill.meta, json!({"origin": "test"}));
    assert_eq!(
        skill
            .file_index
            .iter()
            .map(|f| f.path.as_str())
            .collect::<BTreeSet<_>>(),
        BTreeSet::from(["SKILL.md", "assets/logo.bin", "scripts/run.sh"])
    );
    let included = c
        .include_skill(&space.id, &skill.id)
        .await
        .expect("include_skill");
    assert_eq!(included.skill_id, skill.id);
    assert_eq!(included.learning_space_id, space.id);
    let dup = c
        .include_skill(&space.id, &skill.id)
        .await
        .expect_err("included twice");
    assert_eq!(api_status(&dup), Some(409), "{dup}");
    c.exclude_skill(&space.id, &skill.id)
        .await
        .expect("exclude_skill");
    assert!(
        !state
            .lock()
            .unwrap()
            .space_skill_names(&space.id)
            .contains(&"my-skill".to_string())
    );

    let all = c.list_skills().await.expect("list_skills");
    assert!(all.iter().any(|k| k.id == skill.id), "{all:?}");
    assert_eq!(
        all.len(),
        2 + 2 + 1 + 1,
        "two defaults per space, learned, uploaded"
    );
    let fetched = c.get_skill(&skill.id).await.expect("get_skill");
    assert_eq!(fetched.name, "my-skill");
    let md = c
        .get_skill_file(&skill.id, "SKILL.md")
        .await
        .expect("get_skill_file");
    let content = md.content.expect("text content");
    assert!(
        content.raw.starts_with("---\nname: my-skill\n"),
        "{}",
        content.raw
    );
    assert!(md.url.is_none());
    let script = c
        .get_skill_file(&skill.id, "scripts/run.sh")
        .await
        .expect("get_skill_file");
    assert_eq!(
        script.content.expect("text").raw,
        "#!/bin/sh\necho hello > hello.txt\n"
    );
    let bin = c
        .get_skill_file(&skill.id, "assets/logo.bin")
        .await
        .expect("get_skill_file");
    assert!(bin.content.is_none());
    let url = bin.url.expect("a material URL for a binary file");
    assert_eq!(c.download(&url).await.expect("download"), binary);
    let zip = c
        .download_skill_zip(&skill.id)
        .await
        .expect("download_skill_zip");
    let files = unzip(&zip);
    assert_eq!(
        files["scripts/run.sh"],
        b"#!/bin/sh\necho hello > hello.txt\n"
    );
    assert_eq!(files["assets/logo.bin"], binary);

    // Project configs.
    let configs = c
        .patch_project_configs(json!({
            "task_success_criteria": "The last message contains \"VERDICT: PASS\"",
            "task_failure_criteria": null
        }))
        .await
        .expect("patch_project_configs");
    assert_eq!(
        configs["task_success_criteria"],
        "The last message contains \"VERDICT: PASS\""
    );

    // Clean-up.
    c.delete_skill(&skill.id).await.expect("delete_skill");
    c.delete_session(&uuid).await.expect("delete_session");
    assert_eq!(state.lock().unwrap().session_count(), 0);

    // Every exchange against the spec.
    let mut spec = Spec::load();
    let log = log_of(&state);
    let mut violations = Vec::new();
    let mut seen = BTreeSet::new();
    for ex in &log {
        if let Some(op) = spec.check(ex, &mut violations) {
            seen.insert(op);
        }
    }
    // Every endpoint the client names was driven, and nothing else was called. The material URL
    // is not named in client.rs: it comes from get_skill_file and is fetched by `download`.
    let named = client_endpoints();
    assert!(named.len() >= 20, "client.rs doc comments: {named:?}");
    let mut expected = BTreeSet::from([("GET".to_string(), "/material/{token}".to_string())]);
    for (method, path) in &named {
        match spec.path_for(method, path) {
            Ok(p) => {
                expected.insert((method.clone(), p));
            }
            Err(e) => violations.push(format!("client.rs names {e}")),
        }
    }
    for (m, p) in expected.difference(&seen) {
        violations.push(format!("{m} {p}: used by the client, never exercised"));
    }
    for (m, p) in seen.difference(&expected) {
        violations.push(format!(
            "{m} {p}: exercised, but client.rs does not name it"
        ));
    }
    assert!(
        violations.is_empty(),
        "{} violation(s) in {} exchanges:\n{}",
        violations.len(),
        log.len(),
        violations.join("\n")
    );
}

/// Acontext's own Python SDK (PyPI `acontext` 0.1.22, in the venv `scripts/acontext-sdk-venv.sh`
/// makes — a missing venv is made, and a venv that cannot be made fails the test) drives the fake
/// server through every call the client makes (`tests/acontext/sdk_driver.py`): every answer must
/// pass the SDK's pydantic models, every exchange the spec, and no route the client names may be
/// left out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acontexts_own_sdk_accepts_every_answer_of_the_fake_server() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = std::process::Command::new(root.join("scripts/acontext-sdk-venv.sh"))
        .output()
        .expect("scripts/acontext-sdk-venv.sh");
    assert!(
        venv.status.success(),
        "the acontext SDK venv could not be made: {}",
        String::from_utf8_lossy(&venv.stderr)
    );
    let python = root.join(String::from_utf8_lossy(&venv.stdout).trim());
    let (server, _client) = start(true).await;
    let out = tokio::process::Command::new(&python)
        .arg(root.join("tests/acontext/sdk_driver.py"))
        .arg(server.base_url())
        .arg(KEY)
        .output()
        .await
        .expect("run the SDK driver");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("checked 24 calls"), "{text}");

    let log = log_of(&server.state);
    let mut spec = Spec::load();
    let mut violations = Vec::new();
    let mut seen = BTreeSet::new();
    for ex in &log {
        if !(200..300).contains(&ex.status) {
            violations.push(format!("{} {} → {}", ex.method, ex.route, ex.status));
        }
        if ex.route.ends_with("/material/{token}") {
            seen.insert((ex.method.clone(), "/material/{token}".to_string()));
        } else if let Some(op) = spec.check(ex, &mut violations) {
            seen.insert(op);
        }
    }
    let mut expected = BTreeSet::from([("GET".to_string(), "/material/{token}".to_string())]);
    for (method, path) in client_endpoints() {
        match spec.path_for(&method, &path) {
            Ok(p) => {
                expected.insert((method, p));
            }
            Err(e) => violations.push(format!("client.rs names {e}")),
        }
    }
    for (m, p) in expected.difference(&seen) {
        violations.push(format!(
            "{m} {p}: called by the client, not driven through the SDK"
        ));
    }
    assert!(violations.is_empty(), "{}\n{text}", violations.join("\n"));
}

/// The checker is not vacuous: broken bodies, unknown routes, undocumented statuses and unknown
/// request fields are reported.
#[test]
fn the_spec_check_catches_bad_exchanges() {
    let mut spec = Spec::load();
    let ex = |method: &str, route: &str, request: Value, status: u16, response: Value| Exchange {
        method: method.into(),
        route: route.into(),
        request,
        status,
        response,
    };
    let cases = [
        // data.id must be a string.
        ex(
            "POST",
            "/api/v1/session",
            json!({}),
            201,
            json!({"code": 0, "msg": "", "data": {"id": 5}}),
        ),
        // disable_task_status_change is a boolean (extension).
        ex(
            "POST",
            "/api/v1/session",
            json!({"disable_task_status_change": "yes"}),
            201,
            json!({"code": 0, "msg": ""}),
        ),
        // A field the spec does not know.
        ex(
            "POST",
            "/api/v1/learning_spaces/{id}/learn",
            json!({"session_id": "s", "sesion": "typo"}),
            201,
            json!({"code": 0, "msg": ""}),
        ),
        // blob is required in handler.StoreMessageReq.
        ex(
            "POST",
            "/api/v1/session/{sid}/messages",
            json!({"format": "openai"}),
            201,
            json!({"code": 0, "msg": ""}),
        ),
        // format is an enum.
        ex(
            "POST",
            "/api/v1/session/{sid}/messages",
            json!({"blob": {}, "format": "markdown"}),
            201,
            json!({"code": 0, "msg": ""}),
        ),
        // items of a task page are model.Task; order is an integer.
        ex(
            "GET",
            "/api/v1/session/{session_id}/task",
            Value::Null,
            200,
            json!({"code": 0, "data": {"items": [{"id": "t", "order": "1"}], "has_more": false}}),
        ),
        // Undocumented status.
        ex(
            "GET",
            "/api/v1/agent_skills/{id}",
            Value::Null,
            404,
            json!({"code": 404, "msg": "x"}),
        ),
        // Unknown route.
        ex(
            "GET",
            "/api/v1/skills/{id}",
            Value::Null,
            200,
            json!({"code": 0}),
        ),
        // The status PATCH needs a known status.
        ex(
            "PATCH",
            "/api/v1/session/{session_id}/task/{task_id}/status",
            json!({"status": "done"}),
            200,
            json!({"code": 0, "data": {}}),
        ),
        // A body that is not JSON where the spec promises JSON.
        ex(
            "GET",
            "/api/v1/agent_skills/{id}",
            Value::Null,
            200,
            Value::Null,
        ),
    ];
    for case in &cases {
        let mut violations = Vec::new();
        spec.check(case, &mut violations);
        assert!(!violations.is_empty(), "not caught: {case:?}");
    }
    // A good one passes.
    let mut violations = Vec::new();
    spec.check(
        &ex(
            "POST",
            "/api/v1/learning_spaces/{id}/learn",
            json!({"session_id": "s"}),
            201,
            json!({"code": 0, "msg": "", "data": {"id": "l", "status": "pending"}}),
        ),
        &mut violations,
    );
    assert!(violations.is_empty(), "{violations:?}");
}

// ---- 2. auth ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_key_is_401_and_not_retried() {
    let (server, _) = start(true).await;
    let c = Client::new(&config(&server.base_url(), "sk-ac-wrong")).expect("client");
    let e = c
        .get_learning_space("9b2f0d4e-0000-4000-8000-000000000000")
        .await
        .expect_err("a wrong key");
    assert!(
        matches!(
            e,
            AcontextError::Api {
                status: 401,
                code: 401,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(!e.is_retryable());
    let log = log_of(&server.state);
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0].status, 401);
}

// ---- 3. pagination -----------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pagination_follows_cursors() {
    let (server, c) = start(true).await;
    let state = server.state.clone();
    let mut ids = Vec::new();
    for i in 0..450 {
        let s = c
            .create_learning_space(json!({"i": i, "parity": i % 2}))
            .await
            .expect("create");
        ids.push(s.id);
    }
    let route = "/api/v1/learning_spaces";
    let pages = |from: usize| -> Vec<Exchange> { exchanges(&state, "GET", route).split_off(from) };

    let all = c.list_learning_spaces(None).await.expect("list");
    assert_eq!(all.iter().map(|s| s.id.clone()).collect::<Vec<_>>(), ids);
    let got = pages(0);
    // Three pages of limit=200 (the fake's default page is 20): 200 + 200 + 50.
    let sizes: Vec<usize> = got
        .iter()
        .map(|e| e.response["data"]["items"].as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(
        sizes,
        [200, 200, 50],
        "{:?}",
        got.iter().map(|e| e.status).collect::<Vec<_>>()
    );
    let more: Vec<&Value> = got
        .iter()
        .map(|e| &e.response["data"]["has_more"])
        .collect();
    assert_eq!(more, [&json!(true), &json!(true), &json!(false)]);

    // The filter is sent with every page: 225 even spaces over two pages.
    let even = c
        .list_learning_spaces(Some(&json!({"parity": 0})))
        .await
        .expect("filtered list");
    assert_eq!(even.len(), 225);
    assert!(even.iter().all(|s| s.meta["parity"] == 0));
    assert_eq!(pages(3).len(), 2);

    // 900 skills (two defaults per space): five pages.
    let before = exchanges(&state, "GET", "/api/v1/agent_skills").len();
    let skills = c.list_skills().await.expect("list_skills");
    assert_eq!(skills.len(), 900);
    assert_eq!(
        skills.iter().map(|k| &k.id).collect::<BTreeSet<_>>().len(),
        900
    );
    assert_eq!(
        exchanges(&state, "GET", "/api/v1/agent_skills").len() - before,
        5
    );

    // Lazy: five items need one page.
    let before = exchanges(&state, "GET", route).len();
    let first: Vec<LearningSpace> = c
        .list_stream::<LearningSpace>("/learning_spaces".into(), Vec::new())
        .take(5)
        .map(|r| r.expect("item"))
        .collect()
        .await;
    assert_eq!(
        first.iter().map(|s| s.id.clone()).collect::<Vec<_>>(),
        ids[..5]
    );
    assert_eq!(exchanges(&state, "GET", route).len() - before, 1);
    // 201 items need two.
    let before = exchanges(&state, "GET", route).len();
    let n = c
        .list_stream::<LearningSpace>("/learning_spaces".into(), Vec::new())
        .take(201)
        .count()
        .await;
    assert_eq!(n, 201);
    assert_eq!(exchanges(&state, "GET", route).len() - before, 2);

    // A session's messages: every page, in order (201 messages, two pages of at most 200).
    let session = c
        .create_session(&CreateSession::default())
        .await
        .expect("session");
    for i in 0..201 {
        c.store_message(
            &session.id,
            json!({"role": "user", "content": format!("m{i}")}),
            "openai",
            None,
        )
        .await
        .expect("store_message");
    }
    let route = "/api/v1/session/{session_id}/messages";
    let before = exchanges(&state, "GET", route).len();
    let messages = c.get_messages(&session.id).await.expect("get_messages");
    assert_eq!(messages.len(), 201);
    assert_eq!(
        messages
            .iter()
            .map(|m| m.id.clone())
            .collect::<BTreeSet<_>>()
            .len(),
        201
    );
    assert_eq!(exchanges(&state, "GET", route).len() - before, 2);
}

// ---- 4. retries --------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_5xx_but_not_4xx() {
    let (server, c) = start(true).await;
    let state = server.state.clone();
    let space = c
        .create_learning_space(json!({"t": "retries"}))
        .await
        .expect("create");
    let route = "/api/v1/learning_spaces/{id}";

    // Two 500s, then success: three attempts.
    queue(&state, route, Fault::Status(500));
    queue(&state, route, Fault::Status(500));
    let got = c.get_learning_space(&space.id).await.expect("retried");
    assert_eq!(got.id, space.id);
    let statuses: Vec<u16> = exchanges(&state, "GET", route)
        .iter()
        .map(|e| e.status)
        .collect();
    assert_eq!(statuses, [500, 500, 200]);

    // A 400 fails at once.
    queue(&state, route, Fault::Status(400));
    let e = c.get_learning_space(&space.id).await.expect_err("400");
    assert_eq!(api_status(&e), Some(400), "{e:?}");
    assert_eq!(exchanges(&state, "GET", route).len(), 4);

    // More 500s than retries: the last error comes back after 1 + 3 attempts.
    for _ in 0..4 {
        queue(&state, route, Fault::Status(500));
    }
    let e = c.get_learning_space(&space.id).await.expect_err("500s");
    assert_eq!(api_status(&e), Some(500), "{e:?}");
    assert_eq!(exchanges(&state, "GET", route).len(), 8);

    // A dropped connection on a GET is retried (the fake does not log the dropped attempt).
    queue(&state, route, Fault::Drop);
    let got = c
        .get_learning_space(&space.id)
        .await
        .expect("retried after a drop");
    assert_eq!(got.id, space.id);
    assert!(state.lock().unwrap().faults.is_empty(), "the drop was used");
    assert_eq!(exchanges(&state, "GET", route).len(), 9);

    // Messages are not idempotent.
    let session = c
        .create_session(&CreateSession::default())
        .await
        .expect("session");
    let messages = "/api/v1/session/{session_id}/messages";
    let msg = || json!({"role": "user", "content": "hi"});
    // Stored, then the connection drops: not retried, one message on the server.
    queue(&state, messages, Fault::DropAfter);
    let e = c
        .store_message(&session.id, msg(), "openai", None)
        .await
        .expect_err("a dropped response");
    assert!(
        matches!(e, AcontextError::Transport { connect: false, .. }),
        "{e:?}"
    );
    assert!(!e.is_unsent());
    assert!(state.lock().unwrap().faults.is_empty());
    assert_eq!(state.lock().unwrap().messages_of(&session.id), 1);
    // A 500 is not retried either (the server may have stored it).
    queue(&state, messages, Fault::Status(500));
    let e = c
        .store_message(&session.id, msg(), "openai", None)
        .await
        .expect_err("500");
    assert_eq!(api_status(&e), Some(500), "{e:?}");
    assert_eq!(exchanges(&state, "POST", messages).len(), 1);
    // 429 means nothing happened: retried.
    queue(&state, messages, Fault::Status(429));
    c.store_message(&session.id, msg(), "openai", None)
        .await
        .expect("retried after 429");
    let statuses: Vec<u16> = exchanges(&state, "POST", messages)
        .iter()
        .map(|e| e.status)
        .collect();
    assert_eq!(statuses, [500, 429, 201]);
    assert_eq!(state.lock().unwrap().messages_of(&session.id), 2);

    // POST /session with use_uuid is idempotent: the retry finds the session made by the
    // dropped attempt.
    let sessions_before = state.lock().unwrap().session_count();
    let uuid = uuid::Uuid::new_v4().to_string();
    queue(&state, "/api/v1/session", Fault::DropAfter);
    let s = c
        .create_session(&CreateSession {
            use_uuid: Some(uuid.clone()),
            ..Default::default()
        })
        .await
        .expect("retried after a drop");
    assert_eq!(s.id, uuid);
    assert!(state.lock().unwrap().faults.is_empty());
    assert_eq!(state.lock().unwrap().session_count(), sessions_before + 1);
    let creates = exchanges(&state, "POST", "/api/v1/session");
    assert_eq!(
        creates.last().map(|e| e.status),
        Some(200),
        "the existing session"
    );

    // Without use_uuid it is not: a dropped create is an error, and one session was made.
    let sessions_before = state.lock().unwrap().session_count();
    queue(&state, "/api/v1/session", Fault::DropAfter);
    let e = c
        .create_session(&CreateSession::default())
        .await
        .expect_err("not retried");
    assert!(matches!(e, AcontextError::Transport { .. }), "{e:?}");
    assert_eq!(state.lock().unwrap().session_count(), sessions_before + 1);
}

// ---- 5. the optional status route --------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_status_route_is_route_missing() {
    let (server, c) = start(false).await;
    let req = CreateSession {
        disable_task_status_change: Some(true),
        ..Default::default()
    };
    let session = c.create_session(&req).await.expect("session");
    assert_eq!(session.disable_task_status_change, None);
    c.store_message(
        &session.id,
        json!({"role": "user", "content": "do it"}),
        "openai",
        None,
    )
    .await
    .expect("message");
    c.flush(&session.id).await.expect("flush");
    let tasks = c.get_tasks(&session.id).await.expect("tasks");
    assert_eq!(tasks.len(), 1);
    let e = c
        .update_task_status(&session.id, &tasks[0].id, "success")
        .await
        .expect_err("no such route");
    assert!(
        matches!(
            e,
            AcontextError::RouteMissing {
                status: 404 | 405,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(!e.is_retryable());
    assert_eq!(
        server.state.lock().unwrap().task_statuses(&session.id),
        ["running"]
    );

    // The skill-bench server knows the flag.
    let (_server, c) = start(true).await;
    let on = c.create_session(&req).await.expect("session");
    assert_eq!(on.disable_task_status_change, Some(true));
    let off = c
        .create_session(&CreateSession::default())
        .await
        .expect("session");
    assert_eq!(off.disable_task_status_change, Some(false));
}

// ---- 6. older servers --------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_duplicate_use_uuid_is_409() {
    let (server, c) = start(true).await;
    server.state.lock().unwrap().legacy_409 = true;
    let req = CreateSession {
        use_uuid: Some(uuid::Uuid::new_v4().to_string()),
        ..Default::default()
    };
    let first = c.create_session(&req).await.expect("first");
    assert_eq!(Some(first.id), req.use_uuid);
    let e = c.create_session(&req).await.expect_err("duplicate");
    assert!(matches!(e, AcontextError::Api { status: 409, .. }), "{e:?}");
    assert!(!e.is_retryable());
    let creates = exchanges(&server.state, "POST", "/api/v1/session");
    assert_eq!(
        creates.iter().map(|e| e.status).collect::<Vec<_>>(),
        [201, 409]
    );
    assert_eq!(server.state.lock().unwrap().session_count(), 1);
}

// ---- 7. the key ----------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_never_appears_in_errors() {
    const SECRET: &str = "sk-ac-SECRET-0123456789abcdef";
    let no_key = |e: &AcontextError| {
        let shown = format!("{e} | {e:?}");
        assert!(!shown.contains(SECRET), "{shown}");
        assert!(!shown.contains("0123456789abcdef"), "{shown}");
    };

    // Connection refused: a port that was free a moment ago.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let dead =
        Client::new(&config(&format!("http://127.0.0.1:{port}/api/v1"), SECRET)).expect("client");
    assert!(!format!("{dead:?}").contains(SECRET));
    let e = dead.list_skills().await.expect_err("nothing listens");
    assert!(
        matches!(e, AcontextError::Transport { connect: true, .. }),
        "{e:?}"
    );
    assert!(e.is_unsent());
    no_key(&e);
    let e = dead
        .store_message("s", json!({"role": "user"}), "openai", None)
        .await
        .expect_err("nothing listens");
    no_key(&e);

    // 401 from a server that expects another key.
    let (server, _) = start(true).await;
    let c = Client::new(&config(&server.base_url(), SECRET)).expect("client");
    let e = c
        .create_session(&CreateSession::default())
        .await
        .expect_err("a wrong key");
    assert_eq!(api_status(&e), Some(401));
    no_key(&e);
    let e = c
        .download_skill_zip("9b2f0d4e-0000-4000-8000-000000000000")
        .await
        .expect_err("a wrong key");
    assert_eq!(api_status(&e), Some(401));
    no_key(&e);
}

// ---- 7. the released API and the skill-bench branch ---------------------------------------------

/// The stand-in answers as each server exactly, and [`Offer::probe`] tells them apart by route
/// probes on a nil id (which create nothing): the released API has project criteria and
/// `download_zip` but no status PATCH; the skill-bench branch the PATCH but neither of the others,
/// a 409 for a duplicate `use_uuid` and `pending → running → completed` learning statuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_released_api_and_the_skill_bench_branch_are_told_apart() {
    use skillscope::acontext::offer::{Kind, Offer};
    use skillscope::acontext::standin::Api;
    for (api, kind) in [
        (Api::Released, Kind::Released),
        (Api::SkillBench, Kind::SkillBench),
        (Api::ReleasedWithStatusPatch, Kind::ReleasedWithStatusPatch),
    ] {
        let server =
            FakeServer::start(FakeState::with_api(KEY, api), ([127, 0, 0, 1], 0).into()).await;
        let c = Client::new(&config(&server.base_url(), KEY)).unwrap();
        let offer = Offer::probe(&c).await.unwrap();
        assert_eq!(offer.kind(), kind, "{api:?}: {offer:?}");
        let line = offer.describe();
        match kind {
            Kind::Released => assert!(
                line.starts_with(
                    "the released API (main, SDK 0.1.22): verdicts by project criteria"
                ) && line
                    .contains("pending → distilling → skill_writing → queued → completed/failed")
                    && line.ends_with("exports as one ZIP per skill"),
                "{line}"
            ),
            Kind::SkillBench => assert!(
                line.starts_with(
                    "the skill-bench branch's API: verdicts by status PATCH; no project criteria"
                ) && line.contains("pending → running → completed/failed")
                    && line.ends_with("exports file by file (no download_zip)"),
                "{line}"
            ),
            _ => assert!(
                line.contains("verdicts by status PATCH (or project criteria)"),
                "{line}"
            ),
        }
        // The probes changed nothing.
        assert_eq!(server.state.lock().unwrap().session_count(), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_skill_bench_branch_is_served_as_it_is() {
    use skillscope::acontext::standin::Api;
    let server = FakeServer::start(
        FakeState::with_api(KEY, Api::SkillBench),
        ([127, 0, 0, 1], 0).into(),
    )
    .await;
    let c = Client::new(&config(&server.base_url(), KEY)).unwrap();
    // Routes the branch does not have answer gin's plain 404.
    for e in [
        c.patch_project_configs(json!({"task_success_criteria": "x"}))
            .await
            .unwrap_err(),
        c.download_skill_zip(&uuid::Uuid::nil().to_string())
            .await
            .unwrap_err(),
    ] {
        assert!(matches!(e, AcontextError::RouteMissing { .. }), "{e:?}");
    }
    // A duplicate use_uuid is refused; the flag is echoed.
    let req = CreateSession {
        use_uuid: Some(uuid::Uuid::new_v4().to_string()),
        disable_task_status_change: Some(true),
        ..Default::default()
    };
    let s = c.create_session(&req).await.unwrap();
    assert_eq!(s.disable_task_status_change, Some(true));
    let e = c.create_session(&req).await.unwrap_err();
    assert!(matches!(e, AcontextError::Api { status: 409, .. }), "{e:?}");
    // Learning: pending until the task is set, then running, then completed.
    let space = c.create_learning_space(json!({})).await.unwrap();
    c.learn(&space.id, &s.id).await.unwrap();
    c.store_message(
        &s.id,
        json!({"role": "user", "content": "do it"}),
        "openai",
        None,
    )
    .await
    .unwrap();
    c.flush(&s.id).await.unwrap();
    let status = |c: Client, space: String, sid: String| async move {
        c.learning_session(&space, &sid).await.unwrap().status
    };
    assert_eq!(
        status(c.clone(), space.id.clone(), s.id.clone()).await,
        "pending"
    );
    assert_eq!(
        status(c.clone(), space.id.clone(), s.id.clone()).await,
        "pending",
        "nothing resolved lazily"
    );
    let task = c.get_tasks(&s.id).await.unwrap().remove(0);
    assert_eq!(task.status, "running", "the task agent may not decide");
    c.update_task_status(&s.id, &task.id, "success")
        .await
        .unwrap();
    let mut seen = Vec::new();
    for _ in 0..4 {
        let st = status(c.clone(), space.id.clone(), s.id.clone()).await;
        if seen.last() != Some(&st) {
            seen.push(st);
        }
    }
    assert_eq!(seen, ["running", "completed"]);
}

/// On the released API a session with task tracking off keeps its messages but gets no task
/// (nothing to learn from), and its learning session completes at once without promoting
/// anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn released_sessions_without_task_tracking_get_no_task() {
    let (server, c) = start(false).await;
    let s = c
        .create_session(&CreateSession {
            disable_task_tracking: Some(true),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(s.disable_task_tracking);
    let m = c
        .store_message(
            &s.id,
            json!({"role": "user", "content": "do it"}),
            "openai",
            None,
        )
        .await
        .unwrap();
    assert_eq!(m.session_id, s.id);
    c.flush(&s.id).await.unwrap();
    assert!(c.get_tasks(&s.id).await.unwrap().is_empty());
    let space = c.create_learning_space(json!({})).await.unwrap();
    c.learn(&space.id, &s.id).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let st = c.learning_session(&space.id, &s.id).await.unwrap().status;
        if seen.last() != Some(&st) {
            seen.push(st);
        }
    }
    assert_eq!(seen, ["pending", "completed"]);
    let log = log_of(&server.state);
    let stored = log
        .iter()
        .find(|e| e.route.ends_with("/messages") && e.method == "POST")
        .unwrap();
    assert_eq!(
        stored.response["data"]["session_task_process_status"],
        "disable_tracking"
    );
}
