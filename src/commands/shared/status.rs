//! A run's status as `status` and `import` print it: counts, costs and the engine's liveness.

use color_eyre::eyre::Result;
use serde::Serialize;

use crate::analysis::metrics::{ConditionSummary, summarize_planned};
use crate::domain::RunRow;
use crate::store::learning as lq;
use crate::store::{Liveness, queries};

/// One run's status, as printed with `--json`.
#[derive(Debug, Serialize)]
pub struct RunStatus {
    /// The run.
    pub run: RunRow,
    /// Tasks in the denominator.
    pub n_tasks: usize,
    /// Per condition.
    pub conditions: Vec<ConditionSummary>,
    /// Pending operator commands.
    pub pending_commands: usize,
    /// Learning spaces that learn from this run.
    pub spaces: Vec<lq::SpaceProgress>,
    /// Whether the run's engine is alive.
    pub liveness: Liveness,
    /// Its Docker hosts' health, as the engine last recorded it.
    pub hosts: Vec<crate::store::HostRow>,
    /// What the run has cost and is projected to cost, when a priced trial has finished.
    pub cost: Option<crate::analysis::spend::Projection>,
    /// Finished trials without a cost (unknown, never counted as $0).
    pub unpriced: usize,
    /// Running trials marked stalled: (trial name, since).
    pub stalled: Vec<(String, String)>,
    /// Trials running now: (trial name, phase — `building`, `agent`, `verifying` — and since
    /// when, RFC 3339).
    pub running: Vec<(String, String, Option<String>)>,
    /// Trials planned over every task and condition.
    pub planned: usize,
    /// True when every task and condition plans the run's trials per task (a native run); an
    /// import plans what its jobs held.
    pub uniform: bool,
    /// Per condition: which skills its trials could see and used
    /// ([`crate::analysis::exposure`]; labels are condition keys).
    pub skill_exposure: Vec<crate::analysis::exposure::ConditionExposure>,
    /// Conditions without skills whose trials saw some (the report's flag).
    pub skill_flags: Vec<String>,
    /// Trials flagged for tampering, per condition, and the rule they are scored by
    /// ([`crate::analysis::tamper`]).
    pub tampered: crate::analysis::tamper::Tampering,
    /// Trials whose verdict the evidence contradicts, per condition.
    pub contradicted: crate::analysis::tamper::Tampering,
    /// The run's group-sequential design, its looks at stage boundaries and its early stops;
    /// `None` when the run applied none.
    pub sequential: Option<crate::domain::sequential::SequentialRecord>,
}

/// The costs of a run's attempts by condition (finished, running, queued), for
/// [`crate::analysis::spend`]: every attempt, superseded ones included.
///
/// # Errors
/// Database errors.
pub fn run_costs(
    conn: &rusqlite::Connection,
    run_id: i64,
) -> Result<std::collections::BTreeMap<String, crate::analysis::spend::ConditionCosts>> {
    let mut out: std::collections::BTreeMap<String, crate::analysis::spend::ConditionCosts> =
        Default::default();
    queries::for_each_attempt_cost(conn, run_id, |condition, status, cost| {
        let c = match out.get_mut(condition) {
            Some(c) => c,
            None => out.entry(condition.to_string()).or_default(),
        };
        match status {
            crate::domain::TrialStatus::Done => c.finished.extend(cost),
            crate::domain::TrialStatus::Queued => c.queued += 1,
            _ => c.running.push(cost.unwrap_or(0.0)),
        }
    })?;
    Ok(out)
}

/// Collects the status of one run.
///
/// # Errors
/// Database errors.
pub fn run_status(conn: &rusqlite::Connection, run: RunRow) -> Result<RunStatus> {
    let tasks = queries::run_tasks(conn, run.id)?;
    let trials = queries::current_briefs(conn, run.id)?;
    let ids: Vec<String> = tasks.iter().map(|t| t.task_id.clone()).collect();
    let plan = queries::trial_plan(conn, &run)?;
    let conditions = summarize_planned(&ids, &plan, &run.conditions, &trials);
    let planned = conditions.iter().map(|c| c.n_planned).sum();
    let active = queries::active_trials(conn, run.id)?;
    let scored: Vec<crate::analysis::exposure::Scored<'_>> = conditions
        .iter()
        .map(|c| crate::analysis::exposure::Scored {
            label: &c.condition,
            run: &run.name,
            condition: &c.condition,
            done: c.done,
        })
        .collect();
    let exposure = crate::analysis::exposure::compute(conn, &ids, &scored, &[], false)?;
    let pending_commands = queries::pending_commands(conn, run.id)?.len();
    let scopes: Vec<crate::analysis::tamper::Scope<'_>> = run
        .conditions
        .iter()
        .map(|c| crate::analysis::tamper::Scope {
            label: c,
            run_id: run.id,
            run: &run.name,
            condition: c,
        })
        .collect();
    let flagged = |kind| -> Result<crate::analysis::tamper::Tampering, crate::store::StoreError> {
        let mut t = crate::analysis::tamper::compute(conn, &scopes, None, kind)?;
        if run.source == "native" {
            t.checked_runs = 1;
        } else {
            t.unchecked_runs = vec![run.name.clone()];
        }
        Ok(t)
    };
    let tampered = flagged(crate::domain::FlagKind::Tampered)?;
    let contradicted = flagged(crate::domain::FlagKind::Contradicted)?;
    let spaces = lq::list_spaces(conn)?
        .into_iter()
        .filter(|s| s.run_id == run.id)
        .map(|s| lq::space_progress(conn, s))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(RunStatus {
        sequential: queries::sequential_record(conn, run.id)?,
        n_tasks: ids.len(),
        conditions,
        pending_commands,
        spaces,
        liveness: Liveness::of(&run, chrono::Utc::now(), &crate::store::owner::host_name()),
        hosts: queries::run_hosts(conn, run.id)?,
        cost: crate::analysis::spend::project(&run_costs(conn, run.id)?),
        unpriced: queries::run_spend(conn, run.id)?
            .iter()
            .map(|c| c.unpriced)
            .sum(),
        stalled: active
            .iter()
            .filter_map(|t| t.stalled_at.clone().map(|s| (t.trial_name.clone(), s)))
            .collect(),
        running: active
            .iter()
            .map(|t| {
                let since = match t.status {
                    crate::domain::TrialStatus::Building => t.build_started_at.clone(),
                    crate::domain::TrialStatus::Agent => t.agent_started_at.clone(),
                    _ => t.verifier_started_at.clone(),
                };
                (
                    t.trial_name.clone(),
                    t.status.as_str().to_string(),
                    since.or_else(|| t.started_at.clone()),
                )
            })
            .collect(),
        planned,
        uniform: plan.is_uniform() && !plan.explicit,
        skill_exposure: exposure.conditions,
        skill_flags: exposure.flags,
        tampered,
        contradicted,
        run,
    })
}

/// One line on the run's engine: `running by pid N on host, heartbeat 3s ago`, `stale — engine
/// gone since …`, or the stop reason.
pub fn engine_line(run: &RunRow, liveness: &Liveness) -> String {
    crate::sanitize::one_line(&engine_line_raw(run, liveness))
}

/// [`engine_line`] before sanitizing (an imported run's fields are untrusted text).
fn engine_line_raw(run: &RunRow, liveness: &Liveness) -> String {
    match liveness {
        Liveness::Live { heartbeat_age_secs } => format!(
            "running by pid {} on {}, heartbeat {heartbeat_age_secs}s ago",
            run.owner_pid.unwrap_or_default(),
            run.owner_host.as_deref().unwrap_or("?")
        ),
        Liveness::Stale { since, .. } => format!(
            "stale — engine gone since {} (pid {} on {}); resume: {}",
            since.as_deref().unwrap_or("?"),
            run.owner_pid.unwrap_or_default(),
            run.owner_host.as_deref().unwrap_or("?"),
            run.resume_command
                .as_deref()
                .unwrap_or("the command that started it")
        ),
        Liveness::Idle => match &run.stop_reason {
            Some(r) if run.status == "stopped" => {
                format!("stopped: {}", crate::sanitize::text(r))
            }
            // `finished with 2 cancelled`.
            Some(r) if run.status == "finished" => crate::sanitize::text(r),
            _ => run.status.clone(),
        },
    }
}
