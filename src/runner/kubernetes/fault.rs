//! The cluster's faults: every way a Kubernetes call or a trial's pod can fail that says nothing
//! about the task. [`KubeFault`] classifies them (from the API's HTTP status and reason, the
//! transport's error, a pod's phase and container states) and maps each onto the runner's
//! [`Fault`] taxonomy, so the engine treats them as it treats Docker's: the attempt is
//! interrupted and retried, never given a verdict.

use serde::{Deserialize, Serialize};

use crate::runner::{Fault, RunnerError};

/// Why a Kubernetes call or a trial's pod failed, when the failure is the infrastructure's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KubeFault {
    /// The connection settings are wrong: no kubeconfig, a context it does not have, a
    /// namespace that does not exist. The operator's to fix before a run.
    Config,
    /// The API server cannot be reached (connection refused, no route, TLS or DNS failure).
    ApiUnreachable,
    /// The API server did not answer in time.
    ApiTimeout,
    /// The API server answered with a server error (HTTP 5xx) not otherwise classified.
    ApiError,
    /// The API server refused a request skillscope made (HTTP 4xx: RBAC, admission, an invalid
    /// object): skillscope's or the operator's fault, not the task's.
    Refused,
    /// A pod stayed Pending past its deadline: unschedulable (no node has the CPUs or memory it
    /// requests) or refused for a namespace ResourceQuota the whole time.
    PendingTooLong,
    /// The node could not pull the pod's image (registry unreachable, image or tag missing,
    /// pull refused).
    ImagePull,
    /// The kubelet evicted the pod (node pressure) or it was preempted.
    Evicted,
    /// The pod's node stopped reporting (NotReady or Unknown; node lifecycle controller).
    NodeLost,
    /// The pod or its container is gone: deleted, terminated, restarted, or its PID 1 exited.
    PodGone,
    /// An exec's WebSocket stream ended without the exit status, or broke.
    StreamCut,
    /// The container was killed for exceeding its memory limit, or the node ran out of memory.
    OutOfMemory,
    /// This machine could not read or write a file skillscope needs.
    LocalIo,
}

impl KubeFault {
    /// Every fault, in display order.
    pub const ALL: [KubeFault; 13] = [
        KubeFault::Config,
        KubeFault::ApiUnreachable,
        KubeFault::ApiTimeout,
        KubeFault::ApiError,
        KubeFault::Refused,
        KubeFault::PendingTooLong,
        KubeFault::ImagePull,
        KubeFault::Evicted,
        KubeFault::NodeLost,
        KubeFault::PodGone,
        KubeFault::StreamCut,
        KubeFault::OutOfMemory,
        KubeFault::LocalIo,
    ];

    /// Stable text (`api-unreachable`, `pending-too-long`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            KubeFault::Config => "config",
            KubeFault::ApiUnreachable => "api-unreachable",
            KubeFault::ApiTimeout => "api-timeout",
            KubeFault::ApiError => "api-error",
            KubeFault::Refused => "refused",
            KubeFault::PendingTooLong => "pending-too-long",
            KubeFault::ImagePull => "image-pull",
            KubeFault::Evicted => "evicted",
            KubeFault::NodeLost => "node-lost",
            KubeFault::PodGone => "pod-gone",
            KubeFault::StreamCut => "stream-cut",
            KubeFault::OutOfMemory => "out-of-memory",
            KubeFault::LocalIo => "local-io",
        }
    }

    /// The runner's fault this one is recorded as (the engine's retry and host-suspicion rules
    /// read [`Fault`]): the API's reachability, timeout and errors as the daemon's; a pending,
    /// evicted, lost or deleted pod as a gone container (the trial's environment is lost, the
    /// cluster may be fine); an image pull as the image store; a cut stream as a lost
    /// connection.
    pub fn fault(self) -> Fault {
        match self {
            KubeFault::ApiUnreachable => Fault::DaemonUnreachable,
            KubeFault::ApiTimeout | KubeFault::PendingTooLong => Fault::DaemonTimeout,
            KubeFault::ApiError => Fault::DaemonError,
            KubeFault::Config | KubeFault::Refused => Fault::Refused,
            KubeFault::ImagePull => Fault::ImageStore,
            KubeFault::Evicted | KubeFault::NodeLost | KubeFault::PodGone => Fault::ContainerGone,
            KubeFault::StreamCut => Fault::ConnectionLost,
            KubeFault::OutOfMemory => Fault::OutOfMemory,
            KubeFault::LocalIo => Fault::LocalIo,
        }
    }
}

impl std::fmt::Display for KubeFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

const NO_SUCH_PATH: &str = "no such path: ";

/// A failed Kubernetes operation: what skillscope was doing, what the cluster said, and which
/// fault it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{context}: {message}")]
pub struct KubeError {
    /// What skillscope was doing (names the pod, object or endpoint).
    pub context: String,
    /// The cluster's (or transport's) message.
    pub message: String,
    /// Which fault it is.
    pub fault: KubeFault,
}

impl KubeError {
    /// An error of `fault` with a message.
    pub fn new(context: impl Into<String>, fault: KubeFault, message: impl Into<String>) -> Self {
        KubeError {
            context: context.into(),
            message: message.into(),
            fault,
        }
    }

    /// A `kube` client error, classified by [`classify`].
    pub fn kube(context: impl Into<String>, e: &kube::Error) -> Self {
        KubeError {
            context: context.into(),
            fault: classify(e),
            message: describe(e),
        }
    }

    /// A copy out of `path`, which does not exist in the environment.
    pub fn no_such_path(context: impl Into<String>, path: &str) -> Self {
        KubeError::new(context, KubeFault::Refused, format!("{NO_SUCH_PATH}{path}"))
    }

    /// The path of a [`KubeError::no_such_path`].
    pub fn missing_path(&self) -> Option<&str> {
        (self.fault == KubeFault::Refused)
            .then(|| self.message.strip_prefix(NO_SUCH_PATH))
            .flatten()
    }

    /// True for an API answer of 404 (the object does not exist).
    pub fn is_not_found(&self) -> bool {
        self.fault == KubeFault::Refused && self.message.starts_with("404 ")
    }
}

impl From<KubeError> for RunnerError {
    /// Recorded as the runner's infrastructure error with the mapped [`Fault`] (the message keeps
    /// the Kubernetes fault's name); a copy out of a path that does not exist as
    /// [`RunnerError::NotFound`].
    fn from(e: KubeError) -> RunnerError {
        if let Some(path) = e.missing_path() {
            return RunnerError::NotFound {
                path: path.to_string(),
            };
        }
        RunnerError::Backend {
            context: e.context,
            message: format!("{} ({})", e.message, e.fault),
            fault: e.fault.fault(),
        }
    }
}

/// The fault a `kube` client error stands for: the API's HTTP status (404/409/422/403 are
/// refusals of a request, 5xx the server's, 504 and `Timeout` a timeout), or the transport's
/// error kind (connect failures are unreachability, broken bodies a lost stream).
pub fn classify(e: &kube::Error) -> KubeFault {
    use kube::Error as E;
    match e {
        E::Api(status) => of_status(status.code, &status.reason),
        E::HyperError(err) => {
            if err.is_timeout() {
                KubeFault::ApiTimeout
            } else if err.is_incomplete_message() || err.is_body_write_aborted() {
                KubeFault::StreamCut
            } else {
                of_chain(err)
            }
        }
        E::Service(err) => of_chain(err.as_ref()),
        E::UpgradeConnection(err) => {
            use kube::client::UpgradeConnectionError as U;
            match err {
                U::ProtocolSwitch(status) => of_status(status.as_u16(), ""),
                U::GetPendingUpgrade(_) => KubeFault::StreamCut,
                _ => KubeFault::ApiError,
            }
        }
        E::ReadEvents(io) => of_io(io),
        E::SerdeError(_) | E::FromUtf8(_) => KubeFault::StreamCut,
        E::InferConfig(_) | E::InferKubeconfig(_) => KubeFault::Config,
        E::RustlsTls(_) | E::TlsRequired => KubeFault::ApiUnreachable,
        E::Auth(_) => KubeFault::Refused,
        _ => KubeFault::ApiError,
    }
}

/// The fault of an API answer with HTTP `code` and `reason`.
pub fn of_status(code: u16, reason: &str) -> KubeFault {
    match code {
        408 | 504 => KubeFault::ApiTimeout,
        _ if reason == "Timeout" => KubeFault::ApiTimeout,
        429 => KubeFault::ApiError,
        c if c >= 500 => KubeFault::ApiError,
        _ => KubeFault::Refused,
    }
}

/// A one-line message for a `kube` error: for API errors `<code> <reason>: <message>`.
pub fn describe(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => format!("{} {}: {}", s.code, s.reason, s.message),
        other => {
            let mut text = other.to_string();
            let mut cur = std::error::Error::source(other);
            while let Some(s) = cur {
                let more = s.to_string();
                if !text.contains(&more) {
                    text.push_str(": ");
                    text.push_str(&more);
                }
                cur = s.source();
            }
            text
        }
    }
}

/// The fault of a transport error, from the first I/O error in its source chain (or its text).
fn of_chain(e: &(dyn std::error::Error + 'static)) -> KubeFault {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = cur {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return of_io(io);
        }
        if s.is::<tokio::time::error::Elapsed>() {
            return KubeFault::ApiTimeout;
        }
        cur = s.source();
    }
    let text = e.to_string().to_ascii_lowercase();
    if text.contains("timed out") || text.contains("timeout") || text.contains("elapsed") {
        KubeFault::ApiTimeout
    } else if text.contains("connect") || text.contains("dns") || text.contains("certificate") {
        KubeFault::ApiUnreachable
    } else {
        KubeFault::StreamCut
    }
}

/// The fault of a transport-level I/O error.
pub fn of_io(e: &std::io::Error) -> KubeFault {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::NotFound
        | K::ConnectionRefused
        | K::PermissionDenied
        | K::AddrNotAvailable
        | K::HostUnreachable
        | K::NetworkUnreachable => KubeFault::ApiUnreachable,
        K::TimedOut => KubeFault::ApiTimeout,
        K::OutOfMemory => KubeFault::OutOfMemory,
        _ => KubeFault::StreamCut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16, reason: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status {
                code,
                reason: reason.to_string(),
                message: format!("the server says {reason}"),
                ..Default::default()
            }
            .boxed(),
        )
    }

    #[test]
    fn api_statuses_are_refusals_server_errors_or_timeouts() {
        assert_eq!(classify(&api(403, "Forbidden")), KubeFault::Refused);
        assert_eq!(classify(&api(404, "NotFound")), KubeFault::Refused);
        assert_eq!(classify(&api(422, "Invalid")), KubeFault::Refused);
        assert_eq!(classify(&api(500, "InternalError")), KubeFault::ApiError);
        assert_eq!(
            classify(&api(503, "ServiceUnavailable")),
            KubeFault::ApiError
        );
        assert_eq!(classify(&api(504, "Timeout")), KubeFault::ApiTimeout);
        assert_eq!(classify(&api(500, "Timeout")), KubeFault::ApiTimeout);
        let e = KubeError::kube("getting pod p", &api(404, "NotFound"));
        assert!(e.is_not_found());
        assert_eq!(
            e.to_string(),
            "getting pod p: 404 NotFound: the server says NotFound"
        );
    }

    #[test]
    fn io_errors_name_reachability_timeouts_and_cuts() {
        use std::io::{Error, ErrorKind};
        assert_eq!(
            of_io(&Error::from(ErrorKind::ConnectionRefused)),
            KubeFault::ApiUnreachable
        );
        assert_eq!(
            of_io(&Error::from(ErrorKind::TimedOut)),
            KubeFault::ApiTimeout
        );
        assert_eq!(
            of_io(&Error::from(ErrorKind::ConnectionReset)),
            KubeFault::StreamCut
        );
        assert_eq!(
            of_io(&Error::from(ErrorKind::UnexpectedEof)),
            KubeFault::StreamCut
        );
    }

    #[test]
    fn every_fault_maps_onto_the_runner_taxonomy_and_converts() {
        for f in KubeFault::ALL {
            let runner: RunnerError = KubeError::new("doing x", f, "it broke").into();
            assert_eq!(runner.fault(), Some(f.fault()), "{f}");
            assert!(runner.to_string().contains(f.as_str()), "{runner}");
        }
        assert_eq!(KubeFault::PodGone.fault(), Fault::ContainerGone);
        let missing: RunnerError = KubeError::no_such_path("copying", "/logs/x").into();
        assert!(matches!(missing, RunnerError::NotFound { path } if path == "/logs/x"));
        assert_eq!(KubeFault::StreamCut.fault(), Fault::ConnectionLost);
    }
}
