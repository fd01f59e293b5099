//! The binary as an operator uses it: the README's first command (the built-in example tasks),
//! `status --json`, `tasks`, and clear errors for bad input.

use crate::support::common;
use std::process::{Command, Output};

use crate::support::process::text;
use common::{Scratch, require_docker, skillscope};

/// Every latest trial's folder, task and condition.
fn trial_folders(c: &rusqlite::Connection) -> Vec<(std::path::PathBuf, String, String)> {
    c.prepare("SELECT trial_dir, task_id, condition FROM trials WHERE superseded = 0")
        .unwrap()
        .query_map([], |r| {
            Ok((
                std::path::PathBuf::from(r.get::<_, String>(0)?),
                r.get(1)?,
                r.get(2)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn example_run_prints_pass_rates_and_status_reports_them() {
    require_docker().await;
    let s = Scratch::new();
    let out = skillscope(&s, &["run", "--trials", "2", "--headless"]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("finished"), "{t}");
    // Oracle on the examples: 2 of 5 tasks need their skill, so no-skills = 60 %, curated = 100 %.
    assert!(
        t.contains("60.0%") && t.contains("100.0%") && t.contains("+40.0"),
        "{t}"
    );
    assert!(s.dir.path().join("jobs").is_dir());

    let st = skillscope(&s, &["status", "--json"]);
    assert!(st.status.success(), "{}", text(&st));
    let v: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    let run = &v["runs"][0];
    assert_eq!(run["run"]["status"], "finished");
    assert_eq!(run["n_tasks"], 5);
    let conds = run["conditions"].as_array().unwrap();
    assert_eq!(conds[0]["condition"], "no-skills");
    assert!((conds[0]["pass_rate"].as_f64().unwrap() - 0.6).abs() < 1e-9);
    assert!((conds[1]["pass_rate"].as_f64().unwrap() - 1.0).abs() < 1e-9);
    assert_eq!(conds[1]["outcomes"]["pass"], 10);
    // The example verifiers write CTRF reports: test counts are recorded.
    let c = rusqlite::Connection::open(s.db()).unwrap();
    let with_tests: i64 = c
        .query_row(
            "SELECT COUNT(*) FROM trials WHERE tests_total = 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(with_tests, 20);

    // Every trial folder proves which skills its agent could see: curated trials exactly their
    // task's skills, hashed as the files of environment/skills (computed here independently);
    // no-skills trials none. status --json's per-condition counts are recomputed from the folders.
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/example-tasks");
    let mut seen: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    let mut folders = 0;
    for (dir, task, condition) in trial_folders(&c) {
        let x = common::skill_exposure(&dir);
        folders += 1;
        let visible: std::collections::BTreeMap<String, String> = x["skills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["dir"].as_str().unwrap().to_string(),
                    s["sha256"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let skills_dir = examples.join(&task).join("environment/skills");
        let task_skills: std::collections::BTreeMap<String, String> =
            std::fs::read_dir(&skills_dir)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| {
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        common::folder_sha256(&e.path()),
                    )
                })
                .collect();
        match condition.as_str() {
            "curated" => {
                assert!(!task_skills.is_empty(), "{task} has skills");
                assert_eq!(visible, task_skills, "{task}: {x:#}");
                assert!(
                    x["skills"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .all(|s| s["origin"] == "task")
                );
            }
            _ => assert!(visible.is_empty(), "{task} no-skills sees no skill: {x:#}"),
        }
        assert_eq!(
            x["used"]["state"], "unknown",
            "the oracle's use of skills is unknown"
        );
        let e = seen.entry(condition).or_default();
        e.0 += 1;
        e.1 += usize::from(!visible.is_empty());
    }
    assert_eq!(folders, 20);
    for c in run["skill_exposure"].as_array().unwrap() {
        let (recorded, with) = seen[c["condition"].as_str().unwrap()];
        assert_eq!(c["recorded"], recorded, "{c:#}");
        assert_eq!(c["with_skills"], with, "{c:#}");
        assert_eq!(c["use_unknown"], if with > 0 { recorded } else { 0 });
    }
    assert_eq!(run["skill_flags"], serde_json::json!([]));

    // Running the same command again resumes the finished run: nothing re-runs.
    let again = skillscope(&s, &["run", "--trials", "2", "--headless"]);
    assert!(again.status.success(), "{}", text(&again));
    let st2 = skillscope(&s, &["status", "--json"]);
    let v2: serde_json::Value = serde_json::from_slice(&st2.stdout).unwrap();
    assert_eq!(v2["runs"].as_array().unwrap().len(), 1);
    assert_eq!(v2["runs"][0]["conditions"], v["runs"][0]["conditions"]);

    // The event log says when the run started, finished, resumed and finished again.
    let messages: Vec<String> = c
        .prepare("SELECT message FROM run_events ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let at = |prefix: &str| {
        messages
            .iter()
            .position(|m| m.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} in {messages:#?}"))
    };
    assert!(at("run started: 20 trials planned") < at("run finished"));
    assert!(at("run resumed: 20 of 20 trials already finished") > at("run finished"));
}

#[test]
fn tasks_command_lists_examples_and_reports_bad_tasks() {
    let s = Scratch::new();
    let out = skillscope(&s, &["tasks"]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains("ledger-code-mapping") && t.contains("5 tasks"),
        "{t}"
    );

    let fixtures = common::fixtures();
    let out = skillscope(&s, &["tasks", "--tasks", fixtures.to_str().unwrap()]);
    let t = text(&out);
    assert!(
        t.contains("malformed-toml") && t.contains("timeout_sec"),
        "{t}"
    );
    assert!(t.contains("missing Dockerfile"), "{t}");
    // A script can gate a run on it: tasks that cannot run make it exit 4, JSON too.
    assert_eq!(out.status.code(), Some(4), "{t}");
    let json = skillscope(
        &s,
        &["tasks", "--json", "--tasks", fixtures.to_str().unwrap()],
    );
    assert_eq!(json.status.code(), Some(4));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(v["cannot_run"].as_u64().unwrap() >= 2, "{v}");
    // A value as written, with its line and column (README: "file, key and line").
    assert!(t.contains("found 1e308 (line 13, column 15)"), "{t}");
    assert!(!t.contains("0000000000"), "{t}");

    // An invalid task.toml has no timeouts: none are made up (Harbor's 600 s defaults).
    let task = |id: &str| {
        v["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .cloned()
            .unwrap()
    };
    assert!(task("malformed-toml")["agent_timeout_sec"].is_null());
    assert!(task("malformed-toml")["verifier_timeout_sec"].is_null());
    assert!(task("passes")["agent_timeout_sec"].as_f64().is_some());
    let row = t
        .lines()
        .find(|l| l.contains("malformed-toml"))
        .expect("its row");
    assert!(!row.contains("600"), "{row}");
    assert!(row.contains('—'), "{row}");
}

/// `tasks --check` on the built-in examples passes (exit 0): the two tasks that need their skill
/// fail the oracle without it by design, and the check says so as expected rather than "oracle
/// failed" (issue 48: a new user read exit 4 as a broken setup).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_health_check_of_the_examples_passes_and_names_the_tasks_that_need_their_skills() {
    require_docker().await;
    let s = Scratch::new();
    let out = skillscope(&s, &["tasks", "--check", "--jobs-dir", "jobs"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(
        t.contains("5 pass the oracle in every condition they can (2 tasks only with their skills, as expected)"),
        "{t}"
    );
    assert!(t.contains("needs its skills (expected)"), "{t}");
    assert!(!t.contains("oracle failed"), "{t}");
}

/// The README's sample output is what its first command prints today, byte for byte: `run` on a
/// fresh machine (the built-in examples, 5 trials, into a pipe, so the table is printed whole)
/// writes exactly the README's block to standard output (issue 48: the block lacked the `A/A ±pp`
/// column and the lines that explain the table).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readmes_sample_output_is_what_the_first_command_prints() {
    require_docker().await;
    let readme =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
            .unwrap();
    let start = readme
        .find("so the run ends with:\n\n```\n")
        .expect("the README's sample output")
        + "so the run ends with:\n\n```\n".len();
    let sample = &readme[start..start + readme[start..].find("```").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("home")).unwrap();
    let out = crate::support::process::Skillscope::new(["run"])
        .bare(dir.path())
        .output_async()
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        printed, sample,
        "README.md's sample output (left: printed, right: README)"
    );
}

#[test]
fn bad_input_gets_clear_errors() {
    let s = Scratch::new();
    let out = skillscope(&s, &["run", "--tasks", "/no/such/folder"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("/no/such/folder"), "{}", text(&out));

    let out = skillscope(&s, &["run", "--conditions", "self-made"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("self-made"), "{}", text(&out));

    // The self-generation options need a condition that uses them, and a readable prompt.
    let out = skillscope(
        &s,
        &[
            "run",
            "--conditions",
            "self-generated",
            "--skill-creator",
            ".",
        ],
    );
    assert!(!out.status.success());
    assert!(
        text(&out).contains("--skill-creator needs self-generated:two-phase"),
        "{}",
        text(&out)
    );
    let out = skillscope(
        &s,
        &[
            "run",
            "--conditions",
            "self-generated",
            "--self-gen-prompt",
            "/no/such/prompt.md",
        ],
    );
    assert!(!out.status.success());
    assert!(text(&out).contains("/no/such/prompt.md"), "{}", text(&out));
    let out = skillscope(&s, &["run", "--self-gen-prompt", "/no/such/prompt.md"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("needs a self-generated condition"),
        "{}",
        text(&out)
    );

    let out = skillscope(&s, &["status", "--db", "/no/such/db.sqlite"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("no database at /no/such/db.sqlite"),
        "{}",
        text(&out)
    );

    let out = skillscope(&s, &["run", "--mount", "relative:/x"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("relative:/x"), "{}", text(&out));
}

/// The binary with stdout and stderr captured (not a terminal), `RUST_BACKTRACE=1` in the
/// environment (a user error must not print stack frames even then) and `NO_COLOR` unset.
fn piped(s: &Scratch, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .args(args)
        .env("XDG_DATA_HOME", s.dir.path().join("data"))
        .env("SKILLSCOPE_DB", s.db())
        .env("RUST_BACKTRACE", "1")
        .env_remove("NO_COLOR")
        .current_dir(s.dir.path())
        .output()
        .expect("run skillscope")
}

/// The binary under a pseudo-terminal (`script` from util-linux): what an operator sees, colour
/// included; `script -e` passes the exit code on.
fn on_terminal(s: &Scratch, args: &[&str], no_color: bool) -> (i32, String) {
    let bin = env!("CARGO_BIN_EXE_skillscope");
    let line = std::iter::once(bin)
        .chain(args.iter().copied())
        .map(|a| shlex::try_quote(a).unwrap().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .env("XDG_DATA_HOME", s.dir.path().join("data"))
        .env("SKILLSCOPE_DB", s.db())
        .env("TERM", "xterm-256color")
        .current_dir(s.dir.path())
        .stdin(std::process::Stdio::null());
    if no_color {
        cmd.env("NO_COLOR", "1");
    } else {
        cmd.env_remove("NO_COLOR");
    }
    let out = cmd
        .output()
        .expect("`script` (util-linux) is needed for the terminal tests");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n"),
    )
}

/// An error as the operator must see it: exactly `error: …` (and `hint: …` lines), nothing of
/// color-eyre's report, no stack frames, no escape bytes.
fn assert_clean_error(o: &Output, says: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.starts_with("error: "), "{err:?}");
    assert!(err.contains(says), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.contains("error:")).count(),
        1,
        "printed once: {err}"
    );
    for noise in [
        "\x1b",
        "Error:",
        "BACKTRACE",
        "Location",
        "panicked",
        " at src/",
    ] {
        assert!(!err.contains(noise), "{noise:?} in {err:?}");
    }
    assert!(
        err.lines()
            .skip(1)
            .all(|l| l.starts_with("hint: ") || l.starts_with("  ")),
        "{err}"
    );
}

/// A store with one imported run (the published Gemini 3 Flash per-trial CSV: partial rewards,
/// two conditions) in the scratch folder.
fn imported(s: &Scratch) -> String {
    let csv = common::shared()
        .join("skillsbench/published/shenghan/experiment_runs__gemini-cli-gemini3flash_subset.csv");
    let out = piped(s, &["import", csv.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    "csv-gemini-cli-gemini3flash".to_string()
}

#[test]
fn user_errors_are_one_line_without_colour_or_backtrace_when_piped() {
    let s = Scratch::new();
    let o = piped(&s, &["status", "--db", "/no/such/db.sqlite"]);
    assert_clean_error(&o, "no database at /no/such/db.sqlite");

    let o = piped(&s, &["run", "--conditions", "self-made"]);
    assert_clean_error(&o, "invalid condition \"self-made\"");

    // An unknown run lists the runs there are, closest first.
    let run = imported(&s);
    let o = piped(&s, &["status", "csv-gemini-flash"]);
    assert_clean_error(&o, "no run named \"csv-gemini-flash\"");
    assert!(String::from_utf8_lossy(&o.stderr).contains(&format!(
        "hint: runs in the database (closest first): {run}"
    )));

    // Usage errors stay clap's, exit 2.
    let o = piped(&s, &["status", "--bogus"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&o.stderr).contains('\x1b'));
}

#[test]
fn colour_only_on_a_terminal_and_never_with_no_color() {
    let s = Scratch::new();
    let (code, screen) = on_terminal(&s, &["status", "--db", "/no/such/db.sqlite"], false);
    assert_eq!(code, 1, "{screen}");
    assert!(
        screen.contains("\x1b[1;31merror:\x1b[0m no database"),
        "{screen:?}"
    );
    let (code, screen) = on_terminal(&s, &["status", "--db", "/no/such/db.sqlite"], true);
    assert_eq!(code, 1, "{screen}");
    assert!(screen.starts_with("error: no database"), "{screen:?}");
    assert!(!screen.contains('\x1b'), "{screen:?}");
}

#[test]
fn unknown_task_ids_list_the_valid_ones_not_an_internal_path() {
    let s = Scratch::new();
    let o = piped(&s, &["run", "--headless", "--task", "ledger-code-maping"]);
    assert_clean_error(
        &o,
        "no task named \"ledger-code-maping\" in the built-in example tasks",
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("hint: valid ids (closest first): ledger-code-mapping, "),
        "{err}"
    );
    assert!(!err.contains("example-tasks/"), "no internal path: {err}");
    // A tasks folder of the operator's is named by its path.
    let fixtures = common::fixtures();
    let o = piped(
        &s,
        &[
            "run",
            "--headless",
            "--tasks",
            fixtures.to_str().unwrap(),
            "--task",
            "nope",
        ],
    );
    assert_clean_error(
        &o,
        &format!(
            "no task named \"nope\" in tasks folder {}",
            fixtures.display()
        ),
    );
}

#[test]
fn watch_says_what_it_needs_and_lists_the_runs_there_are() {
    let s = Scratch::new();
    let run = imported(&s);
    // No terminal: a clear message, not `os error 6`.
    let o = piped(&s, &["watch"]);
    assert_clean_error(&o, "the dashboard needs a terminal");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("hint: for a table use `skillscope status`")
    );
    // An unknown run on a terminal: the runs in the store, and --wait.
    let (code, screen) = on_terminal(&s, &["watch", "nosuchrun"], true);
    assert_eq!(code, 1, "{screen}");
    assert!(
        screen.contains("error: no run named \"nosuchrun\""),
        "{screen}"
    );
    assert!(
        screen.contains(&run) && screen.contains("--wait"),
        "{screen}"
    );
    let (code, screen) = on_terminal(&s, &["watch", "--experiment", "nope"], true);
    assert_eq!(code, 1, "{screen}");
    assert!(screen.contains("no experiment named \"nope\""), "{screen}");
}

/// The binary with its stdout a pipe whose reader is already gone (stderr piped).
fn spawn_with_closed_stdout(s: &Scratch, args: &[&str]) -> std::process::Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .args(args)
        .env("XDG_DATA_HOME", s.dir.path().join("data"))
        .env("SKILLSCOPE_DB", s.db())
        .current_dir(s.dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child
}

/// `skillscope status | head -2`: the reader goes away; skillscope ends quietly (SIGPIPE, as
/// `cat` does) — no panic, no exit 101 or 134.
#[test]
fn a_closed_pipe_ends_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let s = Scratch::new();
    imported(&s);
    for args in [
        &["status"][..],
        &["status", "--json"],
        &["tasks"],
        &["report", "--format", "json"],
    ] {
        // The read end closes before skillscope writes: its first write meets a closed pipe.
        let child = spawn_with_closed_stdout(&s, args);
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("panicked") && !err.contains("error"),
            "{args:?}: {err}"
        );
        assert!(
            out.status.success() || out.status.signal() == Some(libc::SIGPIPE),
            "{args:?}: {:?} {err}",
            out.status
        );
    }
}

#[test]
fn reports_go_beside_the_database_and_notes_are_grouped() {
    let s = Scratch::new();
    let registry =
        common::shared().join("skillsbench/published/website-data/results-registry.json");
    let data = s.dir.path().join("data-dir");
    std::fs::create_dir_all(&data).unwrap();
    let db = data.join("r.db");
    let db = db.to_str().unwrap();
    let o = piped(&s, &["import", "--db", db, registry.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let o = piped(&s, &["report", "--db", db, "registry-*", "--format", "md"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(data.join("reports").is_dir(), "{t}");
    assert!(
        !s.dir.path().join("reports").exists(),
        "never the current folder: {t}"
    );
    // 18 runs × 2 conditions share two notes: two lines, not 54.
    assert_eq!(t.matches("note:").count(), 2, "{t}");
    assert!(
        t.contains("note: every condition (36): trials reconstructed"),
        "{t}"
    );
}

/// Partial rewards are explained where they show: a `partial` column and a sentence under the
/// table.
#[test]
fn partial_rewards_are_explained_in_the_table() {
    let s = Scratch::new();
    let run = imported(&s);
    let o = piped(&s, &["status", &run]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("partial"), "{t}");
    assert!(
        t.contains("partial = failed trials with a reward between 0 and 1"),
        "{t}"
    );
}

/// `run … | head -3`: the run must not die with its reader (it owns containers); it finishes and
/// exits 0 without a panic or an abort.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_reader_goes_away_still_finishes() {
    require_docker().await;
    let s = Scratch::new();
    let mut child = spawn_with_closed_stdout(
        &s,
        &[
            "run",
            "--headless",
            "--trials",
            "1",
            "--task",
            "ledger-code-mapping",
        ],
    );
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
    let st = skillscope(&s, &["status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(v["runs"][0]["run"]["status"], "finished");
}

/// A second `run` of a run another process runs (the operator typed it twice, or in a second SSH
/// session) is refused before it writes anything, with the commands that watch and stop the
/// live run — with `--detach` too, whose refusal must not land in the live run's log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_run_of_a_live_run_hints_watch_and_stop_and_writes_nothing() {
    require_docker().await;
    let s = Scratch::new();
    let fixtures = common::fixtures().display().to_string();
    let args = [
        "run",
        "--tasks",
        &fixtures,
        "--task",
        "sleeper",
        "--conditions",
        "no-skills",
        "--trials",
        "1",
        "--run",
        "twice",
    ];
    let mut first = Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .args(args)
        .arg("--headless")
        .env("SKILLSCOPE_DB", s.db())
        .arg("--jobs-dir")
        .arg(s.jobs())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    loop {
        let c = s.store.connect().unwrap();
        if skillscope::store::queries::find_run(&c, "twice")
            .unwrap()
            .is_some_and(|r| r.status == "running" && r.owner_pid == Some(first.id()))
        {
            break;
        }
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(60),
            "the first run never registered"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let log = s.dir.path().join("twice.log");
    let before = std::fs::read(&log).ok();
    for extra in [&["--headless"][..], &["--detach"][..]] {
        let mut argv: Vec<&str> = args.to_vec();
        argv.extend_from_slice(extra);
        let again = piped(&s, &argv);
        assert_clean_error(&again, "run twice is already running");
        let err = String::from_utf8_lossy(&again.stderr);
        assert!(err.contains(&format!("engine pid {}", first.id())), "{err}");
        assert!(
            err.contains("skillscope watch --db") && err.contains("skillscope stop --db"),
            "{extra:?}: {err}"
        );
        assert!(!err.contains("skillscope status"), "{err}");
        assert_eq!(
            std::fs::read(&log).ok(),
            before,
            "{extra:?}: the refusal was written into the live run's log"
        );
    }
    let c = s.store.connect().unwrap();
    let run = skillscope::store::queries::find_run(&c, "twice")
        .unwrap()
        .unwrap();
    assert_eq!(run.owner_pid, Some(first.id()), "the live run is untouched");
    unsafe { libc::kill(first.id() as i32, libc::SIGINT) };
    let status = first.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
}
