//! The evaluation's results (`evaluation-plan.md`, Phase 4) for a selection of runs: Method D pass
//! rates with bootstrap CIs and pass@1 beside them, the comparisons (for an experiment, the plan's
//! four: A' vs A, B' vs B, A' vs B, B' vs A'), per-domain and per-difficulty breakdowns,
//! task-level changes, failure modes and how they shift between rounds, learning efficiency by
//! difficulty, pass@2-adaptive, and the paper's numbers for the same harness and model.
//!
//! Everything is computed from one pass over the selected runs' trial rows ([`tally`]: one
//! sequential read of each run's rows, accumulated per task and condition), so a million trials
//! take well under a second; results over part of the tasks (each side of a held-out split) are
//! derived from the same tally, never by reading the trials again. A trial's reward is its
//! verifier's, clamped to [0, 1] (0 for missing, unfinished, cancelled or interrupted trials); its
//! success is `reward ≥` the pass threshold ([`crate::analysis::success`]) — never its agent
//! outcome. Per-task means follow [`super::metrics`] over the trials planned per task.
//!
//! **Which tasks.** The task set is round 1's tasks for an experiment, else every task of the
//! selected runs. A condition is scored over the tasks it ran (planned trials of; an imported
//! condition plans what its own jobs held): a task it never ran is `not run` there, never 0.
//! Every comparison — Δ, g, improved / degraded, the breakdowns' Δ, hypotheses, the paper's
//! numbers — is paired over the **matched tasks** both sides ran and lists the others as not
//! run.
//!
//! **Trials with a verdict** are those the verifier judged: pass, fail (wrong output), and the two
//! timeouts. The others — build or runtime errors and runs that ended without a reward — are
//! infrastructure failures; Method D counts them 0, which is the paper's rule, but they say
//! nothing about skills. Each condition therefore also carries Method D over trials with a
//! verdict (per task: mean reward over its judged trials; tasks without one are left out) and each
//! comparison the Δ it gives, so a report can show how much infrastructure moved Δ.
//!
//! Layout, one file per question: [`tally`] (the store pass), [`conditions`], [`comparisons`]
//! (with task changes and flaky tasks), [`breakdowns`] (domains, difficulties, learning
//! efficiency), [`adaptive`] (pass@2-adaptive), [`failures`] (modes and their shifts),
//! [`paper_rows`], [`notes`] (and whether results are interim), [`subsets`] (results over part
//! of the tasks, and the skills the trials could see).

mod adaptive;
mod breakdowns;
mod comparisons;
mod conditions;
mod failures;
mod in_memory;
mod notes;
mod paper_rows;
mod subsets;
mod tally;

use crate::domain::FlagKind;
use std::collections::{BTreeMap, HashMap};

use rusqlite::Connection;
use serde::Serialize;

pub use adaptive::Adaptive;
pub use breakdowns::{Efficiency, GroupRow, difficulty_order};
pub use comparisons::{Change, Comparison, Flaky, TaskDelta};
pub use conditions::ConditionResult;
pub use failures::{CategoryShift, FailureMode, FailureShift};
pub use in_memory::{GroupBy, LiveBreakdown, live_breakdown};
pub use notes::Interim;
pub use paper_rows::PaperRow;

use super::ci::{Ci, CiMethod};
use super::success::SuccessRule;
use crate::domain::{RunRow, TrialPlan};
use crate::skillsbench::Difficulty;
use crate::store::learning as lq;
use crate::store::{StoreError, queries};

/// How the results are scored: the bootstrap of every CI and the pass threshold of every
/// success count.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scoring {
    /// The CIs' bootstrap (resamples, seed, level).
    pub ci: CiMethod,
    /// The one definition of success (reward ≥ threshold).
    pub success: SuccessRule,
    /// The effect, in percentage points, the hypotheses are judged against: a study whose
    /// minimum detectable effect exceeds it is underpowered ([`super::power::DEFAULT_EFFECT_PP`]).
    pub effect_pp: f64,
    /// When the results are read, for whether a run marked running still has a live engine (its
    /// interim note says `stale` when not, as `status` does); `None`: runs are described by their
    /// stored status only (the dashboard, which shows the engine's liveness itself).
    #[serde(skip)]
    pub as_of: Option<chrono::DateTime<chrono::Utc>>,
}

impl Default for Scoring {
    fn default() -> Self {
        Scoring {
            ci: CiMethod::default(),
            success: SuccessRule::default(),
            effect_pp: super::power::DEFAULT_EFFECT_PP,
            as_of: None,
        }
    }
}

impl From<CiMethod> for Scoring {
    fn from(ci: CiMethod) -> Scoring {
        Scoring {
            ci,
            ..Scoring::default()
        }
    }
}

/// The round-1 → round-2 pairs of an experiment.
pub(crate) const ROUND_PAIRS: [(&str, &str); 2] = [("A", "A'"), ("B", "B'")];

/// The mean of `v`, 0 for none.
pub(crate) fn mean_of(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

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
    /// The run's settings as recorded (`runs.settings`: concurrency, hosts, limits, …; no secret
    /// values).
    pub settings: serde_json::Value,
    /// The pinned task set its tasks were checked against (`run --task-set`), when one was.
    pub task_set: Option<crate::domain::TaskSetPin>,
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
    /// The pass threshold every success count uses (pass@1, pass@2, pass@2-adaptive, flaky).
    pub success: SuccessRule,
    /// Its description (`reward ≥ 1.0`).
    pub success_description: String,
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
    /// pass@2-adaptive, round 1's pass@2 and the adaptive gain per round pair over the tasks
    /// both rounds ran, overall then by domain and by difficulty (experiments).
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
    /// The trials flagged for tampering, per condition, and the rule they were scored by
    /// ([`super::tamper`]).
    pub tamper: super::tamper::Tampering,
    /// The trials of each condition whose verdict the evidence contradicts.
    pub contradicted: super::tamper::Tampering,
    /// The run an experiment reused as round 1 (`--baseline-from`) and the drift it accepted;
    /// `None` when round 1 ran in the experiment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<lq::BaselineRow>,
    /// Each run's group-sequential design, looks and early stops (issue 38), by run name, for
    /// runs that applied one.
    pub sequential: Vec<(String, crate::domain::sequential::SequentialRecord)>,
}

/// An experiment's comparisons: round 1's own curated effect B vs A (the SkillsBench paper's
/// +16.2 pp, the yardstick of round 2), the plan's four primary comparisons, then those with
/// condition C (self-generated skills) when it ran.
pub const EXPERIMENT_COMPARISONS: [(&str, &str, &str); 7] = [
    ("B vs A", "B", "A"),
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
    /// Method D pass rate over the subset's tasks it ran, fraction.
    pub pass_rate: f64,
    /// Its CI.
    pub ci: Option<Ci>,
    /// Why there is no CI.
    pub ci_undefined: Option<String>,
    /// Its clustered standard error, fraction ([`ConditionResult::se`]); `None` below two tasks.
    pub se: Option<f64>,
    /// Tasks it ran.
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
            per_task: &c.per_task,
            finished: if c.aggregated {
                &[]
            } else {
                &c.per_task_rewards
            },
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
    scoring: &Scoring,
) -> Result<Results, StoreError> {
    // Intervals over the same tasks share their resampled task indices.
    super::ci::memoized(|| analyze_selection(conn, selection, scoring))
}

/// [`analyze`], its intervals' draws memoized.
fn analyze_selection(
    conn: &Connection,
    selection: &Selection,
    scoring: &Scoring,
) -> Result<Results, StoreError> {
    let method = &scoring.ci;
    let loaded = load(conn, selection, scoring)?;
    let Selection::Experiment(name) = selection else {
        let mut results = analyze_tasks(&loaded, scoring, None);
        subsets::attach_exposure(conn, &loaded, scoring, &mut results)?;
        attach_tamper(conn, &loaded, &mut results)?;
        attach_drift(&loaded, &mut results);
        attach_sequential(conn, &loaded, &mut results)?;
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
    let mut results = analyze_tasks(&loaded, scoring, round2_tasks.as_ref());
    if let Some(b) = lq::find_baseline(conn, name)? {
        let at = usize::from(results.interim.is_some()).min(results.notes.len());
        results
            .notes
            .insert(at, baseline_note(&b, &results.conditions));
        results.baseline = Some(b);
    }
    results.hypotheses = super::hypotheses::answer(
        "all tasks",
        &measured(&results.conditions),
        method,
        scoring.effect_pp,
    );
    if let Some(split) = split {
        let mut subsets = Vec::new();
        for (side, ids) in [("same-task", &split.train), ("held-out", &split.test)] {
            let ids: std::collections::BTreeSet<String> = ids
                .iter()
                .filter(|t| round2_tasks.as_ref().is_none_or(|r| r.contains(*t)))
                .cloned()
                .collect();
            subsets.extend(subsets::subset(&loaded, scoring, side, ids));
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
    subsets::attach_exposure(conn, &loaded, scoring, &mut results)?;
    attach_tamper(conn, &loaded, &mut results)?;
    attach_drift(&loaded, &mut results);
    attach_sequential(conn, &loaded, &mut results)?;
    Ok(results)
}

/// Each run's group-sequential design with its looks and stops ([`Results::sequential`]), and
/// each comparison a design judged its verdict ([`Comparison::sequential`]); the hypotheses
/// that read such a comparison read its verdict
/// ([`super::hypotheses::apply_sequential`]).
fn attach_sequential(
    conn: &Connection,
    loaded: &Loaded,
    results: &mut Results,
) -> Result<(), StoreError> {
    for run in &loaded.runs {
        if let Some(rec) = crate::store::queries::sequential_record(conn, run.id)? {
            results.sequential.push((run.name.clone(), rec));
        }
    }
    let label = |run: &str, key: &str| {
        results
            .conditions
            .iter()
            .find(|c| c.run == run && c.condition == key)
            .map(|c| c.label.clone())
    };
    let mut verdicts = Vec::new();
    for (run, rec) in &results.sequential {
        for c in &rec.design.comparisons {
            let base_run = c.without_run.as_deref().unwrap_or(run);
            let (Some(with), Some(without), Some(look)) = (
                label(run, &c.with),
                label(base_run, &c.without),
                rec.last_look(&c.label),
            ) else {
                continue;
            };
            verdicts.push((
                with,
                without,
                crate::domain::sequential::SequentialVerdict {
                    run: run.clone(),
                    label: c.label.clone(),
                    stages: rec.design.stages(),
                    look: look.clone(),
                },
            ));
        }
    }
    for (with, without, v) in verdicts {
        if let Some(c) = results
            .comparisons
            .iter_mut()
            .find(|c| c.with == with && c.without == without)
        {
            for h in results
                .hypotheses
                .iter_mut()
                .filter(|h| h.scope == "all tasks" && h.measure == format!("Δ {with} − {without}"))
            {
                super::hypotheses::apply_sequential(h, &v);
            }
            c.sequential = Some(v);
        }
    }
    Ok(())
}

/// Fills each comparison's [`Comparison::drift`]: what its two sides' latest attempts ran with
/// ([`tally::Ran`]: harness, version, model, sampling, each task's digest) and whether the
/// harness's own skills were switched off ([`super::exposure`]), compared once
/// ([`crate::domain::provenance::compare`]); the task sets are left out (a task one side did not
/// run is listed as not run already).
fn attach_drift(loaded: &Loaded, results: &mut Results) {
    use crate::domain::provenance::{Field, Provenance, compare};
    let of = |label: &str| -> Option<Provenance> {
        let c = results.conditions.iter().find(|c| c.label == label)?;
        let run = loaded.runs.iter().find(|r| r.name == c.run)?;
        let mut p = loaded
            .tally
            .provenance
            .get(&(run.id, c.condition.clone()))?
            .provenance();
        p.skill_exposure = results
            .exposure
            .conditions
            .iter()
            .find(|e| e.label == label)
            .and_then(|e| {
                crate::domain::provenance::skill_exposure(
                    e.harness,
                    e.builtins_off,
                    e.with_builtins,
                )
            });
        Some(p)
    };
    let drifts: Vec<Vec<crate::domain::provenance::Mismatch>> = results
        .comparisons
        .iter()
        .map(|c| match (of(&c.with), of(&c.without)) {
            (Some(w), Some(wo)) => compare(&w, &wo)
                .into_iter()
                .filter(|m| m.field != Field::Tasks)
                .collect(),
            _ => Vec::new(),
        })
        .collect();
    for (c, d) in results.comparisons.iter_mut().zip(drifts) {
        c.drift = d;
    }
}

/// The note that marks an experiment's reused round-1 conditions and where they came from
/// (`experiment --baseline-from`), with the differences `--allow-drift` accepted.
fn baseline_note(b: &lq::BaselineRow, conditions: &[ConditionResult]) -> String {
    let labels: Vec<&str> = conditions
        .iter()
        .filter(|c| c.run == b.run)
        .map(|c| c.label.as_str())
        .collect();
    let accepted = if b.accepted.is_empty() {
        "it matched the plan in every field checked".to_string()
    } else {
        format!(
            "drift accepted with --allow-drift: {}",
            b.accepted
                .iter()
                .map(|m| m.describe("run", "plan"))
                .collect::<Vec<_>>()
                .join("; ")
        )
    };
    format!(
        "Reused baseline: condition(s) {} were not run by this experiment but taken from run {} (id {}, {}, database {}), checked against the plan on {}; {accepted}.",
        if labels.is_empty() {
            "of round 1".to_string()
        } else {
            labels.join(", ")
        },
        b.run,
        b.run_id,
        b.source,
        b.db,
        b.checked_at
    )
}

/// Lists the trials of each condition flagged for tampering ([`super::tamper`]), over the
/// results' task set.
fn attach_tamper(
    conn: &Connection,
    loaded: &Loaded,
    results: &mut Results,
) -> Result<(), StoreError> {
    let scopes: Vec<super::tamper::Scope<'_>> = results
        .conditions
        .iter()
        .filter_map(|c| {
            let run = loaded.runs.iter().find(|r| r.name == c.run)?;
            Some(super::tamper::Scope {
                label: &c.label,
                run_id: run.id,
                run: &c.run,
                condition: &c.condition,
            })
        })
        .collect();
    let tasks: std::collections::BTreeSet<String> =
        results.tasks.iter().map(|t| t.id.clone()).collect();
    let unchecked: Vec<String> = loaded
        .runs
        .iter()
        .filter(|r| r.source != "native")
        .map(|r| r.name.clone())
        .collect();
    for (kind, out) in [
        (FlagKind::Tampered, &mut results.tamper),
        (FlagKind::Contradicted, &mut results.contradicted),
    ] {
        *out = super::tamper::compute(conn, &scopes, Some(&tasks), kind)?;
        out.unchecked_runs = unchecked.clone();
        out.checked_runs = loaded.runs.len() - unchecked.len();
    }
    Ok(())
}

/// The selection as read once: its runs, their plans, the whole task set and the tally every
/// question is answered from.
pub(super) struct Loaded {
    /// The experiment's name when one was selected.
    experiment: Option<String>,
    /// The selected runs.
    runs: Vec<RunRow>,
    /// The trials each run planned per task (imports plan unevenly).
    plans: Vec<TrialPlan>,
    /// The task set ([`task_set`]).
    tasks: Vec<TaskInfo>,
    /// One pass over the runs' trial rows.
    tally: tally::Tally,
}

/// Reads `selection` once ([`Loaded`]).
fn load(conn: &Connection, selection: &Selection, scoring: &Scoring) -> Result<Loaded, StoreError> {
    let (experiment, runs) = selected(conn, selection)?;
    let task_runs = if experiment.is_some() {
        &runs[..1]
    } else {
        &runs[..]
    };
    let tasks = task_set(conn, task_runs)?;
    let plans: Vec<TrialPlan> = runs
        .iter()
        .map(|r| queries::trial_plan(conn, r))
        .collect::<Result<_, _>>()?;
    let tally = tally::load(conn, &runs, &plans, &scoring.success)?;
    Ok(Loaded {
        experiment,
        runs,
        plans,
        tasks,
        tally,
    })
}

/// The runs `selection` names, and the experiment's name when it is one.
fn selected(
    conn: &Connection,
    selection: &Selection,
) -> Result<(Option<String>, Vec<RunRow>), StoreError> {
    match selection {
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
            Ok((Some(e.name), runs))
        }
        Selection::Runs(names) => {
            let mut runs = Vec::new();
            for n in names {
                runs.push(
                    queries::find_run(conn, n)?
                        .ok_or_else(|| StoreError::NotFound(format!("no run named {n:?}")))?,
                );
            }
            Ok((None, runs))
        }
    }
}

/// The task set: round 1's tasks for an experiment (`task_runs` is its first run), else every
/// selected run's, by id. Difficulties are normalised to the closed set ([`Difficulty`]).
fn task_set(conn: &Connection, task_runs: &[RunRow]) -> Result<Vec<TaskInfo>, StoreError> {
    let mut tasks: BTreeMap<String, TaskInfo> = BTreeMap::new();
    for r in task_runs {
        for t in queries::run_tasks(conn, r.id)? {
            tasks.entry(t.task_id.clone()).or_insert(TaskInfo {
                id: t.task_id,
                domain: t.domain,
                difficulty: Difficulty::normalize(&t.difficulty),
            });
        }
    }
    Ok(tasks.into_values().collect())
}

/// [`analyze`] over the task set, or only the tasks in `only`, from the tally `loaded`.
fn analyze_tasks(
    loaded: &Loaded,
    scoring: &Scoring,
    only: Option<&std::collections::BTreeSet<String>>,
) -> Results {
    let method = &scoring.ci;
    let Loaded {
        experiment,
        runs,
        plans,
        tally,
        ..
    } = loaded;
    let is_experiment = experiment.is_some();
    let tasks: Vec<TaskInfo> = loaded
        .tasks
        .iter()
        .filter(|t| only.is_none_or(|o| o.contains(&t.id)))
        .cloned()
        .collect();
    let conditions = conditions::score(
        runs,
        is_experiment,
        &tasks,
        plans,
        &tally.cells,
        &tally.categories,
        scoring,
    );

    let pairs = comparisons::pairs(is_experiment, runs, &conditions);
    let mut comparisons = Vec::new();
    let mut task_deltas = Vec::new();
    for (name, w, wo) in &pairs {
        let (c, d) = comparisons::compare(name, &conditions[*w], &conditions[*wo], &tasks, method);
        comparisons.push(c);
        task_deltas.extend(d);
    }
    // Best first within each comparison; tasks not run on one side last.
    let rank: HashMap<&str, usize> = comparisons
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.as_str(), i))
        .collect();
    task_deltas.sort_by(|a, b| {
        rank[a.comparison.as_str()]
            .cmp(&rank[b.comparison.as_str()])
            .then(a.delta_pp.is_none().cmp(&b.delta_pp.is_none()))
            .then(
                b.delta_pp
                    .unwrap_or(0.0)
                    .total_cmp(&a.delta_pp.unwrap_or(0.0)),
            )
            .then(a.task.cmp(&b.task))
    });

    let domains = breakdowns::rows(&tasks, &conditions, &pairs, &|t| t.domain.clone(), &|d| {
        (0, d.to_string())
    });
    let difficulties = breakdowns::rows(
        &tasks,
        &conditions,
        &pairs,
        &|t| t.difficulty.clone(),
        &difficulty_order,
    );

    // Experiment-only analyses: pass@2-adaptive, failure shifts and learning efficiency.
    let mut adaptive = Vec::new();
    let (mut failure_shifts, mut category_shifts, mut efficiency) =
        (Vec::new(), Vec::new(), Vec::new());
    if is_experiment {
        let find = |l: &str| conditions.iter().find(|c| c.label == l);
        for (from, to) in ROUND_PAIRS {
            if let (Some(f), Some(t)) = (find(from), find(to)) {
                adaptive.extend(adaptive::rows(
                    &format!("{from} → {to}"),
                    &tasks,
                    f,
                    t,
                    method,
                ));
            }
        }
        (failure_shifts, category_shifts) = failures::shifts(&conditions);
        efficiency = breakdowns::efficiency(&tasks, &conditions, &pairs);
    }

    let mut paper = paper_rows::rows(runs, &conditions);
    paper.extend(paper_rows::registry_aggregates(runs, &conditions));
    let flaky = comparisons::flaky(&conditions, &tasks);
    let (mut notes, run_infos) =
        notes::notes_and_runs(runs, &tally.runs, &conditions, &comparisons);
    let interim = Interim::of(runs, &conditions, scoring.as_of);
    if let Some(i) = &interim {
        notes.insert(0, i.describe());
    }

    Results {
        interim,
        generated_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        experiment: experiment.clone(),
        runs: run_infos,
        tasks,
        ci_description: method.describe(),
        ci_method: method.clone(),
        success: scoring.success,
        success_description: scoring.success.describe(),
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
        paper,
        notes,
        hypotheses: Vec::new(),
        held_out: None,
        round2_skills: Vec::new(),
        exposure: Default::default(),
        tamper: Default::default(),
        contradicted: super::tamper::Tampering::of(FlagKind::Contradicted),
        baseline: None,
        sequential: Vec::new(),
    }
}
