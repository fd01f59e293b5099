//! `report --format leaderboard`: a run's trials as SkillsBench's AgentBeats leaderboard takes
//! them (`benchflow-ai/skillsbench-leaderboard`, `results/<id>.json`, checked by its
//! `scripts/validate_results_schema.py` at commit 40d7d1b and scored by `queries/overall.sql`).
//!
//! One JSON object per file: `{status, participants: {agent: <AgentBeats UUID>}, results:
//! [shard…]}`, a shard per run × condition `{status, participants: {agent}, results: [row…]}`,
//! a row per finished trial (its latest attempt) with the keys the board requires — `task_id`,
//! `score_eligible`, `passed`, `reward`, `time_used`, `infra_failure_type`, `category`,
//! `difficulty` — and those its own worker adds (`trial_id`, `task_set`, `condition`,
//! `max_score`, `task_digest`, `has_skills`, `error_type`).
//!
//! A trial without a verdict (a provider error, skillscope's or Docker's own failure, a cancel,
//! an interruption) is **ineligible, not failed**: `score_eligible: false`, `passed: false`,
//! `reward: 0` and its `infra_failure_type` named; the board leaves it out of the pass rate and
//! the mean reward and counts it under "Infra Failed". A verdict is eligible with
//! `infra_failure_type: null`, as the board's proof verifier (`scripts/verify_private_proof.py`)
//! demands both ways. Trials not yet finished have no row; their shard is `partial`. A condition
//! stopped early by the run's group-sequential design has a row for each trial it keeps (every
//! task's first `k_s`); a trial that finished beyond the stop is kept in the store but in no row.
//!
//! This writer reads the store directly (runs, their tasks and latest attempts) and nothing of
//! the Markdown, JSON or CSV report; [`validate`] reimplements the board's rules.

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde::Serialize;

use crate::analysis::results::Selection;
use crate::domain::{Outcome, RunRow, TrialRow, TrialStatus};
use crate::skillsbench::Catalog;
use crate::skillsbench::condition::key_has_skills;
use crate::store::{StoreError, learning as lq, queries};

/// The file written in the report folder.
pub const FILE: &str = "leaderboard.json";

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Board {
    /// `completed` when every shard is, else `partial`.
    pub status: String,
    /// The participant: `{"agent": "<AgentBeats UUID>"}`.
    pub participants: Participants,
    /// One shard per run × condition.
    pub results: Vec<Shard>,
}

/// `participants`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Participants {
    /// The agent's AgentBeats id (top level) or its name (in a shard).
    pub agent: String,
}

/// One run × condition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shard {
    /// `completed` when every planned trial finished, else `partial`.
    pub status: String,
    /// `skillscope:<run>/<condition>`.
    pub participants: Participants,
    /// One row per finished trial.
    pub results: Vec<Row>,
}

/// One trial.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Task id.
    pub task_id: String,
    /// The trial's Harbor name (`<task>__<id>`).
    pub trial_id: String,
    /// The pinned task set (`skillsbench@1.1`), when the run had one.
    pub task_set: Option<String>,
    /// `no_skills`, `with_skills`, or skillscope's condition key for the others.
    pub condition: String,
    /// The trial has a verdict.
    pub score_eligible: bool,
    /// Eligible and full marks (reward ≥ 1).
    pub passed: bool,
    /// The verifier's reward clamped to [0, 1]; 0 for an ineligible trial.
    pub reward: f64,
    /// Always 1.
    pub max_score: f64,
    /// Seconds from the trial's start to its end; `null` when unknown.
    pub time_used: Option<f64>,
    /// Harbor 0.26's digest of the task folder the trial ran.
    pub task_digest: Option<String>,
    /// Whose digest `task_digest` is (`harbor-0.26`).
    pub task_digest_algorithm: String,
    /// The benchmark's category (the catalog's `v1_1_category`, else the run's domain).
    pub category: Option<String>,
    /// `easy`, `medium`, `hard`.
    pub difficulty: Option<String>,
    /// The condition gives the agent skills.
    pub has_skills: bool,
    /// Why an ineligible trial has no verdict; `null` for an eligible one.
    pub infra_failure_type: Option<String>,
    /// The same (the board's worker mirrors it).
    pub error_type: Option<String>,
}

/// What a trial without a verdict is called on the board: `participant_error` (the model
/// provider failed), `sandbox_error` (Docker or skillscope failed, or the run was interrupted),
/// `cancelled`; `None` for a verdict.
pub fn infra_failure_type(outcome: Outcome) -> Option<&'static str> {
    match outcome {
        o if o.is_verdict() => None,
        Outcome::ProviderError => Some("participant_error"),
        Outcome::Cancelled => Some("cancelled"),
        _ => Some("sandbox_error"),
    }
}

/// The board's name of a condition key.
fn board_condition(key: &str) -> String {
    match key {
        "no-skills" => "no_skills".into(),
        "curated" => "with_skills".into(),
        other => other.into(),
    }
}

/// The runs `selection` names (an experiment's round 1 and round 2).
fn runs_of(conn: &Connection, selection: &Selection) -> Result<Vec<RunRow>, StoreError> {
    let names: Vec<String> = match selection {
        Selection::Runs(names) => names.clone(),
        Selection::Experiment(name) => {
            let e = lq::find_experiment(conn, name)?
                .ok_or_else(|| StoreError::NotFound(format!("no experiment named {name:?}")))?;
            vec![e.round1_run, e.round2_run]
        }
    };
    let mut runs = Vec::new();
    for n in &names {
        match queries::find_run(conn, n)? {
            Some(r) => runs.push(r),
            None if matches!(selection, Selection::Experiment(_)) => {}
            None => return Err(StoreError::NotFound(format!("no run named {n:?}"))),
        }
    }
    Ok(runs)
}

/// Seconds between two RFC 3339 times.
fn seconds(a: Option<&str>, b: Option<&str>) -> Option<f64> {
    let a = chrono::DateTime::parse_from_rfc3339(a?).ok()?;
    let b = chrono::DateTime::parse_from_rfc3339(b?).ok()?;
    let ms = (b - a).num_milliseconds();
    (ms >= 0).then(|| ms as f64 / 1000.0)
}

/// One trial's row (`category` and `difficulty` from its task).
fn row(
    t: &TrialRow,
    task_set: Option<String>,
    category: Option<String>,
    difficulty: Option<String>,
) -> Row {
    let outcome = t.outcome.unwrap_or(Outcome::Interrupted);
    let eligible = outcome.is_verdict();
    let reward = if eligible {
        t.reward.map(|r| r.clamp(0.0, 1.0)).unwrap_or(0.0)
    } else {
        0.0
    };
    let infra = infra_failure_type(outcome).map(str::to_string);
    Row {
        task_id: t.task_id.clone(),
        trial_id: t.trial_name.clone(),
        task_set,
        condition: board_condition(&t.condition),
        score_eligible: eligible,
        passed: eligible && t.reward.is_some_and(crate::harbor::reward::is_pass),
        reward,
        max_score: 1.0,
        time_used: seconds(t.started_at.as_deref(), t.finished_at.as_deref()),
        task_digest: t.task_digest.clone(),
        task_digest_algorithm: "harbor-0.26".into(),
        category,
        difficulty,
        has_skills: key_has_skills(&t.condition),
        error_type: infra.clone(),
        infra_failure_type: infra,
    }
}

/// The board's rows for the runs of `selection`, under participant `agent` (an AgentBeats UUID;
/// `None` derives a stable one from the runs' ids, which the board will not know as registered).
///
/// # Errors
/// An unknown run or experiment; database errors.
pub fn build(
    conn: &Connection,
    selection: &Selection,
    agent: Option<&str>,
    catalog: &Catalog,
) -> Result<Board, StoreError> {
    let runs = runs_of(conn, selection)?;
    if runs.is_empty() {
        return Err(StoreError::NotFound("no run to report".into()));
    }
    let mut shards = Vec::new();
    for run in &runs {
        let tasks = queries::run_tasks(conn, run.id)?;
        let trials = queries::current_trials(conn, run.id)?;
        let task_set = run.task_set.as_ref().map(|p| p.label());
        // A condition stopped early by the run's sequential design keeps its first trials per
        // task; one that finished beyond them is in no row, so the shards stay balanced.
        let kept: std::collections::HashMap<String, u32> =
            queries::early_stop_trials(conn, run.id)?
                .into_iter()
                .collect();
        for condition in &run.conditions {
            let keep = kept.get(condition).copied().unwrap_or(u32::MAX);
            let of: Vec<&TrialRow> = trials
                .iter()
                .filter(|t| &t.condition == condition && t.trial_index <= keep)
                .collect();
            let finished = |t: &TrialRow| t.status == TrialStatus::Done && t.outcome.is_some();
            let rows: Vec<Row> = of
                .iter()
                .filter(|t| finished(t))
                .map(|t| {
                    let task = tasks.iter().find(|x| x.task_id == t.task_id);
                    let category = catalog
                        .get(&t.task_id)
                        .map(|c| c.v1_1_category.clone())
                        .filter(|c| !c.is_empty())
                        .or_else(|| task.map(|x| x.domain.clone()))
                        .filter(|c| !c.is_empty() && c != "unknown");
                    let difficulty = task
                        .map(|x| x.difficulty.clone())
                        .filter(|d| !d.is_empty() && d != "unknown");
                    row(t, task_set.clone(), category, difficulty)
                })
                .collect();
            if rows.is_empty() {
                continue;
            }
            let complete = of.iter().all(|t| finished(t)) && !of.is_empty();
            shards.push(Shard {
                status: if complete { "completed" } else { "partial" }.into(),
                participants: Participants {
                    agent: format!("skillscope:{}/{condition}", run.name),
                },
                results: rows,
            });
        }
    }
    let agent = match agent {
        Some(a) => a.to_string(),
        None => {
            let uids: Vec<&str> = runs.iter().map(|r| r.uid.as_str()).collect();
            uuid::Uuid::new_v5(
                &uuid::Uuid::NAMESPACE_URL,
                format!("skillscope:leaderboard:{}", uids.join(",")).as_bytes(),
            )
            .to_string()
        }
    };
    let status = if !shards.is_empty() && shards.iter().all(|s| s.status == "completed") {
        "completed"
    } else {
        "partial"
    };
    Ok(Board {
        status: status.into(),
        participants: Participants { agent },
        results: shards,
    })
}

/// True for an AgentBeats participant id: a UUID whose variant digit is 8, 9, a or b (the
/// board's `AGENTBEATS_UUID_RE`).
pub fn is_agentbeats_id(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let hex = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit());
    parts.len() == 5
        && hex(parts[0], 8)
        && hex(parts[1], 4)
        && hex(parts[2], 4)
        && hex(parts[3], 4)
        && hex(parts[4], 12)
        && matches!(
            parts[3].as_bytes()[0],
            b'8' | b'9' | b'a' | b'b' | b'A' | b'B'
        )
}

/// Checks a leaderboard file as the board does: every rule of
/// `benchflow-ai/skillsbench-leaderboard` `scripts/validate_results_schema.py` (commit 40d7d1b),
/// plus the proof verifier's eligibility rule (`scripts/verify_private_proof.py`, commit
/// 034de08: an ineligible row names its `infra_failure_type`, an eligible one has `null`).
/// Returns every problem, each with its JSON path; empty when the file would be accepted.
///
/// As the board's Python does, a boolean passes where a number is required (`isinstance(True,
/// int)`).
pub fn validate(v: &serde_json::Value) -> Vec<String> {
    use serde_json::Value;
    let mut errors = Vec::new();
    match v.get("participants") {
        Some(Value::Object(p)) => match p.get("agent") {
            Some(Value::String(a)) if !a.trim().is_empty() => {
                if !is_agentbeats_id(a.trim()) {
                    errors.push("participants.agent must be a registered AgentBeats UUID".into());
                }
            }
            _ => errors.push("participants.agent must be a non-empty string".into()),
        },
        _ => errors.push("missing participants object".into()),
    }
    let Some(Value::Array(results)) = v.get("results") else {
        errors.push("results must be a list".into());
        return errors;
    };
    if results.is_empty() {
        errors.push("results must contain at least one shard result".into());
    }
    let numeric = |x: &Value| x.is_number() || x.is_boolean();
    let mut rows = 0;
    for (i, shard) in results.iter().enumerate() {
        let at = format!("results[{i}]");
        let Value::Object(shard) = shard else {
            errors.push(format!("{at} must be an object"));
            continue;
        };
        if shard.contains_key("task_id") {
            errors.push(format!(
                "{at} uses legacy direct-row shape; wrap rows under {at}.results"
            ));
        }
        let Some(Value::Array(nested)) = shard.get("results") else {
            errors.push(format!("{at}.results must be a list"));
            continue;
        };
        if nested.is_empty() {
            errors.push(format!("{at}.results must contain at least one task row"));
            continue;
        }
        for (j, r) in nested.iter().enumerate() {
            rows += 1;
            let at = format!("{at}.results[{j}]");
            let Value::Object(r) = r else {
                errors.push(format!("{at} must be an object"));
                continue;
            };
            if r.get("task_id")
                .and_then(Value::as_str)
                .is_none_or(|s| s.trim().is_empty())
            {
                errors.push(format!("{at}.task_id must be a non-empty string"));
            }
            for key in ["score_eligible", "passed"] {
                if !r.get(key).is_some_and(Value::is_boolean) {
                    errors.push(format!("{at}.{key} must be boolean"));
                }
            }
            match r.get("reward") {
                None => errors.push(format!("{at}.reward is required")),
                Some(x) if !numeric(x) => errors.push(format!("{at}.reward must be numeric")),
                Some(_) => {}
            }
            match r.get("time_used") {
                None => errors.push(format!("{at}.time_used is required")),
                Some(x) if !x.is_null() && !numeric(x) => {
                    errors.push(format!("{at}.time_used must be numeric or null"))
                }
                Some(_) => {}
            }
            for key in ["infra_failure_type", "category", "difficulty"] {
                match r.get(key) {
                    None => errors.push(format!("{at}.{key} is required")),
                    Some(x) if !x.is_null() && !x.is_string() => {
                        errors.push(format!("{at}.{key} must be a string or null"))
                    }
                    Some(_) => {}
                }
            }
            let infra = r.get("infra_failure_type");
            match r.get("score_eligible") {
                Some(Value::Bool(false))
                    if infra.and_then(Value::as_str).is_none_or(|s| s.is_empty()) =>
                {
                    errors.push(format!(
                        "{at}.infra_failure_type is required for non-scoreable rows"
                    ))
                }
                Some(Value::Bool(true)) if infra.is_some_and(|x| !x.is_null()) => errors.push(
                    format!("{at}.infra_failure_type must be null for scoreable rows"),
                ),
                _ => {}
            }
        }
    }
    if rows == 0 && !results.is_empty() {
        errors.push("results must contain at least one task row".into());
    }
    errors
}

/// Builds the board for `selection`, checks it with [`validate`] and writes it to
/// `dir/leaderboard.json` (through a temporary file). Returns the file and the board.
///
/// # Errors
/// [`super::ReportError`]: the store, a board that fails its own rules (every problem named),
/// a file that cannot be written.
pub fn write(
    conn: &Connection,
    selection: &Selection,
    agent: Option<&str>,
    catalog: &Catalog,
    dir: &Path,
) -> Result<(PathBuf, Board), super::ReportError> {
    let board = build(conn, selection, agent, catalog)?;
    let value = serde_json::to_value(&board)?;
    let problems = validate(&value);
    if !problems.is_empty() {
        return Err(super::ReportError::Invalid {
            what: FILE.into(),
            problems: problems.join("; "),
        });
    }
    std::fs::create_dir_all(dir).map_err(|source| super::ReportError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let path = dir.join(FILE);
    // Written from the board itself, so the keys keep the board's own order.
    let mut text = serde_json::to_string_pretty(&board)?;
    text.push('\n');
    super::write_file(&path, text.as_bytes())?;
    Ok((path, board))
}
