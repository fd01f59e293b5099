//! `skillscope replay` over the published SkillsBench results registry, imported: every one of
//! its 18 configurations is replayed under the 3-stage O'Brien–Fleming design with non-binding
//! futility. The fixed design's z of each configuration is recomputed here from the raw file
//! (per task d = (score with − score without)/100, z = mean·√n/sd) without the crate's code; the
//! summary must show the sequential verdict agreeing with every decisive fixed verdict at seed 1
//! and a mean share of trials used ≤ 0.6 (the bar), and the null simulation must keep
//! the type-I error at most 5 %.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;
use skillscope::import::{ImportOptions, import};
use skillscope::skillsbench::Catalog;
use skillscope::store::Store;

use crate::support::common::shared;

fn registry_path() -> PathBuf {
    shared().join("skillsbench/published/website-data/results-registry.json")
}

/// Per config label (`Harness (Model)`), the fixed design's paired z over all trials.
fn fixed_z_from_raw() -> BTreeMap<String, f64> {
    let rows: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(registry_path()).unwrap()).unwrap();
    let mut by: BTreeMap<(String, String), [Option<f64>; 2]> = BTreeMap::new();
    for r in &rows {
        let side = usize::from(r["condition"] == "With Skills");
        by.entry((
            r["model"].as_str().unwrap().to_string(),
            r["task"].as_str().unwrap().to_string(),
        ))
        .or_default()[side] = r["score"].as_f64();
    }
    let mut diffs: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for ((model, _), [a, b]) in by {
        if let (Some(a), Some(b)) = (a, b) {
            diffs.entry(model).or_default().push((b - a) / 100.0);
        }
    }
    diffs
        .into_iter()
        .map(|(m, d)| {
            let n = d.len() as f64;
            let mean = d.iter().sum::<f64>() / n;
            let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
            (m, mean / (var / n).sqrt())
        })
        .collect()
}

#[test]
fn replays_the_published_registry() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    {
        let store = Store::open(&db).unwrap();
        import(
            &store,
            &ImportOptions {
                roots: vec![registry_path()],
                condition: None,
                run: None,
                catalog: Catalog::shipped(),
                batch: 64,
            },
        )
        .unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .args(["replay", "--seed", "1", "--simulate", "200", "--db"])
        .arg(&db)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // One replay per configuration, each with its fixed z as recomputed from the raw file.
    let raw = fixed_z_from_raw();
    assert_eq!(raw.len(), 18, "{raw:?}");
    let fixed: Vec<f64> = text
        .lines()
        .filter_map(|l| l.split("fixed design (3 trials): ").nth(1))
        .map(|rest| {
            let z = rest
                .split("; z ")
                .nth(1)
                .unwrap()
                .split(')')
                .next()
                .unwrap();
            z.parse::<f64>().unwrap()
        })
        .collect();
    assert_eq!(fixed.len(), 18, "{text}");
    let mut printed = fixed.clone();
    let mut want: Vec<f64> = raw.values().copied().collect();
    printed.sort_by(f64::total_cmp);
    want.sort_by(f64::total_cmp);
    for (p, w) in printed.iter().zip(&want) {
        // Printed to 2 decimals; the reconstruction keeps each task's mean reward to the
        // registry's 0.1-point rounding.
        assert!((p - w).abs() < 0.006, "printed {printed:?} vs raw {want:?}");
    }
    let decisive = want.iter().filter(|z| z.abs() >= 1.959_964).count();
    assert_eq!(decisive, 16);

    let summary = text.lines().find(|l| l.starts_with("18 runs:")).unwrap();
    assert!(
        summary.contains("the fixed design decides 16;") && summary.contains("disagrees on 0;"),
        "{summary}"
    );
    let share: f64 = summary
        .rsplit("mean share of trials used ")
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(share <= 0.6, "{summary}");
    let sim = text.lines().find(|l| l.starts_with("simulated:")).unwrap();
    let t1: f64 = sim
        .split("max ")
        .nth(1)
        .unwrap()
        .split(" %")
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // 200 null draws per configuration: the largest of 18 estimates of a 2.5 % rate.
    assert!(
        t1 <= 5.0 + 3.0 * (0.05f64 * 0.95 / 200.0).sqrt() * 100.0,
        "{sim}"
    );
    assert!(!text.contains('\x1b'));
}
