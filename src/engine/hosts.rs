//! The backend's hosts and their health. Each configured host is `up`, `down` (since when, the
//! last error) or `draining` (answering, but not to be given new trials for a while — its disk or
//! image store failed). A probe (connect, then ping) runs for each host on its own schedule: every
//! few seconds while it is up, with a doubling back-off while it is not. The dispatcher tells the
//! schedule each host's state (the schedule places trials only on hosts that are up, and counts
//! what runs on each) and asks for an early probe whenever an attempt meets a fault that suspects
//! its host.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::domain::now_rfc3339;
use crate::runner::backend::{Backend, Place};
use crate::runner::{Fault, Host};
use crate::store::HostRow;

/// How often a host that is up is pinged.
pub const UP_PING: Duration = Duration::from_secs(5);
/// First wait before probing a host that is down again; doubles up to [`DOWN_PING_MAX`].
pub const DOWN_PING_MIN: Duration = Duration::from_secs(1);
/// Longest wait between probes of a host that is down.
pub const DOWN_PING_MAX: Duration = Duration::from_secs(15);
/// How long a host whose disk or image store failed gets no new trials (doubling per repeat, up
/// to 16×).
pub const DRAIN_FOR: Duration = Duration::from_secs(30);
/// Budget of one probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// A host's health.
#[derive(Debug, Clone, PartialEq)]
pub enum Health {
    /// Answers; trials may be placed on it.
    Up {
        /// Since when (RFC 3339).
        since: String,
    },
    /// Does not answer.
    Down {
        /// Since when (RFC 3339).
        since: String,
        /// When (monotonic).
        at: Instant,
        /// The last error.
        error: String,
    },
    /// Answers, but gets no new trials until `until`.
    Draining {
        /// Since when (RFC 3339).
        since: String,
        /// Why.
        reason: String,
        /// Until when (monotonic).
        until: Instant,
    },
}

impl Health {
    /// `up`, `down` or `draining`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Health::Up { .. } => "up",
            Health::Down { .. } => "down",
            Health::Draining { .. } => "draining",
        }
    }
}

/// One configured host.
pub struct HostSlot {
    /// Its name for labels, tables and events.
    pub name: String,
    /// Trials it may run at once.
    pub slots: usize,
    /// The connection, once the host has answered.
    pub conn: Option<Arc<dyn Host>>,
    /// Its health.
    pub health: Health,
    /// When the next probe is due.
    pub next_probe: Instant,
    /// Wait before the probe after next, while down.
    backoff: Duration,
    /// Drains in a row (for the drain time's doubling).
    drains: u32,
    /// A probe is under way.
    pub probing: bool,
}

/// The result of one probe.
pub struct Probe {
    /// Which host.
    pub index: usize,
    /// The connection, or why the host does not answer.
    pub result: Result<Arc<dyn Host>, String>,
}

/// What a probe changed, for events.
#[derive(Debug, Clone, PartialEq)]
pub enum Transition {
    /// The host answers again (or for the first time).
    CameUp,
    /// The host stopped answering.
    WentDown(String),
}

/// Every configured host with its health.
pub struct HostPool {
    /// The hosts, in configuration order.
    pub hosts: Vec<HostSlot>,
    /// The run's uid: helpers made through these connections carry it.
    run_uid: String,
    /// Where the hosts come from.
    backend: Arc<dyn Backend>,
}

impl HostPool {
    /// The places of `backend`, none probed yet (all due now, counted as down until they
    /// answer).
    pub fn new(backend: Arc<dyn Backend>, run_uid: &str) -> HostPool {
        let now = Instant::now();
        let hosts = backend
            .places()
            .into_iter()
            .map(|Place { name, slots }| HostSlot {
                name,
                slots: slots.max(1),
                conn: None,
                health: Health::Down {
                    since: now_rfc3339(),
                    at: now,
                    error: "not checked yet".into(),
                },
                next_probe: now,
                backoff: DOWN_PING_MIN,
                drains: 0,
                probing: false,
            })
            .collect();
        HostPool {
            hosts,
            run_uid: run_uid.to_string(),
            backend,
        }
    }

    /// True when no host is up.
    pub fn none_up(&self) -> bool {
        !self
            .hosts
            .iter()
            .any(|h| matches!(h.health, Health::Up { .. }))
    }

    /// Since when every host has been unavailable (the latest of their `since` times; monotonic
    /// for down hosts, now for draining ones) and the most recent error, when none is up.
    pub fn unavailable(&self) -> Option<(String, String)> {
        if !self.none_up() {
            return None;
        }
        let mut since = String::new();
        let mut error = String::new();
        for h in &self.hosts {
            let (s, e) = match &h.health {
                Health::Down { since, error, .. } => (since, error),
                Health::Draining { since, reason, .. } => (since, reason),
                Health::Up { .. } => continue,
            };
            if *s > since {
                since = s.clone();
                error = format!("{}: {e}", h.name);
            }
        }
        Some((since, error))
    }

    /// Hosts whose probe is due (marks them as probing).
    pub fn due(&mut self, now: Instant) -> Vec<usize> {
        let mut out = Vec::new();
        for (i, h) in self.hosts.iter_mut().enumerate() {
            if let Health::Draining { until, .. } = h.health
                && now >= until
            {
                h.health = Health::Up {
                    since: now_rfc3339(),
                };
            }
            if !h.probing && now >= h.next_probe {
                h.probing = true;
                out.push(i);
            }
        }
        out
    }

    /// Asks for a probe of host `i` as soon as possible (an attempt on it met a fault).
    pub fn suspect(&mut self, i: usize) {
        if let Some(h) = self.hosts.get_mut(i) {
            h.next_probe = Instant::now();
        }
    }

    /// Probes host `i`: connects when it has never answered, else pings the connection.
    pub fn probe(&self, i: usize) -> impl std::future::Future<Output = Probe> + Send + 'static {
        let (conn, uid, backend) = (
            self.hosts[i].conn.clone(),
            self.run_uid.clone(),
            self.backend.clone(),
        );
        async move {
            let attempt = async {
                match conn {
                    Some(c) => c.ping().await.map(|()| c).map_err(|e| e.to_string()),
                    None => backend
                        .connect(i, Some(&uid))
                        .await
                        .map_err(|e| e.to_string()),
                }
            };
            let result = match tokio::time::timeout(PROBE_TIMEOUT, attempt).await {
                Ok(r) => r,
                Err(_) => Err(format!("no answer within {}s", PROBE_TIMEOUT.as_secs())),
            };
            Probe { index: i, result }
        }
    }

    /// Applies a probe's result; returns the transition it caused, if any.
    pub fn apply(&mut self, probe: Probe) -> Option<Transition> {
        let h = &mut self.hosts[probe.index];
        h.probing = false;
        let now = Instant::now();
        match probe.result {
            Ok(conn) => {
                h.conn = Some(conn);
                h.backoff = DOWN_PING_MIN;
                h.next_probe = now + UP_PING;
                match h.health {
                    Health::Down { .. } => {
                        h.health = Health::Up {
                            since: now_rfc3339(),
                        };
                        Some(Transition::CameUp)
                    }
                    _ => None,
                }
            }
            Err(error) => {
                h.next_probe = now + h.backoff;
                h.backoff = (h.backoff * 2).min(DOWN_PING_MAX);
                match &mut h.health {
                    Health::Down { error: e, .. } => {
                        *e = error;
                        None
                    }
                    _ => {
                        h.health = Health::Down {
                            since: now_rfc3339(),
                            at: now,
                            error: error.clone(),
                        };
                        Some(Transition::WentDown(error))
                    }
                }
            }
        }
    }

    /// Stops placing trials on host `i` for a while: its disk or image store failed (`fault`).
    /// Returns false when it was not up (nothing changed).
    pub fn drain(&mut self, i: usize, fault: Fault, error: &str) -> bool {
        let h = &mut self.hosts[i];
        if !matches!(h.health, Health::Up { .. }) {
            return false;
        }
        h.drains = (h.drains + 1).min(5);
        let wait = DRAIN_FOR * (1 << (h.drains - 1));
        h.health = Health::Draining {
            since: now_rfc3339(),
            reason: format!("{}: {error}", fault.describe()),
            until: Instant::now() + wait,
        };
        true
    }

    /// Notes that host `i` ran an attempt to its end (its drain time resets).
    pub fn healthy_end(&mut self, i: usize) {
        self.hosts[i].drains = 0;
    }

    /// The row stored for host `i`, with `running` trials on it (the schedule counts them).
    pub fn row(&self, i: usize, running: usize) -> HostRow {
        let h = &self.hosts[i];
        let (since, last_error) = match &h.health {
            Health::Up { since } => (since.clone(), None),
            Health::Down { since, error, .. } => (since.clone(), Some(error.clone())),
            Health::Draining { since, reason, .. } => (since.clone(), Some(reason.clone())),
        };
        HostRow {
            host: h.name.clone(),
            state: h.health.as_str().into(),
            since,
            last_error,
            slots: h.slots,
            running,
            checked_at: now_rfc3339(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(n: usize) -> HostPool {
        let backend = crate::runner::fake::FakeBackend::new(n, 2);
        HostPool::new(Arc::new(backend), "uid")
    }

    /// (That nothing is placed meanwhile is the schedule's test of the same name.)
    #[test]
    fn hosts_start_down_and_nothing_is_placed_until_one_answers() {
        let p = pool(2);
        assert!(p.none_up());
        let (_, error) = p.unavailable().unwrap();
        assert!(error.contains("not checked yet"), "{error}");
    }

    #[test]
    fn a_failed_probe_backs_off_and_reports_one_transition() {
        let mut p = pool(1);
        p.hosts[0].health = Health::Up {
            since: now_rfc3339(),
        };
        let t = p.apply(Probe {
            index: 0,
            result: Err("connection refused".into()),
        });
        assert_eq!(t, Some(Transition::WentDown("connection refused".into())));
        let first = p.hosts[0].next_probe;
        let t = p.apply(Probe {
            index: 0,
            result: Err("still refused".into()),
        });
        assert_eq!(t, None, "down stays down without a second event");
        assert!(p.hosts[0].next_probe > first, "backs off");
        assert!(
            matches!(&p.hosts[0].health, Health::Down { error, .. } if error == "still refused")
        );
    }

    #[test]
    fn draining_hosts_get_no_trials_until_their_time_is_up() {
        let mut p = pool(2);
        for h in &mut p.hosts {
            h.health = Health::Up {
                since: now_rfc3339(),
            };
            h.conn = None;
        }
        assert!(p.drain(0, Fault::DiskFull, "no space left on device"));
        assert_eq!(p.row(0, 0).state, "draining");
        assert!(!p.drain(0, Fault::DiskFull, "again"), "already draining");
        // Draining counts as unavailable when it is the only state left.
        assert!(!p.none_up());
        p.hosts[1].health = Health::Down {
            since: now_rfc3339(),
            at: Instant::now(),
            error: "refused".into(),
        };
        assert!(p.none_up());
        assert!(p.unavailable().is_some());
    }
}
