//! Breakdowns by domain and by difficulty — each condition's Method D pass rate over the group's
//! tasks it ran, each comparison's Δ and g over the group's matched tasks — and learning
//! efficiency by difficulty. The dashboard's domain pane renders the same table from the live
//! run ([`groups_table`] with judged rates).

use super::{Block, Cell, Column, Row, Table, Tone, Value, View, Views};
use crate::analysis::results::{GroupRow, Results};
use crate::report::charts::ChartKind;

/// What a breakdown table shows besides its rows: the conditions' labels, the comparisons (name,
/// treatment label, baseline label), and the overall row.
pub struct Groups<'a> {
    /// `domain` or `difficulty`.
    pub what: &'a str,
    /// Condition labels, in the rows' `rates` order.
    pub conditions: Vec<String>,
    /// Comparisons (name, with, without), in the rows' `deltas_pp` order.
    pub comparisons: Vec<(String, String, String)>,
    /// The rows.
    pub rows: &'a [GroupRow],
    /// The overall row (every task), shown on screens.
    pub overall: Option<GroupRow>,
    /// Per row (then the overall row) and condition: the pass rate over judged trials, shown
    /// beside each rate while a run is unfinished (the live domain pane).
    pub judged: Option<Vec<Vec<Option<f64>>>>,
}

/// The breakdown table of `g`: group, tasks, a rate per condition (with its judged rate when
/// given), a Δ per comparison, then a g per comparison (screens).
pub fn groups_table(g: &Groups) -> Table {
    let title = {
        let mut c = g.what.chars();
        c.next()
            .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
            .unwrap_or_default()
    };
    let mut columns = vec![
        Column::text("group", title).short(g.what),
        Column::number("n_tasks", "Tasks")
            .short("tasks")
            .abbr("n")
            .priority(1)
            .pin(),
    ];
    for (i, label) in g.conditions.iter().enumerate() {
        columns.push(Column::number(&format!("rate_{i}"), label.as_str()).short(label.as_str()));
        if g.judged.is_some() {
            columns.push(
                Column::number(&format!("judged_{i}"), format!("{label} judged"))
                    .short("judged")
                    .priority(1)
                    .views(Views::of(&[View::Dashboard])),
            );
        }
    }
    let same_base = g.comparisons.windows(2).all(|w| w[0].2 == w[1].2);
    for (i, (name, with, without)) in g.comparisons.iter().enumerate() {
        let short = if same_base {
            format!("Δ {with}")
        } else {
            format!("Δ {with}−{without}")
        };
        columns.push(
            Column::number(&format!("delta_{i}"), format!("Δ {name}"))
                .short(short)
                .priority(if i == 0 { 1 } else { 2 }),
        );
    }
    for (i, (name, with, _)) in g.comparisons.iter().enumerate() {
        columns.push(
            Column::number(&format!("g_{i}"), format!("g {name}"))
                .short(format!("g {with}"))
                .priority(3)
                .views(Views::of(&[View::Dashboard, View::Terminal])),
        );
    }
    let mut t = Table::new(&format!("{}s_wide", g.what), g.what, columns)
        .views(Views::ALL.without(View::Csv));
    let rows = g
        .rows
        .iter()
        .map(|r| (r, false))
        .chain(g.overall.iter().map(|r| (r, true)));
    for (k, (row, total)) in rows.enumerate() {
        let base = if total { Tone::Accent } else { Tone::Plain };
        let mut cells = vec![
            Cell::text(&row.group).tone(base),
            Cell::count(row.n_tasks).tone(if total { Tone::Accent } else { Tone::Dim }),
        ];
        for (i, (v, n)) in row.rates.iter().zip(&row.n_ran).enumerate() {
            cells.push(match v {
                Some(v) if *n < row.n_tasks => Cell::new(Value::Rate(*v))
                    .tone(base)
                    .noted(format!("{n} ran")),
                Some(v) => Cell::new(Value::Rate(*v)).tone(base),
                // The condition ran no task of the group: not run, never 0.
                None => Cell::undefined(Some("not run")),
            });
            if let Some(j) = &g.judged {
                let v = j.get(k).and_then(|r| r.get(i)).copied().flatten();
                cells.push(Cell::rate(v, None).tone(Tone::Dim));
            }
        }
        for (v, n) in row.deltas_pp.iter().zip(&row.n_matched) {
            cells.push(match v {
                Some(v) if *n < row.n_tasks => {
                    Cell::delta(Some(*v), None).noted(format!("{n} matched"))
                }
                Some(v) => Cell::delta(Some(*v), None),
                // Tasks both ran, but one side has no verdict yet (the live pane).
                None if *n > 0 => Cell::undefined(Some("nothing judged on one side yet")),
                None => Cell::undefined(Some("no task both ran")),
            });
        }
        for v in &row.gains {
            cells.push(Cell::gain(*v, None).tone(Tone::Dim));
        }
        let mut r = Row::new(cells);
        if total {
            r = r
                .total()
                .views(Views::of(&[View::Dashboard, View::Terminal]));
        }
        t.push(r);
    }
    t
}

/// The [`Groups`] of `r`'s domains or difficulties (`what`), with the overall row.
pub fn groups_of<'a>(r: &'a Results, what: &'a str, rows: &'a [GroupRow]) -> Groups<'a> {
    Groups {
        what,
        conditions: r.conditions.iter().map(|c| c.label.clone()).collect(),
        comparisons: r
            .comparisons
            .iter()
            .map(|c| (c.name.clone(), c.with.clone(), c.without.clone()))
            .collect(),
        rows,
        overall: Some(GroupRow {
            group: "overall".into(),
            n_tasks: r.tasks.len(),
            rates: r.conditions.iter().map(|c| Some(c.pass_rate)).collect(),
            n_ran: r.conditions.iter().map(|c| c.n_tasks).collect(),
            deltas_pp: r.comparisons.iter().map(|c| c.delta_pp).collect(),
            gains: r.comparisons.iter().map(|c| c.g).collect(),
            n_matched: r.comparisons.iter().map(|c| c.n_tasks).collect(),
        }),
        judged: None,
    }
}

/// `domains.csv` or `difficulties.csv`: one row per group and measure (each condition's rate,
/// each comparison's Δ and g) with the tasks it is over.
fn machine_table(r: &Results, name: &str, rows: &[GroupRow]) -> Table {
    let mut t = Table::new(
        name,
        "group",
        vec![
            Column::text("group", "Group"),
            Column::number("n_tasks", "Tasks"),
            Column::text("measure", "Measure"),
            Column::text("of", "Of"),
            Column::number("value", "Value"),
            Column::number("over_tasks", "Over tasks"),
        ],
    )
    .views(Views::of(&[View::Csv]));
    let num = |v: Option<f64>| Cell::new(v.map_or(Value::Undefined(None), Value::Number));
    for g in rows {
        for (c, (v, n)) in r.conditions.iter().zip(g.rates.iter().zip(&g.n_ran)) {
            t.push(Row::new(vec![
                Cell::text(&g.group),
                Cell::count(g.n_tasks),
                Cell::text("pass_rate"),
                Cell::text(&c.label),
                num(*v),
                Cell::count(*n),
            ]));
        }
        for (c, (d, (gn, n))) in r
            .comparisons
            .iter()
            .zip(g.deltas_pp.iter().zip(g.gains.iter().zip(&g.n_matched)))
        {
            for (measure, v) in [("delta_pp", d), ("g", gn)] {
                t.push(Row::new(vec![
                    Cell::text(&g.group),
                    Cell::count(g.n_tasks),
                    Cell::text(measure),
                    Cell::text(&c.name),
                    num(*v),
                    Cell::count(*n),
                ]));
            }
        }
    }
    t
}

/// One breakdown section: heading, chart (domains), table (or `No tasks.`), and its CSV file.
fn section(r: &Results, what: &str, heading: &str, rows: &[GroupRow]) -> Vec<Block> {
    let mut out = vec![Block::heading(2, heading)];
    if what == "domain" {
        out.push(Block::Chart {
            kind: ChartKind::Domains(0),
        });
    }
    if rows.is_empty() {
        out.push(Block::text("No tasks."));
    } else {
        out.push(Block::table(groups_table(&groups_of(r, what, rows))));
    }
    let csv = if what == "domain" {
        "domains"
    } else {
        "difficulties"
    };
    out.push(Block::table(machine_table(r, csv, rows)));
    out
}

/// The section "By domain".
pub fn domains(r: &Results) -> Vec<Block> {
    section(r, "domain", "By domain", &r.domains)
}

/// The section "By difficulty".
pub fn difficulties(r: &Results) -> Vec<Block> {
    section(r, "difficulty", "By difficulty", &r.difficulties)
}

/// The section "Learning efficiency by difficulty" (experiments).
pub fn efficiency(r: &Results) -> Vec<Block> {
    let mut t = Table::new(
        "efficiency",
        "difficulty",
        vec![
            Column::text("comparison", "Comparison"),
            Column::text("difficulty", "Difficulty"),
            Column::number("n_tasks", "Tasks"),
            Column::number("p_with", "With"),
            Column::number("p_without", "Without"),
            Column::number("delta_pp", "Δ (pp)"),
            Column::number("g", "g"),
        ],
    )
    .views(Views::REPORT);
    for e in &r.efficiency {
        t.push(Row::new(vec![
            Cell::text(&e.comparison),
            Cell::text(&e.difficulty),
            Cell::count(e.n_tasks),
            Cell::new(Value::Rate(e.p_with)),
            Cell::new(Value::Rate(e.p_without)),
            Cell::delta(Some(e.delta_pp), None),
            Cell::gain(e.g, None),
        ]));
    }
    if r.efficiency.is_empty() {
        return vec![Block::table(t.views(Views::of(&[View::Csv])))];
    }
    vec![
        Block::heading(2, "Learning efficiency by difficulty"),
        Block::text("What the learned skills add in round 2, per difficulty tier."),
        Block::table(t),
    ]
}
