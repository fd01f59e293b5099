//! Harness kits on Docker daemons that cannot see this machine's folders (a `tcp://` or TLS
//! `--docker-host`): the kit is copied once per daemon into a named volume,
//! `skillscope-kit-<kit id>`, which trial containers then mount read-only at
//! [`Harness::mount_path`](crate::runner::agents::kit::Harness::mount_path) exactly as a local daemon mounts the
//! kit folder.
//!
//! The copy goes through the Docker API (a tar upload into a short-lived helper container from
//! the busybox base image, the volume mounted at `/kit`). The volume counts as filled only when
//! its ready file, written after the upload, holds this machine's kit marker (harness, version,
//! fetch time): an interrupted copy, or a kit fetched again, is copied anew.

use std::collections::HashMap;
use std::time::Duration;

use bollard::models::VolumeCreateRequest;

use super::base_image::{BUSYBOX_IMAGE, ensure_busybox};
use super::container::DockerContainer;
use super::docker_error;
use super::host::DockerHost;
use crate::runner::agents::kit::READY_MARKER;
use crate::runner::sandbox::{ExecEnd, Sandbox};
use crate::runner::{RunnerError, labels};

/// Where the helper container mounts the volume.
const FILL_MOUNT: &str = "/kit";

/// The file in the volume that says which kit it holds (a copy of the kit's marker, written last).
const VOLUME_READY: &str = ".skillscope-volume-ready";

/// The budget of each helper command (clearing, checking, sealing; not the upload itself).
const HELPER_EXEC: Duration = Duration::from_secs(300);

/// The volume name for `kit`: `skillscope-kit-<harness>-<version>[-node<N>]`.
pub fn volume_name(id: &str) -> String {
    format!("skillscope-kit-{id}")
}

/// How [`ensure_kit_volume`] found the volume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KitVolume {
    /// The volume's name, for a bind `name:/opt/skillscope/<harness>:ro`.
    pub name: String,
    /// True when the kit was copied in by this call; false when the volume already held it.
    pub filled: bool,
}

/// Makes sure `host` has a volume holding `kit` and returns its name. Creates the volume when
/// missing (labelled [`labels::MANAGED`]); copies the kit in when the volume's ready file is
/// absent or names another fetch of the kit. Calls for the same host must not overlap (the
/// agent keeps one per host).
///
/// # Errors
/// [`RunnerError::Io`] naming the kit's marker when it cannot be read; [`RunnerError::Backend`]
/// naming the volume when it cannot be created, the helper container cannot run or the upload
/// fails; [`RunnerError::Task`] when a helper command fails or overruns.
pub async fn ensure_kit_volume(
    host: &DockerHost,
    dir: &std::path::Path,
    id: &str,
) -> Result<KitVolume, RunnerError> {
    let marker_path = dir.join(READY_MARKER);
    let marker =
        std::fs::read_to_string(&marker_path).map_err(|e| RunnerError::io(&marker_path, e))?;
    let name = volume_name(id);
    host.docker
        .create_volume(VolumeCreateRequest {
            name: Some(name.clone()),
            labels: Some(HashMap::from([(
                labels::MANAGED.to_string(),
                "1".to_string(),
            )])),
            ..Default::default()
        })
        .await
        .map_err(|e| docker_error(format!("creating volume {name} on {}", host.name), e))?;
    ensure_busybox(&host.docker).await?;
    let shell = super::static_shell::ensure(host).await?;
    let mut spec = host.helper_spec(BUSYBOX_IMAGE, "kit-fill", &shell);
    spec.binds.push(format!("{name}:{FILL_MOUNT}"));
    let helper = DockerContainer::start(&host.docker, &spec).await?;
    let result = fill(
        &Sandbox::new(std::sync::Arc::new(helper.clone())),
        dir,
        &marker,
        &name,
    )
    .await;
    helper.remove_now().await;
    let filled = result?;
    if filled {
        tracing::info!(volume = %name, host = %host.name, "harness kit copied into volume");
    }
    Ok(KitVolume { name, filled })
}

/// Copies the kit into the helper's `/kit` unless the ready file already holds `marker`.
async fn fill(
    helper: &Sandbox,
    dir: &std::path::Path,
    marker: &str,
    name: &str,
) -> Result<bool, RunnerError> {
    let held = helper_output(
        helper,
        &format!("cat {FILL_MOUNT}/{VOLUME_READY} 2>/dev/null; true"),
    )
    .await?;
    if held == marker {
        return Ok(false);
    }
    // Clear first: a copy cut off half-way must never look finished.
    helper_output(
        helper,
        &format!("rm -rf {FILL_MOUNT}/* {FILL_MOUNT}/.[!.]* {FILL_MOUNT}/..?*"),
    )
    .await?;
    helper
        .upload_large_dir(dir, FILL_MOUNT)
        .await
        .map_err(|e| RunnerError::Task(format!("copying the kit into volume {name}: {e}")))?;
    helper_output(
        helper,
        &format!("cp {FILL_MOUNT}/{READY_MARKER} {FILL_MOUNT}/{VOLUME_READY}"),
    )
    .await?;
    Ok(true)
}

/// Runs `script` in the helper; its stdout, or an error when it fails or overruns.
async fn helper_output(helper: &Sandbox, script: &str) -> Result<String, RunnerError> {
    let (r, out) = helper.sh_output(script, HELPER_EXEC).await?;
    if r.end != ExecEnd::Exited || r.exit_code != Some(0) {
        return Err(RunnerError::Task(format!(
            "kit volume helper: `{script}` ended {:?} with exit code {:?}",
            r.end, r.exit_code
        )));
    }
    Ok(out)
}
