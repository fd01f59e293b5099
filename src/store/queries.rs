//! SQL for runs, tasks, trials, commands and events. Every function takes a `&Connection`, so it
//! works inside a writer job (a transaction) and on a reader connection alike.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::StoreError;
use super::model::*;
use super::owner::process_alive;

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
     provider_limit";

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
        "INSERT INTO run_tasks (run_id, task_id, domain, difficulty, path, problems)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (run_id, task_id) DO UPDATE SET domain = excluded.domain,
             difficulty = excluded.difficulty, path = excluded.path, problems = excluded.problems",
    )?;
    for t in tasks {
        st.execute(params![
            run_id,
            t.task_id,
            t.domain,
            t.difficulty,
            t.path,
            serde_json::to_string(&t.problems)?
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
        "SELECT task_id, domain, difficulty, path, problems FROM run_tasks WHERE run_id = ?1 ORDER BY task_id",
    )?;
    let rows = st.query_map([run_id], |r| {
        let problems: String = r.get(4)?;
        Ok(RunTaskRow {
            task_id: r.get(0)?,
            domain: r.get(1)?,
            difficulty: r.get(2)?,
            path: r.get(3)?,
            problems: serde_json::from_str(&problems).unwrap_or_default(),
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

const TRIAL_COLS: &str = "id, run_id, task_id, condition, trial_index, attempt, superseded, status, outcome, \
     reward, rewards, agent, model, host, image, container_id, trial_name, trial_dir, queued_at, started_at, \
     finished_at, build_started_at, build_finished_at, agent_started_at, agent_finished_at, \
     verifier_started_at, verifier_finished_at, agent_exit_code, verifier_exit_code, error, \
     n_input_tokens, n_cache_tokens, n_output_tokens, cost_usd, import_key, trajectory_path, n_steps, \
     n_tool_calls, tests_total, tests_passed, n_error_steps, final_message, aggregated, fault, \
     failure_category, agent_settings, live_steps, live_tool, last_output_at, stalled_at, \
     missing_env, clamped, image_builds";

fn trial_from_row(r: &Row<'_>) -> rusqlite::Result<TrialRow> {
    let rewards: Option<String> = r.get(10)?;
    Ok(TrialRow {
        id: r.get(0)?,
        run_id: r.get(1)?,
        task_id: r.get(2)?,
        condition: r.get(3)?,
        trial_index: r.get(4)?,
        attempt: r.get(5)?,
        superseded: r.get::<_, i64>(6)? != 0,
        status: r.get(7)?,
        outcome: r.get(8)?,
        reward: r.get(9)?,
        rewards: rewards.and_then(|s| serde_json::from_str(&s).ok()),
        agent: r.get(11)?,
        model: r.get(12)?,
        host: r.get(13)?,
        image: r.get(14)?,
        container_id: r.get(15)?,
        trial_name: r.get(16)?,
        trial_dir: r.get(17)?,
        queued_at: r.get(18)?,
        started_at: r.get(19)?,
        finished_at: r.get(20)?,
        build_started_at: r.get(21)?,
        build_finished_at: r.get(22)?,
        agent_started_at: r.get(23)?,
        agent_finished_at: r.get(24)?,
        verifier_started_at: r.get(25)?,
        verifier_finished_at: r.get(26)?,
        agent_exit_code: r.get(27)?,
        verifier_exit_code: r.get(28)?,
        error: r.get(29)?,
        n_input_tokens: r.get(30)?,
        n_cache_tokens: r.get(31)?,
        n_output_tokens: r.get(32)?,
        cost_usd: r.get(33)?,
        import_key: r.get(34)?,
        trajectory_path: r.get(35)?,
        n_steps: r.get(36)?,
        n_tool_calls: r.get(37)?,
        tests_total: r.get(38)?,
        tests_passed: r.get(39)?,
        n_error_steps: r.get(40)?,
        final_message: r.get(41)?,
        aggregated: r.get::<_, i64>(42)? != 0,
        failure_category: r.get(44)?,
        agent_settings: r
            .get::<_, Option<String>>(45)?
            .and_then(|s| serde_json::from_str(&s).ok()),
        fault: r.get(43)?,
        live_steps: r.get(46)?,
        live_tool: r.get(47)?,
        last_output_at: r.get(48)?,
        stalled_at: r.get(49)?,
        missing_env: json_column(r, 50)?,
        clamped: json_column(r, 51)?,
        image_builds: json_column(r, 52)?,
    })
}

/// A JSON text column (`None` when NULL or not JSON).
fn json_column(r: &Row<'_>, i: usize) -> rusqlite::Result<Option<serde_json::Value>> {
    Ok(r.get::<_, Option<String>>(i)?
        .and_then(|s| serde_json::from_str(&s).ok()))
}

fn trials_where(
    conn: &Connection,
    clause: &str,
    p: impl rusqlite::Params,
) -> Result<Vec<TrialRow>, StoreError> {
    let mut st = conn.prepare(&format!("SELECT {TRIAL_COLS} FROM trials WHERE {clause}"))?;
    let rows = st.query_map(p, trial_from_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// One attempt by row id.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn get_trial(conn: &Connection, id: i64) -> Result<TrialRow, StoreError> {
    trials_where(conn, "id = ?1", [id])?
        .pop()
        .ok_or_else(|| StoreError::NotFound(format!("no trial with id {id}")))
}

/// The latest attempt of every trial of a run, ordered by task, condition, trial index.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn current_trials(conn: &Connection, run_id: i64) -> Result<Vec<TrialRow>, StoreError> {
    trials_where(
        conn,
        "run_id = ?1 AND superseded = 0 ORDER BY task_id, condition, trial_index",
        [run_id],
    )
}

/// The latest attempt of every trial of a run, brief form, in no particular order. One cached
/// statement over the `(run_id, superseded, status)` index.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn current_briefs(conn: &Connection, run_id: i64) -> Result<Vec<TrialBrief>, StoreError> {
    let mut st = conn.prepare_cached(
        "SELECT id, task_id, condition, trial_index, attempt, status, outcome, reward, finished_at
         FROM trials WHERE run_id = ?1 AND superseded = 0",
    )?;
    let rows = st.query_map([run_id], |r| {
        Ok(TrialBrief {
            id: r.get(0)?,
            task_id: r.get(1)?,
            condition: r.get(2)?,
            trial_index: r.get(3)?,
            attempt: r.get(4)?,
            superseded: false,
            status: r.get(5)?,
            outcome: r.get(6)?,
            reward: r.get(7)?,
            finished_at: r.get(8)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The skills generated in one self-generated trial (its latest attempt).
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedOfTrial {
    /// Attempt row id.
    pub trial_id: i64,
    /// Task.
    pub task_id: String,
    /// Condition key.
    pub condition: String,
    /// Trial index.
    pub trial_index: u32,
    /// The trial folder.
    pub trial_dir: Option<String>,
    /// Its outcome, when it has one.
    pub outcome: Option<String>,
    /// What was generated ([`crate::skillsbench::selfgen::GeneratedSkills`]).
    pub generated: crate::skillsbench::selfgen::GeneratedSkills,
}

/// The generated skills of every latest attempt of `run_id` that recorded some, by task, then
/// condition and trial index.
///
/// # Errors
/// SQL errors (an unreadable record is skipped).
pub fn generated_skills(
    conn: &Connection,
    run_id: i64,
) -> Result<Vec<GeneratedOfTrial>, StoreError> {
    let mut st = conn.prepare_cached(
        "SELECT id, task_id, condition, trial_index, trial_dir, generated_skills, outcome FROM trials
         WHERE run_id = ?1 AND superseded = 0 AND generated_skills IS NOT NULL
         ORDER BY task_id, condition, trial_index",
    )?;
    let rows = st.query_map([run_id], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, u32>(3)?,
            r.get::<_, Option<String>>(4)?,
            r.get::<_, String>(5)?,
            r.get::<_, Option<String>>(6)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (trial_id, task_id, condition, trial_index, trial_dir, json, outcome) = row?;
        if let Ok(generated) = serde_json::from_str(&json) {
            out.push(GeneratedOfTrial {
                trial_id,
                task_id,
                condition,
                trial_index,
                trial_dir,
                outcome,
                generated,
            });
        }
    }
    Ok(out)
}

/// Tokens and cost spent on one condition of a run, over every attempt (superseded and
/// provider-failed ones too: they were paid for).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConditionSpend {
    /// Condition key.
    pub condition: String,
    /// Finished attempts that reported token usage.
    pub attempts: usize,
    /// Input tokens (cache included).
    pub input_tokens: i64,
    /// Output tokens.
    pub output_tokens: i64,
    /// Cost, USD, of the attempts that have one.
    pub cost_usd: f64,
    /// Attempts with a cost.
    pub priced: usize,
    /// Finished attempts without a cost (unknown: never counted as $0).
    pub unpriced: usize,
    /// Finished attempts without token counts (unknown: never counted as 0 tokens).
    pub untokened: usize,
}

/// [`ConditionSpend`] per condition of run `run_id` that has any attempt with usage (tokens or
/// a cost), by condition key.
///
/// # Errors
/// Database errors.
pub fn run_spend(conn: &Connection, run_id: i64) -> Result<Vec<ConditionSpend>, StoreError> {
    let mut st = conn.prepare_cached(
        "SELECT condition,
                COUNT(CASE WHEN n_input_tokens IS NOT NULL OR n_output_tokens IS NOT NULL THEN 1 END),
                SUM(COALESCE(n_input_tokens, 0)), SUM(COALESCE(n_output_tokens, 0)),
                SUM(COALESCE(cost_usd, 0.0)), COUNT(cost_usd),
                COUNT(CASE WHEN status = 'done' AND cost_usd IS NULL THEN 1 END),
                COUNT(CASE WHEN status = 'done' AND n_input_tokens IS NULL
                                AND n_output_tokens IS NULL THEN 1 END)
         FROM trials
         WHERE run_id = ?1
         GROUP BY condition
         HAVING COUNT(CASE WHEN n_input_tokens IS NOT NULL OR n_output_tokens IS NOT NULL
                           OR cost_usd IS NOT NULL THEN 1 END) > 0
         ORDER BY condition",
    )?;
    let rows = st.query_map([run_id], |r| {
        Ok(ConditionSpend {
            condition: r.get(0)?,
            attempts: r.get::<_, i64>(1)? as usize,
            input_tokens: r.get(2)?,
            output_tokens: r.get(3)?,
            cost_usd: r.get(4)?,
            priced: r.get::<_, i64>(5)? as usize,
            unpriced: r.get::<_, i64>(6)? as usize,
            untokened: r.get::<_, i64>(7)? as usize,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// What one attempt of a run spent and, while it runs, what its agent is doing: the dashboard's
/// cost, burn rate and live-activity figures ([`attempt_activity`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttemptActivity {
    /// Attempt row id.
    pub id: i64,
    /// Condition key.
    pub condition: String,
    /// Status (a running attempt's tokens and cost are its figures so far).
    pub status: TrialStatus,
    /// Input + output tokens, when the agent reported any.
    pub tokens: Option<i64>,
    /// Cost, USD, when priced.
    pub cost_usd: Option<f64>,
    /// When spending began: the agent's start, else the attempt's (RFC 3339).
    pub spend_from: Option<String>,
    /// When it ended: the agent's end, else the attempt's (RFC 3339); `None` while it runs.
    pub spend_to: Option<String>,
    /// Steps of the agent's trajectory so far.
    pub live_steps: Option<i64>,
    /// The agent's last tool call, one sanitized line.
    pub live_tool: Option<String>,
    /// When the agent last wrote output (RFC 3339).
    pub last_output_at: Option<String>,
    /// Since when the agent has been silent past the run's stall time (RFC 3339).
    pub stalled_at: Option<String>,
}

/// [`AttemptActivity`] of every attempt of run `run_id`, superseded ones included (they were paid
/// for), by id.
///
/// # Errors
/// Database errors.
pub fn attempt_activity(
    conn: &Connection,
    run_id: i64,
) -> Result<Vec<AttemptActivity>, StoreError> {
    let mut st = conn.prepare_cached(
        "SELECT id, condition, status,
                CASE WHEN n_input_tokens IS NULL AND n_output_tokens IS NULL THEN NULL
                     ELSE COALESCE(n_input_tokens, 0) + COALESCE(n_output_tokens, 0) END,
                cost_usd, COALESCE(agent_started_at, started_at),
                COALESCE(agent_finished_at, finished_at),
                live_steps, live_tool, last_output_at, stalled_at
         FROM trials WHERE run_id = ?1 ORDER BY id",
    )?;
    let rows = st.query_map([run_id], |r| {
        Ok(AttemptActivity {
            id: r.get(0)?,
            condition: r.get(1)?,
            status: r.get(2)?,
            tokens: r.get(3)?,
            cost_usd: r.get(4)?,
            spend_from: r.get(5)?,
            spend_to: r.get(6)?,
            live_steps: r.get(7)?,
            live_tool: r.get(8)?,
            last_output_at: r.get(9)?,
            stalled_at: r.get(10)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Every attempt of one trial, oldest first.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn trial_attempts(
    conn: &Connection,
    run_id: i64,
    key: &TrialKey,
) -> Result<Vec<TrialRow>, StoreError> {
    trials_where(
        conn,
        "run_id = ?1 AND task_id = ?2 AND condition = ?3 AND trial_index = ?4 ORDER BY attempt",
        params![run_id, key.task_id, key.condition, key.trial_index],
    )
}

/// Every attempt of a run, superseded ones included, by id.
///
/// # Errors
/// SQL errors.
pub fn all_trials(conn: &Connection, run_id: i64) -> Result<Vec<TrialRow>, StoreError> {
    trials_where(conn, "run_id = ?1 ORDER BY id", [run_id])
}

/// Queued attempts in execution order: trial index first, so every task and condition gets its
/// first trial before any gets its second (early, unbiased pass rates on a partial run).
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn queued_trials(conn: &Connection, run_id: i64) -> Result<Vec<TrialRow>, StoreError> {
    trials_where(
        conn,
        "run_id = ?1 AND superseded = 0 AND status = 'queued' ORDER BY trial_index, task_id, condition, id",
        [run_id],
    )
}

/// Inserts attempt 1 (queued) of every planned trial that does not exist yet. `name` gives the
/// Harbor trial name of (key, attempt). Returns how many were added.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn plan_trials(
    conn: &Connection,
    run: &RunRow,
    task_ids: &[String],
    name: &dyn Fn(&TrialKey, u32) -> String,
) -> Result<usize, StoreError> {
    let mut st = conn.prepare(
        "INSERT OR IGNORE INTO trials (run_id, task_id, condition, trial_index, attempt, status, agent, model,
                                       trial_name, queued_at)
         VALUES (?1, ?2, ?3, ?4, 1, 'queued', ?5, ?6, ?7, ?8)",
    )?;
    let now = now_rfc3339();
    let mut added = 0;
    for task in task_ids {
        for cond in &run.conditions {
            for idx in 1..=run.n_trials {
                let key = TrialKey {
                    task_id: task.clone(),
                    condition: cond.clone(),
                    trial_index: idx,
                };
                added += st.execute(params![
                    run.id,
                    task,
                    cond,
                    idx,
                    run.agent,
                    run.model,
                    name(&key, 1),
                    now
                ])?;
            }
        }
    }
    Ok(added)
}

/// Marks attempt `id` superseded and inserts the next attempt, queued. Returns the new attempt.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn new_attempt(
    conn: &Connection,
    id: i64,
    name: &dyn Fn(&TrialKey, u32) -> String,
) -> Result<TrialRow, StoreError> {
    let old = get_trial(conn, id)?;
    let attempts = trial_attempts(conn, old.run_id, &old.key())?;
    let next = attempts.iter().map(|a| a.attempt).max().unwrap_or(0) + 1;
    conn.execute(
        "UPDATE trials SET superseded = 1 WHERE run_id = ?1 AND task_id = ?2 AND condition = ?3 AND trial_index = ?4",
        params![old.run_id, old.task_id, old.condition, old.trial_index],
    )?;
    conn.execute(
        "INSERT INTO trials (run_id, task_id, condition, trial_index, attempt, status, agent, model, trial_name, queued_at)
         VALUES (?1, ?2, ?3, ?4, ?5, 'queued', ?6, ?7, ?8, ?9)",
        params![
            old.run_id,
            old.task_id,
            old.condition,
            old.trial_index,
            next,
            old.agent,
            old.model,
            name(&old.key(), next),
            now_rfc3339()
        ],
    )?;
    get_trial(conn, conn.last_insert_rowid())
}

/// Attempts left active (building/agent/verifying) — by a killed process or an interrupted one —
/// are closed as `interrupted` and a fresh queued attempt replaces each. Returns the closed ones.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn requeue_active(
    conn: &Connection,
    run_id: i64,
    name: &dyn Fn(&TrialKey, u32) -> String,
) -> Result<Vec<TrialRow>, StoreError> {
    let active = trials_where(
        conn,
        "run_id = ?1 AND superseded = 0 AND status IN ('building', 'agent', 'verifying')",
        [run_id],
    )?;
    for t in &active {
        finish_trial(
            conn,
            t.id,
            &TrialPatch {
                outcome: Some(Outcome::Interrupted),
                error: Some("the process running this attempt stopped; re-queued".into()),
                finished_at: Some(now_rfc3339()),
                ..Default::default()
            },
        )?;
        new_attempt(conn, t.id, name)?;
    }
    Ok(active)
}

/// Fields to change on an attempt; `None` leaves a column as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrialPatch {
    /// New status.
    pub status: Option<TrialStatus>,
    /// Outcome.
    pub outcome: Option<Outcome>,
    /// Scalar reward.
    pub reward: Option<f64>,
    /// All rewards.
    pub rewards: Option<serde_json::Value>,
    /// Docker host.
    pub host: Option<String>,
    /// Image tag.
    pub image: Option<String>,
    /// Container id.
    pub container_id: Option<String>,
    /// Trial folder.
    pub trial_dir: Option<String>,
    /// Attempt start.
    pub started_at: Option<String>,
    /// Attempt end.
    pub finished_at: Option<String>,
    /// Environment setup start.
    pub build_started_at: Option<String>,
    /// Environment setup end.
    pub build_finished_at: Option<String>,
    /// Agent start.
    pub agent_started_at: Option<String>,
    /// Agent end.
    pub agent_finished_at: Option<String>,
    /// Verifier start.
    pub verifier_started_at: Option<String>,
    /// Verifier end.
    pub verifier_finished_at: Option<String>,
    /// Agent exit code.
    pub agent_exit_code: Option<i64>,
    /// Verifier exit code.
    pub verifier_exit_code: Option<i64>,
    /// Error text.
    pub error: Option<String>,
    /// Input tokens (cached included).
    pub n_input_tokens: Option<i64>,
    /// Cached input tokens.
    pub n_cache_tokens: Option<i64>,
    /// Output tokens.
    pub n_output_tokens: Option<i64>,
    /// Cost, USD.
    pub cost_usd: Option<f64>,
    /// Trajectory file.
    pub trajectory_path: Option<String>,
    /// Steps in the trajectory.
    pub n_steps: Option<i64>,
    /// Tool calls in the trajectory.
    pub n_tool_calls: Option<i64>,
    /// CTRF tests.
    pub tests_total: Option<i64>,
    /// CTRF tests passed.
    pub tests_passed: Option<i64>,
    /// Trajectory steps that look failed.
    pub n_error_steps: Option<i64>,
    /// The agent ended with a message.
    pub final_message: Option<bool>,
    /// The infrastructure fault that interrupted the attempt.
    pub fault: Option<String>,
    /// Steps of the agent's trajectory so far.
    pub live_steps: Option<i64>,
    /// The agent's last tool call, one line.
    pub live_tool: Option<String>,
    /// When the agent last wrote output.
    pub last_output_at: Option<String>,
    /// Failure category (`analysis::failure_category`).
    pub failure_category: Option<String>,
    /// Agent settings, JSON.
    pub agent_settings: Option<serde_json::Value>,
    /// Skills the agent generated in a self-generated trial, JSON
    /// ([`crate::skillsbench::selfgen::GeneratedSkills`]).
    pub generated_skills: Option<serde_json::Value>,
    /// Names of needed environment values left empty (`--allow-missing-env`), JSON array.
    pub missing_env: Option<serde_json::Value>,
    /// The task's CPU or memory request cut to the host's, JSON.
    pub clamped: Option<serde_json::Value>,
    /// The trial's images and their build seconds, JSON.
    pub image_builds: Option<serde_json::Value>,
}

/// A current attempt whose environment differed from what its task asked: needed values left
/// empty (`--allow-missing-env`) or a CPU or memory request cut to the host's.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvironmentMark {
    /// Task id.
    pub task_id: String,
    /// Condition key.
    pub condition: String,
    /// Names of the values left empty.
    pub missing_env: Vec<String>,
    /// What was cut (`trials.clamped`).
    pub clamped: Option<serde_json::Value>,
}

/// The current attempts of run `run_id` with a `missing_env` or `clamped` mark, by task.
///
/// # Errors
/// SQL errors.
pub fn environment_marks(
    conn: &Connection,
    run_id: i64,
) -> Result<Vec<EnvironmentMark>, StoreError> {
    let mut st = conn.prepare_cached(
        "SELECT task_id, condition, missing_env, clamped FROM trials
         WHERE run_id = ?1 AND superseded = 0 AND (missing_env IS NOT NULL OR clamped IS NOT NULL)
         ORDER BY task_id, condition, trial_index",
    )?;
    let rows = st.query_map([run_id], |r| {
        let json = |i: usize| -> rusqlite::Result<Option<serde_json::Value>> {
            Ok(r.get::<_, Option<String>>(i)?
                .and_then(|s| serde_json::from_str(&s).ok()))
        };
        Ok(EnvironmentMark {
            task_id: r.get(0)?,
            condition: r.get(1)?,
            missing_env: json(2)?
                .and_then(|v| serde_json::from_value(v).ok())
                .unwrap_or_default(),
            clamped: json(3)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Applies a patch to attempt `id`.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn patch_trial(conn: &Connection, id: i64, p: &TrialPatch) -> Result<(), StoreError> {
    let mut sets: Vec<String> = Vec::new();
    let mut vals: Vec<rusqlite::types::Value> = Vec::new();
    let mut set = |col: &str, v: rusqlite::types::Value| {
        vals.push(v);
        sets.push(format!("{col} = ?{}", vals.len()));
    };
    use rusqlite::types::Value as V;
    let text = |s: &Option<String>| s.clone().map(V::Text);
    let json = |v: &Option<serde_json::Value>| v.as_ref().map(|v| V::Text(v.to_string()));
    let fields: [(&str, Option<V>); 40] = [
        ("status", p.status.map(|s| V::Text(s.as_str().into()))),
        ("outcome", p.outcome.map(|o| V::Text(o.as_str().into()))),
        ("reward", p.reward.map(V::Real)),
        (
            "rewards",
            p.rewards.as_ref().map(|r| V::Text(r.to_string())),
        ),
        ("host", text(&p.host)),
        ("image", text(&p.image)),
        ("container_id", text(&p.container_id)),
        ("trial_dir", text(&p.trial_dir)),
        ("started_at", text(&p.started_at)),
        ("finished_at", text(&p.finished_at)),
        ("build_started_at", text(&p.build_started_at)),
        ("build_finished_at", text(&p.build_finished_at)),
        ("agent_started_at", text(&p.agent_started_at)),
        ("agent_finished_at", text(&p.agent_finished_at)),
        ("verifier_started_at", text(&p.verifier_started_at)),
        ("verifier_finished_at", text(&p.verifier_finished_at)),
        ("agent_exit_code", p.agent_exit_code.map(V::Integer)),
        ("verifier_exit_code", p.verifier_exit_code.map(V::Integer)),
        ("error", text(&p.error)),
        ("n_input_tokens", p.n_input_tokens.map(V::Integer)),
        ("n_cache_tokens", p.n_cache_tokens.map(V::Integer)),
        ("n_output_tokens", p.n_output_tokens.map(V::Integer)),
        ("cost_usd", p.cost_usd.map(V::Real)),
        ("trajectory_path", text(&p.trajectory_path)),
        ("n_steps", p.n_steps.map(V::Integer)),
        ("n_tool_calls", p.n_tool_calls.map(V::Integer)),
        ("tests_total", p.tests_total.map(V::Integer)),
        ("tests_passed", p.tests_passed.map(V::Integer)),
        ("n_error_steps", p.n_error_steps.map(V::Integer)),
        (
            "final_message",
            p.final_message.map(|b| V::Integer(b as i64)),
        ),
        ("fault", text(&p.fault)),
        ("live_steps", p.live_steps.map(V::Integer)),
        ("live_tool", text(&p.live_tool)),
        ("last_output_at", text(&p.last_output_at)),
        ("failure_category", text(&p.failure_category)),
        (
            "agent_settings",
            p.agent_settings.as_ref().map(|v| V::Text(v.to_string())),
        ),
        (
            "generated_skills",
            p.generated_skills.as_ref().map(|v| V::Text(v.to_string())),
        ),
        ("missing_env", json(&p.missing_env)),
        ("clamped", json(&p.clamped)),
        ("image_builds", json(&p.image_builds)),
    ];
    for (col, v) in fields {
        if let Some(v) = v {
            set(col, v);
        }
    }
    if sets.is_empty() {
        return Ok(());
    }
    vals.push(V::Integer(id));
    let sql = format!(
        "UPDATE trials SET {} WHERE id = ?{}",
        sets.join(", "),
        vals.len()
    );
    conn.execute(&sql, rusqlite::params_from_iter(vals))?;
    Ok(())
}

/// Marks attempt `id` stalled since `since`, or not stalled (`None`).
///
/// # Errors
/// SQL errors.
pub fn set_stalled(conn: &Connection, id: i64, since: Option<&str>) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE trials SET stalled_at = ?2 WHERE id = ?1",
        params![id, since],
    )?;
    Ok(())
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

/// Closes attempt `id`: status `done` plus the patch (outcome, reward, times, error).
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn finish_trial(conn: &Connection, id: i64, p: &TrialPatch) -> Result<(), StoreError> {
    patch_trial(
        conn,
        id,
        &TrialPatch {
            status: Some(TrialStatus::Done),
            ..p.clone()
        },
    )
}

/// The trials planned per task and condition of `run` (see [`TrialPlan`]): for a task and
/// condition with `trial_plans` rows, the sum of their counts, never fewer than the latest attempts
/// recorded; elsewhere the run's `n_trials`. A run with `trial_plans` rows (an import) has an
/// explicit plan: a task and condition without rows planned what it holds — its latest attempts
/// (a store imported before plans were recorded), else nothing.
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

/// Replaces the skill uses recorded for attempt `trial_id`.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn set_skill_uses(
    conn: &Connection,
    trial_id: i64,
    uses: &[SkillUseRow],
) -> Result<(), StoreError> {
    conn.execute("DELETE FROM skill_uses WHERE trial_id = ?1", [trial_id])?;
    let mut st = conn.prepare_cached(
        "INSERT INTO skill_uses (trial_id, skill, kind, first_step, count) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for u in uses {
        st.execute(params![trial_id, u.skill, u.kind, u.first_step, u.count])?;
    }
    Ok(())
}

/// The skill uses of attempt `trial_id`, by skill and kind.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn skill_uses(conn: &Connection, trial_id: i64) -> Result<Vec<SkillUseRow>, StoreError> {
    let mut st = conn.prepare_cached(
        "SELECT skill, kind, first_step, count FROM skill_uses WHERE trial_id = ?1 ORDER BY skill, kind",
    )?;
    let rows = st.query_map([trial_id], |r| {
        Ok(SkillUseRow {
            skill: r.get(0)?,
            kind: r.get(1)?,
            first_step: r.get(2)?,
            count: r.get(3)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Writes an operator command for the engine.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn insert_command(
    conn: &Connection,
    run_id: i64,
    kind: CommandKind,
    trial_id: i64,
) -> Result<i64, StoreError> {
    conn.execute(
        "INSERT INTO commands (run_id, kind, trial_id, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![run_id, kind, trial_id, now_rfc3339()],
    )?;
    Ok(conn.last_insert_rowid())
}

/// Pending commands of a run, oldest first.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn pending_commands(conn: &Connection, run_id: i64) -> Result<Vec<CommandRow>, StoreError> {
    let mut st = conn.prepare(
        "SELECT id, run_id, kind, trial_id, created_at, state, note FROM commands
         WHERE run_id = ?1 AND state = 'pending' ORDER BY id",
    )?;
    let rows = st.query_map([run_id], |r| {
        Ok(CommandRow {
            id: r.get(0)?,
            run_id: r.get(1)?,
            kind: r.get(2)?,
            trial_id: r.get(3)?,
            created_at: r.get(4)?,
            state: r.get(5)?,
            note: r.get(6)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Marks a command handled (`done` or `rejected`) with a note.
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn close_command(conn: &Connection, id: i64, done: bool, note: &str) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE commands SET state = ?2, handled_at = ?3, note = ?4 WHERE id = ?1",
        params![
            id,
            if done { "done" } else { "rejected" },
            now_rfc3339(),
            note
        ],
    )?;
    Ok(())
}

/// Appends a run event (`info`, `warn` or `error`).
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn add_event(
    conn: &Connection,
    run_id: i64,
    level: &str,
    message: &str,
) -> Result<(), StoreError> {
    add_event_at(conn, run_id, &now_rfc3339(), level, message)
}

/// Appends a run event stamped `at` (RFC 3339).
///
/// # Errors
/// SQL errors.
pub fn add_event_at(
    conn: &Connection,
    run_id: i64,
    at: &str,
    level: &str,
    message: &str,
) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO run_events (run_id, at, level, message) VALUES (?1, ?2, ?3, ?4)",
        params![run_id, at, level, message],
    )?;
    Ok(())
}

/// A run's events after event `after` (row id; 0 for all), oldest first, at most `limit`:
/// (id, time, level, message). Read incrementally by the dashboard's event log.
///
/// # Errors
/// SQL errors.
pub fn events_after(
    conn: &Connection,
    run_id: i64,
    after: i64,
    limit: usize,
) -> Result<Vec<(i64, String, String, String)>, StoreError> {
    let mut st = conn.prepare_cached(
        "SELECT id, at, level, message FROM run_events WHERE run_id = ?1 AND id > ?2
         ORDER BY id LIMIT ?3",
    )?;
    let rows = st.query_map(params![run_id, after, limit as i64], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The latest `limit` events of a run, oldest first: (time, level, message).
///
/// # Errors
/// [`StoreError`] when the database fails.
pub fn recent_events(
    conn: &Connection,
    run_id: i64,
    limit: usize,
) -> Result<Vec<(String, String, String)>, StoreError> {
    let mut st = conn.prepare(
        "SELECT at, level, message FROM (SELECT id, at, level, message FROM run_events WHERE run_id = ?1
         ORDER BY id DESC LIMIT ?2) ORDER BY id",
    )?;
    let rows = st.query_map(params![run_id, limit as i64], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> Connection {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::schema::migrations()
            .to_latest(&mut c)
            .unwrap();
        c
    }

    fn new_run(c: &Connection) -> RunRow {
        insert_run(
            c,
            &NewRun {
                name: "r".into(),
                tasks_dir: "/t".into(),
                agent: "oracle".into(),
                model: None,
                n_trials: 2,
                conditions: vec!["no-skills".into(), "curated".into()],
                jobs_dir: "/j".into(),
                settings: serde_json::json!({}),
            },
        )
        .unwrap()
    }

    fn name(k: &TrialKey, a: u32) -> String {
        format!("{}__{}{}{}", k.task_id, k.condition, k.trial_index, a)
    }

    #[test]
    fn plan_is_idempotent_and_ordered() {
        let c = db();
        let run = new_run(&c);
        let tasks = vec!["b".to_string(), "a".to_string()];
        assert_eq!(plan_trials(&c, &run, &tasks, &name).unwrap(), 8);
        assert_eq!(plan_trials(&c, &run, &tasks, &name).unwrap(), 0);
        let q = queued_trials(&c, run.id).unwrap();
        let order: Vec<(u32, &str)> = q
            .iter()
            .map(|t| (t.trial_index, t.task_id.as_str()))
            .collect();
        assert_eq!(order[..4], [(1, "a"), (1, "a"), (1, "b"), (1, "b")]);
    }

    #[test]
    fn retry_and_requeue_keep_history() {
        let c = db();
        let run = new_run(&c);
        plan_trials(&c, &run, &["a".to_string()], &name).unwrap();
        let t = queued_trials(&c, run.id).unwrap().remove(0);
        patch_trial(
            &c,
            t.id,
            &TrialPatch {
                status: Some(TrialStatus::Agent),
                ..Default::default()
            },
        )
        .unwrap();
        let closed = requeue_active(&c, run.id, &name).unwrap();
        assert_eq!(closed.len(), 1);
        let attempts = trial_attempts(&c, run.id, &t.key()).unwrap();
        assert_eq!(attempts.len(), 2);
        assert_eq!(attempts[0].outcome, Some(Outcome::Interrupted));
        assert!(attempts[0].superseded);
        assert_eq!(attempts[1].status, TrialStatus::Queued);
        assert_eq!(attempts[1].attempt, 2);
        assert_eq!(current_trials(&c, run.id).unwrap().len(), 4);
    }

    #[test]
    fn claim_refuses_live_owner() {
        let c = db();
        let run = new_run(&c);
        let me = std::process::id();
        let dead = {
            let mut child = std::process::Command::new("true").spawn().unwrap();
            let pid = child.id();
            child.wait().unwrap();
            pid
        };
        // A fresh owner on another host blocks; the same owner may re-claim.
        claim_run(&c, run.id, me, "other-host", 30).unwrap();
        assert!(matches!(
            claim_run(&c, run.id, dead, "this-host", 30),
            Err(StoreError::Conflict(_))
        ));
        claim_run(&c, run.id, me, "other-host", 30).unwrap();
        // After a release anyone may.
        release_run(&c, run.id, false, Some("test")).unwrap();
        claim_run(&c, run.id, dead, "this-host", 30).unwrap();
        // An owner on this host whose process is gone (kill -9) is stale at once…
        claim_run(&c, run.id, me, "this-host", 30).unwrap();
        // …but a live one is not.
        assert!(matches!(
            claim_run(&c, run.id, dead, "this-host", 30),
            Err(StoreError::Conflict(_))
        ));
    }

    #[test]
    fn commands_round_trip() {
        let c = db();
        let run = new_run(&c);
        plan_trials(&c, &run, &["a".to_string()], &name).unwrap();
        let t = queued_trials(&c, run.id).unwrap().remove(0);
        let id = insert_command(&c, run.id, CommandKind::Retry, t.id).unwrap();
        let p = pending_commands(&c, run.id).unwrap();
        assert_eq!(p[0].kind, CommandKind::Retry);
        close_command(&c, id, false, "still queued").unwrap();
        assert!(pending_commands(&c, run.id).unwrap().is_empty());
    }
}
