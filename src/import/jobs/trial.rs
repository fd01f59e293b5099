//! One trial of a Harbor job folder: its `result.json` read (Harbor 0.25 and 0.26, multi-step
//! trials, the error-policy table), its condition, agent and model, its phases' times, its
//! trajectory's counts and skill use, its `lock.json` digest — everything [`super`] writes.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::super::{ImportOptions, ImportReport, condition_from};
use super::{JobPlan, JobRef, MAX_RESULT, MAX_TRAJECTORY, job_of};
use crate::domain::{Outcome, TrialRow, TrialStatus};
use crate::harbor::atif::{FinalMetrics, ToolCall, looks_failed};
use crate::harbor::ctrf::Report;
use crate::harbor::result::TimingInfo;
use crate::harbor::reward::{is_pass, scalar_reward};
use crate::harbor::skill_use::{self, SkillUse};
use crate::skillsbench::condition::sanitize_slug;

#[derive(Debug, Deserialize)]
pub(super) struct ResultFile {
    /// Harbor 0.26 writes it first (always 1); 0.25 does not.
    pub(super) schema_version: Option<IgnoredAny>,
    /// Harbor 0.26's computed field (recomputed here, never trusted).
    pub(super) reward_valid: Option<IgnoredAny>,
    pub(super) step_results: Option<Vec<StepPart>>,
    pub(super) id: Option<String>,
    pub(super) task_name: Option<String>,
    pub(super) trial_name: Option<String>,
    pub(super) config: Option<ConfigPart>,
    pub(super) agent_info: Option<AgentInfoPart>,
    pub(super) agent_result: Option<AgentResultPart>,
    pub(super) verifier_result: Option<VerifierPart>,
    pub(super) exception_info: Option<ExceptionPart>,
    pub(super) started_at: Option<String>,
    pub(super) finished_at: Option<String>,
    pub(super) environment_setup: Option<TimingInfo>,
    pub(super) agent_execution: Option<TimingInfo>,
    pub(super) verifier: Option<TimingInfo>,
    pub(super) stats: Option<IgnoredAny>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ConfigPart {
    pub(super) task: Option<TaskPart>,
    pub(super) trials_dir: Option<String>,
    pub(super) agent: Option<AgentConfigPart>,
    /// Read loosely: only `kwargs.condition` (skillscope's condition key) is looked at.
    pub(super) environment: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
pub(super) struct TaskPart {
    pub(super) path: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct AgentConfigPart {
    pub(super) name: Option<String>,
    pub(super) model_name: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct AgentInfoPart {
    pub(super) name: Option<String>,
    pub(super) model_info: Option<ModelPart>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ModelPart {
    pub(super) name: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct AgentResultPart {
    pub(super) n_input_tokens: Option<i64>,
    pub(super) n_cache_tokens: Option<i64>,
    pub(super) n_output_tokens: Option<i64>,
    pub(super) cost_usd: Option<f64>,
}

#[derive(Debug, Deserialize)]
pub(super) struct VerifierPart {
    pub(super) rewards: Option<std::collections::BTreeMap<String, f64>>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ExceptionPart {
    pub(super) exception_type: Option<String>,
    pub(super) exception_message: Option<String>,
    pub(super) policy_override: Option<crate::harbor::error_policy::ErrorPolicyOverride>,
}

/// One step of a multi-step trial (`StepResult`). Its `verifier_result` is not read: Harbor
/// scores the trial by the trial-level one it derives from the steps (`mean` or `final`).
#[derive(Debug, Deserialize)]
pub(super) struct StepPart {
    pub(super) agent_result: Option<AgentResultPart>,
    pub(super) exception_info: Option<ExceptionPart>,
    pub(super) agent_execution: Option<TimingInfo>,
    pub(super) verifier: Option<TimingInfo>,
}

/// The part of a trial's `lock.json` the importer reads.
#[derive(Debug, Deserialize)]
pub(super) struct LockPart {
    pub(super) task: Option<LockTaskPart>,
}

#[derive(Debug, Deserialize)]
pub(super) struct LockTaskPart {
    pub(super) digest: Option<String>,
}

/// The task digest a trial folder's `lock.json` records, when it is a valid one.
pub(super) fn lock_digest(trial_dir: &Path) -> Option<String> {
    let bytes = crate::fs::read_capped(&trial_dir.join("lock.json"), MAX_RESULT).ok()?;
    let lock: LockPart = serde_json::from_slice(&bytes).ok()?;
    lock.task?
        .digest
        .filter(|d| crate::skillsbench::digest::is_digest(d))
}

/// The parts of a trajectory the importer needs (messages and observations are skipped unread).
#[derive(Debug, Deserialize)]
pub(super) struct LiteTrajectory {
    pub(super) schema_version: String,
    pub(super) steps: Vec<LiteStep>,
    pub(super) final_metrics: Option<FinalMetrics>,
}

#[derive(Debug, Deserialize)]
pub(super) struct LiteStep {
    pub(super) step_id: u64,
    pub(super) source: String,
    #[serde(default)]
    pub(super) tool_calls: Option<Vec<ToolCall>>,
    #[serde(default)]
    pub(super) message: Option<crate::harbor::atif::Content>,
    #[serde(default)]
    pub(super) observation: Option<crate::harbor::atif::Observation>,
}

/// One trial, parsed, ready to write.
#[derive(Debug)]
pub(super) struct Parsed {
    /// The attempt to record: everything but its run and trial index, set when it is written.
    pub(super) trial: TrialRow,
    pub(super) run_name: String,
    pub(super) task_path: String,
    pub(super) skill_uses: Vec<SkillUse>,
    /// What its agent could see of skills, when skillscope wrote the trial folder
    /// (`agent/skill-exposure.json`; Harbor's own folders have none).
    pub(super) exposure: Option<crate::skillsbench::exposure::SkillExposure>,
    /// The Harbor job folder holding the trial, and what the job planned.
    pub(super) job: JobRef,
    /// Which attempt of which trial it is, when skillscope wrote the folder
    /// ([`super::attempts`]); `None` for Harbor's own folders.
    pub(super) origin: Option<super::attempts::Origin>,
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
pub(super) fn parse_trial(
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
    let job = job_of(trial_dir, jobs);
    let origin = skillscope_origin(&r, &trial, job.plan.as_ref().map(|p| p.n_attempts));
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
        job,
        origin,
    })
}

/// The trial index and attempt of a trial folder skillscope wrote ([`super::attempts`]).
fn skillscope_origin(
    r: &ResultFile,
    trial: &TrialRow,
    n_trials: Option<u32>,
) -> Option<super::attempts::Origin> {
    let config = r.config.as_ref()?;
    let condition = config
        .environment
        .as_ref()?
        .pointer("/kwargs/condition")?
        .as_str()?;
    super::attempts::origin_of(
        super::attempts::Written {
            id: r.id.as_deref()?,
            trials_dir: config.trials_dir.as_deref()?,
            condition,
            task: &trial.task_id,
            trial_name: &trial.trial_name,
        },
        n_trials,
    )
}

/// Decodes a `result.json`: the result with its task and trial names when it is a trial's. A
/// job's result is counted and `None`; anything else is reported as broken and `None`.
pub(super) fn read_result(
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
pub(super) fn condition_of(
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
pub(super) fn agent_and_model(r: &ResultFile) -> (String, Option<String>) {
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
pub(super) fn exception_type(r: &ResultFile) -> Option<&str> {
    r.exception_info
        .as_ref()
        .and_then(|e| e.exception_type.as_deref())
}

/// What a trial result says of its verdict.
pub(super) struct Verdict {
    /// [`outcome_of`] the exception and reward.
    pub(super) outcome: Outcome,
    /// The scalar reward.
    pub(super) reward: Option<f64>,
    /// Every reward the verifier wrote.
    pub(super) rewards: Option<BTreeMap<String, f64>>,
    /// The exception's first line, or what the reward says.
    pub(super) error: Option<String>,
}

/// The verdict of a trial result.
pub(super) fn verdict_of(r: &ResultFile) -> Verdict {
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
pub(super) fn verdict_026(r: &ResultFile) -> Verdict {
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
pub(super) fn phase_times(r: &ResultFile) -> [Option<String>; 8] {
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
pub(super) fn step_tokens(r: &ResultFile) -> Option<AgentResultPart> {
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
pub(super) fn read_trajectory(
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

#[cfg(test)]
mod tests {
    use super::super::super::condition_from;
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
        // skillscope's own job folders, `<run>__<condition>`: the condition after the last `__`,
        // whatever the run's name says.
        for (job, c) in [
            ("examples-oracle-noskills-curated-x5__curated", "curated"),
            ("examples-oracle-noskills-curated-x5__noskills", "no-skills"),
        ] {
            assert_eq!(condition_from(&[&format!("/w/jobs/{job}/"), job]), Some(c));
        }
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
