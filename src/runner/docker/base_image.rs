//! skillscope's own offline base image, `skillscope/busybox:1`: a static busybox and its applets in
//! a tiny rootfs, created with `docker import` (the `/images/create?fromSrc=-` API) — no registry
//! needed. The example tasks build `FROM` it.
//!
//! Where the busybox binary comes from, in order: `$SKILLSCOPE_BUSYBOX`, `/bin/busybox`,
//! `/usr/bin/busybox` (Debian's `busybox-static` installs it), and only if none is a static
//! executable, a pull of `busybox:1.36-musl` from the daemon's registry.

use std::path::{Path, PathBuf};

use bollard::Docker;
use bollard::query_parameters::{CreateImageOptions, TagImageOptions};
use futures_util::StreamExt;

use super::docker_error;
use crate::runner::RunnerError;

/// The image reference example tasks use.
pub const BUSYBOX_IMAGE: &str = "skillscope/busybox:1";
const REPO: &str = "skillscope/busybox";
const TAG: &str = "1";

/// True when `image` is one skillscope can create by itself.
pub fn is_own_base_image(image: &str) -> bool {
    image == BUSYBOX_IMAGE
}

/// Makes sure [`BUSYBOX_IMAGE`] exists on the host, creating it if needed.
///
/// # Errors
/// [`RunnerError::Task`] explaining how to provide busybox when no static binary is found and no
/// registry answers; [`RunnerError::Backend`] when the import fails.
pub async fn ensure_busybox(docker: &Docker) -> Result<(), RunnerError> {
    if docker.inspect_image(BUSYBOX_IMAGE).await.is_ok() {
        return Ok(());
    }
    match find_static_busybox() {
        Some(path) => import_busybox(docker, &path).await,
        None => pull_busybox(docker).await,
    }
}

fn find_static_busybox() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Ok(p) = std::env::var("SKILLSCOPE_BUSYBOX") {
        candidates.push(p.into());
    }
    candidates.push("/bin/busybox".into());
    candidates.push("/usr/bin/busybox".into());
    candidates
        .into_iter()
        .find(|p| std::fs::read(p).is_ok_and(|b| is_static_elf(&b)))
}

/// True for a 64-bit little-endian ELF executable without a `PT_INTERP` program header (a static
/// binary that runs in an empty rootfs). Reads only the ELF header and the program header table
/// (ELF-64 layout: `e_phoff` at 0x20, `e_phentsize` at 0x36, `e_phnum` at 0x38; `p_type` first).
pub fn is_static_elf(b: &[u8]) -> bool {
    const PT_INTERP: u32 = 3;
    if b.len() < 64 || &b[..4] != b"\x7fELF" || b[4] != 2 || b[5] != 1 {
        return false;
    }
    let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(b[0x20..0x28].try_into().expect("8 bytes")) as usize;
    let (phentsize, phnum) = (u16_at(0x36), u16_at(0x38));
    (0..phnum).all(|i| {
        let o = phoff + i * phentsize;
        b.get(o..o + 4)
            .is_some_and(|t| u32::from_le_bytes(t.try_into().expect("4 bytes")) != PT_INTERP)
    })
}

fn applets(busybox: &Path) -> Result<Vec<String>, RunnerError> {
    let out = std::process::Command::new(busybox)
        .arg("--list")
        .output()
        .map_err(|e| RunnerError::io(busybox, e))?;
    let list: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|a| !a.is_empty() && *a != "busybox" && !a.contains('/'))
        .map(str::to_string)
        .collect();
    if list.is_empty() {
        return Err(RunnerError::Task(format!(
            "{} --list printed no applets",
            busybox.display()
        )));
    }
    Ok(list)
}

/// Builds the rootfs tar: `/bin/busybox`, one symlink per applet in `/bin`, `/usr/bin/env`,
/// `/etc/passwd` and `/etc/group` for root, and `/tmp`, `/root`, `/logs`.
fn rootfs_tar(busybox: &Path) -> Result<Vec<u8>, RunnerError> {
    let bytes = std::fs::read(busybox).map_err(|e| RunnerError::io(busybox, e))?;
    let applets = applets(busybox)?;
    let mut b = tar::Builder::new(Vec::new());
    let tar_err =
        |e: std::io::Error| RunnerError::Task(format!("building the busybox rootfs: {e}"));
    let dir = |b: &mut tar::Builder<Vec<u8>>, path: &str, mode: u32| {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_mode(mode);
        h.set_size(0);
        b.append_data(&mut h, path, std::io::empty())
    };
    for (d, mode) in [
        ("bin/", 0o755),
        ("etc/", 0o755),
        ("usr/", 0o755),
        ("usr/bin/", 0o755),
        ("root/", 0o700),
        ("tmp/", 0o1777),
        ("logs/", 0o777),
        ("proc/", 0o555),
        ("sys/", 0o555),
        ("dev/", 0o755),
    ] {
        dir(&mut b, d, mode).map_err(tar_err)?;
    }
    let file = |b: &mut tar::Builder<Vec<u8>>, path: &str, mode: u32, data: &[u8]| {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(mode);
        h.set_size(data.len() as u64);
        b.append_data(&mut h, path, data)
    };
    file(&mut b, "bin/busybox", 0o755, &bytes).map_err(tar_err)?;
    file(
        &mut b,
        "etc/passwd",
        0o644,
        b"root:x:0:0:root:/root:/bin/sh\n",
    )
    .map_err(tar_err)?;
    file(&mut b, "etc/group", 0o644, b"root:x:0:\n").map_err(tar_err)?;
    let link = |b: &mut tar::Builder<Vec<u8>>, path: &str, target: &str| {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_mode(0o777);
        h.set_size(0);
        b.append_link(&mut h, path, target)
    };
    for a in &applets {
        link(&mut b, &format!("bin/{a}"), "busybox").map_err(tar_err)?;
    }
    link(&mut b, "usr/bin/env", "/bin/busybox").map_err(tar_err)?;
    b.into_inner().map_err(tar_err)
}

async fn import_busybox(docker: &Docker, busybox: &Path) -> Result<(), RunnerError> {
    let path = busybox.to_path_buf();
    let tar = tokio::task::spawn_blocking(move || rootfs_tar(&path))
        .await
        .map_err(|e| RunnerError::Task(e.to_string()))??;
    let options = CreateImageOptions {
        from_src: Some("-".into()),
        repo: Some(REPO.into()),
        tag: Some(TAG.into()),
        changes: vec![
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into(),
            "WORKDIR /root".into(),
            "CMD [\"sh\"]".into(),
        ],
        message: Some(format!("skillscope base image from {}", busybox.display())),
        ..Default::default()
    };
    let mut stream = docker.create_image(Some(options), Some(bollard::body_full(tar.into())), None);
    while let Some(item) = stream.next().await {
        item.map_err(|e| docker_error(format!("importing {BUSYBOX_IMAGE}"), e))?;
    }
    docker
        .inspect_image(BUSYBOX_IMAGE)
        .await
        .map_err(|e| docker_error(format!("importing {BUSYBOX_IMAGE}"), e))?;
    Ok(())
}

async fn pull_busybox(docker: &Docker) -> Result<(), RunnerError> {
    let options = CreateImageOptions {
        from_image: Some("busybox".into()),
        tag: Some("1.36-musl".into()),
        ..Default::default()
    };
    let mut stream = docker.create_image(Some(options), None, None);
    while let Some(item) = stream.next().await {
        if let Err(e) = item {
            return Err(RunnerError::Task(format!(
                "cannot create {BUSYBOX_IMAGE}: no static busybox on this machine (install Debian's \
                 busybox-static or set SKILLSCOPE_BUSYBOX) and pulling busybox:1.36-musl failed: {e}"
            )));
        }
    }
    docker
        .tag_image(
            "busybox:1.36-musl",
            Some(TagImageOptions {
                repo: Some(REPO.into()),
                tag: Some(TAG.into()),
            }),
        )
        .await
        .map_err(|e| docker_error(format!("tagging {BUSYBOX_IMAGE}"), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elf_check() {
        assert!(!is_static_elf(b"#!/bin/sh\n"));
        // The test binary itself is dynamically linked (has PT_INTERP) on glibc targets.
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert!(!is_static_elf(&me));
    }
}
