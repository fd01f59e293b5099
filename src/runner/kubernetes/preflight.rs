//! What is wrong with a cluster before a run, one line per problem: no kubeconfig, a wrong
//! context, an API server that does not answer, a missing namespace, RBAC missing verbs (each
//! listed), a NetworkPolicy the API will not take, a registry unreachable from this machine or
//! from the cluster's node, an image pull the registry refuses.
//!
//! RBAC is read with SelfSubjectAccessReviews (every authenticated user may ask about itself);
//! the namespace and admission with a dry-run create (a namespace that does not exist answers
//! 404; listing pods there would answer an empty list); the registry from the cluster's side
//! with a probe pod of the image, deleted after.

use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, PostParams};

use super::cluster::{Cluster, ClusterSpec};
use super::fault::{KubeError, KubeFault};
use super::labels;
use super::pod::{EnvironmentSpec, PodCommand, Role, TrialLabels, TrialPod, build_pod};
use super::policy::deny_policy;

/// One permission skillscope needs in the namespace: API group, resource (with subresource),
/// verb.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Permission {
    /// API group (`""` for core).
    pub group: &'static str,
    /// Resource.
    pub resource: &'static str,
    /// Subresource (`""` for none).
    pub subresource: &'static str,
    /// Verb.
    pub verb: &'static str,
}

const fn perm(
    group: &'static str,
    resource: &'static str,
    subresource: &'static str,
    verb: &'static str,
) -> Permission {
    Permission {
        group,
        resource,
        subresource,
        verb,
    }
}

/// Every permission a run needs in its namespace (docs/operations.md's Role grants exactly
/// these). WebSocket exec is a GET on clusters before 1.30 and a create after, so `pods/exec`
/// needs both.
pub const REQUIRED: [Permission; 14] = [
    perm("", "pods", "", "create"),
    perm("", "pods", "", "get"),
    perm("", "pods", "", "list"),
    perm("", "pods", "", "delete"),
    perm("", "pods", "exec", "create"),
    perm("", "pods", "exec", "get"),
    perm("", "secrets", "", "create"),
    perm("", "secrets", "", "get"),
    perm("", "secrets", "", "list"),
    perm("", "secrets", "", "delete"),
    perm("networking.k8s.io", "networkpolicies", "", "create"),
    perm("networking.k8s.io", "networkpolicies", "", "get"),
    perm("networking.k8s.io", "networkpolicies", "", "list"),
    perm("networking.k8s.io", "networkpolicies", "", "delete"),
];

/// What to check besides the connection.
#[derive(Debug, Clone, Default)]
pub struct PreflightSpec {
    /// How to reach the cluster.
    pub cluster: ClusterSpec,
    /// An image in the registry (a digest reference) to pull on the cluster's node with a probe
    /// pod; `None`: no pull is tried.
    pub probe_image: Option<String>,
    /// How long the probe may take to pull and start (default 2 minutes).
    pub probe_deadline: Option<Duration>,
}

/// Runs every check and returns the problems, one line each (empty: ready to run).
pub async fn preflight(spec: &PreflightSpec) -> Vec<String> {
    let mut problems = Vec::new();
    let cluster = match Cluster::connect(&spec.cluster).await {
        Ok(c) => c,
        Err(e) => return vec![format!("kubernetes: {}", e.message)],
    };
    if let Err(e) = cluster.ping().await {
        return vec![format!(
            "kubernetes: the API server of context '{}' does not answer: {}",
            cluster.context(),
            e.message
        )];
    }
    let ns = cluster.namespace().to_string();
    match namespace_check(&cluster).await {
        Ok(()) => {}
        Err(line) => {
            problems.push(line);
            return problems;
        }
    }
    match missing_permissions(&cluster).await {
        Ok(missing) if missing.is_empty() => {}
        Ok(missing) => problems.push(format!(
            "kubernetes: RBAC in namespace '{ns}' lacks {}",
            group_missing(&missing)
        )),
        Err(e) => problems.push(format!("kubernetes: cannot check RBAC: {e}")),
    }
    if let Err(e) = policy_check(&cluster).await {
        problems.push(format!(
            "kubernetes: the API does not take a NetworkPolicy in '{ns}': {}",
            e.message
        ));
    }
    if let Some(reg) = cluster.registry()
        && let Err(m) = super::registry::ping(reg).await
    {
        problems.push(format!("kubernetes: {m}"));
    }
    if let Some(image) = &spec.probe_image
        && problems.is_empty()
        && let Err(line) = probe_pull(
            &cluster,
            image,
            spec.probe_deadline.unwrap_or(Duration::from_secs(120)),
        )
        .await
    {
        problems.push(line);
    }
    problems
}

/// A dry-run create of a pod: 404 names a missing namespace; other refusals (admission,
/// quota, pod security) are lines of their own.
async fn namespace_check(cluster: &Cluster) -> Result<(), String> {
    let ns = cluster.namespace();
    let pods: Api<Pod> = cluster.api();
    let probe = probe_pod("ss-preflight-dry-run", "skillscope-preflight-dry-run:0")
        .map_err(|m| format!("kubernetes: {m}"))?;
    match pods
        .create(
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &probe,
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Err(format!(
            "kubernetes: namespace '{ns}' does not exist in context '{}' (create it, or choose \
             another namespace)",
            cluster.context()
        )),
        // RBAC is reported verb by verb below.
        Err(kube::Error::Api(s)) if s.code == 403 && s.message.contains("cannot create") => Ok(()),
        Err(e) => Err(format!(
            "kubernetes: a trial's pod would be refused in namespace '{ns}': {}",
            KubeError::kube("", &e).message
        )),
    }
}

/// The permissions of [`REQUIRED`] the connected user lacks.
///
/// # Errors
/// A message when the access reviews themselves fail.
pub async fn missing_permissions(cluster: &Cluster) -> Result<Vec<Permission>, String> {
    let reviews: Api<SelfSubjectAccessReview> = Api::all(cluster.client().clone());
    let mut missing = Vec::new();
    for p in REQUIRED {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    namespace: Some(cluster.namespace().to_string()),
                    group: Some(p.group.to_string()),
                    resource: Some(p.resource.to_string()),
                    subresource: (!p.subresource.is_empty()).then(|| p.subresource.to_string()),
                    verb: Some(p.verb.to_string()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let answer = reviews
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| KubeError::kube("asking the API what this user may do", &e).message)?;
        if !answer.status.is_some_and(|s| s.allowed) {
            missing.push(p);
        }
    }
    Ok(missing)
}

/// `pods: delete, list; pods/exec: get` — missing verbs grouped by resource.
pub fn group_missing(missing: &[Permission]) -> String {
    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    for p in missing {
        let mut name = p.resource.to_string();
        if !p.subresource.is_empty() {
            name = format!("{name}/{}", p.subresource);
        }
        if !p.group.is_empty() {
            name = format!("{name}.{}", p.group);
        }
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, verbs)) => verbs.push(p.verb),
            None => groups.push((name, vec![p.verb])),
        }
    }
    groups
        .iter()
        .map(|(n, v)| format!("{n}: {}", v.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

async fn policy_check(cluster: &Cluster) -> Result<(), KubeError> {
    let policies: Api<NetworkPolicy> = cluster.api();
    let trial = helper_labels();
    let policy = deny_policy("ss-preflight-dry-run", &trial, false);
    match policies
        .create(
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &policy,
        )
        .await
    {
        Ok(_) => Ok(()),
        // RBAC is reported verb by verb.
        Err(kube::Error::Api(s)) if s.code == 403 && s.message.contains("cannot create") => Ok(()),
        Err(e) => Err(KubeError::kube("creating a NetworkPolicy (dry run)", &e)),
    }
}

fn helper_labels() -> TrialLabels {
    TrialLabels {
        run_uid: "preflight".into(),
        trial: "preflight".into(),
        attempt_id: 0,
    }
}

fn probe_pod(name: &str, image: &str) -> Result<Pod, String> {
    let mut spec = EnvironmentSpec::idle(Role::Helper, image);
    spec.static_shell = false;
    spec.command = PodCommand::Exact {
        command: Some(vec!["/bin/busybox".into(), "sleep".into(), "60".into()]),
        args: None,
    };
    spec.cpus = Some(0.1);
    spec.memory_bytes = Some(32 * 1024 * 1024);
    let mut pod = build_pod(name, &helper_labels(), &spec, None, None)?;
    if let Some(l) = pod.metadata.labels.as_mut() {
        l.insert(labels::HELPER.to_string(), "preflight".to_string());
    }
    Ok(pod)
}

/// Pulls `image` on the cluster's node with a probe pod (a busybox image: it sleeps) and names
/// what went wrong: the registry unreachable from the node, or the pull refused.
async fn probe_pull(cluster: &Cluster, image: &str, deadline: Duration) -> Result<(), String> {
    let name = format!(
        "ss-preflight-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let pod = probe_pod(&name, image).map_err(|m| format!("kubernetes: {m}"))?;
    match TrialPod::create(cluster, &pod, deadline).await {
        Ok(p) => {
            p.remove().await;
            Ok(())
        }
        Err(e) if e.fault == KubeFault::ImagePull => Err(pull_problem(image, &e.message)),
        Err(e) => Err(format!(
            "kubernetes: a probe pod of {image} did not start: {}",
            e.message
        )),
    }
}

/// One line for an image pull failure: unreachable (the node could not connect to the
/// registry) or refused (the registry answered no).
pub fn pull_problem(image: &str, message: &str) -> String {
    let registry = image.split('/').next().unwrap_or(image);
    let m = message.to_ascii_lowercase();
    let unreachable = [
        "connection refused",
        "no such host",
        "i/o timeout",
        "no route to host",
        "network is unreachable",
        "server gave http response to https client",
        "tls:",
        "x509",
        "dial tcp",
    ]
    .iter()
    .any(|n| m.contains(n));
    let detail = message.lines().next().unwrap_or("").trim();
    if unreachable {
        format!("kubernetes: registry {registry} is unreachable from the cluster's node: {detail}")
    } else {
        format!(
            "kubernetes: the cluster's node may not pull {image} (the registry refused): {detail}"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_verbs_are_grouped_by_resource() {
        let missing = [REQUIRED[3], REQUIRED[2], REQUIRED[5], REQUIRED[10]];
        assert_eq!(
            group_missing(&missing),
            "pods: delete, list; pods/exec: get; networkpolicies.networking.k8s.io: create"
        );
    }

    #[test]
    fn pull_failures_say_unreachable_or_refused() {
        let img = "127.0.0.1:15000/skillscope/busybox@sha256:ab";
        let unreachable = pull_problem(
            img,
            "ErrImagePull for x: rpc error: failed to do request: Head \"http://127.0.0.1:15000/v2/\": dial tcp 127.0.0.1:15000: connect: connection refused",
        );
        assert!(
            unreachable.contains("registry 127.0.0.1:15000 is unreachable"),
            "{unreachable}"
        );
        let refused = pull_problem(img, "ErrImagePull for x: 127.0.0.1:15000/nope:1: not found");
        assert!(refused.contains("may not pull"), "{refused}");
    }
}
