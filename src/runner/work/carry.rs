//! The agent's work carried into the verifier's environment, as data, before anything of the
//! verifier's exists there: first what the agent deleted (the image's paths, removed with
//! skillscope's static `rm`), then one tar of its folders, files and links (links last, each
//! checked to resolve inside what the verifier may read: [`super::collect::link_refused`]).

use std::time::Duration;

use super::collect::Collected;
use crate::runner::RunnerError;
use crate::runner::backend::TarBody;
use crate::runner::sandbox::{STATIC_SHELL_DIR, Sandbox};

/// Longest the deletions may take.
const DELETE_LIMIT: Duration = Duration::from_secs(300);

/// Applies `work` in `verifier` (fresh from the image; nothing of the verifier's in it yet).
///
/// # Errors
/// [`RunnerError`] when the environment cannot be written (a fault).
pub async fn apply(verifier: &Sandbox, work: &Collected) -> Result<(), RunnerError> {
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
