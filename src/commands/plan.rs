//! `skillscope plan PLAN.toml`: the cost, time and power of an experiment's plan before it is
//! paid for ([`crate::analysis::forecast`], gathered by [`crate::experiment::forecast`]) — two
//! tables and where their numbers come from (or JSON) — and the group-sequential design the
//! experiment fixes when it is created, per comparison
//! ([`crate::analysis::sequential::planned`]).

use color_eyre::eyre::Result;

use crate::analysis::sequential::planned::{POWER, PlannedDesign, planned};
use crate::cli::PlanArgs;
use crate::domain::sequential::DesignSpec;
use crate::experiment::forecast::{Inputs, forecast};
use crate::format;
use crate::report::model::sequential::spec_text;
use crate::store::experiment_ledger::ExperimentReader;

/// Runs `skillscope plan`.
///
/// # Errors
/// A plan, settings or task set that cannot be read; a database that cannot be opened.
pub fn execute(args: PlanArgs) -> Result<()> {
    let mut plan = crate::experiment::plan::Plan::load(&args.plan)?;
    // The design flags over the plan's `[sequential]` table, as `experiment` applies them.
    if let Some(k) = args.stages {
        plan.sequential.stages = Some(k);
    }
    if args.no_early_stop {
        plan.sequential.early_stop = Some(false);
    }
    plan.check().map_err(|m| color_eyre::eyre::eyre!("{m}"))?;
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
    let spec: Option<DesignSpec> = plan
        .sequential
        .spec(plan.trials)
        .transpose()
        .map_err(|e| color_eyre::eyre::eyre!("[sequential]: {e}"))?;
    let early_stop = plan.sequential.early_stop();
    // The comparisons themselves (a share of the gap is a transform of one of them).
    let designs: Vec<(String, Result<PlannedDesign, String>)> = match &spec {
        None => Vec::new(),
        Some(spec) => f
            .power
            .iter()
            .filter(|p| p.unit == "pp")
            .map(|p| {
                let d = if p.n_tasks < spec.min_tasks {
                    Err(format!(
                        "— ({} tasks: a sequential design needs at least {}; the experiment refuses it)",
                        p.n_tasks, spec.min_tasks
                    ))
                } else {
                    planned(&p.components, p.n_tasks, spec).map_err(|e| format!("— ({e})"))
                };
                (p.hypothesis.clone(), d)
            })
            .collect(),
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
                "design": spec,
                "early_stop": spec.is_some() && early_stop,
                "sequential": seq,
            }))?
        );
        return Ok(());
    }
    crate::sayln!(
        "plan of experiment {} — {} trial(s) per task and condition, {} slot(s)",
        plan.name(),
        plan.trials,
        f.estimates.slots
    );
    for line in super::shared::forecast::print_lines(&f) {
        crate::outln!("{line}");
    }
    let Some(spec) = spec else {
        crate::sayln!(
            "no sequential design (the plan has no [sequential] stages): every planned trial runs"
        );
        return Ok(());
    };
    if !early_stop {
        crate::sayln!(
            "early stopping off (--no-early-stop or early_stop = false): the design's looks are recorded, every planned trial runs"
        );
        return Ok(());
    }
    crate::sayln!(
        "sequential design, fixed when the experiment is created: {}",
        spec_text(&spec)
    );
    crate::sayln!(
        "per comparison (bounds in large samples; Δ at the planned variance; a look applies the sign-flip bound of its data):"
    );
    for ((h, d), p) in designs
        .iter()
        .zip(f.power.iter().filter(|p| p.unit == "pp"))
    {
        for line in design_lines(h, d, p.n_tasks, p.trials) {
            crate::sayln!("{line}");
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
    let mut out = vec![format!(
        "  {hypothesis} ({}):",
        format::count(n, "task", "tasks")
    )];
    for (s, st) in d.stages.iter().enumerate() {
        let fut = match (st.futility_z, st.futility_pp) {
            (Some(z), Some(pp)) => format!(
                "; futility at Δ ≤ {} (z {})",
                format::pp_of(pp / 100.0),
                format::z(Some(z))
            ),
            _ => String::new(),
        };
        let effect = if st.efficacy_possible {
            format!(
                "effect at Δ ≥ {} (z {})",
                format::pp_of(st.efficacy_pp / 100.0),
                format::z(Some(st.efficacy_z))
            )
        } else {
            format!("no effect can be shown yet with {n} tasks")
        };
        out.push(format!(
            "    stage {} ({} per task, α spent {}): {effect}{fut}",
            s + 1,
            format::count(st.trials, "trial", "trials"),
            format::probability(st.alpha_spent),
        ));
    }
    let total = (n * k as usize * 2) as f64;
    out.push(format!(
        "    expected trials used: {:.0} % with no effect (saves ~{:.0} of {:.0}), {:.0} % at {} ({:.0} % power; saves ~{:.0})",
        d.share_null * 100.0,
        (1.0 - d.share_null) * total,
        total,
        d.share_powered * 100.0,
        format::pp_of(d.powered_effect_pp / 100.0),
        POWER * 100.0,
        (1.0 - d.share_powered) * total
    ));
    out
}
