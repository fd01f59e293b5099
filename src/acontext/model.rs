//! Acontext API objects (`shared/acontext/openapi.json`, `components/schemas`), as the server sends
//! them inside the `{code, data, msg}` envelope. Unknown fields are ignored; absent ones default.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `model.Session`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Session {
    /// Session UUID.
    pub id: String,
    /// Project.
    #[serde(default)]
    pub project_id: String,
    /// Session configs.
    #[serde(default)]
    pub configs: Value,
    /// Task tracking off.
    #[serde(default)]
    pub disable_task_tracking: bool,
    /// Only on servers with manual task status (`skill-bench` branch): the task agent may not
    /// finalize task status. `None` when the server does not know the field.
    #[serde(default)]
    pub disable_task_status_change: Option<bool>,
    /// Created.
    #[serde(default)]
    pub created_at: String,
}

/// `POST /session` body (`handler.CreateSessionReq`).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CreateSession {
    /// Idempotency: the session's UUID, chosen by the client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub use_uuid: Option<String>,
    /// Session configs (free-form).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub configs: Option<Value>,
    /// User identifier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Ask the server to keep the task agent from finalizing status (skill-bench servers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_task_status_change: Option<bool>,
    /// Task tracking off (released API and skill-bench alike): the session's messages are
    /// stored but never processed — no task is extracted, nothing is learned. For sessions that
    /// must not teach a space (the status-mode probe).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_task_tracking: Option<bool>,
}

/// `model.Message`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Message {
    /// Message UUID.
    pub id: String,
    /// Session.
    #[serde(default)]
    pub session_id: String,
    /// `user` or `assistant`.
    #[serde(default)]
    pub role: String,
    /// User metadata.
    #[serde(default)]
    pub meta: Value,
    /// Parts (`{type, text, …}`).
    #[serde(default)]
    pub parts: Vec<Value>,
}

/// `httpclient.FlagResponse` (flush result).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Flag {
    /// 200 on success.
    #[serde(default)]
    pub status: i64,
    /// Error message otherwise.
    #[serde(default)]
    pub errmsg: String,
}

/// `model.TaskData`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TaskData {
    /// What the task is.
    #[serde(default)]
    pub task_description: String,
    /// Progress notes.
    #[serde(default)]
    pub progresses: Option<Vec<String>>,
}

/// `model.Task`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Task {
    /// Task UUID.
    pub id: String,
    /// Session.
    #[serde(default)]
    pub session_id: String,
    /// Order within the session.
    #[serde(default)]
    pub order: i64,
    /// `pending`, `running`, `success` or `failed`.
    #[serde(default)]
    pub status: String,
    /// Planning tasks are not learned from.
    #[serde(default)]
    pub is_planning: bool,
    /// Description and progress.
    #[serde(default)]
    pub data: TaskData,
}

/// `model.LearningSpace`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LearningSpace {
    /// Space UUID.
    pub id: String,
    /// Metadata (skillscope tags its spaces here).
    #[serde(default)]
    pub meta: Value,
    /// Created.
    #[serde(default)]
    pub created_at: String,
}

/// `model.LearningSpaceSession`: a session attached to a space and its learning status.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LearningSpaceSession {
    /// Link UUID.
    #[serde(default)]
    pub id: String,
    /// Space.
    #[serde(default)]
    pub learning_space_id: String,
    /// Session.
    #[serde(default)]
    pub session_id: String,
    /// Released servers (main, SDK 0.1.22): `pending`, `distilling`, `skill_writing`, `queued`
    /// (the space's skill agent is busy with another session), `completed` or `failed`. The
    /// `skill-bench` branch: `pending`, `running`, `completed` or `failed`.
    #[serde(default)]
    pub status: String,
}

/// Every learning-session status a released server (main) or the `skill-bench` branch reports.
pub const LEARNING_STATUSES: [&str; 7] = [
    "pending",
    "distilling",
    "skill_writing",
    "queued",
    "running",
    "completed",
    "failed",
];

impl LearningSpaceSession {
    /// True once learning finished (`completed` or `failed`), on either server.
    pub fn is_terminal(&self) -> bool {
        matches!(self.status.as_str(), "completed" | "failed")
    }

    /// True for a status neither server reports (kept and polled on, but said).
    pub fn is_unknown(&self) -> bool {
        !LEARNING_STATUSES.contains(&self.status.as_str())
    }
}

/// `model.FileInfo`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FileInfo {
    /// Path within the skill.
    pub path: String,
    /// MIME type.
    #[serde(default)]
    pub mime: String,
}

/// `model.AgentSkills` (also the list items of `GET /agent_skills`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct AgentSkill {
    /// Skill UUID.
    pub id: String,
    /// Name from SKILL.md (not unique).
    #[serde(default)]
    pub name: String,
    /// Description from SKILL.md.
    #[serde(default)]
    pub description: String,
    /// Files.
    #[serde(default)]
    pub file_index: Vec<FileInfo>,
    /// Metadata.
    #[serde(default)]
    pub meta: Value,
    /// Last change.
    #[serde(default)]
    pub updated_at: String,
}

/// `model.LearningSpaceSkill`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LearningSpaceSkill {
    /// Link UUID.
    #[serde(default)]
    pub id: String,
    /// Space.
    #[serde(default)]
    pub learning_space_id: String,
    /// Skill.
    #[serde(default)]
    pub skill_id: String,
}

/// `fileparser.FileContent`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FileContent {
    /// `text`, `json`, `csv`, `code`.
    #[serde(default, rename = "type")]
    pub kind: String,
    /// The text.
    #[serde(default)]
    pub raw: String,
}

/// `service.GetFileOutput`: a text file's content, or a material URL for binary files.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SkillFile {
    /// Path.
    #[serde(default)]
    pub path: String,
    /// MIME type.
    #[serde(default)]
    pub mime: String,
    /// Text content, for parseable files.
    #[serde(default)]
    pub content: Option<FileContent>,
    /// Material URL, for binary files.
    #[serde(default)]
    pub url: Option<String>,
}

/// A page of a cursor-paginated list (`{items, next_cursor, has_more}`).
#[derive(Debug, Clone, Deserialize)]
pub struct Page<T> {
    /// Items.
    #[serde(default = "Vec::new")]
    pub items: Vec<T>,
    /// Cursor of the next page.
    #[serde(default)]
    pub next_cursor: Option<String>,
    /// More pages follow.
    #[serde(default)]
    pub has_more: bool,
}
