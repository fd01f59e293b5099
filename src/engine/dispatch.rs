//! The dispatcher: the scheduling loop of a run and its one clean stop — the I/O around the
//! schedule's decisions.
//!
//! What to do is decided by the pure state machine in `schedule.rs` (placement under CPUs,
//! memory, slots and the provider's limit; the stage order of the queue; failover; retries;
//! cancels; the wait for Docker). This file feeds it what happens and carries out its
//! decisions: it probes hosts on their schedule and when an attempt meets a fault, starts
//! attempts on Docker hosts, queues trials again through the store, sweeps what a stopped
//! process left, refreshes the heartbeat and applies operator commands (retry, cancel, stop)
//! from the store. Every way out — the last trial, Ctrl-C or SIGTERM, a stop asked from another
//! process, Docker gone for too long, a full disk, a database error — ends in
//! [`Dispatcher::clean_stop`]: running attempts interrupted and re-queued, the run's containers
//! (helpers too) removed, the Harbor job files written.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::attempt::{AttemptEnd, Attempts};
use super::hosts::{Health, HostPool, HostSlot, Probe, Transition};
use super::prebuild::Prebuilds;
use super::schedule::{Capacity, Decision, Ended, Event, HostState, Need, Next, Schedule, Wait};
use super::sequential::Sequential;
use super::{Engine, EngineError, EngineEvent, RunRequest, StopReason};
use crate::domain::{TrialRow, TrialStatus};
use crate::runner::backend::{Backend, Sweep};
use crate::runner::{Agent, Fault, TrialCancel};
use crate::skillsbench::TaskSet;
use crate::store::{CommandKind, RunLedger};

/// How often pending commands and stop requests are looked for.
const COMMAND_POLL: Duration = Duration::from_millis(300);
/// How often the owner refreshes its heartbeat (and each host's stored state).
const HEARTBEAT: Duration = Duration::from_secs(5);
/// How often host probes, drains and the wait for Docker are looked at.
const HEALTH_TICK: Duration = Duration::from_secs(1);
/// A helper container this old was left by a killed process (a leak check ends within its 120 s
/// exec budget; filling a kit volume, a few hundred MB through the API, within minutes).
const HELPER_STALE: Duration = Duration::from_secs(3600);
/// Longest wait for one cleanup call against a host at the end of a run.
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(30);

/// What a run is driven with, once registered.
pub(super) struct RunWith {
    /// Its tasks.
    pub taskset: TaskSet,
    /// Its agent.
    pub agent: Arc<dyn Agent>,
    /// Its jobs folder (absolute).
    pub jobs_dir: PathBuf,
    /// Where its trials run.
    pub backend: Arc<dyn Backend>,
}

/// How [`drive`] ended.
pub(super) struct DriveEnd {
    /// The error that stopped the run, if one did.
    pub error: Option<EngineError>,
    /// Why the run stopped early without an error, if it did.
    pub stop: Option<StopReason>,
    /// Tasks in the run.
    pub n_tasks: usize,
}

/// Runs the scheduling loop of `ledger`'s run until it ends, then stops cleanly.
pub(super) async fn drive(
    engine: &Engine,
    req: &RunRequest,
    ledger: &RunLedger,
    with: RunWith,
    shutdown: CancellationToken,
) -> DriveEnd {
    let n_tasks = with.taskset.tasks.len();
    let RunWith {
        taskset,
        agent,
        jobs_dir,
        backend,
    } = with;
    let mut d = Dispatcher::new(engine, req, ledger, taskset, agent, jobs_dir, backend);
    let result = d.run(shutdown).await;
    d.clean_stop().await;
    match result {
        Ok(stop) => DriveEnd {
            error: None,
            stop,
            n_tasks,
        },
        Err(e) => DriveEnd {
            error: Some(e),
            stop: None,
            n_tasks,
        },
    }
}

/// What a trial task returns: its attempt's id, its host, how it ended.
type TrialTask = (i64, usize, Result<AttemptEnd, EngineError>);
type Running = JoinSet<TrialTask>;

struct Dispatcher {
    engine: Engine,
    /// Where trials run.
    backend: Arc<dyn Backend>,
    ledger: RunLedger,
    attempts: Arc<Attempts>,
    pool: HostPool,
    /// The decisions: queue, placement, provider limit, faults, stop (see `schedule.rs`).
    sched: Schedule,
    running: Running,
    /// The tasks in `running`: tokio's id → (attempt id, host), so a task that panics still
    /// frees what its attempt reserved.
    tasks: HashMap<tokio::task::Id, (i64, usize)>,
    /// Attempt id → its cancel handle.
    cancels: HashMap<i64, TrialCancel>,
    probes: JoinSet<Probe>,
    stop_trials: CancellationToken,
    fatal: Option<EngineError>,
    /// The reason stored while trials wait for Docker (kept current in the store).
    waiting: Option<String>,
    docker_wait: Duration,
    /// Stay alive after the last trial until this fires (a dashboard is open).
    stay_alive: Option<CancellationToken>,
    task_ids: Vec<String>,
    /// The group-sequential design the request asks for.
    sequential_plan: Option<crate::domain::sequential::SequentialPlan>,
    /// The cost budget, USD.
    max_cost: Option<f64>,
    /// Costs of finished attempts per condition, USD (priced ones).
    finished_costs: BTreeMap<String, Vec<f64>>,
    /// The model provider whose limit on concurrent sessions the schedule adapts, if any.
    provider: Option<String>,
    /// Images built ahead of the queue.
    prebuilds: Prebuilds,
    /// The group-sequential design and its state, when the run applies one.
    sequential: Option<Sequential>,
}

/// Now, for the schedule (which reads no clock of its own).
fn now() -> std::time::Instant {
    Instant::now().into_std()
}

/// What the schedule knows of host `h`: up with its CPUs and memory once it answers, down since
/// it stopped answering, or draining.
fn host_state(h: &HostSlot) -> HostState {
    match (&h.health, &h.conn) {
        (Health::Up { .. }, Some(c)) => HostState::Up(Capacity {
            cpus: c.capacity().cpus as f64,
            memory_mb: (c.capacity().memory_bytes.max(0) as u64) / (1024 * 1024),
        }),
        (Health::Down { at, .. }, _) => HostState::Down {
            since: at.into_std(),
        },
        // Up without a connection does not happen (a host is up once it answered); no trials.
        (Health::Up { .. } | Health::Draining { .. }, _) => HostState::Draining,
    }
}

impl Dispatcher {
    fn new(
        engine: &Engine,
        req: &RunRequest,
        ledger: &RunLedger,
        taskset: TaskSet,
        agent: Arc<dyn Agent>,
        jobs_dir: PathBuf,
        backend: Arc<dyn Backend>,
    ) -> Dispatcher {
        let run = ledger.run().clone();
        let task_ids = taskset.ids();
        let needs: HashMap<String, Need> = taskset
            .tasks
            .iter()
            .map(|t| (t.id.clone(), Need::of(t)))
            .collect();
        let provider = agent.provider().map(str::to_string);
        let pool = HostPool::new(backend.clone(), &run.uid);
        let capacity: usize = pool.hosts.iter().map(|h| h.slots).sum();
        let slots: Vec<usize> = pool.hosts.iter().map(|h| h.slots).collect();
        let sched = Schedule::new(&slots, needs, provider.as_ref().map(|_| capacity), now());
        let attempts = Arc::new(Attempts::new(engine, req, ledger, taskset, agent, jobs_dir));
        Dispatcher {
            engine: engine.clone(),
            backend,
            ledger: ledger.clone(),
            attempts,
            pool,
            sched,
            running: JoinSet::new(),
            tasks: HashMap::new(),
            cancels: HashMap::new(),
            probes: JoinSet::new(),
            stop_trials: CancellationToken::new(),
            fatal: None,
            waiting: None,
            docker_wait: req.settings.docker_wait(),
            stay_alive: req.stay_alive.clone(),
            task_ids,
            sequential_plan: req.sequential.clone(),
            max_cost: req.settings.max_cost_usd,
            finished_costs: BTreeMap::new(),
            provider,
            prebuilds: Prebuilds::default(),
            sequential: None,
        }
    }

    /// An event for the operator: sent to UIs in this process and stored in the run's log.
    async fn event(&self, level: &'static str, message: String) -> Result<(), EngineError> {
        self.engine.notice(level, message.clone());
        self.ledger.event(level, message).await?;
        Ok(())
    }

    /// The loop. `Ok(Some(reason))` when it stopped early without an error.
    async fn run(
        &mut self,
        shutdown: CancellationToken,
    ) -> Result<Option<StopReason>, EngineError> {
        self.start().await?;
        let mut poll = tokio::time::interval(COMMAND_POLL);
        let mut beat = tokio::time::interval(HEARTBEAT);
        let mut health = tokio::time::interval(HEALTH_TICK);
        for t in [&mut poll, &mut beat, &mut health] {
            t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        }
        loop {
            self.place().await?;
            if !self.sched.is_stopping() {
                let host = self
                    .sched
                    .least_busy()
                    .and_then(|i| self.pool.hosts[i].conn.clone());
                self.prebuilds
                    .top_up(self.sched.queue(), &self.attempts, host);
            }
            self.watch_wait().await?;
            let keep_alive = self.stay_alive.as_ref().is_some_and(|t| !t.is_cancelled());
            if self.sched.next(keep_alive) == Next::BudgetSpent {
                let spent = self.spent();
                self.event(
                    "warn",
                    format!(
                        "budget reached: ${spent:.2} spent of ${:.2}; the run stops (resume with a higher --max-cost to continue)",
                        self.max_cost.unwrap_or_default()
                    ),
                )
                .await?;
                self.begin_stop(StopReason::Budget {
                    spent_usd: spent,
                    max_usd: self.max_cost.unwrap_or_default(),
                });
            }
            if self.sched.next(keep_alive) == Next::Finish {
                // Commands written while the last trials ran still count.
                if !self.sched.is_stopping() && self.handle_commands().await? > 0 {
                    continue;
                }
                break;
            }
            tokio::select! {
                Some(joined) = self.running.join_next_with_id(), if !self.running.is_empty() => {
                    match self.joined(joined) {
                        Ok((id, h, r)) => self.on_attempt_end(id, h, r).await,
                        Err(e) => self.fail(EngineError::Internal(format!("a trial task failed: {e}"))),
                    }
                }
                Some(Ok(probe)) = self.probes.join_next(), if !self.probes.is_empty() => {
                    self.on_probe(probe).await?;
                }
                // A build ahead finished: the next one can start.
                _ = self.prebuilds.next() => {}
                _ = poll.tick(), if !self.sched.is_stopping() => {
                    self.handle_commands().await?;
                }
                _ = health.tick() => {
                    self.health_tick().await?;
                }
                _ = beat.tick() => {
                    match self.ledger.heartbeat(std::process::id()).await {
                        Ok(true) if !self.sched.is_stopping() => {
                            self.event("info", "stop asked for by the operator (skillscope stop); stopping".into()).await?;
                            self.begin_stop(StopReason::Operator);
                        }
                        Ok(_) => {}
                        Err(e) => self.fail(EngineError::Store(e)),
                    }
                    for i in 0..self.pool.hosts.len() {
                        if let Err(e) = self.ledger.host(self.host_row(i)).await {
                            self.fail(EngineError::Store(e));
                        }
                    }
                }
                _ = shutdown.cancelled(), if !self.sched.is_stopping() => {
                    self.engine.notice("info", "stopping: cancelling running trials");
                    self.begin_stop(StopReason::Operator);
                }
            }
        }
        match self.fatal.take() {
            Some(e) => Err(e),
            None => Ok(self.sched.take_stop()),
        }
    }

    /// Probes every host once, sweeps what a stopped process left, re-queues its attempts and
    /// plans the trials.
    async fn start(&mut self) -> Result<(), EngineError> {
        let probes: Vec<_> = (0..self.pool.hosts.len())
            .map(|i| self.pool.probe(i))
            .collect();
        for probe in futures_util::future::join_all(probes).await {
            let i = probe.index;
            self.pool.hosts[i].probing = false;
            let transition = self.pool.apply(probe);
            let decisions = self.sync_host(i);
            match transition {
                Some(Transition::CameUp) => {
                    for d in decisions {
                        if let Decision::Sweep { host, keep } = d {
                            self.sweep(host, &keep, true).await?;
                        }
                    }
                }
                _ => {
                    let row = self.host_row(i);
                    self.event(
                        "warn",
                        format!(
                            "Docker host {} is down ({}); its trials go to the others, and it is checked again",
                            row.host,
                            row.last_error.unwrap_or_default()
                        ),
                    )
                    .await?;
                }
            }
            self.ledger.host(self.host_row(i)).await?;
        }
        let stale = self.ledger.requeue_unfinished().await?;
        if !stale.is_empty() {
            self.event(
                "info",
                format!(
                    "re-queued {} left unfinished by a stopped process or an infrastructure fault",
                    crate::format::count(stale.len(), "trial", "trials")
                ),
            )
            .await?;
        }
        self.ledger.plan(self.task_ids.clone()).await?;
        self.ledger.budget(self.max_cost).await?;
        self.ledger
            .provider_limit(self.sched.provider_limit().map(|l| l as u32))
            .await?;
        for a in self.ledger.all_attempts().await? {
            if a.status == TrialStatus::Done
                && let Some(c) = a.cost_usd
            {
                self.finished_costs.entry(a.condition).or_default().push(c);
            }
        }
        let current = self.ledger.current().await?;
        self.engine.send(EngineEvent::Started {
            run_id: self.ledger.run().id,
            total: current.len(),
            done: current
                .iter()
                .filter(|t| t.status == TrialStatus::Done)
                .count(),
            finished: current
                .iter()
                .filter(|t| t.status == TrialStatus::Done)
                .map(|t| (t.key(), t.outcome))
                .collect(),
        });
        self.attempts.write_job_files(false).await;
        self.start_sequential().await?;
        // The schedule puts them in stage order, whatever order the store gives.
        for row in self.ledger.queued().await? {
            for d in self.sched.on(Event::Queued(row), now()) {
                self.act(d).await?;
            }
        }
        // Boundaries a stopped process reached but did not look at.
        self.look().await
    }

    /// Sets up the run's group-sequential design ([`super::sequential`]) and tells the schedule
    /// which conditions a stopped process already stopped.
    async fn start_sequential(&mut self) -> Result<(), EngineError> {
        let Some(plan) = self.sequential_plan.clone() else {
            return Ok(());
        };
        let seq = Sequential::start(plan, &self.ledger).await?;
        for (condition, keep) in seq.stopped() {
            for d in self.sched.on(Event::EarlyStop { condition, keep }, now()) {
                self.act(d).await?;
            }
        }
        self.sequential = Some(seq);
        Ok(())
    }

    /// Takes the looks due at stage boundaries ([`super::sequential`]) and stops the conditions
    /// whose questions are answered.
    async fn look(&mut self) -> Result<(), EngineError> {
        let Some(seq) = self.sequential.as_mut() else {
            return Ok(());
        };
        let looked = seq
            .look(&self.ledger, &self.task_ids, &self.finished_costs)
            .await?;
        for message in looked.events {
            self.event("info", message).await?;
        }
        for (condition, keep) in looked.stops {
            for d in self.sched.on(Event::EarlyStop { condition, keep }, now()) {
                self.act(d).await?;
            }
        }
        Ok(())
    }

    /// Tells the schedule host `i`'s state; returns what it decided (a sweep when the host
    /// answers again).
    fn sync_host(&mut self, i: usize) -> Vec<Decision> {
        let state = host_state(&self.pool.hosts[i]);
        self.sched.on(Event::Host { host: i, state }, now())
    }

    /// The row stored for host `i`.
    fn host_row(&self, i: usize) -> crate::store::HostRow {
        self.pool.row(i, self.sched.in_use(i))
    }

    /// Carries out a decision that needs nothing of the event that led to it.
    async fn act(&mut self, d: Decision) -> Result<(), EngineError> {
        match d {
            Decision::Start { row, host } => self.start_attempt(*row, host),
            Decision::BudgetReached => {
                self.engine.notice(
                    "warn",
                    format!(
                        "budget: ${:.2} spent and the running trials' projected costs leave no room for another trial within ${:.2}; no new trials start",
                        self.spent(),
                        self.max_cost.unwrap_or_default()
                    ),
                );
            }
            Decision::Sweep { host, keep } => self.sweep(host, &keep, false).await?,
            Decision::Interrupt { id, host } => {
                let h = &self.pool.hosts[host];
                let error = match &h.health {
                    Health::Down { error, .. } => error.as_str(),
                    _ => "",
                };
                if let Some(cancel) = self.cancels.get(&id)
                    && !cancel.token.is_cancelled()
                {
                    cancel.cancel_for_fault(
                        Fault::DaemonUnreachable,
                        &format!("host {} is down: {error}", h.name),
                    );
                }
            }
            Decision::ProviderLimit { old, new, why } => {
                let name = self.provider.clone().unwrap_or_default();
                self.event(
                    "info",
                    format!(
                        "provider limit ({name}): {old} → {new} concurrent agent sessions ({why})"
                    ),
                )
                .await?;
                self.ledger.provider_limit(Some(new as u32)).await?;
            }
            Decision::StopAll => {
                self.stop_trials.cancel();
                self.prebuilds.stop();
            }
            Decision::NotRun { condition, ids } => {
                for id in ids {
                    self.ledger.not_run(condition.clone(), id).await?;
                }
            }
            d @ (Decision::Requeue { .. }
            | Decision::GiveUp { .. }
            | Decision::CancelQueued { .. }
            | Decision::CancelRunning { .. }
            | Decision::Refuse(_)) => {
                return Err(EngineError::Internal(format!(
                    "the schedule decided {d:?} out of its context"
                )));
            }
        }
        Ok(())
    }

    /// Removes this run's environments on host `i` but those of attempts `keep` (all of them
    /// at the start of a run), and, at the start, helpers a killed process left on it.
    async fn sweep(&mut self, i: usize, keep: &[i64], at_start: bool) -> Result<(), EngineError> {
        let Some(host) = self.pool.hosts[i].conn.clone() else {
            return Ok(());
        };
        let uid = self.ledger.run().uid.clone();
        let run = Sweep::Run {
            uid,
            keep: keep.to_vec(),
        };
        let mut n = host.sweep(&run).await.unwrap_or(0);
        if at_start {
            // Helpers of any run this old were left by a killed process. Best effort: a failed
            // sweep costs only disk.
            n += host
                .sweep(&Sweep::StaleHelpers(HELPER_STALE))
                .await
                .unwrap_or(0);
        }
        if n > 0 {
            self.event(
                "info",
                format!("removed {n} leftover environments on {}", host.name()),
            )
            .await?;
        }
        Ok(())
    }

    /// What the run has cost so far, USD: finished attempts plus what running ones spent.
    fn spent(&self) -> f64 {
        let running: f64 = self
            .attempts
            .running
            .lock()
            .expect("lock")
            .values()
            .map(|r| r.cost_usd)
            .sum();
        self.finished_costs.values().flatten().sum::<f64>() + running
    }

    /// Starts queued attempts where the schedule places them, within the cost budget.
    async fn place(&mut self) -> Result<(), EngineError> {
        let (max, finished, attempts) = (self.max_cost, &self.finished_costs, &self.attempts);
        let mut budget = |row: &TrialRow| {
            max.is_none_or(|max| {
                crate::analysis::spend::allows(&costs(finished, attempts), &row.condition, max)
            })
        };
        for d in self.sched.place(&mut budget) {
            self.act(d).await?;
        }
        Ok(())
    }

    /// Runs attempt `row` on host `h`, where the schedule reserved its place.
    fn start_attempt(&mut self, row: TrialRow, h: usize) {
        let Some(host) = self.pool.hosts[h].conn.clone() else {
            // The schedule places trials only on hosts that answered; never here. The attempt
            // stays queued in the store for a resume.
            let id = row.id;
            self.sched.on(
                Event::Ended {
                    id,
                    how: Ended::Failed,
                },
                now(),
            );
            return self.fail(EngineError::Internal(format!(
                "attempt {id} placed on host {} before it answered",
                self.pool.hosts[h].name
            )));
        };
        let cancel = TrialCancel::child_of(&self.stop_trials);
        self.cancels.insert(row.id, cancel.clone());
        let attempts = self.attempts.clone();
        let id = row.id;
        let task = self.running.spawn(async move {
            let r = attempts.run_one(row, host, cancel).await;
            (id, h, r)
        });
        self.tasks.insert(task.id(), (id, h));
    }

    /// Stops placing attempts, interrupts the running ones and empties the queue.
    fn begin_stop(&mut self, reason: StopReason) {
        self.stop(Some(reason));
    }

    /// Records a fatal error (the first one wins) and stops.
    fn fail(&mut self, e: EngineError) {
        self.fatal.get_or_insert(e);
        self.stop(None);
    }

    fn stop(&mut self, reason: Option<StopReason>) {
        for d in self.sched.on(Event::Stop(reason), now()) {
            if d == Decision::StopAll {
                self.stop_trials.cancel();
                self.prebuilds.stop();
            }
        }
    }

    /// A trial task joined: its attempt's id, host and end; or, when the task itself failed (a
    /// panic), what it reserved is freed and the error returned.
    fn joined(
        &mut self,
        joined: Result<(tokio::task::Id, TrialTask), tokio::task::JoinError>,
    ) -> Result<TrialTask, tokio::task::JoinError> {
        match joined {
            Ok((task, end)) => {
                self.tasks.remove(&task);
                Ok(end)
            }
            Err(e) => {
                if let Some((id, _)) = self.tasks.remove(&e.id()) {
                    self.cancels.remove(&id);
                    self.sched.on(
                        Event::Ended {
                            id,
                            how: Ended::Failed,
                        },
                        now(),
                    );
                }
                Err(e)
            }
        }
    }

    async fn on_attempt_end(&mut self, id: i64, h: usize, r: Result<AttemptEnd, EngineError>) {
        self.cancels.remove(&id);
        let end = match r {
            Ok(end) => end,
            Err(e) => {
                self.sched.on(
                    Event::Ended {
                        id,
                        how: Ended::Failed,
                    },
                    now(),
                );
                // The attempt was recorded as interrupted: queue the trial again, for the resume
                // (best effort: with a full disk the store may not take it; a resume re-queues
                // interrupted trials anyway).
                if matches!(e, EngineError::DiskFull(_)) {
                    let _ = self.ledger.requeue(id).await;
                }
                return self.fail(e);
            }
        };
        if let Err(e) = self.after_attempt(id, h, end).await {
            self.fail(e);
        }
    }

    async fn after_attempt(
        &mut self,
        id: i64,
        h: usize,
        end: AttemptEnd,
    ) -> Result<(), EngineError> {
        if let Some(c) = end.row.cost_usd {
            self.finished_costs
                .entry(end.row.condition.clone())
                .or_default()
                .push(c);
        }
        if !end.interrupted {
            self.pool.healthy_end(h);
            let how = Ended::Judged {
                provider: end.provider,
                retry: end.retry.map(Box::new),
            };
            for d in self.sched.on(Event::Ended { id, how }, now()) {
                self.act(d).await?;
            }
            return self.look().await;
        }
        let host = self.pool.hosts[h].name.clone();
        if let Some(fault) = end.fault {
            if fault.suspects_host() || !end.host_answered {
                self.pool.suspect(h);
            }
            if end.drain_host
                && self
                    .pool
                    .drain(h, fault, end.row.error.as_deref().unwrap_or(""))
            {
                self.sync_host(h);
                self.event(
                    "warn",
                    format!(
                        "Docker host {host} is draining: {} (no new trials for a while)",
                        fault.describe()
                    ),
                )
                .await?;
                self.ledger.host(self.host_row(h)).await?;
            }
        }
        let how = Ended::Interrupted {
            fault: end.fault,
            host_answered: end.host_answered,
        };
        for d in self.sched.on(Event::Ended { id, how }, now()) {
            match d {
                Decision::GiveUp { faults, .. } => {
                    self.event(
                        "warn",
                        format!(
                            "{}: {faults} infrastructure faults in a row on hosts that kept answering (last: {}); \
                             left without a verdict — retry it, or resume the run, once the cause is fixed",
                            end.row.trial_name,
                            end.row.error.as_deref().unwrap_or("?")
                        ),
                    )
                    .await?;
                }
                Decision::Requeue { id } => {
                    let next = self.ledger.requeue(id).await?;
                    if let Some(fault) = end.fault {
                        self.event(
                            "warn",
                            format!(
                                "{} interrupted on {host}: {} — queued again as attempt {}",
                                end.row.trial_name,
                                fault.describe(),
                                next.attempt
                            ),
                        )
                        .await?;
                    }
                    self.engine.send(EngineEvent::TrialProgress {
                        attempt_id: next.id,
                        status: next.status,
                    });
                    // In its stage's place, ahead of later stages (ignored once stopping; not
                    // run when its condition stopped early before its trial index).
                    for d in self.sched.on(Event::Queued(next), now()) {
                        self.act(d).await?;
                    }
                }
                d => self.act(d).await?,
            }
        }
        Ok(())
    }

    async fn on_probe(&mut self, probe: Probe) -> Result<(), EngineError> {
        let i = probe.index;
        let transition = self.pool.apply(probe);
        let decisions = self.sync_host(i);
        match transition {
            Some(Transition::CameUp) => {
                let name = self.pool.hosts[i].name.clone();
                self.event("info", format!("Docker host {name} is up"))
                    .await?;
                for d in decisions {
                    self.act(d).await?;
                }
            }
            Some(Transition::WentDown(error)) => {
                let name = self.pool.hosts[i].name.clone();
                self.event(
                    "warn",
                    format!(
                        "Docker host {name} is down: {error}; its trials are queued again for the others"
                    ),
                )
                .await?;
            }
            None => return Ok(()),
        }
        self.ledger.host(self.host_row(i)).await?;
        Ok(())
    }

    /// Starts due probes, ends drains whose time is up, and interrupts attempts on hosts down
    /// for longer than the schedule's grace.
    async fn health_tick(&mut self) -> Result<(), EngineError> {
        let due = self.pool.due(Instant::now());
        for i in 0..self.pool.hosts.len() {
            for d in self.sync_host(i) {
                self.act(d).await?;
            }
        }
        for i in due {
            self.probes.spawn(self.pool.probe(i));
        }
        for d in self.sched.on(Event::Tick, now()) {
            self.act(d).await?;
        }
        Ok(())
    }

    /// Records the start and end of a wait for Docker (no host up while trials wait), and stops
    /// the run when it lasts longer than the run's `docker_wait`.
    async fn watch_wait(&mut self) -> Result<(), EngineError> {
        let wait = self.sched.wait_for_docker(now(), self.docker_wait);
        let budget = crate::format::wait(self.docker_wait);
        let (since, error) = self.pool.unavailable().unwrap_or_default();
        match wait {
            Wait::Began => {
                self.event(
                    "warn",
                    format!("waiting for Docker: no host is up ({error}); waiting up to {budget}"),
                )
                .await?;
                self.ledger.waiting(Some((since, error.clone()))).await?;
                self.waiting = Some(error);
            }
            Wait::TooLong => {
                self.waiting = None;
                self.event(
                    "error",
                    format!(
                        "no Docker host answered for {budget}; stopping (re-run the same command to resume)"
                    ),
                )
                .await?;
                self.ledger.waiting(None).await?;
                self.begin_stop(StopReason::DockerUnavailable { since, error });
            }
            Wait::Waiting => {
                // Keep the stored reason current.
                if self.waiting.as_ref() != Some(&error) {
                    self.ledger.waiting(Some((since, error.clone()))).await?;
                }
                self.waiting = Some(error);
            }
            Wait::Over => {
                self.waiting = None;
                self.ledger.waiting(None).await?;
                if !self.sched.is_stopping() {
                    self.event("info", "Docker is back; trials continue".into())
                        .await?;
                }
            }
            Wait::Idle => {}
        }
        Ok(())
    }

    /// Applies pending operator commands. Returns how many were handled.
    async fn handle_commands(&mut self) -> Result<usize, EngineError> {
        if self.ledger.stop_requested().await? {
            self.event(
                "info",
                "stop asked for by the operator (skillscope stop); stopping".into(),
            )
            .await?;
            self.begin_stop(StopReason::Operator);
            return Ok(0);
        }
        let pending = self.ledger.pending_commands().await?;
        let n = pending.len();
        for cmd in pending {
            let Some(current) = self.ledger.latest_of(cmd.trial_id).await? else {
                self.ledger
                    .close_command(cmd.id, false, "no such trial".into())
                    .await?;
                continue;
            };
            let event = match cmd.kind {
                CommandKind::Retry => Event::Retry(current.clone()),
                CommandKind::Cancel => Event::Cancel(current.clone()),
            };
            let mut answer = (false, String::new());
            for d in self.sched.on(event, now()) {
                answer = self.command(d, &current).await?;
            }
            self.ledger
                .close_command(cmd.id, answer.0, answer.1)
                .await?;
        }
        Ok(n)
    }

    /// Carries out the schedule's answer to an operator's command on `current`; returns whether
    /// it was applied and the note stored with the command.
    async fn command(
        &mut self,
        d: Decision,
        current: &TrialRow,
    ) -> Result<(bool, String), EngineError> {
        Ok(match d {
            Decision::Refuse(note) => (false, note),
            Decision::Requeue { id } => {
                self.backend.forget_build_failures().await;
                let new = self.ledger.requeue(id).await?;
                let note = format!("attempt {} queued", new.attempt);
                self.engine.send(EngineEvent::TrialProgress {
                    attempt_id: new.id,
                    status: new.status,
                });
                self.event(
                    "info",
                    format!("{}: retry asked for; {note}", current.trial_name),
                )
                .await?;
                self.sched.on(Event::Queued(new), now());
                (true, note)
            }
            Decision::CancelQueued { id } => {
                let row = self.ledger.cancel_queued(id).await?;
                self.engine
                    .send(EngineEvent::TrialDone { row: Box::new(row) });
                self.event(
                    "info",
                    format!("{}: cancelled before it started", current.trial_name),
                )
                .await?;
                (true, "cancelled before it started".into())
            }
            Decision::CancelRunning { id } => {
                if let Some(c) = self.cancels.get(&id) {
                    c.cancel_by_operator();
                }
                self.event(
                    "info",
                    format!("{}: cancel asked for; cancelling", current.trial_name),
                )
                .await?;
                (true, "cancelling".into())
            }
            d => {
                self.act(d).await?;
                (false, String::new())
            }
        })
    }

    /// The one way out: every running attempt has ended (interrupted ones were re-queued); the
    /// reaper's removals finish; whatever container of this run is left on a host that answers
    /// (trial containers, helpers) is removed; the Harbor job files are written.
    async fn clean_stop(&mut self) {
        self.stop_trials.cancel();
        self.prebuilds.ended().await;
        while let Some(joined) = self.running.join_next_with_id().await {
            if let Ok((id, h, r)) = self.joined(joined) {
                self.on_attempt_end(id, h, r).await;
            }
        }
        let _ = tokio::time::timeout(CLEANUP_TIMEOUT, self.attempts.reaper.drain()).await;
        let uid = self.ledger.run().uid.clone();
        for h in &self.pool.hosts {
            if let (Some(host), Health::Up { .. } | Health::Draining { .. }) = (&h.conn, &h.health)
            {
                let sweep = Sweep::Run {
                    uid: uid.clone(),
                    keep: Vec::new(),
                };
                let _ = tokio::time::timeout(CLEANUP_TIMEOUT, host.sweep(&sweep)).await;
            }
        }
        self.attempts.write_job_files(true).await;
        let _ = self.ledger.waiting(None).await;
        for i in 0..self.pool.hosts.len() {
            let _ = self.ledger.host(self.host_row(i)).await;
        }
    }
}

/// The costs the budget is checked against (see [`crate::analysis::spend`]): finished attempts'
/// and what the running ones spent so far, per condition.
fn costs(
    finished: &BTreeMap<String, Vec<f64>>,
    attempts: &Attempts,
) -> BTreeMap<String, crate::analysis::spend::ConditionCosts> {
    let mut out: BTreeMap<String, crate::analysis::spend::ConditionCosts> = finished
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                crate::analysis::spend::ConditionCosts {
                    finished: v.clone(),
                    ..Default::default()
                },
            )
        })
        .collect();
    for r in attempts.running.lock().expect("lock").values() {
        out.entry(r.condition.clone())
            .or_default()
            .running
            .push(r.cost_usd);
    }
    out
}
