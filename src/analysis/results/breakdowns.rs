//! Breakdowns by domain and by difficulty: each condition's Method D over the group's tasks it
//! ran, each comparison's Δ and g over the group's matched tasks, and learning efficiency (round
//! 2's comparisons per difficulty tier).

use std::collections::BTreeMap;

use serde::Serialize;

use super::comparisons::{delta_and_gain, matched, mean_at};
use super::{ConditionResult, TaskInfo};

/// A breakdown row (a domain or a difficulty).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupRow {
    /// Domain or difficulty.
    pub group: String,
    /// Tasks of the whole set in the group.
    pub n_tasks: usize,
    /// Pass rate per condition over the group's tasks it ran, in [`super::Results::conditions`]
    /// order; `None` when it ran none of them.
    pub rates: Vec<Option<f64>>,
    /// Per condition: the group's tasks it ran.
    pub n_ran: Vec<usize>,
    /// Δ (pp) per comparison over the group's matched tasks, in [`super::Results::comparisons`]
    /// order; `None` when no task of the group ran under both.
    pub deltas_pp: Vec<Option<f64>>,
    /// g per comparison.
    pub gains: Vec<Option<f64>>,
    /// Per comparison: the group's matched tasks.
    pub n_matched: Vec<usize>,
}

/// Learning efficiency: a round-2 comparison within one difficulty tier, over its matched tasks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Efficiency {
    /// Comparison (`A' vs A`, `B' vs B`).
    pub comparison: String,
    /// Difficulty.
    pub difficulty: String,
    /// Matched tasks of the tier.
    pub n_tasks: usize,
    /// Pass rates over them.
    pub p_with: f64,
    /// Baseline.
    pub p_without: f64,
    /// Δ, pp.
    pub delta_pp: f64,
    /// g.
    pub g: Option<f64>,
}

/// Rank of a difficulty in tables (easy first), by [`crate::skillsbench::Difficulty`]; levels
/// outside the closed set last.
pub fn difficulty_order(d: &str) -> (u8, String) {
    let r = crate::skillsbench::Difficulty::parse(d).map_or(3, |d| d.rank());
    (r, d.to_string())
}

/// Task indices of `tasks` grouped by `key`, in `order`.
pub(super) fn groups(
    tasks: &[TaskInfo],
    key: &dyn Fn(&TaskInfo) -> String,
    order: &dyn Fn(&str) -> (u8, String),
) -> Vec<(String, Vec<usize>)> {
    let mut groups: BTreeMap<(u8, String), Vec<usize>> = BTreeMap::new();
    for (i, t) in tasks.iter().enumerate() {
        groups.entry(order(&key(t))).or_default().push(i);
    }
    groups.into_iter().map(|((_, g), idx)| (g, idx)).collect()
}

/// One row per group of `tasks` by `key`.
pub(super) fn rows(
    tasks: &[TaskInfo],
    conditions: &[ConditionResult],
    pairs: &[(String, usize, usize)],
    key: &dyn Fn(&TaskInfo) -> String,
    order: &dyn Fn(&str) -> (u8, String),
) -> Vec<GroupRow> {
    groups(tasks, key, order)
        .into_iter()
        .map(|(group, idx)| {
            let ran = |c: &ConditionResult| -> Vec<usize> {
                idx.iter().copied().filter(|&i| c.ran(i)).collect()
            };
            let (rates, n_ran) = conditions
                .iter()
                .map(|c| {
                    let r = ran(c);
                    ((!r.is_empty()).then(|| mean_at(c, &r)), r.len())
                })
                .unzip();
            let mut row = GroupRow {
                group,
                n_tasks: idx.len(),
                rates,
                n_ran,
                deltas_pp: Vec::new(),
                gains: Vec::new(),
                n_matched: Vec::new(),
            };
            for (_, w, wo) in pairs {
                let m: Vec<usize> = matched(&conditions[*w], &conditions[*wo])
                    .into_iter()
                    .filter(|i| idx.contains(i))
                    .collect();
                let (d, g) = delta_and_gain(&conditions[*w], &conditions[*wo], &m);
                row.deltas_pp.push(d);
                row.gains.push(g);
                row.n_matched.push(m.len());
            }
            row
        })
        .collect()
}

/// Learning efficiency: the round-2 comparisons (an experiment's A' vs A and B' vs B) per
/// difficulty tier, over each tier's matched tasks (tiers without one are left out).
pub(super) fn efficiency(
    tasks: &[TaskInfo],
    conditions: &[ConditionResult],
    pairs: &[(String, usize, usize)],
) -> Vec<Efficiency> {
    let mut out = Vec::new();
    let round2 = |name: &str| {
        super::ROUND_PAIRS
            .iter()
            .any(|(from, to)| name == format!("{to} vs {from}"))
    };
    for (name, w, wo) in pairs.iter().filter(|(n, _, _)| round2(n)) {
        let (cw, cwo) = (&conditions[*w], &conditions[*wo]);
        let both = matched(cw, cwo);
        for (difficulty, idx) in groups(tasks, &|t| t.difficulty.clone(), &difficulty_order) {
            let m: Vec<usize> = both.iter().copied().filter(|i| idx.contains(i)).collect();
            let (Some(d), g) = delta_and_gain(cw, cwo, &m) else {
                continue;
            };
            out.push(Efficiency {
                comparison: name.clone(),
                difficulty,
                n_tasks: m.len(),
                p_with: mean_at(cw, &m),
                p_without: mean_at(cwo, &m),
                delta_pp: d,
                g,
            });
        }
    }
    out
}
