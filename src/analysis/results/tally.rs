//! The one pass over the store, as nextest's `RunStats::on_test_finished` accumulates a run: each
//! trial row of the selected runs is read once ([`store::analysis::for_each_trial`]) and added to
//! a running tally — per (run, condition, task) what its latest attempts within the plan hold
//! (rewards, successes by [`SuccessRule`], failure modes, trials with a verdict), the judged
//! failures per failure category, and per run the agent settings and environment marks its
//! trials recorded. Every question (conditions, comparisons, breakdowns, held-out subsets, notes)
//! is answered from this tally, never by reading the trials again.

use std::collections::{BTreeMap, HashMap};

use rusqlite::Connection;

use super::FailureMode;
use crate::analysis::failure_category::{self, FailureCategory};
use crate::analysis::success::SuccessRule;
use crate::domain::{Outcome, RunRow, TrialPlan};
use crate::store::analysis::{AgentSettingsSeen, EnvironmentMarks, TrialFacts};
use crate::store::queries::EnvironmentMark;
use crate::store::{self, StoreError};

/// Per (run, condition, task): what its latest attempts within the plan hold.
#[derive(Debug, Clone, Default)]
pub(super) struct Cell {
    /// Sum of the rewards of finished trials (cancelled and interrupted ones count 0).
    pub reward: f64,
    /// Finished trials that ran (a cancelled or interrupted one did not: not done).
    pub done: usize,
    /// Trials that succeeded (reward ≥ the pass threshold), whatever their outcome.
    pub passed: usize,
    /// Of those, agent timeouts whose verifier still gave the reward.
    pub timeout_passed: usize,
    /// Trials that did not succeed with a reward strictly between 0 and 1 (partial credit).
    pub partial: usize,
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
    /// The rewards of its finished trials (not cancelled or interrupted; 0 without a reward), in
    /// trial-index order: what the A/A noise splits ([`crate::analysis::noise`]).
    pub rewards: Vec<f64>,
}

/// (run id, condition, task) → [`Cell`].
pub(super) type Cells = HashMap<(i64, String, String), Cell>;

/// (run id, condition) → judged failures per category.
pub(super) type CategoryCounts = HashMap<(i64, String), BTreeMap<FailureCategory, usize>>;

/// What a run's trials recorded beside their verdicts.
#[derive(Debug, Clone, Default)]
pub(super) struct RunFacts {
    /// The distinct `agent_settings` JSON texts of its trials (every attempt).
    pub agent_settings: Vec<String>,
    /// Its latest attempts with a `missing_env` or `clamped` mark, by task.
    pub environment: Vec<EnvironmentMark>,
}

/// The accumulated tally of the selected runs.
#[derive(Debug, Default)]
pub(super) struct Tally {
    /// Per (run, condition, task).
    pub cells: Cells,
    /// Judged failures per (run, condition) by failure category: trials with a verdict that did
    /// not succeed. The stored category when there is one; else (trials recorded before
    /// categories existed) decided from the trial folder, or from the outcome alone when the
    /// folder is gone. Nothing is written: the analysis only reads.
    pub categories: CategoryCounts,
    /// Per run, in the order of the runs.
    pub runs: Vec<RunFacts>,
    /// Per (run, condition): what its latest attempts ran with — each task's digests and the
    /// distinct agent settings — for the comparisons' drift notes.
    pub provenance: HashMap<(i64, String), Ran>,
}

/// What a condition's latest attempts ran with, as the tally gathers it.
#[derive(Debug, Clone, Default)]
pub(super) struct Ran {
    /// Task → the digests its attempts recorded (empty: none recorded).
    pub digests: BTreeMap<String, std::collections::BTreeSet<String>>,
    /// The distinct `agent_settings` JSON texts.
    pub settings: std::collections::BTreeSet<String>,
}

impl Ran {
    /// The provenance it amounts to ([`crate::domain::provenance::Provenance`]): the task
    /// digests and the harness, version, model and sampling of its agent settings.
    pub fn provenance(&self) -> crate::domain::provenance::Provenance {
        let mut p = crate::domain::provenance::Provenance {
            tasks: Some(self.digests.clone()),
            ..Default::default()
        };
        for text in &self.settings {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
                p.add_agent_settings(&v);
            }
        }
        p
    }
}

/// A latest attempt within the plan's largest count, as the cell folds it.
#[derive(Debug, Clone, Copy)]
struct Latest {
    order: (i64, i64),
    done: bool,
    outcome: Option<Outcome>,
    reward: Option<f64>,
}

/// One (task, condition) of a run while its rows are read.
struct Slot {
    task: String,
    condition: String,
    /// Trials it planned.
    plan: u32,
    rows: Vec<Latest>,
    /// The distinct task digests its latest attempts recorded (usually one).
    digests: Vec<String>,
}

/// The [`Ran`] of `condition` in `ran_by`, added when new.
fn ran_of<'a>(ran_by: &'a mut Vec<(String, Ran)>, condition: &str) -> &'a mut Ran {
    let at = match ran_by.iter().position(|(c, _)| c == condition) {
        Some(i) => i,
        None => {
            ran_by.push((condition.to_string(), Ran::default()));
            ran_by.len() - 1
        }
    };
    &mut ran_by[at].1
}

/// The tally of `runs` (run `i` planned by `plans[i]`): one read of each run's trial rows.
///
/// A (task, condition)'s latest attempts are folded in (trial index, attempt) order whatever
/// order the rows come in, so its reward sums are the same as a read in index order.
///
/// # Errors
/// [`StoreError`] from SQLite.
pub(super) fn load(
    conn: &Connection,
    runs: &[RunRow],
    plans: &[TrialPlan],
    rule: &SuccessRule,
) -> Result<Tally, StoreError> {
    let mut tally = Tally::default();
    for (run, plan) in runs.iter().zip(plans) {
        let max = i64::from(plan.max());
        let mut slots: Vec<Slot> = Vec::new();
        let mut by_condition: Vec<(String, HashMap<String, usize>)> = Vec::new();
        let mut last: Option<usize> = None;
        let mut aggregated: Vec<String> = Vec::new();
        let mut settings = AgentSettingsSeen::default();
        let mut environment = EnvironmentMarks::default();
        let mut ran_by: Vec<(String, Ran)> = Vec::new();
        store::analysis::for_each_trial(conn, run.id, |r| {
            settings.add(&r);
            environment.add(&r);
            if r.aggregated && !aggregated.iter().any(|a| a == r.condition) {
                aggregated.push(r.condition.to_string());
            }
            if r.superseded {
                return Ok(());
            }
            if let Some(text) = r.agent_settings {
                let ran = ran_of(&mut ran_by, r.condition);
                if !ran.settings.contains(text) {
                    ran.settings.insert(text.to_string());
                }
            }
            let s = match last
                .filter(|&i| slots[i].task == r.task && slots[i].condition == r.condition)
            {
                Some(i) => i,
                None => slot_of(&mut slots, &mut by_condition, plan, r.task, r.condition),
            };
            last = Some(s);
            let slot = &mut slots[s];
            if let Some(d) = r.task_digest
                && !slot.digests.iter().any(|x| x == d)
            {
                slot.digests.push(d.to_string());
            }
            // Trials beyond the plan's largest count are in no cell.
            if (1..=max).contains(&r.trial_index) {
                slot.rows.push(Latest {
                    order: (r.trial_index, r.attempt),
                    done: r.done,
                    outcome: r.outcome,
                    reward: r.reward,
                });
            }
            let planned = r.trial_index >= 1 && r.trial_index <= i64::from(slot.plan);
            if let Some(category) = planned.then(|| judged_failure(&r, rule)).flatten() {
                *tally
                    .categories
                    .entry((run.id, r.condition.to_string()))
                    .or_default()
                    .entry(category)
                    .or_default() += 1;
            }
            Ok(())
        })?;
        // Every task a condition's latest attempts ran, with the digests they recorded.
        for slot in &slots {
            ran_of(&mut ran_by, &slot.condition)
                .digests
                .entry(slot.task.clone())
                .or_default()
                .extend(slot.digests.iter().cloned());
        }
        for mut slot in slots.into_iter().filter(|s| !s.rows.is_empty()) {
            if !slot.rows.is_sorted_by_key(|l| l.order) {
                slot.rows.sort_by_key(|l| l.order);
            }
            let mut cell = Cell {
                aggregated: aggregated.contains(&slot.condition),
                ..Cell::default()
            };
            // Trials beyond what the task planned are not in its Method D mean.
            for l in slot
                .rows
                .iter()
                .filter(|l| l.order.0 <= i64::from(slot.plan))
            {
                cell.add(l.done, l.outcome, l.reward, rule);
            }
            tally
                .cells
                .insert((run.id, slot.condition, slot.task), cell);
        }
        for (condition, ran) in ran_by {
            tally.provenance.insert((run.id, condition), ran);
        }
        tally.runs.push(RunFacts {
            agent_settings: settings.into_texts(),
            environment: environment.into_marks(),
        });
    }
    Ok(tally)
}

/// The cells of run `run_id` from its latest attempts held in memory (a dashboard's snapshot),
/// folded as [`load`] folds the store's rows: per (task, condition) the attempts within the plan,
/// in (trial index, attempt) order, added by the same [`Cell::add`] — the same Method D, the
/// same success rule.
pub(super) fn cells_in_memory(
    run_id: i64,
    plan: &TrialPlan,
    trials: &[crate::domain::TrialBrief],
    rule: &SuccessRule,
) -> Cells {
    let mut rows: HashMap<(&str, &str), Vec<&crate::domain::TrialBrief>> = HashMap::new();
    for t in trials.iter().filter(|t| !t.superseded) {
        rows.entry((t.task_id.as_str(), t.condition.as_str()))
            .or_default()
            .push(t);
    }
    let mut cells = Cells::new();
    for ((task, condition), mut ts) in rows {
        let planned = plan.of(task, condition);
        ts.sort_by_key(|t| (t.trial_index, t.attempt));
        let mut cell = Cell::default();
        for t in ts
            .into_iter()
            .filter(|t| t.trial_index >= 1 && t.trial_index <= planned)
        {
            let done = t.status == crate::domain::TrialStatus::Done;
            cell.add(done, t.outcome, t.reward, rule);
        }
        cells.insert((run_id, condition.to_string(), task.to_string()), cell);
    }
    cells
}

/// The slot of (`task`, `condition`), added with its plan when new.
fn slot_of(
    slots: &mut Vec<Slot>,
    by_condition: &mut Vec<(String, HashMap<String, usize>)>,
    plan: &TrialPlan,
    task: &str,
    condition: &str,
) -> usize {
    let c = match by_condition.iter().position(|(k, _)| k == condition) {
        Some(c) => c,
        None => {
            by_condition.push((condition.to_string(), HashMap::new()));
            by_condition.len() - 1
        }
    };
    if let Some(&i) = by_condition[c].1.get(task) {
        return i;
    }
    slots.push(Slot {
        task: task.to_string(),
        condition: condition.to_string(),
        plan: plan.of(task, condition),
        rows: Vec::new(),
        digests: Vec::new(),
    });
    by_condition[c].1.insert(task.to_string(), slots.len() - 1);
    slots.len() - 1
}

/// The failure category of a latest attempt that is a judged failure — finished with outcome
/// fail, agent timeout or verifier timeout and a reward that does not succeed (a timeout whose
/// verifier still gave the reward succeeded) — else `None`.
fn judged_failure(r: &TrialFacts<'_>, rule: &SuccessRule) -> Option<FailureCategory> {
    let outcome = r.outcome.filter(|o| {
        matches!(
            o,
            Outcome::Fail | Outcome::AgentTimeout | Outcome::VerifierTimeout
        )
    })?;
    if !r.done || r.reward.is_some_and(|x| rule.succeeds(x)) {
        return None;
    }
    let category = r
        .failure_category
        .and_then(FailureCategory::parse)
        .or_else(|| match r.trial_dir {
            Some(d) => failure_category::classify_trial_dir(
                outcome,
                r.agent_exit_code,
                std::path::Path::new(d),
                None,
            ),
            None => failure_category::classify(&failure_category::Evidence {
                outcome,
                agent_exit_code: r.agent_exit_code,
                trajectory: None,
                tests: None,
                instruction: None,
            }),
        })
        .unwrap_or(FailureCategory::Unclassified);
    Some(category)
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
        let counts = crate::analysis::metrics::counts_as_done(done, outcome);
        let success = rule.trial_succeeded(done, outcome, reward);
        let reward = if counts { reward } else { None };
        if counts {
            self.done += 1;
            self.rewards.push(reward.unwrap_or(0.0));
        }
        if done {
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
            if reward.is_some_and(|r| r > 0.0 && r < 1.0) {
                self.partial += 1;
            }
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
