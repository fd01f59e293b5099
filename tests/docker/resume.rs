//! Runs that last days get killed, interrupted, retried and steered: Ctrl-C and resume, the cancel
//! command's rules on the command line, a full disk, leftovers swept by age. (kill -9 and resume,
//! retry and cancel of a running trial are cases every backend runs: `support::lifecycle`.)

use crate::support::common;
use crate::support::process::{
    Skillscope, active, spawn_run, spawn_run_piped, stderr_lines, wait, wait_for, words,
};
use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{
    Scratch, containers_of_run, containers_of_run_described, fixtures, one, require_docker,
};
use skillscope::engine::Engine;
use skillscope::skillsbench::Condition;
use skillscope::store::{CommandKind, Outcome, TrialStatus, queries};
use tokio_util::sync::CancellationToken;

/// After a resumed run: every trial has exactly one latest attempt, done and passed, and every
/// earlier attempt is an interrupted one.
fn assert_each_trial_exactly_once(s: &Scratch, run: &str, expected: usize) {
    let c = s.store.connect().unwrap();
    let r = queries::find_run(&c, run).unwrap().unwrap();
    let current = queries::current_trials(&c, r.id).unwrap();
    assert_eq!(current.len(), expected);
    let mut keys = HashMap::new();
    for t in &current {
        assert_eq!(t.status, TrialStatus::Done, "{t:?}");
        assert_eq!(t.outcome, Some(Outcome::Pass), "{t:?}");
        assert!(keys.insert(t.key(), ()).is_none(), "duplicate {t:?}");
        for a in queries::trial_attempts(&c, r.id, &t.key()).unwrap() {
            if a.id != t.id {
                assert!(
                    a.superseded && a.outcome == Some(Outcome::Interrupted),
                    "{a:?}"
                );
            }
        }
    }
    assert_eq!(r.status, "finished");
}

/// Two removals of one environment at once (a trial's background removal meeting its site's
/// close): the second, answered "removal already in progress", returns only once the container
/// is gone — else a stopping run could exit with its containers still listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removal_that_meets_another_returns_when_the_container_is_gone() {
    use skillscope::runner::docker::base_image::{BUSYBOX_IMAGE, ensure_busybox};
    use skillscope::runner::docker::start_helper;

    require_docker().await;
    let docker = bollard::Docker::connect_with_local_defaults().expect("docker");
    ensure_busybox(&docker).await.expect("base image");
    for round in 0..5 {
        let c = start_helper(
            &docker,
            &uuid::Uuid::new_v4().to_string(),
            BUSYBOX_IMAGE,
            "removal-probe",
            false,
        )
        .await
        .expect("helper");
        let id = c.id().to_string();
        let first = {
            let c = c.clone();
            tokio::spawn(async move { c.remove().await })
        };
        tokio::time::sleep(Duration::from_millis(5 * round)).await;
        c.remove().await;
        let seen = docker.inspect_container(&id, None).await;
        assert!(
            matches!(
                seen,
                Err(bollard::errors::Error::DockerResponseServerError {
                    status_code: 404,
                    ..
                })
            ),
            "round {round}: still there after the second removal returned: {:?}",
            seen.map(|i| i.state.and_then(|s| s.status))
        );
        first.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_cleanly_and_the_same_command_resumes() {
    require_docker().await;
    let s = Scratch::new();
    let args = words("--task slow --conditions no-skills --trials 4 --concurrency 2");
    let mut child = spawn_run(&s, "interrupt", &args);
    wait_for(&s, "interrupt", Duration::from_secs(120), |_, t| {
        active(t) >= 2
    });
    let t0 = Instant::now();
    // SIGINT, as Ctrl-C sends.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    assert_eq!(wait(&mut child, Duration::from_secs(30)), 130);
    assert!(
        t0.elapsed() < Duration::from_secs(15),
        "stopping took {:?}",
        t0.elapsed()
    );
    let left = containers_of_run_described(&s, "interrupt").await;
    assert!(left.is_empty(), "containers left after Ctrl-C: {left:#?}");
    {
        let c = s.store.connect().unwrap();
        let r = queries::find_run(&c, "interrupt").unwrap().unwrap();
        assert_eq!(r.status, "stopped");
        assert_eq!(r.owner_pid, None);
        let rows = queries::current_trials(&c, r.id).unwrap();
        assert!(rows.iter().all(|t| !t.status.is_active()), "{rows:#?}");
    }
    let mut child = spawn_run(&s, "interrupt", &args);
    assert_eq!(wait(&mut child, Duration::from_secs(120)), 0);
    assert_each_trial_exactly_once(&s, "interrupt", 4);
}

/// A second Ctrl-C in headless mode quits at once and says what it left running, as the
/// dashboard does; the same command then resumes and clears what was left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_ctrl_c_headless_says_what_it_left_running() {
    require_docker().await;
    let s = Scratch::new();
    let args = words("--task slow --conditions no-skills --trials 2 --concurrency 2");
    let mut child = spawn_run_piped(&s, "twice", &args);
    wait_for(&s, "twice", Duration::from_secs(120), |_, t| active(t) >= 2);
    let (rx, reader) = stderr_lines(&mut child);
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    // The second one as soon as the first is being handled, while it removes containers.
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("no `stopping` line after Ctrl-C");
        if line.contains("stopping: removing containers") {
            break;
        }
    }
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    assert_eq!(wait(&mut child, Duration::from_secs(30)), 130);
    reader.join().unwrap();
    let said: Vec<String> = rx.try_iter().collect();
    let said = said.join("\n");
    assert!(
        said.contains("quit at once: running trials are left as they are")
            && said.contains("the same command resumes the run"),
        "{said}"
    );
    let mut child = spawn_run(&s, "twice", &args);
    assert_eq!(wait(&mut child, Duration::from_secs(120)), 0);
    assert_each_trial_exactly_once(&s, "twice", 2);
    assert_eq!(
        containers_of_run(&s, "twice").await,
        0,
        "leftover containers"
    );
}

/// Headless into a pipe (`tasks --check | tee`, `run | tee`), a long step is never silent: a
/// `still running` line with the time in front comes at least every 30 s and names the phase.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_step_headless_says_it_still_runs_every_30_seconds() {
    require_docker().await;
    let s = Scratch::new();
    let args = words("--task sleeper --conditions no-skills --trials 1");
    let mut child = spawn_run_piped(&s, "heartbeat", &args);
    let (rx, _reader) = stderr_lines(&mut child);
    let t0 = Instant::now();
    let line = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(90).saturating_sub(t0.elapsed()))
            .expect("no `still running` line within 90 s");
        if line.contains("still running:") {
            break line;
        }
    };
    let (time, rest) = line.split_once("Z ").expect("a time in front");
    assert!(
        chrono::NaiveDateTime::parse_from_str(time, "%Y-%m-%d %H:%M:%S").is_ok(),
        "{line}"
    );
    assert!(
        rest.starts_with("still running: 0/1 trials done · 1 "),
        "{line}"
    );
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    assert_eq!(wait(&mut child, Duration::from_secs(60)), 130);
    assert_eq!(containers_of_run(&s, "heartbeat").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_command_stops_a_running_trial() {
    require_docker().await;
    let s = Scratch::new();
    let req = s.request("cancel", &["sleeper"], vec![Condition::NoSkills], 1);
    let engine = Engine::new(s.store.clone());
    let handle = tokio::spawn(async move {
        engine
            .run(common::prepared(req), CancellationToken::new())
            .await
    });
    let t0 = Instant::now();
    let target = loop {
        let c = s.store.connect().unwrap();
        if let Some(r) = queries::find_run(&c, "cancel").unwrap()
            && let Some(t) = queries::current_trials(&c, r.id)
                .unwrap()
                .into_iter()
                .find(|t| t.status == TrialStatus::Agent)
        {
            break (r.id, t.id);
        }
        assert!(t0.elapsed() < Duration::from_secs(120));
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    queries::insert_command(
        &s.store.connect().unwrap(),
        target.0,
        CommandKind::Cancel,
        target.1,
    )
    .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(30), handle)
        .await
        .expect("cancel took too long")
        .unwrap()
        .unwrap();
    let row = one(&s.trials(out.run.id), "sleeper", "no-skills").clone();
    assert_eq!(row.outcome, Some(Outcome::Cancelled));
    assert!(t0.elapsed() < Duration::from_secs(60));
    assert_eq!(containers_of_run(&s, "cancel").await, 0);
    // Its only trial without a verdict was cancelled: the run finished with it cancelled (not
    // "stopped … retry them"), and resuming it changes nothing until the cancelled trial is
    // retried.
    assert!(out.finished, "{:?}", out.stop);
    assert_eq!(out.cancelled, 1);
    assert_eq!(out.run.status, "finished");
    assert_eq!(
        out.run.stop_reason.as_deref(),
        Some("finished with 1 cancelled")
    );
    let cli = |args: &[&str]| {
        Skillscope::bin()
            .args(args)
            .arg("--db")
            .arg(s.db())
            .output()
    };
    let status = cli(&["status", "cancel"]);
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("finished with 1 cancelled"),
        "{status:?}"
    );
    // The CLI follows the dashboard's rules: what the run does not have is an error (exit 1), a
    // finished trial cannot be cancelled.
    for (args, says) in [
        (
            &[
                "retry",
                "cancel",
                "--task",
                "sleepr",
                "--condition",
                "no-skills",
                "--trial",
                "1",
            ][..],
            "its tasks (closest first): sleeper",
        ),
        (
            &[
                "retry",
                "cancel",
                "--task",
                "sleeper",
                "--condition",
                "curated",
                "--trial",
                "1",
            ],
            "no condition",
        ),
        (
            &[
                "retry",
                "cancel",
                "--task",
                "sleeper",
                "--condition",
                "no-skills",
                "--trial",
                "2",
            ],
            "trials 1 to 1",
        ),
        (
            &[
                "cancel",
                "cancel",
                "--task",
                "sleeper",
                "--condition",
                "no-skills",
                "--trial",
                "1",
            ],
            "already finished",
        ),
        (
            &[
                "cancel",
                "cancel",
                "--task",
                "nope",
                "--condition",
                "no-skills",
                "--trial",
                "1",
            ],
            "no task",
        ),
    ] {
        let o = cli(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let queued = cli(&["retry", "cancel", "--cancelled"]);
    assert!(
        String::from_utf8_lossy(&queued.stdout).contains("queued 1 retry command"),
        "{queued:?}"
    );
    let c = s.store.connect().unwrap();
    assert_eq!(queries::pending_commands(&c, out.run.id).unwrap().len(), 1);
}

/// A full disk is an infrastructure failure, not the trial's: the run stops with an error naming
/// the file, nothing recorded is lost, no trial is counted as failed, and a re-run resumes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_stops_the_run_without_failing_trials() {
    require_docker().await;
    let s = Scratch::new();
    let jobs = s.jobs();
    std::fs::create_dir_all(&jobs).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&jobs)
        .status()
        .map(|st| st.success())
        .unwrap_or(false);
    assert!(
        mounted,
        "this test mounts a 64 KiB tmpfs and needs root (CI runs as root)"
    );
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let guard = Unmount(jobs.clone());
    std::fs::write(jobs.join("filler"), vec![0u8; 56 * 1024]).unwrap();

    let args = words("--task passes --conditions no-skills --trials 3 --concurrency 1");
    let out = Skillscope::bin()
        .args(["run", "--headless", "--tasks"])
        .arg(fixtures())
        .arg("--db")
        .arg(s.db())
        .arg("--jobs-dir")
        .arg(&jobs)
        .args(["--run", "diskfull"])
        .args(&args)
        .env("RUST_BACKTRACE", "0")
        .output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("disk full") && err.contains(jobs.to_str().unwrap()),
        "{err}"
    );
    {
        let c = s.store.connect().unwrap();
        let r = queries::find_run(&c, "diskfull").unwrap().unwrap();
        assert_eq!(r.status, "stopped");
        let rows = queries::current_trials(&c, r.id).unwrap();
        assert_eq!(rows.len(), 3);
        assert!(
            rows.iter()
                .all(|t| t.outcome.is_none() || t.outcome == Some(Outcome::Pass)),
            "{rows:#?}"
        );
    }
    drop(guard);
    let mut child = spawn_run(&s, "diskfull", &args);
    assert_eq!(wait(&mut child, Duration::from_secs(120)), 0);
    assert_each_trial_exactly_once(&s, "diskfull", 3);
}

/// A container a killed process left (created, never started, like a leak check cut off between
/// create and start) is swept by age; a fresh one, which a live process may be using, is spared.
#[tokio::test(flavor = "multi_thread")]
async fn leftover_containers_are_swept_by_age_and_fresh_ones_spared() {
    use skillscope::runner::docker::base_image::{BUSYBOX_IMAGE, ensure_busybox};
    use skillscope::runner::docker::remove_labeled_older_than;
    use skillscope::runner::labels;

    require_docker().await;
    let docker = bollard::Docker::connect_with_defaults().expect("docker");
    ensure_busybox(&docker).await.expect("busybox image");
    // A value of its own, so the sweeps here touch no other test's containers.
    let mark = format!("sweep-test-{}", std::process::id());
    let filter = format!("{}={mark}", labels::HELPER);
    let body = bollard::models::ContainerCreateBody {
        image: Some(BUSYBOX_IMAGE.into()),
        cmd: Some(vec!["true".into()]),
        labels: Some(HashMap::from([
            (labels::MANAGED.to_string(), "1".to_string()),
            (labels::HELPER.to_string(), mark.clone()),
        ])),
        ..Default::default()
    };
    docker
        .create_container(
            None::<bollard::query_parameters::CreateContainerOptions>,
            body,
        )
        .await
        .expect("create");
    let an_hour = Duration::from_secs(3600);
    let spared = remove_labeled_older_than(&docker, &filter, an_hour)
        .await
        .unwrap();
    assert_eq!(spared, 0, "a container made just now is not a leftover");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let one_second = Duration::from_secs(1);
    let swept = remove_labeled_older_than(&docker, &filter, one_second)
        .await
        .unwrap();
    assert_eq!(swept, 1, "the leftover is removed");
    let again = remove_labeled_older_than(&docker, &filter, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(again, 0, "nothing is left");
}
