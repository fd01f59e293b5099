//! The health check as Markdown (`health-check.md` beside the run's job folder): counts per
//! condition, every reason per condition, the tasks whose conditions differ, and one row per task
//! with its cause and evidence. docs/tasks.md carries this text for a stored check, generated —
//! never typed (a test renders the stored JSON again and compares).

use std::fmt::Write;

use super::{HealthCheck, TaskReadiness};

/// A Markdown table cell: pipes escaped, one line.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

fn reward(r: &TaskReadiness, c: &str) -> String {
    match r.rewards.get(c).copied().flatten() {
        Some(v) => format!("{v:.2}"),
        None => r.outcomes.get(c).cloned().unwrap_or_default(),
    }
}

/// Renders `check` (see the module docs).
pub fn render(check: &HealthCheck) -> String {
    let mut out = String::new();
    let c = &check.counts;
    let conds = &check.conditions;
    let _ = writeln!(
        out,
        "| health check ({} tasks, oracle, one trial per condition) | {} |",
        c.tasks,
        conds.join(" | ")
    );
    let _ = writeln!(out, "|---|{}", "---|".repeat(conds.len()));
    let per = |f: &dyn Fn(&super::ConditionCounts) -> String| -> String {
        conds
            .iter()
            .map(|k| c.conditions.get(k).map(f).unwrap_or_default())
            .collect::<Vec<_>>()
            .join(" | ")
    };
    let _ = writeln!(out, "| images build | {} |", per(&|x| x.build.to_string()));
    let _ = writeln!(
        out,
        "| oracle passes | {} |",
        per(&|x| format!("**{}**", x.pass))
    );
    let _ = writeln!(
        out,
        "| image build time, s (a shared base counted once, for the first condition) | {} |",
        per(&|x| format!("{:.0}", x.build_seconds))
    );
    let mut labels: Vec<&String> = c
        .conditions
        .values()
        .flat_map(|x| x.reasons.keys())
        .collect();
    labels.sort();
    labels.dedup();
    for l in labels {
        let _ = writeln!(
            out,
            "| {l} | {} |",
            per(&|x| x.reasons.get(l).copied().unwrap_or(0).to_string())
        );
    }
    let _ = writeln!(
        out,
        "\nIn every condition: {} tasks build, {} pass the oracle; {} ran with CPUs or memory clamped to the host's.\n",
        c.build, c.pass, c.clamped
    );
    let differ: Vec<&TaskReadiness> = check.tasks.iter().filter(|r| r.differ.is_some()).collect();
    if differ.is_empty() {
        out.push_str("No task's conditions differ.\n\n");
    } else {
        let _ = writeln!(out, "Tasks whose conditions differ ({}):\n", differ.len());
        let _ = writeln!(out, "| task | how | {} |", conds.join(" | "));
        let _ = writeln!(out, "|---|---|{}", "---|".repeat(conds.len()));
        for r in differ {
            let cells: Vec<String> = conds
                .iter()
                .map(|k| match r.reasons.get(k) {
                    Some(cause) => cell(&format!("{} — {}", reward(r, k), cause.describe(200))),
                    None => reward(r, k),
                })
                .collect();
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                cell(&r.task),
                cell(r.differ.as_deref().unwrap_or_default()),
                cells.join(" | ")
            );
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "| task | builds | {} | build s | reason (evidence) |",
        conds.join(" | ")
    );
    let _ = writeln!(out, "|---|---|{}---|---|", "---|".repeat(conds.len()));
    for r in &check.tasks {
        let rewards: Vec<String> = conds.iter().map(|k| reward(r, k)).collect();
        let build: Vec<String> = conds
            .iter()
            .map(|k| format!("{:.0}", r.build_seconds.get(k).copied().unwrap_or(0.0)))
            .collect();
        let mut reason = match &r.reason {
            Some(cause) => cause.describe(200),
            None => String::new(),
        };
        if let Some(note) = &r.clamped {
            if !reason.is_empty() {
                reason.push_str("; ");
            }
            reason.push_str(&format!("clamped: {note}"));
        }
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            cell(&r.task),
            r.builds,
            rewards.join(" | "),
            build.join(" / "),
            cell(&reason)
        );
    }
    out
}
