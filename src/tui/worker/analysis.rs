//! The dashboard's analysis data: the evaluation's results ([`crate::analysis::results`]) for the
//! run or experiment being watched, and the skill rubric's report per skill
//! ([`crate::analysis::invocations`]) for the skill browser. Both are read by the data worker
//! ([`super`]), never on the UI thread, and only while their view is open.
//!
//! Both are expensive at scale (the analysis of a million trials takes up to a second), so the
//! worker caches them by a [`ChangeMarker`] — per watched run, the count and highest row id of its
//! finished latest attempts, one index-only query — and recomputes only when the marker moved,
//! at most once per [`Refresh::interval`] (a few times the last computation's cost).
//!
//! The rubric is scored **in memory**: the dashboard writes nothing but operator commands (the
//! engine is the only writer of results), so instead of `score_run` (which replaces rows of the
//! shared `skill_invocations` table) the watched runs' invocations ([`run_evidence`]) are scored
//! with [`TrialEvidence::score`] into a private in-memory database of the same schema, and the
//! rubric's own report ([`skill_report`]) runs on that — the same numbers `score_run` followed by
//! `skill_report` give, without a write to the store.
//!
//! Every string that came from the store (run, experiment, task, domain, condition and skill
//! names) is sanitized here, when read, like the rest of the dashboard's data.

use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::analysis::invocations::{
    CategoryTable, ScoredInvocation, SkillScore, TrialEvidence, Window, run_evidence, score_all,
    skill_report, write_scored,
};
use crate::analysis::results::{Results, Scoring, Selection, analyze};
use crate::domain::RunRow;
use crate::sanitize::one_line;
use crate::store::learning as lq;
use crate::store::{StoreError, queries};

/// What the dashboard analyses for a watched run: its experiment (round 1 and round 2, labelled
/// A, B, A', B') when it belongs to one, else the run alone.
#[derive(Debug, Clone, PartialEq)]
pub struct Watched {
    /// What [`analyze`] is given.
    pub selection: Selection,
    /// The runs it covers (those that exist so far), round 1 first.
    pub runs: Vec<RunRow>,
    /// `experiment <name>` or `run <name>` (sanitized).
    pub title: String,
}

/// The runs and selection of watched run `run_id` (see [`Watched`]).
///
/// # Errors
/// Database errors; [`StoreError::NotFound`] for an unknown run.
pub fn watched(conn: &Connection, run_id: i64) -> Result<Watched, StoreError> {
    let run = queries::get_run(conn, run_id)?;
    if let Some(e) = lq::experiment_of_run(conn, &run.name)? {
        let mut runs = Vec::new();
        for name in [&e.round1_run, &e.round2_run] {
            if let Some(r) = queries::find_run(conn, name)? {
                runs.push(r);
            }
        }
        // The experiment's task denominator is round 1's: without it, analyse the run alone.
        if runs.first().is_some_and(|r| r.name == e.round1_run) {
            return Ok(Watched {
                title: format!("experiment {}", one_line(&e.name)),
                selection: Selection::Experiment(e.name),
                runs,
            });
        }
    }
    Ok(Watched {
        title: format!("run {}", one_line(&run.name)),
        selection: Selection::Runs(vec![run.name.clone()]),
        runs: vec![run],
    })
}

/// A cheap fingerprint of the finished trials of some runs: per run (row id), the count and the
/// highest row id of its finished latest attempts. A trial finishing, a retry (the old attempt is
/// superseded, a new one finishes) or an import moves it; a heartbeat or a trial starting does
/// not.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChangeMarker(pub Vec<(i64, i64, i64)>);

impl ChangeMarker {
    /// Finished latest attempts over all the runs.
    pub fn done(&self) -> usize {
        self.0.iter().map(|(_, n, _)| *n as usize).sum()
    }
}

/// The marker of `runs`: one index-only query per run (`trials_by_run_state`).
///
/// # Errors
/// Database errors.
pub fn change_marker(conn: &Connection, runs: &[RunRow]) -> Result<ChangeMarker, StoreError> {
    let ids: Vec<i64> = runs.iter().map(|r| r.id).collect();
    Ok(ChangeMarker(
        queries::done_marks(conn, &ids)?
            .into_iter()
            .map(|m| (m.run_id, m.done, m.last_id))
            .collect(),
    ))
}

/// The Results view's data.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultsData {
    /// `experiment <name>` or `run <name>` (sanitized).
    pub title: String,
    /// Finished trials (latest attempts) in the watched runs.
    pub done: usize,
    /// The analysis (strings sanitized); `None` while no trial has finished.
    pub results: Option<Results>,
}

fn clean(s: &mut String) {
    *s = one_line(s);
}

/// Sanitizes every string of `r` that could reach the screen.
pub fn sanitize_results(r: &mut Results) {
    if let Some(e) = &mut r.experiment {
        clean(e);
    }
    for run in &mut r.runs {
        clean(&mut run.name);
        clean(&mut run.agent);
        clean(&mut run.source);
        clean(&mut run.status);
        if let Some(m) = &mut run.model {
            clean(m);
        }
    }
    for t in &mut r.tasks {
        clean(&mut t.id);
        clean(&mut t.domain);
        clean(&mut t.difficulty);
    }
    for c in &mut r.conditions {
        clean(&mut c.label);
        clean(&mut c.run);
        clean(&mut c.condition);
    }
    for c in &mut r.comparisons {
        clean(&mut c.name);
        clean(&mut c.with);
        clean(&mut c.without);
        for t in c
            .not_run_with
            .iter_mut()
            .chain(c.not_run_without.iter_mut())
        {
            clean(t);
        }
    }
    for g in r.domains.iter_mut().chain(r.difficulties.iter_mut()) {
        clean(&mut g.group);
    }
    for d in &mut r.task_deltas {
        clean(&mut d.comparison);
        clean(&mut d.task);
        clean(&mut d.domain);
        clean(&mut d.difficulty);
    }
    for f in &mut r.failure_shifts {
        clean(&mut f.name);
    }
    for f in &mut r.category_shifts {
        clean(&mut f.name);
    }
    for e in &mut r.efficiency {
        clean(&mut e.comparison);
        clean(&mut e.difficulty);
    }
    for f in &mut r.flaky {
        clean(&mut f.condition);
        clean(&mut f.task);
    }
    for a in &mut r.adaptive {
        clean(&mut a.name);
        clean(&mut a.group);
    }
    for p in &mut r.paper {
        clean(&mut p.run);
    }
    for n in &mut r.notes {
        clean(n);
    }
    let x = &mut r.exposure;
    for f in &mut x.flags {
        clean(f);
    }
    for c in &mut x.conditions {
        for s in c.stray_skills.iter_mut().chain(c.never_used.iter_mut()) {
            clean(s);
        }
        for k in &mut c.skills {
            clean(&mut k.skill);
            clean(&mut k.origin);
            k.used_by.iter_mut().for_each(clean);
        }
    }
    for c in &mut x.comparisons {
        c.notes.iter_mut().for_each(clean);
    }
}

/// The Results view's data for watched run `run_id`: the analysis of [`watched`] with the
/// default CI method (seeded bootstrap, so the same trials always give the same intervals), read
/// in one transaction; no analysis while no trial has finished.
///
/// # Errors
/// Database errors.
pub fn load_results(conn: &Connection, run_id: i64) -> Result<ResultsData, StoreError> {
    load_results_with(
        conn,
        run_id,
        &crate::analysis::success::SuccessRule::default(),
    )
}

/// [`load_results`] counting successes by `success` (the dashboard's pass rule).
///
/// # Errors
/// Database errors.
pub fn load_results_with(
    conn: &Connection,
    run_id: i64,
    success: &crate::analysis::success::SuccessRule,
) -> Result<ResultsData, StoreError> {
    let tx = conn.unchecked_transaction()?;
    let w = watched(&tx, run_id)?;
    let done = change_marker(&tx, &w.runs)?.done();
    let results = if done == 0 {
        None
    } else {
        let scoring = Scoring {
            success: *success,
            ..Scoring::default()
        };
        let mut r = analyze(&tx, &w.selection, &scoring)?;
        sanitize_results(&mut r);
        Some(r)
    };
    tx.finish()?;
    Ok(ResultsData {
        title: w.title,
        done,
        results,
    })
}

/// The skill browser's rubric data: the report of every skill invoked in the watched runs.
#[derive(Debug, Clone, PartialEq)]
pub struct RubricData {
    /// Names of the runs scored (sanitized).
    pub runs: Vec<String>,
    /// Invocations scored.
    pub invocations: usize,
    /// End of the rubric's 30-day window: the latest invocation's time (RFC 3339), if any.
    pub window_end: Option<String>,
    /// Per skill (names sanitized), best average first.
    pub scores: Vec<SkillScore>,
}

impl RubricData {
    /// The report of skill `name` (a sanitized name, as the browser shows it).
    pub fn skill(&self, name: &str) -> Option<&SkillScore> {
        self.scores.iter().find(|s| s.skill_name == name)
    }
}

/// Scores `evidence` with the rubric (default category table) and reports per skill with
/// [`skill_report`] over the 30 days up to the latest invocation, in a private in-memory
/// database — nothing is written to the store. Skill names in the result are sanitized.
///
/// # Errors
/// Database errors (of the in-memory database).
pub fn rubric_of(evidence: &[TrialEvidence], runs: &[RunRow]) -> Result<RubricData, StoreError> {
    let table = CategoryTable::default();
    let scored: Vec<ScoredInvocation> = score_all(evidence, &table);
    let mut mem = Connection::open_in_memory()?;
    crate::store::schema::migrations()
        .to_latest(&mut mem)
        .map_err(|e| StoreError::Sql(e.to_string()))?;
    // Only `skill_invocations` is filled: its trials and runs live in the store, not here.
    mem.pragma_update(None, "foreign_keys", false)?;
    let tx = mem.transaction()?;
    write_scored(&tx, &scored)?;
    tx.commit()?;
    let window_end = crate::store::invocations::latest_invocation_at(&mem)?;
    let ids: Vec<i64> = runs.iter().map(|r| r.id).collect();
    let mut scores = match &window_end {
        Some(end) => skill_report(&mem, &Window::at(end, &ids))?,
        None => Vec::new(),
    };
    for s in &mut scores {
        clean(&mut s.skill_name);
    }
    Ok(RubricData {
        runs: runs.iter().map(|r| one_line(&r.name)).collect(),
        invocations: scored.len(),
        window_end,
        scores,
    })
}

/// The rubric data of watched run `run_id`: the invocations of every run of [`watched`], read in
/// one transaction, scored by [`rubric_of`].
///
/// # Errors
/// Database errors.
pub fn load_rubric(conn: &Connection, run_id: i64) -> Result<RubricData, StoreError> {
    let tx = conn.unchecked_transaction()?;
    let w = watched(&tx, run_id)?;
    let mut evidence = Vec::new();
    for r in &w.runs {
        evidence.extend(run_evidence(&tx, r.id)?);
    }
    tx.finish()?;
    rubric_of(&evidence, &w.runs)
}

/// When a cached computation may run again: never sooner than [`Refresh::MIN`] after the last
/// one, nor sooner than [`Refresh::FACTOR`] times its cost — so a second-long analysis of a
/// million trials keeps the worker busy a fifth of the time at most while trials keep finishing.
#[derive(Debug, Clone, Default)]
pub struct Refresh {
    last: Option<(Instant, Duration)>,
}

impl Refresh {
    /// Shortest interval between two computations.
    pub const MIN: Duration = Duration::from_millis(500);
    /// Interval as a multiple of the last computation's cost.
    pub const FACTOR: u32 = 4;

    /// The interval before the next computation.
    pub fn interval(&self) -> Duration {
        self.last.map_or(Duration::ZERO, |(_, cost)| {
            (cost * Self::FACTOR).max(Self::MIN)
        })
    }

    /// True when a computation may run at `now`.
    pub fn due(&self, now: Instant) -> bool {
        self.last
            .is_none_or(|(at, _)| now.duration_since(at) >= self.interval())
    }

    /// Records a computation that started at `started` and ends now.
    pub fn record(&mut self, started: Instant) {
        self.last = Some((started, started.elapsed()));
    }
}

/// A value computed from the store, cached by the [`ChangeMarker`] it was computed at.
#[derive(Debug)]
pub struct Cached<T> {
    /// The marker of the cached value.
    pub marker: Option<ChangeMarker>,
    /// The value.
    pub value: Option<std::sync::Arc<T>>,
    /// Throttle.
    pub refresh: Refresh,
    /// The marker moved but the throttle held the computation back: look again on the next poll.
    pub pending: bool,
}

impl<T> Default for Cached<T> {
    fn default() -> Self {
        Cached {
            marker: None,
            value: None,
            refresh: Refresh::default(),
            pending: false,
        }
    }
}

/// What [`Cached::refresh`] decided.
#[derive(Debug, PartialEq)]
pub enum Fresh<T> {
    /// A new value: send it.
    New(std::sync::Arc<T>),
    /// Nothing changed since the cached value (or it was held back by the throttle).
    Same,
}

impl<T> Cached<T> {
    /// Recomputes with `compute` when `marker` differs from the cached marker (or nothing is
    /// cached) and the throttle allows; otherwise keeps the cached value (and remembers to look
    /// again when held back).
    ///
    /// # Errors
    /// What `compute` returns; the cache is unchanged then.
    pub fn refresh(
        &mut self,
        marker: ChangeMarker,
        compute: impl FnOnce() -> Result<T, StoreError>,
    ) -> Result<Fresh<T>, StoreError> {
        if self.value.is_some() && self.marker.as_ref() == Some(&marker) {
            self.pending = false;
            return Ok(Fresh::Same);
        }
        let now = Instant::now();
        if !self.refresh.due(now) {
            self.pending = true;
            return Ok(Fresh::Same);
        }
        self.pending = false;
        let computed = compute();
        // Failures count for the throttle too: a failing analysis is not retried in a loop.
        self.refresh.record(now);
        let v = std::sync::Arc::new(computed?);
        self.marker = Some(marker);
        self.value = Some(v.clone());
        Ok(Fresh::New(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_waits_a_multiple_of_the_cost() {
        let mut r = Refresh::default();
        let t0 = Instant::now();
        assert!(r.due(t0));
        r.last = Some((t0, Duration::from_secs(1)));
        assert_eq!(r.interval(), Duration::from_secs(4));
        assert!(!r.due(t0 + Duration::from_secs(3)));
        assert!(r.due(t0 + Duration::from_secs(4)));
        r.last = Some((t0, Duration::from_millis(1)));
        assert_eq!(r.interval(), Refresh::MIN);
    }

    #[test]
    fn cached_values_recompute_only_when_the_marker_moves() {
        let mut c: Cached<u32> = Cached::default();
        let m = |n| ChangeMarker(vec![(1, n, n)]);
        let mut calls = 0;
        let mut get = |c: &mut Cached<u32>, marker| {
            c.refresh(marker, || {
                calls += 1;
                Ok(calls)
            })
            .unwrap()
        };
        assert_eq!(get(&mut c, m(1)), Fresh::New(std::sync::Arc::new(1)));
        assert_eq!(get(&mut c, m(1)), Fresh::Same);
        // Moved, but within the throttle: held back and pending.
        assert_eq!(get(&mut c, m(2)), Fresh::Same);
        assert!(c.pending);
        c.refresh.last = Some((Instant::now() - Duration::from_secs(5), Duration::ZERO));
        assert_eq!(get(&mut c, m(2)), Fresh::New(std::sync::Arc::new(2)));
        assert!(!c.pending);
        // A failure keeps the old value and counts for the throttle.
        c.refresh.last = Some((Instant::now() - Duration::from_secs(5), Duration::ZERO));
        let err = c.refresh(m(3), || Err(StoreError::Sql("boom".into())));
        assert!(err.is_err());
        assert_eq!(c.value.as_deref(), Some(&2));
        assert_eq!(c.marker, Some(m(2)));
        assert_eq!(get(&mut c, m(3)), Fresh::Same);
        assert!(c.pending);
    }
}
