//! The Markdown report (`report.md`): the results model ([`super::model`]) as GitHub-flavoured
//! Markdown — headings, paragraphs, banners, lists, tables with their numeric columns
//! right-aligned, and the charts of [`super::charts::plan`] embedded by relative path. Pure: the
//! same report gives the same text (the snapshot test relies on it). Cells are formatted by
//! [`crate::format`] and escaped ([`super::md_cell`]); undefined cells carry their reason.

use std::fmt::Write as _;

use super::charts::{ChartKind, ChartSpec};
use super::model::{Block, Document, Table, Value, View};
use super::{Report, md_cell};

/// Renders `report` with the charts `specs` (paths relative to the report).
pub fn render(report: &Report, specs: &[ChartSpec]) -> String {
    render_document(&super::model::document(report), specs)
}

/// Renders `doc` with the charts `specs`.
pub fn render_document(doc: &Document, specs: &[ChartSpec]) -> String {
    let mut out = format!("# {}\n\n", doc.title);
    for b in doc.blocks.iter().filter_map(|b| b.for_view(View::Markdown)) {
        match b {
            Block::Heading { level, text } => {
                let _ = writeln!(out, "{} {text}\n", "#".repeat(*level as usize));
            }
            Block::Text { text } => {
                let _ = writeln!(out, "{text}\n");
            }
            Block::Banner { text } => {
                let _ = writeln!(out, "> {text}\n");
            }
            Block::Bullets { items } => {
                for i in items {
                    let _ = writeln!(out, "- {i}");
                }
                out.push('\n');
            }
            Block::Table { table: t } => {
                if table(&mut out, t) {
                    out.push('\n');
                }
            }
            Block::Chart { kind } => {
                for s in specs.iter().filter(|s| same_chart(&s.kind, kind)) {
                    let _ = writeln!(out, "![{}]({})\n", md_cell(&s.title), s.file);
                }
            }
            // Only blocks were resolved above.
            Block::Only { .. } => {}
        }
    }
    out
}

/// True for charts of one kind (every page of the per-domain chart is one kind).
pub fn same_chart_kind(a: &ChartKind, b: &ChartKind) -> bool {
    same_chart(a, b)
}

/// True for charts of one kind (every page of the per-domain chart is one kind).
fn same_chart(a: &ChartKind, b: &ChartKind) -> bool {
    match (a, b) {
        (ChartKind::Domains(_), ChartKind::Domains(_)) => true,
        _ => a == b,
    }
}

/// Appends `t` as a Markdown table when the Markdown shows it; false when it does not.
fn table(out: &mut String, t: &Table) -> bool {
    let cols = t.shown(View::Markdown);
    if cols.is_empty() {
        return false;
    }
    line(out, cols.iter().map(|&i| md_cell(&t.columns[i].title)));
    out.push('|');
    for &i in &cols {
        out.push_str(if t.columns[i].numeric {
            "---:|"
        } else {
            "---|"
        });
    }
    out.push('\n');
    for r in t.rows_in(View::Markdown) {
        line(out, cols.iter().map(|&i| cell(&r.cells[i].value)));
    }
    true
}

/// One table line: `| a | b |`.
fn line(out: &mut String, cells: impl Iterator<Item = String>) {
    out.push('|');
    for c in cells {
        out.push(' ');
        out.push_str(&c);
        out.push_str(" |");
    }
    out.push('\n');
}

/// A cell as Markdown: numbers as [`crate::format`] writes them, text escaped, undefined with
/// its reason.
pub fn cell(v: &Value) -> String {
    match v {
        Value::Text(s) => md_cell(s),
        Value::List(items) => md_cell(&items.join(", ")),
        Value::Undefined(Some(why)) => crate::format::undefined(Some(&md_cell(why))),
        Value::Noted { value, note } => format!("{} ({})", cell(value), md_cell(note)),
        Value::Link { text, href } => format!("[{}]({})", md_cell(text), href.replace(' ', "%20")),
        Value::Links(links) => links
            .iter()
            .map(|(t, h)| format!("[{}]({})", md_cell(t), h.replace(' ', "%20")))
            .collect::<Vec<_>>()
            .join(" "),
        Value::Verdict { label, answer } => format!("**{label}**: {}", md_cell(answer)),
        other => other.human(true),
    }
}
