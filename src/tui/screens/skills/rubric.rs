//! The rubric panel of the selected skill (`skill-scoring-rubric.md`, over the watched runs'
//! trials that invoked it): the score and tier, the four components against their maxima
//! (25/20/30/25), invocations, error rate and trend, the weak component with the rubric's
//! recommendation, and the publish, feature and deprecation gates with the reasons they fail.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::SkillsState;
use crate::analysis::rubric::{
    Component, Direction, Gate, MIN_TREND_INVOCATIONS, RECENT_INVOCATIONS, Trend,
};
use crate::tui::theme::Theme;
use crate::tui::widgets::wrap::{hanging, wrap};
use crate::tui::widgets::{bar, fit, framed};

/// The rubric panel of skill `name`: `lines` from [`rubric_lines`] in a block titled with the
/// runs scored.
pub fn rubric_panel(
    f: &mut Frame,
    area: Rect,
    t: &Theme,
    sk: &SkillsState,
    name: &str,
    lines: Vec<Line<'static>>,
) {
    let runs = sk
        .rubric
        .as_ref()
        .map(|r| format!(" · {}", r.runs.join(" + ")))
        .unwrap_or_default();
    let title = fit(
        &format!("rubric · {name}{runs}"),
        area.width.saturating_sub(4) as usize,
    );
    let block = framed(t, &title, false);
    let inner = block.inner(area);
    f.render_widget(block, area);
    f.render_widget(Paragraph::new(lines), inner);
}

/// The component's name as the rubric panel shows it, long or (`compact`) short.
fn component_name(c: Component, compact: bool) -> &'static str {
    match (c, compact) {
        (Component::Completion, false) => "completion",
        (Component::Efficiency, false) => "efficiency",
        (Component::Quality, false) => "output quality",
        (Component::Satisfaction, false) => "satisfaction",
        (Component::Completion, true) => "compl",
        (Component::Efficiency, true) => "effic",
        (Component::Quality, true) => "quality",
        (Component::Satisfaction, true) => "satisf",
    }
}

/// What the rubric says of skill `name` in the watched runs, for `width` columns: its average
/// score and tier, the four components against their maxima (one line each, or one line in all
/// when `compact`), invocations, error rate and trend, the weak component with the rubric's
/// recommendation, and the publish, feature and deprecation gates with the reasons they fail.
pub fn rubric_lines(
    t: &Theme,
    sk: &SkillsState,
    name: &str,
    width: usize,
    compact: bool,
) -> Vec<Line<'static>> {
    let Some(rubric) = &sk.rubric else {
        return vec![Line::from(Span::styled(
            "scoring the watched runs' skill invocations…",
            t.dim,
        ))];
    };
    let Some(s) = rubric.skill(name) else {
        let mut lines = wrap(
            &Line::from(Span::styled(
                format!("{name}: no invocations in these runs' trials yet"),
                t.text,
            )),
            width,
        );
        lines.extend(wrap(
            &Line::from(Span::styled(
                "A trial invokes a skill when its trajectory reads the SKILL.md, opens a file or runs a script of it.",
                t.dim,
            )),
            width,
        ));
        return lines;
    };
    let tier = t.tier(s.tier);
    let mut lines = vec![Line::from(vec![
        Span::styled("score ", t.dim),
        Span::styled(
            format!("{:.1}", s.avg_score),
            tier.add_modifier(Modifier::BOLD),
        ),
        Span::styled("/100 ", t.dim),
        Span::styled(s.tier.label().to_string(), tier),
        Span::styled(
            fit(&format!(" · {}", s.tier_action), width.saturating_sub(20)),
            t.dim,
        ),
    ])];
    let weak = s.weak_component;
    if compact {
        let mut spans = Vec::new();
        for (i, c) in Component::ALL.into_iter().enumerate() {
            if i > 0 {
                spans.push(Span::styled(" · ", t.dim));
            }
            spans.push(Span::styled(
                format!("{} ", component_name(c, true)),
                if c == weak { t.warn } else { t.dim },
            ));
            spans.push(Span::styled(
                format!("{:.1}/{}", s.components.get(c), c.max()),
                t.text,
            ));
        }
        lines.push(Line::from(spans));
    } else {
        for c in Component::ALL {
            let v = s.components.get(c);
            let mut spans = vec![
                Span::styled(
                    format!("  {:<15}", component_name(c, false)),
                    if c == weak { t.warn } else { t.dim },
                ),
                Span::styled(format!("{v:>5.1}"), t.text),
                Span::styled(format!("/{:<3}", c.max()), t.dim),
            ];
            spans.extend(bar(t, v / c.max() as f64, 12));
            lines.push(Line::from(spans));
        }
    }
    let trend = match &s.trend {
        Trend::InsufficientData => (
            format!("insufficient data (< {MIN_TREND_INVOCATIONS} invocations)"),
            t.dim,
        ),
        Trend::Analyzed(a) => {
            let (word, style) = match a.trend {
                Direction::Improving => ("improving", t.gain),
                Direction::Declining => ("declining", t.loss),
                Direction::Stable => ("stable", t.text),
            };
            (
                format!(
                    "{word} {:+.1}% (last {RECENT_INVOCATIONS} {:.1} vs {:.1})",
                    a.change_percent, a.current_avg, a.previous_avg
                ),
                style,
            )
        }
    };
    // Long values wrap under their labels: the panel cuts nothing.
    lines.extend(hanging(
        vec![
            Span::styled("invocations ", t.dim),
            Span::styled(s.invocations.to_string(), t.accent),
            Span::styled(" · errors ", t.dim),
            Span::styled(
                format!("{:.0}%", s.error_rate * 100.0),
                if s.error_rate > 0.0 { t.warn } else { t.text },
            ),
            Span::styled(" · trend ", t.dim),
        ],
        Span::styled(trend.0, trend.1),
        width,
    ));
    lines.extend(hanging(
        vec![
            Span::styled("weak ", t.dim),
            Span::styled(weak.as_str().to_string(), t.warn),
            Span::styled(" — ", t.text),
        ],
        Span::styled(s.recommendation.to_string(), t.text),
        width,
    ));
    for g in &s.gates {
        let (glyph, style) = if g.passed {
            (t.glyphs.pass.clone(), t.pass)
        } else {
            (t.glyphs.fail.clone(), t.fail)
        };
        let mut why = if g.passed {
            "pass".to_string()
        } else {
            g.failures.join("; ")
        };
        if g.gate == Gate::Deprecation {
            // The rubric's check ignores the gate's score limit; say what the review would.
            let review = &s.deprecation_review;
            let score = review.reasons.first().cloned().unwrap_or_default();
            why.push_str(&if review.triggered {
                format!(" · review due ({score})")
            } else {
                format!(" · review not due ({score})")
            });
        }
        let head = format!("{:<17}", format!("{} gate", g.gate.as_str()));
        lines.extend(hanging(
            vec![
                Span::styled(head, t.dim),
                Span::styled(format!("{glyph} "), style),
            ],
            Span::styled(why, if g.passed { t.dim } else { t.text }),
            width,
        ));
    }
    lines
}
