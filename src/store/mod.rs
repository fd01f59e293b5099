//! The SQLite result store — the source of truth and the seam between engine and UI.
//!
//! WAL mode, `synchronous = NORMAL` (durable across process crashes), foreign keys on, a 10 s busy
//! timeout so a watching process and the engine can share the file. The engine writes through the
//! single [`Writer`]; readers (status, dashboard, other processes) open their own connections.

pub mod analysis;
pub mod attempt;
pub mod bulk_read;
pub mod experiment_ledger;
pub mod exposure;
pub mod import_ledger;
pub mod invocations;
pub mod learning;
pub mod ledger;
pub mod model;
pub mod owner;
pub mod queries;
pub mod readonly;
pub mod schema;
pub mod slot_facts;
pub mod trial_facts;
pub mod writer;

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

pub use attempt::{AttemptRecord, AttemptVerdict, LiveActivity, Tokens};
pub use experiment_ledger::ExperimentLedger;
pub use import_ledger::{ImportLedger, ImportTx};
pub use ledger::RunLedger;
pub use model::*;
pub use readonly::{Access, Reading};
pub use writer::Writer;

/// Store errors. Cloneable so one failed commit can be reported to every waiting caller.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// Opening the database file failed.
    #[error("cannot open database {path}: {message}")]
    Open {
        /// The file.
        path: PathBuf,
        /// SQLite's message.
        message: String,
    },
    /// The file is another program's SQLite database: refused before anything is written to it.
    #[error(
        "{path} is not a skillscope database (it holds {tables}): nothing was changed; pass --db with a skillscope database or a new file"
    )]
    Foreign {
        /// The file.
        path: PathBuf,
        /// Its tables, listed (`runs, users` or `12 tables: runs, …`).
        tables: String,
    },
    /// A schema migration failed.
    #[error("cannot migrate database {path}: {message}")]
    Migration {
        /// The file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// An SQL statement failed.
    #[error("database error: {0}")]
    Sql(String),
    /// A batch could not be committed (for example: the disk is full). Nothing of the batch was
    /// written; everything committed before is intact.
    #[error("database commit failed: {0}")]
    Commit(String),
    /// A stored value could not be decoded.
    #[error("bad stored value: {0}")]
    Decode(String),
    /// Something named does not exist.
    #[error("{0}")]
    NotFound(String),
    /// A request conflicts with the stored state (e.g. a run owned by a live process).
    #[error("{0}")]
    Conflict(String),
    /// The writer thread has stopped.
    #[error("the store writer has stopped")]
    WriterGone,
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Sql(e.to_string())
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> Self {
        StoreError::Decode(e.to_string())
    }
}

/// An open store: the database path and its writer.
#[derive(Clone)]
pub struct Store {
    path: PathBuf,
    writer: Writer,
}

impl Store {
    /// Opens (creating if needed) the database at `path`, migrates it to the latest schema and
    /// starts the writer thread.
    ///
    /// # Errors
    /// [`StoreError::Open`] or [`StoreError::Migration`], naming the file.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| StoreError::Open {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
        }
        let conn = open_migrated(path)?;
        Ok(Store {
            path: path.to_path_buf(),
            writer: Writer::start(conn),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The single writer.
    pub fn writer(&self) -> &Writer {
        &self.writer
    }

    /// Appends `message` to the event log of the run named `run` (nothing when there is no such
    /// run yet), through the writer.
    ///
    /// # Errors
    /// Database errors.
    pub async fn add_run_event(
        &self,
        run: &str,
        level: &'static str,
        message: String,
    ) -> Result<(), StoreError> {
        let run = run.to_string();
        self.writer
            .write(move |c| match queries::find_run(c, &run)? {
                Some(r) => queries::add_event(c, r.id, level, &message),
                None => Ok(()),
            })
            .await
    }

    /// A new connection for reading (and for writing operator commands from another thread).
    ///
    /// # Errors
    /// [`StoreError::Open`].
    pub fn connect(&self) -> Result<Connection, StoreError> {
        open_conn(&self.path, OpenFlags::default())
    }

    /// Opens an existing database for reading and for writing commands, without a writer thread —
    /// what `status` and `watch` use. The schema is migrated if it is older than this binary's.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] when there is no database at `path`; open or migration errors.
    pub fn open_existing(path: &Path) -> Result<Connection, StoreError> {
        if !path.exists() {
            return Err(StoreError::NotFound(format!(
                "no database at {} (start a run first, or pass --db)",
                path.display()
            )));
        }
        open_migrated(path)
    }

    /// Opens an existing database for reading — read-only when this process cannot write it (a
    /// read-only mount, another user's file), as [`readonly`] describes; [`Reading::access`] says
    /// how. What `status`, `report` and `watch` use.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] when there is no database at `path`; open errors naming the
    /// cause; migration errors.
    pub fn open_for_reading(path: &Path) -> Result<Reading, StoreError> {
        readonly::open_for_reading(path)
    }
}

/// SQLite's `PRAGMA data_version` of `conn`: a number that changes when another connection
/// commits to the database — what a watching process polls to learn that something changed.
///
/// # Errors
/// Database errors.
pub fn data_version(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.query_row("PRAGMA data_version", [], |r| r.get(0))?)
}

/// The tables a skillscope database always has (the first migration's).
const OUR_TABLES: [&str; 3] = ["runs", "run_tasks", "trials"];

/// Refuses `path` when it is another program's SQLite database — tables, but not skillscope's
/// — reading it read-only, so nothing about it changes (no migration, no switch to WAL). A
/// missing or empty file, and a database of any skillscope version, pass.
///
/// # Errors
/// [`StoreError::Foreign`] naming the file and its tables.
pub(crate) fn refuse_foreign(path: &Path) -> Result<(), StoreError> {
    refuse_non_file(path)?;
    if std::fs::metadata(path).map_or(true, |m| m.len() == 0) {
        return Ok(());
    }
    // Not a database at all, or unreadable: the ordinary open says so.
    let Ok(conn) = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) else {
        return Ok(());
    };
    let Ok(mut stmt) = conn.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    ) else {
        return Ok(());
    };
    let Ok(tables) = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .and_then(|rows| rows.collect::<Result<Vec<String>, _>>())
    else {
        return Ok(());
    };
    let ours = OUR_TABLES.iter().all(|t| tables.iter().any(|x| x == t))
        && conn
            .query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
            .is_ok_and(|v| v > 0);
    if tables.is_empty() || ours {
        return Ok(());
    }
    let shown: Vec<String> = tables
        .iter()
        .take(8)
        .map(|t| crate::sanitize::one_line(t))
        .collect();
    Err(StoreError::Foreign {
        path: path.to_path_buf(),
        tables: if tables.len() > shown.len() {
            format!("{} tables: {}, …", tables.len(), shown.join(", "))
        } else {
            format!(
                "{}: {}",
                crate::format::count(tables.len(), "table", "tables"),
                shown.join(", ")
            )
        },
    })
}

/// Refuses an existing `path` that is not a regular file (after links): a folder, `/dev/null`,
/// a pipe — SQLite would otherwise answer "database is locked" or "disk I/O error".
///
/// # Errors
/// [`StoreError::Open`] naming the file and what it is.
fn refuse_non_file(path: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let t = meta.file_type();
    let what = if t.is_file() {
        return Ok(());
    } else if t.is_dir() {
        "a folder"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a named pipe"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(StoreError::Open {
        path: path.to_path_buf(),
        message: format!("it is {what}, not a database file; pass --db with a database file"),
    })
}

/// Opens `path` and migrates it to this binary's schema (another program's database is refused
/// first, untouched).
fn open_migrated(path: &Path) -> Result<Connection, StoreError> {
    refuse_foreign(path)?;
    let mut conn = open_conn(path, OpenFlags::default())?;
    // Two processes opening a new database at once (a run and a `watch`, a test and the run it
    // started) may both start migrating it; the one that loses finds the tables made. Try again:
    // then it sees the schema up to date.
    let mut tries = 0;
    loop {
        match schema::migrations().to_latest(&mut conn) {
            Ok(()) => return Ok(conn),
            Err(_) if tries < 5 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(100 * tries));
            }
            Err(e) => {
                // One line: the migration library's message may hold the whole statement.
                let message = e.to_string();
                let first = message.lines().next().unwrap_or_default();
                return Err(StoreError::Migration {
                    path: path.to_path_buf(),
                    message: crate::sanitize::head(first, 300).to_string(),
                });
            }
        }
    }
}

/// Makes `conn` (a command's own, short-lived one: `retry`, `cancel`) wait out a database
/// another process holds locked for up to [`writer::BUSY_BUDGET`], as the engine's writer does,
/// saying once on standard error that it waits — instead of failing after SQLite's 10 s.
///
/// # Errors
/// SQLite's, when the handler cannot be set.
pub fn wait_when_locked(conn: &Connection) -> Result<(), StoreError> {
    /// Milliseconds between tries.
    const STEP_MS: u64 = 100;
    fn handler(tries: i32) -> bool {
        if tries == 0 {
            eprintln!(
                "the database is locked by another process; waiting (up to {} min)",
                writer::BUSY_BUDGET.as_secs() / 60
            );
        }
        let waited_ms = u64::try_from(tries).unwrap_or(0) * STEP_MS;
        if waited_ms >= writer::BUSY_BUDGET.as_millis() as u64 {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(STEP_MS));
        true
    }
    conn.busy_handler(Some(handler))?;
    Ok(())
}

fn open_conn(path: &Path, flags: OpenFlags) -> Result<Connection, StoreError> {
    // SQLite says "unable to open database file" for every cause: name the one that holds.
    let err = |e: rusqlite::Error| StoreError::Open {
        path: path.to_path_buf(),
        message: match readonly::diagnose_open(path) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        },
    };
    let conn = Connection::open_with_flags(path, flags).map_err(err)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(err)?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;",
    )
    .map_err(err)?;
    Ok(conn)
}
