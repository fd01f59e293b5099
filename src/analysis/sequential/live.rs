//! The design the engine applies while a run is under way, and one look at a stage boundary.
//!
//! **Design.** The engine does not know the run's variance components before it starts, so its
//! information fractions are the trial-proportional `k_s/n` ([`super::design::fractions_for_trials`]'s
//! fallback; stage `s` at `k_s = ⌊s·n/K⌋` trials per task and condition,
//! [`super::replay::stage_trials`]). With SkillsBench's heterogeneous tasks the true fraction at
//! an early stage is larger than `k_s/n`, so the early bounds are those of a smaller fraction:
//! higher, and the design stops a little later than it could, never more often under the null.
//!
//! **Statistic.** The paired z of the per-task differences of mean reward over the stage's
//! trials ([`resolved_z`]): as [`super::design::paired_z`], except when every task shows the same
//! difference (`s_d = 0`). Then the plain statistic is ±∞ — a certain answer from, say, two tasks
//! that each moved by one trial. Instead the variance is floored at the resolution of the data:
//! the sample variance the differences would have if one trial of one task had gone the other way,
//! `s_d² ≥ 1/(k²·n)` (a per-task difference moves by `1/k` when one of its `k` trials flips, and
//! `n` values of which one differs by `δ` have sample variance `δ²/n`), so
//! `|Z| ≤ |d̄|·k·n`. With 3 tasks and one trial each, all moved by +1, Z = 3 (below every
//! O'Brien–Fleming efficacy bound at an early stage of 5); at two trials, Z = 6.

use super::design::{Decision, Design, evaluate};
use super::estimate::{Adjusted, adjusted};
use super::replay::stage_trials;

/// One-sided α of the engine's designs.
pub const ALPHA: f64 = 0.025;
/// β of their non-binding futility bounds.
pub const BETA: f64 = 0.2;

/// The engine's design over `n_trials` trials per task and condition in `stages` stages: fractions
/// `k_s/n`, O'Brien–Fleming efficacy bounds at one-sided α = [`ALPHA`], non-binding futility
/// bounds at β = [`BETA`]. Returns the design and the trials per task at each stage.
///
/// # Errors
/// More stages than trials (a stage of 0 trials), or no stage.
pub fn engine_design(n_trials: u32, stages: usize) -> Result<(Design, Vec<u32>), String> {
    let ks: Vec<u32> = stage_trials(n_trials as usize, stages)
        .into_iter()
        .map(|k| k as u32)
        .collect();
    if stages == 0 || ks.first().is_none_or(|k| *k == 0) {
        return Err(format!(
            "{stages} stages need at least {stages} trials per task and condition, the run has {n_trials}"
        ));
    }
    let t: Vec<f64> = ks
        .iter()
        .map(|k| f64::from(*k) / f64::from(n_trials))
        .collect();
    let design = Design::obrien_fleming(&t, ALPHA, BETA, true).map_err(|e| e.to_string())?;
    Ok((design, ks))
}

/// The paired statistic of per-task differences `d` over `k` trials per task and condition:
/// `(d̄, se, Z)` with `se = s_d/√n`, and `s_d² ≥ 1/(k²·n)` when every difference is equal (see
/// the module docs); Z is NaN with fewer than 2 tasks.
pub fn resolved_z(d: &[f64], k: u32) -> (f64, f64, f64) {
    let n = d.len() as f64;
    if d.len() < 2 {
        return (d.first().copied().unwrap_or(f64::NAN), f64::NAN, f64::NAN);
    }
    let mean = d.iter().sum::<f64>() / n;
    let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let floor = 1.0 / (f64::from(k.max(1)).powi(2) * n);
    let var = if var > 0.0 { var } else { floor };
    let se = (var / n).sqrt();
    (mean, se, mean / se)
}

/// One look of the engine at a stage boundary.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveLook {
    /// 0-based stage.
    pub stage: usize,
    /// Trials per task and condition used.
    pub trials: u32,
    /// Tasks compared (those with a reward in both conditions).
    pub n_tasks: usize,
    /// Mean per-task difference (with − without), a fraction.
    pub mean_diff: f64,
    /// Its standard error.
    pub se: f64,
    /// The statistic ([`resolved_z`]).
    pub z: f64,
    /// The decision ([`evaluate`]).
    pub decision: Decision,
    /// The stopping-adjusted estimate when the look stops the comparison (None while it goes on,
    /// or when it cannot be computed).
    pub adjusted: Option<Adjusted>,
}

/// The look of `design` at 0-based `stage` (`k` trials per task) over per-task rewards
/// `(with, without)` (each task's rewards of its trials with index ≤ k that have one; a task
/// without a reward on either side is left out).
pub fn look(design: &Design, stage: usize, k: u32, tasks: &[(Vec<f64>, Vec<f64>)]) -> LiveLook {
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let d: Vec<f64> = tasks
        .iter()
        .filter(|(w, wo)| !w.is_empty() && !wo.is_empty())
        .map(|(w, wo)| mean(w) - mean(wo))
        .collect();
    let (mean_diff, se, z) = resolved_z(&d, k);
    let decision = evaluate(design, stage, z);
    let adjusted = if decision.stops() {
        adjusted(design, stage, z, se).ok()
    } else {
        None
    };
    LiveLook {
        stage,
        trials: k,
        n_tasks: d.len(),
        mean_diff,
        se,
        z,
        decision,
        adjusted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_variance_is_floored_at_one_flipped_trial() {
        let (m, se, z) = resolved_z(&[1.0, 1.0, 1.0], 1);
        assert_eq!(m, 1.0);
        assert!((z - 3.0).abs() < 1e-12, "{z}");
        assert!((se - 1.0 / 3.0).abs() < 1e-12);
        assert!((resolved_z(&[1.0, 1.0, 1.0], 2).2 - 6.0).abs() < 1e-12);
        assert_eq!(resolved_z(&[0.0, 0.0], 1).2, 0.0);
        assert!(resolved_z(&[0.5], 1).2.is_nan());
        // With variance, the plain paired z.
        let d = [0.0, 1.0, 0.5, 0.5];
        assert_eq!(resolved_z(&d, 3).2, super::super::design::paired_z(&d).2);
    }

    #[test]
    fn engine_design_is_trial_proportional() {
        let (d, ks) = engine_design(5, 5).unwrap();
        assert_eq!(ks, vec![1, 2, 3, 4, 5]);
        // Equally spaced K = 5 (docs/scoring.md, rpact): 4.8769, 3.3570, 2.6803, 2.2898, 2.0310.
        assert!((d.efficacy[1] - 3.3570).abs() < 1e-3, "{:?}", d.efficacy);
        assert!(engine_design(2, 3).is_err());
        assert!(engine_design(3, 0).is_err());
    }

    #[test]
    fn a_look_decides_and_estimates_at_a_stop() {
        let (d, _) = engine_design(5, 5).unwrap();
        // 3 tasks, all moved by +1 at one trial: Z = 3 < 4.88, continue.
        let one = vec![(vec![1.0], vec![0.0]); 3];
        let l = look(&d, 0, 1, &one);
        assert!(!l.decision.stops() && l.adjusted.is_none(), "{l:?}");
        // Two trials: Z = 6 ≥ 3.357, efficacy, with an adjusted estimate inside its CI.
        let two = vec![(vec![1.0, 1.0], vec![0.0, 0.0]); 3];
        let l = look(&d, 1, 2, &two);
        assert!(matches!(l.decision, Decision::StopEfficacy { .. }), "{l:?}");
        let a = l.adjusted.unwrap();
        assert!(a.ci.0 <= a.median_unbiased && a.median_unbiased <= a.ci.1);
        // A task without a reward on one side is left out.
        let mut gap = two.clone();
        gap.push((vec![], vec![1.0]));
        assert_eq!(look(&d, 1, 2, &gap).n_tasks, 3);
    }
}
