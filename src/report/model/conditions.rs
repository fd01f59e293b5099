//! Per condition: the Method D pass rate with its CI and SE, pass@1, trials, infrastructure
//! failures and Method D over judged trials (the conditions table every renderer shows, with Δ
//! and g against the baseline where a screen shows one table only); the failure modes and the
//! plan's failure categories, and how they shift between rounds; per task (CSV).

use super::{Block, Cell, Column, Row, Table, Tone, Unit, Value, View, Views, ci_title};
use crate::analysis::failure_category::FailureCategory;
use crate::analysis::results::{ConditionResult, FailureMode, Results};
use crate::report::charts::ChartKind;
use crate::report::md_cell;
use crate::skillsbench::condition::condition_label;

/// The CSV fields of an A/A noise column, the conditions' and the comparisons' alike: the spread,
/// its random splits and seed, and its Monte Carlo band.
pub(super) const AA_NOISE_CSV: [&str; 5] = [
    "aa_noise_pp",
    "aa_noise_splits",
    "aa_noise_seed",
    "aa_noise_band_low_pp",
    "aa_noise_band_high_pp",
];

/// The CSV name of a failure mode (`wrong_output`).
pub fn mode_key(m: FailureMode) -> String {
    serde_json::to_value(m)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

/// The screens' short header of a failure mode (`wrong output` is `fail` beside `passed`).
fn mode_short(m: FailureMode) -> (&'static str, &'static str) {
    match m {
        FailureMode::WrongOutput => ("fail", "fail"),
        FailureMode::AgentTimeout => ("agent-timeout", "a-tmo"),
        FailureMode::VerifierTimeout => ("verifier-timeout", "v-tmo"),
        FailureMode::RuntimeError => ("runtime-error", "r-err"),
        FailureMode::BuildError => ("build-error", "b-err"),
        FailureMode::NoReward => ("no-reward", "no-rwd"),
        FailureMode::ProviderError => ("provider-error", "p-err"),
        FailureMode::NotRun => ("not-run", "n/run"),
    }
}

/// The conditions table: one row per condition.
///
/// Columns in every renderer unless said: label, run (report files), skills (the condition; on
/// screens only in an experiment, where labels are A, B, …), pass rate, its CI, SE (report
/// files), pass@1, tasks, done / planned, passed, of which after an agent timeout, infrastructure
/// failures, Method D over judged trials, aggregated (CSV), partial credit, tasks that flip and
/// the A/A noise (not the terminal), one column per failure mode (CSV; screens show the modes
/// that occurred), then Δ, its A/A noise and g against the baseline of the condition's own run
/// (the terminal's one table; the run's no-skills condition, in an experiment A in round 1 and
/// A′ in round 2, so each round reads as `status` shows its run).
pub fn table(r: &Results) -> Table {
    let rule = &r.success_description;
    let screens = Views::of(&[View::Terminal, View::Dashboard]);
    let experiment = r.experiment.is_some();
    let unfinished = r.conditions.iter().any(|c| c.done < c.planned);
    let mut columns = vec![
        Column::text("label", "Condition")
            .short("condition")
            .abbr("cond"),
        Column::text("run", "Run").views(Views::REPORT),
        Column::text("condition", "Skills")
            .short("skills")
            .priority(4)
            .views(if experiment {
                Views::ALL
            } else {
                Views::REPORT
            }),
        Column::number("pass_rate", "Pass rate (Method D)").short("pass rate"),
        // The terminal's one table stays narrow: its CI is in the report and the dashboard.
        Column::number("ci", ci_title(r, ""))
            .short("95% CI")
            .csv(&["ci_low", "ci_high", "ci_resamples", "ci_seed"])
            .reason("ci_undefined")
            .except(View::Terminal),
        Column::number("se", "SE (%)").views(Views::REPORT),
        Column::number("pass_at_1", format!("pass@1 ({rule})"))
            .short("pass@1")
            .priority(1)
            .except(View::Terminal),
        Column::number("pass_threshold", "Pass threshold").views(Views::of(&[View::Csv])),
        Column::number("n_tasks", "Tasks")
            .short("tasks")
            .abbr("n")
            .priority(2),
        Column::number("done", "Done / planned")
            .short("done/planned")
            .abbr("done")
            .priority(1)
            .csv(&["done", "planned"]),
        Column::number("passed", format!("Passed ({rule})"))
            .short("passed")
            .priority(2)
            .except(View::Dashboard),
        Column::number("timeout_passed", "of which after an agent timeout")
            .short("t/o passed")
            .abbr("t/o+r")
            .priority(3)
            .views(if r.conditions.iter().any(|c| c.timeout_passed > 0) {
                Views::ALL
            } else {
                Views::REPORT
            }),
        Column::number("infrastructure_failures", "Infrastructure failures")
            .short("infra")
            .priority(1),
        Column::number("method_d_judged_trials", "Method D over judged trials only")
            .short("judged")
            .priority(2)
            .views(if unfinished {
                Views::ALL
            } else {
                Views::ALL.without(View::Terminal)
            }),
        Column::text("aggregated", "Aggregated").views(Views::of(&[View::Csv])),
        Column::number("partial", "Failed with partial credit")
            .short("partial")
            .abbr("part")
            .priority(3)
            .views(if r.conditions.iter().any(|c| c.partial > 0) {
                Views::of(&[View::Csv, View::Terminal, View::Dashboard])
            } else {
                Views::of(&[View::Csv])
            }),
        Column::number("flip_rate", "Tasks that flip (of those with 2+ verdicts)")
            .short("flips")
            .priority(5)
            .csv(&["flipped_tasks", "flip_tasks"])
            .reason("flip_undefined")
            .except(View::Terminal),
        Column::number("aa_noise", "A/A noise (pp)")
            .short("A/A ±pp")
            .abbr("A/A")
            .priority(4)
            .csv(&AA_NOISE_CSV)
            .reason("aa_noise_undefined")
            .except(View::Terminal),
    ];
    // One column per failure mode: CSV always; screens the modes that occurred.
    let modes_seen: Vec<FailureMode> = FailureMode::ALL
        .into_iter()
        .filter(|m| {
            r.conditions
                .iter()
                .any(|c| c.failures.get(m).is_some_and(|n| *n > 0))
        })
        .collect();
    for m in FailureMode::ALL {
        let (short, abbr) = mode_short(m);
        let key = mode_key(m);
        let on_screens = match m {
            // The dashboard shows not-run beside the rates; the terminal every mode that occurred.
            FailureMode::NotRun if modes_seen.contains(&m) => screens,
            FailureMode::NotRun => Views::of(&[View::Dashboard]),
            _ if modes_seen.contains(&m) => Views::of(&[View::Terminal]),
            _ => Views::NONE,
        };
        columns.push(
            Column::number(&key, m.label())
                .short(short)
                .abbr(abbr)
                .priority(3)
                .views(on_screens.and(View::Csv)),
        );
    }
    columns.extend([
        Column::number("delta_pp", "Δ (pp) against the baseline")
            .short("Δ pp")
            .views(Views::of(&[View::Terminal])),
        Column::number("delta_aa_noise", "A/A noise of that Δ (pp)")
            .short("A/A ±pp")
            .abbr("A/A")
            .views(Views::of(&[View::Terminal])),
        Column::number("g", "g against the baseline")
            .short("g")
            .views(Views::of(&[View::Terminal])),
    ]);
    let mut t = Table::new("conditions", "condition", columns);
    for c in &r.conditions {
        t.push(row(r, c));
    }
    t
}

/// One condition's row of [`table`].
fn row(r: &Results, c: &ConditionResult) -> Row {
    let infra = c.infrastructure();
    // A reused baseline's conditions say so (`--baseline-from`; the notes say from where).
    let run = match &r.baseline {
        Some(b) if b.run == c.run => Cell::text(&c.run).noted("reused baseline"),
        _ => Cell::text(&c.run),
    };
    let mut cells = vec![
        Cell::text(&c.label).tone(Tone::Accent),
        run,
        Cell::text(condition_label(&c.condition)).tone(Tone::Dim),
        Cell::new(Value::Rate(c.pass_rate)).tone(Tone::Accent),
        Cell::ci(c.ci, Unit::Percent, c.ci_undefined.as_deref()),
        Cell::se(c.se, Unit::Percent),
        Cell::new(Value::Rate(c.pass_at_1)),
        Cell::new(Value::Number(r.success.threshold)),
        Cell::count(c.n_tasks),
        Cell::new(Value::Of {
            n: c.done as u64,
            total: c.planned as u64,
        })
        .tone(if c.done < c.planned {
            Tone::Running
        } else {
            Tone::Plain
        }),
        Cell::count(c.passed),
        Cell::count(c.timeout_passed).tone(zero_dim(c.timeout_passed)),
        Cell::count(infra).tone(if infra > 0 { Tone::Warn } else { Tone::Dim }),
        Cell::rate(c.pass_rate_judged, None),
        Cell::text(c.aggregated.to_string()),
        Cell::count(c.partial).tone(zero_dim(c.partial)),
        match c.flip.why_undefined() {
            None => Cell::new(Value::Of {
                n: c.flip.flipped as u64,
                total: c.flip.tasks as u64,
            }),
            why => Cell::undefined(why.as_deref()),
        },
        Cell::spread(&c.aa_noise),
    ];
    for m in FailureMode::ALL {
        let n = c.failures.get(&m).copied().unwrap_or(0);
        cells.push(Cell::count(n).tone(match (n, m.is_infrastructure()) {
            (0, _) => Tone::Dim,
            (_, true) => Tone::Warn,
            _ => Tone::Plain,
        }));
    }
    // Against the baseline of its own run — what `status` shows for that run: a run's
    // no-skills condition (else its first); in an experiment, A for round 1 and A′ for round 2.
    // The comparisons across runs (B′ vs B, A′ vs A) have a table of their own.
    let base = r.comparisons.iter().find(|x| {
        x.with == c.label
            && r.conditions
                .iter()
                .any(|b| b.label == x.without && b.run == c.run)
    });
    match base {
        Some(x) => {
            let mut d = Cell::delta(x.delta_pp, x.delta_undefined.as_deref());
            if x.is_partial() {
                d = d.noted(crate::format::count(x.n_tasks, "task", "tasks"));
            }
            cells.push(d);
            cells.push(Cell::spread(&x.aa_noise));
            cells.push(Cell::gain(x.g, x.g_undefined.as_deref()));
        }
        None => {
            cells.push(Cell::undefined(None));
            cells.push(Cell::undefined(None));
            cells.push(Cell::undefined(None));
        }
    }
    Row::new(cells)
}

/// Dim for a zero count.
fn zero_dim(n: usize) -> Tone {
    if n == 0 { Tone::Dim } else { Tone::Plain }
}

/// The section "Pass rate per condition": chart, table and what its columns mean.
pub fn conditions(r: &Results) -> Vec<Block> {
    let rule = md_cell(&r.success_description);
    vec![
        Block::heading(2, "Pass rate per condition"),
        Block::Chart {
            kind: ChartKind::PassRate,
        },
        Block::table(table(r)),
        Block::text(format!(
            "Method D is the mean reward (partial credit counts fractionally); pass@1 is the share of planned trials that succeeded ({rule}), per task, then the mean over tasks — where they differ, partial rewards or the threshold make the difference. *Passed* counts successes whatever the agent's outcome; *of which after an agent timeout* are agent timeouts whose verifier still gave the reward. Infrastructure failures are trials that ended without a verdict: no reward, a build error or a runtime error. Method D counts them 0 (the paper's rule); the last column is Method D with them left out — a mean of per-task means over each task's judged trials, not a share of trials. *Tasks that flip*: the tasks whose trials disagree (some succeed, some with a verdict fail) of the tasks with 2 or more such trials — the flip rate, `2/8` = 25%. *A/A noise*: the spread (±, central 95%) of Δ between two random halves of the condition's own trials, scaled to a comparison of two full runs ({}) — what a Δ against itself would show; see Comparisons.",
            crate::analysis::noise::NoiseMethod::from(&r.ci_method).describe()
        )),
    ]
}

/// The section "Failure modes": per condition the trials of each mode that occurred, the plan's
/// failure categories of the judged failures, and how both shift between rounds.
pub fn failures(r: &Results) -> Vec<Block> {
    let mut out = vec![
        Block::heading(2, "Failure modes"),
        Block::Chart {
            kind: ChartKind::Failures,
        },
        Block::table(modes_table(r)),
        Block::text(
            "Wrong output = the verifier ran and the output failed it. Timeouts are verdicts on the agent; build errors, runtime errors and missing rewards are infrastructure.",
        ),
        Block::heading(3, "Failure categories"),
        Block::text(
            "The plan's four categories for every judged failure (wrong output or a timeout), decided from the outcome, the trajectory and the test report by the rules in the docs/scoring.md (\"Failure categories\"): timeout (agent or verifier overran), execution (the agent's own commands failed and it did not recover, or it crashed), coherence (it stopped without doing what was asked), verification (outputs produced and failed the verifier's assertions); unclassified when what the trial left does not decide it. Infrastructure failures are not judged and stay in the table above.",
        ),
        Block::table(categories_table(r)),
    ];
    let categories: Vec<Shift> = r
        .category_shifts
        .iter()
        .map(|s| {
            (
                s.name.as_str(),
                s.category.as_str(),
                s.from_rate,
                s.to_rate,
                s.delta_pp,
            )
        })
        .collect();
    out.extend(shift(
        "category_shifts",
        "categories",
        "Failure category",
        &categories,
    ));
    let modes: Vec<Shift> = r
        .failure_shifts
        .iter()
        .filter(|s| s.from_rate > 0.0 || s.to_rate > 0.0)
        .map(|s| {
            (
                s.name.as_str(),
                s.mode.label(),
                s.from_rate,
                s.to_rate,
                s.delta_pp,
            )
        })
        .collect();
    out.extend(shift("mode_shifts", "modes", "Failure mode", &modes));
    out
}

/// Per condition: planned, passed and the trials of each failure mode that occurred.
pub fn modes_table(r: &Results) -> Table {
    let modes: Vec<FailureMode> = FailureMode::ALL
        .into_iter()
        .filter(|m| r.conditions.iter().any(|c| c.failures.contains_key(m)))
        .collect();
    let mut columns = vec![
        Column::text("label", "Condition").short("condition"),
        Column::number("planned", "Planned").short("planned"),
        Column::number("passed", "Passed").short("passed"),
    ];
    for m in &modes {
        let title = if m.is_infrastructure() {
            format!("{} (infra)", m.label())
        } else {
            m.label().to_string()
        };
        columns.push(Column::number(&mode_key(*m), title).priority(1));
    }
    let mut t = Table::new("failure_modes", "failure mode (trials)", columns)
        .views(Views::ALL.without(View::Csv).without(View::Terminal));
    for c in &r.conditions {
        let mut cells = vec![
            Cell::text(&c.label).tone(Tone::Accent),
            Cell::count(c.planned),
            Cell::count(c.passed),
        ];
        for m in &modes {
            let n = c.failures.get(m).copied().unwrap_or(0);
            cells.push(Cell::count(n).tone(match (n, m.is_infrastructure()) {
                (0, _) => Tone::Dim,
                (_, true) => Tone::Warn,
                _ => Tone::Plain,
            }));
        }
        t.push(Row::new(cells));
    }
    t
}

/// Per condition: judged failures and each failure category.
pub fn categories_table(r: &Results) -> Table {
    let mut columns = vec![
        Column::text("label", "Condition").short("condition"),
        Column::number("judged_failures", "Judged failures").short("judged failures"),
    ];
    columns.extend(
        FailureCategory::ALL
            .iter()
            .map(|k| Column::number(k.as_str(), k.as_str()).priority(1)),
    );
    let views = if r.conditions.iter().all(|c| c.categories.is_empty()) {
        Views::DOCUMENT
    } else {
        Views::ALL.without(View::Csv).without(View::Terminal)
    };
    let mut t = Table::new("failure_categories_wide", "failure category", columns).views(views);
    for c in &r.conditions {
        let mut cells = vec![
            Cell::text(&c.label).tone(Tone::Accent),
            Cell::count(c.categories.values().sum::<usize>()),
        ];
        cells.extend(FailureCategory::ALL.iter().map(|k| {
            let n = c.categories.get(k).copied().unwrap_or(0);
            Cell::count(n).tone(zero_dim(n))
        }));
        t.push(Row::new(cells));
    }
    t
}

/// A shift row: rounds, what, round-1 share, round-2 share, Δ pp.
type Shift<'a> = (&'a str, &'a str, f64, f64, f64);

/// "How failure modes (categories) shift between rounds", when there is a shift to show.
fn shift(name: &str, what: &str, column: &str, rows: &[Shift]) -> Vec<Block> {
    if rows.is_empty() {
        return Vec::new();
    }
    let mut t = Table::new(
        name,
        what,
        vec![
            Column::text("rounds", "Rounds"),
            Column::text("what", column),
            Column::number("from_rate", "Round 1"),
            Column::number("to_rate", "Round 2"),
            Column::number("delta_pp", "Δ (pp)"),
        ],
    )
    .views(Views::DOCUMENT);
    for (name, label, from, to, delta) in rows {
        t.push(Row::new(vec![
            Cell::text(*name),
            Cell::text(*label),
            Cell::new(Value::Rate(*from)),
            Cell::new(Value::Rate(*to)),
            Cell::delta(Some(*delta), None),
        ]));
    }
    vec![
        Block::heading(3, format!("How failure {what} shift between rounds")),
        Block::text("Share of planned trials."),
        Block::table(t),
    ]
}

/// The CSV files of this family that have no table in the documents: `per_task.csv`,
/// `failures.csv`, `failure_categories.csv` and `failure_shifts.csv` (long forms: one row per
/// condition and mode, category or shift).
pub fn machine_tables(r: &Results) -> Vec<Block> {
    let csv = Views::of(&[View::Csv]);
    let mut per_task = Table::new(
        "per_task",
        "task",
        vec![
            Column::text("task", "Task"),
            Column::text("domain", "Domain"),
            Column::text("difficulty", "Difficulty"),
            Column::text("condition", "Condition"),
            Column::number("mean_reward", "Mean reward"),
            Column::number("pass_at_1", "pass@1"),
            Column::number("planned", "Planned"),
            Column::number("passed", "Passed"),
            Column::number("judged", "Judged"),
            Column::number("judged_failed", "Judged failed"),
        ],
    )
    .views(csv);
    for (i, t) in r.tasks.iter().enumerate() {
        for c in &r.conditions {
            per_task.push(Row::new(vec![
                Cell::text(&t.id),
                Cell::text(&t.domain),
                Cell::text(&t.difficulty),
                Cell::text(&c.label),
                Cell::new(c.per_task[i].map_or(Value::Undefined(None), Value::Reward)),
                Cell::new(
                    c.pass_at_1_of(i)
                        .map_or(Value::Undefined(None), Value::Rate),
                ),
                Cell::count(c.per_task_planned[i] as usize),
                Cell::count(c.per_task_passed[i]),
                Cell::count(c.per_task_judged[i]),
                Cell::count(c.per_task_judged_failed[i]),
            ]));
        }
    }
    let mut failures = Table::new(
        "failures",
        "failure mode",
        vec![
            Column::text("condition", "Condition"),
            Column::text("mode", "Mode"),
            Column::number("trials", "Trials"),
            Column::text("infrastructure", "Infrastructure"),
        ],
    )
    .views(csv);
    for c in &r.conditions {
        for (m, n) in &c.failures {
            failures.push(Row::new(vec![
                Cell::text(&c.label),
                Cell::text(m.label()),
                Cell::count(*n),
                Cell::text(m.is_infrastructure().to_string()),
            ]));
        }
    }
    let mut categories = Table::new(
        "failure_categories",
        "failure category",
        vec![
            Column::text("condition", "Condition"),
            Column::text("category", "Category"),
            Column::number("trials", "Trials"),
        ],
    )
    .views(csv);
    for c in &r.conditions {
        for k in FailureCategory::ALL {
            categories.push(Row::new(vec![
                Cell::text(&c.label),
                Cell::text(k.as_str()),
                Cell::count(c.categories.get(&k).copied().unwrap_or(0)),
            ]));
        }
    }
    let mut shifts = Table::new(
        "failure_shifts",
        "shift",
        vec![
            Column::text("rounds", "Rounds"),
            Column::text("kind", "Kind"),
            Column::text("mode", "Mode"),
            Column::number("from_rate", "From"),
            Column::number("to_rate", "To"),
            Column::number("delta_pp", "Δ (pp)"),
        ],
    )
    .views(csv);
    let rows = r
        .failure_shifts
        .iter()
        .map(|s| {
            (
                &s.name,
                "mode",
                s.mode.label(),
                s.from_rate,
                s.to_rate,
                s.delta_pp,
            )
        })
        .chain(r.category_shifts.iter().map(|s| {
            (
                &s.name,
                "category",
                s.category.as_str(),
                s.from_rate,
                s.to_rate,
                s.delta_pp,
            )
        }));
    for (name, kind, what, from, to, delta) in rows {
        shifts.push(Row::new(vec![
            Cell::text(name),
            Cell::text(kind),
            Cell::text(what),
            Cell::new(Value::Rate(from)),
            Cell::new(Value::Rate(to)),
            Cell::new(Value::Pp(delta)),
        ]));
    }
    [per_task, failures, categories, shifts]
        .into_iter()
        .map(Block::table)
        .collect()
}

/// Every task with its mean reward under each condition and links to its trials' folders (the
/// HTML report's; the links are made relative to the report when it is written).
pub fn tasks(report: &crate::report::Report) -> Vec<Block> {
    let r = &report.results;
    let html = Views::of(&[View::Html]);
    let mut columns = vec![
        Column::text("task", "Task"),
        Column::text("domain", "Domain"),
        Column::text("difficulty", "Difficulty"),
    ];
    for c in &r.conditions {
        columns.push(Column::number(
            &format!("mean_{}", c.label),
            format!("{} mean reward", c.label),
        ));
        columns.push(Column::text(
            &format!("trials_{}", c.label),
            format!("{} trials", c.label),
        ));
    }
    let mut t = Table::new("tasks", "task", columns).views(html);
    for (i, task) in r.tasks.iter().enumerate() {
        let mut cells = vec![
            Cell::text(&task.id),
            Cell::text(&task.domain),
            Cell::text(&task.difficulty),
        ];
        for c in &r.conditions {
            cells.push(match c.per_task.get(i).copied().flatten() {
                Some(v) => Cell::new(Value::Reward(v)),
                None => Cell::undefined(Some("not run")),
            });
            let links: Vec<(String, String)> = report
                .trials
                .iter()
                .filter(|l| l.condition == c.label && l.task == task.id)
                .map(|l| {
                    // The report's pass rule, as its counts (and the dashboard's cells) use it.
                    let mark = match l.outcome {
                        _ if l.succeeded => "✓",
                        Some(o) if o.is_verdict() => "✗",
                        Some(_) => "!",
                        None => "·",
                    };
                    let label = format!("{}{mark}", l.trial_index);
                    if l.beyond_stop {
                        (format!("({label})"), l.dir.clone())
                    } else {
                        (label, l.dir.clone())
                    }
                })
                .collect();
            cells.push(Cell::new(Value::Links(links)));
        }
        t.push(Row::new(cells));
    }
    vec![
        Block::heading(2, "Tasks and their trials").only(html),
        Block::text(
            "Every task of the set: its mean reward under each condition and a link to the folder of each trial (✓ succeeded by the pass rule, ✗ a verdict that did not, ! no verdict, · unfinished; in parentheses, a trial that finished beyond an early stop of its condition — kept, in no mean or count). The links are relative to this file: keep the report beside the run's jobs folder.",
        )
        .only(html),
        Block::table(t),
    ]
}
