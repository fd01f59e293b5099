//! Published SkillsBench results that are not Harbor job folders: the two result files the
//! benchmark's authors ship, imported by `skillscope import FILE`.
//!
//! **Per-trial CSV** (`experiment_runs__<agent>-<model>_<subset>.csv`; columns `job_name, task,
//! condition, run_index, skills_enabled, skills_used, finished_normally, all_tests_counted,
//! tests_total, tests_passed, tests_failed, reward`). One row is one trial, `job_name` its Harbor
//! job folder (the published job folders carry the same names and rewards). `condition`
//! `noskills` → `no-skills`, `skills` → `curated`. `run_index` numbers whole experiment runs, not
//! trials: in the Gemini 3 Flash file run 1 is the skills run and run 2 the no-skills run, one
//! trial per task and condition (172 rows = 86 tasks × 2 conditions × 1 trial). So the trial
//! index is the rank of the row's `run_index` among the distinct `run_index` values of its
//! condition (the k-th run of a condition is trial k). Outcome: an empty `reward` is `no-reward`
//! (the run ended without a verifier reward — `finished_normally` is False on every such row:
//! infrastructure, not the agent), reward 1 is a pass, anything else a fail. `tests_total` and
//! `tests_passed` become the trial's test counts, except 0 tests with `all_tests_counted` False
//! (no test report at all), which stays unknown. `skills_used` is only counted in the report: the
//! CSV does not say which skill, and a skill use without a name would be invented. Agent and
//! model come from the file name (`gemini-cli`, `gemini3flash`), else from the `job_name`
//! prefix; the run is `csv-<agent>-<model>` (or `--run`).
//!
//! **Results registry** (`website-data/results-registry.json`): a JSON array of per-task
//! aggregates `{task, model, modelShort, harness, family, condition: "No Skills" | "With Skills",
//! score, trials, passCount, perfectCount}` — one row per task × harness/model config ×
//! condition. `score` is the task's mean reward × 100 rounded to 0.1, `passCount` the trials with
//! reward > 0, `perfectCount` those with reward 1 (checked against every row: score is 0 exactly
//! when passCount is 0, equals 100·perfectCount/trials to the rounding when passCount =
//! perfectCount, and otherwise lies strictly between, so the partial trials' rewards are in
//! (0, 1)). Each config becomes a run `registry-<harness>-<modelShort>` (`--run` replaces the
//! `registry` prefix: a run has one agent and model), agent the harness slug, model `modelShort`,
//! with `trials` trials per task and condition marked `aggregated`. Their rewards are
//! reconstructed so each task's mean reward is the published one (see [`super::registry::reconstruct`]).
//!
//! Both: the run's task list is every task the file names (domains from the catalog), runs have
//! `source` `csv` or `registry`, and each trial's import key is `<identity>@<content hash>` —
//! identity from the data (CSV: `job_name` and `run_index`; registry: config, task, condition,
//! trial), never from the path — so importing the same data again adds nothing, and a corrected
//! file replaces changed trials by a new attempt. A malformed row is reported with its file and
//! line (and, in the registry, its index) and the other rows are imported.
//!
//! This module writes what [`super::csv`] and [`super::registry`] read into the store.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::csv::parse_csv;
use super::registry::parse_registry;
use super::{
    FileReport, Format, ImportError, ImportOptions, ImportReport, MAX_FILE, NewTrial, RunPlan,
    Written, identity_of,
};
use crate::domain::{RunRow, RunTaskRow, TrialRow, TrialStatus};
use crate::skillsbench::Catalog;
use crate::store::import_ledger::{ImportLedger, ImportTx, TrialSlot};
use crate::store::queries::NewRun;
use crate::store::{Store, StoreError};

/// Imports one published file into `store`, adding to `report`. Blocking.
///
/// # Errors
/// An unreadable file ([`ImportError::Root`]) or a database failure; malformed rows are in the
/// report instead.
pub fn import_file(
    store: &Store,
    path: &Path,
    format: Format,
    opts: &ImportOptions,
    report: &mut ImportReport,
) -> Result<(), ImportError> {
    let root_err = |message: String| ImportError::Root {
        path: path.to_path_buf(),
        message,
    };
    let mut file = FileReport::new(path, format);
    let plans = match format {
        Format::Csv => parse_csv(path, opts, &mut file, &mut report.broken).map_err(root_err)?,
        Format::Registry => {
            let bytes =
                crate::fs::read_capped(path, MAX_FILE).map_err(|e| root_err(e.to_string()))?;
            parse_registry(&bytes, path, opts, &mut file, &mut report.broken).map_err(root_err)?
        }
    };
    file.trials = plans.iter().map(|p| p.trials.len()).sum();
    let catalog = opts.catalog.clone();
    let w = ImportLedger::new(store).write_blocking(move |tx| write_plans(tx, plans, &catalog))?;
    file.imported = w.imported;
    file.already_present = w.present;
    file.replaced = w.replaced;
    file.runs = w.runs;
    report.imported += w.imported;
    report.already_present += w.present;
    report.runs.extend(file.runs.iter().cloned());
    report.files.push(file);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Writing

/// Writes the files' run plans in one transaction: each plan's run (found or created), its
/// planned trials and task list, and its trials not yet stored — a trial whose data changed
/// since an earlier import as a new attempt of its slot.
fn write_plans(
    tx: &ImportTx<'_>,
    plans: Vec<RunPlan>,
    catalog: &Catalog,
) -> Result<Written, StoreError> {
    let mut w = Written::default();
    let mut known: HashMap<&'static str, HashSet<String>> = HashMap::new();
    for plan in plans {
        let source = plan.source.as_str();
        if !known.contains_key(source) {
            known.insert(source, tx.import_keys(source)?);
        }
        let keys = known.get_mut(source).expect("loaded");
        let new: Vec<&NewTrial> = plan
            .trials
            .iter()
            .filter(|t| !keys.contains(&t.key))
            .collect();
        w.present += plan.trials.len() - new.len();
        let Some(run) = plan_run(tx, &plan, !new.is_empty())? else {
            continue;
        };
        w.runs.push(plan.name.clone());
        // The file's plan, under the file's name (not its path): importing it again from
        // elsewhere replaces the same rows.
        let plan_source = format!(
            "{source}:{}",
            Path::new(&plan.origin)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| plan.origin.clone())
        );
        for ((task, condition), n) in &plan.planned {
            tx.set_trial_plan(run.id, &plan_source, task, condition, *n)?;
        }
        if new.is_empty() {
            continue;
        }
        let tasks: Vec<RunTaskRow> = plan
            .tasks
            .iter()
            .map(|t| super::imported_task(catalog, t, ""))
            .collect();
        tx.add_tasks(run.id, &tasks)?;
        let mut slots = Slots::of(tx, run.id)?;
        let now = crate::domain::now_rfc3339();
        for t in new {
            let (index, attempt) = slots.place(tx, t, &mut w)?;
            let id = tx.insert_trial(&TrialRow {
                run_id: run.id,
                task_id: t.task_id.clone(),
                condition: t.condition.to_string(),
                trial_index: index,
                attempt,
                status: TrialStatus::Done,
                outcome: Some(t.outcome),
                reward: t.reward,
                rewards: t.reward.map(|r| serde_json::json!({ "reward": r })),
                agent: plan.agent.clone(),
                model: plan.model.clone(),
                trial_name: t.trial_name.clone(),
                queued_at: now.clone(),
                error: t.error.clone(),
                import_key: Some(t.key.clone()),
                tests_total: t.tests.map(|x| x.0),
                tests_passed: t.tests.map(|x| x.1),
                aggregated: t.aggregated,
                ..TrialRow::default()
            })?;
            slots.taken(t, index, id, attempt);
            keys.insert(t.key.clone());
            w.imported += 1;
        }
        tx.finish_published_run(run.id, &super::run_conditions(tx, run.id)?, plan.n_trials)?;
    }
    Ok(w)
}

/// The run `plan` goes to: the stored one of its name (imported from the same format, with the
/// same agent and model), else a new one when it has trials to add (`None` when it has none).
///
/// # Errors
/// [`StoreError::Conflict`] when the name is taken by another source, agent or model.
fn plan_run(
    tx: &ImportTx<'_>,
    plan: &RunPlan,
    has_new: bool,
) -> Result<Option<RunRow>, StoreError> {
    let source = plan.source.as_str();
    match tx.find_run(&plan.name)? {
        Some(r) if r.source != source => Err(StoreError::Conflict(format!(
            "run {:?} exists and was not imported from a {source} file (source {}); pass another --run name",
            plan.name, r.source
        ))),
        Some(r) if r.agent != plan.agent || r.model != plan.model => {
            Err(StoreError::Conflict(format!(
                "run {:?} holds agent {} model {}, not {} {}; pass another --run name",
                plan.name,
                r.agent,
                r.model.as_deref().unwrap_or("-"),
                plan.agent,
                plan.model.as_deref().unwrap_or("-")
            )))
        }
        Some(r) => Ok(Some(r)),
        None if !has_new => Ok(None),
        None => Ok(Some(tx.create_run(
            &NewRun {
                name: plan.name.clone(),
                tasks_dir: plan.origin.clone(),
                agent: plan.agent.clone(),
                model: plan.model.clone(),
                n_trials: plan.n_trials,
                conditions: Vec::new(),
                jobs_dir: plan.origin.clone(),
                settings: plan.settings.clone(),
            },
            source,
        )?)),
    }
}

/// A run's current attempts by slot (task, condition, trial index) and the highest index per
/// task × condition, kept up to date as trials are added.
struct Slots {
    /// (task, condition, trial index) → the latest attempt there.
    current: HashMap<(String, String, u32), TrialSlot>,
    /// (task, condition) → highest trial index.
    top: HashMap<(String, String), u32>,
}

impl Slots {
    /// Run `run_id`'s slots as stored.
    fn of(tx: &ImportTx<'_>, run_id: i64) -> Result<Slots, StoreError> {
        let mut slots = Slots {
            current: HashMap::new(),
            top: HashMap::new(),
        };
        for s in tx.current_slots(run_id)? {
            let m = slots
                .top
                .entry((s.task_id.clone(), s.condition.clone()))
                .or_default();
            *m = (*m).max(s.trial_index);
            slots
                .current
                .insert((s.task_id.clone(), s.condition.clone(), s.trial_index), s);
        }
        Ok(slots)
    }

    /// Where trial `t` goes, (trial index, attempt): its own slot as attempt 1 when free; the
    /// next attempt of its slot when the slot holds an earlier version of the same trial
    /// (superseded, counted as replaced); else, the slot taken by another trial (another file
    /// imported into this run), the next index.
    fn place(
        &self,
        tx: &ImportTx<'_>,
        t: &NewTrial,
        w: &mut Written,
    ) -> Result<(u32, u32), StoreError> {
        let slot = (t.task_id.clone(), t.condition.to_string(), t.trial_index);
        Ok(match self.current.get(&slot) {
            None => (t.trial_index, 1),
            Some(s) if s.import_key.as_deref().map(identity_of) == Some(t.identity.as_str()) => {
                tx.supersede(s.id)?;
                w.replaced += 1;
                (t.trial_index, s.attempt + 1)
            }
            Some(_) => (self.top.get(&(slot.0, slot.1)).copied().unwrap_or(0) + 1, 1),
        })
    }

    /// Records that trial `t` now holds slot `index` as row `id`, attempt `attempt`.
    fn taken(&mut self, t: &NewTrial, index: u32, id: i64, attempt: u32) {
        let (task, cond) = (t.task_id.clone(), t.condition.to_string());
        let m = self.top.entry((task.clone(), cond.clone())).or_default();
        *m = (*m).max(index);
        let slot = TrialSlot {
            id,
            task_id: task.clone(),
            condition: cond.clone(),
            trial_index: index,
            attempt,
            import_key: Some(t.key.clone()),
        };
        self.current.insert((task, cond, index), slot);
    }
}

// ---------------------------------------------------------------------------------------------
// The per-trial CSV
