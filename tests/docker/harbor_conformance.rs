//! Harbor's own pydantic models — harbor 0.25.0's and 0.26.0's, each unpacked into a venv under
//! `target/` by `scripts/harbor-venv.sh` — accept every file skillscope writes, for every kind of
//! outcome: job `result.json` and `config.json`, trial `result.json`, `config.json` and
//! `lock.json`, and ATIF trajectories. The example run's locks are also byte for byte what Harbor
//! 0.26 writes, and carry the digests Harbor 0.26's packager gives the example tasks.

use crate::support::common;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::Scratch;
use skillscope::skillsbench::Condition;

/// The python of a venv holding Harbor `version`'s models (made once, then reused).
fn harbor_python(version: &str) -> (PathBuf, PathBuf) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = Command::new(root.join("scripts/harbor-venv.sh"))
        .args(["", version])
        .output()
        .expect("scripts/harbor-venv.sh");
    assert!(
        venv.status.success(),
        "{}",
        String::from_utf8_lossy(&venv.stderr)
    );
    let python = root.join(String::from_utf8_lossy(&venv.stdout).trim());
    let src = python
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("harbor-src");
    (python, src)
}

/// Runs `tests/harbor/validate.py` with Harbor `version` over `jobs`; returns its output after
/// asserting it succeeded.
fn validate(version: &str, jobs: &Path, flags: &[&str]) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (python, src) = harbor_python(version);
    let check = Command::new(&python)
        .arg(root.join("tests/harbor/validate.py"))
        .args(flags)
        .arg(jobs)
        .env("PYTHONPATH", src)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(check.status.success(), "harbor {version}: {text}");
    assert!(text.starts_with(&format!("harbor {version}\n")), "{text}");
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn harbor_models_accept_our_trial_and_job_files() {
    let s = Scratch::new();
    let tasks = [
        "passes",
        "fails",
        "agent-timeout",
        "build-error",
        "no-reward",
        "partial-reward",
    ];
    let out = s
        .run(s.request(
            "conformance",
            &tasks,
            vec![Condition::NoSkills, Condition::Curated],
            1,
        ))
        .await;
    assert!(out.finished);
    for version in ["0.25.0", "0.26.0"] {
        let text = validate(version, &s.jobs(), &["--require-lock"]);
        // 2 jobs × (result.json + config.json) + 12 trials × (result.json + config.json +
        // lock.json) + 10 trajectories (build errors run no agent)
        assert!(text.contains("validated 50 files"), "{text}");
        assert_eq!(text.matches("ok Trajectory").count(), 10, "{text}");
        assert_eq!(text.matches("ok TrialLock").count(), 12, "{text}");
    }
}

/// Harbor 0.26.0's packager digests of the example tasks (as in `skillsbench::digest`'s tests).
const EXAMPLE_DIGESTS: [(&str, &str); 5] = [
    (
        "ledger-code-mapping",
        "sha256:8c8248a0915aa358663a8720dc47f643de2ee4c6225384ca130f33954308149e",
    ),
    (
        "sales-region-totals",
        "sha256:ae1eacaa997ebef97cd83eab18d2f7692020b0ffbda04bd09aa71d09aa810938",
    ),
    (
        "sensor-drift-correction",
        "sha256:a5127c63ca4bbcfd7136886e752473dac3071521d152175fd1d8b42f3b8deadd",
    ),
    (
        "service-log-triage",
        "sha256:b8390a895f664d76fdd2c2836d734256843e91cabb1686372335800506a07216",
    ),
    (
        "temperature-unit-normalization",
        "sha256:518ca590e7bb7143b1c09106897a9b250a873e7f424d903d5072de3d8eff15c9",
    ),
];

/// The example run — the built-in example tasks, oracle, no-skills and curated — leaves a
/// `lock.json` in every trial folder, with the task's Harbor digest, its curated skills (with
/// Harbor's skill digests) under curated and none under no-skills; Harbor 0.25's and 0.26's
/// models accept every file, and 0.26 writes each lock exactly as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_run_carries_harbor_026_locks() {
    let s = Scratch::new();
    let examples = skillscope::skillsbench::examples::materialize(s.dir.path()).unwrap();
    let mut req = s.request(
        "examples",
        &[],
        vec![Condition::NoSkills, Condition::Curated],
        1,
    );
    req.tasks_dir = examples;
    let out = s.run(req).await;
    assert!(out.finished);
    let rows = s.trials(out.run.id);
    assert_eq!(rows.len(), 10);
    for r in &rows {
        let want = EXAMPLE_DIGESTS
            .iter()
            .find(|(t, _)| *t == r.task_id)
            .map(|(_, d)| *d)
            .unwrap();
        assert_eq!(r.task_digest.as_deref(), Some(want), "{}", r.task_id);
        let dir = PathBuf::from(r.trial_dir.as_ref().unwrap());
        let lock: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("lock.json")).unwrap()).unwrap();
        assert_eq!(lock["schema_version"], 2);
        assert_eq!(lock["task"]["name"], r.task_id.as_str());
        assert_eq!(lock["task"]["type"], "local");
        assert_eq!(lock["task"]["digest"], want);
        assert_eq!(lock["verifier"]["environment_mode"], "shared");
        let skills = lock["skills"].as_array().unwrap();
        if r.condition == "curated" {
            assert!(!skills.is_empty(), "{}: {lock:#}", r.task_id);
            for sk in skills {
                let src = PathBuf::from(sk["source"].as_str().unwrap());
                assert_eq!(
                    sk["digest"].as_str().unwrap(),
                    skillscope::skillsbench::digest::skill_digest(&src).unwrap()
                );
            }
        } else {
            assert!(skills.is_empty(), "{}: {lock:#}", r.task_id);
        }
        let result: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap())
                .unwrap();
        assert_eq!(result["schema_version"], 1);
        assert_eq!(result["reward_valid"], true, "{}", r.task_id);
    }
    let text = validate("0.25.0", &s.jobs(), &["--require-lock"]);
    // 2 jobs × 2 + 10 trials × (result, config, lock, trajectory)
    assert!(text.contains("validated 44 files"), "{text}");
    let text = validate("0.26.0", &s.jobs(), &["--require-lock", "--exact-locks"]);
    assert!(text.contains("validated 44 files"), "{text}");
    assert_eq!(text.matches("ok TrialLock").count(), 10, "{text}");
    assert_eq!(text.matches("(exact)").count(), 10, "{text}");

    // Its leaderboard rows, as SkillsBench's AgentBeats board takes them.
    let conn = s.store.connect().unwrap();
    let board = skillscope::report::leaderboard::build(
        &conn,
        &skillscope::analysis::results::Selection::Runs(vec!["examples".into()]),
        None,
        &skillscope::skillsbench::Catalog::shipped(),
    )
    .unwrap();
    let value = serde_json::to_value(&board).unwrap();
    assert_eq!(
        skillscope::report::leaderboard::validate(&value),
        Vec::<String>::new()
    );
    assert_eq!(board.status, "completed");
    let rows: Vec<_> = board.results.iter().flat_map(|s| &s.results).collect();
    assert_eq!(rows.len(), 10);
    assert!(
        rows.iter()
            .all(|r| r.score_eligible && r.task_digest.is_some())
    );
    assert_eq!(
        rows.iter().filter(|r| r.passed).count(),
        rows.iter().filter(|r| rows_pass(&s, &r.trial_id)).count()
    );
}

/// True when the store says trial `name` of the scratch run passed.
fn rows_pass(s: &Scratch, name: &str) -> bool {
    let c = s.store.connect().unwrap();
    let run = skillscope::store::queries::find_run(&c, "examples")
        .unwrap()
        .unwrap();
    skillscope::store::queries::current_trials(&c, run.id)
        .unwrap()
        .iter()
        .any(|t| t.trial_name == name && t.outcome == Some(skillscope::store::Outcome::Pass))
}
