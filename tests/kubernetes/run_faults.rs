//! The cluster's faults in whole runs (`--backend kubernetes`): a trial's pod deleted under it,
//! every connection to the API server cut mid-exec, an image the node cannot pull, a namespace
//! ResourceQuota that keeps every pod out. Each is a
//! runner fault with its reason, retried, never a verdict, and the run leaves nothing behind.

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams};
use skillscope::engine::{Engine, RunOutcome, RunRequest};
use skillscope::runner::kubernetes::labels;
use skillscope::store::{Outcome, TrialRow, TrialStatus, queries};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use crate::harness::{Scratch as Namespace, cluster, cluster_in, tight_quota};
use crate::support::common::{Scratch, fixtures};
use crate::support::lifecycle::Target;

/// A tasks folder in `s` with fixture `passes` as `name`, its oracle sleeping `sleep` seconds
/// first, its image made unique (a file of `unique` content) when given.
fn task(s: &Scratch, name: &str, sleep: u32, unique: Option<&str>) -> std::path::PathBuf {
    let root = s.dir.path().join("fault-tasks");
    let dir = root.join(name);
    for sub in ["environment", "solution", "tests"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    let from = fixtures().join("passes");
    for f in [
        "task.toml",
        "instruction.md",
        "environment/Dockerfile",
        "tests/test.sh",
    ] {
        std::fs::copy(from.join(f), dir.join(f)).unwrap();
    }
    std::fs::write(
        dir.join("solution/solve.sh"),
        format!("#!/bin/sh\nsleep {sleep}\necho 42 > /root/answer.txt\n"),
    )
    .unwrap();
    if let Some(u) = unique {
        let mut df = std::fs::read_to_string(dir.join("environment/Dockerfile")).unwrap();
        df.push_str(&format!("RUN echo {u} > /unique.txt\n"));
        std::fs::write(dir.join("environment/Dockerfile"), df).unwrap();
    }
    root
}

fn request(t: Target, s: &Scratch, name: &str, dir: &Path, task: &str) -> RunRequest {
    t.request(s, name, Some(dir), &[task], 1)
}

/// The run's attempts of its one trial, oldest first, once the run ended.
fn attempts(s: &Scratch, out: &RunOutcome) -> Vec<TrialRow> {
    let c = s.store.connect().unwrap();
    let current = queries::current_trials(&c, out.run.id).unwrap();
    assert_eq!(current.len(), 1, "{current:#?}");
    queries::trial_attempts(&c, out.run.id, &current[0].key()).unwrap()
}

/// Every attempt but the last was interrupted by a fault of the cluster with `reason` in its
/// error, never judged.
fn assert_faults_without_verdict(history: &[TrialRow], upto: usize, reason: &str) {
    for a in &history[..upto] {
        assert_eq!(
            a.outcome,
            Some(Outcome::Interrupted),
            "a fault became a verdict: {a:#?}"
        );
        assert!(a.fault.is_some(), "no fault recorded: {a:#?}");
        assert_eq!(a.reward, None, "{a:#?}");
        assert!(
            a.error.as_deref().unwrap_or_default().contains(reason),
            "expected {reason:?} in {a:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pod_deleted_mid_trial_is_a_fault_and_the_retry_passes() {
    let t = Target::kubernetes();
    t.require().await;
    let _turn = t.turn().await;
    let s = Scratch::new();
    let dir = task(&s, "deleted", 8, None);
    let req = request(t, &s, "pod-deleted", &dir, "deleted");
    let engine = Engine::new(s.store.clone());
    let run = tokio::spawn(async move {
        engine
            .run(
                crate::support::common::prepared(req),
                CancellationToken::new(),
            )
            .await
    });
    // The agent at work: its pod is deleted under it.
    let uid = agent_at_work(&s, "pod-deleted").await;
    let cluster = cluster().await;
    let pods: Api<Pod> = cluster.api();
    let agents = ListParams::default().labels(&format!(
        "{}={},{}=agent",
        labels::RUN_UID,
        labels::value(&uid),
        labels::ROLE
    ));
    let listed = pods.list(&agents).await.unwrap().items;
    assert_eq!(listed.len(), 1, "one agent pod");
    let name = listed[0].metadata.name.clone().unwrap();
    pods.delete(&name, &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    one_fault_then_a_pass(t, &s, run, "pod-deleted").await;
}

/// The run `run` ends within 5 minutes, finished: its one trial's first attempt a fault
/// without a verdict, its second a pass, and nothing of run `name` is left on the cluster.
async fn one_fault_then_a_pass(
    t: Target,
    s: &Scratch,
    run: tokio::task::JoinHandle<Result<RunOutcome, skillscope::engine::EngineError>>,
    name: &str,
) {
    let out = tokio::time::timeout(Duration::from_secs(300), run)
        .await
        .expect("the run ends")
        .unwrap()
        .expect("run");
    assert!(out.finished, "{:?}", out.stop);
    let history = attempts(s, &out);
    assert_eq!(history.len(), 2, "{history:#?}");
    assert_faults_without_verdict(&history, 1, "");
    assert_eq!(history[1].outcome, Some(Outcome::Pass), "{history:#?}");
    t.assert_nothing_left(s, name).await;
}

/// A loopback proxy to the registry that serves Docker (pushes) and refuses the cluster's
/// containerd (pulls): a registry the node cannot pull from. Returns its `host:port`.
async fn push_only_registry(upstream: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let upstream = upstream.clone();
            tokio::spawn(async move {
                // The first request's head names its client.
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 65536 {
                    match tokio::io::AsyncReadExt::read(&mut inbound, &mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
                if text.contains("user-agent: containerd") {
                    return;
                }
                let Ok(mut out) = TcpStream::connect(&upstream).await else {
                    return;
                };
                if tokio::io::AsyncWriteExt::write_all(&mut out, &head)
                    .await
                    .is_err()
                {
                    return;
                }
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_image_the_node_cannot_pull_is_a_fault_never_a_verdict() {
    let t = Target::kubernetes();
    t.require().await;
    let _turn = t.turn().await;
    let s = Scratch::new();
    let unique = uuid::Uuid::new_v4().simple().to_string();
    let dir = task(&s, "unpullable", 0, Some(&unique));
    let (_, registry) = crate::harness::env();
    let mut req = request(t, &s, "unpullable", &dir, "unpullable");
    req.settings.backend.registry = Some(push_only_registry(registry).await);
    let out = given_up_after_three_faults(&s, req, "Pull").await;
    let c = s.store.connect().unwrap();
    let events = queries::recent_events(&c, out.run.id, 50).unwrap();
    assert!(
        events
            .iter()
            .any(|(_, _, m)| m.contains("left without a verdict")),
        "{events:?}"
    );
    t.assert_nothing_left(&s, "unpullable").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_quota_that_keeps_every_pod_out_is_a_fault_never_a_verdict() {
    let t = Target::kubernetes();
    t.require().await;
    let ns = Namespace::new("runquota").await;
    let admin = cluster_in(Some(&ns.name)).await;
    tight_quota(&admin).await;
    let s = Scratch::new();
    let dir = task(&s, "quota", 0, None);
    let mut req = request(t, &s, "quota", &dir, "quota");
    req.settings.backend.namespace = Some(ns.name.clone());
    req.settings.backend.start_timeout_secs = Some(5);
    given_up_after_three_faults(&s, req, "quota").await;
    let pods: Api<Pod> = admin.api();
    assert!(
        pods.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    ns.delete().await;
}

/// Runs `req` in `s` to its end: its one trial given up after three attempts, each a fault with
/// `reason` in its error and no verdict. The run's outcome.
async fn given_up_after_three_faults(s: &Scratch, req: RunRequest, reason: &str) -> RunOutcome {
    let out = Engine::new(s.store.clone())
        .run(
            crate::support::common::prepared(req),
            CancellationToken::new(),
        )
        .await
        .expect("run");
    let history = attempts(s, &out);
    assert_eq!(history.len(), 3, "given up after 3 faults: {history:#?}");
    assert_faults_without_verdict(&history, 3, reason);
    out
}

/// Run `name`'s uid once its one trial's agent is at work.
async fn agent_at_work(s: &Scratch, name: &str) -> String {
    let t0 = Instant::now();
    loop {
        let c = s.store.connect().unwrap();
        if let Some(r) = queries::find_run(&c, name).unwrap()
            && queries::current_trials(&c, r.id)
                .unwrap()
                .iter()
                .any(|x| x.status == TrialStatus::Agent)
        {
            return r.uid;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(180),
            "the agent never started"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every connection to the API server cut mid-trial (as a restart of the API server cuts them;
/// the server itself, shared with other tests, keeps running): the agent's exec stream is cut,
/// the attempt is a fault, and the retry passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_api_server_s_connections_cut_mid_trial_is_a_fault_and_the_retry_passes() {
    let t = Target::kubernetes();
    t.require().await;
    let _turn = t.turn().await;
    let s = Scratch::new();
    let dir = task(&s, "api-cut", 8, None);
    let relay = crate::harness::Relay::start().await;
    let kubeconfig = crate::harness::kubeconfig_variant(s.dir.path(), Some(&relay.url), None);
    let mut req = request(t, &s, "api-cut", &dir, "api-cut");
    req.settings.backend.kubeconfig = Some(kubeconfig);
    let engine = Engine::new(s.store.clone());
    let run = tokio::spawn(async move {
        engine
            .run(
                crate::support::common::prepared(req),
                CancellationToken::new(),
            )
            .await
    });
    agent_at_work(&s, "api-cut").await;
    relay.cut();
    one_fault_then_a_pass(t, &s, run, "api-cut").await;
}
