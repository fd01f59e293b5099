//! The noise floor of a condition: how far its trials disagree with themselves.
//!
//! **Flip rate.** A task *flips* under a condition when its trials with a pass/fail outcome
//! disagree: at least one succeeded (reward ≥ the pass threshold, [`crate::analysis::success`])
//! and at least one with a verdict (pass, fail, agent or verifier timeout) did not — the flaky
//! tasks of the report. The flip rate is flipped tasks / tasks with 2 or more such trials; a task
//! with fewer cannot disagree and is left out of both counts (the denominator is printed). Partial
//! rewards flip by the threshold: 0.7 and 1.0 disagree at threshold 1, agree at threshold 0.5.
//! Infrastructure failures (build or runtime errors, no reward) are not a verdict on the agent and
//! never make a task flip.
//!
//! **A/A noise.** The Δ two runs of the *same* condition give: per task, its finished trials
//! (finished and not cancelled or interrupted; each with the reward Method D gives it — the
//! verifier's, clamped to [0, 1], 0 without one) are split at random into halves of ⌊n/2⌋ and
//! ⌈n/2⌉ trials, and Δ is taken as the comparison takes it — paired over the tasks, the mean over
//! tasks of (mean reward of one half − of the other). This is repeated for [`NoiseMethod::splits`]
//! splits (ChaCha8, seeded per task from the seed, the condition's label and the task id, each
//! task's rewards taken in sorted order, so the result depends neither on task order nor on the
//! order its trials were recorded in), and the **spread** is the half-width of the central
//! `level` (95 %) of those Δs, in percentage points — the same percentile rule as the bootstrap
//! CIs, so "Δ +4.5 pp; A/A noise ±3.1 pp" reads like an interval: trial noise alone moves Δ
//! within ±3.1 pp in 95 % of replications.
//!
//! **Scaled to the full-size comparison.** Halves hold half the trials, so their Δ is noisier than
//! a Δ between two full runs of n trials each. Under a random split of n values into a and b, the
//! difference of the half means has variance S²(1/a + 1/b), S² the task's sample variance
//! (the permutation variance); two independent runs of n trials differ by variance 2σ²/n. Each
//! task's half difference is therefore multiplied by k = √((2/n) / (1/a + 1/b)) (1/√2 for even n,
//! 0.69 for n = 5), which makes its variance exactly that of a full-size A/A difference in
//! expectation; the spread is that of a comparison of two full runs of the condition over the same
//! tasks, not of two half runs. A task with fewer than 2 finished trials cannot be split and is
//! left out (the number of tasks used is reported); with none the noise is undefined (—).
//!
//! A task with more than [`EXACT_MAX`] trials is not split trial by trial: its half difference is
//! drawn from the normal law with the same permutation variance S²(1/a + 1/b) (Hájek's
//! central limit theorem for sampling without replacement); such tasks' differences, independent
//! normals, are drawn as their sum — one Box–Muller draw a split from a stream seeded by the seed
//! and the label — so a split costs the same whatever the trials.
//!
//! **Beside a comparison** X vs Y: in each split the two sides' A/A Δs over the matched tasks both
//! can split, a and b, are pooled as (a + b)/√2, whose variance (V_X + V_Y)/2 is the trial-noise
//! variance of Δ(X − Y) when X and Y do not differ; its spread is the comparison's A/A noise. It
//! measures trial noise only: the CI of Δ also carries the sampling of tasks.
//!
//! **Its own error.** The spread is a percentile of random splits, so it has a Monte Carlo error;
//! [`AaNoise::band_pp`] states it (the band a bootstrap CI's bound has). With few tasks and few
//! trials the split Δs take few distinct values and the 97.5th percentile can sit on a jump
//! between two of them: the band is then wide, and says so.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::ci::{CiMethod, mc_band, percentile};

/// A/A splits drawn per condition and per comparison.
pub const DEFAULT_SPLITS: usize = 2_000;

/// The most trials of a task split exactly (a random half drawn from its rewards); above, the
/// half difference is drawn from its normal approximation, so a split costs the same whatever
/// the trials (`bench analysis`: 250 trials per task).
pub const EXACT_MAX: usize = 32;

/// How the A/A noise is drawn (printed with every report).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NoiseMethod {
    /// Random splits.
    pub splits: usize,
    /// Seed (the CIs' seed).
    pub seed: u64,
    /// Central share whose half-width is the spread, e.g. 0.95.
    pub level: f64,
}

impl From<&CiMethod> for NoiseMethod {
    /// [`DEFAULT_SPLITS`] splits with the bootstrap's seed and level.
    fn from(ci: &CiMethod) -> NoiseMethod {
        NoiseMethod {
            splits: DEFAULT_SPLITS,
            seed: ci.seed,
            level: ci.level,
        }
    }
}

impl NoiseMethod {
    /// `2,000 random splits, seed 20260212`.
    pub fn describe(&self) -> String {
        format!(
            "{} random splits, seed {}",
            crate::format::thousands(self.splits),
            self.seed
        )
    }
}

/// One task's finished trials under one condition.
#[derive(Debug, Clone, Copy)]
pub struct TaskTrials<'a> {
    /// Task id (seeds its splits).
    pub task: &'a str,
    /// Rewards of its finished trials, each in [0, 1].
    pub rewards: &'a [f64],
}

/// The flip rate of a condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct FlipRate {
    /// Tasks whose trials disagree.
    pub flipped: usize,
    /// Tasks with 2 or more trials with a pass/fail outcome (the denominator).
    pub tasks: usize,
}

impl FlipRate {
    /// Flipped / tasks, in [0, 1]; `None` without a task that could flip.
    pub fn rate(&self) -> Option<f64> {
        (self.tasks > 0).then(|| self.flipped as f64 / self.tasks as f64)
    }

    /// Why the rate is undefined (`None` when it is defined).
    pub fn why_undefined(&self) -> Option<String> {
        (self.tasks == 0).then(|| "no task judged twice".to_string())
    }
}

/// The flip rate over tasks given as (trials that succeeded, trials with a verdict that did not).
pub fn flip_rate(tasks: impl IntoIterator<Item = (usize, usize)>) -> FlipRate {
    let mut f = FlipRate::default();
    for (succeeded, failed) in tasks {
        if succeeded + failed >= 2 {
            f.tasks += 1;
            if succeeded > 0 && failed > 0 {
                f.flipped += 1;
            }
        }
    }
    f
}

/// An A/A noise: the spread of Δ between random halves, scaled to full size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AaNoise {
    /// Half-width of the central `level` of the A/A Δs, percentage points (≥ 0); `None` when
    /// undefined.
    pub spread_pp: Option<f64>,
    /// Why it is undefined.
    pub undefined: Option<String>,
    /// Tasks split (2 or more finished trials; on both sides for a comparison).
    pub n_tasks: usize,
    /// Its Monte Carlo band, percentage points: where the spread would fall with another seed
    /// (the percentiles' order statistics at ranks `(B − 1)q ∓ 2√(B·q(1 − q))`, as a bootstrap
    /// CI's band, [`super::ci::mc_band`]). With few tasks the split Δs take few values, and a
    /// wide band says the spread sits on a jump between them; `None` when undefined.
    pub band_pp: Option<(f64, f64)>,
    /// How it was drawn.
    pub method: NoiseMethod,
}

/// Why an A/A noise over `n_tasks` splittable tasks is undefined.
fn why_undefined(n_tasks: usize) -> Option<String> {
    (n_tasks == 0).then(|| "no task ran twice".to_string())
}

/// The seed of `label`'s splits of `task`: FNV-1a of both, mixed with `seed`.
fn task_seed(seed: u64, label: &str, task: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in label.bytes().chain([0u8]).chain(task.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^ seed
}

/// Adds, for split `r` of every splittable task of `tasks`, its scaled half difference
/// k·(mean of one half − mean of the other) to `sums[r]`; returns the tasks split.
/// `at`: the trials per task of the full-size comparison (`None`: each task's own count).
fn add_splits(
    label: &str,
    tasks: &[TaskTrials<'_>],
    m: &NoiseMethod,
    at: Option<u32>,
    sums: &mut [f64],
) -> usize {
    let mut used = 0;
    let mut idx: Vec<usize> = Vec::new();
    let mut normal_var = 0.0;
    for t in tasks.iter().filter(|t| t.rewards.len() >= 2) {
        used += 1;
        let n = t.rewards.len();
        let (a, b) = (n / 2, n - n / 2);
        let full = at.map_or(n as f64, f64::from);
        let k = ((2.0 / full) / (1.0 / a as f64 + 1.0 / b as f64)).sqrt();
        // Trials are exchangeable: split their rewards in sorted order, so the draws depend on the
        // rewards and not on the order the trials were recorded in.
        let mut rewards = t.rewards.to_vec();
        rewards.sort_by(f64::total_cmp);
        let total: f64 = rewards.iter().sum();
        if n > EXACT_MAX {
            // Many trials: the half difference is normal (the permutation CLT) with the
            // permutation variance S²(1/a + 1/b); independent normals add up, so these tasks
            // are drawn together below, one draw a split.
            let mean = total / n as f64;
            let s2 = rewards.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            normal_var += k * k * s2 * (1.0 / a as f64 + 1.0 / b as f64);
            continue;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(task_seed(m.seed, label, t.task));
        idx.clear();
        idx.extend(0..n);
        for s in sums.iter_mut() {
            // A partial Fisher–Yates shuffle: the first `a` indices are one half.
            let mut first = 0.0;
            for j in 0..a {
                let pick = rng.random_range(j..n);
                idx.swap(j, pick);
                first += rewards[idx[j]];
            }
            *s += k * (first / a as f64 - (total - first) / b as f64);
        }
    }
    if normal_var > 0.0 {
        // Seeded apart from every task (a task id is never empty).
        let mut rng = ChaCha8Rng::seed_from_u64(task_seed(m.seed, label, ""));
        let sd = normal_var.sqrt();
        for s in sums.iter_mut() {
            // Box–Muller: u₁ in (0, 1], u₂ in [0, 1).
            let (u1, u2) = (1.0 - rng.random::<f64>(), rng.random::<f64>());
            *s += sd * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        }
    }
    used
}

/// The spread of `sums` (per split, the sum over `n` tasks of the scaled differences, times
/// `scale`): the half-width of their central `level`, in percentage points.
fn spread(mut sums: Vec<f64>, n: usize, scale: f64, m: &NoiseMethod) -> AaNoise {
    let defined = n > 0 && !sums.is_empty();
    let alpha = (1.0 - m.level) / 2.0;
    if defined {
        for s in &mut sums {
            *s *= scale * 100.0 / n as f64;
        }
        sums.sort_by(f64::total_cmp);
    }
    let spread_pp = defined
        .then(|| ((percentile(&sums, 1.0 - alpha) - percentile(&sums, alpha)) / 2.0).max(0.0));
    let band_pp = defined.then(|| {
        let (lo, hi) = (mc_band(&sums, alpha), mc_band(&sums, 1.0 - alpha));
        (
            ((hi[0] - lo[1]) / 2.0).max(0.0),
            ((hi[1] - lo[0]) / 2.0).max(0.0),
        )
    });
    AaNoise {
        spread_pp,
        undefined: why_undefined(n),
        n_tasks: n,
        band_pp,
        method: *m,
    }
}

/// The A/A noise of condition `label` over `tasks` (module doc).
pub fn aa_noise(label: &str, tasks: &[TaskTrials<'_>], m: &NoiseMethod) -> AaNoise {
    aa_noise_at(label, tasks, m, None)
}

/// [`aa_noise`] scaled to a comparison of `at` trials per task instead of each task's own
/// count (`plan`, before every planned trial ran): each task's half difference is multiplied by
/// √((2/at) / (1/a + 1/b)), so it has the variance two runs of `at` trials would give.
pub fn aa_noise_at(
    label: &str,
    tasks: &[TaskTrials<'_>],
    m: &NoiseMethod,
    at: Option<u32>,
) -> AaNoise {
    let mut sums = vec![0.0; m.splits];
    let n = add_splits(label, tasks, m, at.filter(|&k| k > 0), &mut sums);
    spread(sums, n, 1.0, m)
}

/// The tasks of `side` that both `side` and `other` (same tasks, same order) can split.
fn both_split<'a>(side: &[TaskTrials<'a>], other: &[TaskTrials<'_>]) -> Vec<TaskTrials<'a>> {
    side.iter()
        .zip(other)
        .filter(|(a, b)| a.rewards.len() >= 2 && b.rewards.len() >= 2)
        .map(|(a, _)| *a)
        .collect()
}

/// The A/A noise beside the comparison `with` vs `without` (labels and their trials of the
/// matched tasks, same tasks in the same order): each split pools the two sides' A/A Δs over the
/// tasks both can split as (a + b)/√2 (module doc). The report and `plan` both take it so.
pub fn aa_noise_paired(
    with: (&str, &[TaskTrials<'_>]),
    without: (&str, &[TaskTrials<'_>]),
    m: &NoiseMethod,
) -> AaNoise {
    aa_noise_paired_at(with, without, m, None)
}

/// [`aa_noise_paired`] scaled to a comparison of `at` trials per task (`plan`; see
/// [`aa_noise_at`]).
pub fn aa_noise_paired_at(
    with: (&str, &[TaskTrials<'_>]),
    without: (&str, &[TaskTrials<'_>]),
    m: &NoiseMethod,
    at: Option<u32>,
) -> AaNoise {
    let (w, wo) = (both_split(with.1, without.1), both_split(without.1, with.1));
    let at = at.filter(|&k| k > 0);
    let mut sums = vec![0.0; m.splits];
    let n = add_splits(with.0, &w, m, at, &mut sums);
    add_splits(without.0, &wo, m, at, &mut sums);
    spread(sums, n, std::f64::consts::FRAC_1_SQRT_2, m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn method() -> NoiseMethod {
        NoiseMethod {
            splits: 400,
            seed: 7,
            level: 0.95,
        }
    }

    fn trials(v: &[(String, Vec<f64>)]) -> Vec<TaskTrials<'_>> {
        v.iter()
            .map(|(t, r)| TaskTrials {
                task: t,
                rewards: r,
            })
            .collect()
    }

    #[test]
    fn flip_rate_by_hand() {
        // 2 of 3 eligible tasks flip; a single-trial task and an all-infrastructure task are out.
        let f = flip_rate([(1, 1), (2, 0), (0, 3), (1, 0), (0, 0), (3, 2)]);
        assert_eq!(
            f,
            FlipRate {
                flipped: 2,
                tasks: 4
            }
        );
        assert_eq!(f.rate(), Some(0.5));
        assert_eq!(flip_rate([(1, 0)]).rate(), None);
        assert!(
            flip_rate([(1, 0)])
                .why_undefined()
                .unwrap()
                .contains("judged twice")
        );
    }

    #[test]
    fn one_trial_per_task_is_undefined_not_zero() {
        let v = vec![("a".to_string(), vec![1.0]), ("b".to_string(), vec![0.0])];
        let n = aa_noise("A", &trials(&v), &method());
        assert_eq!(n.spread_pp, None);
        assert_eq!(n.n_tasks, 0);
        assert!(n.undefined.unwrap().contains("ran twice"));
    }

    #[test]
    fn one_task_two_trials_by_hand() {
        // Rewards 1 and 0: every split gives ±1, scaled by 1/√2 → ±70.7 pp; the central 95 %
        // of a ±70.7 two-point distribution spans it all.
        let v = vec![("a".to_string(), vec![1.0, 0.0])];
        let n = aa_noise("A", &trials(&v), &method());
        let want = 100.0 * std::f64::consts::FRAC_1_SQRT_2;
        assert!((n.spread_pp.unwrap() - want).abs() < 1e-9, "{n:?}");
    }

    #[test]
    fn the_scaling_matches_the_full_size_variance() {
        // 60 tasks × 6 Bernoulli(0.5) trials: a full-size A/A Δ has SD √(2·0.25/6 / 60) ≈ 3.73
        // pp, so the 95 % half-width is ≈ 1.96 × 3.73 ≈ 7.3 pp (S² = 0.3 with n − 1: ≈ 8.0).
        let v: Vec<(String, Vec<f64>)> = (0..60)
            .map(|i| {
                let r: Vec<f64> = (0..6).map(|j| ((i + j) % 2) as f64).collect();
                (format!("t{i}"), r)
            })
            .collect();
        let n = aa_noise("A", &trials(&v), &method());
        let s = n.spread_pp.unwrap();
        let sd = (2.0 * 0.3 / 6.0 / 60.0f64).sqrt() * 100.0;
        assert!(
            (s - 1.96 * sd).abs() < 0.15 * 1.96 * sd,
            "{s} vs {}",
            1.96 * sd
        );
    }

    #[test]
    fn scaled_to_more_trials_the_noise_shrinks_by_the_square_root() {
        let v: Vec<(String, Vec<f64>)> = (0..30)
            .map(|i| (format!("t{i}"), vec![(i % 2) as f64, 1.0, 0.0, 0.5]))
            .collect();
        let m = method();
        let own = aa_noise("A", &trials(&v), &m).spread_pp.unwrap();
        let at16 = aa_noise_at("A", &trials(&v), &m, Some(16))
            .spread_pp
            .unwrap();
        // Same draws, every difference × √(4/16).
        assert!((at16 - own / 2.0).abs() < 1e-9, "{own} {at16}");
        assert_eq!(
            aa_noise_at("A", &trials(&v), &m, Some(4)).spread_pp,
            Some(own)
        );
    }

    #[test]
    fn many_trials_are_drawn_from_the_normal_approximation() {
        // 30 tasks × 40 trials, half 1 and half 0: S² = 40·0.25/39, a full-size A/A Δ has SD
        // √(2S²/40/30); the 95 % half-width is ≈ 1.96 of it, and reversing a task's trials or
        // the tasks changes nothing.
        let v: Vec<(String, Vec<f64>)> = (0..30)
            .map(|i| {
                let r: Vec<f64> = (0..40).map(|j| ((i + j) % 2) as f64).collect();
                (format!("t{i}"), r)
            })
            .collect();
        let m = method();
        let s = aa_noise("A", &trials(&v), &m).spread_pp.unwrap();
        let s2 = 40.0 * 0.25 / 39.0;
        let want = 1.96 * (2.0 * s2 / 40.0 / 30.0f64).sqrt() * 100.0;
        assert!((s - want).abs() < 0.12 * want, "{s} vs {want}");
        let mut rev = v.clone();
        rev.reverse();
        let r = aa_noise("A", &trials(&rev), &m).spread_pp.unwrap();
        assert!((r - s).abs() < 1e-9);
        let flat: Vec<(String, Vec<f64>)> =
            (0..3).map(|i| (format!("t{i}"), vec![0.5; 40])).collect();
        assert_eq!(aa_noise("A", &trials(&flat), &m).spread_pp, Some(0.0));
    }

    fn run() -> impl Strategy<Value = Vec<(String, Vec<f64>)>> {
        prop::collection::vec(
            prop::collection::vec(prop_oneof![Just(0.0), Just(1.0), 0.0..=1.0f64], 1..6),
            1..12,
        )
        .prop_map(|tasks| {
            tasks
                .into_iter()
                .enumerate()
                .map(|(i, r)| (format!("task-{i}"), r))
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn invariants_hold_over_random_runs(v in run(), shift in 0usize..12, pass in 0usize..4) {
            let m = method();
            let n = aa_noise("A", &trials(&v), &m);
            let splittable = v.iter().filter(|(_, r)| r.len() >= 2).count();
            prop_assert_eq!(n.n_tasks, splittable);
            prop_assert_eq!(n.spread_pp.is_some(), splittable > 0);
            if let Some(s) = n.spread_pp {
                prop_assert!((0.0..=100.0).contains(&s), "{}", s);
            }
            // Task order does not matter.
            let mut rotated = v.clone();
            rotated.rotate_left(shift % v.len());
            let r = aa_noise("A", &trials(&rotated), &m);
            match (n.spread_pp, r.spread_pp) {
                (Some(a), Some(b)) => prop_assert!((a - b).abs() < 1e-9, "{} vs {}", a, b),
                (a, b) => prop_assert_eq!(a, b),
            }
            // Nor the order of a task's trials.
            let reversed: Vec<(String, Vec<f64>)> = v
                .iter()
                .map(|(t, r)| (t.clone(), r.iter().rev().copied().collect()))
                .collect();
            prop_assert_eq!(aa_noise("A", &trials(&reversed), &m).spread_pp, n.spread_pp);
            // Flip rate in [0, 1], by the threshold `pass`/3.
            let t = pass as f64 / 3.0;
            let f = flip_rate(v.iter().map(|(_, r)| {
                let ok = r.iter().filter(|&&x| x >= t).count();
                (ok, r.len() - ok)
            }));
            prop_assert!(f.flipped <= f.tasks);
            if let Some(x) = f.rate() {
                prop_assert!((0.0..=1.0).contains(&x));
            }
            // Paired against itself relabelled: also ≥ 0, over the same tasks.
            let p = aa_noise_paired(("A", &trials(&v)), ("B", &trials(&v)), &m);
            prop_assert_eq!(p.n_tasks, splittable);
            prop_assert!(p.spread_pp.is_none_or(|s| s >= 0.0));
        }

        #[test]
        fn equal_rewards_per_task_have_no_noise(v in run()) {
            // Every trial of a task gets the task's first reward: no flip, no spread.
            let flat: Vec<(String, Vec<f64>)> = v
                .iter()
                .map(|(t, r)| (t.clone(), vec![r[0]; r.len()]))
                .collect();
            let m = method();
            let n = aa_noise("A", &trials(&flat), &m);
            prop_assert!(n.spread_pp.is_none_or(|s| s.abs() < 1e-9), "{:?}", n);
            let f = flip_rate(flat.iter().map(|(_, r)| {
                let ok = r.iter().filter(|&&x| x >= 1.0).count();
                (ok, r.len() - ok)
            }));
            prop_assert_eq!(f.flipped, 0);
            let p = aa_noise_paired(("A", &trials(&flat)), ("B", &trials(&flat)), &m);
            prop_assert!(p.spread_pp.is_none_or(|s| s.abs() < 1e-9));
        }
    }
}
