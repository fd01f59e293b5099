//! The sign-flip test a sequential design applies at each look: exact under the sharp null at
//! any number of tasks (issue 47).
//!
//! **Null and reference set.** Under the sharp null — the skills make no difference to any task —
//! a task's trials under its two conditions are exchangeable, so swapping the two conditions of a
//! task leaves the data's distribution unchanged. Swapping task `i` turns its paired difference
//! `d_i` into `−d_i` at every stage at once. A **flip** is a vector of signs, one per task; the
//! **reference set** is every flip when there are at most `log₂(flips)` tasks (the whole group,
//! enumerated), else the identity and `flips − 1` flips drawn uniformly (ChaCha8 from the
//! design's seed, task `i` its bit `i` in the order of the run's task ids) — a set of random
//! group elements with the identity among them gives an exact test (Hemerik & Goeman 2018,
//! "Exact testing with random permutations", TEST 29:811–825).
//!
//! **Statistic.** At a stage, `S = Σ_i d_i` over the tasks with a reward on both sides (a task
//! without one adds 0 for every flip). The paired z of the same data is a monotone function of
//! `S` over the reference set (its `Σ d_i²` is the same for every flip), so a bound on `S` is a
//! bound on Z; [`z_of_sum`] converts.
//!
//! **Spending.** With `B` flips in the set and cumulative α spent `α(t_s)` by stage `s`, at most
//! `⌊α(t_s)·B⌋` flips may have been rejected by then. At stage `s` the flips not rejected before
//! are ranked by `S`; the bound `c_s` is the smallest value such that the flips at or above it
//! (ties taken whole) number at most `⌊α(t_s)·B⌋` minus those already rejected; the data crosses
//! when the identity's `S` is at or above `c_s`. Given the set of flipped paths, the identity is
//! uniform over it under the null, so `P(cross by stage s) ≤ α(t_s)` exactly — at any number of
//! tasks, for any discrete reward, whatever the information fractions turn out to be. With too
//! few tasks no flip can be rejected (`c_s = +∞`): [`min_tasks`] is the fewest for which one can.
//! Ties and the lattice of rewards make the test conservative at small `n` (its size is below
//! α); nothing makes it liberal.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Tasks per byte of a flip (its bits).
const BLOCK: usize = 8;

/// The reference set of flips over `n` tasks.
#[derive(Debug, Clone, PartialEq)]
pub struct Flips {
    n: usize,
    blocks: usize,
    count: usize,
    exact: bool,
    /// `count × blocks` bytes: bit `j` of byte `b` of a flip is the sign of task `8b + j`
    /// (1: swapped). Flip 0 is the identity.
    bits: Vec<u8>,
}

impl Flips {
    /// The reference set over `n` tasks: all `2ⁿ` flips when `2ⁿ ≤ max`, else the identity and
    /// `max − 1` flips drawn from ChaCha8 seeded with `seed`.
    pub fn new(n: usize, max: u32, seed: u64) -> Flips {
        let blocks = n.div_ceil(BLOCK).max(1);
        let max = max.max(2) as usize;
        let exact = n < usize::BITS as usize && (1usize << n) <= max;
        let count = if exact { 1usize << n } else { max };
        let mut bits = vec![0u8; count * blocks];
        if exact {
            for f in 0..count {
                for b in 0..blocks {
                    bits[f * blocks + b] = ((f >> (BLOCK * b)) & 0xFF) as u8;
                }
            }
        } else {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.fill_bytes(&mut bits[blocks..]);
            let spare = blocks * BLOCK - n;
            if spare > 0 {
                let mask = 0xFFu8 >> spare;
                for f in 1..count {
                    bits[f * blocks + blocks - 1] &= mask;
                }
            }
        }
        Flips {
            n,
            blocks,
            count,
            exact,
            bits,
        }
    }

    /// Flips in the set (the identity included).
    pub fn count(&self) -> usize {
        self.count
    }

    /// Whether the set is the whole group (every flip of `n` tasks).
    pub fn exact(&self) -> bool {
        self.exact
    }

    /// Tasks.
    pub fn tasks(&self) -> usize {
        self.n
    }

    /// `S` of every flip for per-task differences `d` (`None`: the task adds 0), by a table of
    /// each byte's 256 signed sums.
    ///
    /// # Panics
    /// When `d` has another length than the set's tasks.
    pub fn sums(&self, d: &[Option<f64>]) -> Vec<f64> {
        assert_eq!(d.len(), self.n, "one difference per task");
        let mut tables = vec![0.0f64; self.blocks * 256];
        for b in 0..self.blocks {
            let t = &mut tables[b * 256..(b + 1) * 256];
            let v: Vec<f64> = (0..BLOCK)
                .map(|j| d.get(b * BLOCK + j).copied().flatten().unwrap_or(0.0))
                .collect();
            t[0] = v.iter().sum();
            for m in 1..256usize {
                let j = m.trailing_zeros() as usize;
                t[m] = t[m ^ (1 << j)] - 2.0 * v[j];
            }
        }
        let mut out = Vec::with_capacity(self.count);
        for f in self.bits.chunks_exact(self.blocks) {
            let mut s = 0.0;
            for (b, byte) in f.iter().enumerate() {
                s += tables[b * 256 + *byte as usize];
            }
            out.push(s);
        }
        out
    }
}

/// The fewest tasks at which a sign-flip test at one-sided level `alpha` can reject at all
/// (`⌊α·2ⁿ⌋ ≥ 1`: the identity alone as the most extreme flip), e.g. 6 at α = 0.025.
pub fn min_tasks(alpha: f64) -> usize {
    (1..64usize)
        .find(|n| (alpha * (1u64 << n) as f64 + 1e-9).floor() >= 1.0)
        .unwrap_or(64)
}

/// The flips that may have been rejected by a stage with cumulative `alpha_spent` in a set of
/// `count`: `⌊α(t)·B⌋`.
pub fn rejectable(alpha_spent: f64, count: usize) -> usize {
    (alpha_spent * count as f64 + 1e-9).floor() as usize
}

/// One stage of the test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    /// The bound on `S`; `None` when no flip can be rejected at this stage.
    pub bound: Option<f64>,
    /// The data's `S`.
    pub observed: f64,
    /// Whether the data crossed (`S ≥` the bound).
    pub crossed: bool,
}

/// The test's state through a design's stages (see the module docs).
#[derive(Debug, Clone)]
pub struct SignFlipTest<'a> {
    flips: &'a Flips,
    alive: Vec<bool>,
    rejected: usize,
}

impl<'a> SignFlipTest<'a> {
    /// The test before its first stage.
    pub fn new(flips: &'a Flips) -> SignFlipTest<'a> {
        SignFlipTest {
            flips,
            alive: vec![true; flips.count()],
            rejected: 0,
        }
    }

    /// The next stage with per-task differences `d` and cumulative α spent `alpha_spent` by it.
    pub fn stage(&mut self, d: &[Option<f64>], alpha_spent: f64) -> Stage {
        let sums = self.flips.sums(d);
        let tol = 1e-9 * (1.0 + d.iter().flatten().map(|x| x.abs()).sum::<f64>());
        let cap = rejectable(alpha_spent, self.flips.count()).saturating_sub(self.rejected);
        let bound = threshold(&sums, &self.alive, cap, tol);
        let observed = sums[0];
        if let Some(c) = bound {
            for (a, s) in self.alive.iter_mut().zip(&sums) {
                if *a && *s >= c - tol {
                    *a = false;
                    self.rejected += 1;
                }
            }
        }
        Stage {
            bound,
            observed,
            crossed: bound.is_some_and(|c| observed >= c - tol),
        }
    }
}

/// The smallest value `c` among the alive sums such that the alive sums at or above `c − tol`
/// number at most `cap` (ties taken whole); `None` when even the largest tie does not fit.
fn threshold(sums: &[f64], alive: &[bool], cap: usize, tol: f64) -> Option<f64> {
    if cap == 0 {
        return None;
    }
    let mut live: Vec<f64> = sums
        .iter()
        .zip(alive)
        .filter(|(_, a)| **a)
        .map(|(s, _)| *s)
        .collect();
    if live.is_empty() {
        return None;
    }
    let top = (cap + 1).min(live.len());
    if top < live.len() {
        live.select_nth_unstable_by(top - 1, |a, b| b.total_cmp(a));
        live.truncate(top);
    }
    live.sort_unstable_by(|a, b| b.total_cmp(a));
    let mut best = None;
    let mut i = 0;
    while i < live.len() {
        let v = live[i];
        let mut j = i;
        while j < live.len() && live[j] >= v - tol {
            j += 1;
        }
        // Ties are taken whole: a tie that reaches past `cap` flips does not fit.
        if j > cap {
            break;
        }
        best = Some(live[j - 1]);
        i = j;
    }
    best
}

/// The mean and standard error of `n ≥ 2` differences with sum `sum` and sum of squares
/// `sum_sq` at `k` trials per task: `se = s_d/√n`, the sample variance floored at `1/(k²·n)`
/// when it is 0 (see `live`'s module docs).
pub fn mean_se(sum: f64, sum_sq: f64, n: usize, k: u32) -> (f64, f64) {
    let nf = n as f64;
    let mean = sum / nf;
    let var = (sum_sq - nf * mean * mean) / (nf - 1.0);
    let floor = 1.0 / (f64::from(k.max(1)).powi(2) * nf);
    let var = if var > 1e-12 * (1.0 + sum_sq) {
        var
    } else {
        floor
    };
    (mean, (var / nf).sqrt())
}

/// The paired z of `n` differences with sum `sum` and sum of squares `sum_sq` at `k` trials per
/// task ([`mean_se`]): the Z the data would have with that sum. NaN with fewer than 2 tasks.
pub fn z_of_sum(sum: f64, sum_sq: f64, n: usize, k: u32) -> f64 {
    if n < 2 {
        return f64::NAN;
    }
    let (mean, se) = mean_se(sum, sum_sq, n, k);
    mean / se
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_sets_are_the_whole_group_with_the_identity_first() {
        let f = Flips::new(3, 65_536, 1);
        assert!(f.exact() && f.count() == 8);
        let d = [Some(0.5), Some(-1.0), None];
        let s = f.sums(&d);
        assert_eq!(s[0], -0.5);
        // Flip 1 swaps task 0, flip 2 task 1, flip 3 both.
        assert_eq!(&s[1..4], &[-1.5, 1.5, 0.5]);
        // A task without a reward adds nothing, whichever its sign.
        assert_eq!(s[4], s[0]);
        let big = Flips::new(40, 1_000, 7);
        assert!(!big.exact() && big.count() == 1_000);
        assert!(big.bits[..big.blocks].iter().all(|b| *b == 0));
        assert_eq!(big, Flips::new(40, 1_000, 7));
        assert_ne!(big, Flips::new(40, 1_000, 8));
        // The last byte holds 40 − 32 = 8 tasks: all bits in use; with 37 tasks 5.
        let odd = Flips::new(37, 1_000, 7);
        assert!(odd.bits.chunks(odd.blocks).all(|f| f[4] < 32));
        // Sums agree with a direct evaluation.
        let d: Vec<Option<f64>> = (0..37).map(|i| Some(f64::from(i) / 10.0 - 1.5)).collect();
        let sums = odd.sums(&d);
        for (fi, f) in odd.bits.chunks(odd.blocks).enumerate().take(50) {
            let direct: f64 = (0..37)
                .map(|i| {
                    let swap = f[i / 8] >> (i % 8) & 1 == 1;
                    if swap { -d[i].unwrap() } else { d[i].unwrap() }
                })
                .sum();
            assert!((sums[fi] - direct).abs() < 1e-9);
        }
    }

    #[test]
    fn too_few_tasks_cannot_reject() {
        assert_eq!(min_tasks(0.025), 6);
        assert_eq!(min_tasks(0.05), 5);
        // 5 tasks, all moved up: the identity is the largest of 32, but ⌊0.025·32⌋ = 0.
        let f = Flips::new(5, 65_536, 1);
        let mut t = SignFlipTest::new(&f);
        let st = t.stage(&[Some(1.0); 5], 0.025);
        assert!(st.bound.is_none() && !st.crossed);
        // 6 tasks: ⌊0.025·64⌋ = 1, the identity alone.
        let f = Flips::new(6, 65_536, 1);
        let mut t = SignFlipTest::new(&f);
        let st = t.stage(&[Some(1.0); 6], 0.025);
        assert_eq!(st.bound, Some(6.0));
        assert!(st.crossed);
        // An unchanged task ties every flip with its partner: no room for the identity alone.
        let mut t = SignFlipTest::new(&f);
        let mut d = vec![Some(1.0); 6];
        d[5] = Some(0.0);
        assert!(t.stage(&d, 0.025).bound.is_none());
    }

    /// The whole group of 10 tasks over 3 stages: for every data path the test is applied, and
    /// the share of flips of one path that cross is at most α spent by each stage — the size,
    /// computed exactly rather than simulated.
    #[test]
    fn the_size_is_at_most_the_alpha_spent_over_the_whole_group() {
        let n = 10;
        let f = Flips::new(n, 65_536, 1);
        let spent = [0.0001, 0.006, 0.025];
        // Per task, differences at three stages (trials 1, 2, 3), some zero, some tied.
        let path: Vec<[f64; 3]> = (0..n)
            .map(|i| match i % 5 {
                0 => [1.0, 0.5, 2.0 / 3.0],
                1 => [0.0, 0.5, 1.0 / 3.0],
                2 => [-1.0, 0.0, 0.0],
                3 => [1.0, 1.0, 1.0],
                _ => [0.0, -0.5, -1.0 / 3.0],
            })
            .collect();
        let mut crossed = [0usize; 3];
        for g in 0..f.count() {
            // The data as flip g of `path`: its own test must reject with the share above.
            let signed = |s: usize| -> Vec<Option<f64>> {
                (0..n)
                    .map(|i| {
                        let v = path[i][s];
                        Some(if g >> i & 1 == 1 { -v } else { v })
                    })
                    .collect()
            };
            let mut t = SignFlipTest::new(&f);
            for (s, a) in spent.iter().enumerate() {
                if t.stage(&signed(s), *a).crossed {
                    crossed[s] += 1;
                    break;
                }
            }
        }
        let mut total = 0;
        for (s, a) in spent.iter().enumerate() {
            total += crossed[s];
            assert!(
                total as f64 / f.count() as f64 <= *a + 1e-12,
                "{crossed:?} by stage {s}"
            );
        }
        assert!(total > 0, "{crossed:?}");
    }

    #[test]
    fn z_of_a_sum_is_the_resolved_z() {
        let d = [0.0, 1.0, 0.5, 0.5];
        let (s, q) = (d.iter().sum::<f64>(), d.iter().map(|x| x * x).sum::<f64>());
        let z = super::super::live::resolved_z(&d, 2).2;
        assert!((z_of_sum(s, q, 4, 2) - z).abs() < 1e-12);
        // Every difference equal: the floor.
        assert!((z_of_sum(3.0, 3.0, 3, 1) - 3.0).abs() < 1e-12);
        assert!(z_of_sum(1.0, 1.0, 1, 1).is_nan());
    }
}
