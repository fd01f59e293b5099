//! The links of the agent's work over the image's: where a path leads once every link in it is
//! followed, and which of the work's links may be carried into the verifier's environment.
//! Pure: read from the hand-over's listing ([`super::collect`]) and the image's manifest.

use std::collections::{BTreeMap, BTreeSet};

use super::manifest::Manifest;
use super::paths::{follow, parent, within};
use super::rule::{VERIFIER_ONLY, is_pytest_temp};
use crate::runner::STATIC_SHELL_DIR;

/// What the agent did to the links of the filesystem, beside the image's own
/// ([`Manifest`]'s links).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkLinks {
    /// Links the agent made or changed that are its work: absolute path → target, as written.
    made: BTreeMap<String, String>,
    /// The image's links the agent replaced by a file or folder: no link there any more.
    replaced: BTreeSet<String>,
}

/// Which links a path is read through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// The filesystem as the agent left it: its links, and its files and folders in place of
    /// the image's links they replaced.
    Agent,
    /// The agent's links, with the image's links kept where it replaced them by a file or
    /// folder — the verifier's filesystem when the replacement is not carried.
    ImageLinksKept,
}

impl WorkLinks {
    /// No link of the agent's: every path reads through the image's links alone.
    pub fn none() -> Self {
        Self::default()
    }

    /// Records a link of the work at `path` (absolute) leading to `target`.
    pub fn made(mut self, path: &str, target: &str) -> Self {
        self.add_made(path, target);
        self
    }

    /// Records that the agent replaced the image's link at `path` by a file or folder.
    pub fn replaced(mut self, path: &str) -> Self {
        self.add_replaced(path);
        self
    }

    /// [`Self::made`], in place.
    pub fn add_made(&mut self, path: &str, target: &str) {
        self.replaced.remove(path);
        self.made.insert(path.to_string(), target.to_string());
    }

    /// [`Self::replaced`], in place (a link of the work at the same path wins).
    pub fn add_replaced(&mut self, path: &str) {
        if !self.made.contains_key(path) {
            self.replaced.insert(path.to_string());
        }
    }

    /// The work's links, path → target.
    pub fn iter_made(&self) -> impl Iterator<Item = (&str, &str)> {
        self.made.iter().map(|(p, t)| (p.as_str(), t.as_str()))
    }

    /// The link at `path` in `view`: `Some(target)` of the work's link there, or of the
    /// image's link where the work has none (nor, in [`View::Agent`], replaced it).
    fn link_at(&self, path: &str, manifest: &Manifest, view: View) -> Option<String> {
        if let Some(t) = self.made.get(path) {
            return Some(t.clone());
        }
        if view == View::Agent && self.replaced.contains(path) {
            return None;
        }
        manifest.get(path).and_then(|f| f.link.clone())
    }

    /// The path `path` (absolute) names once every link in it is followed in `view`, with `.`
    /// and `..` read as the kernel reads them; `None` in a loop of links (more than 40 hops,
    /// the kernel's own bound).
    pub fn resolve(&self, path: &str, manifest: &Manifest, view: View) -> Option<String> {
        follow(path, &|p: &str| self.link_at(p, manifest, view))
    }

    /// Why the link at `link_path` to `target` may not be carried as a link, or `None` when it
    /// may: it leads into a folder only the verifier has (`/tests`, `/logs/verifier`), or a
    /// copy `test.sh` makes of the tests' files (`copy_of_tests`: the expected output it copies
    /// to `/root`), the kernel's folders, skillscope's shell, or nowhere (a loop) — judged in
    /// both [`View`]s (a replacing folder that is not carried leaves the image's link in place).
    pub fn refused(
        &self,
        link_path: &str,
        target: &str,
        manifest: &Manifest,
        copy_of_tests: &dyn Fn(&str) -> bool,
    ) -> Option<String> {
        let start = if target.starts_with('/') {
            target.to_string()
        } else {
            format!("{}/{target}", parent(link_path))
        };
        for view in [View::Agent, View::ImageLinksKept] {
            let Some(p) = self.resolve(&start, manifest, view) else {
                return Some("in a loop of links".into());
            };
            if VERIFIER_ONLY.iter().any(|d| within(&p, d)) {
                return Some(format!("into {p}, which only the verifier has"));
            }
            if is_pytest_temp(&p) {
                return Some(format!(
                    "into {p}, pytest's temporary folder, which only the verifier has"
                ));
            }
            if copy_of_tests(&p) {
                return Some(format!(
                    "into {p}, a copy test.sh makes of the tests, which only the verifier has"
                ));
            }
            if p == "/dev/null" {
                continue;
            }
            if let Some(d) = ["/proc", "/sys", "/dev", STATIC_SHELL_DIR]
                .iter()
                .find(|d| within(&p, d))
            {
                return Some(format!("into {d}"));
            }
        }
        None
    }
}

#[cfg(test)]
impl WorkLinks {
    /// [`WorkLinks::refused`] where `test.sh` copies none of the tests.
    fn refused_plain(&self, link_path: &str, target: &str, manifest: &Manifest) -> Option<String> {
        self.refused(link_path, target, manifest, &|_| false)
    }
}

#[cfg(test)]
mod tests {
    use super::super::manifest::FileKind as K;
    use super::super::manifest::tests::manifest_of;
    use super::*;

    fn image() -> Manifest {
        manifest_of(&[
            ("app/", K::Dir, ""),
            ("srv/", K::Dir, ""),
            ("srv/data", K::Link, "/app"),
            ("usr/", K::Dir, ""),
            ("usr/bin/", K::Dir, ""),
            ("usr/bin/python3", K::File, ""),
        ])
    }

    #[test]
    fn links_resolve_through_the_image_and_the_work() {
        let m = image();
        let none = WorkLinks::none();
        assert_eq!(none.refused_plain("/app/a", "data.csv", &m), None);
        assert_eq!(none.refused_plain("/app/a", "/usr/bin/python3", &m), None);
        assert!(none.refused_plain("/app/a", "../tests/x", &m).is_some());
        assert!(
            none.refused_plain("/app/a", "/srv/data/../../tests", &m)
                .is_some()
        );
        let work = WorkLinks::none().made("/app/b", "/logs/verifier");
        assert!(work.refused_plain("/app/a", "b/reward.txt", &m).is_some());
        let looped = WorkLinks::none()
            .made("/app/x", "/app/y")
            .made("/app/y", "/app/x");
        assert_eq!(
            looped.refused_plain("/app/a", "/app/x/z", &m).as_deref(),
            Some("in a loop of links")
        );
        assert_eq!(none.refused_plain("/app/a", "/dev/null", &m), None);
        assert_eq!(
            none.refused_plain("/app/a", "/proc/self/environ", &m)
                .as_deref(),
            Some("into /proc")
        );
        assert_eq!(
            none.resolve("/app/a/../b", &m, View::Agent),
            Some("/app/b".into())
        );
        assert_eq!(
            none.resolve("/srv/data/x", &m, View::Agent),
            Some("/app/x".into())
        );
    }

    /// The image's link `/opt/p/cur` replaced by the agent's folder: its `..` is the folder's,
    /// as the verifier's kernel reads it when the folder is carried — and the image's link's
    /// when it is not.
    #[test]
    fn a_replaced_image_link_is_judged_both_ways() {
        let deep = manifest_of(&[
            ("opt/", K::Dir, ""),
            ("opt/p/", K::Dir, ""),
            ("opt/p/r/", K::Dir, ""),
            ("opt/p/r/v1/", K::Dir, ""),
            ("opt/p/cur", K::Link, "/opt/p/r/v1"),
        ]);
        let target = "/opt/p/cur/../../../tests/expected";
        assert_eq!(
            WorkLinks::none().refused_plain("/app/a", target, &deep),
            None
        );
        let replaced = WorkLinks::none().replaced("/opt/p/cur");
        assert!(replaced.refused_plain("/app/a", target, &deep).is_some());
        assert_eq!(
            replaced.resolve("/opt/p/cur/x", &deep, View::Agent),
            Some("/opt/p/cur/x".into())
        );
        assert_eq!(
            replaced.resolve("/opt/p/cur/x", &deep, View::ImageLinksKept),
            Some("/opt/p/r/v1/x".into())
        );
        // Refused only through the image's link, kept where the replacing folder is not
        // carried: the link leads up to `/srv`, the folder stays three deep.
        let shallow = manifest_of(&[
            ("opt/", K::Dir, ""),
            ("opt/p/", K::Dir, ""),
            ("opt/p/cur", K::Link, "/srv"),
            ("srv/", K::Dir, ""),
        ]);
        let up = "/opt/p/cur/../tests";
        let kept = WorkLinks::none().replaced("/opt/p/cur");
        assert_eq!(
            kept.resolve(up, &shallow, View::Agent),
            Some("/opt/p/tests".into())
        );
        assert!(kept.refused_plain("/app/a", up, &shallow).is_some());
        // A link of the work at the same path wins over a replacement.
        let both = WorkLinks::none()
            .replaced("/opt/p/cur")
            .made("/opt/p/cur", "/app");
        assert_eq!(
            both.resolve("/opt/p/cur/x", &deep, View::Agent),
            Some("/app/x".into())
        );
    }
}
