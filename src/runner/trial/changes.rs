//! Reading what the agent changed in its environment, and carrying its work into the verifier's
//! — the I/O around [`crate::runner::work`]: skillscope's static scripts run in the agent's
//! environment (every process of the agent already gone), their tar and listing sorted by
//! [`work::collect::sort`]; in the verifier's environment (fresh from the image, nothing of the
//! verifier's in it yet) the agent's deletions, then one tar of its folders, files and links.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::runner::RunnerError;
use crate::runner::backend::TarBody;
use crate::runner::sandbox::{STATIC_SHELL_DIR, Sandbox};
use crate::runner::work::Rules;
use crate::runner::work::collect::{Collected, Limits, changed_paths_script, listing_script, sort};
use crate::runner::work::manifest::{FileKind, Manifest, absolute};

/// Reads what the agent changed in `sandbox` (every process of the agent already gone): the
/// paths changed in the `minutes` since it started, outside `pruned`, sorted by `rules`.
///
/// # Errors
/// [`RunnerError`] when the environment cannot be read (a fault).
pub(super) async fn collect(
    sandbox: &Sandbox,
    manifest: &std::sync::Arc<Manifest>,
    rules: &std::sync::Arc<Rules>,
    pruned: &[String],
    minutes: u64,
    limits: Limits,
) -> Result<Collected, RunnerError> {
    let t0 = tokio::time::Instant::now();
    let stream =
        tempfile::NamedTempFile::new().map_err(|e| RunnerError::io(std::env::temp_dir(), e))?;
    let read = tokio::time::timeout(
        limits.time,
        sandbox.exec_raw(
            &changed_paths_script(pruned, minutes),
            None,
            stream.path(),
            limits.bytes + (256 << 20),
        ),
    )
    .await;
    let read = match read {
        Ok(r) => r?,
        Err(_) => return Ok(out_of_time(limits)),
    };
    // The changed folders the image has: their entries now, for what was deleted.
    let dirs: Vec<String> = {
        let f =
            std::fs::File::open(stream.path()).map_err(|e| RunnerError::io(stream.path(), e))?;
        let mut a = tar::Archive::new(std::io::BufReader::new(f));
        a.set_ignore_zeros(true);
        let mut dirs = Vec::new();
        if let Ok(entries) = a.entries() {
            for e in entries.flatten() {
                if e.header().entry_type() == tar::EntryType::Directory
                    && let Some(p) = absolute(&e.path_bytes())
                    && manifest.get(&p).is_some_and(|f| f.kind == FileKind::Dir)
                {
                    dirs.push(p);
                }
            }
        }
        if dirs.is_empty() {
            // The root's own entry is never in the stream (`absolute` drops it); a change
            // directly in `/` shows as its children.
            dirs.push("/".into());
        } else if !dirs.iter().any(|d| d == "/") {
            dirs.push("/".into());
        }
        dirs
    };
    let listing =
        tempfile::NamedTempFile::new().map_err(|e| RunnerError::io(std::env::temp_dir(), e))?;
    let input: Vec<u8> = dirs.iter().flat_map(|d| d.bytes().chain([0])).collect();
    let left = limits.time.saturating_sub(t0.elapsed());
    let listed_ok = match tokio::time::timeout(
        left,
        sandbox.exec_raw(&listing_script(), Some(input), listing.path(), 256 << 20),
    )
    .await
    {
        Ok(r) => {
            let r = r?;
            r.ok() && !r.cut
        }
        Err(_) => return Ok(out_of_time(limits)),
    };
    let listed: BTreeSet<String> = std::fs::read(listing.path())
        .map_err(|e| RunnerError::io(listing.path(), e))?
        .split(|b| *b == 0)
        .filter_map(absolute)
        .collect();
    let listed_dirs: BTreeSet<String> = dirs.into_iter().collect();
    let (manifest, rules, path) = (manifest.clone(), rules.clone(), stream.path().to_path_buf());
    let mut out = tokio::task::spawn_blocking(move || {
        let f = std::fs::File::open(&path).map_err(|e| RunnerError::io(&path, e))?;
        sort(
            std::io::BufReader::new(f),
            &listed,
            &listed_dirs,
            &manifest,
            &rules,
            limits,
        )
    })
    .await
    .map_err(|e| RunnerError::Task(e.to_string()))??;
    if out.limit.is_none() {
        if read.cut {
            out.limit = Some(format!(
                "more than {} MiB of changed files",
                limits.bytes >> 20
            ));
        } else if !read.ok() {
            out.limit = Some(format!(
                "the changed files could not all be read (exit {:?}: {})",
                read.exit_code, read.stderr
            ));
        } else if !listed_ok {
            out.limit = Some("the changed folders could not all be listed".into());
        }
    }
    Ok(out)
}

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
