//! Harbor's `.harborignore` filter (`harbor/models/task/file_filter.py::TaskFileFilter`, 0.26.0):
//! which task files Harbor leaves out of a task's tests and solution — and of its digest.
//!
//! - Every file or folder named `.harborignore` is excluded, wherever it is.
//! - Its rules apply only inside `tests/`, `solution/`, `steps/*/tests/` and `steps/*/solution/`
//!   (git's rules, [`Dialect::Git`]), relative to the folder holding it, inherited by the folders
//!   below; a `.harborignore` elsewhere (the task root, `environment/`) excludes only itself.
//! - A path is checked component by component from the task root: at each component inside a
//!   scope, every `.harborignore` of its ancestors in a scope is asked (outer first) and the last
//!   that has an opinion decides; excluded at any component means excluded (so a folder once
//!   excluded cannot be re-included below).
//! - A symlink is also excluded when its target lies in the task and is excluded.
//! - A `.harborignore` that is not a regular file, or points outside the task, is an error.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::DigestError;
use super::patterns::{Dialect, Spec, split_lines};

/// The ignore file's name.
const IGNORE_FILENAME: &str = ".harborignore";

/// The filter of one task folder, with each folder's rules read once.
pub(super) struct TaskFileFilter {
    /// The task folder, resolved.
    root: PathBuf,
    scopes: Spec,
    rules: HashMap<PathBuf, Option<Spec>>,
}

impl TaskFileFilter {
    /// The filter of the (resolved, absolute) task folder `root`.
    pub(super) fn new(root: &Path) -> TaskFileFilter {
        TaskFileFilter {
            root: root.to_path_buf(),
            scopes: Spec::from_lines(
                Dialect::Git,
                &[
                    "/tests/",
                    "/solution/",
                    "/steps/*/tests/",
                    "/steps/*/solution/",
                ],
            )
            .expect("fixed patterns compile"),
            rules: HashMap::new(),
        }
    }

    /// `is_excluded`: `path` (absolute, under the task folder as written) is left out.
    ///
    /// # Errors
    /// A `.harborignore` that cannot be used (not a regular file, outside the task, unreadable,
    /// not UTF-8, an invalid pattern).
    pub(super) fn is_excluded(&mut self, path: &Path) -> Result<bool, DigestError> {
        if !path.starts_with(&self.root) {
            return Ok(false);
        }
        if self.matches(path)? {
            return Ok(true);
        }
        // A symlink (or a path through one) whose target is in the task and excluded.
        match std::fs::canonicalize(path) {
            Ok(resolved) if resolved != path && resolved.starts_with(&self.root) => {
                self.matches(&resolved)
            }
            _ => Ok(false),
        }
    }

    /// `_matches`.
    fn matches(&mut self, path: &Path) -> Result<bool, DigestError> {
        let rel = rel_posix(&self.root, path)?;
        if path.file_name().is_some_and(|n| n == IGNORE_FILENAME) {
            return Ok(true);
        }
        let is_dir = path.is_dir();
        let suffix = if is_dir { "/" } else { "" };
        if !self.scopes.matches(&format!("{rel}{suffix}")) {
            return Ok(false);
        }
        let parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty()).collect();
        let mut specs: Vec<PathBuf> = Vec::new();
        let mut candidate = self.root.clone();
        for (i, part) in parts.iter().enumerate() {
            if self.rules_of(&candidate)?.is_some() {
                specs.push(candidate.clone());
            }
            candidate.push(part);
            let last = i + 1 == parts.len();
            let suffix = if !last || is_dir { "/" } else { "" };
            let cand_rel = parts[..=i].join("/");
            if !self.scopes.matches(&format!("{cand_rel}{suffix}")) {
                continue;
            }
            let mut excluded = false;
            for dir in &specs {
                let below = candidate
                    .strip_prefix(dir)
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let spec = self.rules[dir].as_ref().expect("rules read above");
                if let Some(include) = spec.check(&format!("{below}{suffix}")) {
                    excluded = include;
                }
            }
            if excluded {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// `ignore_rules`: the rules of folder `dir`, `None` outside the scopes (read once).
    fn rules_of(&mut self, dir: &Path) -> Result<Option<&Spec>, DigestError> {
        if !self.rules.contains_key(dir) {
            let rel = rel_posix(&self.root, dir)?;
            let spec = if self.scopes.matches(&format!("{rel}/")) {
                Some(read_rules(&self.root, &dir.join(IGNORE_FILENAME))?)
            } else {
                None
            };
            self.rules.insert(dir.to_path_buf(), spec);
        }
        Ok(self.rules[dir].as_ref())
    }
}

/// Reads one `.harborignore` (an absent one has no rules).
fn read_rules(root: &Path, path: &Path) -> Result<Spec, DigestError> {
    let bad = |message: String| DigestError::Ignore {
        path: path.to_path_buf(),
        message,
    };
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(Spec::from_lines::<&str>(Dialect::Git, &[]).expect("empty"));
    };
    let target = std::fs::canonicalize(path)
        .map_err(|_| bad("must be a regular file (a symlink leading nowhere)".into()))?;
    if !target.starts_with(root) {
        return Err(bad("must stay within the task".into()));
    }
    if !(meta.is_file() || (meta.file_type().is_symlink() && target.is_file())) {
        return Err(bad("must be a regular file".into()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    Spec::from_lines(Dialect::Git, &split_lines(&text)).map_err(bad)
}

/// `path` relative to `root`, `/`-separated, as UTF-8 (`""` for the root itself).
pub(super) fn rel_posix(root: &Path, path: &Path) -> Result<String, DigestError> {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let mut out = Vec::new();
    for c in rel.components() {
        out.push(c.as_os_str().to_str().ok_or_else(|| DigestError::NotUtf8 {
            path: path.to_path_buf(),
        })?);
    }
    Ok(out.join("/"))
}
