//! The report's skill content section: the skill sets the conditions used — a task's curated
//! `environment/skills`, an export, what self-generating agents wrote — measured
//! ([`skill_content`]), and each condition with skills scored per bucket of the skills its tasks
//! had (count: 1, 2–3, 4+; size: the mean body tokens of a task's skills).
//!
//! An imported condition's task folders are usually on another machine: then what its
//! trajectories show it used is the evidence of its skills (known by name, size unknown), and a
//! task without a trajectory has an `unknown` count — never 0 beside a rubric that scores the
//! skills it used.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use rusqlite::Connection;

use super::{BucketRow, GeneratedSummary, SkillContentSection, SkillSet};
use crate::analysis::results::{ConditionResult, Results};
use crate::analysis::skill_content::{
    self, SkillContent, count_bucket, read_skills_dir, size_bucket,
};
use crate::skillsbench::condition::{condition_label, is_self_generated_key};
use crate::store::{StoreError, invocations, queries};

/// What a condition gave one task: how many skills (`None`: unknown) and their mean body
/// tokens (`None`: unknown — skills known only by name).
#[derive(Debug, Clone, Copy, PartialEq)]
struct TaskSkills {
    count: Option<usize>,
    tokens: Option<f64>,
}

impl TaskSkills {
    const UNKNOWN: TaskSkills = TaskSkills {
        count: None,
        tokens: None,
    };

    /// Measured skills.
    fn of(skills: &[SkillContent]) -> TaskSkills {
        TaskSkills {
            count: Some(skills.len()),
            tokens: Some(mean_tokens(skills)),
        }
    }

    fn count_bucket(self) -> &'static str {
        self.count.map_or("unknown", count_bucket)
    }

    fn size_bucket(self) -> &'static str {
        match (self.count, self.tokens) {
            (Some(0), _) => "none",
            (Some(_), Some(t)) => size_bucket(t),
            _ => "unknown",
        }
    }
}

/// One condition's skill set: its name, per task what it gave, its measured skills, and skills
/// known only by name.
struct ConditionSkills {
    set_name: String,
    per_task: Vec<TaskSkills>,
    skills: Vec<SkillContent>,
    seen_only: Vec<String>,
}

/// Task folders by id (the first run that has the task), and each curated skill's SKILL.md by
/// task.
struct Folders {
    paths: HashMap<String, String>,
    curated: HashMap<String, Vec<(String, String, usize)>>,
}

impl Folders {
    fn read(conn: &Connection, results: &Results) -> Result<Folders, StoreError> {
        let mut paths: HashMap<String, String> = HashMap::new();
        for r in &results.runs {
            if let Some(run) = queries::find_run(conn, &r.name)? {
                for t in queries::run_tasks(conn, run.id)? {
                    paths.entry(t.task_id).or_insert(t.path);
                }
            }
        }
        let curated = results
            .tasks
            .iter()
            .map(|t| {
                let own = paths
                    .get(&t.id)
                    .map(|p| read_skills_dir(&Path::new(p).join("environment/skills")))
                    .unwrap_or_default();
                (t.id.clone(), own)
            })
            .collect();
        Ok(Folders { paths, curated })
    }

    /// True when task `id`'s folder is on this machine (its skills folder, or its absence, says
    /// what the task had).
    fn present(&self, id: &str) -> bool {
        self.paths
            .get(id)
            .is_some_and(|p| !p.is_empty() && Path::new(p).is_dir())
    }

    /// The curated SKILL.md of skill `name`, from any task.
    fn curated_text(&self, name: &str) -> Option<String> {
        self.curated
            .values()
            .flatten()
            .find(|(n, _, _)| n == name)
            .map(|(_, md, _)| md.clone())
    }
}

/// The skill content section of `results`.
///
/// # Errors
/// SQL errors (unreadable skill folders only leave skills out).
pub(super) fn skill_content_of(
    conn: &Connection,
    results: &Results,
) -> Result<SkillContentSection, StoreError> {
    let folders = Folders::read(conn, results)?;
    let mut sets: Vec<SkillSet> = Vec::new();
    let mut buckets = Vec::new();
    let mut generated = Vec::new();
    for (ci, c) in results.conditions.iter().enumerate() {
        let got = if c.condition == "curated" {
            curated(conn, results, c, &folders)?
        } else if let Some(dir) = c.condition.strip_prefix("skills:") {
            export(results, c, dir, &folders)
        } else if let Some(dir) = c.condition.strip_prefix("skills-by-task:") {
            export_by_task(results, c, dir, &folders)
        } else if is_self_generated_key(&c.condition) {
            let (got, summary) = self_generated(conn, results, c)?;
            generated.push(summary);
            got
        } else {
            continue;
        };
        let base = baseline_of(results, &c.label, &c.run).filter(|b| *b != ci);
        buckets.extend(bucket_rows(results, c, base, &got.per_task));
        match sets.iter_mut().find(|s| s.name == got.set_name) {
            Some(s) => s.conditions.push(c.label.clone()),
            None => sets.push(SkillSet {
                name: got.set_name,
                conditions: vec![c.label.clone()],
                skills: got.skills,
                seen_only: got.seen_only,
            }),
        }
    }
    Ok(SkillContentSection {
        tokenizer: skill_content::TOKENIZER.to_string(),
        sets,
        buckets,
        generated,
    })
}

/// The condition a condition's buckets are compared with: round 1's for round 2, no skills for
/// curated and self-generated skills in an experiment, else its run's no-skills condition.
fn baseline_of(results: &Results, label: &str, run: &str) -> Option<usize> {
    let want = match (results.experiment.is_some(), label) {
        (true, "A'") => Some("A"),
        (true, "B'") => Some("B"),
        (true, "B" | "C") => Some("A"),
        _ => None,
    };
    match want {
        Some(w) => results.conditions.iter().position(|c| c.label == w),
        None => results
            .conditions
            .iter()
            .position(|c| c.run == run && c.condition == "no-skills"),
    }
}

/// A task's curated skills from its folder; for a task whose folder is not on this machine, the
/// skills its trajectories show it used (by name), or unknown without a trajectory.
fn curated(
    conn: &Connection,
    results: &Results,
    c: &ConditionResult,
    folders: &Folders,
) -> Result<ConditionSkills, StoreError> {
    // The trajectories' evidence is read only when some task's folder is missing here.
    let seen_in = match queries::find_run(conn, &c.run)? {
        Some(r) if results.tasks.iter().any(|t| !folders.present(&t.id)) => {
            invocations::skills_seen(conn, r.id, &c.condition)?
        }
        _ => BTreeMap::new(),
    };
    let mut seen = BTreeSet::new();
    let mut all = Vec::new();
    let mut by_name: BTreeSet<String> = BTreeSet::new();
    let per_task = results
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if folders.present(&t.id) {
                let own = measure_unique(&folders.curated[&t.id], &|_| None, &mut seen, &mut all);
                return TaskSkills::of(&own);
            }
            match seen_in.get(&t.id) {
                Some(s) if s.with_trajectory > 0 && c.ran(i) => {
                    by_name.extend(s.skills.iter().cloned());
                    TaskSkills {
                        count: Some(s.skills.len()),
                        tokens: s.skills.is_empty().then_some(0.0),
                    }
                }
                _ => TaskSkills::UNKNOWN,
            }
        })
        .collect();
    let measured: BTreeSet<&str> = all.iter().map(|k: &SkillContent| k.name.as_str()).collect();
    let seen_only = by_name
        .into_iter()
        .filter(|n| !measured.contains(n.as_str()))
        .collect();
    Ok(ConditionSkills {
        set_name: "curated".to_string(),
        per_task,
        skills: all,
        seen_only,
    })
}

/// An export (`skills:<dir>`): every task got the whole folder.
fn export(results: &Results, c: &ConditionResult, dir: &str, folders: &Folders) -> ConditionSkills {
    let skills: Vec<SkillContent> = read_skills_dir(Path::new(dir))
        .iter()
        .map(|(n, md, files)| {
            skill_content::measure(n, md, *files, folders.curated_text(n).as_deref())
        })
        .collect();
    ConditionSkills {
        set_name: condition_label(&c.condition),
        per_task: vec![TaskSkills::of(&skills); results.tasks.len()],
        skills,
        seen_only: Vec::new(),
    }
}

/// A per-task export (`skills-by-task:<dir>`, round-2 skill selection): each task its own
/// folder.
fn export_by_task(
    results: &Results,
    c: &ConditionResult,
    dir: &str,
    folders: &Folders,
) -> ConditionSkills {
    let mut seen = BTreeSet::new();
    let mut all = Vec::new();
    let per_task = results
        .tasks
        .iter()
        .map(|t| {
            let own = measure_unique(
                &read_skills_dir(&Path::new(dir).join(&t.id)),
                &|n| folders.curated_text(n),
                &mut seen,
                &mut all,
            );
            TaskSkills::of(&own)
        })
        .collect();
    ConditionSkills {
        set_name: condition_label(&c.condition),
        per_task,
        skills: all,
        seen_only: Vec::new(),
    }
}

/// What each trial's agent wrote (and kept): per task, the mean over its trials; unknown for a
/// task none of whose trials recorded it (an imported self-generated condition).
fn self_generated(
    conn: &Connection,
    results: &Results,
    c: &ConditionResult,
) -> Result<(ConditionSkills, GeneratedSummary), StoreError> {
    let mut summary = GeneratedSummary {
        condition: c.label.clone(),
        trials: 0,
        kept: 0,
        refused: 0,
        reasons: Vec::new(),
    };
    let mut per: HashMap<&str, Vec<TaskSkills>> = HashMap::new();
    let mut seen = BTreeSet::new();
    let mut all = Vec::new();
    let records = match queries::find_run(conn, &c.run)? {
        Some(r) => queries::generated_skills(conn, r.id)?,
        None => Vec::new(),
    };
    for g in records.iter().filter(|g| g.condition == c.condition) {
        summary.trials += 1;
        summary.kept += g.generated.skills.len();
        summary.refused += g.generated.refused.len();
        for r in &g.generated.refused {
            if summary.reasons.len() < 10 && !summary.reasons.contains(&r.reason) {
                summary.reasons.push(r.reason.clone());
            }
        }
        let dir = g
            .trial_dir
            .as_deref()
            .map(|d| Path::new(d).join(&g.generated.dir));
        let own = measure_unique(
            &dir.map(|d| read_skills_dir(&d)).unwrap_or_default(),
            &|_| None,
            &mut seen,
            &mut all,
        );
        if let Some(t) = results.tasks.iter().find(|t| t.id == g.task_id) {
            per.entry(t.id.as_str())
                .or_default()
                .push(TaskSkills::of(&own));
        }
    }
    let per_task = results
        .tasks
        .iter()
        .map(|t| match per.get(t.id.as_str()) {
            Some(v) if !v.is_empty() => {
                let n = v.len() as f64;
                let counts: usize = v.iter().filter_map(|x| x.count).sum();
                let tokens: f64 = v.iter().filter_map(|x| x.tokens).sum();
                TaskSkills {
                    count: Some((counts as f64 / n).round() as usize),
                    tokens: Some(tokens / n),
                }
            }
            _ => TaskSkills::UNKNOWN,
        })
        .collect();
    Ok((
        ConditionSkills {
            set_name: condition_label(&c.condition),
            per_task,
            skills: all,
            seen_only: Vec::new(),
        },
        summary,
    ))
}

/// Condition `c`'s pass rate per bucket of the skills its tasks had, beside its baseline's
/// (`base`, an index into the conditions) over the same tasks: those both ran.
fn bucket_rows(
    results: &Results,
    c: &ConditionResult,
    base: Option<usize>,
    per_task: &[TaskSkills],
) -> Vec<BucketRow> {
    const ORDER: [&str; 8] = [
        "none",
        "1",
        "2–3",
        "4+",
        "compact",
        "detailed",
        "comprehensive",
        "unknown",
    ];
    let mut out = Vec::new();
    for (kind, key) in [
        (
            "skills per task",
            TaskSkills::count_bucket as fn(TaskSkills) -> &'static str,
        ),
        ("skill size", TaskSkills::size_bucket),
    ] {
        for b in ORDER {
            // The bucket's tasks the condition ran (and its baseline, when it has one).
            let idx: Vec<usize> = (0..results.tasks.len())
                .filter(|&i| key(per_task[i]) == b && c.ran(i))
                .filter(|&i| base.is_none_or(|b| results.conditions[b].ran(i)))
                .collect();
            if idx.is_empty() {
                continue;
            }
            let mean = |v: &[Option<f64>]| {
                idx.iter().filter_map(|&i| v[i]).sum::<f64>() / idx.len() as f64
            };
            let rate = mean(&c.per_task);
            let base_rate = base.map(|b| mean(&results.conditions[b].per_task));
            out.push(BucketRow {
                condition: c.label.clone(),
                baseline: base.map(|b| results.conditions[b].label.clone()),
                kind: kind.to_string(),
                bucket: b.to_string(),
                n_tasks: idx.len(),
                pass_rate: rate,
                baseline_rate: base_rate,
                delta_pp: base_rate.map(|r| (rate - r) * 100.0),
            });
        }
    }
    out
}

/// Measures skills read by [`skill_content::read_skills_dir`] (name, SKILL.md, files), each
/// against its curated version from `curated_text`, and adds every distinct (name, SKILL.md) to
/// `all` once.
fn measure_unique(
    list: &[(String, String, usize)],
    curated_text: &dyn Fn(&str) -> Option<String>,
    seen: &mut BTreeSet<(String, String)>,
    all: &mut Vec<SkillContent>,
) -> Vec<SkillContent> {
    list.iter()
        .map(|(n, md, files)| {
            let m = skill_content::measure(n, md, *files, curated_text(n).as_deref());
            if seen.insert((n.clone(), md.clone())) {
                all.push(m.clone());
            }
            m
        })
        .collect()
}

/// Mean body tokens of some skills (0 for none).
fn mean_tokens(skills: &[SkillContent]) -> f64 {
    if skills.is_empty() {
        0.0
    } else {
        skills.iter().map(|s| s.body_tokens as f64).sum::<f64>() / skills.len() as f64
    }
}
