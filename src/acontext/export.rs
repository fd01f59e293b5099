//! Skill export: a learning space's skills → a SkillsBench `skills/` folder
//! (`<out>/<dir_name>/SKILL.md` plus the skill's other files).
//!
//! Skills come from the server, which learned them from agent trajectories: their content is
//! untrusted. Every entry is checked before anything of its skill is written — paths (absolute,
//! `..`, backslashes, control characters, empty components, Windows drive prefixes, over-long
//! components, duplicates), entry types (symlinks and other non-regular files), sizes (read with a
//! cap, never trusting the ZIP header) and counts — and the skill's `SKILL.md` must pass
//! [`check_skill_md`]. A skill with one bad entry is refused as a whole and recorded in
//! [`ExportReport::refused`]; the other skills still export.
//!
//! The export is all-or-nothing on the network side: an API or transport error (after the
//! client's own retries) that is not a reason to fall back aborts the export with
//! [`ExportError::Api`] and leaves nothing behind. Files are written into a fresh hidden folder
//! next to `out` (same parent, so the final rename stays on one filesystem), created with
//! `create_new` + `O_NOFOLLOW`, and the folder is renamed to `out` at the end — without replacing
//! anything already there ([`ExportError::Exists`]).
//!
//! [`snapshot_dir`] hashes a skill folder already on disk (e.g. a task's curated skills) the same
//! way, so curated and learned skills can be compared by [`SkillSnapshot::content_hash`].

use std::collections::{BTreeSet, HashSet};
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::client::{AcontextError, Client};
use super::model::AgentSkill;
use crate::safe_fs;
use crate::skillsbench::skill::{MAX_NAME_LEN, Severity, check_skill_md};

/// Files up to this size (bytes) that are valid UTF-8 without NUL bytes keep their text in
/// [`SkillFileRecord::text`] (256 KiB).
pub const MAX_TEXT_BYTES: u64 = 256 * 1024;

/// Longest path component accepted, bytes (the usual `NAME_MAX`).
const MAX_COMPONENT_BYTES: usize = 255;

/// Unix file-type bits (`S_IFMT`) and the types among them that matter here.
const S_IFMT: u32 = 0o170_000;
const S_IFLNK: u32 = 0o120_000;
const S_IFREG: u32 = 0o100_000;
const S_IFDIR: u32 = 0o040_000;

/// Size and count limits applied to every exported (or snapshotted) skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportLimits {
    /// Largest single file, bytes (default 5 MiB). Larger files refuse their skill.
    pub max_file_bytes: u64,
    /// Largest skill (sum of its files), bytes (default 50 MiB).
    pub max_skill_bytes: u64,
    /// Most files in one skill (default 1000). A ZIP may additionally hold at most this many
    /// folder entries, and macOS junk entries count as files.
    pub max_files: usize,
}

impl Default for ExportLimits {
    fn default() -> Self {
        ExportLimits {
            max_file_bytes: 5 * 1024 * 1024,
            max_skill_bytes: 50 * 1024 * 1024,
            max_files: 1000,
        }
    }
}

/// One file of a skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillFileRecord {
    /// Path relative to the skill folder, `/`-separated (`SKILL.md`, `scripts/run.sh`).
    pub path: String,
    /// Size, bytes.
    pub size: u64,
    /// SHA-256 of the content, lowercase hex.
    pub sha256: String,
    /// The content, when it is valid UTF-8 without NUL bytes and at most [`MAX_TEXT_BYTES`]
    /// (for diffs).
    pub text: Option<String>,
}

/// What one skill folder holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillSnapshot {
    /// Skill name: the SKILL.md frontmatter `name` (for [`snapshot_dir`], the folder name when
    /// the frontmatter cannot be read).
    pub name: String,
    /// Folder name under the export root (`<out>/<dir_name>/`).
    pub dir_name: String,
    /// The SKILL.md frontmatter `description` (empty when it cannot be read).
    pub description: String,
    /// The server's skill id (`None` for folders on disk).
    pub remote_id: Option<String>,
    /// The server's `updated_at` (`None` when unknown or for folders on disk).
    pub updated_at: Option<String>,
    /// [`content_hash`] of `files`: lowercase hex SHA-256.
    pub content_hash: String,
    /// Files, sorted by path.
    pub files: Vec<SkillFileRecord>,
    /// SKILL.md problems that do not refuse the skill (for exports: warnings only; for
    /// [`snapshot_dir`]: every problem, errors prefixed `error:`).
    pub problems: Vec<String>,
}

/// A skill that was not exported (or a folder that could not be snapshotted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// The skill's name on the server (its id when it has none; the folder name for
    /// [`snapshot_dir`]).
    pub skill: String,
    /// The offending entry, relative to the skill (as the server or the archive spelled it);
    /// `None` when the refusal concerns the whole skill.
    pub path: Option<String>,
    /// Why.
    pub reason: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.path {
            Some(p) => write!(f, "skill {:?}: {p:?}: {}", self.skill, self.reason),
            None => write!(f, "skill {:?}: {}", self.skill, self.reason),
        }
    }
}

/// The result of [`export_space`].
#[derive(Debug, Clone, Serialize)]
pub struct ExportReport {
    /// The export folder (`out`).
    pub dir: PathBuf,
    /// Exported skills, sorted by `dir_name`.
    pub skills: Vec<SkillSnapshot>,
    /// Skills not exported, in the server's order.
    pub refused: Vec<Refusal>,
}

/// Export errors. Refused skills are not errors (see [`ExportReport::refused`]), except for
/// [`snapshot_dir`], which has only one skill ([`ExportError::Refused`]).
#[derive(Debug, Clone, thiserror::Error)]
pub enum ExportError {
    /// An Acontext call failed (its message names the endpoint).
    #[error("skill export: {0}")]
    Api(#[from] AcontextError),
    /// A local file operation failed.
    #[error("skill export: {}: {message}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// The export folder already exists; exports never overwrite.
    #[error("skill export: {} already exists", .0.display())]
    Exists(PathBuf),
    /// [`snapshot_dir`]: the folder holds something a skill may not hold.
    #[error("{0}")]
    Refused(Refusal),
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> ExportError {
    ExportError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// SHA-256 (lowercase hex) over the files' `(path, sha256)` pairs sorted by path, each encoded as
/// `path NUL sha256 LF`. Independent of the order of `files`; paths cannot contain NUL or LF
/// (checked paths have no control characters), so the encoding is unambiguous.
pub fn content_hash(files: &[SkillFileRecord]) -> String {
    let mut pairs: Vec<(&str, &str)> = files
        .iter()
        .map(|f| (f.path.as_str(), f.sha256.as_str()))
        .collect();
    pairs.sort_unstable();
    let mut h = Sha256::new();
    for (path, sha) in pairs {
        h.update(path.as_bytes());
        h.update([0u8]);
        h.update(sha.as_bytes());
        h.update([b'\n']);
    }
    hex::encode(h.finalize())
}

/// The record of one file's content.
fn record(path: &str, bytes: &[u8]) -> SkillFileRecord {
    let text = (bytes.len() as u64 <= MAX_TEXT_BYTES && !bytes.contains(&0))
        .then(|| std::str::from_utf8(bytes).ok().map(str::to_string))
        .flatten();
    SkillFileRecord {
        path: path.to_string(),
        size: bytes.len() as u64,
        sha256: hex::encode(Sha256::digest(bytes)),
        text,
    }
}

// ---- entry checks --------------------------------------------------------------------------------

/// One file of a skill in memory; `path` has passed [`check_path`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileData {
    path: String,
    bytes: Vec<u8>,
    executable: bool,
}

/// Why a skill is refused, before its name is attached.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Reject {
    path: Option<String>,
    reason: String,
}

impl Reject {
    fn at(path: &str, reason: impl Into<String>) -> Reject {
        Reject {
            path: Some(path.to_string()),
            reason: reason.into(),
        }
    }

    fn whole(reason: impl Into<String>) -> Reject {
        Reject {
            path: None,
            reason: reason.into(),
        }
    }

    fn refusal(self, skill: &str) -> Refusal {
        Refusal {
            skill: skill.to_string(),
            path: self.path,
            reason: self.reason,
        }
    }
}

/// Checks an entry path and returns it normalised (`.` components dropped). Refused: empty
/// paths or components, absolute paths, `..`, backslashes, control characters (NUL included),
/// Windows drive prefixes (`C:`), components over 255 bytes.
fn check_path(raw: &str) -> Result<String, String> {
    if raw.is_empty() {
        return Err("empty path".into());
    }
    if raw.contains('\\') {
        return Err("backslash in path".into());
    }
    if raw.chars().any(char::is_control) {
        return Err("control character in path".into());
    }
    if raw.starts_with('/') {
        return Err("absolute path".into());
    }
    let mut parts = Vec::new();
    for (i, c) in raw.split('/').enumerate() {
        match c {
            "" => return Err("empty path component".into()),
            "." => continue,
            ".." => return Err("parent-folder (`..`) component".into()),
            _ => {}
        }
        let b = c.as_bytes();
        if i == 0 && b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
            return Err("Windows drive prefix".into());
        }
        if c.len() > MAX_COMPONENT_BYTES {
            return Err(format!(
                "path component longer than {MAX_COMPONENT_BYTES} bytes"
            ));
        }
        parts.push(c);
    }
    if parts.is_empty() {
        return Err("empty path".into());
    }
    Ok(parts.join("/"))
}

/// macOS archive junk: anything under `__MACOSX/` and `.DS_Store` files.
fn is_junk(path: &str) -> bool {
    path.split('/').next() == Some("__MACOSX") || path.rsplit('/').next() == Some(".DS_Store")
}

/// Running file count and byte total of one skill.
struct Budget {
    limits: ExportLimits,
    files: usize,
    bytes: u64,
}

impl Budget {
    fn new(limits: &ExportLimits) -> Budget {
        Budget {
            limits: *limits,
            files: 0,
            bytes: 0,
        }
    }

    /// Counts one more file (before reading it).
    fn count(&mut self, path: &str) -> Result<(), Reject> {
        self.files += 1;
        if self.files > self.limits.max_files {
            return Err(Reject::at(
                path,
                format!("more than {} files", self.limits.max_files),
            ));
        }
        Ok(())
    }

    /// Adds a file's size (announced or read).
    fn add(&mut self, path: &str, size: u64) -> Result<(), Reject> {
        if size > self.limits.max_file_bytes {
            return Err(Reject::at(
                path,
                format!(
                    "file larger than {} bytes ({}+ bytes)",
                    self.limits.max_file_bytes, size
                ),
            ));
        }
        self.bytes += size;
        if self.bytes > self.limits.max_skill_bytes {
            return Err(Reject::at(
                path,
                format!("skill larger than {} bytes", self.limits.max_skill_bytes),
            ));
        }
        Ok(())
    }

    /// Whether a file of `size` bytes still fits (without counting it).
    fn fits(&self, path: &str, size: u64) -> Result<(), Reject> {
        if size > self.limits.max_file_bytes {
            return Err(Reject::at(
                path,
                format!(
                    "file larger than {} bytes ({size} bytes)",
                    self.limits.max_file_bytes
                ),
            ));
        }
        if self.bytes.saturating_add(size) > self.limits.max_skill_bytes {
            return Err(Reject::at(
                path,
                format!("skill larger than {} bytes", self.limits.max_skill_bytes),
            ));
        }
        Ok(())
    }
}

/// Reads a skill ZIP into memory, checking every entry: path ([`check_path`]), type (unix mode
/// from the external attributes: symlinks and other non-regular files are refused), size (header
/// and actual, reading at most `max_file_bytes + 1` bytes), totals. Folder entries and macOS junk
/// are skipped (after their path check). Returns the files in archive order, paths not yet
/// normalised by [`normalize`].
fn read_zip(bytes: &[u8], limits: &ExportLimits) -> Result<Vec<FileData>, Reject> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| Reject::whole(format!("not a valid ZIP archive: {e}")))?;
    let mut budget = Budget::new(limits);
    let mut dirs = 0usize;
    let mut files = Vec::new();
    for i in 0..archive.len() {
        let raw_name = match archive.name_for_index(i) {
            Some(Ok(n)) => n.into_owned(),
            _ => return Err(Reject::whole(format!("entry {i}: unreadable name"))),
        };
        let mut entry = archive
            .by_index(i)
            .map_err(|e| Reject::at(&raw_name, format!("cannot read entry: {e}")))?;
        // Both the mode the crate derives for the entry's host system and the raw Unix bits:
        // some extractors honour the latter whatever the host says.
        let modes = [entry.unix_mode(), Some(entry.external_attributes() >> 16)];
        if modes.iter().flatten().any(|m| m & S_IFMT == S_IFLNK) {
            return Err(Reject::at(&raw_name, "symbolic link"));
        }
        let kind = entry.unix_mode().map_or(0, |m| m & S_IFMT);
        let is_dir = raw_name.ends_with('/');
        if !(kind == 0 || kind == S_IFREG || (kind == S_IFDIR && is_dir)) {
            return Err(Reject::at(
                &raw_name,
                format!("not a regular file (mode {kind:o})"),
            ));
        }
        let path = check_path(raw_name.strip_suffix('/').unwrap_or(&raw_name))
            .map_err(|r| Reject::at(&raw_name, r))?;
        if is_dir {
            dirs += 1;
            if dirs > limits.max_files {
                return Err(Reject::at(
                    &raw_name,
                    format!("more than {} folder entries", limits.max_files),
                ));
            }
            continue;
        }
        budget.count(&raw_name)?;
        if is_junk(&path) {
            continue;
        }
        if entry.encrypted() {
            return Err(Reject::at(&raw_name, "encrypted entry"));
        }
        budget.fits(&raw_name, entry.size())?;
        let mut buf = Vec::new();
        (&mut entry)
            .take(limits.max_file_bytes + 1)
            .read_to_end(&mut buf)
            .map_err(|e| Reject::at(&raw_name, format!("cannot read entry: {e}")))?;
        budget.add(&raw_name, buf.len() as u64)?;
        let executable = entry.unix_mode().is_some_and(|m| m & 0o111 != 0);
        files.push(FileData {
            path,
            bytes: buf,
            executable,
        });
    }
    Ok(files)
}

/// Refuses duplicate paths (also differing only in case) and paths that are both a file and a
/// folder; strips one folder shared by every file (`my-skill/SKILL.md` → `SKILL.md`); sorts by
/// path. Refuses an empty skill.
fn normalize(mut files: Vec<FileData>) -> Result<Vec<FileData>, Reject> {
    if files.is_empty() {
        return Err(Reject::whole("no files"));
    }
    let top = files[0].path.split_once('/').map(|(t, _)| t.to_string());
    if let Some(top) = top {
        let prefix = format!("{top}/");
        if files.iter().all(|f| f.path.starts_with(&prefix)) {
            for f in &mut files {
                f.path = f.path[prefix.len()..].to_string();
            }
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let mut seen = HashSet::new();
    let mut folders = BTreeSet::new();
    for f in &files {
        if !seen.insert(f.path.to_lowercase()) {
            return Err(Reject::at(&f.path, "duplicate path"));
        }
        let mut end = 0;
        while let Some(i) = f.path[end..].find('/') {
            end += i;
            folders.insert(f.path[..end].to_lowercase());
            end += 1;
        }
    }
    if let Some(f) = files
        .iter()
        .find(|f| folders.contains(&f.path.to_lowercase()))
    {
        return Err(Reject::at(&f.path, "path is both a file and a folder"));
    }
    Ok(files)
}

/// A skill whose entries and SKILL.md passed every check, ready to be written.
#[derive(Debug)]
struct Prepared {
    files: Vec<FileData>,
    skill_md: String,
    name: String,
    description: String,
}

/// [`normalize`], then requires a root `SKILL.md` that is UTF-8 and has no
/// [`Severity::Error`] problem.
fn prepare(files: Vec<FileData>) -> Result<Prepared, Reject> {
    let files = normalize(files)?;
    let Some(md) = files.iter().find(|f| f.path == "SKILL.md") else {
        return Err(Reject::whole("no SKILL.md at the skill's root"));
    };
    let Ok(skill_md) = String::from_utf8(md.bytes.clone()) else {
        return Err(Reject::at("SKILL.md", "not UTF-8"));
    };
    let (fm, problems) = check_skill_md(&skill_md, None);
    let errors: Vec<&str> = problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .map(|p| p.message.as_str())
        .collect();
    let fm = match fm {
        Some(fm) if errors.is_empty() => fm,
        _ => return Err(Reject::at("SKILL.md", errors.join("; "))),
    };
    Ok(Prepared {
        files,
        skill_md,
        name: fm.name,
        description: fm.description,
    })
}

/// A skill name as a safe single path component: lowercase; characters outside `[a-z0-9-_.]`
/// become `-` (runs of them one `-`); no leading `.` or `-`, no trailing `-`; at most 64
/// characters; `skill` when nothing is left.
fn sanitize_dir_name(name: &str) -> String {
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
fn unique_dir_name(name: &str, used: &mut HashSet<String>) -> String {
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
fn write_skill(root: &Path, dir_name: &str, files: &[FileData]) -> Result<(), ExportError> {
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
fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
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
fn fresh_folder(out: &Path) -> Result<tempfile::TempDir, ExportError> {
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
fn move_into_place(tmp: tempfile::TempDir, out: &Path) -> Result<(), ExportError> {
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

/// A skill's files from the server: the ZIP, or — when the ZIP download fails with an API error —
/// its `file_index` fetched file by file.
async fn fetch_skill(
    client: &Client,
    skill: &AgentSkill,
    limits: &ExportLimits,
) -> Result<Result<Vec<FileData>, Reject>, ExportError> {
    match client.download_skill_zip(&skill.id).await {
        Ok(zip) => {
            let limits = *limits;
            return tokio::task::spawn_blocking(move || read_zip(&zip, &limits))
                .await
                .map_err(|e| ExportError::Io {
                    path: PathBuf::from(format!("<zip of skill {}>", skill.id)),
                    message: e.to_string(),
                });
        }
        Err(e @ (AcontextError::Api { .. } | AcontextError::RouteMissing { .. })) => {
            tracing::info!("skill {:?}: {e}; fetching its files one by one", skill.name);
        }
        Err(e) => return Err(e.into()),
    }
    // Check every listed path before fetching anything.
    let mut budget = Budget::new(limits);
    let mut wanted = Vec::new();
    for info in &skill.file_index {
        let path = match check_path(&info.path) {
            Ok(p) => p,
            Err(r) => return Ok(Err(Reject::at(&info.path, r))),
        };
        if let Err(r) = budget.count(&info.path) {
            return Ok(Err(r));
        }
        if !is_junk(&path) {
            wanted.push((info.path.as_str(), path));
        }
    }
    let mut files = Vec::new();
    for (raw, path) in wanted {
        let sf = client.get_skill_file(&skill.id, raw).await?;
        let bytes = match (sf.content, sf.url) {
            (Some(c), _) => c.raw.into_bytes(),
            (None, Some(url)) => client.download(&url).await?,
            (None, None) => {
                return Ok(Err(Reject::at(
                    raw,
                    "the server sent neither content nor a URL",
                )));
            }
        };
        if let Err(r) = budget.add(raw, bytes.len() as u64) {
            return Ok(Err(r));
        }
        files.push(FileData {
            path,
            bytes,
            executable: false,
        });
    }
    Ok(Ok(files))
}

/// Exports the skills of learning space `space_id` into the new folder `out`
/// (`out/<dir_name>/SKILL.md`, …).
///
/// For each skill of `GET /learning_spaces/{id}/skills` (in the server's order): its ZIP
/// (`GET /agent_skills/{id}/download_zip`), or, when that answers with an API error (413 too
/// large, 404, route missing, …), every `file_index` path via `GET /agent_skills/{id}/file`
/// (text content, or the material URL for binary files). Entries are checked as described in the
/// module docs and limited by `limits`; a ZIP with one shared top-level folder has it stripped;
/// `__MACOSX/` and `.DS_Store` are skipped; `SKILL.md` must exist at the root and pass
/// [`check_skill_md`]. A failing skill is recorded in [`ExportReport::refused`] and not written;
/// SKILL.md warnings go to [`SkillSnapshot::problems`]. Folder names come from the frontmatter
/// `name` made a safe component (lowercase `[a-z0-9-_.]`, no leading dot; `-2`, `-3` on
/// collision). Files keep the executable bit of their ZIP entry (files fetched one by one have
/// none). No skill is treated specially (the default `daily-logs` / `user-general-facts` are
/// exported like the others).
///
/// The parent of `out` is created when missing; files are written into a hidden temporary folder
/// in it (mode 0755; files 0644, or 0755 when executable, less the umask), renamed to `out` at the
/// end. An empty space gives an empty folder.
///
/// # Errors
/// [`ExportError::Exists`] when `out` exists (before or at the final rename);
/// [`ExportError::Api`] for any error listing the skills, any non-API (transport, decode) error
/// downloading a ZIP, and any error of the file-by-file fallback — nothing is left behind;
/// [`ExportError::Io`] naming the file for local failures.
pub async fn export_space(
    client: &Client,
    space_id: &str,
    out: &Path,
    limits: &ExportLimits,
) -> Result<ExportReport, ExportError> {
    let tmp = fresh_folder(out)?;
    let root = tmp.path().to_path_buf();

    let skills = client.space_skills(space_id).await?;
    let mut used = HashSet::new();
    let mut snapshots = Vec::new();
    let mut refused = Vec::new();
    for skill in &skills {
        let label = if skill.name.is_empty() {
            skill.id.as_str()
        } else {
            skill.name.as_str()
        };
        let prepared = match fetch_skill(client, skill, limits).await? {
            Ok(files) => prepare(files),
            Err(r) => Err(r),
        };
        let prepared = match prepared {
            Ok(p) => p,
            Err(r) => {
                let refusal = r.refusal(label);
                tracing::warn!("not exported: {refusal}");
                refused.push(refusal);
                continue;
            }
        };
        let dir_name = unique_dir_name(&prepared.name, &mut used);
        let (_, md_problems) = check_skill_md(&prepared.skill_md, Some(&dir_name));
        let mut problems: Vec<String> = md_problems
            .into_iter()
            .filter(|p| p.severity == Severity::Warning)
            .map(|p| format!("SKILL.md: {}", p.message))
            .collect();
        if !skill.name.is_empty() && skill.name != prepared.name {
            problems.push(format!(
                "the server names the skill {:?}, its SKILL.md {:?}",
                skill.name, prepared.name
            ));
        }
        let files: Vec<SkillFileRecord> = prepared
            .files
            .iter()
            .map(|f| record(&f.path, &f.bytes))
            .collect();
        let snapshot = SkillSnapshot {
            name: prepared.name,
            dir_name: dir_name.clone(),
            description: prepared.description,
            remote_id: Some(skill.id.clone()),
            updated_at: Some(skill.updated_at.clone()).filter(|u| !u.is_empty()),
            content_hash: content_hash(&files),
            files,
            problems,
        };
        let (root2, data) = (root.clone(), prepared.files);
        tokio::task::spawn_blocking(move || write_skill(&root2, &dir_name, &data))
            .await
            .map_err(|e| io_err(&root, e))??;
        snapshots.push(snapshot);
    }
    snapshots.sort_by(|a, b| a.dir_name.cmp(&b.dir_name));

    move_into_place(tmp, out)?;
    Ok(ExportReport {
        dir: out.to_path_buf(),
        skills: snapshots,
        refused,
    })
}

// ---- folders on disk -----------------------------------------------------------------------------

/// Hashes the skill folder `dir` (e.g. a task's curated `environment/skills/<name>/`) into a
/// [`SkillSnapshot`] comparable with exported ones (same [`content_hash`]): `dir_name` is the
/// folder's name, `name` and `description` come from its SKILL.md when readable, `remote_id` and
/// `updated_at` are `None`, and every SKILL.md problem (or its absence) is listed in `problems`
/// without refusing. `dir` itself may be a symlink to a folder; nothing inside it may be.
/// `__MACOSX/` and `.DS_Store` are skipped as in exports; no top-level folder is stripped.
///
/// # Errors
/// [`ExportError::Refused`] for a symlink, a non-regular file, a path [`export_space`] would
/// refuse, a non-UTF-8 name, or a file/skill/count over `limits`; [`ExportError::Io`] naming the
/// path when `dir` is not a folder or cannot be read.
pub fn snapshot_dir(dir: &Path, limits: &ExportLimits) -> Result<SkillSnapshot, ExportError> {
    let meta = std::fs::metadata(dir).map_err(|e| io_err(dir, e))?;
    if !meta.is_dir() {
        return Err(io_err(dir, "not a folder"));
    }
    let dir_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let refuse = |r: Reject| ExportError::Refused(r.refusal(&dir_name));
    let mut budget = Budget::new(limits);
    let mut files: Vec<SkillFileRecord> = Vec::new();
    let mut skill_md = None;
    for entry in walkdir::WalkDir::new(dir)
        .follow_links(false)
        .sort_by_file_name()
        .min_depth(1)
    {
        let entry = entry.map_err(|e| {
            let p = e.path().unwrap_or(dir).to_path_buf();
            io_err(&p, e)
        })?;
        let rel = entry.path().strip_prefix(dir).unwrap_or(entry.path());
        let Some(rel) = rel.to_str() else {
            return Err(refuse(Reject::at(
                &rel.to_string_lossy(),
                "name is not UTF-8",
            )));
        };
        let path = check_path(rel).map_err(|r| refuse(Reject::at(rel, r)))?;
        let ft = entry.file_type();
        if ft.is_symlink() {
            return Err(refuse(Reject::at(rel, "symbolic link")));
        }
        if ft.is_dir() {
            continue;
        }
        if !ft.is_file() {
            return Err(refuse(Reject::at(rel, "not a regular file")));
        }
        budget.count(rel).map_err(refuse)?;
        if is_junk(&path) {
            continue;
        }
        let len = entry.metadata().map_err(|e| io_err(entry.path(), e))?.len();
        budget.fits(rel, len).map_err(refuse)?;
        let bytes = safe_fs::read_capped(entry.path(), limits.max_file_bytes + 1)
            .map_err(|e| io_err(entry.path(), e))?;
        budget.add(rel, bytes.len() as u64).map_err(refuse)?;
        if path == "SKILL.md" {
            skill_md = Some(String::from_utf8_lossy(&bytes).into_owned());
        }
        files.push(record(&path, &bytes));
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let (name, description, problems) = match &skill_md {
        None => (
            dir_name.clone(),
            String::new(),
            vec!["error: no SKILL.md at the skill's root".to_string()],
        ),
        Some(text) => {
            let (fm, problems) = check_skill_md(text, Some(&dir_name));
            let problems = problems
                .into_iter()
                .map(|p| match p.severity {
                    Severity::Error => format!("error: SKILL.md: {}", p.message),
                    Severity::Warning => format!("SKILL.md: {}", p.message),
                })
                .collect();
            match fm {
                Some(fm) => (fm.name, fm.description, problems),
                None => (dir_name.clone(), String::new(), problems),
            }
        }
    };
    Ok(SkillSnapshot {
        name,
        dir_name,
        description,
        remote_id: None,
        updated_at: None,
        content_hash: content_hash(&files),
        files,
        problems,
    })
}

// ---- skills folders out of a container ----------------------------------------------------------

/// Reads a tar of a skills folder (as `GET /containers/{id}/archive` returns it: one top folder,
/// e.g. `skills/`, holding `<folder>/SKILL.md …`) and writes the skills that pass every check of
/// [`export_space`] into the new folder `out`: entry paths ([`check_path`]), entry types (regular
/// files and folders only: a symlink, hard link or device refuses its skill), sizes (each file
/// read with a cap, never trusting the header) and counts per `limits`, a root `SKILL.md` that is
/// UTF-8 and passes [`check_skill_md`]. A file directly in the top folder is refused as a stray
/// file. Folder names are the agent's folder names made safe components (`-2`, `-3` on collision);
/// SKILL.md warnings (a `name` that differs from the folder, …) go to
/// [`SkillSnapshot::problems`]. `truncated` says the archive was cut at a size cap: every skill is
/// then refused. Files are written into a hidden temporary folder next to `out` and renamed to it
/// at the end; nothing is extracted outside it.
///
/// Used for the skills an agent generated in a self-generated trial: untrusted container content.
///
/// # Errors
/// [`ExportError::Exists`] when `out` exists; [`ExportError::Io`] naming the path for local
/// failures. Malformed skills are not errors (see [`ExportReport::refused`]).
pub fn import_skills_tar(
    tar_bytes: &[u8],
    truncated: bool,
    limits: &ExportLimits,
    out: &Path,
) -> Result<ExportReport, ExportError> {
    let tmp = fresh_folder(out)?;
    let root = tmp.path().to_path_buf();

    let (by_skill, mut refused) = read_skills_tar(tar_bytes, truncated, limits);
    let mut used = HashSet::new();
    let mut snapshots = Vec::new();
    for (folder, files) in by_skill {
        let prepared = match files.and_then(prepare) {
            Ok(p) => p,
            Err(r) => {
                refused.push(r.refusal(&folder));
                continue;
            }
        };
        let dir_name = unique_dir_name(&folder, &mut used);
        let (_, md_problems) = check_skill_md(&prepared.skill_md, Some(&dir_name));
        let problems: Vec<String> = md_problems
            .into_iter()
            .filter(|p| p.severity == Severity::Warning)
            .map(|p| format!("SKILL.md: {}", p.message))
            .collect();
        let files: Vec<SkillFileRecord> = prepared
            .files
            .iter()
            .map(|f| record(&f.path, &f.bytes))
            .collect();
        write_skill(&root, &dir_name, &prepared.files)?;
        snapshots.push(SkillSnapshot {
            name: prepared.name,
            dir_name,
            description: prepared.description,
            remote_id: None,
            updated_at: None,
            content_hash: content_hash(&files),
            files,
            problems,
        });
    }
    snapshots.sort_by(|a, b| a.dir_name.cmp(&b.dir_name));
    move_into_place(tmp, out)?;
    Ok(ExportReport {
        dir: out.to_path_buf(),
        skills: snapshots,
        refused,
    })
}

/// The files of each skill folder of a skills-folder tar, by folder name (sorted), each checked
/// as [`read_zip`] checks ZIP entries; and the refusals that concern no single folder's files
/// (stray files in the top folder, an unreadable archive).
#[allow(clippy::type_complexity)]
fn read_skills_tar(
    bytes: &[u8],
    truncated: bool,
    limits: &ExportLimits,
) -> (
    std::collections::BTreeMap<String, Result<Vec<FileData>, Reject>>,
    Vec<Refusal>,
) {
    use std::collections::BTreeMap;
    let mut skills: BTreeMap<String, (Result<Vec<FileData>, Reject>, Budget)> = BTreeMap::new();
    let mut refused = Vec::new();
    let mut archive = tar::Archive::new(std::io::Cursor::new(bytes));
    let entries = match archive.entries() {
        Ok(e) => e,
        Err(e) => {
            refused.push(Refusal {
                skill: "(archive)".into(),
                path: None,
                reason: format!("unreadable archive: {e}"),
            });
            return (BTreeMap::new(), refused);
        }
    };
    let mut dirs = 0usize;
    for entry in entries {
        let mut entry = match entry {
            Ok(e) => e,
            Err(e) => {
                // A cut archive ends here; the skill being read is refused below.
                if !truncated {
                    refused.push(Refusal {
                        skill: "(archive)".into(),
                        path: None,
                        reason: format!("unreadable archive entry: {e}"),
                    });
                }
                break;
            }
        };
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let raw = raw.trim_end_matches('/').to_string();
        // Drop the archive's top folder (the skills folder itself).
        let Some((_, inner)) = raw.split_once('/') else {
            continue;
        };
        let (folder, rest) = match inner.split_once('/') {
            Some((f, r)) => (f.to_string(), Some(r.to_string())),
            None => (inner.to_string(), None),
        };
        let kind = entry.header().entry_type();
        let Some(rest) = rest else {
            if kind.is_dir() {
                skills
                    .entry(folder)
                    .or_insert_with(|| (Ok(Vec::new()), Budget::new(limits)));
            } else if kind.is_symlink() || kind.is_hard_link() {
                skills.insert(
                    folder.clone(),
                    (
                        Err(Reject::whole("the skill folder is a link")),
                        Budget::new(limits),
                    ),
                );
            } else {
                refused.push(Refusal {
                    skill: folder,
                    path: None,
                    reason: "a file outside any skill folder".into(),
                });
            }
            continue;
        };
        let (state, budget) = skills
            .entry(folder)
            .or_insert_with(|| (Ok(Vec::new()), Budget::new(limits)));
        let Ok(files) = state else {
            continue;
        };
        let checked = (|| -> Result<Option<FileData>, Reject> {
            let path = check_path(&rest).map_err(|r| Reject::at(&rest, r))?;
            if kind.is_dir() {
                dirs += 1;
                if dirs > limits.max_files {
                    return Err(Reject::at(
                        &rest,
                        format!("more than {} folder entries", limits.max_files),
                    ));
                }
                return Ok(None);
            }
            if kind.is_symlink() || kind.is_hard_link() {
                return Err(Reject::at(&rest, "link"));
            }
            if !kind.is_file() {
                return Err(Reject::at(&rest, "not a regular file"));
            }
            budget.count(&rest)?;
            if is_junk(&path) {
                return Ok(None);
            }
            budget.fits(&rest, entry.header().size().unwrap_or(u64::MAX))?;
            let mut buf = Vec::new();
            (&mut entry)
                .take(limits.max_file_bytes + 1)
                .read_to_end(&mut buf)
                .map_err(|e| Reject::at(&rest, format!("cannot read entry: {e}")))?;
            budget.add(&rest, buf.len() as u64)?;
            let executable = entry.header().mode().is_ok_and(|m| m & 0o111 != 0);
            Ok(Some(FileData {
                path,
                bytes: buf,
                executable,
            }))
        })();
        match checked {
            Ok(Some(f)) => files.push(f),
            Ok(None) => {}
            Err(r) => *state = Err(r),
        }
    }
    let out = skills
        .into_iter()
        .map(|(folder, (state, _))| {
            let state = if truncated {
                Err(Reject::whole(
                    "the generated skills folder is larger than the download limit",
                ))
            } else {
                state
            };
            (folder, state)
        })
        .collect();
    (out, refused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use zip::write::SimpleFileOptions;

    const MD: &str = "---\nname: my-skill\ndescription: Does things.\n---\n# My skill\n";

    fn zip_of(entries: &[(&str, &[u8], Option<u32>)]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, bytes, mode) in entries {
            let mut o = SimpleFileOptions::default();
            if let Some(m) = mode {
                o = o.unix_permissions(*m);
            }
            w.start_file(*name, o).unwrap();
            w.write_all(bytes).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    fn rejected_path(r: Result<Vec<FileData>, Reject>) -> Option<String> {
        r.expect_err("should be refused").path
    }

    #[test]
    fn paths_are_checked() {
        for bad in [
            "",
            "/abs",
            "../evil",
            "a/../../b",
            "a/..",
            "a\\b",
            "..\\evil",
            "a\0b",
            "a\nb",
            "a\u{7f}b",
            "a//b",
            "C:/x",
            "c:evil",
            "./",
            ".",
            &"x".repeat(256),
        ] {
            assert!(check_path(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(check_path("SKILL.md").unwrap(), "SKILL.md");
        assert_eq!(check_path("./scripts/./x.sh").unwrap(), "scripts/x.sh");
        assert!(check_path("a:b/c").is_err());
        assert_eq!(check_path("ab:c/d").unwrap(), "ab:c/d");
        assert_eq!(check_path("résumé/ok.md").unwrap(), "résumé/ok.md");
        assert!(is_junk("__MACOSX/._SKILL.md"));
        assert!(is_junk("scripts/.DS_Store"));
        assert!(!is_junk("scripts/DS_Store.py"));
    }

    fn skills_tar(entries: &[(&str, &[u8], tar::EntryType)]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (name, bytes, kind) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(*kind);
            h.set_size(if kind.is_file() {
                bytes.len() as u64
            } else {
                0
            });
            h.set_mode(0o644);
            if kind.is_symlink() {
                h.set_link_name("/etc/passwd").unwrap();
            }
            let data: &[u8] = if kind.is_file() { bytes } else { &[] };
            b.append_data(&mut h, name, data).unwrap();
        }
        b.into_inner().unwrap()
    }

    #[test]
    fn skills_from_a_container_are_checked_like_exports() {
        use tar::EntryType as T;
        let tar = skills_tar(&[
            ("skills/", b"", T::Directory),
            ("skills/good/", b"", T::Directory),
            (
                "skills/good/SKILL.md",
                b"---\nname: good\ndescription: Good.\n---\n# Good\n",
                T::Regular,
            ),
            ("skills/good/scripts/run.sh", b"echo hi\n", T::Regular),
            (
                "skills/no-front/SKILL.md",
                b"# No frontmatter\n",
                T::Regular,
            ),
            ("skills/linky/SKILL.md", MD.as_bytes(), T::Regular),
            ("skills/linky/passwd", b"", T::Symlink),
            ("skills/renamed/SKILL.md", MD.as_bytes(), T::Regular),
            ("skills/stray.md", b"x", T::Regular),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("generated");
        let r = import_skills_tar(&tar, false, &ExportLimits::default(), &out).unwrap();
        let names: Vec<&str> = r.skills.iter().map(|s| s.dir_name.as_str()).collect();
        assert_eq!(names, ["good", "renamed"]);
        assert_eq!(r.skills[0].files.len(), 2);
        // A name that differs from the folder is a warning, not a refusal.
        assert!(
            r.skills[1].problems.iter().any(|p| p.contains("my-skill")),
            "{:?}",
            r.skills[1]
        );
        let mut why: Vec<(String, String)> = r
            .refused
            .iter()
            .map(|x| (x.skill.clone(), x.reason.clone()))
            .collect();
        why.sort();
        assert_eq!(why.len(), 3, "{why:?}");
        assert_eq!(why[0].0, "linky");
        assert_eq!(why[1].0, "no-front");
        assert!(why[1].1.contains("frontmatter"), "{why:?}");
        assert_eq!(
            why[2],
            ("stray.md".into(), "a file outside any skill folder".into())
        );
        assert!(out.join("good/scripts/run.sh").is_file());
        assert!(!out.join("linky").exists() && !out.join("no-front").exists());
        // Nothing is written twice, and a cut archive refuses everything.
        assert!(matches!(
            import_skills_tar(&tar, false, &ExportLimits::default(), &out),
            Err(ExportError::Exists(_))
        ));
        let cut = import_skills_tar(
            &tar,
            true,
            &ExportLimits::default(),
            &dir.path().join("cut"),
        )
        .unwrap();
        assert!(cut.skills.is_empty());
        // Size limits apply per file.
        let small = ExportLimits {
            max_file_bytes: 4,
            ..Default::default()
        };
        let r = import_skills_tar(&tar, false, &small, &dir.path().join("small")).unwrap();
        assert!(r.skills.is_empty());
    }

    #[test]
    fn dir_names_are_safe_and_unique() {
        assert_eq!(sanitize_dir_name("My Skill!"), "my-skill");
        assert_eq!(sanitize_dir_name("../../etc"), "etc");
        assert_eq!(sanitize_dir_name(".hidden"), "hidden");
        assert_eq!(sanitize_dir_name(".."), "skill");
        assert_eq!(sanitize_dir_name(""), "skill");
        assert_eq!(sanitize_dir_name("a/b\\c"), "a-b-c");
        assert_eq!(sanitize_dir_name("data_v1.2"), "data_v1.2");
        assert_eq!(sanitize_dir_name("Ünïcode"), "n-code");
        assert_eq!(sanitize_dir_name(&"x".repeat(100)).len(), MAX_NAME_LEN);
        let mut used = HashSet::new();
        assert_eq!(unique_dir_name("a", &mut used), "a");
        assert_eq!(unique_dir_name("A", &mut used), "a-2");
        assert_eq!(unique_dir_name("a!", &mut used), "a-3");
    }

    #[test]
    fn content_hash_is_order_independent_and_content_sensitive() {
        let a = record("SKILL.md", b"one");
        let b = record("scripts/x.sh", b"two");
        let h = content_hash(&[a.clone(), b.clone()]);
        assert_eq!(h, content_hash(&[b.clone(), a.clone()]));
        assert_eq!(h.len(), 64);
        assert_ne!(
            h,
            content_hash(&[a.clone(), record("scripts/x.sh", b"TWO")])
        );
        assert_ne!(
            h,
            content_hash(&[a.clone(), record("scripts/y.sh", b"two")])
        );
        assert_ne!(h, content_hash(&[a]));
        // Known value: the empty skill is the hash of nothing.
        assert_eq!(content_hash(&[]), hex::encode(Sha256::digest(b"")));
    }

    #[test]
    fn records_keep_small_utf8_text_only() {
        assert_eq!(record("a", b"hi").text.as_deref(), Some("hi"));
        assert_eq!(record("a", &[0xff, 0xfe]).text, None);
        assert_eq!(record("a", b"a\0b").text, None);
        let big = vec![b'x'; MAX_TEXT_BYTES as usize + 1];
        let r = record("a", &big);
        assert_eq!((r.text, r.size), (None, MAX_TEXT_BYTES + 1));
        assert_eq!(
            record("a", b"").sha256,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn zip_with_top_folder_is_stripped_and_junk_skipped() {
        let z = zip_of(&[
            ("my-skill/SKILL.md", MD.as_bytes(), None),
            (
                "my-skill/scripts/x.sh",
                b"#!/bin/sh\necho hi\n",
                Some(0o755),
            ),
            ("__MACOSX/my-skill/._SKILL.md", b"junk", None),
            ("my-skill/.DS_Store", b"junk", None),
        ]);
        let files = read_zip(&z, &ExportLimits::default()).unwrap();
        let p = prepare(files).unwrap();
        let paths: Vec<&str> = p.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["SKILL.md", "scripts/x.sh"]);
        assert_eq!(p.name, "my-skill");
        assert!(p.files[1].executable && !p.files[0].executable);
    }

    #[test]
    fn zip_hostile_entries_are_refused() {
        for name in ["../evil", "/abs", "a/../../b", "a\\b", "C:/x"] {
            let z = zip_of(&[("SKILL.md", MD.as_bytes(), None), (name, b"x", None)]);
            assert_eq!(
                rejected_path(read_zip(&z, &ExportLimits::default())).as_deref(),
                Some(name)
            );
        }
        // Hostile folder entries too.
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        w.add_directory("../up/", SimpleFileOptions::default())
            .unwrap();
        let z = w.finish().unwrap().into_inner();
        assert!(read_zip(&z, &ExportLimits::default()).is_err());
    }

    #[test]
    fn zip_symlinks_and_special_files_are_refused() {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        w.start_file("SKILL.md", SimpleFileOptions::default())
            .unwrap();
        w.write_all(MD.as_bytes()).unwrap();
        w.add_symlink(
            "scripts/passwd",
            "/etc/passwd",
            SimpleFileOptions::default(),
        )
        .unwrap();
        let z = w.finish().unwrap().into_inner();
        let r = read_zip(&z, &ExportLimits::default()).unwrap_err();
        assert_eq!(r.path.as_deref(), Some("scripts/passwd"));
        assert!(r.reason.contains("symbolic link"), "{r:?}");
        // A FIFO: the writer only sets permission bits, so patch the central header's external
        // attributes (offset 38) of "fifo" (name at offset 46).
        let mut z = zip_of(&[
            ("SKILL.md", MD.as_bytes(), None),
            ("fifo", b"", Some(0o644)),
        ]);
        let at = (0..z.len() - 50)
            .find(|&i| &z[i..i + 4] == b"PK\x01\x02" && z[i + 46..].starts_with(b"fifo"))
            .unwrap();
        z[at + 38..at + 42].copy_from_slice(&((0o010_644u32) << 16).to_le_bytes());
        let r = read_zip(&z, &ExportLimits::default()).unwrap_err();
        assert!(r.reason.contains("not a regular file"), "{r:?}");
    }

    #[test]
    fn zip_limits_are_enforced() {
        let limits = ExportLimits {
            max_file_bytes: 100,
            max_skill_bytes: 150,
            max_files: 3,
        };
        let big = vec![b'x'; 101];
        let z = zip_of(&[("SKILL.md", MD.as_bytes(), None), ("big", &big, None)]);
        let r = read_zip(&z, &limits).unwrap_err();
        assert_eq!(r.path.as_deref(), Some("big"));
        let z = zip_of(&[
            ("SKILL.md", MD.as_bytes(), None),
            ("a", &[b'a'; 90], None),
            ("b", &[b'b'; 90], None),
        ]);
        assert!(
            read_zip(&z, &limits)
                .unwrap_err()
                .reason
                .contains("skill larger")
        );
        let z = zip_of(&[
            ("SKILL.md", b"-", None),
            ("a", b"", None),
            ("b", b"", None),
            ("c", b"", None),
        ]);
        assert!(read_zip(&z, &limits).unwrap_err().reason.contains("files"));
    }

    /// A ZIP whose headers understate an entry's size is still read with a cap.
    #[test]
    fn zip_lying_header_is_capped() {
        let zeros = vec![0u8; 100_000];
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let o = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        w.start_file("SKILL.md", o).unwrap();
        w.write_all(MD.as_bytes()).unwrap();
        w.start_file("bomb", o).unwrap();
        w.write_all(&zeros).unwrap();
        let mut z = w.finish().unwrap().into_inner();
        // Patch the uncompressed size of "bomb" to 10 in its local and central headers.
        let patch = |z: &mut Vec<u8>, sig: &[u8; 4], size_off: usize, name_off: usize| {
            let mut i = 0;
            while i + 4 <= z.len() {
                if &z[i..i + 4] == sig && z[i + name_off..].starts_with(b"bomb") {
                    z[i + size_off..i + size_off + 4].copy_from_slice(&10u32.to_le_bytes());
                }
                i += 1;
            }
        };
        patch(&mut z, b"PK\x03\x04", 22, 30);
        patch(&mut z, b"PK\x01\x02", 24, 46);
        let limits = ExportLimits {
            max_file_bytes: 1000,
            ..ExportLimits::default()
        };
        let r = read_zip(&z, &limits).unwrap_err();
        assert_eq!(r.path.as_deref(), Some("bomb"), "{r:?}");
    }

    #[test]
    fn normalize_refuses_duplicates_and_conflicts() {
        let f = |p: &str| FileData {
            path: p.into(),
            bytes: vec![],
            executable: false,
        };
        assert!(normalize(vec![f("SKILL.md"), f("skill.md")]).is_err());
        assert!(normalize(vec![f("SKILL.md"), f("a"), f("a/b")]).is_err());
        assert!(normalize(vec![]).is_err());
        // No stripping when files sit at different tops.
        let n = normalize(vec![f("x/SKILL.md"), f("y/a")]).unwrap();
        assert_eq!(n[0].path, "x/SKILL.md");
    }

    #[test]
    fn skill_md_is_required_and_checked() {
        let f = |p: &str, b: &str| FileData {
            path: p.into(),
            bytes: b.as_bytes().to_vec(),
            executable: false,
        };
        assert!(prepare(vec![f("README.md", "hi")]).is_err());
        let r = prepare(vec![f("SKILL.md", "# no frontmatter")]).unwrap_err();
        assert!(r.reason.contains("frontmatter"), "{r:?}");
        let r = prepare(vec![f("SKILL.md", "---\nname: x\n---\n")]).unwrap_err();
        assert!(r.reason.contains("description"), "{r:?}");
        let r = prepare(vec![f("docs/SKILL.md", MD), f("SKILL.txt", "")]).unwrap_err();
        assert!(r.reason.contains("root"), "{r:?}");
        let p = prepare(vec![f(
            "SKILL.md",
            "---\nname: Bad Name\ndescription: d\n---\n",
        )]);
        assert_eq!(p.unwrap().name, "Bad Name");
    }

    #[test]
    fn write_keeps_exec_bits_and_refuses_existing_targets() {
        let tmp = tempfile::tempdir().unwrap();
        let z = zip_of(&[
            ("SKILL.md", MD.as_bytes(), Some(0o644)),
            ("scripts/x.sh", b"#!/bin/sh\n", Some(0o755)),
        ]);
        let p = prepare(read_zip(&z, &ExportLimits::default()).unwrap()).unwrap();
        write_skill(tmp.path(), "my-skill", &p.files).unwrap();
        let mode = |rel: &str| {
            std::fs::metadata(tmp.path().join("my-skill").join(rel))
                .unwrap()
                .permissions()
                .mode()
        };
        assert_ne!(mode("scripts/x.sh") & 0o111, 0);
        assert_eq!(mode("SKILL.md") & 0o111, 0);
        // The skill folder must be new.
        assert!(write_skill(tmp.path(), "my-skill", &p.files).is_err());
        // A symlink where a folder should go is not followed.
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("other")).unwrap();
        std::fs::create_dir(tmp.path().join("other/x")).unwrap();
        std::os::unix::fs::symlink(outside.path(), tmp.path().join("other/x/scripts")).unwrap();
        let e = write_skill(&tmp.path().join("other"), "x", &p.files);
        assert!(e.is_err());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn rename_never_replaces() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a");
        let b = tmp.path().join("b");
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        let e = rename_noreplace(&a, &b).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        rename_noreplace(&a, &tmp.path().join("c")).unwrap();
        assert!(tmp.path().join("c").is_dir());
    }

    #[test]
    fn snapshot_dir_hashes_like_an_export_and_refuses_symlinks() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("my-skill");
        std::fs::create_dir_all(dir.join("scripts")).unwrap();
        std::fs::write(dir.join("SKILL.md"), MD).unwrap();
        std::fs::write(dir.join("scripts/x.sh"), "#!/bin/sh\n").unwrap();
        std::fs::write(dir.join(".DS_Store"), "junk").unwrap();
        let s = snapshot_dir(&dir, &ExportLimits::default()).unwrap();
        assert_eq!(s.name, "my-skill");
        assert_eq!(s.description, "Does things.");
        assert!(s.problems.is_empty(), "{:?}", s.problems);
        let paths: Vec<&str> = s.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["SKILL.md", "scripts/x.sh"]);
        let expected = content_hash(&[
            record("scripts/x.sh", b"#!/bin/sh\n"),
            record("SKILL.md", MD.as_bytes()),
        ]);
        assert_eq!(s.content_hash, expected);

        // A symlink inside — to a file or to a folder — refuses the folder.
        std::os::unix::fs::symlink("/etc/passwd", dir.join("scripts/passwd")).unwrap();
        match snapshot_dir(&dir, &ExportLimits::default()) {
            Err(ExportError::Refused(r)) => {
                assert_eq!(r.path.as_deref(), Some("scripts/passwd"));
                assert!(r.reason.contains("symbolic link"));
            }
            other => panic!("{other:?}"),
        }
        std::fs::remove_file(dir.join("scripts/passwd")).unwrap();
        std::os::unix::fs::symlink("/etc", dir.join("etc")).unwrap();
        assert!(matches!(
            snapshot_dir(&dir, &ExportLimits::default()),
            Err(ExportError::Refused(_))
        ));
        std::fs::remove_file(dir.join("etc")).unwrap();

        // Oversize.
        let limits = ExportLimits {
            max_file_bytes: 5,
            ..ExportLimits::default()
        };
        assert!(matches!(
            snapshot_dir(&dir, &limits),
            Err(ExportError::Refused(_))
        ));
        // Not a folder.
        assert!(matches!(
            snapshot_dir(&dir.join("SKILL.md"), &ExportLimits::default()),
            Err(ExportError::Io { .. })
        ));
    }

    #[test]
    fn snapshot_dir_reports_skill_md_problems_without_refusing() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("curated");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("notes.md"), "x").unwrap();
        let s = snapshot_dir(&dir, &ExportLimits::default()).unwrap();
        assert_eq!(s.name, "curated");
        assert!(s.problems[0].contains("no SKILL.md"));
        std::fs::write(dir.join("SKILL.md"), MD).unwrap();
        let s = snapshot_dir(&dir, &ExportLimits::default()).unwrap();
        assert!(
            s.problems.iter().any(|p| p.contains("differs")),
            "{:?}",
            s.problems
        );
    }
}
