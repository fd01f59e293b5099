//! Real agent harnesses (Claude Code, Codex CLI, Gemini CLI): the pure parts — the dated model
//! price table ([`pricing`]), provider-failure recognition ([`provider`]) and what is read out of
//! each harness's native log (trajectory, tokens, reported cost, provider failures;
//! [`claude_code`], [`codex`], [`gemini_cli`]). No Docker, no network: fetching the CLIs and
//! running them inside trial containers belongs to `runner::agents`. Every reader answers the same
//! questions through [`NativeLog`].

pub mod claude_code;
pub mod codex;
pub mod convert;
pub mod gemini_cli;
pub mod pricing;
pub mod provider;

use chrono::NaiveDate;

use crate::harbor::atif::Trajectory;
use pricing::{PriceTable, TokenCounts};
use provider::ProviderFailure;

/// What a harness's native log does not carry, for the converters' `to_trajectory`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TrajectoryOptions<'a> {
    /// `instruction.md`, made step 1 (the CLIs' headless modes do not echo the prompt).
    pub instruction: Option<&'a str>,
    /// RFC 3339 start of the agent phase, the instruction step's timestamp.
    pub started_at: Option<&'a str>,
    /// Harness version, when known better than the log says (Claude Code's init line, Codex's `cli_version`).
    pub agent_version: Option<&'a str>,
}

impl TrajectoryOptions<'_> {
    /// The harness version for the trajectory's `agent`: the one given, else the log's own, else
    /// `unknown`.
    pub fn agent_version_or(&self, from_log: Option<&str>) -> String {
        self.agent_version
            .or(from_log)
            .unwrap_or("unknown")
            .to_string()
    }
}

/// A harness run as read from its native log — parsed once per trial, then asked for its
/// provider verdict, its trajectory, tokens and cost. The three readers ([`claude_code`],
/// [`codex`], [`gemini_cli`]) implement it alike, so the runner holds one `dyn NativeLog`.
pub trait NativeLog: std::fmt::Debug + Send + Sync {
    /// The run as an ATIF trajectory (`agent/trajectory.json`); see each reader for its mapping.
    /// `final_metrics.total_cost_usd` is the harness's own figure when it reports one, else
    /// unset (then [`NativeLog::priced_cost_usd`] fills it).
    fn to_trajectory(&self, opts: &TrajectoryOptions<'_>) -> Trajectory;

    /// The provider failure that ended an exited run (rate limit, overload, key, quota, …), read
    /// from the log, its stray lines and the last of `stderr`; `None` when the run completed or
    /// ended for the agent's own reasons.
    fn provider_failure(&self, stderr: &str, exit_code: Option<i64>) -> Option<ProviderFailure>;

    /// The main model the log names, if it names one.
    fn model(&self) -> Option<&str>;

    /// Token counts of the whole run, summed over models.
    fn token_counts(&self) -> TokenCounts;

    /// The run's cost in USD from `table` on `on` (the agent phase's date): the log's model (else
    /// `fallback_model`, the model the operator asked for) at its row's prices for
    /// [`NativeLog::token_counts`]. `None` when no model is known or it has no price.
    fn priced_cost_usd(
        &self,
        table: &PriceTable,
        on: Option<NaiveDate>,
        fallback_model: Option<&str>,
    ) -> Option<f64> {
        let model = self.model().or(fallback_model)?;
        table
            .cost(model, on, &self.token_counts())
            .ok()
            .map(|c| c.usd)
    }
}

impl NativeLog for claude_code::ClaudeCodeRun {
    fn to_trajectory(&self, opts: &TrajectoryOptions<'_>) -> Trajectory {
        claude_code::ClaudeCodeRun::to_trajectory(self, opts)
    }

    fn provider_failure(&self, stderr: &str, exit_code: Option<i64>) -> Option<ProviderFailure> {
        match claude_code::classify(self, stderr, exit_code) {
            claude_code::Outcome::Provider(p) => Some(p),
            _ => None,
        }
    }

    fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    fn token_counts(&self) -> TokenCounts {
        let (per_model, _) = self.usage_by_model();
        per_model
            .iter()
            .fold(TokenCounts::default(), |acc, (_, u)| acc + u.tokens())
    }

    /// Each model the run used at its own row (Claude Code reports tokens per model), the
    /// fallback model unused.
    fn priced_cost_usd(
        &self,
        table: &PriceTable,
        on: Option<NaiveDate>,
        _fallback_model: Option<&str>,
    ) -> Option<f64> {
        claude_code::ClaudeCodeRun::priced_cost_usd(self, table, on).ok()
    }
}

impl NativeLog for codex::CodexRun {
    fn to_trajectory(&self, opts: &TrajectoryOptions<'_>) -> Trajectory {
        codex::CodexRun::to_trajectory(self, opts)
    }

    fn provider_failure(&self, stderr: &str, _exit_code: Option<i64>) -> Option<ProviderFailure> {
        codex::CodexRun::provider_failure(self, stderr)
    }

    fn model(&self) -> Option<&str> {
        codex::CodexRun::model(self)
    }

    fn token_counts(&self) -> TokenCounts {
        codex::CodexRun::token_counts(self)
    }
}

impl NativeLog for gemini_cli::GeminiCliRun {
    fn to_trajectory(&self, opts: &TrajectoryOptions<'_>) -> Trajectory {
        gemini_cli::GeminiCliRun::to_trajectory(self, opts)
    }

    fn provider_failure(&self, stderr: &str, _exit_code: Option<i64>) -> Option<ProviderFailure> {
        gemini_cli::GeminiCliRun::provider_failure(self, stderr)
    }

    fn model(&self) -> Option<&str> {
        gemini_cli::GeminiCliRun::model(self)
    }

    fn token_counts(&self) -> TokenCounts {
        gemini_cli::GeminiCliRun::token_counts(self)
    }
}
