//! A table cell that knows its kind: a rate, percentage points, a gain, a count, a CI with its
//! resamples and seed, a standard error, a task's mean reward, text, a link to a trial folder —
//! or undefined, with the reason. Human renderers format it through [`crate::format`]; machine
//! renderers (CSV) take [`Value::machine`], full precision.

use serde::Serialize;

use crate::analysis::ci::Ci;
use crate::format;

/// The unit of a CI or a standard error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// A fraction shown in percent (bounds `0.139` shown `13.9`).
    Percent,
    /// Percentage points (bounds shown as they are, signed).
    Pp,
}

/// The width of an A/A noise's Monte Carlo band, pp, from which the human renderers show it
/// beside the spread (a narrower one cannot move the spread's one decimal much).
pub const SPREAD_BAND_SHOWN: f64 = 1.0;

/// What a cell holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Value {
    /// Text (a name, a label, a sentence), as it came; renderers escape it.
    Text(String),
    /// A whole number.
    Count(u64),
    /// A fraction in \[0, 1\], shown as a percentage.
    Rate(f64),
    /// A difference in percentage points.
    Pp(f64),
    /// A normalized gain g.
    Gain(f64),
    /// A confidence interval in `unit`, with how it was drawn.
    Ci {
        /// The interval.
        ci: Ci,
        /// Its unit.
        unit: Unit,
    },
    /// An interval in `unit` not drawn by a bootstrap (a sequential design's stage-wise
    /// interval): shown as a CI, written as its two bounds.
    Interval {
        /// Lower bound.
        low: f64,
        /// Upper bound.
        high: f64,
        /// Its unit.
        unit: Unit,
    },
    /// A standard error in `unit` (a rate's is a fraction, shown in percent).
    Se {
        /// The standard error (a fraction for [`Unit::Percent`]).
        value: f64,
        /// Its unit.
        unit: Unit,
    },
    /// A symmetric spread in percentage points (an A/A noise), shown `±3.1`, with how it was
    /// drawn (written to CSV beside it, as a CI's resamples and seed are).
    Spread {
        /// The half-width, percentage points.
        value: f64,
        /// Random splits drawn.
        splits: usize,
        /// Their seed.
        seed: u64,
        /// Its Monte Carlo band, pp: shown beside it when 1 pp wide or more, written always.
        band: Option<(f64, f64)>,
    },
    /// A number shown with `places` decimals (a rubric score `75.3`, skills per trial `1.5`).
    Decimal {
        /// The number.
        value: f64,
        /// Decimals shown.
        places: u8,
    },
    /// A plain number for machines (a threshold), shown as Rust prints it.
    Number(f64),
    /// A number already in percent (the paper's `31.3`), shown `31.3%`.
    Percent(f64),
    /// Names (skills, tasks): shown joined by `, `, written joined by `; `.
    List(Vec<String>),
    /// `n of total (p%)`: a share of trials.
    Share {
        /// The part.
        n: u64,
        /// The whole (0: undefined).
        total: u64,
    },
    /// A task's mean reward in \[0, 1\], two decimals.
    Reward(f64),
    /// `n` of `total` (`25/36`: trials done of planned).
    Of {
        /// The part.
        n: u64,
        /// The whole.
        total: u64,
    },
    /// The tasks a comparison is paired over: `all 19` or `1 of 19`.
    TasksCompared {
        /// Matched tasks.
        n: usize,
        /// Tasks of the set.
        total: usize,
    },
    /// No number here, and why (`None`: nothing to say).
    Undefined(Option<String>),
    /// A value with a short remark after it: `45.7% (3 ran)`.
    Noted {
        /// The value.
        value: Box<Value>,
        /// The remark (without parentheses).
        note: String,
    },
    /// A link to a file or folder relative to the report: `text` pointing at `href`.
    Link {
        /// What is shown.
        text: String,
        /// The relative path (`../../jobs/…/task__a1b2`).
        href: String,
    },
    /// Links (a task's trial folders): each `(text, href)`.
    Links(Vec<(String, String)>),
    /// A hypothesis's verdict with its one-sentence answer.
    Verdict {
        /// `supported`, `contradicted`, …
        label: String,
        /// The answer, with its numbers.
        answer: String,
    },
}

/// How a cell should stand out: renderers map it to a theme style (dashboard) or a CSS class
/// (HTML); Markdown, CSV and plain terminals ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tone {
    /// Ordinary text.
    #[default]
    Plain,
    /// Less important (zeros, undefined, labels of labels).
    Dim,
    /// The number the row is about (a pass rate).
    Accent,
    /// An improvement (a positive Δ whose CI excludes zero, say).
    Gain,
    /// A degradation.
    Loss,
    /// Needs the reader's attention (infrastructure failures).
    Warn,
    /// Still changing (trials left to finish).
    Running,
}

/// A cell: its value and how it should stand out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// The value.
    pub value: Value,
    /// Its tone.
    pub tone: Tone,
}

impl Cell {
    /// A cell of `value` in the plain tone.
    pub fn new(value: Value) -> Cell {
        Cell {
            value,
            tone: Tone::Plain,
        }
    }

    /// The same cell in `tone`.
    pub fn tone(mut self, tone: Tone) -> Cell {
        self.tone = tone;
        self
    }

    /// Text.
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::new(Value::Text(s.into()))
    }

    /// A count.
    pub fn count(n: usize) -> Cell {
        Cell::new(Value::Count(n as u64))
    }

    /// A rate, or undefined with `why`.
    pub fn rate(v: Option<f64>, why: Option<&str>) -> Cell {
        Cell::new(v.map_or_else(|| Value::Undefined(why.map(String::from)), Value::Rate))
    }

    /// A Δ in percentage points (toned by its sign), or undefined with `why`.
    pub fn delta(v: Option<f64>, why: Option<&str>) -> Cell {
        match v {
            Some(d) => Cell::new(Value::Pp(d)).tone(sign_tone(d)),
            None => Cell::new(Value::Undefined(why.map(String::from))).tone(Tone::Dim),
        }
    }

    /// A normalized gain, or undefined with `why`.
    pub fn gain(v: Option<f64>, why: Option<&str>) -> Cell {
        match v {
            Some(g) => Cell::new(Value::Gain(g)),
            None => Cell::new(Value::Undefined(why.map(String::from))).tone(Tone::Dim),
        }
    }

    /// A CI in `unit`, or undefined with `why`.
    pub fn ci(ci: Option<Ci>, unit: Unit, why: Option<&str>) -> Cell {
        match ci {
            Some(ci) => Cell::new(Value::Ci { ci, unit }),
            None => Cell::new(Value::Undefined(why.map(String::from))).tone(Tone::Dim),
        }
    }

    /// A standard error in `unit`, `—` without one.
    pub fn se(v: Option<f64>, unit: Unit) -> Cell {
        match v {
            Some(value) => Cell::new(Value::Se { value, unit }),
            None => Cell::new(Value::Undefined(None)).tone(Tone::Dim),
        }
    }

    /// An A/A noise in percentage points (`±3.1`; CSV: spread, splits, seed), or undefined with
    /// its reason.
    pub fn spread(n: &crate::analysis::noise::AaNoise) -> Cell {
        match n.spread_pp {
            Some(value) => Cell::new(Value::Spread {
                value,
                splits: n.method.splits,
                seed: n.method.seed,
                band: n.band_pp,
            })
            .tone(Tone::Dim),
            None => Cell::new(Value::Undefined(n.undefined.clone())).tone(Tone::Dim),
        }
    }

    /// Undefined, with `why`.
    pub fn undefined(why: Option<&str>) -> Cell {
        Cell::new(Value::Undefined(why.map(String::from))).tone(Tone::Dim)
    }

    /// The same value with a remark after it (`45.7% (3 ran)`).
    pub fn noted(mut self, note: impl Into<String>) -> Cell {
        self.value = Value::Noted {
            value: Box::new(self.value),
            note: note.into(),
        };
        self
    }
}

/// The tone of a difference: gain above zero, loss below, dim at zero (as it is shown).
pub fn sign_tone(d: f64) -> Tone {
    if (d * 10.0).round() == 0.0 {
        Tone::Dim
    } else if d > 0.0 {
        Tone::Gain
    } else {
        Tone::Loss
    }
}

impl Value {
    /// The value as people read it ([`crate::format`]): `41.7%`, `+4.5`, `[13.9, 41.7]`, `—`.
    /// `with_reasons`: undefined values carry their reason (`— (not run)`); without, they are a
    /// bare `—` and the renderer lists the reasons under the table.
    pub fn human(&self, with_reasons: bool) -> String {
        match self {
            Value::Text(s) => s.clone(),
            Value::Count(n) => n.to_string(),
            Value::Rate(v) => format::rate(*v),
            Value::Pp(v) => format::pp(*v),
            Value::Gain(g) => format::gain(*g),
            Value::Ci { ci, unit } => match unit {
                Unit::Percent => format::ci_rate(ci.low, ci.high),
                Unit::Pp => format::ci_pp(ci.low, ci.high),
            },
            Value::Interval { low, high, unit } => match unit {
                Unit::Percent => format::ci_rate(*low, *high),
                Unit::Pp => format::ci_pp(*low, *high),
            },
            Value::Se { value, unit } => format::se(match unit {
                Unit::Percent => value * 100.0,
                Unit::Pp => *value,
            }),
            Value::Spread { value, band, .. } => match band {
                Some((lo, hi)) if hi - lo >= SPREAD_BAND_SHOWN => format!(
                    "±{} ({}–{})",
                    format::se(*value),
                    format::se(*lo),
                    format::se(*hi)
                ),
                _ => format!("±{}", format::se(*value)),
            },
            Value::Decimal { value, places } => format!("{value:.*}", *places as usize),
            Value::Number(v) => v.to_string(),
            Value::Percent(v) => format!("{v:.1}%"),
            Value::List(items) => items.join(", "),
            Value::Share { n, total } => format::share(*n, *total),
            Value::Reward(r) => format::reward(*r),
            Value::Of { n, total } => format::of(*n, *total),
            Value::TasksCompared { n, total } => format::tasks_compared(*n, *total),
            Value::Undefined(why) => {
                format::undefined(if with_reasons { why.as_deref() } else { None })
            }
            Value::Noted { value, note } => format!("{} ({note})", value.human(with_reasons)),
            Value::Link { text, .. } => text.clone(),
            Value::Links(links) => links
                .iter()
                .map(|(t, _)| t.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            Value::Verdict { label, answer } => format!("{label}: {answer}"),
        }
    }

    /// The number a sortable renderer orders by (a CI by its lower bound), `None` for text and
    /// undefined values.
    pub fn sort_key(&self) -> Option<f64> {
        match self {
            Value::Count(n) => Some(*n as f64),
            Value::Rate(v)
            | Value::Pp(v)
            | Value::Gain(v)
            | Value::Se { value: v, .. }
            | Value::Spread { value: v, .. }
            | Value::Decimal { value: v, .. }
            | Value::Number(v)
            | Value::Percent(v)
            | Value::Reward(v) => Some(*v),
            Value::Share { n, .. } => Some(*n as f64),
            Value::Ci { ci, .. } => Some(ci.low),
            Value::Interval { low, .. } => Some(*low),
            Value::Of { n, .. } => Some(*n as f64),
            Value::TasksCompared { n, .. } => Some(*n as f64),
            Value::Noted { value, .. } => value.sort_key(),
            Value::Text(_)
            | Value::Undefined(_)
            | Value::List(_)
            | Value::Links(_)
            | Value::Link { .. }
            | Value::Verdict { .. } => None,
        }
    }

    /// The reason of an undefined value (through a remark), if it has one.
    pub fn undefined_reason(&self) -> Option<&str> {
        match self {
            Value::Undefined(why) => why.as_deref(),
            Value::Noted { value, .. } => value.undefined_reason(),
            _ => None,
        }
    }

    /// The value for a machine (CSV): full precision, `slots` fields — one for most values; a CI
    /// gives low, high, resamples and seed, a spread its value, splits and seed (as many as
    /// there are slots); an `Of` and a
    /// `TasksCompared` give the part and the whole. Undefined values are empty fields (their
    /// reason goes to the column's reason field, [`super::Column::reason`]).
    pub fn machine(&self, slots: usize) -> Vec<String> {
        let mut out = match self {
            Value::Text(s) => vec![crate::sanitize::one_line(s)],
            Value::Count(n) => vec![n.to_string()],
            Value::Rate(v)
            | Value::Pp(v)
            | Value::Gain(v)
            | Value::Se { value: v, .. }
            | Value::Decimal { value: v, .. }
            | Value::Number(v)
            | Value::Percent(v)
            | Value::Reward(v) => vec![v.to_string()],
            Value::Spread {
                value,
                splits,
                seed,
                band,
            } => {
                let mut v = vec![value.to_string(), splits.to_string(), seed.to_string()];
                if let Some((lo, hi)) = band {
                    v.extend([lo.to_string(), hi.to_string()]);
                }
                v
            }
            Value::List(items) => vec![crate::sanitize::one_line(&items.join("; "))],
            Value::Share { n, total } => vec![n.to_string(), total.to_string()],
            Value::Ci { ci, .. } => vec![
                ci.low.to_string(),
                ci.high.to_string(),
                ci.resamples.to_string(),
                ci.seed.to_string(),
            ],
            Value::Interval { low, high, .. } => vec![low.to_string(), high.to_string()],
            Value::Of { n, total } => vec![n.to_string(), total.to_string()],
            Value::TasksCompared { n, total } => vec![n.to_string(), total.to_string()],
            Value::Undefined(_) => Vec::new(),
            Value::Noted { value, .. } => return value.machine(slots),
            Value::Link { href, .. } => vec![href.clone()],
            Value::Links(links) => vec![
                links
                    .iter()
                    .map(|(_, h)| h.as_str())
                    .collect::<Vec<_>>()
                    .join("; "),
            ],
            Value::Verdict { label, answer } => vec![label.clone(), answer.clone()],
        };
        out.resize(slots, String::new());
        out
    }
}
