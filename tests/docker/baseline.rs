//! Acceptance of a reused baseline (issue 38): `skillscope experiment --baseline-from RUN` over
//! the dry-run experiment's round 1 runs round 2 only — no round-1 trial, learning from the
//! reused run's trials into the plan's spaces, export, round 2, a report that marks the reused
//! conditions — and a task whose digest changed since is refused with the field named. Kept
//! small: two example tasks, one trial each.

use std::path::Path;
use std::process::Output;

use crate::support::common;
use crate::support::fake_acontext::{FakeServer, FakeState};
use crate::support::process::{Skillscope, text};
use skillscope::store::learning as lq;
use skillscope::store::queries;

const KEY: &str = "sk-ac-baseline";
const TASKS: [&str; 2] = ["sales-region-totals", "temperature-unit-normalization"];

/// `skillscope` in `dir` as on a fresh machine ([`Skillscope::bare`]) with `vars`.
async fn skillscope(dir: &Path, args: &[&str], vars: &[(&str, String)]) -> Output {
    vars.iter()
        .fold(Skillscope::new(args).bare(dir), |c, (k, v)| c.env(k, v))
        .output_async()
        .await
}

/// A plan named `name` over [`TASKS`] of `tasks/`, one trial per task, with its own space
/// labels; `acontext` its `[acontext]` table's body.
fn plan(dir: &Path, name: &str, labels: (&str, &str), acontext: &str) -> String {
    let file = format!("{name}.toml");
    std::fs::write(
        dir.join(&file),
        format!(
            "name = \"{name}\"\nagent = \"oracle\"\ntrials = 1\ntasks = \"tasks\"\ntask = [\"{}\", \"{}\"]\nconcurrency = 4\njobs_dir = \"jobs\"\nexports_dir = \"exports\"\nreports_dir = \"reports\"\n[acontext]\n{acontext}\n[spaces.a]\nlabel = \"{}\"\n[spaces.b]\nlabel = \"{}\"\n",
            TASKS[0], TASKS[1], labels.0, labels.1
        ),
    )
    .unwrap();
    file
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn baseline_from_the_dry_runs_round_1_runs_round_2_only_and_refuses_a_changed_task() {
    common::require_docker().await;
    let dir = tempfile::tempdir().unwrap();
    let examples = skillscope::skillsbench::examples::materialize(dir.path()).unwrap();
    let tasks = dir.path().join("tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    for t in TASKS {
        copy_dir(&examples.join(t), &tasks.join(t));
    }

    // The dry run: round 1, learning, export and round 2 against its own stand-in.
    let base = plan(
        dir.path(),
        "base",
        ("LS-A", "LS-B"),
        "status_mode = \"auto\"",
    );
    let out = skillscope(
        dir.path(),
        &[
            "experiment",
            &base,
            "--dry-run",
            "--headless",
            "--db",
            "s.db",
        ],
        &[],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let db = dir.path().join("dry-run/base-dry-run/skillscope.db");
    let baseline = "base-dry-run-round1";

    // Round 1 reused: against a stand-in of the test's own, into spaces of its own labels.
    let server = FakeServer::start(FakeState::new(KEY, true), ([127, 0, 0, 1], 0).into()).await;
    let acontext = format!(
        "base_url = \"{}\"\napi_key_env = \"ACONTEXT_API_KEY\"\nstatus_mode = \"auto\"",
        server.base_url()
    );
    let vars = [("ACONTEXT_API_KEY", KEY.to_string())];
    let reuse = plan(dir.path(), "reuse", ("LS-A2", "LS-B2"), &acontext);
    let db_arg = db.display().to_string();
    let args = [
        "experiment",
        &reuse,
        "--headless",
        "--db",
        &db_arg,
        "--baseline-from",
        baseline,
    ];
    let out = skillscope(dir.path(), &args, &vars).await;
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let said = format!(
        "reuse: round 1 reused from run {baseline} (native, database {db_arg}) — not run again"
    );
    for want in [said.as_str(), "experiment reuse — done"] {
        assert!(t.contains(want), "{want:?} in {t}");
    }
    let conn = rusqlite::Connection::open(&db).unwrap();
    let e = lq::find_experiment(&conn, "reuse").unwrap().unwrap();
    assert_eq!(
        (e.round1_run.as_str(), e.phase.as_str()),
        (baseline, "done")
    );
    // Round 2 only: no round-1 run of its own; the reused run's trials untouched.
    assert!(queries::find_run(&conn, "reuse-round1").unwrap().is_none());
    let r1 = queries::find_run(&conn, baseline).unwrap().unwrap();
    let attempts = queries::all_trials(&conn, r1.id).unwrap();
    assert_eq!(
        attempts.len(),
        2 * TASKS.len(),
        "one attempt per trial, none added"
    );
    let r2 = queries::find_run(&conn, "reuse-round2").unwrap().unwrap();
    let round2 = queries::current_trials(&conn, r2.id).unwrap();
    assert_eq!(round2.len(), 2 * TASKS.len());
    assert!(
        round2.iter().all(|t| t.status.as_str() == "done"),
        "{round2:?}"
    );
    // The reused run's A and B trials went to the plan's spaces.
    let spaces: Vec<_> = lq::list_spaces(&conn)
        .unwrap()
        .into_iter()
        .filter(|s| s.experiment.as_deref() == Some("reuse"))
        .collect();
    assert_eq!(spaces.len(), 2, "{spaces:?}");
    assert!(
        spaces
            .iter()
            .all(|s| s.run_id == r1.id && s.state == "learned"),
        "{spaces:?}"
    );
    let recorded = lq::find_baseline(&conn, "reuse").unwrap().unwrap();
    assert_eq!(
        (recorded.run.as_str(), recorded.source.as_str()),
        (baseline, "native")
    );
    assert!(recorded.accepted.is_empty());
    let report = std::fs::read_to_string(dir.path().join("reports/reuse/report.md")).unwrap();
    assert!(
        report.contains(&format!("{baseline} (reused baseline)")),
        "the conditions table marks the reused run: {report}"
    );
    assert!(
        report.contains(&format!(
            "Reused baseline: condition(s) A, B were not run by this experiment but taken from run {baseline}"
        )),
        "{report}"
    );

    // A task changed since the baseline ran: refused, the field and the task named.
    std::fs::write(
        tasks.join(TASKS[0]).join("instruction.md"),
        "A changed instruction.\n",
    )
    .unwrap();
    let drift = plan(dir.path(), "drift", ("LS-A3", "LS-B3"), &acontext);
    let args = [
        "experiment",
        &drift,
        "--headless",
        "--db",
        &db_arg,
        "--baseline-from",
        baseline,
    ];
    let out = skillscope(dir.path(), &args, &vars).await;
    let t = text(&out);
    assert_ne!(out.status.code(), Some(0), "{t}");
    assert!(
        t.contains(&format!("task-digest of {}: run sha256:", TASKS[0])),
        "{t}"
    );
    assert!(t.contains("--allow-drift task-digest"), "{t}");
    assert!(
        lq::find_experiment(&conn, "drift").unwrap().is_none(),
        "a refused baseline registers no experiment"
    );
    assert!(queries::find_run(&conn, "drift-round2").unwrap().is_none());
    assert!(queries::find_run(&conn, "drift-round1").unwrap().is_none());
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}
