//! Per-trial copies of a compose file's writable bind mounts.
//!
//! A compose file may mount a host folder writable into `main` (`./app:/app`,
//! `${CONTEXT_DIR}/local:/root/.local`). Mounted as it is, that one folder would be shared by the
//! agent's environment, the verifier's and every other trial of the task: the agent's writes
//! would reach the verifier outside the rule of [`crate::runner::work`] (a planted module in a
//! user site folder), persist in the task's folder, and a later trial — an agent that does
//! nothing — would find an earlier trial's answer there. So each writable bind's host folder (or
//! file) is copied per trial: one copy for the trial's site (the agent's environment and the
//! task's services, which share it as compose shares it), and a fresh copy, made from the task's
//! folder again, for each verifier environment. What the agent changed there reaches the
//! verifier the way all its work does: read by content against the folder's files
//! ([`BindCopies::mounted`]) and carried by the rule.
//!
//! Read-only binds stay the host's folder (a hardened environment cannot remount them), and so
//! do binds of the trial's own folder (`HOST_*_LOGS_PATH`) and of what is neither a folder nor a
//! regular file (a socket, a device: nothing to copy). The copies live in a folder of their own
//! in the system's temporary folder (`skillscope-binds-*`, like the hand-over's spool: what the
//! agent wrote there never enters the trial folder, which is kept and shared) and are removed
//! with the site. While a process uses a copies' folder it holds a lock on the folder's
//! [`HELD`] file; a folder whose lock nobody holds was left by a process that was killed, and the
//! next run's start removes it ([`sweep_unheld`]).

use std::path::{Path, PathBuf};

use crate::runner::work::Manifest;
use crate::runner::work::manifest::ManifestLimits;

/// Most bytes of one trial's copies of a task's writable bind folders: past it the task cannot
/// run (a folder that large is mounted read-only, or left out of the compose file).
pub const MAX_BYTES: u64 = 2 << 30;
/// Most entries of one trial's copies.
pub const MAX_ENTRIES: usize = 200_000;

/// What the copies' folders are named in the system's temporary folder.
const FOLDER_PREFIX: &str = "skillscope-binds-";

/// The file in a copies' folder its process holds an exclusive `flock(2)` on while it uses the
/// folder (the kernel lets go when the process ends, however it ends).
pub const HELD: &str = ".held";

/// How old a copies' folder without its [`HELD`] file must be before a sweep takes it as
/// abandoned (a process makes the file just after the folder).
const UNHELD_GRACE: std::time::Duration = std::time::Duration::from_secs(600);

/// Removes the copies' folders in `tmp` (the system's temporary folder) that no process holds:
/// those a killed run left (a copy can be up to [`MAX_BYTES`]). A folder another process holds,
/// one not this user's, and anything that is not a folder (a link of that name) are left alone.
/// Returns how many folders went. Best effort: what cannot be read or removed stays.
pub fn sweep_unheld(tmp: &Path) -> usize {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return 0;
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let mut removed = 0;
    for entry in entries.flatten() {
        if !entry
            .file_name()
            .to_string_lossy()
            .starts_with(FOLDER_PREFIX)
        {
            continue;
        }
        let dir = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != me {
            continue;
        }
        let abandoned = match open_held(&dir.join(HELD)) {
            // Held by nobody: this process now holds it while the folder goes.
            Ok(file) => try_lock(&file),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => meta
                .modified()
                .ok()
                .and_then(|m| m.elapsed().ok())
                .is_some_and(|age| age >= UNHELD_GRACE),
            Err(_) => false,
        };
        if abandoned && std::fs::remove_dir_all(&dir).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Opens (or makes) a [`HELD`] file, never through a link.
fn open_held(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Takes an exclusive `flock(2)` on `file` without waiting; false when another holds it.
fn try_lock(file: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor is open for the call's whole length.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Why a bind could not be copied.
#[derive(Debug)]
pub enum CopyError {
    /// The task's folder is past [`MAX_BYTES`] or [`MAX_ENTRIES`] (a fault of the task).
    TooLarge(String),
    /// The host's filesystem failed (a full disk): a fault of the machine.
    Io(PathBuf, std::io::Error),
}

/// One copied bind.
#[derive(Debug, Clone)]
struct Copied {
    /// The task's host folder or file (canonical).
    source: PathBuf,
    /// The site's copy (what the agent's environment and the services mount).
    site: PathBuf,
}

/// A trial's copies of its task's writable bind sources (empty for a task without any).
#[derive(Debug, Default, Clone)]
pub struct BindCopies {
    /// `$TMPDIR/skillscope-binds-*`, made at the first copy.
    root: Option<PathBuf>,
    /// The folder's [`HELD`] file, locked while any clone of this is alive.
    held: Option<std::sync::Arc<std::fs::File>>,
    copies: Vec<Copied>,
    /// Bytes and entries copied so far, for the site's copies.
    bytes: u64,
    entries: usize,
    /// The folder's files where `main` mounts them.
    mounted: Vec<(String, Manifest)>,
}

impl BindCopies {
    /// The folder the copies are in, once one is made.
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// The copies' folder, made at the first ask.
    fn root_made(&mut self) -> Result<PathBuf, CopyError> {
        if let Some(r) = &self.root {
            return Ok(r.clone());
        }
        let dir = tempfile::Builder::new()
            .prefix(FOLDER_PREFIX)
            .tempdir()
            .map_err(|e| CopyError::Io(std::env::temp_dir(), e))?
            .keep();
        let held = dir.join(HELD);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&held)
            .map_err(|e| CopyError::Io(held.clone(), e))?;
        if !try_lock(&file) {
            return Err(CopyError::Io(held, std::io::Error::last_os_error()));
        }
        self.held = Some(std::sync::Arc::new(file));
        self.root = Some(dir.clone());
        Ok(dir)
    }

    /// The host path to mount for `source` in the site: the site's copy, made at the first ask
    /// (one source mounted twice, in `main` and a service, is one copy). `main_target` is where
    /// `main` mounts it (`None` for a service's bind).
    ///
    /// # Errors
    /// [`CopyError`] when the folder is too large or cannot be copied.
    pub fn site_source(
        &mut self,
        source: &Path,
        main_target: Option<&str>,
    ) -> Result<PathBuf, CopyError> {
        let source =
            std::fs::canonicalize(source).map_err(|e| CopyError::Io(source.to_path_buf(), e))?;
        let at = match self.copies.iter().position(|c| c.source == source) {
            Some(i) => i,
            None => {
                let site = self
                    .root_made()?
                    .join("site")
                    .join(self.copies.len().to_string());
                let (mut bytes, mut entries) = (self.bytes, self.entries);
                copy_tree(&source, &site, &mut bytes, &mut entries)?;
                (self.bytes, self.entries) = (bytes, entries);
                self.copies.push(Copied { source, site });
                self.copies.len() - 1
            }
        };
        if let Some(t) = main_target {
            let files = files_at(&self.copies[at].source, t)?;
            self.mounted.push((t.to_string(), files));
        }
        Ok(self.copies[at].site.clone())
    }

    /// True when nothing was copied.
    pub fn is_empty(&self) -> bool {
        self.copies.is_empty()
    }

    /// The task's files where `main` mounts a copied bind, by content (for
    /// [`crate::runner::backend::TrialSite::mounted`]).
    pub fn mounted(&self) -> &[(String, Manifest)] {
        &self.mounted
    }

    /// `binds` (Docker's `source:target[:mode]` lines) for a verifier's environment: each site
    /// copy replaced by a fresh copy of the task's folder, made now under `verifier-<n>`.
    ///
    /// # Errors
    /// [`CopyError::Io`] when a copy cannot be made (limits were checked by the site's copy).
    pub fn for_verifier(&self, n: usize, binds: &[String]) -> Result<Vec<String>, CopyError> {
        let mut out = Vec::with_capacity(binds.len());
        let Some(root) = &self.root else {
            return Ok(binds.to_vec());
        };
        for line in binds {
            let hit = self.copies.iter().enumerate().find_map(|(i, c)| {
                let prefix = format!("{}:", c.site.display());
                line.strip_prefix(&prefix).map(|rest| (i, c, rest))
            });
            match hit {
                Some((i, c, rest)) => {
                    // One fresh copy per source, shared by its mounts (as the site's is).
                    let fresh = root.join(format!("verifier-{n}")).join(i.to_string());
                    if fresh.symlink_metadata().is_err() {
                        let (mut bytes, mut entries) = (0, 0);
                        copy_tree(&c.source, &fresh, &mut bytes, &mut entries)?;
                    }
                    out.push(format!("{}:{rest}", fresh.display()));
                }
                None => out.push(line.clone()),
            }
        }
        Ok(out)
    }

    /// Removes every copy. Never fails (what cannot be removed stays in its temporary folder).
    pub fn remove(&self) {
        if let Some(root) = &self.root {
            let _ = std::fs::remove_dir_all(root);
        }
    }
}

/// Copies `from` (a folder or a regular file) to `to` (which must not exist): folders, regular
/// files and symbolic links (as links, never followed), with their modes, owners and
/// modification times; devices, pipes and sockets are left out. Counts into `bytes` and
/// `entries`, failing past [`MAX_BYTES`] or [`MAX_ENTRIES`].
fn copy_tree(
    from: &Path,
    to: &Path,
    bytes: &mut u64,
    entries: &mut usize,
) -> Result<(), CopyError> {
    use std::os::unix::fs::MetadataExt;
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| CopyError::Io(parent.to_path_buf(), e))?;
    }
    for entry in walkdir::WalkDir::new(from).follow_links(false) {
        let entry = entry.map_err(|e| {
            let path = e.path().unwrap_or(from).to_path_buf();
            CopyError::Io(path, e.into())
        })?;
        let rel = entry.path().strip_prefix(from).unwrap_or(Path::new(""));
        let dst = if rel.as_os_str().is_empty() {
            to.to_path_buf()
        } else {
            to.join(rel)
        };
        let io = |e| CopyError::Io(dst.clone(), e);
        let meta = entry
            .path()
            .symlink_metadata()
            .map_err(|e| CopyError::Io(entry.path().to_path_buf(), e))?;
        *entries += 1;
        let t = meta.file_type();
        if t.is_file() {
            *bytes += meta.len();
        }
        if *bytes > MAX_BYTES || *entries > MAX_ENTRIES {
            return Err(CopyError::TooLarge(format!(
                "{} is past {} GiB or {MAX_ENTRIES} entries: mount it read-only (`:ro`)",
                from.display(),
                MAX_BYTES >> 30
            )));
        }
        if t.is_dir() {
            std::fs::create_dir(&dst).map_err(io)?;
            std::fs::set_permissions(&dst, meta.permissions()).map_err(io)?;
        } else if t.is_file() {
            std::fs::copy(entry.path(), &dst).map_err(io)?;
        } else if t.is_symlink() {
            let target = std::fs::read_link(entry.path())
                .map_err(|e| CopyError::Io(entry.path().to_path_buf(), e))?;
            std::os::unix::fs::symlink(target, &dst).map_err(io)?;
        } else {
            continue;
        }
        std::os::unix::fs::lchown(&dst, Some(meta.uid()), Some(meta.gid())).map_err(io)?;
        let mtime = filetime::FileTime::from_last_modification_time(&meta);
        filetime::set_symlink_file_times(&dst, mtime, mtime).map_err(io)?;
    }
    // A folder's time after its entries were made in it.
    if let Ok(meta) = from.symlink_metadata()
        && meta.is_dir()
    {
        let mtime = filetime::FileTime::from_last_modification_time(&meta);
        let _ = filetime::set_symlink_file_times(to, mtime, mtime);
    }
    Ok(())
}

/// The files of `source` (a folder or a file) as they appear mounted at `target`, by content.
fn files_at(source: &Path, target: &str) -> Result<Manifest, CopyError> {
    let io = |e| CopyError::Io(source.to_path_buf(), e);
    let mut b = tar::Builder::new(tempfile::tempfile().map_err(io)?);
    b.follow_symlinks(false);
    let name = target.trim_start_matches('/');
    if source.is_dir() {
        b.append_dir_all(name, source).map_err(io)?;
    } else {
        b.append_path_with_name(source, name).map_err(io)?;
    }
    let mut file = b.into_inner().map_err(io)?;
    use std::io::Seek;
    file.rewind().map_err(io)?;
    Manifest::from_tar(
        std::io::BufReader::new(file),
        ManifestLimits {
            entries: MAX_ENTRIES + 1,
            bytes: MAX_BYTES + 1,
        },
    )
    .map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn task_folder() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("app/sub")).unwrap();
        std::fs::write(d.path().join("app/data.txt"), "task data").unwrap();
        std::fs::write(d.path().join("app/sub/run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            d.path().join("app/sub/run.sh"),
            std::fs::Permissions::from_mode(0o750),
        )
        .unwrap();
        std::os::unix::fs::symlink("/etc/passwd", d.path().join("app/link")).unwrap();
        d
    }

    #[test]
    fn a_sweep_removes_only_the_copies_nobody_holds() {
        use std::io::BufRead;
        let tmp = tempfile::tempdir().unwrap();
        let folder = |name: &str, held: bool| {
            let d = tmp.path().join(format!("{FOLDER_PREFIX}{name}"));
            std::fs::create_dir_all(d.join("site/0")).unwrap();
            std::fs::write(d.join("site/0/answer.txt"), "42").unwrap();
            if held {
                std::fs::write(d.join(HELD), "").unwrap();
            }
            d
        };
        let left = folder("left", true);
        let live = folder("live", true);
        let fresh = folder("fresh", false);
        let other = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(other.path(), tmp.path().join("skillscope-binds-link")).unwrap();
        // Another process holds `live` (flock(1) takes the same flock(2) lock), as a run does.
        // One process throughout (`exec`), so killing it ends every holder of the lock.
        let mut holder = std::process::Command::new("sh")
            .args(["-c", "exec 9<>\"$0\"; flock 9; echo held; exec sleep 60"])
            .arg(live.join(HELD))
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(holder.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "held");
        assert_eq!(sweep_unheld(tmp.path()), 1);
        assert!(!left.exists(), "nobody held it: a killed run's");
        assert!(live.join("site/0/answer.txt").exists());
        assert!(
            fresh.exists(),
            "a folder just made, its lock file still to come"
        );
        assert!(other.path().exists() && tmp.path().join("skillscope-binds-link").exists());
        // The holder killed (-9): the kernel let go of its lock, the next sweep takes it.
        holder.kill().unwrap();
        holder.wait().unwrap();
        assert_eq!(sweep_unheld(tmp.path()), 1);
        assert!(!live.exists());
        // A trial's copies in this process are held while they live.
        let task = task_folder();
        let mut copies = BindCopies::default();
        copies.site_source(&task.path().join("app"), None).unwrap();
        let root = copies.root().unwrap().to_path_buf();
        sweep_unheld(&std::env::temp_dir());
        assert!(root.join(HELD).exists());
        copies.remove();
        assert!(!root.exists());
    }

    #[test]
    fn each_environment_gets_its_own_copy_of_the_task_folder() {
        let task = task_folder();
        let mut copies = BindCopies::default();
        let source = task.path().join("app");
        let site = copies.site_source(&source, Some("/app")).unwrap();
        // A service mounting the same folder shares the site's copy.
        assert_eq!(copies.site_source(&source, None).unwrap(), site);
        let root = copies.root().unwrap().to_path_buf();
        assert!(site.starts_with(&root) && root.starts_with(std::env::temp_dir()));
        assert_eq!(std::fs::read(site.join("data.txt")).unwrap(), b"task data");
        let mode = std::fs::metadata(site.join("sub/run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o750);
        assert_eq!(
            std::fs::read_link(site.join("link")).unwrap(),
            Path::new("/etc/passwd"),
            "a link is copied as a link, never followed"
        );
        // The agent writes into its copy; the task's folder and the verifier's copy are untouched.
        std::fs::write(site.join("data.txt"), "forged").unwrap();
        std::fs::write(site.join("answer.txt"), "42").unwrap();
        let other = "/elsewhere:/x".to_string();
        let lines = [
            format!("{}:/app", site.display()),
            other.clone(),
            format!("{}:/srv/app", site.display()),
        ];
        let v = copies.for_verifier(0, &lines).unwrap();
        assert_eq!(v[1], other);
        // The same folder at two targets: one fresh copy for both.
        assert_eq!(v[2].strip_suffix(":/srv/app"), v[0].strip_suffix(":/app"));
        let fresh = PathBuf::from(v[0].strip_suffix(":/app").unwrap());
        assert_ne!(fresh, site);
        assert_eq!(std::fs::read(fresh.join("data.txt")).unwrap(), b"task data");
        assert!(!fresh.join("answer.txt").exists());
        assert_eq!(
            std::fs::read(source.join("data.txt")).unwrap(),
            b"task data"
        );
        assert!(!source.join("answer.txt").exists());
        // The task's files where main mounts them, by content.
        let [(target, files)] = copies.mounted() else {
            panic!("{:?}", copies.mounted())
        };
        assert_eq!(target, "/app");
        let keys: Vec<&str> = files.files.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "/app",
                "/app/data.txt",
                "/app/link",
                "/app/sub",
                "/app/sub/run.sh"
            ]
        );
        copies.remove();
        assert!(!root.exists());
        assert!(source.join("data.txt").exists(), "the task's folder stays");
    }

    #[test]
    fn a_bound_file_is_copied_too() {
        let task = task_folder();
        let mut copies = BindCopies::default();
        let site = copies
            .site_source(&task.path().join("app/data.txt"), Some("/etc/data.txt"))
            .unwrap();
        assert_eq!(std::fs::read(&site).unwrap(), b"task data");
        let files = &copies.mounted()[0].1;
        assert!(files.get("/etc/data.txt").is_some(), "{:?}", files.files);
        copies.remove();
    }

    #[test]
    fn a_folder_past_the_limit_is_the_tasks_fault() {
        let from = tempfile::tempdir().unwrap();
        std::fs::write(from.path().join("a"), "12345").unwrap();
        let to = tempfile::tempdir().unwrap();
        let (mut bytes, mut entries) = (MAX_BYTES - 2, 0);
        match copy_tree(from.path(), &to.path().join("c"), &mut bytes, &mut entries) {
            Err(CopyError::TooLarge(m)) => assert!(m.contains(":ro"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
