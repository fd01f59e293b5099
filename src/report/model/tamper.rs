//! The section on trials flagged for tampering ([`crate::analysis::tamper`]): the rule they were
//! scored by (always stated), the runs not checked (imports: Harbor records no filesystem diff),
//! then per condition the flagged trials with the paths their agents changed; and the banner at
//! the top of the report when any trial was flagged. `report.json` carries the same as
//! `results.tamper`.

use super::{Block, Cell, Column, Row, Table, Tone, Views};
use crate::analysis::tamper::Tampering;
use crate::report::md_cell;

/// The banner for the top of the report when any trial was flagged; `None` when none was.
pub fn banner(t: &Tampering) -> Option<Block> {
    match t.total() {
        0 => None,
        n => Some(Block::Banner {
            text: format!(
                "**{} flagged for tampering** and judged failures of the agent (reward 0): see \"Tampered trials\".",
                crate::format::count(n, "trial was", "trials were")
            ),
        }),
    }
}

/// The section's blocks.
pub fn blocks(t: &Tampering) -> Vec<Block> {
    let mut out = vec![
        Block::heading(2, "Tampered trials"),
        Block::text(md_cell(&t.rule)),
    ];
    if !t.unchecked_runs.is_empty() {
        let names: Vec<String> = t.unchecked_runs.iter().map(|r| md_cell(r)).collect();
        out.push(Block::text(format!(
            "Not checked: {} — imported; Harbor records no filesystem diff of the agent's container.",
            names.join(", ")
        )));
    }
    if t.conditions.is_empty() {
        if t.unchecked_runs.is_empty() {
            out.push(Block::text("No trial was flagged."));
        } else if t.checked_runs > 0 {
            out.push(Block::text("No trial of the other runs was flagged."));
        }
        return out;
    }
    out.push(Block::table(table(t)));
    out.push(Block::text(
        "Each trial's `agent/tamper.json` lists every flagged change and why.",
    ));
    out
}

/// The flagged trials, a row each.
pub fn table(t: &Tampering) -> Table {
    let mut table = Table::new(
        "tampered_trials",
        "tampered trials",
        vec![
            Column::text("label", "Condition"),
            Column::text("task", "Task"),
            Column::number("trial_index", "Trial"),
            Column::text("trial", "Trial folder").priority(2),
            Column::text("outcome", "Outcome"),
            Column::number("flagged", "Changes flagged").short("flagged"),
            Column::text("paths", "Paths (A added, C changed, D deleted)").short("paths"),
        ],
    )
    .views(Views::ALL);
    for c in &t.conditions {
        for x in &c.trials {
            let more = x.flagged.saturating_sub(x.paths.len());
            // Each path on its own: a control sequence in one never swallows the next.
            let mut paths = x
                .paths
                .iter()
                .map(|p| crate::sanitize::one_line(p))
                .collect::<Vec<_>>()
                .join(", ");
            if more > 0 {
                paths.push_str(&format!(" (+{more} more)"));
            }
            table.push(Row::new(vec![
                Cell::text(&c.label).tone(Tone::Accent),
                Cell::text(&x.task),
                Cell::count(x.trial_index as usize),
                Cell::text(&x.trial),
                Cell::text(x.outcome.as_deref().unwrap_or("—")),
                Cell::count(x.flagged),
                Cell::text(paths),
            ]));
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::tamper::{TamperedCondition, TamperedTrial};

    #[test]
    fn the_rule_is_stated_and_paths_are_cleaned() {
        let none = Tampering::default();
        let b = blocks(&none);
        assert!(b.contains(&Block::text("No trial was flagged.")), "{b:?}");
        assert_eq!(banner(&none), None);
        let one = Tampering {
            conditions: vec![TamperedCondition {
                label: "A".into(),
                run: "r".into(),
                condition: "no-skills".into(),
                trials: vec![TamperedTrial {
                    trial: "t__x".into(),
                    task: "t".into(),
                    trial_index: 2,
                    outcome: Some("fail".into()),
                    flagged: 3,
                    paths: vec!["C /bin/sh".into(), "A /tests/|\u{1b}]52;x".into()],
                }],
            }],
            ..Default::default()
        };
        let t = table(&one);
        let paths = format!("{:?}", t.rows[0].cells[6]);
        assert!(paths.contains("C /bin/sh, A /tests/|"), "{paths}");
        assert!(
            paths.contains("(+1 more)") && !paths.contains('\u{1b}'),
            "{paths}"
        );
        let Some(Block::Banner { text }) = banner(&one) else {
            panic!()
        };
        assert!(text.contains("1 trial was flagged"), "{text}");
    }
}
