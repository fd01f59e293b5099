//! The Kubernetes API server itself killed (SIGKILL) in the middle of a trial and started again
//! (issue 46): the agent's exec stream dies with it, the attempt is a runner fault without a
//! verdict, it is retried once the server answers again and the retry passes, and nothing of the
//! run is left on the cluster.
//!
//! A test binary of its own: cargo runs test binaries one after another, so no other test's
//! calls meet the dead server (the tests in `tests/kubernetes/` share one cluster and run in
//! parallel). The server is the one `scripts/k8s-up.sh` started: its pid file sits beside the
//! kubeconfig (`<state>/pids/kube-apiserver.pid`); it is started again with the same command
//! line and environment, also when the test fails.

#[allow(dead_code, unused_imports)]
#[path = "../support/mod.rs"]
mod support;

#[allow(dead_code)]
#[path = "../kubernetes/harness.rs"]
mod harness;

#[allow(dead_code)]
#[path = "../kubernetes/run_support.rs"]
mod run_support;

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use run_support::{
    agent_at_work, assert_faults_without_verdict, attempts, finished, request, spawn_run, task,
};
use support::common::Scratch;
use support::lifecycle::Target;

/// The API server `scripts/k8s-up.sh` started, as it was started: to kill it and start it again.
struct ApiServer {
    pid_file: PathBuf,
    log: PathBuf,
    argv: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    /// Killed and not started again yet.
    down: bool,
}

impl ApiServer {
    /// The running server of the environment's cluster.
    ///
    /// # Panics
    /// When the cluster is not one `scripts/k8s-up.sh` started on this machine.
    fn of_local_cluster() -> ApiServer {
        let (kubeconfig, _) = harness::env();
        let state = kubeconfig
            .parent()
            .expect("the kubeconfig's folder")
            .to_path_buf();
        let pid_file = state.join("pids/kube-apiserver.pid");
        let pid = std::fs::read_to_string(&pid_file).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (this test kills the API server of the cluster scripts/k8s-up.sh starts)",
                pid_file.display()
            )
        });
        let proc = PathBuf::from(format!("/proc/{}", pid.trim()));
        let split = |bytes: Vec<u8>| -> Vec<OsString> {
            bytes
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| OsString::from_vec(a.to_vec()))
                .collect()
        };
        let argv = split(std::fs::read(proc.join("cmdline")).expect("its command line"));
        assert!(
            argv.first()
                .is_some_and(|a| a.to_string_lossy().ends_with("kube-apiserver")),
            "pid {} is not kube-apiserver: {argv:?}",
            pid.trim()
        );
        let env = split(std::fs::read(proc.join("environ")).expect("its environment"))
            .into_iter()
            .filter_map(|kv| {
                let kv = kv.into_vec();
                let eq = kv.iter().position(|b| *b == b'=')?;
                Some((
                    OsString::from_vec(kv[..eq].to_vec()),
                    OsString::from_vec(kv[eq + 1..].to_vec()),
                ))
            })
            .collect();
        let log = std::fs::read_link(proc.join("fd/1")).expect("its log");
        ApiServer {
            pid_file,
            log,
            argv,
            env,
            down: false,
        }
    }

    fn pid(&self) -> String {
        std::fs::read_to_string(&self.pid_file)
            .unwrap()
            .trim()
            .to_string()
    }

    /// SIGKILL, and waits until the process is gone.
    fn kill(&mut self) {
        let pid = self.pid();
        let st = std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status()
            .unwrap();
        assert!(st.success(), "kill -KILL {pid}");
        self.down = true;
        let t0 = Instant::now();
        while std::path::Path::new(&format!("/proc/{pid}/cmdline"))
            .metadata()
            .is_ok_and(|_| {
                // A zombie until its parent reaps it: gone once its state is Z or it is gone.
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| !s.contains(") Z "))
            })
        {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "{pid} outlived SIGKILL"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts it again as before (its own session, the same log appended to), records its pid.
    /// It is the cluster's daemon, not waited for: it outlives the test, and
    /// `scripts/k8s-down.sh` stops it by its pid file as it stops the one k8s-up.sh started.
    #[allow(clippy::zombie_processes)]
    fn start(&mut self) {
        let log = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.log)
            .expect("its log");
        let child = std::process::Command::new("setsid")
            .args(&self.argv)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("starting kube-apiserver again");
        // `setsid` from a process that leads no group execs in place: the child is the server.
        std::fs::write(&self.pid_file, format!("{}\n", child.id())).unwrap();
        self.down = false;
    }
}

impl Drop for ApiServer {
    /// A test that fails while the server is down leaves a cluster that works.
    fn drop(&mut self) {
        if self.down {
            self.start();
        }
    }
}

/// Waits up to 3 minutes until the cluster's API server answers again.
async fn answers_again() {
    let t0 = Instant::now();
    loop {
        if let Ok(c) = skillscope::runner::kubernetes::Cluster::connect(&harness::spec()).await
            && c.ping().await.is_ok()
        {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(180),
            "the API server did not answer again"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_api_server_killed_mid_trial_is_a_fault_and_the_retry_passes() {
    let t = Target::kubernetes();
    t.require().await;
    let mut server = ApiServer::of_local_cluster();
    let s = Scratch::new();
    let dir = task(&s, "api-killed", 8, None);
    let req = request(t, &s, "api-killed", &dir, "api-killed");
    let run = spawn_run(&s, req);
    agent_at_work(&s, "api-killed").await;
    server.kill();
    tokio::time::sleep(Duration::from_secs(5)).await;
    server.start();
    answers_again().await;
    let out = finished(run, 420).await;
    // Each attempt the dead server cut is a fault without a verdict; the last one passes.
    let history = attempts(&s, &out);
    assert!(history.len() >= 2, "{history:#?}");
    assert_faults_without_verdict(&history, history.len() - 1, "");
    assert_eq!(
        history.last().unwrap().outcome,
        Some(skillscope::store::Outcome::Pass),
        "{history:#?}"
    );
    t.assert_nothing_left(&s, "api-killed").await;
}
