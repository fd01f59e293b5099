//! The cluster's faults in whole runs (`--backend kubernetes`): a trial's pod deleted under it,
//! every connection to the API server cut mid-exec, an image the node cannot pull, a namespace
//! ResourceQuota that keeps every pod out. Each is a
//! runner fault with its reason, retried, never a verdict, and the run leaves nothing behind.
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams};
use skillscope::runner::kubernetes::labels;
use skillscope::store::queries;
use tokio::net::{TcpListener, TcpStream};

use crate::harness::{Scratch as Namespace, cluster, cluster_in, tight_quota};
use crate::run_support::{
    agent_at_work, given_up_after_three_faults, one_fault_then_a_pass, request, spawn_run, task,
};
use crate::support::common::Scratch;
use crate::support::lifecycle::Target;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pod_deleted_mid_trial_is_a_fault_and_the_retry_passes() {
    let t = Target::kubernetes();
    t.require().await;
    let _turn = t.turn().await;
    let s = Scratch::new();
    let dir = task(&s, "deleted", 8, None);
    let req = request(t, &s, "pod-deleted", &dir, "deleted");
    let run = spawn_run(&s, req);
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
    let run = spawn_run(&s, req);
    agent_at_work(&s, "api-cut").await;
    relay.cut();
    one_fault_then_a_pass(t, &s, run, "api-cut").await;
}
