//! Drawing the skill browser: the tabs and where the browser is, the spaces, skills, files and
//! provenance lists, the selected file (or its diff), the skill's content line beside its rubric
//! panel (`rubric.rs`), and the sessions tab.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::rubric::{rubric_lines, rubric_panel};
use super::{SKILLS_TABS, SkillsFocus, SkillsState};
use crate::store::learning::SpaceProgress;
use crate::tui::screens::{Hits, Shared, list_top, record_tabs};
use crate::tui::skilldoc::{DocLine, gutter};
use crate::tui::theme::Theme;
use crate::tui::widgets::wrap::{hanging, width_of, wrap};
use crate::tui::widgets::{fit, framed};
use crate::tui::worker::{FileChange, SkillBrowser, SkillEntry, SkillOrigin};

/// From this width on, lists and the file are side by side.
pub const SIDE_BY_SIDE: u16 = 100;

/// Width of the list column when side by side.
const LIST_W: u16 = 38;

/// What the words of [`seen_skills`]' lines mean (the report's exposure legend names the columns
/// of its table, which this list does not have).
const SEEN_LEGEND: &str = "origin: task = the task's own skill, learned = from a skills folder (A′, B′), generated = written by the agent (C), other = nobody put it there, stray = one the condition should not show · seen by = trials that could see it · used = known only from a model's trajectory (the oracle and nop leave none)";

/// A run without learning spaces: the skills each condition's trials saw (curated included),
/// where each came from and which trials used it — the analysis's skill exposure
/// ([`crate::analysis::exposure::SkillTally`]) under its legend, scrolled with the cursor keys.
fn seen_skills(f: &mut Frame, area: Rect, t: &Theme, sk: &mut SkillsState) {
    let mut block = framed(t, "skills the trials saw", true);
    let inner = block.inner(area);
    let width = inner.width as usize;
    // Every line wraps: nothing of what it says is cut at the edge.
    let mut lines: Vec<Line<'static>> = hanging(
        Vec::new(),
        Span::styled(
            "No learning space learns from this run yet (`skillscope learn` or an experiment's learn phase creates them).",
            t.dim,
        ),
        width,
    );
    let results = sk.seen.as_ref().and_then(|d| d.results.as_ref());
    match results {
        None => lines.extend(hanging(
            Vec::new(),
            Span::styled(
                if sk.seen.is_some() {
                    "No trial has finished yet: the skills its trials saw show once one has."
                } else {
                    "loading the skills the trials saw…"
                },
                t.dim,
            ),
            width,
        )),
        Some(r) if r.exposure.conditions.iter().all(|c| c.skills.is_empty()) => {
            lines.extend(hanging(
                Vec::new(),
                Span::styled(
                    "No trial of this run could see a skill (other than its harness's own).",
                    t.text,
                ),
                width,
            ));
        }
        Some(r) => {
            lines.extend(hanging(
                Vec::new(),
                Span::styled(
                    "The skills each condition's trials saw, and which trials used each:",
                    t.text,
                ),
                width,
            ));
            for c in r
                .exposure
                .conditions
                .iter()
                .filter(|c| !c.skills.is_empty())
            {
                lines.push(Line::default());
                let name = crate::skillsbench::condition::condition_label(&c.condition);
                let mut head = vec![Span::styled(c.label.clone(), t.header)];
                if name != c.label {
                    head.push(Span::styled(format!(" {name}"), t.text));
                }
                lines.push(Line::from(head));
                for k in &c.skills {
                    let used = match (k.known, k.used_by.len()) {
                        (0, _) => "use unknown (no model trajectory)".to_string(),
                        (n, 0) => format!("used by none of the {n} whose use is known"),
                        (n, u) => format!("used by {u} of {n}: {}", k.used_by.join(", ")),
                    };
                    let style = if k.origin == "stray" {
                        t.warn
                    } else {
                        t.accent
                    };
                    lines.extend(hanging(
                        vec![Span::styled(format!("  {}  ", k.skill), style)],
                        Span::styled(
                            format!(
                                "{} · seen by {} · {used}",
                                k.origin,
                                crate::format::count(k.seen, "trial", "trials")
                            ),
                            t.dim,
                        ),
                        width,
                    ));
                }
            }
            lines.push(Line::default());
            lines.extend(hanging(
                Vec::new(),
                Span::styled(SEEN_LEGEND.to_string(), t.dim),
                width,
            ));
        }
    }
    let page = inner.height as usize;
    sk.page = page;
    sk.scroll = sk.scroll.min(lines.len().saturating_sub(page));
    // What lies below (or above) is said on the border, never cut in silence.
    if lines.len() > page {
        block = block.title_bottom(
            Line::from(Span::styled(
                format!(
                    " {}–{} of {} · ↑↓ scroll ",
                    sk.scroll + 1,
                    (sk.scroll + page).min(lines.len()),
                    lines.len()
                ),
                t.dim,
            ))
            .right_aligned(),
        );
    }
    f.render_widget(block, area);
    let shown: Vec<Line> = lines.into_iter().skip(sk.scroll).take(page).collect();
    f.render_widget(Paragraph::new(shown), inner);
}

/// Draws the skill browser into `area`.
pub fn draw(f: &mut Frame, area: Rect, cx: Shared, sk: &mut SkillsState, hits: &mut Hits) {
    let t = cx.theme;
    let sets: Vec<SpaceProgress> = cx.snapshot.map(|s| s.skill_sets()).unwrap_or_default();
    let spaces: &[SpaceProgress] = &sets;
    let [head, body] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(area);
    f.render_widget(
        Paragraph::new(head_line(t, sk, spaces, head.width as usize)),
        head,
    );
    record_tabs(hits, head, &SKILLS_TABS);
    if spaces.is_empty() {
        seen_skills(f, body, t, sk);
        return;
    }
    let space = &spaces[sk.space.min(spaces.len() - 1)];
    let data = sk.data.clone();
    let data = data.as_deref().filter(|d| Some(d.space.id) == sk.space_id);
    if sk.tab == 1 {
        sessions(f, body, t, sk, space, data);
        return;
    }
    let side = body.width >= SIDE_BY_SIDE;
    let skill = data.and_then(|d| d.skills.get(sk.skill));
    if !side {
        match sk.focus {
            SkillsFocus::Doc => document(f, body, t, sk, data),
            // Choosing a space or a skill: its rubric in place of the files list.
            SkillsFocus::Spaces | SkillsFocus::Skills if skill.is_some() => {
                lists(f, body, t, sk, hits, (spaces, data), true)
            }
            _ => lists(f, body, t, sk, hits, (spaces, data), false),
        }
        return;
    }
    // The lists as wide as the longest skill name needs (score and origin beside it), up to
    // 45 % of the screen.
    let want = data
        .map(|d| {
            d.skills
                .iter()
                .map(|s| s.name.chars().count() + 4 + 1 + s.origin.label().len() + 5)
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0) as u16;
    let list_w = want.clamp(LIST_W, (body.width * 45 / 100).max(LIST_W));
    let [left, right] =
        Layout::horizontal([Constraint::Length(list_w), Constraint::Min(20)]).areas(body);
    lists(f, left, t, sk, hits, (spaces, data), false);
    match skill {
        Some(skill) => {
            let mut lines = content_line(t, skill, right.width as usize - 2);
            lines.extend(rubric_lines(
                t,
                sk,
                &skill.name,
                right.width as usize - 2,
                false,
            ));
            let h = (lines.len() as u16 + 2).min(right.height / 2);
            let [top, rest] =
                Layout::vertical([Constraint::Length(h), Constraint::Min(3)]).areas(right);
            rubric_panel(f, top, t, sk, &skill.name, lines);
            document(f, rest, t, sk, data);
        }
        None => document(f, right, t, sk, data),
    }
}

/// The skill's content as the report's skill content analysis measures it: SKILL.md body tokens
/// and the paper's size bucket, files beside it, SOP and Warning entries, and for a learned
/// version of a curated skill the lines it added and removed.
fn content_line(t: &Theme, skill: &SkillEntry, width: usize) -> Vec<Line<'static>> {
    let Some(c) = &skill.content else {
        return vec![Line::from(Span::styled(
            fit("content: no SKILL.md text recorded", width),
            t.dim,
        ))];
    };
    let mut text = format!(
        "{} tokens ({}) · {} file{} · {} SOP · {} warning{}",
        crate::format::thousands(c.body_tokens),
        c.size,
        c.files,
        if c.files == 1 { "" } else { "s" },
        c.sops,
        c.warnings,
        if c.warnings == 1 { "" } else { "s" },
    );
    if let (Some(a), Some(r)) = (c.lines_added, c.lines_removed) {
        text.push_str(&format!(" · +{a} −{r} vs curated"));
    }
    hanging(
        vec![Span::styled("content ", t.dim)],
        Span::styled(text, t.text),
        width,
    )
}

/// The skill list's title: how many skills, and how many of each of the paper's size buckets.
fn skills_title(d: &SkillBrowser) -> String {
    let mut buckets: Vec<(&str, usize)> = Vec::new();
    for c in d.skills.iter().filter_map(|s| s.content.as_ref()) {
        match buckets.iter_mut().find(|(b, _)| *b == c.size) {
            Some((_, n)) => *n += 1,
            None => buckets.push((c.size, 1)),
        }
    }
    let order = ["compact", "detailed", "comprehensive"];
    buckets.sort_by_key(|(b, _)| order.iter().position(|o| o == b).unwrap_or(order.len()));
    let sizes: Vec<String> = buckets.iter().map(|(b, n)| format!("{n} {b}")).collect();
    if sizes.is_empty() {
        format!("skills ({})", d.skills.len())
    } else {
        format!("skills ({}) · {}", d.skills.len(), sizes.join(" · "))
    }
}

/// Tabs, then where the browser is: space › skill › file, and the diff mode.
fn head_line<'a>(
    t: &Theme,
    sk: &SkillsState,
    spaces: &'a [SpaceProgress],
    width: usize,
) -> Line<'a> {
    let mut spans = Vec::new();
    for (i, tab) in SKILLS_TABS.iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(t.glyphs.divider.clone(), t.border));
        }
        spans.push(Span::styled(
            format!(" {tab} "),
            if i == sk.tab { t.selected } else { t.dim },
        ));
    }
    spans.push(Span::styled("  skill browser", t.title));
    let mut crumbs = Vec::new();
    if let Some(p) = spaces.get(sk.space) {
        crumbs.push(p.space.label.clone());
    }
    if sk.tab == 0
        && let Some(skill) = sk.selected_skill()
    {
        crumbs.push(skill.name.clone());
        if let Some(file) = skill.files.get(sk.file) {
            crumbs.push(file.path.clone());
        }
    }
    let used: usize = spans.iter().map(|s| s.width()).sum();
    let diff = if sk.diff && sk.tab == 0 {
        " · diff curated → learned"
    } else {
        ""
    };
    let room = width.saturating_sub(used + 3 + diff.chars().count());
    if !crumbs.is_empty() {
        spans.push(Span::styled(" · ", t.dim));
        spans.push(Span::styled(fit(&crumbs.join(" › "), room), t.accent));
    }
    spans.push(Span::styled(diff, t.warn));
    Line::from(spans)
}

/// A list row: a cursor mark, then `spans`; the cursor row of the focused list is drawn in the
/// selection style.
fn row<'a>(t: &Theme, spans: Vec<Span<'a>>, cursor: bool, focused: bool) -> Line<'a> {
    let mut out = vec![Span::styled(
        if cursor { "▸ " } else { "  " },
        if cursor { t.accent } else { t.dim },
    )];
    if cursor && focused {
        let text: String = spans.iter().map(|s| s.content.as_ref()).collect();
        out[0].style = t.selected;
        out.push(Span::styled(text, t.selected));
    } else {
        out.extend(spans);
    }
    Line::from(out)
}

/// Draws `lines` (one per item) in a framed block, scrolled so `cursor` shows.
/// A list as [`list_block`] draws it.
struct ListView<'a> {
    title: &'a str,
    focused: bool,
    lines: Vec<Line<'a>>,
    cursor: usize,
    /// Where the first drawn row is kept between frames (`None`: keep the cursor on the last row).
    top: Option<&'a mut usize>,
    /// Which list this is, to record its rows for the mouse.
    hit: Option<SkillsFocus>,
}

fn list_block(f: &mut Frame, area: Rect, t: &Theme, hits: &mut Hits, v: ListView) {
    let ListView {
        title,
        focused,
        lines,
        cursor,
        top,
        hit,
    } = v;
    let block = framed(t, title, focused);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let h = inner.height as usize;
    let first = match top {
        Some(top) => list_top(top, cursor, lines.len(), h),
        None => cursor.saturating_sub(h.saturating_sub(1)),
    };
    if let Some(focus) = hit {
        let rows = lines.len().saturating_sub(first).min(h) as u16;
        hits.lists.push((
            Rect {
                height: rows,
                ..inner
            },
            focus,
            first,
        ));
    }
    let shown: Vec<Line> = lines.into_iter().skip(first).take(h).collect();
    f.render_widget(Paragraph::new(shown), inner);
}

fn human_size(n: u64) -> String {
    if n < 1024 {
        format!("{n} B")
    } else if n < 1024 * 1024 {
        format!("{:.1} KB", n as f64 / 1024.0)
    } else {
        format!("{:.1} MB", n as f64 / (1024.0 * 1024.0))
    }
}

fn origin_style(t: &Theme, o: SkillOrigin) -> Style {
    match o {
        SkillOrigin::Curated => t.dim,
        SkillOrigin::Learned => t.pass,
        SkillOrigin::CuratedLearned => t.accent,
        SkillOrigin::Generated => t.text,
        SkillOrigin::Refused => t.fail,
    }
}

/// The spaces, skills, files and provenance lists, stacked.
///
/// With `with_rubric` (narrow screens, while a space or skill is being chosen) the selected
/// skill's rubric takes the place of its files.
fn lists(
    f: &mut Frame,
    area: Rect,
    t: &Theme,
    sk: &mut SkillsState,
    hits: &mut Hits,
    (spaces, data): (&[SpaceProgress], Option<&SkillBrowser>),
    with_rubric: bool,
) {
    let w = area.width.saturating_sub(4) as usize;
    let skill = data.and_then(|d| d.skills.get(sk.skill));
    let n_files = skill.map_or(0, |s| s.files.len());
    let n_sources = skill.map_or(0, |s| s.sources.len());
    let rubric = match skill {
        Some(s) if with_rubric => {
            let w = area.width.saturating_sub(2) as usize;
            let mut lines = content_line(t, s, w);
            lines.extend(rubric_lines(t, sk, &s.name, w, true));
            Some((s.name.as_str(), lines))
        }
        _ => None,
    };
    let middle = match &rubric {
        Some((_, lines)) => lines.len() as u16 + 2,
        None => n_files.clamp(1, 6) as u16 + 2,
    };
    let [a_spaces, a_skills, a_files, a_from] = Layout::vertical([
        Constraint::Length(spaces.len().clamp(1, 4) as u16 + 2),
        Constraint::Min(3),
        Constraint::Length(middle),
        Constraint::Length(n_sources.clamp(1, 5) as u16 + 2),
    ])
    .areas(area);

    let space_lines = space_lines(t, sk, spaces, w);
    list_block(
        f,
        a_spaces,
        t,
        hits,
        ListView {
            title: if spaces
                .iter()
                .any(|p| crate::tui::worker::skills::is_generated_set(p.space.id))
            {
                "skill sets"
            } else {
                "learning spaces"
            },
            focused: sk.focus == SkillsFocus::Spaces,
            lines: space_lines,
            cursor: sk.space,
            top: None,
            hit: Some(SkillsFocus::Spaces),
        },
    );

    let skill_lines = skill_lines(t, sk, data, w);
    let title = match data {
        Some(d) => skills_title(d),
        None => "skills".to_string(),
    };
    list_block(
        f,
        a_skills,
        t,
        hits,
        ListView {
            title: &title,
            focused: sk.focus == SkillsFocus::Skills,
            lines: skill_lines,
            cursor: sk.skill,
            top: Some(&mut sk.tops[0]),
            hit: Some(SkillsFocus::Skills),
        },
    );

    let mark_changes = skill.is_some_and(|s| s.origin == SkillOrigin::CuratedLearned);
    let file_lines = file_lines(t, sk, skill, mark_changes, w);
    if let Some((name, lines)) = rubric {
        rubric_panel(f, a_files, t, sk, name, lines);
    } else {
        list_block(
            f,
            a_files,
            t,
            hits,
            ListView {
                title: if mark_changes {
                    "files (~ changed, + added)"
                } else {
                    "files"
                },
                focused: sk.focus == SkillsFocus::Files,
                lines: file_lines,
                cursor: sk.file,
                top: Some(&mut sk.tops[1]),
                hit: Some(SkillsFocus::Files),
            },
        );
    }

    let from_lines = from_lines(t, skill, w);
    list_block(
        f,
        a_from,
        t,
        hits,
        ListView {
            title: "from trials",
            focused: false,
            lines: from_lines,
            cursor: 0,
            top: None,
            hit: None,
        },
    );
}

/// The learning spaces (or skill sets) with their state, progress, mislabeled trials and mode.
fn space_lines(
    t: &Theme,
    sk: &SkillsState,
    spaces: &[SpaceProgress],
    w: usize,
) -> Vec<Line<'static>> {
    let label_w = spaces
        .iter()
        .map(|p| p.space.label.chars().count().min(10))
        .max()
        .unwrap_or(4);
    spaces
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let s = &p.space;
            // A condition's skills folder (curated) learned nothing: no progress to count.
            let folder = crate::tui::worker::skills::is_generated_set(s.id) && p.by_step.is_empty();
            let mut spans = vec![
                Span::styled(format!("{:<label_w$} ", fit(&s.label, label_w)), t.accent),
                Span::styled(
                    format!("{:<8} ", fit(&s.state, 8)),
                    if s.error.is_some() { t.fail } else { t.text },
                ),
            ];
            if !folder {
                spans.push(Span::styled(format!("{}/{}", p.finished, p.total), t.text));
            }
            if p.mislabeled > 0 {
                spans.push(Span::styled(
                    format!(" {} {} MISLABELED", t.glyphs.fail, p.mislabeled),
                    t.error.add_modifier(Modifier::BOLD),
                ));
            }
            let mode = if folder {
                "the skills its trials were given".to_string()
            } else if crate::tui::worker::skills::is_generated_set(s.id) {
                let n = |k: &str| {
                    p.by_step
                        .iter()
                        .find(|(step, _)| step == k)
                        .map_or(0, |(_, n)| *n)
                };
                format!(" {} kept {} refused", n("kept"), n("refused"))
            } else {
                format!(
                    " {}",
                    crate::tui::widgets::verdict_route(s.status_mode.as_deref(), false)
                )
            };
            let used: usize = spans.iter().map(|s| s.width()).sum();
            if used + mode.chars().count() <= w {
                spans.push(Span::styled(mode, t.dim));
            }
            row(t, spans, i == sk.space, sk.focus == SkillsFocus::Spaces)
        })
        .collect()
}

/// The space's skills: name, rubric score coloured by tier, origin.
fn skill_lines(
    t: &Theme,
    sk: &SkillsState,
    data: Option<&SkillBrowser>,
    w: usize,
) -> Vec<Line<'static>> {
    match data {
        None => vec![Line::from(Span::styled("  loading…", t.dim))],
        Some(d) if d.skills.is_empty() => {
            vec![Line::from(Span::styled("  no skills recorded yet", t.dim))]
        }
        Some(d) => d
            .skills
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let origin = s.origin.label();
                let name_w = w.saturating_sub(origin.len() + 5).max(8);
                // The rubric's average score, coloured by tier ("—": never invoked).
                let score = match sk.rubric.as_ref().map(|r| r.skill(&s.name)) {
                    Some(Some(score)) => {
                        Span::styled(format!(" {:>3.0}", score.avg_score), t.tier(score.tier))
                    }
                    Some(None) => Span::styled("   —", t.dim),
                    None => Span::raw("    "),
                };
                row(
                    t,
                    vec![
                        Span::styled(format!("{:<name_w$}", fit(&s.name, name_w)), t.text),
                        score,
                        Span::styled(format!(" {origin}"), origin_style(t, s.origin)),
                    ],
                    i == sk.skill,
                    sk.focus == SkillsFocus::Skills,
                )
            })
            .collect(),
    }
}

/// The skill's files with their size, marked `~` changed or `+` added when learned over curated.
fn file_lines(
    t: &Theme,
    sk: &SkillsState,
    skill: Option<&SkillEntry>,
    mark_changes: bool,
    w: usize,
) -> Vec<Line<'static>> {
    match skill {
        None => Vec::new(),
        Some(s) if s.files.is_empty() => {
            vec![Line::from(Span::styled("  not exported yet", t.dim))]
        }
        Some(s) => s
            .files
            .iter()
            .enumerate()
            .map(|(i, file)| {
                let (g, style) = match (mark_changes, file.change()) {
                    (false, _) | (true, FileChange::Same) => (" ", t.dim),
                    (true, FileChange::Added) => ("+", t.pass),
                    (true, FileChange::Removed) => ("-", t.fail),
                    (true, FileChange::Changed) => ("~", t.warn),
                };
                let size = file.shown().map(|r| human_size(r.size)).unwrap_or_default();
                let path_w = w.saturating_sub(size.len() + 3).max(8);
                row(
                    t,
                    vec![
                        Span::styled(format!("{g} "), style),
                        Span::styled(format!("{:<path_w$}", fit(&file.path, path_w)), t.text),
                        Span::styled(format!(" {size}"), t.dim),
                    ],
                    i == sk.file,
                    sk.focus == SkillsFocus::Files,
                )
            })
            .collect(),
    }
}

/// The trials the skill came from, with their verdict and what they changed.
fn from_lines(t: &Theme, skill: Option<&SkillEntry>, w: usize) -> Vec<Line<'static>> {
    match skill {
        Some(s) if !s.sources.is_empty() => s
            .sources
            .iter()
            .map(|src| {
                let id = format!("{}#{}", src.task_id, src.trial_index);
                let id_w = w.saturating_sub(18).max(8);
                Line::from(vec![
                    Span::styled(format!("  {:<id_w$}", fit(&id, id_w)), t.text),
                    Span::styled(
                        format!(" {:<7}", fit(&src.verdict, 7)),
                        if src.verdict == "success" {
                            t.pass
                        } else {
                            t.fail
                        },
                    ),
                    Span::styled(format!(" {}", src.change), t.dim),
                ])
            })
            .collect(),
        Some(s) if s.origin == SkillOrigin::Curated => vec![Line::from(Span::styled(
            "  curated; no trial changed it",
            t.dim,
        ))],
        Some(_) => vec![Line::from(Span::styled("  no trial recorded", t.dim))],
        None => Vec::new(),
    }
}

/// The selected file (or its diff), wrapped, with the entry gutter, scrolled.
fn document(
    f: &mut Frame,
    area: Rect,
    t: &Theme,
    sk: &mut SkillsState,
    data: Option<&SkillBrowser>,
) {
    let skill = data.and_then(|d| d.skills.get(sk.skill));
    let title = match (skill, skill.and_then(|s| s.files.get(sk.file))) {
        (Some(s), Some(file)) if sk.diff => {
            format!("diff {} · {} · curated → learned", file.path, s.name)
        }
        (Some(s), Some(file)) => format!("{} · {} ({})", file.path, s.name, s.origin.label()),
        (Some(s), None) => format!("{} ({})", s.name, s.origin.label()),
        _ => "skill".to_string(),
    };
    let title = fit(&title, area.width.saturating_sub(4) as usize);
    let block = framed(t, &title, sk.focus == SkillsFocus::Doc);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let empty = match (data, skill) {
        (None, _) => Some("loading…"),
        (Some(_), None) => Some("no skill selected: this space has no skills recorded yet"),
        _ => None,
    };
    if let Some(msg) = empty {
        f.render_widget(Paragraph::new(Span::styled(msg, t.dim)), inner);
        return;
    }
    let text_w = inner.width.saturating_sub(2) as usize;
    let rows: Vec<Line> = sk
        .doc
        .iter()
        .flat_map(|DocLine { mark, line }| {
            wrap(line, text_w)
                .into_iter()
                .enumerate()
                .map(|(i, l)| {
                    let mut spans = vec![gutter(t, *mark, i == 0)];
                    spans.extend(l.spans);
                    Line {
                        spans,
                        style: l.style,
                        alignment: l.alignment,
                    }
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let page = inner.height as usize;
    sk.page = page;
    sk.doc_rows = rows.len();
    let top = sk.scroll.min(rows.len().saturating_sub(page));
    let shown: Vec<Line> = rows.into_iter().skip(top).take(page).collect();
    f.render_widget(Paragraph::new(shown), inner);
}

/// The sessions tab: the space's counts, then every learn step in learning order.
fn sessions(
    f: &mut Frame,
    area: Rect,
    t: &Theme,
    sk: &mut SkillsState,
    p: &SpaceProgress,
    data: Option<&SkillBrowser>,
) {
    let s = &p.space;
    let title = format!("sessions · {} ({})", s.label, s.condition);
    let block = framed(t, &title, true);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let w = inner.width as usize;
    let mut head = vec![Line::from(vec![
        Span::styled(
            format!("{} ", s.state),
            if s.error.is_some() { t.fail } else { t.text },
        ),
        Span::styled(format!("{}/{} final", p.finished, p.total), t.accent),
        Span::styled(
            format!(
                " · {}",
                crate::tui::widgets::verdict_route(s.status_mode.as_deref(), true)
            ),
            t.dim,
        ),
        Span::styled(
            if p.mislabeled > 0 {
                format!(" · {} {} MISLABELED", t.glyphs.fail, p.mislabeled)
            } else {
                String::new()
            },
            t.error.add_modifier(Modifier::BOLD),
        ),
        Span::styled(
            if p.errors > 0 {
                format!(" · {} with errors", p.errors)
            } else {
                String::new()
            },
            t.fail,
        ),
        Span::styled(
            if p.rejected > 0 {
                format!(" · {} rejected", p.rejected)
            } else {
                String::new()
            },
            t.warn,
        ),
    ])];
    let by_step = p
        .by_step
        .iter()
        .map(|(step, n)| format!("{step} {n}"))
        .collect::<Vec<_>>()
        .join(" · ");
    head.push(Line::from(Span::styled(fit(&by_step, w), t.dim)));
    if let Some(e) = &s.error {
        head.push(Line::from(Span::styled(
            fit(&format!("stopped: {e}"), w),
            t.fail,
        )));
    }
    let trial_w = if w >= 110 { 32 } else { 22 };
    let cols = format!(
        "{:>4} {:<trial_w$} {:<7} {:<10} {:<13} error",
        "#", "trial", "verdict", "step", "learning"
    );
    head.push(Line::from(Span::styled(fit(&cols, w), t.header)));
    let [head_area, list_area] =
        Layout::vertical([Constraint::Length(head.len() as u16), Constraint::Min(1)]).areas(inner);
    f.render_widget(Paragraph::new(head), head_area);
    let Some(d) = data else {
        f.render_widget(Paragraph::new(Span::styled("loading…", t.dim)), list_area);
        return;
    };
    if d.steps.is_empty() {
        f.render_widget(
            Paragraph::new(Span::styled("no trials planned in this space yet", t.dim)),
            list_area,
        );
        return;
    }
    let h = list_area.height as usize;
    sk.page = h;
    let top = list_top(&mut sk.tops[2], sk.session, d.steps.len(), h);
    let current = p.current.as_ref().map(|c| c.trial_id);
    let lines: Vec<Line> = d
        .steps
        .iter()
        .enumerate()
        .skip(top)
        .take(h)
        .map(|(i, st)| {
            let trial = format!("{}#{}", st.task_id, st.trial_index);
            let fixed = format!(
                "{:>4} {:<trial_w$} {:<7} {:<10} {:<13} ",
                if Some(st.trial_id) == current {
                    format!("▶{}", st.seq + 1)
                } else {
                    (st.seq + 1).to_string()
                },
                fit(&trial, trial_w),
                fit(&st.verdict, 7),
                fit(&st.step, 10),
                fit(st.learning_status.as_deref().unwrap_or("—"), 13),
            );
            let err = st.error.clone().unwrap_or_default();
            let err = fit(&err, w.saturating_sub(width_of(&fixed)));
            let (row_style, err_style) = match st.step.as_str() {
                "mislabeled" => (
                    t.error.add_modifier(Modifier::BOLD),
                    t.error.add_modifier(Modifier::BOLD),
                ),
                "rejected" => (t.warn, t.warn),
                "skipped" => (t.dim, t.dim),
                _ if st.error.is_some() => (t.text, t.fail),
                "done" => (t.text, t.text),
                _ => (t.running, t.fail),
            };
            if i == sk.session {
                Line::from(Span::styled(format!("{fixed}{err}"), t.selected))
            } else {
                Line::from(vec![
                    Span::styled(fixed, row_style),
                    Span::styled(err, err_style),
                ])
            }
        })
        .collect();
    f.render_widget(Paragraph::new(lines), list_area);
}
