//! `skillscope learn`: one learning space learns from one run's trials of one condition
//! ([`crate::acontext::learn`]). Resumable: running it again continues at each trial's step.

use color_eyre::eyre::{Result, eyre};

use super::shared::acontext::{
    acontext_settings, client_for, learn_defaults, print_progress, print_report,
};
use crate::acontext::learn::{LearnOptions, Learner};
use crate::cli::LearnArgs;
use crate::skillsbench::Condition;
use crate::store::Store;

/// Runs `skillscope learn`. Returns the exit code: 0 when every trial is final, 1 when some
/// are left (run again to retry), 130 when stopped.
///
/// # Errors
/// Settings, a missing database or run, an unreachable server.
pub async fn execute(args: LearnArgs) -> Result<i32> {
    if !args.db.db.exists() {
        return Err(eyre!(
            "no database at {} (run round 1 first, or pass --db)",
            args.db.db.display()
        ));
    }
    let settings = acontext_settings(&args.acontext, None)?;
    let client = client_for(&settings)?;
    let condition = Condition::parse(&args.condition)?;
    let label = args.label.clone().unwrap_or_else(|| match condition {
        Condition::NoSkills => "LS-A".into(),
        Condition::Curated => "LS-B".into(),
        _ => format!("LS-{}", condition.slug()),
    });
    let curated = match args.start.as_deref() {
        None => condition == Condition::Curated,
        Some("curated") => true,
        Some("empty") => false,
        Some(other) => return Err(eyre!("--start {other}: expected empty or curated")),
    };
    let opts = LearnOptions {
        label: label.clone(),
        run: args.run.clone(),
        condition: condition.key(),
        curated,
        keep_defaults: args.keep_default_skills,
        ..learn_defaults(&settings)?
    };
    let store = Store::open(&args.db.db)?;
    let cancel = super::shared::signals::Signals::install(None, true).shutdown;
    client
        .availability()
        .set_sink(super::shared::acontext::print_availability());
    let learner = Learner {
        store: store.clone(),
        client,
        cancel,
        progress: Some(print_progress()),
    };
    crate::errln!(
        "{label}: learning from run {} ({}) at {}",
        args.run,
        condition.label(),
        crate::acontext::learn::public_base_url(learner.client.base_url())
    );
    super::shared::progress::record_run_end(
        &store,
        &args.run,
        "info",
        format!("{label}: learning from {} started", condition.label()),
    )
    .await;
    let result = learner.learn(&opts).await;
    let (level, how) = match &result {
        Ok(r) if r.errors.is_empty() => ("info", format!("{label}: learning pass finished")),
        Ok(r) => (
            "warn",
            format!(
                "{label}: learning pass left {} trial(s) with errors",
                r.errors.len()
            ),
        ),
        Err(crate::acontext::learn::LearnError::Cancelled) => {
            ("info", format!("{label}: learning stopped by the operator"))
        }
        Err(e) => (
            "error",
            format!("{label}: learning stopped by an error: {e}"),
        ),
    };
    super::shared::progress::record_run_end(&store, &args.run, level, how).await;
    store.writer().stop();
    match result {
        Ok(report) => {
            print_report(&label, &report);
            Ok(if report.errors.is_empty() { 0 } else { 1 })
        }
        Err(crate::acontext::learn::LearnError::Cancelled) => {
            crate::errln!("stopped; run the same command again to resume");
            Ok(130)
        }
        Err(e) => Err(e.into()),
    }
}
