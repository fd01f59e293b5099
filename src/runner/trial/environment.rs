//! The environment phase: the trial folder, the task's checks, the image (built or reused) and
//! what it holds (read once per image), the agent's preparation, the trial's site (a compose
//! task's services, an `allow_internet` trial's own network) and the agent's started environment
//! — then the attempt in it ([`super::agent`]) and the site handed to the reaper.
//!
//! Nothing of this machine's trial folder is mounted into an environment: `/logs` is copied out
//! through the backend ([`super::handover`]), so the agent can neither see the folder's path nor
//! write into it. The agent's environment is kept to itself (the process and memory limits of
//! [`crate::runner::limits`], the capabilities of
//! [`crate::runner::backend::KEPT_CAPABILITIES`]), and the trial's environment values reach it
//! only through each exec ([`crate::runner::Sandbox::with_env`]) — never a value only the
//! verifier's `[verifier] env` names ([`agent_env`]).

use std::collections::BTreeMap;

use super::agent::in_container;
use super::evidence::Evidence;
use super::{Done, Failed, Scope};
use crate::domain::Outcome;
use crate::runner::Sandbox;
use crate::runner::backend::{EnvironmentSpec, Mount, MountSource, Role, SiteError, SiteSpec};
use crate::runner::events::{Step, TrialEvent};
use crate::runner::labels;
use crate::skillsbench::Task;
use crate::skillsbench::env::{self as task_env, EnvValues, MissingEnvPolicy};

/// Writes a small file of the trial folder (never through a link); a failure is only logged,
/// as the attempt's outcome never depends on it.
pub(super) fn note_file(path: &std::path::Path, text: &str) {
    if let Err(e) = crate::fs::write_fresh(path, text.as_bytes()) {
        tracing::warn!(path = %path.display(), error = %e, "cannot write a trial file");
    }
}

/// The trial folder's own subfolders, the task's checks: `Err` when the attempt cannot start.
async fn checks(scope: &Scope<'_>) -> Result<(), Failed> {
    let Scope {
        job, env, values, ..
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
    if missing.is_empty() {
        return Ok(());
    }
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
        return Ok(());
    }
    let msg = format!(
        "refused: task {} needs environment values that are not set: {} (pass them with --env, or run with --allow-missing-env)",
        task.id,
        what.join("; ")
    );
    note_file(&build_log, &format!("{msg}\n"));
    Err(Failed::new(Outcome::BuildError, msg))
}

/// The image of the trial, built or found, and what it holds.
async fn image(
    scope: &Scope<'_>,
) -> Result<
    (
        crate::runner::image::ReadyImage,
        std::sync::Arc<crate::runner::image::ImageFacts>,
    ),
    Failed,
> {
    let Scope {
        job, env, cancel, ..
    } = *scope;
    let task = &job.task;
    let build_log = job.trial_dir.join("environment/build.log");
    let t0 = std::time::Instant::now();
    let image = tokio::select! {
        r = env.host.prepare_image(task, &job.condition, task.build_timeout()) => r,
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
    let t0 = std::time::Instant::now();
    let facts = tokio::select! {
        r = env.host.image_facts(&image.tag) => r,
        _ = cancel.token.cancelled() => return Err(cancel.failed("stopped while the image was read")),
    };
    scope.took(Step::Facts, t0).await;
    let facts = facts.map_err(|e| Failed::runner(e, "reading what the image holds"))?;
    Ok((image, facts))
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
    checks(scope).await?;
    let (image, facts) = image(scope).await?;
    // On a local host the agent's own read-only folders (the oracle's solution, a harness kit)
    // are mounted; a remote one gets copies. Never the trial folder.
    let mount_agent_files = env.host.local() && !env.copy_logs;
    let mut agent_mounts: Vec<Mount> = Vec::new();
    if mount_agent_files {
        for (host, target) in env.agent.local_mounts(task) {
            agent_mounts.push(Mount {
                source: MountSource::HostDir(host),
                target,
                read_only: true,
            });
        }
    }
    let t0 = std::time::Instant::now();
    let prepared = tokio::select! {
        r = env.agent.prepare(env.host.as_ref()) => r,
        _ = cancel.token.cancelled() => return Err(cancel.failed("stopped while the agent was prepared")),
    };
    scope.took(Step::PrepareAgent, t0).await;
    agent_mounts.extend(
        prepared
            .map_err(|e| Failed::runner(e, &format!("preparing agent {}", env.agent.name())))?,
    );

    let env_cfg = &task.config.environment;
    // A request above the host's is cut to it, and the trial says so.
    let limits = crate::runner::limits::Limits::on(env_cfg, env.host.capacity());
    scope.tell(TrialEvent::Clamped(limits.clamped())).await;
    let name = format!(
        "ss-{}-{}",
        crate::skillsbench::condition::docker_safe_name(&job.row.trial_name.replace("__", "-")),
        job.row.id
    );
    let labels = BTreeMap::from([
        (labels::MANAGED.to_string(), "1".to_string()),
        (labels::RUN.to_string(), job.run_name.clone()),
        (labels::RUN_UID.to_string(), job.run_uid.clone()),
        (labels::TRIAL.to_string(), job.row.trial_name.clone()),
        (labels::ATTEMPT_ID.to_string(), job.row.id.to_string()),
        (labels::CONTENT_HASH.to_string(), image.hash.clone()),
    ]);
    let users = super::users::Users::of(task, &facts)?;
    let t0 = std::time::Instant::now();
    let site = env
        .host
        .open_site(&SiteSpec {
            task,
            trial_dir: dir,
            labels: labels.clone(),
            name: name.clone(),
            env_values: values,
            main_image: &image.tag,
            cancel: &cancel.token,
        })
        .await;
    scope.took(Step::Site, t0).await;
    let site = site.map_err(|e| match e {
        SiteError::Task(m) => Failed::new(Outcome::BuildError, m),
        SiteError::Runner(e) => Failed::runner(e, "starting the task's services"),
        SiteError::Cancelled => cancel.failed("stopped while the task's services started"),
    })?;
    // What the site mounts writable over the image is the task's, as the image's files are.
    let facts = if site.mounted().is_empty() {
        facts
    } else {
        std::sync::Arc::new(facts.with_mounted(site.mounted()))
    };
    let base = EnvironmentSpec {
        image: image.tag.clone(),
        name,
        labels,
        cpus: limits.cpus,
        memory_bytes: limits.memory_mb.map(|m| (m as i64) * 1024 * 1024),
        pids_limit: Some(limits.pids_limit as i64),
        mounts: env.binds.clone(),
        image_user: users.image.clone(),
        ..Default::default()
    };
    let mut agent_spec = base.clone();
    agent_spec.mounts.extend(agent_mounts);
    agent_spec.extra_hosts = env.agent.extra_hosts();
    agent_spec.role = Some(Role::Agent);
    agent_spec.user = users.agent.clone();
    agent_spec
        .labels
        .insert(labels::ROLE.to_string(), Role::Agent.as_str().into());
    if !users.entry.is_empty() {
        // Harbor keeps the image's ENTRYPOINT (with `sleep infinity` as its command).
        agent_spec.image_entry = users.entry.clone();
        agent_spec
            .image_entry
            .extend(["sleep".into(), "infinity".into()]);
    }
    let mut verifier_spec = base;
    verifier_spec.name = format!("{}-verifier", verifier_spec.name);
    verifier_spec.role = Some(Role::Verifier);
    verifier_spec.user = users.verifier.clone();
    verifier_spec
        .labels
        .insert(labels::ROLE.to_string(), Role::Verifier.as_str().into());
    verifier_spec.empty_dirs = vec!["/tests".into(), "/logs/verifier".into()];
    // Where the site allows it, the verifier's environment starts beside the agent's and waits
    // (the same environment as later: fresh from the image, nothing of the agent's in it).
    let agent_start = async {
        let t0 = std::time::Instant::now();
        let started = site.start(&agent_spec).await;
        scope.took(Step::Start, t0).await;
        started
    };
    let verifier_start = async {
        if !site.verifier_may_wait() {
            return None;
        }
        let t0 = std::time::Instant::now();
        let started = site.start(&verifier_spec).await;
        scope.took(Step::VerifierStart, t0).await;
        Some(started)
    };
    let (started, early) = tokio::join!(agent_start, verifier_start);
    let (environment, early) = match (started, early.transpose()) {
        (Ok(e), Ok(v)) => (e, v),
        (Err(e), _) => {
            env.reaper.spawn(site.close());
            return Err(Failed::runner(e, ""));
        }
        (Ok(_), Err(e)) => {
            env.reaper.spawn(site.close());
            return Err(Failed::runner(e, "starting the verifier's environment"));
        }
    };
    let exec_env = container_env(&env.extra_env, task, values);
    let container = Sandbox::new(environment)
        .with_env(agent_env(&exec_env, task))
        .with_secrets(scope.secrets.clone());
    scope
        .tell(TrialEvent::ContainerStarted {
            id: container.id().to_string(),
        })
        .await;
    let plan = super::handover::VerifierPlan {
        spec: verifier_spec,
        early,
        env: exec_env,
        verifier_env: values.resolve(&task.config.verifier.env),
        files: image.verifier_files.as_deref(),
        facts: &facts,
        site: site.as_ref(),
        mounts: env
            .agent
            .local_mounts(task)
            .into_iter()
            .map(|(_, t)| t)
            .collect(),
    };
    let result = in_container(scope, evidence, &container, mount_agent_files, &plan).await;
    env.reaper.spawn(site.close());
    result
}

/// The environment of every exec of the trial: the operator's `--env` values, then the task's
/// resolved `[environment] env` (which wins for a name both set).
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

/// The agent's share of `exec_env`: without the variables only the verifier's `[verifier] env`
/// names — its keys and the `${NAME}`s its values read — so the verifier's secrets stay the
/// verifier's, also when their value came from `--env`. A name `[environment] env` or
/// `[solution] env` uses too stays.
pub(super) fn agent_env(exec_env: &[String], task: &Task) -> Vec<String> {
    let names = |table: &BTreeMap<String, String>| -> std::collections::BTreeSet<String> {
        table
            .iter()
            .flat_map(|(k, v)| {
                std::iter::once(k.clone())
                    .chain(task_env::references(v, false).into_iter().map(|r| r.name))
            })
            .collect()
    };
    let c = &task.config;
    let shared: std::collections::BTreeSet<String> = names(&c.environment.env)
        .into_iter()
        .chain(names(&c.solution.env))
        .collect();
    let verifier: std::collections::BTreeSet<String> = names(&c.verifier.env);
    let verifier_only = |k: &str| verifier.contains(k) && !shared.contains(k);
    exec_env
        .iter()
        .filter(|e| !e.split_once('=').is_some_and(|(k, _)| verifier_only(k)))
        .cloned()
        .collect()
}
