//! Task and skill digests as the field computes them, so a task here and a task in a Harbor or
//! BenchFlow run can be told the same:
//!
//! - [`task_digest`] — Harbor 0.26's (`Packager.compute_content_hash`), the `task.digest` of
//!   every trial's `lock.json`; skillscope stores it per trial and writes it into its own locks;
//! - [`skill_digest`] — Harbor's digest of one skill folder (`skills[].digest` of a lock);
//! - [`benchflow::task_digest`] — BenchFlow's, the per-task `digest` of a SkillsBench
//!   `registry.json`.
//!
//! All are `sha256:<64 lowercase hex>`. Pure: they read the folder and nothing else.

pub mod benchflow;
mod harbor;
mod harborignore;
mod patterns;

use std::path::{Path, PathBuf};

pub use harbor::{DEFAULT_IGNORES, skill_digest, task_digest, task_files};

/// Why a digest could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum DigestError {
    /// A folder or file that cannot be read.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A file name that is not UTF-8 (Harbor cannot encode it either).
    #[error("{path}: the name is not UTF-8")]
    NotUtf8 {
        /// The path.
        path: PathBuf,
    },
    /// A `.gitignore` or `.harborignore` Harbor refuses too.
    #[error("{path}: {message}")]
    Ignore {
        /// The ignore file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl DigestError {
    fn io(path: &Path, source: std::io::Error) -> DigestError {
        DigestError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// True for a digest as Harbor's lock model accepts it: `sha256:` and 64 lowercase hex digits.
pub fn is_digest(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[cfg(test)]
mod tests;
