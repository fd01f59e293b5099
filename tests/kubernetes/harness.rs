//! What the Kubernetes tests share: the cluster and registry the environment names, skillscope's
//! busybox image pushed there once, fresh trial labels, scratch namespaces, a cuttable TCP relay
//! to the API server, and kubeconfig variants (another server, an impersonated user).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, ResourceQuota, ResourceQuotaSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Api, DeleteParams, PostParams};
use skillscope::runner::kubernetes::registry::{PushedImage, ensure_static_image};
use skillscope::runner::kubernetes::{
    Cluster, ClusterSpec, EnvironmentSpec, ExecEvent, ExecStream, KubeError, Role, TrialLabels,
    TrialPod, TrialSite, TrialSiteSpec,
};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::OnceCell;

/// The kubeconfig and registry the environment names; panics with how to get them.
pub fn env() -> (PathBuf, String) {
    let how = "start the test cluster first: eval \"$(scripts/k8s-up.sh)\" (as root); it prints \
               the KUBECONFIG and SKILLSCOPE_REGISTRY these tests need";
    let kubeconfig = std::env::var_os("KUBECONFIG")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| panic!("KUBECONFIG is not set: {how}"));
    let registry = std::env::var("SKILLSCOPE_REGISTRY")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| panic!("SKILLSCOPE_REGISTRY is not set: {how}"));
    (PathBuf::from(kubeconfig), registry)
}

/// The spec of the environment's cluster (its kubeconfig's current context and namespace).
pub fn spec() -> ClusterSpec {
    let (kubeconfig, registry) = env();
    ClusterSpec {
        kubeconfig: Some(kubeconfig),
        registry: Some(registry),
        ..Default::default()
    }
}

/// The environment's cluster, in namespace `ns` when given.
pub async fn cluster_in(ns: Option<&str>) -> Cluster {
    // The layer's warnings (a teardown that failed) show in the test's output.
    let _ = tracing_subscriber::fmt()
        .with_env_filter("warn")
        .with_test_writer()
        .try_init();
    let mut s = spec();
    s.namespace = ns.map(str::to_string);
    let c = Cluster::connect(&s)
        .await
        .expect("connecting to the test cluster");
    c.ping().await.expect("the test cluster answers");
    c
}

/// Creates the ResourceQuota `tight` (`limits.cpu` 200m: no pod that asks for a whole CPU fits)
/// in `cluster`'s namespace and waits, up to 10 s, until the quota controller has filled its
/// status, from when it is enforced.
///
/// # Panics
/// When the quota cannot be created or read.
pub async fn tight_quota(cluster: &Cluster) {
    let quotas: Api<ResourceQuota> = cluster.api();
    let quota = ResourceQuota {
        metadata: kube::api::ObjectMeta {
            name: Some("tight".into()),
            ..Default::default()
        },
        spec: Some(ResourceQuotaSpec {
            hard: Some([("limits.cpu".to_string(), Quantity("200m".into()))].into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    quotas
        .create(&PostParams::default(), &quota)
        .await
        .expect("quota");
    for _ in 0..100 {
        let q = quotas.get("tight").await.unwrap();
        if q.status.and_then(|s| s.hard).is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The environment's cluster in its default namespace.
pub async fn cluster() -> Cluster {
    cluster_in(None).await
}

static STATIC_IMAGE: OnceCell<PushedImage> = OnceCell::const_new();

/// skillscope's busybox image in the registry (pushed once per test binary).
pub async fn static_image() -> &'static PushedImage {
    STATIC_IMAGE
        .get_or_init(|| async {
            let (_, registry) = env();
            let docker = bollard::Docker::connect_with_local_defaults().expect("docker client");
            ensure_static_image(&docker, &registry)
                .await
                .expect("pushing skillscope's busybox to the registry")
        })
        .await
}

/// Labels of a fresh trial of a fresh run.
pub fn trial(attempt_id: i64) -> TrialLabels {
    TrialLabels {
        run_uid: format!("test-{}", uuid::Uuid::new_v4().simple()),
        trial: format!("k8s-test__{attempt_id}"),
        attempt_id,
    }
}

/// A site for `labels` with the static shell.
pub async fn site(cluster: &Cluster, labels: &TrialLabels, values: &[(&str, &str)]) -> TrialSite {
    TrialSite::open(
        cluster.clone(),
        &TrialSiteSpec {
            labels: labels.clone(),
            allow_internet: false,
            verifier_values: values
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            static_image: Some(static_image().await.reference.clone()),
        },
    )
    .await
    .expect("opening the trial's site")
}

/// An idle environment of skillscope's busybox image (a stand-in task image), small enough that
/// many fit on the 2-core test node at once.
pub async fn busybox_env(role: Role) -> EnvironmentSpec {
    let mut e = EnvironmentSpec::idle(role, static_image().await.reference.clone());
    e.cpus = Some(0.1);
    e.memory_bytes = Some(64 * 1024 * 1024);
    e.start_deadline = Duration::from_secs(120);
    e
}

/// A namespace of its own for a test that changes namespace-wide things (a quota, RBAC);
/// deleted when dropped... by [`Scratch::delete`].
pub struct Scratch {
    pub name: String,
    admin: Cluster,
}

impl Scratch {
    /// Creates `ss-test-<what>-<8 hex>`.
    pub async fn new(what: &str) -> Scratch {
        let admin = cluster().await;
        let name = format!(
            "ss-test-{what}-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let api: Api<Namespace> = Api::all(admin.client().clone());
        let ns = Namespace {
            metadata: kube::api::ObjectMeta {
                name: Some(name.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        api.create(&PostParams::default(), &ns)
            .await
            .expect("creating a scratch namespace");
        // The service-account controller must have made `default` before pods are admitted.
        let sas: Api<k8s_openapi::api::core::v1::ServiceAccount> =
            Api::namespaced(admin.client().clone(), &name);
        for _ in 0..100 {
            if sas.get_opt("default").await.ok().flatten().is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Scratch { name, admin }
    }

    /// Deletes the namespace (and everything in it).
    pub async fn delete(self) {
        let api: Api<Namespace> = Api::all(self.admin.client().clone());
        let _ = api.delete(&self.name, &DeleteParams::default()).await;
    }
}

/// A kubeconfig like the environment's with its server moved to `server` (and, when given, its
/// user impersonating `as_user`), written to `dir`.
pub fn kubeconfig_variant(
    dir: &std::path::Path,
    server: Option<&str>,
    as_user: Option<&str>,
) -> PathBuf {
    let (kubeconfig, _) = env();
    let text = std::fs::read_to_string(&kubeconfig).expect("reading the kubeconfig");
    let mut doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).expect("kubeconfig YAML");
    if let Some(server) = server {
        for c in doc["clusters"].as_sequence_mut().expect("clusters") {
            c["cluster"]["server"] = server.into();
        }
    }
    if let Some(user) = as_user {
        for u in doc["users"].as_sequence_mut().expect("users") {
            u["user"]["as"] = user.into();
        }
    }
    let path = dir.join("kubeconfig");
    std::fs::write(&path, serde_yaml_ng::to_string(&doc).expect("YAML")).expect("writing");
    path
}

/// A TCP relay on loopback to the API server whose connections can all be cut at once.
pub struct Relay {
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    cut: Arc<tokio::sync::Notify>,
}

impl Relay {
    /// Starts relaying to the server of the environment's kubeconfig.
    pub async fn start() -> Relay {
        let cluster = cluster().await;
        let upstream = cluster_server(&cluster);
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("address").port();
        let cut = Arc::new(tokio::sync::Notify::new());
        let c = cut.clone();
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let c = c.clone();
                tokio::spawn(async move {
                    let Ok(mut out) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut out) => {}
                        _ = c.notified() => {}
                    }
                });
            }
        });
        Relay {
            url: format!("https://127.0.0.1:{port}"),
            cut,
        }
    }

    /// Cuts every connection open now (new ones are still relayed).
    pub fn cut(&self) {
        self.cut.notify_waiters();
    }
}

fn cluster_server(_c: &Cluster) -> String {
    let (kubeconfig, _) = env();
    let text = std::fs::read_to_string(kubeconfig).expect("kubeconfig");
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).expect("YAML");
    let server = doc["clusters"][0]["cluster"]["server"]
        .as_str()
        .expect("a server")
        .to_string();
    server
        .trim_start_matches("https://")
        .trim_end_matches('/')
        .to_string()
}

/// A site of a fresh trial on the environment's cluster with one running busybox pod of `role`.
pub async fn started(attempt_id: i64, role: Role) -> (Cluster, TrialSite, TrialPod) {
    let cluster = cluster().await;
    let labels = trial(attempt_id);
    let site = site(&cluster, &labels, &[]).await;
    let pod = site
        .start(&busybox_env(role).await)
        .await
        .expect("the pod runs");
    (cluster, site, pod)
}

/// Reads `stream` to its end (within 60 s): the exit code, or the fault that ended it.
pub async fn end_of(stream: &mut ExecStream) -> Result<i32, KubeError> {
    tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            match stream.next().await {
                Some(Ok(ExecEvent::Exit(code))) => break Ok(code),
                Some(Ok(_)) => continue,
                Some(Err(e)) => break Err(e),
                None => panic!("the stream ended without an exit code or a fault"),
            }
        }
    })
    .await
    .expect("the exec ends within 60 s")
}
