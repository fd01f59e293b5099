//! Headless progress: a bar on a terminal, one line per finished trial otherwise (nohup logs, the
//! log of a detached run), and the run's start and end recorded in its event log.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

use crate::domain::{Outcome, TrialRow, TrialStatus};
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
                    ..
                }) => {
                    let who = format!(
                        "engine pid {} on {}",
                        std::process::id(),
                        crate::store::owner::host_name()
                    );
                    // A run whose output goes to a file (detached, nohup) says where: `watch`
                    // shows it in the event log.
                    let output = output_file()
                        .map(|f| format!("; headless, its output in {}", f.display()))
                        .unwrap_or_default();
                    let message = if done > 0 {
                        format!(
                            "run resumed: {done} of {total} trials already finished; {who}{output}"
                        )
                    } else {
                        format!("run started: {total} trials planned; {who}{output}")
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

/// The file this process's standard error goes to, when it is a regular file (a run's log after
/// `--detach`, `nohup … >run.log 2>&1`); `None` on a terminal or a pipe.
pub fn output_file() -> Option<std::path::PathBuf> {
    let meta = std::fs::metadata("/proc/self/fd/2").ok()?;
    meta.file_type()
        .is_file()
        .then(|| std::fs::read_link("/proc/self/fd/2").ok())
        .flatten()
}

/// Says, on the terminal, where the progress goes when standard output is piped and standard
/// error is not (`run | tee`): the pipe gets only the final table.
pub fn note_where_progress_goes() {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() && std::io::stderr().is_terminal() {
        crate::errln!(
            "note: progress goes to standard error, the final table to standard output; `2>&1 | tee FILE` keeps a line per trial too"
        );
    }
}

/// Records that the terminal of run `name` went away and its output now goes to `log`, in its
/// event log: what `watch` (from a new SSH session) shows of it.
pub async fn record_headless(store: &crate::store::Store, name: &str, log: &std::path::Path) {
    let _ = store
        .add_run_event(
            name,
            "warn",
            format!(
                "the terminal went away: the run goes on headless, its output in {}",
                log.display()
            ),
        )
        .await;
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

/// How far a run is: trials planned, and the outcomes of those with a verdict.
#[derive(Debug, Clone, Default)]
pub struct SoFar {
    /// Trials planned (latest attempts).
    pub total: usize,
    /// The finished trials' outcomes.
    pub finished: Vec<(crate::domain::TrialKey, Option<Outcome>)>,
}

/// How far run `name` is, from the store — what a progress display that starts after the
/// engine's `Started` event (a run gone headless when its terminal went away) counts from.
/// `None` when the store cannot tell.
pub fn progress_now(store: &crate::store::Store, name: &str) -> Option<SoFar> {
    let conn = store.connect().ok()?;
    let run = crate::store::queries::find_run(&conn, name).ok()??;
    let current = crate::store::queries::current_briefs(&conn, run.id).ok()?;
    Some(SoFar {
        total: current.len(),
        finished: current
            .iter()
            .filter(|t| t.status == crate::domain::TrialStatus::Done)
            .map(|t| (t.key(), t.outcome))
            .collect(),
    })
}

/// [`show_progress`] counting from `from` until the engine's next `Started` event says
/// otherwise: lines read `[done/planned]` against the run's plan, and the pass, fail and other
/// counts include the trials finished before, even when the display starts in the middle of a
/// run or the run is resumed.
pub async fn show_progress_from(
    mut events: tokio::sync::broadcast::Receiver<EngineEvent>,
    from: Option<SoFar>,
) -> bool {
    let tty = std::io::stderr().is_terminal();
    let bar = ProgressBar::hidden();
    let mut counts = Counts::default();
    if let Some(so_far) = from {
        counts.start(&so_far);
        bar.set_length(counts.total as u64);
        bar.set_position(counts.done as u64);
    }
    let mut out = Lines {
        tty,
        bar: bar.clone(),
        last: std::time::Instant::now(),
    };
    // What runs now, by attempt id: its phase and since when (for the headless heartbeat).
    let mut running: std::collections::HashMap<i64, (TrialStatus, std::time::Instant)> =
        Default::default();
    let mut heartbeat = tokio::time::interval(std::time::Duration::from_secs(5));
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The engine reports the error that stops a run as a notice right before `Stopped`; the
    // command prints that error itself (once, as `error: …`), so such a notice is held back and
    // dropped when `Stopped` follows.
    let mut held: Option<String> = None;
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            _ = heartbeat.tick() => {
                // A terminal has its bar; a log or a pipe gets a line when nothing else was said
                // for a while (a long image build, a slow agent), so silence means stuck.
                if !tty && out.last.elapsed() >= HEARTBEAT {
                    out.say(still_running(&counts, &running));
                }
                continue;
            }
        };
        if let Some(line) = held.take()
            && !matches!(event, Ok(EngineEvent::Stopped { finished: false }))
        {
            out.say(line);
        }
        match event {
            Ok(EngineEvent::Started {
                total, finished, ..
            }) => {
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
                counts.start(&SoFar { total, finished });
                bar.set_length(counts.total as u64);
                bar.set_position(counts.done as u64);
                bar.set_message(counts.message());
            }
            Ok(EngineEvent::TrialProgress { attempt_id, status }) => {
                if status.is_active() {
                    let since = match running.get(&attempt_id) {
                        Some((s, t)) if *s == status => *t,
                        _ => std::time::Instant::now(),
                    };
                    running.insert(attempt_id, (status, since));
                } else {
                    running.remove(&attempt_id);
                }
            }
            Ok(EngineEvent::TrialDone { row }) => {
                running.remove(&row.id);
                if row.outcome == Some(Outcome::Interrupted) {
                    continue;
                }
                counts.record(&row);
                bar.set_position(counts.done as u64);
                bar.set_message(counts.message());
                let line = trial_line(&row, counts.done, counts.total);
                if !tty || row.outcome != Some(Outcome::Pass) {
                    out.say(line);
                }
            }
            Ok(EngineEvent::Notice { level, message }) => {
                let line = format!("[{level}] {}", crate::sanitize::text(&message));
                if level == "error" {
                    held = Some(line);
                } else {
                    out.say(line);
                }
            }
            Ok(EngineEvent::Stopped { .. }) => {
                bar.finish_and_clear();
                return false;
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            Ok(EngineEvent::TrialStep { .. })
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

/// Where the display's lines go: above the bar on a terminal, else stamped lines on stderr.
struct Lines {
    tty: bool,
    bar: ProgressBar,
    /// When the last line was said.
    last: std::time::Instant,
}

impl Lines {
    fn say(&mut self, line: String) {
        self.last = std::time::Instant::now();
        if self.tty {
            // Wrapped between words to the terminal's width, as `status` wraps its lines.
            let width = crossterm::terminal::size().ok().map(|(w, _)| w);
            self.bar
                .println(crate::console::table::paragraph(&line, width));
        } else {
            // Every line of a log says when (once, when all output is stamped already).
            if crate::console::stamping() {
                crate::errln!("{line}");
            } else {
                crate::errln!("{}", crate::console::stamp(&line));
            }
        }
    }
}

/// How often a headless display without news says what still runs (issue: `tasks --check | tee`
/// silent for minutes during an image build).
pub const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(30);

/// The heartbeat line: trials done of planned and what runs, by phase, with the longest-running
/// phase's age (`still running: 12/50 trials done · 2 building, 1 agent (longest 4m 10s)`).
fn still_running(
    counts: &Counts,
    running: &std::collections::HashMap<i64, (TrialStatus, std::time::Instant)>,
) -> String {
    let mut line = format!(
        "still running: {}/{} trials done",
        counts.done, counts.total
    );
    if running.is_empty() {
        line.push_str(" · none running (starting or cleaning up)");
        return line;
    }
    let phases = [
        TrialStatus::Queued,
        TrialStatus::Building,
        TrialStatus::Agent,
        TrialStatus::Verifying,
    ];
    let parts: Vec<String> = phases
        .iter()
        .filter_map(|p| {
            let n = running.values().filter(|(s, _)| s == p).count();
            (n > 0).then(|| format!("{n} {}", p.as_str()))
        })
        .collect();
    let oldest = running
        .values()
        .filter(|(s, _)| *s != TrialStatus::Queued)
        .map(|(_, t)| t.elapsed())
        .max();
    line.push_str(" · ");
    line.push_str(&parts.join(", "));
    if let Some(age) = oldest {
        line.push_str(&format!(
            " (longest in its phase {})",
            crate::analysis::forecast::duration(age.as_secs_f64())
        ));
    }
    line
}

#[derive(Default)]
struct Counts {
    total: usize,
    done: usize,
    pass: usize,
    fail: usize,
    errors: usize,
    /// Trials (task, condition, trial index) counted since `Started`, with the outcome counted:
    /// a retried trial's new verdict replaces its old one rather than adding to `done`
    /// (`[51/50]` otherwise).
    seen: std::collections::HashMap<(String, String, u32), Option<Outcome>>,
}

impl Counts {
    /// Counts from `so_far`: its finished trials done, each in its outcome's bucket.
    fn start(&mut self, so_far: &SoFar) {
        *self = Counts {
            total: so_far.total,
            ..Counts::default()
        };
        for (k, outcome) in &so_far.finished {
            let key = (k.task_id.clone(), k.condition.clone(), k.trial_index);
            if self.seen.insert(key, *outcome).is_none() {
                self.done += 1;
                self.bucket(*outcome, 1);
            }
        }
    }

    fn record(&mut self, row: &TrialRow) {
        let key = (row.task_id.clone(), row.condition.clone(), row.trial_index);
        match self.seen.insert(key, row.outcome) {
            Some(before) => self.bucket(before, -1),
            None => self.done += 1,
        }
        self.bucket(row.outcome, 1);
        // A retry of a trial finished before this display started was already in `done`.
        if self.total > 0 {
            self.done = self.done.min(self.total);
        }
    }
    fn bucket(&mut self, outcome: Option<Outcome>, by: isize) {
        let n = match outcome {
            Some(Outcome::Pass) => &mut self.pass,
            Some(Outcome::Fail) => &mut self.fail,
            _ => &mut self.errors,
        };
        *n = n.saturating_add_signed(by);
    }
    fn message(&self) -> String {
        format!(
            "pass {} · fail {} · other {}",
            self.pass, self.fail, self.errors
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(task: &str, index: u32, attempt: u32, outcome: Outcome) -> TrialRow {
        TrialRow {
            task_id: task.into(),
            condition: "no-skills".into(),
            trial_index: index,
            attempt,
            outcome: Some(outcome),
            status: TrialStatus::Done,
            ..Default::default()
        }
    }

    #[test]
    fn a_resumed_run_counts_the_verdicts_it_had() {
        let key = |task: &str| crate::domain::TrialKey {
            task_id: task.into(),
            condition: "no-skills".into(),
            trial_index: 1,
        };
        let mut c = Counts::default();
        c.start(&SoFar {
            total: 4,
            finished: vec![
                (key("a"), Some(Outcome::Fail)),
                (key("b"), Some(Outcome::Pass)),
                (key("c"), Some(Outcome::Pass)),
            ],
        });
        assert_eq!((c.done, c.pass, c.fail, c.errors), (3, 2, 1, 0));
        // The failed trial retried, the last one run: every verdict counted once.
        c.record(&done("a", 1, 2, Outcome::Pass));
        c.record(&done("d", 1, 1, Outcome::Fail));
        assert_eq!((c.done, c.pass, c.fail, c.errors), (4, 3, 1, 0));
        assert_eq!(c.message(), "pass 3 · fail 1 · other 0");
    }

    #[test]
    fn a_retried_trial_replaces_its_verdict_and_never_counts_past_the_plan() {
        let mut c = Counts {
            total: 2,
            ..Default::default()
        };
        c.record(&done("a", 1, 1, Outcome::Fail));
        c.record(&done("b", 1, 1, Outcome::Pass));
        assert_eq!((c.done, c.pass, c.fail), (2, 1, 1));
        // The failed trial retried: still 2/2, now two passes.
        c.record(&done("a", 1, 2, Outcome::Pass));
        assert_eq!((c.done, c.pass, c.fail), (2, 2, 0));
        assert_eq!(
            trial_line(&done("a", 1, 2, Outcome::Pass), c.done, c.total)[..5],
            *"[2/2]"
        );
        // Counting from the middle of a run: a retry of a trial finished before the display
        // started is not a new one.
        let mut c = Counts {
            total: 2,
            done: 2,
            ..Default::default()
        };
        c.record(&done("a", 1, 2, Outcome::Pass));
        assert_eq!(c.done, 2);
    }

    #[test]
    fn the_heartbeat_names_what_runs_by_phase() {
        let c = Counts {
            total: 50,
            done: 12,
            ..Default::default()
        };
        let now = std::time::Instant::now();
        let running = std::collections::HashMap::from([
            (1, (TrialStatus::Building, now)),
            (2, (TrialStatus::Building, now)),
            (3, (TrialStatus::Agent, now)),
        ]);
        let line = still_running(&c, &running);
        assert!(
            line.starts_with("still running: 12/50 trials done · 2 building, 1 agent (longest"),
            "{line}"
        );
        assert_eq!(
            still_running(&c, &Default::default()),
            "still running: 12/50 trials done · none running (starting or cleaning up)"
        );
    }
}
