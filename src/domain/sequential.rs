//! Early stopping's nouns (issues 38 and 47): the group-sequential design a run applies — data,
//! fixed when the run or experiment is created — a look at a stage boundary with its decision
//! and why, and a condition stopped by one. The statistics are in `analysis::sequential`; the
//! decisions of the schedule in `engine::stopping`; the words in `report::model::sequential`.

use serde::{Deserialize, Serialize};

/// A paired comparison the design judges: `with` − `without`, one-sided ("with is better").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comparison {
    /// Its label, e.g. `B-A`, `A'-A`.
    pub label: String,
    /// The treatment's condition key, in this run.
    pub with: String,
    /// The baseline's condition key.
    pub without: String,
    /// The run the baseline ran in, when not this one (round 2's A′ − A against round 1's A,
    /// restricted to the same trial indices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub without_run: Option<String>,
}

/// The spending functions of a design.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Spending {
    /// Lan–DeMets O'Brien–Fleming type α-spending for efficacy, and β-spending of the same type
    /// for the non-binding futility bounds (docs/scoring.md, "Sequential designs").
    OBrienFleming,
}

/// The statistic a design judges at a look and where its bounds come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Statistic {
    /// The within-task sign-flip test of the per-task differences
    /// (`analysis::sequential::signflip`): exact at any number of tasks. `flips` in the reference
    /// set (every flip when the tasks are fewer than log₂ flips, else drawn from `seed`).
    SignFlip {
        /// Flips in the reference set, the identity included.
        flips: u32,
        /// The seed of the drawn flips (ChaCha8).
        seed: u64,
    },
    /// The paired z against normal bounds, as runs before issue 47 recorded their looks (too many
    /// false effects with few tasks): read, never applied again.
    PairedZ,
}

/// A group-sequential design: everything that decides its bounds, fixed before the data (when
/// the run or the experiment is created), stored with the run and used by `plan`, the engine,
/// `status`, the report and `replay` alike (`analysis::sequential::design::Design::of`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesignSpec {
    /// Stages K (looks).
    pub stages: usize,
    /// Trials per task and condition at each stage, `⌊s·n/K⌋`.
    pub stage_trials: Vec<u32>,
    /// The information fractions the α is spent at, as planned: `k_s/n`.
    pub fractions: Vec<f64>,
    /// One-sided type-I error α.
    pub alpha: f64,
    /// Type-II error β at the design drift; also the β of the futility bounds' β-spending.
    pub beta: f64,
    /// The spending functions.
    pub spending: Spending,
    /// The 1-based stage from which the non-binding futility bounds apply (`None`: no futility
    /// stop; the last stage always decides).
    pub futility_from: Option<usize>,
    /// The statistic and its reference distribution.
    pub statistic: Statistic,
    /// The fewest tasks at which the design can show an effect at all; a run with fewer is
    /// refused a design.
    pub min_tasks: usize,
}

/// The group-sequential design a run applies ([`crate::engine::RunRequest::sequential`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequentialPlan {
    /// The design.
    pub design: DesignSpec,
    /// The comparisons judged.
    pub comparisons: Vec<Comparison>,
    /// Conditions of this run that stop once every comparison they take part in is answered;
    /// the others run to the end (e.g. round 1's A and B, which learning and round 2 need).
    pub stoppable: Vec<String>,
    /// False with `--no-early-stop`: looks are recorded, nothing stops.
    pub early_stop: bool,
    /// Why conditions not in `stoppable` never stop, for the operator.
    pub note: Option<String>,
}

/// A decision at a look, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LookDecision {
    /// Neither bound crossed.
    Continue,
    /// The efficacy bound crossed: the effect is shown.
    Efficacy,
    /// The futility bound crossed (or the last stage below its efficacy bound): no effect shown.
    Futility,
}

impl LookDecision {
    /// All decisions.
    pub const ALL: [LookDecision; 3] = [
        LookDecision::Continue,
        LookDecision::Efficacy,
        LookDecision::Futility,
    ];

    /// Stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            LookDecision::Continue => "continue",
            LookDecision::Efficacy => "efficacy",
            LookDecision::Futility => "futility",
        }
    }
}
super::text_enum!(LookDecision, "look decision");

/// Why a look decided what it did — stored as data, worded by `report::model::sequential`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LookWhy {
    /// `Z ≥` the efficacy bound: the effect is shown.
    EfficacyCrossed,
    /// `Z ≤` the futility bound at an interim stage: no effect worth going on for.
    FutilityCrossed,
    /// The last stage with `Z` below its efficacy bound: no effect shown.
    LastStageBelow,
    /// Between the futility and the efficacy bound: go on.
    BetweenBounds,
    /// Below the efficacy bound at a stage without a futility bound: go on.
    BelowEfficacy,
    /// Too few tasks for the sign-flip test to show an effect at this stage (its bound is
    /// infinite): go on, or at the last stage no effect shown.
    Unreachable,
    /// Fewer than 2 tasks with rewards on both sides: no statistic.
    Undefined,
}

impl LookWhy {
    /// All of them.
    pub const ALL: [LookWhy; 7] = [
        LookWhy::EfficacyCrossed,
        LookWhy::FutilityCrossed,
        LookWhy::LastStageBelow,
        LookWhy::BetweenBounds,
        LookWhy::BelowEfficacy,
        LookWhy::Unreachable,
        LookWhy::Undefined,
    ];

    /// Stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            LookWhy::EfficacyCrossed => "efficacy-crossed",
            LookWhy::FutilityCrossed => "futility-crossed",
            LookWhy::LastStageBelow => "last-stage-below",
            LookWhy::BetweenBounds => "between-bounds",
            LookWhy::BelowEfficacy => "below-efficacy",
            LookWhy::Unreachable => "unreachable",
            LookWhy::Undefined => "undefined",
        }
    }
}
super::text_enum!(LookWhy, "look reason");

/// A run's stored design (`sequential_designs`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DesignRow {
    /// The run.
    pub run_id: i64,
    /// The design as fixed.
    pub spec: DesignSpec,
    /// Its efficacy bounds on the z-scale in large samples (the normal limit of the sign-flip
    /// bounds), one per stage.
    pub efficacy: Vec<f64>,
    /// Its futility bounds, z, one per interim stage (`None` before the design's
    /// `futility_from` or without futility).
    pub futility: Vec<Option<f64>>,
    /// The comparisons.
    pub comparisons: Vec<Comparison>,
    /// False with `--no-early-stop`.
    pub early_stop: bool,
    /// Why some conditions never stop.
    pub note: Option<String>,
}

impl DesignRow {
    /// Stages K.
    pub fn stages(&self) -> usize {
        self.spec.stages
    }
}

/// A look at a stage boundary (`sequential_looks`). Fractions are of reward (×100 for pp).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LookRow {
    /// The comparison's label.
    pub comparison: String,
    /// 1-based stage.
    pub stage: usize,
    /// Trials per task and condition used.
    pub trials: u32,
    /// Tasks compared.
    pub n_tasks: usize,
    /// Naive mean per-task difference, a fraction.
    pub mean_diff: Option<f64>,
    /// Its standard error.
    pub se: Option<f64>,
    /// The statistic (None: undefined).
    pub z: Option<f64>,
    /// The efficacy bound of this look on the Z scale (the sign-flip bound of the data); `None`
    /// when too few tasks leave it infinite.
    pub bound: Option<f64>,
    /// The futility bound of this stage, z (`None`: no futility stop here).
    pub futility_bound: Option<f64>,
    /// The decision.
    pub decision: LookDecision,
    /// Why.
    pub why: LookWhy,
    /// Median-unbiased estimate (stage-wise ordering), a fraction; at a stop only.
    pub adjusted: Option<f64>,
    /// Its 95 % stage-wise-ordering interval.
    pub ci: Option<(f64, f64)>,
    /// Stage-wise-ordering one-sided p-value.
    pub p_value: Option<f64>,
    /// When (RFC 3339).
    pub at: String,
}

/// A condition stopped early (`early_stops`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EarlyStopRow {
    /// Its condition key.
    pub condition: String,
    /// Trials per task it keeps (the stage's).
    pub trials: u32,
    /// The comparison whose answer stopped it.
    pub comparison: String,
    /// 1-based stage.
    pub stage: usize,
    /// Queued trials that left the queue, not run.
    pub not_run: usize,
    /// Projected cost of those trials, USD: `not_run` × the condition's mean cost per finished
    /// trial at the stop (None when no finished trial of it had a cost).
    pub cost_saved_usd: Option<f64>,
    /// When (RFC 3339).
    pub at: String,
}

/// Everything stored about a run's design: the design, its looks (oldest first) and its stops.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SequentialRecord {
    /// The design.
    pub design: DesignRow,
    /// The looks.
    pub looks: Vec<LookRow>,
    /// Conditions stopped.
    pub stops: Vec<EarlyStopRow>,
}

impl SequentialRecord {
    /// The latest look of `comparison`.
    pub fn last_look(&self, comparison: &str) -> Option<&LookRow> {
        self.looks.iter().rev().find(|l| l.comparison == comparison)
    }

    /// The trials per task `condition` keeps when stopped early.
    pub fn kept(&self, condition: &str) -> Option<u32> {
        self.stops
            .iter()
            .find(|s| s.condition == condition)
            .map(|s| s.trials)
    }
}

/// A comparison as a group-sequential design judged it: the design's last look.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SequentialVerdict {
    /// The run whose design it is.
    pub run: String,
    /// The design's label of the comparison (`B-A`, `A'-A`).
    pub label: String,
    /// Stages of the design.
    pub stages: usize,
    /// Its last look: the decision and why, the bounds, the naive and adjusted estimates.
    pub look: LookRow,
}

impl SequentialVerdict {
    /// Whether the design answered the comparison (efficacy or futility).
    pub fn answered(&self) -> bool {
        self.look.decision != LookDecision::Continue
    }

    /// Whether it showed the effect.
    pub fn effect(&self) -> bool {
        self.look.decision == LookDecision::Efficacy
    }

    /// The adjusted Δ at a stop, percentage points.
    pub fn adjusted_pp(&self) -> Option<f64> {
        self.look.adjusted.map(|a| a * 100.0)
    }

    /// The stage-wise-ordering interval at a stop, percentage points.
    pub fn interval_pp(&self) -> Option<(f64, f64)> {
        self.look.ci.map(|(lo, hi)| (lo * 100.0, hi * 100.0))
    }
}
