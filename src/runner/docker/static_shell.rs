//! skillscope's own shell in every container it starts: a static busybox no image or agent can
//! change. Per Docker host, a named volume `skillscope-static-shell-<image>` holds the `/bin` of
//! skillscope's base image ([`BUSYBOX_IMAGE`]: one static busybox and a link per applet), filled
//! by the daemon itself (a volume mounted on a folder of an image gets that folder's contents
//! when it is first mounted, so nothing is uploaded). Trial and helper containers mount it
//! read-only at [`STATIC_SHELL_DIR`]: their PID 1 and every script of skillscope's run from it.
//! It works the same against a remote daemon, and stays for the next run (it is a few MB).

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock};

use bollard::models::{ContainerCreateBody, HostConfig, VolumeCreateRequest};
use bollard::query_parameters::{CreateContainerOptions, RemoveContainerOptions};

use super::base_image::{BUSYBOX_IMAGE, ensure_busybox};
use super::docker_error;
use super::host::DockerHost;
use crate::runner::sandbox::STATIC_SHELL_DIR;
use crate::runner::{RunnerError, labels};

/// Volumes known filled in this process, by host.
fn ready() -> &'static Mutex<HashSet<(String, String)>> {
    static READY: OnceLock<Mutex<HashSet<(String, String)>>> = OnceLock::new();
    READY.get_or_init(Default::default)
}

/// The bind of each host's filled volume, once known: later trials ask the daemon nothing.
fn binds() -> &'static Mutex<std::collections::HashMap<String, String>> {
    static BINDS: OnceLock<Mutex<std::collections::HashMap<String, String>>> = OnceLock::new();
    BINDS.get_or_init(Default::default)
}

/// Forgets what is known of host `name`'s volume (a container that mounted it failed to start:
/// the next trial checks it again).
pub fn forget(name: &str) {
    binds().lock().expect("lock").remove(name);
    ready().lock().expect("lock").retain(|(h, _)| h != name);
}

/// Makes sure `host` has the static shell's volume and returns the bind that mounts it
/// read-only (`<volume>:/skillscope/static:ro`).
///
/// # Errors
/// [`RunnerError::Backend`] when the base image, the volume or the helper that fills it cannot be
/// made (an infrastructure fault); [`RunnerError::Task`] when no busybox can be had.
pub async fn ensure(host: &DockerHost) -> Result<String, RunnerError> {
    ensure_on(&host.docker, &host.name).await
}

/// [`ensure`] on daemon `docker`, named `name` (the key of what this process knows filled).
///
/// # Errors
/// As [`ensure`].
pub async fn ensure_on(docker: &bollard::Docker, name: &str) -> Result<String, RunnerError> {
    let host_name = name;
    if let Some(bind) = binds().lock().expect("lock").get(host_name) {
        return Ok(bind.clone());
    }
    ensure_busybox(docker).await?;
    let image = docker
        .inspect_image(BUSYBOX_IMAGE)
        .await
        .map_err(|e| docker_error(format!("inspecting {BUSYBOX_IMAGE}"), e))?;
    let id = image.id.unwrap_or_default();
    let short: String = id.trim_start_matches("sha256:").chars().take(12).collect();
    let name = format!("skillscope-static-shell-{short}");
    let bind = format!("{name}:{STATIC_SHELL_DIR}:ro");
    let key = (host_name.to_string(), name.clone());
    if ready().lock().expect("lock").contains(&key) {
        binds()
            .lock()
            .expect("lock")
            .insert(host_name.to_string(), bind.clone());
        return Ok(bind);
    }
    docker
        .create_volume(VolumeCreateRequest {
            name: Some(name.clone()),
            labels: Some(HashMap::from([(
                labels::MANAGED.to_string(),
                "1".to_string(),
            )])),
            ..Default::default()
        })
        .await
        .map_err(|e| docker_error(format!("creating volume {name} on {host_name}"), e))?;
    // Creating a container with the empty volume on the image's /bin fills it.
    let helper = super::ContainerSpec::helper(BUSYBOX_IMAGE, "static-shell", "");
    let created = docker
        .create_container(
            Some(CreateContainerOptions {
                name: Some(helper.name.clone()),
                ..Default::default()
            }),
            ContainerCreateBody {
                image: Some(BUSYBOX_IMAGE.to_string()),
                cmd: Some(vec!["true".into()]),
                labels: Some(helper.labels.clone()),
                network_disabled: Some(true),
                host_config: Some(HostConfig {
                    binds: Some(vec![format!("{name}:/bin")]),
                    network_mode: Some("none".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
        )
        .await
        .map_err(|e| docker_error(format!("filling volume {name}"), e))?;
    let _ = docker
        .remove_container(
            &created.id,
            Some(RemoveContainerOptions {
                force: true,
                ..Default::default()
            }),
        )
        .await;
    ready().lock().expect("lock").insert(key);
    binds()
        .lock()
        .expect("lock")
        .insert(host_name.to_string(), bind.clone());
    Ok(bind)
}
