//! Why trials did not succeed: the failure modes of the plan's failure analysis, and how modes
//! and failure categories shift from round 1 to round 2.

use serde::Serialize;

use super::{ConditionResult, ROUND_PAIRS};
use crate::analysis::failure_category::FailureCategory;
use crate::domain::Outcome;

/// Why a trial did not succeed (or that it did not run), as the plan's failure analysis names
/// them. A trial whose reward reaches the pass threshold succeeded, whatever its outcome, and has
/// no failure mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureMode {
    /// The verifier ran and the output was wrong.
    WrongOutput,
    /// The agent ran out of time (and the verifier did not give the reward).
    AgentTimeout,
    /// The verifier ran out of time.
    VerifierTimeout,
    /// Docker or the harness failed while the trial ran.
    RuntimeError,
    /// The environment could not be built.
    BuildError,
    /// The run ended without a verifier reward (infrastructure).
    NoReward,
    /// The model provider failed (refused key, rate limit, quota, overload) and retries ran out.
    ProviderError,
    /// Cancelled by the operator, or not finished.
    NotRun,
}

impl FailureMode {
    /// Every mode, in report order.
    pub const ALL: [FailureMode; 8] = [
        FailureMode::WrongOutput,
        FailureMode::AgentTimeout,
        FailureMode::VerifierTimeout,
        FailureMode::RuntimeError,
        FailureMode::BuildError,
        FailureMode::NoReward,
        FailureMode::ProviderError,
        FailureMode::NotRun,
    ];

    /// Label for tables.
    pub fn label(self) -> &'static str {
        match self {
            FailureMode::WrongOutput => "wrong output",
            FailureMode::AgentTimeout => "agent timeout",
            FailureMode::VerifierTimeout => "verifier timeout",
            FailureMode::RuntimeError => "runtime error",
            FailureMode::BuildError => "build error",
            FailureMode::NoReward => "no reward",
            FailureMode::ProviderError => "provider error",
            FailureMode::NotRun => "not run",
        }
    }

    /// Infrastructure, not a judgement of the agent.
    pub fn is_infrastructure(self) -> bool {
        matches!(
            self,
            FailureMode::RuntimeError
                | FailureMode::BuildError
                | FailureMode::NoReward
                | FailureMode::ProviderError
        )
    }

    /// The mode of a finished attempt that did not succeed, from its outcome and reward (a
    /// `pass` outcome without a reward has none: `no reward`).
    pub fn of_failure(outcome: Option<Outcome>, reward: Option<f64>) -> FailureMode {
        match outcome {
            Some(Outcome::Pass) if reward.is_none() => FailureMode::NoReward,
            Some(Outcome::Pass | Outcome::Fail) => FailureMode::WrongOutput,
            Some(Outcome::AgentTimeout) => FailureMode::AgentTimeout,
            Some(Outcome::VerifierTimeout) => FailureMode::VerifierTimeout,
            Some(Outcome::RuntimeError) => FailureMode::RuntimeError,
            Some(Outcome::BuildError) => FailureMode::BuildError,
            Some(Outcome::NoReward) => FailureMode::NoReward,
            Some(Outcome::ProviderError) => FailureMode::ProviderError,
            Some(Outcome::Cancelled | Outcome::Interrupted) | None => FailureMode::NotRun,
        }
    }
}

/// A failure mode across two rounds (A → A', B → B').
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailureShift {
    /// `A → A'`.
    pub name: String,
    /// Mode.
    pub mode: FailureMode,
    /// Share of planned trials in the first round.
    pub from_rate: f64,
    /// In the second.
    pub to_rate: f64,
    /// Change, percentage points.
    pub delta_pp: f64,
}

/// A failure category across two rounds (A → A', B → B'): its share of planned trials.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CategoryShift {
    /// `A → A'`.
    pub name: String,
    /// Category.
    pub category: FailureCategory,
    /// Share of planned trials in the first round.
    pub from_rate: f64,
    /// In the second.
    pub to_rate: f64,
    /// Change, percentage points.
    pub delta_pp: f64,
}

/// How failure modes and categories shift from round 1 to round 2, per round pair that ran:
/// each as a share of its own condition's planned trials.
pub(super) fn shifts(conditions: &[ConditionResult]) -> (Vec<FailureShift>, Vec<CategoryShift>) {
    let find = |l: &str| conditions.iter().find(|c| c.label == l);
    let mut modes = Vec::new();
    let mut categories = Vec::new();
    for (from, to) in ROUND_PAIRS {
        let (Some(cf), Some(ct)) = (find(from), find(to)) else {
            continue;
        };
        let name = format!("{from} → {to}");
        for m in FailureMode::ALL {
            let rate = |c: &ConditionResult| {
                c.failures.get(&m).copied().unwrap_or(0) as f64 / c.planned.max(1) as f64
            };
            modes.push(FailureShift {
                name: name.clone(),
                mode: m,
                from_rate: rate(cf),
                to_rate: rate(ct),
                delta_pp: (rate(ct) - rate(cf)) * 100.0,
            });
        }
        for k in FailureCategory::ALL {
            let rate = |c: &ConditionResult| {
                c.categories.get(&k).copied().unwrap_or(0) as f64 / c.planned.max(1) as f64
            };
            categories.push(CategoryShift {
                name: name.clone(),
                category: k,
                from_rate: rate(cf),
                to_rate: rate(ct),
                delta_pp: (rate(ct) - rate(cf)) * 100.0,
            });
        }
    }
    (modes, categories)
}
