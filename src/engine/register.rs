//! Registering a run: the stored run of that name is resumed (it must have the same settings and
//! task selection, and no live owner), or a new one is recorded; this process takes ownership; the
//! task selection (the fixed denominator of every pass rate) is stored; and what cannot run as
//! asked is said in the run's events (unrunnable tasks, GPUs, invalid skills).

use super::{Engine, EngineError, RunRequest};
use crate::domain::RunTaskRow;
use crate::skillsbench::{Condition, TaskSet};
use crate::store::ledger::Owner;
use crate::store::owner::host_name;
use crate::store::queries::NewRun;
use crate::store::{RunLedger, STALE_AFTER_SECS, StoreError};

impl Engine {
    /// Registers (or resumes) the run `name` of `req` over `taskset` and owns it.
    pub(super) async fn register(
        &self,
        req: &RunRequest,
        name: &str,
        taskset: &TaskSet,
        jobs_dir: &std::path::Path,
    ) -> Result<RunLedger, EngineError> {
        let new = NewRun {
            name: name.to_string(),
            tasks_dir: taskset.root.display().to_string(),
            agent: req.agent.clone(),
            model: req.model.clone(),
            n_trials: req.n_trials,
            conditions: req.conditions.iter().map(Condition::key).collect(),
            jobs_dir: jobs_dir.display().to_string(),
            settings: req.settings.public_json(),
        };
        let tasks: Vec<RunTaskRow> = taskset
            .tasks
            .iter()
            .map(|t| RunTaskRow {
                task_id: t.id.clone(),
                domain: t.domain.clone(),
                difficulty: t.difficulty.clone(),
                path: t.dir.display().to_string(),
                problems: t.problems.clone(),
            })
            .collect();
        let owner = Owner {
            pid: std::process::id(),
            host: host_name(),
            stale_after_secs: STALE_AFTER_SECS,
        };
        let ledger = RunLedger::register(&self.store, new, tasks, owner, super::trial_namer(name))
            .await
            .map_err(|e| match e {
                StoreError::Conflict(m) => EngineError::Mismatch(m),
                e => EngineError::Store(e),
            })?;
        if let Some(cmd) = &req.resume_command {
            ledger.resume_command(cmd.clone()).await?;
        }
        for warning in warnings(req, taskset) {
            self.notice("warn", warning.clone());
            ledger.event("warn", warning).await?;
        }
        Ok(ledger)
    }
}

/// What of the request cannot run as asked: unrunnable tasks, GPU requests, invalid skills of a
/// task or of a condition's skills folder.
fn warnings(req: &RunRequest, taskset: &TaskSet) -> Vec<String> {
    let mut out = Vec::new();
    for t in taskset.tasks.iter().filter(|t| !t.problems.is_empty()) {
        out.push(format!(
            "task {} cannot run: {}",
            t.id,
            t.problems.join("; ")
        ));
    }
    for t in &taskset.tasks {
        if t.config.environment.gpus > 0 {
            out.push(format!(
                "task {} asks for {} GPU(s); skillscope does not pass GPUs to containers",
                t.id, t.config.environment.gpus
            ));
        }
        for s in t.skills.iter().filter(|s| !s.is_valid()) {
            let msgs: Vec<String> = s.problems.iter().map(|p| p.message.clone()).collect();
            out.push(format!(
                "task {}: invalid skill {}: {}",
                t.id,
                s.dir_name,
                msgs.join("; ")
            ));
        }
    }
    for c in &req.conditions {
        if let Condition::Skills { dir } = c {
            for s in crate::skillsbench::skill::scan_skills_dir(dir)
                .iter()
                .filter(|s| !s.is_valid())
            {
                let msgs: Vec<String> = s.problems.iter().map(|p| p.message.clone()).collect();
                out.push(format!(
                    "condition {}: invalid skill {}: {}",
                    c.label(),
                    s.dir_name,
                    msgs.join("; ")
                ));
            }
        }
    }
    out
}
