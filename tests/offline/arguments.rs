//! Argument checks agree with each other and leave nothing behind: a malformed flag is a usage
//! error (exit 2, clap's), bad input or settings one `error:` line and exit 1, before any
//! database, log or job folder is made.

use std::path::Path;
use std::process::Output;

fn skillscope(dir: &Path, args: &[&str]) -> Output {
    crate::support::process::Skillscope::new(args)
        .dir(dir)
        .output()
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

/// A count of 0 is as wrong a command line as a count that is not a number: both are usage
/// errors, exit 2 — what the README's table says 2 means (issue 48: `--trials 0` exited 1 and
/// `--trials abc` 2) — and nothing is left behind.
#[test]
fn zero_trials_or_concurrency_is_a_usage_error_like_text() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = crate::support::common::fixtures();
    let tasks = tasks.to_str().unwrap();
    let usage = |args: &[&str], flag: &str| {
        let out = skillscope(dir.path(), args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("error: invalid value '") && err.contains(flag),
            "{args:?}: {err}"
        );
    };
    for value in ["0", "abc"] {
        usage(
            &["run", "--headless", "--tasks", tasks, "--trials", value],
            "--trials",
        );
        usage(
            &[
                "run",
                "--headless",
                "--tasks",
                tasks,
                "--concurrency",
                value,
            ],
            "--concurrency",
        );
        usage(
            &["tasks", "--tasks", tasks, "--check", "--concurrency", value],
            "--concurrency",
        );
        usage(
            &["experiment", "--dry-run", "--concurrency", value],
            "--concurrency",
        );
    }
    // An agent that does not exist is a wrong command line too (it exited 1).
    usage(
        &["run", "--headless", "--tasks", tasks, "--agent", "nope"],
        "--agent",
    );
    left_nothing(dir.path());
    // The settings file's 0 is bad input, not a command line: one error line, exit 1.
    std::fs::write(dir.path().join("s.toml"), "[run]\nconcurrency = 0\n").unwrap();
    let err = one_error(&skillscope(
        dir.path(),
        &["run", "--headless", "--tasks", tasks, "--config", "s.toml"],
    ));
    assert!(err.contains("concurrency"), "{err}");
    std::fs::remove_file(dir.path().join("s.toml")).unwrap();
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

/// An empty tasks folder is one error naming it, exit 1, and nothing is left behind — no
/// `skillscope.db`, `-wal` or `-shm` (issue 48: a failed start left all three).
#[test]
fn an_empty_tasks_folder_is_named_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = tempfile::tempdir().unwrap();
    let err = one_error(&skillscope(
        dir.path(),
        &[
            "run",
            "--headless",
            "--tasks",
            tasks.path().to_str().unwrap(),
        ],
    ));
    assert!(err.contains("no task folders found"), "{err}");
    let named = std::fs::canonicalize(tasks.path()).unwrap();
    assert!(err.contains(named.to_str().unwrap()), "{err}");
    left_nothing(dir.path());
}

/// One task's own folder given as `--tasks` says which folder to pass instead, and the `--task`
/// that keeps the run to that task (issue 48: "no task folders found" and nothing more).
#[test]
fn one_tasks_folder_suggests_its_parent() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = std::fs::canonicalize(crate::support::common::fixtures()).unwrap();
    let one = fixtures.join("passes");
    assert!(one.join("task.toml").is_file());
    let err = one_error(&skillscope(
        dir.path(),
        &["run", "--headless", "--tasks", one.to_str().unwrap()],
    ));
    assert!(
        err.contains(&format!("--tasks {} --task passes", fixtures.display())),
        "{err}"
    );
    left_nothing(dir.path());
}

/// `experiment --help` names the dry run's folder as the README does (issue 48: the help said
/// `dry-run/<name>/`, the README `dry-run/<name>-dry-run/`; the second is where it goes).
#[test]
fn experiment_help_and_the_readme_name_one_dry_run_folder() {
    let dir = tempfile::tempdir().unwrap();
    let out = skillscope(dir.path(), &["experiment", "--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    let folder = "dry-run/<name>-dry-run/";
    assert!(help.contains(folder), "{help}");
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    assert!(readme.contains(&format!("`{folder}`")), "README");
    assert!(
        !help.contains("dry-run/<name>/") && !readme.contains("dry-run/<name>/"),
        "one name for the folder"
    );
    left_nothing(dir.path());
}

/// An experiment plan with several wrong keys names every one of them — its table, key, line
/// and column — in one error line, not the first alone over several lines of parser art.
#[test]
fn a_plan_names_every_wrong_key_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("p.toml"),
        "trails = 2\nagent = \"oracle\"\n[spaces.a]\nlable = \"LS-A\"\n[acontext]\nbase_url = 3\n",
    )
    .unwrap();
    let err = one_error(&skillscope(dir.path(), &["plan", "p.toml"]));
    for want in [
        "p.toml",
        "`trails` (line 1",
        "`spaces.a.lable` (line 4",
        "`acontext.base_url` (line 6",
    ] {
        assert!(err.contains(want), "{want:?} in {err}");
    }
    std::fs::remove_file(dir.path().join("p.toml")).unwrap();
    left_nothing(dir.path());
}
