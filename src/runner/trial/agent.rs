//! The agent phase in the started container: a two-phase trial's skill-writing session first
//! ([`super::generation`]), the instruction written, what the agent can see of skills read just
//! before it starts ([`super::evidence`]), the agent's run watched every
//! [`super::TrialEnv::live_every`], then its container stopped and what it left collected
//! ([`super::handover`]: `/logs/agent`, `agent/tamper.json`), its trajectory recorded — then the
//! verifier in a container of its own ([`super::verifier`]).

use std::path::PathBuf;

use super::evidence::{
    Evidence, exposure_prelude, keep_exposure, read_exposure, record_trajectory,
};
use super::generation::skill_writing_session;
use super::handover::{self, VerifierPlan};
use super::verifier::{tampered, verify};
use super::{Done, Failed, Scope, TrialEnv, write_instruction};
use crate::domain::{Outcome, now_rfc3339};
use crate::runner::Sandbox;
use crate::runner::agents::{AGENT_LOGS, AgentContext};
use crate::runner::events::{Live, Step, TrialEvent};
use crate::runner::sandbox::{ExecEnd, Prelude};
use crate::skillsbench::dockerfile::SKILL_DESTINATIONS;

/// The attempt in its started environment: the agent (after a two-phase trial's skill-writing
/// session, with what it can see of skills read just before), every process of it ended, what
/// it changed read, then the verifier in an environment of its own with the agent's work.
pub(super) async fn in_container(
    scope: &Scope<'_>,
    evidence: &mut Evidence,
    container: &Sandbox,
    mount_agent_files: bool,
    plan: &VerifierPlan<'_>,
) -> Result<Done, Failed> {
    let Scope {
        job, env, cancel, ..
    } = *scope;
    let task = &job.task;
    let dir = &job.trial_dir;
    // The agent's changes are those since now (by the kernel's ctime; see `work::collect`).
    let started_at = std::time::SystemTime::now();
    let agent_started = now_rfc3339();
    scope
        .tell(TrialEvent::AgentStarted {
            at: agent_started.clone(),
        })
        .await;

    let task_instruction = std::fs::read_to_string(task.instruction_path()).unwrap_or_default();
    let agent_dir = dir.join("agent");
    let generation = job.condition.self_generation();
    // Two-phase self-generation: a session of its own writes the skills first.
    let mut first_session = None;
    // Where skillscope itself put skills between the sessions (the generated skills).
    let mut installed: Vec<String> = Vec::new();
    if let Some(g) = generation.filter(|g| g.two_phase) {
        let (record, totals) = skill_writing_session(
            scope,
            container,
            g,
            &task_instruction,
            &plan.facts.working_dir,
        )
        .await?;
        installed = SKILL_DESTINATIONS
            .iter()
            .flat_map(|d| {
                record
                    .installed
                    .iter()
                    .map(|n| format!("{d}/{n}"))
                    .chain([format!(
                        "{d}/{}",
                        crate::runner::selfgen::SKILL_CREATOR_NAME
                    )])
                    .collect::<Vec<_>>()
            })
            .collect();
        scope.tell(TrialEvent::GeneratedSkills(record)).await;
        first_session = Some(totals);
    }
    let instruction = match generation {
        Some(g) if !g.two_phase => g.generation_instruction(&task_instruction),
        _ => task_instruction,
    };
    write_instruction(&agent_dir, &instruction)?;
    // An image's user who is not root can write the agent's logs (Harbor's `chmod 777`).
    container
        .open_to_user(&[AGENT_LOGS], &[])
        .await
        .map_err(|e| Failed::runner(e, "opening /logs/agent to the image's user"))?;
    // What the agent can see of skills is read just before it starts: in its own exec when the
    // agent takes it, else in one of its own.
    let prelude = exposure_prelude(scope);
    let visible = match &prelude {
        Some(_) => Vec::new(),
        None => read_exposure(scope, container, evidence).await?,
    };
    let ctx = AgentContext {
        container,
        host: env.host.as_ref(),
        task,
        instruction: &instruction,
        agent_dir: &agent_dir,
        timeout: task.agent_timeout(),
        cancel: &cancel.token,
        mounted: mount_agent_files,
        logs: AGENT_LOGS,
        env_values: scope.values,
        skills: &visible,
        prelude: prelude.as_ref().map(|p| p as &dyn Prelude),
    };
    let t0 = std::time::Instant::now();
    let run = run_agent(scope, &ctx, &agent_started).await;
    scope.took(Step::Agent, t0).await;
    tracing::debug!(trial = %job.row.trial_name, ms = t0.elapsed().as_millis() as u64, "agent done");
    let agent_finished = now_rfc3339();
    scope
        .tell(TrialEvent::AgentEnded {
            at: agent_finished.clone(),
        })
        .await;
    let exposure_kept = match &prelude {
        Some(p) => keep_exposure(scope, container, evidence, p).await,
        None => Ok(()),
    };
    // The agent is done: every process it started ends now, whatever follows.
    // The trial goes on to its verifier: what the agent changed is read as its processes end.
    let goes_on =
        matches!(&run, Ok(r) if r.end != ExecEnd::Cancelled && r.provider_failure.is_none());
    let stopped =
        handover::stop_agent(scope, container, goes_on.then_some((plan, started_at))).await;
    let run = run.map_err(|e| Failed::runner(e, &format!("agent {}", env.agent.name())))?;
    exposure_kept?;
    let handed = stopped?;
    scope.tell(TrialEvent::AgentExit(run.exit_code)).await;
    let times = (agent_started.as_str(), agent_finished.as_str());
    let traced = record_trajectory(scope, &ctx, &run, times, &mut evidence.skill_uses).await;
    evidence.conclude(env, dir, traced, &[]);
    if let Some(totals) = first_session {
        scope.tell(TrialEvent::ExtraSession(totals)).await;
    }
    if run.end == ExecEnd::Cancelled {
        return Err(cancel.failed("stopped while the agent ran"));
    }
    if let Some(pf) = run.provider_failure {
        // The task was not fairly attempted: no verdict, no verifier.
        return Err(Failed {
            provider: Some(pf),
            ..Failed::new(Outcome::ProviderError, pf.describe())
        });
    }
    // One-pass self-generation: the skills the agent wrote (and used) are read out before the
    // verifier runs.
    if let Some(g) = generation.filter(|g| !g.two_phase) {
        let record = crate::runner::selfgen::capture(container, &plan.facts.working_dir, dir, g)
            .await
            .map_err(|e| Failed::runner(e, "copying the generated skills out"))?;
        // The skills the agent wrote are its own: its use of them counts.
        let own: Vec<String> = record.skills.iter().map(|s| s.dir_name.clone()).collect();
        scope.tell(TrialEvent::GeneratedSkills(record)).await;
        evidence.conclude(env, dir, traced, &own);
    }
    let (folders, exempt) = match &evidence.exposure {
        Some(x) => (
            x.folders
                .iter()
                .cloned()
                .chain(crate::skillsbench::exposure::skill_folders(
                    "",
                    &x.workdir,
                    &[],
                ))
                .collect::<Vec<String>>(),
            x.builtins
                .as_ref()
                .map(|b| b.folders.clone())
                .unwrap_or_default(),
        ),
        None => (Vec::new(), Vec::new()),
    };
    let agent_timed_out = run.end == ExecEnd::TimedOut;
    let skills = handover::Skills {
        folders: &folders,
        exempt: &exempt,
        installed: &installed,
    };
    let Some(handed) = handed else {
        return Err(Failed::new(
            Outcome::RuntimeError,
            "the agent's changes were not read",
        ));
    };
    let (verifier, tamper) = handover::to_verifier(scope, container, plan, &skills, handed).await?;
    evidence.tamper = Some(tamper);
    let searched = evidence
        .tamper
        .as_ref()
        .map(|t| t.searched_modules.clone())
        .unwrap_or_default();
    let judged = verify(scope, &verifier, plan.files, agent_timed_out, &searched).await;
    let judged = match judged {
        Ok(v) => v,
        Err(f) => return tampered(evidence.tamper.as_ref(), &None, Err(f)),
    };
    let super::verifier::Verified {
        done,
        outlived,
        shadowed,
        contradiction,
    } = judged;
    if let Some(t) = evidence.tamper.as_mut()
        && (outlived.is_some() || !shadowed.is_empty())
    {
        if let Some(o) = outlived {
            t.add("?", "(process)", &o);
        }
        for (path, why) in &shadowed {
            t.add("A", path, why);
        }
        if let Err(e) = t.write(dir) {
            tracing::warn!(error = %e, "cannot rewrite agent/tamper.json");
        }
    }
    evidence.contradiction = contradiction.clone();
    tampered(evidence.tamper.as_ref(), &contradiction, done)
}

/// Runs the agent, reporting what it does every [`TrialEnv::live_every`] while it runs and once
/// more when it ends.
async fn run_agent(
    scope: &Scope<'_>,
    ctx: &AgentContext<'_>,
    started: &str,
) -> Result<crate::runner::AgentRun, crate::runner::RunnerError> {
    let env = scope.env;
    let agent_run = env.agent.run(ctx);
    tokio::pin!(agent_run);
    let mut watch = OutputWatch::new(ctx.agent_dir, started);
    let mut tick = tokio::time::interval(env.live_every.max(std::time::Duration::from_millis(100)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    let r = loop {
        tokio::select! {
            r = &mut agent_run => break r,
            _ = tick.tick() => {
                let live = watch.look(env, ctx.instruction).await;
                scope.tell(TrialEvent::Live(live)).await;
            }
        }
    };
    // One last look: what the agent wrote after the last tick (its final steps, tokens, and the
    // output that ends a stall) is recorded however busy the machine was.
    let live = watch.look(env, ctx.instruction).await;
    scope.tell(TrialEvent::Live(live)).await;
    r
}

/// Watches a running agent's `agent/` folder: when its files last grew, and what its log says.
struct OutputWatch {
    dir: PathBuf,
    started: String,
    size: u64,
    last_output_at: String,
    activity: Option<crate::runner::agents::Activity>,
}

impl OutputWatch {
    fn new(dir: &std::path::Path, started: &str) -> OutputWatch {
        OutputWatch {
            dir: dir.to_path_buf(),
            started: started.to_string(),
            size: 0,
            last_output_at: started.to_string(),
            activity: None,
        }
    }

    /// Bytes in the folder's regular files (not followed through symlinks).
    fn total_size(&self) -> u64 {
        std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.metadata().ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum()
    }

    /// What is known now: output time moves when the files grew, and the log is read again then.
    async fn look(&mut self, env: &TrialEnv, instruction: &str) -> Live {
        let size = self.total_size();
        if size != self.size {
            self.size = size;
            self.last_output_at = now_rfc3339();
            let (agent, dir, instruction, started) = (
                env.agent.clone(),
                self.dir.clone(),
                instruction.to_string(),
                self.started.clone(),
            );
            if let Ok(Some(a)) =
                tokio::task::spawn_blocking(move || agent.activity(&dir, &instruction, &started))
                    .await
            {
                self.activity = Some(a);
            }
        }
        Live {
            last_output_at: self.last_output_at.clone(),
            activity: self.activity.clone(),
        }
    }
}
