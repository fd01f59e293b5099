//! What a trial leaves on its Docker host — its containers, the commit of the agent's
//! filesystem, the task's services, the trial's own network — removed in the background when the
//! attempt ends, whatever its end.

use crate::runner::container::{Reaper, TrialContainer, remove_image};
use crate::runner::network::TrialNetwork;
use crate::runner::services::TrialServices;

/// What a trial leaves on its Docker host, removed in the background when the attempt ends:
/// its containers (the last made first: the verifier's, then the agent's, whose volumes the
/// verifier borrowed), the commit of the agent's filesystem, the task's services, and the
/// trial's own network.
#[derive(Default)]
pub(super) struct Teardown {
    pub(super) containers: Vec<TrialContainer>,
    pub(super) images: Vec<String>,
    pub(super) network: Option<TrialNetwork>,
}

impl Teardown {
    /// Hands everything to `reaper`.
    pub(super) fn reap(self, reaper: &Reaper, services: TrialServices, docker: bollard::Docker) {
        reaper.spawn(async move {
            for c in self.containers.iter().rev() {
                c.remove().await;
            }
            for i in &self.images {
                remove_image(&docker, i).await;
            }
            services.remove().await;
            if let Some(n) = &self.network {
                n.remove(&docker).await;
            }
        });
    }
}
