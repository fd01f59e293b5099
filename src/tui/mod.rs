//! The terminal dashboard (ratatui + crossterm). `run` opens it over the engine it starts; `watch`
//! opens it over a run another process owns. Either way it reads the SQLite store through a worker
//! thread ([`worker`]) and writes only operator commands.
//!
//! The event loop waits on keys, the mouse (captured unless `--no-mouse`), worker updates, engine
//! events and a 1 s tick, and redraws only
//! after one of them changed something, coalescing bursts of updates into one frame. Frames are
//! wrapped in synchronized-update sequences (no tearing over SSH); ratatui diffs frames, so the
//! screen is never cleared between them. `ratatui::try_init` installs a panic hook that restores the
//! terminal.

pub mod app;
pub mod keymap;
pub mod model;
pub mod screens;
pub mod skilldoc;
pub mod state;
pub mod theme;
pub mod views;
pub mod widgets;
pub mod worker;

use std::io::Write;
use std::time::Duration;

use crossterm::event::{
    DisableMouseCapture, EnableMouseCapture, Event, EventStream, KeyEventKind, MouseEventKind,
};
use crossterm::terminal::{BeginSynchronizedUpdate, EndSynchronizedUpdate};
use futures_util::StreamExt;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::engine::{EngineError, EngineEvent, RunOutcome};
use app::{App, Effect};
use worker::{DataWorker, Request};

/// The engine a `run` dashboard started (`T` = what it returns: a run's outcome, or an
/// experiment's).
pub struct EngineHandle<T = RunOutcome, E = EngineError> {
    /// Stops the engine cleanly.
    pub shutdown: CancellationToken,
    /// Finishes when the engine has stopped.
    pub done: JoinHandle<Result<T, E>>,
    /// Engine events (each pokes the worker to re-read at once).
    pub events: broadcast::Receiver<EngineEvent>,
    /// Cancelled to let the engine finish once its last trial has its verdict (a `run`'s engine
    /// stays up while its dashboard is open, for retries); `None` when it ends by itself.
    pub finish: Option<CancellationToken>,
    /// When the engine ends by itself (an experiment's last phase), the dashboard stays, saying
    /// so, until the operator closes it — as a `run`'s does at its end.
    pub hold_at_end: bool,
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
    /// The dashboard's data worker could not open the store.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// How a dashboard ended.
pub enum TuiEnd<T, E> {
    /// The engine it watched stopped (run mode), with its result.
    Engine(Result<T, E>),
    /// The operator quit (watch mode), or the terminal went away under `watch`.
    Quit,
    /// The terminal went away (SIGHUP, the SSH session dropped, input closed) while an engine
    /// runs: the dashboard closed without touching the terminal; the engine goes on and `done`
    /// finishes when it stops.
    Detached(JoinHandle<Result<T, E>>),
}

/// How often a dashboard's worker checks the database for changes (`PRAGMA data_version`).
pub const WATCH_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// What a dashboard shows and how: the store, which run or experiment to follow, the mode (`Run`
/// with an engine under it, `Watch` without), the theme and whether the mouse is captured.
pub struct Dashboard<'a> {
    /// The database file.
    pub db: &'a std::path::Path,
    /// The run or experiment followed.
    pub follow: worker::RunSelector,
    /// Run (an engine or experiment in this process) or watch.
    pub mode: app::Mode,
    /// Colours and glyphs.
    pub theme: theme::Theme,
    /// Capture the mouse (clicks select cells and tabs, the wheel scrolls).
    pub mouse: bool,
    /// True when the same command resumes a stopped run (false for a dry run, made afresh):
    /// what the stop dialog says ([`app::App::resumable`]).
    pub resumable: bool,
    /// The pass rule the dashboard shows success by (`watch --pass-threshold`).
    pub success: crate::analysis::success::SuccessRule,
}

/// Opens the dashboard — its data worker on the store, the app state and the terminal — and runs
/// it as [`run`] does. The one way `skillscope run`, `watch` and `experiment` open it.
///
/// # Errors
/// [`TuiError::Store`] when the store cannot be opened; otherwise as [`run`].
pub async fn open<T, E>(
    d: Dashboard<'_>,
    engine: Option<EngineHandle<T, E>>,
    hangup: Option<CancellationToken>,
) -> Result<TuiEnd<T, E>, TuiError> {
    let worker = DataWorker::start_with(d.db, d.follow, WATCH_POLL, d.success)?;
    let mut app = App::new(
        d.mode,
        d.theme,
        d.db.display().to_string(),
        chrono::Utc::now(),
    );
    app.mouse = d.mouse;
    app.resumable = d.resumable;
    // An engine that ends by itself (an experiment) still works once its trials have verdicts.
    app.works_past_its_trials = engine.as_ref().is_some_and(|e| e.finish.is_none());
    run(app, worker, engine, hangup).await
}

/// Runs the dashboard until the operator quits, the engine stops (run mode) or the terminal goes
/// away (`hangup` fires, or input ends).
///
/// # Errors
/// [`TuiError`] when the terminal cannot be set up or written while it is there, or the engine
/// task panicked.
pub async fn run<T, E>(
    mut app: App,
    mut worker: DataWorker,
    engine: Option<EngineHandle<T, E>>,
    hangup: Option<CancellationToken>,
) -> Result<TuiEnd<T, E>, TuiError> {
    let mut terminal = ratatui::try_init()?;
    if app.mouse {
        crossterm::execute!(std::io::stdout(), EnableMouseCapture)?;
    }
    let result = event_loop(&mut terminal, &mut app, &mut worker, engine, hangup).await;
    // A terminal that went away is not restored: there is nothing to restore, and the output may
    // already go to the run's log. Dropping the terminal would write "show cursor" (`ESC [?25h`)
    // to standard output — by now the log — so it is forgotten instead.
    if matches!(result, Ok(TuiEnd::Detached(_))) {
        std::mem::forget(terminal);
    } else {
        if app.mouse {
            let _ = crossterm::execute!(std::io::stdout(), DisableMouseCapture);
        }
        ratatui::restore();
    }
    result
}

async fn event_loop<T, E>(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    worker: &mut DataWorker,
    engine: Option<EngineHandle<T, E>>,
    hangup: Option<CancellationToken>,
) -> Result<TuiEnd<T, E>, TuiError> {
    let (shutdown, mut done, mut events, finish, hold_at_end) = match engine {
        Some(e) => (
            Some(e.shutdown),
            Some(e.done),
            Some(e.events),
            e.finish,
            e.hold_at_end,
        ),
        None => (None, None, None, None, false),
    };
    let hangup = hangup.unwrap_or_default();
    // The engine's result once it ended while the dashboard stays (`hold_at_end`).
    let mut ended: Option<Result<T, E>> = None;
    // The operator asked to stop or finish: the engine's end closes the dashboard.
    let mut closing = false;
    // The terminal went away: hand the engine back (run mode) or end (watch mode).
    let detach = |done: Option<JoinHandle<Result<T, E>>>, ended: &mut Option<Result<T, E>>| match (
        ended.take(),
        done,
    ) {
        (Some(r), _) => TuiEnd::Engine(r),
        (None, Some(d)) => TuiEnd::Detached(d),
        (None, None) => TuiEnd::Quit,
    };
    let mut keys = EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut dirty = true;
    loop {
        if hangup.is_cancelled() {
            return Ok(detach(done.take(), &mut ended));
        }
        if dirty {
            let drawn = (|| -> std::io::Result<()> {
                let mut out = std::io::stdout();
                crossterm::queue!(out, BeginSynchronizedUpdate)?;
                terminal.draw(|f| views::draw(f, app))?;
                crossterm::queue!(out, EndSynchronizedUpdate)?;
                out.flush()
            })();
            match drawn {
                Ok(()) => {}
                // Writing failed because the terminal is gone: not an error of the run.
                Err(_) if hangup.is_cancelled() || done.is_some() || ended.is_some() => {
                    return Ok(detach(done.take(), &mut ended));
                }
                Err(e) => return Err(TuiError::Terminal(e)),
            }
            dirty = false;
        }
        tokio::select! {
            _ = hangup.cancelled() => return Ok(detach(done.take(), &mut ended)),
            ev = keys.next() => match ev {
                Some(Ok(ev @ (Event::Key(_) | Event::Mouse(_)))) => {
                    let effects = match ev {
                        Event::Key(k) if k.kind != KeyEventKind::Release => app.on_key(k),
                        // Moves and drags (many per second) change nothing.
                        // Without capture (`--no-mouse`) the mouse is the terminal's.
                        Event::Mouse(m) if app.mouse && !matches!(
                            m.kind,
                            MouseEventKind::Moved | MouseEventKind::Drag(_)
                        ) => app.on_mouse(m),
                        _ => continue,
                    };
                    for effect in effects {
                        match effect {
                            Effect::Request(r) => worker.send(r),
                            // Closing after the engine ended: its result, as it ended.
                            Effect::Quit | Effect::StopRun | Effect::FinishRun
                                if ended.is_some() =>
                            {
                                return Ok(detach(None, &mut ended));
                            }
                            Effect::StopRun => match &shutdown {
                                Some(s) => {
                                    closing = true;
                                    s.cancel();
                                }
                                None => return Ok(TuiEnd::Quit),
                            },
                            // The engine finishes by itself once it is no longer held open.
                            Effect::FinishRun => match (&finish, &shutdown) {
                                (Some(f), _) => {
                                    closing = true;
                                    f.cancel();
                                }
                                (None, Some(s)) => {
                                    closing = true;
                                    s.cancel();
                                }
                                (None, None) => return Ok(TuiEnd::Quit),
                            },
                            Effect::Quit => return Ok(TuiEnd::Quit),
                        }
                    }
                    dirty = true;
                }
                Some(Ok(Event::Resize(..))) => dirty = true,
                Some(Ok(_)) => {}
                // Input ended or failed: the terminal is gone (an SSH session dropped).
                Some(Err(_)) | None => return Ok(detach(done.take(), &mut ended)),
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
                let outcome = res.map_err(|e| TuiError::Join(e.to_string()))?;
                done = None;
                if closing || !hold_at_end {
                    return Ok(TuiEnd::Engine(outcome));
                }
                // It ended by itself: say so and stay until the operator closes.
                app.ended = Some(match &outcome {
                    Ok(_) => "done".to_string(),
                    Err(_) => "stopped by an error (it is printed when you close)".to_string(),
                });
                ended = Some(outcome);
                worker.send(Request::Reload);
                dirty = true;
            }
        }
    }
}
