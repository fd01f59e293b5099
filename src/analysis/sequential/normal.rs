//! The standard normal distribution as the group-sequential computations need it: density,
//! cdf, upper tail and quantile. The cdf is `erfc` (libm, the FreeBSD/musl implementation,
//! < 1 ulp) so a tail probability of 1e-7 keeps its relative precision; the quantile is Newton's
//! method on `ln Φ` from a closed-form start, to about 1e-15.

/// `1/√(2π)`.
const INV_SQRT_2PI: f64 = 0.398_942_280_401_432_7;

/// The standard normal density `φ(x)`.
pub fn pdf(x: f64) -> f64 {
    INV_SQRT_2PI * (-0.5 * x * x).exp()
}

/// The standard normal cdf `Φ(x)`, as `erfc(−x/√2)/2` (full relative precision in the lower
/// tail).
pub fn cdf(x: f64) -> f64 {
    if x == f64::NEG_INFINITY {
        return 0.0;
    }
    if x == f64::INFINITY {
        return 1.0;
    }
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// The upper tail `Q(x) = 1 − Φ(x)`, as `erfc(x/√2)/2` — never `1 − Φ(x)`, which loses the
/// digits of a small tail.
pub fn sf(x: f64) -> f64 {
    cdf(-x)
}

/// The quantile `Φ⁻¹(p)` for `p` in (0, 1) (`−∞`/`+∞` at 0 and 1, NaN for NaN).
///
/// For `p ≤ ½` Newton's method solves `ln Φ(x) = ln p` (the log makes the far tail converge in a
/// few steps: its slope `φ/Φ` grows like |x|), started at the tail approximation
/// `−√(−2 ln p)`-based guess; `p > ½` is the mirror image `−Φ⁻¹(1 − p)` computed from the upper
/// tail so that no digits of `1 − p` are lost beyond those `p` carries.
pub fn quantile(p: f64) -> f64 {
    if p.is_nan() {
        return f64::NAN;
    }
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    if p > 0.5 {
        return -lower_quantile(1.0 - p);
    }
    lower_quantile(p)
}

/// `Φ⁻¹(p)` for `p` in (0, ½].
fn lower_quantile(p: f64) -> f64 {
    if p == 0.5 {
        return 0.0;
    }
    let target = p.ln();
    // Start: the first terms of the asymptotic inverse of Mills' ratio, good to ~0.01 in the
    // tail, and a linear guess near the centre.
    let mut x = if p > 0.3 {
        (p - 0.5) / INV_SQRT_2PI
    } else {
        let r = (-2.0 * target).sqrt();
        -(r - ((4.0 * std::f64::consts::PI).ln() + 2.0 * r.ln()) / (2.0 * r))
            .max(0.0)
            .min(r)
    };
    for _ in 0..60 {
        let c = cdf(x);
        // d/dx ln Φ(x) = φ(x)/Φ(x).
        let step = (c.ln() - target) * c / pdf(x);
        x -= step;
        if step.abs() <= 1e-15 * x.abs().max(1.0) {
            break;
        }
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // z_{0.975}, z_{0.9875} (the one-sided 0.025 OBF spending constant), z_{0.8}.
        assert!((quantile(0.975) - 1.959_963_984_540_054).abs() < 1e-14);
        assert!((quantile(0.9875) - 2.241_402_727_604_945).abs() < 1e-14);
        assert!((quantile(0.8) - 0.841_621_233_572_914_3).abs() < 1e-14);
        assert!((quantile(0.025) + 1.959_963_984_540_054).abs() < 1e-14);
        // scipy.stats.norm.ppf(1e-9), ppf(1e-300).
        assert!((quantile(1e-9) + 5.997_807_015_007_686).abs() < 1e-12);
        assert!((quantile(1e-300) + 37.047_096_299_361_2).abs() < 1e-10);
        // A far tail keeps its relative precision: Q(5) = 2.866515718791933e-7 (scipy).
        assert!((sf(5.0) / 2.866_515_718_791_933e-7 - 1.0).abs() < 1e-13);
        assert!((cdf(0.0) - 0.5).abs() < 1e-16);
        for p in [1e-200, 1e-9, 1e-4, 0.1, 0.3, 0.31, 0.5, 0.7, 0.999] {
            // Φ's relative error is |x|·δx: the quantile is good to an ulp or two of x.
            let x = quantile(p);
            assert!(
                (cdf(x) / p - 1.0).abs() < 1e-14 * x.abs().max(1.0) * 10.0,
                "{p}"
            );
        }
        assert_eq!(quantile(0.5), 0.0);
        assert_eq!(quantile(0.0), f64::NEG_INFINITY);
        assert_eq!(quantile(1.0), f64::INFINITY);
        assert!((pdf(0.0) - INV_SQRT_2PI).abs() < 1e-16);
    }
}
