//! Acontext settings and client setup, learning defaults, and the learning progress and report
//! lines — shared by `learn`, `export` and `experiment`.

use std::sync::Arc;
use std::time::Duration;

use color_eyre::eyre::{Result, eyre};

use crate::acontext::learn::{LearnOptions, LearnReport, Progress, StatusMode};
use crate::acontext::{AcontextConfig, Client};
use crate::cli::AcontextArgs;
use crate::config::{AcontextFileSettings, FileConfig};
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
            .map(|e| format!(" — {}", crate::sanitize::text(e)))
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

/// Prints the "waiting for Acontext" line of each retry cycle and the "back" line on stderr,
/// beside the learning progress.
pub fn print_availability() -> crate::acontext::availability::Sink {
    Arc::new(|line: &str| crate::errln!("[acontext] {}", crate::sanitize::text(line)))
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
            crate::sanitize::text(e)
        );
    }
}
