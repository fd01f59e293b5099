//! Lan–DeMets spending functions of O'Brien–Fleming type (Lan & DeMets 1983, "Discrete
//! sequential boundaries for clinical trials", Biometrika 70:659–663), as rpact implements them
//! (`getSpendingValueCpp`, types `asOF` and `bsOF`) and gsDesign's `sfLDOF`:
//!
//! - α-spending, one-sided level α: `α(t) = 2 − 2Φ(z_{1−α/2}/√t)`; for α = 0.025 the constant is
//!   z_{0.9875} = 2.2414. rpact's two-sided α = 0.05 design is this on each side.
//! - β-spending: `β(t) = 2 − 2Φ(z_{1−β/2}/√t)`.
//!
//! `t` is the information fraction in (0, 1]; both reach their level at t = 1.

use super::normal;

/// The cumulative α (or β) an O'Brien–Fleming-type spending function of `level` has spent at
/// information fraction `t` (0 at t ≤ 0, `level` at t ≥ 1).
pub fn obf(level: f64, t: f64) -> f64 {
    if t <= 0.0 {
        return 0.0;
    }
    if t >= 1.0 {
        return level;
    }
    2.0 * normal::sf(normal::quantile(1.0 - level / 2.0) / t.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact spending values of gsd-reference.md §2e (`spending_values.py`).
    #[test]
    fn matches_the_reference_spending_values() {
        let k3 = [0.000_103_505_718_147_154, 0.006_048_389_129_907_64, 0.025];
        for (i, want) in k3.iter().enumerate() {
            let t = (i + 1) as f64 / 3.0;
            assert!((obf(0.025, t) - want).abs() < 1e-15 + 1e-11 * want, "{t}");
        }
        let k5 = [
            5.388_712_629_058_75e-7,
            0.000_394_151_756_691_186,
            0.003_808_063_310_989_33,
            0.012_211_790_346_448_1,
        ];
        for (i, want) in k5.iter().enumerate() {
            let t = (i + 1) as f64 / 5.0;
            assert!((obf(0.025, t) / want - 1.0).abs() < 1e-10, "{t}");
        }
        let b3 = [0.026_438_294_941_813_4, 0.116_514_319_352_611, 0.2];
        for (i, want) in b3.iter().enumerate() {
            let t = (i + 1) as f64 / 3.0;
            assert!((obf(0.2, t) - want).abs() < 1e-13, "{t}");
        }
    }

    #[test]
    fn rises_from_zero_to_the_level() {
        let mut last = 0.0;
        for i in 1..=100 {
            let v = obf(0.025, i as f64 / 100.0);
            assert!(v >= last && v <= 0.025);
            last = v;
        }
        assert_eq!(obf(0.025, 0.0), 0.0);
        assert_eq!(obf(0.025, 1.0), 0.025);
    }
}
