//! Whether Acontext is answering, shared by every user of one [`super::Client`] (both learning
//! spaces of an experiment learn at once): while it is away the operator sees **one** "waiting for
//! Acontext" state with its next retry — one line per retry cycle, however many requests wait —
//! and one line when it is back.
//!
//! A cycle is a retry the learning pipeline schedules after the client's own retries ran out
//! ([`crate::acontext::learn`]). The first user to fail in a cycle announces it with the time of
//! its retry; others failing before that time are quiet.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

/// What to say about a wait: since when, the last error, the next retry.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    /// When the server stopped answering.
    pub since: DateTime<Utc>,
    /// The last error (names the endpoint, never the key).
    pub error: String,
    /// When the next retry is made.
    pub next_retry: DateTime<Utc>,
    /// Retry cycles announced so far in this wait (1 for the first).
    pub cycle: u32,
}

impl Waiting {
    /// `waiting for Acontext since 12:00:01 (45 s): <error>; next retry at 12:00:48 (in 8 s)`.
    pub fn line(&self, now: DateTime<Utc>) -> String {
        let waited = (now - self.since).num_seconds().max(0);
        let inn = (self.next_retry - now).num_seconds().max(0);
        format!(
            "waiting for Acontext since {} ({}): {}; next retry at {} (in {inn} s)",
            self.since.format("%H:%M:%S"),
            human_secs(waited),
            crate::sanitize::text(&self.error),
            self.next_retry.format("%H:%M:%S"),
        )
    }
}

fn human_secs(s: i64) -> String {
    if s < 120 {
        format!("{s} s")
    } else {
        format!("{} min", s / 60)
    }
}

#[derive(Debug, Default)]
struct State {
    since: Option<DateTime<Utc>>,
    announced_until: Option<Instant>,
    cycle: u32,
}

/// Who is waiting for Acontext, and what was said. Cheap to clone (shared).
#[derive(Clone, Default)]
pub struct Availability {
    state: Arc<Mutex<State>>,
    /// Where announcements go besides the caller's own log (the command's output), if anywhere.
    sink: Arc<Mutex<Option<Sink>>>,
}

/// A receiver of the "waiting" and "back" lines.
pub type Sink = Arc<dyn Fn(&str) + Send + Sync>;

impl std::fmt::Debug for Availability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Availability")
            .field("waiting_since", &self.waiting_since())
            .finish()
    }
}

impl Availability {
    /// Sends every announcement to `sink` too (a command's progress output).
    pub fn set_sink(&self, sink: Sink) {
        if let Ok(mut s) = self.sink.lock() {
            *s = Some(sink);
        }
    }

    /// A retry cycle failed with `error`; its retry comes after `pause`. Returns the state to
    /// announce when no user of this client has announced a retry still pending (one line per
    /// cycle), else `None`. Either way the wait is recorded (see [`Availability::waiting_since`]).
    pub fn failed(&self, error: &str, pause: Duration) -> Option<Waiting> {
        let now = Instant::now();
        let wall = Utc::now();
        let mut st = self.state.lock().ok()?;
        let since = *st.since.get_or_insert(wall);
        if st.announced_until.is_some_and(|t| now < t) {
            return None;
        }
        st.announced_until = Some(now + pause);
        st.cycle += 1;
        let w = Waiting {
            since,
            error: error.to_string(),
            next_retry: wall + chrono::Duration::from_std(pause).unwrap_or_default(),
            cycle: st.cycle,
        };
        drop(st);
        self.tell(&w.line(wall));
        Some(w)
    }

    /// A request succeeded. Returns how long the server was away when this ends a wait (the first
    /// success after it), else `None`.
    pub fn answered(&self) -> Option<Duration> {
        let mut st = self.state.lock().ok()?;
        let since = st.since.take()?;
        st.announced_until = None;
        st.cycle = 0;
        drop(st);
        let away = (Utc::now() - since).to_std().unwrap_or_default();
        self.tell(&back_line(away));
        Some(away)
    }

    /// Since when the server has been away, while it is.
    pub fn waiting_since(&self) -> Option<DateTime<Utc>> {
        self.state.lock().ok()?.since
    }

    fn tell(&self, line: &str) {
        let sink = self.sink.lock().ok().and_then(|s| s.clone());
        match sink {
            Some(f) => f(line),
            None => tracing::info!("{line}"),
        }
    }
}

/// `Acontext is back after 52 s; learning continues`.
pub fn back_line(away: Duration) -> String {
    format!(
        "Acontext is back after {}; learning continues",
        human_secs(away.as_secs() as i64)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_announcement_per_cycle_however_many_wait() {
        let a = Availability::default();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l = lines.clone();
        a.set_sink(Arc::new(move |s: &str| {
            l.lock().unwrap().push(s.to_string())
        }));
        let first = a.failed("GET /x: cannot connect", Duration::from_secs(60));
        assert_eq!(first.as_ref().map(|w| w.cycle), Some(1));
        // The other space, and further requests, within the announced cycle: quiet.
        assert!(
            a.failed("GET /y: cannot connect", Duration::from_secs(60))
                .is_none()
        );
        assert!(
            a.failed("GET /z: cannot connect", Duration::from_secs(1))
                .is_none()
        );
        assert_eq!(lines.lock().unwrap().len(), 1);
        assert!(lines.lock().unwrap()[0].starts_with("waiting for Acontext since "));
        assert!(a.waiting_since().is_some());
        // Back: one line, the wait is over.
        assert!(a.answered().is_some());
        assert!(a.answered().is_none());
        assert_eq!(lines.lock().unwrap().len(), 2);
        assert!(lines.lock().unwrap()[1].starts_with("Acontext is back after "));
        // A cycle already over: the next failure announces again.
        let a = Availability::default();
        a.failed("e", Duration::ZERO);
        assert_eq!(a.failed("e", Duration::ZERO).map(|w| w.cycle), Some(2));
    }

    #[test]
    fn the_line_says_since_when_and_the_next_retry() {
        let since = DateTime::parse_from_rfc3339("2026-11-27T12:00:01Z")
            .unwrap()
            .with_timezone(&Utc);
        let w = Waiting {
            since,
            error: "GET /learning_spaces: cannot connect".into(),
            next_retry: since + chrono::Duration::seconds(47),
            cycle: 3,
        };
        let line = w.line(since + chrono::Duration::seconds(39));
        assert_eq!(
            line,
            "waiting for Acontext since 12:00:01 (39 s): GET /learning_spaces: cannot connect; next retry at 12:00:48 (in 8 s)"
        );
    }
}
