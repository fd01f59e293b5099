//! The first session of a `self-generated:two-phase` trial: the agent writes skills for the task,
//! which are read out, validated and installed before the solving session.

use super::{Failed, Scope, write_instruction};
use crate::domain::{Outcome, now_rfc3339};
use crate::runner::Sandbox;
use crate::runner::agents::AgentContext;
use crate::runner::events::SessionTotals;
use crate::runner::sandbox::ExecEnd;
use crate::skillsbench::selfgen::{GeneratedSkills, SelfGeneration, TRIAL_GENERATION_SESSION};

/// The container folder of the skill-writing session's logs (not the mounted `/logs/agent`: the
/// solving session must not find the first session's transcript there).
const GENERATION_LOGS: &str = "/tmp/skillscope-skill-generation";

/// The first session of `self-generated:two-phase`: the agent (with the skill creator, when
/// given, where it looks for skills) is asked only to write skills for the task; its logs,
/// instruction and trajectory go to the trial's `skill-generation/`. Then the skills are read
/// out and validated, and only the valid ones are installed where every harness looks (the skill
/// creator and the agent's own folder removed). A timed-out session still has its skills read.
pub(super) async fn skill_writing_session(
    scope: &Scope<'_>,
    container: &Sandbox,
    generation: &SelfGeneration,
    task_instruction: &str,
    workdir: &str,
) -> Result<(GeneratedSkills, SessionTotals), Failed> {
    let Scope {
        job, env, cancel, ..
    } = *scope;
    let session_dir = job.trial_dir.join(TRIAL_GENERATION_SESSION);
    if let Some(creator) = &generation.skill_creator {
        crate::runner::selfgen::install_skill_creator(container, creator)
            .await
            .map_err(|e| Failed::runner(e, "installing the skill creator"))?;
    }
    let instruction = generation.generation_instruction(task_instruction);
    write_instruction(&session_dir, &instruction)?;
    let creator_name = [crate::runner::selfgen::SKILL_CREATOR_NAME.to_string()];
    let ctx = AgentContext {
        container,
        host: env.host.as_ref(),
        task: &job.task,
        instruction: &instruction,
        agent_dir: &session_dir,
        timeout: job.task.agent_timeout(),
        cancel: &cancel.token,
        mounted: false,
        logs: GENERATION_LOGS,
        env_values: scope.values,
        // The operator's skill creator replaces a harness built-in of its name.
        skills: if generation.skill_creator.is_some() {
            &creator_name
        } else {
            &[]
        },
        prelude: None,
    };
    let started = now_rfc3339();
    let run = env.agent.run(&ctx).await.map_err(|e| {
        Failed::runner(
            e,
            &format!("agent {} (skill-writing session)", env.agent.name()),
        )
    })?;
    let finished = now_rfc3339();
    let mut totals = SessionTotals::default();
    if let Some(t) = env.agent.trajectory(&ctx, &run, &started, &finished) {
        let (input, cached, output, cost) = t.token_totals();
        totals = SessionTotals {
            input,
            cached,
            output,
            cost,
        };
        if let Ok(bytes) = serde_json::to_vec_pretty(&t) {
            let _ = crate::fs::write_fresh(&session_dir.join("trajectory.json"), &bytes);
        }
    }
    if run.end == ExecEnd::Cancelled {
        return Err(cancel.failed("stopped while the agent wrote skills"));
    }
    if let Some(pf) = run.provider_failure {
        return Err(Failed {
            provider: Some(pf),
            ..Failed::new(
                Outcome::ProviderError,
                format!("skill-writing session: {}", pf.describe()),
            )
        });
    }
    let mut record =
        crate::runner::selfgen::capture(container, workdir, &job.trial_dir, generation)
            .await
            .map_err(|e| Failed::runner(e, "copying the generated skills out"))?;
    record.installed =
        crate::runner::selfgen::install_generated(container, workdir, &job.trial_dir, &record)
            .await
            .map_err(|e| Failed::runner(e, "installing the generated skills"))?;
    crate::runner::selfgen::write_record(&job.trial_dir, &record)
        .map_err(|e| Failed::runner(e, "recording the generated skills"))?;
    Ok((record, totals))
}
