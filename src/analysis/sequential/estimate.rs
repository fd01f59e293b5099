//! The estimate and confidence interval of a paired effect after a group-sequential design
//! stopped, adjusted for the stopping: the **stage-wise ordering** (Armitage 1957; Tsiatis,
//! Rosner & Mehta 1984; Jennison & Turnbull 2000, "Group Sequential Methods with Applications to
//! Clinical Trials", §8.4), as rpact's `getFinalConfidenceInterval` computes it.
//!
//! Outcomes are ordered by the stage they stop at (earlier efficacy stops are more extreme), then
//! by `Z` within a stage. For a stop at stage `m` with statistic `z_m`,
//! `P(η) = Σ_{j<m} P_η(reach j, Z_j ≥ c_j) + P_η(reach m, Z_m ≥ z_m)` (futility bounds are
//! non-binding and ignored, as rpact does). `P` increases with the drift `η`. The p-value is
//! `P(0)`; the **median-unbiased estimate** solves `P = ½`; the `1 − 2α` interval is
//! `[P = α, P = 1 − α]` (a two-sided 95 % interval for α = 0.025). Drift is put on the data's
//! scale by `Δ = η·√t_m·se_m` (`se_m` the standard error of the mean difference at the stop), so
//! `E[Z_j] = Δ/se_m·√(t_j/t_m)` — the planned fractions for earlier stages, the observed standard
//! error at the stop (rpact's convention). Stopped at stage 1, this is the fixed-sample interval.

use super::boundaries::BoundaryError;
use super::design::Design;
use super::normal;
use super::recursion::Walk;
use super::roots::brent;

/// The estimate after stopping, on the scale of the mean paired difference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Adjusted {
    /// The 0-based stage the design stopped at.
    pub stage: usize,
    /// The naive estimate `d̄_m` (biased away from 0 by early stopping).
    pub naive: f64,
    /// The naive `1 − 2α` interval `d̄_m ± z_{1−α}·se_m`.
    pub naive_ci: (f64, f64),
    /// The median-unbiased estimate (stage-wise ordering).
    pub median_unbiased: f64,
    /// The stage-wise-ordering `1 − 2α` confidence interval.
    pub ci: (f64, f64),
    /// The stage-wise-ordering one-sided p-value for H0: Δ ≤ 0.
    pub p_value: f64,
}

/// `P(η)` of the module docs for a stop at 0-based `stage` with statistic `z`.
pub fn stagewise_probability(design: &Design, stage: usize, z: f64, eta: f64) -> f64 {
    let t = &design.fractions[..=stage];
    let mut walk = Walk::new(t, eta);
    let mut p = 0.0;
    for k in 0..stage {
        p += walk.upper(design.efficacy[k]);
        walk.advance(f64::NEG_INFINITY, design.efficacy[k]);
    }
    p + walk.upper(z)
}

/// The stopping-adjusted estimate for a stop at 0-based `stage` with cumulative statistic `z`
/// and standard error `se` of the mean difference at that stage (see the module docs).
///
/// # Errors
/// `z` or `se` not finite and positive (`se`), or no root found.
pub fn adjusted(design: &Design, stage: usize, z: f64, se: f64) -> Result<Adjusted, BoundaryError> {
    if !z.is_finite() || !se.is_finite() || se <= 0.0 || stage >= design.stages() {
        return Err(BoundaryError::NoRoot(format!(
            "adjusted estimate at stage {} with z = {z}, se = {se}",
            stage + 1
        )));
    }
    let tm = design.fractions[stage];
    let scale = tm.sqrt() * se;
    let centre = z / tm.sqrt();
    let half = 15.0 / design.fractions[0].sqrt();
    let solve = |target: f64| {
        brent(
            |eta| stagewise_probability(design, stage, z, eta) - target,
            centre - half,
            centre + half,
            1e-9,
        )
        .map(|eta| eta * scale)
        .ok_or_else(|| BoundaryError::NoRoot(format!("stage-wise ordering P = {target}")))
    };
    let alpha = design.alpha;
    let lower = solve(alpha)?;
    let upper = solve(1.0 - alpha)?;
    let mue = solve(0.5)?;
    let naive = z * se;
    let zq = normal::quantile(1.0 - alpha);
    Ok(Adjusted {
        stage,
        naive,
        naive_ci: (naive - zq * se, naive + zq * se),
        median_unbiased: mue,
        ci: (lower, upper),
        p_value: stagewise_probability(design, stage, z, 0.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// gsd-reference.md §2f: K = 3, stop at stage 2 with Z = 2.9, N = 40, sd = 1 (rpact 3.3.4
    /// `getFinalConfidenceInterval`, normalApproximation = TRUE; tolerance 1e-6 there).
    #[test]
    fn matches_rpact_final_interval() {
        let d = Design::obrien_fleming(&Design::equal_fractions(3), 0.025, 0.2, false).unwrap();
        let se = 1.0 / 40f64.sqrt();
        let a = adjusted(&d, 1, 2.9, se).unwrap();
        assert!((a.p_value - 0.001_923_752_740_236_71).abs() < 1e-7, "{a:?}");
        assert!((a.ci.0 - 0.147_702_821_451_2).abs() < 1e-6, "{a:?}");
        assert!((a.ci.1 - 0.768_128_187_382_203).abs() < 1e-6, "{a:?}");
        assert!(
            (a.median_unbiased - 0.458_063_859_065_759).abs() < 1e-6,
            "{a:?}"
        );
        assert!((a.naive - 0.458_530_260_724_415).abs() < 1e-12);
        // Stopped at stage 1: the fixed-sample interval.
        let a = adjusted(&d, 0, 3.9, se).unwrap();
        assert!((a.median_unbiased - a.naive).abs() < 1e-8);
        assert!((a.ci.0 - a.naive_ci.0).abs() < 1e-8 && (a.ci.1 - a.naive_ci.1).abs() < 1e-8);
        assert!(adjusted(&d, 1, f64::INFINITY, se).is_err());
    }
}
