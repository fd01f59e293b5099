//! The forecast's tables ([`crate::analysis::forecast`]): cost and time per condition, then the
//! comparisons' power — what `skillscope plan` and the experiment's start print.

use comfy_table::{Cell, CellAlignment};

use super::table::{Column, Fitted, terminal_width};
use crate::console::table::fit;

use crate::analysis::forecast::{Forecast, duration_interval, usd, usd_interval};

/// A right-aligned cell whose quantities stay whole when its column wraps.
fn right(s: String) -> Cell {
    Cell::new(whole_quantities(&s)).set_alignment(CellAlignment::Right)
}

/// `text` with a no-break space between a number and the unit after it (`68.6 pp`, `15 s`,
/// `3 min`), so a narrow column wraps between quantities (`20 s` / `(15 s–25 s)`), never inside
/// one (`20 s (15` / `s–25 s)`).
fn whole_quantities(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    chars
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let number_before = i > 0 && chars[i - 1].is_ascii_digit();
            let unit_after = chars.get(i + 1).is_some_and(|n| n.is_alphabetic());
            if c == ' ' && number_before && unit_after {
                '\u{a0}'
            } else {
                c
            }
        })
        .collect()
}

/// Trials, cost and wall time per condition and in total.
pub fn cost_table(f: &Forecast) -> Fitted {
    let mut t: Vec<Vec<Cell>> = Vec::new();
    let known = !f.estimates.cost.is_empty();
    for r in &f.rows {
        t.push(vec![
            Cell::new(&r.label),
            right(if r.round == 0 {
                String::new()
            } else {
                r.round.to_string()
            }),
            right(r.trials.to_string()),
            right(r.remaining.to_string()),
            right(usd(r.spent_usd)),
            right(if known {
                usd_interval(r.cost_usd)
            } else {
                "—".into()
            }),
            right(duration_interval(r.wall_secs)),
        ]);
    }
    let columns = [
        Column::new("condition").short("cond"),
        Column::new("round").short("rnd"),
        Column::new("trials"),
        Column::new("to run"),
        Column::new("spent"),
        Column::new("cost, 95% interval").short("cost"),
        Column::new("wall time").short("time"),
    ];
    fit(&columns, t, terminal_width())
}

/// Each comparison's standard error, minimum detectable effect and the inverse answers.
pub fn power_table(f: &Forecast) -> Fitted {
    let mut t: Vec<Vec<Cell>> = Vec::new();
    for p in &f.power {
        let fmt = |x: f64| match p.unit.as_str() {
            "share" => format!("{:.0}%", x * 100.0),
            _ => format!("{x:.1} pp"),
        };
        t.push(vec![
            Cell::new(crate::sanitize::text(&p.hypothesis)),
            right(format!("{} × {}", p.n_tasks, p.trials)),
            right(format!("{:.1}", p.se_pp)),
            right(fmt(p.mde)),
            right(
                p.aa_noise_pp
                    .map_or_else(|| "—".into(), |h| format!("±{h:.1}")),
            ),
            right(p.measured.map_or_else(|| "—".into(), fmt)),
            right(fmt(p.effect)),
            right(p.tasks_needed.map_or_else(|| "—".into(), |n| n.to_string())),
            right(
                p.trials_needed
                    .map_or_else(|| "none".into(), |n| n.to_string()),
            ),
        ]);
    }
    let columns = [
        Column::new("comparison").text(),
        Column::new("tasks × trials").short("n×K"),
        Column::new("SE pp").short("SE"),
        Column::new("MDE"),
        Column::new("A/A noise").short("A/A"),
        Column::new("measured").short("meas"),
        Column::new("effect").short("eff"),
        Column::new("tasks needed").short("tasks"),
        Column::new("trials needed").short("trials"),
    ];
    fit(&columns, t, terminal_width())
}

/// Both tables with their sources, definitions and notes, as lines.
pub fn print_lines(f: &Forecast) -> Vec<String> {
    let mut out = vec![cost_table(f).to_string()];
    out.push(format!("cost from: {}", f.estimates.cost_source));
    out.push(format!("time from: {}", f.estimates.seconds_source));
    out.push(String::new());
    out.push(
        "minimum detectable effects at 80% power, α = 0.05 (two-sided), paired over tasks (Miller 2024, arXiv:2411.00640):"
            .into(),
    );
    out.push(power_table(f).to_string());
    let first = f.power.first().map(|p| p.source.as_str());
    if f.power.iter().all(|p| Some(p.source.as_str()) == first) {
        out.extend(first.map(|s| format!("variances from: {s}")));
    } else {
        out.extend(
            f.power
                .iter()
                .map(|p| format!("variances of {}: {}", p.hypothesis, p.source)),
        );
    }
    out.push(
        "MDE = 2.80·√((ω² + (σ²_with + σ²_without)/K)/n): ω² the between-task variance of the paired differences, σ² the within-task variance of trials; tasks/trials needed: the same solved for n or K at the effect (none: more trials cannot reach it, more tasks can)"
            .into(),
    );
    if !f.noise.is_empty() {
        out.push(format!(
            "noise floor of the trials so far (flip rate: tasks whose trials disagree; A/A noise: the spread of Δ between random halves of a condition's own trials, scaled to {} trials per task; {}):",
            f.power.first().map_or(0, |p| p.trials),
            crate::analysis::noise::NoiseMethod::from(&crate::analysis::ci::CiMethod::default())
                .describe()
        ));
        out.extend(f.noise.iter().map(|r| format!("  {}", r.line())));
        out.push(
            "A/A noise beside the MDE: both sides' pooled, √((h₁² + h₂²)/2), a round-2 side not yet run borrowing its round-1 counterpart's; an effect within it is what rerunning one condition gives"
                .into(),
        );
    }
    // An undefined A/A noise says why, once per reason.
    let mut why_none: Vec<String> = Vec::new();
    for p in &f.power {
        if let (None, Some(why)) = (p.aa_noise_pp, &p.aa_noise_undefined) {
            let line = format!(
                "A/A noise — for {}: {why}",
                crate::sanitize::text(&p.hypothesis)
            );
            if !why_none.contains(&line) {
                why_none.push(line);
            }
        }
    }
    out.extend(why_none);
    out.extend(f.notes.iter().map(|n| format!("note: {n}")));
    // Lines of text wrap between words on a terminal, as the tables fit it.
    let width = terminal_width();
    out.into_iter()
        .map(|l| {
            if l.contains('\n') {
                l
            } else {
                crate::console::table::paragraph(&l, width)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wall-time interval in a narrow column wraps between its quantities, and prints with
    /// plain spaces.
    #[test]
    fn quantities_stay_whole_in_a_narrow_column() {
        assert_eq!(
            whole_quantities("20 s (15 s–25 s) · 68.6 pp · 5 × 2"),
            "20\u{a0}s (15\u{a0}s–25\u{a0}s) · 68.6\u{a0}pp · 5 × 2"
        );
        let columns = [Column::new("wall time")];
        let t = fit(
            &columns,
            vec![vec![right("20 s (15 s–25 s)".into())]],
            Some(14),
        );
        let text = t.to_string();
        assert!(!text.contains('\u{a0}'), "{text}");
        assert!(
            text.contains("20 s") && text.contains("(15 s–25 s)"),
            "{text}"
        );
    }
}
