//! The `skillscope run` invocation both harness test files make: one agent, one model, the
//! harness fixture task under condition curated, one trial, the store and jobs folder in `dir`,
//! kits from this checkout's cache.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The fixture task folder (`tests/fixtures/harness-tasks`).
pub fn harness_tasks() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/harness-tasks")
}

/// Kits are fetched once per checkout (`target/harness-kits`), not once per test.
pub fn kit_cache() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/harness-kits")
}

/// `skillscope run --headless` for `agent`/`model` as run `run`; the store is `dir/s.db`, trial
/// folders go to `dir/jobs`. The caller adds credentials and runs it.
pub fn harness_run(agent: &str, model: &str, run: &str, dir: &Path) -> Command {
    harness_run_under(agent, model, run, dir, "curated", 1, &harness_tasks())
}

/// As [`harness_run`], with `trials` trials.
pub fn harness_run_n(agent: &str, model: &str, run: &str, dir: &Path, trials: u32) -> Command {
    harness_run_under(agent, model, run, dir, "curated", trials, &harness_tasks())
}

/// [`harness_run`] under `conditions` instead of curated, with `trials` trials, on the task
/// folders in `tasks` ([`harness_tasks`] for the fixture's).
pub fn harness_run_under(
    agent: &str,
    model: &str,
    run: &str,
    dir: &Path,
    conditions: &str,
    trials: u32,
    tasks: &Path,
) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_skillscope"));
    cmd.args(["run", "--headless", "--conditions", conditions])
        .args([
            "--trials",
            &trials.to_string(),
            "--agent",
            agent,
            "--model",
            model,
        ])
        .args(["--run", run])
        .arg("--tasks")
        .arg(tasks)
        .arg("--db")
        .arg(dir.join("s.db"))
        .arg("--jobs-dir")
        .arg(dir.join("jobs"))
        .env("SKILLSCOPE_HARNESS_CACHE", kit_cache());
    cmd
}
