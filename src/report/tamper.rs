//! The report's section on trials flagged for tampering ([`crate::analysis::tamper`]): the rule
//! they were scored by (always stated), then per condition the flagged trials with the paths
//! their agents changed. Self-contained Markdown, placed by [`super::markdown`]; the JSON report
//! carries the same as `results.tamper`.

use crate::analysis::tamper::Tampering;

use super::md_cell;
use super::table::Table;

/// The line for the top of the report when any trial was flagged; `None` when none was.
pub fn flag(t: &Tampering) -> Option<String> {
    match t.total() {
        0 => None,
        n => Some(format!(
            "> **{n} trial(s) were flagged for tampering** and judged failures of the agent (reward 0): see \"Tampered trials\".\n"
        )),
    }
}

/// The section, as Markdown.
pub fn section(t: &Tampering) -> String {
    let mut out = String::from("## Tampered trials\n\n");
    out.push_str(&md_cell(&t.rule));
    out.push_str("\n\n");
    if !t.unchecked_runs.is_empty() {
        let names: Vec<String> = t.unchecked_runs.iter().map(|r| md_cell(r)).collect();
        out.push_str(&format!(
            "Not checked: {} — imported; Harbor records no filesystem diff of the agent's container.\n\n",
            names.join(", ")
        ));
    }
    if t.conditions.is_empty() {
        if t.unchecked_runs.is_empty() {
            out.push_str("No trial was flagged.\n\n");
        } else if t.checked_runs > 0 {
            out.push_str("No trial of the other runs was flagged.\n\n");
        }
        return out;
    }
    let rows = t.conditions.iter().flat_map(|c| {
        c.trials.iter().map(move |x| {
            let more = x.flagged.saturating_sub(x.paths.len());
            // Each path on its own: a control sequence in one never swallows the next.
            let cleaned: Vec<String> = x
                .paths
                .iter()
                .map(|p| crate::sanitize::one_line(p))
                .collect();
            let mut paths = cleaned.join(", ");
            if more > 0 {
                paths.push_str(&format!(" (+{more} more)"));
            }
            vec![
                md_cell(&c.label),
                md_cell(&x.task),
                x.trial_index.to_string(),
                md_cell(&x.trial),
                md_cell(x.outcome.as_deref().unwrap_or("—")),
                x.flagged.to_string(),
                md_cell(&paths),
            ]
        })
    });
    let table = Table::new(
        &[
            "Condition",
            "Task",
            "Trial",
            "Trial folder",
            "Outcome",
            "Changes flagged",
            "Paths (A added, C changed, D deleted)",
        ],
        rows,
    )
    .aligned(&[false, false, true, false, false, true, false]);
    table.markdown(&mut out);
    out.push_str("\nEach trial's `agent/tamper.json` lists every flagged change and why.\n\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::tamper::{TamperedCondition, TamperedTrial};

    #[test]
    fn the_rule_is_stated_and_paths_are_escaped() {
        let none = Tampering::default();
        let md = section(&none);
        assert!(
            md.contains("judged a failure of the agent") && md.contains("No trial was flagged")
        );
        assert_eq!(flag(&none), None);
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
        let md = section(&one);
        assert!(md.contains("C /bin/sh, A /tests/\\|"), "{md}");
        assert!(md.contains("(+1 more)") && !md.contains('\u{1b}'), "{md}");
        assert!(flag(&one).unwrap().contains("1 trial(s) were flagged"));
    }
}
