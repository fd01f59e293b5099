//! Facts about the file system under a path, from the kernel (`statvfs(3)`, `access(2)`): free
//! space, whether it is mounted read-only, whether this process may write a path. Used to open a
//! store read-only ([`crate::store::readonly`]) and by the preflight's disk checks.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What `statvfs` says of the file system holding a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileSystem {
    /// Bytes free for an unprivileged writer (`f_bavail × f_frsize`).
    pub free_bytes: u64,
    /// Its size in bytes (`f_blocks × f_frsize`): 0 for a virtual file system (`/proc`,
    /// `/sys`), which holds no files of its own — not a full one.
    pub size_bytes: u64,
    /// Mounted read-only (`ST_RDONLY`).
    pub read_only: bool,
}

fn c_path(path: &Path) -> Option<CString> {
    CString::new(path.as_os_str().as_bytes()).ok()
}

/// The file system holding `path` (which must exist), or `None` when it cannot be asked.
pub fn file_system(path: &Path) -> Option<FileSystem> {
    let c = c_path(path)?;
    // SAFETY: a zeroed plain-data out-parameter of the type statvfs(3) fills.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid NUL-terminated path and a pointer to that out-parameter.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(FileSystem {
        free_bytes: (st.f_bavail as u64).saturating_mul(st.f_frsize as u64),
        size_bytes: (st.f_blocks as u64).saturating_mul(st.f_frsize as u64),
        read_only: st.f_flag & libc::ST_RDONLY != 0,
    })
}

/// The file system of `path`'s nearest existing ancestor (a folder a run will create).
pub fn file_system_of_nearest(path: &Path) -> Option<FileSystem> {
    path.ancestors()
        .find(|a| !a.as_os_str().is_empty() && a.exists())
        .or(Some(Path::new(".")))
        .and_then(file_system)
}

/// `access(path, W_OK)`: false for a read-only file system, a missing path, or no permission.
pub fn writable(path: &Path) -> bool {
    let Some(c) = c_path(path) else { return false };
    // SAFETY: a valid NUL-terminated path; access(2) only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// `n` bytes in GiB (or MiB below one GiB), for messages.
pub fn human_bytes(n: u64) -> String {
    const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
    let g = n as f64 / GIB;
    if g >= 1.0 {
        format!("{g:.1} GiB")
    } else {
        format!("{:.0} MiB", n as f64 / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_of_a_temporary_folder() {
        let dir = tempfile::tempdir().unwrap();
        let fs = file_system(dir.path()).unwrap();
        assert!(!fs.read_only);
        assert!(writable(dir.path()));
        assert!(!writable(&dir.path().join("missing")));
        assert!(file_system_of_nearest(&dir.path().join("a/b/c")).is_some());
        assert_eq!(human_bytes(3 * 1024 * 1024 * 1024 / 2), "1.5 GiB");
        assert_eq!(human_bytes(10 * 1024 * 1024), "10 MiB");
    }
}
