//! The paper's numbers beside a run's own, for a run whose harness and model match a
//! configuration of the paper's main table. The run's pass rates, Δ and g are taken over the
//! tasks both of its conditions ran (no-skills and curated; no-skills and self-generated), the
//! way the paper compares conditions on one task set.

use serde::Serialize;

use super::ConditionResult;
use super::comparisons::{delta_and_gain, matched, mean_at};
use crate::analysis::paper::{self, PaperValue};
use crate::store::RunRow;

/// The paper's number next to the run's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PaperRow {
    /// Run.
    pub run: String,
    /// The paper's value.
    pub paper: PaperValue,
    /// The run's value in the same unit (percent, g × 100), when it has one.
    pub ours: Option<f64>,
    /// Tasks the run's value is over (those both compared conditions ran).
    pub n_tasks: Option<usize>,
    /// Tasks of the run's task set.
    pub n_tasks_total: usize,
}

/// Rows for every run of `runs` that matches a paper configuration.
pub(super) fn rows(runs: &[RunRow], conditions: &[ConditionResult]) -> Vec<PaperRow> {
    let mut out = Vec::new();
    for run in runs {
        let own: Vec<&ConditionResult> = conditions.iter().filter(|c| c.run == run.name).collect();
        let of = |key: &str| own.iter().copied().find(|c| c.condition == key);
        let n_total = (0..own.first().map_or(0, |c| c.per_task.len()))
            .filter(|&i| own.iter().any(|c| c.ran(i)))
            .count();
        let no_skills = of("no-skills");
        // (pass rate of `with`, of the baseline, Δ pp, g × 100, tasks) over their matched tasks.
        let pair = |with: Option<&ConditionResult>| {
            let (w, b) = (with?, no_skills?);
            let idx = matched(w, b);
            let (d, g) = delta_and_gain(w, b, &idx);
            Some((
                (!idx.is_empty()).then(|| mean_at(w, &idx) * 100.0),
                (!idx.is_empty()).then(|| mean_at(b, &idx) * 100.0),
                d,
                g.map(|g| g * 100.0),
                idx.len(),
            ))
        };
        let curated = pair(of("curated"));
        // The paper ran the generate-first variant (`self-generated`).
        let generated = pair(of("self-generated"));
        for v in paper::for_run(&run.agent, run.model.as_deref()) {
            let (ours, n) = match (v.metric.as_str(), curated, generated) {
                ("pass_no_skills", Some(c), _) => (c.1, Some(c.4)),
                ("pass_no_skills", None, _) => (
                    no_skills.map(|c| c.pass_rate * 100.0),
                    no_skills.map(|c| c.n_tasks),
                ),
                ("pass_curated", Some(c), _) => (c.0, Some(c.4)),
                ("normalized_gain", Some(c), _) => (c.3, Some(c.4)),
                ("delta_curated", Some(c), _) => (c.2, Some(c.4)),
                ("pass_self_generated", _, Some(g)) => (g.0, Some(g.4)),
                ("delta_self_generated", _, Some(g)) => (g.2, Some(g.4)),
                _ => (None, None),
            };
            out.push(PaperRow {
                run: run.name.clone(),
                paper: v,
                ours,
                n_tasks: n,
                n_tasks_total: n_total,
            });
        }
    }
    out
}
