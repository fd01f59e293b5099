//! Argument checks agree with each other and leave nothing behind: a bad value is one `error:`
//! line and exit 1 before any database, log or job folder is made.

use std::path::Path;
use std::process::{Command, Output};

fn skillscope(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .args(args)
        .current_dir(dir)
        .env_remove("SKILLSCOPE_DB")
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// The one stderr line, after checking that there is exactly one and that the exit code is 1.
fn one_error(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: "), "{err}");
    err
}

/// Nothing in `dir`: no database, no log, no jobs folder.
fn left_nothing(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn zero_concurrency_is_refused_like_zero_trials() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = crate::support::common::fixtures();
    let tasks = tasks.to_str().unwrap();
    let trials = one_error(&skillscope(
        dir.path(),
        &["run", "--headless", "--tasks", tasks, "--trials", "0"],
    ));
    assert!(trials.contains("--trials must be at least 1"), "{trials}");
    let concurrency = one_error(&skillscope(
        dir.path(),
        &["run", "--headless", "--tasks", tasks, "--concurrency", "0"],
    ));
    assert!(
        concurrency.contains("--concurrency must be at least 1"),
        "{concurrency}"
    );
    let check = one_error(&skillscope(
        dir.path(),
        &["tasks", "--tasks", tasks, "--check", "--concurrency", "0"],
    ));
    assert!(
        check.contains("--concurrency must be at least 1"),
        "{check}"
    );
    left_nothing(dir.path());
}

#[test]
fn a_missing_tasks_folder_leaves_no_database_behind() {
    let dir = tempfile::tempdir().unwrap();
    let err = one_error(&skillscope(
        dir.path(),
        &[
            "run",
            "--headless",
            "--tasks",
            "/nonexistent/tasks",
            "--agent",
            "oracle",
        ],
    ));
    assert!(err.contains("/nonexistent/tasks"), "{err}");
    left_nothing(dir.path());
    // A file where a folder belongs says so.
    std::fs::write(dir.path().join("tasks.txt"), "x").unwrap();
    let err = one_error(&skillscope(
        dir.path(),
        &["run", "--headless", "--tasks", "tasks.txt"],
    ));
    assert!(err.contains("tasks.txt is not a folder"), "{err}");
    std::fs::remove_file(dir.path().join("tasks.txt")).unwrap();
    left_nothing(dir.path());
}
