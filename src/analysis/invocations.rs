//! Skill invocations from SkillsBench trials: which trials invoked which skill, how each maps onto
//! the skill scoring rubric's invocation fields ([`super::rubric`]), their storage in the
//! `skill_invocations` table, the rubric's three dashboard queries, and a per-skill report.
//!
//! # What an invocation is
//!
//! One invocation per (trial, skill): the latest attempt of a trial (not superseded, status
//! `done`, not synthesized from a published aggregate) in a condition with skills (condition key
//! other than `no-skills`) whose trajectory used the skill — read its `SKILL.md`, opened one of its
//! files, ran one of its scripts, or invoked it through a skill tool (the `skill_uses` rows written
//! by `harbor::skill_use`). A skill offered to the agent but never touched is not invoked.
//!
//! # From a trial to the rubric's fields
//!
//! SkillsBench has a verifier and a trajectory, but no user and no linter. Every field that has
//! no signal takes the rubric's own default (`.get(key, default)`), so it scores the same for
//! every invocation and does not rank skills.
//!
//! | Rubric field | Source in the trial | When unknown |
//! |---|---|---|
//! | `errors` | trajectory steps whose observations look failed (`n_error_steps`: tracebacks, non-zero `Exit Code:`, `Error:` lines) **+ 1** if the verifier reward is below 1 (no reward counts as 0, as in Method D) **+ 1** if the trial ended with an exception (any outcome other than pass/fail: agent or verifier timeout, build or runtime error, no reward file, cancelled, interrupted) | no trajectory → 0 steps |
//! | `recovered` | errors, but the verifier still gave full reward (reward ≥ 1) — errors in the trajectory, or an agent timeout whose work passed | — |
//! | `partial_completion` | 0 < reward < 1, or at least one verifier test passed (`tests_passed > 0`) | — |
//! | `workaround_used` | no signal | false (rubric default) |
//! | `failure_explained` | the agent's last step carries a message (`final_message`) | false |
//! | `tokens_used` | input tokens (cached included) + output tokens | 0 — no model tokens, as for the oracle and nop agents; `max(0, 1)` then gives full token points |
//! | `output_size` | no signal | 1 (rubric default) |
//! | `tool_calls` | tool calls in the trajectory (`n_tool_calls`) | 0 → full call points |
//! | `files_changed` | no signal | 1 (rubric default) |
//! | `duration_ms` | the agent phase, `agent_started_at` → `agent_finished_at` | the rubric has no default: the whole trial, `started_at` → `finished_at`; if that is unknown too, 0 → full time points |
//! | `output_validated` | reward ≥ 1 | false |
//! | `requested_items` / `delivered_items` | the verifier's CTRF tests: total / passed | no CTRF report (or 0 tests): 1 / (1 if reward ≥ 1 else 0); tests known but passed unknown: total / (total if reward ≥ 1 else 0) |
//! | `output_type` | `code` when the task's domain is a code domain of the [`CategoryTable`] (default: "Software Engineering") or the task is listed as code there; else other | other |
//! | `code_quality.linter_passed`, `.types_valid` | no signal | true (rubric defaults) → 3 + 2 points |
//! | `code_quality.tests_passed` | the verifier passed (reward ≥ 1) | false |
//! | `user_accepted`, `user_used_output` | the benchmark has no user | false (absent) → 0 points |
//! | `user_edit_ratio` | no user | absent → the rubric reads 0.5 → `int(8·0.5)` = 4 points |
//! | `follow_ups` | no user | none → 7 points |
//! | feedback (output quality) | no user | none → heuristic accuracy |
//!
//! So user satisfaction is always 0 + 4 + 7 = **11 of 25** for benchmark invocations, and a
//! benchmark score tops out at 86 (25 + 20 + 30 + 11) — Good at best, never Excellent.
//!
//! # Skill category (efficiency baselines)
//!
//! By the task's domain (`run_tasks.domain`, from the SkillsBench catalog):
//!
//! | Task domain | Category | Baselines: tokens, calls, time |
//! |---|---|---|
//! | Software Engineering | `code_generation` | 50 per line of code, 3 per file, 30 s |
//! | every other domain (and unknown) | `analysis` — the rubric's fallback | 200 per insight, 5 per analysis, 20 s |
//!
//! `design` (150, 4, 45 s) and `research` (100, 8, 60 s) are available through
//! [`CategoryTable::by_domain`]. Domain names compare case- and punctuation-insensitively
//! ("software-engineering" matches "Software Engineering").
//!
//! # Storage and queries
//!
//! [`score_run`] writes one `skill_invocations` row per invocation (timestamp = the trial's
//! `finished_at`, UTC, in SQLite's `datetime()` form) and keeps the run's rows in line with its
//! trials; a marker in `skill_scoring` lets it skip a run whose trials have not changed.
//! [`leaderboard`], [`quality_distribution`] and [`improvement_opportunities`] are the rubric's
//! dashboard SQL, and [`skill_report`] adds tiers, trends, weak components and gates per skill.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use super::rubric::{
    CodeQuality, Component, ComponentAverages, DeprecationReview, Gate, GateResult, Invocation,
    OutputType, Scores, SkillCategory, SkillStats, Tier, Trend, analyze_trend, check_quality_gate,
    deprecation_review, get_improvement_recommendation, score_invocation, weak_component,
};
use crate::domain::Outcome;
use crate::store::StoreError;
use crate::store::invocations as inv;
pub use crate::store::invocations::{LeaderboardRow, TrialEvidence, Window, leaderboard};

/// The condition key whose trials never invoke skills.
pub const NO_SKILLS: &str = "no-skills";

/// Whether two names are equal as lower-case alphanumerics only: "Software Engineering" =
/// "software-engineering". Compares without allocating: it runs once per invocation scored
/// (400,024 at the bench's scale).
fn same_name(a: &str, b: &str) -> bool {
    fn chars(s: &str) -> impl Iterator<Item = char> + '_ {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
    }
    chars(a).eq(chars(b))
}

/// Task domain → skill category and output type (see the module docs for the default table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryTable {
    /// Domain → category; domains compare case- and punctuation-insensitively.
    pub by_domain: BTreeMap<String, SkillCategory>,
    /// Category of every other domain (and of tasks with no domain).
    pub fallback: SkillCategory,
    /// Domains whose output is code (rubric `output_type == 'code'`).
    pub code_domains: BTreeSet<String>,
    /// Task ids whose output is code whatever their domain (e.g. tasks whose `task.toml`
    /// category names a code activity such as "Compilation & Build").
    pub code_tasks: BTreeSet<String>,
}

impl Default for CategoryTable {
    /// "Software Engineering" → `code_generation` with code output; everything else → `analysis`
    /// (the rubric's fallback) with non-code output.
    fn default() -> Self {
        CategoryTable {
            by_domain: BTreeMap::from([(
                "Software Engineering".to_string(),
                SkillCategory::CodeGeneration,
            )]),
            fallback: SkillCategory::Analysis,
            code_domains: BTreeSet::from(["Software Engineering".to_string()]),
            code_tasks: BTreeSet::new(),
        }
    }
}

impl CategoryTable {
    /// The category of a task's domain.
    pub fn category(&self, domain: Option<&str>) -> SkillCategory {
        let Some(d) = domain else {
            return self.fallback;
        };
        self.by_domain
            .iter()
            .find(|(k, _)| same_name(k, d))
            .map(|(_, c)| *c)
            .unwrap_or(self.fallback)
    }

    /// The output type of a task.
    pub fn output_type(&self, task_id: &str, domain: Option<&str>) -> OutputType {
        let code_domain = domain.is_some_and(|d| self.code_domains.iter().any(|k| same_name(k, d)));
        if code_domain || self.code_tasks.contains(task_id) {
            OutputType::Code
        } else {
            OutputType::Other
        }
    }
}

/// Parses a stored time: RFC 3339, or a naive ISO time read as UTC (as some imports have it).
fn parse_time(s: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&chrono::Utc));
    }
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .iter()
        .find_map(|f| chrono::NaiveDateTime::parse_from_str(s, f).ok())
        .map(|n| n.and_utc())
}

/// A stored time in SQLite's `datetime()` form, UTC (`2026-11-21 10:00:00`), so the rubric's
/// `timestamp > datetime('now', '-30 days')` compares it as text exactly as its SQL is written
/// (whole seconds; ties keep trial order). An unparseable time is kept as it is.
pub fn sqlite_time(s: &str) -> String {
    use chrono::{Datelike, Timelike};
    let Some(t) = parse_time(s) else {
        return s.to_string();
    };
    // Written directly: chrono's formatter took most of this function's 0.17 CPU-s for 400,024
    // invocations (`perf`, issue 37). Years outside 0–9999 and leap seconds go to chrono.
    if (0..=9999).contains(&t.year()) && t.nanosecond() < 1_000_000_000 {
        let mut out = String::with_capacity(19);
        let _ = std::fmt::Write::write_fmt(
            &mut out,
            format_args!(
                "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
                t.year(),
                t.month(),
                t.day(),
                t.hour(),
                t.minute(),
                t.second()
            ),
        );
        return out;
    }
    t.format("%Y-%m-%d %H:%M:%S").to_string()
}

/// Milliseconds from `a` to `b` (negative clamps to 0); `None` when either is missing or bad.
fn span_ms(a: &Option<String>, b: &Option<String>) -> Option<u64> {
    let (a, b) = (parse_time(a.as_deref()?)?, parse_time(b.as_deref()?)?);
    Some((b - a).num_milliseconds().max(0) as u64)
}

fn count(v: Option<i64>) -> u64 {
    v.unwrap_or(0).max(0) as u64
}

impl TrialEvidence {
    /// The verifier passed: reward ≥ 1.
    pub fn passed(&self) -> bool {
        self.reward.is_some_and(|r| r >= 1.0)
    }

    /// The trial ended with an exception: an outcome other than pass and fail.
    pub fn exception(&self) -> bool {
        self.outcome
            .is_some_and(|o| !matches!(o, Outcome::Pass | Outcome::Fail))
    }

    /// The rubric invocation of this evidence (see the module docs for the table).
    pub fn invocation(&self, table: &CategoryTable) -> Invocation {
        let reward = self.reward.unwrap_or(0.0);
        let passed = self.passed();
        let errors =
            count(self.n_error_steps) + u64::from(reward < 1.0) + u64::from(self.exception());
        let (requested, delivered) = match self.tests_total {
            Some(total) if total > 0 => {
                let total = total as u64;
                let delivered = match self.tests_passed {
                    Some(p) => p.max(0) as u64,
                    None if passed => total,
                    None => 0,
                };
                (total, delivered)
            }
            _ => (1, u64::from(passed)),
        };
        Invocation {
            errors: u32::try_from(errors).unwrap_or(u32::MAX),
            recovered: passed,
            partial_completion: (reward > 0.0 && reward < 1.0) || count(self.tests_passed) > 0,
            workaround_used: false,
            failure_explained: self.final_message.unwrap_or(false),
            tokens_used: count(self.n_input_tokens) + count(self.n_output_tokens),
            output_size: 1,
            tool_calls: count(self.n_tool_calls),
            files_changed: 1,
            duration_ms: span_ms(&self.agent_started_at, &self.agent_finished_at)
                .or_else(|| span_ms(&self.started_at, &self.finished_at))
                .unwrap_or(0),
            output_validated: passed,
            requested_items: requested,
            delivered_items: delivered,
            output_type: table.output_type(&self.task_id, self.domain.as_deref()),
            code_quality: CodeQuality {
                linter_passed: None,
                types_valid: None,
                tests_passed: Some(passed),
            },
            user_accepted: false,
            user_edit_ratio: None,
            user_used_output: false,
            follow_ups: None,
        }
    }

    /// The invocation's timestamp: the trial's end (else its start, else when it was queued).
    pub fn timestamp(&self) -> &str {
        self.finished_at
            .as_deref()
            .or(self.started_at.as_deref())
            .unwrap_or(&self.queued_at)
    }

    /// Scores this evidence (no user feedback).
    pub fn score(&self, table: &CategoryTable) -> ScoredInvocation {
        let inv = self.invocation(table);
        let category = table.category(self.domain.as_deref());
        ScoredInvocation {
            trial_id: self.trial_id,
            skill_name: self.skill_name.clone(),
            run_id: self.run_id,
            timestamp: sqlite_time(self.timestamp()),
            category,
            scores: score_invocation(&inv, category, None),
            errored: inv.errors > 0,
        }
    }
}

/// A scored invocation — one `skill_invocations` row (plus its category).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredInvocation {
    /// Trial (attempt) row id.
    pub trial_id: i64,
    /// Skill.
    pub skill_name: String,
    /// Run row id.
    pub run_id: i64,
    /// The trial's end, UTC, as SQLite's `datetime()` writes it ([`sqlite_time`]).
    pub timestamp: String,
    /// Category used for the efficiency baselines.
    pub category: SkillCategory,
    /// Component scores and total (`quality_score`).
    pub scores: Scores,
    /// The invocation had errors (`errors > 0`).
    pub errored: bool,
}

/// The invocations of a run (see the module docs), one query, ordered by trial and skill.
///
/// # Errors
/// Database errors.
pub fn run_evidence(conn: &Connection, run_id: i64) -> Result<Vec<TrialEvidence>, StoreError> {
    inv::run_evidence(conn, run_id, NO_SKILLS)
}

/// Scores every invocation of run `run_id` with the rubric and brings `skill_invocations` in
/// line: rows of invocations that no longer exist (superseded attempts, a trial re-imported) are
/// deleted, new or changed ones written, identical ones left alone — so re-scoring is
/// idempotent and, when nothing changed, writes nothing. Runs in its own transaction unless
/// `conn` is already in one. Returns the number of invocations.
///
/// Cost: one read of the run's evidence and of its stored rows, then writes only for what
/// changed; an unchanged run costs one index-only count (`skillscope bench analysis` prints the
/// figures at a million trials).
///
/// # Errors
/// Database errors; nothing is changed then (the transaction rolls back).
pub fn score_run(
    conn: &Connection,
    run_id: i64,
    table: &CategoryTable,
) -> Result<usize, StoreError> {
    let marker = || -> Result<String, StoreError> {
        Ok(format!(
            "v1 {} table {table:?}",
            inv::evidence_marker(conn, run_id)?
        ))
    };
    let unchanged = |marker: &str| -> Result<Option<usize>, StoreError> {
        if inv::scoring_marker_of(conn, run_id)?.as_deref() == Some(marker) {
            return inv::invocation_count(conn, run_id).map(Some);
        }
        Ok(None)
    };
    // An unchanged run is read in a snapshot of its own and needs no write lock (a read-only
    // store can be reported on).
    if conn.is_autocommit() {
        let snapshot = conn.unchecked_transaction()?;
        let n = unchanged(&marker()?)?;
        snapshot.finish()?;
        if let Some(n) = n {
            return Ok(n);
        }
    }
    // The rows written are derived from the run's trials, read in the same transaction — one
    // that holds the write lock from its start (`BEGIN IMMEDIATE`): a deferred one that read
    // before another connection's commit (the engine's writer, mid-run) could not become a
    // writer, and SQLite would answer "database is locked" at once instead of waiting.
    inv::without_parent_checks(conn, || {
        let tx = if conn.is_autocommit() {
            Some(rusqlite::Transaction::new_unchecked(
                conn,
                rusqlite::TransactionBehavior::Immediate,
            )?)
        } else {
            None
        };
        let marker = marker()?;
        if let Some(n) = unchanged(&marker)? {
            return Ok(n);
        }
        // Read, scored and written a chunk at a time: the run's evidence is never all in memory.
        let mut sync = inv::InvocationSync::begin(conn, run_id)?;
        let mut n = 0;
        inv::for_each_evidence(conn, run_id, NO_SKILLS, SCORING_CHUNK, |chunk| {
            let rows: Vec<inv::InvocationRow> = score_all(chunk, table)
                .into_iter()
                .map(ScoredInvocation::into_row)
                .collect();
            n += rows.len();
            sync.apply(&rows)
        })?;
        sync.finish(&marker)?;
        if let Some(tx) = tx {
            tx.commit()?;
        }
        Ok(n)
    })
}

/// Writes scored invocations into `skill_invocations`, replacing a row of the same run, trial
/// and skill.
///
/// # Errors
/// Database errors.
pub fn write_scored<'a>(
    conn: &Connection,
    scored: impl IntoIterator<Item = &'a ScoredInvocation>,
) -> Result<(), StoreError> {
    let rows: Vec<inv::InvocationRow> = scored.into_iter().map(ScoredInvocation::row).collect();
    inv::write_invocations(conn, &rows)
}

/// Invocations scored per chunk by [`score_run`]: enough for [`score_all`] to use every core,
/// few enough that a chunk's evidence stays about 11 MB (some 340 bytes an invocation).
const SCORING_CHUNK: usize = 32_768;

impl ScoredInvocation {
    /// The `skill_invocations` row of this invocation, taking its texts.
    pub fn into_row(self) -> inv::InvocationRow {
        inv::InvocationRow {
            trial_id: self.trial_id,
            skill_name: self.skill_name,
            run_id: self.run_id,
            timestamp: self.timestamp,
            scores: [
                self.scores.completion,
                self.scores.efficiency,
                self.scores.quality,
                self.scores.satisfaction,
                self.scores.total,
            ],
            errored: self.errored,
        }
    }

    /// The `skill_invocations` row of this invocation.
    pub fn row(&self) -> inv::InvocationRow {
        self.clone().into_row()
    }
}

/// Scores `evidence` in order, on every core when there is a lot of it (each invocation is
/// independent; a few hundred thousand take a third of a second per core).
pub fn score_all(evidence: &[TrialEvidence], table: &CategoryTable) -> Vec<ScoredInvocation> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if evidence.len() < 20_000 || threads < 2 {
        return evidence.iter().map(|e| e.score(table)).collect();
    }
    let chunk = evidence.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = evidence
            .chunks(chunk)
            .map(|c| s.spawn(move || c.iter().map(|e| e.score(table)).collect::<Vec<_>>()))
            .collect();
        let mut out = Vec::with_capacity(evidence.len());
        for h in handles {
            match h.join() {
                Ok(part) => out.extend(part),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        out
    })
}

/// A quality-distribution row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DistributionRow {
    /// Skill.
    pub skill_name: String,
    /// Tier of the invocations counted.
    pub tier: Tier,
    /// Invocations of the skill in that tier.
    pub count: i64,
}

/// Quality distribution: invocations per skill and tier (rubric "Dashboard Queries").
///
/// Difference: the rubric's SQL files everything below 40 as `Poor`, while its tier table has a
/// sixth tier, Failing (0–19); this follows the table — below 20 is `Failing`. Rows are ordered
/// by skill, best tier first (the rubric's query has no order).
///
/// # Errors
/// Database errors; [`StoreError::Decode`] for an unknown tier label (not produced by the SQL).
pub fn quality_distribution(
    conn: &Connection,
    window: &Window,
) -> Result<Vec<DistributionRow>, StoreError> {
    inv::distribution_counts(conn, window)?
        .into_iter()
        .map(|(skill_name, tier, count)| {
            let tier = Tier::from_label(&tier)
                .ok_or_else(|| StoreError::Decode(format!("unknown tier {tier:?}")))?;
            Ok(DistributionRow {
                skill_name,
                tier,
                count,
            })
        })
        .collect()
}

/// An improvement-opportunity row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpportunityRow {
    /// Skill.
    pub skill_name: String,
    /// The component below 70 % of its maximum.
    pub weak_area: Component,
    /// Its average over its maximum, 0–1.
    pub normalized_score: f64,
}

/// Improvement opportunities: (skill, component) pairs whose average is below 70 % of the
/// component's maximum, weakest first (rubric "Dashboard Queries").
///
/// Extension: the rubric's query covers completion (/ 25) and efficiency (/ 20) only; this adds
/// quality (/ 30) and satisfaction (/ 25) the same way. For benchmark invocations satisfaction is
/// always 11 / 25 = 0.44 (no user; see the module docs), so every skill lists it.
///
/// # Errors
/// Database errors.
pub fn improvement_opportunities(
    conn: &Connection,
    window: &Window,
) -> Result<Vec<OpportunityRow>, StoreError> {
    inv::opportunity_rows(conn, window)?
        .into_iter()
        .map(|(skill_name, area, normalized_score)| {
            let weak_area = Component::ALL
                .into_iter()
                .find(|c| c.as_str() == area)
                .ok_or_else(|| StoreError::Decode(format!("unknown component {area:?}")))?;
            Ok(OpportunityRow {
                skill_name,
                weak_area,
                normalized_score,
            })
        })
        .collect()
}

/// One skill's rubric report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillScore {
    /// Skill.
    pub skill_name: String,
    /// Invocations in the window.
    pub invocations: u64,
    /// Mean quality score, 0–100.
    pub avg_score: f64,
    /// Mean points per component.
    pub components: ComponentAverages,
    /// Tier of the mean score.
    pub tier: Tier,
    /// The tier's action ("Monitor for consistency", …).
    pub tier_action: String,
    /// Trend over the invocations in time order.
    pub trend: Trend,
    /// Lowest component relative to its maximum.
    pub weak_component: Component,
    /// The rubric's recommendation for it.
    pub recommendation: String,
    /// Fraction of invocations with errors, 0–1.
    pub error_rate: f64,
    /// Verdicts of the publish, feature and deprecation gates (as the rubric's code checks them).
    pub gates: Vec<GateResult>,
    /// Deprecation review with the gate's score limit (age unknown: not checked).
    pub deprecation_review: DeprecationReview,
}

/// The rubric report of every skill with invocations in the window (`skill_invocations` rows:
/// run [`score_run`] first), best average first, then by name.
///
/// Per skill: invocation count, mean score and components, the tier of the mean, the trend
/// ([`analyze_trend`] over its invocations ordered by timestamp, then trial id), the weak
/// component and its recommendation (over all its invocations, also when the trend has too few),
/// the error rate (invocations with errors / invocations), each quality gate
/// ([`check_quality_gate`] with these stats) and a [`deprecation_review`] without an age.
///
/// # Errors
/// Database errors.
pub fn skill_report(conn: &Connection, window: &Window) -> Result<Vec<SkillScore>, StoreError> {
    let mut by_skill: BTreeMap<String, (Vec<Scores>, u64)> = BTreeMap::new();
    inv::for_each_invocation_score(conn, window, |skill, scores, errored| {
        let [completion, efficiency, quality, satisfaction, total] = scores;
        let e = match by_skill.get_mut(skill) {
            Some(e) => e,
            None => by_skill.entry(skill.to_string()).or_default(),
        };
        e.0.push(Scores {
            completion,
            efficiency,
            quality,
            satisfaction,
            total,
        });
        e.1 += u64::from(errored);
    })?;
    let mut out: Vec<SkillScore> = by_skill
        .into_iter()
        .map(|(skill_name, (scores, errored))| {
            let n = scores.len() as f64;
            let avg_score = scores.iter().map(|s| s.total as f64).sum::<f64>() / n;
            let components = ComponentAverages::of(&scores);
            let weak = weak_component(&components);
            let tier = Tier::from_score(avg_score);
            let stats = SkillStats {
                avg_score,
                invocation_count: scores.len() as u64,
                error_rate: errored as f64 / n,
            };
            SkillScore {
                skill_name,
                invocations: stats.invocation_count,
                avg_score,
                components,
                tier,
                tier_action: tier.action().to_string(),
                trend: analyze_trend(&scores),
                weak_component: weak,
                recommendation: get_improvement_recommendation(weak, components.get(weak))
                    .to_string(),
                error_rate: stats.error_rate,
                gates: Gate::ALL
                    .into_iter()
                    .map(|g| check_quality_gate(&stats, g))
                    .collect(),
                deprecation_review: deprecation_review(&stats, None),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.avg_score
            .total_cmp(&a.avg_score)
            .then_with(|| a.skill_name.cmp(&b.skill_name))
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_compare_as_lower_case_alphanumerics() {
        assert!(same_name("Software Engineering", "software-engineering"));
        assert!(same_name("ÉTUDE Δ", "étude δ"));
        assert!(!same_name("finance", "finances"));
        assert!(!same_name("", "a"));
    }

    #[test]
    fn times_are_written_as_sqlite_writes_them() {
        assert_eq!(
            sqlite_time("2026-11-21T10:00:00.5+01:00"),
            "2026-11-21 09:00:00"
        );
        assert_eq!(sqlite_time("2026-11-21 10:00:07"), "2026-11-21 10:00:07");
        assert_eq!(sqlite_time("not a time"), "not a time");
        // As chrono's `%Y-%m-%d %H:%M:%S` writes them, outside the direct path's range too.
        assert_eq!(sqlite_time("2016-12-31T23:59:60Z"), "2016-12-31 23:59:60");
        assert_eq!(sqlite_time("0099-01-02T03:04:05Z"), "0099-01-02 03:04:05");
    }

    proptest::proptest! {
        /// The direct formatting is chrono's, for any time in SQLite's range and beyond.
        #[test]
        fn times_are_formatted_as_chrono_formats_them(
            secs in -70_000_000_000i64..300_000_000_000i64,
            nanos in 0u32..1_000_000_000,
        ) {
            let t = chrono::DateTime::from_timestamp(secs, nanos).unwrap();
            let rfc = t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true);
            let expected = match parse_time(&rfc) {
                Some(p) => p.format("%Y-%m-%d %H:%M:%S").to_string(),
                None => rfc.clone(),
            };
            proptest::prop_assert_eq!(sqlite_time(&rfc), expected);
        }
    }

    fn ev() -> TrialEvidence {
        TrialEvidence {
            trial_id: 1,
            run_id: 1,
            skill_name: "s".into(),
            task_id: "t".into(),
            domain: Some("Finance".into()),
            outcome: Some(Outcome::Pass),
            reward: Some(1.0),
            queued_at: "2026-11-21T09:00:00.000Z".into(),
            ..Default::default()
        }
    }

    #[test]
    fn clean_pass_without_trajectory_facts() {
        let t = CategoryTable::default();
        let i = ev().invocation(&t);
        assert_eq!(i.errors, 0);
        assert!(i.output_validated && i.recovered);
        assert_eq!((i.requested_items, i.delivered_items), (1, 1));
        assert_eq!((i.tokens_used, i.tool_calls, i.duration_ms), (0, 0, 0));
        assert_eq!(i.output_type, OutputType::Other);
        // 25 + 20 + (12 + 10 + 8) + 11.
        assert_eq!(ev().score(&t).scores, Scores::new(25, 20, 30, 11));
        assert_eq!(ev().score(&t).category, SkillCategory::Analysis);
        assert_eq!(ev().timestamp(), "2026-11-21T09:00:00.000Z");
    }

    #[test]
    fn errors_count_steps_reward_and_exception() {
        let t = CategoryTable::default();
        // 2 error steps, reward 0, agent timeout → 4 errors.
        let e = TrialEvidence {
            outcome: Some(Outcome::AgentTimeout),
            reward: Some(0.0),
            n_error_steps: Some(2),
            final_message: Some(true),
            ..ev()
        };
        let i = e.invocation(&t);
        assert_eq!(i.errors, 4);
        assert!(!i.recovered && !i.partial_completion && i.failure_explained);
        assert_eq!(
            score_invocation(&i, SkillCategory::Analysis, None).completion,
            5
        );
        // No reward at all (build error): reward counts 0 and the exception counts.
        let b = TrialEvidence {
            outcome: Some(Outcome::BuildError),
            reward: None,
            ..ev()
        };
        let i = b.invocation(&t);
        assert_eq!(i.errors, 2);
        assert_eq!(
            score_invocation(&i, SkillCategory::Analysis, None).completion,
            0
        );
        // Timed out but the verifier passed: recovered.
        let r = TrialEvidence {
            outcome: Some(Outcome::AgentTimeout),
            ..ev()
        };
        let i = r.invocation(&t);
        assert_eq!(i.errors, 1);
        assert_eq!(
            score_invocation(&i, SkillCategory::Analysis, None).completion,
            20
        );
    }

    #[test]
    fn partial_from_reward_or_tests() {
        let t = CategoryTable::default();
        let half = TrialEvidence {
            outcome: Some(Outcome::Fail),
            reward: Some(0.5),
            ..ev()
        };
        assert!(half.invocation(&t).partial_completion);
        let tests = TrialEvidence {
            outcome: Some(Outcome::Fail),
            reward: Some(0.0),
            tests_total: Some(4),
            tests_passed: Some(1),
            ..ev()
        };
        let i = tests.invocation(&t);
        assert!(i.partial_completion);
        assert_eq!((i.requested_items, i.delivered_items), (4, 1));
        // Tests known, passed unknown: delivered by the verdict.
        let i = TrialEvidence {
            tests_total: Some(4),
            ..ev()
        }
        .invocation(&t);
        assert_eq!((i.requested_items, i.delivered_items), (4, 4));
        let i = TrialEvidence {
            reward: Some(0.0),
            outcome: Some(Outcome::Fail),
            tests_total: Some(0),
            tests_passed: Some(0),
            ..ev()
        }
        .invocation(&t);
        assert_eq!((i.requested_items, i.delivered_items), (1, 0));
    }

    #[test]
    fn durations_tokens_and_code() {
        let t = CategoryTable::default();
        let e = TrialEvidence {
            domain: Some("software-engineering".into()),
            n_input_tokens: Some(900),
            n_output_tokens: Some(100),
            n_tool_calls: Some(6),
            agent_started_at: Some("2026-11-21T10:00:01.000Z".into()),
            agent_finished_at: Some("2026-11-21T10:01:01.500Z".into()),
            started_at: Some("2026-11-21T10:00:00Z".into()),
            finished_at: Some("2026-11-21T10:02:00Z".into()),
            ..ev()
        };
        let i = e.invocation(&t);
        assert_eq!(i.tokens_used, 1000);
        assert_eq!(i.duration_ms, 60_500);
        assert_eq!(i.output_type, OutputType::Code);
        assert_eq!(i.code_quality.tests_passed, Some(true));
        // code_generation: 8·50/1000 = 0.4; 6·3/6 = 3; 6·30000/60500 = 2.975 → int(6.375) = 6.
        let s = e.score(&t);
        assert_eq!(s.category, SkillCategory::CodeGeneration);
        assert_eq!(s.scores, Scores::new(25, 6, 30, 11));
        // No agent phase: whole trial (naive and offset times mixed).
        let w = TrialEvidence {
            agent_started_at: None,
            started_at: Some("2026-11-21T10:00:00".into()),
            finished_at: Some("2026-11-21T10:02:00+00:00".into()),
            ..e.clone()
        };
        assert_eq!(w.invocation(&t).duration_ms, 120_000);
        assert_eq!(w.timestamp(), "2026-11-21T10:02:00+00:00");
        // Code task listed explicitly.
        let mut t2 = CategoryTable::default();
        t2.code_tasks.insert("t".into());
        assert_eq!(ev().invocation(&t2).output_type, OutputType::Code);
        assert_eq!(t2.category(Some("Finance")), SkillCategory::Analysis);
        assert_eq!(t2.category(None), SkillCategory::Analysis);
        t2.by_domain
            .insert("Finance".into(), SkillCategory::Research);
        assert_eq!(t2.category(Some("finance")), SkillCategory::Research);
    }
}
