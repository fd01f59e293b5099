//! Harbor 0.26's error-policy table (`harbor/models/trial/error_policy.py`): for each exception
//! type a trial can record, whether Harbor retries the trial, still runs its verifier, and
//! whether the reward it then has is valid. A trial's reward is valid (`reward_valid`) when the
//! verifier wrote rewards and every exception it recorded (the trial's, then each step's) has a
//! valid reward; Harbor's job statistics, means and pass@k count only such trials.
//!
//! The table is keyed by the exception's class name (`ExceptionInfo.exception_type`); a name it
//! does not list gets retry ✓, grade ✓, valid ✓. An `ErrorPolicyOverride` (job or trial config,
//! copied into the recorded `exception_info.policy_override`) replaces the fields it sets.

use serde::{Deserialize, Serialize};

/// What Harbor does after an exception (`ErrorPolicy`), serialized as `exception_info.policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorPolicy {
    /// The trial is retried (when retries are left).
    pub should_retry: bool,
    /// The verifier still runs.
    pub should_grade: bool,
    /// A reward the verifier writes counts.
    pub has_valid_reward: bool,
}

/// `ErrorPolicyOverride`: the fields to replace (each optional).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorPolicyOverride {
    /// Replaces `should_retry`.
    #[serde(default)]
    pub should_retry: Option<bool>,
    /// Replaces `should_grade`.
    #[serde(default)]
    pub should_grade: Option<bool>,
    /// Replaces `has_valid_reward`.
    #[serde(default)]
    pub has_valid_reward: Option<bool>,
}

/// The table's groups: what kind of failure each name is, for skillscope's outcomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Retry ✓, grade ✗, valid ✗: the sandbox or environment failed.
    Infrastructure,
    /// Retry ✓, grade ✓, valid ✗: a transient failure of the model's API.
    ModelApi,
    /// Retry ✗, grade ✓, valid ✗: a request the model provider refused, or a verifier that
    /// timed out or wrote no usable reward.
    InvalidRequestOrVerifier,
    /// Retry ✗, grade ✗, valid ✗: authentication, a missing model or resource, a missing
    /// extra, a cancel.
    Fatal,
    /// Retry ✗, grade ✓, valid ✓: the agent's own outcome (timeout, crash, context or output
    /// limit, refusal).
    AgentOwn,
    /// Not in the table: retry ✓, grade ✓, valid ✓.
    Unknown,
}

impl Group {
    /// The group's policy.
    pub fn policy(self) -> ErrorPolicy {
        let p = |should_retry, should_grade, has_valid_reward| ErrorPolicy {
            should_retry,
            should_grade,
            has_valid_reward,
        };
        match self {
            Group::Infrastructure => p(true, false, false),
            Group::ModelApi => p(true, true, false),
            Group::InvalidRequestOrVerifier => p(false, true, false),
            Group::Fatal => p(false, false, false),
            Group::AgentOwn => p(false, true, true),
            Group::Unknown => p(true, true, true),
        }
    }
}

/// The table: every exception type name Harbor 0.26.0 lists, with its group.
const TABLE: &[(Group, &[&str])] = &[
    (
        Group::Infrastructure,
        &[
            "EnvironmentStartTimeoutError",
            "SandboxBuildFailedError",
            "AgentSetupTimeoutError",
            "HealthcheckError",
            "SandboxLikelyOutOfMemoryError",
            "MemoryLimitExceededError",
            "SSHAccessError",
            "GKEExecStreamClosedError",
            "GKEPodNotFoundError",
            "RuntimeRequestError",
            "AddTestsDirError",
            "DownloadVerifierDirError",
        ],
    ),
    (
        Group::ModelApi,
        &[
            "ApiError",
            "ApiRateLimitError",
            "ApiInternalServerError",
            "ApiOverloadedError",
            "ApiConnectionClosedError",
            "ApiResponseStalledError",
            "UnknownApiError",
            "NetworkConnectionError",
            "ApiConnectionError",
            "ApiUsageLimitError",
            "RateLimitError",
            "InternalServerError",
            "ServiceUnavailableError",
            "APIConnectionError",
            "APIError",
            "Timeout",
        ],
    ),
    (
        Group::InvalidRequestOrVerifier,
        &[
            "UnsupportedModelParametersError",
            "BadRequestError",
            "UnprocessableEntityError",
            "UnsupportedParamsError",
            "APIResponseValidationError",
            "BudgetExceededError",
            "VerifierTimeoutError",
            "RewardFileNotFoundError",
            "RewardFileEmptyError",
            "VerifierOutputParseError",
        ],
    ),
    (
        Group::Fatal,
        &[
            "AgentAuthenticationError",
            "ModelNotFoundError",
            "ApiProviderResourceNotFoundError",
            "AuthenticationError",
            "PermissionDeniedError",
            "NotFoundError",
            "ServiceOperationsUnsupportedError",
            "VercelScopeError",
            "DspyImportError",
            "MissingExtraError",
            "RegradeError",
            "CancelledError",
        ],
    ),
    (
        Group::AgentOwn,
        &[
            "NonZeroAgentExitCodeError",
            "AgentTimeoutError",
            "ContextWindowExceededError",
            "OutputTokenExceededError",
            "ContextLengthExceededError",
            "OutputLengthExceededError",
            "AgentSafetyRefusalError",
            "ContentPolicyViolationError",
        ],
    ),
];

/// The names of the model provider's failures (the model API group, and the requests,
/// credentials and models it refused): skillscope's `provider-error`.
const PROVIDER: &[&str] = &[
    "UnsupportedModelParametersError",
    "BadRequestError",
    "UnprocessableEntityError",
    "UnsupportedParamsError",
    "APIResponseValidationError",
    "BudgetExceededError",
    "AgentAuthenticationError",
    "ModelNotFoundError",
    "ApiProviderResourceNotFoundError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
];

/// The group of exception type `name`.
pub fn group_of(name: &str) -> Group {
    TABLE
        .iter()
        .find(|(_, names)| names.contains(&name))
        .map_or(Group::Unknown, |(g, _)| *g)
}

/// True for an exception of the model provider (its API failed, or it refused the request,
/// the credentials or the model).
pub fn is_provider_failure(name: &str) -> bool {
    group_of(name) == Group::ModelApi || PROVIDER.contains(&name)
}

/// `policy_for`: the policy of exception type `name`, with `override` applied.
pub fn policy_for(name: &str, over: Option<&ErrorPolicyOverride>) -> ErrorPolicy {
    let mut p = group_of(name).policy();
    if let Some(o) = over {
        p.should_retry = o.should_retry.unwrap_or(p.should_retry);
        p.should_grade = o.should_grade.unwrap_or(p.should_grade);
        p.has_valid_reward = o.has_valid_reward.unwrap_or(p.has_valid_reward);
    }
    p
}

/// `TrialResult.reward_valid`: the verifier wrote at least one reward and every recorded
/// exception (`policies`, the trial's then each step's) leaves the reward valid.
pub fn reward_valid(has_rewards: bool, policies: &[ErrorPolicy]) -> bool {
    has_rewards && policies.iter().all(|p| p.has_valid_reward)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_says_what_harbor_026_says() {
        let p = |n| policy_for(n, None);
        // The examples.
        assert_eq!(
            p("ApiRateLimitError"),
            ErrorPolicy {
                should_retry: true,
                should_grade: true,
                has_valid_reward: false
            }
        );
        assert_eq!(
            p("VerifierTimeoutError"),
            ErrorPolicy {
                should_retry: false,
                should_grade: true,
                has_valid_reward: false
            }
        );
        // 0.26 changed these from 0.25: a crashed agent's reward and an unknown type's count.
        assert!(p("NonZeroAgentExitCodeError").has_valid_reward);
        assert!(!p("NonZeroAgentExitCodeError").should_retry);
        assert_eq!(p("SomethingNew"), Group::Unknown.policy());
        assert!(p("SomethingNew").has_valid_reward);
        assert!(!p("CancelledError").should_grade);
        assert!(!p("SandboxBuildFailedError").should_grade);
        // 58 names in five groups, none twice.
        let mut all: Vec<&str> = TABLE.iter().flat_map(|(_, n)| n.iter().copied()).collect();
        assert_eq!(all.len(), 58);
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 58);
        // Overrides replace only what they set.
        let o = ErrorPolicyOverride {
            has_valid_reward: Some(true),
            ..Default::default()
        };
        let q = policy_for("ApiRateLimitError", Some(&o));
        assert!(q.has_valid_reward && q.should_retry && q.should_grade);
        assert!(is_provider_failure("ApiRateLimitError"));
        assert!(is_provider_failure("AuthenticationError"));
        assert!(!is_provider_failure("VerifierTimeoutError"));
        assert!(!is_provider_failure("CancelledError"));
    }

    #[test]
    fn reward_valid_needs_rewards_and_valid_policies() {
        let ok = Group::AgentOwn.policy();
        let bad = Group::ModelApi.policy();
        assert!(reward_valid(true, &[]));
        assert!(reward_valid(true, &[ok]));
        assert!(!reward_valid(true, &[ok, bad]));
        assert!(!reward_valid(false, &[]));
    }
}
