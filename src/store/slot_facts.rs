//! Each (run, task, condition)'s trial facts packed into one row of `slot_facts`: the columns
//! the analysis's single pass reads ([`super::trial_facts::PASS_COLUMNS`]) for every attempt of
//! the group, so the analysis of a run of 10⁶ trials reads a few thousand packed rows instead of
//! decoding every trial row (issue 37; figures in docs/performance.md).
//!
//! How they stay true to the table:
//! - Triggers on `trials` (created by the migration in `schema.rs`) mark a group in
//!   `slot_facts_dirty` in the same transaction as any insert, delete or update of a column the
//!   pass reads — whoever writes: this binary, an older one, an import, the `sqlite3` shell.
//! - [`refresh`] repacks marked groups from the table and clears their marks in the caller's
//!   write transaction; the store's writer does it while idle ([`super::Writer`]).
//! - A reader ([`for_each_trial`]) uses, within one read transaction, the packed facts of
//!   unmarked groups and the table's rows of marked ones, and first checks that the counts add
//!   up to the run's rows in the table; when they do not, when many groups are marked, or when
//!   the tables are missing (a database this binary could not migrate), it says so and the
//!   caller reads the table.
//!
//! Format: a version byte ([`FORMAT`]) then [`postcard`] of a list of distinct texts and the
//! rows, each text field an index into that list. A group whose rows do not decode is stored
//! with no facts, and is read from the table (which reports the error).

use std::collections::HashSet;

use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

use super::trial_facts::{TrialFacts, decode_row, pass_select};
use super::{Outcome, StoreError, TrialStatus};

/// The packed format's version, the blob's first byte. A row of another version is read from
/// the table until it is repacked.
pub(crate) const FORMAT: u8 = 1;

/// Above this many marked groups in a run, and a quarter of its groups, the reader reads the
/// whole run from the table in one sequential pass instead of group by group.
const MARKED_LIMIT: usize = 256;

/// One attempt, packed: text fields are indices into [`Packed::texts`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Row {
    id: i64,
    trial_index: i64,
    attempt: i64,
    /// Bit 0: superseded; bit 1: aggregated.
    flags: u8,
    status: u32,
    /// Index into [`Outcome::ALL`]; `None` for none or an unknown text.
    outcome: Option<u8>,
    reward: Option<f64>,
    failure_category: Option<u32>,
    trial_dir: Option<u32>,
    agent_exit_code: Option<i64>,
    agent_settings: Option<u32>,
    missing_env: Option<u32>,
    clamped: Option<u32>,
    task_digest: Option<u32>,
}

/// A group's packed facts as read: texts borrowed from the blob.
#[derive(Debug, Deserialize)]
struct Packed<'a> {
    #[serde(borrow)]
    texts: Vec<&'a str>,
    rows: Vec<Row>,
}

/// A group's facts while packing (serializes as [`Packed`]).
#[derive(Debug, Default, Serialize)]
struct Packing {
    texts: Vec<String>,
    rows: Vec<Row>,
    #[serde(skip)]
    index: std::collections::HashMap<String, u32>,
}

impl Packing {
    fn text(&mut self, t: &str) -> u32 {
        if let Some(&i) = self.index.get(t) {
            return i;
        }
        let i = self.texts.len() as u32;
        self.texts.push(t.to_string());
        self.index.insert(t.to_string(), i);
        i
    }

    fn add(&mut self, f: &TrialFacts<'_>) {
        let mut opt = |t: Option<&str>| t.map(|t| self.text(t));
        let failure_category = opt(f.failure_category);
        let trial_dir = opt(f.trial_dir);
        let agent_settings = opt(f.agent_settings);
        let missing_env = opt(f.missing_env);
        let clamped = opt(f.clamped);
        let task_digest = opt(f.task_digest);
        let status = self.text(f.status);
        self.rows.push(Row {
            id: f.id,
            trial_index: f.trial_index,
            attempt: f.attempt,
            flags: u8::from(f.superseded) | (u8::from(f.aggregated) << 1),
            status,
            outcome: f
                .outcome
                .and_then(|o| Outcome::ALL.iter().position(|x| *x == o))
                .map(|i| i as u8),
            reward: f.reward,
            failure_category,
            trial_dir,
            agent_exit_code: f.agent_exit_code,
            agent_settings,
            missing_env,
            clamped,
            task_digest,
        });
    }

    fn encode(&self) -> Result<Vec<u8>, StoreError> {
        let mut out = vec![FORMAT];
        out.extend(
            postcard::to_allocvec(self)
                .map_err(|e| StoreError::Decode(format!("packing slot facts: {e}")))?,
        );
        Ok(out)
    }
}

/// The packed facts of one group: its rows as [`TrialFacts`], in row-id order.
///
/// # Errors
/// [`StoreError::Decode`] naming the group when the blob is not of [`FORMAT`] or does not
/// decode.
fn unpack<'a>(
    blob: &'a [u8],
    task: &'a str,
    condition: &'a str,
    each: &mut impl FnMut(TrialFacts<'_>) -> Result<(), StoreError>,
) -> Result<usize, StoreError> {
    let bad = |why: String| {
        StoreError::Decode(format!(
            "table slot_facts, task {task:?}, condition {condition:?}: {why}"
        ))
    };
    let Some((&FORMAT, body)) = blob.split_first() else {
        return Err(bad(format!("not packed in format {FORMAT}")));
    };
    let packed: Packed<'a> = postcard::from_bytes(body).map_err(|e| bad(e.to_string()))?;
    let text = |i: u32| {
        packed
            .texts
            .get(i as usize)
            .copied()
            .ok_or_else(|| bad(format!("text {i} out of range")))
    };
    let opt = |i: Option<u32>| i.map(text).transpose();
    let done = TrialStatus::Done.as_str();
    for r in &packed.rows {
        let status = text(r.status)?;
        each(TrialFacts {
            id: r.id,
            task,
            condition,
            trial_index: r.trial_index,
            attempt: r.attempt,
            superseded: r.flags & 1 != 0,
            status,
            done: status == done,
            outcome: r
                .outcome
                .and_then(|i| Outcome::ALL.get(usize::from(i)).copied()),
            reward: r.reward,
            aggregated: r.flags & 2 != 0,
            failure_category: opt(r.failure_category)?,
            trial_dir: opt(r.trial_dir)?,
            agent_exit_code: r.agent_exit_code,
            agent_settings: opt(r.agent_settings)?,
            missing_env: opt(r.missing_env)?,
            clamped: opt(r.clamped)?,
            task_digest: opt(r.task_digest)?,
        })?;
    }
    Ok(packed.rows.len())
}

/// Whether `e` says a table is missing (a database older than the packed facts, read-only).
fn no_such_table(e: &rusqlite::Error) -> bool {
    e.to_string().contains("no such table")
}

/// Calls `each` with every trial row of run `run_id` from the packed facts, as
/// [`super::analysis::for_each_trial`] describes; `Ok(false)`, having called nothing, when the
/// caller should read the table instead. Call it inside a read transaction: the marks, the
/// packed facts, the marked groups' rows and the counts must come from one snapshot.
///
/// # Errors
/// [`StoreError`] from SQLite or `each`; [`StoreError::Decode`] when a packed row of the
/// current format does not decode.
pub(crate) fn for_each_trial(
    conn: &Connection,
    run_id: i64,
    each: &mut impl FnMut(TrialFacts<'_>) -> Result<(), StoreError>,
) -> Result<bool, StoreError> {
    let marked: HashSet<(String, String)> = match conn
        .prepare_cached("SELECT task_id, condition FROM slot_facts_dirty WHERE run_id = ?1")
    {
        Ok(mut stmt) => stmt
            .query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?,
        Err(e) if no_such_table(&e) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    // Packed groups: (task, condition, rows); those not usable are read from the table.
    let mut packed: Vec<(String, String, i64)> = Vec::new();
    let mut from_table: HashSet<(String, String)> = HashSet::new();
    {
        let mut stmt = conn.prepare_cached(
            "SELECT task_id, condition, trials, format FROM slot_facts WHERE run_id = ?1",
        )?;
        let mut rows = stmt.query([run_id])?;
        while let Some(r) = rows.next()? {
            let key: (String, String) = (r.get(0)?, r.get(1)?);
            if marked.contains(&key) {
                continue;
            }
            if r.get::<_, i64>(3)? == i64::from(FORMAT) {
                packed.push((key.0, key.1, r.get(2)?));
            } else {
                from_table.insert(key);
            }
        }
    }
    from_table.extend(marked);
    if packed.is_empty()
        || (from_table.len() > MARKED_LIMIT
            && from_table.len() * 4 > packed.len() + from_table.len())
    {
        return Ok(false);
    }
    // Every row of the run must be in exactly one place: the packed counts plus the marked
    // groups' rows make the run's rows in the table, or nothing is trusted.
    let total: i64 = conn
        .prepare_cached("SELECT count(*) FROM trials WHERE run_id = ?1")?
        .query_row([run_id], |r| r.get(0))?;
    let mut group_count = conn.prepare_cached(
        "SELECT count(*) FROM trials WHERE run_id = ?1 AND task_id = ?2 AND condition = ?3",
    )?;
    let mut covered: i64 = packed.iter().map(|p| p.2).sum();
    for (task, condition) in &from_table {
        covered +=
            group_count.query_row(params![run_id, task, condition], |r| r.get::<_, i64>(0))?;
    }
    if covered != total {
        return Ok(false);
    }
    let mut blobs = conn.prepare_cached(
        "SELECT task_id, condition, facts FROM slot_facts WHERE run_id = ?1 AND format = ?2",
    )?;
    let mut rows = blobs.query(params![run_id, FORMAT])?;
    while let Some(r) = rows.next()? {
        let decode = |e: rusqlite::types::FromSqlError| {
            StoreError::Decode(format!("table slot_facts of run {run_id}: {e}"))
        };
        let task = r.get_ref(0)?.as_str().map_err(decode)?;
        let condition = r.get_ref(1)?.as_str().map_err(decode)?;
        if from_table.contains(&(task.to_string(), condition.to_string())) {
            continue;
        }
        let blob = r.get_ref(2)?.as_blob().map_err(decode)?;
        unpack(blob, task, condition, each)?;
    }
    let mut group = conn.prepare_cached(&format!(
        "SELECT {} FROM trials WHERE run_id = ?1 AND task_id = ?2 AND condition = ?3 ORDER BY id",
        pass_select()
    ))?;
    for (task, condition) in &from_table {
        let mut rows = group.query(params![run_id, task, condition])?;
        while let Some(r) = rows.next()? {
            if let Some(f) = decode_row(r)? {
                each(f)?;
            }
        }
    }
    Ok(true)
}

/// Repacks up to `max_groups` marked groups from the table and clears their marks, on `conn`'s
/// open write transaction (the caller's `BEGIN IMMEDIATE … COMMIT`, so nothing changes between
/// the read and the write). A group with no rows left loses its packed row; one whose rows do
/// not decode is stored with no facts (read from the table, which reports the error). Returns
/// how many groups it repacked: fewer than `max_groups` means none is left marked.
///
/// # Errors
/// [`StoreError`] from SQLite (a missing table included: call it on a migrated database).
pub fn refresh(conn: &Connection, max_groups: usize) -> Result<usize, StoreError> {
    let marked: Vec<(i64, String, String)> = conn
        .prepare_cached("SELECT run_id, task_id, condition FROM slot_facts_dirty LIMIT ?1")?
        .query_map([max_groups as i64], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<Result<_, _>>()?;
    let mut group = conn.prepare_cached(&format!(
        "SELECT {} FROM trials WHERE run_id = ?1 AND task_id = ?2 AND condition = ?3 ORDER BY id",
        pass_select()
    ))?;
    let mut put = conn.prepare_cached(
        "INSERT INTO slot_facts (run_id, task_id, condition, trials, format, facts)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (run_id, task_id, condition)
         DO UPDATE SET trials = excluded.trials, format = excluded.format, facts = excluded.facts",
    )?;
    let mut drop_group = conn.prepare_cached(
        "DELETE FROM slot_facts WHERE run_id = ?1 AND task_id = ?2 AND condition = ?3",
    )?;
    let mut unmark = conn.prepare_cached(
        "DELETE FROM slot_facts_dirty WHERE run_id = ?1 AND task_id = ?2 AND condition = ?3",
    )?;
    for (run_id, task, condition) in &marked {
        let mut packing = Packing::default();
        let mut count = 0i64;
        let mut undecodable = false;
        let mut rows = group.query(params![run_id, task, condition])?;
        while let Some(r) = rows.next()? {
            count += 1;
            match decode_row(r) {
                Ok(Some(f)) => packing.add(&f),
                Ok(None) => {}
                Err(StoreError::Decode(_)) => undecodable = true,
                Err(e) => return Err(e),
            }
        }
        if count == 0 {
            drop_group.execute(params![run_id, task, condition])?;
        } else if undecodable {
            put.execute(params![run_id, task, condition, count, 0, None::<Vec<u8>>])?;
        } else {
            let blob = packing.encode()?;
            put.execute(params![run_id, task, condition, count, FORMAT, blob])?;
        }
        unmark.execute(params![run_id, task, condition])?;
    }
    Ok(marked.len())
}

/// Whether any group is marked for repacking (`false` on a database without the table): what
/// the writer asks before it opens a transaction to repack.
///
/// # Errors
/// [`StoreError`] from SQLite.
pub fn any_marked(conn: &Connection) -> Result<bool, StoreError> {
    match conn.query_row("SELECT EXISTS (SELECT 1 FROM slot_facts_dirty)", [], |r| {
        r.get(0)
    }) {
        Ok(any) => Ok(any),
        Err(e) if no_such_table(&e) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// How many groups are marked for repacking (0 on a database without the table).
///
/// # Errors
/// [`StoreError`] from SQLite.
pub fn marked(conn: &Connection) -> Result<i64, StoreError> {
    match conn.query_row("SELECT count(*) FROM slot_facts_dirty", [], |r| r.get(0)) {
        Ok(n) => Ok(n),
        Err(e) if no_such_table(&e) => Ok(0),
        Err(e) => Err(e.into()),
    }
}

/// Repacks every marked group, `chunk` groups per transaction, on a connection with no open
/// transaction; returns how many it repacked. What `bench analysis` calls to pack a generated
/// store at once (the writer packs as it goes).
///
/// # Errors
/// [`StoreError`] from SQLite.
pub fn refresh_all(conn: &Connection, chunk: usize) -> Result<usize, StoreError> {
    let mut total = 0;
    loop {
        let tx =
            rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)?;
        let n = refresh(conn, chunk)?;
        tx.commit()?;
        total += n;
        if n < chunk {
            return Ok(total);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::trial_facts::{PASS_COLUMNS, scan_trials};
    use proptest::prelude::*;
    use rusqlite::OptionalExtension;

    /// The packed row of one group, if any: (trials, format).
    ///
    /// # Errors
    /// [`StoreError`] from SQLite.
    fn packed_row(
        conn: &Connection,
        run_id: i64,
        task: &str,
        condition: &str,
    ) -> Result<Option<(i64, i64)>, StoreError> {
        Ok(conn
            .query_row(
                "SELECT trials, format FROM slot_facts
                 WHERE run_id = ?1 AND task_id = ?2 AND condition = ?3",
                params![run_id, task, condition],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?)
    }

    fn db() -> Connection {
        let c = crate::store::schema::migrated_in_memory();
        c.execute_batch(
            "INSERT INTO runs (id, name, created_at, tasks_dir, agent, n_trials, conditions,
                               jobs_dir, status)
             VALUES (1, 'r', 't', '/t', 'oracle', 3, '[]', '/j', 'running'),
                    (2, 's', 't', '/t', 'oracle', 3, '[]', '/j', 'running');",
        )
        .unwrap();
        c
    }

    /// Every row the pass gives for run `run`, read through the packed facts (`None` when the
    /// reader fell back) and through the table, each sorted by row id.
    fn both(c: &Connection, run: i64) -> (Option<Vec<String>>, Vec<String>) {
        let mut packed = Vec::new();
        let used = {
            let tx = c.unchecked_transaction().unwrap();
            let used = for_each_trial(c, run, &mut |f| {
                packed.push((f.id, format!("{f:?}")));
                Ok(())
            })
            .unwrap();
            tx.rollback().unwrap();
            used
        };
        let mut table = Vec::new();
        scan_trials(c, run, &mut |f| {
            table.push((f.id, format!("{f:?}")));
            Ok(())
        })
        .unwrap();
        let sorted = |mut v: Vec<(i64, String)>| {
            v.sort();
            v.into_iter().map(|(_, s)| s).collect::<Vec<_>>()
        };
        (used.then(|| sorted(packed)), sorted(table))
    }

    const STATUS: [&str; 4] = ["done", "queued", "agent", "no-such-status"];
    const OUTCOME: [&str; 5] = ["pass", "fail", "agent_timeout", "cancelled", "bogus"];

    /// Inserts a trial row of run `run` from small numbers (any combination is a valid row).
    fn insert(c: &Connection, run: i64, v: &[u8; 12]) {
        let reward: rusqlite::types::Value = match v[6] % 5 {
            0 => rusqlite::types::Value::Null,
            1 => rusqlite::types::Value::Integer(i64::from(v[6] % 3)),
            _ => rusqlite::types::Value::Real(f64::from(v[6]) / 100.0 - 0.2),
        };
        let opt = |b: u8, s: &str| (!b.is_multiple_of(3)).then(|| format!("{s}{}", b % 2));
        c.execute(
            "INSERT OR IGNORE INTO trials (run_id, task_id, condition, trial_index, attempt,
                 superseded, status, outcome, reward, agent, trial_name, queued_at, aggregated,
                 failure_category, trial_dir, agent_exit_code, agent_settings, missing_env,
                 clamped, task_digest)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'oracle', 'n', 't', ?10, ?11, ?12,
                     ?13, ?14, ?15, ?16, ?17)",
            params![
                run,
                format!("task-{}", v[0] % 3),
                format!("cond-{}", v[1] % 2),
                i64::from(v[2] % 4),
                i64::from(v[3] % 3) + 1,
                i64::from(v[4] % 2),
                STATUS[usize::from(v[5]) % STATUS.len()],
                (v[7] % 6 != 5).then(|| OUTCOME[usize::from(v[7]) % OUTCOME.len()]),
                reward,
                i64::from(v[8] % 2),
                match v[9] % 4 {
                    0 => None,
                    1 => Some("timeout"),
                    2 => Some("not-a-category"),
                    _ => Some("verification"),
                },
                opt(v[10], "/trials/d"),
                v[10].is_multiple_of(2).then_some(i64::from(v[10])),
                opt(v[11], "{\"model\":\"m"),
                opt(v[11] / 3, "[\"KEY"),
                opt(v[11] / 9, "{\"cpus\":"),
                opt(v[9] / 4, "sha256:"),
            ],
        )
        .unwrap();
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(i64, [u8; 12]),
        Update(usize, usize, u8),
        Delete(usize),
        Repack(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (1..=2i64, any::<[u8; 12]>()).prop_map(|(r, v)| Op::Insert(r, v)),
            (any::<usize>(), 1..PASS_COLUMNS.len(), any::<u8>())
                .prop_map(|(i, c, v)| Op::Update(i, c, v)),
            any::<usize>().prop_map(Op::Delete),
            (1..4usize).prop_map(Op::Repack),
        ]
    }

    fn apply(c: &Connection, op: &Op) {
        let ids: Vec<i64> = c
            .prepare("SELECT id FROM trials ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        match op {
            Op::Insert(run, v) => insert(c, *run, v),
            Op::Update(i, col, v) if !ids.is_empty() => {
                let id = ids[i % ids.len()];
                let column = PASS_COLUMNS[*col];
                let value: rusqlite::types::Value = match column {
                    "task_id" => format!("task-{}", v % 3).into(),
                    "condition" => format!("cond-{}", v % 2).into(),
                    "status" => STATUS[usize::from(*v) % STATUS.len()].to_string().into(),
                    "outcome" => OUTCOME[usize::from(*v) % OUTCOME.len()].to_string().into(),
                    "reward" => (f64::from(*v) / 200.0).into(),
                    "trial_index" | "attempt" | "superseded" | "aggregated" | "agent_exit_code" => {
                        i64::from(v % 4).into()
                    }
                    _ if v % 3 == 0 => rusqlite::types::Value::Null,
                    _ => format!("v{}", v % 2).into(),
                };
                let _ = c.execute(
                    &format!("UPDATE OR IGNORE trials SET {column} = ?1 WHERE id = ?2"),
                    params![value, id],
                );
            }
            Op::Delete(i) if !ids.is_empty() => {
                c.execute("DELETE FROM trials WHERE id = ?1", [ids[i % ids.len()]])
                    .unwrap();
            }
            Op::Repack(n) => {
                refresh(c, *n).unwrap();
            }
            _ => {}
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever was written, repacked or not, the packed path gives exactly the table's
        /// rows and facts; after a full repack it is the path taken.
        #[test]
        fn packed_facts_are_the_tables_rows(
            start in proptest::collection::vec(any::<[u8; 12]>(), 0..40),
            ops in proptest::collection::vec(op(), 0..40),
        ) {
            let c = db();
            for v in &start {
                insert(&c, 1, v);
            }
            refresh_all(&c, 2).unwrap();
            for op in &ops {
                apply(&c, op);
                for run in [1, 2] {
                    let (packed, table) = both(&c, run);
                    if let Some(packed) = packed {
                        prop_assert_eq!(packed, table);
                    }
                }
            }
            refresh_all(&c, 3).unwrap();
            prop_assert_eq!(marked(&c).unwrap(), 0);
            for run in [1, 2] {
                let (packed, table) = both(&c, run);
                let has_rows = !table.is_empty();
                match packed {
                    Some(p) => prop_assert_eq!(p, table),
                    None => prop_assert!(!has_rows, "a repacked run must read the packed facts"),
                }
            }
        }
    }

    #[test]
    fn the_update_trigger_watches_every_column_the_pass_reads() {
        let c = db();
        let sql: String = c
            .query_row(
                "SELECT sql FROM sqlite_master WHERE name = 'trials_mark_slot_update'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let list = &sql[sql.find("UPDATE OF").unwrap() + 9..sql.find("ON trials").unwrap()];
        let watched: HashSet<&str> = list.split(',').map(str::trim).collect();
        let mut read: HashSet<&str> = PASS_COLUMNS.into_iter().collect();
        read.insert("run_id");
        assert_eq!(watched, read);
    }

    #[test]
    fn a_group_whose_rows_do_not_decode_is_read_from_the_table_and_fails_as_it() {
        let c = db();
        insert(&c, 1, &[0; 12]);
        insert(&c, 1, &[1; 12]);
        c.execute_batch("UPDATE trials SET agent_settings = X'FF00' WHERE task_id = 'task-0'")
            .unwrap();
        refresh_all(&c, 8).unwrap();
        assert_eq!(packed_row(&c, 1, "task-0", "cond-0").unwrap(), Some((1, 0)));
        assert_eq!(packed_row(&c, 1, "task-1", "cond-1").unwrap(), Some((1, 1)));
        let err = crate::store::analysis::for_each_trial(&c, 1, |_| Ok(())).unwrap_err();
        assert!(matches!(err, StoreError::Decode(_)), "{err}");
    }

    #[test]
    fn counts_that_do_not_add_up_send_the_reader_to_the_table() {
        let c = db();
        for i in 0..4u8 {
            insert(&c, 1, &[i, i, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        }
        refresh_all(&c, 8).unwrap();
        let (packed, table) = both(&c, 1);
        assert_eq!(packed.as_ref(), Some(&table));
        // A packed row lost without a mark (nothing this binary does): the run's rows no longer
        // add up, so nothing packed is used.
        c.execute_batch("DELETE FROM slot_facts WHERE task_id = 'task-0'")
            .unwrap();
        assert_eq!(both(&c, 1).0, None);
    }

    #[test]
    fn a_database_from_before_the_packed_facts_starts_with_every_group_marked() {
        let mut c = Connection::open_in_memory().unwrap();
        let latest = crate::store::schema::migrations();
        let n = {
            let probe = db();
            probe
                .query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
                .unwrap()
        };
        latest.to_version(&mut c, n as usize - 1).unwrap();
        c.execute_batch(
            "INSERT INTO runs (id, name, created_at, tasks_dir, agent, n_trials, conditions,
                               jobs_dir, status)
             VALUES (1, 'r', 't', '/t', 'oracle', 3, '[]', '/j', 'running');",
        )
        .unwrap();
        for i in 0..6u8 {
            insert(&c, 1, &[i, i, 1, i, 0, 0, 0, 0, 0, 0, 0, 0]);
        }
        crate::store::schema::migrations()
            .to_latest(&mut c)
            .unwrap();
        // Three tasks × two conditions, each marked; nothing packed is read until repacked.
        assert_eq!(marked(&c).unwrap(), 6);
        assert_eq!(both(&c, 1).0, None);
        refresh_all(&c, 4).unwrap();
        let (packed, table) = both(&c, 1);
        assert_eq!(table.len(), 6);
        assert_eq!(packed, Some(table));
    }

    #[test]
    fn the_writer_packs_what_its_jobs_changed() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open(&dir.path().join("s.db")).unwrap();
        store
            .writer()
            .write_blocking(|c| {
                c.execute_batch(
                    "INSERT INTO runs (id, name, created_at, tasks_dir, agent, n_trials,
                                       conditions, jobs_dir, status)
                     VALUES (1, 'r', 't', '/t', 'oracle', 3, '[]', '/j', 'running');",
                )?;
                for i in 0..20u8 {
                    insert(c, 1, &[i, i / 3, i % 4, 0, 0, 0, i, i, 0, i, i, i]);
                }
                Ok(())
            })
            .unwrap();
        let reader = store.connect().unwrap();
        // Packed once the writer is idle (50 ms), or at the latest when it stops.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while marked(&reader).unwrap() > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(marked(&reader).unwrap(), 0, "the idle writer repacks");
        let (packed, table) = both(&reader, 1);
        assert_eq!(packed, Some(table));
        // A change marks its group; a stopping writer packs it before it exits.
        store
            .writer()
            .write_blocking(|c| {
                c.execute("UPDATE trials SET reward = 0.25 WHERE id = 1", [])?;
                Ok(())
            })
            .unwrap();
        store.writer().stop();
        assert_eq!(marked(&reader).unwrap(), 0, "the stopping writer repacks");
        let (packed, table) = both(&reader, 1);
        assert!(table.iter().any(|t| t.contains("reward: Some(0.25)")));
        assert_eq!(packed, Some(table));
    }

    #[test]
    fn without_the_tables_the_reader_reads_the_table() {
        let c = db();
        for i in 0..3u8 {
            insert(&c, 1, &[i, i, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        }
        refresh_all(&c, 8).unwrap();
        // A database this binary could not migrate (read-only, older): no packed facts.
        c.execute_batch("DROP TABLE slot_facts; DROP TABLE slot_facts_dirty;")
            .unwrap();
        assert!(!any_marked(&c).unwrap());
        let (packed, table) = both(&c, 1);
        assert_eq!(packed, None);
        let mut given = 0;
        crate::store::analysis::for_each_trial(&c, 1, |_| {
            given += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!((given, table.len()), (3, 3));
    }
}
