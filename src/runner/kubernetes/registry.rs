//! The image registry a cluster pulls from: pushing a locally built Docker image to it (through
//! the Docker daemon, bollard's push) and reading an image's digest back from it (the registry's
//! HTTP API v2, `HEAD /v2/<repo>/manifests/<ref>`, header `Docker-Content-Digest`). Pods then
//! name images by digest (`<registry>/<repo>@sha256:…`), which is what lock.json records.
//!
//! The registry is reached over plain HTTP (a loopback or in-cluster registry, as Docker itself
//! allows for `127.0.0.0/8`) or HTTPS with the machine's roots.

use std::time::Duration;

use bollard::Docker;
use bollard::query_parameters::{PushImageOptions, TagImageOptions};
use futures_util::StreamExt;

use crate::runner::RunnerError;
use crate::runner::docker::base_image::{BUSYBOX_IMAGE, ensure_busybox};
use crate::runner::docker::fault_of;

/// An image in the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushedImage {
    /// `<registry>/<repo>@sha256:<hex>`: what a pod spec names.
    pub reference: String,
    /// `sha256:<hex>`: the manifest's digest (lock.json's).
    pub digest: String,
}

/// The repository skillscope's static-shell busybox is pushed to.
pub const STATIC_REPO: &str = "skillscope/busybox";

/// Tags local image `local` as `<registry>/<repo>:<tag>`, pushes it, and returns its digest
/// reference (read from the push stream's `digest:` line and checked against the registry).
///
/// # Errors
/// [`RunnerError::Backend`] when tagging or pushing fails (the daemon's message: a registry it
/// cannot reach, a refusal); [`RunnerError::Task`] when the registry does not have the pushed
/// digest afterwards.
pub async fn push_image(
    docker: &Docker,
    local: &str,
    registry: &str,
    repo: &str,
    tag: &str,
) -> Result<PushedImage, RunnerError> {
    let target = format!("{registry}/{repo}");
    docker
        .tag_image(
            local,
            Some(TagImageOptions {
                repo: Some(target.clone()),
                tag: Some(tag.to_string()),
            }),
        )
        .await
        .map_err(|e| docker_error(format!("tagging {local} as {target}:{tag}"), &e))?;
    let mut stream = docker.push_image(
        &target,
        Some(PushImageOptions {
            tag: Some(tag.to_string()),
            ..Default::default()
        }),
        None,
    );
    let mut pushed = None;
    while let Some(item) = stream.next().await {
        let info = item.map_err(|e| docker_error(format!("pushing {target}:{tag}"), &e))?;
        if let Some(d) = info.status.as_deref().and_then(digest_in_status) {
            pushed = Some(d);
        }
    }
    let in_registry = manifest_digest(registry, repo, tag)
        .await
        .map_err(|m| RunnerError::Task(format!("reading {target}:{tag} back: {m}")))?;
    let digest = match (pushed, in_registry) {
        (Some(p), Some(r)) if p == r => p,
        (None, Some(r)) => r,
        (p, r) => {
            return Err(RunnerError::Task(format!(
                "pushed {target}:{tag} as {} but the registry has {}",
                p.as_deref().unwrap_or("no digest"),
                r.as_deref().unwrap_or("nothing")
            )));
        }
    };
    Ok(PushedImage {
        reference: format!("{target}@{digest}"),
        digest,
    })
}

/// A Docker API error with what was being done, classified as the Docker backend classifies it.
fn docker_error(context: String, e: &bollard::errors::Error) -> RunnerError {
    RunnerError::Backend {
        context,
        message: e.to_string(),
        fault: fault_of(e),
    }
}

/// Makes sure skillscope's busybox image ([`BUSYBOX_IMAGE`]) is in the registry under
/// [`STATIC_REPO`] and returns its digest reference (the static shell's init-container image).
///
/// # Errors
/// As [`ensure_busybox`] and [`push_image`].
pub async fn ensure_static_image(
    docker: &Docker,
    registry: &str,
) -> Result<PushedImage, RunnerError> {
    ensure_busybox(docker).await?;
    let (_, tag) = BUSYBOX_IMAGE
        .rsplit_once(':')
        .unwrap_or((BUSYBOX_IMAGE, "latest"));
    push_image(docker, BUSYBOX_IMAGE, registry, STATIC_REPO, tag).await
}

/// The `sha256:…` a push stream's status line names (`1: digest: sha256:ab… size: 528`).
pub fn digest_in_status(status: &str) -> Option<String> {
    let rest = &status[status.find("digest: ")? + "digest: ".len()..];
    let d = rest.split_whitespace().next()?;
    let hex = d.strip_prefix("sha256:")?;
    (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then(|| d.to_string())
}

fn http() -> Result<reqwest::Client, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()
        .map_err(|e| e.to_string())
}

fn base(registry: &str) -> String {
    if registry.starts_with("http://") || registry.starts_with("https://") {
        registry.trim_end_matches('/').to_string()
    } else if registry.starts_with("127.") || registry.starts_with("localhost") {
        format!("http://{registry}")
    } else {
        format!("https://{registry}")
    }
}

/// The digest of `<repo>:<reference>` in the registry; `None` when it has no such manifest.
///
/// # Errors
/// A message when the registry cannot be reached or answers otherwise.
pub async fn manifest_digest(
    registry: &str,
    repo: &str,
    reference: &str,
) -> Result<Option<String>, String> {
    let url = format!("{}/v2/{repo}/manifests/{reference}", base(registry));
    let resp = http()?
        .head(&url)
        .header(
            "Accept",
            "application/vnd.docker.distribution.manifest.v2+json, \
             application/vnd.oci.image.manifest.v1+json, \
             application/vnd.docker.distribution.manifest.list.v2+json, \
             application/vnd.oci.image.index.v1+json",
        )
        .send()
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    match resp.status().as_u16() {
        200 => Ok(resp
            .headers()
            .get("Docker-Content-Digest")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)),
        404 => Ok(None),
        s => Err(format!("{url}: HTTP {s}")),
    }
}

/// Checks the registry answers its API from this machine (`GET /v2/`: 200, or 401 asking for
/// credentials).
///
/// # Errors
/// A one-line message naming the registry and what failed.
pub async fn ping(registry: &str) -> Result<(), String> {
    let url = format!("{}/v2/", base(registry));
    let resp = http()?
        .get(&url)
        .send()
        .await
        .map_err(|e| format!("registry {registry} is unreachable from this machine: {e}"))?;
    match resp.status().as_u16() {
        200 | 401 => Ok(()),
        s => Err(format!(
            "registry {registry} answered {url} with HTTP {s}: not an image registry?"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_push_stream_names_the_digest() {
        let hex = "a".repeat(64);
        assert_eq!(
            digest_in_status(&format!("1: digest: sha256:{hex} size: 528")),
            Some(format!("sha256:{hex}"))
        );
        assert_eq!(digest_in_status("Pushed"), None);
        assert_eq!(digest_in_status("digest: sha256:abc size: 1"), None);
    }

    #[test]
    fn loopback_registries_are_plain_http() {
        assert_eq!(base("127.0.0.1:15000"), "http://127.0.0.1:15000");
        assert_eq!(base("localhost:5000"), "http://localhost:5000");
        assert_eq!(base("registry.example:443"), "https://registry.example:443");
        assert_eq!(base("http://r:5000/"), "http://r:5000");
    }
}
