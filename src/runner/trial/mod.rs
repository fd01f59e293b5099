//! One trial attempt from image to teardown, as Harbor's `trial.py` orders it: environment setup
//! (image build or reuse, a compose task's services, the agent's environment), agent run under
//! `[agent] timeout_sec`, verifier under `[verifier] timeout_sec` (it still runs after an agent
//! timeout), logs copied out, environments (and services) removed. Every failure becomes an
//! outcome; nothing here returns an error. The protocol is the same on every backend: it only
//! starts environments, runs execs and moves tar streams ([`crate::runner::backend`]).
//!
//! By phase: [`environment`] (image, what it holds, the site, the agent's environment),
//! [`agent`] (the agent's run, watched while it runs), [`generation`] (the skill-writing session
//! of a two-phase self-generated trial), [`evidence`] (what the attempt learned of skills:
//! exposure and trajectory), [`handover`] (every process of the agent ended, its logs copied
//! out, what it changed read by content; the verifier's environment started fresh from the
//! task's image and the agent's work carried in as data), [`verifier`] (tests, reward, the
//! evidence that must agree, verdict). This file holds what they share: the attempt's inputs,
//! its end, the secrets kept out of its folder, and how a failure is told.

mod agent;
mod changes;
mod environment;
mod evidence;
mod generation;
mod handover;
mod scripts;
mod tests_folder;
mod users;
mod verifier;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;

use super::agents::Agent;
use super::backend::{Host, Mount};
pub use super::events::Live;
use super::events::{Step, TrialEvent, TrialEvents};
use super::sandbox::Reaper;
use super::secrets::Secrets;
use crate::domain::{Outcome, SkillUseRow, TrialRow, now_rfc3339};
use crate::skillsbench::env::{EnvValues, MissingEnvPolicy};
use crate::skillsbench::exposure::SkillExposure;
use crate::skillsbench::{Condition, Task};
use environment::attempt;
use evidence::Evidence;

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
    /// The host this attempt runs on.
    pub host: Arc<dyn Host>,
    /// The agent.
    pub agent: Arc<dyn Agent>,
    /// Extra `KEY=VALUE` environment for containers (may hold secrets: never stored or logged).
    pub extra_env: Vec<String>,
    /// The operator's extra mounts (`--mount host:container[:ro]`).
    pub binds: Vec<Mount>,
    /// Removes finished trials' environments in the background.
    pub reaper: Arc<Reaper>,
    /// Treat a local host as a remote one: the agent's own read-only folders (the oracle's
    /// solution, a harness kit) are copied in instead of mounted. (`/logs` is always copied out
    /// through the backend: nothing of the trial folder is ever mounted.)
    pub copy_logs: bool,
    /// How often a running agent's output is looked at and reported ([`TrialEvent::Live`]).
    pub live_every: std::time::Duration,
    /// What to do when the task needs environment values nobody set.
    pub missing_env: MissingEnvPolicy,
}

/// Cancellation of one attempt: by the operator (outcome `cancelled`), by a stopping run
/// (outcome `interrupted`, re-queued) or because its host went down (outcome
/// `interrupted` with that fault, re-queued).
#[derive(Clone, Default)]
pub struct TrialCancel {
    /// Fires to stop the attempt.
    pub token: CancellationToken,
    /// Set before firing when the operator asked.
    pub by_operator: Arc<AtomicBool>,
    /// Set before firing when an infrastructure fault is the reason.
    pub fault: Arc<std::sync::Mutex<Option<(crate::runner::Fault, String)>>>,
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
    pub fn cancel_for_fault(&self, fault: crate::runner::Fault, why: &str) {
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
    pub fault: Option<crate::runner::Fault>,
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
    /// What the agent changed where a task's work never goes (`agent/tamper.json`), or how the
    /// verifier's evidence contradicted its reward, when anything was flagged: the attempt is
    /// then judged a failure of the agent.
    pub tamper: Option<crate::domain::TamperFlag>,
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
    let secrets = Arc::new(Secrets::of_env(&env.extra_env, &env.agent.secrets()));
    let scope = Scope {
        job,
        env,
        events,
        cancel,
        values: &values,
        secrets: &secrets,
    };
    scope
        .tell(TrialEvent::Started {
            at: now_rfc3339(),
            host: env.host.name().to_string(),
            trial_dir: job.trial_dir.clone(),
            agent_settings: env.agent.settings(),
        })
        .await;
    let result = attempt(&scope, &mut evidence).await;
    // Whatever reached the trial folder from a container, a secret never stays in it.
    if !secrets.is_empty() {
        let (s, d) = (secrets.clone(), job.trial_dir.clone());
        let _ = tokio::task::spawn_blocking(move || s.redact_tree(&d)).await;
    }
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
        tamper: evidence
            .contradiction
            .or_else(|| evidence.tamper.and_then(|t| t.flag())),
    }
}

type Done = (
    Outcome,
    Option<f64>,
    Option<serde_json::Value>,
    Option<String>,
);
/// Why an attempt ended without a verdict.
#[derive(Debug)]
struct Failed {
    outcome: Outcome,
    error: String,
    /// The infrastructure fault that cut the attempt off (outcome `interrupted`).
    fault: Option<crate::runner::Fault>,
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
    fn fault(fault: crate::runner::Fault, error: impl Into<String>) -> Failed {
        Failed {
            fault: Some(fault),
            ..Failed::new(Outcome::Interrupted, error)
        }
    }

    /// A runner error: an infrastructure fault when it is one (every Docker error, a full disk, a
    /// local file that cannot be written), else a runtime error of skillscope's (no verdict).
    fn runner(e: crate::runner::RunnerError, context: &str) -> Failed {
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
        Failed::runner(crate::runner::RunnerError::io(path, e), what)
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
    /// Redacted from everything the attempt writes into its folder.
    secrets: &'a Arc<Secrets>,
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

/// Writes the exact instruction the agent receives to `<agent_dir>/instruction.md`, so a reviewer
/// can see what each condition asked.
fn write_instruction(agent_dir: &std::path::Path, instruction: &str) -> Result<(), Failed> {
    let path = agent_dir.join("instruction.md");
    std::fs::create_dir_all(agent_dir)
        .and_then(|()| crate::fs::write_fresh(&path, instruction.as_bytes()))
        .map_err(|e| Failed::io("cannot write the instruction", &path, e))
}
