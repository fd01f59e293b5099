//! The dispatcher: the scheduling loop of a run and its one clean stop.
//!
//! It places queued attempts on Docker hosts that are up, up to their slots; probes hosts on
//! their schedule and when an attempt meets a fault; re-queues attempts an infrastructure fault
//! interrupted (for another host, or this one once it answers again); waits for Docker, for up to
//! the run's `docker_wait`, when no host is up; refreshes the heartbeat; applies operator commands
//! (retry, cancel, stop) from the store. Every way out — the last trial, Ctrl-C or SIGTERM, a
//! stop asked from another process, Docker gone for too long, a full disk, a database error —
//! ends in [`Dispatcher::clean_stop`]: running attempts interrupted and re-queued, the run's
//! containers (helpers too) removed, the Harbor job files written.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::attempt::{AttemptEnd, Attempts};
use super::hosts::{Health, HostPool, Need, Probe, Transition};
use super::prebuild::Prebuilds;
use super::{Engine, EngineError, EngineEvent, RunRequest, StopReason};
use crate::domain::{TrialKey, TrialRow, TrialStatus};
use crate::runner::container::{remove_labeled, remove_labeled_older_than};
use crate::runner::{Agent, Fault, TrialCancel, labels};
use crate::skillsbench::TaskSet;
use crate::store::{CommandKind, RunLedger};

/// How often pending commands and stop requests are looked for.
const COMMAND_POLL: Duration = Duration::from_millis(300);
/// How often the owner refreshes its heartbeat (and each host's stored state).
const HEARTBEAT: Duration = Duration::from_secs(5);
/// How often host probes, drains and the wait for Docker are looked at.
const HEALTH_TICK: Duration = Duration::from_secs(1);
/// A host down this long gets its running attempts interrupted (their Docker calls may hang on a
/// connection that never answers) and re-queued.
const DOWN_GRACE: Duration = Duration::from_secs(30);
/// A helper container this old was left by a killed process (a leak check ends within its 120 s
/// exec budget; filling a kit volume, a few hundred MB through the API, within minutes).
const HELPER_STALE: Duration = Duration::from_secs(3600);
/// Faults in a row on hosts that kept answering after which a trial is left without a verdict
/// (something about the trial itself keeps breaking the infrastructure; resuming tries again).
const MAX_FAULTS: u32 = 3;
/// Longest wait for one cleanup call against a host at the end of a run.
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(30);

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
    taskset: TaskSet,
    agent: Arc<dyn Agent>,
    jobs_dir: PathBuf,
    shutdown: CancellationToken,
) -> DriveEnd {
    let n_tasks = taskset.tasks.len();
    let mut d = Dispatcher::new(engine, req, ledger, taskset, agent, jobs_dir);
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

type Running = JoinSet<(i64, usize, Result<AttemptEnd, EngineError>)>;

struct Dispatcher {
    engine: Engine,
    ledger: RunLedger,
    attempts: Arc<Attempts>,
    pool: HostPool,
    queue: VecDeque<TrialRow>,
    running: Running,
    /// Attempt id → (its cancel handle, its host, what it reserved there).
    cancels: HashMap<i64, (TrialCancel, usize, Need)>,
    probes: JoinSet<Probe>,
    stop_trials: CancellationToken,
    stopping: bool,
    stop: Option<StopReason>,
    fatal: Option<EngineError>,
    /// Faults in a row per trial, on hosts that kept answering.
    faults: HashMap<TrialKey, u32>,
    /// Since when no host has been up while trials wait (monotonic), with the reason stored.
    waiting: Option<(Instant, String)>,
    docker_wait: Duration,
    /// Stay alive after the last trial until this fires (a dashboard is open).
    stay_alive: Option<CancellationToken>,
    task_ids: Vec<String>,
    /// What each task asks of a host.
    needs: HashMap<String, Need>,
    /// The cost budget, USD.
    max_cost: Option<f64>,
    /// Costs of finished attempts per condition, USD (priced ones).
    finished_costs: BTreeMap<String, Vec<f64>>,
    /// No new trial may start within the budget: the run ends once the running ones do.
    budget_reached: bool,
    /// The adaptive limit on concurrent agent sessions, for agents with a model provider.
    provider: Option<ProviderLimit>,
    /// Images built ahead of the queue.
    prebuilds: Prebuilds,
}

/// An additive-increase, multiplicative-decrease limit on concurrent agent sessions with one
/// model provider (as TCP's congestion window, and inspect_ai's connection limit): it starts at
/// the run's capacity, halves on a rate limit or an overload (at most once per
/// [`ProviderLimit::COOLDOWN`], since one burst fails several sessions at once), and grows by one
/// after as many sessions as the limit ended without a provider failure.
#[derive(Debug, Clone)]
struct ProviderLimit {
    name: String,
    limit: usize,
    cap: usize,
    successes: usize,
    last_cut: Option<Instant>,
}

impl ProviderLimit {
    const COOLDOWN: Duration = Duration::from_secs(30);

    /// A rate limit or overload: halve (once per cooldown). Returns the change.
    fn cut(&mut self) -> Option<(usize, usize)> {
        if self.last_cut.is_some_and(|t| t.elapsed() < Self::COOLDOWN) {
            return None;
        }
        let old = self.limit;
        self.limit = (self.limit / 2).max(1);
        self.successes = 0;
        self.last_cut = Some(Instant::now());
        (self.limit != old).then_some((old, self.limit))
    }

    /// A session ended without a provider failure: grow by one after `limit` of them.
    fn success(&mut self) -> Option<(usize, usize)> {
        self.successes += 1;
        if self.limit < self.cap && self.successes >= self.limit {
            self.successes = 0;
            self.limit += 1;
            return Some((self.limit - 1, self.limit));
        }
        None
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
    ) -> Dispatcher {
        let run = ledger.run().clone();
        let task_ids = taskset.ids();
        let needs: HashMap<String, Need> = taskset
            .tasks
            .iter()
            .map(|t| (t.id.clone(), Need::of(t)))
            .collect();
        let capacity = req.settings.concurrency.max(1) * req.settings.docker_hosts.len().max(1);
        let provider = agent.provider().map(|name| ProviderLimit {
            name: name.to_string(),
            limit: capacity,
            cap: capacity,
            successes: 0,
            last_cut: None,
        });
        let attempts = Arc::new(Attempts::new(engine, req, ledger, taskset, agent, jobs_dir));
        Dispatcher {
            engine: engine.clone(),
            ledger: ledger.clone(),
            attempts,
            pool: HostPool::new(
                &req.settings.docker_hosts,
                req.settings.concurrency,
                &run.uid,
            ),
            queue: VecDeque::new(),
            running: JoinSet::new(),
            cancels: HashMap::new(),
            probes: JoinSet::new(),
            stop_trials: CancellationToken::new(),
            stopping: false,
            stop: None,
            fatal: None,
            faults: HashMap::new(),
            waiting: None,
            docker_wait: req.settings.docker_wait(),
            stay_alive: req.stay_alive.clone(),
            task_ids,
            needs,
            max_cost: req.settings.max_cost_usd,
            finished_costs: BTreeMap::new(),
            budget_reached: false,
            provider,
            prebuilds: Prebuilds::default(),
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
            self.place();
            if !self.stopping {
                self.prebuilds
                    .top_up(&self.queue, &self.attempts, &self.pool);
            }
            self.watch_wait().await?;
            let keep_alive = self.stay_alive.as_ref().is_some_and(|t| !t.is_cancelled());
            if self.running.is_empty() && self.budget_reached && !self.stopping {
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
            if self.running.is_empty() && (self.stopping || (self.queue.is_empty() && !keep_alive))
            {
                // Commands written while the last trials ran still count.
                if !self.stopping && self.handle_commands().await? > 0 {
                    continue;
                }
                break;
            }
            tokio::select! {
                Some(joined) = self.running.join_next(), if !self.running.is_empty() => {
                    match joined {
                        Ok((id, h, r)) => self.on_attempt_end(id, h, r).await,
                        Err(e) => self.fail(EngineError::Internal(format!("a trial task failed: {e}"))),
                    }
                }
                Some(Ok(probe)) = self.probes.join_next(), if !self.probes.is_empty() => {
                    self.on_probe(probe).await?;
                }
                // A build ahead finished: the next one can start.
                _ = self.prebuilds.next() => {}
                _ = poll.tick(), if !self.stopping => {
                    self.handle_commands().await?;
                }
                _ = health.tick() => {
                    self.health_tick().await?;
                }
                _ = beat.tick() => {
                    match self.ledger.heartbeat(std::process::id()).await {
                        Ok(true) if !self.stopping => {
                            self.event("info", "stop asked for by the operator (skillscope stop); stopping".into()).await?;
                            self.begin_stop(StopReason::Operator);
                        }
                        Ok(_) => {}
                        Err(e) => self.fail(EngineError::Store(e)),
                    }
                    for i in 0..self.pool.hosts.len() {
                        if let Err(e) = self.ledger.host(self.pool.row(i)).await {
                            self.fail(EngineError::Store(e));
                        }
                    }
                }
                _ = shutdown.cancelled(), if !self.stopping => {
                    self.engine.notice("info", "stopping: cancelling running trials (state is saved; re-run to resume)");
                    self.begin_stop(StopReason::Operator);
                }
            }
        }
        match self.fatal.take() {
            Some(e) => Err(e),
            None => Ok(self.stop.take()),
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
            match self.pool.apply(probe) {
                Some(Transition::CameUp) => self.sweep(i, true).await?,
                _ => {
                    let row = self.pool.row(i);
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
            self.ledger.host(self.pool.row(i)).await?;
        }
        let stale = self.ledger.requeue_unfinished().await?;
        if !stale.is_empty() {
            self.event(
                "info",
                format!(
                    "re-queued {} trials left unfinished by a stopped process or an infrastructure fault",
                    stale.len()
                ),
            )
            .await?;
        }
        self.ledger.plan(self.task_ids.clone()).await?;
        self.ledger.budget(self.max_cost).await?;
        self.ledger
            .provider_limit(self.provider.as_ref().map(|p| p.limit as u32))
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
        });
        self.attempts.write_job_files(false).await;
        self.queue = self.ledger.queued().await?.into();
        Ok(())
    }

    /// Removes this run's containers on host `i` that no running attempt uses (all of them at
    /// the start of a run), and, at the start, helpers a killed process left on it.
    async fn sweep(&mut self, i: usize, at_start: bool) -> Result<(), EngineError> {
        let Some(host) = self.pool.hosts[i].conn.clone() else {
            return Ok(());
        };
        let keep: Vec<String> = self
            .cancels
            .iter()
            .filter(|(_, (_, h, _))| *h == i)
            .map(|(id, _)| id.to_string())
            .collect();
        let uid = self.ledger.run().uid.clone();
        let mut n = if keep.is_empty() {
            remove_labeled(&host.docker, labels::RUN_UID, &uid)
                .await
                .unwrap_or(0)
        } else {
            crate::runner::container::remove_labeled_except(
                &host.docker,
                labels::RUN_UID,
                &uid,
                labels::ATTEMPT_ID,
                &keep,
            )
            .await
            .unwrap_or(0)
        };
        if at_start {
            // Helpers of any run this old were left by a killed process. Best effort: a failed
            // sweep costs only disk.
            n += remove_labeled_older_than(&host.docker, labels::HELPER, HELPER_STALE)
                .await
                .unwrap_or(0);
        }
        if n > 0 {
            self.event(
                "info",
                format!("removed {n} leftover containers on {}", host.name),
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

    /// The costs the budget is checked against (see [`crate::analysis::spend`]).
    fn costs(&self) -> BTreeMap<String, crate::analysis::spend::ConditionCosts> {
        let mut out: BTreeMap<String, crate::analysis::spend::ConditionCosts> = self
            .finished_costs
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
        for r in self.attempts.running.lock().expect("lock").values() {
            out.entry(r.condition.clone())
                .or_default()
                .running
                .push(r.cost_usd);
        }
        out
    }

    /// Starts queued attempts on hosts that can take them, within the provider's limit on
    /// concurrent sessions and the cost budget.
    fn place(&mut self) {
        while !self.stopping && !self.budget_reached {
            let Some(row) = self.queue.front() else { break };
            if let Some(p) = &self.provider
                && self.cancels.len() >= p.limit
            {
                break;
            }
            let need = self.needs.get(&row.task_id).copied().unwrap_or_default();
            let Some(h) = self.pool.pick(need) else { break };
            if let Some(max) = self.max_cost
                && !crate::analysis::spend::allows(&self.costs(), &row.condition, max)
            {
                self.budget_reached = true;
                self.engine.notice(
                    "warn",
                    format!(
                        "budget: ${:.2} spent and the running trials' projected costs leave no room for another trial within ${max:.2}; no new trials start",
                        self.spent()
                    ),
                );
                break;
            }
            let Some(row) = self.queue.pop_front() else {
                break;
            };
            let Some(host) = self.pool.hosts[h].conn.clone() else {
                self.queue.push_front(row);
                break;
            };
            self.pool.take(h, need);
            let cancel = TrialCancel::child_of(&self.stop_trials);
            self.cancels.insert(row.id, (cancel.clone(), h, need));
            let attempts = self.attempts.clone();
            self.running.spawn(async move {
                let id = row.id;
                let r = attempts.run_one(row, host, cancel).await;
                (id, h, r)
            });
        }
    }

    /// Stops placing attempts, interrupts the running ones and empties the queue.
    fn begin_stop(&mut self, reason: StopReason) {
        if !self.stopping {
            self.stopping = true;
            self.stop.get_or_insert(reason);
            self.stop_trials.cancel();
            self.queue.clear();
            self.prebuilds.stop();
        }
    }

    /// Records a fatal error (the first one wins) and stops.
    fn fail(&mut self, e: EngineError) {
        self.fatal.get_or_insert(e);
        if !self.stopping {
            self.stopping = true;
            self.stop_trials.cancel();
            self.queue.clear();
            self.prebuilds.stop();
        }
    }

    async fn on_attempt_end(&mut self, id: i64, h: usize, r: Result<AttemptEnd, EngineError>) {
        let need = self
            .cancels
            .remove(&id)
            .map(|(_, _, need)| need)
            .unwrap_or_default();
        self.pool.release(h, need);
        let end = match r {
            Ok(end) => end,
            Err(e) => {
                // The attempt was recorded as interrupted: queue the trial again, for the resume
                // (best effort: with a full disk the store may not take it; a resume re-queues
                // interrupted trials anyway).
                if matches!(e, EngineError::DiskFull(_)) {
                    let _ = self.ledger.requeue(id).await;
                }
                return self.fail(e);
            }
        };
        if let Err(e) = self.after_attempt(h, end).await {
            self.fail(e);
        }
    }

    async fn after_attempt(&mut self, h: usize, end: AttemptEnd) -> Result<(), EngineError> {
        let key = end.row.key();
        if let Some(c) = end.row.cost_usd {
            self.finished_costs
                .entry(end.row.condition.clone())
                .or_default()
                .push(c);
        }
        self.adapt_provider_limit(&end).await?;
        if !end.interrupted {
            self.faults.remove(&key);
            self.pool.healthy_end(h);
            if let Some(retry) = end.retry.filter(|_| !self.stopping) {
                self.queue.push_back(retry);
            }
            return Ok(());
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
                self.event(
                    "warn",
                    format!(
                        "Docker host {host} is draining: {} (no new trials for a while)",
                        fault.describe()
                    ),
                )
                .await?;
                self.ledger.host(self.pool.row(h)).await?;
            }
            if end.host_answered {
                *self.faults.entry(key.clone()).or_default() += 1;
            }
        }
        let n = self.faults.get(&key).copied().unwrap_or(0);
        if end.fault.is_some() && n >= MAX_FAULTS && !self.stopping {
            self.event(
                "warn",
                format!(
                    "{}: {n} infrastructure faults in a row on hosts that kept answering (last: {}); \
                     left without a verdict — retry it, or resume the run, once the cause is fixed",
                    end.row.trial_name,
                    end.row.error.as_deref().unwrap_or("?")
                ),
            )
            .await?;
            return Ok(());
        }
        let next = self.ledger.requeue(end.row.id).await?;
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
        if !self.stopping {
            // Ahead of the queue: it was already its turn.
            self.queue.push_front(next);
        }
        Ok(())
    }

    /// The adaptive limit on concurrent agent sessions: halved on a rate limit or an overload,
    /// grown back by one per limit's worth of sessions that ended without a provider failure.
    async fn adapt_provider_limit(&mut self, end: &AttemptEnd) -> Result<(), EngineError> {
        use crate::agent_logs::provider::ProviderFailureKind as K;
        let Some(p) = self.provider.as_mut() else {
            return Ok(());
        };
        let change = match end.provider {
            Some(K::RateLimit | K::Overloaded) => {
                p.cut().map(|c| (c, "after a rate limit or overload"))
            }
            None if !end.interrupted => p
                .success()
                .map(|c| (c, "sessions end without provider failures")),
            _ => None,
        };
        let Some(((old, new), why)) = change else {
            return Ok(());
        };
        let name = p.name.clone();
        self.event(
            "info",
            format!("provider limit ({name}): {old} → {new} concurrent agent sessions ({why})"),
        )
        .await?;
        self.ledger.provider_limit(Some(new as u32)).await?;
        Ok(())
    }

    async fn on_probe(&mut self, probe: Probe) -> Result<(), EngineError> {
        let i = probe.index;
        match self.pool.apply(probe) {
            Some(Transition::CameUp) => {
                let name = self.pool.hosts[i].name.clone();
                self.event("info", format!("Docker host {name} is up"))
                    .await?;
                self.sweep(i, false).await?;
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
        self.ledger.host(self.pool.row(i)).await?;
        Ok(())
    }

    /// Starts due probes; interrupts attempts on hosts down for longer than [`DOWN_GRACE`].
    async fn health_tick(&mut self) -> Result<(), EngineError> {
        let now = Instant::now();
        for i in self.pool.due(now) {
            self.probes.spawn(self.pool.probe(i));
        }
        for (i, h) in self.pool.hosts.iter().enumerate() {
            let Health::Down { at, error, .. } = &h.health else {
                continue;
            };
            if now.duration_since(*at) < DOWN_GRACE || h.in_use == 0 {
                continue;
            }
            for (cancel, host, _) in self.cancels.values() {
                if *host == i && !cancel.token.is_cancelled() {
                    cancel.cancel_for_fault(
                        Fault::DaemonUnreachable,
                        &format!("Docker host {} is down: {error}", h.name),
                    );
                }
            }
        }
        Ok(())
    }

    /// Records the start and end of a wait for Docker (no host up while trials wait), and stops
    /// the run when it lasts longer than the run's `docker_wait`.
    async fn watch_wait(&mut self) -> Result<(), EngineError> {
        let unavailable = self
            .pool
            .unavailable()
            .filter(|_| !self.stopping && !self.queue.is_empty());
        let budget = human(self.docker_wait);
        match (unavailable, self.waiting.take()) {
            (Some((since, error)), None) => {
                self.event(
                    "warn",
                    format!("waiting for Docker: no host is up ({error}); waiting up to {budget}"),
                )
                .await?;
                self.ledger.waiting(Some((since, error.clone()))).await?;
                self.waiting = Some((Instant::now(), error));
            }
            (Some((since, error)), Some((t0, _))) if t0.elapsed() > self.docker_wait => {
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
            (Some((since, error)), Some((t0, stored))) => {
                // Keep the stored reason current.
                if error != stored {
                    self.ledger.waiting(Some((since, error.clone()))).await?;
                }
                self.waiting = Some((t0, error));
            }
            (None, Some(_)) => {
                self.ledger.waiting(None).await?;
                if !self.stopping {
                    self.event("info", "Docker is back; trials continue".into())
                        .await?;
                }
            }
            (None, None) => {}
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
            let (ok, note) = match cmd.kind {
                CommandKind::Retry if current.status != TrialStatus::Done => (
                    false,
                    format!("attempt {} is still {}", current.attempt, current.status),
                ),
                CommandKind::Retry => {
                    self.attempts.images.forget_failures().await;
                    self.faults.remove(&current.key());
                    let new = self.ledger.requeue(current.id).await?;
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
                    self.queue.push_back(new);
                    (true, note)
                }
                CommandKind::Cancel => match current.status {
                    TrialStatus::Done => (
                        false,
                        format!("attempt {} is already done", current.attempt),
                    ),
                    TrialStatus::Queued => {
                        self.queue.retain(|q| q.id != current.id);
                        let row = self.ledger.cancel_queued(current.id).await?;
                        self.engine
                            .send(EngineEvent::TrialDone { row: Box::new(row) });
                        self.event(
                            "info",
                            format!("{}: cancelled before it started", current.trial_name),
                        )
                        .await?;
                        (true, "cancelled before it started".into())
                    }
                    _ => match self.cancels.get(&current.id) {
                        Some((c, _, _)) => {
                            c.cancel_by_operator();
                            self.event(
                                "info",
                                format!("{}: cancel asked for; cancelling", current.trial_name),
                            )
                            .await?;
                            (true, "cancelling".into())
                        }
                        None => (false, "the attempt is not run by this process".into()),
                    },
                },
            };
            self.ledger.close_command(cmd.id, ok, note).await?;
        }
        Ok(n)
    }

    /// The one way out: every running attempt has ended (interrupted ones were re-queued); the
    /// reaper's removals finish; whatever container of this run is left on a host that answers
    /// (trial containers, helpers) is removed; the Harbor job files are written.
    async fn clean_stop(&mut self) {
        self.stop_trials.cancel();
        self.prebuilds.stop();
        while let Some(joined) = self.running.join_next().await {
            if let Ok((id, h, r)) = joined {
                self.on_attempt_end(id, h, r).await;
            }
        }
        let _ = tokio::time::timeout(CLEANUP_TIMEOUT, self.attempts.reaper.drain()).await;
        let uid = self.ledger.run().uid.clone();
        for h in &self.pool.hosts {
            if let (Some(host), Health::Up { .. } | Health::Draining { .. }) = (&h.conn, &h.health)
            {
                let _ = tokio::time::timeout(
                    CLEANUP_TIMEOUT,
                    remove_labeled(&host.docker, labels::RUN_UID, &uid),
                )
                .await;
            }
        }
        self.attempts.write_job_files(true).await;
        let _ = self.ledger.waiting(None).await;
        for i in 0..self.pool.hosts.len() {
            let _ = self.ledger.host(self.pool.row(i)).await;
        }
    }
}

/// `45 s`, `30 min`.
fn human(d: Duration) -> String {
    let s = d.as_secs();
    if s < 120 {
        format!("{s} s")
    } else {
        format!("{} min", s / 60)
    }
}
