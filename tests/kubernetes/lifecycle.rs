//! A trial pod's life on a real cluster: its site, start, labels and hardening as the API
//! returns them, stop, removal; a run's sweep by label; the cluster's capacity; the registry's
//! digest of a pushed image.

use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, ListParams};
use skillscope::runner::kubernetes::pod::build_pod;
use skillscope::runner::kubernetes::registry::{STATIC_REPO, manifest_digest};
use skillscope::runner::kubernetes::{ExecSpec, PodCommand, Role, TrialPod};

use crate::harness::{
    Scratch, busybox_env, cluster, cluster_in, site, started, static_image, trial,
};

#[tokio::test]
async fn a_pod_starts_hardened_and_labelled_then_goes_with_its_site() {
    let cluster = cluster().await;
    let labels = trial(101);
    let site = site(&cluster, &labels, &[("VERIFY_TOKEN", "v-secret")]).await;
    let pod = site
        .start(&busybox_env(Role::Agent).await)
        .await
        .expect("the agent's pod runs");
    pod.health().await.expect("healthy");
    let pods: Api<Pod> = cluster.api();
    let obj = pods.get(pod.id()).await.expect("the pod");
    let l = obj.metadata.labels.as_ref().expect("labels");
    assert_eq!(l["app.kubernetes.io/managed-by"], "skillscope");
    assert_eq!(l["skillscope/attempt-id"], "101");
    assert_eq!(l["skillscope/role"], "agent");
    let spec = obj.spec.as_ref().expect("spec");
    assert_eq!(spec.automount_service_account_token, Some(false));
    let c = &spec.containers[0];
    let sc = c.security_context.as_ref().expect("security context");
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    let limits = c
        .resources
        .as_ref()
        .and_then(|r| r.limits.as_ref())
        .expect("limits");
    assert_eq!(limits["cpu"].0, "100m");
    // No token is mounted, and the agent's pod does not see the verifier's Secret.
    let out = pod
        .run_output(
            &ExecSpec::argv([
                "/skillscope/static/sh",
                "-c",
                "ls /var/run/secrets/kubernetes.io 2>&1; ls /skillscope/secret 2>&1; \
                 grep CapEff /proc/self/status; touch /skillscope/static/x 2>&1; echo done",
            ]),
            4096,
        )
        .await
        .expect("exec");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("No such file"), "{text}");
    assert!(!text.contains("VERIFY_TOKEN"), "{text}");
    assert!(
        text.contains("Read-only file system"),
        "the static shell is read-only: {text}"
    );
    let cap_eff = text
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .map(|v| u64::from_str_radix(v.trim(), 16).expect("hex"))
        .expect("CapEff");
    assert_eq!(cap_eff & (1 << 13), 0, "NET_RAW is dropped: {text}");
    assert_eq!(cap_eff & (1 << 21), 0, "SYS_ADMIN is dropped: {text}");

    pod.stop_processes().await.expect("stopping processes");
    pod.health().await.expect("PID 1 lives on");
    let policy = site.policy_name().to_string();
    let secret = site.secret_name().expect("a secret").to_string();
    site.close().await;
    let policies: Api<NetworkPolicy> = cluster.api();
    let secrets: Api<Secret> = cluster.api();
    assert!(policies.get_opt(&policy).await.unwrap().is_none());
    assert!(secrets.get_opt(&secret).await.unwrap().is_none());
    let gone = pods.get_opt(pod.id()).await.unwrap();
    assert!(
        gone.is_none() || gone.unwrap().metadata.deletion_timestamp.is_some(),
        "the pod is deleted with its site"
    );
}

#[tokio::test]
async fn stop_processes_kills_everything_but_pid_1() {
    let (_cluster, site, pod) = started(102, Role::Agent).await;
    // Leave processes behind, one of them ignoring SIGTERM.
    let out = pod
        .run_output(
            &ExecSpec::argv([
                "/skillscope/static/sh",
                "-c",
                "(trap '' TERM; /skillscope/static/sleep 300) >/dev/null 2>&1 & \
                 /skillscope/static/sleep 300 >/dev/null 2>&1 & echo started",
            ]),
            1024,
        )
        .await
        .expect("exec");
    assert_eq!(out.exit_code, 0);
    pod.stop_processes().await.expect("stopped");
    // Live processes now: PID 1 and the shell that looks (zombies of killed ones may stay).
    let ps = pod
        .run_output(
            &ExecSpec::argv([
                "/skillscope/static/sh",
                "-c",
                "for p in /proc/[0-9]*; do read -r l < $p/stat; case \"$l\" in *') Z '*) ;; \
                 *) [ \"${p#/proc/}\" = $$ ] || echo \"$l\";; esac; done",
            ]),
            16 * 1024,
        )
        .await
        .expect("exec");
    let text = String::from_utf8_lossy(&ps.stdout);
    let live: Vec<&str> = text.lines().collect();
    assert_eq!(live.len(), 1, "only PID 1 lives: {text}");
    assert!(live[0].starts_with("1 ("), "{text}");
    site.close().await;
}

#[tokio::test]
async fn a_sweep_takes_one_run_s_objects_and_spares_kept_attempts_and_other_runs() {
    let cluster = cluster().await;
    let a1 = trial(201);
    let mut a2 = trial(202);
    a2.run_uid = a1.run_uid.clone();
    let b = trial(203);
    let env = busybox_env(Role::Agent).await;
    let s1 = site(&cluster, &a1, &[("K", "v")]).await;
    let s2 = site(&cluster, &a2, &[]).await;
    let sb = site(&cluster, &b, &[]).await;
    let p1 = s1.start(&env).await.expect("pod 1");
    let p2 = s2.start(&env).await.expect("pod 2");
    let pb = sb.start(&env).await.expect("pod b");
    let deleted = cluster.sweep_run(&a1.run_uid, &[202]).await.expect("sweep");
    // Attempt 201: its pod, policy and Secret.
    assert_eq!(deleted, 3);
    let pods: Api<Pod> = cluster.api();
    let alive = |p: Option<Pod>| p.is_some_and(|p| p.metadata.deletion_timestamp.is_none());
    assert!(!alive(pods.get_opt(p1.id()).await.unwrap()));
    assert!(alive(pods.get_opt(p2.id()).await.unwrap()));
    assert!(alive(pods.get_opt(pb.id()).await.unwrap()));
    assert_eq!(cluster.sweep_run(&a1.run_uid, &[]).await.expect("sweep"), 2);
    let left = pods
        .list(&ListParams::default().labels(&format!("skillscope/run-uid={}", a1.run_uid)))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .count();
    assert_eq!(left, 0);
    pb.health().await.expect("the other run's pod is untouched");

    sb.close().await;
}

#[tokio::test]
async fn helpers_a_killed_process_left_are_swept_by_age_and_only_helpers() {
    // A namespace of its own: the preflight tests' probes are helpers too.
    let scratch = Scratch::new("helpers").await;
    let cluster = cluster_in(Some(&scratch.name)).await;
    let b = trial(204);
    let sb = site(&cluster, &b, &[]).await;
    let pb = sb
        .start(&busybox_env(Role::Agent).await)
        .await
        .expect("trial pod");
    let pods: Api<Pod> = cluster.api();
    let alive = |p: Option<Pod>| p.is_some_and(|p| p.metadata.deletion_timestamp.is_none());
    let mut helper_env = busybox_env(Role::Helper).await;
    helper_env.static_shell = false;
    helper_env.command = PodCommand::Exact {
        command: Some(vec!["/bin/busybox".into(), "sleep".into(), "300".into()]),
        args: None,
    };
    let mut helper = build_pod("ss-test-helper", &b, &helper_env, None, None).unwrap();
    helper
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("skillscope/helper".into(), "test".into());
    let helper = TrialPod::create(&cluster, &helper, std::time::Duration::from_secs(120))
        .await
        .expect("helper pod");
    assert_eq!(
        cluster
            .sweep_helpers(std::time::Duration::from_secs(3600))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        cluster
            .sweep_helpers(std::time::Duration::ZERO)
            .await
            .unwrap(),
        1
    );
    assert!(!alive(pods.get_opt(helper.id()).await.unwrap()));
    pb.health().await.expect("trial pods are no helpers");
    sb.close().await;
    scratch.delete().await;
}

#[tokio::test]
async fn capacity_comes_from_the_nodes_and_pushed_images_have_their_digest() {
    let cluster = cluster().await;
    let cap = cluster.capacity().await.expect("capacity");
    assert!(cap.nodes >= 1, "{cap:?}");
    assert!(cap.cpus >= 1.0 && cap.memory_bytes > 1 << 30, "{cap:?}");
    let image = static_image().await;
    let (_, registry) = crate::harness::env();
    let digest = manifest_digest(&registry, STATIC_REPO, "1")
        .await
        .expect("registry");
    assert_eq!(digest.as_deref(), Some(image.digest.as_str()));
    assert!(image.reference.ends_with(&format!("@{}", image.digest)));
    assert!(cluster.ping().await.expect("version").starts_with('v'));
}
