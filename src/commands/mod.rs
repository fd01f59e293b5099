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

/// Checks `--task` ids against the tasks folder before anything starts: an unknown id is an
/// error naming the folder (the built-in examples by that name) with the valid ids, closest
/// first, as its hint.
///
/// # Errors
/// An unusable tasks folder or an unknown id.
pub fn check_task_ids(tasks_dir: &Path, ids: &[String]) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    match crate::skillsbench::check_task_ids(tasks_dir, ids) {
        Ok(()) => Ok(()),
        Err(e) => match e.valid_ids_hint(12) {
            Some(hint) => Err(crate::console::hinted(e.to_string(), hint)),
            None => Err(e.into()),
        },
    }
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
