//! The report's PNG charts, drawn with plotters on an in-memory bitmap and encoded with `png`.
//!
//! | Chart | File | What |
//! |---|---|---|
//! | [`ChartKind::PassRate`] | `charts/pass_rate.png` | Method D pass rate per condition, 95 % CI whiskers |
//! | [`ChartKind::Domains`] | `charts/domains.png` (`domains_<n>.png` past 8 conditions) | pass rate per domain, one bar per condition, 8 conditions a page |
//! | [`ChartKind::TaskDeltas`] | `charts/task_deltas_<n>.png` | Δ per task, one named bar per changed task, best first, one chart per comparison |
//! | [`ChartKind::Failures`] | `charts/failures.png` | share of planned trials per outcome, stacked, per condition |
//! | [`ChartKind::Skills`] | `charts/skills.png` | rubric score per skill (best 25), coloured by tier |
//!
//! Category labels are drawn by hand at each bar's centre (plotters' tick placement would not put
//! them there); text comes from the store and is stripped of control characters and shortened.
//! The font is DejaVu Sans, embedded (`data/fonts/`), so charts look the same on any machine; it
//! is set by [`super::typeset`] (plotters' own text drawing misplaces glyphs), which also records
//! where every text went so tests can check that none is cut off. Value labels sit right of the
//! end of their bar (a CI whisker runs under the bar, never between the bar and its label),
//! inside a margin wide enough for `100.0%`; a bar of 0 % is drawn as a thin stub so it reads
//! as zero, not as missing.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::Report;
use super::typeset::{TextBox, Typeset, measure};
use crate::analysis::results::FailureMode;
use crate::analysis::rubric::Tier;

/// Folder of the charts, relative to the report.
pub const FOLDER: &str = "charts";

/// Conditions per page of the per-domain chart (one colour each).
pub const MAX_SERIES: usize = 8;

/// Most tasks in a Δ-per-task chart: the 60 most improved and the 60 most degraded are drawn
/// when more changed.
pub const MAX_TASK_ROWS: usize = 120;

/// Most skills in the leaderboard chart.
pub const MAX_SKILLS: usize = 25;

/// DejaVu Sans, the charts' font.
pub(crate) const FONT_BYTES: &[u8] = include_bytes!("../../data/fonts/DejaVuSans.ttf");
const FAMILY: &str = "sans-serif";
const WIDTH: u32 = 1000;

/// Okabe–Ito colours (distinguishable with colour-blindness), one per series.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
    RGBColor(90, 90, 90),
];
const GOOD: RGBColor = RGBColor(0, 158, 115);
const BAD: RGBColor = RGBColor(213, 94, 0);
const GRID: RGBColor = RGBColor(200, 200, 200);

/// Which chart.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "chart", content = "of", rename_all = "snake_case")]
pub enum ChartKind {
    /// Pass rate per condition with CIs.
    PassRate,
    /// Per-domain grouped bars: page `n` (0-based) of [`MAX_SERIES`] conditions.
    Domains(usize),
    /// Δ per task for the named comparison.
    TaskDeltas(String),
    /// Failure modes, stacked.
    Failures,
    /// Skill score leaderboard.
    Skills,
}

/// A chart to draw: its kind, file (relative to the report folder) and title (also the image's
/// alt text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartSpec {
    /// What it shows.
    pub kind: ChartKind,
    /// `charts/<name>.png`.
    pub file: String,
    /// Title.
    pub title: String,
}

/// The charts `report` has data for, in report order.
pub fn plan(report: &Report) -> Vec<ChartSpec> {
    let r = &report.results;
    let mut out = Vec::new();
    if r.conditions.is_empty() {
        return out;
    }
    out.push(ChartSpec {
        kind: ChartKind::PassRate,
        file: format!("{FOLDER}/pass_rate.png"),
        title: "Pass rate per condition (Method D) with 95% CIs".into(),
    });
    if !r.domains.is_empty() {
        let n = r.conditions.len();
        let pages = n.div_ceil(MAX_SERIES);
        for page in 0..pages {
            let (from, to) = (page * MAX_SERIES + 1, ((page + 1) * MAX_SERIES).min(n));
            out.push(ChartSpec {
                kind: ChartKind::Domains(page),
                file: if pages == 1 {
                    format!("{FOLDER}/domains.png")
                } else {
                    format!("{FOLDER}/domains_{}.png", page + 1)
                },
                title: if pages == 1 {
                    "Pass rate per domain".into()
                } else {
                    format!("Pass rate per domain (conditions {from}–{to} of {n})")
                },
            });
        }
    }
    for (i, c) in r.comparisons.iter().enumerate() {
        out.push(ChartSpec {
            kind: ChartKind::TaskDeltas(c.name.clone()),
            file: format!("{FOLDER}/task_deltas_{}.png", i + 1),
            title: format!("Δ per task, {}", clean(&c.name, 80)),
        });
    }
    out.push(ChartSpec {
        kind: ChartKind::Failures,
        file: format!("{FOLDER}/failures.png"),
        title: "Outcomes per condition (share of planned trials)".into(),
    });
    if !report.skills.scores.is_empty() {
        out.push(ChartSpec {
            kind: ChartKind::Skills,
            file: format!("{FOLDER}/skills.png"),
            title: "Skill score leaderboard (rubric, 0-100)".into(),
        });
    }
    // A chart of unfinished results says so in its title (its alt text too), as the report does.
    if r.interim.is_some() {
        for spec in &mut out {
            spec.title.push_str(" (interim)");
        }
    }
    out
}

/// Draws `spec` and returns the PNG bytes.
///
/// # Errors
/// A message when drawing or encoding fails (the caller names the file).
pub fn render(report: &Report, spec: &ChartSpec) -> Result<Vec<u8>, String> {
    render_with_text(report, spec).map(|r| r.png)
}

/// A drawn chart: the PNG, its size and the box of every text in it.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// PNG bytes.
    pub png: Vec<u8>,
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// Every text drawn, where it went (a box may reach outside the image: that is a bug).
    pub text: Vec<TextBox>,
}

fn chart_font() -> ab_glyph::FontRef<'static> {
    ab_glyph::FontRef::try_from_slice(FONT_BYTES).expect("the embedded font parses")
}

/// Registers the embedded font under [`FAMILY`] with plotters, once per process. Every backend
/// needs it: the PNG's typesetter sets the glyphs itself but plotters still resolves the family
/// name, and the SVG backend measures its labels with it. Without it a chart fails with
/// `FontUnavailable` on a machine without system fonts (plotters' `ab_glyph` feature has no
/// fallback to them).
fn register_family() {
    static FONT_ONCE: Once = Once::new();
    FONT_ONCE.call_once(|| {
        let _ = plotters::style::register_font(FAMILY, FontStyle::Normal, FONT_BYTES);
    });
}

/// [`render`], also returning where each text went.
///
/// # Errors
/// As [`render`].
pub fn render_with_text(report: &Report, spec: &ChartSpec) -> Result<Rendered, String> {
    register_family();
    let height = height(report, spec);
    let mut buf = vec![0u8; (WIDTH * height * 3) as usize];
    let boxes = Rc::new(RefCell::new(Vec::new()));
    {
        let backend = Typeset::new(
            BitMapBackend::with_buffer(&mut buf, (WIDTH, height)),
            chart_font(),
            boxes.clone(),
        );
        draw(report, spec, &backend.into_drawing_area())?;
    }
    let text = boxes.borrow().clone();
    Ok(Rendered {
        png: encode(&buf, WIDTH, height)?,
        width: WIDTH,
        height,
        text,
    })
}

/// The height of `spec`'s chart in pixels (its width is 1,000).
fn height(report: &Report, spec: &ChartSpec) -> u32 {
    let r = &report.results;
    match &spec.kind {
        ChartKind::PassRate => 110 + ROW * r.conditions.len() as u32,
        ChartKind::Failures => {
            110 + ROW * r.conditions.len() as u32
                + legend_px(1 + modes_present(&r.conditions).len())
        }
        ChartKind::Domains(page) => {
            let k = page_conditions(r, *page).len() as u32;
            130 + r.domains.len() as u32 * (12 * k + 14) + legend_px(k as usize)
        }
        ChartKind::TaskDeltas(name) => {
            120 + TASK_ROW * task_rows(report, name).rows.len().max(1) as u32
        }
        // One row more: the tier thresholds' labels above the bars.
        ChartKind::Skills => 110 + 26 * (report.skills.scores.len().min(MAX_SKILLS) as u32 + 1),
    }
    .clamp(240, 4000)
}

/// Draws `spec` on `root` (white background) and presents it.
fn draw<DB: Backend>(report: &Report, spec: &ChartSpec, root: &Area<DB>) -> Result<(), String> {
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    match &spec.kind {
        ChartKind::PassRate => pass_rate(report, &spec.title, root),
        ChartKind::Domains(page) => domains(report, *page, &spec.title, root),
        ChartKind::TaskDeltas(name) => task_deltas(report, name, &spec.title, root),
        ChartKind::Failures => failures(report, &spec.title, root),
        ChartKind::Skills => skills(report, &spec.title, root),
    }
    .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

/// Draws `spec` as an SVG document (for the HTML report, inline): the same chart as the PNG
/// without its title (the page gives it once, as the figure's caption), its text as SVG text in
/// the reader's sans-serif font.
///
/// # Errors
/// A message when drawing fails.
pub fn render_svg(report: &Report, spec: &ChartSpec) -> Result<String, String> {
    register_family();
    let untitled = ChartSpec {
        title: String::new(),
        ..spec.clone()
    };
    let mut out = String::new();
    {
        let backend = SVGBackend::with_string(&mut out, (WIDTH, height(report, spec)));
        draw(report, &untitled, &backend.into_drawing_area())?;
    }
    Ok(out)
}

/// The conditions on page `page` of the per-domain chart, with their index in the results.
fn page_conditions(
    r: &crate::analysis::results::Results,
    page: usize,
) -> Vec<(usize, &crate::analysis::results::ConditionResult)> {
    r.conditions
        .iter()
        .enumerate()
        .skip(page * MAX_SERIES)
        .take(MAX_SERIES)
        .collect()
}

fn encode(rgb: &[u8], w: u32, h: u32) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(rgb).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(out)
}

/// Pixels per condition row.
const ROW: u32 = 30;

/// Pixels a legend of `entries` lines takes (kept clear of bars).
fn legend_px(entries: usize) -> u32 {
    20 * entries as u32 + 16
}

/// Failure modes with at least one trial in some condition, in report order.
fn modes_present(conds: &[crate::analysis::results::ConditionResult]) -> Vec<FailureMode> {
    FailureMode::ALL
        .into_iter()
        .filter(|m| {
            conds
                .iter()
                .any(|c| c.failures.get(m).copied().unwrap_or(0) > 0)
        })
        .collect()
}

type Area<DB> = DrawingArea<DB, Shift>;
type DrawResult = Result<(), Box<dyn std::error::Error + 'static>>;

/// A backend the charts draw on: the typeset bitmap (PNG) or SVG.
trait Backend: DrawingBackend<ErrorType: 'static> {}
impl<T: DrawingBackend<ErrorType: 'static>> Backend for T {}

/// Store text made safe and short for a chart label.
fn clean(s: &str, max: usize) -> String {
    let s = crate::sanitize::text(s).replace('\n', " ");
    if s.chars().count() > max {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    } else {
        s
    }
}

/// Pixels a label column needs for `labels` at the row-label size, plus the gap to the bars.
fn label_width<'a>(labels: impl Iterator<Item = &'a str>) -> u32 {
    let f = chart_font();
    let longest = labels
        .map(|l| measure(&f, ROW_LABEL_PX, l).0)
        .max()
        .unwrap_or(30);
    (longest + 24).clamp(60, 420)
}

/// Pixels right of the plotting area for value labels such as `100.0%` or `95.0 Excellent`.
fn value_margin<'a>(labels: impl Iterator<Item = &'a str>) -> u32 {
    let f = chart_font();
    labels.map(|l| measure(&f, 12.0, l).0).max().unwrap_or(0) + 20
}

/// `text` shortened with `…` until it is at most `max_px` wide at `size` px.
fn fit_px(text: &str, size: f64, max_px: u32) -> String {
    let f = chart_font();
    if measure(&f, size, text).0 <= max_px {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    for keep in (0..chars.len()).rev() {
        let t: String = chars[..keep].iter().collect::<String>() + "…";
        if measure(&f, size, &t).0 <= max_px {
            return t;
        }
    }
    String::new()
}

/// A chart title that fits between the chart's margins (`left` and `right` pixels).
fn title_fit(title: &str, left: u32, right: u32) -> String {
    fit_px(title, 20.0, WIDTH.saturating_sub(left + right + 24 + 24))
}

/// Size of row labels, pixels.
const ROW_LABEL_PX: f64 = 13.0;

fn font(size: u32) -> TextStyle<'static> {
    (FAMILY, size).into_font().color(&BLACK)
}

/// Draws `labels` right-aligned left of `chart`'s plotting area, label `i` at the centre of row
/// `i` counted from the top of `n` rows (row `i` spans y = n − i − 1 … n − i).
fn row_labels<DB: Backend>(
    root: &Area<DB>,
    chart: &PercentChart<DB>,
    n: f64,
    labels: &[String],
) -> DrawResult {
    let style = font(ROW_LABEL_PX as u32).pos(Pos::new(HPos::Right, VPos::Center));
    let (x0, _) = chart.backend_coord(&(0.0, n));
    for (i, label) in labels.iter().enumerate() {
        let (_, y) = chart.backend_coord(&(0.0, n - i as f64 - 0.5));
        root.draw(&Text::new(label.clone(), (x0 - 8, y), style.clone()))?;
    }
    Ok(())
}

/// Draws the series legend (boxed, white background) at `position`.
fn legend<'a, DB: Backend + 'a>(
    chart: &mut PercentChart<'a, DB>,
    position: SeriesLabelPosition,
) -> DrawResult {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(font(12))
        .draw()?;
    Ok(())
}

/// A chart builder on `root` captioned `title` (fitted between the `left` and `right` margins),
/// or without a caption when `title` is empty (the HTML report captions its figures itself).
fn captioned<'a, 'b, DB: Backend>(
    root: &'a Area<DB>,
    title: &str,
    left: u32,
    right: u32,
) -> ChartBuilder<'a, 'b, DB> {
    let mut builder = ChartBuilder::on(root);
    if !title.is_empty() {
        builder.caption(title_fit(title, left, right), font(20));
    }
    builder
}

/// A chart of horizontal bars over 0–100 (x, with a vertical grid) and category rows (y over
/// `rows`, no y axis: the caller draws row labels into the `left` margin), captioned `title`.
fn percent_rows<'a, DB: Backend>(
    root: &'a Area<DB>,
    title: &str,
    (left, right): (u32, u32),
    rows: std::ops::Range<f64>,
    x_desc: &str,
) -> Result<PercentChart<'a, DB>, Box<dyn std::error::Error + 'static>> {
    let mut chart = captioned(root, title, left, right.max(28))
        .margin(12)
        .margin_right(right.max(28) as i32)
        .margin_left(left as i32)
        .x_label_area_size(36)
        .y_label_area_size(0)
        .build_cartesian_2d(0f64..100f64, rows)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc(x_desc)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .light_line_style(TRANSPARENT)
        .bold_line_style(GRID)
        .label_style(font(12))
        .draw()?;
    Ok(chart)
}

type PercentChart<'a, DB> = ChartContext<
    'a,
    DB,
    plotters::coord::cartesian::Cartesian2d<
        plotters::coord::types::RangedCoordf64,
        plotters::coord::types::RangedCoordf64,
    >,
>;

fn pass_rate<DB: Backend>(report: &Report, title: &str, root: &Area<DB>) -> DrawResult {
    let conds = &report.results.conditions;
    let labels: Vec<String> = conds.iter().map(|c| clean(&c.label, 56)).collect();
    let left = label_width(labels.iter().map(String::as_str));
    let right = value_margin(["100.0%"].into_iter());
    let n = conds.len() as f64;
    let mut chart = percent_rows(root, title, (left, right), 0f64..n, "pass rate (%)")?;
    // One colour per condition key, so every run's no-skills bar looks alike.
    let mut keys: Vec<&str> = Vec::new();
    for c in conds {
        if !keys.contains(&c.condition.as_str()) {
            keys.push(&c.condition);
        }
    }
    for (i, c) in conds.iter().enumerate() {
        let y = n - i as f64 - 1.0;
        let k = keys.iter().position(|k| *k == c.condition).unwrap_or(i);
        let colour = PALETTE[k % PALETTE.len()];
        let v = c.pass_rate * 100.0;
        // The bar in the row's upper part, its CI whisker under it: the value label sits at the
        // end of its bar, clear of the whisker however far the interval reaches.
        chart.draw_series(std::iter::once(Rectangle::new(
            [(0.0, y + 0.36), (v.max(ZERO_STUB), y + 0.86)],
            colour.filled(),
        )))?;
        if let Some(ci) = c.ci {
            let (lo, hi) = (ci.low * 100.0, ci.high * 100.0);
            chart.draw_series([
                PathElement::new(vec![(lo, y + 0.2), (hi, y + 0.2)], BLACK.stroke_width(2)),
                PathElement::new(vec![(lo, y + 0.1), (lo, y + 0.3)], BLACK.stroke_width(2)),
                PathElement::new(vec![(hi, y + 0.1), (hi, y + 0.3)], BLACK.stroke_width(2)),
            ])?;
        }
        let (px, py) = chart.backend_coord(&(v.max(ZERO_STUB), y + 0.61));
        root.draw(&Text::new(
            format!("{v:.1}%"),
            (px + 6, py),
            font(12).pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    row_labels(root, &chart, n, &labels)
}

/// Width drawn for a bar of 0 % (percent units): a visible stub, so zero reads as zero.
const ZERO_STUB: f64 = 0.5;

fn domains<DB: Backend>(report: &Report, page: usize, title: &str, root: &Area<DB>) -> DrawResult {
    let r = &report.results;
    let conds = page_conditions(r, page);
    let k = conds.len().max(1) as f64;
    let labels: Vec<String> = r.domains.iter().map(|d| clean(&d.group, 34)).collect();
    let left = label_width(labels.iter().map(String::as_str));
    let n = r.domains.len() as f64;
    // Room below the bars for the legend, in domain rows.
    let row_px = (12 * conds.len().max(1) + 14) as f64;
    let extra = legend_px(conds.len()) as f64 / row_px;
    let mut chart = percent_rows(
        root,
        title,
        (left, 28),
        -extra..n,
        "pass rate (%) · a stub marks 0 %",
    )?;
    let band = 0.8 / k;
    for (j, (ci, c)) in conds.iter().enumerate() {
        let colour = PALETTE[j % PALETTE.len()];
        let ci = *ci;
        chart
            // A domain the condition ran no task of has no bar.
            .draw_series(r.domains.iter().enumerate().filter_map(|(i, d)| {
                let top = n - i as f64 - 0.1 - band * j as f64;
                d.rates[ci].map(|rate| {
                    Rectangle::new(
                        [
                            (0.0, top - band * 0.9),
                            ((rate * 100.0).max(ZERO_STUB), top),
                        ],
                        colour.filled(),
                    )
                })
            }))?
            .label(clean(&c.label, 56))
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour.filled()));
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    row_labels(root, &chart, n, &labels)
}

/// Pixels per task row of a Δ chart.
const TASK_ROW: u32 = 16;

/// The rows of the Δ chart of comparison `name`.
struct TaskRows {
    /// (task, Δ pp) of the tasks whose Δ is not 0, best first — at most [`MAX_TASK_ROWS`]: the
    /// most improved and the most degraded halves when more changed.
    rows: Vec<(String, f64)>,
    /// Tasks that improved, degraded and did not change (all of them, drawn or not).
    improved: usize,
    degraded: usize,
    unchanged: usize,
    /// Changed tasks not drawn.
    elided: usize,
}

fn task_rows(report: &Report, name: &str) -> TaskRows {
    let all: Vec<(String, f64)> = report
        .results
        .task_deltas
        .iter()
        .filter(|t| t.comparison == name)
        .filter_map(|t| Some((clean(&t.task, 60), t.delta_pp?)))
        .collect();
    let mut changed: Vec<(String, f64)> = all
        .iter()
        .filter(|(_, d)| d.abs() > 1e-7)
        .cloned()
        .collect();
    changed.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let unchanged = all.len() - changed.len();
    let improved = changed.iter().filter(|(_, d)| *d > 0.0).count();
    let degraded = changed.len() - improved;
    let mut elided = 0;
    if changed.len() > MAX_TASK_ROWS {
        elided = changed.len() - MAX_TASK_ROWS;
        let tail = changed.split_off(changed.len() - MAX_TASK_ROWS / 2);
        changed.truncate(MAX_TASK_ROWS / 2);
        changed.extend(tail);
    }
    TaskRows {
        rows: changed,
        improved,
        degraded,
        unchanged,
        elided,
    }
}

fn task_deltas<DB: Backend>(
    report: &Report,
    name: &str,
    title: &str,
    root: &Area<DB>,
) -> DrawResult {
    let TaskRows {
        rows,
        improved,
        degraded,
        unchanged,
        elided,
    } = task_rows(report, name);
    let labels: Vec<String> = rows.iter().map(|(t, _)| t.clone()).collect();
    let left = label_width(labels.iter().map(String::as_str));
    let n = rows.len().max(1) as f64;
    let lo = rows.iter().map(|r| r.1).fold(0.0f64, f64::min);
    let hi = rows.iter().map(|r| r.1).fold(0.0f64, f64::max);
    let pad = ((hi - lo) * 0.08).max(5.0);
    let (lo, hi) = ((lo - pad).max(-100.0), (hi + pad).min(100.0));
    let desc = if elided > 0 {
        format!(
            "Δ mean reward (pp) · {improved} improved, {degraded} degraded ({} of them drawn: the extremes), {unchanged} unchanged",
            rows.len()
        )
    } else {
        format!(
            "Δ mean reward (pp) · {improved} improved, {degraded} degraded, {unchanged} unchanged (not drawn)"
        )
    };
    let mut chart = captioned(root, title, left, 28)
        .margin(12)
        .margin_right(28)
        .margin_left(left as i32)
        .x_label_area_size(36)
        .y_label_area_size(0)
        .build_cartesian_2d(lo..hi, 0f64..n)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc(desc)
        .x_label_formatter(&|v| format!("{v:+.0}"))
        .light_line_style(TRANSPARENT)
        .bold_line_style(GRID)
        .label_style(font(12))
        .draw()?;
    if rows.is_empty() {
        let (x, y) = chart.backend_coord(&((lo + hi) / 2.0, 0.5));
        root.draw(&Text::new(
            "no task changed",
            (x, y),
            font(14).pos(Pos::new(HPos::Center, VPos::Center)),
        ))?;
        return Ok(());
    }
    chart.draw_series(rows.iter().enumerate().map(|(i, (_, d))| {
        let colour = if *d >= 0.0 { GOOD } else { BAD };
        let y = n - i as f64 - 1.0;
        Rectangle::new([(0.0, y + 0.15), (*d, y + 0.85)], colour.filled())
    }))?;
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(0.0, 0.0), (0.0, n)],
        BLACK.stroke_width(1),
    )))?;
    // Task names left of the plot, as in the other row charts.
    let style = font(ROW_LABEL_PX as u32 - 1).pos(Pos::new(HPos::Right, VPos::Center));
    let (x0, _) = chart.backend_coord(&(lo, n));
    for (i, label) in labels.iter().enumerate() {
        let (_, y) = chart.backend_coord(&(lo, n - i as f64 - 0.5));
        root.draw(&Text::new(label.clone(), (x0 - 8, y), style.clone()))?;
    }
    Ok(())
}

/// A stacked segment: legend label, colour, trials of condition `i`.
type Segment<'a> = (String, RGBColor, Box<dyn Fn(usize) -> usize + 'a>);

fn failures<DB: Backend>(report: &Report, title: &str, root: &Area<DB>) -> DrawResult {
    let conds = &report.results.conditions;
    let labels: Vec<String> = conds.iter().map(|c| clean(&c.label, 56)).collect();
    let left = label_width(labels.iter().map(String::as_str));
    let n = conds.len() as f64;
    let modes = modes_present(conds);
    // Room above the bars for the legend, in row units.
    let extra = legend_px(1 + modes.len()) as f64 / ROW as f64;
    let mut chart = percent_rows(
        root,
        title,
        (left, 28),
        0f64..(n + extra),
        "share of planned trials (%)",
    )?;
    // Segments: passed first, then each failure mode.
    let mut segments: Vec<Segment> =
        vec![("passed".into(), GOOD, Box::new(|i: usize| conds[i].passed))];
    for m in &modes {
        let m = *m;
        let colour = mode_colour(m);
        let label = if m.is_infrastructure() {
            format!("{} (infra)", m.label())
        } else {
            m.label().to_string()
        };
        segments.push((
            label,
            colour,
            Box::new(move |i: usize| conds[i].failures.get(&m).copied().unwrap_or(0)),
        ));
    }
    let mut start = vec![0.0f64; conds.len()];
    for (label, colour, count) in &segments {
        let colour = *colour;
        let bars: Vec<Rectangle<(f64, f64)>> = conds
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let share = count(i) as f64 / c.planned.max(1) as f64 * 100.0;
                let y = n - i as f64 - 1.0;
                let r = Rectangle::new(
                    [(start[i], y + 0.2), (start[i] + share, y + 0.8)],
                    colour.filled(),
                );
                start[i] += share;
                r
            })
            .collect();
        chart
            .draw_series(bars)?
            .label(label.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour.filled()));
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    row_labels(root, &chart, n, &labels)
}

/// The colour of a failure mode's segment: Okabe–Ito again, warm first (the commonest
/// failures), then light greys for what is not a verdict. A `match`, so every mode has one.
pub fn mode_colour(m: FailureMode) -> RGBColor {
    match m {
        FailureMode::WrongOutput => PALETTE[5],
        FailureMode::AgentTimeout => PALETTE[1],
        FailureMode::VerifierTimeout => PALETTE[6],
        FailureMode::RuntimeError => PALETTE[3],
        FailureMode::BuildError => PALETTE[0],
        FailureMode::NoReward => PALETTE[4],
        FailureMode::ProviderError => PALETTE[7],
        FailureMode::NotRun => RGBColor(190, 190, 190),
    }
}

/// Tier colour (green for the best, red for failing).
pub fn tier_colour(t: Tier) -> RGBColor {
    match t {
        Tier::Excellent => RGBColor(0, 128, 90),
        Tier::Good => RGBColor(0, 158, 115),
        Tier::Acceptable => RGBColor(86, 180, 233),
        Tier::BelowAverage => RGBColor(230, 159, 0),
        Tier::Poor => RGBColor(213, 94, 0),
        Tier::Failing => RGBColor(170, 30, 30),
    }
}

fn skills<DB: Backend>(report: &Report, title: &str, root: &Area<DB>) -> DrawResult {
    let scores: Vec<_> = report.skills.scores.iter().take(MAX_SKILLS).collect();
    let labels: Vec<String> = scores
        .iter()
        .map(|s| format!("{} ({})", clean(&s.skill_name, 36), s.invocations))
        .collect();
    let left = label_width(labels.iter().map(String::as_str));
    let values: Vec<String> = scores
        .iter()
        .map(|s| format!("{:.1} {}", s.avg_score, s.tier.label()))
        .collect();
    let right = value_margin(values.iter().map(String::as_str));
    let n = scores.len() as f64;
    // The bars in rows 0..n; the row above them labels the tier thresholds.
    let mut chart = percent_rows(
        root,
        title,
        (left, right),
        0f64..n + 1.0,
        "mean quality score (invocations in brackets)",
    )?;
    // Tier boundaries, each line labelled with its tier and lowest score above the bars.
    for t in Tier::ALL.iter().filter(|t| t.min_score() > 0) {
        let x = t.min_score() as f64;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(x, 0.0), (x, n + 0.15)],
            tier_colour(*t).mix(0.6).stroke_width(1),
        )))?;
        let (px, py) = chart.backend_coord(&(x, n + 0.5));
        root.draw(&Text::new(
            format!("{} ≥{}", t.label(), t.min_score()),
            (px + 3, py),
            font(11)
                .color(&tier_colour(*t))
                .pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    for (i, (s, value)) in scores.iter().zip(values).enumerate() {
        let y = n - i as f64 - 1.0;
        chart.draw_series(std::iter::once(Rectangle::new(
            [(0.0, y + 0.2), (s.avg_score.max(ZERO_STUB), y + 0.8)],
            tier_colour(s.tier).filled(),
        )))?;
        let (px, py) = chart.backend_coord(&(s.avg_score, y + 0.5));
        root.draw(&Text::new(
            value,
            (px + 6, py),
            font(12).pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    row_labels(root, &chart, n, &labels)
}
