//! Replaying a group-sequential design over finished paired data, stage by stage, and
//! simulating it (`skillscope replay`).
//!
//! **Stages.** With `n` trials per task and condition and `K` stages, stage `s` (1-based) uses
//! each task's trials with trial index ≤ ⌊s·n/K⌋ in both conditions (trial-index-first
//! scheduling, so every stage is balanced over the whole task set). The statistic at stage `s` is
//! the paired z of the per-task differences of mean reward over those trials
//! ([`super::design::paired_z`]); the information fractions come from the variance components
//! of the full data, `ω² + (σ²_A + σ²_B)/k` ([`crate::analysis::power::components`],
//! [`super::design::fractions_for_trials`]) — what `plan` would have assumed with this data.
//!
//! **Verdicts.** The sequential design (one-sided α = 0.025, B better than A) ends in *effect*
//! (an efficacy bound crossed) or *no effect shown* (a futility bound, or the last stage below
//! `c_K`). The fixed design at all `n` trials is *effect* when `Z ≥ z_{0.975}`, *harm* when
//! `Z ≤ −z_{0.975}` (both decisive, a two-sided 5 % test), else *undecided*. They agree when the
//! fixed design is undecided, or effect ↔ effect, or harm ↔ no effect shown.
//!
//! **Simulation.** *Null*: in each draw, every task's two conditions swap labels with
//! probability ½ (exchangeable under H0: the skills make no difference to that task) and each
//! task-condition's trial order is reshuffled; the share of draws crossing an efficacy bound is
//! the type-I error (futility bounds are non-binding and ignored for it). *Power*: tasks are
//! resampled with replacement and each task-condition's trials reshuffled (the observed effect
//! is the truth); the share of draws with an efficacy stop is the power. Both report the mean
//! share of trials used, with futility stops obeyed.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand::{Rng, RngCore};
use rand_chacha::ChaCha8Rng;

use super::boundaries::BoundaryError;
use super::design::{Decision, Design, evaluate, fractions_for_trials, paired_z};
use super::estimate::{Adjusted, adjusted};
use super::normal;
use crate::analysis::power::components;

/// Paired trial rewards: per task, each condition's rewards in trial order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PairedTrials {
    /// Task ids.
    pub tasks: Vec<String>,
    /// Condition A's (without) rewards in [0, 1], per task, in trial order.
    pub a: Vec<Vec<f64>>,
    /// Condition B's (with) rewards, likewise.
    pub b: Vec<Vec<f64>>,
}

impl PairedTrials {
    /// Trials per task and condition every task has in both conditions (the minimum).
    pub fn trials(&self) -> usize {
        self.a
            .iter()
            .chain(&self.b)
            .map(Vec::len)
            .min()
            .unwrap_or(0)
    }

    /// Shuffles each task-condition's trial order with `rng` (for data whose order is unknown).
    pub fn shuffle(&mut self, rng: &mut impl RngCore) {
        for v in self.a.iter_mut().chain(self.b.iter_mut()) {
            v.shuffle(rng);
        }
    }

    /// Per-task differences of mean reward (B − A) over each task's first `k` trials.
    pub fn diffs(&self, k: usize) -> Vec<f64> {
        self.a
            .iter()
            .zip(&self.b)
            .map(|(a, b)| mean(&b[..k]) - mean(&a[..k]))
            .collect()
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Why a replay cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplayError {
    /// Fewer than 2 tasks with trials in both conditions.
    #[error("fewer than 2 tasks have trials in both conditions")]
    TooFewTasks,
    /// More stages than trials per task.
    #[error(
        "{stages} stages need at least {stages} trials per task and condition, the data has {trials}"
    )]
    TooManyStages {
        /// Stages asked for.
        stages: usize,
        /// Trials every task has.
        trials: usize,
    },
    /// The design could not be computed.
    #[error(transparent)]
    Design(#[from] BoundaryError),
}

/// The fixed design's verdict at all trials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixedVerdict {
    /// `Z ≥ z_{0.975}`.
    Effect,
    /// `Z ≤ −z_{0.975}`.
    Harm,
    /// Neither.
    Undecided,
}

/// One look of a replay.
#[derive(Debug, Clone, PartialEq)]
pub struct Look {
    /// Trials per task and condition used.
    pub trials: usize,
    /// Information fraction.
    pub fraction: f64,
    /// Mean per-task difference B − A, a fraction.
    pub mean_diff: f64,
    /// Its standard error.
    pub se: f64,
    /// The paired z.
    pub z: f64,
    /// The decision.
    pub decision: Decision,
}

/// A replay's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// The design applied.
    pub design: Design,
    /// Tasks compared.
    pub tasks: usize,
    /// Trials per task and condition of the data.
    pub trials: usize,
    /// Trials per task at each stage.
    pub stage_trials: Vec<usize>,
    /// The looks taken, up to and including the stop.
    pub looks: Vec<Look>,
    /// The fixed design's z at all trials and its verdict.
    pub fixed_z: f64,
    /// The fixed design's verdict.
    pub fixed: FixedVerdict,
    /// The stopping-adjusted estimate (None when the statistic is infinite).
    pub adjusted: Option<Adjusted>,
}

impl Replay {
    /// The last look (the stop).
    pub fn stop(&self) -> &Look {
        self.looks.last().expect("a replay has a look")
    }

    /// 0-based stage of the stop.
    pub fn stop_stage(&self) -> usize {
        self.looks.len() - 1
    }

    /// Share of the trials used.
    pub fn share_used(&self) -> f64 {
        self.stop().trials as f64 / self.trials as f64
    }

    /// Whether the sequential verdict is an effect.
    pub fn effect(&self) -> bool {
        matches!(self.stop().decision, Decision::StopEfficacy { .. })
    }

    /// Whether the sequential verdict agrees with the fixed design's (see the module docs).
    pub fn agrees(&self) -> bool {
        match self.fixed {
            FixedVerdict::Effect => self.effect(),
            FixedVerdict::Harm => !self.effect(),
            FixedVerdict::Undecided => true,
        }
    }

    /// Whether the fixed design is decisive and the sequential design reached the same verdict
    /// before its last stage.
    pub fn decided_early(&self) -> bool {
        self.fixed != FixedVerdict::Undecided
            && self.agrees()
            && self.stop_stage() + 1 < self.design.stages()
    }
}

/// Design settings of a replay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Stages K.
    pub stages: usize,
    /// Non-binding futility bounds.
    pub futility: bool,
    /// One-sided α.
    pub alpha: f64,
    /// β at the design drift.
    pub beta: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            stages: 3,
            futility: true,
            alpha: 0.025,
            beta: 0.2,
        }
    }
}

/// Trials per task at each of `stages` stages over `n` trials: ⌊s·n/K⌋.
pub fn stage_trials(n: usize, stages: usize) -> Vec<usize> {
    (1..=stages).map(|s| s * n / stages).collect()
}

/// The design for `data` at `settings`: fractions from the data's variance components.
///
/// # Errors
/// See [`ReplayError`].
pub fn design_for(data: &PairedTrials, settings: &Settings) -> Result<Design, ReplayError> {
    let n = data.trials();
    if data.tasks.len() < 2 || n == 0 {
        return Err(ReplayError::TooFewTasks);
    }
    if settings.stages > n || settings.stages == 0 {
        return Err(ReplayError::TooManyStages {
            stages: settings.stages,
            trials: n,
        });
    }
    let ks: Vec<u32> = stage_trials(n, settings.stages)
        .iter()
        .map(|k| *k as u32)
        .collect();
    let cut = |v: &[Vec<f64>]| -> Vec<Vec<f64>> { v.iter().map(|x| x[..n].to_vec()).collect() };
    let (omega2, within) = components(&cut(&data.a), &cut(&data.b))
        .map(|c| (c.between, c.within_sum()))
        .unwrap_or((0.0, 0.0));
    let t = fractions_for_trials(omega2, within, &ks);
    Ok(Design::obrien_fleming(
        &t,
        settings.alpha,
        settings.beta,
        settings.futility,
    )?)
}

/// Applies `design` to `data` stage by stage (see the module docs).
///
/// # Errors
/// See [`ReplayError`].
pub fn replay(data: &PairedTrials, design: &Design) -> Result<Replay, ReplayError> {
    let n = data.trials();
    if data.tasks.len() < 2 || n == 0 {
        return Err(ReplayError::TooFewTasks);
    }
    let ks = stage_trials(n, design.stages());
    if ks[0] == 0 {
        return Err(ReplayError::TooManyStages {
            stages: design.stages(),
            trials: n,
        });
    }
    let mut looks = Vec::new();
    for (s, k) in ks.iter().enumerate() {
        let (mean_diff, se, z) = paired_z(&data.diffs(*k));
        let decision = evaluate(design, s, z);
        looks.push(Look {
            trials: *k,
            fraction: design.fractions[s],
            mean_diff,
            se,
            z,
            decision,
        });
        if decision.stops() {
            break;
        }
    }
    let fixed_z = paired_z(&data.diffs(n)).2;
    let zc = normal::quantile(1.0 - design.alpha);
    let fixed = if fixed_z >= zc {
        FixedVerdict::Effect
    } else if fixed_z <= -zc {
        FixedVerdict::Harm
    } else {
        FixedVerdict::Undecided
    };
    let last = looks.last().expect("one look at least");
    let adjusted = adjusted(design, looks.len() - 1, last.z, last.se).ok();
    Ok(Replay {
        design: design.clone(),
        tasks: data.tasks.len(),
        trials: n,
        stage_trials: ks,
        looks,
        fixed_z,
        fixed,
        adjusted,
    })
}

/// The stop of `design` on `data` without the estimate: `(0-based stage, efficacy?)`;
/// `obey_futility` false ignores the interim futility bounds (for the type-I error of a
/// non-binding design).
fn run_design(
    data: &PairedTrials,
    design: &Design,
    ks: &[usize],
    obey_futility: bool,
) -> (usize, bool) {
    for (s, k) in ks.iter().enumerate() {
        let z = paired_z(&data.diffs(*k)).2;
        match evaluate(design, s, z) {
            Decision::StopEfficacy { .. } => return (s, true),
            Decision::StopFutility { .. } if obey_futility => return (s, false),
            _ => {}
        }
    }
    (ks.len() - 1, false)
}

/// A simulation's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Simulated {
    /// Draws.
    pub draws: usize,
    /// Share of draws with an efficacy stop (null: futility ignored — the type-I error; power:
    /// futility obeyed).
    pub rejection_rate: f64,
    /// Its Monte Carlo standard error.
    pub mc_se: f64,
    /// Mean share of trials used (futility obeyed).
    pub mean_share: f64,
}

/// Simulates `draws` null experiments (labels swapped within task) and `draws` experiments under
/// the observed effect (tasks resampled) from `data` with `seed`: `(null, power)`.
///
/// # Errors
/// See [`ReplayError`].
pub fn simulate(
    data: &PairedTrials,
    design: &Design,
    draws: usize,
    seed: u64,
) -> Result<(Simulated, Simulated), ReplayError> {
    let n = data.trials();
    if data.tasks.len() < 2 || n == 0 {
        return Err(ReplayError::TooFewTasks);
    }
    let ks = stage_trials(n, design.stages());
    let cut: PairedTrials = PairedTrials {
        tasks: data.tasks.clone(),
        a: data.a.iter().map(|x| x[..n].to_vec()).collect(),
        b: data.b.iter().map(|x| x[..n].to_vec()).collect(),
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let share = |stage: usize| ks[stage] as f64 / n as f64;
    let tally = |null: bool, rng: &mut ChaCha8Rng| {
        let (mut rejected, mut used) = (0usize, 0.0);
        for _ in 0..draws {
            let mut d = cut.clone();
            if null {
                for i in 0..d.tasks.len() {
                    if rng.random::<bool>() {
                        std::mem::swap(&mut d.a[i], &mut d.b[i]);
                    }
                }
            } else {
                let m = d.tasks.len();
                let pick: Vec<usize> = (0..m).map(|_| rng.random_range(0..m)).collect();
                d.a = pick.iter().map(|i| cut.a[*i].clone()).collect();
                d.b = pick.iter().map(|i| cut.b[*i].clone()).collect();
            }
            d.shuffle(rng);
            let (stop, _) = run_design(&d, design, &ks, true);
            used += share(stop);
            let (_, effect) = run_design(&d, design, &ks, !null);
            rejected += usize::from(effect);
        }
        let rate = rejected as f64 / draws.max(1) as f64;
        Simulated {
            draws,
            rejection_rate: rate,
            mc_se: (rate * (1.0 - rate) / draws.max(1) as f64).sqrt(),
            mean_share: used / draws.max(1) as f64,
        }
    };
    let null = tally(true, &mut rng);
    let power = tally(false, &mut rng);
    Ok((null, power))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 40 tasks × 3 trials: B passes every trial of tasks 0..30, A passes none — a large effect.
    fn strong() -> PairedTrials {
        let n = 40;
        PairedTrials {
            tasks: (0..n).map(|i| format!("t{i}")).collect(),
            a: (0..n).map(|i| vec![f64::from(i % 7 == 0); 3]).collect(),
            b: (0..n).map(|i| vec![f64::from(i < 30); 3]).collect(),
        }
    }

    #[test]
    fn a_large_effect_stops_at_the_first_look() {
        let data = strong();
        let design = design_for(&data, &Settings::default()).unwrap();
        let r = replay(&data, &design).unwrap();
        assert_eq!(r.stop_stage(), 0, "{r:?}");
        assert!(r.effect() && r.agrees() && r.decided_early());
        assert!((r.share_used() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(r.fixed, FixedVerdict::Effect);
        let a = r.adjusted.unwrap();
        assert!(a.ci.0 <= a.median_unbiased && a.median_unbiased <= a.ci.1);
    }

    #[test]
    fn no_effect_never_claims_one() {
        // Identical conditions: every difference 0.
        let mut data = strong();
        data.b = data.a.clone();
        let design = design_for(&data, &Settings::default()).unwrap();
        let r = replay(&data, &design).unwrap();
        assert!(!r.effect());
        assert_eq!(r.fixed, FixedVerdict::Undecided);
        let (null, _) = simulate(&data, &design, 50, 7).unwrap();
        assert_eq!(null.rejection_rate, 0.0);
    }

    #[test]
    fn stages_and_errors() {
        assert_eq!(stage_trials(5, 3), vec![1, 3, 5]);
        assert_eq!(stage_trials(3, 3), vec![1, 2, 3]);
        let data = strong();
        let s = Settings {
            stages: 4,
            ..Settings::default()
        };
        assert!(matches!(
            design_for(&data, &s),
            Err(ReplayError::TooManyStages {
                stages: 4,
                trials: 3
            })
        ));
        assert_eq!(
            design_for(&PairedTrials::default(), &Settings::default()),
            Err(ReplayError::TooFewTasks)
        );
    }

    /// Random binary data with per-task pass probabilities and no effect: the null simulation's
    /// type-I error is near α = 0.025 (within 4 Monte Carlo SEs), the power simulation of a
    /// planted effect rejects more often.
    #[test]
    fn simulation_keeps_the_level() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let m = 60;
        let p: Vec<f64> = (0..m).map(|_| rng.random::<f64>()).collect();
        let draw = |p: f64, rng: &mut ChaCha8Rng| -> Vec<f64> {
            (0..3).map(|_| f64::from(rng.random::<f64>() < p)).collect()
        };
        let data = PairedTrials {
            tasks: (0..m).map(|i| format!("t{i}")).collect(),
            a: p.iter().map(|p| draw(*p, &mut rng)).collect(),
            b: p.iter()
                .map(|p| draw((p + 0.2).min(1.0), &mut rng))
                .collect(),
        };
        let design = design_for(&data, &Settings::default()).unwrap();
        let (null, power) = simulate(&data, &design, 400, 11).unwrap();
        assert!(
            null.rejection_rate <= 0.025 + 4.0 * (0.025f64 * 0.975 / 400.0).sqrt(),
            "{null:?}"
        );
        assert!(power.rejection_rate > null.rejection_rate, "{power:?}");
        assert!(null.mean_share > 0.0 && null.mean_share <= 1.0);
    }
}
