//! The trial-lifecycle cases every backend must pass, written once: honest pass and fail, a
//! partial and a missing reward, an agent that overruns its budget, an agent that crashes, a
//! verifier that hangs, hostile agents that try to forge a pass, a cancel, a retry, a run
//! killed with SIGKILL and resumed, and an image whose user is not root. Each test binary of a backend expands [`lifecycle_cases!`]
//! with its [`Target`]: the Docker tests with [`Target::docker`], the Kubernetes tests with
//! [`Target::kubernetes`] — the same list, not copies.
//!
//! Every case also checks that nothing of its run is left on the backend (containers, or pods,
//! Secrets and NetworkPolicies carrying the run's uid).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::common::{Scratch, fixtures, one};
use skillscope::config::{BackendKind, BackendSettings, RunSettings};
use skillscope::engine::{Engine, RunRequest};
use skillscope::skillsbench::Condition;
use skillscope::store::{CommandKind, Outcome, TrialRow, TrialStatus, queries};
use tokio_util::sync::CancellationToken;

/// The backend a case runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// Docker or Kubernetes.
    pub kind: BackendKind,
}

impl Target {
    /// This machine's Docker daemon.
    pub fn docker() -> Target {
        Target {
            kind: BackendKind::Docker,
        }
    }

    /// The cluster `KUBECONFIG` and `SKILLSCOPE_REGISTRY` name (`scripts/k8s-up.sh`).
    pub fn kubernetes() -> Target {
        Target {
            kind: BackendKind::Kubernetes,
        }
    }

    /// This backend to oneself, while the guard lives: on Kubernetes one run of these cases at a
    /// time (a small test node fits one trial's two 1-CPU pods; runs in parallel would only wait
    /// on each other until their pods' start deadline), on Docker no wait.
    pub async fn turn(&self) -> Option<tokio::sync::MutexGuard<'static, ()>> {
        static CLUSTER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
        if self.kind == BackendKind::Kubernetes {
            Some(CLUSTER.lock().await)
        } else {
            None
        }
    }

    /// Panics with how to get the backend when it is missing.
    pub async fn require(&self) {
        super::common::require_docker().await;
        if self.kind == BackendKind::Kubernetes {
            for var in ["KUBECONFIG", "SKILLSCOPE_REGISTRY"] {
                assert!(
                    std::env::var(var).is_ok_and(|v| !v.is_empty()),
                    "{var} is not set: start the test cluster first: eval \"$(scripts/k8s-up.sh)\""
                );
            }
        }
    }

    /// The backend's run settings.
    pub fn backend(&self) -> BackendSettings {
        BackendSettings {
            kind: self.kind,
            registry: std::env::var("SKILLSCOPE_REGISTRY").ok(),
            ..Default::default()
        }
    }

    /// The command-line flags that choose the backend.
    pub fn flags(&self) -> Vec<String> {
        match self.kind {
            BackendKind::Kubernetes => vec!["--backend".into(), "kubernetes".into()],
            _ => Vec::new(),
        }
    }

    /// A request of fixture `tasks` (from `dir`, the fixture tasks when `None`), no-skills,
    /// `trials` each, on this backend.
    pub fn request(
        &self,
        s: &Scratch,
        name: &str,
        dir: Option<&Path>,
        tasks: &[&str],
        trials: u32,
    ) -> RunRequest {
        let mut req = s.request(name, tasks, vec![Condition::NoSkills], trials);
        if let Some(d) = dir {
            req.tasks_dir = d.to_path_buf();
        }
        req.settings = RunSettings {
            backend: self.backend(),
            ..req.settings
        };
        req
    }

    /// Runs `req` to its end on this backend.
    pub async fn run(&self, s: &Scratch, req: RunRequest) -> skillscope::engine::RunOutcome {
        self.require().await;
        Engine::new(s.store.clone())
            .run(
                crate::support::common::prepared(req),
                CancellationToken::new(),
            )
            .await
            .expect("run")
    }

    /// What run `name` (of the store `s`) left on the backend: containers, pods, Secrets and
    /// NetworkPolicies with its uid.
    pub async fn leftovers(&self, s: &Scratch, name: &str) -> Vec<String> {
        match self.kind {
            BackendKind::Kubernetes => {
                let c = s.store.connect().expect("connect");
                let uid = queries::find_run(&c, name)
                    .expect("query")
                    .expect("the run")
                    .uid;
                kube_objects_of(&uid).await
            }
            _ => {
                let n = super::common::containers_of_run(s, name).await;
                (0..n).map(|i| format!("container {i}")).collect()
            }
        }
    }

    /// Waits up to 30 s (removals run in the background) for run `name` to leave nothing.
    pub async fn assert_nothing_left(&self, s: &Scratch, name: &str) {
        let t0 = Instant::now();
        loop {
            let left = self.leftovers(s, name).await;
            if left.is_empty() {
                return;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "run {name} left {left:?} on {:?}",
                self.kind
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

/// The pods, Secrets and NetworkPolicies labelled with run `uid` in the namespace of
/// `KUBECONFIG`'s current context.
pub async fn kube_objects_of(uid: &str) -> Vec<String> {
    use k8s_openapi::api::core::v1::{Pod, Secret};
    use k8s_openapi::api::networking::v1::NetworkPolicy;
    use skillscope::runner::kubernetes::{Cluster, ClusterSpec, labels};
    let cluster = Cluster::connect(&ClusterSpec::default())
        .await
        .expect("the test cluster");
    let lp = kube::api::ListParams::default().labels(&format!(
        "{}={}",
        labels::RUN_UID,
        labels::value(uid)
    ));
    let mut out = Vec::new();
    let pods: kube::Api<Pod> = cluster.api();
    for p in pods.list(&lp).await.expect("listing pods").items {
        out.push(format!("pod {}", p.metadata.name.unwrap_or_default()));
    }
    let secrets: kube::Api<Secret> = cluster.api();
    for p in secrets.list(&lp).await.expect("listing secrets").items {
        out.push(format!("secret {}", p.metadata.name.unwrap_or_default()));
    }
    let policies: kube::Api<NetworkPolicy> = cluster.api();
    for p in policies.list(&lp).await.expect("listing policies").items {
        out.push(format!("policy {}", p.metadata.name.unwrap_or_default()));
    }
    out
}

/// Honest agents and verifiers: pass, fail, partial, no reward, an agent over its budget, a
/// verifier that hangs, an agent that crashes, a reward file planted as a link; each recorded
/// with its outcome, and the verifier's files copied out.
pub async fn honest_outcomes(t: Target) {
    let _turn = t.turn().await;
    let s = Scratch::new();
    let crash = crashing_task(&s);
    let mut tasks = vec![
        "passes",
        "fails",
        "partial-reward",
        "no-reward",
        "agent-timeout",
        "verifier-timeout",
        "hostile-logs",
    ];
    for task in &tasks {
        copy_dir(&fixtures().join(task), &crash.join(task));
    }
    tasks.push("agent-crash");
    let out = t
        .run(&s, t.request(&s, "outcomes", Some(&crash), &tasks, 1))
        .await;
    assert!(out.finished);
    let rows = s.trials(out.run.id);
    assert_eq!(rows.len(), tasks.len());
    let c = "no-skills";
    let r = one(&rows, "passes", c);
    assert_eq!(
        (r.outcome, r.reward),
        (Some(Outcome::Pass), Some(1.0)),
        "{r:#?}"
    );
    assert_eq!(r.agent_exit_code, Some(0));
    let dir = trial_dir(r);
    assert_eq!(read(&dir.join("verifier/reward.txt")).trim(), "1");
    assert!(read(&dir.join("verifier/test-stdout.txt")).contains("PASS answer"));
    assert!(dir.join("agent/oracle.txt").is_file());
    let r = one(&rows, "fails", c);
    assert_eq!(
        (r.outcome, r.reward),
        (Some(Outcome::Fail), Some(0.0)),
        "{r:#?}"
    );
    let r = one(&rows, "partial-reward", c);
    assert_eq!(
        (r.outcome, r.reward),
        (Some(Outcome::Fail), Some(0.5)),
        "{r:#?}"
    );
    assert_eq!(r.rewards.as_ref().unwrap()["style"], 1.0);
    let r = one(&rows, "no-reward", c);
    assert_eq!(
        (r.outcome, r.reward),
        (Some(Outcome::NoReward), None),
        "{r:#?}"
    );
    let r = one(&rows, "agent-timeout", c);
    assert_eq!(r.outcome, Some(Outcome::AgentTimeout), "{r:#?}");
    assert!(r.verifier_finished_at.is_some(), "the verifier still ran");
    let r = one(&rows, "verifier-timeout", c);
    assert_eq!(
        (r.outcome, r.reward),
        (Some(Outcome::VerifierTimeout), None),
        "{r:#?}"
    );
    // A link planted as the reward file is never followed.
    let r = one(&rows, "hostile-logs", c);
    assert_eq!(r.outcome, Some(Outcome::NoReward), "{r:#?}");
    assert!(std::fs::symlink_metadata(trial_dir(r).join("agent/stolen.txt")).is_err());
    // The agent killed itself: its exit code is recorded, the verifier judges what it left.
    let r = one(&rows, "agent-crash", c);
    assert_eq!(
        (r.outcome, r.reward),
        (Some(Outcome::Fail), Some(0.0)),
        "{r:#?}"
    );
    assert_ne!(r.agent_exit_code, Some(0), "{r:#?}");
    t.assert_nothing_left(&s, "outcomes").await;
}

/// A task like `passes` whose oracle kills itself half-way (folder `agent-crash` in a fresh
/// tasks folder of `s`, returned).
fn crashing_task(s: &Scratch) -> PathBuf {
    let root = s.dir.path().join("lifecycle-tasks");
    let task = root.join("agent-crash");
    copy_dir(&fixtures().join("passes"), &task);
    std::fs::write(
        task.join("solution/solve.sh"),
        "#!/bin/sh\necho started > /root/partial.txt\nkill -9 $$\necho 42 > /root/answer.txt\n",
    )
    .unwrap();
    root
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// No file under `dir` holds `needle`.
fn assert_no_file_holds(dir: &Path, needle: &str) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            assert_no_file_holds(&e.path(), needle);
        } else if ft.is_file() {
            let bytes = std::fs::read(e.path()).unwrap();
            assert!(
                !bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
                "{needle} reached {}",
                e.path().display()
            );
        }
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn trial_dir(t: &TrialRow) -> PathBuf {
    PathBuf::from(t.trial_dir.clone().expect("trial dir"))
}

/// Hostile agents against honest verifiers: a loop left running, replaced shells and tools, a
/// watcher of `/tests`, rewards written ahead, reward paths made folders, pytest configuration
/// planted above the tests. None is recorded as a pass.
pub async fn hostile_agents(t: Target) {
    let _turn = t.turn().await;
    let s = Scratch::new();
    let tasks = [
        "setsid-loop",
        "replaced-shell",
        "replaced-tools",
        "tests-watcher",
        "prewritten-reward",
        "reward-dirs",
        "pytest-root-config",
        "proc-secret",
        "hopper-from-tested-code",
        "link-copies",
        "verifier-env-path",
        "path-empty-entry",
    ];
    // The honest control of `link-copies`: outputs that are links, carried as copies.
    let honest = "linked-outputs";
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile");
    let all: Vec<&str> = tasks.iter().copied().chain([honest]).collect();
    let out = t
        .run(&s, t.request(&s, "hostile", Some(&dir), &all, 1))
        .await;
    assert!(out.finished);
    let rows = s.trials(out.run.id);
    let r = one(&rows, honest, "no-skills");
    assert_eq!(
        (r.outcome, r.reward, r.tamper.as_ref()),
        (Some(Outcome::Pass), Some(1.0), None),
        "{r:#?}"
    );
    for task in tasks {
        let r = one(&rows, task, "no-skills");
        assert_ne!(
            r.outcome,
            Some(Outcome::Pass),
            "{task} forged a pass: {r:#?}"
        );
        assert_ne!(r.reward, Some(1.0), "{task}: {r:#?}");
        assert_eq!(r.status, TrialStatus::Done, "{task}: {r:#?}");
    }
    // The loop the agent left is gone before the verifier exists: the verifier's own 0 stands.
    let r = one(&rows, "setsid-loop", "no-skills");
    assert_eq!(read(&trial_dir(r).join("verifier/reward.txt")).trim(), "0");
    // The replaced shell never reaches the verifier, and is flagged.
    let r = one(&rows, "replaced-shell", "no-skills");
    assert!(
        r.error.as_deref().unwrap_or_default().contains("tampered"),
        "{r:#?}"
    );
    // The watcher never sees the hidden tests.
    let r = one(&rows, "tests-watcher", "no-skills");
    assert!(!trial_dir(r).join("agent/stolen-tests").exists());
    // A pre-written report is the agent's: it does not count.
    let r = one(&rows, "prewritten-reward", "no-skills");
    assert_eq!((r.tests_total, r.tests_passed), (None, None), "{r:#?}");
    // A value only `[verifier] env` names reaches the verifier (on Kubernetes through the trial's
    // Secret, mounted by the verifier's pod alone) and nothing the agent could read.
    let r = one(&rows, "proc-secret", "no-skills");
    assert!(
        read(&trial_dir(r).join("verifier/test-stdout.txt")).contains("the verifier has its token"),
        "{r:#?}"
    );
    assert_no_file_holds(&trial_dir(r), "vtok-3f9a2c71e0d84b5a");
    // What the tested code left outlived `test.sh` (frozen when it exited, then listed): flagged
    // on both backends, whatever it forged.
    let r = one(&rows, "hopper-from-tested-code", "no-skills");
    let tamper = read(&trial_dir(r).join("agent/tamper.json"));
    assert!(
        r.tamper.as_ref().is_some_and(|t| t["kind"] == "tampered")
            && tamper.contains("outlived test.sh"),
        "{r:#?}\n{tamper}"
    );
    // The links to where the tests write their references arrived as copies of what was there
    // when the agent ended: the tests' own 42 is not read through them.
    let r = one(&rows, "link-copies", "no-skills");
    assert_eq!(
        (r.outcome, r.reward),
        (Some(Outcome::Fail), Some(0.0)),
        "{r:#?}"
    );
    assert!(read(&trial_dir(r).join("verifier/test-stdout.txt")).contains("FAIL answer"));
    // The verifier's PATH as its exec gets it (a `[verifier] env` PATH; the image's empty entry,
    // the working folder): the checker the agent rewrote or planted there is the toolchain's,
    // left behind, and flagged.
    for (task, path) in [
        ("verifier-env-path", "/opt/grader/check-answer"),
        ("path-empty-entry", "/root/check-answer"),
    ] {
        let r = one(&rows, task, "no-skills");
        let tamper = read(&trial_dir(r).join("agent/tamper.json"));
        assert!(
            r.tamper.as_ref().is_some_and(|t| t["kind"] == "tampered") && tamper.contains(path),
            "{task}: {r:#?}\n{tamper}"
        );
        assert!(read(&trial_dir(r).join("verifier/test-stdout.txt")).contains("FAIL answer"));
    }
    t.assert_nothing_left(&s, "hostile").await;
}

/// A cancel command stops a running trial at once: cancelled, not failed, nothing left.
pub async fn cancel(t: Target) {
    let _turn = t.turn().await;
    t.require().await;
    let s = Scratch::new();
    let req = t.request(&s, "cancel", None, &["sleeper"], 1);
    let engine = Engine::new(s.store.clone());
    let handle = tokio::spawn(async move {
        engine
            .run(
                crate::support::common::prepared(req),
                CancellationToken::new(),
            )
            .await
    });
    let t0 = Instant::now();
    let target = loop {
        let c = s.store.connect().unwrap();
        if let Some(r) = queries::find_run(&c, "cancel").unwrap()
            && let Some(row) = queries::current_trials(&c, r.id)
                .unwrap()
                .into_iter()
                .find(|t| t.status == TrialStatus::Agent)
        {
            break (r.id, row.id);
        }
        assert!(t0.elapsed() < Duration::from_secs(180), "no trial started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let c = s.store.connect().unwrap();
    queries::insert_command(&c, target.0, CommandKind::Cancel, target.1).unwrap();
    let asked = Instant::now();
    let out = tokio::time::timeout(Duration::from_secs(60), handle)
        .await
        .expect("cancel took too long")
        .unwrap()
        .unwrap();
    assert!(asked.elapsed() < Duration::from_secs(30));
    let row = one(&s.trials(out.run.id), "sleeper", "no-skills").clone();
    assert_eq!(row.outcome, Some(Outcome::Cancelled), "{row:#?}");
    assert_eq!(out.cancelled, 1);
    t.assert_nothing_left(&s, "cancel").await;
}

/// The retry command adds an attempt to a failed trial and keeps the old one; a passed trial is
/// not run again.
pub async fn retry(t: Target) {
    let _turn = t.turn().await;
    let s = Scratch::new();
    let req = || t.request(&s, "retry", None, &["fails", "passes"], 1);
    let out = t.run(&s, req()).await;
    let failed = one(&s.trials(out.run.id), "fails", "no-skills").clone();
    assert_eq!(failed.outcome, Some(Outcome::Fail));
    let st = Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .args(["retry", "retry", "--failed", "--db"])
        .arg(s.db())
        .status()
        .unwrap();
    assert!(st.success());
    let out = t.run(&s, req()).await;
    let c = s.store.connect().unwrap();
    let attempts = queries::trial_attempts(&c, out.run.id, &failed.key()).unwrap();
    assert_eq!(attempts.len(), 2);
    assert!(attempts[0].superseded);
    assert_eq!(attempts[1].outcome, Some(Outcome::Fail));
    assert_eq!(one(&s.trials(out.run.id), "passes", "no-skills").attempt, 1);
    t.assert_nothing_left(&s, "retry").await;
}

fn spawn_run(t: Target, s: &Scratch, run: &str, extra: &[&str]) -> Child {
    let mut args = vec![
        "run".to_string(),
        "--headless".into(),
        "--tasks".into(),
        fixtures().display().to_string(),
        "--db".into(),
        s.db().display().to_string(),
        "--jobs-dir".into(),
        s.jobs().display().to_string(),
        "--run".into(),
        run.into(),
    ];
    args.extend(t.flags());
    args.extend(extra.iter().map(|s| s.to_string()));
    Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn skillscope")
}

fn counts(s: &Scratch, run: &str) -> (usize, usize) {
    let Ok(c) = s.store.connect() else {
        return (0, 0);
    };
    let Ok(Some(r)) = queries::find_run(&c, run) else {
        return (0, 0);
    };
    let rows = queries::current_trials(&c, r.id).unwrap_or_default();
    let done = rows
        .iter()
        .filter(|t| t.status == TrialStatus::Done)
        .count();
    let active = rows.iter().filter(|t| t.status.is_active()).count();
    (done, active)
}

/// A run killed with SIGKILL mid-trial leaves its environments; the same command resumes it,
/// sweeps them, and every trial ends with exactly one passing attempt; nothing is left.
pub async fn resume_after_kill_9(t: Target) {
    let _turn = t.turn().await;
    t.require().await;
    let s = Scratch::new();
    let args = [
        "--task",
        "slow",
        "--task",
        "passes",
        "--conditions",
        "no-skills",
        "--trials",
        "2",
    ];
    let mut child = spawn_run(t, &s, "crash", &args);
    let t0 = Instant::now();
    loop {
        let (done, active) = counts(&s, "crash");
        if done >= 1 && active >= 1 && !t.leftovers(&s, "crash").await.is_empty() {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(240),
            "no trial got going"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !t.leftovers(&s, "crash").await.is_empty(),
        "the killed run should have left environments to sweep"
    );
    let mut child = spawn_run(t, &s, "crash", &args);
    let t0 = Instant::now();
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code().unwrap_or(-1);
        }
        assert!(
            t0.elapsed() < Duration::from_secs(300),
            "the resumed run did not end"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(code, 0);
    let c = s.store.connect().unwrap();
    let r = queries::find_run(&c, "crash").unwrap().unwrap();
    assert_eq!(r.status, "finished");
    let current = queries::current_trials(&c, r.id).unwrap();
    assert_eq!(current.len(), 4);
    for row in &current {
        assert_eq!(row.outcome, Some(Outcome::Pass), "{row:#?}");
        for a in queries::trial_attempts(&c, r.id, &row.key()).unwrap() {
            if a.id != row.id {
                assert!(
                    a.superseded && a.outcome == Some(Outcome::Interrupted),
                    "{a:#?}"
                );
            }
        }
    }
    let events = queries::recent_events(&c, r.id, 50).unwrap();
    assert!(
        events.iter().any(|(_, _, m)| m.contains("re-queued")),
        "{events:?}"
    );
    t.assert_nothing_left(&s, "crash").await;
}

/// Tasks whose image runs as a user who is not root, as Harbor runs them: the agent's and the
/// verifier's execs as that user, the image's ENTRYPOINT too (through `su`), `/logs/agent` and
/// `/logs/verifier` writable by it, the oracle's `/solution` in place. The oracle passes; an
/// agent that leaves nothing fails with the verifier's reward 0, never an infrastructure fault
/// (the hand-over must tell PID 1's own `sleep` from the agent's processes whatever user those
/// run as). A bare id no `/etc/passwd` line names runs on Docker (its exec takes ids); on
/// Kubernetes, whose execs switch user with `su`, it is refused naming why — never a verdict.
/// Harbor's `[agent] user` runs the agent (the oracle) as that user, the verifier as the
/// image's.
pub async fn image_user_not_root(t: Target) {
    let _turn = t.turn().await;
    let s = Scratch::new();
    let root = s.dir.path().join("user-tasks");
    let named = "FROM skillscope/busybox:1\n\
        RUN echo 'app:x:1000:1000::/home/app:/bin/sh' >> /etc/passwd \
        && echo 'app:x:1000:' >> /etc/group && mkdir -p /home/app && chown 1000:1000 /home/app \
        && printf '#!/bin/sh\\necho \"${SHELL-unset}\" > /tmp/entry-shell\\nid -u > /tmp/entry-uid\\nexec \"$@\"\\n' > /entry.sh \
        && chmod 755 /entry.sh\n\
        USER 1000\nWORKDIR /home/app\nENTRYPOINT [\"/entry.sh\"]\n";
    let check = |home: &str, uid: &str| {
        format!(
            "#!/bin/sh\nmkdir -p /logs/verifier\n\
             if [ \"$(id -u)\" = {uid} ] && [ \"$(cat {home}/answer.txt 2>/dev/null)\" = 42 ] \
             && echo scratch > {home}/out/scratch.txt; then echo 1 > /logs/verifier/reward.txt; \
             else echo \"FAIL: $(id -u) $(ls -la {home} {home}/out 2>&1)\"; \
             echo 0 > /logs/verifier/reward.txt; fi\n"
        )
    };
    let solve_named = "#!/bin/sh\nset -e\ni=0; while [ ! -s /tmp/entry-uid ] && [ $i -lt 50 ]; do \
        sleep 0.1; i=$((i+1)); done\n[ \"$(cat /tmp/entry-uid)\" = 1000 ]\n\
        [ \"$(id -u)\" = 1000 ] && [ \"$HOME\" = /home/app ]\n\
        [ \"$(cat /tmp/entry-shell)\" = unset ] && [ \"${SHELL-unset}\" = unset ]\n\
        cd /home/app && mkdir out && echo 42 > answer.txt\n\
        echo mine > /logs/agent/mine.txt\n";
    let numeric = "FROM skillscope/busybox:1\nRUN mkdir /work && chown 4242:4242 /work\n\
        USER 4242\nWORKDIR /work\n";
    let solve_numeric = "#!/bin/sh\nset -e\n[ \"$(id -u)\" = 4242 ]\nmkdir /work/out\n\
        echo 42 > /work/answer.txt\n";
    // Harbor's `[agent] user` in an image that runs as root: the agent as `app`, the
    // verifier as the image's root.
    let root_image = "FROM skillscope/busybox:1\n\
        RUN echo 'app:x:1000:1000::/home/app:/bin/sh' >> /etc/passwd \
        && mkdir -p /home/app && chown 1000:1000 /home/app\n";
    let solve_agent_user = "#!/bin/sh\nset -e\n[ \"$(id -u)\" = 1000 ]\n\
        mkdir /home/app/out && echo 42 > /home/app/answer.txt\n";
    let idle = "#!/bin/sh\ntrue\n";
    let tasks: [(&str, &str, &str, String); 4] = [
        ("user-named", named, solve_named, check("/home/app", "1000")),
        ("user-named-idle", named, idle, check("/home/app", "1000")),
        (
            "user-numeric",
            numeric,
            solve_numeric,
            check("/work", "4242"),
        ),
        (
            "agent-user",
            root_image,
            solve_agent_user,
            check("/home/app", "0"),
        ),
    ];
    for (name, dockerfile, solve, test) in &tasks {
        let dir = root.join(name);
        copy_dir(&fixtures().join("passes"), &dir);
        if *name == "agent-user" {
            let toml = read(&dir.join("task.toml"));
            let toml = toml.replace("[agent]\n", "[agent]\nuser = \"app\"\n");
            std::fs::write(dir.join("task.toml"), toml).unwrap();
        }
        for (path, text) in [
            ("environment/Dockerfile", *dockerfile),
            ("solution/solve.sh", *solve),
            ("tests/test.sh", test.as_str()),
        ] {
            std::fs::write(dir.join(path), text).unwrap();
        }
        // Scripts that are not executable in the task folder: only root may make the copies
        // that skillscope put in place executable for a user who is not root.
        if *name == "user-named" {
            use std::os::unix::fs::PermissionsExt;
            for path in ["solution/solve.sh", "tests/test.sh"] {
                let p = dir.join(path);
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
            }
        }
    }
    let names: Vec<&str> = tasks.iter().map(|t| t.0).collect();
    let out = t
        .run(&s, t.request(&s, "nonroot", Some(&root), &names, 1))
        .await;
    let rows = s.trials(out.run.id);
    // On Kubernetes the bare id's trial has no verdict, so the run ends unjudged.
    assert_eq!(
        out.finished,
        t.kind != BackendKind::Kubernetes,
        "{:?}\n{rows:#?}",
        out.stop
    );
    let c = "no-skills";
    let r = one(&rows, "user-named", c);
    let dir = trial_dir(r);
    assert_eq!(
        (r.outcome, r.reward),
        (Some(Outcome::Pass), Some(1.0)),
        "{r:#?}\n{}\n{}",
        read(&dir.join("agent/oracle.txt")),
        read(&dir.join("verifier/test-stdout.txt"))
    );
    assert_eq!(read(&dir.join("agent/mine.txt")), "mine\n");
    let r = one(&rows, "agent-user", c);
    assert_eq!(
        (r.outcome, r.reward),
        (Some(Outcome::Pass), Some(1.0)),
        "{r:#?}\n{}\n{}",
        read(&trial_dir(r).join("agent/oracle.txt")),
        read(&trial_dir(r).join("verifier/test-stdout.txt"))
    );
    let r = one(&rows, "user-named-idle", c);
    assert_eq!(
        (r.outcome, r.reward),
        (Some(Outcome::Fail), Some(0.0)),
        "{r:#?}"
    );
    let r = one(&rows, "user-numeric", c);
    if t.kind == BackendKind::Kubernetes {
        assert_eq!(r.outcome, Some(Outcome::RuntimeError), "{r:#?}");
        let error = r.error.clone().unwrap_or_default();
        assert!(error.contains("user 4242 has no name"), "{error}");
    } else {
        assert_eq!(
            (r.outcome, r.reward),
            (Some(Outcome::Pass), Some(1.0)),
            "{r:#?}\n{}",
            read(&trial_dir(r).join("verifier/test-stdout.txt"))
        );
    }
    t.assert_nothing_left(&s, "nonroot").await;
}

/// One test per shared case, on the backend `$target` (an expression giving a [`Target`]).
/// (Test binaries that include this support module without expanding it allow it unused.)
#[allow(unused_macros)]
macro_rules! lifecycle_cases {
    ($target:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn honest_outcomes() {
            $crate::support::lifecycle::honest_outcomes($target).await
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn hostile_agents() {
            $crate::support::lifecycle::hostile_agents($target).await
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn cancel() {
            $crate::support::lifecycle::cancel($target).await
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn retry() {
            $crate::support::lifecycle::retry($target).await
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn resume_after_kill_9() {
            $crate::support::lifecycle::resume_after_kill_9($target).await
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn image_user_not_root() {
            $crate::support::lifecycle::image_user_not_root($target).await
        }
    };
}

#[allow(unused_imports)]
pub(crate) use lifecycle_cases;
