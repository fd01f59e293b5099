//! Every trial outcome, produced by real containers from the fixture tasks, recorded in the store
//! and in Harbor-shaped trial folders.

use crate::support::common;
use common::{Scratch, containers_of_run, one};
use skillscope::analysis::metrics::method_d;
use skillscope::harbor::result::{JobResult, TrialResult};
use skillscope::skillsbench::Condition;
use skillscope::store::{Outcome, TrialStatus};

const ALL: &[&str] = &[
    "agent-timeout",
    "build-error",
    "fails",
    "hostile-logs",
    "malformed-toml",
    "missing-dockerfile",
    "no-reward",
    "partial-reward",
    "passes",
    "verifier-timeout",
];

fn secs(a: &Option<String>, b: &Option<String>) -> f64 {
    let a = chrono::DateTime::parse_from_rfc3339(a.as_deref().unwrap()).unwrap();
    let b = chrono::DateTime::parse_from_rfc3339(b.as_deref().unwrap()).unwrap();
    (b - a).num_milliseconds() as f64 / 1000.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_outcome_is_recorded_and_none_crashes_the_run() {
    let s = Scratch::new();
    let out = s
        .run(s.request("outcomes", ALL, vec![Condition::NoSkills], 1))
        .await;
    assert!(out.finished);
    let rows = s.trials(out.run.id);
    assert_eq!(rows.len(), ALL.len());
    assert!(rows.iter().all(|r| r.status == TrialStatus::Done));
    let c = "no-skills";

    let r = one(&rows, "passes", c);
    assert_eq!((r.outcome, r.reward), (Some(Outcome::Pass), Some(1.0)));
    assert_eq!(r.agent_exit_code, Some(0));
    // The oracle leaves an honest ATIF trajectory: the instruction and the solve.sh call.
    assert_eq!((r.n_steps, r.n_tool_calls), (Some(2), Some(1)));
    let traj = skillscope::harbor::atif::Trajectory::read(std::path::Path::new(
        r.trajectory_path.as_ref().unwrap(),
    ))
    .unwrap();
    assert_eq!(
        traj.steps[1].calls()[0].command(),
        Some("/solution/solve.sh")
    );
    assert!(traj.steps[1].results()[0].text().ends_with("Exit Code: 0"));
    assert_eq!(
        r.n_input_tokens, None,
        "no model was called: tokens unknown, not zero"
    );

    let r = one(&rows, "fails", c);
    assert_eq!((r.outcome, r.reward), (Some(Outcome::Fail), Some(0.0)));

    // The agent is stopped at its 2 s budget; the verifier still runs (Harbor's order).
    let r = one(&rows, "agent-timeout", c);
    assert_eq!(r.outcome, Some(Outcome::AgentTimeout));
    assert_eq!(r.reward, Some(0.0));
    let agent_secs = secs(&r.agent_started_at, &r.agent_finished_at);
    assert!((1.5..15.0).contains(&agent_secs), "agent ran {agent_secs}s");
    assert!(r.verifier_finished_at.is_some());

    let r = one(&rows, "verifier-timeout", c);
    assert_eq!(r.outcome, Some(Outcome::VerifierTimeout));
    assert_eq!(r.reward, None);
    assert!(secs(&r.verifier_started_at, &r.verifier_finished_at) < 15.0);

    let r = one(&rows, "build-error", c);
    assert_eq!(r.outcome, Some(Outcome::BuildError));
    assert!(
        r.error.as_deref().unwrap().contains("fails on purpose"),
        "{:?}",
        r.error
    );

    let r = one(&rows, "malformed-toml", c);
    assert_eq!(r.outcome, Some(Outcome::BuildError));
    let e = r.error.as_deref().unwrap();
    assert!(e.contains("task.toml") && e.contains("timeout_sec"), "{e}");

    let r = one(&rows, "missing-dockerfile", c);
    assert_eq!(r.outcome, Some(Outcome::BuildError));
    assert!(r.error.as_deref().unwrap().contains("Dockerfile"));

    let r = one(&rows, "no-reward", c);
    assert_eq!((r.outcome, r.reward), (Some(Outcome::NoReward), None));

    // reward.json: the `reward` key is the scalar; every key is kept.
    let r = one(&rows, "partial-reward", c);
    assert_eq!((r.outcome, r.reward), (Some(Outcome::Fail), Some(0.5)));
    assert_eq!(r.rewards.as_ref().unwrap()["style"], 1.0);

    // A reward file that is a symlink to a host file is refused, never read.
    let r = one(&rows, "hostile-logs", c);
    assert_eq!(r.outcome, Some(Outcome::NoReward));

    // Method D over the fixed denominator: 1 (passes) + 0.5 (partial) out of 10 tasks.
    let ids: Vec<String> = ALL.iter().map(|s| s.to_string()).collect();
    assert!((method_d(&ids, 1, c, &rows) - 0.15).abs() < 1e-9);

    // Harbor files: every trial has config.json and a result.json that our model reads back,
    // with Harbor's exception names.
    for r in &rows {
        let dir = std::path::PathBuf::from(r.trial_dir.as_ref().unwrap());
        assert!(dir.join("config.json").is_file(), "{}", dir.display());
        let res: TrialResult =
            serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap())
                .unwrap();
        assert_eq!(res.trial_name, r.trial_name);
        assert_eq!(res.task_name, r.task_id);
        let exc = res
            .exception_info
            .as_ref()
            .map(|e| e.exception_type.as_str());
        assert_eq!(
            exc,
            r.outcome.unwrap().harbor_exception_type(),
            "{}",
            r.task_id
        );
        if let Some(reward) = r.reward {
            assert_eq!(
                res.verifier_result.unwrap().rewards.unwrap()["reward"],
                reward
            );
        }
    }
    let passes = one(&rows, "passes", c);
    let dir = std::path::PathBuf::from(passes.trial_dir.as_ref().unwrap());
    assert_eq!(
        std::fs::read_to_string(dir.join("verifier/reward.txt"))
            .unwrap()
            .trim(),
        "1"
    );
    assert!(
        std::fs::read_to_string(dir.join("verifier/test-stdout.txt"))
            .unwrap()
            .contains("PASS answer")
    );
    assert!(dir.join("agent/oracle.txt").is_file());
    let job: JobResult = serde_json::from_str(
        &std::fs::read_to_string(dir.parent().unwrap().join("result.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(job.n_total_trials, ALL.len() as u64);
    assert_eq!(job.stats.n_trials, ALL.len() as u64);

    assert_eq!(
        containers_of_run(&s, "outcomes").await,
        0,
        "containers left behind"
    );
}

/// The path remote Docker hosts take: /logs copied out through the API instead of bind mounts.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn copying_logs_through_the_api_gives_the_same_outcomes() {
    let s = Scratch::new();
    let mut req = s.request(
        "copy-logs",
        &[
            "passes",
            "agent-timeout",
            "no-reward",
            "hostile-logs",
            "partial-reward",
        ],
        vec![Condition::NoSkills],
        1,
    );
    req.settings.copy_logs = true;
    let out = s.run(req).await;
    let rows = s.trials(out.run.id);
    let c = "no-skills";
    assert_eq!(one(&rows, "passes", c).outcome, Some(Outcome::Pass));
    assert_eq!(
        one(&rows, "agent-timeout", c).outcome,
        Some(Outcome::AgentTimeout)
    );
    assert_eq!(one(&rows, "no-reward", c).outcome, Some(Outcome::NoReward));
    assert_eq!(
        one(&rows, "hostile-logs", c).outcome,
        Some(Outcome::NoReward)
    );
    assert_eq!(one(&rows, "partial-reward", c).reward, Some(0.5));
    let dir = std::path::PathBuf::from(one(&rows, "passes", c).trial_dir.clone().unwrap());
    assert_eq!(
        std::fs::read_to_string(dir.join("verifier/reward.txt"))
            .unwrap()
            .trim(),
        "1"
    );
    // Symlinks from the container are not recreated on the host.
    let hostile =
        std::path::PathBuf::from(one(&rows, "hostile-logs", c).trial_dir.clone().unwrap());
    assert!(std::fs::symlink_metadata(hostile.join("agent/stolen.txt")).is_err());
}
