//! Standard errors, power and minimum detectable effects of Method D comparisons, after Miller
//! (2024), "Adding Error Bars to Evals: A Statistical Approach to Language Model Evaluations",
//! arXiv:2411.00640 — its sections on clustered standard errors, paired differences and power
//! analysis, with tasks as the clusters and a task's trials as its resamples (docs/scoring.md).
//!
//! For a condition, the score of task `i` is the mean `x̄ᵢ` of its `Kᵢ` trial rewards; Method D
//! averages the `n` task means, so its standard error is `sd(x̄)/√n` — the clustered standard
//! error with one cluster per task. For a paired comparison of conditions A and B over the same
//! tasks, `dᵢ = x̄_Bᵢ − x̄_Aᵢ` and `SE = sd(d)/√n` (Miller's paired differences: the tasks' shared
//! difficulty cancels).
//!
//! The variance of `dᵢ` has two parts (Miller's decomposition of a resampled score): the
//! between-task variance `ω²` of the true per-task differences, and the within-task variance of
//! the trials, which averaging `K` trials divides by `K`:
//! `Var(dᵢ) = ω² + (σ²_A + σ²_B)/K`, where `σ²_A`, `σ²_B` are the mean within-task (trial-to-trial)
//! variances. Measured: `σ̂²` is the mean over tasks of each task's sample variance of its trial
//! rewards (tasks with two trials or more), and `ω̂² = max(0, s²_d − mean_i(σ̂²_Aᵢ/K_Aᵢ +
//! σ̂²_Bᵢ/K_Bᵢ))`.
//!
//! For `n` tasks and `K` trials per task and condition, a two-sided test at `α` has power `1 − β`
//! against an effect `δ` when `δ ≥ (z_{1−α/2} + z_{1−β}) · √((ω² + (σ²_A + σ²_B)/K) / n)` — the
//! minimum detectable effect (MDE). Its inverse gives the tasks (`n`) or the trials per task (`K`)
//! an effect needs. Here `α = 0.05` and `1 − β = 0.8` ([`Z_SUM`]).

use serde::Serialize;

/// The effect of interest when none is given, percentage points: what `plan` computes the tasks
/// and trials for, and what the hypotheses are judged against (an MDE above it is underpowered).
pub const DEFAULT_EFFECT_PP: f64 = 5.0;

/// `z_{0.975}`: the two-sided 5 % critical value of the standard normal.
pub const Z_ALPHA: f64 = 1.959_963_984_540_054;
/// `z_{0.80}`: the normal quantile of 80 % power.
pub const Z_POWER: f64 = 0.841_621_233_572_914_3;
/// `z_{0.975} + z_{0.80}` ≈ 2.8016.
pub const Z_SUM: f64 = Z_ALPHA + Z_POWER;

/// Sample mean and variance (`n − 1` denominator); the variance is `None` below two values.
fn mean_var(xs: &[f64]) -> Option<(f64, Option<f64>)> {
    if xs.is_empty() {
        return None;
    }
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = (xs.len() > 1).then(|| xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0));
    Some((m, v))
}

/// The standard error of a mean of per-task means (`sd/√n`, the clustered standard error with
/// tasks as clusters); `None` below two tasks.
pub fn se_of_mean(per_task: &[f64]) -> Option<f64> {
    let (_, v) = mean_var(per_task)?;
    v.map(|v| (v / per_task.len() as f64).sqrt())
}

/// The standard error of the mean paired difference `with − without` over the same tasks (same
/// order); `None` below two tasks or for slices of different lengths.
pub fn se_paired(with: &[f64], without: &[f64]) -> Option<f64> {
    if with.len() != without.len() {
        return None;
    }
    let d: Vec<f64> = with.iter().zip(without).map(|(a, b)| a - b).collect();
    se_of_mean(&d)
}

/// The variance components of a paired comparison, measured from trial rewards.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Components {
    /// Tasks both conditions ran.
    pub n_tasks: usize,
    /// Mean per-task difference `mean(dᵢ)`, a fraction.
    pub mean_diff: f64,
    /// Sample variance of the per-task differences `s²_d`, as measured (at the trials each task
    /// had).
    pub var_diff: f64,
    /// Mean within-task trial variance of the first condition `σ̂²_A` (`None`: no task had two
    /// trials).
    pub within_a: Option<f64>,
    /// The same for the second condition `σ̂²_B`.
    pub within_b: Option<f64>,
    /// Between-task variance of the true differences `ω̂²` (the measured variance less the part
    /// trial noise explains, floored at 0).
    pub between: f64,
}

impl Components {
    /// `σ²_A + σ²_B`, 0 when neither could be measured (then `between` holds all the variance).
    pub fn within_sum(&self) -> f64 {
        self.within_a.unwrap_or(0.0) + self.within_b.unwrap_or(0.0)
    }

    /// The variance of the mean difference over `n` tasks with `k` trials per task and condition.
    pub fn var_of_mean(&self, n: usize, k: u32) -> f64 {
        (self.between + self.within_sum() / f64::from(k.max(1))) / n.max(1) as f64
    }

    /// The minimum detectable effect over `n` tasks with `k` trials each (a fraction).
    pub fn mde(&self, n: usize, k: u32) -> f64 {
        Z_SUM * self.var_of_mean(n, k).sqrt()
    }

    /// Tasks needed to detect `effect` (a fraction) with `k` trials per task; `None` for an
    /// effect ≤ 0.
    pub fn tasks_needed(&self, effect: f64, k: u32) -> Option<u64> {
        (effect > 0.0).then(|| {
            let v = self.between + self.within_sum() / f64::from(k.max(1));
            ((Z_SUM / effect).powi(2) * v).ceil().max(2.0) as u64
        })
    }

    /// Trials per task needed to detect `effect` over `n` tasks; `None` when no number of
    /// trials suffices (the between-task variance alone exceeds what `n` tasks allow — more tasks
    /// are needed) or the effect is ≤ 0.
    pub fn trials_needed(&self, effect: f64, n: usize) -> Option<u64> {
        if effect <= 0.0 {
            return None;
        }
        let room = n as f64 * (effect / Z_SUM).powi(2) - self.between;
        if room <= 0.0 {
            return None;
        }
        Some((self.within_sum() / room).ceil().max(1.0) as u64)
    }
}

/// The variance components of comparing `b` with `a`, each a list of per-task trial rewards over
/// the same tasks in the same order (a task without trials in either is left out); `None` below
/// two tasks.
pub fn components(a: &[Vec<f64>], b: &[Vec<f64>]) -> Option<Components> {
    let mut diffs = Vec::new();
    let mut noise = Vec::new();
    let (mut wa, mut wb) = (Vec::new(), Vec::new());
    for (ta, tb) in a.iter().zip(b) {
        let (Some((ma, va)), Some((mb, vb))) = (mean_var(ta), mean_var(tb)) else {
            continue;
        };
        diffs.push(mb - ma);
        if let Some(v) = va {
            wa.push(v);
        }
        if let Some(v) = vb {
            wb.push(v);
        }
        // Trial noise in this task's difference: each side's variance over its trials (a side
        // with one trial contributes what the others measured, once known).
        noise.push((va, ta.len(), vb, tb.len()));
    }
    let (mean_diff, var_diff) = match mean_var(&diffs)? {
        (m, Some(v)) => (m, v),
        _ => return None,
    };
    let within_a = mean_var(&wa).map(|(m, _)| m);
    let within_b = mean_var(&wb).map(|(m, _)| m);
    let explained = noise
        .iter()
        .map(|(va, ka, vb, kb)| {
            va.or(within_a).unwrap_or(0.0) / *ka as f64
                + vb.or(within_b).unwrap_or(0.0) / *kb as f64
        })
        .sum::<f64>()
        / noise.len() as f64;
    Some(Components {
        n_tasks: diffs.len(),
        mean_diff,
        var_diff,
        within_a,
        within_b,
        between: (var_diff - explained).max(0.0),
    })
}

/// Components with no measurement: a bound for binary rewards at pass rates `pa` and `pb`. The
/// variance of a task's mean difference is at most `pa(1 − pa) + pb(1 − pb)` when the two
/// conditions' task scores are not negatively correlated (a task hard for one is not easy for
/// the other), whatever the number of trials; all of it is put between tasks, so the MDE it gives
/// is an upper bound and does not shrink with more trials.
pub fn binary_bound(pa: f64, pb: f64) -> Components {
    let v = pa * (1.0 - pa) + pb * (1.0 - pb);
    Components {
        n_tasks: 0,
        mean_diff: pb - pa,
        var_diff: v,
        within_a: None,
        within_b: None,
        between: v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn by_hand() {
        // Two tasks: A = [0,0] and [1,1]; B = [1,1] and [1,1]. Differences 1 and 0: mean 0.5,
        // variance 0.5; no trial noise; ω² = 0.5.
        let a = vec![vec![0.0, 0.0], vec![1.0, 1.0]];
        let b = vec![vec![1.0, 1.0], vec![1.0, 1.0]];
        let c = components(&a, &b).unwrap();
        assert_eq!(c.n_tasks, 2);
        assert!((c.mean_diff - 0.5).abs() < 1e-12);
        assert!((c.var_diff - 0.5).abs() < 1e-12);
        assert_eq!(c.within_a, Some(0.0));
        assert!((c.between - 0.5).abs() < 1e-12);
        // MDE over 84 tasks: 2.8016 · √(0.5/84).
        assert!((c.mde(84, 5) - Z_SUM * (0.5f64 / 84.0).sqrt()).abs() < 1e-12);
        // Noise only: A = [0,1] per task, B = [1,0]: differences 0, variance 0 — no between part.
        let a = vec![vec![0.0, 1.0], vec![0.0, 1.0], vec![1.0, 0.0]];
        let b = vec![vec![1.0, 0.0], vec![1.0, 0.0], vec![0.0, 1.0]];
        let c = components(&a, &b).unwrap();
        assert_eq!(c.between, 0.0);
        assert_eq!(c.within_sum(), 1.0);
        // More trials shrink it: K = 5 → (0 + 1/5)/n.
        assert!((c.var_of_mean(10, 5) - 0.02).abs() < 1e-12);
        assert_eq!(c.trials_needed(0.1, 100), Some(8));
        assert_eq!(c.tasks_needed(0.1, 5), Some(157));
        assert_eq!(se_paired(&[1.0, 0.0], &[0.0, 0.0]), Some(0.5));
        assert_eq!(se_of_mean(&[1.0]), None);
    }

    #[test]
    fn between_task_variance_bounds_what_trials_can_buy() {
        let c = Components {
            n_tasks: 84,
            mean_diff: 0.0,
            var_diff: 0.1,
            within_a: Some(0.1),
            within_b: Some(0.1),
            between: 0.05,
        };
        // With 84 tasks the floor is 2.8016·√(0.05/84) ≈ 6.8 pp: a 5 pp effect needs more tasks.
        assert_eq!(c.trials_needed(0.05, 84), None);
        assert!(c.trials_needed(0.10, 84).is_some());
        assert!(c.tasks_needed(0.05, 5).unwrap() > 84);
    }

    /// Invariants over random runs: SEs and MDEs are ≥ 0, MDEs shrink with more tasks and more
    /// trials, the inverse answers meet the effect they were asked for, and the bound for binary
    /// rewards is never below what binary trials measure.
    #[test]
    fn invariants_over_random_runs() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..300 {
            let n = rng.random_range(2..30);
            let k = rng.random_range(1..6);
            let run = |rng: &mut rand_chacha::ChaCha8Rng, p: f64| -> Vec<Vec<f64>> {
                (0..n)
                    .map(|_| {
                        let pi: f64 = (p + rng.random_range(-0.3..0.3)).clamp(0.0, 1.0);
                        (0..k)
                            .map(|_| f64::from(u8::from(rng.random_bool(pi))))
                            .collect()
                    })
                    .collect()
            };
            let (pa, pb) = (rng.random_range(0.05..0.95), rng.random_range(0.05..0.95));
            let (a, b) = (run(&mut rng, pa), run(&mut rng, pb));
            let Some(c) = components(&a, &b) else {
                continue;
            };
            assert!(c.between >= 0.0 && c.var_diff >= 0.0);
            let m = c.mde(n, k);
            assert!(m >= 0.0);
            assert!(c.mde(2 * n, k) <= m + 1e-12);
            assert!(c.mde(n, 2 * k) <= m + 1e-12);
            if let Some(need) = c.tasks_needed(0.1, k) {
                assert!(c.mde(need as usize, k) <= 0.1 + 1e-9, "{c:?} {need}");
            }
            if let Some(kk) = c.trials_needed(0.2, n) {
                assert!(c.mde(n, kk as u32) <= 0.2 + 1e-9, "{c:?} {kk}");
            }
            let means = |x: &[Vec<f64>]| -> Vec<f64> {
                x.iter()
                    .map(|t| t.iter().sum::<f64>() / t.len() as f64)
                    .collect()
            };
            let se = se_paired(&means(&b), &means(&a)).unwrap();
            assert!((se - (c.var_diff / n as f64).sqrt()).abs() < 1e-9);
            assert!(binary_bound(0.5, 0.5).var_diff >= 0.5 - 1e-12);
        }
    }
}
