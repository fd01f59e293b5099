//! Facts about this machine that decide whether a run's owner process is alive: whether a
//! process id exists here, and this machine's host name (both compared with `runs.owner_pid`
//! and `runs.owner_host`).

/// True when a process with this id exists on this machine (`kill(pid, 0)`: existence and
/// permission, nothing sent; `EPERM` means it exists under another user).
pub fn process_alive(pid: u32) -> bool {
    // SAFETY: kill with signal 0 sends nothing; it only checks the process id.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// This machine's host name (`/proc/sys/kernel/hostname`; `localhost` when it cannot be read).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}
