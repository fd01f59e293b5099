//! The one pass over the store: per (run, condition, task) what its latest attempts within the
//! plan hold — rewards, successes ([`SuccessRule`]), failure modes, trials with a verdict — and
//! the judged failures per failure category.

use std::collections::{BTreeMap, HashMap};

use rusqlite::Connection;

use super::FailureMode;
use crate::analysis::failure_category::{self, FailureCategory};
use crate::analysis::success::SuccessRule;
use crate::store::analysis::JudgedFailureRow;
use crate::store::{self, Outcome, RunRow, StoreError, TrialPlan};

/// Per (run, condition, task): what its latest attempts within the plan hold.
#[derive(Debug, Clone, Default)]
pub(super) struct Cell {
    /// Sum of the rewards of finished trials (cancelled and interrupted ones count 0).
    pub reward: f64,
    /// Finished trials.
    pub done: usize,
    /// Trials that succeeded (reward ≥ the pass threshold), whatever their outcome.
    pub passed: usize,
    /// Of those, agent timeouts whose verifier still gave the reward.
    pub timeout_passed: usize,
    /// Trials that did not succeed, by failure mode (rows not finished are `not run`).
    pub failures: BTreeMap<FailureMode, usize>,
    /// Trials with a verdict (pass, fail, agent or verifier timeout).
    pub judged: usize,
    /// Their rewards.
    pub judged_reward: f64,
    /// Trials with a verdict that did not succeed.
    pub judged_failed: usize,
    /// Trials from published aggregates.
    pub aggregated: bool,
}

/// (run id, condition, task) → [`Cell`].
pub(super) type Cells = HashMap<(i64, String, String), Cell>;

/// (run id, condition) → judged failures per category.
pub(super) type CategoryCounts = HashMap<(i64, String), BTreeMap<FailureCategory, usize>>;

/// Judged failures per (run, condition) by failure category: trials with a verdict that did not
/// succeed. The stored category when there is one; else (trials recorded before categories
/// existed) decided from the trial folder, or from the outcome alone when the folder is gone.
/// Nothing is written: the analysis only reads.
pub(super) fn load_categories(
    conn: &Connection,
    runs: &[RunRow],
    plans: &[TrialPlan],
    rule: &SuccessRule,
) -> Result<CategoryCounts, StoreError> {
    let mut out = CategoryCounts::new();
    for (run, plan) in runs.iter().zip(plans) {
        for row in store::analysis::judged_failures(conn, run.id)? {
            let JudgedFailureRow {
                task,
                condition: cond,
                trial_index: index,
                outcome,
                category: stored,
                trial_dir: dir,
                agent_exit_code: exit,
                reward,
            } = row;
            if index == 0 || index > plan.of(&task, &cond) {
                continue;
            }
            // A timeout whose verifier still gave the reward succeeded: not a failure.
            if reward.is_some_and(|r| rule.succeeds(r.clamp(0.0, 1.0))) {
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
pub(super) fn load_cells(
    conn: &Connection,
    runs: &[RunRow],
    plans: &[TrialPlan],
    rule: &SuccessRule,
) -> Result<Cells, StoreError> {
    let mut out = Cells::new();
    for (run, plan) in runs.iter().zip(plans) {
        let aggregated = store::analysis::aggregated_conditions(conn, run.id)?;
        let mut key: Option<(String, String)> = None;
        let mut cell = Cell::default();
        let mut key_plan = plan.default;
        store::analysis::for_each_latest_attempt(conn, run.id, plan.max(), |r| {
            let same = key
                .as_ref()
                .is_some_and(|(t, c)| t == r.task && c == r.condition);
            if !same {
                if let Some((t, c)) = key.take() {
                    out.insert((run.id, c, t), std::mem::take(&mut cell));
                }
                cell.aggregated = aggregated.iter().any(|a| a == r.condition);
                key_plan = plan.of(r.task, r.condition);
                key = Some((r.task.to_string(), r.condition.to_string()));
            }
            // Trials beyond what the task planned are not in its Method D mean.
            if r.trial_index <= key_plan as i64 {
                cell.add(r.done, r.outcome, r.reward, rule);
            }
            Ok(())
        })?;
        if let Some((t, c)) = key.take() {
            out.insert((run.id, c, t), cell);
        }
    }
    Ok(out)
}

impl Cell {
    /// Adds one latest attempt: `done` or not, its outcome and reward (clamped).
    fn add(
        &mut self,
        done: bool,
        outcome: Option<Outcome>,
        reward: Option<f64>,
        rule: &SuccessRule,
    ) {
        // What counts: a finished trial that was not cancelled or interrupted.
        let counts = done && !matches!(outcome, Some(Outcome::Cancelled | Outcome::Interrupted));
        let reward = if counts { reward } else { None };
        let success = reward.is_some_and(|r| rule.succeeds(r));
        if done {
            self.done += 1;
            self.reward += reward.unwrap_or(0.0);
            if crate::analysis::metrics::is_judged(outcome) {
                self.judged += 1;
                self.judged_reward += reward.unwrap_or(0.0);
                if !success {
                    self.judged_failed += 1;
                }
            }
        }
        if success {
            self.passed += 1;
            if outcome == Some(Outcome::AgentTimeout) {
                self.timeout_passed += 1;
            }
        } else {
            // Any status but done is "not run", whatever the outcome column holds.
            let mode = if done {
                FailureMode::of_failure(outcome, reward)
            } else {
                FailureMode::NotRun
            };
            *self.failures.entry(mode).or_default() += 1;
        }
    }
}
