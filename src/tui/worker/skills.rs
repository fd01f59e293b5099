//! The skill browser's data: one learning space's skills with their curated and learned versions
//! and files, provenance and learn steps — or one self-generated skill set (see below). Read only while the browser is open; remote text is sanitized.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use crate::acontext::export::{ExportLimits, snapshot_dir};
use crate::analysis::skill_content::{SkillContent, measure};
use crate::domain::RunRow;
use crate::sanitize::{self, one_line};
use crate::skillsbench::condition::is_self_generated_key;
use crate::store::learning::{
    self as lq, LearnStepRow, SkillFileRow, SkillSourceRow, SkillVersionRow, SpaceProgress,
    SpaceRow,
};
use crate::store::{StoreError, queries};

/// Where a skill of a space comes from, by its latest version per origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillOrigin {
    /// A task's curated skill, unchanged by learning.
    Curated,
    /// Created by learning.
    Learned,
    /// A curated skill that learning changed (the learned version differs).
    CuratedLearned,
    /// Written by an agent in a self-generated trial, and kept after validation.
    Generated,
    /// Written by an agent in a self-generated trial, and refused (malformed).
    Refused,
}

impl SkillOrigin {
    /// Label.
    pub fn label(self) -> &'static str {
        match self {
            SkillOrigin::Curated => "curated",
            SkillOrigin::Learned => "learned",
            SkillOrigin::CuratedLearned => "curated+learned",
            SkillOrigin::Generated => "generated",
            SkillOrigin::Refused => "refused",
        }
    }
}

/// A recorded skill version with its files.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillVersion {
    /// The version.
    pub row: SkillVersionRow,
    /// Its files, by path.
    pub files: Vec<SkillFileRow>,
}

/// One file path of a skill, in its curated and latest learned versions.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillFile {
    /// Path within the skill (sanitized).
    pub path: String,
    /// The curated version's file.
    pub curated: Option<SkillFileRow>,
    /// The latest learned version's file.
    pub learned: Option<SkillFileRow>,
}

/// How learning changed a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileChange {
    /// Same content (or only one version exists).
    Same,
    /// Only in the learned version.
    Added,
    /// Only in the curated version.
    Removed,
    /// Different content.
    Changed,
}

impl SkillFile {
    /// The file shown: the learned one when there is one.
    pub fn shown(&self) -> Option<&SkillFileRow> {
        self.learned.as_ref().or(self.curated.as_ref())
    }

    /// The change from curated to learned.
    pub fn change(&self) -> FileChange {
        match (&self.curated, &self.learned) {
            (Some(c), Some(l)) if c.sha256 == l.sha256 => FileChange::Same,
            (Some(_), Some(_)) => FileChange::Changed,
            (None, Some(_)) => FileChange::Added,
            (Some(_), None) => FileChange::Removed,
            (None, None) => FileChange::Same,
        }
    }
}

/// A skill of a space as the browser shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillEntry {
    /// Name (sanitized).
    pub name: String,
    /// Where it comes from.
    pub origin: SkillOrigin,
    /// Description of the version shown.
    pub description: String,
    /// Latest curated version.
    pub curated: Option<SkillVersion>,
    /// Latest learned version (as exported).
    pub learned: Option<SkillVersion>,
    /// Files of both versions by path, `SKILL.md` first; empty until the skill is exported.
    pub files: Vec<SkillFile>,
    /// Trials whose learning created or changed it, in learning order.
    pub sources: Vec<SkillSourceRow>,
    /// What the shown version holds, measured as the report's skill content analysis does
    /// ([`crate::analysis::skill_content::measure`]: SKILL.md body tokens and size bucket, files
    /// beside it, SOP and Warning entries, lines changed against the curated version); `None`
    /// until a SKILL.md text is recorded.
    pub content: Option<SkillContent>,
}

impl SkillEntry {
    /// Measures the shown SKILL.md (the learned one when there is one) against the curated one.
    fn measured(mut self) -> SkillEntry {
        let md = self.files.iter().find(|f| f.path == "SKILL.md");
        let shown = md.and_then(|f| f.shown()).and_then(|r| r.text.as_deref());
        let curated = md
            .filter(|f| f.learned.is_some())
            .and_then(|f| f.curated.as_ref())
            .and_then(|r| r.text.as_deref());
        let beside = self.files.iter().filter(|f| f.path != "SKILL.md").count();
        self.content = shown.map(|text| measure(&self.name, text, beside, curated));
        self
    }
}

/// The skill browser's data for one learning space.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillBrowser {
    /// The space (sanitized).
    pub space: SpaceRow,
    /// Its skills by name: every recorded version's name, and names that learning changed but
    /// that were not exported yet.
    pub skills: Vec<SkillEntry>,
    /// Every learn step in learning order (sanitized).
    pub steps: Vec<LearnStepRow>,
}

fn same_content(a: &SkillVersion, b: &SkillVersion) -> bool {
    let files = |v: &SkillVersion| -> Vec<(String, String)> {
        v.files
            .iter()
            .map(|f| (f.path.clone(), f.sha256.clone()))
            .collect()
    };
    a.row.content_hash == b.row.content_hash || files(a) == files(b)
}

/// Reads the skill browser's data of space `space_id` in one transaction, sanitized — or of a
/// generated skill set for its (negative) id.
///
/// # Errors
/// Database errors; [`StoreError::NotFound`] for an unknown space.
pub fn load_skills(conn: &Connection, space_id: i64) -> Result<SkillBrowser, StoreError> {
    if is_generated_set(space_id) {
        return load_generated_set(conn, space_id);
    }
    let tx = conn.unchecked_transaction()?;
    let mut space = lq::get_space(&tx, space_id)?;
    // Latest version per (name, origin): versions come by name, then oldest first.
    let mut latest: BTreeMap<String, (Option<SkillVersionRow>, Option<SkillVersionRow>)> =
        BTreeMap::new();
    for mut v in lq::versions(&tx, space_id)? {
        v.name = one_line(&v.name);
        let e = latest.entry(v.name.clone()).or_default();
        if v.origin == "curated" {
            e.0 = Some(v);
        } else {
            e.1 = Some(v);
        }
    }
    let mut sources: BTreeMap<String, Vec<SkillSourceRow>> = BTreeMap::new();
    for mut s in lq::sources(&tx, space_id)? {
        s.skill = one_line(&s.skill);
        s.task_id = one_line(&s.task_id);
        s.verdict = one_line(&s.verdict);
        s.change = one_line(&s.change);
        latest.entry(s.skill.clone()).or_default();
        sources.entry(s.skill.clone()).or_default().push(s);
    }
    let with_files = |v: Option<SkillVersionRow>| -> Result<Option<SkillVersion>, StoreError> {
        let Some(mut row) = v else { return Ok(None) };
        row.description = sanitize::text(&row.description);
        row.dir = row.dir.as_deref().map(one_line);
        row.problems = row.problems.iter().map(|p| one_line(p)).collect();
        let files = lq::version_files(&tx, row.id)?
            .into_iter()
            .map(|mut f| {
                f.path = one_line(&f.path);
                f.text = f.text.as_deref().map(sanitize::text);
                f
            })
            .collect();
        Ok(Some(SkillVersion { row, files }))
    };
    let mut skills = Vec::new();
    for (name, (c, l)) in latest {
        let curated = with_files(c)?;
        let learned = with_files(l)?;
        let origin = match (&curated, &learned) {
            (Some(c), Some(l)) if !same_content(c, l) => SkillOrigin::CuratedLearned,
            (Some(_), _) => SkillOrigin::Curated,
            (None, _) => SkillOrigin::Learned,
        };
        let mut files: BTreeMap<String, SkillFile> = BTreeMap::new();
        for (v, is_learned) in [(&curated, false), (&learned, true)] {
            for f in v.iter().flat_map(|v| v.files.iter()) {
                let e = files.entry(f.path.clone()).or_insert_with(|| SkillFile {
                    path: f.path.clone(),
                    curated: None,
                    learned: None,
                });
                if is_learned {
                    e.learned = Some(f.clone());
                } else {
                    e.curated = Some(f.clone());
                }
            }
        }
        let mut files: Vec<SkillFile> = files.into_values().collect();
        files.sort_by_key(|f| (f.path != "SKILL.md", f.path.clone()));
        skills.push(
            SkillEntry {
                description: learned
                    .as_ref()
                    .or(curated.as_ref())
                    .map(|v| one_line(&v.row.description))
                    .unwrap_or_default(),
                sources: sources.remove(&name).unwrap_or_default(),
                name,
                origin,
                curated,
                learned,
                files,
                content: None,
            }
            .measured(),
        );
    }
    let mut steps = lq::steps(&tx, space_id)?;
    tx.finish()?;
    steps.iter_mut().for_each(clean_step);
    clean_space(&mut space);
    Ok(SkillBrowser {
        space,
        skills,
        steps,
    })
}

/// Sanitizes the remote text of a learning space row (labels, states, errors) in place.
pub(super) fn clean_space(s: &mut SpaceRow) {
    s.label = one_line(&s.label);
    s.condition = one_line(&s.condition);
    s.state = one_line(&s.state);
    s.status_mode = s.status_mode.as_deref().map(one_line);
    s.error = s.error.as_deref().map(one_line);
}

/// Sanitizes the remote text of a learn step row in place.
pub(super) fn clean_step(s: &mut LearnStepRow) {
    s.task_id = one_line(&s.task_id);
    s.verdict = one_line(&s.verdict);
    s.step = one_line(&s.step);
    s.mode = s.mode.as_deref().map(one_line);
    s.learning_status = s.learning_status.as_deref().map(one_line);
    s.error = s.error.as_deref().map(one_line);
}

// ---- self-generated skill sets ------------------------------------------------------------------
//
// The skill browser's self-generated skill sets: per run and self-generated condition, the
// skills the agents of its trials wrote (kept after validation, or refused), browsable like a
// learning space's. A set is shown as a [`SpaceProgress`] whose space row is synthetic: its id
// is negative (`-(run id × 1024 + condition index + 1)`) so it never meets a real space's, its
// state is `written`, its progress counts the trials that recorded their skills.
//
// Everything here was written by agents in containers: names, descriptions, reasons and file
// text are sanitized when read, like a learning space's.

/// Most conditions a run can have for set ids to stay apart.
const PER_RUN: i64 = 1024;

/// The id of the generated set of condition `index` of run `run_id`.
pub fn generated_set_id(run_id: i64, index: usize) -> i64 {
    -(run_id * PER_RUN + index as i64 + 1)
}

/// True for the id of a generated set (never a learning space's).
pub fn is_generated_set(id: i64) -> bool {
    id < 0
}

/// (run id, condition index) of a set id.
fn decode(id: i64) -> (i64, usize) {
    let n = -id - 1;
    (n / PER_RUN, (n % PER_RUN) as usize)
}

/// Short label of a condition key's skill set for the browser's list: `self-gen`,
/// `self-gen:2`, `curated`, or a skills folder's name.
fn label(key: &str) -> String {
    if is_self_generated_key(key) {
        if key.ends_with(":two-phase") {
            "self-gen:2".into()
        } else {
            "self-gen".into()
        }
    } else if key == "curated" {
        "curated".into()
    } else {
        key.split_once(':')
            .map(|(_, dir)| {
                Path::new(dir)
                    .file_name()
                    .map_or_else(|| dir.to_string(), |n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| key.to_string())
    }
}

/// The skills folders condition `key` of `run` puts into its trials, on this machine, each with
/// the task it is for (`None`: every task's): a task's own `environment/skills` for `curated`,
/// the folder of `skills:<dir>`, each task's subfolder of `skills-by-task:<dir>`. Empty for the
/// conditions that bring no skills (no-skills, self-generated).
fn skill_roots(run: &RunRow, key: &str, tasks: &[String]) -> Vec<(Option<String>, PathBuf)> {
    let root = Path::new(&run.tasks_dir);
    if key == "curated" {
        tasks
            .iter()
            .map(|t| (Some(t.clone()), root.join(t).join("environment/skills")))
            .collect()
    } else if let Some(dir) = key.strip_prefix("skills-by-task:") {
        tasks
            .iter()
            .map(|t| (Some(t.clone()), Path::new(dir).join(t)))
            .collect()
    } else if let Some(dir) = key.strip_prefix("skills:") {
        vec![(None, PathBuf::from(dir))]
    } else {
        Vec::new()
    }
}

/// True for a condition whose trials are given skills from a folder ([`skill_roots`]).
fn brings_skills(key: &str) -> bool {
    key == "curated" || key.starts_with("skills:") || key.starts_with("skills-by-task:")
}

fn space_row(run: &RunRow, index: usize, key: &str) -> SpaceRow {
    SpaceRow {
        id: generated_set_id(run.id, index),
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
        waiting_since: None,
        waiting_reason: None,
        next_retry_at: None,
    }
}

/// The skill sets the browser lists besides learning spaces: of the self-generated conditions of
/// `runs`, the skills their agents wrote — trials that recorded their skills (finished = total),
/// and kept and refused skills as steps — and, for a run without learning spaces (`with_folders`),
/// of each condition that gives its trials skills from a folder ([`skill_roots`]: curated, a
/// skills folder) the skills in it, read when the set is opened ([`load_skills`]), so that a
/// plain run's curated skills can be read too.
///
/// # Errors
/// Database errors.
pub fn generated_sets(
    conn: &Connection,
    runs: &[RunRow],
    with_folders: bool,
) -> Result<Vec<SpaceProgress>, StoreError> {
    let mut out = Vec::new();
    for run in runs {
        if with_folders {
            for (index, key) in run.conditions.iter().enumerate() {
                // Only where its folders are on this machine (a run moved here, or imported,
                // shows the skills its trials saw instead).
                let on_disk = match key.split_once(':') {
                    Some((_, dir)) => Path::new(dir).is_dir(),
                    None => Path::new(&run.tasks_dir).is_dir(),
                };
                if brings_skills(key) && on_disk {
                    let mut space = space_row(run, index, key);
                    space.state = "on disk".into();
                    out.push(SpaceProgress::empty(space));
                }
            }
        }
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

/// The skill set of condition `key` (index `index` of `run`) read from its folders on this
/// machine ([`skill_roots`]): one entry per skill folder name, its first task's version shown
/// (as curated: a version no learning changed), its description naming the tasks that ship it.
/// A folder that cannot be read (gone since the run, over the export limits) is left out.
fn load_folder_set(run: &RunRow, index: usize, key: &str, tasks: &[String]) -> SkillBrowser {
    let mut skills: BTreeMap<String, (SkillEntry, Vec<String>)> = BTreeMap::new();
    for (task, root) in skill_roots(run, key, tasks) {
        let Ok(entries) = std::fs::read_dir(&root) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join("SKILL.md").is_file())
            .collect();
        dirs.sort();
        for dir in dirs {
            let Ok(snap) = snapshot_dir(&dir, &ExportLimits::default()) else {
                continue;
            };
            let name = one_line(&snap.dir_name);
            let (_, shipped_by) = skills.entry(name.clone()).or_insert_with(|| {
                let files: Vec<SkillFileRow> = snap
                    .files
                    .iter()
                    .map(|f| SkillFileRow {
                        path: one_line(&f.path),
                        size: f.size,
                        sha256: f.sha256.clone(),
                        text: f.text.as_deref().map(sanitize::text),
                    })
                    .collect();
                let entry = SkillEntry {
                    name: name.clone(),
                    origin: SkillOrigin::Curated,
                    description: one_line(&snap.description),
                    files: files
                        .iter()
                        .map(|f| SkillFile {
                            path: f.path.clone(),
                            curated: Some(f.clone()),
                            learned: None,
                        })
                        .collect(),
                    curated: Some(SkillVersion {
                        row: SkillVersionRow {
                            id: 0,
                            space_id: generated_set_id(run.id, index),
                            origin: "curated".into(),
                            name: one_line(&snap.name),
                            description: sanitize::text(&snap.description),
                            content_hash: snap.content_hash.clone(),
                            remote_id: None,
                            dir: Some(dir.display().to_string()),
                            recorded_at: String::new(),
                            problems: snap.problems.iter().map(|p| one_line(p)).collect(),
                        },
                        files,
                    }),
                    learned: None,
                    sources: Vec::new(),
                    content: None,
                }
                .measured();
                (entry, Vec::new())
            });
            if let Some(t) = &task {
                shipped_by.push(one_line(t));
            }
        }
    }
    let mut space = space_row(run, index, key);
    space.label = one_line(&space.label);
    space.state = "on disk".into();
    SkillBrowser {
        space,
        skills: skills
            .into_values()
            .map(|(mut e, tasks)| {
                if !tasks.is_empty() {
                    let ships = format!("shipped by task {}", tasks.join(", "));
                    e.description = if e.description.is_empty() {
                        ships
                    } else {
                        format!("{} · {ships}", e.description)
                    };
                }
                e
            })
            .collect(),
        steps: Vec::new(),
    }
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
                text: f.text.as_deref().map(sanitize::text),
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
pub fn load_generated_set(conn: &Connection, id: i64) -> Result<SkillBrowser, StoreError> {
    let (run_id, index) = decode(id);
    let run = queries::get_run(conn, run_id)?;
    if let Some(key) = run.conditions.get(index).filter(|k| brings_skills(k)) {
        let tasks: Vec<String> = queries::run_tasks(conn, run_id)?
            .into_iter()
            .map(|t| t.task_id)
            .collect();
        return Ok(load_folder_set(&run, index, key, &tasks));
    }
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
                            description: sanitize::text(&s.description),
                            content_hash: s.content_hash.clone(),
                            remote_id: None,
                            dir: None,
                            recorded_at: String::new(),
                            problems: s.problems.iter().map(|p| one_line(p)).collect(),
                        },
                        files,
                    }),
                    sources: Vec::new(),
                    content: None,
                }
                .measured()
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
                content: None,
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
