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
mod link_copies;
pub mod links;
pub mod listing;
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

    /// The name of the image's user (its `USER` without a group): [`ImageFacts::name_of`].
    pub fn user_name(&self) -> Option<String> {
        self.name_of(&self.user)
    }

    /// The name of `user` (`name`, `id`, either with `:group`) without its group: the name as
    /// written (`root` for `""`), or for an id the name the image's `/etc/passwd` gives it;
    /// `None` for an id the file does not list.
    pub fn name_of(&self, user: &str) -> Option<String> {
        let user = match user.split(':').next().unwrap_or_default() {
            "" => "root",
            u => u,
        };
        if !user.bytes().all(|b| b.is_ascii_digit()) {
            return Some(user.to_string());
        }
        self.files
            .accounts
            .iter()
            .find(|a| a.uid == user)
            .map(|a| a.name.clone())
    }

    /// Why `user` (a name or an id, with or without a group) cannot run in this image: a name
    /// its `/etc/passwd` does not list (an id always can: Docker runs any). `None` when it can,
    /// or when the file was not read (larger than [`manifest::MAX_SCRIPT`], or none).
    pub fn unknown_user(&self, user: &str) -> Option<String> {
        let name = user.split(':').next().unwrap_or_default();
        if self.files.accounts.is_empty()
            || matches!(name, "" | "root")
            || name.bytes().all(|b| b.is_ascii_digit())
            || self.files.accounts.iter().any(|a| a.name == name)
        {
            return None;
        }
        Some(format!("no user {name} in the image's /etc/passwd"))
    }

    /// The user execs run as for `user` (an image's `USER`, a task's `[agent] user`): `None`
    /// for root; else by name where `/etc/passwd` gives one (a backend that switches users
    /// with `su` needs it), the group kept; else as written (a bare id).
    pub fn exec_user(&self, user: &str) -> Option<String> {
        if crate::runner::is_root_user(user) {
            return None;
        }
        Some(match (self.name_of(user), user.split_once(':')) {
            (Some(name), Some((_, group))) => format!("{name}:{group}"),
            (Some(name), None) => name,
            (None, _) => user.to_string(),
        })
    }

    /// The home folder of the image's user: [`ImageFacts::home_of`] its `USER`.
    pub fn home(&self) -> String {
        self.home_of(&self.user)
    }

    /// The home folder of `user` (a name or an id, with or without a group) in this image, as
    /// the runtime sets `HOME` for its processes: the image's own `HOME` when it sets one; else
    /// the user's home in the image's `/etc/passwd` (by name or id; `/` when empty); else
    /// `/root` for root, `/` for an id the file does not list (Docker's default),
    /// `/home/<name>` for a name it does not.
    pub fn home_of(&self, user: &str) -> String {
        if let Some(h) = self
            .env
            .iter()
            .rev()
            .find_map(|e| e.strip_prefix("HOME="))
            .filter(|h| h.starts_with('/'))
        {
            return paths::normalize(h);
        }
        let user = match user.split(':').next().unwrap_or_default() {
            "" => "root",
            u => u,
        };
        if let Some(a) = self
            .files
            .accounts
            .iter()
            .find(|a| a.name == user || a.uid == user)
        {
            return match a.home.as_str() {
                h if h.starts_with('/') => paths::normalize(h),
                _ => "/".into(),
            };
        }
        match user {
            "root" | "0" => "/root".into(),
            u if u.chars().all(|c| c.is_ascii_digit()) => "/".into(),
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
        // The runtime's HOME: the image's own, else /etc/passwd's, else Docker's default.
        let passwd = manifest::tests::manifest_of(&[(
            "etc/passwd",
            manifest::FileKind::File,
            "root:x:0:0:root:/root:/bin/bash\n# note\nbuilder:x:1000:1000::/app:/bin/sh\nnohome:x:1001:1001:::/bin/sh\n",
        )]);
        let facts = |user: &str, env: &[&str]| ImageFacts {
            user: user.into(),
            env: env.iter().map(|e| e.to_string()).collect(),
            files: passwd.clone(),
            ..Default::default()
        };
        assert_eq!(facts("builder", &[]).home(), "/app");
        assert_eq!(facts("1000:1000", &[]).home(), "/app");
        assert_eq!(facts("nohome", &[]).home(), "/");
        assert_eq!(facts("2000", &[]).home(), "/");
        assert_eq!(facts("", &[]).home(), "/root");
        assert_eq!(
            facts("builder", &["HOME=/workspace/", "PATH=/usr/bin"]).home(),
            "/workspace"
        );
        // The name `su` needs: as written, or /etc/passwd's for an id; none for an unlisted id.
        assert_eq!(
            facts("builder", &[]).user_name().as_deref(),
            Some("builder")
        );
        assert_eq!(
            facts("1000:1000", &[]).user_name().as_deref(),
            Some("builder")
        );
        assert_eq!(facts("app:staff", &[]).user_name().as_deref(), Some("app"));
        assert_eq!(facts("", &[]).user_name().as_deref(), Some("root"));
        assert_eq!(facts("4242", &[]).user_name(), None);
        // Execs: none for root, by name where the file gives one, the group kept.
        let f = facts("", &[]);
        assert_eq!(f.exec_user("0:0"), None);
        assert_eq!(f.exec_user("1000").as_deref(), Some("builder"));
        assert_eq!(f.exec_user("1000:50").as_deref(), Some("builder:50"));
        assert_eq!(f.exec_user("4242").as_deref(), Some("4242"));
        assert_eq!(f.exec_user("agent").as_deref(), Some("agent"));
        assert_eq!(f.home_of("1000"), "/app");
        assert_eq!(f.home_of("nobody-here"), "/home/nobody-here");
        assert_eq!(f.unknown_user("builder:50"), None);
        assert_eq!(f.unknown_user("4242"), None);
        assert_eq!(f.unknown_user("root"), None);
        assert_eq!(
            f.unknown_user("agent").as_deref(),
            Some("no user agent in the image's /etc/passwd")
        );
        assert_eq!(ImageFacts::default().unknown_user("agent"), None);
    }
}
