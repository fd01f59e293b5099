//! Tar streams between this machine and an environment: a host folder packed for an upload, and
//! an environment's folder unpacked here with every entry checked (container output is hostile).

use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::runner::RunnerError;
use crate::runner::secrets::Secrets;

/// What a copy out of an environment brought.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyOut {
    /// Regular files written.
    pub files: usize,
    /// The tar stream was cut at its cap.
    pub truncated: bool,
    /// Entries left out: links, devices, paths leaving the folder, names already taken by
    /// skillscope's own files.
    pub skipped: Vec<String>,
}

/// Tars a folder's contents under `prefix/` (modes kept, times zeroed, symlinks kept as links).
/// Into `out`: in memory for small folders, a spool file for large ones.
pub(crate) fn tar_dir<W: std::io::Write>(
    out: W,
    local: &Path,
    prefix: &str,
) -> Result<W, RunnerError> {
    let mut b = tar::Builder::new(out);
    b.follow_symlinks(false);
    b.mode(tar::HeaderMode::Deterministic);
    b.append_dir_all(prefix, local)
        .map_err(|e| RunnerError::io(local, e))?;
    b.into_inner().map_err(|e| RunnerError::io(local, e))
}

/// Size of a tar's end-of-archive marker as the `tar` crate writes it: two zero blocks.
const END_OF_ARCHIVE: u64 = 1024;

/// Appends a folder's contents under `prefix/` (as [`tar_dir`]) to the finished tar in the file
/// `tar` (one the `tar` crate wrote: its end-of-archive marker is replaced, a new one written
/// after the new entries), so that one upload carries both. Returns `false`, the file
/// unchanged, when it does not end as such a tar does (the caller then uploads the folder on its
/// own).
///
/// # Errors
/// [`RunnerError::Io`] when the file or the folder cannot be read or written.
pub(crate) fn append_dir(tar: &Path, local: &Path, prefix: &str) -> Result<bool, RunnerError> {
    use std::io::{Read, Seek, SeekFrom};
    let io = |e: std::io::Error| RunnerError::io(tar, e);
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(tar)
        .map_err(io)?;
    let len = f.metadata().map_err(io)?.len();
    if len < END_OF_ARCHIVE || len % 512 != 0 {
        return Ok(false);
    }
    let mut end = [0u8; END_OF_ARCHIVE as usize];
    f.seek(SeekFrom::Start(len - END_OF_ARCHIVE)).map_err(io)?;
    f.read_exact(&mut end).map_err(io)?;
    if end.iter().any(|b| *b != 0) {
        return Ok(false);
    }
    f.set_len(len - END_OF_ARCHIVE).map_err(io)?;
    f.seek(SeekFrom::End(0)).map_err(io)?;
    tar_dir(f, local, prefix)?;
    Ok(true)
}

/// Extracts the regular files and folders of a tar (as Docker archives a folder: its own name
/// first) into `dest`, dropping the first path component. Refused, and named in the result:
/// links (symbolic and hard), devices and pipes, paths that are absolute or hold `..`, names
/// already taken in `dest` (skillscope's own files, or a folder where a file should go). No write
/// follows a link ([`crate::fs::create_dir_within`], [`crate::fs::create_new`]); `secrets` are
/// redacted as each file is written. A stream cut at `cap` (`truncated`) keeps what arrived
/// whole and ends with `TRUNCATED.txt`; a damaged stream ends the copy where it broke.
pub(crate) fn untar_safely(
    tar: impl std::io::Read,
    dest: &Path,
    truncated: bool,
    cap: u64,
    secrets: &Arc<Secrets>,
) -> Result<CopyOut, RunnerError> {
    let mut archive = tar::Archive::new(tar);
    let mut out = CopyOut {
        truncated,
        ..Default::default()
    };
    std::fs::create_dir_all(dest).map_err(|e| RunnerError::io(dest, e))?;
    let entries = archive.entries().map_err(|e| RunnerError::io(dest, e))?;
    for entry in entries {
        let Ok(mut entry) = entry else { break };
        let Ok(path) = entry.path().map(|p| p.into_owned()) else {
            continue;
        };
        let mut rel = PathBuf::new();
        let mut ok = true;
        for (i, c) in path.components().enumerate() {
            match c {
                Component::Normal(p) if i > 0 => rel.push(p),
                Component::Normal(_) | Component::CurDir => {}
                _ => ok = false,
            }
        }
        let shown = path.display().to_string();
        if !ok {
            out.skipped.push(format!("{shown} (leaves the folder)"));
            continue;
        }
        match entry.header().entry_type() {
            tar::EntryType::Directory => {
                if rel.as_os_str().is_empty() {
                    continue;
                }
                if let Err(e) = crate::fs::create_dir_within(dest, &rel) {
                    out.skipped.push(format!("{shown} ({e})"));
                }
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
                    continue;
                };
                let dir = match crate::fs::create_dir_within(dest, parent) {
                    Ok(d) => d,
                    Err(e) => {
                        out.skipped.push(format!("{shown} ({e})"));
                        continue;
                    }
                };
                let target = dir.join(name);
                let file =
                    crate::fs::create_new(&target).map_err(|e| RunnerError::io(&target, e))?;
                let Some(file) = file else {
                    out.skipped.push(format!("{shown} (the name is taken)"));
                    continue;
                };
                let mut w = std::io::BufWriter::new(file);
                let copied = secrets.copy(&mut entry, &mut w);
                w.flush().map_err(|e| RunnerError::io(&target, e))?;
                out.files += 1;
                if let Err(e) = copied {
                    if crate::runner::is_disk_full(&e) {
                        return Err(RunnerError::io(&target, e));
                    }
                    // The stream ended inside this file (cut at the cap, or damaged).
                    break;
                }
            }
            other => out
                .skipped
                .push(format!("{shown} ({other:?} entries are not copied)")),
        }
    }
    if truncated {
        let note = format!(
            "skillscope copied at most {cap} bytes of this folder out of the container; the rest was left there\n"
        );
        let _ = crate::fs::write_fresh(&dest.join("TRUNCATED.txt"), note.as_bytes());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tar_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (p, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_entry_type(tar::EntryType::Regular);
            // Write the raw name so paths such as `../x` reach the extractor unchanged.
            let name = p.as_bytes();
            h.as_old_mut().name[..name.len()].copy_from_slice(name);
            h.set_cksum();
            b.append(&h, *data).unwrap();
        }
        b.into_inner().unwrap()
    }

    /// The names and contents of a tar's entries, in order.
    fn listed(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
        use std::io::Read;
        let mut a = tar::Archive::new(bytes);
        let mut out = Vec::new();
        for e in a.entries().unwrap() {
            let mut e = e.unwrap();
            let name = e.path().unwrap().display().to_string();
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            out.push((name, data));
        }
        out
    }

    /// A folder appended to a finished tar comes after its entries, in one archive a reader
    /// reads to the end; a file that does not end as such a tar is left as it was.
    #[test]
    fn a_folder_appended_to_a_tar_is_read_after_its_entries() {
        let tmp = tempfile::tempdir().unwrap();
        let tests = tmp.path().join("tests");
        std::fs::create_dir_all(tests.join("data")).unwrap();
        std::fs::write(tests.join("test.sh"), "#!/bin/sh\n").unwrap();
        std::fs::write(tests.join("data/expected.csv"), "a,b\n").unwrap();
        let work = tmp.path().join("work.tar");
        std::fs::write(&work, tar_of(&[("app/out.txt", b"42\n")])).unwrap();
        assert!(append_dir(&work, &tests, "tests").unwrap());
        let got = listed(&std::fs::read(&work).unwrap());
        assert_eq!(got[0], ("app/out.txt".to_string(), b"42\n".to_vec()));
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        for n in ["tests/test.sh", "tests/data/expected.csv"] {
            assert!(names.contains(&n), "{names:?}");
        }
        assert_eq!(std::fs::read(&work).unwrap().len() % 512, 0);
        // Not a finished tar: unchanged, and the caller uploads the folder on its own.
        let cut = tmp.path().join("cut.tar");
        let mut bytes = tar_of(&[("app/out.txt", b"42\n")]);
        bytes.truncate(1024);
        std::fs::write(&cut, &bytes).unwrap();
        assert!(!append_dir(&cut, &tests, "tests").unwrap());
        assert_eq!(std::fs::read(&cut).unwrap(), bytes);
        let short = tmp.path().join("short.tar");
        std::fs::write(&short, b"x").unwrap();
        assert!(!append_dir(&short, &tests, "tests").unwrap());
    }

    #[test]
    fn untar_drops_first_component_and_refuses_escapes() {
        let tmp = tempfile::tempdir().unwrap();
        let bytes = tar_of(&[
            ("logs/verifier/reward.txt", b"1\n"),
            ("logs/../../escape.txt", b"x"),
            ("/etc/abs.txt", b"x"),
        ]);
        let n = untar_safely(&bytes[..], tmp.path(), false, 1 << 20, &Arc::default()).unwrap();
        assert_eq!(n.files, 1);
        assert_eq!(n.skipped.len(), 2, "{n:?}");
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("verifier/reward.txt")).unwrap(),
            "1\n"
        );
        assert!(!tmp.path().parent().unwrap().join("escape.txt").exists());
    }

    /// Links (symbolic and hard) are never made, no write goes through a link already in the
    /// folder, skillscope's own files are kept, secrets are redacted, and a stream cut at its cap
    /// ends with a note.
    #[test]
    fn untar_makes_no_link_and_overwrites_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let dest = tmp.path().join("agent");
        std::fs::create_dir(&dest).unwrap();
        std::fs::write(dest.join("trajectory.json"), "skillscope's").unwrap();
        std::os::unix::fs::symlink(outside.path(), dest.join("sub")).unwrap();
        let mut b = tar::Builder::new(Vec::new());
        let mut link = |name: &str, target: &Path, kind: tar::EntryType| {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(kind);
            h.set_size(0);
            h.set_mode(0o777);
            b.append_link(&mut h, name, target).unwrap();
        };
        link("agent/oracle.txt", &victim, tar::EntryType::Symlink);
        link("agent/hard.txt", &victim, tar::EntryType::Link);
        let mut file = |name: &str, data: &[u8]| {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Regular);
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            b.append_data(&mut h, name, data).unwrap();
        };
        file("agent/trajectory.json", b"forged");
        file("agent/sub/victim", b"through a link");
        file("agent/env.txt", b"KEY=sk-0123456789abcdef\n");
        let bytes = b.into_inner().unwrap();
        let secrets = Arc::new(Secrets::new([("KEY", "sk-0123456789abcdef")]));
        let out = untar_safely(&bytes[..], &dest, false, 1 << 20, &secrets).unwrap();
        assert_eq!(out.files, 1, "{out:?}");
        assert_eq!(out.skipped.len(), 4, "{out:?}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(!outside.path().join("victim.txt").exists());
        assert_eq!(
            std::fs::read_to_string(dest.join("trajectory.json")).unwrap(),
            "skillscope's"
        );
        assert!(std::fs::symlink_metadata(dest.join("oracle.txt")).is_err());
        assert_eq!(
            std::fs::read_to_string(dest.join("env.txt")).unwrap(),
            "KEY=[redacted KEY]\n"
        );
        // Cut at the cap: what arrived is kept, and a note says so.
        let cut = tempfile::tempdir().unwrap();
        let big = tar_of(&[("logs/a.bin", &[7u8; 4096]), ("logs/b.bin", &[8u8; 4096])]);
        let out = untar_safely(&big[..5000], cut.path(), true, 5000, &Arc::default()).unwrap();
        assert!(out.truncated && out.files >= 1, "{out:?}");
        let note = std::fs::read_to_string(cut.path().join("TRUNCATED.txt")).unwrap();
        assert!(note.contains("5000 bytes"), "{note}");
    }
}
