//! `skillscope experiment [PLAN.toml] --dry-run`: the whole experiment from the binary alone, in
//! minutes, to see every phase, the dashboard, the skill browser and the report before anything
//! is spent — with the `oracle` agent (or `nop`, when the plan asks for it), no model, and an
//! Acontext stand-in started in this process ([`crate::acontext::standin`]), **which learns
//! nothing real**: its skills are a fixed template.
//!
//! Everything a dry run makes lives in its own folder, `dry-run/<name>-dry-run/` beside the
//! database (`<name>`: the plan's; its database `skillscope.db`, `jobs/`, `exports/`,
//! `reports/`), marked as a dry run's and made afresh each time (the stand-in's state lives only in this process, so a dry run cannot be
//! resumed). The experiment and its runs are named `<name>-dry-run`, so every view says what
//! they are. Without a plan, the example plan shipped in the binary (`plans/examples.toml`) is
//! used.

use std::path::{Path, PathBuf};

use crate::acontext::standin::{FakeServer, FakeState, STANDIN_LABEL};
use crate::acontext::{AcontextConfig, AcontextError};

use super::plan::Plan;

/// The example plan shipped in the binary (`plans/examples.toml`).
pub const EXAMPLE_PLAN: &str = include_str!("../../plans/examples.toml");

/// What a dry run adds to the experiment's name.
pub const SUFFIX: &str = "-dry-run";

/// The file that marks a folder as a dry run's (and so safe to replace).
const MARKER: &str = ".skillscope-dry-run";

/// The example plan shipped in the binary, its paths resolved against the current folder.
///
/// # Errors
/// Never in practice (the shipped plan is checked by a test); a plan error otherwise.
pub fn example_plan() -> Result<Plan, crate::config::ConfigError> {
    Plan::parse(
        EXAMPLE_PLAN,
        Path::new("plans/examples.toml (built in)"),
        Path::new("."),
    )
}

/// Turns `plan` into its dry run inside `root`: named `<name>-dry-run`, the `oracle` agent (or
/// `nop`, kept when the plan asks for it) without a model or a budget, its jobs, exports and
/// reports under `root`. Returns what changed, one sentence each, for the operator.
pub fn rewrite(plan: &mut Plan, root: &Path) -> Vec<String> {
    let mut notes = Vec::new();
    let name = plan.name();
    if !name.ends_with(SUFFIX) {
        plan.name = Some(format!("{name}{SUFFIX}"));
    }
    if plan.agent != "oracle" && plan.agent != "nop" {
        notes.push(format!(
            "agent {} → oracle (a dry run calls no model)",
            plan.agent
        ));
        plan.agent = "oracle".into();
    }
    if let Some(m) = plan.model.take() {
        notes.push(format!("model {m} not used"));
    }
    if plan.run.max_cost_usd.take().is_some() {
        notes.push("no budget (nothing is spent)".into());
    }
    plan.jobs_dir = Some(root.join("jobs"));
    plan.exports_dir = Some(root.join("exports"));
    plan.reports_dir = Some(root.join("reports"));
    notes.push(format!("Acontext: {STANDIN_LABEL}, in this process"));
    notes
}

/// The dry run's folder for experiment `name` (`<plan name>-dry-run`) beside the database `db`:
/// `dry-run/<name>/`,
/// emptied when an earlier dry run made it, created and marked.
///
/// # Errors
/// The folder exists but was not made by a dry run (it is left alone), or cannot be made.
pub fn prepare_folder(db: &Path, name: &str) -> Result<PathBuf, String> {
    let parent = db
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let root = parent.join("dry-run").join(name);
    if root.exists() {
        if !root.join(MARKER).is_file() {
            return Err(format!(
                "{} exists and was not made by a dry run; move it or pass another --db",
                root.display()
            ));
        }
        std::fs::remove_dir_all(&root)
            .map_err(|e| format!("removing the last dry run at {}: {e}", root.display()))?;
    }
    std::fs::create_dir_all(&root)
        .and_then(|()| {
            std::fs::write(
                root.join(MARKER),
                "made by `skillscope experiment --dry-run`; replaced by the next one\n",
            )
        })
        .map_err(|e| format!("making {}: {e}", root.display()))?;
    Ok(root)
}

/// Starts the Acontext stand-in on a free port of 127.0.0.1 in this runtime, with the status
/// PATCH of the `skill-bench` server, and the client settings that reach it (a key made for it).
///
/// # Errors
/// No port can be bound.
pub async fn start_standin() -> Result<(FakeServer, AcontextConfig), AcontextError> {
    let key = format!("sk-ac-standin-{}", uuid::Uuid::new_v4().simple());
    let state = FakeState::new(&key, true);
    if let Ok(mut s) = state.lock() {
        s.keep_log = false;
    }
    let server = FakeServer::try_start(state, ([127, 0, 0, 1], 0).into())
        .await
        .map_err(|e| AcontextError::Config(format!("starting the Acontext stand-in: {e}")))?;
    let config = AcontextConfig {
        base_url: server.base_url(),
        api_key: key,
        timeout: std::time::Duration::from_secs(30),
        retries: 2,
        max_backoff: std::time::Duration::from_millis(200),
    };
    Ok((server, config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_example_plan_loads_and_becomes_a_dry_run() {
        let mut plan = example_plan().unwrap();
        assert_eq!(plan.name(), "examples");
        let root = Path::new("/tmp/x/dry-run/examples-dry-run");
        let notes = rewrite(&mut plan, root);
        assert_eq!(plan.name(), "examples-dry-run");
        assert_eq!(plan.agent, "oracle");
        assert_eq!(plan.jobs_dir.as_deref(), Some(root.join("jobs").as_path()));
        assert!(
            notes.iter().any(|n| n.contains("learns nothing real")),
            "{notes:?}"
        );
        // A second rewrite keeps the name.
        rewrite(&mut plan, root);
        assert_eq!(plan.name(), "examples-dry-run");
    }

    #[test]
    fn a_folder_not_made_by_a_dry_run_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.db");
        let root = prepare_folder(&db, "e-dry-run").unwrap();
        std::fs::write(root.join("old.txt"), "x").unwrap();
        // A dry run's folder is made afresh.
        let again = prepare_folder(&db, "e-dry-run").unwrap();
        assert_eq!(again, root);
        assert!(!root.join("old.txt").exists());
        // Someone else's is refused.
        let other = dir.path().join("dry-run/mine");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("keep.txt"), "x").unwrap();
        assert!(
            prepare_folder(&db, "mine")
                .unwrap_err()
                .contains("not made by a dry run")
        );
        assert!(other.join("keep.txt").exists());
    }
}
