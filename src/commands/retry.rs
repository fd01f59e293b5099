//! `skillscope retry` / `skillscope cancel`: write operator commands the run's engine picks up.
//!
//! Both follow the dashboard's rules: a task, condition or trial index the run does not have is an
//! error (exit 1) naming what the run does have; `retry` of one trial refuses a trial that passed
//! (unless `--force`) or has not finished; `cancel` refuses a trial that has finished.

use color_eyre::eyre::{Result, eyre};

use crate::cli::{RetryArgs, TrialSelector};
use crate::domain::{Outcome, RunRow, TrialRow, TrialStatus};
use crate::skillsbench::Condition;
use crate::store::{CommandKind, Store, queries};

/// The run and its trials the selector names (latest attempts). A `--task`, `--condition` or
/// `--trial` the run does not have is an error with the valid values as its hint.
fn select(conn: &rusqlite::Connection, sel: &TrialSelector) -> Result<(RunRow, Vec<TrialRow>)> {
    let run = super::find_run(conn, Some(&sel.run))?;
    if run.status == "imported" {
        return Err(crate::console::hinted(
            format!(
                "run {} was imported: its trials ran elsewhere, so none can be retried or cancelled here",
                run.name
            ),
            "run its tasks with skillscope run under another --run name",
        ));
    }
    if let Some(task) = &sel.task {
        let ids: Vec<String> = queries::run_tasks(conn, run.id)?
            .into_iter()
            .map(|t| t.task_id)
            .collect();
        if !ids.contains(task) {
            let shown: Vec<String> = crate::skillsbench::closest_first(task, &ids)
                .into_iter()
                .take(12)
                .collect();
            return Err(crate::console::hinted(
                format!("run {} has no task {task:?}", run.name),
                format!("its tasks (closest first): {}", shown.join(", ")),
            ));
        }
    }
    let condition = match &sel.condition {
        Some(c) => {
            let key = Condition::parse(c)?.key();
            if !run.conditions.contains(&key) {
                return Err(crate::console::hinted(
                    format!("run {} has no condition {c:?}", run.name),
                    format!("its conditions: {}", run.conditions.join(", ")),
                ));
            }
            Some(key)
        }
        None => None,
    };
    if let Some(i) = sel.trial
        && !(1..=run.n_trials).contains(&i)
    {
        return Err(eyre!(
            "run {} has trials 1 to {} per task and condition, not {i}",
            run.name,
            run.n_trials
        ));
    }
    let trials = queries::current_trials(conn, run.id)?
        .into_iter()
        .filter(|t| sel.task.as_ref().is_none_or(|x| &t.task_id == x))
        .filter(|t| condition.as_ref().is_none_or(|c| &t.condition == c))
        .filter(|t| sel.trial.is_none_or(|i| t.trial_index == i))
        .collect();
    Ok((run, trials))
}

/// `ledger-code-mapping curated #2`.
fn trial_label(t: &TrialRow) -> String {
    format!("{} {} #{}", t.task_id, t.condition, t.trial_index)
}

/// Runs `skillscope retry`: one trial (all of --task/--condition/--trial), or every finished trial
/// that did not pass (`--failed`) or was cancelled (`--cancelled`), within --task/--condition when
/// given.
///
/// # Errors
/// A missing database or run; a task, condition or trial the run does not have; one trial that
/// passed (without `--force`) or has not finished.
pub fn retry(args: RetryArgs) -> Result<()> {
    let conn = Store::open_existing(&args.target.db.db)?;
    crate::store::wait_when_locked(&conn)?;
    let (run, trials) = select(&conn, &args.target)?;
    let targets: Vec<&TrialRow> = if args.failed || args.cancelled {
        trials
            .iter()
            .filter(|t| t.status == TrialStatus::Done)
            .filter(|t| match t.outcome {
                Some(Outcome::Cancelled) => args.cancelled,
                Some(o) => args.failed && o.is_failed_for_retry(),
                None => args.failed,
            })
            .collect()
    } else {
        let sel = &args.target;
        if sel.task.is_none() || sel.condition.is_none() || sel.trial.is_none() {
            return Err(eyre!(
                "name one trial with --task, --condition and --trial, or use --failed or --cancelled"
            ));
        }
        let Some(t) = trials.first() else {
            return Err(eyre!("run {} has not planned that trial yet", run.name));
        };
        if t.status != TrialStatus::Done {
            return Err(eyre!(
                "{} has not finished yet ({}); only finished trials are retried",
                trial_label(t),
                t.status.as_str()
            ));
        }
        if t.outcome == Some(Outcome::Pass) && !args.force {
            return Err(crate::console::hinted(
                format!(
                    "{} passed; only failed or errored trials are retried",
                    trial_label(t)
                ),
                "add --force to run it again anyway (the pass stays in its history)",
            ));
        }
        vec![t]
    };
    if targets.is_empty() {
        println!("nothing to retry");
        return Ok(());
    }
    for t in &targets {
        queries::insert_command(&conn, run.id, CommandKind::Retry, t.id)?;
    }
    println!(
        "queued {} retry command(s); {}",
        targets.len(),
        super::engine_note(&run)
    );
    Ok(())
}

/// Runs `skillscope cancel` for one trial.
///
/// # Errors
/// A missing database or run; a task, condition or trial the run does not have; a selection of
/// more than one trial; a trial that has finished.
pub fn cancel(sel: TrialSelector) -> Result<()> {
    let conn = Store::open_existing(&sel.db.db)?;
    crate::store::wait_when_locked(&conn)?;
    let (run, trials) = select(&conn, &sel)?;
    let [t] = trials.as_slice() else {
        return Err(eyre!(
            "the selection matches {} trials; name one with --task, --condition and --trial",
            trials.len()
        ));
    };
    if t.status == TrialStatus::Done {
        return Err(eyre!(
            "{} has already finished ({}); only queued or running trials are cancelled",
            trial_label(t),
            t.outcome.map(Outcome::as_str).unwrap_or("done")
        ));
    }
    queries::insert_command(&conn, run.id, CommandKind::Cancel, t.id)?;
    println!(
        "cancel requested for {}; {}",
        trial_label(t),
        super::engine_note(&run)
    );
    Ok(())
}
