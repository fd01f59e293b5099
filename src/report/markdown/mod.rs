//! The Markdown report: every section of a [`Report`] as GitHub-flavoured tables, with the
//! charts of [`super::charts::plan`] embedded by relative path. Pure: the same report gives the
//! same text (the snapshot test relies on it). The conditions, failure modes and the cell
//! helpers are here; the comparisons and their breakdowns in [`comparisons`], the skill sections
//! in [`skills`].

mod comparisons;
mod skills;

use std::fmt::Write as _;

use super::charts::{ChartKind, ChartSpec};
use super::table::{header, row};
use super::{Report, md_cell};
use crate::analysis::ci::Ci;
use crate::analysis::failure_category::FailureCategory;
use crate::analysis::results::{FailureMode, Results};

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

/// A standard error in percent or percentage points (`4.1`), `—` below two tasks.
pub fn se_cell(se: Option<f64>) -> String {
    se.map_or_else(|| "—".into(), |s| format!("{s:.1}"))
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
    if let Some(f) = super::tamper::flag(&r.tamper) {
        let _ = writeln!(out, "{f}");
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
    out.push_str(&super::tamper::section(&r.tamper));
    comparisons::hypotheses(&mut out, r);
    comparisons::comparisons(&mut out, r);
    comparisons::held_out(&mut out, r);
    comparisons::adaptive(&mut out, r);
    comparisons::paper(&mut out, r);
    out.push_str("## By domain\n\n");
    for s in specs
        .iter()
        .filter(|s| matches!(s.kind, ChartKind::Domains(_)))
    {
        let _ = writeln!(out, "![{}]({})\n", md_cell(&s.title), s.file);
    }
    comparisons::groups(&mut out, r, &r.domains, "Domain");
    out.push_str("## By difficulty\n\n");
    comparisons::groups(&mut out, r, &r.difficulties, "Difficulty");
    comparisons::efficiency(&mut out, r);
    comparisons::flaky(&mut out, r);
    comparisons::task_changes(&mut out, r, specs);
    failures(&mut out, r, specs);
    skills::skill_content(&mut out, report);
    skills::round2_skills(&mut out, r);
    skills::generated_skills(&mut out, report);
    skills::skills(&mut out, report, specs);
    out
}

/// Text and tables of another module's section ([`super::exposure::Block`]).
fn blocks(out: &mut String, blocks: &[super::exposure::Block]) {
    for b in blocks {
        match b {
            super::exposure::Block::Text(t) => {
                let _ = writeln!(out, "{t}\n");
            }
            super::exposure::Block::Table(t) => {
                t.markdown(out);
                out.push('\n');
            }
        }
    }
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
            "SE (%)",
            &pass1,
            "Tasks",
            "Done / planned",
            &passed,
            "of which after an agent timeout",
            "Infrastructure failures",
            "Method D over judged trials only",
        ],
        &[
            false, false, false, true, true, true, true, true, true, true, true, true, true,
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
                se_cell(c.se.map(|s| s * 100.0)),
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
