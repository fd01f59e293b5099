//! A run prepared once: its request and its task set, loaded from the tasks folder a single time
//! and handed to the preflight and then to the engine ([`super::Engine::run`]). Before this, one
//! `skillscope run` read the folder three times — the command's check of `--task`, the
//! preflight's task checks and the engine — and could see three different folders if it changed
//! in between. Loading it before the database is opened also means a tasks folder that cannot be
//! used (empty, one task's own folder, an unknown `--task`) leaves nothing behind.

use crate::skillsbench::TaskSet;
use crate::skillsbench::env::{self, EnvValues, MissingEnv};

use super::{EngineError, RunRequest};

/// A run request with its task set loaded ([`PreparedRun::load`]).
#[derive(Debug, Clone)]
pub struct PreparedRun {
    /// What to run.
    pub request: RunRequest,
    /// The tasks of `request.tasks_dir` (only those of `request.task_filter` when it names
    /// some), with their problems; digests are computed by the engine when it registers the run.
    pub tasks: TaskSet,
}

impl PreparedRun {
    /// Loads the task set of `request` (blocking: it reads every task folder).
    ///
    /// # Errors
    /// [`EngineError::Bench`] for a tasks folder that cannot be used or an unknown `--task` id
    /// ([`TaskSet::load`]); a bad task is no error (its trials are `build-error`).
    pub fn load(request: RunRequest) -> Result<PreparedRun, EngineError> {
        let tasks = TaskSet::load(&request.tasks_dir, &request.catalog, &request.task_filter)?;
        Ok(PreparedRun { request, tasks })
    }

    /// [`PreparedRun::load`] on a blocking thread, for async callers.
    ///
    /// # Errors
    /// As [`PreparedRun::load`]; [`EngineError::Internal`] when the thread panicked.
    pub async fn load_off_thread(request: RunRequest) -> Result<PreparedRun, EngineError> {
        tokio::task::spawn_blocking(move || PreparedRun::load(request))
            .await
            .map_err(|e| EngineError::Internal(e.to_string()))?
    }

    /// The values the tasks' environments need that the run's settings do not set, task by task
    /// ([`env::missing_in`]); `runs_solution`: the agent runs the task's `solution/solve.sh`
    /// (the oracle), whose `[solution] env` then counts too. The preflight reports them and the
    /// engine refuses the run over them, from this one computation.
    pub fn missing_env(&self, runs_solution: bool) -> Vec<MissingEnv> {
        PreparedRun::missing_env_of(&self.request, &self.tasks.tasks, runs_solution)
    }

    /// [`PreparedRun::missing_env`] of `tasks` under `request`'s settings (the preflight holds
    /// the two apart until the set is known to load).
    pub fn missing_env_of(
        request: &RunRequest,
        tasks: &[crate::skillsbench::Task],
        runs_solution: bool,
    ) -> Vec<MissingEnv> {
        let values = EnvValues::new(&request.settings.container_env());
        env::missing_in(tasks, runs_solution, &values)
    }
}
