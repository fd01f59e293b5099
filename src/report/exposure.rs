//! The report's skill exposure section ([`crate::analysis::exposure`]) as blocks of text and
//! tables that [`super::markdown`] and [`super::csv`] lay out: the flag for the top of the report,
//! the per-condition table, the notes beside each comparison's Δ, and, for learned skills, per
//! task whether its trials saw a skill learned from the task itself.

use crate::analysis::exposure::{ConditionExposure, Exposure, SPLIT_SCOPES};

use super::md_cell;
use super::table::Table;

/// A piece of the section.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A paragraph (Markdown, already escaped).
    Text(String),
    /// A table (cells already escaped).
    Table(Table),
}

/// `n of m (p %)`, `—` when `m` is 0.
fn share(n: usize, m: usize) -> String {
    if m == 0 {
        "—".into()
    } else {
        format!("{n} of {m} ({:.0}%)", n as f64 * 100.0 / m as f64)
    }
}

/// The flag for the top of the report: runs whose trials of a condition without skills saw
/// skills (one line each); empty when none did.
pub fn flags(x: &Exposure) -> Vec<String> {
    x.flags.iter().map(|f| md_cell(f)).collect()
}

/// A comparison's Δ cell with its notes beside it (`+40.0 (only 1 of 5 treated trials used a
/// skill)`).
pub fn delta_with_notes(delta: String, notes: &[String]) -> String {
    if notes.is_empty() {
        delta
    } else {
        format!("{delta} ({})", md_cell(&notes.join("; ")))
    }
}

/// The cells of one condition's row.
fn cells(c: &ConditionExposure) -> Vec<String> {
    vec![
        md_cell(&c.label),
        c.recorded.to_string(),
        share(c.with_skills, c.recorded),
        c.stray.to_string(),
        if c.harness == 0 {
            "— (no harness)".into()
        } else {
            format!(
                "offered in {} of {}, switched off in {}",
                c.with_builtins, c.harness, c.builtins_off
            )
        },
        match c.used_share {
            Some(_) => share(c.used, c.use_known),
            None => "— (no trial's use is known)".into(),
        },
        c.use_unknown.to_string(),
        if c.never_used.is_empty() {
            "—".into()
        } else {
            md_cell(&c.never_used.join(", "))
        },
        c.generated_none
            .map_or_else(|| "—".into(), |n| share(n, c.recorded)),
        if c.with_learned == 0 {
            "—".into()
        } else {
            share(c.same_task, c.with_learned)
        },
    ]
}

/// The section's blocks (none when no trial recorded its exposure).
pub fn section(x: &Exposure) -> Vec<Block> {
    if x.conditions.iter().all(|c| c.recorded == 0) {
        return Vec::new();
    }
    let mut out = vec![
        Block::Text("## Skill exposure and use\n\nWhat each trial's agent could see of skills when it started (every `SKILL.md` in the skill folders a harness reads, read in the trial's container just before the agent; `agent/skill-exposure.json` in each trial folder) and which of them its trajectory shows it used. **With skills**: trials that could see a skill that is not the harness's own — must be 0 under no-skills. **Stray**: trials that saw a skill their condition should not show. **Used**: of the trials with skills of their own whose trajectory can say, those that read a `SKILL.md` or a file beside it, ran a command in the skill's folder or called a skill tool; trials whose use is unknown (no model trajectory: oracle, nop) are counted apart, never as unused. Definitions: docs/scoring.md, \"Skill exposure\".".into()),
        Block::Table(Table {
            head: [
                "Condition",
                "Trials recorded",
                "With skills",
                "Stray",
                "Harness built-ins",
                "Used ≥ 1 of its skills",
                "Use unknown",
                "Never used",
                "No valid skill (self-generated)",
                "Saw a skill learned from the same task",
            ]
            .map(String::from)
            .to_vec(),
            right: vec![
                false, true, true, true, false, true, true, false, true, true,
            ],
            rows: x.conditions.iter().map(cells).collect(),
        }),
    ];
    let not_recorded: usize = x.conditions.iter().map(|c| c.not_recorded).sum();
    if not_recorded > 0 {
        out.push(Block::Text(format!(
            "{not_recorded} finished trial(s) have no exposure record: their agent never started (a build or runtime error), they were imported, or they ran before skillscope recorded exposure."
        )));
    }
    if !x.provenance.is_empty() {
        out.push(Block::Text("### Learned skills and the tasks they were learned from\n\nPer task, the trials that saw a learned skill, and those that saw one learned from this very task's round-1 trials (the learning space recorded which trials created or changed each skill; a visible skill is matched to the learned version with the same content hash). A task scored with skills learned from itself measures recall more than transfer.".into()));
        out.push(Block::Table(Table {
            head: [
                "Condition",
                "Task",
                "Trials",
                "Saw a learned skill",
                "Learned from this task",
            ]
            .map(String::from)
            .to_vec(),
            right: vec![false, false, true, true, true],
            rows: x
                .provenance
                .iter()
                .map(|p| {
                    vec![
                        md_cell(&p.condition),
                        md_cell(&p.task),
                        p.trials.to_string(),
                        p.with_learned.to_string(),
                        p.same_task.to_string(),
                    ]
                })
                .collect(),
        }));
    }
    out
}

/// The sentence under the hypotheses table when they were also answered over each side of the
/// learned-skill split.
pub fn split_note(x: &Exposure) -> Option<String> {
    let s = x.split.as_ref()?;
    if s.same_as_split {
        return Some(format!(
            "The learned skills' provenance agrees with the split: the {} task(s) some trial of which saw a skill learned from the task itself are the train tasks, and no test task saw one — the same-task and held-out rows are also the split by provenance.",
            s.same_task.len()
        ));
    }
    Some(format!(
        "Rows *{}* are over the {} task(s) some trial of which saw a skill learned from the task itself ({}); rows *{}* over the other {} task(s).",
        SPLIT_SCOPES[0],
        s.same_task.len(),
        md_cell(&s.same_task.join(", ")),
        SPLIT_SCOPES[1],
        s.held_out.len()
    ))
}

/// `skill_exposure.csv`: one row per condition (plain values; empty cells mean none).
pub fn csv_rows(x: &Exposure) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let head = vec![
        "label",
        "run",
        "condition",
        "recorded",
        "not_recorded",
        "unreadable",
        "with_skills",
        "stray",
        "stray_skills",
        "harness",
        "with_builtins",
        "builtins_off",
        "use_known",
        "used",
        "used_share",
        "use_unknown",
        "never_used",
        "generated_none",
        "with_learned",
        "same_task",
    ];
    let rows = x
        .conditions
        .iter()
        .map(|c| {
            vec![
                c.label.clone(),
                c.run.clone(),
                c.condition.clone(),
                c.recorded.to_string(),
                c.not_recorded.to_string(),
                c.unreadable.to_string(),
                c.with_skills.to_string(),
                c.stray.to_string(),
                c.stray_skills.join("; "),
                c.harness.to_string(),
                c.with_builtins.to_string(),
                c.builtins_off.to_string(),
                c.use_known.to_string(),
                c.used.to_string(),
                c.used_share.map(|v| v.to_string()).unwrap_or_default(),
                c.use_unknown.to_string(),
                c.never_used.join("; "),
                c.generated_none.map(|v| v.to_string()).unwrap_or_default(),
                c.with_learned.to_string(),
                c.same_task.to_string(),
            ]
        })
        .collect();
    (head, rows)
}
