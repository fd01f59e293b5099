//! The failure-category classifier against hand labels of real failed SkillsBench trials (Harbor
//! trial folders of published runs in `../shared/skillsbench/failed-trials/` and `published/`,
//! read in place), plus the passing controls, which get no category.
//!
//! Each label was decided by reading the trial's trajectory, test report and result by hand
//! (the reason is beside it), before the classifier ran on it.

use crate::support::common;
use common::shared;
use std::path::{Path, PathBuf};

use skillscope::analysis::failure_category::{FailureCategory, classify_trial_dir};
use skillscope::import::outcome_of;

use FailureCategory::*;

/// (trial folder name, label, why).
const LABELS: [(&str, Option<FailureCategory>, &str); 26] = [
    (
        "paper-anonymizer__hxWkfBs",
        Some(Coherence),
        "2 steps: announced reading the first paper, then stopped",
    ),
    (
        "organize-messy-files__nhsAywA",
        Some(Coherence),
        "announced reading 10 PDFs, then stopped; files not sorted",
    ),
    (
        "exoplanet-detection-period__T2G3MfF",
        Some(Coherence),
        "said it would run its script and stopped; period.txt missing",
    ),
    (
        "pddl-tpp-planning__EPFwLwA",
        Some(Verification),
        "wrote the plans asked for; the test failed on a reference .pkl the instruction never names, its output-existence test passed",
    ),
    (
        "pddl-tpp-planning__jVXo9ih",
        Some(Verification),
        "recovered from ImportError/AttributeError (last run exit 0), wrote the plans; same failing test",
    ),
    (
        "sales-pivot-analysis__KvDpiKB",
        Some(Verification),
        "workbook written; pivot-table assertions fail",
    ),
    (
        "protein-expression-analysis__bA4n6Hx",
        Some(Verification),
        "workbook written; cells not filled (pytest: 3 failed, 3 passed)",
    ),
    (
        "exceltable-in-ppt__kRYfRiM",
        Some(Verification),
        "pptx written; values nan",
    ),
    (
        "3d-scan-calc__35QwY5n",
        Some(Verification),
        "mass report written with a wrong unit (34.65 vs 34648)",
    ),
    (
        "gh-repo-analytics__f8wLXRG",
        Some(Verification),
        "gh failed, agent recovered through the REST API; report numbers wrong",
    ),
    (
        "azure-bgp-oscillation-route-leak__bgFMbF5",
        Some(Verification),
        "report written; 4 of 22 classifications wrong",
    ),
    (
        "quantum-numerical-simulation__4YhuKNR",
        Some(Verification),
        "CSVs written; values mismatch the reference",
    ),
    (
        "dapt-intrusion-detection__Y6Xtg2z",
        Some(Verification),
        "stats written; 3 of 37 counts off",
    ),
    (
        "invoice-fraud-detection__gxByehj",
        Some(Verification),
        "report written; one PO number wrong",
    ),
    (
        "gravitational-wave-detection__KyWeL82",
        Some(Timeout),
        "AgentTimeoutError after 1800 s",
    ),
    (
        "pedestrian-traffic-counting__VKXzC7X",
        Some(Timeout),
        "AgentTimeoutError after 600 s",
    ),
    (
        "seismic-phase-picking__t95YcBn",
        Some(Timeout),
        "AgentTimeoutError after 600 s",
    ),
    (
        "enterprise-information-search__3zSxXfG",
        Some(Unclassified),
        "the verifier log ends in its apt setup: no test ran",
    ),
    (
        "dapt-intrusion-detection__if5WMJh",
        Some(Unclassified),
        "reward 0 but no verifier output was kept",
    ),
    (
        "lab-unit-harmonization__aiuRGCr",
        Some(Unclassified),
        "reward 0.979, no trajectory kept",
    ),
    (
        "setup-fuzzing-py__bU5VPV3",
        Some(Unclassified),
        "reward 0.5, no trajectory kept",
    ),
    ("threejs-to-obj__g2DJHbg", None, "control: passed"),
    ("mario-coin-counting__iEvj3mu", None, "control: passed"),
    ("jax-computing-basics__BMake9F", None, "control: passed"),
    ("offer-letter-generator__hED2SZB", None, "control: passed"),
    ("3d-scan-calc__UvQYGNk", None, "control: passed"),
];

fn find_dir(root: &Path, name: &str, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(root).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n == name) {
                out.push(p);
            } else {
                find_dir(&p, name, out);
            }
        }
    }
}

fn trial_dir(name: &str) -> PathBuf {
    let mut found = Vec::new();
    for root in ["skillsbench/failed-trials", "skillsbench/published"] {
        find_dir(&shared().join(root), name, &mut found);
    }
    found.sort();
    found
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("trial {name} is not in the shared data"))
}

#[test]
fn the_classifier_agrees_with_every_hand_label() {
    let mut disagree = Vec::new();
    let mut failed = 0;
    let mut with_trajectory = 0;
    for (name, label, why) in LABELS {
        let dir = trial_dir(name);
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap())
                .unwrap();
        let reward = r["verifier_result"]["rewards"]["reward"].as_f64();
        let exception = r["exception_info"]["exception_type"].as_str();
        let outcome = outcome_of(exception, reward);
        let task = r["task_name"].as_str().unwrap();
        let instruction = std::fs::read_to_string(
            shared().join(format!("skillsbench/tasks/{task}/instruction.md")),
        )
        .ok();
        let got = classify_trial_dir(outcome, None, &dir, instruction.as_deref());
        if label.is_some() {
            failed += 1;
            with_trajectory += usize::from(dir.join("agent/trajectory.json").exists());
        }
        if got != label {
            disagree.push(format!(
                "{name}: labelled {label:?} ({why}), classified {got:?}"
            ));
        }
    }
    assert!(disagree.is_empty(), "{}", disagree.join("\n"));
    assert_eq!((failed, with_trajectory), (21, 19));
}
