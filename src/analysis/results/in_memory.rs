//! The breakdown of a run whose latest attempts are held in memory — the dashboard's snapshot —
//! computed by the analysis itself, not beside it: the same tally ([`super::tally`]: Method D
//! over a fixed task denominator, a trial without a verdict counting 0, the success rule), the
//! same per-condition results ([`super::conditions`], without intervals: the pane is redrawn
//! many times a minute) and the same breakdown rows ([`super::breakdowns`]) as the report's
//! "by domain" and "by difficulty" tables. The domain pane draws these numbers, so it cannot
//! disagree with the report.

use super::breakdowns::{self, GroupRow, difficulty_order};
use super::conditions::{self, ConditionResult};
use super::tally;
use super::{Scoring, TaskInfo};
use crate::analysis::success::SuccessRule;
use crate::domain::{RunRow, RunTaskRow, TrialBrief, TrialPlan};
use crate::skillsbench::Difficulty;

/// What the rows of a breakdown are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GroupBy {
    /// One row per domain (alphabetical, as in the report).
    #[default]
    Domain,
    /// One row per difficulty (easy first).
    Difficulty,
}

/// A run's breakdown as the dashboard shows it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LiveBreakdown {
    /// One row per group, in the report's order, then the overall row (last). Conditions are
    /// the run's, in its order; each comparison is a condition after the first against the
    /// first, over the group's tasks both planned — shown once both sides have a trial with a
    /// verdict there (a Method D rate of nothing judged is 0 by definition, not a result to
    /// compare).
    pub rows: Vec<GroupRow>,
    /// Per row (same order), per condition: the pass rate over judged trials
    /// ([`crate::analysis::metrics::pass_rate_judged`]: per task the mean reward of its judged
    /// trials, averaged over the group's tasks that have one); `None` before one is judged.
    pub judged: Vec<Vec<Option<f64>>>,
}

/// The breakdown of `run` by `by` over its task set `tasks` (planned as `plan`), from its latest
/// attempts `trials`, successes by `rule`.
pub fn live_breakdown(
    run: &RunRow,
    tasks: &[RunTaskRow],
    plan: &TrialPlan,
    trials: &[TrialBrief],
    by: GroupBy,
    rule: &SuccessRule,
) -> LiveBreakdown {
    // The task set as the analysis holds it: by id, difficulties in the closed set.
    let mut infos: Vec<TaskInfo> = tasks
        .iter()
        .map(|t| TaskInfo {
            id: t.task_id.clone(),
            domain: t.domain.clone(),
            difficulty: Difficulty::normalize(&t.difficulty),
        })
        .collect();
    infos.sort_by(|a, b| a.id.cmp(&b.id));
    infos.dedup_by(|a, b| a.id == b.id);
    let cells = tally::cells_in_memory(run.id, plan, trials, rule);
    let scoring = Scoring {
        success: *rule,
        ..Scoring::default()
    };
    let conds: Vec<ConditionResult> = run
        .conditions
        .iter()
        .map(|c| conditions::method_d(run, c, &infos, plan, &cells, &scoring))
        .collect();
    let pairs: Vec<(String, usize, usize)> =
        (1..conds.len()).map(|i| (String::new(), i, 0)).collect();
    let key: &dyn Fn(&TaskInfo) -> String = match by {
        GroupBy::Domain => &|t| t.domain.clone(),
        GroupBy::Difficulty => &|t| t.difficulty.clone(),
    };
    let order: &dyn Fn(&str) -> (u8, String) = match by {
        GroupBy::Domain => &|d| (0, d.to_string()),
        GroupBy::Difficulty => &difficulty_order,
    };
    let mut rows = breakdowns::rows(&infos, &conds, &pairs, key, order);
    let mut groups = breakdowns::groups(&infos, key, order);
    rows.extend(breakdowns::rows(
        &infos,
        &conds,
        &pairs,
        &|_| "overall".to_string(),
        &|g| (0, g.to_string()),
    ));
    groups.push(("overall".into(), (0..infos.len()).collect()));
    let judged: Vec<Vec<Option<f64>>> = groups
        .iter()
        .map(|(_, idx)| {
            conds
                .iter()
                .map(|c| {
                    let means: Vec<f64> = idx
                        .iter()
                        .filter_map(|&i| c.per_task_judged_mean.get(i).copied().flatten())
                        .collect();
                    (!means.is_empty()).then(|| means.iter().sum::<f64>() / means.len() as f64)
                })
                .collect()
        })
        .collect();
    // A difference waits for a verdict on both sides of it.
    for (row, j) in rows.iter_mut().zip(&judged) {
        for (k, (_, w, wo)) in pairs.iter().enumerate() {
            if j[*w].is_none() || j[*wo].is_none() {
                row.deltas_pp[k] = None;
                row.gains[k] = None;
            }
        }
    }
    LiveBreakdown { rows, judged }
}
