//! The cluster's faults, each typed: an image that cannot be pulled, a pod kept Pending past its
//! deadline (a namespace ResourceQuota; a request no node can meet), a pod deleted in the middle
//! of an exec. Nothing is left behind by a failed start.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams};
use skillscope::runner::kubernetes::{ExecEvent, ExecSpec, KubeFault, Role};

use crate::harness::{
    Scratch, busybox_env, cluster, cluster_in, end_of, site, started, tight_quota, trial,
};

async fn pods_of(cluster: &skillscope::runner::kubernetes::Cluster, run_uid: &str) -> usize {
    let pods: Api<Pod> = cluster.api();
    pods.list(&ListParams::default().labels(&format!("skillscope/run-uid={run_uid}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .count()
}

#[tokio::test]
async fn an_image_that_cannot_be_pulled_is_an_image_pull_fault() {
    let cluster = cluster().await;
    let labels = trial(501);
    let site = site(&cluster, &labels, &[]).await;
    let (_, registry) = crate::harness::env();
    let mut env = busybox_env(Role::Agent).await;
    env.image = format!("{registry}/skillscope/no-such-image:1");
    let err = site.start(&env).await.err().expect("no such image");
    assert_eq!(err.fault, KubeFault::ImagePull, "{err}");
    assert!(err.message.contains("no-such-image"), "{err}");
    assert_eq!(
        pods_of(&cluster, &labels.run_uid).await,
        0,
        "the failed pod is deleted"
    );
    site.close().await;
}

#[tokio::test]
async fn a_quota_keeps_the_pod_out_past_its_deadline_then_it_is_a_fault() {
    let scratch = Scratch::new("quota").await;
    let cluster = cluster_in(Some(&scratch.name)).await;
    tight_quota(&cluster).await;
    let labels = trial(502);
    let site = site(&cluster, &labels, &[]).await;
    let mut env = busybox_env(Role::Agent).await;
    env.cpus = Some(1.0);
    env.start_deadline = Duration::from_secs(4);
    let t0 = Instant::now();
    let err = site.start(&env).await.err().expect("over quota");
    assert_eq!(err.fault, KubeFault::PendingTooLong, "{err}");
    assert!(err.message.contains("quota"), "{err}");
    assert!(
        t0.elapsed() >= Duration::from_secs(4),
        "waited out the deadline"
    );
    assert_eq!(pods_of(&cluster, &labels.run_uid).await, 0);
    site.close().await;
    scratch.delete().await;
}

#[tokio::test]
async fn a_request_no_node_can_meet_stays_pending_past_its_deadline() {
    let cluster = cluster().await;
    let labels = trial(503);
    let site = site(&cluster, &labels, &[]).await;
    let mut env = busybox_env(Role::Agent).await;
    env.cpus = Some(512.0);
    env.start_deadline = Duration::from_secs(5);
    let err = site.start(&env).await.err().expect("unschedulable");
    assert_eq!(err.fault, KubeFault::PendingTooLong, "{err}");
    assert!(err.message.contains("Insufficient cpu"), "{err}");
    assert_eq!(pods_of(&cluster, &labels.run_uid).await, 0);
    site.close().await;
}

#[tokio::test]
async fn a_pod_deleted_mid_exec_is_pod_gone_not_an_exit_code() {
    let (cluster, site, pod) = started(504, Role::Agent).await;
    let mut stream = pod
        .spawn(&ExecSpec::argv([
            "/skillscope/static/sh",
            "-c",
            "echo started; exec /skillscope/static/sleep 120",
        ]))
        .await
        .unwrap();
    assert!(matches!(
        stream.next().await,
        Some(Ok(ExecEvent::Stdout(_)))
    ));
    let pods: Api<Pod> = cluster.api();
    pods.delete(pod.id(), &DeleteParams::default().grace_period(0))
        .await
        .expect("delete");
    let end = end_of(&mut stream).await;
    let err = end.expect_err("a deleted pod is a fault");
    assert_eq!(err.fault, KubeFault::PodGone, "{err}");
    let again = pod
        .run_output(&ExecSpec::argv(["true"]), 64)
        .await
        .expect_err("gone");
    assert_eq!(again.fault, KubeFault::PodGone, "{again}");
    site.close().await;
}
