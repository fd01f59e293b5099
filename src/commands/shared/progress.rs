//! Headless progress: a bar on a terminal, one line per finished trial otherwise (nohup logs, the
//! log of a detached run), and the run's start and end recorded in its event log.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

use crate::domain::{Outcome, TrialRow};
use crate::engine::EngineEvent;
use crate::skillsbench::condition::condition_label;

/// Records when a run starts or resumes in its event log, from the engine's `Started` events (the
/// engine logs hosts, faults, retries, cancels and stops; the start and the end are the command's
/// to say). Ends when the engine's event channel closes; abort it once the command is done.
pub fn record_run_starts(engine: &crate::engine::Engine) -> tokio::task::JoinHandle<()> {
    let mut events = engine.subscribe();
    let store = engine.store().clone();
    tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(EngineEvent::Started {
                    run_id,
                    total,
                    done,
                }) => {
                    let who = format!(
                        "engine pid {} on {}",
                        std::process::id(),
                        crate::store::owner::host_name()
                    );
                    let message = if done > 0 {
                        format!("run resumed: {done} of {total} trials already finished; {who}")
                    } else {
                        format!("run started: {total} trials planned; {who}")
                    };
                    let _ = store
                        .writer()
                        .write(move |c| {
                            crate::store::queries::add_event(c, run_id, "info", &message)
                        })
                        .await;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                _ => {}
            }
        }
    })
}

/// Records `how` in the event log of run `name` (how it ended: finished, stopped and why, stopped
/// by an error; or a learning pass over it). Nothing when the run does not exist.
pub async fn record_run_end(
    store: &crate::store::Store,
    name: &str,
    level: &'static str,
    how: String,
) {
    let _ = store.add_run_event(name, level, how).await;
}

/// A progress bar on a terminal; one line per finished trial otherwise (nohup logs, the log of a
/// detached run). Returns true when the event channel closed (the engine is gone), false after
/// one run stopped.
pub async fn show_progress(events: tokio::sync::broadcast::Receiver<EngineEvent>) -> bool {
    show_progress_from(events, None).await
}

/// How far run `name` is, from the store: (trials planned, trials with a verdict) — what a
/// progress display that starts after the engine's `Started` event (a run gone headless when its
/// terminal went away) counts from. `None` when the store cannot tell.
pub fn progress_now(store: &crate::store::Store, name: &str) -> Option<(usize, usize)> {
    let conn = store.connect().ok()?;
    let run = crate::store::queries::find_run(&conn, name).ok()??;
    let current = crate::store::queries::current_briefs(&conn, run.id).ok()?;
    let done = current
        .iter()
        .filter(|t| t.status == crate::domain::TrialStatus::Done)
        .count();
    Some((current.len(), done))
}

/// [`show_progress`] counting from `from` = (trials planned, trials done) until the engine's
/// next `Started` event says otherwise: lines read `[done/planned]` against the run's plan even
/// when the display starts in the middle of a run.
pub async fn show_progress_from(
    mut events: tokio::sync::broadcast::Receiver<EngineEvent>,
    from: Option<(usize, usize)>,
) -> bool {
    let tty = std::io::stderr().is_terminal();
    let bar = ProgressBar::hidden();
    let mut counts = Counts::default();
    if let Some((total, done)) = from {
        counts.total = total;
        counts.done = done;
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    }
    let say = |line: String| {
        if tty {
            bar.println(line);
        } else {
            crate::errln!("{line}");
        }
    };
    // The engine reports the error that stops a run as a notice right before `Stopped`; the
    // command prints that error itself (once, as `error: …`), so such a notice is held back and
    // dropped when `Stopped` follows.
    let mut held: Option<String> = None;
    loop {
        let event = events.recv().await;
        if let Some(line) = held.take()
            && !matches!(event, Ok(EngineEvent::Stopped { finished: false }))
        {
            say(line);
        }
        match event {
            Ok(EngineEvent::Started { total, done, .. }) => {
                if tty {
                    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                    bar.set_style(
                        ProgressStyle::with_template(
                            "{elapsed_precise} [{bar:30}] {pos}/{len} trials · {msg} · ETA {eta}",
                        )
                        .expect("template")
                        .progress_chars("=> "),
                    );
                }
                bar.set_length(total as u64);
                bar.set_position(done as u64);
                counts.total = total;
                counts.done = done;
            }
            Ok(EngineEvent::TrialDone { row }) => {
                if row.outcome == Some(Outcome::Interrupted) {
                    continue;
                }
                counts.record(&row);
                bar.set_position(counts.done as u64);
                bar.set_message(counts.message());
                let line = trial_line(&row, counts.done, counts.total);
                if tty {
                    if row.outcome != Some(Outcome::Pass) {
                        bar.println(line);
                    }
                } else {
                    crate::errln!("{line}");
                }
            }
            Ok(EngineEvent::Notice { level, message }) => {
                let line = format!("[{level}] {}", crate::sanitize::text(&message));
                if level == "error" {
                    held = Some(line);
                } else {
                    say(line);
                }
            }
            Ok(EngineEvent::Stopped { .. }) => {
                bar.finish_and_clear();
                return false;
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            Ok(EngineEvent::TrialProgress { .. } | EngineEvent::TrialStep { .. })
            | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
        }
    }
    bar.finish_and_clear();
    true
}

fn trial_line(row: &TrialRow, done: usize, total: usize) -> String {
    let outcome = row.outcome.map(|o| o.as_str()).unwrap_or("?");
    let reward = row
        .reward
        .map(|r| format!(" reward {r}"))
        .unwrap_or_default();
    let error = row
        .error
        .as_deref()
        .filter(|_| row.outcome != Some(Outcome::Pass))
        .map(|e| {
            format!(
                " — {}",
                crate::sanitize::text(e.lines().next().unwrap_or_default())
            )
        })
        .unwrap_or_default();
    format!(
        "[{done}/{total}] {} {} #{} (attempt {}): {outcome}{reward}{error}",
        row.task_id,
        condition_label(&row.condition),
        row.trial_index,
        row.attempt
    )
}

#[derive(Default)]
struct Counts {
    total: usize,
    done: usize,
    pass: usize,
    fail: usize,
    errors: usize,
}

impl Counts {
    fn record(&mut self, row: &TrialRow) {
        self.done += 1;
        match row.outcome {
            Some(Outcome::Pass) => self.pass += 1,
            Some(Outcome::Fail) => self.fail += 1,
            _ => self.errors += 1,
        }
    }
    fn message(&self) -> String {
        format!(
            "pass {} · fail {} · other {}",
            self.pass, self.fail, self.errors
        )
    }
}
