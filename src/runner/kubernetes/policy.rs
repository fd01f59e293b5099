//! What one trial's pods share on a cluster (the seam's `TrialSite`): a NetworkPolicy that keeps
//! other pods out (and, unless the task allows the internet, keeps the trial's pods from
//! sending anything anywhere), and a Secret of verifier-only values that only the verifier's
//! pod mounts. Closing the site deletes every object of the trial, pods included.
//!
//! A NetworkPolicy is only as good as the cluster's network plugin: one that does not enforce
//! policies accepts the object and ignores it (the local test cluster's bridge plugin is such
//! one; docs/limitations.md). The site reads the policy back after creating it, so a cluster
//! whose API lacks `networking.k8s.io/v1` or whose RBAC forbids it stops the trial.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicySpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::api::{Api, PostParams};

use super::cluster::Cluster;
use super::fault::{KubeError, KubeFault};
use super::labels;
use super::pod::{EnvironmentSpec, Role, TrialLabels, TrialPod, build_pod};

/// What a trial's site is made of.
#[derive(Debug, Clone)]
pub struct TrialSiteSpec {
    /// The trial's ids (labels of every object).
    pub labels: TrialLabels,
    /// The task allows the internet: no egress rule is added (ingress from other pods is still
    /// denied).
    pub allow_internet: bool,
    /// Verifier-only values (names as environment names), kept in a Secret the verifier's pod
    /// mounts; empty: no Secret.
    pub verifier_values: Vec<(String, String)>,
    /// skillscope's busybox image in the registry (a digest reference), for the static shell's
    /// init container; `None`: pods get no static shell.
    pub static_image: Option<String>,
}

/// One trial's objects on the cluster.
pub struct TrialSite {
    cluster: Cluster,
    spec: TrialSiteSpec,
    policy: String,
    secret: Option<String>,
}

impl TrialSite {
    /// Creates the trial's NetworkPolicy (read back to confirm it exists) and its Secret. What
    /// was made is deleted again when a later step fails.
    ///
    /// # Errors
    /// [`KubeError`] from the API (RBAC refusals name the verb), or [`KubeFault::Refused`] when
    /// the policy cannot be read back.
    pub async fn open(cluster: Cluster, spec: &TrialSiteSpec) -> Result<TrialSite, KubeError> {
        let policy = spec.labels.object_name("net");
        let mut site = TrialSite {
            cluster,
            spec: spec.clone(),
            policy,
            secret: None,
        };
        match site.create_objects().await {
            Ok(()) => Ok(site),
            Err(e) => {
                site.delete_objects().await;
                Err(e)
            }
        }
    }

    async fn create_objects(&mut self) -> Result<(), KubeError> {
        let policies: Api<NetworkPolicy> = self.cluster.api();
        let obj = deny_policy(&self.policy, &self.spec.labels, self.spec.allow_internet);
        policies
            .create(&PostParams::default(), &obj)
            .await
            .map_err(|e| KubeError::kube(format!("creating network policy {}", self.policy), &e))?;
        let back = policies
            .get_opt(&self.policy)
            .await
            .map_err(|e| KubeError::kube(format!("reading network policy {}", self.policy), &e))?;
        if back.is_none() {
            return Err(KubeError::new(
                format!("reading network policy {}", self.policy),
                KubeFault::Refused,
                "the policy was accepted but does not exist",
            ));
        }
        if !self.spec.verifier_values.is_empty() {
            let name = self.spec.labels.object_name("verifier");
            let secrets: Api<Secret> = self.cluster.api();
            let obj = verifier_secret(&name, &self.spec.labels, &self.spec.verifier_values);
            secrets
                .create(&PostParams::default(), &obj)
                .await
                .map_err(|e| KubeError::kube(format!("creating secret {name}"), &e))?;
            self.secret = Some(name);
        }
        Ok(())
    }

    /// The NetworkPolicy's name.
    pub fn policy_name(&self) -> &str {
        &self.policy
    }

    /// The Secret's name, when the trial has verifier-only values.
    pub fn secret_name(&self) -> Option<&str> {
        self.secret.as_deref()
    }

    /// Starts one environment of the trial: builds its pod ([`build_pod`]) and waits until it
    /// is Running ([`TrialPod::create`]).
    ///
    /// # Errors
    /// [`KubeFault::Refused`] when the spec cannot be met here (the static shell without an
    /// image, the Secret for a trial without one); as [`TrialPod::create`].
    pub async fn start(&self, env: &EnvironmentSpec) -> Result<TrialPod, KubeError> {
        let name = self.spec.labels.object_name(env.role.as_str());
        let pod = build_pod(
            &name,
            &self.spec.labels,
            env,
            self.spec.static_image.as_deref(),
            self.secret.as_deref(),
        )
        .map_err(|m| KubeError::new(format!("starting pod {name}"), KubeFault::Refused, m))?;
        TrialPod::create(&self.cluster, &pod, env.start_deadline).await
    }

    /// Deletes every object of the trial: its pods, Secret and NetworkPolicy (by the trial's
    /// labels). Errors are logged; a run's sweep removes what is left.
    pub async fn close(self) {
        self.delete_objects().await;
    }

    async fn delete_objects(&self) {
        if let Err(e) = self
            .cluster
            .delete_selected(&self.spec.labels.selector())
            .await
        {
            tracing::warn!("removing trial {}: {e}", self.spec.labels.trial);
        }
    }
}

/// A policy selecting the trial's pods that allows no ingress, and no egress when
/// `allow_internet` is false (a policy type listed with no rules denies that direction).
pub fn deny_policy(name: &str, trial: &TrialLabels, allow_internet: bool) -> NetworkPolicy {
    let mut types = vec!["Ingress".to_string()];
    if !allow_internet {
        types.push("Egress".to_string());
    }
    NetworkPolicy {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(trial.map(None)),
            annotations: Some(trial.annotations()),
            ..Default::default()
        },
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([
                    (labels::RUN_UID.to_string(), labels::value(&trial.run_uid)),
                    (labels::ATTEMPT_ID.to_string(), trial.attempt_id.to_string()),
                ])),
                ..Default::default()
            }),
            policy_types: Some(types),
            ingress: None,
            egress: None,
        }),
    }
}

/// The Secret of a trial's verifier-only values (one key per variable).
pub fn verifier_secret(name: &str, trial: &TrialLabels, values: &[(String, String)]) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(trial.map(Some(Role::Verifier))),
            annotations: Some(trial.annotations()),
            ..Default::default()
        },
        type_: Some("Opaque".into()),
        data: Some(
            values
                .iter()
                .map(|(k, v)| (k.clone(), ByteString(v.as_bytes().to_vec())))
                .collect(),
        ),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial() -> TrialLabels {
        TrialLabels {
            run_uid: "run-1".into(),
            trial: "t__1".into(),
            attempt_id: 7,
        }
    }

    #[test]
    fn the_policy_denies_ingress_always_and_egress_without_internet() {
        let closed = deny_policy("p", &trial(), false);
        let spec = closed.spec.unwrap();
        assert_eq!(
            spec.policy_types.unwrap(),
            vec!["Ingress".to_string(), "Egress".to_string()]
        );
        assert!(spec.ingress.is_none() && spec.egress.is_none());
        let sel = spec.pod_selector.unwrap().match_labels.unwrap();
        assert_eq!(sel["skillscope/attempt-id"], "7");
        assert_eq!(sel["skillscope/run-uid"], "run-1");
        let open = deny_policy("p", &trial(), true);
        assert_eq!(
            open.spec.unwrap().policy_types.unwrap(),
            vec!["Ingress".to_string()]
        );
    }

    #[test]
    fn the_secret_holds_the_values_under_the_trial_s_labels() {
        let s = verifier_secret("s", &trial(), &[("TOKEN".into(), "v".into())]);
        assert_eq!(s.data.unwrap()["TOKEN"].0, b"v");
        assert_eq!(s.metadata.labels.unwrap()["skillscope/role"], "verifier");
    }
}
