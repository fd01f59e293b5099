//! pass@2-adaptive of each round pair (A → A', B → B'; [`crate::analysis::pass_at_k`]) beside
//! round 1's own pass@2, overall and per domain and difficulty, over the tasks both rounds ran.
//! Every figure counts successes by the one rule ([`crate::analysis::success`]).

use serde::Serialize;

use super::breakdowns::{difficulty_order, groups};
use super::comparisons::matched;
use super::{ConditionResult, TaskInfo, mean_of};
use crate::analysis::ci::{self, Ci, CiMethod};
use crate::analysis::pass_at_k::{self, pass_at_2_adaptive, pass_at_k};

/// pass@2-adaptive of one round-1 → round-2 pair over the tasks both rounds ran, or one group
/// of them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Adaptive {
    /// `A → A'`.
    pub name: String,
    /// `overall`, `domain` or `difficulty`.
    pub scope: String,
    /// The domain or difficulty (`all` overall).
    pub group: String,
    /// Tasks both rounds ran.
    pub n_tasks: usize,
    /// Round 1's pass@1 (mean over tasks of the share of planned trials that succeeded).
    pub pass1_round1: f64,
    /// Round 2's.
    pub pass1_round2: f64,
    /// Mean over tasks of `1 − (1 − p₁)(1 − p₂)`, p₁ and p₂ each round's pass@1, fraction.
    pub pass2_adaptive: f64,
    /// Mean over tasks of round 1's unbiased pass@2 (Chen et al. 2021, eq. 1), fraction;
    /// `None` when a task had fewer than 2 planned trials (see `pass2_undefined`).
    pub pass2: Option<f64>,
    /// Why pass@2 is undefined.
    pub pass2_undefined: Option<String>,
    /// Adaptive gain = pass2_adaptive − pass2, percentage points; `None` with pass@2.
    pub gain_pp: Option<f64>,
    /// Its CI (paired bootstrap over the row's tasks), percentage points.
    pub gain_ci_pp: Option<Ci>,
    /// Why there is no gain CI (no pass@2, or fewer than 2 tasks).
    pub gain_ci_undefined: Option<String>,
}

/// The rows of round-1 condition `r1` and round-2 condition `r2`: overall, then one per domain
/// and per difficulty, each over the tasks both ran.
pub(super) fn rows(
    name: &str,
    tasks: &[TaskInfo],
    r1: &ConditionResult,
    r2: &ConditionResult,
    method: &CiMethod,
) -> Vec<Adaptive> {
    let both = matched(r1, r2);
    let row = |scope: &str, group: &str, idx: &[usize]| -> Option<Adaptive> {
        let idx: Vec<usize> = idx.iter().copied().filter(|i| both.contains(i)).collect();
        if idx.is_empty() {
            return None;
        }
        let p1: Vec<f64> = idx.iter().filter_map(|&i| r1.pass_at_1_of(i)).collect();
        let p2: Vec<f64> = idx.iter().filter_map(|&i| r2.pass_at_1_of(i)).collect();
        let adaptive: Vec<f64> = p1
            .iter()
            .zip(&p2)
            .map(|(a, b)| pass_at_2_adaptive(*a, *b))
            .collect();
        let pass2: Option<Vec<f64>> = idx
            .iter()
            .map(|&i| pass_at_k(r1.per_task_planned[i], r1.per_task_passed[i] as u32, 2))
            .collect();
        let short = idx.iter().filter(|&&i| r1.per_task_planned[i] < 2).count();
        let pass2_undefined = (short > 0).then(|| {
            let fewest = idx
                .iter()
                .map(|&i| r1.per_task_planned[i])
                .min()
                .unwrap_or(0);
            let why = pass_at_k::why_undefined(fewest, 2).unwrap_or_default();
            if short == idx.len() {
                why
            } else {
                format!("{why}; {short} of {} tasks have fewer", idx.len())
            }
        });
        let a = mean_of(&adaptive);
        let p = pass2.as_deref().map(mean_of);
        let gain_ci_pp = pass2
            .as_deref()
            .and_then(|p| method.paired_difference(&adaptive, p))
            .map(|c| c.scaled(100.0));
        Some(Adaptive {
            name: name.to_string(),
            scope: scope.to_string(),
            group: group.to_string(),
            n_tasks: idx.len(),
            pass1_round1: mean_of(&p1),
            pass1_round2: mean_of(&p2),
            pass2_adaptive: a,
            pass2: p,
            gain_pp: p.map(|p| (a - p) * 100.0),
            gain_ci_pp,
            gain_ci_undefined: pass2_undefined
                .clone()
                .or_else(|| ci::why_undefined(idx.len())),
            pass2_undefined,
        })
    };
    let all: Vec<usize> = (0..tasks.len()).collect();
    let mut out: Vec<Adaptive> = row("overall", "all", &all).into_iter().collect();
    for (scope, key, order) in [
        (
            "domain",
            (&|t: &TaskInfo| t.domain.clone()) as &dyn Fn(&TaskInfo) -> String,
            (&|d: &str| (0u8, d.to_string())) as &dyn Fn(&str) -> (u8, String),
        ),
        ("difficulty", &|t| t.difficulty.clone(), &difficulty_order),
    ] {
        for (g, idx) in groups(tasks, key, order) {
            out.extend(row(scope, &g, &idx));
        }
    }
    out
}
