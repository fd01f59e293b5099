//! The `trial_plans` table: how many trials each import source planned per task and condition.

use rusqlite::Connection;

use crate::store::StoreError;
use crate::store::model::*;

/// The trials planned per task and condition of `run` (see [`TrialPlan`]): for a task and
/// condition with `trial_plans` rows, the sum of their counts, never fewer than the latest attempts
/// recorded; elsewhere the run's `n_trials`. A run with `trial_plans` rows (an import) has an
/// explicit plan: a task and condition without rows planned what it holds — its latest attempts
/// (a store imported before plans were recorded), else nothing. A condition stopped early by
/// the run's group-sequential design (`early_stops`) planned the trials per task it keeps.
///
/// # Errors
/// SQL errors.
pub fn trial_plan(conn: &Connection, run: &RunRow) -> Result<TrialPlan, StoreError> {
    let mut plan = TrialPlan::uniform(run.n_trials);
    let mut st = conn.prepare_cached(
        "SELECT p.task_id, p.condition, p.n,
                (SELECT COUNT(*) FROM trials t
                 WHERE t.run_id = ?1 AND t.superseded = 0 AND t.task_id = p.task_id
                   AND t.condition = p.condition)
         FROM (SELECT task_id, condition, SUM(n_trials) AS n FROM trial_plans
               WHERE run_id = ?1 GROUP BY task_id, condition) p",
    )?;
    let rows = st.query_map([run.id], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, i64>(2)?,
            r.get::<_, i64>(3)?,
        ))
    })?;
    for row in rows {
        let (task, cond, n, have) = row?;
        plan.explicit = true;
        plan.per_task
            .insert((task, cond), n.max(have).clamp(0, u32::MAX as i64) as u32);
    }
    if plan.explicit {
        let mut held = conn.prepare_cached(
            "SELECT task_id, condition, COUNT(*) FROM trials
             WHERE run_id = ?1 AND superseded = 0 GROUP BY task_id, condition",
        )?;
        let rows = held.query_map([run.id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })?;
        for row in rows {
            let (task, cond, have) = row?;
            plan.per_task
                .entry((task, cond))
                .or_insert(have.clamp(0, u32::MAX as i64) as u32);
        }
    }
    let stops = super::early_stop_trials(conn, run.id)?;
    if !stops.is_empty() {
        let mut st = conn.prepare_cached("SELECT task_id FROM run_tasks WHERE run_id = ?1")?;
        let tasks: Vec<String> = st
            .query_map([run.id], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        for (cond, kept) in stops {
            for t in &tasks {
                plan.per_task.insert((t.clone(), cond.clone()), kept);
            }
        }
    }
    Ok(plan)
}

/// Records that `source` (a Harbor job folder, a published file) planned `n_trials` trials of
/// `task_id` under `condition` in run `run_id`; recording the same source again replaces its
/// count, so a re-import never adds to it.
///
/// # Errors
/// SQL errors.
pub fn set_trial_plan(
    conn: &Connection,
    run_id: i64,
    source: &str,
    task_id: &str,
    condition: &str,
    n_trials: u32,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO trial_plans (run_id, source, task_id, condition, n_trials)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (run_id, source, task_id, condition) DO UPDATE SET n_trials = excluded.n_trials",
    )?
    .execute(rusqlite::params![run_id, source, task_id, condition, n_trials])?;
    Ok(())
}
