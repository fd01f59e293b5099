//! Reading what the agent changed in its environment, and carrying its work into the verifier's
//! — the I/O around [`crate::runner::work`]: skillscope's static scripts run in the agent's
//! environment (every process of the agent already gone), their tar and listing sorted by
//! [`work::collect::sort`]; in the verifier's environment (fresh from the image, nothing of the
//! verifier's in it yet) the agent's deletions, then one tar of its folders, files and links.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::runner::RunnerError;
use crate::runner::backend::TarBody;
use crate::runner::sandbox::RawExec;
use crate::runner::sandbox::{STATIC_SHELL_DIR, Sandbox};
use crate::runner::work::Rules;
use crate::runner::work::collect::{Collected, Limits, sort};
use crate::runner::work::manifest::{FileKind, Manifest, absolute};

/// What the hand-over exec found in the agent's environment ([`hand_over`]), before it is sorted
/// ([`sort_handed`], once the skill folders are known).
pub(super) struct HandedOver {
    /// The exec's stdout: the two process lists, the listing, the tar.
    stream: tempfile::NamedTempFile,
    /// Where in `stream` the listing begins.
    listing_at: u64,
    /// How the exec ended; `None` when the reading ran out of time.
    read: Option<RawExec>,
}

/// Ends every process in `sandbox` but skillscope's PID 1 and, once none is left, reads what
/// the agent changed — one exec ([`super::handover::handover_script`]): the paths changed in the
/// `minutes` since it started, outside `pruned`, and the entries of the folders it changed.
///
/// # Errors
/// [`RunnerError`] when the environment cannot be asked (a fault), or processes are left after
/// `kill_limit` (a fault: a clean hand-over cannot be confirmed).
pub(super) async fn hand_over(
    sandbox: &Sandbox,
    pruned: &[String],
    minutes: u64,
    kill_limit: Duration,
    limits: Limits,
) -> Result<HandedOver, RunnerError> {
    let stream =
        tempfile::NamedTempFile::new().map_err(|e| RunnerError::io(std::env::temp_dir(), e))?;
    let script = super::handover::handover_script(pruned, minutes, kill_limit);
    let read = tokio::time::timeout(
        kill_limit + limits.time,
        sandbox.exec_raw(&script, None, stream.path(), limits.bytes + (256 << 20)),
    )
    .await;
    let read = match read {
        Ok(r) => Some(r?),
        Err(_) => None,
    };
    let what = || format!("ending the processes of {}", sandbox.name());
    let (_, left, listing_at) = {
        let f =
            std::fs::File::open(stream.path()).map_err(|e| RunnerError::io(stream.path(), e))?;
        match parse_processes(std::io::BufReader::new(f)) {
            Some(p) => p,
            None => {
                let why = match &read {
                    Some(r) => format!(
                        "skillscope's kill ended with {:?}: {}",
                        r.exit_code, r.stderr
                    ),
                    None => format!("no answer in {}s", (kill_limit + limits.time).as_secs()),
                };
                return Err(RunnerError::backend_text(what(), why));
            }
        }
    };
    if !left.is_empty() {
        return Err(RunnerError::backend_text(
            what(),
            format!(
                "{} process(es) still there {}s after SIGKILL: {}",
                left.len(),
                kill_limit.as_secs(),
                crate::sanitize::one_line(&left.join("; "))
            ),
        ));
    }
    Ok(HandedOver {
        stream,
        listing_at,
        read,
    })
}

/// The two process lists at the head of the hand-over's stream (apart by `--`, ended by `==`)
/// and where the listing after them begins; `None` when the `==` line never came.
fn parse_processes(mut r: impl std::io::BufRead) -> Option<(Vec<String>, Vec<String>, u64)> {
    let (mut before, mut after, mut at) = (Vec::new(), Vec::new(), 0u64);
    let mut second = false;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = r.read_until(b'\n', &mut line).ok()?;
        if n == 0 || line.last() != Some(&b'\n') {
            return None;
        }
        at += n as u64;
        let text = String::from_utf8_lossy(&line[..n - 1]).into_owned();
        match text.as_str() {
            "==" => return Some((before, after, at)),
            "--" if !second => second = true,
            t if t.trim().is_empty() => {}
            _ if second => after.push(text),
            _ => before.push(text),
        }
    }
}

/// Sorts what [`hand_over`] read against `manifest` by `rules`.
///
/// # Errors
/// [`RunnerError`] when the spool cannot be read or written.
pub(super) async fn sort_handed(
    handed: HandedOver,
    manifest: &std::sync::Arc<Manifest>,
    rules: &std::sync::Arc<Rules>,
    limits: Limits,
) -> Result<Collected, RunnerError> {
    let Some(read) = handed.read else {
        return Ok(out_of_time(limits));
    };
    let (manifest, rules) = (manifest.clone(), rules.clone());
    tokio::task::spawn_blocking(move || {
        use std::io::{BufRead, Seek};
        let path = handed.stream.path();
        let mut f = std::io::BufReader::new(
            std::fs::File::open(path).map_err(|e| RunnerError::io(path, e))?,
        );
        f.seek(std::io::SeekFrom::Start(handed.listing_at))
            .map_err(|e| RunnerError::io(path, e))?;
        // The listing: NUL-terminated entries up to an empty one.
        let mut listed: BTreeSet<String> = BTreeSet::new();
        let mut ended = false;
        let mut item = Vec::new();
        loop {
            item.clear();
            let n = f
                .read_until(0, &mut item)
                .map_err(|e| RunnerError::io(path, e))?;
            if n == 0 || item.last() != Some(&0) {
                break;
            }
            if n == 1 {
                ended = true;
                break;
            }
            if let Some(p) = absolute(&item[..n - 1]) {
                listed.insert(p);
            }
        }
        let tar_at = f.stream_position().map_err(|e| RunnerError::io(path, e))?;
        // The changed folders the image has, and `/`: those whose deletions are read.
        let mut dirs: BTreeSet<String> = BTreeSet::from(["/".to_string()]);
        {
            let mut a = tar::Archive::new(std::io::BufReader::new(f));
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
        }
        let mut f = std::fs::File::open(path).map_err(|e| RunnerError::io(path, e))?;
        f.seek(std::io::SeekFrom::Start(tar_at))
            .map_err(|e| RunnerError::io(path, e))?;
        let mut out = sort(
            std::io::BufReader::new(f),
            &listed,
            &dirs,
            &manifest,
            &rules,
            limits,
        )?;
        if out.limit.is_none() {
            let listing_failed = read.exit_code == Some(LISTING_FAILED);
            if read.cut {
                out.limit = Some(format!(
                    "more than {} MiB of changed files",
                    limits.bytes >> 20
                ));
            } else if !ended || listing_failed {
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

/// The hand-over's exit code when the listing of changed folders failed
/// ([`crate::runner::work::collect::after_kill_script`]).
const LISTING_FAILED: i64 = 100;

/// What a reading that ran out of time found: nothing carried, the limit recorded (the trial is
/// flagged).
fn out_of_time(limits: Limits) -> Collected {
    Collected {
        limit: Some(format!(
            "reading the changed files took more than {}s",
            limits.time.as_secs()
        )),
        ..Collected::default()
    }
}

/// Longest the deletions may take.
const DELETE_LIMIT: Duration = Duration::from_secs(300);

/// Applies `work` in `verifier` (fresh from the image; nothing of the verifier's in it yet).
///
/// # Errors
/// [`RunnerError`] when the environment cannot be written (a fault).
pub(super) async fn carry(verifier: &Sandbox, work: &Collected) -> Result<(), RunnerError> {
    if !work.deleted.is_empty() {
        let s = STATIC_SHELL_DIR;
        let list: Vec<u8> = work
            .deleted
            .iter()
            .flat_map(|p| p.bytes().chain([0]))
            .collect();
        let out =
            tempfile::NamedTempFile::new().map_err(|e| RunnerError::io(std::env::temp_dir(), e))?;
        let done = tokio::time::timeout(
            DELETE_LIMIT,
            verifier.exec_raw(
                &format!("{s}/xargs -0 -r {s}/rm -rf --"),
                Some(list),
                out.path(),
                1 << 20,
            ),
        )
        .await;
        match done {
            Ok(r) => {
                let r = r?;
                if !r.ok() {
                    return Err(RunnerError::backend_text(
                        format!("deleting in {}", verifier.name()),
                        format!("rm exited {:?}: {}", r.exit_code, r.stderr),
                    ));
                }
            }
            Err(_) => {
                return Err(RunnerError::backend_text(
                    format!("deleting in {}", verifier.name()),
                    format!(
                        "the agent's deletions took more than {}s",
                        DELETE_LIMIT.as_secs()
                    ),
                ));
            }
        }
    }
    if let Some(tar) = &work.carry {
        let file = tokio::fs::File::open(tar.path())
            .await
            .map_err(|e| RunnerError::io(tar.path(), e))?;
        verifier.upload_tar_at(TarBody::Spooled(file), "/").await?;
    }
    Ok(())
}
