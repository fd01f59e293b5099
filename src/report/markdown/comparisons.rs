//! The comparisons of the Markdown report and what rests on them: the hypotheses, held-out
//! transfer, pass@2-adaptive, the paper's numbers, the breakdowns by domain and difficulty,
//! learning efficiency, flaky tasks and task-level changes.

use std::fmt::Write as _;

use super::{
    ChartKind, ChartSpec, chart, ci_head, ci_pct, ci_pp, gain, header, or_why, pct, pp, row,
    se_cell,
};
use crate::analysis::results::{Change, Comparison, GroupRow, Results};
use crate::report::md_cell;

/// The evaluation plan's hypotheses with the measured answers.
pub(super) fn hypotheses(out: &mut String, r: &Results) {
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
    if let Some(note) = crate::report::exposure::split_note(&r.exposure) {
        let _ = writeln!(out, "{note}\n");
    }
}

/// Held-out transfer: the split, then same-task and held-out results side by side.
pub(super) fn held_out(out: &mut String, r: &Results) {
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
            &["Condition", "Pass rate", &ci, "SE (%)", "Tasks"],
            &[false, true, true, true, true],
        );
        for c in &sub.conditions {
            row(
                out,
                &[
                    md_cell(&c.label),
                    pct(c.pass_rate),
                    or_why(c.ci.map(|x| ci_pct(Some(x))), &c.ci_undefined),
                    se_cell(c.se.map(|s| s * 100.0)),
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
                    "SE (pp)",
                    "g",
                ],
                &[false, true, true, true, true, true, true, true],
            );
            for c in &sub.comparisons {
                row(
                    out,
                    &comparison_cells(c, or_why(c.delta_pp.map(pp), &c.delta_undefined)),
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

pub(super) fn comparisons(out: &mut String, r: &Results) {
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
            "SE (pp)",
            "g",
            "Δ, judged trials only (pp)",
            "Improved",
            "Degraded",
            "Unchanged",
            "Not run on one side",
        ],
        &[
            false, true, true, true, true, true, true, true, true, true, true, true, true,
        ],
    );
    for c in &r.comparisons {
        row(
            out,
            &[
                comparison_cells(
                    c,
                    crate::report::exposure::delta_with_notes(
                        or_why(c.delta_pp.map(pp), &c.delta_undefined),
                        r.exposure.notes_of(&c.name),
                    ),
                )
                .as_slice(),
                &[
                    c.delta_pp_judged.map_or_else(|| "—".into(), pp),
                    c.improved.to_string(),
                    c.degraded.to_string(),
                    c.unchanged.to_string(),
                    (c.not_run_with.len() + c.not_run_without.len()).to_string(),
                ],
            ]
            .concat(),
        );
    }
    out.push_str("\nEach comparison is paired over the tasks both conditions ran (*Tasks compared*; `all N` when that is every task): the pass rates in the row, Δ, its CI (a paired bootstrap over those tasks), its standard error and g are over them, and improved / degraded / unchanged count them by their mean reward. A task only one side ran is not run on the other — listed under Task-level changes, never counted 0. *SE* is the standard error beside the bootstrap CI: of Δ, sd of the paired per-task differences / √n; of a pass rate, sd of the per-task means / √n — the clustered standard errors of Miller 2024 (arXiv:2411.00640), tasks as clusters; ±1.96·SE is the normal approximation of the same interval.\n\n");
}

/// The cells every comparison table starts with, in its header's order: name, tasks compared,
/// with, without, Δ (given: the main table adds exposure notes to it), its CI, SE and g.
fn comparison_cells(c: &Comparison, delta: String) -> [String; 8] {
    [
        md_cell(&c.name),
        tasks_compared(c.n_tasks, c.n_tasks_total),
        c.p_with.map_or_else(|| "—".into(), pct),
        c.p_without.map_or_else(|| "—".into(), pct),
        delta,
        or_why(c.delta_ci_pp.map(|x| ci_pp(Some(x))), &c.ci_undefined),
        se_cell(c.delta_se_pp),
        or_why(c.g.map(|g| gain(Some(g))), &c.g_undefined),
    ]
}

/// `all 19` or `1 of 19`.
pub(super) fn tasks_compared(n: usize, total: usize) -> String {
    if n == total {
        format!("all {total}")
    } else {
        format!("{n} of {total}")
    }
}

pub(super) fn adaptive(out: &mut String, r: &Results) {
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

pub(super) fn paper(out: &mut String, r: &Results) {
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

pub(super) fn groups(out: &mut String, r: &Results, rows: &[GroupRow], what: &str) {
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

pub(super) fn efficiency(out: &mut String, r: &Results) {
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

pub(super) fn flaky(out: &mut String, r: &Results) {
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

pub(super) fn task_changes(out: &mut String, r: &Results, specs: &[ChartSpec]) {
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
pub(super) fn reward(v: Option<f64>) -> String {
    v.map_or_else(|| "not run".into(), |v| format!("{v:.2}"))
}
