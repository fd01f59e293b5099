//! Writing a checked skill: folder names made safe and unique, files created with `create_new` +
//! `O_NOFOLLOW` in a fresh hidden folder beside the output, and the folder renamed into place
//! without replacing anything already there.

use std::collections::HashSet;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::skillsbench::skill::MAX_NAME_LEN;

use super::guard::FileData;
use super::{ExportError, io_err};

/// A skill name as a safe single path component: lowercase; characters outside `[a-z0-9-_.]`
/// become `-` (runs of them one `-`); no leading `.` or `-`, no trailing `-`; at most 64
/// characters; `skill` when nothing is left.
pub(super) fn sanitize_dir_name(name: &str) -> String {
    let mut out = String::new();
    let mut replaced = false;
    for c in name.trim().chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.') {
            out.push(c);
            replaced = false;
        } else if !replaced {
            out.push('-');
            replaced = true;
        }
    }
    let mut s = out.trim_start_matches(['.', '-']).to_string();
    s.truncate(MAX_NAME_LEN);
    let s = s.trim_end_matches('-');
    if s.is_empty() {
        "skill".into()
    } else {
        s.to_string()
    }
}

/// [`sanitize_dir_name`], made unique among `used` with `-2`, `-3`, … (and recorded there).
pub(super) fn unique_dir_name(name: &str, used: &mut HashSet<String>) -> String {
    let base = sanitize_dir_name(name);
    let mut candidate = base.clone();
    let mut n = 2;
    while used.contains(&candidate) {
        candidate = format!("{base}-{n}");
        n += 1;
    }
    used.insert(candidate.clone());
    candidate
}

// ---- writing -------------------------------------------------------------------------------------

/// Writes `files` into the new folder `root/dir_name`. Folders are created one component at a
/// time and must not already exist as anything but a real folder; files are created with
/// `create_new` and `O_NOFOLLOW` (mode 0755 when `executable`, else 0644, before the umask).
pub(super) fn write_skill(
    root: &Path,
    dir_name: &str,
    files: &[FileData],
) -> Result<(), ExportError> {
    let dir = root.join(dir_name);
    std::fs::create_dir(&dir).map_err(|e| io_err(&dir, e))?;
    for f in files {
        let mut cur = dir.clone();
        let comps: Vec<&str> = f.path.split('/').collect();
        for c in &comps[..comps.len() - 1] {
            cur.push(c);
            match std::fs::create_dir(&cur) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let real_dir = std::fs::symlink_metadata(&cur).is_ok_and(|m| m.is_dir());
                    if !real_dir {
                        return Err(io_err(&cur, "exists and is not a folder"));
                    }
                }
                Err(e) => return Err(io_err(&cur, e)),
            }
        }
        let path = dir.join(&f.path);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(if f.executable { 0o755 } else { 0o644 })
            .open(&path)
            .map_err(|e| io_err(&path, e))?;
        file.write_all(&f.bytes).map_err(|e| io_err(&path, e))?;
    }
    Ok(())
}

/// Renames `from` to `to` unless `to` exists (atomically on Linux via `renameat2`
/// `RENAME_NOREPLACE`; elsewhere, or where the filesystem does not support it, by checking first).
pub(super) fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let f = std::ffi::CString::new(from.as_os_str().as_bytes())?;
        let t = std::ffi::CString::new(to.as_os_str().as_bytes())?;
        // SAFETY: both pointers are valid NUL-terminated strings that outlive the call.
        let r = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                f.as_ptr(),
                libc::AT_FDCWD,
                t.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if !matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) {
            return Err(e);
        }
    }
    if std::fs::symlink_metadata(to).is_ok() {
        return Err(std::io::ErrorKind::AlreadyExists.into());
    }
    std::fs::rename(from, to)
}

/// A hidden temporary folder beside the new folder `out` (same parent, so the final rename stays
/// on one filesystem); the parent is created when missing.
pub(super) fn fresh_folder(out: &Path) -> Result<tempfile::TempDir, ExportError> {
    if std::fs::symlink_metadata(out).is_ok() {
        return Err(ExportError::Exists(out.to_path_buf()));
    }
    let Some(out_name) = out.file_name().and_then(|n| n.to_str()) else {
        return Err(io_err(out, "not a usable folder name"));
    };
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(|e| io_err(&parent, e))?;
    tempfile::Builder::new()
        .prefix(&format!(".{out_name}.partial-"))
        .tempdir_in(&parent)
        .map_err(|e| io_err(&parent, e))
}

/// Makes the finished temporary folder `tmp` (mode 0755) the folder `out`, never replacing
/// anything there.
pub(super) fn move_into_place(tmp: tempfile::TempDir, out: &Path) -> Result<(), ExportError> {
    let root = tmp.path().to_path_buf();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| io_err(&root, e))?;
    match rename_noreplace(&root, out) {
        Ok(()) => {
            // Renamed away: nothing left for the guard to clean.
            let _ = tmp.keep();
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Err(ExportError::Exists(out.to_path_buf()))
        }
        // ENOTEMPTY / EEXIST from a plain rename over a folder mean the same.
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTEMPTY | libc::EEXIST)) => {
            Err(ExportError::Exists(out.to_path_buf()))
        }
        Err(e) => Err(io_err(out, e)),
    }
}

// ---- export --------------------------------------------------------------------------------------
