//! The skills each trial's agent could see and whether its use of them is known
//! (`trial_exposures`, `exposed_skills`; the record is [`SkillExposure`]), read back per trial
//! with what it used (`skill_uses`) and what it generated, and the learning provenance of
//! learned skills by content hash.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rusqlite::{Connection, params};
use serde::Serialize;

use super::StoreError;
use crate::skillsbench::exposure::{Builtins, Origin, SkillExposure, UseState};

/// Records what the agent of attempt `trial_id` could see (replacing an earlier record).
///
/// # Errors
/// SQL errors.
pub fn record(conn: &Connection, trial_id: i64, x: &SkillExposure) -> Result<(), StoreError> {
    conn.execute("DELETE FROM exposed_skills WHERE trial_id = ?1", [trial_id])?;
    let state = x.used.as_ref().map_or(UseState::Unknown, |u| u.state);
    let builtins = x.builtins.as_ref().map(serde_json::to_string).transpose()?;
    conn.execute(
        "INSERT OR REPLACE INTO trial_exposures (trial_id, captured_at, skill_use, builtins, error)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![trial_id, x.captured_at, state.as_str(), builtins, x.error],
    )?;
    let mut st = conn.prepare_cached(
        "INSERT OR REPLACE INTO exposed_skills
             (trial_id, dir, sha256, name, origin, enabled, path, paths, files, bytes)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    for s in &x.skills {
        st.execute(params![
            trial_id,
            s.dir,
            s.sha256,
            s.name,
            s.origin.as_str(),
            s.enabled,
            s.path,
            serde_json::to_string(&s.paths)?,
            s.files as i64,
            s.bytes as i64,
        ])?;
    }
    Ok(())
}

/// One visible skill as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExposedRow {
    /// Folder name.
    pub dir: String,
    /// Frontmatter name (else the folder name).
    pub name: String,
    /// Origin.
    pub origin: Origin,
    /// Folder hash.
    pub sha256: String,
    /// Offered to the model (false: a harness built-in switched off).
    pub enabled: bool,
}

/// The latest attempt of one trial with what its agent could see and used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialSkills {
    /// Run row id.
    pub run_id: i64,
    /// Attempt row id.
    pub trial_id: i64,
    /// Task.
    pub task_id: String,
    /// Condition key.
    pub condition: String,
    /// Trial index.
    pub trial_index: u32,
    /// The attempt finished (status `done`).
    pub done: bool,
    /// An exposure was recorded (its agent started).
    pub recorded: bool,
    /// Set when the skill folders could not be read.
    pub error: Option<String>,
    /// The trajectory says which skills were used.
    pub use_known: bool,
    /// The harness's own skills (`None`: no harness, or nothing recorded).
    pub builtins: Option<Builtins>,
    /// Visible skills.
    pub skills: Vec<ExposedRow>,
    /// Skills used (distinct names, from `skill_uses`).
    pub used: Vec<String>,
    /// Self-generated trials: the folder names of the valid skills the agent wrote (`None`: not
    /// a self-generated trial, or nothing recorded).
    pub generated: Option<Vec<String>>,
}

/// The latest attempts of run `run_id` whose exposure was recorded, with their uses, by task,
/// condition and trial index; with `generated`, also the valid skills each self-generated trial
/// wrote (and the self-generated trials without a record).
///
/// # Errors
/// SQL errors.
pub fn trial_skills(
    conn: &Connection,
    run_id: i64,
    generated: bool,
) -> Result<Vec<TrialSkills>, StoreError> {
    // Read from the exposure records within the run's row ids (one sequential range, empty when
    // the run recorded none), never by probing them once per trial of the run.
    const FROM: &str = "FROM trial_exposures e CROSS JOIN trials t ON t.id = e.trial_id";
    const WHERE: &str = "WHERE e.trial_id BETWEEN ?2 AND ?3 AND t.run_id = ?1 AND t.superseded = 0";
    let (lo, hi) = crate::store::trial_facts::row_range(conn, run_id)?.unwrap_or((1, 0));
    let mut out: Vec<TrialSkills> = super::learning::all(
        conn,
        &format!(
            "SELECT t.id, t.task_id, t.condition, t.trial_index, t.status, e.skill_use,
                    e.builtins, e.error {FROM} {WHERE}"
        ),
        params![run_id, lo, hi],
        |r| {
            let builtins: Option<String> = r.get(6)?;
            Ok(TrialSkills {
                run_id,
                trial_id: r.get(0)?,
                task_id: r.get(1)?,
                condition: r.get(2)?,
                trial_index: r.get(3)?,
                done: r.get::<_, String>(4)? == "done",
                recorded: true,
                use_known: r.get::<_, String>(5)? == "known",
                builtins: builtins.and_then(|b| serde_json::from_str(&b).ok()),
                error: r.get(7)?,
                skills: Vec::new(),
                used: Vec::new(),
                generated: None,
            })
        },
    )?;
    let mut index: HashMap<i64, usize> = out
        .iter()
        .enumerate()
        .map(|(i, t)| (t.trial_id, i))
        .collect();
    let skills = super::learning::all(
        conn,
        &format!(
            "SELECT s.trial_id, s.dir, s.name, s.origin, s.sha256, s.enabled
             {FROM} CROSS JOIN exposed_skills s ON s.trial_id = e.trial_id {WHERE}"
        ),
        params![run_id, lo, hi],
        |r| {
            Ok((
                r.get::<_, i64>(0)?,
                ExposedRow {
                    dir: r.get(1)?,
                    name: r.get(2)?,
                    origin: Origin::parse(&r.get::<_, String>(3)?),
                    sha256: r.get(4)?,
                    enabled: r.get(5)?,
                },
            ))
        },
    )?;
    for (id, s) in skills {
        if let Some(&i) = index.get(&id) {
            out[i].skills.push(s);
        }
    }
    let uses = super::learning::all(
        conn,
        &format!(
            "SELECT DISTINCT u.trial_id, u.skill
             {FROM} CROSS JOIN skill_uses u ON u.trial_id = e.trial_id {WHERE}"
        ),
        params![run_id, lo, hi],
        |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
    )?;
    for (id, skill) in uses {
        if let Some(&i) = index.get(&id) {
            out[i].used.push(skill);
        }
    }
    if generated {
        for g in super::queries::generated_skills(conn, run_id)? {
            let names: Vec<String> = g.generated.skills.into_iter().map(|s| s.dir_name).collect();
            match index.get(&g.trial_id) {
                Some(&i) => out[i].generated = Some(names),
                None => {
                    index.insert(g.trial_id, out.len());
                    out.push(TrialSkills {
                        run_id,
                        trial_id: g.trial_id,
                        task_id: g.task_id,
                        condition: g.condition,
                        trial_index: g.trial_index,
                        done: g.outcome.is_some(),
                        recorded: false,
                        error: None,
                        use_known: false,
                        builtins: None,
                        skills: Vec::new(),
                        used: Vec::new(),
                        generated: Some(names),
                    });
                }
            }
        }
    }
    for t in &mut out {
        t.skills
            .sort_by(|a, b| (&a.dir, &a.sha256).cmp(&(&b.dir, &b.sha256)));
        t.used.sort();
        t.used.dedup();
    }
    out.sort_by(|a, b| {
        (&a.task_id, &a.condition, a.trial_index).cmp(&(&b.task_id, &b.condition, b.trial_index))
    });
    Ok(out)
}

/// For each content hash in `hashes`: the tasks whose round-1 trials' learning created or
/// changed a learned skill version with exactly that content (`skill_versions` of origin
/// `learned`, their `skill_sources`, the trials' `learn_steps`). Hashes of no learned version
/// are absent.
///
/// # Errors
/// SQL errors.
pub fn learned_from_tasks(
    conn: &Connection,
    hashes: &BTreeSet<String>,
) -> Result<BTreeMap<String, BTreeSet<String>>, StoreError> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    if hashes.is_empty() {
        return Ok(out);
    }
    let list = serde_json::to_string(hashes)?;
    let rows = super::learning::all(
        conn,
        "SELECT DISTINCT v.content_hash, l.task_id
         FROM skill_versions v
         JOIN skill_sources s ON s.space_id = v.space_id AND s.skill = v.name
         JOIN learn_steps l ON l.space_id = s.space_id AND l.trial_id = s.trial_id
         WHERE v.origin = 'learned' AND v.content_hash IN (SELECT value FROM json_each(?1))",
        [list],
        |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
    )?;
    for (hash, task) in rows {
        out.entry(hash).or_default().insert(task);
    }
    Ok(out)
}
