//! The floor of `bench runner --backend kubernetes`: a bare pod of the trivial task's image (as
//! pushed to the registry) created and waited Running, one exec of `true`, deleted — each through
//! the API with skillscope's own client layer, so the difference to a trial is skillscope's
//! protocol, not the client.

use std::time::{Duration, Instant};

use color_eyre::eyre::{Result, eyre};
use futures_util::StreamExt;

use crate::config::BackendSettings;
use crate::runner::kubernetes::exec::ExecSpec;
use crate::runner::kubernetes::pod::{EnvironmentSpec, PodCommand, TrialLabels, build_pod};
use crate::runner::kubernetes::{Cluster, ClusterSpec, Role, TrialPod};

/// One bare pod's create, exec and delete, seconds.
async fn one(cluster: &Cluster, image: &str, run: &str, i: u32) -> Result<f64> {
    let labels = TrialLabels {
        run_uid: run.to_string(),
        trial: format!("floor__{i}"),
        attempt_id: i64::from(i),
    };
    let mut spec = EnvironmentSpec::idle(Role::Helper, image);
    spec.static_shell = false;
    spec.cpus = Some(0.25);
    spec.command = PodCommand::Exact {
        command: Some(vec!["sleep".into(), "3600".into()]),
        args: None,
    };
    let pod = build_pod(&labels.object_name("floor"), &labels, &spec, None, None)
        .map_err(|m| eyre!(m))?;
    let t0 = Instant::now();
    let p = TrialPod::create(cluster, &pod, Duration::from_secs(120)).await?;
    let out = p.run_output(&ExecSpec::argv(["true"]), 1024).await;
    p.remove().await;
    let code = out?.exit_code;
    if code != 0 {
        return Err(eyre!("`true` exited {code} in a bare pod"));
    }
    Ok(t0.elapsed().as_secs_f64())
}

/// Measures the floor on `image` in the cluster `backend` names: `trials` bare pods serially,
/// then `trials` again `concurrency` at a time.
///
/// # Errors
/// The cluster's errors (a pod that does not start, an exec that fails).
pub(super) async fn measure(
    backend: &BackendSettings,
    image: &str,
    trials: u32,
    concurrency: usize,
) -> Result<Floor> {
    let cluster = Cluster::connect(&ClusterSpec {
        kubeconfig: backend.kubeconfig.clone(),
        context: backend.context.clone(),
        namespace: backend.namespace.clone(),
        registry: backend.registry.clone(),
    })
    .await?;
    let run = format!("bench-floor-{}", uuid::Uuid::new_v4().simple());
    let mut samples = Vec::new();
    let t0 = Instant::now();
    for i in 0..trials {
        samples.push(one(&cluster, image, &run, i).await?);
    }
    let serial = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let results: Vec<Result<f64>> = futures_util::stream::iter(0..trials)
        .map(|i| one(&cluster, image, &run, trials + i))
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    for r in results {
        r?;
    }
    let concurrent = t0.elapsed().as_secs_f64();
    cluster.sweep_run(&run, &[]).await?;
    Ok(Floor {
        samples,
        cpu: None,
        stack: 0.0,
        serial,
        concurrent,
    })
}

/// The floor's figures: `docker run --rm <image> true` through the docker CLI, or a bare pod
/// through the API ([`measure`]).
pub(super) struct Floor {
    /// Seconds of each serial run.
    pub(super) samples: Vec<f64>,
    /// Machine-wide CPU-seconds per run, when readable.
    pub(super) cpu: Option<f64>,
    /// The Docker daemon's and client's CPU-seconds per run.
    pub(super) stack: f64,
    /// Seconds of the serial runs in all.
    pub(super) serial: f64,
    /// Seconds of the same runs at the concurrency asked.
    pub(super) concurrent: f64,
}
