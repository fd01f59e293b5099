//! The number formats every output shares — the report (Markdown, HTML), the terminal tables,
//! the dashboard and the sentences the analysis writes — so one number reads the same wherever it
//! is shown:
//!
//! | what | format | example |
//! |---|---|---|
//! | a rate (a fraction in \[0, 1\]) | percent, one decimal | `41.7%` |
//! | a difference in percentage points | signed, one decimal; what rounds to zero is `0.0` | `+4.5`, `-2.2`, `0.0` |
//! | normalized gain g | signed, three decimals; what rounds to zero is `0.000` | `+0.250` |
//! | a CI of a rate | percent bounds, one decimal | `[25.1, 34.6]` |
//! | a CI in percentage points | signed bounds, one decimal | `[-8.3, +25.0]` |
//! | a standard error (percent or pp) | one decimal | `4.1` |
//! | a task's mean reward | two decimals | `0.75` |
//! | a count of a total | `n/total` | `25/36` |
//! | a share of trials | `n of total (rate)` | `3 of 5 (60.0%)` |
//! | a Δ of a fraction, in words | signed pp | `+36.3 pp` |
//! | a z statistic or bound | two decimals; an infinite bound `∞` | `2.51`, `∞` |
//! | a probability (α, a p-value) | as written, up to four significant decimals | `0.025`, `0.0019` |
//! | undefined | `—`, with the reason where there is room | `— (1 task: a CI needs 2 or more)` |
//! | a wait (how long a host may stay away) | whole seconds under 2 min, else whole minutes | `45 s`, `30 min` |
//!
//! Machine outputs (CSV, JSON) keep full precision and never use these.

/// The mark of an undefined number.
pub const UNDEFINED: &str = "—";

/// A wait, as the engine's messages give it: whole seconds under two minutes, else whole
/// minutes (`45 s`, `30 min`).
pub fn wait(d: std::time::Duration) -> String {
    let s = d.as_secs();
    if s < 120 {
        format!("{s} s")
    } else {
        format!("{} min", s / 60)
    }
}

/// A fraction as a percentage with one decimal: `0.297` → `29.7%`.
pub fn rate(fraction: f64) -> String {
    format!("{:.1}%", fraction * 100.0)
}

/// Percentage points with a sign and one decimal (`+4.3`, `-2.2`); what rounds to zero is
/// `0.0`, never `+0.0` or `-0.0`.
pub fn pp(points: f64) -> String {
    if (points * 10.0).round() == 0.0 {
        "0.0".into()
    } else {
        format!("{points:+.1}")
    }
}

/// A normalized gain with a sign and three decimals (`+0.332`); what rounds to zero is `0.000`.
pub fn gain(g: f64) -> String {
    if (g * 1000.0).round() == 0.0 {
        "0.000".into()
    } else {
        format!("{g:+.3}")
    }
}

/// A confidence interval of a fraction, in percent: `[25.1, 34.6]`.
pub fn ci_rate(low: f64, high: f64) -> String {
    format!("[{:.1}, {:.1}]", low * 100.0, high * 100.0)
}

/// A confidence interval already in percentage points, signed: `[+1.2, +9.8]`.
pub fn ci_pp(low: f64, high: f64) -> String {
    format!("[{}, {}]", signed(low), signed(high))
}

/// A bound of an interval in points: signed, one decimal, zero as `0.0`.
fn signed(v: f64) -> String {
    pp(v)
}

/// A difference of fractions as percentage points in a sentence: `0.363` → `+36.3 pp`.
pub fn pp_of(fraction: f64) -> String {
    format!("{} pp", pp(fraction * 100.0))
}

/// A z statistic or bound with two decimals: `2.51`; `—` when undefined (`None` or NaN).
pub fn z(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.2}"),
        Some(x) if x > 0.0 => "∞".into(),
        Some(x) if x < 0.0 => "−∞".into(),
        _ => UNDEFINED.into(),
    }
}

/// A bound on the z scale, `∞` when there is none to reach (`None`): `2.51`, `∞`.
pub fn bound(v: Option<f64>) -> String {
    z(Some(v.unwrap_or(f64::INFINITY)))
}

/// A probability with up to four significant decimals, trailing zeros dropped: `0.025`,
/// `0.0019`, `0.2`.
pub fn probability(p: f64) -> String {
    if p == 0.0 || !p.is_finite() {
        return format!("{p}");
    }
    let decimals = (4 - p.abs().log10().floor() as i32 - 1).clamp(1, 12) as usize;
    let s = format!("{p:.decimals$}");
    let s = s.trim_end_matches('0');
    s.trim_end_matches('.').to_string()
}

/// A standard error (percent or percentage points) with one decimal: `4.1`.
pub fn se(points: f64) -> String {
    format!("{points:.1}")
}

/// A task's mean reward with two decimals: `0.75`.
pub fn reward(mean: f64) -> String {
    format!("{mean:.2}")
}

/// A count of a total: `25/36`.
pub fn of(n: u64, total: u64) -> String {
    format!("{n}/{total}")
}

/// A share of a count: `3 of 5 (60.0%)`, `—` when the whole is 0.
pub fn share(n: u64, total: u64) -> String {
    if total == 0 {
        UNDEFINED.into()
    } else {
        format!("{n} of {total} ({})", rate(n as f64 / total as f64))
    }
}

/// The tasks a comparison is over: `all 19`, or `1 of 19`.
pub fn tasks_compared(n: usize, total: usize) -> String {
    if n == total {
        format!("all {total}")
    } else {
        format!("{n} of {total}")
    }
}

/// `—`, or `— (why)` when a reason is known.
pub fn undefined(why: Option<&str>) -> String {
    match why {
        Some(w) => format!("{UNDEFINED} ({w})"),
        None => UNDEFINED.into(),
    }
}

/// `1234` as `1,234`: digits grouped by threes.
pub fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// `n` and the noun, plural unless `n` is 1: `1 trial`, `3 trials`.
pub fn count(n: usize, singular: &str, plural: &str) -> String {
    if n == 1 {
        format!("1 {singular}")
    } else {
        format!("{n} {plural}")
    }
}

/// A design's size, `5 tasks × 1 trial`, `1 task × 5 trials`.
pub fn tasks_by_trials(tasks: usize, trials: u32) -> String {
    format!(
        "{} × {}",
        count(tasks, "task", "tasks"),
        count(trials as usize, "trial", "trials")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_in_seconds_then_minutes() {
        use std::time::Duration;
        assert_eq!(wait(Duration::from_secs(45)), "45 s");
        assert_eq!(wait(Duration::from_secs(119)), "119 s");
        assert_eq!(wait(Duration::from_secs(120)), "2 min");
        assert_eq!(wait(Duration::from_secs(1830)), "30 min");
    }

    #[test]
    fn zero_has_one_spelling() {
        assert_eq!(pp(0.04), "0.0");
        assert_eq!(pp(-0.04), "0.0");
        assert_eq!(pp(0.05), "+0.1");
        assert_eq!(pp(-16.66), "-16.7");
        assert_eq!(gain(0.0004), "0.000");
        assert_eq!(gain(-0.25), "-0.250");
        assert_eq!(ci_pp(-8.33, 0.0), "[-8.3, 0.0]");
    }

    #[test]
    fn rates_counts_and_words() {
        assert_eq!(rate(0.4166), "41.7%");
        assert_eq!(rate(1.0), "100.0%");
        assert_eq!(ci_rate(0.139, 0.417), "[13.9, 41.7]");
        assert_eq!(of(25, 36), "25/36");
        assert_eq!(tasks_compared(19, 19), "all 19");
        assert_eq!(tasks_compared(1, 19), "1 of 19");
        assert_eq!(undefined(Some("not run")), "— (not run)");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(count(1, "trial", "trials"), "1 trial");
        assert_eq!(count(0, "trial", "trials"), "0 trials");
    }

    #[test]
    fn statistics_of_a_sequential_design() {
        assert_eq!(pp_of(0.363), "+36.3 pp");
        assert_eq!(pp_of(0.0001), "0.0 pp");
        assert_eq!(z(Some(2.514)), "2.51");
        assert_eq!(z(None), "—");
        assert_eq!(z(Some(f64::NAN)), "—");
        assert_eq!(bound(None), "∞");
        assert_eq!(probability(0.025), "0.025");
        assert_eq!(probability(0.2), "0.2");
        assert_eq!(probability(0.001_923_75), "0.001924");
        assert_eq!(probability(0.0122), "0.0122");
    }
}
