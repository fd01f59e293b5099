//! Faults are not verdicts. Every error met on the way of an attempt is either a **verdict** about
//! the task (the verifier's reward; an agent or verifier timeout the task caused; a reward file the
//! task's own test failed to write; an image the task's own Dockerfile cannot build) or an
//! **infrastructure fault**: the daemon unreachable, a connection cut, a daemon error, a container
//! gone after a restart, the image store failing, a full disk, a machine out of memory. A fault
//! marks the attempt `interrupted` and re-queues the trial; it never becomes a verdict.
//!
//! [`Fault`] is that classification for errors that are faults; the Docker backend reads bollard's error
//! values (`runner/docker/fault.rs`: the daemon's HTTP status and message, hyper's connect and I/O
//! errors) and [`Fault::of_message`] the text a daemon or a container prints (a build stream's error, a
//! verifier's output).

use serde::{Deserialize, Serialize};

/// An infrastructure fault: why an attempt was cut off without a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    /// The daemon cannot be reached: no socket, connection refused, no route, TLS or DNS failure.
    DaemonUnreachable,
    /// A connection to the daemon broke in the middle of a request or stream (reset, early end).
    ConnectionLost,
    /// The daemon did not answer in time.
    DaemonTimeout,
    /// The daemon answered with a server error (HTTP 5xx) not otherwise classified.
    DaemonError,
    /// The container or an exec in it vanished or stopped under the attempt (a daemon restart
    /// stops every container; a `docker rm`; an exec that no longer exists).
    ContainerGone,
    /// The daemon's image or layer store failed (layers missing, overlay mounts failing).
    ImageStore,
    /// No space left (or a quota exceeded) on the daemon's disk, in the container or on this
    /// machine.
    DiskFull,
    /// The daemon or the machine ran out of memory.
    OutOfMemory,
    /// The daemon refused a request skillscope made (HTTP 4xx other than the above): a fault of
    /// skillscope's, not the task's.
    Refused,
    /// This machine could not read or write a file skillscope needs (permissions, I/O errors).
    LocalIo,
}

impl Fault {
    /// Every fault, in display order.
    pub const ALL: [Fault; 10] = [
        Fault::DaemonUnreachable,
        Fault::ConnectionLost,
        Fault::DaemonTimeout,
        Fault::DaemonError,
        Fault::ContainerGone,
        Fault::ImageStore,
        Fault::DiskFull,
        Fault::OutOfMemory,
        Fault::Refused,
        Fault::LocalIo,
    ];

    /// Stored text (`daemon-unreachable`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Fault::DaemonUnreachable => "daemon-unreachable",
            Fault::ConnectionLost => "connection-lost",
            Fault::DaemonTimeout => "daemon-timeout",
            Fault::DaemonError => "daemon-error",
            Fault::ContainerGone => "container-gone",
            Fault::ImageStore => "image-store",
            Fault::DiskFull => "disk-full",
            Fault::OutOfMemory => "out-of-memory",
            Fault::Refused => "refused",
            Fault::LocalIo => "local-io",
        }
    }

    /// A phrase for messages ("the Docker daemon is unreachable", …).
    pub fn describe(self) -> &'static str {
        match self {
            Fault::DaemonUnreachable => "the Docker daemon is unreachable",
            Fault::ConnectionLost => "the connection to the Docker daemon broke",
            Fault::DaemonTimeout => "the Docker daemon did not answer in time",
            Fault::DaemonError => "the Docker daemon failed",
            Fault::ContainerGone => "the container is gone (daemon restarted or container removed)",
            Fault::ImageStore => "the Docker image store failed",
            Fault::DiskFull => "a disk is full",
            Fault::OutOfMemory => "out of memory",
            Fault::Refused => "the Docker daemon refused a request of skillscope's",
            Fault::LocalIo => "a local file operation failed",
        }
    }

    /// True when the fault says something about the daemon's health (so the scheduler checks the
    /// host before placing more trials there), false when it concerns one container or request.
    pub fn suspects_host(self) -> bool {
        matches!(
            self,
            Fault::DaemonUnreachable
                | Fault::ConnectionLost
                | Fault::DaemonTimeout
                | Fault::DaemonError
                | Fault::ContainerGone
                | Fault::ImageStore
                | Fault::OutOfMemory
        )
    }

    /// The fault a message names, if it names one: what a daemon's error text, a build stream or a
    /// process in a container says when the infrastructure failed it. `None` for everything else
    /// (the task's own errors). Matched case-insensitively on the phrases the Linux kernel,
    /// containerd and dockerd use.
    pub fn of_message(text: &str) -> Option<Fault> {
        let t = text.to_ascii_lowercase();
        let any = |needles: &[&str]| needles.iter().any(|n| t.contains(n));
        if any(&["no space left on device", "disk quota exceeded", "enospc"]) {
            Some(Fault::DiskFull)
        } else if any(&[
            "cannot allocate memory",
            "out of memory",
            "oom-kill",
            "oom kill",
        ]) {
            Some(Fault::OutOfMemory)
        } else if any(&[
            "failed to register layer",
            "layer does not exist",
            "error creating overlay mount",
            "failed to mount overlay",
            "error getting image",
            "unknown blob",
            "content digest",
            "failed to get layer",
            "image store",
        ]) {
            Some(Fault::ImageStore)
        } else if any(&[
            "no such container",
            "no such exec",
            "is not running",
            "is restarting",
            "is paused",
            "is marked for removal",
            "removal of container",
        ]) {
            Some(Fault::ContainerGone)
        } else if any(&[
            "cannot connect to the docker daemon",
            "connection refused",
            "broken pipe",
            "connection reset",
        ]) {
            Some(Fault::ConnectionLost)
        } else {
            None
        }
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_errors_name_no_fault() {
        for text in [
            "The command '/bin/sh -c false' returned a non-zero code: 1",
            "COPY failed: file not found in build context or excluded by .dockerignore: stat data.csv: file does not exist",
            "pull access denied for ubuntu, repository does not exist or may require 'docker login'",
            "AssertionError: expected 3 rows, got 2",
        ] {
            assert_eq!(Fault::of_message(text), None, "{text}");
        }
        assert_eq!(
            Fault::of_message("dd: error writing '/fill': No space left on device"),
            Some(Fault::DiskFull)
        );
    }

    #[test]
    fn stored_names_are_unique() {
        let mut names: Vec<&str> = Fault::ALL.iter().map(|f| f.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Fault::ALL.len());
    }
}
