//! Files in and out of a trial's pod as tar through exec (Kubernetes has no copy API): the
//! static busybox's `tar` on the pod's side, streamed over the exec's stdin or stdout.
//!
//! In: the archive is checked first ([`check_tar`]): every entry relative and inside the
//! destination, no entry written through a link another entry made, no hard link leaving the
//! archive's tree. Out: the archive is streamed into a sink up to a cap and the copy stops there
//! (links travel as links; whoever unpacks it applies its own link rules, as
//! `crate::runner::container`'s download does).

use std::collections::HashSet;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use bytes::Bytes;
use tokio::io::{AsyncWrite, AsyncWriteExt};

use super::exec::{ExecEvent, ExecSpec, ExecStdin};
use super::fault::{KubeError, KubeFault};
use super::pod::TrialPod;
use crate::runner::sandbox::STATIC_SHELL_DIR;

/// A tar archive to upload: in memory, or a file streamed from disk (large folders).
#[derive(Debug, Clone)]
pub enum TarBody {
    /// The archive's bytes.
    Bytes(Bytes),
    /// A file holding the archive.
    File(PathBuf),
}

/// Exit code of the download prelude when the source path does not exist.
const MISSING: i32 = 3;

/// Checks an archive before it is unpacked in a pod: every entry's path relative with no `..`,
/// no entry below a symlink an earlier entry made (a write through a link), every hard link's
/// target relative with no `..` and not below such a symlink. Returns the number of entries.
///
/// # Errors
/// A message naming the first offending entry, or the archive's own read error.
pub fn check_tar<R: Read>(reader: R) -> Result<usize, String> {
    let mut archive = tar::Archive::new(reader);
    let mut links: HashSet<PathBuf> = HashSet::new();
    let mut n = 0;
    let inside = |p: &Path| {
        p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    };
    let through_link = |p: &Path, links: &HashSet<PathBuf>| {
        p.ancestors()
            .skip(1)
            .find(|a| links.contains(*a))
            .map(Path::to_path_buf)
    };
    for entry in archive
        .entries()
        .map_err(|e| format!("reading the archive: {e}"))?
    {
        let entry = entry.map_err(|e| format!("reading the archive: {e}"))?;
        let path = entry
            .path()
            .map_err(|e| format!("an entry's path: {e}"))?
            .into_owned();
        let shown = path.display().to_string();
        if !inside(&path) {
            return Err(format!("entry {shown} leaves the destination"));
        }
        let clean: PathBuf = path
            .components()
            .filter(|c| *c != Component::CurDir)
            .collect();
        if let Some(link) = through_link(&clean, &links) {
            return Err(format!(
                "entry {shown} is written through the link {}",
                link.display()
            ));
        }
        let kind = entry.header().entry_type();
        if kind.is_symlink() {
            links.insert(clean);
        } else if kind.is_hard_link() {
            let target = entry
                .link_name()
                .map_err(|e| format!("entry {shown}'s link: {e}"))?
                .ok_or_else(|| format!("hard link {shown} has no target"))?
                .into_owned();
            if !inside(&target) || through_link(&target, &links).is_some() {
                return Err(format!(
                    "hard link {shown} points outside the archive ({})",
                    target.display()
                ));
            }
        }
        n += 1;
    }
    Ok(n)
}

impl TrialPod {
    /// Unpacks `tar` into `dest_dir` in the trial container (made first if missing), after
    /// [`check_tar`].
    ///
    /// # Errors
    /// [`KubeFault::Refused`] when the archive fails the check; [`KubeFault::LocalIo`] when the
    /// file cannot be read; the exec's fault; [`KubeFault::ApiError`] with tar's message when
    /// it fails in the pod.
    pub async fn upload_tar(&self, tar: TarBody, dest_dir: &str) -> Result<(), KubeError> {
        let context = format!("copying into {dest_dir} of pod {}", self.name);
        let stdin = match tar {
            TarBody::Bytes(b) => {
                let check = b.clone();
                checked(tokio::task::spawn_blocking(move || check_tar(&check[..])).await)
                    .map_err(|m| KubeError::new(&context, KubeFault::Refused, m))?;
                ExecStdin::Bytes(b)
            }
            TarBody::File(path) => {
                let io = |e: std::io::Error| {
                    KubeError::new(
                        &context,
                        KubeFault::LocalIo,
                        format!("{}: {e}", path.display()),
                    )
                };
                let len = tokio::fs::metadata(&path).await.map_err(io)?.len();
                let p = path.clone();
                checked(
                    tokio::task::spawn_blocking(move || {
                        let f =
                            std::fs::File::open(&p).map_err(|e| format!("{}: {e}", p.display()))?;
                        check_tar(std::io::BufReader::new(f))
                    })
                    .await,
                )
                .map_err(|m| KubeError::new(&context, KubeFault::Refused, m))?;
                ExecStdin::File { path, len }
            }
        };
        let s = STATIC_SHELL_DIR;
        let spec = ExecSpec {
            argv: vec![
                format!("{s}/sh"),
                "-c".into(),
                format!("{s}/mkdir -p -- \"$1\" && exec {s}/tar -x -f - -C \"$1\""),
                "skillscope-untar".into(),
                dest_dir.to_string(),
            ],
            stdin: Some(stdin),
            ..Default::default()
        };
        let out = self.spawn(&spec).await?.output(16 * 1024).await?;
        if out.exit_code != 0 {
            return Err(KubeError::new(
                context,
                KubeFault::ApiError,
                format!(
                    "tar exited with code {}: {}",
                    out.exit_code,
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            ));
        }
        Ok(())
    }

    /// Streams a tar archive of `src` (a file or folder; entries named from its last component,
    /// as Docker's archive API names them) into `sink`, at most `cap` bytes. Returns true when
    /// the archive was cut at the cap (the rest is left in the pod).
    ///
    /// # Errors
    /// A [`KubeFault::Refused`] error for which [`is_missing_path`] is true when `src` does not
    /// exist; [`KubeFault::LocalIo`] when the sink fails; the exec's fault; tar's message when
    /// it fails in the pod.
    pub async fn download_tar(
        &self,
        src: &str,
        sink: &mut (dyn AsyncWrite + Unpin + Send),
        cap: u64,
    ) -> Result<bool, KubeError> {
        let context = format!("copying {src} out of pod {}", self.name);
        let (parent, name) = split_path(src);
        let s = STATIC_SHELL_DIR;
        let spec = ExecSpec::argv([
            format!("{s}/sh"),
            "-c".into(),
            format!(
                "cd -- \"$1\" || exit {MISSING}; [ -e \"$2\" ] || [ -L \"$2\" ] || exit {MISSING}; \
                 exec {s}/tar -c -f - -- \"$2\""
            ),
            "skillscope-tar".into(),
            parent,
            name,
        ]);
        let mut stream = self.spawn(&spec).await?;
        let mut written = 0u64;
        let mut stderr = Vec::new();
        let sink_err = |e: std::io::Error| {
            KubeError::new(
                &context,
                KubeFault::LocalIo,
                format!("writing the archive: {e}"),
            )
        };
        while let Some(ev) = stream.next().await {
            match ev? {
                ExecEvent::Stdout(b) => {
                    let room = cap - written;
                    if b.len() as u64 > room {
                        sink.write_all(&b[..room as usize])
                            .await
                            .map_err(sink_err)?;
                        sink.flush().await.map_err(sink_err)?;
                        return Ok(true);
                    }
                    sink.write_all(&b).await.map_err(sink_err)?;
                    written += b.len() as u64;
                }
                ExecEvent::Stderr(b) => {
                    let room = 4096usize.saturating_sub(stderr.len());
                    stderr.extend_from_slice(&b[..b.len().min(room)]);
                }
                ExecEvent::Exit(0) => {
                    sink.flush().await.map_err(sink_err)?;
                    return Ok(false);
                }
                ExecEvent::Exit(MISSING) if written == 0 => {
                    return Err(KubeError::no_such_path(context, src));
                }
                ExecEvent::Exit(code) => {
                    return Err(KubeError::new(
                        context,
                        KubeFault::ApiError,
                        format!(
                            "tar exited with code {code}: {}",
                            String::from_utf8_lossy(&stderr).trim()
                        ),
                    ));
                }
            }
        }
        Err(KubeError::new(
            context,
            KubeFault::StreamCut,
            "the stream ended without an exit code",
        ))
    }
}

/// True when `e` is [`TrialPod::download_tar`]'s "no such path" ([`KubeError::missing_path`]).
pub fn is_missing_path(e: &KubeError) -> bool {
    e.missing_path().is_some()
}

/// `/a/b/c` → (`/a/b`, `c`); `/` → (`/`, `.`).
fn split_path(src: &str) -> (String, String) {
    let trimmed = src.trim_end_matches('/');
    if trimmed.is_empty() {
        return ("/".into(), ".".into());
    }
    match trimmed.rsplit_once('/') {
        Some(("", name)) => ("/".into(), name.into()),
        Some((parent, name)) => (parent.into(), name.into()),
        None => (".".into(), trimmed.into()),
    }
}

fn checked(r: Result<Result<usize, String>, tokio::task::JoinError>) -> Result<usize, String> {
    r.map_err(|e| format!("checking the archive: {e}"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        build(&mut b);
        b.into_inner().unwrap()
    }

    fn file(b: &mut tar::Builder<Vec<u8>>, path: &str) {
        let mut h = tar::Header::new_gnu();
        h.set_size(2);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        // `append_data` refuses `..`; the raw name goes in as a hostile archive would have it.
        h.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
        h.set_cksum();
        b.append(&h, &b"hi"[..]).unwrap();
    }

    fn link(b: &mut tar::Builder<Vec<u8>>, kind: tar::EntryType, path: &str, target: &str) {
        let mut h = tar::Header::new_gnu();
        h.set_size(0);
        h.set_entry_type(kind);
        h.set_mode(0o777);
        b.append_link(&mut h, path, target).unwrap();
    }

    #[test]
    fn plain_archives_pass() {
        let a = archive(|b| {
            file(b, "work/a.txt");
            link(b, tar::EntryType::Symlink, "work/l", "/etc/passwd");
            link(b, tar::EntryType::Link, "work/h", "work/a.txt");
        });
        assert_eq!(check_tar(&a[..]), Ok(3));
    }

    #[test]
    fn escapes_and_writes_through_links_are_refused() {
        let up = archive(|b| file(b, "../x"));
        assert!(check_tar(&up[..]).unwrap_err().contains("leaves"));
        let abs = archive(|b| file(b, "/etc/x"));
        assert!(check_tar(&abs[..]).unwrap_err().contains("leaves"));
        let through = archive(|b| {
            link(b, tar::EntryType::Symlink, "d", "/etc");
            file(b, "d/passwd");
        });
        assert!(
            check_tar(&through[..])
                .unwrap_err()
                .contains("through the link d")
        );
        let hard = archive(|b| link(b, tar::EntryType::Link, "h", "../../etc/shadow"));
        assert!(check_tar(&hard[..]).unwrap_err().contains("outside"));
    }

    #[test]
    fn paths_split_as_docker_names_archive_entries() {
        assert_eq!(
            split_path("/logs/verifier"),
            ("/logs".into(), "verifier".into())
        );
        assert_eq!(split_path("/logs/"), ("/".into(), "logs".into()));
        assert_eq!(split_path("/"), ("/".into(), ".".into()));
        assert_eq!(split_path("rel"), (".".into(), "rel".into()));
    }
}
