//! The skill scoring rubric (`skill-scoring-rubric.md`, the user's "Skill Scoring Rubric"), as
//! pure functions: a skill invocation gets 0–100 points from four components — completion (25),
//! efficiency (20), output quality (30) and user satisfaction (25) — and a skill's invocations give
//! it a tier, a trend, a weak component with a recommendation, and quality-gate verdicts.
//!
//! Every formula follows the rubric's Python code literally, including its integer truncations
//! (`int(...)`, i.e. [`f64::trunc`]), its defaults (`.get(key, default)`) and the order of its
//! branches. Where the code cannot run as written, or where this module offers more than the code,
//! the item's docstring says so:
//! - **Efficiency baselines** ([`score_efficiency`]): the code reads `tokens_per_loc` and
//!   `calls_per_file`, which only `code_generation` has — for the three other categories it raises
//!   `KeyError`. Here every category uses its own token baseline (its first entry) and call
//!   baseline (its second entry).
//! - **`COMPONENT_MAX`** is used by the rubric's trend analysis but never defined; it is the
//!   maximum of each component as the rubric's "Component Breakdown" headers give them.
//! - **Tiers** are given as integer ranges (90–100, 75–89, …); a fractional average between two
//!   ranges (89.99) belongs to the lower tier, as the rubric's dashboard SQL (`>= 90`, `>= 75`, …)
//!   decides it.
//! - **Recommendations**: `get_improvement_recommendation` picks level `low` when the weak
//!   component's average is below 50 — an average in raw points, at most 30, so the level is
//!   always `low` and the `medium` texts are never chosen. Kept exactly as written.
//! - **Deprecation gate**: `check_quality_gate` checks only `min_score`, `min_invocations` and
//!   `max_error_rate`, so the deprecation gate's `max_score` and `max_age_without_improvement` are
//!   never applied by it (and it "fails" a skill with fewer than 20 invocations). That is kept;
//!   [`deprecation_review`] is a separate function that applies them.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Whether an invocation produced code (the rubric's `output_type == 'code'`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OutputType {
    /// Code: output quality scores linter, types and tests (8 points).
    Code,
    /// Anything else (also an absent `output_type`): full 8 code-quality points.
    #[default]
    Other,
}

/// Code-quality signals of an invocation (the rubric's `code_quality` dict). `None` is an absent
/// key, which takes the rubric's default: `linter_passed` and `types_valid` default to true,
/// `tests_passed` to false ("if tests were run").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CodeQuality {
    /// The linter passed (absent → true).
    pub linter_passed: Option<bool>,
    /// Types check (absent → true).
    pub types_valid: Option<bool>,
    /// Tests pass (absent → false).
    pub tests_passed: Option<bool>,
}

/// A follow-up request after an invocation (rubric §4, `follow_ups`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct FollowUp {
    /// The follow-up was resolved (absent → false).
    pub resolved: bool,
}

/// One skill invocation, with the fields the rubric's code reads. [`Default`] gives the rubric's
/// defaults (`.get(key, default)`): `output_size`, `files_changed`, `requested_items` and
/// `delivered_items` 1, `user_edit_ratio` absent, everything else false/0/absent.
///
/// `tokens_used` and `duration_ms` have no default in the rubric (`invocation['tokens_used']`
/// raises `KeyError`); here they default to 0, which the rubric's `max(actual, 1)` turns into full
/// token and time points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Invocation {
    /// Errors hit (the rubric's `errors` list; only its emptiness is read).
    pub errors: u32,
    /// Recovered from the errors.
    pub recovered: bool,
    /// Some of the task was accomplished.
    pub partial_completion: bool,
    /// The goal was reached by an alternative path.
    pub workaround_used: bool,
    /// Could not complete but explained why.
    pub failure_explained: bool,
    /// Model tokens used.
    pub tokens_used: u64,
    /// Output size in the category's unit (lines of code, insights, components, findings);
    /// default 1.
    pub output_size: u64,
    /// Tool calls made (the rubric's `len(tool_calls)`).
    pub tool_calls: u64,
    /// Files changed; default 1.
    pub files_changed: u64,
    /// Duration, milliseconds.
    pub duration_ms: u64,
    /// The output was validated (accuracy 12 points).
    pub output_validated: bool,
    /// Items requested; default 1.
    pub requested_items: u64,
    /// Items delivered; default 1.
    pub delivered_items: u64,
    /// Code or other output.
    pub output_type: OutputType,
    /// Code-quality signals (read only for code output).
    pub code_quality: CodeQuality,
    /// The user accepted the output.
    pub user_accepted: bool,
    /// Fraction of the output the user edited, 0–1; `None` when unknown. The rubric reads it
    /// with two different defaults: 0 in the "accepted as-is" test, 0.5 for the edit-ratio points.
    pub user_edit_ratio: Option<f64>,
    /// The user used the output (possibly modified).
    pub user_used_output: bool,
    /// Follow-up requests; `None` (no list) scores like an empty list.
    pub follow_ups: Option<Vec<FollowUp>>,
}

impl Default for Invocation {
    fn default() -> Self {
        Invocation {
            errors: 0,
            recovered: false,
            partial_completion: false,
            workaround_used: false,
            failure_explained: false,
            tokens_used: 0,
            output_size: 1,
            tool_calls: 0,
            files_changed: 1,
            duration_ms: 0,
            output_validated: false,
            requested_items: 1,
            delivered_items: 1,
            output_type: OutputType::Other,
            code_quality: CodeQuality::default(),
            user_accepted: false,
            user_edit_ratio: None,
            user_used_output: false,
            follow_ups: None,
        }
    }
}

/// Direct user feedback on accuracy (rubric §3, `feedback`). `None` is an absent key. A feedback
/// whose keys are all absent is an empty dict, which Python treats as false: it scores like no
/// feedback at all (heuristic accuracy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Feedback {
    /// Accurate (`== True` gives 12 points).
    pub accurate: Option<bool>,
    /// Mostly accurate (9 points).
    pub mostly_accurate: Option<bool>,
    /// Partially accurate (6 points).
    pub partially_accurate: Option<bool>,
}

impl Feedback {
    /// True when no key is present (Python's falsy empty dict).
    pub fn is_empty(&self) -> bool {
        self.accurate.is_none()
            && self.mostly_accurate.is_none()
            && self.partially_accurate.is_none()
    }
}

/// Skill categories of the rubric's `EFFICIENCY_BASELINES` (rubric §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillCategory {
    /// `code_generation`.
    CodeGeneration,
    /// `analysis` (also the rubric's fallback for unknown categories).
    Analysis,
    /// `design`.
    Design,
    /// `research`.
    Research,
}

impl SkillCategory {
    /// Every category, in the rubric's order.
    pub const ALL: [SkillCategory; 4] = [
        SkillCategory::CodeGeneration,
        SkillCategory::Analysis,
        SkillCategory::Design,
        SkillCategory::Research,
    ];

    /// The rubric's key (`code_generation`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            SkillCategory::CodeGeneration => "code_generation",
            SkillCategory::Analysis => "analysis",
            SkillCategory::Design => "design",
            SkillCategory::Research => "research",
        }
    }

    /// The category of a rubric key; an unknown key gives `analysis`, as
    /// `EFFICIENCY_BASELINES.get(skill_category, EFFICIENCY_BASELINES['analysis'])` does.
    pub fn from_key(key: &str) -> SkillCategory {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == key)
            .unwrap_or(SkillCategory::Analysis)
    }

    /// This category's efficiency baselines.
    pub fn baselines(self) -> &'static Baselines {
        &EFFICIENCY_BASELINES
            .iter()
            .find(|(c, _)| *c == self)
            .expect("every category has baselines")
            .1
    }
}

impl fmt::Display for SkillCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One category's efficiency baselines (rubric §2, `EFFICIENCY_BASELINES`), with the rubric's
/// key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Baselines {
    /// The rubric's key of the token baseline (`tokens_per_loc`, `tokens_per_insight`, …).
    pub tokens_key: &'static str,
    /// Tokens per unit of output.
    pub tokens: u64,
    /// The rubric's key of the call baseline (`calls_per_file`, `calls_per_analysis`, …).
    pub calls_key: &'static str,
    /// Tool calls per unit of work.
    pub calls: u64,
    /// `time_per_task`, milliseconds.
    pub time_per_task_ms: u64,
}

/// The rubric's `EFFICIENCY_BASELINES` (rubric §2), in its order.
pub const EFFICIENCY_BASELINES: [(SkillCategory, Baselines); 4] = [
    (
        SkillCategory::CodeGeneration,
        Baselines {
            tokens_key: "tokens_per_loc",
            tokens: 50,
            calls_key: "calls_per_file",
            calls: 3,
            time_per_task_ms: 30_000,
        },
    ),
    (
        SkillCategory::Analysis,
        Baselines {
            tokens_key: "tokens_per_insight",
            tokens: 200,
            calls_key: "calls_per_analysis",
            calls: 5,
            time_per_task_ms: 20_000,
        },
    ),
    (
        SkillCategory::Design,
        Baselines {
            tokens_key: "tokens_per_component",
            tokens: 150,
            calls_key: "calls_per_design",
            calls: 4,
            time_per_task_ms: 45_000,
        },
    ),
    (
        SkillCategory::Research,
        Baselines {
            tokens_key: "tokens_per_finding",
            tokens: 100,
            calls_key: "calls_per_search",
            calls: 8,
            time_per_task_ms: 60_000,
        },
    ),
];

/// Python's `int(x)` of a float: truncation toward zero (saturating at the `i64` range; NaN → 0).
fn py_int(x: f64) -> i64 {
    x.trunc() as i64
}

/// Completion, 0–25 points (rubric §1, "Completion Score", `score_completion`): no errors 25;
/// else recovered 20; else partial completion 15; else workaround 10; else failure explained 5;
/// else 0 (hard failure).
pub fn score_completion(inv: &Invocation) -> i64 {
    if inv.errors == 0 {
        return 25;
    }
    if inv.recovered {
        return 20;
    }
    if inv.partial_completion {
        return 15;
    }
    if inv.workaround_used {
        return 10;
    }
    if inv.failure_explained {
        return 5;
    }
    0
}

/// Efficiency, 0–20 points (rubric §2, "Efficiency Score", `score_efficiency`):
///
/// ```text
/// int(8·min(1, tokens_baseline·output_size / max(tokens_used, 1))
///     + 6·min(1, calls_baseline·files_changed / max(tool_calls, 1))
///     + 6·min(1, time_per_task / max(duration_ms, 1)))
/// ```
///
/// — one truncation of the sum, computed in the same floating-point order as the Python.
///
/// Deviation: the rubric's code reads `baselines['tokens_per_loc']` and
/// `baselines['calls_per_file']`, keys only `code_generation` has, so for `analysis`, `design`
/// and `research` it raises `KeyError`. Here each category uses its own token baseline (its first
/// entry: `tokens_per_insight` 200, `tokens_per_component` 150, `tokens_per_finding` 100) and call
/// baseline (its second entry: `calls_per_analysis` 5, `calls_per_design` 4, `calls_per_search`
/// 8); `code_generation` is exactly the rubric's (50, 3).
pub fn score_efficiency(inv: &Invocation, category: SkillCategory) -> i64 {
    let b = category.baselines();
    let expected_tokens = (b.tokens * inv.output_size) as f64;
    let token_score = 8.0 * f64::min(1.0, expected_tokens / inv.tokens_used.max(1) as f64);
    let expected_calls = (b.calls * inv.files_changed) as f64;
    let call_score = 6.0 * f64::min(1.0, expected_calls / inv.tool_calls.max(1) as f64);
    let expected_time = b.time_per_task_ms as f64;
    let time_score = 6.0 * f64::min(1.0, expected_time / inv.duration_ms.max(1) as f64);
    py_int(token_score + call_score + time_score)
}

/// Output quality, 0–30 points (rubric §3, "Output Quality Score", `score_output_quality`).
///
/// Accuracy (0–12): with non-empty `feedback`, `accurate == true` 12, else `mostly_accurate` 9,
/// else `partially_accurate` 6, else 0; without feedback (or with an empty one), validated output
/// 12, else no errors 8, else 0. Completeness (0–10):
/// `int(10·min(1, delivered_items / max(requested_items, 1)))`. Code quality (0–8): for code,
/// linter passed (default true) 3 + types valid (default true) 2 + tests passed (default false) 3;
/// for other output 8.
pub fn score_output_quality(inv: &Invocation, feedback: Option<Feedback>) -> i64 {
    let mut total = 0;
    match feedback.filter(|f| !f.is_empty()) {
        Some(f) => {
            if f.accurate == Some(true) {
                total += 12;
            } else if f.mostly_accurate == Some(true) {
                total += 9;
            } else if f.partially_accurate == Some(true) {
                total += 6;
            }
        }
        None => {
            if inv.output_validated {
                total += 12;
            } else if inv.errors == 0 {
                total += 8;
            }
        }
    }
    let ratio = inv.delivered_items as f64 / inv.requested_items.max(1) as f64;
    total += py_int(10.0 * f64::min(1.0, ratio));
    match inv.output_type {
        OutputType::Code => {
            let q = inv.code_quality;
            if q.linter_passed.unwrap_or(true) {
                total += 3;
            }
            if q.types_valid.unwrap_or(true) {
                total += 2;
            }
            if q.tests_passed.unwrap_or(false) {
                total += 3;
            }
        }
        OutputType::Other => total += 8,
    }
    total
}

/// User satisfaction, 0–25 points (rubric §4, "User Satisfaction Score",
/// `score_user_satisfaction`; the follow-ups are the invocation's `follow_ups`).
///
/// Accepted (0–10): accepted with `user_edit_ratio` (absent → 0) below 0.05 10, accepted
/// otherwise 7, else used the output 5, else 0. Edit ratio (0–8):
/// `int(8·(1 − min(user_edit_ratio, 1)))` with an absent ratio read as 0.5 (→ 4 points). Follow-ups
/// (0–7): none (absent or empty) 7, exactly one 4, several all resolved 2, else 0.
pub fn score_user_satisfaction(inv: &Invocation) -> i64 {
    let mut total = 0;
    if inv.user_accepted {
        if inv.user_edit_ratio.unwrap_or(0.0) < 0.05 {
            total += 10;
        } else {
            total += 7;
        }
    } else if inv.user_used_output {
        total += 5;
    }
    let edit_ratio = inv.user_edit_ratio.unwrap_or(0.5);
    total += py_int(8.0 * (1.0 - f64::min(edit_ratio, 1.0)));
    match inv.follow_ups.as_deref() {
        None | Some([]) => total += 7,
        Some([_]) => total += 4,
        Some(fs) if fs.iter().all(|f| f.resolved) => total += 2,
        Some(_) => {}
    }
    total
}

/// The four component scores of an invocation and their sum (the 0–100 skill quality score,
/// rubric "Score Components").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Scores {
    /// Completion, 0–25.
    pub completion: i64,
    /// Efficiency, 0–20.
    pub efficiency: i64,
    /// Output quality, 0–30.
    pub quality: i64,
    /// User satisfaction, 0–25.
    pub satisfaction: i64,
    /// Sum of the four, 0–100.
    pub total: i64,
}

impl Scores {
    /// Scores from the four components (total = their sum).
    pub fn new(completion: i64, efficiency: i64, quality: i64, satisfaction: i64) -> Scores {
        Scores {
            completion,
            efficiency,
            quality,
            satisfaction,
            total: completion + efficiency + quality + satisfaction,
        }
    }

    /// One component's points.
    pub fn get(&self, c: Component) -> i64 {
        match c {
            Component::Completion => self.completion,
            Component::Efficiency => self.efficiency,
            Component::Quality => self.quality,
            Component::Satisfaction => self.satisfaction,
        }
    }
}

/// Scores an invocation on all four components (rubric "Multi-Dimensional Scoring Model").
pub fn score_invocation(
    inv: &Invocation,
    category: SkillCategory,
    feedback: Option<Feedback>,
) -> Scores {
    Scores::new(
        score_completion(inv),
        score_efficiency(inv, category),
        score_output_quality(inv, feedback),
        score_user_satisfaction(inv),
    )
}

/// The four score components, in the rubric's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Component {
    /// Completion (25).
    Completion,
    /// Efficiency (20).
    Efficiency,
    /// Output quality (30).
    Quality,
    /// User satisfaction (25).
    Satisfaction,
}

impl Component {
    /// Every component, in the rubric's order (also its tie order for the weak component).
    pub const ALL: [Component; 4] = [
        Component::Completion,
        Component::Efficiency,
        Component::Quality,
        Component::Satisfaction,
    ];

    /// The rubric's key (`completion`, `efficiency`, `quality`, `satisfaction`).
    pub fn as_str(self) -> &'static str {
        match self {
            Component::Completion => "completion",
            Component::Efficiency => "efficiency",
            Component::Quality => "quality",
            Component::Satisfaction => "satisfaction",
        }
    }

    /// Maximum points ([`COMPONENT_MAX`]).
    pub fn max(self) -> i64 {
        COMPONENT_MAX
            .iter()
            .find(|(c, _)| *c == self)
            .expect("every component has a maximum")
            .1
    }
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Maximum points of each component. The rubric's trend analysis uses `COMPONENT_MAX` without
/// defining it; these are the maxima of its "Component Breakdown" (25, 20, 30, 25).
pub const COMPONENT_MAX: [(Component, i64); 4] = [
    (Component::Completion, 25),
    (Component::Efficiency, 20),
    (Component::Quality, 30),
    (Component::Satisfaction, 25),
];

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
fn py_percent(x: f64) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn inv() -> Invocation {
        Invocation::default()
    }

    #[test]
    fn completion_every_branch() {
        assert_eq!(score_completion(&inv()), 25);
        let e = Invocation { errors: 2, ..inv() };
        // Recovered outranks partial, workaround and explanation.
        let all = Invocation {
            recovered: true,
            partial_completion: true,
            workaround_used: true,
            failure_explained: true,
            ..e.clone()
        };
        assert_eq!(score_completion(&all), 20);
        let p = Invocation {
            recovered: false,
            ..all.clone()
        };
        assert_eq!(score_completion(&p), 15);
        let w = Invocation {
            partial_completion: false,
            ..p.clone()
        };
        assert_eq!(score_completion(&w), 10);
        let f = Invocation {
            workaround_used: false,
            ..w.clone()
        };
        assert_eq!(score_completion(&f), 5);
        assert_eq!(score_completion(&e), 0);
        // No errors: 25 whatever the flags.
        assert_eq!(
            score_completion(&Invocation {
                errors: 0,
                ..f.clone()
            }),
            25
        );
    }

    #[test]
    fn efficiency_by_hand_with_truncation() {
        // Defaults: no tokens, no calls, no time → max(x, 1) → full 8 + 6 + 6.
        assert_eq!(score_efficiency(&inv(), SkillCategory::CodeGeneration), 20);
        // code_generation: 8·min(1, 50/100) = 4; 6·min(1, 3/4) = 4.5; 6·min(1, 30000/45000) = 4
        // → int(12.5) = 12.
        let i = Invocation {
            tokens_used: 100,
            tool_calls: 4,
            duration_ms: 45_000,
            ..inv()
        };
        assert_eq!(score_efficiency(&i, SkillCategory::CodeGeneration), 12);
        // analysis: 8·min(1, 200/100) = 8; 6·min(1, 5/4) = 6; 6·(20000/45000) = 2.666… → int(16.67) = 16.
        assert_eq!(score_efficiency(&i, SkillCategory::Analysis), 16);
        // design: 8; 6; 6·min(1, 45000/45000) = 6 → 20.
        assert_eq!(score_efficiency(&i, SkillCategory::Design), 20);
        // research: 8·min(1, 100/100) = 8; 6·min(1, 8/4) = 6; 6 → 20.
        assert_eq!(score_efficiency(&i, SkillCategory::Research), 20);
        // Output size and files changed scale the baselines: 50·3/300 = 0.5 → 4; 3·2/12 = 0.5 → 3;
        // 6·30000/90000 = 2 → 9.
        let j = Invocation {
            tokens_used: 300,
            output_size: 3,
            tool_calls: 12,
            files_changed: 2,
            duration_ms: 90_000,
            ..inv()
        };
        assert_eq!(score_efficiency(&j, SkillCategory::CodeGeneration), 9);
        // Truncation of the sum, not of each term: 8·50/150 = 2.667, 6·3/7 = 2.571,
        // 6·30000/70000 = 2.571 → 7.81 → 7 (per-term truncation would give 6).
        let k = Invocation {
            tokens_used: 150,
            tool_calls: 7,
            duration_ms: 70_000,
            ..inv()
        };
        assert_eq!(score_efficiency(&k, SkillCategory::CodeGeneration), 7);
        // Huge usage → 0.
        let z = Invocation {
            tokens_used: u64::MAX / 2,
            tool_calls: 1 << 40,
            duration_ms: 1 << 50,
            ..inv()
        };
        assert_eq!(score_efficiency(&z, SkillCategory::Analysis), 0);
        // Output size 0: no expected tokens → 0 token points.
        let o = Invocation {
            output_size: 0,
            ..inv()
        };
        assert_eq!(score_efficiency(&o, SkillCategory::Analysis), 12);
    }

    #[test]
    fn category_keys_and_fallback() {
        assert_eq!(
            SkillCategory::from_key("code_generation"),
            SkillCategory::CodeGeneration
        );
        assert_eq!(SkillCategory::from_key("research"), SkillCategory::Research);
        assert_eq!(SkillCategory::from_key("poetry"), SkillCategory::Analysis);
        let b = SkillCategory::Design.baselines();
        assert_eq!(
            (
                b.tokens_key,
                b.tokens,
                b.calls_key,
                b.calls,
                b.time_per_task_ms
            ),
            ("tokens_per_component", 150, "calls_per_design", 4, 45_000)
        );
    }

    #[test]
    fn output_quality_every_branch() {
        // Heuristic: no errors 8 + completeness 10 + non-code 8.
        assert_eq!(score_output_quality(&inv(), None), 26);
        let validated = Invocation {
            output_validated: true,
            ..inv()
        };
        assert_eq!(score_output_quality(&validated, None), 30);
        let errored = Invocation { errors: 1, ..inv() };
        assert_eq!(score_output_quality(&errored, None), 18);
        // Validated wins over errors.
        let both = Invocation {
            errors: 1,
            output_validated: true,
            ..inv()
        };
        assert_eq!(score_output_quality(&both, None), 30);
        // Feedback replaces the heuristic.
        let fb = |a, m, p| {
            Some(Feedback {
                accurate: a,
                mostly_accurate: m,
                partially_accurate: p,
            })
        };
        assert_eq!(
            score_output_quality(&errored, fb(Some(true), None, None)),
            30
        );
        assert_eq!(
            score_output_quality(&validated, fb(Some(false), Some(true), None)),
            27
        );
        assert_eq!(
            score_output_quality(&validated, fb(None, None, Some(true))),
            24
        );
        // A non-empty feedback with nothing true → 0 accuracy even when validated.
        assert_eq!(
            score_output_quality(&validated, fb(Some(false), None, None)),
            18
        );
        // An empty feedback is Python-falsy: heuristic.
        assert_eq!(score_output_quality(&validated, fb(None, None, None)), 30);
        // Completeness: int(10·min(1, 2/3)) = 6; over-delivery capped at 10; requested 0 → max(0,1).
        let part = Invocation {
            requested_items: 3,
            delivered_items: 2,
            ..inv()
        };
        assert_eq!(score_output_quality(&part, None), 8 + 6 + 8);
        let over = Invocation {
            requested_items: 2,
            delivered_items: 5,
            ..inv()
        };
        assert_eq!(score_output_quality(&over, None), 26);
        let none = Invocation {
            requested_items: 0,
            delivered_items: 0,
            ..inv()
        };
        assert_eq!(score_output_quality(&none, None), 16);
        // int(10·7/10) = 7.
        let seven = Invocation {
            requested_items: 10,
            delivered_items: 7,
            ..inv()
        };
        assert_eq!(score_output_quality(&seven, None), 8 + 7 + 8);
        // Code: defaults give linter 3 + types 2, no tests.
        let code = Invocation {
            output_type: OutputType::Code,
            ..inv()
        };
        assert_eq!(score_output_quality(&code, None), 8 + 10 + 5);
        let tested = Invocation {
            code_quality: CodeQuality {
                tests_passed: Some(true),
                ..Default::default()
            },
            ..code.clone()
        };
        assert_eq!(score_output_quality(&tested, None), 8 + 10 + 8);
        let lint_fail = Invocation {
            code_quality: CodeQuality {
                linter_passed: Some(false),
                types_valid: Some(true),
                tests_passed: Some(true),
            },
            ..code.clone()
        };
        assert_eq!(score_output_quality(&lint_fail, None), 8 + 10 + 5);
        let types_fail = Invocation {
            code_quality: CodeQuality {
                linter_passed: None,
                types_valid: Some(false),
                tests_passed: Some(false),
            },
            ..code.clone()
        };
        assert_eq!(score_output_quality(&types_fail, None), 8 + 10 + 3);
    }

    #[test]
    fn satisfaction_every_branch() {
        // Benchmark defaults: not accepted, edit ratio 0.5 → 4, no follow-ups → 7.
        assert_eq!(score_user_satisfaction(&inv()), 11);
        // Accepted, ratio absent → read as 0 for "as-is" (10) but as 0.5 for the ratio points (4).
        let acc = Invocation {
            user_accepted: true,
            ..inv()
        };
        assert_eq!(score_user_satisfaction(&acc), 10 + 4 + 7);
        let as_is = Invocation {
            user_edit_ratio: Some(0.04),
            ..acc.clone()
        };
        // int(8·0.96) = int(7.68) = 7.
        assert_eq!(score_user_satisfaction(&as_is), 10 + 7 + 7);
        let edited = Invocation {
            user_edit_ratio: Some(0.05),
            ..acc.clone()
        };
        // int(8·0.95) = int(7.6) = 7.
        assert_eq!(score_user_satisfaction(&edited), 7 + 7 + 7);
        let used = Invocation {
            user_used_output: true,
            user_edit_ratio: Some(0.3),
            ..inv()
        };
        // int(8·0.7) = int(5.6) = 5.
        assert_eq!(score_user_satisfaction(&used), 5 + 5 + 7);
        let rewritten = Invocation {
            user_edit_ratio: Some(1.7),
            ..inv()
        };
        // Edit ratio above 1 clamps to 0 edit points: 0 + 7.
        assert_eq!(score_user_satisfaction(&rewritten), 7);
        let zero = Invocation {
            user_edit_ratio: Some(0.0),
            follow_ups: Some(vec![]),
            ..inv()
        };
        assert_eq!(score_user_satisfaction(&zero), 8 + 7);
        let fu = |v: &[bool]| Invocation {
            follow_ups: Some(v.iter().map(|&resolved| FollowUp { resolved }).collect()),
            ..inv()
        };
        assert_eq!(score_user_satisfaction(&fu(&[false])), 4 + 4);
        assert_eq!(score_user_satisfaction(&fu(&[true, true])), 4 + 2);
        assert_eq!(score_user_satisfaction(&fu(&[true, false, true])), 4);
    }

    #[test]
    fn total_is_the_sum() {
        let s = score_invocation(&inv(), SkillCategory::Analysis, None);
        assert_eq!(s, Scores::new(25, 20, 26, 11));
        assert_eq!(s.total, 82);
    }

    #[test]
    fn tier_boundaries() {
        let cases = [
            (100.0, Tier::Excellent),
            (90.0, Tier::Excellent),
            (89.99, Tier::Good),
            (75.0, Tier::Good),
            (74.0, Tier::Acceptable),
            (74.99, Tier::Acceptable),
            (60.0, Tier::Acceptable),
            (59.0, Tier::BelowAverage),
            (40.0, Tier::BelowAverage),
            (39.0, Tier::Poor),
            (20.0, Tier::Poor),
            (19.0, Tier::Failing),
            (0.0, Tier::Failing),
            (-1.0, Tier::Failing),
        ];
        for (s, t) in cases {
            assert_eq!(Tier::from_score(s), t, "score {s}");
        }
        assert_eq!(Tier::BelowAverage.label(), "Below Average");
        assert_eq!(Tier::Poor.description(), "Major problems");
        assert_eq!(Tier::Failing.action(), "Investigate root cause");
        assert_eq!(Tier::Excellent.action(), "Document as exemplar");
        assert_eq!(Tier::from_label("Below Average"), Some(Tier::BelowAverage));
        assert_eq!(
            serde_json::to_string(&Tier::BelowAverage).unwrap(),
            "\"Below Average\""
        );
        // Ranges tile 0–100.
        for w in Tier::ALL.windows(2) {
            assert_eq!(w[0].min_score(), w[1].max_score() + 1);
        }
    }

    fn totals(prev: &[i64], recent: &[i64]) -> Vec<Scores> {
        prev.iter()
            .chain(recent)
            .map(|&t| Scores {
                total: t,
                ..Scores::new(20, 10, 25, 11)
            })
            .collect()
    }

    fn analysis(t: Trend) -> TrendAnalysis {
        match t {
            Trend::Analyzed(a) => a,
            Trend::InsufficientData => panic!("insufficient"),
        }
    }

    #[test]
    fn trend_needs_ten() {
        let nine = totals(&[50, 50], &[90; 7]);
        assert_eq!(analyze_trend(&nine), Trend::InsufficientData);
        assert_eq!(
            serde_json::to_value(Trend::InsufficientData).unwrap(),
            serde_json::json!({"status": "insufficient_data"})
        );
        let ten = totals(&[50, 50, 50], &[90; 7]);
        assert!(matches!(analyze_trend(&ten), Trend::Analyzed(_)));
    }

    #[test]
    fn trend_edges() {
        // previous 40, recent 44: (44 − 40) / 40 · 100 = 10.0 exactly → stable.
        let a = analysis(analyze_trend(&totals(&[40, 40, 40], &[44; 7])));
        assert_eq!((a.previous_avg, a.current_avg), (40.0, 44.0));
        assert_eq!(a.change_percent, 10.0);
        assert_eq!(a.trend, Direction::Stable);
        // One more point in the recent week: 44.142… → +10.36 % → improving.
        let a = analysis(analyze_trend(&totals(
            &[40, 40, 40],
            &[44, 44, 44, 44, 44, 44, 45],
        )));
        assert!(a.change_percent > 10.0 && a.change_percent < 10.5);
        assert_eq!(a.trend, Direction::Improving);
        // 36 vs 40: −10.0 exactly → stable; 35.857… → −10.36 % → declining.
        let a = analysis(analyze_trend(&totals(&[40, 40, 40], &[36; 7])));
        assert_eq!(a.change_percent, -10.0);
        assert_eq!(a.trend, Direction::Stable);
        let a = analysis(analyze_trend(&totals(
            &[40, 40, 40],
            &[36, 36, 36, 36, 36, 36, 35],
        )));
        assert_eq!(a.trend, Direction::Declining);
        // Previous of 0 is divided by max(0, 1): 0 → 1 is +100 %.
        let a = analysis(analyze_trend(&totals(&[0, 0, 0], &[1; 7])));
        assert_eq!(a.change_percent, 100.0);
        // More than 10: previous is everything before the last 7.
        let a = analysis(analyze_trend(&totals(&[10, 20, 30, 40, 50], &[60; 7])));
        assert_eq!(a.previous_avg, 30.0);
        assert_eq!(a.current_avg, 60.0);
    }

    #[test]
    fn weak_component_and_recommendation() {
        // completion 20/25 = 0.8, efficiency 10/20 = 0.5, quality 25/30 = 0.83, satisfaction 11/25 = 0.44.
        let a = analysis(analyze_trend(&totals(&[50; 3], &[50; 7])));
        assert_eq!(a.weak_component, Component::Satisfaction);
        assert_eq!(a.component_scores.satisfaction, 11.0);
        assert_eq!(
            a.recommendation,
            "Gather user feedback, analyze edit patterns"
        );
        // Efficiency lowest relative to its max.
        let s: Vec<Scores> = (0..10).map(|_| Scores::new(25, 5, 30, 25)).collect();
        let a = analysis(analyze_trend(&s));
        assert_eq!(a.weak_component, Component::Efficiency);
        assert_eq!(
            a.recommendation,
            "Reduce context size, consider progressive disclosure"
        );
        // Ties go to the first in rubric order: 12.5/25 = 10/20 = 15/30 = 0.5.
        let avgs = ComponentAverages {
            completion: 12.5,
            efficiency: 10.0,
            quality: 15.0,
            satisfaction: 12.5,
        };
        assert_eq!(weak_component(&avgs), Component::Completion);
        let avgs = ComponentAverages {
            quality: 3.0,
            ..avgs
        };
        assert_eq!(weak_component(&avgs), Component::Quality);
        // Raw points are always < 50 → level low; 50 and up → medium.
        assert_eq!(
            get_improvement_recommendation(Component::Quality, 30.0),
            "Add more examples and anti-patterns to skill"
        );
        assert_eq!(
            get_improvement_recommendation(Component::Quality, 50.0),
            "Include validation steps in skill workflow"
        );
        assert_eq!(
            get_improvement_recommendation(Component::Completion, 49.9),
            "Add more error handling and recovery patterns to SKILL.md"
        );
        assert_eq!(
            get_improvement_recommendation(Component::Completion, 80.0),
            "Review common failure cases and add guidance"
        );
        assert_eq!(
            get_improvement_recommendation(Component::Efficiency, 60.0),
            "Optimize tool call patterns, reduce unnecessary reads"
        );
        assert_eq!(
            get_improvement_recommendation(Component::Satisfaction, 60.0),
            "Add clarifying questions to skill workflow"
        );
        assert_eq!(COMPONENT_MAX.iter().map(|(_, m)| m).sum::<i64>(), 100);
    }

    fn stats(avg: f64, n: u64, err: f64) -> SkillStats {
        SkillStats {
            avg_score: avg,
            invocation_count: n,
            error_rate: err,
        }
    }

    #[test]
    fn publish_gate() {
        let r = check_quality_gate(&stats(70.0, 10, 0.1), Gate::Publish);
        assert!(r.passed, "{r:?}");
        assert!(r.failures.is_empty());
        let r = check_quality_gate(&stats(69.95, 9, 0.125), Gate::Publish);
        assert!(!r.passed);
        assert_eq!(
            r.failures,
            vec![
                "Score 70.0 < 70".to_string(),
                "Invocations 9 < 10".into(),
                "Error rate 12.50% > 10.00%".into()
            ]
        );
        let r = check_quality_gate(&stats(68.04, 12, 0.0), Gate::Publish);
        assert_eq!(r.failures, vec!["Score 68.0 < 70".to_string()]);
        let r = check_quality_gate(&stats(90.0, 3, 0.0), Gate::Publish);
        assert_eq!(r.failures, vec!["Invocations 3 < 10".to_string()]);
        let r = check_quality_gate(&stats(90.0, 30, 0.2), Gate::Publish);
        assert_eq!(r.failures, vec!["Error rate 20.00% > 10.00%".to_string()]);
        assert_eq!(r.gate, Gate::Publish);
        assert_eq!(r.stats, stats(90.0, 30, 0.2));
    }

    #[test]
    fn feature_gate() {
        assert!(check_quality_gate(&stats(85.0, 50, 0.05), Gate::Feature).passed);
        let r = check_quality_gate(&stats(84.96, 49, 0.0501), Gate::Feature);
        assert_eq!(
            r.failures,
            vec![
                "Score 85.0 < 85".to_string(),
                "Invocations 49 < 50".into(),
                "Error rate 5.01% > 5.00%".into()
            ]
        );
    }

    #[test]
    fn deprecation_gate_as_the_code_has_it() {
        // Only min_invocations applies: a great skill with 20 invocations "passes", a failing one
        // with 20 passes too, a skill with 19 fails with the invocations message.
        let r = check_quality_gate(&stats(95.0, 20, 0.5), Gate::Deprecation);
        assert!(r.passed);
        assert!(check_quality_gate(&stats(5.0, 20, 1.0), Gate::Deprecation).passed);
        let r = check_quality_gate(&stats(5.0, 19, 1.0), Gate::Deprecation);
        assert_eq!(r.failures, vec!["Invocations 19 < 20".to_string()]);
        assert_eq!(
            Gate::Deprecation.config().description,
            "Triggers deprecation review"
        );
    }

    #[test]
    fn deprecation_review_applies_score_and_age() {
        let r = deprecation_review(&stats(35.0, 25, 0.0), Some(120.0));
        assert!(r.triggered);
        assert_eq!(
            r.reasons,
            vec![
                "Score 35.0 <= 40".to_string(),
                "Invocations 25 >= 20".into(),
                "No improvement for 120 days >= 90".into()
            ]
        );
        // Boundaries are inclusive: 40 and 90 days trigger.
        assert!(deprecation_review(&stats(40.0, 20, 0.0), Some(90.0)).triggered);
        let r = deprecation_review(&stats(40.1, 20, 0.0), Some(90.0));
        assert!(!r.triggered && !r.low_score);
        assert_eq!(r.reasons[0], "Score 40.1 > 40");
        let r = deprecation_review(&stats(30.0, 19, 0.0), Some(200.0));
        assert!(!r.triggered && !r.enough_invocations);
        assert_eq!(r.reasons[1], "Invocations 19 < 20");
        let r = deprecation_review(&stats(30.0, 20, 0.0), Some(89.0));
        assert_eq!(r.stale, Some(false));
        assert!(!r.triggered);
        assert_eq!(r.reasons[2], "No improvement for 89 days < 90");
        // Unknown age: decided by score and invocations.
        let r = deprecation_review(&stats(30.0, 20, 0.0), None);
        assert!(r.triggered);
        assert_eq!(r.stale, None);
        assert_eq!(
            r.reasons[2],
            "Age without improvement unknown (not checked)"
        );
    }

    #[test]
    fn invocation_deserializes_with_rubric_defaults() {
        let i: Invocation =
            serde_json::from_str(r#"{"tokens_used": 10, "duration_ms": 5}"#).unwrap();
        assert_eq!(i.output_size, 1);
        assert_eq!(i.files_changed, 1);
        assert_eq!((i.requested_items, i.delivered_items), (1, 1));
        assert_eq!(i.user_edit_ratio, None);
        assert_eq!(i.output_type, OutputType::Other);
    }
}
