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
//! A split is computed once, before round 1, from the plan's seed, and stored with the experiment
//! (`experiments.split`); the skills each task received in round 2 are stored in `round2_skills`.
//!
//! The phase is stored with the experiment (`experiments.phase`) and each phase is itself
//! resumable, so running the same plan again continues where the last process stopped. A phase
//! moves on only when it is complete: every trial done, every trial learned (or deliberately not
//! learned), every space exported.

pub mod dry_run;
pub mod forecast;
pub mod plan;
pub mod selection;
pub mod split;

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::acontext::Client;
use crate::acontext::learn::{LearnError, LearnOptions, LearnReport, Learner, Progress};
use crate::acontext::versions::{VersionError, export_version};
use crate::analysis::metrics::{ConditionSummary, summarize_planned};
use crate::engine::{Engine, EngineError, RunRequest};
use crate::skillsbench::Condition;
use crate::store::learning::{self as lq, ExperimentRow, SpaceRow};
use crate::store::{Store, StoreError, queries};
use plan::Plan;
use selection::Round2Skills;
use split::Split;

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
        match self.engine.run(req, self.cancel.clone()).await {
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

    async fn set_phase(
        &self,
        name: &str,
        phase: &str,
        note: Option<String>,
    ) -> Result<(), StoreError> {
        let name = name.to_string();
        let phase = phase.to_string();
        self.store
            .writer()
            .write(move |c| lq::set_experiment_phase(c, &name, &phase, note.as_deref()))
            .await
    }

    /// Runs (or resumes) the experiment until `done`, a stop, or an error.
    ///
    /// # Errors
    /// [`ExperimentError`]; the experiment's phase and all recorded work are kept.
    pub async fn run(&self, setup: &ExperimentSetup) -> Result<ExperimentOutcome, ExperimentError> {
        let name = setup.plan.name();
        let r1 = format!("{name}-round1");
        let r2 = format!("{name}-round2");
        let plan_json = setup.plan.public_json();
        let (n, a, b) = (name.clone(), r1.clone(), r2.clone());
        let mut exp = self
            .store
            .writer()
            .write(move |c| lq::find_or_insert_experiment(c, &n, &plan_json, &a, &b))
            .await?;
        let mut learned = Vec::new();
        let split = self.ensure_split(setup, &exp).await?;
        let condition_c = setup
            .plan
            .condition_c()
            .map_err(|e| ExperimentError::Plan(e.to_string()))?;
        loop {
            if self.cancel.is_cancelled() {
                return self.outcome(exp, learned, false);
            }
            match exp.phase.as_str() {
                "round1" => {
                    let mut conditions = vec![Condition::NoSkills, Condition::Curated];
                    conditions.extend(condition_c.clone());
                    self.say(
                        &r1,
                        "info",
                        &format!(
                            "{name}: round 1 (conditions {}) as run {r1}",
                            if conditions.len() == 3 {
                                "A, B and C"
                            } else {
                                "A and B"
                            }
                        ),
                    )
                    .await;
                    let mut req = setup.round1.clone();
                    req.name = Some(r1.clone());
                    req.conditions = conditions;
                    let out = self.round(req).await?;
                    if !out.finished {
                        return self.outcome(exp, learned, false);
                    }
                    self.set_phase(&name, "learn", None).await?;
                }
                "learn" => {
                    self.say(
                        &r1,
                        "info",
                        &format!(
                            "{name}: learning ({} from A, {} from B)",
                            setup.plan.spaces.a.label, setup.plan.spaces.b.label
                        ),
                    )
                    .await;
                    let learner = Learner {
                        store: self.store.clone(),
                        client: self.client.clone(),
                        cancel: self.cancel.clone(),
                        progress: self.progress.clone(),
                    };
                    let opts_a = LearnOptions {
                        label: setup.plan.spaces.a.label.clone(),
                        run: r1.clone(),
                        condition: Condition::NoSkills.key(),
                        curated: false,
                        keep_defaults: setup.plan.spaces.a.keep_default_skills,
                        experiment: Some(name.clone()),
                        tasks: split.as_ref().map(|s| s.train.clone()),
                        ..setup.learn.clone()
                    };
                    let opts_b = LearnOptions {
                        label: setup.plan.spaces.b.label.clone(),
                        run: r1.clone(),
                        condition: Condition::Curated.key(),
                        curated: true,
                        keep_defaults: setup.plan.spaces.b.keep_default_skills,
                        experiment: Some(name.clone()),
                        tasks: split.as_ref().map(|s| s.train.clone()),
                        ..setup.learn.clone()
                    };
                    let (ra, rb) = tokio::join!(learner.learn(&opts_a), learner.learn(&opts_b));
                    if matches!(ra, Err(LearnError::Cancelled))
                        || matches!(rb, Err(LearnError::Cancelled))
                    {
                        return self.outcome(exp, learned, false);
                    }
                    for (label, r) in [(&opts_a.label, &ra), (&opts_b.label, &rb)] {
                        if let Err(e) = r {
                            self.say(
                                &r1,
                                "error",
                                &format!(
                                    "{label}: learning stopped by an error (run the plan again to resume): {e}"
                                ),
                            )
                            .await;
                        }
                    }
                    let (ra, rb) = (ra?, rb?);
                    let mut left = Vec::new();
                    for (label, r) in [(&opts_a.label, &ra), (&opts_b.label, &rb)] {
                        if !r.mislabeled.is_empty() {
                            self.say(
                                &r1,
                                "warn",
                                &format!(
                                    "{label}: {} trial(s) MISLABELED by the server's task agent (learned with the wrong verdict): {}",
                                    r.mislabeled.len(),
                                    r.mislabeled.join(", ")
                                ),
                            )
                            .await;
                        }
                        if !r.errors.is_empty() {
                            left.push(format!("{label}: {}", r.errors.join("; ")));
                        }
                    }
                    for (label, r) in [(&opts_a.label, &ra), (&opts_b.label, &rb)] {
                        self.say(
                            &r1,
                            "info",
                            &format!("{label}: learning pass finished ({})", learn_summary(r)),
                        )
                        .await;
                    }
                    learned.push((opts_a.label.clone(), ra));
                    learned.push((opts_b.label.clone(), rb));
                    if !left.is_empty() {
                        let note = format!(
                            "learning incomplete (run the plan again to retry): {}",
                            left.join(" | ")
                        );
                        self.say(&r1, "warn", &note).await;
                        self.set_phase(&name, "learn", Some(note.clone())).await?;
                        return Err(ExperimentError::Incomplete(note));
                    }
                    self.set_phase(&name, "export", None).await?;
                }
                "export" => {
                    let root = setup.exports_root.join(&name);
                    for label in [&setup.plan.spaces.a.label, &setup.plan.spaces.b.label] {
                        let (space, have) = self.exports_of(&r1, label).await?;
                        if let Some(e) = have.last() {
                            self.say(
                                &r1,
                                "info",
                                &format!("{label}: already exported to {}", e.dir),
                            )
                            .await;
                            continue;
                        }
                        let (row, report) =
                            export_version(&self.store, &self.client, &space, &root).await?;
                        self.say(
                            &r1,
                            "info",
                            &format!(
                                "{label}: exported {} skill(s) to {}{}",
                                row.n_skills,
                                row.dir,
                                if report.refused.is_empty() {
                                    String::new()
                                } else {
                                    format!(
                                        "; refused {}: {}",
                                        report.refused.len(),
                                        report
                                            .refused
                                            .iter()
                                            .map(|r| r.to_string())
                                            .collect::<Vec<_>>()
                                            .join("; ")
                                    )
                                }
                            ),
                        )
                        .await;
                    }
                    self.set_phase(&name, "round2", None).await?;
                }
                "round2" => {
                    let mut conditions = Vec::new();
                    for label in [&setup.plan.spaces.a.label, &setup.plan.spaces.b.label] {
                        conditions.push(
                            self.round2_condition(setup, &r1, label, split.as_ref())
                                .await?,
                        );
                    }
                    let mut req = setup.round1.clone();
                    if let Some(s) = &split {
                        req.task_filter = s.round2_tasks();
                    }
                    self.say(
                        &r2,
                        "info",
                        &format!(
                            "{name}: round 2 (conditions A' and B'{}) as run {r2}",
                            match &split {
                                Some(s) => format!(
                                    "; {} task(s): {}",
                                    req.task_filter.len(),
                                    if s.round2 == split::Round2Tasks::All {
                                        "train and test"
                                    } else {
                                        "the held-out test tasks"
                                    }
                                ),
                                None => String::new(),
                            }
                        ),
                    )
                    .await;
                    req.name = Some(r2.clone());
                    req.conditions = conditions;
                    // Before round 2 is paid for: what it costs and what it can detect.
                    self.say_forecast(setup, &r1, 2).await;
                    // The budget is the experiment's: round 2 gets what round 1 left.
                    if let Some(max) = req.settings.max_cost_usd {
                        let spent = self.spent_on(&r1).await?;
                        req.settings.max_cost_usd = Some((max - spent).max(0.0));
                    }
                    let out = self.round(req).await?;
                    if !out.finished {
                        return self.outcome(exp, learned, false);
                    }
                    self.set_phase(&name, "done", None).await?;
                }
                _ => return self.outcome(self.reload(&name).await?, learned, true),
            }
            exp = self.reload(&name).await?;
        }
    }

    /// What run `run` cost, USD (every attempt, superseded ones too).
    async fn spent_on(&self, run: &str) -> Result<f64, StoreError> {
        let run = run.to_string();
        self.store
            .writer()
            .write(move |c| {
                let Some(r) = queries::find_run(c, &run)? else {
                    return Ok(0.0);
                };
                Ok(queries::all_trials(c, r.id)?
                    .iter()
                    .filter_map(|t| t.cost_usd)
                    .sum())
            })
            .await
    }

    /// The experiment's held-out split: the stored one, or — the first time, when the plan has a
    /// `[split]` — computed from the round-1 task selection and stored.
    async fn ensure_split(
        &self,
        setup: &ExperimentSetup,
        exp: &ExperimentRow,
    ) -> Result<Option<Split>, ExperimentError> {
        let Some(plan) = &setup.plan.split else {
            return Ok(None);
        };
        if let Some(stored) = &exp.split {
            return serde_json::from_value(stored.clone())
                .map(Some)
                .map_err(|e| {
                    ExperimentError::Plan(format!("the stored split is unreadable: {e}"))
                });
        }
        let (dir, catalog, filter) = (
            setup.round1.tasks_dir.clone(),
            setup.round1.catalog.clone(),
            setup.round1.task_filter.clone(),
        );
        let taskset = tokio::task::spawn_blocking(move || {
            crate::skillsbench::TaskSet::load(&dir, &catalog, &filter)
        })
        .await
        .map_err(|e| ExperimentError::Plan(e.to_string()))?
        .map_err(EngineError::from)?;
        let tasks: Vec<split::SplitTask> = taskset
            .tasks
            .iter()
            .map(|t| split::SplitTask {
                id: t.id.clone(),
                domain: t.domain.clone(),
                difficulty: t.difficulty.clone(),
            })
            .collect();
        let computed = split::stratified(&tasks, plan).map_err(ExperimentError::Plan)?;
        let json =
            serde_json::to_value(&computed).map_err(|e| ExperimentError::Plan(e.to_string()))?;
        let name = exp.name.clone();
        self.store
            .writer()
            .write(move |c| lq::set_experiment_split(c, &name, &json))
            .await?;
        let message = format!(
            "{}: held-out split ({}, test fraction {}, seed {}): {} train, {} test task(s): {}",
            exp.name,
            computed.method,
            computed.test_fraction,
            computed.seed,
            computed.train.len(),
            computed.test.len(),
            computed.test.join(", ")
        );
        self.say(&exp.round1_run, "info", &message).await;
        Ok(Some(computed))
    }

    /// Round 2's condition for space `label`: its latest export, each round-2 task given the
    /// skills `round2_skills` selects (recorded in `round2_skills`) — `skills:<export>` for `all`,
    /// else `skills-by-task:<export>-<mode>` holding one folder per task.
    async fn round2_condition(
        &self,
        setup: &ExperimentSetup,
        r1: &str,
        label: &str,
        split: Option<&Split>,
    ) -> Result<Condition, ExperimentError> {
        let (space, exports) = self.exports_of(r1, label).await?;
        let last = exports
            .last()
            .ok_or_else(|| ExperimentError::Incomplete(format!("{label} has no export")))?;
        let export_dir = PathBuf::from(&last.dir);
        if !export_dir.is_dir() {
            return Err(ExperimentError::Incomplete(format!(
                "the export of {label} ({}) is gone; export again with `skillscope export`",
                last.dir
            )));
        }
        let mode = setup.plan.round2_skills;
        let conn = self.store.connect()?;
        let run = queries::find_run(&conn, r1)?
            .ok_or_else(|| ExperimentError::Incomplete(format!("no run {r1}")))?;
        let tasks = queries::run_tasks(&conn, run.id)?;
        let sources: Vec<(String, String)> = lq::sources(&conn, space.id)?
            .into_iter()
            .map(|s| (s.skill, s.task_id))
            .collect();
        drop(conn);
        let (rows, by_task) = tokio::task::spawn_blocking({
            let export_dir = export_dir.clone();
            let round2: Option<Vec<String>> = split.map(Split::round2_tasks);
            let label = label.to_string();
            let curated = space.curated;
            move || round2_selection(&export_dir, &tasks, &sources, curated, round2, mode, &label)
        })
        .await
        .map_err(|e| ExperimentError::Plan(e.to_string()))?;
        let name = setup.plan.name();
        self.store
            .writer()
            .write(move |c| lq::put_round2_skills(c, &name, &rows))
            .await?;
        let spec = match mode {
            Round2Skills::All => format!("skills:{}", export_dir.display()),
            _ => {
                let base = export_dir
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| label.to_lowercase());
                let out = export_dir.with_file_name(format!("{base}-by-{}", mode.as_str()));
                let out2 = out.clone();
                tokio::task::spawn_blocking(move || {
                    selection::write_by_task(&export_dir, &out2, &by_task)
                })
                .await
                .map_err(|e| ExperimentError::Plan(e.to_string()))?
                .map_err(|e| {
                    ExperimentError::Incomplete(format!("writing round 2's skills of {label}: {e}"))
                })?;
                format!("skills-by-task:{}", out.display())
            }
        };
        Condition::parse(&spec).map_err(|e| {
            ExperimentError::Incomplete(format!(
                "the export of {label} is gone ({e}); export again with `skillscope export`"
            ))
        })
    }

    async fn reload(&self, name: &str) -> Result<ExperimentRow, StoreError> {
        let n = name.to_string();
        self.store
            .writer()
            .write(move |c| {
                lq::find_experiment(c, &n)?
                    .ok_or_else(|| StoreError::NotFound(format!("experiment {n}")))
            })
            .await
    }

    /// The recorded exports of space `label` of run `run`, oldest first.
    async fn exports_of(
        &self,
        run: &str,
        label: &str,
    ) -> Result<(SpaceRow, Vec<lq::ExportRow>), ExperimentError> {
        let space = self.space(run, label)?;
        let sid = space.id;
        let exports = self
            .store
            .writer()
            .write(move |c| lq::exports(c, sid))
            .await?;
        Ok((space, exports))
    }

    fn space(&self, run: &str, label: &str) -> Result<SpaceRow, ExperimentError> {
        let conn = self.store.connect()?;
        let run_row = queries::find_run(&conn, run)?
            .ok_or_else(|| ExperimentError::Incomplete(format!("no run {run}")))?;
        lq::list_spaces(&conn)?
            .into_iter()
            .find(|s| s.run_id == run_row.id && s.label == label)
            .ok_or_else(|| ExperimentError::Incomplete(format!("no learning space {label}")))
    }

    fn outcome(
        &self,
        experiment: ExperimentRow,
        learned: Vec<(String, LearnReport)>,
        finished: bool,
    ) -> Result<ExperimentOutcome, ExperimentError> {
        let conn = self.store.connect()?;
        let results = results(&conn, &experiment)?;
        let (adaptive, hypotheses) = match crate::analysis::results::analyze(
            &conn,
            &crate::analysis::results::Selection::Experiment(experiment.name.clone()),
            &crate::analysis::results::Scoring::default(),
        ) {
            Ok(r) => (r.adaptive, r.hypotheses),
            // Before round 1 has a run there is nothing to analyse.
            Err(StoreError::NotFound(_)) => (Vec::new(), Vec::new()),
            Err(e) => return Err(e.into()),
        };
        Ok(ExperimentOutcome {
            experiment,
            finished,
            results,
            learned,
            adaptive,
            hypotheses,
        })
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
    tasks: &[crate::store::RunTaskRow],
    sources: &[(String, String)],
    curated: bool,
    round2: Option<Vec<String>>,
    mode: Round2Skills,
    label: &str,
) -> (
    Vec<lq::Round2SkillsRow>,
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
        rows.push(lq::Round2SkillsRow {
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

/// The conditions of an experiment's runs, labelled A, B, C (round 1) and A', B' (round 2),
/// scored with Method D over one task list for all of them: round 1's, or — when a split ran
/// round 2 on fewer tasks — round 2's (the tasks both rounds ran).
///
/// # Errors
/// SQL errors.
pub fn results(
    conn: &rusqlite::Connection,
    exp: &ExperimentRow,
) -> Result<Vec<ConditionResult>, StoreError> {
    let mut out = Vec::new();
    let Some(r1) = queries::find_run(conn, &exp.round1_run)? else {
        return Ok(out);
    };
    let mut task_ids: Vec<String> = queries::run_tasks(conn, r1.id)?
        .into_iter()
        .map(|t| t.task_id)
        .collect();
    if exp.split.is_some()
        && let Some(r2) = queries::find_run(conn, &exp.round2_run)?
    {
        task_ids = queries::run_tasks(conn, r2.id)?
            .into_iter()
            .map(|t| t.task_id)
            .collect();
    }
    let labels: [&[&'static str]; 2] = [&["A", "B", "C"], &["A'", "B'"]];
    for (run_name, labels) in [(&exp.round1_run, labels[0]), (&exp.round2_run, labels[1])] {
        let Some(run) = queries::find_run(conn, run_name)? else {
            continue;
        };
        let trials = queries::current_briefs(conn, run.id)?;
        let plan = queries::trial_plan(conn, &run)?;
        let summaries = summarize_planned(&task_ids, &plan, &run.conditions, &trials);
        for (s, label) in summaries.into_iter().zip(labels.iter()) {
            out.push(ConditionResult { label, summary: s });
        }
    }
    Ok(out)
}

/// The plan's primary comparisons: (name, with, without) — A' vs A (does learning from failure
/// help?), B' vs B (can Acontext improve curated skills?), A' vs B (can learned-from-scratch
/// match curated?), B' vs A' (does the starting point matter?) — then A' vs C and C vs A when
/// condition C (self-generated skills) ran.
pub const COMPARISONS: [(&str, &str, &str); 6] = crate::analysis::results::EXPERIMENT_COMPARISONS;
