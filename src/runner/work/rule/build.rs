//! How a trial's rule is made ([`Rules::new`] and its `with_*` steps): the image's toolchain,
//! then what `test.sh` says — its search paths, sourced files, where the tests land, what its
//! package installers read — each added by a step of its own.

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::runner::work::manifest::{FileKind, Manifest};
use crate::runner::work::paths::{follow, join, normalize};
use crate::runner::work::test_sh::{
    LOADER_PATHS, Landings, MODULE_PATHS, PROGRAM_PATHS, as_read, command_names, copies_of_tests,
    coverage_use, environment_files, installed_modules, installs_a_folder, installs_packages,
    loader_searches_working, made_dirs, made_venvs, node_test_copies, package_refs,
    package_sources, pip_requirements, pytest_arguments, pytest_targets, relative_search_dirs,
    runs_uv, search_dirs, sourced_files, sys_path_dirs, test_copies, unresolved, working_dirs,
};

/// Every Python installation of the image wherever it stands, not only those on `PATH`: each
/// folder that holds a standard library (`os.py`), each `site-packages` and `dist-packages`,
/// and each installation prefix's `bin` whose `python3` (or `python`) a `test.sh` may run by
/// its path (`/opt/py/bin/python3`).
pub(super) fn python_installs(manifest: &Manifest) -> Vec<(String, String)> {
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

/// The installation prefixes of the Python installations the rule knows (`installs`: the
/// folders of [`python_installs`] and those the image's interpreters search; `interpreters`:
/// their paths): `P` of a `P/bin` folder, of `P/bin/python3`, and of a folder under
/// `P/lib/pythonN…` (`lib64`, `lib32` too: a standard library, a site folder, `python311.zip`).
/// `/` is no prefix.
pub(super) fn python_prefixes<'a>(
    installs: impl IntoIterator<Item = &'a str>,
    interpreters: impl IntoIterator<Item = &'a str>,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for d in installs {
        let comps: Vec<&str> = d.split('/').collect();
        let prefix = if d.ends_with("/bin") {
            Some(parent(d).to_string())
        } else {
            comps
                .windows(2)
                .position(|w| {
                    matches!(w[0], "lib" | "lib64" | "lib32")
                        && w[1]
                            .strip_prefix("python")
                            .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
                })
                .map(|i| comps[..i].join("/"))
        };
        out.extend(prefix);
    }
    for i in interpreters {
        let bin = parent(i);
        if bin.ends_with("/bin") {
            out.insert(parent(bin).to_string());
        }
    }
    out.retain(|p| !p.is_empty() && p != "/");
    out
}

/// What the image's links in the `PATH` folders `dirs` lead to (`/usr/local/bin/csvcheck` →
/// `/opt/csvcheck/bin/csvcheck`; `/usr/bin/java` → `/etc/alternatives/java` →
/// `/opt/jdk/bin/java`), every link on the way (the folder's own too) followed in the image,
/// with why: a test runs the target by the link's name. When the target is `P/bin/<name>`
/// (`P` not `/`), `P/bin` and `P`'s `lib*` folders (a JDK's `lib/`, a tool's libraries and
/// modules) are the program's too.
pub(super) fn path_link_targets(manifest: &Manifest, dirs: &[String]) -> Vec<(String, String)> {
    let image_link = |p: &str| manifest.get(p).and_then(|f| f.link.clone());
    let mut out: Vec<(String, String)> = Vec::new();
    let mut add = |p: String, why: String| {
        if !out.iter().any(|(o, _)| *o == p) {
            out.push((p, why));
        }
    };
    for d in dirs {
        let Some(real) = follow(d, &image_link) else {
            continue;
        };
        for name in manifest.children(&real) {
            let entry = join(&real, name);
            if manifest
                .get(&entry)
                .is_none_or(|f| f.kind != FileKind::Link)
            {
                continue;
            }
            // Every link on the way is the program's too (a version link `current` → `1.0`
            // that the agent could point at a folder of its own).
            let on_the_way = std::cell::RefCell::new(Vec::new());
            let Some(target) = follow(&entry, &|p: &str| {
                let l = image_link(p);
                if l.is_some() && p != entry {
                    on_the_way.borrow_mut().push(p.to_string());
                }
                l
            }) else {
                continue;
            };
            let why = format!("{} on PATH leads to {target}", join(d, name));
            for hop in on_the_way.into_inner() {
                add(hop, format!("{why}, a link on the way"));
            }
            let bin = parent(&target);
            if bin.ends_with("/bin") && parent(bin) != "/" {
                let prefix = parent(bin);
                let libs = manifest.children(prefix).filter(|c| {
                    c.starts_with("lib")
                        && manifest
                            .get(&join(prefix, c))
                            .is_some_and(|f| f.kind == FileKind::Dir)
                });
                let libs: Vec<String> = libs.map(|c| join(prefix, c)).collect();
                add(bin.to_string(), format!("{why}, a program of this folder"));
                for l in libs {
                    add(l, format!("{why}, a program of {prefix}"));
                }
            }
            add(target, why);
        }
    }
    out
}

/// The top-level module names of every standard library and site folder of the image
/// ([`python_installs`], which includes those of interpreters off `PATH` and of the image's
/// virtual environments): a module of such a name earlier on `sys.path` shadows it, whichever
/// interpreter test.sh runs.
pub(super) fn install_modules(manifest: &Manifest) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (dir, _) in python_installs(manifest) {
        if dir.ends_with("/bin") {
            continue;
        }
        for name in manifest.children(&dir) {
            let is_dir = manifest
                .get(&join(&dir, name))
                .is_some_and(|f| f.kind == FileKind::Dir);
            if let Some(m) = module_name(name, is_dir) {
                out.insert(m.to_string());
            }
        }
    }
    out
}

/// The namespace packages in toolchain folder `dir`: entries without `__init__.py` that hold a
/// package (`mpl_toolkits/mplot3d/__init__.py`, `google/protobuf/__init__.py`) — portions
/// merge with one earlier on `sys.path` — but [`NOT_NAMESPACES`].
pub(super) fn namespace_packages(manifest: &Manifest, dir: &str) -> Vec<String> {
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
pub(super) fn in_and_above(
    files: &mut Vec<(String, String)>,
    dir: &str,
    names: &[&str],
    why: &str,
) {
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

/// The folders of `manifest` (with every folder above a path, and `/`) but its packages (those
/// holding an `__init__.py`): the only folders a `test.sh` written before the agent ran can
/// start Python in without naming them ([`Rules`]' `start_dirs`). A folder the agent made,
/// or an `__init__.py` it added, changes nothing here.
pub(super) fn start_dirs(manifest: &Manifest) -> BTreeSet<String> {
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

/// The image's outermost `node_modules` folders (packages the image installed).
pub(super) fn image_node_modules(manifest: &Manifest) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (p, f) in &manifest.files {
        if f.kind == FileKind::Dir
            && p.ends_with("/node_modules")
            && !out.iter().any(|o| within(p, o))
        {
            out.push(p.clone());
        }
    }
    out
}

/// Where `test.sh` runs and where its copies bring things from: the folders a relative path
/// of `test.sh` is read from, and the copies' sources of each folder.
struct Places {
    /// The folders test.sh runs in: the image's working folder, every folder it changes into
    /// (a relative one from every folder known before it), and where copies into those come
    /// from (`cp -r /opt/project /tmp/eval && cd /tmp/eval`: `/opt/project` too).
    working: Vec<String>,
    /// Where test.sh copies things, and from where.
    landings: Landings,
}

impl Places {
    fn read(workdir: &str, test_sh: &str, home: &str) -> Places {
        let mut working: Vec<String> = vec![workdir.to_string()];
        for d in working_dirs(test_sh, home) {
            for d in at_from(&d, &working) {
                if !working.contains(&d) {
                    working.push(d);
                }
            }
        }
        let landings = Landings::read(test_sh, home, &working);
        let mut places = Places {
            working: Vec::new(),
            landings,
        };
        places.working = places.also(working);
        places
    }

    /// `dirs` and the folders copies into them come from.
    fn also(&self, dirs: Vec<String>) -> Vec<String> {
        let mut out = dirs.clone();
        for d in &dirs {
            for s in self.landings.sources_of(d) {
                if !out.contains(&s) {
                    out.push(s);
                }
            }
        }
        out
    }

    /// `path` as test.sh reaches it: itself when absolute, else read from every working folder.
    fn at(&self, path: &str) -> Vec<String> {
        at_from(path, &self.working)
    }

    /// A file by [`Places::at`], and where a copy brings it from.
    fn at_and_from(&self, f: &str) -> Vec<String> {
        let name = f.rsplit('/').next().unwrap_or_default();
        let mut out = Vec::new();
        for f in self.at(f) {
            let from: Vec<String> = self
                .landings
                .sources_of(parent(&f))
                .iter()
                .map(|d| join(d, name))
                .collect();
            out.push(f);
            out.extend(from);
        }
        out
    }

    /// A folder test.sh names for tests (`cp` target, pytest's argument), by [`Places::at`] and
    /// [`Places::also`], outside `/tests`.
    fn test_folder(&self, d: &str) -> Vec<String> {
        self.also(self.at(d))
            .into_iter()
            .filter(|d| !within(d, "/tests"))
            .collect()
    }
}

/// `path` itself when absolute, else read from each of `working`; normalized.
fn at_from(path: &str, working: &[String]) -> Vec<String> {
    if path.starts_with('/') {
        vec![normalize(path)]
    } else {
        working.iter().map(|w| normalize(&join(w, path))).collect()
    }
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
        let places = Places::read(workdir, test_sh, home);
        let mut r = Rules {
            trees: SYSTEM_TREES
                .iter()
                .map(|d| (d.to_string(), "a system folder".to_string()))
                .collect(),
            modules: ["sitecustomize", "usercustomize"]
                .into_iter()
                .map(str::to_string)
                .collect(),
            // `/` too: `cd "$(dirname "$0")/.."` is the folder above `/tests`.
            shadow_dirs: BTreeSet::from([workdir.to_string(), "/".to_string()]),
            // Everything said of a working folder below is said of those too.
            working: places.working.clone(),
            home: home.to_string(),
            skills: skills.to_vec(),
            ..Rules::default()
        };
        for d in &toolchain.path {
            r.trees.push((d.clone(), format!("{d} is on PATH")));
        }
        r.shadow_dirs.extend(places.working.iter().cloned());
        r.add_image_toolchain(manifest, toolchain);
        r.add_search_paths(test_sh, home, &places);
        r.files = ROOT_TEST_CONFIG
            .iter()
            .map(|f| (format!("/{f}"), "pytest reads it above /tests".to_string()))
            .collect();
        r.add_sourced_files(test_sh, home, &places);
        r.add_test_places(test_sh, &places);
        let (pytest_configs, pytest_plugins) = pytest_arguments(test_sh);
        r.add_installers(manifest, test_sh, home, &places, pytest_configs);
        // coverage.py's configuration test.sh names (`--cov-config=/app/cov.ini`): it imports
        // the plugins named there.
        let (coverage, coverage_files) = coverage_use(test_sh);
        r.coverage = coverage;
        for f in coverage_files {
            for f in places.at(&f) {
                r.files.push((f, COVERAGE_READS.into()));
            }
        }
        r.modules.retain(|m| !NEVER_IMPORTED.contains(&m.as_str()));
        // And the folders test.sh makes itself (`mkdir -p /srv/work`).
        r.start_dirs = start_dirs(manifest);
        for d in made_dirs(test_sh) {
            r.start_dirs.extend(places.at(&d));
        }
        r.tests_copied = copies_of_tests(test_sh, home, &places.working);
        r.installs = installs_packages(test_sh) && !installs_a_folder(test_sh);
        // A home elsewhere (`HOME=/workspace`, a user's home `/app` in `/etc/passwd`, `/` for
        // an id without one): its hidden entries are the toolchain's as `/root`'s are.
        r.linked_homes = (home_entry(&format!("{home}/.x")).is_none())
            .then(|| home.to_string())
            .into_iter()
            .collect();
        r.every_folder_first = unresolved(test_sh, &[], home);
        r.anywhere = VERIFIER_MODULES
            .iter()
            .map(|m| m.to_string())
            .chain(installed_modules(test_sh))
            .chain(pytest_plugins)
            .collect();
        r.commands = command_names(test_sh);
        r.add_path_links(manifest, toolchain, test_sh, home);
        r
    }

    /// The programs the image links into the `PATH` folders (its own and those `test.sh` puts
    /// there) where they really are ([`path_link_targets`]), but those already the toolchain's
    /// and those in a folder `test.sh` runs in (other than `/`): a program of the project there
    /// is code under test, as a module the tests import from it is.
    fn add_path_links(
        &mut self,
        manifest: &Manifest,
        toolchain: &Toolchain,
        test_sh: &str,
        home: &str,
    ) {
        let mut dirs = toolchain.path.clone();
        dirs.extend(search_dirs(test_sh, home, &["PATH"]));
        for (p, why) in path_link_targets(manifest, &dirs) {
            let known = self.trees.iter().any(|(d, _)| within(&p, d));
            let project = self.working.iter().any(|w| w != "/" && within(&p, w));
            if !known && !project {
                self.trees.push((p, why));
            }
        }
    }

    /// The image's own toolchain: its Python installations, search folders and modules,
    /// namespace packages, virtual and conda environments, the loader's and Node's folders.
    fn add_image_toolchain(&mut self, manifest: &Manifest, toolchain: &Toolchain) {
        self.modules
            .extend(OPTIONAL_MODULES.iter().map(|m| m.to_string()));
        self.portions = OPTIONAL_MODULES.iter().map(|m| m.to_string()).collect();
        for py in &toolchain.python {
            for d in &py.toolchain {
                self.portions.extend(namespace_packages(manifest, d));
            }
        }
        let installs = python_installs(manifest);
        // A Python installation's interpreter loads its shared libraries (`libpython3.11.so`)
        // from its prefix's `lib` by its RUNPATH (`$ORIGIN/../lib`: python-build-standalone,
        // uv's and pyenv's shared builds), never through a search path the rule reads.
        let prefixes = python_prefixes(
            installs.iter().map(|(d, _)| d.as_str()).chain(
                toolchain
                    .python
                    .iter()
                    .flat_map(|p| p.toolchain.iter().map(String::as_str)),
            ),
            toolchain.python.iter().map(|p| p.interpreter.as_str()),
        );
        for p in prefixes {
            let why = format!("the Python installation at {p} loads its libraries from");
            for lib in ["lib", "lib64"] {
                self.add_loader_dirs(&[join(&p, lib)], &why);
            }
        }
        self.trees.extend(installs);
        for d in &manifest.loader_dirs {
            self.trees
                .push((d.clone(), format!("the image's ld.so.conf names {d}")));
        }
        self.modules.extend(install_modules(manifest));
        for py in &toolchain.python {
            for d in &py.toolchain {
                self.trees.push((
                    d.clone(),
                    format!("{} searches it for modules", py.interpreter),
                ));
            }
            self.shadow_dirs.extend(py.project.iter().cloned());
            self.modules.extend(py.modules.iter().cloned());
        }
        for v in manifest.folders_with("pyvenv.cfg") {
            self.trees
                .push((v.clone(), "a virtual environment of the image".into()));
        }
        for v in manifest.folders_with("conda-meta") {
            self.trees
                .push((v.clone(), "a conda environment of the image".into()));
        }
        for d in image_node_modules(manifest) {
            for name in manifest.children(&d) {
                if let Some(scope) = name.strip_prefix('@').map(|_| join(&d, name)) {
                    self.node_packages
                        .extend(manifest.children(&scope).map(|n| format!("{name}/{n}")));
                } else if !name.starts_with('.') {
                    self.node_packages.insert(name.to_string());
                }
            }
            self.trees.push((d, "Node packages of the image".into()));
        }
        // Node resolves a package a test in `/tests` requires from `/tests/node_modules`, then
        // `/node_modules`, before `NODE_PATH` and the global folders: `/`'s is pytest's
        // `/conftest.py` for Node.
        self.trees.push((
            "/node_modules".into(),
            "Node looks for the tests' packages there, above /tests".into(),
        ));
    }

    /// The search paths test.sh sets: folders of programs and libraries found by name are the
    /// toolchain's whole; folders of Python modules (`PYTHONPATH`) are searched first (step 5),
    /// their other files work.
    fn add_search_paths(&mut self, test_sh: &str, home: &str, places: &Places) {
        for d in search_dirs(test_sh, home, PROGRAM_PATHS)
            .into_iter()
            .chain(search_dirs(test_sh, home, LOADER_PATHS))
        {
            let why = format!("test.sh puts {d} on a search path");
            for d in places.also(vec![d]) {
                self.trees.push((d, why.clone()));
            }
        }
        for d in search_dirs(test_sh, home, MODULE_PATHS) {
            self.shadow_dirs.extend(places.also(vec![d]));
        }
        // A relative entry (`PYTHONPATH=src`) is read from whichever folder test.sh is in.
        for rel in relative_search_dirs(test_sh, PROGRAM_PATHS) {
            for w in &places.working {
                let d = join(w, &rel);
                let why = format!("test.sh puts {rel} on a search path (from {w})");
                self.trees.push((d, why));
            }
        }
        for rel in relative_search_dirs(test_sh, MODULE_PATHS) {
            self.shadow_dirs
                .extend(places.working.iter().map(|w| join(w, &rel)));
        }
        if loader_searches_working(test_sh) {
            self.add_loader_dirs(&places.working.clone(), LOADER_SEARCHES);
        }
    }

    /// A file test.sh takes variables from, by `source` or at run time (`export $(cat .env |
    /// xargs)`, a `read` loop's input); a relative one (`source .venv/bin/activate`) from
    /// whichever folder test.sh is in, and where a copy brings it from.
    fn add_sourced_files(&mut self, test_sh: &str, home: &str, places: &Places) {
        for f in sourced_files(test_sh, home)
            .into_iter()
            .chain(environment_files(test_sh))
        {
            for f in places.at_and_from(&f) {
                self.files.push((f, SOURCED.into()));
            }
        }
    }

    /// Where test.sh copies the tests, and the folders it runs in (a relative test path is
    /// read there): pytest's configuration and the packages' `__init__.py` in and above them
    /// are read (an `__init__.py` beside a test makes it a package's module, run first), and
    /// pytest puts such a folder first on `sys.path` before it imports a test module.
    fn add_test_places(&mut self, test_sh: &str, places: &Places) {
        for d in node_test_copies(test_sh) {
            for d in places.test_folder(&d) {
                if !self.node_places.contains(&d) {
                    self.node_places.push(d);
                }
            }
        }
        for d in test_copies(test_sh) {
            for d in places.test_folder(&d) {
                in_and_above(&mut self.files, &d, ROOT_TEST_CONFIG, PYTEST_READS);
                in_and_above(&mut self.files, &d, &["__init__.py"], PYTEST_READS);
                self.shadow_dirs.insert(d.clone());
                if !self.test_places.contains(&d) {
                    self.test_places.push(d);
                }
            }
        }
        // Where pytest is told to find tests outside `/tests` is read the same, however the
        // tests got there (`install`, `tar`, `mv`, a heredoc) — but for the tests' own names,
        // which stay the agent's there (a relative path is read from every working folder).
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
            for d in places.test_folder(dir) {
                in_and_above(&mut self.files, &d, ROOT_TEST_CONFIG, PYTEST_READS);
                in_and_above(&mut self.files, &d, &["__init__.py"], PYTEST_READS);
                // A folder pytest collects, where test.sh copies the tests: what pytest runs or
                // loads below it (other test modules, `conftest.py` in a sub-folder) is its.
                let collected = !t.ends_with(".py")
                    && self
                        .test_places
                        .iter()
                        .any(|p| within(p, &d) || within(&d, p));
                if collected && !self.collect_dirs.contains(&d) {
                    self.collect_dirs.push(d.clone());
                }
                self.shadow_dirs.insert(d);
            }
        }
    }

    /// What test.sh's Python, pytest and package installers are told to read: a user base or
    /// Python home, the configuration pytest is given, the folders packages come from, the
    /// requirement files, uv's project files.
    fn add_installers(
        &mut self,
        manifest: &Manifest,
        test_sh: &str,
        home: &str,
        places: &Places,
        pytest_configs: Vec<String>,
    ) {
        self.requirement_files = pip_requirements(test_sh)
            .iter()
            .flat_map(|f| places.at(f))
            .collect();
        // A user base or a Python home test.sh names (`PYTHONUSERBASE=/opt/pyuser`): its tree
        // is searched for modules and `.pth` files as the toolchain's.
        for d in search_dirs(test_sh, home, &["PYTHONUSERBASE", "PYTHONHOME"]) {
            self.trees
                .push((d.clone(), format!("test.sh makes {d} Python's own folder")));
        }
        // The configuration pytest is told to read (`-c /app/pytest.ini`): its `addopts` would
        // load what the agent names.
        for f in pytest_configs {
            for f in places.at(&f) {
                self.files.push((f, PYTEST_READS.into()));
            }
        }
        // A folder the installers take packages from (`pip install -f /opt/wheels x`): the
        // agent's wheel there would be what test.sh installs.
        for d in package_sources(test_sh) {
            for d in places.at(&d) {
                self.trees.push((d, PACKAGES_FROM.into()));
            }
        }
        // What the requirement files test.sh installs from say (the image's, read once per
        // image; the tests' by `with_test_requirements`): their `--find-links` folders, and
        // those of the files they include.
        let lookup = |p: &str| manifest.package_options.get(p).cloned();
        self.add_included(requirement_sources(
            &self.requirement_files,
            &lookup,
            &places.working,
        ));
        // The image's own pip and uv configuration, where test.sh installs at all.
        if installs_packages(test_sh) {
            let mut configs: Vec<String> = PACKAGE_CONFIGS
                .iter()
                .map(|f| normalize(&f.replace("$HOME", home)))
                .collect();
            if runs_uv(test_sh) {
                let mut found = Vec::new();
                for w in &places.working {
                    in_and_above(&mut found, w, &["uv.toml", "pyproject.toml"], "");
                }
                configs.extend(found.into_iter().map(|(f, _)| f));
            }
            self.add_included(requirement_sources(&configs, &lookup, &places.working));
        }
        for f in pip_requirements(test_sh) {
            let at = if f.starts_with('/') {
                places.at_and_from(&f)
            } else {
                places.at(&f)
            };
            for f in at {
                self.files.push((f, PIP_READS.into()));
            }
        }
        if runs_uv(test_sh) {
            for w in &places.working {
                in_and_above(&mut self.files, w, UV_PROJECT_FILES, UV_READS);
            }
        }
        // A virtual environment test.sh makes keeps what its folder already holds.
        for d in made_venvs(test_sh) {
            for d in places.at(&d) {
                self.trees
                    .push((d, "test.sh makes a virtual environment there".into()));
            }
        }
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
        for (d, why) in &self.loader_dirs {
            if let Some(q) = moved(d) {
                r.loader_dirs.entry(q).or_insert_with(|| why.clone());
            }
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

    /// This rule with the package sources the requirement files of the task's tests name, when
    /// `test.sh` installs from them (`pip install -r /tests/requirements.txt` whose file says
    /// `--find-links /opt/wheels`): `tests` holds the [`package_lines`](crate::runner::work::test_sh::package_lines) of the tests' files by
    /// their path in the verifier (`/tests/…`); a file they include outside `/tests` is read
    /// from the image (`manifest`).
    pub fn with_test_requirements(
        mut self,
        manifest: &Manifest,
        tests: &BTreeMap<String, Vec<String>>,
    ) -> Rules {
        let lookup = |p: &str| {
            tests
                .get(p)
                .or_else(|| manifest.package_options.get(p))
                .cloned()
        };
        let files: Vec<String> = self
            .requirement_files
            .iter()
            .filter(|f| within(f, "/tests"))
            .cloned()
            .collect();
        self.add_included(requirement_sources(&files, &lookup, &self.working));
        self
    }
}

/// Why a library's name is the toolchain's in a folder the loader searches by an empty or
/// relative entry.
pub(super) const LOADER_SEARCHES: &str = "the loader searches";

impl Rules {
    /// Adds `dirs` to the folders the loader finds libraries in by name, with `why` (the first
    /// reason given for a folder stays).
    pub(super) fn add_loader_dirs(&mut self, dirs: &[String], why: &str) {
        for d in dirs {
            self.loader_dirs
                .entry(d.clone())
                .or_insert_with(|| why.to_string());
        }
    }
}

/// The files pip and uv read their configuration from (`$HOME` the image user's home).
const PACKAGE_CONFIGS: &[&str] = &[
    "/etc/pip.conf",
    "/etc/xdg/pip/pip.conf",
    "$HOME/.config/pip/pip.conf",
    "$HOME/.pip/pip.conf",
    "/etc/uv/uv.toml",
    "/etc/xdg/uv/uv.toml",
    "$HOME/.config/uv/uv.toml",
];

/// What pip reads through the files `files` (each a file's
/// [`package_lines`](crate::runner::work::test_sh::package_lines) by `lookup`): the package
/// sources they name, and the requirement and constraint files they include (followed, each
/// once, at most 64). A source absolute as written, a relative one from the file's own folder
/// and from every `working` folder (pip takes the first when it exists, uv the file's folder);
/// an included file from the including file's folder; all normalized.
fn requirement_sources(
    files: &[String],
    lookup: &dyn Fn(&str) -> Option<Vec<String>>,
    working: &[String],
) -> Included {
    let mut queue: Vec<String> = files.to_vec();
    let mut out = Included::default();
    while let Some(f) = queue.pop() {
        if out.seen.len() >= 64 || !out.seen.insert(f.clone()) {
            continue;
        }
        let Some(lines) = lookup(&f) else { continue };
        let dir = parent(&f).to_string();
        let (sources, included) = package_refs(&lines);
        for s in sources {
            let mut at = vec![at_from(&s, std::slice::from_ref(&dir))];
            if !s.starts_with('/') {
                at.push(at_from(&s, working));
            }
            for d in at.concat() {
                if !out.sources.contains(&d) {
                    out.sources.push(d);
                }
            }
        }
        for i in &included {
            let at = at_from(i, std::slice::from_ref(&dir));
            out.files.extend(at.iter().cloned());
            queue.extend(at);
        }
    }
    out
}

/// What [`requirement_sources`] found.
#[derive(Default)]
struct Included {
    /// The folders packages come from.
    sources: Vec<String>,
    /// The files the given ones include (`-r`, `-c`), whatever their own content: pip reads
    /// them as it reads the files `test.sh` names.
    files: Vec<String>,
    /// Every file followed.
    seen: BTreeSet<String>,
}

impl Rules {
    /// Adds what [`requirement_sources`] found: its sources as the folders packages come from,
    /// the files included as pip's to read.
    fn add_included(&mut self, found: Included) {
        for d in found.sources {
            if !self.trees.iter().any(|(t, _)| *t == d) {
                self.trees.push((d, PACKAGES_FROM.into()));
            }
        }
        for f in found.files {
            if !self.files.iter().any(|(g, _)| *g == f) {
                self.files.push((f, PIP_READS.into()));
            }
        }
    }
}
