//! `report.html`: the results model ([`super::model`]) as one self-contained file a colleague
//! opens — every section and note of `report.md`, inline CSS, the charts as inline SVG
//! ([`super::charts::render_svg`]), no request over the network and no JavaScript needed to read
//! it. Where JavaScript runs, a click on a column header sorts the table (numbers by value, an
//! undefined `—` last). Every heading has an `id` and a `#` link to itself. Table headers wrap
//! rather than widen their column; on a phone, text cells wrap too and a table or chart that is
//! still too wide scrolls sideways (a chart keeps a size its labels can be read at); the page
//! follows the reader's light or dark scheme. The HTML-only sections link every task to its trials' folders (relative to the
//! report) and list each run's settings.
//!
//! Untrusted text (task, run and skill names) is escaped for HTML; the Markdown prose is rendered
//! by `pulldown-cmark` with raw HTML turned into text, so nothing from a store or a container
//! becomes markup.

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use super::Report;
use super::charts::{self, ChartSpec};
use super::markdown::same_chart_kind;
use super::model::{Block, Cell, Document, Table, Tone, Value, View};

/// The page's style: readable from a phone to a wide screen, light and dark.
const STYLE: &str = r#"
:root { color-scheme: light dark; --fg: #1b1b1b; --bg: #ffffff; --dim: #6b6b6b; --line: #d8d8d8;
  --head: #f3f3f3; --gain: #067a3d; --loss: #b3261e; --warn: #8a5a00; --accent: #0b57d0; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e6e6; --bg: #161616; --dim: #9a9a9a;
  --line: #3a3a3a; --head: #222; --gain: #4cc38a; --loss: #ff8a80; --warn: #e0b040; --accent: #8ab4f8; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 96rem; margin: 0 auto; padding: 1rem 1.25rem; }
h1 { font-size: 1.6rem; line-height: 1.25; } h2 { font-size: 1.3rem; margin-top: 2.2rem;
  border-bottom: 1px solid var(--line); padding-bottom: .2rem; } h3 { font-size: 1.1rem; }
h2, h3, h4 { scroll-margin-top: .5rem; }
a.anchor { color: var(--dim); text-decoration: none; font-weight: normal; margin-left: .4rem;
  opacity: .45; } h2:hover a.anchor, h3:hover a.anchor, h4:hover a.anchor, a.anchor:focus { opacity: 1; }
p, li { max-width: 60rem; } code { font-size: .9em; }
.banner { border-left: 4px solid var(--warn); padding: .4rem .8rem; background: var(--head); }
.scroll { overflow-x: auto; margin: .6rem 0 1rem; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; font-size: .85rem; }
th, td { border-bottom: 1px solid var(--line); padding: .25rem .4rem; text-align: left;
  vertical-align: top; }
th { background: var(--head); position: sticky; top: 0; vertical-align: bottom; hyphens: auto; }
th[data-sortable] { cursor: pointer; } th[aria-sort="ascending"]::after { content: " ▲"; }
th[aria-sort="descending"]::after { content: " ▼"; }
td { white-space: nowrap; } td.brk { white-space: normal; min-width: 6rem; }
td.wrap { white-space: normal; min-width: 16rem; }
td.num, th.num { text-align: right; }
tr.total td { font-weight: 600; }
.dim { color: var(--dim); } .gain { color: var(--gain); } .loss { color: var(--loss); }
.warn { color: var(--warn); } .accent { font-weight: 600; color: var(--accent); }
.running { font-style: italic; }
figure { margin: 1rem 0; overflow-x: auto; }
figure svg { display: block; max-width: 100%; min-width: 50rem; height: auto; background: #fff; }
figcaption { font-weight: 600; margin-bottom: .3rem; }
a { color: var(--accent); } td a { margin-right: .35rem; }
footer { color: var(--dim); margin-top: 3rem; font-size: .85rem; }
@media (max-width: 40rem) {
  main { padding: .6rem; }
  th, td { padding: .2rem .3rem; }
  td { white-space: normal; } td.num { white-space: nowrap; } td.num.brk { white-space: normal; }
  td.brk { min-width: 0; } td.wrap { min-width: 10rem; }
}
"#;

/// Sorts a table by the clicked column: numbers by `data-sort`, text by its content; undefined
/// cells (`—`, no `data-sort` in a numeric column) last.
const SCRIPT: &str = r#"
document.querySelectorAll("table").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, col) {
    th.setAttribute("data-sortable", "");
    th.addEventListener("click", function () {
      var asc = th.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var key = function (row) {
        var cell = row.cells[col];
        if (!cell) { return null; }
        var n = cell.getAttribute("data-sort");
        if (n !== null) { return parseFloat(n); }
        return th.classList.contains("num") ? null : cell.textContent.trim().toLowerCase();
      };
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === null && y === null) { return 0; }
        if (x === null) { return 1; }
        if (y === null) { return -1; }
        var c = x < y ? -1 : x > y ? 1 : 0;
        return asc ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"#;

/// Renders `report` as it will be written into `dir` (links to trial folders are made relative
/// to it).
///
/// # Errors
/// A message when a chart cannot be drawn.
pub fn render(report: &Report, dir: &Path) -> Result<String, String> {
    let specs = charts::plan(report);
    let mut svgs = Vec::with_capacity(specs.len());
    for s in &specs {
        svgs.push((s.clone(), charts::render_svg(report, s)?));
    }
    Ok(render_document(&super::model::document(report), &svgs, dir))
}

/// Renders `doc` with the charts `svgs` (each spec with its SVG document), links relative to
/// `dir`.
pub fn render_document(doc: &Document, svgs: &[(ChartSpec, String)], dir: &Path) -> String {
    let dir = absolute(dir);
    let title = inline(&doc.title);
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"skillscope {}\">\n<title>{}</title>\n<style>{STYLE}</style>\n\
         </head>\n<body>\n<main>\n<h1>{title}</h1>\n",
        env!("CARGO_PKG_VERSION"),
        text_of(&title)
    );
    // Tables are `<name>-table`; a heading never takes an id a table has.
    let mut ids = Anchors::default();
    for b in doc.blocks.iter().filter_map(|b| b.for_view(View::Html)) {
        if let Block::Table { table } = b {
            ids.next(&table_id(&table.name));
        }
    }
    for b in doc.blocks.iter().filter_map(|b| b.for_view(View::Html)) {
        match b {
            Block::Heading { level, text } => {
                let level = (*level).clamp(2, 4);
                let id = escape(&ids.next(text));
                let _ = writeln!(
                    out,
                    "<h{level} id=\"{id}\">{}<a class=\"anchor\" href=\"#{id}\" \
                     aria-label=\"link to this section\">#</a></h{level}>",
                    inline(text)
                );
            }
            Block::Text { text } => out.push_str(&markdown(text)),
            Block::Banner { text } => {
                let _ = writeln!(out, "<div class=\"banner\">{}</div>", markdown(text));
            }
            Block::Bullets { items } => {
                out.push_str("<ul>\n");
                for i in items {
                    let _ = writeln!(out, "<li>{}</li>", inline(i));
                }
                out.push_str("</ul>\n");
            }
            Block::Table { table } => table_html(&mut out, table, &dir),
            Block::Chart { kind } => {
                // The title once, as the figure's caption (text that stays readable when the
                // drawing is scaled down); the SVG is drawn without it.
                for (spec, svg) in svgs.iter().filter(|(s, _)| same_chart_kind(&s.kind, kind)) {
                    let _ = writeln!(
                        out,
                        "<figure><figcaption>{}</figcaption>{}</figure>",
                        escape(&spec.title),
                        svg_body(svg)
                    );
                }
            }
            Block::Only { .. } => {}
        }
    }
    let _ = write!(
        out,
        "<footer>Written by skillscope {}. One file: no request leaves it; the tables sort where \
         JavaScript runs.</footer>\n</main>\n<script>{SCRIPT}</script>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    );
    out
}

/// The `id`s of a page's headings: each heading's words in lower case joined by `-`
/// (`pass-rate-per-condition`), `-2`, `-3`… after a repeat, so every section has a link of its
/// own that stays the same from one report to the next.
#[derive(Default)]
struct Anchors(std::collections::HashMap<String, usize>);

impl Anchors {
    /// The id of the heading `text` (Markdown; its punctuation dropped).
    fn next(&mut self, text: &str) -> String {
        let mut slug = String::new();
        for c in text.chars() {
            if c.is_alphanumeric() {
                slug.extend(c.to_lowercase());
            } else if !slug.is_empty() && !slug.ends_with('-') {
                slug.push('-');
            }
        }
        let slug = match slug.trim_end_matches('-') {
            "" => "section".to_string(),
            s => s.to_string(),
        };
        let seen = self.0.entry(slug.clone()).or_insert(0);
        *seen += 1;
        match *seen {
            1 => slug,
            n => format!("{slug}-{n}"),
        }
    }
}

/// The `id` of the table named `name` (`conditions-table`): the words of a heading are the
/// section's own id.
pub fn table_id(name: &str) -> String {
    format!("{name}-table")
}

/// A table, when HTML shows it: the header (numeric columns right-aligned, sortable), one row a
/// row, each cell in its tone's class with its number in `data-sort`.
fn table_html(out: &mut String, t: &Table, dir: &Path) {
    let cols = t.shown(View::Html);
    if cols.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<div class=\"scroll\"><table id=\"{}\">\n<thead><tr>",
        escape(&table_id(&t.name))
    );
    for &i in &cols {
        let c = &t.columns[i];
        let _ = write!(
            out,
            "<th{} scope=\"col\">{}</th>",
            if c.numeric { " class=\"num\"" } else { "" },
            escape(&c.title)
        );
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    // Text columns with long prose (reasons, recommendations) wrap, with room for a few words;
    // those of long names (runs, tasks) break at their hyphens; the others stay on one line,
    // numbers always (an undefined one's reason may wrap).
    let wrap: Vec<Wrap> = cols
        .iter()
        .map(|&i| {
            let texts: Vec<String> = t
                .rows
                .iter()
                .map(|r| r.cells[i].value.human(true))
                .collect();
            let widest = texts.iter().map(|x| x.chars().count()).max().unwrap_or(0);
            let prose = texts
                .iter()
                .any(|x| x.chars().count() > 32 && x.contains(' '));
            match widest {
                _ if t.columns[i].numeric => Wrap::Never,
                _ if prose => Wrap::Words,
                w if w > 16 => Wrap::Break,
                _ => Wrap::Never,
            }
        })
        .collect();
    for r in t.rows_in(View::Html) {
        out.push_str(if r.total {
            "<tr class=\"total\">"
        } else {
            "<tr>"
        });
        for (k, &i) in cols.iter().enumerate() {
            cell_html(out, &r.cells[i], t.columns[i].numeric, wrap[k], dir);
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n");
}

/// How a column's cells may wrap: never, where they break (hyphens, spaces), or as prose.
#[derive(Clone, Copy, PartialEq)]
enum Wrap {
    Never,
    Break,
    Words,
}

/// One cell: `<td class="num gain" data-sort="4.5">+4.5</td>`.
fn cell_html(out: &mut String, cell: &Cell, numeric: bool, wrap: Wrap, dir: &Path) {
    let mut class: Vec<&str> = Vec::new();
    if numeric {
        class.push("num");
    }
    match wrap {
        Wrap::Words => class.push("wrap"),
        Wrap::Break => class.push("brk"),
        // An undefined number's reason (`— (no task ran twice)`) wraps under its dash.
        Wrap::Never if matches!(cell.value, Value::Undefined(Some(_))) => class.push("brk"),
        Wrap::Never => {}
    }
    match cell.tone {
        Tone::Plain => {}
        Tone::Dim => class.push("dim"),
        Tone::Accent => class.push("accent"),
        Tone::Gain => class.push("gain"),
        Tone::Loss => class.push("loss"),
        Tone::Warn => class.push("warn"),
        Tone::Running => class.push("running"),
    }
    let _ = write!(out, "<td");
    if !class.is_empty() {
        let _ = write!(out, " class=\"{}\"", class.join(" "));
    }
    if let Some(k) = cell.value.sort_key().filter(|k| k.is_finite()) {
        let _ = write!(out, " data-sort=\"{k}\"");
    }
    out.push('>');
    out.push_str(&value_html(&cell.value, dir));
    out.push_str("</td>");
}

/// A value as HTML: numbers as [`crate::format`] writes them, text escaped, undefined with its
/// reason, links relative to `dir`.
fn value_html(v: &Value, dir: &Path) -> String {
    match v {
        Value::Link { text, href } => link(text, href, dir),
        Value::Links(links) => links
            .iter()
            .map(|(t, h)| link(t, h, dir))
            .collect::<Vec<_>>()
            .join(" "),
        Value::Verdict { label, answer } => {
            format!(
                "<strong>{}</strong>: {}",
                escape(label),
                escape(&crate::sanitize::one_line(answer))
            )
        }
        Value::Noted { value, note } => format!(
            "{} <span class=\"dim\">({})</span>",
            value_html(value, dir),
            escape(&crate::sanitize::one_line(note))
        ),
        v => escape(&crate::sanitize::one_line(&v.human(true))),
    }
}

/// `<a href="…">text</a>` to `target` (a trial folder) from `dir`.
fn link(text: &str, target: &str, dir: &Path) -> String {
    let href = relative(dir, Path::new(target));
    format!(
        "<a href=\"{}\">{}</a>",
        escape(&percent_encode(&href)),
        escape(&crate::sanitize::one_line(text))
    )
}

/// `path` made absolute against the current folder (nothing is resolved on disk).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The path from folder `from` to `to`, both made absolute: `../../jobs/run/task__1` (`/` as
/// the separator, as a URL wants it). A relative `to` (an imported run's folder as recorded) is
/// taken against the current folder.
pub fn relative(from: &Path, to: &Path) -> String {
    let (from, to) = (absolute(from), absolute(to));
    let a: Vec<Component> = from.components().collect();
    let b: Vec<Component> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".to_string(); a.len() - common];
    parts.extend(
        b[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

/// `s` with every byte outside letters, digits, `-._~/` percent-encoded (RFC 3986), so a folder
/// name with spaces or `#` stays one link.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// `s` escaped for HTML text and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Markdown prose (the report's, its untrusted parts escaped for Markdown) as HTML; raw HTML in
/// it is shown as text, never as markup.
fn markdown(md: &str) -> String {
    use pulldown_cmark::{Event, Parser};
    let events = Parser::new(md).map(|e| match e {
        Event::Html(h) | Event::InlineHtml(h) => Event::Text(h),
        e => e,
    });
    let mut out = String::new();
    pulldown_cmark::html::push_html(&mut out, events);
    out
}

/// Markdown of one line (a heading, a list item) as inline HTML: [`markdown`] without its
/// paragraph.
fn inline(md: &str) -> String {
    let html = markdown(md);
    html.trim()
        .strip_prefix("<p>")
        .and_then(|h| h.strip_suffix("</p>"))
        .map(str::to_string)
        .unwrap_or(html)
}

/// The text of inline HTML (for the `<title>`): tags dropped, entities kept.
fn text_of(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// An SVG document as an inline element: the XML declaration dropped.
fn svg_body(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_relative_and_encoded() {
        assert_eq!(
            relative(
                Path::new("/data/reports/run"),
                Path::new("/data/jobs/run/a b__1")
            ),
            "../../jobs/run/a b__1"
        );
        assert_eq!(
            percent_encode("../../jobs/run/a b#1"),
            "../../jobs/run/a%20b%231"
        );
        assert_eq!(relative(Path::new("/a"), Path::new("/a")), ".");
    }

    #[test]
    fn heading_ids_are_words_and_unique() {
        let mut a = Anchors::default();
        assert_eq!(a.next("Pass rate per condition"), "pass-rate-per-condition");
        assert_eq!(a.next("Δ per task: *B* vs A"), "δ-per-task-b-vs-a");
        assert_eq!(
            a.next("Pass rate per condition"),
            "pass-rate-per-condition-2"
        );
        assert_eq!(a.next("—"), "section");
    }

    #[test]
    fn prose_never_becomes_markup() {
        let html = markdown("a <script>alert(1)</script> **b**");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("<strong>b</strong>"), "{html}");
        assert_eq!(escape("<a href='x'>&"), "&lt;a href=&#39;x&#39;&gt;&amp;");
        assert_eq!(inline("Office & White Collar"), "Office &amp; White Collar");
    }
}
