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
//!
//! Files: [`guard`] (every check an untrusted skill archive passes: paths, entry types, sizes,
//! counts — ZIP and tar), [`write`](mod@write) (writing a checked skill into a fresh folder, renamed into place
//! without replacing anything), [`snapshot`] (a skill folder already on disk, hashed and read the
//! same way); this module fetches a space's skills and runs the export.

pub mod guard;
pub mod snapshot;
pub mod write;

pub use snapshot::{import_skills_tar, snapshot_dir};

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::acontext::client::{AcontextError, Client};
use crate::acontext::model::AgentSkill;
use crate::skillsbench::skill::{Severity, check_skill_md};

use guard::{Budget, FileData, MAX_TEXT_BYTES, Reject, check_path, is_junk, prepare, read_zip};
use write::{fresh_folder, move_into_place, unique_dir_name, write_skill};

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
/// `path NUL sha256 LF` ([`crate::skillsbench::skill::folder_hash`]). Independent of the order of
/// `files`; paths cannot contain NUL or LF (checked paths have no control characters), so the
/// encoding is unambiguous.
pub fn content_hash(files: &[SkillFileRecord]) -> String {
    crate::skillsbench::skill::folder_hash(
        files.iter().map(|f| (f.path.as_str(), f.sha256.as_str())),
    )
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

#[cfg(test)]
mod tests {
    use super::guard::*;
    use super::write::*;
    use super::*;
    use crate::skillsbench::skill::MAX_NAME_LEN;
    use std::io::Cursor;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
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
