//! What `test.sh`'s package installers (pip, uv, poetry, conda, …) are told: the packages they
//! install and the module names those bring, the requirement files and the local folders they
//! take packages from.

use super::*;

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
    let mut out: Vec<String> = Vec::new();
    for words in installer_commands(test_sh) {
        sources_in_words(&words, &mut out);
    }
    out.sort();
    out.dedup();
    out
}

/// The options that name where packages come from.
const SOURCE_OPTIONS: &[&str] = &[
    "-f",
    "--find-links",
    "-i",
    "--index-url",
    "--extra-index-url",
    "--index",
    "--default-index",
];

/// The options that name another file pip reads requirements or constraints from.
const FILE_OPTIONS: &[&str] = &["-r", "--requirement", "-c", "--constraint"];

/// The value of option `w` among `names` in `words` (`-f DIR`, `--find-links=DIR`, `-fDIR`
/// for a one-letter option), at `i`.
fn option_value<'a>(words: &'a [String], i: usize, names: &[&str]) -> Option<&'a str> {
    let w = words[i].as_str();
    if names.contains(&w) {
        return words.get(i + 1).map(String::as_str);
    }
    if let Some((opt, v)) = w.split_once('=')
        && opt.starts_with("--")
        && names.contains(&opt)
    {
        return Some(v);
    }
    names
        .iter()
        .filter(|n| n.len() == 2)
        .find_map(|n| w.strip_prefix(n))
        .filter(|v| !v.is_empty() && !v.starts_with('-') && !w.starts_with("--"))
}

/// Adds to `out` the package sources `words` (one installer command, or one line of a
/// requirement file) name: option values and the folders of package files.
fn sources_in_words(words: &[String], out: &mut Vec<String>) {
    for (i, w) in words.iter().enumerate() {
        if let Some(dir) = option_value(words, i, SOURCE_OPTIONS).and_then(local_package_source) {
            out.push(dir);
        }
        // A package file installed by its path (`pip install /wheels/*.whl`,
        // `/opt/wheels/x-1.0-py3-none-any.whl`, `x @ file:///opt/wheels/x.whl`): its folder is
        // one packages come from.
        let w = w.trim_matches(['"', '\'']);
        let w = w.strip_prefix("file://").unwrap_or(w);
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

/// Most lines kept of one requirement or configuration file.
const MAX_REQUIREMENT_LINES: usize = 64;

/// The lines of a file pip or uv reads that say where packages come from or which other file
/// to read, in one form: a requirement file's `-f`/`--find-links`, `-i`/`--index-url`,
/// `--extra-index-url`, `-r`/`--requirement`, `-c`/`--constraint` lines and its package files
/// (`/wheels/x-1.0-py3-none-any.whl`, `x @ file:///wheels/x.whl`), as written (`\`
/// continuations joined, comments removed); pip's configuration (`pip.conf`, `pip.ini`) and
/// uv's (`uv.toml`, a `pyproject.toml`'s `[tool.uv]`) as the `--find-links`/`--index-url` lines
/// they amount to. `path` is the file's (its name says which kind); empty for text that is not
/// UTF-8 or says none of these. At most 64 lines.
pub fn package_lines(path: &str, bytes: &[u8]) -> Vec<String> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Vec::new();
    };
    let name = path.rsplit('/').next().unwrap_or(path);
    let mut out = match name {
        "pip.conf" | "pip.ini" => pip_config_lines(text),
        "uv.toml" => uv_config_lines(text, false),
        "pyproject.toml" => uv_config_lines(text, true),
        _ => requirement_lines(text),
    };
    out.truncate(MAX_REQUIREMENT_LINES);
    out
}

/// [`package_lines`] of a requirement file.
fn requirement_lines(text: &str) -> Vec<String> {
    // Most files are none: a line pip would read as an option starts with `-`.
    if !(text.starts_with('-')
        || text.contains("\n-")
        || text.contains(".whl")
        || text.contains("file:"))
    {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut line = String::new();
    for raw in text.lines() {
        if let Some(part) = raw.strip_suffix('\\') {
            line.push_str(part);
            continue;
        }
        line.push_str(raw);
        let l = std::mem::take(&mut line);
        // A comment starts a line or follows whitespace (pip's reading).
        let l = match l.find(" #").or_else(|| l.find("\t#")) {
            Some(i) => &l[..i],
            None if l.trim_start().starts_with('#') => "",
            None => &l,
        };
        let l = l.trim();
        // Only an option or a line naming a package file is read further.
        let archive = [".whl", ".tar.gz", ".tar.bz2", ".zip", "file:"]
            .iter()
            .any(|e| l.contains(e));
        if !l.starts_with('-') && !archive {
            continue;
        }
        let words: Vec<String> = l.split_whitespace().map(str::to_string).collect();
        let Some(first) = words.first() else { continue };
        let option = SOURCE_OPTIONS.iter().chain(FILE_OPTIONS).any(|o| {
            first == o
                || first
                    .strip_prefix(o)
                    .is_some_and(|rest| rest.starts_with('='))
                || (o.len() == 2 && first.starts_with(o) && !first.starts_with("--"))
        });
        let mut sources = Vec::new();
        sources_in_words(&words, &mut sources);
        if option || !sources.is_empty() {
            out.push(l.to_string());
        }
    }
    out
}

/// [`package_lines`] of pip's INI configuration: every `find-links`, `index-url` and
/// `extra-index-url` value (any section; `_` forms; values split on whitespace, continued on
/// indented lines).
fn pip_config_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<&str> = None;
    for raw in text.lines() {
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with(['#', ';']) {
            continue;
        }
        let values = if raw.starts_with([' ', '\t']) && current.is_some() {
            trimmed
        } else if let Some((key, value)) = trimmed.split_once(['=', ':']) {
            current = match key.trim().replace('_', "-").as_str() {
                "find-links" => Some("--find-links"),
                "index-url" => Some("--index-url"),
                "extra-index-url" => Some("--extra-index-url"),
                _ => None,
            };
            value.trim()
        } else {
            current = None;
            continue;
        };
        if let Some(option) = current {
            out.extend(values.split_whitespace().map(|v| format!("{option} {v}")));
        }
    }
    out
}

/// [`package_lines`] of uv's TOML configuration (`pyproject`: the `[tool.uv]` table of a
/// `pyproject.toml`): `find-links`, `index-url`, `extra-index-url` and each `[[index]]`'s
/// `url`. A file TOML cannot read says none.
fn uv_config_lines(text: &str, pyproject: bool) -> Vec<String> {
    let Ok(doc) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let table = if pyproject {
        match doc
            .get("tool")
            .and_then(|t| t.get("uv"))
            .and_then(toml::Value::as_table)
        {
            Some(t) => t,
            None => return Vec::new(),
        }
    } else {
        &doc
    };
    let strings = |v: Option<&toml::Value>| -> Vec<String> {
        match v {
            Some(toml::Value::String(s)) => vec![s.clone()],
            Some(toml::Value::Array(a)) => a
                .iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        }
    };
    let mut out = Vec::new();
    for (key, option) in [
        ("find-links", "--find-links"),
        ("index-url", "--index-url"),
        ("extra-index-url", "--extra-index-url"),
    ] {
        out.extend(
            strings(table.get(key))
                .into_iter()
                .map(|v| format!("{option} {v}")),
        );
    }
    for index in table
        .get("index")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
    {
        out.extend(
            strings(index.get("url"))
                .into_iter()
                .map(|v| format!("--index-url {v}")),
        );
    }
    out
}

/// What the [`package_lines`] of one file name: the package sources (folders, as written: a
/// relative one is read by pip from the working folder, or from the file's own folder when it
/// is there) and the requirement and constraint files it reads too (as written: a relative one
/// from the file's own folder).
pub fn package_refs(lines: &[String]) -> (Vec<String>, Vec<String>) {
    let (mut sources, mut files) = (Vec::new(), Vec::new());
    for line in lines {
        let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        sources_in_words(&words, &mut sources);
        for i in 0..words.len() {
            if let Some(f) = option_value(&words, i, FILE_OPTIONS) {
                let f = f.trim_matches(['"', '\'']);
                if !f.is_empty() && !f.contains('$') && !f.contains("://") {
                    files.push(f.to_string());
                }
            }
        }
    }
    (sources, files)
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

/// Whether `test_sh` runs coverage.py (`coverage run`, `python3 -m coverage`, pytest-cov's
/// `--cov`, `COVERAGE_PROCESS_START`), and the configuration files it names for it
/// (`--cov-config FILE`, `--rcfile=FILE`, `COVERAGE_RCFILE=FILE`, `COVERAGE_PROCESS_START=FILE`),
/// as written: coverage imports the plugins a configuration names (`[run] plugins`).
pub fn coverage_use(test_sh: &str) -> (bool, Vec<String>) {
    const NAMING: &[&str] = &[
        "--cov-config",
        "--rcfile",
        "COVERAGE_RCFILE",
        "COVERAGE_PROCESS_START",
    ];
    let words: Vec<&str> = test_sh
        .split(|c: char| c.is_whitespace() || ";&|()`".contains(c))
        .map(|w| w.trim_matches(['"', '\'']))
        .filter(|w| !w.is_empty())
        .collect();
    let (mut runs, mut files) = (false, Vec::new());
    for (i, w) in words.iter().enumerate() {
        let (key, value) = match w.split_once('=') {
            Some((k, v)) => (k, Some(v.trim_matches(['"', '\'']).to_string())),
            None => (*w, None),
        };
        runs |= key.rsplit('/').next() == Some("coverage")
            || key == "--cov"
            || key.starts_with("--cov-")
            || key == "COVERAGE_PROCESS_START";
        if NAMING.contains(&key) {
            let value = value.or_else(|| {
                key.starts_with("--")
                    .then(|| words.get(i + 1).map(|n| n.to_string()))
                    .flatten()
            });
            files.extend(value.filter(|v| !v.is_empty() && !v.contains('$')));
        }
    }
    (runs, files)
}

/// True when `test_sh` runs `uv` or `uvx` (by name or path).
pub fn runs_uv(test_sh: &str) -> bool {
    test_sh
        .split(|c: char| c.is_whitespace() || ";&|()`$\"'".contains(c))
        .any(|w| matches!(w.rsplit('/').next(), Some("uv" | "uvx")))
}

/// The virtual environments `test_sh` makes at verify time (`python3 -m venv DIR`,
/// `virtualenv DIR`, `uv venv [DIR]` — `.venv` when none is named), as written (a relative
/// one is read from the working folders). `venv` keeps what a folder already holds, so what
/// the agent left there would be in the tests' environment: the whole folder is the
/// toolchain's.
pub fn made_venvs(test_sh: &str) -> Vec<String> {
    // Options of the three that take a value.
    const TAKES: &[&str] = &[
        "-p",
        "--python",
        "--prompt",
        "--index-url",
        "--extra-index-url",
        "-i",
        "-f",
        "--find-links",
        "--seeder",
        "--activators",
        "--app-data",
        "--creator",
        "--link-mode",
        "--cache-dir",
        "--exclude-newer",
        "--index-strategy",
        "--keyring-provider",
        "--python-preference",
        "--config-file",
        "--directory",
        "--project",
    ];
    let mut out: Vec<String> = Vec::new();
    for words in command_words(test_sh) {
        let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
        let (at, uv) = match words.iter().enumerate().find_map(|(i, w)| {
            let b = base(w);
            let next = words.get(i + 1).map(String::as_str);
            if (w == "venv" && i > 0 && words[i - 1] == "-m") || b == "virtualenv" {
                Some((i, false))
            } else if b == "uv" && next == Some("venv") {
                Some((i + 1, true))
            } else {
                None
            }
        }) {
            Some(found) => found,
            None => continue,
        };
        let mut named = false;
        let mut it = words[at + 1..].iter();
        while let Some(w) = it.next() {
            if TAKES.contains(&w.as_str()) {
                it.next();
                continue;
            }
            if w.starts_with('-') || w.is_empty() || w.starts_with('>') {
                continue;
            }
            named = true;
            if !w.contains(['$', '*', '?', '`']) && !out.contains(w) {
                out.push(w.trim_end_matches('/').to_string());
            }
        }
        if uv && !named && !out.iter().any(|o| o == ".venv") {
            out.push(".venv".to_string());
        }
    }
    out
}
