//! Results: the evaluation's analysis of the run or experiment being watched, as
//! [`crate::analysis::results::analyze`] computes it — per condition (A, B, A', B' in an
//! experiment) the Method D pass rate with its 95 % CI, tasks, finished/planned trials,
//! infrastructure failures and the pass rate over trials with a verdict; the comparisons (Δ in
//! percentage points with its CI, normalized gain g, tasks better/worse/same); for an experiment
//! pass@2-adaptive beside round 1's pass@2 and the adaptive gain with its CI, overall and by the
//! chosen grouping; the breakdown by
//! domain (or difficulty, `d`); the failure modes; and the analysis's notes.
//!
//! Tables keep their columns in order but drop the least important ones that do not fit, so at 80
//! columns the pass rates, CIs and Δs still show. Numbers are right-aligned; a Δ above zero takes
//! the theme's `gain` style and one below zero `loss`. The text scrolls when it does not fit.
//! Everything drawn from the store was sanitized when the data worker read it.

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::ResultsState;
use crate::analysis::ci::Ci;
use crate::analysis::failure_category::FailureCategory;
use crate::analysis::results::{FailureMode, GroupRow, Results};
use crate::skillsbench::condition::condition_label;
use crate::tui::model::Grouping;
use crate::tui::screens::Shared;
use crate::tui::theme::Theme;
use crate::tui::widgets::{fit, framed, pct_text, pp_text, wrap};

/// Draws the Results view into `area`.
pub fn draw(f: &mut Frame, area: Rect, cx: Shared, r: &mut ResultsState) {
    let t = cx.theme;
    let by = match r.grouping {
        Grouping::Domain => "domain",
        Grouping::Difficulty => "difficulty",
    };
    let what = r.data.as_ref().map_or("…", |d| d.title.as_str());
    let title = fit(
        &format!("results · {what} · Method D · by {by}"),
        area.width.saturating_sub(4) as usize,
    );
    let mut block = framed(t, &title, true);
    let inner = block.inner(area);
    let lines: Vec<Line<'static>> = match &r.data {
        None => vec![Line::from(Span::styled("computing the analysis…", t.dim))],
        Some(d) => match &d.results {
            None => vec![
                Line::from(Span::styled("no finished trials yet", t.text)),
                Line::from(Span::styled(
                    format!(
                        "The analysis of {} appears here when its first trial finishes.",
                        d.title
                    ),
                    t.dim,
                )),
            ],
            Some(res) => body(t, res, r.grouping, inner.width as usize),
        },
    };
    let page = inner.height as usize;
    r.page = page;
    r.lines = lines.len();
    let top = r.scroll.min(r.max_scroll());
    if lines.len() > page {
        block = block.title_bottom(
            Line::from(Span::styled(
                format!(
                    " {}–{} of {} · ↑↓ scroll ",
                    top + 1,
                    (top + page).min(lines.len()),
                    lines.len()
                ),
                t.dim,
            ))
            .alignment(Alignment::Right),
        );
    }
    f.render_widget(block, area);
    let shown: Vec<Line> = lines.into_iter().skip(top).take(page).collect();
    f.render_widget(Paragraph::new(shown), inner);
}

/// A table column: a header and one cell per row (text and style), right-aligned; columns of
/// higher `priority` numbers are dropped first when the width is short.
struct Col {
    head: String,
    priority: u8,
    /// Text, aligned left (numbers are right-aligned).
    left: bool,
    cells: Vec<(String, Style)>,
}

impl Col {
    fn new(head: impl Into<String>, priority: u8) -> Col {
        Col {
            head: head.into(),
            priority,
            left: false,
            cells: Vec::new(),
        }
    }

    fn left(mut self) -> Col {
        self.left = true;
        self
    }

    /// `text` padded to the column's width, aligned.
    fn pad(&self, text: &str) -> String {
        let w = self.width();
        if self.left {
            format!("  {text:<w$}")
        } else {
            format!("  {text:>w$}")
        }
    }

    fn push(&mut self, text: impl Into<String>, style: Style) {
        self.cells.push((text.into(), style));
    }

    fn width(&self) -> usize {
        self.cells
            .iter()
            .map(|(s, _)| s.chars().count())
            .chain([self.head.chars().count()])
            .max()
            .unwrap_or(0)
    }
}

/// Narrowest label column before columns are dropped.
const LABEL_MIN: usize = 10;
/// Columns of this priority or lower are kept before the labels get their natural width; the
/// others only when they fit next to whole labels.
const KEY_PRIORITY: u8 = 1;
/// Widest label column.
const LABEL_MAX: usize = 28;

/// A table: the section name over the label column (whose rows are indented by two), then the
/// columns that fit in `width`, in their order; labels are cut to what is left.
fn table(
    t: &Theme,
    section: &str,
    labels: Vec<(String, Style)>,
    cols: Vec<Col>,
    width: usize,
) -> Vec<Line<'static>> {
    let natural = labels
        .iter()
        .map(|(s, _)| s.chars().count())
        .chain([section.chars().count().saturating_sub(2)])
        .max()
        .unwrap_or(0)
        .clamp(LABEL_MIN, LABEL_MAX);
    // Keep columns by priority (then position) while they fit next to the narrowest label.
    let mut order: Vec<usize> = (0..cols.len()).collect();
    order.sort_by_key(|&i| (cols[i].priority, i));
    let mut keep = vec![false; cols.len()];
    let mut used = 2 + LABEL_MIN;
    let mut whole_labels = false;
    for i in order {
        if cols[i].priority > KEY_PRIORITY && !whole_labels {
            // The key columns are in: from now on the labels keep their natural width.
            used += natural - LABEL_MIN;
            whole_labels = true;
        }
        let w = cols[i].width() + 2;
        if used + w <= width {
            used += w;
            keep[i] = true;
        }
    }
    let cols: Vec<&Col> = cols
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(c, _)| c)
        .collect();
    let cols_w: usize = cols.iter().map(|c| c.width() + 2).sum();
    let label_w = natural.min(width.saturating_sub(2 + cols_w)).max(1);
    let mut out = Vec::with_capacity(labels.len() + 1);
    let mut head = vec![Span::styled(
        format!("{:<w$}", fit(section, label_w + 2), w = label_w + 2),
        t.header,
    )];
    for c in &cols {
        head.push(Span::styled(c.pad(&c.head), t.header));
    }
    out.push(Line::from(head));
    for (row, (label, style)) in labels.into_iter().enumerate() {
        let mut spans = vec![Span::styled(
            format!("  {:<label_w$}", fit(&label, label_w)),
            style,
        )];
        for c in &cols {
            let (text, style) = c.cells.get(row).cloned().unwrap_or_default();
            spans.push(Span::styled(c.pad(&text), style));
        }
        out.push(Line::from(spans));
    }
    out
}

fn ci_pct(ci: Option<Ci>) -> String {
    match ci {
        Some(c) => format!("[{:.1}, {:.1}]", c.low * 100.0, c.high * 100.0),
        None => "—".into(),
    }
}

fn ci_pp(ci: Option<Ci>) -> String {
    match ci {
        Some(c) => format!("[{:+.1}, {:+.1}]", c.low, c.high),
        None => "—".into(),
    }
}

/// The style of a Δ's CI: the Δ's colour when the interval excludes zero (and is not
/// borderline), else dim.
fn ci_style(t: &Theme, ci: Option<Ci>) -> Style {
    use crate::analysis::ci::Side;
    match ci.map(|c| c.verdict()) {
        Some((Side::Above, false)) => t.gain,
        Some((Side::AtOrBelow, false)) if ci.is_some_and(|c| c.high < 0.0) => t.loss,
        _ => t.dim,
    }
}

/// A fraction as a percentage, `—` when undefined.
fn opt_pct(v: Option<f64>) -> String {
    v.map_or_else(|| "—".into(), pct_text)
}

/// A Δ in points with its style, `—` (dim) when undefined.
fn opt_pp(t: &Theme, v: Option<f64>) -> (String, Style) {
    match v {
        Some(d) => (pp_text(d), t.delta(d)),
        None => ("—".into(), t.dim),
    }
}

/// Under a table with `—` cells: why they are undefined (each distinct reason once), dim.
fn undefined_legend<'a>(
    t: &Theme,
    reasons: impl Iterator<Item = &'a Option<String>>,
    width: usize,
) -> Option<Line<'static>> {
    let mut distinct: Vec<&str> = Vec::new();
    for r in reasons.flatten() {
        if !distinct.contains(&r.as_str()) {
            distinct.push(r);
        }
    }
    (!distinct.is_empty()).then(|| {
        Line::from(Span::styled(
            fit(&format!("  — = undefined: {}", distinct.join("; ")), width),
            t.dim,
        ))
    })
}

/// `text` wrapped to `width`, its first line after `mark` (in `mark_style`), the others indented
/// as far.
fn bullet(
    mark: &'static str,
    text: Span<'static>,
    mark_style: Style,
    width: usize,
) -> Vec<Line<'static>> {
    wrap::wrap(&Line::from(text), width.saturating_sub(4))
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let mut spans = vec![Span::styled(if i == 0 { mark } else { "    " }, mark_style)];
            spans.extend(l.spans);
            Line::from(spans)
        })
        .collect()
}

/// The skill exposure table: per condition, the trials that could see skills (and stray ones),
/// harness built-ins offered, the trials that used one of their skills among those whose use is
/// known, unknown ones and skills never used; the flags first. Nothing when no trial recorded
/// its exposure.
fn exposure(t: &Theme, res: &Results, width: usize) -> Vec<Line<'static>> {
    let x = &res.exposure;
    if x.conditions.iter().all(|c| c.recorded == 0) {
        return Vec::new();
    }
    let mut lines = Vec::new();
    for f in &x.flags {
        lines.extend(bullet(
            "  ! ",
            Span::styled(f.clone(), t.warn),
            t.warn,
            width,
        ));
    }
    let of = |n: usize, m: usize| format!("{n}/{m}");
    let mut c_seen = Col::new("saw skills", 0);
    let mut c_stray = Col::new("stray", 0);
    let mut c_built = Col::new("built-ins", 2);
    let mut c_used = Col::new("used ≥1", 0);
    let mut c_unknown = Col::new("unknown", 1);
    let mut c_never = Col::new("never used", 3);
    for c in &x.conditions {
        c_seen.push(of(c.with_skills, c.recorded), t.text);
        c_stray.push(
            c.stray.to_string(),
            if c.stray > 0 { t.loss } else { t.dim },
        );
        c_built.push(
            if c.harness == 0 {
                "—".into()
            } else {
                of(c.with_builtins, c.harness)
            },
            if c.with_builtins > 0 { t.warn } else { t.dim },
        );
        c_used.push(
            match c.used_share {
                Some(s) => format!("{} {}", of(c.used, c.use_known), pct_text(s)),
                None => "—".into(),
            },
            match c.used_share {
                Some(s) if s < 0.5 => t.warn,
                Some(_) => t.text,
                None => t.dim,
            },
        );
        c_unknown.push(
            c.use_unknown.to_string(),
            if c.use_unknown > 0 { t.text } else { t.dim },
        );
        c_never.push(c.never_used.len().to_string(), t.dim);
    }
    lines.extend(table(
        t,
        "skills seen/used",
        x.conditions
            .iter()
            .map(|c| (c.label.clone(), t.accent))
            .collect(),
        vec![c_seen, c_stray, c_built, c_used, c_unknown, c_never],
        width,
    ));
    lines
}

/// A comparison's skill note, short: `4/12 used a skill`, `5/5 C without a skill`.
fn skill_note(res: &Results, comparison: &str) -> String {
    let Some(n) = res
        .exposure
        .comparisons
        .iter()
        .find(|n| n.name == comparison)
    else {
        return String::new();
    };
    let mut parts: Vec<String> = Vec::new();
    if let Some((used, known)) = n.low_use {
        parts.push(format!("{used}/{known} used a skill"));
    }
    for (label, none, of) in &n.generated_none {
        parts.push(format!("{none}/{of} {label} without a skill"));
    }
    parts.join("; ")
}

/// Every line of the analysis, for `width` columns.
fn body(t: &Theme, res: &Results, grouping: Grouping, width: usize) -> Vec<Line<'static>> {
    let mut lines: Vec<Line<'static>> = Vec::new();
    let runs: Vec<String> = res
        .runs
        .iter()
        .map(|r| {
            let agent = match &r.model {
                Some(m) => format!("{}/{m}", r.agent),
                None => r.agent.clone(),
            };
            format!(
                "{} ({agent}, {} tasks × {} trials, {})",
                r.name,
                res.tasks.len(),
                r.n_trials,
                r.status
            )
        })
        .collect();
    lines.push(Line::from(Span::styled(
        fit(&format!("runs {}", runs.join(" · ")), width),
        t.dim,
    )));
    lines.push(Line::from(Span::styled(
        fit(
            &format!(
                "CI: {} · success: {} · comparisons over the tasks both sides ran",
                res.ci_method.short(),
                res.success_description
            ),
            width,
        ),
        t.dim,
    )));
    lines.push(Line::default());
    let sections = [
        conditions(t, res, width),
        exposure(t, res, width),
        comparisons(t, res, width),
        breakdown(t, res, grouping, width),
        adaptive(t, res, grouping, width),
        failure_modes(t, res, width),
        failure_categories(t, res, width),
    ];
    for s in sections.into_iter().filter(|s| !s.is_empty()) {
        lines.extend(s);
        lines.push(Line::default());
    }
    lines.extend(notes(t, res, width));
    while lines.last().is_some_and(|l| l.width() == 0) {
        lines.pop();
    }
    lines
}

/// (a) Each condition: Method D with its CI, pass@1, tasks, trials, infrastructure failures.
fn conditions(t: &Theme, res: &Results, width: usize) -> Vec<Line<'static>> {
    let conds = &res.conditions;
    let mut c_cond = Col::new("skills", 4).left();
    let mut c_pass = Col::new("pass", 0);
    let mut c_ci = Col::new("95% CI", 0);
    let mut c_p1 = Col::new("pass@1", 1);
    let mut c_tasks = Col::new("tasks", 2);
    let mut c_done = Col::new("done/planned", 1);
    let mut c_infra = Col::new("infra", 1);
    let mut c_judged = Col::new("judged", 2);
    let mut c_notrun = Col::new("not run", 3);
    let mut c_timeout = Col::new("t/o passed", 3);
    for c in conds {
        c_cond.push(condition_label(&c.condition), t.dim);
        c_pass.push(pct_text(c.pass_rate), t.accent);
        c_ci.push(ci_pct(c.ci), t.text);
        c_p1.push(pct_text(c.pass_at_1), t.text);
        c_tasks.push(c.n_tasks.to_string(), t.text);
        c_done.push(
            format!("{}/{}", c.done, c.planned),
            if c.done < c.planned {
                t.running
            } else {
                t.text
            },
        );
        let infra = c.infrastructure();
        c_infra.push(infra.to_string(), if infra > 0 { t.warn } else { t.dim });
        c_judged.push(c.pass_rate_judged.map_or("—".into(), pct_text), t.text);
        let not_run = c.failures.get(&FailureMode::NotRun).copied().unwrap_or(0);
        c_notrun.push(
            not_run.to_string(),
            if not_run > 0 { t.text } else { t.dim },
        );
        c_timeout.push(
            c.timeout_passed.to_string(),
            if c.timeout_passed > 0 { t.text } else { t.dim },
        );
    }
    let mut cols = Vec::new();
    if res.experiment.is_some() {
        cols.push(c_cond);
    }
    cols.extend([
        c_pass, c_ci, c_p1, c_tasks, c_done, c_infra, c_judged, c_notrun,
    ]);
    if conds.iter().any(|c| c.timeout_passed > 0) {
        cols.push(c_timeout);
    }
    table(
        t,
        "condition",
        conds.iter().map(|c| (c.label.clone(), t.accent)).collect(),
        cols,
        width,
    )
}

/// (b) The comparisons over their matched tasks.
fn comparisons(t: &Theme, res: &Results, width: usize) -> Vec<Line<'static>> {
    let cmps = &res.comparisons;
    if cmps.is_empty() {
        return Vec::new();
    }
    let mut c_d = Col::new("Δ pp", 0);
    let mut c_ci = Col::new("95% CI", 0);
    let mut c_n = Col::new("tasks", 1);
    let mut c_g = Col::new("g", 1);
    let mut c_up = Col::new("better", 1);
    let mut c_down = Col::new("worse", 1);
    let mut c_same = Col::new("same", 2);
    let mut c_j = Col::new("Δ judged", 3);
    let mut c_note = Col::new("skills", 1).left();
    for c in cmps {
        let (d, style) = opt_pp(t, c.delta_pp);
        c_d.push(d, style);
        c_ci.push(ci_pp(c.delta_ci_pp), ci_style(t, c.delta_ci_pp));
        c_n.push(
            if c.is_partial() {
                format!("{}/{}", c.n_tasks, c.n_tasks_total)
            } else {
                c.n_tasks.to_string()
            },
            if c.is_partial() { t.warn } else { t.dim },
        );
        c_g.push(
            c.g.map_or("—".into(), |g| format!("{g:+.2}")),
            c.g.map_or(t.dim, |g| t.delta(g)),
        );
        c_up.push(c.improved.to_string(), t.gain);
        c_down.push(c.degraded.to_string(), t.loss);
        c_same.push(c.unchanged.to_string(), t.dim);
        let (j, style) = opt_pp(t, c.delta_pp_judged);
        c_j.push(j, style);
        c_note.push(skill_note(res, &c.name), t.warn);
    }
    let mut cols = vec![c_d, c_ci];
    // Beside Δ: what the treated trials did with their skills, when it is worth a note.
    if !res.exposure.comparisons.is_empty() {
        cols.push(c_note);
    }
    cols.extend([c_n, c_g, c_up, c_down, c_same, c_j]);
    let mut lines = table(
        t,
        "comparison",
        cmps.iter().map(|c| (c.name.clone(), t.text)).collect(),
        cols,
        width,
    );
    lines.extend(undefined_legend(
        t,
        cmps.iter()
            .flat_map(|c| [&c.delta_undefined, &c.ci_undefined, &c.g_undefined]),
        width,
    ));
    lines
}

/// (c) The breakdown by domain or difficulty, and the overall row.
fn breakdown(t: &Theme, res: &Results, grouping: Grouping, width: usize) -> Vec<Line<'static>> {
    let (conds, cmps) = (&res.conditions, &res.comparisons);
    let (rows, section): (&[GroupRow], &str) = match grouping {
        Grouping::Domain => (&res.domains, "domain"),
        Grouping::Difficulty => (&res.difficulties, "difficulty"),
    };
    let mut c_n = Col::new("tasks", 1);
    let mut c_rates: Vec<Col> = conds.iter().map(|c| Col::new(c.label.clone(), 0)).collect();
    let same_base = cmps.windows(2).all(|w| w[0].without == w[1].without);
    let mut c_deltas: Vec<Col> = cmps
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let head = if same_base {
                format!("Δ {}", c.with)
            } else {
                format!("Δ {}−{}", c.with, c.without)
            };
            Col::new(head, if i == 0 { 1 } else { 2 })
        })
        .collect();
    let mut labels = Vec::new();
    for g in rows {
        labels.push((g.group.clone(), t.text));
        c_n.push(g.n_tasks.to_string(), t.dim);
        for (col, r) in c_rates.iter_mut().zip(&g.rates) {
            col.push(opt_pct(*r), if r.is_some() { t.text } else { t.dim });
        }
        for (col, d) in c_deltas.iter_mut().zip(&g.deltas_pp) {
            let (text, style) = opt_pp(t, *d);
            col.push(text, style);
        }
    }
    labels.push(("overall".into(), t.accent));
    c_n.push(res.tasks.len().to_string(), t.accent);
    for (col, c) in c_rates.iter_mut().zip(conds) {
        col.push(pct_text(c.pass_rate), t.accent);
    }
    for (col, c) in c_deltas.iter_mut().zip(cmps) {
        let (text, style) = opt_pp(t, c.delta_pp);
        col.push(text, style);
    }
    let mut cols = vec![c_n];
    cols.extend(c_rates);
    cols.extend(c_deltas);
    table(t, section, labels, cols, width)
}

/// pass@2-adaptive per round pair, overall and by the chosen grouping.
fn adaptive(t: &Theme, res: &Results, grouping: Grouping, width: usize) -> Vec<Line<'static>> {
    let scope = match grouping {
        Grouping::Domain => "domain",
        Grouping::Difficulty => "difficulty",
    };
    let adaptive: Vec<_> = res
        .adaptive
        .iter()
        .filter(|a| a.scope == "overall" || a.scope == scope)
        .collect();
    if adaptive.is_empty() {
        return Vec::new();
    }
    let mut c_n = Col::new("tasks", 3);
    let mut c_1 = Col::new("pass@1 r1", 2);
    let mut c_2 = Col::new("pass@1 r2", 2);
    let mut c_a = Col::new("pass@2-adapt", 0);
    let mut c_p = Col::new("pass@2", 0);
    let mut c_g = Col::new("gain pp", 0);
    let mut c_ci = Col::new("95% CI", 1);
    let mut labels = Vec::new();
    for a in &adaptive {
        let overall = a.scope == "overall";
        labels.push(if overall {
            (a.name.clone(), t.accent)
        } else {
            (format!("{} {}", a.name, a.group), t.text)
        });
        c_n.push(a.n_tasks.to_string(), t.dim);
        c_1.push(pct_text(a.pass1_round1), t.text);
        c_2.push(pct_text(a.pass1_round2), t.text);
        c_a.push(
            pct_text(a.pass2_adaptive),
            if overall { t.accent } else { t.text },
        );
        c_p.push(opt_pct(a.pass2), t.text);
        let (g, style) = opt_pp(t, a.gain_pp);
        c_g.push(g, style);
        c_ci.push(ci_pp(a.gain_ci_pp), ci_style(t, a.gain_ci_pp));
    }
    let mut lines = table(
        t,
        "pass@2-adaptive",
        labels,
        vec![c_n, c_1, c_2, c_a, c_p, c_g, c_ci],
        width,
    );
    lines.extend(undefined_legend(
        t,
        adaptive
            .iter()
            .flat_map(|a| [&a.pass2_undefined, &a.gain_ci_undefined]),
        width,
    ));
    lines
}

/// Failure modes (trials that did not succeed) per condition.
fn failure_modes(t: &Theme, res: &Results, width: usize) -> Vec<Line<'static>> {
    let conds = &res.conditions;
    let modes: Vec<FailureMode> = FailureMode::ALL
        .into_iter()
        .filter(|m| {
            conds
                .iter()
                .any(|c| c.failures.get(m).is_some_and(|n| *n > 0))
        })
        .collect();
    if modes.is_empty() {
        return Vec::new();
    }
    let mut cols: Vec<Col> = conds.iter().map(|c| Col::new(c.label.clone(), 0)).collect();
    for m in &modes {
        for (col, c) in cols.iter_mut().zip(conds) {
            let n = c.failures.get(m).copied().unwrap_or(0);
            let style = match (n, m.is_infrastructure()) {
                (0, _) => t.dim,
                (_, true) => t.warn,
                _ => t.text,
            };
            col.push(n.to_string(), style);
        }
    }
    let labels = modes
        .iter()
        .map(|m| {
            if m.is_infrastructure() {
                (format!("{} (infra)", m.label()), t.warn)
            } else {
                (m.label().to_string(), t.text)
            }
        })
        .collect();
    table(t, "failure mode (trials)", labels, cols, width)
}

/// Failure categories of the judged failures.
fn failure_categories(t: &Theme, res: &Results, width: usize) -> Vec<Line<'static>> {
    let conds = &res.conditions;
    if conds.iter().all(|c| c.categories.is_empty()) {
        return Vec::new();
    }
    let mut cols: Vec<Col> = conds.iter().map(|c| Col::new(c.label.clone(), 0)).collect();
    for k in FailureCategory::ALL {
        for (col, c) in cols.iter_mut().zip(conds) {
            let n = c.categories.get(&k).copied().unwrap_or(0);
            col.push(n.to_string(), if n == 0 { t.dim } else { t.text });
        }
    }
    let labels = FailureCategory::ALL
        .iter()
        .map(|k| (k.as_str().to_string(), t.text))
        .collect();
    table(t, "failure category", labels, cols, width)
}

/// The analysis's notes, wrapped.
fn notes(t: &Theme, res: &Results, width: usize) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    if res.notes.is_empty() {
        return lines;
    }
    lines.push(Line::from(Span::styled("notes", t.header)));
    for n in &res.notes {
        lines.extend(bullet(
            "  • ",
            Span::styled(n.clone(), t.text),
            t.warn,
            width,
        ));
    }
    lines
}
