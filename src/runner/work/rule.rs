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
//!    base) and every Python installation of the image off `PATH` too ([`python_installs`]);
//!    every virtual environment (a folder with `pyvenv.cfg`, the image's or one the agent
//!    made) and conda environment; an interpreter's name in any `bin` folder
//!    ([`INTERPRETER_NAMES`]); configuration and caches by name wherever they are
//!    ([`TOOLCHAIN_NAMES`]: byte-code caches, startup hooks, pip and uv
//!    configuration, shell start-up files, `$HOME`'s tool folders); pytest's configuration in
//!    `/`, the folder above `/tests`, and in and above every folder `test.sh` copies the tests
//!    into ([`test_copies`]); every file `test.sh` sources; the requirement files it has pip
//!    install from ([`pip_requirements`]).
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

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::manifest::{FileKind, Manifest};
use super::paths::{join, normalize};
pub use super::paths::{parent, within};
use super::test_sh::{
    LOADER_PATHS, Landings, MODULE_PATHS, PROGRAM_PATHS, as_read, command_names, copies_of_tests,
    environment_files, installed_modules, installs_a_folder, installs_packages,
    loader_searches_working, local_package_source, made_dirs, package_sources, pip_requirements,
    pytest_arguments, pytest_targets, relative_search_dirs, runs_uv, search_dirs, sourced_files,
    sys_path_dirs, test_copies, unresolved, working_dirs,
};
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
    // $HOME's tool folders: the user site and uv's `bin/env` (`.local`), pip's, Node's and
    // conda's per-user folders, Rust's toolchains. (Caches and tool configuration, `.cache` and
    // `.config`, are read from a home folder only: a home's hidden entries are all the
    // toolchain's; a project's `.config/` or a model cache under `/app/.cache` is work.)
    ".local",
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

/// Endings of files that are the toolchain's wherever they stand: byte-code. (`.pth` files are
/// read only from site folders, which are the toolchain's whole; elsewhere `model.pth` is a
/// PyTorch checkpoint, work.)
pub const TOOLCHAIN_ENDINGS: &[&str] = &[".pyc", ".pyo"];

/// pytest's configuration files, read in `/` (the folder above `/tests`) when it runs a test
/// there, and in and above every folder it finds tests in: it looks in the test's folder and
/// every folder above it (the first found makes its folder the rootdir) and loads a
/// `conftest.py` of the rootdir or above (pytest before 8: of every folder above). A
/// `conftest.py` there can turn every failure into a pass. `pytest.toml` and `.pytest.toml`
/// are pytest 9's (first in its order); those and `pytest.ini` are its configuration whatever
/// they hold, the last three only with a pytest section.
pub const ROOT_TEST_CONFIG: &[&str] = &[
    "conftest.py",
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
];

/// Modules the toolchain imports when they exist, though no image need have them: a module of
/// this name first on `sys.path` runs in the verifier's processes without any test importing
/// it. Found by tracing, with a finder of last resort, what CPython 3.11's standard library and
/// pytest 8 look up and miss: `org` (`copy` tries Jython's `org.python.core`); pytest's optional
/// imports (`pygments` for coloured output, `colorama`, `argcomplete`, and its back-ports
/// `exceptiongroup` and `tomli` before Python 3.11). The standard library's own names
/// (`msvcrt`, `winreg`, … of other platforms) are in `sys.stdlib_module_names`, which the probe
/// reads. Then the optional imports of packages a task's tests import, where the image lacks
/// them: `openpyxl` and Pillow try `defusedxml` (and `openpyxl` `lxml`) as they load, `requests`
/// and `urllib3` their codecs and `socks`, pandas its readers and engines (`openpyxl`, `xlrd`,
/// `odf`, `pyxlsb`, `python_calamine`, `pyarrow`, `fastparquet`, `tables`' `bottleneck` and
/// `numexpr`, …) when a test reads a file — a module of such a name in a folder searched
/// first would run in the tests' process (a red team's `defusedxml.py` beside the work). A
/// curated list, not a construction: docs/limitations.md.
pub const OPTIONAL_MODULES: &[&str] = &[
    "org",
    "pygments",
    "colorama",
    "argcomplete",
    "exceptiongroup",
    "tomli",
    "defusedxml",
    "lxml",
    "olefile",
    "chardet",
    "charset_normalizer",
    "simplejson",
    "brotli",
    "brotlicffi",
    "zstandard",
    "socks",
    "h2",
    "openpyxl",
    "xlrd",
    "xlsxwriter",
    "odf",
    "pyxlsb",
    "python_calamine",
    "pyarrow",
    "fastparquet",
    "bottleneck",
    "numexpr",
    "numba",
    "xarray",
    "sqlalchemy",
    "fsspec",
    "html5lib",
    "bs4",
    "ujson",
    "orjson",
    "tzdata",
    "pytz",
    "scipy",
    "matplotlib",
    "jinja2",
    // openpyxl tries `numpy` and Pillow when they exist (a probe of what importing it looks for
    // and misses), `bs4` `cchardet`.
    "numpy",
    "PIL",
    "cchardet",
];

/// Modules that are the verifier's wherever the agent writes them (dotted: every package on the
/// way counts): the test runner itself and what it imports first (`pytest`, `_pytest`,
/// `pluggy`, `iniconfig`), and `org.python.core`, which `copy` imports when it exists. A folder
/// the verifier's Python searches is not always one `test.sh` names as written (`cd ~user`,
/// `PYTHONPATH="$SRC:…"`, a `.pth` line naming a folder the image lacks, `su -`): a module of
/// these names is never carried, and flagged, wherever it stands in the work. The names `test.sh`
/// installs ([`installed_modules`]) join them.
pub const VERIFIER_MODULES: &[&str] = &[
    "pytest",
    "_pytest",
    "pluggy",
    "iniconfig",
    "org.python.core",
];

/// Endings of a distribution's metadata folders, which `importlib.metadata` reads from every
/// folder on `sys.path` (pytest loads the `pytest11` entry points it finds there).
pub const METADATA_ENDINGS: &[&str] = &[".dist-info", ".egg-info"];

/// Why pytest's configuration in or above a folder `test.sh` copies tests into is not work.
pub const PYTEST_READS: &str =
    "pytest reads it in and above the folder test.sh copies the tests into";

/// Why a path of a test's name where test.sh copies the tests or runs is not work.
pub const TESTS_LAND: &str = "the task's tests are copied or read there";

/// Why a folder the installers take packages from is not work.
pub const PACKAGES_FROM: &str = "pip or uv installs packages from it (find-links, a file index)";

/// The image's variables that name where pip and uv take packages from: indexes and wheels
/// folders, their caches (uv installs from its cache offline), and the files they read their
/// constraints and settings from.
const PACKAGE_SOURCE_SETTINGS: &[&str] = &[
    "PIP_FIND_LINKS",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "UV_FIND_LINKS",
    "UV_INDEX_URL",
    "UV_EXTRA_INDEX_URL",
    "UV_INDEX",
    "UV_DEFAULT_INDEX",
    "PIP_CACHE_DIR",
    "UV_CACHE_DIR",
    "UV_TOOL_DIR",
    "UV_PYTHON_INSTALL_DIR",
    "PIP_CONSTRAINT",
    "PIP_REQUIREMENT",
    "PIP_CONFIG_FILE",
    "UV_CONSTRAINT",
    "UV_OVERRIDE",
    "UV_CONFIG_FILE",
];

/// Why a requirements file `test.sh` installs from is not work.
pub const PIP_READS: &str = "test.sh installs what it names (pip -r/-c)";

/// Programs an interpreter or test runner goes by: such a name in any `bin` folder is the
/// toolchain's (a project's `.venv/bin/python` without its `pyvenv.cfg` is still one).
pub const INTERPRETER_NAMES: &[&str] = &[
    "python", "python3", "pytest", "py.test", "pip", "pip3", "uv", "uvx", "node", "npm", "npx",
];

/// True for [`INTERPRETER_NAMES`] and `pythonX.Y`, `pipX.Y`.
pub fn is_interpreter_name(name: &str) -> bool {
    INTERPRETER_NAMES.contains(&name)
        || ["python3.", "pip3."].iter().any(|p| {
            name.strip_prefix(p)
                .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        })
}

/// Every Python installation of the image wherever it stands, not only those on `PATH`: each
/// folder that holds a standard library (`os.py`), each `site-packages` and `dist-packages`,
/// and each installation prefix's `bin` whose `python3` (or `python`) a `test.sh` may run by
/// its path (`/opt/py/bin/python3`).
fn python_installs(manifest: &Manifest) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for path in manifest.files.keys() {
        let (dir, name) = (parent(path), path.rsplit('/').next().unwrap_or_default());
        let found = if name == "os.py" {
            Some((dir.to_string(), "a Python standard library of the image"))
        } else if name == "site-packages" || name == "dist-packages" {
            Some((path.clone(), "a Python site folder of the image"))
        } else if dir.ends_with("/bin") && (name == "python" || name == "python3") {
            Some((dir.to_string(), "an interpreter's folder of the image"))
        } else {
            None
        };
        if let Some((d, why)) = found
            && !out.iter().any(|(o, _)| *o == d)
        {
            out.push((d, why.to_string()));
        }
    }
    out
}

/// The top-level module names of every standard library and site folder of the image
/// ([`python_installs`], which includes those of interpreters off `PATH` and of the image's
/// virtual environments): a module of such a name earlier on `sys.path` shadows it, whichever
/// interpreter test.sh runs.
fn install_modules(manifest: &Manifest) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (dir, _) in python_installs(manifest) {
        if dir.ends_with("/bin") {
            continue;
        }
        for name in manifest.children(&dir) {
            let is_dir = manifest
                .get(&join(&dir, name))
                .is_some_and(|f| f.kind == super::manifest::FileKind::Dir);
            if let Some(m) = module_name(name, is_dir) {
                out.insert(m.to_string());
            }
        }
    }
    out
}

/// Standard-library names no verifier imports, and honest agents name their own files so: the
/// `test` package is CPython's regression suite (Debian's `libpython3.N-stdlib` ships its
/// start), which neither pytest, its plugins nor a task's tests import, while an agent's scratch
/// `/app/test.py` is common. A module of this name in a folder searched first is work.
const NEVER_IMPORTED: &[&str] = &["test"];

/// Folder names a carelessly packaged distribution leaves in a site folder without being a
/// namespace anything imports (`tests/`, `docs/`, …): an agent's folder of that name is its own.
pub const NOT_NAMESPACES: &[&str] = &[
    "tests",
    "test",
    "testing",
    "docs",
    "doc",
    "examples",
    "example",
    "scripts",
    "benchmarks",
];

/// The namespace packages in toolchain folder `dir`: entries without `__init__.py` that hold a
/// package (`mpl_toolkits/mplot3d/__init__.py`, `google/protobuf/__init__.py`) — portions
/// merge with one earlier on `sys.path` — but [`NOT_NAMESPACES`].
fn namespace_packages(manifest: &Manifest, dir: &str) -> Vec<String> {
    manifest
        .children(dir)
        .filter(|c| !c.contains('.') && !c.contains('-') && !NOT_NAMESPACES.contains(c))
        .filter(|c| {
            let pkg = format!("{dir}/{c}");
            let below = format!("{pkg}/");
            manifest.get(&format!("{pkg}/__init__.py")).is_none()
                && manifest
                    .files
                    .range(below.clone()..)
                    .take_while(|(p, _)| p.starts_with(&below))
                    .any(|(p, _)| {
                        p[below.len()..]
                            .split_once('/')
                            .is_some_and(|(_, rest)| rest == "__init__.py")
                    })
        })
        .map(str::to_string)
        .collect()
}

/// Adds each of `names` in folder `dir` and in every folder above it to `files`, with `why`
/// (files a tool reads in the folder it runs in and upwards).
fn in_and_above(files: &mut Vec<(String, String)>, dir: &str, names: &[&str], why: &str) {
    let mut dir = dir;
    loop {
        for name in names {
            let f = join(dir, name);
            if !files.iter().any(|(g, _)| *g == f) {
                files.push((f, why.to_string()));
            }
        }
        if dir == "/" {
            return;
        }
        dir = parent(dir);
    }
}

/// Why a file `test.sh` sources is the toolchain's (the words [`crate::runner::tamper`] reads).
pub const SOURCED: &str = "test.sh sources it";

/// Why a distribution's metadata on the verifier's module path is not work (the words
/// [`crate::runner::tamper`] reads).
pub const METADATA_ON_PATH: &str = "a distribution's metadata on the verifier's module path (pytest loads the plugins it declares)";

/// The files `uv` reads in the folder it runs in and every folder above it (beside `uv.toml`
/// and `.python-version`, which [`TOOLCHAIN_NAMES`] has): `uv run`, `uv add` and `uv sync`
/// (`uv init; uv add pytest; uv run pytest` in some SkillsBench `test.sh`) install the project's
/// dependencies from them, from where its `[tool.uv]` table says (`find-links`, `no-index`,
/// `sources`: the agent's own wheels). `uvx` reads only the user's configuration (under
/// `$HOME`, the toolchain's already).
pub const UV_PROJECT_FILES: &[&str] = &["pyproject.toml", "uv.lock"];

/// Why a project file in or above a working folder of a `test.sh` that runs uv is not work.
pub const UV_READS: &str = "uv reads it in and above the verifier's working folders";

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
    /// Folders on `sys.path` before the toolchain when the verifier's Python starts, where a
    /// toolchain module's name shadows it and a distribution's metadata declares plugins.
    shadow_dirs: BTreeSet<String>,
    /// Folders the tests put on `sys.path` (after pytest loaded its plugins): a toolchain
    /// module's name shadows it there.
    test_dirs: BTreeSet<String>,
    /// Folders the dynamic loader searches by name (an empty `LD_LIBRARY_PATH` entry: the
    /// working folders): a library's name there (`lib*.so*`) is the toolchain's.
    loader_dirs: BTreeSet<String>,
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

/// The folders of `manifest` (with every folder above a path, and `/`) but its packages (those
/// holding an `__init__.py`): the only folders a `test.sh` written before the agent ran can
/// start Python in without naming them ([`Rules`]' `start_dirs`). A folder the agent made,
/// or an `__init__.py` it added, changes nothing here.
fn start_dirs(manifest: &Manifest) -> BTreeSet<String> {
    let mut dirs: BTreeSet<String> = BTreeSet::from(["/".to_string()]);
    for (p, f) in &manifest.files {
        let mut d = if f.kind == FileKind::Dir {
            p.as_str()
        } else {
            parent(p)
        };
        while dirs.insert(d.to_string()) {
            d = parent(d);
        }
    }
    for pkg in manifest.folders_with("__init__.py") {
        dirs.remove(&pkg);
    }
    dirs
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
        let test_sh = &as_read(test_sh);
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
        // `/` too: `cd "$(dirname "$0")/.."` is the folder above `/tests`.
        let mut shadow_dirs: BTreeSet<String> =
            BTreeSet::from([workdir.to_string(), "/".to_string()]);
        // The folders test.sh runs in, and the places its copies bring there (`cp -r
        // /opt/project /tmp/eval && cd /tmp/eval`: what `/opt/project` holds is read from
        // `/tmp/eval`) — everything said of a working folder below is said of those too.
        // A relative one (`cd src`) from every folder known before it.
        let mut working: Vec<String> = vec![workdir.to_string()];
        for d in working_dirs(test_sh, home) {
            let at: Vec<String> = if d.starts_with('/') {
                vec![normalize(&d)]
            } else {
                working.iter().map(|w| normalize(&join(w, &d))).collect()
            };
            for d in at {
                if !working.contains(&d) {
                    working.push(d);
                }
            }
        }
        let landings = Landings::read(test_sh, home, &working);
        let also = |dirs: Vec<String>| -> Vec<String> {
            let mut out = dirs.clone();
            for d in &dirs {
                for s in landings.sources_of(d) {
                    if !out.contains(&s) {
                        out.push(s);
                    }
                }
            }
            out
        };
        let working = also(working);
        shadow_dirs.extend(working.iter().cloned());
        modules.extend(OPTIONAL_MODULES.iter().map(|m| m.to_string()));
        let mut portions: BTreeSet<String> =
            OPTIONAL_MODULES.iter().map(|m| m.to_string()).collect();
        for py in &toolchain.python {
            for d in &py.toolchain {
                portions.extend(namespace_packages(manifest, d));
            }
        }
        trees.extend(python_installs(manifest));
        for d in &manifest.loader_dirs {
            trees.push((d.clone(), format!("the image's ld.so.conf names {d}")));
        }
        modules.extend(install_modules(manifest));
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
        // Node resolves a package a test in `/tests` requires from `/tests/node_modules`, then
        // `/node_modules`, before `NODE_PATH` and the global folders: `/`'s is pytest's
        // `/conftest.py` for Node.
        trees.push((
            "/node_modules".into(),
            "Node looks for the tests' packages there, above /tests".into(),
        ));
        // Folders of programs and libraries found by name are the toolchain's whole; folders of
        // Python modules (`PYTHONPATH`) are searched first (step 5), their other files work.
        for d in search_dirs(test_sh, home, PROGRAM_PATHS)
            .into_iter()
            .chain(search_dirs(test_sh, home, LOADER_PATHS))
        {
            let why = format!("test.sh puts {d} on a search path");
            for d in also(vec![d]) {
                trees.push((d, why.clone()));
            }
        }
        for d in search_dirs(test_sh, home, MODULE_PATHS) {
            shadow_dirs.extend(also(vec![d]));
        }
        // A relative entry (`PYTHONPATH=src`) is read from whichever folder test.sh is in.
        for rel in relative_search_dirs(test_sh, PROGRAM_PATHS) {
            for w in &working {
                let d = join(w, &rel);
                let why = format!("test.sh puts {rel} on a search path (from {w})");
                trees.push((d, why));
            }
        }
        for rel in relative_search_dirs(test_sh, MODULE_PATHS) {
            shadow_dirs.extend(working.iter().map(|w| join(w, &rel)));
        }
        let mut loader_dirs: BTreeSet<String> = BTreeSet::new();
        if loader_searches_working(test_sh) {
            loader_dirs.extend(working.iter().cloned());
        }
        let mut files: Vec<(String, String)> = ROOT_TEST_CONFIG
            .iter()
            .map(|f| (format!("/{f}"), "pytest reads it above /tests".to_string()))
            .collect();
        // A file by its absolute path, and where a copy brings it from.
        let at_and_from = |f: &str| -> Vec<String> {
            let name = f.rsplit('/').next().unwrap_or_default();
            let mut out = vec![f.to_string()];
            out.extend(landings.sources_of(parent(f)).iter().map(|d| join(d, name)));
            out
        };
        // A file test.sh takes variables from, by `source` or at run time (`export $(cat .env |
        // xargs)`, a `read` loop's input).
        for f in sourced_files(test_sh, home)
            .into_iter()
            .chain(environment_files(test_sh))
        {
            // A relative one (`source .venv/bin/activate`) from whichever folder test.sh is in.
            let at: Vec<String> = if f.starts_with('/') {
                vec![f]
            } else {
                working.iter().map(|w| join(w, &f)).collect()
            };
            for f in at.iter().flat_map(|f| at_and_from(f)) {
                files.push((f, SOURCED.into()));
            }
        }
        // Where test.sh copies the tests, and the folders it runs in (a relative test path is
        // read there): pytest's configuration and the packages' `__init__.py` in and above them
        // are read (an `__init__.py` beside a test makes it a package's module, run first), and
        // pytest puts such a folder first on `sys.path` before it imports a test module.
        let mut test_places: Vec<String> = Vec::new();
        let resolve = |d: &str| -> Vec<String> {
            let dirs: Vec<String> = if d.starts_with('/') {
                vec![normalize(d)]
            } else {
                working.iter().map(|w| normalize(&join(w, d))).collect()
            };
            also(dirs)
                .into_iter()
                .filter(|d| !within(d, "/tests"))
                .collect()
        };
        for d in test_copies(test_sh) {
            for d in resolve(&d) {
                in_and_above(&mut files, &d, ROOT_TEST_CONFIG, PYTEST_READS);
                in_and_above(&mut files, &d, &["__init__.py"], PYTEST_READS);
                shadow_dirs.insert(d.clone());
                if !test_places.contains(&d) {
                    test_places.push(d);
                }
            }
        }
        // Where pytest is told to find tests outside `/tests` is read the same, however the
        // tests got there (`install`, `tar`, `mv`, a heredoc) — but for the tests' own names,
        // which stay the agent's there (a relative path is read from every working folder).
        let mut collect_dirs: Vec<String> = Vec::new();
        for t in pytest_targets(test_sh) {
            let t = t.trim_end_matches('/');
            // A test file's folder; a relative file alone (`test_outputs.py`) is in the
            // working folder.
            let dir = match (t.ends_with(".py"), t.rfind('/')) {
                (false, _) if t.is_empty() => "/",
                (false, _) => t,
                (true, Some(0)) => "/",
                (true, Some(i)) => &t[..i],
                (true, None) => ".",
            };
            for d in resolve(dir) {
                in_and_above(&mut files, &d, ROOT_TEST_CONFIG, PYTEST_READS);
                in_and_above(&mut files, &d, &["__init__.py"], PYTEST_READS);
                // A folder pytest collects, where test.sh copies the tests: what pytest runs or
                // loads below it (other test modules, `conftest.py` in a sub-folder) is its.
                let collected = !t.ends_with(".py")
                    && test_places.iter().any(|p| within(p, &d) || within(&d, p));
                if collected && !collect_dirs.contains(&d) {
                    collect_dirs.push(d.clone());
                }
                shadow_dirs.insert(d);
            }
        }
        // A user base or a Python home test.sh names (`PYTHONUSERBASE=/opt/pyuser`): its tree
        // is searched for modules and `.pth` files as the toolchain's.
        for d in search_dirs(test_sh, home, &["PYTHONUSERBASE", "PYTHONHOME"]) {
            trees.push((d.clone(), format!("test.sh makes {d} Python's own folder")));
        }
        // The configuration pytest is told to read (`-c /app/pytest.ini`): its `addopts` would
        // load what the agent names.
        let (pytest_configs, pytest_plugins) = pytest_arguments(test_sh);
        for f in pytest_configs {
            let at: Vec<String> = if f.starts_with('/') {
                vec![f]
            } else {
                working.iter().map(|w| join(w, &f)).collect()
            };
            for f in at {
                files.push((f, PYTEST_READS.into()));
            }
        }
        // A folder the installers take packages from (`pip install -f /opt/wheels x`): the
        // agent's wheel there would be what test.sh installs.
        for d in package_sources(test_sh) {
            let at: Vec<String> = if d.starts_with('/') {
                vec![normalize(&d)]
            } else {
                working.iter().map(|w| normalize(&join(w, &d))).collect()
            };
            for d in at {
                trees.push((d, PACKAGES_FROM.into()));
            }
        }
        for f in pip_requirements(test_sh) {
            let at: Vec<String> = if f.starts_with('/') {
                at_and_from(&f)
            } else {
                working.iter().map(|w| join(w, &f)).collect()
            };
            for f in at {
                files.push((f, PIP_READS.into()));
            }
        }
        if runs_uv(test_sh) {
            for w in &working {
                in_and_above(&mut files, w, UV_PROJECT_FILES, UV_READS);
            }
        }
        modules.retain(|m| !NEVER_IMPORTED.contains(&m.as_str()));
        let start_dirs = {
            // And the folders test.sh makes itself (`mkdir -p /srv/work`).
            let mut dirs = start_dirs(manifest);
            for d in made_dirs(test_sh) {
                let at: Vec<String> = if d.starts_with('/') {
                    vec![normalize(&d)]
                } else {
                    working.iter().map(|w| normalize(&join(w, &d))).collect()
                };
                dirs.extend(at);
            }
            dirs
        };
        Rules {
            trees,
            files,
            shadow_dirs,
            loader_dirs,
            tests_copied: copies_of_tests(test_sh, home, &working),
            installs: installs_packages(test_sh) && !installs_a_folder(test_sh),
            working,
            test_places,
            collect_dirs,
            bin_dirs: BTreeSet::new(),
            test_dirs: BTreeSet::new(),
            home: home.to_string(),
            // A home elsewhere (`HOME=/workspace`, a user's home `/app` in `/etc/passwd`, `/`
            // for an id without one): its hidden entries are the toolchain's as `/root`'s are.
            linked_homes: (home_entry(&format!("{home}/.x")).is_none())
                .then(|| home.to_string())
                .into_iter()
                .collect(),
            every_folder_first: unresolved(test_sh, &[], home),
            start_dirs,
            modules,
            portions,
            anywhere: VERIFIER_MODULES
                .iter()
                .map(|m| m.to_string())
                .chain(installed_modules(test_sh))
                .chain(pytest_plugins)
                .collect(),
            commands: command_names(test_sh),
            skills: skills.to_vec(),
        }
    }

    /// This rule with the folders `test.sh` changes into through a variable of the image's
    /// environment (`cd $APP_HOME`, `ENV APP_HOME=/opt/project`; `env`: `NAME=value` each)
    /// searched first as well.
    pub fn with_image_env(mut self, env: &[String], test_sh: &str) -> Rules {
        let test_sh = &as_read(test_sh);
        // The image's variables are known values: a `cd $APP_HOME` is followed.
        let names: Vec<&str> = env
            .iter()
            .filter_map(|e| Some(e.split_once('=')?.0))
            .collect();
        self.every_folder_first = unresolved(test_sh, &names, &self.home);
        for (name, value) in env.iter().filter_map(|e| e.split_once('=')) {
            let used =
                test_sh.contains(&format!("${name}")) || test_sh.contains(&format!("${{{name}}}"));
            let value = value.trim_end_matches('/');
            if used && value.starts_with('/') && !value.contains(':') {
                self.shadow_dirs.insert(value.to_string());
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
                    "PATH" if !entry.starts_with('/') && !entry.is_empty() => {
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
                        self.loader_dirs.extend(self.working.iter().cloned());
                    }
                    _ => {}
                }
            }
        }
        self
    }

    /// This rule with `dirs`, the folders links named `bin` lead to, read as `bin` folders.
    pub fn with_bin_dirs(mut self, dirs: impl IntoIterator<Item = String>) -> Rules {
        self.bin_dirs.extend(dirs);
        self
    }

    /// This rule with the names of the task's tests (`names`: the entries of its `tests/`
    /// folder) the verifier's where test.sh copies the tests (every name: an agent's folder
    /// there would stop the copy), and, of the test modules pytest collects (`test_*.py`,
    /// `*_test.py`), in the folders it runs in (a relative test path is read there when a copy
    /// or a `cd` fails). A data file of a test's name where test.sh runs stays work: the
    /// agent's output may be named so.
    pub fn with_test_names(mut self, names: &[String]) -> Rules {
        let is_test_module =
            |n: &str| n.ends_with(".py") && (n.starts_with("test_") || n.ends_with("_test.py"));
        let at: Vec<(String, &String)> = self
            .test_places
            .iter()
            .flat_map(|p| names.iter().map(move |n| (p.clone(), n)))
            .chain(
                self.working
                    .iter()
                    .flat_map(|w| names.iter().map(move |n| (w.clone(), n)))
                    .filter(|(_, n)| is_test_module(n)),
            )
            .collect();
        for (place, n) in at {
            let f = join(&place, n);
            if !self.files.iter().any(|(g, _)| *g == f) {
                self.files.push((f, TESTS_LAND.into()));
            }
        }
        self
    }

    /// This rule with every folder and file it names also where links lead it (`resolve`: the
    /// path once every link in it is followed, `None` in a loop): a working folder, a search
    /// folder or a sourced file reached through a link the agent made (or the image has) is
    /// judged where it really is.
    pub fn through_links(&self, resolve: &dyn Fn(&str) -> Option<String>) -> Rules {
        let mut r = self.clone();
        let moved = |p: &str| resolve(p).filter(|q| q != p);
        for (d, why) in &self.trees {
            if let Some(q) = moved(d) {
                r.trees.push((q, format!("{why} (through a link)")));
            }
        }
        for (f, why) in &self.files {
            if let Some(q) = moved(f) {
                r.files.push((q, why.clone()));
            }
        }
        for d in &self.shadow_dirs {
            r.shadow_dirs.extend(moved(d));
        }
        for d in &self.test_dirs {
            r.test_dirs.extend(moved(d));
        }
        r.linked_homes.extend(moved(&self.home));
        r
    }

    /// Adds the folders the task's tests put on `sys.path` (`python`: their sources) to the
    /// folders where a toolchain module's name shadows it (a distribution's metadata there is
    /// work: pytest has loaded its plugins by then, and the tests may read it).
    pub fn with_test_sources(mut self, python: &str) -> Rules {
        self.test_dirs.extend(sys_path_dirs(python));
        self
    }

    /// What an entry of a folder the verifier's Python searches before its toolchain is, when
    /// `path` is or lies in one: a module of a toolchain module's name, or a distribution's
    /// metadata.
    fn on_module_path(&self, path: &str, is_dir: bool, regular: bool) -> Option<Class> {
        self.on_module_path_in(path, is_dir, regular, self.every_folder_first.is_some())
    }

    /// Why the rule fails closed for this trial ([`unresolved`]), if it does.
    pub fn fails_closed(&self) -> Option<&str> {
        self.every_folder_first.as_deref()
    }

    /// Why `path` (of kind `kind`) shadows a toolchain module only because the rule fails
    /// closed ([`unresolved`]): `None` when it does not, or when a folder `test.sh` names
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
        if self.loader_dirs.contains(parent(path))
            && name.starts_with("lib")
            && name.contains(".so")
        {
            return Class::Toolchain("a library's name where the loader searches".into());
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
        if let Some(entry) = home_entry(path).or_else(linked_home)
            && entry.starts_with('.')
        {
            return Class::Toolchain(format!("{entry} is a hidden entry of a home folder"));
        }
        if let Some(class) = self.on_module_path(path, is_dir, regular) {
            return class;
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
    // Run with `-S`, then `site.main()` under a finder of last resort: the names the
    // interpreter's start-up looks for and misses (Debian's `sitecustomize` tries
    // `apport_python_hook`) are the toolchain's names too.
    let code = r#"import sys, json, os
class _Miss:
    names = set()
    def find_spec(self, name, path=None, target=None):
        _Miss.names.add(name.split(".")[0])
        return None
_miss = _Miss()
sys.meta_path.append(_miss)
try:
    import site
    site.main()
except Exception:
    site = None
try:
    sys.meta_path.remove(_miss)
except ValueError:
    pass
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
# A `.pth` line naming a folder the image lacks: `site` adds it once it exists (the agent's).
for d in list(tool):
    try:
        names = [n for n in os.listdir(d) if n.endswith(".pth")]
    except Exception:
        names = []
    for n in names:
        try:
            with open(os.path.join(d, n)) as f:
                for line in f:
                    line = line.strip()
                    if line and line[0] != chr(35) and not line.startswith(("import ", "import\t")):
                        q = os.path.normpath(os.path.join(d, line))
                        if not os.path.exists(q):
                            tool.add(q)
        except Exception:
            pass
mods = set(getattr(sys, "stdlib_module_names", ())) | set(sys.builtin_module_names) | _Miss.names | {n.split(".")[0] for n in sys.modules}
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
           out=$(\"$p\" -S -c {code} 2>/dev/null) && echo \"SKILLSCOPE-PYTHON $p $out\"; done; done; true",
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

    /// The second red team's forgeries (2026-12-07), judged where the reader cannot follow
    /// test.sh (`cd ~root`, `cd ../root`, `PYTHONPATH="$SRC:…"`, `su -`, a `.pth` line naming
    /// a folder the image lacks): the verifier's own modules are its wherever they stand, what
    /// test.sh installs joins them, a program test.sh runs is the verifier's in any `bin`
    /// folder — while an honest project's files of other names stay work.
    #[test]
    fn the_verifiers_modules_and_programs_are_its_anywhere() {
        let r = rules_with(
            "TOOLS=/opt/x/bin; export PATH=\"$TOOLS:$PATH\"\ncd ~root && mkdir -p /logs/verifier\npython3 -m pip install /tests/answerlib-1.0-py3-none-any.whl pytest-json-ctrf==0.3.5\npytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py",
            "",
        );
        for (p, m) in [
            ("/root/pytest.py", "pytest"),
            ("/root/src/pytest.py", "pytest"),
            ("/home/u/lib/pytest/__init__.py", "pytest"),
            ("/srv/x/_pytest/__init__.py", "_pytest"),
            ("/tmp/pluggy.py", "pluggy"),
            ("/opt/project-src/org/python/core.py", "org.python.core"),
            ("/opt/p/org/__init__.py", "org.python.core"),
            ("/opt/p/org.py", "org.python.core"),
            ("/app/lib/answerlib/__init__.py", "answerlib"),
            ("/app/pytest_json_ctrf.py", "pytest_json_ctrf"),
            // A link to a package, or a program, of a verifier module's name.
            ("/root/src/pytest", "pytest"),
        ] {
            assert_eq!(r.classify(p, false, &[]), Class::Shadow(m.into()), "{p}");
        }
        for p in ["/opt/x/bin/mkdir", "/opt/x/bin/pytest"] {
            assert!(
                matches!(r.classify(p, false, &[]), Class::Toolchain(_)),
                "{p}"
            );
        }
        for p in [
            "/app/src/org/example/Main.java",
            "/app/lib/answers.py",
            "/app/bin/report",
            "/app/pytest_notes.txt",
            "/app/docs/pytest.md",
        ] {
            assert_eq!(r.classify(p, false, &[]), Class::Work, "{p}");
        }
        assert_eq!(r.classify("/app/lib/pytest", true, &[]), Class::Work);
        // The configuration pytest is told to read, and the plugins it is told to load.
        let c = rules_with(
            "cd /app\npytest -c pytest.ini --config-file=/opt/cfg.toml -p forgeplug -p no:cacheprovider /tests",
            "",
        );
        for p in ["/app/pytest.ini", "/opt/cfg.toml"] {
            assert!(
                matches!(c.classify(p, false, &[]), Class::Toolchain(_)),
                "{p}"
            );
        }
        assert_eq!(
            c.classify("/srv/x/forgeplug.py", false, &[]),
            Class::Shadow("forgeplug".into())
        );
        assert_eq!(
            c.classify("/srv/x/cacheprovider.py", false, &[]),
            Class::Work
        );
        assert!(names_module(
            "/a/org/python/core/__init__.py",
            "org.python.core"
        ));
        assert!(!names_module("/a/python/core.py", "org.python.core"));
        assert!(!names_module("/a/org/core.py", "org.python.core"));
    }

    fn rules() -> Rules {
        rules_with(
            "source $HOME/.local/bin/env\n. /opt/setup.sh\nexport PATH=/app/kona:$PATH\nPYTHONPATH=\"/root/src:${PYTHONPATH}\" pytest",
            "",
        )
    }

    fn rules_with(test_sh: &str, tests: &str) -> Rules {
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
        use super::super::manifest::FileKind;
        let tar = super::super::manifest::tests::tar_of(&[
            ("app/.venv/pyvenv.cfg", FileKind::File, "home = /usr/bin"),
            ("usr/local/lib/python3.12/os.py", FileKind::File, ""),
            // A namespace package of the toolchain: no `__init__.py`, modules below.
            (
                "usr/local/lib/python3.12/site-packages/mpl_toolkits/mplot3d/__init__.py",
                FileKind::File,
                "",
            ),
            // Folders a careless distribution leaves: no namespace anything imports.
            (
                "usr/local/lib/python3.12/site-packages/tests/sub/__init__.py",
                FileKind::File,
                "",
            ),
            (
                "usr/local/lib/python3.12/site-packages/tools/run.py",
                FileKind::File,
                "",
            ),
            // A second installation, off PATH (`cp -a /usr/local /opt/py`).
            ("opt/py/bin/python3", FileKind::File, ""),
            ("opt/py/lib/python3.11/os.py", FileKind::File, ""),
        ]);
        let m = Manifest::from_tar(&tar[..], Default::default()).unwrap();
        Rules::new(
            &m,
            &toolchain,
            "/app",
            test_sh,
            "/root",
            &["/root/.claude/skills".into()],
        )
        .with_test_sources(tests)
    }

    /// Asserts that each of `paths` (a file) is the toolchain's under `r`.
    fn assert_toolchain(r: &Rules, paths: &[&str]) {
        for p in paths {
            assert!(
                matches!(r.classify(p, false, &[]), Class::Toolchain(_)),
                "{p}: {:?}",
                r.classify(p, false, &[])
            );
        }
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
    fn what_red_teaming_found_is_judged_by_what_reads_it() {
        let r = rules();
        // A PYTHONPATH folder: shadowing names flagged, the rest work.
        assert_eq!(
            r.classify("/root/src/json.py", false, &[]),
            Class::Shadow("json".into())
        );
        assert_eq!(r.classify("/root/src/model.py", false, &[]), Class::Work);
        // `.pth` outside a site folder, a project's `.config` and `.cache` are work; a home's
        // are not.
        for p in [
            "/app/model.pth",
            "/app/.config/settings.json",
            "/app/.cache/hf/w.bin",
        ] {
            assert_eq!(r.classify(p, false, &[]), Class::Work, "{p}");
        }
        assert_toolchain(&r, &["/root/.cache/pip/x", "/home/u/.config/x"]);
        // The tests copied into /app: `__init__.py` there and above, and the tests' names
        // (also as folders) where they land or are read.
        let sh = "cp /tests/test_outputs.py /opt/eval/ && cd /opt/eval\n\
                  [ -f .venv/bin/activate ] && source .venv/bin/activate\n\
                  export LD_LIBRARY_PATH=/opt/native:$LD_LIBRARY_PATH\npytest test_outputs.py";
        let c =
            rules_with(sh, "").with_test_names(&["test_outputs.py".into(), "expected.json".into()]);
        assert_toolchain(
            &c,
            &[
                "/opt/eval/__init__.py",
                "/opt/__init__.py",
                "/opt/eval/test_outputs.py",
                "/opt/eval/test_outputs.py/test_mine.py",
                "/app/test_outputs.py",
                // A relative file test.sh sources, from each folder it runs in.
                "/opt/eval/.venv/bin/activate",
                "/app/.venv/bin/activate",
                // The loader's folders, and a library's name where an empty entry searches.
                "/opt/native/libfoo.so",
                "/opt/eval/libpython3.11.so.1.0",
            ],
        );
        assert_eq!(c.classify("/opt/eval/answer.txt", false, &[]), Class::Work);
        // A data file of a test's name: the verifier's where the tests are copied, the agent's
        // output where test.sh only runs.
        assert_toolchain(&c, &["/opt/eval/expected.json"]);
        assert_eq!(c.classify("/app/expected.json", false, &[]), Class::Work);
        assert_eq!(
            c.classify("/opt/eval/pkg/__init__.py", false, &[]),
            Class::Work
        );
        // The image's relative PATH entry and loader folders.
        let img = rules_with("pytest", "").with_image_env(
            &[
                "PATH=node_modules/.bin:/usr/bin".into(),
                "LD_LIBRARY_PATH=/opt/nv/lib:".into(),
            ],
            "pytest",
        );
        assert_toolchain(
            &img,
            &[
                "/app/node_modules/.bin/pytest",
                "/opt/nv/lib/x.so",
                "/app/libpython3.11.so.1.0",
            ],
        );
        assert_eq!(
            img.classify("/app/ext.cpython-311.so", false, &[]),
            Class::Work
        );
    }

    #[test]
    fn what_pytest_collects_below_a_folder_where_the_tests_land_is_its() {
        let sh = "mkdir -p /app/tests\ncp /tests/test_outputs.py /app/tests/\npytest /app/tests";
        let r = rules_with(sh, "");
        assert_toolchain(
            &r,
            &[
                "/app/tests/test_aaa_setup.py",
                "/app/tests/fixtures/conftest.py",
                "/app/tests/unit/check_test.py",
            ],
        );
        assert!(r.classify("/app/tests/data.csv", false, &[]).is_work());
        assert!(r.classify("/app/other/test_x.py", false, &[]).is_work());
        // Given one file, pytest runs that file only.
        let one = "cp /tests/test_outputs.py /app/tests/\npytest /app/tests/test_outputs.py";
        let r = rules_with(one, "");
        assert!(
            r.classify("/app/tests/test_aaa_setup.py", false, &[])
                .is_work()
        );
    }

    #[test]
    fn what_test_sh_installs_shadows_in_any_case_and_with_its_dependencies() {
        let r = rules_with(
            "pip3 install fonttools==4.55 openpyxl\npython3 -m pytest /tests",
            "",
        );
        for (p, m) in [
            ("/app/fontTools/__init__.py", "fonttools"),
            ("/app/et_xmlfile.py", "et_xmlfile"),
            ("/srv/deep/openpyxl.py", "openpyxl"),
        ] {
            assert_eq!(r.classify(p, false, &[]), Class::Shadow(m.into()), "{p}");
        }
        assert!(r.classify("/app/report.xlsx", false, &[]).is_work());
    }

    #[test]
    fn carried_modules_where_python_starts_are_named_for_the_check_after_the_tests() {
        let r = rules_with(
            "pip3 install sheetkit\ncd /app && python3 -m pytest /tests",
            "",
        );
        assert!(r.installs_packages());
        let m = |p: &str| r.module_searched_first(p, FileKind::File);
        assert_eq!(m("/app/cellcore.py").as_deref(), Some("cellcore"));
        assert_eq!(m("/app/kit/__init__.py").as_deref(), Some("kit"));
        assert_eq!(m("/app/kit/sub.py"), None);
        assert_eq!(m("/app/data.csv"), None);
        assert_eq!(m("/opt/elsewhere/x.py"), None);
        assert_eq!(r.module_searched_first("/app/kit", FileKind::Dir), None);
        // No installer, or the agent's own folder installed: no check.
        assert!(!rules_with("python3 -m pytest /tests", "").installs_packages());
        assert!(!rules_with("pip install -e /app\npytest /tests", "").installs_packages());
        assert!(!rules_with("cd /app && pip3 install .", "").installs_packages());
        assert!(
            rules_with("pip3 install -r /tests/req.txt -t /opt/x pytest", "").installs_packages()
        );
    }

    #[test]
    fn node_modules_above_the_tests_are_the_toolchain() {
        let r = rules_with("node /tests/test_outputs.js", "");
        assert_toolchain(&r, &["/node_modules/tinyschema/index.js"]);
        assert!(
            r.classify("/app/node_modules/left-pad/index.js", false, &[])
                .is_work()
        );
    }

    #[test]
    fn a_home_outside_root_and_home_has_its_hidden_entries_kept() {
        let m = Manifest::default();
        let t = Toolchain::default();
        let r = Rules::new(&m, &t, "/app", "", "/workspace", &[]);
        assert_toolchain(
            &r,
            &[
                "/workspace/.cache/uv/x",
                "/workspace/.gitconfig",
                "/workspace/.ipython/x.py",
            ],
        );
        assert!(r.classify("/workspace/out.txt", false, &[]).is_work());
        assert!(r.classify("/app/.hidden-output", false, &[]).is_work());
        // An id without a home: the runtime's HOME is `/`.
        let r = Rules::new(&m, &t, "/app", "", "/", &[]);
        assert_toolchain(&r, &["/.cache/uv/x", "/.gitconfig"]);
        assert!(r.classify("/out.txt", false, &[]).is_work());
    }

    #[test]
    fn folders_the_installers_take_packages_from_are_the_toolchain() {
        // The agent's wheel in a folder pip is told to take packages from would be what
        // test.sh installs (an offline image's wheels, named by test.sh or by the image).
        let sh = "cd /app\npip install --no-index -f /opt/wheels --find-links=file:///srv/w/ \
                  -i file:///var/idx openpyxl\npip install --find-links wheels x\n\
                  pip install -i https://pypi.org/simple y --extra-index-url \"$IDX\"";
        let r = rules_with(sh, "");
        assert_toolchain(
            &r,
            &[
                "/opt/wheels/openpyxl-9.9-py3-none-any.whl",
                "/srv/w/x.whl",
                "/var/idx/openpyxl/index.html",
                "/app/wheels/x-1.0.whl",
            ],
        );
        assert!(r.classify("/app/out.csv", false, &[]).is_work());
        // `-f` and `-i` name package sources only in an installer's command: a test of a file
        // names the agent's output (the example tasks' verifiers).
        let test = rules_with(
            "OUT=/root/output/celsius.txt\nif [ ! -f \"$OUT\" ]; then echo missing; fi\n\
             grep -i -f /tests/patterns.txt /app/log.txt\napt-get install -y ./tool.zip",
            "",
        );
        for p in ["/root/output/celsius.txt", "/app/log.txt", "/app/tool.zip"] {
            assert!(test.classify(p, false, &[]).is_work(), "{p}");
        }
        let sh = "pip install openpyxl";
        let image = rules_with(sh, "").with_image_env(
            &[
                "PIP_FIND_LINKS=/opt/wheels file:///opt/more".into(),
                "UV_INDEX=local=file:///srv/index".into(),
                "PIP_INDEX_URL=https://pypi.org/simple".into(),
                "UV_CACHE_DIR=/opt/uv-cache".into(),
                "PIP_CONSTRAINT=/opt/eval/constraints.txt".into(),
            ],
            sh,
        );
        assert_toolchain(
            &image,
            &[
                "/opt/wheels/a.whl",
                "/opt/more/b.whl",
                "/srv/index/simple/openpyxl/index.html",
                "/opt/uv-cache/archive-v0/x/openpyxl/compat/numbers.py",
                "/opt/eval/constraints.txt",
            ],
        );
        assert!(image.classify("/opt/eval/out.txt", false, &[]).is_work());
        // Package files installed by their path: their folder.
        let by_path = rules_with(
            "pip3 install --no-index /wheels/*.whl /opt/w/et_xmlfile-2.0.0-py3-none-any.whl",
            "",
        );
        assert_toolchain(
            &by_path,
            &[
                "/wheels/zz_pass-1.0-py3-none-any.whl",
                "/opt/w/et_xmlfile-2.0.0-py3-none-any.whl",
            ],
        );
        assert!(image.classify("/srv/other/a.whl", false, &[]).is_work());
    }

    #[test]
    fn the_folders_the_loaders_configuration_names_are_the_toolchain() {
        let m = Manifest {
            loader_dirs: vec!["/opt/py/lib".into()],
            ..Default::default()
        };
        let r = Rules::new(&m, &Toolchain::default(), "/app", "", "/root", &[]);
        assert_toolchain(&r, &["/opt/py/lib/libpython3.11.so.1.0"]);
        assert!(r.classify("/opt/old/x.so", false, &[]).is_work());
    }

    #[test]
    fn the_toolchain_is_never_work() {
        let r = rules();
        assert_toolchain(
            &r,
            &[
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
                "/usr/local/lib/python3.12/site-packages/hook.pth",
                "/root/.bashrc",
                "/root/.config/pip/pip.conf",
                "/app/uv.toml",
                "/conftest.py",
                "/pyproject.toml",
                "/opt/setup.sh",
                "/app/kona/pytest",
                "/root/.m2/repository/x.jar",
                "/home/dev/.gitconfig",
            ],
        );
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
        // A package shadows by its `__init__`; without one a folder is a namespace portion, which
        // the toolchain's module wins over.
        assert_eq!(
            r.classify("/app/json/__init__.py", false, &[]),
            Class::Shadow("json".into())
        );
        assert_eq!(r.classify("/app/json", true, &[]), Class::Work);
        assert_eq!(r.classify("/app/json/decoder.py", false, &[]), Class::Work);
        assert_eq!(
            r.classify(
                "/srv/lib/_pytest/__init__.cpython-312-x86_64-linux-gnu.so",
                false,
                &[]
            ),
            Class::Shadow("_pytest".into())
        );
        // Byte code without its source is imported too.
        assert_eq!(
            r.classify("/app/pytest.pyc", false, &[]),
            Class::Shadow("pytest".into())
        );
        // A module the toolchain imports when it exists (`copy` tries Jython's `org`).
        assert_eq!(
            r.classify("/app/org/__init__.py", false, &[]),
            Class::Shadow("org".into())
        );
        // And one a package the tests import tries as it loads (`openpyxl`: `defusedxml`).
        assert_eq!(
            r.classify("/app/defusedxml.py", false, &[]),
            Class::Shadow("defusedxml".into())
        );
        // Python's startup hooks are modules of the toolchain's too.
        assert_eq!(
            r.classify("/app/sitecustomize.py", false, &[]),
            Class::Shadow("sitecustomize".into())
        );
        // Elsewhere, and under other names, they are work — but the verifier's own modules
        // (pytest and what it imports first) are its wherever they stand.
        assert_eq!(r.classify("/app/sub/json.py", false, &[]), Class::Work);
        assert_eq!(
            r.classify("/app/sub/pytest.py", false, &[]),
            Class::Shadow("pytest".into())
        );
        assert_eq!(r.classify("/app/report.py", false, &[]), Class::Work);
        // CPython's regression suite is imported by no verifier: a scratch `test.py` is work,
        // also where the image's standard library has a `test` package (Debian's).
        let image = crate::runner::work::manifest::tests::manifest_of(&[
            ("usr/lib/python3.11/test/__init__.py", FileKind::File, ""),
            ("usr/lib/python3.11/types.py", FileKind::File, ""),
        ]);
        let mut toolchain = Toolchain::default();
        toolchain.python.push(PythonPaths {
            interpreter: "/usr/bin/python3".into(),
            toolchain: vec!["/usr/lib/python3.11".into()],
            project: vec![],
            modules: ["test", "types"].into_iter().map(String::from).collect(),
        });
        let debian = Rules::new(&image, &toolchain, "/app", "", "/root", &[]);
        assert_eq!(debian.classify("/app/test.py", false, &[]), Class::Work);
        assert_eq!(
            debian.classify("/app/test/__init__.py", false, &[]),
            Class::Work
        );
        assert_eq!(
            debian.classify("/app/types.py", false, &[]),
            Class::Shadow("types".into())
        );
    }

    /// A test.sh that runs uv reads the project files of its working folders and the folders
    /// above them (the attack: a `[tool.uv]` table pointing `find-links` at the agent's own
    /// wheels for `uv add pytest`, or `uv run` installing a plugin the project declares); one
    /// that does not, leaves them the agent's work.
    #[test]
    fn uv_project_files_in_and_above_the_working_folders_are_not_work() {
        let uvx = "source $HOME/.local/bin/env\ncd /srv/job\nuvx -p 3.13 -w pytest==8.4.1 pytest /tests/t.py";
        let r = rules_with(uvx, "");
        assert_toolchain(
            &r,
            &[
                "/app/pyproject.toml",
                "/app/uv.lock",
                "/srv/job/pyproject.toml",
                "/srv/pyproject.toml",
                "/pyproject.toml",
            ],
        );
        assert_eq!(
            r.classify("/app/src/pyproject.toml", false, &[]),
            Class::Work
        );
        let plain = rules_with("cd /srv/job\npytest /tests/t.py", "");
        assert_eq!(
            plain.classify("/app/pyproject.toml", false, &[]),
            Class::Work
        );
        assert!(runs_uv("set -e\n/root/.local/bin/uv run pytest"));
        assert!(runs_uv("if uvx \\\n -p 3.13 pytest; then"));
        assert!(!runs_uv(
            "curl -LsSf https://astral.sh/uv/0.9.7/install.sh | sh\npytest"
        ));
    }

    /// `python3 -m pytest` after test.sh's `cd /root` puts /root first on sys.path, whatever the
    /// image's working folder (the attack: /root/pytest.py, carried as work, ran as pytest).
    #[test]
    fn namespace_portions_links_and_metadata_of_any_case_shadow_the_toolchain() {
        let r = rules_with("python3 -m pytest /tests/test_outputs.py", "");
        // `copy` tries `org.python.core`; `mpl_toolkits` is a namespace package of the image:
        // portions first on `sys.path` supply their modules, `__init__.py` or not.
        for (p, m) in [
            ("/app/org/python/core.py", "org"),
            ("/app/mpl_toolkits/mplot3d/__init__.py", "mpl_toolkits"),
            ("/app/mpl_toolkits/mplot3d/axes3d.py", "mpl_toolkits"),
            // A link (or a file without a suffix) by its whole name.
            ("/app/pytest", "pytest"),
            // `/`: `cd "$(dirname "$0")/.."` from `/tests`.
            ("/pytest.py", "pytest"),
        ] {
            assert_eq!(r.classify(p, false, &[]), Class::Shadow(m.into()), "{p}");
        }
        assert_eq!(
            r.classify(
                "/app/pytest_forge-1.0.DIST-INFO/entry_points.txt",
                false,
                &[]
            ),
            Class::Toolchain(METADATA_ON_PATH.into())
        );
        // Data under a namespace's name, and folders of other names, are work.
        for p in [
            "/app/org/notes.txt",
            "/app/html/index.html",
            "/app/data/reader.py",
            "/app/solution.py",
            "/app/README",
            "/app/tests/test_solution.py",
            "/app/tests/sub/__init__.py",
            "/app/tools/run.py",
        ] {
            assert_eq!(r.classify(p, false, &[]), Class::Work, "{p}");
        }
    }

    #[test]
    fn every_python_installation_of_the_image_and_interpreter_names_are_the_toolchain() {
        let r = rules_with("/opt/py/bin/python3 -m pytest /tests/test_outputs.py", "");
        assert_toolchain(
            &r,
            &[
                "/opt/py/lib/python3.11/site-packages/pytest/__init__.py",
                "/opt/py/lib/python3.11/json/__init__.py",
                "/opt/py/bin/python3",
                // A project's `.venv` without its `pyvenv.cfg` still has an interpreter's name.
                "/srv/.venv/bin/python",
                "/srv/env/bin/python3.11",
                "/app/tools/bin/pytest",
            ],
        );
        assert_eq!(r.classify("/app/bin/report.sh", false, &[]), Class::Work);
        assert!(is_interpreter_name("python3.12") && !is_interpreter_name("python3.x"));
    }

    /// A form the reader cannot name (the third red team's `cd $'/root'`, an environment read
    /// from a file at run time): every folder is searched first, and the file is the toolchain's.
    #[test]
    fn what_test_sh_reaches_in_forms_not_followed_fails_closed() {
        let named = rules_with("cd /srv && python3 -m pytest", "");
        assert_eq!(named.classify("/opt/deep/json.py", false, &[]), Class::Work);
        let unnamed = rules_with("cd $'/root' && python3 -m pytest", "");
        for p in ["/opt/py/json.py", "/usr/local/json.py", "/json.py"] {
            assert_eq!(
                unnamed.classify(p, false, &[]),
                Class::Shadow("json".into()),
                "{p}"
            );
        }
        assert_eq!(
            unnamed.classify("/opt/py/report.py", false, &[]),
            Class::Work
        );
        // Why is recorded beside the flag: only failing closed made `/opt/py` searched first;
        // a folder test.sh names (`/srv/lib`, a project folder on `sys.path`) needs no reason.
        let why = unnamed
            .shadows_by_failing_closed("/opt/py/json.py", FileKind::File)
            .unwrap();
        assert!(
            why.contains("$'/root'") && why.contains("fails closed"),
            "{why}"
        );
        assert!(unnamed.fails_closed().is_some() && named.fails_closed().is_none());
        assert_eq!(
            unnamed.shadows_by_failing_closed("/srv/lib/json.py", FileKind::File),
            None
        );
        assert_eq!(
            unnamed.shadows_by_failing_closed("/opt/py/report.py", FileKind::File),
            None
        );
        assert_eq!(
            named.shadows_by_failing_closed("/opt/py/json.py", FileKind::File),
            None
        );
        // Only a folder of the image can be where test.sh starts Python unnamed: the agent's
        // own folders, and the image's packages, are not (an `__init__.py` the agent adds to
        // an image folder changes nothing).
        assert_eq!(
            unnamed.classify("/opt/deep/json.py", false, &[]),
            Class::Work
        );
        let image = crate::runner::work::manifest::tests::manifest_of(&[
            ("app/pkg/__init__.py", FileKind::File, ""),
            ("app/pkg/data/x.csv", FileKind::File, ""),
            ("srv/", FileKind::Dir, ""),
        ]);
        let dirs = start_dirs(&image);
        let dirs: Vec<&str> = dirs.iter().map(String::as_str).collect();
        assert_eq!(dirs, ["/", "/app", "/app/pkg/data", "/srv"]);
        // A folder test.sh makes itself is one it can start Python in, named or not.
        let made = rules_with(
            "mkdir -p /srv/work\ncd $'/srv/work' && python3 -m pytest",
            "",
        );
        assert_eq!(
            made.classify("/srv/work/json.py", false, &[]),
            Class::Shadow("json".into())
        );
        let env = rules_with("env -C /srv/run python3 -m pytest", "");
        assert_eq!(
            env.classify("/srv/run/json.py", false, &[]),
            Class::Shadow("json".into())
        );
        // The image's own variable is a known value.
        let sh = "cd \"$APP_HOME\" && python3 -m pytest";
        let image = rules_with(sh, "").with_image_env(&["APP_HOME=/opt/app".into()], sh);
        assert_eq!(image.classify("/var/deep/json.py", false, &[]), Class::Work);
        let sh = "cd /app\nexport $(grep -v '^#' .env | xargs)\npython3 -m pytest";
        let env = rules_with(sh, "");
        assert_eq!(
            env.classify("/app/.env", false, &[]),
            Class::Toolchain(SOURCED.into())
        );
    }

    #[test]
    fn folders_test_sh_reaches_by_a_shell_a_variable_or_a_relative_path_are_searched() {
        let shell = rules_with(
            "bash -c \"cd /srv && python3 -m pytest /tests/test_outputs.py\"",
            "",
        );
        assert_eq!(
            shell.classify("/srv/pytest.py", false, &[]),
            Class::Shadow("pytest".into())
        );
        let env = rules_with(
            "cd $APP_HOME
python3 -m pytest",
            "",
        )
        .with_image_env(
            &["APP_HOME=/opt/project".into(), "UNUSED=/var/x".into()],
            "cd $APP_HOME
python3 -m pytest",
        );
        assert_eq!(
            env.classify("/opt/project/pytest.py", false, &[]),
            Class::Shadow("pytest".into())
        );
        assert_eq!(env.classify("/var/x/json.py", false, &[]), Class::Work);
        let rel = rules_with(
            "cd /app
PYTHONPATH=src pytest /tests/test_outputs.py",
            "",
        );
        // A module folder on PYTHONPATH is searched first: a toolchain module's name there
        // shadows it; its other files are the project's (work).
        assert_eq!(
            rel.classify("/app/src/pytest.py", false, &[]),
            Class::Shadow("pytest".into())
        );
        assert_eq!(
            rel.classify("/app/src/solution.py", false, &[]),
            Class::Work
        );
        assert_eq!(
            relative_search_dirs("PYTHONPATH=src:./lib:/abs:$X pytest", MODULE_PATHS),
            vec!["src", "./lib"]
        );
    }

    #[test]
    fn what_pytest_and_pip_read_where_test_sh_puts_them_is_not_work() {
        // Tests copied into the working folder: pytest reads the configuration there and above.
        let copied = rules_with(
            "cp /tests/test_outputs.py /app/ && cd /app
pytest test_outputs.py",
            "",
        );
        for p in [
            "/app/conftest.py",
            "/app/pytest.toml",
            "/app/pytest.ini",
            "/app/tox.ini",
        ] {
            assert_eq!(
                copied.classify(p, false, &[]),
                Class::Toolchain(PYTEST_READS.into()),
                "{p}"
            );
        }
        let relative = rules_with("cp /tests/test_outputs.py .\npytest test_outputs.py", "");
        assert_eq!(
            relative.classify("/app/conftest.py", false, &[]),
            Class::Toolchain(PYTEST_READS.into())
        );
        // Data copied beside the work: no test there, the agent's project files are its own.
        let data = rules_with("cp /tests/expected.npz /root/expected.npz\npytest", "");
        assert_eq!(
            data.classify("/root/pyproject.toml", false, &[]),
            Class::Work
        );
        // Not copied: pytest runs the tests in /tests, and the agent's conftest is its own.
        let plain = rules_with("python3 -m pytest /tests/test_outputs.py", "");
        assert_eq!(plain.classify("/app/conftest.py", false, &[]), Class::Work);
        assert_eq!(
            test_copies("cp -r /tests /work/t; cp /tests/test_a.py /srv/x.py; cp a b"),
            vec!["/work/t".to_string(), "/work/t/tests".into(), "/srv".into()]
        );
        // pip installs what the requirement files name.
        let pip = rules_with(
            "cd /app
pip install --no-index -r requirements.txt
pytest",
            "",
        );
        assert_eq!(
            pip.classify("/app/requirements.txt", false, &[]),
            Class::Toolchain(PIP_READS.into())
        );
        assert_eq!(
            pip_requirements(
                "pip install -r a.txt --constraint=/c.txt -rb.txt; uv pip install -c d.txt"
            ),
            vec!["a.txt", "/c.txt", "b.txt", "d.txt"]
        );
    }

    #[test]
    fn the_folders_test_sh_changes_into_are_searched_first() {
        let r = rules_with("cd /root\npython3 -m pytest /tests/test_outputs.py", "");
        assert_eq!(
            r.classify("/root/pytest.py", false, &[]),
            Class::Shadow("pytest".into())
        );
        assert_eq!(r.classify("/root/answer.txt", false, &[]), Class::Work);
        assert_eq!(
            working_dirs(
                "cd /root && pytest\n(cd \"/opt/x/\"; make)\npushd /srv >/dev/null\ncd\ncd $OTHER\ncd rel",
                "/home/u"
            ),
            vec![
                "/root".to_string(),
                "/opt/x".into(),
                "/srv".into(),
                "/home/u".into(),
                "rel".into()
            ]
        );
        // A relative one is read from every folder known before it (the fourth red team's
        // `cd /opt/project; cd src`, `pushd src`, `cd "$(dirname "$0")/../workspace"`).
        for sh in [
            "cd /opt/project\ncd src\npython3 -m pytest",
            "pushd /opt/project >/dev/null\npushd src\npython3 -m pytest",
        ] {
            let r = rules_with(sh, "");
            assert_eq!(
                r.classify("/opt/project/src/json.py", false, &[]),
                Class::Shadow("json".into()),
                "{sh}"
            );
        }
        let r = rules_with(
            "cd \"$(dirname \"$0\")/../workspace\"\npython3 -m pytest",
            "",
        );
        assert_eq!(
            r.classify("/workspace/json.py", false, &[]),
            Class::Shadow("json".into())
        );
    }

    /// Where pytest is told to find tests (however they got there) is where its configuration,
    /// `conftest.py` and the tests' imports are read (the fourth red team: `install`, `tar`,
    /// `mv`, a heredoc, `$(mktemp -d)`).
    #[test]
    fn where_pytest_finds_tests_is_read_as_the_verifiers() {
        let r = rules_with(
            "install -D -m 644 /tests/test_outputs.py /srv/eval/test_outputs.py\n\
             pytest --ctrf /logs/verifier/ctrf.json /srv/eval/test_outputs.py -rA",
            "",
        );
        assert!(matches!(
            r.classify("/srv/eval/conftest.py", false, &[]),
            Class::Toolchain(_)
        ));
        assert!(matches!(
            r.classify("/srv/pytest.ini", false, &[]),
            Class::Toolchain(_)
        ));
        assert_eq!(
            r.classify("/srv/eval/json.py", false, &[]),
            Class::Shadow("json".into())
        );
        // A relative test file is in the working folders (`cd /tests && cp test_outputs.py
        // /app/ && cd /app`, then `pytest test_outputs.py`).
        let r = rules_with(
            "cd /tests && cp test_outputs.py /srv/x/ && cd /srv/x\npytest test_outputs.py",
            "",
        );
        assert!(matches!(
            r.classify("/srv/x/conftest.py", false, &[]),
            Class::Toolchain(_)
        ));
        let r = rules_with(
            "WORK=$(mktemp -d)\ncp /tests/test_outputs.py \"$WORK\"/\ncd \"$WORK\"\npytest test_outputs.py",
            "",
        );
        for f in ["/tmp/conftest.py", "/tmp/pytest.ini"] {
            assert!(
                matches!(r.classify(f, false, &[]), Class::Toolchain(_)),
                "{f}"
            );
        }
        // Failing closed, a module in a folder the agent made is no module of a folder
        // searched first (an honest `/app/src/kit/types.py`), one in the image's folders is.
        let r = rules_with("export HOME=/srv\npytest /tests", "");
        assert_eq!(r.classify("/app/src/kit/json.py", false, &[]), Class::Work);
        assert_eq!(
            r.classify("/opt/py/json.py", false, &[]),
            Class::Shadow("json".into())
        );
        // The image's own home set again is no unknown; a user base is Python's own folder.
        let r = rules_with(
            "export HOME=/root\nexport PYTHONUSERBASE=/opt/pyuser\npytest",
            "",
        );
        assert_eq!(r.classify("/opt/py/json.py", false, &[]), Class::Work);
        assert!(matches!(
            r.classify("/opt/pyuser/lib/python3.11/site-packages/x.pth", false, &[]),
            Class::Toolchain(_)
        ));
    }

    #[test]
    fn the_folders_the_tests_put_on_sys_path_are_searched_first() {
        let r = rules_with("", "import sys\nsys.path.insert(0, '/root/src')\n");
        assert_eq!(
            r.classify("/root/src/json.py", false, &[]),
            Class::Shadow("json".into())
        );
        // A package installed there keeps its metadata.
        assert_eq!(
            r.classify("/root/src/lib-1.0.dist-info/METADATA", false, &[]),
            Class::Work
        );
        assert_eq!(
            sys_path_dirs(
                "sys.path.insert(0, \"/app/\")\nsys.path.append('/w') ; sys.path.insert(0, x)"
            ),
            vec!["/app".to_string(), "/w".into()]
        );
    }

    /// pytest loads the `pytest11` entry points of every distribution on sys.path (the attack:
    /// `/app/pytest_forge-1.0.dist-info` beside `/app/pytest_forge.py`, carried as work, loaded
    /// as a plugin by `python3 -m pytest` in /app).
    #[test]
    fn distribution_metadata_on_the_module_path_is_not_work() {
        let r = rules();
        for p in [
            "/app/pytest_forge-1.0.dist-info",
            "/app/pytest_forge-1.0.dist-info/entry_points.txt",
            "/srv/lib/forge.egg-info/entry_points.txt",
        ] {
            assert!(
                matches!(r.classify(p, false, &[]), Class::Toolchain(ref w) if w == METADATA_ON_PATH),
                "{p}: {:?}",
                r.classify(p, false, &[])
            );
        }
        // A package installed with `pip install --target` into a project folder is work.
        assert_eq!(
            r.classify("/app/vendor/answerlib-1.0.dist-info/METADATA", false, &[]),
            Class::Work
        );
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
