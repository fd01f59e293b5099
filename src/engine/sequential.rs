//! The run's group-sequential design, carried out (issue 38): the design recorded when the run
//! starts, the looks taken at stage boundaries and the conditions they stop, in the store. The
//! decisions are pure — where the boundaries are and which conditions stop in `stopping.rs`, the
//! statistics in `analysis::sequential::live` — and the dispatcher only feeds the stops to its
//! schedule ([`super::schedule::Event::EarlyStop`]) and the messages to the operator.

use std::collections::{BTreeMap, HashMap};

use super::EngineError;
use super::stopping::Stopping;
use crate::analysis::sequential::design::{ContinueReason, Decision as Look, Design};
use crate::domain::sequential::{DesignRow, EarlyStopRow, LookDecision, LookRow, SequentialPlan};
use crate::store::RunLedger;

/// A run's design and where its comparisons stand.
#[derive(Debug, Clone)]
pub(super) struct Sequential {
    plan: SequentialPlan,
    design: Design,
    stopping: Stopping,
}

/// What one round of looks did.
#[derive(Debug, Default)]
pub(super) struct Looked {
    /// The operator's lines, in order.
    pub events: Vec<String>,
    /// Conditions stopped now, with the trials per task each keeps.
    pub stops: Vec<(String, u32)>,
}

impl Sequential {
    /// Sets up `plan` for the run of `ledger`: records its design and takes up the looks and
    /// early stops a stopped process recorded. `(None, Some(warning))` when the design cannot be
    /// built (the run then runs every planned trial).
    ///
    /// # Errors
    /// Database errors.
    pub async fn start(
        plan: SequentialPlan,
        ledger: &RunLedger,
    ) -> Result<(Option<Sequential>, Option<String>), EngineError> {
        let n = ledger.run().n_trials;
        let (design, ks) = match crate::analysis::sequential::live::engine_design(n, plan.stages) {
            Ok(d) => d,
            Err(e) => {
                return Ok((
                    None,
                    Some(format!("no early stopping: {e}; every planned trial runs")),
                ));
            }
        };
        ledger
            .put_design(DesignRow {
                run_id: ledger.run().id,
                stages: design.stages(),
                alpha: design.alpha,
                beta: design.beta,
                stage_trials: ks.clone(),
                efficacy: design.efficacy.clone(),
                futility: design.futility.clone(),
                comparisons: plan.comparisons.clone(),
                early_stop: plan.early_stop,
                note: plan.note.clone(),
            })
            .await?;
        let record = ledger.sequential().await?;
        let stopping = Stopping::new(plan.clone(), ks, record.as_ref());
        Ok((
            Some(Sequential {
                plan,
                design,
                stopping,
            }),
            None,
        ))
    }

    /// Conditions stopped so far, with the trials per task each keeps.
    pub fn stopped(&self) -> Vec<(String, u32)> {
        self.stopping
            .stopped()
            .iter()
            .map(|(c, k)| (c.clone(), *k))
            .collect()
    }

    /// Looks at every comparison that reached a stage boundary (`stopping.rs`) over the run's
    /// `tasks`: records each look and, once a comparison is answered, stops the conditions whose
    /// questions it answered (their queued trials leave the queue; the cost saved is projected
    /// from `finished_costs`, USD per finished trial of each condition).
    ///
    /// # Errors
    /// Database errors.
    pub async fn look(
        &mut self,
        ledger: &RunLedger,
        tasks: &[String],
        finished_costs: &BTreeMap<String, Vec<f64>>,
    ) -> Result<Looked, EngineError> {
        let mut runs: Vec<String> = self
            .plan
            .comparisons
            .iter()
            .filter_map(|c| c.without_run.clone())
            .collect();
        runs.sort();
        runs.dedup();
        let mut baselines = HashMap::new();
        for run in runs {
            let rows = ledger.briefs_of(run.clone()).await?;
            baselines.insert(run, rows);
        }
        let mut out = Looked::default();
        loop {
            let rows = ledger.current().await?;
            let due = self.stopping.due(tasks, &rows, &baselines);
            if due.is_empty() {
                break;
            }
            for d in due {
                let l = crate::analysis::sequential::live::look(
                    &self.design,
                    d.stage,
                    d.trials,
                    &d.rewards,
                );
                let row = look_row(&d.label, &l, self.design.stages());
                ledger.look(row.clone()).await?;
                out.events.push(describe_look(&row, self.design.stages()));
                for (condition, keep) in self.stopping.looked(&d.label, d.stage, l.decision.stops())
                {
                    let stop = EarlyStopRow {
                        condition: condition.clone(),
                        trials: keep,
                        comparison: d.label.clone(),
                        stage: d.stage + 1,
                        not_run: 0,
                        cost_saved_usd: None,
                        at: crate::domain::now_rfc3339(),
                    };
                    let mean_cost = finished_costs
                        .get(&condition)
                        .filter(|c| !c.is_empty())
                        .map(|c| c.iter().sum::<f64>() / c.len() as f64);
                    let ids = ledger.stop_condition(stop, mean_cost).await?;
                    out.events.push(format!(
                        "early stop: condition {condition} keeps {} per task; {} not run (running ones finish)",
                        crate::format::count(keep as usize, "trial", "trials"),
                        crate::format::count(ids.len(), "queued trial", "queued trials"),
                    ));
                    out.stops.push((condition, keep));
                }
            }
        }
        Ok(out)
    }
}

/// The stored row of a look of comparison `label` (`stages` in the design).
fn look_row(
    label: &str,
    l: &crate::analysis::sequential::live::LiveLook,
    stages: usize,
) -> LookRow {
    let finite = |x: f64| x.is_finite().then_some(x);
    let (decision, bound, reason) = match l.decision {
        Look::StopEfficacy { bound } => (
            LookDecision::Efficacy,
            Some(bound),
            format!(
                "Z = {:.2} ≥ efficacy bound {bound:.2}: the effect is shown",
                l.z
            ),
        ),
        Look::StopFutility { bound } if l.stage + 1 == stages => (
            LookDecision::Futility,
            Some(bound),
            if l.z.is_nan() {
                "the statistic is undefined at the last stage (fewer than 2 tasks): no effect shown"
                    .to_string()
            } else {
                format!(
                    "Z = {:.2} < {bound:.2} at the last stage: no effect shown",
                    l.z
                )
            },
        ),
        Look::StopFutility { bound } => (
            LookDecision::Futility,
            Some(bound),
            format!(
                "Z = {:.2} ≤ futility bound {bound:.2}: no effect worth going on for",
                l.z
            ),
        ),
        Look::Continue {
            reason,
            efficacy,
            futility,
        } => (
            LookDecision::Continue,
            Some(efficacy),
            match (reason, futility) {
                (ContinueReason::Undefined, _) => {
                    "the statistic is undefined (fewer than 2 tasks with rewards on both sides)"
                        .to_string()
                }
                (_, Some(f)) => format!(
                    "Z = {:.2} between the futility bound {f:.2} and the efficacy bound {efficacy:.2}",
                    l.z
                ),
                (_, None) => format!("Z = {:.2} below the efficacy bound {efficacy:.2}", l.z),
            },
        ),
    };
    LookRow {
        comparison: label.to_string(),
        stage: l.stage + 1,
        trials: l.trials,
        n_tasks: l.n_tasks,
        mean_diff: finite(l.mean_diff),
        se: finite(l.se),
        z: finite(l.z),
        bound,
        decision,
        reason,
        adjusted: l.adjusted.map(|a| a.median_unbiased),
        ci: l.adjusted.map(|a| a.ci),
        p_value: l.adjusted.map(|a| a.p_value),
        at: crate::domain::now_rfc3339(),
    }
}

/// The operator's line for a look: `A'-A, stage 2 of 5 (2 trials per task, 3 tasks): Δ +66.7
/// pp; Z = 6.00 ≥ efficacy bound 3.36: the effect is shown — stops`.
fn describe_look(l: &LookRow, stages: usize) -> String {
    let delta = l
        .mean_diff
        .map_or("—".to_string(), |d| format!("{:+.1} pp", d * 100.0));
    format!(
        "sequential {}, stage {} of {stages} ({} per task, {} tasks): Δ {delta}; {} — {}",
        l.comparison,
        l.stage,
        crate::format::count(l.trials as usize, "trial", "trials"),
        l.n_tasks,
        l.reason,
        match l.decision {
            LookDecision::Continue => "continues",
            LookDecision::Efficacy => "answered (efficacy)",
            LookDecision::Futility => "answered (futility)",
        }
    )
}
