//! Real agent harnesses (Claude Code, Codex CLI, Gemini CLI): the pure parts — the dated model
//! price table ([`pricing`]), provider-failure recognition ([`provider`]) and what is read out of
//! each harness's native log (trajectory, tokens, reported cost, provider failures;
//! [`claude_code`], [`codex`], [`gemini_cli`]). No Docker, no network: fetching the CLIs and
//! running them inside trial containers belongs to `runner::agents`.

pub mod claude_code;
pub mod codex;
pub mod convert;
pub mod gemini_cli;
pub mod pricing;
pub mod provider;

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
/// provider verdict and its trajectory.
#[derive(Debug, Clone)]
pub enum NativeRun {
    /// Claude Code's stream-json.
    ClaudeCode(Box<claude_code::ClaudeCodeRun>),
    /// Codex CLI's rollout with its `--json` events.
    Codex(Box<codex::CodexRun>),
    /// Gemini CLI's session file with its stream-json output.
    GeminiCli(Box<gemini_cli::GeminiCliRun>),
}
