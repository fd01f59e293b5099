//! Harbor's own pydantic models (harbor 0.25.0: `TrialResult`, `TrialConfig`, `JobResult`) accept
//! every file skillscope writes, for every kind of outcome.

use crate::support::common;
use std::path::Path;
use std::process::Command;

use common::Scratch;
use skillscope::skillsbench::Condition;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn harbor_models_accept_our_trial_and_job_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = Command::new(root.join("scripts/harbor-venv.sh"))
        .output()
        .expect("scripts/harbor-venv.sh");
    assert!(
        venv.status.success(),
        "{}",
        String::from_utf8_lossy(&venv.stderr)
    );
    let python = root.join(String::from_utf8_lossy(&venv.stdout).trim());

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
    let check = Command::new(&python)
        .arg(root.join("tests/harbor/validate.py"))
        .arg(s.jobs())
        .env("PYTHONPATH", root.join("target/harbor-venv/harbor-src"))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(check.status.success(), "{text}");
    // 2 jobs + 12 trials × (result.json + config.json) + 10 trajectories (build errors run no agent)
    assert!(text.contains("validated 36 files"), "{text}");
    assert_eq!(text.matches("ok Trajectory").count(), 10, "{text}");
}
