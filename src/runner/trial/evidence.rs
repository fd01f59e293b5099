//! What an attempt learned of skills: what its agent could see when it started (the exposure
//! scan, [`crate::runner::exposure`]) and what it used (from its ATIF trajectory).

use super::{Failed, Scope, TrialEnv};
use crate::runner::agents::AgentContext;
use crate::runner::container::TrialContainer;
use crate::runner::events::{SessionTotals, TrajectoryFacts, TrialEvent};
use crate::skillsbench::exposure::SkillExposure;
use crate::store::SkillUseRow;

/// Writes the agent's ATIF trajectory to `agent/trajectory.json` and reports its counts, tokens
/// and cost; keeps the skills it used in `skill_uses`. Returns true when it was written. A
/// trajectory that cannot be written is left out: the trial's outcome never depends on it.
pub(super) async fn record_trajectory(
    scope: &Scope<'_>,
    ctx: &AgentContext<'_>,
    run: &crate::runner::AgentRun,
    (started, finished): (&str, &str),
    skill_uses: &mut Vec<SkillUseRow>,
) -> bool {
    let Some(t) = scope.env.agent.trajectory(ctx, run, started, finished) else {
        return false;
    };
    let path = ctx.agent_dir.join("trajectory.json");
    let written = serde_json::to_vec_pretty(&t)
        .map_err(std::io::Error::other)
        .and_then(|bytes| {
            use std::io::Write;
            crate::safe_fs::create_fresh(&path).and_then(|mut f| f.write_all(&bytes))
        });
    if written.is_err() {
        return false;
    }
    let (input, cached, output, cost) = t.token_totals();
    let facts = TrajectoryFacts {
        path,
        steps: t.steps.len() as i64,
        tool_calls: t.tool_call_count() as i64,
        error_steps: t.error_step_count() as i64,
        final_message: t.ends_with_message(),
        totals: SessionTotals {
            input,
            cached,
            output,
            cost,
        },
    };
    scope.tell(TrialEvent::Trajectory(facts)).await;
    *skill_uses = crate::harbor::skill_use::detect(&t, &[])
        .into_iter()
        .map(|u| SkillUseRow {
            skill: u.skill,
            kind: u.kind.as_str().to_string(),
            first_step: Some(u.first_step as i64),
            count: u.count as i64,
        })
        .collect();
    true
}

/// What an attempt learned of skills, whatever its end: the skills its agent used (from its
/// trajectory) and what it could see when it started (read just before).
#[derive(Default)]
pub(super) struct Evidence {
    pub(super) skill_uses: Vec<SkillUseRow>,
    pub(super) exposure: Option<SkillExposure>,
}

impl Evidence {
    /// Completes the exposure record with what the agent used — known when a trajectory was
    /// written (`traced`) by an agent whose trajectory records a model's choices, else unknown;
    /// `own`: skills the agent wrote (one-pass self-generation).
    pub(super) fn conclude(
        &mut self,
        env: &TrialEnv,
        trial_dir: &std::path::Path,
        traced: bool,
        own: &[String],
    ) {
        let known = (traced && env.agent.reports_skill_use()).then_some(&self.skill_uses[..]);
        if let Some(x) = self.exposure.as_mut() {
            crate::runner::exposure::conclude(trial_dir, x, known, own);
        }
    }
}

/// Reads what the agent can see of skills, now, in its container ([`crate::runner::exposure`]), writes
/// `agent/skill-exposure.json` and keeps it in `evidence`; returns the names of the visible
/// skills that are not the harness's own.
pub(super) async fn read_exposure(
    scope: &Scope<'_>,
    container: &TrialContainer,
    evidence: &mut Evidence,
) -> Result<Vec<String>, Failed> {
    let (job, env) = (scope.job, scope.env);
    let exposure = crate::runner::exposure::capture(
        container,
        crate::runner::exposure::ScanInput {
            task: &job.task,
            condition: &job.condition,
            trial_dir: &job.trial_dir,
            agent: env.agent.name(),
            builtins: env.agent.builtin_skills(),
        },
    )
    .await;
    crate::runner::exposure::write(&job.trial_dir, &exposure)
        .map_err(|e| Failed::runner(e, "recording the skill exposure"))?;
    let visible = exposure.condition_skill_names();
    evidence.exposure = Some(exposure);
    Ok(visible)
}
