//! Opening a store this process cannot write — an archive on a read-only mount, a file or folder
//! of another user — for reading (`status`, `report`, `watch`).
//!
//! A writable store is opened as always (and migrated). Otherwise, in order:
//! 1. SQLite's `mode=ro`: works while the WAL index (`<db>-shm`) exists, i.e. while a writer has
//!    the database open elsewhere — its committed changes stay visible;
//! 2. `immutable=1` when no writer can exist — no `<db>-shm` (no process has the database open)
//!    and none can be created here — and there is no `<db>-wal` holding transactions that
//!    `immutable` would not read;
//! 3. else, and whenever the stored schema is older than this binary's (it cannot be upgraded in
//!    place), a private copy of `<db>` and `<db>-wal` in a temporary folder, opened and migrated
//!    there; the original is never written.
//!
//! [`Reading::access`] says which, and why the store is read-only, so commands can say so.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::StoreError;

/// How a store was opened for reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Opened for writing as usual (and migrated).
    Writable,
    /// This process cannot write it.
    ReadOnly {
        /// Why: `the file system holding /x is mounted read-only`, `/x is not writable by this
        /// user`.
        why: String,
        /// How it was opened: `SQLite mode=ro`, `SQLite immutable=1`, `a private copy in /tmp/…`.
        how: String,
    },
}

impl Access {
    /// One line for the operator, `None` for a writable store: `read-only store (the file system
    /// holding /x is mounted read-only; opened with SQLite immutable=1): nothing is written`.
    pub fn note(&self) -> Option<String> {
        match self {
            Access::Writable => None,
            Access::ReadOnly { why, how } => Some(format!(
                "read-only store ({why}; opened with {how}): nothing is written to it"
            )),
        }
    }

    /// True for [`Access::ReadOnly`].
    pub fn is_read_only(&self) -> bool {
        matches!(self, Access::ReadOnly { .. })
    }
}

/// A connection for reading and how it was opened. Derefs to the connection; a private copy's
/// temporary folder lives as long as it does.
pub struct Reading {
    conn: Connection,
    /// How the store was opened.
    pub access: Access,
    /// The private copy's folder (removed on drop).
    _copy: Option<tempfile::TempDir>,
}

impl std::ops::Deref for Reading {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl Reading {
    /// The connection itself (a private copy's folder is then removed only at exit).
    pub fn into_connection(self) -> Connection {
        if let Some(dir) = self._copy {
            // The connection outlives this value: keep the copy until the process ends.
            let _ = dir.keep();
        }
        self.conn
    }
}

/// Why this process cannot write the store at `path`, or `None` when it can: its file system is
/// mounted read-only, the file is not writable, or its folder (where SQLite keeps the WAL) is not.
pub fn why_read_only(path: &Path) -> Option<String> {
    if mounted_read_only(path) {
        return Some(format!(
            "the file system holding {} is mounted read-only",
            path.display()
        ));
    }
    if path.exists() && !writable(path) {
        return Some(format!("{} is not writable by this user", path.display()));
    }
    let dir = folder_of(path);
    if !writable(&dir) {
        return Some(format!(
            "its folder {} is not writable by this user (SQLite keeps the write-ahead log there)",
            dir.display()
        ));
    }
    None
}

/// Opens the existing store at `path` for reading (see the module docs).
///
/// # Errors
/// [`StoreError::NotFound`] without a database; [`StoreError::Open`] naming the cause when it
/// cannot be read at all; migration errors.
pub fn open_for_reading(path: &Path) -> Result<Reading, StoreError> {
    if !path.exists() {
        return Err(StoreError::NotFound(format!(
            "no database at {} (start a run first, or pass --db)",
            path.display()
        )));
    }
    // An empty file is no database yet: reading it must not make it one.
    if std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0) {
        return Err(StoreError::NotFound(format!(
            "{} is an empty file, not a skillscope database (start a run first, or pass --db); it was left as it is",
            path.display()
        )));
    }
    // Another program's database is refused before anything opens it for writing or copies it.
    super::refuse_foreign(path)?;
    let Some(why) = why_read_only(path) else {
        return Ok(Reading {
            conn: super::Store::open_existing(path)?,
            access: Access::Writable,
            _copy: None,
        });
    };
    let shm = sibling(path, "-shm");
    let wal = sibling(path, "-wal");
    let tries: [(&str, bool); 2] = [
        ("mode=ro", true),
        (
            "immutable=1",
            !shm.exists() && std::fs::metadata(&wal).map_or(true, |m| m.len() == 0),
        ),
    ];
    let mut last = None;
    for (param, allowed) in tries {
        if !allowed {
            continue;
        }
        match open_uri(path, param) {
            Ok(conn) if schema_is_current(&conn) => {
                return Ok(Reading {
                    conn,
                    access: Access::ReadOnly {
                        why,
                        how: format!("SQLite {param}"),
                    },
                    _copy: None,
                });
            }
            // An older schema: upgrade a copy made from this consistent view.
            Ok(conn) => return copy_and_open(path, why, Some(&conn)),
            Err(e) => last = Some(e),
        }
    }
    copy_and_open(path, why, None).map_err(|e| match (e, last) {
        (StoreError::Open { message, .. }, Some(first)) => StoreError::Open {
            path: path.to_path_buf(),
            message: format!("{message} (read-only open: {first})"),
        },
        (e, _) => e,
    })
}

/// The store's schema is this binary's (an older one cannot be upgraded in place).
fn schema_is_current(conn: &Connection) -> bool {
    let have: Option<i64> = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).ok();
    have == Some(latest_version())
}

/// The schema version this binary migrates to (`PRAGMA user_version`).
pub fn latest_version() -> i64 {
    static LATEST: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *LATEST.get_or_init(|| {
        let Ok(mut c) = Connection::open_in_memory() else {
            return -1;
        };
        if super::schema::migrations().to_latest(&mut c).is_err() {
            return -1;
        }
        c.query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap_or(-1)
    })
}

fn open_uri(path: &Path, param: &str) -> Result<Connection, String> {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let uri = format!("file:{}?{param}", uri_escape(&abs.to_string_lossy()));
    let conn = Connection::open_with_flags(
        &uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| e.to_string())?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(|e| e.to_string())?;
    // Opening is lazy: read the schema now so a failure shows here.
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    })
    .map_err(|e| e.to_string())?;
    Ok(conn)
}

/// A private, writable copy of the store at `path` (see [`copy_and_open`]), for commands that
/// must write what they read (the report caches the rubric's scores); the original is never
/// written. A writable store is opened as itself.
///
/// # Errors
/// As [`open_for_reading`]; a copy that cannot be made (no space in the temporary folder).
pub fn private_copy(path: &Path) -> Result<Reading, StoreError> {
    let reading = open_for_reading(path)?;
    match &reading.access {
        Access::ReadOnly { why, how } if !how.starts_with("a private copy") => {
            copy_and_open(path, why.clone(), Some(&reading.conn))
        }
        _ => Ok(reading),
    }
}

/// Makes a private copy of the store in a temporary folder and opens (and migrates) it: from
/// `source`, a read-only connection, with `VACUUM INTO` (one consistent snapshot even while a
/// writer works elsewhere); without one, by copying the database file and its WAL (no writer has
/// it open then: there is no WAL index).
fn copy_and_open(
    path: &Path,
    why: String,
    source: Option<&Connection>,
) -> Result<Reading, StoreError> {
    let open_err = |message: String| StoreError::Open {
        path: path.to_path_buf(),
        message,
    };
    let dir = tempfile::Builder::new()
        .prefix("skillscope-readonly-")
        .tempdir()
        .map_err(|e| open_err(format!("making a private copy: {e}")))?;
    let name = path.file_name().unwrap_or_else(|| "store.db".as_ref());
    let copy = dir.path().join(name);
    match source {
        Some(conn) => {
            conn.execute("VACUUM INTO ?1", [copy.to_string_lossy()])
                .map_err(|e| open_err(format!("copying it to {}: {e}", copy.display())))?;
        }
        None => {
            std::fs::copy(path, &copy).map_err(|e| open_err(cause_of(path, &e)))?;
            let wal = sibling(path, "-wal");
            if wal.exists() {
                std::fs::copy(&wal, sibling(&copy, "-wal"))
                    .map_err(|e| open_err(cause_of(&wal, &e)))?;
            }
        }
    }
    let conn = super::Store::open_existing(&copy)?;
    Ok(Reading {
        conn,
        access: Access::ReadOnly {
            why,
            how: format!("a private copy in {}", dir.path().display()),
        },
        _copy: Some(dir),
    })
}

/// The cause of an I/O failure on `path` in words, with what would fix it.
pub fn cause_of(path: &Path, e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::PermissionDenied => format!(
            "{}: permission denied (not readable by this user; check its owner and mode)",
            path.display()
        ),
        ErrorKind::NotFound => format!("{}: no such file", path.display()),
        _ if e.raw_os_error() == Some(libc::EROFS) => {
            format!("{}: the file system is mounted read-only", path.display())
        }
        _ if e.raw_os_error() == Some(libc::ENOSPC) => {
            format!("{}: no space left on the device", path.display())
        }
        _ => format!("{}: {e}", path.display()),
    }
}

/// What SQLite's "unable to open database file" means for `path`: the first of a missing folder,
/// a folder or file this user cannot read or write, a read-only file system, a full disk.
pub fn diagnose_open(path: &Path) -> Option<String> {
    let dir = folder_of(path);
    if !dir.is_dir() {
        return Some(format!("the folder {} does not exist", dir.display()));
    }
    if path.is_dir() {
        return Some(format!(
            "{} is a folder, not a database file",
            path.display()
        ));
    }
    if path.exists() && std::fs::File::open(path).is_err() {
        return Some(format!("{} is not readable by this user", path.display()));
    }
    if let Some(why) = why_read_only(path) {
        return Some(why);
    }
    if crate::fs::file_system(&dir).is_some_and(|f| f.size_bytes == 0) {
        return Some(format!(
            "the folder {} is on a virtual file system (like /proc or /sys), which cannot hold a database",
            dir.display()
        ));
    }
    if disk_full(&dir) {
        return Some(format!(
            "no space left on the device holding {}",
            dir.display()
        ));
    }
    None
}

fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn writable(path: &Path) -> bool {
    crate::fs::writable(path)
}

fn mounted_read_only(path: &Path) -> bool {
    crate::fs::file_system(path).is_some_and(|f| f.read_only)
}

fn disk_full(dir: &Path) -> bool {
    crate::fs::file_system(dir).is_some_and(|f| f.free_bytes == 0 && f.size_bytes > 0)
}

/// Escapes a path for an SQLite `file:` URI (`%`, `?` and `#` would end or change it).
fn uri_escape(path: &str) -> String {
    path.replace('%', "%25")
        .replace('?', "%3f")
        .replace('#', "%23")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writable_store_is_opened_as_usual() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.db");
        drop(super::super::Store::open(&db).unwrap());
        assert_eq!(why_read_only(&db), None);
        let r = open_for_reading(&db).unwrap();
        assert_eq!(r.access, Access::Writable);
        assert_eq!(r.access.note(), None);
        assert!(latest_version() > 0);
    }

    /// `status` on an empty file (a typo'd `--db`, a `touch`ed name) says so and leaves the
    /// file empty: reading never turns it into a database.
    #[test]
    fn an_empty_file_is_not_read_as_a_store() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("empty.db");
        std::fs::write(&db, b"").unwrap();
        let e = open_for_reading(&db).err().expect("refused");
        assert!(matches!(e, StoreError::NotFound(_)), "{e}");
        assert!(e.to_string().contains("is an empty file"), "{e}");
        assert_eq!(std::fs::metadata(&db).unwrap().len(), 0);
        assert!(!dir.path().join("empty.db-wal").exists());
    }

    #[test]
    fn uri_paths_are_escaped() {
        assert_eq!(uri_escape("/a b/x?y#z%"), "/a b/x%3fy%23z%25");
    }

    #[test]
    fn causes_name_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            diagnose_open(&dir.path().join("nope/x.db"))
                .unwrap()
                .contains("does not exist")
        );
        assert!(diagnose_open(dir.path()).unwrap().contains("is a folder"));
        assert_eq!(diagnose_open(&dir.path().join("x.db")), None);
        // `/proc` has no free bytes because it has no bytes at all: not a full disk.
        let proc = diagnose_open(Path::new("/proc/x.db")).unwrap();
        assert!(proc.contains("virtual file system"), "{proc}");
        assert!(!disk_full(Path::new("/proc")));
    }
}
