//! The website's results registry (`website-data/results-registry.json`): a streaming scan of its
//! JSON array (one row in memory at a time, each with its line), its rows, and the
//! reconstruction of per-trial rewards from published per-task aggregates ([`reconstruct`]). See
//! [`super::published`] for how its rows become trials.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{FileReport, Format, ImportOptions, NewTrial, RunPlan, condition_from, key_of};
use crate::domain::Outcome;
use crate::harbor::reward::is_pass;
use crate::skillsbench::condition::sanitize_slug;

/// Half a unit of the registry's `score` rounding (0.1 points), plus float noise.
pub const SCORE_HALF_UNIT: f64 = 0.05 + 1e-9;

/// Reconstructed partial rewards stay inside (0, 1) by at least this much.
const PARTIAL_MARGIN: f64 = 1e-6;

/// One registry row.
#[derive(Debug, Clone, Deserialize)]
pub struct RegistryRow {
    /// Task id.
    pub task: String,
    /// Config label, `Harness (Model)`.
    pub model: String,
    /// Model label.
    #[serde(rename = "modelShort")]
    pub model_short: String,
    /// Harness label (`Claude Code`, `OpenHands`, …).
    pub harness: String,
    /// Model family.
    #[serde(default)]
    pub family: Option<String>,
    /// `No Skills` or `With Skills`.
    pub condition: String,
    /// Mean reward × 100, rounded to 0.1.
    pub score: f64,
    /// Trials run.
    pub trials: u32,
    /// Trials with reward > 0.
    #[serde(rename = "passCount")]
    pub pass_count: u32,
    /// Trials with reward 1.
    #[serde(rename = "perfectCount")]
    pub perfect_count: u32,
}

/// Per-trial rewards rebuilt from a registry aggregate.
#[derive(Debug, Clone, PartialEq)]
pub struct Reconstruction {
    /// One reward per trial: `perfect` × 1.0, then `pass − perfect` × the partial reward, then 0.0.
    pub rewards: Vec<f64>,
    /// The partial reward had to be clamped into (0, 1) (the rounding of `score` pushed it out).
    pub clamped: bool,
}

/// Rebuilds `trials` rewards whose mean is `score`/100 from the aggregate: `perfect` trials with
/// reward 1.0, `pass − perfect` trials with the equal partial reward
/// r = (trials·score/100 − perfect)/(pass − perfect), the rest 0.0. The mean is then exactly
/// `score`/100 (to float precision) whenever there are partial trials. Without them the counts
/// decide (perfect/trials exactly), and `score` must agree with them to its rounding.
///
/// `score` is rounded to 0.1, so the true task mean is within 0.0005 of `score`/100 and r within
/// trials·0.0005/(pass − perfect) of the true (equal) partial reward; an r pushed to 0 or 1 by
/// the rounding is clamped into (0, 1) (`clamped`), one further out is an error.
///
/// # Errors
/// A message when the numbers contradict each other.
pub fn reconstruct(
    score: f64,
    trials: u32,
    pass: u32,
    perfect: u32,
) -> Result<Reconstruction, String> {
    if !score.is_finite() || !(-SCORE_HALF_UNIT..=100.0 + SCORE_HALF_UNIT).contains(&score) {
        return Err(format!("score {score} is not in [0, 100]"));
    }
    if trials == 0 || trials > 10_000 {
        return Err(format!("trials {trials} is not in 1..=10000"));
    }
    if perfect > pass || pass > trials {
        return Err(format!(
            "needs perfectCount ≤ passCount ≤ trials, got {perfect} ≤ {pass} ≤ {trials}"
        ));
    }
    let n = trials as f64;
    let mut rewards = vec![1.0; perfect as usize];
    let mut clamped = false;
    if pass == perfect {
        let exact = 100.0 * perfect as f64 / n;
        if (score - exact).abs() > SCORE_HALF_UNIT {
            return Err(format!(
                "score {score} does not match {perfect} perfect of {trials} trials and no partial ones (expected {exact:.1})"
            ));
        }
    } else {
        let partial = (pass - perfect) as f64;
        let r = (n * score / 100.0 - perfect as f64) / partial;
        let slack = n * SCORE_HALF_UNIT / 100.0 / partial;
        if r <= -slack || r >= 1.0 + slack {
            return Err(format!(
                "score {score} cannot come from {perfect} perfect and {} partial of {trials} trials (partial reward would be {r:.4})",
                pass - perfect
            ));
        }
        let c = r.clamp(PARTIAL_MARGIN, 1.0 - PARTIAL_MARGIN);
        clamped = c != r;
        rewards.extend(std::iter::repeat_n(c, (pass - perfect) as usize));
    }
    rewards.resize(trials as usize, 0.0);
    Ok(Reconstruction { rewards, clamped })
}

/// A top-level element of a JSON array: its byte span and the line it starts on.
#[derive(Debug, Clone, Copy)]
pub(super) struct Element {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) line: usize,
}

#[derive(Debug)]
pub(super) struct ArrayScan {
    pub(super) elements: Vec<Element>,
    /// What is wrong around the elements (truncated file, text after the array).
    problem: Option<String>,
}

/// Finds the top-level elements of a JSON array without parsing them (strings and nesting are
/// tracked), so each is parsed on its own: a malformed row is reported with its index and line
/// and the others are kept.
pub(super) fn array_elements(b: &[u8]) -> Result<ArrayScan, String> {
    let mut i = if b.starts_with(&[0xEF, 0xBB, 0xBF]) {
        3
    } else {
        0
    };
    let mut line = 1;
    while i < b.len() && b[i].is_ascii_whitespace() {
        line += usize::from(b[i] == b'\n');
        i += 1;
    }
    if b.get(i) != Some(&b'[') {
        return Err("it does not start with '['".into());
    }
    i += 1;
    let mut elements = Vec::new();
    let (mut depth, mut in_str, mut esc, mut comma) = (0usize, false, false, false);
    let mut start: Option<(usize, usize)> = None;
    let mut closed = false;
    while i < b.len() {
        let c = b[i];
        line += usize::from(c == b'\n');
        if in_str {
            if esc {
                esc = false;
            } else if c == b'\\' {
                esc = true;
            } else if c == b'"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        match c {
            b'"' => {
                in_str = true;
                start.get_or_insert((i, line));
            }
            b'{' | b'[' => {
                depth += 1;
                start.get_or_insert((i, line));
            }
            b'}' | b']' if depth > 0 => depth -= 1,
            b']' => {
                match start.take() {
                    Some((s, l)) => elements.push(Element {
                        start: s,
                        end: i,
                        line: l,
                    }),
                    // `[a, ]`: an empty last element.
                    None if comma => elements.push(Element {
                        start: i,
                        end: i,
                        line,
                    }),
                    None => {}
                }
                closed = true;
                i += 1;
                break;
            }
            b',' if depth == 0 => {
                comma = true;
                let (s, l) = start.take().unwrap_or((i, line));
                elements.push(Element {
                    start: s,
                    end: i,
                    line: l,
                });
            }
            c if c.is_ascii_whitespace() => {}
            _ => {
                start.get_or_insert((i, line));
            }
        }
        i += 1;
    }
    let mut problem = None;
    if !closed {
        if let Some((s, l)) = start {
            elements.push(Element {
                start: s,
                end: b.len(),
                line: l,
            });
        }
        problem = Some("the file ends inside the array (truncated?)".to_string());
    } else if b[i..].iter().any(|c| !c.is_ascii_whitespace()) {
        problem = Some(format!("text after the array's closing ']' (line {line})"));
    }
    Ok(ArrayScan { elements, problem })
}

/// serde_json's message without its position (which is relative to the element).
fn json_message(e: &serde_json::Error, line: usize) -> String {
    let s = e.to_string();
    let msg = s.rsplit_once(" at line ").map_or(s.as_str(), |(m, _)| m);
    let at = line + e.line().saturating_sub(1);
    format!("{msg} (line {at})")
}

/// Reads the results registry in `bytes` (the file at `path`) into one run plan per harness ×
/// model configuration; a malformed or duplicate row goes into `broken` as
/// `row N (line L): why` (and is counted in `file`), the others are imported.
///
/// # Errors
/// A message when `bytes` is not a JSON array.
pub(super) fn parse_registry(
    bytes: &[u8],
    path: &Path,
    opts: &ImportOptions,
    file: &mut FileReport,
    broken: &mut Vec<(PathBuf, String)>,
) -> Result<Vec<RunPlan>, String> {
    let scan = array_elements(bytes).map_err(|e| format!("not a JSON array: {e}"))?;
    if let Some(p) = &scan.problem {
        broken.push((path.to_path_buf(), p.clone()));
    }
    let mut plans = RegistryPlans {
        path,
        prefix: opts.run.clone().unwrap_or_else(|| "registry".into()),
        tasks: BTreeSet::new(),
        configs: HashMap::new(),
        names: HashSet::new(),
        plans: Vec::new(),
        seen: HashMap::new(),
        unreadable: Vec::new(),
    };
    for (index, el) in scan.elements.iter().enumerate() {
        file.rows += 1;
        if let Err(why) = plans.add(index, &bytes[el.start..el.end], el.line, file) {
            file.broken_rows += 1;
            broken.push((
                path.to_path_buf(),
                format!("row {index} (line {}): {why}", el.line),
            ));
        }
    }
    Ok(plans.finish(file))
}

/// What a malformed row still says: which configuration ran which task under which
/// condition, and how many trials, when those fields are readable.
#[derive(Deserialize)]
struct Identity {
    task: String,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    harness: Option<String>,
    #[serde(default)]
    condition: Option<String>,
    #[serde(default)]
    trials: Option<serde_json::Value>,
}

/// A registry condition label as a condition key: `No Skills` → no-skills, `With Skills` →
/// curated, else what [`condition_from`] reads in it.
fn condition_of(label: &str) -> Option<&'static str> {
    match label {
        "No Skills" => Some("no-skills"),
        "With Skills" => Some("curated"),
        other => condition_from(&[other]),
    }
}

/// The registry's run plans as its rows are read.
struct RegistryPlans<'a> {
    path: &'a Path,
    /// Run name prefix: `registry`, or `--run`.
    prefix: String,
    /// Every task a row names, readable or not.
    tasks: BTreeSet<String>,
    /// Config (harness, model) → index in `plans`.
    configs: HashMap<(String, String), usize>,
    /// Run names given so far.
    names: HashSet<String>,
    plans: Vec<RunPlan>,
    /// (harness, model, task, condition) → the row that first named it.
    seen: HashMap<(String, String, String, &'static str), usize>,
    /// (harness, model label, task, condition, trials) of rows that could not be imported.
    unreadable: Vec<(String, String, String, &'static str, Option<u32>)>,
}

impl RegistryPlans<'_> {
    /// Adds row `index` (JSON `text` starting on line `line`) as its trials; what is wrong
    /// with it otherwise (a malformed row is remembered as planned, see [`Self::finish`]).
    fn add(
        &mut self,
        index: usize,
        text: &[u8],
        line: usize,
        file: &mut FileReport,
    ) -> Result<(), String> {
        let row: RegistryRow = match serde_json::from_slice(text) {
            Ok(r) => r,
            Err(e) => {
                if let Ok(t) = serde_json::from_slice::<Identity>(text) {
                    if let (Some(h), Some(m), Some(c)) = (
                        t.harness.clone(),
                        t.model.clone(),
                        t.condition.as_deref().and_then(condition_of),
                    ) {
                        let n = t.trials.as_ref().and_then(|v| v.as_u64()).map(|n| n as u32);
                        self.unreadable.push((h, m, t.task.clone(), c, n));
                    }
                    self.tasks.insert(t.task);
                }
                return Err(json_message(&e, line));
            }
        };
        if !row.task.trim().is_empty() {
            self.tasks.insert(row.task.clone());
        }
        let (condition, rec) = match check_row(&row) {
            Ok(x) => x,
            Err(why) => {
                if let Some(c) = condition_of(&row.condition) {
                    self.unreadable.push((
                        row.harness.clone(),
                        row.model.clone(),
                        row.task.clone(),
                        c,
                        Some(row.trials),
                    ));
                }
                return Err(why);
            }
        };
        let dup = (
            row.harness.clone(),
            row.model.clone(),
            row.task.clone(),
            condition,
        );
        if let Some(first) = self.seen.get(&dup) {
            return Err(format!(
                "duplicate of row {first} (same config, task and condition)"
            ));
        }
        self.seen.insert(dup, index);
        if row.pass_count > row.perfect_count {
            file.partial_rows += 1;
        }
        if rec.clamped {
            file.clamped += 1;
        }
        let p = self.plan_of(&row);
        push_trials(&mut self.plans[p], &row, condition, &rec);
        Ok(())
    }

    /// The index of the plan of `row`'s configuration, made on its first row: run
    /// `<prefix>-<harness>-<modelShort>` (numbered when two configurations would share it).
    fn plan_of(&mut self, row: &RegistryRow) -> usize {
        let cfg = (row.harness.clone(), row.model.clone());
        if let Some(p) = self.configs.get(&cfg) {
            return *p;
        }
        let base = sanitize_slug(&format!(
            "{}-{}-{}",
            self.prefix, row.harness, row.model_short
        ));
        let mut name = base.clone();
        let mut k = 2;
        while !self.names.insert(name.clone()) {
            name = format!("{base}-{k}");
            k += 1;
        }
        self.plans.push(RunPlan {
            name,
            agent: sanitize_slug(&row.harness),
            model: Some(row.model_short.clone()),
            source: Format::Registry,
            origin: self.path.display().to_string(),
            settings: serde_json::json!({
                "imported_from": self.path.display().to_string(),
                "format": "skillsbench results registry",
                "harness": row.harness,
                "model": row.model,
                "family": row.family,
            }),
            tasks: Vec::new(),
            n_trials: 0,
            trials: Vec::new(),
            planned: BTreeMap::new(),
        });
        self.configs.insert(cfg, self.plans.len() - 1);
        self.plans.len() - 1
    }

    /// The plans, each with every task the file names. A malformed row still says its
    /// configuration ran the task under its condition: those trials were planned, and count 0
    /// as not run (a configuration without any readable row has no run to plan them in).
    fn finish(mut self, file: &mut FileReport) -> Vec<RunPlan> {
        for (harness, model, task, condition, n) in self.unreadable {
            if let Some(&p) = self.configs.get(&(harness, model)) {
                let plan = &mut self.plans[p];
                let n = n.unwrap_or(plan.n_trials).max(1);
                plan.planned.entry((task, condition)).or_insert(n);
            }
        }
        file.tasks = self.tasks.len();
        let tasks: Vec<String> = self.tasks.into_iter().collect();
        for plan in &mut self.plans {
            plan.tasks = tasks.clone();
        }
        self.plans
    }
}

/// A row's condition and reconstructed rewards, or what is wrong with it.
fn check_row(row: &RegistryRow) -> Result<(&'static str, Reconstruction), String> {
    if row.task.trim().is_empty() || row.harness.trim().is_empty() {
        return Err("empty task or harness".into());
    }
    let condition = condition_of(&row.condition).ok_or_else(|| {
        format!(
            "condition {:?} is neither \"No Skills\" nor \"With Skills\"",
            row.condition
        )
    })?;
    let rec = reconstruct(row.score, row.trials, row.pass_count, row.perfect_count)?;
    Ok((condition, rec))
}

/// Adds `row`'s trials to `plan`: one per reconstructed reward, marked aggregated, each with an
/// import key of its configuration, task, condition and index and the row's numbers as content.
fn push_trials(
    plan: &mut RunPlan,
    row: &RegistryRow,
    condition: &'static str,
    rec: &Reconstruction,
) {
    plan.n_trials = plan.n_trials.max(row.trials);
    plan.planned
        .insert((row.task.clone(), condition), row.trials);
    let content = format!(
        "{}|{}|{}|{}",
        row.score, row.trials, row.pass_count, row.perfect_count
    );
    for (k, reward) in rec.rewards.iter().enumerate() {
        let k = k as u32 + 1;
        let identity = format!(
            "registry:{}|{}|{}|{condition}#{k}",
            row.harness, row.model, row.task
        );
        let pass = is_pass(*reward);
        plan.trials.push(NewTrial {
            key: key_of(&identity, &content),
            identity,
            task_id: row.task.clone(),
            condition,
            trial_index: k,
            outcome: if pass { Outcome::Pass } else { Outcome::Fail },
            reward: Some(*reward),
            error: (!pass).then(|| {
                format!(
                    "reward {reward:.4}, reconstructed from the registry (score {}, {} of {} trials with reward > 0, {} perfect)",
                    row.score, row.pass_count, row.trials, row.perfect_count
                )
            }),
            tests: None,
            trial_name: format!("{}__registry-{condition}-{k}", row.task),
            aggregated: true,
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Pass rate over trials with a verdict

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconstruction_keeps_the_mean() {
        // 2 perfect + 1 partial: r = 3·0.683 − 2 = 0.049.
        let r = reconstruct(68.3, 3, 3, 2).unwrap();
        assert_eq!(r.rewards[..2], [1.0, 1.0]);
        assert!((r.rewards.iter().sum::<f64>() / 3.0 - 0.683).abs() < 1e-15);
        assert!(!r.clamped);
        // No partials: the counts decide.
        assert_eq!(
            reconstruct(33.3, 3, 1, 1).unwrap().rewards,
            vec![1.0, 0.0, 0.0]
        );
        assert_eq!(reconstruct(0.0, 3, 0, 0).unwrap().rewards, vec![0.0; 3]);
        // Rounding pushes r to 1: clamped below 1 (still a fail).
        let r = reconstruct(100.0, 3, 3, 2).unwrap();
        assert!(r.clamped && r.rewards[2] < 1.0 && !is_pass(r.rewards[2]));
        // Contradictions.
        assert!(reconstruct(50.0, 3, 1, 1).is_err());
        assert!(reconstruct(10.0, 3, 0, 0).is_err());
        assert!(reconstruct(80.0, 3, 1, 0).is_err());
        assert!(reconstruct(50.0, 3, 2, 3).is_err());
        assert!(reconstruct(f64::NAN, 3, 1, 0).is_err());
    }

    #[test]
    fn array_elements_have_lines_and_survive_bad_rows() {
        let text = b"[\n {\"a\": \"x,]}\"},\n {\"b\": [1, 2]},\n 12..3,\n {\"c\": 1}\n]\n";
        let s = array_elements(text).unwrap();
        let parts: Vec<(&str, usize)> = s
            .elements
            .iter()
            .map(|e| {
                (
                    std::str::from_utf8(&text[e.start..e.end]).unwrap().trim(),
                    e.line,
                )
            })
            .collect();
        assert_eq!(
            parts,
            vec![
                ("{\"a\": \"x,]}\"}", 2),
                ("{\"b\": [1, 2]}", 3),
                ("12..3", 4),
                ("{\"c\": 1}", 5)
            ]
        );
        assert!(s.problem.is_none());
        let t = array_elements(b"[{\"a\":1},{\"b\":").unwrap();
        assert_eq!(t.elements.len(), 2);
        assert!(t.problem.is_some());
        assert!(array_elements(b"{}").is_err());
        assert!(array_elements(b"[]").unwrap().elements.is_empty());
    }
}
