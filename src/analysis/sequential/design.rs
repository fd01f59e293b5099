//! A group-sequential design for one paired comparison and the decision at a look.
//!
//! The statistic at stage `k` is the cumulative paired z: with `d_i` the per-task difference of
//! pass rates (condition B − condition A, over the trials run so far) for `n` tasks,
//! `Z_k = d̄·√n / s_d` (rpact's one-sample `normalApproximation = TRUE`). The design is one-sided
//! ("B beats A"): efficacy when `Z_k ≥ c_k`, futility (non-binding) when `Z_k ≤ f_k`.
//!
//! **One design.** [`spec`] makes the design a run or an experiment fixes when it is created
//! ([`DesignSpec`]: stages, the trials at each, the fractions the α is spent at, α, β, the futility
//! rule, the statistic, the fewest tasks it can judge) and [`Design::of`] computes its bounds;
//! `plan`, the engine, `status`, the report and `replay` all go through them. At a look the
//! efficacy bound applied is the sign-flip bound of the data ([`super::signflip`]); the
//! [`Design::efficacy`] bounds here are its normal limit, which `plan` prints.

use super::boundaries::{self, BoundaryError};
use super::normal;
use crate::domain::sequential::{
    DesignRow, DesignSpec, LookDecision, LookWhy, SequentialPlan, Spending, Statistic,
};

/// One-sided α of skillscope's designs.
pub const ALPHA: f64 = 0.025;
/// β of the design: its drift is the effect it detects with power `1 − β`, and its futility
/// bounds spend β (O'Brien–Fleming type). 0.01 keeps the futility stop cautious: chosen on the
/// published registry over 1,000 random trial orders, where it loses a fixed-design effect in
/// 0.74 % of (order, configuration) pairs at a mean share of trials of 0.514 (docs/scoring.md,
/// "Futility", the table of the options tried).
pub const BETA: f64 = 0.01;
/// Flips in the sign-flip reference set: every flip up to 16 tasks, else the identity and
/// 65,535 drawn ones.
pub const FLIPS: u32 = 65_536;
/// The seed of the drawn flips (the issue that brought them in).
pub const SEED: u64 = 47;
/// The stage from which the futility bounds apply by default (1-based; docs/scoring.md,
/// "Futility", the table of options tried on the published registry).
pub const FUTILITY_FROM: Option<usize> = Some(2);
/// The trial noise a design plans for, relative to the spread of the true per-task effects:
/// `ρ = (σ²_A + σ²_B)/ω²`, the median over the 18 configurations of the published SkillsBench
/// registry (docs/scoring.md, "Information fractions"). It sets the planned fractions
/// ([`planned_fractions`]); the sign-flip test stays exact whatever the true ratio.
pub const NOISE_RATIO: f64 = 1.9;

/// The choices a design is made with besides its stages and trials.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Choices {
    /// β at the design drift, and of the futility bounds' β-spending.
    pub beta: f64,
    /// The 1-based stage the futility bounds apply from (`None`: no futility stop).
    pub futility_from: Option<usize>,
    /// The planned noise ratio ρ of the fractions ([`NOISE_RATIO`]; `∞`: `k_s/n`).
    pub noise_ratio: f64,
}

impl Default for Choices {
    /// [`BETA`], [`FUTILITY_FROM`], [`NOISE_RATIO`].
    fn default() -> Choices {
        Choices {
            beta: BETA,
            futility_from: FUTILITY_FROM,
            noise_ratio: NOISE_RATIO,
        }
    }
}

impl Choices {
    /// The defaults with futility from `from` (`None`: none).
    pub fn with_futility(from: Option<usize>) -> Choices {
        Choices {
            futility_from: from,
            ..Choices::default()
        }
    }
}

/// The information fractions a design plans at `k_s` trials per task of `n`, for a noise ratio
/// `ρ = σ²/ω²`: the variance of a task's difference at `k` trials is `ω² + σ²/k`, so
/// `t_s = (1 + ρ/n)/(1 + ρ/k_s)` ([`fractions_for_trials`] with `ω² = 1`, `σ² = ρ`); `k_s/n` for
/// an infinite `ρ` (all noise).
pub fn planned_fractions(stage_trials: &[u32], rho: f64) -> Vec<f64> {
    if rho.is_finite() {
        fractions_for_trials(1.0, rho, stage_trials)
    } else {
        let n = f64::from(*stage_trials.last().unwrap_or(&1));
        stage_trials.iter().map(|k| f64::from(*k) / n).collect()
    }
}

/// Why a design cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    /// No stage, or more stages than trials.
    #[error(
        "{stages} stages need at least {stages} trials per task and condition, the design has {trials}"
    )]
    Stages {
        /// Stages asked for.
        stages: usize,
        /// Trials per task and condition.
        trials: u32,
    },
    /// A futility rule from a stage the design does not have.
    #[error("futility from stage {from} of a {stages}-stage design")]
    FutilityFrom {
        /// The stage asked for (1-based).
        from: usize,
        /// Stages.
        stages: usize,
    },
    /// A noise ratio that plans no fractions.
    #[error("the planned noise ratio must be above 0, got {0}")]
    NoiseRatio(f64),
    /// The bounds could not be computed.
    #[error(transparent)]
    Bounds(#[from] BoundaryError),
}

/// The design over `trials` trials per task and condition in `stages` stages with `choices`:
/// fractions planned at the noise ratio ([`planned_fractions`]), O'Brien–Fleming spending at
/// one-sided α = [`ALPHA`], non-binding futility bounds from `choices.futility_from`, the
/// sign-flip statistic with [`FLIPS`] flips from [`SEED`]. The one place a design is made (see
/// the module docs).
///
/// # Errors
/// [`SpecError`]: no stage or more stages than trials, a futility stage past the last interim
/// one, a β outside (0, 0.5), a noise ratio not above 0.
pub fn spec(trials: u32, stages: usize, choices: &Choices) -> Result<DesignSpec, SpecError> {
    let (beta, futility_from) = (choices.beta, choices.futility_from);
    if choices.noise_ratio.is_nan() || choices.noise_ratio <= 0.0 {
        return Err(SpecError::NoiseRatio(choices.noise_ratio));
    }
    let stage_trials: Vec<u32> = (1..=stages)
        .map(|s| (s as u64 * u64::from(trials) / stages.max(1) as u64) as u32)
        .collect();
    if stages == 0 || stage_trials.first().is_none_or(|k| *k == 0) {
        return Err(SpecError::Stages { stages, trials });
    }
    if let Some(from) = futility_from
        && (from == 0 || from >= stages)
        && stages > 1
    {
        return Err(SpecError::FutilityFrom { from, stages });
    }
    let fractions = planned_fractions(&stage_trials, choices.noise_ratio);
    let spec = DesignSpec {
        stages,
        stage_trials,
        fractions,
        alpha: ALPHA,
        beta,
        spending: Spending::OBrienFleming,
        futility_from: futility_from.filter(|_| stages > 1),
        statistic: Statistic::SignFlip {
            flips: FLIPS,
            seed: SEED,
        },
        min_tasks: super::signflip::min_tasks(ALPHA),
    };
    Design::of(&spec)?;
    Ok(spec)
}

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
    /// The 0-based stage from which the futility bounds apply (earlier ones are not used).
    pub futility_from: usize,
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
            futility_from: 0,
            alpha_spent,
            drift,
            inflation: (drift / z0).powi(2),
        })
    }

    /// The bounds of the design `spec` fixed: O'Brien–Fleming at its fractions, α and β, the
    /// futility bounds (β-spending over every interim stage, so the design keeps its drift)
    /// applied from its `futility_from`.
    ///
    /// # Errors
    /// Fractions not increasing in (0, 1] ending at 1, or a level outside (0, 0.5).
    pub fn of(spec: &DesignSpec) -> Result<Design, BoundaryError> {
        let mut d = Design::obrien_fleming(
            &spec.fractions,
            spec.alpha,
            spec.beta,
            spec.futility_from.is_some(),
        )?;
        d.futility_from = spec.futility_from.map_or(d.stages(), |f| f.max(1) - 1);
        Ok(d)
    }

    /// The futility bounds as applied: `−∞` at the interim stages before `futility_from` (for
    /// [`boundaries::stop_probabilities`]); empty without futility.
    pub fn applied_futility(&self) -> Vec<f64> {
        self.futility
            .iter()
            .enumerate()
            .map(|(k, f)| {
                if k >= self.futility_from {
                    *f
                } else {
                    f64::NEG_INFINITY
                }
            })
            .collect()
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
        } else if k < self.futility_from {
            None
        } else {
            self.futility.get(k).copied()
        }
    }

    /// Per-stage stopping probabilities at drift `eta` (efficacy or futility, futility obeyed).
    pub fn stop_probabilities(&self, eta: f64) -> Vec<f64> {
        boundaries::stop_probabilities(
            &self.fractions,
            &self.efficacy,
            &self.applied_futility(),
            eta,
        )
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

/// The stored row of `plan`'s design for run `run_id`: the spec and the bounds [`Design::of`]
/// computes from it.
///
/// # Errors
/// The bounds cannot be computed ([`BoundaryError`]).
pub fn row(run_id: i64, plan: &SequentialPlan) -> Result<DesignRow, BoundaryError> {
    let d = Design::of(&plan.design)?;
    Ok(DesignRow {
        run_id,
        spec: plan.design.clone(),
        efficacy: d.efficacy.clone(),
        futility: (0..d.stages().saturating_sub(1))
            .map(|s| d.futility_bound(s))
            .collect(),
        comparisons: plan.comparisons.clone(),
        early_stop: plan.early_stop,
        note: plan.note.clone(),
    })
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

/// The decision at a look and the bounds it was judged against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judged {
    /// Continue, efficacy or futility.
    pub decision: LookDecision,
    /// Why.
    pub why: LookWhy,
    /// The efficacy bound of the look on the Z scale; `None` when it is infinite (too few tasks
    /// for the sign-flip test to show an effect at this stage).
    pub efficacy: Option<f64>,
    /// The futility bound of the stage, if one applies.
    pub futility: Option<f64>,
}

impl Judged {
    /// Whether the comparison stops here.
    pub fn stops(&self) -> bool {
        self.decision != LookDecision::Continue
    }
}

/// The decision of `design` at 0-based `stage` for statistic `z` (NaN: undefined) against the
/// look's efficacy bound `efficacy` (`None`: infinite), which the statistic `crossed` or not
/// (the sign-flip test decides that on the sums, [`super::signflip`]). Efficacy when crossed;
/// at the last stage anything else shows no effect; before it, futility when `z` is at or below
/// the stage's futility bound (from the design's `futility_from`), else the comparison goes on.
///
/// # Panics
/// When `stage` is not a stage of the design.
pub fn judge(
    design: &Design,
    stage: usize,
    z: f64,
    efficacy: Option<f64>,
    crossed: bool,
) -> Judged {
    let last = stage + 1 == design.stages();
    let futility = if last {
        None
    } else {
        design.futility_bound(stage)
    };
    let (decision, why) = if z.is_nan() {
        let d = if last {
            LookDecision::Futility
        } else {
            LookDecision::Continue
        };
        (d, LookWhy::Undefined)
    } else if crossed {
        (LookDecision::Efficacy, LookWhy::EfficacyCrossed)
    } else if last {
        let why = if efficacy.is_none() {
            LookWhy::Unreachable
        } else {
            LookWhy::LastStageBelow
        };
        (LookDecision::Futility, why)
    } else if futility.is_some_and(|f| z <= f) {
        (LookDecision::Futility, LookWhy::FutilityCrossed)
    } else if efficacy.is_none() {
        (LookDecision::Continue, LookWhy::Unreachable)
    } else if futility.is_some() {
        (LookDecision::Continue, LookWhy::BetweenBounds)
    } else {
        (LookDecision::Continue, LookWhy::BelowEfficacy)
    };
    Judged {
        decision,
        why,
        efficacy,
        futility,
    }
}

/// [`judge`] against the design's normal bound `c_k` (the large-sample limit of the sign-flip
/// bound): efficacy when `z ≥ c_k`.
pub fn judge_normal(design: &Design, stage: usize, z: f64) -> Judged {
    let c = design.efficacy[stage];
    judge(design, stage, z, Some(c), z >= c)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_at_each_stage() {
        let d = Design::obrien_fleming(&Design::equal_fractions(3), 0.025, 0.2, true).unwrap();
        assert!((d.inflation - 1.104_334_02).abs() < 1e-6);
        let j = judge_normal(&d, 0, 3.8);
        assert_eq!(
            (j.decision, j.why),
            (LookDecision::Efficacy, LookWhy::EfficacyCrossed)
        );
        assert_eq!(j.efficacy, Some(d.efficacy[0]));
        let j = judge_normal(&d, 0, -0.3);
        assert_eq!(
            (j.decision, j.why),
            (LookDecision::Futility, LookWhy::FutilityCrossed)
        );
        assert_eq!(j.futility, Some(d.futility[0]));
        assert_eq!(judge_normal(&d, 1, 2.0).why, LookWhy::BetweenBounds);
        let j = judge_normal(&d, 2, 1.99);
        assert_eq!(
            (j.decision, j.why),
            (LookDecision::Futility, LookWhy::LastStageBelow)
        );
        assert_eq!(judge_normal(&d, 2, 1.994).decision, LookDecision::Efficacy);
        assert!(!judge_normal(&d, 1, f64::NAN).stops());
        assert_eq!(judge_normal(&d, 2, f64::NAN).why, LookWhy::Undefined);
        // An infinite sign-flip bound: go on, or no effect shown at the last stage.
        assert_eq!(judge(&d, 1, 5.0, None, false).why, LookWhy::Unreachable);
        let j = judge(&d, 2, 5.0, None, false);
        assert_eq!(
            (j.decision, j.why),
            (LookDecision::Futility, LookWhy::Unreachable)
        );
        let plain = Design::obrien_fleming(&Design::equal_fractions(3), 0.025, 0.2, false).unwrap();
        assert!((plain.inflation - 1.012_794_81).abs() < 1e-6);
        assert_eq!(judge_normal(&plain, 0, -5.0).why, LookWhy::BelowEfficacy);
    }

    #[test]
    fn one_function_makes_the_design() {
        let s = spec(5, 3, &Choices::with_futility(Some(2))).unwrap();
        assert_eq!(s.stage_trials, vec![1, 3, 5]);
        // ρ = 1.9: t = (1 + 1.9/5)/(1 + 1.9/k).
        let t = |k: f64| (1.0 + 1.9 / 5.0) / (1.0 + 1.9 / k);
        for (got, k) in s.fractions.iter().zip([1.0, 3.0, 5.0]) {
            assert!((got - t(k)).abs() < 1e-12, "{:?}", s.fractions);
        }
        let all_noise = Choices {
            noise_ratio: f64::INFINITY,
            ..Choices::default()
        };
        assert_eq!(
            spec(5, 3, &all_noise).unwrap().fractions,
            vec![0.2, 0.6, 1.0]
        );
        assert_eq!(s.min_tasks, 6);
        let d = Design::of(&s).unwrap();
        // Futility from stage 2: none at stage 1.
        assert_eq!(d.futility_bound(0), None);
        assert_eq!(d.futility_bound(1), Some(d.futility[1]));
        assert_eq!(d.applied_futility()[0], f64::NEG_INFINITY);
        assert!(spec(2, 3, &Choices::with_futility(None)).is_err());
        assert!(spec(5, 3, &Choices::with_futility(Some(3))).is_err());
        assert!(spec(5, 0, &Choices::default()).is_err());
        let zero = Choices {
            noise_ratio: 0.0,
            ..Choices::default()
        };
        assert!(matches!(spec(5, 3, &zero), Err(SpecError::NoiseRatio(_))));
        // One stage: the fixed design, no futility.
        assert_eq!(
            spec(5, 1, &Choices::with_futility(Some(2)))
                .unwrap()
                .futility_from,
            None
        );
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
