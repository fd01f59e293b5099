//! Preflight against the real cluster: nothing to say when all is well; one line each for a
//! context the kubeconfig lacks, a namespace that does not exist, RBAC missing verbs (listed),
//! an image the registry does not have, and a registry the cluster's node cannot reach.

use k8s_openapi::api::rbac::v1::{PolicyRule, Role as RbacRole, RoleBinding, RoleRef, Subject};
use kube::api::{Api, PostParams};
use skillscope::runner::kubernetes::ClusterSpec;
use skillscope::runner::kubernetes::preflight::{PreflightSpec, preflight};

use crate::harness::{Scratch, cluster_in, kubeconfig_variant, spec, static_image};

#[tokio::test]
async fn a_ready_cluster_has_nothing_to_say() {
    let image = static_image().await.reference.clone();
    let problems = preflight(&PreflightSpec {
        cluster: spec(),
        probe_image: Some(image),
        probe_deadline: None,
    })
    .await;
    assert!(problems.is_empty(), "{problems:?}");
}

#[tokio::test]
async fn each_problem_is_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            ClusterSpec {
                context: Some("no-such-context".into()),
                ..spec()
            },
            "'no-such-context' is not in it (it has: skillscope-local)",
        ),
        (
            ClusterSpec {
                kubeconfig: Some(dir.path().join("absent")),
                ..spec()
            },
            "absent",
        ),
        (
            ClusterSpec {
                namespace: Some("ss-no-such-namespace".into()),
                ..spec()
            },
            "namespace 'ss-no-such-namespace' does not exist",
        ),
    ];
    for (cluster, expected) in cases {
        let p = preflight(&PreflightSpec {
            cluster,
            ..Default::default()
        })
        .await;
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(!p[0].contains('\n') && p[0].contains(expected), "{p:?}");
    }
}

#[tokio::test]
async fn rbac_gaps_are_listed_verb_by_verb() {
    let scratch = Scratch::new("rbac").await;
    let admin = cluster_in(Some(&scratch.name)).await;
    let rule = |groups: &[&str], resources: &[&str], verbs: &[&str]| PolicyRule {
        api_groups: Some(groups.iter().map(|s| s.to_string()).collect()),
        resources: Some(resources.iter().map(|s| s.to_string()).collect()),
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    let role = RbacRole {
        metadata: kube::api::ObjectMeta {
            name: Some("runner".into()),
            ..Default::default()
        },
        // Everything but deleting pods, and exec only by create.
        rules: Some(vec![
            rule(&[""], &["pods"], &["create", "get", "list"]),
            rule(&[""], &["pods/exec"], &["create"]),
            rule(&[""], &["secrets"], &["create", "get", "list", "delete"]),
            rule(
                &["networking.k8s.io"],
                &["networkpolicies"],
                &["create", "get", "list", "delete"],
            ),
        ]),
    };
    let roles: Api<RbacRole> = admin.api();
    roles
        .create(&PostParams::default(), &role)
        .await
        .expect("role");
    let bindings: Api<RoleBinding> = admin.api();
    let binding = RoleBinding {
        metadata: kube::api::ObjectMeta {
            name: Some("runner".into()),
            ..Default::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: "runner".into(),
        },
        subjects: Some(vec![Subject {
            kind: "User".into(),
            name: "skillscope-limited".into(),
            api_group: Some("rbac.authorization.k8s.io".into()),
            ..Default::default()
        }]),
    };
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding");
    let dir = tempfile::tempdir().unwrap();
    let limited = kubeconfig_variant(dir.path(), None, Some("skillscope-limited"));
    let want = vec![format!(
        "kubernetes: RBAC in namespace '{}' lacks pods: delete; pods/exec: get",
        scratch.name
    )];
    // The API server's authorizer learns of a new binding from its cache a moment later (CI:
    // all of `pods` still lacking right after it was made): asked again until it has.
    let mut problems = Vec::new();
    for _ in 0..40 {
        problems = preflight(&PreflightSpec {
            cluster: ClusterSpec {
                kubeconfig: Some(limited.clone()),
                namespace: Some(scratch.name.clone()),
                ..spec()
            },
            ..Default::default()
        })
        .await;
        if problems == want {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    assert_eq!(problems, want);
    scratch.delete().await;
}

#[tokio::test]
async fn pulls_the_registry_refuses_or_cannot_serve_are_named() {
    let (_, registry) = crate::harness::env();
    let digest = static_image().await.digest.clone();
    let absent = preflight(&PreflightSpec {
        cluster: spec(),
        probe_image: Some(format!("{registry}/skillscope/absent@{digest}")),
        probe_deadline: None,
    })
    .await;
    assert_eq!(absent.len(), 1, "{absent:?}");
    assert!(absent[0].contains("may not pull"), "{absent:?}");
    // A port on the node's loopback where nothing listens.
    let unreachable = preflight(&PreflightSpec {
        cluster: spec(),
        probe_image: Some(format!("127.0.0.1:1/skillscope/busybox@{digest}")),
        probe_deadline: None,
    })
    .await;
    assert_eq!(unreachable.len(), 1, "{unreachable:?}");
    assert!(
        unreachable[0].contains("registry 127.0.0.1:1 is unreachable from the cluster's node"),
        "{unreachable:?}"
    );
}
