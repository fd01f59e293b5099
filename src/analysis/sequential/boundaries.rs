//! Group-sequential boundaries on the z-scale of the cumulative statistic `Z_k`, one-sided
//! (upper: "with beats without"):
//!
//! - **Efficacy** (α-spending, Lan–DeMets O'Brien–Fleming type, [`super::spending::obf`]):
//!   `c_1 = Φ⁻¹(1 − α(t_1))`; for k ≥ 2 with `c_1..c_{k−1}` fixed, `c_k` solves
//!   `Σ_{j≤k} P₀(reach j, Z_j ≥ c_j) = α(t_k)` under H0 (η = 0) — the recursion of
//!   [`super::recursion`] with no lower bound. rpact `getDesignGroupSequential(typeOfDesign =
//!   "asOF", sided = 1)`.
//! - **Non-binding futility** (β-spending of O'Brien–Fleming type, rpact's `bsOF` with
//!   `bindingFutility = FALSE`): the efficacy bounds stay those above; for a drift η,
//!   `f_1 = Φ⁻¹(β(t_1)) + η√t_1` and for k ≥ 2 `f_k` solves
//!   `Σ_{j≤k} P_η(continue to j with f_i < Z_i < c_i, Z_j ≤ f_j) = β(t_k)`; η is then solved so
//!   that `f_K = c_K`. The design so has power `1 − β` at drift η (futility stops counted as
//!   acceptances), and its maximum information is the fixed design's times the **inflation
//!   factor** `(η/(z_{1−α} + z_{1−β}))²`. Non-binding: the efficacy bounds ignore futility, so
//!   the type-I error is at most α whether or not a futility stop is obeyed. An interim `f_k`
//!   that would exceed `c_k` is set to `c_k` (rpact does not guard this; it happens only at
//!   drifts far from the solution).
//! - Without futility, the drift of power `1 − β` solves `Σ_k P_η(reach k, Z_k ≥ c_k) = 1 − β`.

use super::normal;
use super::recursion::{Walk, exits};
use super::roots::brent;
use super::spending::obf;

/// Root tolerance of the boundary searches, in z.
const TOL: f64 = 1e-11;

/// Why boundaries could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BoundaryError {
    /// The information fractions are not increasing in (0, 1] ending at 1.
    #[error("information fractions must increase within (0, 1] and end at 1, got {0:?}")]
    Fractions(Vec<f64>),
    /// α or β is outside (0, 0.5).
    #[error("{name} = {value} is not in (0, 0.5)")]
    Level {
        /// `alpha` or `beta`.
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// A root search found no bracket (should not happen for valid inputs).
    #[error("no solution for {0}")]
    NoRoot(String),
}

/// Checks fractions: increasing, in (0, 1], the last 1.
///
/// # Errors
/// [`BoundaryError::Fractions`] naming the fractions otherwise.
pub fn check_fractions(t: &[f64]) -> Result<(), BoundaryError> {
    let ok = !t.is_empty()
        && t.iter().all(|x| x.is_finite() && *x > 0.0 && *x <= 1.0)
        && t.windows(2).all(|w| w[1] - w[0] > 1e-9)
        && (t[t.len() - 1] - 1.0).abs() < 1e-12;
    if ok {
        Ok(())
    } else {
        Err(BoundaryError::Fractions(t.to_vec()))
    }
}

fn check_level(name: &'static str, value: f64) -> Result<(), BoundaryError> {
    if value > 0.0 && value < 0.5 {
        Ok(())
    } else {
        Err(BoundaryError::Level { name, value })
    }
}

/// Efficacy bounds `c_k` and the cumulative α spent at each stage (the spending function's
/// values) for one-sided level `alpha` at fractions `t`.
///
/// # Errors
/// Invalid fractions or level.
pub fn efficacy(t: &[f64], alpha: f64) -> Result<(Vec<f64>, Vec<f64>), BoundaryError> {
    check_fractions(t)?;
    check_level("alpha", alpha)?;
    let mut walk = Walk::new(t, 0.0);
    let mut c = Vec::with_capacity(t.len());
    let mut spent = Vec::with_capacity(t.len());
    let mut before = 0.0;
    for (k, tk) in t.iter().enumerate() {
        let target = obf(alpha, *tk);
        let ck = if k == 0 {
            // From the tail itself: `1 − α(t_1)` rounds to 1 for a small t_1 (α(0.05) ≈ 1e-20).
            -normal::quantile(target)
        } else {
            let need = target - before;
            brent(|x| walk.upper(x) - need, -10.0, 40.0, TOL)
                .ok_or_else(|| BoundaryError::NoRoot(format!("efficacy bound {}", k + 1)))?
        };
        before += walk.upper(ck);
        c.push(ck);
        spent.push(target);
        if k + 1 < t.len() {
            walk.advance(f64::NEG_INFINITY, ck);
        }
    }
    Ok((c, spent))
}

/// The β-spending futility bounds for drift `eta` given efficacy bounds `c` (see the module
/// docs); the last is `+∞` when the paths left before it spend less than β (drift too large).
fn futility_for(t: &[f64], c: &[f64], beta: f64, eta: f64) -> Vec<f64> {
    let kk = t.len();
    let mut f = Vec::with_capacity(kk);
    let mut walk = Walk::new(t, eta);
    let mut before = 0.0;
    for k in 0..kk {
        let need = obf(beta, t[k]) - before;
        let last = k + 1 == kk;
        let cap = if last { 40.0 } else { c[k] };
        let fk = if walk.lower(cap) < need {
            if last { f64::INFINITY } else { c[k] }
        } else {
            brent(|x| walk.lower(x) - need, -40.0, cap, TOL).unwrap_or(cap)
        };
        f.push(fk);
        if last {
            break;
        }
        before += walk.lower(fk);
        if fk >= c[k] {
            // Every path stops here: nothing continues.
            f.extend(std::iter::repeat_n(f64::INFINITY, kk - k - 1));
            break;
        }
        walk.advance(fk, c[k]);
    }
    f
}

/// Non-binding futility bounds: `(f_1..f_{K−1}, η)` with `f_K = c_K` implied, for β (the type-II
/// error at drift η) and efficacy bounds `c` at fractions `t`.
///
/// # Errors
/// Invalid level, or no drift closes the bounds.
pub fn futility(
    t: &[f64],
    c: &[f64],
    beta: f64,
    alpha: f64,
) -> Result<(Vec<f64>, f64), BoundaryError> {
    check_fractions(t)?;
    check_level("beta", beta)?;
    let kk = t.len();
    let gap = |eta: f64| {
        let f = futility_for(t, c, beta, eta);
        f[kk - 1].min(c[kk - 1] + 50.0) - c[kk - 1]
    };
    // The fixed design's drift: the sequential one is at least it (inflation ≥ 1) — widen both
    // ways until the gap changes sign.
    let z0 = normal::quantile(1.0 - alpha) + normal::quantile(1.0 - beta);
    let (mut lo, mut hi) = (z0 * 0.9, z0 * 1.3);
    for _ in 0..20 {
        if gap(lo) < 0.0 {
            break;
        }
        lo *= 0.8;
    }
    for _ in 0..20 {
        if gap(hi) > 0.0 {
            break;
        }
        hi *= 1.2;
    }
    let eta =
        brent(gap, lo, hi, 1e-10).ok_or_else(|| BoundaryError::NoRoot("futility drift".into()))?;
    let mut f = futility_for(t, c, beta, eta);
    f.truncate(kk - 1);
    Ok((f, eta))
}

/// The probability that the design crosses an efficacy bound at drift `eta`, with futility
/// bounds obeyed (`futility` of length K − 1, or empty for none).
pub fn power(t: &[f64], c: &[f64], futility: &[f64], eta: f64) -> f64 {
    let lower = lower_bounds(t.len(), futility);
    exits(t, eta, &lower, c).1.iter().sum()
}

/// The drift at which the efficacy-only design has power `1 − beta`.
///
/// # Errors
/// No drift found (invalid inputs).
pub fn drift_for_power(t: &[f64], c: &[f64], beta: f64) -> Result<f64, BoundaryError> {
    check_level("beta", beta)?;
    brent(|eta| power(t, c, &[], eta) - (1.0 - beta), 0.0, 20.0, 1e-10)
        .ok_or_else(|| BoundaryError::NoRoot("drift for power".into()))
}

/// Lower continuation bounds per stage: the futility bounds, `−∞` where there are none (and
/// at the last stage, where the efficacy bound decides).
pub fn lower_bounds(stages: usize, futility: &[f64]) -> Vec<f64> {
    (0..stages)
        .map(|k| {
            if k + 1 < stages {
                futility.get(k).copied().unwrap_or(f64::NEG_INFINITY)
            } else {
                f64::NEG_INFINITY
            }
        })
        .collect()
}

/// The probability of stopping at each stage at drift `eta` — for efficacy or, where there are
/// futility bounds, for futility; the last stage takes whatever is left.
pub fn stop_probabilities(t: &[f64], c: &[f64], futility: &[f64], eta: f64) -> Vec<f64> {
    let lower = lower_bounds(t.len(), futility);
    let (lo, hi) = exits(t, eta, &lower, c);
    let mut p: Vec<f64> = lo.iter().zip(&hi).map(|(a, b)| a + b).collect();
    let k = p.len() - 1;
    let before: f64 = p[..k].iter().sum();
    p[k] = (1.0 - before).max(0.0);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eq(t: usize) -> Vec<f64> {
        (1..=t).map(|k| k as f64 / t as f64).collect()
    }

    fn close(got: &[f64], want: &[f64], tol: f64) {
        assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < tol, "{got:?} vs {want:?}");
        }
    }

    /// rpact 3.3.4 `getDesignGroupSequential(kMax = K, alpha = 0.025, sided = 1, typeOfDesign =
    /// "asOF")` and the converged values of gsd-reference.md §3 (they differ by < 2e-8).
    #[test]
    fn efficacy_bounds_match_rpact() {
        let cases: [(Vec<f64>, Vec<f64>); 6] = [
            (eq(2), vec![2.962_588_042_73, 1.968_595_640_64]),
            (
                eq(3),
                vec![3.710_302_873_26, 2.511_427_481_27, 1.993_047_477_83],
            ),
            (
                eq(4),
                vec![
                    4.332_633_646_05,
                    2.963_131_597_68,
                    2.359_044_285_30,
                    2.014_090_144_04,
                ],
            ),
            (
                eq(5),
                vec![
                    4.876_884_948_79,
                    3.357_011_921_57,
                    2.680_280_064_55,
                    2.289_816_767_72,
                    2.031_032_043_51,
                ],
            ),
            (
                vec![0.3, 0.55, 0.8, 1.0],
                vec![
                    3.928_572_542_63,
                    2.807_876_856_37,
                    2.276_098_082_82,
                    2.029_244_619_17,
                ],
            ),
            (
                vec![0.25, 0.5, 1.0],
                vec![4.332_633_646_05, 2.963_131_597_68, 1.968_604_317_99],
            ),
        ];
        for (t, want) in cases {
            let (c, spent) = efficacy(&t, 0.025).unwrap();
            close(&c, &want, 1e-6);
            assert!((spent[spent.len() - 1] - 0.025).abs() < 1e-15);
        }
        // The brief's rounded figures.
        let (c, _) = efficacy(&eq(3), 0.025).unwrap();
        close(&c, &[3.710303, 2.511427, 1.993047], 1e-6);
        // The spent α is what the bounds cross under H0.
        let (c, spent) = efficacy(&eq(5), 0.025).unwrap();
        let (_, hi) = exits(&eq(5), 0.0, &[f64::NEG_INFINITY; 5], &c);
        let mut cum = 0.0;
        for (h, s) in hi.iter().zip(&spent) {
            cum += h;
            assert!((cum - s).abs() < 1e-9, "{cum} {s}");
        }
    }

    /// rpact 3.3.4 `typeBetaSpending = "bsOF", beta = 0.2, bindingFutility = FALSE`
    /// (gsd-reference.md §2d; converged values §3).
    #[test]
    fn futility_bounds_and_inflation_match_rpact() {
        let (c, _) = efficacy(&eq(3), 0.025).unwrap();
        let (f, eta) = futility(&eq(3), &c, 0.2, 0.025).unwrap();
        close(&f, &[-0.236_144_607_733, 1.170_372_031_96], 1e-6);
        assert!((eta - 2.944_110_207_16).abs() < 1e-6);
        let z0 = normal::quantile(0.975) + normal::quantile(0.8);
        assert!(((eta / z0).powi(2) - 1.104_334_022_874_28).abs() < 1e-6);
        assert!((power(&eq(3), &c, &f, eta) - 0.8).abs() < 1e-8);

        let (c, _) = efficacy(&eq(5), 0.025).unwrap();
        let (f, eta) = futility(&eq(5), &c, 0.2, 0.025).unwrap();
        close(
            &f,
            &[
                -1.292_147_372_17,
                0.169_704_016_038,
                0.962_504_898_463,
                1.526_493_275_91,
            ],
            1e-6,
        );
        assert!(((eta / z0).powi(2) - 1.155_003_421_375_88).abs() < 1e-6);
        // rpact's futility-stop probabilities under H1, K = 5.
        let (lo, _) = exits(&eq(5), eta, &lower_bounds(5, &f), &c);
        close(
            &lo[..4],
            &[
                0.004_161_719_173_38,
                0.038_571_211_375_59,
                0.055_297_913_957_81,
                0.053_878_951_182_71,
            ],
            1e-7,
        );
    }

    /// Without futility: rpact's inflation factors 1.01279481267116 (K = 3) and
    /// 1.02471989146643 (K = 5).
    #[test]
    fn inflation_without_futility_matches_rpact() {
        let z0 = normal::quantile(0.975) + normal::quantile(0.8);
        for (k, want) in [(3, 1.012_794_812_671_16), (5, 1.024_719_891_466_43)] {
            let (c, _) = efficacy(&eq(k), 0.025).unwrap();
            let eta = drift_for_power(&eq(k), &c, 0.2).unwrap();
            assert!(((eta / z0).powi(2) - want).abs() < 1e-6, "{k}");
        }
    }

    /// rpact's `averageSampleNumber1`/`averageSampleNumber0` of the K = 3 bsOF design,
    /// 0.87520994677452 under H1 and 0.627409515076705 under H0, are expected sample sizes
    /// relative to the *fixed* design: our expected share of the maximum times the inflation
    /// factor.
    #[test]
    fn expected_share_matches_rpact() {
        let t = eq(3);
        let (c, _) = efficacy(&t, 0.025).unwrap();
        let (f, eta) = futility(&t, &c, 0.2, 0.025).unwrap();
        let z0 = normal::quantile(0.975) + normal::quantile(0.8);
        let inflation = (eta / z0).powi(2);
        let share = |eta: f64| -> f64 {
            stop_probabilities(&t, &c, &f, eta)
                .iter()
                .zip(&t)
                .map(|(p, tk)| p * tk)
                .sum()
        };
        assert!((share(eta) * inflation - 0.875_209_946_774_52).abs() < 1e-6);
        assert!((share(0.0) * inflation - 0.627_409_515_076_705).abs() < 1e-6);
    }

    #[test]
    fn refuses_bad_fractions_and_levels() {
        assert!(efficacy(&[0.5, 0.5, 1.0], 0.025).is_err());
        assert!(efficacy(&[0.5, 0.9], 0.025).is_err());
        assert!(efficacy(&[0.5, 1.0], 0.6).is_err());
        assert!(efficacy(&[], 0.025).is_err());
    }

    /// A first look at 5 % of the information spends ~1e-20: its bound is finite (≈ 9.2), not
    /// the `+∞` of `Φ⁻¹(1 − α(t_1))` in floating point, and the futility drift is found.
    #[test]
    fn an_early_first_look_keeps_a_finite_bound() {
        let t = [
            0.056_832_565_907_534_86,
            0.587_963_897_170_372_3,
            0.644_796_463_077_907_2,
            1.0,
        ];
        let (c, _) = efficacy(&t, 0.025).unwrap();
        assert!(c[0].is_finite() && c[0] > 9.0 && c[0] < 9.5, "{c:?}");
        let want = normal::quantile(0.9875) / t[0].sqrt();
        assert!((normal::sf(c[0]) / normal::sf(want) - 2.0).abs() < 1e-9);
        assert!(futility(&t, &c, 0.2, 0.025).is_ok());
    }
}
