//! Waiting for Acontext: a step whose request fails with a transport error, a 5xx or a 429 after
//! the client's own retries is tried again, with pauses doubling from 0.5 s to 30 s, for up to
//! [`LearnOptions::server_wait`]. The wait is one state, not a line per request: each retry cycle
//! is announced once for all spaces sharing the client ([`crate::acontext::availability`]) — in
//! the learning run's event log (the dashboard's event list) and the command's output — and each
//! waiting space stores since when, why and its next retry (`status` and the dashboard's overview
//! show it); the first answer after the wait says Acontext is back and clears it.

use std::time::{Duration, Instant};

use super::{LearnOptions, Learner, Retried};
use crate::acontext::AcontextError;
use crate::store::learning as lq;

/// First pause between retry cycles.
const FIRST_PAUSE: Duration = Duration::from_millis(500);
/// Longest pause between retry cycles.
const MAX_PAUSE: Duration = Duration::from_secs(30);

impl Learner {
    /// Runs `op` until it succeeds, retrying retryable errors for up to `opts.server_wait` (see
    /// the module docs).
    pub(crate) async fn with_server_wait<T, F, Fut>(
        &self,
        opts: &LearnOptions,
        op: F,
    ) -> Result<T, Retried>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T, AcontextError>>,
    {
        let start = Instant::now();
        let mut pause = FIRST_PAUSE;
        let mut waited = false;
        loop {
            if self.cancel.is_cancelled() {
                return Err(Retried::Cancelled);
            }
            match op().await {
                Ok(v) => {
                    if let Some(away) = self.client.availability().answered() {
                        self.event(opts, "info", crate::acontext::availability::back_line(away))
                            .await;
                    }
                    if waited {
                        self.store_waiting(opts, None).await;
                    }
                    return Ok(v);
                }
                Err(e) if e.is_retryable() => {
                    if start.elapsed() >= opts.server_wait {
                        self.store_waiting(opts, None).await;
                        return Err(Retried::Unavailable(start.elapsed(), e));
                    }
                    waited = true;
                    let error = e.to_string();
                    let now = chrono::Utc::now();
                    if let Some(w) = self.client.availability().failed(&error, pause) {
                        self.event(opts, "warn", w.line(now)).await;
                    }
                    let since = self.client.availability().waiting_since().unwrap_or(now);
                    let next = now + chrono::Duration::from_std(pause).unwrap_or_default();
                    self.store_waiting(opts, Some((since, error, next))).await;
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => {}
                        _ = self.cancel.cancelled() => return Err(Retried::Cancelled),
                    }
                    pause = (pause * 2).min(MAX_PAUSE);
                }
                Err(e) => return Err(Retried::Api(e)),
            }
        }
    }

    /// Stores (or clears, with `None`) the waiting state of the space of `opts`. A store that
    /// fails here is not worth stopping the pass for: the wait goes on either way.
    pub(super) async fn store_waiting(
        &self,
        opts: &LearnOptions,
        waiting: Option<(
            chrono::DateTime<chrono::Utc>,
            String,
            chrono::DateTime<chrono::Utc>,
        )>,
    ) {
        let (run, label) = (opts.run.clone(), opts.label.clone());
        let rfc =
            |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let w = waiting.map(|(s, r, n)| (rfc(s), r, rfc(n)));
        let _ = self
            .store
            .writer()
            .write(move |c| {
                lq::set_space_waiting(
                    c,
                    &run,
                    &label,
                    w.as_ref()
                        .map(|(s, r, n)| (s.as_str(), r.as_str(), n.as_str())),
                )
            })
            .await;
    }

    /// Adds `message` to the event log of the run the space of `opts` learns from (the
    /// dashboard's event list).
    async fn event(&self, opts: &LearnOptions, level: &'static str, message: String) {
        let _ = self.store.add_run_event(&opts.run, level, message).await;
    }
}
