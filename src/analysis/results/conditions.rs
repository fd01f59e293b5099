//! Each condition scored: Method D over the tasks it ran, pass@1 beside it, its CI, trial counts
//! by how they ended, and the per-task figures every other question reads.

use std::collections::BTreeMap;

use serde::Serialize;

use super::tally::{CategoryCounts, Cells};
use super::{FailureMode, Scoring, TaskInfo, mean_of};
use crate::analysis::ci::{self, Ci};
use crate::analysis::failure_category::FailureCategory;
use crate::analysis::noise::{self, AaNoise, FlipRate, NoiseMethod, TaskTrials};
use crate::domain::{RunRow, TrialPlan};
use crate::skillsbench::condition::condition_label;

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
    /// Method D pass rate over the tasks it ran ([`ConditionResult::n_tasks`]), fraction: per
    /// task the mean reward over its planned trials, then the mean over those tasks.
    pub pass_rate: f64,
    /// Its CI; `None` with [`ConditionResult::ci_undefined`] saying why.
    pub ci: Option<Ci>,
    /// Why there is no CI (fewer than 2 tasks).
    pub ci_undefined: Option<String>,
    /// Its standard error, fraction: `sd(per-task means)/√n` over the tasks it ran, clustered by
    /// task ([`crate::analysis::power::se_of_mean`], Miller 2024); `None` below two tasks.
    pub se: Option<f64>,
    /// pass@1 over the same tasks: per task the share of planned trials that succeeded (reward ≥
    /// the pass threshold), then the mean. Equal to Method D when every reward is 0 or 1 and the
    /// threshold is 1.
    pub pass_at_1: f64,
    /// Tasks it ran (planned trials of): its denominator.
    pub n_tasks: usize,
    /// Trials planned over those tasks.
    pub planned: usize,
    /// Trials finished.
    pub done: usize,
    /// Trials that succeeded: reward ≥ the pass threshold, whatever the outcome.
    pub passed: usize,
    /// Of those, agent timeouts whose verifier still gave the reward.
    pub timeout_passed: usize,
    /// Trials that did not succeed whose reward is strictly between 0 and 1 (partial credit:
    /// Method D counts them fractionally).
    pub partial: usize,
    /// Trials that did not succeed, by failure mode (planned trials that never ran count as
    /// `not_run`).
    pub failures: BTreeMap<FailureMode, usize>,
    /// Method D over trials with a verdict only (per task: mean reward over its judged trials;
    /// tasks without one are left out; then the mean over tasks); `None` without any.
    pub pass_rate_judged: Option<f64>,
    /// Trials from published aggregates rather than trial folders.
    pub aggregated: bool,
    /// Per-task Method D means in [`super::Results::tasks`] order; `None` for a task it did
    /// not run (never 0).
    pub per_task: Vec<Option<f64>>,
    /// Per task: trials planned (the Method D denominator; 0 = not run).
    pub per_task_planned: Vec<u32>,
    /// Per task: trials that succeeded.
    pub per_task_passed: Vec<usize>,
    /// Per task: trials with a verdict (pass, fail, agent or verifier timeout).
    pub per_task_judged: Vec<usize>,
    /// Per task: trials with a verdict that did not succeed.
    pub per_task_judged_failed: Vec<usize>,
    /// Per task: mean reward over its trials with a verdict; `None` without one.
    pub per_task_judged_mean: Vec<Option<f64>>,
    /// Judged failures by the plan's failure category ([`FailureCategory`]): stored with the
    /// trial, or decided now from its folder for trials recorded before categories existed.
    pub categories: BTreeMap<FailureCategory, usize>,
    /// Per task: the rewards of its finished trials in trial-index order (empty when not run).
    #[serde(skip)]
    pub per_task_rewards: Vec<Vec<f64>>,
    /// Its flip rate: tasks whose trials disagree ([`crate::analysis::noise`]).
    pub flip: FlipRate,
    /// Its A/A noise: the spread of Δ between random halves of its trials, scaled to a
    /// full-size comparison ([`crate::analysis::noise`]).
    pub aa_noise: AaNoise,
}

impl ConditionResult {
    /// Infrastructure failures (no reward, build and runtime errors, provider errors).
    pub fn infrastructure(&self) -> usize {
        self.failures
            .iter()
            .filter(|(m, _)| m.is_infrastructure())
            .map(|(_, n)| n)
            .sum()
    }

    /// True when it ran task `i`.
    pub fn ran(&self, i: usize) -> bool {
        self.per_task.get(i).is_some_and(Option::is_some)
    }

    /// pass@1 of task `i` (share of its planned trials that succeeded); `None` when not run.
    pub fn pass_at_1_of(&self, i: usize) -> Option<f64> {
        let n = *self.per_task_planned.get(i)?;
        (n > 0).then(|| self.per_task_passed[i] as f64 / n as f64)
    }

    /// True when task `i` is flaky here: some trials succeeded and some with a verdict did not.
    pub fn is_flaky(&self, i: usize) -> bool {
        self.per_task_passed[i] > 0 && self.per_task_judged_failed[i] > 0
    }
}

/// The finished trials of `c` on the tasks `idx` (indices into `tasks`, the tasks `c` was
/// scored over), for the noise floor.
pub(super) fn task_trials<'a>(
    c: &'a ConditionResult,
    tasks: &'a [TaskInfo],
    idx: &[usize],
) -> Vec<TaskTrials<'a>> {
    idx.iter()
        .map(|&i| TaskTrials {
            task: &tasks[i].id,
            rewards: &c.per_task_rewards[i],
        })
        .collect()
}

/// The label of condition `ci` of run `ri`: `A`, `B`, `C`, `A'`, `B'` in an experiment; else the
/// condition's label, prefixed with the run when `many` runs are selected.
fn label(experiment: bool, many: bool, run: &RunRow, ri: usize, ci: usize) -> String {
    match (experiment, ri, ci) {
        (true, 0, 0) => "A".to_string(),
        (true, 0, 1) => "B".to_string(),
        (true, 0, 2) => "C".to_string(),
        (true, 1, 0) => "A'".to_string(),
        (true, 1, 1) => "B'".to_string(),
        _ if many => format!("{}: {}", run.name, condition_label(&run.conditions[ci])),
        _ => condition_label(&run.conditions[ci]),
    }
}

/// Every condition of `runs` scored over `tasks` (the plan `plans[i]` of run `i`); conditions
/// that ran none of `tasks` are left out.
pub(super) fn score(
    runs: &[RunRow],
    experiment: bool,
    tasks: &[TaskInfo],
    plans: &[TrialPlan],
    cells: &Cells,
    categories: &CategoryCounts,
    scoring: &Scoring,
) -> Vec<ConditionResult> {
    let many = runs.len() > 1 && !experiment;
    let mut out = Vec::new();
    for (ri, run) in runs.iter().enumerate() {
        for (ci, cond) in run.conditions.iter().enumerate() {
            let c = with_intervals(
                method_d(run, cond, tasks, &plans[ri], cells, scoring),
                scoring,
            );
            if c.n_tasks == 0 {
                continue;
            }
            let mut c = ConditionResult {
                label: label(experiment, many, run, ri, ci),
                categories: categories
                    .get(&(run.id, cond.clone()))
                    .cloned()
                    .unwrap_or_default(),
                ..c
            };
            let ran: Vec<usize> = (0..tasks.len()).filter(|&i| c.ran(i)).collect();
            c.aa_noise = noise::aa_noise(
                &c.label,
                &task_trials(&c, tasks, &ran),
                &NoiseMethod::from(&scoring.ci),
            );
            out.push(c);
        }
    }
    out
}

/// `c` with the interval of its Method D pass rate and its standard error.
fn with_intervals(mut c: ConditionResult, scoring: &Scoring) -> ConditionResult {
    let ran: Vec<f64> = c.per_task.iter().flatten().copied().collect();
    c.ci = scoring.ci.mean(&ran);
    c.ci_undefined = ci::why_undefined(ran.len());
    c.se = crate::analysis::power::se_of_mean(&ran);
    c
}

/// Condition `cond` of `run` over `tasks` without its intervals (`ci`, `se` left empty): the
/// per-task Method D means, the counts, pass@1, the flip rate and the pass rate over judged
/// trials — what the dashboard's live breakdown draws ([`super::live_breakdown`]) many times a
/// minute, where a bootstrap would cost too much.
pub(super) fn method_d(
    run: &RunRow,
    cond: &str,
    tasks: &[TaskInfo],
    plan: &TrialPlan,
    cells: &Cells,
    scoring: &Scoring,
) -> ConditionResult {
    let n = tasks.len();
    let mut c = ConditionResult {
        label: String::new(),
        run: run.name.clone(),
        condition: cond.to_string(),
        pass_rate: 0.0,
        ci: None,
        ci_undefined: None,
        se: None,
        pass_at_1: 0.0,
        n_tasks: 0,
        planned: 0,
        done: 0,
        passed: 0,
        timeout_passed: 0,
        partial: 0,
        failures: BTreeMap::new(),
        pass_rate_judged: None,
        aggregated: false,
        per_task: vec![None; n],
        per_task_planned: vec![0; n],
        per_task_passed: vec![0; n],
        per_task_judged: vec![0; n],
        per_task_judged_failed: vec![0; n],
        per_task_judged_mean: vec![None; n],
        categories: BTreeMap::new(),
        per_task_rewards: vec![Vec::new(); n],
        flip: FlipRate::default(),
        aa_noise: noise::aa_noise(cond, &[], &NoiseMethod::from(&scoring.ci)),
    };
    for (i, t) in tasks.iter().enumerate() {
        let n_planned = plan.of(&t.id, cond);
        if n_planned == 0 {
            continue;
        }
        let cell = cells
            .get(&(run.id, cond.to_string(), t.id.clone()))
            .cloned()
            .unwrap_or_default();
        c.per_task[i] = Some(cell.reward / n_planned as f64);
        c.per_task_planned[i] = n_planned;
        c.per_task_passed[i] = cell.passed;
        c.per_task_judged[i] = cell.judged;
        c.per_task_judged_failed[i] = cell.judged_failed;
        c.per_task_rewards[i] = cell.rewards.clone();
        c.planned += n_planned as usize;
        c.done += cell.done;
        c.passed += cell.passed;
        c.timeout_passed += cell.timeout_passed;
        c.partial += cell.partial;
        c.aggregated |= cell.aggregated;
        let mut seen = cell.passed;
        for (m, k) in &cell.failures {
            *c.failures.entry(*m).or_default() += k;
            seen += k;
        }
        // Planned trials with no row at all were never run.
        let missing = (n_planned as usize).saturating_sub(seen);
        if missing > 0 {
            *c.failures.entry(FailureMode::NotRun).or_default() += missing;
        }
        if cell.judged > 0 {
            c.per_task_judged_mean[i] = Some(cell.judged_reward / cell.judged as f64);
        }
    }
    let ran: Vec<f64> = c.per_task.iter().flatten().copied().collect();
    c.n_tasks = ran.len();
    c.pass_rate = mean_of(&ran);
    c.pass_at_1 = mean_of(
        &(0..n)
            .filter_map(|i| c.pass_at_1_of(i))
            .collect::<Vec<f64>>(),
    );
    c.flip = noise::flip_rate(
        (0..n)
            .filter(|&i| c.ran(i))
            .map(|i| (c.per_task_passed[i], c.per_task_judged_failed[i])),
    );
    let judged: Vec<f64> = c.per_task_judged_mean.iter().flatten().copied().collect();
    c.pass_rate_judged = (!judged.is_empty()).then(|| mean_of(&judged));
    c
}
