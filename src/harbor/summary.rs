//! Trajectory summaries for the learning phase: a bounded, deterministic text (no LLM) that says
//! what the agent attempted, which commands and tools it ran, where it failed, and what the
//! verifier concluded. Every line drawn from the trajectory carries its step ids (`[s3]`,
//! `[s6-s9]`), so a learned skill can be traced back to what happened.
//!
//! Sections, in order: verdict; goal (the user instruction, shortened); approach (the agent's own
//! words, first sentence per step); actions (tool calls — the first and last ones when there are
//! too many); errors (observations that look like failures, their last lines); verifier (failing
//! tests with their assertion, or the end of the test output); final message. When the text would
//! exceed the limit, the middle of the action list goes first, then approach, then errors.

use super::atif::{Step, Trajectory, looks_failed};
use super::ctrf::Report;
use crate::domain::Outcome;

/// A line of a summary and the steps it quotes.
type Line = (String, Vec<u64>);
/// A named section of lines.
type Section = (&'static str, Vec<Line>);
/// The sections, in order.
type Sections = Vec<Section>;

/// Default size limit, bytes.
pub const DEFAULT_LIMIT: usize = 8 * 1024;

/// What the summary is made from.
#[derive(Debug, Clone, Copy)]
pub struct SummaryInput<'a> {
    /// The trajectory, when one exists.
    pub trajectory: Option<&'a Trajectory>,
    /// The task instruction (used when the trajectory has no user step).
    pub instruction: Option<&'a str>,
    /// CTRF test report.
    pub ctrf: Option<&'a Report>,
    /// Verifier output (`test-stdout.txt`).
    pub test_output: Option<&'a str>,
    /// The trial's outcome.
    pub outcome: Option<Outcome>,
    /// The trial's reward.
    pub reward: Option<f64>,
}

/// One section of a summary and the steps it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// Section name.
    pub section: &'static str,
    /// Steps quoted.
    pub step_ids: Vec<u64>,
}

/// A summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The text (at most the limit, in bytes).
    pub text: String,
    /// Where its parts came from.
    pub parts: Vec<Part>,
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    clip(&flat, max)
}

fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max.saturating_sub(3);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

fn first_sentence(s: &str) -> &str {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|(i, c)| {
            matches!(c, '.' | '!' | '?' | '\n') && s[i + c.len_utf8()..].starts_with([' ', '\n'])
        })
        .map(|(i, c)| i + c.len_utf8())
        .unwrap_or(s.len());
    &s[..end]
}

fn steps_tag(ids: &[u64]) -> String {
    match ids {
        [] => String::new(),
        [one] => format!("[s{one}]"),
        [first, .., last] if ids.windows(2).all(|w| w[1] == w[0] + 1) => {
            format!("[s{first}-s{last}]")
        }
        _ => format!(
            "[{}]",
            ids.iter()
                .map(|i| format!("s{i}"))
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

/// The most informative lines of a failing output: error-looking lines, else the last lines.
fn error_lines(text: &str, n: usize) -> Vec<String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let errs: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| {
            l.contains("Error")
                || l.contains("error:")
                || l.contains("not found")
                || l.starts_with("E ")
                || l.contains("FAILED")
                || l.starts_with("Exit Code:")
        })
        .filter(|l| !l.ends_with("(none)"))
        .collect();
    let pick = if errs.is_empty() { &lines } else { &errs };
    pick[pick.len().saturating_sub(n)..]
        .iter()
        .map(|l| one_line(l, 200))
        .collect()
}

/// Builds the summary, at most `limit` bytes.
pub fn summarize(input: &SummaryInput, limit: usize) -> Summary {
    let mut sections: Sections = Vec::new();
    let steps: &[Step] = input.trajectory.map(|t| t.steps.as_slice()).unwrap_or(&[]);

    // Verdict.
    let tests = input
        .ctrf
        .map(|r| &r.results.summary)
        .filter(|s| s.tests > 0);
    let verdict = format!(
        "Outcome: {}{}{}",
        input.outcome.map(|o| o.as_str()).unwrap_or("unknown"),
        input
            .reward
            .map(|r| format!(", reward {r}"))
            .unwrap_or_default(),
        tests
            .map(|s| format!(", {}/{} tests passed", s.passed, s.tests))
            .unwrap_or_default()
    );
    sections.push(("verdict", vec![(verdict, Vec::new())]));

    // Goal.
    let goal = steps
        .iter()
        .find(|s| s.source == "user")
        .map(|s| (s.message_text(), vec![s.step_id]))
        .or_else(|| input.instruction.map(|i| (i.to_string(), Vec::new())));
    if let Some((text, ids)) = goal {
        sections.push((
            "goal",
            vec![(format!("Goal: {}", one_line(&text, 400)), ids)],
        ));
    }

    let agent: Vec<&Step> = steps.iter().filter(|s| s.source == "agent").collect();
    // Approach: the agent's first sentence per step, de-duplicated, in order.
    let mut approach = Vec::new();
    for s in &agent {
        let m = s.message_text();
        let first = first_sentence(&m);
        if first.len() >= 12
            && !approach
                .iter()
                .any(|(t, _): &(String, Vec<u64>)| t.ends_with(first))
        {
            approach.push((
                format!("{} {}", steps_tag(&[s.step_id]), one_line(first, 220)),
                vec![s.step_id],
            ));
        }
    }
    if !approach.is_empty() {
        sections.push(("approach", approach));
    }

    // Actions.
    let mut actions = Vec::new();
    for s in &agent {
        for c in s.calls() {
            actions.push((
                format!(
                    "{} {}: {}",
                    steps_tag(&[s.step_id]),
                    c.function_name,
                    one_line(&c.brief(), 160)
                ),
                vec![s.step_id],
            ));
        }
    }
    let n_calls = actions.len();
    if !actions.is_empty() {
        sections.push(("actions", actions));
    }

    // Errors seen in observations (the last few).
    let mut errors = Vec::new();
    for s in &agent {
        for r in s.results() {
            let text = r.text();
            if looks_failed(&text) {
                let lines = error_lines(&text, 2).join(" | ");
                errors.push((
                    format!("{} {}", steps_tag(&[s.step_id]), lines),
                    vec![s.step_id],
                ));
            }
        }
    }
    let errors: Vec<_> = errors.split_off(errors.len().saturating_sub(4));
    if !errors.is_empty() {
        sections.push(("errors", errors));
    }

    // Verifier.
    let mut verifier = Vec::new();
    if let Some(r) = input.ctrf {
        for t in r.failed().take(6) {
            verifier.push((
                format!(
                    "FAILED {}: {}",
                    t.name,
                    one_line(&t.failure_line().unwrap_or_default(), 220)
                ),
                Vec::new(),
            ));
        }
    }
    if verifier.is_empty()
        && let Some(out) = input.test_output
        && input.outcome != Some(Outcome::Pass)
    {
        for l in error_lines(out, 4) {
            verifier.push((format!("test output: {l}"), Vec::new()));
        }
    }
    if !verifier.is_empty() {
        sections.push(("verifier", verifier));
    }

    // Final message.
    if let Some(last) = agent
        .iter()
        .rev()
        .find(|s| !s.message_text().trim().is_empty())
    {
        sections.push((
            "final",
            vec![(
                format!(
                    "Final message {}: {}",
                    steps_tag(&[last.step_id]),
                    one_line(&last.message_text(), 500)
                ),
                vec![last.step_id],
            )],
        ));
    }

    render(sections, n_calls, limit)
}

fn header(section: &str, n_calls: usize) -> Option<String> {
    match section {
        "approach" => Some("Approach:".into()),
        "actions" => Some(format!(
            "Actions ({}):",
            crate::format::count(n_calls, "tool call", "tool calls")
        )),
        "errors" => Some("Errors seen:".into()),
        "verifier" => Some("Verifier:".into()),
        _ => None,
    }
}

fn text_of(sections: &[Section], n_calls: usize) -> String {
    let mut out = String::new();
    for (name, lines) in sections {
        if lines.is_empty() {
            continue;
        }
        if let Some(h) = header(name, n_calls) {
            out.push_str(&h);
            out.push('\n');
        }
        let indent = if header(name, n_calls).is_some() {
            "  "
        } else {
            ""
        };
        for (l, _) in lines {
            out.push_str(indent);
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

/// Keeps the first and last `keep` lines of a list, with one line standing for the rest.
fn elide(lines: &[Line], keep: usize, what: &str) -> Vec<Line> {
    if lines.len() <= 2 * keep + 1 {
        return lines.to_vec();
    }
    let mut ids: Vec<u64> = lines[keep..lines.len() - keep]
        .iter()
        .flat_map(|(_, i)| i.iter().copied())
        .collect();
    ids.sort();
    ids.dedup();
    let mut out = lines[..keep].to_vec();
    out.push((
        format!(
            "... {} more {what} in steps {}",
            lines.len() - 2 * keep,
            steps_tag(&ids)
        ),
        ids,
    ));
    out.extend_from_slice(&lines[lines.len() - keep..]);
    out
}

/// Shortens sections until the text fits: the middle of the actions first, then of the approach,
/// then of the errors; as a last resort the text is clipped.
fn render(sections: Sections, n_calls: usize, limit: usize) -> Summary {
    let fits = |s: &Sections| text_of(s, n_calls).len() <= limit;
    let mut current = sections.clone();
    for (name, what) in [
        ("actions", "calls"),
        ("approach", "steps"),
        ("errors", "errors"),
    ] {
        if fits(&current) {
            break;
        }
        let Some(full) = sections
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, l)| l.clone())
        else {
            continue;
        };
        let mut keep = full.len() / 2;
        loop {
            let shortened = elide(&full, keep, what);
            if let Some((_, lines)) = current.iter_mut().find(|(n, _)| *n == name) {
                *lines = shortened;
            }
            if fits(&current) || keep == 1 {
                break;
            }
            keep = (keep * 3 / 4).max(1);
        }
    }
    let text = text_of(&current, n_calls);
    Summary {
        text: if text.len() > limit {
            clip(&text, limit)
        } else {
            text
        },
        parts: parts_of(&current),
    }
}

fn parts_of(sections: &[Section]) -> Vec<Part> {
    sections
        .iter()
        .map(|(name, lines)| {
            let mut ids: Vec<u64> = lines.iter().flat_map(|(_, i)| i.iter().copied()).collect();
            ids.sort();
            ids.dedup();
            Part {
                section: name,
                step_ids: ids,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traj(n_calls: usize) -> Trajectory {
        let mut steps = vec![
            serde_json::json!({"step_id": 1, "source": "user", "message": "Compute the mass of the part in /root/scan.stl and write /root/mass.json."}),
        ];
        for i in 0..n_calls {
            let id = i as u64 + 2;
            let failed = i == 1;
            steps.push(serde_json::json!({
                "step_id": id, "source": "agent",
                "message": format!("I will run check number {i}. Then more words."),
                "tool_calls": [{"tool_call_id": format!("c{i}"), "function_name": "run_shell_command", "arguments": {"command": format!("python3 step{i}.py")}}],
                "observation": {"results": [{"source_call_id": format!("c{i}"), "content":
                    if failed { "Output: Traceback (most recent call last):\n  File x\nValueError: bad mesh\nExit Code: 1".to_string() } else { "Output: ok\nExit Code: 0".to_string() }}]}
            }));
        }
        steps.push(serde_json::json!({"step_id": n_calls as u64 + 2, "source": "agent", "message": "The mass is 34.65 g, saved to /root/mass.json."}));
        serde_json::from_value(serde_json::json!({"schema_version": "ATIF-v1.2", "agent": {"name": "a", "version": "1"}, "steps": steps})).unwrap()
    }

    fn ctrf() -> Report {
        serde_json::from_str(r#"{"results":{"summary":{"tests":2,"passed":1,"failed":1},"tests":[
            {"name":"test_mass","status":"failed","trace":"E   AssertionError: Mass mismatch. Expected ~34.2"}]}}"#).unwrap()
    }

    #[test]
    fn says_what_was_tried_where_it_failed_and_the_verdict() {
        let t = traj(3);
        let c = ctrf();
        let s = summarize(
            &SummaryInput {
                trajectory: Some(&t),
                instruction: None,
                ctrf: Some(&c),
                test_output: None,
                outcome: Some(Outcome::Fail),
                reward: Some(0.0),
            },
            DEFAULT_LIMIT,
        );
        let t = &s.text;
        assert!(
            t.starts_with("Outcome: fail, reward 0, 1/2 tests passed\n"),
            "{t}"
        );
        assert!(t.contains("Goal: Compute the mass"), "{t}");
        assert!(
            t.contains("[s3] run_shell_command: python3 step1.py"),
            "{t}"
        );
        assert!(
            t.contains("Errors seen:\n  [s3] ValueError: bad mesh | Exit Code: 1"),
            "{t}"
        );
        assert!(
            t.contains("FAILED test_mass: AssertionError: Mass mismatch. Expected ~34.2"),
            "{t}"
        );
        assert!(t.contains("Final message [s5]: The mass is 34.65 g"), "{t}");
        assert_eq!(
            s.parts
                .iter()
                .find(|p| p.section == "errors")
                .unwrap()
                .step_ids,
            vec![3]
        );
        // Deterministic.
        let again = summarize(
            &SummaryInput {
                trajectory: Some(&traj(3)),
                instruction: None,
                ctrf: Some(&c),
                test_output: None,
                outcome: Some(Outcome::Fail),
                reward: Some(0.0),
            },
            DEFAULT_LIMIT,
        );
        assert_eq!(again, s);
    }

    #[test]
    fn long_trajectories_fit_the_limit_and_say_what_was_left_out() {
        let t = traj(400);
        let s = summarize(
            &SummaryInput {
                trajectory: Some(&t),
                instruction: None,
                ctrf: None,
                test_output: None,
                outcome: Some(Outcome::Pass),
                reward: Some(1.0),
            },
            4096,
        );
        assert!(s.text.len() <= 4096, "{}", s.text.len());
        assert!(s.text.contains("more calls in steps"), "{}", s.text);
        assert!(
            s.text.contains("[s2] run_shell_command"),
            "first calls stay"
        );
        assert!(s.text.contains("Final message"), "the end stays");
    }

    #[test]
    fn works_without_a_trajectory() {
        let s = summarize(
            &SummaryInput {
                trajectory: None,
                instruction: Some("Do the thing."),
                ctrf: None,
                test_output: Some("collected 2\nFAILED test_x - assert 1 == 2\n"),
                outcome: Some(Outcome::Fail),
                reward: Some(0.0),
            },
            DEFAULT_LIMIT,
        );
        assert!(s.text.contains("Goal: Do the thing."));
        assert!(s.text.contains("test output: FAILED test_x"), "{}", s.text);
    }
}
