//! Registering a run: the stored run of that name is resumed (it must have the same settings,
//! task selection and group-sequential design, and no live owner), or a new one is recorded with
//! its design; this process takes ownership; the task selection (the fixed denominator of every
//! pass rate) is stored; and what cannot run as asked is said in the run's events (unrunnable
//! tasks, GPUs, invalid skills).

use super::{Engine, EngineError, RunRequest};
use crate::domain::sequential::DesignRow;
use crate::domain::{RunTaskRow, TaskSetPin, describe_drift};
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
        pinned: Pinned,
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
                digest: t.digest.clone(),
            })
            .collect();
        let owner = Owner {
            pid: std::process::id(),
            host: host_name(),
            stale_after_secs: STALE_AFTER_SECS,
        };
        let design = self.check_design(req, name, taskset)?;
        let ledger = RunLedger::register_with_design(
            &self.store,
            new,
            tasks,
            owner,
            super::trial_namer(name),
            req.pin.allow_drift,
            design,
        )
        .await
        .map_err(|e| match e {
            StoreError::Conflict(m) => EngineError::Mismatch(m),
            e => EngineError::Store(e),
        })?;
        if let Some(cmd) = &req.resume_command {
            ledger.resume_command(cmd.clone()).await?;
        }
        if let Some(pin) = pinned.pin {
            ledger.task_set(pin).await?;
        }
        let mut notes = pinned.notes;
        if !ledger.drift().is_empty() {
            notes.push(format!(
                "resumed with --allow-drift although tasks changed since the run began: {} (their new trials record the new digest)",
                describe_drift(ledger.drift())
            ));
        }
        for warning in notes.into_iter().chain(warnings(req, taskset)) {
            self.notice("warn", warning.clone());
            ledger.event("warn", warning).await?;
        }
        Ok(ledger)
    }
}

impl Engine {
    /// The design `req` asks of run `name` over `taskset`, checked before anything is written
    /// (issue 47): a design is fixed when its run is created, so resuming a run with another
    /// design, adding one to a run whose trials started, or dropping the one it recorded is
    /// refused with the reason; and a design needs at least its minimum of tasks.
    fn check_design(
        &self,
        req: &RunRequest,
        name: &str,
        taskset: &TaskSet,
    ) -> Result<Option<DesignRow>, EngineError> {
        use crate::report::model::sequential::{conflict_text, spec_text};
        let asked = match &req.sequential {
            Some(plan) => {
                if taskset.tasks.len() < plan.design.min_tasks {
                    return Err(EngineError::Mismatch(format!(
                        "run {name:?}: a sequential design needs at least {} tasks — with {} the sign-flip test can never show an effect at one-sided α {} (its smallest p-value is 1/2^{}); run more tasks or without --stages",
                        plan.design.min_tasks,
                        taskset.tasks.len(),
                        crate::format::probability(plan.design.alpha),
                        taskset.tasks.len()
                    )));
                }
                Some(
                    crate::analysis::sequential::design::row(0, plan)
                        .map_err(|e| EngineError::Mismatch(e.to_string()))?,
                )
            }
            None => None,
        };
        let conn = self.store.connect()?;
        let Some(run) = crate::store::queries::find_run(&conn, name)? else {
            return Ok(asked);
        };
        let stored = crate::store::queries::sequential_record(&conn, run.id)?.map(|r| r.design);
        let why = match (&stored, &asked) {
            (None, None) => return Ok(asked),
            (Some(s), Some(a)) => match conflict_text(s, a) {
                None => return Ok(asked),
                Some(diff) => format!(
                    "run {name:?} was created with another sequential design — {diff}; a design is fixed when its run is created (changed after its data, its error rates no longer hold): resume with the options it was created with, or choose another --run name"
                ),
            },
            (None, Some(a)) => {
                if !crate::store::queries::run_started(&conn, run.id)? {
                    return Ok(asked);
                }
                format!(
                    "run {name:?} has trials and was created without a sequential design; --stages {} cannot be added after its data (a design chosen after the data voids its error rates): choose another --run name",
                    a.spec.stages
                )
            }
            (Some(s), None) => format!(
                "run {name:?} was created with a sequential design ({}); resume it with --stages {}{}, or choose another --run name for the fixed design",
                spec_text(&s.spec),
                s.spec.stages,
                if s.early_stop { "" } else { " --no-early-stop" }
            ),
        };
        Err(EngineError::Mismatch(why))
    }
}

/// What the pinned task set check left for registration: the pin to record, and what to say.
#[derive(Debug, Default)]
pub(super) struct Pinned {
    /// The pin, when a set was given.
    pub pin: Option<TaskSetPin>,
    /// Notes for the run's events (drift allowed, tasks left out).
    pub notes: Vec<String>,
}

/// Checks the tasks against the request's pinned task set (when there is one) and computes every
/// task's Harbor digest, off the async threads. With a set, the run keeps only its tasks; a task
/// that differs from its pin or is missing refuses the run by name, unless drift is allowed
/// (then it is recorded), and so does a `--task` the set does not pin.
pub(super) async fn pin_tasks(
    req: &RunRequest,
    taskset: TaskSet,
) -> Result<(TaskSet, Pinned), EngineError> {
    let pin = req.pin.clone();
    let only = req.task_filter.clone();
    tokio::task::spawn_blocking(move || {
        let mut taskset = taskset;
        let mut out = Pinned::default();
        if let Some(set) = &pin.set {
            let folder: Vec<(String, std::path::PathBuf)> = taskset
                .tasks
                .iter()
                .map(|t| (t.id.clone(), t.dir.clone()))
                .collect();
            let check = set.check(&folder, &only);
            if !check.outside.is_empty() {
                return Err(EngineError::TaskSet(format!(
                    "task set {} ({}) does not pin {}: choose tasks of the set",
                    set.label(),
                    set.file.display(),
                    check.outside.join(", ")
                )));
            }
            if !check.drift.is_empty() {
                if !pin.allow_drift {
                    return Err(EngineError::TaskSet(set.refusal(&check.drift)));
                }
                out.notes.push(format!(
                    "task set {}: --allow-drift runs tasks that do not match it: {}",
                    set.label(),
                    describe_drift(&check.drift)
                ));
            }
            if !check.unpinned.is_empty() {
                out.notes.push(format!(
                    "task set {}: {} task(s) of the folder are not in the set and are left out: {}",
                    set.label(),
                    check.unpinned.len(),
                    check.unpinned.join(", ")
                ));
            }
            taskset.tasks.retain(|t| set.tasks.contains_key(&t.id));
            if taskset.tasks.is_empty() {
                return Err(EngineError::TaskSet(format!(
                    "task set {} ({}): the tasks folder {} holds none of its tasks",
                    set.label(),
                    set.file.display(),
                    taskset.root.display()
                )));
            }
            out.pin = Some(set.pin(&check, pin.allow_drift));
        }
        taskset.compute_digests();
        Ok((taskset, out))
    })
    .await
    .map_err(|e| EngineError::Internal(e.to_string()))?
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
        if t.asks_separate_verifier() {
            out.push(format!(
                "task {} asks for a separate verifier environment (Harbor 0.26's `separate` mode); skillscope runs its verifier in the agent's container after the agent, and its result.json and lock.json say `shared`",
                t.id
            ));
        }
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
