//! `skillscope status` of a run in progress, read from the store as another process sees it.

use crate::support::planned_run::{PlannedRun, RunPlan, empty_store};
use skillscope::store::TrialStatus;
use skillscope::store::queries::{self, TrialPatch};

/// A live run says which trial runs now and in which phase, since when (issue 36: the headless
/// operator could not tell what a quiet run was doing).
#[test]
fn status_says_which_trial_runs_now_and_in_which_phase() {
    let (scratch, conn) = empty_store();
    let run = PlannedRun::new(
        &conn,
        &RunPlan {
            name: "busy",
            n_trials: 1,
            tasks: &[("alpha", "Finance", "easy"), ("beta", "Finance", "easy")],
            ..Default::default()
        },
    );
    queries::patch_trial(
        &conn,
        run.id("alpha", "curated", 1),
        &TrialPatch {
            status: Some(TrialStatus::Agent),
            agent_started_at: Some("2026-11-28T10:00:00.000Z".into()),
            ..Default::default()
        },
    )
    .unwrap();
    // Its engine is this process: alive, whatever the heartbeat's age.
    conn.execute(
        "UPDATE runs SET status = 'running', owner_pid = ?1, owner_host = ?2,
         heartbeat_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?3",
        rusqlite::params![
            std::process::id(),
            skillscope::store::owner::host_name(),
            run.run.id
        ],
    )
    .unwrap();
    drop(conn);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .args(["status", "--db"])
        .arg(scratch.db())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("running now:"))
        .unwrap_or_else(|| panic!("no running-now line:\n{text}"));
    assert!(line.contains("alpha__curated-1-1"), "{line}");
    assert!(
        line.contains("agent since 2026-11-28T10:00:00.000Z"),
        "{line}"
    );
}
