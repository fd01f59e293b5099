//! Tables for the terminal, every one fitted to its width the same way (comfy-table's dynamic
//! content arrangement, as cargo and comfy-table's own users print them):
//!
//! 1. a table that fits as it is is printed as it is (and always so into a pipe: no width);
//! 2. else its cells wrap at word boundaries — no column is made narrower than its longest word,
//!    so `condition` never reads `conditio`/`n` — except in free-text columns ([`Column::text`]:
//!    problems, reasons), which take the room left and break a word (a path) only when it is
//!    longer than that room;
//! 3. else the headers take their short forms (`cancelled` → `canc`), listed under the table as
//!    `abbreviations: canc = cancelled · …`, and then, if still too wide, one space between columns
//!    instead of two;
//! 4. else the columns are split into tables that each fit, one under the other, each beginning
//!    with the first column (the row's name), as R prints a data frame too wide for its console
//!    (free-text columns last, in tables of their own where they do not fit beside the others);
//!    each takes the first of the layouts of 2 and 3 that fits it, and leaves out the rows that
//!    have nothing but their name in it (the tasks without problems).
//!
//! No line is wider than the width unless one column and the first are wider together.

use comfy_table::{
    Cell, ColumnConstraint, ContentArrangement, Table, Width, presets::UTF8_FULL_CONDENSED,
};

/// One column of a table: its header, a short form for narrow terminals, and whether its cells
/// are free text.
#[derive(Debug, Clone)]
pub struct Column {
    header: String,
    short: Option<String>,
    text: bool,
}

impl Column {
    /// A column headed `header`.
    pub fn new(header: impl Into<String>) -> Column {
        Column {
            header: header.into(),
            short: None,
            text: false,
        }
    }

    /// The header's short form (`canc` for `cancelled`), used when the full headers do not fit.
    pub fn short(mut self, short: impl Into<String>) -> Column {
        self.short = Some(short.into());
        self
    }

    /// Free text (a problem, a reason): wraps into the room the other columns leave, breaking a
    /// word only when it is longer than that room.
    pub fn text(mut self) -> Column {
        self.text = true;
        self
    }

    fn header_in(&self, short: bool) -> &str {
        match &self.short {
            Some(s) if short => s,
            _ => &self.header,
        }
    }
}

/// The narrowest a free-text column is made (its header's longest word if that is longer).
const TEXT_MIN: usize = 30;

/// A table fitted to a width (see the module docs): one table, or the several it was split
/// into, and the abbreviations its headers took. `Display` prints the tables one under the other
/// and, when there are any, the line `abbreviations: canc = cancelled · …` (wrapped to the width)
/// under them; a no-break space in a cell (which kept a quantity whole in the layout) prints as a
/// plain space.
pub struct Fitted {
    /// The table, or the tables it was split into (each beginning with the first column).
    pub tables: Vec<Table>,
    /// `short = full` for each shortened header.
    pub abbreviations: Vec<String>,
    width: Option<u16>,
}

impl std::fmt::Display for Fitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, t) in self.tables.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            // A no-break space kept a quantity whole while the table was laid out; printed, it
            // is a plain space (what a reader copies, greps or pipes).
            write!(f, "{}", t.to_string().replace('\u{a0}', " "))?;
        }
        if !self.abbreviations.is_empty() {
            let width = self.width.map_or(usize::MAX, usize::from);
            for line in legend_lines("abbreviations: ", &self.abbreviations, " · ", width) {
                write!(f, "\n{line}")?;
            }
        }
        Ok(())
    }
}

/// `head` and `items` joined by `sep` in lines of at most `width` characters where they fit,
/// breaking only between items; lines after the first indented under the end of `head`.
fn legend_lines(head: &str, items: &[String], sep: &str, width: usize) -> Vec<String> {
    let indent = " ".repeat(chars(head));
    let mut lines = vec![head.to_string()];
    let mut first_item = true;
    for item in items {
        let line = lines.last_mut().expect("one line");
        let joint = if first_item { "" } else { sep };
        if !first_item && chars(line) + chars(joint) + chars(item) > width {
            lines.push(format!("{indent}{item}"));
        } else {
            line.push_str(joint);
            line.push_str(item);
        }
        first_item = false;
    }
    lines
}

/// A note under a table (`infra = trials an infrastructure fault ended …`) wrapped at word
/// boundaries to `width` (a terminal's: [`terminal_width`]; `None`, into a pipe: one line as it
/// is), the lines after the first indented under its explanation — after the first ` = ` when
/// that comes within the first 24 characters, else not at all. A word longer than the room
/// stays whole on a line of its own.
pub fn note(text: &str, width: Option<u16>) -> String {
    let Some(width) = width.map(usize::from) else {
        return text.to_string();
    };
    let (head, rest) = match text.find(" = ") {
        Some(at) if chars(&text[..at]) < 24 => text.split_at(at + 3),
        _ => ("", text),
    };
    let words: Vec<String> = rest.split(' ').map(str::to_string).collect();
    let room = width.saturating_sub(chars(head)).max(20);
    legend_lines(head, &words, " ", chars(head) + room).join("\n")
}

/// One line of text (a run's header, a flag, a learning space's state) wrapped at spaces to
/// `width` (a terminal's: [`terminal_width`]; `None`, into a pipe: one line as it is), the lines
/// after the first indented two spaces more than the text's own indent. A word longer than the
/// room stays whole.
pub fn paragraph(text: &str, width: Option<u16>) -> String {
    let Some(width) = width.map(usize::from) else {
        return text.to_string();
    };
    let indent = " ".repeat(chars(text) - chars(text.trim_start_matches(' ')) + 2);
    let words: Vec<String> = text.split(' ').map(str::to_string).collect();
    let mut lines = vec![String::new()];
    for (i, word) in words.iter().enumerate() {
        let line = lines.last_mut().expect("one line");
        if i > 0 && chars(line) + 1 + chars(word) > width.max(20) {
            lines.push(format!("{indent}{word}"));
        } else {
            if i > 0 {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines.join("\n")
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// The widest line of `text`.
fn content_width(text: &str) -> usize {
    text.lines().map(chars).max().unwrap_or(0)
}

/// The longest word of `text`: split where comfy-table wraps — at spaces and line breaks, never
/// at a no-break space (a number that must stay whole, `[8.3,\u{a0}58.3]`).
fn longest_word(text: &str) -> usize {
    text.split([' ', '\n', '\t']).map(chars).max().unwrap_or(0)
}

/// The width tables are fitted to: the terminal's when standard output is one, else none.
pub fn terminal_width() -> Option<u16> {
    Table::new().width()
}

/// What a column needs: its body's widest line and longest word.
struct Need {
    widest: usize,
    word: usize,
}

/// A way to lay a table out: which headers, how much padding a column has.
#[derive(Clone, Copy)]
struct Layout {
    short: bool,
    padding: (u16, u16),
}

impl Layout {
    const FULL: Layout = Layout {
        short: false,
        padding: (1, 1),
    };
    const SHORT: Layout = Layout {
        short: true,
        padding: (1, 1),
    };
    const TIGHT: Layout = Layout {
        short: true,
        padding: (1, 0),
    };

    fn pad(self) -> usize {
        usize::from(self.padding.0 + self.padding.1)
    }
}

/// The table `rows` (cells, or text for cells) under `columns`, fitted to `width` columns
/// (`None`: not fitted, as when printing into a pipe) the way the module docs say.
pub fn fit<C: Into<Cell>>(columns: &[Column], rows: Vec<Vec<C>>, width: Option<u16>) -> Fitted {
    let rows: Vec<Vec<Cell>> = rows
        .into_iter()
        .map(|r| r.into_iter().map(Into::into).collect())
        .collect();
    let needs: Vec<Need> = (0..columns.len())
        .map(|i| {
            let cells = rows.iter().filter_map(|r| r.get(i)).map(Cell::content);
            cells.fold(Need { widest: 0, word: 0 }, |n, c| Need {
                widest: n.widest.max(content_width(&c)),
                word: n.word.max(longest_word(&c)),
            })
        })
        .collect();
    let all: Vec<usize> = (0..columns.len()).collect();
    let Some(w) = width.map(usize::from) else {
        return Fitted {
            tables: vec![build(columns, &rows, &all, Layout::FULL, None)],
            abbreviations: Vec::new(),
            width,
        };
    };
    // The width of `cols` laid out `how`: as they are, or as narrow as their words allow.
    let span = |cols: &[usize], how: Layout, narrowest: bool| -> usize {
        let inner: usize = cols
            .iter()
            .map(|&i| {
                let c = &columns[i];
                let header = c.header_in(how.short);
                let cell = if !narrowest {
                    content_width(header).max(needs[i].widest)
                } else if c.text {
                    longest_word(header).max(needs[i].word.min(TEXT_MIN))
                } else {
                    longest_word(header).max(needs[i].word)
                };
                cell + how.pad()
            })
            .sum();
        inner + cols.len() + 1
    };
    if span(&all, Layout::FULL, false) <= w {
        return Fitted {
            tables: vec![build(columns, &rows, &all, Layout::FULL, None)],
            abbreviations: Vec::new(),
            width,
        };
    }
    let layouts = [Layout::FULL, Layout::SHORT, Layout::TIGHT];
    let groups = if span(&all, Layout::TIGHT, true) <= w {
        vec![all]
    } else {
        // Too wide even tight: tables of the columns that fit together, the first in each, the
        // free-text columns after the others (so they get the room of a table of their own).
        let (text, other): (Vec<usize>, Vec<usize>) =
            (1..columns.len()).partition(|&i| columns[i].text);
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut group = vec![0];
        for i in other.into_iter().chain(text) {
            group.push(i);
            if group.len() > 2 && span(&group, Layout::TIGHT, true) > w {
                group.pop();
                groups.push(std::mem::replace(&mut group, vec![0, i]));
            }
        }
        groups.push(group);
        for g in &mut groups {
            g.sort_unstable();
        }
        groups
    };
    let mut abbreviations: Vec<String> = Vec::new();
    let mut tables = Vec::new();
    for cols in &groups {
        // Each table in the first layout that fits it (full headers wrapped at word boundaries,
        // then short headers, then one space between columns).
        let how = layouts
            .into_iter()
            .find(|how| span(cols, *how, true) <= w)
            .unwrap_or(Layout::TIGHT);
        if how.short {
            for &i in cols {
                let c = &columns[i];
                if let Some(s) = c.short.as_ref().filter(|s| **s != c.header) {
                    let a = format!("{s} = {}", c.header);
                    if !abbreviations.contains(&a) {
                        abbreviations.push(a);
                    }
                }
            }
        }
        let least: Vec<usize> = cols
            .iter()
            .map(|&i| span(&[i], how, true) - 2 - how.pad())
            .collect();
        let want: Vec<usize> = cols
            .iter()
            .map(|&i| span(&[i], how, false) - 2 - how.pad())
            .collect();
        let room = w.saturating_sub((cols.len() + 1) + cols.len() * how.pad());
        let widths = share(&least, &want, room);
        // In a split table, a row with nothing but its name is left out (a task without
        // problems), and so is a table of such rows only.
        let shown: Vec<Vec<Cell>> = rows
            .iter()
            .filter(|r| {
                groups.len() == 1
                    || cols[1..]
                        .iter()
                        .any(|&i| r.get(i).is_some_and(|c| !c.content().trim().is_empty()))
            })
            .cloned()
            .collect();
        if shown.is_empty() && !rows.is_empty() {
            continue;
        }
        tables.push(build(columns, &shown, cols, how, Some((w, &widths))));
    }
    Fitted {
        tables,
        abbreviations,
        width,
    }
}

/// Widths for columns that need at least `least` and at most `want` characters in `room`: each
/// its least, then what is left given to the columns that want the least more first, each all
/// it wants while there is room (so a short header is not wrapped to give a long text one more
/// character), none above its want.
fn share(least: &[usize], want: &[usize], room: usize) -> Vec<usize> {
    let mut widths = least.to_vec();
    let mut left = room.saturating_sub(least.iter().sum());
    let mut hungry: Vec<usize> = (0..widths.len()).filter(|&k| want[k] > least[k]).collect();
    hungry.sort_by_key(|&k| want[k] - least[k]);
    for k in hungry {
        let give = (want[k] - widths[k]).min(left);
        widths[k] += give;
        left -= give;
    }
    widths
}

/// The table of columns `cols` laid out `how`; with `fit` = (width, the width of each of `cols`),
/// its cells wrapped into those widths.
fn build(
    columns: &[Column],
    rows: &[Vec<Cell>],
    cols: &[usize],
    how: Layout,
    fit: Option<(usize, &[usize])>,
) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(cols.iter().map(|&i| columns[i].header_in(how.short)));
    for row in rows {
        t.add_row(
            cols.iter()
                .map(|&i| row.get(i).cloned().unwrap_or_else(|| Cell::new(""))),
        );
    }
    for c in t.column_iter_mut() {
        c.set_padding(how.padding);
    }
    match fit {
        None => {
            t.set_content_arrangement(ContentArrangement::Disabled);
        }
        Some((w, widths)) => {
            t.set_content_arrangement(ContentArrangement::Dynamic);
            t.set_width(w.min(usize::from(u16::MAX)) as u16);
            for (k, l) in widths.iter().enumerate() {
                if let Some(c) = t.column_mut(k) {
                    // comfy-table counts an absolute width with the column's padding.
                    let l = (l + how.pad()).min(usize::from(u16::MAX)) as u16;
                    c.set_constraint(ColumnConstraint::Absolute(Width::Fixed(l)));
                }
            }
        }
    }
    t
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_paragraph_wraps_between_words_with_a_hanging_indent() {
        let text = "run examples-oracle-x5 — finished · agent oracle · 5 tasks × 5 trials · created 2026-12-06T23:52:31.241Z";
        assert_eq!(paragraph(text, None), text);
        let w = paragraph(text, Some(80));
        let lines: Vec<&str> = w.lines().collect();
        assert_eq!(lines.len(), 2, "{w}");
        assert!(lines.iter().all(|l| l.chars().count() <= 80), "{w}");
        assert_eq!(lines[1], "  2026-12-06T23:52:31.241Z");
        assert_eq!(w.replace("\n  ", " "), text);
        // A word longer than the room stays whole.
        let long = format!("a {}", "x".repeat(30));
        assert_eq!(
            paragraph(&long, Some(20)),
            format!("a\n  {}", "x".repeat(30))
        );
    }
    use super::*;

    /// A note wraps at word boundaries under its explanation on a terminal, and stays one line
    /// into a pipe.
    #[test]
    fn a_note_wraps_between_words_under_its_explanation() {
        let text = "infra = trials an infrastructure fault ended (no reward, a build, runtime or \
                    provider error): not failures of the agent; Method D counts them 0";
        assert_eq!(note(text, None), text);
        let wrapped = note(text, Some(80));
        let lines: Vec<&str> = wrapped.lines().collect();
        assert!(lines.len() > 1, "{wrapped}");
        for l in &lines {
            assert!(l.chars().count() <= 80, "{l:?}");
        }
        for l in &lines[1..] {
            assert!(
                l.starts_with("        ") && !l.starts_with("         "),
                "{l:?}"
            );
        }
        assert_eq!(
            wrapped.split_whitespace().collect::<Vec<_>>(),
            text.split_whitespace().collect::<Vec<_>>(),
            "no word is broken or lost"
        );
        // No `=` near the start: no indent; a word longer than the room stays whole.
        let long = format!("see {} for more", "x".repeat(50));
        let w = note(&long, Some(30));
        assert!(w.lines().any(|l| l == "x".repeat(50)), "{w}");
        assert!(w.lines().all(|l| !l.starts_with(' ')), "{w}");
    }

    #[test]
    fn spare_room_goes_first_to_the_columns_that_want_least_more() {
        assert_eq!(share(&[5, 3, 10], &[5, 30, 40], 30), [5, 15, 10]);
        assert_eq!(share(&[5, 3, 10], &[5, 6, 40], 30), [5, 6, 19]);
        assert_eq!(share(&[5, 3, 10], &[5, 4, 40], 30), [5, 4, 21]);
        assert_eq!(share(&[5, 3], &[5, 4], 100), [5, 4]);
        assert_eq!(
            share(&[5, 3], &[9, 9], 4),
            [5, 3],
            "less room than least: least"
        );
    }

    #[test]
    fn the_legend_breaks_between_items_only() {
        let items: Vec<String> = ["canc = cancelled", "a-tmo = agent-timeout", "n = tasks"]
            .map(String::from)
            .to_vec();
        let lines = legend_lines("abbreviations: ", &items, " · ", 40);
        assert_eq!(
            lines,
            [
                "abbreviations: canc = cancelled",
                "               a-tmo = agent-timeout",
                "               n = tasks"
            ]
        );
        assert_eq!(
            legend_lines("x: ", &items[..1], " · ", 5),
            ["x: canc = cancelled"]
        );
    }
}
