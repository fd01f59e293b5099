//! An image's files by content: every path with its kind, mode, size, SHA-256 (regular files)
//! and link target, read once per image from a tar stream of its filesystem (Docker's export of
//! a container created from it, never started). What the agent changed is measured against it
//! by content, never by a filesystem's metadata.

use std::collections::BTreeMap;
use std::io::Read;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::test_sh::package_lines;

/// Most bytes of a file read to tell a pip console script.
pub const MAX_SCRIPT: u64 = 16 * 1024;

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FileKind {
    /// A regular file.
    File,
    /// A folder.
    Dir,
    /// A symbolic link.
    Link,
    /// A device, pipe or socket.
    Other,
}

impl FileKind {
    /// The kind of a tar entry (a hard link counts as the file it names).
    pub fn of(t: tar::EntryType) -> FileKind {
        match t {
            tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::Link => {
                FileKind::File
            }
            tar::EntryType::Directory => FileKind::Dir,
            tar::EntryType::Symlink => FileKind::Link,
            _ => FileKind::Other,
        }
    }
}

/// One path of an image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileFact {
    /// What it is.
    pub kind: FileKind,
    /// Permission bits (`0o7777`).
    pub mode: u32,
    /// Size, bytes (regular files).
    pub size: u64,
    /// SHA-256 of a regular file's content.
    pub sha256: Option<[u8; 32]>,
    /// A symbolic link's target, as written.
    pub link: Option<String>,
    /// What a small file holding a console script as pip or uv writes it calls,
    /// `module:function` ([`console_entry`]): package upgrades rewrite
    /// those.
    #[serde(default)]
    pub script: Option<String>,
    /// Python's stamp of a source (`.py`: its mtime in seconds and size, each modulo 2³²) or
    /// the stamp a timestamp-checked byte-code file (`.pyc`) holds for its source (bytes 8–16
    /// of its header): the byte code is valid when the two agree, and the interpreter then never
    /// rewrites it.
    #[serde(default)]
    pub stamp: Option<(u32, u32)>,
    /// Owner and group ids, `(uid, gid)`, as the image's tar gives them (`None`: not known, never
    /// compared): a change of owner alone is a change (`chown -R app /app/uploads`).
    #[serde(default)]
    pub owner: Option<(u64, u64)>,
}

/// The stamp a `.pyc` header (its first 16 bytes) holds for its source, when it is
/// timestamp-checked (flags 0).
pub fn pyc_stamp(header: &[u8]) -> Option<(u32, u32)> {
    let word = |i: usize| -> Option<u32> {
        Some(u32::from_le_bytes(header.get(i..i + 4)?.try_into().ok()?))
    };
    (word(4)? == 0).then_some((word(8)?, word(12)?))
}

/// The source a byte-code file is compiled from: `d/__pycache__/m.cpython-311.pyc` (and
/// `.opt-N.pyc`) and the legacy `d/m.pyc` → `d/m.py`.
pub fn pyc_source(path: &str) -> Option<String> {
    let stem = path.strip_suffix(".pyc")?;
    let (dir, name) = stem.rsplit_once('/')?;
    match dir.strip_suffix("/__pycache__") {
        Some(up) => Some(format!("{up}/{}.py", name.split('.').next()?)),
        None => Some(format!("{stem}.py")),
    }
}

/// A reader that keeps the first 16 bytes it yields.
struct Head16<'a, R> {
    inner: &'a mut R,
    head: Vec<u8>,
}

impl<R: Read> Read for Head16<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let want = 16usize.saturating_sub(self.head.len()).min(n);
        self.head.extend_from_slice(&buf[..want]);
        Ok(n)
    }
}

/// Every path of an image, absolute (`/usr/bin/python3`), the root itself left out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Path → fact.
    pub files: BTreeMap<String, FileFact>,
    /// The folders the dynamic loader's configuration names (`/etc/ld.so.conf` and the
    /// `/etc/ld.so.conf.d/*.conf` it includes): libraries there are found by name.
    #[serde(default)]
    pub loader_dirs: Vec<String>,
    /// Regular files mounted over the image ([`Manifest::mount`] of a single file: a compose
    /// file's `./answer.txt:/app/answer.txt`): the same file stays there however it is written,
    /// so what the agent wrote into one is carried by writing it in place, never by replacing it.
    #[serde(default)]
    pub file_mounts: Vec<String>,
    /// The accounts of the image's `/etc/passwd` (when it is at most [`MAX_SCRIPT`] bytes):
    /// where a user's home is, as the runtime sets `HOME` from it.
    #[serde(default)]
    pub accounts: Vec<Account>,
    /// What the image's small files (at most [`MAX_SCRIPT`] bytes) that pip or uv may read say
    /// of where packages come from ([`package_lines`]: a requirement file's `--find-links` and
    /// `-r` lines, `pip.conf`'s and `uv.toml`'s indexes), by path; files that say none are
    /// left out. A requirement file `test.sh` names is read here, as the image has it.
    #[serde(default)]
    pub package_options: BTreeMap<String, Vec<String>>,
}

/// One line of an image's `/etc/passwd`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    /// The user's name.
    pub name: String,
    /// The user's id, as written.
    pub uid: String,
    /// The home folder, as written (may be empty).
    pub home: String,
}

/// The accounts of a `/etc/passwd` text (`name:x:uid:gid:gecos:home:shell` per line; comments,
/// blank and short lines left out).
fn passwd_accounts(text: &[u8]) -> Vec<Account> {
    String::from_utf8_lossy(text)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.len() >= 6 && !f[0].is_empty()).then(|| Account {
                name: f[0].to_string(),
                uid: f[2].to_string(),
                home: f[5].to_string(),
            })
        })
        .collect()
}

/// True for the files the dynamic loader's configuration is read from.
fn is_loader_conf(path: &str) -> bool {
    path == "/etc/ld.so.conf"
        || path
            .strip_prefix("/etc/ld.so.conf.d/")
            .is_some_and(|n| !n.contains('/') && n.ends_with(".conf"))
}

/// The absolute folders a loader configuration file names, one per line (`include` lines and
/// comments left out: the files it includes are read on their own).
fn loader_conf_dirs(text: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(text)
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| l.starts_with('/'))
        .map(|l| l.trim_end_matches('/').to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// The limits of one manifest's read: past them the read fails (an image that large is read
/// again by the next trial rather than kept half).
#[derive(Debug, Clone, Copy)]
pub struct ManifestLimits {
    /// Most entries.
    pub entries: usize,
    /// Most bytes of content.
    pub bytes: u64,
}

impl Default for ManifestLimits {
    fn default() -> Self {
        ManifestLimits {
            entries: 2_000_000,
            bytes: 64 << 30,
        }
    }
}

/// The absolute path of a tar entry's name (`./usr/bin/x`, `usr/bin/x` → `/usr/bin/x`), or
/// `None` for the root itself and for names that hold `..` or are not UTF-8.
pub fn absolute(name: &[u8]) -> Option<String> {
    let name = std::str::from_utf8(name).ok()?;
    let mut out = String::new();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            p => {
                out.push('/');
                out.push_str(p);
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

/// [`absolute`] for any name, with whether it was not UTF-8: such a name is written with each
/// byte that is not part of valid UTF-8 as `\xNN` (`/app/\xff.pth`), so it can be recorded —
/// never used as a path. `None` for the root itself and for names that hold `..`.
pub fn absolute_escaped(name: &[u8]) -> Option<(String, bool)> {
    if std::str::from_utf8(name).is_ok() {
        return absolute(name).map(|p| (p, false));
    }
    let mut text = String::new();
    for chunk in name.utf8_chunks() {
        text.push_str(chunk.valid());
        for b in chunk.invalid() {
            text.push_str(&format!("\\x{b:02x}"));
        }
    }
    if name.split(|b| *b == b'/').any(|part| part == b"..") {
        return None;
    }
    absolute(text.as_bytes()).map(|p| (p, true))
}

/// SHA-256 of everything `r` yields (reading at most `cap` bytes more), with how many bytes
/// were read.
///
/// # Errors
/// The reader's error.
pub fn sha256_of(r: &mut impl Read, cap: u64) -> std::io::Result<([u8; 32], u64)> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut n = 0u64;
    let mut limited = r.take(cap);
    loop {
        let k = limited.read(&mut buf)?;
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
        n += k as u64;
    }
    Ok((h.finalize().into(), n))
}

impl Manifest {
    /// Reads a whole filesystem's tar stream (its entries relative to `/`).
    ///
    /// # Errors
    /// An I/O error of the stream, or one naming the limit it passed.
    pub fn from_tar(r: impl Read, limits: ManifestLimits) -> std::io::Result<Manifest> {
        let mut archive = tar::Archive::new(r);
        archive.set_ignore_zeros(true);
        let mut files = BTreeMap::new();
        let mut loader_dirs: Vec<String> = Vec::new();
        let mut accounts: Vec<Account> = Vec::new();
        let mut package_options = BTreeMap::new();
        let mut bytes = 0u64;
        for entry in archive.entries()? {
            let mut entry = entry?;
            if files.len() >= limits.entries {
                return Err(std::io::Error::other(format!(
                    "more than {} files in the image",
                    limits.entries
                )));
            }
            let Some(path) = absolute(&entry.path_bytes()) else {
                continue;
            };
            let header = entry.header();
            let t = header.entry_type();
            let mode = header.mode().unwrap_or(0) & 0o7777;
            let owner = Some((header.uid().unwrap_or(0), header.gid().unwrap_or(0)));
            let link = entry
                .link_name_bytes()
                .map(|l| String::from_utf8_lossy(&l).into_owned());
            let fact = match t {
                tar::EntryType::Link => {
                    // A hard link is the file it names (read earlier in the stream).
                    let target = link.as_deref().and_then(|l| absolute(l.as_bytes()));
                    match target.and_then(|t| files.get(&t).cloned()) {
                        Some(f) => f,
                        None => continue,
                    }
                }
                _ if FileKind::of(t) == FileKind::File => {
                    let left = limits.bytes.saturating_sub(bytes);
                    let small = entry.header().size().unwrap_or(u64::MAX) <= MAX_SCRIPT;
                    let mtime = entry.header().mtime().unwrap_or(0);
                    let mut head = Vec::new();
                    let (sha, n) = if small {
                        entry.read_to_end(&mut head)?;
                        let n = head.len() as u64;
                        (sha256_of(&mut &head[..], u64::MAX)?.0, n)
                    } else {
                        let mut r = Head16 {
                            inner: &mut entry,
                            head: Vec::new(),
                        };
                        let out = sha256_of(&mut r, left + 1)?;
                        head = r.head;
                        out
                    };
                    if small && is_loader_conf(&path) {
                        for d in loader_conf_dirs(&head) {
                            if !loader_dirs.contains(&d) {
                                loader_dirs.push(d);
                            }
                        }
                    }
                    if small && path == "/etc/passwd" {
                        accounts = passwd_accounts(&head);
                    }
                    if small {
                        let lines = package_lines(&path, &head);
                        if !lines.is_empty() {
                            package_options.insert(path.clone(), lines);
                        }
                    }
                    bytes += n;
                    if bytes > limits.bytes {
                        return Err(std::io::Error::other(format!(
                            "more than {} GiB in the image",
                            limits.bytes >> 30
                        )));
                    }
                    FileFact {
                        kind: FileKind::File,
                        mode,
                        size: n,
                        sha256: Some(sha),
                        link: None,
                        script: small.then(|| console_entry(Some(&head))).flatten(),
                        stamp: if path.ends_with(".pyc") {
                            pyc_stamp(&head)
                        } else if path.ends_with(".py") {
                            Some((mtime as u32, n as u32))
                        } else {
                            None
                        },
                        owner,
                    }
                }
                _ => FileFact {
                    kind: FileKind::of(t),
                    mode,
                    size: 0,
                    sha256: None,
                    link: (t == tar::EntryType::Symlink).then_some(link).flatten(),
                    script: None,
                    stamp: None,
                    owner,
                },
            };
            files.insert(path, fact);
        }
        Ok(Manifest {
            files,
            loader_dirs,
            file_mounts: Vec::new(),
            accounts,
            package_options,
        })
    }

    /// This filesystem with `mounted` laid over it at `target` (absolute), as a mount shows it:
    /// what the image had at `target` and under it is hidden, `mounted`'s paths (absolute, at
    /// `target` and under it) take its place. A path of `mounted` outside `target` is left out.
    pub fn mount(&mut self, target: &str, mounted: &Manifest) {
        let target = target.trim_end_matches('/');
        let under = |p: &str| {
            p == target
                || p.strip_prefix(target)
                    .is_some_and(|rest| target.is_empty() || rest.starts_with('/'))
        };
        self.files.retain(|p, _| !under(p));
        self.file_mounts.retain(|p| !under(p));
        self.package_options.retain(|p, _| !under(p));
        for (p, lines) in &mounted.package_options {
            if under(p) {
                self.package_options.insert(p.clone(), lines.clone());
            }
        }
        if mounted
            .get(target)
            .is_some_and(|f| f.kind == FileKind::File)
        {
            self.file_mounts.push(target.to_string());
        }
        for (p, f) in &mounted.files {
            if under(p) {
                self.files.insert(p.clone(), f.clone());
            }
        }
    }

    /// The fact of `path`, when the image has it.
    pub fn get(&self, path: &str) -> Option<&FileFact> {
        self.files.get(path)
    }

    /// The image's entries directly in folder `dir` (absolute), by name, sorted and each once
    /// (an entry known only by what lies under it counts too).
    pub fn children<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        let prefix = if dir == "/" {
            "/".to_string()
        } else {
            format!("{dir}/")
        };
        let skip = prefix.len();
        let names: std::collections::BTreeSet<&'a str> = self
            .files
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .filter_map(|(p, _)| p[skip..].split('/').next().filter(|n| !n.is_empty()))
            .collect();
        names.into_iter()
    }

    /// Folders that hold a file named `marker` (`pyvenv.cfg`: the image's virtual environments;
    /// `conda-meta` folders count through their parent).
    pub fn folders_with(&self, marker: &str) -> Vec<String> {
        let tail = format!("/{marker}");
        self.files
            .keys()
            .filter_map(|p| p.strip_suffix(&tail))
            .filter(|d| !d.is_empty())
            .map(str::to_string)
            .collect()
    }
}

/// True for a console script as pip (distlib) or uv writes it ([`console_entry`]).
pub fn is_console_script(bytes: Option<&[u8]>) -> bool {
    console_entry(bytes).is_some()
}

/// What a console script as pip (distlib) or uv writes it calls, `module:function`: a Python
/// shebang, then only the lines of their template, importing one function of one module and
/// calling it. `None` for anything else.
pub fn console_entry(bytes: Option<&[u8]>) -> Option<String> {
    let text = bytes.and_then(|b| std::str::from_utf8(b).ok())?;
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let shebang = lines.next()?;
    let interp = shebang.strip_prefix("#!").unwrap_or("").trim();
    let exe = interp.rsplit('/').next().unwrap_or("");
    if !interp.starts_with('/')
        || interp.starts_with("/tmp/")
        || interp.contains(' ')
        || !exe.starts_with("python")
    {
        return None;
    }
    let ident = |s: &str| {
        !s.is_empty()
            && s.split('.').all(|p| {
                !p.is_empty()
                    && !p.starts_with(|c: char| c.is_ascii_digit())
                    && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
    };
    let mut entry: Option<(String, String)> = None;
    let mut called = false;
    for l in lines {
        let t = l.trim();
        match t {
            "# -*- coding: utf-8 -*-"
            | "import re"
            | "import sys"
            | "if __name__ == '__main__':"
            | "if __name__ == \"__main__\":"
            | r"sys.argv[0] = re.sub(r'(-script\.pyw|\.exe)?$', '', sys.argv[0])"
            | "if sys.argv[0].endswith(\"-script.pyw\"):"
            | "sys.argv[0] = sys.argv[0][:-11]"
            | "elif sys.argv[0].endswith(\".exe\"):"
            | "sys.argv[0] = sys.argv[0][:-4]" => {}
            _ => {
                if let Some(rest) = t.strip_prefix("from ")
                    && let Some((module, f)) = rest.split_once(" import ")
                    && ident(module)
                    && ident(f)
                    && !f.contains('.')
                    && entry.is_none()
                {
                    entry = Some((module.to_string(), f.to_string()));
                } else if let Some((_, f)) = &entry
                    && t == format!("sys.exit({f}())")
                {
                    called = true;
                } else {
                    return None;
                }
            }
        }
    }
    entry.filter(|_| called).map(|(m, f)| format!("{m}:{f}"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The manifest of an image holding `entries` (as [`tar_of`] takes them).
    pub(crate) fn manifest_of(entries: &[(&str, FileKind, &str)]) -> Manifest {
        Manifest::from_tar(&tar_of(entries)[..], ManifestLimits::default()).unwrap()
    }

    /// A tar of `entries`: `(name, kind, content or link target)`.
    pub(crate) fn tar_of(entries: &[(&str, FileKind, &str)]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (name, kind, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_mode(0o755);
            match kind {
                FileKind::Dir => {
                    h.set_entry_type(tar::EntryType::Directory);
                    h.set_size(0);
                    b.append_data(&mut h, name, std::io::empty()).unwrap();
                }
                FileKind::Link => {
                    h.set_entry_type(tar::EntryType::Symlink);
                    h.set_size(0);
                    b.append_link(&mut h, name, data).unwrap();
                }
                _ => {
                    h.set_entry_type(tar::EntryType::Regular);
                    h.set_size(data.len() as u64);
                    b.append_data(&mut h, name, data.as_bytes()).unwrap();
                }
            }
        }
        b.into_inner().unwrap()
    }

    #[test]
    fn a_mount_hides_what_the_image_had_there() {
        let mut image = manifest_of(&[
            ("app/", FileKind::Dir, ""),
            ("app/image-only.py", FileKind::File, "x"),
            ("app/same.py", FileKind::File, "image"),
            ("apple/kept.txt", FileKind::File, "k"),
            ("etc/hosts", FileKind::File, "h"),
        ]);
        let mounted = manifest_of(&[
            ("app/", FileKind::Dir, ""),
            ("app/same.py", FileKind::File, "task"),
            ("app/sub/new.txt", FileKind::File, "n"),
            ("elsewhere.txt", FileKind::File, "outside the target"),
        ]);
        image.mount("/app/", &mounted);
        let paths: Vec<&str> = image.files.keys().map(String::as_str).collect();
        assert_eq!(
            paths,
            [
                "/app",
                "/app/same.py",
                "/app/sub/new.txt",
                "/apple/kept.txt",
                "/etc/hosts"
            ]
        );
        let task = manifest_of(&[("x", FileKind::File, "task")]);
        assert_eq!(
            image.get("/app/same.py").unwrap().sha256,
            task.get("/x").unwrap().sha256
        );
        // A file mounted over a file.
        image.mount(
            "/etc/hosts",
            &manifest_of(&[("etc/hosts", FileKind::File, "mine")]),
        );
        assert_eq!(image.get("/etc/hosts").unwrap().size, 4);
        // Only the file is a mount point that stays (a folder's entries can be replaced).
        assert_eq!(image.file_mounts, ["/etc/hosts"]);
        image.mount("/etc", &manifest_of(&[("etc/", FileKind::Dir, "")]));
        assert!(image.file_mounts.is_empty(), "hidden by a mount above it");
    }

    #[test]
    fn the_loaders_configured_folders_are_read() {
        let tar = tar_of(&[
            ("etc/", FileKind::Dir, ""),
            (
                "etc/ld.so.conf",
                FileKind::File,
                "include /etc/ld.so.conf.d/*.conf\n",
            ),
            ("etc/ld.so.conf.d/", FileKind::Dir, ""),
            (
                "etc/ld.so.conf.d/py.conf",
                FileKind::File,
                "# Python\n/opt/py/lib/\n",
            ),
            ("etc/ld.so.conf.d/x.conf.bak", FileKind::File, "/opt/old\n"),
        ]);
        let m = Manifest::from_tar(&tar[..], ManifestLimits::default()).unwrap();
        assert_eq!(m.loader_dirs, vec!["/opt/py/lib"]);
    }

    #[test]
    fn a_manifest_holds_every_path_by_content() {
        let tar = tar_of(&[
            ("./", FileKind::Dir, ""),
            ("usr/", FileKind::Dir, ""),
            ("usr/bin/", FileKind::Dir, ""),
            ("usr/bin/python3", FileKind::File, "ELF"),
            ("usr/bin/python", FileKind::Link, "python3"),
            ("app/.venv/pyvenv.cfg", FileKind::File, "home = /usr/bin"),
        ]);
        let m = Manifest::from_tar(&tar[..], ManifestLimits::default()).unwrap();
        assert_eq!(m.files.len(), 5, "{:?}", m.files.keys());
        let py = m.get("/usr/bin/python3").unwrap();
        assert_eq!(py.kind, FileKind::File);
        assert_eq!(py.size, 3);
        assert_eq!(py.sha256.unwrap(), <[u8; 32]>::from(Sha256::digest(b"ELF")));
        assert_eq!(
            m.get("/usr/bin/python").unwrap().link.as_deref(),
            Some("python3")
        );
        let kids: Vec<&str> = m.children("/usr/bin").collect();
        assert_eq!(kids, vec!["python", "python3"]);
        assert_eq!(m.children("/").collect::<Vec<_>>(), vec!["app", "usr"]);
        assert_eq!(m.folders_with("pyvenv.cfg"), vec!["/app/.venv".to_string()]);
    }

    #[test]
    fn names_are_made_absolute_and_escapes_refused() {
        assert_eq!(
            absolute_escaped(b"./app/\xff.pth"),
            Some(("/app/\\xff.pth".into(), true))
        );
        assert_eq!(absolute_escaped(b"./app/x"), Some(("/app/x".into(), false)));
        assert_eq!(absolute_escaped(b"./app/../\xff"), None);
        assert_eq!(absolute(b"./a/b"), Some("/a/b".into()));
        assert_eq!(absolute(b"a//b/"), Some("/a/b".into()));
        assert_eq!(absolute(b"./"), None);
        assert_eq!(absolute(b"a/../../etc"), None);
    }

    #[test]
    fn a_manifest_past_its_limits_fails() {
        let tar = tar_of(&[("a", FileKind::File, "xx"), ("b", FileKind::File, "yy")]);
        let limits = ManifestLimits {
            entries: 1,
            bytes: 100,
        };
        assert!(Manifest::from_tar(&tar[..], limits).is_err());
        let limits = ManifestLimits {
            entries: 10,
            bytes: 3,
        };
        assert!(Manifest::from_tar(&tar[..], limits).is_err());
    }
}
