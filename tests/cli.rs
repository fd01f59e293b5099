//! The binary as an operator uses it: the README's first command (the built-in example tasks),
//! `status --json`, `tasks`, and clear errors for bad input.

mod common;

use std::process::{Command, Output};

use common::{Scratch, require_docker};

fn skillscope(s: &Scratch, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .args(args)
        .env("XDG_DATA_HOME", s.dir.path().join("data"))
        .env("SKILLSCOPE_DB", s.db())
        .current_dir(s.dir.path())
        .output()
        .expect("run skillscope")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn example_run_prints_pass_rates_and_status_reports_them() {
    require_docker().await;
    let s = Scratch::new();
    let out = skillscope(&s, &["run", "--trials", "2", "--headless"]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("finished"), "{t}");
    // Oracle on the examples: 3 of 5 tasks need their skill, so no-skills = 60 %, curated = 100 %.
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

    // Running the same command again resumes the finished run: nothing re-runs.
    let again = skillscope(&s, &["run", "--trials", "2", "--headless"]);
    assert!(again.status.success(), "{}", text(&again));
    let st2 = skillscope(&s, &["status", "--json"]);
    let v2: serde_json::Value = serde_json::from_slice(&st2.stdout).unwrap();
    assert_eq!(v2["runs"].as_array().unwrap().len(), 1);
    assert_eq!(v2["runs"][0]["conditions"], v["runs"][0]["conditions"]);
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
