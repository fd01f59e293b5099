//! `skillscope retry` / `skillscope cancel`: write operator commands the run's engine picks up.

use color_eyre::eyre::{Result, eyre};

use crate::cli::{RetryArgs, TrialSelector};
use crate::skillsbench::Condition;
use crate::store::{CommandKind, Outcome, Store, TrialRow, TrialStatus, queries};

fn select(
    conn: &rusqlite::Connection,
    sel: &TrialSelector,
) -> Result<(crate::store::RunRow, Vec<TrialRow>)> {
    let run = super::find_run(conn, Some(&sel.run))?;
    let condition = match &sel.condition {
        Some(c) => Some(Condition::parse(c)?.key()),
        None => None,
    };
    let trials = queries::current_trials(conn, run.id)?
        .into_iter()
        .filter(|t| sel.task.as_ref().is_none_or(|x| &t.task_id == x))
        .filter(|t| condition.as_ref().is_none_or(|c| &t.condition == c))
        .filter(|t| sel.trial.is_none_or(|i| t.trial_index == i))
        .collect();
    Ok((run, trials))
}

/// Runs `skillscope retry`: one trial (all of --task/--condition/--trial) or, with --failed, every
/// finished trial that did not pass.
///
/// # Errors
/// A missing database, run or trial.
pub fn retry(args: RetryArgs) -> Result<()> {
    let conn = Store::open_existing(&args.target.db.db)?;
    let (run, trials) = select(&conn, &args.target)?;
    let targets: Vec<&TrialRow> = if args.failed {
        trials
            .iter()
            .filter(|t| {
                t.status == TrialStatus::Done && t.outcome.is_some_and(Outcome::is_retryable)
            })
            .collect()
    } else {
        let sel = &args.target;
        if sel.task.is_none() || sel.condition.is_none() || sel.trial.is_none() {
            return Err(eyre!(
                "name one trial with --task, --condition and --trial, or use --failed"
            ));
        }
        trials.iter().collect()
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
/// A missing database, run or trial.
pub fn cancel(sel: TrialSelector) -> Result<()> {
    let conn = Store::open_existing(&sel.db.db)?;
    let (run, trials) = select(&conn, &sel)?;
    let [t] = trials.as_slice() else {
        return Err(eyre!(
            "the selection matches {} trials; name one with --task, --condition and --trial",
            trials.len()
        ));
    };
    queries::insert_command(&conn, run.id, CommandKind::Cancel, t.id)?;
    println!(
        "cancel requested for {} {} #{}; {}",
        t.task_id,
        t.condition,
        t.trial_index,
        super::engine_note(&run)
    );
    Ok(())
}
