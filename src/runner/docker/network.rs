//! A network of a trial's own: a task with `allow_internet = true` (and no compose networks of
//! its own) gets a user-defined bridge instead of Docker's default bridge shared with every other
//! container — made for its slot once and handed to the slot's next trial when every container of
//! the last one is gone, removed by the run's sweep at its end. Docker isolates user-defined
//! bridges from one another, so a trial reaches the internet but no other trial's containers.
//! The Linux bridge is named `ssb<12 hex>` (an operator's firewall rule can match `ssb+`, see
//! docs/limitations.md), and the network carries the trial's labels, so a killed run's sweep
//! removes it (the run's sweep).

use std::collections::HashMap;

use bollard::Docker;

use super::docker_error;
use crate::runner::RunnerError;

/// The prefix of every trial bridge's Linux interface name.
pub const BRIDGE_PREFIX: &str = "ssb";

/// A trial's network.
#[derive(Debug, Clone)]
pub struct TrialNetwork {
    /// Its name (the container joins it by name).
    pub name: String,
}

impl TrialNetwork {
    /// Creates the network `name` (a bridge, not internal) carrying `labels`.
    ///
    /// # Errors
    /// [`RunnerError::Backend`] naming the network.
    pub async fn create(
        docker: &Docker,
        name: &str,
        labels: &HashMap<String, String>,
    ) -> Result<TrialNetwork, RunnerError> {
        let bridge: String = uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
        docker
            .create_network(bollard::models::NetworkCreateRequest {
                name: name.to_string(),
                driver: Some("bridge".into()),
                internal: Some(false),
                labels: Some(labels.clone()),
                options: Some(HashMap::from([(
                    "com.docker.network.bridge.name".to_string(),
                    format!("{BRIDGE_PREFIX}{bridge}"),
                )])),
                ..Default::default()
            })
            .await
            .map_err(|e| docker_error(format!("creating network {name}"), e))?;
        Ok(TrialNetwork {
            name: name.to_string(),
        })
    }
}
