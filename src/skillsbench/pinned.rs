//! Pinned task sets (`--task-set FILE`): which tasks a run must use, each with the digest its
//! folder must have, read from
//!
//! - a SkillsBench `registry.json` (BenchFlow's format, `benchflow/_utils/dataset_registry.py`):
//!   a JSON array of datasets `{name, version, tasks: [{name, path, digest, git_url,
//!   git_commit_id}]}`, the task being `basename(path)` as BenchFlow keys it and `digest`
//!   BenchFlow's ([`super::digest::benchflow`]); a file with several datasets needs
//!   `FILE#NAME@VERSION`;
//! - an AgentBeats task set (`skillsbench-leaderboard/task_sets/*.json`, `schema_version
//!   skillsbench.agentbeats.task_set.v1`): `tasks: [{task_id, task_digest}]`, BenchFlow's digest,
//!   named by its `source_registry`;
//! - a list of name + digest with Harbor 0.26's digest ([`super::digest::task_digest`], what
//!   `skillscope tasks --json` prints): JSON `{"name", "version", "tasks": [{"name" or "id",
//!   "digest"}]}` (an `"algorithm": "benchflow"` key switches the digest), a bare JSON array of
//!   such tasks, or text lines `<name> <digest>` (`#` starts a comment).
//!
//! [`PinnedSet::check`] compares a tasks folder with the set before anything runs: a task whose
//! digest differs or that the folder lacks is named ([`TaskDrift`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::BenchError;
use super::digest::{self, is_digest};
use crate::domain::{TaskDrift, TaskSetPin, describe_drift};

/// Whose digest a set pins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// Harbor 0.26's packager digest.
    Harbor,
    /// BenchFlow's `task_digest`.
    BenchFlow,
}

impl Algorithm {
    /// `harbor-0.26` or `benchflow`, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::Harbor => "harbor-0.26",
            Algorithm::BenchFlow => "benchflow",
        }
    }

    /// The digest of task folder `dir` by this algorithm.
    ///
    /// # Errors
    /// The folder cannot be read ([`digest::DigestError`]).
    pub fn digest(self, dir: &Path) -> Result<String, digest::DigestError> {
        match self {
            Algorithm::Harbor => digest::task_digest(dir),
            Algorithm::BenchFlow => digest::benchflow::task_digest(dir),
        }
    }
}

/// A pinned task set, read.
#[derive(Debug, Clone, PartialEq)]
pub struct PinnedSet {
    /// Its name (`skillsbench`; a list without one is named after its file).
    pub name: String,
    /// Its version (`1.1`), when it has one.
    pub version: Option<String>,
    /// The file.
    pub file: PathBuf,
    /// Whose digests it holds.
    pub algorithm: Algorithm,
    /// Task id → pinned digest (`sha256:<hex>`).
    pub tasks: BTreeMap<String, String>,
}

/// What [`PinnedSet::check`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PinCheck {
    /// Pinned tasks whose folder has the pinned digest.
    pub verified: Vec<String>,
    /// Pinned tasks that differ or are missing, in task order.
    pub drift: Vec<TaskDrift>,
    /// Tasks of the folder the set does not pin (left out of the run).
    pub unpinned: Vec<String>,
    /// Tasks asked for by id (`--task`) that the set does not pin.
    pub outside: Vec<String>,
}

impl PinnedSet {
    /// Reads `spec`: a file, or `FILE#NAME[@VERSION]` choosing one dataset of a registry.
    ///
    /// # Errors
    /// [`BenchError::TaskSet`] naming the file: unreadable, not a task set, every wrong entry
    /// with its index and key, a dataset that is not there (the ones that are listed).
    pub fn read(spec: &str) -> Result<PinnedSet, BenchError> {
        let (file, pick) = match spec.rsplit_once('#') {
            Some((f, p)) if !Path::new(spec).exists() => (PathBuf::from(f), Some(p.to_string())),
            _ => (PathBuf::from(spec), None),
        };
        let fail = |message: String| BenchError::TaskSet {
            path: file.clone(),
            message,
        };
        let bytes = crate::fs::read_capped(&file, 64 * 1024 * 1024)
            .map_err(|e| fail(format!("cannot read it: {e}")))?;
        let text = String::from_utf8(bytes).map_err(|_| fail("not UTF-8 text".into()))?;
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "task-set".into());
        let parsed = match serde_json::from_str::<Value>(&text) {
            Ok(Value::Array(items)) if items.iter().any(|d| d.get("tasks").is_some()) => {
                registry(&items, pick.as_deref())
            }
            Ok(Value::Array(items)) => list(&items, &stem, None, Algorithm::Harbor),
            Ok(Value::Object(o)) => object(&o, &stem),
            Ok(_) => Err(vec!["expected a JSON array or object".to_string()]),
            Err(_) if text.trim_start().starts_with(['[', '{']) => {
                Err(vec!["not valid JSON".to_string()])
            }
            Err(_) => lines(&text, &stem),
        };
        let (name, version, algorithm, tasks) = parsed.map_err(|p| fail(p.join("; ")))?;
        if tasks.is_empty() {
            return Err(fail("it pins no task".into()));
        }
        Ok(PinnedSet {
            name,
            version,
            file: std::fs::canonicalize(&file).unwrap_or(file),
            algorithm,
            tasks,
        })
    }

    /// `skillsbench@1.1`, or the name alone.
    pub fn label(&self) -> String {
        match &self.version {
            Some(v) => format!("{}@{v}", self.name),
            None => self.name.clone(),
        }
    }

    /// Compares the tasks folder's tasks (`id`, folder) with the set: each pinned task is
    /// verified, or drifted (digest differs, missing, unreadable); folder tasks the set does not
    /// pin are listed. With ids in `only` (`--task`), only those pinned tasks are checked, and
    /// ids the set does not pin are listed in [`PinCheck::outside`].
    pub fn check(&self, folder: &[(String, PathBuf)], only: &[String]) -> PinCheck {
        let by_id: BTreeMap<&str, &Path> = folder
            .iter()
            .map(|(id, dir)| (id.as_str(), dir.as_path()))
            .collect();
        let mut out = PinCheck {
            outside: only
                .iter()
                .filter(|id| !self.tasks.contains_key(*id))
                .cloned()
                .collect(),
            ..PinCheck::default()
        };
        let wanted = |task: &str| only.is_empty() || only.iter().any(|o| o == task);
        for (task, expected) in self.tasks.iter().filter(|(t, _)| wanted(t)) {
            let drift = |found: Option<String>, reason: String| TaskDrift {
                task: task.clone(),
                expected: expected.clone(),
                found,
                reason,
            };
            match by_id.get(task.as_str()) {
                None => out
                    .drift
                    .push(drift(None, "missing from the tasks folder".into())),
                Some(dir) => match self.algorithm.digest(dir) {
                    Ok(d) if &d == expected => out.verified.push(task.clone()),
                    Ok(d) => out.drift.push(drift(Some(d), "digest differs".into())),
                    Err(e) => out.drift.push(drift(None, format!("cannot be read: {e}"))),
                },
            }
        }
        out.unpinned = by_id
            .keys()
            .filter(|id| !self.tasks.contains_key(**id))
            .map(|id| id.to_string())
            .collect();
        out
    }

    /// The pin as a run records it.
    pub fn pin(&self, check: &PinCheck, allow_drift: bool) -> TaskSetPin {
        TaskSetPin {
            name: self.name.clone(),
            version: self.version.clone(),
            file: self.file.display().to_string(),
            algorithm: self.algorithm.as_str().to_string(),
            n_tasks: self.tasks.len(),
            allow_drift,
            drift: check.drift.clone(),
        }
    }

    /// The one-line refusal of a run whose tasks drifted from the set, naming every task.
    pub fn refusal(&self, drift: &[TaskDrift]) -> String {
        format!(
            "task set {} ({}): {} of {} pinned task(s) do not match — {}; pass --allow-drift to run anyway (recorded with the run)",
            self.label(),
            self.file.display(),
            drift.len(),
            self.tasks.len(),
            describe_drift(drift)
        )
    }
}

/// Name, version, algorithm and tasks of a set, or every problem found.
type Parsed = Result<(String, Option<String>, Algorithm, BTreeMap<String, String>), Vec<String>>;

/// A SkillsBench `registry.json`: one dataset, chosen by `pick` (`NAME` or `NAME@VERSION`)
/// when it holds several.
fn registry(items: &[Value], pick: Option<&str>) -> Parsed {
    let label = |d: &Value| {
        let name = d.get("name").and_then(Value::as_str).unwrap_or("?");
        match d.get("version").map(version_text) {
            Some(Some(v)) => format!("{name}@{v}"),
            _ => name.to_string(),
        }
    };
    let chosen: Vec<(usize, &Value)> = items
        .iter()
        .enumerate()
        .filter(|(_, d)| match pick {
            None => true,
            Some(p) if p.contains('@') => label(d) == p,
            Some(p) => d.get("name").and_then(Value::as_str) == Some(p),
        })
        .collect();
    let all: Vec<String> = items.iter().map(label).collect();
    let (i, d) = match chosen.as_slice() {
        [one] => *one,
        [] => {
            return Err(vec![format!(
                "no dataset {:?}; it holds {}",
                pick.unwrap_or(""),
                all.join(", ")
            )]);
        }
        _ => {
            return Err(vec![format!(
                "it holds several datasets ({}): choose one with FILE#NAME@VERSION",
                all.join(", ")
            )]);
        }
    };
    let mut problems = Vec::new();
    let name = match d.get("name").and_then(Value::as_str) {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => {
            problems.push(format!("[{i}] name: expected a non-empty string"));
            String::new()
        }
    };
    let version = d.get("version").and_then(version_text);
    let mut tasks = BTreeMap::new();
    match d.get("tasks").and_then(Value::as_array) {
        Some(list) => {
            for (j, t) in list.iter().enumerate() {
                let at = format!("[{i}].tasks[{j}]");
                // BenchFlow keys a task by the last part of its path.
                let key = t
                    .get("path")
                    .and_then(Value::as_str)
                    .and_then(|p| p.trim_end_matches('/').rsplit('/').next())
                    .filter(|s| !s.is_empty())
                    .or_else(|| t.get("name").and_then(Value::as_str));
                entry(
                    &mut tasks,
                    &mut problems,
                    &at,
                    key,
                    t.get("digest"),
                    "path",
                    "digest",
                );
            }
        }
        None => problems.push(format!("[{i}].tasks: expected an array")),
    }
    if problems.is_empty() {
        Ok((name, version, Algorithm::BenchFlow, tasks))
    } else {
        Err(problems)
    }
}

/// A JSON object: an AgentBeats task set, or a list with a name.
fn object(o: &serde_json::Map<String, Value>, stem: &str) -> Parsed {
    let agentbeats = o
        .get("schema_version")
        .and_then(Value::as_str)
        .is_some_and(|s| s.starts_with("skillsbench.agentbeats.task_set"));
    let Some(items) = o.get("tasks").and_then(Value::as_array) else {
        return Err(vec!["tasks: expected an array of tasks".into()]);
    };
    if agentbeats {
        let source = o.get("source_registry");
        let name = source
            .and_then(|s| s.get("name"))
            .or_else(|| o.get("task_set"))
            .and_then(Value::as_str)
            .unwrap_or(stem)
            .to_string();
        let version = source.and_then(|s| s.get("version")).and_then(version_text);
        let mut tasks = BTreeMap::new();
        let mut problems = Vec::new();
        for (j, t) in items.iter().enumerate() {
            entry(
                &mut tasks,
                &mut problems,
                &format!("tasks[{j}]"),
                t.get("task_id").and_then(Value::as_str),
                t.get("task_digest"),
                "task_id",
                "task_digest",
            );
        }
        return if problems.is_empty() {
            Ok((name, version, Algorithm::BenchFlow, tasks))
        } else {
            Err(problems)
        };
    }
    let algorithm = match o
        .get("algorithm")
        .or_else(|| o.get("digest_algorithm"))
        .and_then(Value::as_str)
    {
        None | Some("harbor" | "harbor-0.26") => Algorithm::Harbor,
        Some("benchflow") => Algorithm::BenchFlow,
        Some(other) => {
            return Err(vec![format!(
                "algorithm: expected \"harbor-0.26\" or \"benchflow\", found {other:?}"
            )]);
        }
    };
    let name = o.get("name").and_then(Value::as_str).unwrap_or(stem);
    list(
        items,
        name,
        o.get("version").and_then(version_text),
        algorithm,
    )
}

/// A list of `{name or id, digest}`.
fn list(items: &[Value], name: &str, version: Option<String>, algorithm: Algorithm) -> Parsed {
    let mut tasks = BTreeMap::new();
    let mut problems = Vec::new();
    for (j, t) in items.iter().enumerate() {
        let key = t
            .get("name")
            .or_else(|| t.get("id"))
            .and_then(Value::as_str);
        entry(
            &mut tasks,
            &mut problems,
            &format!("tasks[{j}]"),
            key,
            t.get("digest"),
            "name",
            "digest",
        );
    }
    if problems.is_empty() {
        Ok((name.to_string(), version, algorithm, tasks))
    } else {
        Err(problems)
    }
}

/// Text lines `<name> <digest>`.
fn lines(text: &str, stem: &str) -> Parsed {
    let mut tasks = BTreeMap::new();
    let mut problems = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut parts = line.split_whitespace();
        let (key, digest) = (parts.next(), parts.next());
        let digest = digest.map(|d| Value::String(d.to_string()));
        entry(
            &mut tasks,
            &mut problems,
            &format!("line {}", n + 1),
            key,
            digest.as_ref(),
            "name",
            "digest",
        );
        if parts.next().is_some() {
            problems.push(format!("line {}: expected `<name> <digest>`", n + 1));
        }
    }
    if problems.is_empty() {
        Ok((stem.to_string(), None, Algorithm::Harbor, tasks))
    } else {
        Err(problems)
    }
}

/// Records one task, or every wrong field of it.
fn entry(
    tasks: &mut BTreeMap<String, String>,
    problems: &mut Vec<String>,
    at: &str,
    key: Option<&str>,
    digest: Option<&Value>,
    key_name: &str,
    digest_name: &str,
) {
    let key = key.filter(|k| !k.is_empty() && !k.contains('/'));
    if key.is_none() {
        problems.push(format!("{at}.{key_name}: expected a task name"));
    }
    let digest = match digest.and_then(Value::as_str) {
        Some(d) if is_digest(d) => Some(d),
        Some(d) => {
            problems.push(format!(
                "{at}.{digest_name}: expected sha256:<64 lowercase hex digits>, found {d:?}"
            ));
            None
        }
        None => {
            problems.push(format!("{at}.{digest_name}: expected a digest string"));
            None
        }
    };
    if let (Some(k), Some(d)) = (key, digest)
        && let Some(before) = tasks.insert(k.to_string(), d.to_string())
        && before != d
    {
        problems.push(format!(
            "{at}: task {k} is pinned twice with different digests"
        ));
    }
}

/// A version written as a string or a number (`"1.1"`, `1.1`).
fn version_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}
