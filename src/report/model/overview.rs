//! The top of the report: its title, the banners a reader must see first (interim results, skills
//! that reached a condition without skills), how every number is defined, the runs and the notes
//! to read first.

use super::{Block, Cell, Column, Row, Table, View, Views};
use crate::analysis::results::Results;
use crate::report::md_cell;

/// `SkillsBench results: experiment demo (interim)`, Markdown.
pub fn title(r: &Results) -> String {
    let what = match &r.experiment {
        Some(e) => format!("experiment {}", md_cell(e)),
        None => r
            .runs
            .iter()
            .map(|x| md_cell(&x.name))
            .collect::<Vec<_>>()
            .join(", "),
    };
    format!(
        "SkillsBench results: {what}{}",
        if r.interim.is_some() {
            " (interim)"
        } else {
            ""
        }
    )
}

/// What the report says first: the banners, the definitions, the runs, the notes.
pub fn blocks(r: &Results) -> Vec<Block> {
    let mut out = Vec::new();
    if let Some(i) = &r.interim {
        out.push(Block::Banner {
            text: format!("**{}**", md_cell(&i.describe())),
        });
    }
    for f in &r.exposure.flags {
        out.push(Block::Banner {
            text: format!(
                "**Skills reached a condition without skills.** {}",
                md_cell(f)
            ),
        });
    }
    out.extend(super::tamper::banner(&r.tamper));
    out.extend(super::tamper::banner(&r.contradicted));
    out.push(Block::text(format!(
        "Generated {} by skillscope {}. Pass rates are the SkillsBench paper's Method D: per task, the mean reward over its planned trials (missing, unfinished and errored trials count 0; partial rewards count fractionally), then the mean over the tasks a condition ran, of a set of {} tasks. A trial **succeeds** when its verifier's {} — whatever the agent's outcome (an agent timeout whose verifier still gave the reward succeeded); pass@1, pass@2, pass@2-adaptive and flaky tasks count successes. Comparisons are paired over the tasks both sides ran; a task one side did not run is listed as not run, never counted 0. Δ is in percentage points (pp); normalized gain g = (p_with − p_without) / (1 − p_without). Confidence intervals: {}. Undefined numbers are shown as — with the reason.",
        r.generated_at,
        env!("CARGO_PKG_VERSION"),
        r.tasks.len(),
        md_cell(&r.success_description),
        r.ci_description
    )));
    out.push(Block::heading(2, "Runs"));
    out.push(Block::table(runs(r)));
    // The interim note is the banner above.
    let notes = &r.notes[usize::from(r.interim.is_some()).min(r.notes.len())..];
    if !notes.is_empty() {
        out.push(Block::heading(2, "Read this first"));
        out.push(Block::Bullets {
            items: notes.iter().map(|n| md_cell(n)).collect(),
        });
    }
    out
}

/// The runs of the selection: agent, model, source, trials per task, status, what could not be
/// pinned.
fn runs(r: &Results) -> Table {
    let mut t = Table::new(
        "runs",
        "run",
        vec![
            Column::text("run", "Run"),
            Column::text("agent", "Agent"),
            Column::text("model", "Model"),
            Column::text("source", "Source"),
            Column::number("n_trials", "Trials per task"),
            Column::text("status", "Status"),
            Column::text("unpinned", "Not pinned"),
        ],
    )
    .views(Views::DOCUMENT);
    for x in &r.runs {
        t.push(Row::new(vec![
            Cell::text(&x.name),
            Cell::text(&x.agent),
            match &x.model {
                Some(m) => Cell::text(m),
                None => Cell::undefined(None),
            },
            Cell::text(&x.source),
            Cell::count(x.n_trials as usize),
            Cell::text(&x.status),
            Cell::text(if x.agent_settings.is_empty() {
                "unknown (not recorded)".to_string()
            } else if x.unpinned.is_empty() {
                "nothing".to_string()
            } else {
                x.unpinned.join(", ")
            }),
        ]));
    }
    t
}

/// The runs' settings as recorded (concurrency, hosts, limits, extra CA bundle, …; no secret
/// values), one table a run — the HTML report's.
pub fn settings(r: &Results) -> Vec<Block> {
    let html = Views::of(&[View::Html]);
    let mut out = vec![Block::heading(2, "Settings").only(html)];
    for x in &r.runs {
        let mut t = Table::new(
            &format!(
                "settings_{}",
                crate::skillsbench::condition::sanitize_slug(&x.name)
            ),
            "setting",
            vec![
                Column::text("setting", "Setting"),
                Column::text("value", "Value"),
            ],
        )
        .views(html);
        if let Some(map) = x.settings.as_object() {
            for (k, v) in map {
                let value = match v {
                    serde_json::Value::String(s) => s.clone(),
                    v => v.to_string(),
                };
                t.push(Row::new(vec![Cell::text(k), Cell::text(value)]));
            }
        }
        out.push(Block::heading(3, md_cell(&x.name)).only(html));
        if t.rows.is_empty() {
            out.push(Block::text("No settings recorded (an imported run).").only(html));
        } else {
            out.push(Block::table(t));
        }
    }
    out
}
