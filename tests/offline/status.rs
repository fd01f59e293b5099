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

/// Runs `skillscope ARGS --db DB`, asserts it failed with one line on stderr and returns it.
fn refused_in_one_line(args: &[&str], db: &std::path::Path) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    err
}

/// Another program's SQLite file (its own `runs` table) is refused in one line, and left as it
/// was: no migration, no switch to WAL, not a byte changed (issue 36: ~200 lines of migration SQL
/// were printed twice).
#[test]
fn another_programs_sqlite_file_is_refused_in_one_line_and_left_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("other.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "CREATE TABLE runs (id INTEGER PRIMARY KEY, label TEXT);
             INSERT INTO runs (label) VALUES ('theirs');
             CREATE TABLE users (name TEXT);",
        )
        .unwrap();
    }
    let before = std::fs::read(&db).unwrap();
    for args in [&["status"][..], &["status", "--json"], &["report"]] {
        let err = refused_in_one_line(args, &db);
        assert!(
            err.contains("is not a skillscope database"),
            "{args:?}: {err}"
        );
        assert!(err.contains("runs, users"), "{err}");
        assert!(!err.to_lowercase().contains("create table"), "{err}");
    }
    assert_eq!(std::fs::read(&db).unwrap(), before, "the file changed");
    assert!(!dir.path().join("other.db-wal").exists());
}

/// A `--db` that is no file — `/dev/null`, a folder — is refused in one line saying what it is,
/// never SQLite's "database is locked".
#[test]
fn a_db_that_is_no_file_is_refused_saying_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    for (db, what) in [
        (std::path::PathBuf::from("/dev/null"), "a character device"),
        (dir.path().to_path_buf(), "a folder"),
    ] {
        for args in [&["status"][..], &["report"]] {
            let err = refused_in_one_line(args, &db);
            assert!(err.contains(what), "{args:?} {}: {err}", db.display());
            assert!(!err.contains("locked"), "{err}");
        }
    }
}

/// `watch` without a name follows the run an engine is running now, not the run created last
/// (issue 48: a second, finished run made later hid the live one); with no live engine, the
/// newest run.
#[test]
fn watch_without_a_name_follows_the_running_run() {
    let (_scratch, conn) = empty_store();
    let plan = |name| RunPlan {
        name,
        n_trials: 1,
        tasks: &[("alpha", "Finance", "easy")],
        ..Default::default()
    };
    let live = PlannedRun::new(&conn, &plan("live"));
    let later = PlannedRun::new(&conn, &plan("made-later"));
    let runs = queries::list_runs(&conn).unwrap();
    let now = chrono::Utc::now();
    let host = skillscope::store::owner::host_name();
    assert_eq!(
        skillscope::store::run_to_watch(&runs, now, &host).map(|r| r.id),
        Some(later.run.id),
        "no engine runs either: the newest"
    );
    crate::support::planned_run::mark_live(&conn, live.run.id);
    let runs = queries::list_runs(&conn).unwrap();
    assert_eq!(
        skillscope::store::run_to_watch(&runs, now, &host).map(|r| r.id),
        Some(live.run.id),
        "the live run, though another was made after it"
    );
}
