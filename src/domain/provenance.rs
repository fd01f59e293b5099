//! What a set of trials ran with — its provenance — and the one comparison of two of them, used
//! twice: `experiment --baseline-from RUN` checks a stored run against the experiment's round 1
//! before reusing it (every differing field refuses it unless `--allow-drift FIELD` accepts
//! it), and every comparison of the results says beside its Δ when its two sides ran different
//! harness versions, models, task digests or skill-exposure settings (version drift).
//!
//! Plain data, no I/O: the store reads a run's provenance (`store::baselines`), the experiment
//! builds its plan's, the analysis a condition's.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// A field of a provenance, as `--allow-drift` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Field {
    /// The task ids (the fixed denominator).
    Tasks,
    /// A task's digest (Harbor 0.26's `sha256:<hex>` of the task folder).
    TaskDigest,
    /// The harness (agent) name: `claude-code`, `codex`, `oracle`, …
    Harness,
    /// The harness's version.
    HarnessVersion,
    /// The model.
    Model,
    /// The sampling settings the harness was given (`agent_settings.sampling`).
    AgentSettings,
    /// Trials per task and condition.
    Trials,
    /// The conditions, in order (A, B and C of round 1).
    Conditions,
    /// Whether the harness's own skills were switched off (skill exposure).
    SkillExposure,
    /// Trials that can be learned from: each judged trial's trajectory is on disk.
    Trajectories,
}

impl Field {
    /// Every field, in the order mismatches are listed.
    pub const ALL: [Field; 10] = [
        Field::Tasks,
        Field::TaskDigest,
        Field::Harness,
        Field::HarnessVersion,
        Field::Model,
        Field::AgentSettings,
        Field::Trials,
        Field::Conditions,
        Field::SkillExposure,
        Field::Trajectories,
    ];

    /// The name `--allow-drift` takes and messages use (`task-digest`).
    pub fn key(self) -> &'static str {
        match self {
            Field::Tasks => "tasks",
            Field::TaskDigest => "task-digest",
            Field::Harness => "harness",
            Field::HarnessVersion => "harness-version",
            Field::Model => "model",
            Field::AgentSettings => "agent-settings",
            Field::Trials => "trials",
            Field::Conditions => "conditions",
            Field::SkillExposure => "skill-exposure",
            Field::Trajectories => "trajectories",
        }
    }

    /// The field named `s` ([`Field::key`]).
    ///
    /// # Errors
    /// An unknown name; the message lists the known ones.
    pub fn parse(s: &str) -> Result<Field, String> {
        Field::ALL
            .into_iter()
            .find(|f| f.key() == s.trim())
            .ok_or_else(|| {
                format!(
                    "unknown drift field {s:?} (one of: {})",
                    Field::ALL.map(Field::key).join(", ")
                )
            })
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

/// What a set of trials (a run, a condition, a planned round) ran with. Each field holds the
/// distinct values seen, sorted; an empty set is *not recorded* (an import that does not say),
/// and a field that is `None` is not compared (the side does not speak of it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// Task id → the distinct digests its trials ran (empty: not recorded). `None`: not compared.
    pub tasks: Option<BTreeMap<String, BTreeSet<String>>>,
    /// Harness names.
    pub harness: BTreeSet<String>,
    /// Harness versions.
    pub version: BTreeSet<String>,
    /// Models.
    pub model: BTreeSet<String>,
    /// Sampling settings, each a JSON object's text (`none` for an empty one).
    pub sampling: BTreeSet<String>,
    /// Trials per task and condition (distinct counts). `None`: not compared.
    pub trials: Option<BTreeSet<u32>>,
    /// Condition keys in order. `None`: not compared.
    pub conditions: Option<Vec<String>>,
    /// Skill-exposure settings (`built-ins off`, `built-ins on`). `None`: not compared.
    pub skill_exposure: Option<BTreeSet<String>>,
}

impl Provenance {
    /// Adds the agent settings one trial recorded (`trials.agent_settings`: `{harness,
    /// version, model, sampling, unpinned}`); a missing or non-string part adds nothing.
    pub fn add_agent_settings(&mut self, settings: &serde_json::Value) {
        let text = |k: &str| settings.get(k).and_then(|v| v.as_str()).map(str::to_string);
        self.harness.extend(text("harness"));
        self.version.extend(text("version"));
        self.model.extend(text("model"));
        if let Some(s) = settings.get("sampling").and_then(|s| s.as_object()) {
            self.sampling.insert(if s.is_empty() {
                "none".to_string()
            } else {
                serde_json::Value::Object(s.clone()).to_string()
            });
        }
    }
}

impl Provenance {
    /// What run `run` ran with, from its rows: its task set (`tasks`) with each task's digest
    /// when the run began (`run_tasks.digest`) and every digest its current attempts `trials`
    /// recorded, its agent and model with every attempt's agent settings, its conditions, and the
    /// trials `plan` planned per task of its conditions (a task a condition
    /// did not run is left out). Skill exposure is not compared.
    pub fn of_run(
        run: &super::RunRow,
        tasks: &[super::RunTaskRow],
        trials: &[super::TrialRow],
        plan: &super::TrialPlan,
    ) -> Provenance {
        let mut digests: BTreeMap<String, BTreeSet<String>> = tasks
            .iter()
            .map(|t| (t.task_id.clone(), t.digest.iter().cloned().collect()))
            .collect();
        let mut p = Provenance::default();
        p.harness.insert(run.agent.clone());
        p.model.extend(run.model.clone());
        for t in trials {
            if let (Some(d), Some(set)) = (&t.task_digest, digests.get_mut(&t.task_id)) {
                set.insert(d.clone());
            }
            if let Some(s) = &t.agent_settings {
                p.add_agent_settings(s);
            }
        }
        p.tasks = Some(digests);
        p.trials = Some(
            tasks
                .iter()
                .flat_map(|t| run.conditions.iter().map(|c| plan.of(&t.task_id, c)))
                .filter(|&n| n > 0)
                .collect(),
        );
        p.conditions = Some(run.conditions.clone());
        p
    }
}

/// The skill-exposure setting of a set of trials from what their exposure records counted:
/// `harness` trials of a harness agent, of which `off` had the harness's own skills switched
/// off and `offered` had them offered to the model. `None` when no trial was a harness's (the
/// oracle's, an import's): nothing to compare.
pub fn skill_exposure(harness: usize, off: usize, offered: usize) -> Option<BTreeSet<String>> {
    if harness == 0 {
        return None;
    }
    let mut set = BTreeSet::new();
    if off > 0 {
        set.insert("harness skills off".to_string());
    }
    if offered > 0 {
        set.insert("harness skills offered".to_string());
    }
    Some(set)
}

/// One field that differs between a baseline (or comparison's second side) and the other side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mismatch {
    /// The field.
    pub field: Field,
    /// The task it concerns, for [`Field::TaskDigest`].
    pub task: Option<String>,
    /// The first side's value, as text (`not recorded` when it has none).
    pub left: String,
    /// The second side's value, as text.
    pub right: String,
    /// True when one side did not record the field: a difference nobody can rule out, not a
    /// difference seen.
    pub unrecorded: bool,
}

impl Mismatch {
    /// `field: left ≠ right` (with the task for a digest).
    pub fn describe(&self, left: &str, right: &str) -> String {
        let what = match &self.task {
            Some(t) => format!("{} of {t}", self.field),
            None => self.field.to_string(),
        };
        if self.field == Field::Trajectories {
            // What the plan needs is a requirement, not a value.
            return format!("{what}: {left} {}; {}", self.left, self.right);
        }
        format!("{what}: {left} {} ≠ {right} {}", self.left, self.right)
    }
}

/// What a side records of nothing.
pub const NOT_RECORDED: &str = "not recorded";

fn set_text(s: &BTreeSet<String>) -> String {
    if s.is_empty() {
        NOT_RECORDED.to_string()
    } else {
        s.iter().cloned().collect::<Vec<_>>().join(" + ")
    }
}

fn short_list(ids: &[&String]) -> String {
    const SHOWN: usize = 5;
    let mut s = ids
        .iter()
        .take(SHOWN)
        .map(|i| i.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > SHOWN {
        s.push_str(&format!(" and {} more", ids.len() - SHOWN));
    }
    s
}

/// Every field in which `left` and `right` differ, in [`Field::ALL`]'s order (a task's digest
/// per task, in task order). A field either side leaves `None` is not compared; a set one side
/// leaves empty differs from a non-empty one as `unrecorded`; two empty sets agree.
pub fn compare(left: &Provenance, right: &Provenance) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let mut push = |field, task, l: String, r: String, unrecorded| {
        out.push(Mismatch {
            field,
            task,
            left: l,
            right: r,
            unrecorded,
        })
    };
    if let (Some(l), Some(r)) = (&left.tasks, &right.tasks) {
        let only_l: Vec<&String> = l.keys().filter(|k| !r.contains_key(*k)).collect();
        let only_r: Vec<&String> = r.keys().filter(|k| !l.contains_key(*k)).collect();
        if !only_l.is_empty() || !only_r.is_empty() {
            let side = |n: usize, only: &[&String]| {
                if only.is_empty() {
                    format!("{n} task(s)")
                } else {
                    format!("{n} task(s), {} only here", short_list(only))
                }
            };
            push(
                Field::Tasks,
                None,
                side(l.len(), &only_l),
                side(r.len(), &only_r),
                false,
            );
        }
        for (task, ld) in l {
            let Some(rd) = r.get(task) else { continue };
            if ld != rd {
                push(
                    Field::TaskDigest,
                    Some(task.clone()),
                    set_text(ld),
                    set_text(rd),
                    ld.is_empty() || rd.is_empty(),
                );
            }
        }
    }
    for (field, l, r) in [
        (Field::Harness, &left.harness, &right.harness),
        (Field::HarnessVersion, &left.version, &right.version),
        (Field::Model, &left.model, &right.model),
        (Field::AgentSettings, &left.sampling, &right.sampling),
    ] {
        if l != r {
            push(
                field,
                None,
                set_text(l),
                set_text(r),
                l.is_empty() || r.is_empty(),
            );
        }
    }
    if let (Some(l), Some(r)) = (&left.trials, &right.trials)
        && l != r
    {
        let t = |s: &BTreeSet<u32>| {
            s.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(" or ")
        };
        push(
            Field::Trials,
            None,
            t(l),
            t(r),
            l.is_empty() || r.is_empty(),
        );
    }
    if let (Some(l), Some(r)) = (&left.conditions, &right.conditions)
        && l != r
    {
        push(Field::Conditions, None, l.join(", "), r.join(", "), false);
    }
    if let (Some(l), Some(r)) = (&left.skill_exposure, &right.skill_exposure)
        && l != r
    {
        push(
            Field::SkillExposure,
            None,
            set_text(l),
            set_text(r),
            l.is_empty() || r.is_empty(),
        );
    }
    out
}

/// The short note a comparison carries beside its Δ for `drift` (the mismatches between its
/// two sides seen in the trials, unrecorded ones left out): `harness-version 2.0.1 ≠ 2.1.0;
/// model …`; task digests are counted, not listed. `None` when nothing differs.
pub fn drift_note(drift: &[Mismatch]) -> Option<String> {
    let seen: Vec<&Mismatch> = drift.iter().filter(|m| !m.unrecorded).collect();
    if seen.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    let digests = seen.iter().filter(|m| m.field == Field::TaskDigest).count();
    for m in seen.iter().filter(|m| m.field != Field::TaskDigest) {
        parts.push(format!("{} {} ≠ {}", m.field, m.left, m.right));
    }
    if digests > 0 {
        parts.push(format!("task-digest differs for {digests} task(s)"));
    }
    Some(parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(version: &str, model: &str, digests: &[(&str, &str)]) -> Provenance {
        let mut p = Provenance {
            tasks: Some(
                digests
                    .iter()
                    .map(|(t, d)| {
                        let set = if d.is_empty() {
                            BTreeSet::new()
                        } else {
                            BTreeSet::from([d.to_string()])
                        };
                        (t.to_string(), set)
                    })
                    .collect(),
            ),
            trials: Some(BTreeSet::from([2])),
            conditions: Some(vec!["no-skills".into(), "curated".into()]),
            ..Default::default()
        };
        p.add_agent_settings(&serde_json::json!({
            "harness": "claude-code", "version": version, "model": model,
            "sampling": {}, "unpinned": ["temperature"],
        }));
        p
    }

    #[test]
    fn equal_sides_have_no_mismatch_and_no_note() {
        let a = side("2.0.1", "m", &[("t1", "sha256:aa"), ("t2", "sha256:bb")]);
        assert_eq!(compare(&a, &a.clone()), vec![]);
        assert_eq!(drift_note(&[]), None);
    }

    #[test]
    fn every_differing_field_is_named_with_both_values() {
        let a = side("2.0.1", "m1", &[("t1", "sha256:aa"), ("t2", "sha256:bb")]);
        let mut b = side("2.1.0", "m2", &[("t1", "sha256:aa"), ("t2", "sha256:cc")]);
        b.trials = Some(BTreeSet::from([3]));
        let ms = compare(&a, &b);
        let fields: Vec<Field> = ms.iter().map(|m| m.field).collect();
        assert_eq!(
            fields,
            [
                Field::TaskDigest,
                Field::HarnessVersion,
                Field::Model,
                Field::Trials
            ]
        );
        assert_eq!(ms[0].task.as_deref(), Some("t2"));
        assert_eq!(
            ms[0].describe("baseline", "plan"),
            "task-digest of t2: baseline sha256:bb ≠ plan sha256:cc"
        );
        assert_eq!(
            ms[1].describe("baseline", "plan"),
            "harness-version: baseline 2.0.1 ≠ plan 2.1.0"
        );
        assert_eq!((ms[3].left.as_str(), ms[3].right.as_str()), ("2", "3"));
        assert_eq!(
            drift_note(&ms).unwrap(),
            "harness-version 2.0.1 ≠ 2.1.0; model m1 ≠ m2; trials 2 ≠ 3; task-digest differs for 1 task(s)"
        );
    }

    #[test]
    fn a_task_set_difference_names_the_tasks_only_on_each_side() {
        let a = side("1", "m", &[("t1", "sha256:aa"), ("t2", "sha256:bb")]);
        let b = side("1", "m", &[("t1", "sha256:aa"), ("t3", "sha256:cc")]);
        let ms = compare(&a, &b);
        assert_eq!(ms.len(), 1);
        assert_eq!(ms[0].field, Field::Tasks);
        assert_eq!(ms[0].left, "2 task(s), t2 only here");
        assert_eq!(ms[0].right, "2 task(s), t3 only here");
    }

    #[test]
    fn an_unrecorded_value_differs_but_stays_out_of_the_drift_note() {
        let a = side("1", "m", &[("t1", "")]);
        let mut b = side("1", "m", &[("t1", "sha256:aa")]);
        b.version.clear();
        let ms = compare(&a, &b);
        assert_eq!(ms.len(), 2);
        assert!(ms.iter().all(|m| m.unrecorded), "{ms:?}");
        assert_eq!(ms[0].left, NOT_RECORDED);
        assert_eq!(ms[1].right, NOT_RECORDED);
        assert_eq!(drift_note(&ms), None);
    }

    #[test]
    fn fields_left_out_on_one_side_are_not_compared() {
        let a = side("1", "m", &[("t1", "sha256:aa")]);
        let mut b = a.clone();
        b.tasks = None;
        b.trials = None;
        b.conditions = Some(vec!["no-skills".into()]);
        let ms = compare(&a, &b);
        assert_eq!(ms.len(), 1);
        assert_eq!(ms[0].field, Field::Conditions);
    }

    #[test]
    fn field_names_round_trip_and_an_unknown_one_lists_the_known() {
        for f in Field::ALL {
            assert_eq!(Field::parse(f.key()), Ok(f));
        }
        let e = Field::parse("colour").unwrap_err();
        assert!(
            e.contains("task-digest") && e.contains("harness-version"),
            "{e}"
        );
    }

    #[test]
    fn harness_skills_switched_off_on_one_side_only_is_drift() {
        let mut a = side("1", "m", &[]);
        let mut b = a.clone();
        a.skill_exposure = skill_exposure(3, 3, 0);
        b.skill_exposure = skill_exposure(3, 0, 3);
        let ms = compare(&a, &b);
        assert_eq!(ms.len(), 1);
        assert_eq!(ms[0].field, Field::SkillExposure);
        assert_eq!(
            drift_note(&ms).unwrap(),
            "skill-exposure harness skills off ≠ harness skills offered"
        );
        // Mixed on one side; no harness on the other: not compared.
        b.skill_exposure = skill_exposure(4, 1, 3);
        assert_eq!(
            compare(&a, &b)[0].right,
            "harness skills off + harness skills offered"
        );
        b.skill_exposure = skill_exposure(0, 0, 0);
        assert_eq!(compare(&a, &b), vec![]);
    }

    #[test]
    fn mixed_versions_on_one_side_are_listed_together() {
        let a = side("1", "m", &[]);
        let mut b = side("1", "m", &[]);
        b.add_agent_settings(
            &serde_json::json!({"harness": "claude-code", "version": "2", "model": "m"}),
        );
        let ms = compare(&a, &b);
        assert_eq!(ms.len(), 1);
        assert_eq!(ms[0].right, "1 + 2");
    }
}
