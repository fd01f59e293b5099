//! A look of a design at a stage boundary — the one the engine takes during a run, and the one
//! `replay` takes over finished data, stage by stage (issue 47: one function for both).
//!
//! **Data.** Per task of the comparison (in the order of the run's task ids, which fixes each
//! task's bit in the sign-flip reference set), each side's rewards by trial index: a reward in
//! [0, 1], or `None` for a trial with none to count (cancelled). At stage `s` with `k_s` trials
//! per task, a task's difference is (mean reward with) − (mean reward without) over its trials of
//! index ≤ `k_s` that have one; a task without one on either side is left out.
//!
//! **Decision.** The efficacy bound of the look is the sign-flip bound of the data
//! ([`super::signflip`]: exact at any number of tasks), put on the scale of the paired z; the
//! test runs through every stage up to the look, so the α spent before it is what the earlier
//! looks spent. Futility (non-binding) compares the paired z with the design's futility bound
//! ([`super::design::judge`]).
//!
//! **Statistic shown.** The paired z of the differences ([`resolved_z`]): as
//! [`super::design::paired_z`], except when every task shows the same difference (`s_d = 0`).
//! Then the plain statistic is ±∞ — a certain answer from, say, two tasks that each moved by one
//! trial. Instead the variance is floored at the resolution of the data: the sample variance the
//! differences would have if one trial of one task had gone the other way, `s_d² ≥ 1/(k²·n)` (a
//! per-task difference moves by `1/k` when one of its `k` trials flips, and `n` values of which
//! one differs by `δ` have sample variance `δ²/n`), so `|Z| ≤ |d̄|·k·n`. Z is a monotone function
//! of the sum of the differences over the flips of one look, so the bound on the sum is a bound
//! on Z.
//!
//! **Estimate.** At a stop, the median-unbiased estimate and the stage-wise-ordering interval of
//! [`super::estimate`] over the design's fractions, with the efficacy bounds the earlier looks
//! applied (the normal approximation of the stage-wise ordering).

use super::design::{Design, Judged, judge};
use super::estimate::{Adjusted, adjusted};
use super::signflip::{Flips, SignFlipTest, mean_se, z_of_sum};
use crate::domain::sequential::{DesignSpec, LookRow, Statistic};

/// Per task, each side's rewards by trial index (`None`: a trial without one to count):
/// `(with, without)`.
pub type TaskRewards = (Vec<Option<f64>>, Vec<Option<f64>>);

/// The paired statistic of per-task differences `d` over `k` trials per task and condition:
/// `(d̄, se, Z)` with `se = s_d/√n`, and `s_d² ≥ 1/(k²·n)` when every difference is equal (see
/// the module docs); Z is NaN with fewer than 2 tasks.
pub fn resolved_z(d: &[f64], k: u32) -> (f64, f64, f64) {
    if d.len() < 2 {
        return (d.first().copied().unwrap_or(f64::NAN), f64::NAN, f64::NAN);
    }
    let (sum, sum_sq) = (d.iter().sum::<f64>(), d.iter().map(|x| x * x).sum::<f64>());
    let (mean, se) = mean_se(sum, sum_sq, d.len(), k);
    (mean, se, mean / se)
}

/// Each task's difference at `k` trials per task (see the module docs); `None` for a task
/// without a reward on a side.
pub fn differences(tasks: &[TaskRewards], k: u32) -> Vec<Option<f64>> {
    let mean = |v: &[Option<f64>]| -> Option<f64> {
        let r: Vec<f64> = v.iter().take(k as usize).flatten().copied().collect();
        (!r.is_empty()).then(|| r.iter().sum::<f64>() / r.len() as f64)
    };
    tasks
        .iter()
        .map(|(w, wo)| Some(mean(w)? - mean(wo)?))
        .collect()
}

/// One look at a stage boundary.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveLook {
    /// 0-based stage.
    pub stage: usize,
    /// Trials per task and condition used.
    pub trials: u32,
    /// Tasks compared (those with a reward on both sides).
    pub n_tasks: usize,
    /// Mean per-task difference (with − without), a fraction.
    pub mean_diff: f64,
    /// Its standard error.
    pub se: f64,
    /// The statistic ([`resolved_z`]).
    pub z: f64,
    /// The decision and its bounds.
    pub judged: Judged,
    /// The stopping-adjusted estimate when the look stops the comparison (None while it goes on,
    /// or when it cannot be computed).
    pub adjusted: Option<Adjusted>,
}

impl LiveLook {
    /// The stored row of this look of comparison `comparison`, taken `at` (RFC 3339).
    pub fn row(&self, comparison: &str, at: String) -> LookRow {
        let finite = |x: f64| x.is_finite().then_some(x);
        LookRow {
            comparison: comparison.to_string(),
            stage: self.stage + 1,
            trials: self.trials,
            n_tasks: self.n_tasks,
            mean_diff: finite(self.mean_diff),
            se: finite(self.se),
            z: finite(self.z),
            bound: self.judged.efficacy,
            futility_bound: self.judged.futility,
            decision: self.judged.decision,
            why: self.judged.why,
            adjusted: self.adjusted.map(|a| a.median_unbiased),
            ci: self.adjusted.map(|a| a.ci),
            p_value: self.adjusted.map(|a| a.p_value),
            at,
        }
    }
}

/// Why a design cannot be applied.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApplyError {
    /// The design was recorded before issue 47 with the paired z against normal bounds.
    #[error(
        "the design was recorded with the paired z of skillscope before issue 47 (too many false effects with few tasks) and is not applied again"
    )]
    PairedZ,
    /// Its bounds could not be computed.
    #[error(transparent)]
    Bounds(#[from] super::boundaries::BoundaryError),
}

/// A design walked through its stages over one comparison's data: the sign-flip test carried
/// from look to look.
#[derive(Debug, Clone)]
pub struct Path<'a> {
    spec: &'a DesignSpec,
    design: &'a Design,
    test: SignFlipTest<'a>,
    /// The efficacy bounds applied so far, z (+∞ where none).
    applied: Vec<f64>,
    /// Whether a stop carries its adjusted estimate (three root searches over the stage-wise
    /// ordering); a simulation needs only the decisions.
    estimates: bool,
}

impl<'a> Path<'a> {
    /// The walk of `design` (the bounds of `spec`) with the reference set `flips`.
    pub fn new(spec: &'a DesignSpec, design: &'a Design, flips: &'a Flips) -> Path<'a> {
        Path {
            spec,
            design,
            test: SignFlipTest::new(flips),
            applied: Vec::new(),
            estimates: true,
        }
    }

    /// [`Path::new`] whose looks carry no adjusted estimate (`adjusted: None`): the decisions
    /// and bounds alone, for simulations.
    pub fn decisions_only(spec: &'a DesignSpec, design: &'a Design, flips: &'a Flips) -> Path<'a> {
        Path {
            estimates: false,
            ..Path::new(spec, design, flips)
        }
    }

    /// The look at the next stage over `tasks` (one per task of the reference set).
    ///
    /// # Panics
    /// Past the last stage, or with another number of tasks than the reference set's.
    pub fn next(&mut self, tasks: &[TaskRewards]) -> LiveLook {
        let stage = self.applied.len();
        let k = self.spec.stage_trials[stage];
        let d = differences(tasks, k);
        let present: Vec<f64> = d.iter().flatten().copied().collect();
        let (mean_diff, se, z) = resolved_z(&present, k);
        let st = self.test.stage(&d, self.design.alpha_spent[stage]);
        let sum_sq = present.iter().map(|x| x * x).sum::<f64>();
        let efficacy = st.bound.map(|c| z_of_sum(c, sum_sq, present.len(), k));
        let crossed = st.crossed && !z.is_nan();
        let judged = judge(self.design, stage, z, efficacy, crossed);
        self.applied.push(efficacy.unwrap_or(f64::INFINITY));
        let adjusted = if self.estimates && judged.stops() {
            let mut applied = self.design.clone();
            applied.efficacy[..stage].copy_from_slice(&self.applied[..stage]);
            adjusted(&applied, stage, z, se).ok()
        } else {
            None
        };
        LiveLook {
            stage,
            trials: k,
            n_tasks: present.len(),
            mean_diff,
            se,
            z,
            judged,
            adjusted,
        }
    }
}

/// The reference set of `spec` over `n` tasks.
///
/// # Errors
/// [`ApplyError::PairedZ`] for a design recorded before the sign-flip test.
pub fn flips_of(spec: &DesignSpec, n: usize) -> Result<Flips, ApplyError> {
    match spec.statistic {
        Statistic::SignFlip { flips, seed } => Ok(Flips::new(n, flips, seed)),
        Statistic::PairedZ => Err(ApplyError::PairedZ),
    }
}

/// The look of design `spec` at 0-based `stage` over `tasks` (every task of the run, in the
/// order of its task ids): the test walked through stages `0..=stage`.
///
/// # Errors
/// See [`ApplyError`].
///
/// # Panics
/// When `stage` is not a stage of the design.
pub fn look(
    spec: &DesignSpec,
    stage: usize,
    tasks: &[TaskRewards],
) -> Result<LiveLook, ApplyError> {
    let design = Design::of(spec)?;
    let flips = flips_of(spec, tasks.len())?;
    let mut path = Path::new(spec, &design, &flips);
    let mut last = path.next(tasks);
    for _ in 0..stage {
        last = path.next(tasks);
    }
    Ok(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::sequential::design::spec;
    use crate::domain::sequential::{LookDecision, LookWhy};

    #[test]
    fn zero_variance_is_floored_at_one_flipped_trial() {
        let (m, se, z) = resolved_z(&[1.0, 1.0, 1.0], 1);
        assert_eq!(m, 1.0);
        assert!((z - 3.0).abs() < 1e-12, "{z}");
        assert!((se - 1.0 / 3.0).abs() < 1e-12);
        assert!((resolved_z(&[1.0, 1.0, 1.0], 2).2 - 6.0).abs() < 1e-12);
        let (m, se, z) = resolved_z(&[0.0, 0.0], 1);
        assert_eq!((m, z), (0.0, 0.0));
        assert!((se - 0.5).abs() < 1e-12, "{se}");
        assert!(resolved_z(&[0.5], 1).2.is_nan());
        // With variance, the plain paired z and its SE.
        let d = [0.0, 1.0, 0.5, 0.5];
        let (_, se, z) = resolved_z(&d, 3);
        let (_, se0, z0) = super::super::design::paired_z(&d);
        assert!((z - z0).abs() < 1e-12 && (se - se0).abs() < 1e-12);
    }

    fn tasks(n: usize, with: &[Option<f64>], without: &[Option<f64>]) -> Vec<TaskRewards> {
        vec![(with.to_vec(), without.to_vec()); n]
    }

    #[test]
    fn a_look_walks_the_test_and_estimates_at_a_stop() {
        let s = spec(
            5,
            5,
            &crate::analysis::sequential::design::Choices::with_futility(None),
        )
        .unwrap();
        // 8 tasks all moved by +1: the largest of 256 flips, but at stage 1 (t = 0.48, α spent
        // 0.0012) ⌊0.0012·256⌋ = 0: no flip may be rejected.
        let all = tasks(8, &[Some(1.0); 5], &[Some(0.0); 5]);
        let l = look(&s, 0, &all).unwrap();
        assert_eq!(
            (l.judged.decision, l.judged.why),
            (LookDecision::Continue, LookWhy::Unreachable)
        );
        assert!(l.adjusted.is_none() && l.judged.efficacy.is_none());
        // At stage 2 (t = 0.71, α spent 0.0077: ⌊0.0077·256⌋ = 1 flip) the identity alone is
        // above.
        let l = look(&s, 1, &all).unwrap();
        assert_eq!(l.judged.decision, LookDecision::Efficacy, "{l:?}");
        let a = l.adjusted.unwrap();
        assert!(a.ci.0 <= a.median_unbiased && a.median_unbiased <= a.ci.1);
        // A task with no reward on a side is left out; a cancelled trial of a task is left out
        // of its mean.
        let mut gap = all.clone();
        gap[0].0 = vec![None; 5];
        gap[1].1 = vec![None, Some(1.0), Some(0.0), Some(0.0), Some(0.0)];
        let l = look(&s, 0, &gap).unwrap();
        // Task 0 has no reward with, task 1 none without at one trial: 6 tasks compared.
        assert_eq!(l.n_tasks, 6);
        // Task 1 at one trial: its only trial without is cancelled: out at stage 1.
        assert_eq!(differences(&gap, 1)[1], None);
        assert_eq!(differences(&gap, 2)[1], Some(0.0));
        // The stored row carries the decision as data.
        let row = l.row("B-A", "t".into());
        assert_eq!(
            (row.stage, row.why, row.bound),
            (1, LookWhy::Unreachable, None)
        );
    }

    #[test]
    fn the_last_stage_decides_and_an_old_design_is_not_applied_again() {
        let s = spec(
            2,
            2,
            &crate::analysis::sequential::design::Choices::with_futility(None),
        )
        .unwrap();
        // No change at all: no effect shown at the last stage.
        let flat = tasks(10, &[Some(1.0), Some(0.0)], &[Some(1.0), Some(0.0)]);
        let l = look(&s, 1, &flat).unwrap();
        assert_eq!(l.judged.decision, LookDecision::Futility);
        assert_eq!(l.judged.why, LookWhy::Unreachable, "{l:?}");
        let mut old = s.clone();
        old.statistic = Statistic::PairedZ;
        assert_eq!(look(&old, 0, &flat).unwrap_err(), ApplyError::PairedZ);
    }
}
