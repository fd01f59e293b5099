//! Harbor 0.26's per-trial `lock.json` (`harbor/models/job/lock.py::TrialLock`, schema version
//! 2): the trial's resolved inputs — the task's durable identity (`task.digest`, Harbor's
//! packager digest, [`crate::skillsbench::digest::task_digest`]), the agent, the skills it was
//! given with their digests, the environment and the verifier — so a skillscope trial and a
//! Harbor trial of the same task can be told apart or matched.
//!
//! Written as Harbor writes it: `model_dump_json(indent=4, exclude_none=True)` — four-space
//! indent, keys in the model's field order, `None` fields left out, no trailing newline — so
//! Harbor's own model reads it back byte for byte. Harbor 0.25's `TrialLock` accepts it too (it
//! ignores 0.26's `artifacts` and `override_error_policy`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error_policy::ErrorPolicyOverride;
use crate::skillsbench::digest::{self, DigestError};

/// The lock format version Harbor 0.26 writes.
pub const LOCK_SCHEMA_VERSION: u32 = 2;

/// `TrialLock`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TrialLock {
    /// Format version ([`LOCK_SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The task's identity.
    pub task: TaskLock,
    /// Harbor's install-only mode (never, here).
    #[serde(default)]
    pub install_only: bool,
    /// Harbor's timeout multiplier (1).
    #[serde(default = "one")]
    pub timeout_multiplier: f64,
    /// The agent, as the trial's `config.json` has it.
    pub agent: LockAgent,
    /// Bridge inputs (none).
    #[serde(default)]
    pub bridge_inputs: BTreeMap<String, serde_json::Value>,
    /// The skills the agent was given, by name, with their digests.
    #[serde(default)]
    pub skills: Vec<SkillLock>,
    /// The environment, as the trial's `config.json` has it.
    pub environment: LockEnvironment,
    /// The verifier's settings and where it runs.
    pub verifier: LockVerifier,
    /// Artifacts collected from the container (none beyond Harbor's own).
    #[serde(default)]
    pub artifacts: Vec<serde_json::Value>,
    /// Error-policy overrides (none).
    #[serde(default)]
    pub override_error_policy: BTreeMap<String, ErrorPolicyOverride>,
}

fn one() -> f64 {
    1.0
}

/// `TaskLock`: a local task's name, version, digest and path.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TaskLock {
    /// The task folder's name.
    pub name: String,
    /// `task.toml`'s `[task] version`, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `local` (a folder), `git` or `package`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Harbor's packager digest, `sha256:<64 lowercase hex>`.
    pub digest: String,
    /// The dataset the task came from, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The task folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// `AgentConfig` as a lock dumps it (defaults written, `None` left out).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LockAgent {
    /// Harness name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// Harbor's flag (false).
    #[serde(default)]
    pub skip_model_parsing: bool,
    /// Skill folders Harbor would inject (none: skillscope's conditions put skills in the image;
    /// the lock's `skills` list them).
    #[serde(default)]
    pub skills: Vec<String>,
    /// Harbor's flag (false).
    #[serde(default)]
    pub resume_trajectory: bool,
    /// Extra hosts (none).
    #[serde(default)]
    pub extra_allowed_hosts: Vec<String>,
    /// Harness arguments.
    #[serde(default)]
    pub kwargs: BTreeMap<String, serde_json::Value>,
    /// MCP servers (none).
    #[serde(default)]
    pub mcp_servers: Vec<serde_json::Value>,
}

/// `AgentSkillLock`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SkillLock {
    /// The skill folder's name.
    pub name: String,
    /// The skill folder, resolved.
    pub source: String,
    /// Harbor's skill digest ([`crate::skillsbench::digest::skill_digest`]).
    pub digest: String,
}

/// The trial's `EnvironmentConfig` as a lock dumps it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LockEnvironment {
    /// `docker`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Rebuild even when cached.
    #[serde(default)]
    pub force_build: bool,
    /// Remove the container afterwards.
    #[serde(default)]
    pub delete: bool,
    /// Stream output (false).
    #[serde(default)]
    pub stream: bool,
    /// `auto`.
    pub cpu_enforcement_policy: String,
    /// `auto`.
    pub memory_enforcement_policy: String,
    /// CPUs applied, when limited (a whole number written as an integer, as Harbor
    /// normalizes it).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::result::cpus"
    )]
    pub override_cpus: Option<f64>,
    /// Memory applied, MiB, when limited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub override_memory_mb: Option<u64>,
    /// Extra compose files (none: a task's own compose file is part of its digest).
    #[serde(default)]
    pub extra_docker_compose: Vec<String>,
    /// What skillscope records of the environment (condition, settings, variable names, the
    /// request a host cut), never a secret value.
    #[serde(default)]
    pub kwargs: BTreeMap<String, serde_json::Value>,
    /// Extra hosts (none).
    #[serde(default)]
    pub extra_allowed_hosts: Vec<String>,
}

/// `VerifierLock`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LockVerifier {
    /// The verifier is switched off (never, here).
    #[serde(default)]
    pub disable: bool,
    /// `shared` or `separate`; `None` for multi-step tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_mode: Option<String>,
}

/// The skills of skill root `root` as a lock lists them (Harbor's `resolve_skills`): `root`
/// itself when it holds a `SKILL.md`, else each non-hidden folder in it that does, sorted by
/// name, each with its resolved path and [`digest::skill_digest`]. Folders without a `SKILL.md`
/// are left out (Harbor refuses them; skillscope reports them as invalid skills elsewhere).
///
/// # Errors
/// A skill folder that cannot be read ([`DigestError`]).
pub fn skill_locks(root: &Path) -> Result<Vec<SkillLock>, DigestError> {
    let lock = |dir: &Path| -> Result<SkillLock, DigestError> {
        Ok(SkillLock {
            name: dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            source: std::fs::canonicalize(dir)
                .unwrap_or_else(|_| dir.to_path_buf())
                .display()
                .to_string(),
            digest: digest::skill_digest(dir)?,
        })
    };
    if !root.is_dir() {
        return Ok(Vec::new());
    }
    if root.join("SKILL.md").is_file() {
        return Ok(vec![lock(root)?]);
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .map_err(|e| DigestError::Io {
            path: root.to_path_buf(),
            source: e,
        })?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.join("SKILL.md").is_file()
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    dirs.sort();
    dirs.iter().map(|d| lock(d)).collect()
}

/// `[task] version` of a `task.toml`, when it is a string.
pub fn task_version(task_dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(task_dir.join("task.toml")).ok()?;
    let table: toml::Table = toml::from_str(&text).ok()?;
    table
        .get("task")?
        .get("version")?
        .as_str()
        .map(str::to_string)
}

/// The JSON text of `lock` as Harbor writes it (four-space indent, no trailing newline).
///
/// # Errors
/// Serialization errors (none in practice).
pub fn to_harbor_json(value: &impl Serialize) -> serde_json::Result<String> {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    value.serialize(&mut ser)?;
    Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
}
