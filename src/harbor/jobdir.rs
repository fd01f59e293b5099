//! Harbor's job layout: `<jobs>/<job>/{config.json, result.json}` and one
//! `<task>__<suffix>/{config.json, lock.json, result.json, agent/, verifier/}` folder per trial,
//! so Harbor's own tools (`harbor view`, 0.25 and 0.26) read skillscope's results.
//!
//! One job per run × condition (`<run>__<condition slug>`), mirroring how SkillsBench keeps
//! no-skills and skills runs in separate jobs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::result::*;
use crate::domain::{Outcome, TrialRow};
use crate::harbor::reward::is_pass;

/// shortuuid's alphabet (no 0, 1, I, O, l), which Harbor uses for trial name suffixes.
const SUFFIX_ALPHABET: &[u8] = b"23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/// Harbor trial name `<task[:32] without trailing _ or ->__<7 characters>`. The suffix is derived
/// from (run, condition, trial index, attempt), so the same attempt always gets the same folder.
pub fn trial_name(
    task_id: &str,
    run: &str,
    condition: &str,
    trial_index: u32,
    attempt: u32,
) -> String {
    let prefix: String = task_id.chars().take(32).collect();
    let prefix = prefix.trim_end_matches(['_', '-']);
    let digest = Sha256::digest(format!(
        "{run}\0{condition}\0{task_id}\0{trial_index}\0{attempt}"
    ));
    let suffix: String = digest
        .iter()
        .take(7)
        .map(|b| SUFFIX_ALPHABET[*b as usize % SUFFIX_ALPHABET.len()] as char)
        .collect();
    format!("{prefix}__{suffix}")
}

/// Job folder name of a run × condition.
pub fn job_name(run: &str, condition_slug: &str) -> String {
    format!("{run}__{condition_slug}")
}

/// Deterministic UUID (v5) for a name, so rewritten files keep their ids.
pub fn stable_uuid(name: &str) -> String {
    uuid::Uuid::new_v5(
        &uuid::Uuid::NAMESPACE_URL,
        format!("skillscope:{name}").as_bytes(),
    )
    .to_string()
}

/// Writes JSON through a temporary file and a rename, so readers never see half a file. The
/// temporary file is created afresh (a link planted at its name is replaced, never followed).
///
/// # Errors
/// I/O errors (naming nothing: callers add the path).
pub fn write_json_atomic(path: &Path, value: &impl serde::Serialize) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    write_text_atomic(path, &text)
}

/// Writes `text` through a temporary file and a rename.
///
/// # Errors
/// I/O errors (naming nothing: callers add the path).
pub fn write_text_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let tmp = path.with_extension("json.tmp");
    crate::fs::write_fresh(&tmp, text.as_bytes())?;
    std::fs::rename(&tmp, path)
}

/// Writes the trial's `lock.json` exactly as Harbor 0.26 writes one
/// ([`super::lock::to_harbor_json`]).
///
/// # Errors
/// I/O errors (naming nothing: callers add the path).
pub fn write_lock(path: &Path, lock: &super::lock::TrialLock) -> std::io::Result<()> {
    let text = super::lock::to_harbor_json(lock).map_err(std::io::Error::other)?;
    write_text_atomic(path, &text)
}

/// Facts about a trial that are not in its store row.
#[derive(Debug, Clone)]
pub struct TrialFacts {
    /// Task folder.
    pub task_path: PathBuf,
    /// SHA-256 of the task folder.
    pub task_checksum: String,
    /// Harness name.
    pub agent_name: String,
    /// Harness version.
    pub agent_version: String,
    /// Model.
    pub model: Option<String>,
    /// Job folder.
    pub job_dir: PathBuf,
    /// Job id.
    pub job_id: String,
    /// CPU limit applied.
    pub cpus: Option<f64>,
    /// Memory limit applied, MiB.
    pub memory_mb: Option<u64>,
    /// Extra environment-config facts (names of passed variables, mounts, CA bundle, condition).
    pub kwargs: BTreeMap<String, serde_json::Value>,
    /// Harbor 0.26's digest of the task folder (`None` when it could not be computed: then no
    /// lock can be written).
    pub task_digest: Option<String>,
    /// `task.toml`'s `[task] version`.
    pub task_version: Option<String>,
    /// The skills the condition gives the agent, with their digests.
    pub skills: Vec<super::lock::SkillLock>,
}

/// The trial's `config.json`. When the host cut the task's CPU or memory request
/// (`row.clamped`), `override_cpus` / `override_memory_mb` are what was applied and
/// `environment.kwargs.clamped` holds the request beside it.
pub fn trial_config(row: &TrialRow, f: &TrialFacts) -> TrialConfig {
    let mut kwargs = f.kwargs.clone();
    let (mut cpus, mut memory_mb) = (f.cpus, f.memory_mb);
    if let Some(c) = &row.clamped {
        kwargs.insert("clamped".into(), c.clone());
        if let Some(a) = c.pointer("/cpus/applied").and_then(|v| v.as_f64()) {
            cpus = Some(a);
        }
        if let Some(a) = c.pointer("/memory_mb/applied").and_then(|v| v.as_u64()) {
            memory_mb = Some(a);
        }
    }
    TrialConfig {
        schema_version: SCHEMA_VERSION,
        task: TaskRef {
            path: f.task_path.display().to_string(),
        },
        trial_name: row.trial_name.clone(),
        trials_dir: f.job_dir.display().to_string(),
        timeout_multiplier: 1.0,
        agent: AgentConfig {
            name: f.agent_name.clone(),
            model_name: f.model.clone(),
            kwargs: BTreeMap::new(),
        },
        environment: EnvironmentConfig {
            kind: Some("docker".into()),
            force_build: false,
            delete: true,
            override_cpus: cpus,
            override_memory_mb: memory_mb,
            kwargs,
        },
        verifier: VerifierConfig::default(),
        job_id: Some(f.job_id.clone()),
    }
}

/// The trial's `result.json`, from its finished store row.
pub fn trial_result(row: &TrialRow, f: &TrialFacts, trial_dir: &Path) -> TrialResult {
    let timing = |a: &Option<String>, b: &Option<String>| {
        (a.is_some() || b.is_some()).then(|| TimingInfo {
            started_at: a.clone(),
            finished_at: b.clone(),
        })
    };
    let rewards: Option<BTreeMap<String, f64>> = row
        .rewards
        .as_ref()
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let exception_info = row.outcome.and_then(|o| {
        o.harbor_exception_type().map(|t| ExceptionInfo {
            exception_type: t.to_string(),
            exception_message: row.error.clone().unwrap_or_else(|| o.as_str().to_string()),
            exception_traceback: String::new(),
            occurred_at: row.finished_at.clone().unwrap_or_default(),
            policy_override: None,
            policy: Some(super::error_policy::policy_for(t, None)),
        })
    });
    let reward_valid = super::error_policy::reward_valid(
        rewards.as_ref().is_some_and(|r| !r.is_empty()),
        &exception_info
            .iter()
            .filter_map(|e| e.policy)
            .collect::<Vec<_>>(),
    );
    TrialResult {
        schema_version: SCHEMA_VERSION,
        id: stable_uuid(&format!("{}/{}", f.job_dir.display(), row.trial_name)),
        task_name: row.task_id.clone(),
        trial_name: row.trial_name.clone(),
        trial_uri: format!("file://{}", trial_dir.display()),
        task_id: TaskIdPath {
            path: f.task_path.display().to_string(),
        },
        source: None,
        task_checksum: f.task_checksum.clone(),
        config: trial_config(row, f),
        agent_info: AgentInfo {
            name: f.agent_name.clone(),
            version: f.agent_version.clone(),
            model_info: f.model.as_ref().map(|m| ModelInfo {
                name: m.clone(),
                provider: None,
            }),
        },
        agent_result: (row.n_input_tokens.is_some()
            || row.n_output_tokens.is_some()
            || row.cost_usd.is_some())
        .then_some(crate::harbor::result::AgentResult {
            n_input_tokens: row.n_input_tokens,
            n_cache_tokens: row.n_cache_tokens,
            n_output_tokens: row.n_output_tokens,
            cost_usd: row.cost_usd,
        }),
        verifier_result: rewards.map(|r| VerifierResult { rewards: Some(r) }),
        verifier_environment_mode: Some("shared".into()),
        exception_info,
        started_at: row.started_at.clone(),
        finished_at: row.finished_at.clone(),
        environment_setup: timing(&row.build_started_at, &row.build_finished_at),
        agent_setup: None,
        agent_execution: timing(&row.agent_started_at, &row.agent_finished_at),
        verifier: timing(&row.verifier_started_at, &row.verifier_finished_at),
        step_results: None,
        reward_valid: Some(reward_valid),
    }
}

/// The trial's `lock.json` (Harbor 0.26's `TrialLock`): the task's digest, the agent and
/// environment as its `config.json` has them, the skills the condition gives with their digests,
/// the verifier running in the agent's container (`shared`). `None` when the task's digest could
/// not be computed (a lock without one is not valid).
pub fn trial_lock(row: &TrialRow, f: &TrialFacts) -> Option<super::lock::TrialLock> {
    use super::lock::*;
    let digest = f.task_digest.clone()?;
    let config = trial_config(row, f);
    let env = config.environment;
    Some(TrialLock {
        schema_version: LOCK_SCHEMA_VERSION,
        task: TaskLock {
            name: row.task_id.clone(),
            version: f.task_version.clone(),
            kind: "local".into(),
            digest,
            source: None,
            path: Some(f.task_path.display().to_string()),
        },
        install_only: false,
        timeout_multiplier: config.timeout_multiplier,
        agent: LockAgent {
            name: Some(config.agent.name),
            model_name: config.agent.model_name,
            skip_model_parsing: false,
            skills: Vec::new(),
            resume_trajectory: false,
            extra_allowed_hosts: Vec::new(),
            kwargs: config.agent.kwargs,
            mcp_servers: Vec::new(),
        },
        bridge_inputs: BTreeMap::new(),
        skills: f.skills.clone(),
        environment: LockEnvironment {
            kind: env.kind.unwrap_or_else(|| "docker".into()),
            force_build: env.force_build,
            delete: env.delete,
            stream: false,
            cpu_enforcement_policy: "auto".into(),
            memory_enforcement_policy: "auto".into(),
            override_cpus: env.override_cpus,
            override_memory_mb: env.override_memory_mb,
            extra_docker_compose: Vec::new(),
            kwargs: env.kwargs,
            extra_allowed_hosts: Vec::new(),
        },
        verifier: LockVerifier {
            disable: config.verifier.disable,
            environment_mode: Some("shared".into()),
        },
        artifacts: Vec::new(),
        override_error_policy: BTreeMap::new(),
    })
}

/// The job's `result.json` from the latest attempts of its trials, with Harbor 0.26's statistics:
/// `n_trials`, `reward_stats` and the `mean` metric count only trials whose reward is valid
/// (a reward, and no exception whose policy voids it — [`super::error_policy`]); every trial
/// with an exception counts in `n_errors` and `exception_stats`. (skillscope's own Method D
/// counts every planned trial, a trial without a valid reward as 0.)
pub fn job_result(
    job_id: &str,
    started_at: &str,
    finished_at: Option<&str>,
    eval_key: &str,
    n_total: u64,
    trials: &[TrialRow],
) -> JobResult {
    let mut eval = EvalStats::default();
    let mut sum = 0.0;
    let mut done = 0u64;
    let mut valid_n = 0u64;
    for t in trials.iter().filter(|t| t.outcome.is_some()) {
        done += 1;
        let exception = t.outcome.and_then(Outcome::harbor_exception_type);
        let valid =
            exception.is_none_or(|e| super::error_policy::policy_for(e, None).has_valid_reward);
        if let Some(r) = t.reward.filter(|_| valid) {
            valid_n += 1;
            sum += r;
            eval.n_trials += 1;
            eval.reward_stats
                .entry("reward".into())
                .or_default()
                .entry(format!("{r:?}"))
                .or_default()
                .push(t.trial_name.clone());
        }
        if let Some(exc) = exception {
            eval.n_errors += 1;
            eval.exception_stats
                .entry(exc.to_string())
                .or_default()
                .push(t.trial_name.clone());
        }
    }
    if valid_n > 0 {
        eval.metrics
            .push(BTreeMap::from([("mean".to_string(), sum / valid_n as f64)]));
    }
    JobResult {
        schema_version: SCHEMA_VERSION,
        id: job_id.to_string(),
        started_at: started_at.to_string(),
        finished_at: finished_at.map(str::to_string),
        n_total_trials: n_total,
        stats: JobStats {
            n_trials: done,
            n_errors: eval.n_errors,
            evals: BTreeMap::from([(eval_key.to_string(), eval)]),
        },
    }
}

/// What a run's Harbor job folders describe: one job per condition, `<jobs>/<run>__<condition>/`
/// with Harbor's `config.json` and `result.json`.
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// The run's name (prefix of every job folder).
    pub run: String,
    /// Jobs folder.
    pub jobs_dir: PathBuf,
    /// Agent name and version.
    pub agent: String,
    /// Model name.
    pub model: Option<String>,
    /// Trials at once (Harbor's `n_concurrent_trials`).
    pub concurrency: serde_json::Value,
    /// Task folders.
    pub task_paths: Vec<PathBuf>,
    /// Trials per task and condition.
    pub n_trials: u64,
    /// Run start, RFC 3339.
    pub started_at: String,
}

impl JobSpec {
    /// The job folder of condition `slug`.
    pub fn job_dir(&self, condition_slug: &str) -> PathBuf {
        self.jobs_dir.join(job_name(&self.run, condition_slug))
    }

    /// Writes `config.json` and `result.json` of each condition's job (`conditions`: key and
    /// slug) from the latest attempts in `trials`; `at_end` stamps the finish time. Returns the
    /// files that could not be written, with the error (trial results never depend on them).
    pub fn write(
        &self,
        conditions: &[(String, String)],
        trials: &[TrialRow],
        at_end: bool,
    ) -> Vec<String> {
        let mut failures = Vec::new();
        let eval_key = match &self.model {
            Some(m) => format!("{}__{}__adhoc", self.agent, m),
            None => format!("{}__adhoc", self.agent),
        };
        let finished = at_end.then(crate::domain::now_rfc3339);
        for (key, slug) in conditions {
            let job_dir = self.job_dir(slug);
            let job_id = stable_uuid(&job_dir.display().to_string());
            let of_cond: Vec<TrialRow> = trials
                .iter()
                .filter(|t| &t.condition == key)
                .cloned()
                .collect();
            let config = serde_json::json!({
                "job_name": job_name(&self.run, slug),
                "jobs_dir": self.jobs_dir,
                "n_attempts": self.n_trials,
                "timeout_multiplier": 1.0,
                "n_concurrent_trials": self.concurrency,
                "agents": [{"name": self.agent, "model_name": self.model}],
                "tasks": self.task_paths.iter().map(|p| serde_json::json!({"path": p})).collect::<Vec<_>>(),
            });
            let result = job_result(
                &job_id,
                &self.started_at,
                finished.as_deref(),
                &eval_key,
                self.task_paths.len() as u64 * self.n_trials,
                &of_cond,
            );
            for (file, value) in [
                ("config.json", config),
                (
                    "result.json",
                    serde_json::to_value(&result).unwrap_or_default(),
                ),
            ] {
                if let Err(e) = write_json_atomic(&job_dir.join(file), &value) {
                    failures.push(format!("writing {}: {e}", job_dir.join(file).display()));
                }
            }
        }
        failures
    }
}

/// SHA-256 over a task folder's files (relative path, size and bytes, sorted), hex.
///
/// # Errors
/// I/O errors reading the folder.
pub fn task_checksum(dir: &Path) -> std::io::Result<String> {
    let mut files = Vec::new();
    collect_files(dir, dir, &mut files)?;
    files.sort();
    let mut h = Sha256::new();
    for rel in files {
        let path = dir.join(&rel);
        h.update(rel.to_string_lossy().as_bytes());
        h.update([0]);
        let mut f = std::fs::File::open(&path)?;
        std::io::copy(&mut f, &mut h)?;
        h.update([0]);
    }
    Ok(hex::encode(h.finalize()))
}

fn collect_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let ft = e.file_type()?;
        if ft.is_dir() {
            collect_files(root, &e.path(), out)?;
        } else if ft.is_file() {
            out.push(
                e.path()
                    .strip_prefix(root)
                    .unwrap_or(&e.path())
                    .to_path_buf(),
            );
        }
    }
    Ok(())
}

/// True when the row's outcome counts as a pass for Harbor-style statistics.
pub fn row_passed(row: &TrialRow) -> bool {
    row.reward.is_some_and(is_pass)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trial_names_look_like_harbor() {
        let n = trial_name("3d-scan-calc", "run", "no-skills", 1, 1);
        let (p, s) = n.split_once("__").unwrap();
        assert_eq!(p, "3d-scan-calc");
        assert_eq!(s.len(), 7);
        assert!(s.bytes().all(|b| SUFFIX_ALPHABET.contains(&b)));
        assert_eq!(n, trial_name("3d-scan-calc", "run", "no-skills", 1, 1));
        assert_ne!(n, trial_name("3d-scan-calc", "run", "no-skills", 1, 2));
        let long = trial_name("a-very-long-task-name-that-goes-on-and-on-", "r", "c", 1, 1);
        assert!(
            long.starts_with("a-very-long-task-name-that-goes__"),
            "{long}"
        );
    }
}
