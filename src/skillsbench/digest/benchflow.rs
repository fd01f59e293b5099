//! BenchFlow's task digest (`benchflow-ai/benchflow`, `src/benchflow/_utils/task_authoring/
//! __init__.py::task_digest`, commit 62cc7e4): the `digest` of each task in a SkillsBench
//! `registry.json` (`skillsbench@1.1`), which BenchFlow checks before anything runs. It is not
//! Harbor's digest ([`super::harbor`]): every regular file of the folder counts (root files,
//! hidden files, `.gitignore`d files), symlinks never do (neither files nor folders), only a file
//! named `.benchflow-source.json` is left out, and each file adds its raw 32-byte SHA-256 rather
//! than its hex.
//!
//! Sorted by relative `/`-path, the digest is SHA-256 over `<path>\0<32-byte sha256 of the
//! file>` per file, written `sha256:<hex>`.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::DigestError;
use super::harborignore::rel_posix;

/// The file BenchFlow leaves out wherever it is (its own provenance note).
const SOURCE_NOTE: &str = ".benchflow-source.json";

/// BenchFlow's digest of task folder `dir`: `sha256:<64 lowercase hex>`.
///
/// # Errors
/// [`DigestError`] naming the path: `dir` is not a folder, a folder or file cannot be read, a
/// name is not UTF-8.
pub fn task_digest(dir: &Path) -> Result<String, DigestError> {
    if !dir.is_dir() {
        return Err(DigestError::io(
            dir,
            std::io::Error::other("not a directory"),
        ));
    }
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    walk(dir, dir, &mut files)?;
    files.sort();
    let mut outer = Sha256::new();
    for (rel, path) in files {
        let bytes = std::fs::read(&path).map_err(|e| DigestError::io(&path, e))?;
        outer.update(rel.as_bytes());
        outer.update([0]);
        outer.update(Sha256::digest(&bytes));
    }
    Ok(format!("sha256:{}", hex::encode(outer.finalize())))
}

/// `os.walk` without following links: regular files only.
fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) -> Result<(), DigestError> {
    for e in std::fs::read_dir(dir).map_err(|e| DigestError::io(dir, e))? {
        let e = e.map_err(|e| DigestError::io(dir, e))?;
        let path = e.path();
        let kind = e.file_type().map_err(|e| DigestError::io(&path, e))?;
        if kind.is_dir() {
            walk(root, &path, out)?;
        } else if kind.is_file() && e.file_name() != SOURCE_NOTE {
            out.push((rel_posix(root, &path)?, path));
        }
    }
    Ok(())
}
