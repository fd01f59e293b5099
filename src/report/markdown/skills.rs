//! The skill sections of the Markdown report: skill content and pass rates per bucket, the
//! skills round 2 gave each task, what self-generating agents wrote, and the rubric's scores.

use std::fmt::Write as _;

use super::{ChartKind, ChartSpec, chart, header, pct, pp, row};
use crate::analysis::results::Results;
use crate::analysis::rubric::{Direction, Gate, Trend};
use crate::analysis::skill_content;
use crate::report::{Report, md_cell};

/// How many skills each task received in round 2 (`round2_skills`).
pub(super) fn round2_skills(out: &mut String, r: &Results) {
    if r.round2_skills.is_empty() {
        return;
    }
    let mode = &r.round2_skills[0].mode;
    let _ = writeln!(
        out,
        "## Round-2 skills per task\n\nSelection `round2_skills = \"{}\"`: {}. The paper found 2–3 skills per task best and 4+ much worse.\n",
        md_cell(mode),
        match mode.as_str() {
            "domain" => "each task got the skills whose provenance includes trials of its domain",
            "task" => "each task got only the skills learned from (or curated for) the task itself",
            _ => "every task got the whole export",
        }
    );
    header(
        out,
        &["Condition", "Space", "Task", "Skills", "Which"],
        &[false, false, false, true, false],
    );
    for x in &r.round2_skills {
        row(
            out,
            &[
                md_cell(&x.condition),
                md_cell(&x.space),
                md_cell(&x.task),
                x.n_skills.to_string(),
                md_cell(&x.skills.join(", ")),
            ],
        );
    }
    out.push('\n');
}

/// The skills agents wrote in self-generated trials: kept and refused.
pub(super) fn generated_skills(out: &mut String, report: &Report) {
    let g = &report.skill_content.generated;
    if g.is_empty() {
        return;
    }
    out.push_str("## Self-generated skills\n\nWhat the agents of self-generated trials wrote, validated like exports (frontmatter, paths, entry types, sizes): a malformed skill is reported and never kept.\n\n");
    header(
        out,
        &[
            "Condition",
            "Trials",
            "Skills kept",
            "Refused",
            "Per trial (kept)",
            "Refusals",
        ],
        &[false, true, true, true, true, false],
    );
    for x in g {
        row(
            out,
            &[
                md_cell(&x.condition),
                x.trials.to_string(),
                x.kept.to_string(),
                x.refused.to_string(),
                format!("{:.1}", x.kept as f64 / x.trials.max(1) as f64),
                md_cell(&x.reasons.join("; ")),
            ],
        );
    }
    out.push('\n');
}

pub(super) fn skill_content(out: &mut String, report: &Report) {
    let sc = &report.skill_content;
    out.push_str("## Skill content\n\n");
    if sc.sets.is_empty() {
        out.push_str("No condition used skills.\n\n");
        return;
    }
    let _ = writeln!(
        out,
        "Each skill set a condition used. SKILL.md body length in tokens ({}, after the frontmatter); files beside SKILL.md; the SOP and Warning entries Acontext's learner writes; for a learned version of a curated skill, lines added and removed against the curated SKILL.md. Size buckets as the paper's: compact (≈ 845 tokens) below {}, detailed (≈ 1,165) below {}, comprehensive from {}.\n",
        md_cell(&sc.tokenizer),
        skill_content::DETAILED_FROM,
        skill_content::COMPREHENSIVE_FROM,
        skill_content::COMPREHENSIVE_FROM
    );
    for set in &sc.sets {
        let _ = writeln!(
            out,
            "### {} ({}; {} skills)\n",
            md_cell(&set.name),
            md_cell(&set.conditions.join(", ")),
            set.skills.len() + set.seen_only.len()
        );
        if !set.seen_only.is_empty() {
            let _ = writeln!(
                out,
                "{} skill(s) known only from the trajectories that used them — their task folders are not on this machine (an imported run's usually are not), so their size is unknown: {}.\n",
                set.seen_only.len(),
                md_cell(&set.seen_only.join(", "))
            );
        }
        if set.skills.is_empty() {
            continue;
        }
        header(
            out,
            &[
                "Skill",
                "Tokens",
                "Size",
                "Files",
                "SOP",
                "Warning",
                "Lines +",
                "Lines −",
            ],
            &[false, true, false, true, true, true, true, true],
        );
        let opt = |v: Option<usize>| v.map_or_else(|| "—".into(), |n| n.to_string());
        for k in &set.skills {
            row(
                out,
                &[
                    md_cell(&k.name),
                    k.body_tokens.to_string(),
                    k.size.to_string(),
                    k.files.to_string(),
                    k.sops.to_string(),
                    k.warnings.to_string(),
                    opt(k.lines_added),
                    opt(k.lines_removed),
                ],
            );
        }
        out.push('\n');
    }
    if !sc.buckets.is_empty() {
        out.push_str("### Pass rate per bucket\n\nMethod D over the tasks of each bucket (a task's skills: how many it had; the mean size of their bodies), beside the baseline condition over the same tasks (those both ran) — the paper found 2–3 skills best and detailed skills better than comprehensive ones. *unknown*: the task's skills folder is not on this machine and no trajectory shows what it used (count), or its skills are known only by name (size).\n\n");
        header(
            out,
            &[
                "Condition",
                "Bucket of",
                "Bucket",
                "Tasks",
                "Pass rate",
                "Baseline",
                "Baseline rate",
                "Δ (pp)",
            ],
            &[false, false, false, true, true, false, true, true],
        );
        for b in &sc.buckets {
            row(
                out,
                &[
                    md_cell(&b.condition),
                    b.kind.clone(),
                    b.bucket.clone(),
                    b.n_tasks.to_string(),
                    pct(b.pass_rate),
                    b.baseline.as_deref().map_or_else(|| "—".into(), md_cell),
                    b.baseline_rate.map_or_else(|| "—".into(), pct),
                    b.delta_pp.map_or_else(|| "—".into(), pp),
                ],
            );
        }
        out.push('\n');
    }
}

pub(super) fn trend(t: &Trend) -> String {
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

pub(super) fn skills(out: &mut String, report: &Report, specs: &[ChartSpec]) {
    let s = &report.skills;
    out.push_str("## Skill quality (rubric)\n\n");
    if s.scores.is_empty() {
        out.push_str("No skill invocations: no trial of a condition with skills used a skill (read its SKILL.md, opened or ran one of its files). Published aggregates and the per-trial CSV do not say which skill a trial used.\n\n");
        return;
    }
    let _ = writeln!(
        out,
        "{} invocations (a trial of a condition with skills that used the skill) scored with the skill scoring rubric: completion (25) + efficiency (20) + output quality (30) + user satisfaction (25). Window: the {} days before {}. The benchmark has no user, so user satisfaction takes the rubric's defaults for every invocation (0 + 4 + 7 = 11 of 25) and a score tops out at 86 — Good, never Excellent.\n",
        s.invocations,
        s.window.days,
        md_cell(s.window.reference.as_deref().unwrap_or("now"))
    );
    chart(out, specs, &ChartKind::Skills);
    header(
        out,
        &[
            "Skill",
            "Invocations",
            "Score",
            "Tier",
            "Completion /25",
            "Efficiency /20",
            "Quality /30",
            "Satisfaction /25",
            "Error rate",
            "Trend",
            "Weak component",
            "Recommendation",
            "Publish",
            "Feature",
            "Deprecation review",
        ],
        &[
            false, true, true, false, true, true, true, true, true, false, false, false, false,
            false, false,
        ],
    );
    for k in &s.scores {
        let gate = |g: Gate| {
            k.gates.iter().find(|r| r.gate == g).map_or_else(
                || "—".into(),
                |r| {
                    if r.passed {
                        "pass".to_string()
                    } else {
                        format!("fail: {}", md_cell(&r.failures.join("; ")))
                    }
                },
            )
        };
        row(
            out,
            &[
                md_cell(&k.skill_name),
                k.invocations.to_string(),
                format!("{:.1}", k.avg_score),
                k.tier.label().to_string(),
                format!("{:.1}", k.components.completion),
                format!("{:.1}", k.components.efficiency),
                format!("{:.1}", k.components.quality),
                format!("{:.1}", k.components.satisfaction),
                pct(k.error_rate),
                trend(&k.trend),
                k.weak_component.as_str().to_string(),
                md_cell(&k.recommendation),
                gate(Gate::Publish),
                gate(Gate::Feature),
                if k.deprecation_review.triggered {
                    format!("due: {}", md_cell(&k.deprecation_review.reasons.join("; ")))
                } else {
                    "no".into()
                },
            ],
        );
    }
    let _ = writeln!(
        out,
        "\nGates as the rubric's `check_quality_gate` applies them ({}). Deprecation review: score ≤ {} with at least {} invocations; the rubric's third criterion, {} days without improvement, needs a history skillscope does not keep and is left out.\n",
        [Gate::Publish, Gate::Feature]
            .into_iter()
            .map(|g| {
                let c = g.config();
                format!(
                    "{}: score ≥ {}, at least {} invocations, error rate ≤ {}",
                    g.as_str(),
                    c.min_score.unwrap_or(0.0),
                    c.min_invocations.unwrap_or(0),
                    pct(c.max_error_rate.unwrap_or(1.0))
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
    );

    out.push_str("### Leaderboard\n\nThe rubric's leaderboard query: skills with at least 5 invocations.\n\n");
    if s.leaderboard.is_empty() {
        out.push_str("No skill has 5 invocations yet.\n\n");
    } else {
        header(
            out,
            &[
                "Skill",
                "Uses",
                "Score",
                "Completion",
                "Efficiency",
                "Quality",
                "Satisfaction",
            ],
            &[false, true, true, true, true, true, true],
        );
        for l in &s.leaderboard {
            row(
                out,
                &[
                    md_cell(&l.skill_name),
                    l.uses.to_string(),
                    format!("{:.1}", l.avg_score),
                    format!("{:.1}", l.avg_completion),
                    format!("{:.1}", l.avg_efficiency),
                    format!("{:.1}", l.avg_quality),
                    format!("{:.1}", l.avg_satisfaction),
                ],
            );
        }
        out.push('\n');
    }
    out.push_str("### Tier distribution\n\n");
    header(
        out,
        &["Skill", "Tier", "Invocations"],
        &[false, false, true],
    );
    for d in &s.distribution {
        row(
            out,
            &[
                md_cell(&d.skill_name),
                d.tier.label().to_string(),
                d.count.to_string(),
            ],
        );
    }
    out.push_str("\n### Improvement opportunities\n\nComponents whose average is below 70 % of their maximum, weakest first.\n\n");
    if s.opportunities.is_empty() {
        out.push_str("None.\n\n");
    } else {
        header(
            out,
            &["Skill", "Weak area", "Normalized score"],
            &[false, false, true],
        );
        for o in &s.opportunities {
            row(
                out,
                &[
                    md_cell(&o.skill_name),
                    o.weak_area.as_str().to_string(),
                    format!("{:.2}", o.normalized_score),
                ],
            );
        }
        out.push('\n');
    }
}
