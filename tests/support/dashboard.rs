//! One way tests build a dashboard: a store filled with a synthetic run through the store API
//! ([`filled`]) and an [`App`] showing a run of it as the worker would ([`watching`]). The
//! dashboard's behaviour, snapshot and hostile-text tests start here.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use rusqlite::Connection;
use skillscope::perf::synthetic::{SyntheticRun, at, fill_store};
use skillscope::store::RunRow;
use skillscope::tui::app::{App, Mode};
use skillscope::tui::theme::Theme;
use skillscope::tui::worker::{Update, load_snapshot};

use super::common::Scratch;

/// The database name the dashboard shows.
pub const DB_LABEL: &str = "skillscope.db";

/// The fixed clock of dashboard tests: 15 minutes into the synthetic runs' day ([`at`]`(900)`).
pub fn clock() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(&at(900))
        .unwrap()
        .with_timezone(&Utc)
}

/// A [`Scratch`] store holding one synthetic run, its writer thread stopped: tests read and
/// write through `conn`.
pub struct Filled {
    /// The folder and store; removed when dropped.
    pub scratch: Scratch,
    /// A connection to the store.
    pub conn: Connection,
    /// The synthetic run.
    pub run: RunRow,
}

/// Fills a new store with the synthetic run `spec` (see [`fill_store`]).
pub fn filled(spec: &SyntheticRun) -> Filled {
    let scratch = Scratch::new();
    let conn = scratch.store.connect().unwrap();
    let run = fill_store(&conn, spec).unwrap();
    scratch.store.writer().stop();
    Filled { scratch, conn, run }
}

/// An app in `mode` with the theme named `theme`, at `now`, showing the snapshot of run `run_id`
/// loaded from `conn` as the dashboard's worker sends it.
pub fn watching(
    conn: &Connection,
    run_id: i64,
    mode: Mode,
    theme: &str,
    now: DateTime<Utc>,
) -> App {
    let mut app = App::new(mode, Theme::load(theme).unwrap(), DB_LABEL.into(), now);
    app.on_update(Update::Snapshot(Arc::new(
        load_snapshot(conn, run_id).unwrap(),
    )));
    app
}
