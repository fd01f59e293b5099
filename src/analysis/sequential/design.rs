//! A group-sequential design for one paired comparison and the decision at a look.
//!
//! The statistic at stage `k` is the cumulative paired z: with `d_i` the per-task difference of
//! pass rates (condition B − condition A, over the trials run so far) for `n` tasks,
//! `Z_k = d̄·√n / s_d` (rpact's one-sample `normalApproximation = TRUE`). The design is one-sided
//! ("B beats A"): efficacy when `Z_k ≥ c_k`, futility (non-binding) when `Z_k ≤ f_k`.

use super::boundaries::{self, BoundaryError};
use super::normal;

/// A one-sided group-sequential design: Lan–DeMets O'Brien–Fleming α-spending efficacy bounds
/// and, optionally, non-binding O'Brien–Fleming-type β-spending futility bounds
/// (see [`super::boundaries`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Design {
    /// One-sided type-I error level α (e.g. 0.025).
    pub alpha: f64,
    /// Type-II error β at the design drift (e.g. 0.2 for 80 % power).
    pub beta: f64,
    /// Information fractions `t_1 < … < t_K = 1`, one per stage.
    pub fractions: Vec<f64>,
    /// Efficacy bounds `c_k` on the z-scale, one per stage.
    pub efficacy: Vec<f64>,
    /// Futility bounds `f_1..f_{K−1}` on the z-scale (`f_K = c_K` implied); empty without
    /// futility.
    pub futility: Vec<f64>,
    /// Cumulative α spent by stage k (the spending function's value at `t_k`).
    pub alpha_spent: Vec<f64>,
    /// The drift `η` (expected `Z_K`) at which the design has power `1 − β`.
    pub drift: f64,
    /// Maximum information over the fixed design's for the same α and power:
    /// `(η/(z_{1−α} + z_{1−β}))²`.
    pub inflation: f64,
}

impl Design {
    /// The O'Brien–Fleming design at fractions `fractions` with one-sided `alpha`, type-II error
    /// `beta`, and non-binding futility bounds when `futility`.
    ///
    /// # Errors
    /// Fractions not increasing in (0, 1] ending at 1, or a level outside (0, 0.5).
    pub fn obrien_fleming(
        fractions: &[f64],
        alpha: f64,
        beta: f64,
        futility: bool,
    ) -> Result<Design, BoundaryError> {
        let (efficacy, alpha_spent) = boundaries::efficacy(fractions, alpha)?;
        let (fut, drift) = if futility && fractions.len() > 1 {
            boundaries::futility(fractions, &efficacy, beta, alpha)?
        } else {
            (
                Vec::new(),
                boundaries::drift_for_power(fractions, &efficacy, beta)?,
            )
        };
        let z0 = normal::quantile(1.0 - alpha) + normal::quantile(1.0 - beta);
        Ok(Design {
            alpha,
            beta,
            fractions: fractions.to_vec(),
            efficacy,
            futility: fut,
            alpha_spent,
            drift,
            inflation: (drift / z0).powi(2),
        })
    }

    /// Equally spaced fractions `k/K`, k = 1..K.
    pub fn equal_fractions(stages: usize) -> Vec<f64> {
        (1..=stages).map(|k| k as f64 / stages as f64).collect()
    }

    /// Number of stages K.
    pub fn stages(&self) -> usize {
        self.fractions.len()
    }

    /// The futility bound at 0-based stage `k`: `f_k`, `c_K` at the last stage, None at an interim
    /// stage of a design without futility.
    pub fn futility_bound(&self, k: usize) -> Option<f64> {
        if k + 1 == self.stages() {
            Some(self.efficacy[k])
        } else {
            self.futility.get(k).copied()
        }
    }

    /// Per-stage stopping probabilities at drift `eta` (efficacy or futility, futility obeyed).
    pub fn stop_probabilities(&self, eta: f64) -> Vec<f64> {
        boundaries::stop_probabilities(&self.fractions, &self.efficacy, &self.futility, eta)
    }

    /// Expected information used as a share of the maximum at drift `eta`, when the stage at
    /// fraction `t_k` uses `share[k]` of the trials: `Σ_k P(stop at k)·share[k]`.
    pub fn expected_share(&self, eta: f64, share: &[f64]) -> f64 {
        self.stop_probabilities(eta)
            .iter()
            .zip(share)
            .map(|(p, s)| p * s)
            .sum()
    }

    /// The probability of crossing an efficacy bound at drift `eta` (`eta = 0`: the type-I
    /// error; futility bounds ignored, as a non-binding design must be judged).
    pub fn rejection_probability(&self, eta: f64) -> f64 {
        boundaries::power(&self.fractions, &self.efficacy, &[], eta)
    }
}

/// Information fractions of stages that use `k_s` trials per task and condition for a paired
/// difference of pass rates whose variance is `ω² + σ²/k` (`omega2` the between-task variance of
/// the true per-task difference, `sigma2_sum` = σ²₁ + σ²₂ the two conditions' mean
/// within-task trial variances): `t_s = (ω² + σ²/k_K)/(ω² + σ²/k_s)` — information is
/// `n/Var(d)` and the nested trial means have `Cov(d^(s), d^(K)) = Var(d^(K))`, so the
/// cumulative z-statistics have the canonical joint distribution at these fractions. Falls back
/// to `k_s/k_K` when the trial noise σ² is 0 or unmeasured (then more trials add no information
/// the data can show, and the trial-proportional fractions are the conservative choice).
pub fn fractions_for_trials(omega2: f64, sigma2_sum: f64, trials: &[u32]) -> Vec<f64> {
    let kk = f64::from(*trials.last().unwrap_or(&1));
    let proportional = || trials.iter().map(|k| f64::from(*k) / kk).collect();
    if sigma2_sum.is_nan() || sigma2_sum <= 0.0 {
        return proportional();
    }
    let var = |k: f64| omega2.max(0.0) + sigma2_sum / k;
    trials
        .iter()
        .map(|k| var(kk) / var(f64::from(*k)))
        .collect()
}

/// Why a comparison goes on at a look.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ContinueReason {
    /// `f_k < Z_k < c_k`: neither bound crossed.
    BetweenBounds,
    /// No futility bound at this stage and `Z_k < c_k`.
    BelowEfficacy,
    /// The statistic is undefined (fewer than 2 tasks).
    Undefined,
}

/// The decision at a look at 0-based stage `stage` with statistic `z`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decision {
    /// Go on to the next stage.
    Continue {
        /// Why.
        reason: ContinueReason,
        /// The efficacy bound not reached.
        efficacy: f64,
        /// The futility bound not reached, if any.
        futility: Option<f64>,
    },
    /// `Z_k ≥ c_k`: the effect is shown (B beats A at level α).
    StopEfficacy {
        /// The bound crossed, `c_k`.
        bound: f64,
    },
    /// `Z_k ≤ f_k` at an interim stage, or `Z_K < c_K` at the last: no effect shown.
    StopFutility {
        /// The bound crossed, `f_k` (`c_K` at the last stage).
        bound: f64,
    },
}

impl Decision {
    /// Whether the comparison stops here.
    pub fn stops(&self) -> bool {
        !matches!(self, Decision::Continue { .. })
    }
}

/// The decision of `design` at 0-based `stage` for cumulative z-statistic `z` (NaN: undefined,
/// continue; at the last stage an undefined statistic shows no effect).
///
/// # Panics
/// When `stage` is not a stage of the design.
pub fn evaluate(design: &Design, stage: usize, z: f64) -> Decision {
    let c = design.efficacy[stage];
    let last = stage + 1 == design.stages();
    if z.is_nan() {
        if last {
            return Decision::StopFutility { bound: c };
        }
        return Decision::Continue {
            reason: ContinueReason::Undefined,
            efficacy: c,
            futility: design.futility_bound(stage),
        };
    }
    if z >= c {
        return Decision::StopEfficacy { bound: c };
    }
    match design.futility_bound(stage) {
        Some(f) if z <= f || last => Decision::StopFutility { bound: f },
        Some(f) => Decision::Continue {
            reason: ContinueReason::BetweenBounds,
            efficacy: c,
            futility: Some(f),
        },
        None => Decision::Continue {
            reason: ContinueReason::BelowEfficacy,
            efficacy: c,
            futility: None,
        },
    }
}

/// The paired statistic of per-task differences `d`: `(d̄, s_d/√n, Z = d̄/(s_d/√n))`, with
/// `s_d` the sample SD (n − 1). Z is NaN with fewer than 2 tasks; with `s_d = 0` it is `±∞` by
/// the sign of `d̄` (0 when `d̄ = 0`).
pub fn paired_z(d: &[f64]) -> (f64, f64, f64) {
    let n = d.len() as f64;
    if d.len() < 2 {
        let mean = d.first().copied().unwrap_or(f64::NAN);
        return (mean, f64::NAN, f64::NAN);
    }
    let mean = d.iter().sum::<f64>() / n;
    let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let se = (var / n).sqrt();
    let z = if se > 0.0 {
        mean / se
    } else if mean > 0.0 {
        f64::INFINITY
    } else if mean < 0.0 {
        f64::NEG_INFINITY
    } else {
        0.0
    };
    (mean, se, z)
}

/// [`evaluate`] on per-task paired differences at `stage` (see [`paired_z`]).
pub fn evaluate_paired(design: &Design, stage: usize, d: &[f64]) -> Decision {
    evaluate(design, stage, paired_z(d).2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_at_each_stage() {
        let d = Design::obrien_fleming(&Design::equal_fractions(3), 0.025, 0.2, true).unwrap();
        assert!((d.inflation - 1.104_334_02).abs() < 1e-6);
        assert_eq!(
            evaluate(&d, 0, 3.8),
            Decision::StopEfficacy {
                bound: d.efficacy[0]
            }
        );
        assert_eq!(
            evaluate(&d, 0, -0.3),
            Decision::StopFutility {
                bound: d.futility[0]
            }
        );
        assert!(matches!(
            evaluate(&d, 1, 2.0),
            Decision::Continue {
                reason: ContinueReason::BetweenBounds,
                ..
            }
        ));
        assert!(matches!(
            evaluate(&d, 2, 1.99),
            Decision::StopFutility { .. }
        ));
        assert!(matches!(
            evaluate(&d, 2, 1.994),
            Decision::StopEfficacy { .. }
        ));
        assert!(!evaluate(&d, 1, f64::NAN).stops());
        let plain = Design::obrien_fleming(&Design::equal_fractions(3), 0.025, 0.2, false).unwrap();
        assert!((plain.inflation - 1.012_794_81).abs() < 1e-6);
        assert!(matches!(
            evaluate(&plain, 0, -5.0),
            Decision::Continue {
                reason: ContinueReason::BelowEfficacy,
                ..
            }
        ));
    }

    #[test]
    fn paired_statistic() {
        let (m, se, z) = paired_z(&[0.0, 1.0, 0.5, 0.5]);
        assert!((m - 0.5).abs() < 1e-15);
        assert!((se - (1.0f64 / 6.0 / 4.0).sqrt()).abs() < 1e-15);
        assert!((z - m / se).abs() < 1e-12);
        assert!(paired_z(&[1.0]).2.is_nan());
        assert_eq!(paired_z(&[0.5, 0.5]).2, f64::INFINITY);
        assert_eq!(paired_z(&[0.0, 0.0]).2, 0.0);
    }

    #[test]
    fn fractions_from_variance_components() {
        // ω² = 0.1, σ² = 0.3: Var at k = 1, 2, 3 is 0.4, 0.25, 0.2.
        let t = fractions_for_trials(0.1, 0.3, &[1, 2, 3]);
        assert!((t[0] - 0.5).abs() < 1e-15 && (t[1] - 0.8).abs() < 1e-15 && t[2] == 1.0);
        assert_eq!(
            fractions_for_trials(0.0, 0.0, &[1, 2, 4]),
            vec![0.25, 0.5, 1.0]
        );
        // Only trial noise: information is proportional to trials.
        let t = fractions_for_trials(0.0, 0.3, &[1, 2, 3]);
        assert!((t[0] - 1.0 / 3.0).abs() < 1e-15);
    }
}
