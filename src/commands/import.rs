//! `skillscope import`: Harbor job folders into the store, with a report of what was read,
//! skipped and found broken, and the imported runs' pass rates.

use color_eyre::eyre::Result;

use super::shared::status::run_status;
use super::shared::table::conditions_table;
use crate::cli::ImportArgs;
use crate::import::{ImportOptions, import};
use crate::skillsbench::Condition;
use crate::store::{Store, queries};

/// Runs `skillscope import`.
///
/// # Errors
/// An unreadable folder, a bad condition or catalog, or a database failure.
pub async fn execute(args: ImportArgs) -> Result<()> {
    let condition = match &args.condition {
        Some(c) => Some(Condition::parse(c)?.key()),
        None => None,
    };
    let opts = ImportOptions {
        roots: args
            .dirs
            .iter()
            .map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| d.clone()))
            .collect(),
        condition,
        run: args.run.clone(),
        catalog: super::catalog_with(args.catalog.as_deref())?,
        batch: 500,
    };
    let store = Store::open(&args.db.db)?;
    let s2 = store.clone();
    let report = tokio::task::spawn_blocking(move || import(&s2, &opts)).await??;
    let conn = store.connect()?;
    let runs: Vec<_> = report
        .runs
        .iter()
        .filter_map(|n| queries::find_run(&conn, n).ok().flatten())
        .collect();
    if args.json {
        let statuses: Vec<_> = runs
            .into_iter()
            .map(|r| run_status(&conn, r))
            .collect::<Result<_>>()?;
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "jobs": report.jobs,
                "trials_seen": report.trials_seen,
                "imported": report.imported,
                "already_present": report.already_present,
                "superseded_attempts": report.superseded_attempts,
                "broken": report.broken.iter().map(|(p, why)| serde_json::json!({"path": p, "why": why})).collect::<Vec<_>>(),
                "skipped": report.skipped.iter().map(|(p, why)| serde_json::json!({"path": p, "why": why})).collect::<Vec<_>>(),
                "missing_trajectory": report.missing_trajectory,
                "not_atif": report.not_atif,
                "unknown_condition": report.unknown_condition,
                "without_valid_reward": report.without_valid_reward,
                "multi_step": report.multi_step,
                "seconds": report.elapsed.as_secs_f64(),
                "files": report.files,
                "runs": statuses,
            }))?
        );
        store.writer().stop();
        return Ok(());
    }
    // Paths, names and reasons below come from the imported files: untrusted text.
    let clean = crate::sanitize::one_line;
    let path = |p: &std::path::Path| clean(&p.display().to_string());
    let secs = report.elapsed.as_secs_f64().max(1e-6);
    let from_files: usize = report.files.iter().map(|f| f.imported).sum();
    let present_files: usize = report.files.iter().map(|f| f.already_present).sum();
    if report.trials_seen > 0 || report.jobs > 0 || report.files.is_empty() {
        println!(
            "read {} trial results and {} job results in {:.2}s ({:.0} trials/s): {} imported, {} already present",
            report.trials_seen,
            report.jobs,
            secs,
            report.trials_seen as f64 / secs,
            report.imported - from_files,
            report.already_present - present_files
        );
    }
    for f in &report.files {
        let mut extra = Vec::new();
        if f.no_reward > 0 {
            extra.push(format!("{} without a reward (no-reward)", f.no_reward));
        }
        if f.partial_rows > 0 {
            extra.push(format!(
                "{} task rows with partial rewards reconstructed",
                f.partial_rows
            ));
        }
        if f.broken_rows > 0 {
            extra.push(format!("{} malformed rows skipped", f.broken_rows));
        }
        println!(
            "read {} ({}): {} = {} in {}; {} imported, {} already present, {} replaced{}",
            path(&f.path),
            f.format.as_str(),
            crate::format::count(f.rows, "row", "rows"),
            crate::format::count(f.trials, "trial", "trials"),
            crate::format::count(f.runs.len(), "run", "runs"),
            f.imported,
            f.already_present,
            f.replaced,
            if extra.is_empty() {
                String::new()
            } else {
                format!("; {}", extra.join(", "))
            }
        );
    }
    if !report.broken.is_empty() {
        println!("skipped {} broken file(s):", report.broken.len());
        for (p, why) in report.broken.iter().take(20) {
            println!("  {}: {}", path(p), clean(why));
        }
    }
    if !report.skipped.is_empty() {
        println!(
            "skipped {} file(s) in the folders (not a Harbor job or trial folder, nor a result file skillscope reads):",
            report.skipped.len()
        );
        for (p, why) in &report.skipped {
            println!("  {}: {}", path(p), clean(why));
        }
    }
    // Trials imported whose skill use is unknown, by why.
    for (trials, what) in [
        (
            &report.not_atif,
            "imported whose agent/trajectory.json is not ATIF v1.x (steps and skill use unknown)",
        ),
        (
            &report.missing_trajectory,
            "have no agent/trajectory.json (imported; skill use unknown)",
        ),
    ] {
        if !trials.is_empty() {
            println!("{} trial(s) {what}:", trials.len());
            for p in trials.iter().take(20) {
                println!("  {}", path(p));
            }
        }
    }
    if !report.without_valid_reward.is_empty() {
        println!(
            "{} Harbor 0.26 trial(s) have no valid reward (Harbor's error policy; their reward file does not count): imported without a verdict, counted 0 by Method D:",
            report.without_valid_reward.len()
        );
        for p in report.without_valid_reward.iter().take(20) {
            println!("  {}", p.display());
        }
    }
    if report.multi_step > 0 {
        println!(
            "{} multi-step trial(s) scored by their trial-level reward (Harbor's aggregate over steps)",
            report.multi_step
        );
    }
    if report.superseded_attempts > 0 {
        println!(
            "{} earlier attempt(s) of retried trials in skillscope's job folders recorded as superseded (only each trial's latest attempt counts)",
            report.superseded_attempts
        );
    }
    if report.unknown_condition > 0 {
        println!(
            "{} trial(s) had no condition in their folder names (recorded as `unknown`; use --condition)",
            report.unknown_condition
        );
    }
    let mut notes: Vec<String> = Vec::new();
    for r in runs {
        let s = run_status(&conn, r)?;
        println!(
            "\nrun {} — {}, up to {} per task and condition, agent {}{}",
            clean(&s.run.name),
            crate::format::count(s.n_tasks, "task", "tasks"),
            crate::format::count(s.run.n_trials as usize, "trial", "trials"),
            clean(&s.run.agent),
            s.run
                .model
                .as_deref()
                .map(|m| format!(" ({})", clean(m)))
                .unwrap_or_default()
        );
        let results = super::shared::table::run_results(&conn, &s.run.name)?;
        println!("{}", conditions_table(&results));
        for n in super::shared::table::condition_notes(&results) {
            if !notes.contains(&n) {
                notes.push(n);
            }
        }
    }
    super::shared::table::print_notes(&notes);
    store.writer().stop();
    Ok(())
}
