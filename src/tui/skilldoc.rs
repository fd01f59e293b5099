//! A skill file as the skill browser shows it, derived once per selection or data change (never
//! per frame):
//!
//! - Markdown (`SKILL.md`, `*.md`) rendered by `tui-markdown` in the theme's styles, with the
//!   entries Acontext's skill learner appends marked: an **SOP** entry is a `## …` section whose
//!   bullets are `- Principle:`, `- When to Apply:`, `- Steps:`; a **Warning** entry one whose
//!   bullets are `- Symptom:`, `- Root Cause:`, `- Correct Approach:`, `- Prevention:` (two of
//!   its keys are enough; keys may be bold). Entry lines take the theme's `sop` / `warning` style
//!   and a gutter mark, so they read without colour too.
//! - Other text files as they are.
//! - A unified diff (`similar`, 3 lines of context) between the curated version and the latest
//!   learned version of a file, added and removed lines in the theme's `pass` / `fail` styles.
//!
//! The text was sanitized when the data worker read it; nothing here adds control characters.

use std::time::Duration;

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use similar::{ChangeTag, TextDiff};
use tui_markdown::{AlertKind, Options, StyleSheet};

use super::theme::Theme;
use super::worker::{FileChange, SkillEntry, SkillOrigin};

pub use crate::analysis::skill_content::{EntryKind, entry_kind, sections};

/// What the gutter shows next to a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// Nothing.
    Plain,
    /// Part of a learned entry; `first` on its heading line.
    Entry {
        /// SOP or Warning.
        kind: EntryKind,
        /// The entry's first line.
        first: bool,
    },
    /// A line of a diff: added (`+`), removed (`-`) or context; the sign is drawn in the gutter
    /// of every row the line wraps into, so a wrapped change never reads as context.
    Diff(ChangeTag),
}

/// One line of a shown document.
#[derive(Debug, Clone, PartialEq)]
pub struct DocLine {
    /// Gutter mark.
    pub mark: Mark,
    /// The line.
    pub line: Line<'static>,
}

impl DocLine {
    fn plain(line: Line<'static>) -> DocLine {
        DocLine {
            mark: Mark::Plain,
            line,
        }
    }
}

/// The gutter of a line: two columns (a letter on an entry's first line, a bar on the rest).
pub fn gutter(theme: &Theme, mark: Mark, first_row: bool) -> Span<'static> {
    match mark {
        Mark::Plain => Span::raw("  "),
        Mark::Diff(tag) => match tag {
            ChangeTag::Insert => Span::styled("+ ", theme.pass),
            ChangeTag::Delete => Span::styled("- ", theme.fail),
            ChangeTag::Equal => Span::raw("  "),
        },
        Mark::Entry { kind, first } => {
            let (letter, style) = match kind {
                EntryKind::Sop => ("S", theme.sop),
                EntryKind::Warning => ("W", theme.warning),
            };
            let text = if first && first_row {
                format!("{letter}┃")
            } else {
                " ┃".to_string()
            };
            Span::styled(text, style.add_modifier(Modifier::BOLD))
        }
    }
}

/// `tui-markdown` styles taken from the theme.
#[derive(Debug, Clone)]
struct Sheet {
    h1: Style,
    h2: Style,
    h3: Style,
    code: Style,
    link: Style,
    quote: Style,
    meta: Style,
    marker: Style,
    border: Style,
    warn: Style,
    fail: Style,
    accent: Style,
}

impl Sheet {
    fn new(t: &Theme) -> Sheet {
        Sheet {
            h1: t.title.add_modifier(Modifier::UNDERLINED),
            h2: t.header,
            h3: t.accent,
            code: t.accent.remove_modifier(Modifier::BOLD),
            link: t.focus.add_modifier(Modifier::UNDERLINED),
            quote: t.dim,
            meta: t.dim,
            marker: t.accent,
            border: t.border,
            warn: t.warn,
            fail: t.fail,
            accent: t.accent,
        }
    }
}

impl StyleSheet for Sheet {
    fn heading(&self, level: u8) -> Style {
        match level {
            1 => self.h1,
            2 => self.h2,
            _ => self.h3,
        }
    }
    fn code(&self) -> Style {
        self.code
    }
    fn link(&self) -> Style {
        self.link
    }
    fn blockquote(&self) -> Style {
        self.quote
    }
    fn heading_meta(&self) -> Style {
        self.meta
    }
    fn metadata_block(&self) -> Style {
        self.meta
    }
    fn html(&self) -> Style {
        self.meta
    }
    fn footnote_ref(&self) -> Style {
        self.meta
    }
    fn footnote_def(&self) -> Style {
        self.meta
    }
    fn alert(&self, kind: AlertKind) -> Style {
        match kind {
            AlertKind::Warning => self.warn,
            AlertKind::Caution => self.fail,
            _ => self.accent,
        }
    }
    // Emoji icons have unreliable widths in terminals; the label says it.
    fn alert_icon(&self, _kind: AlertKind) -> &str {
        "!"
    }
    fn table_header(&self) -> Style {
        self.h3
    }
    fn table_border(&self) -> Style {
        self.border
    }
    fn list_marker(&self) -> Style {
        self.marker
    }
    fn image_alt(&self) -> Style {
        self.meta
    }
}

fn owned(line: Line<'_>) -> Line<'static> {
    Line {
        spans: line
            .spans
            .into_iter()
            .map(|s| Span::styled(s.content.into_owned(), s.style))
            .collect(),
        style: line.style,
        alignment: line.alignment,
    }
}

fn is_blank(l: &Line) -> bool {
    l.spans.iter().all(|s| s.content.trim().is_empty())
}

/// Markdown rendered in the theme's styles, learned entries marked.
pub fn markdown(theme: &Theme, text: &str) -> Vec<DocLine> {
    let options = Options::new(Sheet::new(theme));
    let mut out: Vec<DocLine> = Vec::new();
    for section in sections(text) {
        let kind = entry_kind(section);
        let rendered = tui_markdown::from_str_with_options(section, &options);
        let mut lines: Vec<Line<'static>> = rendered.lines.into_iter().map(owned).collect();
        while lines.last().is_some_and(is_blank) {
            lines.pop();
        }
        let skip = lines.iter().take_while(|l| is_blank(l)).count();
        if lines.len() == skip {
            continue;
        }
        if !out.is_empty() {
            out.push(DocLine::plain(Line::default()));
        }
        for (i, mut line) in lines.into_iter().skip(skip).enumerate() {
            let mark = match kind {
                Some(kind) => {
                    let entry = match kind {
                        EntryKind::Sop => theme.sop,
                        EntryKind::Warning => theme.warning,
                    };
                    line.style = entry.patch(line.style);
                    Mark::Entry {
                        kind,
                        first: i == 0,
                    }
                }
                None => {
                    line.style = theme.text.patch(line.style);
                    Mark::Plain
                }
            };
            out.push(DocLine { mark, line });
        }
    }
    out
}

/// Plain text, line by line.
pub fn plain(theme: &Theme, text: &str) -> Vec<DocLine> {
    text.lines()
        .map(|l| DocLine::plain(Line::styled(l.to_string(), theme.text)))
        .collect()
}

/// The unified diff of `old` (curated) → `new` (learned) of file `path`, 3 lines of context.
pub fn diff(theme: &Theme, old: &str, new: &str, path: &str) -> Vec<DocLine> {
    if old == new {
        return vec![DocLine::plain(Line::styled(
            format!("{path}: no differences"),
            theme.dim,
        ))];
    }
    let d = TextDiff::configure()
        .timeout(Duration::from_millis(200))
        .diff_lines(old, new);
    let mut out = vec![
        DocLine::plain(Line::styled(format!("--- curated/{path}"), theme.fail)),
        DocLine::plain(Line::styled(format!("+++ learned/{path}"), theme.pass)),
    ];
    for hunk in d.unified_diff().context_radius(3).iter_hunks() {
        out.push(DocLine::plain(Line::styled(
            hunk.header().to_string(),
            theme.header,
        )));
        for change in hunk.iter_changes() {
            let style = match change.tag() {
                ChangeTag::Delete => theme.fail,
                ChangeTag::Insert => theme.pass,
                ChangeTag::Equal => theme.text,
            };
            let text = change.value().trim_end_matches(['\n', '\r']);
            out.push(DocLine {
                mark: Mark::Diff(change.tag()),
                line: Line::styled(text.to_string(), style),
            });
            if change.missing_newline() {
                out.push(DocLine::plain(Line::styled(
                    "\\ No newline at end of file",
                    theme.dim,
                )));
            }
        }
    }
    out
}

fn is_markdown(path: &str) -> bool {
    let p = path.to_ascii_lowercase();
    p.ends_with(".md") || p.ends_with(".markdown")
}

/// The document of file `file` of `skill`: its text (Markdown rendered) or, with `diff`, the diff
/// from its curated to its learned version; otherwise a line saying why there is nothing to show.
pub fn document(theme: &Theme, skill: &SkillEntry, file: usize, diff_mode: bool) -> Vec<DocLine> {
    let note = |s: String| vec![DocLine::plain(Line::styled(s, theme.dim))];
    let Some(f) = skill.files.get(file) else {
        return note(if skill.files.is_empty() {
            "not exported yet: learning changed this skill; its files show once the space is exported"
                .into()
        } else {
            String::new()
        });
    };
    let unreadable = |size: u64, sha: &str| {
        format!(
            "{}: binary or too large to show ({size} bytes, sha256 {})",
            f.path,
            &sha[..sha.len().min(12)]
        )
    };
    if !diff_mode {
        return match f.shown() {
            Some(row) => match &row.text {
                Some(t) if is_markdown(&f.path) => markdown(theme, t),
                Some(t) => plain(theme, t),
                None => note(unreadable(row.size, &row.sha256)),
            },
            None => Vec::new(),
        };
    }
    match skill.origin {
        SkillOrigin::Learned => note(format!(
            "{} was learned from scratch: there is no curated version to compare",
            skill.name
        )),
        SkillOrigin::Generated | SkillOrigin::Refused => note(format!(
            "{} was written by an agent (self-generated): there is no curated version to compare",
            skill.name
        )),
        SkillOrigin::Curated if skill.learned.is_none() => note(format!(
            "{} has no learned version yet (the space was not exported)",
            skill.name
        )),
        SkillOrigin::Curated => note(format!(
            "{}: the learned version is the curated one (unchanged by learning)",
            skill.name
        )),
        SkillOrigin::CuratedLearned => {
            for row in [&f.curated, &f.learned].into_iter().flatten() {
                if row.text.is_none() {
                    return note(unreadable(row.size, &row.sha256));
                }
            }
            let text = |r: &Option<crate::store::learning::SkillFileRow>| {
                r.as_ref().and_then(|r| r.text.clone()).unwrap_or_default()
            };
            let mut lines = Vec::new();
            match f.change() {
                FileChange::Added => {
                    lines.extend(note(format!("{} is new in the learned version", f.path)))
                }
                FileChange::Removed => {
                    lines.extend(note(format!("{} is gone from the learned version", f.path)))
                }
                _ => {}
            }
            lines.extend(diff(theme, &text(&f.curated), &text(&f.learned), &f.path));
            lines
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SKILL: &str = "---\nname: mesh-analysis\ndescription: Mass from an STL mesh\n---\n# Mesh analysis\n\nUse `scripts/volume.py`.\n\n```sh\n## not a heading\n```\n\n## Solve 3d-scan-calc (date: 2026-11-21)\n- Principle: Repeat what passed.\n- When to Apply: STL mass tasks.\n- Steps: 1. run volume.py\n\n## Avoid the density failure\n- **Symptom**: mass off by 10%\n- **Root Cause**: wrong density\n- Correct Approach: read density.txt\n- Prevention: check units\n\n## Notes\n- Principle: only one key\n";

    #[test]
    fn sections_split_at_top_headings_outside_fences_and_front_matter() {
        let s = sections(SKILL);
        assert_eq!(s.len(), 5, "{s:#?}");
        assert!(s[0].starts_with("---\nname"));
        assert!(s[1].starts_with("# Mesh analysis") && s[1].contains("## not a heading"));
        assert_eq!(entry_kind(s[1]), None);
        assert_eq!(entry_kind(s[2]), Some(EntryKind::Sop));
        assert_eq!(entry_kind(s[3]), Some(EntryKind::Warning));
        assert_eq!(entry_kind(s[4]), None);
    }

    #[test]
    fn entries_are_marked_and_styled() {
        let t = Theme::load("dark").unwrap();
        let doc = markdown(&t, SKILL);
        let text = |d: &DocLine| d.line.to_string();
        let sop = doc
            .iter()
            .position(|d| text(d).contains("Solve 3d-scan-calc"))
            .unwrap();
        assert_eq!(
            doc[sop].mark,
            Mark::Entry {
                kind: EntryKind::Sop,
                first: true
            }
        );
        let warn = doc
            .iter()
            .find(|d| text(d).contains("wrong density"))
            .unwrap();
        assert_eq!(
            warn.mark,
            Mark::Entry {
                kind: EntryKind::Warning,
                first: false
            }
        );
        assert_eq!(warn.line.style.fg, t.warning.fg);
        let intro = doc
            .iter()
            .find(|d| text(d).contains("scripts/volume.py"))
            .unwrap();
        assert_eq!(intro.mark, Mark::Plain);
    }

    #[test]
    fn diff_marks_added_and_removed_lines() {
        let t = Theme::load("dark").unwrap();
        let d = diff(&t, "a\nb\nc\n", "a\nB\nc\nd\n", "SKILL.md");
        // Each line as drawn: its gutter, then its text.
        let lines: Vec<String> = d
            .iter()
            .map(|l| format!("{}{}", gutter(&t, l.mark, true).content, l.line))
            .collect();
        assert_eq!(lines[0], "  --- curated/SKILL.md");
        assert!(lines.contains(&"- b".to_string()), "{lines:?}");
        assert!(lines.contains(&"+ B".to_string()));
        assert!(lines.contains(&"+ d".to_string()));
        let removed = d.iter().find(|l| l.line.to_string() == "b").unwrap();
        assert_eq!(removed.mark, Mark::Diff(ChangeTag::Delete));
        assert_eq!(removed.line.style, t.fail);
        // A wrapped row of a change keeps its sign.
        assert_eq!(
            gutter(&t, Mark::Diff(ChangeTag::Insert), false).content,
            "+ "
        );
    }
}
