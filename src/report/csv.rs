//! The report as CSV tables (RFC 4180 through the `csv` crate), one file per table of the results
//! model ([`super::model`]) that CSV shows, for other tools. Fractions stay fractions (pass rates
//! in [0, 1]) at full precision; Δ is in percentage points as in the Markdown; empty cells mean
//! "none" (no CI, undefined g, a task not run), with the reason in the `*_undefined` column beside
//! them. Every CI comes with its resample count and seed. Text from the store is stripped of
//! control characters.

use super::Report;
use super::model::{Document, View};

/// The file names and contents: one `<table>.csv` per table of the model CSV shows —
/// `conditions`, `comparisons`, `per_task`, `task_changes`, `domains`, `difficulties`,
/// `failures`, `failure_categories`, `failure_shifts`, `efficiency`, `flaky`, `pass_at_2`,
/// `paper` (when a run matches the paper), `skill_content`, `skill_buckets`, `skills`; for
/// experiments also `hypotheses`, and when they have rows `held_out`, `round2_skills`,
/// `skill_exposure` (when trials recorded what their agent could see of skills) and
/// `generated_skills`.
pub fn tables(report: &Report) -> Vec<(String, String)> {
    of_document(&super::model::document(report))
}

/// [`tables`] of a document already built.
pub fn of_document(doc: &Document) -> Vec<(String, String)> {
    doc.tables()
        .filter(|t| t.views.has(View::Csv))
        .map(|t| (format!("{}.csv", t.name), t.csv()))
        .collect()
}
