//! The names and lists the rule reads: the system folders, the toolchain's file names and
//! endings, pytest's configuration files, the modules the toolchain imports when they exist,
//! and the reasons recorded beside what is left behind.

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
    // Other runtimes' start-up files read from the working folder: R (`.Rprofile` sourced,
    // `.Renviron` read: `R_LIBS`, …) and Octave (`.octaverc`).
    ".Rprofile",
    ".Renviron",
    ".octaverc",
    // Libraries' own configuration read from the working folder first: matplotlib's
    // `matplotlibrc` (its `backend: module://x` imports `x` by searching).
    "matplotlibrc",
];

/// Entries of a home folder that are the toolchain's though not hidden: data a library the
/// tests use searches there before the image's own copy (NLTK's `~/nltk_data` before
/// `/usr/share/nltk_data`; its tokenizers are pickles, its corpora the tests' expected values).
pub const HOME_DATA: &[&str] = &["nltk_data"];

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
    // fontTools (matplotlib's PDF and SVG output) tries `unicodedata2` and `uharfbuzz`: the
    // seventh red team's trace of a chart saved as PDF.
    "unicodedata2",
    "uharfbuzz",
];

/// Modules that are the verifier's wherever the agent writes them (dotted: every package on the
/// way counts): the test runner itself and what it imports first (`pytest`, `_pytest`,
/// `pluggy`, `iniconfig`), and `org.python.core`, which `copy` imports when it exists. A folder
/// the verifier's Python searches is not always one `test.sh` names as written (`cd ~user`,
/// `PYTHONPATH="$SRC:…"`, a `.pth` line naming a folder the image lacks, `su -`): a module of
/// these names is never carried, and flagged, wherever it stands in the work. The names `test.sh`
/// installs ([`installed_modules`](crate::runner::work::test_sh::installed_modules)) join them.
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

/// The file coverage.py reads its configuration from in the folder it runs in, whether or not
/// `test.sh` is seen to run it (pytest-cov may be started by a configuration): its
/// `[run] plugins` are imported.
pub const COVERAGE_RC: &str = ".coveragerc";

/// The files coverage.py also reads its configuration from in the folder it runs in (their
/// `[coverage:*]` or `[tool.coverage.*]` sections), when `test.sh` runs coverage.
pub const COVERAGE_SHARED: &[&str] = &["setup.cfg", "tox.ini", "pyproject.toml"];

/// Why coverage.py's configuration is not work.
pub const COVERAGE_READS: &str =
    "coverage.py reads it in the folder it runs in and imports the plugins it names";

/// Why a path of a test's name where test.sh copies the tests or runs is not work.
pub const TESTS_LAND: &str = "the task's tests are copied or read there";

/// Why a folder the installers take packages from is not work.
pub const PACKAGES_FROM: &str = "pip or uv installs packages from it (find-links, a file index)";

/// The image's variables that name where pip and uv take packages from: indexes and wheels
/// folders, their caches (uv installs from its cache offline), and the files they read their
/// constraints and settings from.
pub(super) const PACKAGE_SOURCE_SETTINGS: &[&str] = &[
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

/// Standard-library names no verifier imports, and honest agents name their own files so: the
/// `test` package is CPython's regression suite (Debian's `libpython3.N-stdlib` ships its
/// start), which neither pytest, its plugins nor a task's tests import, while an agent's scratch
/// `/app/test.py` is common. A module of this name in a folder searched first is work.
pub(super) const NEVER_IMPORTED: &[&str] = &["test"];

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

/// True for a path in pytest's temporary folders (`/tmp/pytest-of-<user>/pytest-<n>/…`: its
/// `tmp_path`, predictable in a fresh environment): the verifier's tests write there.
pub fn is_pytest_temp(path: &str) -> bool {
    path.strip_prefix("/tmp/pytest-of-")
        .is_some_and(|rest| !rest.is_empty())
}
