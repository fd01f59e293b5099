//! The environment phase: the trial folder, the task's checks, the image (built or reused), the
//! log mounts, the agent's preparation, the compose services and the started container — then
//! the attempt in it ([`super::agent`]) and its teardown handed to the reaper.

use std::collections::HashMap;

use super::agent::in_container;
use super::evidence::Evidence;
use super::{Done, Failed, Scope};
use crate::domain::Outcome;
use crate::runner::container::{ContainerSpec, TrialContainer};
use crate::runner::events::{Step, TrialEvent};
use crate::runner::{labels, services};
use crate::skillsbench::Task;
use crate::skillsbench::env::{self as task_env, EnvValues, MissingEnvPolicy};

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
        std::fs::create_dir_all(dir.join(sub))
            .map_err(|e| Failed::io("cannot create the trial folder", &dir.join(sub), e))?;
    }
    let build_log = dir.join("environment/build.log");
    if !task.is_runnable() {
        let msg = format!("task {} cannot run: {}", task.id, task.problems.join("; "));
        let _ = std::fs::write(&build_log, format!("{msg}\n"));
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
            let _ = std::fs::write(
                dir.join("environment/missing-env.txt"),
                format!(
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
            let _ = std::fs::write(&build_log, format!("{msg}\n"));
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
            let _ = std::fs::write(&build_log, i.log.as_str());
            i
        }
        Err(e) => {
            let _ = std::fs::write(&build_log, e.log_text());
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
    // A local daemon writes /logs straight into the trial folder (as Harbor's compose file does);
    // a remote one is copied from after the verifier.
    let mount_logs = env.host.local && !env.copy_logs;
    let mut binds = env.binds.clone();
    if mount_logs {
        for sub in ["agent", "verifier", "artifacts"] {
            let host_dir = dir.join(sub);
            std::fs::create_dir_all(&host_dir)
                .map_err(|e| Failed::io("cannot create the log folder", &host_dir, e))?;
            binds.push(format!("{}:/logs/{sub}", host_dir.display()));
        }
        for (host, cont) in env.agent.local_mounts(task) {
            binds.push(format!("{}:{cont}:ro", host.display()));
        }
    }

    let t0 = std::time::Instant::now();
    let prepared = tokio::select! {
        r = env.agent.prepare(&env.host) => r,
        _ = cancel.token.cancelled() => return Err(cancel.failed("stopped while the agent was prepared")),
    };
    scope.took(Step::PrepareAgent, t0).await;
    binds.extend(
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
        binds,
        cpus: limits.cpus,
        memory_bytes: limits.memory_mb.map(|m| (m as i64) * 1024 * 1024),
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
    let mut times = crate::runner::container::StartTimes::default();
    let container = match TrialContainer::start_timed(&env.host.docker, &spec, &mut times).await {
        Ok(c) => c,
        Err(e) => {
            services.remove().await;
            return Err(Failed::runner(e, ""));
        }
    };
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
    let result = in_container(
        scope,
        evidence,
        &container,
        mount_logs,
        verifier_files.as_deref(),
    )
    .await;
    services.reap(&env.reaper, container);
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
