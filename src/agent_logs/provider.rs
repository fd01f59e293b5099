//! Provider failures, shared by every harness: a failure on the model provider's side (a refused
//! key, a rate limit, an overload, used-up quota, a server error) recognised in error text, as
//! opposed to the agent's own failure. Such a trial was never fairly attempted: it gets its own
//! outcome and is retried, because counting it as a task failure corrupts pass rates.

/// A failure on the model provider's side: the task was never fairly attempted, so it gets its
/// own outcome and is retried instead of counting as a failed trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderFailureKind {
    /// The key was refused: HTTP 401 or 403, `authentication_error`, `permission_error`, the
    /// CLI's `authentication_failed`, "Invalid API key", "invalid x-api-key", "Failed to
    /// authenticate", "OAuth token has expired". Needs the operator; retrying will not help.
    Authentication,
    /// Too many requests: HTTP 429, `rate_limit_error`, the CLI's `rate_limit`, "rate limit",
    /// "Too Many Requests" (unless a quota phrase says otherwise). Transient: back off, retry.
    RateLimit,
    /// The provider is overloaded: HTTP 529, `overloaded_error`, "Overloaded". Transient.
    Overloaded,
    /// Credit, quota or spend limit used up: HTTP 402, `billing_error`, "credit balance is too
    /// low", `insufficient_quota`, "exceeded your current quota", "spend limit", "usage limit",
    /// "session limit". Needs the operator (or the next billing period).
    QuotaExhausted,
    /// Another server-side error: HTTP 5xx other than 529, `api_error`, the CLI's
    /// `server_error`, "Internal server error". Transient.
    ServerError,
}

impl ProviderFailureKind {
    /// Stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderFailureKind::Authentication => "auth",
            ProviderFailureKind::RateLimit => "rate_limit",
            ProviderFailureKind::Overloaded => "overloaded",
            ProviderFailureKind::QuotaExhausted => "quota",
            ProviderFailureKind::ServerError => "server_error",
        }
    }

    /// True for failures that waiting can cure (rate limit, overload, server error); false for
    /// those that need the operator (key, quota).
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            ProviderFailureKind::RateLimit
                | ProviderFailureKind::Overloaded
                | ProviderFailureKind::ServerError
        )
    }
}

/// Where a provider failure was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// The harness's closing record (Claude Code's `result` line, Codex's `turn.failed`, Gemini
    /// CLI's final error).
    ResultLine,
    /// An API-error event in the log (Claude Code's `<synthetic>` "API Error: …" message, Codex's
    /// `error` event, a Gemini CLI error record).
    ApiErrorMessage,
    /// Non-JSON lines of the stream (stderr merged into stdout).
    StrayOutput,
    /// The process's stderr.
    Stderr,
}

/// A provider failure and how it was recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderFailure {
    /// What failed.
    pub kind: ProviderFailureKind,
    /// Where it was seen.
    pub evidence: Evidence,
    /// The HTTP status, when the text or the line gave one.
    pub http_status: Option<u16>,
}

/// What a classifier recognised in a piece of text: the failure kind and the HTTP status, when
/// the text gave one.
pub type Hit = (ProviderFailureKind, Option<u16>);

impl ProviderFailure {
    /// A failure recognised as `hit` in `evidence`.
    pub fn seen(hit: Hit, evidence: Evidence) -> ProviderFailure {
        ProviderFailure {
            kind: hit.0,
            evidence,
            http_status: hit.1,
        }
    }

    /// One line for the trial's error column, e.g. `model provider failure: rate limit (HTTP
    /// 429), seen in the harness's closing record`.
    pub fn describe(&self) -> String {
        let what = match self.kind {
            ProviderFailureKind::Authentication => "the API key was refused",
            ProviderFailureKind::RateLimit => "rate limit",
            ProviderFailureKind::Overloaded => "provider overloaded",
            ProviderFailureKind::QuotaExhausted => "quota or credit used up",
            ProviderFailureKind::ServerError => "provider server error",
        };
        let status = self
            .http_status
            .map(|s| format!(" (HTTP {s})"))
            .unwrap_or_default();
        let seen = match self.evidence {
            Evidence::ResultLine => "the harness's closing record",
            Evidence::ApiErrorMessage => "an API error in the harness's log",
            Evidence::StrayOutput => "the harness's output",
            Evidence::Stderr => "the harness's stderr",
        };
        format!("model provider failure: {what}{status}, seen in {seen}")
    }
}

/// Only the end of a harness's stderr is searched for provider errors, bytes.
pub const STDERR_TAIL: usize = 64 * 1024;

/// The last two places every harness reader searches, after its own records: the stream's
/// non-JSON lines (`stray`, joined; [`Evidence::StrayOutput`]), then the last [`STDERR_TAIL`]
/// bytes of `stderr` ([`Evidence::Stderr`]), each read by the harness's `classify`.
pub fn in_stray_or_stderr(
    stray: &[String],
    stderr: &str,
    classify: impl Fn(&str) -> Option<Hit>,
) -> Option<ProviderFailure> {
    if let Some(hit) = classify(&stray.join("\n")) {
        return Some(ProviderFailure::seen(hit, Evidence::StrayOutput));
    }
    classify(crate::sanitize::tail(stderr, STDERR_TAIL))
        .map(|hit| ProviderFailure::seen(hit, Evidence::Stderr))
}

/// Phrases, lowercased, in the order they are tried (a quota phrase beats a 429 status).
const PHRASES: &[(ProviderFailureKind, &[&str])] = &[
    (
        ProviderFailureKind::Authentication,
        &[
            "authentication_error",
            "authentication_failed",
            "invalid api key",
            "invalid x-api-key",
            "invalid bearer token",
            "failed to authenticate",
            "oauth token has expired",
            "permission_error",
            "unauthorized",
        ],
    ),
    (
        ProviderFailureKind::QuotaExhausted,
        &[
            "credit balance is too low",
            "billing_error",
            "insufficient_quota",
            "exceeded your current quota",
            "quota exceeded",
            "spend limit",
            "usage limit",
            "session limit",
        ],
    ),
    (
        ProviderFailureKind::Overloaded,
        &["overloaded_error", "overloaded"],
    ),
    (
        ProviderFailureKind::RateLimit,
        &[
            "rate_limit_error",
            "rate_limit",
            "rate limit",
            "too many requests",
        ],
    ),
    (
        ProviderFailureKind::ServerError,
        &["api_error", "internal server error"],
    ),
];

/// Markers after which an HTTP status is read.
const STATUS_MARKERS: &[&str] = &[
    "api error:",
    "api error",
    "status code:",
    "status code",
    "\"status\":",
    "status:",
    "status=",
    "error code:",
    "http/1.1",
    "http/2",
];

/// Recognises a provider failure in error text (an error message, stderr): a known phrase
/// (table above), else an HTTP status after `API Error:`, `status code`, `status:`, `HTTP/1.1`
/// … (401/403 authentication, 402 quota, 429 rate limit, 529 overloaded, other 5xx server
/// error). Returns the kind and the status, if one was given. Case-insensitive.
pub fn classify_error_text(text: &str) -> Option<(ProviderFailureKind, Option<u16>)> {
    let lower = text.to_lowercase();
    let status = http_status(&lower);
    for (kind, phrases) in PHRASES {
        if phrases.iter().any(|p| lower.contains(p)) {
            return Some((*kind, status));
        }
    }
    status.and_then(kind_for_status).map(|k| (k, status))
}

/// The first HTTP status (100–599) written after a status marker in `lower`.
fn http_status(lower: &str) -> Option<u16> {
    let mut best: Option<(usize, u16)> = None;
    for marker in STATUS_MARKERS {
        for (pos, _) in lower.match_indices(marker) {
            let rest = lower[pos + marker.len()..].trim_start_matches([' ', '"', ':', '=']);
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if digits.len() == 3
                && let Ok(code) = digits.parse::<u16>()
                && (100..600).contains(&code)
                && best.is_none_or(|(p, _)| pos < p)
            {
                best = Some((pos, code));
            }
        }
    }
    best.map(|(_, code)| code)
}

/// The provider failure an HTTP status means: 401/403 authentication, 402 quota, 429 rate limit,
/// 529 overloaded, other 5xx server error; `None` for anything else.
pub fn kind_for_status(status: u16) -> Option<ProviderFailureKind> {
    match status {
        401 | 403 => Some(ProviderFailureKind::Authentication),
        402 => Some(ProviderFailureKind::QuotaExhausted),
        429 => Some(ProviderFailureKind::RateLimit),
        529 => Some(ProviderFailureKind::Overloaded),
        500..=599 => Some(ProviderFailureKind::ServerError),
        _ => None,
    }
}
