//! The evidence a reward must agree with. A verifier that runs pytest can be made to exit 0
//! having run nothing (code under test that calls `os._exit(0)` on import), so a reward alone is
//! not a verdict: where the task's tests write a report (CTRF by `pytest --ctrf PATH`, JUnit XML
//! by `--junitxml PATH`), a passing reward needs a report with a test passed and none failed or
//! in error, and a report the test command asks for must exist; `reward.json` and `reward.txt`
//! must say the same. What disagrees is a **verdict contradicted** (docs/scoring.md): not a
//! pass, reward 0 for every metric, never sent to learning as a success.

use std::path::Path;

use super::reward::is_pass;

/// Most bytes of a report read.
const MAX_REPORT: u64 = 64 * 1024 * 1024;

/// The kind of a test report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportKind {
    /// CTRF JSON (`pytest --ctrf PATH`).
    Ctrf,
    /// JUnit XML (`pytest --junitxml PATH`).
    Junit,
}

/// What a report counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Tests in all.
    pub tests: u64,
    /// Tests that passed.
    pub passed: u64,
    /// Tests that failed.
    pub failed: u64,
    /// Tests in error (JUnit's `errors`; CTRF's `other`).
    pub errors: u64,
}

/// The reports `test.sh` asks its tests to write, with their paths as written (absolute).
pub fn asked_reports(test_sh: &str) -> Vec<(ReportKind, String)> {
    let words: Vec<&str> = test_sh
        .split(|c: char| c.is_whitespace() || c == ';' || c == '\\')
        .filter(|w| !w.is_empty())
        .collect();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let (flag, inline) = match w.split_once('=') {
            Some((f, v)) => (f, Some(v)),
            None => (*w, None),
        };
        let kind = match flag {
            "--ctrf" => ReportKind::Ctrf,
            "--junitxml" | "--junit-xml" => ReportKind::Junit,
            _ => continue,
        };
        let Some(path) = inline.or_else(|| words.get(i + 1).copied()) else {
            continue;
        };
        let path = path.trim_matches(['"', '\'']);
        if path.starts_with('/') && !out.iter().any(|(_, p)| p == path) {
            out.push((kind, path.to_string()));
        }
    }
    out
}

/// Reads a CTRF report's counts.
///
/// # Errors
/// A message when the file cannot be read or is no CTRF report.
pub fn read_ctrf(path: &Path) -> Result<Counts, String> {
    let text = crate::fs::read_text_capped(path, MAX_REPORT).map_err(|e| e.to_string())?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let s = v
        .pointer("/results/summary")
        .ok_or("no results.summary in it")?;
    let n = |k: &str| s.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
    Ok(Counts {
        tests: n("tests"),
        passed: n("passed"),
        failed: n("failed"),
        errors: n("other"),
    })
}

/// Reads a JUnit XML report's counts (its `<testsuites>` totals, else the sum of its
/// `<testsuite>`s).
///
/// # Errors
/// A message when the file cannot be read or holds no test suite.
pub fn read_junit(path: &Path) -> Result<Counts, String> {
    use quick_xml::events::Event;
    let text = crate::fs::read_text_capped(path, MAX_REPORT).map_err(|e| e.to_string())?;
    let mut reader = quick_xml::Reader::from_str(&text);
    let (mut top, mut sum): (Option<Counts>, Option<Counts>) = (None, None);
    loop {
        match reader.read_event().map_err(|e| e.to_string())? {
            Event::Start(e) | Event::Empty(e) => {
                let name = e.name();
                let name = name.as_ref();
                if name != b"testsuites" && name != b"testsuite" {
                    continue;
                }
                let mut c = Counts::default();
                let mut skipped = 0;
                for a in e.attributes().flatten() {
                    let v: u64 = std::str::from_utf8(&a.value)
                        .ok()
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    match a.key.as_ref() {
                        b"tests" => c.tests = v,
                        b"failures" => c.failed = v,
                        b"errors" => c.errors = v,
                        b"skipped" | b"disabled" => skipped += v,
                        _ => {}
                    }
                }
                c.passed = c.tests.saturating_sub(c.failed + c.errors + skipped);
                if name == b"testsuites" {
                    top.get_or_insert(c);
                } else {
                    let s = sum.get_or_insert_with(Counts::default);
                    s.tests += c.tests;
                    s.passed += c.passed;
                    s.failed += c.failed;
                    s.errors += c.errors;
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    top.filter(|t| t.tests > 0)
        .or(sum)
        .ok_or_else(|| "no test suite in it".into())
}

/// Why the evidence in `verifier_dir` (the trial's copy of `/logs/verifier`) contradicts
/// `reward`, one reason a line; empty when it agrees. `test_sh`: the task's `tests/test.sh`.
/// A reward of 0 is never contradicted here (it passes nothing).
pub fn contradictions(verifier_dir: &Path, test_sh: &str, reward: f64) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(why) = rewards_disagree(verifier_dir) {
        out.push(why);
    }
    if reward <= 0.0 {
        return out;
    }
    let asked = asked_reports(test_sh);
    let mut reports: Vec<(ReportKind, String, bool)> = asked
        .into_iter()
        .filter_map(|(k, p)| {
            let rel = p.strip_prefix("/logs/verifier/")?.to_string();
            Some((k, rel, true))
        })
        .collect();
    // The default report of SkillsBench's tests counts when present, asked for or not.
    if !reports.iter().any(|(_, r, _)| r == "ctrf.json") {
        reports.push((ReportKind::Ctrf, "ctrf.json".into(), false));
    }
    for (kind, rel, asked) in reports {
        let path = verifier_dir.join(&rel);
        let shown = format!("/logs/verifier/{rel}");
        if std::fs::symlink_metadata(&path).is_err() {
            if asked {
                out.push(format!(
                    "reward {reward} but {shown}, which test.sh asks its tests to write, is missing"
                ));
            }
            continue;
        }
        let counts = match kind {
            ReportKind::Ctrf => read_ctrf(&path),
            ReportKind::Junit => read_junit(&path),
        };
        let c = match counts {
            Ok(c) => c,
            Err(e) => {
                out.push(format!("reward {reward} but {shown} cannot be read: {e}"));
                continue;
            }
        };
        if c.tests == 0 {
            out.push(format!("reward {reward} but {shown} counts 0 tests"));
        } else if is_pass(reward) && c.passed == 0 {
            out.push(format!("reward {reward} but {shown} counts no test passed"));
        } else if is_pass(reward) && c.failed + c.errors > 0 {
            out.push(format!(
                "reward {reward} but {shown} counts {} failed and {} in error of {}",
                c.failed, c.errors, c.tests
            ));
        }
    }
    out
}

/// `reward.json` and `reward.txt` both there, and saying different things.
fn rewards_disagree(dir: &Path) -> Option<String> {
    let read = |name: &str| crate::fs::read_text_capped(&dir.join(name), 1 << 20).ok();
    let (json, txt) = (read("reward.json")?, read("reward.txt")?);
    let txt: f64 = txt.trim().parse().ok()?;
    let map: serde_json::Value = serde_json::from_str(&json).ok()?;
    let map: std::collections::BTreeMap<String, f64> = map
        .as_object()?
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
        .collect();
    let json = super::reward::scalar_reward(&map)?;
    ((json - txt).abs() > 1e-9)
        .then(|| format!("reward.json says {json} but reward.txt says {txt}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (n, t) in files {
            std::fs::write(d.path().join(n), t).unwrap();
        }
        d
    }

    fn ctrf(tests: u64, passed: u64, failed: u64) -> String {
        format!(
            r#"{{"results":{{"tool":{{"name":"pytest"}},"summary":{{"tests":{tests},"passed":{passed},"failed":{failed},"skipped":0,"pending":0,"other":0}},"tests":[]}}}}"#
        )
    }

    const SH: &str = "uvx -w pytest-json-ctrf pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA\nif [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; fi";

    #[test]
    fn reports_asked_for_are_read_from_test_sh() {
        assert_eq!(
            asked_reports(SH),
            vec![(ReportKind::Ctrf, "/logs/verifier/ctrf.json".into())]
        );
        assert_eq!(
            asked_reports(
                "pytest --junitxml=/logs/verifier/j.xml --ctrf \"/logs/verifier/c.json\""
            ),
            vec![
                (ReportKind::Junit, "/logs/verifier/j.xml".into()),
                (ReportKind::Ctrf, "/logs/verifier/c.json".into())
            ]
        );
    }

    #[test]
    fn an_honest_pass_agrees() {
        let d = dir_with(&[("ctrf.json", &ctrf(3, 3, 0)), ("reward.txt", "1")]);
        assert_eq!(contradictions(d.path(), SH, 1.0), Vec::<String>::new());
        // A fail contradicts nothing; a partial reward may have failures.
        let d = dir_with(&[("ctrf.json", &ctrf(4, 1, 3))]);
        assert!(contradictions(d.path(), SH, 0.0).is_empty());
        assert!(contradictions(d.path(), SH, 0.25).is_empty());
    }

    #[test]
    fn a_pass_the_evidence_denies_is_contradicted() {
        // pytest exited 0 having run nothing.
        let d = dir_with(&[("ctrf.json", &ctrf(0, 0, 0))]);
        assert!(contradictions(d.path(), SH, 1.0)[0].contains("0 tests"));
        // A failure beside a passing reward.
        let d = dir_with(&[("ctrf.json", &ctrf(3, 2, 1))]);
        assert!(contradictions(d.path(), SH, 1.0)[0].contains("1 failed"));
        // The report asked for is missing.
        let d = dir_with(&[]);
        assert!(contradictions(d.path(), SH, 1.0)[0].contains("missing"));
        // Not asked for and absent: nothing to say.
        assert!(contradictions(d.path(), "bash /tests/run.sh", 1.0).is_empty());
        // reward.json against reward.txt.
        let d = dir_with(&[
            ("ctrf.json", &ctrf(1, 1, 0)),
            ("reward.json", r#"{"reward": 1.0}"#),
            ("reward.txt", "0"),
        ]);
        assert!(contradictions(d.path(), SH, 1.0)[0].contains("reward.txt says 0"));
        // An unreadable report.
        let d = dir_with(&[("ctrf.json", "{not json")]);
        assert!(contradictions(d.path(), SH, 1.0)[0].contains("cannot be read"));
    }

    #[test]
    fn junit_reports_are_counted() {
        let d = dir_with(&[(
            "j.xml",
            r#"<?xml version="1.0"?><testsuites><testsuite name="pytest" errors="1" failures="0" skipped="1" tests="4"><testcase name="a"/></testsuite></testsuites>"#,
        )]);
        let c = read_junit(&d.path().join("j.xml")).unwrap();
        assert_eq!(
            c,
            Counts {
                tests: 4,
                passed: 2,
                failed: 0,
                errors: 1
            }
        );
        let sh = "pytest --junitxml /logs/verifier/j.xml";
        assert!(contradictions(d.path(), sh, 1.0)[0].contains("1 in error"));
    }
}
