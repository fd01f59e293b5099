//! A table of the results model: typed columns (a machine key, a human title and its short form,
//! a priority for narrow screens, which renderers show it) and rows of [`Cell`]s. CSV writes every
//! column it is in at full precision ([`Table::csv`]); the human renderers take the columns their
//! [`View`] shows and format each cell through [`crate::format`].

use serde::Serialize;

use super::cell::Cell;

/// A renderer of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum View {
    /// CSV files (machine: full precision).
    Csv,
    /// `report.md`.
    Markdown,
    /// `report.html`.
    Html,
    /// Tables printed on the terminal (`run`, `status`, `import`, `experiment`).
    Terminal,
    /// The dashboard (Results view, domain pane).
    Dashboard,
}

/// A set of [`View`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Views(u8);

impl View {
    fn bit(self) -> u8 {
        match self {
            View::Csv => 1,
            View::Markdown => 2,
            View::Html => 4,
            View::Terminal => 8,
            View::Dashboard => 16,
        }
    }
}

impl Views {
    /// Every renderer.
    pub const ALL: Views = Views(31);
    /// The report's files: CSV, Markdown and HTML.
    pub const REPORT: Views = Views(1 | 2 | 4);
    /// The report's human files: Markdown and HTML.
    pub const DOCUMENT: Views = Views(2 | 4);
    /// Nothing.
    pub const NONE: Views = Views(0);

    /// Exactly `views`.
    pub fn of(views: &[View]) -> Views {
        Views(views.iter().fold(0, |a, v| a | v.bit()))
    }

    /// True when `view` is in the set.
    pub fn has(self, view: View) -> bool {
        self.0 & view.bit() != 0
    }

    /// The set with `view` added.
    pub fn and(self, view: View) -> Views {
        Views(self.0 | view.bit())
    }

    /// The set without `view`.
    pub fn without(self, view: View) -> Views {
        Views(self.0 & !view.bit())
    }
}

/// One column.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Column {
    /// Machine name (`pass_rate`): the CSV header when [`Column::csv`] is not set otherwise, and
    /// the HTML column's key.
    pub key: String,
    /// The CSV headers its values fill, in order (one for most kinds; a CI fills low, high,
    /// resamples and seed; `n/total` the part and the whole). Empty: not in CSV.
    pub csv: Vec<String>,
    /// The CSV header of the field after them that says why a value is undefined, if the file
    /// keeps one.
    pub reason: Option<String>,
    /// Human header (`Pass rate (Method D)`).
    pub title: String,
    /// Short human header for screens — the terminal and the dashboard (`pass`); the title when
    /// `None`.
    pub short: Option<String>,
    /// The shortest header, for a terminal table that does not fit with the short ones
    /// (`a-tmo`).
    pub abbr: Option<String>,
    /// 0 is kept on the narrowest screen; columns of higher numbers are dropped first.
    pub priority: u8,
    /// Numbers: right-aligned.
    pub numeric: bool,
    /// The renderers that show it.
    pub views: Views,
    /// Kept on a screen that scrolls the other columns sideways (a breakdown's task count: a
    /// rate means little without its denominator).
    pub pinned: bool,
}

impl Column {
    /// A left-aligned text column keyed `key`, titled `title`, in every renderer, priority 0.
    pub fn text(key: &str, title: impl Into<String>) -> Column {
        Column {
            key: key.to_string(),
            csv: vec![key.to_string()],
            reason: None,
            title: title.into(),
            short: None,
            abbr: None,
            priority: 0,
            numeric: false,
            views: Views::ALL,
            pinned: false,
        }
    }

    /// A right-aligned number column.
    pub fn number(key: &str, title: impl Into<String>) -> Column {
        Column {
            numeric: true,
            ..Column::text(key, title)
        }
    }

    /// The short header.
    pub fn short(mut self, short: impl Into<String>) -> Column {
        self.short = Some(short.into());
        self
    }

    /// The shortest header (see [`Column::abbr`]).
    pub fn abbr(mut self, abbr: impl Into<String>) -> Column {
        self.abbr = Some(abbr.into());
        self
    }

    /// The priority (0 is kept on the narrowest screen).
    pub fn priority(mut self, p: u8) -> Column {
        self.priority = p;
        self
    }

    /// Kept on screen while the other columns scroll sideways ([`Column::pinned`]).
    pub fn pin(mut self) -> Column {
        self.pinned = true;
        self
    }

    /// Shown only by `views`.
    pub fn views(mut self, views: Views) -> Column {
        self.views = views;
        self
    }

    /// Not shown by `view`.
    pub fn except(mut self, view: View) -> Column {
        self.views = self.views.without(view);
        self
    }

    /// The CSV headers its cells fill (see [`Column::csv`]).
    pub fn csv(mut self, headers: &[&str]) -> Column {
        self.csv = headers.iter().map(|h| h.to_string()).collect();
        if headers.is_empty() {
            self.views = self.views.without(View::Csv);
        }
        self
    }

    /// The CSV field that says why a value is undefined (see [`Column::reason`]).
    pub fn reason(mut self, header: &str) -> Column {
        self.reason = Some(header.to_string());
        self
    }

    /// The header `view` shows: the title in documents, the short form on screens.
    pub fn header(&self, view: View) -> &str {
        match (&self.short, view) {
            (Some(s), View::Terminal | View::Dashboard) => s,
            _ => &self.title,
        }
    }
}

/// One row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// One cell per column.
    pub cells: Vec<Cell>,
    /// A total (the `overall` row of a breakdown): set off by the renderers.
    pub total: bool,
    /// The renderers that show it.
    pub views: Views,
}

impl Row {
    /// A row of `cells`.
    pub fn new(cells: Vec<Cell>) -> Row {
        Row {
            cells,
            total: false,
            views: Views::ALL,
        }
    }

    /// Shown only by `views`.
    pub fn views(mut self, views: Views) -> Row {
        self.views = views;
        self
    }

    /// The same row marked as a total.
    pub fn total(mut self) -> Row {
        self.total = true;
        self
    }
}

/// A table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    /// Its name: the CSV file's stem (`conditions` → `conditions.csv`), the HTML table's id and
    /// how the dashboard picks it.
    pub name: String,
    /// What it shows, for a narrow renderer's heading (`condition`, `comparison`, `domain`).
    pub caption: String,
    /// Columns.
    pub columns: Vec<Column>,
    /// Rows.
    pub rows: Vec<Row>,
    /// The renderers that show it.
    pub views: Views,
}

impl Table {
    /// An empty table named `name`, captioned `caption`, with `columns`, in every renderer.
    pub fn new(name: &str, caption: &str, columns: Vec<Column>) -> Table {
        Table {
            name: name.to_string(),
            caption: caption.to_string(),
            columns,
            rows: Vec::new(),
            views: Views::ALL,
        }
    }

    /// Shown only by `views`.
    pub fn views(mut self, views: Views) -> Table {
        self.views = views;
        self
    }

    /// Adds a row (as many cells as columns; checked in debug builds).
    pub fn push(&mut self, row: Row) {
        debug_assert_eq!(row.cells.len(), self.columns.len(), "table {}", self.name);
        self.rows.push(row);
    }

    /// The indices of the columns `view` shows (none when the table is not in `view`).
    pub fn shown(&self, view: View) -> Vec<usize> {
        if !self.views.has(view) {
            return Vec::new();
        }
        (0..self.columns.len())
            .filter(|&i| self.columns[i].views.has(view))
            .collect()
    }

    /// The rows `view` shows.
    pub fn rows_in(&self, view: View) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(move |r| r.views.has(view))
    }

    /// The table as CSV (RFC 4180 through the `csv` crate, `\n` line ends): every CSV column's
    /// headers, then one record a row with each cell's machine fields.
    pub fn csv(&self) -> String {
        let cols: Vec<&Column> = self
            .columns
            .iter()
            .filter(|c| c.views.has(View::Csv) && !c.csv.is_empty())
            .collect();
        let mut w = ::csv::Writer::from_writer(Vec::new());
        let head: Vec<&str> = cols
            .iter()
            .flat_map(|c| c.csv.iter().chain(&c.reason).map(String::as_str))
            .collect();
        // Writing to a Vec cannot fail.
        let _ = w.write_record(&head);
        for r in self.rows_in(View::Csv) {
            let mut record = Vec::with_capacity(head.len());
            for (c, cell) in self.columns.iter().zip(&r.cells) {
                if c.views.has(View::Csv) && !c.csv.is_empty() {
                    let mut fields = cell.value.machine(c.csv.len());
                    fields.resize(c.csv.len(), String::new());
                    record.extend(fields);
                    if c.reason.is_some() {
                        record.push(
                            cell.value
                                .undefined_reason()
                                .map(crate::sanitize::one_line)
                                .unwrap_or_default(),
                        );
                    }
                }
            }
            let _ = w.write_record(&record);
        }
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }

    /// The distinct reasons of the undefined cells in `columns`, in order of appearance — what a
    /// renderer that shows bare `—` lists under the table.
    pub fn undefined_reasons(&self, columns: &[usize]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in &self.rows {
            for &i in columns {
                if let Some(why) = r.cells.get(i).and_then(|c| c.value.undefined_reason())
                    && !out.iter().any(|o| o == why)
                {
                    out.push(why.to_string());
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::ci::Ci;
    use crate::report::model::cell::{Cell, Unit};

    fn ci() -> Ci {
        Ci {
            low: 0.1,
            high: 0.4,
            low_mc: [0.1, 0.1],
            high_mc: [0.4, 0.4],
            resamples: 100,
            seed: 7,
        }
    }

    #[test]
    fn csv_expands_cis_and_reasons_and_skips_human_only_columns() {
        let mut t = Table::new(
            "conditions",
            "condition",
            vec![
                Column::text("label", "Condition"),
                Column::number("pass_rate", "Pass rate"),
                Column::number("ci", "95% CI")
                    .csv(&["ci_low", "ci_high", "ci_resamples", "ci_seed"])
                    .reason("ci_undefined"),
                Column::number("judged", "Judged").views(Views::of(&[View::Markdown])),
            ],
        );
        t.push(Row::new(vec![
            Cell::text("a,b"),
            Cell::rate(Some(0.25), None),
            Cell::ci(Some(ci()), Unit::Percent, None),
            Cell::rate(Some(0.5), None),
        ]));
        t.push(Row::new(vec![
            Cell::text("c"),
            Cell::rate(Some(1.0), None),
            Cell::ci(None, Unit::Percent, Some("1 task: a CI needs 2 or more")),
            Cell::undefined(None),
        ]));
        assert_eq!(
            t.csv(),
            "label,pass_rate,ci_low,ci_high,ci_resamples,ci_seed,ci_undefined\n\
             \"a,b\",0.25,0.1,0.4,100,7,\n\
             c,1,,,,,1 task: a CI needs 2 or more\n"
        );
        assert_eq!(t.shown(View::Markdown), vec![0, 1, 2, 3]);
        assert_eq!(t.shown(View::Csv), vec![0, 1, 2]);
        assert_eq!(
            t.undefined_reasons(&[2, 3]),
            vec!["1 task: a CI needs 2 or more".to_string()]
        );
    }
}
