//! A skill's verdicts over its invocations: its tier, weak component and recommendation, trend,
//! quality gates and deprecation review.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::invocation::{Component, Scores};

/// Quality tiers (rubric "Score Interpretation / Quality Tiers").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Tier {
    /// 90–100.
    Excellent,
    /// 75–89.
    Good,
    /// 60–74.
    Acceptable,
    /// 40–59.
    #[serde(rename = "Below Average")]
    BelowAverage,
    /// 20–39.
    Poor,
    /// 0–19.
    Failing,
}

impl Tier {
    /// Every tier, best first.
    pub const ALL: [Tier; 6] = [
        Tier::Excellent,
        Tier::Good,
        Tier::Acceptable,
        Tier::BelowAverage,
        Tier::Poor,
        Tier::Failing,
    ];

    /// The tier of a score. The table's ranges are integers; a score between two ranges (89.99)
    /// takes the lower tier — `>= 90` Excellent, `>= 75` Good, `>= 60` Acceptable, `>= 40` Below
    /// Average, `>= 20` Poor, else Failing (also below 0; above 100 is Excellent), the thresholds
    /// of the rubric's distribution SQL plus the table's Failing tier.
    pub fn from_score(score: f64) -> Tier {
        Tier::ALL
            .into_iter()
            .find(|t| score >= t.min_score() as f64)
            .unwrap_or(Tier::Failing)
    }

    /// Lowest score of the tier's range.
    pub fn min_score(self) -> i64 {
        match self {
            Tier::Excellent => 90,
            Tier::Good => 75,
            Tier::Acceptable => 60,
            Tier::BelowAverage => 40,
            Tier::Poor => 20,
            Tier::Failing => 0,
        }
    }

    /// Highest score of the tier's range, as the table writes it.
    pub fn max_score(self) -> i64 {
        match self {
            Tier::Excellent => 100,
            Tier::Good => 89,
            Tier::Acceptable => 74,
            Tier::BelowAverage => 59,
            Tier::Poor => 39,
            Tier::Failing => 19,
        }
    }

    /// The table's name (`Below Average`, …).
    pub fn label(self) -> &'static str {
        match self {
            Tier::Excellent => "Excellent",
            Tier::Good => "Good",
            Tier::Acceptable => "Acceptable",
            Tier::BelowAverage => "Below Average",
            Tier::Poor => "Poor",
            Tier::Failing => "Failing",
        }
    }

    /// The table's Description column.
    pub fn description(self) -> &'static str {
        match self {
            Tier::Excellent => "Exceptional performance",
            Tier::Good => "Meets expectations",
            Tier::Acceptable => "Room for improvement",
            Tier::BelowAverage => "Significant issues",
            Tier::Poor => "Major problems",
            Tier::Failing => "Critical failure",
        }
    }

    /// The table's Action column.
    pub fn action(self) -> &'static str {
        match self {
            Tier::Excellent => "Document as exemplar",
            Tier::Good => "Monitor for consistency",
            Tier::Acceptable => "Review for patterns",
            Tier::BelowAverage => "Prioritize improvements",
            Tier::Poor => "Immediate attention needed",
            Tier::Failing => "Investigate root cause",
        }
    }

    /// The tier of a label (`Below Average`, …).
    pub fn from_label(label: &str) -> Option<Tier> {
        Tier::ALL.into_iter().find(|t| t.label() == label)
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// Average points per component (the rubric's `component_avgs`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ComponentAverages {
    /// Completion, 0–25.
    pub completion: f64,
    /// Efficiency, 0–20.
    pub efficiency: f64,
    /// Output quality, 0–30.
    pub quality: f64,
    /// User satisfaction, 0–25.
    pub satisfaction: f64,
}

impl ComponentAverages {
    /// Means of each component over `scores` (all 0 when empty).
    pub fn of(scores: &[Scores]) -> ComponentAverages {
        let n = scores.len().max(1) as f64;
        let mean = |c: Component| scores.iter().map(|s| s.get(c) as f64).sum::<f64>() / n;
        ComponentAverages {
            completion: mean(Component::Completion),
            efficiency: mean(Component::Efficiency),
            quality: mean(Component::Quality),
            satisfaction: mean(Component::Satisfaction),
        }
    }

    /// One component's average.
    pub fn get(&self, c: Component) -> f64 {
        match c {
            Component::Completion => self.completion,
            Component::Efficiency => self.efficiency,
            Component::Quality => self.quality,
            Component::Satisfaction => self.satisfaction,
        }
    }
}

/// The weak component: the lowest `average / COMPONENT_MAX` (rubric "Trend Analysis",
/// `min(component_avgs, key=lambda k: component_avgs[k] / COMPONENT_MAX[k])`); ties go to the
/// first in the rubric's order (completion, efficiency, quality, satisfaction), as Python's `min`.
pub fn weak_component(avgs: &ComponentAverages) -> Component {
    let mut weak = Component::Completion;
    let mut low = f64::INFINITY;
    for c in Component::ALL {
        let v = avgs.get(c) / c.max() as f64;
        if v < low {
            low = v;
            weak = c;
        }
    }
    weak
}

/// Recommendation level of [`get_improvement_recommendation`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Score below 50.
    Low,
    /// Score 50 or more.
    Medium,
}

/// The rubric's `get_improvement_recommendation(component, score)` ("Trend Analysis"): level
/// `low` when `score < 50`, else `medium`, and the text for (component, level).
///
/// As written, `score` is the component's average in raw points (at most 30), so the level is
/// always `low`; the `medium` texts are reachable only by calling this with a score of 50 or more
/// (e.g. a percentage), which the rubric's code never does.
pub fn get_improvement_recommendation(component: Component, score: f64) -> &'static str {
    let level = if score < 50.0 {
        Level::Low
    } else {
        Level::Medium
    };
    recommendation_text(component, level)
}

/// The rubric's recommendation texts.
pub fn recommendation_text(component: Component, level: Level) -> &'static str {
    match (component, level) {
        (Component::Completion, Level::Low) => {
            "Add more error handling and recovery patterns to SKILL.md"
        }
        (Component::Completion, Level::Medium) => "Review common failure cases and add guidance",
        (Component::Efficiency, Level::Low) => {
            "Reduce context size, consider progressive disclosure"
        }
        (Component::Efficiency, Level::Medium) => {
            "Optimize tool call patterns, reduce unnecessary reads"
        }
        (Component::Quality, Level::Low) => "Add more examples and anti-patterns to skill",
        (Component::Quality, Level::Medium) => "Include validation steps in skill workflow",
        (Component::Satisfaction, Level::Low) => "Gather user feedback, analyze edit patterns",
        (Component::Satisfaction, Level::Medium) => "Add clarifying questions to skill workflow",
    }
}

/// Direction of a trend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Change above +10 %.
    Improving,
    /// Change below −10 %.
    Declining,
    /// Otherwise (±10 % included).
    Stable,
}

/// Invocations a trend needs (rubric: `if len(invocations) < 10: insufficient_data`).
pub const MIN_TREND_INVOCATIONS: usize = 10;
/// Invocations in the recent window (rubric: `scores[-7:]`, "last week").
pub const RECENT_INVOCATIONS: usize = 7;

/// The rubric's `analyze_skill_trends` result when there is enough data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrendAnalysis {
    /// Mean quality score of the last 7 invocations.
    pub current_avg: f64,
    /// Mean quality score of the invocations before them.
    pub previous_avg: f64,
    /// Improving, declining or stable.
    pub trend: Direction,
    /// (current − previous) / max(previous, 1) · 100, percent.
    pub change_percent: f64,
    /// Lowest average relative to its maximum.
    pub weak_component: Component,
    /// Average points per component over all invocations.
    pub component_scores: ComponentAverages,
    /// `get_improvement_recommendation(weak_component, its average)`.
    pub recommendation: String,
}

/// A skill's trend: `{"status": "insufficient_data"}` below 10 invocations, as the rubric
/// returns it, else the analysis (`"status": "analyzed"` plus its fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Trend {
    /// Fewer than 10 invocations.
    InsufficientData,
    /// The analysis.
    Analyzed(TrendAnalysis),
}

/// Trend of a skill (rubric "Trend Analysis", `analyze_skill_trends`), from its invocations'
/// scores in time order (oldest first; `total` is the quality score).
///
/// Fewer than 10 → insufficient data. Otherwise recent = mean of the last 7 totals, previous =
/// mean of the rest; change = (recent − previous) / max(previous, 1) · 100; improving above +10,
/// declining below −10, else stable. The weak component ([`weak_component`]) and the
/// recommendation ([`get_improvement_recommendation`] with the component's raw-point average —
/// always level `low`, see there) are over all the invocations given.
pub fn analyze_trend(scores: &[Scores]) -> Trend {
    if scores.len() < MIN_TREND_INVOCATIONS {
        return Trend::InsufficientData;
    }
    let mean = |s: &[Scores]| s.iter().map(|x| x.total as f64).sum::<f64>() / s.len() as f64;
    let split = scores.len() - RECENT_INVOCATIONS;
    let recent_avg = mean(&scores[split..]);
    let previous_avg = mean(&scores[..split]);
    let change_pct = (recent_avg - previous_avg) / f64::max(previous_avg, 1.0) * 100.0;
    let trend = if change_pct > 10.0 {
        Direction::Improving
    } else if change_pct < -10.0 {
        Direction::Declining
    } else {
        Direction::Stable
    };
    let avgs = ComponentAverages::of(scores);
    let weak = weak_component(&avgs);
    Trend::Analyzed(TrendAnalysis {
        current_avg: recent_avg,
        previous_avg,
        trend,
        change_percent: change_pct,
        weak_component: weak,
        component_scores: avgs,
        recommendation: get_improvement_recommendation(weak, avgs.get(weak)).to_string(),
    })
}

/// The rubric's quality gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Gate {
    /// Minimum requirements to publish a skill.
    Publish,
    /// Requirements to be featured in showcase.
    Feature,
    /// Triggers deprecation review.
    Deprecation,
}

impl Gate {
    /// Every gate, in the rubric's order.
    pub const ALL: [Gate; 3] = [Gate::Publish, Gate::Feature, Gate::Deprecation];

    /// The rubric's key.
    pub fn as_str(self) -> &'static str {
        match self {
            Gate::Publish => "publish",
            Gate::Feature => "feature",
            Gate::Deprecation => "deprecation",
        }
    }

    /// The gate's configuration in [`QUALITY_GATES`].
    pub fn config(self) -> &'static QualityGate {
        &QUALITY_GATES
            .iter()
            .find(|(g, _)| *g == self)
            .expect("every gate is configured")
            .1
    }
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One gate's configuration; `None` is a key the rubric's dict does not have.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct QualityGate {
    /// Minimum average score.
    pub min_score: Option<f64>,
    /// Maximum average score (deprecation only).
    pub max_score: Option<f64>,
    /// Minimum number of invocations.
    pub min_invocations: Option<u64>,
    /// Maximum error rate, fraction.
    pub max_error_rate: Option<f64>,
    /// Days without improvement (deprecation only).
    pub max_age_without_improvement: Option<f64>,
    /// The rubric's description.
    pub description: &'static str,
}

/// The rubric's `QUALITY_GATES` ("Automated Quality Gates").
pub const QUALITY_GATES: [(Gate, QualityGate); 3] = [
    (
        Gate::Publish,
        QualityGate {
            min_score: Some(70.0),
            max_score: None,
            min_invocations: Some(10),
            max_error_rate: Some(0.1),
            max_age_without_improvement: None,
            description: "Minimum requirements to publish a skill",
        },
    ),
    (
        Gate::Feature,
        QualityGate {
            min_score: Some(85.0),
            max_score: None,
            min_invocations: Some(50),
            max_error_rate: Some(0.05),
            max_age_without_improvement: None,
            description: "Requirements to be featured in showcase",
        },
    ),
    (
        Gate::Deprecation,
        QualityGate {
            min_score: None,
            max_score: Some(40.0),
            min_invocations: Some(20),
            max_error_rate: None,
            max_age_without_improvement: Some(90.0),
            description: "Triggers deprecation review",
        },
    ),
];

/// What the gates read of a skill (the rubric's `get_skill_stats`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct SkillStats {
    /// Mean quality score, 0–100.
    pub avg_score: f64,
    /// Number of invocations.
    pub invocation_count: u64,
    /// Fraction of invocations with errors, 0–1.
    pub error_rate: f64,
}

/// A gate verdict (the rubric's `check_quality_gate` result).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateResult {
    /// The gate.
    pub gate: Gate,
    /// No check failed.
    pub passed: bool,
    /// One line per failed check, formatted as the rubric's f-strings.
    pub failures: Vec<String>,
    /// The stats checked.
    pub stats: SkillStats,
}

/// Python's `f"{x:.2%}"`.
pub(super) fn py_percent(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

/// Checks a skill's stats against a gate exactly as the rubric's `check_quality_gate` does
/// ("Automated Quality Gates"): fails with `"Score {avg:.1f} < {min_score}"` when
/// `avg_score < min_score` (absent → 0), `"Invocations {n} < {min_invocations}"` when
/// `invocation_count < min_invocations` (absent → 0), and
/// `"Error rate {rate:.2%} > {max_error_rate:.2%}"` when `error_rate > max_error_rate`
/// (absent → 1.0), in that order.
///
/// Like the rubric's code this ignores the deprecation gate's `max_score` and
/// `max_age_without_improvement`, so `deprecation` "passes" every skill with at least 20
/// invocations and fails the others with the invocations message; see [`deprecation_review`] for
/// a review that applies them.
pub fn check_quality_gate(stats: &SkillStats, gate: Gate) -> GateResult {
    let cfg = gate.config();
    let mut failures = Vec::new();
    let min_score = cfg.min_score.unwrap_or(0.0);
    if stats.avg_score < min_score {
        failures.push(format!("Score {:.1} < {}", stats.avg_score, min_score));
    }
    let min_inv = cfg.min_invocations.unwrap_or(0);
    if stats.invocation_count < min_inv {
        failures.push(format!(
            "Invocations {} < {}",
            stats.invocation_count, min_inv
        ));
    }
    let max_err = cfg.max_error_rate.unwrap_or(1.0);
    if stats.error_rate > max_err {
        failures.push(format!(
            "Error rate {} > {}",
            py_percent(stats.error_rate),
            py_percent(max_err)
        ));
    }
    GateResult {
        gate,
        passed: failures.is_empty(),
        failures,
        stats: *stats,
    }
}

/// Result of [`deprecation_review`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeprecationReview {
    /// Every applicable criterion holds: the skill is due for a deprecation review.
    pub triggered: bool,
    /// `avg_score <= max_score` (40).
    pub low_score: bool,
    /// `invocation_count >= min_invocations` (20).
    pub enough_invocations: bool,
    /// `age >= max_age_without_improvement` (90 days); `None` when the age is unknown.
    pub stale: Option<bool>,
    /// One line per criterion, e.g. `"Score 35.0 <= 40"`, `"Invocations 12 < 20"`.
    pub reasons: Vec<String>,
}

/// Deprecation review — goes BEYOND the rubric's code, which never applies the deprecation
/// gate's `max_score` and `max_age_without_improvement` (see [`check_quality_gate`]).
///
/// Reading of the gate ("Triggers deprecation review"; `max_score` 40, `min_invocations` 20,
/// `max_age_without_improvement` 90): triggered when the average score is at most 40, the skill
/// has at least 20 invocations (enough evidence), and it has gone at least 90 days without
/// improvement. `age_days_without_improvement` is in days; `None` (unknown — skillscope keeps no
/// history of when a skill last improved) leaves the age criterion out: the review is then
/// decided by score and invocations, and `stale` is `None`.
pub fn deprecation_review(
    stats: &SkillStats,
    age_days_without_improvement: Option<f64>,
) -> DeprecationReview {
    let cfg = Gate::Deprecation.config();
    let max_score = cfg.max_score.unwrap_or(40.0);
    let min_inv = cfg.min_invocations.unwrap_or(0);
    let max_age = cfg.max_age_without_improvement.unwrap_or(90.0);
    let low_score = stats.avg_score <= max_score;
    let enough_invocations = stats.invocation_count >= min_inv;
    let stale = age_days_without_improvement.map(|a| a >= max_age);
    let mut reasons = vec![
        format!(
            "Score {:.1} {} {}",
            stats.avg_score,
            if low_score { "<=" } else { ">" },
            max_score
        ),
        format!(
            "Invocations {} {} {}",
            stats.invocation_count,
            if enough_invocations { ">=" } else { "<" },
            min_inv
        ),
    ];
    reasons.push(match (age_days_without_improvement, stale) {
        (Some(a), Some(s)) => format!(
            "No improvement for {a:.0} days {} {max_age}",
            if s { ">=" } else { "<" }
        ),
        _ => "Age without improvement unknown (not checked)".to_string(),
    });
    DeprecationReview {
        triggered: low_score && enough_invocations && stale.unwrap_or(true),
        low_score,
        enough_invocations,
        stale,
        reasons,
    }
}
