//! What a trial gets of its image, whoever built it: the ready image ([`ReadyImage`]), why a
//! build failed ([`BuildFailure`]), the verifier's copies of skills ([`VerifierFiles`]) and what
//! the image holds ([`ImageFacts`]: its configuration and its files by content, taken once per
//! image — what the agent's changes are measured against).

use std::sync::Arc;

use serde::Serialize;

use super::{Fault, RunnerError};

pub use super::work::ImageFacts;

/// One image of a trial's chain and what its build took.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImageBuild {
    /// Its tag.
    pub tag: String,
    /// Seconds its build took here (0 when it was reused).
    pub seconds: f64,
    /// True when it was built (not reused).
    pub built: bool,
}

/// The verifier's copies of skills, read out of an image's verifier stage: each container path
/// and the tar Docker archived it as (its own name at the top).
#[derive(Debug, Clone, Default)]
pub struct VerifierFiles {
    /// `(path, tar)` per copy.
    pub copies: Vec<(String, Arc<Vec<u8>>)>,
}

/// A ready image for a trial.
#[derive(Debug, Clone)]
pub struct ReadyImage {
    /// Image tag.
    pub tag: String,
    /// Context hash.
    pub hash: String,
    /// True when this call built it; false when it already existed.
    pub built: bool,
    /// Build log (or a note that the image was reused) for the trial folder.
    pub log: Arc<String>,
    /// Each image of the chain (the no-skills image first, then the skills over it).
    pub builds: Vec<ImageBuild>,
    /// The verifier's copies of skills to put in place before the verifier runs.
    pub verifier_files: Option<Arc<VerifierFiles>>,
}

/// Why an image is not ready: the task's own build failed (its Dockerfile, its context, a skills
/// leak into a no-skills image) or an infrastructure fault got in the way.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildFailure {
    /// What failed, with the end of the build log.
    pub message: String,
    /// Set when the failure is an infrastructure fault (the attempt is re-queued and the build
    /// tried again), `None` when the task's build itself failed (a `build-error` verdict).
    pub fault: Option<Fault>,
    /// The whole build log, when a build ran (the trial's `environment/build.log`).
    pub log: Option<Arc<String>>,
}

impl BuildFailure {
    /// The task's own build failed.
    pub fn task(message: impl Into<String>) -> BuildFailure {
        BuildFailure {
            message: message.into(),
            fault: None,
            log: None,
        }
    }

    /// A runner error on the way: a fault when it is one.
    pub fn runner(context: &str, e: RunnerError) -> BuildFailure {
        BuildFailure {
            fault: e.fault(),
            message: format!("{context}: {e}"),
            log: None,
        }
    }

    /// What the trial's `environment/build.log` holds: the whole log, then the message.
    pub fn log_text(&self) -> String {
        match &self.log {
            Some(l) => format!("{l}\n--- build failed ---\n{}\n", self.message),
            None => format!("{}\n", self.message),
        }
    }
}

impl std::fmt::Display for BuildFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Result of a build, shared by every trial waiting on it.
pub type BuildOutcome = Result<ReadyImage, BuildFailure>;
