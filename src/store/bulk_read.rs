//! Connections tuned for a job that reads most of the database once — a report at 10⁶ trials
//! reads every trial of its runs and sorts every scored invocation: a larger page cache, and
//! the file memory-mapped so its pages are read in place instead of copied into the cache.
//!
//! Figures (`skillscope report` on the 10⁶-trial store of `skillscope bench analysis`, its
//! invocations deleted, 2 cores): memory-mapping the file took the first report from
//! 2.73–2.81 s to 2.08–2.22 s of wall time and its system time from 1.0 s to 0.4 s — the
//! copying and the page faults of filling a 128 MiB cache (issue 37, docs/performance.md).
//!
//! Memory-mapped I/O is for reading only here: SQLite still writes with `write()` (it is built
//! without `SQLITE_MMAP_READWRITE`), so a full disk fails a write with an error as before. A
//! read error of the disk under a mapping would end the process (SIGBUS) instead of failing a
//! query; this is why only bounded jobs — a report — use it, never the engine or the dashboard.

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use super::StoreError;

/// The page cache of a tuned connection, as `PRAGMA cache_size` takes it: negative, in KiB
/// (128 MiB; SQLite's sorter also stays in memory up to this, so the rubric's sorts of a few
/// hundred thousand invocations do not spill to temporary files).
const CACHE_KIB: i64 = -131_072;

/// The most of the database file a tuned connection maps, in bytes (`PRAGMA mmap_size`; 4 GiB,
/// SQLite caps it at its compile-time `SQLITE_MAX_MMAP_SIZE`, 2 GiB by default). A 10⁶-trial
/// store is about 450 MB; beyond the mapping SQLite reads as usual.
const MMAP_BYTES: i64 = 1 << 32;

/// `conn` tuned for a bulk read ([`tune`]); restores the connection's settings when dropped.
#[derive(Debug)]
pub struct Tuned<'c> {
    conn: &'c Connection,
    cache_size: i64,
    mmap_size: i64,
}

/// Tunes `conn` for a bulk read — a 128 MiB page cache and the file memory-mapped — until the
/// returned guard is dropped. Both settings are the connection's own; other connections to the
/// file are not affected. An in-memory database keeps no mapping (SQLite ignores it).
///
/// # Errors
/// [`StoreError`] when a pragma fails.
pub fn tune(conn: &Connection) -> Result<Tuned<'_>, StoreError> {
    let cache_size: i64 = conn.query_row("PRAGMA cache_size", [], |r| r.get(0))?;
    // An in-memory database answers no row: nothing is mapped.
    let mmap_size: i64 = conn
        .query_row("PRAGMA mmap_size", [], |r| r.get(0))
        .optional()?
        .unwrap_or(0);
    // The guard first: should the second setting fail, dropping it restores the first.
    let tuned = Tuned {
        conn,
        cache_size,
        mmap_size,
    };
    set(conn, CACHE_KIB, MMAP_BYTES)?;
    Ok(tuned)
}

impl Drop for Tuned<'_> {
    fn drop(&mut self) {
        // The settings only affect speed: a failure to restore them changes no result.
        let _ = set(self.conn, self.cache_size, self.mmap_size);
    }
}

fn set(conn: &Connection, cache_kib: i64, mmap_bytes: i64) -> Result<(), StoreError> {
    conn.pragma_update(None, "cache_size", cache_kib)?;
    // `PRAGMA mmap_size = N` answers with the size it took (no row for an in-memory database).
    conn.prepare(&format!("PRAGMA mmap_size = {mmap_bytes}"))?
        .query([])?
        .next()?;
    Ok(())
}

/// A second connection to `conn`'s database file, read-only and tuned as [`tune`] does (for
/// its whole life: it is the job's own), for reading beside `conn` on another thread. `None`
/// for an in-memory database or when the file cannot be opened; the caller then works on
/// `conn` alone.
pub fn second_reader(conn: &Connection) -> Option<Connection> {
    let path = conn.path().filter(|p| !p.is_empty())?;
    let c = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .ok()?;
    c.busy_timeout(std::time::Duration::from_secs(10)).ok()?;
    set(&c, CACHE_KIB, MMAP_BYTES).ok()?;
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(conn: &Connection, name: &str) -> i64 {
        conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn tuning_lasts_as_long_as_the_guard() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
        let (cache, mmap) = (setting(&conn, "cache_size"), setting(&conn, "mmap_size"));
        {
            let _tuned = tune(&conn).unwrap();
            assert_eq!(setting(&conn, "cache_size"), CACHE_KIB);
            assert!(setting(&conn, "mmap_size") > 0, "the file is mapped");
            let second = second_reader(&conn).expect("a file database has a second reader");
            assert!(setting(&second, "mmap_size") > 0);
            let x: i64 = second
                .query_row("SELECT x FROM t", [], |r| r.get(0))
                .unwrap();
            assert_eq!(x, 1);
            assert!(
                second.execute("INSERT INTO t VALUES (2)", []).is_err(),
                "the second reader is read-only"
            );
        }
        assert_eq!(setting(&conn, "cache_size"), cache);
        assert_eq!(setting(&conn, "mmap_size"), mmap);
    }

    #[test]
    fn an_in_memory_database_has_no_second_reader() {
        let conn = Connection::open_in_memory().unwrap();
        let _tuned = tune(&conn).unwrap();
        assert!(second_reader(&conn).is_none());
    }
}
