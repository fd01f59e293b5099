//! `skillscope import`: results from elsewhere into the store — Harbor job folders ([`jobs`]) and
//! the two result files SkillsBench's authors publish ([`published`]: the per-trial CSV read by
//! [`csv`], the website's results registry read by [`registry`]). [`detect`](mod@detect) decides what a root
//! is before anything is imported; this module owns the types every importer shares and the one
//! entry point, [`import`].
//!
//! Imports are idempotent: every trial has an import key (Harbor's trial id, or the data's own
//! identity and content hash), so importing the same data again adds nothing.

pub mod csv;
pub mod detect;
pub mod jobs;
pub mod published;
pub mod registry;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use sha2::{Digest, Sha256};

pub use detect::detect;
pub use jobs::{JobPlan, normalize_time, outcome_of};

use crate::domain::{Outcome, RunTaskRow};
use crate::skillsbench::Catalog;
use crate::store::import_ledger::ImportTx;
use crate::store::{Store, StoreError};

/// What to import.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Folders to walk, and published result files (per-trial CSV, results registry).
    pub roots: Vec<PathBuf>,
    /// Condition for every trial (overrides detection): a condition key.
    pub condition: Option<String>,
    /// One run for everything, by this name.
    pub run: Option<String>,
    /// Domains for the imported tasks.
    pub catalog: Catalog,
    /// Trials per write transaction.
    pub batch: usize,
}

/// What happened.
#[derive(Debug, Clone, Default)]
pub struct ImportReport {
    /// Job `result.json` files seen.
    pub jobs: usize,
    /// Trial `result.json` files seen.
    pub trials_seen: usize,
    /// New attempts recorded.
    pub imported: usize,
    /// Trials already in the store (re-import).
    pub already_present: usize,
    /// Earlier attempts of skillscope's own retried trials, recorded as superseded by a later
    /// attempt of the same trial (they do not count: [`jobs`]'s `attempts`).
    pub superseded_attempts: usize,
    /// Files skipped, with why.
    pub broken: Vec<(PathBuf, String)>,
    /// Trials imported without a trajectory.
    pub missing_trajectory: Vec<PathBuf>,
    /// Trials imported whose `agent/trajectory.json` is not ATIF v1.x (their steps and skill use
    /// are unknown; the trial itself is recorded).
    pub not_atif: Vec<PathBuf>,
    /// Trials whose condition could not be told (recorded as `unknown`).
    pub unknown_condition: usize,
    /// Harbor 0.26 trials without a valid reward (`reward_valid` false: no reward, or an
    /// exception whose error policy voids it), imported without a verdict whatever their reward
    /// file said.
    pub without_valid_reward: Vec<PathBuf>,
    /// Multi-step Harbor trials (`step_results`), scored by their trial-level reward.
    pub multi_step: usize,
    /// Runs written to, by name.
    pub runs: Vec<String>,
    /// Published result files imported (per-trial CSV, results registry).
    pub files: Vec<FileReport>,
    /// Files found in a folder, outside any Harbor job or trial folder, that were not imported,
    /// with why (an unknown format, a CSV with other columns, …).
    pub skipped: Vec<(PathBuf, String)>,
    /// Wall time.
    pub elapsed: Duration,
}

/// Import errors (per-trial problems are in the report, not here).
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A root cannot be read.
    #[error("{path}: {message}")]
    Root {
        /// The folder.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The condition named by job/trial folder names or a task path: `self-generated` when any hint
/// names the paper's self-generated-skills runs ("selfgen", "self-generated", or a skills folder
/// that is generated: "tasks_no_skills_generate", "skills-generate"), whatever else the hints say
/// (those runs' jobs are named after the no-skills or skills runs they ablate); else `no-skills`
/// for "noskills", "no-skills", "no_skills", "without-skills", "baseline"; `curated` for
/// "skills", "with-skills", "curated"; `None` otherwise. Earlier hints win.
pub fn condition_from(hints: &[&str]) -> Option<&'static str> {
    let tokens_of = |h: &str| -> Vec<String> {
        h.to_lowercase()
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect()
    };
    let generated = hints.iter().any(|h| {
        let t = tokens_of(h);
        let has = |w: &str| t.iter().any(|x| x == w);
        t.iter()
            .any(|x| matches!(x.as_str(), "selfgen" | "selfgenerated"))
            || t.windows(2)
                .any(|w| w[0] == "self" && matches!(w[1].as_str(), "generated" | "gen"))
            || ((has("generate") || has("generated"))
                && t.iter().any(|x| x.starts_with("skill") || x == "noskills"))
    });
    if generated {
        return Some("self-generated");
    }
    for h in hints {
        // A folder named `<run>__<condition>` (skillscope's job folders): the part after the
        // last `__` names the condition, whatever the run's name says (`…-noskills-curated__curated`).
        let last = h
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or_default();
        let parts = last.rsplit("__").skip_while(|p| p.is_empty());
        if let Some(c) = parts.map(named_condition).find(Option::is_some) {
            return c;
        }
        if let Some(c) = named_condition(h) {
            return Some(c);
        }
    }
    None
}

/// The condition one hint's words name (see [`condition_from`]), without the self-generated
/// reading.
fn named_condition(hint: &str) -> Option<&'static str> {
    let lower = hint.to_lowercase();
    let tokens: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .collect();
    let no = tokens
        .iter()
        .any(|t| matches!(*t, "noskills" | "noskill" | "withoutskills" | "baseline"))
        || tokens
            .windows(2)
            .any(|w| (w[0] == "no" || w[0] == "without") && w[1].starts_with("skill"));
    if no {
        return Some("no-skills");
    }
    tokens
        .iter()
        .any(|t| matches!(*t, "skills" | "withskills" | "curated" | "skill"))
        .then_some("curated")
}

/// An imported task's row: domain and difficulty from the catalog (`unknown` when it does not
/// know the task).
pub(super) fn imported_task(catalog: &Catalog, task_id: &str, path: &str) -> RunTaskRow {
    let (domain, difficulty) = catalog
        .lookup(task_id)
        .unwrap_or(("unknown".into(), "unknown".into()));
    RunTaskRow {
        task_id: task_id.to_string(),
        domain,
        difficulty,
        path: path.to_string(),
        problems: Vec::new(),
        digest: None,
    }
}

/// The conditions run `id` has trials of: no-skills first, then curated, then the rest by name.
pub(super) fn run_conditions(tx: &ImportTx<'_>, id: i64) -> Result<Vec<String>, StoreError> {
    let mut conds = tx.trial_conditions(id)?;
    let rank = |c: &str| match c {
        "no-skills" => 0,
        "curated" => 1,
        _ => 2,
    };
    conds.sort_by(|a, b| (rank(a), a).cmp(&(rank(b), b)));
    Ok(conds)
}

/// Imports the trials under `opts.roots` into `store`: Harbor job and trial folders at any depth,
/// and every published result file (per-trial CSV, results registry) given or found in a folder
/// outside the Harbor folders; other such files are listed in [`ImportReport::skipped`]. Blocking;
/// call from a blocking thread.
///
/// # Errors
/// [`ImportError`] for an unreadable root or a database failure (what was committed before
/// stays).
pub fn import(store: &Store, opts: &ImportOptions) -> Result<ImportReport, ImportError> {
    let t0 = Instant::now();
    let mut report = ImportReport::default();
    // Tell every root's kind before importing anything: folders are walked, files must be a
    // published result file.
    let mut folders = Vec::new();
    let mut files = Vec::new();
    for root in &opts.roots {
        if root.is_dir() {
            folders.push(root.clone());
            continue;
        }
        let format = detect::detect(root).map_err(|message| ImportError::Root {
            path: root.clone(),
            message,
        })?;
        if opts.condition.is_some() {
            return Err(ImportError::Root {
                path: root.clone(),
                message: "--condition does not apply to a published result file: its rows name \
                          their condition"
                    .into(),
            });
        }
        files.push((root.clone(), format));
    }
    let loose = jobs::import_folders(store, opts, &folders, &mut report)?;
    for path in loose {
        match detect::detect(&path) {
            Ok(_) if opts.condition.is_some() => report.skipped.push((
                path,
                "a published result file names its conditions; --condition does not apply \
                 (import it on its own, without --condition)"
                    .into(),
            )),
            Ok(format) => files.push((path, format)),
            Err(why) => report.skipped.push((path, why)),
        }
    }
    for (path, format) in &files {
        published::import_file(store, path, *format, opts, &mut report)?;
    }
    report.runs.sort();
    report.runs.dedup();
    report.elapsed = t0.elapsed();
    Ok(report)
}

/// Largest published file read.
const MAX_FILE: u64 = 256 * 1024 * 1024;

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
    /// registry row's `trials` (see [`ImportTx::set_trial_plan`](crate::store::ImportTx::set_trial_plan)).
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
