//! What the task's `test.sh` (and its tests' Python sources) say about where the verifier runs
//! and what it reads, parsed from their text: the folders it changes into, copies the tests
//! into and puts on search paths, the files it sources and has pip install from, whether it
//! runs uv. [`super::rule`] turns them into the toolchain's folders and files and the folders
//! searched first; what the reader does not follow is in docs/limitations.md.
//!
//! In parts: where the tests and their files land (`copies.rs`), what the package installers are
//! told (`installers.rs`), and here the shell's reading itself (variables, working folders,
//! search paths, what pytest is given).

mod copies;
mod installers;

pub use copies::*;
pub use installers::*;

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
/// `-pNAME`; `no:NAME` disables one), also inside an assignment (`PYTEST_ADDOPTS="-c FILE"`).
/// Paths as written (a relative one is read from the working folders).
pub fn pytest_arguments(test_sh: &str) -> (Vec<String>, Vec<String>) {
    let (mut configs, mut plugins) = (Vec::new(), Vec::new());
    for line in logical_lines(test_sh) {
        if !line.to_ascii_lowercase().contains("pytest") || line.contains("pip") {
            continue;
        }
        // An assignment's value is read as arguments too (`PYTEST_ADDOPTS="-c ci.ini" pytest`).
        let words: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || ";&|()".contains(c))
            .map(|w| {
                w.split_once('=')
                    .filter(|(k, _)| {
                        !k.is_empty() && k.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
                    })
                    .map_or(w, |(_, v)| v)
            })
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
    for words in command_words(test_sh) {
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
    out
}

/// The words of each command of `test_sh` (its logical lines cut at `;`, `&` and `|`), quotes
/// removed.
fn command_words(test_sh: &str) -> Vec<Vec<String>> {
    logical_lines(test_sh)
        .into_iter()
        .flat_map(|l| l.split([';', '&', '|']))
        .map(|part| {
            shell_words(part)
                .into_iter()
                .map(|w| w.replace(['"', '\''], ""))
                .collect()
        })
        .collect()
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
    for words in command_words(test_sh) {
        let Some(at) = words.iter().enumerate().position(|(i, w)| {
            let base = w.rsplit('/').next().unwrap_or(w);
            matches!(base, "pytest" | "py.test")
                && (i == 0 || words[i - 1] != "install" && !words[i - 1].starts_with("pip"))
        }) else {
            continue;
        };
        let mut it = words[at + 1..].iter();
        let mut given = false;
        while let Some(w) = it.next() {
            if TAKES_VALUE.contains(&w.as_str()) {
                it.next();
                continue;
            }
            if is_redirection(w) {
                // `> out.txt`: the operator alone takes the next word.
                if w.trim_start_matches(|c: char| c.is_ascii_digit())
                    .trim_start_matches(['>', '<'])
                    .is_empty()
                {
                    it.next();
                }
                continue;
            }
            if w.starts_with('-') || w.contains(['$', '=']) || w.is_empty() {
                continue;
            }
            given = true;
            let path = w.split("::").next().unwrap_or(w);
            let named = path.ends_with(".py") || path.contains('/') || path == ".";
            if named && !out.iter().any(|o| o == path) {
                out.push(path.to_string());
            }
        }
        // Given no test, pytest collects the folder it runs in (or its configuration's
        // `testpaths`, which lie below it in the projects it reads).
        if !given && !out.iter().any(|o| o == ".") {
            out.push(".".to_string());
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
        // Given no test, pytest collects where it runs.
        assert_eq!(pytest_targets("cd /app/tests && pytest -rA"), ["."]);
        assert_eq!(
            pytest_targets("python3 -m pytest --ctrf /logs/verifier/ctrf.json | tee out.txt"),
            ["."]
        );
        assert_eq!(
            pytest_targets("pytest -rA > /logs/verifier/out.txt 2>&1"),
            ["."]
        );
        assert_eq!(pytest_targets("pytest /tests 2> err.txt"), ["/tests"]);
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

    #[test]
    fn requirement_and_configuration_files_say_where_packages_come_from() {
        let req = b"# pinned\nopenpyxl==3.1.5 # a comment\n--find-links /opt/w  # local\n\
                    -f\\\n  ./vendored\n-r more.txt\n--constraint=c.txt\n\
                    x @ file:///opt/p/x-1.0-py3-none-any.whl\n- a list item\n";
        let lines = package_lines("/opt/eval/requirements.txt", req);
        assert_eq!(
            lines,
            [
                "--find-links /opt/w",
                "-f  ./vendored",
                "-r more.txt",
                "--constraint=c.txt",
                "x @ file:///opt/p/x-1.0-py3-none-any.whl"
            ]
        );
        let (sources, files) = package_refs(&lines);
        assert_eq!(sources, ["/opt/w", "./vendored", "/opt/p"]);
        assert_eq!(files, ["more.txt", "c.txt"]);
        // Most files say nothing; text that is not UTF-8 neither.
        assert!(package_lines("/usr/share/doc/x/README", b"Usage:\n- run it\n").is_empty());
        assert!(package_lines("/opt/r.txt", b"\xff-f /opt/w\n").is_empty());
        // pip's configuration: any section, `_` forms, indented continuations.
        let conf = b"[global]\nfind-links =\n    /opt/a\n    file:///opt/b\ntimeout = 60\n\
                     [install]\nextra_index_url: https://example.org/simple\n";
        assert_eq!(
            package_lines("/etc/pip.conf", conf),
            [
                "--find-links /opt/a",
                "--find-links file:///opt/b",
                "--extra-index-url https://example.org/simple"
            ]
        );
        // uv's: its own file, or a project's `[tool.uv]`; a file TOML cannot read says none.
        let uv = b"index-url = \"file:///srv/i\"\n[[index]]\nurl = \"/opt/idx\"\n";
        assert_eq!(
            package_lines("/etc/uv/uv.toml", uv),
            ["--index-url file:///srv/i", "--index-url /opt/idx"]
        );
        let project = b"[project]\nname = \"x\"\n[tool.uv]\nfind-links = [\"w\"]\n";
        assert_eq!(
            package_lines("/app/pyproject.toml", project),
            ["--find-links w"]
        );
        assert!(package_lines("/app/pyproject.toml", b"[project]\nname = \"x\"\n").is_empty());
        assert!(package_lines("/etc/uv/uv.toml", b"find-links = [").is_empty());
    }

    #[test]
    fn virtual_environments_test_sh_makes_are_named() {
        assert_eq!(
            made_venvs(
                "python3 -m venv /opt/test-env\ncd /app; python3 -m venv --clear .venv && x\n\
                 virtualenv -p python3.11 /srv/ve\nuv venv --python 3.12\n/usr/bin/uv venv e2 --seed\n\
                 python3 -m venv --without-pip --system-site-packages \"$VENV\"\npip install venv-tools"
            ),
            ["/opt/test-env", ".venv", "/srv/ve", "e2"]
        );
    }
}
