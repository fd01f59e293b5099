//! The guard every untrusted skill archive passes before anything of it is written: entry paths
//! (absolute, `..`, backslashes, control characters, empty or over-long components, Windows drive
//! prefixes, duplicates), entry types (symlinks and other non-regular files), sizes (read with a
//! cap, never trusting the archive's header) and counts; ZIP and tar alike. A skill with one bad
//! entry is refused whole (`Reject`).

use std::collections::{BTreeSet, HashSet};
use std::io::Read;

use crate::skillsbench::skill::{Severity, check_skill_md};

use super::{ExportLimits, Refusal};

/// Files up to this size (bytes) that are valid UTF-8 without NUL bytes keep their text in
/// [`super::SkillFileRecord::text`] (256 KiB).
pub const MAX_TEXT_BYTES: u64 = 256 * 1024;

/// Longest path component accepted, bytes (the usual `NAME_MAX`).
pub(super) const MAX_COMPONENT_BYTES: usize = 255;

/// Unix file-type bits (`S_IFMT`) and the types among them that matter here.
pub(super) const S_IFMT: u32 = 0o170_000;

pub(super) const S_IFLNK: u32 = 0o120_000;

pub(super) const S_IFREG: u32 = 0o100_000;

pub(super) const S_IFDIR: u32 = 0o040_000;

/// One file of a skill in memory; `path` has passed [`check_path`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FileData {
    pub(super) path: String,
    pub(super) bytes: Vec<u8>,
    pub(super) executable: bool,
}

/// Why a skill is refused, before its name is attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Reject {
    pub(super) path: Option<String>,
    pub(super) reason: String,
}

impl Reject {
    pub(super) fn at(path: &str, reason: impl Into<String>) -> Reject {
        Reject {
            path: Some(path.to_string()),
            reason: reason.into(),
        }
    }

    pub(super) fn whole(reason: impl Into<String>) -> Reject {
        Reject {
            path: None,
            reason: reason.into(),
        }
    }

    pub(super) fn refusal(self, skill: &str) -> Refusal {
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
pub(super) fn check_path(raw: &str) -> Result<String, String> {
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
pub(super) fn is_junk(path: &str) -> bool {
    path.split('/').next() == Some("__MACOSX") || path.rsplit('/').next() == Some(".DS_Store")
}

/// Running file count and byte total of one skill.
pub(super) struct Budget {
    pub(super) limits: ExportLimits,
    pub(super) files: usize,
    pub(super) bytes: u64,
}

impl Budget {
    pub(super) fn new(limits: &ExportLimits) -> Budget {
        Budget {
            limits: *limits,
            files: 0,
            bytes: 0,
        }
    }

    /// Counts one more file (before reading it).
    pub(super) fn count(&mut self, path: &str) -> Result<(), Reject> {
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
    pub(super) fn add(&mut self, path: &str, size: u64) -> Result<(), Reject> {
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
    pub(super) fn fits(&self, path: &str, size: u64) -> Result<(), Reject> {
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
pub(super) fn read_zip(bytes: &[u8], limits: &ExportLimits) -> Result<Vec<FileData>, Reject> {
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
pub(super) fn normalize(mut files: Vec<FileData>) -> Result<Vec<FileData>, Reject> {
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
pub(super) struct Prepared {
    pub(super) files: Vec<FileData>,
    pub(super) skill_md: String,
    pub(super) name: String,
    pub(super) description: String,
}

/// [`normalize`], then requires a root `SKILL.md` that is UTF-8 and has no
/// [`Severity::Error`] problem.
pub(super) fn prepare(files: Vec<FileData>) -> Result<Prepared, Reject> {
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

/// The files of each skill folder of a skills-folder tar, by folder name (sorted), each checked
/// as [`read_zip`] checks ZIP entries; and the refusals that concern no single folder's files
/// (stray files in the top folder, an unreadable archive).
#[allow(clippy::type_complexity)]
pub(super) fn read_skills_tar(
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
