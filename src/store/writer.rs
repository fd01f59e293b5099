//! The single writer: one thread owns the write connection and applies queued jobs in batched
//! transactions (one `BEGIN IMMEDIATE … COMMIT` per batch, a savepoint per job so one failing job
//! never undoes the others). Callers learn a job's result only after its batch committed, so an
//! acknowledged write is on disk. When no job has come for [`REPACK_IDLE`], it repacks the trial
//! facts the jobs changed ([`super::slot_facts`]), a chunk per transaction, and on stopping for
//! up to [`REPACK_ON_STOP`].

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::StoreError;

/// Most jobs applied in one transaction.
const MAX_BATCH: usize = 512;

/// Called after the batch's commit with the commit's result.
type Finish = Box<dyn FnOnce(Result<(), StoreError>) + Send>;
/// A write job: runs SQL on the batch's transaction (or receives the error that prevented the
/// batch), says whether it succeeded, and hands back its completion.
type Job = Box<dyn FnOnce(Result<&Connection, StoreError>) -> (bool, Finish) + Send>;

enum Msg {
    Job(Job),
    Stop,
}

/// Handle to the writer thread. Cloning shares the thread; it stops when [`Writer::stop`] is
/// called or every handle is dropped.
#[derive(Clone)]
pub struct Writer {
    tx: mpsc::Sender<Msg>,
    thread: std::sync::Arc<std::sync::Mutex<Option<JoinHandle<()>>>>,
}

impl Writer {
    /// Starts the thread on an open connection (its busy timeout is raised to [`BUSY_TIMEOUT`]).
    pub fn start(conn: Connection) -> Writer {
        let _ = conn.busy_timeout(BUSY_TIMEOUT);
        let (tx, rx) = mpsc::channel::<Msg>();
        let thread = std::thread::Builder::new()
            .name("skillscope-store-writer".into())
            .spawn(move || writer_loop(conn, rx))
            .expect("spawn store writer");
        Writer {
            tx,
            thread: std::sync::Arc::new(std::sync::Mutex::new(Some(thread))),
        }
    }

    /// Queues `f` and waits (asynchronously) until its batch committed.
    ///
    /// # Errors
    /// The job's own error, the commit's error (e.g. a full disk), or [`StoreError::WriterGone`].
    pub async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        self.queue(f, reply)?;
        rx.await.map_err(|_| StoreError::WriterGone)?
    }

    /// Queues `f` without waiting; the receiver yields its result once the batch committed. Lets a
    /// producer keep parsing while its previous batch is written.
    ///
    /// # Errors
    /// [`StoreError::WriterGone`] when the writer has stopped.
    pub fn submit<T, F>(&self, f: F) -> Result<oneshot::Receiver<Result<T, StoreError>>, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        self.queue(f, reply)?;
        Ok(rx)
    }

    /// Like [`Writer::write`] but blocks the calling (non-async) thread.
    ///
    /// # Errors
    /// As [`Writer::write`].
    pub fn write_blocking<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        self.queue(f, reply)?;
        rx.blocking_recv().map_err(|_| StoreError::WriterGone)?
    }

    fn queue<T, F>(
        &self,
        f: F,
        reply: oneshot::Sender<Result<T, StoreError>>,
    ) -> Result<(), StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let job: Job = Box::new(move |conn| {
            let result = conn.and_then(f);
            let ok = result.is_ok();
            let finish: Finish = Box::new(move |commit| {
                let _ = reply.send(commit.and(result));
            });
            (ok, finish)
        });
        self.tx
            .send(Msg::Job(job))
            .map_err(|_| StoreError::WriterGone)
    }

    /// Applies everything queued so far, then stops the thread and waits for it.
    pub fn stop(&self) {
        let _ = self.tx.send(Msg::Stop);
        if let Some(t) = self.thread.lock().ok().and_then(|mut g| g.take()) {
            let _ = t.join();
        }
    }
}

/// Groups of packed trial facts ([`super::slot_facts`]) repacked per idle transaction: a few
/// milliseconds of holding the write lock.
const REPACK_CHUNK: usize = 64;

/// How long the writer waits for a job before it repacks: a stream of jobs (an import, a burst
/// of finishing trials) is not interrupted, and a group is packed once its rows settle.
const REPACK_IDLE: Duration = Duration::from_millis(50);

/// How long a stopping writer keeps repacking marked groups before it exits; what is left stays
/// marked, and readers read those groups from the table.
const REPACK_ON_STOP: Duration = Duration::from_secs(2);

fn writer_loop(mut conn: Connection, rx: mpsc::Receiver<Msg>) {
    let mut stop = false;
    // Groups may be marked from before this process: look once idle.
    let mut marked = true;
    while !stop {
        // Jobs first; once idle, repack what the jobs marked, a chunk at a time.
        let first = if marked {
            match rx.recv_timeout(REPACK_IDLE) {
                Ok(m) => m,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    marked = repack(&conn);
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        } else {
            let Ok(first) = rx.recv() else { break };
            first
        };
        let mut jobs = Vec::new();
        match first {
            Msg::Job(j) => jobs.push(j),
            Msg::Stop => stop = true,
        }
        while jobs.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(Msg::Job(j)) => jobs.push(j),
                Ok(Msg::Stop) => {
                    stop = true;
                    break;
                }
                Err(_) => break,
            }
        }
        if !jobs.is_empty() {
            apply_batch(&mut conn, jobs);
            marked = true;
        }
    }
    let until = Instant::now() + REPACK_ON_STOP;
    while marked && Instant::now() < until {
        marked = repack(&conn);
    }
}

/// One transaction of repacking marked groups ([`super::slot_facts::refresh`]); whether groups
/// may remain marked. A busy database (another process writing) or any error ends repacking
/// until the next batch: the packed facts only speed reading, readers never depend on them.
fn repack(conn: &Connection) -> bool {
    if !matches!(super::slot_facts::any_marked(conn), Ok(true)) {
        return false;
    }
    let _ = conn.busy_timeout(Duration::from_millis(100));
    let repacked = conn
        .execute_batch("BEGIN IMMEDIATE")
        .map_err(StoreError::from)
        .and_then(|()| {
            let n = super::slot_facts::refresh(conn, REPACK_CHUNK);
            match n {
                Ok(n) => conn
                    .execute_batch("COMMIT")
                    .map(|()| n)
                    .map_err(StoreError::from),
                Err(e) => Err(e),
            }
        });
    if repacked.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    let _ = conn.busy_timeout(BUSY_TIMEOUT);
    matches!(repacked, Ok(n) if n == REPACK_CHUNK)
}

/// How long the writer waits for a database another process holds locked (a backup, a `sqlite3`
/// shell) before a batch fails: SQLite's busy timeout per try ([`BUSY_TIMEOUT`]), tried again
/// until this much time has passed.
pub const BUSY_BUDGET: Duration = Duration::from_secs(600);
/// SQLite's busy timeout on the writer's connection.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Runs `sql` (`BEGIN IMMEDIATE` or `COMMIT`), waiting out a busy database for up to
/// [`BUSY_BUDGET`].
fn patiently(conn: &Connection, sql: &str) -> Result<(), rusqlite::Error> {
    let t0 = Instant::now();
    loop {
        match conn.execute_batch(sql) {
            Err(e) if is_busy(&e) && t0.elapsed() < BUSY_BUDGET => {
                tracing::warn!(
                    waited_secs = t0.elapsed().as_secs(),
                    "the database is locked by another process; waiting to write"
                );
                std::thread::sleep(Duration::from_millis(200));
            }
            r => return r,
        }
    }
}

fn apply_batch(conn: &mut Connection, jobs: Vec<Job>) {
    if let Err(e) = patiently(conn, "BEGIN IMMEDIATE") {
        // Without a transaction nothing may run: report the failure to every caller.
        let err = StoreError::Commit(e.to_string());
        for job in jobs {
            let (_, finish) = job(Err(err.clone()));
            finish(Err(err.clone()));
        }
        return;
    }
    let mut finishes = Vec::with_capacity(jobs.len());
    for (i, job) in jobs.into_iter().enumerate() {
        let sp = format!("job{i}");
        let _ = conn.execute_batch(&format!("SAVEPOINT {sp}"));
        let (ok, finish) = job(Ok(conn));
        let _ = if ok {
            conn.execute_batch(&format!("RELEASE {sp}"))
        } else {
            conn.execute_batch(&format!("ROLLBACK TO {sp}; RELEASE {sp}"))
        };
        finishes.push(finish);
    }
    let commit = patiently(conn, "COMMIT").map_err(|e| {
        let _ = conn.execute_batch("ROLLBACK");
        StoreError::Commit(e.to_string())
    });
    for finish in finishes {
        finish(commit.clone());
    }
}
