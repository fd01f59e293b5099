//! Untrusted text (containers, imported files, remote servers) made safe to draw or print.
//!
//! Terminal control sequences — CSI (cursor moves, clear screen, colours), OSC (window title,
//! hyperlinks, clipboard), DCS and the rest — are removed by `strip-ansi-escapes` (a `vte`
//! parser, so sequences split oddly are still recognised). What remains is filtered: other C0/C1
//! control characters are dropped, tabs become spaces, and a carriage return keeps only what follows
//! it on its line (what a terminal would have shown for a progress bar).

/// Tab stops used when expanding tabs.
const TAB: usize = 4;

/// Returns `raw` with every terminal control sequence and control character removed.
pub fn text(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for (i, line) in raw.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let line = line.strip_suffix('\r').unwrap_or(line);
        let visible = line.rsplit('\r').next().unwrap_or(line);
        let mut col = 0;
        // The stripper drops tabs, so expand them between stripped pieces.
        for (j, piece) in visible.split('\t').enumerate() {
            if j > 0 {
                let n = TAB - col % TAB;
                out.extend(std::iter::repeat_n(' ', n));
                col += n;
            }
            for c in strip_ansi_escapes::strip_str(piece).chars() {
                match c {
                    c if c.is_control() => {}
                    // Unicode bidi controls can reorder what is shown; drop them too.
                    '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {}
                    c => {
                        out.push(c);
                        col += 1;
                    }
                }
            }
        }
    }
    out
}

/// [`text`] for bytes that may not be UTF-8.
pub fn bytes(raw: &[u8]) -> String {
    text(&String::from_utf8_lossy(raw))
}

/// The first at most `max` bytes of `s`, cut back to a char boundary.
pub fn head(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The last at most `max` bytes of `s`, cut forward to a char boundary.
pub fn tail(s: &str, max: usize) -> &str {
    let mut from = s.len().saturating_sub(max);
    while !s.is_char_boundary(from) {
        from += 1;
    }
    &s[from..]
}

/// One line of untrusted text (remote or from a container): [`text`]-sanitized, line breaks made
/// spaces.
pub fn one_line(s: &str) -> String {
    text(s).replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_csi_osc_and_controls() {
        let hostile =
            "\x1b[2J\x1b[H\x1b]0;pwned\x07hello \x1b[31mred\x1b[0m\x1b[10;10Hmoved\x08\x07\n";
        assert_eq!(text(hostile), "hello redmoved\n");
        // OSC 52 clipboard write and OSC 8 hyperlink.
        assert_eq!(
            text("a\x1b]52;c;ZXZpbA==\x07b\x1b]8;;http://x\x1b\\c"),
            "abc"
        );
        // A DCS string goes entirely; a C1 control character (U+009B, CSI) is dropped and what
        // follows it is inert text.
        assert_eq!(text("y\x1bPq#0;1\x1b\\z"), "yz");
        assert_eq!(text("x\u{9b}2J"), "x2J");
        assert!(
            !text("\x1b[1m\x1bc\x1b(0\x0e\x0f")
                .chars()
                .any(char::is_control)
        );
    }

    #[test]
    fn carriage_returns_and_tabs() {
        assert_eq!(text("10%\r50%\r100%\r\nnext"), "100%\nnext");
        assert_eq!(text("a\tb"), "a   b");
    }

    #[test]
    fn bidi_overrides_are_dropped() {
        assert_eq!(text("abc\u{202e}fed"), "abcfed");
    }

    #[test]
    fn head_and_tail_respect_char_boundaries() {
        let s = "aé€b"; // 1 + 2 + 3 + 1 bytes
        assert_eq!(head(s, 2), "a");
        assert_eq!(head(s, 3), "aé");
        assert_eq!(head(s, 99), s);
        assert_eq!(tail(s, 2), "b");
        assert_eq!(tail(s, 4), "€b");
        assert_eq!(tail(s, 99), s);
    }
}
