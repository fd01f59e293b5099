//! The two-round experiment as one resumable pipeline (`evaluation-plan.md`, "Evaluation flow"):
//!
//! 1. `round1` — run `<name>-round1` with conditions A (no skills) and B (curated skills), and C
//!    (self-generated skills) when the plan has `[self_generated]`;
//! 2. `learn` — LS-A learns from the A trials, LS-B (starting with the curated skills) from the
//!    B trials, both spaces at once, each in its own learning order ([`crate::acontext::learn`]);
//!    with a `[split]`, only the train tasks' trials ([`split`]);
//! 3. `export` — each space is exported to `<exports>/<name>/<label>-v<N>`
//!    ([`crate::acontext::versions::export_version`]);
//! 4. `round2` — run `<name>-round2` with A' = LS-A's export and B' = LS-B's, each task given the
//!    skills `round2_skills` selects ([`selection`]: `skills:<export>` for all, else
//!    `skills-by-task:<export>-<mode>`); with a split, on the test tasks (or all for
//!    `round2 = "all"`);
//! 5. `done` — the conditions scored with Method D and the plan's comparisons.
//!
//! With `--baseline-from RUN` ([`baseline`]), round 1 is a run already in the database: checked
//! against the plan, recorded (`experiment_baselines`), and the experiment moves on to learning
//! from its trials; the experiment's `round1_run` is that run.
//!
//! A split is computed once, before round 1, from the plan's seed, and stored with the experiment
//! (`experiments.split`); the skills each task received in round 2 are stored in `round2_skills`.
//!
//! The phase is stored with the experiment (`experiments.phase`) and each phase is itself
//! resumable, so running the same plan again continues where the last process stopped. A phase
//! moves on only when it is complete: every trial done, every trial learned (or deliberately not
//! learned), every space exported.

pub mod baseline;
pub mod dry_run;
pub mod forecast;
mod phases;
pub mod plan;
pub mod selection;
pub mod split;

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::acontext::Client;
use crate::acontext::learn::{LearnError, LearnOptions, LearnReport, Progress};
use crate::acontext::versions::VersionError;
use crate::analysis::metrics::{ConditionSummary, summarize_planned};
use crate::engine::{Engine, EngineError, RunRequest};
use crate::store::experiment_ledger::RoundRecord;
use crate::store::learning::{ExperimentRow, Round2SkillsRow};
use crate::store::{Store, StoreError};
use phases::{Pipeline, Step};
use plan::Plan;
use selection::Round2Skills;

/// Experiment phases, in order.
pub const PHASES: [&str; 5] = ["round1", "learn", "export", "round2", "done"];

/// A sink for phase messages.
pub type Notify = Arc<dyn Fn(&str) + Send + Sync>;

/// Everything an experiment needs besides the store and the Acontext client.
#[derive(Debug, Clone)]
pub struct ExperimentSetup {
    /// The plan.
    pub plan: Plan,
    /// Round 1's request (conditions A and B); round 2 copies it with the exported conditions.
    pub round1: RunRequest,
    /// Where exports go (`<exports>/<name>/…`).
    pub exports_root: PathBuf,
    /// Learning settings shared by both spaces (label, run, condition and curated are set per
    /// space).
    pub learn: LearnOptions,
    /// Round 1 reused from a stored run instead of run (`--baseline-from`), when given.
    pub baseline: Option<baseline::BaselineFrom>,
}

/// Errors that stop an experiment (its state is kept; running it again resumes).
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// A round could not run.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The learning phase stopped.
    #[error(transparent)]
    Learn(#[from] LearnError),
    /// The export phase failed.
    #[error(transparent)]
    Export(#[from] VersionError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A phase could not complete; the message says what is left.
    #[error("{0}")]
    Incomplete(String),
    /// The plan cannot be carried out as written (a split that leaves a side empty, an
    /// unreadable prompt file).
    #[error("plan: {0}")]
    Plan(String),
    /// The run `--baseline-from` names cannot stand for round 1; the message names every
    /// differing field with both values.
    #[error("{0}")]
    Baseline(String),
}

/// One condition of the results.
#[derive(Debug, Clone)]
pub struct ConditionResult {
    /// `A`, `B`, `C`, `A'` or `B'`.
    pub label: &'static str,
    /// The summary (Method D pass rate etc.).
    pub summary: ConditionSummary,
}

/// How an experiment ended.
#[derive(Debug, Clone)]
pub struct ExperimentOutcome {
    /// The experiment row.
    pub experiment: ExperimentRow,
    /// Reached `done`.
    pub finished: bool,
    /// The four conditions (those that have runs so far).
    pub results: Vec<ConditionResult>,
    /// Learning reports of this process, by space label.
    pub learned: Vec<(String, LearnReport)>,
    /// pass@2-adaptive, round 1's pass@2 and the adaptive gain per round pair, overall and by
    /// domain and difficulty ([`crate::analysis::results::Adaptive`]); empty before round 2.
    pub adaptive: Vec<crate::analysis::results::Adaptive>,
    /// The plan's hypotheses answered over all tasks and, with a split, over the same-task and
    /// held-out tasks ([`crate::analysis::hypotheses`]); empty before any run.
    pub hypotheses: Vec<crate::analysis::hypotheses::Hypothesis>,
    /// The whole analysis ([`crate::analysis::results::analyze`]), once round 1 has a run: what
    /// the closing tables render.
    pub analysis: Option<crate::analysis::results::Results>,
}

/// Runs experiments.
#[derive(Clone)]
pub struct Experiment {
    /// The store.
    pub store: Store,
    /// The engine (rounds).
    pub engine: Engine,
    /// The Acontext client.
    pub client: Client,
    /// Stops the pipeline cleanly.
    pub cancel: CancellationToken,
    /// Per-trial learning progress.
    pub progress: Option<Progress>,
    /// Phase messages for the operator.
    pub notify: Option<Notify>,
}

impl Experiment {
    /// Tells the operator `msg` and records it in the event log of run `run` (when the run
    /// exists yet): the learning pipeline's phases show in the dashboard's event log.
    async fn say(&self, run: &str, level: &'static str, msg: &str) {
        tracing::info!("{msg}");
        if let Some(n) = &self.notify {
            n(msg);
        }
        let _ = self.store.add_run_event(run, level, msg.to_string()).await;
    }

    /// Runs one round and records how it ended in its event log.
    async fn round(&self, req: RunRequest) -> Result<crate::engine::RunOutcome, ExperimentError> {
        let name = req.name.clone().unwrap_or_default();
        let result = match crate::engine::PreparedRun::load_off_thread(req).await {
            Ok(run) => self.engine.run(run, self.cancel.clone()).await,
            Err(e) => Err(e),
        };
        match result {
            Ok(out) => {
                self.say(&name, "info", &describe_end(&out)).await;
                Ok(out)
            }
            Err(e) => {
                self.say(&name, "error", &format!("run stopped by an error: {e}"))
                    .await;
                Err(e.into())
            }
        }
    }

    /// Runs (or resumes) the experiment until `done`, a stop, or an error: the phase stored
    /// with the experiment names the next step — round 1, learning, export, round 2 — and each
    /// step moves it on when its phase is complete.
    ///
    /// # Errors
    /// [`ExperimentError`]; the experiment's phase and all recorded work are kept.
    pub async fn run(&self, setup: &ExperimentSetup) -> Result<ExperimentOutcome, ExperimentError> {
        let mut pipeline = Pipeline::start(self, setup).await?;
        loop {
            if self.cancel.is_cancelled() {
                return pipeline.stopped();
            }
            let step = match pipeline.exp.phase.as_str() {
                "round1" => pipeline.round1().await?,
                "learn" => pipeline.learn().await?,
                "export" => pipeline.export().await?,
                "round2" => pipeline.round2().await?,
                _ => return pipeline.done().await,
            };
            if step == Step::Stopped {
                return pipeline.stopped();
            }
            pipeline.reload().await?;
        }
    }
}

/// A learning pass in a few words: trials per step, mislabeled trials and errors.
fn learn_summary(r: &LearnReport) -> String {
    let mut parts: Vec<String> = r.steps.iter().map(|(k, n)| format!("{k} {n}")).collect();
    if !r.mislabeled.is_empty() {
        parts.push(format!("{} MISLABELED", r.mislabeled.len()));
    }
    if !r.errors.is_empty() {
        parts.push(format!("{} with errors", r.errors.len()));
    }
    if parts.is_empty() {
        "no trials".to_string()
    } else {
        parts.join(" · ")
    }
}

/// How a run that ended without an error ended, as its event log says it: finished, or stopped
/// and why.
pub fn describe_end(outcome: &crate::engine::RunOutcome) -> String {
    match &outcome.stop {
        _ if outcome.finished && outcome.cancelled > 0 => format!(
            "run {}: every other planned trial has a verdict (cancelled trials count 0; `skillscope retry {} --cancelled` and the same command run them)",
            crate::engine::finished_note(outcome.cancelled),
            outcome.run.name
        ),
        _ if outcome.finished => "run finished: every planned trial has a verdict".to_string(),
        Some(reason) => format!("run stopped: {}", reason.describe()),
        None => "run stopped".to_string(),
    }
}

/// What round 2 gives each of its tasks from the export `export_dir` of space `label`: rows for
/// `round2_skills` and the per-task selection (task → skill folders). `tasks` are round 1's
/// (every task's domain and curated skills); `round2` the tasks round 2 runs (`None`: all).
fn round2_selection(
    export_dir: &std::path::Path,
    tasks: &[crate::domain::RunTaskRow],
    sources: &[(String, String)],
    curated: bool,
    round2: Option<Vec<String>>,
    mode: Round2Skills,
    label: &str,
) -> (
    Vec<Round2SkillsRow>,
    std::collections::BTreeMap<String, Vec<String>>,
) {
    use std::collections::{BTreeMap, BTreeSet};
    let mut owners: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    if curated {
        for t in tasks {
            let dir = std::path::Path::new(&t.path).join("environment/skills");
            for s in crate::skillsbench::skill::scan_skills_dir(&dir) {
                let name = s
                    .frontmatter
                    .map(|f| f.name)
                    .unwrap_or_else(|| s.dir_name.clone());
                owners.entry(name).or_default().insert(t.task_id.clone());
            }
        }
    }
    let prov = selection::provenance(export_dir, sources, &owners);
    let domain_of: BTreeMap<String, String> = tasks
        .iter()
        .map(|t| (t.task_id.clone(), t.domain.clone()))
        .collect();
    let mut rows = Vec::new();
    let mut by_task = BTreeMap::new();
    for t in tasks
        .iter()
        .filter(|t| round2.as_ref().is_none_or(|r| r.contains(&t.task_id)))
    {
        let skills = selection::select(mode, &prov, &t.task_id, &t.domain, &domain_of);
        rows.push(Round2SkillsRow {
            label: label.to_string(),
            task_id: t.task_id.clone(),
            mode: mode.as_str().to_string(),
            n_skills: skills.len() as u32,
            skills: skills.clone(),
        });
        by_task.insert(t.task_id.clone(), skills);
    }
    (rows, by_task)
}

/// The conditions of an experiment's runs (`rounds`, as [`crate::store::ExperimentLedger::rounds`] reads
/// them), labelled A, B, C (round 1) and A', B' (round 2), scored with Method D over one task
/// list for all of them: round 1's, or — when a split ran round 2 on fewer tasks — round 2's (the
/// tasks both rounds ran). Empty before round 1 has a run.
pub fn results(exp: &ExperimentRow, rounds: &[RoundRecord]) -> Vec<ConditionResult> {
    let mut out = Vec::new();
    let Some(r1) = rounds.iter().find(|r| r.round == 1) else {
        return out;
    };
    let task_ids = match rounds.iter().find(|r| r.round == 2) {
        Some(r2) if exp.split.is_some() => &r2.task_ids,
        _ => &r1.task_ids,
    };
    for r in rounds {
        let labels: &[&'static str] = if r.round == 1 {
            &["A", "B", "C"]
        } else {
            &["A'", "B'"]
        };
        let summaries = summarize_planned(task_ids, &r.plan, &r.run.conditions, &r.trials);
        for (s, label) in summaries.into_iter().zip(labels.iter()) {
            out.push(ConditionResult { label, summary: s });
        }
    }
    out
}

/// The experiment's comparisons: (name, with, without) — B vs A (round 1's curated effect, the
/// yardstick), then the plan's primary four: A' vs A (does learning from failure
/// help?), B' vs B (can Acontext improve curated skills?), A' vs B (can learned-from-scratch
/// match curated?), B' vs A' (does the starting point matter?) — then A' vs C and C vs A when
/// condition C (self-generated skills) ran.
pub const COMPARISONS: [(&str, &str, &str); 7] = crate::analysis::results::EXPERIMENT_COMPARISONS;
