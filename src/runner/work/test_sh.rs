//! What the task's `test.sh` (and its tests' Python sources) say about where the verifier runs
//! and what it reads, parsed from their text: the folders it changes into, copies the tests
//! into and puts on search paths, the files it sources and has pip install from, whether it
//! runs uv. [`super::rule`] turns them into the toolchain's folders and files and the folders
//! searched first; what the reader does not follow is in docs/limitations.md.

/// The folders `test.sh` copies the task's Python tests into (`cp [-r] /tests/… DEST` of a
/// `.py` file, a folder or a glob: `DEST`, or its folder when it names a file), as written
/// (a relative one is read from `test.sh`'s working folders):
/// pytest reads its configuration and `conftest.py` in and above the tests it runs. A copy of
/// data (`cp /tests/expected.csv /root/expected.csv`, `.mjs`, `.npz`) is no test.
pub fn test_copies(test_sh: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in test_sh.lines() {
        for part in line.split([';', '&', '|', '(', ')']) {
            let words: Vec<&str> = part
                .split_whitespace()
                .map(|w| w.trim_matches(['"', '\'']))
                .collect();
            let Some(at) = words.iter().position(|w| *w == "cp" || w.ends_with("/cp")) else {
                continue;
            };
            let args: Vec<&str> = words[at + 1..]
                .iter()
                .copied()
                .filter(|w| !w.starts_with('-'))
                .collect();
            let Some((dest, sources)) = args.split_last() else {
                continue;
            };
            // A test (`.py`), a folder or a glob of the tests; not a data file.
            let tests = |s: &&str| {
                let name = s.rsplit('/').next().unwrap_or_default();
                (*s == "/tests" || s.starts_with("/tests/"))
                    && (name.ends_with(".py") || !name.contains('.') || name == ".")
            };
            if !sources.iter().any(tests) {
                continue;
            }
            let dest = dest.trim_end_matches('/');
            let named_file = dest
                .rsplit('/')
                .next()
                .is_some_and(|n| n.contains('.') && n != "." && n != "..");
            let dir = if named_file {
                dest.rsplit_once('/')
                    .map_or("/", |(d, _)| if d.is_empty() { "/" } else { d })
            } else if dest.is_empty() {
                "/"
            } else {
                dest
            };
            if !dir.contains('$') && !out.iter().any(|o| o == dir) {
                out.push(dir.to_string());
            }
        }
    }
    out
}

/// The relative folders `test.sh` puts on a search path (`PYTHONPATH=src`), as written.
pub fn relative_search_dirs(test_sh: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for dir in search_path_entries(test_sh) {
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

/// Every entry of every `PATH=…`, `PYTHONPATH=…` and `NODE_PATH=…` in `test_sh` (exported or
/// not), as written.
fn search_path_entries(test_sh: &str) -> impl Iterator<Item = &str> {
    test_sh
        .split(|c: char| c.is_whitespace() || c == ';')
        .filter_map(|word| word.split_once('='))
        .filter(|(name, _)| matches!(*name, "PATH" | "PYTHONPATH" | "NODE_PATH"))
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

/// True when `test_sh` runs `uv` or `uvx` (by name or path).
pub fn runs_uv(test_sh: &str) -> bool {
    test_sh
        .split(|c: char| c.is_whitespace() || ";&|()`$\"'".contains(c))
        .any(|w| matches!(w.rsplit('/').next(), Some("uv" | "uvx")))
}

/// `$HOME`, `${HOME}` and a leading `~` of `word` read as `home`.
fn expand_home(word: &str, home: &str) -> String {
    let w = word.replace("${HOME}", home).replace("$HOME", home);
    match w.strip_prefix('~') {
        Some(rest) => format!("{home}{rest}"),
        None => w,
    }
}

/// The folders `test.sh` puts on a search path (`PATH=…`, `PYTHONPATH=…`, `NODE_PATH=…`,
/// exported or not), absolute, with `$HOME` read as `home` (other variables left out).
pub fn search_dirs(test_sh: &str, home: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for dir in search_path_entries(test_sh) {
        let dir = expand_home(dir, home);
        let dir = dir.trim_end_matches('/');
        if dir.starts_with('/') && !dir.contains('$') && !out.iter().any(|o| o == dir) {
            out.push(dir.to_string());
        }
    }
    out
}

/// The files `test.sh` sources (`source F`, `. F`), with `$HOME`, `${HOME}` and `~` read as
/// `home`.
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
            if file.starts_with('/') && !file.contains('$') {
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
    for line in test_sh.lines() {
        let line = line.split(" #").next().unwrap_or_default();
        for part in line.split([';', '&', '|', '(', ')', '{', '}']) {
            let words: Vec<&str> = part.split_whitespace().collect();
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
            if dir.starts_with('/') && !dir.contains('$') && !out.iter().any(|o| o == dir) {
                out.push(dir.to_string());
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
    use super::*;

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
            vec!["/app", "/work/t", "/srv", "/opt/x", "."]
        );
    }

    #[test]
    fn search_paths_are_read_from_test_sh() {
        let sh = "export PATH=\"$HOME/.local/bin:/app/kona:$PATH\"\nPYTHONPATH=/root/src:/app/environment/skills/x python3 -m pytest\nNODE_PATH=relative:/opt/n";
        assert_eq!(
            search_dirs(sh, "/root"),
            vec![
                "/root/.local/bin".to_string(),
                "/app/kona".into(),
                "/root/src".into(),
                "/app/environment/skills/x".into(),
                "/opt/n".into()
            ]
        );
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
