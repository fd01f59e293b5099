//! How a trial attempt stands and how it ended: [`TrialStatus`] (queued → building → agent →
//! verifying → done) and [`Outcome`] (the verdicts and the attempts without one). Stored as
//! lower-case text (`agent-timeout`); `Display` and `FromStr` give that text.

use serde::{Deserialize, Serialize};

/// Where a trial attempt is in its life. Stored as lower-case text.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord, Default,
)]
#[serde(rename_all = "kebab-case")]
pub enum TrialStatus {
    /// Waiting for a slot.
    #[default]
    Queued,
    /// Building or reusing the image, starting the container.
    Building,
    /// The agent runs.
    Agent,
    /// The verifier runs.
    Verifying,
    /// Finished; see the outcome.
    Done,
}

impl TrialStatus {
    /// All statuses.
    pub const ALL: [TrialStatus; 5] = [
        TrialStatus::Queued,
        TrialStatus::Building,
        TrialStatus::Agent,
        TrialStatus::Verifying,
        TrialStatus::Done,
    ];

    /// Stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            TrialStatus::Queued => "queued",
            TrialStatus::Building => "building",
            TrialStatus::Agent => "agent",
            TrialStatus::Verifying => "verifying",
            TrialStatus::Done => "done",
        }
    }

    /// True while a process works on the attempt (building, agent, verifying).
    pub fn is_active(self) -> bool {
        matches!(
            self,
            TrialStatus::Building | TrialStatus::Agent | TrialStatus::Verifying
        )
    }
}

/// How a finished attempt ended. The first seven are the trial outcomes of the evaluation;
/// `cancelled` and `interrupted` mark attempts stopped by the operator or by a shutdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The verifier wrote a reward of 1 (full marks).
    Pass,
    /// The verifier ran and wrote a reward below 1 (wrong output).
    Fail,
    /// The agent exceeded `[agent] timeout_sec`; the verifier still ran (as Harbor does) and its
    /// reward, if any, is kept.
    AgentTimeout,
    /// The verifier exceeded `[verifier] timeout_sec`.
    VerifierTimeout,
    /// The image could not be built (or the task definition is unusable).
    BuildError,
    /// Docker or skillscope failed while running the trial.
    RuntimeError,
    /// The verifier finished without writing a usable reward file.
    NoReward,
    /// The model provider failed (refused key, rate limit, overload, used-up quota, server
    /// error): the task was not fairly attempted, so the attempt is neither a pass nor a failure
    /// and is retried (automatically with backoff for transient failures).
    ProviderError,
    /// The operator cancelled the attempt.
    Cancelled,
    /// The process stopped (Ctrl-C, kill) while the attempt ran; it was re-queued.
    Interrupted,
}

impl Outcome {
    /// Every outcome, in display order.
    pub const ALL: [Outcome; 10] = [
        Outcome::Pass,
        Outcome::Fail,
        Outcome::AgentTimeout,
        Outcome::VerifierTimeout,
        Outcome::BuildError,
        Outcome::RuntimeError,
        Outcome::NoReward,
        Outcome::ProviderError,
        Outcome::Cancelled,
        Outcome::Interrupted,
    ];

    /// Stored text (`pass`, `agent-timeout`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::AgentTimeout => "agent-timeout",
            Outcome::VerifierTimeout => "verifier-timeout",
            Outcome::BuildError => "build-error",
            Outcome::RuntimeError => "runtime-error",
            Outcome::NoReward => "no-reward",
            Outcome::ProviderError => "provider-error",
            Outcome::Cancelled => "cancelled",
            Outcome::Interrupted => "interrupted",
        }
    }

    /// True for outcomes a retry makes sense for (everything but pass).
    pub fn is_retryable(self) -> bool {
        self != Outcome::Pass
    }

    /// True for the outcomes "retry the failed trials" retries — `skillscope retry --failed` and
    /// the dashboard's `R`: everything but a pass and a trial the operator cancelled (a decision,
    /// not a failure: `retry --cancelled` runs those).
    pub fn is_failed_for_retry(self) -> bool {
        !matches!(self, Outcome::Pass | Outcome::Cancelled)
    }

    /// True for a verdict about the task: the verifier's reward (pass, fail), a timeout the task
    /// caused, a reward its own test failed to write, an image its own Dockerfile cannot build.
    /// False for attempts without one: a runtime error of skillscope's, a provider failure, a
    /// cancel, an interruption. A run is `finished` only when every planned trial has a verdict.
    pub fn is_verdict(self) -> bool {
        matches!(
            self,
            Outcome::Pass
                | Outcome::Fail
                | Outcome::AgentTimeout
                | Outcome::VerifierTimeout
                | Outcome::NoReward
                | Outcome::BuildError
        )
    }

    /// The exception type Harbor records for this outcome in `result.json`, if any. A provider
    /// failure is Harbor 0.26's `ApiError` (the model API group of its error policy: retried,
    /// graded, reward not valid), so Harbor and a re-import read it as skillscope does.
    pub fn harbor_exception_type(self) -> Option<&'static str> {
        match self {
            Outcome::Pass | Outcome::Fail => None,
            Outcome::AgentTimeout => Some("AgentTimeoutError"),
            Outcome::VerifierTimeout => Some("VerifierTimeoutError"),
            Outcome::BuildError => Some("EnvironmentBuildError"),
            Outcome::RuntimeError => Some("RuntimeError"),
            Outcome::NoReward => Some("RewardFileNotFoundError"),
            Outcome::ProviderError => Some("ApiError"),
            Outcome::Cancelled | Outcome::Interrupted => Some("CancelledError"),
        }
    }
}

/// Error for unknown stored text.
#[derive(Debug, thiserror::Error)]
#[error("unknown {what} {value:?}")]
pub struct ParseEnumError {
    /// What was parsed (`outcome`, `trial status`).
    pub what: &'static str,
    /// The text that matched none.
    pub value: String,
}

/// `Display` and `FromStr` of an enum stored as text: its `as_str` and the inverse over `ALL`.
macro_rules! text_enum {
    ($t:ty, $what:literal) => {
        impl ::std::fmt::Display for $t {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl ::std::str::FromStr for $t {
            type Err = $crate::domain::ParseEnumError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                <$t>::ALL
                    .into_iter()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| $crate::domain::ParseEnumError {
                        what: $what,
                        value: s.to_string(),
                    })
            }
        }
    };
}
pub(crate) use text_enum;
text_enum!(TrialStatus, "trial status");
text_enum!(Outcome, "outcome");

/// A judged failure's category (`evaluation-plan.md`, Phase 4), as stored; the rules that decide
/// it are in `analysis::failure_category`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureCategory {
    /// The agent or the verifier overran its time limit.
    Timeout,
    /// The agent's own commands or tool calls failed and it did not recover, or it crashed.
    Execution,
    /// The agent stopped without doing what was asked.
    Coherence,
    /// Outputs were produced and failed the verifier's assertions.
    Verification,
    /// What the trial left does not decide it.
    Unclassified,
}

impl FailureCategory {
    /// Every category, in report order.
    pub const ALL: [FailureCategory; 5] = [
        FailureCategory::Timeout,
        FailureCategory::Execution,
        FailureCategory::Coherence,
        FailureCategory::Verification,
        FailureCategory::Unclassified,
    ];

    /// Stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureCategory::Timeout => "timeout",
            FailureCategory::Execution => "execution",
            FailureCategory::Coherence => "coherence",
            FailureCategory::Verification => "verification",
            FailureCategory::Unclassified => "unclassified",
        }
    }

    /// Parses stored text.
    pub fn parse(s: &str) -> Option<FailureCategory> {
        FailureCategory::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// True for the outcomes that get a category: the judged failures.
    pub fn applies_to(outcome: Outcome) -> bool {
        matches!(
            outcome,
            Outcome::Fail | Outcome::AgentTimeout | Outcome::VerifierTimeout
        )
    }
}
