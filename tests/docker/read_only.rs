//! Archived results on read-only media are audited: `status` and `report` open a store on a real
//! read-only bind mount (`mount --bind -o ro`; these tests run as root, as the Docker tests do),
//! say that it is read-only and how it was opened, and write nothing to it — whether no process
//! has the database open (SQLite `immutable=1`), a writer has it open elsewhere (`mode=ro` sees
//! its commits), or its write-ahead log was archived without the WAL index (a private copy reads
//! it). An error that remains names its cause.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::common::Scratch;
use crate::support::planned_run::{PlannedRun, RunPlan};
use crate::support::process::{Skillscope, text};
use skillscope::store::Outcome;

/// A read-only bind mount of `source` at `target`, undone on drop (also when the test fails).
struct RoMount {
    target: PathBuf,
}

impl RoMount {
    fn new(source: &Path, target: &Path) -> RoMount {
        std::fs::create_dir_all(target).unwrap();
        let st = Command::new("mount")
            .args(["--bind", "-o", "ro"])
            .arg(source)
            .arg(target)
            .status()
            .expect("mount (these tests run as root)");
        assert!(st.success(), "mount --bind -o ro needs root");
        // Older util-linux applies `ro` to a bind mount only on a remount.
        let probe = target.join(".probe");
        if std::fs::write(&probe, b"x").is_ok() {
            let _ = std::fs::remove_file(&probe);
            let st = Command::new("mount")
                .args(["-o", "remount,bind,ro"])
                .arg(target)
                .status()
                .unwrap();
            assert!(st.success());
        }
        assert!(
            std::fs::write(&probe, b"x").is_err(),
            "the mount is read-only"
        );
        RoMount {
            target: target.to_path_buf(),
        }
    }
}

impl Drop for RoMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.target).status();
    }
}

fn skillscope(cwd: &Path, args: &[&str]) -> Output {
    Skillscope::new(args).dir(cwd).output()
}

/// A run of two tasks × two conditions × two trials, every trial judged, in `db`'s store.
fn archived_run(conn: &rusqlite::Connection, name: &str) {
    let p = PlannedRun::new(
        conn,
        &RunPlan {
            name,
            n_trials: 2,
            tasks: &[("alpha", "d1", "easy"), ("beta", "d2", "hard")],
            ..Default::default()
        },
    );
    for (task, cond, i, pass) in [
        ("alpha", "no-skills", 1, true),
        ("alpha", "no-skills", 2, false),
        ("beta", "no-skills", 1, false),
        ("beta", "no-skills", 2, false),
        ("alpha", "curated", 1, true),
        ("alpha", "curated", 2, true),
        ("beta", "curated", 1, true),
        ("beta", "curated", 2, false),
    ] {
        let (o, r) = if pass {
            (Outcome::Pass, 1.0)
        } else {
            (Outcome::Fail, 0.0)
        };
        p.verdict(conn, (task, cond, i), o, Some(r));
    }
}

fn listing(dir: &Path) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn status_and_report_read_a_store_on_a_read_only_bind_mount() {
    let s = Scratch::new();
    let archive = s.dir.path().join("archive");
    std::fs::create_dir_all(&archive).unwrap();
    let db = archive.join("results.db");
    {
        let store = skillscope::store::Store::open(&db).unwrap();
        archived_run(&store.connect().unwrap(), "archived");
        store.writer().stop();
    }
    // Closed cleanly: the WAL was checkpointed away; no process has the database open.
    let before = listing(&archive);
    assert_eq!(before.len(), 1, "{before:?}");
    let mount = RoMount::new(&archive, &s.dir.path().join("ro"));
    let ro_db = mount.target.join("results.db");
    let ro = ro_db.to_str().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();

    let st = skillscope(elsewhere.path(), &["status", "--db", ro]);
    let t = text(&st);
    assert_eq!(st.status.code(), Some(0), "{t}");
    for want in [
        "read-only store",
        "mounted read-only",
        "immutable=1",
        "run archived",
        "75.0%",
    ] {
        assert!(t.contains(want), "{want:?} in {t}");
    }
    let json = skillscope(elsewhere.path(), &["status", "--json", "--db", ro]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["store"]["read_only"], true, "{v}");
    assert_eq!(v["runs"][0]["run"]["name"], "archived", "{v}");

    // The report scores from a private copy and goes to the current folder, said on stderr.
    let rep = skillscope(elsewhere.path(), &["report", "--db", ro, "--format", "md"]);
    let t = text(&rep);
    assert_eq!(rep.status.code(), Some(0), "{t}");
    assert!(
        t.contains("read-only store") && t.contains("the report goes to"),
        "{t}"
    );
    assert!(
        elsewhere
            .path()
            .join("reports/archived/report.md")
            .is_file(),
        "{t}"
    );

    // A writer working on the store through another path: `mode=ro` sees what it committed.
    let writer = rusqlite::Connection::open(&db).unwrap();
    writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    archived_run(&writer, "later");
    let st = skillscope(elsewhere.path(), &["status", "--db", ro]);
    let t = text(&st);
    assert_eq!(st.status.code(), Some(0), "{t}");
    assert!(t.contains("mode=ro") && t.contains("run later"), "{t}");

    // The database and its WAL archived without the WAL index: a private copy reads the WAL.
    let archive2 = s.dir.path().join("archive2");
    std::fs::create_dir_all(&archive2).unwrap();
    std::fs::copy(&db, archive2.join("results.db")).unwrap();
    let wal = archive.join("results.db-wal");
    assert!(std::fs::metadata(&wal).unwrap().len() > 0);
    std::fs::copy(&wal, archive2.join("results.db-wal")).unwrap();
    drop(writer);
    let mount2 = RoMount::new(&archive2, &s.dir.path().join("ro2"));
    let ro2 = mount2.target.join("results.db");
    let st = skillscope(elsewhere.path(), &["status", "--db", ro2.to_str().unwrap()]);
    let t = text(&st);
    assert_eq!(st.status.code(), Some(0), "{t}");
    assert!(
        t.contains("a private copy") && t.contains("run later"),
        "{t}"
    );
    drop(mount2);
    assert_eq!(
        listing(&archive2).len(),
        2,
        "nothing was added to the archive"
    );
    drop(mount);

    // An error that remains names its cause.
    let st = skillscope(
        elsewhere.path(),
        &["status", "--db", archive.to_str().unwrap()],
    );
    assert_eq!(st.status.code(), Some(1));
    assert!(text(&st).contains("is a folder"), "{}", text(&st));
}

/// A jobs folder on a read-only mount is found before anything starts: one error naming the
/// folder, exit 1, and nothing recorded — no database, no run log (issue 48: every trial failed
/// on "Read-only file system", was interrupted three times and the run exited 3).
#[test]
fn a_read_only_jobs_folder_is_named_before_anything_is_recorded() {
    let here = tempfile::tempdir().unwrap();
    let source = tempfile::tempdir().unwrap();
    let jobs = here.path().join("archive");
    let _ro = RoMount::new(source.path(), &jobs);
    let fixtures = crate::support::common::fixtures();
    for jobs_dir in [jobs.clone(), jobs.join("jobs")] {
        let out = skillscope(
            here.path(),
            &[
                "run",
                "--headless",
                "--tasks",
                fixtures.to_str().unwrap(),
                "--task",
                "passes",
                "--jobs-dir",
                jobs_dir.to_str().unwrap(),
            ],
        );
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{err}");
        let first = err.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("error: jobs folder: ") && first.contains(jobs_dir.to_str().unwrap()),
            "{err}"
        );
        // One error and its fix, not a line per trial.
        assert!(err.lines().count() <= 3, "{err}");
        assert!(err.contains("--jobs-dir"), "the fix is named: {err}");
        let left: Vec<_> = std::fs::read_dir(here.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "archive")
            .collect();
        assert!(left.is_empty(), "nothing recorded: {left:?}");
    }
}
