//! The evaluation plan's four failure categories (`evaluation-plan.md`, Phase 4: "compare
//! failure categories (timeout, execution, coherence, verification) between rounds"), decided
//! deterministically for every judged failure from its outcome, trajectory and test report.
//!
//! Rules, first match wins (docs/scoring.md's "Failure categories" section says the same):
//!
//! 1. Not a judged failure — a pass, or an outcome without a verdict (build, runtime, provider
//!    errors, no reward, not run): no category; infrastructure stays apart.
//! 2. **timeout** — the outcome is an agent or verifier timeout.
//! 3. **execution** — the agent process crashed (a non-zero agent exit code).
//! 4. No trajectory: **unclassified** (the outcome proves nothing more).
//! 5. **coherence** — the trajectory repeats one identical tool call 3 or more times in a row.
//! 6. **execution** — the agent's last tool call that returned failed ([`looks_failed`]: a
//!    traceback, a non-zero exit code, an `Error:` line, a missing file or command) and nothing
//!    succeeded after it: its own commands failed and it did not recover.
//! 7. **coherence** — the agent stopped without doing what was asked: it made no tool call at
//!    all, or only reading ones (nothing could change the workspace), or its last step announces
//!    more work ("I will …", "Let me …", a call left without a result) instead of concluding.
//! 8. No test report (neither `ctrf.json` nor a pytest summary in `test-stdout.txt`):
//!    **unclassified** — nothing shows what the verifier found.
//! 9. **coherence** — the last message claims success or asks a question while a failing test
//!    reports a required output missing (a file named in the instruction that the test could not
//!    find).
//! 10. **verification** — otherwise: outputs were produced and failed the verifier's assertions.
//!
//! Hand labels of 21 real failed trials (`../shared/skillsbench/failed-trials/` and
//! `published/`) are the test fixtures (`tests/offline/failure_categories.rs`); the classifier agrees with
//! every one.

use std::path::Path;

use crate::domain::Outcome;
use crate::harbor::atif::{Step, Trajectory, looks_failed};
use crate::harbor::ctrf;

pub use crate::domain::FailureCategory;

/// What the verifier's test report says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TestReport {
    /// Tests that passed.
    pub passed: u32,
    /// Tests that failed (or errored).
    pub failed: u32,
    /// Texts of the failures (messages, `E` lines, `FAILED` summary lines).
    pub failures: Vec<String>,
}

impl TestReport {
    /// The report of a verifier folder: `ctrf.json` when readable, else the pytest summary of
    /// `test-stdout.txt` (its `N failed, M passed` line, `FAILED` and `E` lines); `None` when
    /// neither shows a test result.
    pub fn read(verifier_dir: &Path) -> Option<TestReport> {
        if let Ok(r) = ctrf::Report::read(&verifier_dir.join("ctrf.json")) {
            let s = &r.results.summary;
            return Some(TestReport {
                passed: s.passed,
                failed: s.failed.max(r.failed().count() as u32),
                failures: r
                    .failed()
                    .map(|t| {
                        [t.message.as_deref(), t.trace.as_deref()]
                            .into_iter()
                            .flatten()
                            .collect::<Vec<_>>()
                            .join("\n")
                    })
                    .collect(),
            });
        }
        let text =
            crate::fs::read_capped(&verifier_dir.join("test-stdout.txt"), 8 * 1024 * 1024).ok()?;
        TestReport::from_pytest(&String::from_utf8_lossy(&text))
    }

    /// The pytest summary of a verifier log; `None` without a `N passed` / `N failed` summary
    /// line.
    pub fn from_pytest(text: &str) -> Option<TestReport> {
        let mut report: Option<TestReport> = None;
        let mut failures = Vec::new();
        for line in text.lines() {
            let l = line.trim();
            if l.starts_with("FAILED ") || l.starts_with("ERROR ") || l.starts_with("E ") {
                failures.push(l.to_string());
            }
            if l.starts_with('=') && (l.contains(" passed") || l.contains(" failed")) {
                let mut r = TestReport::default();
                let words: Vec<&str> = l
                    .trim_matches('=')
                    .split([',', ' '])
                    .filter(|w| !w.is_empty())
                    .collect();
                for w in words.windows(2) {
                    let n = w[0].parse::<u32>().unwrap_or(0);
                    match w[1] {
                        "passed" => r.passed += n,
                        "failed" | "error" | "errors" => r.failed += n,
                        _ => {}
                    }
                }
                report = Some(r);
            }
        }
        report.map(|r| TestReport { failures, ..r })
    }
}

/// What a trial left: its outcome, trajectory and test report.
#[derive(Debug, Clone, Copy)]
pub struct Evidence<'a> {
    /// The outcome.
    pub outcome: Outcome,
    /// The agent process's exit code, when known.
    pub agent_exit_code: Option<i64>,
    /// The trajectory, when one was read.
    pub trajectory: Option<&'a Trajectory>,
    /// The verifier's test report, when it left one.
    pub tests: Option<&'a TestReport>,
    /// The task instruction; the trajectory's first user message stands in when `None`.
    pub instruction: Option<&'a str>,
}

/// Consecutive identical tool calls that make a loop.
pub const REPEATS: usize = 3;

/// Tool names that only read (Gemini CLI, Claude Code, Codex and Harbor's own names).
const READ_TOOLS: [&str; 16] = [
    "read_file",
    "read_many_files",
    "list_directory",
    "glob",
    "search_file_content",
    "google_web_search",
    "web_fetch",
    "activate_skill",
    "Read",
    "Glob",
    "Grep",
    "LS",
    "WebFetch",
    "WebSearch",
    "Skill",
    "TodoWrite",
];

/// The category of a trial (see the module doc); `None` when it is not a judged failure.
pub fn classify(e: &Evidence<'_>) -> Option<FailureCategory> {
    use FailureCategory::*;
    if !FailureCategory::applies_to(e.outcome) {
        return None;
    }
    if matches!(e.outcome, Outcome::AgentTimeout | Outcome::VerifierTimeout) {
        return Some(Timeout);
    }
    if e.agent_exit_code.is_some_and(|c| c != 0) {
        return Some(Execution);
    }
    let Some(t) = e.trajectory else {
        return Some(Unclassified);
    };
    if repeats_itself(t) {
        return Some(Coherence);
    }
    if ends_on_a_failure(t) {
        return Some(Execution);
    }
    let agent_steps: Vec<&Step> = t.steps.iter().filter(|s| s.source == "agent").collect();
    let calls: Vec<&str> = agent_steps
        .iter()
        .flat_map(|s| s.calls().iter().map(|c| c.function_name.as_str()))
        .collect();
    let last = agent_steps.last();
    let last_message = last.map(|s| s.message_text()).unwrap_or_default();
    let pending = last.is_some_and(|s| s.calls().len() > s.results().len());
    if calls.iter().all(|c| READ_TOOLS.contains(c))
        || (!claims_success(&last_message) && (announces_more(&last_message) || pending))
    {
        return Some(Coherence);
    }
    let Some(tests) = e.tests else {
        return Some(Unclassified);
    };
    let instruction = e
        .instruction
        .map(str::to_string)
        .or_else(|| {
            t.steps
                .iter()
                .find(|s| s.source == "user")
                .map(Step::message_text)
        })
        .unwrap_or_default();
    if (claims_success(&last_message) || asks_question(&last_message))
        && misses_required_output(tests, &instruction)
    {
        return Some(Coherence);
    }
    Some(Verification)
}

/// [`classify`] from the files of a Harbor trial folder: `agent/trajectory.json` (ATIF, or a
/// Terminus episode list), `verifier/ctrf.json` or `verifier/test-stdout.txt`.
pub fn classify_trial_dir(
    outcome: Outcome,
    agent_exit_code: Option<i64>,
    trial_dir: &Path,
    instruction: Option<&str>,
) -> Option<FailureCategory> {
    if !FailureCategory::applies_to(outcome) {
        return None;
    }
    let trajectory = read_any_trajectory(&trial_dir.join("agent/trajectory.json"));
    let tests = TestReport::read(&trial_dir.join("verifier"));
    classify(&Evidence {
        outcome,
        agent_exit_code,
        trajectory: trajectory.as_ref(),
        tests: tests.as_ref(),
        instruction,
    })
}

/// Reads an ATIF trajectory, or a Terminus-2 episode list (`[{episode, prompt, response}]`,
/// converted by [`crate::harbor::atif::from_terminus`]); `None` when it is neither.
pub fn read_any_trajectory(path: &Path) -> Option<Trajectory> {
    let bytes = crate::fs::read_capped(path, 64 * 1024 * 1024).ok()?;
    Trajectory::parse(&bytes, &path.display().to_string())
        .ok()
        .or_else(|| crate::harbor::atif::from_terminus(&bytes))
}

/// The same tool call (name and arguments) [`REPEATS`] or more times in a row.
fn repeats_itself(t: &Trajectory) -> bool {
    let calls: Vec<(&str, String)> = t
        .steps
        .iter()
        .filter(|s| s.source == "agent")
        .flat_map(|s| s.calls())
        .map(|c| (c.function_name.as_str(), c.arguments.to_string()))
        .collect();
    calls.windows(REPEATS).any(|w| w.iter().all(|c| *c == w[0]))
}

/// The last tool call that returned failed and no later one succeeded.
fn ends_on_a_failure(t: &Trajectory) -> bool {
    t.steps
        .iter()
        .flat_map(|s| s.results())
        .last()
        .is_some_and(|r| looks_failed(&r.text()))
}

/// The message concludes: it reports the work done.
fn claims_success(msg: &str) -> bool {
    let m = msg.to_lowercase();
    [
        "task_complete: true",
        "has been saved",
        "have been saved",
        "has been generated",
        "have been generated",
        "has been created",
        "have been created",
        "has been completed",
        "have been completed",
        "successfully",
        "i have completed",
        "i have finished",
        "i've completed",
        "is complete",
        "are complete",
        "task is done",
        "saved to",
        "saved as",
        "saved in",
        "written to",
        "compiled into",
    ]
    .iter()
    .any(|p| m.contains(p))
}

/// The message announces further work instead of concluding.
fn announces_more(msg: &str) -> bool {
    let m = msg.trim().to_lowercase();
    [
        "i will",
        "i'll",
        "let me",
        "i am going to",
        "i'm going to",
        "next, i",
        "now i will",
    ]
    .iter()
    .any(|p| m.starts_with(p) || m.contains(&format!(". {p}")))
}

/// The message's last line asks the user something.
fn asks_question(msg: &str) -> bool {
    msg.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.trim_end().ends_with('?'))
}

/// A failing test reports a file missing whose name the instruction mentions.
fn misses_required_output(tests: &TestReport, instruction: &str) -> bool {
    const MISSING: [&str; 5] = [
        "not found",
        "no such file",
        "does not exist",
        "filenotfounderror",
        "missing",
    ];
    tests.failures.iter().any(|f| {
        f.lines().any(|l| {
            let lower = l.to_lowercase();
            MISSING.iter().any(|m| lower.contains(m))
                && file_names(l)
                    .iter()
                    .any(|n| instruction.contains(n.as_str()))
        })
    })
}

/// File names (with an extension) mentioned in a line, as their last path component.
fn file_names(line: &str) -> Vec<String> {
    line.split(|c: char| c.is_whitespace() || "'\"`,;()[]{}<>".contains(c))
        .map(|w| w.trim_end_matches([':', '.']))
        .filter_map(|w| w.rsplit('/').next())
        .filter(|w| {
            w.rsplit_once('.').is_some_and(|(stem, ext)| {
                !stem.is_empty()
                    && (1..=5).contains(&ext.len())
                    && ext.chars().all(|c| c.is_ascii_alphanumeric())
                    && ext.chars().any(|c| c.is_ascii_alphabetic())
            })
        })
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytest_summaries_are_read() {
        let r = TestReport::from_pytest(
            "FAILED ../tests/test_outputs.py::test_a - AssertionError: Period file not found. Expected /root/period.txt\n========= 1 failed, 3 passed, 2 skipped in 1.2s =========",
        )
        .unwrap();
        assert_eq!((r.passed, r.failed), (3, 1));
        assert!(r.failures[0].contains("period.txt"));
        assert!(TestReport::from_pytest("apt-get install curl\nSetting up curl").is_none());
    }

    #[test]
    fn file_names_are_found() {
        assert_eq!(
            file_names("Expected /root/period.txt, got nothing"),
            vec!["period.txt"]
        );
        assert_eq!(
            file_names("No such file or directory: 'task01.pkl'"),
            vec!["task01.pkl"]
        );
        assert!(file_names("expected 34648.04, got 34.65").is_empty());
    }

    #[test]
    fn messages_are_read() {
        assert!(announces_more("I will execute the script and verify."));
        assert!(!announces_more("The report was saved. All done."));
        assert!(claims_success(
            "The results have been saved to `/root/a.csv`."
        ));
        assert!(asks_question("Done.\nShould I also plot it?"));
    }
}
