//! The dashboard's data: snapshots of a run read from the store, trial details with their log
//! files, and the worker thread that owns the database connection so the UI thread never waits on
//! disk. The worker notices changes with `PRAGMA data_version` (it changes when any other
//! connection commits) and re-reads only then; a detail whose attempt is still running is re-read
//! on each poll so its logs tail live. The skill browser's data (one learning space: its skills
//! with their curated and learned versions and files, provenance, and every learn step) is read
//! only while the browser is open, like a trial detail. So are the Results view's analysis and
//! the skill browser's rubric report ([`analysis`]): computed here while their view is
//! open, cached by a cheap marker of the finished trials, and recomputed only when it moves.
//!
//! Text that came from the Acontext server (skill names and files, learning statuses, errors) is
//! sanitized here, when read, like container logs: nothing remote reaches the terminal raw.
//!
//! One file per kind of data: [`snapshot`] (the run's grid, overview and event log), [`detail`]
//! (one trial with its logs), [`skills`] (the skill browser: learning spaces and self-generated
//! skill sets), [`analysis`] (the Results view and the rubric report); this module runs the thread.

pub mod analysis;
pub mod detail;
pub mod skills;
pub mod snapshot;

pub use detail::{Detail, LogFile, load_detail, render_trajectory};
pub use skills::{
    FileChange, SkillBrowser, SkillEntry, SkillFile, SkillOrigin, SkillVersion, load_skills,
};
pub use snapshot::{EventRow, Snapshot, load_snapshot};

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::mpsc as tmpsc;

use crate::domain::TrialKey;
use crate::store::{CommandKind, Store, StoreError, queries};

use crate::analysis::success::SuccessRule;
use analysis::{Cached, Fresh, ResultsData, RubricData, change_marker, watched};
use snapshot::{EventCache, load_snapshot_with};

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
    /// The run a live engine runs now (the most recently started one), else the newest run
    /// ([`crate::store::run_to_watch`]).
    Current,
    /// The current run of an experiment: round 2 once it exists, else round 1.
    Experiment(String),
}

/// The run `sel` names now.
fn resolve_run(conn: &Connection, sel: &RunSelector) -> Option<i64> {
    match sel {
        RunSelector::Name(n) => queries::find_run(conn, n).ok().flatten().map(|r| r.id),
        RunSelector::Current => queries::list_runs(conn).ok().and_then(|runs| {
            crate::store::run_to_watch(&runs, chrono::Utc::now(), &crate::store::owner::host_name())
                .map(|r| r.id)
        }),
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
        DataWorker::start_with(db, run, poll, SuccessRule::default())
    }

    /// [`DataWorker::start`] showing success by `success` (`watch --pass-threshold`): every
    /// snapshot carries it ([`Snapshot::success`]) and the Results view's analysis counts by it.
    ///
    /// # Errors
    /// The database cannot be opened.
    pub fn start_with(
        db: &Path,
        run: RunSelector,
        poll: Duration,
        success: SuccessRule,
    ) -> Result<DataWorker, StoreError> {
        let reading = Store::open_for_reading(db)?;
        let (req_tx, req_rx) = mpsc::channel();
        let (up_tx, up_rx) = tmpsc::unbounded_channel();
        if let Some(note) = reading.access.note() {
            let _ = up_tx.send(Update::Notice(format!(
                "{note}; retries and cancels cannot be queued"
            )));
        }
        let conn = reading.into_connection();
        std::thread::Builder::new()
            .name("skillscope-ui-data".into())
            .spawn(move || worker_loop(conn, run, poll, success, req_rx, up_tx))
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
        Ok(run) => {
            crate::store::Liveness::of(&run, chrono::Utc::now(), &crate::store::owner::host_name())
                .command_note(&run)
        }
        Err(e) => format!("(could not read the run: {e})"),
    }
}

fn data_version(conn: &Connection) -> i64 {
    crate::store::data_version(conn).unwrap_or(-1)
}

fn worker_loop(
    conn: Connection,
    run: RunSelector,
    poll: Duration,
    success: SuccessRule,
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
            Some(Request::Retry(_) | Request::Cancel(_))
                if conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) =>
            {
                let _ = tx.send(Update::Notice(
                    "the store is read-only: retries and cancels cannot be queued (open a writable copy with --db)".into(),
                ));
            }
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
                    RunSelector::Current => {
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
        let alive = owner
            .as_ref()
            .map(|(pid, _)| crate::store::owner::process_alive(*pid));
        let changed = force || v != version || alive != owner.as_ref().map(|(_, a)| *a);
        if changed {
            version = v;
            match load_snapshot_with(&conn, rid, &mut events) {
                Ok(mut s) => {
                    s.success = success;
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
                (rid, &success),
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
/// computing them only when the [`super::worker::analysis::ChangeMarker`] moved. Returns false when the
/// UI has gone.
fn send_evaluation(
    conn: &Connection,
    (run_id, success): (i64, &SuccessRule),
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
            super::worker::analysis::load_results_with(conn, run_id, success)
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
        match rubric.refresh(marker, || {
            super::worker::analysis::load_rubric(conn, run_id)
        }) {
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
