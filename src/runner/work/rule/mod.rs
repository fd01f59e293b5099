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
//!    base) and every Python installation of the image off `PATH` too (`build.rs`'s `python_installs`);
//!    every virtual environment (a folder with `pyvenv.cfg`, the image's or one the agent
//!    made) and conda environment; an interpreter's name in any `bin` folder
//!    ([`INTERPRETER_NAMES`]); configuration and caches by name wherever they are
//!    ([`TOOLCHAIN_NAMES`]: byte-code caches, startup hooks, pip and uv
//!    configuration, shell start-up files, `$HOME`'s tool folders); pytest's configuration in
//!    `/`, the folder above `/tests`, and in and above every folder `test.sh` copies the tests
//!    into ([`test_copies`](crate::runner::work::test_sh::test_copies)); every file `test.sh` sources; the requirement files it has pip
//!    install from ([`pip_requirements`](crate::runner::work::test_sh::pip_requirements)).
//! 5. The folders the verifier's Python searches before its toolchain — the working folders
//!    (the image's, `/`, and every folder `test.sh` changes into, also inside `bash -c` and
//!    through the image's environment: `python3 -m pytest` puts it first on `sys.path`), the
//!    project folders on `sys.path` (`PYTHONPATH`, a `.pth` file) and the folders the tests put
//!    there (`sys.path.insert`) — hold no module of a toolchain module's name (`pytest.py`,
//!    `json/`, sourceless `pytest.pyc`, a link named `pytest`, and [`OPTIONAL_MODULES`], which
//!    the toolchain imports when they exist), nor a module under a namespace package's name
//!    (portions merge): such a module is not carried, and flagged. Nor do they hold a
//!    distribution's metadata (`*.dist-info`, `*.egg-info`, in any case): pytest loads the
//!    plugins every distribution on `sys.path` declares (`pytest11` entry points).
//! 6. Everything else the agent changed is its work: outputs and edited project files under
//!    `/root`, `/app`, `/opt/<project>`, `/tmp`, `/logs/artifacts`, … Code the tests import from
//!    there runs in the verifier's processes by design (the code under test); see
//!    docs/limitations.md.

mod build;
mod env;
pub use env::plain;
mod names;
mod probe;

use std::collections::{BTreeMap, BTreeSet};

pub use names::*;
pub use probe::*;

use super::manifest::FileKind;
pub use super::paths::{parent, within};
use crate::runner::STATIC_SHELL_DIR;

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
    /// Folders on `sys.path` before the toolchain when the verifier's Python starts, where a
    /// toolchain module's name shadows it and a distribution's metadata declares plugins.
    shadow_dirs: BTreeSet<String>,
    /// Folders the tests put on `sys.path` (after pytest loaded its plugins): a toolchain
    /// module's name shadows it there.
    test_dirs: BTreeSet<String>,
    /// Folders the dynamic loader searches by name (an empty `LD_LIBRARY_PATH` entry: the
    /// working folders; a Python installation's `lib`, which its interpreter's RUNPATH names),
    /// with why: a library's name there (`lib*.so*`) is the toolchain's.
    loader_dirs: BTreeMap<String, String>,
    /// The folders test.sh runs in (the image's working folder, those it changes into, and
    /// where their copies come from).
    working: Vec<String>,
    /// Folders test.sh copies the tests into: the tests' own names there are the verifier's
    /// ([`Rules::with_test_names`]).
    test_places: Vec<String>,
    /// Folders pytest is given to collect that hold where test.sh copies the tests (or lie in
    /// one): a test module or `conftest.py` of the agent's anywhere below is pytest's to run.
    collect_dirs: Vec<String>,
    /// Where test.sh copies the tests' files ([`copies_of_tests`]): a link of the work into
    /// them is one into the verifier's folders.
    tests_copied: Vec<(String, Option<String>)>,
    /// test.sh installs packages, none from a folder ([`Rules::installs_packages`]).
    installs: bool,
    /// Folders test.sh copies the Node tests into: a package of the image's name in a
    /// `node_modules` folder in or above one is what the tests' `require` finds first.
    node_places: Vec<String>,
    /// The names of the image's Node packages (`tinyschema`, `@scope/name`).
    node_packages: BTreeSet<String>,
    /// The requirement and constraint files test.sh has pip install from, where it reads them.
    requirement_files: Vec<String>,
    /// Folders the agent's links named `bin` lead to: an interpreter's name there is one in a
    /// `bin` folder.
    bin_dirs: BTreeSet<String>,
    /// The toolchain's top-level module names.
    modules: BTreeSet<String>,
    /// Names under which a folder without `__init__.py` supplies modules to the toolchain: its
    /// namespace packages (whose portions merge, first on `sys.path` first) and
    /// [`OPTIONAL_MODULES`] (absent from the image: any portion is taken).
    portions: BTreeSet<String>,
    /// Modules that are the verifier's wherever they stand ([`VERIFIER_MODULES`] and those
    /// `test.sh` installs), dotted.
    anywhere: Vec<String>,
    /// The programs `test.sh` runs by name ([`command_names`]).
    commands: BTreeSet<String>,
    /// `test.sh` (or the image's environment) runs coverage.py: its shared configuration files
    /// ([`COVERAGE_SHARED`]) where Python starts are the toolchain's.
    coverage: bool,
    /// Skill folders.
    skills: Vec<String>,
    /// The image user's home folder.
    home: String,
    /// Home folders reached through links (`/root` made a link by the agent), and the image
    /// user's home when it is neither under `/root` nor `/home`: their hidden entries are the
    /// toolchain's as `/root`'s are.
    linked_homes: Vec<String>,
    /// Why the reader cannot name every folder test.sh runs Python in ([`unresolved`]), if it
    /// cannot: then every folder is one searched first (the rule fails closed).
    every_folder_first: Option<String>,
    /// The image's folders but its packages (folders holding an `__init__.py`), and those
    /// `test.sh` makes: where a `test.sh` written before the agent ran can start Python in a
    /// form the reader cannot name. Failing closed, each is taken as searched first.
    start_dirs: BTreeSet<String>,
}

/// True when `path` is a folder above one only the verifier has (`/logs`): the verifier's
/// environment mounts its own folders there, so the agent's link, file or deletion in its place
/// is never carried (a link would lead the verifier's reward elsewhere; a deletion cannot remove
/// a mount).
pub fn holds_verifier_folder(path: &str) -> bool {
    VERIFIER_ONLY
        .iter()
        .any(|d| d.len() > path.len() && within(d, path))
}

/// The entry of a home folder (`/root/x`, `/home/u/x`) that `path` is or lies in.
fn home_entry(path: &str) -> Option<&str> {
    let rest = match path.strip_prefix("/root/") {
        Some(r) => r,
        None => path.strip_prefix("/home/")?.split_once('/')?.1,
    };
    rest.split('/').next().filter(|e| !e.is_empty())
}

/// The module name a file or folder named `name` would be imported as: `x.py`, `x/`,
/// `x.cpython-311-x86_64-linux-gnu.so`, `x.so`, `x.pyd`, and `x.pyc` (byte code without its
/// source is imported too).
pub fn module_name(name: &str, is_dir: bool) -> Option<&str> {
    if is_dir {
        return (!name.contains('.')).then_some(name);
    }
    if let Some(m) = name
        .strip_suffix(".py")
        .or_else(|| name.strip_suffix(".pyc"))
    {
        return Some(m);
    }
    if name.ends_with(".so") || name.ends_with(".pyd") {
        return name.split('.').next();
    }
    None
}

/// True when the file `path` is a module of `dotted` or of a package on its way, wherever it
/// stands: for `org.python.core`, `…/org.py`, `…/org/__init__.py`, `…/org/python.py`,
/// `…/org/python/__init__.py`, `…/org/python/core.py`, `…/org/python/core/__init__.py` (and
/// their byte code and extension modules).
pub fn names_module(path: &str, dotted: &str) -> bool {
    let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let Some((last, dirs)) = comps.split_last() else {
        return false;
    };
    let Some(file) = module_name(last, false) else {
        return false;
    };
    let parts: Vec<&str> = dotted.split('.').collect();
    (1..=parts.len()).any(|k| {
        (file == parts[k - 1] && dirs.ends_with(&parts[..k - 1]))
            || (file == "__init__" && dirs.ends_with(&parts[..k]))
    })
}

impl Rules {
    /// What an entry of a folder the verifier's Python searches before its toolchain is, when
    /// `path` is or lies in one: a module of a toolchain module's name, or a distribution's
    /// metadata.
    fn on_module_path(&self, path: &str, is_dir: bool, regular: bool) -> Option<Class> {
        self.on_module_path_in(path, is_dir, regular, self.every_folder_first.is_some())
    }

    /// Why the rule fails closed for this trial ([`unresolved`](crate::runner::work::test_sh::unresolved)), if it does.
    pub fn fails_closed(&self) -> Option<&str> {
        self.every_folder_first.as_deref()
    }

    /// Why `path` (of kind `kind`) shadows a toolchain module only because the rule fails
    /// closed ([`unresolved`](crate::runner::work::test_sh::unresolved)): `None` when it does not, or when a folder `test.sh` names
    /// makes it one anyway. What `agent/tamper.json` says beside such a flag.
    pub fn shadows_by_failing_closed(&self, path: &str, kind: FileKind) -> Option<String> {
        let why = self.every_folder_first.as_ref()?;
        let (is_dir, regular) = (kind == FileKind::Dir, kind == FileKind::File);
        let failing_closed = self.on_module_path_in(path, is_dir, regular, true);
        let named = self.on_module_path_in(path, is_dir, regular, false);
        (matches!(failing_closed, Some(Class::Shadow(_))) && named.is_none()).then(|| {
            format!(
                "{why}: the rule fails closed, every folder of the image is taken as one the \
                 verifier's Python searches first"
            )
        })
    }

    /// [`Rules::on_module_path`], with (`fail_closed`) or without every image folder above
    /// `path` taken as searched first.
    fn on_module_path_in(
        &self,
        path: &str,
        is_dir: bool,
        regular: bool,
        fail_closed: bool,
    ) -> Option<Class> {
        // Failing closed, every folder above `path` is one searched first.
        let ancestors: Vec<String> = if fail_closed {
            std::iter::successors(Some(parent(path)), |p| (*p != "/").then(|| parent(p)))
                .filter(|d| self.start_dirs.contains(*d))
                .map(str::to_string)
                .collect()
        } else {
            Vec::new()
        };
        let dirs = self.shadow_dirs.iter().chain(&ancestors).map(|d| (d, true));
        for (d, at_start) in dirs.chain(self.test_dirs.iter().map(|d| (d, false))) {
            if path == d || !within(path, d) {
                continue;
            }
            let rest = if d == "/" {
                &path[1..]
            } else {
                &path[d.len() + 1..]
            };
            let top = rest.split('/').next().unwrap_or_default();
            // `importlib.metadata` reads the names lower-cased.
            let lower = top.to_ascii_lowercase();
            if at_start && METADATA_ENDINGS.iter().any(|e| lower.ends_with(e)) {
                return Some(Class::Toolchain(METADATA_ON_PATH.into()));
            }
            // A folder shadows by its `__init__` (without one it is a namespace portion, which
            // a module or package later on the path wins over).
            // A link (or an entry of unknown kind) without a suffix counts by its whole name: a
            // link to a package is one. A regular file without a module's suffix (`/app/token`)
            // is never imported.
            let module = match rest.split_once('/') {
                None if is_dir => None,
                None if regular => module_name(top, false),
                None => module_name(top, false).or_else(|| (!top.contains('.')).then_some(top)),
                Some((_, below)) => {
                    let named = module_name(below.rsplit('/').next().unwrap_or_default(), false);
                    if named.is_some() && self.portions.contains(top) {
                        return Some(Class::Shadow(top.to_string()));
                    }
                    (!below.contains('/') && named == Some("__init__"))
                        .then(|| module_name(top, true))
                        .flatten()
                }
            };
            if let Some(m) = module.filter(|m| self.modules.contains(*m)) {
                return Some(Class::Shadow(m.to_string()));
            }
        }
        None
    }

    /// The top-level module `path` (a regular file of kind `kind`) is, when it stands in a
    /// folder the verifier's Python searches first (its working folders, project folders on
    /// `sys.path`, those the tests put there): `x.py`, `x.so`, `x/__init__.py` → `x`. What a
    /// carried module could shadow once `test.sh` has installed packages
    /// ([`crate::runner::trial`]'s check after the tests).
    pub fn module_searched_first(&self, path: &str, kind: FileKind) -> Option<String> {
        if kind != FileKind::File {
            return None;
        }
        self.shadow_dirs
            .iter()
            .chain(&self.test_dirs)
            .filter(|d| path != d.as_str() && within(path, d))
            .find_map(|d| {
                let rest = if d == "/" {
                    &path[1..]
                } else {
                    &path[d.len() + 1..]
                };
                match rest.split_once('/') {
                    None => module_name(rest, false).map(str::to_string),
                    Some((top, init)) if module_name(init, false) == Some("__init__") => {
                        module_name(top, true).map(str::to_string)
                    }
                    _ => None,
                }
            })
    }

    /// True when `test.sh` installs packages at verify time (pip, uv, …) and none from a folder
    /// of the work (`pip install /app` puts the agent's own modules in the toolchain's folders
    /// under their names): the check after the tests applies.
    pub fn installs_packages(&self) -> bool {
        self.installs
    }

    /// True when `path` is at or under a place `test.sh` copies the tests' files to (a name
    /// of a glob's, in its folder).
    pub fn is_copy_of_tests(&self, path: &str) -> bool {
        self.tests_copied.iter().any(|(at, pattern)| match pattern {
            None => within(path, at),
            Some(pattern) => {
                let Some(rest) = path.strip_prefix(at.as_str()).and_then(|r| {
                    if at == "/" {
                        Some(r)
                    } else {
                        r.strip_prefix('/')
                    }
                }) else {
                    return false;
                };
                let name = rest.split('/').next().unwrap_or_default();
                glob::Pattern::new(pattern).is_ok_and(|g| g.matches(name))
            }
        })
    }

    /// True when `path` is a folder the verifier's Python runs in or searches first (a working
    /// folder), or holds one.
    pub fn holds_working_folder(&self, path: &str) -> bool {
        self.shadow_dirs.iter().any(|d| within(d, path))
    }

    /// Why `path` (absolute) is or is not the agent's work; `is_dir` when it is a folder in the
    /// agent's filesystem. `venvs`: virtual environments the agent made (their trees are the
    /// toolchain too).
    pub fn classify(&self, path: &str, is_dir: bool, venvs: &[String]) -> Class {
        self.classify_as(path, is_dir, false, venvs)
    }

    /// [`Rules::classify`] of an entry whose kind is known: a regular file without a module's
    /// suffix shadows no module (a link of that name may be a package; a program of a verifier
    /// module's name, `pytest`, stays the verifier's).
    pub fn classify_entry(&self, path: &str, kind: FileKind, venvs: &[String]) -> Class {
        self.classify_as(path, kind == FileKind::Dir, kind == FileKind::File, venvs)
    }

    fn classify_as(&self, path: &str, is_dir: bool, regular: bool, venvs: &[String]) -> Class {
        if within(path, AGENT_LOGS) {
            return Class::AgentLogs;
        }
        if VERIFIER_ONLY.iter().any(|d| within(path, d)) || (!is_dir && holds_verifier_folder(path))
        {
            return Class::VerifierOnly;
        }
        if self.skills.iter().any(|d| within(path, d)) {
            return Class::Skills;
        }
        if let Some((_, why)) = self.files.iter().find(|(f, _)| f == path) {
            return Class::Toolchain(why.clone());
        }
        if is_pytest_temp(path) {
            return Class::Toolchain(
                "pytest's temporary folders: the verifier's makes its own".into(),
            );
        }
        // What pytest collects below a folder it is given where the tests land.
        let name = path.rsplit('/').next().unwrap_or_default();
        if !is_dir
            && self.collect_dirs.iter().any(|d| within(path, d))
            && (name == "conftest.py"
                || name == "__init__.py"
                || name.ends_with(".py")
                    && (name.starts_with("test_") || name.ends_with("_test.py")))
        {
            return Class::Toolchain(
                "pytest collects it in the folder it is given, where the tests land".into(),
            );
        }
        // Under a test's name where the tests land (a folder in the test file's place).
        if let Some((f, _)) = self
            .files
            .iter()
            .find(|(f, why)| why == TESTS_LAND && within(path, f))
        {
            return Class::Toolchain(format!("under {f}: {TESTS_LAND}"));
        }
        let name = path.rsplit('/').next().unwrap_or_default();
        if let Some(why) = self.loader_dirs.get(parent(path))
            && name.starts_with("lib")
            && name.contains(".so")
        {
            return Class::Toolchain(format!("a library's name where {why}"));
        }
        let linked_home = || {
            self.linked_homes.iter().find_map(|h| {
                let rest = match h.as_str() {
                    "/" => path.strip_prefix('/')?,
                    h => path.strip_prefix(h)?.strip_prefix('/')?,
                };
                rest.split('/').next().filter(|e| !e.is_empty())
            })
        };
        if let Some(entry) = home_entry(path).or_else(linked_home) {
            if entry.starts_with('.') {
                return Class::Toolchain(format!("{entry} is a hidden entry of a home folder"));
            }
            if HOME_DATA.contains(&entry) {
                return Class::Toolchain(format!(
                    "{entry} in a home folder is where a library looks for its data first"
                ));
            }
        }
        if !is_dir && let Some(why) = self.coverage_reads(path, name) {
            return Class::Toolchain(why);
        }
        if let Some(class) = self.on_module_path(path, is_dir, regular) {
            return class;
        }
        // Failing closed, the tests may run in any folder a `test.sh` written before the agent
        // can land in: pytest's configuration and `conftest.py` there are its.
        if let Some(why) = &self.every_folder_first
            && !is_dir
            && (name == "conftest.py" || ROOT_TEST_CONFIG.contains(&name))
            && self.start_dirs.contains(parent(path))
        {
            return Class::Toolchain(format!(
                "pytest's configuration where the tests may run (the rule fails closed: {why})"
            ));
        }
        for part in path.split('/').filter(|p| !p.is_empty()) {
            if TOOLCHAIN_NAMES.contains(&part) {
                return Class::Toolchain(format!("{part} is the toolchain's wherever it is"));
            }
        }
        let dir = parent(path);
        if (dir.ends_with("/bin") || self.bin_dirs.contains(dir)) && is_interpreter_name(name) {
            return Class::Toolchain(format!("{name} in a bin folder is an interpreter's name"));
        }
        if !is_dir && let Some(end) = TOOLCHAIN_ENDINGS.iter().find(|e| name.ends_with(**e)) {
            return Class::Toolchain(format!("{end} files are the toolchain's"));
        }
        if let Some((_, why)) = self.trees.iter().find(|(d, _)| within(path, d)) {
            return Class::Toolchain(why.clone());
        }
        if let Some(v) = venvs.iter().find(|v| within(path, v)) {
            return Class::Toolchain(format!("{v} is a virtual environment"));
        }
        // After the trees: the image's own `node_modules` folders stay the image's whole.
        if let Some(package) = self.node_shadow(path) {
            return Class::Shadow(package.to_string());
        }
        // In any case: the names test.sh installs are read from distribution names, whose case
        // is not the module's (`fonttools` installs `fontTools`).
        let lower = path.to_ascii_lowercase();
        if let Some(m) = self.anywhere.iter().find(|m| {
            names_module(&lower, &m.to_ascii_lowercase())
                // A link (to a package) or a program (`pytest` on a `PATH` folder) of its name.
                || (!is_dir && m.split('.').next().is_some_and(|t| t.eq_ignore_ascii_case(name)))
        }) {
            return Class::Shadow(m.clone());
        }
        // A program test.sh runs, in any `bin` folder (one put on `PATH` through a variable);
        // failing closed, in any folder (`PATH="$PWD/node_modules/.bin:$PATH"`).
        if !is_dir && self.commands.iter().any(|c| c == name) {
            if dir.ends_with("/bin") {
                return Class::Toolchain(format!(
                    "{name} in a bin folder is a program test.sh runs"
                ));
            }
            if let Some(why) = &self.every_folder_first {
                return Class::Toolchain(format!(
                    "{name} is a program test.sh runs, in any folder when the rule fails \
                     closed ({why})"
                ));
            }
        }
        Class::Work
    }

    /// Why the file `path` (named `name`) is coverage.py's configuration where it may run:
    /// [`COVERAGE_RC`], and [`COVERAGE_SHARED`] when test.sh runs coverage, in a folder the
    /// verifier's Python starts in or searches first (coverage reads them from the folder it
    /// runs in); failing closed, in any folder of the image but its packages.
    fn coverage_reads(&self, path: &str, name: &str) -> Option<String> {
        if name != COVERAGE_RC && !(self.coverage && COVERAGE_SHARED.contains(&name)) {
            return None;
        }
        let dir = parent(path);
        if self.shadow_dirs.contains(dir) {
            return Some(COVERAGE_READS.into());
        }
        let why = self.every_folder_first.as_ref()?;
        self.start_dirs
            .contains(dir)
            .then(|| format!("{COVERAGE_READS} (the rule fails closed: {why})"))
    }

    /// The Node package of the image's that `path` stands in for, when it is at or under
    /// `A/node_modules/<package>` with `A` a folder where test.sh copies the Node tests or one
    /// above it: Node resolves the tests' `require("<package>")` there before `NODE_PATH` and
    /// the image's global folders. A package of another name there is the agent's.
    fn node_shadow<'a>(&self, path: &'a str) -> Option<&'a str> {
        let (above, rest) = path.split_once("/node_modules/")?;
        let above = if above.is_empty() { "/" } else { above };
        if !self.node_places.iter().any(|d| within(d, above)) {
            return None;
        }
        let end = match rest.strip_prefix('@') {
            Some(scoped) => scoped
                .find('/')
                .map(|i| 1 + i + 1 + scoped[i + 1..].find('/').unwrap_or(scoped.len() - i - 1)),
            None => Some(rest.find('/').unwrap_or(rest.len())),
        }?;
        let package = &rest[..end];
        self.node_packages.contains(package).then_some(package)
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

#[cfg(test)]
mod tests;
