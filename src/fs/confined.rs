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
