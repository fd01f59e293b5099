//! The skill exposure section ([`crate::analysis::exposure`]): per condition which skills its
//! trials could see and used, the notes beside each comparison's Δ, and, for learned skills, per
//! task whether its trials saw a skill learned from the task itself.

use super::{Block, Cell, Column, Row, Table, Tone, Value, View, Views};
use crate::analysis::exposure::{ConditionExposure, Exposure, SPLIT_SCOPES};
use crate::report::md_cell;

/// `n of m (p%)` as a cell.
fn share(n: usize, m: usize) -> Cell {
    Cell::new(Value::Share {
        n: n as u64,
        total: m as u64,
    })
}

/// The per-condition table the documents and the dashboard show.
pub fn table(x: &Exposure) -> Table {
    let mut t = Table::new(
        "skill_exposure_wide",
        "skills seen/used",
        vec![
            Column::text("label", "Condition").short("skills seen/used"),
            Column::number("recorded", "Trials recorded")
                .short("recorded")
                .priority(3),
            Column::number("with_skills", "With skills").short("saw skills"),
            Column::number("stray", "Stray").short("stray"),
            Column::text("builtins", "Harness built-ins")
                .short("built-ins")
                .priority(2),
            Column::number("used", "Used ≥ 1 of its skills").short("used ≥1"),
            Column::number("use_unknown", "Use unknown")
                .short("unknown")
                .priority(1),
            Column::text("never_used", "Never used")
                .short("never used")
                .priority(3),
            Column::number("generated_none", "No valid skill (self-generated)")
                .short("no valid skill")
                .priority(3)
                .views(Views::DOCUMENT),
            Column::number("same_task", "Saw a skill learned from the same task")
                .short("same-task skill")
                .priority(3)
                .views(Views::DOCUMENT),
        ],
    )
    .views(Views::ALL.without(View::Csv).without(View::Terminal));
    for c in &x.conditions {
        t.push(Row::new(cells(c)));
    }
    t
}

/// What the exposure tables' terms mean, in one sentence each (under the tables on screen).
pub const LEGEND: &str = "saw skills: trials that could see a skill not the harness's own · stray: a skill the condition should not show (a no-skills trial seeing a task's skill) · built-ins: skills the harness ships itself, offered unless switched off · used ≥1: of the trials whose trajectory can say, those that used one of their skills";

/// Every skill each condition's trials could see, a row each: where it came from, how many
/// recorded trials saw it, and which of those whose use is known used it (`task#trial`).
pub fn skills_table(x: &Exposure) -> Table {
    let mut t = Table::new(
        "skills_seen",
        "skill",
        vec![
            Column::text("condition", "Condition").short("cond"),
            Column::text("skill", "Skill"),
            Column::text("origin", "Origin").priority(2),
            Column::number("seen", "Trials that saw it").short("saw"),
            Column::number("used", "Used by (of trials whose use is known)").short("used by"),
            Column::text("used_by", "Trials that used it")
                .short("trials")
                .priority(3),
        ],
    );
    for c in &x.conditions {
        for k in &c.skills {
            let tone = if k.origin == "stray" {
                Tone::Warn
            } else {
                Tone::Plain
            };
            let mut used_by = k
                .used_by
                .iter()
                .take(8)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            if k.used_by.len() > 8 {
                used_by.push_str(&format!(" (+{} more)", k.used_by.len() - 8));
            }
            t.push(Row::new(vec![
                Cell::text(&c.label).tone(Tone::Accent),
                Cell::text(&k.skill),
                Cell::text(&k.origin).tone(tone),
                Cell::count(k.seen),
                if k.known > 0 {
                    share(k.used_by.len(), k.known)
                } else {
                    Cell::undefined(Some("use unknown (no model trajectory)"))
                },
                Cell::text(if used_by.is_empty() {
                    "—".into()
                } else {
                    used_by
                }),
            ]));
        }
    }
    t
}

/// The cells of one condition's row of [`table`].
fn cells(c: &ConditionExposure) -> Vec<Cell> {
    vec![
        Cell::text(&c.label).tone(Tone::Accent),
        Cell::count(c.recorded),
        share(c.with_skills, c.recorded),
        Cell::count(c.stray).tone(if c.stray > 0 { Tone::Loss } else { Tone::Dim }),
        if c.harness == 0 {
            Cell::undefined(Some("no harness"))
        } else {
            Cell::text(format!(
                "offered in {} of {}, switched off in {}",
                c.with_builtins, c.harness, c.builtins_off
            ))
            .tone(if c.with_builtins > 0 {
                Tone::Warn
            } else {
                Tone::Dim
            })
        },
        match c.used_share {
            Some(s) => {
                share(c.used, c.use_known).tone(if s < 0.5 { Tone::Warn } else { Tone::Plain })
            }
            None => Cell::undefined(Some("no trial's use is known")),
        },
        Cell::count(c.use_unknown).tone(if c.use_unknown > 0 {
            Tone::Plain
        } else {
            Tone::Dim
        }),
        if c.never_used.is_empty() {
            Cell::undefined(None)
        } else {
            Cell::new(Value::List(c.never_used.clone())).tone(Tone::Dim)
        },
        c.generated_none
            .map_or_else(|| Cell::undefined(None), |n| share(n, c.recorded)),
        if c.with_learned == 0 {
            Cell::undefined(None)
        } else {
            share(c.same_task, c.with_learned)
        },
    ]
}

/// The section's blocks: nothing but the CSV table when no trial recorded its exposure.
pub fn blocks(x: &Exposure) -> Vec<Block> {
    let machine = Block::table(machine_table(x));
    if x.conditions.iter().all(|c| c.recorded == 0) {
        return vec![machine];
    }
    let mut out = vec![
        Block::heading(2, "Skill exposure and use"),
        Block::text(
            "What each trial's agent could see of skills when it started (every `SKILL.md` in the skill folders a harness reads, read in the trial's container just before the agent; `agent/skill-exposure.json` in each trial folder) and which of them its trajectory shows it used. **With skills**: trials that could see a skill that is not the harness's own — must be 0 under no-skills. **Stray**: trials that saw a skill their condition should not show. **Used**: of the trials with skills of their own whose trajectory can say, those that read a `SKILL.md` or a file beside it, ran a command in the skill's folder or called a skill tool; trials whose use is unknown (no model trajectory: oracle, nop) are counted apart, never as unused. Definitions: docs/scoring.md, \"Skill exposure\".",
        ),
        Block::table(table(x)),
        Block::heading(3, "Which skills"),
        Block::text(
            "Every skill each condition's trials could see (not the harness's own), where it came from, how many recorded trials saw it, and which trials used it.",
        ),
        Block::table(skills_table(x)),
    ];
    let not_recorded: usize = x.conditions.iter().map(|c| c.not_recorded).sum();
    if not_recorded > 0 {
        out.push(Block::text(format!(
            "{} have no exposure record: their agent never started (a build or runtime error), they were imported, or they ran before skillscope recorded exposure.",
            crate::format::count(not_recorded, "finished trial", "finished trials")
        )));
    }
    if !x.provenance.is_empty() {
        out.push(Block::heading(
            3,
            "Learned skills and the tasks they were learned from",
        ));
        out.push(Block::text(
            "Per task, the trials that saw a learned skill, and those that saw one learned from this very task's round-1 trials (the learning space recorded which trials created or changed each skill; a visible skill is matched to the learned version with the same content hash). A task scored with skills learned from itself measures recall more than transfer.",
        ));
        let mut t = Table::new(
            "skill_provenance",
            "task",
            vec![
                Column::text("condition", "Condition"),
                Column::text("task", "Task"),
                Column::number("trials", "Trials"),
                Column::number("with_learned", "Saw a learned skill"),
                Column::number("same_task", "Learned from this task"),
            ],
        )
        .views(Views::DOCUMENT);
        for p in &x.provenance {
            t.push(Row::new(vec![
                Cell::text(&p.condition),
                Cell::text(&p.task),
                Cell::count(p.trials),
                Cell::count(p.with_learned),
                Cell::count(p.same_task),
            ]));
        }
        out.push(Block::table(t));
    }
    out.push(machine);
    out
}

/// The sentence under the hypotheses table when they were also answered over each side of the
/// learned-skill split (Markdown).
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

/// `skill_exposure.csv`: one row per condition, every count plain (written when some trial
/// recorded its exposure).
fn machine_table(x: &Exposure) -> Table {
    let keys = [
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
    let recorded = x.conditions.iter().any(|c| c.recorded > 0);
    let mut t = Table::new(
        "skill_exposure",
        "condition",
        keys.iter().map(|k| Column::text(k, *k)).collect(),
    )
    .views(if recorded {
        Views::of(&[View::Csv])
    } else {
        Views::NONE
    });
    for c in &x.conditions {
        let n = Cell::count;
        t.push(Row::new(vec![
            Cell::text(&c.label),
            Cell::text(&c.run),
            Cell::text(&c.condition),
            n(c.recorded),
            n(c.not_recorded),
            n(c.unreadable),
            n(c.with_skills),
            n(c.stray),
            Cell::new(Value::List(c.stray_skills.clone())),
            n(c.harness),
            n(c.with_builtins),
            n(c.builtins_off),
            n(c.use_known),
            n(c.used),
            Cell::new(c.used_share.map_or(Value::Undefined(None), Value::Number)),
            n(c.use_unknown),
            Cell::new(Value::List(c.never_used.clone())),
            Cell::new(
                c.generated_none
                    .map_or(Value::Undefined(None), |v| Value::Count(v as u64)),
            ),
            n(c.with_learned),
            n(c.same_task),
        ]));
    }
    t
}
