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
//! reconstructed so each task's mean reward is the published one (see [`reconstruct`]).
//!
//! Both: the run's task list is every task the file names (domains from the catalog), runs have
//! `source` `csv` or `registry`, and each trial's import key is `<identity>@<content hash>` —
//! identity from the data (CSV: `job_name` and `run_index`; registry: config, task, condition,
//! trial), never from the path — so importing the same data again adds nothing, and a corrected
//! file replaces changed trials by a new attempt. A malformed row is reported with its file and
//! line (and, in the registry, its index) and the other rows are imported.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::import::{ImportError, ImportOptions, ImportReport, condition_from};
use crate::analysis::metrics::Scored;
use crate::harbor::reward::is_pass;
use crate::safe_fs;
use crate::skillsbench::Catalog;
use crate::skillsbench::condition::sanitize_slug;
use crate::store::queries::{self, NewRun};
use crate::store::{Outcome, RunTaskRow, Store, StoreError, TrialStatus};

/// Largest published file read.
const MAX_FILE: u64 = 256 * 1024 * 1024;

/// Columns a per-trial CSV must have.
pub const CSV_REQUIRED: [&str; 6] = [
    "job_name",
    "task",
    "condition",
    "run_index",
    "finished_normally",
    "reward",
];

/// Half a unit of the registry's `score` rounding (0.1 points), plus float noise.
pub const SCORE_HALF_UNIT: f64 = 0.05 + 1e-9;

/// Reconstructed partial rewards stay inside (0, 1) by at least this much.
const PARTIAL_MARGIN: f64 = 1e-6;

const WHAT_IS_ACCEPTED: &str = "expected a Harbor jobs folder, a SkillsBench per-trial CSV (*.csv with \
     columns job_name, task, condition, run_index, …, reward) or a results registry (*.json array of \
     {task, harness, model, modelShort, condition, score, trials, passCount, perfectCount})";

/// Which published format a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// The per-trial CSV.
    Csv,
    /// The website's results registry.
    Registry,
}

impl Format {
    /// Name, also the `runs.source` of what it imports.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Registry => "registry",
        }
    }
}

/// What one published file contributed.
#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    /// The file.
    pub path: PathBuf,
    /// Its format.
    pub format: Format,
    /// Data rows read (malformed ones included).
    pub rows: usize,
    /// Malformed rows (each also in the import report's `broken`).
    pub broken_rows: usize,
    /// Trials the well-formed rows stand for.
    pub trials: usize,
    /// New trials recorded.
    pub imported: usize,
    /// Trials already in the store.
    pub already_present: usize,
    /// Trials whose data changed since an earlier import: recorded as a new attempt.
    pub replaced: usize,
    /// Tasks named by the file (each run's task list).
    pub tasks: usize,
    /// Runs holding the file's trials.
    pub runs: Vec<String>,
    /// CSV: trials without a verifier reward (outcome `no-reward`).
    pub no_reward: usize,
    /// CSV: rows with `skills_used` True (not recorded per trial: the CSV does not name the skill).
    pub skills_used: usize,
    /// Registry: rows with partial rewards (passCount > perfectCount), reconstructed.
    pub partial_rows: usize,
    /// Registry: reconstructed partial rewards clamped into (0, 1) because of the score rounding.
    pub clamped: usize,
}

impl FileReport {
    fn new(path: &Path, format: Format) -> FileReport {
        FileReport {
            path: path.to_path_buf(),
            format,
            rows: 0,
            broken_rows: 0,
            trials: 0,
            imported: 0,
            already_present: 0,
            replaced: 0,
            tasks: 0,
            runs: Vec::new(),
            no_reward: 0,
            skills_used: 0,
            partial_rows: 0,
            clamped: 0,
        }
    }
}

/// Tells which published format `path` is, from its extension and contents.
///
/// # Errors
/// A message saying what the file is not (the caller names the file).
pub fn detect(path: &Path) -> Result<Format, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.is_file() {
        return Err(format!(
            "not a folder or a regular file; {WHAT_IS_ACCEPTED}"
        ));
    }
    if meta.len() > MAX_FILE {
        return Err(format!("larger than {MAX_FILE} bytes"));
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("csv") => {
            let mut rdr = csv::ReaderBuilder::new()
                .flexible(true)
                .from_path(path)
                .map_err(|e| format!("cannot read it: {e}"))?;
            let header: Vec<String> = rdr
                .headers()
                .map_err(|e| format!("unreadable CSV header: {e}"))?
                .iter()
                .map(|h| h.trim().to_string())
                .collect();
            let missing: Vec<&str> = CSV_REQUIRED
                .iter()
                .copied()
                .filter(|c| !header.iter().any(|h| h == c))
                .collect();
            if missing.is_empty() {
                Ok(Format::Csv)
            } else {
                Err(format!(
                    "a CSV without the SkillsBench per-trial header (no column {}); {WHAT_IS_ACCEPTED}",
                    missing.join(", ")
                ))
            }
        }
        Some("json") => {
            let bytes = safe_fs::read_capped(path, MAX_FILE).map_err(|e| e.to_string())?;
            let arr = array_elements(&bytes)
                .map_err(|e| format!("not a JSON array ({e}); {WHAT_IS_ACCEPTED}"))?;
            if arr.elements.is_empty() {
                return Err(format!("an empty JSON array; {WHAT_IS_ACCEPTED}"));
            }
            let looks_like_row = arr.elements.iter().take(3).any(|e| {
                serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(
                    &bytes[e.start..e.end],
                )
                .is_ok_and(|m| {
                    ["task", "harness", "condition", "score", "passCount"]
                        .iter()
                        .all(|k| m.contains_key(*k))
                })
            });
            if looks_like_row {
                Ok(Format::Registry)
            } else {
                Err(format!(
                    "a JSON array whose first rows are not results-registry rows; {WHAT_IS_ACCEPTED}"
                ))
            }
        }
        _ => Err(WHAT_IS_ACCEPTED.to_string()),
    }
}

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

/// One trial to write.
#[derive(Debug)]
struct NewTrial {
    /// The import key up to its content hash.
    identity: String,
    key: String,
    task_id: String,
    condition: &'static str,
    trial_index: u32,
    outcome: Outcome,
    reward: Option<f64>,
    error: Option<String>,
    tests: Option<(i64, i64)>,
    trial_name: String,
    aggregated: bool,
}

/// One run to create or add to.
#[derive(Debug)]
struct RunPlan {
    name: String,
    agent: String,
    model: Option<String>,
    source: Format,
    origin: String,
    settings: serde_json::Value,
    tasks: Vec<String>,
    n_trials: u32,
    trials: Vec<NewTrial>,
    /// Trials the file planned per (task, condition): the CSV's runs of the condition, the
    /// registry row's `trials` (see [`queries::set_trial_plan`]).
    planned: BTreeMap<(String, &'static str), u32>,
}

#[derive(Debug, Default)]
struct Written {
    imported: usize,
    present: usize,
    replaced: usize,
    runs: Vec<String>,
}

fn key_of(identity: &str, content: &str) -> String {
    let h = Sha256::digest(content.as_bytes());
    format!("{identity}@{}", &hex::encode(h)[..16])
}

fn identity_of(key: &str) -> &str {
    key.rsplit_once('@').map_or(key, |(i, _)| i)
}

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
                    "UPDATE runs SET source = ?2, status = 'finished' WHERE id = ?1",
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
            .map(|t| super::import::imported_task(catalog, t, ""))
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
    let conds = super::import::run_conditions(conn, id)?;
    let top: u32 = conn.query_row(
        "SELECT COALESCE(MAX(trial_index), 0) FROM trials WHERE run_id = ?1 AND superseded = 0",
        [id],
        |r| r.get(0),
    )?;
    conn.execute(
        "UPDATE runs SET conditions = ?2, n_trials = MAX(n_trials, ?3), status = 'finished' WHERE id = ?1",
        params![id, serde_json::to_string(&conds)?, top.max(n_trials)],
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The per-trial CSV

/// Harbor agent names, longest first where one is a prefix of another, to split `<agent>-<model>`.
const AGENTS: [&str; 19] = [
    "claude-code",
    "cline-cli",
    "codex",
    "copilot-cli",
    "cursor-cli",
    "gemini-cli",
    "goose",
    "kimi-cli",
    "mini-swe-agent",
    "swe-agent",
    "nop",
    "opencode",
    "openhands",
    "oracle",
    "qwen-coder",
    "terminus-1",
    "terminus-2",
    "terminus",
    "aider",
];

/// `gemini-cli-gemini3flash` → (`gemini-cli`, `gemini3flash`): a known Harbor agent name and the
/// rest, else split at the last `-`.
pub fn split_agent_model(tag: &str) -> (String, Option<String>) {
    let known = AGENTS
        .iter()
        .filter(|a| tag == **a || tag.starts_with(&format!("{a}-")))
        .max_by_key(|a| a.len());
    match known {
        Some(a) if tag.len() > a.len() => (a.to_string(), Some(tag[a.len() + 1..].to_string())),
        Some(a) => (a.to_string(), None),
        None => match tag.rsplit_once('-') {
            Some((a, m)) if !a.is_empty() && !m.is_empty() => (a.to_string(), Some(m.to_string())),
            _ => (tag.to_string(), None),
        },
    }
}

/// The `<agent>-<model>` tag of `experiment_runs__<agent>-<model>_<subset>.csv`.
fn tag_from_file_name(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    let (_, tail) = stem.rsplit_once("__")?;
    let tag = tail.split('_').next().unwrap_or(tail);
    (!tag.is_empty()).then(|| tag.to_string())
}

/// The `<agent>-<model>` prefix of a job name `<agent>-<model>-<noskills|skills>-<task>-<hash>`.
fn tag_from_job_name(job: &str) -> Option<String> {
    ["-noskills-", "-skills-"]
        .iter()
        .filter_map(|m| job.find(m))
        .min()
        .map(|i| job[..i].to_string())
        .filter(|t| !t.is_empty())
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

/// One well-formed CSV row.
struct CsvRow {
    job_name: String,
    task: String,
    condition: &'static str,
    run_index: u64,
    reward: Option<f64>,
    finished_normally: bool,
    tests: Option<(i64, i64)>,
    content: String,
}

fn parse_csv(
    path: &Path,
    opts: &ImportOptions,
    file: &mut FileReport,
    broken: &mut Vec<(PathBuf, String)>,
) -> Result<Vec<RunPlan>, String> {
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(std::io::BufReader::new(f));
    let header: Vec<String> = rdr
        .headers()
        .map_err(|e| e.to_string())?
        .iter()
        .map(|h| h.trim().to_string())
        .collect();
    let col = |name: &str| header.iter().position(|h| h == name);
    let idx: BTreeMap<&str, usize> = CSV_REQUIRED
        .iter()
        .chain(&[
            "tests_total",
            "tests_passed",
            "all_tests_counted",
            "skills_used",
        ])
        .filter_map(|n| col(n).map(|i| (*n, i)))
        .collect();
    let mut tasks = BTreeSet::new();
    let mut rows: Vec<CsvRow> = Vec::new();
    let mut seen: HashMap<(String, &'static str, u64), u64> = HashMap::new();
    let mut record = csv::StringRecord::new();
    loop {
        let line = rdr.position().line();
        match rdr.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                file.rows += 1;
                file.broken_rows += 1;
                let at = e.position().map_or(line, |p| p.line());
                broken.push((path.to_path_buf(), format!("line {at}: {e}")));
                continue;
            }
        }
        let line = record.position().map_or(line, |p| p.line());
        if record.iter().all(|f| f.trim().is_empty()) {
            continue;
        }
        file.rows += 1;
        let get = |n: &str| {
            idx.get(n)
                .and_then(|&i| record.get(i))
                .map(str::trim)
                .unwrap_or("")
        };
        if !get("task").is_empty() {
            tasks.insert(get("task").to_string());
        }
        if get("skills_used").eq_ignore_ascii_case("true") {
            file.skills_used += 1;
        }
        let row = (|| -> Result<CsvRow, String> {
            if record.len() != header.len() {
                return Err(format!(
                    "{} fields, the header has {}",
                    record.len(),
                    header.len()
                ));
            }
            let job_name = get("job_name");
            let task = get("task");
            if job_name.is_empty() || task.is_empty() {
                return Err("empty job_name or task".into());
            }
            let condition = match get("condition") {
                "noskills" => "no-skills",
                "skills" => "curated",
                other => condition_from(&[other])
                    .ok_or_else(|| format!("condition {other:?} is neither noskills nor skills"))?,
            };
            let run_index: u64 = get("run_index")
                .parse()
                .map_err(|_| format!("run_index {:?} is not a number", get("run_index")))?;
            let reward = match get("reward") {
                "" => None,
                r => Some(
                    r.parse::<f64>()
                        .ok()
                        .filter(|x| x.is_finite())
                        .ok_or_else(|| format!("reward {r:?} is not a number"))?,
                ),
            };
            let finished_normally = parse_bool(get("finished_normally")).ok_or_else(|| {
                format!(
                    "finished_normally {:?} is not True or False",
                    get("finished_normally")
                )
            })?;
            let int = |n: &str| -> Result<Option<i64>, String> {
                match get(n) {
                    "" => Ok(None),
                    v => v
                        .parse()
                        .map(Some)
                        .map_err(|_| format!("{n} {v:?} is not a number")),
                }
            };
            let (total, passed) = (int("tests_total")?, int("tests_passed")?);
            let counted = parse_bool(get("all_tests_counted"));
            let tests = match (total, passed) {
                (Some(0), _) if counted == Some(false) => None,
                (Some(t), Some(p)) => Some((t, p)),
                _ => None,
            };
            Ok(CsvRow {
                job_name: job_name.to_string(),
                task: task.to_string(),
                condition,
                run_index,
                reward,
                finished_normally,
                tests,
                content: record.iter().collect::<Vec<_>>().join("\u{1f}"),
            })
        })();
        match row {
            Ok(r) => {
                let k = (r.task.clone(), r.condition, r.run_index);
                if let Some(first) = seen.get(&k) {
                    file.broken_rows += 1;
                    broken.push((
                        path.to_path_buf(),
                        format!(
                            "line {line}: duplicate of line {first} (same task, condition and run_index)"
                        ),
                    ));
                    continue;
                }
                seen.insert(k, line);
                rows.push(r);
            }
            Err(why) => {
                file.broken_rows += 1;
                broken.push((path.to_path_buf(), format!("line {line}: {why}")));
            }
        }
    }
    file.tasks = tasks.len();

    // Trial k of a condition = its k-th run (distinct run_index values in order).
    let mut runs_of: BTreeMap<&'static str, BTreeSet<u64>> = BTreeMap::new();
    for r in &rows {
        runs_of.entry(r.condition).or_default().insert(r.run_index);
    }
    let rank = |c: &'static str, i: u64| -> u32 {
        runs_of[c].iter().position(|x| *x == i).unwrap_or(0) as u32 + 1
    };
    let n_trials = runs_of.values().map(BTreeSet::len).max().unwrap_or(0) as u32;

    let tag = tag_from_file_name(path)
        .or_else(|| rows.first().and_then(|r| tag_from_job_name(&r.job_name)))
        .unwrap_or_else(|| "unknown".into());
    let (agent, model) = split_agent_model(&tag);
    let name = opts.run.clone().unwrap_or_else(|| {
        sanitize_slug(&format!(
            "csv-{agent}-{}",
            model.as_deref().unwrap_or("no-model")
        ))
    });
    let trials: Vec<NewTrial> = rows
        .iter()
        .map(|r| {
            let outcome = match r.reward {
                Some(x) if is_pass(x) => Outcome::Pass,
                Some(_) => Outcome::Fail,
                None => Outcome::NoReward,
            };
            if outcome == Outcome::NoReward {
                file.no_reward += 1;
            }
            let error = match (r.reward, r.finished_normally) {
                (Some(x), _) if !is_pass(x) => Some(format!("verifier reward {x}")),
                (Some(_), _) => None,
                (None, false) => Some(
                    "the run did not finish normally: no verifier reward (infrastructure)".into(),
                ),
                (None, true) => Some("no verifier reward".into()),
            };
            let identity = format!("csv:{}#{}", r.job_name, r.run_index);
            NewTrial {
                key: key_of(&identity, &r.content),
                identity,
                task_id: r.task.clone(),
                condition: r.condition,
                trial_index: rank(r.condition, r.run_index),
                outcome,
                reward: r.reward,
                error,
                tests: r.tests,
                trial_name: r.job_name.clone(),
                aggregated: false,
            }
        })
        .collect();
    Ok(vec![RunPlan {
        name,
        agent,
        model,
        source: Format::Csv,
        origin: path.display().to_string(),
        settings: serde_json::json!({
            "imported_from": path.display().to_string(),
            "format": "skillsbench per-trial csv",
        }),
        planned: tasks
            .iter()
            .flat_map(|t| {
                runs_of
                    .iter()
                    .map(move |(c, r)| ((t.clone(), *c), r.len() as u32))
            })
            .collect(),
        tasks: tasks.into_iter().collect(),
        n_trials,
        trials,
    }])
}

// ---------------------------------------------------------------------------------------------
// The results registry

/// One registry row.
#[derive(Debug, Clone, Deserialize)]
pub struct RegistryRow {
    /// Task id.
    pub task: String,
    /// Config label, `Harness (Model)`.
    pub model: String,
    /// Model label.
    #[serde(rename = "modelShort")]
    pub model_short: String,
    /// Harness label (`Claude Code`, `OpenHands`, …).
    pub harness: String,
    /// Model family.
    #[serde(default)]
    pub family: Option<String>,
    /// `No Skills` or `With Skills`.
    pub condition: String,
    /// Mean reward × 100, rounded to 0.1.
    pub score: f64,
    /// Trials run.
    pub trials: u32,
    /// Trials with reward > 0.
    #[serde(rename = "passCount")]
    pub pass_count: u32,
    /// Trials with reward 1.
    #[serde(rename = "perfectCount")]
    pub perfect_count: u32,
}

/// Per-trial rewards rebuilt from a registry aggregate.
#[derive(Debug, Clone, PartialEq)]
pub struct Reconstruction {
    /// One reward per trial: `perfect` × 1.0, then `pass − perfect` × the partial reward, then 0.0.
    pub rewards: Vec<f64>,
    /// The partial reward had to be clamped into (0, 1) (the rounding of `score` pushed it out).
    pub clamped: bool,
}

/// Rebuilds `trials` rewards whose mean is `score`/100 from the aggregate: `perfect` trials with
/// reward 1.0, `pass − perfect` trials with the equal partial reward
/// r = (trials·score/100 − perfect)/(pass − perfect), the rest 0.0. The mean is then exactly
/// `score`/100 (to float precision) whenever there are partial trials. Without them the counts
/// decide (perfect/trials exactly), and `score` must agree with them to its rounding.
///
/// `score` is rounded to 0.1, so the true task mean is within 0.0005 of `score`/100 and r within
/// trials·0.0005/(pass − perfect) of the true (equal) partial reward; an r pushed to 0 or 1 by
/// the rounding is clamped into (0, 1) (`clamped`), one further out is an error.
///
/// # Errors
/// A message when the numbers contradict each other.
pub fn reconstruct(
    score: f64,
    trials: u32,
    pass: u32,
    perfect: u32,
) -> Result<Reconstruction, String> {
    if !score.is_finite() || !(-SCORE_HALF_UNIT..=100.0 + SCORE_HALF_UNIT).contains(&score) {
        return Err(format!("score {score} is not in [0, 100]"));
    }
    if trials == 0 || trials > 10_000 {
        return Err(format!("trials {trials} is not in 1..=10000"));
    }
    if perfect > pass || pass > trials {
        return Err(format!(
            "needs perfectCount ≤ passCount ≤ trials, got {perfect} ≤ {pass} ≤ {trials}"
        ));
    }
    let n = trials as f64;
    let mut rewards = vec![1.0; perfect as usize];
    let mut clamped = false;
    if pass == perfect {
        let exact = 100.0 * perfect as f64 / n;
        if (score - exact).abs() > SCORE_HALF_UNIT {
            return Err(format!(
                "score {score} does not match {perfect} perfect of {trials} trials and no partial ones (expected {exact:.1})"
            ));
        }
    } else {
        let partial = (pass - perfect) as f64;
        let r = (n * score / 100.0 - perfect as f64) / partial;
        let slack = n * SCORE_HALF_UNIT / 100.0 / partial;
        if r <= -slack || r >= 1.0 + slack {
            return Err(format!(
                "score {score} cannot come from {perfect} perfect and {} partial of {trials} trials (partial reward would be {r:.4})",
                pass - perfect
            ));
        }
        let c = r.clamp(PARTIAL_MARGIN, 1.0 - PARTIAL_MARGIN);
        clamped = c != r;
        rewards.extend(std::iter::repeat_n(c, (pass - perfect) as usize));
    }
    rewards.resize(trials as usize, 0.0);
    Ok(Reconstruction { rewards, clamped })
}

/// A top-level element of a JSON array: its byte span and the line it starts on.
#[derive(Debug, Clone, Copy)]
struct Element {
    start: usize,
    end: usize,
    line: usize,
}

#[derive(Debug)]
struct ArrayScan {
    elements: Vec<Element>,
    /// What is wrong around the elements (truncated file, text after the array).
    problem: Option<String>,
}

/// Finds the top-level elements of a JSON array without parsing them (strings and nesting are
/// tracked), so each is parsed on its own: a malformed row is reported with its index and line
/// and the others are kept.
fn array_elements(b: &[u8]) -> Result<ArrayScan, String> {
    let mut i = if b.starts_with(&[0xEF, 0xBB, 0xBF]) {
        3
    } else {
        0
    };
    let mut line = 1;
    while i < b.len() && b[i].is_ascii_whitespace() {
        line += usize::from(b[i] == b'\n');
        i += 1;
    }
    if b.get(i) != Some(&b'[') {
        return Err("it does not start with '['".into());
    }
    i += 1;
    let mut elements = Vec::new();
    let (mut depth, mut in_str, mut esc, mut comma) = (0usize, false, false, false);
    let mut start: Option<(usize, usize)> = None;
    let mut closed = false;
    while i < b.len() {
        let c = b[i];
        line += usize::from(c == b'\n');
        if in_str {
            if esc {
                esc = false;
            } else if c == b'\\' {
                esc = true;
            } else if c == b'"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        match c {
            b'"' => {
                in_str = true;
                start.get_or_insert((i, line));
            }
            b'{' | b'[' => {
                depth += 1;
                start.get_or_insert((i, line));
            }
            b'}' | b']' if depth > 0 => depth -= 1,
            b']' => {
                match start.take() {
                    Some((s, l)) => elements.push(Element {
                        start: s,
                        end: i,
                        line: l,
                    }),
                    // `[a, ]`: an empty last element.
                    None if comma => elements.push(Element {
                        start: i,
                        end: i,
                        line,
                    }),
                    None => {}
                }
                closed = true;
                i += 1;
                break;
            }
            b',' if depth == 0 => {
                comma = true;
                let (s, l) = start.take().unwrap_or((i, line));
                elements.push(Element {
                    start: s,
                    end: i,
                    line: l,
                });
            }
            c if c.is_ascii_whitespace() => {}
            _ => {
                start.get_or_insert((i, line));
            }
        }
        i += 1;
    }
    let mut problem = None;
    if !closed {
        if let Some((s, l)) = start {
            elements.push(Element {
                start: s,
                end: b.len(),
                line: l,
            });
        }
        problem = Some("the file ends inside the array (truncated?)".to_string());
    } else if b[i..].iter().any(|c| !c.is_ascii_whitespace()) {
        problem = Some(format!("text after the array's closing ']' (line {line})"));
    }
    Ok(ArrayScan { elements, problem })
}

/// serde_json's message without its position (which is relative to the element).
fn json_message(e: &serde_json::Error, line: usize) -> String {
    let s = e.to_string();
    let msg = s.rsplit_once(" at line ").map_or(s.as_str(), |(m, _)| m);
    let at = line + e.line().saturating_sub(1);
    format!("{msg} (line {at})")
}

fn parse_registry(
    bytes: &[u8],
    path: &Path,
    opts: &ImportOptions,
    file: &mut FileReport,
    broken: &mut Vec<(PathBuf, String)>,
) -> Result<Vec<RunPlan>, String> {
    let scan = array_elements(bytes).map_err(|e| format!("not a JSON array: {e}"))?;
    if let Some(p) = &scan.problem {
        broken.push((path.to_path_buf(), p.clone()));
    }
    #[derive(Deserialize)]
    struct TaskOnly {
        task: String,
    }
    let prefix = opts.run.clone().unwrap_or_else(|| "registry".into());
    let mut tasks = BTreeSet::new();
    // Config (harness, model) → run plan index.
    let mut configs: HashMap<(String, String), usize> = HashMap::new();
    let mut names: HashSet<String> = HashSet::new();
    let mut plans: Vec<RunPlan> = Vec::new();
    let mut seen: HashMap<(String, String, String, &'static str), usize> = HashMap::new();
    for (index, el) in scan.elements.iter().enumerate() {
        file.rows += 1;
        let text = &bytes[el.start..el.end];
        let at = |why: String| format!("row {index} (line {}): {why}", el.line);
        let row: RegistryRow = match serde_json::from_slice(text) {
            Ok(r) => r,
            Err(e) => {
                if let Ok(t) = serde_json::from_slice::<TaskOnly>(text) {
                    tasks.insert(t.task);
                }
                file.broken_rows += 1;
                broken.push((path.to_path_buf(), at(json_message(&e, el.line))));
                continue;
            }
        };
        if !row.task.trim().is_empty() {
            tasks.insert(row.task.clone());
        }
        let checked = (|| -> Result<(&'static str, Reconstruction), String> {
            if row.task.trim().is_empty() || row.harness.trim().is_empty() {
                return Err("empty task or harness".into());
            }
            let condition = match row.condition.as_str() {
                "No Skills" => "no-skills",
                "With Skills" => "curated",
                other => condition_from(&[other]).ok_or_else(|| {
                    format!("condition {other:?} is neither \"No Skills\" nor \"With Skills\"")
                })?,
            };
            let rec = reconstruct(row.score, row.trials, row.pass_count, row.perfect_count)?;
            Ok((condition, rec))
        })();
        let (condition, rec) = match checked {
            Ok(x) => x,
            Err(why) => {
                file.broken_rows += 1;
                broken.push((path.to_path_buf(), at(why)));
                continue;
            }
        };
        let cfg = (row.harness.clone(), row.model.clone());
        let dup = (
            row.harness.clone(),
            row.model.clone(),
            row.task.clone(),
            condition,
        );
        if let Some(first) = seen.get(&dup) {
            file.broken_rows += 1;
            broken.push((
                path.to_path_buf(),
                at(format!(
                    "duplicate of row {first} (same config, task and condition)"
                )),
            ));
            continue;
        }
        seen.insert(dup, index);
        let p = match configs.get(&cfg) {
            Some(p) => *p,
            None => {
                let base = sanitize_slug(&format!("{prefix}-{}-{}", row.harness, row.model_short));
                let mut name = base.clone();
                let mut k = 2;
                while !names.insert(name.clone()) {
                    name = format!("{base}-{k}");
                    k += 1;
                }
                plans.push(RunPlan {
                    name,
                    agent: sanitize_slug(&row.harness),
                    model: Some(row.model_short.clone()),
                    source: Format::Registry,
                    origin: path.display().to_string(),
                    settings: serde_json::json!({
                        "imported_from": path.display().to_string(),
                        "format": "skillsbench results registry",
                        "harness": row.harness,
                        "model": row.model,
                        "family": row.family,
                    }),
                    tasks: Vec::new(),
                    n_trials: 0,
                    trials: Vec::new(),
                    planned: BTreeMap::new(),
                });
                configs.insert(cfg, plans.len() - 1);
                plans.len() - 1
            }
        };
        if row.pass_count > row.perfect_count {
            file.partial_rows += 1;
        }
        if rec.clamped {
            file.clamped += 1;
        }
        let plan = &mut plans[p];
        plan.n_trials = plan.n_trials.max(row.trials);
        plan.planned
            .insert((row.task.clone(), condition), row.trials);
        let content = format!(
            "{}|{}|{}|{}",
            row.score, row.trials, row.pass_count, row.perfect_count
        );
        for (k, reward) in rec.rewards.iter().enumerate() {
            let k = k as u32 + 1;
            let identity = format!(
                "registry:{}|{}|{}|{condition}#{k}",
                row.harness, row.model, row.task
            );
            let pass = is_pass(*reward);
            plan.trials.push(NewTrial {
                key: key_of(&identity, &content),
                identity,
                task_id: row.task.clone(),
                condition,
                trial_index: k,
                outcome: if pass { Outcome::Pass } else { Outcome::Fail },
                reward: Some(*reward),
                error: (!pass).then(|| {
                    format!(
                        "reward {reward:.4}, reconstructed from the registry (score {}, {} of {} trials with reward > 0, {} perfect)",
                        row.score, row.pass_count, row.trials, row.perfect_count
                    )
                }),
                tests: None,
                trial_name: format!("{}__registry-{condition}-{k}", row.task),
                aggregated: true,
            });
        }
    }
    file.tasks = tasks.len();
    let tasks: Vec<String> = tasks.into_iter().collect();
    for plan in &mut plans {
        plan.tasks = tasks.clone();
    }
    Ok(plans)
}

// ---------------------------------------------------------------------------------------------
// Pass rate over trials with a verdict

/// A pass rate over the trials that have a verifier reward.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct VerdictRate {
    /// Mean over the tasks with at least one such trial of their mean reward over those trials.
    pub pass_rate: f64,
    /// Tasks counted.
    pub tasks: usize,
    /// Trials counted.
    pub trials: usize,
    /// Finished trials left out: no reward (no-reward, build or runtime errors, cancelled).
    pub excluded: usize,
}

/// The pass rate of `condition` counting only trials with a verdict: per task of `task_ids`, the
/// mean reward of its latest attempts (indices 1..=`n_trials`) that finished with a verifier
/// reward; the mean over the tasks that have one. Method D instead counts a trial without reward
/// as 0 over every task: the difference between the two is what infrastructure failures cost.
/// `None` when no task has a verdict.
pub fn verdict_pass_rate<T: Scored>(
    task_ids: &[String],
    n_trials: u32,
    condition: &str,
    trials: &[T],
) -> Option<VerdictRate> {
    let selected: HashSet<&str> = task_ids.iter().map(String::as_str).collect();
    let mut per_task: HashMap<&str, (f64, usize)> = HashMap::new();
    let mut seen: HashSet<(&str, u32)> = HashSet::new();
    let (mut counted, mut excluded) = (0, 0);
    for t in trials {
        if t.condition() != condition
            || t.superseded()
            || t.trial_index() == 0
            || t.trial_index() > n_trials
            || !selected.contains(t.task_id())
            || t.status() != TrialStatus::Done
            || !seen.insert((t.task_id(), t.trial_index()))
        {
            continue;
        }
        match t.reward() {
            Some(r) if !matches!(t.outcome(), Some(Outcome::Cancelled | Outcome::Interrupted)) => {
                let e = per_task.entry(t.task_id()).or_default();
                e.0 += r.clamp(0.0, 1.0);
                e.1 += 1;
                counted += 1;
            }
            _ => excluded += 1,
        }
    }
    if per_task.is_empty() {
        return None;
    }
    let sum: f64 = per_task.values().map(|(s, n)| s / *n as f64).sum();
    Some(VerdictRate {
        pass_rate: sum / per_task.len() as f64,
        tasks: per_task.len(),
        trials: counted,
        excluded,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_and_model_from_names() {
        assert_eq!(
            split_agent_model("gemini-cli-gemini3flash"),
            ("gemini-cli".into(), Some("gemini3flash".into()))
        );
        assert_eq!(
            split_agent_model("claude-code-claude-opus-4-5"),
            ("claude-code".into(), Some("claude-opus-4-5".into()))
        );
        assert_eq!(
            split_agent_model("terminus-2-gpt-5"),
            ("terminus-2".into(), Some("gpt-5".into()))
        );
        assert_eq!(
            split_agent_model("myagent-m1"),
            ("myagent".into(), Some("m1".into()))
        );
        assert_eq!(split_agent_model("oracle"), ("oracle".into(), None));
        assert_eq!(
            tag_from_file_name(Path::new(
                "/x/experiment_runs__gemini-cli-gemini3flash_subset.csv"
            ))
            .as_deref(),
            Some("gemini-cli-gemini3flash")
        );
        assert_eq!(tag_from_file_name(Path::new("runs.csv")), None);
        assert_eq!(
            tag_from_job_name("gemini-cli-gemini3flash-noskills-3d-scan-calc-a2c944").as_deref(),
            Some("gemini-cli-gemini3flash")
        );
    }

    #[test]
    fn reconstruction_keeps_the_mean() {
        // 2 perfect + 1 partial: r = 3·0.683 − 2 = 0.049.
        let r = reconstruct(68.3, 3, 3, 2).unwrap();
        assert_eq!(r.rewards[..2], [1.0, 1.0]);
        assert!((r.rewards.iter().sum::<f64>() / 3.0 - 0.683).abs() < 1e-15);
        assert!(!r.clamped);
        // No partials: the counts decide.
        assert_eq!(
            reconstruct(33.3, 3, 1, 1).unwrap().rewards,
            vec![1.0, 0.0, 0.0]
        );
        assert_eq!(reconstruct(0.0, 3, 0, 0).unwrap().rewards, vec![0.0; 3]);
        // Rounding pushes r to 1: clamped below 1 (still a fail).
        let r = reconstruct(100.0, 3, 3, 2).unwrap();
        assert!(r.clamped && r.rewards[2] < 1.0 && !is_pass(r.rewards[2]));
        // Contradictions.
        assert!(reconstruct(50.0, 3, 1, 1).is_err());
        assert!(reconstruct(10.0, 3, 0, 0).is_err());
        assert!(reconstruct(80.0, 3, 1, 0).is_err());
        assert!(reconstruct(50.0, 3, 2, 3).is_err());
        assert!(reconstruct(f64::NAN, 3, 1, 0).is_err());
    }

    #[test]
    fn array_elements_have_lines_and_survive_bad_rows() {
        let text = b"[\n {\"a\": \"x,]}\"},\n {\"b\": [1, 2]},\n 12..3,\n {\"c\": 1}\n]\n";
        let s = array_elements(text).unwrap();
        let parts: Vec<(&str, usize)> = s
            .elements
            .iter()
            .map(|e| {
                (
                    std::str::from_utf8(&text[e.start..e.end]).unwrap().trim(),
                    e.line,
                )
            })
            .collect();
        assert_eq!(
            parts,
            vec![
                ("{\"a\": \"x,]}\"}", 2),
                ("{\"b\": [1, 2]}", 3),
                ("12..3", 4),
                ("{\"c\": 1}", 5)
            ]
        );
        assert!(s.problem.is_none());
        let t = array_elements(b"[{\"a\":1},{\"b\":").unwrap();
        assert_eq!(t.elements.len(), 2);
        assert!(t.problem.is_some());
        assert!(array_elements(b"{}").is_err());
        assert!(array_elements(b"[]").unwrap().elements.is_empty());
    }
}
