//! The schedule: every decision of a run's scheduling loop as a pure state machine — no Docker,
//! no store, no clock of its own — so it is tested without processes, as nextest's dispatcher
//! is. The dispatcher (`dispatch.rs`) keeps the I/O: it feeds [`Event`]s (a trial queued, an
//! attempt ended, a host's state, an operator's retry or cancel, a stop, time passing, each with
//! the time it happened), asks for placements ([`Schedule::place`]), for the state of the wait
//! for Docker ([`Schedule::wait_for_docker`]) and whether the run is over ([`Schedule::next`]),
//! and carries out the [`Decision`]s it gets back: start an attempt on a host, queue a trial
//! again through the store, leave one without a verdict, interrupt or cancel an attempt, refuse
//! an operator's command, sweep a host, record the provider limit, stop every attempt.
//!
//! It holds the queue (in stage order), the attempts running and what each reserved on its
//! host, each host's state and free CPUs, memory and slots, the model provider's adaptive limit
//! on concurrent agent sessions, the infrastructure faults in a row per trial, whether the run
//! is stopping and why, whether the cost budget is reached, and since when it waits for Docker.
//!
//! **Stage order.** Queued trials start in the order (trial index, task id, condition key):
//! every task's trial 1 in every condition before any trial 2, and so on — stage k is every
//! task's and condition's trial k. A run stopped once every trial of index ≤ k has a verdict is
//! a balanced design over the whole task set (k trials per task and condition; trials of index
//! k + 1 already under way are at most the run's concurrency, and an analysis at stage k leaves
//! them out), so Method D stays the paper's estimator over equal trials per task. A trial queued
//! again — interrupted by an infrastructure fault, retried after a provider failure, or retried
//! by the operator after it finished — takes its own stage's place, not the back of the queue:
//! ahead of every trial of a later stage, so the stage it left incomplete is complete again as
//! soon as a slot frees; behind every trial of an earlier stage still queued, so a retry never
//! starts a later stage before an earlier one. A retry replaces its trial's verdict rather than
//! adding a trial, so what it can break is only the boundary: at the back of the queue, a retried
//! trial 1 would wait behind all of stage 3, and a run stopped at any boundary before its turn
//! would miss one trial 1 of that task and condition. The order is this module's alone
//! ([`stage_order`]): whatever order the store gives the queue in at a resume, and whatever
//! order trials come back in during the run, they start in stage order. The head of the queue
//! waits for a host that can take it — no later trial is placed around it — so the order stays
//! strict, at the cost of a slot left idle while a task needing more CPUs than are free waits.
//!
//! **Early stop.** When the run's group-sequential design has answered every question of a
//! condition (`stopping.rs`), [`Event::EarlyStop`] takes its queued trials beyond the stage it
//! keeps out of the queue and turns away any queued for it later ([`Decision::NotRun`]); its
//! running trials finish. Every task keeps the same trials of that condition: the run stays
//! balanced.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use super::StopReason;
use crate::agent_logs::provider::ProviderFailureKind;
use crate::domain::{TrialKey, TrialRow, TrialStatus};
use crate::runner::Fault;

/// A host down this long gets its running attempts interrupted (their Docker calls may hang on a
/// connection that never answers), so they are queued again for the hosts that are up.
pub(super) const DOWN_GRACE: Duration = Duration::from_secs(30);
/// Faults in a row on hosts that kept answering after which a trial is left without a verdict
/// (something about the trial itself keeps breaking the infrastructure; resuming tries again).
pub(super) const MAX_FAULTS: u32 = 3;

/// What a trial asks of a host: its task's `[environment] cpus` (1 when absent, as Harbor's
/// default) and `memory_mb` (none counted when absent).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Need {
    /// CPUs.
    pub cpus: f64,
    /// Memory, MiB.
    pub memory_mb: u64,
}

impl Need {
    /// What a task asks for.
    pub fn of(task: &crate::skillsbench::Task) -> Need {
        Need {
            cpus: task.config.environment.cpus.unwrap_or(1.0),
            memory_mb: task.config.environment.memory_mb.unwrap_or(0),
        }
    }

    /// True when `more` fits beside this reservation on a host of `cap` (its CPUs; its memory
    /// when the daemon reports it).
    pub fn fits(&self, more: Need, cap: Capacity) -> bool {
        let cpus_ok = self.cpus + more.cpus <= cap.cpus + 1e-9;
        let mem_ok = cap.memory_mb == 0 || self.memory_mb + more.memory_mb <= cap.memory_mb;
        cpus_ok && mem_ok
    }
}

/// What a Docker host has, as its daemon reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Capacity {
    /// CPUs.
    pub cpus: f64,
    /// Memory, MiB; 0 when the daemon does not say.
    pub memory_mb: u64,
}

/// A host's state, as far as placing trials goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum HostState {
    /// Answers and takes trials, up to its slots, CPUs and memory.
    Up(Capacity),
    /// Does not answer, since `since`: no new trials; after [`DOWN_GRACE`] its running attempts
    /// are interrupted.
    Down {
        /// When it stopped answering.
        since: Instant,
    },
    /// Answers, but gets no new trials for a while (its disk or image store failed); its
    /// running attempts go on.
    Draining,
}

/// Something that happened, fed to [`Schedule::on`].
#[derive(Debug, Clone)]
pub(super) enum Event {
    /// An attempt waits to start: planned, left queued by an earlier process, or queued again
    /// (the store has made its row). Ignored once the run is stopping.
    Queued(TrialRow),
    /// Attempt `id` (started by a [`Decision::Start`]) ended; what it reserved is free again.
    Ended {
        /// The attempt.
        id: i64,
        /// How.
        how: Ended,
    },
    /// Host `host` (by its index in the run's configuration) is in `state` now.
    Host {
        /// The host.
        host: usize,
        /// Its state.
        state: HostState,
    },
    /// The operator asks to run the trial of `current` (its latest attempt) again.
    Retry(TrialRow),
    /// The operator asks to cancel `current` (a trial's latest attempt).
    Cancel(TrialRow),
    /// The run stops: the operator (Ctrl-C, SIGTERM, `skillscope stop`), Docker away too long,
    /// the budget spent — or, with `None`, an error the dispatcher records itself.
    Stop(Option<StopReason>),
    /// Time passed (the dispatcher's health tick).
    Tick,
    /// The group-sequential design answered every question of `condition` (see `stopping.rs`):
    /// its queued trials of a later trial index than `keep` leave the queue, not run, and any
    /// queued later for it ([`Decision::NotRun`]); its running ones finish.
    EarlyStop {
        /// The condition key.
        condition: String,
        /// Trials per task it keeps.
        keep: u32,
    },
}

/// How an attempt ended, as the schedule needs to know it.
#[derive(Debug, Clone)]
pub(super) enum Ended {
    /// It has its outcome (a verdict, or a provider failure or cancel recorded as such).
    Judged {
        /// The kind of provider failure that ended it, if one did.
        provider: Option<ProviderFailureKind>,
        /// A provider failure's automatic retry, already made in the store.
        retry: Option<Box<TrialRow>>,
    },
    /// A stop or an infrastructure fault cut it off: no verdict from it.
    Interrupted {
        /// The fault, when one did.
        fault: Option<Fault>,
        /// After the fault, its host still answered (so the fault counts against the trial).
        host_answered: bool,
    },
    /// It ended in an error that stops the run.
    Failed,
}

/// What the dispatcher is to do.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Decision {
    /// Start attempt `row` on host `host` (its CPUs, memory and a slot are reserved there).
    Start {
        /// The attempt.
        row: Box<TrialRow>,
        /// The host's index.
        host: usize,
    },
    /// No further trial fits the cost budget: none starts any more (the run stops once the
    /// running ones end, [`Next::BudgetSpent`]).
    BudgetReached,
    /// Queue the trial of attempt `id` again as a new attempt in the store, then feed it back as
    /// [`Event::Queued`] (an interrupted attempt, or the operator's retry).
    Requeue {
        /// The attempt whose trial is queued again.
        id: i64,
    },
    /// Leave the trial of attempt `id` without a verdict: `faults` infrastructure faults in a row
    /// on hosts that kept answering ([`MAX_FAULTS`]).
    GiveUp {
        /// The attempt.
        id: i64,
        /// Faults in a row.
        faults: u32,
    },
    /// Interrupt running attempt `id` for a fault: its host `host` has been down for longer
    /// than [`DOWN_GRACE`].
    Interrupt {
        /// The attempt.
        id: i64,
        /// Its host.
        host: usize,
    },
    /// Cancel queued attempt `id` (it has left the queue).
    CancelQueued {
        /// The attempt.
        id: i64,
    },
    /// Cancel running attempt `id`.
    CancelRunning {
        /// The attempt.
        id: i64,
    },
    /// Refuse the operator's command, saying why.
    Refuse(String),
    /// Host `host` answers again: remove the run's containers there except those of the
    /// attempts `keep` (running on it).
    Sweep {
        /// The host.
        host: usize,
        /// Attempts still running there, by id, ascending.
        keep: Vec<i64>,
    },
    /// The provider's limit on concurrent agent sessions changed from `old` to `new`.
    ProviderLimit {
        /// Before.
        old: usize,
        /// After.
        new: usize,
        /// Why, for the operator.
        why: &'static str,
    },
    /// Interrupt every running attempt and start none: the run stops.
    StopAll,
    /// Queued attempts `ids` of a condition stopped early left the queue: record them as not run
    /// (never a failure).
    NotRun {
        /// The condition.
        condition: String,
        /// The attempts, ascending.
        ids: Vec<i64>,
    },
}

/// What the scheduling loop does next ([`Schedule::next`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// Attempts run or trials wait: keep going.
    Continue,
    /// Nothing runs and no trial fits the budget: stop the run ([`StopReason::Budget`]).
    BudgetSpent,
    /// Nothing runs and nothing is left to start (or the run is stopping): the loop ends.
    Finish,
}

/// The wait for Docker ([`Schedule::wait_for_docker`]): trials wait while no host is up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wait {
    /// Not waiting.
    Idle,
    /// The wait begins now.
    Began,
    /// The wait goes on, within its limit.
    Waiting,
    /// The wait lasted longer than its limit: stop the run ([`StopReason::DockerUnavailable`]).
    TooLong,
    /// A host is up again (or nothing waits any more): the wait is over.
    Over,
}

/// An additive-increase, multiplicative-decrease limit on concurrent agent sessions with one
/// model provider (as TCP's congestion window, and inspect_ai's connection limit): it starts at
/// the run's capacity, halves on a rate limit or an overload (at most once per
/// [`ProviderLimit::COOLDOWN`], since one burst fails several sessions at once), and grows by one
/// after as many sessions as the limit ended without a provider failure.
#[derive(Debug, Clone)]
struct ProviderLimit {
    limit: usize,
    cap: usize,
    successes: usize,
    last_cut: Option<Instant>,
}

impl ProviderLimit {
    const COOLDOWN: Duration = Duration::from_secs(30);

    /// A rate limit or overload at `now`: halve (once per cooldown). Returns the change.
    fn cut(&mut self, now: Instant) -> Option<(usize, usize)> {
        if self
            .last_cut
            .is_some_and(|t| now.saturating_duration_since(t) < Self::COOLDOWN)
        {
            return None;
        }
        let old = self.limit;
        self.limit = (self.limit / 2).max(1);
        self.successes = 0;
        self.last_cut = Some(now);
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

/// One configured host, as the schedule sees it.
#[derive(Debug, Clone)]
struct Host {
    /// Trials it may run at once (`--concurrency`).
    slots: usize,
    state: HostState,
    /// Trials running on it.
    in_use: usize,
    /// CPUs and memory the running trials asked for.
    reserved: Need,
}

/// A running attempt.
#[derive(Debug, Clone)]
struct Placed {
    host: usize,
    need: Need,
    key: TrialKey,
    /// An [`Decision::Interrupt`] was given for it.
    interrupting: bool,
}

/// Where an attempt stands in the queue: (trial index, task id, condition key, attempt id) —
/// stage first (see the module's doc). The attempt id only separates rows of one trial, which
/// the store never queues twice.
pub(super) type Order = (u32, String, String, i64);

/// The place of `row` in the stage order.
pub(super) fn stage_order(row: &TrialRow) -> Order {
    (
        row.trial_index,
        row.task_id.clone(),
        row.condition.clone(),
        row.id,
    )
}

/// The scheduling state of one run (see the module's doc).
#[derive(Debug, Clone)]
pub(super) struct Schedule {
    queue: BTreeMap<Order, TrialRow>,
    running: HashMap<i64, Placed>,
    hosts: Vec<Host>,
    /// What each task asks of a host, by task id.
    needs: HashMap<String, Need>,
    provider: Option<ProviderLimit>,
    /// Faults in a row per trial, on hosts that kept answering.
    faults: HashMap<TrialKey, u32>,
    stopping: bool,
    stop: Option<StopReason>,
    budget_reached: bool,
    /// Since when trials have waited with no host up.
    waiting: Option<Instant>,
    /// Conditions stopped early, with the trials per task each keeps.
    early_stopped: HashMap<String, u32>,
}

impl Schedule {
    /// A schedule over hosts of `slots` trials each (in configuration order, all down until told
    /// otherwise, as of `now`), tasks asking `needs` (by id; nothing for a task not named), and,
    /// for an agent with a model provider, a limit on concurrent sessions starting at
    /// `provider_cap`.
    pub fn new(
        slots: &[usize],
        needs: HashMap<String, Need>,
        provider_cap: Option<usize>,
        now: Instant,
    ) -> Schedule {
        Schedule {
            queue: BTreeMap::new(),
            running: HashMap::new(),
            hosts: slots
                .iter()
                .map(|&slots| Host {
                    slots: slots.max(1),
                    state: HostState::Down { since: now },
                    in_use: 0,
                    reserved: Need::default(),
                })
                .collect(),
            needs,
            provider: provider_cap.map(|cap| ProviderLimit {
                limit: cap.max(1),
                cap: cap.max(1),
                successes: 0,
                last_cut: None,
            }),
            faults: HashMap::new(),
            stopping: false,
            stop: None,
            budget_reached: false,
            waiting: None,
            early_stopped: HashMap::new(),
        }
    }

    /// Applies `event`, which happened at `now`; returns what to do about it, in order.
    pub fn on(&mut self, event: Event, now: Instant) -> Vec<Decision> {
        match event {
            Event::Queued(row) => self.enqueue(row).into_iter().collect(),
            Event::Ended { id, how } => self.ended(id, how, now),
            Event::Host { host, state } => self.host(host, state),
            Event::Retry(current) => vec![self.retry(&current)],
            Event::Cancel(current) => vec![self.cancel(&current)],
            Event::Stop(reason) => {
                if self.stopping {
                    return Vec::new();
                }
                self.stopping = true;
                self.stop = reason;
                self.queue.clear();
                vec![Decision::StopAll]
            }
            Event::Tick => self.interrupt_on_down_hosts(now),
            Event::EarlyStop { condition, keep } => {
                self.early_stopped.insert(condition.clone(), keep);
                let ids: Vec<i64> = self
                    .queue
                    .values()
                    .filter(|r| r.condition == condition && r.trial_index > keep)
                    .map(|r| r.id)
                    .collect();
                self.queue
                    .retain(|_, r| !(r.condition == condition && r.trial_index > keep));
                let mut ids = ids;
                ids.sort_unstable();
                if ids.is_empty() {
                    Vec::new()
                } else {
                    vec![Decision::NotRun { condition, ids }]
                }
            }
        }
    }

    /// Puts `row` in the queue in its stage's place — unless the run is stopping (ignored) or
    /// its condition stopped early before its trial index ([`Decision::NotRun`]).
    fn enqueue(&mut self, row: TrialRow) -> Option<Decision> {
        if self.stopping {
            return None;
        }
        if self
            .early_stopped
            .get(&row.condition)
            .is_some_and(|keep| row.trial_index > *keep)
        {
            return Some(Decision::NotRun {
                condition: row.condition.clone(),
                ids: vec![row.id],
            });
        }
        self.queue.insert(stage_order(&row), row);
        None
    }

    /// Starts queued attempts, head first, on hosts that can take them: while the provider's
    /// limit leaves room, a host has the head's CPUs, memory and a slot, and `budget` allows the
    /// head (false once: [`Decision::BudgetReached`], and nothing starts any more).
    pub fn place(&mut self, budget: &mut dyn FnMut(&TrialRow) -> bool) -> Vec<Decision> {
        let mut out = Vec::new();
        while !self.stopping && !self.budget_reached {
            let Some((_, row)) = self.queue.first_key_value() else {
                break;
            };
            if let Some(p) = &self.provider
                && self.running.len() >= p.limit
            {
                break;
            }
            let need = self.need_of(&row.task_id);
            let Some(h) = self.pick(need) else { break };
            if !budget(row) {
                self.budget_reached = true;
                out.push(Decision::BudgetReached);
                break;
            }
            let Some((_, row)) = self.queue.pop_first() else {
                break;
            };
            self.take(h, need);
            self.running.insert(
                row.id,
                Placed {
                    host: h,
                    need,
                    key: row.key(),
                    interrupting: false,
                },
            );
            out.push(Decision::Start {
                row: Box::new(row),
                host: h,
            });
        }
        out
    }

    /// What the loop does next; `keep_alive`: stay after the last trial (a dashboard may still
    /// send retries).
    pub fn next(&self, keep_alive: bool) -> Next {
        if !self.running.is_empty() {
            Next::Continue
        } else if self.budget_reached && !self.stopping {
            Next::BudgetSpent
        } else if self.stopping || (self.queue.is_empty() && !keep_alive) {
            Next::Finish
        } else {
            Next::Continue
        }
    }

    /// The wait for Docker at `now`: trials wait, the run is not stopping, and no host is up.
    /// It is [`Wait::TooLong`] once it has lasted longer than `limit` (then over).
    pub fn wait_for_docker(&mut self, now: Instant, limit: Duration) -> Wait {
        let starved = !self.stopping
            && !self.queue.is_empty()
            && !self
                .hosts
                .iter()
                .any(|h| matches!(h.state, HostState::Up(_)));
        match (starved, self.waiting) {
            (true, None) => {
                self.waiting = Some(now);
                Wait::Began
            }
            (true, Some(t0)) if now.saturating_duration_since(t0) > limit => {
                self.waiting = None;
                Wait::TooLong
            }
            (true, Some(_)) => Wait::Waiting,
            (false, Some(_)) => {
                self.waiting = None;
                Wait::Over
            }
            (false, None) => Wait::Idle,
        }
    }

    /// The queued attempts, in the order they start.
    pub fn queue(&self) -> impl Iterator<Item = &TrialRow> {
        self.queue.values()
    }

    /// Trials running on host `i`.
    pub fn in_use(&self, i: usize) -> usize {
        self.hosts.get(i).map_or(0, |h| h.in_use)
    }

    /// The host that is up with the fewest running trials (the first of them), where the next
    /// trials will most likely go.
    pub fn least_busy(&self) -> Option<usize> {
        self.hosts
            .iter()
            .enumerate()
            .filter(|(_, h)| matches!(h.state, HostState::Up(_)))
            .min_by_key(|(_, h)| h.in_use)
            .map(|(i, _)| i)
    }

    /// The provider's limit on concurrent agent sessions now, for an agent with one.
    pub fn provider_limit(&self) -> Option<usize> {
        self.provider.as_ref().map(|p| p.limit)
    }

    /// True once the run is stopping.
    pub fn is_stopping(&self) -> bool {
        self.stopping
    }

    /// Why the run stopped early, when a reason was given; taken.
    pub fn take_stop(&mut self) -> Option<StopReason> {
        self.stop.take()
    }

    fn need_of(&self, task_id: &str) -> Need {
        self.needs.get(task_id).copied().unwrap_or_default()
    }

    /// The host that can take a trial needing `need` — up, below its slots, and with the CPUs
    /// and memory the task asks for still free (a trial alone on a host always fits, clamped to
    /// what the host has) — preferring the one with the most free CPUs (the last of equals).
    fn pick(&self, need: Need) -> Option<usize> {
        self.hosts
            .iter()
            .enumerate()
            .filter_map(|(i, h)| match h.state {
                HostState::Up(cap) => Some((i, h, cap)),
                _ => None,
            })
            .filter(|(_, h, cap)| {
                h.in_use < h.slots && (h.in_use == 0 || h.reserved.fits(need, *cap))
            })
            .max_by(|a, b| {
                let free = |h: &Host, cap: Capacity| cap.cpus - h.reserved.cpus;
                free(a.1, a.2).total_cmp(&free(b.1, b.2))
            })
            .map(|(i, _, _)| i)
    }

    /// Counts a trial needing `need` on host `i`.
    fn take(&mut self, i: usize, need: Need) {
        let h = &mut self.hosts[i];
        h.in_use += 1;
        h.reserved.cpus += need.cpus;
        h.reserved.memory_mb += need.memory_mb;
    }

    /// Releases what [`Schedule::take`] counted.
    fn release(&mut self, i: usize, need: Need) {
        let h = &mut self.hosts[i];
        h.in_use = h.in_use.saturating_sub(1);
        h.reserved.cpus = (h.reserved.cpus - need.cpus).max(0.0);
        h.reserved.memory_mb = h.reserved.memory_mb.saturating_sub(need.memory_mb);
    }

    fn ended(&mut self, id: i64, how: Ended, now: Instant) -> Vec<Decision> {
        let Some(placed) = self.running.remove(&id) else {
            return Vec::new();
        };
        self.release(placed.host, placed.need);
        match how {
            Ended::Failed => Vec::new(),
            Ended::Judged { provider, retry } => {
                let mut out: Vec<Decision> = self
                    .adapt_provider_limit(provider, now)
                    .into_iter()
                    .collect();
                self.faults.remove(&placed.key);
                if let Some(retry) = retry {
                    out.extend(self.enqueue(*retry));
                }
                out
            }
            Ended::Interrupted {
                fault,
                host_answered,
            } => {
                if fault.is_some() && host_answered {
                    *self.faults.entry(placed.key.clone()).or_default() += 1;
                }
                let n = self.faults.get(&placed.key).copied().unwrap_or(0);
                if fault.is_some() && n >= MAX_FAULTS && !self.stopping {
                    vec![Decision::GiveUp { id, faults: n }]
                } else {
                    vec![Decision::Requeue { id }]
                }
            }
        }
    }

    /// The adaptive limit: halved on a rate limit or an overload, grown back by one per limit's
    /// worth of sessions that ended without a provider failure.
    fn adapt_provider_limit(
        &mut self,
        provider: Option<ProviderFailureKind>,
        now: Instant,
    ) -> Option<Decision> {
        let p = self.provider.as_mut()?;
        let ((old, new), why) = match provider {
            Some(ProviderFailureKind::RateLimit | ProviderFailureKind::Overloaded) => {
                (p.cut(now)?, "after a rate limit or overload")
            }
            None => (p.success()?, "sessions end without provider failures"),
            Some(_) => return None,
        };
        Some(Decision::ProviderLimit { old, new, why })
    }

    fn host(&mut self, i: usize, state: HostState) -> Vec<Decision> {
        let Some(h) = self.hosts.get_mut(i) else {
            return Vec::new();
        };
        let came_up =
            matches!(h.state, HostState::Down { .. }) && matches!(state, HostState::Up(_));
        h.state = state;
        if !came_up {
            return Vec::new();
        }
        let mut keep: Vec<i64> = self
            .running
            .iter()
            .filter(|(_, p)| p.host == i)
            .map(|(id, _)| *id)
            .collect();
        keep.sort_unstable();
        vec![Decision::Sweep { host: i, keep }]
    }

    fn retry(&mut self, current: &TrialRow) -> Decision {
        if current.status != TrialStatus::Done {
            return Decision::Refuse(format!(
                "attempt {} is still {}",
                current.attempt, current.status
            ));
        }
        self.faults.remove(&current.key());
        Decision::Requeue { id: current.id }
    }

    fn cancel(&mut self, current: &TrialRow) -> Decision {
        match current.status {
            TrialStatus::Done => {
                Decision::Refuse(format!("attempt {} is already done", current.attempt))
            }
            TrialStatus::Queued => {
                self.queue.retain(|_, q| q.id != current.id);
                Decision::CancelQueued { id: current.id }
            }
            _ if self.running.contains_key(&current.id) => {
                Decision::CancelRunning { id: current.id }
            }
            _ => Decision::Refuse("the attempt is not run by this process".into()),
        }
    }

    /// Interrupts, once, the attempts running on hosts down for [`DOWN_GRACE`] or longer.
    fn interrupt_on_down_hosts(&mut self, now: Instant) -> Vec<Decision> {
        let mut out = Vec::new();
        for (id, p) in self.running.iter_mut() {
            let HostState::Down { since } = self.hosts[p.host].state else {
                continue;
            };
            if p.interrupting || now.saturating_duration_since(since) < DOWN_GRACE {
                continue;
            }
            p.interrupting = true;
            out.push(Decision::Interrupt {
                id: *id,
                host: p.host,
            });
        }
        out.sort_by_key(|d| match d {
            Decision::Interrupt { id, .. } => *id,
            _ => 0,
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const CPUS_4: HostState = HostState::Up(Capacity {
        cpus: 4.0,
        memory_mb: 8192,
    });

    /// A queued attempt of (task, condition, trial index), row id `id`.
    fn row(id: i64, task: &str, condition: &str, index: u32) -> TrialRow {
        TrialRow {
            id,
            task_id: task.into(),
            condition: condition.into(),
            trial_index: index,
            attempt: 1,
            status: TrialStatus::Queued,
            trial_name: format!("{task}__{condition}-{index}"),
            ..Default::default()
        }
    }

    fn up(cpus: f64, memory_mb: u64) -> HostState {
        HostState::Up(Capacity { cpus, memory_mb })
    }

    fn one_cpu() -> Need {
        Need {
            cpus: 1.0,
            memory_mb: 0,
        }
    }

    /// A schedule over hosts of `slots` each, every task asking one CPU unless `needs` says.
    fn schedule(slots: &[usize], needs: &[(&str, Need)], provider: Option<usize>) -> Schedule {
        let needs = needs.iter().map(|(t, n)| (t.to_string(), *n)).collect();
        Schedule::new(slots, needs, provider, Instant::now())
    }

    fn queue(s: &mut Schedule, rows: impl IntoIterator<Item = TrialRow>) {
        for r in rows {
            assert!(s.on(Event::Queued(r), Instant::now()).is_empty());
        }
    }

    /// Places within no budget; the (attempt id, host) of each start.
    fn place(s: &mut Schedule) -> Vec<(i64, usize)> {
        s.place(&mut |_| true)
            .into_iter()
            .map(|d| match d {
                Decision::Start { row, host } => (row.id, host),
                d => panic!("not a start: {d:?}"),
            })
            .collect()
    }

    fn end(s: &mut Schedule, id: i64, how: Ended) -> Vec<Decision> {
        s.on(Event::Ended { id, how }, Instant::now())
    }

    fn judged() -> Ended {
        Ended::Judged {
            provider: None,
            retry: None,
        }
    }

    fn interrupted(fault: Option<Fault>, host_answered: bool) -> Ended {
        Ended::Interrupted {
            fault,
            host_answered,
        }
    }

    fn queued_ids(s: &Schedule) -> Vec<i64> {
        s.queue().map(|r| r.id).collect()
    }

    /// Slots follow the tasks' own limits: on a 2-CPU, 4 GiB host, two 1-CPU trials, one 2-CPU
    /// trial, or trials until the memory is taken — and a trial too big for the host still runs,
    /// alone. (Moved here from `hosts.rs` with the placement it tests; same assertions.)
    #[test]
    fn slots_follow_the_tasks_cpus_and_memory() {
        let mut p = schedule(&[8], &[], None);
        p.on(
            Event::Host {
                host: 0,
                state: up(2.0, 4096),
            },
            Instant::now(),
        );
        let one = Need {
            cpus: 1.0,
            memory_mb: 1024,
        };
        assert_eq!(p.pick(one), Some(0));
        p.take(0, one);
        assert_eq!(p.pick(one), Some(0));
        p.take(0, one);
        assert_eq!(p.pick(one), None, "both CPUs taken");
        p.release(0, one);
        let big_mem = Need {
            cpus: 0.5,
            memory_mb: 3500,
        };
        assert_eq!(p.pick(big_mem), None, "memory taken");
        p.release(0, one);
        let huge = Need {
            cpus: 8.0,
            memory_mb: 65536,
        };
        assert_eq!(p.pick(huge), Some(0), "alone, it runs (clamped)");
        p.take(0, huge);
        assert_eq!(p.pick(one), None);
        // --concurrency stays a cap.
        p.release(0, huge);
        p.hosts[0].slots = 1;
        p.take(
            0,
            Need {
                cpus: 0.1,
                memory_mb: 0,
            },
        );
        assert_eq!(
            p.pick(Need {
                cpus: 0.1,
                memory_mb: 0
            }),
            None
        );
    }

    /// Hosts start down: nothing is placed, the run waits for Docker; the first host to answer
    /// is swept and takes the trials, and the wait is over.
    #[test]
    fn hosts_start_down_and_nothing_is_placed_until_one_answers() {
        let mut s = schedule(&[2, 2], &[], None);
        queue(&mut s, [row(1, "a", "no-skills", 1)]);
        assert_eq!(s.pick(Need::default()), None);
        assert!(place(&mut s).is_empty());
        let t0 = Instant::now();
        let limit = Duration::from_secs(1800);
        assert_eq!(s.wait_for_docker(t0, limit), Wait::Began);
        assert_eq!(
            s.on(
                Event::Host {
                    host: 1,
                    state: CPUS_4
                },
                t0
            ),
            vec![Decision::Sweep {
                host: 1,
                keep: vec![]
            }]
        );
        assert_eq!(place(&mut s), vec![(1, 1)]);
        assert_eq!(s.wait_for_docker(t0, limit), Wait::Over);
        assert_eq!(s.wait_for_docker(t0, limit), Wait::Idle);
    }

    /// A queued trial goes to the up host with the most free CPUs, within each host's slots,
    /// CPUs and memory; when the head of the queue fits nowhere, nothing behind it is placed
    /// around it (the order stays strict) until a running trial frees room.
    #[test]
    fn placement_takes_the_host_with_most_free_cpus_and_waits_at_the_head() {
        let big = Need {
            cpus: 3.0,
            memory_mb: 2048,
        };
        let mut s = schedule(&[4, 4], &[("big", big), ("small", one_cpu())], None);
        let now = Instant::now();
        s.on(
            Event::Host {
                host: 0,
                state: up(4.0, 8192),
            },
            now,
        );
        s.on(
            Event::Host {
                host: 1,
                state: up(2.0, 0),
            },
            now,
        );
        // Stage 1: big, small; stage 2: big, small.
        queue(
            &mut s,
            [
                row(1, "big", "c", 1),
                row(2, "small", "c", 1),
                row(3, "big", "c", 2),
                row(4, "small", "c", 2),
            ],
        );
        // big → host 0 (4 free CPUs); small → host 1 (2 free, against 1 left on host 0); big's
        // trial 2 fits on neither (host 0 has 1 CPU left, host 1 runs a trial already and has
        // 1 left), so small's trial 2 waits behind it although host 0 could take it.
        assert_eq!(place(&mut s), vec![(1, 0), (2, 1)]);
        assert_eq!(queued_ids(&s), vec![3, 4]);
        assert_eq!((s.in_use(0), s.in_use(1)), (1, 1));
        // The first big trial ends: its CPUs are free again, and both wait no longer.
        assert!(end(&mut s, 1, judged()).is_empty());
        assert_eq!(place(&mut s), vec![(3, 0), (4, 1)]);
        assert_eq!(s.hosts[0].reserved, big);
        assert_eq!(s.hosts[1].reserved.cpus, 2.0);
    }

    /// The provider's limit on concurrent agent sessions caps placement; a rate limit or an
    /// overload halves it (once per cooldown: one burst fails several sessions at once), other
    /// provider failures and interrupted attempts leave it; it grows back by one after as many
    /// sessions as the limit end without a provider failure, up to the run's capacity.
    #[test]
    fn the_provider_limit_halves_on_a_rate_limit_and_grows_back() {
        let mut s = schedule(&[8], &[], Some(4));
        let t0 = Instant::now();
        s.on(
            Event::Host {
                host: 0,
                state: up(16.0, 0),
            },
            t0,
        );
        queue(
            &mut s,
            (1..=12).map(|i| row(i, &format!("t{i:02}"), "c", 1)),
        );
        assert_eq!(place(&mut s).len(), 4, "the limit, not the 8 slots");
        let rate_limited = || Ended::Judged {
            provider: Some(ProviderFailureKind::RateLimit),
            retry: None,
        };
        let at = |s: &mut Schedule, id, how, secs| {
            s.on(Event::Ended { id, how }, t0 + Duration::from_secs(secs))
        };
        assert_eq!(
            at(&mut s, 1, rate_limited(), 1),
            vec![Decision::ProviderLimit {
                old: 4,
                new: 2,
                why: "after a rate limit or overload"
            }]
        );
        // The same burst: no second cut within the cooldown.
        assert!(at(&mut s, 2, rate_limited(), 2).is_empty());
        assert_eq!(s.provider_limit(), Some(2));
        assert!(place(&mut s).is_empty(), "2 running, limit 2");
        let server_error = Ended::Judged {
            provider: Some(ProviderFailureKind::ServerError),
            retry: None,
        };
        assert!(at(&mut s, 3, server_error, 3).is_empty());
        assert!(at(&mut s, 4, interrupted(None, true), 4) == vec![Decision::Requeue { id: 4 }]);
        assert_eq!(s.provider_limit(), Some(2));
        assert_eq!(place(&mut s), vec![(5, 0), (6, 0)]);
        // After the cooldown, an overload halves again.
        let overloaded = Ended::Judged {
            provider: Some(ProviderFailureKind::Overloaded),
            retry: None,
        };
        assert_eq!(
            at(&mut s, 5, overloaded, 40),
            vec![Decision::ProviderLimit {
                old: 2,
                new: 1,
                why: "after a rate limit or overload"
            }]
        );
        // Growing back: one success at limit 1, two at limit 2, three at 3; never above 4.
        let grown = |old, new| {
            vec![Decision::ProviderLimit {
                old,
                new,
                why: "sessions end without provider failures",
            }]
        };
        assert_eq!(at(&mut s, 6, judged(), 41), grown(1, 2));
        let mut changes = Vec::new();
        for round in 0..12 {
            let started = place(&mut s);
            assert!(started.len() <= s.provider_limit().unwrap());
            for (id, _) in started {
                changes.extend(at(&mut s, id, judged(), 42 + round));
            }
            queue(
                &mut s,
                (0..4).map(|i| {
                    row(
                        100 + round as i64 * 4 + i,
                        &format!("u{round:02}{i}"),
                        "c",
                        2,
                    )
                }),
            );
        }
        assert_eq!(changes, [grown(2, 3), grown(3, 4)].concat());
        assert_eq!(s.provider_limit(), Some(4), "capped at the run's capacity");
    }

    /// Failover: a host that goes down gets no new trials; after the grace its running
    /// attempts are interrupted (once), queued again without counting a fault against them
    /// (the host did not answer), and placed on the host that is up — ahead of a later stage.
    /// When the host answers again it is swept (sparing what still runs there) and takes trials.
    #[test]
    fn a_host_down_fails_over_to_the_others_and_comes_back() {
        let mut s = schedule(&[1, 1], &[], None);
        let t0 = Instant::now();
        for host in [0, 1] {
            s.on(
                Event::Host {
                    host,
                    state: CPUS_4,
                },
                t0,
            );
        }
        queue(
            &mut s,
            [
                row(1, "a", "c", 1),
                row(2, "b", "c", 1),
                row(3, "a", "c", 2),
            ],
        );
        assert_eq!(place(&mut s), vec![(1, 1), (2, 0)]);
        // Host 0 stops answering.
        let down = Event::Host {
            host: 0,
            state: HostState::Down { since: t0 },
        };
        assert!(s.on(down, t0).is_empty());
        let tick = |s: &mut Schedule, secs| s.on(Event::Tick, t0 + Duration::from_secs(secs));
        assert!(tick(&mut s, 29).is_empty(), "within the grace");
        assert_eq!(
            tick(&mut s, 30),
            vec![Decision::Interrupt { id: 2, host: 0 }]
        );
        assert!(tick(&mut s, 31).is_empty(), "interrupted once");
        // It ends interrupted: the host did not answer, so no fault counts against the trial.
        for _ in 0..MAX_FAULTS {
            assert_eq!(
                end(
                    &mut s,
                    2,
                    interrupted(Some(Fault::DaemonUnreachable), false)
                ),
                vec![Decision::Requeue { id: 2 }]
            );
            s.running.insert(
                2,
                Placed {
                    host: 0,
                    need: one_cpu(),
                    key: row(2, "b", "c", 1).key(),
                    interrupting: false,
                },
            );
            s.take(0, one_cpu());
        }
        end(
            &mut s,
            2,
            interrupted(Some(Fault::DaemonUnreachable), false),
        );
        // The store made attempt 2 of b's trial 1 (row 4): ahead of a's trial 2.
        queue(&mut s, [row(4, "b", "c", 1)]);
        assert_eq!(queued_ids(&s), vec![4, 3]);
        assert!(place(&mut s).is_empty(), "host 1 is busy, host 0 down");
        assert!(end(&mut s, 1, judged()).is_empty());
        assert_eq!(place(&mut s), vec![(4, 1)]);
        // Host 0 is back: swept, and it takes the next trial.
        assert_eq!(
            s.on(
                Event::Host {
                    host: 0,
                    state: CPUS_4
                },
                t0 + Duration::from_secs(60)
            ),
            vec![Decision::Sweep {
                host: 0,
                keep: vec![]
            }]
        );
        assert_eq!(place(&mut s), vec![(3, 0)]);
        // Down and back within the grace: the sweep spares the attempt still running there.
        s.on(
            Event::Host {
                host: 0,
                state: HostState::Down { since: t0 },
            },
            t0,
        );
        assert_eq!(
            s.on(
                Event::Host {
                    host: 0,
                    state: CPUS_4
                },
                t0
            ),
            vec![Decision::Sweep {
                host: 0,
                keep: vec![3]
            }]
        );
    }

    /// A draining host (its disk or image store failed) gets no new trials; what runs on it goes
    /// on; when the drain ends it takes trials again, without a sweep.
    #[test]
    fn a_draining_host_keeps_its_trials_and_gets_no_new_ones() {
        let mut s = schedule(&[2], &[], None);
        let now = Instant::now();
        s.on(
            Event::Host {
                host: 0,
                state: CPUS_4,
            },
            now,
        );
        queue(&mut s, [row(1, "a", "c", 1), row(2, "b", "c", 1)]);
        assert_eq!(
            place(&mut s),
            vec![(1, 0)].into_iter().chain([(2, 0)]).collect::<Vec<_>>()
        );
        queue(&mut s, [row(3, "c", "c", 1)]);
        assert!(
            s.on(
                Event::Host {
                    host: 0,
                    state: HostState::Draining
                },
                now
            )
            .is_empty()
        );
        assert!(end(&mut s, 1, judged()).is_empty());
        assert!(place(&mut s).is_empty());
        assert!(
            s.on(Event::Tick, now + Duration::from_secs(3600))
                .is_empty(),
            "draining is not down: nothing is interrupted"
        );
        assert!(
            s.on(
                Event::Host {
                    host: 0,
                    state: CPUS_4
                },
                now
            )
            .is_empty(),
            "no sweep after a drain"
        );
        assert_eq!(place(&mut s), vec![(3, 0)]);
    }

    /// No host up while trials wait: the wait begins, goes on within its limit, and past it the
    /// run is to stop; a stop empties the queue and the loop finishes once nothing runs.
    #[test]
    fn waiting_for_docker_gives_up_after_its_limit() {
        let mut s = schedule(&[1], &[], None);
        let t0 = Instant::now();
        let limit = Duration::from_secs(60);
        assert_eq!(s.wait_for_docker(t0, limit), Wait::Idle, "nothing waits");
        queue(&mut s, [row(1, "a", "c", 1)]);
        assert_eq!(s.wait_for_docker(t0, limit), Wait::Began);
        assert_eq!(s.wait_for_docker(t0 + limit, limit), Wait::Waiting);
        assert_eq!(
            s.wait_for_docker(t0 + limit + Duration::from_secs(1), limit),
            Wait::TooLong
        );
        let reason = StopReason::DockerUnavailable {
            since: "2026-11-28T10:00:00Z".into(),
            error: "refused".into(),
        };
        assert_eq!(
            s.on(Event::Stop(Some(reason.clone())), t0),
            vec![Decision::StopAll]
        );
        assert_eq!(s.wait_for_docker(t0, limit), Wait::Idle);
        assert_eq!(s.next(true), Next::Finish);
        assert_eq!(s.take_stop(), Some(reason));
    }

    /// The operator cancels a queued trial (it leaves the queue and never starts) and a running
    /// one (it is cancelled where it runs); a finished trial, or one this process does not run,
    /// is refused with the reason.
    #[test]
    fn cancel_of_a_queued_and_of_a_running_trial() {
        let mut s = schedule(&[1], &[], None);
        s.on(
            Event::Host {
                host: 0,
                state: CPUS_4,
            },
            Instant::now(),
        );
        queue(
            &mut s,
            [
                row(1, "a", "c", 1),
                row(2, "b", "c", 1),
                row(3, "c", "c", 1),
            ],
        );
        assert_eq!(place(&mut s), vec![(1, 0)]);
        let now = Instant::now();
        assert_eq!(
            s.on(Event::Cancel(row(2, "b", "c", 1)), now),
            vec![Decision::CancelQueued { id: 2 }]
        );
        assert_eq!(queued_ids(&s), vec![3]);
        let running = TrialRow {
            status: TrialStatus::Agent,
            ..row(1, "a", "c", 1)
        };
        assert_eq!(
            s.on(Event::Cancel(running.clone()), now),
            vec![Decision::CancelRunning { id: 1 }]
        );
        // The cancelled attempt ends with its outcome (cancelled): nothing is queued again, and
        // the next trial starts — not the cancelled one.
        assert!(end(&mut s, 1, judged()).is_empty());
        assert_eq!(place(&mut s), vec![(3, 0)]);
        let done = TrialRow {
            status: TrialStatus::Done,
            ..row(1, "a", "c", 1)
        };
        assert_eq!(
            s.on(Event::Cancel(done), now),
            vec![Decision::Refuse("attempt 1 is already done".into())]
        );
        let elsewhere = TrialRow {
            status: TrialStatus::Verifying,
            ..row(9, "z", "c", 1)
        };
        assert_eq!(
            s.on(Event::Cancel(elsewhere), now),
            vec![Decision::Refuse(
                "the attempt is not run by this process".into()
            )]
        );
    }

    /// Three infrastructure faults in a row on a host that kept answering leave a trial without
    /// a verdict; faults while the host did not answer do not count; a judged end or the
    /// operator's retry starts the count again; while the run stops, the trial is queued again
    /// (for the resume) rather than given up.
    #[test]
    fn faults_in_a_row_leave_a_trial_without_a_verdict() {
        let mut s = schedule(&[1], &[], None);
        s.on(
            Event::Host {
                host: 0,
                state: CPUS_4,
            },
            Instant::now(),
        );
        let mut id = 1;
        let mut attempt = |s: &mut Schedule, how: Ended| {
            queue(s, [row(id, "a", "c", 1)]);
            assert_eq!(place(s), vec![(id, 0)]);
            let d = end(s, id, how);
            id += 1;
            d
        };
        let fault = || interrupted(Some(Fault::DaemonError), true);
        assert!(matches!(
            attempt(&mut s, fault())[..],
            [Decision::Requeue { .. }]
        ));
        assert!(matches!(
            attempt(&mut s, interrupted(Some(Fault::DaemonUnreachable), false))[..],
            [Decision::Requeue { .. }]
        ));
        assert!(matches!(
            attempt(&mut s, fault())[..],
            [Decision::Requeue { .. }]
        ));
        assert!(matches!(
            attempt(&mut s, fault())[..],
            [Decision::GiveUp { faults: 3, .. }]
        ));
        // The operator retries it: the count starts again.
        let done = TrialRow {
            status: TrialStatus::Done,
            ..row(4, "a", "c", 1)
        };
        assert_eq!(
            s.on(Event::Retry(done), Instant::now()),
            vec![Decision::Requeue { id: 4 }]
        );
        assert!(matches!(
            attempt(&mut s, fault())[..],
            [Decision::Requeue { .. }]
        ));
        assert!(attempt(&mut s, judged()).is_empty());
        assert!(matches!(
            attempt(&mut s, fault())[..],
            [Decision::Requeue { .. }]
        ));
        assert!(matches!(
            attempt(&mut s, fault())[..],
            [Decision::Requeue { .. }]
        ));
        // The third in a row, while the run stops: queued again for the resume.
        queue(&mut s, [row(id, "a", "c", 1)]);
        assert_eq!(place(&mut s), vec![(id, 0)]);
        assert_eq!(
            s.on(Event::Stop(Some(StopReason::Operator)), Instant::now()),
            vec![Decision::StopAll]
        );
        assert_eq!(end(&mut s, id, fault()), vec![Decision::Requeue { id }]);
    }

    /// The operator's retry of a trial that has not finished is refused, saying what it is.
    #[test]
    fn a_retry_of_an_unfinished_trial_is_refused() {
        let mut s = schedule(&[1], &[], None);
        let running = TrialRow {
            status: TrialStatus::Agent,
            attempt: 2,
            ..row(1, "a", "c", 1)
        };
        assert_eq!(
            s.on(Event::Retry(running), Instant::now()),
            vec![Decision::Refuse("attempt 2 is still agent".into())]
        );
    }

    /// Every task's trial 1 in every condition starts before any trial 2, whatever order the
    /// trials were queued in (a resume reads them from the store in its own order).
    /// An early stop takes the condition's queued trials beyond the stage it keeps out of the
    /// queue (not run), leaves its running ones and its earlier trials alone, and turns away a
    /// later trial of it queued afterwards — a resume's re-queue or a provider failure's retry —
    /// while a trial within the kept stage still runs.
    #[test]
    fn an_early_stop_takes_the_conditions_later_trials_out_of_the_queue() {
        let mut s = schedule(&[1], &[], None);
        s.on(
            Event::Host {
                host: 0,
                state: CPUS_4,
            },
            Instant::now(),
        );
        let mut id = 0;
        let mut rows = Vec::new();
        for i in 1..=3 {
            for c in ["a2", "b2"] {
                id += 1;
                rows.push(row(id, "t", c, i));
            }
        }
        queue(&mut s, rows);
        // a2's trial 1 runs (one slot).
        assert_eq!(place(&mut s), vec![(1, 0)]);
        let d = s.on(
            Event::EarlyStop {
                condition: "a2".into(),
                keep: 1,
            },
            Instant::now(),
        );
        assert_eq!(
            d,
            vec![Decision::NotRun {
                condition: "a2".into(),
                ids: vec![3, 5]
            }]
        );
        assert_eq!(queued_ids(&s), vec![2, 4, 6]);
        // A later a2 trial queued again is turned away; b2's and a2's trial 1 are not.
        assert_eq!(
            s.on(Event::Queued(row(7, "t", "a2", 2)), Instant::now()),
            vec![Decision::NotRun {
                condition: "a2".into(),
                ids: vec![7]
            }]
        );
        assert!(
            s.on(Event::Queued(row(8, "u", "a2", 1)), Instant::now())
                .is_empty()
        );
        // The running a2 trial 1 ends with a provider failure's retry: within the stage, queued.
        let retry = Ended::Judged {
            provider: None,
            retry: Some(Box::new(row(9, "t", "a2", 1))),
        };
        assert!(end(&mut s, 1, retry).is_empty());
        assert_eq!(queued_ids(&s), vec![9, 2, 8, 4, 6]);
    }

    #[test]
    fn trials_start_trial_index_first_across_tasks_and_conditions() {
        let mut s = schedule(&[1], &[], None);
        s.on(
            Event::Host {
                host: 0,
                state: CPUS_4,
            },
            Instant::now(),
        );
        // Planned task by task (as plan_trials inserts them), fed in reverse.
        let mut planned = Vec::new();
        for task in ["b", "a"] {
            for condition in ["no-skills", "curated"] {
                for index in 1..=3 {
                    planned.push(row(planned.len() as i64 + 1, task, condition, index));
                }
            }
        }
        planned.reverse();
        queue(&mut s, planned);
        let mut order = Vec::new();
        while let [(id, _)] = place(&mut s)[..] {
            let r = s.running[&id].key.clone();
            order.push((r.trial_index, r.task_id, r.condition));
            end(&mut s, id, judged());
        }
        let mut expected = Vec::new();
        for index in 1..=3 {
            for task in ["a", "b"] {
                for condition in ["curated", "no-skills"] {
                    expected.push((index, task.to_string(), condition.to_string()));
                }
            }
        }
        assert_eq!(order, expected);
    }

    /// A trial queued again takes its own stage's place, not the back of the queue: the
    /// operator's retry of a finished trial 1 while stage 3 waits starts before stage 3 (stage
    /// 1 is complete again as soon as a slot frees); a retry of a trial 2 while trials 1 still
    /// wait starts after them (no retry starts a later stage early); a provider failure's
    /// automatic retry and an interrupted attempt do the same.
    #[test]
    fn a_trial_queued_again_takes_its_stages_place() {
        let mut s = schedule(&[1], &[], None);
        s.on(
            Event::Host {
                host: 0,
                state: CPUS_4,
            },
            Instant::now(),
        );
        queue(
            &mut s,
            [
                row(10, "a", "c", 3),
                row(11, "b", "c", 3),
                row(12, "c", "c", 3),
            ],
        );
        // The operator retries b's finished trial 1: the store made attempt 2 as row 20.
        let done = TrialRow {
            status: TrialStatus::Done,
            ..row(5, "b", "c", 1)
        };
        assert_eq!(
            s.on(Event::Retry(done), Instant::now()),
            vec![Decision::Requeue { id: 5 }]
        );
        queue(&mut s, [row(20, "b", "c", 1)]);
        assert_eq!(queued_ids(&s), vec![20, 10, 11, 12]);
        // A retry of a's trial 2 waits behind stage 1 and ahead of stage 3; so does c's trial 2,
        // retried after a rate limit.
        queue(&mut s, [row(21, "a", "c", 2)]);
        assert_eq!(place(&mut s), vec![(20, 0)]);
        let retry = row(22, "c", "c", 2);
        let rate_limited = Ended::Judged {
            provider: Some(ProviderFailureKind::RateLimit),
            retry: Some(Box::new(retry)),
        };
        assert!(
            end(&mut s, 20, rate_limited).is_empty(),
            "no provider limit"
        );
        assert_eq!(queued_ids(&s), vec![21, 22, 10, 11, 12]);
        // A trial 1 queued now (interrupted elsewhere, or retried) still goes first.
        queue(&mut s, [row(23, "z", "c", 1)]);
        assert_eq!(queued_ids(&s), vec![23, 21, 22, 10, 11, 12]);
    }

    /// A resume keeps the stage order: the store's queue of a run a stopped process left —
    /// trials in flight queued again as new attempts (new, larger row ids), one finished trial
    /// retried — starts trial index first, the re-queued trial 1s with the other trial 1s.
    #[tokio::test]
    async fn a_resume_keeps_the_stage_order() {
        use crate::domain::RunTaskRow;
        use crate::store::ledger::{Owner, RunLedger};
        use crate::store::queries::NewRun;
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open(&dir.path().join("s.db")).unwrap();
        let register = || {
            let new = NewRun {
                name: "r".into(),
                tasks_dir: "/t".into(),
                agent: "oracle".into(),
                model: None,
                n_trials: 3,
                conditions: vec!["no-skills".into(), "curated".into()],
                jobs_dir: "/j".into(),
                settings: serde_json::json!({}),
            };
            let tasks: Vec<RunTaskRow> = ["a", "b"]
                .iter()
                .map(|t| RunTaskRow {
                    task_id: t.to_string(),
                    domain: "d".into(),
                    difficulty: "easy".into(),
                    path: format!("/t/{t}"),
                    problems: Vec::new(),
                    digest: None,
                })
                .collect();
            let owner = Owner {
                pid: std::process::id(),
                host: "here".into(),
                stale_after_secs: 30,
            };
            RunLedger::register(
                &store,
                new,
                tasks,
                owner,
                crate::engine::trial_namer("r"),
                false,
            )
        };
        let ledger = register().await.unwrap();
        ledger.plan(vec!["b".into(), "a".into()]).await.unwrap();
        // The first process took the first trial 1s and was killed: they are queued again.
        let first = ledger.queued().await.unwrap();
        for t in &first[..3] {
            ledger.requeue(t.id).await.unwrap();
        }
        // Resumed by a second process.
        let ledger = register().await.unwrap();
        let queued = ledger.queued().await.unwrap();
        assert_eq!(queued.len(), 12);
        let mut s = schedule(&[1], &[], None);
        s.on(
            Event::Host {
                host: 0,
                state: CPUS_4,
            },
            Instant::now(),
        );
        // By row id, the re-queued attempts would come last.
        let mut by_id = queued.clone();
        by_id.sort_by_key(|r| r.id);
        queue(&mut s, by_id);
        let mut indices = Vec::new();
        while let [(id, _)] = place(&mut s)[..] {
            indices.push(s.running[&id].key.trial_index);
            end(&mut s, id, judged());
        }
        assert_eq!(indices, [[1; 4], [2; 4], [3; 4]].concat());
        // The store's own order is the same.
        let from_store: Vec<i64> = queued.iter().map(|r| r.id).collect();
        let mut s2 = schedule(&[1], &[], None);
        queue(&mut s2, queued);
        assert_eq!(queued_ids(&s2), from_store);
    }

    /// A stop empties the queue once (the first reason wins; an error stops without one);
    /// attempts it interrupts are queued again in the store for the resume but not here; the
    /// loop finishes when the last running attempt ends.
    #[test]
    fn a_stop_empties_the_queue_and_the_first_reason_wins() {
        let mut s = schedule(&[1], &[], None);
        let now = Instant::now();
        s.on(
            Event::Host {
                host: 0,
                state: CPUS_4,
            },
            now,
        );
        queue(&mut s, [row(1, "a", "c", 1), row(2, "b", "c", 1)]);
        assert_eq!(place(&mut s), vec![(1, 0)]);
        assert_eq!(
            s.on(Event::Stop(Some(StopReason::Operator)), now),
            vec![Decision::StopAll]
        );
        assert!(s.is_stopping());
        assert!(s.on(Event::Stop(None), now).is_empty());
        assert!(queued_ids(&s).is_empty());
        assert_eq!(s.next(false), Next::Continue, "an attempt still runs");
        assert_eq!(
            end(&mut s, 1, interrupted(None, true)),
            vec![Decision::Requeue { id: 1 }]
        );
        queue(&mut s, [row(3, "a", "c", 1)]);
        assert!(queued_ids(&s).is_empty(), "not queued here once stopping");
        assert!(place(&mut s).is_empty());
        assert_eq!(s.next(true), Next::Finish);
        assert_eq!(s.take_stop(), Some(StopReason::Operator));
        // An error first: stopping without a reason.
        let mut s = schedule(&[1], &[], None);
        assert_eq!(s.on(Event::Stop(None), now), vec![Decision::StopAll]);
        assert!(
            s.on(Event::Stop(Some(StopReason::Operator)), now)
                .is_empty()
        );
        assert_eq!(s.take_stop(), None);
    }

    /// When the budget refuses the head of the queue, nothing starts any more; once the
    /// running attempts end the run is to stop for the budget. Without trials left the loop
    /// finishes, unless a dashboard keeps it alive.
    #[test]
    fn the_budget_stops_new_starts_and_then_the_run() {
        let mut s = schedule(&[4], &[], None);
        s.on(
            Event::Host {
                host: 0,
                state: CPUS_4,
            },
            Instant::now(),
        );
        queue(&mut s, (1..=3).map(|i| row(i, &format!("t{i}"), "c", 1)));
        let mut allowed = 1;
        let d = s.place(&mut |_| {
            allowed -= 1;
            allowed >= 0
        });
        assert!(matches!(
            &d[..],
            [Decision::Start { .. }, Decision::BudgetReached]
        ));
        assert!(
            s.place(&mut |_| true).is_empty(),
            "no start after the budget"
        );
        assert_eq!(s.next(false), Next::Continue);
        end(&mut s, 1, judged());
        assert_eq!(s.next(false), Next::BudgetSpent);
        let mut s = schedule(&[1], &[], None);
        assert_eq!(s.next(true), Next::Continue, "kept alive for a dashboard");
        assert_eq!(s.next(false), Next::Finish);
        assert_eq!(
            s.wait_for_docker(Instant::now(), Duration::ZERO),
            Wait::Idle
        );
        s.on(Event::Stop(None), Instant::now());
        assert_eq!(s.next(true), Next::Finish);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Under any mix of hosts, task sizes, endings (verdicts, interruptions, provider
        /// retries), hosts going down and coming back and the provider limit moving: no trial
        /// starts while a trial earlier in the stage order waits (so the trials started are
        /// always every trial of the stages before the current one and part of it, but for
        /// those queued again); no host runs more than its slots or, with two trials or more,
        /// more than its CPUs and memory; and once hosts are up every trial ends with exactly
        /// one verdict and the loop finishes.
        #[test]
        fn trials_start_in_stage_order_within_capacity_and_each_gets_one_verdict(
            tasks in prop::collection::vec((1u8..=4, 0u64..=3), 1..5),
            n_conditions in 1usize..=3,
            n_trials in 1u32..=4,
            hosts in prop::collection::vec((1u8..=8, 1usize..=4, 0u64..=8), 1..=3),
            provider in prop::option::of(1usize..=6),
            steps in prop::collection::vec((0u8..8, any::<prop::sample::Index>()), 0..150),
        ) {
            let needs: Vec<(String, Need)> = tasks
                .iter()
                .enumerate()
                .map(|(i, (cpus, gib))| {
                    (format!("t{i}"), Need { cpus: f64::from(*cpus), memory_mb: gib * 1024 })
                })
                .collect();
            let slots: Vec<usize> = hosts.iter().map(|h| h.1).collect();
            let t0 = Instant::now();
            let mut s = Schedule::new(&slots, needs.iter().cloned().collect(), provider, t0);
            let mut now = t0;
            let state = |i: usize| up(f64::from(hosts[i].0), hosts[i].2 * 1024);
            for i in 0..hosts.len() {
                s.on(Event::Host { host: i, state: state(i) }, now);
            }
            let mut next_id = 0i64;
            let mut make = |key: &TrialKey, attempt: u32| {
                next_id += 1;
                TrialRow { attempt, ..row(next_id, &key.task_id, &key.condition, key.trial_index) }
            };
            let mut keys = Vec::new();
            for (task, _) in &needs {
                for c in 0..n_conditions {
                    for k in 1..=n_trials {
                        keys.push(TrialKey {
                            task_id: task.clone(),
                            condition: format!("c{c}"),
                            trial_index: k,
                        });
                    }
                }
            }
            // Queued task by task, as the store plans them; the schedule orders them.
            let planned: Vec<TrialRow> = keys.iter().map(|k| make(k, 1)).collect();
            for r in planned {
                s.on(Event::Queued(r), now);
            }
            let mut rows: HashMap<i64, TrialRow> = HashMap::new();
            let mut verdicts: HashMap<TrialKey, u32> = HashMap::new();
            let mut down = vec![false; hosts.len()];
            // Carries out decisions the way the dispatcher does, in the test's terms.
            fn carry(
                s: &mut Schedule,
                decisions: Vec<Decision>,
                rows: &mut HashMap<i64, TrialRow>,
                make: &mut dyn FnMut(&TrialKey, u32) -> TrialRow,
                now: Instant,
            ) -> Vec<i64> {
                let mut interrupts = Vec::new();
                for d in decisions {
                    match d {
                        Decision::Requeue { id } => {
                            let old = rows.remove(&id).expect("a known attempt");
                            let next = make(&old.key(), old.attempt + 1);
                            s.on(Event::Queued(next), now);
                        }
                        Decision::Interrupt { id, .. } => interrupts.push(id),
                        Decision::ProviderLimit { .. } | Decision::Sweep { .. } => {}
                        d => panic!("unexpected {d:?}"),
                    }
                }
                interrupts
            }
            let check = |s: &Schedule, started: &[TrialRow]| -> Result<(), TestCaseError> {
                for pair in started.windows(2) {
                    prop_assert!(stage_order(&pair[0]) < stage_order(&pair[1]));
                }
                if let (Some(last), Some(head)) = (started.last(), s.queue().next()) {
                    prop_assert!(
                        stage_order(last) < stage_order(head),
                        "{last:?} started before {head:?}"
                    );
                }
                for (i, h) in s.hosts.iter().enumerate() {
                    prop_assert!(h.in_use <= h.slots);
                    if h.in_use > 1 {
                        let cap = Capacity {
                            cpus: f64::from(hosts[i].0),
                            memory_mb: hosts[i].2 * 1024,
                        };
                        let fits = Need::default().fits(h.reserved, cap);
                        prop_assert!(fits, "host {i}: {:?}", h.reserved);
                    }
                }
                // A cut limit lets running sessions end; no new one starts above it.
                if let Some(limit) = s.provider_limit()
                    && !started.is_empty()
                {
                    prop_assert!(s.running.len() <= limit);
                }
                Ok(())
            };
            for (kind, pick) in steps {
                let started: Vec<TrialRow> = s
                    .place(&mut |_| true)
                    .into_iter()
                    .map(|d| match d {
                        Decision::Start { row, .. } => *row,
                        d => panic!("{d:?}"),
                    })
                    .collect();
                check(&s, &started)?;
                for r in started {
                    rows.insert(r.id, r);
                }
                let mut running: Vec<i64> = s.running.keys().copied().collect();
                running.sort_unstable();
                match kind {
                    0..=3 if !running.is_empty() => {
                        let id = *pick.get(&running);
                        *verdicts.entry(rows[&id].key()).or_default() += 1;
                        rows.remove(&id);
                        let d = s.on(Event::Ended { id, how: judged() }, now);
                        carry(&mut s, d, &mut rows, &mut make, now);
                    }
                    4 if !running.is_empty() => {
                        let id = *pick.get(&running);
                        let how = interrupted(Some(Fault::DaemonError), false);
                        let d = s.on(Event::Ended { id, how }, now);
                        carry(&mut s, d, &mut rows, &mut make, now);
                    }
                    5 if !running.is_empty() => {
                        let id = *pick.get(&running);
                        let old = rows.remove(&id).expect("running");
                        let retry = make(&old.key(), old.attempt + 1);
                        let how = Ended::Judged {
                            provider: Some(ProviderFailureKind::RateLimit),
                            retry: Some(Box::new(retry)),
                        };
                        let d = s.on(Event::Ended { id, how }, now);
                        carry(&mut s, d, &mut rows, &mut make, now);
                    }
                    6 => {
                        let i = pick.index(hosts.len());
                        down[i] = !down[i];
                        let st = if down[i] { HostState::Down { since: now } } else { state(i) };
                        let d = s.on(Event::Host { host: i, state: st }, now);
                        carry(&mut s, d, &mut rows, &mut make, now);
                    }
                    _ => {
                        now += Duration::from_secs(31);
                        let d = s.on(Event::Tick, now);
                        for id in carry(&mut s, d, &mut rows, &mut make, now) {
                            let how = interrupted(Some(Fault::DaemonUnreachable), false);
                            let d = s.on(Event::Ended { id, how }, now);
                            carry(&mut s, d, &mut rows, &mut make, now);
                        }
                    }
                }
            }
            // Every host answers again; every attempt from now on ends with its verdict.
            for i in 0..hosts.len() {
                let d = s.on(Event::Host { host: i, state: state(i) }, now);
                carry(&mut s, d, &mut rows, &mut make, now);
            }
            for _ in 0..10_000 {
                let started: Vec<TrialRow> = s
                    .place(&mut |_| true)
                    .into_iter()
                    .map(|d| match d {
                        Decision::Start { row, .. } => *row,
                        d => panic!("{d:?}"),
                    })
                    .collect();
                check(&s, &started)?;
                for r in started {
                    rows.insert(r.id, r);
                }
                let Some(&id) = s.running.keys().min() else { break };
                *verdicts.entry(rows[&id].key()).or_default() += 1;
                rows.remove(&id);
                let d = s.on(Event::Ended { id, how: judged() }, now);
                carry(&mut s, d, &mut rows, &mut make, now);
            }
            prop_assert_eq!(s.next(false), Next::Finish);
            prop_assert_eq!(verdicts.len(), keys.len());
            prop_assert!(verdicts.values().all(|n| *n == 1), "{verdicts:?}");
        }
    }
}
