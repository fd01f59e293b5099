//! Pass rates as the SkillsBench paper reports them.
//!
//! **Method D** (SkillsBench, Li et al. 2026, §Metrics): for each task, the mean reward over its
//! planned trials; for a condition, the mean of those task means over a FIXED denominator — every
//! task the condition planned trials of — so a missing, unfinished or errored trial counts 0 and
//! a planned task that never ran pulls the rate down instead of vanishing from it. A task the
//! condition never planned (an imported condition whose jobs held other tasks) is not run there:
//! it is left out, never 0. Rewards are clamped to [0, 1]; partial rewards count fractionally.
//!
//! **Δ** = p_with − p_without, in percentage points. **Normalized gain** g = (p_with − p_without) /
//! (1 − p_without) (Hake's gain, as the paper uses it); undefined when p_without = 1.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::domain::{Outcome, TrialBrief, TrialPlan, TrialRow, TrialStatus};

/// What pass rates need of an attempt; implemented by full rows and brief rows alike.
pub trait Scored {
    /// Task id.
    fn task_id(&self) -> &str;
    /// Condition key.
    fn condition(&self) -> &str;
    /// Trial index, 1-based.
    fn trial_index(&self) -> u32;
    /// True when a later attempt exists.
    fn superseded(&self) -> bool;
    /// Status.
    fn status(&self) -> TrialStatus;
    /// Outcome once done.
    fn outcome(&self) -> Option<Outcome>;
    /// Scalar reward.
    fn reward(&self) -> Option<f64>;
}

macro_rules! scored {
    ($t:ty) => {
        impl Scored for $t {
            fn task_id(&self) -> &str {
                &self.task_id
            }
            fn condition(&self) -> &str {
                &self.condition
            }
            fn trial_index(&self) -> u32 {
                self.trial_index
            }
            fn superseded(&self) -> bool {
                self.superseded
            }
            fn status(&self) -> TrialStatus {
                self.status
            }
            fn outcome(&self) -> Option<Outcome> {
                self.outcome
            }
            fn reward(&self) -> Option<f64> {
                self.reward
            }
        }
    };
}
scored!(TrialRow);
scored!(TrialBrief);

/// Method D pass rate of one condition, as a fraction in [0, 1].
///
/// `task_ids` is the fixed denominator, `n_trials` the trials planned per task, `trials` the
/// latest attempts (rows of other conditions are ignored).
pub fn method_d<T: Scored>(
    task_ids: &[String],
    n_trials: u32,
    condition: &str,
    trials: &[T],
) -> f64 {
    method_d_planned(task_ids, &TrialPlan::uniform(n_trials), condition, trials)
}

/// [`method_d`] with the trials planned per task from `plan` (imported runs plan unevenly),
/// over the tasks of `task_ids` the condition planned; 0 when it planned none.
pub fn method_d_planned<T: Scored>(
    task_ids: &[String],
    plan: &TrialPlan,
    condition: &str,
    trials: &[T],
) -> f64 {
    method_d_of(task_ids, plan, condition, trials).unwrap_or(0.0)
}

/// [`method_d_planned`], `None` when the condition planned none of `task_ids` (undefined, not 0).
pub fn method_d_of<T: Scored>(
    task_ids: &[String],
    plan: &TrialPlan,
    condition: &str,
    trials: &[T],
) -> Option<f64> {
    let per_task = per_task_mean_planned(task_ids, plan, condition, trials);
    (!per_task.is_empty()).then(|| per_task.values().sum::<f64>() / per_task.len() as f64)
}

/// True for a finished attempt that counts as done: finished, and neither cancelled nor
/// interrupted (those never ran to an end — a condition stopped early cancels its queued
/// trials). One definition for every "done" count: [`summarize_planned`] (`status --json`) and
/// the results' tally (the tables).
pub fn counts_as_done(finished: bool, outcome: Option<Outcome>) -> bool {
    finished && !matches!(outcome, Some(Outcome::Cancelled | Outcome::Interrupted))
}

/// True for an outcome the verifier judged: pass, fail (wrong output) and the two timeouts — the
/// trials the pass rate over judged trials counts ([`pass_rate_judged`], and
/// [`crate::analysis::results`]'s "trials with a verdict").
pub fn is_judged(outcome: Option<Outcome>) -> bool {
    matches!(
        outcome,
        Some(Outcome::Pass | Outcome::Fail | Outcome::AgentTimeout | Outcome::VerifierTimeout)
    )
}

/// The pass rate over judged trials of `condition`: per task the mean reward over its judged
/// trials ([`is_judged`], latest attempts within the plan), averaged over the tasks of `task_ids`
/// that have one; `None` when none has. Unlike Method D it leaves unfinished trials and
/// infrastructure failures out, so mid-run it estimates where Method D is heading — it is never a
/// substitute for it.
pub fn pass_rate_judged<T: Scored>(
    task_ids: &[String],
    plan: &TrialPlan,
    condition: &str,
    trials: &[T],
) -> Option<f64> {
    let wanted: std::collections::HashSet<&str> = task_ids.iter().map(String::as_str).collect();
    let mut per_task: HashMap<&str, (f64, usize)> = HashMap::new();
    for t in trials {
        if t.condition() != condition
            || t.superseded()
            || t.status() != TrialStatus::Done
            || !is_judged(t.outcome())
            || t.trial_index() == 0
            || t.trial_index() > plan.of(t.task_id(), condition)
            || !wanted.contains(t.task_id())
        {
            continue;
        }
        let e = per_task.entry(t.task_id()).or_default();
        e.0 += t.reward().map(|r| r.clamp(0.0, 1.0)).unwrap_or(0.0);
        e.1 += 1;
    }
    if per_task.is_empty() {
        return None;
    }
    Some(per_task.values().map(|(s, n)| s / *n as f64).sum::<f64>() / per_task.len() as f64)
}

/// Per task: mean reward over its `n_trials` planned trials (missing or unfinished = 0).
pub fn per_task_mean<T: Scored>(
    task_ids: &[String],
    n_trials: u32,
    condition: &str,
    trials: &[T],
) -> BTreeMap<String, f64> {
    per_task_mean_planned(task_ids, &TrialPlan::uniform(n_trials), condition, trials)
}

/// Per task the condition planned: mean reward over the trials `plan` plans for it (missing or
/// unfinished = 0); tasks with none planned are not in the map. Trial indices above the task's
/// plan are left out.
pub fn per_task_mean_planned<T: Scored>(
    task_ids: &[String],
    plan: &TrialPlan,
    condition: &str,
    trials: &[T],
) -> BTreeMap<String, f64> {
    let mut sums: HashMap<&str, f64> = HashMap::new();
    let mut seen: HashMap<(&str, u32), ()> = HashMap::new();
    for t in trials {
        if t.condition() != condition
            || t.superseded()
            || t.trial_index() == 0
            || t.trial_index() > plan.of(t.task_id(), condition)
        {
            continue;
        }
        // One reward per trial index, whatever the rows passed in.
        if seen.insert((t.task_id(), t.trial_index()), ()).is_some() {
            continue;
        }
        *sums.entry(t.task_id()).or_default() += trial_reward(t);
    }
    task_ids
        .iter()
        .filter_map(|id| {
            let n = plan.of(id, condition);
            let s = sums.get(id.as_str()).copied().unwrap_or(0.0);
            (n > 0).then(|| (id.clone(), s / n as f64))
        })
        .collect()
}

/// The reward a finished attempt contributes: its verifier reward clamped to [0, 1]; 0 when it is
/// not finished, was cancelled or interrupted, or has no reward.
pub fn trial_reward<T: Scored>(t: &T) -> f64 {
    if t.status() != TrialStatus::Done
        || matches!(t.outcome(), Some(Outcome::Cancelled | Outcome::Interrupted))
    {
        return 0.0;
    }
    t.reward().map(|r| r.clamp(0.0, 1.0)).unwrap_or(0.0)
}

/// Δ in percentage points between two pass rates given as fractions.
pub fn delta_pp(p_with: f64, p_without: f64) -> f64 {
    (p_with - p_without) * 100.0
}

/// Normalized gain g = (p_with − p_without) / (1 − p_without); `None` when p_without = 1.
pub fn normalized_gain(p_with: f64, p_without: f64) -> Option<f64> {
    let room = 1.0 - p_without;
    (room > 1e-12).then(|| (p_with - p_without) / room)
}

/// Progress and pass rate of one condition of a run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ConditionSummary {
    /// Condition key.
    pub condition: String,
    /// Method D pass rate over the tasks it planned, fraction in [0, 1].
    pub pass_rate: f64,
    /// Tasks it planned (the denominator).
    pub n_tasks: usize,
    /// Per task it planned: the Method D mean (for paired Δ over the tasks two conditions share,
    /// [`paired`]).
    #[serde(skip)]
    pub per_task: BTreeMap<String, f64>,
    /// Trials planned (tasks × trials).
    pub n_planned: usize,
    /// Finished trials by outcome (latest attempts).
    pub outcomes: BTreeMap<String, usize>,
    /// Trials queued.
    pub queued: usize,
    /// Trials in progress.
    pub running: usize,
    /// Trials finished ([`counts_as_done`]: cancelled and interrupted ones are not).
    pub done: usize,
    /// Trials cancelled or interrupted (never run to an end; also in
    /// [`ConditionSummary::outcomes`]).
    pub cancelled: usize,
    /// Finished trials that failed with a partial reward (strictly between 0 and 1): Method D
    /// averages rewards, so they count fractionally (a `fail` with reward 0.74 adds 0.74).
    pub partial: usize,
    /// Pass rate over judged trials ([`pass_rate_judged`]); `None` before any trial is judged.
    pub pass_rate_judged: Option<f64>,
    /// Agent timeouts whose verifier still gave full marks (reward ≥ 1): they succeeded, and
    /// Method D counts them 1.
    pub timeout_passed: usize,
}

/// Summaries of every condition of a run, in `conditions` order.
pub fn summarize<T: Scored>(
    task_ids: &[String],
    n_trials: u32,
    conditions: &[String],
    trials: &[T],
) -> Vec<ConditionSummary> {
    summarize_planned(task_ids, &TrialPlan::uniform(n_trials), conditions, trials)
}

/// [`summarize`] with the trials planned per task from `plan`.
pub fn summarize_planned<T: Scored>(
    task_ids: &[String],
    plan: &TrialPlan,
    conditions: &[String],
    trials: &[T],
) -> Vec<ConditionSummary> {
    conditions
        .iter()
        .map(|c| {
            let per_task = per_task_mean_planned(task_ids, plan, c, trials);
            let mut s = ConditionSummary {
                condition: c.clone(),
                pass_rate: method_d_planned(task_ids, plan, c, trials),
                n_tasks: per_task.len(),
                per_task,
                timeout_passed: 0,
                n_planned: task_ids.iter().map(|t| plan.of(t, c) as usize).sum(),
                outcomes: BTreeMap::new(),
                queued: 0,
                running: 0,
                done: 0,
                cancelled: 0,
                partial: 0,
                pass_rate_judged: pass_rate_judged(task_ids, plan, c, trials),
            };
            for t in trials
                .iter()
                .filter(|t| t.condition() == c && !t.superseded())
            {
                match t.status() {
                    TrialStatus::Queued => s.queued += 1,
                    TrialStatus::Done => {
                        if counts_as_done(true, t.outcome()) {
                            s.done += 1;
                        } else {
                            s.cancelled += 1;
                        }
                        if let Some(o) = t.outcome() {
                            *s.outcomes.entry(o.as_str().to_string()).or_default() += 1;
                        }
                        if t.outcome() != Some(Outcome::Pass)
                            && t.reward().is_some_and(|r| r > 0.0 && r < 1.0)
                        {
                            s.partial += 1;
                        }
                        if t.outcome() == Some(Outcome::AgentTimeout)
                            && t.reward().is_some_and(|r| {
                                crate::analysis::success::SuccessRule::default().succeeds(r)
                            })
                        {
                            s.timeout_passed += 1;
                        }
                    }
                    _ => s.running += 1,
                }
            }
            s
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        task: &str,
        cond: &str,
        idx: u32,
        outcome: Option<Outcome>,
        reward: Option<f64>,
    ) -> TrialRow {
        TrialRow {
            status: if outcome.is_some() {
                TrialStatus::Done
            } else {
                TrialStatus::Queued
            },
            outcome,
            reward,
            ..TrialRow::fixture(task, cond, idx)
        }
    }

    #[test]
    fn method_d_by_hand() {
        // 3 tasks × 2 trials. a: 1, 1 → 1.0; b: 1, fail → 0.5; c: build error + missing → 0.
        let ids: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let rows = vec![
            row("a", "A", 1, Some(Outcome::Pass), Some(1.0)),
            row("a", "A", 2, Some(Outcome::Pass), Some(1.0)),
            row("b", "A", 1, Some(Outcome::Pass), Some(1.0)),
            row("b", "A", 2, Some(Outcome::Fail), Some(0.0)),
            row("c", "A", 1, Some(Outcome::BuildError), None),
            row("a", "B", 1, Some(Outcome::Pass), Some(1.0)),
        ];
        let p = method_d(&ids, 2, "A", &rows);
        assert!((p - 0.5).abs() < 1e-12, "{p}");
        // Condition B: only one trial of one task done → 0.5 / 3.
        assert!((method_d(&ids, 2, "B", &rows) - 1.0 / 6.0).abs() < 1e-12);
    }

    #[test]
    fn partial_rewards_and_clamping_and_cancelled() {
        let ids = vec!["a".to_string()];
        let rows = vec![
            row("a", "A", 1, Some(Outcome::Fail), Some(0.25)),
            row("a", "A", 2, Some(Outcome::Pass), Some(7.0)),
            row("a", "A", 3, Some(Outcome::Cancelled), Some(1.0)),
            row("a", "A", 4, Some(Outcome::AgentTimeout), Some(1.0)),
        ];
        assert!((method_d(&ids, 4, "A", &rows) - (0.25 + 1.0 + 0.0 + 1.0) / 4.0).abs() < 1e-12);
    }

    #[test]
    fn gain_and_delta() {
        assert!((delta_pp(0.487, 0.313) - 17.4).abs() < 1e-9);
        let g = normalized_gain(0.487, 0.313).unwrap();
        assert!((g - 0.174 / 0.687).abs() < 1e-12);
        assert_eq!(normalized_gain(1.0, 1.0), None);
    }

    #[test]
    fn summary_counts() {
        let ids = vec!["a".to_string()];
        let rows = vec![
            row("a", "A", 1, Some(Outcome::Pass), Some(1.0)),
            row("a", "A", 2, None, None),
        ];
        let s = summarize(&ids, 2, &["A".to_string()], &rows);
        assert_eq!(s[0].done, 1);
        assert_eq!(s[0].queued, 1);
        assert_eq!(s[0].outcomes["pass"], 1);
        assert_eq!(s[0].n_planned, 2);
    }

    #[test]
    fn a_cancelled_trial_is_not_done() {
        // `status --json` and the table agree: 2 planned, 1 done, 1 cancelled (not run).
        let ids = vec!["a".to_string()];
        let rows = vec![
            row("a", "A", 1, Some(Outcome::Pass), Some(1.0)),
            row("a", "A", 2, Some(Outcome::Cancelled), None),
            row("a", "A", 3, Some(Outcome::Interrupted), None),
        ];
        let s = summarize(&ids, 3, &["A".to_string()], &rows);
        assert_eq!((s[0].done, s[0].cancelled), (1, 2));
        assert_eq!(s[0].outcomes["cancelled"], 1);
        assert!(counts_as_done(true, Some(Outcome::Fail)));
        assert!(!counts_as_done(false, Some(Outcome::Pass)));
    }
}
