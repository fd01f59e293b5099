//! The report as CSV tables (RFC 4180 through the `csv` crate), one file per section, for other
//! tools. Fractions stay fractions (pass rates in [0, 1]) at full precision; Δ is in percentage
//! points as in the Markdown; empty cells mean "none" (no CI, undefined g, a task not run), with
//! the reason in the `*_undefined` column beside them. Every CI comes with its resample count and
//! seed. Text from the store is stripped of control characters.

use crate::analysis::ci::Ci;
use crate::analysis::failure_category::FailureCategory;
use crate::analysis::results::{Change, FailureMode, GroupRow, Results};
use crate::analysis::rubric::{Gate, Trend};

use super::Report;
use super::table::Table;

/// The file names and contents, in a fixed order: `conditions.csv`, `comparisons.csv`,
/// `per_task.csv`, `task_changes.csv`, `domains.csv`, `difficulties.csv`, `failures.csv`,
/// `failure_categories.csv`, `failure_shifts.csv` (modes and categories), `efficiency.csv`,
/// `flaky.csv`, `pass_at_2.csv`, `paper.csv`, `skill_content.csv`,
/// `skill_buckets.csv`, `skills.csv`; for experiments also `hypotheses.csv`, and when they have
/// rows `held_out.csv` (per side of a split: conditions and comparisons), `round2_skills.csv`,
/// `skill_exposure.csv` (when trials recorded what their agent could see of skills) and
/// `generated_skills.csv`.
pub fn tables(report: &Report) -> Vec<(&'static str, String)> {
    sections(report)
        .into_iter()
        .map(|(name, t)| (name, t.csv()))
        .collect()
}

/// Every CSV file's [`Table`], in the order of [`tables`] (cells plain: fractions at full
/// precision, text stripped of control characters, empty for none).
pub fn sections(report: &Report) -> Vec<(&'static str, Table)> {
    let r = &report.results;
    let mut out = vec![
        ("conditions.csv", conditions(r)),
        ("comparisons.csv", comparisons(r)),
        ("per_task.csv", per_task(r)),
        ("task_changes.csv", task_changes(r)),
        ("domains.csv", groups(r, &r.domains)),
        ("difficulties.csv", groups(r, &r.difficulties)),
        ("failures.csv", failures(r)),
        ("failure_categories.csv", failure_categories(r)),
        ("failure_shifts.csv", failure_shifts(r)),
        ("efficiency.csv", efficiency(r)),
        ("flaky.csv", flaky(r)),
        ("pass_at_2.csv", pass_at_2(r)),
        ("paper.csv", paper(r)),
        ("skill_content.csv", skill_content(report)),
        ("skill_buckets.csv", skill_buckets(report)),
        ("skills.csv", skills(report)),
    ];
    comparison_tables(report, &mut out);
    out
}

/// `conditions.csv`: one row per condition: Method D pass rate with its CI, pass@1, counts and the
/// trials of each failure mode.
fn conditions(r: &Results) -> Table {
    let mut head: Vec<String> = [
        "label",
        "run",
        "condition",
        "pass_rate",
        "ci_low",
        "ci_high",
        "ci_resamples",
        "ci_seed",
        "ci_undefined",
        "pass_at_1",
        "pass_threshold",
        "se",
        "n_tasks",
        "planned",
        "done",
        "passed",
        "timeout_passed",
        "infrastructure_failures",
        "method_d_judged_trials",
        "aggregated",
    ]
    .map(String::from)
    .to_vec();
    head.extend(FailureMode::ALL.iter().map(|m| {
        serde_json::to_value(m)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default()
    }));
    Table::new(
        &head,
        r.conditions.iter().map(|c| {
            let mut row = vec![
                text(&c.label),
                text(&c.run),
                text(&c.condition),
                c.pass_rate.to_string(),
                ci_low(c.ci),
                ci_high(c.ci),
                ci_resamples(c.ci),
                ci_seed(c.ci),
                reason(&c.ci_undefined),
                c.pass_at_1.to_string(),
                r.success.threshold.to_string(),
                opt(c.se),
                c.n_tasks.to_string(),
                c.planned.to_string(),
                c.done.to_string(),
                c.passed.to_string(),
                c.timeout_passed.to_string(),
                c.infrastructure().to_string(),
                opt(c.pass_rate_judged),
                c.aggregated.to_string(),
            ];
            row.extend(
                FailureMode::ALL
                    .iter()
                    .map(|m| c.failures.get(m).copied().unwrap_or(0).to_string()),
            );
            row
        }),
    )
}

/// `comparisons.csv`: one row per comparison: the matched tasks, Δ and its CI in percentage points,
/// normalized gain g, and the task-level changes.
fn comparisons(r: &Results) -> Table {
    Table::new(
        &[
            "comparison",
            "with",
            "without",
            "n_tasks",
            "n_tasks_total",
            "not_run_with",
            "not_run_without",
            "p_with",
            "p_without",
            "delta_pp",
            "delta_undefined",
            "delta_ci_low_pp",
            "delta_ci_high_pp",
            "ci_resamples",
            "ci_seed",
            "ci_undefined",
            "delta_se_pp",
            "g",
            "g_undefined",
            "delta_pp_judged",
            "n_flaky",
            "delta_pp_flaky",
            "improved",
            "degraded",
            "unchanged",
        ],
        r.comparisons.iter().map(|c| {
            vec![
                text(&c.name),
                text(&c.with),
                text(&c.without),
                c.n_tasks.to_string(),
                c.n_tasks_total.to_string(),
                text(&c.not_run_with.join(" ")),
                text(&c.not_run_without.join(" ")),
                opt(c.p_with),
                opt(c.p_without),
                opt(c.delta_pp),
                reason(&c.delta_undefined),
                ci_low(c.delta_ci_pp),
                ci_high(c.delta_ci_pp),
                ci_resamples(c.delta_ci_pp),
                ci_seed(c.delta_ci_pp),
                reason(&c.ci_undefined),
                opt(c.delta_se_pp),
                opt(c.g),
                reason(&c.g_undefined),
                opt(c.delta_pp_judged),
                c.n_flaky.to_string(),
                c.delta_pp_flaky.to_string(),
                c.improved.to_string(),
                c.degraded.to_string(),
                c.unchanged.to_string(),
            ]
        }),
    )
}

/// `per_task.csv`: one row per task and condition: mean reward, pass@1 and trial counts.
fn per_task(r: &Results) -> Table {
    Table::new(
        &[
            "task",
            "domain",
            "difficulty",
            "condition",
            "mean_reward",
            "pass_at_1",
            "planned",
            "passed",
            "judged",
            "judged_failed",
        ],
        r.tasks.iter().enumerate().flat_map(|(i, t)| {
            r.conditions.iter().map(move |c| {
                vec![
                    text(&t.id),
                    text(&t.domain),
                    text(&t.difficulty),
                    text(&c.label),
                    opt(c.per_task[i]),
                    opt(c.pass_at_1_of(i)),
                    c.per_task_planned[i].to_string(),
                    c.per_task_passed[i].to_string(),
                    c.per_task_judged[i].to_string(),
                    c.per_task_judged_failed[i].to_string(),
                ]
            })
        }),
    )
}

/// `task_changes.csv`: one row per comparison and task: both sides' rates and the change.
fn task_changes(r: &Results) -> Table {
    Table::new(
        &[
            "comparison",
            "task",
            "domain",
            "difficulty",
            "without",
            "with",
            "delta_pp",
            "change",
        ],
        r.task_deltas.iter().map(|t| {
            vec![
                text(&t.comparison),
                text(&t.task),
                text(&t.domain),
                text(&t.difficulty),
                opt(t.without),
                opt(t.with),
                opt(t.delta_pp),
                match t.change {
                    Change::Improved => "improved",
                    Change::Degraded => "degraded",
                    Change::Unchanged => "unchanged",
                    Change::NotRun => "not_run",
                }
                .into(),
            ]
        }),
    )
}

/// `failures.csv`: one row per condition and failure mode that occurred.
fn failures(r: &Results) -> Table {
    Table::new(
        &["condition", "mode", "trials", "infrastructure"],
        r.conditions.iter().flat_map(|c| {
            c.failures.iter().map(move |(m, n)| {
                vec![
                    text(&c.label),
                    m.label().into(),
                    n.to_string(),
                    m.is_infrastructure().to_string(),
                ]
            })
        }),
    )
}

/// `failure_categories.csv`: one row per condition and failure category (every category, zeros
/// included).
fn failure_categories(r: &Results) -> Table {
    Table::new(
        &["condition", "category", "trials"],
        r.conditions.iter().flat_map(|c| {
            FailureCategory::ALL.iter().map(move |k| {
                vec![
                    text(&c.label),
                    k.as_str().into(),
                    c.categories.get(k).copied().unwrap_or(0).to_string(),
                ]
            })
        }),
    )
}

/// `failure_shifts.csv`: how failure modes, then categories, shifted between rounds.
fn failure_shifts(r: &Results) -> Table {
    Table::new(
        &["rounds", "kind", "mode", "from_rate", "to_rate", "delta_pp"],
        r.failure_shifts
            .iter()
            .map(|s| {
                vec![
                    text(&s.name),
                    "mode".into(),
                    s.mode.label().into(),
                    s.from_rate.to_string(),
                    s.to_rate.to_string(),
                    s.delta_pp.to_string(),
                ]
            })
            .chain(r.category_shifts.iter().map(|s| {
                vec![
                    text(&s.name),
                    "category".into(),
                    s.category.as_str().into(),
                    s.from_rate.to_string(),
                    s.to_rate.to_string(),
                    s.delta_pp.to_string(),
                ]
            })),
    )
}

/// `efficiency.csv`: learning efficiency: per comparison and difficulty, both sides' rates, Δ and
/// g.
fn efficiency(r: &Results) -> Table {
    Table::new(
        &[
            "comparison",
            "difficulty",
            "n_tasks",
            "p_with",
            "p_without",
            "delta_pp",
            "g",
        ],
        r.efficiency.iter().map(|e| {
            vec![
                text(&e.comparison),
                text(&e.difficulty),
                e.n_tasks.to_string(),
                e.p_with.to_string(),
                e.p_without.to_string(),
                e.delta_pp.to_string(),
                opt(e.g),
            ]
        }),
    )
}

/// `flaky.csv`: tasks whose trials under one condition both passed and failed.
fn flaky(r: &Results) -> Table {
    Table::new(
        &["condition", "task", "passed", "failed"],
        r.flaky.iter().map(|f| {
            vec![
                text(&f.condition),
                text(&f.task),
                f.passed.to_string(),
                f.failed.to_string(),
            ]
        }),
    )
}

/// `pass_at_2.csv`: pass@2-adaptive against pass@1 of each round and pass@2, with the gain's CI.
fn pass_at_2(r: &Results) -> Table {
    Table::new(
        &[
            "rounds",
            "scope",
            "group",
            "n_tasks",
            "pass1_round1",
            "pass1_round2",
            "pass2_adaptive",
            "pass2",
            "pass2_undefined",
            "gain_pp",
            "gain_ci_low_pp",
            "gain_ci_high_pp",
            "ci_resamples",
            "ci_seed",
            "ci_undefined",
            "pass_threshold",
        ],
        r.adaptive.iter().map(|a| {
            vec![
                text(&a.name),
                a.scope.clone(),
                text(&a.group),
                a.n_tasks.to_string(),
                a.pass1_round1.to_string(),
                a.pass1_round2.to_string(),
                a.pass2_adaptive.to_string(),
                opt(a.pass2),
                reason(&a.pass2_undefined),
                opt(a.gain_pp),
                ci_low(a.gain_ci_pp),
                ci_high(a.gain_ci_pp),
                ci_resamples(a.gain_ci_pp),
                ci_seed(a.gain_ci_pp),
                reason(&a.gain_ci_undefined),
                r.success.threshold.to_string(),
            ]
        }),
    )
}

/// `paper.csv`: the SkillsBench paper's numbers beside this run's.
fn paper(r: &Results) -> Table {
    Table::new(
        &[
            "run",
            "paper_version",
            "harness",
            "model",
            "metric",
            "unit",
            "paper_value",
            "paper_ci95",
            "this_run",
            "this_run_tasks",
            "run_tasks",
        ],
        r.paper.iter().map(|p| {
            vec![
                text(&p.run),
                text(&p.paper.version),
                text(&p.paper.harness),
                text(&p.paper.model),
                text(&p.paper.metric),
                text(&p.paper.unit),
                opt(p.paper.value),
                opt(p.paper.ci95),
                opt(p.ours),
                p.n_tasks.map_or_else(String::new, |n| n.to_string()),
                p.n_tasks_total.to_string(),
            ]
        }),
    )
}

/// `skill_content.csv`: per skill set and skill: its size, files, SOPs, warnings and, for learned
/// versions, lines changed.
fn skill_content(report: &Report) -> Table {
    let sc = &report.skill_content;
    Table::new(
        &[
            "skill_set",
            "conditions",
            "skill",
            "body_tokens",
            "size",
            "files",
            "sops",
            "warnings",
            "lines_added",
            "lines_removed",
        ],
        sc.sets.iter().flat_map(|set| {
            set.skills.iter().map(move |k| {
                let o = |v: Option<usize>| v.map_or_else(String::new, |n| n.to_string());
                vec![
                    text(&set.name),
                    text(&set.conditions.join(" ")),
                    text(&k.name),
                    k.body_tokens.to_string(),
                    k.size.into(),
                    k.files.to_string(),
                    k.sops.to_string(),
                    k.warnings.to_string(),
                    o(k.lines_added),
                    o(k.lines_removed),
                ]
            })
        }),
    )
}

/// `skill_buckets.csv`: pass rates per skill-content bucket against the baseline condition.
fn skill_buckets(report: &Report) -> Table {
    let sc = &report.skill_content;
    Table::new(
        &[
            "condition",
            "baseline",
            "kind",
            "bucket",
            "n_tasks",
            "pass_rate",
            "baseline_rate",
            "delta_pp",
        ],
        sc.buckets.iter().map(|b| {
            vec![
                text(&b.condition),
                b.baseline.as_deref().map(text).unwrap_or_default(),
                b.kind.clone(),
                b.bucket.clone(),
                b.n_tasks.to_string(),
                b.pass_rate.to_string(),
                opt(b.baseline_rate),
                opt(b.delta_pp),
            ]
        }),
    )
}

/// `skills.csv`: the skill rubric's scores per skill, its trend and gates.
fn skills(report: &Report) -> Table {
    Table::new(
        &[
            "skill",
            "invocations",
            "avg_score",
            "tier",
            "completion",
            "efficiency",
            "quality",
            "satisfaction",
            "error_rate",
            "trend",
            "change_percent",
            "weak_component",
            "recommendation",
            "publish_gate",
            "feature_gate",
            "deprecation_review",
        ],
        report.skills.scores.iter().map(|k| {
            let gate = |g: Gate| {
                k.gates
                    .iter()
                    .find(|r| r.gate == g)
                    .map_or_else(String::new, |r| r.passed.to_string())
            };
            let (trend, change) = match &k.trend {
                Trend::InsufficientData => ("insufficient_data".to_string(), String::new()),
                Trend::Analyzed(a) => (
                    serde_json::to_value(a.trend)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default(),
                    a.change_percent.to_string(),
                ),
            };
            vec![
                text(&k.skill_name),
                k.invocations.to_string(),
                k.avg_score.to_string(),
                k.tier.label().into(),
                k.components.completion.to_string(),
                k.components.efficiency.to_string(),
                k.components.quality.to_string(),
                k.components.satisfaction.to_string(),
                k.error_rate.to_string(),
                trend,
                change,
                k.weak_component.as_str().into(),
                text(&k.recommendation),
                gate(Gate::Publish),
                gate(Gate::Feature),
                k.deprecation_review.triggered.to_string(),
            ]
        }),
    )
}

/// `domains.csv` and `difficulties.csv`: per group the pass rate of each condition, then Δ and
/// g of each comparison, each over the tasks of the group that ran.
fn groups(r: &Results, rows: &[GroupRow]) -> Table {
    Table::new(
        &["group", "n_tasks", "measure", "of", "value", "over_tasks"],
        rows.iter().flat_map(|g| {
            let rates =
                r.conditions
                    .iter()
                    .zip(g.rates.iter().zip(&g.n_ran))
                    .map(move |(c, (v, n))| {
                        vec![
                            text(&g.group),
                            g.n_tasks.to_string(),
                            "pass_rate".into(),
                            text(&c.label),
                            opt(*v),
                            n.to_string(),
                        ]
                    });
            let deltas = r
                .comparisons
                .iter()
                .zip(g.deltas_pp.iter().zip(g.gains.iter().zip(&g.n_matched)))
                .flat_map(move |(c, (d, (gn, n)))| {
                    [
                        vec![
                            text(&g.group),
                            g.n_tasks.to_string(),
                            "delta_pp".into(),
                            text(&c.name),
                            opt(*d),
                            n.to_string(),
                        ],
                        vec![
                            text(&g.group),
                            g.n_tasks.to_string(),
                            "g".into(),
                            text(&c.name),
                            opt(*gn),
                            n.to_string(),
                        ],
                    ]
                });
            rates.chain(deltas)
        }),
    )
}

/// The tables of the hypotheses, held-out transfer, round-2 skills, skill exposure and generated
/// skills.
fn comparison_tables(report: &Report, out: &mut Vec<(&'static str, Table)>) {
    let r = &report.results;
    if !r.hypotheses.is_empty() {
        out.push((
            "hypotheses.csv",
            Table::new(
                &[
                    "number",
                    "scope",
                    "claim",
                    "measure",
                    "unit",
                    "value",
                    "ci_low",
                    "ci_high",
                    "ci_resamples",
                    "ci_seed",
                    "verdict",
                    "n_tasks",
                    "answer",
                ],
                r.hypotheses.iter().map(|h| {
                    vec![
                        h.number.to_string(),
                        text(&h.scope),
                        text(&h.claim),
                        text(&h.measure),
                        text(&h.unit),
                        opt(h.value),
                        ci_low(h.ci),
                        ci_high(h.ci),
                        ci_resamples(h.ci),
                        ci_seed(h.ci),
                        h.verdict.label().to_string(),
                        h.n_tasks.to_string(),
                        text(&h.answer),
                    ]
                }),
            ),
        ));
    }
    if let Some(h) = &r.held_out {
        let mut rows = Vec::new();
        for sub in &h.subsets {
            for c in &sub.conditions {
                rows.push(vec![
                    text(&sub.name),
                    "condition".into(),
                    text(&c.label),
                    String::new(),
                    c.pass_rate.to_string(),
                    ci_low(c.ci),
                    ci_high(c.ci),
                    String::new(),
                    c.n_tasks.to_string(),
                ]);
            }
            for c in &sub.comparisons {
                rows.push(vec![
                    text(&sub.name),
                    "comparison".into(),
                    text(&c.with),
                    text(&c.without),
                    opt(c.delta_pp),
                    ci_low(c.delta_ci_pp),
                    ci_high(c.delta_ci_pp),
                    opt(c.g),
                    c.n_tasks.to_string(),
                ]);
            }
            for a in &sub.adaptive {
                rows.push(vec![
                    text(&sub.name),
                    "pass@2-adaptive gain".into(),
                    text(&a.name),
                    String::new(),
                    opt(a.gain_pp),
                    ci_low(a.gain_ci_pp),
                    ci_high(a.gain_ci_pp),
                    String::new(),
                    a.n_tasks.to_string(),
                ]);
            }
        }
        out.push((
            "held_out.csv",
            Table::new(
                &[
                    "subset", "kind", "label", "baseline", "value", "ci_low", "ci_high", "g",
                    "n_tasks",
                ],
                rows.into_iter(),
            ),
        ));
    }
    if !r.round2_skills.is_empty() {
        out.push((
            "round2_skills.csv",
            Table::new(
                &["condition", "space", "task", "mode", "n_skills", "skills"],
                r.round2_skills.iter().map(|x| {
                    vec![
                        text(&x.condition),
                        text(&x.space),
                        text(&x.task),
                        text(&x.mode),
                        x.n_skills.to_string(),
                        text(&x.skills.join(";")),
                    ]
                }),
            ),
        ));
    }
    if r.exposure.conditions.iter().any(|c| c.recorded > 0) {
        let (head, rows) = super::exposure::csv_rows(&r.exposure);
        out.push((
            "skill_exposure.csv",
            Table::new(
                &head,
                rows.into_iter()
                    .map(|row| row.iter().map(|c| text(c)).collect()),
            ),
        ));
    }
    let g = &report.skill_content.generated;
    if !g.is_empty() {
        out.push((
            "generated_skills.csv",
            Table::new(
                &["condition", "trials", "kept", "refused", "reasons"],
                g.iter().map(|x| {
                    vec![
                        text(&x.condition),
                        x.trials.to_string(),
                        x.kept.to_string(),
                        x.refused.to_string(),
                        text(&x.reasons.join("; ")),
                    ]
                }),
            ),
        ));
    }
}

fn text(s: &str) -> String {
    crate::sanitize::text(s).replace('\n', " ")
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(String::new, |v| v.to_string())
}

fn reason(r: &Option<String>) -> String {
    r.as_deref().map(text).unwrap_or_default()
}

fn ci_resamples(c: Option<Ci>) -> String {
    c.map_or_else(String::new, |c| c.resamples.to_string())
}

fn ci_seed(c: Option<Ci>) -> String {
    c.map_or_else(String::new, |c| c.seed.to_string())
}

fn ci_low(c: Option<Ci>) -> String {
    opt(c.map(|c| c.low))
}

fn ci_high(c: Option<Ci>) -> String {
    opt(c.map(|c| c.high))
}
