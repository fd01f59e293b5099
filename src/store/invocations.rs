//! The SQL of the skill scoring rubric's invocations (`skill_invocations`, `skill_scoring`): the
//! evidence a run's invocations are scored from, the scored rows kept in line with the trials,
//! the scoring marker, and the rubric's dashboard queries (verbatim but for the window). The
//! scoring itself — the rubric's fields, tiers, trends and gates — is `analysis::invocations`'.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::{Outcome, StoreError};

/// What an invocation is scored from: one trial (latest attempt) × one skill it used.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TrialEvidence {
    /// Trial (attempt) row id.
    pub trial_id: i64,
    /// Run row id.
    pub run_id: i64,
    /// The skill used.
    pub skill_name: String,
    /// Task id.
    pub task_id: String,
    /// Task domain from the run's task selection, when known.
    pub domain: Option<String>,
    /// Outcome.
    pub outcome: Option<Outcome>,
    /// Verifier reward.
    pub reward: Option<f64>,
    /// CTRF tests.
    pub tests_total: Option<i64>,
    /// CTRF tests passed.
    pub tests_passed: Option<i64>,
    /// Input tokens (cached included).
    pub n_input_tokens: Option<i64>,
    /// Output tokens.
    pub n_output_tokens: Option<i64>,
    /// Tool calls in the trajectory.
    pub n_tool_calls: Option<i64>,
    /// Trajectory steps that look failed.
    pub n_error_steps: Option<i64>,
    /// The agent ended with a message.
    pub final_message: Option<bool>,
    /// Agent phase start, RFC 3339.
    pub agent_started_at: Option<String>,
    /// Agent phase end.
    pub agent_finished_at: Option<String>,
    /// Trial start.
    pub started_at: Option<String>,
    /// Trial end.
    pub finished_at: Option<String>,
    /// When the attempt was queued (the timestamp of last resort).
    pub queued_at: String,
}

/// Driven by `skill_uses` (`CROSS JOIN` fixes the order), each use finding its trial by primary
/// key: skill uses are fewer than trials (no-skills trials have none), so this reads less than
/// walking the run's trials. The task's domain is looked up in Rust from the run's task list.
const EVIDENCE_SQL: &str = "
SELECT t.id, t.run_id, su.skill, t.task_id, t.outcome, t.reward, t.tests_total,
       t.tests_passed, t.n_input_tokens, t.n_output_tokens, t.n_tool_calls, t.n_error_steps,
       t.final_message, t.agent_started_at, t.agent_finished_at, t.started_at, t.finished_at,
       t.queued_at
FROM skill_uses su
CROSS JOIN trials t ON t.id = su.trial_id
WHERE t.run_id = ?1 AND t.superseded = 0 AND t.status = 'done' AND t.aggregated = 0
  AND t.condition != ?2
GROUP BY su.trial_id, su.skill
ORDER BY su.trial_id, su.skill";

/// What the trajectories of one task's latest attempts under one condition show of skills: the
/// skills they used, and how many attempts show skill use at all (a trajectory, or recorded skill
/// uses; without either, skill use is unknown).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SkillsSeen {
    /// Attempts with a trajectory or recorded skill uses.
    pub with_trajectory: usize,
    /// Distinct skills their trajectories used.
    pub skills: std::collections::BTreeSet<String>,
}

/// Per task, what the latest attempts of condition `condition` of run `run_id` show of skills
/// ([`SkillsSeen`]): for an imported condition whose task folders are not on this machine, the
/// only evidence of the skills it had.
///
/// # Errors
/// Database errors.
pub fn skills_seen(
    conn: &Connection,
    run_id: i64,
    condition: &str,
) -> Result<std::collections::BTreeMap<String, SkillsSeen>, StoreError> {
    let mut out: std::collections::BTreeMap<String, SkillsSeen> = Default::default();
    // One row per (trial, skill use), or one with NULLs for a trial with no use: one probe of
    // `skill_uses`' primary key per trial (two correlated sub-queries per trial cost 4× more at
    // 10⁶ trials, issue 37). A trial shows skills when it kept a trajectory or used one.
    let mut st = conn.prepare_cached(
        "SELECT t.id, t.task_id, t.trajectory_path IS NOT NULL, u.skill
         FROM trials t LEFT JOIN skill_uses u ON u.trial_id = t.id
         WHERE t.run_id = ?1 AND t.condition = ?2 AND t.superseded = 0",
    )?;
    // Per task, the ids of its attempts that show skills (an attempt has one row per use, so
    // the same id can come more than once; counted after sorting and deduplicating).
    // Rows of one task mostly come together: the task last seen is found without a look-up.
    let mut by_task: Vec<(String, SkillsSeen, Vec<i64>)> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = Default::default();
    let mut last: Option<usize> = None;
    let mut rows = st.query(params![run_id, condition])?;
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        let decode = |e: rusqlite::types::FromSqlError| {
            StoreError::Decode(format!("trials.task_id or skill_uses.skill: {e}"))
        };
        let task = r.get_ref(1)?.as_str().map_err(decode)?;
        let trajectory: bool = r.get(2)?;
        let skill = r.get_ref(3)?.as_str_or_null().map_err(decode)?;
        let at = match last.filter(|&i| by_task[i].0 == task) {
            Some(i) => i,
            None => match index.get(task) {
                Some(&i) => i,
                None => {
                    by_task.push((task.to_string(), SkillsSeen::default(), Vec::new()));
                    index.insert(task.to_string(), by_task.len() - 1);
                    by_task.len() - 1
                }
            },
        };
        last = Some(at);
        let (_, e, ids) = &mut by_task[at];
        if let Some(skill) = skill.filter(|s| !e.skills.contains(*s)) {
            e.skills.insert(skill.to_string());
        }
        if trajectory || skill.is_some() {
            ids.push(id);
        }
    }
    for (task, mut e, mut ids) in by_task {
        ids.sort_unstable();
        ids.dedup();
        e.with_trajectory = ids.len();
        out.insert(task, e);
    }
    Ok(out)
}

/// The time window and runs of a dashboard query.
///
/// The rubric's queries keep invocations with `timestamp > datetime('now', '-30 days')`. Here
/// `reference` replaces `'now'` (any SQLite time value: `'now'`, RFC 3339 such as
/// `2026-11-21T10:00:00Z`, `YYYY-MM-DD HH:MM:SS`), so a report on an old run can be anchored at
/// the run's end, and `days` replaces 30. Like the rubric there is no upper bound: invocations
/// after the reference time are kept.
///
/// Stored timestamps are in `datetime()`'s `YYYY-MM-DD HH:MM:SS` form (UTC), so the rubric's text
/// comparison is chronological, as it is in the rubric's own database (RFC 3339's `T` would sort
/// every time of the cut-off day after it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// Reference time (SQLite time value); `None` = `'now'`.
    pub reference: Option<String>,
    /// Length in days (the rubric's 30).
    pub days: u32,
    /// Run row ids to include; empty = every run.
    pub runs: Vec<i64>,
}

impl Window {
    /// The rubric's window: the last 30 days before now, every run.
    pub fn rubric() -> Window {
        Window {
            reference: None,
            days: 30,
            runs: Vec::new(),
        }
    }

    /// The 30 days before `reference` (a SQLite time value, e.g. RFC 3339), for `runs`.
    pub fn at(reference: &str, runs: &[i64]) -> Window {
        Window {
            reference: Some(reference.to_string()),
            days: 30,
            runs: runs.to_vec(),
        }
    }

    /// The SQL parameters `?1` (reference time), `?2` (`-N days`) and `?3` (runs as a JSON
    /// array) of [`SCOPE`]d queries.
    pub fn params(&self) -> (String, String, String) {
        (
            self.reference.clone().unwrap_or_else(|| "now".into()),
            format!("-{} days", self.days),
            serde_json::to_string(&self.runs).unwrap_or_else(|_| "[]".into()),
        )
    }
}

/// `skill_invocations` restricted to the window's runs (`?3`, a JSON array, empty = all). The
/// rubric's queries follow it unchanged but for `datetime('now', '-30 days')` →
/// `datetime(?1, ?2)`; stored timestamps are in `datetime()`'s own form (`analysis::invocations::sqlite_time`), so
/// its text comparison is chronological.
pub const SCOPE: &str = "WITH skill_invocations AS (
    SELECT trial_id, skill_name, run_id, timestamp, completion_score, efficiency_score,
           quality_score_component, satisfaction_score, quality_score, errored
    FROM main.skill_invocations
    WHERE json_array_length(?3) = 0 OR run_id IN (SELECT value FROM json_each(?3))
)";

/// The rubric's "Skill leaderboard" query (tie order by skill name added).
const LEADERBOARD_SQL: &str = "
SELECT
    skill_name,
    COUNT(*) as uses,
    AVG(quality_score) as avg_score,
    AVG(completion_score) as avg_completion,
    AVG(efficiency_score) as avg_efficiency,
    AVG(quality_score_component) as avg_quality,
    AVG(satisfaction_score) as avg_satisfaction
FROM skill_invocations
WHERE timestamp > datetime(?1, ?2)
GROUP BY skill_name
HAVING uses >= 5
ORDER BY avg_score DESC, skill_name";

/// The rubric's "Quality distribution" query with the tier table's `Failing` bucket (< 20) split
/// from `Poor`, and an order (by skill, best tier first) added.
const DISTRIBUTION_SQL: &str = "
SELECT
    skill_name,
    CASE
        WHEN quality_score >= 90 THEN 'Excellent'
        WHEN quality_score >= 75 THEN 'Good'
        WHEN quality_score >= 60 THEN 'Acceptable'
        WHEN quality_score >= 40 THEN 'Below Average'
        WHEN quality_score >= 20 THEN 'Poor'
        ELSE 'Failing'
    END as tier,
    COUNT(*) as count
FROM skill_invocations
WHERE timestamp > datetime(?1, ?2)
GROUP BY skill_name, tier
ORDER BY skill_name, MIN(quality_score) DESC";

/// The rubric's "Improvement opportunities" query (completion / 25, efficiency / 20), extended
/// the same way with quality (/ 30) and satisfaction (/ 25), tie order added.
const OPPORTUNITIES_SQL: &str = "
SELECT
    skill_name,
    'completion' as weak_area,
    AVG(completion_score) / 25.0 as normalized_score
FROM skill_invocations
WHERE timestamp > datetime(?1, ?2)
GROUP BY skill_name
HAVING normalized_score < 0.7

UNION ALL

SELECT
    skill_name,
    'efficiency' as weak_area,
    AVG(efficiency_score) / 20.0 as normalized_score
FROM skill_invocations
WHERE timestamp > datetime(?1, ?2)
GROUP BY skill_name
HAVING normalized_score < 0.7

UNION ALL

SELECT
    skill_name,
    'quality' as weak_area,
    AVG(quality_score_component) / 30.0 as normalized_score
FROM skill_invocations
WHERE timestamp > datetime(?1, ?2)
GROUP BY skill_name
HAVING normalized_score < 0.7

UNION ALL

SELECT
    skill_name,
    'satisfaction' as weak_area,
    AVG(satisfaction_score) / 25.0 as normalized_score
FROM skill_invocations
WHERE timestamp > datetime(?1, ?2)
GROUP BY skill_name
HAVING normalized_score < 0.7

ORDER BY normalized_score ASC, skill_name, weak_area";

/// A leaderboard row (rubric "Dashboard Queries: Skill leaderboard").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaderboardRow {
    /// Skill.
    pub skill_name: String,
    /// Invocations in the window.
    pub uses: i64,
    /// Mean quality score, 0–100.
    pub avg_score: f64,
    /// Mean completion, 0–25.
    pub avg_completion: f64,
    /// Mean efficiency, 0–20.
    pub avg_efficiency: f64,
    /// Mean output quality, 0–30.
    pub avg_quality: f64,
    /// Mean user satisfaction, 0–25.
    pub avg_satisfaction: f64,
}

/// Skill leaderboard: skills with at least 5 invocations in the window, best average first
/// (rubric "Dashboard Queries", verbatim but for the window and a tie order by name).
///
/// # Errors
/// Database errors.
pub fn leaderboard(conn: &Connection, window: &Window) -> Result<Vec<LeaderboardRow>, StoreError> {
    let (r, d, runs) = window.params();
    let mut st = conn.prepare_cached(&format!("{SCOPE}{LEADERBOARD_SQL}"))?;
    let rows = st.query_map(params![r, d, runs], |r| {
        Ok(LeaderboardRow {
            skill_name: r.get(0)?,
            uses: r.get(1)?,
            avg_score: r.get(2)?,
            avg_completion: r.get(3)?,
            avg_efficiency: r.get(4)?,
            avg_quality: r.get(5)?,
            avg_satisfaction: r.get(6)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The invocations of a run — its latest finished, non-aggregated attempts × the skills their
/// trajectories used, outside `skill_free_condition` (`no-skills`) — one query, ordered by trial
/// and skill.
///
/// # Errors
/// Database errors.
pub fn run_evidence(
    conn: &Connection,
    run_id: i64,
    skill_free_condition: &str,
) -> Result<Vec<TrialEvidence>, StoreError> {
    let mut out = Vec::new();
    // One chunk of everything: taken whole, not copied.
    for_each_evidence(conn, run_id, skill_free_condition, usize::MAX, |chunk| {
        if out.is_empty() {
            std::mem::swap(&mut out, chunk);
        } else {
            out.append(chunk);
        }
        Ok(())
    })?;
    Ok(out)
}

/// The invocations of [`run_evidence`], given to `each` in order, at most `chunk` at a time (at
/// least one); `each` may take them out of the vector it is given. One query: the statement
/// stays open across the calls, so `each` may write to other tables on `conn` (the scoring
/// writes `skill_invocations` as it goes) but must not change `trials`, `skill_uses` or
/// `run_tasks`.
///
/// Streaming keeps a run's evidence out of memory at once: 400,024 invocations collected in one
/// vector (about 340 bytes each) spent a quarter of their reading time growing it — copies and
/// fresh pages (`perf`, issue 37).
///
/// # Errors
/// Database errors; `each`'s error, which ends the reading.
pub fn for_each_evidence(
    conn: &Connection,
    run_id: i64,
    skill_free_condition: &str,
    chunk: usize,
    mut each: impl FnMut(&mut Vec<TrialEvidence>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let domains: HashMap<String, String> = {
        let mut st =
            conn.prepare_cached("SELECT task_id, domain FROM run_tasks WHERE run_id = ?1")?;
        let rows = st.query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<Result<_, _>>()?
    };
    let chunk = chunk.max(1);
    let mut st = conn.prepare_cached(EVIDENCE_SQL)?;
    let mut rows = st.query(params![run_id, skill_free_condition])?;
    let mut buf: Vec<TrialEvidence> = Vec::with_capacity(chunk.min(4096));
    while let Some(r) = rows.next()? {
        let task_id: String = r.get(3)?;
        buf.push(TrialEvidence {
            trial_id: r.get(0)?,
            run_id: r.get(1)?,
            skill_name: r.get(2)?,
            domain: domains.get(&task_id).cloned(),
            task_id,
            outcome: r.get(4)?,
            reward: r.get(5)?,
            tests_total: r.get(6)?,
            tests_passed: r.get(7)?,
            n_input_tokens: r.get(8)?,
            n_output_tokens: r.get(9)?,
            n_tool_calls: r.get(10)?,
            n_error_steps: r.get(11)?,
            final_message: r.get(12)?,
            agent_started_at: r.get(13)?,
            agent_finished_at: r.get(14)?,
            started_at: r.get(15)?,
            finished_at: r.get(16)?,
            queued_at: r.get(17)?,
        });
        if buf.len() >= chunk {
            each(&mut buf)?;
            buf.clear();
        }
    }
    if !buf.is_empty() {
        each(&mut buf)?;
    }
    Ok(())
}

/// One `skill_invocations` row as written: a scored (trial, skill) of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvocationRow {
    /// Trial (attempt) row id.
    pub trial_id: i64,
    /// Skill.
    pub skill_name: String,
    /// Run row id.
    pub run_id: i64,
    /// The trial's end, UTC, in SQLite's `datetime()` form.
    pub timestamp: String,
    /// Completion (0–25), efficiency (0–20), output quality (0–30), satisfaction (0–25) and the
    /// total quality score (0–100), in that order.
    pub scores: [i64; 5],
    /// The invocation had errors.
    pub errored: bool,
}

/// Runs `f` with SQLite's foreign-key checks off on `conn`, restored after — for writing
/// `skill_invocations` rows derived from trials that `f` reads in its own transaction, so every
/// parent exists by construction. The check is a `trials` lookup per row: 71 % of the time of
/// writing 400,024 invocations (`perf`, bench store, issue 37). On a connection inside a
/// transaction SQLite ignores the pragma and the checks stay on.
///
/// # Errors
/// `f`'s error, or [`StoreError`] from the pragma.
pub fn without_parent_checks<T>(
    conn: &Connection,
    f: impl FnOnce() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let was: bool = conn.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?;
    if !was || !conn.is_autocommit() {
        return f();
    }
    conn.pragma_update(None, "foreign_keys", false)?;
    let out = f();
    conn.pragma_update(None, "foreign_keys", true)?;
    out
}

/// Writes invocation rows, replacing a row of the same run, trial and skill.
///
/// # Errors
/// Database errors.
pub fn write_invocations<'a>(
    conn: &Connection,
    rows: impl IntoIterator<Item = &'a InvocationRow>,
) -> Result<(), StoreError> {
    let mut upsert = conn.prepare_cached(
        "INSERT INTO skill_invocations (trial_id, skill_name, run_id, timestamp, completion_score,
             efficiency_score, quality_score_component, satisfaction_score, quality_score, errored)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         ON CONFLICT (run_id, trial_id, skill_name) DO UPDATE SET
             timestamp = excluded.timestamp, completion_score = excluded.completion_score,
             efficiency_score = excluded.efficiency_score,
             quality_score_component = excluded.quality_score_component,
             satisfaction_score = excluded.satisfaction_score,
             quality_score = excluded.quality_score, errored = excluded.errored",
    )?;
    for r in rows {
        let [completion, efficiency, quality, satisfaction, total] = r.scores;
        upsert.execute(params![
            r.trial_id,
            r.skill_name,
            r.run_id,
            r.timestamp,
            completion,
            efficiency,
            quality,
            satisfaction,
            total,
            r.errored
        ])?;
    }
    Ok(())
}

/// A stored invocation's values: timestamp, scores, errored.
type Stored = (String, [i64; 5], bool);

/// Brings run `run_id`'s `skill_invocations` rows in line with its invocations now, given in
/// chunks: rows that no longer exist are deleted, new or changed ones written, identical ones left
/// alone, and a marker recorded as what they were computed from. Run it inside a transaction:
/// [`InvocationSync::begin`], [`InvocationSync::apply`] per chunk, [`InvocationSync::finish`].
#[derive(Debug)]
pub struct InvocationSync<'c> {
    conn: &'c Connection,
    run_id: i64,
    /// The run's stored rows not yet seen among the new ones, by trial, then skill (a trial has
    /// one or a few skills: found without building a key per row).
    stored: HashMap<i64, Vec<(String, Stored)>>,
}

impl<'c> InvocationSync<'c> {
    /// Reads run `run_id`'s stored rows.
    ///
    /// # Errors
    /// Database errors.
    pub fn begin(conn: &'c Connection, run_id: i64) -> Result<Self, StoreError> {
        let mut stored: HashMap<i64, Vec<(String, Stored)>> = HashMap::new();
        let mut st = conn.prepare_cached(
            "SELECT trial_id, skill_name, timestamp, completion_score, efficiency_score,
                    quality_score_component, satisfaction_score, quality_score, errored
             FROM skill_invocations WHERE run_id = ?1",
        )?;
        let mut rows = st.query([run_id])?;
        while let Some(r) = rows.next()? {
            stored.entry(r.get(0)?).or_default().push((
                r.get(1)?,
                (
                    r.get(2)?,
                    [r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?],
                    r.get(8)?,
                ),
            ));
        }
        Ok(InvocationSync {
            conn,
            run_id,
            stored,
        })
    }

    /// Writes the rows of `rows` that are new or changed (rows of the run `begin` was given).
    ///
    /// # Errors
    /// Database errors.
    pub fn apply(&mut self, rows: &[InvocationRow]) -> Result<(), StoreError> {
        if self.stored.is_empty() {
            return write_invocations(self.conn, rows);
        }
        let changed = rows.iter().filter(|r| {
            let Some(skills) = self.stored.get_mut(&r.trial_id) else {
                return true;
            };
            let Some(at) = skills.iter().position(|(s, _)| *s == r.skill_name) else {
                return true;
            };
            let (_, (timestamp, scores, errored)) = skills.swap_remove(at);
            if skills.is_empty() {
                self.stored.remove(&r.trial_id);
            }
            !(timestamp == r.timestamp && scores == r.scores && errored == r.errored)
        });
        let changed: Vec<&InvocationRow> = changed.collect();
        write_invocations(self.conn, changed)
    }

    /// Deletes the stored rows no chunk had, and records `marker`.
    ///
    /// # Errors
    /// Database errors.
    pub fn finish(self, marker: &str) -> Result<(), StoreError> {
        let mut delete = self.conn.prepare_cached(
            "DELETE FROM skill_invocations WHERE run_id = ?1 AND trial_id = ?2 AND skill_name = ?3",
        )?;
        for (trial, skills) in &self.stored {
            for (skill, _) in skills {
                delete.execute(params![self.run_id, trial, skill])?;
            }
        }
        self.conn.execute(
            "INSERT INTO skill_scoring (run_id, marker) VALUES (?1, ?2)
             ON CONFLICT (run_id) DO UPDATE SET marker = excluded.marker",
            params![self.run_id, marker],
        )?;
        Ok(())
    }
}

/// The marker recorded by the last [`InvocationSync::finish`] of run `run_id`, if any.
///
/// # Errors
/// Database errors.
pub fn scoring_marker_of(conn: &Connection, run_id: i64) -> Result<Option<String>, StoreError> {
    Ok(conn
        .query_row(
            "SELECT marker FROM skill_scoring WHERE run_id = ?1",
            [run_id],
            |r| r.get(0),
        )
        .optional()?)
}

/// The number of `skill_invocations` rows of run `run_id`.
///
/// # Errors
/// Database errors.
pub fn invocation_count(conn: &Connection, run_id: i64) -> Result<usize, StoreError> {
    let n: i64 = conn.query_row(
        "SELECT COUNT(*) FROM skill_invocations WHERE run_id = ?1",
        [run_id],
        |r| r.get(0),
    )?;
    Ok(n as usize)
}

/// The time of the latest invocation in `skill_invocations` (any run), as RFC 3339 UTC to the
/// second (`None` when there is none) — where the rubric's 30-day window ends.
///
/// # Errors
/// Database errors.
pub fn latest_invocation_at(conn: &Connection) -> Result<Option<String>, StoreError> {
    Ok(conn.query_row(
        "SELECT strftime('%Y-%m-%dT%H:%M:%SZ', MAX(julianday(timestamp))) FROM skill_invocations",
        [],
        |r| r.get(0),
    )?)
}

/// What the scores of run `run_id` depend on in the store, cheaply: its finished latest attempts
/// (count, largest and summed row ids — any retry, import or new trial moves them; an index-only
/// read) and the skill uses recorded anywhere (count and largest row id), as one text.
///
/// # Errors
/// Database errors.
pub fn evidence_marker(conn: &Connection, run_id: i64) -> Result<String, StoreError> {
    let (n, max, sum): (i64, Option<i64>, f64) = conn.query_row(
        "SELECT COUNT(*), MAX(id), TOTAL(id) FROM trials
         WHERE run_id = ?1 AND superseded = 0 AND status = 'done'",
        [run_id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let (uses, uses_max): (i64, Option<i64>) =
        conn.query_row("SELECT COUNT(*), MAX(rowid) FROM skill_uses", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    Ok(format!(
        "trials {n} {} {sum} uses {uses} {}",
        max.unwrap_or(0),
        uses_max.unwrap_or(0)
    ))
}

/// The rubric's "Quality distribution" rows in the window: (skill, tier label, count).
///
/// # Errors
/// Database errors.
pub fn distribution_counts(
    conn: &Connection,
    window: &Window,
) -> Result<Vec<(String, String, i64)>, StoreError> {
    let (r, d, runs) = window.params();
    let mut st = conn.prepare_cached(&format!("{SCOPE}{DISTRIBUTION_SQL}"))?;
    let rows = st.query_map(params![r, d, runs], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The rubric's "Improvement opportunities" rows in the window: (skill, component name, its
/// average over its maximum), weakest first.
///
/// # Errors
/// Database errors.
pub fn opportunity_rows(
    conn: &Connection,
    window: &Window,
) -> Result<Vec<(String, String, f64)>, StoreError> {
    let (r, d, runs) = window.params();
    let mut st = conn.prepare_cached(&format!("{SCOPE}{OPPORTUNITIES_SQL}"))?;
    let rows = st.query_map(params![r, d, runs], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Calls `each` with every invocation in the window, ordered by skill, timestamp and trial:
/// (skill, scores as in [`InvocationRow::scores`], errored). The skill is borrowed from the row:
/// no text is built per invocation (400,024 of them at 10⁶ trials).
///
/// # Errors
/// Database errors; [`StoreError::Decode`] for a skill name that is not text.
pub fn for_each_invocation_score(
    conn: &Connection,
    window: &Window,
    mut each: impl FnMut(&str, [i64; 5], bool),
) -> Result<(), StoreError> {
    let (r, d, runs) = window.params();
    let mut st = conn.prepare_cached(&format!(
        "{SCOPE}
SELECT skill_name, completion_score, efficiency_score, quality_score_component,
       satisfaction_score, quality_score, errored
FROM skill_invocations
WHERE timestamp > datetime(?1, ?2)
ORDER BY skill_name, timestamp, trial_id"
    ))?;
    let mut rows = st.query(params![r, d, runs])?;
    while let Some(r) = rows.next()? {
        let skill = r
            .get_ref(0)?
            .as_str()
            .map_err(|e| StoreError::Decode(format!("skill_invocations.skill_name: {e}")))?;
        each(
            skill,
            [r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?],
            r.get(6)?,
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// [`InvocationSync`] with one chunk: the whole of a run's rows at once.
    fn sync_invocations(
        conn: &Connection,
        run_id: i64,
        rows: &[InvocationRow],
        marker: &str,
    ) -> Result<(), StoreError> {
        let mut sync = InvocationSync::begin(conn, run_id)?;
        sync.apply(rows)?;
        sync.finish(marker)
    }

    /// A database at the latest schema (foreign keys off: no trials or runs needed).
    fn db() -> Connection {
        let mut c = Connection::open_in_memory().unwrap();
        super::super::schema::migrations()
            .to_latest(&mut c)
            .unwrap();
        c.pragma_update(None, "foreign_keys", false).unwrap();
        c
    }

    fn rows_of(conn: &Connection, run_id: i64) -> Vec<(i64, String, String, i64, bool)> {
        let mut st = conn
            .prepare(
                "SELECT trial_id, skill_name, timestamp, quality_score, errored
                 FROM skill_invocations WHERE run_id = ?1 ORDER BY trial_id, skill_name",
            )
            .unwrap();
        st.query_map([run_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    }

    /// Invocation rows of run `run_id`: one per distinct (trial, skill) of `keys`, with a score.
    fn rows(run_id: i64, keys: &[(i64, u8, i64)]) -> Vec<InvocationRow> {
        let mut seen = std::collections::HashSet::new();
        keys.iter()
            .filter(|(t, s, _)| seen.insert((*t, *s)))
            .map(|&(trial_id, skill, total)| InvocationRow {
                trial_id,
                skill_name: format!("skill-{skill}"),
                run_id,
                timestamp: "2026-11-21 10:00:00".into(),
                scores: [1, 2, 3, 4, total],
                errored: total % 2 == 0,
            })
            .collect()
    }

    proptest! {
        /// Syncing in chunks of any size leaves the run's rows equal to the new rows — changed
        /// ones rewritten, missing ones deleted — and touches no other run.
        #[test]
        fn chunked_sync_leaves_the_new_rows(
            before in proptest::collection::vec((0i64..12, 0u8..3, 0i64..4), 0..30),
            after in proptest::collection::vec((0i64..12, 0u8..3, 0i64..4), 0..30),
            chunk in 1usize..8,
        ) {
            let conn = db();
            let other = rows(2, &[(1, 0, 1), (5, 1, 2)]);
            sync_invocations(&conn, 2, &other, "other").unwrap();
            sync_invocations(&conn, 1, &rows(1, &before), "before").unwrap();
            let now = rows(1, &after);
            let mut sync = InvocationSync::begin(&conn, 1).unwrap();
            for c in now.chunks(chunk) {
                sync.apply(c).unwrap();
            }
            sync.finish("after").unwrap();
            let mut want: Vec<_> = now
                .iter()
                .map(|r| (r.trial_id, r.skill_name.clone(), r.timestamp.clone(), r.scores[4], r.errored))
                .collect();
            want.sort();
            prop_assert_eq!(rows_of(&conn, 1), want);
            prop_assert_eq!(rows_of(&conn, 2).len(), 2);
            prop_assert_eq!(scoring_marker_of(&conn, 1).unwrap(), Some("after".to_string()));
        }
    }

    #[test]
    fn identical_rows_are_not_written_again() {
        let conn = db();
        let r = rows(1, &[(1, 0, 1), (2, 0, 3), (2, 1, 2)]);
        sync_invocations(&conn, 1, &r, "m").unwrap();
        let before = conn.total_changes();
        let mut sync = InvocationSync::begin(&conn, 1).unwrap();
        sync.apply(&r[..1]).unwrap();
        sync.apply(&r[1..]).unwrap();
        assert_eq!(
            conn.total_changes(),
            before,
            "nothing changed, nothing written"
        );
        sync.finish("m").unwrap();
    }
}
