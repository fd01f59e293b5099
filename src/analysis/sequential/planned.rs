//! The sequential design `skillscope plan` prints for a comparison: stages of a plan's trials,
//! their information fractions from the plan's variance components, the bounds on the z-scale
//! and as a Δ in percentage points, and the trials the design is expected to save.

use serde::Serialize;

use super::boundaries::BoundaryError;
use super::design::{Design, fractions_for_trials};
use super::replay::stage_trials;
use crate::analysis::power::Components;

/// One stage of a planned design.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedStage {
    /// Trials per task and condition at this look.
    pub trials: usize,
    /// Information fraction.
    pub fraction: f64,
    /// Efficacy bound, z.
    pub efficacy_z: f64,
    /// The Δ it takes to cross it at the planned information, percentage points.
    pub efficacy_pp: f64,
    /// Futility bound, z (None without one at this stage).
    pub futility_z: Option<f64>,
    /// The Δ at or below which the comparison stops for futility, pp.
    pub futility_pp: Option<f64>,
}

/// A planned sequential design for one comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedDesign {
    /// Stages.
    pub stages: Vec<PlannedStage>,
    /// Non-binding futility bounds in use.
    pub futility: bool,
    /// Expected share of the comparison's trials used when there is no effect.
    pub share_null: f64,
    /// Expected share used at the effect the design has 80 % power for.
    pub share_powered: f64,
    /// That effect, pp (`η·se` at all trials).
    pub powered_effect_pp: f64,
}

/// The design of a comparison over `n` tasks × `k` trials per task and condition with variance
/// components `c` (ω² = `c.between`, σ²_A + σ²_B = `c.within_sum()`), in `stages` stages
/// (stage s at ⌊s·k/K⌋ trials), one-sided α = 0.025, β = 0.2, with non-binding futility when
/// `futility`. The Δ of a bound is `z·se_s`, `se_s = se_K/√t_s` (= `√((ω² + σ²/k_s)/n)` when
/// σ² is known; without it the fractions are `k_s/K`, [`fractions_for_trials`]).
///
/// # Errors
/// More stages than trials ([`BoundaryError::Fractions`]).
pub fn planned(
    c: &Components,
    n: usize,
    k: u32,
    stages: usize,
    futility: bool,
) -> Result<PlannedDesign, BoundaryError> {
    let ks = stage_trials(k as usize, stages.max(1));
    let ks32: Vec<u32> = ks.iter().map(|x| *x as u32).collect();
    let t = fractions_for_trials(c.between, c.within_sum(), &ks32);
    if ks.first() == Some(&0) {
        return Err(BoundaryError::Fractions(t));
    }
    let design = Design::obrien_fleming(&t, 0.025, 0.2, futility)?;
    // The SE at stage s is se_K/√t_s: √((ω² + σ²/k_s)/n) when the trial noise is known, and
    // consistent with the trial-proportional fractions when it is not.
    let se_max = c.var_of_mean(n, k).sqrt() * 100.0;
    let out: Vec<PlannedStage> = ks
        .iter()
        .enumerate()
        .map(|(s, kk)| {
            let f = if s + 1 < ks.len() {
                design.futility.get(s).copied()
            } else {
                None
            };
            PlannedStage {
                trials: *kk,
                fraction: t[s],
                efficacy_z: design.efficacy[s],
                efficacy_pp: design.efficacy[s] * se_max / t[s].sqrt(),
                futility_z: f,
                futility_pp: f.map(|f| f * se_max / t[s].sqrt()),
            }
        })
        .collect();
    let share: Vec<f64> = ks.iter().map(|x| *x as f64 / f64::from(k)).collect();
    Ok(PlannedDesign {
        futility: !design.futility.is_empty(),
        share_null: design.expected_share(0.0, &share),
        share_powered: design.expected_share(design.drift, &share),
        powered_effect_pp: design.drift * se_max,
        stages: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_in_pp_and_savings() {
        let c = Components {
            n_tasks: 80,
            mean_diff: 0.1,
            var_diff: 0.2,
            within_a: Some(0.1),
            within_b: Some(0.1),
            between: 0.1,
        };
        let p = planned(&c, 80, 5, 3, true).unwrap();
        assert_eq!(
            p.stages.iter().map(|s| s.trials).collect::<Vec<_>>(),
            vec![1, 3, 5]
        );
        // Var(d) at k = 1, 3, 5: 0.3, 0.1667, 0.14 → t = 0.4667, 0.84, 1.
        assert!((p.stages[0].fraction - 0.14 / 0.3).abs() < 1e-12);
        let se1 = (0.3f64 / 80.0).sqrt() * 100.0;
        assert!((p.stages[0].efficacy_pp - p.stages[0].efficacy_z * se1).abs() < 1e-9);
        // Trial noise unknown: fractions k/K, and the Δ still follows se_K/√t.
        let bound = Components {
            within_a: None,
            within_b: None,
            ..c
        };
        let q = planned(&bound, 80, 5, 3, true).unwrap();
        assert!((q.stages[0].fraction - 0.2).abs() < 1e-12);
        let se_k = (0.1f64 / 80.0).sqrt() * 100.0;
        assert!(
            (q.stages[0].efficacy_pp - q.stages[0].efficacy_z * se_k / 0.2f64.sqrt()).abs() < 1e-9
        );
        assert!(p.stages[2].futility_z.is_none() && p.stages[0].futility_z.is_some());
        assert!(p.share_null < 1.0 && p.share_powered < 1.0 && p.share_null > 0.2);
        let fixed = planned(&c, 80, 5, 3, false).unwrap();
        assert!(fixed.share_null > p.share_null);
        assert!(planned(&c, 80, 2, 3, true).is_err());
    }
}
