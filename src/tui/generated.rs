//! The skill browser's self-generated skill sets: per run and self-generated condition, the
//! skills the agents of its trials wrote (kept after validation, or refused), browsable like a
//! learning space's. A set is shown as a [`SpaceProgress`] whose space row is synthetic: its id
//! is negative (`-(run id × 1024 + condition index + 1)`) so it never meets a real space's, its
//! state is `written`, its progress counts the trials that recorded their skills.
//!
//! Everything here was written by agents in containers: names, descriptions, reasons and file
//! text are sanitized when read, like a learning space's.

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::Connection;

use super::data::{
    SkillBrowser, SkillEntry, SkillFile, SkillOrigin, SkillVersion, Snapshot, one_line,
};
use crate::acontext::export::{ExportLimits, snapshot_dir};
use crate::skillsbench::condition::is_self_generated_key;
use crate::store::learning::{
    SkillFileRow, SkillSourceRow, SkillVersionRow, SpaceProgress, SpaceRow,
};
use crate::store::{RunRow, StoreError, queries};
use crate::text::sanitize;

/// Most conditions a run can have for set ids to stay apart.
const PER_RUN: i64 = 1024;

/// The id of the generated set of condition `index` of run `run_id`.
pub fn set_id(run_id: i64, index: usize) -> i64 {
    -(run_id * PER_RUN + index as i64 + 1)
}

/// True for the id of a generated set (never a learning space's).
pub fn is_set(id: i64) -> bool {
    id < 0
}

/// (run id, condition index) of a set id.
fn decode(id: i64) -> (i64, usize) {
    let n = -id - 1;
    (n / PER_RUN, (n % PER_RUN) as usize)
}

/// Short label of a self-generated condition key for the browser's list.
fn label(key: &str) -> String {
    if key.ends_with(":two-phase") {
        "self-gen:2".into()
    } else {
        "self-gen".into()
    }
}

fn space_row(run: &RunRow, index: usize, key: &str) -> SpaceRow {
    SpaceRow {
        id: set_id(run.id, index),
        label: label(key),
        run_id: run.id,
        condition: key.to_string(),
        experiment: None,
        base_url: String::new(),
        remote_id: None,
        curated: false,
        keep_defaults: false,
        status_mode: None,
        state: "written".into(),
        created_at: run.created_at.clone(),
        updated_at: run.created_at.clone(),
        error: None,
    }
}

/// The generated sets of the self-generated conditions of `runs`: trials that recorded their
/// skills (finished = total), and kept and refused skills as steps.
///
/// # Errors
/// Database errors.
pub fn sets(conn: &Connection, runs: &[RunRow]) -> Result<Vec<SpaceProgress>, StoreError> {
    let mut out = Vec::new();
    for run in runs {
        let keys: Vec<(usize, &String)> = run
            .conditions
            .iter()
            .enumerate()
            .filter(|(_, k)| is_self_generated_key(k))
            .collect();
        if keys.is_empty() {
            continue;
        }
        let records = queries::generated_skills(conn, run.id)?;
        for (index, key) in keys {
            let of: Vec<_> = records.iter().filter(|r| &r.condition == key).collect();
            let kept: usize = of.iter().map(|r| r.generated.skills.len()).sum();
            let refused: usize = of.iter().map(|r| r.generated.refused.len()).sum();
            out.push(SpaceProgress {
                space: space_row(run, index, key),
                total: of.len() as u64,
                finished: of.len() as u64,
                by_step: vec![
                    ("kept".into(), kept as u64),
                    ("refused".into(), refused as u64),
                ],
                mislabeled: 0,
                rejected: 0,
                errors: refused as u64,
                current: None,
                export: None,
            });
        }
    }
    Ok(out)
}

/// The learning spaces of a snapshot, then its generated sets: what the skill browser lists.
pub fn skill_sets(s: &Snapshot) -> Vec<SpaceProgress> {
    s.spaces.iter().chain(&s.generated).cloned().collect()
}

/// A kept skill's files, read from the trial folder (at most [`ExportLimits`]' sizes), sanitized.
fn files_of(dir: &Path) -> Vec<SkillFileRow> {
    match snapshot_dir(dir, &ExportLimits::default()) {
        Ok(s) => s
            .files
            .into_iter()
            .map(|f| SkillFileRow {
                path: one_line(&f.path),
                size: f.size,
                sha256: f.sha256,
                text: f.text.as_deref().map(sanitize),
            })
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// The skill browser's data of generated set `id`: one entry per skill folder name the agents
/// wrote (the first trial's version shown, every trial that wrote it as a source), then the
/// refused ones (`<name> (refused)`, the reason as description, no files). No learn steps.
///
/// # Errors
/// Database errors; [`StoreError::NotFound`] for an id that names no self-generated condition.
pub fn load(conn: &Connection, id: i64) -> Result<SkillBrowser, StoreError> {
    let (run_id, index) = decode(id);
    let run = queries::get_run(conn, run_id)?;
    let key = run
        .conditions
        .get(index)
        .filter(|k| is_self_generated_key(k))
        .cloned()
        .ok_or_else(|| StoreError::NotFound(format!("no generated skill set {id}")))?;
    let records: Vec<_> = queries::generated_skills(conn, run_id)?
        .into_iter()
        .filter(|r| r.condition == key)
        .collect();
    let source = |r: &queries::GeneratedOfTrial, skill: &str, change: &str| SkillSourceRow {
        skill: one_line(skill),
        trial_id: r.trial_id,
        task_id: one_line(&r.task_id),
        trial_index: r.trial_index,
        verdict: r.outcome.clone().unwrap_or_else(|| "—".into()),
        change: change.into(),
    };
    let mut kept: BTreeMap<String, SkillEntry> = BTreeMap::new();
    let mut refused: BTreeMap<String, SkillEntry> = BTreeMap::new();
    for r in &records {
        for s in &r.generated.skills {
            let name = one_line(&s.dir_name);
            let e = kept.entry(name.clone()).or_insert_with(|| {
                let files = r
                    .trial_dir
                    .as_deref()
                    .map(|d| files_of(&Path::new(d).join(&r.generated.dir).join(&s.dir_name)))
                    .unwrap_or_default();
                SkillEntry {
                    name: name.clone(),
                    origin: SkillOrigin::Generated,
                    description: one_line(&s.description),
                    curated: None,
                    files: files
                        .iter()
                        .map(|f| SkillFile {
                            path: f.path.clone(),
                            curated: None,
                            learned: Some(f.clone()),
                        })
                        .collect(),
                    learned: Some(SkillVersion {
                        row: SkillVersionRow {
                            id: 0,
                            space_id: id,
                            origin: "generated".into(),
                            name: one_line(&s.name),
                            description: sanitize(&s.description),
                            content_hash: s.content_hash.clone(),
                            remote_id: None,
                            dir: None,
                            recorded_at: String::new(),
                            problems: s.problems.iter().map(|p| one_line(p)).collect(),
                        },
                        files,
                    }),
                    sources: Vec::new(),
                }
            });
            e.sources.push(source(r, &s.dir_name, "generated"));
        }
        for x in &r.generated.refused {
            let name = format!("{} (refused)", one_line(&x.skill));
            let e = refused.entry(name.clone()).or_insert_with(|| SkillEntry {
                name,
                origin: SkillOrigin::Refused,
                description: one_line(&match &x.path {
                    Some(p) => format!("refused: {p}: {}", x.reason),
                    None => format!("refused: {}", x.reason),
                }),
                curated: None,
                learned: None,
                files: Vec::new(),
                sources: Vec::new(),
            });
            e.sources.push(source(r, &x.skill, "refused"));
        }
    }
    let mut space = space_row(&run, index, &key);
    space.label = one_line(&space.label);
    Ok(SkillBrowser {
        space,
        skills: kept.into_values().chain(refused.into_values()).collect(),
        steps: Vec::new(),
    })
}
