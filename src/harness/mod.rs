//! Real agent harnesses (Claude Code, Codex CLI, Gemini CLI): the pure parts — the dated model
//! price table ([`pricing`]) and what is read out of each harness's native log (trajectory,
//! tokens, reported cost, provider failures; [`claude_code`]). No Docker, no network: running the
//! CLIs inside trial containers belongs to `runner`.

pub mod claude_code;
pub mod pricing;
