//! File access in folders a container can write to (bind-mounted `/logs`). Container output is
//! untrusted: a planted symlink must never redirect skillscope's writes or reads to another host
//! file. Writes replace whatever is at the path and create the file exclusively (`O_EXCL` fails on
//! a symlink); reads refuse symlinks (`O_NOFOLLOW`) and anything but a regular file, and are capped.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Creates `path` afresh for writing, removing a file or symlink already there. Fails if a new
/// entry appears in between (someone racing us) rather than following it.
///
/// # Errors
/// I/O errors, including `AlreadyExists` when the path was re-created concurrently.
pub fn create_fresh(path: &Path) -> std::io::Result<File> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path)?,
        Ok(_) => std::fs::remove_file(path)?,
        Err(_) => {}
    }
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Writes `bytes` to `path` afresh ([`create_fresh`]): whatever was at the path (a file, a
/// planted symlink, a folder) is replaced, and no link is followed.
///
/// # Errors
/// As [`create_fresh`], and write errors.
pub fn write_fresh(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = create_fresh(path)?;
    f.write_all(bytes)?;
    f.flush()
}

/// Creates `path` as a new file for writing only when nothing is there (`O_EXCL`, no link
/// followed): `Ok(None)` when the path is already taken (a file skillscope wrote, a link, a
/// folder), which the caller keeps as it is.
///
/// # Errors
/// I/O errors other than the path being taken.
pub fn create_new(path: &Path) -> std::io::Result<Option<File>> {
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
    {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(None),
        Err(e) => Err(e),
    }
}

/// Creates the folder `rel` (plain relative components only) under `root`, and every folder on
/// the way, without following a link at any level: a component that exists as anything but a
/// real folder is refused. Returns the folder's path. `root` itself must be a real folder.
///
/// # Errors
/// `InvalidInput` for a component that is not a plain name (`..`, `/`, `.`); `NotADirectory`
/// (as an `Other` error naming the path) for a component that is a link or a file; I/O errors.
pub fn create_dir_within(root: &Path, rel: &Path) -> std::io::Result<std::path::PathBuf> {
    use std::path::Component;
    let mut at = root.to_path_buf();
    for c in rel.components() {
        let Component::Normal(name) = c else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{} is not a plain relative path", rel.display()),
            ));
        };
        at.push(name);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(std::io::Error::other(format!(
                    "{} is not a folder (a link or a file is there)",
                    at.display()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match std::fs::create_dir(&at) {
                Ok(()) => {}
                // Made in between by someone else: checked again below.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    if !std::fs::symlink_metadata(&at)?.is_dir() {
                        return Err(std::io::Error::other(format!(
                            "{} is not a folder",
                            at.display()
                        )));
                    }
                }
                Err(e) => return Err(e),
            },
            Err(e) => return Err(e),
        }
    }
    Ok(at)
}

/// The first component of `path` below `root` — the last one aside, which the readers here
/// open with `O_NOFOLLOW` — that is a symbolic link leading outside `root` (or nowhere), when
/// there is one: a folder of an imported job planted as a link to `/etc` would otherwise be read
/// through. `None` when every middle component is a real folder or a link that stays inside.
/// A `path` outside `root` is its own answer.
pub fn link_leaving(root: &Path, path: &Path) -> Option<std::path::PathBuf> {
    let Ok(rel) = path.strip_prefix(root) else {
        return Some(path.to_path_buf());
    };
    let real_root = root.canonicalize().ok()?;
    let parts: Vec<_> = rel.components().collect();
    let mut at = root.to_path_buf();
    for c in parts.iter().take(parts.len().saturating_sub(1)) {
        at.push(c);
        let is_link = std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink());
        if is_link && !at.canonicalize().is_ok_and(|r| r.starts_with(&real_root)) {
            return Some(at);
        }
    }
    None
}

/// Reads a regular file without following symlinks, at most `max` bytes (the rest is ignored).
///
/// # Errors
/// `NotFound`, a symlink (`ELOOP`), a non-regular file (`InvalidData`), or other I/O errors.
pub fn read_capped(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} is not a regular file", path.display()),
        ));
    }
    let mut buf = Vec::new();
    f.take(max).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Reads the last `max` bytes of a regular file without following symlinks. Returns the bytes and
/// whether the file was longer.
///
/// # Errors
/// As [`read_capped`].
pub fn read_tail(path: &Path, max: u64) -> std::io::Result<(Vec<u8>, bool)> {
    use std::io::{Seek, SeekFrom};
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} is not a regular file", path.display()),
        ));
    }
    let longer = meta.len() > max;
    if longer {
        f.seek(SeekFrom::Start(meta.len() - max))?;
    }
    let mut buf = Vec::new();
    f.take(max).read_to_end(&mut buf)?;
    Ok((buf, longer))
}

/// [`read_tail`], with the number of lines before the bytes returned (0 when the whole file
/// fits), so a line of the tail can be named by its number in the file. The skipped part is
/// streamed, never held.
///
/// # Errors
/// As [`read_tail`].
pub fn read_tail_lines(path: &Path, max: u64) -> std::io::Result<(Vec<u8>, usize)> {
    let (tail, longer) = read_tail(path, max)?;
    if !longer {
        return Ok((tail, 0));
    }
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let skipped = f.metadata()?.len().saturating_sub(tail.len() as u64);
    let mut reader = std::io::BufReader::new(f.take(skipped));
    let mut lines = 0;
    loop {
        let buf = std::io::BufRead::fill_buf(&mut reader)?;
        if buf.is_empty() {
            break;
        }
        lines += buf.iter().filter(|b| **b == b'\n').count();
        let n = buf.len();
        std::io::BufRead::consume(&mut reader, n);
    }
    Ok((tail, lines))
}

/// [`read_capped`] as text (lossy UTF-8).
///
/// # Errors
/// As [`read_capped`].
pub fn read_text_capped(path: &Path, max: u64) -> std::io::Result<String> {
    read_capped(path, max).map(|b| String::from_utf8_lossy(&b).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn writes_never_follow_planted_symlinks() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim.txt");
        std::fs::write(&victim, "keep").unwrap();
        let out = tmp.path().join("test-stdout.txt");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        let mut f = create_fresh(&out).unwrap();
        f.write_all(b"verifier output").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(
            !std::fs::symlink_metadata(&out)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn new_files_and_folders_never_go_through_links() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim.txt");
        std::fs::write(&victim, "keep").unwrap();
        let root = tmp.path();
        std::os::unix::fs::symlink(outside.path(), root.join("agent")).unwrap();
        assert!(create_dir_within(root, Path::new("agent/sub")).is_err());
        assert!(!outside.path().join("sub").exists());
        assert!(create_dir_within(root, Path::new("../x")).is_err());
        let made = create_dir_within(root, Path::new("verifier/a/b")).unwrap();
        assert!(made.is_dir() && made.starts_with(root));
        std::os::unix::fs::symlink(&victim, root.join("verifier/link")).unwrap();
        assert!(create_new(&root.join("verifier/link")).unwrap().is_none());
        assert!(create_new(&root.join("verifier/new")).unwrap().is_some());
        write_fresh(&root.join("verifier/link"), b"mine").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(
            std::fs::read_to_string(root.join("verifier/link")).unwrap(),
            "mine"
        );
    }

    #[test]
    fn a_middle_link_leaving_the_root_is_found() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::create_dir_all(r.join("job/t1/verifier")).unwrap();
        std::fs::create_dir_all(r.join("job/t2")).unwrap();
        std::os::unix::fs::symlink(outside.path(), r.join("job/t2/agent")).unwrap();
        std::os::unix::fs::symlink(r.join("job/t1/verifier"), r.join("job/t2/verifier")).unwrap();
        assert_eq!(link_leaving(r, &r.join("job/t1/verifier/ctrf.json")), None);
        assert_eq!(
            link_leaving(r, &r.join("job/t2/agent/trajectory.json")),
            Some(r.join("job/t2/agent"))
        );
        // A link that stays inside the root is fine; the last component is the reader's.
        assert_eq!(link_leaving(r, &r.join("job/t2/verifier/ctrf.json")), None);
        assert_eq!(link_leaving(r, &r.join("job/t2/agent")), None);
    }

    #[test]
    fn reads_refuse_symlinks_and_fifos_and_cap() {
        let tmp = tempfile::tempdir().unwrap();
        let secret = tmp.path().join("secret");
        std::fs::write(&secret, "1").unwrap();
        let link = tmp.path().join("reward.txt");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        assert!(read_capped(&link, 10).is_err());
        let big = tmp.path().join("big");
        std::fs::write(&big, vec![b'x'; 100]).unwrap();
        assert_eq!(read_capped(&big, 10).unwrap().len(), 10);
        let fifo = tmp.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        assert!(read_capped(&fifo, 10).is_err());
    }
}
