//! One results model for every renderer: a report's sections as typed data — headings, prose,
//! tables of [`Cell`]s that know their kind (rate, pp, g, count, CI with its resamples and seed,
//! SE, text, link), a priority per column for narrow screens, which renderers show each column,
//! and the sections' notes. CSV ([`super::csv`]), Markdown ([`super::markdown`]), HTML
//! ([`super::html`]), the terminal tables (`commands::shared::table`), the dashboard's Results
//! view and its domain pane only render it, so a number reads the same wherever it is shown
//! ([`crate::format`] holds the formats).
//!
//! [`document`] builds the whole report in the order of `report.md`; each file here builds the
//! blocks of one family of sections from [`crate::analysis::results::Results`]: [`overview`]
//! (title, runs, the notes to read first), [`conditions`] (pass rates, failure modes and
//! categories, per task), [`comparisons`] (comparisons, hypotheses, held-out transfer,
//! pass@2-adaptive, the paper's numbers, flaky tasks, task-level changes), [`breakdowns`] (by
//! domain and difficulty, learning efficiency), [`exposure`] (which skills the trials saw and
//! used), [`sequential`] (the group-sequential design and its early stops), [`tamper`] (trials whose agent was flagged for tampering) and [`skills`] (skill content, round-2 skills, self-generated skills, the rubric).

pub mod breakdowns;
pub mod cell;
pub mod comparisons;
pub mod conditions;
pub mod exposure;
pub mod overview;
pub mod sequential;
pub mod skills;
pub mod table;
pub mod tamper;

pub use cell::{Cell, Tone, Unit, Value};
pub use table::{Column, Row, Table, View, Views};

use serde::Serialize;

use super::Report;
use super::charts::ChartKind;

/// A piece of the report, in reading order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// A heading of `level` (2 for a section, 3 for a part of one); `text` is Markdown.
    Heading {
        /// 1–3.
        level: u8,
        /// Markdown (untrusted parts escaped).
        text: String,
    },
    /// A paragraph, Markdown (untrusted parts escaped).
    Text {
        /// The paragraph.
        text: String,
    },
    /// A paragraph set off as a warning at the top (Markdown's `> **…**`).
    Banner {
        /// Markdown.
        text: String,
    },
    /// A bulleted list; each item Markdown.
    Bullets {
        /// The items.
        items: Vec<String>,
    },
    /// A table.
    Table {
        /// The table.
        table: Table,
    },
    /// A chart of the report (drawn by [`super::charts`]).
    Chart {
        /// Which.
        kind: ChartKind,
    },
    /// A block only some renderers show (the HTML's links to trial folders, say).
    Only {
        /// Who shows it.
        views: Views,
        /// The block.
        block: Box<Block>,
    },
}

impl Block {
    /// A heading.
    pub fn heading(level: u8, text: impl Into<String>) -> Block {
        Block::Heading {
            level,
            text: text.into(),
        }
    }

    /// A paragraph.
    pub fn text(text: impl Into<String>) -> Block {
        Block::Text { text: text.into() }
    }

    /// A table.
    pub fn table(table: Table) -> Block {
        Block::Table { table }
    }

    /// This block, shown only by `views`.
    pub fn only(self, views: Views) -> Block {
        Block::Only {
            views,
            block: Box::new(self),
        }
    }

    /// The block `view` shows of this one: itself, or what an [`Block::Only`] holds when `view`
    /// is among its views.
    pub fn for_view(&self, view: View) -> Option<&Block> {
        match self {
            Block::Only { views, block } => views.has(view).then_some(block.as_ref()),
            b => Some(b),
        }
    }
}

/// The whole report as the renderers see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Document {
    /// The title (`SkillsBench results: experiment demo (interim)`), Markdown.
    pub title: String,
    /// The blocks, in reading order.
    pub blocks: Vec<Block>,
}

impl Document {
    /// Every table, in reading order.
    pub fn tables(&self) -> impl Iterator<Item = &Table> {
        self.blocks.iter().filter_map(|b| {
            let b = match b {
                Block::Only { block, .. } => block.as_ref(),
                b => b,
            };
            match b {
                Block::Table { table } => Some(table),
                _ => None,
            }
        })
    }

    /// The table named `name`, if the report has it.
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables().find(|t| t.name == name)
    }
}

/// The header of a CI column: `95% CI (10,000 resamples, seed 20260212)`, `unit` (`, pp`) after
/// `CI`.
pub fn ci_title(r: &crate::analysis::results::Results, unit: &str) -> String {
    format!("95% CI{unit} ({})", r.ci_method.short())
}

/// The report as one [`Document`], in the order of `report.md`.
pub fn document(report: &Report) -> Document {
    let r = &report.results;
    let mut blocks = overview::blocks(r);
    blocks.extend(conditions::conditions(r));
    blocks.extend(exposure::blocks(&r.exposure));
    blocks.extend(tamper::blocks(&r.tamper));
    blocks.extend(tamper::blocks(&r.contradicted));
    blocks.extend(comparisons::hypotheses(r));
    blocks.extend(comparisons::comparisons(r));
    blocks.extend(sequential::blocks(r));
    blocks.extend(comparisons::held_out(r));
    blocks.extend(comparisons::adaptive(r));
    blocks.extend(comparisons::paper(r));
    blocks.extend(breakdowns::domains(r));
    blocks.extend(breakdowns::difficulties(r));
    blocks.extend(breakdowns::efficiency(r));
    blocks.extend(comparisons::flaky(r));
    blocks.extend(comparisons::task_changes(r));
    blocks.extend(conditions::failures(r));
    blocks.extend(skills::skill_content(report));
    blocks.extend(skills::round2_skills(r));
    blocks.extend(skills::generated_skills(report));
    blocks.extend(skills::rubric(report));
    // The HTML's own: every task with links to its trial folders, and the runs' settings.
    blocks.extend(conditions::tasks(report));
    blocks.extend(overview::settings(r));
    // Tables only the CSV files carry (long forms of what the Markdown shows wide).
    blocks.extend(conditions::machine_tables(r));
    blocks.extend(comparisons::machine_tables(r));
    Document {
        title: overview::title(r),
        blocks,
    }
}
