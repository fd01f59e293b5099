//! A table of the results model ([`crate::report::model::Table`]) drawn into a width: the first
//! column is the row's name (indented under the table's caption); the others are kept by
//! priority (then position) while they fit, numbers right-aligned, each cell in its tone's
//! style. Columns that do not fit are not dropped in silence: a dim line under the table says how
//! many there are and how to see them (`→` scrolls sideways, a wider terminal shows them), and a
//! table scrolled sideways says how many columns are off to the left. Undefined cells are a bare
//! `—` with their reasons listed once under the table; a long remark beside a value (`+8.3 (only
//! 4 of 12 treated trials used a skill)`) becomes a numbered footnote (`+8.3 [1]`).

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::fit;
use crate::report::model::{Row, Table, Tone, Value, View};

/// Longest remark shown beside its value; longer ones become footnotes.
const NOTE_INLINE: usize = 12;
use crate::tui::theme::Theme;

/// Narrowest name column before columns are dropped.
const LABEL_MIN: usize = 10;
/// Widest name column.
const LABEL_MAX: usize = 28;
/// Columns of this priority or lower are kept before the names get their natural width; the
/// others only when they fit next to whole names.
const KEY_PRIORITY: u8 = 1;

/// The style of a tone.
pub fn tone_style(t: &Theme, tone: Tone) -> Style {
    match tone {
        Tone::Plain => t.text,
        Tone::Dim => t.dim,
        Tone::Accent => t.accent,
        Tone::Gain => t.gain,
        Tone::Loss => t.loss,
        Tone::Warn => t.warn,
        Tone::Running => t.running,
    }
}

/// What was drawn of a table.
#[derive(Debug, Clone, Default)]
pub struct Drawn {
    /// The lines: header, rows, then the notes (hidden columns, undefined reasons).
    pub lines: Vec<Line<'static>>,
    /// Columns (besides the name) the width left out.
    pub hidden: usize,
    /// Columns scrolled off to the left.
    pub left: usize,
    /// Their headers, in order (`A`, `judged`): what the pane names so that a scrolled table
    /// never hides its baseline without a sign.
    pub left_heads: Vec<String>,
    /// The largest useful offset: the one at which the last column shows (0 when every column
    /// fits unscrolled). Scrolling further would only hide more.
    pub max_offset: usize,
}

/// One drawn column: header, width, alignment, cells, and the spaces before it.
struct Col {
    head: String,
    right: bool,
    cells: Vec<(String, Style)>,
    gap: usize,
}

impl Col {
    fn width(&self) -> usize {
        self.cells
            .iter()
            .map(|(s, _)| s.chars().count())
            .chain([self.head.chars().count()])
            .max()
            .unwrap_or(0)
    }

    fn pad(&self, text: &str, w: usize) -> String {
        let gap = " ".repeat(self.gap);
        if self.right {
            format!("{gap}{text:>w$}")
        } else {
            format!("{gap}{text:<w$}")
        }
    }
}

/// Draws `table` as the dashboard shows it into `width` columns, its first `offset` columns
/// scrolled off to the left (0: the columns the width allows, by priority). Pinned columns
/// ([`crate::report::model::Column::pinned`]) stay; `offset` counts the others and stops at
/// [`Drawn::max_offset`].
pub fn draw(t: &Theme, table: &Table, width: usize, offset: usize) -> Drawn {
    draw_with(t, table, width, offset, false, 2)
}

/// [`draw`] for a narrow pane: one space between columns, the shortest headers (`n` for
/// `tasks`), rows not indented, and no line for the columns left out — the pane says it in its
/// legend ([`Drawn::hidden`], [`Drawn::left`]).
/// Two spaces between columns when every column fits so, else one.
pub fn draw_compact(t: &Theme, table: &Table, width: usize, offset: usize) -> Drawn {
    let roomy = draw_with(t, table, width, offset, true, 2);
    if roomy.hidden == 0 {
        return roomy;
    }
    draw_with(t, table, width, offset, true, 1)
}

fn draw_with(
    t: &Theme,
    table: &Table,
    width: usize,
    offset: usize,
    compact: bool,
    gap: usize,
) -> Drawn {
    // Rows are indented under the caption, except in a compact pane.
    let indent = if compact { 0 } else { 2 };
    let shown = table.shown(View::Dashboard);
    let Some((&label_i, rest)) = shown.split_first() else {
        return Drawn::default();
    };
    let rows: Vec<&Row> = table.rows_in(View::Dashboard).collect();
    let mut footnotes: Vec<String> = Vec::new();
    let mut text_of = |v: &Value| match v {
        Value::Noted { value, note } if note.chars().count() > NOTE_INLINE => {
            let k = match footnotes.iter().position(|n| n == note) {
                Some(k) => k,
                None => {
                    footnotes.push(note.clone());
                    footnotes.len() - 1
                }
            };
            format!("{} [{}]", value.human(false), k + 1)
        }
        v => v.human(false),
    };
    let cols: Vec<(usize, Col)> = rest
        .iter()
        .map(|&i| {
            let c = &table.columns[i];
            let head = match (&c.abbr, compact) {
                (Some(a), true) => a.clone(),
                _ => c.header(View::Dashboard).to_string(),
            };
            let col = Col {
                head,
                gap,
                right: c.numeric,
                cells: rows
                    .iter()
                    .map(|r| {
                        let cell = &r.cells[i];
                        (text_of(&cell.value), tone_style(t, cell.tone))
                    })
                    .collect(),
            };
            (i, col)
        })
        .collect();
    let caption = table.columns[label_i].header(View::Dashboard).to_string();
    let labels: Vec<(String, Style)> = rows
        .iter()
        .map(|r| {
            let c = &r.cells[label_i];
            let style = if r.total {
                t.accent
            } else {
                tone_style(t, c.tone)
            };
            (c.value.human(false), style)
        })
        .collect();
    let natural = labels
        .iter()
        .map(|(s, _)| s.chars().count())
        .chain([caption.chars().count().saturating_sub(2)])
        .max()
        .unwrap_or(0)
        .clamp(LABEL_MIN, LABEL_MAX);
    let room = width - width.min(indent);
    let pinned: Vec<bool> = cols.iter().map(|(i, _)| table.columns[*i].pinned).collect();
    let unscrolled = by_priority(table, &cols, natural, room);
    // The offset at which the last column shows; none when everything fits unscrolled.
    let max_offset = if unscrolled.iter().all(|k| *k) {
        0
    } else {
        let scrollable = pinned.iter().filter(|p| !**p).count();
        (1..scrollable.max(1))
            .find(|&o| {
                in_order(&cols, &pinned, o, natural, room)
                    .last()
                    .copied()
                    .unwrap_or(true)
            })
            .unwrap_or(scrollable.saturating_sub(1))
    };
    let offset = offset.min(max_offset);
    let keep = if offset == 0 {
        unscrolled
    } else {
        in_order(&cols, &pinned, offset, natural, room)
    };
    let kept: Vec<&Col> = cols
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|((_, c), _)| c)
        .collect();
    let cols_w: usize = kept.iter().map(|c| c.width() + gap).sum();
    let label_w = natural.min(width.saturating_sub(indent + cols_w)).max(1);
    let mut lines = Vec::with_capacity(rows.len() + 3);
    let mut head = vec![Span::styled(
        format!(
            "{:<w$}",
            fit(&caption, label_w + indent),
            w = label_w + indent
        ),
        t.header,
    )];
    for c in &kept {
        head.push(Span::styled(c.pad(&c.head, c.width()), t.header));
    }
    lines.push(Line::from(head));
    for (r, (label, style)) in labels.into_iter().enumerate() {
        let mut spans = vec![Span::styled(
            format!("{}{:<label_w$}", " ".repeat(indent), fit(&label, label_w)),
            style,
        )];
        for c in &kept {
            let (text, style) = c.cells.get(r).cloned().unwrap_or_default();
            spans.push(Span::styled(c.pad(&text, c.width()), style));
        }
        lines.push(Line::from(spans));
    }
    // The scrollable columns left of the first one shown are off to the left.
    let left_heads: Vec<String> = cols
        .iter()
        .zip(&pinned)
        .filter(|(_, p)| !**p)
        .take(offset)
        .map(|((_, c), _)| c.head.clone())
        .collect();
    let hidden = keep.iter().filter(|k| !**k).count().saturating_sub(offset);
    let mut note = Vec::new();
    if offset > 0 {
        note.push(format!("← {} off-screen: ←", left_heads.join(" ")));
    }
    if hidden > 0 {
        note.push(format!(
            "+{} more: → or a wider terminal",
            crate::format::count(hidden, "column", "columns")
        ));
    }
    if !note.is_empty() && !compact {
        lines.push(Line::from(Span::styled(
            fit(&format!("  {}", note.join(" · ")), width),
            t.dim,
        )));
    }
    let shown_cols: Vec<usize> = cols
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|((i, _), _)| *i)
        .collect();
    for (k, n) in footnotes.iter().enumerate() {
        lines.push(Line::from(Span::styled(
            fit(&format!("  [{}] {n}", k + 1), width),
            t.dim,
        )));
    }
    let reasons = table.undefined_reasons(&shown_cols);
    if !reasons.is_empty() {
        lines.push(Line::from(Span::styled(
            fit(&format!("  — = undefined: {}", reasons.join("; ")), width),
            t.dim,
        )));
    }
    Drawn {
        lines,
        hidden,
        left: offset,
        left_heads,
        max_offset,
    }
}

/// Columns kept by priority (then position) while they fit beside the narrowest name; once the
/// key columns are in, the names take their natural width.
fn by_priority(table: &Table, cols: &[(usize, Col)], natural: usize, width: usize) -> Vec<bool> {
    let mut order: Vec<usize> = (0..cols.len()).collect();
    order.sort_by_key(|&k| (table.columns[cols[k].0].priority, k));
    let mut keep = vec![false; cols.len()];
    let mut used = LABEL_MIN;
    let mut whole_labels = false;
    for k in order {
        if table.columns[cols[k].0].priority > KEY_PRIORITY && !whole_labels {
            used += natural - LABEL_MIN;
            whole_labels = true;
        }
        let w = cols[k].1.width() + cols[k].1.gap;
        if used + w <= width {
            used += w;
            keep[k] = true;
        }
    }
    keep
}

/// Scrolled sideways: the pinned columns, then the others from the `offset`-th on, in order,
/// while they fit beside the names.
fn in_order(
    cols: &[(usize, Col)],
    pinned: &[bool],
    offset: usize,
    natural: usize,
    width: usize,
) -> Vec<bool> {
    let mut keep = vec![false; cols.len()];
    let mut used = natural;
    for (k, (_, c)) in cols.iter().enumerate().filter(|(k, _)| pinned[*k]) {
        let w = c.width() + c.gap;
        if used + w <= width {
            used += w;
            keep[k] = true;
        }
    }
    let scrollable = cols.iter().enumerate().filter(|(k, _)| !pinned[*k]);
    for (k, (_, c)) in scrollable.skip(offset) {
        let w = c.width() + c.gap;
        if used + w > width {
            break;
        }
        used += w;
        keep[k] = true;
    }
    keep
}
