//! The signals a long-running command listens to: Ctrl-C and SIGTERM (stop cleanly; a second one
//! exits at once) and SIGHUP when the SSH session drops (the run goes on headless, its output
//! sent to the run's log, [`super::headless`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;

use super::headless::redirect_output;

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
    /// True when the same command resumes what a stop leaves (a run, an experiment); false for
    /// a dry run, which starts afresh each time: the stop messages say which.
    pub resumable: bool,
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
    /// alive and its output where the operator sent it. `resumable`: see [`Signals::resumable`].
    pub fn install(log: Option<PathBuf>, resumable: bool) -> Signals {
        let signals = Signals {
            shutdown: CancellationToken::new(),
            hangup: CancellationToken::new(),
            terminal_held: Arc::new(AtomicBool::new(false)),
            resumable,
        };
        let (shutdown, hangup) = (signals.shutdown.clone(), signals.hangup.clone());
        let resumable = signals.resumable;
        let held = signals.terminal_held.clone();
        // The listeners exist from here on, each keeping a signal that comes while it is not
        // awaited: a Ctrl-C before the task first runs, or a second one while the first is
        // being announced, is never lost (a `ctrl_c()` future made anew per loop missed it).
        use tokio::signal::unix::{SignalKind, signal};
        let mut int = signal(SignalKind::interrupt()).ok();
        let mut term = signal(SignalKind::terminate()).ok();
        let mut hup = if sighup_ignored() {
            None
        } else {
            signal(SignalKind::hangup()).ok()
        };
        tokio::spawn(async move {
            let mut stopping = false;
            loop {
                tokio::select! {
                    Some(()) = recv(&mut int) => {}
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
                    quit_at_once(resumable);
                }
                stopping = true;
                crate::errln!("\n{}", stopping_line(resumable));
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

/// What the first Ctrl-C or SIGTERM prints: a clean stop, and what comes of it — resumed by the
/// same command, or for a dry run (`resumable` false) replaced by the next one.
pub fn stopping_line(resumable: bool) -> &'static str {
    if resumable {
        "stopping: removing containers and saving state; the same command resumes it (Ctrl-C again to quit at once)"
    } else {
        "stopping the dry run: removing containers; a dry run is not resumed, the next one starts afresh (Ctrl-C again to quit at once)"
    }
}

/// A second Ctrl-C or SIGTERM, in the dashboard or headless: quit at once (docs/operations.md),
/// saying what is left. Running attempts are left as a kill would leave them; the next `run` of
/// the same command marks them interrupted, queues them again and removes their containers (a
/// dry run, `resumable` false, is made afresh instead).
pub fn quit_at_once(resumable: bool) -> ! {
    if resumable {
        crate::errln!(
            "quit at once: running trials are left as they are; the same command resumes the run \
             (it queues them again and removes their containers)"
        );
    } else {
        crate::errln!(
            "quit at once: the dry run's containers are removed when the next dry run starts afresh"
        );
    }
    std::process::exit(crate::cli::exit_code::INTERRUPTED)
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
