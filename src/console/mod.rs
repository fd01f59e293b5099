//! What the operator's terminal sees from the command line, outside the dashboard: errors as one
//! line (`error: …`) with a hint where one helps, colour only on a terminal and never under
//! `NO_COLOR` (<https://no-color.org>), a backtrace only for internal errors (panics: bugs), and
//! output that survives a closed pipe.
//!
//! Closed pipes: commands that own no engine restore the default `SIGPIPE` action, so `skillscope
//! status | head -2` ends quietly the way `cat` does. Commands that run trials keep `SIGPIPE`
//! ignored (the run must not die with its reader) and print through [`outln!`](crate::outln) and
//! [`errln!`](crate::errln), which drop what cannot be written.

pub mod table;

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};

/// An error for the operator with a hint on what to do about it. Its `Display` is the message;
/// [`print_error`] prints the hint on a line of its own.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Hinted {
    /// What went wrong.
    pub message: String,
    /// What to do (one or more lines).
    pub hint: String,
}

/// `Err(Hinted { message, hint })` as an eyre report.
pub fn hinted(message: impl Into<String>, hint: impl Into<String>) -> color_eyre::eyre::Report {
    Hinted {
        message: message.into(),
        hint: hint.into(),
    }
    .into()
}

/// True when text written to standard error may carry colour: it is a terminal and `NO_COLOR` is
/// unset or empty.
pub fn stderr_colour() -> bool {
    std::io::stderr().is_terminal() && !no_color()
}

/// True when `NO_COLOR` is set to a non-empty value.
pub fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

const RED_BOLD: &str = "\x1b[1;31m";
const CYAN_BOLD: &str = "\x1b[1;36m";
const RESET: &str = "\x1b[0m";

/// The text [`print_error`] writes for `report`: `error: ` and the chain of causes joined with
/// `: ` (each sanitized: error text may quote files and servers), continuation lines indented,
/// then `hint: …` for every [`Hinted`] in the chain. With `colour`, the two labels are bold red
/// and bold cyan.
pub fn error_text(report: &color_eyre::eyre::Report, colour: bool) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut hints: Vec<String> = Vec::new();
    for cause in report.chain() {
        if let Some(h) = cause.downcast_ref::<Hinted>() {
            hints.push(h.hint.clone());
        }
        let text = crate::sanitize::text(&cause.to_string());
        let text = text.trim_end();
        // A context that repeats its cause (`#[error(transparent)]`, `{0}`) adds nothing.
        if text.is_empty() || parts.last().is_some_and(|p| p.ends_with(text)) {
            continue;
        }
        parts.push(text.to_string());
    }
    let (err, hint, reset) = if colour {
        (RED_BOLD, CYAN_BOLD, RESET)
    } else {
        ("", "", "")
    };
    let mut out = String::new();
    let message = parts.join(": ");
    for (i, line) in message.lines().enumerate() {
        if i == 0 {
            let _ = writeln!(out, "{err}error:{reset} {line}");
        } else {
            let _ = writeln!(out, "  {line}");
        }
    }
    for h in hints {
        for (i, line) in crate::sanitize::text(&h).lines().enumerate() {
            if i == 0 {
                let _ = writeln!(out, "{hint}hint:{reset} {line}");
            } else {
                let _ = writeln!(out, "  {line}");
            }
        }
    }
    out
}

/// Writes `report` to standard error as [`error_text`] says (colour per [`stderr_colour`]).
/// Write failures are ignored: there is nowhere else to report them.
pub fn print_error(report: &color_eyre::eyre::Report) {
    let text = error_text(report, stderr_colour());
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// Installs the panic hook: a panic is a bug in skillscope, so it prints `error: internal error`,
/// where it happened and a backtrace (always captured, whatever `RUST_BACKTRACE` says), and asks
/// for a report. It never panics itself when standard error is closed.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let (err, reset) = if stderr_colour() {
            (RED_BOLD, RESET)
        } else {
            ("", "")
        };
        let backtrace = std::backtrace::Backtrace::force_capture();
        let mut e = std::io::stderr().lock();
        let _ = writeln!(
            e,
            "{err}error:{reset} internal error (a bug in skillscope): {}{at}\n\
             please report it with the backtrace below\n{backtrace}",
            crate::sanitize::text(&what)
        );
    }));
}

/// Restores the default action of `SIGPIPE` (end the process quietly), as every Unix filter has
/// it; Rust starts programs with it ignored.
pub fn default_sigpipe() {
    // SAFETY: setting a signal disposition to SIG_DFL has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Ignores `SIGPIPE` again (a write to a closed pipe fails with `EPIPE` instead).
pub fn ignore_sigpipe() {
    // SAFETY: as above.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// Set once output goes to a log rather than a person ([`stamp_lines`]).
static STAMPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// From now on every line [`outln!`] and [`errln!`] write carries the UTC time in front: for a
/// run whose output goes to a log (after an SSH drop, `--detach`, `nohup`, a pipe), where a
/// line without a time cannot be placed. The final `error: …` line ([`print_error`]) stays plain.
pub fn stamp_lines() {
    STAMPING.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Calls [`stamp_lines`] when standard error is a regular file — `nohup … >run.log 2>&1`, the log of
/// a `--detach`ed run — for the commands that run for hours; a terminal or a pipe is left as it
/// is (a pipe still gets stamped progress lines, see `commands::shared::progress`).
pub fn stamp_lines_into_files() {
    let regular = std::fs::metadata("/proc/self/fd/2").is_ok_and(|m| m.file_type().is_file());
    if regular {
        stamp_lines();
    }
}

/// True once [`stamp_lines`] was called.
pub fn stamping() -> bool {
    STAMPING.load(std::sync::atomic::Ordering::SeqCst)
}

/// `text` with the UTC time in front of each of its lines (`2026-11-29 00:31:02Z text`); an empty
/// line stays empty.
pub fn stamp(text: &str) -> String {
    let now = chrono::Utc::now().format("%Y-%m-%d %H:%M:%SZ").to_string();
    text.split('\n')
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("{now} {l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Writes one line (`args` and a newline) to `out`, stamped when [`stamping`]; what cannot be
/// written (a closed pipe) is dropped. What [`outln!`] and [`errln!`] call.
#[doc(hidden)]
pub fn write_line(mut out: impl Write, args: std::fmt::Arguments<'_>) {
    let text = args.to_string();
    let text = if stamping() { stamp(&text) } else { text };
    let _ = writeln!(out, "{text}");
}

/// `println!` that drops what cannot be written (a closed pipe) instead of panicking: for
/// commands that run trials, which must go on when their reader goes away. Stamped with the
/// time once [`stamp_lines`] was called.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        $crate::console::write_line(::std::io::stdout(), ::std::format_args!($($arg)*));
    }};
}

/// [`outln!`] for a line of text (not a table): wrapped between words to the terminal's width
/// with a hanging indent ([`table::paragraph`]), one line as it is into a pipe — so an 80-column
/// terminal never cuts a word.
#[macro_export]
macro_rules! sayln {
    ($($arg:tt)*) => {{
        $crate::console::write_line(
            ::std::io::stdout(),
            ::std::format_args!(
                "{}",
                $crate::console::table::paragraph(
                    &::std::format!($($arg)*),
                    $crate::console::table::terminal_width()
                )
            ),
        );
    }};
}

/// `eprintln!` that drops what cannot be written (see [`outln!`]).
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {{
        $crate::console::write_line(::std::io::stderr(), ::std::format_args!($($arg)*));
    }};
}

#[cfg(test)]
mod tests {
    use super::*;
    use color_eyre::eyre::{WrapErr, eyre};

    #[test]
    fn one_line_with_causes_and_the_hint_last() {
        let r: Result<(), _> = Err(hinted("no run named \"x\"", "runs in s.db: a, b"));
        let e = r.wrap_err("watching").unwrap_err();
        assert_eq!(
            error_text(&e, false),
            "error: watching: no run named \"x\"\nhint: runs in s.db: a, b\n"
        );
        let coloured = error_text(&e, true);
        assert!(coloured.starts_with("\x1b[1;31merror:\x1b[0m watching"));
    }

    #[test]
    fn control_sequences_in_errors_are_stripped_and_repeats_dropped() {
        let e = eyre!("bad \x1b[31mname\x1b[0m");
        let text = error_text(&e, false);
        assert!(!text.contains('\x1b'), "{text:?}");
        assert_eq!(text, "error: bad name\n");
    }
}
