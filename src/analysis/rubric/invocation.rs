//! One invocation's score: its four components (completion, efficiency, output quality, user
//! satisfaction) as the rubric's code computes them, and their sum.

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
pub(super) fn py_int(x: f64) -> i64 {
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
