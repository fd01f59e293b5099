//! The one pass over the store: per (run, condition, task) what its latest attempts within the
//! plan hold — rewards, successes ([`SuccessRule`]), failure modes, trials with a verdict — and
//! the judged failures per failure category.

use std::collections::{BTreeMap, HashMap};

use rusqlite::Connection;

use super::FailureMode;
use crate::analysis::failure_category::{self, FailureCategory};
use crate::analysis::success::SuccessRule;
use crate::store::{Outcome, RunRow, StoreError, TrialPlan, TrialStatus};

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
    let mut stmt = conn.prepare_cached(
        "SELECT task_id, condition, trial_index, outcome, failure_category, trial_dir, agent_exit_code, reward
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
                r.get::<_, Option<f64>>(7)?,
            ))
        })?;
        for row in rows {
            let (task, cond, index, outcome, stored, dir, exit, reward) = row?;
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
    let mut out = Cells::new();
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
                ValueRef::Real(v) => Some(v.clamp(0.0, 1.0)),
                ValueRef::Integer(v) => Some((v as f64).clamp(0.0, 1.0)),
                _ => None,
            };
            cell.add(done, outcome, reward, rule);
        }
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
