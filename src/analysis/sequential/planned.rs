//! The sequential design `skillscope plan` prints for a comparison: the design the experiment
//! fixes ([`super::design::spec`], the same the engine applies), its stages with the α spent at
//! each, the bounds on the z-scale and as a Δ in percentage points at the plan's variance
//! components, whether the sign-flip test can show an effect there with the plan's tasks, and
//! the trials the design is expected to save.

use serde::Serialize;

use super::boundaries::BoundaryError;
use super::design::Design;
use super::signflip::rejectable;
use crate::analysis::power::Components;
use crate::domain::sequential::{DesignSpec, Statistic};

/// One stage of a planned design.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedStage {
    /// Trials per task and condition at this look.
    pub trials: usize,
    /// Information fraction the α is spent at.
    pub fraction: f64,
    /// Cumulative one-sided α spent by this stage.
    pub alpha_spent: f64,
    /// Efficacy bound, z, in large samples (the sign-flip bound's normal limit).
    pub efficacy_z: f64,
    /// The Δ it takes to cross it at the planned variance, percentage points:
    /// `z·√((ω² + σ²/k_s)/n)`.
    pub efficacy_pp: f64,
    /// Whether the sign-flip test can show an effect by this stage with the plan's tasks
    /// (`⌊α(t_s)·B⌋ ≥ 1` over its `B` flips).
    pub efficacy_possible: bool,
    /// Futility bound, z (None without one at this stage).
    pub futility_z: Option<f64>,
    /// The Δ at or below which the comparison stops for futility, pp.
    pub futility_pp: Option<f64>,
}

/// The power `plan` quotes the expected share of trials at: the effect the efficacy bounds
/// detect with this probability (a reference point, not the design's β, which sets its
/// futility bounds).
pub const POWER: f64 = 0.8;

/// A planned sequential design for one comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedDesign {
    /// The design as the experiment would fix it.
    pub spec: DesignSpec,
    /// Stages.
    pub stages: Vec<PlannedStage>,
    /// Tasks compared.
    pub n_tasks: usize,
    /// Expected share of the comparison's trials used when there is no effect.
    pub share_null: f64,
    /// Expected share used at the effect the design's efficacy bounds have 80 % power for
    /// ([`POWER`], futility ignored as non-binding).
    pub share_powered: f64,
    /// That effect, pp (`η·√((ω² + σ²/n)/N)`).
    pub powered_effect_pp: f64,
}

/// The design `spec` over `n` tasks for a comparison with variance components `c`
/// (ω² = `c.between`, σ²_A + σ²_B = `c.within_sum()`). The Δ of a bound at stage `s` is
/// `z·se_s` with `se_s = √((ω² + σ²/k_s)/n)` (docs/scoring.md, "Plan"); without a measured σ²
/// every stage has the bound's SE at all trials (`binary_bound` puts all variance between tasks).
///
/// # Errors
/// The design's bounds cannot be computed ([`BoundaryError`]).
pub fn planned(
    c: &Components,
    n: usize,
    spec: &DesignSpec,
) -> Result<PlannedDesign, BoundaryError> {
    let design = Design::of(spec)?;
    let powered =
        super::boundaries::drift_for_power(&design.fractions, &design.efficacy, 1.0 - POWER)?;
    let last = f64::from(*spec.stage_trials.last().unwrap_or(&1));
    let flips = match spec.statistic {
        Statistic::SignFlip { flips, .. } => {
            if n < usize::BITS as usize && (1usize << n) <= flips as usize {
                1usize << n
            } else {
                flips as usize
            }
        }
        Statistic::PairedZ => usize::MAX,
    };
    let se = |k: u32| c.var_of_mean(n, k).sqrt() * 100.0;
    let stages = spec
        .stage_trials
        .iter()
        .enumerate()
        .map(|(s, k)| {
            let f = if s + 1 < spec.stages {
                design.futility_bound(s)
            } else {
                None
            };
            PlannedStage {
                trials: *k as usize,
                fraction: spec.fractions[s],
                alpha_spent: design.alpha_spent[s],
                efficacy_z: design.efficacy[s],
                efficacy_pp: design.efficacy[s] * se(*k),
                efficacy_possible: rejectable(design.alpha_spent[s], flips) >= 1,
                futility_z: f,
                futility_pp: f.map(|f| f * se(*k)),
            }
        })
        .collect();
    let share: Vec<f64> = spec
        .stage_trials
        .iter()
        .map(|k| f64::from(*k) / last)
        .collect();
    Ok(PlannedDesign {
        spec: spec.clone(),
        n_tasks: n,
        share_null: design.expected_share(0.0, &share),
        share_powered: design.expected_share(powered, &share),
        powered_effect_pp: powered * se(last as u32),
        stages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::power::binary_bound;
    use crate::analysis::sequential::design::spec;

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
        let s = spec(
            5,
            3,
            &crate::analysis::sequential::design::Choices::with_futility(Some(2)),
        )
        .unwrap();
        let p = planned(&c, 80, &s).unwrap();
        assert_eq!(
            p.stages.iter().map(|s| s.trials).collect::<Vec<_>>(),
            vec![1, 3, 5]
        );
        // The fractions are the design's (planned at ρ = 1.9), whatever the variance components.
        assert_eq!(p.stages[0].fraction, s.fractions[0]);
        assert!((p.stages[0].fraction - 1.38 / 2.9).abs() < 1e-12);
        // Var(d) at k = 1: 0.1 + 0.2 = 0.3.
        let se1 = (0.3f64 / 80.0).sqrt() * 100.0;
        assert!((p.stages[0].efficacy_pp - p.stages[0].efficacy_z * se1).abs() < 1e-9);
        assert!(p.stages[0].futility_z.is_none() && p.stages[1].futility_z.is_some());
        assert!(p.stages[2].futility_z.is_none());
        assert!(p.stages.iter().all(|s| s.efficacy_possible));
        assert!(p.share_null < 1.0 && p.share_powered < 1.0 && p.share_null > 0.2);
        let fixed = planned(
            &c,
            80,
            &spec(
                5,
                3,
                &crate::analysis::sequential::design::Choices::with_futility(None),
            )
            .unwrap(),
        )
        .unwrap();
        assert!(fixed.share_null > p.share_null);
    }

    /// Without trial noise measured (no data: the binary bound), a bound's Δ is `z·√(v/n)` at
    /// every stage — not `se_K/√t_s` (issue 47: +169.9 pp printed for 85.0).
    #[test]
    fn without_data_the_delta_follows_the_docs_formula() {
        let c = binary_bound(0.25, 0.45);
        let s = spec(
            3,
            3,
            &crate::analysis::sequential::design::Choices::with_futility(None),
        )
        .unwrap();
        let p = planned(&c, 6, &s).unwrap();
        let se = (c.between / 6.0).sqrt() * 100.0;
        for st in &p.stages {
            assert!((st.efficacy_pp - st.efficacy_z * se).abs() < 1e-9, "{st:?}");
        }
        // 6 tasks: 64 flips; ⌊α(0.56)·64⌋ = ⌊0.0028·64⌋ = 0: no effect can be shown at stage 1;
        // by the last stage ⌊0.025·64⌋ = 1.
        assert!(!p.stages[0].efficacy_possible && p.stages[2].efficacy_possible);
    }
}
