//! The run ledger: the engine's typed view of one run in the store. Every write the engine makes
//! for a run goes through a named method here (registering and claiming it, planning trials,
//! recording an attempt's progress and end, re-queuing, commands, host health, events, the
//! heartbeat, releasing it), each one job of the single [`Writer`](super::Writer), so the engine
//! reads as scheduling rather than SQL.

use std::sync::Arc;

use super::attempt::{AttemptRecord, LiveActivity};
use super::queries::{self, NewRun};
use super::{
    CommandRow, HostRow, Outcome, RunRow, RunTaskRow, SkillUseRow, Store, StoreError, TrialBrief,
    TrialKey, TrialRow, now_rfc3339,
};
use crate::skillsbench::exposure::SkillExposure;

/// Names attempt `n` of a trial (Harbor's `<task>__<id>`).
pub type TrialNamer = Arc<dyn Fn(&TrialKey, u32) -> String + Send + Sync>;

/// One run's ledger. Cheap to clone.
#[derive(Clone)]
pub struct RunLedger {
    store: Store,
    run: RunRow,
    namer: TrialNamer,
    /// Tasks whose digest changed since the run began, found when it was resumed with drift
    /// allowed.
    drift: Vec<crate::domain::TaskDrift>,
}

/// Who registers a run: this process on this machine.
#[derive(Debug, Clone)]
pub struct Owner {
    /// Process id.
    pub pid: u32,
    /// Host name.
    pub host: String,
    /// A live owner's heartbeat younger than this blocks the claim (seconds).
    pub stale_after_secs: i64,
}

impl RunLedger {
    /// Registers `new` (or finds the run of that name, which must have been started with the
    /// same settings and task selection), takes ownership of it for `owner` and records its
    /// tasks — in one transaction.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] when the name is taken by different settings or tasks, or a live
    /// process owns the run; other database errors.
    pub async fn register(
        store: &Store,
        new: NewRun,
        tasks: Vec<RunTaskRow>,
        owner: Owner,
        namer: TrialNamer,
        allow_drift: bool,
    ) -> Result<RunLedger, StoreError> {
        Self::register_with_design(store, new, tasks, owner, namer, allow_drift, None).await
    }

    /// [`RunLedger::register`] with the run's group-sequential design (`None`: the fixed
    /// design), recorded in the same transaction as a new run; a design the run already
    /// recorded is kept (the engine refuses another before it registers: issue 47).
    ///
    /// # Errors
    /// As [`RunLedger::register`].
    pub async fn register_with_design(
        store: &Store,
        new: NewRun,
        tasks: Vec<RunTaskRow>,
        owner: Owner,
        namer: TrialNamer,
        allow_drift: bool,
        design: Option<crate::domain::sequential::DesignRow>,
    ) -> Result<RunLedger, StoreError> {
        let (run, drift) = store
            .writer()
            .write(move |c| {
                let run = match queries::find_run(c, &new.name)? {
                    Some(existing) => {
                        check_same(&existing, &new)?;
                        existing
                    }
                    None => queries::insert_run(c, &new)?,
                };
                // A design already recorded is kept as it was (`put_design` ignores another).
                if let Some(d) = &design {
                    let d = crate::domain::sequential::DesignRow {
                        run_id: run.id,
                        ..d.clone()
                    };
                    queries::put_design(c, &d)?;
                }
                let stored = queries::run_tasks(c, run.id)?;
                if !stored.is_empty() {
                    let a: Vec<&str> = stored.iter().map(|t| t.task_id.as_str()).collect();
                    let b: Vec<&str> = tasks.iter().map(|t| t.task_id.as_str()).collect();
                    if a != b {
                        return Err(StoreError::Conflict(format!(
                            "run {:?} was started with a different task selection ({} tasks, now {}); \
                             choose another --run name",
                            run.name,
                            a.len(),
                            b.len()
                        )));
                    }
                }
                let drift = changed_since_begun(&stored, &tasks);
                if !drift.is_empty() && !allow_drift {
                    return Err(StoreError::Conflict(format!(
                        "run {:?}: the tasks folder changed since the run began — {}; resume with \
                         --allow-drift to run them as they are now (recorded), or choose another \
                         --run name",
                        run.name,
                        crate::domain::describe_drift(&drift)
                    )));
                }
                queries::claim_run(c, run.id, owner.pid, &owner.host, owner.stale_after_secs)?;
                queries::upsert_run_tasks(c, run.id, &tasks)?;
                Ok((queries::get_run(c, run.id)?, drift))
            })
            .await?;
        Ok(RunLedger {
            store: store.clone(),
            run,
            namer,
            drift,
        })
    }

    /// Tasks whose digest changed since the run began, when it was resumed with drift allowed
    /// (empty otherwise).
    pub fn drift(&self) -> &[crate::domain::TaskDrift] {
        &self.drift
    }

    /// Records the pinned task set the run was checked against.
    ///
    /// # Errors
    /// Database errors.
    pub async fn task_set(&self, pin: crate::domain::TaskSetPin) -> Result<(), StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| queries::set_run_task_set(c, id, &pin))
            .await
    }

    /// The run as registered.
    pub fn run(&self) -> &RunRow {
        &self.run
    }

    /// The run's row as stored now.
    ///
    /// # Errors
    /// Database errors.
    pub async fn reload(&self) -> Result<RunRow, StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| queries::get_run(c, id))
            .await
    }

    /// Attempts a stopped process left active (building, agent, verifying) are closed as
    /// `interrupted` and queued again; so are trials whose latest attempt an infrastructure fault
    /// interrupted (the operator has fixed what stopped the run). Returns the attempts closed.
    ///
    /// # Errors
    /// Database errors.
    pub async fn requeue_unfinished(&self) -> Result<Vec<TrialRow>, StoreError> {
        let (id, namer) = (self.run.id, self.namer.clone());
        self.store
            .writer()
            .write(move |c| {
                let mut closed = queries::requeue_active(c, id, namer.as_ref())?;
                for t in queries::current_trials(c, id)? {
                    if t.outcome == Some(Outcome::Interrupted) {
                        queries::new_attempt(c, t.id, namer.as_ref())?;
                        closed.push(t);
                    }
                }
                Ok(closed)
            })
            .await
    }

    /// Inserts attempt 1 of every planned trial not yet planned. Returns how many were added.
    ///
    /// # Errors
    /// Database errors.
    pub async fn plan(&self, task_ids: Vec<String>) -> Result<usize, StoreError> {
        let (run, namer) = (self.run.clone(), self.namer.clone());
        self.store
            .writer()
            .write(move |c| queries::plan_trials(c, &run, &task_ids, namer.as_ref()))
            .await
    }

    /// The run's design, looks and early stops (`None` without a design).
    ///
    /// # Errors
    /// Database errors.
    pub async fn sequential(
        &self,
    ) -> Result<Option<crate::domain::sequential::SequentialRecord>, StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| queries::sequential_record(c, id))
            .await
    }

    /// Records a look at a stage boundary.
    ///
    /// # Errors
    /// Database errors.
    pub async fn look(&self, look: crate::domain::sequential::LookRow) -> Result<(), StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| queries::insert_look(c, id, &look))
            .await
    }

    /// Stops a condition early: its queued trials beyond the stage it keeps leave the queue, not
    /// run ([`queries::stop_condition`], `mean_cost` USD per finished trial for the cost saved);
    /// returns their attempt ids.
    ///
    /// # Errors
    /// Database errors.
    pub async fn stop_condition(
        &self,
        stop: crate::domain::sequential::EarlyStopRow,
        mean_cost: Option<f64>,
    ) -> Result<Vec<i64>, StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| queries::stop_condition(c, id, &stop, mean_cost))
            .await
    }

    /// Takes queued attempt `attempt` of a condition stopped early out of the queue, not run.
    ///
    /// # Errors
    /// Database errors.
    pub async fn not_run(&self, condition: String, attempt: i64) -> Result<(), StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| queries::not_run(c, id, &condition, attempt))
            .await
    }

    /// The latest attempts of the run named `name`, brief (empty when there is none): a
    /// comparison's baseline held by another run.
    ///
    /// # Errors
    /// Database errors.
    pub async fn briefs_of(&self, name: String) -> Result<Vec<TrialBrief>, StoreError> {
        self.store
            .writer()
            .write(move |c| match queries::find_run(c, &name)? {
                Some(run) => queries::current_briefs(c, run.id),
                None => Ok(Vec::new()),
            })
            .await
    }

    /// The latest attempt of every trial, brief.
    ///
    /// # Errors
    /// Database errors.
    pub async fn current(&self) -> Result<Vec<TrialBrief>, StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| queries::current_briefs(c, id))
            .await
    }

    /// The latest attempt of every trial, whole.
    ///
    /// # Errors
    /// Database errors.
    pub async fn current_trials(&self) -> Result<Vec<TrialRow>, StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| queries::current_trials(c, id))
            .await
    }

    /// Queued attempts in execution order.
    ///
    /// # Errors
    /// Database errors.
    pub async fn queued(&self) -> Result<Vec<TrialRow>, StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| queries::queued_trials(c, id))
            .await
    }

    /// Every attempt of trial `key`, oldest first.
    ///
    /// # Errors
    /// Database errors.
    pub async fn attempts(&self, key: TrialKey) -> Result<Vec<TrialRow>, StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| queries::trial_attempts(c, id, &key))
            .await
    }

    /// The latest attempt of the trial attempt `attempt_id` belongs to.
    ///
    /// # Errors
    /// Database errors ([`StoreError::NotFound`]-like SQL errors for an unknown id).
    pub async fn latest_of(&self, attempt_id: i64) -> Result<Option<TrialRow>, StoreError> {
        self.store
            .writer()
            .write(move |c| {
                let t = queries::get_trial(c, attempt_id)?;
                Ok(queries::trial_attempts(c, t.run_id, &t.key())?
                    .into_iter()
                    .last())
            })
            .await
    }

    /// Records what is known of attempt `id` so far (its phase, times, host, image, container…).
    ///
    /// # Errors
    /// Database errors.
    pub async fn progress(&self, id: i64, record: &AttemptRecord) -> Result<(), StoreError> {
        let patch = record.patch().clone();
        self.store
            .writer()
            .write(move |c| queries::patch_trial(c, id, &patch))
            .await
    }

    /// Records what the running agent of attempt `id` did so far.
    ///
    /// # Errors
    /// Database errors.
    pub async fn live(&self, id: i64, live: &LiveActivity) -> Result<(), StoreError> {
        let patch = live.patch();
        self.store
            .writer()
            .write(move |c| queries::patch_trial(c, id, &patch))
            .await
    }

    /// Closes attempt `id` with its end, the skills its agent used and what it could see of
    /// skills when it started (when its agent started); returns the stored row.
    ///
    /// # Errors
    /// Database errors.
    pub async fn finish(
        &self,
        id: i64,
        record: AttemptRecord,
        skill_uses: Vec<SkillUseRow>,
        exposure: Option<SkillExposure>,
    ) -> Result<TrialRow, StoreError> {
        let patch = record.patch().clone();
        self.store
            .writer()
            .write(move |c| {
                queries::finish_trial(c, id, &patch)?;
                queries::set_skill_uses(c, id, &skill_uses)?;
                if let Some(x) = &exposure {
                    super::exposure::record(c, id, x)?;
                }
                queries::get_trial(c, id)
            })
            .await
    }

    /// Queues the next attempt of the trial attempt `id` belongs to (superseding it).
    ///
    /// # Errors
    /// Database errors.
    pub async fn requeue(&self, id: i64) -> Result<TrialRow, StoreError> {
        let namer = self.namer.clone();
        self.store
            .writer()
            .write(move |c| queries::new_attempt(c, id, namer.as_ref()))
            .await
    }

    /// Closes a queued attempt as cancelled by the operator; returns the stored row.
    ///
    /// # Errors
    /// Database errors.
    pub async fn cancel_queued(&self, id: i64) -> Result<TrialRow, StoreError> {
        let record = AttemptRecord::default().judged(super::attempt::AttemptVerdict {
            outcome: Outcome::Cancelled,
            reward: None,
            rewards: None,
            error: Some("cancelled by the operator before it started".into()),
            failure_category: None,
            fault: None,
            tamper: None,
            finished_at: now_rfc3339(),
        });
        self.finish(id, record, Vec::new(), None).await
    }

    /// Operator commands not handled yet, oldest first.
    ///
    /// # Errors
    /// Database errors.
    pub async fn pending_commands(&self) -> Result<Vec<CommandRow>, StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| queries::pending_commands(c, id))
            .await
    }

    /// Marks command `id` handled (`done` when `ok`, else `rejected`) with a note.
    ///
    /// # Errors
    /// Database errors.
    pub async fn close_command(&self, id: i64, ok: bool, note: String) -> Result<(), StoreError> {
        self.store
            .writer()
            .write(move |c| queries::close_command(c, id, ok, &note))
            .await
    }

    /// Refreshes the heartbeat of owner `pid`; returns true when a stop was asked for from
    /// another process.
    ///
    /// # Errors
    /// Database errors.
    pub async fn heartbeat(&self, pid: u32) -> Result<bool, StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| {
                queries::heartbeat(c, id, pid)?;
                queries::stop_requested(c, id)
            })
            .await
    }

    /// True when a stop was asked for from another process.
    ///
    /// # Errors
    /// Database errors.
    pub async fn stop_requested(&self) -> Result<bool, StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| queries::stop_requested(c, id))
            .await
    }

    /// Appends a run event (`info`, `warn` or `error`).
    ///
    /// # Errors
    /// Database errors.
    pub async fn event(&self, level: &'static str, message: String) -> Result<(), StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| queries::add_event(c, id, level, &message))
            .await
    }

    /// Marks attempt `id` stalled since `since`, or not stalled (`None`).
    ///
    /// # Errors
    /// Database errors.
    pub async fn stalled(&self, id: i64, since: Option<String>) -> Result<(), StoreError> {
        self.store
            .writer()
            .write(move |c| queries::set_stalled(c, id, since.as_deref()))
            .await
    }

    /// Records the run's cost budget (USD; `None`: none).
    ///
    /// # Errors
    /// Database errors.
    pub async fn budget(&self, max_cost_usd: Option<f64>) -> Result<(), StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| queries::set_budget(c, id, max_cost_usd))
            .await
    }

    /// Records the current limit on concurrent agent sessions per provider.
    ///
    /// # Errors
    /// Database errors.
    pub async fn provider_limit(&self, limit: Option<u32>) -> Result<(), StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| queries::set_provider_limit(c, id, limit))
            .await
    }

    /// Every attempt of the run (superseded ones too), for what they cost.
    ///
    /// # Errors
    /// Database errors.
    pub async fn all_attempts(&self) -> Result<Vec<TrialRow>, StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| queries::all_trials(c, id))
            .await
    }

    /// Records a Docker host's health.
    ///
    /// # Errors
    /// Database errors.
    pub async fn host(&self, row: HostRow) -> Result<(), StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| queries::upsert_host(c, id, &row))
            .await
    }

    /// Records that the run waits for Docker (since, last error), or that it no longer does.
    ///
    /// # Errors
    /// Database errors.
    pub async fn waiting(&self, waiting: Option<(String, String)>) -> Result<(), StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| {
                queries::set_waiting(
                    c,
                    id,
                    waiting.as_ref().map(|(a, b)| (a.as_str(), b.as_str())),
                )
            })
            .await
    }

    /// Stores the command line that resumes the run.
    ///
    /// # Errors
    /// Database errors.
    pub async fn resume_command(&self, command: String) -> Result<(), StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| queries::set_resume_command(c, id, &command))
            .await
    }

    /// Releases the run: `finished`, or `stopped` with its reason. Returns the stored row.
    ///
    /// # Errors
    /// Database errors.
    pub async fn release(
        &self,
        finished: bool,
        reason: Option<String>,
    ) -> Result<RunRow, StoreError> {
        let id = self.run.id;
        self.store
            .writer()
            .write(move |c| {
                queries::release_run(c, id, finished, reason.as_deref())?;
                queries::get_run(c, id)
            })
            .await
    }
}

/// A run of the same name must have been started with the same tasks folder, agent, model,
/// conditions and trial count.
/// The tasks whose stored digest (when the run began) differs from the one `tasks` carry now.
fn changed_since_begun(
    stored: &[RunTaskRow],
    tasks: &[RunTaskRow],
) -> Vec<crate::domain::TaskDrift> {
    tasks
        .iter()
        .filter_map(|t| {
            let before = stored
                .iter()
                .find(|s| s.task_id == t.task_id)?
                .digest
                .as_ref()?;
            let now = t.digest.as_ref()?;
            (before != now).then(|| crate::domain::TaskDrift {
                task: t.task_id.clone(),
                expected: before.clone(),
                found: Some(now.clone()),
                reason: "changed since the run began".into(),
            })
        })
        .collect()
}

fn check_same(existing: &RunRow, new: &NewRun) -> Result<(), StoreError> {
    if existing.status == "imported" {
        return Err(StoreError::Conflict(format!(
            "run {:?} was imported (its trials ran elsewhere) and cannot be resumed; choose another --run name to run its tasks here",
            existing.name
        )));
    }
    let agent = |a: &str, m: &Option<String>| match m {
        Some(m) => format!("{a} with model {m}"),
        None => format!("{a} (no model)"),
    };
    let mut diffs = Vec::new();
    if existing.tasks_dir != new.tasks_dir {
        diffs.push(format!(
            "tasks {} (now {})",
            existing.tasks_dir, new.tasks_dir
        ));
    }
    if existing.agent != new.agent || existing.model != new.model {
        diffs.push(format!(
            "agent {} (now {})",
            agent(&existing.agent, &existing.model),
            agent(&new.agent, &new.model)
        ));
    }
    if existing.conditions != new.conditions {
        diffs.push(format!(
            "conditions {} (now {})",
            existing.conditions.join(", "),
            new.conditions.join(", ")
        ));
    }
    if existing.n_trials != new.n_trials {
        diffs.push(format!(
            "{} trials (now {})",
            existing.n_trials, new.n_trials
        ));
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(StoreError::Conflict(format!(
            "run {:?} exists with {}; pass the same options to resume it or choose another --run name",
            existing.name,
            diffs.join(", ")
        )))
    }
}
