//! What the task's `test.sh` (and its tests' Python sources) say about where the verifier runs
//! and what it reads, parsed from their text: the folders it changes into, copies the tests
//! into and puts on search paths, the files it sources and has pip install from, whether it
//! runs uv. [`super::rule`] turns them into the toolchain's folders and files and the folders
//! searched first; what the reader does not follow is in docs/limitations.md.

use super::paths::{join, normalize, within};

/// The folders `test.sh` copies the task's Python tests into (`cp [-r] /tests/… DEST` of a
/// `.py` file, a folder or a glob: `DEST`, or its folder when it names a file), as written
/// (a relative one is read from `test.sh`'s working folders):
/// pytest reads its configuration and `conftest.py` in and above the tests it runs. A copy of
/// data (`cp /tests/expected.csv /root/expected.csv`, `.mjs`, `.npz`) is no test.
pub fn test_copies(test_sh: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for cp in copies(test_sh) {
        // A test (`.py`), a folder or a glob of the tests; not a data file.
        let tests = |s: &&str| {
            let name = s.rsplit('/').next().unwrap_or_default();
            (*s == "/tests" || s.starts_with("/tests/"))
                && (name.ends_with(".py") || !name.contains('.') || name == ".")
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

/// `test_sh` as the reader reads it: comments removed as the shell removes them (a `#` that
/// starts a word outside quotes: `echo "step #1" && cd /root` keeps its `cd`), and each
/// variable `test_sh` assigns a literal value exactly once (`VENV=/app/.venv`, `export
/// TOOLS="/opt/tools/bin"`) read as that value wherever it is used (`$VENV`, `${VENV}`), a
/// `${NAME:-word}` of a name it never assigns as `word`.
pub fn as_read(test_sh: &str) -> String {
    let mut text = String::with_capacity(test_sh.len());
    for line in test_sh.split_inclusive('\n') {
        let (mut quote, mut prev) = (None::<char>, ' ');
        for c in line.chars() {
            match (quote, c) {
                (None, '#') if prev.is_whitespace() || ";&|(".contains(prev) => {
                    if line.ends_with('\n') {
                        text.push('\n');
                    }
                    break;
                }
                (None, '\'' | '"') => quote = Some(c),
                (Some(q), _) if c == q => quote = None,
                _ => {}
            }
            text.push(c);
            prev = c;
        }
    }
    // `$(dirname "$0")` is the folder of test.sh; a folder `mktemp -d` makes is a fresh one
    // under `/tmp` (nothing of the agent's is in it; what pytest reads above it is `/tmp`'s).
    for f in [
        "$(dirname \"$0\")",
        "$(dirname $0)",
        "$(dirname \"${BASH_SOURCE[0]}\")",
    ] {
        text = text.replace(f, "/tests");
    }
    while let Some(at) = text.find("$(mktemp -d") {
        let end = text[at..].find(')').map_or(text.len(), |e| at + e + 1);
        text.replace_range(at..end, MKTEMP_FOLDER);
    }
    // Literal assignments, by name: the values seen.
    let mut values: std::collections::BTreeMap<String, Vec<Option<String>>> = Default::default();
    for line in text.lines() {
        for part in line.split([';', '&', '|']) {
            let mut words = part.split_whitespace();
            let mut w = words.next().unwrap_or_default();
            if matches!(w, "export" | "local" | "declare" | "readonly") {
                w = words.next().unwrap_or_default();
            }
            let Some((name, value)) = w.split_once('=') else {
                continue;
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            // `None`: assigned from something not literal, never read as one value.
            let value = value.trim_matches(['"', '\'']);
            let literal = !value.contains(['$', '`', '(', ' ']);
            values
                .entry(name.to_string())
                .or_default()
                .push(literal.then(|| value.to_string()));
        }
    }
    let mut out = text;
    for (name, vals) in &values {
        let [Some(v)] = vals.as_slice() else {
            continue;
        };
        out = out.replace(&format!("${{{name}}}"), v);
        // `$NAME` not followed by more of a name.
        let pat = format!("${name}");
        let mut done = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(at) = rest.find(&pat) {
            let after = &rest[at + pat.len()..];
            done.push_str(&rest[..at]);
            if after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                done.push_str(&pat);
            } else {
                done.push_str(v);
            }
            rest = after;
        }
        done.push_str(rest);
        out = done;
    }
    // `${NAME:-word}` of a name never assigned: its default.
    let mut done = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(at) = rest.find("${") {
        done.push_str(&rest[..at]);
        let body = &rest[at + 2..];
        match body.find('}') {
            Some(end) => {
                let inner = &body[..end];
                match inner.split_once(":-") {
                    Some((n, word)) if !values.contains_key(n) && !word.contains('$') => {
                        done.push_str(word)
                    }
                    _ => {
                        done.push_str("${");
                        done.push_str(inner);
                        done.push('}');
                    }
                }
                rest = &body[end + 1..];
            }
            None => {
                done.push_str("${");
                rest = body;
            }
        }
    }
    done.push_str(rest);
    done
}

/// What `as_read` reads a folder `mktemp -d` makes as.
pub const MKTEMP_FOLDER: &str = "/tmp/mktemp-folder";

/// The lines of `test_sh` with each continued line (`\\` at its end) joined to the next; the
/// text of each stays `test_sh`'s (a continuation's backslash and line break read as blanks).
fn logical_lines(test_sh: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = test_sh.as_bytes();
    for (i, _) in test_sh.match_indices('\n') {
        if i > 0 && bytes[i - 1] == b'\\' {
            continue;
        }
        out.push(&test_sh[start..i]);
        start = i + 1;
    }
    if start < test_sh.len() {
        out.push(&test_sh[start..]);
    }
    out
}

/// True for a word of a redirection (`>out`, `2>/dev/null`, `2>` of `2>&1` split at `&`,
/// `&>log`, `<in`), which is no operand.
fn is_redirection(word: &str) -> bool {
    word.trim_start_matches(|c: char| c.is_ascii_digit())
        .starts_with(['>', '<'])
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

/// Search-path variables whose folders hold programs or libraries found by name: every file in
/// such a folder is the toolchain's.
pub const PROGRAM_PATHS: &[&str] = &["PATH", "NODE_PATH"];

/// The dynamic loader's search path: its absolute folders are the toolchain's; an entry that is
/// empty, relative or a variable (`LD_LIBRARY_PATH=/opt/lib:$LD_LIBRARY_PATH`, empty when unset)
/// makes the loader search the working folder ([`loader_searches_working`]).
pub const LOADER_PATHS: &[&str] = &["LD_LIBRARY_PATH"];

/// True when `test_sh` gives the loader a search path with an entry that is not absolute (empty,
/// relative, or a variable that may expand to nothing): the loader then searches the working
/// folder for the libraries the toolchain's programs need.
pub fn loader_searches_working(test_sh: &str) -> bool {
    search_path_entries(test_sh, LOADER_PATHS).any(|e| !e.starts_with('/'))
}

/// Search-path variables whose folders hold Python modules ahead of the toolchain's: a module
/// of a toolchain module's name there shadows it.
pub const MODULE_PATHS: &[&str] = &["PYTHONPATH"];

/// The relative folders `test.sh` puts on one of the search paths `names` (`PYTHONPATH=src`),
/// as written; an empty entry (`PYTHONPATH=/x:` with nothing after) is the working folder, `.`.
pub fn relative_search_dirs(test_sh: &str, names: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for dir in search_path_entries(test_sh, names) {
        let dir = if dir.is_empty() { "." } else { dir };
        let dir = dir.trim_end_matches('/');
        if !dir.is_empty()
            && !dir.starts_with('/')
            && !dir.starts_with('~')
            && !dir.contains('$')
            && !out.iter().any(|o| o == dir)
        {
            out.push(dir.to_string());
        }
    }
    out
}

/// Every entry of every assignment to one of the variables `names` in `test_sh` (`PATH=…`,
/// exported or not), as written.
fn search_path_entries<'a>(test_sh: &'a str, names: &'a [&str]) -> impl Iterator<Item = &'a str> {
    test_sh
        .split(|c: char| c.is_whitespace() || c == ';')
        .filter_map(|word| word.split_once('='))
        .filter(move |(name, _)| names.contains(name))
        .flat_map(|(_, value)| value.trim_matches(['"', '\'']).split(':'))
}

/// The files `test.sh` has pip install from (`-r F`, `--requirement F`, `-c F`,
/// `--constraint F`, `=`-joined too), as written (absolute or relative).
pub fn pip_requirements(test_sh: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in test_sh.lines() {
        if !line.contains("pip") {
            continue;
        }
        let words: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || ";&|()".contains(c))
            .filter(|w| !w.is_empty())
            .collect();
        for (i, w) in words.iter().enumerate() {
            let file = match *w {
                "-r" | "--requirement" | "-c" | "--constraint" => words.get(i + 1).copied(),
                _ => ["--requirement=", "--constraint="]
                    .iter()
                    .find_map(|p| w.strip_prefix(p))
                    .or_else(|| {
                        w.strip_prefix("-r")
                            .filter(|f| !f.is_empty() && !f.starts_with('-'))
                    }),
            };
            if let Some(f) = file.map(|f| f.trim_matches(['"', '\'']))
                && !f.is_empty()
                && !f.contains('$')
                && !out.iter().any(|o| o == f)
            {
                out.push(f.to_string());
            }
        }
    }
    out
}

/// The programs `test_sh` runs by name: the first word of each command (after `;`, `&&`, `||`,
/// `|`, `(`, `` ` ``, `$(`, the shell's keywords, `VAR=value` assignments and the wrappers
/// `sudo`, `env`, `exec`, `command`, `time`, `nohup`, `xargs`). A name with a `/` is a path, not
/// looked up on `PATH`.
pub fn command_names(test_sh: &str) -> std::collections::BTreeSet<String> {
    const SKIP: &[&str] = &[
        "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "case", "esac",
        "!", "{", "}", "time", "sudo", "env", "exec", "command", "nohup", "xargs", "[[", "]]",
    ];
    let mut out = std::collections::BTreeSet::new();
    for line in logical_lines(test_sh) {
        for segment in line.split(|c: char| ";&|()`".contains(c)) {
            let segment = segment.trim_start_matches('$');
            let word = segment
                .split_whitespace()
                .map(|w| w.trim_matches(['"', '\'']))
                .find(|w| !SKIP.contains(w) && !w.contains('=') && !w.starts_with('-'));
            if let Some(w) = word
                && !w.is_empty()
                && !w.contains('/')
                && !w.contains('$')
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c))
            {
                out.insert(w.to_string());
            }
        }
    }
    out
}

/// What `test_sh`'s pytest commands name on their command line: the configuration files
/// (`-c FILE`, `-cFILE`, `--config-file[=]FILE`) and the plugins they load by module name (`-p NAME`,
/// `-pNAME`; `no:NAME` disables one). Paths as written (a relative one is read from the working
/// folders).
pub fn pytest_arguments(test_sh: &str) -> (Vec<String>, Vec<String>) {
    let (mut configs, mut plugins) = (Vec::new(), Vec::new());
    for line in logical_lines(test_sh) {
        if !line.contains("pytest") || line.contains("pip") {
            continue;
        }
        let words: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || ";&|()".contains(c))
            .map(|w| w.trim_matches(['"', '\'']))
            .filter(|w| !w.is_empty())
            .collect();
        for (i, w) in words.iter().enumerate() {
            let next = || words.get(i + 1).map(|n| n.to_string());
            match *w {
                "-c" | "--config-file" => configs.extend(next()),
                "-p" => plugins.extend(next()),
                _ => {
                    if let Some(f) = w.strip_prefix("--config-file=") {
                        configs.push(f.to_string());
                    } else if let Some(f) = w
                        .strip_prefix("-c")
                        .filter(|f| !f.is_empty() && !f.starts_with('-'))
                    {
                        configs.push(f.to_string());
                    } else if let Some(p) = w
                        .strip_prefix("-p")
                        .filter(|p| !p.is_empty() && !p.starts_with('-'))
                    {
                        plugins.push(p.to_string());
                    }
                }
            }
        }
    }
    configs.retain(|c| !c.contains('$'));
    plugins.retain(|p| !p.starts_with("no:") && !p.contains('$'));
    (configs, plugins)
}

/// Options of `pip install`, `uv pip install` and `uv add` whose value is the next word (a
/// file, a folder, an index, an interpreter): never a package's name or a folder installed.
const INSTALL_OPTIONS_WITH_VALUE: &[&str] = &[
    "-r",
    "--requirement",
    "-c",
    "--constraint",
    "-t",
    "--target",
    "--prefix",
    "--root",
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "--python",
    "-p",
    "--cache-dir",
];

/// The module names of the packages `test_sh` installs — `pip install X`, `uv pip install X`,
/// `uv add X`, `uv tool install X`, `uvx --with X`, `uv run --with X`, a wheel file's
/// distribution — lower-cased with `-` and `.` read as `_` (a distribution's usual module
/// name). Options, requirement files, paths of folders and variables are not names.
pub fn installed_modules(test_sh: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in logical_lines(test_sh) {
        let words: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || ";&|()".contains(c))
            .map(|w| w.trim_matches(['"', '\'']))
            .filter(|w| !w.is_empty())
            .collect();
        let mut i = 0;
        while i < words.len() {
            let w = words[i];
            let base = w.rsplit('/').next().unwrap_or(w);
            // Where the package names start: after `install` / `add`, or each `--with` /
            // `--from` value.
            let starts = match base {
                "install" | "add" => words[..i].iter().any(|p| {
                    let b = p.rsplit('/').next().unwrap_or(p);
                    b.starts_with("pip") || b == "uv" || b == "tool"
                }),
                _ => false,
            };
            if matches!(w, "--with" | "--from" | "-w") {
                out.extend(
                    words
                        .get(i + 1)
                        .into_iter()
                        .flat_map(|n| modules_of_requirement(n)),
                );
                i += 2;
                continue;
            }
            if let Some(n) = w
                .strip_prefix("--with=")
                .or_else(|| w.strip_prefix("--from="))
            {
                out.extend(modules_of_requirement(n));
            }
            if starts {
                let mut j = i + 1;
                while j < words.len() {
                    let a = words[j];
                    if INSTALL_OPTIONS_WITH_VALUE.contains(&a) {
                        j += 2;
                        continue;
                    }
                    if !a.starts_with('-') {
                        out.extend(modules_of_requirement(a));
                    }
                    j += 1;
                }
                i = j;
                continue;
            }
            i += 1;
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Distributions whose modules are not named after them (lower-cased, `-` and `.` read as `_`)
/// → the top-level modules they install, as their wheels have them.
const DISTRIBUTION_MODULES: &[(&str, &[&str])] = &[
    ("pyyaml", &["yaml", "_yaml"]),
    ("pillow", &["PIL"]),
    ("scikit_learn", &["sklearn"]),
    ("scikit_image", &["skimage"]),
    ("beautifulsoup4", &["bs4"]),
    ("opencv_python", &["cv2"]),
    ("opencv_python_headless", &["cv2"]),
    ("opencv_contrib_python", &["cv2"]),
    ("opencv_contrib_python_headless", &["cv2"]),
    ("pyjwt", &["jwt"]),
    ("pymupdf", &["fitz", "pymupdf"]),
    ("protobuf", &["google"]),
    ("attrs", &["attr", "attrs"]),
    ("pycryptodome", &["Crypto"]),
    ("pycryptodomex", &["Cryptodome"]),
    ("gitpython", &["git"]),
    ("pyzmq", &["zmq"]),
    ("pyserial", &["serial"]),
    ("pyopenssl", &["OpenSSL"]),
    ("ipython", &["IPython"]),
    ("mysqlclient", &["MySQLdb"]),
    ("pdfminer_six", &["pdfminer"]),
    ("pypdf2", &["PyPDF2"]),
    ("ruamel_yaml", &["ruamel"]),
    ("pyusb", &["usb"]),
    ("pygithub", &["github"]),
    ("pytest_json_ctrf", &["pytest_jsonctrf", "pytest_json_ctrf"]),
    ("pytest_json_report", &["pytest_jsonreport"]),
    ("python_pptx", &["pptx"]),
    ("python_docx", &["docx"]),
];

/// The modules of what common distributions depend on (pip installs those too, where the image
/// lacks them): a curated list, not a resolver — a dependency not named here is not known.
/// pytest's own are [`super::rule::VERIFIER_MODULES`] (and `pygments` an optional module).
const DISTRIBUTION_DEPENDENCIES: &[(&str, &[&str])] = &[
    ("openpyxl", &["et_xmlfile"]),
    ("pandas", &["numpy", "dateutil", "pytz", "tzdata", "six"]),
    (
        "requests",
        &[
            "urllib3",
            "idna",
            "certifi",
            "charset_normalizer",
            "chardet",
        ],
    ),
    (
        "matplotlib",
        &[
            "numpy",
            "PIL",
            "cycler",
            "kiwisolver",
            "pyparsing",
            "fontTools",
            "packaging",
            "contourpy",
            "dateutil",
            "six",
        ],
    ),
    ("scipy", &["numpy"]),
    (
        "scikit_learn",
        &["numpy", "scipy", "joblib", "threadpoolctl"],
    ),
    (
        "scikit_image",
        &[
            "numpy",
            "scipy",
            "networkx",
            "PIL",
            "imageio",
            "tifffile",
            "lazy_loader",
        ],
    ),
    ("seaborn", &["numpy", "pandas", "matplotlib"]),
    (
        "statsmodels",
        &["numpy", "scipy", "pandas", "patsy", "packaging"],
    ),
    ("opencv_python", &["numpy"]),
    ("opencv_python_headless", &["numpy"]),
    ("python_docx", &["lxml", "typing_extensions"]),
    (
        "python_pptx",
        &["lxml", "PIL", "xlsxwriter", "typing_extensions"],
    ),
    (
        "pdfplumber",
        &["pdfminer", "PIL", "pypdfium2", "charset_normalizer"],
    ),
    ("jinja2", &["markupsafe"]),
    ("beautifulsoup4", &["soupsieve", "typing_extensions"]),
    (
        "httpx",
        &["httpcore", "anyio", "certifi", "idna", "sniffio", "h11"],
    ),
    (
        "pydantic",
        &[
            "pydantic_core",
            "typing_extensions",
            "annotated_types",
            "typing_inspection",
        ],
    ),
    ("sympy", &["mpmath"]),
];

/// The module names a requirement (`pytest==8.4.1`, `Pytest-Json-Ctrf[x]>=1`, a wheel
/// `answerlib-1.0-py3-none-any.whl`) most likely installs: its name lower-cased with `-` and
/// `.` read as `_`; what [`DISTRIBUTION_MODULES`] says of it and the modules of its
/// dependencies [`DISTRIBUTION_DEPENDENCIES`] names; and the name without a
/// `python_` prefix or a `_binary`, `_headless`, `_cpu`, `_gpu`, `_python` suffix
/// (`python-dateutil` → `dateutil`, `psycopg2-binary` → `psycopg2`). Empty for a path of a
/// folder, a URL or a variable.
fn modules_of_requirement(req: &str) -> Vec<String> {
    if req.contains('$') || req.contains("://") || req.starts_with('.') {
        return Vec::new();
    }
    let name = if req.ends_with(".whl") || req.ends_with(".tar.gz") || req.ends_with(".zip") {
        req.rsplit('/').next().and_then(|f| f.split('-').next())
    } else if req.contains('/') {
        None
    } else {
        req.split(['=', '<', '>', '~', '!', '[', ';', '@', ' '])
            .next()
    };
    let m: String = name
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c == '-' || c == '.' { '_' } else { c })
        .collect();
    if m.is_empty() || !m.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Vec::new();
    }
    let mut out = vec![m.clone()];
    for table in [DISTRIBUTION_MODULES, DISTRIBUTION_DEPENDENCIES] {
        if let Some((_, modules)) = table.iter().find(|(d, _)| *d == m) {
            out.extend(modules.iter().map(|x| x.to_string()));
        }
    }
    let stripped = ["_binary", "_headless", "_cpu", "_gpu", "_python"]
        .iter()
        .fold(m.strip_prefix("python_").unwrap_or(&m), |n, suffix| {
            n.strip_suffix(suffix).unwrap_or(n)
        });
    if !stripped.is_empty() && stripped != m {
        out.push(stripped.to_string());
    }
    out.dedup();
    out
}

/// True when `test_sh` runs a package installer (`pip`, `pip3`, `pip3.N`, `python -m pip`,
/// `uv`, `uvx`, `poetry`, `pdm`, `conda`, `mamba`, `micromamba`).
pub fn installs_packages(test_sh: &str) -> bool {
    command_names(test_sh).iter().any(|c| {
        c.starts_with("pip")
            || matches!(
                c.as_str(),
                "uv" | "uvx" | "poetry" | "pdm" | "conda" | "mamba" | "micromamba"
            )
    }) || logical_lines(test_sh).iter().any(|l| l.contains("-m pip"))
}

/// The words of each command of `test_sh` that runs a package installer (`pip`, `pip3`,
/// `python3 -m pip`, `uv`, `uvx`), from the installer's name on: only there do `-f` and `-i`
/// name package sources (`[ -f "$OUT" ]` is a test of a file).
fn installer_commands(test_sh: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for line in logical_lines(test_sh) {
        for segment in line.split([';', '&', '|', '(', ')']) {
            let words = shell_words(segment);
            let at = words.iter().position(|w| {
                let base = w.rsplit('/').next().unwrap_or(w);
                base.starts_with("pip") || base == "uv" || base == "uvx"
            });
            if let Some(at) = at {
                out.push(words[at..].to_vec());
            }
        }
    }
    out
}

/// True when `test_sh` has an installer install a folder (`pip install /app`, `pip install -e
/// .`, `uv pip install ./pkg`): a path that is no package file, no requirement or constraint
/// file and no option's value.
pub fn installs_a_folder(test_sh: &str) -> bool {
    installer_commands(test_sh).iter().any(|words| {
        let Some(at) = words.iter().position(|w| w == "install" || w == "add") else {
            return false;
        };
        let mut skip = false;
        words[at + 1..].iter().any(|w| {
            if std::mem::take(&mut skip) {
                return false;
            }
            if INSTALL_OPTIONS_WITH_VALUE.contains(&w.as_str()) {
                skip = true;
                return false;
            }
            let w = w.trim_matches(['"', '\'']);
            let archive = [".whl", ".tar.gz", ".tar.bz2", ".zip"]
                .iter()
                .any(|e| w.ends_with(e));
            (w.starts_with('/') || w.starts_with('.')) && !archive
        })
    })
}

/// The local folders `test_sh`'s installers take packages from: the values of `-f`/
/// `--find-links`, `-i`/`--index-url`, `--extra-index-url`, `--index` (`file://` read as the
/// path; `=` forms too), and the folder of a package file it names (`/wheels/*.whl`) —
/// absolute paths as written, relative ones as written for the caller to read from the working
/// folders. URLs of servers and variables are none.
pub fn package_sources(test_sh: &str) -> Vec<String> {
    const TAKES: &[&str] = &[
        "-f",
        "--find-links",
        "-i",
        "--index-url",
        "--extra-index-url",
        "--index",
        "--default-index",
    ];
    let mut out: Vec<String> = Vec::new();
    for words in installer_commands(test_sh) {
        for (i, w) in words.iter().enumerate() {
            let value = match w.split_once('=') {
                Some((opt, v)) if TAKES.contains(&opt) && opt.starts_with("--") => Some(v),
                _ if TAKES.contains(&w.as_str()) => words.get(i + 1).map(String::as_str),
                _ => None,
            };
            if let Some(dir) = value.and_then(local_package_source) {
                out.push(dir);
            }
            // A package file installed by its path (`pip install /wheels/*.whl`,
            // `/opt/wheels/x-1.0-py3-none-any.whl`): its folder is one packages come from.
            let archive = [".whl", ".tar.gz", ".tar.bz2", ".zip"]
                .iter()
                .any(|e| w.ends_with(e));
            if archive && !w.contains("://") && !w.starts_with('-') {
                let folder = match w.rsplit_once('/') {
                    Some(("", _)) => Some("/".to_string()),
                    Some((f, _)) => local_package_source(f),
                    None => Some(".".to_string()),
                };
                out.extend(folder.filter(|f| !f.contains(['*', '?', '['])));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The folder an installer's package source names (`/opt/wheels`, `file:///opt/wheels`,
/// `wheels`), quotes read; `None` for a server's URL or a variable.
pub fn local_package_source(value: &str) -> Option<String> {
    let v = value.trim().trim_matches(['"', '\'']);
    let v = v.strip_prefix("file://").unwrap_or(v);
    if v.is_empty() || v.contains("://") || v.contains('$') || v.contains('`') {
        return None;
    }
    Some(v.trim_end_matches('/').to_string()).filter(|d| !d.is_empty())
}

/// True when `test_sh` runs `uv` or `uvx` (by name or path).
pub fn runs_uv(test_sh: &str) -> bool {
    test_sh
        .split(|c: char| c.is_whitespace() || ";&|()`$\"'".contains(c))
        .any(|w| matches!(w.rsplit('/').next(), Some("uv" | "uvx")))
}

/// `$HOME`, `${HOME}` and a leading `~` of `word` read as `home`.
fn expand_home(word: &str, home: &str) -> String {
    let w = word.replace("${HOME}", home).replace("$HOME", home);
    let Some(rest) = w.strip_prefix('~') else {
        return w;
    };
    // `~`, `~/x`: the home; `~user/x`: that user's (`~root` is `/root`).
    let (user, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match user {
        "" => format!("{home}{tail}"),
        "root" => format!("/root{tail}"),
        u => format!("/home/{u}{tail}"),
    }
}

/// The folders `test.sh` puts on one of the search paths `names` ([`PROGRAM_PATHS`],
/// [`MODULE_PATHS`]; exported or not), absolute, with `$HOME` read as `home` (other variables
/// left out).
pub fn search_dirs(test_sh: &str, home: &str, names: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for dir in search_path_entries(test_sh, names) {
        let dir = expand_home(dir, home);
        let dir = dir.trim_end_matches('/');
        if dir.starts_with('/') && !dir.contains('$') && !out.iter().any(|o| o == dir) {
            out.push(dir.to_string());
        }
    }
    out
}

/// The files `test.sh` sources (`source F`, `. F`), with `$HOME`, `${HOME}` and `~` read as
/// `home`; a relative one (`source .venv/bin/activate`) as written, read from whichever folder
/// test.sh is in.
pub fn sourced_files(test_sh: &str, home: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in test_sh.lines() {
        for part in line.split([';', '&', '|']) {
            let words: Vec<&str> = part.split_whitespace().collect();
            let Some(i) = words.iter().position(|w| *w == "source" || *w == ".") else {
                continue;
            };
            let Some(file) = words.get(i + 1) else {
                continue;
            };
            let file = expand_home(file.trim_matches(['"', '\'']), home);
            if !file.is_empty() && !file.contains('$') {
                out.push(file);
            }
        }
    }
    out
}

/// The folders `test.sh` changes into (`cd DIR`, `pushd DIR`; `cd`, `cd ~` and `cd $HOME` are
/// `home`), absolute: with `python3 -m pytest` each goes first on `sys.path`.
pub fn working_dirs(test_sh: &str, home: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in logical_lines(test_sh) {
        for part in line.split([';', '&', '|', '(', ')', '{', '}']) {
            let words: Vec<&str> = part.split_whitespace().filter(|w| *w != "\\").collect();
            // `env -C DIR`, `env --chdir[=]DIR`: the folder the command runs in.
            if let Some(e) = words.iter().position(|w| *w == "env") {
                let mut it = words[e + 1..].iter();
                while let Some(w) = it.next() {
                    let dir = match w.strip_prefix("--chdir=") {
                        Some(d) => Some(d),
                        None if *w == "-C" || *w == "--chdir" => it.next().copied(),
                        None => None,
                    };
                    if let Some(d) = dir.map(|d| d.trim_matches(['"', '\'']))
                        && !d.contains('$')
                        && !out.iter().any(|o| o == d)
                    {
                        out.push(d.trim_end_matches('/').to_string());
                    }
                }
            }
            // Anywhere in the part, not only first: `bash -c "cd /srv && …"`.
            let Some(at) = words
                .iter()
                .position(|w| matches!(w.trim_start_matches(['"', '\'']), "cd" | "pushd"))
            else {
                continue;
            };
            let arg = words
                .iter()
                .skip(at + 1)
                .find(|w| !w.starts_with('-'))
                .map_or("~", |w| w.trim_matches(['"', '\'']));
            let dir = expand_home(arg, home);
            let dir = dir.trim_end_matches('/');
            let dir = if dir.is_empty() { "/" } else { dir };
            // A relative one (`cd src`, `cd ..`) as written: [`super::rule`] reads it from
            // every folder known before it.
            if dir != "-" && !dir.contains('$') && !out.iter().any(|o| o == dir) {
                out.push(dir.to_string());
            }
        }
    }
    out
}

/// The folders `test_sh` makes (`mkdir [-p] DIR…`; a `-m MODE` value left out), as written
/// (a relative one is read from the working folders).
pub fn made_dirs(test_sh: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in logical_lines(test_sh) {
        for part in line.split([';', '&', '|']) {
            let words: Vec<String> = shell_words(part)
                .into_iter()
                .map(|w| w.replace(['"', '\''], ""))
                .collect();
            let Some(at) = words
                .iter()
                .position(|w| w == "mkdir" || w.ends_with("/mkdir"))
            else {
                continue;
            };
            let mut it = words[at + 1..].iter();
            while let Some(w) = it.next() {
                if w == "-m" || w == "--mode" {
                    it.next();
                } else if !w.starts_with('-')
                    && !w.is_empty()
                    && !w.contains(['$', '*', '?', '`'])
                    && !out.contains(w)
                {
                    out.push(w.trim_end_matches('/').to_string());
                }
            }
        }
    }
    out
}

/// The test paths pytest is given (`pytest P`, `python3 -m pytest P`, `py.test P`): each
/// positional argument naming a file or folder (a node id's `::…` left out), as written.
/// pytest reads its configuration and `conftest.py` in and above the folder of each, and puts
/// that folder first on `sys.path` before it imports a test module.
pub fn pytest_targets(test_sh: &str) -> Vec<String> {
    const TAKES_VALUE: &[&str] = &[
        "-c",
        "-p",
        "-k",
        "-m",
        "-o",
        "-n",
        "-W",
        "-r",
        "--ctrf",
        "--junitxml",
        "--junit-xml",
        "--rootdir",
        "--confcutdir",
        "--basetemp",
        "--log-file",
        "--html",
        "--json-report-file",
        "--cov",
        "--cov-report",
        "--tb",
        "--timeout",
        "--durations",
        "--maxfail",
        "--deselect",
        "--ignore",
        "--ignore-glob",
        "--override-ini",
        "--import-mode",
        "--config-file",
        "--capture",
        "--log-level",
        "--log-cli-level",
        "--dist",
        "--reruns",
    ];
    let mut out: Vec<String> = Vec::new();
    for line in logical_lines(test_sh) {
        let words: Vec<String> = shell_words(line)
            .into_iter()
            .map(|w| w.replace(['"', '\''], ""))
            .collect();
        let Some(at) = words.iter().enumerate().position(|(i, w)| {
            let base = w.rsplit('/').next().unwrap_or(w);
            matches!(base, "pytest" | "py.test")
                && (i == 0 || words[i - 1] != "install" && !words[i - 1].starts_with("pip"))
        }) else {
            continue;
        };
        let mut it = words[at + 1..].iter();
        while let Some(w) = it.next() {
            if TAKES_VALUE.contains(&w.as_str()) {
                it.next();
                continue;
            }
            if w.starts_with('-') || w.contains(['$', '=']) || w.is_empty() {
                continue;
            }
            let path = w.split("::").next().unwrap_or(w);
            let named = path.ends_with(".py") || path.contains('/') || path == ".";
            if named && !out.iter().any(|o| o == path) {
                out.push(path.to_string());
            }
        }
    }
    out
}

/// Why the reader cannot name every folder `test_sh` (as read, [`as_read`]) runs Python in or
/// every file it takes its environment from, if it cannot: a `cd`, `pushd` or sourced file
/// named by anything but a literal path (a variable left, `$(…)`, `$'…'`, quotes inside the
/// word, a backslash, a glob); `CDPATH`; `HOME` assigned (`cd ~` then goes elsewhere); a login
/// shell (`su -`, `su -l`, `sudo -i`, `runuser -l`: the user's home); an environment read from
/// text at run time (`eval`, `set -a`, `export $(…)`, `export` in a `read` loop, `env $(…)`).
/// The rule then fails closed: every folder is one the verifier's Python may search first.
/// `known`: variables whose values the reader knows (`HOME`, the image's environment), as
/// good as literals.
pub fn unresolved(test_sh: &str, known: &[&str], home: &str) -> Option<String> {
    let literal = |word: &str| {
        let mut word = word.to_string();
        for k in known.iter().chain(&["HOME", "TEST_DIR"]) {
            word = word
                .replace(&format!("${{{k}}}"), "x")
                .replace(&format!("${k}"), "x");
        }
        let word = word.as_str();
        let w = word
            .strip_prefix('"')
            .and_then(|w| w.strip_suffix('"'))
            .or_else(|| word.strip_prefix('\'').and_then(|w| w.strip_suffix('\'')))
            .unwrap_or(word);
        !w.is_empty() && !w.contains(['$', '`', '*', '?', '[', '\\', '"', '\'', '{', '<', '('])
    };
    if !environment_files(test_sh).is_empty() || test_sh.contains("export `") {
        return Some("test.sh exports what it reads at run time".into());
    }
    for line in logical_lines(test_sh) {
        // A search path set from what the reader cannot name (quotes read as the shell reads
        // them; the variable's own value, `$PYTHONPATH`, added to is no unknown).
        for word in shell_words(line) {
            let Some((name, value)) = word.split_once('=') else {
                continue;
            };
            if SEARCH_SETTINGS.contains(&name) {
                let value = without_itself(value, name).replace(['"', '\''], "");
                if !value.is_empty() && !literal(&value) {
                    return Some(format!("test.sh sets `{word}`"));
                }
            }
        }
        for part in line.split([';', '&', '|', '(', ')', '{', '}']) {
            let words: Vec<&str> = part.split_whitespace().filter(|w| *w != "\\").collect();
            for (i, w) in words.iter().enumerate() {
                let bare = w.trim_start_matches(['"', '\'']);
                let next = words.get(i + 1).copied();
                let why = match bare {
                    "cd" | "pushd" => next
                        .filter(|n| !n.starts_with('-') && !n.starts_with('~') && !literal(n))
                        .map(|n| format!("test.sh changes into `{n}`")),
                    "source" | "." if i == 0 => next
                        .filter(|n| !literal(n) && !n.starts_with('~'))
                        .map(|n| format!("test.sh sources `{n}`")),
                    "eval" => Some("test.sh runs `eval`".into()),
                    "set"
                        if next.is_some_and(|n| n.starts_with('-') && n.contains('a'))
                            || next == Some("-o") && words.get(i + 2) == Some(&"allexport") =>
                    {
                        Some("test.sh exports every variable it sets (`set -a`)".into())
                    }
                    "export" | "declare" | "typeset" | "env"
                        if next.is_some_and(|n| {
                            n.trim_start_matches(['"', '\'']).starts_with(['$', '`'])
                        }) =>
                    {
                        Some(format!("test.sh runs `{bare}` on what a command prints"))
                    }
                    "su" | "sudo" | "runuser"
                        if words[i + 1..]
                            .iter()
                            .take_while(|a| a.starts_with('-'))
                            .any(|a| matches!(*a, "-" | "-l" | "--login" | "-i")) =>
                    {
                        Some(format!("test.sh runs a login shell (`{bare} -`)"))
                    }
                    // `export HOME=/root` as the image has it changes nothing.
                    _ if bare.starts_with("CDPATH=")
                        || bare.strip_prefix("HOME=").is_some_and(|h| {
                            h.trim_matches(['"', '\'']).trim_end_matches('/') != home
                        }) =>
                    {
                        Some(format!(
                            "test.sh sets {}",
                            &bare[..bare.find('=').unwrap_or(0)]
                        ))
                    }
                    "env"
                        if words[i + 1..]
                            .windows(2)
                            .any(|a| (a[0] == "-C" || a[0] == "--chdir") && !literal(a[1]))
                            || words[i + 1..].iter().any(|a| {
                                a.strip_prefix("--chdir=").is_some_and(|d| !literal(d))
                            }) =>
                    {
                        Some("test.sh changes folder with `env -C`".into())
                    }
                    _ => None,
                };
                if why.is_some() {
                    return why;
                }
            }
        }
    }
    None
}

/// The words of one line of shell as the shell splits them: at blanks and `;`, `&`, `|`, `(`,
/// `)` outside quotes, `$(…)`, `${…}` and backquotes; each word as written (quotes kept).
fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut word) = (Vec::new(), String::new());
    let (mut quote, mut depth, mut backquote) = (None::<char>, 0usize, false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let inside = quote.is_some() || depth > 0 || backquote;
        match c {
            '\\' if quote != Some('\'') => {
                word.push(c);
                if let Some(n) = chars.next() {
                    word.push(n);
                }
                continue;
            }
            '\'' | '"' if depth == 0 && !backquote => match quote {
                None => quote = Some(c),
                Some(q) if q == c => quote = None,
                _ => {}
            },
            '`' if quote != Some('\'') && depth == 0 => backquote = !backquote,
            '$' if quote != Some('\'') && matches!(chars.peek(), Some('(' | '{')) => {
                word.push(c);
                word.push(chars.next().unwrap_or_default());
                depth += 1;
                continue;
            }
            '(' | '{' if depth > 0 => depth += 1,
            ')' | '}' if depth > 0 => depth -= 1,
            c if !inside && (c.is_whitespace() || ";&|()".contains(c)) => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                continue;
            }
            _ => {}
        }
        word.push(c);
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// The variables that say where the verifier's programs find what they load: a value the
/// reader cannot name makes [`unresolved`] fail closed.
const SEARCH_SETTINGS: &[&str] = &[
    "PATH",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "PYTEST_ADDOPTS",
    "PYTEST_PLUGINS",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "NODE_PATH",
];

/// `value` of variable `name` without its references to `name` itself (`$PATH`, `${PATH}`,
/// `${PYTHONPATH:+:$PYTHONPATH}`): what it adds to the value it had.
fn without_itself(value: &str, name: &str) -> String {
    let braced = format!("${{{name}");
    let plain = format!("${name}");
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest
        .find(&plain)
        .into_iter()
        .chain(rest.find(&braced))
        .min()
    {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let skip = if let Some(after) = tail.strip_prefix(&braced)
            && after.starts_with(['}', ':', '-', '+'])
        {
            // Up to the brace that closes it.
            let mut depth = 1;
            let end = after
                .char_indices()
                .find(|&(_, c)| {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .map_or(after.len(), |(i, _)| i + 1);
            braced.len() + end
        } else if tail.starts_with(&plain)
            && !tail[plain.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        {
            plain.len()
        } else {
            // Another name that begins the same (`$PATHS`): kept.
            out.push_str(&tail[..1]);
            1
        };
        rest = &tail[skip..];
    }
    out.push_str(rest);
    out
}

/// The files `test_sh` (as read) takes an environment from at run time other than by sourcing
/// them: the paths on a line that runs `eval`, `xargs`, `export $(…)`, `env $(…)`, or a `read`
/// loop's input (`done < .env`), as written (a relative one is read from the working folders).
pub fn environment_files(test_sh: &str) -> Vec<String> {
    let lines = logical_lines(test_sh);
    let words_of = |line: &str| -> Vec<String> {
        line.split(|c: char| c.is_whitespace() || ";&|(){}`".contains(c))
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    let exports = |words: &[String]| {
        words.iter().any(|w| {
            matches!(
                w.as_str(),
                "export" | "declare" | "typeset" | "eval" | "env"
            )
        })
    };
    let mut out: Vec<String> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let words = words_of(line);
        let has = |w: &str| words.iter().any(|x| x == w);
        // `export $(… | xargs)`, ``export `…` ``, `eval "$(cat F)"`, `env $(…)`,
        // `source <(…)`: what the line reads becomes variables.
        let mut env_line = has("eval")
            || has("xargs") && exports(&words)
            || [
                "export $",
                "export \"$",
                "export `",
                "env $(",
                "source <(",
                ". <(",
            ]
            .iter()
            .any(|f| line.contains(f));
        // A `while … read` loop whose body exports what it reads: its input (`done < FILE`).
        if !env_line && has("done") {
            let start = lines[..i]
                .iter()
                .rposition(|l| words_of(l).iter().any(|w| w == "while"));
            let from = start.unwrap_or(i);
            let body: Vec<String> = lines[from..=i].iter().flat_map(|l| words_of(l)).collect();
            env_line = body.iter().any(|w| w == "read") && exports(&body);
        }
        if !env_line {
            continue;
        }
        for w in &words {
            let w = w.trim_start_matches(|c: char| c.is_ascii_digit() || c == '<');
            let w = w.trim_matches(['"', '\'']);
            let pathlike = w.contains('/') || (w.starts_with('.') && w.len() > 1 && w != "..");
            if pathlike
                && !w.starts_with('-')
                && !w.contains(['$', '*', '?', '=', '>'])
                && !out.iter().any(|o| o == w)
            {
                out.push(w.to_string());
            }
        }
    }
    out
}

/// The absolute folders Python sources put on `sys.path` by a literal
/// (`sys.path.insert(0, "/root")`, `sys.path.append('/app/src')`).
pub fn sys_path_dirs(python: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for call in ["sys.path.insert(", "sys.path.append("] {
        for (i, _) in python.match_indices(call) {
            let args = &python[i + call.len()..];
            let args = &args[..args.find(')').unwrap_or(args.len())];
            for quote in ['"', '\''] {
                let mut parts = args.split(quote);
                parts.next();
                if let Some(lit) = parts.next() {
                    let lit = lit.trim_end_matches('/');
                    if lit.starts_with('/') && !out.iter().any(|o| o == lit) {
                        out.push(lit.to_string());
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn forms_the_reader_cannot_name_fail_closed() {
        for (sh, why) in [
            ("cd $'/root' && python3 -m pytest", "changes into"),
            ("cd \"/srv\"/'eval'", "changes into"),
            ("cd /r\\oot", "changes into"),
            ("cd \"$(dirname \"$(which python3)\")\"", "changes into"),
            ("for d in /srv /root; do cd $d; done", "changes into"),
            ("cd /ro*", "changes into"),
            ("CDPATH=/srv cd eval", "sets CDPATH"),
            ("HOME=/srv; cd ~", "sets HOME"),
            ("su - root -c 'python3 -m pytest'", "login shell"),
            ("sudo -i python3 -m pytest", "login shell"),
            ("source \"$VENV/bin/activate\"", "sources"),
            ("export $(grep -v '^#' .env | xargs)", "at run time"),
            ("env $(cat /app/.env) pytest", "at run time"),
            ("eval \"$(cat /app/setup)\"", "at run time"),
            ("export `grep -v '^#' /app/.env`", "at run time"),
            (
                "[ -f .env ] && source <(sed 's/^/export /' .env)",
                "at run time",
            ),
            ("env -C \"$WORK\" python3 -m pytest", "env -C"),
            ("HOME=/srv", "sets HOME"),
            ("set -a; . /app/.env; set +a", "set -a"),
            ("export PYTHONPATH=\"${SRC%/}:$PYTHONPATH\"", "sets"),
            ("PYTHONPATH=$(pwd)/src pytest", "sets"),
            ("export PYTEST_ADDOPTS=\"$OPTS\"", "sets"),
            ("PATH=`cat /app/path`:$PATH", "sets"),
            ("export PATH=$PATHS:$PATH", "sets"),
            (
                "while IFS='=' read -r k v; do export \"$k=$v\"; done < /app/.env",
                "at run time",
            ),
        ] {
            let got = unresolved(&as_read(sh), &[], "/root");
            assert!(
                got.as_deref().is_some_and(|g| g.contains(why)),
                "{sh}: {got:?}"
            );
        }
        for sh in [
            "cd /app && python3 -m pytest",
            "cd \"/root\"\npython3 -m pytest",
            "cd ~ && cd ~root && cd -",
            "source $HOME/.local/bin/env",
            "cd \"$(dirname \"$0\")/..\"",
            "cd \"$TEST_DIR\"",
            "VENV=/app/.venv\nsource \"$VENV/bin/activate\"",
            "cd \"${APP_DIR:-/root}\"",
            "export PYTHONPATH=/app:$PYTHONPATH\npytest -rA",
            "cd $APP_HOME",
            "export PATH=\"$HOME/.local/bin:$PATH\"",
            "export PYTHONPATH=\"/app/src${PYTHONPATH:+:$PYTHONPATH}\"",
            "PYTHONPATH=/root/src:${PYTHONPATH} pytest",
            "export PATH=$PATH:/opt/bin",
            "PYTEST_ADDOPTS=-rA pytest",
            "PYTEST_ADDOPTS=\"-rA -q\" pytest",
            // Honest forms a red team saw flagged: reading an answer, the image's own HOME, a
            // fresh folder.
            "ANSWER=$(cat /app/answer.txt | xargs)\necho \"$ANSWER\"",
            "read -r ANSWER < /app/answer.txt || true",
            "while IFS= read -r line; do echo \"$line\"; done < /app/answer.txt",
            "find /app/output -type f | xargs -r ls -la",
            "export HOME=/root",
            "cd \"$(mktemp -d)\" && pytest /tests",
            "WORK=$(mktemp -d)\ncp /tests/test_outputs.py \"$WORK\"/\ncd \"$WORK\"",
        ] {
            let got = unresolved(&as_read(sh), &["APP_HOME"], "/root");
            assert_eq!(got, None, "{sh}");
        }
    }

    #[test]
    fn shell_words_keep_quotes_and_substitutions_whole() {
        assert_eq!(
            shell_words("export A=\"x y\" B=$(cmd \"a b\"):${C:+:$C} `d e`;f|g"),
            [
                "export",
                "A=\"x y\"",
                "B=$(cmd \"a b\"):${C:+:$C}",
                "`d e`",
                "f",
                "g"
            ]
        );
        assert_eq!(
            shell_words("PYTEST_ADDOPTS='-p x' pytest"),
            ["PYTEST_ADDOPTS='-p x'", "pytest"]
        );
    }

    #[test]
    fn files_an_environment_is_read_from_are_named() {
        assert_eq!(
            environment_files("cd /app\nexport $(grep -v '^#' .env | xargs)\npytest"),
            [".env"]
        );
        assert_eq!(
            environment_files(
                "while IFS='=' read -r k v; do\n  export \"$k=$v\"\ndone < /app/config/env.txt\n"
            ),
            ["/app/config/env.txt"]
        );
        assert_eq!(
            environment_files("eval \"$(cat /opt/setup)\""),
            ["/opt/setup"]
        );
        assert!(environment_files("cat /app/answer.txt\npytest /tests").is_empty());
    }

    #[test]
    fn where_pytest_is_told_to_find_tests_is_read() {
        assert_eq!(
            pytest_targets(
                "pytest --ctrf /logs/verifier/ctrf.json /srv/eval/test_outputs.py -rA\n\
                 python3 -m pytest -p no:cacheprovider -k \"a or b\" tests/ /tests/t.py::test_x\n\
                 pip install pytest==8\nuv run pytest --junitxml=/logs/j.xml ."
            ),
            ["/srv/eval/test_outputs.py", "tests/", "/tests/t.py", "."]
        );
        assert!(environment_files("echo ok | xargs echo").is_empty());
    }

    #[test]
    fn folders_test_sh_makes_or_runs_in_with_env_are_read() {
        assert_eq!(
            made_dirs("mkdir -p /srv/work \"/srv/b\" && mkdir -m 700 out; mkdir $X /o/*"),
            ["/srv/work", "/srv/b", "out"]
        );
        assert_eq!(
            working_dirs(
                "env -C /srv/work python3 -m pytest\nenv --chdir=/opt/x pytest",
                "/root"
            ),
            ["/srv/work", "/opt/x"]
        );
        assert_eq!(
            unresolved("env -C /srv/work python3 -m pytest", &[], "/root"),
            None
        );
    }

    #[test]
    fn a_config_file_attached_to_c_is_read() {
        let (configs, _) = pytest_arguments("pytest -c/app/pytest.ini /tests/test_outputs.py");
        assert_eq!(configs, ["/app/pytest.ini"]);
    }

    /// The second red team's forms: literal variables, defaults, `~root`, a `#` in quotes.
    #[test]
    fn test_sh_is_read_with_its_literal_variables_and_comments_as_the_shell_has_them() {
        let sh = "VENV=/app/.venv\nexport TOOLS=\"/opt/tools/bin\" # tools\nSRC=/root/src; X=$(pwd)\nX=/b\nsource \"$VENV/bin/activate\"\nexport PATH=\"$TOOLS:$PATH\"\nPYTHONPATH=\"${SRC}:$PYTHONPATH\" pytest\ncd \"${APP_DIR:-/root}\" && echo \"step #1\" && cd /srv # cd /nowhere\ncd $X; echo $#; echo ${#SRC}";
        let r = as_read(sh);
        assert!(r.contains("source \"/app/.venv/bin/activate\""), "{r}");
        assert!(r.contains("export PATH=\"/opt/tools/bin:$PATH\""), "{r}");
        assert!(r.contains("PYTHONPATH=\"/root/src:$PYTHONPATH\""), "{r}");
        assert!(
            r.contains("cd \"/root\" && echo \"step #1\" && cd /srv"),
            "{r}"
        );
        assert!(!r.contains("nowhere") && !r.contains("# tools"), "{r}");
        // Assigned twice, or from a command: not one value.
        assert!(r.contains("cd $X;"), "{r}");
        assert!(r.contains("echo $#") && r.contains("${#SRC}"), "{r}");
        assert_eq!(
            sourced_files(&r, "/root"),
            vec!["/app/.venv/bin/activate".to_string()]
        );
        assert_eq!(
            working_dirs(&r, "/root"),
            vec!["/root".to_string(), "/srv".to_string()]
        );
        assert_eq!(expand_home("~root/x", "/home/u"), "/root/x");
        assert_eq!(expand_home("~/x", "/home/u"), "/home/u/x");
        assert_eq!(expand_home("~bob", "/root"), "/home/bob");
    }

    #[test]
    fn what_test_sh_installs_and_runs_is_named() {
        let sh = "curl -LsSf https://astral.sh/uv/install.sh | sh\nsource $HOME/.local/bin/env\npython3 -m pip install --no-cache-dir -q pytest==8.4.1 'Pytest-Json-Ctrf[x]>=0.3' -r /tests/req.txt\nuv pip install --target /opt/t /tests/answerlib-1.0-py3-none-any.whl $EXTRA ./local\nuvx -p 3.11 --with pytest-json-ctrf==0.3.5 --with=numpy pytest --ctrf x\napt-get install -y curl\nif [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; fi";
        assert_eq!(
            installed_modules(sh),
            vec![
                "answerlib",
                "numpy",
                "pytest",
                "pytest_json_ctrf",
                "pytest_jsonctrf"
            ]
        );
        // Distributions whose modules go by other names.
        let pip = "pip3 install --break-system-packages pyyaml Pillow python-dateutil \\\n  psycopg2-binary opencv-python-headless==4.10 scikit-learn";
        assert_eq!(
            installed_modules(pip),
            vec![
                "PIL",
                "_yaml",
                "cv2",
                "dateutil",
                "joblib",
                "numpy",
                "opencv",
                "opencv_python_headless",
                "pillow",
                "psycopg2",
                "psycopg2_binary",
                "python_dateutil",
                "pyyaml",
                "scikit_learn",
                "scipy",
                "sklearn",
                "threadpoolctl",
                "yaml"
            ]
        );
        // What a distribution pulls in is installed too (openpyxl's `et_xmlfile`).
        assert_eq!(
            installed_modules("pip3 install openpyxl==3.1.5"),
            vec!["et_xmlfile", "openpyxl"]
        );
        let cmds = command_names(sh);
        for c in [
            "curl", "sh", "source", "python3", "uv", "uvx", "apt-get", "echo", "[",
        ] {
            assert_eq!(cmds.contains(c), c != "[", "{c}: {cmds:?}");
        }
        assert!(!cmds.contains("if") && !cmds.contains("then") && !cmds.contains("pytest==8.4.1"));
    }
    use super::*;

    #[test]
    fn where_the_tests_files_are_copied_is_read() {
        let sh = "cp /tests/expected_output.json /root/\ncp -r /tests /tmp/eval\n\
                  cp /tests/*.csv data/\ncp /tests/ref.txt /srv/answer_ref.txt\n\
                  cp -r /tests/. /opt/t/\ncp /app/out.json /root/\ncp \"$X\" /srv/x";
        let got = copies_of_tests(sh, "/root", &["/app".to_string()]);
        let want: Vec<(String, Option<String>)> = vec![
            ("/root/expected_output.json".into(), None),
            ("/tmp/eval/tests".into(), None),
            ("/tmp/eval".into(), None),
            ("/app/data".into(), Some("*.csv".into())),
            ("/srv/answer_ref.txt".into(), None),
            ("/opt/t".into(), None),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn copies_of_tests_are_read_and_copies_of_data_are_not() {
        // Forms of real SkillsBench test.sh (yujianll/skill-usage): data copied beside the
        // work is no test; a test copied into /app is.
        let sh = "cp /tests/gen_ground_truth.mjs /root/gen_ground_truth.mjs\n\
                  cp /tests/dyn_masks.npz /root/dyn_masks.npz\ncp /tests/correct_output.csv .\n\
                  cp /tests/test.py /app/test.py\ncp -r /tests /work/t\ncp /tests/*.py /srv/\n\
                  cp a b\ncp -r /tests/. /opt/x/\ncp /tests/test_b.py .";
        assert_eq!(
            test_copies(sh),
            vec!["/app", "/work/t", "/work/t/tests", "/srv", "/opt/x", "."]
        );
        // A target folder named by option, before the sources: never a source taken for it.
        let sh = "cp -t /srv/a /tests/test_x.py
cp --target-directory=/srv/b /tests/t.py
                  cp -rt /srv/c /tests
cp -t/srv/d.d /tests/t.py
                  cp --target-directory /srv/e /tests/t.py
cp -S .bak /tests/t.py /srv/f/
                  cp -t /srv/g /tests/data.csv";
        assert_eq!(
            test_copies(sh),
            vec![
                "/srv/a",
                "/srv/b",
                "/srv/c",
                "/srv/c/tests",
                "/srv/d.d",
                "/srv/e",
                "/srv/f"
            ]
        );
    }

    #[test]
    fn folders_copied_before_the_tests_are_mapped_to_their_sources() {
        let working = |sh: &str| {
            let mut w = vec!["/app".to_string()];
            w.extend(working_dirs(sh, "/root"));
            w
        };
        let sources = |sh: &str, dir: &str| {
            let l = Landings::read(sh, "/root", &working(sh));
            l.sources_of(dir)
        };
        let sh = "cp -r /opt/project /tmp/eval && cd /tmp/eval/tests && python3 -m pytest";
        assert!(sources(sh, "/tmp/eval").contains(&"/opt/project".to_string()));
        assert!(sources(sh, "/tmp/eval/tests").contains(&"/opt/project/tests".to_string()));
        // Into a folder that exists: under its own name.
        assert!(sources(sh, "/tmp/eval/project").contains(&"/opt/project".to_string()));
        // Relative destination and source, read from the working folders; globs; `~`.
        let sh = "cd /tmp/eval && cp -r /opt/project/* . && python3 -m pytest";
        assert_eq!(sources(sh, "/tmp/eval"), vec!["/opt/project"]);
        let sh = "cd /opt/project && cp -r . /tmp/eval";
        assert!(sources(sh, "/tmp/eval").contains(&"/opt/project".to_string()));
        let sh = "cp /opt/project/*.py /tmp/eval/\ncp -r ~/proj/. /run/x";
        assert_eq!(sources(sh, "/tmp/eval"), vec!["/opt/project"]);
        assert_eq!(sources(sh, "/run/x"), vec!["/root/proj"]);
        // The image's working folder; `-t`; a redirection and a continued line.
        let sh = "cp -r /opt/project/. /app 2>/dev/null\ncp -t /srv /opt/tools >/dev/null 2>&1\n\
                  cp -r /opt/a \\\n  /tmp/b";
        assert_eq!(sources(sh, "/app"), vec!["/opt/project"]);
        assert!(sources(sh, "/srv/tools").contains(&"/opt/tools".to_string()));
        assert!(sources(sh, "/tmp/b").contains(&"/opt/a".to_string()));
        // A variable or a glob above the last part is not followed.
        assert!(sources("cp -r $SRC /tmp/e\ncp -r /o/*/x /tmp/e", "/tmp/e").is_empty());
    }

    #[test]
    fn redirections_are_no_operands() {
        assert_eq!(
            test_copies("cp -r /tests /app/t 2>/dev/null\ncp /tests/a.py /srv/ >/dev/null 2>&1"),
            vec!["/app/t", "/app/t/tests", "/srv"]
        );
    }

    /// The third red team's forms: the tests brought by `cat >`, `ln -s`, `rsync`, and a whole
    /// folder copied into a folder that exists (it lands under its own name).
    #[test]
    fn tests_linked_or_written_by_cat_land_too() {
        assert_eq!(
            test_copies(
                "cat /tests/test_outputs.py > /app/test_x.py\ncat /tests/data.csv >/srv/d.csv\n\
                 ln -s /tests/test_outputs.py /opt/t/\nln -sf /tests /work\nrsync -a /tests/ /r/t\n\
                 cat /tests/test_outputs.py >> /tmp/all\ncat /tests/test_outputs.py | python3 -"
            ),
            // `rsync /tests/` brings the folder's entries; its name is taken too (more is read
            // as the verifier's, never less).
            vec![
                "/app",
                "/opt/t",
                "/work",
                "/work/tests",
                "/r/t",
                "/r/t/tests",
                "/tmp"
            ]
        );
    }

    #[test]
    fn search_paths_are_read_from_test_sh() {
        let sh = "export PATH=\"$HOME/.local/bin:/app/kona:$PATH\"\nPYTHONPATH=/root/src:/app/environment/skills/x python3 -m pytest\nNODE_PATH=relative:/opt/n";
        assert_eq!(
            search_dirs(sh, "/root", PROGRAM_PATHS),
            vec![
                "/root/.local/bin".to_string(),
                "/app/kona".into(),
                "/opt/n".into()
            ]
        );
        assert_eq!(
            search_dirs(sh, "/root", MODULE_PATHS),
            vec!["/root/src".to_string(), "/app/environment/skills/x".into()]
        );
        let loader = "export LD_LIBRARY_PATH=/opt/lib:$LD_LIBRARY_PATH\nPYTHONPATH=:/x pytest";
        assert_eq!(search_dirs(loader, "/root", LOADER_PATHS), vec!["/opt/lib"]);
        assert!(loader_searches_working(loader));
        assert!(!loader_searches_working("LD_LIBRARY_PATH=/a:/b x"));
        // An empty entry is the working folder.
        assert_eq!(relative_search_dirs(loader, MODULE_PATHS), vec!["."]);
    }

    #[test]
    fn sourced_files_are_read_from_test_sh() {
        let sh = "curl -LsSf https://astral.sh/uv/install.sh | sh\nsource $HOME/.local/bin/env\n. /opt/venv/bin/activate && pytest\nsource \"${HOME}/.cargo/env\"; echo\nsource ~/x.sh\nsource $OTHER/y";
        assert_eq!(
            sourced_files(sh, "/root"),
            vec![
                "/root/.local/bin/env".to_string(),
                "/opt/venv/bin/activate".into(),
                "/root/.cargo/env".into(),
                "/root/x.sh".into()
            ]
        );
    }
}
