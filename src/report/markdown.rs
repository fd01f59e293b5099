//! The Markdown report: every section of a [`Report`] as GitHub-flavoured tables, with the
//! charts of [`super::charts::plan`] embedded by relative path. Pure: the same report gives the
//! same text (the snapshot test relies on it).

use std::fmt::Write as _;

use super::charts::{ChartKind, ChartSpec};
use super::{Report, md_cell};
use crate::analysis::ci::Ci;
use crate::analysis::failure_category::FailureCategory;
use crate::analysis::results::{Change, FailureMode, GroupRow, Results};
use crate::analysis::rubric::{Direction, Gate, Trend};
use crate::analysis::skill_content;

/// A fraction as a percentage with one decimal (`0.297` → `29.7%`).
pub fn pct(f: f64) -> String {
    format!("{:.1}%", f * 100.0)
}

/// A CI of a fraction in percent (`[25.1, 34.6]`), `—` without one.
pub fn ci_pct(ci: Option<Ci>) -> String {
    match ci {
        Some(c) => format!("[{:.1}, {:.1}]", c.low * 100.0, c.high * 100.0),
        None => "—".into(),
    }
}

/// A CI already in percentage points (`[+1.2, +9.8]`), `—` without one.
pub fn ci_pp(ci: Option<Ci>) -> String {
    match ci {
        Some(c) => format!("[{:+.1}, {:+.1}]", c.low, c.high),
        None => "—".into(),
    }
}

/// `text`, or `— (why)` when undefined: a table cell that says why it has no number.
pub fn or_why(text: Option<String>, why: &Option<String>) -> String {
    match (text, why) {
        (Some(t), _) => t,
        (None, Some(w)) => format!("— ({})", md_cell(w)),
        (None, None) => "—".into(),
    }
}

/// The header of a CI column: `95% CI (10,000 resamples, seed 20260212)`, `unit` after `CI`.
fn ci_head(r: &Results, unit: &str) -> String {
    format!("95% CI{unit} ({})", r.ci_method.short())
}

/// Percentage points with a sign (`+4.3`); what rounds to zero is `0.0`, never `-0.0`.
pub fn pp(v: f64) -> String {
    if (v * 10.0).round() == 0.0 {
        "0.0".into()
    } else {
        format!("{v:+.1}")
    }
}

/// A normalized gain (`+0.332`), `—` when undefined (baseline at 100 %).
pub fn gain(g: Option<f64>) -> String {
    match g {
        None => "—".into(),
        Some(g) if (g * 1000.0).round() == 0.0 => "0.000".into(),
        Some(g) => format!("{g:+.3}"),
    }
}

fn row(out: &mut String, cells: &[String]) {
    out.push('|');
    for c in cells {
        out.push(' ');
        out.push_str(c);
        out.push_str(" |");
    }
    out.push('\n');
}

/// A header row and its rule; `right` marks numeric (right-aligned) columns.
fn header(out: &mut String, cells: &[&str], right: &[bool]) {
    row(
        out,
        &cells.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
    );
    out.push('|');
    for (i, _) in cells.iter().enumerate() {
        out.push_str(if right.get(i).copied().unwrap_or(false) {
            "---:|"
        } else {
            "---|"
        });
    }
    out.push('\n');
}

fn chart(out: &mut String, specs: &[ChartSpec], kind: &ChartKind) {
    for s in specs.iter().filter(|s| &s.kind == kind) {
        let _ = writeln!(out, "![{}]({})\n", md_cell(&s.title), s.file);
    }
}

fn title(r: &Results) -> String {
    match &r.experiment {
        Some(e) => format!("experiment {}", md_cell(e)),
        None => r
            .runs
            .iter()
            .map(|x| md_cell(&x.name))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Renders `report` with the charts `specs` (paths relative to the report).
pub fn render(report: &Report, specs: &[ChartSpec]) -> String {
    let r = &report.results;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# SkillsBench results: {}{}\n",
        title(r),
        if r.interim.is_some() {
            " (interim)"
        } else {
            ""
        }
    );
    if let Some(i) = &r.interim {
        let _ = writeln!(out, "> **{}**\n", md_cell(&i.describe()));
    }
    for f in super::exposure::flags(&r.exposure) {
        let _ = writeln!(
            out,
            "> **Skills reached a condition without skills.** {f}\n"
        );
    }
    let _ = writeln!(
        out,
        "Generated {} by skillscope {}. Pass rates are the SkillsBench paper's Method D: per task, the mean reward over its planned trials (missing, unfinished and errored trials count 0; partial rewards count fractionally), then the mean over the tasks a condition ran, of a set of {} tasks. A trial **succeeds** when its verifier's {} — whatever the agent's outcome (an agent timeout whose verifier still gave the reward succeeded); pass@1, pass@2, pass@2-adaptive and flaky tasks count successes. Comparisons are paired over the tasks both sides ran; a task one side did not run is listed as not run, never counted 0. Δ is in percentage points (pp); normalized gain g = (p_with − p_without) / (1 − p_without). Confidence intervals: {}. Undefined numbers are shown as — with the reason.\n",
        r.generated_at,
        env!("CARGO_PKG_VERSION"),
        r.tasks.len(),
        md_cell(&r.success_description),
        r.ci_description
    );

    out.push_str("## Runs\n\n");
    header(
        &mut out,
        &[
            "Run",
            "Agent",
            "Model",
            "Source",
            "Trials per task",
            "Status",
            "Not pinned",
        ],
        &[false, false, false, false, true, false, false],
    );
    for x in &r.runs {
        row(
            &mut out,
            &[
                md_cell(&x.name),
                md_cell(&x.agent),
                md_cell(x.model.as_deref().unwrap_or("—")),
                md_cell(&x.source),
                x.n_trials.to_string(),
                md_cell(&x.status),
                if x.agent_settings.is_empty() {
                    "unknown (not recorded)".to_string()
                } else if x.unpinned.is_empty() {
                    "nothing".to_string()
                } else {
                    md_cell(&x.unpinned.join(", "))
                },
            ],
        );
    }
    out.push('\n');

    // The interim note is the banner above.
    let notes = &r.notes[usize::from(r.interim.is_some()).min(r.notes.len())..];
    if !notes.is_empty() {
        out.push_str("## Read this first\n\n");
        for n in notes {
            let _ = writeln!(out, "- {}", md_cell(n));
        }
        out.push('\n');
    }

    conditions(&mut out, r, specs);
    blocks(&mut out, &super::exposure::section(&r.exposure));
    hypotheses(&mut out, r);
    comparisons(&mut out, r);
    held_out(&mut out, r);
    adaptive(&mut out, r);
    paper(&mut out, r);
    out.push_str("## By domain\n\n");
    for s in specs
        .iter()
        .filter(|s| matches!(s.kind, ChartKind::Domains(_)))
    {
        let _ = writeln!(out, "![{}]({})\n", md_cell(&s.title), s.file);
    }
    groups(&mut out, r, &r.domains, "Domain");
    out.push_str("## By difficulty\n\n");
    groups(&mut out, r, &r.difficulties, "Difficulty");
    efficiency(&mut out, r);
    flaky(&mut out, r);
    task_changes(&mut out, r, specs);
    failures(&mut out, r, specs);
    skill_content(&mut out, report);
    round2_skills(&mut out, r);
    generated_skills(&mut out, report);
    skills(&mut out, report, specs);
    out
}

/// Text and tables of another module's section ([`super::exposure::Block`]).
fn blocks(out: &mut String, blocks: &[super::exposure::Block]) {
    for b in blocks {
        match b {
            super::exposure::Block::Text(t) => {
                let _ = writeln!(out, "{t}\n");
            }
            super::exposure::Block::Table { head, right, rows } => {
                header(out, head, right);
                for r in rows {
                    row(out, r);
                }
                out.push('\n');
            }
        }
    }
}

/// The evaluation plan's hypotheses with the measured answers.
fn hypotheses(out: &mut String, r: &Results) {
    if r.hypotheses.is_empty() {
        return;
    }
    out.push_str("## Hypotheses\n\nThe evaluation plan's hypotheses, each with the measured answer and its 95% CI: (1) learned skills improve on no skills — A' vs A — unlike SkillsBench's self-generated skills (−1.3 pp), and beat self-generated skills (A' vs C) when condition C ran; (2) they close part of the gap between no skills and curated skills, (A' − A) / (B − A), with a paired bootstrap CI over tasks (resamples without a gap are left out); (3) learning improves on curated skills, B' vs B. Each is measured over the tasks every condition it reads ran. A hypothesis is supported when its interval lies above 0, contradicted when it lies at or below 0, inconclusive when it spans 0, **borderline** when the interval touches 0 within its Monte Carlo error (a bound's band — where it would fall with another seed, the order statistics at rank (B − 1)q ± 2√(Bq(1 − q)) — reaches 0: the verdict could change with the seed or the resample count, so read it as not established), undefined when curated skills do not beat no skills (no gap to close) or fewer than 2 tasks leave no interval.\n\n");
    let ci_col = ci_head(r, "");
    header(
        out,
        &[
            "#",
            "Tasks",
            "Hypothesis",
            "Measure",
            "Value",
            &ci_col,
            "Answer",
        ],
        &[false, false, false, false, true, true, false],
    );
    for h in &r.hypotheses {
        let (value, ci) = match h.unit.as_str() {
            "share" => (
                h.value
                    .map_or_else(|| "—".into(), |v| format!("{:.0}%", v * 100.0)),
                h.ci.map_or_else(
                    || "—".into(),
                    |c| format!("[{:.0}%, {:.0}%]", c.low * 100.0, c.high * 100.0),
                ),
            ),
            _ => (
                h.value
                    .map_or_else(|| "—".into(), |v| format!("{} pp", pp(v))),
                ci_pp(h.ci),
            ),
        };
        row(
            out,
            &[
                h.number.to_string(),
                md_cell(&h.scope),
                md_cell(&h.claim),
                md_cell(&h.measure),
                value,
                ci,
                format!("**{}**: {}", h.verdict.label(), md_cell(&h.answer)),
            ],
        );
    }
    out.push('\n');
    if let Some(note) = super::exposure::split_note(&r.exposure) {
        let _ = writeln!(out, "{note}\n");
    }
}

/// Held-out transfer: the split, then same-task and held-out results side by side.
fn held_out(out: &mut String, r: &Results) {
    let Some(h) = &r.held_out else {
        return;
    };
    let s = &h.split;
    out.push_str("## Held-out transfer\n\n");
    let _ = writeln!(
        out,
        "Learning read only the train tasks' trials. Split: {} by domain and difficulty, test fraction {}, seed {}; round 2 ran {}.\n",
        md_cell(&s.method),
        s.test_fraction,
        s.seed,
        if s.round2 == "all" {
            "the train and the test tasks"
        } else {
            "the test tasks only"
        }
    );
    let _ = writeln!(
        out,
        "- Train ({}): {}\n- Test, held out ({}): {}\n",
        s.train.len(),
        md_cell(&s.train.join(", ")),
        s.test.len(),
        md_cell(&s.test.join(", "))
    );
    for sub in &h.subsets {
        let what = if sub.name == "held-out" {
            "skills learned from other tasks"
        } else {
            "skills learned from these very tasks (an upper bound)"
        };
        let _ = writeln!(
            out,
            "### {} ({} tasks: {what})\n",
            md_cell(&sub.name),
            sub.tasks.len()
        );
        let ci = ci_head(r, "");
        header(
            out,
            &["Condition", "Pass rate", &ci, "Tasks"],
            &[false, true, true, true],
        );
        for c in &sub.conditions {
            row(
                out,
                &[
                    md_cell(&c.label),
                    pct(c.pass_rate),
                    or_why(c.ci.map(|x| ci_pct(Some(x))), &c.ci_undefined),
                    c.n_tasks.to_string(),
                ],
            );
        }
        out.push('\n');
        if !sub.comparisons.is_empty() {
            let ci = ci_head(r, ", pp");
            header(
                out,
                &[
                    "Comparison",
                    "Tasks compared",
                    "With",
                    "Without",
                    "Δ (pp)",
                    &ci,
                    "g",
                ],
                &[false, true, true, true, true, true, true],
            );
            for c in &sub.comparisons {
                row(
                    out,
                    &[
                        md_cell(&c.name),
                        tasks_compared(c.n_tasks, c.n_tasks_total),
                        c.p_with.map_or_else(|| "—".into(), pct),
                        c.p_without.map_or_else(|| "—".into(), pct),
                        or_why(c.delta_pp.map(pp), &c.delta_undefined),
                        or_why(c.delta_ci_pp.map(|x| ci_pp(Some(x))), &c.ci_undefined),
                        or_why(c.g.map(|g| gain(Some(g))), &c.g_undefined),
                    ],
                );
            }
            out.push('\n');
        }
        if !sub.adaptive.is_empty() {
            let ci = ci_head(r, ", pp");
            header(
                out,
                &[
                    "Rounds",
                    "pass@2-adaptive",
                    "pass@2 (round 1)",
                    "Adaptive gain (pp)",
                    &ci,
                ],
                &[false, true, true, true, true],
            );
            for a in &sub.adaptive {
                row(
                    out,
                    &[
                        md_cell(&a.name),
                        pct(a.pass2_adaptive),
                        or_why(a.pass2.map(pct), &a.pass2_undefined),
                        or_why(a.gain_pp.map(pp), &a.pass2_undefined),
                        or_why(a.gain_ci_pp.map(|x| ci_pp(Some(x))), &a.gain_ci_undefined),
                    ],
                );
            }
            out.push('\n');
        }
    }
}

/// How many skills each task received in round 2 (`round2_skills`).
fn round2_skills(out: &mut String, r: &Results) {
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
fn generated_skills(out: &mut String, report: &Report) {
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

fn conditions(out: &mut String, r: &Results, specs: &[ChartSpec]) {
    out.push_str("## Pass rate per condition\n\n");
    chart(out, specs, &ChartKind::PassRate);
    let rule = md_cell(&r.success_description);
    let ci = ci_head(r, "");
    let pass1 = format!("pass@1 ({rule})");
    let passed = format!("Passed ({rule})");
    header(
        out,
        &[
            "Condition",
            "Run",
            "Skills",
            "Pass rate (Method D)",
            &ci,
            &pass1,
            "Tasks",
            "Done / planned",
            &passed,
            "of which after an agent timeout",
            "Infrastructure failures",
            "Method D over judged trials only",
        ],
        &[
            false, false, false, true, true, true, true, true, true, true, true, true,
        ],
    );
    for c in &r.conditions {
        row(
            out,
            &[
                md_cell(&c.label),
                md_cell(&c.run),
                md_cell(&c.condition),
                pct(c.pass_rate),
                or_why(c.ci.map(|x| ci_pct(Some(x))), &c.ci_undefined),
                pct(c.pass_at_1),
                c.n_tasks.to_string(),
                format!("{} / {}", c.done, c.planned),
                c.passed.to_string(),
                c.timeout_passed.to_string(),
                c.infrastructure().to_string(),
                c.pass_rate_judged.map_or_else(|| "—".into(), pct),
            ],
        );
    }
    let _ = writeln!(
        out,
        "\nMethod D is the mean reward (partial credit counts fractionally); pass@1 is the share of planned trials that succeeded ({rule}), per task, then the mean over tasks — where they differ, partial rewards or the threshold make the difference. *Passed* counts successes whatever the agent's outcome; *of which after an agent timeout* are agent timeouts whose verifier still gave the reward. Infrastructure failures are trials that ended without a verdict: no reward, a build error or a runtime error. Method D counts them 0 (the paper's rule); the last column is Method D with them left out — a mean of per-task means over each task's judged trials, not a share of trials.\n"
    );
}

fn comparisons(out: &mut String, r: &Results) {
    if r.comparisons.is_empty() {
        return;
    }
    out.push_str("## Comparisons\n\n");
    let ci = ci_head(r, ", pp");
    header(
        out,
        &[
            "Comparison",
            "Tasks compared",
            "With",
            "Without",
            "Δ (pp)",
            &ci,
            "g",
            "Δ, judged trials only (pp)",
            "Improved",
            "Degraded",
            "Unchanged",
            "Not run on one side",
        ],
        &[
            false, true, true, true, true, true, true, true, true, true, true, true,
        ],
    );
    for c in &r.comparisons {
        row(
            out,
            &[
                md_cell(&c.name),
                tasks_compared(c.n_tasks, c.n_tasks_total),
                c.p_with.map_or_else(|| "—".into(), pct),
                c.p_without.map_or_else(|| "—".into(), pct),
                super::exposure::delta_with_notes(
                    or_why(c.delta_pp.map(pp), &c.delta_undefined),
                    r.exposure.notes_of(&c.name),
                ),
                or_why(c.delta_ci_pp.map(|x| ci_pp(Some(x))), &c.ci_undefined),
                or_why(c.g.map(|g| gain(Some(g))), &c.g_undefined),
                c.delta_pp_judged.map_or_else(|| "—".into(), pp),
                c.improved.to_string(),
                c.degraded.to_string(),
                c.unchanged.to_string(),
                (c.not_run_with.len() + c.not_run_without.len()).to_string(),
            ],
        );
    }
    out.push_str("\nEach comparison is paired over the tasks both conditions ran (*Tasks compared*; `all N` when that is every task): the pass rates in the row, Δ, its CI (a paired bootstrap over those tasks) and g are over them, and improved / degraded / unchanged count them by their mean reward. A task only one side ran is not run on the other — listed under Task-level changes, never counted 0.\n\n");
}

/// `all 19` or `1 of 19`.
fn tasks_compared(n: usize, total: usize) -> String {
    if n == total {
        format!("all {total}")
    } else {
        format!("{n} of {total}")
    }
}

fn adaptive(out: &mut String, r: &Results) {
    if r.adaptive.is_empty() {
        return;
    }
    let rule = md_cell(&r.success_description);
    let _ = writeln!(
        out,
        "## Pass@2-adaptive\n\nThe plan's key metric: does a retry informed by learning beat a plain second try? Per task, pass@2-adaptive = 1 − (1 − p₁)(1 − p₂) with p₁, p₂ its pass@1 in round 1 and round 2 — the share of its planned trials that succeeded ({rule}; round-2 skills are learned from all of round 1, so a round-2 trial does not depend on any one round-1 trial); pass@2 is round 1's own chance of succeeding in two independent tries, the unbiased estimator 1 − C(n − c, 2) / C(n, 2) from its n planned trials with c successes (Chen et al. 2021, eq. 1) — undefined (—) with fewer than 2 trials per task, and so is the gain. Both are averaged over the tasks both rounds ran; the adaptive gain is their difference, with a paired bootstrap CI over tasks.\n"
    );
    let ci = ci_head(r, ", pp");
    for (scope, what) in [
        ("overall", "Rounds"),
        ("domain", "Domain"),
        ("difficulty", "Difficulty"),
    ] {
        let rows: Vec<_> = r.adaptive.iter().filter(|a| a.scope == scope).collect();
        if rows.is_empty() {
            continue;
        }
        if scope != "overall" {
            let _ = writeln!(out, "### By {scope}\n");
        }
        let mut cols = vec!["Rounds"];
        if scope != "overall" {
            cols.push(what);
        }
        cols.extend([
            "Tasks",
            "pass@1, round 1",
            "pass@1, round 2",
            "pass@2-adaptive",
            "pass@2 (round 1)",
            "Adaptive gain (pp)",
            &ci,
        ]);
        let right: Vec<bool> = cols
            .iter()
            .map(|c| !matches!(*c, "Rounds" | "Domain" | "Difficulty"))
            .collect();
        header(out, &cols, &right);
        for a in rows {
            let mut cells = vec![md_cell(&a.name)];
            if scope != "overall" {
                cells.push(md_cell(&a.group));
            }
            cells.extend([
                a.n_tasks.to_string(),
                pct(a.pass1_round1),
                pct(a.pass1_round2),
                pct(a.pass2_adaptive),
                or_why(a.pass2.map(pct), &a.pass2_undefined),
                or_why(a.gain_pp.map(pp), &a.pass2_undefined),
                or_why(a.gain_ci_pp.map(|x| ci_pp(Some(x))), &a.gain_ci_undefined),
            ]);
            row(out, &cells);
        }
        out.push('\n');
    }
}

fn paper(out: &mut String, r: &Results) {
    out.push_str("## Beside the paper\n\n");
    if r.paper.is_empty() {
        out.push_str("No run matches a harness and model of the paper's main table, so there is nothing to put beside it.\n\n");
        return;
    }
    header(
        out,
        &[
            "Run",
            "Paper",
            "Harness",
            "Model",
            "Metric",
            "Paper",
            "±95%",
            "This run",
            "Over tasks",
        ],
        &[false, false, false, false, false, true, true, true, true],
    );
    for p in r
        .paper
        .iter()
        .filter(|p| p.paper.value.is_some() || p.ours.is_some())
    {
        let unit = if p.paper.unit == "pct" { "%" } else { "" };
        row(
            out,
            &[
                md_cell(&p.run),
                md_cell(&p.paper.version),
                md_cell(&p.paper.harness),
                md_cell(&p.paper.model),
                md_cell(&p.paper.metric),
                p.paper
                    .value
                    .map_or_else(|| "—".into(), |v| format!("{v:.1}{unit}")),
                p.paper
                    .ci95
                    .map_or_else(|| "—".into(), |v| format!("{v:.1}")),
                p.ours
                    .map_or_else(|| "—".into(), |v| format!("{v:.1}{unit}")),
                p.n_tasks
                    .map_or_else(|| "—".into(), |n| tasks_compared(n, p.n_tasks_total)),
            ],
        );
    }
    out.push_str("\nPaper values are percent (g × 100 for normalized gain). `v1` is the February 2026 paper; `v4` rows, beside the results registry's runs, are its later aggregates over the registry's configurations (macro averages of each configuration's pass rates, the mean Δ and mean g, the range of Δ), computed here from those runs. This run's numbers are over the tasks both of its compared conditions ran (no-skills and curated, or no-skills and self-generated): a task one of them did not run is left out, not counted 0.\n\n");
}

fn groups(out: &mut String, r: &Results, rows: &[GroupRow], what: &str) {
    if rows.is_empty() {
        out.push_str("No tasks.\n\n");
        return;
    }
    let mut cols: Vec<String> = vec![what.to_string(), "Tasks".into()];
    cols.extend(r.conditions.iter().map(|c| md_cell(&c.label)));
    cols.extend(
        r.comparisons
            .iter()
            .map(|c| format!("Δ {}", md_cell(&c.name))),
    );
    let refs: Vec<&str> = cols.iter().map(String::as_str).collect();
    let right: Vec<bool> = (0..cols.len()).map(|i| i > 0).collect();
    header(out, &refs, &right);
    for g in rows {
        let mut cells = vec![md_cell(&g.group), g.n_tasks.to_string()];
        cells.extend(g.rates.iter().zip(&g.n_ran).map(|(v, n)| match v {
            Some(v) if *n < g.n_tasks => format!("{} ({n} ran)", pct(*v)),
            Some(v) => pct(*v),
            None => "— (not run)".into(),
        }));
        cells.extend(g.deltas_pp.iter().zip(&g.n_matched).map(|(v, n)| match v {
            Some(v) if *n < g.n_tasks => format!("{} ({n} matched)", pp(*v)),
            Some(v) => pp(*v),
            None => "— (no task both ran)".into(),
        }));
        row(out, &cells);
    }
    out.push('\n');
}

fn efficiency(out: &mut String, r: &Results) {
    if r.efficiency.is_empty() {
        return;
    }
    out.push_str("## Learning efficiency by difficulty\n\nWhat the learned skills add in round 2, per difficulty tier.\n\n");
    header(
        out,
        &[
            "Comparison",
            "Difficulty",
            "Tasks",
            "With",
            "Without",
            "Δ (pp)",
            "g",
        ],
        &[false, false, true, true, true, true, true],
    );
    for e in &r.efficiency {
        row(
            out,
            &[
                md_cell(&e.comparison),
                md_cell(&e.difficulty),
                e.n_tasks.to_string(),
                pct(e.p_with),
                pct(e.p_without),
                pp(e.delta_pp),
                gain(e.g),
            ],
        );
    }
    out.push('\n');
}

fn flaky(out: &mut String, r: &Results) {
    let _ = writeln!(
        out,
        "## Flaky tasks\n\nA task is flaky under a condition when its trials disagree: some succeed ({}), some with a verdict do not.\n",
        md_cell(&r.success_description)
    );
    header(out, &["Condition", "Flaky tasks"], &[false, true]);
    for c in &r.conditions {
        let n = r.flaky.iter().filter(|f| f.condition == c.label).count();
        row(out, &[md_cell(&c.label), n.to_string()]);
    }
    out.push('\n');
    if !r.comparisons.is_empty() {
        header(
            out,
            &[
                "Comparison",
                "Δ (pp)",
                "Tasks flaky in either condition",
                "Δ from them (pp)",
            ],
            &[false, true, true, true],
        );
        for c in &r.comparisons {
            row(
                out,
                &[
                    md_cell(&c.name),
                    c.delta_pp.map_or_else(|| "—".into(), pp),
                    c.n_flaky.to_string(),
                    pp(c.delta_pp_flaky),
                ],
            );
        }
        out.push_str("\nΔ from them: the flaky tasks' per-task differences summed over the compared tasks — the part of Δ that rests on tasks whose outcome a rerun may flip.\n\n");
    }
    if !r.flaky.is_empty() {
        header(
            out,
            &["Condition", "Task", "Passed", "Failed"],
            &[false, false, true, true],
        );
        for f in &r.flaky {
            row(
                out,
                &[
                    md_cell(&f.condition),
                    md_cell(&f.task),
                    f.passed.to_string(),
                    f.failed.to_string(),
                ],
            );
        }
        out.push('\n');
    }
}

fn task_changes(out: &mut String, r: &Results, specs: &[ChartSpec]) {
    if r.comparisons.is_empty() {
        return;
    }
    out.push_str("## Task-level changes\n\n");
    for c in &r.comparisons {
        let not_run = c.not_run_with.len() + c.not_run_without.len();
        let _ = writeln!(
            out,
            "### {}\n\n{} improved, {} degraded, {} unchanged{}.\n",
            md_cell(&c.name),
            c.improved,
            c.degraded,
            c.unchanged,
            if not_run > 0 {
                format!("; {not_run} not run on one side (not compared)")
            } else {
                String::new()
            }
        );
        chart(out, specs, &ChartKind::TaskDeltas(c.name.clone()));
        for (change, what) in [
            (Change::Improved, "Improved"),
            (Change::Degraded, "Degraded"),
        ] {
            let mut tasks: Vec<_> = r
                .task_deltas
                .iter()
                .filter(|t| t.comparison == c.name && t.change == change)
                .collect();
            if tasks.is_empty() {
                continue;
            }
            if change == Change::Degraded {
                tasks.reverse();
            }
            let _ = writeln!(out, "{what}:\n");
            header(
                out,
                &["Task", "Domain", "Difficulty", "Without", "With", "Δ (pp)"],
                &[false, false, false, true, true, true],
            );
            for t in tasks {
                row(
                    out,
                    &[
                        md_cell(&t.task),
                        md_cell(&t.domain),
                        md_cell(&t.difficulty),
                        reward(t.without),
                        reward(t.with),
                        t.delta_pp.map_or_else(|| "—".into(), pp),
                    ],
                );
            }
            out.push('\n');
        }
        let not_run: Vec<_> = r
            .task_deltas
            .iter()
            .filter(|t| t.comparison == c.name && t.change == Change::NotRun)
            .collect();
        if !not_run.is_empty() {
            out.push_str("Not run on one side (no comparison; never counted 0):\n\n");
            header(
                out,
                &["Task", "Domain", "Difficulty", "Without", "With"],
                &[false, false, false, true, true],
            );
            for t in not_run {
                row(
                    out,
                    &[
                        md_cell(&t.task),
                        md_cell(&t.domain),
                        md_cell(&t.difficulty),
                        reward(t.without),
                        reward(t.with),
                    ],
                );
            }
            out.push('\n');
        }
    }
}

/// A task's mean reward (`0.75`), `not run` without one.
fn reward(v: Option<f64>) -> String {
    v.map_or_else(|| "not run".into(), |v| format!("{v:.2}"))
}

fn failures(out: &mut String, r: &Results, specs: &[ChartSpec]) {
    out.push_str("## Failure modes\n\n");
    chart(out, specs, &ChartKind::Failures);
    let modes: Vec<FailureMode> = FailureMode::ALL
        .into_iter()
        .filter(|m| r.conditions.iter().any(|c| c.failures.contains_key(m)))
        .collect();
    let mut cols: Vec<String> = vec!["Condition".into(), "Planned".into(), "Passed".into()];
    cols.extend(modes.iter().map(|m| {
        if m.is_infrastructure() {
            format!("{} (infra)", m.label())
        } else {
            m.label().to_string()
        }
    }));
    let refs: Vec<&str> = cols.iter().map(String::as_str).collect();
    let right: Vec<bool> = (0..cols.len()).map(|i| i > 0).collect();
    header(out, &refs, &right);
    for c in &r.conditions {
        let mut cells = vec![
            md_cell(&c.label),
            c.planned.to_string(),
            c.passed.to_string(),
        ];
        cells.extend(
            modes
                .iter()
                .map(|m| c.failures.get(m).copied().unwrap_or(0).to_string()),
        );
        row(out, &cells);
    }
    out.push_str("\nWrong output = the verifier ran and the output failed it. Timeouts are verdicts on the agent; build errors, runtime errors and missing rewards are infrastructure.\n\n");
    out.push_str("### Failure categories\n\nThe plan's four categories for every judged failure (wrong output or a timeout), decided from the outcome, the trajectory and the test report by the rules in the docs/scoring.md (\"Failure categories\"): timeout (agent or verifier overran), execution (the agent's own commands failed and it did not recover, or it crashed), coherence (it stopped without doing what was asked), verification (outputs produced and failed the verifier's assertions); unclassified when what the trial left does not decide it. Infrastructure failures are not judged and stay in the table above.\n\n");
    let mut cols: Vec<String> = vec!["Condition".into(), "Judged failures".into()];
    cols.extend(FailureCategory::ALL.iter().map(|k| k.as_str().to_string()));
    let refs: Vec<&str> = cols.iter().map(String::as_str).collect();
    let right: Vec<bool> = (0..cols.len()).map(|i| i > 0).collect();
    header(out, &refs, &right);
    for c in &r.conditions {
        let mut cells = vec![
            md_cell(&c.label),
            c.categories.values().sum::<usize>().to_string(),
        ];
        cells.extend(
            FailureCategory::ALL
                .iter()
                .map(|k| c.categories.get(k).copied().unwrap_or(0).to_string()),
        );
        row(out, &cells);
    }
    out.push('\n');
    let categories: Vec<Shift> = r
        .category_shifts
        .iter()
        .map(|s| {
            (
                &s.name,
                s.category.as_str(),
                s.from_rate,
                s.to_rate,
                s.delta_pp,
            )
        })
        .collect();
    shift_table(out, "categories", "Failure category", &categories);
    let modes: Vec<Shift> = r
        .failure_shifts
        .iter()
        .filter(|s| s.from_rate > 0.0 || s.to_rate > 0.0)
        .map(|s| (&s.name, s.mode.label(), s.from_rate, s.to_rate, s.delta_pp))
        .collect();
    shift_table(out, "modes", "Failure mode", &modes);
}

/// A shift row: rounds, what, round-1 share, round-2 share, Δ pp.
type Shift<'a> = (&'a String, &'a str, f64, f64, f64);

fn shift_table(out: &mut String, what: &str, column: &str, rows: &[Shift]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "### How failure {what} shift between rounds\n\nShare of planned trials.\n"
    );
    header(
        out,
        &["Rounds", column, "Round 1", "Round 2", "Δ (pp)"],
        &[false, false, true, true, true],
    );
    for (name, label, from, to, delta) in rows {
        row(
            out,
            &[
                md_cell(name),
                label.to_string(),
                pct(*from),
                pct(*to),
                pp(*delta),
            ],
        );
    }
    out.push('\n');
}

fn skill_content(out: &mut String, report: &Report) {
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

fn trend(t: &Trend) -> String {
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

fn skills(out: &mut String, report: &Report, specs: &[ChartSpec]) {
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
