//! Early stopping's decisions, pure: when a comparison has reached a stage boundary, what its
//! per-task rewards there are, and which conditions stop once comparisons are answered. The
//! dispatcher feeds it the latest attempts from the store and carries out what it says (records
//! the look, takes the stopped conditions' queued trials out through the schedule,
//! [`super::schedule::Event::EarlyStop`]); the statistics are `analysis::sequential::live`.
//!
//! **Boundary.** Stage `s` of a comparison is reached when, for every task of the run, each of
//! its two conditions has a latest attempt with a verdict for every trial index ≤ `k_s`
//! ([`crate::domain::Outcome::is_verdict`]) or one the operator cancelled. A trial interrupted by
//! the machine (a fault, a shutdown) or by a provider failure is queued again as a new attempt,
//! which the schedule starts ahead of every later stage: the boundary waits for it, and the
//! machine's fault is never a failure of the agent. A trial left without a verdict (three faults
//! in a row) holds the boundary until a resume or a retry gives it one. At the boundary, a
//! trial's reward is its verifier reward in [0, 1] (0 for a verdict without one, as Method D
//! counts it); a cancelled trial has none and is left out of its task's mean, and a task with
//! no reward on a side is left out of the comparison.
//!
//! **Stops.** A comparison is answered by an efficacy or a futility stop. A condition the plan
//! lets stop ([`SequentialPlan::stoppable`]) stops once every comparison it takes part in (in
//! this run) is answered, keeping the trials per task of the latest of those stages: it stays
//! balanced, the same trials for every task.

use std::collections::{BTreeMap, HashMap};

use crate::domain::sequential::{Comparison, SequentialPlan, SequentialRecord};
use crate::domain::{Outcome, TrialBrief, TrialStatus};

/// A comparison at a stage boundary: what to look at.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Due {
    /// The comparison's label.
    pub label: String,
    /// 0-based stage.
    pub stage: usize,
    /// Trials per task and condition at it.
    pub trials: u32,
    /// Per task of the run (in the order given), (with, without) rewards of the trials with
    /// index ≤ `trials`, by trial index (`None`: cancelled, no reward).
    pub rewards: Vec<crate::analysis::sequential::live::TaskRewards>,
}

/// The early-stopping state of one run.
#[derive(Debug, Clone)]
pub(super) struct Stopping {
    plan: SequentialPlan,
    /// Trials per task at each stage.
    stage_trials: Vec<u32>,
    /// Next 0-based stage to look at, per comparison.
    next: BTreeMap<String, usize>,
    /// Comparisons answered, with the trials per task they used.
    answered: BTreeMap<String, u32>,
    /// Conditions stopped, with the trials per task they keep.
    stopped: BTreeMap<String, u32>,
}

/// What one side of a comparison holds at trial index ≤ k: `Some(rewards per task by trial
/// index)` when every trial has a verdict or was cancelled (`None` for it), else `None`.
fn side(
    tasks: &[String],
    rows: &[TrialBrief],
    condition: &str,
    k: u32,
) -> Option<Vec<Vec<Option<f64>>>> {
    let mut by: HashMap<(&str, u32), &TrialBrief> = HashMap::new();
    for r in rows
        .iter()
        .filter(|r| !r.superseded && r.condition == condition)
    {
        by.insert((r.task_id.as_str(), r.trial_index), r);
    }
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        let mut rewards = Vec::new();
        for i in 1..=k {
            let r = by.get(&(t.as_str(), i))?;
            if r.status != TrialStatus::Done {
                return None;
            }
            match r.outcome {
                Some(o) if o.is_verdict() => {
                    rewards.push(Some(r.reward.map_or(0.0, |x| x.clamp(0.0, 1.0))));
                }
                Some(Outcome::Cancelled) => rewards.push(None),
                _ => return None,
            }
        }
        out.push(rewards);
    }
    Some(out)
}

impl Stopping {
    /// The state of a run applying `plan`, resumed from what `record` holds (looks already
    /// taken, conditions already stopped).
    pub fn new(plan: SequentialPlan, record: Option<&SequentialRecord>) -> Stopping {
        let stage_trials = plan.design.stage_trials.clone();
        let mut s = Stopping {
            next: plan
                .comparisons
                .iter()
                .map(|c| (c.label.clone(), 0))
                .collect(),
            plan,
            stage_trials,
            answered: BTreeMap::new(),
            stopped: BTreeMap::new(),
        };
        if let Some(r) = record {
            for l in &r.looks {
                if let Some(n) = s.next.get_mut(&l.comparison) {
                    *n = (*n).max(l.stage);
                }
                if l.decision != crate::domain::sequential::LookDecision::Continue {
                    s.answered.insert(l.comparison.clone(), l.trials);
                }
            }
            for st in &r.stops {
                s.stopped.insert(st.condition.clone(), st.trials);
            }
        }
        s
    }

    /// Conditions stopped so far, with the trials per task each keeps.
    pub fn stopped(&self) -> &BTreeMap<String, u32> {
        &self.stopped
    }

    /// The comparisons at a stage boundary not yet looked at, given this run's `tasks`, its
    /// latest attempts `rows`, and the latest attempts of other runs holding baselines
    /// (`baselines`, by run name). At most one stage per comparison per call: the earliest.
    pub fn due(
        &self,
        tasks: &[String],
        rows: &[TrialBrief],
        baselines: &HashMap<String, Vec<TrialBrief>>,
    ) -> Vec<Due> {
        let mut out = Vec::new();
        for c in &self.plan.comparisons {
            if self.answered.contains_key(&c.label) {
                continue;
            }
            let stage = self.next.get(&c.label).copied().unwrap_or(0);
            let Some(&k) = self.stage_trials.get(stage) else {
                continue;
            };
            let base: &[TrialBrief] = match &c.without_run {
                Some(run) => match baselines.get(run) {
                    Some(rows) => rows,
                    None => continue,
                },
                None => rows,
            };
            let (Some(with), Some(without)) = (
                side(tasks, rows, &c.with, k),
                side(tasks, base, &c.without, k),
            ) else {
                continue;
            };
            out.push(Due {
                label: c.label.clone(),
                stage,
                trials: k,
                rewards: with.into_iter().zip(without).collect(),
            });
        }
        out
    }

    /// Records the look of `label` at 0-based `stage` (`stops`: it answered the comparison);
    /// returns the conditions that stop now, with the trials per task each keeps — none with
    /// `--no-early-stop`, and none at the last stage (a comparison answered there stops
    /// nothing: every trial ran).
    pub fn looked(&mut self, label: &str, stage: usize, stops: bool) -> Vec<(String, u32)> {
        if let Some(n) = self.next.get_mut(label) {
            *n = stage + 1;
        }
        if !stops {
            return Vec::new();
        }
        let k = self.stage_trials.get(stage).copied().unwrap_or(0);
        self.answered.insert(label.to_string(), k);
        // At the last stage every trial has run: nothing stops, and nothing is called early.
        if !self.plan.early_stop || stage + 1 >= self.stage_trials.len() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for cond in &self.plan.stoppable {
            if self.stopped.contains_key(cond) {
                continue;
            }
            let involved: Vec<&Comparison> = self
                .plan
                .comparisons
                .iter()
                .filter(|c| c.with == *cond || (c.without == *cond && c.without_run.is_none()))
                .collect();
            if involved.is_empty() {
                continue;
            }
            let kept: Option<Vec<u32>> = involved
                .iter()
                .map(|c| self.answered.get(&c.label).copied())
                .collect();
            if let Some(kept) = kept {
                let k = kept.into_iter().max().unwrap_or(0);
                self.stopped.insert(cond.clone(), k);
                out.push((cond.clone(), k));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::sequential::{EarlyStopRow, LookDecision, LookRow};

    fn brief(
        id: i64,
        task: &str,
        cond: &str,
        i: u32,
        outcome: Option<Outcome>,
        r: f64,
    ) -> TrialBrief {
        TrialBrief {
            id,
            task_id: task.into(),
            condition: cond.into(),
            trial_index: i,
            attempt: 1,
            superseded: false,
            status: if outcome.is_some() {
                TrialStatus::Done
            } else {
                TrialStatus::Queued
            },
            outcome,
            reward: outcome.map(|_| r),
            finished_at: None,
        }
    }

    fn plan(stoppable: &[&str], early_stop: bool) -> SequentialPlan {
        SequentialPlan {
            design: crate::analysis::sequential::design::spec(
                3,
                3,
                &crate::analysis::sequential::design::Choices::with_futility(None),
            )
            .unwrap(),
            comparisons: vec![
                Comparison {
                    label: "A'-A".into(),
                    with: "a2".into(),
                    without: "a".into(),
                    without_run: Some("r1".into()),
                },
                Comparison {
                    label: "B'-B".into(),
                    with: "b2".into(),
                    without: "b".into(),
                    without_run: Some("r1".into()),
                },
            ],
            stoppable: stoppable.iter().map(|s| s.to_string()).collect(),
            early_stop,
            note: None,
        }
    }

    fn tasks() -> Vec<String> {
        vec!["t1".into(), "t2".into()]
    }

    /// Round 1's A and B: trials 1..=3 of both tasks, passes for B, fails for A.
    fn round1() -> HashMap<String, Vec<TrialBrief>> {
        let mut rows = Vec::new();
        for t in ["t1", "t2"] {
            for i in 1..=3 {
                rows.push(brief(0, t, "a", i, Some(Outcome::Fail), 0.0));
                rows.push(brief(0, t, "b", i, Some(Outcome::Pass), 1.0));
            }
        }
        HashMap::from([("r1".to_string(), rows)])
    }

    #[test]
    fn a_boundary_waits_for_every_trial_of_the_stage_to_have_a_verdict() {
        let s = Stopping::new(plan(&["a2", "b2"], true), None);
        let base = round1();
        // t2's trial 1 of a2 interrupted by the machine (queued again): no boundary for A'-A.
        let mut rows = vec![
            brief(1, "t1", "a2", 1, Some(Outcome::Pass), 1.0),
            brief(2, "t2", "a2", 1, Some(Outcome::Interrupted), 0.0),
            brief(3, "t1", "b2", 1, Some(Outcome::Pass), 1.0),
            brief(4, "t2", "b2", 1, Some(Outcome::Fail), 0.0),
        ];
        let due = s.due(&tasks(), &rows, &base);
        assert_eq!(due.len(), 1, "{due:?}");
        assert_eq!(due[0].label, "B'-B");
        assert_eq!(
            due[0].rewards,
            vec![
                (vec![Some(1.0)], vec![Some(1.0)]),
                (vec![Some(0.0)], vec![Some(1.0)])
            ]
        );
        // Its new attempt ends in a verdict: the boundary is reached.
        rows[1] = brief(5, "t2", "a2", 1, Some(Outcome::NoReward), 0.0);
        let due = s.due(&tasks(), &rows, &base);
        assert_eq!(due.len(), 2);
        assert_eq!(due[0].rewards[1], (vec![Some(0.0)], vec![Some(0.0)]));
        // A cancelled trial has no reward: left out of its task's mean.
        rows[1] = brief(5, "t2", "a2", 1, Some(Outcome::Cancelled), 0.0);
        assert_eq!(
            s.due(&tasks(), &rows, &base)[0].rewards[1],
            (vec![None], vec![Some(0.0)])
        );
        // Without the baseline run, nothing is due for its comparisons.
        assert!(s.due(&tasks(), &rows, &HashMap::new()).is_empty());
    }

    #[test]
    fn an_answered_comparison_stops_the_conditions_whose_only_question_it_was() {
        let mut s = Stopping::new(plan(&["a2", "b2"], true), None);
        assert!(s.looked("A'-A", 0, false).is_empty());
        assert_eq!(s.looked("A'-A", 1, true), vec![("a2".to_string(), 2)]);
        assert!(
            s.due(&tasks(), &[], &round1())
                .iter()
                .all(|d| d.label != "A'-A")
        );
        // Answered at the last stage: nothing left to stop, and no early stop recorded.
        assert!(s.looked("B'-B", 2, true).is_empty());
        // Not stoppable (round 1's A and B feed learning and round 2): looks only.
        let mut kept = Stopping::new(plan(&[], true), None);
        assert!(kept.looked("A'-A", 0, true).is_empty());
        // --no-early-stop: nothing stops.
        let mut fixed = Stopping::new(plan(&["a2", "b2"], false), None);
        assert!(fixed.looked("A'-A", 0, true).is_empty());
    }

    #[test]
    fn both_conditions_of_an_in_run_comparison_stop_together_and_a_shared_one_waits() {
        let p = SequentialPlan {
            design: crate::analysis::sequential::design::spec(
                6,
                3,
                &crate::analysis::sequential::design::Choices::with_futility(None),
            )
            .unwrap(),
            comparisons: vec![
                Comparison {
                    label: "B-A".into(),
                    with: "b".into(),
                    without: "a".into(),
                    without_run: None,
                },
                Comparison {
                    label: "C-A".into(),
                    with: "c".into(),
                    without: "a".into(),
                    without_run: None,
                },
            ],
            stoppable: vec!["a".into(), "b".into(), "c".into()],
            early_stop: true,
            note: None,
        };
        let mut s = Stopping::new(p, None);
        // B-A answered at stage 1: B stops; A waits for C-A.
        assert_eq!(s.looked("B-A", 0, true), vec![("b".to_string(), 2)]);
        // C-A answered at stage 2 of 3: A and C stop, A keeping the later stage's trials.
        assert_eq!(
            s.looked("C-A", 1, true),
            vec![("a".to_string(), 4), ("c".to_string(), 4)]
        );
    }

    #[test]
    fn a_resume_takes_up_the_looks_and_stops_recorded() {
        let look = |c: &str, stage: usize, d: LookDecision| LookRow {
            comparison: c.into(),
            stage,
            trials: stage as u32,
            n_tasks: 2,
            mean_diff: None,
            se: None,
            z: None,
            bound: None,
            futility_bound: None,
            decision: d,
            why: crate::domain::sequential::LookWhy::BetweenBounds,
            adjusted: None,
            ci: None,
            p_value: None,
            at: String::new(),
        };
        let record = SequentialRecord {
            design: crate::domain::sequential::DesignRow {
                run_id: 1,
                spec: crate::analysis::sequential::design::spec(
                    3,
                    3,
                    &crate::analysis::sequential::design::Choices::with_futility(None),
                )
                .unwrap(),
                efficacy: vec![],
                futility: vec![],
                comparisons: vec![],
                early_stop: true,
                note: None,
            },
            looks: vec![
                look("A'-A", 1, LookDecision::Continue),
                look("A'-A", 2, LookDecision::Efficacy),
                look("B'-B", 1, LookDecision::Continue),
            ],
            stops: vec![EarlyStopRow {
                condition: "a2".into(),
                trials: 2,
                comparison: "A'-A".into(),
                stage: 2,
                not_run: 2,
                cost_saved_usd: None,
                at: String::new(),
            }],
        };
        let s = Stopping::new(plan(&["a2", "b2"], true), Some(&record));
        assert_eq!(s.stopped().get("a2"), Some(&2));
        let mut rows = Vec::new();
        for t in ["t1", "t2"] {
            for i in 1..=2 {
                rows.push(brief(0, t, "b2", i, Some(Outcome::Pass), 1.0));
            }
        }
        // B'-B's next look is stage 2 (0-based 1); A'-A is answered.
        let due = s.due(&tasks(), &rows, &round1());
        assert_eq!(due.len(), 1);
        assert_eq!(
            (due[0].label.as_str(), due[0].stage, due[0].trials),
            ("B'-B", 1, 2)
        );
    }
}
