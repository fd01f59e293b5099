//! Where `test.sh` puts the task's tests and its files: the folders it copies them into
//! (`cp /tests/test_outputs.py /app/`), the copies of the tests' data it makes, and which folders
//! the tests land in ([`Landings`]).

use super::*;
use crate::runner::work::paths::{join, normalize, within};

/// The folders `test.sh` copies the task's Python tests into (`cp [-r] /tests/… DEST` of a
/// `.py` file, a folder or a glob: `DEST`, or its folder when it names a file), as written
/// (a relative one is read from `test.sh`'s working folders):
/// pytest reads its configuration and `conftest.py` in and above the tests it runs. A copy of
/// data (`cp /tests/expected.csv /root/expected.csv`, `.mjs`, `.npz`) is no test.
pub fn test_copies(test_sh: &str) -> Vec<String> {
    copies_of_tests_by(test_sh, &[".py"])
}

/// The endings of the task's tests Node runs.
const NODE_TESTS: &[&str] = &[".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx"];

/// The folders `test.sh` copies the task's Node tests into (a `.js`, `.mjs`, `.cjs`, `.ts`, …
/// file, a folder or a glob of `/tests`), read as [`test_copies`]: Node resolves what such a
/// test requires from `node_modules` in and above its folder before `NODE_PATH`.
pub fn node_test_copies(test_sh: &str) -> Vec<String> {
    copies_of_tests_by(test_sh, NODE_TESTS)
}

/// The folders `test.sh` copies files of `/tests` ending in one of `endings`, folders or globs
/// of them into.
fn copies_of_tests_by(test_sh: &str, endings: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for cp in copies(test_sh) {
        // A test, a folder or a glob of the tests; not a data file.
        let tests = |s: &&str| {
            let name = s.rsplit('/').next().unwrap_or_default();
            (*s == "/tests" || s.starts_with("/tests/"))
                && (endings.iter().any(|e| name.ends_with(e)) || !name.contains('.') || name == ".")
        };
        if !cp.sources.iter().any(tests) {
            continue;
        }
        let dir = dest_folder(cp.dest, cp.into_folder, cp.into_file);
        let mut dirs = vec![dir.to_string()];
        // A folder copied whole into a folder that exists lands under its own name.
        for src in cp.sources.iter().filter(|s| tests(s)) {
            let name = src
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or_default();
            if !name.is_empty() && !name.contains(['.', '*', '?', '[']) && !cp.into_file {
                dirs.push(join(dir, name));
            }
        }
        for d in dirs {
            if !d.contains('$') && !out.contains(&d) {
                out.push(d);
            }
        }
    }
    out
}

/// Where `test.sh` copies folders before it runs the tests (`cp -r /opt/project /tmp/eval`,
/// `cp -r /opt/project/. /tmp/eval`, `cp /opt/project/*.py .`): each landing folder with the
/// folder whose content appears there. What the rule says of a folder at or under a landing
/// folder — searched first, pytest's configuration, a relative search path, a requirement
/// file — it says of the same place in the source too ([`Landings::sources_of`]), since
/// `test.sh` itself brings the agent's files there.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Landings {
    /// (landing folder, source folder), absolute.
    pairs: Vec<(String, String)>,
}

impl Landings {
    /// Reads the copies of `test_sh`: relative sources and destinations read from each of
    /// `working` (the image's working folder and `test.sh`'s, [`working_dirs`]), `$HOME` and
    /// `~` as `home`, a glob in the last part of a source read as its folder; a source with a
    /// variable or a glob above its last part is not followed. A folder copied into a folder
    /// that exists lands in it under its own name, else as it: both are taken.
    pub fn read(test_sh: &str, home: &str, working: &[String]) -> Landings {
        let mut pairs: Vec<(String, String)> = Vec::new();
        let resolve = |word: &str| resolve_word(word, home, working);
        for cp in copies(test_sh) {
            let dests: Vec<String> = resolve(dest_folder(cp.dest, cp.into_folder, cp.into_file))
                .into_iter()
                .map(|d| {
                    let d = d.trim_end_matches('/');
                    if d.is_empty() {
                        "/".to_string()
                    } else {
                        d.to_string()
                    }
                })
                .collect();
            for s in &cp.sources {
                for source in resolve(s) {
                    let source = source.trim_end_matches('/');
                    let (folder, name) = match source.rsplit_once('/') {
                        Some((f, n)) => (if f.is_empty() { "/" } else { f }, n),
                        None => continue,
                    };
                    if folder.contains(['*', '?', '[']) {
                        continue;
                    }
                    // `DIR/*`, `DIR/*.py`, `DIR/.`, `DIR/x.py`: what lands is of `DIR`; `DIR`
                    // itself lands as it or under its name.
                    let whole = !name.contains(['*', '?', '[', '.']) && !name.is_empty();
                    let source_dir = if whole { source } else { folder };
                    for d in &dests {
                        let mut add = |landing: String| {
                            let pair = (landing, source_dir.to_string());
                            if !pairs.contains(&pair) {
                                pairs.push(pair);
                            }
                        };
                        add(d.clone());
                        if whole {
                            add(join(d, name));
                        }
                    }
                }
            }
        }
        Landings { pairs }
    }

    /// The places in a source folder whose content appears at folder `dir` through a copy:
    /// for each landing folder `L` at or above `dir`, the source `S` joined with the rest
    /// (`/tmp/eval/tests` → `/opt/project/tests`).
    pub fn sources_of(&self, dir: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (landing, source) in &self.pairs {
            if landing != "/" && within(dir, landing) {
                let rest = dir[landing.len()..].trim_start_matches('/');
                let s = join(source, rest);
                if !out.contains(&s) {
                    out.push(s);
                }
            }
        }
        out
    }
}

/// Where `test_sh` copies the task's tests' files (`cp /tests/expected.json /root/`, `cp -r
/// /tests /tmp/eval`): each a path and, for a glob source (`/tests/*.json`), the pattern of the
/// names that land in it — `None`: the path itself and everything under it. A destination
/// named like a file is that file; the tests' folder copied whole lands as the destination or
/// in it under its own name (both taken). Relative paths read from each of `working`,
/// `$HOME`/`~` as `home`.
pub fn copies_of_tests(
    test_sh: &str,
    home: &str,
    working: &[String],
) -> Vec<(String, Option<String>)> {
    let resolve = |word: &str| -> Vec<String> {
        resolve_word(word, home, working)
            .iter()
            .map(|p| normalize(p))
            .collect()
    };
    let mut out: Vec<(String, Option<String>)> = Vec::new();
    for cp in copies(test_sh) {
        let dest = cp.dest.trim_end_matches('/');
        let to_file = dest_folder(cp.dest, cp.into_folder, cp.into_file) != dest;
        for s in &cp.sources {
            let s = s.trim_end_matches('/');
            // `/tests/.`: the folder's content lands in the destination.
            let content = s.ends_with("/.");
            let Some(source) = resolve(s.trim_end_matches("/.")).into_iter().next() else {
                continue;
            };
            if !within(&source, "/tests") {
                continue;
            }
            let (folder, name) = source.rsplit_once('/').unwrap_or(("", ""));
            if folder.contains(['*', '?', '[']) {
                continue;
            }
            for d in resolve(cp.dest) {
                let mut add = |p: String, pattern: Option<String>| {
                    if !out.iter().any(|(q, r)| *q == p && *r == pattern) {
                        out.push((p, pattern));
                    }
                };
                if name.contains(['*', '?', '[']) {
                    add(d, Some(name.to_string()));
                } else if to_file || content {
                    add(d, None);
                } else if source == "/tests" {
                    add(join(&d, name), None);
                    add(d, None);
                } else {
                    add(join(&d, name), None);
                }
            }
        }
    }
    out
}

/// The places a path word of `test.sh` names: itself when absolute, else joined to each of
/// `working`; `$HOME` and `~` read as `home`; none when another variable is in it.
fn resolve_word(word: &str, home: &str, working: &[String]) -> Vec<String> {
    let w = expand_home(word, home);
    if w.contains('$') {
        Vec::new()
    } else if w.starts_with('/') {
        vec![w]
    } else {
        working.iter().map(|d| join(d, &w)).collect()
    }
}

/// The folder a copy lands in: its destination, or the destination's folder when it is a file
/// (`into_file`: `cat … > FILE`) or named like one (`/tmp/eval/conftest.py` → `/tmp/eval`,
/// `x.py` → `.`) and not given by `-t` (`into_folder`).
fn dest_folder(dest: &str, into_folder: bool, into_file: bool) -> &str {
    let d = dest.trim_end_matches('/');
    let file_like = into_file
        || !into_folder
            && d.rsplit('/')
                .next()
                .is_some_and(|n| n.contains('.') && n != "." && n != "..");
    if !file_like {
        return if d.is_empty() { "/" } else { d };
    }
    match d.rsplit_once('/') {
        Some(("", _)) => "/",
        Some((folder, _)) => folder,
        None => ".",
    }
}

/// One copy of `test.sh` (`cp`, `ln`, `rsync`, `cat … > FILE`): its destination and sources,
/// as written.
struct Copy<'a> {
    dest: &'a str,
    /// The destination was named by `-t` / `--target-directory`: always a folder.
    into_folder: bool,
    /// The destination is a file by construction (`cat … > FILE`).
    into_file: bool,
    sources: Vec<&'a str>,
}

/// Every copy of `test_sh` (`cp`, `ln`, `rsync`, and `cat` into a file), in order (each part
/// of a line between `;`, `&`, `|` and parentheses; words unquoted).
fn copies(test_sh: &str) -> Vec<Copy<'_>> {
    let mut out = Vec::new();
    for line in logical_lines(test_sh) {
        for part in line.split([';', '&', '|', '(', ')']) {
            let all: Vec<&str> = part.split_whitespace().collect();
            let words: Vec<&str> = all
                .iter()
                .copied()
                .filter(|w| *w != "\\" && !is_redirection(w))
                .map(|w| w.trim_matches(['"', '\'']))
                .collect();
            let is = |w: &str, name: &str| w == name || w.ends_with(&format!("/{name}"));
            // `cat SOURCES > FILE` (or `>FILE`, `>> FILE`).
            if let Some(at) = words.iter().position(|w| is(w, "cat")) {
                let target = all.iter().enumerate().find_map(|(i, w)| {
                    let rest = w.strip_prefix(">>").or_else(|| w.strip_prefix('>'))?;
                    let t = if rest.is_empty() {
                        all.get(i + 1).copied()?
                    } else {
                        rest
                    };
                    Some(t.trim_matches(['"', '\'']))
                });
                if let Some(dest) = target.filter(|t| !t.starts_with('&') && *t != "/dev/null") {
                    let sources = words[at + 1..]
                        .iter()
                        .copied()
                        .filter(|w| !w.starts_with('-') && *w != dest)
                        .collect();
                    out.push(Copy {
                        dest,
                        into_folder: false,
                        into_file: true,
                        sources,
                    });
                }
                continue;
            }
            let Some(at) = words
                .iter()
                .position(|w| is(w, "cp") || is(w, "ln") || is(w, "rsync"))
            else {
                continue;
            };
            let (target, mut operands) = cp_operands(&words[at + 1..]);
            let (dest, into_folder) = match target {
                Some(t) => (t, true),
                None => match operands.pop() {
                    Some(d) => (d, false),
                    None => continue,
                },
            };
            out.push(Copy {
                dest,
                into_folder,
                into_file: false,
                sources: operands,
            });
        }
    }
    out
}

/// The operands of one `cp` (the words after it): the target folder a `-t DIR`,
/// `--target-directory[=]DIR` or a cluster ending in it (`-rt DIR`, `-rtDIR`) names, and the
/// other operands (options and `-S`'s suffix left out).
fn cp_operands<'a>(words: &[&'a str]) -> (Option<&'a str>, Vec<&'a str>) {
    let (mut target, mut operands) = (None, Vec::new());
    let mut it = words.iter().copied();
    while let Some(w) = it.next() {
        if let Some(t) = w.strip_prefix("--target-directory=") {
            target = Some(t);
        } else if w == "--target-directory" {
            target = it.next();
        } else if w == "--suffix" {
            it.next();
        } else if w.starts_with("--") {
        } else if let Some(flags) = w.strip_prefix('-').filter(|f| !f.is_empty()) {
            // Short options; `t` and `S` take the rest of the word, or the next one.
            if let Some(i) = flags.find(['t', 'S']) {
                let rest = &flags[i + 1..];
                let value = if rest.is_empty() {
                    it.next()
                } else {
                    Some(rest)
                };
                if flags.as_bytes()[i] == b't' {
                    target = value;
                }
            }
        } else {
            operands.push(w);
        }
    }
    (target, operands)
}
