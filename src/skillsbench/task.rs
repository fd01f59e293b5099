//! One SkillsBench task: `task.toml`, `instruction.md`, `environment/`, `solution/`, `tests/`.
//!
//! The on-disk layout and the `task.toml` keys follow Harbor's task format as used by SkillsBench
//! (`tasks/<id>/{instruction.md, task.toml, environment/Dockerfile, environment/skills/<name>/SKILL.md,
//! solution/solve.sh, tests/test.sh}`). Unknown keys are tolerated; keys of the wrong type are errors
//! that name the file, the key and the line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::BenchError;
use super::skill::{Skill, scan_skills_dir};
use crate::toml_text::{Written, syntax_error};

/// Default agent timeout in seconds when `[agent] timeout_sec` is absent (Harbor's default).
pub const DEFAULT_AGENT_TIMEOUT_SEC: f64 = 600.0;
/// Default verifier timeout in seconds when `[verifier] timeout_sec` is absent (Harbor's default).
pub const DEFAULT_VERIFIER_TIMEOUT_SEC: f64 = 600.0;
/// Default image build timeout in seconds when `[environment] build_timeout_sec` is absent.
pub const DEFAULT_BUILD_TIMEOUT_SEC: f64 = 600.0;

/// The parsed `task.toml`. Every section is optional; missing values take Harbor's defaults.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct TaskConfig {
    /// Format version string (`version = "1.0"`).
    #[serde(default)]
    pub version: Option<String>,
    /// `[metadata]`: authorship, difficulty, category and tags.
    #[serde(default)]
    pub metadata: Metadata,
    /// `[agent]`: the agent's wall-clock budget.
    #[serde(default)]
    pub agent: AgentSection,
    /// `[verifier]`: the verifier's wall-clock budget and environment.
    #[serde(default)]
    pub verifier: VerifierSection,
    /// `[solution]`: environment for the reference solution (used by the oracle agent).
    #[serde(default)]
    pub solution: SolutionSection,
    /// `[environment]`: image build budget and container resources.
    #[serde(default)]
    pub environment: EnvironmentSection,
}

/// `[metadata]` of `task.toml`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct Metadata {
    /// `easy` / `medium` / `hard` in SkillsBench (the paper's core / extended / extreme).
    #[serde(default)]
    pub difficulty: Option<String>,
    /// Free-form category chosen by the task author (e.g. `engineering`).
    #[serde(default)]
    pub category: Option<String>,
    /// Free-form tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Task author's name.
    #[serde(default)]
    pub author_name: Option<String>,
}

/// `[agent]` of `task.toml`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct AgentSection {
    /// Agent wall-clock budget, seconds.
    #[serde(default = "default_agent_timeout")]
    pub timeout_sec: f64,
    /// The user the agent's execs (the oracle's `solve.sh` too) run as, a name or an id
    /// (Harbor's `[agent] user`); `None`: the image's `USER`.
    #[serde(
        default,
        deserialize_with = "user_name_or_id",
        skip_serializing_if = "Option::is_none"
    )]
    pub user: Option<String>,
}

impl Default for AgentSection {
    fn default() -> Self {
        Self {
            timeout_sec: DEFAULT_AGENT_TIMEOUT_SEC,
            user: None,
        }
    }
}

/// True for `user` or `user:group`, each part a name or an id of letters, digits, `.`, `_`
/// and `-` (not starting with `-`), as Docker's `--user` takes them.
fn is_user(s: &str) -> bool {
    let part = |p: &str| {
        !p.is_empty()
            && !p.starts_with('-')
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    };
    match s.split_once(':') {
        Some((u, g)) => part(u) && part(g),
        None => part(s),
    }
}

/// A `user` key: a name (`"agent"`, `"1000:1000"`) or a whole number (`1000`), as a string.
fn user_name_or_id<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum User {
        Name(String),
        Id(u32),
    }
    Ok(Some(match User::deserialize(d)? {
        User::Name(n) => n,
        User::Id(i) => i.to_string(),
    }))
}

/// `[verifier]` of `task.toml`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct VerifierSection {
    /// Verifier wall-clock budget, seconds.
    #[serde(default = "default_verifier_timeout")]
    pub timeout_sec: f64,
    /// Environment for `tests/test.sh`. Values may reference the operator's environment as
    /// `${NAME}`; they are resolved when the verifier runs and never stored.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The user `tests/test.sh` runs as, a name or an id (Harbor's `[verifier] user`); `None`:
    /// the image's `USER`.
    #[serde(
        default,
        deserialize_with = "user_name_or_id",
        skip_serializing_if = "Option::is_none"
    )]
    pub user: Option<String>,
}

impl Default for VerifierSection {
    fn default() -> Self {
        Self {
            timeout_sec: DEFAULT_VERIFIER_TIMEOUT_SEC,
            env: BTreeMap::new(),
            user: None,
        }
    }
}

/// `[solution]` of `task.toml`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct SolutionSection {
    /// Environment for `solution/solve.sh`, with `${NAME}` references like the verifier's.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// `[environment]` of `task.toml`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct EnvironmentSection {
    /// Image build budget, seconds.
    #[serde(default = "default_build_timeout")]
    pub build_timeout_sec: f64,
    /// CPU limit (cores); absent = no limit (Harbor's current default). Clamped to what the
    /// Docker host has.
    #[serde(default)]
    pub cpus: Option<f64>,
    /// Memory limit, MiB; absent = no limit.
    #[serde(default)]
    pub memory_mb: Option<u64>,
    /// Disk budget, MiB. Recorded; Docker enforces it only on some storage drivers.
    #[serde(default)]
    pub storage_mb: Option<u64>,
    /// GPUs requested. skillscope runs no GPU tasks; a value above 0 is reported.
    #[serde(default)]
    pub gpus: u32,
    /// Most processes (threads included) the trial's container may have at once; absent =
    /// [`DEFAULT_PIDS_LIMIT`]. skillscope's own key (Harbor has none): a task that runs a JVM or
    /// a headless browser may need more.
    #[serde(default)]
    pub pids_limit: Option<u64>,
    /// Whether the container may reach the network; `false` means `--network none`.
    #[serde(default = "default_true")]
    pub allow_internet: bool,
    /// The container's environment for the whole trial (Harbor's `[environment] env`), with
    /// `${NAME}` references resolved like the verifier's; also variables of the compose file.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

impl Default for EnvironmentSection {
    fn default() -> Self {
        Self {
            build_timeout_sec: DEFAULT_BUILD_TIMEOUT_SEC,
            cpus: None,
            memory_mb: None,
            storage_mb: None,
            gpus: 0,
            pids_limit: None,
            allow_internet: true,
            env: BTreeMap::new(),
        }
    }
}

fn default_agent_timeout() -> f64 {
    DEFAULT_AGENT_TIMEOUT_SEC
}
fn default_verifier_timeout() -> f64 {
    DEFAULT_VERIFIER_TIMEOUT_SEC
}
fn default_build_timeout() -> f64 {
    DEFAULT_BUILD_TIMEOUT_SEC
}
fn default_true() -> bool {
    true
}

/// Longest budget a task may ask for (agent, verifier or build): 7 days, in seconds. Beyond it a
/// value is a typo (or `1e308`), not a plan.
pub const MAX_TIMEOUT_SEC: f64 = 7.0 * 24.0 * 3600.0;
/// Most CPUs a task may ask for.
pub const MAX_CPUS: f64 = 1024.0;
/// Most memory or disk a task may ask for, MiB (16 TiB).
pub const MAX_SIZE_MB: u64 = 16 * 1024 * 1024;
/// The process limit of a trial's container when its task sets none (`[environment]
/// pids_limit`): enough for builds, test runners and language servers, and a fork bomb stops
/// there instead of taking the machine.
pub const DEFAULT_PIDS_LIMIT: u64 = 1024;
/// Most processes a task may ask for.
pub const MAX_PIDS_LIMIT: u64 = 1 << 22;
/// Most GPUs a task may ask for.
pub const MAX_GPUS: u32 = 64;

/// The type a known `task.toml` key must have.
#[derive(Clone, Copy)]
enum Kind {
    Str,
    StrList,
    Number,
    Count,
    Bool,
    StrMap,
    /// A user: a non-empty name or a whole number ≥ 0.
    User,
}

impl Kind {
    fn accepts(self, v: &toml::Value) -> bool {
        use toml::Value as V;
        match self {
            Kind::Str => matches!(v, V::String(_)),
            Kind::StrList => {
                matches!(v, V::Array(a) if a.iter().all(|x| matches!(x, V::String(_))))
            }
            Kind::Number => matches!(v, V::Integer(_) | V::Float(_)),
            Kind::Count => matches!(v, V::Integer(i) if *i >= 0),
            Kind::Bool => matches!(v, V::Boolean(_)),
            Kind::StrMap => {
                matches!(v, V::Table(t) if t.values().all(|x| matches!(x, V::String(_))))
            }
            Kind::User => match v {
                V::String(s) => is_user(s),
                V::Integer(i) => u32::try_from(*i).is_ok(),
                _ => false,
            },
        }
    }

    fn expected(self) -> &'static str {
        match self {
            Kind::Str => "a string",
            Kind::StrList => "a list of strings",
            Kind::Number => "a number",
            Kind::Count => "a whole number ≥ 0",
            Kind::Bool => "true or false",
            Kind::StrMap => "a table of strings",
            Kind::User => "a user name or a whole number ≥ 0 (a user id)",
        }
    }
}

/// Every key skillscope reads, by table (`""` = top level). Other keys are tolerated.
const KNOWN_KEYS: &[(&str, &str, Kind)] = &[
    ("", "version", Kind::Str),
    ("metadata", "difficulty", Kind::Str),
    ("metadata", "category", Kind::Str),
    ("metadata", "tags", Kind::StrList),
    ("metadata", "author_name", Kind::Str),
    ("agent", "timeout_sec", Kind::Number),
    ("agent", "user", Kind::User),
    ("verifier", "timeout_sec", Kind::Number),
    ("verifier", "user", Kind::User),
    ("verifier", "env", Kind::StrMap),
    ("solution", "env", Kind::StrMap),
    ("environment", "build_timeout_sec", Kind::Number),
    ("environment", "cpus", Kind::Number),
    ("environment", "memory_mb", Kind::Count),
    ("environment", "storage_mb", Kind::Count),
    ("environment", "memory", Kind::Str),
    ("environment", "storage", Kind::Str),
    ("environment", "gpus", Kind::Count),
    ("environment", "pids_limit", Kind::Count),
    ("environment", "allow_internet", Kind::Bool),
    ("environment", "env", Kind::StrMap),
];

/// Where a key lives, as messages name it: `[agent] timeout_sec`, or `version` at the top.
fn key_name(table: &str, key: &str) -> String {
    if table.is_empty() {
        key.to_string()
    } else {
        format!("[{table}] {key}")
    }
}

/// A size written as Harbor's older `memory`/`storage` strings (`"4G"`, `"512M"`, `"1024K"`,
/// `"2048"` = MiB), in MiB.
fn size_mb(text: &str) -> Option<u64> {
    let t = text.trim().to_ascii_uppercase();
    let t = t.strip_suffix('B').unwrap_or(&t);
    let (num, scale) = match t.chars().last()? {
        'G' => (&t[..t.len() - 1], 1024.0),
        'M' => (&t[..t.len() - 1], 1.0),
        'K' => (&t[..t.len() - 1], 1.0 / 1024.0),
        'T' => (&t[..t.len() - 1], 1024.0 * 1024.0),
        _ => (t, 1.0),
    };
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then(|| (v * scale).round() as u64)
}

impl TaskConfig {
    /// Parses `task.toml` text. `path` is only used to name the file in errors.
    ///
    /// Every known key of the wrong type and every value out of bounds is reported at once
    /// (timeouts in (0, [`MAX_TIMEOUT_SEC`]], CPUs in (0, [`MAX_CPUS`]], sizes up to
    /// [`MAX_SIZE_MB`]), each named with its table and key. Harbor's older `memory` / `storage`
    /// size strings (`"4G"`) stand in for `memory_mb` / `storage_mb` when those are absent.
    ///
    /// # Errors
    /// [`BenchError::TaskToml`] naming the file: the line and column of a syntax error and the
    /// parser's message for text that is not TOML, else every wrong key with its table, its line
    /// and column, and its value as written.
    pub fn parse(text: &str, path: &Path) -> Result<Self, BenchError> {
        let fail = |message: String| BenchError::TaskToml {
            path: path.to_path_buf(),
            message,
        };
        let raw: toml::Table = toml::from_str(text).map_err(|e| fail(syntax_error(text, &e)))?;
        let written = Written::of(text);
        let mut problems = Vec::new();
        // The keys of the wrong type are reported, then left out so that the rest is still
        // checked against its bounds (every wrong field at once, not the type errors first).
        let mut checked = raw.clone();
        for (table, key, kind) in KNOWN_KEYS {
            let value = if table.is_empty() {
                raw.get(*key)
            } else {
                match raw.get(*table) {
                    Some(toml::Value::Table(t)) => t.get(*key),
                    _ => None,
                }
            };
            if let Some(v) = value
                && !kind.accepts(v)
            {
                problems.push(format!(
                    "{}: expected {}, found {} {}{}",
                    key_name(table, key),
                    kind.expected(),
                    v.type_str(),
                    written.value(table, key, v),
                    written.place(table, key)
                ));
                if table.is_empty() {
                    checked.remove(*key);
                } else if let Some(toml::Value::Table(t)) = checked.get_mut(*table) {
                    t.remove(*key);
                }
            }
        }
        for table in ["metadata", "agent", "verifier", "solution", "environment"] {
            if let Some(v) = raw.get(table)
                && !v.is_table()
            {
                problems.push(format!(
                    "{table}: expected a table [{table}], found {}{}",
                    v.type_str(),
                    written.place("", table)
                ));
                checked.remove(table);
            }
        }
        let mut config: TaskConfig = match toml::Value::Table(checked).try_into() {
            Ok(c) => c,
            // Every known key was checked above; what serde still refuses is reported as it says.
            Err(e) => {
                problems.push(e.to_string());
                return Err(fail(problems.join("; ")));
            }
        };
        let env = raw.get("environment").and_then(|v| v.as_table());
        for (key, target) in [
            ("memory", &mut config.environment.memory_mb),
            ("storage", &mut config.environment.storage_mb),
        ] {
            if let Some(text) = env.and_then(|t| t.get(key)).and_then(|v| v.as_str()) {
                match size_mb(text) {
                    Some(mb) if target.is_none() => *target = Some(mb),
                    Some(_) => {}
                    None => problems.push(format!(
                        "[environment] {key}: expected a size such as \"4G\" or \"512M\", found {text:?}{}",
                        written.place("environment", key)
                    )),
                }
            }
        }
        problems.extend(config.bound_problems(&written));
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(fail(problems.join("; ")))
        }
    }

    /// Every value outside its bounds, as `[table] key: …` lines with the value as written and
    /// where.
    fn bound_problems(&self, written: &Written) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(d) = &self.metadata.difficulty
            && super::Difficulty::parse(d).is_none()
        {
            out.push(format!(
                "[metadata] difficulty: {}",
                super::Difficulty::unknown(d)
            ));
        }
        for (table, key, v) in [
            ("agent", "timeout_sec", self.agent.timeout_sec),
            ("verifier", "timeout_sec", self.verifier.timeout_sec),
            (
                "environment",
                "build_timeout_sec",
                self.environment.build_timeout_sec,
            ),
        ] {
            if !(v.is_finite() && v > 0.0 && v <= MAX_TIMEOUT_SEC) {
                out.push(format!(
                    "{}: must be a number of seconds above 0 and at most {MAX_TIMEOUT_SEC:.0} (7 days), found {}{}",
                    key_name(table, key),
                    written.value(table, key, v),
                    written.place(table, key)
                ));
            }
        }
        if let Some(cpus) = self.environment.cpus
            && !(cpus.is_finite() && cpus > 0.0 && cpus <= MAX_CPUS)
        {
            out.push(format!(
                "[environment] cpus: must be above 0 and at most {MAX_CPUS:.0}, found {}{}",
                written.value("environment", "cpus", cpus),
                written.place("environment", "cpus")
            ));
        }
        for (key, v) in [
            ("memory_mb", self.environment.memory_mb),
            ("storage_mb", self.environment.storage_mb),
        ] {
            if let Some(v) = v
                && (v == 0 || v > MAX_SIZE_MB)
            {
                out.push(format!(
                    "[environment] {key}: must be between 1 and {MAX_SIZE_MB} MiB, found {}{}",
                    written.value("environment", key, v),
                    written.place("environment", key)
                ));
            }
        }
        if let Some(p) = self.environment.pids_limit
            && !(16..=MAX_PIDS_LIMIT).contains(&p)
        {
            out.push(format!(
                "[environment] pids_limit: must be between 16 and {MAX_PIDS_LIMIT}, found {}{}",
                written.value("environment", "pids_limit", p),
                written.place("environment", "pids_limit")
            ));
        }
        if self.environment.gpus > MAX_GPUS {
            out.push(format!(
                "[environment] gpus: must be at most {MAX_GPUS}, found {}{}",
                written.value("environment", "gpus", self.environment.gpus),
                written.place("environment", "gpus")
            ));
        }
        out
    }
}

/// A task folder, loaded and checked. Loading never fails as a whole: problems that make the task
/// unrunnable are kept in [`Task::problems`] so one bad task never stops a run.
#[derive(Debug, Clone)]
pub struct Task {
    /// Task id = folder name (e.g. `3d-scan-calc`).
    pub id: String,
    /// Absolute task folder.
    pub dir: PathBuf,
    /// Parsed `task.toml` (defaults when the file is unreadable; see `problems`).
    pub config: TaskConfig,
    /// False when `task.toml` could not be read or is invalid: `config` then holds Harbor's
    /// defaults, which must not be shown as the task's own values.
    pub config_read: bool,
    /// Domain: shipped catalog, else `metadata.category`, else `unknown`.
    pub domain: String,
    /// Difficulty: `metadata.difficulty`, else the catalog's, else `unknown`.
    pub difficulty: String,
    /// Curated skills in `environment/skills/` (condition B).
    pub skills: Vec<Skill>,
    /// Folders in `environment/skills/` that are not skills (licence texts: no `SKILL.md`, see
    /// [`super::skill::is_not_a_skill`]), by name: noted, shipped with the skills, never counted
    /// as one.
    pub not_skills: Vec<String>,
    /// Problems that make the task unrunnable (bad task.toml, missing Dockerfile or tests).
    pub problems: Vec<String>,
    /// Harbor 0.26's digest of the folder (`sha256:<hex>`, [`super::digest::task_digest`]),
    /// once [`super::TaskSet::compute_digests`] computed it; `None` before, or when the folder
    /// could not be read ([`Task::digest_error`] says why).
    pub digest: Option<String>,
    /// Why the digest could not be computed.
    pub digest_error: Option<String>,
}

impl Task {
    /// `environment/` — the Docker build context.
    pub fn environment_dir(&self) -> PathBuf {
        self.dir.join("environment")
    }
    /// `environment/Dockerfile`.
    pub fn dockerfile(&self) -> PathBuf {
        self.environment_dir().join("Dockerfile")
    }
    /// `tests/` — copied to `/tests` for the verifier.
    pub fn tests_dir(&self) -> PathBuf {
        self.dir.join("tests")
    }
    /// `solution/` — copied to `/solution` for the oracle agent.
    pub fn solution_dir(&self) -> PathBuf {
        self.dir.join("solution")
    }
    /// `instruction.md`.
    pub fn instruction_path(&self) -> PathBuf {
        self.dir.join("instruction.md")
    }
    /// True when the task can be attempted (no problems found while loading).
    pub fn is_runnable(&self) -> bool {
        self.problems.is_empty()
    }
    /// Agent budget as a duration.
    pub fn agent_timeout(&self) -> std::time::Duration {
        secs(self.config.agent.timeout_sec)
    }
    /// Verifier budget as a duration.
    pub fn verifier_timeout(&self) -> std::time::Duration {
        secs(self.config.verifier.timeout_sec)
    }
    /// Build budget as a duration.
    pub fn build_timeout(&self) -> std::time::Duration {
        secs(self.config.environment.build_timeout_sec)
    }

    /// Loads one task folder. `lookup` gives the shipped catalog's (domain, difficulty) for an id.
    ///
    /// Never fails: unreadable or malformed parts become entries of [`Task::problems`].
    pub fn load(dir: &Path, lookup: impl Fn(&str) -> Option<(String, String)>) -> Task {
        let id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut problems = Vec::new();
        let toml_path = dir.join("task.toml");
        let (config, config_read) = match std::fs::read_to_string(&toml_path) {
            Ok(text) => match TaskConfig::parse(&text, &toml_path) {
                Ok(c) => (c, true),
                Err(e) => {
                    problems.push(e.to_string());
                    (TaskConfig::default(), false)
                }
            },
            Err(e) => {
                problems.push(format!("{}: {e}", toml_path.display()));
                (TaskConfig::default(), false)
            }
        };
        let catalog = lookup(&id);
        let domain = catalog
            .as_ref()
            .map(|(d, _)| d.clone())
            .filter(|d| !d.is_empty())
            .or_else(|| config.metadata.category.clone())
            .unwrap_or_else(|| "unknown".into());
        // One level, one name: the closed set's (`middle` is medium).
        let difficulty = config
            .metadata
            .difficulty
            .clone()
            .or_else(|| catalog.map(|(_, d)| d))
            .filter(|d| !d.is_empty())
            .map(|d| super::Difficulty::normalize(&d))
            .unwrap_or_else(|| "unknown".into());
        let task_dir = dir.to_path_buf();
        for (what, path) in [
            ("instruction", task_dir.join("instruction.md")),
            ("Dockerfile", task_dir.join("environment/Dockerfile")),
            ("verifier script", task_dir.join("tests/test.sh")),
        ] {
            if !path.is_file() {
                problems.push(format!("missing {what}: {}", path.display()));
            }
        }
        let skills_dir = task_dir.join("environment/skills");
        let skills = scan_skills_dir(&skills_dir);
        let not_skills = super::skill::skill_dirs(&skills_dir)
            .1
            .iter()
            .filter_map(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        Task {
            id,
            dir: task_dir,
            config,
            config_read,
            domain,
            difficulty,
            skills,
            not_skills,
            problems,
            digest: None,
            digest_error: None,
        }
    }

    /// True when `task.toml` asks Harbor 0.26 to verify in a fresh environment of its own
    /// (`[verifier] environment_mode = "separate"`, or a `[verifier.environment]` table without
    /// `environment_mode = "shared"`). skillscope runs every verifier in the agent's container.
    pub fn asks_separate_verifier(&self) -> bool {
        let Ok(text) = std::fs::read_to_string(self.dir.join("task.toml")) else {
            return false;
        };
        let Ok(table) = toml::from_str::<toml::Table>(&text) else {
            return false;
        };
        let verifier = table.get("verifier").and_then(|v| v.as_table());
        match verifier
            .and_then(|v| v.get("environment_mode"))
            .and_then(|m| m.as_str())
        {
            Some(mode) => mode == "separate",
            None => verifier.is_some_and(|v| v.get("environment").is_some_and(|e| e.is_table())),
        }
    }

    /// Computes [`Task::digest`] (or [`Task::digest_error`]) from the folder as it is now.
    pub fn compute_digest(&mut self) {
        match super::digest::task_digest(&self.dir) {
            Ok(d) => (self.digest, self.digest_error) = (Some(d), None),
            Err(e) => (self.digest, self.digest_error) = (None, Some(e.to_string())),
        }
    }
}

/// Seconds (as written in task.toml) to a duration; non-finite or negative values become zero.
pub fn secs(v: f64) -> std::time::Duration {
    std::time::Duration::from_secs_f64(if v.is_finite() && v > 0.0 {
        v.min(MAX_TIMEOUT_SEC)
    } else {
        0.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_skillsbench_task_toml_with_unknown_keys() {
        let text = r#"
version = "1.0"
[task]
id = "x"
[metadata]
difficulty = "hard"
category = "engineering"
tags = ["a", "b"]
[verifier]
timeout_sec = 900.0
env = { KEY = "${KEY}" }
[agent]
timeout_sec = 1200
[reward]
reward = "P0/13"
[environment]
build_timeout_sec = 600.0
cpus = 8
memory_mb = 4096
storage_mb = 10240
gpus = 0
allow_internet = false
"#;
        let c = TaskConfig::parse(text, Path::new("t/task.toml")).unwrap();
        assert_eq!(c.metadata.difficulty.as_deref(), Some("hard"));
        assert_eq!(c.agent.timeout_sec, 1200.0);
        assert_eq!(c.verifier.timeout_sec, 900.0);
        assert_eq!(c.verifier.env["KEY"], "${KEY}");
        assert_eq!(c.environment.cpus, Some(8.0));
        assert!(!c.environment.allow_internet);
    }

    #[test]
    fn defaults_when_sections_missing() {
        let c = TaskConfig::parse("", Path::new("task.toml")).unwrap();
        assert_eq!(c.agent.timeout_sec, DEFAULT_AGENT_TIMEOUT_SEC);
        assert_eq!(c.environment.memory_mb, None);
        assert!(c.environment.allow_internet);
    }

    #[test]
    fn wrong_type_names_file_and_key() {
        let err = TaskConfig::parse(
            "[agent]\ntimeout_sec = \"soon\"\n",
            Path::new("x/task.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("x/task.toml"), "{err}");
        assert!(err.contains("timeout_sec"), "{err}");
    }

    #[test]
    fn difficulty_comes_from_a_closed_set() {
        let err = TaskConfig::parse(
            "[metadata]\ndifficulty = \"brutal\"\n",
            Path::new("x/task.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("x/task.toml")
                && err.contains("[metadata] difficulty: unknown difficulty \"brutal\""),
            "{err}"
        );
        // `middle` is medium.
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        std::fs::create_dir_all(&t).unwrap();
        std::fs::write(t.join("task.toml"), "[metadata]\ndifficulty = \"middle\"\n").unwrap();
        assert_eq!(Task::load(&t, |_| None).difficulty, "medium");
    }

    #[test]
    fn harbor_s_user_keys_take_a_name_or_an_id() {
        let c = TaskConfig::parse(
            "[agent]\nuser = \"agent\"\n[verifier]\nuser = 0\n",
            Path::new("task.toml"),
        )
        .unwrap();
        assert_eq!(c.agent.user.as_deref(), Some("agent"));
        assert_eq!(c.verifier.user.as_deref(), Some("0"));
        let c = TaskConfig::parse("[agent]\nuser = 1000\n", Path::new("task.toml")).unwrap();
        assert_eq!(c.agent.user.as_deref(), Some("1000"));
        assert_eq!(c.verifier.user, None);
        for ok in ["app", "1000:1000", "app:staff", "a.b_c-d"] {
            assert!(is_user(ok), "{ok}");
        }
        for bad in ["", " app", "a b", ":1000", "app:", "-x", "app:g:h"] {
            assert!(!is_user(bad), "{bad}");
        }
        // Absent keys stay out of the serialized config (task digests do not move).
        let json = serde_json::to_string(&TaskConfig::default().agent).unwrap();
        assert!(!json.contains("user"), "{json}");
        let err = TaskConfig::parse(
            "[agent]\nuser = -1\n[verifier]\nuser = \"a b\"\n",
            Path::new("t/task.toml"),
        )
        .unwrap_err()
        .to_string();
        for key in [
            "[agent] user: expected a user name or a whole number",
            "[verifier] user: expected a user name",
        ] {
            assert!(err.contains(key), "{key} missing from {err}");
        }
    }

    #[test]
    fn negative_timeout_rejected() {
        let err = TaskConfig::parse("[verifier]\ntimeout_sec = -1\n", Path::new("task.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("[verifier] timeout_sec"), "{err}");
    }

    #[test]
    fn every_wrong_field_is_reported_with_table_and_key() {
        let text = "version = 2\n[agent]\ntimeout_sec = \"soon\"\n[verifier]\ntimeout_sec = 1e308\n\
                    [environment]\ncpus = \"four\"\nmemory_mb = -5\nallow_internet = \"yes\"\n";
        let err = TaskConfig::parse(text, Path::new("t/task.toml"))
            .unwrap_err()
            .to_string();
        for key in [
            "t/task.toml",
            "version: expected a string",
            "[agent] timeout_sec: expected a number",
            "[environment] cpus: expected a number",
            "[environment] memory_mb: expected a whole number",
            "[environment] allow_internet: expected true or false",
            // A value out of bounds beside the type errors, not hidden behind them.
            "[verifier] timeout_sec: must be a number of seconds above 0",
        ] {
            assert!(err.contains(key), "{key} missing from {err}");
        }
        // Bounds alone: all of them, not only the first.
        let err = TaskConfig::parse(
            "[agent]\ntimeout_sec = 1e308\n[verifier]\ntimeout_sec = inf\n[environment]\ncpus = 0\nmemory_mb = 0\n",
            Path::new("t/task.toml"),
        )
        .unwrap_err()
        .to_string();
        for key in [
            "[agent] timeout_sec: must be a number of seconds above 0 and at most 604800",
            "[verifier] timeout_sec",
            "[environment] cpus",
            "[environment] memory_mb",
        ] {
            assert!(err.contains(key), "{key} missing from {err}");
        }
    }

    #[test]
    fn values_are_echoed_as_written_with_their_line_and_column() {
        let text = "[agent]\ntimeout_sec = 600\n\n[verifier]\ntimeout_sec = 1e308\n[environment]\ncpus = \"four\"\n";
        let err = TaskConfig::parse(text, Path::new("t/task.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "[environment] cpus: expected a number, found string \"four\" (line 7, column 8)"
            ),
            "{err}"
        );
        let err = TaskConfig::parse(
            "[agent]\ntimeout_sec = 600\n\n[verifier]\ntimeout_sec = 1e308\n",
            Path::new("t/task.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("t/task.toml")
                && err.contains("[verifier] timeout_sec: must be")
                && err.contains("found 1e308 (line 5, column 15)"),
            "{err}"
        );
        assert!(!err.contains("00000000"), "{err}");
        // Text that is not TOML: the line and column of the fault, on one line.
        let err = TaskConfig::parse("[agent]\ntimeout_sec = = 3\n", Path::new("t/task.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2, column 15"), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }

    #[test]
    fn older_size_strings_stand_in_for_megabytes() {
        let c = TaskConfig::parse(
            "[environment]\nmemory = \"4G\"\nstorage = \"512M\"\n",
            Path::new("task.toml"),
        )
        .unwrap();
        assert_eq!(c.environment.memory_mb, Some(4096));
        assert_eq!(c.environment.storage_mb, Some(512));
        let c = TaskConfig::parse(
            "[environment]\nmemory = \"4G\"\nmemory_mb = 2048\n",
            Path::new("task.toml"),
        )
        .unwrap();
        assert_eq!(c.environment.memory_mb, Some(2048), "memory_mb wins");
        assert!(
            TaskConfig::parse("[environment]\nmemory = \"lots\"\n", Path::new("task.toml"))
                .unwrap_err()
                .to_string()
                .contains("[environment] memory: expected a size")
        );
    }
}
