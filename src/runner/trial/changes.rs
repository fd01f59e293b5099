//! Reading what the agent changed in its environment, and carrying its work into the verifier's
//! — the I/O around [`crate::runner::work`]: skillscope's static scripts run in the agent's
//! environment (every process of the agent already gone), their tar and listing sorted by
//! [`work::collect::sort`]; in the verifier's environment (fresh from the image, nothing of the
//! verifier's in it yet) the agent's deletions, then one tar of its folders, files and links.

use std::collections::BTreeSet;
use std::io::BufRead;
use std::time::Duration;

use crate::runner::backend::TarBody;
use crate::runner::sandbox::RawExec;
use crate::runner::sandbox::{STATIC_SHELL_DIR, Sandbox};
use crate::runner::work::Rules;
use crate::runner::work::collect::{Collected, Limits, LinkCopy, sort};
use crate::runner::work::listing::LISTING_FAILED;
use crate::runner::work::manifest::{FileKind, Manifest, absolute};
use crate::runner::{Fault, RunnerError};

/// What the hand-over exec found in the agent's environment ([`hand_over`]), before it is sorted
/// ([`sort_handed`], once the skill folders are known).
pub(super) struct HandedOver {
    /// The exec's stdout: what the agent wrote into it before it died, `== <nonce>`, the
    /// listing, the tar, the nonce.
    stream: tempfile::NamedTempFile,
    /// What was read: where the listing begins and the tar ends, or the limit reached.
    found: Result<Framed, String>,
    /// How the exec ended.
    read: RawExec,
}

/// The parts of a whole hand-over stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Framed {
    /// Just after the line `== <nonce>`.
    listing_at: u64,
    /// Where the closing nonce begins (the tar ends there).
    end: u64,
}

use super::scripts::{NO_NONCE, NONCE_LEN, PROCESSES_LEFT, RETRIES, ended_early};

/// Length of the line `== <nonce>` with its newline.
const MARKER_LINE: usize = 3 + NONCE_LEN as usize + 1;

/// Ends every process in `sandbox` but skillscope's PID 1 and, once none is left, reads what
/// the agent changed — one exec ([`super::scripts::handover_script`]): the paths changed in the
/// `minutes` since it started, outside `pruned`, and the entries of the folders it changed.
///
/// # Errors
/// [`RunnerError`] (a fault: a clean hand-over cannot be confirmed) when the environment cannot
/// be asked, processes are left after `kill_limit`, or the exec ended without its closing nonce
/// having been reached — except when the agent's own volume is the cause (more than
/// `limits.bytes`, or past `limits.time` after the nonce line), which is a limit of the check
/// and flags the trial ([`sort_handed`]).
pub(super) async fn hand_over(
    sandbox: &Sandbox,
    pruned: &[String],
    minutes: u64,
    kill_limit: Duration,
    limits: Limits,
) -> Result<HandedOver, RunnerError> {
    // Where the backend can, every process of the agent's is ended from outside first: none
    // can then stop or end the exec (its runtime's setup process included).
    // The agent's exec may still run (its time limit): its tree is the agent's all the same,
    // and this listing is no evidence.
    if let Some(ended) = sandbox.end_all_from_outside(false).await {
        ended?;
        // Nothing of the agent's runs any more: skillscope's own reading below is not held to
        // the task's CPUs.
        sandbox.lift_cpu_limit().await;
    }
    let script = super::scripts::handover_script(pruned, minutes, kill_limit);
    let wait = kill_limit + limits.time;
    let mut again = 0;
    let (stream, read) = loop {
        let stream =
            tempfile::NamedTempFile::new().map_err(|e| RunnerError::io(std::env::temp_dir(), e))?;
        let read = tokio::time::timeout(
            wait,
            sandbox.exec_raw(&script, None, stream.path(), limits.bytes + (256 << 20)),
        )
        .await;
        // Ended before it could finish, without a whole frame: a process the agent left that
        // kills every new one (which may have written a line of its own first), or the
        // runtime. PID 1, asked from outside, ends every other process; the reading changes
        // nothing, so it is read again whole.
        let early = match &read {
            Ok(Ok(r)) => ended_early(r.exit_code) && !r.cut,
            Ok(Err(_)) => true,
            Err(_) => false,
        };
        if early
            && again < RETRIES
            && !whole(stream.path()).await
            && sandbox.end_all_from_pid_1().await?
        {
            again += 1;
            tokio::time::sleep(Duration::from_millis(40 << again)).await;
            continue;
        }
        break (stream, read);
    };
    let fault = |why: String| {
        RunnerError::backend_text(format!("ending the processes of {}", sandbox.name()), why)
    };
    let path = stream.path().to_path_buf();
    let read = match read {
        Ok(r) => r?,
        Err(_) => {
            // Out of time: a limit of the check once the nonce line was written (no process of
            // the agent's was left then), else the kill never confirmed its end.
            let tail = tail_text(stream.path());
            if nonce_line_seen(stream.path()) {
                return Ok(HandedOver {
                    stream,
                    found: Err(format!(
                        "reading the changed files took more than {}s",
                        limits.time.as_secs()
                    )),
                    read: RawExec::default(),
                });
            }
            return Err(fault(format!("no answer in {}s: {tail}", wait.as_secs())));
        }
    };
    match read.exit_code {
        Some(PROCESSES_LEFT) => {
            return Err(fault(format!(
                "process(es) still there {}s after SIGKILL: {}",
                kill_limit.as_secs(),
                tail_text(stream.path())
            )));
        }
        Some(NO_NONCE) => return Err(fault("no random nonce could be drawn".into())),
        _ => {}
    }
    if read.cut {
        let found = Err(format!(
            "more than {} MiB of changed files",
            limits.bytes >> 20
        ));
        return Ok(HandedOver {
            stream,
            found,
            read,
        });
    }
    match tokio::task::spawn_blocking(move || framed(&path))
        .await
        .map_err(|e| RunnerError::Task(e.to_string()))??
    {
        Some(f) => Ok(HandedOver {
            stream,
            found: Ok(f),
            read,
        }),
        None => Err(fault(format!(
            "skillscope's hand-over ended ({:?}) without its nonce: {}",
            read.exit_code, read.stderr
        ))),
    }
}

/// The frame of the hand-over stream in the file `path` ([`frame`]).
fn framed(path: &std::path::Path) -> Result<Option<Framed>, RunnerError> {
    let f = std::fs::File::open(path).map_err(|e| RunnerError::io(path, e))?;
    let len = f.metadata().map_err(|e| RunnerError::io(path, e))?.len();
    frame(std::io::BufReader::new(f), len).map_err(|e| RunnerError::io(path, e))
}

/// Whether the hand-over stream in the file `path` is whole (has its frame), read off the
/// async runtime.
async fn whole(path: &std::path::Path) -> bool {
    let path = path.to_path_buf();
    matches!(
        tokio::task::spawn_blocking(move || framed(&path)).await,
        Ok(Ok(Some(_)))
    )
}

/// The frame of a whole hand-over stream of `len` bytes: the closing nonce (its last
/// [`NONCE_LEN`] bytes, a UUID) and the first line `== <that nonce>` before it. `None` when
/// either is missing. Lines the agent wrote before it died come before that line, whatever they
/// hold, and cannot name the nonce (drawn after).
///
/// # Errors
/// When `r` cannot be read.
fn frame(mut r: impl BufRead + std::io::Seek, len: u64) -> std::io::Result<Option<Framed>> {
    use std::io::{Read, SeekFrom};
    if len < NONCE_LEN + 4 {
        return Ok(None);
    }
    let end = len - NONCE_LEN;
    r.seek(SeekFrom::Start(end))?;
    let mut nonce = Vec::new();
    r.by_ref().take(NONCE_LEN).read_to_end(&mut nonce)?;
    if !is_uuid(&nonce) {
        return Ok(None);
    }
    let marker: Vec<u8> = [b"== ".as_slice(), &nonce, b"\n"].concat();
    r.seek(SeekFrom::Start(0))?;
    Ok(after_marker_line(r, end, |line| line == marker)
        .map(|listing_at| Framed { listing_at, end }))
}

/// Where the first line of `r` (read up to `limit` bytes) that `is_marker` accepts ends; `None`
/// when no line does. Only lines of at most [`MARKER_LINE`] bytes are offered, and no more of
/// any line is kept: what the agent wrote before the marker, however long and without a newline,
/// costs no memory.
fn after_marker_line(
    r: impl BufRead,
    limit: u64,
    is_marker: impl Fn(&[u8]) -> bool,
) -> Option<u64> {
    let mut r = r.take(limit);
    let (mut at, mut line, mut long) = (0u64, Vec::with_capacity(MARKER_LINE), false);
    loop {
        let buf = match r.fill_buf() {
            Ok(b) if !b.is_empty() => b,
            _ => return None,
        };
        let (n, ends) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if !long && line.len() + n <= MARKER_LINE {
            line.extend_from_slice(&buf[..n]);
        } else {
            long = true;
        }
        r.consume(n);
        at += n as u64;
        if ends {
            if !long && is_marker(&line) {
                return Some(at);
            }
            line.clear();
            long = false;
        }
    }
}

/// True for a UUID as the kernel writes it: 36 lowercase hex digits and dashes, the dashes at 8,
/// 13, 18 and 23.
fn is_uuid(b: &[u8]) -> bool {
    b.len() == NONCE_LEN as usize
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_digit() || (b'a'..=b'f').contains(c),
        })
}

/// True when a partial hand-over stream holds a line `== <a UUID>`: the script got past the
/// kill (or the agent wrote one, which only flags its own trial).
fn nonce_line_seen(path: &std::path::Path) -> bool {
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    after_marker_line(std::io::BufReader::new(f), u64::MAX, |l| {
        l.len() == MARKER_LINE && l.starts_with(b"== ") && is_uuid(&l[3..MARKER_LINE - 1])
    })
    .is_some()
}

/// The last 2 KiB of a partial stream, as one line of text (for a fault's message).
fn tail_text(path: &std::path::Path) -> String {
    use std::io::{Read, Seek};
    let mut tail = Vec::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        let _ = f
            .seek(std::io::SeekFrom::Start(len.saturating_sub(2048)))
            .and_then(|_| f.take(2048).read_to_end(&mut tail));
    }
    crate::sanitize::one_line(&String::from_utf8_lossy(&tail))
}

/// The listing of a hand-over stream from `listing_at`: the folders listed (the `D<folder>`
/// markers) and their entries that `manifest` has (only those can have been deleted); and where
/// the tar begins. `None` for the position when the listing never ended.
fn read_listing(
    r: &mut impl std::io::BufRead,
    listing_at: u64,
    end: u64,
    manifest: &Manifest,
) -> std::io::Result<(BTreeSet<String>, BTreeSet<String>, Option<u64>)> {
    let (mut listed, mut folders) = (BTreeSet::new(), BTreeSet::new());
    let mut at = listing_at;
    let mut item = Vec::new();
    while at < end {
        item.clear();
        let n = r.read_until(0, &mut item)?;
        if n == 0 || item.last() != Some(&0) {
            break;
        }
        at += n as u64;
        let body = &item[..n - 1];
        match body.first() {
            None => return Ok((listed, folders, Some(at))),
            Some(b'D') => {
                if let Some(p) = absolute(&body[1..]) {
                    folders.insert(p);
                } else if body == b"D/" {
                    folders.insert("/".into());
                }
            }
            Some(_) => {
                if let Some(p) = absolute(body)
                    && manifest.get(&p).is_some()
                {
                    listed.insert(p);
                }
            }
        }
    }
    Ok((listed, folders, None))
}

/// Sorts what [`hand_over`] read against `manifest` by `rules`; a limit of the check that was
/// reached (bytes, time, a folder not listed, a tar that broke off) is recorded in the result
/// (the trial is flagged).
///
/// # Errors
/// [`RunnerError`] when the spool cannot be read or written.
pub(super) async fn sort_handed(
    handed: HandedOver,
    facts: &std::sync::Arc<crate::runner::image::ImageFacts>,
    rules: &std::sync::Arc<Rules>,
    limits: Limits,
) -> Result<Collected, RunnerError> {
    let framed = match handed.found {
        Ok(f) => f,
        Err(limit) => {
            return Ok(Collected {
                limit: Some(limit),
                ..Collected::default()
            });
        }
    };
    let (facts, rules, read) = (facts.clone(), rules.clone(), handed.read);
    tokio::task::spawn_blocking(move || {
        let manifest = &facts.files;
        use std::io::{Read, Seek};
        let path = handed.stream.path();
        let io = |e: std::io::Error| RunnerError::io(path, e);
        let mut f = std::io::BufReader::new(std::fs::File::open(path).map_err(io)?);
        f.seek(std::io::SeekFrom::Start(framed.listing_at))
            .map_err(io)?;
        let (listed, folders, tar_at) =
            read_listing(&mut f, framed.listing_at, framed.end, manifest).map_err(io)?;
        let Some(tar_at) = tar_at else {
            return Ok(Collected {
                limit: Some("the changed folders' listing broke off".into()),
                ..Collected::default()
            });
        };
        let tar_of = || -> Result<_, RunnerError> {
            let mut f = std::fs::File::open(path).map_err(io)?;
            f.seek(std::io::SeekFrom::Start(tar_at)).map_err(io)?;
            Ok(std::io::BufReader::new(f).take(framed.end - tar_at))
        };
        // The changed folders the image has, and `/`: those whose deletions are read.
        let mut dirs: BTreeSet<String> = BTreeSet::from(["/".to_string()]);
        let mut a = tar::Archive::new(tar_of()?);
        a.set_ignore_zeros(true);
        if let Ok(entries) = a.entries() {
            for e in entries.flatten() {
                if e.header().entry_type() == tar::EntryType::Directory
                    && let Some(p) = absolute(&e.path_bytes())
                    && manifest.get(&p).is_some_and(|f| f.kind == FileKind::Dir)
                {
                    dirs.insert(p);
                }
            }
        }
        let unlisted = dirs.iter().find(|d| !folders.contains(*d)).cloned();
        let mut out = sort(tar_of()?, &listed, &dirs, manifest, &rules, limits)?;
        if out.limit.is_none() {
            if let Some(d) = unlisted {
                out.limit = Some(format!(
                    "the changed folder {} was not listed",
                    crate::sanitize::one_line(&d)
                ));
            } else if read.exit_code == Some(LISTING_FAILED) {
                out.limit = Some("the changed folders could not all be listed".into());
            } else if !read.ok() {
                out.limit = Some(format!(
                    "the changed files could not all be read (exit {:?}: {})",
                    read.exit_code, read.stderr
                ));
            }
        }
        Ok(out)
    })
    .await
    .map_err(|e| RunnerError::Task(e.to_string()))?
}

/// Longest the agent's deletions may take in the verifier's environment.
const DELETE_LIMIT: Duration = Duration::from_secs(300);

/// Longest the copies of what the work's links lead to may take ([`copy_linked`]): their bytes
/// count against the work's byte limit ([`Limits`]), which a disk copies in well under this.
const COPY_LIMIT: Duration = Duration::from_secs(600);

/// The line [`link_copies_script`] prints when a copy failed on a full disk.
const DISK_FULL_LINE: &str = "skillscope-copy-disk-full";

/// Applies `work` in `verifier` (fresh from the image; nothing of the verifier's in it yet), then
/// puts the task's `tests` folder at `/tests`: its entries ride at the end of the work's tar, one
/// upload for both (the work never names `/tests`: [`crate::runner::work::rule::VERIFIER_ONLY`]);
/// an upload of their own when the agent left no work to carry. Called once per attempt: the
/// tests are appended to `work`'s tar file in place.
///
/// # Errors
/// [`RunnerError`] when the environment cannot be written (a fault), or the tests cannot be read.
pub(super) async fn carry(
    verifier: &Sandbox,
    work: &Collected,
    tests: &std::path::Path,
) -> Result<(), RunnerError> {
    if !work.deleted.is_empty() {
        let s = STATIC_SHELL_DIR;
        let list: Vec<u8> = work
            .deleted
            .iter()
            .flat_map(|p| p.bytes().chain([0]))
            .collect();
        root_exec(
            verifier,
            "deleting what the agent deleted",
            &format!("{s}/xargs -0 -r {s}/rm -rf --"),
            Some(list),
            DELETE_LIMIT,
        )
        .await?;
    }
    for (path, mode) in &work.in_place {
        write_in_place(verifier, work, path, *mode).await?;
    }
    let mut tests_carried = false;
    if let Some(tar) = &work.carry {
        let (path, dir) = (tar.path().to_path_buf(), tests.to_path_buf());
        tests_carried = tokio::task::spawn_blocking(move || {
            crate::runner::sandbox::tar::append_dir(&path, &dir, "tests")
        })
        .await
        .map_err(|e| RunnerError::Task(e.to_string()))??;
        let file = tokio::fs::File::open(tar.path())
            .await
            .map_err(|e| RunnerError::io(tar.path(), e))?;
        verifier.upload_tar_at(TarBody::Spooled(file), "/").await?;
    }
    if !work.link_copies.is_empty() {
        copy_linked(verifier, &work.link_copies).await?;
    }
    if !tests_carried {
        verifier.upload_dir(tests, "/tests").await?;
    }
    Ok(())
}

/// Runs `script`, one of skillscope's own (static shell, as root; [`Sandbox::exec_raw`]), in
/// `verifier` with `stdin`, and returns its stdout (at most 1 MiB, lossily UTF-8).
///
/// # Errors
/// [`RunnerError::Backend`] naming `what` (a fault: these scripts never fail on the agent's
/// files) when the exec fails, exits other than 0, or overruns `limit`.
async fn root_exec(
    verifier: &Sandbox,
    what: &str,
    script: &str,
    stdin: Option<Vec<u8>>,
    limit: Duration,
) -> Result<String, RunnerError> {
    let out =
        tempfile::NamedTempFile::new().map_err(|e| RunnerError::io(std::env::temp_dir(), e))?;
    let context = || format!("{what} in {}", verifier.name());
    let r = tokio::time::timeout(limit, verifier.exec_raw(script, stdin, out.path(), 1 << 20))
        .await
        .map_err(|_| {
            RunnerError::backend_text(context(), format!("took more than {}s", limit.as_secs()))
        })??;
    if !r.ok() {
        return Err(RunnerError::backend_text(
            context(),
            format!("exited {:?}: {}", r.exit_code, r.stderr),
        ));
    }
    let bytes = std::fs::read(out.path()).map_err(|e| RunnerError::io(out.path(), e))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The script that makes each of `copies` ([`Collected::link_copies`]) a file or folder of its
/// own in the verifier's environment: whatever stands at the link's path goes first (an image's
/// link there is never written through), then a copy of what the link leads to — a file's
/// bytes and times (`cp -p`), a folder's content as it is there (`cp -a`) — the link's owner
/// and the mode of what it leads to. A copy that fails leaves nothing there (a folder's entry
/// that cannot be copied is left out): the agent's files never make the exec fail. A copy that
/// fails where the disk is full (under 1 MiB free, or 16 inodes where the file system counts them, measured before anything of it
/// is removed) prints [`DISK_FULL_LINE`]: the machine's fault, told apart by measuring the
/// disk, never by reading an error message the agent's file names are part of. Paths are
/// quoted for the shell; the static tools run.
///
/// # Errors
/// [`RunnerError::Task`] when a path cannot be quoted (it holds a NUL).
fn link_copies_script(copies: &[LinkCopy]) -> Result<String, RunnerError> {
    let s = STATIC_SHELL_DIR;
    let quote = |p: &str| {
        shlex::try_quote(p)
            .map(|q| q.into_owned())
            .map_err(|e| RunnerError::Task(e.to_string()))
    };
    // `full DIR`: whether DIR's file system is full (free blocks × block size, free inodes —
    // only where it counts inodes at all: btrfs reports none free of none).
    let mut script = format!(
        "full() {{ set -- $({s}/stat -f -c '%f %S %d %c' -- \"$1\" 2>/dev/null); \
         [ -n \"$4\" ] && {{ [ $(($1 * $2)) -lt 1048576 ] || \
         {{ [ \"$4\" -gt 0 ] && [ \"$3\" -lt 16 ]; }}; }} && \
         echo {DISK_FULL_LINE}; return 0; }}\n"
    );
    for c in copies {
        let (to, from) = (quote(&c.path)?, quote(&c.from)?);
        let dir = quote(crate::runner::work::paths::parent(&c.path))?;
        // What the copy cannot make (a device node without CAP_MKNOD, a file the verifier's
        // environment lacks: the agent's to arrange) is left out, never a fault.
        let copy = if c.folder {
            format!("{s}/mkdir -- {to} && {{ {s}/cp -a -- {from}/. {to}/ || full {to}; }}")
        } else {
            format!("{s}/cp -p -- {from} {to}")
        };
        script.push_str(&format!(
            "{s}/rm -rf -- {to} && {copy} && {s}/chown {}:{} {to} && \
             {s}/chmod {:o} {to} || {{ full {dir}; {s}/rm -rf -- {to}; }}\n",
            c.owner.0, c.owner.1, c.mode
        ));
    }
    script.push_str("exit 0\n");
    Ok(script)
}

/// Applies [`link_copies_script`] in `verifier`, after the work's tar arrived (the links'
/// folders exist, a linked folder holds the work) and before anything of the verifier's runs.
///
/// # Errors
/// [`RunnerError`] (a fault) when the exec fails, overruns [`COPY_LIMIT`], or a copy failed on
/// a full disk ([`Fault::DiskFull`]): the agent's copy missing for want of disk
/// is never counted as its failure.
async fn copy_linked(verifier: &Sandbox, copies: &[LinkCopy]) -> Result<(), RunnerError> {
    let what = "copying what the work's links lead to";
    let script = link_copies_script(copies)?;
    let out = root_exec(verifier, what, &script, None, COPY_LIMIT).await?;
    if out.lines().any(|l| l == DISK_FULL_LINE) {
        return Err(RunnerError::Backend {
            context: format!("{what} in {}", verifier.name()),
            fault: Fault::DiskFull,
            message: "a copy failed with the disk full".into(),
        });
    }
    Ok(())
}

/// Writes the agent's bytes of `path`, a regular file mounted over the image (a compose file's
/// single-file bind, [`Collected::in_place`]), into the verifier's own mount of it, in place,
/// and gives it `mode`: a mount point cannot be replaced, as an upload replaces what it writes.
/// The verifier's environment is fresh (skillscope's execs only), so `path` is its mount.
///
/// # Errors
/// [`RunnerError`] when the exec fails (a fault).
async fn write_in_place(
    verifier: &Sandbox,
    work: &Collected,
    path: &str,
    mode: u32,
) -> Result<(), RunnerError> {
    let s = STATIC_SHELL_DIR;
    let bytes = work.head(path, u64::MAX).unwrap_or_default();
    let quoted = shlex::try_quote(path).map_err(|e| RunnerError::Task(e.to_string()))?;
    let out =
        tempfile::NamedTempFile::new().map_err(|e| RunnerError::io(std::env::temp_dir(), e))?;
    let r = verifier
        .exec_raw(
            &format!(
                "{s}/cat > {quoted} && {s}/chmod {:o} {quoted}",
                mode & 0o7777
            ),
            Some(bytes),
            out.path(),
            1 << 20,
        )
        .await?;
    if !r.ok() {
        return Err(RunnerError::backend_text(
            format!("writing {path} in {}", verifier.name()),
            format!("exited {:?}: {}", r.exit_code, r.stderr),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::work::manifest::ManifestLimits;

    const NONCE: &str = "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0";

    #[test]
    fn the_script_of_link_copies_never_writes_through_a_link() {
        let copy = LinkCopy {
            path: "/app/a b".into(),
            from: "/app/data.csv".into(),
            folder: false,
            mode: 0o640,
            owner: (1000, 1000),
        };
        let folder = LinkCopy {
            path: "/app/out".into(),
            from: "/tmp/ref dir".into(),
            folder: true,
            ..copy.clone()
        };
        let script = link_copies_script(&[copy, folder]).unwrap();
        assert!(
            script.contains("rm -rf -- /app/out && /skillscope/static/mkdir -- /app/out && { /skillscope/static/cp -a -- '/tmp/ref dir'/. /app/out/ || full /app/out; }"),
            "{script}"
        );
        assert!(
            script.contains("rm -rf -- '/app/a b' && "),
            "what stands there goes first: {script}"
        );
        assert!(
            script.contains("cp -p -- /app/data.csv '/app/a b'"),
            "{script}"
        );
        assert!(script.contains("chown 1000:1000 '/app/a b'"), "{script}");
        assert!(
            script.contains(
                "chmod 640 '/app/a b' || { full /app; /skillscope/static/rm -rf -- '/app/a b'; }"
            ),
            "{script}"
        );
        assert!(script.ends_with("exit 0\n"), "{script}");
    }

    /// A manifest of an image with `/app/keep.txt` and `/app/old.txt`.
    /// Runs `script` with the host's busybox for skillscope's static tools, `cp` made to fail
    /// and `stat -f` reporting free blocks of 4 KiB, free inodes and all inodes when `fake_stat`; returns
    /// its stdout and the temporary folder it ran in.
    fn run_copies(script: &str, fake_stat: Option<(u64, u64, u64)>) -> (String, tempfile::TempDir) {
        let busybox = ["/bin/busybox", "/usr/bin/busybox"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .expect("busybox (scripts/docker-up.sh installs busybox-static)");
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        for tool in ["sh", "rm", "mkdir", "chown", "chmod", "stat", "echo"] {
            std::os::unix::fs::symlink(busybox, bin.join(tool)).unwrap();
        }
        let fake = |name: &str, body: &str| {
            let p = bin.join(name);
            std::fs::remove_file(&p).ok();
            std::fs::write(&p, format!("#!{busybox} sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
        };
        fake("cp", "exit 1");
        if let Some((blocks, inodes, total)) = fake_stat {
            fake("stat", &format!("echo {blocks} 4096 {inodes} {total}"));
        }
        let script = script
            .replace(STATIC_SHELL_DIR, &bin.to_string_lossy())
            .replace("/work", &dir.path().join("work").to_string_lossy());
        std::fs::create_dir(dir.path().join("work")).unwrap();
        let out = std::process::Command::new(bin.join("sh"))
            .args(["-c", &script])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), dir)
    }

    #[test]
    fn a_copy_failing_on_a_full_disk_is_told_by_measuring_the_disk() {
        use std::os::unix::fs::MetadataExt;
        let probe = tempfile::NamedTempFile::new().unwrap();
        let me = probe.as_file().metadata().unwrap();
        let file = LinkCopy {
            path: "/work/a".into(),
            from: "/nowhere/data.csv".into(),
            folder: false,
            mode: 0o644,
            owner: (me.uid().into(), me.gid().into()),
        };
        let folder = LinkCopy {
            path: "/work/out".into(),
            from: "/nowhere/dir".into(),
            folder: true,
            ..file.clone()
        };
        let script = link_copies_script(&[file, folder]).unwrap();
        // The real `stat -f` of a disk with room: a failed copy is left out, nothing said.
        let (out, dir) = run_copies(&script, None);
        assert_eq!(out, "", "{script}");
        assert!(!dir.path().join("work/a").exists());
        // A full disk (no free block, or no free inode) after a failed copy is said, for the
        // file's folder and for the folder's copy alike.
        for full in [(0, 1000, 5000), (100, 3, 5000)] {
            let (out, _) = run_copies(&script, Some(full));
            assert_eq!(
                out.lines().filter(|l| *l == DISK_FULL_LINE).count(),
                2,
                "{full:?}: {out}"
            );
        }
        let (out, _) = run_copies(&script, Some((1 << 20, 1 << 20, 1 << 21)));
        assert_eq!(out, "", "room on the disk: {out}");
        // A file system that counts no inodes (btrfs: 0 free of 0) is not full for that: a copy
        // the agent made fail there stays the agent's, never a fault.
        let (out, _) = run_copies(&script, Some((1 << 20, 0, 0)));
        assert_eq!(out, "", "no inode count: {out}");
    }

    fn manifest() -> Manifest {
        let mut b = tar::Builder::new(Vec::new());
        for (p, body) in [("app/keep.txt", "k"), ("app/old.txt", "o")] {
            let mut h = tar::Header::new_gnu();
            h.set_size(body.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, p, body.as_bytes()).unwrap();
        }
        Manifest::from_tar(&b.into_inner().unwrap()[..], ManifestLimits::default()).unwrap()
    }

    fn framed(bytes: &[u8]) -> Option<Framed> {
        frame(std::io::Cursor::new(bytes), bytes.len() as u64).unwrap()
    }

    /// What the agent wrote into the hand-over's output before it died — a forged `==` line with
    /// a nonce of its own, a forged listing and tar — comes before the real `== <nonce>`: the
    /// frame starts after the line naming the closing nonce, never at a forged one.
    #[test]
    fn the_frame_starts_at_the_closing_nonces_line() {
        let forged = "== 11111111-2222-4333-8444-555555555555\n\0\0junk without a newline";
        let real = format!("\n== {NONCE}\nD/\0/app\0\0TAR");
        let stream = format!("{forged}{real}{NONCE}");
        let f = framed(stream.as_bytes()).expect("framed");
        assert_eq!(
            &stream[f.listing_at as usize..f.end as usize],
            "D/\0/app\0\0TAR"
        );
        // The forged nonce closing the stream instead: only its own line would match, and the
        // real nonce's line is never a match for it.
        let swapped = format!("{forged}{real}11111111-2222-4333-8444-555555555555");
        let f = framed(swapped.as_bytes()).expect("framed at the forged line");
        assert!(f.listing_at < forged.len() as u64, "{f:?}");
    }

    /// A megabyte the agent wrote without a newline before the real line is passed over, and
    /// only the marker's length of any line is kept.
    #[test]
    fn a_long_line_before_the_nonce_is_passed_over() {
        let junk = "x".repeat(1 << 20);
        let stream = format!("{junk}== {NONCE}\nmore junk\n== {NONCE}\nD/\0\0{NONCE}");
        let f = framed(stream.as_bytes()).expect("framed");
        assert_eq!(&stream[f.listing_at as usize..f.end as usize], "D/\0\0");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("partial");
        std::fs::write(&p, format!("{junk}\n== {NONCE}\nD/")).unwrap();
        assert!(nonce_line_seen(&p));
        std::fs::write(&p, format!("{junk}== {NONCE}\nD/")).unwrap();
        assert!(
            !nonce_line_seen(&p),
            "a marker inside a longer line is no marker"
        );
        assert!(tail_text(&p).len() <= 2048 * 3, "the tail is bounded");
    }

    /// A stream cut before its closing nonce, or without the nonce's line, has no frame (the
    /// hand-over is then a fault, or a limit when it was cut at the cap).
    #[test]
    fn a_stream_without_its_nonce_has_no_frame() {
        let whole = format!("== {NONCE}\nD/\0\0TAR{NONCE}");
        assert!(framed(whole.as_bytes()).is_some());
        assert_eq!(framed(&whole.as_bytes()[..whole.len() - 1]), None);
        assert_eq!(framed(format!("D/\0\0TAR{NONCE}").as_bytes()), None);
        assert_eq!(framed(format!("==  {NONCE}\nTAR{NONCE}").as_bytes()), None);
        assert_eq!(framed(b""), None);
        assert!(!is_uuid(b"0F1E2D3C-4B5A-4968-8776-A5B4C3D2E1F0"));
        assert!(is_uuid(NONCE.as_bytes()));
    }

    /// The listing keeps the folders it marked and only the entries the image has (the only ones
    /// whose absence is a deletion); one that never ends has no tar after it.
    #[test]
    fn the_listing_keeps_marked_folders_and_the_images_entries() {
        let m = manifest();
        let body = b"D/\0/app\0/new\0D/app\0/app/keep.txt\0/app/new.txt\0\0TAR";
        let mut r = std::io::Cursor::new(&body[..]);
        let (listed, folders, tar_at) = read_listing(&mut r, 0, body.len() as u64, &m).unwrap();
        assert_eq!(
            folders,
            BTreeSet::from(["/".to_string(), "/app".to_string()])
        );
        // `/app` itself is no entry of this manifest (its tar holds files only), `/new` and
        // `/app/new.txt` are the agent's.
        assert_eq!(listed, BTreeSet::from(["/app/keep.txt".to_string()]));
        assert_eq!(&body[tar_at.unwrap() as usize..], b"TAR");
        let open = b"D/\0/app\0";
        let mut r = std::io::Cursor::new(&open[..]);
        assert_eq!(
            read_listing(&mut r, 0, open.len() as u64, &m).unwrap().2,
            None
        );
    }
}
