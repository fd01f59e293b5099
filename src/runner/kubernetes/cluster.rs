//! One connected place on a cluster: a namespace reached through a kubeconfig context, with the
//! cluster's capacity and a run's sweep.

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod, Secret};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use super::fault::{KubeError, KubeFault};
use super::labels;
use super::quantity;

/// How to reach a cluster: a kubeconfig (`None`: `KUBECONFIG`, a `:`-separated list merged as
/// kubectl merges it, else `~/.kube/config`), a context in it (`None`: its current context), a
/// namespace (`None`: the context's, else `default`) and the image registry the cluster pulls
/// task images from (`host:port`, as pushed to from this machine).
#[derive(Debug, Clone, Default)]
pub struct ClusterSpec {
    /// Kubeconfig file.
    pub kubeconfig: Option<PathBuf>,
    /// Context name.
    pub context: Option<String>,
    /// Namespace.
    pub namespace: Option<String>,
    /// Image registry (`host:port`).
    pub registry: Option<String>,
}

/// What the cluster's schedulable, Ready nodes can give pods (their allocatable resources,
/// summed); pending pods wait for more.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClusterCapacity {
    /// CPU cores.
    pub cpus: f64,
    /// Memory in bytes.
    pub memory_bytes: u64,
    /// Ready, schedulable nodes counted.
    pub nodes: usize,
}

/// A namespace of a connected cluster. Cheap to clone (the client is shared).
#[derive(Clone)]
pub struct Cluster {
    client: Client,
    namespace: String,
    context: String,
    registry: Option<String>,
}

/// Timeouts of API calls: connecting, and any one read (an exec's stream stays alive through
/// the client's WebSocket pings every 60 s).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl Cluster {
    /// Reads the kubeconfig and connects (no request is made: see [`Cluster::ping`]).
    ///
    /// # Errors
    /// [`KubeFault::Config`] naming what is wrong: no kubeconfig at all, a file that cannot be
    /// read or parsed, a context the kubeconfig does not have (listing those it has), a context
    /// whose cluster or user is missing.
    pub async fn connect(spec: &ClusterSpec) -> Result<Cluster, KubeError> {
        let kubeconfig = read_kubeconfig(spec)?;
        let contexts: Vec<String> = kubeconfig.contexts.iter().map(|c| c.name.clone()).collect();
        let context = match spec.context.clone().or(kubeconfig.current_context.clone()) {
            Some(c) if !c.is_empty() => c,
            _ => {
                return Err(KubeError::new(
                    "reading the kubeconfig",
                    KubeFault::Config,
                    format!(
                        "it names no current context: pass a context (it has: {})",
                        list_or_none(&contexts)
                    ),
                ));
            }
        };
        if !contexts.contains(&context) {
            return Err(KubeError::new(
                "reading the kubeconfig",
                KubeFault::Config,
                format!(
                    "context '{context}' is not in it (it has: {})",
                    list_or_none(&contexts)
                ),
            ));
        }
        let options = KubeConfigOptions {
            context: Some(context.clone()),
            ..Default::default()
        };
        let mut config = Config::from_custom_kubeconfig(kubeconfig, &options)
            .await
            .map_err(|e| {
                KubeError::new(
                    format!("using context '{context}' of the kubeconfig"),
                    KubeFault::Config,
                    e.to_string(),
                )
            })?;
        config.connect_timeout = Some(CONNECT_TIMEOUT);
        let namespace = spec
            .namespace
            .clone()
            .unwrap_or_else(|| config.default_namespace.clone());
        let client = Client::try_from(config)
            .map_err(|e| KubeError::kube(format!("connecting to context '{context}'"), &e))?;
        Ok(Cluster {
            client,
            namespace,
            context,
            registry: spec.registry.clone(),
        })
    }

    /// The client (for calls this layer does not wrap).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The namespace trials run in.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The kubeconfig context used.
    pub fn context(&self) -> &str {
        &self.context
    }

    /// `<context>/<namespace>`, how this place is named in messages and the dashboard.
    pub fn name(&self) -> String {
        format!("{}/{}", self.context, self.namespace)
    }

    /// The registry task images are pushed to (`host:port`), if one was given.
    pub fn registry(&self) -> Option<&str> {
        self.registry.as_deref()
    }

    /// Namespaced API of kind `K`.
    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Asks the API server for its version.
    ///
    /// # Errors
    /// [`KubeFault::ApiUnreachable`], [`KubeFault::ApiTimeout`] or [`KubeFault::ApiError`].
    pub async fn ping(&self) -> Result<String, KubeError> {
        let v =
            self.client.apiserver_version().await.map_err(|e| {
                KubeError::kube(format!("asking {} for its version", self.name()), &e)
            })?;
        Ok(v.git_version)
    }

    /// The Ready, schedulable nodes' allocatable CPUs and memory, summed.
    ///
    /// # Errors
    /// [`KubeError`] when the nodes cannot be listed (RBAC: `list nodes` is cluster-scoped and
    /// optional; without it the caller's own concurrency is the only cap).
    pub async fn capacity(&self) -> Result<ClusterCapacity, KubeError> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let list = nodes
            .list(&ListParams::default())
            .await
            .map_err(|e| KubeError::kube("listing the cluster's nodes", &e))?;
        Ok(capacity_of(&list.items))
    }

    /// Deletes every pod, Secret and NetworkPolicy of run `run_uid` in the namespace (by the
    /// run-uid label; never another run's), except those of the attempts in `keep`. Returns how
    /// many objects were deleted. Pods go with no grace period.
    ///
    /// # Errors
    /// [`KubeError`] when listing or a deletion fails (a deletion racing another is no error).
    pub async fn sweep_run(&self, run_uid: &str, keep: &[i64]) -> Result<usize, KubeError> {
        let mut selector = format!(
            "{}={},{}={}",
            labels::MANAGED_BY,
            labels::MANAGED_BY_VALUE,
            labels::RUN_UID,
            labels::value(run_uid)
        );
        if !keep.is_empty() {
            let ids: Vec<String> = keep.iter().map(i64::to_string).collect();
            selector.push_str(&format!(
                ",{} notin ({})",
                labels::ATTEMPT_ID,
                ids.join(",")
            ));
        }
        self.delete_selected(&selector).await
    }

    /// Deletes helper pods (preflight probes) older than `age`; returns how many.
    ///
    /// # Errors
    /// [`KubeError`] when listing or a deletion fails.
    pub async fn sweep_helpers(&self, age: Duration) -> Result<usize, KubeError> {
        let selector = format!(
            "{}={},{}",
            labels::MANAGED_BY,
            labels::MANAGED_BY_VALUE,
            labels::HELPER
        );
        let pods: Api<Pod> = self.api();
        let list = pods
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|e| KubeError::kube("listing helper pods", &e))?;
        let now = chrono::Utc::now();
        let mut n = 0;
        for p in list.items {
            let created = p.metadata.creation_timestamp.as_ref().map(|t| t.0);
            let old = created.is_none_or(|t| {
                let t = chrono::DateTime::<chrono::Utc>::from_timestamp(t.as_second(), 0)
                    .unwrap_or(now);
                (now - t).to_std().unwrap_or_default() >= age
            });
            if old && let Some(name) = p.metadata.name {
                delete_pod(&pods, &name).await?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Deletes the pods, Secrets and NetworkPolicies matching a label selector; returns how many.
    pub(crate) async fn delete_selected(&self, selector: &str) -> Result<usize, KubeError> {
        let lp = ListParams::default().labels(selector);
        let mut n = 0;
        let pods: Api<Pod> = self.api();
        for p in list_names(&pods, &lp, "pods").await? {
            delete_pod(&pods, &p).await?;
            n += 1;
        }
        let secrets: Api<Secret> = self.api();
        for s in list_names(&secrets, &lp, "secrets").await? {
            delete_quiet(&secrets, &s, &DeleteParams::default(), "secret").await?;
            n += 1;
        }
        let policies: Api<NetworkPolicy> = self.api();
        for s in list_names(&policies, &lp, "network policies").await? {
            delete_quiet(&policies, &s, &DeleteParams::default(), "network policy").await?;
            n += 1;
        }
        Ok(n)
    }
}

/// Sums the allocatable resources of Ready nodes without `spec.unschedulable`.
pub fn capacity_of(nodes: &[Node]) -> ClusterCapacity {
    let mut cap = ClusterCapacity {
        cpus: 0.0,
        memory_bytes: 0,
        nodes: 0,
    };
    for node in nodes {
        if node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
            continue;
        }
        let Some(status) = &node.status else { continue };
        let ready = status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        if !ready {
            continue;
        }
        let Some(alloc) = &status.allocatable else {
            continue;
        };
        cap.nodes += 1;
        cap.cpus += alloc
            .get("cpu")
            .and_then(|q| quantity::parse(&q.0))
            .unwrap_or(0.0);
        cap.memory_bytes += alloc
            .get("memory")
            .and_then(|q| quantity::parse(&q.0))
            .unwrap_or(0.0) as u64;
    }
    cap
}

fn read_kubeconfig(spec: &ClusterSpec) -> Result<Kubeconfig, KubeError> {
    let context = "reading the kubeconfig";
    if let Some(path) = &spec.kubeconfig {
        return Kubeconfig::read_from(path).map_err(|e| {
            KubeError::new(
                context,
                KubeFault::Config,
                format!("{}: {e}", path.display()),
            )
        });
    }
    let from_env = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty());
    let default = dirs::home_dir().map(|h| h.join(".kube").join("config"));
    if from_env.is_none() && !default.as_ref().is_some_and(|p| p.exists()) {
        return Err(KubeError::new(
            context,
            KubeFault::Config,
            "no kubeconfig: KUBECONFIG is not set and ~/.kube/config does not exist \
             (set KUBECONFIG or pass the kubeconfig's path)",
        ));
    }
    Kubeconfig::read().map_err(|e| {
        let which = from_env
            .map(|v| format!("KUBECONFIG={}", v.to_string_lossy()))
            .unwrap_or_else(|| "~/.kube/config".into());
        KubeError::new(context, KubeFault::Config, format!("{which}: {e}"))
    })
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

async fn list_names<K>(api: &Api<K>, lp: &ListParams, what: &str) -> Result<Vec<String>, KubeError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let list = api.list(lp).await.map_err(|e| {
        KubeError::kube(
            format!(
                "listing {what} ({})",
                lp.label_selector.as_deref().unwrap_or("")
            ),
            &e,
        )
    })?;
    Ok(list
        .items
        .into_iter()
        .filter_map(|o| o.meta().name.clone())
        .collect())
}

/// Deletes pod `name` at once (grace period 0); a pod already gone is no error.
pub(crate) async fn delete_pod(pods: &Api<Pod>, name: &str) -> Result<(), KubeError> {
    delete_quiet(pods, name, &DeleteParams::default().grace_period(0), "pod").await
}

async fn delete_quiet<K>(
    api: &Api<K>,
    name: &str,
    dp: &DeleteParams,
    what: &str,
) -> Result<(), KubeError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, dp).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(KubeError::kube(format!("deleting {what} {name}"), &e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeCondition, NodeSpec, NodeStatus};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    fn node(cpu: &str, memory: &str, ready: bool, unschedulable: bool) -> Node {
        Node {
            spec: Some(NodeSpec {
                unschedulable: Some(unschedulable),
                ..Default::default()
            }),
            status: Some(NodeStatus {
                allocatable: Some(
                    [
                        ("cpu".to_string(), Quantity(cpu.into())),
                        ("memory".to_string(), Quantity(memory.into())),
                    ]
                    .into(),
                ),
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "Unknown" }.into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn capacity_counts_ready_schedulable_nodes_only() {
        let cap = capacity_of(&[
            node("2", "24Gi", true, false),
            node("1500m", "1Gi", true, false),
            node("64", "1Ti", false, false),
            node("64", "1Ti", true, true),
        ]);
        assert_eq!(cap.nodes, 2);
        assert_eq!(cap.cpus, 3.5);
        assert_eq!(cap.memory_bytes, 25 * 1024 * 1024 * 1024);
    }

    #[tokio::test]
    async fn a_missing_context_is_named_with_those_the_kubeconfig_has() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n\
             users:\n- name: u\n  user: {}\ncontexts:\n- name: here\n  context: {cluster: c, user: u}\n\
             current-context: here\n",
        )
        .unwrap();
        let spec = ClusterSpec {
            kubeconfig: Some(path.clone()),
            context: Some("elsewhere".into()),
            ..Default::default()
        };
        let err = Cluster::connect(&spec)
            .await
            .err()
            .expect("no such context");
        assert_eq!(err.fault, KubeFault::Config);
        assert!(
            err.message
                .contains("'elsewhere' is not in it (it has: here)"),
            "{err}"
        );
        let spec = ClusterSpec {
            kubeconfig: Some(path),
            ..Default::default()
        };
        let c = Cluster::connect(&spec).await.expect("the current context");
        assert_eq!(c.name(), "here/default");
        let missing = ClusterSpec {
            kubeconfig: Some(dir.path().join("absent")),
            ..Default::default()
        };
        let err = Cluster::connect(&missing).await.err().expect("no file");
        assert_eq!(err.fault, KubeFault::Config);
        assert!(err.message.contains("absent"), "{err}");
    }
}
