//! CTRF test reports (`verifier/ctrf.json`, written by `pytest --ctrf`; spec: ctrf.io):
//! `results {tool, summary {tests, passed, failed, skipped, pending, other}, tests [{name, status,
//! message, trace, duration}]}`. Unknown fields are ignored.

use serde::{Deserialize, Serialize};

/// A CTRF report.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Report {
    /// The results.
    pub results: Results,
}

/// `results`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Results {
    /// Counts.
    #[serde(default)]
    pub summary: Summary,
    /// Tests.
    #[serde(default)]
    pub tests: Vec<Test>,
}

/// `results.summary`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    /// All tests.
    #[serde(default)]
    pub tests: u32,
    /// Passed.
    #[serde(default)]
    pub passed: u32,
    /// Failed.
    #[serde(default)]
    pub failed: u32,
    /// Skipped.
    #[serde(default)]
    pub skipped: u32,
}

/// One test.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Test {
    /// Test name.
    pub name: String,
    /// `passed`, `failed`, `skipped`, …
    pub status: String,
    /// Failure message.
    #[serde(default)]
    pub message: Option<String>,
    /// Failure traceback.
    #[serde(default)]
    pub trace: Option<String>,
}

impl Test {
    /// The most telling line of a failure: the first `E   …` line of the trace (pytest's
    /// assertion message), else the message's first line, else the trace's last non-empty line.
    pub fn failure_line(&self) -> Option<String> {
        if let Some(trace) = &self.trace
            && let Some(e) = trace.lines().find(|l| l.trim_start().starts_with("E "))
        {
            return Some(e.trim_start().trim_start_matches('E').trim().to_string());
        }
        if let Some(m) = self
            .message
            .as_deref()
            .and_then(|m| m.lines().find(|l| !l.trim().is_empty()))
        {
            return Some(m.trim().to_string());
        }
        self.trace
            .as_deref()
            .and_then(|t| t.lines().rev().find(|l| !l.trim().is_empty()))
            .map(|l| l.trim().to_string())
    }
}

impl Report {
    /// Reads `ctrf.json` (no symlinks, at most 16 MiB).
    ///
    /// # Errors
    /// A message naming the file when it is unreadable or not CTRF.
    pub fn read(path: &std::path::Path) -> Result<Report, String> {
        let bytes = crate::fs::read_capped(path, 16 * 1024 * 1024)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Failed tests.
    pub fn failed(&self) -> impl Iterator<Item = &Test> {
        self.results
            .tests
            .iter()
            .filter(|t| t.status == "failed" || t.status == "error")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pytest_ctrf_and_finds_the_assertion() {
        let j = r#"{"results":{"tool":{"name":"pytest"},"summary":{"tests":2,"passed":1,"failed":1,"skipped":0,"pending":0,"other":0,"start":1,"stop":2},
          "tests":[{"name":"t::a","status":"passed","duration":0.1},
                   {"name":"t::b","status":"failed","raw_status":"call_failed","trace":"def b():\n>       assert x == 1\nE       AssertionError: Mass mismatch\nE       assert 2 == 1\n\ntest.py:5: AssertionError"}]}}"#;
        let r: Report = serde_json::from_str(j).unwrap();
        assert_eq!(r.results.summary.failed, 1);
        let f: Vec<&Test> = r.failed().collect();
        assert_eq!(
            f[0].failure_line().as_deref(),
            Some("AssertionError: Mass mismatch")
        );
    }
}
