//! What counts as the agent's work, and what is the verifier's toolchain.
//!
//! The verifier's environment starts from the task's image, never from the agent's filesystem;
//! of what the agent created, changed or deleted, only its **work** is carried in, as data. Every
//! other change is left behind, so every file the verifier's programs execute, source or load by
//! searching is the image's (or absent, as in the image). The rule, in order
//! ([`Rules::classify`]):
//!
//! 1. `/proc`, `/sys`, `/dev`, skillscope's static shell and the agent's own mounts are never
//!    read; `/logs/agent` is copied out on its own (never carried).
//! 2. `/tests` and `/logs/verifier` are the verifier's: a change there is never carried, and
//!    flagged.
//! 3. Skill folders get the verifier's own copies; the agent's changes there are not carried.
//! 4. **The toolchain** is restored: the system folders ([`SYSTEM_TREES`]); every folder of
//!    `PATH`; every interpreter's standard library and site folders (read once per image by
//!    running the image's own Python: `sys.path`, `site`'s folders, the user site and the user
//!    base); every virtual environment (a folder with `pyvenv.cfg`, the image's or one the agent
//!    made) and conda environment; configuration and caches by name wherever they are
//!    ([`TOOLCHAIN_NAMES`]: byte-code caches, `.pth` files, startup hooks, pip and uv
//!    configuration, shell start-up files, `$HOME`'s tool folders); pytest's configuration in
//!    `/`, the folder above `/tests`; every file `test.sh` sources.
//! 5. A module the agent put in the verifier's working folder or in a project folder on
//!    `sys.path` (`PYTHONPATH`, a `.pth` file) whose name is a module of the toolchain
//!    (`pytest.py`, `json/`) would shadow it: it is not carried, and flagged.
//! 6. Everything else the agent changed is its work: outputs and edited project files under
//!    `/root`, `/app`, `/opt/<project>`, `/tmp`, `/logs/artifacts`, … Code the tests import from
//!    there runs in the verifier's processes by design (the code under test); see
//!    docs/limitations.md.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::manifest::Manifest;
use crate::runner::STATIC_SHELL_DIR;

/// Folders whose whole tree is the system's toolchain: programs, libraries, the loader's and
/// the package manager's configuration, `/etc` (shell start-up, `apt` hooks, `ld.so.preload`,
/// Python's `sitecustomize` on Debian, CA bundles, `/etc/hosts`) and the package managers' state
/// and caches.
pub const SYSTEM_TREES: &[&str] = &[
    "/bin",
    "/boot",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/sbin",
    "/usr",
    "/var/cache",
    "/var/lib/apt",
    "/var/lib/dpkg",
];

/// Names that are the toolchain's wherever they stand: a folder or file of this name, and
/// everything under it.
pub const TOOLCHAIN_NAMES: &[&str] = &[
    // Python's byte-code caches (Python writes them again from the sources), startup hooks.
    "__pycache__",
    "sitecustomize.py",
    "usercustomize.py",
    // pip, uv and distutils configuration; the interpreter uv picks.
    "pip.conf",
    "pip.ini",
    "uv.toml",
    ".python-version",
    ".pydistutils.cfg",
    ".pypirc",
    "pyvenv.cfg",
    // $HOME's tool folders: the user site and uv's `bin/env` (`.local`), caches, tool
    // configuration, Node's and conda's per-user folders, Rust's toolchains.
    ".local",
    ".cache",
    ".config",
    ".pip",
    ".npm",
    ".npmrc",
    ".node_modules",
    ".node_libraries",
    ".conda",
    ".condarc",
    ".cargo",
    ".rustup",
    // Shell start-up files.
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".inputrc",
];

/// Endings of files that are the toolchain's wherever they stand: byte-code, and `.pth` files
/// (read from site folders at every interpreter start).
pub const TOOLCHAIN_ENDINGS: &[&str] = &[".pyc", ".pyo", ".pth"];

/// pytest's configuration files, read in `/` (the folder above `/tests`) when it runs a test
/// there; `conftest.py` there is loaded.
pub const ROOT_TEST_CONFIG: &[&str] = &[
    "conftest.py",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
];

/// The folders that exist only in the verifier's environment.
pub const VERIFIER_ONLY: &[&str] = &["/tests", "/logs/verifier"];

/// Where the agent's logs are copied out from.
pub const AGENT_LOGS: &str = "/logs/agent";

/// The `PATH` execs get when the image sets none.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// What one of the image's Python interpreters searches, as it reported itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PythonPaths {
    /// The interpreter's path as found on `PATH`.
    pub interpreter: String,
    /// Its standard library and site folders (and zip entries): the toolchain.
    pub toolchain: Vec<String>,
    /// Other folders of its `sys.path` (`PYTHONPATH`, folders a `.pth` file adds): project
    /// folders, where a module of the toolchain's name would shadow it.
    pub project: Vec<String>,
    /// The top-level module names of its standard library and site folders.
    pub modules: BTreeSet<String>,
}

/// The image's search paths, read once per image.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Toolchain {
    /// The folders of `PATH` (the image's, else [`DEFAULT_PATH`]).
    pub path: Vec<String>,
    /// Each Python interpreter found on `PATH`.
    pub python: Vec<PythonPaths>,
    /// The user the image runs as (`root` when it names none).
    pub user: String,
}

/// Why a changed path is or is not carried to the verifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    /// The agent's work: carried.
    Work,
    /// The verifier's toolchain: restored from the image (`why` says which part).
    Toolchain(String),
    /// `/tests` or `/logs/verifier`: never carried; flagged.
    VerifierOnly,
    /// `/logs/agent`: copied out on its own.
    AgentLogs,
    /// A skill folder: the verifier gets its own copies.
    Skills,
    /// A module that would shadow the toolchain's module of this name: not carried; flagged.
    Shadow(String),
}

impl Class {
    /// True for [`Class::Work`].
    pub fn is_work(&self) -> bool {
        *self == Class::Work
    }
}

/// The rule for one trial: the image's toolchain, the verifier's working folder, the task's
/// sourced files and the trial's skill folders.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// Folders whose tree is the toolchain, with why.
    trees: Vec<(String, String)>,
    /// Single files of the toolchain, with why.
    files: Vec<(String, String)>,
    /// Folders where a toolchain module's name shadows it.
    shadow_dirs: BTreeSet<String>,
    /// The toolchain's top-level module names.
    modules: BTreeSet<String>,
    /// Skill folders.
    skills: Vec<String>,
}

/// `path` is `dir` or under it.
pub fn within(path: &str, dir: &str) -> bool {
    dir == "/"
        || path == dir
        || (path.len() > dir.len() && path.starts_with(dir) && path.as_bytes()[dir.len()] == b'/')
}

/// The folder of an absolute path (`/a/b` → `/a`, `/a` → `/`).
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// The entry of a home folder (`/root/x`, `/home/u/x`) that `path` is or lies in.
fn home_entry(path: &str) -> Option<&str> {
    let rest = match path.strip_prefix("/root/") {
        Some(r) => r,
        None => path.strip_prefix("/home/")?.split_once('/')?.1,
    };
    rest.split('/').next().filter(|e| !e.is_empty())
}

/// The image's outermost `node_modules` folders (packages the image installed).
fn image_node_modules(manifest: &Manifest) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (p, f) in &manifest.files {
        if f.kind == super::manifest::FileKind::Dir
            && p.ends_with("/node_modules")
            && !out.iter().any(|o| within(p, o))
        {
            out.push(p.clone());
        }
    }
    out
}

/// The module name a file or folder named `name` would be imported as: `x.py`, `x/`,
/// `x.cpython-311-x86_64-linux-gnu.so`, `x.so`, `x.pyd`.
pub fn module_name(name: &str, is_dir: bool) -> Option<&str> {
    if is_dir {
        return (!name.contains('.')).then_some(name);
    }
    if let Some(m) = name.strip_suffix(".py") {
        return Some(m);
    }
    if name.ends_with(".so") || name.ends_with(".pyd") {
        return name.split('.').next();
    }
    None
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
    let mut out = Vec::new();
    for word in test_sh.split(|c: char| c.is_whitespace() || c == ';') {
        let Some((name, value)) = word.split_once('=') else {
            continue;
        };
        if !matches!(name, "PATH" | "PYTHONPATH" | "NODE_PATH") {
            continue;
        }
        for dir in value.trim_matches(['"', '\'']).split(':') {
            let dir = expand_home(dir, home);
            let dir = dir.trim_end_matches('/');
            if dir.starts_with('/') && !dir.contains('$') && !out.iter().any(|o| o == dir) {
                out.push(dir.to_string());
            }
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

impl Rules {
    /// The rule of a trial on this image: `manifest` and `toolchain` (the image's), the
    /// verifier's working folder `workdir`, what `test_sh` sources and puts on search paths, the
    /// image user's `home`, and the skill folders.
    pub fn new(
        manifest: &Manifest,
        toolchain: &Toolchain,
        workdir: &str,
        test_sh: &str,
        home: &str,
        skills: &[String],
    ) -> Rules {
        let mut trees: Vec<(String, String)> = SYSTEM_TREES
            .iter()
            .map(|d| (d.to_string(), "a system folder".to_string()))
            .collect();
        for d in &toolchain.path {
            trees.push((d.clone(), format!("{d} is on PATH")));
        }
        let mut modules: BTreeSet<String> = ["sitecustomize", "usercustomize"]
            .into_iter()
            .map(str::to_string)
            .collect();
        let mut shadow_dirs: BTreeSet<String> = BTreeSet::from([workdir.to_string()]);
        for py in &toolchain.python {
            for d in &py.toolchain {
                trees.push((
                    d.clone(),
                    format!("{} searches it for modules", py.interpreter),
                ));
            }
            shadow_dirs.extend(py.project.iter().cloned());
            modules.extend(py.modules.iter().cloned());
        }
        for v in manifest.folders_with("pyvenv.cfg") {
            trees.push((v.clone(), "a virtual environment of the image".into()));
        }
        for v in manifest.folders_with("conda-meta") {
            trees.push((v.clone(), "a conda environment of the image".into()));
        }
        for d in image_node_modules(manifest) {
            trees.push((d, "Node packages of the image".into()));
        }
        for d in search_dirs(test_sh, home) {
            let why = format!("test.sh puts {d} on a search path");
            trees.push((d, why));
        }
        let mut files: Vec<(String, String)> = ROOT_TEST_CONFIG
            .iter()
            .map(|f| (format!("/{f}"), "pytest reads it above /tests".to_string()))
            .collect();
        for f in sourced_files(test_sh, home) {
            files.push((f, "test.sh sources it".into()));
        }
        Rules {
            trees,
            files,
            shadow_dirs,
            modules,
            skills: skills.to_vec(),
        }
    }

    /// Why `path` (absolute) is or is not the agent's work; `is_dir` when it is a folder in the
    /// agent's filesystem. `venvs`: virtual environments the agent made (their trees are the
    /// toolchain too).
    pub fn classify(&self, path: &str, is_dir: bool, venvs: &[String]) -> Class {
        if within(path, AGENT_LOGS) {
            return Class::AgentLogs;
        }
        if VERIFIER_ONLY.iter().any(|d| within(path, d)) {
            return Class::VerifierOnly;
        }
        if self.skills.iter().any(|d| within(path, d)) {
            return Class::Skills;
        }
        if let Some(entry) = home_entry(path)
            && entry.starts_with('.')
        {
            return Class::Toolchain(format!("{entry} is a hidden entry of a home folder"));
        }
        for part in path.split('/').filter(|p| !p.is_empty()) {
            if TOOLCHAIN_NAMES.contains(&part) {
                return Class::Toolchain(format!("{part} is the toolchain's wherever it is"));
            }
        }
        let name = path.rsplit('/').next().unwrap_or_default();
        if !is_dir && let Some(end) = TOOLCHAIN_ENDINGS.iter().find(|e| name.ends_with(**e)) {
            return Class::Toolchain(format!("{end} files are the toolchain's"));
        }
        if let Some((_, why)) = self.files.iter().find(|(f, _)| f == path) {
            return Class::Toolchain(why.clone());
        }
        if let Some((_, why)) = self.trees.iter().find(|(d, _)| within(path, d)) {
            return Class::Toolchain(why.clone());
        }
        if let Some(v) = venvs.iter().find(|v| within(path, v)) {
            return Class::Toolchain(format!("{v} is a virtual environment"));
        }
        if self.shadow_dirs.contains(parent(path))
            && let Some(m) = module_name(name, is_dir)
            && self.modules.contains(m)
        {
            return Class::Shadow(m.to_string());
        }
        Class::Work
    }

    /// The paths never read in the agent's environment: the kernel's folders, skillscope's
    /// static shell, the agent's logs (copied out on their own), the files every runtime mounts
    /// in (`/etc/hosts`, `/etc/hostname`, `/etc/resolv.conf`), and `mounts` (the agent's own: the
    /// oracle's solution, a harness kit).
    pub fn pruned(mounts: &[String]) -> Vec<String> {
        let mut out: Vec<String> = [
            "/proc",
            "/sys",
            "/dev",
            STATIC_SHELL_DIR,
            AGENT_LOGS,
            "/etc/hosts",
            "/etc/hostname",
            "/etc/resolv.conf",
        ]
        .into_iter()
        .map(str::to_string)
        .collect();
        out.extend(mounts.iter().cloned());
        out
    }
}

/// The script that asks each Python interpreter on `PATH` what it searches: for each of
/// `python3`, `python` and `python3.N` in the `PATH` folders, one line
/// `SKILLSCOPE-PYTHON <path> <json>`. Run with skillscope's static shell in a helper
/// environment of the image (nothing of an agent's in it), with the image's environment.
pub fn python_probe(path: &[String]) -> String {
    let code = r#"import sys, json, os
try:
    import site
except Exception:
    site = None
try:
    import sysconfig
    paths = sysconfig.get_paths()
except Exception:
    paths = {}
tool = set()
for k in ("stdlib", "platstdlib", "purelib", "platlib"):
    if paths.get(k):
        tool.add(paths[k])
if site is not None:
    for f in ("getsitepackages",):
        try:
            tool.update(getattr(site, f)())
        except Exception:
            pass
    try:
        tool.add(site.getusersitepackages())
        tool.add(site.getuserbase())
    except Exception:
        pass
project = []
for p in sys.path:
    if not p:
        continue
    if p in tool or p.endswith((".zip", "site-packages", "dist-packages", "lib-dynload")) or any(p.startswith(t + os.sep) for t in tool if t):
        tool.add(p)
    else:
        project.append(p)
mods = set(getattr(sys, "stdlib_module_names", ())) | set(sys.builtin_module_names)
for d in tool:
    try:
        for n in os.listdir(d):
            m = n.split(".")[0] if (n.endswith(".py") or ".so" in n) else (n if os.path.isdir(os.path.join(d, n)) and "." not in n else None)
            if m:
                mods.add(m)
    except Exception:
        pass
print(json.dumps({"toolchain": sorted(t for t in tool if t), "project": project, "modules": sorted(mods)}))
"#;
    let dirs: Vec<String> = path.iter().map(|d| shell_quote(d)).collect();
    format!(
        "seen=''; for d in {dirs}; do for n in python3 python python3.8 python3.9 python3.10 python3.11 python3.12 python3.13 python3.14; do \
           p=\"$d/$n\"; [ -x \"$p\" ] || continue; r=$(readlink -f \"$p\" 2>/dev/null || echo \"$p\"); \
           case \" $seen \" in *\" $r \"*) continue;; esac; seen=\"$seen $r\"; \
           out=$(\"$p\" -c {code} 2>/dev/null) && echo \"SKILLSCOPE-PYTHON $p $out\"; done; done; true",
        dirs = if dirs.is_empty() {
            "/usr/bin".to_string()
        } else {
            dirs.join(" ")
        },
        code = shell_quote(code),
    )
}

/// Parses [`python_probe`]'s output; lines that are not its own are left out.
pub fn parse_python_probe(out: &str) -> Vec<PythonPaths> {
    #[derive(Deserialize)]
    struct Reported {
        toolchain: Vec<String>,
        project: Vec<String>,
        modules: Vec<String>,
    }
    out.lines()
        .filter_map(|l| l.strip_prefix("SKILLSCOPE-PYTHON "))
        .filter_map(|rest| {
            let (interpreter, json) = rest.split_once(' ')?;
            let r: Reported = serde_json::from_str(json).ok()?;
            let clean = |v: Vec<String>| -> Vec<String> {
                v.into_iter()
                    .filter(|p| p.starts_with('/'))
                    .map(|p| p.trim_end_matches('/').to_string())
                    .filter(|p| !p.is_empty())
                    .collect()
            };
            Some(PythonPaths {
                interpreter: interpreter.to_string(),
                toolchain: clean(r.toolchain),
                project: clean(r.project),
                modules: r.modules.into_iter().collect(),
            })
        })
        .collect()
}

/// `s` quoted for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Rules {
        let toolchain = Toolchain {
            path: vec![
                "/usr/local/bin".into(),
                "/usr/bin".into(),
                "/opt/tools/bin".into(),
            ],
            python: vec![PythonPaths {
                interpreter: "/usr/local/bin/python3".into(),
                toolchain: vec![
                    "/usr/local/lib/python3.12".into(),
                    "/usr/local/lib/python3.12/site-packages".into(),
                    "/root/.local/lib/python3.12/site-packages".into(),
                ],
                project: vec!["/srv/lib".into()],
                modules: ["pytest", "json", "_pytest"]
                    .into_iter()
                    .map(String::from)
                    .collect(),
            }],
            user: "root".into(),
        };
        let tar = super::super::manifest::tests::tar_of(&[(
            "app/.venv/pyvenv.cfg",
            super::super::manifest::FileKind::File,
            "home = /usr/bin",
        )]);
        let m = Manifest::from_tar(&tar[..], Default::default()).unwrap();
        Rules::new(
            &m,
            &toolchain,
            "/app",
            "source $HOME/.local/bin/env\n. /opt/setup.sh\nexport PATH=/app/kona:$PATH\nPYTHONPATH=\"/root/src:${PYTHONPATH}\" pytest",
            "/root",
            &["/root/.claude/skills".into()],
        )
    }

    #[test]
    fn outputs_and_project_files_are_work() {
        let r = rules();
        for p in [
            "/root/output.xlsx",
            "/app/solution.py",
            "/app/src/module.py",
            "/tmp/outputs/result.json",
            "/logs/artifacts/plot.png",
            "/opt/druid/lib/druid.jar",
            "/opt/syzkaller/sys/linux/dev_ppdev.txt",
            "/home/github/build/failed/failed_reasons.txt",
            "/app/lib/openpyxl/__init__.py",
            "/var/www/index.html",
        ] {
            assert_eq!(r.classify(p, false, &[]), Class::Work, "{p}");
        }
    }

    #[test]
    fn the_toolchain_is_never_work() {
        let r = rules();
        for p in [
            "/usr/local/bin/pytest",
            "/usr/bin/bash",
            "/usr/local/lib/python3.12/json/__init__.py",
            "/usr/local/lib/python3.12/site-packages/_pytest/main.py",
            "/root/.local/lib/python3.12/site-packages/evil.py",
            "/root/.local/bin/env",
            "/app/.venv/bin/python",
            "/opt/tools/bin/runner",
            "/etc/ld.so.preload",
            "/etc/apt/apt.conf.d/99hook",
            "/var/lib/dpkg/info/python3.postinst",
            "/app/__pycache__/solution.cpython-312.pyc",
            "/app/solution.pyc",
            "/srv/lib/hook.pth",
            "/app/sitecustomize.py",
            "/root/.bashrc",
            "/root/.config/pip/pip.conf",
            "/app/uv.toml",
            "/conftest.py",
            "/pyproject.toml",
            "/opt/setup.sh",
            "/app/kona/pytest",
            "/root/src/json.py",
            "/root/.m2/repository/x.jar",
            "/home/dev/.gitconfig",
        ] {
            assert!(
                matches!(r.classify(p, false, &[]), Class::Toolchain(_)),
                "{p}: {:?}",
                r.classify(p, false, &[])
            );
        }
        // A virtual environment the agent made is the toolchain too.
        assert!(matches!(
            r.classify("/work/venv/bin/pytest", false, &["/work/venv".into()]),
            Class::Toolchain(_)
        ));
    }

    #[test]
    fn modules_that_would_shadow_the_toolchain_are_not_work() {
        let r = rules();
        assert_eq!(
            r.classify("/app/pytest.py", false, &[]),
            Class::Shadow("pytest".into())
        );
        assert_eq!(
            r.classify("/app/json", true, &[]),
            Class::Shadow("json".into())
        );
        assert_eq!(
            r.classify("/srv/lib/_pytest", true, &[]),
            Class::Shadow("_pytest".into())
        );
        // Elsewhere, and under other names, they are work.
        assert_eq!(r.classify("/app/sub/pytest.py", false, &[]), Class::Work);
        assert_eq!(r.classify("/app/report.py", false, &[]), Class::Work);
    }

    #[test]
    fn verifier_logs_and_skill_folders_are_apart() {
        let r = rules();
        assert_eq!(
            r.classify("/tests/test_outputs.py", false, &[]),
            Class::VerifierOnly
        );
        assert_eq!(
            r.classify("/logs/verifier/reward.txt", false, &[]),
            Class::VerifierOnly
        );
        assert_eq!(r.classify("/logs/verifier", true, &[]), Class::VerifierOnly);
        assert_eq!(
            r.classify("/logs/agent/trace.json", false, &[]),
            Class::AgentLogs
        );
        assert_eq!(
            r.classify("/root/.claude/skills/x/SKILL.md", false, &[]),
            Class::Skills
        );
        assert_eq!(r.classify("/logs/verifier2/x", false, &[]), Class::Work);
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

    #[test]
    fn the_python_probe_output_is_parsed() {
        let out = "noise\nSKILLSCOPE-PYTHON /usr/bin/python3 {\"toolchain\": [\"/usr/lib/python3.11\", \"/usr/lib/python3/dist-packages/\"], \"project\": [\"/app\", \"relative\"], \"modules\": [\"json\", \"pytest\"]}\nSKILLSCOPE-PYTHON /x not-json";
        let p = parse_python_probe(out);
        assert_eq!(p.len(), 1);
        assert_eq!(
            p[0].toolchain,
            vec![
                "/usr/lib/python3.11".to_string(),
                "/usr/lib/python3/dist-packages".into()
            ]
        );
        assert_eq!(p[0].project, vec!["/app".to_string()]);
        assert!(p[0].modules.contains("pytest"));
    }

    #[test]
    fn paths_nest_by_component() {
        assert!(within("/usr/bin/x", "/usr"));
        assert!(within("/usr", "/usr"));
        assert!(!within("/usrx", "/usr"));
        assert!(within("/anything", "/"));
        assert_eq!(parent("/a/b"), "/a");
        assert_eq!(parent("/a"), "/");
        assert_eq!(
            module_name("x.cpython-311-x86_64-linux-gnu.so", false),
            Some("x")
        );
        assert_eq!(module_name("x.txt", false), None);
        assert_eq!(module_name("pkg.egg-info", true), None);
    }
}
