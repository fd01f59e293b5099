//! Curated skills into a learning space (LS-B's starting point): every task's
//! `environment/skills/<name>/` is uploaded as a ZIP (`POST /agent_skills`, multipart) and
//! included in the space (`POST /learning_spaces/{id}/skills`).
//!
//! Acontext allows one skill per name in a space, and SkillsBench ships the same skill name in
//! several tasks: the first task in learning order wins; identical copies elsewhere are noted,
//! differing copies are recorded as not uploaded. Uploads are tagged in `meta`
//! (`{"skillscope": {"upload": "<run uid>/<label>/<name>/<hash>"}}`) so a retried or resumed setup
//! finds an upload whose answer was lost instead of uploading it twice. Each curated version is
//! stored with its files for the skill browser's curated-vs-learned diff.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::{LearnError, LearnOptions, Learner, Retried, order_trials_tasks};
use crate::acontext::client::AcontextError;
use crate::acontext::export::{ExportLimits, SkillSnapshot, snapshot_dir};
use crate::acontext::versions::version_of;
use crate::domain::{RunRow, RunTaskRow};
use crate::skillsbench::skill::scan_skills_dir;
use crate::store::learning::{self as lq, SpaceRow, UploadRow};

/// One curated skill found in a task.
#[derive(Debug, Clone)]
pub struct CuratedSkill {
    /// The task it came from.
    pub task_id: String,
    /// Its folder.
    pub dir: PathBuf,
    /// Hash and files.
    pub snapshot: SkillSnapshot,
}

/// The curated skills of `tasks` (in learning order), deduplicated by name. Returns the skills
/// to upload and, per name, a note about the other tasks that had it.
pub fn collect(
    tasks: &[&RunTaskRow],
    limits: &ExportLimits,
) -> (Vec<CuratedSkill>, BTreeMap<String, String>) {
    let mut chosen: Vec<CuratedSkill> = Vec::new();
    let mut same: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut differing: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut bad: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for task in tasks {
        let skills_dir = Path::new(&task.path).join("environment/skills");
        for skill in scan_skills_dir(&skills_dir) {
            let Some(fm) = skill.frontmatter.clone().filter(|_| skill.is_valid()) else {
                bad.entry(skill.dir_name.clone())
                    .or_default()
                    .push(format!("{} (invalid SKILL.md)", task.task_id));
                continue;
            };
            let snapshot = match snapshot_dir(&skill.dir, limits) {
                Ok(s) => s,
                Err(e) => {
                    bad.entry(fm.name.clone())
                        .or_default()
                        .push(format!("{} ({e})", task.task_id));
                    continue;
                }
            };
            match chosen.iter().find(|c| c.snapshot.name == fm.name) {
                Some(c) if c.snapshot.content_hash == snapshot.content_hash => {
                    same.entry(fm.name.clone())
                        .or_default()
                        .push(task.task_id.clone());
                }
                Some(_) => differing
                    .entry(fm.name.clone())
                    .or_default()
                    .push(task.task_id.clone()),
                None => chosen.push(CuratedSkill {
                    task_id: task.task_id.clone(),
                    dir: skill.dir.clone(),
                    snapshot,
                }),
            }
        }
    }
    let mut notes: BTreeMap<String, String> = BTreeMap::new();
    for c in &chosen {
        let mut parts = Vec::new();
        if let Some(t) = same.get(&c.snapshot.name) {
            parts.push(format!("identical copy also in {}", t.join(", ")));
        }
        if let Some(t) = differing.get(&c.snapshot.name) {
            parts.push(format!(
                "different copies in {} not uploaded (one skill per name in a space)",
                t.join(", ")
            ));
        }
        if let Some(t) = bad.get(&c.snapshot.name) {
            parts.push(format!("unusable copies in {}", t.join(", ")));
        }
        if !parts.is_empty() {
            notes.insert(c.snapshot.name.clone(), parts.join("; "));
        }
    }
    for (name, t) in bad {
        notes
            .entry(name)
            .or_insert_with(|| format!("not uploaded: {}", t.join(", ")));
    }
    (chosen, notes)
}

/// A skill folder as a ZIP with one top-level folder named after the skill; executable bits
/// are kept.
///
/// # Errors
/// Unreadable files (named).
pub fn zip_skill(skill: &CuratedSkill) -> Result<Vec<u8>, String> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for f in &skill.snapshot.files {
        let path = skill.dir.join(&f.path);
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mode = std::fs::metadata(&path)
            .map(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.permissions().mode() & 0o777
            })
            .unwrap_or(0o644);
        let opts = zip::write::SimpleFileOptions::default().unix_permissions(mode);
        w.start_file(format!("{}/{}", skill.snapshot.dir_name, f.path), opts)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        w.write_all(&bytes)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    w.finish()
        .map(|c| c.into_inner())
        .map_err(|e| format!("zip {}: {e}", skill.dir.display()))
}

/// Uploads and includes the curated skills of the run's tasks into the space. Idempotent: skills
/// already included are left alone. A skill the server refuses is recorded as skipped.
///
/// # Errors
/// A server unavailable for longer than `server_wait`, store failures, cancellation.
pub async fn upload_curated(
    learner: &Learner,
    opts: &LearnOptions,
    space: &SpaceRow,
    run: &RunRow,
    tasks: &BTreeMap<String, RunTaskRow>,
) -> Result<(), LearnError> {
    let remote = space.remote_id.clone().unwrap_or_default();
    let ordered = order_trials_tasks(tasks);
    let limits = ExportLimits::default();
    let (skills, notes) = collect(&ordered, &limits);
    let space_id = space.id;
    let done: BTreeMap<String, UploadRow> = learner
        .store
        .writer()
        .write(move |c| lq::uploads(c, space_id))
        .await?
        .into_iter()
        .map(|u| (u.name.clone(), u))
        .collect();
    let catalog = learner
        .with_server_wait(opts, || learner.client.list_skills())
        .await
        .map_err(|e| e.into_learn_error(&opts.label))?;
    for skill in skills {
        let name = skill.snapshot.name.clone();
        let hash = skill.snapshot.content_hash.clone();
        let mut row = done.get(&name).cloned().unwrap_or(UploadRow {
            space_id,
            name: name.clone(),
            content_hash: hash.clone(),
            source_task: skill.task_id.clone(),
            remote_skill_id: None,
            state: "planned".into(),
            note: notes.get(&name).cloned(),
        });
        if row.state == "included" || row.state == "skipped" {
            continue;
        }
        let tag = format!("{}/{}/{}/{}", run.uid, opts.label, name, hash);
        if row.remote_skill_id.is_none() {
            let bytes = match zip_skill(&skill) {
                Ok(b) => b,
                Err(e) => {
                    row.state = "skipped".into();
                    row.note = Some(e);
                    save(learner, row).await?;
                    continue;
                }
            };
            let meta = json!({ "skillscope": { "upload": tag, "source_task": skill.task_id } });
            let file_name = format!("{}.zip", skill.snapshot.dir_name);
            let listed = std::sync::Mutex::new(Some(catalog.clone()));
            // Each attempt looks for the upload in the catalog first (the first attempt uses the
            // listing above), so an upload whose answer was lost is not made twice.
            let uploaded = learner
                .with_server_wait(opts, || {
                    let known = listed.lock().ok().and_then(|mut l| l.take());
                    let (tag, meta, bytes, file_name) = (&tag, &meta, &bytes, &file_name);
                    async move {
                        let catalog = match known {
                            Some(c) => c,
                            None => learner.client.list_skills().await?,
                        };
                        if let Some(k) = catalog.iter().find(|k| {
                            k.meta
                                .pointer("/skillscope/upload")
                                .and_then(|v| v.as_str())
                                == Some(tag.as_str())
                        }) {
                            return Ok(k.id.clone());
                        }
                        learner
                            .client
                            .upload_skill(file_name, bytes.clone(), meta)
                            .await
                            .map(|k| k.id)
                    }
                })
                .await;
            row.remote_skill_id = match uploaded {
                Ok(id) => Some(id),
                Err(Retried::Api(e)) => {
                    row.state = "skipped".into();
                    row.note = Some(format!("upload refused: {e}"));
                    save(learner, row).await?;
                    continue;
                }
                Err(e) => return Err(e.into_learn_error(&opts.label)),
            };
            row.state = "uploaded".into();
            save(learner, row.clone()).await?;
        }
        let kid = row.remote_skill_id.clone().unwrap_or_default();
        match learner
            .with_server_wait(opts, || learner.client.include_skill(&remote, &kid))
            .await
        {
            Ok(_) => {}
            Err(Retried::Api(e @ AcontextError::Api { status: 409, .. })) => {
                let present = learner
                    .with_server_wait(opts, || learner.client.space_skills(&remote))
                    .await
                    .map_err(|e| e.into_learn_error(&opts.label))?;
                if !present.iter().any(|k| k.id == kid) {
                    row.state = "skipped".into();
                    row.note = Some(format!("not included: {e}"));
                    save(learner, row).await?;
                    continue;
                }
            }
            Err(Retried::Api(e)) => {
                row.state = "skipped".into();
                row.note = Some(format!("not included: {e}"));
                save(learner, row).await?;
                continue;
            }
            Err(e) => return Err(e.into_learn_error(&opts.label)),
        }
        row.state = "included".into();
        save(learner, row).await?;
        let version = version_of(&skill.snapshot, "curated", &skill.dir, Some(kid));
        learner
            .store
            .writer()
            .write(move |c| lq::record_version(c, space_id, &version).map(|_| ()))
            .await?;
    }
    Ok(())
}

async fn save(learner: &Learner, row: UploadRow) -> Result<(), LearnError> {
    learner
        .store
        .writer()
        .write(move |c| lq::put_upload(c, &row))
        .await?;
    Ok(())
}
