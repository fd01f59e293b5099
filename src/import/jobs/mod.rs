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

use super::{ImportError, ImportOptions, ImportReport, imported_task, run_conditions};
use crate::domain::{RunRow, RunTaskRow, SkillUseRow, TrialRow};
use crate::skillsbench::Catalog;
use crate::store::import_ledger::{ImportLedger, ImportTx};
use crate::store::queries::NewRun;
use crate::store::{Store, StoreError};

/// Most bytes read from one `result.json`.
pub(super) const MAX_RESULT: u64 = 8 * 1024 * 1024;

/// Most bytes read from one trajectory.
pub(super) const MAX_TRAJECTORY: u64 = 64 * 1024 * 1024;

mod attempts;
mod trial;

use trial::{Parsed, parse_trial};
pub use trial::{normalize_time, outcome_of};

/// A trial's Harbor job: its folder (the trial folder's parent) and the job's plan, when its
/// `config.json` is a Harbor `JobConfig`.
#[derive(Debug, Clone)]
pub(super) struct JobRef {
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

/// The trial's Harbor job: the trial folder's parent and its plan (each job's `config.json`
/// read once).
pub(super) fn job_of(trial_dir: &Path, jobs: &mut HashMap<PathBuf, Option<JobPlan>>) -> JobRef {
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
    /// Attempts of skillscope's own trials recorded as superseded by a later attempt.
    superseded: usize,
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
        // Another attempt of the same trial of skillscope's, already recorded (in this import
        // or an earlier one): this one joins its trial, and only the latest attempt counts.
        let mut recorded: Vec<(i64, u32, u32, bool)> = Vec::new();
        if let Some(o) = &p.origin {
            for (_, key) in &o.siblings {
                recorded.extend(tx.attempt_by_key(run.id, key)?);
            }
        }
        let trial_index = match recorded.first() {
            Some((_, index, _, _)) => *index,
            None => {
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
                next
            }
        };
        let trial = TrialRow {
            run_id: run.id,
            trial_index,
            attempt: p.origin.as_ref().map_or(p.trial.attempt, |o| o.attempt),
            ..p.trial
        };
        let id = tx.insert_trial(&trial)?;
        let latest = recorded.iter().map(|r| r.2).max().unwrap_or(0);
        for (other, _, attempt, superseded) in &recorded {
            if *attempt < trial.attempt && !superseded {
                tx.supersede(*other)?;
                st.superseded += 1;
            }
        }
        if latest > trial.attempt {
            tx.supersede(id)?;
            st.superseded += 1;
        }
        let job = st.jobs.entry(p.job.dir.clone()).or_default();
        job.plan = p.job.plan.clone();
        if recorded.is_empty() {
            *job.seen
                .entry((run.id, trial.condition.clone()))
                .or_default()
                .entry(trial.task_id.clone())
                .or_default() += 1;
        }
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
        report.superseded_attempts = st.superseded;
        report.runs = st.runs.keys().cloned().collect();
    }
    Ok(loose)
}
