//! `skillscope-test/glibc:1`: skillscope's offline busybox base image plus this machine's glibc,
//! libstdc++ and bash — enough for the harness CLIs (Claude Code's native binary, Node.js for
//! Gemini CLI; Codex is static) to run in a real container without a registry. Built once per
//! Docker host by committing a container that the files were copied into.

use std::path::Path;

use bollard::Docker;
use bollard::query_parameters::CommitContainerOptions;
use skillscope::runner::docker::base_image::{BUSYBOX_IMAGE, ensure_busybox};

/// The image reference the harness fixture tasks build `FROM`.
pub const GLIBC_IMAGE: &str = "skillscope-test/glibc:1";

/// Host files copied in, by their path in the image (symlinks are followed).
const FILES: &[&str] = &[
    "/lib64/ld-linux-x86-64.so.2",
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib/x86_64-linux-gnu/libm.so.6",
    "/lib/x86_64-linux-gnu/libpthread.so.0",
    "/lib/x86_64-linux-gnu/libdl.so.2",
    "/lib/x86_64-linux-gnu/librt.so.1",
    "/lib/x86_64-linux-gnu/libstdc++.so.6",
    "/lib/x86_64-linux-gnu/libgcc_s.so.1",
    "/lib/x86_64-linux-gnu/libtinfo.so.6",
    "/bin/bash",
];

/// Makes sure [`GLIBC_IMAGE`] exists on the default Docker host.
pub async fn ensure_glibc_image() {
    let docker = Docker::connect_with_defaults().expect("docker");
    if docker.inspect_image(GLIBC_IMAGE).await.is_ok() {
        return;
    }
    ensure_busybox(&docker).await.expect("busybox base image");
    let staging = tempfile::tempdir().expect("tempdir");
    for f in FILES {
        let dest = staging.path().join(f.trim_start_matches('/'));
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(Path::new(f), &dest)
            .unwrap_or_else(|e| panic!("copying {f} from this machine into the test image: {e}"));
    }
    let c = skillscope::runner::docker::start_helper(
        &docker,
        "default",
        BUSYBOX_IMAGE,
        "glibc-image",
        false,
    )
    .await
    .expect("start a busybox container");
    c.upload_dir(staging.path(), "/")
        .await
        .expect("copy glibc in");
    let (repo, tag) = GLIBC_IMAGE.split_once(':').unwrap();
    docker
        .commit_container(
            CommitContainerOptions {
                container: Some(c.id().to_string()),
                repo: Some(repo.into()),
                tag: Some(tag.into()),
                pause: true,
                changes: Some("CMD [\"sh\"]\nENTRYPOINT []".into()),
                ..Default::default()
            },
            bollard::models::ContainerConfig::default(),
        )
        .await
        .expect("commit the glibc test image");
    c.remove().await;
}
