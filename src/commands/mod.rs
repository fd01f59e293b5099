//! Subcommand implementations, one file each; what they share is in [`shared`] (no command
//! imports another).

pub mod base_image;
pub mod bench;
pub mod experiment;
pub mod export;
pub mod import;
pub mod learn;
pub mod plan;
pub mod preflight;
pub mod replay;
pub mod report;
pub mod retry;
pub mod run;
pub mod shared;
pub mod standin;
pub mod status;
pub mod stop;
pub mod summarize;
pub mod tasks;
pub mod watch;

use std::path::{Path, PathBuf};

use color_eyre::eyre::{Result, WrapErr};
use rusqlite::Connection;

use crate::domain::RunRow;
use crate::skillsbench::{Catalog, examples};
use crate::store::queries;

/// The tasks folder to use: the given one, or the built-in example tasks (written out once).
///
/// # Errors
/// When the example tasks cannot be written.
pub fn tasks_dir_or_examples(tasks: Option<&Path>) -> Result<PathBuf> {
    match tasks {
        Some(t) => Ok(t.to_path_buf()),
        None => examples::materialize(&examples::default_base())
            .wrap_err("writing the built-in example tasks"),
    }
}

/// A task set that did not load as the operator reads it: an unknown `--task` id names the
/// folder (the built-in examples by that name) with the valid ids, closest first, as its hint.
pub fn task_set_error(e: crate::skillsbench::BenchError) -> color_eyre::eyre::Report {
    match e.valid_ids_hint(12) {
        Some(hint) => crate::console::hinted(e.to_string(), hint),
        None => e.into(),
    }
}

/// Loads the task set of `req` once ([`PreparedRun::load`]) — before any database is opened,
/// so a folder that cannot be used leaves nothing behind — for the preflight and the engine.
///
/// # Errors
/// A tasks folder that cannot be used, or an unknown `--task` id ([`task_set_error`]).
pub async fn prepare_run(req: crate::engine::RunRequest) -> Result<crate::engine::PreparedRun> {
    tokio::task::spawn_blocking(move || {
        let tasks =
            crate::skillsbench::TaskSet::load(&req.tasks_dir, &req.catalog, &req.task_filter)
                .map_err(task_set_error)?;
        Ok(crate::engine::PreparedRun {
            request: req,
            tasks,
        })
    })
    .await
    .map_err(|e| color_eyre::eyre::eyre!("loading the task set: {e}"))?
}

/// The shipped catalog, overridden by the operator's CSV when given.
///
/// # Errors
/// An unreadable or malformed CSV.
pub fn catalog_with(override_csv: Option<&Path>) -> Result<Catalog> {
    let mut catalog = Catalog::shipped();
    if let Some(c) = override_csv {
        catalog = catalog.overridden_by(Catalog::from_file(c)?);
    }
    Ok(catalog)
}

/// The run named `name`, or the newest run when `name` is `None`.
///
/// # Errors
/// When no such run exists.
pub fn find_run(conn: &Connection, name: Option<&str>) -> Result<RunRow> {
    match name {
        Some(n) => queries::find_run(conn, n)?.ok_or_else(|| unknown_run(conn, n)),
        None => queries::list_runs(conn)?
            .into_iter()
            .next()
            .ok_or_else(|| crate::console::hinted("the database holds no runs yet", NO_RUNS_HINT)),
    }
}

const NO_RUNS_HINT: &str =
    "start one with `skillscope run`, import one with `skillscope import`, or pass --db";

/// The error for a run name the store does not hold, with the runs it does hold as the hint
/// (newest first; the 20 newest and how many more).
pub fn unknown_run(conn: &Connection, name: &str) -> color_eyre::eyre::Report {
    let known: Vec<String> = queries::list_runs(conn)
        .unwrap_or_default()
        .into_iter()
        .map(|r| r.name)
        .collect();
    let hint = match known.len() {
        0 => format!("the database holds no runs yet; {NO_RUNS_HINT}"),
        n => {
            let shown: Vec<String> = crate::skillsbench::closest_first(name, &known)
                .into_iter()
                .take(20)
                .collect();
            format!(
                "runs in the database (closest first): {}{}",
                shown.join(", "),
                if n > shown.len() {
                    format!(
                        " … and {} more (`skillscope status` lists them)",
                        n - shown.len()
                    )
                } else {
                    String::new()
                }
            )
        }
    };
    crate::console::hinted(format!("no run named {name:?}"), hint)
}

/// `name` in the database's folder (`./name` for a database in the current folder): where
/// reports go unless told otherwise, so they sit beside the results they come from.
pub fn beside(db: &Path, name: &str) -> PathBuf {
    db.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
        .join(name)
}

/// What happens to a command queued for `run` (retry, cancel), seen from this machine.
pub fn engine_note(run: &RunRow) -> String {
    crate::store::Liveness::of(run, chrono::Utc::now(), &crate::store::owner::host_name())
        .command_note(run)
}
