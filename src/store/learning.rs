//! Rows and queries of the learning phase (schema migration 5): learning spaces, each trial's
//! step in the learning pipeline, curated skills uploaded into a space, skill versions and their
//! files (curated and learned, for diffs), which trials changed which skill, exports, and
//! experiments. Timestamps are RFC 3339 UTC text; JSON columns hold arrays of strings.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};

use super::StoreError;

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Every row of `sql` mapped by `f`.
fn all<T, P: rusqlite::Params>(
    conn: &Connection,
    sql: &str,
    params: P,
    f: impl FnMut(&Row) -> rusqlite::Result<T>,
) -> Result<Vec<T>, StoreError> {
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt.query_map(params, f)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

fn json_list(text: String) -> Vec<String> {
    serde_json::from_str(&text).unwrap_or_default()
}

// ---- learning spaces ----------------------------------------------------------------------------

/// A learning space as skillscope tracks it (`learning_spaces`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpaceRow {
    /// Row id.
    pub id: i64,
    /// Label (`LS-A`, `LS-B`, …), unique per source run.
    pub label: String,
    /// The run whose trials it learns from.
    pub run_id: i64,
    /// Condition key of those trials.
    pub condition: String,
    /// Experiment name, when part of one.
    pub experiment: Option<String>,
    /// Acontext base URL.
    pub base_url: String,
    /// Acontext learning space UUID, once created or found.
    pub remote_id: Option<String>,
    /// Starts with the tasks' curated skills.
    pub curated: bool,
    /// Keeps Acontext's default skills (`daily-logs`, `user-general-facts`).
    pub keep_defaults: bool,
    /// How verifier verdicts reach Acontext: `patch` or `criteria` (see `acontext::learn`).
    pub status_mode: Option<String>,
    /// `setup`, `learning` or `learned`.
    pub state: String,
    /// Created.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
    /// Why the last pass stopped, if it did.
    pub error: Option<String>,
}

/// A space to create (or find again).
#[derive(Debug, Clone)]
pub struct NewSpace {
    /// Label.
    pub label: String,
    /// Source run.
    pub run_id: i64,
    /// Condition key.
    pub condition: String,
    /// Experiment.
    pub experiment: Option<String>,
    /// Base URL.
    pub base_url: String,
    /// Curated start.
    pub curated: bool,
    /// Keep default skills.
    pub keep_defaults: bool,
}

const SPACE_COLS: &str = "id, label, run_id, condition, experiment, base_url, remote_id, curated, \
     keep_defaults, status_mode, state, created_at, updated_at, error";

fn space_row(r: &Row) -> rusqlite::Result<SpaceRow> {
    Ok(SpaceRow {
        id: r.get(0)?,
        label: r.get(1)?,
        run_id: r.get(2)?,
        condition: r.get(3)?,
        experiment: r.get(4)?,
        base_url: r.get(5)?,
        remote_id: r.get(6)?,
        curated: r.get(7)?,
        keep_defaults: r.get(8)?,
        status_mode: r.get(9)?,
        state: r.get(10)?,
        created_at: r.get(11)?,
        updated_at: r.get(12)?,
        error: r.get(13)?,
    })
}

/// The space of `(run, label)`, created when missing. An existing space keeps its remote id
/// and progress; its settings must match.
///
/// # Errors
/// [`StoreError::Conflict`] when the stored space learns from another condition, another
/// server or with other options; SQL errors.
pub fn find_or_insert_space(conn: &Connection, s: &NewSpace) -> Result<SpaceRow, StoreError> {
    let existing = conn
        .query_row(
            &format!("SELECT {SPACE_COLS} FROM learning_spaces WHERE run_id = ?1 AND label = ?2"),
            params![s.run_id, s.label],
            space_row,
        )
        .optional()?;
    if let Some(row) = existing {
        let differs = [
            (row.condition != s.condition, "condition"),
            (row.base_url != s.base_url, "Acontext base URL"),
            (row.curated != s.curated, "curated start"),
            (
                row.keep_defaults != s.keep_defaults,
                "default-skill setting",
            ),
        ];
        if let Some((_, what)) = differs.iter().find(|(d, _)| *d) {
            return Err(StoreError::Conflict(format!(
                "learning space {} of this run already exists with another {what}; use another label",
                s.label
            )));
        }
        return Ok(row);
    }
    let t = now();
    conn.execute(
        "INSERT INTO learning_spaces (label, run_id, condition, experiment, base_url, curated,
             keep_defaults, state, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'setup', ?8, ?8)",
        params![
            s.label,
            s.run_id,
            s.condition,
            s.experiment,
            s.base_url,
            s.curated,
            s.keep_defaults,
            t
        ],
    )?;
    get_space(conn, conn.last_insert_rowid())
}

/// One space.
///
/// # Errors
/// [`StoreError::NotFound`]; SQL errors.
pub fn get_space(conn: &Connection, id: i64) -> Result<SpaceRow, StoreError> {
    conn.query_row(
        &format!("SELECT {SPACE_COLS} FROM learning_spaces WHERE id = ?1"),
        [id],
        space_row,
    )
    .optional()?
    .ok_or_else(|| StoreError::NotFound(format!("no learning space {id}")))
}

/// Every space, oldest first.
///
/// # Errors
/// SQL errors.
pub fn list_spaces(conn: &Connection) -> Result<Vec<SpaceRow>, StoreError> {
    all(
        conn,
        &format!("SELECT {SPACE_COLS} FROM learning_spaces ORDER BY id"),
        [],
        space_row,
    )
}

/// Changes to a space (`None` leaves a field as it is).
#[derive(Debug, Clone, Default)]
pub struct SpacePatch {
    /// Remote id.
    pub remote_id: Option<String>,
    /// Status mode.
    pub status_mode: Option<String>,
    /// State.
    pub state: Option<String>,
    /// Error (`Some(None)` clears it).
    pub error: Option<Option<String>>,
}

/// Applies `p` to space `id`.
///
/// # Errors
/// SQL errors.
pub fn patch_space(conn: &Connection, id: i64, p: &SpacePatch) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE learning_spaces SET
             remote_id = COALESCE(?2, remote_id),
             status_mode = COALESCE(?3, status_mode),
             state = COALESCE(?4, state),
             error = CASE WHEN ?5 THEN ?6 ELSE error END,
             updated_at = ?7
         WHERE id = ?1",
        params![
            id,
            p.remote_id,
            p.status_mode,
            p.state,
            p.error.is_some(),
            p.error.clone().flatten(),
            now()
        ],
    )?;
    Ok(())
}

// ---- learning steps -----------------------------------------------------------------------------

/// Where one trial is in a space's learning pipeline (`learn_steps`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LearnStepRow {
    /// Space row id.
    pub space_id: i64,
    /// Trial attempt row id.
    pub trial_id: i64,
    /// Position in the learning order (0-based).
    pub seq: i64,
    /// Task.
    pub task_id: String,
    /// Trial index.
    pub trial_index: u32,
    /// `success` or `failed`, from the verifier.
    pub verdict: String,
    /// Session UUID (sent as `use_uuid`, so re-creating it is idempotent).
    pub session_id: String,
    /// Pipeline step (`acontext::learn::Step` as text).
    pub step: String,
    /// `patch` or `criteria`.
    pub mode: Option<String>,
    /// Acontext task ids of the session.
    pub task_ids: Vec<String>,
    /// Their statuses as last seen.
    pub task_statuses: Vec<String>,
    /// Learning status as last seen (`pending` … `completed`, `failed`).
    pub learning_status: Option<String>,
    /// The space's skills (name → `updated_at`) just before this trial's verdict was set, to
    /// find which skills its learning created or changed.
    pub skills_before: Option<serde_json::Value>,
    /// Times the current step was tried and failed.
    pub tries: u32,
    /// Last error or why the trial was not learned.
    pub error: Option<String>,
    /// Last change.
    pub updated_at: String,
    /// When it reached a final step.
    pub finished_at: Option<String>,
}

/// A trial to add to a space's learning order.
#[derive(Debug, Clone)]
pub struct NewStep {
    /// Trial attempt row id.
    pub trial_id: i64,
    /// Task.
    pub task_id: String,
    /// Trial index.
    pub trial_index: u32,
    /// `success` or `failed`.
    pub verdict: String,
    /// Session UUID.
    pub session_id: String,
    /// Initial step.
    pub step: String,
    /// Why it is skipped, when it is.
    pub note: Option<String>,
}

const STEP_COLS: &str = "space_id, trial_id, seq, task_id, trial_index, verdict, session_id, step, \
     mode, task_ids, task_statuses, learning_status, skills_before, tries, error, updated_at, finished_at";

fn step_row(r: &Row) -> rusqlite::Result<LearnStepRow> {
    Ok(LearnStepRow {
        space_id: r.get(0)?,
        trial_id: r.get(1)?,
        seq: r.get(2)?,
        task_id: r.get(3)?,
        trial_index: r.get(4)?,
        verdict: r.get(5)?,
        session_id: r.get(6)?,
        step: r.get(7)?,
        mode: r.get(8)?,
        task_ids: json_list(r.get(9)?),
        task_statuses: json_list(r.get(10)?),
        learning_status: r.get(11)?,
        skills_before: r
            .get::<_, Option<String>>(12)?
            .and_then(|t| serde_json::from_str(&t).ok()),
        tries: r.get(13)?,
        error: r.get(14)?,
        updated_at: r.get(15)?,
        finished_at: r.get(16)?,
    })
}

/// Adds trials to a space's learning order, after the ones it has; trials already planned keep
/// their row and progress. Returns how many were added.
///
/// # Errors
/// SQL errors.
pub fn plan_steps(
    conn: &Connection,
    space_id: i64,
    steps: &[NewStep],
) -> Result<usize, StoreError> {
    let mut next: i64 = conn.query_row(
        "SELECT COALESCE(MAX(seq) + 1, 0) FROM learn_steps WHERE space_id = ?1",
        [space_id],
        |r| r.get(0),
    )?;
    let mut stmt = conn.prepare(
        "INSERT OR IGNORE INTO learn_steps (space_id, trial_id, seq, task_id, trial_index, verdict,
             session_id, step, error, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    let t = now();
    let mut added = 0;
    for s in steps {
        let n = stmt.execute(params![
            space_id,
            s.trial_id,
            next,
            s.task_id,
            s.trial_index,
            s.verdict,
            s.session_id,
            s.step,
            s.note,
            t
        ])?;
        if n > 0 {
            next += 1;
            added += 1;
        }
    }
    Ok(added)
}

/// A space's steps in learning order.
///
/// # Errors
/// SQL errors.
pub fn steps(conn: &Connection, space_id: i64) -> Result<Vec<LearnStepRow>, StoreError> {
    all(
        conn,
        &format!("SELECT {STEP_COLS} FROM learn_steps WHERE space_id = ?1 ORDER BY seq"),
        [space_id],
        step_row,
    )
}

/// The steps of one trial attempt, in every space.
///
/// # Errors
/// SQL errors.
pub fn steps_of_trial(conn: &Connection, trial_id: i64) -> Result<Vec<LearnStepRow>, StoreError> {
    all(
        conn,
        &format!("SELECT {STEP_COLS} FROM learn_steps WHERE trial_id = ?1 ORDER BY space_id"),
        [trial_id],
        step_row,
    )
}

/// Changes to a step row (`None` leaves a field as it is).
#[derive(Debug, Clone, Default)]
pub struct StepPatch {
    /// New step.
    pub step: Option<String>,
    /// Mode.
    pub mode: Option<String>,
    /// Task ids.
    pub task_ids: Option<Vec<String>>,
    /// Task statuses.
    pub task_statuses: Option<Vec<String>>,
    /// Learning status.
    pub learning_status: Option<String>,
    /// Skills before the verdict.
    pub skills_before: Option<serde_json::Value>,
    /// Tries (`Some(0)` resets).
    pub tries: Option<u32>,
    /// Error (`Some(None)` clears it).
    pub error: Option<Option<String>>,
    /// Marks the step final now.
    pub finished: bool,
}

/// Applies `p` to the step of `(space, trial)`.
///
/// # Errors
/// SQL errors.
pub fn patch_step(
    conn: &Connection,
    space_id: i64,
    trial_id: i64,
    p: &StepPatch,
) -> Result<(), StoreError> {
    let t = now();
    conn.execute(
        "UPDATE learn_steps SET
             step = COALESCE(?3, step),
             mode = COALESCE(?4, mode),
             task_ids = COALESCE(?5, task_ids),
             task_statuses = COALESCE(?6, task_statuses),
             learning_status = COALESCE(?7, learning_status),
             tries = COALESCE(?8, tries),
             error = CASE WHEN ?9 THEN ?10 ELSE error END,
             finished_at = CASE WHEN ?11 THEN ?12 ELSE finished_at END,
             updated_at = ?12,
             skills_before = COALESCE(?13, skills_before)
         WHERE space_id = ?1 AND trial_id = ?2",
        params![
            space_id,
            trial_id,
            p.step,
            p.mode,
            p.task_ids.as_ref().map(serde_json::to_string).transpose()?,
            p.task_statuses
                .as_ref()
                .map(serde_json::to_string)
                .transpose()?,
            p.learning_status,
            p.tries,
            p.error.is_some(),
            p.error.clone().flatten(),
            p.finished,
            t,
            p.skills_before.as_ref().map(|v| v.to_string())
        ],
    )?;
    Ok(())
}

// ---- curated uploads ----------------------------------------------------------------------------

/// A curated skill put into a space (`space_uploads`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UploadRow {
    /// Space row id.
    pub space_id: i64,
    /// Skill name (from SKILL.md).
    pub name: String,
    /// Content hash of the uploaded folder.
    pub content_hash: String,
    /// The task whose `environment/skills` it came from.
    pub source_task: String,
    /// Acontext skill UUID, once uploaded.
    pub remote_skill_id: Option<String>,
    /// `planned`, `uploaded`, `included` or `skipped`.
    pub state: String,
    /// Why it was skipped, or other tasks that had the same skill.
    pub note: Option<String>,
}

/// Inserts or replaces the upload row of `(space, name)`.
///
/// # Errors
/// SQL errors.
pub fn put_upload(conn: &Connection, u: &UploadRow) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO space_uploads (space_id, name, content_hash, source_task, remote_skill_id, state, note)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (space_id, name) DO UPDATE SET content_hash = excluded.content_hash,
             source_task = excluded.source_task, remote_skill_id = excluded.remote_skill_id,
             state = excluded.state, note = excluded.note",
        params![
            u.space_id,
            u.name,
            u.content_hash,
            u.source_task,
            u.remote_skill_id,
            u.state,
            u.note
        ],
    )?;
    Ok(())
}

/// A space's curated uploads, by name.
///
/// # Errors
/// SQL errors.
pub fn uploads(conn: &Connection, space_id: i64) -> Result<Vec<UploadRow>, StoreError> {
    all(
        conn,
        "SELECT space_id, name, content_hash, source_task, remote_skill_id, state, note
         FROM space_uploads WHERE space_id = ?1 ORDER BY name",
        [space_id],
        |r| {
            Ok(UploadRow {
                space_id: r.get(0)?,
                name: r.get(1)?,
                content_hash: r.get(2)?,
                source_task: r.get(3)?,
                remote_skill_id: r.get(4)?,
                state: r.get(5)?,
                note: r.get(6)?,
            })
        },
    )
}

// ---- skill versions -----------------------------------------------------------------------------

/// One file of a skill version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillFileRow {
    /// Path within the skill (`/`-separated).
    pub path: String,
    /// Size, bytes.
    pub size: u64,
    /// SHA-256, hex.
    pub sha256: String,
    /// Text content, when UTF-8 and small enough to diff.
    pub text: Option<String>,
}

/// A skill version to record.
#[derive(Debug, Clone)]
pub struct NewSkillVersion {
    /// `curated` or `learned`.
    pub origin: String,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Content hash.
    pub content_hash: String,
    /// Acontext skill UUID.
    pub remote_id: Option<String>,
    /// Folder on disk.
    pub dir: Option<String>,
    /// SKILL.md warnings.
    pub problems: Vec<String>,
    /// Files.
    pub files: Vec<SkillFileRow>,
}

/// A recorded skill version (`skill_versions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillVersionRow {
    /// Row id.
    pub id: i64,
    /// Space row id.
    pub space_id: i64,
    /// `curated` or `learned`.
    pub origin: String,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Content hash.
    pub content_hash: String,
    /// Acontext skill UUID.
    pub remote_id: Option<String>,
    /// Folder on disk.
    pub dir: Option<String>,
    /// When first recorded.
    pub recorded_at: String,
    /// SKILL.md warnings.
    pub problems: Vec<String>,
}

/// Records a version with its files; a version with the same content is recorded once.
/// Returns `(row id, newly recorded)`.
///
/// # Errors
/// SQL errors.
pub fn record_version(
    conn: &Connection,
    space_id: i64,
    v: &NewSkillVersion,
) -> Result<(i64, bool), StoreError> {
    let existing: Option<i64> = conn
        .query_row(
            "SELECT id FROM skill_versions
             WHERE space_id = ?1 AND origin = ?2 AND name = ?3 AND content_hash = ?4",
            params![space_id, v.origin, v.name, v.content_hash],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(id) = existing {
        return Ok((id, false));
    }
    conn.execute(
        "INSERT INTO skill_versions (space_id, origin, name, description, content_hash, remote_id,
             dir, recorded_at, problems)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            space_id,
            v.origin,
            v.name,
            v.description,
            v.content_hash,
            v.remote_id,
            v.dir,
            now(),
            serde_json::to_string(&v.problems)?
        ],
    )?;
    let id = conn.last_insert_rowid();
    let mut stmt = conn.prepare(
        "INSERT INTO skill_files (version_id, path, size, sha256, text) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for f in &v.files {
        stmt.execute(params![id, f.path, f.size as i64, f.sha256, f.text])?;
    }
    Ok((id, true))
}

/// A space's skill versions: by name, then oldest first.
///
/// # Errors
/// SQL errors.
pub fn versions(conn: &Connection, space_id: i64) -> Result<Vec<SkillVersionRow>, StoreError> {
    all(
        conn,
        "SELECT id, space_id, origin, name, description, content_hash, remote_id, dir, recorded_at,
                problems
         FROM skill_versions WHERE space_id = ?1 ORDER BY name, id",
        [space_id],
        |r| {
            Ok(SkillVersionRow {
                id: r.get(0)?,
                space_id: r.get(1)?,
                origin: r.get(2)?,
                name: r.get(3)?,
                description: r.get(4)?,
                content_hash: r.get(5)?,
                remote_id: r.get(6)?,
                dir: r.get(7)?,
                recorded_at: r.get(8)?,
                problems: json_list(r.get(9)?),
            })
        },
    )
}

/// The files of a version, by path.
///
/// # Errors
/// SQL errors.
pub fn version_files(conn: &Connection, version_id: i64) -> Result<Vec<SkillFileRow>, StoreError> {
    all(
        conn,
        "SELECT path, size, sha256, text FROM skill_files WHERE version_id = ?1 ORDER BY path",
        [version_id],
        |r| {
            Ok(SkillFileRow {
                path: r.get(0)?,
                size: r.get::<_, i64>(1)? as u64,
                sha256: r.get(2)?,
                text: r.get(3)?,
            })
        },
    )
}

// ---- provenance ---------------------------------------------------------------------------------

/// A trial whose learning created or changed a skill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillSourceRow {
    /// Skill name.
    pub skill: String,
    /// Trial attempt row id.
    pub trial_id: i64,
    /// Task.
    pub task_id: String,
    /// Trial index.
    pub trial_index: u32,
    /// `success` or `failed`.
    pub verdict: String,
    /// `created` or `updated`.
    pub change: String,
}

/// Records that learning from `trial_id` created or updated `skill`.
///
/// # Errors
/// SQL errors.
pub fn add_source(
    conn: &Connection,
    space_id: i64,
    skill: &str,
    trial_id: i64,
    change: &str,
) -> Result<(), StoreError> {
    conn.execute(
        "INSERT OR IGNORE INTO skill_sources (space_id, skill, trial_id, change) VALUES (?1, ?2, ?3, ?4)",
        params![space_id, skill, trial_id, change],
    )?;
    Ok(())
}

/// The trials each skill of a space came from, in learning order.
///
/// # Errors
/// SQL errors.
pub fn sources(conn: &Connection, space_id: i64) -> Result<Vec<SkillSourceRow>, StoreError> {
    all(
        conn,
        "SELECT s.skill, s.trial_id, l.task_id, l.trial_index, l.verdict, s.change
         FROM skill_sources s JOIN learn_steps l ON l.space_id = s.space_id AND l.trial_id = s.trial_id
         WHERE s.space_id = ?1 ORDER BY s.skill, l.seq",
        [space_id], |r| {
        Ok(SkillSourceRow {
            skill: r.get(0)?,
            trial_id: r.get(1)?,
            task_id: r.get(2)?,
            trial_index: r.get(3)?,
            verdict: r.get(4)?,
            change: r.get(5)?,
        })
    },
    )
}

// ---- exports ------------------------------------------------------------------------------------

/// A skill a export refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefusedSkill {
    /// Skill name.
    pub skill: String,
    /// The offending file, when one.
    pub path: Option<String>,
    /// Why.
    pub reason: String,
}

/// An export of a space (`space_exports`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportRow {
    /// Row id.
    pub id: i64,
    /// Space row id.
    pub space_id: i64,
    /// The skills folder written.
    pub dir: String,
    /// When.
    pub exported_at: String,
    /// Skills written.
    pub n_skills: u32,
    /// Skills refused.
    pub refused: Vec<RefusedSkill>,
}

/// Records an export.
///
/// # Errors
/// SQL errors.
pub fn add_export(
    conn: &Connection,
    space_id: i64,
    dir: &str,
    n_skills: u32,
    refused: &[RefusedSkill],
) -> Result<ExportRow, StoreError> {
    conn.execute(
        "INSERT INTO space_exports (space_id, dir, exported_at, n_skills, refused) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![space_id, dir, now(), n_skills, serde_json::to_string(refused)?],
    )?;
    let id = conn.last_insert_rowid();
    Ok(exports(conn, space_id)?
        .into_iter()
        .find(|e| e.id == id)
        .expect("just inserted"))
}

/// A space's exports, oldest first.
///
/// # Errors
/// SQL errors.
pub fn exports(conn: &Connection, space_id: i64) -> Result<Vec<ExportRow>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT id, space_id, dir, exported_at, n_skills, refused FROM space_exports
         WHERE space_id = ?1 ORDER BY id",
    )?;
    let rows = stmt.query_map([space_id], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, u32>(4)?,
            r.get::<_, String>(5)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (id, space_id, dir, exported_at, n_skills, refused) = row?;
        out.push(ExportRow {
            id,
            space_id,
            dir,
            exported_at,
            n_skills,
            refused: serde_json::from_str(&refused)?,
        });
    }
    Ok(out)
}

// ---- experiments --------------------------------------------------------------------------------

/// An experiment (`experiments`): the two-round pipeline and the phase it is in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentRow {
    /// Row id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Created.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
    /// The plan as JSON (no secret values).
    pub plan: serde_json::Value,
    /// `round1`, `learn`, `export`, `round2` or `done`.
    pub phase: String,
    /// Round-1 run name.
    pub round1_run: String,
    /// Round-2 run name.
    pub round2_run: String,
    /// Last message (why it stopped, or the result).
    pub note: Option<String>,
    /// The held-out split (`experiment::split::Split` as JSON), when the plan has one.
    pub split: Option<serde_json::Value>,
}

fn experiment_row(r: &Row) -> rusqlite::Result<(ExperimentRow, String)> {
    Ok((
        ExperimentRow {
            id: r.get(0)?,
            name: r.get(1)?,
            created_at: r.get(2)?,
            updated_at: r.get(3)?,
            plan: serde_json::Value::Null,
            phase: r.get(5)?,
            round1_run: r.get(6)?,
            round2_run: r.get(7)?,
            note: r.get(8)?,
            split: r
                .get::<_, Option<String>>(9)?
                .and_then(|t| serde_json::from_str(&t).ok()),
        },
        r.get(4)?,
    ))
}

const EXPERIMENT_COLS: &str =
    "id, name, created_at, updated_at, plan, phase, round1_run, round2_run, note, split";

fn finish_experiment(
    pair: rusqlite::Result<(ExperimentRow, String)>,
) -> Result<ExperimentRow, StoreError> {
    let (mut row, plan) = pair?;
    row.plan = serde_json::from_str(&plan)?;
    Ok(row)
}

/// The experiment called `name`, if any.
///
/// # Errors
/// SQL errors.
pub fn find_experiment(conn: &Connection, name: &str) -> Result<Option<ExperimentRow>, StoreError> {
    conn.query_row(
        &format!("SELECT {EXPERIMENT_COLS} FROM experiments WHERE name = ?1"),
        [name],
        experiment_row,
    )
    .optional()?
    .map(|p| finish_experiment(Ok(p)))
    .transpose()
}

/// Every experiment, oldest first.
///
/// # Errors
/// SQL errors.
pub fn list_experiments(conn: &Connection) -> Result<Vec<ExperimentRow>, StoreError> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {EXPERIMENT_COLS} FROM experiments ORDER BY id"
    ))?;
    let rows = stmt.query_map([], experiment_row)?;
    rows.map(finish_experiment).collect()
}

/// Finds the experiment `name`, or creates it in phase `round1`. An existing one must have the
/// same plan.
///
/// # Errors
/// [`StoreError::Conflict`] when the stored plan differs; SQL errors.
pub fn find_or_insert_experiment(
    conn: &Connection,
    name: &str,
    plan: &serde_json::Value,
    round1_run: &str,
    round2_run: &str,
) -> Result<ExperimentRow, StoreError> {
    if let Some(row) = find_experiment(conn, name)? {
        if &row.plan != plan {
            return Err(StoreError::Conflict(format!(
                "experiment {name} exists with another plan (stored: {}); give the plan another name",
                row.plan
            )));
        }
        return Ok(row);
    }
    let t = now();
    conn.execute(
        "INSERT INTO experiments (name, created_at, updated_at, plan, phase, round1_run, round2_run)
         VALUES (?1, ?2, ?2, ?3, 'round1', ?4, ?5)",
        params![name, t, plan.to_string(), round1_run, round2_run],
    )?;
    find_experiment(conn, name)?.ok_or_else(|| StoreError::NotFound(name.to_string()))
}

/// Moves an experiment to `phase`, with a note.
///
/// # Errors
/// SQL errors.
pub fn set_experiment_phase(
    conn: &Connection,
    name: &str,
    phase: &str,
    note: Option<&str>,
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE experiments SET phase = ?2, note = ?3, updated_at = ?4 WHERE name = ?1",
        params![name, phase, note, now()],
    )?;
    Ok(())
}

/// Stores the held-out split of experiment `name` (JSON).
///
/// # Errors
/// SQL errors.
pub fn set_experiment_split(
    conn: &Connection,
    name: &str,
    split: &serde_json::Value,
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE experiments SET split = ?2, updated_at = ?3 WHERE name = ?1",
        params![name, split.to_string(), now()],
    )?;
    Ok(())
}

/// The skills one task received in round 2 from one space (`round2_skills`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round2SkillsRow {
    /// The space's label (`LS-A`, `LS-B`).
    pub label: String,
    /// Task.
    pub task_id: String,
    /// `all`, `domain` or `task`.
    pub mode: String,
    /// Skills it received.
    pub n_skills: u32,
    /// Their folder names.
    pub skills: Vec<String>,
}

/// Records (replacing earlier rows of the same space) what each task received in round 2.
///
/// # Errors
/// SQL errors.
pub fn put_round2_skills(
    conn: &Connection,
    experiment: &str,
    rows: &[Round2SkillsRow],
) -> Result<(), StoreError> {
    let mut stmt = conn.prepare(
        "INSERT INTO round2_skills (experiment, label, task_id, mode, n_skills, skills)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (experiment, label, task_id) DO UPDATE SET mode = excluded.mode,
             n_skills = excluded.n_skills, skills = excluded.skills",
    )?;
    for r in rows {
        stmt.execute(params![
            experiment,
            r.label,
            r.task_id,
            r.mode,
            r.n_skills,
            serde_json::to_string(&r.skills)?
        ])?;
    }
    Ok(())
}

/// What each task received in round 2 of `experiment`, by space label then task.
///
/// # Errors
/// SQL errors.
pub fn round2_skills(
    conn: &Connection,
    experiment: &str,
) -> Result<Vec<Round2SkillsRow>, StoreError> {
    all(
        conn,
        "SELECT label, task_id, mode, n_skills, skills FROM round2_skills
         WHERE experiment = ?1 ORDER BY label, task_id",
        [experiment],
        |r| {
            Ok(Round2SkillsRow {
                label: r.get(0)?,
                task_id: r.get(1)?,
                mode: r.get(2)?,
                n_skills: r.get(3)?,
                skills: json_list(r.get(4)?),
            })
        },
    )
}

// ---- dashboard ----------------------------------------------------------------------------------

/// True when a trial at `step` needs no more work (mirrors `acontext::learn::Step::is_final`:
/// `done`, `rejected`, `skipped`, and `mislabeled` once its learning `finished`).
pub fn is_final_step(step: &str, finished: bool) -> bool {
    matches!(step, "done" | "rejected" | "skipped") || (step == "mislabeled" && finished)
}

/// A space's learning progress, counted in SQL so the dashboard never loads every step to draw
/// the overview (a few indexed queries per space, whatever the number of trials).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpaceProgress {
    /// The space.
    pub space: SpaceRow,
    /// Trials in its learning order.
    pub total: u64,
    /// Trials that need no more work (final step).
    pub finished: u64,
    /// Trials per step (`queued`, `session`, … as stored), in no particular order.
    pub by_step: Vec<(String, u64)>,
    /// Trials learned with a label that contradicts the verifier.
    pub mislabeled: u64,
    /// Trials deliberately not learned (session deleted).
    pub rejected: u64,
    /// Trials whose last step failed or whose learning failed (the explanations stored with
    /// `skipped`, `rejected` and `mislabeled` rows are not counted).
    pub errors: u64,
    /// The first trial in learning order that is not final (the one being learned now).
    pub current: Option<LearnStepRow>,
    /// The latest export.
    pub export: Option<ExportRow>,
}

/// The experiment whose round-1 or round-2 run is `run_name` (the newest, if several).
///
/// # Errors
/// SQL errors.
pub fn experiment_of_run(
    conn: &Connection,
    run_name: &str,
) -> Result<Option<ExperimentRow>, StoreError> {
    conn.query_row(
        &format!(
            "SELECT {EXPERIMENT_COLS} FROM experiments
             WHERE round1_run = ?1 OR round2_run = ?1 ORDER BY id DESC LIMIT 1"
        ),
        [run_name],
        experiment_row,
    )
    .optional()?
    .map(|p| finish_experiment(Ok(p)))
    .transpose()
}

/// The spaces that learn from any of `run_ids`, oldest first.
///
/// # Errors
/// SQL errors.
pub fn spaces_of_runs(conn: &Connection, run_ids: &[i64]) -> Result<Vec<SpaceRow>, StoreError> {
    let ids = serde_json::to_string(run_ids)?;
    all(
        conn,
        &format!(
            "SELECT {SPACE_COLS} FROM learning_spaces
             WHERE run_id IN (SELECT value FROM json_each(?1)) ORDER BY id"
        ),
        [ids],
        space_row,
    )
}

/// The progress of `space`: one grouped pass over its steps (by step, finished, and whether the
/// row counts as an error), the current step's row, and the latest export.
///
/// # Errors
/// SQL errors.
pub fn space_progress(conn: &Connection, space: SpaceRow) -> Result<SpaceProgress, StoreError> {
    // One pass over the space's steps, grouped by (step, finished, has an error) — a handful of
    // groups — with each group's first `seq`; the rest is worked out from the groups. Only
    // columns the grouping needs are read, so the pass stays cheap at thousands of trials.
    let groups = all(
        conn,
        "SELECT step, finished_at IS NOT NULL,
                (error IS NOT NULL AND step NOT IN ('skipped', 'rejected', 'mislabeled'))
                    OR COALESCE(learning_status, '') = 'failed',
                COUNT(*), MIN(seq)
         FROM learn_steps WHERE space_id = ?1 GROUP BY 1, 2, 3",
        [space.id],
        |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, bool>(1)?,
                r.get::<_, bool>(2)?,
                r.get::<_, i64>(3)? as u64,
                r.get::<_, i64>(4)?,
            ))
        },
    )?;
    let mut p = SpaceProgress {
        space,
        total: 0,
        finished: 0,
        by_step: Vec::new(),
        mislabeled: 0,
        rejected: 0,
        errors: 0,
        current: None,
        export: None,
    };
    let mut first_open: Option<i64> = None;
    for (step, fin, err, n, seq) in groups {
        p.total += n;
        if is_final_step(&step, fin) {
            p.finished += n;
        } else {
            first_open = Some(first_open.map_or(seq, |s| s.min(seq)));
        }
        match step.as_str() {
            "mislabeled" => p.mislabeled += n,
            "rejected" => p.rejected += n,
            _ => {}
        }
        if err {
            p.errors += n;
        }
        match p.by_step.iter_mut().find(|(s, _)| *s == step) {
            Some((_, c)) => *c += n,
            None => p.by_step.push((step, n)),
        }
    }
    if let Some(seq) = first_open {
        p.current = conn
            .query_row(
                &format!("SELECT {STEP_COLS} FROM learn_steps WHERE space_id = ?1 AND seq = ?2"),
                params![p.space.id, seq],
                step_row,
            )
            .optional()?;
    }
    p.export = conn
        .query_row(
            "SELECT id FROM space_exports WHERE space_id = ?1 ORDER BY id DESC LIMIT 1",
            [p.space.id],
            |r| r.get::<_, i64>(0),
        )
        .optional()?
        .and_then(|id| {
            exports(conn, p.space.id)
                .ok()
                .and_then(|e| e.into_iter().find(|x| x.id == id))
        });
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn conn_with_run() -> (tempfile::TempDir, Connection, i64, i64) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let conn = store.connect().unwrap();
        store.writer().stop();
        conn.execute_batch(
            "INSERT INTO runs (name, created_at, tasks_dir, agent, n_trials, conditions, jobs_dir, status)
             VALUES ('r', 'now', '/t', 'oracle', 1, '[\"no-skills\"]', '/j', 'finished');
             INSERT INTO trials (run_id, task_id, condition, trial_index, attempt, status, agent, trial_name, queued_at)
             VALUES (1, 'a', 'no-skills', 0, 1, 'done', 'oracle', 'a__1', 'now');",
        )
        .unwrap();
        (dir, conn, 1, 1)
    }

    #[test]
    fn spaces_steps_versions_and_experiments_round_trip() {
        let (_d, conn, run, trial) = conn_with_run();
        let new = NewSpace {
            label: "LS-A".into(),
            run_id: run,
            condition: "no-skills".into(),
            experiment: None,
            base_url: "http://h/api/v1".into(),
            curated: false,
            keep_defaults: false,
        };
        let s = find_or_insert_space(&conn, &new).unwrap();
        assert_eq!(find_or_insert_space(&conn, &new).unwrap().id, s.id);
        let other = NewSpace {
            condition: "curated".into(),
            ..new.clone()
        };
        assert!(matches!(
            find_or_insert_space(&conn, &other),
            Err(StoreError::Conflict(_))
        ));
        patch_space(
            &conn,
            s.id,
            &SpacePatch {
                remote_id: Some("u".into()),
                status_mode: Some("patch".into()),
                ..Default::default()
            },
        )
        .unwrap();
        let s = get_space(&conn, s.id).unwrap();
        assert_eq!(s.remote_id.as_deref(), Some("u"));

        let step = NewStep {
            trial_id: trial,
            task_id: "a".into(),
            trial_index: 0,
            verdict: "success".into(),
            session_id: "sid".into(),
            step: "queued".into(),
            note: None,
        };
        assert_eq!(
            plan_steps(&conn, s.id, std::slice::from_ref(&step)).unwrap(),
            1
        );
        assert_eq!(plan_steps(&conn, s.id, &[step]).unwrap(), 0);
        patch_step(
            &conn,
            s.id,
            trial,
            &StepPatch {
                step: Some("attached".into()),
                task_ids: Some(vec!["t1".into()]),
                error: Some(Some("boom".into())),
                ..Default::default()
            },
        )
        .unwrap();
        let st = &steps(&conn, s.id).unwrap()[0];
        assert_eq!(
            (st.step.as_str(), st.task_ids.clone()),
            ("attached", vec!["t1".to_string()])
        );
        assert_eq!(st.error.as_deref(), Some("boom"));

        let v = NewSkillVersion {
            origin: "learned".into(),
            name: "x".into(),
            description: "d".into(),
            content_hash: "h1".into(),
            remote_id: None,
            dir: None,
            problems: vec![],
            files: vec![SkillFileRow {
                path: "SKILL.md".into(),
                size: 3,
                sha256: "s".into(),
                text: Some("abc".into()),
            }],
        };
        let (id, new_v) = record_version(&conn, s.id, &v).unwrap();
        assert!(new_v);
        assert_eq!(record_version(&conn, s.id, &v).unwrap(), (id, false));
        assert_eq!(
            version_files(&conn, id).unwrap()[0].text.as_deref(),
            Some("abc")
        );
        add_source(&conn, s.id, "x", trial, "created").unwrap();
        assert_eq!(sources(&conn, s.id).unwrap()[0].task_id, "a");

        // Progress: one open step with an error, then a mislabeled one once finished.
        let p = space_progress(&conn, get_space(&conn, s.id).unwrap()).unwrap();
        assert_eq!((p.total, p.finished, p.errors), (1, 0, 1));
        assert_eq!(p.current.as_ref().map(|c| c.trial_id), Some(trial));
        assert_eq!(p.by_step, vec![("attached".to_string(), 1)]);
        patch_step(
            &conn,
            s.id,
            trial,
            &StepPatch {
                step: Some("mislabeled".into()),
                finished: true,
                ..Default::default()
            },
        )
        .unwrap();
        let ex = add_export(&conn, s.id, "/x/ls-a-v1", 1, &[]).unwrap();
        let p = space_progress(&conn, get_space(&conn, s.id).unwrap()).unwrap();
        assert_eq!((p.total, p.finished, p.mislabeled, p.errors), (1, 1, 1, 0));
        assert!(p.current.is_none());
        assert_eq!(p.export, Some(ex));
        assert_eq!(spaces_of_runs(&conn, &[run]).unwrap().len(), 1);
        assert!(spaces_of_runs(&conn, &[run + 1]).unwrap().is_empty());

        let plan = serde_json::json!({"trials": 1});
        let e = find_or_insert_experiment(&conn, "e", &plan, "e-round1", "e-round2").unwrap();
        assert_eq!(e.phase, "round1");
        set_experiment_phase(&conn, "e", "learn", None).unwrap();
        assert_eq!(
            experiment_of_run(&conn, "e-round2").unwrap().unwrap().name,
            "e"
        );
        assert!(experiment_of_run(&conn, "other").unwrap().is_none());
        assert_eq!(find_experiment(&conn, "e").unwrap().unwrap().phase, "learn");
        assert!(find_or_insert_experiment(&conn, "e", &serde_json::json!({}), "a", "b").is_err());
    }
}
