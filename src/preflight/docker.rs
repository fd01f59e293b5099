//! Docker hosts and disks: every host of the run answers; a local host's data root has room for
//! the task images; this machine has room where the database and the trial folders go.

use std::path::Path;

use super::{Check, timed};
use crate::engine::RunRequest;
use crate::fs::{file_system, file_system_of_nearest, human_bytes};
use crate::runner::Host;

/// Below this much free space a build or a trial fails on a full disk.
pub const MIN_FREE: u64 = 2 << 30;

/// A rough size of one task's images (its conditions share the base layers), for the warning
/// when a host's free space looks short. Images already built need none of it, so it only warns.
pub const PER_TASK_IMAGE: u64 = 512 << 20;

/// Below this much free space where the database and trial folders go, the run would stop on a
/// full disk here.
pub const MIN_FREE_HERE: u64 = 1 << 30;

/// The cluster's checks of a run on Kubernetes: one failed check per problem the client
/// layer's preflight names (kubeconfig, context, namespace, RBAC verbs, NetworkPolicy,
/// registry), else one that passed.
async fn cluster_checks(run: &RunRequest) -> Vec<Check> {
    let b = &run.settings.backend;
    let spec = crate::runner::kubernetes::preflight::PreflightSpec {
        cluster: crate::runner::kubernetes::ClusterSpec {
            kubeconfig: b.kubeconfig.clone(),
            context: b.context.clone(),
            namespace: b.namespace.clone(),
            registry: b.registry.clone(),
        },
        ..Default::default()
    };
    let mut out: Vec<Check> = Vec::new();
    if b.registry.is_none() {
        out.push(Check::fail(
            "kubernetes",
            "image registry",
            "none given",
            "pass --registry HOST:PORT, set [backend] registry or SKILLSCOPE_REGISTRY",
        ));
    }
    for line in crate::runner::kubernetes::preflight::preflight(&spec).await {
        out.push(Check::fail(
            "kubernetes",
            "cluster",
            crate::sanitize::text(&line),
            "see docs/operations.md, \"Running on a Kubernetes cluster\"",
        ));
    }
    if out.is_empty() {
        out.push(Check::ok(
            "kubernetes",
            "cluster",
            "reachable; namespace, RBAC, NetworkPolicy and registry in order",
        ));
    }
    out
}

/// The Docker and disk checks of `run`, whose database is `db` (and the cluster's, when the
/// run's trials are pods: images are still built on the Docker daemon).
pub async fn checks(run: &RunRequest, db: &Path) -> Vec<Check> {
    let mut cluster = Vec::new();
    let mut settings = run.settings.clone();
    if settings.backend.kind == crate::runner::backend::BackendKind::Kubernetes {
        cluster = cluster_checks(run).await;
        settings.backend = Default::default();
    }
    let backend = crate::engine::backend_of(&settings);
    let n_tasks = count_tasks(run);
    let places = backend.places();
    let local = std::sync::atomic::AtomicBool::new(false);
    let hosts = places.into_iter().enumerate().map(|(i, p)| {
        let backend = backend.clone();
        let local = &local;
        async move {
            let what = format!("Docker host {}", p.name);
            let connect = async {
                match backend.connect(i, None).await {
                    Ok(h) => {
                        local.fetch_or(h.local(), std::sync::atomic::Ordering::Relaxed);
                        host_check(h.as_ref(), what.clone(), n_tasks).await
                    }
                    Err(e) => Check::fail(
                        "docker",
                        what.clone(),
                        crate::sanitize::text(&e.to_string()),
                        "start dockerd (scripts/docker-up.sh) or fix --docker-host / [run] docker_hosts",
                    ),
                }
            };
            timed(
                "docker",
                &what,
                "start dockerd (scripts/docker-up.sh) or fix --docker-host / [run] docker_hosts",
                connect,
            )
            .await
        }
    });
    let mut out = futures_util::future::join_all(hosts).await;
    // A daemon on this machine runs its containers on this kernel; a cluster's nodes and a
    // remote daemon's kernels are not read from here.
    if cluster.is_empty() && local.into_inner() {
        let scope = std::fs::read_to_string(YAMA_PTRACE_SCOPE).ok();
        out.push(ptrace_check(scope.as_deref()));
    }
    let db_folder = db
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    for (what, path) in [
        ("disk for the database", db_folder),
        ("disk for the trial folders", run.jobs_dir.clone()),
    ] {
        out.push(here_check(what, &path));
    }
    out.extend(cluster);
    out
}

/// Where this kernel keeps Yama's `ptrace` scope.
const YAMA_PTRACE_SCOPE: &str = "/proc/sys/kernel/yama/ptrace_scope";

/// Whether an agent can attach with `ptrace` to skillscope's PID 1 of its own environment, from
/// Yama's `ptrace_scope` as read on this machine (`None`: the kernel has no Yama): a warning at 0
/// or without Yama (Docker's default seccomp profile allows `ptrace` and the agent runs as root),
/// since a process held by `ptrace` outlives `kill -9 -1` (docs/limitations.md, *`ptrace` of PID
/// 1*); ok at 1 or more (PID 1 is no descendant of the agent's processes).
pub fn ptrace_check(scope: Option<&str>) -> Check {
    const WHAT: &str = "ptrace of an environment's PID 1";
    const FIX: &str = "set `kernel.yama.ptrace_scope = 1` (sysctl) on hosts that run untrusted agents;                        docs/limitations.md says what an agent can do otherwise";
    match scope.map(str::trim).map(str::parse::<u32>) {
        Some(Ok(n)) if n >= 1 => Check::ok(
            "docker",
            WHAT,
            format!("refused: Yama's ptrace_scope is {n}"),
        ),
        Some(Ok(n)) => Check::warn(
            "docker",
            WHAT,
            format!("allowed: Yama's ptrace_scope is {n}"),
            FIX,
        ),
        Some(Err(_)) => Check::warn(
            "docker",
            WHAT,
            "allowed, as far as can be told: Yama's ptrace_scope could not be read",
            FIX,
        ),
        None => Check::warn("docker", WHAT, "allowed: this kernel has no Yama", FIX),
    }
}

/// Tasks the run selects (its filter, else the folder's task folders), for the disk estimate.
fn count_tasks(run: &RunRequest) -> u64 {
    if !run.task_filter.is_empty() {
        return run.task_filter.len() as u64;
    }
    std::fs::read_dir(&run.tasks_dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.path().join("task.toml").is_file())
                .count() as u64
        })
        .unwrap_or(0)
}

async fn host_check(host: &dyn Host, what: String, n_tasks: u64) -> Check {
    let capacity = host.capacity();
    let facts = format!(
        "Docker {}, {} CPUs, {} memory",
        host.version(),
        capacity.cpus,
        human_bytes(capacity.memory_bytes.max(0) as u64)
    );
    let Some(root) = host.data_root().map(str::to_string) else {
        return Check::ok(
            "docker",
            what,
            format!("{facts}; its disk is not measured from here (a remote host)"),
        );
    };
    let Some(fs) = file_system(Path::new(&root)) else {
        return Check::ok(
            "docker",
            what,
            format!("{facts}; the free space of {root} could not be read"),
        );
    };
    let need = n_tasks.saturating_mul(PER_TASK_IMAGE).max(MIN_FREE);
    let free = human_bytes(fs.free_bytes);
    if fs.free_bytes < MIN_FREE {
        Check::fail(
            "docker",
            what,
            format!("{facts}; only {free} free in {root}: image builds would fail on a full disk"),
            format!(
                "free space in {root} (`docker system prune`, remove old images) to at least {}",
                human_bytes(MIN_FREE)
            ),
        )
    } else if fs.free_bytes < need {
        Check::warn(
            "docker",
            what,
            format!(
                "{facts}; {free} free in {root}, less than the {} that {n_tasks} task images may take (about {} each; images already built need none)",
                human_bytes(need),
                human_bytes(PER_TASK_IMAGE)
            ),
            format!("watch the disk of {root}; a full disk stops the run cleanly (resumable)"),
        )
    } else {
        Check::ok("docker", what, format!("{facts}; {free} free in {root}"))
    }
}

/// Whether the folder `path` (the database's or the trial folders') can take files on this
/// machine: it is a folder (or can be made under its nearest existing folder), a file can be
/// written there — a read-only mount, a read-only folder or missing permission fail here, once,
/// instead of trial by trial — and its disk has room. Nothing is left behind (the probe is an
/// unnamed temporary file).
pub fn here_check(what: &'static str, path: &Path) -> Check {
    if let Some(refused) = writable_check(what, path) {
        return refused;
    }
    let Some(fs) = file_system_of_nearest(path) else {
        return Check::ok("disk", what, format!("{}: not measured", path.display()));
    };
    let free = human_bytes(fs.free_bytes);
    if fs.read_only {
        Check::fail(
            "disk",
            what,
            format!("{} is on a read-only file system", path.display()),
            "pass --db / --jobs-dir (or the plan's jobs_dir) on a writable disk",
        )
    } else if fs.free_bytes < MIN_FREE_HERE {
        Check::fail(
            "disk",
            what,
            format!("only {free} free for {}", path.display()),
            format!(
                "free space there (at least {}) or pass --db / --jobs-dir elsewhere",
                human_bytes(MIN_FREE_HERE)
            ),
        )
    } else {
        Check::ok("disk", what, format!("{free} free for {}", path.display()))
    }
}

/// The part of [`here_check`] no run may start without, whatever its agent: `Some` failed check
/// when `path` is not a folder or nothing can be written there (a read-only mount or folder,
/// missing permission); `None` when a file can be written. Free space is not judged here: a
/// run on a nearly full disk starts and stops cleanly when it fills (the preflight of a paid
/// run refuses it earlier, [`here_check`]).
pub fn writable_check(what: &'static str, path: &Path) -> Option<Check> {
    let fix = "pass --db / --jobs-dir (or the plan's jobs_dir) on a writable disk";
    if path.exists() && !path.is_dir() {
        return Some(Check::fail(
            "disk",
            what,
            format!("{} is not a folder", path.display()),
            fix,
        ));
    }
    let nearest = path
        .ancestors()
        .find(|a| !a.as_os_str().is_empty() && a.is_dir())
        .unwrap_or(Path::new("."));
    if let Err(e) = tempfile::tempfile_in(nearest) {
        return Some(Check::fail(
            "disk",
            what,
            format!("{}: nothing can be written there ({e})", path.display()),
            fix,
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preflight::Verdict;

    #[test]
    fn ptrace_of_pid_1_is_a_warning_unless_yama_refuses_it() {
        for (scope, verdict) in [
            (None, Verdict::Warn),
            (Some("0\n"), Verdict::Warn),
            (Some("garbage"), Verdict::Warn),
            (Some("1\n"), Verdict::Ok),
            (Some("3"), Verdict::Ok),
        ] {
            let c = ptrace_check(scope);
            assert_eq!(c.verdict, verdict, "{scope:?}: {c:?}");
            assert_eq!(
                c.fix.is_some(),
                verdict == Verdict::Warn,
                "{scope:?}: {c:?}"
            );
        }
        assert!(ptrace_check(None).detail.contains("no Yama"));
    }
}
