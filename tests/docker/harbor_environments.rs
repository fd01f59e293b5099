//! Tasks run the way Harbor runs them, in real containers: a compose task's sidecar built from its
//! own Dockerfile, healthy before the main container starts and reachable by service name; a
//! `.yml` compose file without a `main` service; every Dockerfile heredoc form; `.dockerignore`
//! leaving a large file and a secret out of the context; unsupported compose keys named as a build
//! error; nothing left behind (containers, networks). And `skillscope tasks --check` over the
//! example tasks and fixture tasks, every failure with its reason.

use crate::support::common;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use common::{Scratch, containers_of_run, fixtures, one, require_docker, skillscope};
use skillscope::runner::image::{ImageSettings, prepare_context};
use skillscope::skillsbench::{Condition, Task};
use skillscope::store::Outcome;

/// Networks still carrying the run label.
async fn networks_of_run(run: &str) -> usize {
    let d = bollard::Docker::connect_with_defaults().expect("docker");
    let filters = HashMap::from([("label".to_string(), vec![format!("skillscope.run={run}")])]);
    d.list_networks(Some(bollard::query_parameters::ListNetworksOptions {
        filters: Some(filters),
    }))
    .await
    .expect("list networks")
    .len()
}

fn both() -> Vec<Condition> {
    vec![Condition::NoSkills, Condition::Curated]
}

/// Copies fixture tasks into a fresh tasks folder.
fn tasks_folder(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for n in names {
        copy_tree(&fixtures().join(n), &dir.path().join(n));
    }
    dir
}

fn copy_tree(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from) {
        let e = e.expect("walk");
        let dest = to.join(e.path().strip_prefix(from).expect("prefix"));
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest).expect("mkdir");
        } else {
            std::fs::copy(e.path(), &dest).expect("copy");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compose_and_heredoc_tasks_pass_in_both_conditions_and_leave_nothing() {
    let s = Scratch::new();
    let tasks = ["compose-sidecar", "compose-yml", "heredocs"];
    let out = s.run(s.request("harbor-envs", &tasks, both(), 1)).await;
    assert!(out.finished);
    let rows = s.trials(out.run.id);
    for t in tasks {
        for c in ["no-skills", "curated"] {
            let r = one(&rows, t, c);
            assert_eq!(
                r.outcome,
                Some(Outcome::Pass),
                "{t} {c}: {:?}\n{}",
                r.error,
                std::fs::read_to_string(
                    PathBuf::from(r.trial_dir.as_deref().unwrap()).join("verifier/test-stdout.txt")
                )
                .unwrap_or_default()
            );
        }
    }
    // The sidecar was healthy before main started, and the log says so.
    let r = one(&rows, "compose-sidecar", "curated");
    let dir = PathBuf::from(r.trial_dir.as_deref().unwrap());
    let log = std::fs::read_to_string(dir.join("environment/services.log")).unwrap();
    assert!(log.contains("main waited for files: healthy"), "{log}");
    assert!(log.contains("(internal: no outside access)"), "{log}");
    assert!(log.contains("services.files.expose ignored"), "{log}");
    assert!(dir.join("environment/build-files.log").is_file());
    // Service images carry no skills; the main image of the curated condition does.
    let yml = one(&rows, "compose-yml", "curated");
    let ylog = std::fs::read_to_string(
        PathBuf::from(yml.trial_dir.as_deref().unwrap()).join("environment/services.log"),
    )
    .unwrap();
    assert!(
        ylog.contains("echo waited for prep: completed successfully"),
        "{ylog}"
    );
    assert!(ylog.contains("services.echo.ports ignored"), "{ylog}");
    // The heredoc rewrite is in the build log.
    let h = one(&rows, "heredocs", "no-skills");
    let blog = std::fs::read_to_string(
        PathBuf::from(h.trial_dir.as_deref().unwrap()).join("environment/build.log"),
    )
    .unwrap();
    assert!(blog.contains("dockerfile: heredoc line"), "{blog}");
    assert_eq!(containers_of_run("harbor-envs").await, 0);
    assert_eq!(networks_of_run("harbor-envs").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dockerignore_leaves_a_large_file_and_a_secret_out() {
    require_docker().await;
    let tasks = tasks_folder(&["dockerignore"]);
    let env = tasks.path().join("dockerignore/environment");
    // 64 MiB that must never be read into the context.
    let big = std::fs::File::create(env.join("big.bin")).unwrap();
    big.set_len(64 << 20).unwrap();
    let task = Task::load(&tasks.path().join("dockerignore"), |_| None);
    let plan = prepare_context(&task, &Condition::Curated, &ImageSettings::default()).unwrap();
    let size = std::fs::metadata(plan.tar.path()).unwrap().len();
    assert!(size < 1 << 20, "context tar is {size} bytes");
    let names: Vec<String> = tar::Archive::new(std::fs::File::open(plan.tar.path()).unwrap())
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
        .collect();
    for gone in ["big.bin", "secret.txt", "sub/x.tmp", "data/drop.csv"] {
        assert!(!names.iter().any(|n| n == gone), "{gone} in {names:?}");
    }
    for kept in ["normal.txt", "data/keep.csv", ".dockerignore", "Dockerfile"] {
        assert!(names.iter().any(|n| n == kept), "{kept} not in {names:?}");
    }
    assert!(
        plan.changes
            .iter()
            .any(|c| c.contains(".dockerignore: left out"))
    );

    let s = Scratch::new();
    let mut req = s.request("dockerignore", &["dockerignore"], both(), 1);
    req.tasks_dir = tasks.path().to_path_buf();
    let out = s.run(req).await;
    let rows = s.trials(out.run.id);
    for c in ["no-skills", "curated"] {
        let r = one(&rows, "dockerignore", c);
        assert_eq!(r.outcome, Some(Outcome::Pass), "{c}: {:?}", r.error);
    }
    assert_eq!(containers_of_run("dockerignore").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_compose_keys_are_a_build_error_naming_each() {
    require_docker().await;
    let tasks = tasks_folder(&["compose-sidecar"]);
    let compose = tasks
        .path()
        .join("compose-sidecar/environment/docker-compose.yaml");
    let text = std::fs::read_to_string(&compose).unwrap().replace(
        "\n  files:\n    build:",
        "\n  files:\n    privileged: true\n    volumes: [cache:/cache]\n    build:",
    ) + "secrets:\n  token:\n    file: ./token\n";
    std::fs::write(&compose, text).unwrap();
    let s = Scratch::new();
    let mut req = s.request(
        "bad-compose",
        &["compose-sidecar"],
        vec![Condition::NoSkills],
        1,
    );
    req.tasks_dir = tasks.path().to_path_buf();
    let out = s.run(req).await;
    let r = one(&s.trials(out.run.id), "compose-sidecar", "no-skills").clone();
    assert_eq!(r.outcome, Some(Outcome::BuildError));
    let e = r.error.unwrap();
    for want in [
        "top-level key `secrets`",
        "services.files.privileged",
        "named volume `cache`",
    ] {
        assert!(e.contains(want), "{want} not in {e}");
    }
    assert_eq!(containers_of_run("bad-compose").await, 0);
    assert_eq!(networks_of_run("bad-compose").await, 0);
}

/// The JSON rows of a health check, by task id.
fn check_rows(json: &serde_json::Value) -> HashMap<String, serde_json::Value> {
    json["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|r| (r["task"].as_str().unwrap().to_string(), r.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_check_names_each_failure_with_its_reason() {
    require_docker().await;
    let tasks = tasks_folder(&["passes", "build-error", "compose-sidecar", "heredocs"]);
    // A base image this host lacks, and a data file missing from the checkout.
    for (name, df) in [
        (
            "missing-base",
            "FROM skillscope-test/no-such-base:1\nWORKDIR /root\n",
        ),
        (
            "missing-data",
            "FROM skillscope/busybox:1\nCOPY dataset.csv /root/\n",
        ),
    ] {
        copy_tree(&fixtures().join("passes"), &tasks.path().join(name));
        std::fs::write(tasks.path().join(name).join("environment/Dockerfile"), df).unwrap();
    }
    let s = Scratch::new();
    let dir = tasks.path().to_str().unwrap();
    let args = [
        "tasks",
        "--check",
        "--tasks",
        dir,
        "--jobs-dir",
        "jobs",
        "--json",
    ];
    let o = skillscope(&s, &args);
    // Broken tasks make the check fail (exit 4) after it printed and wrote its table.
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let rows = check_rows(&json);
    assert_eq!(rows.len(), 6);
    for ok in ["passes", "compose-sidecar", "heredocs"] {
        assert!(rows[ok]["reason"].is_null(), "{ok}: {}", rows[ok]);
        assert_eq!(rows[ok]["builds"], "yes");
        assert_eq!(rows[ok]["rewards"]["curated"], 1.0);
    }
    let kind = |t: &str| rows[t]["reason"]["kind"].as_str().unwrap().to_string();
    let detail = |t: &str| rows[t]["reason"]["detail"].as_str().unwrap().to_string();
    assert_eq!(kind("build-error"), "build-failed");
    assert_eq!(kind("missing-base"), "missing-base-image");
    assert!(detail("missing-base").contains("skillscope-test/no-such-base:1"));
    assert_eq!(kind("missing-data"), "missing-data-file");
    assert!(detail("missing-data").contains("dataset.csv"));
    assert_eq!(rows["missing-base"]["builds"], "no");
    assert_eq!(json["counts"]["pass"], 3);
    // Written beside the run's job folder; a second call resumes the stored run (nothing re-runs).
    let run = json["run"].as_str().unwrap();
    let written = s.dir.path().join("jobs").join(run).join("health-check.txt");
    let table = std::fs::read_to_string(&written).unwrap();
    assert!(
        table.contains("missing base image: skillscope-test/no-such-base:1"),
        "{table}"
    );
    let again = skillscope(&s, &args[..6]);
    assert_eq!(again.status.code(), Some(4));
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(
        text.contains("3 pass the oracle in every condition"),
        "{text}"
    );
    assert!(text.contains("missing data file: dataset.csv"), "{text}");
    assert_eq!(containers_of_run(run).await, 0);
    assert_eq!(networks_of_run(run).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_check_over_the_example_tasks() {
    require_docker().await;
    let s = Scratch::new();
    let o = skillscope(&s, &["tasks", "--check", "--jobs-dir", "jobs"]);
    let out = String::from_utf8_lossy(&o.stdout);
    // Exit 0 only when every task passes the oracle in every condition; the example tasks whose
    // knowledge is only in their skill fail the oracle without it (exit 4, each one named).
    let all_pass = out.contains("5 pass the oracle in every condition");
    assert_eq!(
        o.status.code(),
        Some(if all_pass { 0 } else { 4 }),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    if !all_pass {
        assert!(out.contains("oracle failed"), "{out}");
    }
    for t in [
        "ledger-code-mapping",
        "sales-region-totals",
        "sensor-drift-correction",
        "service-log-triage",
        "temperature-unit-normalization",
    ] {
        assert!(out.contains(t), "{t} missing from\n{out}");
    }
    assert!(
        out.contains("5 tasks · 5 build in every condition"),
        "{out}"
    );
}
