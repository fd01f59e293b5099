//! 95% confidence intervals for Method D pass rates and their differences: a percentile
//! bootstrap over tasks (Efron & Tibshirani 1993, §13.3).
//!
//! Tasks are the unit of resampling because Method D averages per-task means over a fixed task
//! set; trials of a task are not independent draws of the benchmark. Each of `B` resamples draws
//! `n` tasks with replacement and takes the mean of their per-task means (for a difference, of
//! the paired per-task differences, so both conditions see the same tasks); the interval is the
//! 2.5th and 97.5th percentiles of those means (linear interpolation between order statistics).
//! The generator is ChaCha8 seeded with [`DEFAULT_SEED`] (or the caller's seed), so a report is
//! reproducible on any platform.

use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Resamples per interval.
pub const DEFAULT_RESAMPLES: usize = 2000;
/// Seed of the generator.
pub const DEFAULT_SEED: u64 = 20260212;

/// A confidence interval, as fractions (or, for differences, fractions of difference).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ci {
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
}

/// How intervals were computed (printed with every report).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CiMethod {
    /// Resamples.
    pub resamples: usize,
    /// Seed.
    pub seed: u64,
    /// Coverage, e.g. 0.95.
    pub level: f64,
}

impl Default for CiMethod {
    fn default() -> Self {
        CiMethod {
            resamples: DEFAULT_RESAMPLES,
            seed: DEFAULT_SEED,
            level: 0.95,
        }
    }
}

impl CiMethod {
    /// One line naming the method.
    pub fn describe(&self) -> String {
        format!(
            "{:.0}% percentile bootstrap over tasks ({} resamples, ChaCha8 seed {})",
            self.level * 100.0,
            self.resamples,
            self.seed
        )
    }

    /// The interval of the mean of `values` (per-task means); `None` for no values.
    pub fn mean(&self, values: &[f64]) -> Option<Ci> {
        bootstrap(values, self.resamples, self.seed, self.level)
    }

    /// The interval of the mean paired difference `with − without` (same tasks, same order);
    /// `None` when the slices are empty or differ in length.
    pub fn paired_difference(&self, with: &[f64], without: &[f64]) -> Option<Ci> {
        if with.len() != without.len() {
            return None;
        }
        let d: Vec<f64> = with.iter().zip(without).map(|(a, b)| a - b).collect();
        bootstrap(&d, self.resamples, self.seed, self.level)
    }
}

/// A bootstrap interval of a statistic that may be undefined in some resamples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CiOfRatio {
    /// The interval over the resamples where the statistic was defined.
    pub ci: Ci,
    /// Resamples where it was not (left out of the interval).
    pub undefined: usize,
    /// Resamples drawn.
    pub resamples: usize,
}

impl CiMethod {
    /// The interval of the share of the gap between `low` and `high` that `treated` closes,
    /// `(mean(treated) − mean(low)) / (mean(high) − mean(low))` over per-task means (same tasks,
    /// same order): tasks are resampled together as for [`CiMethod::paired_difference`]; a
    /// resample whose gap is not positive (`high` not above `low`) has no share and is left out
    /// and counted. `None` for empty or unequal slices, or when no resample has a gap.
    pub fn gap_closed(&self, treated: &[f64], low: &[f64], high: &[f64]) -> Option<CiOfRatio> {
        let n = treated.len();
        if n == 0 || low.len() != n || high.len() != n || self.resamples == 0 {
            return None;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut shares = Vec::with_capacity(self.resamples);
        let mut undefined = 0;
        for _ in 0..self.resamples {
            let (mut t, mut l, mut h) = (0.0, 0.0, 0.0);
            for _ in 0..n {
                let i = rng.random_range(0..n);
                t += treated[i];
                l += low[i];
                h += high[i];
            }
            let gap = (h - l) / n as f64;
            if gap > 1e-12 {
                shares.push((t - l) / n as f64 / gap);
            } else {
                undefined += 1;
            }
        }
        if shares.is_empty() {
            return None;
        }
        shares.sort_by(f64::total_cmp);
        let alpha = (1.0 - self.level) / 2.0;
        Some(CiOfRatio {
            ci: Ci {
                low: percentile(&shares, alpha),
                high: percentile(&shares, 1.0 - alpha),
            },
            undefined,
            resamples: self.resamples,
        })
    }
}

/// Percentile bootstrap of the mean of `values`.
pub fn bootstrap(values: &[f64], resamples: usize, seed: u64, level: f64) -> Option<Ci> {
    let n = values.len();
    if n == 0 || resamples == 0 {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut means: Vec<f64> = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let mut sum = 0.0;
        for _ in 0..n {
            sum += values[rng.random_range(0..n)];
        }
        means.push(sum / n as f64);
    }
    means.sort_by(f64::total_cmp);
    let alpha = (1.0 - level) / 2.0;
    Some(Ci {
        low: percentile(&means, alpha),
        high: percentile(&means, 1.0 - alpha),
    })
}

/// The `q`-quantile of sorted values, linear interpolation between order statistics (type 7,
/// as R's and NumPy's defaults).
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 0.0), 1.0);
        assert_eq!(percentile(&v, 1.0), 4.0);
        assert!((percentile(&v, 0.5) - 2.5).abs() < 1e-12);
        assert!((percentile(&v, 0.25) - 1.75).abs() < 1e-12);
    }

    #[test]
    fn gap_closed_is_a_ratio_of_paired_means() {
        let m = CiMethod::default();
        // A' closes exactly half of every task's gap.
        let low = [0.0, 0.2, 0.4, 0.0];
        let high = [1.0, 0.6, 0.8, 0.5];
        let treated: Vec<f64> = low.iter().zip(&high).map(|(l, h)| (l + h) / 2.0).collect();
        let r = m.gap_closed(&treated, &low, &high).unwrap();
        assert!(
            (r.ci.low - 0.5).abs() < 1e-9 && (r.ci.high - 0.5).abs() < 1e-9,
            "{r:?}"
        );
        assert_eq!(r.undefined, 0);
        // No gap anywhere: undefined.
        assert!(
            m.gap_closed(&[0.5, 0.5], &[0.5, 0.5], &[0.5, 0.5])
                .is_none()
        );
        // Resamples without a gap are counted, not used.
        let r = m.gap_closed(&[1.0, 0.0], &[0.0, 0.0], &[1.0, 0.0]).unwrap();
        assert!(r.undefined > 0 && r.undefined < m.resamples, "{r:?}");
    }

    #[test]
    fn constant_values_give_a_point_interval() {
        let ci = CiMethod::default().mean(&[0.4; 30]).unwrap();
        assert!((ci.low - 0.4).abs() < 1e-12 && (ci.high - 0.4).abs() < 1e-12);
    }

    #[test]
    fn intervals_are_seeded_and_cover_the_mean() {
        let v: Vec<f64> = (0..50)
            .map(|i| if i % 3 == 0 { 1.0 } else { 0.0 })
            .collect();
        let m = CiMethod::default();
        let a = m.mean(&v).unwrap();
        let b = m.mean(&v).unwrap();
        assert_eq!(a, b, "same seed, same interval");
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        assert!(a.low < mean && mean < a.high, "{a:?} around {mean}");
        // The normal approximation's half width for p = 0.34, n = 50 is about 0.13.
        let half = (a.high - a.low) / 2.0;
        assert!((0.09..0.17).contains(&half), "{half}");
        let other = CiMethod {
            seed: 7,
            ..CiMethod::default()
        }
        .mean(&v)
        .unwrap();
        // Another seed: the same interval up to Monte Carlo noise.
        assert!((other.low - a.low).abs() <= 0.04 && (other.high - a.high).abs() <= 0.04);
    }

    #[test]
    fn paired_differences_resample_tasks_together() {
        // The same per-task values: every resample's difference is exactly 0.
        let v: Vec<f64> = (0..20).map(|i| (i % 4) as f64 / 4.0).collect();
        let ci = CiMethod::default().paired_difference(&v, &v).unwrap();
        assert_eq!((ci.low, ci.high), (0.0, 0.0));
        let shifted: Vec<f64> = v.iter().map(|x| x + 0.1).collect();
        let ci = CiMethod::default().paired_difference(&shifted, &v).unwrap();
        assert!((ci.low - 0.1).abs() < 1e-9 && (ci.high - 0.1).abs() < 1e-9);
        assert!(CiMethod::default().paired_difference(&v, &v[1..]).is_none());
        assert!(CiMethod::default().mean(&[]).is_none());
    }
}
