//! A reused baseline (`experiment --baseline-from RUN`): round 1's conditions taken from a run
//! already in the database — a native run, or an imported Harbor job with its trajectories —
//! instead of run again, once it is shown to be the round 1 the plan would run.
//!
//! The check compares the stored run's provenance ([`Provenance::of_run`]) with the plan's
//! round 1 ([`planned`]: the tasks folder's tasks and their Harbor digests computed now, the
//! agent's settings at its pinned version, the model, the trials per task and the conditions)
//! with the one comparison of [`crate::domain::provenance::compare`], and asks what learning
//! needs: every judged trial's trajectory on disk. Every field that differs refuses the run in
//! one error naming each field and both values, unless `--allow-drift FIELD` accepts it; what
//! was accepted is recorded with the experiment (`experiment_baselines`) and shown in its
//! report.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::{ExperimentError, ExperimentSetup};
use crate::domain::provenance::{Field, Mismatch, Provenance, compare};
use crate::domain::{Outcome, TrialRow, TrialStatus};
use crate::engine::EngineError;
use crate::skillsbench::{Condition, TaskSet};
use crate::store::learning::BaselineRow;
use crate::store::{Store, queries};

/// `--baseline-from RUN` with the fields `--allow-drift` accepts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BaselineFrom {
    /// The run to reuse as round 1 (its name in the experiment's database).
    pub run: String,
    /// Fields whose differences are accepted (recorded).
    pub allow: Vec<Field>,
}

/// What the plan's round 1 would run with: its tasks (the folder and filter of `setup.round1`,
/// each with its Harbor digest computed now), the agent's settings (harness, pinned version,
/// model, sampling), the model, trials per task and `conditions`.
///
/// # Errors
/// A tasks folder that cannot be read; an unknown agent.
pub async fn planned(
    setup: &ExperimentSetup,
    conditions: &[Condition],
) -> Result<Provenance, ExperimentError> {
    let req = &setup.round1;
    let (dir, catalog, filter) = (
        req.tasks_dir.clone(),
        req.catalog.clone(),
        req.task_filter.clone(),
    );
    let taskset = tokio::task::spawn_blocking(move || {
        TaskSet::load(&dir, &catalog, &filter).map(|mut t| {
            t.compute_digests();
            t
        })
    })
    .await
    .map_err(|e| ExperimentError::Plan(e.to_string()))?
    .map_err(EngineError::from)?;
    let tasks: BTreeMap<String, BTreeSet<String>> = taskset
        .tasks
        .iter()
        .map(|t| (t.id.clone(), t.digest.iter().cloned().collect()))
        .collect();
    let agent =
        crate::runner::agent_by_name(&req.agent, req.model.as_deref(), &req.settings.harness)
            .map_err(|e| ExperimentError::Plan(e.to_string()))?;
    let mut p = Provenance {
        tasks: Some(tasks),
        trials: Some(BTreeSet::from([req.n_trials])),
        conditions: Some(conditions.iter().map(Condition::key).collect()),
        ..Provenance::default()
    };
    p.harness.insert(req.agent.clone());
    p.model.extend(req.model.clone());
    p.add_agent_settings(&agent.settings());
    Ok(p)
}

/// The judged trials among `trials` (current attempts with a verdict) whose trajectory is not on
/// disk (`trajectory_path`, else `agent/trajectory.json` in the trial folder): what learning
/// could not read. Returns (missing, judged).
pub fn missing_trajectories(trials: &[TrialRow]) -> (Vec<&TrialRow>, usize) {
    let judged: Vec<&TrialRow> = trials
        .iter()
        .filter(|t| t.status == TrialStatus::Done && t.outcome.is_some_and(Outcome::is_verdict))
        .collect();
    let missing = judged
        .iter()
        .copied()
        .filter(|t| {
            let path = t
                .trajectory_path
                .as_deref()
                .map(Path::new)
                .map(Path::to_path_buf)
                .or_else(|| {
                    t.trial_dir
                        .as_deref()
                        .map(|d| Path::new(d).join("agent/trajectory.json"))
                });
            !path.is_some_and(|p| std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()))
        })
        .collect();
    (missing, judged.len())
}

/// Checks run `from.run` of `store` against the plan's round 1 `plan` and returns what to record:
/// the run, where it came from and the differences `from.allow` accepted.
///
/// # Errors
/// [`ExperimentError::Baseline`] naming every refused difference with both values (a missing
/// run, a run not finished, trajectories missing, a task set, digest, harness, version, model,
/// agent settings, trials or conditions that differ); store errors.
pub fn check(
    store: &Store,
    experiment: &str,
    from: &BaselineFrom,
    plan: &Provenance,
) -> Result<BaselineRow, ExperimentError> {
    let conn = store.connect()?;
    let db = store.path().display().to_string();
    let refuse = |why: String| {
        ExperimentError::Baseline(format!(
            "--baseline-from {}: {why}",
            crate::sanitize::text(&from.run)
        ))
    };
    let Some(run) = queries::find_run(&conn, &from.run)? else {
        return Err(refuse(format!(
            "no run of that name in {db} (`skillscope status --db {db}` lists them; import a Harbor job first with `skillscope import`)"
        )));
    };
    if !matches!(run.status.as_str(), "finished" | "imported") {
        return Err(refuse(format!(
            "the run is {}, not finished: its trials are not all judged (finish it with `skillscope run`, or name a finished run)",
            run.status
        )));
    }
    let tasks = queries::run_tasks(&conn, run.id)?;
    let trials = queries::current_trials(&conn, run.id)?;
    let trial_plan = queries::trial_plan(&conn, &run)?;
    let stored = Provenance::of_run(&run, &tasks, &trials, &trial_plan);
    let mut mismatches = compare(&stored, plan);
    let (missing, judged) = missing_trajectories(&trials);
    if !missing.is_empty() {
        let first = missing[0]
            .trial_dir
            .clone()
            .unwrap_or_else(|| missing[0].trial_name.clone());
        mismatches.push(Mismatch {
            field: Field::Trajectories,
            task: None,
            left: format!(
                "{} of {judged} judged trial(s) without agent/trajectory.json (first: {})",
                missing.len(),
                crate::sanitize::text(&first)
            ),
            right: "learning reads every judged trial's trajectory".into(),
            unrecorded: false,
        });
    }
    let (accepted, refused): (Vec<Mismatch>, Vec<Mismatch>) = mismatches
        .into_iter()
        .partition(|m| from.allow.contains(&m.field));
    if !refused.is_empty() {
        let fields: BTreeSet<&str> = refused.iter().map(|m| m.field.key()).collect();
        return Err(refuse(format!(
            "run {} ({}) is not the round 1 experiment {experiment} would run — {}; pass --allow-drift {} to reuse it anyway (recorded with the experiment and in its report)",
            run.name,
            run.source,
            refused
                .iter()
                .map(|m| m.describe("run", "plan"))
                .collect::<Vec<_>>()
                .join("; "),
            fields
                .into_iter()
                .collect::<Vec<_>>()
                .join(" --allow-drift ")
        )));
    }
    Ok(BaselineRow {
        experiment: experiment.to_string(),
        run: run.name,
        run_id: run.id,
        source: run.source,
        db,
        checked_at: String::new(),
        accepted,
    })
}
