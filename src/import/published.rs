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

use rusqlite::{Connection, params};

use super::csv::parse_csv;
use super::registry::parse_registry;
use super::{
    FileReport, Format, ImportError, ImportOptions, ImportReport, MAX_FILE, NewTrial, RunPlan,
    Written, identity_of,
};
use crate::safe_fs;
use crate::skillsbench::Catalog;
use crate::store::queries::{self, NewRun};
use crate::store::{RunTaskRow, Store, StoreError, TrialStatus};

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
                safe_fs::read_capped(path, MAX_FILE).map_err(|e| root_err(e.to_string()))?;
            parse_registry(&bytes, path, opts, &mut file, &mut report.broken).map_err(root_err)?
        }
    };
    file.trials = plans.iter().map(|p| p.trials.len()).sum();
    let catalog = opts.catalog.clone();
    let w = store
        .writer()
        .write_blocking(move |c| write_plans(c, plans, &catalog))?;
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

fn write_plans(
    conn: &Connection,
    plans: Vec<RunPlan>,
    catalog: &Catalog,
) -> Result<Written, StoreError> {
    let mut w = Written::default();
    let mut known: HashMap<&'static str, HashSet<String>> = HashMap::new();
    for plan in plans {
        let source = plan.source.as_str();
        if !known.contains_key(source) {
            // Every stored key of this source, in one range scan of the import-key index.
            let keys: HashSet<String> = conn
                .prepare(
                    "SELECT import_key FROM trials WHERE import_key >= ?1 AND import_key < ?2",
                )?
                .query_map([format!("{source}:"), format!("{source};")], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            known.insert(source, keys);
        }
        let keys = known.get_mut(source).expect("loaded");
        let new: Vec<&NewTrial> = plan
            .trials
            .iter()
            .filter(|t| !keys.contains(&t.key))
            .collect();
        w.present += plan.trials.len() - new.len();
        let run = match queries::find_run(conn, &plan.name)? {
            Some(r) if r.source != source => {
                return Err(StoreError::Conflict(format!(
                    "run {:?} exists and was not imported from a {source} file (source {}); pass another --run name",
                    plan.name, r.source
                )));
            }
            Some(r) if r.agent != plan.agent || r.model != plan.model => {
                return Err(StoreError::Conflict(format!(
                    "run {:?} holds agent {} model {}, not {} {}; pass another --run name",
                    plan.name,
                    r.agent,
                    r.model.as_deref().unwrap_or("-"),
                    plan.agent,
                    plan.model.as_deref().unwrap_or("-")
                )));
            }
            Some(r) => r,
            None if new.is_empty() => continue,
            None => {
                let r = queries::insert_run(
                    conn,
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
                )?;
                conn.execute(
                    "UPDATE runs SET source = ?2, status = 'imported' WHERE id = ?1",
                    params![r.id, source],
                )?;
                r
            }
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
            queries::set_trial_plan(conn, run.id, &plan_source, task, condition, *n)?;
        }
        if new.is_empty() {
            continue;
        }
        let tasks: Vec<RunTaskRow> = plan
            .tasks
            .iter()
            .map(|t| super::imported_task(catalog, t, ""))
            .collect();
        queries::upsert_run_tasks(conn, run.id, &tasks)?;

        // The run's current attempts: slot → (row id, import key, attempt); highest index per
        // task × condition.
        type Slot = (String, String, u32);
        let mut slots: HashMap<Slot, (i64, Option<String>, u32)> = HashMap::new();
        let mut top: HashMap<(String, String), u32> = HashMap::new();
        {
            let mut st = conn.prepare(
                "SELECT id, task_id, condition, trial_index, attempt, import_key FROM trials
                 WHERE run_id = ?1 AND superseded = 0",
            )?;
            let rows = st.query_map([run.id], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, u32>(3)?,
                    r.get::<_, u32>(4)?,
                    r.get::<_, Option<String>>(5)?,
                ))
            })?;
            for row in rows {
                let (id, task, cond, idx, attempt, key) = row?;
                let m = top.entry((task.clone(), cond.clone())).or_default();
                *m = (*m).max(idx);
                slots.insert((task, cond, idx), (id, key, attempt));
            }
        }
        let now = crate::store::now_rfc3339();
        let mut ins = conn.prepare_cached(
            "INSERT INTO trials (run_id, task_id, condition, trial_index, attempt, status, outcome, reward,
                 rewards, agent, model, trial_name, queued_at, error, import_key, tests_total, tests_passed,
                 aggregated)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
        )?;
        let mut supersede =
            conn.prepare_cached("UPDATE trials SET superseded = 1 WHERE id = ?1")?;
        for t in new {
            let slot = (t.task_id.clone(), t.condition.to_string(), t.trial_index);
            let (index, attempt) = match slots.get(&slot) {
                None => (t.trial_index, 1),
                Some((id, key, attempt))
                    if key.as_deref().map(identity_of) == Some(t.identity.as_str()) =>
                {
                    supersede.execute([id])?;
                    w.replaced += 1;
                    (t.trial_index, attempt + 1)
                }
                // Taken by another trial (another file imported into this run): the next index.
                Some(_) => (
                    top.get(&(slot.0.clone(), slot.1.clone()))
                        .copied()
                        .unwrap_or(0)
                        + 1,
                    1,
                ),
            };
            ins.execute(params![
                run.id,
                t.task_id,
                t.condition,
                index,
                attempt,
                TrialStatus::Done,
                t.outcome,
                t.reward,
                t.reward
                    .map(|r| serde_json::json!({ "reward": r }).to_string()),
                plan.agent,
                plan.model,
                t.trial_name,
                now,
                t.error,
                t.key,
                t.tests.map(|x| x.0),
                t.tests.map(|x| x.1),
                t.aggregated,
            ])?;
            let id = conn.last_insert_rowid();
            let m = top.entry((slot.0.clone(), slot.1.clone())).or_default();
            *m = (*m).max(index);
            slots.insert((slot.0, slot.1, index), (id, Some(t.key.clone()), attempt));
            keys.insert(t.key.clone());
            w.imported += 1;
        }
        finish_run(conn, run.id, plan.n_trials)?;
    }
    Ok(w)
}

/// Brings a run's conditions and trial count up to date with its trials.
fn finish_run(conn: &Connection, id: i64, n_trials: u32) -> Result<(), StoreError> {
    let conds = super::run_conditions(conn, id)?;
    let top: u32 = conn.query_row(
        "SELECT COALESCE(MAX(trial_index), 0) FROM trials WHERE run_id = ?1 AND superseded = 0",
        [id],
        |r| r.get(0),
    )?;
    conn.execute(
        "UPDATE runs SET conditions = ?2, n_trials = MAX(n_trials, ?3), status = 'imported' WHERE id = ?1",
        params![id, serde_json::to_string(&conds)?, top.max(n_trials)],
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The per-trial CSV
