//! Early stopping's nouns (issue 38): the group-sequential design a run applies, a look at a
//! stage boundary and a condition stopped by one. The statistics are in
//! `analysis::sequential`; the decisions of the schedule in `engine::stopping`.

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

/// The group-sequential design a run applies ([`crate::engine::RunRequest::sequential`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequentialPlan {
    /// Stages K (looks), at ⌊s·n/K⌋ trials per task and condition.
    pub stages: usize,
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

/// A run's stored design (`sequential_designs`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DesignRow {
    /// The run.
    pub run_id: i64,
    /// Stages K.
    pub stages: usize,
    /// One-sided α.
    pub alpha: f64,
    /// β of the futility bounds.
    pub beta: f64,
    /// Trials per task and condition at each stage.
    pub stage_trials: Vec<u32>,
    /// Efficacy bounds, z.
    pub efficacy: Vec<f64>,
    /// Futility bounds, z (stages 1..K−1).
    pub futility: Vec<f64>,
    /// The comparisons.
    pub comparisons: Vec<Comparison>,
    /// False with `--no-early-stop`.
    pub early_stop: bool,
    /// Why some conditions never stop.
    pub note: Option<String>,
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
    /// The bound crossed; while it continues, the efficacy bound not reached.
    pub bound: Option<f64>,
    /// The decision.
    pub decision: LookDecision,
    /// Why, in words.
    pub reason: String,
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
