//! The recursive numerical integration of group-sequential probabilities (Armitage, McPherson &
//! Rowe 1969; Jennison & Turnbull 2000, "Group Sequential Methods with Applications to Clinical
//! Trials", ch. 19).
//!
//! `Z_k` is the cumulative z-statistic at stage `k` with information fraction `t_k` and drift
//! `η` (`E[Z_k] = η√t_k`; `η = θ√I_max`, 0 under H0). Its increments are independent:
//! `Z_k√t_k = Z_{k−1}√t_{k−1} + e_k`, `e_k ~ N(η·Δ_k, Δ_k)`, `Δ_k = t_k − t_{k−1}`. So the density of
//! `Z_k = z` given `Z_{k−1} = u` is `√t_k/√Δ_k · φ(A_k(z, u))` with
//! `A_k(z, u) = (z√t_k − u√t_{k−1} − ηΔ_k)/√Δ_k`, and a crossing probability given `u` is a normal
//! tail of `A_k`.
//!
//! [`Walk`] carries the weighted sub-density of `Z_k` on the continuation region of stage `k`
//! (the paths that did not stop at stages 1..k) on a grid of composite-Simpson nodes over the
//! region cut to `η√t_k ± 8` (Φ(−8) ≈ 6e-16), [`POINTS_PER_UNIT`] intervals per unit of z. A
//! crossing probability at the next stage is then a weighted sum over the nodes — O(N) — so each
//! stage's boundary is solved cheaply and the O(N²) step to the next grid is taken once.

use super::normal;

/// Simpson intervals per unit of z (h = 0.025; a grid of ~640 nodes over the ±8 window): the
/// boundaries agree with the converged values of gsd-reference.md §3 to about 1e-8.
pub const POINTS_PER_UNIT: f64 = 40.0;

/// Half-width of the integration window around the stage mean, in z.
const WINDOW: f64 = 8.0;

/// Past this |A| the transition density is below 1e-22 of its peak and skipped.
const KERNEL_CUTOFF: f64 = 10.0;

/// The weighted sub-density at one stage: nodes `x` and `w·f(x)`.
#[derive(Debug, Clone)]
struct Grid {
    x: Vec<f64>,
    g: Vec<f64>,
}

/// A walk through the stages of a design at information fractions `t` and drift `η`: at each
/// stage the probability of reaching it and crossing an upper or lower bound, then
/// [`Walk::advance`] past it with a continuation region.
#[derive(Debug, Clone)]
pub struct Walk<'a> {
    t: &'a [f64],
    eta: f64,
    /// The stage the crossing probabilities are asked of, 0-based.
    k: usize,
    /// The sub-density at stage `k − 1` (None before stage 1 is passed).
    grid: Option<Grid>,
}

impl<'a> Walk<'a> {
    /// A walk at stage 1 of fractions `t` (increasing, in (0, 1]) with drift `eta`.
    pub fn new(t: &'a [f64], eta: f64) -> Walk<'a> {
        Walk {
            t,
            eta,
            k: 0,
            grid: None,
        }
    }

    /// The stage the next probabilities are of, 0-based.
    pub fn stage(&self) -> usize {
        self.k
    }

    fn mean(&self, k: usize) -> f64 {
        self.eta * self.t[k].sqrt()
    }

    /// `A_k(z, u)` at the current stage.
    fn arg(&self, z: f64, u: f64) -> f64 {
        let (tk, tp) = (self.t[self.k], self.t[self.k - 1]);
        let dt = tk - tp;
        (z * tk.sqrt() - u * tp.sqrt() - self.eta * dt) / dt.sqrt()
    }

    /// P(no stop before the current stage and `Z_k ≥ b`); 0 for `b = +∞`.
    pub fn upper(&self, b: f64) -> f64 {
        if b == f64::INFINITY {
            return 0.0;
        }
        match &self.grid {
            None => normal::sf(b - self.mean(0)),
            Some(gr) => {
                gr.x.iter()
                    .zip(&gr.g)
                    .map(|(u, g)| g * normal::sf(self.arg(b, *u)))
                    .sum()
            }
        }
    }

    /// P(no stop before the current stage and `Z_k ≤ a`); 0 for `a = −∞`.
    pub fn lower(&self, a: f64) -> f64 {
        if a == f64::NEG_INFINITY {
            return 0.0;
        }
        match &self.grid {
            None => normal::cdf(a - self.mean(0)),
            Some(gr) => {
                gr.x.iter()
                    .zip(&gr.g)
                    .map(|(u, g)| g * normal::cdf(self.arg(a, *u)))
                    .sum()
            }
        }
    }

    /// Moves past the current stage with continuation region (`a`, `b`): the paths with
    /// `a < Z_k < b` go on. An empty region leaves no mass (every later probability is 0).
    pub fn advance(&mut self, a: f64, b: f64) {
        let m = self.mean(self.k);
        let lo = a.max(m - WINDOW);
        let hi = b.min(m + WINDOW);
        let next = if hi <= lo {
            Grid {
                x: vec![lo],
                g: vec![0.0],
            }
        } else {
            let n = (((hi - lo) * POINTS_PER_UNIT).ceil() as usize).max(2);
            let n = n + n % 2;
            let h = (hi - lo) / n as f64;
            let x: Vec<f64> = (0..=n).map(|j| lo + j as f64 * h).collect();
            let w = |j: usize| {
                h / 3.0
                    * if j == 0 || j == n {
                        1.0
                    } else if j % 2 == 1 {
                        4.0
                    } else {
                        2.0
                    }
            };
            let g = match &self.grid {
                None => x
                    .iter()
                    .enumerate()
                    .map(|(j, z)| w(j) * normal::pdf(z - m))
                    .collect(),
                Some(prev) => {
                    let (tk, tp) = (self.t[self.k], self.t[self.k - 1]);
                    let dt = tk - tp;
                    let (sk, sp, sd) = (tk.sqrt(), tp.sqrt(), dt.sqrt());
                    let fac = sk / sd;
                    x.iter()
                        .enumerate()
                        .map(|(j, z)| {
                            let base = (z * sk - self.eta * dt) / sd;
                            let s: f64 = prev
                                .x
                                .iter()
                                .zip(&prev.g)
                                .filter_map(|(u, g)| {
                                    let a = base - u * sp / sd;
                                    (a.abs() < KERNEL_CUTOFF).then(|| g * normal::pdf(a))
                                })
                                .sum();
                            w(j) * fac * s
                        })
                        .collect()
                }
            };
            Grid { x, g }
        };
        self.grid = Some(next);
        self.k += 1;
    }
}

/// Per-stage crossing probabilities of the design with continuation regions
/// (`lower[k]`, `upper[k]`) at fractions `t` and drift `eta`: `(P(stop low at k), P(stop high
/// at k))`, each the probability of reaching stage `k` and stopping there.
pub fn exits(t: &[f64], eta: f64, lower: &[f64], upper: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut walk = Walk::new(t, eta);
    let (mut lo, mut hi) = (Vec::new(), Vec::new());
    for k in 0..t.len() {
        lo.push(walk.lower(lower[k]));
        hi.push(walk.upper(upper[k]));
        if k + 1 < t.len() {
            walk.advance(lower[k], upper[k]);
        }
    }
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_stage_is_a_normal_tail_and_mass_is_kept() {
        let (lo, hi) = exits(&[1.0], 1.0, &[0.0], &[2.0]);
        assert!((hi[0] - normal::sf(1.0)).abs() < 1e-15);
        assert!((lo[0] - normal::cdf(-1.0)).abs() < 1e-15);
        // Without bounds until the last stage, the last stage's Z is N(η, 1) whatever the path.
        let t = [0.3, 0.55, 1.0];
        let inf = f64::INFINITY;
        let (lo, hi) = exits(&t, 0.7, &[-inf, -inf, 1.5], &[inf, inf, 1.5]);
        assert!((hi[2] - normal::sf(1.5 - 0.7)).abs() < 1e-9, "{hi:?}");
        assert!((lo[2] + hi[2] - 1.0).abs() < 1e-9);
        // Every path ends somewhere.
        let (lo, hi) = exits(&t, 1.3, &[-0.5, 0.8, 2.0], &[3.0, 2.5, 2.0]);
        let total: f64 = lo.iter().chain(&hi).sum();
        assert!((total - 1.0).abs() < 1e-8, "{total}");
    }
}
