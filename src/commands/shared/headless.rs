//! A run without a terminal: the log it writes beside its database, and sending this process's
//! output there once the terminal is gone.

use std::path::{Path, PathBuf};

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
/// from `/dev/null`: what a process does when its terminal is gone. Every line written after
/// carries the time ([`crate::console::stamp_lines`]).
///
/// What the standard output still buffers was meant for the terminal that is gone (the
/// dashboard's last frame, whose write failed: escape sequences) and is flushed into
/// `/dev/null` first, so none of it reaches the log.
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
    let sink = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
    unsafe {
        libc::dup2(null.as_raw_fd(), 0);
        libc::dup2(sink.as_raw_fd(), 1);
        libc::dup2(sink.as_raw_fd(), 2);
    }
    {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
    }
    unsafe {
        libc::dup2(file.as_raw_fd(), 1);
        libc::dup2(file.as_raw_fd(), 2);
    }
    crate::console::stamp_lines();
    Ok(())
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
}
