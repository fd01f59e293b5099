//! Property tests of the sequential designs over random stage counts and information fractions
//! (`proptest`):
//!
//! - O'Brien–Fleming efficacy bounds decrease from stage to stage;
//! - the cumulative α spent is increasing and never above α;
//! - the type-I error of the design under the null, by the recursion, is α within 1e-6 (and the
//!   futility bounds, being non-binding, do not change the efficacy bounds);
//! - futility bounds lie below the efficacy bounds;
//! - the stopping-adjusted interval contains the median-unbiased estimate.

use proptest::prelude::*;

use super::design::Design;
use super::estimate::adjusted;

/// Increasing fractions in (0, 1] ending at 1, at least 0.08 apart.
fn fractions() -> impl Strategy<Value = Vec<f64>> {
    (2usize..=5)
        .prop_flat_map(|k| prop::collection::vec(0.08f64..1.0, k - 1))
        .prop_map(|mut gaps| {
            let total: f64 = gaps.iter().sum::<f64>() + 0.5;
            gaps.push(0.5);
            let mut acc = 0.0;
            let mut t: Vec<f64> = gaps
                .iter()
                .map(|g| {
                    acc += g / total;
                    acc
                })
                .collect();
            *t.last_mut().unwrap() = 1.0;
            t
        })
        .prop_filter("fractions at least 0.02 apart", |t| {
            t.windows(2).all(|w| w[1] - w[0] > 0.02) && t[0] > 0.02
        })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn designs_keep_their_invariants(t in fractions(), equal in any::<bool>(), futility in any::<bool>()) {
        let t = if equal { Design::equal_fractions(t.len()) } else { t };
        let d = Design::obrien_fleming(&t, 0.025, 0.2, futility).unwrap();
        for w in d.efficacy.windows(2) {
            prop_assert!(w[1] < w[0], "bounds not decreasing: {:?} at {:?}", d.efficacy, t);
        }
        let mut last = 0.0;
        for a in &d.alpha_spent {
            prop_assert!(*a >= last && *a <= 0.025 + 1e-15, "{:?}", d.alpha_spent);
            last = *a;
        }
        let type_one = d.rejection_probability(0.0);
        prop_assert!((type_one - 0.025).abs() < 1e-6, "type-I error {} at {:?}", type_one, t);
        for (k, f) in d.futility.iter().enumerate() {
            prop_assert!(*f <= d.efficacy[k], "{:?} {:?}", d.futility, d.efficacy);
        }
        prop_assert!(d.inflation >= 1.0);
    }

    #[test]
    fn the_adjusted_interval_contains_the_median_unbiased_estimate(
        stage in 0usize..3,
        z in -3.0f64..5.0,
        se in 0.01f64..0.5,
    ) {
        let d = Design::obrien_fleming(&Design::equal_fractions(3), 0.025, 0.2, true).unwrap();
        // A stop at an interim stage is an efficacy crossing or below it (a futility stop).
        let z = if stage < 2 { z.min(d.efficacy[stage] + 1.0) } else { z };
        let a = adjusted(&d, stage, z, se).unwrap();
        prop_assert!(a.ci.0 < a.median_unbiased && a.median_unbiased < a.ci.1, "{:?}", a);
        prop_assert!(a.p_value > 0.0 && a.p_value < 1.0);
    }
}
