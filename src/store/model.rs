//! The store's own rows (operator commands, Docker hosts) and a run's liveness, with the SQL
//! text of the shared enums. The rows every layer shares live below the store, in
//! [`crate::domain`], and are re-exported here.

use serde::{Deserialize, Serialize};

pub use crate::domain::{
    Outcome, ParseEnumError, RunRow, RunTaskRow, SkillUseRow, TrialBrief, TrialKey, TrialPlan,
    TrialRow, TrialStatus, now_rfc3339,
};

/// `ToSql` and `FromSql` of an enum stored as its text (`as_str`, parsed back with `FromStr`).
macro_rules! sql_text {
    ($t:ty) => {
        impl rusqlite::ToSql for $t {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(self.as_str().into())
            }
        }
        impl rusqlite::types::FromSql for $t {
            fn column_result(
                v: rusqlite::types::ValueRef<'_>,
            ) -> rusqlite::types::FromSqlResult<Self> {
                v.as_str()?
                    .parse()
                    .map_err(|e| rusqlite::types::FromSqlError::Other(Box::new(e)))
            }
        }
    };
}
sql_text!(TrialStatus);
sql_text!(Outcome);

/// Operator commands the engine picks up from the `commands` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CommandKind {
    /// Re-run a finished trial as a new attempt.
    Retry,
    /// Stop a queued or running attempt.
    Cancel,
}

impl CommandKind {
    /// Every kind.
    pub const ALL: [CommandKind; 2] = [CommandKind::Retry, CommandKind::Cancel];
    /// Stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            CommandKind::Retry => "retry",
            CommandKind::Cancel => "cancel",
        }
    }
}
crate::domain::text_enum!(CommandKind, "command kind");
sql_text!(CommandKind);

/// A pending or handled operator command.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CommandRow {
    /// Row id.
    pub id: i64,
    /// Run row id.
    pub run_id: i64,
    /// Retry or cancel.
    pub kind: CommandKind,
    /// The attempt it targets.
    pub trial_id: i64,
    /// When it was written.
    pub created_at: String,
    /// `pending`, `done` or `rejected`.
    pub state: String,
    /// Why it was rejected, or what it did.
    pub note: Option<String>,
}

/// One Docker host of a run and its health, as the engine last saw it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HostRow {
    /// Endpoint name (`unix:///var/run/docker.sock`, `tcp://host:2376`).
    pub host: String,
    /// `up`, `down` or `draining`.
    pub state: String,
    /// Since when it is in that state, RFC 3339.
    pub since: String,
    /// The error that made it `down` or `draining`.
    pub last_error: Option<String>,
    /// Trials it may run at once.
    pub slots: usize,
    /// Trials running on it.
    pub running: usize,
    /// Last check, RFC 3339.
    pub checked_at: String,
}

/// Seconds after which a running run's heartbeat is stale: its engine is presumed gone (unless
/// it is on this machine and its process still exists).
pub const STALE_AFTER_SECS: i64 = 30;

/// The run `skillscope watch` shows when none is named: the most recently started of the runs a
/// live engine runs now ([`Liveness::Live`], at `now`, asked from `host`), else the newest run.
/// `runs` are newest first, as [`crate::store::queries::list_runs`] returns them.
pub fn run_to_watch<'a>(
    runs: &'a [RunRow],
    now: chrono::DateTime<chrono::Utc>,
    host: &str,
) -> Option<&'a RunRow> {
    runs.iter()
        .filter(|r| matches!(Liveness::of(r, now, host), Liveness::Live { .. }))
        .max_by(|a, b| a.started_at.cmp(&b.started_at))
        .or_else(|| runs.first())
}

/// Whether a run's engine is alive, as another process can tell from the store.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum Liveness {
    /// Not running (`stopped` or `finished`).
    Idle,
    /// An engine runs it; its last heartbeat was `heartbeat_age_secs` ago.
    Live {
        /// Seconds since the last heartbeat.
        heartbeat_age_secs: i64,
    },
    /// Marked running, but its engine is gone: the owner process no longer exists on this
    /// machine, or its heartbeat is older than [`STALE_AFTER_SECS`].
    Stale {
        /// The last heartbeat, RFC 3339 (when the engine was last seen).
        since: Option<String>,
        /// Seconds since the last heartbeat.
        heartbeat_age_secs: Option<i64>,
    },
}

impl Liveness {
    /// How `run` looks at `now`, asked from `host` (this machine's name): the owner's process is
    /// checked when it runs here.
    pub fn of(run: &RunRow, now: chrono::DateTime<chrono::Utc>, host: &str) -> Liveness {
        Liveness::at(run, now, owner_alive_here(run, host))
    }

    /// How `run` looks at `now`, given whether its owner's process exists (`None` when the owner
    /// runs on another machine and only its heartbeat tells). Pure: what a view draws from a
    /// snapshot.
    pub fn at(
        run: &RunRow,
        now: chrono::DateTime<chrono::Utc>,
        owner_alive: Option<bool>,
    ) -> Liveness {
        if run.status != "running" {
            return Liveness::Idle;
        }
        let age = run
            .heartbeat_at
            .as_deref()
            .and_then(|h| chrono::DateTime::parse_from_rfc3339(h).ok())
            .map(|h| now.signed_duration_since(h).num_seconds().max(0));
        match (age, owner_alive) {
            (Some(a), Some(true)) | (Some(a), None)
                if a < STALE_AFTER_SECS || owner_alive.is_some() =>
            {
                Liveness::Live {
                    heartbeat_age_secs: a,
                }
            }
            _ => Liveness::Stale {
                since: run.heartbeat_at.clone(),
                heartbeat_age_secs: age,
            },
        }
    }

    /// True for a run whose engine is gone.
    pub fn is_stale(&self) -> bool {
        matches!(self, Liveness::Stale { .. })
    }

    /// What happens to a command (retry, cancel) queued for `run`: applied by its live engine,
    /// or waiting for one — then naming the command that resumes the run.
    pub fn command_note(&self, run: &RunRow) -> String {
        let resume = run.resume_command.clone().unwrap_or_else(|| {
            format!(
                "skillscope run --run {} (with the options it was started with)",
                run.name
            )
        });
        match self {
            Liveness::Live { .. } => "the run's engine applies it within a second".to_string(),
            Liveness::Stale { since, .. } => format!(
                "run {} has no live engine (stale — engine gone since {}); it applies once the run is resumed: {resume}",
                run.name,
                since.as_deref().unwrap_or("?")
            ),
            Liveness::Idle => format!(
                "run {} is {} and has no engine; it applies once the run is resumed: {resume}",
                run.name, run.status
            ),
        }
    }
}

/// Whether `run`'s owner process exists, when it runs on `host` (this machine); `None` when it
/// runs elsewhere or the run has no owner.
pub fn owner_alive_here(run: &RunRow, host: &str) -> Option<bool> {
    match (run.owner_host.as_deref(), run.owner_pid) {
        (Some(h), Some(pid)) if h == host => Some(super::owner::process_alive(pid)),
        _ => None,
    }
}
