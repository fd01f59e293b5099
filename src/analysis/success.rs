//! One definition of success, used by every metric that counts successes.
//!
//! A trial's **reward** is its verifier's reward clamped to [0, 1]; a trial that did not finish,
//! was cancelled or interrupted, or ended without a reward has none and counts 0. **Method D**
//! averages rewards, so partial credit counts fractionally ([`super::metrics`]).
//!
//! A trial **succeeds** when its reward is at least the pass threshold ([`SuccessRule`], default
//! [`DEFAULT_PASS_THRESHOLD`] = 1.0, full marks). The verifier decides, never the agent's
//! outcome: an agent that wrote its output and then overran its timeout succeeded if the
//! verifier still gave it the reward (the report shows such trials in a column of their own). The
//! whole pass@k family — pass@1, pass@2 (Chen et al. 2021), the p₁ and p₂ inside
//! pass@2-adaptive — and flaky-task detection count successes by this rule, so pass@2 can never
//! fall below pass@1 and a task whose every reward is 1 is never flaky.
//!
//! The rule is also the one every view **shows** success by ([`SuccessRule::trial_succeeded`]):
//! the dashboard's grid cell and trial detail, and the report's per-trial marks. The outcome the
//! runner stores (`pass` at a reward of 1, Harbor's convention) stays as recorded; with a lower
//! threshold (`report --pass-threshold`, `watch --pass-threshold`) a `fail` whose reward reaches
//! it is shown as a success everywhere, so no view disagrees with the numbers.

use serde::Serialize;

use crate::domain::Outcome;

/// The default pass threshold: a trial succeeds with full marks.
pub const DEFAULT_PASS_THRESHOLD: f64 = 1.0;

/// Float noise allowed below the threshold (a reward of 0.9999999999 is 1).
const EPSILON: f64 = 1e-9;

/// The binary success of a trial: reward ≥ `threshold`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SuccessRule {
    /// The pass threshold, in (0, 1].
    pub threshold: f64,
}

impl Default for SuccessRule {
    fn default() -> Self {
        SuccessRule {
            threshold: DEFAULT_PASS_THRESHOLD,
        }
    }
}

impl SuccessRule {
    /// A rule with `threshold`.
    ///
    /// # Errors
    /// A message naming the value when it is not in (0, 1] (0 would count a reward of 0 a
    /// success).
    pub fn new(threshold: f64) -> Result<SuccessRule, String> {
        if threshold.is_finite() && threshold > 0.0 && threshold <= 1.0 {
            Ok(SuccessRule { threshold })
        } else {
            Err(format!(
                "pass threshold {threshold} is not in (0, 1]: a trial succeeds when its reward reaches it"
            ))
        }
    }

    /// True when `reward` (a trial's reward, clamped to [0, 1] or not) reaches the threshold.
    pub fn succeeds(&self, reward: f64) -> bool {
        reward >= self.threshold - EPSILON
    }

    /// True when a trial succeeded by this rule: it finished (`done`), was not cancelled or
    /// interrupted (those did not run to a verdict), and its reward reaches the threshold —
    /// whatever its stored outcome (an agent timeout whose verifier still gave the reward
    /// succeeded). What the report counts and every view shows.
    pub fn trial_succeeded(
        &self,
        done: bool,
        outcome: Option<Outcome>,
        reward: Option<f64>,
    ) -> bool {
        done && !matches!(outcome, Some(Outcome::Cancelled | Outcome::Interrupted))
            && reward.is_some_and(|r| self.succeeds(r))
    }

    /// `reward ≥ 1.0`: the rule as printed beside the numbers it decides.
    pub fn describe(&self) -> String {
        format!("reward ≥ {}", threshold_text(self.threshold))
    }
}

/// A threshold with as many decimals as it needs (`1.0`, `0.5`, `0.75`).
fn threshold_text(t: f64) -> String {
    let s = format!("{t:.6}");
    let s = s.trim_end_matches('0');
    if s.ends_with('.') {
        format!("{s}0")
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_decides_and_is_bounded() {
        let full = SuccessRule::default();
        assert!(full.succeeds(1.0) && full.succeeds(1.0 - 1e-12));
        assert!(!full.succeeds(0.99));
        let half = SuccessRule::new(0.5).unwrap();
        assert!(half.succeeds(0.5) && !half.succeeds(0.49));
        assert!(SuccessRule::new(0.0).is_err());
        assert!(SuccessRule::new(1.5).is_err());
        assert!(SuccessRule::new(f64::NAN).is_err());
        assert_eq!(full.describe(), "reward ≥ 1.0");
        assert_eq!(SuccessRule::new(0.75).unwrap().describe(), "reward ≥ 0.75");
    }
}
