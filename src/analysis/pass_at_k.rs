//! pass@k and the evaluation plan's key metric, **pass@2-adaptive**.
//!
//! Every count here is of successes as [`super::success`] defines them (reward ≥ the pass
//! threshold), whatever the agent's outcome.
//!
//! - **pass@k** (Chen et al. 2021, "Evaluating Large Language Models Trained on Code", eq. 1): the
//!   unbiased estimate, from `n` independent trials of a task of which `c` succeeded, of the chance
//!   that at least one of `k` independent tries succeeds: `1 − C(n − c, k) / C(n, k)`, computed as
//!   the paper's numerically stable product `1 − Π_{i = n − c + 1}^{n} (1 − k / i)`. With fewer
//!   trials than tries (`n < k`) the estimator is **undefined** (`None`): one trial cannot say how
//!   a second, independent one would go, and the plug-in `1 − (1 − c/n)^k` would report a coin
//!   flip's one result as its pass@2. pass@1 is `c / n`.
//! - **pass@2-adaptive** (`evaluation-plan.md`, "Key metric"): the chance that a task succeeds in
//!   round 1 or in the round-2 retry informed by round 1, `1 − (1 − p₁)(1 − p₂)` with `p₁`, `p₂`
//!   the task's pass@1 in round 1 and round 2. Round 2's skills are learned from all of round 1,
//!   so a round-2 trial does not depend on any one round-1 trial and the product is the joint
//!   failure probability. It is at least `max(p₁, p₂)`.
//!
//! Averaged over the fixed task set, the adaptive figure beside round 1's independent pass@2
//! answers the plan's question: does a retry informed by learning beat a plain second try? Their
//! difference is the **adaptive gain**.

/// Unbiased pass@k from `n` trials with `c` successes (see the module doc), in [0, 1]; `None`
/// when `n < k` (undefined) or `k = 0`. `c` above `n` is taken as `n`.
pub fn pass_at_k(n: u32, c: u32, k: u32) -> Option<f64> {
    let c = c.min(n);
    if k == 0 || n < k {
        return None;
    }
    if n - c < k {
        return Some(1.0);
    }
    let fail: f64 = ((n - c + 1)..=n)
        .map(|i| 1.0 - k as f64 / i as f64)
        .product();
    Some(1.0 - fail)
}

/// Why pass@k of a task with `n` trials is undefined (`None` when it is defined).
pub fn why_undefined(n: u32, k: u32) -> Option<String> {
    (n < k).then(|| format!("pass@{k} needs {k} or more trials per task ({n} planned)"))
}

/// pass@2-adaptive of one task: `1 − (1 − p1)(1 − p2)` for its round-1 and round-2 Method D pass
/// rates (fractions, clamped to [0, 1]).
pub fn pass_at_2_adaptive(p1: f64, p2: f64) -> f64 {
    1.0 - (1.0 - p1.clamp(0.0, 1.0)) * (1.0 - p2.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn pass_at_2_by_hand() {
        let p = |n, c, k| pass_at_k(n, c, k).unwrap();
        // n = 5, c = 2: 1 − C(3,2)/C(5,2) = 1 − 3/10.
        assert!(close(p(5, 2, 2), 0.7));
        // n = 5, c = 1: 1 − C(4,2)/C(5,2) = 1 − 6/10.
        assert!(close(p(5, 1, 2), 0.4));
        // n = 4, c = 3: n − c < k → 1.
        assert!(close(p(4, 3, 2), 1.0));
        assert!(close(p(5, 0, 2), 0.0));
        assert!(close(p(5, 5, 2), 1.0));
        // Fewer trials than tries: undefined, with a reason.
        assert_eq!(pass_at_k(1, 1, 2), None);
        assert_eq!(pass_at_k(1, 0, 2), None);
        assert_eq!(pass_at_k(0, 0, 2), None);
        assert!(why_undefined(1, 2).unwrap().contains("2 or more trials"));
        assert_eq!(why_undefined(2, 2), None);
        // pass@1 is the success rate.
        assert!(close(p(5, 2, 1), 0.4));
        // pass@2 ≥ pass@1 for every n ≥ 2 and c.
        for n in 2..12 {
            for c in 0..=n {
                assert!(p(n, c, 2) + 1e-12 >= p(n, c, 1), "n {n} c {c}");
            }
        }
    }

    #[test]
    fn adaptive_by_hand() {
        assert!(close(pass_at_2_adaptive(0.4, 0.5), 0.7));
        assert!(close(pass_at_2_adaptive(0.0, 0.0), 0.0));
        assert!(close(pass_at_2_adaptive(1.0, 0.0), 1.0));
    }
}
