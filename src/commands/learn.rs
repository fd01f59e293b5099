//! `skillscope learn`: one learning space learns from one run's trials of one condition
//! ([`crate::acontext::learn`]). Resumable: running it again continues at each trial's step.

use std::sync::Arc;
use std::time::Duration;

use color_eyre::eyre::{Result, eyre};

use crate::acontext::learn::{LearnOptions, LearnReport, Learner, Progress, StatusMode};
use crate::acontext::{AcontextConfig, Client};
use crate::cli::{AcontextArgs, LearnArgs};
use crate::config::{AcontextFileSettings, FileConfig};
use crate::skillsbench::Condition;
use crate::store::Store;
use crate::store::learning::Step;

/// Acontext settings: flags, then `ACONTEXT_BASE_URL` (base URL only), then `plan` (an
/// experiment plan's table), then the config file's `[acontext]`.
///
/// # Errors
/// An unreadable config file.
pub fn acontext_settings(
    args: &AcontextArgs,
    plan: Option<&AcontextFileSettings>,
) -> Result<AcontextFileSettings> {
    let file = FileConfig::load(args.config.as_deref())?;
    let flags = AcontextFileSettings {
        base_url: args.base_url.clone(),
        api_key_env: args.api_key_env.clone(),
        status_mode: args.status_mode.clone(),
        ..Default::default()
    };
    let env = AcontextFileSettings {
        base_url: std::env::var("ACONTEXT_BASE_URL")
            .ok()
            .filter(|s| !s.is_empty()),
        ..Default::default()
    };
    let mut s = flags.or(&env);
    if let Some(p) = plan {
        s = s.or(p);
    }
    Ok(s.or(&file.acontext))
}

/// The client for `settings`.
///
/// # Errors
/// No key in the environment, or an HTTP client that cannot be built.
pub fn client_for(settings: &AcontextFileSettings) -> Result<Client> {
    let config = AcontextConfig::from_settings(settings)?;
    Ok(Client::new(&config)?)
}

/// Learning options shared by every space, from the settings.
///
/// # Errors
/// An unknown status mode.
pub fn learn_defaults(settings: &AcontextFileSettings) -> Result<LearnOptions> {
    let mut o = LearnOptions::new("", "", "");
    if let Some(m) = &settings.status_mode {
        o.status_mode = StatusMode::parse(m).map_err(|e| eyre!(e))?;
    }
    if let Some(s) = settings.learn_timeout_secs {
        o.learn_timeout = Duration::from_secs(s);
    }
    if let Some(s) = settings.server_wait_secs {
        o.server_wait = Duration::from_secs(s);
    }
    Ok(o)
}

/// Prints one line whenever a trial reaches a final step or hits an error.
pub fn print_progress() -> Progress {
    Arc::new(|space, row| {
        let step = Step::parse(&row.step);
        let final_ = step.is_final(row.finished_at.is_some());
        if !final_ && row.error.is_none() {
            return;
        }
        let status = row
            .learning_status
            .as_deref()
            .map(|s| format!(" (learning {s})"))
            .unwrap_or_default();
        let err = row
            .error
            .as_deref()
            .map(|e| format!(" — {}", crate::text::sanitize(e)))
            .unwrap_or_default();
        crate::errln!(
            "[{}] {}#{} {}: {}{status}{err}",
            space.label,
            row.task_id,
            row.trial_index,
            row.verdict,
            row.step
        );
    })
}

/// Prints a learning report.
pub fn print_report(label: &str, r: &LearnReport) {
    let steps: Vec<String> = r.steps.iter().map(|(k, v)| format!("{k} {v}")).collect();
    crate::outln!("{label}: {}", steps.join(" · "));
    if !r.mislabeled.is_empty() {
        crate::outln!(
            "{label}: MISLABELED (learned with a verdict the verifier did not give): {}",
            r.mislabeled.join(", ")
        );
    }
    for e in &r.errors {
        crate::outln!(
            "{label}: not learned this pass: {}",
            crate::text::sanitize(e)
        );
    }
}

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
    let cancel = super::session::Signals::install(None).shutdown;
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
    super::session::record_run_end(
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
    super::session::record_run_end(&store, &args.run, level, how).await;
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
