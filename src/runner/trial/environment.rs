//! The environment phase: the trial folder, the task's checks, the image (built or reused), the
//! agent's preparation, the compose services, the trial's own network and the started agent
//! container — then the attempt in it ([`super::agent`]) and its teardown handed to the reaper.
//!
//! Nothing of this machine's trial folder is mounted into the container: `/logs` is copied out
//! through the Docker API ([`super::handover`]), so the container can neither see the folder's
//! path nor write into it. The agent container is kept to itself ([`ContainerSpec::hardened`],
//! the process and memory limits of [`crate::runner::limits`]), and the trial's environment
//! values reach it only through each exec ([`TrialContainer::with_env`]).

use std::collections::HashMap;

use super::agent::in_container;
use super::evidence::Evidence;
use super::teardown::Teardown;
use super::{Done, Failed, Scope};
use crate::domain::Outcome;
use crate::runner::container::{ContainerSpec, TrialContainer};
use crate::runner::events::{Step, TrialEvent};
use crate::runner::network::TrialNetwork;
use crate::runner::{labels, services};
use crate::skillsbench::Task;
use crate::skillsbench::env::{self as task_env, EnvValues, MissingEnvPolicy};

/// Writes a small file of the trial folder (never through a link); a failure is only logged,
/// as the attempt's outcome never depends on it.
pub(super) fn note_file(path: &std::path::Path, text: &str) {
    if let Err(e) = crate::fs::write_fresh(path, text.as_bytes()) {
        tracing::warn!(path = %path.display(), error = %e, "cannot write a trial file");
    }
}

pub(super) async fn attempt(scope: &Scope<'_>, evidence: &mut Evidence) -> Result<Done, Failed> {
    let Scope {
        job,
        env,
        cancel,
        values,
        ..
    } = *scope;
    let task = &job.task;
    let dir = &job.trial_dir;
    for sub in ["agent", "verifier", "environment"] {
        crate::fs::create_dir_within(dir, std::path::Path::new(sub))
            .map_err(|e| Failed::io("cannot create the trial folder", &dir.join(sub), e))?;
    }
    let build_log = dir.join("environment/build.log");
    if !task.is_runnable() {
        let msg = format!("task {} cannot run: {}", task.id, task.problems.join("; "));
        note_file(&build_log, &format!("{msg}\n"));
        return Err(Failed::new(Outcome::BuildError, msg));
    }
    // Values the task needs and nobody set: refused before anything is spent, or marked.
    let missing = task_env::missing(task, env.agent.runs_solution(), values);
    if !missing.is_empty() {
        scope
            .tell(TrialEvent::MissingEnv(
                missing.iter().map(|m| m.variable.clone()).collect(),
            ))
            .await;
        let what: Vec<String> = missing.iter().map(task_env::MissingEnv::describe).collect();
        if env.missing_env == MissingEnvPolicy::Allow {
            note_file(
                &dir.join("environment/missing-env.txt"),
                &format!(
                    "run with --allow-missing-env: these values are empty in this trial: {}\n",
                    what.join("; ")
                ),
            );
        } else {
            let msg = format!(
                "refused: task {} needs environment values that are not set: {} (pass them with --env, or run with --allow-missing-env)",
                task.id,
                what.join("; ")
            );
            note_file(&build_log, &format!("{msg}\n"));
            return Err(Failed::new(Outcome::BuildError, msg));
        }
    }
    let t0 = std::time::Instant::now();
    let image = tokio::select! {
        r = env.images.ensure(&env.host, task, &job.condition, task.build_timeout()) => r,
        _ = cancel.token.cancelled() => return Err(cancel.failed("stopped while building")),
    };
    scope.took(Step::Image, t0).await;
    let image = match image {
        Ok(i) => {
            note_file(&build_log, i.log.as_str());
            i
        }
        Err(e) => {
            note_file(&build_log, &e.log_text());
            return Err(match e.fault {
                Some(k) => Failed::fault(k, e.message),
                None => Failed::new(Outcome::BuildError, e.message),
            });
        }
    };
    scope
        .tell(TrialEvent::Image {
            tag: image.tag.clone(),
            builds: serde_json::to_value(&image.builds).ok(),
        })
        .await;
    // With a local daemon the agent's own read-only folders (the oracle's solution, a harness
    // kit) are mounted; a remote daemon gets copies. Never the trial folder.
    let mount_agent_files = env.host.local && !env.copy_logs;
    let mut agent_binds: Vec<String> = Vec::new();
    if mount_agent_files {
        for (host, cont) in env.agent.local_mounts(task) {
            agent_binds.push(format!("{}:{cont}:ro", host.display()));
        }
    }

    let t0 = std::time::Instant::now();
    let prepared = tokio::select! {
        r = env.agent.prepare(&env.host) => r,
        _ = cancel.token.cancelled() => return Err(cancel.failed("stopped while the agent was prepared")),
    };
    scope.took(Step::PrepareAgent, t0).await;
    agent_binds.extend(
        prepared
            .map_err(|e| Failed::runner(e, &format!("preparing agent {}", env.agent.name())))?,
    );

    let env_cfg = &task.config.environment;
    // A request above the host's is cut to it, and the trial says so.
    let limits = crate::runner::limits::Limits::on(env_cfg, &env.host);
    scope.tell(TrialEvent::Clamped(limits.clamped())).await;
    let mut spec = ContainerSpec {
        image: image.tag.clone(),
        name: format!(
            "ss-{}-{}",
            crate::skillsbench::condition::docker_safe_name(&job.row.trial_name.replace("__", "-")),
            job.row.id
        ),
        labels: HashMap::from([
            (labels::MANAGED.to_string(), "1".to_string()),
            (labels::RUN.to_string(), job.run_name.clone()),
            (labels::RUN_UID.to_string(), job.run_uid.clone()),
            (labels::TRIAL.to_string(), job.row.trial_name.clone()),
            (labels::ATTEMPT_ID.to_string(), job.row.id.to_string()),
            (labels::CONTENT_HASH.to_string(), image.hash.clone()),
        ]),
        env: container_env(&env.extra_env, task, values),
        binds: env.binds.clone(),
        cpus: limits.cpus,
        memory_bytes: limits.memory_mb.map(|m| (m as i64) * 1024 * 1024),
        pids_limit: Some(limits.pids_limit as i64),
        hardened: true,
        network_none: !env_cfg.allow_internet,
        extra_hosts: env.agent.extra_hosts(),
        ..Default::default()
    };
    // A compose task's services start first (none for a task without a compose file).
    let service_input = services::ServicesInput {
        host: &env.host,
        images: &env.images,
        task,
        trial_dir: dir,
        env_values: values,
        main_image: &image.tag,
        cancel: &cancel.token,
    };
    let t0 = std::time::Instant::now();
    let services = services::start(&service_input, &mut spec).await;
    scope.took(Step::Services, t0).await;
    let services = services.map_err(|e| match e {
        services::ServiceError::Task(m) => Failed::new(Outcome::BuildError, m),
        services::ServiceError::Runner(e) => Failed::runner(e, "starting the task's services"),
        services::ServiceError::Cancelled => {
            cancel.failed("stopped while the task's services started")
        }
    })?;
    let mut teardown = Teardown::default();
    // A task on the internet without networks of its own gets a bridge of its own.
    if !spec.network_none && spec.networks.is_empty() && services.is_empty() {
        let name = format!("{}-net", spec.name);
        let t0 = std::time::Instant::now();
        let created = TrialNetwork::create(&env.host.docker, &name, &spec.labels).await;
        scope.took(Step::Network, t0).await;
        match created {
            Ok(n) => {
                spec.networks = vec![(n.name.clone(), Vec::new())];
                teardown.network = Some(n);
            }
            Err(e) => {
                services.remove().await;
                return Err(Failed::runner(e, ""));
            }
        }
    }
    // The environment values go to each exec, never into the container's configuration.
    let exec_env = std::mem::take(&mut spec.env);
    let verifier_spec = spec.clone();
    spec.binds.extend(agent_binds);
    spec.labels
        .insert(labels::ROLE.to_string(), "agent".to_string());
    let mut times = crate::runner::container::StartTimes::default();
    let container = match TrialContainer::start_timed(&env.host.docker, &spec, &mut times).await {
        Ok(c) => c
            .with_env(exec_env.clone())
            .with_secrets(scope.secrets.clone()),
        Err(e) => {
            teardown.reap(&env.reaper, services, env.host.docker.clone());
            return Err(Failed::runner(e, ""));
        }
    };
    teardown.containers.push(container.clone());
    scope
        .tell(TrialEvent::Step(Step::Create, times.create))
        .await;
    scope.tell(TrialEvent::Step(Step::Start, times.start)).await;
    scope
        .tell(TrialEvent::ContainerStarted {
            id: container.id.clone(),
        })
        .await;
    let verifier_files = image.verifier_files.clone();
    let plan = super::handover::VerifierPlan {
        spec: verifier_spec,
        env: exec_env,
        files: verifier_files.as_deref(),
    };
    let result = in_container(
        scope,
        evidence,
        &container,
        mount_agent_files,
        &plan,
        &mut teardown,
    )
    .await;
    teardown.reap(&env.reaper, services, env.host.docker.clone());
    result
}

/// The main container's environment: the operator's `--env` values, then the task's resolved
/// `[environment] env` (which wins for a name both set).
fn container_env(extra: &[String], task: &Task, values: &EnvValues) -> Vec<String> {
    let table = &task.config.environment.env;
    let mut out: Vec<String> = extra
        .iter()
        .filter(|e| {
            !e.split_once('=')
                .is_some_and(|(k, _)| table.contains_key(k))
        })
        .cloned()
        .collect();
    out.extend(values.resolve(table));
    out
}
