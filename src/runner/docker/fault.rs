//! Which infrastructure fault a Docker API error is ([`Fault`]): the daemon's HTTP status and
//! message, hyper's connect and I/O errors. Every Docker API error met during an attempt is a
//! fault (the task's own verdicts never arrive as API errors).

use crate::runner::Fault;

/// The fault a bollard error stands for. Every Docker API error met during an attempt is a
/// fault (the task's own verdicts never arrive as API errors); which one is read from the
/// daemon's status and message, or from the transport error's kind.
pub fn fault_of(e: &bollard::errors::Error) -> Fault {
    use bollard::errors::Error as E;
    match e {
        E::DockerResponseServerError {
            status_code,
            message,
        } => Fault::of_message(message).unwrap_or(match *status_code {
            404 | 409 if mentions_container(message) => Fault::ContainerGone,
            s if s >= 500 => Fault::DaemonError,
            _ => Fault::Refused,
        }),
        E::RequestTimeoutError => Fault::DaemonTimeout,
        E::SocketNotFoundError(_) | E::UnsupportedURISchemeError { .. } => Fault::DaemonUnreachable,
        E::HyperLegacyError { err } => {
            if err.is_connect() {
                Fault::DaemonUnreachable
            } else {
                io_source(err).map_or(Fault::ConnectionLost, of_io)
            }
        }
        E::HyperResponseError { err } => {
            if err.is_timeout() {
                Fault::DaemonTimeout
            } else {
                io_source(err).map_or(Fault::ConnectionLost, of_io)
            }
        }
        E::IOError { err } => of_io(err),
        E::DockerStreamError { error } | E::DockerContainerWaitError { error, .. } => {
            Fault::of_message(error).unwrap_or(Fault::DaemonError)
        }
        // A body cut short decodes as broken JSON.
        E::JsonDataError { .. } | E::JsonSerdeError { .. } | E::StrParseError { .. } => {
            Fault::ConnectionLost
        }
        _ => Fault::DaemonError,
    }
}

/// The fault of a transport-level I/O error.
fn of_io(e: &std::io::Error) -> Fault {
    use std::io::ErrorKind as K;
    if crate::runner::is_disk_full(e) {
        return Fault::DiskFull;
    }
    match e.kind() {
        K::NotFound | K::ConnectionRefused | K::PermissionDenied | K::AddrNotAvailable => {
            Fault::DaemonUnreachable
        }
        K::TimedOut => Fault::DaemonTimeout,
        K::OutOfMemory => Fault::OutOfMemory,
        _ => Fault::ConnectionLost,
    }
}

/// The first I/O error in an error's source chain.
fn io_source<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a std::io::Error> {
    let mut cur = e.source();
    while let Some(s) = cur {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        cur = s.source();
    }
    None
}

fn mentions_container(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("container") || m.contains("exec")
}

#[cfg(test)]
mod tests {
    use super::*;
    use bollard::errors::Error as E;

    fn server(status_code: u16, message: &str) -> E {
        E::DockerResponseServerError {
            status_code,
            message: message.to_string(),
        }
    }

    /// Messages as Docker 20.10 and containerd send them (from real daemons; see also
    /// `tests/docker/faults.rs`, which provokes each against a live daemon).
    #[test]
    fn daemon_answers_are_classified_by_status_and_message() {
        let table: &[(E, Fault)] = &[
            (
                server(404, "No such container: 3f2a9c1b"),
                Fault::ContainerGone,
            ),
            (
                server(409, "Container 3f2a9c1b is not running"),
                Fault::ContainerGone,
            ),
            (
                server(404, "No such exec instance: 8d1e"),
                Fault::ContainerGone,
            ),
            (
                server(
                    500,
                    "write /var/lib/docker/overlay2/x/diff/f: no space left on device",
                ),
                Fault::DiskFull,
            ),
            (
                server(
                    500,
                    "failed to register layer: Error processing tar file(exit status 1): write /usr/bin/x: no space left on device",
                ),
                Fault::DiskFull,
            ),
            (
                server(500, "failed to register layer: layer does not exist"),
                Fault::ImageStore,
            ),
            (
                server(
                    500,
                    "error creating overlay mount to /var/lib/docker/overlay2/x/merged: invalid argument",
                ),
                Fault::ImageStore,
            ),
            (
                server(500, "fork/exec /usr/bin/runc: cannot allocate memory"),
                Fault::OutOfMemory,
            ),
            (
                server(500, "containerd: unexpected EOF"),
                Fault::DaemonError,
            ),
            (server(503, "service unavailable"), Fault::DaemonError),
            (
                server(
                    400,
                    "Invalid container name (ss-x), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed",
                ),
                Fault::Refused,
            ),
            (E::RequestTimeoutError, Fault::DaemonTimeout),
            (
                E::SocketNotFoundError("/var/run/docker.sock".into()),
                Fault::DaemonUnreachable,
            ),
            (
                E::IOError {
                    err: std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
                },
                Fault::DaemonUnreachable,
            ),
            (
                E::IOError {
                    err: std::io::Error::from(std::io::ErrorKind::ConnectionReset),
                },
                Fault::ConnectionLost,
            ),
            (
                E::IOError {
                    err: std::io::Error::from_raw_os_error(libc::ENOSPC),
                },
                Fault::DiskFull,
            ),
            (
                E::DockerStreamError {
                    error: "unexpected EOF".into(),
                },
                Fault::DaemonError,
            ),
        ];
        for (e, want) in table {
            assert_eq!(fault_of(e), *want, "{e}");
        }
    }
}
