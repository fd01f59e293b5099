//! SkillsBench tasks, skills, conditions and the catalog — pure data, no Docker, no network.

pub mod catalog;
pub mod compose;
pub mod condition;
pub mod difficulty;
pub mod digest;
pub mod dockerfile;
pub mod dockerignore;
pub mod env;
pub mod examples;
pub mod exposure;
pub mod pinned;
pub mod selfgen;
pub mod skill;
pub mod task;

use std::path::{Path, PathBuf};

pub use catalog::{Catalog, CatalogEntry};
pub use condition::Condition;
pub use difficulty::Difficulty;
pub use skill::{Frontmatter, Severity, Skill, SkillProblem};
pub use task::{Task, TaskConfig};

/// Errors reading task definitions, the catalog or a condition.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A `task.toml` that does not parse or holds an invalid value.
    #[error("invalid task.toml {path}: {message}")]
    TaskToml {
        /// The file.
        path: PathBuf,
        /// Parser message (key, line, column) or the rule broken.
        message: String,
    },
    /// A catalog CSV that cannot be read.
    #[error("invalid catalog {path}: {message}")]
    Catalog {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// An unknown or unusable condition.
    #[error("invalid condition {spec:?}: {message}")]
    Condition {
        /// What the user wrote.
        spec: String,
        /// What went wrong.
        message: String,
    },
    /// The tasks folder itself cannot be used.
    #[error("tasks folder {path}: {message}")]
    TasksDir {
        /// The folder.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A pinned task set (`--task-set`) that cannot be used.
    #[error("task set {path}: {message}")]
    TaskSet {
        /// The file.
        path: PathBuf,
        /// Every problem found (entry and key), or why it cannot be read.
        message: String,
    },
    /// Task ids asked for (`--task`) that the folder does not hold.
    #[error("{}", unknown_tasks_message(missing, place))]
    UnknownTask {
        /// The ids not found.
        missing: Vec<String>,
        /// `the built-in example tasks` or `tasks folder <path>`.
        place: String,
        /// The folder's task ids, closest to the first missing id first.
        valid: Vec<String>,
    },
}

fn unknown_tasks_message(missing: &[String], place: &str) -> String {
    let quoted: Vec<String> = missing.iter().map(|m| format!("{m:?}")).collect();
    format!(
        "no task {} in {place}",
        if quoted.len() == 1 {
            format!("named {}", quoted[0])
        } else {
            format!("named {}", quoted.join(", "))
        }
    )
}

impl BenchError {
    /// For [`BenchError::UnknownTask`]: the valid ids as a hint (`valid ids (closest first): a,
    /// b, …`), at most `limit` of them with the count of the rest.
    pub fn valid_ids_hint(&self, limit: usize) -> Option<String> {
        let BenchError::UnknownTask { valid, .. } = self else {
            return None;
        };
        let shown: Vec<&str> = valid.iter().take(limit).map(String::as_str).collect();
        let more = valid.len().saturating_sub(shown.len());
        Some(format!(
            "valid ids (closest first): {}{}",
            shown.join(", "),
            if more > 0 {
                format!(" … and {more} more (`skillscope tasks` lists them)")
            } else {
                String::new()
            }
        ))
    }
}

/// The canonical `root` and its task folders (those with a `task.toml`, an `instruction.md` or an
/// `environment/` folder), sorted.
fn task_dirs(root: &Path) -> Result<(PathBuf, Vec<PathBuf>), BenchError> {
    let dir_err = |m: String| BenchError::TasksDir {
        path: root.to_path_buf(),
        message: m,
    };
    let root = std::fs::canonicalize(root).map_err(|e| dir_err(e.to_string()))?;
    let entries = std::fs::read_dir(&root).map_err(|e| dir_err(e.to_string()))?;
    let is_task = |p: &Path| {
        p.is_dir()
            && (p.join("task.toml").exists()
                || p.join("instruction.md").exists()
                || p.join("environment").is_dir())
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| is_task(p))
        .collect();
    dirs.sort();
    if dirs.is_empty() {
        // One task's own folder given for the folder of tasks: name the folder that works.
        if is_task(&root)
            && let (Some(parent), Some(id)) = (root.parent(), root.file_name())
        {
            return Err(dir_err(format!(
                "no task folders found: this is one task's folder; pass the folder that holds it: --tasks {} --task {}",
                parent.display(),
                id.to_string_lossy()
            )));
        }
        return Err(dir_err(
            "no task folders found (expected <id>/task.toml)".into(),
        ));
    }
    Ok((root, dirs))
}

fn check_ids(root: &Path, dirs: &[PathBuf], only: &[String]) -> Result<(), BenchError> {
    let ids: Vec<String> = dirs
        .iter()
        .filter_map(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    let missing: Vec<String> = only.iter().filter(|o| !ids.contains(o)).cloned().collect();
    match missing.first() {
        Some(first) => Err(BenchError::UnknownTask {
            valid: closest_first(first, &ids),
            place: tasks_place(root),
            missing,
        }),
        None => Ok(()),
    }
}

/// `ids` ordered by similarity to `wanted`, closest first (normalized Damerau–Levenshtein
/// similarity, ties by id), the way a shell suggests a command.
pub fn closest_first(wanted: &str, ids: &[String]) -> Vec<String> {
    let mut scored: Vec<(f64, &String)> = ids
        .iter()
        .map(|id| {
            let sim = strsim::normalized_damerau_levenshtein(wanted, id);
            // A shared prefix or containment counts extra: `ledger` finds `ledger-code-mapping`.
            let contains = id.contains(wanted) || wanted.contains(id.as_str());
            (sim + if contains { 1.0 } else { 0.0 }, id)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.into_iter().map(|(_, id)| id.clone()).collect()
}

/// How a tasks folder is named to the operator: the built-in example tasks by that name (their
/// folder is an internal cache), any other by its path.
pub fn tasks_place(root: &Path) -> String {
    if examples::is_examples(root) {
        "the built-in example tasks".to_string()
    } else {
        format!("tasks folder {}", root.display())
    }
}

/// A loaded tasks folder.
#[derive(Debug, Clone)]
pub struct TaskSet {
    /// Absolute tasks folder.
    pub root: PathBuf,
    /// Tasks sorted by id (only the selected ones when a filter was given).
    pub tasks: Vec<Task>,
}

impl TaskSet {
    /// Loads every task folder under `root` (a folder holding `task.toml`, `instruction.md` or
    /// `environment/`). With a non-empty `only`, keeps just those ids, in id order.
    ///
    /// Bad tasks are kept with their [`Task::problems`]; only an unusable folder or an unknown id
    /// in `only` is an error.
    ///
    /// # Errors
    /// [`BenchError::TasksDir`] when `root` cannot be read or holds no task;
    /// [`BenchError::UnknownTask`] when it lacks a requested id.
    pub fn load(root: &Path, catalog: &Catalog, only: &[String]) -> Result<TaskSet, BenchError> {
        let (root, mut dirs) = task_dirs(root)?;
        check_ids(&root, &dirs, only)?;
        if !only.is_empty() {
            dirs.retain(|d| {
                d.file_name()
                    .is_some_and(|n| only.iter().any(|o| o.as_str() == n.to_string_lossy()))
            });
        }
        let tasks = dirs
            .iter()
            .map(|d| Task::load(d, |id| catalog.lookup(id)))
            .collect();
        Ok(TaskSet { root, tasks })
    }

    /// Computes every task's Harbor 0.26 digest ([`Task::compute_digest`]).
    pub fn compute_digests(&mut self) {
        for t in &mut self.tasks {
            t.compute_digest();
        }
    }

    /// Task ids in order.
    pub fn ids(&self) -> Vec<String> {
        self.tasks.iter().map(|t| t.id.clone()).collect()
    }
}
