//! `skillscope plan PLAN.toml`: the cost, time and power of an experiment's plan before it is
//! paid for ([`crate::analysis::forecast`], gathered by [`crate::experiment::forecast`]) — two
//! tables and where their numbers come from (or JSON).

use color_eyre::eyre::Result;

use crate::analysis::sequential::planned::{PlannedDesign, planned};
use crate::cli::PlanArgs;
use crate::experiment::forecast::{Inputs, forecast};
use crate::store::experiment_ledger::ExperimentReader;

/// Runs `skillscope plan`.
///
/// # Errors
/// A plan, settings or task set that cannot be read; a database that cannot be opened.
pub fn execute(args: PlanArgs) -> Result<()> {
    let plan = crate::experiment::plan::Plan::load(&args.plan)?;
    let run_args = super::shared::plan_setup::run_args(&plan, args.db.clone());
    let file = crate::config::FileConfig::load(run_args.config.as_deref())?;
    let (round1, db) = super::shared::request::build_request(&run_args, &file)?;
    let reading = if db.exists() {
        Some(crate::store::Store::open_for_reading(&db)?)
    } else {
        None
    };
    let f = forecast(
        reading.as_deref().map(ExperimentReader::new),
        &Inputs {
            plan: &plan,
            round1: &round1,
            effect_pp: args.effect,
        },
    )?;
    let designs: Vec<(String, Result<PlannedDesign, String>)> = if args.no_early_stop {
        Vec::new()
    } else {
        // The comparisons themselves (a share of the gap is a transform of one of them).
        f.power
            .iter()
            .filter(|p| p.unit == "pp")
            .map(|p| {
                let d = planned(
                    &p.components,
                    p.n_tasks,
                    p.trials,
                    args.stages as usize,
                    true,
                )
                .map_err(|_| {
                    format!(
                        "— ({} stages need at least {} trials per task, the plan has {})",
                        args.stages, args.stages, p.trials
                    )
                });
                (p.hypothesis.clone(), d)
            })
            .collect()
    };
    if args.json {
        let seq: Vec<serde_json::Value> = designs
            .iter()
            .map(|(h, d)| match d {
                Ok(d) => serde_json::json!({"hypothesis": h, "design": d}),
                Err(e) => serde_json::json!({"hypothesis": h, "design": null, "why": e}),
            })
            .collect();
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "plan": plan.name(),
                "tasks": round1.task_filter,
                "trials_per_task": plan.trials,
                "forecast": f,
                "early_stop": !args.no_early_stop,
                "sequential": seq,
            }))?
        );
        return Ok(());
    }
    crate::outln!(
        "plan of experiment {} — {} trial(s) per task and condition, {} slot(s)",
        plan.name(),
        plan.trials,
        f.estimates.slots
    );
    for line in super::shared::forecast::print_lines(&f) {
        crate::outln!("{line}");
    }
    if args.no_early_stop {
        crate::outln!("early stopping off (--no-early-stop): every planned trial runs");
        return Ok(());
    }
    crate::outln!(
        "sequential designs ({} stages; O'Brien–Fleming α 0.025 one-sided, non-binding futility β 0.2; Δ at the planned variance):",
        args.stages
    );
    for ((h, d), p) in designs
        .iter()
        .zip(f.power.iter().filter(|p| p.unit == "pp"))
    {
        for line in design_lines(h, d, p.n_tasks, p.trials) {
            crate::outln!("{line}");
        }
    }
    Ok(())
}

/// The lines of one comparison's design.
fn design_lines(
    hypothesis: &str,
    d: &Result<PlannedDesign, String>,
    n: usize,
    k: u32,
) -> Vec<String> {
    let d = match d {
        Ok(d) => d,
        Err(why) => return vec![format!("  {hypothesis}: {why}")],
    };
    let mut out = vec![format!("  {hypothesis}:")];
    for (s, st) in d.stages.iter().enumerate() {
        let fut = match (st.futility_z, st.futility_pp) {
            (Some(z), Some(pp)) => format!("; futility at Δ ≤ {pp:+.1} pp (z {z:.2})"),
            _ => String::new(),
        };
        out.push(format!(
            "    stage {} ({} trial{}/task, information {:.2}): effect at Δ ≥ {:+.1} pp (z {:.2}){fut}",
            s + 1,
            st.trials,
            if st.trials == 1 { "" } else { "s" },
            st.fraction,
            st.efficacy_pp,
            st.efficacy_z,
        ));
    }
    let total = (n * k as usize * 2) as f64;
    out.push(format!(
        "    expected trials used: {:.0} % with no effect (saves ~{:.0} of {:.0}), {:.0} % at {:+.1} pp (80 % power; saves ~{:.0})",
        d.share_null * 100.0,
        (1.0 - d.share_null) * total,
        total,
        d.share_powered * 100.0,
        d.powered_effect_pp,
        (1.0 - d.share_powered) * total
    ));
    out
}
