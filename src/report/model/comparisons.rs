//! The comparisons and what rests on them: the evaluation plan's hypotheses, the comparisons
//! (Δ, its CI and SE, g, task counts), held-out transfer, pass@2-adaptive, the paper's numbers,
//! flaky tasks and task-level changes.

use super::{Block, Cell, Column, Row, Table, Tone, Unit, Value, View, Views, ci_title};
use crate::analysis::results::{Adaptive, Change, Comparison, Results};
use crate::report::charts::ChartKind;
use crate::report::md_cell;

/// The hypotheses with their measured answers (experiments).
pub fn hypotheses(r: &Results) -> Vec<Block> {
    if r.hypotheses.is_empty() {
        return Vec::new();
    }
    let mut t = Table::new(
        "hypotheses",
        "hypothesis",
        vec![
            Column::text("number", "#"),
            Column::text("scope", "Tasks").short("tasks"),
            Column::text("claim", "Hypothesis")
                .short("hypothesis")
                .priority(3),
            Column::text("measure", "Measure").short("measure"),
            Column::text("unit", "Unit").views(Views::of(&[View::Csv])),
            Column::number("value", "Value").short("value"),
            Column::number("ci", ci_title(r, ""))
                .short("95% CI")
                .csv(&["ci_low", "ci_high", "ci_resamples", "ci_seed"])
                .reason("ci_undefined"),
            Column::number("n_tasks", "Matched tasks")
                .short("n")
                .views(Views::of(&[View::Csv])),
            Column::text("verdict", "Answer")
                .short("answer")
                .csv(&["verdict", "answer"]),
        ],
    );
    for h in &r.hypotheses {
        let share = h.unit == "share";
        let unit = if share { Unit::Percent } else { Unit::Pp };
        let value = match (h.value, share) {
            (Some(v), true) => Cell::new(Value::Rate(v)),
            (Some(v), false) => Cell::delta(Some(v), None),
            (None, _) => Cell::undefined(None),
        };
        t.push(Row::new(vec![
            Cell::text(h.number.to_string()),
            Cell::text(&h.scope),
            Cell::text(&h.claim),
            Cell::text(&h.measure),
            Cell::text(&h.unit),
            value,
            Cell::ci(h.ci, unit, None),
            Cell::count(h.n_tasks),
            Cell::new(Value::Verdict {
                label: h.verdict.label().to_string(),
                answer: match &h.sequential {
                    Some(v) => format!(
                        "sequential design {} (run {}), {}: {}; {} — the fixed-design reading: {}",
                        crate::sanitize::one_line(&v.label),
                        crate::sanitize::one_line(&v.run),
                        super::sequential::verdict_text(&v.look, v.stages),
                        super::sequential::why_text(&v.look),
                        super::sequential::estimate_text(&v.look),
                        h.answer
                    ),
                    None => h.answer.clone(),
                },
            }),
        ]));
    }
    let mut out = vec![
        Block::heading(2, "Hypotheses"),
        Block::text(
            "The evaluation plan's hypotheses, each with the measured answer and its 95% CI: (1) learned skills improve on no skills — A' vs A — unlike SkillsBench's self-generated skills (−1.3 pp), and beat self-generated skills (A' vs C) when condition C ran; (2) they close part of the gap between no skills and curated skills, (A' − A) / (B − A), with a paired bootstrap CI over tasks (resamples without a gap are left out); (3) learning improves on curated skills, B' vs B. Each is measured over the tasks every condition it reads ran. A hypothesis is supported when its interval lies above 0, contradicted when it lies at or below 0, inconclusive when it spans 0, **borderline** when the interval touches 0 within its Monte Carlo error (a bound's band — where it would fall with another seed, the order statistics at rank (B − 1)q ± 2√(Bq(1 − q)) — reaches 0: the verdict could change with the seed or the resample count, so read it as not established), undefined when curated skills do not beat no skills (no gap to close) or fewer than 2 tasks leave no interval.",
        ),
        Block::table(t),
    ];
    if let Some(note) = super::exposure::split_note(&r.exposure) {
        out.push(Block::text(note));
    }
    out
}

/// The columns every comparison table starts with: name, tasks compared, with, without, Δ, its
/// CI, SE and g.
fn comparison_columns(r: &Results) -> Vec<Column> {
    vec![
        Column::text("comparison", "Comparison").short("comparison"),
        Column::number("n_tasks", "Tasks compared")
            .short("tasks")
            .priority(1)
            .csv(&["n_tasks", "n_tasks_total"]),
        Column::number("p_with", "With")
            .short("with")
            .priority(2)
            .except(View::Terminal),
        Column::number("p_without", "Without")
            .short("without")
            .priority(2)
            .except(View::Terminal),
        Column::number("delta_pp", "Δ (pp)")
            .short("Δ pp")
            .reason("delta_undefined"),
        Column::number("aa_noise", "A/A noise (pp)")
            .short("A/A ±pp")
            .priority(2)
            .csv(&super::conditions::AA_NOISE_CSV)
            .reason("aa_noise_undefined"),
        Column::number("delta_ci", ci_title(r, ", pp"))
            .short("95% CI")
            .csv(&[
                "delta_ci_low_pp",
                "delta_ci_high_pp",
                "ci_resamples",
                "ci_seed",
            ])
            .reason("ci_undefined"),
        Column::number("delta_se_pp", "SE (pp)").views(Views::REPORT),
        Column::number("g", "g")
            .short("g")
            .priority(1)
            .reason("g_undefined"),
    ]
}

/// The cells of [`comparison_columns`] for `c`; `delta` is Δ's cell (the main table notes the
/// trials' use of skills beside it).
fn comparison_cells(c: &Comparison, delta: Cell) -> Vec<Cell> {
    vec![
        Cell::text(&c.name),
        Cell::new(Value::TasksCompared {
            n: c.n_tasks,
            total: c.n_tasks_total,
        })
        .tone(if c.is_partial() {
            Tone::Warn
        } else {
            Tone::Dim
        }),
        Cell::rate(c.p_with, None),
        Cell::rate(c.p_without, None),
        delta,
        Cell::spread(&c.aa_noise),
        ci_cell(c.delta_ci_pp, Unit::Pp, c.ci_undefined.as_deref()),
        Cell::se(c.delta_se_pp, Unit::Pp),
        Cell::gain(c.g, c.g_undefined.as_deref()),
    ]
}

/// A Δ's CI, toned as its verdict: gain when it lies above zero, loss below, dim when it spans
/// (or touches) zero.
pub fn ci_cell(ci: Option<crate::analysis::ci::Ci>, unit: Unit, why: Option<&str>) -> Cell {
    use crate::analysis::ci::Side;
    let tone = match ci.map(|c| c.verdict()) {
        Some((Side::Above, false)) => Tone::Gain,
        Some((Side::AtOrBelow, false)) if ci.is_some_and(|c| c.high < 0.0) => Tone::Loss,
        _ => Tone::Dim,
    };
    Cell::ci(ci, unit, why).tone(tone)
}

/// The comparisons table: every comparison over its matched tasks.
pub fn table(r: &Results) -> Table {
    let mut columns = comparison_columns(r);
    columns.insert(
        1,
        Column::text("with", "With (condition)").views(Views::of(&[View::Csv])),
    );
    columns.insert(
        2,
        Column::text("without", "Without (condition)").views(Views::of(&[View::Csv])),
    );
    columns.insert(
        4,
        Column::text("not_run_with", "Not run with").views(Views::of(&[View::Csv])),
    );
    columns.insert(
        5,
        Column::text("not_run_without", "Not run without").views(Views::of(&[View::Csv])),
    );
    columns.extend([
        Column::number("delta_pp_judged", "Δ, judged trials only (pp)")
            .short("Δ judged")
            .priority(3)
            .except(View::Terminal),
        Column::number("n_flaky", "Flaky tasks").views(Views::of(&[View::Csv])),
        Column::number("delta_pp_flaky", "Δ from flaky tasks (pp)").views(Views::of(&[View::Csv])),
        Column::number("improved", "Improved")
            .short("better")
            .priority(1),
        Column::number("degraded", "Degraded")
            .short("worse")
            .priority(1),
        Column::number("unchanged", "Unchanged")
            .short("same")
            .priority(2),
        Column::number("not_run", "Not run on one side")
            .short("not run")
            .priority(3)
            .csv(&[]),
        // The other views note it beside Δ.
        Column::text("drift", "Version drift").views(Views::of(&[View::Csv])),
    ]);
    let sequential = r.comparisons.iter().any(|c| c.sequential.is_some());
    if sequential {
        columns.extend([
            Column::text("verdict", "Sequential verdict")
                .short("verdict")
                .csv(&["verdict", "verdict_why"])
                .reason("verdict_undefined"),
            Column::number("naive_delta_pp", "Naive Δ (pp)")
                .short("naive Δ")
                .priority(2)
                .reason("naive_undefined"),
            Column::number("naive_ci", ci_title(r, ", naive, pp"))
                .short("naive CI")
                .priority(3)
                .csv(&[
                    "naive_ci_low_pp",
                    "naive_ci_high_pp",
                    "naive_ci_resamples",
                    "naive_ci_seed",
                ]),
        ]);
    }
    let mut t = Table::new("comparisons", "comparison", columns);
    for c in &r.comparisons {
        let stopped = c
            .sequential
            .as_ref()
            .filter(|v| v.answered() && v.adjusted_pp().is_some());
        let mut delta = match stopped {
            Some(v) => Cell::delta(v.adjusted_pp(), None).noted("adjusted"),
            None => Cell::delta(c.delta_pp, c.delta_undefined.as_deref()),
        };
        let mut notes = r.exposure.notes_of(&c.name).to_vec();
        notes.extend(c.drift_note());
        if !notes.is_empty() && c.delta_pp.is_some() {
            delta = delta.noted(notes.join("; "));
        }
        let mut cells = comparison_cells(c, delta);
        if let Some((lo, hi)) = stopped.and_then(|v| v.interval_pp()) {
            // The design's stage-wise interval in the CI's place (after name, tasks, with,
            // without and Δ, A/A noise).
            cells[6] = Cell::new(Value::Interval {
                low: lo,
                high: hi,
                unit: Unit::Pp,
            })
            .tone(if lo > 0.0 {
                Tone::Gain
            } else if hi < 0.0 {
                Tone::Loss
            } else {
                Tone::Dim
            });
        }
        cells.insert(1, Cell::text(&c.with));
        cells.insert(2, Cell::text(&c.without));
        cells.insert(4, Cell::new(Value::List(c.not_run_with.clone())));
        cells.insert(5, Cell::new(Value::List(c.not_run_without.clone())));
        cells.extend([
            Cell::delta(c.delta_pp_judged, None),
            Cell::count(c.n_flaky),
            Cell::new(Value::Pp(c.delta_pp_flaky)),
            Cell::count(c.improved).tone(Tone::Gain),
            Cell::count(c.degraded).tone(Tone::Loss),
            Cell::count(c.unchanged).tone(Tone::Dim),
            Cell::count(c.not_run_with.len() + c.not_run_without.len()),
            Cell::text(c.drift_note().unwrap_or_default()),
        ]);
        if sequential {
            cells.extend(sequential_cells(c, stopped.is_some()));
        }
        t.push(Row::new(cells));
    }
    t
}

/// The verdict of the design that judged `c` and, when its estimate took Δ's place
/// (`replaced`), the naive Δ and bootstrap CI beside it.
fn sequential_cells(c: &Comparison, replaced: bool) -> [Cell; 3] {
    use super::sequential::{verdict_label, why_text};
    let verdict = match &c.sequential {
        Some(v) => Cell::new(Value::Verdict {
            label: verdict_label(&v.look).into(),
            answer: format!(
                "{} stage {} of {}: {}",
                crate::sanitize::one_line(&v.label),
                v.look.stage,
                v.stages,
                why_text(&v.look)
            ),
        })
        .tone(if v.effect() { Tone::Gain } else { Tone::Dim }),
        None => Cell::undefined(Some("fixed design")),
    };
    if !replaced {
        let why = if c.sequential.is_some() {
            "the design goes on: Δ is the naive one"
        } else {
            "fixed design: Δ is the naive one"
        };
        return [
            verdict,
            Cell::undefined(Some(why)),
            Cell::undefined(Some(why)),
        ];
    }
    [
        verdict,
        Cell::delta(c.delta_pp, c.delta_undefined.as_deref()),
        ci_cell(c.delta_ci_pp, Unit::Pp, c.ci_undefined.as_deref()),
    ]
}

/// The section "Comparisons".
pub fn comparisons(r: &Results) -> Vec<Block> {
    if r.comparisons.is_empty() {
        return Vec::new();
    }
    vec![
        Block::heading(2, "Comparisons"),
        Block::table(table(r)),
        Block::text(
            "Each comparison is paired over the tasks both conditions ran (*Tasks compared*; `all N` when that is every task): the pass rates in the row, Δ, its CI (a paired bootstrap over those tasks), its standard error and g are over them, and improved / degraded / unchanged count them by their mean reward. A task only one side ran is not run on the other — listed under Task-level changes, never counted 0. *SE* is the standard error beside the bootstrap CI: of Δ, sd of the paired per-task differences / √n; of a pass rate, sd of the per-task means / √n — the clustered standard errors of Miller 2024 (arXiv:2411.00640), tasks as clusters; ±1.96·SE is the normal approximation of the same interval.",
        ),
        Block::text(noise_note(r)),
    ]
    .into_iter()
    .chain(
        r.comparisons
            .iter()
            .any(|c| c.sequential.is_some())
            .then(|| Block::text(
                "Where a group-sequential design judged a comparison, its verdict (*Sequential verdict*), its median-unbiased Δ (marked adjusted) and its 95% stage-wise-ordering interval are the comparison's: the naive Δ at a stop is biased away from 0 by the stopping and its bootstrap CI ignores it, so they are shown beside them as *naive*. See \"Sequential design\" below.",
            )),
    )
    .collect()
}

/// What *A/A noise* beside Δ means, with how it was drawn.
fn noise_note(r: &Results) -> String {
    format!(
        "*A/A noise* is the spread of Δ that trial noise alone gives — two runs of the same condition compared: each task's finished trials are split at random into two halves, Δ is taken between the halves as above (paired over tasks), each task's half difference scaled to full size (× √((2/n)/(1/⌊n/2⌋ + 1/⌈n/2⌉)), the halves holding half the trials), and ±h is the half-width of the central 95% of those Δs ({}); the two sides are pooled, (a + b)/√2 per split, over the compared tasks both ran with 2 or more finished trials. A Δ inside it is what rerunning one condition gives; it leaves out the sampling of tasks, which the CI holds. Undefined (—) with fewer than 2 finished trials per task. Its Monte Carlo band — where ±h would fall with another seed — is shown beside it when 1 pp wide or more (with few tasks the split Δs take few values and ±h can sit on a jump between two of them) and written to the CSV always; `skillscope plan` takes the same noise from the same trials.",
        crate::analysis::noise::NoiseMethod::from(&r.ci_method).describe()
    )
}

/// The columns of a pass@2-adaptive table; `group` names the grouping column when the rows are
/// per domain or difficulty.
fn adaptive_columns(r: &Results, group: Option<&str>) -> Vec<Column> {
    let mut cols = vec![Column::text("rounds", "Rounds").short("pass@2-adaptive")];
    if let Some(g) = group {
        cols.push(Column::text("group", g).short(g.to_lowercase()));
    }
    cols.extend([
        Column::number("n_tasks", "Tasks")
            .short("tasks")
            .priority(3),
        Column::number("pass1_round1", "pass@1, round 1")
            .short("pass@1 r1")
            .priority(2),
        Column::number("pass1_round2", "pass@1, round 2")
            .short("pass@1 r2")
            .priority(2),
        Column::number("pass2_adaptive", "pass@2-adaptive").short("pass@2-adapt"),
        Column::number("pass2", "pass@2 (round 1)")
            .short("pass@2")
            .reason("pass2_undefined"),
        Column::number("gain_pp", "Adaptive gain (pp)")
            .short("gain pp")
            .csv(&["gain_pp"]),
        Column::number("gain_ci", ci_title(r, ", pp"))
            .short("95% CI")
            .priority(1)
            .csv(&[
                "gain_ci_low_pp",
                "gain_ci_high_pp",
                "ci_resamples",
                "ci_seed",
            ])
            .reason("ci_undefined"),
    ]);
    cols
}

/// A pass@2-adaptive row's cells after its labels.
fn adaptive_cells(a: &Adaptive) -> Vec<Cell> {
    vec![
        Cell::count(a.n_tasks).tone(Tone::Dim),
        Cell::new(Value::Rate(a.pass1_round1)),
        Cell::new(Value::Rate(a.pass1_round2)),
        Cell::new(Value::Rate(a.pass2_adaptive)).tone(if a.scope == "overall" {
            Tone::Accent
        } else {
            Tone::Plain
        }),
        Cell::rate(a.pass2, a.pass2_undefined.as_deref()),
        Cell::delta(a.gain_pp, a.pass2_undefined.as_deref()),
        ci_cell(a.gain_ci_pp, Unit::Pp, a.gain_ci_undefined.as_deref()),
    ]
}

/// The pass@2-adaptive table of one scope (`overall`, `domain`, `difficulty`).
pub fn adaptive_table(r: &Results, scope: &str) -> Table {
    let group = match scope {
        "domain" => Some("Domain"),
        "difficulty" => Some("Difficulty"),
        _ => None,
    };
    let mut t = Table::new(
        &format!("adaptive_{scope}"),
        "pass@2-adaptive",
        adaptive_columns(r, group),
    )
    .views(Views::ALL.without(View::Csv));
    for a in r.adaptive.iter().filter(|a| a.scope == scope) {
        let mut cells = vec![Cell::text(&a.name).tone(if group.is_none() {
            Tone::Accent
        } else {
            Tone::Plain
        })];
        if group.is_some() {
            cells.push(Cell::text(&a.group));
        }
        cells.extend(adaptive_cells(a));
        t.push(Row::new(cells));
    }
    t
}

/// The section "Pass@2-adaptive" (experiments).
pub fn adaptive(r: &Results) -> Vec<Block> {
    if r.adaptive.is_empty() {
        return Vec::new();
    }
    let rule = md_cell(&r.success_description);
    let mut out = vec![
        Block::heading(2, "Pass@2-adaptive"),
        Block::text(format!(
            "The plan's key metric: does a retry informed by learning beat a plain second try? Per task, pass@2-adaptive = 1 − (1 − p₁)(1 − p₂) with p₁, p₂ its pass@1 in round 1 and round 2 — the share of its planned trials that succeeded ({rule}; round-2 skills are learned from all of round 1, so a round-2 trial does not depend on any one round-1 trial); pass@2 is round 1's own chance of succeeding in two independent tries, the unbiased estimator 1 − C(n − c, 2) / C(n, 2) from its n planned trials with c successes (Chen et al. 2021, eq. 1) — undefined (—) with fewer than 2 trials per task, and so is the gain. Both are averaged over the tasks both rounds ran; the adaptive gain is their difference, with a paired bootstrap CI over tasks."
        )),
    ];
    for scope in ["overall", "domain", "difficulty"] {
        if !r.adaptive.iter().any(|a| a.scope == scope) {
            continue;
        }
        if scope != "overall" {
            out.push(Block::heading(3, format!("By {scope}")));
        }
        out.push(Block::table(adaptive_table(r, scope)));
    }
    out
}

/// Held-out transfer: the split, then same-task and held-out results side by side (experiments
/// with a split).
pub fn held_out(r: &Results) -> Vec<Block> {
    let Some(h) = &r.held_out else {
        return Vec::new();
    };
    let s = &h.split;
    let mut out = vec![
        Block::heading(2, "Held-out transfer"),
        Block::text(format!(
            "Learning read only the train tasks' trials. Split: {} by domain and difficulty, test fraction {}, seed {}; round 2 ran {}.",
            md_cell(&s.method),
            s.test_fraction,
            s.seed,
            if s.round2 == "all" {
                "the train and the test tasks"
            } else {
                "the test tasks only"
            }
        )),
        Block::Bullets {
            items: vec![
                format!(
                    "Train ({}): {}",
                    s.train.len(),
                    md_cell(&s.train.join(", "))
                ),
                format!(
                    "Test, held out ({}): {}",
                    s.test.len(),
                    md_cell(&s.test.join(", "))
                ),
            ],
        },
    ];
    for sub in &h.subsets {
        let what = if sub.name == "held-out" {
            "skills learned from other tasks"
        } else {
            "skills learned from these very tasks (an upper bound)"
        };
        out.push(Block::heading(
            3,
            format!("{} ({} tasks: {what})", md_cell(&sub.name), sub.tasks.len()),
        ));
        let mut conds = Table::new(
            &format!("held_out_{}_conditions", sub.name),
            "condition",
            vec![
                Column::text("label", "Condition").short("condition"),
                Column::number("pass_rate", "Pass rate").short("pass rate"),
                Column::number("ci", ci_title(r, "")).short("95% CI"),
                Column::number("se", "SE (%)").short("SE").priority(2),
                Column::number("n_tasks", "Tasks")
                    .short("tasks")
                    .priority(1),
            ],
        )
        .views(Views::ALL.without(View::Csv));
        for c in &sub.conditions {
            conds.push(Row::new(vec![
                Cell::text(&c.label).tone(Tone::Accent),
                Cell::new(Value::Rate(c.pass_rate)).tone(Tone::Accent),
                Cell::ci(c.ci, Unit::Percent, c.ci_undefined.as_deref()),
                Cell::se(c.se, Unit::Percent),
                Cell::count(c.n_tasks),
            ]));
        }
        out.push(Block::table(conds));
        if !sub.comparisons.is_empty() {
            let mut t = Table::new(
                &format!("held_out_{}_comparisons", sub.name),
                "comparison",
                comparison_columns(r),
            )
            .views(Views::ALL.without(View::Csv));
            for c in &sub.comparisons {
                t.push(Row::new(comparison_cells(
                    c,
                    Cell::delta(c.delta_pp, c.delta_undefined.as_deref()),
                )));
            }
            out.push(Block::table(t));
        }
        if !sub.adaptive.is_empty() {
            let mut t = Table::new(
                &format!("held_out_{}_adaptive", sub.name),
                "pass@2-adaptive",
                vec![
                    Column::text("rounds", "Rounds").short("pass@2-adaptive"),
                    Column::number("pass2_adaptive", "pass@2-adaptive").short("pass@2-adapt"),
                    Column::number("pass2", "pass@2 (round 1)").short("pass@2"),
                    Column::number("gain_pp", "Adaptive gain (pp)").short("gain pp"),
                    Column::number("gain_ci", ci_title(r, ", pp"))
                        .short("95% CI")
                        .priority(1),
                ],
            )
            .views(Views::ALL.without(View::Csv));
            for a in &sub.adaptive {
                t.push(Row::new(vec![
                    Cell::text(&a.name),
                    Cell::new(Value::Rate(a.pass2_adaptive)),
                    Cell::rate(a.pass2, a.pass2_undefined.as_deref()),
                    Cell::delta(a.gain_pp, a.pass2_undefined.as_deref()),
                    ci_cell(a.gain_ci_pp, Unit::Pp, a.gain_ci_undefined.as_deref()),
                ]));
            }
            out.push(Block::table(t));
        }
    }
    out
}

/// The section "Beside the paper".
pub fn paper(r: &Results) -> Vec<Block> {
    let mut out = vec![Block::heading(2, "Beside the paper")];
    if r.paper.is_empty() {
        out.push(Block::text(
            "No run matches a harness and model of the paper's main table, so there is nothing to put beside it.",
        ));
        return out;
    }
    let mut t = Table::new(
        "paper",
        "paper",
        vec![
            Column::text("run", "Run"),
            Column::text("paper_version", "Paper"),
            Column::text("harness", "Harness"),
            Column::text("model", "Model"),
            Column::text("metric", "Metric"),
            Column::text("unit", "Unit").views(Views::of(&[View::Csv])),
            Column::number("paper_value", "Paper"),
            Column::number("paper_ci95", "±95%"),
            Column::number("this_run", "This run"),
            Column::number("this_run_tasks", "Over tasks"),
            Column::number("run_tasks", "Tasks of the run").views(Views::of(&[View::Csv])),
        ],
    )
    .views(Views::REPORT);
    for p in &r.paper {
        let value = |v: Option<f64>| match v {
            Some(v) if p.paper.unit == "pct" => Cell::new(Value::Percent(v)),
            Some(v) => Cell::new(Value::Decimal {
                value: v,
                places: 1,
            }),
            None => Cell::undefined(None),
        };
        let mut row = Row::new(vec![
            Cell::text(&p.run),
            Cell::text(&p.paper.version),
            Cell::text(&p.paper.harness),
            Cell::text(&p.paper.model),
            Cell::text(&p.paper.metric),
            Cell::text(&p.paper.unit),
            value(p.paper.value),
            p.paper.ci95.map_or_else(
                || Cell::undefined(None),
                |v| {
                    Cell::new(Value::Decimal {
                        value: v,
                        places: 1,
                    })
                },
            ),
            value(p.ours),
            p.n_tasks.map_or_else(
                || Cell::undefined(None),
                |n| {
                    Cell::new(Value::TasksCompared {
                        n,
                        total: p.n_tasks_total,
                    })
                },
            ),
            Cell::count(p.n_tasks_total),
        ]);
        // Rows without a number on either side are written to CSV only.
        if p.paper.value.is_none() && p.ours.is_none() {
            row = row.views(Views::of(&[View::Csv]));
        }
        t.push(row);
    }
    out.push(Block::table(t));
    out.push(Block::text(
        "Paper values are percent (g × 100 for normalized gain). `v1` is the February 2026 paper; `v4` rows, beside the results registry's runs, are its later aggregates over the registry's configurations (macro averages of each configuration's pass rates, the mean Δ and mean g, the range of Δ), computed here from those runs. This run's numbers are over the tasks both of its compared conditions ran (no-skills and curated, or no-skills and self-generated): a task one of them did not run is left out, not counted 0.",
    ));
    out
}

/// The section "Flaky tasks": per condition how many, per comparison how much of Δ rests on
/// them, and which.
pub fn flaky(r: &Results) -> Vec<Block> {
    let mut out = vec![
        Block::heading(2, "Flaky tasks"),
        Block::text(format!(
            "A task is flaky under a condition when its trials disagree: some succeed ({}), some with a verdict do not.",
            md_cell(&r.success_description)
        )),
    ];
    let mut per_condition = Table::new(
        "flaky_per_condition",
        "condition",
        vec![
            Column::text("condition", "Condition"),
            Column::number("flaky_tasks", "Flaky tasks"),
        ],
    )
    .views(Views::DOCUMENT);
    for c in &r.conditions {
        let n = r.flaky.iter().filter(|f| f.condition == c.label).count();
        per_condition.push(Row::new(vec![Cell::text(&c.label), Cell::count(n)]));
    }
    out.push(Block::table(per_condition));
    if !r.comparisons.is_empty() {
        let mut t = Table::new(
            "flaky_per_comparison",
            "comparison",
            vec![
                Column::text("comparison", "Comparison"),
                Column::number("delta_pp", "Δ (pp)"),
                Column::number("n_flaky", "Tasks flaky in either condition"),
                Column::number("delta_pp_flaky", "Δ from them (pp)"),
            ],
        )
        .views(Views::DOCUMENT);
        for c in &r.comparisons {
            t.push(Row::new(vec![
                Cell::text(&c.name),
                Cell::delta(c.delta_pp, None),
                Cell::count(c.n_flaky),
                Cell::delta(Some(c.delta_pp_flaky), None),
            ]));
        }
        out.push(Block::table(t));
        out.push(Block::text(
            "Δ from them: the flaky tasks' per-task differences summed over the compared tasks — the part of Δ that rests on tasks whose outcome a rerun may flip.",
        ));
    }
    let mut list = Table::new(
        "flaky",
        "flaky task",
        vec![
            Column::text("condition", "Condition"),
            Column::text("task", "Task"),
            Column::number("passed", "Passed"),
            Column::number("failed", "Failed"),
        ],
    )
    .views(Views::REPORT);
    for f in &r.flaky {
        list.push(Row::new(vec![
            Cell::text(&f.condition),
            Cell::text(&f.task),
            Cell::count(f.passed),
            Cell::count(f.failed),
        ]));
    }
    if r.flaky.is_empty() {
        // The CSV file is written (header only); the documents have nothing to list.
        list = list.views(Views::of(&[View::Csv]));
    }
    out.push(Block::table(list));
    out
}

/// The section "Task-level changes": per comparison the tasks that improved, degraded, or ran
/// on one side only.
pub fn task_changes(r: &Results) -> Vec<Block> {
    if r.comparisons.is_empty() {
        return Vec::new();
    }
    let mut out = vec![Block::heading(2, "Task-level changes")];
    for (k, c) in r.comparisons.iter().enumerate() {
        let not_run = c.not_run_with.len() + c.not_run_without.len();
        out.push(Block::heading(3, md_cell(&c.name)));
        out.push(Block::text(format!(
            "{} improved, {} degraded, {} unchanged{}.",
            c.improved,
            c.degraded,
            c.unchanged,
            if not_run > 0 {
                format!("; {not_run} not run on one side (not compared)")
            } else {
                String::new()
            }
        )));
        out.push(Block::Chart {
            kind: ChartKind::TaskDeltas(c.name.clone()),
        });
        for (change, what, key) in [
            (Change::Improved, "Improved", "improved"),
            (Change::Degraded, "Degraded", "degraded"),
            (
                Change::NotRun,
                "Not run on one side (no comparison; never counted 0)",
                "not_run",
            ),
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
            let mut columns = vec![
                Column::text("task", "Task"),
                Column::text("domain", "Domain"),
                Column::text("difficulty", "Difficulty"),
                Column::number("without", "Without"),
                Column::number("with", "With"),
            ];
            if change != Change::NotRun {
                columns.push(Column::number("delta_pp", "Δ (pp)"));
            }
            let mut t = Table::new(&format!("task_changes_{}_{key}", k + 1), "task", columns)
                .views(Views::DOCUMENT);
            let reward = |v: Option<f64>| {
                v.map_or_else(
                    || Cell::undefined(Some("not run")),
                    |v| Cell::new(Value::Reward(v)),
                )
            };
            for x in tasks {
                let mut cells = vec![
                    Cell::text(&x.task),
                    Cell::text(&x.domain),
                    Cell::text(&x.difficulty),
                    reward(x.without),
                    reward(x.with),
                ];
                if change != Change::NotRun {
                    cells.push(Cell::delta(x.delta_pp, None));
                }
                t.push(Row::new(cells));
            }
            out.push(Block::text(format!("{what}:")));
            out.push(Block::table(t));
        }
    }
    out
}

/// The CSV files of this family that have no table in the documents: `task_changes.csv` (every
/// task of every comparison), `held_out.csv` and `pass_at_2.csv` (every scope in one file).
pub fn machine_tables(r: &Results) -> Vec<Block> {
    let csv = Views::of(&[View::Csv]);
    let mut changes = Table::new(
        "task_changes",
        "task",
        vec![
            Column::text("comparison", "Comparison"),
            Column::text("task", "Task"),
            Column::text("domain", "Domain"),
            Column::text("difficulty", "Difficulty"),
            Column::number("without", "Without"),
            Column::number("with", "With"),
            Column::number("delta_pp", "Δ (pp)"),
            Column::text("change", "Change"),
        ],
    )
    .views(csv);
    for t in &r.task_deltas {
        let reward = |v: Option<f64>| Cell::new(v.map_or(Value::Undefined(None), Value::Reward));
        changes.push(Row::new(vec![
            Cell::text(&t.comparison),
            Cell::text(&t.task),
            Cell::text(&t.domain),
            Cell::text(&t.difficulty),
            reward(t.without),
            reward(t.with),
            Cell::new(t.delta_pp.map_or(Value::Undefined(None), Value::Pp)),
            Cell::text(match t.change {
                Change::Improved => "improved",
                Change::Degraded => "degraded",
                Change::Unchanged => "unchanged",
                Change::NotRun => "not_run",
            }),
        ]));
    }
    let mut out = vec![Block::table(changes)];
    let mut pass2 = Table::new(
        "pass_at_2",
        "pass@2-adaptive",
        adaptive_columns(r, Some("group")),
    )
    .views(csv);
    pass2
        .columns
        .insert(1, Column::text("scope", "Scope").views(csv));
    pass2
        .columns
        .push(Column::number("pass_threshold", "Pass threshold").views(csv));
    for a in &r.adaptive {
        let mut cells = vec![
            Cell::text(&a.name),
            Cell::text(&a.scope),
            Cell::text(&a.group),
        ];
        cells.extend(adaptive_cells(a));
        cells.push(Cell::new(Value::Number(r.success.threshold)));
        pass2.push(Row::new(cells));
    }
    out.push(Block::table(pass2));
    if let Some(h) = &r.held_out {
        let mut t = Table::new(
            "held_out",
            "held-out",
            vec![
                Column::text("subset", "Subset"),
                Column::text("kind", "Kind"),
                Column::text("label", "Label"),
                Column::text("baseline", "Baseline"),
                Column::number("value", "Value"),
                Column::number("ci", "CI").csv(&["ci_low", "ci_high"]),
                Column::number("g", "g"),
                Column::number("n_tasks", "Tasks"),
            ],
        )
        .views(csv);
        let ci = |c: Option<crate::analysis::ci::Ci>| Cell::ci(c, Unit::Pp, None);
        let opt = |v: Option<f64>| Cell::new(v.map_or(Value::Undefined(None), Value::Number));
        for sub in &h.subsets {
            for c in &sub.conditions {
                t.push(Row::new(vec![
                    Cell::text(&sub.name),
                    Cell::text("condition"),
                    Cell::text(&c.label),
                    Cell::text(""),
                    Cell::new(Value::Rate(c.pass_rate)),
                    ci(c.ci),
                    Cell::text(""),
                    Cell::count(c.n_tasks),
                ]));
            }
            for c in &sub.comparisons {
                t.push(Row::new(vec![
                    Cell::text(&sub.name),
                    Cell::text("comparison"),
                    Cell::text(&c.with),
                    Cell::text(&c.without),
                    opt(c.delta_pp),
                    ci(c.delta_ci_pp),
                    opt(c.g),
                    Cell::count(c.n_tasks),
                ]));
            }
            for a in &sub.adaptive {
                t.push(Row::new(vec![
                    Cell::text(&sub.name),
                    Cell::text("pass@2-adaptive gain"),
                    Cell::text(&a.name),
                    Cell::text(""),
                    opt(a.gain_pp),
                    ci(a.gain_ci_pp),
                    Cell::text(""),
                    Cell::count(a.n_tasks),
                ]));
            }
        }
        out.push(Block::table(t));
    }
    out
}
