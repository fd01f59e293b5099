//! The evaluation's results (`evaluation-plan.md`, Phase 4) for a selection of runs: Method D pass
//! rates with bootstrap CIs, the comparisons (for an experiment, the plan's four: A' vs A, B' vs
//! B, A' vs B, B' vs A'), per-domain and per-difficulty breakdowns, task-level changes, failure
//! modes and how they shift between rounds, learning efficiency by difficulty, and the paper's
//! numbers for the same harness and model.
//!
//! Everything is computed from one grouped SQL pass over the latest attempts (by run, condition,
//! task, status and outcome — an index-only scan of `trials_brief`), so a million trials take well
//! under a second. Per-task means follow [`super::metrics`]: the reward of a finished attempt
//! clamped to [0, 1], 0 for missing, unfinished, cancelled or interrupted trials, over the trials
//! planned per task; the task set is fixed (round 1's tasks for an experiment, else every task of
//! the selected runs).
//!
//! **Trials with a verdict** are those the verifier judged: pass, fail (wrong output), and the two
//! timeouts. The others — build or runtime errors and runs that ended without a reward — are
//! infrastructure failures; Method D counts them 0, which is the paper's rule, but they say
//! nothing about skills. Each condition therefore also carries the pass rate over trials with a
//! verdict (per task: mean reward over its judged trials; tasks without one are left out) and each
//! comparison the Δ it gives, so a report can show how much infrastructure moved Δ.

use std::collections::{BTreeMap, HashMap};

use rusqlite::Connection;
use serde::Serialize;

use super::ci::{Ci, CiMethod};
use super::failure_category::{self, FailureCategory};
use super::metrics::{delta_pp, normalized_gain};
use super::paper::{self, PaperValue};
use super::pass_at_k::{pass_at_2_adaptive, pass_at_k};
use crate::skillsbench::condition::condition_label;
use crate::store::learning as lq;
use crate::store::{Outcome, RunRow, StoreError, TrialPlan, TrialStatus, queries};

/// What to analyse.
#[derive(Debug, Clone, PartialEq)]
pub enum Selection {
    /// These runs (all their conditions).
    Runs(Vec<String>),
    /// An experiment's round-1 and round-2 runs, labelled A, B, A', B'.
    Experiment(String),
}

/// A run in the analysis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunInfo {
    /// Name.
    pub name: String,
    /// Agent.
    pub agent: String,
    /// Model.
    pub model: Option<String>,
    /// `native`, `harbor`, `csv`, `registry`.
    pub source: String,
    /// Trials planned per task and condition.
    pub n_trials: u32,
    /// `running`, `stopped`, `finished`.
    pub status: String,
    /// The distinct agent settings its trials recorded (`trials.agent_settings`:
    /// `{harness, version, model, sampling, unpinned}`); empty when none were recorded.
    pub agent_settings: Vec<serde_json::Value>,
    /// Settings that could not be pinned for its agent (from those records).
    pub unpinned: Vec<String>,
}

/// A task of the fixed denominator.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskInfo {
    /// Task id.
    pub id: String,
    /// Domain.
    pub domain: String,
    /// Difficulty.
    pub difficulty: String,
}

/// Why a trial did not pass (or that it did not run), as the plan's failure analysis names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureMode {
    /// The verifier ran and the output was wrong.
    WrongOutput,
    /// The agent ran out of time.
    AgentTimeout,
    /// The verifier ran out of time.
    VerifierTimeout,
    /// Docker or the harness failed while the trial ran.
    RuntimeError,
    /// The environment could not be built.
    BuildError,
    /// The run ended without a verifier reward (infrastructure).
    NoReward,
    /// The model provider failed (refused key, rate limit, quota, overload) and retries ran out.
    ProviderError,
    /// Cancelled by the operator, or not finished.
    NotRun,
}

impl FailureMode {
    /// Every mode, in report order.
    pub const ALL: [FailureMode; 8] = [
        FailureMode::WrongOutput,
        FailureMode::AgentTimeout,
        FailureMode::VerifierTimeout,
        FailureMode::RuntimeError,
        FailureMode::BuildError,
        FailureMode::NoReward,
        FailureMode::ProviderError,
        FailureMode::NotRun,
    ];

    /// Label for tables.
    pub fn label(self) -> &'static str {
        match self {
            FailureMode::WrongOutput => "wrong output",
            FailureMode::AgentTimeout => "agent timeout",
            FailureMode::VerifierTimeout => "verifier timeout",
            FailureMode::RuntimeError => "runtime error",
            FailureMode::BuildError => "build error",
            FailureMode::NoReward => "no reward",
            FailureMode::ProviderError => "provider error",
            FailureMode::NotRun => "not run",
        }
    }

    /// Infrastructure, not a judgement of the agent.
    pub fn is_infrastructure(self) -> bool {
        matches!(
            self,
            FailureMode::RuntimeError
                | FailureMode::BuildError
                | FailureMode::NoReward
                | FailureMode::ProviderError
        )
    }

    /// The mode of a finished attempt that did not pass (`None` for a pass).
    pub fn of(status: TrialStatus, outcome: Option<Outcome>) -> Option<FailureMode> {
        if status != TrialStatus::Done {
            return Some(FailureMode::NotRun);
        }
        match outcome {
            Some(Outcome::Pass) => None,
            Some(Outcome::Fail) => Some(FailureMode::WrongOutput),
            Some(Outcome::AgentTimeout) => Some(FailureMode::AgentTimeout),
            Some(Outcome::VerifierTimeout) => Some(FailureMode::VerifierTimeout),
            Some(Outcome::RuntimeError) => Some(FailureMode::RuntimeError),
            Some(Outcome::BuildError) => Some(FailureMode::BuildError),
            Some(Outcome::NoReward) => Some(FailureMode::NoReward),
            Some(Outcome::ProviderError) => Some(FailureMode::ProviderError),
            Some(Outcome::Cancelled | Outcome::Interrupted) | None => Some(FailureMode::NotRun),
        }
    }
}

/// One scored condition (a run's condition).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConditionResult {
    /// `A`, `B`, `A'`, `B'` in an experiment; else the condition's label (prefixed with the run
    /// when several runs are selected).
    pub label: String,
    /// Run name.
    pub run: String,
    /// Condition key.
    pub condition: String,
    /// Method D pass rate, fraction.
    pub pass_rate: f64,
    /// Its CI.
    pub ci: Option<Ci>,
    /// Tasks in the denominator.
    pub n_tasks: usize,
    /// Trials planned (tasks × trials per task).
    pub planned: usize,
    /// Trials finished.
    pub done: usize,
    /// Trials passed.
    pub passed: usize,
    /// Trials by failure mode (planned trials that never ran count as `not_run`).
    pub failures: BTreeMap<FailureMode, usize>,
    /// Pass rate over trials with a verdict (see the module doc); `None` without any.
    pub pass_rate_judged: Option<f64>,
    /// Trials from published aggregates rather than trial folders.
    pub aggregated: bool,
    /// Per-task means in [`Results::tasks`] order.
    pub per_task: Vec<f64>,
    /// Per task: trials planned (the Method D denominator), in [`Results::tasks`] order.
    pub per_task_planned: Vec<u32>,
    /// Per task: trials that passed.
    pub per_task_passed: Vec<usize>,
    /// Per task: trials with a verdict (pass, fail, agent or verifier timeout).
    pub per_task_judged: Vec<usize>,
    /// Judged failures by the plan's failure category ([`FailureCategory`]): stored with the
    /// trial, or decided now from its folder for trials recorded before categories existed.
    pub categories: BTreeMap<FailureCategory, usize>,
}

impl ConditionResult {
    /// Infrastructure failures (no reward, build and runtime errors).
    pub fn infrastructure(&self) -> usize {
        self.failures
            .iter()
            .filter(|(m, _)| m.is_infrastructure())
            .map(|(_, n)| n)
            .sum()
    }
}

/// A comparison of two conditions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// `A' vs A`, `curated vs no-skills`, …
    pub name: String,
    /// Label of the condition with the treatment.
    pub with: String,
    /// Label of the baseline.
    pub without: String,
    /// Pass rates (fractions).
    pub p_with: f64,
    /// Baseline pass rate.
    pub p_without: f64,
    /// Δ, percentage points.
    pub delta_pp: f64,
    /// CI of Δ (paired bootstrap over tasks), percentage points.
    pub delta_ci_pp: Option<Ci>,
    /// Normalized gain g.
    pub g: Option<f64>,
    /// Δ over trials with a verdict, percentage points.
    pub delta_pp_judged: Option<f64>,
    /// Tasks flaky (some trials pass, some fail) in either condition.
    pub n_flaky: usize,
    /// The part of Δ those tasks contribute (their per-task differences over the fixed task
    /// set), percentage points.
    pub delta_pp_flaky: f64,
    /// Tasks better / worse / unchanged.
    pub improved: usize,
    /// Worse.
    pub degraded: usize,
    /// Equal.
    pub unchanged: usize,
}

/// A breakdown row (a domain or a difficulty).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupRow {
    /// Domain or difficulty.
    pub group: String,
    /// Tasks in the group.
    pub n_tasks: usize,
    /// Pass rate per condition, in [`Results::conditions`] order.
    pub rates: Vec<f64>,
    /// Δ (pp) per comparison, in [`Results::comparisons`] order.
    pub deltas_pp: Vec<f64>,
    /// g per comparison.
    pub gains: Vec<Option<f64>>,
}

/// How a task changed between two conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Higher mean reward.
    Improved,
    /// Lower.
    Degraded,
    /// Equal.
    Unchanged,
}

/// One task in one comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskDelta {
    /// Comparison name.
    pub comparison: String,
    /// Task.
    pub task: String,
    /// Domain.
    pub domain: String,
    /// Difficulty.
    pub difficulty: String,
    /// Mean reward with the treatment.
    pub with: f64,
    /// Without.
    pub without: f64,
    /// Δ, percentage points.
    pub delta_pp: f64,
    /// Direction.
    pub change: Change,
}

/// A failure mode across two rounds (A → A', B → B').
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailureShift {
    /// `A → A'`.
    pub name: String,
    /// Mode.
    pub mode: FailureMode,
    /// Share of planned trials in the first round.
    pub from_rate: f64,
    /// In the second.
    pub to_rate: f64,
    /// Change, percentage points.
    pub delta_pp: f64,
}

/// A task whose trials under one condition disagree: some pass, some fail (judged trials).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flaky {
    /// Condition label.
    pub condition: String,
    /// Task.
    pub task: String,
    /// Trials that passed.
    pub passed: usize,
    /// Judged trials that did not.
    pub failed: usize,
}

/// A failure category across two rounds (A → A', B → B'): its share of planned trials.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CategoryShift {
    /// `A → A'`.
    pub name: String,
    /// Category.
    pub category: FailureCategory,
    /// Share of planned trials in the first round.
    pub from_rate: f64,
    /// In the second.
    pub to_rate: f64,
    /// Change, percentage points.
    pub delta_pp: f64,
}

/// Learning efficiency: a round-2 comparison within one difficulty tier.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Efficiency {
    /// Comparison (`A' vs A`, `B' vs B`).
    pub comparison: String,
    /// Difficulty.
    pub difficulty: String,
    /// Tasks.
    pub n_tasks: usize,
    /// Pass rates.
    pub p_with: f64,
    /// Baseline.
    pub p_without: f64,
    /// Δ, pp.
    pub delta_pp: f64,
    /// g.
    pub g: Option<f64>,
}

/// pass@2-adaptive of one round-1 → round-2 pair (A → A', B → B'; see
/// [`super::pass_at_k`]), over the fixed task set or one of its groups.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Adaptive {
    /// `A → A'`.
    pub name: String,
    /// `overall`, `domain` or `difficulty`.
    pub scope: String,
    /// The domain or difficulty (`all` overall).
    pub group: String,
    /// Tasks.
    pub n_tasks: usize,
    /// Round 1's Method D pass rate, fraction.
    pub p_round1: f64,
    /// Round 2's.
    pub p_round2: f64,
    /// Mean over tasks of `1 − (1 − p₁)(1 − p₂)`, fraction.
    pub pass2_adaptive: f64,
    /// Mean over tasks of round 1's unbiased pass@2 (Chen et al. 2021, eq. 1), fraction.
    pub pass2: f64,
    /// Adaptive gain = pass2_adaptive − pass2, percentage points.
    pub gain_pp: f64,
    /// Its CI (paired bootstrap over the row's tasks), percentage points.
    pub gain_ci_pp: Option<Ci>,
}

/// The paper's number next to the run's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PaperRow {
    /// Run.
    pub run: String,
    /// The paper's value.
    pub paper: PaperValue,
    /// The run's value in the same unit (percent), when it has one.
    pub ours: Option<f64>,
}

/// Everything a report shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Results {
    /// When computed (RFC 3339).
    pub generated_at: String,
    /// The experiment, when one was selected.
    pub experiment: Option<String>,
    /// Runs.
    pub runs: Vec<RunInfo>,
    /// The fixed task denominator.
    pub tasks: Vec<TaskInfo>,
    /// CI method.
    pub ci_method: CiMethod,
    /// Its description.
    pub ci_description: String,
    /// Conditions.
    pub conditions: Vec<ConditionResult>,
    /// Comparisons.
    pub comparisons: Vec<Comparison>,
    /// By domain.
    pub domains: Vec<GroupRow>,
    /// By difficulty.
    pub difficulties: Vec<GroupRow>,
    /// Per task and comparison, sorted by comparison then Δ (best first).
    pub task_deltas: Vec<TaskDelta>,
    /// Failure modes across rounds (experiments).
    pub failure_shifts: Vec<FailureShift>,
    /// Failure categories across rounds (experiments).
    pub category_shifts: Vec<CategoryShift>,
    /// Learning efficiency by difficulty (experiments).
    pub efficiency: Vec<Efficiency>,
    /// Flaky tasks per condition: the trials of a task disagree (some pass, some fail).
    pub flaky: Vec<Flaky>,
    /// pass@2-adaptive, round 1's pass@2 and the adaptive gain per round pair, overall then by
    /// domain and by difficulty (experiments).
    pub adaptive: Vec<Adaptive>,
    /// Paper numbers for the same harness and model.
    pub paper: Vec<PaperRow>,
    /// Findings a reader must not miss (infrastructure failures that move Δ, …).
    pub notes: Vec<String>,
    /// The evaluation plan's hypotheses answered over [`Results::tasks`] (experiments), then over
    /// each side of a split.
    pub hypotheses: Vec<super::hypotheses::Hypothesis>,
    /// Held-out transfer (experiments with a split).
    pub held_out: Option<HeldOut>,
    /// The skills each task received in round 2 (experiments).
    pub round2_skills: Vec<Round2Skills>,
    /// Set when the results are interim: planned trials have not finished (a run in progress or
    /// stopped, an import with missing trials), or a run is still running.
    pub interim: Option<Interim>,
    /// Which skills each condition's trials could see and used ([`super::exposure`]).
    pub exposure: super::exposure::Exposure,
}

/// Why and how far results are interim.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interim {
    /// Runs not `finished`, with their status (`running`, `stopped`).
    pub runs: Vec<(String, String)>,
    /// Trials with a verdict (pass, fail, timeouts), over every condition.
    pub judged: usize,
    /// Trials finished (verdict or not).
    pub done: usize,
    /// Trials planned.
    pub planned: usize,
}

impl Interim {
    /// One sentence: `interim: run r1 is running; 12 of 40 planned trials judged (14 finished)`.
    pub fn describe(&self) -> String {
        let runs = self
            .runs
            .iter()
            .map(|(r, s)| format!("run {r} is {s}"))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "interim results{}{} {} of {} planned trials judged ({} finished). Method D counts every unfinished trial 0; the pass rate over trials with a verdict leaves them out.",
            if runs.is_empty() { "" } else { ": " },
            if runs.is_empty() {
                String::new()
            } else {
                format!("{runs};")
            },
            self.judged,
            self.planned,
            self.done
        )
    }
}

/// Per (run, condition, task): reward sum, finished/passed counts, failure modes, judged trials.
#[derive(Debug, Clone, Default)]
struct Cell {
    reward: f64,
    done: usize,
    passed: usize,
    failures: BTreeMap<FailureMode, usize>,
    judged: usize,
    judged_reward: f64,
    aggregated: bool,
}

/// Report notes that several conditions or runs share, kept in first-seen order: each message
/// with the conditions or runs it is about.
#[derive(Default)]
struct GroupedNotes {
    notes: Vec<(String, Vec<String>, bool)>,
}

impl GroupedNotes {
    /// Adds condition `label` to `message`.
    fn condition(&mut self, message: &str, label: &str) {
        self.add(message, label, false);
    }

    /// Adds run `name` to `message`.
    fn run(&mut self, message: &str, name: &str) {
        self.add(message, name, true);
    }

    fn add(&mut self, message: &str, subject: &str, is_run: bool) {
        match self.notes.iter_mut().find(|(m, _, _)| m == message) {
            Some((_, subjects, _)) => subjects.push(subject.to_string()),
            None => self
                .notes
                .push((message.to_string(), vec![subject.to_string()], is_run)),
        }
    }

    /// One line per message: `subject: message` for one, `every condition (36): message` when all
    /// share it, else `N runs (a, b, c, d, e, f and 3 more): message`.
    fn lines(self, n_conditions: usize, n_runs: usize) -> Vec<String> {
        self.notes
            .into_iter()
            .map(|(message, subjects, is_run)| {
                let (noun, all) = if is_run {
                    ("run", n_runs)
                } else {
                    ("condition", n_conditions)
                };
                let who = match subjects.len() {
                    1 => subjects[0].clone(),
                    n if n == all => format!("every {noun} ({n})"),
                    n => {
                        let shown = subjects
                            .iter()
                            .take(6)
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ");
                        if n > 6 {
                            format!("{n} {noun}s ({shown} and {} more)", n - 6)
                        } else {
                            format!("{n} {noun}s ({shown})")
                        }
                    }
                };
                format!("{who}: {message}")
            })
            .collect()
    }
}

/// The plan's primary comparisons for an experiment, then those with condition C
/// (self-generated skills) when it ran.
pub const EXPERIMENT_COMPARISONS: [(&str, &str, &str); 6] = [
    ("A' vs A", "A'", "A"),
    ("B' vs B", "B'", "B"),
    ("A' vs B", "A'", "B"),
    ("B' vs A'", "B'", "A'"),
    ("A' vs C", "A'", "C"),
    ("C vs A", "C", "A"),
];

/// An experiment's held-out split as stored (`experiments.split`; written by
/// [`crate::experiment::split`]).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct SplitInfo {
    /// `stratified`.
    pub method: String,
    /// Share of tasks held out.
    pub test_fraction: f64,
    /// Seed.
    pub seed: u64,
    /// `test` or `all`: the tasks round 2 ran.
    pub round2: String,
    /// Train task ids.
    pub train: Vec<String>,
    /// Test task ids.
    pub test: Vec<String>,
}

/// One condition's pass rate on a subset of the tasks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubsetCondition {
    /// `A`, `B`, `C`, `A'`, `B'`.
    pub label: String,
    /// Method D pass rate over the subset, fraction.
    pub pass_rate: f64,
    /// Its CI.
    pub ci: Option<Ci>,
    /// Tasks.
    pub n_tasks: usize,
}

/// Results on a subset of an experiment's tasks: the train tasks (same-task: skills learned from
/// these very tasks) or the test tasks (held-out: skills learned elsewhere).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Subset {
    /// `same-task` or `held-out`.
    pub name: String,
    /// Its tasks.
    pub tasks: Vec<String>,
    /// Each condition over them.
    pub conditions: Vec<SubsetCondition>,
    /// The plan's comparisons over them (Δ, g, CIs).
    pub comparisons: Vec<Comparison>,
    /// pass@2-adaptive over them (overall rows).
    pub adaptive: Vec<Adaptive>,
    /// The hypotheses over them.
    pub hypotheses: Vec<super::hypotheses::Hypothesis>,
}

/// What the hypotheses read of each condition.
fn measured(conditions: &[ConditionResult]) -> Vec<super::hypotheses::Measured<'_>> {
    conditions
        .iter()
        .map(|c| super::hypotheses::Measured {
            label: &c.label,
            pass_rate: c.pass_rate,
            per_task: &c.per_task,
            n_tasks: c.n_tasks,
        })
        .collect()
}

/// Held-out transfer: the split and the results on each side of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeldOut {
    /// The split.
    pub split: SplitInfo,
    /// `same-task` (when round 2 ran the train tasks) and `held-out`.
    pub subsets: Vec<Subset>,
}

/// The skills one task received in round 2 from one space (`round2_skills`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Round2Skills {
    /// `A'` or `B'`.
    pub condition: String,
    /// The space (`LS-A`).
    pub space: String,
    /// Task.
    pub task: String,
    /// `all`, `domain` or `task`.
    pub mode: String,
    /// How many.
    pub n_skills: u32,
    /// Which (folder names).
    pub skills: Vec<String>,
}

/// Rank of a difficulty in tables (easy/core first).
fn difficulty_order(d: &str) -> (u8, String) {
    let r = match d.to_ascii_lowercase().as_str() {
        "easy" | "core" => 0,
        "medium" | "middle" | "extended" => 1,
        "hard" | "extreme" => 2,
        _ => 3,
    };
    (r, d.to_string())
}

/// Computes the results of `selection`. For an experiment with a held-out split whose round 2
/// ran, the fixed task set is round 2's (the tasks both rounds ran), and [`Results::held_out`]
/// gives the same-task and held-out results separately; [`Results::hypotheses`] answers the
/// plan's hypotheses over each.
///
/// # Errors
/// [`StoreError::NotFound`] for an unknown run or experiment; SQL errors.
pub fn analyze(
    conn: &Connection,
    selection: &Selection,
    method: &CiMethod,
) -> Result<Results, StoreError> {
    let Selection::Experiment(name) = selection else {
        let mut results = analyze_tasks(conn, selection, method, None)?;
        attach_exposure(conn, selection, method, &mut results)?;
        return Ok(results);
    };
    let e = lq::find_experiment(conn, name)?
        .ok_or_else(|| StoreError::NotFound(format!("no experiment named {name:?}")))?;
    let split: Option<SplitInfo> = e
        .split
        .as_ref()
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let round2_tasks: Option<std::collections::BTreeSet<String>> =
        match queries::find_run(conn, &e.round2_run)? {
            Some(r2) if split.is_some() => Some(
                queries::run_tasks(conn, r2.id)?
                    .into_iter()
                    .map(|t| t.task_id)
                    .collect(),
            ),
            _ => None,
        };
    let mut results = analyze_tasks(conn, selection, method, round2_tasks.as_ref())?;
    results.hypotheses =
        super::hypotheses::answer("all tasks", &measured(&results.conditions), method);
    if let Some(split) = split {
        let mut subsets = Vec::new();
        for (side, ids) in [("same-task", &split.train), ("held-out", &split.test)] {
            let ids: std::collections::BTreeSet<String> = ids
                .iter()
                .filter(|t| round2_tasks.as_ref().is_none_or(|r| r.contains(*t)))
                .cloned()
                .collect();
            subsets.extend(subset(conn, selection, method, side, ids)?);
        }
        for s in &subsets {
            results.hypotheses.extend(s.hypotheses.iter().cloned());
        }
        if round2_tasks.is_some() {
            results.notes.push(format!(
                "Held-out split: the pass rates above are over the {} task(s) round 2 ran; same-task and held-out results are reported separately.",
                results.tasks.len()
            ));
        }
        results.held_out = Some(HeldOut { split, subsets });
    }
    // The skills each task received in round 2, by space: A' from the plan's space a, B' from b.
    let label_of = |side: &str, default: &str| {
        e.plan["spaces"][side]["label"]
            .as_str()
            .unwrap_or(default)
            .to_string()
    };
    let (a, b) = (label_of("a", "LS-A"), label_of("b", "LS-B"));
    for row in lq::round2_skills(conn, name)? {
        let condition = if row.label == a {
            "A'"
        } else if row.label == b {
            "B'"
        } else {
            "?"
        };
        results.round2_skills.push(Round2Skills {
            condition: condition.to_string(),
            space: row.label,
            task: row.task_id,
            mode: row.mode,
            n_skills: row.n_skills,
            skills: row.skills,
        });
    }
    attach_exposure(conn, selection, method, &mut results)?;
    Ok(results)
}

/// Adds which skills each condition's trials could see and used ([`super::exposure::compute`]);
/// for an experiment whose tasks fall on both sides of "saw a skill learned from the task
/// itself", the hypotheses answered over each side.
fn attach_exposure(
    conn: &Connection,
    selection: &Selection,
    method: &CiMethod,
    results: &mut Results,
) -> Result<(), StoreError> {
    use super::exposure::{SPLIT_SCOPES, Scored, compute};
    let scored: Vec<Scored<'_>> = results
        .conditions
        .iter()
        .map(|c| Scored {
            label: &c.label,
            run: &c.run,
            condition: &c.condition,
            done: c.done,
        })
        .collect();
    let compared: Vec<(&str, &str, &str)> = results
        .comparisons
        .iter()
        .map(|c| (c.name.as_str(), c.with.as_str(), c.without.as_str()))
        .collect();
    let tasks: Vec<String> = results.tasks.iter().map(|t| t.id.clone()).collect();
    let experiment = matches!(selection, Selection::Experiment(_));
    let mut x = compute(conn, &tasks, &scored, &compared, experiment)?;
    if let (Some(split), Some(h)) = (&mut x.split, &results.held_out) {
        let side = |name: &str| h.subsets.iter().find(|s| s.name == name).map(|s| &s.tasks);
        split.same_as_split = side("same-task") == Some(&split.same_task)
            && side("held-out") == Some(&split.held_out);
    }
    if let Some(split) = x.split.as_ref().filter(|s| !s.same_as_split) {
        for (scope, ids) in SPLIT_SCOPES.iter().zip([&split.same_task, &split.held_out]) {
            let ids = ids.iter().cloned().collect();
            if let Some(sub) = subset(conn, selection, method, scope, ids)? {
                results.hypotheses.extend(sub.hypotheses);
            }
        }
    }
    results.exposure = x;
    Ok(())
}

/// The results over the tasks `ids` (none when empty), named `name`: each condition's pass rate,
/// the comparisons, overall pass@2-adaptive and the hypotheses over them.
///
/// # Errors
/// As [`analyze`].
pub(super) fn subset(
    conn: &Connection,
    selection: &Selection,
    method: &CiMethod,
    name: &str,
    ids: std::collections::BTreeSet<String>,
) -> Result<Option<Subset>, StoreError> {
    if ids.is_empty() {
        return Ok(None);
    }
    let r = analyze_tasks(conn, selection, method, Some(&ids))?;
    Ok(Some(Subset {
        name: name.to_string(),
        tasks: ids.into_iter().collect(),
        hypotheses: super::hypotheses::answer(name, &measured(&r.conditions), method),
        conditions: r
            .conditions
            .iter()
            .map(|c| SubsetCondition {
                label: c.label.clone(),
                pass_rate: c.pass_rate,
                ci: c.ci,
                n_tasks: c.n_tasks,
            })
            .collect(),
        comparisons: r.comparisons,
        adaptive: r
            .adaptive
            .into_iter()
            .filter(|a| a.scope == "overall")
            .collect(),
    }))
}

/// [`analyze`] over the fixed task set, or only the tasks in `only`.
fn analyze_tasks(
    conn: &Connection,
    selection: &Selection,
    method: &CiMethod,
    only: Option<&std::collections::BTreeSet<String>>,
) -> Result<Results, StoreError> {
    // Runs and labels.
    let (experiment, runs): (Option<String>, Vec<RunRow>) = match selection {
        Selection::Experiment(name) => {
            let e = lq::find_experiment(conn, name)?
                .ok_or_else(|| StoreError::NotFound(format!("no experiment named {name:?}")))?;
            let mut runs = Vec::new();
            for r in [&e.round1_run, &e.round2_run] {
                if let Some(run) = queries::find_run(conn, r)? {
                    runs.push(run);
                }
            }
            if runs.is_empty() {
                return Err(StoreError::NotFound(format!(
                    "experiment {name} has no runs yet"
                )));
            }
            (Some(e.name), runs)
        }
        Selection::Runs(names) => {
            let mut runs = Vec::new();
            for n in names {
                runs.push(
                    queries::find_run(conn, n)?
                        .ok_or_else(|| StoreError::NotFound(format!("no run named {n:?}")))?,
                );
            }
            (None, runs)
        }
    };

    // The fixed denominator: round 1's tasks for an experiment, else every selected run's.
    let mut tasks: BTreeMap<String, TaskInfo> = BTreeMap::new();
    let task_runs: &[RunRow] = if experiment.is_some() {
        &runs[..1]
    } else {
        &runs
    };
    for r in task_runs {
        for t in queries::run_tasks(conn, r.id)? {
            if only.is_some_and(|o| !o.contains(&t.task_id)) {
                continue;
            }
            tasks.entry(t.task_id.clone()).or_insert(TaskInfo {
                id: t.task_id,
                domain: t.domain,
                difficulty: t.difficulty,
            });
        }
    }
    let tasks: Vec<TaskInfo> = tasks.into_values().collect();
    let task_index: HashMap<&str, usize> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect();

    // The trials each run planned per task (imports plan unevenly), and one grouped pass over
    // the latest attempts.
    let plans: Vec<TrialPlan> = runs
        .iter()
        .map(|r| queries::trial_plan(conn, r))
        .collect::<Result<_, _>>()?;
    let cells = load_cells(conn, &runs, &plans)?;
    let categories = load_categories(conn, &runs, &plans)?;

    // Conditions.
    let many = runs.len() > 1 && experiment.is_none();
    let mut conditions: Vec<ConditionResult> = Vec::new();
    for (ri, run) in runs.iter().enumerate() {
        for (ci, cond) in run.conditions.iter().enumerate() {
            let label = match (&experiment, ri, ci) {
                (Some(_), 0, 0) => "A".to_string(),
                (Some(_), 0, 1) => "B".to_string(),
                (Some(_), 0, 2) => "C".to_string(),
                (Some(_), 1, 0) => "A'".to_string(),
                (Some(_), 1, 1) => "B'".to_string(),
                _ if many => format!("{}: {}", run.name, condition_label(cond)),
                _ => condition_label(cond),
            };
            let plan = &plans[ri];
            let mut per_task = vec![0.0; tasks.len()];
            let mut per_task_planned = vec![0u32; tasks.len()];
            let mut per_task_passed = vec![0usize; tasks.len()];
            let mut per_task_judged = vec![0usize; tasks.len()];
            let mut planned = 0usize;
            let mut done = 0;
            let mut passed = 0;
            let mut failures: BTreeMap<FailureMode, usize> = BTreeMap::new();
            let mut judged_means: Vec<f64> = Vec::new();
            let mut aggregated = false;
            for t in &tasks {
                let cell = cells.get(&(run.id, cond.clone(), t.id.clone()));
                let c = cell.cloned().unwrap_or_default();
                let n_planned = plan.of(&t.id, cond);
                let i = task_index[t.id.as_str()];
                per_task[i] = if n_planned == 0 {
                    0.0
                } else {
                    c.reward / n_planned as f64
                };
                per_task_planned[i] = n_planned;
                per_task_passed[i] = c.passed;
                per_task_judged[i] = c.judged;
                planned += n_planned as usize;
                done += c.done;
                passed += c.passed;
                aggregated |= c.aggregated;
                let mut seen = 0;
                for (m, n) in &c.failures {
                    *failures.entry(*m).or_default() += n;
                    seen += n;
                }
                seen += c.passed;
                // Planned trials with no row at all were never run.
                let missing = (n_planned as usize).saturating_sub(seen);
                if missing > 0 {
                    *failures.entry(FailureMode::NotRun).or_default() += missing;
                }
                if c.judged > 0 {
                    judged_means.push(c.judged_reward / c.judged as f64);
                }
            }
            let n = tasks.len();
            let pass_rate = if n == 0 {
                0.0
            } else {
                per_task.iter().sum::<f64>() / n as f64
            };
            conditions.push(ConditionResult {
                label,
                run: run.name.clone(),
                condition: cond.clone(),
                pass_rate,
                ci: method.mean(&per_task),
                n_tasks: n,
                planned,
                done,
                passed,
                failures,
                pass_rate_judged: (!judged_means.is_empty())
                    .then(|| judged_means.iter().sum::<f64>() / judged_means.len() as f64),
                aggregated,
                per_task,
                per_task_planned,
                per_task_passed,
                per_task_judged,
                categories: categories
                    .get(&(run.id, cond.clone()))
                    .cloned()
                    .unwrap_or_default(),
            });
        }
    }

    // Comparisons.
    let mut pairs: Vec<(String, usize, usize)> = Vec::new();
    let find = |l: &str| conditions.iter().position(|c| c.label == l);
    if experiment.is_some() {
        for (name, w, wo) in EXPERIMENT_COMPARISONS {
            if let (Some(a), Some(b)) = (find(w), find(wo)) {
                pairs.push((name.to_string(), a, b));
            }
        }
    } else {
        for run in &runs {
            let idx: Vec<usize> = conditions
                .iter()
                .enumerate()
                .filter(|(_, c)| c.run == run.name)
                .map(|(i, _)| i)
                .collect();
            let base = idx
                .iter()
                .copied()
                .find(|&i| conditions[i].condition == "no-skills")
                .or(idx.first().copied());
            if let Some(b) = base {
                for &i in idx.iter().filter(|&&i| i != b) {
                    pairs.push((
                        format!("{} vs {}", conditions[i].label, conditions[b].label),
                        i,
                        b,
                    ));
                }
            }
        }
    }
    let is_flaky = |c: &ConditionResult, i: usize| {
        c.per_task_passed[i] > 0 && c.per_task_judged[i] > c.per_task_passed[i]
    };
    let mut flaky = Vec::new();
    for c in &conditions {
        for (i, t) in tasks.iter().enumerate() {
            if is_flaky(c, i) {
                flaky.push(Flaky {
                    condition: c.label.clone(),
                    task: t.id.clone(),
                    passed: c.per_task_passed[i],
                    failed: c.per_task_judged[i] - c.per_task_passed[i],
                });
            }
        }
    }
    let mut comparisons = Vec::new();
    let mut task_deltas = Vec::new();
    for (name, w, wo) in &pairs {
        let (cw, cwo) = (&conditions[*w], &conditions[*wo]);
        let mut improved = 0;
        let mut degraded = 0;
        let mut unchanged = 0;
        let mut n_flaky = 0;
        let mut flaky_sum = 0.0;
        for (i, t) in tasks.iter().enumerate() {
            let d = cw.per_task[i] - cwo.per_task[i];
            if is_flaky(cw, i) || is_flaky(cwo, i) {
                n_flaky += 1;
                flaky_sum += d;
            }
            let change = if d > 1e-9 {
                improved += 1;
                Change::Improved
            } else if d < -1e-9 {
                degraded += 1;
                Change::Degraded
            } else {
                unchanged += 1;
                Change::Unchanged
            };
            task_deltas.push(TaskDelta {
                comparison: name.clone(),
                task: t.id.clone(),
                domain: t.domain.clone(),
                difficulty: t.difficulty.clone(),
                with: cw.per_task[i],
                without: cwo.per_task[i],
                delta_pp: d * 100.0,
                change,
            });
        }
        comparisons.push(Comparison {
            name: name.clone(),
            with: cw.label.clone(),
            without: cwo.label.clone(),
            p_with: cw.pass_rate,
            p_without: cwo.pass_rate,
            delta_pp: delta_pp(cw.pass_rate, cwo.pass_rate),
            delta_ci_pp: method
                .paired_difference(&cw.per_task, &cwo.per_task)
                .map(|c| Ci {
                    low: c.low * 100.0,
                    high: c.high * 100.0,
                }),
            g: normalized_gain(cw.pass_rate, cwo.pass_rate),
            delta_pp_judged: match (cw.pass_rate_judged, cwo.pass_rate_judged) {
                (Some(a), Some(b)) => Some(delta_pp(a, b)),
                _ => None,
            },
            n_flaky,
            delta_pp_flaky: if tasks.is_empty() {
                0.0
            } else {
                flaky_sum / tasks.len() as f64 * 100.0
            },
            improved,
            degraded,
            unchanged,
        });
    }
    // Best first within each comparison.
    task_deltas.sort_by(|a, b| {
        let ia = comparisons.iter().position(|c| c.name == a.comparison);
        let ib = comparisons.iter().position(|c| c.name == b.comparison);
        ia.cmp(&ib)
            .then(b.delta_pp.total_cmp(&a.delta_pp))
            .then(a.task.cmp(&b.task))
    });

    // Breakdowns.
    let group_rows = |key: &dyn Fn(&TaskInfo) -> String, order: &dyn Fn(&str) -> (u8, String)| {
        let mut groups: BTreeMap<(u8, String), Vec<usize>> = BTreeMap::new();
        for (i, t) in tasks.iter().enumerate() {
            let k = key(t);
            groups.entry(order(&k)).or_default().push(i);
        }
        groups
            .into_iter()
            .map(|((_, g), idx)| {
                let mean = |c: &ConditionResult| {
                    idx.iter().map(|&i| c.per_task[i]).sum::<f64>() / idx.len() as f64
                };
                let rates: Vec<f64> = conditions.iter().map(mean).collect();
                let (deltas_pp, gains) = pairs
                    .iter()
                    .map(|(_, w, wo)| {
                        (
                            delta_pp(rates[*w], rates[*wo]),
                            normalized_gain(rates[*w], rates[*wo]),
                        )
                    })
                    .unzip();
                GroupRow {
                    group: g,
                    n_tasks: idx.len(),
                    rates,
                    deltas_pp,
                    gains,
                }
            })
            .collect::<Vec<_>>()
    };
    let domains = group_rows(&|t| t.domain.clone(), &|d| (0, d.to_string()));
    let difficulties = group_rows(&|t| t.difficulty.clone(), &difficulty_order);

    // Experiment-only analyses: pass@2-adaptive, failure shifts and learning efficiency.
    let mut failure_shifts = Vec::new();
    let mut category_shifts = Vec::new();
    let mut efficiency = Vec::new();
    let mut adaptive = Vec::new();
    if experiment.is_some() {
        for (from, to) in [("A", "A'"), ("B", "B'")] {
            let (Some(f), Some(t)) = (find(from), find(to)) else {
                continue;
            };
            adaptive.extend(adaptive_rows(
                &format!("{from} → {to}"),
                &tasks,
                &conditions[f],
                &conditions[t],
                method,
            ));
        }
        for (from, to) in [("A", "A'"), ("B", "B'")] {
            let (Some(f), Some(t)) = (find(from), find(to)) else {
                continue;
            };
            let (cf, ct) = (&conditions[f], &conditions[t]);
            for m in FailureMode::ALL {
                let rate = |c: &ConditionResult| {
                    c.failures.get(&m).copied().unwrap_or(0) as f64 / c.planned.max(1) as f64
                };
                failure_shifts.push(FailureShift {
                    name: format!("{from} → {to}"),
                    mode: m,
                    from_rate: rate(cf),
                    to_rate: rate(ct),
                    delta_pp: (rate(ct) - rate(cf)) * 100.0,
                });
            }
        }
        for (from, to) in [("A", "A'"), ("B", "B'")] {
            let (Some(f), Some(t)) = (find(from), find(to)) else {
                continue;
            };
            let (cf, ct) = (&conditions[f], &conditions[t]);
            for k in FailureCategory::ALL {
                let rate = |c: &ConditionResult| {
                    c.categories.get(&k).copied().unwrap_or(0) as f64 / c.planned.max(1) as f64
                };
                category_shifts.push(CategoryShift {
                    name: format!("{from} → {to}"),
                    category: k,
                    from_rate: rate(cf),
                    to_rate: rate(ct),
                    delta_pp: (rate(ct) - rate(cf)) * 100.0,
                });
            }
        }
        for (ci, c) in comparisons.iter().enumerate().take(2) {
            for row in &difficulties {
                let w = conditions.iter().position(|x| x.label == c.with);
                let wo = conditions.iter().position(|x| x.label == c.without);
                let (Some(w), Some(wo)) = (w, wo) else {
                    continue;
                };
                efficiency.push(Efficiency {
                    comparison: c.name.clone(),
                    difficulty: row.group.clone(),
                    n_tasks: row.n_tasks,
                    p_with: row.rates[w],
                    p_without: row.rates[wo],
                    delta_pp: row.deltas_pp[ci],
                    g: row.gains[ci],
                });
            }
        }
    }

    // The paper's numbers for the same harness and model.
    let mut paper_rows = Vec::new();
    for run in &runs {
        let of = |key: &str| {
            conditions
                .iter()
                .find(|c| c.run == run.name && c.condition == key)
                .map(|c| c.pass_rate * 100.0)
        };
        for v in paper::for_run(&run.agent, run.model.as_deref()) {
            let ours = match v.metric.as_str() {
                "pass_no_skills" => of("no-skills"),
                "pass_curated" => of("curated"),
                "normalized_gain" => match (of("curated"), of("no-skills")) {
                    (Some(a), Some(b)) => normalized_gain(a / 100.0, b / 100.0).map(|g| g * 100.0),
                    _ => None,
                },
                "delta_curated" => match (of("curated"), of("no-skills")) {
                    (Some(a), Some(b)) => Some(a - b),
                    _ => None,
                },
                // The paper ran the generate-first variant (`self-generated`).
                "pass_self_generated" => of("self-generated"),
                "delta_self_generated" => match (of("self-generated"), of("no-skills")) {
                    (Some(a), Some(b)) => Some(a - b),
                    _ => None,
                },
                _ => None,
            };
            paper_rows.push(PaperRow {
                run: run.name.clone(),
                paper: v,
                ours,
            });
        }
    }

    // Notes: infrastructure failures that move Δ.
    let mut notes = Vec::new();
    for c in &comparisons {
        let (w, wo) = (
            &conditions[find(&c.with).unwrap_or(0)],
            &conditions[find(&c.without).unwrap_or(0)],
        );
        let (iw, iwo) = (w.infrastructure(), wo.infrastructure());
        if let Some(j) = c.delta_pp_judged
            && (iw + iwo > 0)
            && (j - c.delta_pp).abs() >= 1.0
        {
            notes.push(format!(
                "{}: {} of {} trials ({}) and {} of {} ({}) ended without a verdict (no reward, build or runtime error). Method D counts them 0: Δ = {:+.1} pp; over trials with a verdict Δ = {:+.1} pp.",
                c.name, iw, w.planned, w.label, iwo, wo.planned, wo.label, c.delta_pp, j
            ));
        }
    }
    // Notes that many conditions or runs share are grouped: one line names them all.
    let mut grouped = GroupedNotes::default();
    for c in &conditions {
        if c.aggregated {
            grouped.condition(
                "trials reconstructed from published aggregates (mean reward per task is exact; individual trials are not).",
                &c.label,
            );
        }
        let not_run = c.failures.get(&FailureMode::NotRun).copied().unwrap_or(0);
        if not_run > 0 {
            notes.push(format!(
                "{}: {not_run} of {} planned trials have not run (counted 0).",
                c.label, c.planned
            ));
        }
    }

    // What decided the agents' behaviour, and what could not be pinned.
    let mut run_infos = Vec::new();
    let mut settings_stmt = conn.prepare_cached(
        "SELECT DISTINCT agent_settings FROM trials WHERE run_id = ?1 AND agent_settings IS NOT NULL",
    )?;
    for r in &runs {
        let agent_settings: Vec<serde_json::Value> = settings_stmt
            .query_map([r.id], |row| row.get::<_, String>(0))?
            .filter_map(|t| t.ok().and_then(|t| serde_json::from_str(&t).ok()))
            .collect();
        let mut unpinned: Vec<String> = agent_settings
            .iter()
            .filter_map(|v| v.get("unpinned").and_then(|u| u.as_array()).cloned())
            .flatten()
            .filter_map(|u| u.as_str().map(String::from))
            .collect();
        unpinned.sort();
        unpinned.dedup();
        if agent_settings.is_empty() {
            grouped.run(
                "trials recorded no agent settings (imported, or run before they were recorded): whether sampling was pinned is unknown.",
                &r.name,
            );
        } else if !unpinned.is_empty() {
            grouped.run(
                &format!(
                    "{} could not be pinned for agent {} (the harness accepts no such setting), so these trials are not reproducible \"with temperature 0\".",
                    unpinned.join(", "),
                    r.agent
                ),
                &r.name,
            );
        }
        notes.extend(environment_notes(
            &r.name,
            &crate::store::queries::environment_marks(conn, r.id)?,
        ));
        run_infos.push(RunInfo {
            name: r.name.clone(),
            agent: r.agent.clone(),
            model: r.model.clone(),
            source: r.source.clone(),
            n_trials: r.n_trials,
            status: r.status.clone(),
            agent_settings,
            unpinned,
        });
    }
    notes.extend(grouped.lines(conditions.len(), runs.len()));

    let unfinished: Vec<(String, String)> = runs
        .iter()
        .filter(|r| r.status != "finished")
        .map(|r| (r.name.clone(), r.status.clone()))
        .collect();
    let planned: usize = conditions.iter().map(|c| c.planned).sum();
    let done: usize = conditions.iter().map(|c| c.done).sum();
    let judged: usize = conditions
        .iter()
        .map(|c| c.per_task_judged.iter().sum::<usize>())
        .sum();
    // A stopped run whose planned trials all finished is complete; one still running is not.
    let interim =
        (done < planned || unfinished.iter().any(|(_, s)| s == "running")).then_some(Interim {
            runs: unfinished,
            judged,
            done,
            planned,
        });
    if let Some(i) = &interim {
        notes.insert(0, i.describe());
    }

    Ok(Results {
        interim,
        generated_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        experiment,
        runs: run_infos,
        tasks,
        ci_description: method.describe(),
        ci_method: method.clone(),
        conditions,
        comparisons,
        domains,
        difficulties,
        task_deltas,
        failure_shifts,
        category_shifts,
        efficiency,
        flaky,
        adaptive,
        paper: paper_rows,
        notes,
        hypotheses: Vec::new(),
        held_out: None,
        round2_skills: Vec::new(),
        exposure: Default::default(),
    })
}

/// pass@2-adaptive rows of round-1 condition `r1` and round-2 condition `r2` over `tasks`: the
/// overall row, then one per domain and per difficulty, each with the gain's paired bootstrap CI
/// over its tasks.
fn adaptive_rows(
    name: &str,
    tasks: &[TaskInfo],
    r1: &ConditionResult,
    r2: &ConditionResult,
    method: &CiMethod,
) -> Vec<Adaptive> {
    let adaptive: Vec<f64> = r1
        .per_task
        .iter()
        .zip(&r2.per_task)
        .map(|(p1, p2)| pass_at_2_adaptive(*p1, *p2))
        .collect();
    let pass2: Vec<f64> = r1
        .per_task_planned
        .iter()
        .zip(&r1.per_task_passed)
        .map(|(n, c)| pass_at_k(*n, *c as u32, 2))
        .collect();
    let row = |scope: &str, group: &str, idx: &[usize]| {
        let mean = |v: &[f64]| {
            if idx.is_empty() {
                0.0
            } else {
                idx.iter().map(|&i| v[i]).sum::<f64>() / idx.len() as f64
            }
        };
        let pick = |v: &[f64]| idx.iter().map(|&i| v[i]).collect::<Vec<f64>>();
        let (a, p) = (mean(&adaptive), mean(&pass2));
        Adaptive {
            name: name.to_string(),
            scope: scope.to_string(),
            group: group.to_string(),
            n_tasks: idx.len(),
            p_round1: mean(&r1.per_task),
            p_round2: mean(&r2.per_task),
            pass2_adaptive: a,
            pass2: p,
            gain_pp: (a - p) * 100.0,
            gain_ci_pp: method
                .paired_difference(&pick(&adaptive), &pick(&pass2))
                .map(|c| Ci {
                    low: c.low * 100.0,
                    high: c.high * 100.0,
                }),
        }
    };
    let all: Vec<usize> = (0..tasks.len()).collect();
    let mut out = vec![row("overall", "all", &all)];
    for (scope, key, order) in [
        (
            "domain",
            (&|t: &TaskInfo| t.domain.clone()) as &dyn Fn(&TaskInfo) -> String,
            (&|d: &str| (0u8, d.to_string())) as &dyn Fn(&str) -> (u8, String),
        ),
        ("difficulty", &|t| t.difficulty.clone(), &difficulty_order),
    ] {
        let mut groups: BTreeMap<(u8, String), Vec<usize>> = BTreeMap::new();
        for (i, t) in tasks.iter().enumerate() {
            groups.entry(order(&key(t))).or_default().push(i);
        }
        for ((_, g), idx) in groups {
            out.push(row(scope, &g, &idx));
        }
    }
    out
}

/// (run id, condition) → judged failures per category.
type CategoryCounts = HashMap<(i64, String), BTreeMap<FailureCategory, usize>>;

/// Judged failures per (run, condition) by failure category. The stored category when there is
/// one; else (trials recorded before categories existed) decided from the trial folder, or from
/// the outcome alone when the folder is gone. Nothing is written: the analysis only reads.
fn load_categories(
    conn: &Connection,
    runs: &[RunRow],
    plans: &[TrialPlan],
) -> Result<CategoryCounts, StoreError> {
    let mut out = CategoryCounts::new();
    let mut stmt = conn.prepare_cached(
        "SELECT task_id, condition, trial_index, outcome, failure_category, trial_dir, agent_exit_code
         FROM trials
         WHERE run_id = ?1 AND superseded = 0 AND status = 'done'
           AND outcome IN ('fail', 'agent-timeout', 'verifier-timeout')",
    )?;
    for (run, plan) in runs.iter().zip(plans) {
        let rows = stmt.query_map([run.id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, u32>(2)?,
                r.get::<_, Outcome>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<String>>(5)?,
                r.get::<_, Option<i64>>(6)?,
            ))
        })?;
        for row in rows {
            let (task, cond, index, outcome, stored, dir, exit) = row?;
            if index == 0 || index > plan.of(&task, &cond) {
                continue;
            }
            let category = stored
                .as_deref()
                .and_then(FailureCategory::parse)
                .or_else(|| match &dir {
                    Some(d) => failure_category::classify_trial_dir(
                        outcome,
                        exit,
                        std::path::Path::new(d),
                        None,
                    ),
                    None => failure_category::classify(&failure_category::Evidence {
                        outcome,
                        agent_exit_code: exit,
                        trajectory: None,
                        tests: None,
                        instruction: None,
                    }),
                })
                .unwrap_or(FailureCategory::Unclassified);
            *out.entry((run.id, cond))
                .or_default()
                .entry(category)
                .or_default() += 1;
        }
    }
    Ok(out)
}

/// The pass over the latest attempts: (run, condition, task) → [`Cell`].
///
/// Reads (task, condition, status, outcome, reward) in the order of the covering `trials_brief`
/// index — no table lookups, no sort — and folds consecutive rows of a (task, condition) in Rust,
/// comparing borrowed text. At a million trials this beats both a `GROUP BY … status, outcome`
/// (a temporary B-tree) and per-outcome conditional sums (SQLite evaluates each per row).
fn load_cells(
    conn: &Connection,
    runs: &[RunRow],
    plans: &[TrialPlan],
) -> Result<HashMap<(i64, String, String), Cell>, StoreError> {
    use rusqlite::types::ValueRef;
    let text = |v: ValueRef<'_>| -> Result<Option<String>, StoreError> {
        match v {
            ValueRef::Null => Ok(None),
            ValueRef::Text(t) => Ok(Some(String::from_utf8_lossy(t).into_owned())),
            other => Err(StoreError::Decode(format!(
                "expected text, got {:?}",
                other.data_type()
            ))),
        }
    };
    let mut out: HashMap<(i64, String, String), Cell> = HashMap::new();
    let mut stmt = conn.prepare_cached(
        "SELECT task_id, condition, status, outcome, reward, trial_index
         FROM trials
         WHERE run_id = ?1 AND superseded = 0 AND trial_index BETWEEN 1 AND ?2
         ORDER BY task_id, condition",
    )?;
    let mut aggregated_stmt = conn.prepare_cached(
        "SELECT DISTINCT condition FROM trials WHERE run_id = ?1 AND aggregated = 1",
    )?;
    let done_str = TrialStatus::Done.as_str().as_bytes();
    for (run, plan) in runs.iter().zip(plans) {
        let aggregated: Vec<String> = aggregated_stmt
            .query_map([run.id], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        let mut rows = stmt.query(rusqlite::params![run.id, plan.max()])?;
        let mut key: Option<(String, String)> = None;
        let mut cell = Cell::default();
        let mut key_plan = plan.default;
        while let Some(r) = rows.next()? {
            let (task, cond) = (r.get_ref(0)?, r.get_ref(1)?);
            let same = match (&key, task, cond) {
                (Some((k_task, k_cond)), ValueRef::Text(t), ValueRef::Text(c)) => {
                    k_task.as_bytes() == t && k_cond.as_bytes() == c
                }
                _ => false,
            };
            if !same {
                if let Some((t, c)) = key.take() {
                    out.insert((run.id, c, t), std::mem::take(&mut cell));
                }
                let t = text(task)?.unwrap_or_default();
                let c = text(cond)?.unwrap_or_default();
                cell.aggregated = aggregated.contains(&c);
                key_plan = plan.of(&t, &c);
                key = Some((t, c));
            }
            // Trials beyond what the task planned are not in its Method D mean.
            if r.get::<_, i64>(5)? > key_plan as i64 {
                continue;
            }
            let done = matches!(r.get_ref(2)?, ValueRef::Text(s) if s == done_str);
            let outcome = match r.get_ref(3)? {
                ValueRef::Text(s) => Outcome::ALL
                    .into_iter()
                    .find(|o| o.as_str().as_bytes() == s),
                _ => None,
            };
            let reward = match r.get_ref(4)? {
                ValueRef::Real(v) => v.clamp(0.0, 1.0),
                ValueRef::Integer(v) => (v as f64).clamp(0.0, 1.0),
                _ => 0.0,
            };
            if done {
                cell.done += 1;
                if !matches!(outcome, Some(Outcome::Cancelled | Outcome::Interrupted)) {
                    cell.reward += reward;
                }
                if matches!(
                    outcome,
                    Some(
                        Outcome::Pass
                            | Outcome::Fail
                            | Outcome::AgentTimeout
                            | Outcome::VerifierTimeout
                    )
                ) {
                    cell.judged += 1;
                    cell.judged_reward += reward;
                }
            }
            // Any status but done is "not run", whatever the outcome column holds.
            let mode = if done {
                FailureMode::of(TrialStatus::Done, outcome)
            } else {
                Some(FailureMode::NotRun)
            };
            match mode {
                None => cell.passed += 1,
                Some(m) => *cell.failures.entry(m).or_default() += 1,
            }
        }
        if let Some((t, c)) = key.take() {
            out.insert((run.id, c, t), cell);
        }
    }
    Ok(out)
}

/// Notes on a run's trials whose environment was not what their task asked (issue 27): needed
/// values left empty under `--allow-missing-env` (those trials did not test the agent), and CPU
/// or memory requests cut to the host's (`clamped`: a test that measures speed may fail for the
/// machine's size).
fn environment_notes(run: &str, marks: &[crate::store::queries::EnvironmentMark]) -> Vec<String> {
    type Mark = crate::store::queries::EnvironmentMark;
    let tasks = |pick: &dyn Fn(&Mark) -> Option<String>| {
        let mut seen: Vec<String> = Vec::new();
        let mut n = 0;
        for m in marks {
            if let Some(t) = pick(m) {
                n += 1;
                if !seen.contains(&t) {
                    seen.push(t);
                }
            }
        }
        (n, seen)
    };
    let mut out = Vec::new();
    let (n, empty) = tasks(&|m: &Mark| {
        (!m.missing_env.is_empty()).then(|| format!("{} ({})", m.task_id, m.missing_env.join(", ")))
    });
    if n > 0 {
        out.push(format!(
            "{run}: {n} trial(s) ran with environment values their task needs left empty (--allow-missing-env), marked `missing_env`: {}. They did not test the agent; compare without those tasks.",
            empty.join(", ")
        ));
    }
    let (n, cut) = tasks(&|m: &Mark| {
        let c = m.clamped.as_ref()?;
        let part = |k: &str, unit: &str| {
            let r = c.pointer(&format!("/{k}/requested"))?.as_f64()?;
            let a = c.pointer(&format!("/{k}/applied"))?.as_f64()?;
            Some(format!("{r}→{a} {unit}"))
        };
        let parts: Vec<String> = [part("cpus", "CPUs"), part("memory_mb", "MiB")]
            .into_iter()
            .flatten()
            .collect();
        Some(format!("{} ({})", m.task_id, parts.join(", ")))
    });
    if n > 0 {
        out.push(format!(
            "{run}: {n} trial(s) ran clamped — their task asks more CPUs or memory than the Docker host has: {}. A test that measures speed can fail for the machine's size.",
            cut.join(", ")
        ));
    }
    out
}
