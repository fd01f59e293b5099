//! Two Python test images laid out as real task images are, built from this machine's own
//! interpreters on skillscope's offline busybox base (no registry; PyPI only, for pytest):
//!
//! - [`PYTHON_SLIM_IMAGE`], the layout of the official `python:3.x-slim` images (24 of 87
//!   SkillsBench tasks start from one): the interpreter in `/usr/local/bin`, its standard library
//!   and `site-packages` in `/usr/local/lib/python3.N`, `libpython` in `/usr/local/lib` found
//!   through `/etc/ld.so.cache`, no byte code in the standard library (those images delete it).
//!   Made from a CPython whose prefix is not `/usr` (pyenv's), relocated: Debian's `python3`
//!   cannot stand in, as it searches `dist-packages` folders only.
//! - [`PYTHON_DEBIAN_IMAGE`], Debian's layout (`ubuntu:*` and `debian:*` images with apt's
//!   `python3`): `/usr/bin/python3.N`, the standard library in `/usr/lib/python3.N` with its
//!   byte code, packages in `/usr/lib/python3/dist-packages`, `sitecustomize.py` linked to
//!   `/etc/python3.N/`.
//!
//! Both hold `bash`, the shared libraries `ldd` names for what they keep, `pytest` 8.4.1 with
//! `pytest-json-ctrf` 0.3.5 (what SkillsBench's `test.sh` installs) and `pip`, installed with
//! `pip install --target` and given pip's console scripts. Test suites, IDLE, Tk, `ensurepip`,
//! `lib2to3` and the static library are left out. Each is built once per Docker daemon and
//! kept by its tag; [`ensure_python_image`] reports how long the build took and how large the
//! image is.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use bollard::Docker;
use skillscope::runner::docker::base_image::{BUSYBOX_IMAGE, ensure_busybox};

/// The `python:3.x-slim` layout.
pub const PYTHON_SLIM_IMAGE: &str = "skillscope-test/python-slim:1";
/// Debian's layout.
pub const PYTHON_DEBIAN_IMAGE: &str = "skillscope-test/python-debian:2";

/// What SkillsBench's verifiers install, and pip.
const PACKAGES: &[&str] = &["pytest==8.4.1", "pytest-json-ctrf==0.3.5", "pip==24.2"];

/// Folders of a standard library left out (test suites and what a slim image lacks).
const LEFT_OUT: &[&str] = &[
    "test",
    "tests",
    "idle_test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "lib2to3",
    "site-packages",
    "dist-packages",
];

/// The two layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `python:3.x-slim`.
    Slim,
    /// Debian's `python3`.
    Debian,
}

impl Layout {
    /// The image's tag.
    pub fn image(self) -> &'static str {
        match self {
            Layout::Slim => PYTHON_SLIM_IMAGE,
            Layout::Debian => PYTHON_DEBIAN_IMAGE,
        }
    }

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Slim => "slim",
            Layout::Debian => "debian",
        }
    }
}

/// What a build cost.
#[derive(Debug, Clone)]
pub struct Built {
    /// The tag.
    pub image: &'static str,
    /// Seconds the build took (0 when the image was already there).
    pub seconds: f64,
    /// The image's size, bytes.
    pub bytes: i64,
}

static BUILD: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Makes sure `layout`'s image exists on the default Docker daemon (built once, kept by tag).
pub async fn ensure_python_image(layout: Layout) -> Built {
    let _one = BUILD.lock().await;
    let docker = Docker::connect_with_defaults().expect("docker");
    let image = layout.image();
    if let Ok(i) = docker.inspect_image(image).await {
        return Built {
            image,
            seconds: 0.0,
            bytes: i.size.unwrap_or(0),
        };
    }
    let t0 = std::time::Instant::now();
    ensure_busybox(&docker).await.expect("busybox base image");
    let staging = tempfile::tempdir().expect("tempdir");
    let root = staging.path().join("root");
    let env = stage(layout, &root);
    let tar = tempfile::NamedTempFile::new().expect("tempfile");
    {
        let mut b = tar::Builder::new(tar.as_file());
        b.follow_symlinks(false);
        b.mode(tar::HeaderMode::Complete);
        b.append_dir_all(".", &root).expect("tar the staged image");
        b.finish().expect("tar");
    }
    let c = skillscope::runner::docker::start_helper(
        &docker,
        "default",
        BUSYBOX_IMAGE,
        "python-image",
        false,
    )
    .await
    .expect("start a busybox container");
    let file = tokio::fs::File::open(tar.path()).await.unwrap();
    c.upload_tar_at(skillscope::runner::backend::TarBody::Spooled(file), "/")
        .await
        .expect("copy the staged image in");
    // The loader's cache, as the image's own ldconfig writes it (`/usr/local/lib` for libpython).
    let (r, out) = c
        .sh_output(
            "/sbin/ldconfig && echo ldconfig-ok",
            std::time::Duration::from_secs(60),
        )
        .await
        .expect("ldconfig");
    assert!(
        out.contains("ldconfig-ok"),
        "ldconfig in {image}: {r:?} {out}"
    );
    // The filesystem becomes an image of its own (a commit would keep the helper's entrypoint
    // and labels): exported, skillscope's mount points left out, imported with the image's
    // configuration.
    let rootfs = tempfile::NamedTempFile::new().expect("tempfile");
    {
        let stream = docker.export_container(c.id());
        let mut out = tokio::fs::File::create(rootfs.path()).await.unwrap();
        let mut stream = std::pin::pin!(stream);
        use futures_util::StreamExt;
        use tokio::io::AsyncWriteExt;
        while let Some(chunk) = stream.next().await {
            out.write_all(&chunk.expect("export the staged container"))
                .await
                .unwrap();
        }
        out.flush().await.unwrap();
    }
    c.remove().await;
    let filtered = tempfile::NamedTempFile::new().expect("tempfile");
    {
        let mut a = tar::Archive::new(std::fs::File::open(rootfs.path()).unwrap());
        let mut b = tar::Builder::new(filtered.as_file());
        for e in a.entries().unwrap() {
            let mut e = e.unwrap();
            let p = e.path().unwrap().to_string_lossy().into_owned();
            let p = p.trim_start_matches("./");
            if p.starts_with("skillscope") || p == ".dockerenv" {
                continue;
            }
            let mut h = e.header().clone();
            match e.link_name().unwrap() {
                Some(target) => {
                    let target = target.into_owned();
                    b.append_link(&mut h, p, target).unwrap();
                }
                None => b.append_data(&mut h, p, &mut e).unwrap(),
            }
        }
        b.finish().unwrap();
    }
    let (repo, tag) = image.split_once(':').unwrap();
    let mut changes = vec!["CMD [\"bash\"]".to_string(), "WORKDIR /".to_string()];
    changes.extend(env.iter().map(|e| format!("ENV {e}")));
    let body = tokio::fs::read(filtered.path()).await.unwrap();
    let mut stream = docker.create_image(
        Some(bollard::query_parameters::CreateImageOptions {
            from_src: Some("-".into()),
            repo: Some(repo.into()),
            tag: Some(tag.into()),
            changes,
            ..Default::default()
        }),
        Some(bollard::body_full(body.into())),
        None,
    );
    {
        use futures_util::StreamExt;
        while let Some(item) = stream.next().await {
            item.expect("import the python test image");
        }
    }
    let size = docker
        .inspect_image(image)
        .await
        .map_or(0, |i| i.size.unwrap_or(0));
    let built = Built {
        image,
        seconds: t0.elapsed().as_secs_f64(),
        bytes: size,
    };
    eprintln!(
        "built {image} in {:.1}s: {:.1} MB",
        built.seconds,
        built.bytes as f64 / 1e6
    );
    built
}

/// A CPython on this machine: its executable and `X.Y`.
struct Source {
    exe: PathBuf,
    stdlib: PathBuf,
    version: String,
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asks `python` for its real executable, standard library and version.
fn source_of(python: &Path) -> Option<Source> {
    let out = Command::new(python)
        .args([
            "-I",
            "-c",
            "import sys, sysconfig, os; print(os.path.realpath(sys.executable)); print(sysconfig.get_paths()['stdlib']); print('%d.%d' % sys.version_info[:2]); print(sys.prefix)",
        ])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut l = text.lines();
    let (exe, stdlib, version, _prefix) = (l.next()?, l.next()?, l.next()?, l.next()?);
    Some(Source {
        exe: exe.into(),
        stdlib: stdlib.into(),
        version: version.into(),
    })
}

/// The interpreter of a layout: Debian's `/usr/bin/python3`; for the slim layout a CPython
/// whose prefix is not `/usr` (pyenv's: `$PYENV_ROOT` or `~/.pyenv`, else `python3` on `PATH`),
/// relocated. Panics naming what is missing when there is none: Debian's `python3` searches
/// only `dist-packages` folders, never the slim images' `site-packages`.
fn source(layout: Layout) -> Source {
    let debian = || {
        source_of(Path::new("/usr/bin/python3"))
            .filter(|s| s.stdlib.to_string_lossy().starts_with("/usr/lib/python3"))
            .expect("Debian's python3 (/usr/bin/python3 with /usr/lib/python3.N): apt-get install python3")
    };
    if layout == Layout::Debian {
        return debian();
    }
    let mut candidates: Vec<PathBuf> = Vec::new();
    let pyenv = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")));
    if let Some(root) = pyenv
        && let Ok(rd) = std::fs::read_dir(root.join("versions"))
    {
        let mut v: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path().join("bin/python3"))
            .filter(|p| p.exists())
            .collect();
        v.sort();
        candidates.extend(v.into_iter().rev());
    }
    candidates.insert(0, "python3".into());
    candidates
        .iter()
        .filter_map(|p| source_of(p))
        .find(|s| !s.stdlib.starts_with("/usr/lib/"))
        .unwrap_or_else(|| {
            panic!(
                "the python:3.x-slim layout needs a CPython built for its own prefix (pyenv's: \
                 $PYENV_ROOT/versions/3.N or ~/.pyenv/versions/3.N); Debian's python3 searches \
                 dist-packages folders only"
            )
        })
}

/// Copies `from` (a folder) into `to` (made when missing), links as links, files overwriting
/// files, leaving out `skip(relative path)`.
pub fn copy_tree(from: &Path, to: &Path, skip: &dyn Fn(&Path) -> bool) {
    for e in walkdir::WalkDir::new(from)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| !skip(e.path().strip_prefix(from).unwrap()))
    {
        let e = e.expect("walk the standard library");
        let rel = e.path().strip_prefix(from).unwrap();
        let dest = to.join(rel);
        let t = e.file_type();
        if t.is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else if t.is_symlink() {
            let target = std::fs::read_link(e.path()).unwrap();
            std::os::unix::fs::symlink(target, &dest).unwrap();
        } else if t.is_file() {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// Copies host file `src` to `root` + `dest` (following links: the file itself).
fn put(root: &Path, src: &Path, dest: &str) {
    let d = root.join(dest.trim_start_matches('/'));
    std::fs::create_dir_all(d.parent().unwrap()).unwrap();
    std::fs::copy(src, &d).unwrap_or_else(|e| panic!("copying {} to {dest}: {e}", src.display()));
}

fn link(root: &Path, target: &str, at: &str) {
    let d = root.join(at.trim_start_matches('/'));
    std::fs::create_dir_all(d.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&d);
    std::os::unix::fs::symlink(target, d).unwrap();
}

fn write(root: &Path, at: &str, text: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let d = root.join(at.trim_start_matches('/'));
    std::fs::create_dir_all(d.parent().unwrap()).unwrap();
    std::fs::write(&d, text).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The shared libraries `ldd` names for `files`: `(path as named, resolved)`; `None` when one
/// is not found.
fn libraries(file: &Path) -> Option<Vec<String>> {
    let out = Command::new("ldd").arg(file).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut libs = Vec::new();
    for l in text.lines() {
        if l.contains("not found") {
            return None;
        }
        if let Some((_, rest)) = l.split_once("=> ") {
            if let Some(p) = rest
                .split_whitespace()
                .next()
                .filter(|p| p.starts_with('/'))
            {
                libs.push(p.to_string());
            }
        } else if let Some(p) = l.split_whitespace().next().filter(|p| p.starts_with('/')) {
            libs.push(p.to_string());
        }
    }
    Some(libs)
}

/// pip's console script for `module:function`.
fn console_script(python: &str, module: &str, function: &str) -> String {
    format!(
        "#!{python}\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom {module} import {function}\nif __name__ == '__main__':\n    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n    sys.exit({function}())\n"
    )
}

/// Lays out `layout`'s image under `root`; returns its `ENV` lines.
fn stage(layout: Layout, root: &Path) -> Vec<String> {
    let src = source(layout);
    let v = &src.version;
    let (prefix, site, bin) = match layout {
        Layout::Slim => (
            "/usr/local".to_string(),
            format!("/usr/local/lib/python{v}/site-packages"),
            "/usr/local/bin",
        ),
        Layout::Debian => (
            "/usr".to_string(),
            "/usr/lib/python3/dist-packages".to_string(),
            "/usr/bin",
        ),
    };
    let stdlib = format!("{prefix}/lib/python{v}");
    let keep_bytecode = layout == Layout::Debian;
    let skip = |rel: &Path| -> bool {
        let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or("");
        LEFT_OUT.contains(&name)
            || name.starts_with("config-")
            || (name == "__pycache__" && !keep_bytecode)
            || (rel.starts_with("lib-dynload")
                && (name.starts_with("_tkinter")
                    || name.starts_with("_test")
                    || name.starts_with("xx")))
    };
    copy_tree(
        &src.stdlib,
        &root.join(stdlib.trim_start_matches('/')),
        &skip,
    );
    if layout == Layout::Debian {
        // Debian links its sitecustomize.py to /etc, and ships an empty /usr/local site folder.
        let etc = format!("/etc/python{v}/sitecustomize.py");
        if Path::new(&etc).exists() {
            put(root, Path::new(&etc), &etc);
        }
        std::fs::create_dir_all(root.join(format!("usr/local/lib/python{v}/dist-packages")))
            .unwrap();
        for d in ["usr/local/bin", "usr/local/sbin"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
    }
    // The interpreter, its shared library, and what each kept extension module needs.
    let exe = format!("{bin}/python{v}");
    put(root, &src.exe, &exe);
    link(root, &format!("python{v}"), &format!("{bin}/python3"));
    if layout == Layout::Slim {
        link(root, "python3", &format!("{bin}/python"));
    }
    let mut needed: BTreeSet<String> = BTreeSet::new();
    let mut scan = vec![src.exe.clone(), PathBuf::from("/bin/bash")];
    let dynload = root
        .join(stdlib.trim_start_matches('/'))
        .join("lib-dynload");
    for e in std::fs::read_dir(&dynload).into_iter().flatten().flatten() {
        let p = e.path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        // Modules whose libraries this machine lacks are left out, as a slim image lacks them.
        if libraries(&src.stdlib.join("lib-dynload").join(&name)).is_none() {
            std::fs::remove_file(&p).unwrap();
        } else {
            scan.push(src.stdlib.join("lib-dynload").join(&name));
        }
    }
    for f in &scan {
        needed.extend(libraries(f).unwrap_or_else(|| panic!("libraries of {}", f.display())));
    }
    for lib in needed {
        let name = Path::new(&lib)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let dest = if name.starts_with("libpython") {
            format!("{prefix}/lib/{name}")
        } else if name.starts_with("ld-linux") {
            format!("/lib64/{name}")
        } else {
            format!("/lib/x86_64-linux-gnu/{name}")
        };
        put(root, Path::new(&lib), &dest);
    }
    put(root, Path::new("/sbin/ldconfig"), "/sbin/ldconfig");
    write(
        root,
        "/etc/ld.so.conf",
        &format!("{prefix}/lib\n/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n"),
        0o644,
    );
    match layout {
        Layout::Slim => put(root, Path::new("/bin/bash"), "/bin/bash"),
        Layout::Debian => {
            put(root, Path::new("/bin/bash"), "/usr/bin/bash");
            link(root, "/usr/bin/bash", "/bin/bash");
        }
    }
    // pytest, its CTRF plugin and pip, as `pip install --target` writes them, byte code
    // compiled by the image's own interpreter.
    let site_dir = root.join(site.trim_start_matches('/'));
    std::fs::create_dir_all(&site_dir).unwrap();
    pip_install(&src, &site_dir);
    let staged = root.join(exe.trim_start_matches('/'));
    run(Command::new(&staged)
        .args(["-I", "-m", "compileall", "-q"])
        .arg(&site_dir));
    let _ = std::fs::remove_dir_all(site_dir.join("bin"));
    let py = format!("{bin}/python{v}");
    let py = if layout == Layout::Debian {
        "/usr/bin/python3".to_string()
    } else {
        py
    };
    for (name, module, function) in [
        ("pytest", "pytest", "console_main"),
        ("py.test", "pytest", "console_main"),
        ("pip", "pip._internal.cli.main", "main"),
        ("pip3", "pip._internal.cli.main", "main"),
    ] {
        write(
            root,
            &format!("{bin}/{name}"),
            &console_script(&py, module, function),
            0o755,
        );
    }
    let path = match layout {
        Layout::Slim => "PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin",
        Layout::Debian => "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    };
    let mut env = vec![path.to_string(), "LANG=C.UTF-8".to_string()];
    if layout == Layout::Slim {
        env.push(format!("PYTHON_VERSION={v}"));
    }
    env
}

/// `pip install --target site_dir` of [`PACKAGES`] for `src`'s version, with whichever pip this
/// machine has (the source's own, else `python3`'s, pinned to the source's version).
fn pip_install(src: &Source, site_dir: &Path) {
    let pythons = [src.exe.clone(), PathBuf::from("python3")];
    let pip = pythons
        .iter()
        .find(|p| {
            Command::new(p)
                .args(["-m", "pip", "--version"])
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("a pip on this machine (python3 -m pip) to install pytest into the test images");
    run(Command::new(pip)
        .args([
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--no-compile",
            "--only-binary=:all:",
            "--python-version",
            &src.version,
            "--target",
        ])
        .arg(site_dir)
        .args(PACKAGES));
}
