//! Paired comparisons of two conditions over the tasks both ran (**matched tasks**): Δ with its
//! paired bootstrap CI, normalized gain g, Δ over trials with a verdict, the part of Δ that
//! rests on flaky tasks, and each task's change. A task only one side ran is listed as `not run`
//! on the other side — never scored 0 there.

use serde::Serialize;

use super::conditions::task_trials;
use super::{ConditionResult, EXPERIMENT_COMPARISONS, TaskInfo, mean_of};
use crate::analysis::ci::{self, Ci, CiMethod};
use crate::analysis::metrics::{delta_pp, normalized_gain};
use crate::analysis::noise::{self, AaNoise, NoiseMethod};
use crate::domain::RunRow;

/// A comparison of two conditions over the tasks both ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// `A' vs A`, `curated vs no-skills`, …
    pub name: String,
    /// Label of the condition with the treatment.
    pub with: String,
    /// Label of the baseline.
    pub without: String,
    /// Matched tasks: both conditions ran them (the comparison's denominator).
    pub n_tasks: usize,
    /// Tasks of the whole task set ([`super::Results::tasks`]).
    pub n_tasks_total: usize,
    /// Tasks the baseline ran and the treatment did not (`not run` under `with`).
    pub not_run_with: Vec<String>,
    /// Tasks the treatment ran and the baseline did not (`not run` under `without`).
    pub not_run_without: Vec<String>,
    /// Method D of the treatment over the matched tasks, fraction; `None` without any.
    pub p_with: Option<f64>,
    /// Of the baseline.
    pub p_without: Option<f64>,
    /// Δ over the matched tasks, percentage points; `None` without any (see `delta_undefined`).
    pub delta_pp: Option<f64>,
    /// Why Δ is undefined.
    pub delta_undefined: Option<String>,
    /// CI of Δ (paired bootstrap over the matched tasks), percentage points.
    pub delta_ci_pp: Option<Ci>,
    /// Standard error of Δ over the matched tasks, percentage points: `sd(paired differences)/√n`
    /// ([`crate::analysis::power::se_paired`], Miller 2024); `None` below two tasks.
    pub delta_se_pp: Option<f64>,
    /// Why there is no CI.
    pub ci_undefined: Option<String>,
    /// Normalized gain g over the matched tasks.
    pub g: Option<f64>,
    /// Why g is undefined (the baseline at 100 %, or no matched task).
    pub g_undefined: Option<String>,
    /// Δ over trials with a verdict, paired over the matched tasks judged on both sides,
    /// percentage points.
    pub delta_pp_judged: Option<f64>,
    /// Matched tasks flaky (some trials succeed, some fail) in either condition.
    pub n_flaky: usize,
    /// The part of Δ those tasks contribute (their per-task differences over the matched
    /// tasks), percentage points.
    pub delta_pp_flaky: f64,
    /// The A/A noise beside Δ: the spread of Δ that trial noise alone gives, both sides pooled
    /// over the matched tasks both can split ([`crate::analysis::noise::aa_noise_paired`]).
    pub aa_noise: AaNoise,
    /// Matched tasks better / worse / unchanged.
    pub improved: usize,
    /// Worse.
    pub degraded: usize,
    /// Equal.
    pub unchanged: usize,
    /// What differs between the two sides' trials — harness, its version, model, sampling
    /// settings, a task's digest over the matched tasks, the harness's own skills switched off
    /// or offered — `with` on the left ([`crate::domain::provenance::compare`]); empty when
    /// both ran alike.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift: Vec<crate::domain::provenance::Mismatch>,
    /// The verdict of the group-sequential design that judged this comparison, when one did
    /// (issue 47): then its verdict and adjusted estimate are the comparison's, and `delta_pp`
    /// and `delta_ci_pp` are the naive ones beside them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<crate::domain::sequential::SequentialVerdict>,
}

impl Comparison {
    /// The version-drift note shown beside Δ (`version drift: harness-version 2.0.1 ≠ 2.1.0`),
    /// when the two sides ran differently in something both recorded.
    pub fn drift_note(&self) -> Option<String> {
        crate::domain::provenance::drift_note(&self.drift).map(|n| format!("version drift: {n}"))
    }

    /// True when it covers fewer tasks than the whole task set.
    pub fn is_partial(&self) -> bool {
        self.n_tasks < self.n_tasks_total
    }
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
    /// One side did not run it (or, mid-run, one side has no finished trial on the compared
    /// tasks yet): no comparison.
    NotRun,
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
    /// Mean reward with the treatment; `None` when it did not run the task.
    pub with: Option<f64>,
    /// Without; `None` when the baseline did not run it.
    pub without: Option<f64>,
    /// Δ, percentage points; `None` unless both ran it.
    pub delta_pp: Option<f64>,
    /// Direction.
    pub change: Change,
}

/// A task whose trials under one condition disagree: some succeed, some with a verdict fail.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flaky {
    /// Condition label.
    pub condition: String,
    /// Task.
    pub task: String,
    /// Trials that succeeded.
    pub passed: usize,
    /// Judged trials that did not.
    pub failed: usize,
}

/// The comparisons to make, as (name, treatment index, baseline index) into `conditions`: an
/// experiment's [`EXPERIMENT_COMPARISONS`] whose conditions ran; for runs, each condition against
/// its run's no-skills condition (else its first).
pub(super) fn pairs(
    experiment: bool,
    runs: &[RunRow],
    conditions: &[ConditionResult],
) -> Vec<(String, usize, usize)> {
    let find = |l: &str| conditions.iter().position(|c| c.label == l);
    let mut out = Vec::new();
    if experiment {
        for (name, w, wo) in EXPERIMENT_COMPARISONS {
            if let (Some(a), Some(b)) = (find(w), find(wo)) {
                out.push((name.to_string(), a, b));
            }
        }
        return out;
    }
    for run in runs {
        let idx: Vec<usize> = (0..conditions.len())
            .filter(|&i| conditions[i].run == run.name)
            .collect();
        let base = idx
            .iter()
            .copied()
            .find(|&i| conditions[i].condition == "no-skills")
            .or(idx.first().copied());
        if let Some(b) = base {
            for &i in idx.iter().filter(|&&i| i != b) {
                out.push((
                    format!("{} vs {}", conditions[i].label, conditions[b].label),
                    i,
                    b,
                ));
            }
        }
    }
    out
}

/// Tasks (indices) both `a` and `b` ran.
pub(super) fn matched(a: &ConditionResult, b: &ConditionResult) -> Vec<usize> {
    (0..a.per_task.len())
        .filter(|&i| a.ran(i) && b.ran(i))
        .collect()
}

/// The mean of `c`'s per-task values at `idx` (tasks it ran).
pub(super) fn mean_at(c: &ConditionResult, idx: &[usize]) -> f64 {
    mean_of(
        &idx.iter()
            .filter_map(|&i| c.per_task[i])
            .collect::<Vec<_>>(),
    )
}

/// The side of a comparison over the tasks `idx` none of whose trials there has finished
/// (published aggregates excepted): mid-run Method D scores it 0, and a Δ against it would
/// only say it has not run.
pub(super) fn unstarted<'a>(
    cw: &'a ConditionResult,
    cwo: &'a ConditionResult,
    idx: &[usize],
) -> Option<&'a ConditionResult> {
    [cw, cwo]
        .into_iter()
        .find(|side| !side.aggregated && idx.iter().all(|&i| side.per_task_rewards[i].is_empty()))
}

/// Why Δ is undefined against the [`unstarted`] side `side`.
pub(super) fn unstarted_why(side: &ConditionResult) -> String {
    format!("no trial of {} has finished on these tasks", side.label)
}

/// Δ (pp) and g of `cw` against `cwo` over the tasks `idx`; `None`s without any, or while a
/// side has no finished trial there ([`unstarted`]).
pub(super) fn delta_and_gain(
    cw: &ConditionResult,
    cwo: &ConditionResult,
    idx: &[usize],
) -> (Option<f64>, Option<f64>) {
    if idx.is_empty() || unstarted(cw, cwo, idx).is_some() {
        return (None, None);
    }
    let (w, wo) = (mean_at(cw, idx), mean_at(cwo, idx));
    (Some(delta_pp(w, wo)), normalized_gain(w, wo))
}

/// Compares `cw` (treatment) with `cwo` (baseline) over the tasks both ran: the comparison and
/// one [`TaskDelta`] per task of `tasks` (matched tasks with their change, the others `not run`).
pub(super) fn compare(
    name: &str,
    cw: &ConditionResult,
    cwo: &ConditionResult,
    tasks: &[TaskInfo],
    method: &CiMethod,
) -> (Comparison, Vec<TaskDelta>) {
    let idx = matched(cw, cwo);
    let pick = |c: &ConditionResult| {
        idx.iter()
            .filter_map(|&i| c.per_task[i])
            .collect::<Vec<_>>()
    };
    let (vw, vwo) = (pick(cw), pick(cwo));
    let (p_with, p_without) = if idx.is_empty() {
        (None, None)
    } else {
        (Some(mean_of(&vw)), Some(mean_of(&vwo)))
    };
    let mut c = Comparison {
        name: name.to_string(),
        with: cw.label.clone(),
        without: cwo.label.clone(),
        n_tasks: idx.len(),
        n_tasks_total: tasks.len(),
        not_run_with: Vec::new(),
        not_run_without: Vec::new(),
        p_with,
        p_without,
        delta_pp: None,
        delta_undefined: None,
        delta_ci_pp: method.paired_difference(&vw, &vwo).map(|c| c.scaled(100.0)),
        delta_se_pp: crate::analysis::power::se_paired(&vw, &vwo).map(|s| s * 100.0),
        ci_undefined: ci::why_undefined(idx.len()),
        g: None,
        g_undefined: None,
        delta_pp_judged: judged_delta(cw, cwo, &idx),
        n_flaky: 0,
        delta_pp_flaky: 0.0,
        aa_noise: noise::aa_noise_paired(
            (&cw.label, &task_trials(cw, tasks, &idx)),
            (&cwo.label, &task_trials(cwo, tasks, &idx)),
            &NoiseMethod::from(method),
        ),
        improved: 0,
        degraded: 0,
        unchanged: 0,
        drift: Vec::new(),
        sequential: None,
    };
    // Mid-run, a side none of whose trials on the matched tasks has finished scores 0 under
    // Method D (unfinished trials count 0): a Δ against it says only that it has not run.
    let unstarted = unstarted(cw, cwo, &idx);
    match (p_with, p_without, unstarted) {
        (Some(_), Some(_), Some(side)) => {
            let why = unstarted_why(side);
            c.delta_ci_pp = None;
            c.delta_se_pp = None;
            c.ci_undefined = Some(why.clone());
            c.delta_undefined = Some(why.clone());
            c.g_undefined = Some(why);
        }
        (Some(w), Some(wo), None) => {
            c.delta_pp = Some(delta_pp(w, wo));
            c.g = normalized_gain(w, wo);
            if c.g.is_none() {
                c.g_undefined = Some("baseline at 100 %: no room to gain".into());
            }
        }
        _ => {
            let why = format!("no task ran under both {} and {}", cw.label, cwo.label);
            c.delta_undefined = Some(why.clone());
            c.g_undefined = Some(why);
        }
    }
    let mut deltas = Vec::with_capacity(tasks.len());
    let mut flaky_sum = 0.0;
    for (i, t) in tasks.iter().enumerate() {
        let (w, wo) = (cw.per_task[i], cwo.per_task[i]);
        let (delta, change) = match (w, wo) {
            // While a side has no finished trial, no task's change is told either.
            (Some(_), Some(_)) if unstarted.is_some() => (None, Change::NotRun),
            (Some(w), Some(wo)) => {
                let d = w - wo;
                if cw.is_flaky(i) || cwo.is_flaky(i) {
                    c.n_flaky += 1;
                    flaky_sum += d;
                }
                let change = if d > 1e-9 {
                    c.improved += 1;
                    Change::Improved
                } else if d < -1e-9 {
                    c.degraded += 1;
                    Change::Degraded
                } else {
                    c.unchanged += 1;
                    Change::Unchanged
                };
                (Some(d * 100.0), change)
            }
            (w, wo) => {
                if w.is_none() && wo.is_some() {
                    c.not_run_with.push(t.id.clone());
                } else if wo.is_none() && w.is_some() {
                    c.not_run_without.push(t.id.clone());
                } else {
                    // Neither ran it: not part of this comparison at all.
                    continue;
                }
                (None, Change::NotRun)
            }
        };
        deltas.push(TaskDelta {
            comparison: name.to_string(),
            task: t.id.clone(),
            domain: t.domain.clone(),
            difficulty: t.difficulty.clone(),
            with: w,
            without: wo,
            delta_pp: delta,
            change,
        });
    }
    if !idx.is_empty() {
        c.delta_pp_flaky = flaky_sum / idx.len() as f64 * 100.0;
    }
    (c, deltas)
}

/// Δ (pp) over trials with a verdict, paired: over the matched tasks with a judged trial on both
/// sides, the difference of the means of their judged rewards' means; `None` without such a
/// task.
fn judged_delta(cw: &ConditionResult, cwo: &ConditionResult, idx: &[usize]) -> Option<f64> {
    // Paired: over the matched tasks judged on both sides (a task judged on one side only
    // would subtract rates over different task sets).
    let (with, without): (Vec<f64>, Vec<f64>) = idx
        .iter()
        .filter_map(|&i| Some((cw.per_task_judged_mean[i]?, cwo.per_task_judged_mean[i]?)))
        .unzip();
    (!with.is_empty()).then(|| delta_pp(mean_of(&with), mean_of(&without)))
}

/// Flaky tasks per condition, in condition then task order.
pub(super) fn flaky(conditions: &[ConditionResult], tasks: &[TaskInfo]) -> Vec<Flaky> {
    let mut out = Vec::new();
    for c in conditions {
        for (i, t) in tasks.iter().enumerate() {
            if c.ran(i) && c.is_flaky(i) {
                out.push(Flaky {
                    condition: c.label.clone(),
                    task: t.id.clone(),
                    passed: c.per_task_passed[i],
                    failed: c.per_task_judged_failed[i],
                });
            }
        }
    }
    out
}
