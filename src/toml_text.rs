//! TOML files as written: where a key's value is (line, column, its text as written) and a
//! syntax error as one line. Shared by every TOML file skillscope reads (`task.toml`,
//! `skillscope.toml`), so each names the place of a wrong key the same way.

/// Where the keys of a TOML file (`task.toml`, `skillscope.toml`) are written, from the `toml` crate's spans: each value's line
/// and column and its text as written (so `1e308` is echoed as `1e308`, not as 309 digits).
pub(crate) struct Written<'a> {
    text: &'a str,
    doc: Option<toml::Spanned<toml::de::DeTable<'a>>>,
}

impl<'a> Written<'a> {
    /// The places of `text`'s keys (none when it is not TOML).
    pub(crate) fn of(text: &'a str) -> Written<'a> {
        Written {
            text,
            doc: toml::de::DeTable::parse(text).ok(),
        }
    }

    /// The value of `key` in `table` (`""` = top level): (line, column, text as written).
    pub(crate) fn at(&self, table: &str, key: &str) -> Option<(usize, usize, &'a str)> {
        let doc = self.doc.as_ref()?.get_ref();
        let value = if table.is_empty() {
            doc.get(key)?
        } else {
            match doc.get(table)?.get_ref() {
                toml::de::DeValue::Table(t) => t.get(key)?,
                _ => return None,
            }
        };
        let span = value.span();
        let (line, column) = line_column(self.text, span.start);
        Some((line, column, self.text.get(span)?.trim()))
    }

    /// ` (line L, column C)` for `key` of `table`, or nothing when it is not written.
    pub(crate) fn place(&self, table: &str, key: &str) -> String {
        self.at(table, key)
            .map(|(l, c, _)| format!(" (line {l}, column {c})"))
            .unwrap_or_default()
    }

    /// The value of `key` of `table` as written, else `fallback`.
    pub(crate) fn value(&self, table: &str, key: &str, fallback: impl std::fmt::Display) -> String {
        self.at(table, key)
            .map(|(_, _, v)| v.to_string())
            .unwrap_or_else(|| fallback.to_string())
    }
}

/// The 1-based line and column (in characters) of byte `offset` of `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// A TOML syntax error as one line: `line L, column C: what the parser expected`.
pub(crate) fn syntax_error(text: &str, e: &toml::de::Error) -> String {
    let what = e.message().trim().replace('\n', "; ");
    match e.span() {
        Some(span) => {
            let (line, column) = line_column(text, span.start);
            format!("line {line}, column {column}: {what}")
        }
        None => what,
    }
}
