//! How the verifier's environment enters its rule ([`Rules::with_image_env`],
//! [`Rules::with_verifier_env`]): the variables its exec gets — the image's and the task's,
//! as `trial/handover.rs` layers them — read for the folders `test.sh` changes into through
//! them and for what they make the verifier load.

use super::build::LOADER_SEARCHES;
use super::*;
use crate::runner::work::paths::{join, normalize};
use crate::runner::work::test_sh::{
    LOADER_PATHS, MODULE_PATHS, PROGRAM_PATHS, as_read, local_package_source, pytest_arguments,
    unresolved,
};

impl Rules {
    /// This rule with the folders `test.sh` changes into through a variable of the image's
    /// environment (`cd $APP_HOME`, `ENV APP_HOME=/opt/project`; `env`: `NAME=value` each)
    /// searched first as well.
    pub fn with_image_env(mut self, env: &[String], test_sh: &str) -> Rules {
        let test_sh = &as_read(test_sh);
        // The image's variables are known values: a `cd $APP_HOME` is followed — those whose
        // value the reader takes as written ([`plain`]); another (`/srv/my proj`) is unknown, and
        // a `cd` to it fails the rule closed.
        let names: Vec<&str> = env
            .iter()
            .filter_map(|e| e.split_once('='))
            .filter(|(_, v)| plain(v))
            .map(|(k, _)| k)
            .collect();
        self.every_folder_first = unresolved(test_sh, &names, &self.home);
        for (name, value) in env.iter().filter_map(|e| e.split_once('=')) {
            let used =
                test_sh.contains(&format!("${name}")) || test_sh.contains(&format!("${{{name}}}"));
            // An empty or `.` entry of `PATH` (`ENV PATH="${EXTRA_BIN}:${PATH}"` with the
            // variable unset) searches whichever folder a program runs in: a program test.sh
            // runs is then the toolchain's in any folder, and an interpreter's name in the
            // working folders (the rule fails closed, as for a search path it cannot name).
            if name == "PATH" && value.split(':').any(|e| matches!(e, "" | "." | "./")) {
                self.every_folder_first.get_or_insert_with(|| {
                    "the verifier's PATH searches the working folder (an empty or `.` entry)".into()
                });
                self.bin_dirs.extend(self.working.clone());
            }
            let value = value.trim_end_matches('/');
            if used && value.starts_with('/') && !value.contains(':') {
                self.shadow_dirs.insert(value.to_string());
            }
            // coverage.py's configuration the image names: its plugins are imported.
            if matches!(name, "COVERAGE_RCFILE" | "COVERAGE_PROCESS_START")
                && value.starts_with('/')
            {
                self.coverage |= name == "COVERAGE_PROCESS_START";
                self.files.push((normalize(value), COVERAGE_READS.into()));
            }
            // Where the image tells pip and uv to take packages from (an offline image's
            // `PIP_FIND_LINKS=/opt/wheels`): whitespace- or comma-separated, `name=` prefixes
            // of uv's named indexes read away.
            if PACKAGE_SOURCE_SETTINGS.contains(&name) {
                for v in value.split([' ', ',']) {
                    let v = v.split_once('=').map_or(v, |(_, url)| url);
                    if let Some(d) = local_package_source(v).filter(|d| d.starts_with('/')) {
                        self.trees.push((normalize(&d), PACKAGES_FROM.into()));
                    }
                }
            }
            // The image's own search paths: a relative `PATH` entry (`node_modules/.bin`) is
            // read from whichever folder test.sh is in; the loader's absolute folders are the
            // toolchain's, an empty or relative entry makes it search the working folder.
            for entry in value.split(':') {
                let entry = entry.trim_end_matches('/');
                match name {
                    "PATH" if entry.is_empty() || entry == "." => {}
                    "PATH" if !entry.starts_with('/') => {
                        for w in self.working.clone() {
                            let why = format!("the image's PATH has {entry} (from {w})");
                            self.trees.push((join(&w, entry), why));
                        }
                    }
                    "LD_LIBRARY_PATH" if entry.starts_with('/') => {
                        let why = format!("the image's LD_LIBRARY_PATH has {entry}");
                        self.trees.push((entry.to_string(), why));
                    }
                    "LD_LIBRARY_PATH" => {
                        self.add_loader_dirs(&self.working.clone(), LOADER_SEARCHES);
                    }
                    _ => {}
                }
            }
        }
        self
    }

    /// This rule with what the verifier's environment itself makes the verifier load (`env`:
    /// `NAME=value` each as its exec gets them, the image's and the task's alike; values are
    /// literal, no shell reads them): every folder of a program or library search path
    /// ([`PROGRAM_PATHS`], [`LOADER_PATHS`]) the toolchain's, and every folder of Python's
    /// ([`MODULE_PATHS`]) searched first — an absolute entry as it is, a relative one (`src`,
    /// `~/lib`: Python expands no `~`) from each working folder; Python's user base and home
    /// (`PYTHONUSERBASE`, `PYTHONHOME`) the toolchain's whole; the file bash sources before
    /// `test.sh` (`BASH_ENV`; its `$HOME` read, any other expansion fails the rule closed);
    /// the libraries the loader preloads (`LD_PRELOAD`); and the configuration files and
    /// plugins `PYTEST_ADDOPTS` names (`-c`, `-p`). The eleventh red team forged passes through
    /// each (a `[verifier] env` `PYTHONPATH` with a blank, which `test.sh`'s reader splits).
    pub fn with_verifier_env(mut self, env: &[String]) -> Rules {
        let working = self.working.clone();
        let from_working = |entry: &str| -> Vec<String> {
            if entry.starts_with('/') {
                vec![normalize(entry)]
            } else {
                working.iter().map(|w| join(w, entry)).collect()
            }
        };
        for (name, value) in env.iter().filter_map(|e| e.split_once('=')) {
            if PROGRAM_PATHS.contains(&name) || LOADER_PATHS.contains(&name) {
                for entry in value.split(':').filter(|e| !matches!(*e, "" | "." | "./")) {
                    for d in from_working(entry) {
                        let why = format!("the verifier's {name} has {entry}");
                        self.trees.push((d, why));
                    }
                }
            } else if matches!(name, "PYTHONUSERBASE" | "PYTHONHOME") && !value.is_empty() {
                // Python's own folders: its user site (and the `.pth` files there) or prefix.
                for d in value.split(':').flat_map(&from_working) {
                    let why = format!("the verifier's {name} makes {d} Python's own folder");
                    self.trees.push((d, why));
                }
            } else if MODULE_PATHS.contains(&name) {
                for entry in value.split(':') {
                    let entry = if entry.is_empty() { "." } else { entry };
                    self.shadow_dirs.extend(from_working(entry));
                }
            } else if name == "BASH_ENV" && !value.is_empty() {
                let value = value
                    .replace("${HOME}", &self.home)
                    .replace("$HOME", &self.home);
                if value.contains(['$', '`']) {
                    self.every_folder_first
                        .get_or_insert_with(|| format!("the verifier's BASH_ENV is {value}"));
                }
                for f in from_working(&value) {
                    self.files
                        .push((f, "bash sources it before test.sh (BASH_ENV)".into()));
                }
            } else if name == "LD_PRELOAD" {
                for lib in value.split([':', ' ']).filter(|l| l.starts_with('/')) {
                    self.files
                        .push((normalize(lib), "the loader preloads it (LD_PRELOAD)".into()));
                }
            } else if name == "PYTEST_ADDOPTS" {
                let words = shlex::split(value).unwrap_or_default();
                let line = format!(
                    "pytest {}",
                    shlex::try_join(words.iter().map(|w| w.as_str())).unwrap_or_default()
                );
                let (configs, plugins) = pytest_arguments(&line);
                for f in configs {
                    for f in from_working(&f) {
                        self.files.push((f, PYTEST_READS.into()));
                    }
                }
                self.anywhere.extend(plugins);
            }
        }
        self
    }
}

/// Whether `value` (a variable's) reads as written in a shell word: no blank, quote, `$`,
/// backquote, backslash, `~`, glob or other character a shell gives meaning to.
pub fn plain(value: &str) -> bool {
    value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_/.,:@%+=-".contains(c))
}
