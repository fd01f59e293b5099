//! TOML files as written: where a key's value is (line, column, its text as written) and a
//! syntax error as one line. Shared by every TOML file skillscope reads (`task.toml`,
//! `skillscope.toml`), so each names the place of a wrong key the same way.

/// Where the keys of a TOML file (`task.toml`, `skillscope.toml`, an experiment plan) are
/// written, from the `toml` crate's spans: each value's line and column and its text as written
/// (so `1e308` is echoed as `1e308`, not as 309 digits).
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

    /// The (line, column) of the key at `path` (tables down to the key), when it is written.
    fn at_path(&self, path: &[String]) -> Option<(usize, usize)> {
        let (first, rest) = path.split_first()?;
        let mut value = self.doc.as_ref()?.get_ref().get(first.as_str())?;
        for key in rest {
            value = match value.get_ref() {
                toml::de::DeValue::Table(t) => t.get(key.as_str())?,
                _ => return None,
            };
        }
        Some(line_column(self.text, value.span().start))
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

/// Reads `text` as a `T`, naming every key `T` refuses rather than the first: on failure each
/// key of the file (down to the leaves of its tables) is tried alone, and every one refused for
/// itself — an unknown key, a value of the wrong type — is listed as
/// `` `table.key` (line L, column C): why ``, joined with `; `, on one line. A refusal that
/// only the whole file has (a missing key) is given as the parser words it.
///
/// # Errors
/// The line above, or a syntax error ([`syntax_error`]).
pub(crate) fn parse_naming_every_key<T: serde::de::DeserializeOwned>(
    text: &str,
) -> Result<T, String> {
    let raw: toml::Table = toml::from_str(text).map_err(|e| syntax_error(text, &e))?;
    let whole = match toml::Value::Table(raw.clone()).try_into::<T>() {
        Ok(t) => return Ok(t),
        Err(e) => e,
    };
    let written = Written::of(text);
    let mut problems: Vec<(Option<(usize, usize)>, String)> = Vec::new();
    let mut leaves: Vec<(Vec<String>, toml::Value)> = Vec::new();
    collect_leaves(&raw, &mut Vec::new(), &mut leaves);
    for (path, value) in leaves {
        let alone = path.iter().rev().fold(value, |inner, key| {
            toml::Value::Table(toml::Table::from_iter([(key.clone(), inner)]))
        });
        if let Err(e) = alone.try_into::<T>() {
            let why = e.message().trim().replace('\n', "; ");
            // Alone, a key's table misses its siblings: that is not the key's fault.
            if why.starts_with("missing field") {
                continue;
            }
            let at = written.at_path(&path);
            let place = at
                .map(|(l, c)| format!(" (line {l}, column {c})"))
                .unwrap_or_default();
            problems.push((at, format!("`{}`{place}: {why}", path.join("."))));
        }
    }
    // In the file's order.
    problems.sort_by_key(|(at, _)| at.unwrap_or((usize::MAX, 0)));
    let problems: Vec<String> = problems.into_iter().map(|(_, p)| p).collect();
    if problems.is_empty() {
        let what = whole.message().trim().replace('\n', "; ");
        return Err(match whole.span() {
            Some(span) => {
                let (line, column) = line_column(text, span.start);
                format!("line {line}, column {column}: {what}")
            }
            None => what,
        });
    }
    Err(problems.join("; "))
}

/// Every leaf of `table` (a value that is not a table) with its key path.
fn collect_leaves(
    table: &toml::Table,
    path: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, toml::Value)>,
) {
    for (key, value) in table {
        path.push(key.clone());
        match value {
            toml::Value::Table(t) if !t.is_empty() => collect_leaves(t, path, out),
            v => out.push((path.clone(), v.clone())),
        }
        path.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        #[serde(default)]
        trials: u32,
        #[serde(default)]
        spaces: std::collections::BTreeMap<String, Space>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Space {
        label: String,
        #[serde(default)]
        keep: bool,
    }

    /// Three wrong keys at three depths are all named, each with its place, on one line; a
    /// missing key (only wrong for the whole file) is named as the parser words it.
    #[test]
    fn every_wrong_key_is_named_at_once() {
        let text = "trails = 2\ntrials = \"two\"\n[spaces.a]\nlable = \"A\"\n[spaces.b]\nlabel = \"B\"\nkeep = 3\n";
        let e = parse_naming_every_key::<Doc>(text).unwrap_err();
        assert!(!e.contains('\n'), "{e}");
        for want in [
            "`trails` (line 1, column 10): unknown field `trails`",
            "`trials` (line 2, column 10): invalid type",
            "`spaces.a.lable` (line 4, column 9): unknown field `lable`",
            "`spaces.b.keep` (line 7, column 8): invalid type",
        ] {
            assert!(e.contains(want), "{want:?} in {e}");
        }
        assert_eq!(e.matches("; `").count(), 3, "{e}");
        assert!(
            e.starts_with("`trails`") && e.ends_with("expected a boolean"),
            "{e}"
        );
        let e = parse_naming_every_key::<Doc>("[spaces.a]\nkeep = true\n").unwrap_err();
        assert!(e.contains("missing field `label`"), "{e}");
        assert!(parse_naming_every_key::<Doc>("trials = 2\n").is_ok());
        let e = parse_naming_every_key::<Doc>("trials = \n").unwrap_err();
        assert!(e.starts_with("line 1, column "), "{e}");
    }
}
