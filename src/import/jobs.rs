//! `skillscope import`: Harbor job folders into the store.
//!
//! Folders are walked at any depth (sorted, symlinks not followed). Every `result.json` whose JSON
//! has `trial_name` and `task_name` is a trial (Harbor's `TrialResult`), wherever it sits — some
//! published jobs keep a trial's result directly in the job folder; a `result.json` with `stats` is
//! a job result and only counted. Each trial becomes an attempt of a run: one run per agent × model
//! (`harbor-<agent>-<model>`, or `--run`), the condition from the job or trial folder names or the
//! task path (`noskills` → no-skills, `skills` → curated; `--condition` overrides), trial indices
//! in walk order per task × condition. Trajectories (`agent/trajectory.json`, ATIF) give step and
//! tool-call counts, tokens when `agent_result` has none, and skill use; `verifier/ctrf.json`
//! gives test counts. Harbor's trial `id` (else the folder) is the import key: importing twice
//! adds nothing. Broken trials (truncated or foreign JSON) are reported and skipped; a missing
//! trajectory is reported and the trial kept (its skill use is then unknown).
//!
//! Harbor 0.26 trials (their `result.json` has `schema_version` or `reward_valid`) are judged by
//! 0.26's error-policy table ([`crate::harbor::error_policy`]): a trial whose reward is not
//! valid — no reward, or an exception whose policy voids it, the trial's or a step's — has no
//! verdict (a cancel, a provider error for the model API's names, else a runtime error), its
//! reward file ignored; one whose reward is valid is a pass or a fail by its reward (an agent
//! timeout when the agent timed out). Multi-step trials (`step_results`) are scored by their
//! trial-level reward (Harbor's aggregate over the steps), their exceptions, times and tokens
//! taken from the steps. Harbor 0.25 trials keep the mapping of [`outcome_of`]. The trial's
//! `lock.json`, when there is one, gives its task digest (`task.digest`).
//!
//! Parsing streams (one trial in memory at a time) while the store's writer commits the previous
//! batch, so memory stays flat whatever the number of trials.
//!
//! A root that is a file is one of the published SkillsBench result files instead — the per-trial
//! CSV or the website's results registry (see [`super::published`]); anything else is an error
//! naming it, raised before anything is imported.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::{
    ImportError, ImportOptions, ImportReport, condition_from, imported_task, run_conditions,
};
use crate::domain::{Outcome, RunRow, RunTaskRow, SkillUseRow, TrialRow, TrialStatus};
use crate::harbor::atif::{FinalMetrics, ToolCall, looks_failed};
use crate::harbor::ctrf::Report;
use crate::harbor::result::TimingInfo;
use crate::harbor::reward::{is_pass, scalar_reward};
use crate::harbor::skill_use::{self, SkillUse};
use crate::skillsbench::Catalog;
use crate::skillsbench::condition::sanitize_slug;
use crate::store::import_ledger::{ImportLedger, ImportTx};
use crate::store::queries::NewRun;
use crate::store::{Store, StoreError};

/// Most bytes read from one `result.json`.
const MAX_RESULT: u64 = 8 * 1024 * 1024;

/// Most bytes read from one trajectory.
const MAX_TRAJECTORY: u64 = 64 * 1024 * 1024;

#[derive(Debug, Deserialize)]
struct ResultFile {
    /// Harbor 0.26 writes it first (always 1); 0.25 does not.
    schema_version: Option<IgnoredAny>,
    /// Harbor 0.26's computed field (recomputed here, never trusted).
    reward_valid: Option<IgnoredAny>,
    step_results: Option<Vec<StepPart>>,
    id: Option<String>,
    task_name: Option<String>,
    trial_name: Option<String>,
    config: Option<ConfigPart>,
    agent_info: Option<AgentInfoPart>,
    agent_result: Option<AgentResultPart>,
    verifier_result: Option<VerifierPart>,
    exception_info: Option<ExceptionPart>,
    started_at: Option<String>,
    finished_at: Option<String>,
    environment_setup: Option<TimingInfo>,
    agent_execution: Option<TimingInfo>,
    verifier: Option<TimingInfo>,
    stats: Option<IgnoredAny>,
}

#[derive(Debug, Deserialize)]
struct ConfigPart {
    task: Option<TaskPart>,
    trials_dir: Option<String>,
    agent: Option<AgentConfigPart>,
}

#[derive(Debug, Deserialize)]
struct TaskPart {
    path: Option<String>,
}

#[derive(Debug, Deserialize)]
struct AgentConfigPart {
    name: Option<String>,
    model_name: Option<String>,
}

#[derive(Debug, Deserialize)]
struct AgentInfoPart {
    name: Option<String>,
    model_info: Option<ModelPart>,
}

#[derive(Debug, Deserialize)]
struct ModelPart {
    name: Option<String>,
}

#[derive(Debug, Deserialize)]
struct AgentResultPart {
    n_input_tokens: Option<i64>,
    n_cache_tokens: Option<i64>,
    n_output_tokens: Option<i64>,
    cost_usd: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct VerifierPart {
    rewards: Option<std::collections::BTreeMap<String, f64>>,
}

#[derive(Debug, Deserialize)]
struct ExceptionPart {
    exception_type: Option<String>,
    exception_message: Option<String>,
    policy_override: Option<crate::harbor::error_policy::ErrorPolicyOverride>,
}

/// One step of a multi-step trial (`StepResult`). Its `verifier_result` is not read: Harbor
/// scores the trial by the trial-level one it derives from the steps (`mean` or `final`).
#[derive(Debug, Deserialize)]
struct StepPart {
    agent_result: Option<AgentResultPart>,
    exception_info: Option<ExceptionPart>,
    agent_execution: Option<TimingInfo>,
    verifier: Option<TimingInfo>,
}

/// The part of a trial's `lock.json` the importer reads.
#[derive(Debug, Deserialize)]
struct LockPart {
    task: Option<LockTaskPart>,
}

#[derive(Debug, Deserialize)]
struct LockTaskPart {
    digest: Option<String>,
}

/// The task digest a trial folder's `lock.json` records, when it is a valid one.
fn lock_digest(trial_dir: &Path) -> Option<String> {
    let bytes = crate::fs::read_capped(&trial_dir.join("lock.json"), MAX_RESULT).ok()?;
    let lock: LockPart = serde_json::from_slice(&bytes).ok()?;
    lock.task?
        .digest
        .filter(|d| crate::skillsbench::digest::is_digest(d))
}

/// The parts of a trajectory the importer needs (messages and observations are skipped unread).
#[derive(Debug, Deserialize)]
struct LiteTrajectory {
    schema_version: String,
    steps: Vec<LiteStep>,
    final_metrics: Option<FinalMetrics>,
}

#[derive(Debug, Deserialize)]
struct LiteStep {
    step_id: u64,
    source: String,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCall>>,
    #[serde(default)]
    message: Option<crate::harbor::atif::Content>,
    #[serde(default)]
    observation: Option<crate::harbor::atif::Observation>,
}

/// One trial, parsed, ready to write.
#[derive(Debug)]
struct Parsed {
    /// The attempt to record: everything but its run and trial index, set when it is written.
    trial: TrialRow,
    run_name: String,
    task_path: String,
    skill_uses: Vec<SkillUse>,
    /// What its agent could see of skills, when skillscope wrote the trial folder
    /// (`agent/skill-exposure.json`; Harbor's own folders have none).
    exposure: Option<crate::skillsbench::exposure::SkillExposure>,
    /// The Harbor job folder holding the trial, and what the job planned.
    job: JobRef,
}

/// A trial's Harbor job: its folder (the trial folder's parent) and the job's plan, when its
/// `config.json` is a Harbor `JobConfig`.
#[derive(Debug, Clone)]
struct JobRef {
    dir: String,
    plan: Option<JobPlan>,
}

/// What a Harbor job planned (`JobConfig`: `n_attempts` trials of every task it lists in
/// `tasks[].path` or names in `datasets[].task_names`).
#[derive(Debug, Clone, PartialEq)]
pub struct JobPlan {
    /// `n_attempts` (Harbor's default 1).
    pub n_attempts: u32,
    /// Task names the job lists; `None` when it runs a dataset without naming its tasks (then
    /// only the tasks with trials are known).
    pub tasks: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
struct JobConfigPart {
    n_attempts: Option<u32>,
    trial_name: Option<IgnoredAny>,
    #[serde(default)]
    tasks: Vec<JobTaskPart>,
    #[serde(default)]
    datasets: Vec<JobDatasetPart>,
    job_name: Option<IgnoredAny>,
}

#[derive(Debug, Deserialize)]
struct JobTaskPart {
    path: Option<String>,
}

#[derive(Debug, Deserialize)]
struct JobDatasetPart {
    task_names: Option<Vec<String>>,
}

impl JobPlan {
    /// Reads a Harbor job's `config.json`; `None` when it is missing, unreadable or not a job
    /// config (a trial's `config.json` has `trial_name`).
    pub fn read(job_dir: &Path) -> Option<JobPlan> {
        let bytes = crate::fs::read_capped(&job_dir.join("config.json"), MAX_RESULT).ok()?;
        let c: JobConfigPart = serde_json::from_slice(&bytes).ok()?;
        if c.trial_name.is_some() || (c.job_name.is_none() && c.n_attempts.is_none()) {
            return None;
        }
        let mut names: Vec<String> = c
            .tasks
            .iter()
            .filter_map(|t| t.path.as_deref())
            .filter_map(|p| {
                Path::new(p.trim_end_matches('/'))
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            })
            .collect();
        let mut known = true;
        for d in &c.datasets {
            match &d.task_names {
                // Patterns (Harbor filters with fnmatch) do not say which tasks ran.
                Some(n) if n.iter().all(|x| !x.contains(['*', '?', '['])) => {
                    names.extend(n.iter().cloned())
                }
                _ => known = false,
            }
        }
        names.sort();
        names.dedup();
        Some(JobPlan {
            n_attempts: c.n_attempts.unwrap_or(1),
            tasks: known.then_some(names),
        })
    }
}

/// Harbor exception type → outcome (the verifier's reward decides when there is none).
pub fn outcome_of(exception: Option<&str>, reward: Option<f64>) -> Outcome {
    match exception {
        Some("AgentTimeoutError") => Outcome::AgentTimeout,
        Some("VerifierTimeoutError") => Outcome::VerifierTimeout,
        Some("RewardFileNotFoundError" | "RewardFileEmptyError" | "VerifierOutputParseError") => {
            Outcome::NoReward
        }
        Some(t)
            if t.contains("Build") || t.starts_with("EnvironmentStart") || t.contains("Image") =>
        {
            Outcome::BuildError
        }
        Some("CancelledError") => Outcome::Cancelled,
        // Harbor runs the verifier after a non-zero agent exit: the reward decides.
        Some("NonZeroAgentExitCodeError") | None => match reward {
            Some(r) if is_pass(r) => Outcome::Pass,
            Some(_) => Outcome::Fail,
            None => Outcome::NoReward,
        },
        Some(_) => Outcome::RuntimeError,
    }
}

/// RFC 3339 UTC for Harbor timestamps, which may lack an offset (then they are UTC).
pub fn normalize_time(s: &str) -> Option<String> {
    let fmt =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(fmt(t.with_timezone(&chrono::Utc)));
    }
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .iter()
        .find_map(|f| chrono::NaiveDateTime::parse_from_str(s, f).ok())
        .map(|n| fmt(n.and_utc()))
}

/// Reads one `result.json` as a Harbor trial: `None` (after counting a job result, or reporting
/// the file as broken) when it is not one.
fn parse_trial(
    root: &Path,
    result_path: &Path,
    opts: &ImportOptions,
    bytes: &[u8],
    report: &mut ImportReport,
    jobs: &mut HashMap<PathBuf, Option<JobPlan>>,
) -> Option<Parsed> {
    let (r, task_id, trial_name) = read_result(result_path, bytes, report)?;
    report.trials_seen += 1;
    let trial_dir = result_path.parent().unwrap_or(Path::new("."));
    // A folder of the trial planted as a link out of the imported folder would be read through
    // (and later by the dashboard and the learner): the trial is refused.
    for sub in ["agent", "verifier", "artifacts", "environment"] {
        if let Some(link) = crate::fs::link_leaving(root, &trial_dir.join(sub).join("x")) {
            report.broken.push((
                result_path.to_path_buf(),
                format!(
                    "{} is a link leading out of {}: the trial is not imported",
                    link.display(),
                    root.display()
                ),
            ));
            return None;
        }
    }
    let config = r.config.as_ref();
    let task_path = config
        .and_then(|c| c.task.as_ref())
        .and_then(|t| t.path.clone())
        .unwrap_or_default();
    let condition = condition_of(opts, &r, trial_dir, &task_path, report);
    let (agent, model) = agent_and_model(&r);
    let run_name = opts.run.clone().unwrap_or_else(|| {
        sanitize_slug(&format!(
            "harbor-{agent}-{}",
            model.as_deref().unwrap_or("no-model")
        ))
        .replace('/', "-")
    });
    let harbor_026 = r.schema_version.is_some() || r.reward_valid.is_some();
    let Verdict {
        outcome,
        reward,
        rewards,
        error,
    } = if harbor_026 {
        verdict_026(&r)
    } else {
        verdict_of(&r)
    };
    if harbor_026 && !outcome.is_verdict() && outcome != Outcome::Cancelled {
        report.without_valid_reward.push(trial_dir.to_path_buf());
    }
    if r.step_results.is_some() {
        report.multi_step += 1;
    }
    let [started, finished, b0, b1, a0, a1, v0, v1] = phase_times(&r);
    let stepped = step_tokens(&r);
    let tokens = r.agent_result.as_ref().or(stepped.as_ref());
    let mut trial = TrialRow {
        task_id,
        condition,
        attempt: 1,
        status: TrialStatus::Done,
        outcome: Some(outcome),
        reward,
        rewards: rewards.map(|r| serde_json::to_value(r).unwrap_or_default()),
        agent,
        model,
        trial_name,
        trial_dir: Some(trial_dir.display().to_string()),
        queued_at: started.clone().unwrap_or_else(crate::domain::now_rfc3339),
        started_at: started,
        finished_at: finished,
        build_started_at: b0,
        build_finished_at: b1,
        agent_started_at: a0,
        agent_finished_at: a1,
        verifier_started_at: v0,
        verifier_finished_at: v1,
        error,
        n_input_tokens: tokens.and_then(|a| a.n_input_tokens),
        n_cache_tokens: tokens.and_then(|a| a.n_cache_tokens),
        n_output_tokens: tokens.and_then(|a| a.n_output_tokens),
        cost_usd: tokens.and_then(|a| a.cost_usd),
        import_key: Some(
            r.id.clone()
                .unwrap_or_else(|| trial_dir.display().to_string()),
        ),
        task_digest: lock_digest(trial_dir),
        ..TrialRow::default()
    };
    let skill_uses = read_trajectory(trial_dir, &mut trial, report);
    if let Ok(c) = Report::read(&trial_dir.join("verifier/ctrf.json")) {
        trial.tests_total = Some(c.results.summary.tests as i64);
        trial.tests_passed = Some(c.results.summary.passed as i64);
    }
    // Harbor runs the verifier after a crashed agent (`NonZeroAgentExitCodeError`).
    let crashed = exception_type(&r) == Some("NonZeroAgentExitCodeError");
    // Only a verdict has a failure category.
    let crashed = crashed && outcome.is_verdict();
    trial.failure_category = crate::analysis::failure_category::classify_trial_dir(
        outcome,
        crashed.then_some(1),
        trial_dir,
        None,
    )
    .map(|c| c.as_str().to_string());
    Some(Parsed {
        trial,
        run_name,
        task_path,
        skill_uses,
        exposure: crate::fs::read_capped(
            &trial_dir.join(crate::skillsbench::exposure::TRIAL_EXPOSURE),
            MAX_TRAJECTORY,
        )
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok()),
        job: job_of(trial_dir, jobs),
    })
}

/// Decodes a `result.json`: the result with its task and trial names when it is a trial's. A
/// job's result is counted and `None`; anything else is reported as broken and `None`.
fn read_result(
    result_path: &Path,
    bytes: &[u8],
    report: &mut ImportReport,
) -> Option<(ResultFile, String, String)> {
    let r: ResultFile = match serde_json::from_slice(bytes) {
        Ok(r) => r,
        Err(e) => {
            report
                .broken
                .push((result_path.to_path_buf(), format!("not valid JSON: {e}")));
            return None;
        }
    };
    if r.stats.is_some() && r.trial_name.is_none() {
        report.jobs += 1;
        return None;
    }
    let (Some(task_id), Some(trial_name)) = (r.task_name.clone(), r.trial_name.clone()) else {
        report.broken.push((
            result_path.to_path_buf(),
            "not a Harbor trial result (no task_name/trial_name)".into(),
        ));
        return None;
    };
    Some((r, task_id, trial_name))
}

/// The trial's condition: `--condition`, else what the trials folder, job and trial folder
/// names or the task path say ([`condition_from`]), else `unknown` (counted in the report).
fn condition_of(
    opts: &ImportOptions,
    r: &ResultFile,
    trial_dir: &Path,
    task_path: &str,
    report: &mut ImportReport,
) -> String {
    if let Some(c) = &opts.condition {
        return c.clone();
    }
    let name = |p: Option<&Path>| {
        p.and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let job_dir_name = name(trial_dir.parent());
    let trial_dir_name = name(Some(trial_dir));
    let trials_dir = r
        .config
        .as_ref()
        .and_then(|c| c.trials_dir.clone())
        .unwrap_or_default();
    match condition_from(&[&trials_dir, &job_dir_name, &trial_dir_name, task_path]) {
        Some(c) => c.to_string(),
        None => {
            report.unknown_condition += 1;
            "unknown".to_string()
        }
    }
}

/// Agent and model: from `agent_info`, else from the trial's agent config; agent `unknown`
/// when neither names it.
fn agent_and_model(r: &ResultFile) -> (String, Option<String>) {
    let configured = r.config.as_ref().and_then(|c| c.agent.as_ref());
    let info = r.agent_info.as_ref();
    let agent = info
        .and_then(|a| a.name.clone())
        .or_else(|| configured.and_then(|a| a.name.clone()))
        .unwrap_or_else(|| "unknown".into());
    let model = info
        .and_then(|a| a.model_info.as_ref())
        .and_then(|m| m.name.clone())
        .or_else(|| configured.and_then(|a| a.model_name.clone()));
    (agent, model)
}

/// The type of the exception Harbor recorded, if any.
fn exception_type(r: &ResultFile) -> Option<&str> {
    r.exception_info
        .as_ref()
        .and_then(|e| e.exception_type.as_deref())
}

/// What a trial result says of its verdict.
struct Verdict {
    /// [`outcome_of`] the exception and reward.
    outcome: Outcome,
    /// The scalar reward.
    reward: Option<f64>,
    /// Every reward the verifier wrote.
    rewards: Option<BTreeMap<String, f64>>,
    /// The exception's first line, or what the reward says.
    error: Option<String>,
}

/// The verdict of a trial result.
fn verdict_of(r: &ResultFile) -> Verdict {
    let rewards = r.verifier_result.as_ref().and_then(|v| v.rewards.clone());
    let reward = rewards.as_ref().and_then(scalar_reward);
    let outcome = outcome_of(exception_type(r), reward);
    let error = match r.exception_info.as_ref() {
        Some(e) => Some(format!(
            "{}: {}",
            e.exception_type.as_deref().unwrap_or("exception"),
            e.exception_message
                .as_deref()
                .unwrap_or("")
                .lines()
                .next()
                .unwrap_or("")
        )),
        None if outcome == Outcome::Fail => {
            Some(format!("verifier reward {}", reward.unwrap_or(0.0)))
        }
        None if outcome == Outcome::NoReward => Some("no verifier result".into()),
        None => None,
    };
    Verdict {
        outcome,
        reward,
        rewards,
        error,
    }
}

/// The verdict of a Harbor 0.26 trial result, by 0.26's error policy: `reward_valid` (rewards,
/// and no recorded exception — the trial's, then each step's — whose policy voids them, overrides
/// applied) decides whether the trial has a verdict at all.
fn verdict_026(r: &ResultFile) -> Verdict {
    use crate::harbor::error_policy::{is_provider_failure, policy_for, reward_valid};
    let rewards = r.verifier_result.as_ref().and_then(|v| v.rewards.clone());
    let exceptions: Vec<&ExceptionPart> = r
        .exception_info
        .iter()
        .chain(
            r.step_results
                .iter()
                .flatten()
                .filter_map(|s| s.exception_info.as_ref()),
        )
        .collect();
    let name = |e: &ExceptionPart| {
        e.exception_type
            .clone()
            .unwrap_or_else(|| "Exception".into())
    };
    let policies: Vec<_> = exceptions
        .iter()
        .map(|e| policy_for(&name(e), e.policy_override.as_ref()))
        .collect();
    let has_rewards = rewards.as_ref().is_some_and(|r| !r.is_empty());
    let first_line = |e: &ExceptionPart| {
        format!(
            "{}: {}",
            name(e),
            e.exception_message
                .as_deref()
                .unwrap_or("")
                .lines()
                .next()
                .unwrap_or("")
        )
    };
    if reward_valid(has_rewards, &policies) {
        let reward = rewards.as_ref().and_then(scalar_reward);
        let timed_out = exceptions
            .iter()
            .any(|e| e.exception_type.as_deref() == Some("AgentTimeoutError"));
        let outcome = match reward {
            _ if timed_out => Outcome::AgentTimeout,
            Some(x) if is_pass(x) => Outcome::Pass,
            _ => Outcome::Fail,
        };
        let error = match exceptions.first() {
            Some(e) => Some(first_line(e)),
            None if outcome == Outcome::Fail => {
                Some(format!("verifier reward {}", reward.unwrap_or(0.0)))
            }
            None => None,
        };
        return Verdict {
            outcome,
            reward,
            rewards,
            error,
        };
    }
    // No valid reward: no verdict, whatever the reward file says.
    let voiding = exceptions
        .iter()
        .zip(&policies)
        .find(|(_, p)| !p.has_valid_reward)
        .map(|(e, _)| *e)
        .or(exceptions.first().copied());
    let said = match rewards.as_ref().and_then(scalar_reward) {
        Some(x) => format!("; its reward {x} does not count"),
        None => String::new(),
    };
    let (outcome, why) = match voiding {
        Some(e) if e.exception_type.as_deref() == Some("CancelledError") => {
            (Outcome::Cancelled, first_line(e))
        }
        Some(e) if is_provider_failure(&name(e)) => (Outcome::ProviderError, first_line(e)),
        Some(e) => (Outcome::RuntimeError, first_line(e)),
        None => (
            Outcome::RuntimeError,
            "no verifier result and no exception (verifier disabled or trial unfinished)".into(),
        ),
    };
    Verdict {
        outcome,
        reward: None,
        rewards: None,
        error: Some(format!(
            "{why} (Harbor 0.26 error policy: no valid reward{said})"
        )),
    }
}

/// The trial's times, RFC 3339 UTC: start and end, then start and end of environment setup,
/// agent execution and verifier. A multi-step trial's agent and verifier times span its steps
/// (the first step's start to the last step's end).
fn phase_times(r: &ResultFile) -> [Option<String>; 8] {
    let t = |o: &Option<String>| o.as_deref().and_then(normalize_time);
    let start = |o: &Option<TimingInfo>| o.as_ref().and_then(|x| t(&x.started_at));
    let end = |o: &Option<TimingInfo>| o.as_ref().and_then(|x| t(&x.finished_at));
    let steps = r.step_results.as_deref().unwrap_or(&[]);
    let span = |own: &Option<TimingInfo>, of: fn(&StepPart) -> &Option<TimingInfo>| {
        let first = start(own).or_else(|| steps.iter().find_map(|s| start(of(s))));
        let last = end(own).or_else(|| steps.iter().rev().find_map(|s| end(of(s))));
        (first, last)
    };
    let (a0, a1) = span(&r.agent_execution, |s| &s.agent_execution);
    let (v0, v1) = span(&r.verifier, |s| &s.verifier);
    [
        t(&r.started_at),
        t(&r.finished_at),
        start(&r.environment_setup),
        end(&r.environment_setup),
        a0,
        a1,
        v0,
        v1,
    ]
}

/// A multi-step trial's tokens and cost: the sum over its steps (each total unknown until a step
/// reports it); `None` for a single-step trial or steps that report none.
fn step_tokens(r: &ResultFile) -> Option<AgentResultPart> {
    let steps = r.step_results.as_deref()?;
    let sum_i = |f: fn(&AgentResultPart) -> Option<i64>| {
        steps
            .iter()
            .filter_map(|s| s.agent_result.as_ref().and_then(f))
            .reduce(|a, b| a + b)
    };
    let out = AgentResultPart {
        n_input_tokens: sum_i(|a| a.n_input_tokens),
        n_cache_tokens: sum_i(|a| a.n_cache_tokens),
        n_output_tokens: sum_i(|a| a.n_output_tokens),
        cost_usd: steps
            .iter()
            .filter_map(|s| s.agent_result.as_ref().and_then(|a| a.cost_usd))
            .reduce(|a, b| a + b),
    };
    (out.n_input_tokens.is_some() || out.n_output_tokens.is_some() || out.cost_usd.is_some())
        .then_some(out)
}

/// Reads the trial's ATIF trajectory (`agent/trajectory.json`) into `trial` — its path, steps,
/// tool calls, steps that look failed, whether it ends with a message, and its tokens when the
/// result had none — and returns the skills it used. A missing or non-ATIF trajectory is
/// reported; the trial is imported all the same, its skill use unknown.
fn read_trajectory(
    trial_dir: &Path,
    trial: &mut TrialRow,
    report: &mut ImportReport,
) -> Vec<SkillUse> {
    let traj_path = trial_dir.join("agent/trajectory.json");
    let Ok(bytes) = crate::fs::read_capped(&traj_path, MAX_TRAJECTORY) else {
        report.missing_trajectory.push(trial_dir.to_path_buf());
        return Vec::new();
    };
    let lt = match serde_json::from_slice::<LiteTrajectory>(&bytes) {
        Ok(lt) if lt.schema_version.starts_with("ATIF-v1.") => lt,
        // Not a broken file: a trial whose skill use is unknown.
        Ok(_) | Err(_) => {
            report.not_atif.push(trial_dir.to_path_buf());
            return Vec::new();
        }
    };
    let n_calls: usize = lt
        .steps
        .iter()
        .map(|s| s.tool_calls.as_ref().map_or(0, Vec::len))
        .sum();
    if trial.n_input_tokens.is_none()
        && trial.n_output_tokens.is_none()
        && let Some(f) = &lt.final_metrics
    {
        trial.n_input_tokens = f.total_prompt_tokens;
        trial.n_cache_tokens = f.total_cached_tokens;
        trial.n_output_tokens = f.total_completion_tokens;
        trial.cost_usd = f.total_cost_usd.or(trial.cost_usd);
    }
    let n_errors = lt
        .steps
        .iter()
        .filter(|s| {
            s.observation
                .as_ref()
                .is_some_and(|o| o.results.iter().any(|r| looks_failed(&r.text())))
        })
        .count();
    let final_message = lt
        .steps
        .iter()
        .rev()
        .find(|s| s.source == "agent")
        .is_some_and(|s| {
            s.message
                .as_ref()
                .is_some_and(|m| !m.text().trim().is_empty())
        });
    trial.trajectory_path = Some(traj_path.display().to_string());
    trial.n_steps = Some(lt.steps.len() as i64);
    trial.n_tool_calls = Some(n_calls as i64);
    trial.n_error_steps = Some(n_errors as i64);
    trial.final_message = Some(final_message);
    skill_use::detect_in(
        lt.steps.iter().map(|s| {
            (
                s.step_id,
                s.source.as_str(),
                s.tool_calls.as_deref().unwrap_or(&[]),
            )
        }),
        &[],
    )
}

/// The trial's Harbor job: the trial folder's parent and its plan (each job's `config.json`
/// read once).
fn job_of(trial_dir: &Path, jobs: &mut HashMap<PathBuf, Option<JobPlan>>) -> JobRef {
    let job_dir = trial_dir.parent().unwrap_or(Path::new(".")).to_path_buf();
    let plan = jobs
        .entry(job_dir.clone())
        .or_insert_with(|| JobPlan::read(&job_dir))
        .clone();
    JobRef {
        dir: job_dir.display().to_string(),
        plan,
    }
}

/// What the writer remembers between batches.
#[derive(Default)]
struct State {
    runs: HashMap<String, RunRow>,
    next_index: HashMap<(i64, String, String), u32>,
    tasks: HashSet<(i64, String)>,
    imported: usize,
    present: usize,
    touched: BTreeSet<i64>,
    /// Per job folder: its plan, and per (run, condition) the trials imported per task.
    jobs: HashMap<String, JobTrials>,
}

/// The trials of one job folder imported in this import.
#[derive(Default)]
struct JobTrials {
    plan: Option<JobPlan>,
    /// (run id, condition) → task → trials.
    seen: BTreeMap<(i64, String), BTreeMap<String, u32>>,
}

/// Writes one batch of parsed trials in one transaction: each trial not already imported goes
/// into its run (found or created on first use), its task into the run's task list, at the
/// next free trial index of its task and condition, with its skill uses and exposure.
fn write_batch(
    tx: &ImportTx<'_>,
    batch: Vec<Parsed>,
    state: &Mutex<State>,
    catalog: &Catalog,
    roots: &str,
) -> Result<(), StoreError> {
    let mut st = state.lock().expect("import state");
    for p in batch {
        let key = p.trial.import_key.as_deref().unwrap_or_default();
        if tx.is_imported(key)? {
            st.present += 1;
            continue;
        }
        let run = st.run(tx, &p, roots)?;
        if st.tasks.insert((run.id, p.trial.task_id.clone())) {
            tx.add_tasks(
                run.id,
                &[imported_task(catalog, &p.trial.task_id, &p.task_path)],
            )?;
        }
        let slot = (run.id, p.trial.task_id.clone(), p.trial.condition.clone());
        let next = match st.next_index.get(&slot) {
            Some(n) => *n,
            None => {
                tx.top_trial_index(run.id, &p.trial.task_id, &p.trial.condition)?
                    .unwrap_or(0)
                    + 1
            }
        };
        st.next_index.insert(slot, next + 1);
        let trial = TrialRow {
            run_id: run.id,
            trial_index: next,
            ..p.trial
        };
        let id = tx.insert_trial(&trial)?;
        let job = st.jobs.entry(p.job.dir.clone()).or_default();
        job.plan = p.job.plan.clone();
        *job.seen
            .entry((run.id, trial.condition.clone()))
            .or_default()
            .entry(trial.task_id.clone())
            .or_default() += 1;
        if !p.skill_uses.is_empty() {
            let rows: Vec<SkillUseRow> = p
                .skill_uses
                .iter()
                .map(|u| SkillUseRow {
                    skill: u.skill.clone(),
                    kind: u.kind.as_str().to_string(),
                    first_step: Some(u.first_step as i64),
                    count: u.count as i64,
                })
                .collect();
            tx.set_skill_uses(id, &rows)?;
        }
        if let Some(x) = &p.exposure {
            tx.set_exposure(id, x)?;
        }
        st.imported += 1;
        st.touched.insert(run.id);
    }
    Ok(())
}

impl State {
    /// The run trial `p` goes to: remembered, or found (it must have been imported from Harbor
    /// folders), or created.
    fn run(&mut self, tx: &ImportTx<'_>, p: &Parsed, roots: &str) -> Result<RunRow, StoreError> {
        if let Some(r) = self.runs.get(&p.run_name) {
            return Ok(r.clone());
        }
        let run = match tx.find_run(&p.run_name)? {
            Some(r) if r.source == "harbor-import" => r,
            Some(_) => {
                return Err(StoreError::Conflict(format!(
                    "run {:?} exists and was not imported; pass another --run name",
                    p.run_name
                )));
            }
            None => tx.create_run(
                &NewRun {
                    name: p.run_name.clone(),
                    tasks_dir: roots.to_string(),
                    agent: p.trial.agent.clone(),
                    model: p.trial.model.clone(),
                    n_trials: 0,
                    conditions: Vec::new(),
                    jobs_dir: roots.to_string(),
                    settings: serde_json::json!({"imported_from": roots}),
                },
                "harbor-import",
            )?,
        };
        self.runs.insert(p.run_name.clone(), run.clone());
        Ok(run)
    }
}

/// Records what each imported job planned ([`ImportTx::set_trial_plan`], the job folder as the
/// source): `n_attempts` trials of every task the job lists, for each run and condition its
/// trials went to (tasks it lists without a trial join the run's task list, so they count 0);
/// a job without a readable `JobConfig` planned the trials it holds. Never fewer than the trials
/// found.
fn write_job_plans(
    tx: &ImportTx<'_>,
    jobs: &HashMap<String, JobTrials>,
    catalog: &Catalog,
) -> Result<(), StoreError> {
    for (dir, job) in jobs {
        for ((run_id, condition), seen) in &job.seen {
            let mut planned: BTreeMap<&str, u32> = BTreeMap::new();
            if let Some(plan) = &job.plan {
                let listed: Vec<&str> = match &plan.tasks {
                    Some(t) => t.iter().map(String::as_str).collect(),
                    None => seen.keys().map(String::as_str).collect(),
                };
                for t in listed {
                    planned.insert(t, plan.n_attempts);
                }
            }
            for (t, n) in seen {
                let e = planned.entry(t.as_str()).or_default();
                *e = (*e).max(*n);
            }
            let known: HashSet<String> = tx
                .run_tasks(*run_id)?
                .into_iter()
                .map(|t| t.task_id)
                .collect();
            let missing: Vec<RunTaskRow> = planned
                .keys()
                .filter(|t| !known.contains(**t))
                .map(|t| imported_task(catalog, t, ""))
                .collect();
            tx.add_tasks(*run_id, &missing)?;
            for (t, n) in planned {
                tx.set_trial_plan(*run_id, dir, t, condition, n)?;
            }
        }
    }
    Ok(())
}

/// Brings every touched run's conditions and trial count up to date with its trials.
fn finish_runs(tx: &ImportTx<'_>, runs: &BTreeSet<i64>) -> Result<(), StoreError> {
    for &id in runs {
        tx.finish_harbor_run(id, &run_conditions(tx, id)?)?;
    }
    Ok(())
}

/// True when `path` lies in a Harbor job or trial folder below one of `roots`: some folder from
/// its own up to the root holds a `result.json` or `config.json` (logs, trajectories, verifier
/// output and job configs belong to the trial or job, not to the import).
fn in_harbor_folder(path: &Path, roots: &[PathBuf]) -> bool {
    let Some(root) = roots.iter().find(|r| path.starts_with(r)) else {
        return false;
    };
    path.ancestors()
        .skip(1)
        .take_while(|a| a.starts_with(root))
        .any(|a| a.join("result.json").is_file() || a.join("config.json").is_file())
}
/// Walks the Harbor job `folders`, parsing trials while the store's writer commits the previous
/// batch (at most two batches in flight), then writes the jobs' planned trials and finishes the
/// runs touched; counts go into `report`. Returns the files met that are neither a
/// `result.json` nor inside a Harbor folder ([`in_harbor_folder`]): published result files to
/// import, or files to name as skipped.
///
/// # Errors
/// [`ImportError`] when the store fails; broken trials are reported, not errors.
pub(super) fn import_folders(
    store: &Store,
    opts: &ImportOptions,
    folders: &[PathBuf],
    report: &mut ImportReport,
) -> Result<Vec<PathBuf>, ImportError> {
    let state = Arc::new(Mutex::new(State::default()));
    let roots_label = folders
        .iter()
        .map(|r| r.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let mut pending = Vec::new();
    let mut jobs: HashMap<PathBuf, Option<JobPlan>> = HashMap::new();
    let mut batch: Vec<Parsed> = Vec::with_capacity(opts.batch);
    let ledger = ImportLedger::new(store);
    let flush = |batch: Vec<Parsed>, pending: &mut Vec<_>| -> Result<(), ImportError> {
        let (state, catalog, roots) = (state.clone(), opts.catalog.clone(), roots_label.clone());
        pending.push(ledger.submit(move |tx| write_batch(tx, batch, &state, &catalog, &roots))?);
        // Keep at most two batches in flight: memory stays flat.
        while pending.len() > 2 {
            let rx: tokio::sync::oneshot::Receiver<Result<(), StoreError>> = pending.remove(0);
            rx.blocking_recv().map_err(|_| StoreError::WriterGone)??;
        }
        Ok(())
    };
    // Files in the folders that are not a trial's or job's result.json: published result files
    // to import, or files to name as skipped (what belongs to a Harbor folder is left alone).
    let mut loose: Vec<PathBuf> = Vec::new();
    for root in folders {
        let walker = walkdir::WalkDir::new(root)
            .follow_links(false)
            .sort_by_file_name();
        for entry in walker {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    report.broken.push((
                        e.path()
                            .map(Path::to_path_buf)
                            .unwrap_or_else(|| root.clone()),
                        e.to_string(),
                    ));
                    continue;
                }
            };
            if !entry.file_type().is_file() {
                continue;
            }
            if entry.file_name() != "result.json" {
                // Decided now, not after the walk: a Harbor folder's own files (a trajectory,
                // a reward, test output: five per trial) once piled up here, 11 MB of paths at
                // 20,000 trials.
                if !in_harbor_folder(entry.path(), folders) {
                    loose.push(entry.path().to_path_buf());
                }
                continue;
            }
            let path = entry.path();
            let bytes = match crate::fs::read_capped(path, MAX_RESULT) {
                Ok(b) => b,
                Err(e) => {
                    report.broken.push((path.to_path_buf(), e.to_string()));
                    continue;
                }
            };
            if let Some(p) = parse_trial(root, path, opts, &bytes, report, &mut jobs) {
                batch.push(p);
                if batch.len() >= opts.batch {
                    flush(std::mem::take(&mut batch), &mut pending)?;
                }
            }
        }
    }
    if !batch.is_empty() {
        flush(batch, &mut pending)?;
    }
    for rx in pending {
        rx.blocking_recv().map_err(|_| StoreError::WriterGone)??;
    }
    let (touched, jobs) = {
        let mut st = state.lock().expect("state");
        (st.touched.clone(), std::mem::take(&mut st.jobs))
    };
    if !touched.is_empty() {
        let catalog = opts.catalog.clone();
        ledger.write_blocking(move |tx| {
            write_job_plans(tx, &jobs, &catalog)?;
            finish_runs(tx, &touched)
        })?;
    }
    {
        let st = state.lock().expect("state");
        report.imported = st.imported;
        report.already_present = st.present;
        report.runs = st.runs.keys().cloned().collect();
    }
    Ok(loose)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_from_names() {
        assert_eq!(
            condition_from(&["gemini-cli-gemini3flash-noskills-3d-scan-calc-a2c944"]),
            Some("no-skills")
        );
        assert_eq!(
            condition_from(&["claude-code-claude-opus-4-5-skills-citation-check-229ca9"]),
            Some("curated")
        );
        assert_eq!(
            condition_from(&["/tmp/skillsbench_noskills_citation-check_x/citation-check"]),
            Some("no-skills")
        );
        assert_eq!(condition_from(&["run-without-skills"]), Some("no-skills"));
        assert_eq!(
            condition_from(&["", "jobs/2026-01-01__10-00", "x__abc"]),
            None
        );
        // Earlier hints win.
        assert_eq!(
            condition_from(&["with-skills", "noskills"]),
            Some("curated")
        );
        // The paper's self-generated runs: their tasks folder generates skills, whatever the
        // job folder says.
        assert_eq!(
            condition_from(&[
                "/x/yimin/ablation-noskills-haiku/terminus-2-claudehaiku4520-skills-3d-scan-calc-d50cb0",
                "terminus-2-claudehaiku4520-skills-3d-scan-calc-d50cb0",
                "3d-scan-calc__UvQYGNk",
                "/x/skillsbench/tasks_no_skills_generate/3d-scan-calc",
            ]),
            Some("self-generated")
        );
        assert_eq!(
            condition_from(&["gemini-selfgen-x"]),
            Some("self-generated")
        );
        assert_eq!(
            condition_from(&["run-self-generated-skills"]),
            Some("self-generated")
        );
        // "generate" alone (a task named for it) is not a condition.
        assert_eq!(condition_from(&["pdf-generate-report__x"]), None);
    }

    #[test]
    fn outcomes_from_exceptions() {
        assert_eq!(outcome_of(None, Some(1.0)), Outcome::Pass);
        assert_eq!(outcome_of(None, Some(0.5)), Outcome::Fail);
        assert_eq!(outcome_of(None, None), Outcome::NoReward);
        assert_eq!(
            outcome_of(Some("AgentTimeoutError"), Some(0.0)),
            Outcome::AgentTimeout
        );
        assert_eq!(
            outcome_of(Some("VerifierTimeoutError"), None),
            Outcome::VerifierTimeout
        );
        assert_eq!(
            outcome_of(Some("RewardFileNotFoundError"), None),
            Outcome::NoReward
        );
        assert_eq!(
            outcome_of(Some("NonZeroAgentExitCodeError"), Some(1.0)),
            Outcome::Pass
        );
        assert_eq!(
            outcome_of(Some("DockerBuildError"), None),
            Outcome::BuildError
        );
        assert_eq!(
            outcome_of(Some("EnvironmentStartTimeoutError"), None),
            Outcome::BuildError
        );
        assert_eq!(
            outcome_of(Some("RuntimeError"), None),
            Outcome::RuntimeError
        );
    }

    #[test]
    fn times_without_offset_are_utc() {
        assert_eq!(
            normalize_time("2026-01-26T02:12:06.752028").as_deref(),
            Some("2026-01-26T02:12:06.752Z")
        );
        assert_eq!(
            normalize_time("2026-01-25T21:36:02.073361Z").as_deref(),
            Some("2026-01-25T21:36:02.073Z")
        );
        assert_eq!(normalize_time("yesterday"), None);
    }
}
