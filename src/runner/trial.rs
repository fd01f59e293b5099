//! One trial attempt from image to teardown, as Harbor's `trial.py` orders it: environment setup
//! (image build or reuse, a compose task's services, container start), agent run under `[agent]
//! timeout_sec`, verifier under `[verifier] timeout_sec` (it still runs after an agent timeout),
//! logs copied out, container (and services) removed. Every failure becomes an outcome; nothing
//! here returns an error.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;

use super::agents::{AGENT_LOGS, Agent, AgentContext};
use super::container::{ContainerSpec, ExecEnd, Reaper, TrialContainer};
pub use super::events::Live;
use super::events::{SessionTotals, Step, TrajectoryFacts, TrialEvent, TrialEvents};
use super::verifier;
use super::{DockerHost, ImageCache, labels, services};
use crate::harbor::reward::{self, is_pass, scalar_reward};
use crate::skillsbench::env::{self as task_env, EnvValues, MissingEnvPolicy};
use crate::skillsbench::exposure::SkillExposure;
use crate::skillsbench::selfgen::{GeneratedSkills, SelfGeneration, TRIAL_GENERATION_SESSION};
use crate::skillsbench::{Condition, Task};
use crate::store::{Outcome, SkillUseRow, TrialRow, now_rfc3339};

/// Writes the agent's ATIF trajectory to `agent/trajectory.json` and reports its counts, tokens
/// and cost; keeps the skills it used in `skill_uses`. Returns true when it was written. A
/// trajectory that cannot be written is left out: the trial's outcome never depends on it.
async fn record_trajectory(
    scope: &Scope<'_>,
    ctx: &AgentContext<'_>,
    run: &super::AgentRun,
    (started, finished): (&str, &str),
    skill_uses: &mut Vec<SkillUseRow>,
) -> bool {
    let Some(t) = scope.env.agent.trajectory(ctx, run, started, finished) else {
        return false;
    };
    let path = ctx.agent_dir.join("trajectory.json");
    let written = serde_json::to_vec_pretty(&t)
        .map_err(std::io::Error::other)
        .and_then(|bytes| {
            use std::io::Write;
            crate::safe_fs::create_fresh(&path).and_then(|mut f| f.write_all(&bytes))
        });
    if written.is_err() {
        return false;
    }
    let (input, cached, output, cost) = t.token_totals();
    let facts = TrajectoryFacts {
        path,
        steps: t.steps.len() as i64,
        tool_calls: t.tool_call_count() as i64,
        error_steps: t.error_step_count() as i64,
        final_message: t.ends_with_message(),
        totals: SessionTotals {
            input,
            cached,
            output,
            cost,
        },
    };
    scope.tell(TrialEvent::Trajectory(facts)).await;
    *skill_uses = crate::harbor::skill_use::detect(&t, &[])
        .into_iter()
        .map(|u| SkillUseRow {
            skill: u.skill,
            kind: u.kind.as_str().to_string(),
            first_step: Some(u.first_step as i64),
            count: u.count as i64,
        })
        .collect();
    true
}

/// What an attempt learned of skills, whatever its end: the skills its agent used (from its
/// trajectory) and what it could see when it started (read just before).
#[derive(Default)]
struct Evidence {
    skill_uses: Vec<SkillUseRow>,
    exposure: Option<SkillExposure>,
}

impl Evidence {
    /// Completes the exposure record with what the agent used — known when a trajectory was
    /// written (`traced`) by an agent whose trajectory records a model's choices, else unknown;
    /// `own`: skills the agent wrote (one-pass self-generation).
    fn conclude(
        &mut self,
        env: &TrialEnv,
        trial_dir: &std::path::Path,
        traced: bool,
        own: &[String],
    ) {
        let known = (traced && env.agent.reports_skill_use()).then_some(&self.skill_uses[..]);
        if let Some(x) = self.exposure.as_mut() {
            super::exposure::conclude(trial_dir, x, known, own);
        }
    }
}

/// Reads what the agent can see of skills, now, in its container ([`super::exposure`]), writes
/// `agent/skill-exposure.json` and keeps it in `evidence`; returns the names of the visible
/// skills that are not the harness's own.
async fn read_exposure(
    scope: &Scope<'_>,
    container: &TrialContainer,
    evidence: &mut Evidence,
) -> Result<Vec<String>, Failed> {
    let (job, env) = (scope.job, scope.env);
    let exposure = super::exposure::capture(
        container,
        super::exposure::ScanInput {
            task: &job.task,
            condition: &job.condition,
            trial_dir: &job.trial_dir,
            agent: env.agent.name(),
            builtins: env.agent.builtin_skills(),
        },
    )
    .await;
    super::exposure::write(&job.trial_dir, &exposure)
        .map_err(|e| Failed::runner(e, "recording the skill exposure"))?;
    let visible = exposure.condition_skill_names();
    evidence.exposure = Some(exposure);
    Ok(visible)
}

/// One attempt to run.
pub struct TrialJob {
    /// The attempt's row (status `queued`).
    pub row: TrialRow,
    /// Its task.
    pub task: Arc<Task>,
    /// Its condition.
    pub condition: Condition,
    /// Run name (container label).
    pub run_name: String,
    /// Run uid (container label used for cleanup).
    pub run_uid: String,
    /// The trial folder `<jobs>/<job>/<trial name>`.
    pub trial_dir: PathBuf,
}

/// What every trial of a run shares.
pub struct TrialEnv {
    /// The Docker host this attempt runs on.
    pub host: Arc<DockerHost>,
    /// Images.
    pub images: Arc<ImageCache>,
    /// The agent.
    pub agent: Arc<dyn Agent>,
    /// Extra `KEY=VALUE` environment for containers (may hold secrets: never stored or logged).
    pub extra_env: Vec<String>,
    /// Extra bind mounts `host:container[:ro]`.
    pub binds: Vec<String>,
    /// Removes finished containers in the background.
    pub reaper: Arc<Reaper>,
    /// Copy `/logs` out through the API even when the daemon is local (remote hosts always do).
    pub copy_logs: bool,
    /// How often a running agent's output is looked at and reported ([`TrialEvent::Live`]).
    pub live_every: std::time::Duration,
    /// What to do when the task needs environment values nobody set.
    pub missing_env: MissingEnvPolicy,
}

/// Cancellation of one attempt: by the operator (outcome `cancelled`), by a stopping run
/// (outcome `interrupted`, re-queued) or because its Docker host went down (outcome
/// `interrupted` with that fault, re-queued).
#[derive(Clone, Default)]
pub struct TrialCancel {
    /// Fires to stop the attempt.
    pub token: CancellationToken,
    /// Set before firing when the operator asked.
    pub by_operator: Arc<AtomicBool>,
    /// Set before firing when an infrastructure fault is the reason.
    pub fault: Arc<std::sync::Mutex<Option<(super::Fault, String)>>>,
}

impl TrialCancel {
    /// A cancel handle that also fires when `parent` does.
    pub fn child_of(parent: &CancellationToken) -> TrialCancel {
        TrialCancel {
            token: parent.child_token(),
            ..Default::default()
        }
    }

    /// Cancels on the operator's behalf.
    pub fn cancel_by_operator(&self) {
        self.by_operator.store(true, Ordering::SeqCst);
        self.token.cancel();
    }

    /// Cancels because of an infrastructure fault (the attempt's host went down).
    pub fn cancel_for_fault(&self, fault: super::Fault, why: &str) {
        *self.fault.lock().expect("lock") = Some((fault, why.to_string()));
        self.token.cancel();
    }

    /// Why the attempt stopped while `what` ("stopped while building", …).
    fn failed(&self, what: &str) -> Failed {
        if self.by_operator.load(Ordering::SeqCst) {
            return Failed::new(Outcome::Cancelled, what);
        }
        match self.fault.lock().expect("lock").clone() {
            Some((fault, why)) => Failed::fault(fault, format!("{what}: {why}")),
            None => Failed::new(Outcome::Interrupted, what),
        }
    }
}

/// How an attempt ended.
#[derive(Debug, Clone)]
pub struct TrialEnd {
    /// Its verdict (or why it has none).
    pub verdict: Verdict,
    /// Set when an infrastructure fault cut the attempt off (outcome
    /// [`Outcome::Interrupted`]): the trial is re-queued, never judged.
    pub fault: Option<super::Fault>,
    /// Set when this machine's own disk is full (the trial folder could not be written): the
    /// run should stop, naming the path.
    pub disk_full: Option<String>,
    /// Skills the agent used, from its trajectory.
    pub skill_uses: Vec<SkillUseRow>,
    /// What the agent could see of skills when it started (`None` when it never started), with
    /// what it used; also in the trial's `agent/skill-exposure.json`.
    pub exposure: Option<SkillExposure>,
    /// Set with outcome [`Outcome::ProviderError`]: what the model provider did.
    pub provider_failure: Option<crate::agent_logs::provider::ProviderFailure>,
}

/// An attempt's verdict: its outcome and what the verifier said.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// How it ended.
    pub outcome: Outcome,
    /// The scalar reward (`None`: no reward was written).
    pub reward: Option<f64>,
    /// Every reward the verifier wrote, JSON.
    pub rewards: Option<serde_json::Value>,
    /// What went wrong, one line (for a fault: `infrastructure fault (<kind>): …`).
    pub error: Option<String>,
    /// When the attempt ended, RFC 3339.
    pub finished_at: String,
}

/// Runs one attempt, reporting what happens to `events` as it goes.
pub async fn run_trial(
    job: &TrialJob,
    env: &TrialEnv,
    events: &dyn TrialEvents,
    cancel: &TrialCancel,
) -> TrialEnd {
    let mut evidence = Evidence::default();
    let values = EnvValues::new(&env.extra_env);
    let scope = Scope {
        job,
        env,
        events,
        cancel,
        values: &values,
    };
    scope
        .tell(TrialEvent::Started {
            at: now_rfc3339(),
            host: env.host.name.clone(),
            trial_dir: job.trial_dir.clone(),
            agent_settings: env.agent.settings(),
        })
        .await;
    let result = attempt(&scope, &mut evidence).await;
    let (mut disk_full, mut fault, mut provider_failure) = (None, None, None);
    let (outcome, reward, rewards, error) = match result {
        Ok(done) => done,
        Err(f) => {
            provider_failure = f.provider;
            if f.local_disk_full {
                disk_full = Some(f.error.clone());
            }
            fault = f.fault;
            let error = match f.fault {
                Some(k) => format!("infrastructure fault ({k}): {}", f.error),
                None => f.error,
            };
            (f.outcome, None, None, Some(error))
        }
    };
    TrialEnd {
        verdict: Verdict {
            outcome,
            reward,
            rewards,
            error,
            finished_at: now_rfc3339(),
        },
        fault,
        disk_full,
        skill_uses: evidence.skill_uses,
        exposure: evidence.exposure,
        provider_failure,
    }
}

type Done = (
    Outcome,
    Option<f64>,
    Option<serde_json::Value>,
    Option<String>,
);
/// Why an attempt ended without a verdict.
struct Failed {
    outcome: Outcome,
    error: String,
    /// The infrastructure fault that cut the attempt off (outcome `interrupted`).
    fault: Option<super::Fault>,
    /// This machine's own disk is full.
    local_disk_full: bool,
    provider: Option<crate::agent_logs::provider::ProviderFailure>,
}

impl Failed {
    fn new(outcome: Outcome, error: impl Into<String>) -> Failed {
        Failed {
            outcome,
            error: error.into(),
            fault: None,
            local_disk_full: false,
            provider: None,
        }
    }

    /// An infrastructure fault: the attempt is interrupted and the trial re-queued.
    fn fault(fault: super::Fault, error: impl Into<String>) -> Failed {
        Failed {
            fault: Some(fault),
            ..Failed::new(Outcome::Interrupted, error)
        }
    }

    /// A runner error: an infrastructure fault when it is one (every Docker error, a full disk, a
    /// local file that cannot be written), else a runtime error of skillscope's (no verdict).
    fn runner(e: super::RunnerError, context: &str) -> Failed {
        let error = if context.is_empty() {
            e.to_string()
        } else {
            format!("{context}: {e}")
        };
        match e.fault() {
            Some(k) => Failed {
                local_disk_full: e.is_disk_full(),
                ..Failed::fault(k, error)
            },
            None => Failed::new(Outcome::RuntimeError, error),
        }
    }

    fn io(what: &str, path: &std::path::Path, e: std::io::Error) -> Failed {
        Failed::runner(super::RunnerError::io(path, e), what)
    }
}

/// What an attempt runs with.
#[derive(Clone, Copy)]
struct Scope<'a> {
    job: &'a TrialJob,
    env: &'a TrialEnv,
    events: &'a dyn TrialEvents,
    cancel: &'a TrialCancel,
    /// The operator's values for the task's `${NAME}` references.
    values: &'a EnvValues,
}

impl Scope<'_> {
    /// Reports `event` of this attempt.
    async fn tell(&self, event: TrialEvent) {
        self.events.event(self.job.row.id, event).await;
    }

    /// Reports that `step` took the time since `t0`.
    async fn took(&self, step: Step, t0: std::time::Instant) {
        self.tell(TrialEvent::Step(step, t0.elapsed())).await;
    }
}

async fn attempt(scope: &Scope<'_>, evidence: &mut Evidence) -> Result<Done, Failed> {
    let Scope {
        job,
        env,
        cancel,
        values,
        ..
    } = *scope;
    let task = &job.task;
    let dir = &job.trial_dir;
    for sub in ["agent", "verifier", "environment"] {
        std::fs::create_dir_all(dir.join(sub))
            .map_err(|e| Failed::io("cannot create the trial folder", &dir.join(sub), e))?;
    }
    let build_log = dir.join("environment/build.log");
    if !task.is_runnable() {
        let msg = format!("task {} cannot run: {}", task.id, task.problems.join("; "));
        let _ = std::fs::write(&build_log, format!("{msg}\n"));
        return Err(Failed::new(Outcome::BuildError, msg));
    }
    // Values the task needs and nobody set: refused before anything is spent, or marked.
    let missing = task_env::missing(task, env.agent.runs_solution(), values);
    if !missing.is_empty() {
        scope
            .tell(TrialEvent::MissingEnv(
                missing.iter().map(|m| m.variable.clone()).collect(),
            ))
            .await;
        let what: Vec<String> = missing.iter().map(task_env::MissingEnv::describe).collect();
        if env.missing_env == MissingEnvPolicy::Allow {
            let _ = std::fs::write(
                dir.join("environment/missing-env.txt"),
                format!(
                    "run with --allow-missing-env: these values are empty in this trial: {}\n",
                    what.join("; ")
                ),
            );
        } else {
            let msg = format!(
                "refused: task {} needs environment values that are not set: {} (pass them with --env, or run with --allow-missing-env)",
                task.id,
                what.join("; ")
            );
            let _ = std::fs::write(&build_log, format!("{msg}\n"));
            return Err(Failed::new(Outcome::BuildError, msg));
        }
    }
    let t0 = std::time::Instant::now();
    let image = tokio::select! {
        r = env.images.ensure(&env.host, task, &job.condition, task.build_timeout()) => r,
        _ = cancel.token.cancelled() => return Err(cancel.failed("stopped while building")),
    };
    scope.took(Step::Image, t0).await;
    let image = match image {
        Ok(i) => {
            let _ = std::fs::write(&build_log, i.log.as_str());
            i
        }
        Err(e) => {
            let _ = std::fs::write(&build_log, e.log_text());
            return Err(match e.fault {
                Some(k) => Failed::fault(k, e.message),
                None => Failed::new(Outcome::BuildError, e.message),
            });
        }
    };
    scope
        .tell(TrialEvent::Image {
            tag: image.tag.clone(),
            builds: serde_json::to_value(&image.builds).ok(),
        })
        .await;
    // A local daemon writes /logs straight into the trial folder (as Harbor's compose file does);
    // a remote one is copied from after the verifier.
    let mount_logs = env.host.local && !env.copy_logs;
    let mut binds = env.binds.clone();
    if mount_logs {
        for sub in ["agent", "verifier", "artifacts"] {
            let host_dir = dir.join(sub);
            std::fs::create_dir_all(&host_dir)
                .map_err(|e| Failed::io("cannot create the log folder", &host_dir, e))?;
            binds.push(format!("{}:/logs/{sub}", host_dir.display()));
        }
        for (host, cont) in env.agent.local_mounts(task) {
            binds.push(format!("{}:{cont}:ro", host.display()));
        }
    }

    let t0 = std::time::Instant::now();
    let prepared = tokio::select! {
        r = env.agent.prepare(&env.host) => r,
        _ = cancel.token.cancelled() => return Err(cancel.failed("stopped while the agent was prepared")),
    };
    scope.took(Step::PrepareAgent, t0).await;
    binds.extend(
        prepared
            .map_err(|e| Failed::runner(e, &format!("preparing agent {}", env.agent.name())))?,
    );

    let env_cfg = &task.config.environment;
    // A request above the host's is cut to it, and the trial says so.
    let limits = super::limits::Limits::on(env_cfg, &env.host);
    scope.tell(TrialEvent::Clamped(limits.clamped())).await;
    let mut spec = ContainerSpec {
        image: image.tag.clone(),
        name: format!(
            "ss-{}-{}",
            crate::skillsbench::condition::docker_safe_name(&job.row.trial_name.replace("__", "-")),
            job.row.id
        ),
        labels: HashMap::from([
            (labels::MANAGED.to_string(), "1".to_string()),
            (labels::RUN.to_string(), job.run_name.clone()),
            (labels::RUN_UID.to_string(), job.run_uid.clone()),
            (labels::TRIAL.to_string(), job.row.trial_name.clone()),
            (labels::ATTEMPT_ID.to_string(), job.row.id.to_string()),
            (labels::CONTENT_HASH.to_string(), image.hash.clone()),
        ]),
        env: container_env(&env.extra_env, task, values),
        binds,
        cpus: limits.cpus,
        memory_bytes: limits.memory_mb.map(|m| (m as i64) * 1024 * 1024),
        network_none: !env_cfg.allow_internet,
        extra_hosts: env.agent.extra_hosts(),
        ..Default::default()
    };
    // A compose task's services start first (none for a task without a compose file).
    let service_input = services::ServicesInput {
        host: &env.host,
        images: &env.images,
        task,
        trial_dir: dir,
        env_values: values,
        main_image: &image.tag,
        cancel: &cancel.token,
    };
    let t0 = std::time::Instant::now();
    let services = services::start(&service_input, &mut spec).await;
    scope.took(Step::Services, t0).await;
    let services = services.map_err(|e| match e {
        services::ServiceError::Task(m) => Failed::new(Outcome::BuildError, m),
        services::ServiceError::Runner(e) => Failed::runner(e, "starting the task's services"),
        services::ServiceError::Cancelled => {
            cancel.failed("stopped while the task's services started")
        }
    })?;
    let mut times = super::container::StartTimes::default();
    let container = match TrialContainer::start_timed(&env.host.docker, &spec, &mut times).await {
        Ok(c) => c,
        Err(e) => {
            services.remove().await;
            return Err(Failed::runner(e, ""));
        }
    };
    scope
        .tell(TrialEvent::Step(Step::Create, times.create))
        .await;
    scope.tell(TrialEvent::Step(Step::Start, times.start)).await;
    scope
        .tell(TrialEvent::ContainerStarted {
            id: container.id.clone(),
        })
        .await;
    let verifier_files = image.verifier_files.clone();
    let result = in_container(
        scope,
        evidence,
        &container,
        mount_logs,
        verifier_files.as_deref(),
    )
    .await;
    services.reap(&env.reaper, container);
    result
}

/// The attempt in its started container: the agent (after a two-phase trial's skill-writing
/// session, with what it can see of skills read just before), then the verifier.
async fn in_container(
    scope: &Scope<'_>,
    evidence: &mut Evidence,
    container: &TrialContainer,
    mount_logs: bool,
    verifier_files: Option<&super::image::VerifierFiles>,
) -> Result<Done, Failed> {
    let Scope {
        job, env, cancel, ..
    } = *scope;
    let task = &job.task;
    let dir = &job.trial_dir;
    let agent_started = now_rfc3339();
    scope
        .tell(TrialEvent::AgentStarted {
            at: agent_started.clone(),
        })
        .await;

    let task_instruction = std::fs::read_to_string(task.instruction_path()).unwrap_or_default();
    let agent_dir = dir.join("agent");
    let generation = job.condition.self_generation();
    // Two-phase self-generation: a session of its own writes the skills first.
    let mut first_session = None;
    if let Some(g) = generation.filter(|g| g.two_phase) {
        let (record, totals) =
            skill_writing_session(scope, container, g, &task_instruction).await?;
        scope.tell(TrialEvent::GeneratedSkills(record)).await;
        first_session = Some(totals);
    }
    let instruction = match generation {
        Some(g) if !g.two_phase => g.generation_instruction(&task_instruction),
        _ => task_instruction,
    };
    write_instruction(&agent_dir, &instruction)?;
    let t0 = std::time::Instant::now();
    let visible = read_exposure(scope, container, evidence).await?;
    scope.took(Step::Exposure, t0).await;
    let ctx = AgentContext {
        container,
        host: &env.host,
        task,
        instruction: &instruction,
        agent_dir: &agent_dir,
        timeout: task.agent_timeout(),
        cancel: &cancel.token,
        mounted: mount_logs,
        logs: AGENT_LOGS,
        env_values: scope.values,
        skills: &visible,
    };
    let t0 = std::time::Instant::now();
    let run = run_agent(scope, &ctx, &agent_started).await;
    scope.took(Step::Agent, t0).await;
    tracing::debug!(trial = %job.row.trial_name, ms = t0.elapsed().as_millis() as u64, "agent done");
    let agent_finished = now_rfc3339();
    scope
        .tell(TrialEvent::AgentEnded {
            at: agent_finished.clone(),
        })
        .await;
    let run = match run {
        Ok(r) => r,
        Err(e) => {
            if !mount_logs {
                let _ = container.download_dir("/logs", dir).await;
            }
            return Err(Failed::runner(e, &format!("agent {}", env.agent.name())));
        }
    };
    scope.tell(TrialEvent::AgentExit(run.exit_code)).await;
    let times = (agent_started.as_str(), agent_finished.as_str());
    let traced = record_trajectory(scope, &ctx, &run, times, &mut evidence.skill_uses).await;
    evidence.conclude(env, dir, traced, &[]);
    if let Some(totals) = first_session {
        scope.tell(TrialEvent::ExtraSession(totals)).await;
    }
    if run.end == ExecEnd::Cancelled {
        if !mount_logs {
            let _ = container.download_dir("/logs", dir).await;
        }
        return Err(cancel.failed("stopped while the agent ran"));
    }
    if let Some(pf) = run.provider_failure {
        // The task was not fairly attempted: no verdict, no verifier.
        return Err(Failed {
            provider: Some(pf),
            ..Failed::new(Outcome::ProviderError, pf.describe())
        });
    }
    // One-pass self-generation: the skills the agent wrote (and used) are read out before the
    // verifier runs.
    if let Some(g) = generation.filter(|g| !g.two_phase) {
        let record = super::selfgen::capture(container, dir, g)
            .await
            .map_err(|e| Failed::runner(e, "copying the generated skills out"))?;
        // The skills the agent wrote are its own: its use of them counts.
        let own: Vec<String> = record.skills.iter().map(|s| s.dir_name.clone()).collect();
        scope.tell(TrialEvent::GeneratedSkills(record)).await;
        evidence.conclude(env, dir, traced, &own);
    }
    let agent_timed_out = run.end == ExecEnd::TimedOut;
    verify(
        scope,
        container,
        mount_logs,
        verifier_files,
        agent_timed_out,
    )
    .await
}

/// Runs the agent, reporting what it does every [`TrialEnv::live_every`] while it runs and once
/// more when it ends.
async fn run_agent(
    scope: &Scope<'_>,
    ctx: &AgentContext<'_>,
    started: &str,
) -> Result<super::AgentRun, super::RunnerError> {
    let env = scope.env;
    let agent_run = env.agent.run(ctx);
    tokio::pin!(agent_run);
    let mut watch = OutputWatch::new(ctx.agent_dir, started);
    let mut tick = tokio::time::interval(env.live_every.max(std::time::Duration::from_millis(100)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    let r = loop {
        tokio::select! {
            r = &mut agent_run => break r,
            _ = tick.tick() => {
                let live = watch.look(env, ctx.instruction).await;
                scope.tell(TrialEvent::Live(live)).await;
            }
        }
    };
    // One last look: what the agent wrote after the last tick (its final steps, tokens, and the
    // output that ends a stall) is recorded however busy the machine was.
    let live = watch.look(env, ctx.instruction).await;
    scope.tell(TrialEvent::Live(live)).await;
    r
}

/// The verifier after the agent (it still runs after an agent timeout): its copies of skills put
/// in place, its test run under `[verifier] timeout_sec`, `/logs` copied out when not mounted,
/// and the verdict from the reward it wrote.
async fn verify(
    scope: &Scope<'_>,
    container: &TrialContainer,
    mount_logs: bool,
    verifier_files: Option<&super::image::VerifierFiles>,
    agent_timed_out: bool,
) -> Result<Done, Failed> {
    let Scope { job, cancel, .. } = *scope;
    let task = &job.task;
    let dir = &job.trial_dir;
    scope
        .tell(TrialEvent::VerifierStarted { at: now_rfc3339() })
        .await;
    let verifier_dir = dir.join("verifier");
    // Files the container writes into a bind mount belong to the container's user; give them
    // back to the owner of the trial folder when that is not root.
    let chown = if mount_logs {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(dir)
            .ok()
            .map(|m| (m.uid(), m.gid()))
            .filter(|(u, _)| *u != 0)
    } else {
        None
    };
    // The verifier's own copies of skills arrive now, after the agent (never in its image).
    if let Some(v) = verifier_files {
        let t0 = std::time::Instant::now();
        v.install(container)
            .await
            .map_err(|e| Failed::runner(e, "giving the verifier its copies of skills"))?;
        scope.took(Step::Upload, t0).await;
    }
    let t0 = std::time::Instant::now();
    let verified = verifier::run_verifier(
        container,
        task,
        &verifier_dir,
        task.verifier_timeout(),
        &cancel.token,
        chown,
        scope.values,
    )
    .await;
    scope.took(Step::Verifier, t0).await;
    tracing::debug!(trial = %job.row.trial_name, ms = t0.elapsed().as_millis() as u64, "verifier done");
    let download = if mount_logs {
        Ok(0)
    } else {
        let t0 = std::time::Instant::now();
        let d = container.download_dir("/logs", dir).await;
        scope.took(Step::Download, t0).await;
        d
    };
    let verified = verified.map_err(|e| Failed::runner(e, ""));
    scope
        .tell(TrialEvent::VerifierEnded {
            at: now_rfc3339(),
            exit_code: verified.as_ref().ok().and_then(|v| v.exit_code),
        })
        .await;
    let verified = verified?;
    if let Ok(report) = crate::harbor::ctrf::Report::read(&verifier_dir.join("ctrf.json")) {
        scope
            .tell(TrialEvent::Tests {
                total: report.results.summary.tests as i64,
                passed: report.results.summary.passed as i64,
            })
            .await;
    }
    match verified.end {
        ExecEnd::Cancelled => {
            return Err(cancel.failed("stopped while the verifier ran"));
        }
        ExecEnd::TimedOut => {
            return Err(Failed::new(
                Outcome::VerifierTimeout,
                format!(
                    "verifier exceeded [verifier] timeout_sec = {:.0}s",
                    task.verifier_timeout().as_secs_f64()
                ),
            ));
        }
        ExecEnd::Exited => {}
    }
    if let Err(e) = download {
        return Err(Failed::runner(e, "copying /logs out"));
    }
    judge(container, task, &verifier_dir, agent_timed_out, mount_logs).await
}

/// The verdict from the reward the verifier wrote: pass at a passing reward, else fail; an agent
/// that timed out keeps that outcome whatever the reward (its reward is kept). A missing reward
/// is the infrastructure's fault when a disk was full or the container went away, else
/// `no-reward`.
async fn judge(
    container: &TrialContainer,
    task: &Task,
    verifier_dir: &std::path::Path,
    agent_timed_out: bool,
    mount_logs: bool,
) -> Result<Done, Failed> {
    let agent_timeout_note = || {
        format!(
            "agent exceeded [agent] timeout_sec = {:.0}s",
            task.agent_timeout().as_secs_f64()
        )
    };
    match reward::parse_rewards(verifier_dir) {
        Ok(rewards) => {
            let reward = scalar_reward(&rewards);
            let json = serde_json::to_value(&rewards).ok();
            let outcome = if agent_timed_out {
                Outcome::AgentTimeout
            } else if reward.is_some_and(is_pass) {
                Outcome::Pass
            } else {
                Outcome::Fail
            };
            let error = match outcome {
                Outcome::AgentTimeout => Some(agent_timeout_note()),
                Outcome::Fail => Some(format!("verifier reward {}", reward.unwrap_or(0.0))),
                _ => None,
            };
            Ok((outcome, reward, json, error))
        }
        Err(e) if agent_timed_out => Err(Failed::new(
            Outcome::AgentTimeout,
            format!("{}; {e}", agent_timeout_note()),
        )),
        Err(e) => match reward_fault(container, verifier_dir).await {
            // The test could not write its reward because a disk was full (or the container went
            // away): the infrastructure's failure, not a verdict.
            Some((k, why)) => Err(Failed {
                local_disk_full: k == super::Fault::DiskFull && mount_logs,
                ..Failed::fault(k, format!("{e}; {why}"))
            }),
            None => Err(Failed::new(Outcome::NoReward, e.to_string())),
        },
    }
}

/// The main container's environment: the operator's `--env` values, then the task's resolved
/// `[environment] env` (which wins for a name both set).
fn container_env(extra: &[String], task: &Task, values: &EnvValues) -> Vec<String> {
    let table = &task.config.environment.env;
    let mut out: Vec<String> = extra
        .iter()
        .filter(|e| {
            !e.split_once('=')
                .is_some_and(|(k, _)| table.contains_key(k))
        })
        .cloned()
        .collect();
    out.extend(values.resolve(table));
    out
}

/// Watches a running agent's `agent/` folder: when its files last grew, and what its log says.
struct OutputWatch {
    dir: PathBuf,
    started: String,
    size: u64,
    last_output_at: String,
    activity: Option<super::agents::Activity>,
}

impl OutputWatch {
    fn new(dir: &std::path::Path, started: &str) -> OutputWatch {
        OutputWatch {
            dir: dir.to_path_buf(),
            started: started.to_string(),
            size: 0,
            last_output_at: started.to_string(),
            activity: None,
        }
    }

    /// Bytes in the folder's regular files (not followed through symlinks).
    fn total_size(&self) -> u64 {
        std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.metadata().ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum()
    }

    /// What is known now: output time moves when the files grew, and the log is read again then.
    async fn look(&mut self, env: &TrialEnv, instruction: &str) -> Live {
        let size = self.total_size();
        if size != self.size {
            self.size = size;
            self.last_output_at = now_rfc3339();
            let (agent, dir, instruction, started) = (
                env.agent.clone(),
                self.dir.clone(),
                instruction.to_string(),
                self.started.clone(),
            );
            if let Ok(Some(a)) =
                tokio::task::spawn_blocking(move || agent.activity(&dir, &instruction, &started))
                    .await
            {
                self.activity = Some(a);
            }
        }
        Live {
            last_output_at: self.last_output_at.clone(),
            activity: self.activity.clone(),
        }
    }
}

/// Writes the exact instruction the agent receives to `<agent_dir>/instruction.md`, so a reviewer
/// can see what each condition asked.
fn write_instruction(agent_dir: &std::path::Path, instruction: &str) -> Result<(), Failed> {
    let path = agent_dir.join("instruction.md");
    std::fs::create_dir_all(agent_dir)
        .and_then(|()| std::fs::write(&path, instruction))
        .map_err(|e| Failed::io("cannot write the instruction", &path, e))
}

/// The container folder of the skill-writing session's logs (not the mounted `/logs/agent`: the
/// solving session must not find the first session's transcript there).
const GENERATION_LOGS: &str = "/tmp/skillscope-skill-generation";

/// The first session of `self-generated:two-phase`: the agent (with the skill creator, when
/// given, where it looks for skills) is asked only to write skills for the task; its logs,
/// instruction and trajectory go to the trial's `skill-generation/`. Then the skills are read
/// out and validated, and only the valid ones are installed where every harness looks (the skill
/// creator and the agent's own folder removed). A timed-out session still has its skills read.
async fn skill_writing_session(
    scope: &Scope<'_>,
    container: &TrialContainer,
    generation: &SelfGeneration,
    task_instruction: &str,
) -> Result<(GeneratedSkills, SessionTotals), Failed> {
    let Scope {
        job, env, cancel, ..
    } = *scope;
    let session_dir = job.trial_dir.join(TRIAL_GENERATION_SESSION);
    if let Some(creator) = &generation.skill_creator {
        super::selfgen::install_skill_creator(container, creator)
            .await
            .map_err(|e| Failed::runner(e, "installing the skill creator"))?;
    }
    let instruction = generation.generation_instruction(task_instruction);
    write_instruction(&session_dir, &instruction)?;
    let creator_name = [super::selfgen::SKILL_CREATOR_NAME.to_string()];
    let ctx = AgentContext {
        container,
        host: &env.host,
        task: &job.task,
        instruction: &instruction,
        agent_dir: &session_dir,
        timeout: job.task.agent_timeout(),
        cancel: &cancel.token,
        mounted: false,
        logs: GENERATION_LOGS,
        env_values: scope.values,
        // The operator's skill creator replaces a harness built-in of its name.
        skills: if generation.skill_creator.is_some() {
            &creator_name
        } else {
            &[]
        },
    };
    let started = now_rfc3339();
    let run = env.agent.run(&ctx).await.map_err(|e| {
        Failed::runner(
            e,
            &format!("agent {} (skill-writing session)", env.agent.name()),
        )
    })?;
    let finished = now_rfc3339();
    let mut totals = SessionTotals::default();
    if let Some(t) = env.agent.trajectory(&ctx, &run, &started, &finished) {
        let (input, cached, output, cost) = t.token_totals();
        totals = SessionTotals {
            input,
            cached,
            output,
            cost,
        };
        if let Ok(bytes) = serde_json::to_vec_pretty(&t) {
            let _ = std::fs::write(session_dir.join("trajectory.json"), bytes);
        }
    }
    if run.end == ExecEnd::Cancelled {
        return Err(cancel.failed("stopped while the agent wrote skills"));
    }
    if let Some(pf) = run.provider_failure {
        return Err(Failed {
            provider: Some(pf),
            ..Failed::new(
                Outcome::ProviderError,
                format!("skill-writing session: {}", pf.describe()),
            )
        });
    }
    let mut record = super::selfgen::capture(container, &job.trial_dir, generation)
        .await
        .map_err(|e| Failed::runner(e, "copying the generated skills out"))?;
    record.installed = super::selfgen::install_generated(container, &job.trial_dir, &record)
        .await
        .map_err(|e| Failed::runner(e, "installing the generated skills"))?;
    super::selfgen::write_record(&job.trial_dir, &record)
        .map_err(|e| Failed::runner(e, "recording the generated skills"))?;
    Ok((record, totals))
}

/// Most bytes of the verifier's output searched for a disk-full message.
const OUTPUT_TAIL: u64 = 64 * 1024;
/// Free space (KiB) at or below which the reward's filesystem counts as full.
const FULL_KIB: u64 = 64;

/// Why a verifier left no reward, when the reason is the infrastructure's: its output says a disk
/// was full, the filesystem holding `/logs/verifier` has (almost) no space left, or the container
/// cannot be asked any more. `None` when the task's test simply wrote no reward.
async fn reward_fault(
    container: &TrialContainer,
    verifier_dir: &std::path::Path,
) -> Option<(super::Fault, String)> {
    let out = verifier_dir.join("test-stdout.txt");
    if let Ok((tail, _)) = crate::safe_fs::read_tail(&out, OUTPUT_TAIL)
        && super::Fault::of_message(&String::from_utf8_lossy(&tail)) == Some(super::Fault::DiskFull)
    {
        return Some((
            super::Fault::DiskFull,
            "the verifier's output says a disk is full".into(),
        ));
    }
    match container
        .sh_output(
            "df -Pk /logs/verifier 2>/dev/null | tail -n 1",
            std::time::Duration::from_secs(30),
        )
        .await
    {
        Ok((_, line)) => {
            let avail = line
                .split_whitespace()
                .nth(3)
                .and_then(|v| v.parse::<u64>().ok());
            match avail {
                Some(kib) if kib <= FULL_KIB => Some((
                    super::Fault::DiskFull,
                    format!("the filesystem of /logs/verifier has {kib} KiB free"),
                )),
                _ => None,
            }
        }
        Err(e) => e
            .fault()
            .map(|k| (k, format!("the container could not be checked: {e}"))),
    }
}
