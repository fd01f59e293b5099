//! The engine: owns a run from start to end — loads tasks, registers the run, recovers what a killed
//! process left, schedules trials over Docker hosts up to their slots, applies operator commands
//! from the store, writes results, and stops cleanly.
//!
//! The store is the seam: the engine is its only writer of results; a dashboard (here or in another
//! process) reads it and writes commands. In one process the engine also sends [`EngineEvent`]s so
//! a UI redraws at once.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::broadcast;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::bench::{Catalog, Condition, Task, TaskSet};
use crate::config::RunSettings;
use crate::harbor::jobdir::{self, TrialFacts};
use crate::runner::container::{Reaper, remove_labeled, remove_labeled_older_than};
use crate::runner::image::ImageSettings;
use crate::runner::{
    Agent, DockerHost, ImageCache, RunnerError, TrialCancel, TrialEnv, TrialJob, TrialReport,
    agent_by_name, labels, run_trial,
};
use crate::store::queries::{self, NewRun, TrialPatch};
use crate::store::{
    CommandKind, Outcome, RunRow, RunTaskRow, Store, StoreError, TrialKey, TrialRow, TrialStatus,
};

/// Seconds after which a run's heartbeat is stale and another process may take it over.
pub const STALE_AFTER_SECS: i64 = 30;
/// How often the owner refreshes its heartbeat.
const HEARTBEAT: Duration = Duration::from_secs(5);
/// How often pending commands are looked for.
const COMMAND_POLL: Duration = Duration::from_millis(300);
/// A helper container this old was left by a killed process (a leak check ends within its 120 s
/// exec budget; filling a kit volume, a few hundred MB through the API, within minutes).
const HELPER_STALE: Duration = Duration::from_secs(3600);

/// Errors that stop a run before or while it runs (trial failures are outcomes, not errors).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Task definitions, catalog or conditions.
    #[error(transparent)]
    Bench(#[from] crate::bench::BenchError),
    /// The database.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Docker or the agent.
    #[error(transparent)]
    Runner(#[from] RunnerError),
    /// The request contradicts a stored run.
    #[error("{0}")]
    Mismatch(String),
    /// A disk filled up; the run stopped with the affected attempts re-queued.
    #[error(
        "disk full, run stopped (finished trials are kept; free space and re-run to resume): {0}"
    )]
    DiskFull(String),
    /// The model provider refused the run (key or quota): every trial would fail the same way.
    #[error(
        "run stopped: {0} (finished trials are kept and this one is queued again; fix the key or quota and re-run to resume)"
    )]
    ProviderRefused(String),
}

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// Run name; derived from the other fields when `None`.
    pub name: Option<String>,
    /// Tasks folder.
    pub tasks_dir: PathBuf,
    /// Only these task ids (all when empty).
    pub task_filter: Vec<String>,
    /// Conditions, in order.
    pub conditions: Vec<Condition>,
    /// Trials per task and condition.
    pub n_trials: u32,
    /// Agent name.
    pub agent: String,
    /// Model name.
    pub model: Option<String>,
    /// Jobs folder.
    pub jobs_dir: PathBuf,
    /// Domain catalog.
    pub catalog: Catalog,
    /// Hosts, concurrency, CA bundle, env, mounts.
    pub settings: RunSettings,
    /// Keep the engine alive after the last trial (a dashboard may still send retries).
    pub stay_alive: bool,
}

/// Something changed (for UIs in the same process).
#[derive(Debug, Clone, PartialEq)]
pub enum EngineEvent {
    /// The run is registered and about to start trials.
    Started {
        /// Run row id.
        run_id: i64,
        /// Trials planned (latest attempts).
        total: usize,
        /// Of which already finished.
        done: usize,
    },
    /// An attempt moved to another phase (or was queued).
    TrialProgress {
        /// Attempt row id.
        attempt_id: i64,
        /// Its status now.
        status: TrialStatus,
    },
    /// An attempt finished.
    TrialDone {
        /// The finished attempt.
        row: Box<TrialRow>,
    },
    /// A message for the operator.
    Notice {
        /// `info`, `warn` or `error`.
        level: String,
        /// Text.
        message: String,
    },
    /// The run stopped (finished or interrupted).
    Stopped {
        /// True when every trial is done.
        finished: bool,
    },
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The run's final row.
    pub run: RunRow,
    /// True when every trial is done.
    pub finished: bool,
}

/// Derives a run name from its inputs: `<tasks folder>-<agent>[-<model>]-<conditions>-x<trials>`,
/// plus a short hash of the task selection when it is filtered.
pub fn default_run_name(req: &RunRequest) -> String {
    use sha2::{Digest, Sha256};
    let base = req
        .tasks_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tasks".into());
    let base = if req
        .tasks_dir
        .ancestors()
        .any(|a| a.ends_with("example-tasks"))
    {
        "examples".to_string()
    } else {
        base
    };
    let conds: Vec<String> = req.conditions.iter().map(Condition::slug).collect();
    let mut name = format!("{}-{}", base, req.agent);
    if let Some(m) = &req.model {
        name.push('-');
        name.push_str(m);
    }
    name.push_str(&format!("-{}-x{}", conds.join("+"), req.n_trials));
    if !req.task_filter.is_empty() {
        let mut ids = req.task_filter.clone();
        ids.sort();
        let h = Sha256::digest(ids.join(","));
        name.push_str(&format!("-{}", &hex::encode(h)[..6]));
    }
    crate::bench::condition::sanitize_slug(&name).replace('/', "-")
}

/// The engine: a store and an event channel.
#[derive(Clone)]
pub struct Engine {
    store: Store,
    events: broadcast::Sender<EngineEvent>,
}

impl Engine {
    /// An engine writing to `store`.
    pub fn new(store: Store) -> Engine {
        let (events, _) = broadcast::channel(4096);
        Engine { store, events }
    }

    /// Subscribes to events.
    pub fn subscribe(&self) -> broadcast::Receiver<EngineEvent> {
        self.events.subscribe()
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    fn notice(&self, level: &str, message: impl Into<String>) {
        let _ = self.events.send(EngineEvent::Notice {
            level: level.into(),
            message: message.into(),
        });
    }

    async fn event(
        &self,
        run_id: i64,
        level: &'static str,
        message: String,
    ) -> Result<(), StoreError> {
        self.notice(level, message.clone());
        self.store
            .writer()
            .write(move |c| queries::add_event(c, run_id, level, &message))
            .await
    }

    /// Runs (or resumes) a run until every trial is done, `shutdown` fires, or the store fails.
    ///
    /// # Errors
    /// [`EngineError`] for problems that prevent the run (bad tasks folder, unreachable Docker,
    /// a run name taken by different settings or owned by a live process, database failures).
    pub async fn run(
        &self,
        req: RunRequest,
        shutdown: CancellationToken,
    ) -> Result<RunOutcome, EngineError> {
        let result = self.run_inner(req, shutdown).await;
        if let Err(e) = &result {
            self.notice("error", e.to_string());
            let _ = self.events.send(EngineEvent::Stopped { finished: false });
        }
        result
    }

    async fn run_inner(
        &self,
        req: RunRequest,
        shutdown: CancellationToken,
    ) -> Result<RunOutcome, EngineError> {
        let tasks_dir = req.tasks_dir.clone();
        let catalog = req.catalog.clone();
        let filter = req.task_filter.clone();
        let taskset =
            tokio::task::spawn_blocking(move || TaskSet::load(&tasks_dir, &catalog, &filter))
                .await
                .map_err(|e| EngineError::Mismatch(e.to_string()))??;
        let agent = agent_by_name(&req.agent, req.model.as_deref(), &req.settings.harness)?;
        let name = req.name.clone().unwrap_or_else(|| default_run_name(&req));
        let jobs_dir = absolute(&req.jobs_dir);
        let run = self.register(&req, &name, &taskset, &jobs_dir).await?;
        let run_id = run.id;
        let result = self
            .drive(&req, run, taskset, agent, jobs_dir, shutdown)
            .await;
        let finished = matches!(result, Ok(true));
        let release = self
            .store
            .writer()
            .write(move |c| queries::release_run(c, run_id, finished))
            .await;
        result?;
        release?;
        let _ = self.events.send(EngineEvent::Stopped { finished });
        let run = self
            .store
            .writer()
            .write(move |c| queries::get_run(c, run_id))
            .await?;
        Ok(RunOutcome { run, finished })
    }

    async fn register(
        &self,
        req: &RunRequest,
        name: &str,
        taskset: &TaskSet,
        jobs_dir: &std::path::Path,
    ) -> Result<RunRow, EngineError> {
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
        let pid = std::process::id();
        let host = queries::host_name();
        let run = self
            .store
            .writer()
            .write(move |c| {
                let run = match queries::find_run(c, &new.name)? {
                    Some(existing) => {
                        check_same(&existing, &new)?;
                        existing
                    }
                    None => queries::insert_run(c, &new)?,
                };
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
                // Owning the run and recording its tasks happen in one transaction.
                queries::claim_run(c, run.id, pid, &host, STALE_AFTER_SECS)?;
                queries::upsert_run_tasks(c, run.id, &tasks)?;
                Ok(run)
            })
            .await
            .map_err(|e| match e {
                StoreError::Conflict(m) => EngineError::Mismatch(m),
                e => EngineError::Store(e),
            })?;
        for t in taskset.tasks.iter().filter(|t| !t.problems.is_empty()) {
            self.event(
                run.id,
                "warn",
                format!("task {} cannot run: {}", t.id, t.problems.join("; ")),
            )
            .await?;
        }
        for t in &taskset.tasks {
            if t.config.environment.gpus > 0 {
                self.event(
                    run.id,
                    "warn",
                    format!(
                        "task {} asks for {} GPU(s); skillscope does not pass GPUs to containers",
                        t.id, t.config.environment.gpus
                    ),
                )
                .await?;
            }
            for s in t.skills.iter().filter(|s| !s.is_valid()) {
                let msgs: Vec<String> = s.problems.iter().map(|p| p.message.clone()).collect();
                self.event(
                    run.id,
                    "warn",
                    format!(
                        "task {}: invalid skill {}: {}",
                        t.id,
                        s.dir_name,
                        msgs.join("; ")
                    ),
                )
                .await?;
            }
        }
        for c in &req.conditions {
            if let Condition::Skills { dir } = c {
                for s in crate::bench::skill::scan_skills_dir(dir)
                    .iter()
                    .filter(|s| !s.is_valid())
                {
                    let msgs: Vec<String> = s.problems.iter().map(|p| p.message.clone()).collect();
                    self.event(
                        run.id,
                        "warn",
                        format!(
                            "condition {}: invalid skill {}: {}",
                            c.label(),
                            s.dir_name,
                            msgs.join("; ")
                        ),
                    )
                    .await?;
                }
            }
        }
        Ok(run)
    }

    /// The scheduling loop. Returns whether every trial is done.
    async fn drive(
        &self,
        req: &RunRequest,
        run: RunRow,
        taskset: TaskSet,
        agent: Arc<dyn Agent>,
        jobs_dir: PathBuf,
        shutdown: CancellationToken,
    ) -> Result<bool, EngineError> {
        let hosts = connect_hosts(&req.settings).await?;
        let run_id = run.id;
        let run_name = run.name.clone();
        // Recover what a killed process left: active attempts → interrupted + re-queued; their
        // containers (found by label) removed.
        let namer = trial_namer(&run_name);
        let stale = self
            .store
            .writer()
            .write(move |c| queries::requeue_active(c, run_id, &namer))
            .await?;
        if !stale.is_empty() {
            self.event(
                run_id,
                "info",
                format!(
                    "re-queued {} trials left running by a stopped process",
                    stale.len()
                ),
            )
            .await?;
        }
        for h in &hosts {
            let mut n = remove_labeled(&h.docker, labels::RUN_UID, &run.uid).await?;
            // Helpers (leak checks, kit fills) belong to no run; one this old was left by a killed
            // process (of this run or another). Best effort: a failed sweep costs only disk.
            n += remove_labeled_older_than(&h.docker, labels::HELPER, HELPER_STALE)
                .await
                .unwrap_or(0);
            if n > 0 {
                self.event(
                    run_id,
                    "info",
                    format!("removed {n} leftover containers on {}", h.name),
                )
                .await?;
            }
        }
        let ids = taskset.ids();
        let (run2, namer) = (run.clone(), trial_namer(&run_name));
        self.store
            .writer()
            .write(move |c| queries::plan_trials(c, &run2, &ids, &namer))
            .await?;

        let tasks: HashMap<String, Arc<Task>> = taskset
            .tasks
            .into_iter()
            .map(|t| (t.id.clone(), Arc::new(t)))
            .collect();
        let conditions: HashMap<String, Condition> = req
            .conditions
            .iter()
            .map(|c| (c.key(), c.clone()))
            .collect();
        let images = Arc::new(ImageCache::new(ImageSettings {
            ca_bundle: req.settings.ca_bundle.clone(),
            work_dir: None,
        }));
        let shared = Arc::new(Shared {
            engine: self.clone(),
            run: run.clone(),
            tasks,
            conditions,
            jobs_dir,
            agent,
            images,
            reaper: Arc::new(Reaper::default()),
            copy_logs: req.settings.copy_logs,
            extra_env: req.settings.container_env(),
            binds: req.settings.mounts.clone(),
            settings_json: req.settings.public_json(),
            retry: req.settings.harness.clone(),
            checksums: Mutex::new(HashMap::new()),
        });
        let current = self
            .store
            .writer()
            .write(move |c| queries::current_briefs(c, run_id))
            .await?;
        let _ = self.events.send(EngineEvent::Started {
            run_id,
            total: current.len(),
            done: current
                .iter()
                .filter(|t| t.status == TrialStatus::Done)
                .count(),
        });
        shared.write_job_files(false).await;

        let mut queue: VecDeque<TrialRow> = self
            .store
            .writer()
            .write(move |c| queries::queued_trials(c, run_id))
            .await?
            .into();
        let mut running: JoinSet<(i64, usize, Result<Option<TrialRow>, EngineError>)> =
            JoinSet::new();
        let mut cancels: HashMap<i64, TrialCancel> = HashMap::new();
        let mut in_use = vec![0usize; hosts.len()];
        let stop_trials = CancellationToken::new();
        let mut stopping = false;
        let mut fatal: Option<EngineError> = None;
        let mut poll = tokio::time::interval(COMMAND_POLL);
        let mut beat = tokio::time::interval(HEARTBEAT);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);

        loop {
            while let Some(h) = pick_host(&hosts, &in_use).filter(|_| !stopping) {
                let Some(row) = queue.pop_front() else { break };
                in_use[h] += 1;
                let cancel = TrialCancel::child_of(&stop_trials);
                cancels.insert(row.id, cancel.clone());
                let shared = shared.clone();
                let host = hosts[h].clone();
                running.spawn(async move {
                    let id = row.id;
                    let r = shared.run_one(row, host, cancel).await;
                    (id, h, r)
                });
            }
            if running.is_empty() && (stopping || (queue.is_empty() && !req.stay_alive)) {
                // Commands written while the last trials ran still count.
                if !stopping && self.handle_commands(&shared, &mut queue, &cancels).await? > 0 {
                    continue;
                }
                break;
            }
            tokio::select! {
                Some(joined) = running.join_next(), if !running.is_empty() => {
                    match joined {
                        Ok((id, h, r)) => {
                            in_use[h] -= 1;
                            cancels.remove(&id);
                            match r {
                                Ok(Some(retry)) if !stopping => queue.push_back(retry),
                                Ok(_) => {}
                                Err(e) => {
                                    fatal.get_or_insert(e);
                                }
                            }
                        }
                        Err(e) => {
                            self.notice("error", format!("a trial task failed: {e}"));
                        }
                    }
                    if fatal.is_some() && !stopping {
                        stopping = true;
                        stop_trials.cancel();
                        queue.clear();
                    }
                }
                _ = poll.tick(), if !stopping => {
                    self.handle_commands(&shared, &mut queue, &cancels).await?;
                }
                _ = beat.tick() => {
                    let pid = std::process::id();
                    if let Err(e) = self.store.writer().write(move |c| queries::heartbeat(c, run_id, pid)).await {
                        fatal.get_or_insert(EngineError::Store(e));
                        if !stopping {
                            stopping = true;
                            stop_trials.cancel();
                            queue.clear();
                        }
                    }
                }
                _ = shutdown.cancelled(), if !stopping => {
                    stopping = true;
                    self.notice("info", "stopping: cancelling running trials (state is saved; re-run to resume)");
                    stop_trials.cancel();
                    queue.clear();
                }
            }
        }
        shared.reaper.drain().await;
        shared.write_job_files(true).await;
        if let Some(e) = fatal {
            return Err(e);
        }
        let current = self
            .store
            .writer()
            .write(move |c| queries::current_briefs(c, run_id))
            .await?;
        Ok(!current.is_empty() && current.iter().all(|t| t.status == TrialStatus::Done))
    }

    /// Applies pending commands. Returns how many were handled.
    async fn handle_commands(
        &self,
        shared: &Arc<Shared>,
        queue: &mut VecDeque<TrialRow>,
        cancels: &HashMap<i64, TrialCancel>,
    ) -> Result<usize, EngineError> {
        let run_id = shared.run.id;
        let pending = self
            .store
            .writer()
            .write(move |c| queries::pending_commands(c, run_id))
            .await?;
        let n = pending.len();
        for cmd in pending {
            let target = cmd.trial_id;
            let namer = trial_namer(&shared.run.name);
            let current = self
                .store
                .writer()
                .write(move |c| {
                    let t = queries::get_trial(c, target)?;
                    let attempts = queries::trial_attempts(c, t.run_id, &t.key())?;
                    Ok(attempts.into_iter().last())
                })
                .await?;
            let Some(current) = current else {
                let id = cmd.id;
                self.store
                    .writer()
                    .write(move |c| queries::close_command(c, id, false, "no such trial"))
                    .await?;
                continue;
            };
            let (ok, note) = match cmd.kind {
                CommandKind::Retry => {
                    if current.status != TrialStatus::Done {
                        (
                            false,
                            format!("attempt {} is still {}", current.attempt, current.status),
                        )
                    } else {
                        shared.images.forget_failures().await;
                        let cur_id = current.id;
                        let new = self
                            .store
                            .writer()
                            .write(move |c| queries::new_attempt(c, cur_id, &namer))
                            .await?;
                        let note = format!("attempt {} queued", new.attempt);
                        let _ = self.events.send(EngineEvent::TrialProgress {
                            attempt_id: new.id,
                            status: new.status,
                        });
                        queue.push_back(new);
                        (true, note)
                    }
                }
                CommandKind::Cancel => match current.status {
                    TrialStatus::Done => (
                        false,
                        format!("attempt {} is already done", current.attempt),
                    ),
                    TrialStatus::Queued => {
                        queue.retain(|q| q.id != current.id);
                        let cur_id = current.id;
                        let row = self
                            .store
                            .writer()
                            .write(move |c| {
                                queries::finish_trial(
                                    c,
                                    cur_id,
                                    &TrialPatch {
                                        outcome: Some(Outcome::Cancelled),
                                        error: Some(
                                            "cancelled by the operator before it started".into(),
                                        ),
                                        finished_at: Some(crate::store::now_rfc3339()),
                                        ..Default::default()
                                    },
                                )?;
                                queries::get_trial(c, cur_id)
                            })
                            .await?;
                        let _ = self.events.send(EngineEvent::TrialDone {
                            row: Box::new(row.clone()),
                        });
                        (true, "cancelled before it started".into())
                    }
                    _ => match cancels.get(&current.id) {
                        Some(c) => {
                            c.cancel_by_operator();
                            (true, "cancelling".into())
                        }
                        None => (false, "the attempt is not run by this process".into()),
                    },
                },
            };
            let id = cmd.id;
            self.store
                .writer()
                .write(move |c| queries::close_command(c, id, ok, &note))
                .await?;
        }
        Ok(n)
    }
}

/// State shared by the trial tasks of one run.
struct Shared {
    engine: Engine,
    run: RunRow,
    tasks: HashMap<String, Arc<Task>>,
    conditions: HashMap<String, Condition>,
    jobs_dir: PathBuf,
    agent: Arc<dyn Agent>,
    images: Arc<ImageCache>,
    reaper: Arc<Reaper>,
    copy_logs: bool,
    extra_env: Vec<String>,
    binds: Vec<String>,
    settings_json: serde_json::Value,
    /// Provider-failure retries and backoff.
    retry: crate::config::HarnessSettings,
    checksums: Mutex<HashMap<String, String>>,
}

#[async_trait]
impl TrialReport for Shared {
    async fn update(&self, attempt_id: i64, patch: TrialPatch) {
        let status = patch.status;
        let r = self
            .engine
            .store
            .writer()
            .write(move |c| queries::patch_trial(c, attempt_id, &patch))
            .await;
        if let Err(e) = r {
            self.engine
                .notice("error", format!("recording trial progress: {e}"));
        }
        if let Some(status) = status {
            let _ = self
                .engine
                .events
                .send(EngineEvent::TrialProgress { attempt_id, status });
        }
    }
}

impl Shared {
    fn job_dir(&self, condition: &Condition) -> PathBuf {
        self.jobs_dir
            .join(jobdir::job_name(&self.run.name, &condition.slug()))
    }

    async fn checksum(&self, task: &Arc<Task>) -> String {
        if let Some(c) = self.checksums.lock().expect("lock").get(&task.id) {
            return c.clone();
        }
        let dir = task.dir.clone();
        let sum =
            tokio::task::spawn_blocking(move || jobdir::task_checksum(&dir).unwrap_or_default())
                .await
                .unwrap_or_default();
        self.checksums
            .lock()
            .expect("lock")
            .insert(task.id.clone(), sum.clone());
        sum
    }

    fn facts(&self, task: &Task, condition: &Condition, checksum: String) -> TrialFacts {
        let job_dir = self.job_dir(condition);
        let mut kwargs = BTreeMap::new();
        kwargs.insert("condition".into(), serde_json::json!(condition.key()));
        kwargs.insert("skillscope_settings".into(), self.settings_json.clone());
        TrialFacts {
            task_path: task.dir.clone(),
            task_checksum: checksum,
            agent_name: self.agent.name().to_string(),
            agent_version: self.agent.version().to_string(),
            model: self.run.model.clone(),
            job_id: jobdir::stable_uuid(&job_dir.display().to_string()),
            job_dir,
            cpus: task.config.environment.cpus,
            memory_mb: task.config.environment.memory_mb,
            kwargs,
        }
    }

    /// Runs one attempt and records it. Returns the next attempt to queue when a transient
    /// provider failure is retried. `Err` for store failures and for what stops the run (a full
    /// disk, a provider refusing the key or quota).
    async fn run_one(
        self: &Arc<Self>,
        row: TrialRow,
        host: Arc<DockerHost>,
        cancel: TrialCancel,
    ) -> Result<Option<TrialRow>, EngineError> {
        let store = self.engine.store.clone();
        let id = row.id;
        let (Some(task), Some(condition)) = (
            self.tasks.get(&row.task_id).cloned(),
            self.conditions.get(&row.condition).cloned(),
        ) else {
            let why = format!(
                "task {} or condition {} is not part of this run's request",
                row.task_id, row.condition
            );
            return store
                .writer()
                .write(move |c| {
                    queries::finish_trial(
                        c,
                        id,
                        &TrialPatch {
                            outcome: Some(Outcome::RuntimeError),
                            error: Some(why),
                            finished_at: Some(crate::store::now_rfc3339()),
                            ..Default::default()
                        },
                    )
                })
                .await
                .map(|_| None)
                .map_err(EngineError::Store);
        };
        let checksum = self.checksum(&task).await;
        let facts = self.facts(&task, &condition, checksum);
        let trial_dir = facts.job_dir.join(&row.trial_name);
        let _ = std::fs::create_dir_all(&trial_dir);
        let _ = jobdir::write_json_atomic(
            &trial_dir.join("config.json"),
            &jobdir::trial_config(&row, &facts),
        );
        let job = TrialJob {
            row,
            task,
            condition,
            run_name: self.run.name.clone(),
            run_uid: self.run.uid.clone(),
            trial_dir: trial_dir.clone(),
        };
        let env = TrialEnv {
            host,
            images: self.images.clone(),
            agent: self.agent.clone(),
            extra_env: self.extra_env.clone(),
            binds: self.binds.clone(),
            reaper: self.reaper.clone(),
            copy_logs: self.copy_logs,
        };
        let end = run_trial(&job, &env, self.as_ref(), &cancel).await;
        let patch = end.patch;
        let skill_uses = end.skill_uses;
        let outcome = patch.outcome;
        let namer = trial_namer(&self.run.name);
        let row = store
            .writer()
            .write(move |c| {
                queries::finish_trial(c, id, &patch)?;
                queries::set_skill_uses(c, id, &skill_uses)?;
                if outcome == Some(Outcome::Interrupted) {
                    queries::new_attempt(c, id, &namer)?;
                }
                queries::get_trial(c, id)
            })
            .await?;
        if let Err(e) = jobdir::write_json_atomic(
            &trial_dir.join("result.json"),
            &jobdir::trial_result(&row, &facts, &trial_dir),
        ) {
            self.engine.notice(
                "error",
                format!("writing {}: {e}", trial_dir.join("result.json").display()),
            );
        }
        let _ = self.engine.events.send(EngineEvent::TrialDone {
            row: Box::new(row.clone()),
        });
        if let Some(what) = end.disk_full {
            return Err(EngineError::DiskFull(what));
        }
        match end.provider_failure {
            Some(pf) => self.after_provider_failure(&row, pf, &cancel).await,
            None => Ok(None),
        }
    }

    /// A provider failure ended attempt `row`. Transient ones (rate limit, overload, server
    /// error) are retried after `provider_backoff_secs × 2^(n-1)` (at most 600 s) while this
    /// trial has had at most `provider_retries` of them; the wait holds the attempt's slot, so a
    /// rate-limited run slows down as a whole. A refused key or used-up quota queues the trial
    /// again and stops the run, since every trial would fail the same way.
    async fn after_provider_failure(
        &self,
        row: &TrialRow,
        pf: crate::harness::provider::ProviderFailure,
        cancel: &TrialCancel,
    ) -> Result<Option<TrialRow>, EngineError> {
        let store = self.engine.store.clone();
        let (run_id, key, id) = (row.run_id, row.key(), row.id);
        let failures = store
            .writer()
            .write(move |c| queries::trial_attempts(c, run_id, &key))
            .await?
            .iter()
            .filter(|a| a.outcome == Some(Outcome::ProviderError))
            .count() as u32;
        let namer = trial_namer(&self.run.name);
        let requeue = || async {
            store
                .writer()
                .write(move |c| queries::new_attempt(c, id, &namer))
                .await
        };
        if !pf.kind.is_transient() {
            requeue().await?;
            return Err(EngineError::ProviderRefused(format!(
                "{} on {}",
                pf.describe(),
                row.trial_name
            )));
        }
        let limit = self.retry.provider_retries;
        if failures > limit {
            self.engine.notice(
                "warn",
                format!(
                    "{}: {} — {limit} automatic retries used up; retry it by hand",
                    row.trial_name,
                    pf.describe()
                ),
            );
            return Ok(None);
        }
        let wait = self.retry.backoff(failures);
        self.engine.notice(
            "warn",
            format!(
                "{}: {} — retry {failures} of {limit} in {}s",
                row.trial_name,
                pf.describe(),
                wait.as_secs()
            ),
        );
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = cancel.token.cancelled() => {}
        }
        Ok(Some(requeue().await?))
    }

    /// Writes each job's `config.json` and `result.json` (Harbor's job files).
    async fn write_job_files(&self, at_end: bool) {
        let run_id = self.run.id;
        let Ok(trials) = self
            .engine
            .store
            .writer()
            .write(move |c| queries::current_trials(c, run_id))
            .await
        else {
            return;
        };
        let n_tasks = self.tasks.len() as u64;
        for condition in self.conditions.values() {
            let job_dir = self.job_dir(condition);
            let job_id = jobdir::stable_uuid(&job_dir.display().to_string());
            let of_cond: Vec<TrialRow> = trials
                .iter()
                .filter(|t| t.condition == condition.key())
                .cloned()
                .collect();
            let config = serde_json::json!({
                "job_name": jobdir::job_name(&self.run.name, &condition.slug()),
                "jobs_dir": self.jobs_dir,
                "n_attempts": 1,
                "timeout_multiplier": 1.0,
                "n_concurrent_trials": self.settings_json["concurrency"],
                "agents": [{"name": self.agent.name(), "model_name": self.run.model}],
                "tasks": self.tasks.values().map(|t| serde_json::json!({"path": t.dir})).collect::<Vec<_>>(),
            });
            let eval_key = match &self.run.model {
                Some(m) => format!("{}__{}__adhoc", self.agent.name(), m),
                None => format!("{}__adhoc", self.agent.name()),
            };
            let finished = at_end.then(crate::store::now_rfc3339);
            let result = jobdir::job_result(
                &job_id,
                self.run
                    .started_at
                    .as_deref()
                    .unwrap_or(&self.run.created_at),
                finished.as_deref(),
                &eval_key,
                n_tasks * self.run.n_trials as u64,
                &of_cond,
            );
            for (file, value) in [
                ("config.json", config),
                (
                    "result.json",
                    serde_json::to_value(&result).unwrap_or_default(),
                ),
            ] {
                if let Err(e) = jobdir::write_json_atomic(&job_dir.join(file), &value) {
                    self.engine.notice(
                        "error",
                        format!("writing {}: {e}", job_dir.join(file).display()),
                    );
                }
            }
        }
    }
}

fn check_same(existing: &RunRow, new: &NewRun) -> Result<(), StoreError> {
    let mut diffs = Vec::new();
    if existing.tasks_dir != new.tasks_dir {
        diffs.push(format!(
            "tasks {} (now {})",
            existing.tasks_dir, new.tasks_dir
        ));
    }
    if existing.agent != new.agent || existing.model != new.model {
        diffs.push(format!(
            "agent {} {:?} (now {} {:?})",
            existing.agent, existing.model, new.agent, new.model
        ));
    }
    if existing.conditions != new.conditions {
        diffs.push(format!(
            "conditions {:?} (now {:?})",
            existing.conditions, new.conditions
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

/// Trial names for a run (deterministic per attempt).
pub fn trial_namer(run: &str) -> impl Fn(&TrialKey, u32) -> String + Send + 'static {
    let run = run.to_string();
    move |k: &TrialKey, attempt: u32| {
        jobdir::trial_name(&k.task_id, &run, &k.condition, k.trial_index, attempt)
    }
}

/// Connects every configured Docker host (or the default one).
async fn connect_hosts(settings: &RunSettings) -> Result<Vec<Arc<DockerHost>>, RunnerError> {
    let slots = settings.concurrency.max(1);
    if settings.docker_hosts.is_empty() {
        return Ok(vec![Arc::new(DockerHost::connect(None, slots).await?)]);
    }
    let mut hosts = Vec::new();
    for h in &settings.docker_hosts {
        hosts.push(Arc::new(DockerHost::connect(Some(h), slots).await?));
    }
    Ok(hosts)
}

/// The host with the most free slots, if any slot is free.
fn pick_host(hosts: &[Arc<DockerHost>], in_use: &[usize]) -> Option<usize> {
    hosts
        .iter()
        .enumerate()
        .filter(|(i, h)| in_use[*i] < h.slots)
        .max_by_key(|(i, h)| h.slots - in_use[*i])
        .map(|(i, _)| i)
}

fn absolute(p: &std::path::Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}
