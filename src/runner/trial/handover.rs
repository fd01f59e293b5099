//! Between the agent and the verifier: the verifier runs where the agent no longer is.
//!
//! 1. The agent's container is stopped through the daemon — SIGKILL to its PID 1, which ends its
//!    PID namespace and every process the agent started in it, however it hid them (`setsid`,
//!    double forks, a replaced `kill`) — and the daemon is asked until it reports the container
//!    stopped with no process ([`TrialContainer::kill_and_confirm`]).
//! 2. `/logs/agent` is copied out through the API, capped ([`MAX_LOGS_BYTES`]), never through a
//!    link and never over skillscope's own files; the filesystem diff against the image becomes
//!    `agent/tamper.json` ([`crate::runner::tamper`]).
//! 3. The stopped container is committed, and the verifier gets a fresh container from that
//!    commit: the same networks and aliases, limits and the task's mounts, none of the agent's
//!    own (the oracle's solution, a harness kit), with an empty volume of its own on `/tests` and
//!    on `/logs/verifier` (whatever the agent left there is hidden), and skillscope's static
//!    shell mounted read-only ([`crate::runner::static_shell`]) for every command of
//!    skillscope's in it. Its PID 1 is that shell's `sleep`, after the image's ENTRYPOINT.
//!
//! A trial that cannot get there (the kill, the diff, the commit or the new container fails) is
//! an infrastructure fault: interrupted and queued again, never a verdict.

use std::time::Duration;

use super::teardown::Teardown;
use super::{Failed, Scope};
use crate::runner::agents::AGENT_LOGS;
use crate::runner::container::{
    Change, ContainerCmd, ContainerFacts, ContainerSpec, MAX_DOWNLOAD_BYTES, TrialContainer,
};
use crate::runner::events::Step;
use crate::runner::image::VerifierFiles;
use crate::runner::labels;
use crate::runner::static_shell::{self, STATIC_SHELL_DIR};
use crate::runner::tamper::{self, TamperRecord};

/// Most bytes copied out of each of `/logs/agent`, `/logs/verifier` and `/logs/artifacts`.
pub const MAX_LOGS_BYTES: u64 = MAX_DOWNLOAD_BYTES;

/// How long a container may take to stop after SIGKILL before the trial is a fault.
const KILL_LIMIT: Duration = Duration::from_secs(30);

/// What the verifier's container is made from.
pub(super) struct VerifierPlan<'a> {
    /// The agent's container's spec without the agent's own mounts and environment.
    pub(super) spec: ContainerSpec,
    /// The trial's environment, for each exec.
    pub(super) env: Vec<String>,
    /// The verifier's copies of skills.
    pub(super) files: Option<&'a VerifierFiles>,
}

/// Stops the agent's container, copies `/logs/agent` out and returns what the daemon says of
/// the container. The copy is tried even when the stop failed (what the agent wrote is kept);
/// the stop's failure is then the error.
pub(super) async fn stop_agent(
    scope: &Scope<'_>,
    container: &TrialContainer,
) -> Result<ContainerFacts, Failed> {
    let t0 = std::time::Instant::now();
    let stopped = container.kill_and_confirm(KILL_LIMIT).await;
    scope.took(Step::Kill, t0).await;
    let t0 = std::time::Instant::now();
    let dir = scope.job.trial_dir.join("agent");
    let copied = container
        .download_dir(AGENT_LOGS, &dir, MAX_LOGS_BYTES)
        .await;
    let facts = container.facts().await;
    scope.took(Step::Evidence, t0).await;
    stopped.map_err(|e| Failed::runner(e, "stopping the agent's container"))?;
    let copied = copied.map_err(|e| Failed::runner(e, "copying /logs/agent out"))?;
    if !copied.skipped.is_empty() {
        tracing::info!(
            trial = %scope.job.row.trial_name,
            skipped = ?copied.skipped,
            "entries of /logs/agent not copied"
        );
    }
    facts.map_err(|e| Failed::runner(e, "inspecting the agent's container"))
}

/// Reads the stopped container's diff, writes `agent/tamper.json` and returns the record.
/// `skill_folders`: where the exposure scan looked; `exempt`: the harness's own folders;
/// `baseline`: the changes skillscope made before the agent's session.
pub(super) async fn record_tamper(
    scope: &Scope<'_>,
    container: &TrialContainer,
    facts: &ContainerFacts,
    skill_folders: &[String],
    exempt: &[String],
    baseline: &[Change],
) -> Result<TamperRecord, Failed> {
    let t0 = std::time::Instant::now();
    let changes = container
        .changes()
        .await
        .map_err(|e| Failed::runner(e, "reading the agent's changes"))?;
    let ev = tamper::Evidence {
        changes: &changes,
        facts,
        skill_folders,
        exempt,
        baseline,
    };
    let record = tamper::assess(&ev, container).await;
    record
        .write(&scope.job.trial_dir)
        .map_err(|e| Failed::runner(e, "recording the agent's changes"))?;
    scope.took(Step::Evidence, t0).await;
    Ok(record)
}

/// Commits the stopped agent container and starts the verifier's own container from it (see
/// the module doc); both are handed to `teardown`.
pub(super) async fn start_verifier(
    scope: &Scope<'_>,
    agent: &TrialContainer,
    facts: &ContainerFacts,
    plan: &VerifierPlan<'_>,
    teardown: &mut Teardown,
) -> Result<TrialContainer, Failed> {
    let job = scope.job;
    let t0 = std::time::Instant::now();
    let commit_labels = std::collections::HashMap::from([
        (labels::MANAGED.to_string(), "1".to_string()),
        (labels::COMMIT.to_string(), job.row.id.to_string()),
        (labels::RUN_UID.to_string(), job.run_uid.clone()),
        (labels::ATTEMPT_ID.to_string(), job.row.id.to_string()),
    ]);
    let image = agent
        .commit(&commit_labels)
        .await
        .map_err(|e| Failed::runner(e, "committing the agent's filesystem"))?;
    teardown.images.push(image.clone());
    scope.took(Step::Commit, t0).await;
    let t0 = std::time::Instant::now();
    let shell = static_shell::ensure(&scope.env.host)
        .await
        .map_err(|e| Failed::runner(e, "preparing the verifier's shell"))?;
    let mut spec = plan.spec.clone();
    spec.image = image;
    spec.name = format!("{}-verifier", spec.name);
    spec.labels
        .insert(labels::ROLE.to_string(), "verifier".to_string());
    spec.cmd = ContainerCmd::Args(vec![
        format!("{STATIC_SHELL_DIR}/busybox"),
        "sleep".into(),
        "infinity".into(),
    ]);
    spec.empty_volumes = vec!["/tests".into(), "/logs/verifier".into()];
    spec.binds.push(shell);
    // An image's VOLUMEs are not in the commit: the verifier mounts the agent's.
    for (volume, dest) in &facts.volumes {
        if !spec.empty_volumes.contains(dest) {
            spec.binds.push(format!("{volume}:{dest}"));
        }
    }
    let c = TrialContainer::start(&scope.env.host.docker, &spec)
        .await
        .map_err(|e| Failed::runner(e, "starting the verifier's container"))?
        .with_env(plan.env.clone())
        .with_secrets(scope.secrets.clone())
        .with_static_shell(STATIC_SHELL_DIR);
    teardown.containers.push(c.clone());
    scope.took(Step::VerifierStart, t0).await;
    Ok(c)
}
