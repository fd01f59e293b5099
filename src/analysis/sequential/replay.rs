//! Replaying a group-sequential design over finished paired data, stage by stage, and
//! simulating it (`skillscope replay`).
//!
//! **Design.** By default the one a run fixes when it is created ([`super::design::spec`]):
//! fractions `k_s/n`, as planned — never re-estimated from the data it then tests. With
//! [`Fractions::Data`] the fractions come from the variance components of the data,
//! `ω² + (σ²_A + σ²_B)/k` ([`crate::analysis::power::components`],
//! [`super::design::fractions_for_trials`]) — what `plan` would have assumed had it known them;
//! shown for comparison, and said so.
//!
//! **Stages.** With `n` trials per task and condition and `K` stages, stage `s` (1-based) uses
//! each task's trials with trial index ≤ ⌊s·n/K⌋ in both conditions (trial-index-first
//! scheduling). Each look is [`super::live::Path::next`] — the engine's look, the sign-flip test
//! carried from stage to stage.
//!
//! **Verdicts.** The sequential design ends in *effect* (an efficacy bound crossed) or *no effect
//! shown*. The fixed design is the same test at one look over all `n` trials: *effect* when the
//! sign-flip test at one-sided α rejects in the upper tail, *harm* when it rejects in the lower
//! tail, else *undecided*. They agree when the fixed design is undecided, or effect ↔ effect, or
//! harm ↔ no effect shown; a fixed-design effect the sequential design does not show is **lost**.
//!
//! **Simulation.** *Null*: in each draw every task's two conditions swap labels with probability
//! ½ (exchangeable under H0: the skills make no difference to that task) and each task-condition's
//! trial order is reshuffled; the share of draws crossing an efficacy bound is the type-I error
//! (futility bounds are non-binding and ignored for it). *Power*: tasks are resampled with
//! replacement and each task-condition's trials reshuffled (the observed effect is the truth);
//! the share of draws with an efficacy stop is the power. Both report the mean share of trials
//! used, with futility stops obeyed. *Sharp null* ([`sharp_null`]): tasks whose pass probability
//! is drawn from U(0, 1), the same under both conditions, each trial a Bernoulli draw. *Orders*
//! ([`orders`]): the data's own trials, reshuffled within each task and condition.

use rand::seq::SliceRandom;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::design::{Design, fractions_for_trials, paired_z};
use super::live::{ApplyError, LiveLook, Path, TaskRewards, differences, flips_of};
use super::signflip::{Flips, SignFlipTest};
use crate::analysis::power::components;
use crate::domain::sequential::{DesignSpec, LookDecision};

/// Paired trial rewards: per task, each condition's rewards by trial index (`None`: a trial
/// without a reward to count).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PairedTrials {
    /// Task ids, in the order of the sign-flip reference set.
    pub tasks: Vec<String>,
    /// Condition A's (without) rewards in [0, 1], per task, by trial index.
    pub a: Vec<Vec<Option<f64>>>,
    /// Condition B's (with) rewards, likewise.
    pub b: Vec<Vec<Option<f64>>>,
}

impl PairedTrials {
    /// Trials per task and condition: the most any task has.
    pub fn trials(&self) -> usize {
        self.a
            .iter()
            .chain(&self.b)
            .map(Vec::len)
            .max()
            .unwrap_or(0)
    }

    /// Tasks with a reward on both sides.
    pub fn compared(&self) -> usize {
        let any = |v: &Vec<Option<f64>>| v.iter().any(Option::is_some);
        self.a
            .iter()
            .zip(&self.b)
            .filter(|(a, b)| any(a) && any(b))
            .count()
    }

    /// Shuffles each task-condition's trial order with `rng` (for data whose order is unknown).
    pub fn shuffle(&mut self, rng: &mut impl RngCore) {
        for v in self.a.iter_mut().chain(self.b.iter_mut()) {
            v.shuffle(rng);
        }
    }

    /// As the engine reads a comparison: per task, (with, without).
    pub fn task_rewards(&self) -> Vec<TaskRewards> {
        self.b.iter().cloned().zip(self.a.iter().cloned()).collect()
    }

    /// The rewards as numbers per task (a trial without one left out).
    fn plain(v: &[Vec<Option<f64>>]) -> Vec<Vec<f64>> {
        v.iter()
            .map(|x| x.iter().flatten().copied().collect())
            .collect()
    }
}

/// Why a replay cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplayError {
    /// Fewer than 2 tasks with trials in both conditions.
    #[error("fewer than 2 tasks have trials in both conditions")]
    TooFewTasks,
    /// Fewer tasks than the design can judge.
    #[error(
        "{tasks} tasks: the sign-flip test cannot show an effect at one-sided α {alpha} with fewer than {min} tasks (its smallest p-value is 1/2^{tasks})"
    )]
    BelowMinimum {
        /// Tasks compared.
        tasks: usize,
        /// The design's minimum.
        min: usize,
        /// Its α.
        alpha: f64,
    },
    /// The design does not fit the data.
    #[error(
        "the design has {design} trials per task and condition, the data {trials}: replay it with --stages"
    )]
    Trials {
        /// The design's trials.
        design: u32,
        /// The data's.
        trials: usize,
    },
    /// The design could not be made or applied.
    #[error("{0}")]
    Design(String),
}

impl From<ApplyError> for ReplayError {
    fn from(e: ApplyError) -> ReplayError {
        ReplayError::Design(e.to_string())
    }
}

/// The fixed design's verdict at all trials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixedVerdict {
    /// The one-look sign-flip test rejects in the upper tail.
    Effect,
    /// It rejects in the lower tail.
    Harm,
    /// Neither.
    Undecided,
}

/// Which information fractions a replay spends its α at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fractions {
    /// The design's, as planned (`k_s/n`).
    #[default]
    Planned,
    /// Re-estimated from the data's variance components.
    Data,
}

/// A replay's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// The design applied (its fractions as used).
    pub spec: DesignSpec,
    /// Tasks with trials in both conditions.
    pub tasks: usize,
    /// Trials per task and condition of the data.
    pub trials: usize,
    /// The looks taken, up to and including the stop.
    pub looks: Vec<LiveLook>,
    /// The fixed design's paired z at all trials.
    pub fixed_z: f64,
    /// The fixed design's verdict.
    pub fixed: FixedVerdict,
}

impl Replay {
    /// The last look (the stop).
    pub fn stop(&self) -> &LiveLook {
        self.looks.last().expect("a replay has a look")
    }

    /// 0-based stage of the stop.
    pub fn stop_stage(&self) -> usize {
        self.looks.len() - 1
    }

    /// Share of the trials used.
    pub fn share_used(&self) -> f64 {
        f64::from(self.stop().trials) / self.trials as f64
    }

    /// Whether the sequential verdict is an effect.
    pub fn effect(&self) -> bool {
        self.stop().judged.decision == LookDecision::Efficacy
    }

    /// Whether the sequential verdict agrees with the fixed design's (see the module docs).
    pub fn agrees(&self) -> bool {
        match self.fixed {
            FixedVerdict::Effect => self.effect(),
            FixedVerdict::Harm => !self.effect(),
            FixedVerdict::Undecided => true,
        }
    }

    /// A fixed-design effect the sequential design did not show.
    pub fn lost(&self) -> bool {
        self.fixed == FixedVerdict::Effect && !self.effect()
    }

    /// Whether the fixed design is decisive and the sequential design reached the same verdict
    /// before its last stage.
    pub fn decided_early(&self) -> bool {
        self.fixed != FixedVerdict::Undecided
            && self.agrees()
            && self.stop_stage() + 1 < self.spec.stages
    }
}

/// `spec` with the fractions `which` asks for over `data` (see [`Fractions`]).
pub fn with_fractions(spec: &DesignSpec, data: &PairedTrials, which: Fractions) -> DesignSpec {
    let mut s = spec.clone();
    if which == Fractions::Data {
        let (omega2, within) =
            components(&PairedTrials::plain(&data.a), &PairedTrials::plain(&data.b))
                .map(|c| (c.between, c.within_sum()))
                .unwrap_or((0.0, 0.0));
        s.fractions = fractions_for_trials(omega2, within, &s.stage_trials);
    }
    s
}

/// Checks that `spec` can be applied to `data`.
fn check(data: &PairedTrials, spec: &DesignSpec) -> Result<(), ReplayError> {
    let compared = data.compared();
    if compared < 2 {
        return Err(ReplayError::TooFewTasks);
    }
    if compared < spec.min_tasks {
        return Err(ReplayError::BelowMinimum {
            tasks: compared,
            min: spec.min_tasks,
            alpha: spec.alpha,
        });
    }
    let design = spec.stage_trials.last().copied().unwrap_or(0);
    if design as usize != data.trials() {
        return Err(ReplayError::Trials {
            design,
            trials: data.trials(),
        });
    }
    Ok(())
}

/// The design of `spec` with its reference set over `data`'s tasks.
fn prepare(data: &PairedTrials, spec: &DesignSpec) -> Result<(Design, Flips), ReplayError> {
    check(data, spec)?;
    let design = Design::of(spec).map_err(|e| ReplayError::Design(e.to_string()))?;
    Ok((design, flips_of(spec, data.tasks.len())?))
}

/// The fixed design's verdict over `tasks` at `k` trials: the sign-flip test at one look.
fn fixed_verdict(flips: &Flips, tasks: &[TaskRewards], k: u32, alpha: f64) -> FixedVerdict {
    let d = differences(tasks, k);
    if SignFlipTest::new(flips).stage(&d, alpha).crossed {
        return FixedVerdict::Effect;
    }
    let neg: Vec<Option<f64>> = d.iter().map(|x| x.map(|v| -v)).collect();
    if SignFlipTest::new(flips).stage(&neg, alpha).crossed {
        FixedVerdict::Harm
    } else {
        FixedVerdict::Undecided
    }
}

/// Applies `spec` (prepared as `design` and `flips`) to `data` stage by stage; the stop carries
/// its adjusted estimate when `estimates`.
fn walk(
    data: &PairedTrials,
    spec: &DesignSpec,
    design: &Design,
    flips: &Flips,
    estimates: bool,
) -> Replay {
    let tasks = data.task_rewards();
    let mut path = if estimates {
        Path::new(spec, design, flips)
    } else {
        Path::decisions_only(spec, design, flips)
    };
    let mut looks = Vec::new();
    for _ in 0..spec.stages {
        let l = path.next(&tasks);
        let stops = l.judged.stops();
        looks.push(l);
        if stops {
            break;
        }
    }
    let n = data.trials() as u32;
    let d: Vec<f64> = differences(&tasks, n).into_iter().flatten().collect();
    Replay {
        spec: spec.clone(),
        tasks: data.compared(),
        trials: data.trials(),
        looks,
        fixed_z: paired_z(&d).2,
        fixed: fixed_verdict(flips, &tasks, n, spec.alpha),
    }
}

/// Applies `spec` to `data` stage by stage (see the module docs).
///
/// # Errors
/// See [`ReplayError`].
pub fn replay(data: &PairedTrials, spec: &DesignSpec) -> Result<Replay, ReplayError> {
    let (design, flips) = prepare(data, spec)?;
    Ok(walk(data, spec, &design, &flips, true))
}

/// A design walked over `tasks` once: the share of trials used with futility obeyed, and
/// whether it crossed an efficacy bound with futility ignored (non-binding: the type-I error)
/// and with futility obeyed (the power).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Once {
    share: f64,
    efficacy_ignoring_futility: bool,
    efficacy: bool,
}

fn run_once(spec: &DesignSpec, design: &Design, flips: &Flips, tasks: &[TaskRewards]) -> Once {
    let n = f64::from(*spec.stage_trials.last().unwrap_or(&1));
    let mut path = Path::decisions_only(spec, design, flips);
    let mut used = None;
    for _ in 0..spec.stages {
        let l = path.next(tasks);
        if l.judged.decision == LookDecision::Efficacy {
            return Once {
                share: used.unwrap_or(f64::from(l.trials) / n),
                efficacy_ignoring_futility: true,
                efficacy: used.is_none(),
            };
        }
        if l.judged.stops() && used.is_none() {
            used = Some(f64::from(l.trials) / n);
        }
    }
    Once {
        share: used.unwrap_or(1.0),
        efficacy_ignoring_futility: false,
        efficacy: false,
    }
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

impl Simulated {
    fn of(draws: usize, rejected: usize, used: f64) -> Simulated {
        let rate = rejected as f64 / draws.max(1) as f64;
        Simulated {
            draws,
            rejection_rate: rate,
            mc_se: (rate * (1.0 - rate) / draws.max(1) as f64).sqrt(),
            mean_share: used / draws.max(1) as f64,
        }
    }

    /// Whether the rejection rate exceeds `alpha` by more than two Monte Carlo SEs: the design
    /// is not valid for such data.
    pub fn exceeds(&self, alpha: f64) -> bool {
        self.rejection_rate > alpha + 2.0 * self.mc_se
    }
}

/// Simulates `draws` null experiments (labels swapped within task) and `draws` experiments under
/// the observed effect (tasks resampled) from `data` with `seed`: `(null, power)`.
///
/// # Errors
/// See [`ReplayError`].
pub fn simulate(
    data: &PairedTrials,
    spec: &DesignSpec,
    draws: usize,
    seed: u64,
) -> Result<(Simulated, Simulated), ReplayError> {
    let (design, flips) = prepare(data, spec)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let tally = |null: bool, rng: &mut ChaCha8Rng| {
        let (mut rejected, mut used) = (0usize, 0.0);
        for _ in 0..draws {
            let mut d = data.clone();
            if null {
                for i in 0..d.tasks.len() {
                    if rng.random::<bool>() {
                        std::mem::swap(&mut d.a[i], &mut d.b[i]);
                    }
                }
            } else {
                let m = d.tasks.len();
                let pick: Vec<usize> = (0..m).map(|_| rng.random_range(0..m)).collect();
                d.a = pick.iter().map(|i| data.a[*i].clone()).collect();
                d.b = pick.iter().map(|i| data.b[*i].clone()).collect();
            }
            d.shuffle(rng);
            let once = run_once(spec, &design, &flips, &d.task_rewards());
            used += once.share;
            rejected += usize::from(if null {
                once.efficacy_ignoring_futility
            } else {
                once.efficacy
            });
        }
        Simulated::of(draws, rejected, used)
    };
    let null = tally(true, &mut rng);
    let power = tally(false, &mut rng);
    Ok((null, power))
}

/// Over `n` random trial orders of `data` (each task-condition's trials reshuffled, ChaCha8 from
/// `seed`): each order's replay, its looks without adjusted estimates.
///
/// # Errors
/// See [`ReplayError`].
pub fn orders(
    data: &PairedTrials,
    spec: &DesignSpec,
    n: usize,
    seed: u64,
) -> Result<Vec<Replay>, ReplayError> {
    let (design, flips) = prepare(data, spec)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    Ok((0..n)
        .map(|_| {
            let mut d = data.clone();
            d.shuffle(&mut rng);
            walk(&d, spec, &design, &flips, false)
        })
        .collect())
}

/// The type-I error of `spec` under a sharp null over `tasks` tasks: each task's pass
/// probability drawn from U(0, 1), the same under both conditions, each of the design's trials a
/// Bernoulli draw; `draws` experiments from `seed`, efficacy stops counted with futility ignored.
///
/// # Errors
/// See [`ReplayError`] (too few tasks for the design).
pub fn sharp_null(
    tasks: usize,
    spec: &DesignSpec,
    draws: usize,
    seed: u64,
) -> Result<Simulated, ReplayError> {
    let n = *spec.stage_trials.last().unwrap_or(&1) as usize;
    let design = Design::of(spec).map_err(|e| ReplayError::Design(e.to_string()))?;
    let flips = flips_of(spec, tasks)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut rejected, mut used) = (0usize, 0.0);
    for _ in 0..draws {
        let p: Vec<f64> = (0..tasks).map(|_| rng.random::<f64>()).collect();
        let side = |rng: &mut ChaCha8Rng| -> Vec<Vec<Option<f64>>> {
            p.iter()
                .map(|p| {
                    (0..n)
                        .map(|_| Some(f64::from(rng.random::<f64>() < *p)))
                        .collect()
                })
                .collect()
        };
        let a = side(&mut rng);
        let b = side(&mut rng);
        let tasks: Vec<TaskRewards> = b.into_iter().zip(a).collect();
        let once = run_once(spec, &design, &flips, &tasks);
        used += once.share;
        rejected += usize::from(once.efficacy_ignoring_futility);
    }
    Ok(Simulated::of(draws, rejected, used))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::sequential::design::spec;

    fn some(v: Vec<Vec<f64>>) -> Vec<Vec<Option<f64>>> {
        v.into_iter()
            .map(|x| x.into_iter().map(Some).collect())
            .collect()
    }

    /// 40 tasks × 3 trials: B passes every trial of tasks 0..30, A passes none — a large effect.
    fn strong() -> PairedTrials {
        let n = 40;
        PairedTrials {
            tasks: (0..n).map(|i| format!("t{i}")).collect(),
            a: some((0..n).map(|i| vec![f64::from(i % 7 == 0); 3]).collect()),
            b: some((0..n).map(|i| vec![f64::from(i < 30); 3]).collect()),
        }
    }

    #[test]
    fn a_large_effect_stops_at_the_first_look() {
        let data = strong();
        let s = spec(
            3,
            3,
            &crate::analysis::sequential::design::Choices::with_futility(Some(2)),
        )
        .unwrap();
        let r = replay(&data, &s).unwrap();
        assert_eq!(r.stop_stage(), 0, "{r:?}");
        assert!(r.effect() && r.agrees() && r.decided_early() && !r.lost());
        assert!((r.share_used() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(r.fixed, FixedVerdict::Effect);
        let a = r.stop().adjusted.unwrap();
        assert!(a.ci.0 <= a.median_unbiased && a.median_unbiased <= a.ci.1);
        // The look is the engine's: the same function over the same data.
        let engine = crate::analysis::sequential::live::look(&s, 0, &data.task_rewards()).unwrap();
        assert_eq!(&engine, r.stop());
    }

    #[test]
    fn no_effect_never_claims_one() {
        let mut data = strong();
        data.b = data.a.clone();
        let s = spec(
            3,
            3,
            &crate::analysis::sequential::design::Choices::with_futility(Some(2)),
        )
        .unwrap();
        let r = replay(&data, &s).unwrap();
        assert!(!r.effect());
        assert_eq!(r.fixed, FixedVerdict::Undecided);
        let (null, _) = simulate(&data, &s, 30, 7).unwrap();
        assert_eq!(null.rejection_rate, 0.0);
    }

    #[test]
    fn errors_name_what_does_not_fit() {
        let data = strong();
        assert_eq!(
            replay(
                &data,
                &spec(
                    4,
                    4,
                    &crate::analysis::sequential::design::Choices::with_futility(None)
                )
                .unwrap()
            ),
            Err(ReplayError::Trials {
                design: 4,
                trials: 3
            })
        );
        assert_eq!(
            replay(
                &PairedTrials::default(),
                &spec(
                    3,
                    3,
                    &crate::analysis::sequential::design::Choices::with_futility(None)
                )
                .unwrap()
            ),
            Err(ReplayError::TooFewTasks)
        );
        let mut few = strong();
        few.tasks.truncate(5);
        few.a.truncate(5);
        few.b.truncate(5);
        assert!(matches!(
            replay(
                &few,
                &spec(
                    3,
                    3,
                    &crate::analysis::sequential::design::Choices::with_futility(None)
                )
                .unwrap()
            ),
            Err(ReplayError::BelowMinimum {
                tasks: 5,
                min: 6,
                ..
            })
        ));
    }

    /// Random binary data with per-task pass probabilities: the null simulation's type-I error is
    /// at most α = 0.025 within 3 Monte Carlo SEs; the power simulation of a planted effect
    /// rejects more often; the sharp null too stays at α.
    #[test]
    fn simulation_keeps_the_level() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let m = 30;
        let p: Vec<f64> = (0..m).map(|_| rng.random::<f64>()).collect();
        let draw = |p: f64, rng: &mut ChaCha8Rng| -> Vec<Option<f64>> {
            (0..3)
                .map(|_| Some(f64::from(rng.random::<f64>() < p)))
                .collect()
        };
        let data = PairedTrials {
            tasks: (0..m).map(|i| format!("t{i}")).collect(),
            a: p.iter().map(|p| draw(*p, &mut rng)).collect(),
            b: p.iter()
                .map(|p| draw((p + 0.3).min(1.0), &mut rng))
                .collect(),
        };
        let s = spec(
            3,
            3,
            &crate::analysis::sequential::design::Choices::with_futility(Some(2)),
        )
        .unwrap();
        let (null, power) = simulate(&data, &s, 60, 11).unwrap();
        assert!(!null.exceeds(0.025), "{null:?}");
        assert!(power.rejection_rate > null.rejection_rate, "{power:?}");
        assert!(null.mean_share > 0.0 && null.mean_share <= 1.0);
        let sharp = sharp_null(8, &s, 100, 5).unwrap();
        assert!(!sharp.exceeds(0.025), "{sharp:?}");
        // Orders: one replay each, deterministic in the seed.
        let o = orders(&data, &s, 3, 9).unwrap();
        assert_eq!(o.len(), 3);
        assert_eq!(o, orders(&data, &s, 3, 9).unwrap());
    }

    #[test]
    fn fractions_from_the_data_are_said_and_differ() {
        let data = strong();
        let s = spec(
            3,
            3,
            &crate::analysis::sequential::design::Choices::with_futility(None),
        )
        .unwrap();
        assert_eq!(with_fractions(&s, &data, Fractions::Planned), s);
        let d = with_fractions(&s, &data, Fractions::Data);
        assert_eq!(d.stage_trials, s.stage_trials);
        assert_ne!(d.fractions, s.fractions);
    }
}
