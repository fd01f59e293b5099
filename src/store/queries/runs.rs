//! The `runs`, `hosts` and `run_tasks` tables: a run's identity, ownership, stop and wait
//! state, its Docker hosts' health and its task selection.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::store::StoreError;
use crate::store::model::*;
use crate::store::owner::process_alive;

/// What a new run is made of.
#[derive(Debug, Clone)]
pub struct NewRun {
    /// Unique name.
    pub name: String,
    /// Absolute tasks folder.
    pub tasks_dir: String,
    /// Agent name.
    pub agent: String,
    /// Model name.
    pub model: Option<String>,
    /// Trials per task and condition.
    pub n_trials: u32,
    /// Condition keys.
    pub conditions: Vec<String>,
    /// Jobs folder.
    pub jobs_dir: String,
    /// Settings JSON (no secret values).
    pub settings: serde_json::Value,
}

const RUN_COLS: &str = "id, name, created_at, tasks_dir, agent, model, n_trials, conditions, jobs_dir, \
     status, started_at, finished_at, owner_pid, heartbeat_at, settings, owner_host, uid, source, \
     stop_reason, waiting_since, waiting_reason, stop_requested_at, resume_command, max_cost_usd, \
     provider_limit, task_set";

fn run_from_row(r: &Row<'_>) -> rusqlite::Result<RunRow> {
    let conditions: String = r.get(7)?;
    let settings: String = r.get(14)?;
    Ok(RunRow {
        id: r.get(0)?,
        name: r.get(1)?,
        created_at: r.get(2)?,
        tasks_dir: r.get(3)?,
        agent: r.get(4)?,
        model: r.get(5)?,
        n_trials: r.get(6)?,
        conditions: serde_json::from_str(&conditions).unwrap_or_default(),
        jobs_dir: r.get(8)?,
        status: r.get(9)?,
        started_at: r.get(10)?,
        finished_at: r.get(11)?,
        owner_pid: r.get(12)?,
        heartbeat_at: r.get(13)?,
        settings: serde_json::from_str(&settings).unwrap_or(serde_json::Value::Null),
        owner_host: r.get(15)?,
        uid: r.get::<_, Option<String>>(16)?.unwrap_or_default(),
        source: r.get(17)?,
        stop_reason: r.get(18)?,
        waiting_since: r.get(19)?,
        waiting_reason: r.get(20)?,
        stop_requested_at: r.get(21)?,
        resume_command: r.get(22)?,
        max_cost_usd: r.get(23)?,
        provider_limit: r.get(24)?,
        task_set: r
            .get::<_, Option<String>>(25)?
            .and_then(|s| serde_json::from_str(&s).ok()),
    })
}

/// The run called `name`.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn find_run(conn: &Connection, name: &str) -> Result<Option<RunRow>, StoreError> {
    Ok(conn
        .query_row(
            &format!("SELECT {RUN_COLS} FROM runs WHERE name = ?1"),
            [name],
            run_from_row,
        )
        .optional()?)
}

/// The run with row id `id`.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn get_run(conn: &Connection, id: i64) -> Result<RunRow, StoreError> {
    conn.query_row(
        &format!("SELECT {RUN_COLS} FROM runs WHERE id = ?1"),
        [id],
        run_from_row,
    )
    .optional()?
    .ok_or_else(|| StoreError::NotFound(format!("no run with id {id}")))
}

/// Every run, newest first.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn list_runs(conn: &Connection) -> Result<Vec<RunRow>, StoreError> {
    let mut st = conn.prepare(&format!("SELECT {RUN_COLS} FROM runs ORDER BY id DESC"))?;
    let rows = st.query_map([], run_from_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Inserts a run in state `stopped`.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn insert_run(conn: &Connection, run: &NewRun) -> Result<RunRow, StoreError> {
    conn.execute(
        "INSERT INTO runs (name, created_at, tasks_dir, agent, model, n_trials, conditions, jobs_dir, status, settings, uid)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'stopped', ?9, ?10)",
        params![
            run.name,
            now_rfc3339(),
            run.tasks_dir,
            run.agent,
            run.model,
            run.n_trials,
            serde_json::to_string(&run.conditions)?,
            run.jobs_dir,
            run.settings.to_string(),
            uuid::Uuid::new_v4().simple().to_string(),
        ],
    )?;
    get_run(conn, conn.last_insert_rowid())
}

/// Takes ownership of a run for process `pid` on host `host`: status `running`, fresh heartbeat.
///
/// # Errors
/// [`StoreError::Conflict`] when another live process owns it: its heartbeat is younger than
/// `stale_after_secs` and, when it runs on this host, the process still exists.
pub fn claim_run(
    conn: &Connection,
    run_id: i64,
    pid: u32,
    host: &str,
    stale_after_secs: i64,
) -> Result<(), StoreError> {
    let run = get_run(conn, run_id)?;
    if run.status == "running"
        && let (Some(owner), Some(hb)) = (run.owner_pid, run.heartbeat_at.as_deref())
        && (owner != pid || run.owner_host.as_deref() != Some(host))
        && let Ok(hb) = chrono::DateTime::parse_from_rfc3339(hb)
    {
        let age = chrono::Utc::now().signed_duration_since(hb).num_seconds();
        let dead_here = run.owner_host.as_deref() == Some(host) && !process_alive(owner);
        if age < stale_after_secs && !dead_here {
            return Err(StoreError::Conflict(format!(
                "run {:?} is being run by process {owner} on {} (heartbeat {age}s ago); \
                 watch it with `skillscope watch {}` or stop it with `skillscope stop {}`",
                run.name,
                run.owner_host.as_deref().unwrap_or("?"),
                run.name,
                run.name
            )));
        }
    }
    let now = now_rfc3339();
    conn.execute(
        "UPDATE runs SET status = 'running', owner_pid = ?2, owner_host = ?4, heartbeat_at = ?3, started_at = ?3,
                finished_at = NULL, stop_reason = NULL, waiting_since = NULL, waiting_reason = NULL,
                stop_requested_at = NULL WHERE id = ?1",
        params![run_id, pid, now, host],
    )?;
    conn.execute("DELETE FROM run_hosts WHERE run_id = ?1", [run_id])?;
    Ok(())
}

/// Refreshes the owner's heartbeat.
///
/// # Errors
/// SQL errors.
pub fn heartbeat(conn: &Connection, run_id: i64, pid: u32) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE runs SET heartbeat_at = ?3 WHERE id = ?1 AND owner_pid = ?2",
        params![run_id, pid, now_rfc3339()],
    )?;
    Ok(())
}

/// Releases a run: status `finished` (every planned trial has a verdict) or `stopped` with the
/// reason (`None` only for `finished`).
///
/// # Errors
/// SQL errors.
pub fn release_run(
    conn: &Connection,
    run_id: i64,
    finished: bool,
    reason: Option<&str>,
) -> Result<(), StoreError> {
    let now = now_rfc3339();
    conn.execute(
        "UPDATE runs SET status = ?2, owner_pid = NULL, owner_host = NULL, heartbeat_at = NULL,
                waiting_since = NULL, waiting_reason = NULL, stop_requested_at = NULL, stop_reason = ?4,
                finished_at = CASE WHEN ?2 = 'finished' THEN ?3 ELSE finished_at END WHERE id = ?1",
        params![
            run_id,
            if finished { "finished" } else { "stopped" },
            now,
            reason
        ],
    )?;
    Ok(())
}

/// Records run `run_id` as running since `started_at`, owned by process `pid` on `host`, its
/// last heartbeat at `heartbeat_at` — a run's state on a given clock (synthetic runs for
/// snapshots and benchmarks); the engine takes a run with [`claim_run`] instead.
///
/// # Errors
/// SQL errors.
pub fn set_running_at(
    conn: &Connection,
    run_id: i64,
    started_at: &str,
    pid: u32,
    host: &str,
    heartbeat_at: &str,
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE runs SET status = 'running', started_at = ?2, owner_pid = ?3, owner_host = ?4,
                heartbeat_at = ?5 WHERE id = ?1",
        params![run_id, started_at, pid, host, heartbeat_at],
    )?;
    Ok(())
}

/// Records run `run_id` as finished, started at `started_at` and finished at `finished_at` — on
/// a given clock (synthetic runs); the engine releases a run with [`release_run`] instead.
///
/// # Errors
/// SQL errors.
pub fn set_finished_at(
    conn: &Connection,
    run_id: i64,
    started_at: &str,
    finished_at: &str,
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE runs SET status = 'finished', started_at = ?2, finished_at = ?3 WHERE id = ?1",
        params![run_id, started_at, finished_at],
    )?;
    Ok(())
}

/// Asks the engine running `run_id` to stop cleanly (from any process, any machine that shares
/// the database); it notices within a second. Returns false when the run is not running.
///
/// # Errors
/// SQL errors.
pub fn request_stop(conn: &Connection, run_id: i64) -> Result<bool, StoreError> {
    let n = conn.execute(
        "UPDATE runs SET stop_requested_at = ?2 WHERE id = ?1 AND status = 'running'",
        params![run_id, now_rfc3339()],
    )?;
    Ok(n > 0)
}

/// True when a stop of `run_id` was asked for and not yet honoured.
///
/// # Errors
/// SQL errors.
pub fn stop_requested(conn: &Connection, run_id: i64) -> Result<bool, StoreError> {
    Ok(conn
        .query_row(
            "SELECT stop_requested_at IS NOT NULL FROM runs WHERE id = ?1",
            [run_id],
            |r| r.get::<_, bool>(0),
        )
        .optional()?
        .unwrap_or(false))
}

/// Records that every Docker host of the run is down (since `since`, with the last error), or
/// clears it (`None`).
///
/// # Errors
/// SQL errors.
pub fn set_waiting(
    conn: &Connection,
    run_id: i64,
    waiting: Option<(&str, &str)>,
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE runs SET waiting_since = ?2, waiting_reason = ?3 WHERE id = ?1",
        params![run_id, waiting.map(|w| w.0), waiting.map(|w| w.1)],
    )?;
    Ok(())
}

/// Stores the command line that resumes the run.
///
/// # Errors
/// SQL errors.
pub fn set_resume_command(conn: &Connection, run_id: i64, command: &str) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE runs SET resume_command = ?2 WHERE id = ?1",
        params![run_id, command],
    )?;
    Ok(())
}

/// Records one Docker host's health for the run (replacing what was stored).
///
/// # Errors
/// SQL errors.
pub fn upsert_host(conn: &Connection, run_id: i64, h: &HostRow) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO run_hosts (run_id, host, state, since, last_error, slots, running, checked_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT (run_id, host) DO UPDATE SET state = excluded.state, since = excluded.since,
             last_error = excluded.last_error, slots = excluded.slots, running = excluded.running,
             checked_at = excluded.checked_at",
        params![
            run_id,
            h.host,
            h.state,
            h.since,
            h.last_error,
            h.slots as i64,
            h.running as i64,
            h.checked_at
        ],
    )?;
    Ok(())
}

/// The Docker hosts of a run with their health, in name order.
///
/// # Errors
/// SQL errors.
pub fn run_hosts(conn: &Connection, run_id: i64) -> Result<Vec<HostRow>, StoreError> {
    let mut st = conn.prepare(
        "SELECT host, state, since, last_error, slots, running, checked_at FROM run_hosts
         WHERE run_id = ?1 ORDER BY host",
    )?;
    let rows = st.query_map([run_id], |r| {
        Ok(HostRow {
            host: r.get(0)?,
            state: r.get(1)?,
            since: r.get(2)?,
            last_error: r.get(3)?,
            slots: r.get::<_, i64>(4)? as usize,
            running: r.get::<_, i64>(5)? as usize,
            checked_at: r.get(6)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Records the pinned task set a run was checked against (`runs.task_set`, JSON).
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn set_run_task_set(
    conn: &Connection,
    run_id: i64,
    pin: &crate::domain::TaskSetPin,
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE runs SET task_set = ?2 WHERE id = ?1",
        params![run_id, serde_json::to_string(pin)?],
    )?;
    Ok(())
}

/// Records (or refreshes) the run's task selection.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn upsert_run_tasks(
    conn: &Connection,
    run_id: i64,
    tasks: &[RunTaskRow],
) -> Result<(), StoreError> {
    let mut st = conn.prepare(
        "INSERT INTO run_tasks (run_id, task_id, domain, difficulty, path, problems, digest)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (run_id, task_id) DO UPDATE SET domain = excluded.domain,
             difficulty = excluded.difficulty, path = excluded.path, problems = excluded.problems,
             digest = COALESCE(run_tasks.digest, excluded.digest)",
    )?;
    for t in tasks {
        st.execute(params![
            run_id,
            t.task_id,
            t.domain,
            t.difficulty,
            t.path,
            serde_json::to_string(&t.problems)?,
            t.digest
        ])?;
    }
    Ok(())
}

/// The run's tasks, by id.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn run_tasks(conn: &Connection, run_id: i64) -> Result<Vec<RunTaskRow>, StoreError> {
    let mut st = conn.prepare(
        "SELECT task_id, domain, difficulty, path, problems, digest FROM run_tasks WHERE run_id = ?1 ORDER BY task_id",
    )?;
    let rows = st.query_map([run_id], |r| {
        let problems: String = r.get(4)?;
        Ok(RunTaskRow {
            task_id: r.get(0)?,
            domain: r.get(1)?,
            difficulty: r.get(2)?,
            path: r.get(3)?,
            problems: serde_json::from_str(&problems).unwrap_or_default(),
            digest: r.get(5)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Records the run's cost budget (USD; `None`: none).
///
/// # Errors
/// SQL errors.
pub fn set_budget(
    conn: &Connection,
    run_id: i64,
    max_cost_usd: Option<f64>,
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE runs SET max_cost_usd = ?2 WHERE id = ?1",
        params![run_id, max_cost_usd],
    )?;
    Ok(())
}

/// Records the current limit on concurrent agent sessions per provider (`None`: no provider).
///
/// # Errors
/// SQL errors.
pub fn set_provider_limit(
    conn: &Connection,
    run_id: i64,
    limit: Option<u32>,
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE runs SET provider_limit = ?2 WHERE id = ?1",
        params![run_id, limit],
    )?;
    Ok(())
}
