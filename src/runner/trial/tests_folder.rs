//! What the verifier's rule reads of a task's `tests/` folder, in one walk: the Python sources
//! (the folders the tests put on `sys.path`), what the files say of package sources, and the
//! names at its top (where `test.sh` copies them).

use std::collections::BTreeMap;
use std::path::Path;

use crate::runner::work;

/// Most bytes of the tests' Python sources read, all files together.
const MAX_TEST_SOURCES: u64 = 4 << 20;

/// How deep the walk goes below the folder.
const MAX_DEPTH: usize = 4;

/// The task's tests folder as the rule reads it. Links are never followed; unreadable files
/// are left out (a folder that cannot be read gives an empty value).
#[derive(Debug, Default, PartialEq)]
pub(super) struct TestsFolder {
    /// Its `.py` files, one after the other, each followed by a newline (at most
    /// [`MAX_TEST_SOURCES`] bytes in all).
    pub(super) sources: String,
    /// What each file says of where pip and uv take packages from
    /// ([`work::test_sh::package_lines`] of its first [`work::manifest::MAX_SCRIPT`] bytes), by
    /// its path in the verifier (`/tests/…`); files that say nothing left out.
    pub(super) requirements: BTreeMap<String, Vec<String>>,
    /// The names of the entries at its top.
    pub(super) names: Vec<String>,
}

impl TestsFolder {
    /// Reads `dir` (the task's `tests/`) in one walk of at most [`MAX_DEPTH`] levels.
    pub(super) fn read(dir: &Path) -> TestsFolder {
        let mut out = TestsFolder::default();
        for e in walkdir::WalkDir::new(dir)
            .follow_links(false)
            .min_depth(1)
            .max_depth(MAX_DEPTH)
            .sort_by_file_name()
            .into_iter()
            .flatten()
        {
            if e.depth() == 1
                && let Some(name) = e.file_name().to_str()
            {
                out.names.push(name.to_string());
            }
            if !e.file_type().is_file() {
                continue;
            }
            let python = e.path().extension().is_some_and(|x| x == "py");
            let left = MAX_TEST_SOURCES.saturating_sub(out.sources.len() as u64);
            let cap = if python {
                left.max(work::manifest::MAX_SCRIPT)
            } else {
                work::manifest::MAX_SCRIPT
            };
            let Ok(bytes) = crate::fs::read_capped(e.path(), cap) else {
                continue;
            };
            if python && left > 0 {
                let take = bytes.len().min(left as usize);
                out.sources
                    .push_str(&String::from_utf8_lossy(&bytes[..take]));
                out.sources.push('\n');
            }
            if let Some(rel) = e.path().strip_prefix(dir).ok().and_then(|r| r.to_str()) {
                let path = format!("/tests/{rel}");
                let head = &bytes[..bytes.len().min(work::manifest::MAX_SCRIPT as usize)];
                let lines = work::test_sh::package_lines(&path, head);
                if !lines.is_empty() {
                    out.requirements.insert(path, lines);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_walk_reads_sources_package_lines_and_top_names() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("lib/deep")).unwrap();
        std::fs::write(
            d.join("test_outputs.py"),
            "import sys\nsys.path.insert(0, '/app')\n",
        )
        .unwrap();
        std::fs::write(d.join("lib/deep/helper.py"), "X = 1\n").unwrap();
        std::fs::write(
            d.join("requirements.txt"),
            "--find-links /app/wheels\npytest\n",
        )
        .unwrap();
        std::fs::write(d.join("test.sh"), "#!/bin/sh\npytest /tests\n").unwrap();
        std::os::unix::fs::symlink("/etc/shadow", d.join("link.py")).unwrap();
        let t = TestsFolder::read(d);
        assert!(
            t.sources.contains("sys.path.insert(0, '/app')"),
            "{}",
            t.sources
        );
        assert!(t.sources.contains("X = 1"), "{}", t.sources);
        assert!(!t.sources.contains("root:"), "a link is never followed");
        assert_eq!(
            t.names,
            [
                "lib",
                "link.py",
                "requirements.txt",
                "test.sh",
                "test_outputs.py"
            ]
        );
        let lines = &t.requirements["/tests/requirements.txt"];
        assert!(lines.iter().any(|l| l.contains("/app/wheels")), "{lines:?}");
        assert!(!t.requirements.contains_key("/tests/test.sh"));
        // A folder that cannot be read gives nothing.
        assert_eq!(
            TestsFolder::read(&d.join("missing")),
            TestsFolder::default()
        );
    }
}
