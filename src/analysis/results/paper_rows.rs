//! The paper's numbers beside a run's own, for a run whose harness and model match a
//! configuration of the paper's main table. The run's pass rates, Δ and g are taken over the
//! tasks both of its conditions ran (no-skills and curated; no-skills and self-generated), the
//! way the paper compares conditions on one task set.
//!
//! Beside the imported results registry's runs (one per harness × model configuration), the
//! SkillsBench v4 aggregates — the macro averages over configurations of the no-skills and
//! curated pass rates, the mean Δ and mean g, and the range of Δ — computed from those runs.

use serde::Serialize;

use super::ConditionResult;
use super::comparisons::{delta_and_gain, matched, mean_at};
use crate::analysis::paper::{self, PaperValue};
use crate::domain::RunRow;

/// The source of runs imported from the results registry.
const REGISTRY: &str = "registry";

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

/// The v4 aggregates over the selected registry runs (at least two configurations with both
/// conditions): per configuration Method D of no-skills and curated over the tasks both ran, Δ
/// and g; then their means (macro averages) and the range of Δ, beside the paper's v4 numbers.
pub(super) fn registry_aggregates(
    runs: &[RunRow],
    conditions: &[ConditionResult],
) -> Vec<PaperRow> {
    /// One configuration over the tasks both its conditions ran.
    struct Config {
        no_skills: f64,
        curated: f64,
        delta_pp: f64,
        g: Option<f64>,
        n_tasks: usize,
    }
    let mut per_config: Vec<Config> = Vec::new();
    let mut union = 0;
    for run in runs.iter().filter(|r| r.source == REGISTRY) {
        let of = |key: &str| {
            conditions
                .iter()
                .find(|c| c.run == run.name && c.condition == key)
        };
        let (Some(w), Some(b)) = (of("curated"), of("no-skills")) else {
            continue;
        };
        let idx = matched(w, b);
        let (Some(d), g) = delta_and_gain(w, b, &idx) else {
            continue;
        };
        union = union.max(w.per_task.len());
        per_config.push(Config {
            no_skills: mean_at(b, &idx) * 100.0,
            curated: mean_at(w, &idx) * 100.0,
            delta_pp: d,
            g: g.map(|g| g * 100.0),
            n_tasks: idx.len(),
        });
    }
    if per_config.len() < 2 {
        return Vec::new();
    }
    let n = per_config.len() as f64;
    let mean = |f: &dyn Fn(&Config) -> f64| per_config.iter().map(f).sum::<f64>() / n;
    let gains: Vec<f64> = per_config.iter().filter_map(|c| c.g).collect();
    let deltas = per_config.iter().map(|c| c.delta_pp);
    let fewest = per_config.iter().map(|c| c.n_tasks).min();
    let ours = |metric: &str| -> Option<f64> {
        match metric {
            "pass_no_skills_macro" => Some(mean(&|c| c.no_skills)),
            "pass_curated_macro" => Some(mean(&|c| c.curated)),
            "delta_curated_mean" => Some(mean(&|c| c.delta_pp)),
            "normalized_gain" => (gains.len() == per_config.len())
                .then(|| gains.iter().sum::<f64>() / gains.len() as f64),
            "delta_curated_range_min" => deltas.clone().min_by(f64::total_cmp),
            "delta_curated_range_max" => deltas.clone().max_by(f64::total_cmp),
            _ => None,
        }
    };
    paper::values()
        .into_iter()
        .filter(|v| v.version == "v4" && v.table == "aggregate")
        .filter_map(|v| {
            let value = ours(&v.metric)?;
            Some(PaperRow {
                run: format!("registry ({} configurations)", per_config.len()),
                ours: Some(value),
                n_tasks: fewest,
                n_tasks_total: union,
                paper: v,
            })
        })
        .collect()
}
