//! Word wrapping of styled lines for the views that let long text be read whole (the trial
//! detail's logs with `w`, the skill browser's document and rubric, the Results view's notes):
//! lines break at spaces, a word longer than a line is cut, span and line styles are kept, and
//! [`hanging`] indents the rows after the first under a label.

use ratatui::text::{Line, Span};

/// Splits text into runs of spaces and runs of other characters.
fn tokens(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut prev: Option<bool> = None;
    for (i, c) in s.char_indices() {
        let space = c == ' ';
        if prev.is_some_and(|p| p != space) {
            out.push(&s[start..i]);
            start = i;
        }
        prev = Some(space);
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// Columns `s` takes on screen.
pub fn width_of(s: &str) -> usize {
    Span::raw(s).width()
}

/// Word-wraps a line to `width` columns (long words are cut), keeping span and line styles.
pub fn wrap(line: &Line<'static>, width: usize) -> Vec<Line<'static>> {
    if width == 0 || line.width() <= width {
        return vec![line.clone()];
    }
    let mut rows: Vec<Vec<Span<'static>>> = vec![Vec::new()];
    let mut col = 0;
    for span in &line.spans {
        for tok in tokens(&span.content) {
            let w = width_of(tok);
            if col + w > width && col > 0 {
                rows.push(Vec::new());
                col = 0;
                if tok.starts_with(' ') {
                    continue;
                }
            }
            if w <= width {
                rows.last_mut()
                    .expect("one row")
                    .push(Span::styled(tok.to_string(), span.style));
                col += w;
                continue;
            }
            for c in tok.chars() {
                let mut buf = [0u8; 4];
                let cw = width_of(c.encode_utf8(&mut buf));
                if col + cw > width && col > 0 {
                    rows.push(Vec::new());
                    col = 0;
                }
                rows.last_mut()
                    .expect("one row")
                    .push(Span::styled(c.to_string(), span.style));
                col += cw;
            }
        }
    }
    rows.into_iter()
        .map(|spans| Line {
            spans,
            style: line.style,
            alignment: line.alignment,
        })
        .collect()
}

/// `head` (a label, say) and then `text` wrapped into the columns left of `width`, the rows after
/// the first indented under the end of `head`: a long value read whole under its label.
pub fn hanging(head: Vec<Span<'static>>, text: Span<'static>, width: usize) -> Vec<Line<'static>> {
    hanging_line(head, Line::from(text), width)
}

/// [`hanging`] of a line of several styled spans.
pub fn hanging_line(
    head: Vec<Span<'static>>,
    text: Line<'static>,
    width: usize,
) -> Vec<Line<'static>> {
    let head_w: usize = head.iter().map(|s| s.width()).sum();
    let room = width.saturating_sub(head_w).max(8);
    wrap(&text, room)
        .into_iter()
        .enumerate()
        .map(|(i, row)| {
            let mut spans = if i == 0 {
                head.clone()
            } else {
                vec![Span::raw(" ".repeat(head_w))]
            };
            spans.extend(row.spans);
            Line::from(spans)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hanging_rows_fit_and_keep_every_word() {
        let text = "Score 60.0 < 85; Invocations 21 < 50; Error rate 80.95% > 5.00%";
        let rows = hanging(vec![Span::raw("feature gate ✘ ")], Span::raw(text), 40);
        assert!(rows.len() > 1);
        assert!(rows.iter().all(|r| r.width() <= 40), "{rows:?}");
        assert!(rows[1].to_string().starts_with(&" ".repeat(15)));
        let joined: Vec<String> = rows
            .iter()
            .map(|r| r.to_string().trim().to_string())
            .collect();
        assert_eq!(joined.join(" ").trim_start_matches("feature gate ✘ "), text);
    }
}
