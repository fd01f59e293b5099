//! What a run costs: money spent so far, what the trials still to run will cost, and whether a
//! budget allows starting another one.
//!
//! The projection treats the cost of a trial of one condition as a draw from that condition's
//! finished trials (their mean and sample standard deviation; the run's mean over all conditions
//! stands in for a condition with no finished trial yet). For `r` trials still to run its 95 %
//! prediction interval is `r·m ± 1.96·s·sqrt(r + r²/n)`: the spread of `r` new draws plus the
//! uncertainty of the mean `m` estimated from `n` trials. A running trial counts with what it has
//! spent so far or the mean, whichever is larger.

use std::collections::BTreeMap;

use serde::Serialize;

/// Costs of one condition, USD.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConditionCosts {
    /// Cost of each finished attempt (priced ones only).
    pub finished: Vec<f64>,
    /// What each running attempt has spent so far.
    pub running: Vec<f64>,
    /// Trials still queued (not started).
    pub queued: usize,
}

/// A projection of a run's total cost, USD.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Projection {
    /// Spent so far (finished and running attempts).
    pub spent: f64,
    /// Projected total once every queued trial has run.
    pub total: f64,
    /// Half-width of the total's 95 % prediction interval (0 when it cannot be estimated).
    pub plus_minus: f64,
    /// Per condition: (key, spent, projected total).
    pub per_condition: Vec<(String, f64, f64)>,
}

/// Mean and sample standard deviation (0 for fewer than two values).
pub(crate) fn mean_sd(xs: &[f64]) -> Option<(f64, f64)> {
    if xs.is_empty() {
        return None;
    }
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let sd = if xs.len() > 1 {
        (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    Some((m, sd))
}

/// The expected cost of one trial of each condition: its own finished trials' mean and spread,
/// else the run's, with the number of trials it rests on. `None` before any priced trial finished.
fn per_trial(costs: &BTreeMap<String, ConditionCosts>) -> BTreeMap<String, (f64, f64, usize)> {
    let all: Vec<f64> = costs
        .values()
        .flat_map(|c| c.finished.iter().copied())
        .collect();
    let run = mean_sd(&all);
    costs
        .iter()
        .filter_map(|(k, c)| {
            let own = mean_sd(&c.finished).map(|(m, s)| (m, s, c.finished.len()));
            own.or(run.map(|(m, s)| (m, s, all.len())))
                .map(|v| (k.clone(), v))
        })
        .collect()
}

/// Projects the run's total cost. `None` until a priced trial has finished.
pub fn project(costs: &BTreeMap<String, ConditionCosts>) -> Option<Projection> {
    let expect = per_trial(costs);
    if expect.is_empty() {
        return None;
    }
    let mut out = Projection {
        spent: 0.0,
        total: 0.0,
        plus_minus: 0.0,
        per_condition: Vec::new(),
    };
    let mut variance = 0.0;
    for (key, c) in costs {
        let spent: f64 = c.finished.iter().sum::<f64>() + c.running.iter().sum::<f64>();
        let (m, s, n) = expect.get(key).copied().unwrap_or((0.0, 0.0, 1));
        let running: f64 = c.running.iter().map(|r| r.max(m)).sum();
        let total = c.finished.iter().sum::<f64>() + running + m * c.queued as f64;
        let r = c.queued as f64;
        variance += s * s * (r + r * r / n.max(1) as f64);
        out.spent += spent;
        out.total += total;
        out.per_condition.push((key.clone(), spent, total));
    }
    out.plus_minus = 1.96 * variance.sqrt();
    Some(out)
}

/// Whether a budget of `max_usd` allows starting one more trial of `condition`: what is spent,
/// plus the running trials' projected costs, plus the new trial's expected cost must stay within
/// it. Before any priced trial finished only what is spent counts (nothing is known to project).
pub fn allows(costs: &BTreeMap<String, ConditionCosts>, condition: &str, max_usd: f64) -> bool {
    let expect = per_trial(costs);
    let mut committed = 0.0;
    for (key, c) in costs {
        let m = expect.get(key).map(|e| e.0).unwrap_or(0.0);
        committed += c.finished.iter().sum::<f64>();
        committed += c.running.iter().map(|r| r.max(m)).sum::<f64>();
    }
    let next = expect.get(condition).map(|e| e.0).unwrap_or_else(|| {
        // A condition not seen yet: the run's mean.
        expect.values().next().map(|e| e.0).unwrap_or(0.0)
    });
    committed + next <= max_usd
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs(entries: &[(&str, &[f64], &[f64], usize)]) -> BTreeMap<String, ConditionCosts> {
        entries
            .iter()
            .map(|(k, f, r, q)| {
                (
                    k.to_string(),
                    ConditionCosts {
                        finished: f.to_vec(),
                        running: r.to_vec(),
                        queued: *q,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn nothing_is_projected_before_a_priced_trial_finished() {
        let c = costs(&[("a", &[], &[0.2], 3)]);
        assert_eq!(project(&c), None);
        // Only what is spent counts.
        assert!(allows(&c, "a", 0.25));
        assert!(!allows(&c, "a", 0.19));
    }

    #[test]
    fn projection_by_hand() {
        // Condition a: finished 1.0 and 3.0 (mean 2, sd √2); one running at 0.5 (counts 2), two
        // queued. Condition b: nothing finished (the run's mean 2, sd √2, n = 2), one queued.
        let c = costs(&[("a", &[1.0, 3.0], &[0.5], 2), ("b", &[], &[], 1)]);
        let p = project(&c).unwrap();
        assert!((p.spent - 4.5).abs() < 1e-12);
        assert!((p.total - (4.0 + 2.0 + 4.0 + 2.0)).abs() < 1e-12);
        // variance: a: 2·(2 + 4/2) = 8; b: 2·(1 + 1/2) = 3.
        assert!((p.plus_minus - 1.96 * 11f64.sqrt()).abs() < 1e-12);
        assert_eq!(p.per_condition[0], ("a".to_string(), 4.5, 10.0));
    }

    #[test]
    fn the_budget_counts_running_trials_at_their_projection() {
        let c = costs(&[("a", &[1.0, 1.0], &[0.1, 0.1], 5)]);
        // Spent 2.0, two running projected at 1.0 each, the next at 1.0: 5.0 needed.
        assert!(allows(&c, "a", 5.0));
        assert!(!allows(&c, "a", 4.99));
    }
}
