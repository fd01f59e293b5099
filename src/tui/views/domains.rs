//! Pass rates per domain (or difficulty) and condition: Method D rate as a bar and a percentage
//! (`—` for a group the condition ran no task of), Δ in percentage points and normalized gain g
//! of each condition against the first over the tasks both ran, and the overall row. Conditions are headed by their short labels (`A`, `B`, `A'` …), named in full in
//! the pane's last line. While the run is unfinished each condition also shows its pass rate over
//! judged trials beside Method D — Method D counts every trial without a verdict 0, so mid-run it
//! reads low; the judged rate says where it is heading, labelled so the two are not confused.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::skillsbench::condition::condition_label;
use crate::tui::app::App;
use crate::tui::model::Grouping;
use crate::tui::widgets::{bar, fit, framed, pct_text, pp_text};

/// True while some planned trial has no verdict yet.
fn unfinished(app: &App) -> bool {
    app.progress.done < app.progress.total
}

/// Rows the pane wants, borders included: a header, one per group and the overall row, and the
/// legend line.
pub fn height(app: &App) -> u16 {
    (app.rates.len() + 2 + 2) as u16
}

/// Column widths that fit `w`: names first (up to the longest, at most 22), then bars and g as
/// room allows; when even the bare numbers do not fit beside the whole name, the name is cut (to
/// no less than 16) before the numbers lose a column; in that narrowest layout whole hundreds drop
/// their decimal ([`pct`], [`pp`]) so that no two numbers touch (`100.0%100.0%`).
struct Widths {
    label: usize,
    bar: usize,
    judged: bool,
    g: bool,
    /// Width of a percentage column (`  33.3%`: 7, or 6 when tight).
    num: usize,
}

/// Columns taken by everything but the name for `n` conditions: `n` (4), per condition its bar
/// (`bar` + a space, when `bar` > 0), rate (`num`) and judged rate (`num` + 1), per later
/// condition its Δ (`num`) and g (7).
fn numbers_width(n: usize, judged: bool, bar: usize, g: bool, num: usize) -> usize {
    4 + n * (if bar > 0 { bar + 1 } else { 0 } + num + if judged { num + 1 } else { 0 })
        + n.saturating_sub(1) * (num + if g { 7 } else { 0 })
}

fn widths(w: usize, n: usize, judged: bool, label_want: usize) -> Widths {
    let need = |bar: usize, g: bool, num: usize| numbers_width(n, judged, bar, g, num);
    let want = label_want.clamp(8, 22);
    let cut = want.min(16);
    // (bar, g, num, the least label width the layout accepts)
    let configs = [
        (10, true, 7, want),
        (6, true, 7, want),
        (0, true, 7, want),
        (0, false, 7, want),
        (0, true, 7, cut),
        (0, false, 7, cut),
        (0, false, 6, cut),
    ];
    for (bar, g, num, least) in configs {
        let fixed = need(bar, g, num);
        if fixed + least <= w {
            return Widths {
                label: (w - fixed).clamp(least, 22),
                bar,
                judged,
                g,
                num,
            };
        }
    }
    Widths {
        label: w.saturating_sub(need(0, false, 6)).max(6),
        bar: 0,
        judged,
        g: false,
        num: 6,
    }
}

/// A rate (0–1) as a percentage right-aligned in `w` columns with one decimal (` 33.3%`), or,
/// when one decimal would fill the column, as a whole number (`  100%`), so a space always leads.
#[cfg(test)]
fn pct(rate: f64, w: usize) -> String {
    pct_in(rate, w, whole_pct(rate, w))
}

/// True when `rate` needs whole numbers to keep a leading space in `w` columns.
fn whole_pct(rate: f64, w: usize) -> bool {
    pct_text(rate).chars().count() >= w
}

/// A rate right-aligned in `w` columns: with one decimal, or `whole` (the format of its column).
fn pct_in(rate: f64, w: usize, whole: bool) -> String {
    if whole {
        format!("{:>w$}", format!("{:.0}%", rate * 100.0))
    } else {
        format!("{:>w$}", pct_text(rate))
    }
}

/// A difference in percentage points right-aligned in `w` columns with a sign and one decimal
/// (` +33.3`), or as a whole number (`  +100`) when the decimal would leave no leading space.
#[cfg(test)]
fn pp(d: f64, w: usize) -> String {
    pp_in(d, w, whole_pp(d, w))
}

/// True when `d` needs whole numbers to keep a leading space in `w` columns.
fn whole_pp(d: f64, w: usize) -> bool {
    pp_text(d).chars().count() >= w
}

/// A difference right-aligned in `w` columns: with one decimal, or `whole`.
fn pp_in(d: f64, w: usize, whole: bool) -> String {
    if whole {
        format!("{:>w$}", format!("{d:+.0}"))
    } else {
        format!("{:>w$}", pp_text(d))
    }
}

/// Δ (pp) and g of condition `i` against the first over the group's tasks both planned, `None`
/// while one of the two has no judged trial (a Method D rate of nothing judged is 0 by
/// definition, not a result to compare) or they share no task; no `-0.0` from rounding noise.
fn delta(row: &crate::tui::model::RateRow, i: usize) -> Option<(f64, Option<f64>)> {
    let judged = |k: usize| row.judged.get(k).copied().flatten().is_some();
    if i == 0 || !(judged(0) && judged(i)) {
        return None;
    }
    let p = (*row.deltas.get(i - 1)?)?;
    let d = if p.delta_pp.abs() < 0.05 {
        0.0
    } else {
        p.delta_pp
    };
    Some((d, p.g))
}

/// Draws the pane into `area`.
pub fn draw(f: &mut Frame, area: Rect, app: &App, focused: bool) {
    let Some(s) = &app.snapshot else { return };
    let t = &app.theme;
    let by = match app.domains.grouping {
        Grouping::Domain => "domain",
        Grouping::Difficulty => "difficulty",
    };
    let title = format!("pass rate (Method D) by {by}");
    let block = framed(t, &title, focused);
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.height < 2 || inner.width < 20 {
        return;
    }
    let conds = &s.run.conditions;
    let label_of = |i: usize| {
        s.labels
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("{}", i + 1))
    };
    let n = conds.len().max(1);
    let judged = unfinished(app);
    let longest = app
        .rates
        .iter()
        .map(|r| r.label.chars().count())
        .chain([by.len()])
        .max()
        .unwrap_or(8);
    let wd = widths(inner.width as usize, n, judged, longest + 1);
    let label_w = wd.label;
    let mut lines = Vec::new();
    let mut head = vec![
        Span::styled(format!("{:<label_w$}", fit(by, label_w)), t.dim),
        Span::styled(format!("{:>3} ", "n"), t.dim),
    ];
    let num = wd.num;
    for i in 0..conds.len() {
        let w = if wd.bar > 0 { wd.bar + 1 } else { 0 } + num;
        head.push(Span::styled(
            format!("{:>w$}", fit(&label_of(i), w - 1)),
            t.header,
        ));
        if wd.judged {
            head.push(Span::styled(
                format!("{:>w$}", "judged", w = num + 1),
                t.dim,
            ));
        }
    }
    for i in 1..conds.len() {
        head.push(Span::styled(
            format!("{:>num$}", fit(&format!("Δ {}", label_of(i)), num - 1)),
            t.header,
        ));
        if wd.g {
            head.push(Span::styled(
                format!("{:>7}", fit(&format!("g {}", label_of(i)), 6)),
                t.header,
            ));
        }
    }
    lines.push(Line::from(head));
    let body_h = (inner.height as usize).saturating_sub(2);
    // One number format per column: whole numbers for every row of a column when one of its
    // values needs them.
    let whole_rate: Vec<bool> = (0..conds.len())
        .map(|i| {
            app.rates.iter().any(|r| {
                r.rates
                    .get(i)
                    .copied()
                    .flatten()
                    .is_some_and(|v| whole_pct(v, num))
            })
        })
        .collect();
    let whole_judged: Vec<bool> = (0..conds.len())
        .map(|i| {
            app.rates.iter().any(|r| {
                r.judged
                    .get(i)
                    .copied()
                    .flatten()
                    .is_some_and(|v| whole_pct(v, num + 1))
            })
        })
        .collect();
    let whole_delta: Vec<bool> = (0..conds.len())
        .map(|i| {
            app.rates
                .iter()
                .any(|r| delta(r, i).is_some_and(|(d, _)| whole_pp(d, num)))
        })
        .collect();
    for row in app
        .rates
        .iter()
        .skip(app.domains.scroll.min(app.rates.len().saturating_sub(1)))
        .take(body_h)
    {
        let style = if row.total { t.accent } else { t.text };
        let mut spans = vec![
            Span::styled(format!("{:<label_w$}", fit(&row.label, label_w)), style),
            Span::styled(format!("{:>3} ", row.n_tasks), t.dim),
        ];
        for (i, r) in row.rates.iter().enumerate() {
            if wd.bar > 0 {
                spans.push(Span::raw(" "));
                match r {
                    Some(r) => spans.extend(bar(t, *r, wd.bar)),
                    None => spans.push(Span::raw(" ".repeat(wd.bar))),
                }
            }
            spans.push(match r {
                Some(r) => Span::styled(pct_in(*r, num, whole_rate[i]), style),
                // The condition ran no task of the group: not run, never 0.
                None => Span::styled(format!("{:>num$}", "—"), t.dim),
            });
            if wd.judged {
                spans.push(Span::styled(
                    match row.judged.get(i).copied().flatten() {
                        Some(j) => pct_in(j, num + 1, whole_judged[i]),
                        None => format!("{:>w$}", "—", w = num + 1),
                    },
                    t.dim,
                ));
            }
        }
        for (i, whole) in whole_delta.iter().enumerate().take(row.rates.len()).skip(1) {
            let Some((d, g)) = delta(row, i) else {
                // Nothing judged yet on one side, or no task both ran: no difference to show.
                spans.push(Span::styled(format!("{:>num$}", "—"), t.dim));
                if wd.g {
                    spans.push(Span::styled(format!("{:>7}", "—"), t.dim));
                }
                continue;
            };
            let d_style = if d > 0.0 {
                t.pass
            } else if d < 0.0 {
                t.fail
            } else {
                t.dim
            };
            spans.push(Span::styled(pp_in(d, num, *whole), d_style));
            if wd.g {
                let g = g
                    .map(|g| if g.abs() < 0.005 { 0.0 } else { g })
                    .map(|g| format!("{g:+.2}"))
                    .unwrap_or_else(|| "—".into());
                spans.push(Span::styled(format!("{g:>7}"), t.dim));
            }
        }
        lines.push(Line::from(spans));
    }
    // The legend: each label's condition in full, and what the judged column is.
    let names: Vec<String> = conds
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{} {}", label_of(i), condition_label(c)))
        .collect();
    let legend = if judged {
        format!(
            "{} · Method D counts unfinished trials 0; judged = over judged trials only",
            names.join(" · ")
        )
    } else {
        names.join(" · ")
    };
    let legend_area = Rect {
        y: inner.y + inner.height - 1,
        height: 1,
        ..inner
    };
    f.render_widget(Paragraph::new(lines), inner);
    f.render_widget(
        Paragraph::new(Line::from(Span::styled(
            fit(&legend, inner.width as usize),
            t.dim,
        ))),
        legend_area,
    );
}

#[cfg(test)]
mod tests {
    use super::{numbers_width, pct, pp, widths};

    #[test]
    fn numbers_always_keep_a_leading_space() {
        assert_eq!(pct(1.0 / 3.0, 7), "  33.3%");
        assert_eq!(pct(1.0 / 3.0, 6), " 33.3%");
        assert_eq!(pct(1.0, 7), " 100.0%");
        assert_eq!(pct(1.0, 6), "  100%");
        assert_eq!(pct(0.9999, 6), "  100%");
        assert_eq!(pp(33.33, 6), " +33.3");
        assert_eq!(pp(100.0, 7), " +100.0");
        assert_eq!(pp(100.0, 6), "  +100");
        assert_eq!(pp(-100.0, 6), "  -100");
        assert_eq!(pp(0.0, 6), "  +0.0");
    }

    #[test]
    fn names_are_cut_before_the_numbers_lose_their_gap() {
        // The finished example run's pane at 120 columns: 43 columns inside, two conditions,
        // "Office & White Collar" wants 22.
        let w = widths(43, 2, false, 22);
        assert_eq!((w.num, w.bar, w.g), (7, 0, false));
        assert_eq!(w.label, 43 - numbers_width(2, false, 0, false, 7));
        for width in 20..=120 {
            for n in 1..=4 {
                for judged in [false, true] {
                    let w = widths(width, n, judged, 22);
                    if numbers_width(n, judged, 0, false, 7) + 16 <= width {
                        assert_eq!(w.num, 7, "width {width}, {n} conditions, judged {judged}");
                        assert!(w.label >= 16);
                    }
                    // Whenever the tightest layout fits, the chosen one fits too.
                    let tightest = numbers_width(n, judged, 0, false, 6) + 6;
                    let used = numbers_width(n, judged, w.bar, w.g, w.num) + w.label;
                    if tightest <= width {
                        assert!(used <= width, "width {width}, {n} conditions: {used}");
                    }
                }
            }
        }
    }
}
