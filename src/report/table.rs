//! The table model the report's writers share: a header, which columns hold numbers, and rows of
//! cells already formatted for their writer. [`super::csv`] builds one per CSV file and writes it
//! as RFC 4180 through the `csv` crate ([`Table::csv`]); [`super::markdown`] and
//! [`super::exposure`] lay tables out as GitHub-flavoured Markdown ([`Table::markdown`],
//! [`header`], [`row`]).

/// One table: column titles, their alignment and rows of cells (as many cells a row as titles).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    /// Column titles.
    pub head: Vec<String>,
    /// Right-aligned (numeric) columns in Markdown; a missing entry is left-aligned. CSV has no
    /// alignment and ignores it.
    pub right: Vec<bool>,
    /// Cells, already formatted (and escaped where the writer needs it).
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table of `head` and `rows`, every column left-aligned.
    pub fn new<H: AsRef<str>>(head: &[H], rows: impl Iterator<Item = Vec<String>>) -> Self {
        Self {
            head: head.iter().map(|h| h.as_ref().to_string()).collect(),
            right: Vec::new(),
            rows: rows.collect(),
        }
    }

    /// The same table with `right` marking its numeric (right-aligned) columns.
    pub fn aligned(mut self, right: &[bool]) -> Self {
        self.right = right.to_vec();
        self
    }

    /// The table as CSV (RFC 4180, `\n` line ends): the header, then one record a row.
    pub fn csv(&self) -> String {
        let mut w = ::csv::Writer::from_writer(Vec::new());
        // Writing to a Vec cannot fail.
        let _ = w.write_record(&self.head);
        for r in &self.rows {
            let _ = w.write_record(r);
        }
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }

    /// The table as GitHub-flavoured Markdown appended to `out`: header, rule, one line a row
    /// (cells as they are: escape them with [`super::md_cell`] first).
    pub fn markdown(&self, out: &mut String) {
        header(out, &self.head, &self.right);
        for r in &self.rows {
            row(out, r);
        }
    }
}

/// One Markdown table line: `| a | b |`.
pub fn row<C: AsRef<str>>(out: &mut String, cells: &[C]) {
    out.push('|');
    for c in cells {
        out.push(' ');
        out.push_str(c.as_ref());
        out.push_str(" |");
    }
    out.push('\n');
}

/// A Markdown header row and its rule; `right` marks numeric (right-aligned) columns.
pub fn header<C: AsRef<str>>(out: &mut String, cells: &[C], right: &[bool]) {
    row(out, cells);
    out.push('|');
    for (i, _) in cells.iter().enumerate() {
        out.push_str(if right.get(i).copied().unwrap_or(false) {
            "---:|"
        } else {
            "---|"
        });
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_table_two_layouts() {
        let t = Table::new(
            &["task", "pass_rate"],
            [
                vec!["a,b".to_string(), "0.5".to_string()],
                vec!["c".to_string(), String::new()],
            ]
            .into_iter(),
        )
        .aligned(&[false, true]);
        assert_eq!(t.csv(), "task,pass_rate\n\"a,b\",0.5\nc,\n");
        let mut md = String::new();
        t.markdown(&mut md);
        assert_eq!(
            md,
            "| task | pass_rate |\n|---|---:|\n| a,b | 0.5 |\n| c |  |\n"
        );
    }
}
