//! The terminal dashboard (ratatui + crossterm). `run` opens it over the engine it starts; `watch`
//! opens it over a run another process owns. Either way it reads the SQLite store through a worker
//! thread ([`data`]) and writes only operator commands.
//!
//! The event loop waits on keys, worker updates, engine events and a 1 s tick, and redraws only
//! after one of them changed something, coalescing bursts of updates into one frame. Frames are
//! wrapped in synchronized-update sequences (no tearing over SSH); ratatui diffs frames, so the
//! screen is never cleared between them. `ratatui::try_init` installs a panic hook that restores the
//! terminal.

pub mod app;
pub mod data;
pub mod evaluation;
pub mod keymap;
pub mod model;
pub mod skilldoc;
pub mod state;
pub mod theme;
pub mod views;

use std::io::Write;
use std::time::Duration;

use crossterm::event::{Event, EventStream, KeyEventKind};
use crossterm::terminal::{BeginSynchronizedUpdate, EndSynchronizedUpdate};
use futures_util::StreamExt;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::engine::{EngineError, EngineEvent, RunOutcome};
use app::{App, Effect};
use data::{DataWorker, Request};

/// The engine a `run` dashboard started (`T` = what it returns: a run's outcome, or an
/// experiment's).
pub struct EngineHandle<T = RunOutcome, E = EngineError> {
    /// Stops the engine cleanly.
    pub shutdown: CancellationToken,
    /// Finishes when the engine has stopped.
    pub done: JoinHandle<Result<T, E>>,
    /// Engine events (each pokes the worker to re-read at once).
    pub events: broadcast::Receiver<EngineEvent>,
}

/// Errors of the dashboard itself.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// The terminal could not be set up or written.
    #[error("terminal: {0}")]
    Terminal(#[from] std::io::Error),
    /// The engine stopped with an error.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The experiment pipeline stopped with an error.
    #[error(transparent)]
    Experiment(#[from] crate::experiment::ExperimentError),
    /// The engine task panicked.
    #[error("the engine task failed: {0}")]
    Join(String),
}

/// Runs the dashboard until the operator quits. In run mode, returns the engine's outcome once
/// it has stopped.
///
/// # Errors
/// [`TuiError`] for terminal failures or an engine that stopped with an error.
pub async fn run<T, E>(
    mut app: App,
    mut worker: DataWorker,
    engine: Option<EngineHandle<T, E>>,
) -> Result<Option<T>, TuiError>
where
    TuiError: From<E>,
{
    let mut terminal = ratatui::try_init()?;
    let result = event_loop(&mut terminal, &mut app, &mut worker, engine).await;
    ratatui::restore();
    result
}

async fn event_loop<T, E>(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    worker: &mut DataWorker,
    engine: Option<EngineHandle<T, E>>,
) -> Result<Option<T>, TuiError>
where
    TuiError: From<E>,
{
    let (shutdown, mut done, mut events) = match engine {
        Some(e) => (Some(e.shutdown), Some(e.done), Some(e.events)),
        None => (None, None, None),
    };
    let mut keys = EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut dirty = true;
    loop {
        if dirty {
            let mut out = std::io::stdout();
            crossterm::queue!(out, BeginSynchronizedUpdate)?;
            terminal.draw(|f| views::draw(f, app))?;
            crossterm::queue!(out, EndSynchronizedUpdate)?;
            out.flush()?;
            dirty = false;
        }
        tokio::select! {
            ev = keys.next() => match ev {
                Some(Ok(Event::Key(k))) if k.kind != KeyEventKind::Release => {
                    for effect in app.on_key(k) {
                        match effect {
                            Effect::Request(r) => worker.send(r),
                            Effect::StopRun => match &shutdown {
                                Some(s) => s.cancel(),
                                None => return Ok(None),
                            },
                            Effect::Quit => return Ok(None),
                        }
                    }
                    dirty = true;
                }
                Some(Ok(Event::Resize(..))) => dirty = true,
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(TuiError::Terminal(e)),
                None => return Ok(None),
            },
            Some(u) = worker.updates.recv() => {
                app.on_update(u);
                // Coalesce a burst into one frame.
                while let Ok(u) = worker.updates.try_recv() {
                    app.on_update(u);
                }
                dirty = true;
            }
            _ = tick.tick() => {
                app.on_tick(chrono::Utc::now());
                dirty = true;
            }
            ev = async { events.as_mut().expect("guarded").recv().await }, if events.is_some() => {
                match ev {
                    Err(broadcast::error::RecvError::Closed) => events = None,
                    _ => worker.send(Request::Reload),
                }
            }
            res = async { done.as_mut().expect("guarded").await }, if done.is_some() => {
                let outcome = res.map_err(|e| TuiError::Join(e.to_string()))?.map_err(TuiError::from)?;
                return Ok(Some(outcome));
            }
        }
    }
}
