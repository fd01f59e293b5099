//! 95% confidence intervals for Method D pass rates and their differences: a percentile
//! bootstrap over tasks (Efron & Tibshirani 1993, §13.3), and the verdict an interval gives on
//! "the measure is positive" with its Monte Carlo error.
//!
//! Tasks are the unit of resampling because Method D averages per-task means over a fixed task
//! set; trials of a task are not independent draws of the benchmark. Each of `B` resamples draws
//! `n` tasks with replacement and takes the mean of their per-task means (for a difference, of
//! the paired per-task differences, so both conditions see the same tasks); the interval is the
//! 2.5th and 97.5th percentiles of those means (linear interpolation between order statistics).
//! The generator is ChaCha8 seeded with [`DEFAULT_SEED`] (or the caller's seed), so a report is
//! reproducible on any platform; every [`Ci`] carries its seed and resample count.
//!
//! **Undefined.** An interval over fewer than 2 tasks is undefined ([`why_undefined`]): one
//! task's resamples are all the same value, a point that says nothing about spread.
//!
//! **Monte Carlo error and the borderline rule.** A bound is an order statistic of `B` resamples:
//! with another seed the `q`-quantile's rank moves by about `sqrt(B·q·(1 − q))` (binomial), so
//! the order statistics at `(B − 1)q ± 2·sqrt(B·q·(1 − q))` bound where it would fall with another
//! seed (≈ 95 %) — its **Monte Carlo band** ([`Ci::low_mc`], [`Ci::high_mc`]). The verdict on
//! "positive" ([`Ci::verdict`]) is *above 0* when the lower bound is above 0, *at or below 0*
//! when the upper bound is at or below 0, *spans 0* otherwise, and **borderline** when the
//! interval touches 0 within its Monte Carlo error: the bound that decides it could cross 0 with
//! another seed or resample count (above 0 whose lower band reaches 0; at or below 0 whose upper
//! band reaches above 0; spanning 0 whose lower band reaches 0 or whose upper band reaches down to
//! it). Ten tasks of which three improve by the same amount put 0.7¹⁰ ≈ 2.8 % of the paired
//! resamples exactly at 0, against the 2.5 % the lower bound reads: some seeds give a lower
//! bound above 0, others 0 — that verdict is borderline whatever the seed.

use std::cell::RefCell;
use std::rc::Rc;

use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Resamples per interval (10,000: the Monte Carlo band of a 2.5 % bound spans about ±0.3
/// percentile points).
pub const DEFAULT_RESAMPLES: usize = 10_000;
/// Seed of the generator.
pub const DEFAULT_SEED: u64 = 20260212;
/// Width of the Monte Carlo band in binomial standard errors of the bound's rank.
pub const MC_Z: f64 = 2.0;

/// A confidence interval, as fractions (or, for differences, fractions of difference; [`Ci::scaled`]
/// converts to percentage points), with the Monte Carlo band of each bound and how it was drawn.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ci {
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
    /// Where the lower bound would fall with another seed: `[from, to]` (see the module doc).
    pub low_mc: [f64; 2],
    /// Where the upper bound would fall with another seed.
    pub high_mc: [f64; 2],
    /// Resamples drawn.
    pub resamples: usize,
    /// Seed of the ChaCha8 generator.
    pub seed: u64,
}

/// Where an interval lies with respect to 0 ([`Ci::verdict`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The lower bound is above 0.
    Above,
    /// The upper bound is at or below 0.
    AtOrBelow,
    /// The interval spans 0.
    Spans,
}

impl Ci {
    /// The same interval with every bound multiplied by `k > 0` (fractions → percentage points
    /// with `k = 100`).
    pub fn scaled(self, k: f64) -> Ci {
        Ci {
            low: self.low * k,
            high: self.high * k,
            low_mc: self.low_mc.map(|v| v * k),
            high_mc: self.high_mc.map(|v| v * k),
            ..self
        }
    }

    /// Where the interval lies with respect to 0, and whether that is **borderline**: the
    /// deciding bound within its Monte Carlo error of 0 (the module doc gives the rule).
    pub fn verdict(&self) -> (Side, bool) {
        if self.low > 0.0 {
            (Side::Above, self.low_mc[0] <= 0.0)
        } else if self.high <= 0.0 {
            (Side::AtOrBelow, self.high_mc[1] > 0.0)
        } else {
            (Side::Spans, self.low_mc[1] >= 0.0 || self.high_mc[0] <= 0.0)
        }
    }
}

/// Why an interval over `n_tasks` tasks is undefined (`None` when it is defined).
pub fn why_undefined(n_tasks: usize) -> Option<String> {
    match n_tasks {
        0 => Some("no task".into()),
        1 => Some("1 task: a CI needs 2 or more".into()),
        _ => None,
    }
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
            "{:.0}% percentile bootstrap over tasks ({}, ChaCha8 seed {}); a verdict whose interval touches 0 within its Monte Carlo error is borderline",
            self.level * 100.0,
            self.resamples_text(),
            self.seed
        )
    }

    /// `10,000 resamples, seed 20260212`: what is printed beside every interval.
    pub fn short(&self) -> String {
        format!("{}, seed {}", self.resamples_text(), self.seed)
    }

    fn resamples_text(&self) -> String {
        format!("{} resamples", crate::format::thousands(self.resamples))
    }

    /// The interval of the mean of `values` (per-task means); `None` for fewer than 2 values
    /// ([`why_undefined`]).
    pub fn mean(&self, values: &[f64]) -> Option<Ci> {
        bootstrap(values, self.resamples, self.seed, self.level)
    }

    /// The interval of the mean paired difference `with − without` (same tasks, same order);
    /// `None` for fewer than 2 tasks or slices that differ in length.
    pub fn paired_difference(&self, with: &[f64], without: &[f64]) -> Option<Ci> {
        if with.len() != without.len() {
            return None;
        }
        let d: Vec<f64> = with.iter().zip(without).map(|(a, b)| a - b).collect();
        bootstrap(&d, self.resamples, self.seed, self.level)
    }

    /// The interval of sorted resample statistics `sorted` drawn by this method.
    fn interval(&self, sorted: &[f64]) -> Ci {
        let alpha = (1.0 - self.level) / 2.0;
        Ci {
            low: percentile(sorted, alpha),
            high: percentile(sorted, 1.0 - alpha),
            low_mc: mc_band(sorted, alpha),
            high_mc: mc_band(sorted, 1.0 - alpha),
            resamples: self.resamples,
            seed: self.seed,
        }
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
    /// and counted. `None` for fewer than 2 tasks, unequal slices, or when no resample has a gap.
    pub fn gap_closed(&self, treated: &[f64], low: &[f64], high: &[f64]) -> Option<CiOfRatio> {
        let n = treated.len();
        if n < 2 || low.len() != n || high.len() != n || self.resamples == 0 {
            return None;
        }
        let mut shares = Vec::with_capacity(self.resamples);
        let mut undefined = 0;
        for_each_resample(n, self.resamples, self.seed, |draws| {
            let (mut t, mut l, mut h) = (0.0, 0.0, 0.0);
            for i in draws {
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
        });
        if shares.is_empty() {
            return None;
        }
        shares.sort_by(f64::total_cmp);
        Some(CiOfRatio {
            ci: self.interval(&shares),
            undefined,
            resamples: self.resamples,
        })
    }
}

/// Percentile bootstrap of the mean of `values`; `None` for fewer than 2 values or no resample.
pub fn bootstrap(values: &[f64], resamples: usize, seed: u64, level: f64) -> Option<Ci> {
    let n = values.len();
    if n < 2 || resamples == 0 {
        return None;
    }
    let mut means: Vec<f64> = match memo_stream(n, resamples, seed) {
        Some(stream) => stream_means(values, &stream),
        None => {
            let mut means = Vec::with_capacity(resamples);
            for_each_resample(n, resamples, seed, |draws| {
                let mut sum = 0.0;
                for i in draws {
                    sum += values[i];
                }
                means.push(sum / n as f64);
            });
            means
        }
    };
    means.sort_by(f64::total_cmp);
    Some(
        CiMethod {
            resamples,
            seed,
            level,
        }
        .interval(&means),
    )
}

/// The mean of `values` in each resample of a memoized `stream` (`values.len()` draws per
/// resample), in resample order. Each mean sums its draws in order, exactly as
/// [`for_each_resample`] would, so the means are the same bit for bit; a large stream (≥ 2²⁰
/// draws: 10,000 resamples of 2,000 tasks is 2·10⁷) is split into contiguous runs of resamples,
/// one per core (at most 4), and the runs are put back in order.
fn stream_means(values: &[f64], stream: &[u16]) -> Vec<f64> {
    let n = values.len();
    let mean = |draws: &[u16]| {
        let mut sum = 0.0;
        for &i in draws {
            sum += values[usize::from(i)];
        }
        sum / n as f64
    };
    let threads = if stream.len() < 1 << 20 {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |t| t.get().min(4))
    };
    if threads <= 1 {
        return stream.chunks_exact(n).map(mean).collect();
    }
    let per_thread = (stream.len() / n).div_ceil(threads) * n;
    let mean = &mean;
    std::thread::scope(|s| {
        let parts: Vec<_> = stream
            .chunks(per_thread)
            .map(|part| s.spawn(move || part.chunks_exact(n).map(mean).collect::<Vec<f64>>()))
            .collect();
        parts
            .into_iter()
            .flat_map(|p| p.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// Calls `each` once per resample, in order, with the `n` task indices it draws: `resamples`
/// resamples of `n` draws with replacement from ChaCha8 seeded with `seed`. Inside
/// [`memoized`], the draws of a (seed, tasks, resamples) are made once and read again by every
/// later interval over as many tasks — an analysis's conditions, comparisons and hypotheses over
/// the same task set share them — with exactly the same indices in the same order, so every
/// interval is the same as drawn afresh.
fn for_each_resample(n: usize, resamples: usize, seed: u64, mut each: impl FnMut(Draws<'_>)) {
    if let Some(stream) = memo_stream(n, resamples, seed) {
        for chunk in stream.chunks_exact(n) {
            each(Draws::Stored(chunk.iter()));
        }
        return;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for _ in 0..resamples {
        each(Draws::Fresh {
            rng: &mut rng,
            left: n,
            n,
        });
    }
}

/// The task indices of one resample.
enum Draws<'a> {
    /// Read from a memoized stream.
    Stored(std::slice::Iter<'a, u16>),
    /// Drawn now.
    Fresh {
        rng: &'a mut ChaCha8Rng,
        left: usize,
        n: usize,
    },
}

impl Iterator for Draws<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        match self {
            Draws::Stored(it) => it.next().map(|&i| usize::from(i)),
            Draws::Fresh { rng, left, n } => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                Some(rng.random_range(0..*n))
            }
        }
    }
}

/// The most draws [`memoized`] keeps at once (2 bytes each): 10,000 resamples over 3,200 tasks.
const MEMO_DRAWS: usize = 32_000_000;

/// A memoized stream of draws.
struct Stream {
    key: (usize, usize, u64),
    draws: Rc<[u16]>,
}

thread_local! {
    /// The streams drawn while [`memoized`] runs on this thread (`None` outside it), oldest first.
    static STREAMS: RefCell<Option<Vec<Stream>>> = const { RefCell::new(None) };
}

/// Runs `f` with the draws of every interval memoized ([`for_each_resample`]); they are dropped
/// when it returns. Intervals are the same with or without it; only their cost differs.
pub fn memoized<T>(f: impl FnOnce() -> T) -> T {
    let outer = STREAMS.with(|s| {
        let mut s = s.borrow_mut();
        let outer = s.is_some();
        if !outer {
            *s = Some(Vec::new());
        }
        outer
    });
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            if !self.0 {
                STREAMS.with(|s| *s.borrow_mut() = None);
            }
        }
    }
    let _reset = Reset(outer);
    f()
}

/// The memoized draws of (`n`, `resamples`, `seed`), drawn now when new; `None` outside
/// [`memoized`], for more than 65,536 tasks, or beyond [`MEMO_DRAWS`].
fn memo_stream(n: usize, resamples: usize, seed: u64) -> Option<Rc<[u16]>> {
    let total = n.checked_mul(resamples)?;
    if n == 0 || n > usize::from(u16::MAX) + 1 || total > MEMO_DRAWS {
        return None;
    }
    STREAMS.with(|s| {
        let mut s = s.borrow_mut();
        let streams = s.as_mut()?;
        let key = (n, resamples, seed);
        if let Some(found) = streams.iter().find(|st| st.key == key) {
            return Some(found.draws.clone());
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let draws: Rc<[u16]> = (0..total).map(|_| rng.random_range(0..n) as u16).collect();
        // Keep the newest streams within the budget.
        let mut kept = total;
        let mut keep_from = streams.len();
        while keep_from > 0 && kept + streams[keep_from - 1].draws.len() <= MEMO_DRAWS {
            keep_from -= 1;
            kept += streams[keep_from].draws.len();
        }
        streams.drain(..keep_from);
        streams.push(Stream {
            key,
            draws: draws.clone(),
        });
        Some(draws)
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

/// The Monte Carlo band of the `q`-quantile of `sorted` resamples: the order statistics at
/// `(B − 1)q ∓ MC_Z·sqrt(B·q·(1 − q))`, clamped to the sample.
pub fn mc_band(sorted: &[f64], q: f64) -> [f64; 2] {
    if sorted.is_empty() {
        return [f64::NAN, f64::NAN];
    }
    let b = sorted.len() as f64;
    let q = q.clamp(0.0, 1.0);
    let h = (b - 1.0) * q;
    let d = MC_Z * (b * q * (1.0 - q)).sqrt();
    let last = sorted.len() - 1;
    let lo = ((h - d).floor().max(0.0) as usize).min(last);
    let hi = ((h + d).ceil().max(0.0) as usize).min(last);
    [sorted[lo], sorted[hi]]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A memoized interval is the one drawn afresh, bit for bit, also when its stream is large
    /// enough to be summed on several threads (2,000 tasks × 1,000 resamples = 2·10⁶ draws) and
    /// when it is small; and the parallel means come back in resample order.
    #[test]
    fn memoized_and_threaded_intervals_equal_fresh_ones() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for (n, resamples) in [(2_000, 1_000), (7, 300)] {
            let values: Vec<f64> = (0..n).map(|_| rng.random_range(0.0..1.0)).collect();
            let fresh = bootstrap(&values, resamples, 42, 0.95).unwrap();
            let (memo, again) = memoized(|| {
                (
                    bootstrap(&values, resamples, 42, 0.95).unwrap(),
                    bootstrap(&values, resamples, 42, 0.95).unwrap(),
                )
            });
            assert_eq!(fresh, memo);
            assert_eq!(fresh, again);
            let stream = memoized(|| memo_stream(n, resamples, 42).unwrap());
            let mut sequential = Vec::new();
            for_each_resample(n, resamples, 42, |draws| {
                sequential.push(draws.map(|i| values[i]).sum::<f64>() / n as f64);
            });
            let threaded = stream_means(&values, &stream);
            assert_eq!(threaded.len(), resamples);
            assert!(
                threaded
                    .iter()
                    .zip(&sequential)
                    .all(|(a, b)| a.to_bits() == b.to_bits())
            );
        }
    }

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
    fn fewer_than_two_tasks_have_no_interval() {
        let m = CiMethod::default();
        assert!(m.mean(&[0.5]).is_none());
        assert!(m.paired_difference(&[1.0], &[0.0]).is_none());
        assert!(m.gap_closed(&[0.5], &[0.0], &[1.0]).is_none());
        assert!(why_undefined(1).is_some() && why_undefined(2).is_none());
    }

    #[test]
    fn every_interval_carries_its_seed_and_resamples() {
        let m = CiMethod {
            resamples: 500,
            seed: 9,
            level: 0.95,
        };
        let ci = m.mean(&[0.0, 1.0, 0.5]).unwrap();
        assert_eq!((ci.resamples, ci.seed), (500, 9));
        assert!(ci.low_mc[0] <= ci.low && ci.low <= ci.low_mc[1], "{ci:?}");
        assert!(
            ci.high_mc[0] <= ci.high && ci.high <= ci.high_mc[1],
            "{ci:?}"
        );
        let pp = ci.scaled(100.0);
        assert!((pp.low - ci.low * 100.0).abs() < 1e-12 && pp.high_mc[1] == ci.high_mc[1] * 100.0);
        assert_eq!(
            CiMethod::default().short(),
            "10,000 resamples, seed 20260212"
        );
    }

    /// Three of ten tasks improve by the same amount: 0.7¹⁰ ≈ 2.8 % of the paired resamples sit
    /// exactly at 0, next to the 2.5 % the lower bound reads. Whatever the seed, the verdict is
    /// borderline — never "above 0" for some seeds and "spans 0" for others.
    #[test]
    fn an_interval_touching_zero_is_borderline_for_every_seed() {
        let with = [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        let without = [0.0; 10];
        for seed in 0..40 {
            let ci = CiMethod {
                seed,
                ..CiMethod::default()
            }
            .paired_difference(&with, &without)
            .unwrap();
            assert!(ci.verdict().1, "seed {seed}: {ci:?}");
        }
        // No difference anywhere: at or below 0, and no seed can lift it.
        let ci = CiMethod::default()
            .paired_difference(&without, &without)
            .unwrap();
        assert_eq!(ci.verdict(), (Side::AtOrBelow, false));
        // Clearly above, clearly spanning.
        let ci = CiMethod::default()
            .paired_difference(&[1.0; 10], &without)
            .unwrap();
        assert_eq!(ci.verdict(), (Side::Above, false));
        let mixed = [1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 0.5, -0.5, 0.2, -0.2];
        let ci = CiMethod::default().mean(&mixed).unwrap();
        assert_eq!(ci.verdict(), (Side::Spans, false));
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
