//! The engine: owns a run from start to end — takes the prepared run (its task set loaded once,
//! [`PreparedRun`]), registers the run, recovers what a
//! stopped process left, schedules trials over the Docker hosts that are up, applies operator
//! commands from the store, records every attempt, and ends honestly.
//!
//! Layout, after nextest's runner (dispatcher / executor / events):
//! - this file: the API — [`Engine`], [`RunRequest`], [`RunOutcome`], [`StopReason`],
//!   [`EngineError`], [`EngineEvent`];
//! - `register.rs`: registering (or resuming) a run and its warnings;
//! - `schedule.rs`: the scheduling decisions as a pure state machine fed events — the queue in
//!   stage order (trial index first), placement under each host's CPUs, memory and slots and the
//!   provider's adaptive limit, failover, faults in a row, retries, cancels, the wait for Docker,
//!   when the run stops — tested without Docker;
//! - `dispatch.rs`: the scheduler loop around it — the I/O: probes, starting attempts, the store's
//!   writes, the heartbeat, operator commands, sweeps, and the one clean stop path every way out
//!   goes through;
//! - `hosts.rs`: Docker hosts and their health (`up`, `down`, `draining`);
//! - `attempt.rs`: one attempt — running it, recording it, provider-failure retries;
//! - `stopping.rs`: the group-sequential design's decisions, pure — when a comparison reached a
//!   stage boundary, which conditions stop; `sequential.rs` carries them out in the store.
//!
//! The store is the seam: the engine is its only writer of results (through
//! [`RunLedger`](crate::store::RunLedger)); a dashboard (here or in another process) reads it and
//! writes commands. In one process the engine also sends [`EngineEvent`]s so a UI redraws at once.
//!
//! Faults are not verdicts: an attempt an infrastructure fault cuts off is recorded `interrupted`
//! and queued again (see [`crate::runner::fault`]). A run is `finished` only when every planned
//! trial has a verdict; otherwise it is `stopped` with its reason.

mod attempt;
mod dispatch;
pub mod hosts;
#[cfg(test)]
mod offline_runs;
mod prebuild;
mod prepared;
mod register;
mod schedule;
mod sequential;
mod stopping;

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::config::RunSettings;
use crate::domain::{Outcome, RunRow, TrialKey, TrialRow, TrialStatus};
use crate::runner::{Backend, RunnerError, agent_by_name};
use crate::skillsbench::env::{self, MissingEnvPolicy};
use crate::skillsbench::{Catalog, Condition};
use crate::store::{Store, StoreError};

pub use crate::store::STALE_AFTER_SECS;
pub use prepared::PreparedRun;

/// Errors that stop a run before or while it runs (trial failures are outcomes, not errors).
/// Every one of them still goes through the clean stop path: containers removed, attempts
/// re-queued, the run marked stopped with the error as its reason.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Task definitions, catalog or conditions.
    #[error(transparent)]
    Bench(#[from] crate::skillsbench::BenchError),
    /// The database.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Docker or the agent, before any trial ran.
    #[error(transparent)]
    Runner(#[from] RunnerError),
    /// The request contradicts a stored run.
    #[error("{0}")]
    Mismatch(String),
    /// The run asks what its backend cannot do (a mount, a harness, a compose task on
    /// Kubernetes): each thing named, before anything is spent.
    #[error("{0}")]
    Unsupported(String),
    /// Tasks of the run need environment values nobody set (and the run does not allow it):
    /// every task, variable and place named ([`crate::skillsbench::env::refusal`]).
    #[error("{0}")]
    MissingEnv(String),
    /// This machine's disk filled up; the run stopped with the affected attempts re-queued.
    #[error(
        "disk full, run stopped (finished trials are kept; free space and re-run to resume): {0}"
    )]
    DiskFull(String),
    /// The model provider refused the run (key or quota): every trial would fail the same way.
    #[error(
        "run stopped: {0} (finished trials are kept and this one is queued again; fix the key or quota and re-run to resume)"
    )]
    ProviderRefused(String),
    /// The tasks folder does not match the pinned task set (`--task-set`): every task that
    /// differs, is missing or is not in the set is named.
    #[error("{0}")]
    TaskSet(String),
    /// A task of the engine's own failed (a bug).
    #[error("internal error: {0}")]
    Internal(String),
}

/// A pinned task set and what to do when the tasks differ from it.
#[derive(Debug, Clone, Default)]
pub struct Pinning {
    /// The set (`--task-set`); `None`: no set is pinned.
    pub set: Option<crate::skillsbench::pinned::PinnedSet>,
    /// Run although tasks differ from the set or changed since the run began
    /// (`--allow-drift`): what differed is recorded with the run and in its events.
    pub allow_drift: bool,
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
    /// Hosts, concurrency, CA bundle, env, mounts, how long to wait for Docker.
    pub settings: RunSettings,
    /// Keep the engine alive after the last trial while a dashboard may still send retries:
    /// until this token fires (the dashboard closed or its terminal went away). `None`: stop
    /// after the last trial.
    pub stay_alive: Option<CancellationToken>,
    /// The command line that resumes this run, stored for operators (no secret values);
    /// `None` leaves what is stored.
    pub resume_command: Option<String>,
    /// The pinned task set the tasks folder is checked against before anything runs.
    pub pin: Pinning,
    /// The group-sequential design the run applies at its stage boundaries (issue 38): looks
    /// recorded in the store, conditions whose questions are answered stopped early. `None`:
    /// the fixed design.
    pub sequential: Option<crate::domain::sequential::SequentialPlan>,
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
        /// The finished ones' outcomes (what a display resuming the run counts from).
        finished: Vec<(crate::domain::TrialKey, Option<crate::domain::Outcome>)>,
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
    /// One step of an attempt took this long (what `skillscope bench runner` breaks a trial's
    /// time into).
    TrialStep {
        /// The attempt (`None`: a step after it, e.g. its container's removal).
        attempt_id: Option<i64>,
        /// Which step.
        step: crate::runner::Step,
        /// How long it took.
        took: std::time::Duration,
    },
    /// A message for the operator.
    Notice {
        /// `info`, `warn` or `error`.
        level: String,
        /// Text.
        message: String,
    },
    /// The run stopped (finished or not).
    Stopped {
        /// True when every planned trial has a verdict.
        finished: bool,
    },
}

/// Why a run that did not fail stopped before every planned trial had a verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum StopReason {
    /// The operator stopped it: Ctrl-C, SIGTERM, quitting the dashboard, `skillscope stop`.
    Operator,
    /// Every Docker host stayed unreachable for longer than the run waits for Docker.
    DockerUnavailable {
        /// Since when (RFC 3339).
        since: String,
        /// The last error.
        error: String,
    },
    /// Every trial was attempted but some have no verdict: cancelled by the operator, provider
    /// failures whose automatic retries ran out, or infrastructure faults that kept recurring on a
    /// host that answered.
    Unjudged {
        /// How many trials.
        n: usize,
        /// Counts by outcome (`2 provider-error, 1 cancelled`).
        detail: String,
    },
    /// No further trial fits the cost budget (`--max-cost`); resuming with a higher budget
    /// continues.
    Budget {
        /// Spent, USD.
        spent_usd: f64,
        /// The budget, USD.
        max_usd: f64,
    },
}

impl StopReason {
    /// A sentence for the store, `status` and the dashboard.
    pub fn describe(&self) -> String {
        match self {
            StopReason::Operator => "stopped by the operator".into(),
            StopReason::DockerUnavailable { since, error } => {
                format!("no Docker host answered since {since} (last error: {error})")
            }
            StopReason::Unjudged { n, detail } => {
                format!("{n} trial(s) left without a verdict ({detail}); retry them to finish")
            }
            StopReason::Budget { spent_usd, max_usd } => format!(
                "budget reached (${spent_usd:.2} spent of ${max_usd:.2}); resume with a higher --max-cost"
            ),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The run's final row.
    pub run: RunRow,
    /// True when every planned trial has a verdict, or the operator cancelled those without one.
    pub finished: bool,
    /// Why it stopped, when it did not finish.
    pub stop: Option<StopReason>,
    /// Trials of a finished run left cancelled by the operator (they count 0 in pass rates).
    pub cancelled: usize,
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
    crate::skillsbench::condition::sanitize_slug(&name).replace('/', "-")
}

/// Trial names for a run (deterministic per attempt).
pub fn trial_namer(run: &str) -> crate::store::ledger::TrialNamer {
    let run = run.to_string();
    std::sync::Arc::new(move |k: &TrialKey, attempt: u32| {
        crate::harbor::jobdir::trial_name(&k.task_id, &run, &k.condition, k.trial_index, attempt)
    })
}

/// The engine: a store and an event channel.
#[derive(Clone)]
pub struct Engine {
    store: Store,
    events: broadcast::Sender<EngineEvent>,
    /// Send [`EngineEvent::TrialStep`]s (off by default: only a benchmark reads them).
    steps: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Engine {
    /// An engine writing to `store`.
    pub fn new(store: Store) -> Engine {
        let (events, _) = broadcast::channel(4096);
        Engine {
            store,
            events,
            steps: Default::default(),
        }
    }

    /// From now on, tell subscribers how long each step of each attempt took
    /// ([`EngineEvent::TrialStep`]).
    pub fn report_steps(&self) {
        self.steps.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Sends that `step` of attempt `attempt_id` took `took`, when steps are reported.
    fn step(&self, attempt_id: Option<i64>, step: crate::runner::Step, took: std::time::Duration) {
        if self.steps.load(std::sync::atomic::Ordering::Relaxed) {
            self.send(EngineEvent::TrialStep {
                attempt_id,
                step,
                took,
            });
        }
    }

    /// Subscribes to events.
    pub fn subscribe(&self) -> broadcast::Receiver<EngineEvent> {
        self.events.subscribe()
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    fn send(&self, event: EngineEvent) {
        let _ = self.events.send(event);
    }

    fn notice(&self, level: &str, message: impl Into<String>) {
        self.send(EngineEvent::Notice {
            level: level.into(),
            message: message.into(),
        });
    }

    /// Runs (or resumes) a run until every trial has a verdict, `shutdown` fires, Docker stays
    /// away for longer than the run waits, or an error stops it. Every ending goes through one
    /// clean stop: running attempts interrupted and re-queued, containers (helpers too) removed,
    /// the run marked `finished` or `stopped` with its reason.
    ///
    /// # Errors
    /// [`EngineError`] for problems that prevent or stop the run (bad tasks folder, a run name
    /// taken by different settings or owned by a live process, a full disk, a refused provider
    /// key, database failures).
    pub async fn run(
        &self,
        run: PreparedRun,
        shutdown: CancellationToken,
    ) -> Result<RunOutcome, EngineError> {
        let backend = backend_of(&run.request.settings);
        self.run_on(run, backend, shutdown).await
    }

    /// [`Engine::run`] on `backend` (the fake one in offline tests).
    ///
    /// # Errors
    /// As [`Engine::run`].
    pub async fn run_on(
        &self,
        run: PreparedRun,
        backend: Arc<dyn Backend>,
        shutdown: CancellationToken,
    ) -> Result<RunOutcome, EngineError> {
        let result = self.run_inner(run, backend, shutdown).await;
        if let Err(e) = &result {
            self.notice("error", e.to_string());
            self.send(EngineEvent::Stopped { finished: false });
        }
        result
    }

    async fn run_inner(
        &self,
        run: PreparedRun,
        backend: Arc<dyn Backend>,
        shutdown: CancellationToken,
    ) -> Result<RunOutcome, EngineError> {
        let agent = agent_by_name(
            &run.request.agent,
            run.request.model.as_deref(),
            &run.request.settings.harness,
        )?;
        // Refused before anything is spent: tasks that could only score 0 for a missing key
        // (the preflight reported the same list: both ask the prepared run).
        if run.request.settings.missing_env == MissingEnvPolicy::RefuseRun {
            let missing = run.missing_env(agent.runs_solution());
            if !missing.is_empty() {
                return Err(EngineError::MissingEnv(env::refusal(&missing)));
            }
        }
        // The task set was loaded once, by whoever prepared the run (the preflight saw it too).
        let PreparedRun {
            request: req,
            tasks: taskset,
        } = run;
        // Pinned tasks checked and every task's digest computed, before anything is spent.
        let (taskset, pinned) = register::pin_tasks(&req, taskset).await?;
        for p in backend.places() {
            agent.check_host(&p.name, p.name.starts_with("unix://"))?;
        }
        // What a pod cannot do is refused before anything is spent, never done differently.
        if backend.kind() == crate::runner::backend::BackendKind::Kubernetes {
            let harness = agent.builtin_skills().is_some() || !agent.extra_hosts().is_empty();
            let refused = crate::runner::kubernetes::backend::unsupported(
                &req.settings.mounts,
                harness.then(|| agent.name()),
                &taskset.tasks,
            );
            if !refused.is_empty() {
                return Err(EngineError::Unsupported(format!(
                    "refused on the Kubernetes backend: {}",
                    refused.join("; ")
                )));
            }
        }
        let name = req.name.clone().unwrap_or_else(|| default_run_name(&req));
        let jobs_dir = absolute(&req.jobs_dir);
        let ledger = self
            .register(&req, &name, &taskset, &jobs_dir, pinned)
            .await?;
        let with = dispatch::RunWith {
            taskset,
            agent,
            jobs_dir,
            backend,
        };
        let end = dispatch::drive(self, &req, &ledger, with, shutdown).await;
        // A condition stopped early by the run's sequential design planned the trials per task it
        // keeps; its trials beyond them (running at the stop) are kept but outside the plan.
        let kept: std::collections::HashMap<String, u32> = match &end.error {
            Some(EngineError::Store(_)) => Default::default(),
            _ => ledger
                .sequential()
                .await
                .ok()
                .flatten()
                .map(|r| {
                    r.stops
                        .into_iter()
                        .map(|s| (s.condition, s.trials))
                        .collect()
                })
                .unwrap_or_default(),
        };
        let n_trials = ledger.run().n_trials;
        let plan_of = |c: &str| kept.get(c).copied().unwrap_or(n_trials);
        let judged = match &end.error {
            Some(EngineError::Store(_)) => None,
            _ => ledger.current().await.ok().map(|rows| {
                rows.into_iter()
                    .filter(|t| t.trial_index <= plan_of(&t.condition))
                    .collect::<Vec<_>>()
            }),
        };
        let planned = ledger
            .run()
            .conditions
            .iter()
            .map(|c| plan_of(c) as usize)
            .sum::<usize>()
            * end.n_tasks;
        let unjudged: Vec<Outcome> = judged
            .iter()
            .flatten()
            .filter(|t| {
                !(t.status == TrialStatus::Done && t.outcome.is_some_and(Outcome::is_verdict))
            })
            .map(|t| t.outcome.unwrap_or(Outcome::Interrupted))
            .collect();
        let all_planned = judged.as_ref().is_some_and(|j| j.len() == planned);
        // Trials the operator cancelled are a decision, not work left: a run whose only trials
        // without a verdict are cancelled ones ends `finished with n cancelled` (they count 0;
        // `skillscope retry RUN --cancelled` and the same command run them).
        let cancelled = unjudged
            .iter()
            .filter(|o| **o == Outcome::Cancelled)
            .count();
        let finished =
            end.error.is_none() && end.stop.is_none() && all_planned && unjudged.len() == cancelled;
        let stop = match (&end.error, finished) {
            (Some(_), _) | (None, true) => None,
            (None, false) => Some(end.stop.clone().unwrap_or_else(|| StopReason::Unjudged {
                n: unjudged.len(),
                detail: count_outcomes(&unjudged),
            })),
        };
        let reason = match (&end.error, &stop) {
            (Some(e), _) => Some(e.to_string()),
            (None, Some(s)) => Some(s.describe()),
            (None, None) if cancelled > 0 => Some(finished_note(cancelled)),
            (None, None) => None,
        };
        let released = ledger.release(finished, reason).await;
        if let Some(e) = end.error {
            return Err(e);
        }
        let run = released?;
        self.send(EngineEvent::Stopped { finished });
        Ok(RunOutcome {
            run,
            finished,
            stop,
            cancelled: if finished { cancelled } else { 0 },
        })
    }
}

/// The backend `settings` name: Docker daemons (`--docker-host`, else the default one),
/// `concurrency` trials each; or, with `--backend kubernetes`, one namespace of a cluster with
/// `concurrency` pods at once. Images are built on Docker with the run's CA bundle either way.
pub fn backend_of(settings: &crate::config::RunSettings) -> Arc<dyn Backend> {
    let images = crate::runner::docker::image::ImageSettings {
        ca_bundle: settings.ca_bundle.clone(),
        work_dir: None,
    };
    let b = &settings.backend;
    match b.kind {
        crate::runner::backend::BackendKind::Kubernetes => {
            Arc::new(crate::runner::kubernetes::KubernetesBackend::new(
                crate::runner::kubernetes::ClusterSpec {
                    kubeconfig: b.kubeconfig.clone(),
                    context: b.context.clone(),
                    namespace: b.namespace.clone(),
                    registry: b.registry.clone(),
                },
                settings.concurrency,
                b.start_timeout_secs
                    .map(std::time::Duration::from_secs)
                    .unwrap_or(crate::runner::kubernetes::backend::DEFAULT_START_DEADLINE),
                images,
            ))
        }
        _ => Arc::new(crate::runner::docker::DockerBackend::new(
            &settings.docker_hosts,
            settings.concurrency,
            images,
        )),
    }
}

/// The note of a run that finished with `n` trials the operator cancelled: `finished with 2
/// cancelled`.
pub fn finished_note(n: usize) -> String {
    format!("finished with {n} cancelled")
}

/// `2 provider-error, 1 cancelled`.
fn count_outcomes(outcomes: &[Outcome]) -> String {
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for o in outcomes {
        *counts.entry(o.as_str()).or_default() += 1;
    }
    counts
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `p` made absolute against the working directory, its `.` components and doubled separators
/// dropped (`./jobs` → `/work/jobs`, never `/work/./jobs`); `..` is kept, links are not resolved.
fn absolute(p: &std::path::Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.components().collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn absolute_paths_carry_no_dot_components() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            super::absolute(std::path::Path::new("./jobs")),
            cwd.join("jobs")
        );
        assert_eq!(
            super::absolute(std::path::Path::new("/a/./b//c")),
            std::path::PathBuf::from("/a/b/c")
        );
    }
}
