//! What an attempt learned of skills: what its agent could see when it started (the exposure
//! scan, [`crate::runner::exposure`]) and what it used (from its ATIF trajectory).

use super::{Failed, Scope, TrialEnv};
use crate::domain::SkillUseRow;
use crate::runner::Sandbox;
use crate::runner::agents::AgentContext;
use crate::runner::events::{SessionTotals, Step, TrajectoryFacts, TrialEvent};
use crate::runner::exposure::{self, ExposureScan, ScanInput};
use crate::skillsbench::exposure::SkillExposure;

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
        .and_then(|bytes| crate::fs::write_fresh(&path, &bytes));
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
    /// What the agent changed where a task's work never goes (`agent/tamper.json`).
    pub(super) tamper: Option<crate::runner::tamper::TamperRecord>,
    /// How the verifier's evidence contradicted its reward, when it did.
    pub(super) contradiction: Option<crate::domain::TamperFlag>,
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

/// What the exposure scan of this attempt needs to know.
fn scan_input<'a>(scope: &Scope<'a>) -> ScanInput<'a> {
    let (job, env) = (scope.job, scope.env);
    ScanInput {
        task: &job.task,
        condition: &job.condition,
        trial_dir: &job.trial_dir,
        agent: env.agent.name(),
        builtins: env.agent.builtin_skills(),
    }
}

/// Reads what the agent can see of skills, now, in its container ([`crate::runner::exposure`]),
/// writes `agent/skill-exposure.json` and keeps it in `evidence`; returns the names of the
/// visible skills that are not the harness's own.
pub(super) async fn read_exposure(
    scope: &Scope<'_>,
    container: &Sandbox,
    evidence: &mut Evidence,
) -> Result<Vec<String>, Failed> {
    let t0 = std::time::Instant::now();
    let exposure = exposure::capture(container, scan_input(scope)).await;
    let written = exposure::write(&scope.job.trial_dir, &exposure);
    scope.took(Step::Exposure, t0).await;
    written.map_err(|e| Failed::runner(e, "recording the skill exposure"))?;
    let visible = exposure.condition_skill_names();
    evidence.exposure = Some(exposure);
    Ok(visible)
}

/// The exposure scan to run first in the agent's own exec, for an agent that takes it
/// ([`crate::runner::Agent::takes_prelude`]); `None` for the others (their scan runs in an exec
/// of its own, [`read_exposure`]).
pub(super) fn exposure_prelude<'a>(scope: &Scope<'a>) -> Option<ExposureScan<'a>> {
    if !scope.env.agent.takes_prelude() {
        return None;
    }
    ExposureScan::new(scan_input(scope)).ok()
}

/// After the agent's run, whatever its end: keeps what its exec's prelude recorded in
/// `evidence` — or, when the prelude never ran (the agent failed before its exec, so nothing in
/// the container changed), reads it now.
pub(super) async fn keep_exposure(
    scope: &Scope<'_>,
    container: &Sandbox,
    evidence: &mut Evidence,
    prelude: &ExposureScan<'_>,
) -> Result<(), Failed> {
    match prelude.take() {
        Some((Ok(x), took)) => {
            scope.tell(TrialEvent::Step(Step::Exposure, took)).await;
            evidence.exposure = Some(x);
            Ok(())
        }
        Some((Err(e), _)) => Err(Failed::runner(e, "recording the skill exposure")),
        None => read_exposure(scope, container, evidence).await.map(|_| ()),
    }
}
