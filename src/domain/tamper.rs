//! Integrity flags of one attempt, as the store, `status`, the dashboard and the report carry
//! them: **tampered** — what its agent changed where a task's work never goes (the verifier's
//! folders, the skill folders, shells, interpreters and libraries; the rules are in
//! docs/scoring.md and `runner::tamper`; the whole record is the trial's `agent/tamper.json`) —
//! or **verdict contradicted** — its verifier's evidence disagrees with its reward (a test report
//! with no test or a failure beside a passing reward, a report the test command asked for and
//! that is missing, `reward.json` and `reward.txt` that disagree).
//!
//! A flagged attempt is judged a failure of the agent: outcome `fail`, reward 0, whatever its
//! verifier said (kept for audit in its rewards as `verifier.<key>`), and it is never sent to
//! learning as a success ([`TAMPER_RULE`], [`CONTRADICTION_RULE`]).

use serde::{Deserialize, Serialize};

/// How many flagged paths the summary keeps (the trial's `agent/tamper.json` has them all).
pub const SUMMARY_PATHS: usize = 10;

/// The scoring rule for flagged attempts, as the report states it.
pub const TAMPER_RULE: &str = "A trial whose agent changed what a task's work never touches (the verifier's folders, the skill folders, shells, interpreters, libraries; docs/scoring.md) is flagged and judged a failure of the agent: outcome fail, reward 0 whatever its verifier said (the verifier's own reward is kept in its rewards as verifier.<key>), counted as 0 in every pass rate, and never sent to learning as a success.";

/// The scoring rule for attempts whose verdict the evidence contradicts, as the report states it.
pub const CONTRADICTION_RULE: &str = "A trial whose verifier's evidence contradicts its reward (a test report with no test, a failure or an error beside a passing reward; a report its test command asks for that is missing; reward.json and reward.txt that disagree; docs/scoring.md) is recorded as verdict contradicted: outcome fail, reward 0 whatever its verifier said (kept in its rewards as verifier.<key>), counted as 0 in every pass rate, and never sent to learning as a success.";

/// Which flag an attempt carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlagKind {
    /// Its agent changed what a task's work never touches.
    #[default]
    Tampered,
    /// Its verifier's evidence contradicts its reward.
    Contradicted,
}

impl FlagKind {
    /// `tampered` or `verdict contradicted`.
    pub fn label(self) -> &'static str {
        match self {
            FlagKind::Tampered => "tampered",
            FlagKind::Contradicted => "verdict contradicted",
        }
    }
}

/// The summary of an attempt's flag (`trials.tamper`, JSON).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TamperFlag {
    /// Which flag (rows stored before contradictions existed read as tampered).
    #[serde(default)]
    pub kind: FlagKind,
    /// How many changes (or contradictions) were flagged.
    pub flagged: usize,
    /// The first [`SUMMARY_PATHS`] of them, `"<kind> <path>"` (`C` changed, `A` added, `D`
    /// deleted), as the container named them (untrusted: sanitize before drawing); for a
    /// contradiction, the evidence that disagrees.
    pub paths: Vec<String>,
}

impl TamperFlag {
    /// A verdict contradicted, for `reasons` (one line each).
    pub fn contradicted(reasons: Vec<String>) -> TamperFlag {
        TamperFlag {
            kind: FlagKind::Contradicted,
            flagged: reasons.len(),
            paths: reasons.into_iter().take(SUMMARY_PATHS).collect(),
        }
    }
}

impl TamperFlag {
    /// The flag of a stored value; `None` for anything else.
    pub fn of_json(v: &serde_json::Value) -> Option<TamperFlag> {
        serde_json::from_value(v.clone()).ok()
    }

    /// One line: the paths (each sanitized on its own), and how many more.
    pub fn describe(&self) -> String {
        let more = self.flagged.saturating_sub(self.paths.len());
        let paths: Vec<String> = self
            .paths
            .iter()
            .map(|p| crate::sanitize::one_line(p))
            .collect();
        let mut s = paths.join(", ");
        if more > 0 {
            s.push_str(&format!(" (+{more} more)"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_its_paths_and_how_many_more() {
        let f = TamperFlag {
            kind: FlagKind::Tampered,
            flagged: 12,
            paths: vec!["C /bin/sh".into(), "A /tests/test.sh".into()],
        };
        assert_eq!(f.describe(), "C /bin/sh, A /tests/test.sh (+10 more)");
        let back = TamperFlag::of_json(&serde_json::to_value(&f).unwrap()).unwrap();
        assert_eq!(back, f);
        assert_eq!(TamperFlag::of_json(&serde_json::json!([1])), None);
        // A row stored before contradictions existed reads as tampered.
        let old = serde_json::json!({"flagged": 1, "paths": ["C /bin/sh"]});
        assert_eq!(TamperFlag::of_json(&old).unwrap().kind, FlagKind::Tampered);
    }
}
