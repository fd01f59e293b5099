//! Harbor 0.26's task digest (`harbor/publisher/packager.py::Packager.compute_content_hash`, the
//! `task.digest` of every trial's `lock.json`) and skill digest
//! (`harbor/skills.py::compute_skill_digest`, the `skills[].digest` of a lock).
//!
//! The task digest's files:
//! 1. `task.toml`, `instruction.md`, `README.md`, `trajectory.json` at the task root, each when
//!    it exists (a symlink to a file counts: its target's bytes are hashed) — no other root file;
//! 2. every file under `environment/`, `tests/`, `solution/` and `steps/`, walked without entering
//!    symlinked folders and without what `.harborignore` excludes
//!    ([`super::harborignore`]); a symlink to a file is hashed through its target (even outside
//!    the task), a dangling one is left out, hidden files are in;
//! 3. minus what the root `.gitignore` matches ([`Dialect::Basic`]) — or, without one, Harbor's
//!    default ignores (`__pycache__/`, `*.pyc`, `.DS_Store`, `*.swp`, `*.swo`, `*~`): a root
//!    `.gitignore` replaces them; nested `.gitignore` files are ordinary files.
//!
//! Sorted by relative `/`-path (code point order = Rust's `str` order, not by component), the
//! digest is SHA-256 over the lines `<path>\0<sha256 hex of the file>\n`, written `sha256:<hex>`.
//! The folder's own name is not part of it.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::DigestError;
use super::harborignore::{TaskFileFilter, rel_posix};
use super::patterns::{Dialect, Spec, split_lines};

/// Harbor's ignores when the task has no root `.gitignore` (`packager.DEFAULT_IGNORES`).
pub const DEFAULT_IGNORES: [&str; 6] =
    ["__pycache__/", "*.pyc", ".DS_Store", "*.swp", "*.swo", "*~"];

/// Root files Harbor hashes, in its order.
const SINGLE_FILES: [&str; 4] = [
    "task.toml",
    "instruction.md",
    "README.md",
    "trajectory.json",
];

/// Folders Harbor hashes, in its order.
const TREES: [&str; 4] = ["environment", "tests", "solution", "steps"];

/// The files of task folder `dir` that Harbor 0.26's digest covers: (relative `/`-path, path on
/// disk), sorted as the digest reads them.
///
/// # Errors
/// [`DigestError`] naming the path: an unreadable folder or file, a name that is not UTF-8, an
/// unusable `.harborignore`, a `.gitignore` that is not UTF-8 or holds a pattern pathspec refuses.
pub fn task_files(dir: &Path) -> Result<Vec<(String, PathBuf)>, DigestError> {
    let root = std::fs::canonicalize(dir).map_err(|e| DigestError::io(dir, e))?;
    let mut filter = TaskFileFilter::new(&root);
    let mut files: Vec<PathBuf> = SINGLE_FILES
        .iter()
        .map(|n| root.join(n))
        .filter(|p| std::fs::metadata(p).is_ok())
        .collect();
    for tree in TREES {
        let top = root.join(tree);
        if std::fs::metadata(&top).is_err() {
            continue;
        }
        if !top.is_dir() {
            return Err(DigestError::io(
                &top,
                std::io::Error::other("not a directory"),
            ));
        }
        if filter.is_excluded(&top)? {
            continue;
        }
        select(&top, &mut filter, &mut files)?;
    }
    let gitignore = root.join(".gitignore");
    let spec = if std::fs::metadata(&gitignore).is_ok() {
        let text =
            std::fs::read_to_string(&gitignore).map_err(|e| DigestError::io(&gitignore, e))?;
        Spec::from_lines(Dialect::Basic, &split_lines(&text))
    } else {
        Spec::from_lines(Dialect::Basic, &DEFAULT_IGNORES)
    }
    .map_err(|message| DigestError::Ignore {
        path: gitignore.clone(),
        message,
    })?;
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let rel = rel_posix(&root, &f)?;
        if !spec.matches(&rel) {
            out.push((rel, f));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// `select_files` then `is_file()`: the files under `dir`, not entering symlinked folders nor
/// what the filter excludes.
fn select(
    dir: &Path,
    filter: &mut TaskFileFilter,
    out: &mut Vec<PathBuf>,
) -> Result<(), DigestError> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| DigestError::io(dir, e))?
        .map(|e| e.map(|e| e.path()).map_err(|e| DigestError::io(dir, e)))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for path in entries {
        if filter.is_excluded(&path)? {
            continue;
        }
        let link = std::fs::symlink_metadata(&path)
            .map(|m| m.file_type().is_symlink())
            .unwrap_or(false);
        if path.is_dir() && !link {
            select(&path, filter, out)?;
        } else if path.is_file() {
            out.push(path);
        }
    }
    Ok(())
}

/// Harbor 0.26's digest of task folder `dir`: `sha256:<64 lowercase hex>`.
///
/// # Errors
/// As [`task_files`], and a file that cannot be read.
pub fn task_digest(dir: &Path) -> Result<String, DigestError> {
    let mut outer = Sha256::new();
    for (rel, path) in task_files(dir)? {
        outer.update(format!("{rel}\0{}\n", file_sha256(&path)?).as_bytes());
    }
    Ok(format!("sha256:{}", hex::encode(outer.finalize())))
}

/// Harbor's skill digest of skill folder `dir` (`compute_skill_digest`): every file below it
/// (hidden ones too, no ignore rules, symlinked folders not entered, a symlink to a file hashed
/// through its target), sorted by path component by component (`a/b` before `a-b/x`), each
/// contributing `<path>\0<sha256 hex>\0`; `sha256:<hex>`.
///
/// # Errors
/// [`DigestError`] naming the path that could not be read or is not UTF-8.
pub fn skill_digest(dir: &Path) -> Result<String, DigestError> {
    let mut files = Vec::new();
    skill_files(dir, &mut files)?;
    let mut keyed: Vec<(Vec<String>, PathBuf)> = Vec::with_capacity(files.len());
    for f in files {
        let rel = rel_posix(dir, &f)?;
        keyed.push((rel.split('/').map(str::to_string).collect(), f));
    }
    keyed.sort();
    let mut outer = Sha256::new();
    for (parts, path) in keyed {
        outer.update(parts.join("/").as_bytes());
        outer.update([0]);
        outer.update(file_sha256(&path)?.as_bytes());
        outer.update([0]);
    }
    Ok(format!("sha256:{}", hex::encode(outer.finalize())))
}

fn skill_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), DigestError> {
    for e in std::fs::read_dir(dir).map_err(|e| DigestError::io(dir, e))? {
        let path = e.map_err(|e| DigestError::io(dir, e))?.path();
        let link = std::fs::symlink_metadata(&path)
            .map(|m| m.file_type().is_symlink())
            .unwrap_or(false);
        if path.is_dir() {
            if !link {
                skill_files(&path, out)?;
            }
        } else if path.is_file() {
            out.push(path);
        }
    }
    Ok(())
}

/// SHA-256 of a file's bytes (read through symlinks), lowercase hex.
fn file_sha256(path: &Path) -> Result<String, DigestError> {
    let mut f = std::fs::File::open(path).map_err(|e| DigestError::io(path, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| DigestError::io(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}
