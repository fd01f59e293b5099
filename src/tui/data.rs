//! The dashboard's data: snapshots of a run read from the store, trial details with their log
//! files, and the worker thread that owns the database connection so the UI thread never waits on
//! disk. The worker notices changes with `PRAGMA data_version` (it changes when any other
//! connection commits) and re-reads only then; a detail whose attempt is still running is re-read
//! on each poll so its logs tail live. The skill browser's data (one learning space: its skills
//! with their curated and learned versions and files, provenance, and every learn step) is read
//! only while the browser is open, like a trial detail. So are the Results view's analysis and
//! the skill browser's rubric report ([`super::evaluation`]): computed here while their view is
//! open, cached by a cheap marker of the finished trials, and recomputed only when it moves.
//!
//! Text that came from the Acontext server (skill names and files, learning statuses, errors) is
//! sanitized here, when read, like container logs: nothing remote reaches the terminal raw.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::mpsc as tmpsc;

use crate::store::learning::{
    self as lq, ExperimentRow, LearnStepRow, SkillFileRow, SkillSourceRow, SkillVersionRow,
    SpaceProgress, SpaceRow,
};
use crate::store::{
    CommandKind, RunRow, RunTaskRow, SkillUseRow, Store, StoreError, TrialBrief, TrialKey,
    TrialPlan, TrialRow, queries,
};
use crate::text::sanitize;

use super::evaluation::{Cached, Fresh, ResultsData, RubricData, change_marker, watched};

/// Most bytes of a log file shown (its end).
pub const LOG_TAIL_BYTES: u64 = 512 * 1024;

/// A run event.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    /// Time, RFC 3339.
    pub at: String,
    /// `info`, `warn`, `error`.
    pub level: String,
    /// Text.
    pub message: String,
}

/// Everything the dashboard draws about a run, read in one transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The run.
    pub run: RunRow,
    /// Its tasks (the fixed denominator), by id.
    pub tasks: Vec<RunTaskRow>,
    /// The latest attempt of every trial (brief form, unordered).
    pub trials: Vec<TrialBrief>,
    /// The run's events, oldest first: every one up to the latest [`MAX_EVENTS`] (messages
    /// sanitized, one line each).
    pub events: Arc<Vec<EventRow>>,
    /// Short labels of the run's conditions, in `run.conditions` order: `A`, `B`, `A'`, `B'`,
    /// `C` … ([`crate::skillsbench::condition::short_labels`]).
    pub labels: Vec<String>,
    /// Operator commands not yet applied by the engine.
    pub pending_commands: usize,
    /// The experiment whose round-1 or round-2 run this is, if any (note sanitized).
    pub experiment: Option<ExperimentRow>,
    /// Learning spaces relevant to this run: those learning from it and, for an experiment,
    /// those learning from its round-1 run; oldest first, with their progress counted in SQL.
    pub spaces: Vec<SpaceProgress>,
    /// The skills agents generated under the self-generated conditions of this run (and of an
    /// experiment's round-1 run), as the skill browser lists them ([`super::generated`]).
    pub generated: Vec<SpaceProgress>,
    /// Tokens and cost so far, per condition (conditions without usage are absent).
    pub spend: Vec<queries::ConditionSpend>,
    /// Every attempt's tokens, cost and spending time, and a running agent's live activity, by
    /// id (the last tool call sanitized again when read).
    pub activity: Vec<queries::AttemptActivity>,
    /// Whether the run's owner process exists, when it runs on this machine (`None`: elsewhere,
    /// or no owner) — with the heartbeat, what tells a live engine from a gone one.
    pub owner_alive: Option<bool>,
    /// The run's Docker hosts and their health.
    pub hosts: Vec<crate::store::HostRow>,
    /// Trials planned per task and condition (uneven for imported runs).
    pub plan: TrialPlan,
}

/// One line of remote text: sanitized, line breaks made spaces.
pub fn one_line(s: &str) -> String {
    sanitize(s).replace('\n', " ")
}

fn clean_space(s: &mut SpaceRow) {
    s.label = one_line(&s.label);
    s.condition = one_line(&s.condition);
    s.state = one_line(&s.state);
    s.status_mode = s.status_mode.as_deref().map(one_line);
    s.error = s.error.as_deref().map(one_line);
}

fn clean_step(s: &mut LearnStepRow) {
    s.task_id = one_line(&s.task_id);
    s.verdict = one_line(&s.verdict);
    s.step = one_line(&s.step);
    s.mode = s.mode.as_deref().map(one_line);
    s.learning_status = s.learning_status.as_deref().map(one_line);
    s.error = s.error.as_deref().map(one_line);
}

/// The experiment of run `run` and the learning spaces relevant to it (see [`Snapshot::spaces`]),
/// sanitized, with their steps counted by step in pipeline order.
///
/// # Errors
/// Database errors.
pub fn load_learning(
    conn: &Connection,
    run: &RunRow,
) -> Result<(Option<ExperimentRow>, Vec<SpaceProgress>), StoreError> {
    let mut experiment = lq::experiment_of_run(conn, &run.name)?;
    let mut runs = vec![run.id];
    if let Some(e) = &mut experiment {
        e.name = one_line(&e.name);
        e.phase = one_line(&e.phase);
        e.note = e.note.as_deref().map(one_line);
        if let Some(r1) = queries::find_run(conn, &e.round1_run)? {
            runs.push(r1.id);
        }
    }
    let mut spaces = Vec::new();
    for space in lq::spaces_of_runs(conn, &runs)? {
        let mut p = lq::space_progress(conn, space)?;
        clean_space(&mut p.space);
        if let Some(c) = &mut p.current {
            clean_step(c);
        }
        for (step, _) in &mut p.by_step {
            *step = one_line(step);
        }
        p.by_step
            .sort_by_key(|(step, _)| crate::store::learning::Step::parse(step));
        spaces.push(p);
    }
    Ok((experiment, spaces))
}

/// Most events a snapshot holds (the newest).
pub const MAX_EVENTS: usize = 5000;

/// A run's events as last read, so the next snapshot reads only the rows added since.
#[derive(Debug, Default, Clone)]
pub struct EventCache {
    run_id: i64,
    last_id: i64,
    events: Arc<Vec<EventRow>>,
}

impl EventCache {
    /// The events of run `run_id` now: those cached plus any newer rows (all of them on a new
    /// run), keeping the newest [`MAX_EVENTS`].
    ///
    /// # Errors
    /// Database errors.
    pub fn refresh(
        &mut self,
        conn: &Connection,
        run_id: i64,
    ) -> Result<Arc<Vec<EventRow>>, StoreError> {
        if run_id != self.run_id {
            *self = EventCache {
                run_id,
                ..EventCache::default()
            };
        }
        let new = queries::events_after(conn, run_id, self.last_id, 100_000)?;
        if let Some((id, ..)) = new.last() {
            self.last_id = *id;
            let mut all: Vec<EventRow> = self.events.as_ref().clone();
            all.extend(new.into_iter().map(|(_, at, level, message)| EventRow {
                at: one_line(&at),
                level: one_line(&level),
                message: one_line(&message),
            }));
            if all.len() > MAX_EVENTS {
                all.drain(..all.len() - MAX_EVENTS);
            }
            self.events = Arc::new(all);
        }
        Ok(self.events.clone())
    }
}

/// The short labels of `run`'s conditions ([`Snapshot::labels`]): by its round in `experiment`,
/// and for skills folders by the learning space whose export they are.
///
/// # Errors
/// Database errors.
pub fn condition_labels(
    conn: &Connection,
    run: &RunRow,
    experiment: Option<&ExperimentRow>,
) -> Result<Vec<String>, StoreError> {
    let round = experiment.and_then(|e| {
        if e.round1_run == run.name {
            Some(1)
        } else if e.round2_run == run.name {
            Some(2)
        } else {
            None
        }
    });
    let mut exported: Vec<(String, String)> = Vec::new();
    if run.conditions.iter().any(|c| c.starts_with("skills:")) {
        for space in lq::list_spaces(conn)? {
            for e in lq::exports(conn, space.id)? {
                exported.push((e.dir, space.condition.clone()));
            }
        }
    }
    // Both are absolute paths as recorded (a condition key resolves its folder when parsed).
    let same = |a: &str, b: &str| a.trim_end_matches('/') == b.trim_end_matches('/');
    Ok(crate::skillsbench::condition::short_labels(
        &run.conditions,
        round,
        |dir| {
            exported
                .iter()
                .find(|(d, _)| same(d, dir))
                .map(|(_, c)| c.clone())
        },
    ))
}

/// Reads a snapshot of run `run_id` (all its events).
///
/// # Errors
/// Database errors.
pub fn load_snapshot(conn: &Connection, run_id: i64) -> Result<Snapshot, StoreError> {
    load_snapshot_with(conn, run_id, &mut EventCache::default())
}

/// Reads a snapshot of run `run_id`, its events through `events` (only new rows are read).
///
/// # Errors
/// Database errors.
pub fn load_snapshot_with(
    conn: &Connection,
    run_id: i64,
    events: &mut EventCache,
) -> Result<Snapshot, StoreError> {
    let tx = conn.unchecked_transaction()?;
    let run = queries::get_run(&tx, run_id)?;
    let (experiment, spaces) = load_learning(&tx, &run)?;
    let mut runs = vec![run.clone()];
    if let Some(e) = &experiment
        && let Some(r1) = queries::find_run(&tx, &e.round1_run)?
        && r1.id != run.id
    {
        runs.push(r1);
    }
    let generated = super::generated::sets(&tx, &runs)?;
    let snap = Snapshot {
        tasks: queries::run_tasks(&tx, run_id)?,
        trials: queries::current_briefs(&tx, run_id)?,
        events: events.refresh(&tx, run_id)?,
        labels: condition_labels(&tx, &run, experiment.as_ref())?,
        pending_commands: queries::pending_commands(&tx, run_id)?.len(),
        spend: queries::run_spend(&tx, run_id)?,
        activity: queries::attempt_activity(&tx, run_id)?
            .into_iter()
            .map(|mut a| {
                a.live_tool = a.live_tool.as_deref().map(one_line);
                a
            })
            .collect(),
        owner_alive: crate::store::owner_alive_here(&run, &queries::host_name()),
        hosts: queries::run_hosts(&tx, run_id)?,
        plan: queries::trial_plan(&tx, &run)?,
        run,
        experiment,
        spaces,
        generated,
    };
    tx.finish()?;
    Ok(snap)
}

/// Where a skill of a space comes from, by its latest version per origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillOrigin {
    /// A task's curated skill, unchanged by learning.
    Curated,
    /// Created by learning.
    Learned,
    /// A curated skill that learning changed (the learned version differs).
    CuratedLearned,
    /// Written by an agent in a self-generated trial, and kept after validation.
    Generated,
    /// Written by an agent in a self-generated trial, and refused (malformed).
    Refused,
}

impl SkillOrigin {
    /// Label.
    pub fn label(self) -> &'static str {
        match self {
            SkillOrigin::Curated => "curated",
            SkillOrigin::Learned => "learned",
            SkillOrigin::CuratedLearned => "curated+learned",
            SkillOrigin::Generated => "generated",
            SkillOrigin::Refused => "refused",
        }
    }
}

/// A recorded skill version with its files.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillVersion {
    /// The version.
    pub row: SkillVersionRow,
    /// Its files, by path.
    pub files: Vec<SkillFileRow>,
}

/// One file path of a skill, in its curated and latest learned versions.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillFile {
    /// Path within the skill (sanitized).
    pub path: String,
    /// The curated version's file.
    pub curated: Option<SkillFileRow>,
    /// The latest learned version's file.
    pub learned: Option<SkillFileRow>,
}

/// How learning changed a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileChange {
    /// Same content (or only one version exists).
    Same,
    /// Only in the learned version.
    Added,
    /// Only in the curated version.
    Removed,
    /// Different content.
    Changed,
}

impl SkillFile {
    /// The file shown: the learned one when there is one.
    pub fn shown(&self) -> Option<&SkillFileRow> {
        self.learned.as_ref().or(self.curated.as_ref())
    }

    /// The change from curated to learned.
    pub fn change(&self) -> FileChange {
        match (&self.curated, &self.learned) {
            (Some(c), Some(l)) if c.sha256 == l.sha256 => FileChange::Same,
            (Some(_), Some(_)) => FileChange::Changed,
            (None, Some(_)) => FileChange::Added,
            (Some(_), None) => FileChange::Removed,
            (None, None) => FileChange::Same,
        }
    }
}

/// A skill of a space as the browser shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillEntry {
    /// Name (sanitized).
    pub name: String,
    /// Where it comes from.
    pub origin: SkillOrigin,
    /// Description of the version shown.
    pub description: String,
    /// Latest curated version.
    pub curated: Option<SkillVersion>,
    /// Latest learned version (as exported).
    pub learned: Option<SkillVersion>,
    /// Files of both versions by path, `SKILL.md` first; empty until the skill is exported.
    pub files: Vec<SkillFile>,
    /// Trials whose learning created or changed it, in learning order.
    pub sources: Vec<SkillSourceRow>,
}

/// The skill browser's data for one learning space.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillBrowser {
    /// The space (sanitized).
    pub space: SpaceRow,
    /// Its skills by name: every recorded version's name, and names that learning changed but
    /// that were not exported yet.
    pub skills: Vec<SkillEntry>,
    /// Every learn step in learning order (sanitized).
    pub steps: Vec<LearnStepRow>,
}

fn same_content(a: &SkillVersion, b: &SkillVersion) -> bool {
    let files = |v: &SkillVersion| -> Vec<(String, String)> {
        v.files
            .iter()
            .map(|f| (f.path.clone(), f.sha256.clone()))
            .collect()
    };
    a.row.content_hash == b.row.content_hash || files(a) == files(b)
}

/// Reads the skill browser's data of space `space_id` in one transaction, sanitized — or of a
/// generated skill set ([`super::generated`]) for its (negative) id.
///
/// # Errors
/// Database errors; [`StoreError::NotFound`] for an unknown space.
pub fn load_skills(conn: &Connection, space_id: i64) -> Result<SkillBrowser, StoreError> {
    if super::generated::is_set(space_id) {
        return super::generated::load(conn, space_id);
    }
    let tx = conn.unchecked_transaction()?;
    let mut space = lq::get_space(&tx, space_id)?;
    // Latest version per (name, origin): versions come by name, then oldest first.
    let mut latest: BTreeMap<String, (Option<SkillVersionRow>, Option<SkillVersionRow>)> =
        BTreeMap::new();
    for mut v in lq::versions(&tx, space_id)? {
        v.name = one_line(&v.name);
        let e = latest.entry(v.name.clone()).or_default();
        if v.origin == "curated" {
            e.0 = Some(v);
        } else {
            e.1 = Some(v);
        }
    }
    let mut sources: BTreeMap<String, Vec<SkillSourceRow>> = BTreeMap::new();
    for mut s in lq::sources(&tx, space_id)? {
        s.skill = one_line(&s.skill);
        s.task_id = one_line(&s.task_id);
        s.verdict = one_line(&s.verdict);
        s.change = one_line(&s.change);
        latest.entry(s.skill.clone()).or_default();
        sources.entry(s.skill.clone()).or_default().push(s);
    }
    let with_files = |v: Option<SkillVersionRow>| -> Result<Option<SkillVersion>, StoreError> {
        let Some(mut row) = v else { return Ok(None) };
        row.description = sanitize(&row.description);
        row.dir = row.dir.as_deref().map(one_line);
        row.problems = row.problems.iter().map(|p| one_line(p)).collect();
        let files = lq::version_files(&tx, row.id)?
            .into_iter()
            .map(|mut f| {
                f.path = one_line(&f.path);
                f.text = f.text.as_deref().map(sanitize);
                f
            })
            .collect();
        Ok(Some(SkillVersion { row, files }))
    };
    let mut skills = Vec::new();
    for (name, (c, l)) in latest {
        let curated = with_files(c)?;
        let learned = with_files(l)?;
        let origin = match (&curated, &learned) {
            (Some(c), Some(l)) if !same_content(c, l) => SkillOrigin::CuratedLearned,
            (Some(_), _) => SkillOrigin::Curated,
            (None, _) => SkillOrigin::Learned,
        };
        let mut files: BTreeMap<String, SkillFile> = BTreeMap::new();
        for (v, is_learned) in [(&curated, false), (&learned, true)] {
            for f in v.iter().flat_map(|v| v.files.iter()) {
                let e = files.entry(f.path.clone()).or_insert_with(|| SkillFile {
                    path: f.path.clone(),
                    curated: None,
                    learned: None,
                });
                if is_learned {
                    e.learned = Some(f.clone());
                } else {
                    e.curated = Some(f.clone());
                }
            }
        }
        let mut files: Vec<SkillFile> = files.into_values().collect();
        files.sort_by_key(|f| (f.path != "SKILL.md", f.path.clone()));
        skills.push(SkillEntry {
            description: learned
                .as_ref()
                .or(curated.as_ref())
                .map(|v| one_line(&v.row.description))
                .unwrap_or_default(),
            sources: sources.remove(&name).unwrap_or_default(),
            name,
            origin,
            curated,
            learned,
            files,
        });
    }
    let mut steps = lq::steps(&tx, space_id)?;
    tx.finish()?;
    steps.iter_mut().for_each(clean_step);
    clean_space(&mut space);
    Ok(SkillBrowser {
        space,
        skills,
        steps,
    })
}

/// A log file of an attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct LogFile {
    /// Tab label.
    pub label: String,
    /// Where it is.
    pub path: PathBuf,
    /// Its text (the end, at most [`LOG_TAIL_BYTES`]), control sequences stripped; or why it
    /// could not be read.
    pub text: String,
    /// True when only the end is shown.
    pub truncated: bool,
}

/// A trial's attempts and the logs of the latest one.
#[derive(Debug, Clone, PartialEq)]
pub struct Detail {
    /// Which trial.
    pub key: TrialKey,
    /// Every attempt, oldest first.
    pub attempts: Vec<TrialRow>,
    /// Logs of the latest attempt: trajectory (rendered), verifier output, agent output, build log.
    pub logs: Vec<LogFile>,
    /// Skills the latest attempt used.
    pub skill_uses: Vec<SkillUseRow>,
}

impl Detail {
    /// The latest attempt.
    pub fn latest(&self) -> Option<&TrialRow> {
        self.attempts.last()
    }
}

/// Reads the end of a log file the container may have written: no symlinks, capped, sanitized.
pub fn read_log(label: &str, path: &Path) -> LogFile {
    let (text, truncated) = match crate::safe_fs::read_tail(path, LOG_TAIL_BYTES) {
        Ok((bytes, longer)) => (crate::text::sanitize_bytes(&bytes), longer),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            ("(not written yet)".to_string(), false)
        }
        Err(e) => (format!("(cannot read: {e})"), false),
    };
    LogFile {
        label: label.to_string(),
        path: path.to_path_buf(),
        text,
        truncated,
    }
}

/// Reads every attempt of `key` and the logs of the latest one.
///
/// # Errors
/// Database errors.
pub fn load_detail(conn: &Connection, run_id: i64, key: &TrialKey) -> Result<Detail, StoreError> {
    let attempts = queries::trial_attempts(conn, run_id, key)?;
    let mut logs = Vec::new();
    let skill_uses = match attempts.last() {
        Some(a) => queries::skill_uses(conn, a.id)?,
        None => Vec::new(),
    };
    if let Some(dir) = attempts.last().and_then(|a| a.trial_dir.as_ref()) {
        let dir = Path::new(dir);
        let traj = attempts
            .last()
            .and_then(|a| a.trajectory_path.clone())
            .map(PathBuf::from)
            .unwrap_or_else(|| dir.join("agent/trajectory.json"));
        logs.push(read_trajectory(&traj));
        logs.push(read_log("verifier", &dir.join("verifier/test-stdout.txt")));
        logs.push(read_log("agent", &agent_log(dir)));
        logs.push(read_log("build", &dir.join("environment/build.log")));
    }
    Ok(Detail {
        key: key.clone(),
        attempts,
        logs,
        skill_uses,
    })
}

/// Renders an ATIF trajectory as text: one block per step with its source, time, message, tool
/// calls (→) and observations (←), each cut to a few lines. Sanitized like any container output.
pub fn read_trajectory(path: &Path) -> LogFile {
    let text = match crate::harbor::atif::Trajectory::read(path) {
        Ok(t) => render_trajectory(&t),
        Err(e) if !path.exists() => {
            let _ = e;
            "(no trajectory: agent/trajectory.json was not written)".to_string()
        }
        Err(e) => format!("(cannot read the trajectory: {e})"),
    };
    LogFile {
        label: "trajectory".into(),
        path: path.to_path_buf(),
        text: crate::text::sanitize(&text),
        truncated: false,
    }
}

fn clip_lines(s: &str, lines: usize, width: usize) -> Vec<String> {
    let all: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut out: Vec<String> = all
        .iter()
        .take(lines)
        .map(|l| {
            let l = l.trim_end();
            if l.chars().count() > width {
                format!("{}…", l.chars().take(width).collect::<String>())
            } else {
                l.to_string()
            }
        })
        .collect();
    if all.len() > lines {
        out.push(format!("… {} more lines", all.len() - lines));
    }
    out
}

/// The text [`read_trajectory`] shows.
pub fn render_trajectory(t: &crate::harbor::atif::Trajectory) -> String {
    let mut out = format!(
        "{} · {}{} · {} steps · {} tool calls\n",
        t.schema_version,
        t.agent.name,
        t.agent
            .model_name
            .as_deref()
            .map(|m| format!(" ({m})"))
            .unwrap_or_default(),
        t.steps.len(),
        t.tool_call_count()
    );
    for s in &t.steps {
        let time = s
            .timestamp
            .as_deref()
            .and_then(|ts| ts.get(11..19))
            .unwrap_or("");
        out.push_str(&format!("\n#{} {} {}\n", s.step_id, s.source, time));
        for l in clip_lines(&s.message_text(), 4, 160) {
            out.push_str(&format!("  {l}\n"));
        }
        for c in s.calls() {
            out.push_str(&format!(
                "  → {} {}\n",
                c.function_name,
                clip_lines(&c.brief(), 1, 150).join("")
            ));
        }
        for r in s.results() {
            for (i, l) in clip_lines(&r.text(), 3, 150).into_iter().enumerate() {
                out.push_str(&format!("  {} {l}\n", if i == 0 { "←" } else { " " }));
            }
        }
    }
    out
}

/// The agent's main log: `agent/oracle.txt` for the oracle, else the first `*.txt` in `agent/`.
fn agent_log(trial_dir: &Path) -> PathBuf {
    let oracle = trial_dir.join("agent/oracle.txt");
    if oracle.exists() {
        return oracle;
    }
    std::fs::read_dir(trial_dir.join("agent"))
        .ok()
        .and_then(|rd| {
            let mut txt: Vec<PathBuf> = rd
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "txt"))
                .collect();
            txt.sort();
            txt.into_iter().next()
        })
        .unwrap_or(oracle)
}

/// Requests from the UI to the worker.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// Re-read now (something changed in this process).
    Reload,
    /// Queue retries of these attempts.
    Retry(Vec<i64>),
    /// Queue a cancel of this attempt.
    Cancel(i64),
    /// Show this trial's detail (or none).
    Detail(Option<TrialKey>),
    /// Show the skill browser on this learning space (row id), or close it (`None`). While it is
    /// open the worker also sends the rubric report of the watched runs ([`Update::Rubric`]).
    Skills(Option<i64>),
    /// The Results view opened (`true`) or closed: while it is open the worker sends the analysis
    /// of the watched run or experiment ([`Update::Results`]) whenever its finished trials change.
    Results(bool),
}

/// What the worker sends back.
#[derive(Debug, Clone)]
pub enum Update {
    /// No run in the database yet.
    Waiting(String),
    /// A new snapshot.
    Snapshot(Arc<Snapshot>),
    /// The requested detail (re-sent while it changes).
    Detail(Arc<Detail>),
    /// The requested learning space for the skill browser (re-sent while it changes).
    Skills(Arc<SkillBrowser>),
    /// The analysis of the watched run or experiment (re-sent when its finished trials change).
    Results(Arc<ResultsData>),
    /// The rubric report of the watched runs' skills (re-sent when their finished trials change).
    Rubric(Arc<RubricData>),
    /// A message for the status line.
    Notice(String),
}

/// Which run to show.
#[derive(Debug, Clone)]
pub enum RunSelector {
    /// By name.
    Name(String),
    /// The newest run.
    Newest,
    /// The current run of an experiment: round 2 once it exists, else round 1.
    Experiment(String),
}

/// The run `sel` names now.
fn resolve_run(conn: &Connection, sel: &RunSelector) -> Option<i64> {
    match sel {
        RunSelector::Name(n) => queries::find_run(conn, n).ok().flatten().map(|r| r.id),
        RunSelector::Newest => queries::list_runs(conn)
            .ok()
            .and_then(|r| r.first().map(|r| r.id)),
        RunSelector::Experiment(n) => {
            let exp = crate::store::learning::find_experiment(conn, n)
                .ok()
                .flatten()?;
            [exp.round2_run, exp.round1_run]
                .iter()
                .find_map(|r| queries::find_run(conn, r).ok().flatten())
                .map(|r| r.id)
        }
    }
}

/// Handle to the worker thread.
pub struct DataWorker {
    requests: mpsc::Sender<Request>,
    /// Updates for the UI.
    pub updates: tmpsc::UnboundedReceiver<Update>,
}

impl DataWorker {
    /// Starts the worker on its own connection to `db`, polling for changes every `poll`.
    ///
    /// # Errors
    /// The database cannot be opened.
    pub fn start(db: &Path, run: RunSelector, poll: Duration) -> Result<DataWorker, StoreError> {
        let conn = Store::open_existing(db)?;
        let (req_tx, req_rx) = mpsc::channel();
        let (up_tx, up_rx) = tmpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("skillscope-ui-data".into())
            .spawn(move || worker_loop(conn, run, poll, req_rx, up_tx))
            .map_err(|e| StoreError::Sql(e.to_string()))?;
        Ok(DataWorker {
            requests: req_tx,
            updates: up_rx,
        })
    }

    /// Sends a request (never blocks).
    pub fn send(&self, r: Request) {
        let _ = self.requests.send(r);
    }

    /// A sender for other tasks (e.g. engine events poking a reload).
    pub fn sender(&self) -> mpsc::Sender<Request> {
        self.requests.clone()
    }
}

/// What happens to a command queued for run `rid`, as its liveness says.
fn command_note(conn: &Connection, rid: i64) -> String {
    match queries::get_run(conn, rid) {
        Ok(run) => crate::store::Liveness::of(&run, chrono::Utc::now(), &queries::host_name())
            .command_note(&run),
        Err(e) => format!("(could not read the run: {e})"),
    }
}

fn data_version(conn: &Connection) -> i64 {
    conn.query_row("PRAGMA data_version", [], |r| r.get(0))
        .unwrap_or(-1)
}

fn worker_loop(
    conn: Connection,
    run: RunSelector,
    poll: Duration,
    rx: mpsc::Receiver<Request>,
    tx: tmpsc::UnboundedSender<Update>,
) {
    let mut run_id: Option<i64> = None;
    let mut version = i64::MIN;
    let mut events = EventCache::default();
    // The run's owner process on this machine and whether it existed at the last snapshot.
    let mut owner: Option<(u32, bool)> = None;
    let mut detail_key: Option<TrialKey> = None;
    let mut last_detail: Option<Arc<Detail>> = None;
    let mut skills_space: Option<i64> = None;
    let mut last_skills: Option<Arc<SkillBrowser>> = None;
    let mut results_open = false;
    let mut results: Cached<ResultsData> = Cached::default();
    let mut rubric: Cached<RubricData> = Cached::default();
    // A view opened: send its cached value (or compute it) on this pass.
    let mut resend_results = false;
    let mut resend_rubric = false;
    loop {
        let request = match rx.recv_timeout(poll) {
            Ok(r) => Some(r),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        };
        let mut force = false;
        match request {
            Some(Request::Reload) => force = true,
            Some(Request::Retry(ids)) => {
                if let Some(rid) = run_id {
                    let n = ids.len();
                    let r: Result<(), StoreError> = ids.into_iter().try_for_each(|id| {
                        queries::insert_command(&conn, rid, CommandKind::Retry, id).map(|_| ())
                    });
                    let _ = tx.send(Update::Notice(match r {
                        Ok(()) => {
                            format!("{n} retry command(s) queued; {}", command_note(&conn, rid))
                        }
                        Err(e) => format!("could not queue retries: {e}"),
                    }));
                    force = true;
                }
            }
            Some(Request::Cancel(id)) => {
                if let Some(rid) = run_id {
                    let r = queries::insert_command(&conn, rid, CommandKind::Cancel, id);
                    let _ = tx.send(Update::Notice(match r {
                        Ok(_) => format!("cancel queued; {}", command_note(&conn, rid)),
                        Err(e) => format!("could not queue the cancel: {e}"),
                    }));
                    force = true;
                }
            }
            Some(Request::Detail(key)) => {
                detail_key = key;
                last_detail = None;
                force = true;
            }
            Some(Request::Skills(space)) => {
                resend_rubric = space.is_some() && skills_space.is_none();
                skills_space = space;
                last_skills = None;
                force = true;
            }
            Some(Request::Results(open)) => {
                resend_results = open && !results_open;
                results_open = open;
                force = true;
            }
            None => {}
        }
        // Drain further requests quickly so a burst costs one reload.
        // An experiment moves from its round-1 run to its round-2 run: follow it.
        if run_id.is_none()
            || (matches!(run, RunSelector::Experiment(_)) && data_version(&conn) != version)
        {
            let now = resolve_run(&conn, &run);
            if now != run_id {
                run_id = now;
                force = true;
            }
            if run_id.is_none() {
                let what = match &run {
                    RunSelector::Name(n) => {
                        format!("waiting for run {n:?} to appear in the database…")
                    }
                    RunSelector::Newest => {
                        "waiting for a run to appear in the database…".to_string()
                    }
                    RunSelector::Experiment(n) => {
                        format!("waiting for experiment {n:?} to start its first run…")
                    }
                };
                if tx.send(Update::Waiting(what)).is_err() {
                    return;
                }
                continue;
            }
        }
        let Some(rid) = run_id else { continue };
        let v = data_version(&conn);
        // An engine that dies writes nothing: notice its process going away here.
        let alive = owner.as_ref().map(|(pid, _)| queries::process_alive(*pid));
        let changed = force || v != version || alive != owner.as_ref().map(|(_, a)| *a);
        if changed {
            version = v;
            match load_snapshot_with(&conn, rid, &mut events) {
                Ok(s) => {
                    owner = s.run.owner_pid.zip(s.owner_alive);
                    if tx.send(Update::Snapshot(Arc::new(s))).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    let _ = tx.send(Update::Notice(format!("reading the database: {e}")));
                }
            }
        }
        if let Some(key) = &detail_key {
            let active = last_detail
                .as_ref()
                .and_then(|d| d.latest())
                .is_none_or(|a| a.status.is_active());
            if (changed || active)
                && let Ok(d) = load_detail(&conn, rid, key)
            {
                let d = Arc::new(d);
                if last_detail.as_ref() != Some(&d) {
                    last_detail = Some(d.clone());
                    if tx.send(Update::Detail(d)).is_err() {
                        return;
                    }
                }
            }
        }
        let want_results = results_open && (changed || resend_results || results.pending);
        let want_rubric = skills_space.is_some() && (changed || resend_rubric || rubric.pending);
        if (want_results || want_rubric)
            && !send_evaluation(
                &conn,
                rid,
                &tx,
                (want_results, resend_results, &mut results),
                (want_rubric, resend_rubric, &mut rubric),
            )
        {
            return;
        }
        resend_results = false;
        resend_rubric = false;
        if let Some(space) = skills_space
            && (changed || last_skills.is_none())
        {
            match load_skills(&conn, space) {
                Ok(b) => {
                    let b = Arc::new(b);
                    if last_skills.as_ref() != Some(&b) {
                        last_skills = Some(b.clone());
                        if tx.send(Update::Skills(b)).is_err() {
                            return;
                        }
                    }
                }
                Err(e) => {
                    skills_space = None;
                    let _ = tx.send(Update::Notice(format!("reading the learning space: {e}")));
                }
            }
        }
    }
}

/// One cached evaluation value the worker keeps: wanted on this pass, to be re-sent even if
/// unchanged (its view just opened), and the cache.
type Want<'a, T> = (bool, bool, &'a mut Cached<T>);

/// Sends the Results and rubric data when their finished trials changed (or a view just opened),
/// computing them only when the [`super::evaluation::ChangeMarker`] moved. Returns false when the
/// UI has gone.
fn send_evaluation(
    conn: &Connection,
    run_id: i64,
    tx: &tmpsc::UnboundedSender<Update>,
    (want_results, resend_results, results): Want<ResultsData>,
    (want_rubric, resend_rubric, rubric): Want<RubricData>,
) -> bool {
    let marker = match watched(conn, run_id).and_then(|w| change_marker(conn, &w.runs)) {
        Ok(m) => m,
        Err(e) => {
            let _ = tx.send(Update::Notice(format!("reading the results: {e}")));
            return true;
        }
    };
    if want_results {
        match results.refresh(marker.clone(), || {
            super::evaluation::load_results(conn, run_id)
        }) {
            Ok(Fresh::New(v)) => {
                if tx.send(Update::Results(v)).is_err() {
                    return false;
                }
            }
            Ok(Fresh::Same) => {
                if resend_results
                    && let Some(v) = &results.value
                    && tx.send(Update::Results(v.clone())).is_err()
                {
                    return false;
                }
            }
            Err(e) => {
                let _ = tx.send(Update::Notice(format!("analysing the results: {e}")));
            }
        }
    }
    if want_rubric {
        match rubric.refresh(marker, || super::evaluation::load_rubric(conn, run_id)) {
            Ok(Fresh::New(v)) => {
                if tx.send(Update::Rubric(v)).is_err() {
                    return false;
                }
            }
            Ok(Fresh::Same) => {
                if resend_rubric
                    && let Some(v) = &rubric.value
                    && tx.send(Update::Rubric(v.clone())).is_err()
                {
                    return false;
                }
            }
            Err(e) => {
                let _ = tx.send(Update::Notice(format!(
                    "scoring skills with the rubric: {e}"
                )));
            }
        }
    }
    true
}
