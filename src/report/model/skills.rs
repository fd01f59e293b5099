//! The skill sections: what the skill sets the conditions used hold and the pass rate per skill
//! bucket, the skills round 2 gave each task, what self-generating agents wrote, and the skill
//! rubric's scores (`skill-scoring-rubric.md`).

use super::{Block, Cell, Column, Row, Table, Value, View, Views};
use crate::analysis::results::Results;
use crate::analysis::rubric::{Direction, Gate, Trend};
use crate::analysis::skill_content;
use crate::report::charts::ChartKind;
use crate::report::{Report, md_cell};

/// A number with one decimal (a rubric score).
fn one(v: f64) -> Cell {
    Cell::new(Value::Decimal {
        value: v,
        places: 1,
    })
}

/// A count or `—`.
fn opt_count(v: Option<usize>) -> Cell {
    v.map_or_else(|| Cell::undefined(None), Cell::count)
}

/// The section "Skill content": each skill set a condition used, then the pass rate per bucket.
pub fn skill_content(report: &Report) -> Vec<Block> {
    let sc = &report.skill_content;
    let mut out = vec![Block::heading(2, "Skill content")];
    let mut machine = Table::new(
        "skill_content",
        "skill",
        vec![
            Column::text("skill_set", "Skill set"),
            Column::text("conditions", "Conditions"),
            Column::text("skill", "Skill"),
            Column::number("body_tokens", "Tokens"),
            Column::text("size", "Size"),
            Column::number("files", "Files"),
            Column::number("sops", "SOP"),
            Column::number("warnings", "Warning"),
            Column::number("lines_added", "Lines +"),
            Column::number("lines_removed", "Lines −"),
        ],
    )
    .views(Views::of(&[View::Csv]));
    for set in &sc.sets {
        for k in &set.skills {
            machine.push(Row::new(vec![
                Cell::text(&set.name),
                Cell::text(set.conditions.join(" ")),
                Cell::text(&k.name),
                Cell::count(k.body_tokens),
                Cell::text(k.size),
                Cell::count(k.files),
                Cell::count(k.sops),
                Cell::count(k.warnings),
                opt_count(k.lines_added),
                opt_count(k.lines_removed),
            ]));
        }
    }
    let buckets = buckets_table(report);
    if sc.sets.is_empty() {
        out.push(Block::text("No condition used skills."));
        out.push(Block::table(machine));
        out.push(Block::table(buckets.views(Views::of(&[View::Csv]))));
        return out;
    }
    out.push(Block::text(format!(
        "Each skill set a condition used. SKILL.md body length in tokens ({}, after the frontmatter); files beside SKILL.md; the SOP and Warning entries Acontext's learner writes; for a learned version of a curated skill, lines added and removed against the curated SKILL.md. Size buckets as the paper's: compact (≈ 845 tokens) below {}, detailed (≈ 1,165) below {}, comprehensive from {}.",
        md_cell(&sc.tokenizer),
        skill_content::DETAILED_FROM,
        skill_content::COMPREHENSIVE_FROM,
        skill_content::COMPREHENSIVE_FROM
    )));
    for (i, set) in sc.sets.iter().enumerate() {
        out.push(Block::heading(
            3,
            format!(
                "{} ({}; {} skills)",
                md_cell(&set.name),
                md_cell(&set.conditions.join(", ")),
                set.skills.len() + set.seen_only.len()
            ),
        ));
        if !set.seen_only.is_empty() {
            out.push(Block::text(format!(
                "{} known only from the trajectories that used them — their task folders are not on this machine (an imported run's usually are not), so their size is unknown: {}.",
                crate::format::count(set.seen_only.len(), "skill", "skills"),
                md_cell(&set.seen_only.join(", "))
            )));
        }
        if set.skills.is_empty() {
            continue;
        }
        let mut t = Table::new(
            &format!("skill_set_{}", i + 1),
            "skill",
            vec![
                Column::text("skill", "Skill"),
                Column::number("body_tokens", "Tokens"),
                Column::text("size", "Size"),
                Column::number("files", "Files"),
                Column::number("sops", "SOP"),
                Column::number("warnings", "Warning"),
                Column::number("lines_added", "Lines +"),
                Column::number("lines_removed", "Lines −"),
            ],
        )
        .views(Views::DOCUMENT);
        for k in &set.skills {
            t.push(Row::new(vec![
                Cell::text(&k.name),
                Cell::count(k.body_tokens),
                Cell::text(k.size),
                Cell::count(k.files),
                Cell::count(k.sops),
                Cell::count(k.warnings),
                opt_count(k.lines_added),
                opt_count(k.lines_removed),
            ]));
        }
        out.push(Block::table(t));
    }
    if !sc.buckets.is_empty() {
        out.push(Block::heading(3, "Pass rate per bucket"));
        out.push(Block::text(
            "Method D over the tasks of each bucket (a task's skills: how many it had; the mean size of their bodies), beside the baseline condition over the same tasks (those both ran) — the paper found 2–3 skills best and detailed skills better than comprehensive ones. *unknown*: the task's skills folder is not on this machine and no trajectory shows what it used (count), or its skills are known only by name (size).",
        ));
        out.push(Block::table(buckets));
    } else {
        out.push(Block::table(buckets.views(Views::of(&[View::Csv]))));
    }
    out.push(Block::table(machine));
    out
}

/// Pass rates per skill-content bucket against the baseline condition (`skill_buckets.csv`).
fn buckets_table(report: &Report) -> Table {
    let mut t = Table::new(
        "skill_buckets",
        "bucket",
        vec![
            Column::text("condition", "Condition"),
            Column::text("kind", "Bucket of"),
            Column::text("bucket", "Bucket"),
            Column::number("n_tasks", "Tasks"),
            Column::number("pass_rate", "Pass rate"),
            Column::text("baseline", "Baseline"),
            Column::number("baseline_rate", "Baseline rate"),
            Column::number("delta_pp", "Δ (pp)"),
        ],
    )
    .views(Views::REPORT);
    for b in &report.skill_content.buckets {
        t.push(Row::new(vec![
            Cell::text(&b.condition),
            Cell::text(&b.kind),
            Cell::text(&b.bucket),
            Cell::count(b.n_tasks),
            Cell::new(Value::Rate(b.pass_rate)),
            b.baseline
                .as_deref()
                .map_or_else(|| Cell::undefined(None), Cell::text),
            Cell::rate(b.baseline_rate, None),
            Cell::delta(b.delta_pp, None),
        ]));
    }
    t
}

/// The section "Round-2 skills per task" (experiments).
pub fn round2_skills(r: &Results) -> Vec<Block> {
    let mut t = Table::new(
        "round2_skills",
        "task",
        vec![
            Column::text("condition", "Condition"),
            Column::text("space", "Space"),
            Column::text("task", "Task"),
            Column::text("mode", "Mode").views(Views::of(&[View::Csv])),
            Column::number("n_skills", "Skills"),
            Column::text("skills", "Which"),
        ],
    )
    .views(Views::REPORT);
    for x in &r.round2_skills {
        t.push(Row::new(vec![
            Cell::text(&x.condition),
            Cell::text(&x.space),
            Cell::text(&x.task),
            Cell::text(&x.mode),
            Cell::count(x.n_skills as usize),
            Cell::new(Value::List(x.skills.clone())),
        ]));
    }
    let Some(first) = r.round2_skills.first() else {
        return vec![Block::table(t.views(Views::NONE))];
    };
    let mode = &first.mode;
    vec![
        Block::heading(2, "Round-2 skills per task"),
        Block::text(format!(
            "Selection `round2_skills = \"{}\"`: {}. The paper found 2–3 skills per task best and 4+ much worse.",
            md_cell(mode),
            match mode.as_str() {
                "domain" =>
                    "each task got the skills whose provenance includes trials of its domain",
                "task" =>
                    "each task got only the skills learned from (or curated for) the task itself",
                _ => "every task got the whole export",
            }
        )),
        Block::table(t),
    ]
}

/// The section "Self-generated skills": what the agents of self-generated trials wrote.
pub fn generated_skills(report: &Report) -> Vec<Block> {
    let g = &report.skill_content.generated;
    let mut t = Table::new(
        "generated_skills",
        "condition",
        vec![
            Column::text("condition", "Condition"),
            Column::number("trials", "Trials"),
            Column::number("kept", "Skills kept"),
            Column::number("refused", "Refused"),
            Column::number("per_trial", "Per trial (kept)").csv(&[]),
            Column::text("reasons", "Refusals"),
        ],
    )
    .views(Views::REPORT);
    for x in g {
        t.push(Row::new(vec![
            Cell::text(&x.condition),
            Cell::count(x.trials),
            Cell::count(x.kept),
            Cell::count(x.refused),
            Cell::new(Value::Decimal {
                value: x.kept as f64 / x.trials.max(1) as f64,
                places: 1,
            }),
            Cell::new(Value::List(x.reasons.clone())),
        ]));
    }
    if g.is_empty() {
        return vec![Block::table(t.views(Views::NONE))];
    }
    vec![
        Block::heading(2, "Self-generated skills"),
        Block::text(
            "What the agents of self-generated trials wrote, validated like exports (frontmatter, paths, entry types, sizes): a malformed skill is reported and never kept.",
        ),
        Block::table(t),
    ]
}

/// A rubric trend: `improving (+12.0%)`, `insufficient data (< 10)`.
pub fn trend(t: &Trend) -> String {
    match t {
        Trend::InsufficientData => "insufficient data (< 10)".into(),
        Trend::Analyzed(a) => {
            let d = match a.trend {
                Direction::Improving => "improving",
                Direction::Declining => "declining",
                Direction::Stable => "stable",
            };
            format!("{d} ({:+.1}%)", a.change_percent)
        }
    }
}

/// The rubric's scores per skill (`skills.csv` and the documents' table).
fn scores_table(report: &Report) -> Table {
    let text_csv = |k: &str, title: &str| Column::text(k, title).views(Views::of(&[View::Csv]));
    let mut t = Table::new(
        "skills",
        "skill",
        vec![
            Column::text("skill", "Skill"),
            Column::number("invocations", "Invocations"),
            Column::number("avg_score", "Score"),
            Column::text("tier", "Tier"),
            Column::number("completion", "Completion /25"),
            Column::number("efficiency", "Efficiency /20"),
            Column::number("quality", "Quality /30"),
            Column::number("satisfaction", "Satisfaction /25"),
            Column::number("error_rate", "Error rate"),
            Column::text("trend_text", "Trend").csv(&[]),
            text_csv("trend", "Trend"),
            text_csv("change_percent", "Change (%)"),
            Column::text("weak_component", "Weak component"),
            Column::text("recommendation", "Recommendation"),
            Column::text("publish", "Publish").csv(&[]),
            Column::text("feature", "Feature").csv(&[]),
            Column::text("deprecation", "Deprecation review").csv(&[]),
            text_csv("publish_gate", "Publish gate"),
            text_csv("feature_gate", "Feature gate"),
            text_csv("deprecation_review", "Deprecation review"),
        ],
    )
    .views(Views::REPORT);
    for k in &report.skills.scores {
        let gate = |g: Gate| {
            k.gates.iter().find(|r| r.gate == g).map_or_else(
                || Cell::undefined(None),
                |r| {
                    Cell::text(if r.passed {
                        "pass".to_string()
                    } else {
                        format!("fail: {}", r.failures.join("; "))
                    })
                },
            )
        };
        let gate_passed = |g: Gate| {
            k.gates.iter().find(|r| r.gate == g).map_or_else(
                || Cell::undefined(None),
                |r| Cell::text(r.passed.to_string()),
            )
        };
        let (trend_key, change) = match &k.trend {
            Trend::InsufficientData => (Cell::text("insufficient_data"), Cell::undefined(None)),
            Trend::Analyzed(a) => (
                Cell::text(
                    serde_json::to_value(a.trend)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default(),
                ),
                Cell::new(Value::Number(a.change_percent)),
            ),
        };
        t.push(Row::new(vec![
            Cell::text(&k.skill_name),
            Cell::count(k.invocations as usize),
            one(k.avg_score),
            Cell::text(k.tier.label()),
            one(k.components.completion),
            one(k.components.efficiency),
            one(k.components.quality),
            one(k.components.satisfaction),
            Cell::new(Value::Rate(k.error_rate)),
            Cell::text(trend(&k.trend)),
            trend_key,
            change,
            Cell::text(k.weak_component.as_str()),
            Cell::text(&k.recommendation),
            gate(Gate::Publish),
            gate(Gate::Feature),
            Cell::text(if k.deprecation_review.triggered {
                format!("due: {}", k.deprecation_review.reasons.join("; "))
            } else {
                "no".into()
            }),
            gate_passed(Gate::Publish),
            gate_passed(Gate::Feature),
            Cell::text(k.deprecation_review.triggered.to_string()),
        ]));
    }
    t
}

/// The section "Skill quality (rubric)": scores, gates, the leaderboard, the tier distribution
/// and the improvement opportunities.
pub fn rubric(report: &Report) -> Vec<Block> {
    let s = &report.skills;
    let scores = scores_table(report);
    let mut out = vec![Block::heading(2, "Skill quality (rubric)")];
    if s.scores.is_empty() {
        out.push(Block::text(
            "No skill invocations: no trial of a condition with skills used a skill (read its SKILL.md, opened or ran one of its files). Published aggregates and the per-trial CSV do not say which skill a trial used.",
        ));
        out.push(Block::table(scores.views(Views::of(&[View::Csv]))));
        return out;
    }
    out.push(Block::text(format!(
        "{} invocations (a trial of a condition with skills that used the skill) scored with the skill scoring rubric: completion (25) + efficiency (20) + output quality (30) + user satisfaction (25). Window: the {} days before {}. The benchmark has no user, so user satisfaction takes the rubric's defaults for every invocation (0 + 4 + 7 = 11 of 25) and a score tops out at 86 — Good, never Excellent.",
        s.invocations,
        s.window.days,
        md_cell(s.window.reference.as_deref().unwrap_or("now"))
    )));
    out.push(Block::Chart {
        kind: ChartKind::Skills,
    });
    out.push(Block::table(scores));
    out.push(Block::text(format!(
        "Gates as the rubric's `check_quality_gate` applies them ({}). Deprecation review: score ≤ {} with at least {} invocations; the rubric's third criterion, {} days without improvement, needs a history skillscope does not keep and is left out.",
        [Gate::Publish, Gate::Feature]
            .into_iter()
            .map(|g| {
                let c = g.config();
                format!(
                    "{}: score ≥ {}, at least {} invocations, error rate ≤ {}",
                    g.as_str(),
                    c.min_score.unwrap_or(0.0),
                    c.min_invocations.unwrap_or(0),
                    crate::format::rate(c.max_error_rate.unwrap_or(1.0))
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
        Gate::Deprecation.config().max_score.unwrap_or(0.0),
        Gate::Deprecation.config().min_invocations.unwrap_or(0),
        Gate::Deprecation
            .config()
            .max_age_without_improvement
            .unwrap_or(0.0)
    )));
    out.push(Block::heading(3, "Leaderboard"));
    out.push(Block::text(
        "The rubric's leaderboard query: skills with at least 5 invocations.",
    ));
    if s.leaderboard.is_empty() {
        out.push(Block::text("No skill has 5 invocations yet."));
    } else {
        let mut t = Table::new(
            "rubric_leaderboard",
            "skill",
            vec![
                Column::text("skill", "Skill"),
                Column::number("uses", "Uses"),
                Column::number("avg_score", "Score"),
                Column::number("avg_completion", "Completion"),
                Column::number("avg_efficiency", "Efficiency"),
                Column::number("avg_quality", "Quality"),
                Column::number("avg_satisfaction", "Satisfaction"),
            ],
        )
        .views(Views::DOCUMENT);
        for l in &s.leaderboard {
            t.push(Row::new(vec![
                Cell::text(&l.skill_name),
                Cell::count(l.uses as usize),
                one(l.avg_score),
                one(l.avg_completion),
                one(l.avg_efficiency),
                one(l.avg_quality),
                one(l.avg_satisfaction),
            ]));
        }
        out.push(Block::table(t));
    }
    out.push(Block::heading(3, "Tier distribution"));
    let mut t = Table::new(
        "rubric_tiers",
        "skill",
        vec![
            Column::text("skill", "Skill"),
            Column::text("tier", "Tier"),
            Column::number("count", "Invocations"),
        ],
    )
    .views(Views::DOCUMENT);
    for d in &s.distribution {
        t.push(Row::new(vec![
            Cell::text(&d.skill_name),
            Cell::text(d.tier.label()),
            Cell::count(d.count as usize),
        ]));
    }
    out.push(Block::table(t));
    out.push(Block::heading(3, "Improvement opportunities"));
    out.push(Block::text(
        "Components whose average is below 70 % of their maximum, weakest first.",
    ));
    if s.opportunities.is_empty() {
        out.push(Block::text("None."));
    } else {
        let mut t = Table::new(
            "rubric_opportunities",
            "skill",
            vec![
                Column::text("skill", "Skill"),
                Column::text("weak_area", "Weak area"),
                Column::number("normalized_score", "Normalized score"),
            ],
        )
        .views(Views::DOCUMENT);
        for o in &s.opportunities {
            t.push(Row::new(vec![
                Cell::text(&o.skill_name),
                Cell::text(o.weak_area.as_str()),
                Cell::new(Value::Decimal {
                    value: o.normalized_score,
                    places: 2,
                }),
            ]));
        }
        out.push(Block::table(t));
    }
    out
}
