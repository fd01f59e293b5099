//! A skill folder already on disk (a task's curated skills, a self-generated set) read and hashed
//! the way an export is, so curated and learned skills compare by [`super::SkillSnapshot::content_hash`];
//! and a skills tar imported through the same guard.

use std::collections::HashSet;
use std::path::Path;

use crate::skillsbench::skill::{Severity, check_skill_md};

use super::guard::*;
use super::write::*;
use super::*;

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
        let bytes = crate::fs::read_capped(entry.path(), limits.max_file_bytes + 1)
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
/// [`export_space`] into the new folder `out`: entry paths (`guard::check_path`), entry types (regular
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
