//! One attempt: its Harbor trial files, running it through the runner, recording its end, and
//! what follows a provider failure (retry after a back-off, or stop the run when the key or quota
//! is refused). Whether an interrupted attempt is queued again is the dispatcher's call.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use super::{Engine, EngineError, EngineEvent, RunRequest};
use crate::domain::{Outcome, TrialRow};
use crate::harbor::jobdir::{self, JobSpec, TrialFacts};
use crate::runner::backend::Mount;
use crate::runner::events::Live;
use crate::runner::sandbox::Reaper;
use crate::runner::{
    Agent, Fault, Host, Step, TrialCancel, TrialEnv, TrialEvent, TrialEvents, TrialJob, run_trial,
};
use crate::skillsbench::{Condition, Task, TaskSet};
use crate::store::{AttemptRecord, AttemptVerdict, LiveActivity, RunLedger, Tokens};

/// How long a host gets to answer a ping after an attempt on it met a fault.
const FAULT_PING: Duration = Duration::from_secs(5);
/// How often a running agent's output is looked at (less when the stall time is short).
const LIVE_EVERY: Duration = Duration::from_secs(5);

/// How an attempt ended, for the dispatcher.
#[derive(Debug, Clone)]
pub(super) struct AttemptEnd {
    /// The finished attempt.
    pub row: TrialRow,
    /// The attempt was interrupted (by a stop or an infrastructure fault): its trial has no
    /// verdict from it and should be queued again.
    pub interrupted: bool,
    /// The infrastructure fault that interrupted it.
    pub fault: Option<Fault>,
    /// After the fault, the host still answered (so the fault counts against the trial).
    pub host_answered: bool,
    /// The fault concerns the host's disk or image store, met before the agent ran: the host
    /// should get no new trials for a while.
    pub drain_host: bool,
    /// A provider failure's automatic retry, queued after its back-off.
    pub retry: Option<TrialRow>,
    /// The kind of provider failure that ended the attempt, if one did (the adaptive limit on
    /// concurrent agent sessions halves on a rate limit or an overload).
    pub provider: Option<crate::agent_logs::provider::ProviderFailureKind>,
}

/// What the engine follows of a running attempt.
#[derive(Debug, Clone)]
pub(super) struct Running {
    /// Its condition.
    pub condition: String,
    /// What it has cost so far, USD.
    pub cost_usd: f64,
    /// Marked stalled.
    pub stalled: bool,
    /// What it reported so far.
    pub record: AttemptRecord,
    /// Its `lock.json` as written at its start, and where: the image it runs is added once
    /// known (`None`: no lock was written).
    pub lock: Option<(std::path::PathBuf, crate::harbor::lock::TrialLock)>,
}

/// What every attempt of a run shares.
pub(super) struct Attempts {
    pub engine: Engine,
    pub ledger: RunLedger,
    pub tasks: HashMap<String, Arc<Task>>,
    pub conditions: HashMap<String, Condition>,
    pub jobs: JobSpec,
    pub agent: Arc<dyn Agent>,
    pub reaper: Arc<Reaper>,
    pub copy_logs: bool,
    pub extra_env: Vec<String>,
    pub binds: Vec<Mount>,
    pub settings_json: serde_json::Value,
    /// Provider-failure retries and back-off.
    pub retry: crate::config::HarnessSettings,
    pub checksums: Mutex<HashMap<String, String>>,
    /// How often a running agent's output is looked at.
    pub live_every: Duration,
    /// How long an agent may write nothing before it is marked stalled.
    pub stall_after: Duration,
    /// What happens to a task that needs environment values nobody set.
    pub missing_env: crate::skillsbench::env::MissingEnvPolicy,
    /// The attempts running now, by id.
    pub running: Mutex<HashMap<i64, Running>>,
}

#[async_trait]
impl TrialEvents for Attempts {
    /// Records what attempt `attempt_id` reported: facts are kept in its record, each new phase
    /// writes the record to the ledger (and tells the engine's subscribers), live activity is
    /// written as it comes and watched for stalls.
    async fn event(&self, attempt_id: i64, event: TrialEvent) {
        if let TrialEvent::Image { tag, .. } = &event {
            self.lock_image(attempt_id, tag);
        }
        let phase = match event {
            TrialEvent::Live(live) => return self.live(attempt_id, live).await,
            TrialEvent::Step(step, took) => {
                return self.engine.step(Some(attempt_id), step, took);
            }
            event => {
                let mut running = self.running.lock().expect("lock");
                let Some(r) = running.get_mut(&attempt_id) else {
                    return;
                };
                apply(&mut r.record, event)
                    .then(|| r.record.clone())
                    .and_then(|record| Some((record.status()?, record)))
            }
        };
        let Some((status, record)) = phase else {
            return;
        };
        let t0 = std::time::Instant::now();
        if let Err(e) = self.ledger.progress(attempt_id, &record).await {
            self.engine
                .notice("error", format!("recording trial progress: {e}"));
        }
        self.took_store(attempt_id, t0);
        self.engine
            .send(EngineEvent::TrialProgress { attempt_id, status });
    }
}

impl Attempts {
    /// Adds the image attempt `attempt_id` runs to its lock (`environment.kwargs.image`: a tag
    /// by build-context hash under Docker, `<registry>/<repo>@sha256:…` as pushed under
    /// Kubernetes) and rewrites its `lock.json`, so the lock names the exact image.
    fn lock_image(&self, attempt_id: i64, tag: &str) {
        let lock = {
            let mut running = self.running.lock().expect("lock");
            let Some((path, lock)) = running.get_mut(&attempt_id).and_then(|r| r.lock.as_mut())
            else {
                return;
            };
            lock.environment
                .kwargs
                .insert("image".into(), serde_json::Value::String(tag.to_string()));
            (path.clone(), lock.clone())
        };
        if let Err(e) = jobdir::write_lock(&lock.0, &lock.1) {
            self.engine
                .notice("error", format!("writing {}: {e}", lock.0.display()));
        }
    }
}

/// Keeps `event`'s fact in `record`; true when it began a new phase (the record is then
/// written).
fn apply(record: &mut AttemptRecord, event: TrialEvent) -> bool {
    match event {
        TrialEvent::Started {
            at,
            host,
            trial_dir,
            agent_settings,
        } => {
            record.started(&at, &host, &trial_dir, agent_settings);
            return true;
        }
        TrialEvent::MissingEnv(names) => record.missing_env(&names),
        TrialEvent::Image { tag, builds } => record.image(&tag, builds),
        TrialEvent::Clamped(c) => record.clamped(c),
        TrialEvent::ContainerStarted { id } => record.container(&id),
        TrialEvent::AgentStarted { at } => {
            record.agent_started(&at);
            return true;
        }
        TrialEvent::GeneratedSkills(g) => record.generated_skills(serde_json::to_value(&g).ok()),
        TrialEvent::AgentEnded { at } => record.agent_ended(&at),
        TrialEvent::AgentExit(code) => record.agent_exit(code),
        TrialEvent::Trajectory(t) => record.trajectory(
            &t.path,
            (t.steps, t.tool_calls, t.error_steps),
            t.final_message,
            tokens(t.totals),
        ),
        TrialEvent::ExtraSession(t) => record.add_session(tokens(t)),
        TrialEvent::VerifierStarted { at } => {
            record.verifier_started(&at);
            return true;
        }
        TrialEvent::VerifierEnded { at, exit_code } => record.verifier_ended(&at, exit_code),
        TrialEvent::Tests { total, passed } => record.tests(total, passed),
        TrialEvent::Live(_) | TrialEvent::Step(..) => {}
    }
    false
}

fn tokens(t: crate::runner::events::SessionTotals) -> Tokens {
    Tokens {
        input: t.input,
        cached: t.cached,
        output: t.output,
        cost: t.cost,
    }
}

impl Attempts {
    /// Tells the engine's subscribers how long a write of attempt `attempt_id` took.
    fn took_store(&self, attempt_id: i64, t0: std::time::Instant) {
        self.engine
            .step(Some(attempt_id), Step::Store, t0.elapsed());
    }

    /// Records what the running agent of `attempt_id` did so far, and marks it stalled (or no
    /// longer stalled) when its silence crosses `stall_after`.
    async fn live(&self, attempt_id: i64, live: Live) {
        let a = live.activity.clone().unwrap_or_default();
        let activity = LiveActivity {
            last_output_at: live.last_output_at.clone(),
            steps: live.activity.as_ref().map(|a| a.steps),
            tool: a.last_tool.clone(),
            tokens: Tokens {
                input: a.input_tokens,
                cached: a.cache_tokens,
                output: a.output_tokens,
                cost: a.cost_usd,
            },
        };
        let t0 = std::time::Instant::now();
        if let Err(e) = self.ledger.live(attempt_id, &activity).await {
            self.engine
                .notice("error", format!("recording trial activity: {e}"));
        }
        self.took_store(attempt_id, t0);
        let silent = chrono::DateTime::parse_from_rfc3339(&live.last_output_at)
            .map(|t| {
                (chrono::Utc::now() - t.with_timezone(&chrono::Utc))
                    .to_std()
                    .unwrap_or_default()
            })
            .unwrap_or_default();
        let stalled = silent >= self.stall_after;
        let (changed, name) = {
            let mut running = self.running.lock().expect("lock");
            match running.get_mut(&attempt_id) {
                Some(r) => {
                    r.cost_usd = r.cost_usd.max(a.cost_usd.unwrap_or(0.0));
                    let changed = r.stalled != stalled;
                    r.stalled = stalled;
                    (changed, r.condition.clone())
                }
                None => (false, String::new()),
            }
        };
        if !changed {
            return;
        }
        let trial = self
            .ledger
            .latest_of(attempt_id)
            .await
            .ok()
            .flatten()
            .map(|t| t.trial_name)
            .unwrap_or(name);
        let (since, level, message) = if stalled {
            (
                Some(crate::domain::now_rfc3339()),
                "warn",
                format!(
                    "{trial}: stalled — no agent output for {}s (it keeps running; [agent] timeout_sec decides)",
                    silent.as_secs()
                ),
            )
        } else {
            (
                None,
                "info",
                format!("{trial}: the agent writes output again"),
            )
        };
        let _ = self.ledger.stalled(attempt_id, since).await;
        self.engine.notice(level, message.clone());
        let _ = self.ledger.event(level, message).await;
    }
}

impl Attempts {
    /// What every attempt of `ledger`'s run shares: the request's tasks (of `taskset`),
    /// conditions and settings, `agent`, the Harbor job in `jobs_dir`, one image cache and one
    /// container reaper.
    pub fn new(
        engine: &Engine,
        req: &RunRequest,
        ledger: &RunLedger,
        taskset: TaskSet,
        agent: Arc<dyn Agent>,
        jobs_dir: PathBuf,
    ) -> Attempts {
        let run = ledger.run();
        let jobs = JobSpec {
            run: run.name.clone(),
            jobs_dir,
            agent: agent.name().to_string(),
            model: run.model.clone(),
            concurrency: req.settings.public_json()["concurrency"].clone(),
            task_paths: taskset.tasks.iter().map(|t| t.dir.clone()).collect(),
            n_trials: run.n_trials as u64,
            started_at: run.started_at.clone().unwrap_or(run.created_at.clone()),
        };
        Attempts {
            engine: engine.clone(),
            ledger: ledger.clone(),
            tasks: taskset
                .tasks
                .into_iter()
                .map(|t| (t.id.clone(), Arc::new(t)))
                .collect(),
            conditions: req
                .conditions
                .iter()
                .map(|c| (c.key(), c.clone()))
                .collect(),
            jobs,
            agent,
            reaper: Arc::new({
                let engine = engine.clone();
                Reaper::timed(Arc::new(move |took| {
                    engine.step(None, crate::runner::Step::Remove, took)
                }))
            }),
            copy_logs: req.settings.copy_logs,
            extra_env: req.settings.container_env(),
            binds: req
                .settings
                .mounts
                .iter()
                .filter_map(|m| Mount::parse_bind(m))
                .collect(),
            settings_json: req.settings.public_json(),
            retry: req.settings.harness.clone(),
            checksums: Mutex::new(HashMap::new()),
            live_every: LIVE_EVERY.min(req.settings.stall_after() / 3),
            stall_after: req.settings.stall_after(),
            missing_env: req.settings.missing_env,
            running: Mutex::new(HashMap::new()),
        }
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

    /// The skills `condition` gives the agent of `task`, with their digests (for the lock), off
    /// the async threads. A skill that cannot be read is left out and said.
    async fn skill_locks(
        &self,
        task: &Arc<Task>,
        condition: &Condition,
    ) -> Vec<crate::harbor::lock::SkillLock> {
        let Some(root) = condition.skills_root(&task.id, &task.dir) else {
            return Vec::new();
        };
        match tokio::task::spawn_blocking(move || crate::harbor::lock::skill_locks(&root)).await {
            Ok(Ok(locks)) => locks,
            Ok(Err(e)) => {
                self.engine.notice(
                    "warn",
                    format!("{}: skills left out of lock.json: {e}", task.id),
                );
                Vec::new()
            }
            Err(_) => Vec::new(),
        }
    }

    fn facts(&self, task: &Task, condition: &Condition, checksum: String) -> TrialFacts {
        let job_dir = self.jobs.job_dir(&condition.slug());
        let mut kwargs = BTreeMap::new();
        kwargs.insert("condition".into(), serde_json::json!(condition.key()));
        kwargs.insert("skillscope_settings".into(), self.settings_json.clone());
        TrialFacts {
            task_path: task.dir.clone(),
            task_checksum: checksum,
            agent_name: self.agent.name().to_string(),
            agent_version: self.agent.version().to_string(),
            model: self.ledger.run().model.clone(),
            job_id: jobdir::stable_uuid(&job_dir.display().to_string()),
            job_dir,
            cpus: task.config.environment.cpus,
            memory_mb: task.config.environment.memory_mb,
            kwargs,
            task_digest: task.digest.clone(),
            task_version: crate::harbor::lock::task_version(&task.dir),
            skills: Vec::new(),
        }
    }

    /// Runs one attempt on `host` and records it.
    ///
    /// # Errors
    /// Store failures, and what stops the run: this machine's disk full, a provider refusing
    /// the key or quota.
    pub async fn run_one(
        self: &Arc<Self>,
        row: TrialRow,
        host: Arc<dyn Host>,
        cancel: TrialCancel,
    ) -> Result<AttemptEnd, EngineError> {
        let id = row.id;
        let (Some(task), Some(condition)) = (
            self.tasks.get(&row.task_id).cloned(),
            self.conditions.get(&row.condition).cloned(),
        ) else {
            let why = format!(
                "task {} or condition {} is not part of this run's request",
                row.task_id, row.condition
            );
            let record = AttemptRecord::default().judged(AttemptVerdict {
                outcome: Outcome::RuntimeError,
                reward: None,
                rewards: None,
                error: Some(why),
                failure_category: None,
                fault: None,
                tamper: None,
                finished_at: crate::domain::now_rfc3339(),
            });
            let row = self.ledger.finish(id, record, Vec::new(), None).await?;
            return Ok(AttemptEnd::judged(row));
        };
        let checksum = self.checksum(&task).await;
        let mut facts = self.facts(&task, &condition, checksum);
        facts.skills = self.skill_locks(&task, &condition).await;
        let trial_dir = facts.job_dir.join(&row.trial_name);
        let _ = std::fs::create_dir_all(&trial_dir);
        // The config says what the container gets: a request above the host's is cut and marked.
        let planned = TrialRow {
            clamped: crate::runner::limits::Limits::on(&task.config.environment, host.capacity())
                .clamped(),
            ..row.clone()
        };
        // Harbor writes the lock first, at the trial's start: its resolved inputs.
        let mut lock = None;
        match jobdir::trial_lock(&planned, &facts) {
            Some(l) => {
                let path = trial_dir.join("lock.json");
                if let Err(e) = jobdir::write_lock(&path, &l) {
                    self.engine
                        .notice("error", format!("writing {}: {e}", path.display()));
                }
                lock = Some((path, l));
            }
            None => self.engine.notice(
                "warn",
                format!(
                    "{}: no lock.json (the task's digest could not be computed: {})",
                    planned.trial_name,
                    task.digest_error.as_deref().unwrap_or("unknown")
                ),
            ),
        }
        let _ = jobdir::write_json_atomic(
            &trial_dir.join("config.json"),
            &jobdir::trial_config(&planned, &facts),
        );
        let run = self.ledger.run();
        let job = TrialJob {
            row,
            task,
            condition,
            run_name: run.name.clone(),
            run_uid: run.uid.clone(),
            trial_dir: trial_dir.clone(),
        };
        let env = TrialEnv {
            host: host.clone(),
            agent: self.agent.clone(),
            extra_env: self.extra_env.clone(),
            binds: self.binds.clone(),
            reaper: self.reaper.clone(),
            copy_logs: self.copy_logs,
            live_every: self.live_every,
            missing_env: self.missing_env,
        };
        // The task's identity as Harbor 0.26 knows it, recorded with the attempt's first phase.
        let mut record = AttemptRecord::default();
        if let Some(d) = &job.task.digest {
            record.task_digest(d);
        }
        self.running.lock().expect("lock").insert(
            id,
            Running {
                condition: job.row.condition.clone(),
                cost_usd: 0.0,
                stalled: false,
                record,
                lock,
            },
        );
        let end = run_trial(&job, &env, self.as_ref(), &cancel).await;
        let record = self
            .running
            .lock()
            .expect("lock")
            .remove(&id)
            .map(|r| r.record)
            .unwrap_or_default();
        // A stall ends with the attempt.
        let _ = self.ledger.stalled(id, None).await;
        let outcome = Some(end.verdict.outcome);
        // The plan's failure category, from what the attempt left in its folder.
        let instruction = std::fs::read_to_string(job.task.instruction_path()).ok();
        let failure_category = crate::analysis::failure_category::classify_trial_dir(
            end.verdict.outcome,
            record.agent_exit_code(),
            &trial_dir,
            instruction.as_deref(),
        )
        .map(|c| c.as_str().to_string());
        let record = record.judged(AttemptVerdict {
            outcome: end.verdict.outcome,
            reward: end.verdict.reward,
            rewards: end.verdict.rewards.clone(),
            error: end.verdict.error.clone(),
            failure_category,
            fault: end.fault.map(|f| f.as_str().to_string()),
            tamper: end.tamper.clone(),
            finished_at: end.verdict.finished_at.clone(),
        });
        let stray = end.exposure.as_ref().map(|x| stray_note(x, &job.condition));
        let t0 = std::time::Instant::now();
        let row = self
            .ledger
            .finish(id, record, end.skill_uses, end.exposure)
            .await?;
        self.took_store(id, t0);
        if let Some(Some(note)) = stray {
            let message = format!("{}: {note}", row.trial_name);
            self.engine.notice("warn", message.clone());
            self.ledger.event("warn", message).await?;
        }
        if let Err(e) = jobdir::write_json_atomic(
            &trial_dir.join("result.json"),
            &jobdir::trial_result(&row, &facts, &trial_dir),
        ) {
            self.engine.notice(
                "error",
                format!("writing {}: {e}", trial_dir.join("result.json").display()),
            );
        }
        self.engine.send(EngineEvent::TrialDone {
            row: Box::new(row.clone()),
        });
        if let Some(what) = end.disk_full {
            return Err(EngineError::DiskFull(what));
        }
        if outcome == Some(Outcome::Interrupted) {
            let host_answered = match end.fault {
                Some(_) => tokio::time::timeout(FAULT_PING, host.ping())
                    .await
                    .is_ok_and(|r| r.is_ok()),
                None => true,
            };
            let drain_host = matches!(end.fault, Some(Fault::DiskFull | Fault::ImageStore))
                && row.agent_started_at.is_none();
            return Ok(AttemptEnd {
                interrupted: true,
                fault: end.fault,
                host_answered,
                drain_host,
                ..AttemptEnd::judged(row)
            });
        }
        match end.provider_failure {
            Some(pf) => {
                let retry = self.after_provider_failure(&row, pf, &cancel).await?;
                Ok(AttemptEnd {
                    retry,
                    provider: Some(pf.kind),
                    ..AttemptEnd::judged(row)
                })
            }
            None => Ok(AttemptEnd::judged(row)),
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
        pf: crate::agent_logs::provider::ProviderFailure,
        cancel: &TrialCancel,
    ) -> Result<Option<TrialRow>, EngineError> {
        let failures = self
            .ledger
            .attempts(row.key())
            .await?
            .iter()
            .filter(|a| a.outcome == Some(Outcome::ProviderError))
            .count() as u32;
        if !pf.kind.is_transient() {
            self.ledger.requeue(row.id).await?;
            return Err(EngineError::ProviderRefused(format!(
                "{} on {}",
                pf.describe(),
                row.trial_name
            )));
        }
        let limit = self.retry.provider_retries;
        if failures > limit {
            let message = format!(
                "{}: {} — {limit} automatic retries used up; retry it by hand",
                row.trial_name,
                pf.describe()
            );
            self.engine.notice("warn", message.clone());
            self.ledger.event("warn", message).await?;
            return Ok(None);
        }
        let wait = self.retry.backoff(failures);
        let message = format!(
            "{}: {} — retry {failures} of {limit} in {}s",
            row.trial_name,
            pf.describe(),
            wait.as_secs()
        );
        self.engine.notice("warn", message.clone());
        self.ledger.event("warn", message).await?;
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = cancel.token.cancelled() => {}
        }
        Ok(Some(self.ledger.requeue(row.id).await?))
    }

    /// Writes each job's `config.json` and `result.json` (Harbor's job files).
    pub async fn write_job_files(&self, at_end: bool) {
        let Ok(trials) = self.ledger.current_trials().await else {
            return;
        };
        let conditions: Vec<(String, String)> = self
            .conditions
            .values()
            .map(|c| (c.key(), c.slug()))
            .collect();
        for failure in self.jobs.write(&conditions, &trials, at_end) {
            self.engine.notice("error", failure);
        }
    }
}

/// What a trial's agent saw of skills that its condition should not have shown it, in one
/// sentence; `None` when nothing.
fn stray_note(x: &crate::skillsbench::exposure::SkillExposure, c: &Condition) -> Option<String> {
    let stray = x.stray(c.has_skills());
    if stray.is_empty() {
        return None;
    }
    let names: Vec<String> = stray
        .iter()
        .map(|s| format!("{} ({}, {})", s.dir, s.origin.as_str(), s.path))
        .collect();
    Some(format!(
        "its agent could see {} skill(s) the condition {} should not show it: {}",
        stray.len(),
        c.label(),
        crate::sanitize::text(&names.join(", "))
    ))
}

impl AttemptEnd {
    /// An attempt that ended with its outcome recorded and nothing more to do.
    fn judged(row: TrialRow) -> AttemptEnd {
        AttemptEnd {
            row,
            interrupted: false,
            fault: None,
            host_answered: true,
            drain_host: false,
            retry: None,
            provider: None,
        }
    }
}
