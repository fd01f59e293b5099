//! A stand-in for the Acontext server, shipped in the binary: **it learns nothing real.** It
//! answers the endpoints skillscope uses exactly as `shared/acontext/openapi.json` and the Go
//! server describe them, with a fixed template where Acontext's LLM task agent and skill learner
//! would think — so the whole experiment can be tried offline (`skillscope experiment PLAN.toml
//! --dry-run`, `skillscope acontext-standin`) and the tests can run the client and the learning
//! pipeline against a real HTTP server.
//!
//! It answers as one of three servers ([`Api`]):
//!
//! - [`Api::Released`] — Acontext as released (main @ 259d73b, Python SDK 0.1.22,
//!   `shared/acontext/openapi.json`): project task criteria (`/project/configs`), `download_zip`,
//!   material URLs, `disable_task_tracking` (messages of such a session are never processed: no
//!   task, no learning), learning statuses `pending → distilling → skill_writing [→ queued] →
//!   completed | failed`, the lazy resolution of a pending learning session (its undecided tasks
//!   become success when it is polled), and `use_uuid` answering 200 with an existing session;
//! - [`Api::ReleasedWithStatusPatch`] — the same plus the `skill-bench` branch's two additions as
//!   `plans/` describes them: the `PATCH /session/{id}/task/{task_id}/status` route and the
//!   `disable_task_status_change` session flag (echoed in sessions);
//! - [`Api::SkillBench`] — the `skill-bench` branch as it is (61cc28c, based on main of
//!   2026-02-25): the PATCH route and the flag, but no `/project/configs`, no `download_zip`, no
//!   material route (a binary skill file's `url` is a presigned object-store URL, served here
//!   outside `/api/v1` without the key), a duplicate `use_uuid` answered 409, learning statuses
//!   `pending → running → completed | failed`, no lazy resolution.
//!
//! Everywhere: the `{code, data, msg}` envelope (code 0 on success), Bearer auth (401), cursor
//! pagination (`limit` ≤ 200, `next_cursor`, `has_more`), 409 for a session learned twice or a
//! skill included twice, the two default skills of a new learning space, ZIP skill uploads with
//! SKILL.md frontmatter checks, and gin's plain-text 404 for a route the server does not have.
//!
//! What stands in for the LLMs ([`learner`]): `flush` makes one task per session from the first
//! user message (none when task tracking is off) and, when the project's `task_success_criteria`
//! / `task_failure_criteria` name a marker the assistant message carries, resolves it accordingly;
//! a learning session advances one state per status poll and, on completion, appends a templated
//! SOP entry (success) or Warning entry (failure) to the task's skill in the space — its curated
//! upload (tagged `meta.skillscope.source_task`) or else `<task>-learned`, whose description says
//! it was written by this stand-in.
//!
//! Every request and response can be logged with its route template ([`FakeState::log`], for
//! schema checks); faults (5xx, stalls, dropped connections) can be queued ([`Fault`]).
//!
//! Layout: this file holds the state; [`wire`] the envelope, JSON shapes, pagination and ZIPs;
//! [`sessions`] and [`spaces`] and [`skills`] the handlers; [`learner`] the templated learning;
//! [`server`] the router, the auth/log/fault layer and [`FakeServer`].

mod learner;
mod server;
mod sessions;
mod skills;
mod spaces;
mod wire;

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

pub use server::{FakeServer, router};

/// What the stand-in writes into every skill it makes, so nobody mistakes it for learning.
pub const STANDIN_NOTE: &str =
    "written by skillscope's Acontext stand-in, which learns nothing real (a fixed template)";

/// What the stand-in is, in one phrase, wherever it is started or named.
pub const STANDIN_LABEL: &str = "a stand-in for Acontext that learns nothing real (a fixed template stands where its LLMs would learn)";

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

/// Which Acontext server the stand-in answers as (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Api {
    /// Acontext as released (main, SDK 0.1.22).
    #[default]
    Released,
    /// The released API plus the `skill-bench` branch's status PATCH and flag.
    ReleasedWithStatusPatch,
    /// The `skill-bench` branch as it is.
    SkillBench,
}

impl Api {
    /// `released`, `released+patch` or `skill-bench`.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Released => "released",
            Api::ReleasedWithStatusPatch => "released+patch",
            Api::SkillBench => "skill-bench",
        }
    }

    /// Parses [`Api::as_str`]'s names.
    ///
    /// # Errors
    /// The name, and the ones known.
    pub fn parse(s: &str) -> Result<Api, String> {
        [Api::Released, Api::ReleasedWithStatusPatch, Api::SkillBench]
            .into_iter()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| {
                format!("unknown Acontext API {s:?} (released, released+patch or skill-bench)")
            })
    }

    /// Serves the status PATCH and honours `disable_task_status_change`.
    pub fn status_patch(self) -> bool {
        self != Api::Released
    }

    /// The released API's routes and behaviours (project configs, `download_zip`, material
    /// URLs, `distilling`/`skill_writing`/`queued`, lazy resolution, 200 on an existing
    /// `use_uuid`).
    pub fn released(self) -> bool {
        self != Api::SkillBench
    }
}

#[derive(Debug, Clone, Default)]
struct FakeSession {
    id: String,
    configs: Value,
    manual_status: bool,
    /// `disable_task_tracking`: messages are never processed, no task is made.
    no_tracking: bool,
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
    /// Which server it answers as.
    pub api: Api,
    /// The space's skill agent is busy when a session's skill writing ends (released API): the
    /// session goes `queued` for one poll before `completed`, as when Acontext's per-space lock is
    /// held by another session.
    pub queue_learning: bool,
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
    /// Logged exchanges (while [`FakeState::keep_log`]).
    pub log: Vec<Exchange>,
    /// Log every exchange into [`FakeState::log`] (tests read it; a long dry run need not keep
    /// it).
    pub keep_log: bool,
    /// Queued faults: (pattern, fault). A pattern `"METHOD /path"` matches that method on a
    /// route template ending with `/path`; a pattern without a method matches any route
    /// template containing it.
    pub faults: VecDeque<(String, Fault)>,
    clock: u64,
}

/// Shared handle.
pub type Shared = Arc<Mutex<FakeState>>;

impl FakeState {
    /// A state accepting `api_key`: the released API, with the status PATCH and flag when
    /// `status_patch` ([`Api::ReleasedWithStatusPatch`]).
    pub fn new(api_key: &str, status_patch: bool) -> Shared {
        FakeState::with_api(
            api_key,
            if status_patch {
                Api::ReleasedWithStatusPatch
            } else {
                Api::Released
            },
        )
    }

    /// A state accepting `api_key` that answers as `api`.
    pub fn with_api(api_key: &str, api: Api) -> Shared {
        Arc::new(Mutex::new(FakeState {
            api_key: api_key.to_string(),
            api,
            keep_log: true,
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
