//! `skillscope plan PLAN.toml`: the cost, time and power of an experiment's plan before it is
//! paid for ([`crate::analysis::forecast`], gathered by [`crate::experiment::forecast`]) — two
//! tables and where their numbers come from (or JSON).

use color_eyre::eyre::Result;

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
    if args.json {
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "plan": plan.name(),
                "tasks": round1.task_filter,
                "trials_per_task": plan.trials,
                "forecast": f,
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
    Ok(())
}
