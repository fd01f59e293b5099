//! What every long-running command shares with the operator's session: signals (Ctrl-C, SIGTERM,
//! and SIGHUP when the SSH session drops), headless progress lines, the dashboard's theme and poll
//! interval, the log file a run writes beside its database once it goes on without a terminal,
//! and the command line that resumes a run.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use color_eyre::eyre::Result;
use indicatif::{ProgressBar, ProgressStyle};
use tokio_util::sync::CancellationToken;

use crate::config::FileConfig;
use crate::engine::EngineEvent;
use crate::skillsbench::condition::condition_label;
use crate::store::{Outcome, TrialRow};
use crate::tui::theme::Theme;

/// The theme from the flag, else the config file, else `dark`; `NO_COLOR` applied.
///
/// # Errors
/// An unknown theme or a bad theme file.
pub fn pick_theme(flag: Option<&str>, file: &FileConfig) -> Result<Theme> {
    let name = flag.or(file.ui.theme.as_deref()).unwrap_or("dark");
    Ok(Theme::from_env(name)?)
}

/// The signals a run listens to.
#[derive(Clone)]
pub struct Signals {
    /// Fires on the first Ctrl-C or SIGTERM: stop cleanly. A second one exits at once (the next
    /// run recovers what it left).
    pub shutdown: CancellationToken,
    /// Fires on SIGHUP (the terminal went away): the dashboard closes without touching the
    /// terminal and the run goes on headless, its output redirected to the log file — at once
    /// when no dashboard holds the terminal, else by the dashboard's owner once it has stopped
    /// drawing (see [`Signals::hold_terminal`]).
    pub hangup: CancellationToken,
    /// Set while a dashboard draws on standard output (see [`Signals::hold_terminal`]).
    terminal_held: Arc<AtomicBool>,
}

/// While alive, a dashboard draws on standard output: a SIGHUP then only fires
/// [`Signals::hangup`] and leaves the redirection to the log to whoever holds this, after the
/// dashboard's loop has ended. Redirecting under a dashboard that is halfway through a frame
/// would send that frame's control bytes into the log.
pub struct TerminalHold(Arc<AtomicBool>);

impl Drop for TerminalHold {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

impl Signals {
    /// Installs the handlers. `log` is where output goes after a SIGHUP; SIGHUP is left alone
    /// when the process started with it ignored (under `nohup`), which already keeps the run
    /// alive and its output where the operator sent it.
    pub fn install(log: Option<PathBuf>) -> Signals {
        let signals = Signals {
            shutdown: CancellationToken::new(),
            hangup: CancellationToken::new(),
            terminal_held: Arc::new(AtomicBool::new(false)),
        };
        let (shutdown, hangup) = (signals.shutdown.clone(), signals.hangup.clone());
        let held = signals.terminal_held.clone();
        tokio::spawn(async move {
            use tokio::signal::unix::{SignalKind, signal};
            let mut term = signal(SignalKind::terminate()).ok();
            let mut hup = if sighup_ignored() {
                None
            } else {
                signal(SignalKind::hangup()).ok()
            };
            let mut stopping = false;
            loop {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    Some(()) = recv(&mut term) => {}
                    Some(()) = recv(&mut hup) => {
                        hangup.cancel();
                        if let Some(log) = &log
                            && !held.load(Ordering::SeqCst)
                        {
                            let _ = redirect_output(log);
                        }
                        continue;
                    }
                }
                if stopping {
                    std::process::exit(crate::cli::exit_code::INTERRUPTED);
                }
                stopping = true;
                crate::errln!(
                    "\nstopping: removing containers and saving state (Ctrl-C again to quit at once)"
                );
                shutdown.cancel();
            }
        });
        signals
    }

    /// Marks standard output as a dashboard's until the returned guard drops: a SIGHUP meanwhile
    /// fires [`Signals::hangup`] without redirecting output, and the holder calls
    /// [`redirect_output`] once the dashboard has returned.
    pub fn hold_terminal(&self) -> TerminalHold {
        self.terminal_held.store(true, Ordering::SeqCst);
        TerminalHold(self.terminal_held.clone())
    }
}

async fn recv(sig: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match sig.as_mut() {
        Some(s) => s.recv().await,
        None => std::future::pending().await,
    }
}

/// True when SIGHUP is ignored (the process runs under `nohup`).
fn sighup_ignored() -> bool {
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::sigaction(libc::SIGHUP, std::ptr::null(), &mut old) };
    rc == 0 && old.sa_sigaction == libc::SIG_IGN
}

/// The log a run writes beside its database once it runs without a terminal:
/// `<db folder>/<run>.log`.
pub fn run_log(db: &Path, run: &str) -> PathBuf {
    let dir = db
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    dir.join(format!(
        "{}.log",
        crate::skillsbench::condition::sanitize_slug(run)
    ))
}

/// Sends this process's standard output and error to `log` (appending) and reads standard input
/// from `/dev/null`: what a process does when its terminal is gone.
///
/// # Errors
/// The log cannot be opened.
pub fn redirect_output(log: &Path) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    let null = std::fs::File::open("/dev/null")?;
    unsafe {
        libc::dup2(null.as_raw_fd(), 0);
        libc::dup2(file.as_raw_fd(), 1);
        libc::dup2(file.as_raw_fd(), 2);
    }
    Ok(())
}

/// The command line that resumes the run this process runs: this process's own arguments (with
/// values of `--env NAME=VALUE` dropped, which may be secrets, and `--detach` dropped), run in
/// the current folder, with `--run NAME` added when the name was derived.
pub fn resume_command(run: &str) -> String {
    let mut args: Vec<String> = std::env::args().collect();
    if let Some(first) = args.first_mut() {
        let p = PathBuf::from(&*first);
        if p.components().count() > 1
            && p.is_relative()
            && let Ok(abs) = std::fs::canonicalize(&p)
        {
            *first = abs.display().to_string();
        }
    }
    let mut out: Vec<String> = Vec::new();
    let mut it = args.into_iter().peekable();
    let mut has_run = false;
    while let Some(a) = it.next() {
        if a == "--detach" {
            continue;
        }
        if a == "--env" {
            out.push(a);
            if let Some(v) = it.next() {
                out.push(v.split('=').next().unwrap_or_default().to_string());
            }
            continue;
        }
        if let Some(v) = a.strip_prefix("--env=") {
            out.push(format!("--env={}", v.split('=').next().unwrap_or_default()));
            continue;
        }
        has_run |= a == "--run" || a.starts_with("--run=");
        out.push(a);
    }
    if !has_run {
        out.push("--run".into());
        out.push(run.into());
    }
    let cwd = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|_| ".".into());
    let quoted: Vec<String> = out.iter().map(|a| quote(a)).collect();
    format!("cd {} && {}", quote(&cwd), quoted.join(" "))
}

/// A word as the shell reads it back.
fn quote(word: &str) -> String {
    shlex::try_quote(word)
        .map(|q| q.into_owned())
        .unwrap_or_else(|_| word.replace('\0', ""))
}

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
        .filter(|t| t.status == crate::store::TrialStatus::Done)
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
                let line = format!("[{level}] {}", crate::text::sanitize(&message));
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
                crate::text::sanitize(e.lines().next().unwrap_or_default())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_logs_sit_beside_the_database() {
        assert_eq!(
            run_log(Path::new("/data/s.db"), "my run"),
            PathBuf::from("/data/my-run.log")
        );
        assert_eq!(run_log(Path::new("s.db"), "r"), PathBuf::from("./r.log"));
    }

    #[test]
    fn quoting_round_trips_through_the_shell() {
        assert_eq!(quote("plain-word_1.toml"), "plain-word_1.toml");
        assert_eq!(quote("two words"), "'two words'");
        assert_eq!(quote("it's"), "\"it's\"");
    }
}
