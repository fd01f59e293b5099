//! What the agent changed, sorted. Read in its environment once every process of its is gone, by
//! skillscope's static tools (never the image's: [`after_kill_script`], run by the trial's
//! hand-over in the exec that ended the agent's processes): every path whose inode changed since
//! the environment started — the kernel keeps `ctime`, which no process can set back — packed
//! with `tar`; the folders it changed listed, so what it deleted is known too. Here ([`sort`], pure) each entry is compared
//! by content with the image's manifest and classified ([`super::Rules`]); the work is packed into
//! a tar of its own for the verifier, the rest is evidence (`agent/tamper.json`). Any limit of
//! this check that is reached (bytes, files, time) is recorded: the trial is then flagged, never
//! passed on a partial read.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::io::{Read, Write};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::links::{View, WorkLinks};
use super::manifest::{FileKind, Manifest, absolute, absolute_escaped, pyc_source, sha256_of};
use super::rule::{Class, Rules, holds_verifier_folder, parent};
use crate::runner::RunnerError;

/// The limits of one collection. Past any of them the trial is flagged.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most bytes of changed files read.
    pub bytes: u64,
    /// Most changed paths.
    pub entries: usize,
    /// Longest the reading may take.
    pub time: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            bytes: 4 << 30,
            entries: 500_000,
            time: Duration::from_secs(600),
        }
    }
}

/// One change against the image, by content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changed {
    /// The path (untrusted text).
    pub path: String,
    /// `A` added, `C` changed (content, kind, mode or link target), `D` deleted.
    pub kind: char,
    /// What it is now (`file`, `dir`, `link`, `other`; the image's for a deletion).
    pub what: String,
    /// Where it goes: `work` (carried), or why it stays behind.
    pub class: String,
}

/// A symbolic link of the work left out: it resolves outside what the verifier may read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DroppedLink {
    /// The link.
    pub path: String,
    /// Its target as written.
    pub target: String,
    /// Where it leads.
    pub why: String,
}

/// A link of the work carried as a copy of what it leads to ([`Collected::link_copies`]): a
/// regular file of the image the agent left alone, or a folder (the image's or the agent's)
/// holding no link of the agent's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkCopy {
    /// The link's path (absolute).
    pub path: String,
    /// What it leads to (absolute, no link on the way).
    pub from: String,
    /// `from` is a folder: its content is copied (`cp -a`), as the verifier has it once the
    /// work is in.
    pub folder: bool,
    /// Permission bits (`0o7777`) of what it leads to.
    pub mode: u32,
    /// The link's owner, `(uid, gid)`.
    pub owner: (u64, u64),
}

/// What the collection found.
#[derive(Default)]
pub struct Collected {
    /// The work, packed for the verifier (entries relative to `/`), when there is any.
    pub carry: Option<tempfile::NamedTempFile>,
    /// Paths of the work the agent deleted (deleted in the verifier before the work arrives;
    /// a path whose kind changed is deleted too).
    pub deleted: Vec<String>,
    /// Every change by content, with its class.
    pub changes: Vec<Changed>,
    /// Links left out of the work.
    pub dropped_links: Vec<DroppedLink>,
    /// Modules that would shadow the toolchain (`path`, module).
    pub shadows: Vec<(String, String)>,
    /// Byte-code files of the image changed though their source was never touched and the
    /// image's byte code was valid for it: the interpreter never rewrites valid byte code.
    pub forged_bytecode: Vec<String>,
    /// The limit of the check that was reached, if one was.
    pub limit: Option<String>,
    /// Regular files of the work that are mount points ([`Manifest::file_mounts`]), with their
    /// modes: not in `carry` (a mount point cannot be replaced), written in place in the
    /// verifier's environment; their bytes are read with [`Collected::head`].
    pub in_place: Vec<(String, u32)>,
    /// Links of the work to a regular file of the image the agent left alone, or to a folder:
    /// each is made, in the verifier's environment, a file or folder of its own holding a copy
    /// of what it leads to there, never a link — the verifier may write there (`test.sh`'s
    /// reference, the tests' expected answer) before the tests read the agent's link. Applied
    /// after `carry` ([`LinkCopy`]).
    pub link_copies: Vec<LinkCopy>,
    /// Why the rule failed closed ([`super::rule::Rules::fails_closed`]), if it did.
    pub fail_closed: Option<String>,
    /// Carried modules in folders the verifier's Python searches first (`path`, top-level
    /// module), kept when `test.sh` installs packages ([`Rules::installs_packages`]): one that
    /// a package installed at verify time turns out to have is flagged after the tests.
    pub searched_modules: Vec<(String, String)>,
    /// Paths read (changed since the start, by `ctime`).
    pub candidates: usize,
    /// Entries carried: each regular file, and each entry a folder link's copy makes
    /// ([`LinkCopy`]), counted against [`Limits::entries`].
    pub work_files: usize,
    /// Bytes carried.
    pub work_bytes: u64,
    /// The new content of every changed file read, and where each sits in it.
    pub(crate) spool: Option<tempfile::NamedTempFile>,
    /// Path → (offset, length) in `spool`.
    pub(crate) contents: std::collections::HashMap<String, (u64, u64)>,
}

impl Collected {
    /// The first `max` bytes of the new content of changed file `path`; `None` when it is no
    /// changed regular file.
    pub fn head(&self, path: &str, max: u64) -> Option<Vec<u8>> {
        use std::io::Seek;
        let (start, len) = *self.contents.get(path)?;
        let mut f = std::fs::File::open(self.spool.as_ref()?.path()).ok()?;
        f.seek(std::io::SeekFrom::Start(start)).ok()?;
        let mut out = Vec::new();
        f.take(len.min(max)).read_to_end(&mut out).ok()?;
        Some(out)
    }
}

/// The class of a path of the work whose name is not UTF-8: recorded, not carried (Python
/// itself reads such names — `site` runs a `.pth` file of any name —, so none is given to the
/// verifier).
pub const NOT_UTF8_NAME: &str = "not carried: its name is not UTF-8";

/// One entry of the changed paths' stream, kept for the second pass.
pub(super) struct Entry {
    path: String,
    pub(super) kind: FileKind,
    mode: u32,
    /// Owner and group ids.
    owner: (u64, u64),
    /// Modification time, seconds since the epoch (kept on what is carried: `cp -a` and
    /// `make` read it, a zip archive refuses times before 1980).
    mtime: u64,
    link: Option<String>,
    /// The path a hard link names.
    hard: Option<String>,
    /// Where its content sits in the spool, for a carried file.
    pub(super) content: Option<(u64, u64)>,
    /// Its name is not UTF-8: `path` holds it escaped ([`absolute_escaped`]); recorded, never
    /// carried.
    not_utf8: bool,
    changed: bool,
    /// Changed only in its owner (content, kind and mode as the image's): a change of the work,
    /// nothing at all where the rule keeps the toolchain's (the verifier gets the image's file,
    /// and a `chown -R` of a project's virtual environment is no attempt).
    owner_only: bool,
    /// A regular file's Python stamp as the tar header gives it: mtime in seconds and size,
    /// each modulo 2³² (what the interpreter compares a `.pyc` against).
    stamp: Option<(u32, u32)>,
}

/// Sorts the changed paths' tar stream `r` against the image: every entry compared with the
/// manifest by content and classified; the work's content spooled. Returns the entries, the
/// spool of contents, and the limit reached, if any.
fn read_changes(
    r: impl Read,
    manifest: &Manifest,
    limits: Limits,
) -> Result<(Vec<Entry>, tempfile::NamedTempFile, Option<String>), RunnerError> {
    let mut spool =
        tempfile::NamedTempFile::new().map_err(|e| RunnerError::io(std::env::temp_dir(), e))?;
    let mut archive = tar::Archive::new(r);
    archive.set_ignore_zeros(true);
    let mut entries: Vec<Entry> = Vec::new();
    // Regular files read unchanged so far (what a later hard link entry may name).
    let mut unchanged_files: std::collections::HashSet<String> = Default::default();
    let (mut bytes, mut offset) = (0u64, 0u64);
    let mut limit = None;
    let io = |e: std::io::Error| RunnerError::io(std::env::temp_dir(), e);
    let iter = match archive.entries() {
        Ok(i) => i,
        Err(e) => return Err(io(e)),
    };
    for entry in iter {
        let Ok(mut entry) = entry else {
            limit = Some("the changed files' stream broke off".to_string());
            break;
        };
        if entries.len() >= limits.entries {
            limit = Some(format!("more than {} changed paths", limits.entries));
            break;
        }
        let Some((path, not_utf8)) = absolute_escaped(&entry.path_bytes()) else {
            continue;
        };
        let header = entry.header();
        let t = header.entry_type();
        let mode = header.mode().unwrap_or(0) & 0o7777;
        let owner = (header.uid().unwrap_or(0), header.gid().unwrap_or(0));
        let link = entry
            .link_name_bytes()
            .map(|l| String::from_utf8_lossy(&l).into_owned());
        let kind = FileKind::of(t);
        let image = manifest.get(&path);
        // The same owner as the image's, or one the image's tar did not give.
        let same_owner = image.is_some_and(|i| i.owner.is_none_or(|o| o == owner));
        let mut e = Entry {
            path,
            kind,
            mode,
            owner,
            mtime: header.mtime().unwrap_or(0),
            link: None,
            hard: None,
            content: None,
            changed: true,
            owner_only: false,
            not_utf8,
            stamp: (kind == FileKind::File).then(|| {
                (
                    header.mtime().unwrap_or(0) as u32,
                    header.size().unwrap_or(0) as u32,
                )
            }),
        };
        if not_utf8 {
            // Recorded (the image has no such name: every path of its manifest is UTF-8), never
            // read or carried.
            entries.push(e);
            continue;
        }
        match t {
            tar::EntryType::Link => {
                e.hard = link.as_deref().and_then(|l| absolute(l.as_bytes()));
                // A second name of a file read earlier in this stream (tar writes it as a hard
                // link): unchanged when that file is, and the image has this name with the same
                // content and mode (a hard link the image itself had, listed because both names
                // looked new: an image unpacked just before the trial, as a node's fresh pull).
                e.changed = !e.hard.as_deref().is_some_and(|h| {
                    unchanged_files.contains(h)
                        && match (image, manifest.get(h)) {
                            (Some(i), Some(t)) => {
                                i.kind == FileKind::File
                                    && i.sha256.is_some()
                                    && i.sha256 == t.sha256
                                    && i.mode == mode
                                    && same_owner
                            }
                            _ => false,
                        }
                });
            }
            tar::EntryType::Symlink => {
                let same = image
                    .is_some_and(|i| i.kind == FileKind::Link && i.link == link && i.mode == mode);
                e.changed = !(same_owner && same);
                e.owner_only = same && !same_owner;
                e.link = link;
            }
            _ if kind == FileKind::File => {
                let start = offset;
                let mut tee = TeeReader {
                    inner: &mut entry,
                    out: spool.as_file_mut(),
                    written: 0,
                };
                let left = limits.bytes.saturating_sub(bytes);
                let (sha, n) = sha256_of(&mut tee, left + 1).map_err(io)?;
                let written = tee.written;
                bytes += n;
                offset += written;
                if bytes > limits.bytes {
                    limit = Some(format!(
                        "more than {} MiB of changed files",
                        limits.bytes >> 20
                    ));
                    break;
                }
                let same = image.is_some_and(|i| {
                    i.kind == FileKind::File && i.sha256 == Some(sha) && i.mode == mode
                });
                e.changed = !(same_owner && same);
                e.owner_only = same && !same_owner;
                e.content = Some((start, written));
                if !e.changed {
                    unchanged_files.insert(e.path.clone());
                }
            }
            _ => {
                let same = image.is_some_and(|i| i.kind == kind && i.mode == mode);
                e.changed = !(same_owner && same);
                e.owner_only = same && !same_owner;
            }
        }
        entries.push(e);
    }
    spool.as_file_mut().flush().map_err(io)?;
    Ok((entries, spool, limit))
}

/// Copies what it reads to `out` too.
struct TeeReader<'a, R> {
    inner: &'a mut R,
    out: &'a mut std::fs::File,
    written: u64,
}

impl<R: Read> Read for TeeReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.out.write_all(&buf[..n])?;
        self.written += n as u64;
        Ok(n)
    }
}

/// The image's byte-code files among `entries` that changed though their source's stamp did
/// not, where the image's byte code was valid for that source (its stamp the source's): the
/// interpreter never rewrites valid byte code, so the new one was forged. A source is touched
/// when its mtime or size moved, not when it is merely listed: every file of an image unpacked
/// just before the trial (a fresh build or pull) is listed, its inode being that recent.
fn forged_bytecode(entries: &[Entry], manifest: &Manifest) -> Vec<String> {
    let listed: HashMap<&str, &Entry> = entries.iter().map(|e| (e.path.as_str(), e)).collect();
    entries
        .iter()
        .filter(|e| e.changed && e.kind == FileKind::File)
        .filter(|e| {
            let Some(stamp) = manifest.get(&e.path).and_then(|f| f.stamp) else {
                return false;
            };
            pyc_source(&e.path).is_some_and(|src| {
                manifest.get(&src).and_then(|f| f.stamp) == Some(stamp)
                    && listed
                        .get(src.as_str())
                        .is_none_or(|now| now.kind == FileKind::File && now.stamp == Some(stamp))
            })
        })
        .map(|e| e.path.clone())
        .collect()
}

/// Sorts what the agent changed: `r` is the tar of [`after_kill_script`], `listed` the current
/// entries of (at least) the changed image folders `listed_dirs` — its listing. Pure: no
/// environment is asked.
///
/// # Errors
/// [`RunnerError::Io`] when the spool cannot be written.
pub fn sort(
    r: impl Read,
    listed: &BTreeSet<String>,
    listed_dirs: &BTreeSet<String>,
    manifest: &Manifest,
    rules: &Rules,
    limits: Limits,
) -> Result<Collected, RunnerError> {
    let (entries, mut spool, limit) = read_changes(r, manifest, limits)?;
    let mut out = Collected {
        candidates: entries.len(),
        limit,
        fail_closed: rules.fails_closed().map(str::to_string),
        ..Default::default()
    };
    // Virtual environments the agent made are the toolchain's, whatever else is in them.
    let venvs: Vec<String> = entries
        .iter()
        .filter(|e| {
            e.path.ends_with("/pyvenv.cfg")
                || e.path.ends_with("/conda-meta") && e.kind == FileKind::Dir
        })
        .map(|e| parent(&e.path).to_string())
        .collect();
    let work_links = links_of_work(&entries, manifest, rules, &venvs);
    // The toolchain's folders and those searched first, also where links lead them (a working
    // folder the agent made a link to a folder of its own, holding `pytest.py`).
    // A link named `bin` (`.venv/bin` made a link to `/opt/x`): the folder it leads to is a
    // `bin` folder.
    let bin_dirs: Vec<String> = work_links
        .iter_made()
        .filter(|(p, _)| p.rsplit('/').next() == Some("bin"))
        .filter_map(|(p, _)| work_links.resolve(p, manifest, View::Agent))
        .collect();
    let rules = &rules
        .through_links(&|p: &str| work_links.resolve(p, manifest, View::Agent))
        .with_bin_dirs(bin_dirs);
    let mut carry = Carry::new(&entries, (listed, listed_dirs), &venvs)?;
    for e in entries.iter().filter(|e| e.changed) {
        if e.owner_only && !rules.classify_entry(&e.path, e.kind, &venvs).is_work() {
            continue;
        }
        let class = judge(e, manifest, rules, &venvs, &carry.carried, &mut out);
        if !class.is_work() || e.not_utf8 {
            continue;
        }
        if rules.installs_packages()
            && let Some(m) = rules.module_searched_first(&e.path, e.kind)
        {
            out.searched_modules.push((e.path.clone(), m));
        }
        // A path whose kind changed goes first (the image's is deleted in the verifier).
        if manifest.get(&e.path).is_some_and(|i| i.kind != e.kind) {
            out.deleted.push(e.path.clone());
        }
        carry.add(e, &mut spool, manifest, limits, &mut out)?;
    }
    carry.add_links(&work_links, &mut spool, manifest, rules, limits, &mut out)?;
    out.forged_bytecode = forged_bytecode(&entries, manifest);
    deletions(
        listed,
        listed_dirs,
        &entries,
        manifest,
        rules,
        &venvs,
        &mut out,
    );
    out.changes.sort_by(|a, b| a.path.cmp(&b.path));
    out.contents = entries
        .iter()
        .filter(|e| e.changed)
        .filter_map(|e| Some((e.path.clone(), e.content?)))
        .collect();
    out.spool = Some(spool);
    let any = !carry.carried.is_empty()
        || out
            .changes
            .iter()
            .any(|c| c.class == "work" && c.what == "link");
    let file = carry.tar.into_inner().map_err(spool_error)?;
    if any {
        out.carry = Some(file);
    }
    Ok(out)
}

/// Whether `len` more bytes of work stay within `limits`; when not, `out` records the limit.
/// What is carried is bounded as what is read: hard links to one file read once would carry
/// its bytes once per name.
fn within_limit(out: &mut Collected, len: u64, limits: Limits) -> bool {
    let fits = out.work_bytes + len <= limits.bytes;
    if !fits {
        out.limit.get_or_insert_with(|| {
            format!(
                "more than {} MiB of work to carry (a file's bytes once per name)",
                limits.bytes >> 20
            )
        });
    }
    fits
}

/// Whether `entries` more (a folder link's copy: every entry it makes) keep the work within
/// `limits.entries`; records the limit in `out` when not (the trial is then flagged): fourteen
/// links to one folder of 450,000 files are 6.3 million entries to copy.
fn within_entries(out: &mut Collected, entries: usize, limits: Limits) -> bool {
    let fits = out.work_files + entries <= limits.entries;
    if !fits {
        out.limit.get_or_insert_with(|| {
            format!(
                "more than {} entries of work to carry (a folder link's copy counts each of \
                 its entries)",
                limits.entries
            )
        });
    }
    fits
}

/// An error of the spool or the carry's tar (both in the temporary folder).
fn spool_error(e: std::io::Error) -> RunnerError {
    RunnerError::io(std::env::temp_dir(), e)
}

/// The links of the work among `entries`, and the image's links the agent replaced by a file or
/// folder (links no more: a link of the work is checked through the agent's folder, as the
/// verifier's kernel will follow it).
fn links_of_work(
    entries: &[Entry],
    manifest: &Manifest,
    rules: &Rules,
    venvs: &[String],
) -> WorkLinks {
    let mut work_links = WorkLinks::none();
    for e in entries
        .iter()
        .filter(|e| e.changed && e.kind == FileKind::Link)
        .filter(|e| rules.classify(&e.path, false, venvs).is_work())
    {
        if let Some(t) = &e.link {
            work_links.add_made(&e.path, t);
        }
    }
    for e in entries
        .iter()
        .filter(|e| e.changed && e.kind != FileKind::Link)
    {
        if manifest
            .get(&e.path)
            .is_some_and(|i| i.kind == FileKind::Link)
        {
            work_links.add_replaced(&e.path);
        }
    }
    work_links
}

/// The class of the changed entry `e` by the rule (a work entry that cannot be placed is the
/// toolchain's), recorded in `out`'s changes (and its shadows).
fn judge(
    e: &Entry,
    manifest: &Manifest,
    rules: &Rules,
    venvs: &[String],
    carried: &HashSet<String>,
    out: &mut Collected,
) -> Class {
    let mut class = rules.classify_entry(&e.path, e.kind, venvs);
    if class.is_work()
        && let Some(why) = unplaceable(e, manifest, rules, carried)
    {
        class = Class::Toolchain(why);
    }
    let kind = if manifest.get(&e.path).is_some() {
        'C'
    } else {
        'A'
    };
    let what = match e.kind {
        FileKind::File => "file",
        FileKind::Dir => "dir",
        FileKind::Link => "link",
        FileKind::Other => "other",
    };
    let mut words = if e.not_utf8 && class.is_work() {
        NOT_UTF8_NAME.to_string()
    } else {
        describe(&class)
    };
    if let Class::Shadow(m) = &class {
        out.shadows.push((e.path.clone(), m.clone()));
        if let Some(why) = rules.shadows_by_failing_closed(&e.path, e.kind) {
            words = format!("{words} ({why})");
        }
    }
    out.changes.push(Changed {
        path: e.path.clone(),
        kind,
        what: what.into(),
        class: words,
    });
    class
}

/// The tar of the work being written: what it holds so far, and the links kept for last.
pub(super) struct Carry<'a> {
    /// The tar, in a temporary file.
    tar: tar::Builder<tempfile::NamedTempFile>,
    /// The paths carried so far.
    carried: HashSet<String>,
    /// Where each regular file's bytes are in the spool (what a hard link entry names).
    content_at: HashMap<String, (u64, u64)>,
    /// Links of the work, carried after every file and folder.
    links_last: Vec<&'a Entry>,
    /// Every entry the hand-over listed, by path: what a link of the work leads to.
    pub(super) listed: HashMap<&'a str, &'a Entry>,
    /// The current entries of the changed folders, and those folders ([`sort`]'s listing):
    /// what the agent deleted.
    pub(super) listing: (&'a BTreeSet<String>, &'a BTreeSet<String>),
    /// The virtual environments the agent made ([`sort`]'s): what a copy's destinations are
    /// judged with.
    pub(super) venvs: &'a [String],
}

impl<'a> Carry<'a> {
    fn new(
        entries: &'a [Entry],
        (listed, listed_dirs): (&'a BTreeSet<String>, &'a BTreeSet<String>),
        venvs: &'a [String],
    ) -> Result<Carry<'a>, RunnerError> {
        Ok(Carry {
            listing: (listed, listed_dirs),
            venvs,
            listed: entries.iter().map(|e| (e.path.as_str(), e)).collect(),
            tar: tar::Builder::new(tempfile::NamedTempFile::new().map_err(spool_error)?),
            carried: HashSet::new(),
            content_at: entries
                .iter()
                .filter_map(|e| Some((e.path.clone(), e.content?)))
                .collect(),
            links_last: Vec::new(),
        })
    }

    /// Adds the work entry `e` (its bytes read from `spool`), within `limits`; a link is kept
    /// for [`Carry::add_links`].
    fn add(
        &mut self,
        e: &'a Entry,
        spool: &mut tempfile::NamedTempFile,
        manifest: &Manifest,
        limits: Limits,
        out: &mut Collected,
    ) -> Result<(), RunnerError> {
        let rel = &e.path[1..];
        let header = |kind: tar::EntryType| {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(kind);
            h.set_mode(e.mode);
            h.set_uid(e.owner.0);
            h.set_gid(e.owner.1);
            h.set_mtime(e.mtime);
            h.set_size(0);
            h
        };
        match (e.kind, &e.hard, e.content) {
            (FileKind::Dir, _, _) => {
                let mut h = header(tar::EntryType::Directory);
                self.tar
                    .append_data(&mut h, rel, std::io::empty())
                    .map_err(spool_error)?;
                self.carried.insert(e.path.clone());
            }
            // A file's bytes; a second name of a file (a hard link) is carried as a file of its
            // own with that file's bytes, never as a second name: what the verifier writes into
            // one name (`test.sh` writing its reference where the agent made a file first)
            // never reaches the other.
            (FileKind::File, hard, content) => {
                let bytes = match hard {
                    Some(target) => self.content_at.get(target.as_str()).copied(),
                    None => content,
                };
                let Some((start, len)) = bytes else {
                    return Ok(());
                };
                if hard.is_none() && manifest.file_mounts.contains(&e.path) {
                    if within_limit(out, len, limits) {
                        out.in_place.push((e.path.clone(), e.mode));
                        out.work_files += 1;
                        out.work_bytes += len;
                        self.carried.insert(e.path.clone());
                    }
                    return Ok(());
                }
                self.add_bytes(e, (e.mode, e.mtime), (start, len), spool, limits, out)?;
            }
            (FileKind::Link, _, _) => self.links_last.push(e),
            _ => {}
        }
        Ok(())
    }

    /// Adds a regular file at `e`'s path holding the spool's bytes at `at` (`(start, len)`)
    /// with `(mode, mtime)` (permission bits; seconds since the epoch), within `limits`.
    fn add_bytes(
        &mut self,
        e: &Entry,
        (mode, mtime): (u32, u64),
        (start, len): (u64, u64),
        spool: &mut tempfile::NamedTempFile,
        limits: Limits,
        out: &mut Collected,
    ) -> Result<(), RunnerError> {
        if !within_limit(out, len, limits) {
            return Ok(());
        }
        use std::io::Seek;
        let f = spool.as_file_mut();
        f.seek(std::io::SeekFrom::Start(start))
            .map_err(spool_error)?;
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(mode);
        h.set_uid(e.owner.0);
        h.set_gid(e.owner.1);
        h.set_mtime(mtime);
        h.set_size(len);
        self.tar
            .append_data(&mut h, &e.path[1..], f.take(len))
            .map_err(spool_error)?;
        out.work_files += 1;
        out.work_bytes += len;
        self.carried.insert(e.path.clone());
        Ok(())
    }

    /// The links of the work, last, so no file of the work is written through one. A link the
    /// rule refuses (into the verifier's folders, out of the work) is dropped and recorded; one
    /// that leads nowhere in the agent's environment (where the verifier may make a file: a
    /// path `test.sh` writes) is dropped and recorded; one that leads to a regular file the
    /// agent made or changed is carried as that file's bytes as the agent left them — what the
    /// verifier writes there later (`test.sh`, or the tests) never becomes the work's; one that
    /// leads to a regular file of the image the agent left alone becomes a copy of it in the
    /// verifier's environment ([`Collected::link_copies`]; dropped when the agent deleted that
    /// file), and one to a folder a copy of that folder as the verifier has it (dropped when
    /// the folder holds a link of the agent's, or the link itself).
    fn add_links(
        &mut self,
        work_links: &WorkLinks,
        spool: &mut tempfile::NamedTempFile,
        manifest: &Manifest,
        rules: &Rules,
        limits: Limits,
        out: &mut Collected,
    ) -> Result<(), RunnerError> {
        for e in std::mem::take(&mut self.links_last) {
            let target = e.link.clone().unwrap_or_default();
            let dropped = |why: String| DroppedLink {
                path: e.path.clone(),
                target: target.clone(),
                why,
            };
            if let Some(why) =
                work_links.refused(&e.path, &target, manifest, &|p| rules.is_copy_of_tests(p))
            {
                out.dropped_links.push(dropped(why));
                continue;
            }
            let start = if target.starts_with('/') {
                target.clone()
            } else {
                format!("{}/{target}", parent(&e.path))
            };
            let leads_to = work_links
                .resolve(&start, manifest, View::Agent)
                .filter(|p| p != "/dev/null");
            if let Some(p) = leads_to {
                let now = self.listed.get(p.as_str()).copied();
                if now.is_none() && manifest.get(&p).is_none() {
                    out.dropped_links.push(dropped(format!(
                        "to {p}, which is nowhere in the agent's environment"
                    )));
                    continue;
                }
                // A file of the agent's may be one the verifier writes (test.sh, or the tests
                // themselves, as the agent can know from a public task): the link is carried as
                // the bytes the agent left there.
                if let Some(file) = now.filter(|f| f.kind == FileKind::File)
                    && let Some((at, len)) = file.content
                {
                    self.add_bytes(e, (file.mode, file.mtime), (at, len), spool, limits, out)?;
                    continue;
                }
                // The image's file, left alone: the tests may write over it before they read
                // the link, so the link is made a copy of the bytes the agent saw there.
                if let Some(fact) = manifest
                    .get(&p)
                    .filter(|f| now.is_none() && f.kind == FileKind::File)
                {
                    if self.deleted(&p) {
                        out.dropped_links
                            .push(dropped(format!("to {p}, which the agent deleted")));
                    } else if within_limit(out, fact.size, limits) {
                        out.link_copies.push(LinkCopy {
                            path: e.path.clone(),
                            from: p.clone(),
                            folder: false,
                            mode: fact.mode & 0o7777,
                            owner: e.owner,
                        });
                        out.work_files += 1;
                        out.work_bytes += fact.size;
                        self.carried.insert(e.path.clone());
                    }
                    continue;
                }
                // A folder: `test.sh` or the tests may write into it what they then read
                // through the link (the eighth red team's `/app/out` → `/tmp/refdir`).
                let folder_mode = match now {
                    Some(n) => (n.kind == FileKind::Dir).then_some(n.mode),
                    None => manifest
                        .get(&p)
                        .filter(|f| f.kind == FileKind::Dir)
                        .map(|f| f.mode),
                };
                if let Some(mode) = folder_mode {
                    if let Some(why) = self
                        .folder_uncopyable(&e.path, &p, work_links, manifest)
                        .or_else(|| self.copy_lands_off_the_work(&e.path, &p, manifest, rules, out))
                    {
                        out.dropped_links.push(dropped(why));
                        continue;
                    }
                    let (bytes, entries) = self.size_under(&p, manifest);
                    if within_limit(out, bytes, limits) && within_entries(out, entries, limits) {
                        out.work_bytes += bytes;
                        out.work_files += entries;
                        out.link_copies.push(LinkCopy {
                            path: e.path.clone(),
                            from: p.clone(),
                            folder: true,
                            mode: mode & 0o7777,
                            owner: e.owner,
                        });
                        self.carried.insert(e.path.clone());
                    }
                    continue;
                }
            }
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_uid(e.owner.0);
            h.set_gid(e.owner.1);
            h.set_mtime(e.mtime);
            h.set_size(0);
            self.tar
                .append_link(&mut h, &e.path[1..], &target)
                .map_err(spool_error)?;
        }
        Ok(())
    }
}

/// What the agent deleted: the image's entries of the folders it changed (`listed_dirs`), no
/// longer there (neither `listed` nor among `entries`), each judged by the rule and recorded in
/// `out` (a deletion of the work is carried).
fn deletions(
    listed: &BTreeSet<String>,
    listed_dirs: &BTreeSet<String>,
    entries: &[Entry],
    manifest: &Manifest,
    rules: &Rules,
    venvs: &[String],
    out: &mut Collected,
) {
    let seen: HashSet<&str> = entries.iter().map(|e| e.path.as_str()).collect();
    for dir in listed_dirs {
        for name in manifest.children(dir) {
            let path = if dir == "/" {
                format!("/{name}")
            } else {
                format!("{dir}/{name}")
            };
            if listed.contains(&path) || seen.contains(path.as_str()) {
                continue;
            }
            let image_kind = manifest.get(&path).map(|f| f.kind);
            let class = if holds_verifier_folder(&path) {
                Class::VerifierOnly
            } else if image_kind == Some(FileKind::Dir) && rules.holds_working_folder(&path) {
                // `rm -rf /app`: without it the tests could not start, and a failing agent
                // would leave its trial without a verdict.
                Class::Toolchain("a folder the verifier runs in stays a folder".into())
            } else {
                rules.classify(&path, image_kind == Some(FileKind::Dir), venvs)
            };
            out.changes.push(Changed {
                path: path.clone(),
                kind: 'D',
                what: match image_kind {
                    Some(FileKind::Dir) => "dir",
                    Some(FileKind::Link) => "link",
                    _ => "file",
                }
                .into(),
                class: describe(&class),
            });
            if class.is_work() {
                out.deleted.push(path);
            }
        }
    }
}

/// Why the work entry `e` cannot be placed in the verifier's environment, which starts from the
/// image and takes only what is `carried` (entries come parents first): a folder of the image
/// that the verifier runs in, or holds one it runs in, made a file (the verifier could not start
/// there: the agent's doing, never a fault of the machine); or a path under one of the image's
/// files or links that stays there because the agent's folder in its place is not carried.
fn unplaceable(
    e: &Entry,
    manifest: &Manifest,
    rules: &Rules,
    carried: &HashSet<String>,
) -> Option<String> {
    let image_dir = |p: &str| manifest.get(p).is_some_and(|i| i.kind == FileKind::Dir);
    if matches!(e.kind, FileKind::File | FileKind::Other | FileKind::Link)
        && image_dir(&e.path)
        && rules.holds_working_folder(&e.path)
    {
        return Some("a folder the verifier runs in stays a folder".into());
    }
    let mut a = parent(&e.path);
    while a != "/" && !a.is_empty() {
        if manifest.get(a).is_some_and(|i| i.kind != FileKind::Dir) && !carried.contains(a) {
            return Some(format!("under {a}, which stays the image's (not carried)"));
        }
        a = parent(a);
    }
    None
}

/// The stored words of a class.
pub fn describe(class: &Class) -> String {
    match class {
        Class::Work => "work".into(),
        Class::Toolchain(why) => format!("toolchain: {why}"),
        Class::VerifierOnly => "verifier only".into(),
        Class::AgentLogs => "agent logs".into(),
        Class::Skills => "skill folder".into(),
        Class::Shadow(m) => format!("shadows the toolchain's module {m}"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::manifest::tests::{manifest_of, tar_of};
    use super::super::manifest::{FileKind as K, ManifestLimits};
    use super::super::rule::{PythonPaths, Toolchain};
    use super::*;

    fn image() -> Manifest {
        let tar = tar_of(&[
            ("app/", K::Dir, ""),
            ("app/main.py", K::File, "print(1)"),
            ("app/data.csv", K::File, "a,b"),
            ("app/old/", K::Dir, ""),
            ("app/old/x", K::File, "x"),
            ("usr/", K::Dir, ""),
            ("usr/bin/", K::Dir, ""),
            ("usr/bin/python3", K::File, "ELF"),
            ("srv/", K::Dir, ""),
            ("srv/data", K::Link, "/app"),
        ]);
        Manifest::from_tar(&tar[..], ManifestLimits::default()).unwrap()
    }

    fn rules(m: &Manifest) -> Rules {
        let t = Toolchain {
            path: vec!["/usr/bin".into()],
            python: vec![PythonPaths {
                interpreter: "/usr/bin/python3".into(),
                toolchain: vec!["/usr/lib/python3".into()],
                project: vec![],
                modules: ["pytest".to_string()].into_iter().collect(),
            }],
            user: "root".into(),
        };
        Rules::new(m, &t, "/app", "", "/root", &[])
    }

    fn listed(paths: &[&str]) -> BTreeSet<String> {
        paths.iter().map(|p| p.to_string()).collect()
    }

    /// [`sort`] of `changed` against `m` with [`rules`] and the default limits; `now` the
    /// entries the changed folders `dirs` hold now.
    fn sorted(changed: &[u8], now: &[&str], dirs: &[&str], m: &Manifest) -> Collected {
        sort(
            changed,
            &listed(now),
            &listed(dirs),
            m,
            &rules(m),
            Limits::default(),
        )
        .unwrap()
    }

    /// The paths of the entries of `out`'s carried tar, in order.
    fn carried_names(out: &Collected) -> Vec<String> {
        carried(out).into_iter().map(|(n, _, _)| n).collect()
    }

    /// The carried tar's entries: name, kind, content.
    fn carried(out: &Collected) -> Vec<(String, tar::EntryType, Vec<u8>)> {
        let f = std::fs::File::open(out.carry.as_ref().unwrap().path()).unwrap();
        tar::Archive::new(f)
            .entries()
            .unwrap()
            .map(|e| {
                let mut e = e.unwrap();
                let mut body = Vec::new();
                e.read_to_end(&mut body).unwrap();
                let name = e.path().unwrap().display().to_string();
                (name, e.header().entry_type(), body)
            })
            .collect()
    }

    /// [`sort`] of `changed` (no folder listed) against `m` with rule `r`.
    fn sorted_by(changed: &[u8], m: &Manifest, r: &Rules) -> Collected {
        sort(
            changed,
            &BTreeSet::new(),
            &BTreeSet::new(),
            m,
            r,
            Limits::default(),
        )
        .unwrap()
    }

    /// The class a change of `out` was given.
    fn class_of(out: &Collected, path: &str) -> Option<String> {
        out.changes
            .iter()
            .find(|c| c.path == path)
            .map(|c| c.class.clone())
    }

    #[test]
    fn work_is_carried_the_toolchain_is_not_and_deletions_are_found() {
        let m = image();
        let changed = tar_of(&[
            ("app/", K::Dir, ""),
            ("app/main.py", K::File, "print(2)"),
            ("app/data.csv", K::File, "a,b"),
            ("app/out.txt", K::File, "42"),
            ("app/pytest.py", K::File, "import os; os._exit(0)"),
            ("usr/bin/python3", K::File, "FORGED"),
            ("app/expected", K::Link, "/tests/expected.json"),
            ("app/sneaky", K::Link, "/srv/data/../../tests/x"),
            ("app/ok", K::Link, "data.csv"),
            ("logs/verifier/reward.txt", K::File, "1"),
        ]);
        let m2 = m.clone();
        let out = sort(
            &changed[..],
            &listed(&[
                "/app/main.py",
                "/app/data.csv",
                "/app/out.txt",
                "/app/pytest.py",
                "/app/expected",
                "/app/sneaky",
                "/app/ok",
            ]),
            &listed(&["/app"]),
            &m2,
            &rules(&m),
            Limits::default(),
        )
        .unwrap();
        let class = |p: &str| {
            out.changes
                .iter()
                .find(|c| c.path == p)
                .map(|c| (c.kind, c.class.clone()))
        };
        assert_eq!(class("/app/main.py"), Some(('C', "work".into())));
        assert_eq!(class("/app/out.txt"), Some(('A', "work".into())));
        assert_eq!(
            class("/app/data.csv"),
            None,
            "unchanged content is no change"
        );
        assert!(
            class("/usr/bin/python3")
                .unwrap()
                .1
                .starts_with("toolchain")
        );
        assert!(class("/app/pytest.py").unwrap().1.starts_with("shadows"));
        assert_eq!(
            class("/logs/verifier/reward.txt").unwrap().1,
            "verifier only"
        );
        assert_eq!(class("/app/old").map(|c| c.0), Some('D'));
        assert_eq!(out.deleted, vec!["/app/old".to_string()]);
        assert_eq!(
            out.shadows,
            vec![("/app/pytest.py".into(), "pytest".into())]
        );
        let dropped: Vec<&str> = out.dropped_links.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(dropped, vec!["/app/expected", "/app/sneaky"]);
        // The carried tar holds the work only, links last.
        let names = carried_names(&out);
        assert_eq!(names, vec!["app/main.py", "app/out.txt", "app/ok"]);
        // A link to a file the agent touched is carried as that file's bytes (the tests may
        // overwrite the file later); here the image's own content.
        let ok = carried(&out).pop().unwrap();
        assert_eq!(ok.1, tar::EntryType::Regular);
        assert_eq!(out.work_files, 3);
    }

    #[test]
    fn a_name_that_is_not_utf8_is_recorded_and_not_carried() {
        use std::os::unix::ffi::OsStrExt;
        let m = image();
        let mut b = tar::Builder::new(Vec::new());
        for (name, body) in [
            (&b"app/\xffout.txt"[..], &b"42"[..]),
            (b"usr/lib/python3/site-packages/\xfe.pth", b"import evil"),
            (b"app/out.txt", b"42"),
        ] {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Regular);
            h.set_mode(0o644);
            h.set_size(body.len() as u64);
            b.append_data(&mut h, std::ffi::OsStr::from_bytes(name), body)
                .unwrap();
        }
        let changed = b.into_inner().unwrap();
        let out = sorted(&changed, &["/app/out.txt"], &[], &m);
        assert_eq!(
            class_of(&out, "/app/\\xffout.txt").as_deref(),
            Some(NOT_UTF8_NAME)
        );
        let toolchain = class_of(&out, "/usr/lib/python3/site-packages/\\xfe.pth").unwrap();
        assert!(toolchain.starts_with("toolchain"), "{toolchain}");
        let names = carried_names(&out);
        assert_eq!(names, vec!["app/out.txt"]);
    }

    #[test]
    fn a_limit_reached_is_recorded() {
        let m = image();
        let changed = tar_of(&[("app/a", K::File, "1"), ("app/b", K::File, "2")]);
        let limits = Limits {
            entries: 1,
            ..Limits::default()
        };
        let out = sort(
            &changed[..],
            &BTreeSet::new(),
            &BTreeSet::new(),
            &m,
            &rules(&m),
            limits,
        )
        .unwrap();
        assert!(out.limit.unwrap().contains("more than 1 changed paths"));
        let limits = Limits {
            bytes: 1,
            ..Limits::default()
        };
        let out = sort(
            &changed[..],
            &BTreeSet::new(),
            &BTreeSet::new(),
            &m,
            &rules(&m),
            limits,
        )
        .unwrap();
        assert!(out.limit.unwrap().contains("MiB"));
    }

    /// A hard link the image itself had, listed with its file (both looked new: an image
    /// unpacked just before the trial), is no change; a hard link to a changed file, or to a
    /// file the image has under this name with other bytes, is one.
    #[test]
    fn hard_links_the_image_had_are_no_change() {
        let m = manifest_of(&[
            ("usr/", K::Dir, ""),
            ("usr/bin/", K::Dir, ""),
            ("usr/bin/gzip", K::File, "GZ"),
            ("usr/bin/gunzip", K::File, "GZ"),
            ("usr/bin/zcat", K::File, "ZCAT"),
        ]);
        let stream = |gzip: &str| {
            let mut b = tar::Builder::new(Vec::new());
            let mut h = tar::Header::new_gnu();
            h.set_mode(0o755);
            h.set_size(gzip.len() as u64);
            b.append_data(&mut h, "usr/bin/gzip", gzip.as_bytes())
                .unwrap();
            for name in ["usr/bin/gunzip", "usr/bin/zcat"] {
                let mut h = tar::Header::new_gnu();
                h.set_mode(0o755);
                h.set_entry_type(tar::EntryType::Link);
                h.set_size(0);
                b.append_link(&mut h, name, "usr/bin/gzip").unwrap();
            }
            b.into_inner().unwrap()
        };
        let changed = |gzip: &str| -> Vec<(String, bool)> {
            let (entries, _, _) = read_changes(&stream(gzip)[..], &m, Limits::default()).unwrap();
            entries.into_iter().map(|e| (e.path, e.changed)).collect()
        };
        assert_eq!(
            changed("GZ"),
            vec![
                ("/usr/bin/gzip".to_string(), false),
                ("/usr/bin/gunzip".to_string(), false),
                ("/usr/bin/zcat".to_string(), true),
            ]
        );
        assert!(changed("EVIL").iter().all(|(_, c)| *c));
    }

    #[test]
    fn a_second_name_of_a_file_not_carried_is_carried_with_its_bytes() {
        let m = image();
        // `ln /app/data.csv /app/answer.csv`: the image's file is unchanged (not carried), the
        // new name comes as a hard link to it in the changes' stream.
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o755);
        h.set_size(3);
        b.append_data(&mut h, "app/data.csv", &b"a,b"[..]).unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o755);
        h.set_entry_type(tar::EntryType::Link);
        h.set_size(0);
        b.append_link(&mut h, "app/answer.csv", "app/data.csv")
            .unwrap();
        let out = sorted(&b.into_inner().unwrap(), &[], &[], &m);
        let f = std::fs::File::open(out.carry.as_ref().unwrap().path()).unwrap();
        let mut a = tar::Archive::new(f);
        let mut carried: Vec<(String, String)> = Vec::new();
        for e in a.entries().unwrap() {
            let mut e = e.unwrap();
            let name = e.path().unwrap().display().to_string();
            let mut body = String::new();
            e.read_to_string(&mut body).unwrap();
            carried.push((name, body));
        }
        assert_eq!(
            carried,
            vec![("app/answer.csv".to_string(), "a,b".to_string())]
        );
        assert_eq!(out.work_files, 1);
    }

    /// Many names of one file read once (`ln blob /app/h/d1` … ×16, the blob itself kept out
    /// of the work) would carry its bytes once per name: what is carried is bounded as what is
    /// read, and the trial flagged past it.
    #[test]
    fn hard_links_cannot_carry_more_than_the_bytes_limit() {
        let m = image();
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_size(1000);
        b.append_data(&mut h, "app/blob.pyc", &[7u8; 1000][..])
            .unwrap();
        for i in 0..16 {
            let mut h = tar::Header::new_gnu();
            h.set_mode(0o644);
            h.set_entry_type(tar::EntryType::Link);
            h.set_size(0);
            b.append_link(&mut h, format!("app/d{i}"), "app/blob.pyc")
                .unwrap();
        }
        let limits = Limits {
            bytes: 4000,
            ..Limits::default()
        };
        let out = sort(
            &b.into_inner().unwrap()[..],
            &BTreeSet::new(),
            &BTreeSet::new(),
            &m,
            &rules(&m),
            limits,
        )
        .unwrap();
        assert!(out.work_bytes <= 4000, "{}", out.work_bytes);
        assert_eq!(out.work_files, 4);
        assert!(out.limit.unwrap().contains("work to carry"));
    }

    /// `rm -rf /app` (the working folder) or `/app` made a dangling link: the verifier still
    /// runs in the folder, so a failing agent's trial gets its verdict (it had none); an honest
    /// agent's files of a standard module's name but no suffix (`/app/token`) are its work.
    #[test]
    fn the_working_folder_stays_and_suffixless_files_are_data() {
        let m = image();
        let out = sorted(&tar_of(&[]), &["/srv"], &["/"], &m);
        assert_eq!(
            class_of(&out, "/app").as_deref(),
            Some("toolchain: a folder the verifier runs in stays a folder")
        );
        assert!(
            !out.deleted.contains(&"/app".to_string()),
            "{:?}",
            out.deleted
        );
        let out = sorted(
            &tar_of(&[("app", K::Link, "/nonexistent/app")]),
            &[],
            &[],
            &m,
        );
        assert_eq!(
            class_of(&out, "/app").as_deref(),
            Some("toolchain: a folder the verifier runs in stays a folder")
        );
        // `token` is a standard module here.
        let t = Toolchain {
            path: vec!["/usr/bin".into()],
            python: vec![PythonPaths {
                interpreter: "/usr/bin/python3".into(),
                toolchain: vec!["/usr/lib/python3".into()],
                project: vec![],
                modules: ["pytest", "token"].into_iter().map(String::from).collect(),
            }],
            user: "root".into(),
        };
        let r = Rules::new(&m, &t, "/app", "", "/root", &[]);
        let out = sorted_by(
            &tar_of(&[
                ("app/token", K::File, "abc"),
                ("app/token.py", K::File, "x = 1"),
                ("app/pytest", K::File, "#!/bin/sh"),
            ]),
            &m,
            &r,
        );
        assert_eq!(
            class_of(&out, "/app/token.py").as_deref(),
            Some("shadows the toolchain's module token")
        );
        assert_eq!(class_of(&out, "/app/token").as_deref(), Some("work"));
        assert_eq!(
            class_of(&out, "/app/pytest").as_deref(),
            Some("shadows the toolchain's module pytest")
        );
    }

    #[test]
    fn a_file_mounted_over_the_image_is_written_in_place_not_carried() {
        let mut m = image();
        m.mount(
            "/app/data.csv",
            &manifest_of(&[("app/data.csv", K::File, "a,b")]),
        );
        let out = sorted(
            &tar_of(&[
                ("app/data.csv", K::File, "a,b\n1,2"),
                ("app/out.txt", K::File, "42"),
            ]),
            &["/app/data.csv", "/app/out.txt"],
            &["/app"],
            &m,
        );
        assert_eq!(out.in_place, [("/app/data.csv".to_string(), 0o755)]);
        assert_eq!(out.head("/app/data.csv", 100).unwrap(), b"a,b\n1,2");
        assert_eq!(class_of(&out, "/app/data.csv").as_deref(), Some("work"));
        assert_eq!((out.work_files, out.work_bytes), (2, 9));
        let names = carried_names(&out);
        assert_eq!(names, ["app/out.txt"]);
    }

    #[test]
    fn a_link_into_a_copy_test_sh_makes_of_the_tests_is_dropped() {
        let m = image();
        let t = Toolchain::default();
        let sh = "cp /tests/expected.json /root/\ncp /tests/*.csv /srv/ref/\npytest /tests";
        let r = Rules::new(&m, &t, "/app", sh, "/root", &[]);
        let out = sorted_by(
            &tar_of(&[
                ("app/summary.json", K::Link, "/root/expected.json"),
                ("app/table.csv", K::Link, "../srv/ref/gold.csv"),
                ("root/runs/3.json", K::File, "{}"),
                ("srv/ref/notes.txt", K::File, "n"),
                ("app/latest.json", K::Link, "/root/runs/3.json"),
                ("app/ref.txt", K::Link, "/srv/ref/notes.txt"),
                // Where nothing is in the agent's environment: a file the verifier may write.
                ("app/output.json", K::Link, "/tmp/reference_output.json"),
                // Into pytest's `tmp_path`, predictable in the verifier's fresh environment.
                (
                    "app/reference.json",
                    K::Link,
                    "/tmp/pytest-of-root/pytest-0/test_x0/reference.json",
                ),
            ]),
            &m,
            &r,
        );
        let dropped: Vec<(&str, &str)> = out
            .dropped_links
            .iter()
            .map(|d| (d.path.as_str(), d.why.as_str()))
            .collect();
        assert_eq!(dropped.len(), 4, "{dropped:?}");
        assert!(
            dropped[3]
                .1
                .contains("pytest's temporary folder, which only the verifier has")
        );
        for (path, why) in &dropped[..2] {
            assert!(
                ["/app/summary.json", "/app/table.csv"].contains(path)
                    && why.contains("only the verifier has"),
                "{path}: {why}"
            );
        }
        assert_eq!(dropped[2].0, "/app/output.json");
        assert!(dropped[2].1.contains("nowhere in the agent's environment"));
        assert_eq!(
            carried_names(&out),
            [
                "root/runs/3.json",
                "srv/ref/notes.txt",
                "app/latest.json",
                "app/ref.txt"
            ]
        );
    }

    #[test]
    fn what_the_verifier_could_not_be_given_is_not_carried() {
        let m = image();
        // `/app`, the working folder, made a file: the verifier still runs in a folder.
        let out = sorted(&tar_of(&[("app", K::File, "nothing")]), &[], &[], &m);
        assert_eq!(
            class_of(&out, "/app").as_deref(),
            Some("toolchain: a folder the verifier runs in stays a folder")
        );
        assert!(out.carry.is_none());
        // An image file test.sh installs from, made a folder: it stays a file in the verifier,
        // so nothing can be put under it.
        let t = Toolchain::default();
        let r = Rules::new(&m, &t, "/app", "pip install -r /app/data.csv", "/root", &[]);
        let changed = tar_of(&[
            ("app/data.csv/", K::Dir, ""),
            ("app/data.csv/x", K::File, "x"),
        ]);
        let out = sort(
            &changed[..],
            &listed(&[]),
            &listed(&[]),
            &m,
            &r,
            Limits::default(),
        )
        .unwrap();
        assert!(
            class_of(&out, "/app/data.csv/x").is_some_and(|c| c.contains("under /app/data.csv")),
            "{:?}",
            out.changes
        );
        assert!(out.carry.is_none());
        // `.venv/bin` made a link to a folder of the agent's: a `python` there is an
        // interpreter's name in a `bin` folder.
        let changed = tar_of(&[
            ("opt/", K::Dir, ""),
            ("opt/x/", K::Dir, ""),
            ("opt/x/python", K::File, "#!/bin/sh"),
            ("opt/x/notes.txt", K::File, "n"),
            ("app/.venv/", K::Dir, ""),
            ("app/.venv/bin", K::Link, "/opt/x"),
        ]);
        let out = sorted(&changed, &[], &[], &m);
        assert!(
            class_of(&out, "/opt/x/python").is_some_and(|c| c.contains("interpreter's name")),
            "{:?}",
            out.changes
        );
        assert_eq!(class_of(&out, "/opt/x/notes.txt").as_deref(), Some("work"));
    }

    /// A `.pyc` of the image rewritten while its source was untouched, the image's byte code
    /// being valid for it (the attack: pytest's own `__init__` byte code forged with its
    /// source's header): the interpreter never rewrites valid byte code, so it is forged — also
    /// when the source is listed with its stamp unchanged (an image unpacked just before the
    /// trial lists every file). Once the source was touched (reinstalled, its mtime new), a
    /// rewrite is the interpreter's.
    #[test]
    fn byte_code_changed_under_an_untouched_source_is_told() {
        let header = |body: &str| format!("a\r\r\n\0\0\0\0\0\0\0\0\u{8}\0\0\0{body}");
        let tar = tar_of(&[
            ("usr/lib/python3/m.py", K::File, "print(1)"),
            (
                "usr/lib/python3/__pycache__/m.cpython-311.pyc",
                K::File,
                &header("code"),
            ),
            ("usr/lib/python3/n.py", K::File, "print(2)"),
            (
                "usr/lib/python3/__pycache__/n.cpython-311.pyc",
                K::File,
                &header("code"),
            ),
        ]);
        let m = Manifest::from_tar(&tar[..], ManifestLimits::default()).unwrap();
        let pyc = m
            .get("/usr/lib/python3/__pycache__/m.cpython-311.pyc")
            .unwrap();
        assert_eq!(pyc.stamp, Some((0, 8)));
        assert_eq!(m.get("/usr/lib/python3/m.py").unwrap().stamp, Some((0, 8)));
        // The tar of the changed paths, each `(path, content, mtime)`.
        let changed_tar = |files: &[(&str, &str, u64)]| {
            let mut b = tar::Builder::new(Vec::new());
            for (name, data, mtime) in files {
                let mut h = tar::Header::new_gnu();
                h.set_mode(0o755);
                h.set_entry_type(tar::EntryType::Regular);
                h.set_size(data.len() as u64);
                h.set_mtime(*mtime);
                b.append_data(&mut h, name, data.as_bytes()).unwrap();
            }
            b.into_inner().unwrap()
        };
        let m_pyc = "usr/lib/python3/__pycache__/m.cpython-311.pyc";
        let n_pyc = "usr/lib/python3/__pycache__/n.cpython-311.pyc";
        let forged = header("forged");
        let again = header("again");
        // m's byte code forged, m.py not listed; n.py reinstalled (a new mtime) and n's byte
        // code rewritten by the interpreter.
        let changed = changed_tar(&[
            (m_pyc, &forged, 0),
            ("usr/lib/python3/n.py", "print(2)", 1_796_590_355),
            (n_pyc, &again, 0),
        ]);
        let out = sorted(&changed, &[], &[], &m);
        assert_eq!(out.forged_bytecode, vec![format!("/{m_pyc}")]);
        // Both sources listed as the image has them (stamp unchanged, as when the image was
        // unpacked a minute before): both rewrites are forged.
        let changed = changed_tar(&[
            ("usr/lib/python3/m.py", "print(1)", 0),
            (m_pyc, &forged, 0),
            ("usr/lib/python3/n.py", "print(2)", 0),
            (n_pyc, &again, 0),
        ]);
        let out = sorted(&changed, &[], &[], &m);
        assert_eq!(
            out.forged_bytecode,
            vec![format!("/{m_pyc}"), format!("/{n_pyc}")]
        );
        // The same size and a new mtime, or the same mtime and a new size: touched.
        let changed = changed_tar(&[
            ("usr/lib/python3/m.py", "print(1)", 7),
            (m_pyc, &forged, 0),
            ("usr/lib/python3/n.py", "print(22)", 0),
            (n_pyc, &again, 0),
        ]);
        assert!(sorted(&changed, &[], &[], &m).forged_bytecode.is_empty());
        assert_eq!(
            super::super::manifest::pyc_source("/a/__pycache__/m.cpython-311.opt-1.pyc"),
            Some("/a/m.py".into())
        );
        assert_eq!(
            super::super::manifest::pyc_source("/a/m.pyc"),
            Some("/a/m.py".into())
        );
    }

    /// The working folder made a link to a folder of the agent's: `python3 -m pytest` runs in
    /// /app, which is now /tmp/x, so /tmp/x/pytest.py would be imported (the attack of
    /// tests/fixtures/hostile-pytest/linked-workdir); /root made a link: its hidden entries stay
    /// the toolchain's.
    #[test]
    fn folders_reached_through_links_are_judged_where_they_are() {
        let m = image();
        let changed = tar_of(&[
            ("app", K::Link, "/tmp/x"),
            ("tmp/x/", K::Dir, ""),
            ("tmp/x/pytest.py", K::File, "import os; os._exit(0)"),
            ("tmp/x/out.txt", K::File, "42"),
            ("root", K::Link, "tmp/r"),
            ("tmp/r/", K::Dir, ""),
            (
                "tmp/r/.gitconfig",
                K::File,
                "[core]\nfsmonitor = /tmp/r/hook\n",
            ),
        ]);
        let out = sorted(&changed, &[], &[], &m);
        let class = |p: &str| class_of(&out, p);
        assert_eq!(
            class("/tmp/x/pytest.py").unwrap(),
            "shadows the toolchain's module pytest"
        );
        assert_eq!(class("/tmp/x/out.txt").unwrap(), "work");
        assert!(class("/tmp/r/.gitconfig").unwrap().starts_with("toolchain"));
    }

    /// `/logs` holds the verifier's own `/logs/verifier` (a mount there): a link, a file or a
    /// deletion in its place is never carried (the attack of
    /// tests/fixtures/hostile-pytest/logs-link: the carried link could not replace the folder,
    /// and the agent's failure became an infrastructure fault); a new folder entry in it is.
    #[test]
    fn the_folder_holding_the_verifiers_folders_stays_a_folder() {
        let tar = tar_of(&[("logs/", K::Dir, ""), ("logs/old.txt", K::File, "x")]);
        let m = Manifest::from_tar(&tar[..], ManifestLimits::default()).unwrap();
        let linked = tar_of(&[
            ("logs", K::Link, "/tmp/l"),
            ("tmp/l/", K::Dir, ""),
            ("tmp/l/verifier/", K::Dir, ""),
            ("tmp/l/verifier/reward.txt", K::File, "1"),
        ]);
        let out = sorted(&linked, &["/logs", "/tmp"], &["/"], &m);
        let class = |p: &str| class_of(&out, p);
        assert_eq!(class("/logs").as_deref(), Some("verifier only"));
        assert!(
            !out.deleted.contains(&"/logs".to_string()),
            "{:?}",
            out.deleted
        );
        let deleted = tar_of(&[("app/", K::Dir, "")]);
        let out = sorted(&deleted, &[], &["/"], &m);
        let gone: Vec<(&str, &str)> = out
            .changes
            .iter()
            .map(|c| (c.path.as_str(), c.class.as_str()))
            .collect();
        assert!(gone.contains(&("/logs", "verifier only")), "{gone:?}");
        assert!(out.deleted.is_empty(), "{:?}", out.deleted);
        let r = rules(&m);
        assert_eq!(r.classify("/logs", true, &[]), Class::Work);
        assert_eq!(r.classify("/logs/artifacts/x", false, &[]), Class::Work);
    }

    #[test]
    fn carried_files_keep_their_times_and_an_owner_change_alone_is_a_change() {
        // The eighth red team: every carried file arrived dated 1970 (`cp -a` backups, zip
        // archives of outputs failed), a `chown` of image files was no change, and a second
        // name of a carried file stayed one file with it in the verifier.
        let m = image();
        let r = rules(&m);
        let mut b = tar::Builder::new(Vec::new());
        for (name, data, uid) in [
            ("app/data.csv", "a,b", 1000),
            ("app/new.txt", "n", 0),
            ("usr/bin/python3", "ELF", 1000),
        ] {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Regular);
            h.set_mode(0o755);
            h.set_uid(uid);
            h.set_gid(uid);
            h.set_mtime(1_700_000_000);
            h.set_size(data.len() as u64);
            b.append_data(&mut h, name, data.as_bytes()).unwrap();
        }
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Link);
        h.set_mode(0o755);
        h.set_mtime(1_700_000_000);
        h.set_size(0);
        b.append_link(&mut h, "app/second.txt", "app/new.txt")
            .unwrap();
        let out = sorted_by(&b.into_inner().unwrap(), &m, &r);
        // A toolchain file whose owner alone changed is no change at all (the ninth red team:
        // an honest `chown -R` of a virtual environment on `PATH` was flagged).
        assert_eq!(
            class_of(&out, "/usr/bin/python3"),
            None,
            "{:?}",
            out.changes
        );
        let f = std::fs::File::open(out.carry.as_ref().unwrap().path()).unwrap();
        let mut seen = Vec::new();
        for e in tar::Archive::new(f).entries().unwrap() {
            let mut e = e.unwrap();
            let mut body = String::new();
            e.read_to_string(&mut body).unwrap();
            let h = e.header();
            seen.push((
                e.path().unwrap().display().to_string(),
                h.entry_type(),
                h.uid().unwrap(),
                h.mtime().unwrap(),
                body,
            ));
        }
        let regular = tar::EntryType::Regular;
        assert_eq!(
            seen,
            [
                (
                    "app/data.csv".into(),
                    regular,
                    1000,
                    1_700_000_000,
                    "a,b".into()
                ),
                ("app/new.txt".into(), regular, 0, 1_700_000_000, "n".into()),
                (
                    "app/second.txt".into(),
                    regular,
                    0,
                    1_700_000_000,
                    "n".into()
                ),
            ]
        );
    }

    #[test]
    fn a_folder_copy_is_judged_where_it_lands() {
        // The ninth red team: `/app/tests/sub` → `/tmp/stage` holding a `conftest.py`, work
        // where it stands, pytest's where the copy would put it (test.sh collects /app/tests).
        let m = image();
        let sh = "cp -r /tests /app/tests\npytest /app/tests";
        let r = Rules::new(&m, &Toolchain::default(), "/app", sh, "/root", &[]);
        let out = sorted_by(
            &tar_of(&[
                ("tmp/stage/", K::Dir, ""),
                ("tmp/stage/conftest.py", K::File, "forge()"),
                ("app/tests/", K::Dir, ""),
                ("app/tests/sub", K::Link, "/tmp/stage"),
                ("app/plain", K::Link, "/tmp/stage"),
            ]),
            &m,
            &r,
        );
        let copied: Vec<&str> = out.link_copies.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(copied, ["/app/plain"], "{:?}", out.dropped_links);
        assert_eq!(out.dropped_links.len(), 1, "{:?}", out.dropped_links);
        assert!(
            out.dropped_links[0]
                .why
                .contains("its copy would put /app/tests/sub/conftest.py"),
            "{:?}",
            out.dropped_links
        );
        assert!(
            class_of(&out, "/app/tests/sub/conftest.py").is_some_and(|c| c != "work"),
            "recorded as if the agent wrote it there: {:?}",
            out.changes
        );
    }

    #[test]
    fn a_folder_copy_counts_every_entry_against_the_limit() {
        // The tenth red team: 450,000 empty files and fourteen links to their folder were 6.3
        // million entries to copy, no byte counted; the copies overran their time (a fault).
        let m = image();
        let r = rules(&m);
        let changed = tar_of(&[
            ("tmp/many/", K::Dir, ""),
            ("tmp/many/a", K::File, ""),
            ("tmp/many/b", K::File, ""),
            ("app/l1", K::Link, "/tmp/many"),
            ("app/l2", K::Link, "/tmp/many"),
        ]);
        let limits = |entries| Limits {
            entries,
            ..Limits::default()
        };
        let sorted = |entries| {
            sort(
                &changed[..],
                &BTreeSet::new(),
                &BTreeSet::new(),
                &m,
                &r,
                limits(entries),
            )
            .unwrap()
        };
        // Two files carried, two copies of two entries each: 6 in all.
        let out = sorted(6);
        assert_eq!((out.link_copies.len(), out.work_files), (2, 6));
        assert!(out.limit.is_none(), "{:?}", out.limit);
        let out = sorted(5);
        assert_eq!(out.link_copies.len(), 1, "{:?}", out.link_copies);
        assert!(
            out.limit.as_deref().is_some_and(|l| l.contains("entries")),
            "the limit flags the trial: {:?}",
            out.limit
        );
    }

    #[test]
    fn a_link_to_an_image_file_left_alone_becomes_a_copy_of_it() {
        // The tests may write the expected answer over a file of the image (a placeholder the
        // image ships) before they read the agent's link to it.
        let m = image();
        let r = rules(&m);
        let changed = tar_of(&[
            ("app/answer.csv", K::Link, "/app/data.csv"),
            ("app/rel.csv", K::Link, "old/x"),
            ("app/gone", K::Link, "/app/main.py"),
        ]);
        // The agent deleted /app/main.py: its link leads nowhere, as in its environment.
        let out = sort(
            &changed[..],
            &listed(&[
                "/app/answer.csv",
                "/app/rel.csv",
                "/app/gone",
                "/app/data.csv",
                "/app/old",
            ]),
            &listed(&["/app"]),
            &m,
            &r,
            Limits::default(),
        )
        .unwrap();
        let copies: Vec<(&str, &str)> = out
            .link_copies
            .iter()
            .map(|c| (c.path.as_str(), c.from.as_str()))
            .collect();
        assert_eq!(
            copies,
            [
                ("/app/answer.csv", "/app/data.csv"),
                ("/app/rel.csv", "/app/old/x")
            ]
        );
        assert_eq!(out.link_copies[0].mode, 0o755);
        assert!(
            carried_names(&out).is_empty(),
            "no link is carried: {:?}",
            carried_names(&out)
        );
        assert_eq!(out.dropped_links.len(), 1, "{:?}", out.dropped_links);
        assert!(out.dropped_links[0].why.contains("deleted"));
        assert_eq!(
            out.work_bytes, 4,
            "the copies' bytes count against the limit"
        );
        // Past the bytes limit: no copy, the limit flags the trial.
        let tight = Limits {
            bytes: 2,
            ..Limits::default()
        };
        let out = sort(&changed[..], &listed(&[]), &listed(&[]), &m, &r, tight).unwrap();
        assert!(out.limit.is_some());
    }

    #[test]
    fn a_link_into_a_folder_the_agent_deleted_whole_is_dropped() {
        // The agent deleted /app/old with its file x: a link to /app/old/x leads nowhere in its
        // environment, so none is copied in the verifier's (where x is deleted too).
        let m = image();
        let r = rules(&m);
        let changed = tar_of(&[("app/rel.csv", K::Link, "old/x")]);
        let out = sort(
            &changed[..],
            &listed(&["/app/rel.csv", "/app/data.csv"]),
            &listed(&["/app"]),
            &m,
            &r,
            Limits::default(),
        )
        .unwrap();
        assert!(out.link_copies.is_empty(), "{:?}", out.link_copies);
        assert_eq!(out.dropped_links.len(), 1, "{:?}", out.dropped_links);
        assert!(
            out.dropped_links[0].why.contains("deleted"),
            "{:?}",
            out.dropped_links
        );
        assert_eq!(out.work_bytes, 0, "no copy's bytes counted");
    }

    #[test]
    fn a_link_to_a_file_of_the_agent_s_is_carried_as_its_bytes() {
        // The seventh red team: test.sh (or the tests) writes the expected answer where the
        // agent's link leads; the agent made that file first, so the link led somewhere.
        let m = image();
        let sh = "pytest /tests";
        let r = Rules::new(&m, &Toolchain::default(), "/app", sh, "/root", &[]);
        let out = sorted_by(
            &tar_of(&[
                ("tmp/expected.txt", K::File, "0"),
                ("app/answer.txt", K::Link, "/tmp/expected.txt"),
                ("app/own.txt", K::File, "7"),
                ("app/latest", K::Link, "own.txt"),
            ]),
            &m,
            &r,
        );
        let carried = carried(&out);
        let kind = |n: &str| {
            carried
                .iter()
                .find(|(name, _, _)| name == n)
                .map(|(_, k, body)| (*k, body.clone()))
                .unwrap()
        };
        assert_eq!(
            kind("app/answer.txt"),
            (tar::EntryType::Regular, b"0".to_vec())
        );
        assert_eq!(kind("app/latest"), (tar::EntryType::Regular, b"7".to_vec()));
        // A link to a folder becomes a copy of it (the eighth red team: `test.sh` wrote its
        // reference into the folder the agent's `/app/out` led to), unless the folder holds a
        // link of the agent's or the link itself; never a link.
        let out = sorted_by(
            &tar_of(&[
                ("app/results", K::Dir, ""),
                ("app/results/a.txt", K::File, "1"),
                ("app/current", K::Link, "results"),
                ("tmp/refdir", K::Dir, ""),
                ("app/out", K::Link, "/tmp/refdir"),
                ("app/image-old", K::Link, "/app/old"),
                ("tmp/linked", K::Dir, ""),
                ("tmp/linked/inner", K::Link, "/tmp/refdir"),
                ("app/via", K::Link, "/tmp/linked"),
                ("app/self", K::Link, "/app"),
                ("app/root", K::Link, "/"),
                ("app/srv", K::Link, "/srv"),
            ]),
            &m,
            &r,
        );
        let copies: Vec<(&str, &str, bool)> = out
            .link_copies
            .iter()
            .map(|c| (c.path.as_str(), c.from.as_str(), c.folder))
            .collect();
        assert_eq!(
            copies,
            [
                ("/app/current", "/app/results", true),
                ("/app/out", "/tmp/refdir", true),
                ("/app/image-old", "/app/old", true),
                ("/tmp/linked/inner", "/tmp/refdir", true),
            ]
        );
        let mut dropped: Vec<&str> = out.dropped_links.iter().map(|d| d.path.as_str()).collect();
        dropped.sort();
        // `/srv` holds the image's link `/srv/data` → `/app`, out of it.
        assert_eq!(dropped, ["/app/root", "/app/self", "/app/srv", "/app/via"]);
        assert!(
            out.dropped_links
                .iter()
                .any(|d| d.path == "/app/srv" && d.why.contains("the image's link /srv/data")),
            "{:?}",
            out.dropped_links
        );
        assert!(
            super::tests::carried(&out)
                .iter()
                .all(|(_, k, _)| *k != tar::EntryType::Symlink),
            "no link of the work is carried as a link"
        );
    }
}
