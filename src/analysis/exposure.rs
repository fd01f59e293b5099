//! Whether each condition's trials had — and used — the skills the condition is about
//! (docs/scoring.md, "Skill exposure"). Per condition, over the latest attempts of the fixed task
//! set whose agent started (their exposure was recorded, [`crate::skillsbench::exposure`]):
//!
//! - **with skills**: trials whose agent could see any skill that is not the harness's own
//!   (task, learned, generated or other) — must be 0 for no-skills;
//! - **stray**: trials that saw a skill their condition should not show
//!   ([`SkillExposure::stray`](crate::skillsbench::exposure::SkillExposure::stray)); a no-skills
//!   or self-generated trial with one flags the run at the top of the report;
//! - **built-ins**: trials whose harness offered its own skills to the model — one found on disk
//!   and enabled, or built-ins it was not told to switch off (0 when every trial switched them
//!   off) — and trials whose harness's built-ins were switched off;
//! - **used**: among trials with skills of their own (visible task, learned or generated skills
//!   that are not stray, and what a self-generated agent wrote) whose trajectory can say, those
//!   that used at least one of them; the share is `used / known` (undefined without a known
//!   trial); trials whose use is unknown are counted apart, never as "none";
//! - **never used**: own skills visible in known trials that no trial used;
//! - **self-generated**: trials whose agent produced no valid skill;
//! - **same task** (learned skills): trials that saw a learned skill learned from their own
//!   task's round-1 trials (`skill_sources` of the version with the same content hash), of
//!   trials that saw a learned skill.
//!
//! Each comparison gets notes beside its Δ: under half of the treated trials used a skill; how
//! many self-generated trials produced no valid skill. For an experiment whose round-2 tasks fall
//! on both sides — some saw a skill learned from themselves, some did not — the hypotheses are
//! also answered over each side.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::Connection;
use serde::Serialize;

use crate::skillsbench::condition::{is_self_generated_key, key_has_skills};
use crate::skillsbench::exposure::{Origin, is_stray};
use crate::store::exposure::{self as sx, TrialSkills};
use crate::store::{StoreError, queries};

/// One condition's exposure and use of skills.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ConditionExposure {
    /// The condition's label in [`Results::conditions`].
    pub label: String,
    /// Run.
    pub run: String,
    /// Condition key.
    pub condition: String,
    /// Trials whose exposure was recorded (their agent started).
    pub recorded: usize,
    /// Finished trials without a record (never reached the agent, imported, recorded before
    /// exposure was).
    pub not_recorded: usize,
    /// Trials whose skill folders could not be read completely.
    pub unreadable: usize,
    /// Trials that could see a skill that is not the harness's own.
    pub with_skills: usize,
    /// Trials that could see a skill their condition should not show.
    pub stray: usize,
    /// The stray skills seen (`folder (origin)`), sorted.
    pub stray_skills: Vec<String>,
    /// Trials whose agent is a harness (it records what it brings of its own).
    pub harness: usize,
    /// Trials whose harness offered its own skills to the model.
    pub with_builtins: usize,
    /// Trials whose harness's own skills were switched off.
    pub builtins_off: usize,
    /// Trials with skills of their own whose use is known.
    pub use_known: usize,
    /// Of those, trials that used at least one of their skills.
    pub used: usize,
    /// `used / use_known`; `None` without a known trial.
    pub used_share: Option<f64>,
    /// Trials with skills of their own whose use is unknown (no trajectory of a model).
    pub use_unknown: usize,
    /// Own skills visible in known trials that no trial used, sorted.
    pub never_used: Vec<String>,
    /// Self-generated conditions: trials (agent started) whose agent produced no valid skill.
    pub generated_none: Option<usize>,
    /// Trials that saw a learned skill learned from their own task.
    pub same_task: usize,
    /// Trials that saw a learned skill.
    pub with_learned: usize,
    /// Every skill (not the harness's own) the condition's recorded trials could see, by folder
    /// name: which, how many trials saw it, and which used it.
    pub skills: Vec<SkillTally>,
}

/// One skill a condition's trials could see ([`ConditionExposure::skills`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SkillTally {
    /// Folder name (what an export or a task ships it as).
    pub skill: String,
    /// Where it came from: `task`, `learned`, `generated` or `other`; `stray` when the condition
    /// should not have shown it.
    pub origin: String,
    /// Recorded trials that could see it.
    pub seen: usize,
    /// Of those, trials whose trajectory says which skills were used.
    pub known: usize,
    /// The trials that used it (`task#trial`), in task and trial order.
    pub used_by: Vec<String>,
}

/// Per task and condition: whether its trials saw a learned skill learned from the task itself.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskProvenance {
    /// Condition label.
    pub condition: String,
    /// Task.
    pub task: String,
    /// Trials with an exposure record.
    pub trials: usize,
    /// Trials that saw a learned skill.
    pub with_learned: usize,
    /// Trials that saw a learned skill learned from this task's round-1 trials.
    pub same_task: usize,
}

/// Notes for one comparison, shown beside its Δ.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComparisonNote {
    /// The comparison's name ([`super::results::Comparison::name`]).
    pub name: String,
    /// What a reader must know about it.
    pub notes: Vec<String>,
    /// Set when under half of the treated trials whose use is known used a skill: (used, known).
    pub low_use: Option<(usize, usize)>,
    /// Self-generated sides: (label, trials without a valid skill, trials recorded).
    pub generated_none: Vec<(String, usize, usize)>,
}

/// Skill exposure and use over a selection (see the module doc).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Exposure {
    /// Per condition, in [`Results::conditions`] order.
    pub conditions: Vec<ConditionExposure>,
    /// Findings for the top of the report: conditions without skills whose trials saw some.
    pub flags: Vec<String>,
    /// Notes beside comparisons.
    pub comparisons: Vec<ComparisonNote>,
    /// Per task and condition, for conditions whose trials saw learned skills.
    pub provenance: Vec<TaskProvenance>,
    /// When the tasks fall on both sides: those whose trials saw a skill learned from the task
    /// itself, and the others (the hypotheses are answered over each).
    pub split: Option<LearnedSplit>,
}

/// The fixed task set split by where the learned skills its trials saw came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LearnedSplit {
    /// Tasks some trial of which saw a learned skill learned from the task's own trials.
    pub same_task: Vec<String>,
    /// The other tasks.
    pub held_out: Vec<String>,
    /// True when the experiment's held-out split has exactly these sides (its same-task and
    /// held-out results are then also this split's, and the hypotheses are not answered twice).
    pub same_as_split: bool,
}

/// Scope names of the hypotheses answered over each side of a [`LearnedSplit`].
pub const SPLIT_SCOPES: [&str; 2] = ["learned from the task", "not learned from the task"];

/// One scored condition, as [`compute`] reads it.
#[derive(Debug, Clone, Copy)]
pub struct Scored<'a> {
    /// Its label.
    pub label: &'a str,
    /// Its run.
    pub run: &'a str,
    /// Its condition key.
    pub condition: &'a str,
    /// Its finished trials over the task set.
    pub done: usize,
}

/// One comparison, as [`compute`] reads it: name, treated label, baseline label.
pub type Compared<'a> = (&'a str, &'a str, &'a str);

impl Exposure {
    /// The notes beside comparison `name` (empty when none).
    pub fn notes_of(&self, name: &str) -> &[String] {
        self.comparisons
            .iter()
            .find(|c| c.name == name)
            .map_or(&[], |c| c.notes.as_slice())
    }
}

/// The skills a trial counts as its own (see the module doc), by name and folder name.
fn own_skills(t: &TrialSkills) -> BTreeSet<&str> {
    let has = key_has_skills(&t.condition);
    let mut out = BTreeSet::new();
    for s in &t.skills {
        if s.origin != Origin::Harness && !is_stray(s.origin, has) {
            out.insert(s.name.as_str());
            out.insert(s.dir.as_str());
        }
    }
    for g in t.generated.iter().flatten() {
        out.insert(g.as_str());
    }
    out
}

/// The stray skills trial `t` saw (`folder (origin)`; see [`is_stray`]).
fn stray_of(t: &TrialSkills) -> Vec<String> {
    let has = key_has_skills(&t.condition);
    t.skills
        .iter()
        .filter(|s| is_stray(s.origin, has))
        .map(|s| format!("{} ({})", s.dir, s.origin.as_str()))
        .collect()
}

/// Adds what recorded trial `t` could see and used to `per_skill` (the harness's own skills
/// left out; a skill the trial wrote itself counted by its folder name).
fn tally_skills(per_skill: &mut BTreeMap<String, SkillTally>, t: &TrialSkills) {
    let has = key_has_skills(&t.condition);
    let mut seen: BTreeMap<&str, (String, bool)> = BTreeMap::new();
    for s in t.skills.iter().filter(|s| s.origin != Origin::Harness) {
        let origin = if is_stray(s.origin, has) {
            "stray".to_string()
        } else {
            s.origin.as_str().to_string()
        };
        let used = t.used.iter().any(|u| *u == s.dir || *u == s.name);
        seen.insert(s.dir.as_str(), (origin, used));
    }
    for g in t.generated.iter().flatten() {
        let used = t.used.iter().any(|u| u == g);
        seen.entry(g.as_str())
            .or_insert_with(|| ("generated".to_string(), used));
    }
    for (dir, (origin, used)) in seen {
        let e = per_skill
            .entry(dir.to_string())
            .or_insert_with(|| SkillTally {
                skill: dir.to_string(),
                origin: origin.clone(),
                ..Default::default()
            });
        e.seen += 1;
        if origin == "stray" {
            e.origin = origin;
        }
        if t.use_known {
            e.known += 1;
            if used {
                e.used_by.push(format!("{}#{}", t.task_id, t.trial_index));
            }
        }
    }
}

/// Tallies one condition's trials (those of tasks in the fixed set). `same_task(t)` tells
/// whether trial `t` saw a learned skill learned from its own task.
pub fn tally(
    label: &str,
    run: &str,
    condition: &str,
    trials: &[&TrialSkills],
    done: usize,
    same_task: impl Fn(&TrialSkills) -> bool,
) -> ConditionExposure {
    let mut c = ConditionExposure {
        label: label.to_string(),
        run: run.to_string(),
        condition: condition.to_string(),
        ..Default::default()
    };
    let mut visible_known: BTreeSet<String> = BTreeSet::new();
    let mut used_any: BTreeSet<String> = BTreeSet::new();
    let mut stray: BTreeSet<String> = BTreeSet::new();
    let mut generated_none = 0;
    let mut recorded_done = 0;
    let mut per_skill: BTreeMap<String, SkillTally> = BTreeMap::new();
    for t in trials {
        if t.recorded {
            c.recorded += 1;
            recorded_done += usize::from(t.done);
        }
        if t.recorded || t.generated.is_some() {
            generated_none += usize::from(t.generated.as_ref().is_none_or(|g| g.is_empty()));
        }
        if !t.recorded {
            continue;
        }
        c.unreadable += usize::from(t.error.is_some());
        c.with_skills += usize::from(t.skills.iter().any(|s| s.origin != Origin::Harness));
        let s = stray_of(t);
        if !s.is_empty() {
            c.stray += 1;
            stray.extend(s);
        }
        // Offered: one found on disk and enabled, or built-ins the harness keeps inside its
        // binary and was not told to switch off.
        c.with_builtins += usize::from(
            t.skills
                .iter()
                .any(|s| s.origin == Origin::Harness && s.enabled)
                || t.builtins
                    .as_ref()
                    .is_some_and(|b| !b.switched_off && !b.names.is_empty()),
        );
        c.harness += usize::from(t.builtins.is_some());
        c.builtins_off += usize::from(t.builtins.as_ref().is_some_and(|b| b.switched_off));
        if t.skills.iter().any(|s| s.origin == Origin::Learned) {
            c.with_learned += 1;
            c.same_task += usize::from(same_task(t));
        }
        tally_skills(&mut per_skill, t);
        let own = own_skills(t);
        if own.is_empty() {
            continue;
        }
        if !t.use_known {
            c.use_unknown += 1;
            continue;
        }
        c.use_known += 1;
        let used: Vec<&String> = t.used.iter().filter(|u| own.contains(u.as_str())).collect();
        c.used += usize::from(!used.is_empty());
        used_any.extend(used.into_iter().cloned());
        // Folder names stand for the skills (a name and its folder count once).
        for s in &t.skills {
            if own.contains(s.dir.as_str()) {
                visible_known.insert(s.dir.clone());
            }
        }
        for g in t.generated.iter().flatten() {
            visible_known.insert(g.clone());
        }
    }
    c.not_recorded = done.saturating_sub(recorded_done);
    c.used_share = (c.use_known > 0).then(|| c.used as f64 / c.use_known as f64);
    // A skill counts as used when any trial used it by its folder or frontmatter name.
    let names_used = |dir: &str| {
        used_any.contains(dir)
            || trials.iter().any(|t| {
                t.skills
                    .iter()
                    .any(|s| s.dir == dir && used_any.contains(&s.name))
            })
    };
    c.never_used = visible_known
        .into_iter()
        .filter(|d| !names_used(d))
        .collect();
    c.stray_skills = stray.into_iter().collect();
    c.skills = per_skill.into_values().collect();
    c.generated_none = is_self_generated_key(condition).then_some(generated_none);
    c
}

/// The exposure of `conditions` over the fixed task set `tasks`, with notes for `comparisons`
/// and, when `experiment`, the split of `tasks` by where their learned skills came from (set
/// only when both sides have tasks).
///
/// # Errors
/// SQL errors.
pub fn compute(
    conn: &Connection,
    tasks: &[String],
    conditions: &[Scored<'_>],
    comparisons: &[Compared<'_>],
    experiment: bool,
) -> Result<Exposure, StoreError> {
    let task_set: BTreeSet<&str> = tasks.iter().map(String::as_str).collect();
    // Every selected run's recorded trials, once.
    let mut rows: BTreeMap<&str, Vec<TrialSkills>> = BTreeMap::new();
    for c in conditions {
        if rows.contains_key(c.run) {
            continue;
        }
        let Some(run) = queries::find_run(conn, c.run)? else {
            continue;
        };
        let generated = run.conditions.iter().any(|k| is_self_generated_key(k));
        let mut t = sx::trial_skills(conn, run.id, generated)?;
        t.retain(|t| task_set.contains(t.task_id.as_str()));
        rows.insert(c.run, t);
    }
    let learned: BTreeSet<String> = rows
        .values()
        .flatten()
        .flat_map(|t| &t.skills)
        .filter(|s| s.origin == Origin::Learned)
        .map(|s| s.sha256.clone())
        .collect();
    let sources = sx::learned_from_tasks(conn, &learned)?;
    let same_task = |t: &TrialSkills| {
        t.skills.iter().any(|s| {
            s.origin == Origin::Learned
                && sources
                    .get(&s.sha256)
                    .is_some_and(|tasks| tasks.contains(&t.task_id))
        })
    };
    let mut x = Exposure::default();
    for c in conditions {
        let trials: Vec<&TrialSkills> = rows
            .get(c.run)
            .into_iter()
            .flatten()
            .filter(|t| t.condition == c.condition)
            .collect();
        let e = tally(c.label, c.run, c.condition, &trials, c.done, same_task);
        if e.stray > 0 && !key_has_skills(c.condition) {
            x.flags.push(format!(
                "run {}: {} of {} {} trials could see skills when their agent started, which the condition must not show: {}",
                c.run,
                e.stray,
                e.recorded,
                c.label,
                e.stray_skills.join(", ")
            ));
        }
        if e.with_learned > 0 {
            x.provenance.extend(provenance(c.label, &trials, same_task));
        }
        x.conditions.push(e);
    }
    for (name, with, without) in comparisons {
        let note = comparison_note(&x.conditions, name, with, without);
        if !note.notes.is_empty() {
            x.comparisons.push(note);
        }
    }
    if experiment {
        let same: BTreeSet<String> = x
            .provenance
            .iter()
            .filter(|p| p.same_task > 0)
            .map(|p| p.task.clone())
            .collect();
        let held_out: Vec<String> = tasks
            .iter()
            .filter(|t| !same.contains(*t))
            .cloned()
            .collect();
        if !same.is_empty() && !held_out.is_empty() {
            x.split = Some(LearnedSplit {
                same_task: same.into_iter().collect(),
                held_out,
                same_as_split: false,
            });
        }
    }
    Ok(x)
}

/// Per task: trials, trials that saw a learned skill, and those that saw one learned from the
/// task itself.
fn provenance(
    label: &str,
    trials: &[&TrialSkills],
    same_task: impl Fn(&TrialSkills) -> bool,
) -> Vec<TaskProvenance> {
    let mut by_task: BTreeMap<&str, TaskProvenance> = BTreeMap::new();
    for t in trials {
        let p = by_task
            .entry(t.task_id.as_str())
            .or_insert_with(|| TaskProvenance {
                condition: label.to_string(),
                task: t.task_id.clone(),
                trials: 0,
                with_learned: 0,
                same_task: 0,
            });
        p.trials += usize::from(t.recorded);
        if t.skills.iter().any(|s| s.origin == Origin::Learned) {
            p.with_learned += 1;
            p.same_task += usize::from(same_task(t));
        }
    }
    by_task.into_values().collect()
}

/// The note beside comparison `name` of `with` against `without`: under half of the treated
/// trials used a skill; how many trials of a self-generated side produced no valid skill.
fn comparison_note(
    conditions: &[ConditionExposure],
    name: &str,
    with: &str,
    without: &str,
) -> ComparisonNote {
    let of = |label: &str| conditions.iter().find(|c| c.label == label);
    let low_use = of(with)
        .filter(|t| t.used_share.is_some_and(|s| s < 0.5))
        .map(|t| (t.used, t.use_known));
    let generated_none: Vec<(String, usize, usize)> = [with, without]
        .into_iter()
        .filter_map(|l| {
            // Nothing to say of a side none of whose trials recorded what it wrote.
            of(l)
                .filter(|c| c.recorded > 0)
                .and_then(|c| c.generated_none.map(|n| (l.to_string(), n, c.recorded)))
        })
        .collect();
    let mut notes = Vec::new();
    if let Some((used, known)) = low_use {
        notes.push(format!(
            "only {used} of {known} treated trials used a skill"
        ));
    }
    for (label, n, of) in &generated_none {
        notes.push(format!(
            "{n} of {of} {label} trials produced no valid skill"
        ));
    }
    ComparisonNote {
        name: name.to_string(),
        notes,
        low_use,
        generated_none,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skillsbench::exposure::Builtins;
    use crate::store::exposure::ExposedRow;

    fn skill(dir: &str, origin: Origin) -> ExposedRow {
        ExposedRow {
            dir: dir.into(),
            name: dir.into(),
            origin,
            sha256: format!("h-{dir}"),
            enabled: origin != Origin::Harness,
        }
    }

    fn trial(condition: &str, skills: Vec<ExposedRow>, used: &[&str], known: bool) -> TrialSkills {
        TrialSkills {
            run_id: 1,
            trial_id: 1,
            task_id: "t".into(),
            condition: condition.into(),
            trial_index: 0,
            done: true,
            recorded: true,
            error: None,
            use_known: known,
            builtins: Some(Builtins {
                ships: String::new(),
                names: vec![],
                switched_off: true,
                setting: "x".into(),
                folders: vec![],
            }),
            skills,
            used: used.iter().map(|s| s.to_string()).collect(),
            generated: None,
        }
    }

    #[test]
    fn a_condition_counts_seen_used_unknown_and_never_used_skills() {
        let a = trial(
            "curated",
            vec![skill("a", Origin::Task), skill("b", Origin::Task)],
            &["a"],
            true,
        );
        let b = trial("curated", vec![skill("a", Origin::Task)], &[], true);
        let c = trial("curated", vec![skill("a", Origin::Task)], &[], false);
        let d = trial(
            "curated",
            vec![skill("creator", Origin::Harness)],
            &["creator"],
            true,
        );
        let e = tally("B", "r", "curated", &[&a, &b, &c, &d], 5, |_| false);
        assert_eq!((e.recorded, e.not_recorded), (4, 1));
        assert_eq!(e.with_skills, 3);
        assert_eq!((e.use_known, e.used, e.use_unknown), (2, 1, 1));
        assert_eq!(e.used_share, Some(0.5));
        assert_eq!(e.never_used, vec!["b".to_string()]);
        assert_eq!((e.with_builtins, e.builtins_off), (0, 4));
        assert_eq!(e.stray, 0);
        assert_eq!(e.generated_none, None);
    }

    #[test]
    fn no_skills_with_a_skill_is_stray_and_self_generated_without_one_is_counted() {
        let leak = trial(
            "no-skills",
            vec![skill("planted", Origin::Other)],
            &[],
            false,
        );
        let e = tally("A", "r", "no-skills", &[&leak], 1, |_| false);
        assert_eq!((e.with_skills, e.stray), (1, 1));
        assert_eq!(e.stray_skills, vec!["planted (other)".to_string()]);
        assert_eq!(e.use_known + e.use_unknown, 0, "no skills of its own");
        let mut wrote = trial("self-generated", vec![], &["notes"], true);
        wrote.generated = Some(vec!["notes".into()]);
        let mut none = trial("self-generated", vec![], &[], true);
        none.generated = Some(vec![]);
        let silent = trial("self-generated", vec![], &[], true);
        let e = tally(
            "C",
            "r",
            "self-generated",
            &[&wrote, &none, &silent],
            3,
            |_| false,
        );
        assert_eq!(e.generated_none, Some(2));
        assert_eq!((e.use_known, e.used), (1, 1));
    }

    /// Over random trials (a seeded generator, 300 runs): every count fits its trials, the share
    /// is in [0, 1], used ≤ known, same-task ≤ with learned.
    #[test]
    fn counts_stay_within_their_trials_over_random_runs() {
        let origins = [
            Origin::Task,
            Origin::Learned,
            Origin::Harness,
            Origin::Other,
            Origin::Generated,
        ];
        let mut state = 0x5EED_u64;
        let mut next = |n: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % n
        };
        for _ in 0..300 {
            let condition = ["curated", "no-skills", "self-generated"][next(3) as usize];
            let n = next(30) as usize;
            // A no-skills trial is never given generated skills.
            let pool = if condition == "no-skills" { 4 } else { 5 };
            let trials: Vec<TrialSkills> = (0..n)
                .map(|_| {
                    let k = next(5);
                    let skills: Vec<ExposedRow> = (0..k)
                        .map(|i| {
                            skill(
                                &format!("s{}", next(6)),
                                origins[((next(5) + i) % pool) as usize],
                            )
                        })
                        .collect();
                    let used: Vec<&str> = if next(2) == 0 { vec!["s0"] } else { vec![] };
                    let mut t = trial(condition, skills, &used, next(2) == 0);
                    t.recorded = next(8) != 0;
                    if condition == "self-generated" && next(2) == 0 {
                        t.generated = Some((0..next(3)).map(|i| format!("g{i}")).collect());
                    }
                    t
                })
                .collect();
            let refs: Vec<&TrialSkills> = trials.iter().collect();
            let flip = next(2) == 0;
            let e = tally("X", "r", condition, &refs, n, |_| flip);
            assert!(e.recorded <= n && e.not_recorded == n - e.recorded, "{e:?}");
            assert!(e.with_skills <= e.recorded && e.with_builtins <= e.recorded);
            assert!(e.stray <= e.with_skills);
            assert!(e.used <= e.use_known);
            assert!(e.use_known + e.use_unknown <= e.recorded);
            assert!(e.same_task <= e.with_learned && e.with_learned <= e.with_skills);
            if let Some(s) = e.used_share {
                assert!((0.0..=1.0).contains(&s));
            }
            if condition == "no-skills" {
                assert_eq!(
                    e.stray, e.with_skills,
                    "every skill a no-skills trial sees is stray: {e:?}"
                );
            }
        }
    }
}
