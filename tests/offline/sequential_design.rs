//! A group-sequential design is fixed when its run or experiment is created (issue 47): in real
//! processes, `run --stages` on a run whose trials finished, a resume with another `--stages` (or
//! without it, or another `--no-early-stop`) and an experiment whose plan's `[sequential]` table
//! changed between rounds are each refused with the reason, and nothing recorded changes. The
//! runs are created by the binary itself against a Docker host that never answers (they stop at
//! once, registered with every trial queued); the tests then finish their trials through the
//! store, as a run that ran would have.

use std::path::{Path, PathBuf};

use skillscope::store::Store;
use skillscope::store::queries::{self, TrialPatch};
use skillscope::store::{Outcome, TrialStatus};

use crate::support::common::{Scratch, fixtures, skillscope};
use crate::support::process::Skillscope;

/// Six fixture tasks: as few as a sequential design judges.
const TASKS: [&str; 6] = [
    "passes",
    "fails",
    "partial-reward",
    "no-reward",
    "skill-gated",
    "slow",
];

/// `skillscope run` of run `name` over the six tasks, two conditions, `trials` per task, against
/// a Docker host that never answers, with `extra` flags.
fn run(s: &Scratch, name: &str, trials: u32, extra: &[&str]) -> std::process::Output {
    let tasks = fixtures().display().to_string();
    let trials = trials.to_string();
    let mut args: Vec<&str> = vec![
        "run",
        "--tasks",
        &tasks,
        "--conditions",
        "no-skills,curated",
        "--trials",
        &trials,
        "--run",
        name,
        "--docker-host",
        "tcp://127.0.0.1:9",
        "--docker-wait",
        "1",
        "--jobs-dir",
        "jobs",
    ];
    for t in TASKS {
        args.extend(["--task", t]);
    }
    args.extend(extra);
    skillscope(s, &args)
}

/// Every trial of run `name` finished: even tasks passed, odd ones failed.
fn finish_all(db: &Path, name: &str) {
    let store = Store::open(db).unwrap();
    let conn = store.connect().unwrap();
    let run = queries::find_run(&conn, name).unwrap().unwrap();
    for (i, t) in queries::current_trials(&conn, run.id)
        .unwrap()
        .into_iter()
        .enumerate()
    {
        let pass = i % 2 == 0;
        queries::finish_trial(
            &conn,
            t.id,
            &TrialPatch {
                status: Some(TrialStatus::Done),
                outcome: Some(if pass { Outcome::Pass } else { Outcome::Fail }),
                reward: Some(if pass { 1.0 } else { 0.0 }),
                ..Default::default()
            },
        )
        .unwrap();
    }
}

/// Everything the store records, as text: every row of every table (the order of each table's
/// rows fixed), so two snapshots are equal exactly when nothing recorded changed. The packed
/// trial facts (`slot_facts*`) are left out: a cache of the trial rows, repacked whenever a
/// process finds it stale.
fn recorded(db: &Path) -> String {
    let conn = rusqlite::Connection::open(db).unwrap();
    let tables: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'slot_facts%'
             ORDER BY name",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut out = String::new();
    for t in tables {
        let mut st = conn.prepare(&format!("SELECT * FROM \"{t}\"")).unwrap();
        let n = st.column_count();
        let mut rows: Vec<String> = st
            .query_map([], |r| {
                let cells: Vec<String> = (0..n)
                    .map(|i| match r.get_ref(i).unwrap() {
                        rusqlite::types::ValueRef::Text(t) => {
                            String::from_utf8_lossy(t).into_owned()
                        }
                        v => format!("{v:?}"),
                    })
                    .collect();
                Ok(cells.join("|"))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        rows.sort();
        out.push_str(&format!("{t}:\n{}\n", rows.join("\n")));
    }
    out
}

/// Asserts two snapshots of [`recorded`] are equal, naming the lines that differ.
fn unchanged(before: &str, after: &str, what: &str) {
    if before != after {
        let a: std::collections::BTreeSet<&str> = before.lines().collect();
        let b: std::collections::BTreeSet<&str> = after.lines().collect();
        let gone: Vec<&&str> = a.difference(&b).collect();
        let new: Vec<&&str> = b.difference(&a).collect();
        panic!("{what} changed the store: gone {gone:#?}, new {new:#?}");
    }
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `run --stages 3` on a run that was created without a design and whose trials all finished:
/// refused, exit 1, the store as it was.
#[test]
fn stages_on_a_finished_run_are_refused() {
    let s = Scratch::new();
    let created = run(&s, "fixed", 3, &[]);
    assert_eq!(created.status.code(), Some(3), "{}", stderr(&created));
    finish_all(&s.db(), "fixed");
    let before = recorded(&s.db());
    let out = run(&s, "fixed", 3, &["--stages", "3"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("run \"fixed\" has trials and was created without a sequential design")
            && err.contains("--stages 3 cannot be added after its data")
            && err.contains("choose another --run name"),
        "{err}"
    );
    unchanged(&before, &recorded(&s.db()), "--stages 3");
    // The same command without --stages resumes it as it was (nothing left to run).
    let again = run(&s, "fixed", 3, &[]);
    assert!(
        !stderr(&again).contains("sequential design"),
        "{}",
        stderr(&again)
    );
}

/// A run created with `--stages 3` and resumed with another design — `--stages 5`, no
/// `--stages`, `--no-early-stop` — is refused each time with the fields that differ; the store
/// is as it was. The same `--stages 3` resumes it.
#[test]
fn a_resume_with_another_design_is_refused() {
    let s = Scratch::new();
    let created = run(&s, "seq", 5, &["--stages", "3"]);
    assert_eq!(created.status.code(), Some(3), "{}", stderr(&created));
    // Its design was recorded when it was created.
    let status = skillscope(&s, &["status", "seq"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("sequential design: 3 stages at 1/3/5 trials per task"),
        "{text}"
    );
    finish_all(&s.db(), "seq");
    let before = recorded(&s.db());
    for (extra, want) in [
        (
            &["--stages", "5"][..],
            "stages 3 (now 5), trials per stage [1,3,5] (now [1,2,3,4,5])",
        ),
        (
            &[][..],
            "resume it with --stages 3, or choose another --run name",
        ),
        (
            &["--stages", "3", "--no-early-stop"][..],
            "early stopping on (now off)",
        ),
    ] {
        let out = run(&s, "seq", 5, extra);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {err}");
        assert!(err.contains(want), "{extra:?}: {err}");
        unchanged(&before, &recorded(&s.db()), &format!("{extra:?}"));
    }
    let same = run(&s, "seq", 5, &["--stages", "3"]);
    assert!(
        !stderr(&same).contains("another sequential design"),
        "{}",
        stderr(&same)
    );
}

/// `skillscope <args> --headless` in `s` with a test Acontext key.
fn experiment(s: &Scratch, args: &[&str]) -> std::process::Output {
    Skillscope::new(args)
        .arg("--headless")
        .scratch(s)
        .env("SKILLSCOPE_TEST_ACONTEXT_KEY", "sk-ac-test")
        .output()
}

/// An experiment plan with `tasks`, `trials` and a `[sequential]` table of `stages`.
fn plan(dir: &Path, stages: u32) -> PathBuf {
    let list: Vec<String> = TASKS.iter().map(|t| format!("{t:?}")).collect();
    let text = format!(
        "name = \"fixed-design\"\nagent = \"oracle\"\ntrials = 5\ntasks = {:?}\ntask = [{}]\n\n[acontext]\nbase_url = \"http://127.0.0.1:9/api/v1\"\napi_key_env = \"SKILLSCOPE_TEST_ACONTEXT_KEY\"\n\n[run]\ndocker_hosts = [\"tcp://127.0.0.1:9\"]\ndocker_wait_secs = 1\n\n[sequential]\nstages = {stages}\n",
        fixtures().display().to_string(),
        list.join(", ")
    );
    let p = dir.join(format!("plan-{stages}.toml"));
    std::fs::write(&p, text).unwrap();
    p
}

/// An experiment whose plan's `[sequential]` table changed after it was created (between its
/// rounds) — in the plan file or by `--stages` — is refused before its preflight, naming the
/// table and both values, and nothing recorded changes. The experiment is recorded as the
/// binary records it when round 1 starts: its plan's public JSON (`Plan::public_json`).
#[test]
fn a_plan_whose_sequential_table_changed_is_refused() {
    let s = Scratch::new();
    let p3 = plan(s.dir.path(), 3);
    let created = skillscope::experiment::plan::Plan::load(&p3).unwrap();
    {
        let store = Store::open(&s.db()).unwrap();
        let conn = store.connect().unwrap();
        skillscope::store::learning::find_or_insert_experiment(
            &conn,
            &created.name(),
            &created.public_json(),
            "fixed-design-round1",
            "fixed-design-round2",
        )
        .unwrap();
    }
    let before = recorded(&s.db());
    let p3 = p3.display().to_string();
    let p5 = plan(s.dir.path(), 5).display().to_string();
    for args in [
        vec!["experiment", &p5],
        vec!["experiment", &p3, "--stages", "5"],
    ] {
        let out = experiment(&s, &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("experiment fixed-design exists with another plan")
                && err.contains("[sequential] {\"stages\":3} (now {\"stages\":5})")
                && !err.contains("preflight"),
            "{args:?}: {err}"
        );
        unchanged(&before, &recorded(&s.db()), &format!("{args:?}"));
    }
    // The plan it was created with goes past the check (to the preflight, which fails here).
    let same = experiment(&s, &["experiment", &p3]);
    assert!(!stderr(&same).contains("another plan"), "{}", stderr(&same));
}
