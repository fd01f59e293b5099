//! The sections on flagged trials ([`crate::analysis::tamper`]), one per kind: "Tampered
//! trials" (the paths their agents changed) and "Contradicted verdicts" (why the evidence
//! contradicts the reward) — each with the rule it was scored by (always stated), the runs not
//! checked (imports: Harbor records neither), then per condition the flagged trials; and the
//! banner at the top of the report when any trial was flagged. `report.json` carries the same as
//! `results.tamper` and `results.contradicted`.

use super::{Block, Cell, Column, Row, Table, Tone, Views};
use crate::analysis::tamper::Tampering;
use crate::domain::FlagKind;
use crate::report::md_cell;

/// The section's title for `kind`.
fn title(kind: FlagKind) -> &'static str {
    match kind {
        FlagKind::Tampered => "Tampered trials",
        FlagKind::Contradicted => "Contradicted verdicts",
    }
}

/// The banner for the top of the report when any trial was flagged; `None` when none was.
pub fn banner(t: &Tampering) -> Option<Block> {
    let what = match t.kind {
        FlagKind::Tampered => "flagged for tampering** and judged failures of the agent",
        FlagKind::Contradicted => "recorded as verdict contradicted** and counted as failures",
    };
    match t.total() {
        0 => None,
        n => Some(Block::Banner {
            text: format!(
                "**{} {what} (reward 0): see \"{}\".",
                crate::format::count(n, "trial was", "trials were"),
                title(t.kind)
            ),
        }),
    }
}

/// The section's blocks.
pub fn blocks(t: &Tampering) -> Vec<Block> {
    let mut out = vec![
        Block::heading(2, title(t.kind)),
        Block::text(md_cell(&t.rule)),
    ];
    if !t.unchecked_runs.is_empty() {
        let names: Vec<String> = t.unchecked_runs.iter().map(|r| md_cell(r)).collect();
        out.push(Block::text(format!(
            "Not checked: {} — imported; Harbor records neither the agent's changes nor this check.",
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
    out.push(Block::text(match t.kind {
        FlagKind::Tampered => {
            "Each trial's `agent/tamper.json` lists every flagged change and why."
        }
        FlagKind::Contradicted => {
            "Each trial's `verifier/` folder holds the reward and the report that disagree."
        }
    }));
    out
}

/// The flagged trials, a row each.
pub fn table(t: &Tampering) -> Table {
    let (id, caption, what) = match t.kind {
        FlagKind::Tampered => (
            "tampered_trials",
            "tampered trials",
            "Paths (A added, C changed, D deleted)",
        ),
        FlagKind::Contradicted => ("contradicted_verdicts", "contradicted verdicts", "Why"),
    };
    let mut table = Table::new(
        id,
        caption,
        vec![
            Column::text("label", "Condition"),
            Column::text("task", "Task"),
            Column::number("trial_index", "Trial"),
            Column::text("trial", "Trial folder").priority(2),
            Column::text("outcome", "Outcome"),
            Column::number("flagged", "Flagged").short("flagged"),
            Column::text("paths", what).short("why"),
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
