//! SkillsBench tasks, skills, conditions and the catalog — pure data, no Docker, no network.

pub mod catalog;
pub mod condition;
pub mod dockerfile;
pub mod examples;
pub mod selfgen;
pub mod skill;
pub mod task;

use std::path::{Path, PathBuf};

pub use catalog::{Catalog, CatalogEntry};
pub use condition::Condition;
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
    /// [`BenchError::TasksDir`] when `root` cannot be read, holds no task, or lacks a requested id.
    pub fn load(root: &Path, catalog: &Catalog, only: &[String]) -> Result<TaskSet, BenchError> {
        let dir_err = |m: String| BenchError::TasksDir {
            path: root.to_path_buf(),
            message: m,
        };
        let root = std::fs::canonicalize(root).map_err(|e| dir_err(e.to_string()))?;
        let entries = std::fs::read_dir(&root).map_err(|e| dir_err(e.to_string()))?;
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.is_dir()
                    && (p.join("task.toml").exists()
                        || p.join("instruction.md").exists()
                        || p.join("environment").is_dir())
            })
            .collect();
        dirs.sort();
        if dirs.is_empty() {
            return Err(dir_err(
                "no task folders found (expected <id>/task.toml)".into(),
            ));
        }
        if !only.is_empty() {
            let ids: Vec<String> = dirs
                .iter()
                .filter_map(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
                .collect();
            let missing: Vec<&String> = only.iter().filter(|o| !ids.contains(o)).collect();
            if !missing.is_empty() {
                return Err(dir_err(format!(
                    "no such task: {}",
                    missing
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
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

    /// Task ids in order.
    pub fn ids(&self) -> Vec<String> {
        self.tasks.iter().map(|t| t.id.clone()).collect()
    }
}
