//! The `sequential_designs`, `sequential_looks` and `early_stops` tables: a run's
//! group-sequential design, its looks at stage boundaries and the conditions it stopped.

use rusqlite::{Connection, OptionalExtension, params};

use crate::domain::sequential::{
    DesignRow, DesignSpec, EarlyStopRow, LookRow, SequentialRecord, Spending, Statistic,
};
use crate::store::StoreError;

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "[]".into())
}

fn parse<T: serde::de::DeserializeOwned + Default>(s: &str) -> T {
    serde_json::from_str(s).unwrap_or_default()
}

/// Records the design of run `d.run_id`, fixed when the run is created; recording it again
/// keeps the stored one (a design never changes under a run; the engine refuses another).
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn put_design(conn: &Connection, d: &DesignRow) -> Result<(), StoreError> {
    let s = &d.spec;
    conn.execute(
        "INSERT OR IGNORE INTO sequential_designs (run_id, stages, alpha, beta, stage_trials, efficacy,
             futility, comparisons, early_stop, note, fractions, futility_from, statistic, min_tasks,
             spending)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        params![
            d.run_id,
            s.stages as i64,
            s.alpha,
            s.beta,
            json(&s.stage_trials),
            json(&d.efficacy),
            json(&d.futility),
            json(&d.comparisons),
            d.early_stop,
            d.note,
            json(&s.fractions),
            s.futility_from.map(|f| f as i64),
            json(&s.statistic),
            s.min_tasks as i64,
            json(&s.spending).trim_matches('"'),
        ],
    )?;
    Ok(())
}

/// Records a look of run `run_id` (a look at a stage already recorded is kept as it was).
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn insert_look(conn: &Connection, run_id: i64, l: &LookRow) -> Result<(), StoreError> {
    conn.execute(
        "INSERT OR IGNORE INTO sequential_looks (run_id, comparison, stage, trials, n_tasks, mean_diff,
             se, z, bound, futility_bound, decision, why, adjusted, ci_low, ci_high, p_value, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        params![
            run_id,
            l.comparison,
            l.stage as i64,
            l.trials,
            l.n_tasks as i64,
            l.mean_diff.filter(|x| x.is_finite()),
            l.se.filter(|x| x.is_finite()),
            l.z.filter(|x| x.is_finite()),
            l.bound.filter(|x| x.is_finite()),
            l.futility_bound.filter(|x| x.is_finite()),
            l.decision.as_str(),
            l.why.as_str(),
            l.adjusted,
            l.ci.map(|c| c.0),
            l.ci.map(|c| c.1),
            l.p_value,
            l.at
        ],
    )?;
    Ok(())
}

/// Stops `condition` of run `run_id` early at `s.trials` trials per task: records the stop and
/// marks its queued latest attempts of a later trial index superseded — they leave the queue,
/// not run (never a failure: no outcome, no reward, outside the trials the run keeps). Returns
/// the ids of the attempts taken out. Attempts already running are left to finish. The cost
/// saved is `mean_cost` (USD per finished trial of the condition, when known) × those trials.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn stop_condition(
    conn: &Connection,
    run_id: i64,
    s: &EarlyStopRow,
    mean_cost: Option<f64>,
) -> Result<Vec<i64>, StoreError> {
    let mut st = conn.prepare(
        "SELECT id FROM trials WHERE run_id = ?1 AND condition = ?2 AND trial_index > ?3
           AND superseded = 0 AND status = 'queued' ORDER BY id",
    )?;
    let ids: Vec<i64> = st
        .query_map(params![run_id, s.condition, s.trials], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut up = conn.prepare_cached("UPDATE trials SET superseded = 1 WHERE id = ?1")?;
    for id in &ids {
        up.execute([id])?;
    }
    conn.execute(
        "INSERT INTO early_stops (run_id, condition, trials, comparison, stage, not_run, cost_saved, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT (run_id, condition) DO UPDATE SET not_run = not_run + excluded.not_run",
        params![
            run_id,
            s.condition,
            s.trials,
            s.comparison,
            s.stage as i64,
            ids.len() as i64,
            mean_cost.map(|c| c * ids.len() as f64),
            s.at
        ],
    )?;
    Ok(ids)
}

/// Takes queued attempt `id` of a condition stopped early out of the queue (a trial queued again
/// after the stop, beyond the trials the condition keeps); counted as not run.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn not_run(conn: &Connection, run_id: i64, condition: &str, id: i64) -> Result<(), StoreError> {
    let n = conn.execute(
        "UPDATE trials SET superseded = 1 WHERE id = ?1 AND status = 'queued' AND superseded = 0",
        [id],
    )?;
    conn.execute(
        "UPDATE early_stops SET not_run = not_run + ?3 WHERE run_id = ?1 AND condition = ?2",
        params![run_id, condition, n as i64],
    )?;
    Ok(())
}

/// The design, looks and stops of run `run_id`; `None` for a run without a design.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn sequential_record(
    conn: &Connection,
    run_id: i64,
) -> Result<Option<SequentialRecord>, StoreError> {
    let design = conn
        .query_row(
            "SELECT stages, alpha, beta, stage_trials, efficacy, futility, comparisons, early_stop, note,
                    fractions, futility_from, statistic, min_tasks, spending
             FROM sequential_designs WHERE run_id = ?1",
            [run_id],
            |r| {
                let stage_trials: Vec<u32> = parse(&r.get::<_, String>(3)?);
                let last = f64::from(*stage_trials.last().unwrap_or(&1)).max(1.0);
                let fractions: Option<String> = r.get(9)?;
                let fractions = fractions.map_or_else(
                    || stage_trials.iter().map(|k| f64::from(*k) / last).collect(),
                    |f| parse(&f),
                );
                let statistic: String = r.get(11)?;
                let spending: String = r.get(13)?;
                Ok(DesignRow {
                    run_id,
                    spec: DesignSpec {
                        stages: r.get::<_, i64>(0)?.max(0) as usize,
                        stage_trials,
                        fractions,
                        alpha: r.get(1)?,
                        beta: r.get(2)?,
                        spending: serde_json::from_value(serde_json::Value::String(spending))
                            .unwrap_or(Spending::OBrienFleming),
                        futility_from: r
                            .get::<_, Option<i64>>(10)?
                            .map(|f| f.max(1) as usize),
                        statistic: serde_json::from_str(&statistic).unwrap_or(Statistic::PairedZ),
                        min_tasks: r.get::<_, i64>(12)?.max(0) as usize,
                    },
                    efficacy: parse(&r.get::<_, String>(4)?),
                    futility: parse(&r.get::<_, String>(5)?),
                    comparisons: parse(&r.get::<_, String>(6)?),
                    early_stop: r.get(7)?,
                    note: r.get(8)?,
                })
            },
        )
        .optional()?;
    let Some(design) = design else {
        return Ok(None);
    };
    let mut st = conn.prepare(
        "SELECT comparison, stage, trials, n_tasks, mean_diff, se, z, bound, futility_bound,
                decision, why, adjusted, ci_low, ci_high, p_value, at
         FROM sequential_looks WHERE run_id = ?1 ORDER BY id",
    )?;
    let text = |i: usize, e: crate::domain::ParseEnumError| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))
    };
    let looks = st
        .query_map([run_id], |r| {
            let lo: Option<f64> = r.get(12)?;
            let hi: Option<f64> = r.get(13)?;
            let decision: String = r.get(9)?;
            let why: String = r.get(10)?;
            Ok(LookRow {
                comparison: r.get(0)?,
                stage: r.get::<_, i64>(1)?.max(0) as usize,
                trials: r.get(2)?,
                n_tasks: r.get::<_, i64>(3)?.max(0) as usize,
                mean_diff: r.get(4)?,
                se: r.get(5)?,
                z: r.get(6)?,
                bound: r.get(7)?,
                futility_bound: r.get(8)?,
                decision: decision.parse().map_err(|e| text(9, e))?,
                why: why.parse().map_err(|e| text(10, e))?,
                adjusted: r.get(11)?,
                ci: lo.zip(hi),
                p_value: r.get(14)?,
                at: r.get(15)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let mut st = conn.prepare(
        "SELECT condition, trials, comparison, stage, not_run, cost_saved, at FROM early_stops
         WHERE run_id = ?1 ORDER BY at, condition",
    )?;
    let stops = st
        .query_map([run_id], |r| {
            Ok(EarlyStopRow {
                condition: r.get(0)?,
                trials: r.get(1)?,
                comparison: r.get(2)?,
                stage: r.get::<_, i64>(3)?.max(0) as usize,
                not_run: r.get::<_, i64>(4)?.max(0) as usize,
                cost_saved_usd: r.get(5)?,
                at: r.get(6)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(SequentialRecord {
        design,
        looks,
        stops,
    }))
}

/// Trials per task each condition of run `run_id` stopped early keeps.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn early_stop_trials(conn: &Connection, run_id: i64) -> Result<Vec<(String, u32)>, StoreError> {
    let mut st = conn.prepare_cached(
        "SELECT condition, trials FROM early_stops WHERE run_id = ?1 ORDER BY condition",
    )?;
    let rows = st.query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Whether run `run_id` has a trial that started (anything but queued).
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn run_started(conn: &Connection, run_id: i64) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM trials WHERE run_id = ?1 AND status != 'queued')",
        )?
        .query_row([run_id], |r| r.get(0))?)
}
