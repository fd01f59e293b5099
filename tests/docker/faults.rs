//! A run survives its infrastructure and never turns a fault into a verdict — tried in real
//! processes against real daemons: a private `dockerd` (its own network namespace, data root,
//! exec root, pid file and socket; see `support/private_dockerd.rs`) killed and restarted mid-run,
//! down for good, one of two hosts killed, its disk filling up under the verifier; the database
//! locked by another process for 20 s; the engine killed (stale) or its terminal gone (SIGHUP).

use crate::support::process::{
    Skillscope, active, done, spawn_run, state, stderr_of, wait, wait_for, words,
};
use crate::support::{common, private_dockerd};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Scratch, fixtures, require_docker};
use private_dockerd::PrivateDockerd;
use skillscope::store::{Outcome, TrialRow, TrialStatus, queries};

/// Every trial's latest attempt has a verdict (a pass here), and every earlier attempt was
/// interrupted — never judged — with the fault, when it met one, recorded.
fn assert_one_verdict_each(s: &Scratch, run: &str, expected: usize) -> Vec<TrialRow> {
    let c = s.store.connect().unwrap();
    let r = queries::find_run(&c, run).unwrap().unwrap();
    let current = queries::current_trials(&c, r.id).unwrap();
    assert_eq!(current.len(), expected, "{current:#?}");
    let mut history = Vec::new();
    for t in &current {
        assert_eq!(t.status, TrialStatus::Done, "{t:#?}");
        assert_eq!(
            t.outcome,
            Some(Outcome::Pass),
            "a fault became a verdict: {t:#?}"
        );
        for a in queries::trial_attempts(&c, r.id, &t.key()).unwrap() {
            if a.id != t.id {
                assert!(
                    a.superseded && a.outcome == Some(Outcome::Interrupted),
                    "an earlier attempt has a verdict: {a:#?}"
                );
            }
            history.push(a);
        }
    }
    assert_eq!(r.status, "finished", "{:?}", r.stop_reason);
    history
}

/// Containers (trial containers and helpers) of run `run` on `docker`.
async fn containers_of(docker: &bollard::Docker, run_uid: &str) -> Vec<String> {
    common::containers_labelled(docker, &format!("skillscope.run-uid={run_uid}")).await
}

async fn start_daemon(disk_mb: Option<u32>) -> PrivateDockerd {
    tokio::task::spawn_blocking(move || PrivateDockerd::start_with(disk_mb))
        .await
        .expect("start a private daemon")
}

async fn drop_daemon(d: PrivateDockerd) {
    tokio::task::spawn_blocking(move || drop(d)).await.unwrap();
}

const SLOW_RUN: &str = "--task slow --conditions no-skills,curated --trials 3 --concurrency 2";

/// Daemon killed mid-run and back 10 s later: the attempts it cut off are interrupted and queued
/// again, the run waits, then finishes — every trial with exactly one verdict, none caused by the
/// fault — and no container of the run is left on the daemon.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_killed_and_restarted_mid_run() {
    let mut daemon = start_daemon(None).await;
    let s = Scratch::new();
    let mut args = words(SLOW_RUN);
    let host = daemon.endpoint();
    args.extend(words(&format!("--docker-host {host}")));
    let mut child = spawn_run(&s, "restart", &args);
    wait_for(&s, "restart", Duration::from_secs(180), |_, t| {
        t.iter().any(|t| t.status == TrialStatus::Agent)
    });
    daemon = tokio::task::spawn_blocking(move || {
        daemon.kill();
        std::thread::sleep(Duration::from_secs(10));
        daemon.restart();
        daemon
    })
    .await
    .unwrap();
    let code = wait(&mut child, Duration::from_secs(300));
    assert_eq!(code, 0, "{}", stderr_of(&s, "restart"));
    let history = assert_one_verdict_each(&s, "restart", 6);
    let faulted: Vec<&TrialRow> = history.iter().filter(|a| a.fault.is_some()).collect();
    assert!(
        !faulted.is_empty(),
        "the kill interrupted no attempt: {history:#?}"
    );
    let (run, _) = state(&s, "restart").unwrap();
    assert!(containers_of(&daemon.docker(), &run.uid).await.is_empty());
    let events = events(&s, run.id);
    assert!(
        events.iter().any(|e| e.contains("is down")) && events.iter().any(|e| e.contains("is up")),
        "{events:#?}"
    );
    drop_daemon(daemon).await;
}

fn events(s: &Scratch, run_id: i64) -> Vec<String> {
    let c = s.store.connect().unwrap();
    queries::recent_events(&c, run_id, 1000)
        .unwrap()
        .into_iter()
        .map(|(_, level, m)| format!("{level} {m}"))
        .collect()
}

/// Daemon down for good: the run waits for Docker (shown by `status`), stops after
/// `--docker-wait` with exit code 3 and no verdict from the fault; once the daemon is back the
/// same command completes the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_down_for_good_waits_then_stops_and_resumes() {
    let mut daemon = start_daemon(None).await;
    let s = Scratch::new();
    let host = daemon.endpoint();
    let mut args = words(SLOW_RUN);
    args.extend(words(&format!("--docker-host {host} --docker-wait 8")));
    let mut child = spawn_run(&s, "down", &args);
    wait_for(&s, "down", Duration::from_secs(180), |_, t| active(t) > 0);
    let t0 = Instant::now();
    daemon = tokio::task::spawn_blocking(move || {
        daemon.kill();
        daemon
    })
    .await
    .unwrap();
    wait_for(&s, "down", Duration::from_secs(60), |r, _| {
        r.waiting_since.is_some()
    });
    let status = Skillscope::bin()
        .args(["status", "down", "--db"])
        .arg(s.db())
        .output();
    let status = String::from_utf8_lossy(&status.stdout).into_owned();
    assert!(status.contains("waiting for Docker since"), "{status}");
    let code = wait(&mut child, Duration::from_secs(120));
    assert_eq!(code, 3, "{}", stderr_of(&s, "down"));
    assert!(t0.elapsed() >= Duration::from_secs(8));
    let (run, trials) = state(&s, "down").unwrap();
    assert_eq!(run.status, "stopped");
    let reason = run.stop_reason.unwrap_or_default();
    assert!(reason.contains("no Docker host answered"), "{reason}");
    for t in &trials {
        assert!(
            t.status == TrialStatus::Queued || t.outcome == Some(Outcome::Pass),
            "a fault became a verdict: {t:#?}"
        );
    }
    assert!(trials.iter().any(|t| t.status == TrialStatus::Queued));
    // Back up: the same command finishes the run.
    daemon = tokio::task::spawn_blocking(move || {
        daemon.restart();
        daemon
    })
    .await
    .unwrap();
    let mut child = spawn_run(&s, "down", &args);
    assert_eq!(
        wait(&mut child, Duration::from_secs(300)),
        0,
        "{}",
        stderr_of(&s, "down")
    );
    assert_one_verdict_each(&s, "down", 6);
    let (run, _) = state(&s, "down").unwrap();
    assert!(containers_of(&daemon.docker(), &run.uid).await.is_empty());
    drop_daemon(daemon).await;
}

/// Two hosts, one killed after the first trials: a run starts while both are up, the killed one's
/// trials are queued again for the other, and the run finishes there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_one_killed_the_trials_finish_on_the_other() {
    let a = start_daemon(None).await;
    let mut b = start_daemon(None).await;
    let s = Scratch::new();
    let (ha, hb) = (a.endpoint(), b.endpoint());
    let args = words(&format!(
        "--task slow --task passes --conditions no-skills,curated --trials 4 --concurrency 2 --docker-host {ha} --docker-host {hb}"
    ));
    let mut child = spawn_run(&s, "twohosts", &args);
    wait_for(&s, "twohosts", Duration::from_secs(180), |_, t| {
        t.iter()
            .any(|t| t.status.is_active() && t.host.as_deref() == Some(hb.as_str()))
            && done(t) >= 2
    });
    let killed_at = skillscope::store::now_rfc3339();
    b = tokio::task::spawn_blocking(move || {
        b.kill();
        b
    })
    .await
    .unwrap();
    assert_eq!(
        wait(&mut child, Duration::from_secs(300)),
        0,
        "{}",
        stderr_of(&s, "twohosts")
    );
    let history = assert_one_verdict_each(&s, "twohosts", 16);
    // After the kill, every verdict came from the host that stayed up.
    for a in history.iter().filter(|a| a.outcome == Some(Outcome::Pass)) {
        if a.started_at
            .as_deref()
            .is_some_and(|t| t > killed_at.as_str())
        {
            assert_eq!(a.host.as_deref(), Some(ha.as_str()), "{a:#?}");
        }
    }
    let (run, _) = state(&s, "twohosts").unwrap();
    assert!(containers_of(&a.docker(), &run.uid).await.is_empty());
    drop_daemon(a).await;
    drop_daemon(b).await;
}

/// A run starts with one of its two hosts down: a warning, not a refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_starts_with_a_host_down() {
    let a = start_daemon(None).await;
    let s = Scratch::new();
    let ha = a.endpoint();
    let gone = format!("unix://{}/no-daemon.sock", s.dir.path().display());
    let args = words(&format!(
        "--task passes --conditions no-skills --trials 2 --docker-host {ha} --docker-host {gone}"
    ));
    let mut child = spawn_run(&s, "onedown", &args);
    assert_eq!(
        wait(&mut child, Duration::from_secs(180)),
        0,
        "{}",
        stderr_of(&s, "onedown")
    );
    assert_one_verdict_each(&s, "onedown", 2);
    let err = stderr_of(&s, "onedown");
    assert!(err.contains("is down"), "{err}");
    drop_daemon(a).await;
}

/// The disk fills inside the container while the verifier runs, so its reward file stays empty:
/// an infrastructure fault — the attempt is interrupted and queued again, and the next attempt
/// gets its verdict. (A private daemon whose data root is a small tmpfs; logs are copied out
/// through the API, so the reward is written inside the container.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_full_inside_the_container_is_requeued() {
    let daemon = start_daemon(Some(96)).await;
    let s = Scratch::new();
    let marker = s.dir.path().join("marker");
    std::fs::create_dir_all(&marker).unwrap();
    let host = daemon.endpoint();
    let mount = format!("{}:/marker", marker.display());
    let args = words(&format!(
        "--task fills-disk --conditions no-skills --trials 1 --copy-logs --docker-host {host} --mount {mount}"
    ));
    let mut child = spawn_run(&s, "diskfull", &args);
    assert_eq!(
        wait(&mut child, Duration::from_secs(300)),
        0,
        "{}",
        stderr_of(&s, "diskfull")
    );
    assert!(
        marker.join("filled").exists(),
        "the fixture did not fill the disk"
    );
    let history = assert_one_verdict_each(&s, "diskfull", 1);
    assert_eq!(
        history[0].fault.as_deref(),
        Some("disk-full"),
        "{history:#?}"
    );
    assert!(
        history[0]
            .error
            .as_deref()
            .unwrap()
            .contains("disk is full"),
        "{history:#?}"
    );
    // Until the filled container is gone its space stays taken: a next attempt may meet the full
    // disk when its container is created (the host then drains for a while) — a fault too.
    for a in &history[..history.len() - 1] {
        assert_eq!(a.fault.as_deref(), Some("disk-full"), "{a:#?}");
    }
    drop_daemon(daemon).await;
}

/// Another process holds the database exclusively for 20 s (a backup, a `sqlite3` shell) while the
/// run writes: the run waits it out and finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_20_second_database_lock_is_survived() {
    require_docker().await;
    let s = Scratch::new();
    let args = words("--task slow --task passes --conditions no-skills --trials 3 --concurrency 2");
    let mut child = spawn_run(&s, "locked", &args);
    wait_for(&s, "locked", Duration::from_secs(180), |_, t| active(t) > 0);
    let db = s.db();
    let held = tokio::task::spawn_blocking(move || {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.busy_timeout(Duration::from_secs(30)).unwrap();
        c.execute_batch("BEGIN EXCLUSIVE").unwrap();
        std::thread::sleep(Duration::from_secs(20));
        c.execute_batch("COMMIT").unwrap();
    });
    held.await.unwrap();
    assert_eq!(
        wait(&mut child, Duration::from_secs(300)),
        0,
        "{}",
        stderr_of(&s, "locked")
    );
    assert_one_verdict_each(&s, "locked", 6);
}

/// An engine killed with SIGKILL leaves its run marked running: `status` calls it stale (engine
/// gone since …) with the command that resumes it, and a retry queued to it says it waits for
/// that command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_engine_is_shown_stale() {
    require_docker().await;
    let s = Scratch::new();
    let args = words("--task slow --task passes --conditions no-skills --trials 3 --concurrency 1");
    let mut child = spawn_run(&s, "stale", &args);
    wait_for(&s, "stale", Duration::from_secs(180), |_, t| done(t) >= 1);
    child.kill().unwrap();
    child.wait().unwrap();
    let out = Skillscope::bin()
        .args(["status", "stale", "--db"])
        .arg(s.db())
        .output();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("stale — engine gone since"), "{text}");
    assert!(
        text.contains("--run stale"),
        "the resume command is named: {text}"
    );
    let json = Skillscope::bin()
        .args(["status", "stale", "--json", "--db"])
        .arg(s.db())
        .output();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["runs"][0]["liveness"]["state"], "stale", "{v:#}");
    // A trial that passed is retried only with --force (the dashboard's rule).
    let (_, before) = state(&s, "stale").unwrap();
    let finished = before
        .iter()
        .find(|t| t.status == TrialStatus::Done)
        .expect("a finished trial")
        .clone();
    let index = finished.trial_index.to_string();
    let retry_args = [
        "retry",
        "stale",
        "--task",
        &finished.task_id,
        "--condition",
        "no-skills",
        "--trial",
        &index,
        "--db",
    ];
    let refused = Skillscope::bin().args(retry_args).arg(s.db()).output();
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--force"),
        "{refused:?}"
    );
    // Another process holds the database for 12 s (past SQLite's 10 s): the retry waits it
    // out, says so, and is queued.
    let db = s.db();
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let held = std::thread::spawn(move || {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch("BEGIN EXCLUSIVE").unwrap();
        locked_tx.send(()).unwrap();
        std::thread::sleep(Duration::from_secs(12));
        c.execute_batch("COMMIT").unwrap();
    });
    locked_rx.recv().unwrap();
    let retry = Skillscope::bin()
        .args(retry_args)
        .arg(s.db())
        .arg("--force")
        .output();
    held.join().unwrap();
    let text = String::from_utf8_lossy(&retry.stdout).into_owned();
    assert!(
        text.contains("has no live engine") && text.contains("skillscope"),
        "{text} {}",
        String::from_utf8_lossy(&retry.stderr)
    );
    assert!(
        String::from_utf8_lossy(&retry.stderr).contains("locked by another process; waiting"),
        "{retry:?}"
    );
    // The same command resumes it: the left-over attempt is re-queued and the retry applied.
    let mut child = spawn_run(&s, "stale", &args);
    assert_eq!(
        wait(&mut child, Duration::from_secs(300)),
        0,
        "{}",
        stderr_of(&s, "stale")
    );
    let (run, trials) = state(&s, "stale").unwrap();
    assert_eq!(run.status, "finished");
    assert!(trials.iter().all(|t| t.outcome == Some(Outcome::Pass)));
    assert_eq!(common::containers_of_run(&s, "stale").await, 0);
}

/// `skillscope stop` from another shell stops a running engine cleanly: exit code 130, running
/// trials re-queued, no containers left, and the same command resumes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_from_another_shell_stops_cleanly() {
    require_docker().await;
    let s = Scratch::new();
    let args = words("--task sleeper --conditions no-skills --trials 2");
    let mut child = spawn_run(&s, "stopme", &args);
    wait_for(&s, "stopme", Duration::from_secs(180), |_, t| {
        t.iter().any(|t| t.status == TrialStatus::Agent)
    });
    let out = Skillscope::bin()
        .args(["stop", "stopme", "--db"])
        .arg(s.db())
        .output();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success() && text.contains("stopped"), "{text}");
    assert_eq!(wait(&mut child, Duration::from_secs(60)), 130);
    let (run, trials) = state(&s, "stopme").unwrap();
    assert_eq!(run.status, "stopped");
    assert_eq!(run.stop_reason.as_deref(), Some("stopped by the operator"));
    assert!(
        trials.iter().all(|t| t.status == TrialStatus::Queued),
        "{trials:#?}"
    );
    assert_eq!(common::containers_of_run(&s, "stopme").await, 0);
}

/// A task id with non-ASCII letters runs to a verdict (its container and image get valid Docker
/// names; the id stays as written in the store and the trial folders).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unicode_task_id_runs_to_a_verdict() {
    let s = Scratch::new();
    let out = s
        .run(s.request(
            "unicode",
            &["unicodé-tâsk"],
            vec![skillscope::skillsbench::Condition::NoSkills],
            1,
        ))
        .await;
    assert!(out.finished, "{:?}", out.stop);
    let t = common::one(&s.trials(out.run.id), "unicodé-tâsk", "no-skills").clone();
    assert_eq!(t.outcome, Some(Outcome::Pass), "{t:#?}");
    assert!(
        t.trial_name.starts_with("unicodé-tâsk__"),
        "{}",
        t.trial_name
    );
    assert!(Path::new(t.trial_dir.as_deref().unwrap()).is_dir());
}

/// `[verifier] timeout_sec = 1e308`: a clear error naming the file, table and key; the task is
/// recorded as unrunnable, nothing panics, and the other tasks run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_timeout_is_a_clear_error_not_a_panic() {
    let s = Scratch::new();
    let out = s
        .run(s.request(
            "huge",
            &["huge-timeout", "passes"],
            vec![skillscope::skillsbench::Condition::NoSkills],
            1,
        ))
        .await;
    let rows = s.trials(out.run.id);
    let t = common::one(&rows, "huge-timeout", "no-skills");
    assert_eq!(t.outcome, Some(Outcome::BuildError));
    let e = t.error.as_deref().unwrap();
    assert!(
        e.contains("task.toml") && e.contains("[verifier] timeout_sec") && e.contains("7 days"),
        "{e}"
    );
    assert_eq!(
        common::one(&rows, "passes", "no-skills").outcome,
        Some(Outcome::Pass)
    );
    let tasks = Skillscope::bin()
        .args(["tasks", "--tasks"])
        .arg(fixtures())
        .output();
    let text = String::from_utf8_lossy(&tasks.stdout).into_owned()
        + &String::from_utf8_lossy(&tasks.stderr);
    assert!(text.contains("[verifier] timeout_sec"), "{text}");
    assert!(!text.contains("panicked"), "{text}");
}

/// SIGHUP under the dashboard (the SSH session drops: tmux kills the window, its terminal goes
/// away): the dashboard closes, the run goes on headless into the log beside the database and
/// finishes, and `watch` from another terminal reattaches to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_under_the_dashboard_goes_headless_and_watch_reattaches() {
    require_docker().await;
    let s = Scratch::new();
    let session = format!("ss-hup-{}", std::process::id());
    let cmd = format!(
        "{} run --tasks {} --task slow --conditions no-skills --trials 4 --concurrency 1 --db {} --jobs-dir {} --run hup",
        env!("CARGO_BIN_EXE_skillscope"),
        fixtures().display(),
        s.db().display(),
        s.jobs().display()
    );
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .args(args)
            .output()
            .expect("tmux (scripts/docker-up.sh installs it)")
    };
    let started = tmux(&[
        "new-session",
        "-d",
        "-s",
        &session,
        "-x",
        "80",
        "-y",
        "24",
        &cmd,
    ]);
    assert!(started.status.success(), "{started:?}");
    wait_for(&s, "hup", Duration::from_secs(180), |_, t| {
        t.iter().any(|t| t.status.is_active())
    });
    let (run, _) = state(&s, "hup").unwrap();
    let pid = run.owner_pid.expect("owner pid");
    // The terminal goes away: tmux closes the pty and sends SIGHUP.
    tmux(&["kill-session", "-t", &session]);
    // Wait on the event — the run saying in its log that it went on headless — not on the clock:
    // under load the SIGHUP and the switch can take seconds.
    let log = s.dir.path().join("hup.log");
    let t0 = Instant::now();
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("goes on headless")
    {
        assert!(
            skillscope::store::owner::process_alive(pid),
            "the run died with its terminal"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "the run never said it went on headless ({})",
            log.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        skillscope::store::owner::process_alive(pid),
        "the run died with its terminal"
    );
    // Another terminal reattaches.
    let watch = format!("{}-watch", session);
    let wcmd = format!(
        "{} watch --db {} hup",
        env!("CARGO_BIN_EXE_skillscope"),
        s.db().display()
    );
    tmux(&[
        "new-session",
        "-d",
        "-s",
        &watch,
        "-x",
        "120",
        "-y",
        "40",
        &wcmd,
    ]);
    let t0 = Instant::now();
    let screen = loop {
        let cap = tmux(&["capture-pane", "-p", "-t", &watch]);
        let text = String::from_utf8_lossy(&cap.stdout).into_owned();
        if text.contains("hup") && text.contains("heartbeat") {
            break text;
        }
        // The event is the screen itself; the bound only ends a hung test.
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "watch shows:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(screen.contains(&format!("engine pid {pid}")), "{screen}");
    wait_for(&s, "hup", Duration::from_secs(300), |r, _| {
        r.status != "running"
    });
    tmux(&["kill-session", "-t", &watch]);
    let (run, _) = state(&s, "hup").unwrap();
    assert_eq!(run.status, "finished", "{:?}", run.stop_reason);
    // The store says finished before the process has printed its table into the log: wait for
    // the table (the bound only ends a hung test).
    let t0 = Instant::now();
    let text = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("run hup — finished") || t0.elapsed() > Duration::from_secs(60) {
            break text;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        text.contains("goes on headless"),
        "{}: {text}",
        log.display()
    );
    assert!(text.contains("run hup — finished"), "{text}");
}

/// The fault classification over the real error values bollard returns from real daemons: a
/// socket with no daemon, a container that does not exist, an exec in a stopped container, a build
/// step that fails (the task's error, not a fault), and an exec stream cut by the daemon's death.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_docker_errors_are_classified() {
    use skillscope::runner::docker::base_image::{BUSYBOX_IMAGE, ensure_busybox};
    use skillscope::runner::docker::{fault_of, start_helper};
    use skillscope::runner::{ExecRequest, Fault, RunnerError};

    let mut daemon = start_daemon(None).await;
    let docker = daemon.docker();
    ensure_busybox(&docker).await.unwrap();

    // No socket at all, and a socket no daemon listens on any more (a killed daemon's).
    let s = Scratch::new();
    let e = bollard::Docker::connect_with_unix(
        &format!("unix://{}/none.sock", s.dir.path().display()),
        5,
        bollard::API_DEFAULT_VERSION,
    )
    .unwrap_err();
    assert_eq!(fault_of(&e), Fault::DaemonUnreachable, "{e:?}");
    let dead = s.dir.path().join("dead.sock");
    drop(std::os::unix::net::UnixListener::bind(&dead).unwrap());
    let nobody = bollard::Docker::connect_with_unix(
        &format!("unix://{}", dead.display()),
        5,
        bollard::API_DEFAULT_VERSION,
    )
    .unwrap();
    let e = nobody.ping().await.unwrap_err();
    assert_eq!(fault_of(&e), Fault::DaemonUnreachable, "{e:?}");

    // A container that does not exist (what a restarted daemon answers about a removed one).
    let e = docker
        .inspect_container("no-such-container-ss", None)
        .await
        .unwrap_err();
    assert_eq!(fault_of(&e), Fault::ContainerGone, "{e:?}");

    // An exec in a container that stopped (a daemon restart stops every container).
    let c = start_helper(
        &docker,
        &uuid::Uuid::new_v4().to_string(),
        BUSYBOX_IMAGE,
        "fault-probe",
        false,
    )
    .await
    .unwrap();
    docker
        .stop_container(
            c.id(),
            None::<bollard::query_parameters::StopContainerOptions>,
        )
        .await
        .unwrap();
    let never = tokio_util::sync::CancellationToken::new();
    match c.exec(ExecRequest::sh("true", &never)).await {
        Err(RunnerError::Backend { fault, message, .. }) => {
            assert_eq!(fault, Fault::ContainerGone, "{message}")
        }
        other => panic!("exec in a stopped container: {other:?}"),
    }
    c.remove().await;

    // A build step that fails is the task's own error: no fault.
    let mut tar = tar::Builder::new(Vec::new());
    let df = b"FROM skillscope/busybox:1\nRUN echo failing on purpose && false\n";
    let mut h = tar::Header::new_gnu();
    h.set_size(df.len() as u64);
    h.set_mode(0o644);
    h.set_cksum();
    tar.append_data(&mut h, "Dockerfile", &df[..]).unwrap();
    let body = tar.into_inner().unwrap();
    let mut stream = docker.build_image(
        bollard::query_parameters::BuildImageOptions {
            t: Some("ss-fault-probe:1".into()),
            rm: true,
            ..Default::default()
        },
        None,
        Some(bollard::body_full(body.into())),
    );
    let mut build_error = None;
    use futures_util::StreamExt;
    while let Some(item) = stream.next().await {
        match item {
            Err(e) => {
                build_error = Some(e);
                break;
            }
            Ok(info) => {
                if let Some(m) = info.error_detail.and_then(|d| d.message) {
                    assert_eq!(Fault::of_message(&m), None, "{m}");
                    build_error = None;
                    break;
                }
            }
        }
    }
    if let Some(bollard::errors::Error::DockerStreamError { error }) = &build_error {
        assert_eq!(Fault::of_message(error), None, "{error}");
    }

    // The daemon dies under a running exec: its stream ends, and the end is not taken for an exit.
    let c = start_helper(
        &docker,
        &uuid::Uuid::new_v4().to_string(),
        BUSYBOX_IMAGE,
        "fault-probe",
        false,
    )
    .await
    .unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    let exec = {
        let c = c.clone();
        tokio::spawn(async move {
            let never = tokio_util::sync::CancellationToken::new();
            c.exec(ExecRequest::sh("sleep 60", &never)).await
        })
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    daemon = tokio::task::spawn_blocking(move || {
        daemon.kill();
        daemon
    })
    .await
    .unwrap();
    let r = tokio::time::timeout(Duration::from_secs(60), exec)
        .await
        .expect("the exec did not notice the daemon's death")
        .unwrap();
    match r {
        Err(RunnerError::Backend { fault, message, .. }) => assert!(
            matches!(
                fault,
                Fault::ConnectionLost | Fault::DaemonUnreachable | Fault::ContainerGone
            ),
            "{fault:?}: {message}"
        ),
        other => panic!("an exec cut off by the daemon's death ended as {other:?}"),
    }
    drop(cancel);
    drop_daemon(daemon).await;
}

/// A private daemon killed (SIGKILL: its containerd and shims live on) and then dropped leaves
/// no process of its containers behind, also one on a network of its own (outside the daemon's
/// namespace, which the cleanup's first sweep covers): skillscope's PID 1 and its `sleep` are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_private_daemon_leaves_no_container_process() {
    use skillscope::runner::docker::base_image::{BUSYBOX_IMAGE, ensure_busybox};
    use skillscope::runner::docker::start_helper;

    let mut daemon = start_daemon(None).await;
    let docker = daemon.docker();
    ensure_busybox(&docker).await.unwrap();
    let c = start_helper(
        &docker,
        &daemon.endpoint(),
        BUSYBOX_IMAGE,
        "leak-probe",
        true,
    )
    .await
    .unwrap();
    let ids = std::collections::HashSet::from([c.id().to_string()]);
    assert!(
        !PrivateDockerd::container_processes(&ids).is_empty(),
        "the probe's processes are not found by their cgroup"
    );
    daemon = tokio::task::spawn_blocking(move || {
        daemon.kill();
        daemon
    })
    .await
    .unwrap();
    drop_daemon(daemon).await;
    let left = PrivateDockerd::container_processes(&ids);
    assert!(left.is_empty(), "processes of the probe left: {left:?}");
}

/// Slots follow the tasks' own limits: on a daemon whose CPUs are known, tasks asking for one CPU
/// each never run more at once than it has, however high `--concurrency` is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slots_follow_the_tasks_cpus_on_a_known_daemon() {
    require_docker().await;
    let ncpu = bollard::Docker::connect_with_defaults()
        .unwrap()
        .info()
        .await
        .unwrap()
        .ncpu
        .unwrap() as usize;
    let s = Scratch::new();
    let args = words("--task slow --conditions no-skills --trials 6 --concurrency 16");
    let mut child = spawn_run(&s, "slots", &args);
    let mut most = 0;
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if let Some((_, t)) = state(&s, "slots") {
            most = most.max(t.iter().filter(|t| t.status.is_active()).count());
        }
        assert!(
            t0.elapsed() < Duration::from_secs(300),
            "the run did not end"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        wait(&mut child, Duration::from_secs(5)),
        0,
        "{}",
        stderr_of(&s, "slots")
    );
    assert!(
        most >= 1 && most <= ncpu,
        "{most} trials of 1 CPU at once on {ncpu} CPUs"
    );
    assert_one_verdict_each(&s, "slots", 6);
}
