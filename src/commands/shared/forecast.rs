//! The forecast's tables ([`crate::analysis::forecast`]): cost and time per condition, then the
//! comparisons' power — what `skillscope plan` and the experiment's start print.

use comfy_table::{Cell, CellAlignment, Table, presets::UTF8_FULL_CONDENSED};

use crate::analysis::forecast::{Forecast, duration_interval, usd, usd_interval};

fn right(s: String) -> Cell {
    Cell::new(s).set_alignment(CellAlignment::Right)
}

/// Trials, cost and wall time per condition and in total.
pub fn cost_table(f: &Forecast) -> super::table::Fitted {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    let known = !f.estimates.cost.is_empty();
    for r in &f.rows {
        t.add_row(vec![
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
    let headers: Vec<(String, Option<&str>)> = vec![
        ("condition".into(), Some("cond")),
        ("round".into(), Some("rnd")),
        ("trials".into(), None),
        ("to run".into(), None),
        ("spent".into(), None),
        ("cost, 95% interval".into(), Some("cost")),
        ("wall time".into(), Some("time")),
    ];
    super::table::fit_table(t, &headers, super::table::terminal_width())
}

/// Each comparison's standard error, minimum detectable effect and the inverse answers.
pub fn power_table(f: &Forecast) -> super::table::Fitted {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    for p in &f.power {
        let fmt = |x: f64| match p.unit.as_str() {
            "share" => format!("{:.0}%", x * 100.0),
            _ => format!("{x:.1} pp"),
        };
        t.add_row(vec![
            Cell::new(crate::text::sanitize(&p.hypothesis)),
            right(format!("{} × {}", p.n_tasks, p.trials)),
            right(format!("{:.1}", p.se_pp)),
            right(fmt(p.mde)),
            right(p.measured.map_or_else(|| "—".into(), fmt)),
            right(fmt(p.effect)),
            right(p.tasks_needed.map_or_else(|| "—".into(), |n| n.to_string())),
            right(
                p.trials_needed
                    .map_or_else(|| "none".into(), |n| n.to_string()),
            ),
        ]);
    }
    let headers: Vec<(String, Option<&str>)> = vec![
        ("comparison".into(), None),
        ("tasks × trials".into(), Some("n×K")),
        ("SE pp".into(), Some("SE")),
        ("MDE".into(), None),
        ("measured".into(), Some("meas")),
        ("effect".into(), Some("eff")),
        ("tasks needed".into(), Some("tasks")),
        ("trials needed".into(), Some("trials")),
    ];
    super::table::fit_table(t, &headers, super::table::terminal_width())
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
    out.extend(f.notes.iter().map(|n| format!("note: {n}")));
    out
}
