use super::build::*;
use super::*;
use crate::runner::work::manifest::Manifest;
use crate::runner::work::test_sh::*;

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
    let c = rules_with(sh, "").with_test_names(&["test_outputs.py".into(), "expected.json".into()]);
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
    // Given no test, pytest collects the folder it runs in.
    let bare = "cp /tests/test_outputs.py /app/tests/ && cd /app/tests && pytest -rA | tee o.txt";
    let r = rules_with(bare, "");
    assert_toolchain(
        &r,
        &["/app/tests/test_aaa_setup.py", "/app/tests/sub/conftest.py"],
    );
    // (Every folder test.sh runs in counts, `/app` too: the reader does not order the `cd`s.)
    assert!(r.classify("/srv/other/test_mine.py", false, &[]).is_work());
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
    assert!(rules_with("pip3 install -r /tests/req.txt -t /opt/x pytest", "").installs_packages());
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

/// The eighth red team's `optpy-libpython-runpath`: a Python under `/opt/py` whose interpreter
/// loads `/opt/py/lib/libpython3.11.so.1.0` by its RUNPATH (`$ORIGIN/../lib`). The shared
/// libraries of every Python installation's prefix the rule knows are the toolchain's; other
/// files there, and libraries of folders that are no such prefix, stay work.
#[test]
fn the_shared_libraries_of_every_python_installation_are_the_toolchain() {
    let r = rules_with("pytest /tests/test_outputs.py", "");
    assert_toolchain(
        &r,
        &[
            // `/opt/py` holds `lib/python3.11/os.py` and `bin/python3`.
            "/opt/py/lib/libpython3.11.so.1.0",
            "/opt/py/lib/libpython3.so",
            "/opt/py/lib64/libffi.so.8",
        ],
    );
    let why = r.classify("/opt/py/lib/libpython3.11.so.1.0", false, &[]);
    assert!(
        matches!(&why, Class::Toolchain(w) if w.contains("/opt/py")),
        "{why:?}"
    );
    for p in [
        "/opt/py/lib/notes.txt",
        "/opt/py/share/zz/zzhook.py",
        "/opt/project/lib/libanswer.so",
        "/app/lib/libsolution.so",
    ] {
        assert_eq!(r.classify(p, false, &[]), Class::Work, "{p}");
    }
    let prefixes = python_prefixes(
        [
            "/opt/py/bin",
            "/python/cpython-3.12/lib/python3.12",
            "/srv/x/lib64/python3.9/site-packages",
            "/lib/python3/dist-packages",
            "/usr/local/lib/python311.zip",
            // A `.pth` line's folder that only looks like one.
            "/srv/libs/python-utils",
            "/srv/lib/pythonic",
        ],
        ["/opt/hosted/3.10/bin/python3", "/usr/bin/python3"],
    );
    assert_eq!(
        prefixes.into_iter().collect::<Vec<_>>(),
        [
            "/opt/hosted/3.10",
            "/opt/py",
            "/python/cpython-3.12",
            "/srv/x",
            "/usr",
            "/usr/local"
        ]
    );
}

/// The eighth red team's `path-link-to-opt-tool`: a program the image links into a `PATH`
/// folder (`ln -s /opt/csvcheck/bin/csvcheck /usr/local/bin/`, a JDK through
/// `/etc/alternatives`) is the toolchain's where the links lead, with its installation's `bin`
/// and `lib*` folders; a project under `/opt` that no link on `PATH` reaches, and a program of
/// the folder the verifier runs in, stay work.
#[test]
fn what_the_image_links_into_path_is_the_toolchain_where_it_leads() {
    use super::super::manifest::FileKind as K;
    use super::super::manifest::tests::manifest_of;
    let m = manifest_of(&[
        ("bin", K::Link, "usr/bin"),
        ("usr/bin/", K::Dir, ""),
        ("usr/bin/java", K::Link, "/etc/alternatives/java"),
        ("usr/bin/t2", K::Link, "../../opt/t2/t2"),
        ("usr/local/bin/", K::Dir, ""),
        (
            "usr/local/bin/csvcheck",
            K::Link,
            "/opt/csvcheck/bin/csvcheck",
        ),
        ("usr/local/bin/appcli", K::Link, "/app/bin/appcli"),
        ("usr/local/bin/loop", K::Link, "loop"),
        ("etc/alternatives/java", K::Link, "/opt/jdk/bin/java"),
        ("opt/csvcheck/bin/csvcheck", K::File, "#!/usr/bin/python3"),
        ("opt/csvcheck/lib/", K::Dir, ""),
        ("opt/csvcheck/share/doc.txt", K::File, ""),
        ("opt/jdk/bin/java", K::File, ""),
        ("opt/jdk/lib/", K::Dir, ""),
        ("opt/jdk/lib64/", K::Dir, ""),
        ("opt/t2/t2", K::File, ""),
        ("opt/project/bin/run", K::File, ""),
        ("opt/project/lib/", K::Dir, ""),
        ("app/bin/appcli", K::File, ""),
    ]);
    let t = Toolchain {
        path: vec!["/usr/local/bin".into(), "/bin".into()],
        ..Toolchain::default()
    };
    let r = Rules::new(&m, &t, "/app", "", "/root", &[]);
    assert_toolchain(
        &r,
        &[
            "/opt/csvcheck/bin/csvcheck",
            "/opt/csvcheck/bin/helper",
            "/opt/csvcheck/lib/rules.py",
            "/opt/jdk/bin/java",
            "/opt/jdk/lib/modules",
            "/opt/jdk/lib64/libjvm.so",
            "/opt/t2/t2",
        ],
    );
    for p in [
        "/opt/csvcheck/share/doc.txt",
        "/opt/t2/notes.txt",
        "/opt/project/bin/run",
        "/opt/project/lib/x.so",
        "/app/bin/appcli",
    ] {
        assert_eq!(r.classify(p, false, &[]), Class::Work, "{p}");
    }
    // Every link on the way (the ninth red team: a version link `current` → `1.0` pointed at
    // a folder of the agent's).
    let m = manifest_of(&[
        ("usr/local/bin/", K::Dir, ""),
        (
            "usr/local/bin/csvcheck",
            K::Link,
            "/opt/csvcheck/current/bin/csvcheck",
        ),
        ("opt/csvcheck/current", K::Link, "1.0"),
        ("opt/csvcheck/1.0/bin/csvcheck", K::File, ""),
    ]);
    let t = Toolchain {
        path: vec!["/usr/local/bin".into()],
        ..Toolchain::default()
    };
    let r = Rules::new(&m, &t, "/app", "", "/root", &[]);
    assert_toolchain(
        &r,
        &["/opt/csvcheck/current", "/opt/csvcheck/1.0/bin/csvcheck"],
    );
    // A folder `test.sh` puts on `PATH`: its links too.
    let m = manifest_of(&[
        ("srv/tools/", K::Dir, ""),
        ("srv/tools/check", K::Link, "/opt/check/bin/check"),
        ("opt/check/bin/check", K::File, ""),
    ]);
    let r = Rules::new(
        &m,
        &Toolchain::default(),
        "/app",
        "export PATH=/srv/tools:$PATH\npytest /tests",
        "/root",
        &[],
    );
    assert_toolchain(&r, &["/opt/check/bin/check"]);
}

/// The eighth red team's `coverage-plugin-cwd`: `cd /app; python3 -m pytest --cov=/app …` and
/// the agent's `/app/.coveragerc` naming a plugin of its own. coverage.py's configuration where
/// Python starts is the toolchain's: `.coveragerc` always, `setup.cfg`, `tox.ini` and
/// `pyproject.toml` when test.sh runs coverage, and any file test.sh or the image names for it.
#[test]
fn coverage_configuration_where_python_starts_is_the_toolchain() {
    let cov = rules_with(
        "mkdir -p /logs/verifier\ncd /app\npython3 -m pytest --cov=/app --cov-report=term --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA",
        "",
    );
    assert_toolchain(
        &cov,
        &[
            "/app/.coveragerc",
            "/.coveragerc",
            "/app/setup.cfg",
            "/app/tox.ini",
            "/app/pyproject.toml",
        ],
    );
    for p in [
        "/app/zzcov.py",
        "/app/sub/setup.cfg",
        "/opt/elsewhere/.coveragerc",
        "/app/coverage.json",
    ] {
        assert_eq!(cov.classify(p, false, &[]), Class::Work, "{p}");
    }
    // Without coverage in test.sh, only `.coveragerc` (a configuration may start pytest-cov):
    // an honest project's own files stay work.
    let plain = rules_with("cd /app\npython3 -m pytest /tests/test_outputs.py", "");
    assert_toolchain(&plain, &["/app/.coveragerc"]);
    for p in ["/app/pyproject.toml", "/app/setup.cfg", "/app/tox.ini"] {
        assert_eq!(plain.classify(p, false, &[]), Class::Work, "{p}");
    }
    // The files test.sh or the image names for it.
    let named = rules_with(
        "cd /srv\ncoverage run --rcfile=/opt/cov.ini -m pytest /tests\npytest --cov-config cov2.ini /tests\nCOVERAGE_RCFILE=rc3 pytest /tests",
        "",
    )
    .with_image_env(
        &["COVERAGE_PROCESS_START=/opt/cov/start.ini".into()],
        "pytest /tests",
    );
    assert_toolchain(
        &named,
        &[
            "/opt/cov.ini",
            "/srv/cov2.ini",
            "/srv/rc3",
            "/opt/cov/start.ini",
            "/srv/pyproject.toml",
        ],
    );
    // Failing closed, in any folder of the image.
    let closed = rules_with("cd \"$SRCDIR\"\npython3 -m pytest --cov /tests", "");
    assert!(closed.fails_closed().is_some());
    assert_toolchain(&closed, &["/opt/.coveragerc", "/opt/setup.cfg"]);
    assert_eq!(
        coverage_use("python3 -m coverage run -m pytest"),
        (true, vec![])
    );
    assert_eq!(coverage_use("pytest /tests"), (false, vec![]));
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
            "/app/.Rprofile",
            "/app/matplotlibrc",
            "/tmp/pytest-of-root/pytest-0/test_matches0/reference.json",
            "/root/nltk_data/tokenizers/punkt/english.pickle",
            "/home/app/nltk_data/corpora/stopwords/english",
            "/srv/analysis/.Renviron",
            "/app/.octaverc",
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
    let uvx =
        "source $HOME/.local/bin/env\ncd /srv/job\nuvx -p 3.13 -w pytest==8.4.1 pytest /tests/t.py";
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
    // Failing closed, pytest's configuration in a folder of the image, or one test.sh makes,
    // is where the tests may run (`cp -r /tests "$EVAL" && cd "$EVAL"`); the agent's own
    // folders and a data file of another name keep theirs.
    let copied = Rules::new(
        &image,
        &Toolchain::default(),
        "/",
        "mkdir -p /srv/eval\ncp -r /tests \"$EVAL\" && cd \"$EVAL\" && pytest",
        "/root",
        &[],
    );
    assert!(copied.fails_closed().is_some());
    for p in [
        "/app/conftest.py",
        "/srv/pytest.ini",
        "/srv/eval/conftest.py",
        "/app/pkg/data/pyproject.toml",
    ] {
        assert!(
            matches!(copied.classify(p, false, &[]), Class::Toolchain(why) if why.contains("fails closed")),
            "{p}"
        );
    }
    for p in [
        "/opt/mine/conftest.py",
        "/app/pkg/conftest.py",
        "/app/notes.ini",
    ] {
        assert_eq!(copied.classify(p, false, &[]), Class::Work, "{p}");
    }
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

#[test]
fn what_requirement_and_configuration_files_name_is_where_packages_come_from() {
    // The sixth red team: test.sh installs the image's requirement file, whose own
    // `--find-links` names a folder the agent can fill with a higher version of a package.
    use super::super::manifest::FileKind::File;
    let tar = super::super::manifest::tests::tar_of(&[
        (
            "opt/eval/requirements.txt",
            File,
            "--find-links /opt/wheels\n-r more.txt\nopenpyxl==3.1.5  # pinned\n",
        ),
        (
            "opt/eval/more.txt",
            File,
            "-f ./vendored\n--extra-index-url file:///srv/idx\n\
             x @ file:///opt/pinned/x-1.0-py3-none-any.whl\n",
        ),
        (
            "etc/pip.conf",
            File,
            "[global]\nfind-links =\n    /opt/conf-wheels\n    https://example.org/w\n",
        ),
        (
            "root/.config/uv/uv.toml",
            File,
            "find-links = [\"/opt/uv-wheels\"]\n[[index]]\nname = \"local\"\n\
             url = \"file:///opt/uv-index\"\n",
        ),
        (
            "app/pyproject.toml",
            File,
            "[project]\nname = \"app\"\n[tool.uv]\nfind-links = [\"wheelhouse\"]\n",
        ),
    ]);
    let m = Manifest::from_tar(&tar[..], Default::default()).unwrap();
    let new = |sh: &str| Rules::new(&m, &Toolchain::default(), "/app", sh, "/root", &[]);
    let r = new("pip install -r /opt/eval/requirements.txt\npytest /tests/test_outputs.py");
    assert_toolchain(
        &r,
        &[
            "/opt/wheels/openpyxl-99.0-py3-none-any.whl",
            // A relative source of a requirement file: from its folder and the working one.
            "/opt/eval/vendored/a.whl",
            "/app/vendored/a.whl",
            "/srv/idx/openpyxl/index.html",
            "/opt/pinned/x-1.0-py3-none-any.whl",
            // The image's pip and uv configuration, wherever test.sh installs.
            "/opt/conf-wheels/b.whl",
            "/opt/uv-wheels/c.whl",
            "/opt/uv-index/openpyxl/index.html",
        ],
    );
    for p in ["/app/out.csv", "/opt/other/a.whl", "/app/wheelhouse/d.whl"] {
        assert!(r.classify(p, false, &[]).is_work(), "{p}");
    }
    // A project's `[tool.uv]` where test.sh runs uv; nothing of it without an installer.
    let uv = new("uv run pytest /tests/test_outputs.py");
    assert_toolchain(&uv, &["/app/wheelhouse/d.whl", "/opt/uv-wheels/c.whl"]);
    let none = new("pytest /tests/test_outputs.py");
    for p in [
        "/opt/conf-wheels/b.whl",
        "/opt/wheels/a.whl",
        "/app/wheelhouse/d.whl",
    ] {
        assert!(none.classify(p, false, &[]).is_work(), "{p}");
    }
    // A requirement file of the tests, read from the task's folder; what it includes from the
    // image, from the image.
    let sh = "pip install -r /tests/requirements.txt\npytest /tests/test_outputs.py";
    let tests = std::collections::BTreeMap::from([(
        "/tests/requirements.txt".to_string(),
        vec![
            "--find-links /opt/t-wheels".to_string(),
            "-r /opt/eval/more.txt".to_string(),
            "-c constraints.txt".to_string(),
        ],
    )]);
    assert!(
        new(sh)
            .classify("/opt/t-wheels/x.whl", false, &[])
            .is_work()
    );
    let with_tests = new(sh).with_test_requirements(&m, &tests);
    assert_toolchain(
        &with_tests,
        &["/opt/t-wheels/x.whl", "/opt/eval/vendored/a.whl"],
    );
    // A file a requirement file includes is pip's to read, whoever would write it.
    for f in ["/opt/eval/more.txt", "/tests/constraints.txt"] {
        assert!(
            matches!(
                with_tests.classify(f, false, &[]),
                Class::Toolchain(_) | Class::VerifierOnly
            ),
            "{f}"
        );
    }
    assert!(matches!(
        r.classify("/opt/eval/more.txt", false, &[]),
        Class::Toolchain(_)
    ));
}

#[test]
fn image_node_packages_in_and_above_copied_node_tests_shadow() {
    // The sixth red team: test.sh copies a Node test into the agent's project and runs it
    // there; Node finds `/app/node_modules/tinyschema` before the image's own.
    use super::super::manifest::FileKind::{Dir, File};
    let tar = super::super::manifest::tests::tar_of(&[
        ("usr/local/lib/node_modules", Dir, ""),
        ("usr/local/lib/node_modules/tinyschema/index.js", File, ""),
        ("usr/local/lib/node_modules/@scope/pkg/index.js", File, ""),
        ("srv/project/node_modules", Dir, ""),
        ("srv/project/node_modules/tinyschema/index.js", File, ""),
    ]);
    let m = Manifest::from_tar(&tar[..], Default::default()).unwrap();
    let new = |sh: &str| Rules::new(&m, &Toolchain::default(), "/app", sh, "/root", &[]);
    let r = new("cp /tests/test_outputs.js /app/\ncd /app\nnode test_outputs.js");
    for (p, package) in [
        ("/app/node_modules/tinyschema/index.js", "tinyschema"),
        ("/app/node_modules/tinyschema", "tinyschema"),
        ("/app/node_modules/@scope/pkg/lib/x.js", "@scope/pkg"),
    ] {
        assert_eq!(
            r.classify(p, false, &[]),
            Class::Shadow(package.into()),
            "{p}"
        );
    }
    // Another package, a folder below the tests' and tests run where they are: the agent's.
    for p in [
        "/app/node_modules/csvmini/index.js",
        "/app/node_modules/@other/pkg/index.js",
        "/app/src/node_modules/tinyschema/index.js",
        "/app/summary.json",
    ] {
        assert!(r.classify(p, false, &[]).is_work(), "{p}");
    }
    // The image's own project packages where the tests land stay the image's (an agent's
    // `npm install` there is left behind, never flagged).
    let project = new("cp /tests/t.test.js /srv/project/\ncd /srv/project\nnode t.test.js");
    assert!(matches!(
        project.classify("/srv/project/node_modules/tinyschema/index.js", false, &[]),
        Class::Toolchain(_)
    ));
    let in_place = new("node /tests/test_outputs.js");
    assert!(
        in_place
            .classify("/app/node_modules/tinyschema/index.js", false, &[])
            .is_work()
    );
    // A Python test's copy makes no Node place.
    let py = new("cp /tests/test_outputs.py /app/\ncd /app\npytest test_outputs.py");
    assert!(
        py.classify("/app/node_modules/tinyschema/index.js", false, &[])
            .is_work()
    );
}

#[test]
fn a_virtual_environment_test_sh_makes_is_the_toolchain() {
    // The seventh red team: `python3 -m venv DIR` keeps what DIR holds, so a `.pth` file or a
    // plugin's entry point the agent left there ran in the tests.
    let r = rules_with(
        "python3 -m venv /opt/test-env\n/opt/test-env/bin/pip install pytest\n\
         cd /app && uv venv && python3 -m venv work-env\n\
         source /opt/test-env/bin/activate\npytest /tests/test_outputs.py",
        "",
    );
    assert_toolchain(
        &r,
        &[
            "/opt/test-env/lib/python3.11/site-packages/zz.pth",
            "/opt/test-env/lib/python3.11/site-packages/zzplug-1.0.dist-info/entry_points.txt",
            "/app/.venv/lib/python3.12/site-packages/zzplug.py",
            "/app/work-env/bin/activate",
        ],
    );
    assert!(r.classify("/app/env-notes.txt", false, &[]).is_work());
}

#[test]
fn an_empty_or_dot_entry_of_path_protects_what_test_sh_runs_in_any_folder() {
    // The tenth red team: `ENV PATH="${EXTRA_BIN}:${PATH}"` with EXTRA_BIN unset.
    let sh = "mkdir -p /logs/verifier\ncheck-answer /app/answer.txt";
    for path in [":/usr/bin", "/usr/bin:.", "/usr/bin::/bin"] {
        let r = rules_with(sh, "").with_image_env(&[format!("PATH={path}")], sh);
        assert!(r.fails_closed().is_some(), "{path}");
        assert_toolchain(&r, &["/app/check-answer", "/app/mkdir", "/app/python3"]);
        assert_eq!(r.classify("/app/answer.txt", false, &[]), Class::Work);
    }
    // `/` and absolute entries alone are no such entry.
    let r = rules_with(sh, "").with_image_env(&["PATH=/usr/bin:/".into()], sh);
    assert!(r.fails_closed().is_none());
    assert_eq!(r.classify("/app/check-answer", false, &[]), Class::Work);
}

#[test]
fn the_verifier_s_own_search_paths_read_as_test_sh_s_first_lines() {
    // `[verifier] env` (or `[environment] env`, `--env`, a compose file's `environment`)
    // reaches the verifier's exec: the trial reads it as `export` lines before test.sh
    // (`trial::handover::exports`).
    let sh = "export PATH=/opt/grader:/usr/bin\nexport PYTHONPATH=/opt/project/src\n\
              mkdir -p /logs/verifier\ncheck-answer /app/answer.txt\npytest /tests";
    let r = rules_with(sh, "");
    assert_toolchain(&r, &["/opt/grader/check-answer"]);
    assert!(
        matches!(
            r.classify("/opt/project/src/json/__init__.py", false, &[]),
            Class::Shadow(_)
        ),
        "{:?}",
        r.classify("/opt/project/src/json/__init__.py", false, &[])
    );
}

#[test]
fn the_verifier_s_environment_is_read_literally() {
    // The eleventh red team: the file bash sources first, a preloaded library, the pytest
    // configuration and plugin PYTEST_ADDOPTS names, and search paths whose values test.sh's
    // reader would split (a blank) or expand (`~`, which Python never expands).
    let sh = "pytest /tests";
    let env: Vec<String> = [
        "BASH_ENV=/opt/env/setup.sh",
        "LD_PRELOAD=/opt/hook/libhook.so",
        "PYTEST_ADDOPTS=-c /srv/conf/ci.ini -p myplug -k 'not slow'",
        "PYTHONPATH=/opt/my project/src:~/lib",
        "PATH=/opt/my tools/bin:/usr/bin",
        "PYTHONUSERBASE=/opt/py user",
    ]
    .map(String::from)
    .to_vec();
    let r = rules_with(sh, "").with_verifier_env(&env);
    assert_toolchain(
        &r,
        &[
            "/opt/env/setup.sh",
            "/opt/hook/libhook.so",
            "/srv/conf/ci.ini",
            "/opt/my tools/bin/check",
            "/opt/py user/lib/python3.12/site-packages/evil.pth",
        ],
    );
    for shadow in [
        "/opt/my project/src/json/__init__.py",
        "/app/~/lib/json/__init__.py",
        "/app/myplug.py",
    ] {
        assert!(
            matches!(r.classify(shadow, false, &[]), Class::Shadow(_)),
            "{shadow}: {:?}",
            r.classify(shadow, false, &[])
        );
    }
    assert_eq!(
        r.classify("/opt/my project/src/answer.py", false, &[]),
        Class::Work
    );
    // BASH_ENV relative to the working folder, and through an expansion the rule cannot name.
    let r = rules_with(sh, "").with_verifier_env(&["BASH_ENV=.testenv".into()]);
    assert_toolchain(&r, &["/app/.testenv"]);
    let r = rules_with(sh, "").with_verifier_env(&["BASH_ENV=$(cat /x)".into()]);
    assert!(r.fails_closed().is_some());
}

#[test]
fn pytest_s_configuration_named_in_an_assignment_is_its() {
    // `PYTEST_ADDOPTS="-c /srv/conf/ci.ini" pytest` in test.sh itself.
    let sh = "PYTEST_ADDOPTS=\"-c /srv/conf/ci.ini -k x\" pytest /tests/test_outputs.py";
    let r = rules_with(sh, "");
    assert_toolchain(&r, &["/srv/conf/ci.ini"]);
}
