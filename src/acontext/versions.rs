//! Skill versions into the store: every curated skill uploaded into a space and every skill
//! exported from it is recorded with its files and content hash (`skill_versions`,
//! `skill_files`), so the skill browser can diff curated against learned.

use std::path::Path;

use super::client::Client;
use super::export::{ExportError, ExportLimits, ExportReport, SkillSnapshot, export_space};
use crate::store::learning::{
    self as lq, ExportRow, NewSkillVersion, RefusedSkill, SkillFileRow, SpaceRow,
};
use crate::store::{Store, StoreError};

/// The store row of a skill snapshot; `origin` is `curated` or `learned`, `dir` its folder.
pub fn version_of(
    s: &SkillSnapshot,
    origin: &str,
    dir: &Path,
    remote: Option<String>,
) -> NewSkillVersion {
    NewSkillVersion {
        origin: origin.into(),
        name: s.name.clone(),
        description: s.description.clone(),
        content_hash: s.content_hash.clone(),
        remote_id: remote,
        dir: Some(dir.display().to_string()),
        problems: s.problems.clone(),
        files: s
            .files
            .iter()
            .map(|f| SkillFileRow {
                path: f.path.clone(),
                size: f.size,
                sha256: f.sha256.clone(),
                text: f.text.clone(),
            })
            .collect(),
    }
}

/// Records every exported skill of a space as a `learned` version. Returns how many versions
/// were new.
///
/// # Errors
/// Store failures.
pub async fn record_export(
    store: &Store,
    space_id: i64,
    report: &ExportReport,
) -> Result<usize, StoreError> {
    let versions: Vec<NewSkillVersion> = report
        .skills
        .iter()
        .map(|s| {
            version_of(
                s,
                "learned",
                &report.dir.join(&s.dir_name),
                s.remote_id.clone(),
            )
        })
        .collect();
    store
        .writer()
        .write(move |c| {
            let mut n = 0;
            for v in &versions {
                if lq::record_version(c, space_id, v)?.1 {
                    n += 1;
                }
            }
            Ok(n)
        })
        .await
}

/// Errors of [`export_version`].
#[derive(Debug, thiserror::Error)]
pub enum VersionError {
    /// Downloading or writing the skills failed.
    #[error(transparent)]
    Export(#[from] ExportError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The space was never created on the server.
    #[error("learning space {0} has no Acontext id yet: run `skillscope learn` first")]
    NoRemote(String),
}

/// Exports a space into a new versioned folder `<root>/<label>-v<N>` (N = one more than the
/// space's recorded exports, skipping folders that exist), records the export and every skill
/// version, and returns both. Earlier versions are never touched.
///
/// # Errors
/// [`VersionError`].
pub async fn export_version(
    store: &Store,
    client: &Client,
    space: &SpaceRow,
    root: &Path,
) -> Result<(ExportRow, ExportReport), VersionError> {
    let remote = space
        .remote_id
        .clone()
        .ok_or_else(|| VersionError::NoRemote(space.label.clone()))?;
    let space_id = space.id;
    let previous = store
        .writer()
        .write(move |c| lq::exports(c, space_id))
        .await?
        .len();
    let label = crate::skillsbench::condition::sanitize_slug(&space.label);
    let mut n = previous + 1;
    let dir = loop {
        let d = root.join(format!("{label}-v{n}"));
        if std::fs::symlink_metadata(&d).is_err() {
            break d;
        }
        n += 1;
    };
    let report = export_space(client, &remote, &dir, &ExportLimits::default()).await?;
    // Condition keys use absolute folders.
    let abs = std::fs::canonicalize(&report.dir).unwrap_or_else(|_| report.dir.clone());
    let report = ExportReport {
        dir: abs.clone(),
        ..report
    };
    record_export(store, space_id, &report).await?;
    let refused: Vec<RefusedSkill> = report
        .refused
        .iter()
        .map(|r| RefusedSkill {
            skill: r.skill.clone(),
            path: r.path.clone(),
            reason: r.reason.clone(),
        })
        .collect();
    let n_skills = report.skills.len() as u32;
    let dir_text = abs.display().to_string();
    let row = store
        .writer()
        .write(move |c| lq::add_export(c, space_id, &dir_text, n_skills, &refused))
        .await?;
    Ok((row, report))
}
