//! Before each round is paid for: what the experiment's trials will cost, how long they will take
//! at the configured concurrency, and what its comparisons can detect (`skillscope plan`, and the
//! experiment at its start and at the round boundary). Pure: estimates in, rows out; gathering
//! the estimates from the store, the tasks and the price list is `experiment::forecast`'s.
//!
//! **Cost** of the trials still to run, per condition: from a sample of measured per-trial costs
//! (round 1's, else imported runs of the same harness and model), `r·m ± 1.96·s·√(r + r²/n)` for
//! `r` trials at mean `m` and sample deviation `s` of `n` measured trials (the spread of `r` new
//! draws plus the uncertainty of `m`, as [`super::spend`] projects a running run); else an assumed
//! per-trial range from the price list and the task timeouts, `r` times its ends. What is already
//! spent is added; the total adds the conditions' intervals end to end (conservative: they may
//! rest on the same trials). **Wall time** is the remaining trials' total duration over the slots
//! (concurrency × Docker hosts), from measured durations or the timeouts likewise. **Power** rows
//! are [`super::power`]'s minimum detectable effects at the planned tasks and trials, with the
//! inverse answers for an effect of interest.

use std::collections::BTreeMap;

use serde::Serialize;

use super::power::Components;
use super::spend::mean_sd;

/// A per-trial quantity (USD or seconds): a measured sample, or an assumed range.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PerTrial {
    /// Measured values, one per trial.
    Measured(Vec<f64>),
    /// Assumed: a point and a range.
    Assumed {
        /// The point estimate.
        point: f64,
        /// Low end.
        low: f64,
        /// High end.
        high: f64,
    },
}

/// A projected total with its 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct Interval {
    /// Point estimate.
    pub point: f64,
    /// Low end (≥ 0).
    pub low: f64,
    /// High end.
    pub high: f64,
}

impl std::iter::Sum for Interval {
    fn sum<I: Iterator<Item = Interval>>(iter: I) -> Interval {
        iter.fold(Interval::default(), Interval::add)
    }
}

impl Interval {
    fn add(self, o: Interval) -> Interval {
        Interval {
            point: self.point + o.point,
            low: self.low + o.low,
            high: self.high + o.high,
        }
    }
}

impl PerTrial {
    /// The total of `r` more trials (see the module docs), and its variance when measured (for
    /// summing intervals of independent conditions).
    pub fn project(&self, r: usize) -> (Interval, Option<f64>) {
        let r = r as f64;
        match self {
            PerTrial::Measured(xs) => match mean_sd(xs) {
                Some((m, s)) => {
                    let n = xs.len() as f64;
                    let var = s * s * (r + r * r / n);
                    let half = 1.96 * var.sqrt();
                    let point = r * m;
                    (
                        Interval {
                            point,
                            low: (point - half).max(0.0),
                            high: point + half,
                        },
                        Some(var),
                    )
                }
                None => (Interval::default(), None),
            },
            PerTrial::Assumed { point, low, high } => (
                Interval {
                    point: r * point,
                    low: r * low,
                    high: r * high,
                },
                None,
            ),
        }
    }

    /// How many trials it rests on (0 for an assumption).
    pub fn measured(&self) -> usize {
        match self {
            PerTrial::Measured(xs) => xs.len(),
            PerTrial::Assumed { .. } => 0,
        }
    }
}

/// One condition of the plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConditionPlan {
    /// `A`, `B`, `C`, `A'`, `B'`.
    pub label: String,
    /// Round (1 or 2).
    pub round: u8,
    /// Trials planned (tasks × trials per task).
    pub trials: usize,
    /// Of which already judged.
    pub done: usize,
    /// What the judged ones cost, USD.
    pub spent_usd: f64,
}

/// What the cost and time of the remaining trials are estimated from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimates {
    /// Per-trial cost, USD, by condition label (a label without one takes the first).
    pub cost: BTreeMap<String, PerTrial>,
    /// Where the cost comes from, in words.
    pub cost_source: String,
    /// Per-trial wall time, seconds, by condition label (a label without one takes the first).
    pub seconds: BTreeMap<String, PerTrial>,
    /// Where the time comes from, in words.
    pub seconds_source: String,
    /// Trials at once: concurrency × Docker hosts.
    pub slots: usize,
}

/// One condition's projection.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostRow {
    /// The condition (or `total`).
    pub label: String,
    /// Round (0 for the total).
    pub round: u8,
    /// Trials planned.
    pub trials: usize,
    /// Still to run.
    pub remaining: usize,
    /// Spent so far, USD.
    pub spent_usd: f64,
    /// Projected total (spent included), USD, with its 95 % interval.
    pub cost_usd: Interval,
    /// Wall time of the remaining trials at the slots, seconds.
    pub wall_secs: Interval,
}

/// One comparison's power at the planned design.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PowerRow {
    /// What it tests: `H1 A' − A (learned skills vs none)`.
    pub hypothesis: String,
    /// Tasks in the comparison.
    pub n_tasks: usize,
    /// Trials per task and condition.
    pub trials: u32,
    /// Standard error of the difference at this design, percentage points.
    pub se_pp: f64,
    /// Minimum detectable effect at 80 % power, α = 0.05 (two-sided), in `unit`.
    pub mde: f64,
    /// `pp`, or `share` for the share of the B − A gap.
    pub unit: String,
    /// The effect the inverse answers are for, in `unit`.
    pub effect: f64,
    /// Tasks that effect needs at this many trials per task.
    pub tasks_needed: Option<u64>,
    /// Trials per task that effect needs over these tasks (`None`: no number suffices, or the
    /// trial-to-trial variance is unknown — see `within_known`).
    pub trials_needed: Option<u64>,
    /// Whether both sides' trial-to-trial variance is measured (some task ran twice); without it
    /// the trials an effect needs are unknown, not "none".
    pub within_known: bool,
    /// The difference measured so far, in `unit`, when it was.
    pub measured: Option<f64>,
    /// Where the variances come from.
    pub source: String,
    /// The variance components used (fractions²).
    pub components: Components,
    /// The A/A noise of its two sides in percentage points at this design's trials per task —
    /// pooled per split over the tasks both sides measured, as the report pools a comparison's
    /// ([`crate::analysis::noise::aa_noise_paired_at`]; a side not measured yet borrows its
    /// round-1 counterpart's, pooled as √((h_with² + h_without²)/2)); `None` before a side has a
    /// task with 2 or more finished trials, and for a share of the gap.
    pub aa_noise_pp: Option<f64>,
    /// Its Monte Carlo band, pp ([`crate::analysis::noise::AaNoise::band_pp`]), when it was
    /// drawn from both sides' trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aa_noise_band_pp: Option<(f64, f64)>,
    /// Why [`PowerRow::aa_noise_pp`] is undefined, when it is.
    pub aa_noise_undefined: Option<String>,
}

/// A condition's noise floor measured from its trials so far (`plan`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoiseRow {
    /// `A`, `B`, `C`, `A'`, `B'`.
    pub label: String,
    /// Its flip rate.
    pub flip: crate::analysis::noise::FlipRate,
    /// Its A/A noise, scaled to the plan's trials per task.
    pub aa_noise: crate::analysis::noise::AaNoise,
}

impl NoiseRow {
    /// `A: flip rate 15.0% (3 of 20 tasks); A/A noise ±3.1 pp over 20 tasks`.
    pub fn line(&self) -> String {
        let flip = match self.flip.rate() {
            Some(r) => format!(
                "flip rate {} ({} of {} tasks)",
                crate::format::rate(r),
                self.flip.flipped,
                self.flip.tasks
            ),
            None => format!(
                "flip rate {}",
                crate::format::undefined(self.flip.why_undefined().as_deref())
            ),
        };
        let aa = match self.aa_noise.spread_pp {
            Some(h) => format!(
                "A/A noise ±{} pp{} over {} tasks",
                crate::format::se(h),
                band_words(self.aa_noise.band_pp),
                self.aa_noise.n_tasks
            ),
            None => format!(
                "A/A noise {}",
                crate::format::undefined(self.aa_noise.undefined.as_deref())
            ),
        };
        format!("{}: {flip}; {aa}", self.label)
    }
}

/// ` (Monte Carlo band 2.9–3.3)` for an A/A noise's band, pp; empty without one.
pub fn band_words(band: Option<(f64, f64)>) -> String {
    band.map(|(lo, hi)| {
        format!(
            " (Monte Carlo band {}–{})",
            crate::format::se(lo),
            crate::format::se(hi)
        )
    })
    .unwrap_or_default()
}

/// The whole forecast.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Forecast {
    /// Per condition, then `total`.
    pub rows: Vec<CostRow>,
    /// What the estimates rest on.
    pub estimates: Estimates,
    /// The comparisons' power.
    pub power: Vec<PowerRow>,
    /// Remarks (what is left out, what is assumed).
    pub notes: Vec<String>,
    /// The noise floor of each condition with finished trials (round 1's, then round 2's).
    pub noise: Vec<NoiseRow>,
}

/// Projects the cost and wall time of `conditions` from `estimates`: a row per condition, then
/// `total`. The total's cost interval is the per-condition intervals added end to end (they may
/// rest on the same measured trials, so their errors are not independent: a conservative sum);
/// so is its wall time, each condition's from its own durations.
pub fn project(conditions: &[ConditionPlan], estimates: &Estimates) -> Vec<CostRow> {
    let fallback = estimates.cost.values().next().cloned();
    let seconds_fallback = estimates.seconds.values().next().cloned();
    let slots = estimates.slots.max(1) as f64;
    let over_slots = |i: Interval| Interval {
        point: i.point / slots,
        low: i.low / slots,
        high: i.high / slots,
    };
    let mut rows = Vec::new();
    let mut total_cost = Interval::default();
    for c in conditions {
        let remaining = c.trials.saturating_sub(c.done);
        let per = estimates.cost.get(&c.label).cloned().or(fallback.clone());
        let (cost, _) = per.map(|p| p.project(remaining)).unwrap_or_default();
        let cost = Interval {
            point: cost.point + c.spent_usd,
            low: cost.low + c.spent_usd,
            high: cost.high + c.spent_usd,
        };
        total_cost = total_cost.add(cost);
        let seconds = estimates
            .seconds
            .get(&c.label)
            .cloned()
            .or(seconds_fallback.clone());
        let wall = seconds.map(|p| p.project(remaining).0).unwrap_or_default();
        rows.push(CostRow {
            label: c.label.clone(),
            round: c.round,
            trials: c.trials,
            remaining,
            spent_usd: c.spent_usd,
            cost_usd: cost,
            wall_secs: over_slots(wall),
        });
    }
    let remaining: usize = rows.iter().map(|r| r.remaining).sum();
    rows.push(CostRow {
        label: "total".into(),
        round: 0,
        trials: conditions.iter().map(|c| c.trials).sum(),
        remaining,
        spent_usd: conditions.iter().map(|c| c.spent_usd).sum(),
        cost_usd: total_cost,
        // The conditions' wall times one after another (each from its own durations).
        wall_secs: rows.iter().map(|r| r.wall_secs).sum(),
    });
    rows
}

/// The power row of `hypothesis` from variance components `c` at `n` tasks × `k` trials, with
/// the inverse answers for `effect_pp` percentage points. `gap_pp`: for the share of the B − A
/// gap, the measured (or expected) gap it divides by.
pub fn power_row(
    hypothesis: &str,
    c: Components,
    n: usize,
    k: u32,
    effect_pp: f64,
    source: &str,
    gap_pp: Option<f64>,
) -> PowerRow {
    let mde_pp = c.mde(n, k) * 100.0;
    let se_pp = c.var_of_mean(n, k).sqrt() * 100.0;
    let effect = effect_pp / 100.0;
    let (mde, unit, effect_shown, measured) = match gap_pp {
        Some(g) if g > 0.0 => (
            mde_pp / g,
            "share",
            effect_pp / g,
            (c.n_tasks > 0).then(|| c.mean_diff * 100.0 / g),
        ),
        _ => (
            mde_pp,
            "pp",
            effect_pp,
            (c.n_tasks > 0).then_some(c.mean_diff * 100.0),
        ),
    };
    PowerRow {
        hypothesis: hypothesis.to_string(),
        n_tasks: n,
        trials: k,
        se_pp,
        mde,
        unit: unit.into(),
        effect: effect_shown,
        tasks_needed: c.tasks_needed(effect, k),
        trials_needed: c.trials_needed(effect, n),
        within_known: c.within_a.is_some() && c.within_b.is_some(),
        measured,
        source: source.to_string(),
        components: c,
        aa_noise_pp: None,
        aa_noise_band_pp: None,
        aa_noise_undefined: Some(if unit == "share" {
            "a share of the gap, not a difference of two conditions".into()
        } else {
            "no trials measured yet".into()
        }),
    }
}

/// `$12.34`, `$1,234`.
pub fn usd(x: f64) -> String {
    if x >= 1000.0 {
        let whole = x.round() as u64;
        let s = whole.to_string();
        let mut out = String::new();
        for (i, ch) in s.chars().enumerate() {
            if i > 0 && (s.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(ch);
        }
        format!("${out}")
    } else {
        format!("${x:.2}")
    }
}

/// `3 h 20 min`, `12 min`, `40 s`.
pub fn duration(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", (s + 30) / 60),
        _ => format!("{} h {} min", s / 3600, (s % 3600 + 30) / 60),
    }
}

/// `$120.00 ($80.00–$160.00)`.
pub fn usd_interval(i: Interval) -> String {
    if (i.high - i.low).abs() < 0.005 {
        usd(i.point)
    } else {
        format!("{} ({}–{})", usd(i.point), usd(i.low), usd(i.high))
    }
}

/// `12 min (8 min–20 min)`.
pub fn duration_interval(i: Interval) -> String {
    if (i.high - i.low).abs() < 1.0 {
        duration(i.point)
    } else {
        format!(
            "{} ({}–{})",
            duration(i.point),
            duration(i.low),
            duration(i.high)
        )
    }
}

impl PowerRow {
    /// `H1 A' − A: MDE 12.3 pp (SE 4.4 pp) over 84 tasks × 5 trials; +5.0 pp needs 472 tasks or
    /// no number of trials`.
    pub fn line(&self) -> String {
        let fmt = |x: f64| match self.unit.as_str() {
            "share" => format!("{:.0}% of the gap", x * 100.0),
            _ => format!("{x:.1} pp"),
        };
        format!(
            "{}: MDE {} (SE {:.1} pp) over {} tasks × {} trials; {} needs {} tasks at {} trials, or {}",
            self.hypothesis,
            fmt(self.mde),
            self.se_pp,
            self.n_tasks,
            self.trials,
            fmt(self.effect),
            self.tasks_needed
                .map_or_else(|| "—".into(), |n| n.to_string()),
            self.trials,
            match self.trials_needed {
                _ if !self.within_known => format!(
                    "an unknown number of trials per task over {} tasks (no task ran twice: the trial-to-trial variance is not measured)",
                    self.n_tasks
                ),
                Some(k) => format!("{k} trials per task over {} tasks", self.n_tasks),
                None => format!("no number of trials over {} tasks", self.n_tasks),
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(label: &str, trials: usize, done: usize, spent: f64) -> ConditionPlan {
        ConditionPlan {
            label: label.into(),
            round: if label.ends_with('\'') { 2 } else { 1 },
            trials,
            done,
            spent_usd: spent,
        }
    }

    #[test]
    fn projections_by_hand() {
        // Round 1 done: A cost 1 and 3 (mean 2, sd √2), B 2 and 2 (mean 2, sd 0); round 2 to run.
        let est = Estimates {
            cost: BTreeMap::from([
                ("A".into(), PerTrial::Measured(vec![1.0, 3.0])),
                ("B".into(), PerTrial::Measured(vec![2.0, 2.0])),
                ("A'".into(), PerTrial::Measured(vec![1.0, 3.0])),
                ("B'".into(), PerTrial::Measured(vec![2.0, 2.0])),
            ]),
            cost_source: "round 1".into(),
            seconds: BTreeMap::from([("A".into(), PerTrial::Measured(vec![60.0, 60.0]))]),
            seconds_source: "round 1".into(),
            slots: 2,
        };
        let rows = project(
            &[
                plan("A", 2, 2, 4.0),
                plan("B", 2, 2, 4.0),
                plan("A'", 2, 0, 0.0),
                plan("B'", 2, 0, 0.0),
            ],
            &est,
        );
        let a2 = &rows[2];
        assert_eq!(a2.remaining, 2);
        assert!((a2.cost_usd.point - 4.0).abs() < 1e-12);
        // 1.96 · √2 · √(2 + 4/2) = 1.96 · √8.
        assert!((a2.cost_usd.high - (4.0 + 1.96 * 8f64.sqrt())).abs() < 1e-9);
        assert_eq!(rows[3].cost_usd.low, 4.0);
        let total = rows.last().unwrap();
        assert_eq!(total.label, "total");
        assert!((total.cost_usd.point - 16.0).abs() < 1e-12);
        // End to end: A' and B' intervals added (A and B are spent).
        assert!((total.cost_usd.high - (16.0 + 1.96 * 8f64.sqrt())).abs() < 1e-9);
        assert_eq!(total.remaining, 4);
        // 4 trials of 60 s on 2 slots.
        assert!((total.wall_secs.point - 120.0).abs() < 1e-9);
        // Assumed ranges add end to end.
        let est = Estimates {
            cost: BTreeMap::from([(
                "A".into(),
                PerTrial::Assumed {
                    point: 1.0,
                    low: 0.5,
                    high: 3.0,
                },
            )]),
            cost_source: "price list".into(),
            seconds: BTreeMap::from([(
                "A".into(),
                PerTrial::Assumed {
                    point: 100.0,
                    low: 10.0,
                    high: 300.0,
                },
            )]),
            seconds_source: "timeouts".into(),
            slots: 4,
        };
        let rows = project(&[plan("A", 10, 0, 0.0), plan("B", 10, 0, 0.0)], &est);
        let t = rows.last().unwrap();
        assert_eq!(
            t.cost_usd,
            Interval {
                point: 20.0,
                low: 10.0,
                high: 60.0
            }
        );
        assert!((t.wall_secs.point - 500.0).abs() < 1e-9);
    }

    #[test]
    fn words() {
        assert_eq!(usd(1234.4), "$1,234");
        assert_eq!(usd(3.456), "$3.46");
        assert_eq!(duration(45.0), "45 s");
        assert_eq!(duration(600.0), "10 min");
        assert_eq!(duration(12_000.0), "3 h 20 min");
    }

    #[test]
    fn a_share_of_the_gap_divides_by_it() {
        let c = super::super::power::binary_bound(0.3, 0.45);
        let pp = power_row("H1", c, 84, 5, 5.0, "bound", None);
        let share = power_row("H2", c, 84, 5, 5.0, "bound", Some(15.0));
        assert!((share.mde - pp.mde / 15.0).abs() < 1e-12);
        assert_eq!(share.unit, "share");
        assert!(
            pp.line().contains("over 84 tasks × 5 trials"),
            "{}",
            pp.line()
        );
    }

    #[test]
    fn trials_an_effect_needs_are_unknown_without_a_trial_variance() {
        // One trial per task so far: no task ran twice, so the trial-to-trial variance — what
        // more trials would average away — is not measured.
        let c = Components {
            n_tasks: 10,
            mean_diff: 0.1,
            var_diff: 0.2,
            within_a: None,
            within_b: None,
            between: 0.2,
        };
        let row = power_row("H1", c, 10, 1, 5.0, "round 1", None);
        assert!(!row.within_known);
        let line = row.line();
        assert!(line.contains("an unknown number of trials"), "{line}");
        assert!(!line.contains("no number of trials"), "{line}");
    }
}
