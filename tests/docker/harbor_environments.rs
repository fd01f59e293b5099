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
use skillscope::runner::docker::image::{ImageSettings, prepare_context};
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
    assert_eq!(containers_of_run(&s, "harbor-envs").await, 0);
    assert_eq!(networks_of_run("harbor-envs").await, 0);
}

/// A compose task's writable bind of its own folder is copied per trial: the agent's writes reach
/// the verifier only as carried work (its deletion too), never the task's folder, and a later
/// trial that does nothing fails where an earlier one passed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writable_bind_of_the_task_folder_is_each_trials_own() {
    let s = Scratch::new();
    let tasks = tasks_folder(&["compose-bind"]);
    let task = tasks.path().join("compose-bind");
    let mut req = s.request(
        "bind-honest",
        &["compose-bind"],
        vec![Condition::NoSkills],
        1,
    );
    req.tasks_dir = tasks.path().to_path_buf();
    let out = s.run(req).await;
    assert!(out.finished);
    let rows = s.trials(out.run.id);
    let r = one(&rows, "compose-bind", "no-skills");
    let dir = PathBuf::from(r.trial_dir.as_deref().unwrap());
    let stdout = std::fs::read_to_string(dir.join("verifier/test-stdout.txt")).unwrap_or_default();
    assert_eq!(r.outcome, Some(Outcome::Pass), "{:?}\n{stdout}", r.error);
    assert!(r.tamper.is_none(), "{:?}", r.tamper);
    // An agent that does nothing, after one that passed, fails.
    std::fs::write(task.join("solution/solve.sh"), "#!/bin/sh\ntrue\n").unwrap();
    let mut req = s.request("bind-idle", &["compose-bind"], vec![Condition::NoSkills], 1);
    req.tasks_dir = tasks.path().to_path_buf();
    let out = s.run(req).await;
    let rows = s.trials(out.run.id);
    let idle = one(&rows, "compose-bind", "no-skills");
    assert_eq!(idle.outcome, Some(Outcome::Fail), "{:?}", idle.error);
    assert_eq!(containers_of_run(&s, "bind-idle").await, 0);
    let log = std::fs::read_to_string(dir.join("environment/services.log")).unwrap();
    assert!(log.contains("/app mounted from this trial's copy"), "{log}");
    // The copies were outside the trial folder, and are gone.
    let root = log
        .lines()
        .find_map(|l| l.split("copies in ").nth(1)?.split(" (removed").next())
        .unwrap_or_else(|| panic!("no copies' folder: {log}"));
    assert!(!root.starts_with(&*dir.to_string_lossy()), "{root}");
    assert!(!Path::new(root).exists(), "{root} is left");
    // The task's folder is as it was.
    let app = task.join("environment/app");
    assert!(
        !app.join("answer.txt").exists(),
        "the agent wrote into the task's folder"
    );
    assert!(
        app.join("sub/keep.txt").exists(),
        "the agent deleted in the task's folder"
    );
    assert_eq!(
        std::fs::read_to_string(task.join("environment/notes.txt")).unwrap(),
        "draft\n",
        "the agent wrote into the task's file"
    );
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
    // The task's own files are in the no-skills image's context (a condition with skills layers
    // over it).
    let plan = prepare_context(&task, &Condition::NoSkills, &ImageSettings::default()).unwrap();
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
    assert_eq!(containers_of_run(&s, "dockerignore").await, 0);
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
    assert_eq!(containers_of_run(&s, "bad-compose").await, 0);
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
    assert_eq!(containers_of_run(&s, run).await, 0);
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

/// A task made from the `passes` fixture under `root/name`: `toml_extra` appended to its
/// `task.toml` (an `[environment]` line replaces the fixture's table), and `files` (path in the
/// task folder, text) written over it.
fn made_task(
    root: &Path,
    name: &str,
    environment: Option<&str>,
    toml_extra: &str,
    files: &[(&str, &str)],
) {
    let dir = root.join(name);
    copy_tree(&fixtures().join("passes"), &dir);
    let mut toml = std::fs::read_to_string(dir.join("task.toml")).unwrap();
    if let Some(env) = environment {
        let at = toml.find("[environment]").unwrap();
        toml.truncate(at);
        toml.push_str(env);
    }
    toml.push_str(toml_extra);
    std::fs::write(dir.join("task.toml"), toml).unwrap();
    for (path, text) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
    }
}

/// A variable no test sets.
const UNSET: &str = "SKILLSCOPE_TEST_UNSET_27";

/// A task whose `[solution] env` names [`UNSET`]: its solution writes the answer only with it.
fn solution_env_task(root: &Path) {
    made_task(
        root,
        "solution-env",
        None,
        &format!("\n[solution]\nenv = {{ KEY = \"${{{UNSET}}}\" }}\n"),
        &[(
            "solution/solve.sh",
            "#!/bin/sh\n[ -n \"$KEY\" ] && echo 42 > /root/answer.txt\n",
        )],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_nobody_set_is_refused_before_any_trial_and_marked_when_allowed() {
    require_docker().await;
    let tasks = tempfile::tempdir().unwrap();
    solution_env_task(tasks.path());
    let s = Scratch::new();
    let dir = tasks.path().to_str().unwrap();
    let run = |name: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            "--headless",
            "--tasks",
            dir,
            "--jobs-dir",
            "jobs",
            "--run",
            name,
            "--conditions",
            "no-skills",
            "--trials",
            "1",
        ];
        args.extend_from_slice(extra);
        skillscope(&s, &args)
    };
    // Refused at the start, naming the task, the variable and where it is used; nothing ran.
    let o = run("refused", &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains(&format!("solution-env needs {UNSET} ([solution] env KEY)")),
        "{err}"
    );
    assert!(err.contains("--allow-missing-env"), "{err}");
    assert_eq!(
        err.lines().filter(|l| !l.trim().is_empty()).count(),
        1,
        "{err}"
    );
    let conn = s.store.connect().unwrap();
    assert!(
        skillscope::store::queries::find_run(&conn, "refused")
            .unwrap()
            .is_none(),
        "no run was recorded"
    );
    // Given with --env, the oracle passes (the value reaches the solution, never the store).
    let o = run("given", &["--env", &format!("{UNSET}=s3cret-value")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let given = skillscope::store::queries::find_run(&conn, "given")
        .unwrap()
        .unwrap();
    let rows = s.trials(given.id);
    let r = one(&rows, "solution-env", "no-skills");
    assert_eq!(r.outcome, Some(Outcome::Pass), "{:?}", r.error);
    assert!(r.missing_env.is_none());
    let dump = std::process::Command::new("sqlite3")
        .arg(s.db())
        .arg(".dump")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    assert!(
        !dump.contains("s3cret-value"),
        "the value reached the store"
    );
    // Allowed: it runs with the value empty, and the trial is marked.
    let o = run("allowed", &["--allow-missing-env"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let allowed = skillscope::store::queries::find_run(&conn, "allowed")
        .unwrap()
        .unwrap();
    let rows = s.trials(allowed.id);
    let r = one(&rows, "solution-env", "no-skills");
    assert_eq!(r.outcome, Some(Outcome::Fail));
    assert_eq!(r.missing_env, Some(serde_json::json!([UNSET])));
    let o = skillscope(&s, &["report", "allowed", "--out", "report"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(s.dir.path().join("report/report.md")).unwrap_or_default();
    assert!(
        md.contains("left empty (--allow-missing-env)") && md.contains("solution-env ("),
        "{md}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_check_names_the_true_cause_with_its_evidence() {
    require_docker().await;
    let tasks = tempfile::tempdir().unwrap();
    let root = tasks.path();
    solution_env_task(root);
    // Fails only for CPUs: the test measures the CPUs it got against the 64 it asks for, after a
    // harmless failed download (as test.sh's `curl astral.sh || true`).
    let cpu_test = r#"#!/bin/sh
mkdir -p /logs/verifier
echo "curl: (6) Could not resolve host: astral.sh"
if [ -f /sys/fs/cgroup/cpu.max ]; then read q p < /sys/fs/cgroup/cpu.max; else q=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us); p=$(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us); fi
[ "$q" = max ] || [ "$q" -lt 0 ] && q=$((64 * p))
echo "============================= test session starts =============================="
if [ "$(cat /root/answer.txt)" = 42 ] && [ $((q / p)) -ge 64 ]; then
  echo "1 passed"; echo 1 > /logs/verifier/reward.txt
else
  echo "=================================== FAILURES ==================================="
  echo "E       AssertionError: parallel speedup 0.88x below 1.5x"
  echo "FAILED tests/test_outputs.py::test_speedup - AssertionError: parallel speedup 0.88x below 1.5x"
  echo "========================= 1 failed in 0.10s ========================="
  echo 0 > /logs/verifier/reward.txt
fi
"#;
    made_task(
        root,
        "needs-cpus",
        Some(
            "[environment]\nbuild_timeout_sec = 120.0\ncpus = 64\nmemory_mb = 256\nallow_internet = false\n",
        ),
        "",
        &[("tests/test.sh", cpu_test)],
    );
    // A solution that stops on NLTK's download error, wrapped over two lines.
    made_task(
        root,
        "nltk-offline",
        None,
        "",
        &[(
            "solution/solve.sh",
            "#!/bin/sh\necho 'Merging taxonomies'\necho '[nltk_data] Error loading wordnet: <urlopen error [Errno -2] Name or'\n\
             echo '[nltk_data]     service not known>'\necho 'LookupError: Resource wordnet not found.'\nexit 1\n",
        )],
    );
    let s = Scratch::new();
    let dir = root.to_str().unwrap();
    let o = skillscope(
        &s,
        &[
            "tasks",
            "--check",
            "--tasks",
            dir,
            "--jobs-dir",
            "jobs",
            "--json",
        ],
    );
    // Checks failed: exit 4, with the JSON printed first.
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let rows = check_rows(&json);
    let field = |t: &str, k: &str| {
        rows[t]["reason"][k]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };

    assert_eq!(
        field("solution-env", "kind"),
        "missing-env",
        "{}",
        rows["solution-env"]
    );
    assert!(field("solution-env", "detail").contains(&format!("{UNSET} ([solution] env KEY)")));
    assert_eq!(field("solution-env", "evidence"), "task.toml:22");
    assert_eq!(rows["solution-env"]["builds"], "refused");

    assert_eq!(
        field("needs-cpus", "kind"),
        "cpus-below-request",
        "{}",
        rows["needs-cpus"]
    );
    assert!(
        field("needs-cpus", "detail").contains("asks 64 CPUs"),
        "{}",
        rows["needs-cpus"]
    );
    assert!(field("needs-cpus", "evidence").starts_with("verifier/test-stdout.txt:"));
    assert!(field("needs-cpus", "line").starts_with("FAILED tests/test_outputs.py::test_speedup"));
    assert!(
        rows["needs-cpus"]["clamped"]
            .as_str()
            .unwrap()
            .contains("64 CPUs asked")
    );

    assert_eq!(
        field("nltk-offline", "kind"),
        "network-needed",
        "{}",
        rows["nltk-offline"]
    );
    assert_eq!(field("nltk-offline", "evidence"), "agent/oracle.txt:2");
    assert_eq!(
        field("nltk-offline", "line"),
        "[nltk_data] Error loading wordnet: <urlopen error [Errno -2] Name or service not known>"
    );

    // The clamp is in each trial's config.json, and the Markdown beside the JSON says it all.
    let run = json["run"].as_str().unwrap();
    let configs: Vec<serde_json::Value> = walkdir::WalkDir::new(s.dir.path().join("jobs"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name() == "config.json" && e.path().to_string_lossy().contains("needs-cpus")
        })
        .map(|e| serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap())
        .collect();
    assert_eq!(configs.len(), 2);
    for c in &configs {
        assert_eq!(
            c["environment"]["kwargs"]["clamped"]["cpus"]["requested"], 64.0,
            "{c}"
        );
        assert!(
            c["environment"]["override_cpus"].as_f64().unwrap() < 64.0,
            "{c}"
        );
    }
    let md = std::fs::read_to_string(s.dir.path().join("jobs").join(run).join("health-check.md"))
        .unwrap();
    assert!(md.contains("| CPUs below request |"), "{md}");
    assert!(md.contains("missing env value"), "{md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_tasks_images_build_while_earlier_trials_run() {
    require_docker().await;
    let tasks = tempfile::tempdir().unwrap();
    let root = tasks.path();
    // One trial at a time: the first task's solution takes 8 s, the second task's image 4 s to
    // build (a fresh one: the nonce keeps it from any earlier run's cache).
    made_task(
        root,
        "a-slow-solution",
        None,
        "",
        &[(
            "solution/solve.sh",
            "#!/bin/sh\nsleep 8; echo 42 > /root/answer.txt\n",
        )],
    );
    let nonce = root.file_name().unwrap().to_string_lossy().to_string();
    made_task(
        root,
        "b-slow-build",
        None,
        "",
        &[(
            "environment/Dockerfile",
            &format!("FROM skillscope/busybox:1\nRUN echo {nonce} && sleep 4\nWORKDIR /root\n"),
        )],
    );
    let s = Scratch::new();
    let mut req = s.request(
        "build-ahead",
        &["a-slow-solution", "b-slow-build"],
        vec![Condition::NoSkills],
        1,
    );
    req.tasks_dir = root.to_path_buf();
    req.settings.concurrency = 1;
    let out = s.run(req).await;
    let rows = s.trials(out.run.id);
    let (a, b) = (
        one(&rows, "a-slow-solution", "no-skills"),
        one(&rows, "b-slow-build", "no-skills"),
    );
    assert_eq!(b.outcome, Some(Outcome::Pass), "{:?}", b.error);
    let build = &b.image_builds.as_ref().unwrap()[0];
    assert_eq!(build["built"], true, "{build}");
    assert!(build["seconds"].as_f64().unwrap() >= 3.5, "{build}");
    // Its image was built while the first trial ran: its own setup did not wait for the build.
    let t =
        |s: &Option<String>| chrono::DateTime::parse_from_rfc3339(s.as_deref().unwrap()).unwrap();
    // Measured against the build's own length, not a wall-clock constant, so a loaded machine
    // (where both stretch) cannot fail it: a trial that built its image itself waits at least
    // the whole build.
    let setup = (t(&b.build_finished_at) - t(&b.build_started_at)).num_milliseconds() as f64;
    let build_ms = build["seconds"].as_f64().unwrap() * 1000.0;
    assert!(
        setup < build_ms / 2.0,
        "the second trial waited {setup} ms for its image, whose build took {build_ms} ms"
    );
    assert!(t(&b.started_at) >= t(&a.finished_at) - chrono::Duration::seconds(1));
    let d = bollard::Docker::connect_with_defaults().unwrap();
    let _ = d
        .remove_image(
            build["tag"].as_str().unwrap(),
            None::<bollard::query_parameters::RemoveImageOptions>,
            None,
        )
        .await;
}
