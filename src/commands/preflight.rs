//! `skillscope preflight PLAN.toml`: the checks `experiment` makes before round 1
//! ([`crate::preflight`]), alone — a table (or JSON), exit 0 when they pass, 4 when one failed.

use color_eyre::eyre::Result;

use crate::cli::{PreflightArgs, exit_code};

/// Runs `skillscope preflight`. Returns the exit code.
///
/// # Errors
/// A plan or settings that cannot be read.
pub async fn execute(args: PreflightArgs) -> Result<i32> {
    let (plan, _) =
        super::shared::plan_setup::load_plan(Some(&args.plan), args.db.clone(), false).await?;
    let inputs = super::shared::preflight::for_plan(&plan, args.db.clone(), &args.acontext, None)?;
    let checked = crate::preflight::run(&inputs).await;
    if args.json {
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "plan": plan.name(),
                "passed": checked.passed(),
                "seconds": checked.seconds,
                "checks": checked.checks,
            }))?
        );
    } else {
        crate::outln!("preflight of experiment {}", plan.name());
        super::shared::preflight::print(&checked, false);
    }
    Ok(if checked.passed() {
        exit_code::FINISHED
    } else {
        exit_code::CHECK_FAILED
    })
}
