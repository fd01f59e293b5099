//! PID 1 of skillscope's environments ([`skillscope::runner::docker::OWN_INIT`]) run by the
//! static busybox the environments get, in a pid namespace of its own (`unshare`, root): what
//! its `USR1` handler counts and ends, checked on the real shell rather than on its text.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills the namespace (its PID 1, hence every process in it) when the test ends.
struct Namespace(Child);

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The host pids of the children of host pid `pid`.
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// The command line of host pid `pid`, its arguments apart by spaces.
fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            String::from_utf8_lossy(&b)
                .replace('\0', " ")
                .trim()
                .to_string()
        })
        .unwrap_or_default()
}

/// Polls `f` every 10 ms for at most 10 s.
fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The `(host pid, N)` of PID 1's (host pid `init`) own `sleep 3600 N`.
fn own_sleep(init: u32) -> Option<(u32, u64)> {
    children(init).into_iter().find_map(|p| {
        let line = cmdline(p);
        let n = line.strip_prefix("busybox sleep 3600 ")?;
        Some((p, n.parse().ok()?))
    })
}

#[test]
fn pid_1_counts_the_live_processes_at_its_kill_and_ends_them() {
    // The same script, with the environment's `/skillscope/static/sleep` as the host's busybox.
    let init_script =
        skillscope::runner::docker::OWN_INIT.replace("/skillscope/static/sleep", "busybox sleep");
    assert_ne!(init_script, skillscope::runner::docker::OWN_INIT);
    // Its argument: two live `sleep`s, and a zombie (`true`, whose parent exec'd a sleep and
    // never waits for it).
    let work = "busybox sh -c 'busybox true & exec busybox sleep 100' & exec busybox sleep 100";
    let ns = Namespace(
        Command::new("unshare")
            .args(["--fork", "--pid", "--mount-proc", "--kill-child", "busybox"])
            .args(["sh", "-c", &init_script, "sh", "busybox", "sh", "-c", work])
            .stdin(Stdio::null())
            .spawn()
            .expect("unshare and busybox (scripts/docker-up.sh installs busybox-static)"),
    );
    let init = wait_for("PID 1 of the namespace", || {
        children(ns.0.id()).first().copied()
    });
    // PID 1, its sleep, the two sleeps of the work and the zombie are all there.
    let (first, before) = wait_for("the work's processes", || {
        let (sleep, n) = own_sleep(init)?;
        let work = children(init).into_iter().find(|p| *p != sleep)?;
        let inner = children(work)
            .into_iter()
            .find(|p| cmdline(*p).contains("sleep 100"))?;
        let zombie = children(inner).into_iter().find(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .is_ok_and(|s| s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')))
        });
        zombie.map(|_| (sleep, n))
    });
    assert_eq!(before, 0, "no count before any signal");
    let usr1 = Command::new("kill")
        .args(["-USR1", &init.to_string()])
        .status()
        .expect("kill");
    assert!(usr1.success());
    let (_, counted) = wait_for("PID 1's next sleep", || {
        own_sleep(init).filter(|(p, _)| *p != first)
    });
    // Live at the kill: PID 1, its old sleep and the work's two sleeps — not the zombie.
    assert_eq!(counted, 4, "the live processes PID 1 counted at its kill");
    // Everything but PID 1 and its new sleep is ended.
    wait_for("the work ended", || {
        let left: Vec<u32> = children(init)
            .into_iter()
            .filter(|p| !cmdline(*p).starts_with("busybox sleep 3600 "))
            .collect();
        left.is_empty().then_some(())
    });
}

/// An exec cancelled while what it started stops every new process (as a test's last
/// `kill -STOP -1` may, or a hostile agent's loop) ends at once, and its environment goes: the
/// rest is ended by PID 1, asked from outside — an exec started to end them would have its
/// runtime setup process stopped, and Docker 20.10 then holds the container for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_exec_that_stops_every_new_process_ends_and_its_environment_goes() {
    use skillscope::runner::ExecEnd;
    use skillscope::runner::ExecRequest;
    use skillscope::runner::docker::base_image::{BUSYBOX_IMAGE, ensure_busybox};
    use skillscope::runner::docker::start_helper;

    let docker = bollard::Docker::connect_with_local_defaults().expect("docker");
    ensure_busybox(&docker).await.expect("base image");
    let c = start_helper(
        &docker,
        &uuid::Uuid::new_v4().to_string(),
        BUSYBOX_IMAGE,
        "stopper-probe",
        false,
    )
    .await
    .expect("helper");
    let cancel = tokio_util::sync::CancellationToken::new();
    let exec = {
        let c = c.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            c.exec(ExecRequest::sh("while :; do kill -STOP -1; done", &cancel))
                .await
        })
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    cancel.cancel();
    let ended = tokio::time::timeout(Duration::from_secs(60), exec)
        .await
        .expect("the cancelled exec did not end")
        .unwrap()
        .expect("the exec");
    assert_eq!(ended.end, ExecEnd::Cancelled);
    tokio::time::timeout(Duration::from_secs(60), c.remove())
        .await
        .expect("the environment could not be removed");
}
