//! The agent's work and the verifier's toolchain: how a verdict holds whatever the agent did.
//! Pure: the trial's hand-over (`runner/trial/changes.rs`) runs the scripts and moves the tars.
//!
//! The verifier's environment starts from the task's image — never from the agent's
//! filesystem — with skillscope's static shell as PID 1, so nothing of the agent's runs there
//! before the tests. Once every process of the agent is gone, what it changed is read by content
//! against the image ([`manifest`], taken once per image), sorted by the rule ([`rule`]: the
//! toolchain stays the image's, the work is carried; [`collect`]), and the work is carried into
//! the verifier's environment as data: its deletions, then one tar of its files. The rest is
//! evidence (`agent/tamper.json`).

pub mod collect;
pub mod links;
pub mod manifest;
pub mod paths;
pub mod rule;
pub mod test_sh;

use serde::{Deserialize, Serialize};

pub use collect::{Changed, Collected, DroppedLink, Limits};
pub use links::WorkLinks;
pub use manifest::{FileFact, FileKind, Manifest};
pub use rule::{Class, PythonPaths, Rules, Toolchain};

/// What an image holds, read once per image: its configuration, its files by content and its
/// toolchain's search paths.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ImageFacts {
    /// The image's id (`sha256:…`): what the facts are of.
    pub id: String,
    /// Its working folder (`/` when it sets none).
    pub working_dir: String,
    /// Its ENTRYPOINT.
    pub entrypoint: Vec<String>,
    /// Its `KEY=VALUE` environment.
    pub env: Vec<String>,
    /// The user it runs as (empty: root).
    pub user: String,
    /// Its files by content.
    pub files: Manifest,
    /// Its search paths.
    pub toolchain: Toolchain,
}

impl ImageFacts {
    /// The image's `PATH` folders (its `PATH`, else [`rule::DEFAULT_PATH`]), absolute, in order.
    pub fn path_dirs(env: &[String]) -> Vec<String> {
        let path = env
            .iter()
            .find_map(|e| e.strip_prefix("PATH="))
            .unwrap_or(rule::DEFAULT_PATH);
        let mut out: Vec<String> = Vec::new();
        for d in path.split(':') {
            let d = d.trim_end_matches('/');
            if d.starts_with('/') && !out.iter().any(|o| o == d) {
                out.push(d.to_string());
            }
        }
        out
    }

    /// These facts with what a trial's site mounts over the image in every environment
    /// (`mounts`: each mount's target and its files, absolute paths at the target): the files
    /// the agent found there and the verifier finds there again, so what the agent changed is
    /// measured against them, as against the image's.
    pub fn with_mounted(&self, mounts: &[(String, Manifest)]) -> ImageFacts {
        let mut out = self.clone();
        for (target, files) in mounts {
            out.files.mount(target, files);
        }
        out
    }

    /// The home folder of the image's user (`/root` for root).
    pub fn home(&self) -> String {
        match self.user.split(':').next().unwrap_or_default() {
            "" | "root" | "0" => "/root".into(),
            u => format!("/home/{u}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_folders_are_read_from_the_image_environment() {
        assert_eq!(
            ImageFacts::path_dirs(&["PATH=/opt/conda/bin:/usr/bin/:relative:/usr/bin".into()]),
            vec!["/opt/conda/bin".to_string(), "/usr/bin".into()]
        );
        assert_eq!(ImageFacts::path_dirs(&[]).len(), 6);
        let f = ImageFacts {
            user: "app:app".into(),
            ..Default::default()
        };
        assert_eq!(f.home(), "/home/app");
        assert_eq!(ImageFacts::default().home(), "/root");
    }
}
