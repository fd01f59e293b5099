//! Docker hosts: connecting (local socket, `DOCKER_HOST` tcp/TLS, explicit endpoints) and the facts
//! the scheduler needs (CPU count, memory, a name for labels and tables).

use std::time::Duration;

use bollard::Docker;

use super::docker_error;
use crate::runner::RunnerError;

/// Requests may stream for as long as an agent runs; skillscope applies its own timeouts per
/// phase, so the HTTP client's own limit is set far beyond any task budget.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);

/// A connected Docker daemon.
#[derive(Clone)]
pub struct DockerHost {
    /// Endpoint as given (`unix:///var/run/docker.sock`, `tcp://host:2376`, …) or `local`.
    pub name: String,
    /// bollard client, API version negotiated with the daemon.
    pub docker: Docker,
    /// CPUs the daemon reports (container CPU limits are clamped to it).
    pub ncpu: u32,
    /// Memory the daemon reports, bytes.
    pub mem_total: i64,
    /// Daemon version string.
    pub server_version: String,
    /// How many trials may run on this host at once.
    pub slots: usize,
    /// True for a daemon on this machine (unix socket): trial log folders are bind-mounted
    /// instead of copied out through the API.
    pub local: bool,
    /// The run this connection serves, when it serves one: helper containers made through it
    /// (leak checks, kit fills) carry the run's label, so every stop of the run removes them.
    pub run_uid: Option<String>,
    /// The daemon's data root (`/var/lib/docker`).
    pub data_root: String,
}

impl DockerHost {
    /// Connects to `endpoint`, or to the default (`DOCKER_HOST`, honouring `DOCKER_TLS_VERIFY` and
    /// `DOCKER_CERT_PATH`; else the local socket) when `None`, then negotiates the API version and
    /// reads the host's CPU and memory.
    ///
    /// # Errors
    /// [`RunnerError::Docker`] naming the endpoint when the daemon cannot be reached.
    pub async fn connect(endpoint: Option<&str>, slots: usize) -> Result<DockerHost, RunnerError> {
        let name = DockerHost::endpoint_name(endpoint);
        let fail = |e: bollard::errors::Error| {
            docker_error(
                format!(
                    "cannot reach the Docker daemon at {name} (is dockerd running? `scripts/docker-up.sh` starts one)"
                ),
                e,
            )
        };
        let docker = match endpoint {
            Some(ep) => Docker::connect_with_host(ep),
            None => Docker::connect_with_defaults(),
        }
        .map_err(fail)?
        .with_timeout(CLIENT_TIMEOUT);
        let docker = docker.negotiate_version().await.map_err(fail)?;
        let info = docker.info().await.map_err(fail)?;
        Ok(DockerHost {
            run_uid: None,
            data_root: info
                .docker_root_dir
                .unwrap_or_else(|| "/var/lib/docker".into()),
            local: name.starts_with("unix://"),
            name,
            ncpu: info.ncpu.unwrap_or(1).max(1) as u32,
            mem_total: info.mem_total.unwrap_or(0),
            server_version: info.server_version.unwrap_or_default(),
            docker,
            slots: slots.max(1),
        })
    }

    /// The name of `endpoint`, or of the default host (`DOCKER_HOST`, else the local socket).
    pub fn endpoint_name(endpoint: Option<&str>) -> String {
        endpoint
            .map(str::to_string)
            .or_else(|| std::env::var("DOCKER_HOST").ok())
            .unwrap_or_else(|| "unix:///var/run/docker.sock".to_string())
    }

    /// This connection, serving run `uid` (see [`DockerHost::run_uid`]).
    pub fn for_run(self, uid: &str) -> DockerHost {
        DockerHost {
            run_uid: Some(uid.to_string()),
            ..self
        }
    }

    /// A short-lived helper container of `image` on this host (see
    /// [`super::ContainerSpec::helper`]; `shell`: the static shell's bind), labelled with the run
    /// this connection serves.
    pub fn helper_spec(&self, image: &str, kind: &str, shell: &str) -> super::ContainerSpec {
        let mut spec = super::ContainerSpec::helper(image, kind, shell);
        if let Some(uid) = &self.run_uid {
            spec.labels
                .insert(crate::runner::labels::RUN_UID.to_string(), uid.clone());
        }
        spec
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Helpers made through a run's connection carry the run's label, so the run's clean stop
    /// (and the next start's sweep) removes them; without a run they carry only the helper label.
    #[test]
    fn helpers_carry_the_run_label() {
        let host = DockerHost {
            name: "local".into(),
            docker: Docker::connect_with_defaults().expect("client"),
            ncpu: 1,
            mem_total: 0,
            server_version: String::new(),
            slots: 1,
            local: true,
            run_uid: None,
            data_root: String::new(),
        };
        let spec = host.helper_spec("img", "leak-check", "v:/s:ro");
        assert_eq!(spec.labels.get(crate::runner::labels::RUN_UID), None);
        assert_eq!(
            spec.labels
                .get(crate::runner::labels::HELPER)
                .map(String::as_str),
            Some("leak-check")
        );
        let spec = host
            .for_run("abc")
            .helper_spec("img", "kit-fill", "v:/s:ro");
        assert_eq!(
            spec.labels
                .get(crate::runner::labels::RUN_UID)
                .map(String::as_str),
            Some("abc")
        );
        assert!(spec.network_none);
    }
}
