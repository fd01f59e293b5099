//! Held-out transfer: an experiment's tasks split into train tasks (learning reads only their
//! trials) and test tasks (held out: round 2 runs them with skills learned elsewhere).
//!
//! `method = "stratified"`: stratified systematic sampling (Cochran, *Sampling Techniques*, 3rd
//! ed., §8.1). Tasks are ordered by domain, then difficulty (easy/core → hard/extreme), and in a
//! random order within each (domain, difficulty) stratum; a random start `u` in [0, 1) is drawn;
//! the task at position `i` (0-based) is a test task when `⌊(i + 1)·f + u⌋ > ⌊i·f + u⌋`, `f` the
//! test fraction. Every run of `1/f` consecutive tasks therefore holds one test task, so each
//! domain and each difficulty within it gets its share (±1), and the whole split has
//! `⌊N·f⌋` or `⌈N·f⌉` test tasks. The generator is ChaCha8 seeded with the plan's `seed`, so the
//! same tasks and seed give the same split on any machine.

use std::collections::BTreeMap;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Which tasks round 2 runs when a split is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Round2Tasks {
    /// Only the held-out (test) tasks.
    #[default]
    Test,
    /// Test and train tasks: same-task and held-out results from one round 2.
    All,
}

/// The `[split]` table of a plan.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SplitPlan {
    /// `stratified` (by domain and difficulty); the only method.
    #[serde(default = "SplitPlan::default_method")]
    pub method: String,
    /// Share of tasks held out for testing, in (0, 1).
    pub test_fraction: f64,
    /// Seed of the split's generator.
    #[serde(default)]
    pub seed: u64,
    /// Which tasks round 2 runs: `test` (default) or `all`.
    #[serde(default)]
    pub round2: Round2Tasks,
}

impl SplitPlan {
    fn default_method() -> String {
        "stratified".into()
    }

    /// Every problem of the table's values, each naming its key.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.method != "stratified" {
            out.push(format!(
                "[split] method = {:?}: the only method is \"stratified\"",
                self.method
            ));
        }
        if !(self.test_fraction > 0.0 && self.test_fraction < 1.0) {
            out.push(format!(
                "[split] test_fraction = {}: must be above 0 and below 1",
                self.test_fraction
            ));
        }
        out
    }
}

/// A task as the split sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitTask {
    /// Task id.
    pub id: String,
    /// Domain.
    pub domain: String,
    /// Difficulty.
    pub difficulty: String,
}

/// One stratum of a split: how many of its tasks went where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stratum {
    /// Domain.
    pub domain: String,
    /// Difficulty.
    pub difficulty: String,
    /// Train tasks in it.
    pub train: usize,
    /// Test tasks in it.
    pub test: usize,
}

/// A computed split, stored with the experiment (`experiments.split`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Split {
    /// `stratified`.
    pub method: String,
    /// The plan's test fraction.
    pub test_fraction: f64,
    /// The plan's seed.
    pub seed: u64,
    /// Which tasks round 2 runs.
    pub round2: Round2Tasks,
    /// Train task ids, sorted.
    pub train: Vec<String>,
    /// Test (held-out) task ids, sorted.
    pub test: Vec<String>,
    /// Per (domain, difficulty): train and test counts.
    pub strata: Vec<Stratum>,
}

impl Split {
    /// The tasks round 2 runs: the test tasks, or every task for `round2 = "all"`.
    pub fn round2_tasks(&self) -> Vec<String> {
        let mut out = self.test.clone();
        if self.round2 == Round2Tasks::All {
            out.extend(self.train.iter().cloned());
            out.sort();
        }
        out
    }

    /// True when `task` is a train task.
    pub fn is_train(&self, task: &str) -> bool {
        self.train
            .binary_search_by(|t| t.as_str().cmp(task))
            .is_ok()
    }
}

/// Rank of a difficulty for ordering (easy/core first, as the learning order), then its text.
fn difficulty_rank(d: &str) -> (u8, String) {
    (crate::acontext::learn::difficulty_rank(d), d.to_string())
}

/// Splits `tasks` as the module docs say.
///
/// # Errors
/// A message when the plan's values are invalid ([`SplitPlan::problems`]) or the split would
/// leave the train or the test side empty (too few tasks for the fraction).
pub fn stratified(tasks: &[SplitTask], plan: &SplitPlan) -> Result<Split, String> {
    let problems = plan.problems();
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(plan.seed);
    let mut strata: BTreeMap<(String, (u8, String)), Vec<&SplitTask>> = BTreeMap::new();
    for t in tasks {
        strata
            .entry((t.domain.clone(), difficulty_rank(&t.difficulty)))
            .or_default()
            .push(t);
    }
    let mut ordered: Vec<&SplitTask> = Vec::with_capacity(tasks.len());
    for members in strata.values_mut() {
        members.sort_by(|a, b| a.id.cmp(&b.id));
        members.shuffle(&mut rng);
        ordered.extend(members.iter().copied());
    }
    let f = plan.test_fraction;
    let u: f64 = rng.random_range(0.0..1.0);
    let mut train = Vec::new();
    let mut test = Vec::new();
    let mut counts: BTreeMap<(String, (u8, String)), (usize, usize)> = BTreeMap::new();
    for (i, t) in ordered.iter().enumerate() {
        let i = i as f64;
        let is_test = ((i + 1.0) * f + u).floor() > (i * f + u).floor();
        let c = counts
            .entry((t.domain.clone(), difficulty_rank(&t.difficulty)))
            .or_default();
        if is_test {
            test.push(t.id.clone());
            c.1 += 1;
        } else {
            train.push(t.id.clone());
            c.0 += 1;
        }
    }
    if train.is_empty() || test.is_empty() {
        return Err(format!(
            "[split] test_fraction = {f} leaves {} train and {} test task(s) of {}; both sides need at least one",
            train.len(),
            test.len(),
            tasks.len()
        ));
    }
    train.sort();
    test.sort();
    Ok(Split {
        method: plan.method.clone(),
        test_fraction: f,
        seed: plan.seed,
        round2: plan.round2,
        train,
        test,
        strata: counts
            .into_iter()
            .map(|((domain, (_, difficulty)), (train, test))| Stratum {
                domain,
                difficulty,
                train,
                test,
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tasks(spec: &[(&str, &str, usize)]) -> Vec<SplitTask> {
        let mut out = Vec::new();
        for (domain, difficulty, n) in spec {
            for i in 0..*n {
                out.push(SplitTask {
                    id: format!("{domain}-{difficulty}-{i}"),
                    domain: domain.to_string(),
                    difficulty: difficulty.to_string(),
                });
            }
        }
        out
    }

    fn plan(f: f64, seed: u64) -> SplitPlan {
        SplitPlan {
            method: "stratified".into(),
            test_fraction: f,
            seed,
            round2: Round2Tasks::Test,
        }
    }

    #[test]
    fn every_stratum_gets_its_share_and_the_total_is_right() {
        let ts = tasks(&[
            ("health", "easy", 4),
            ("health", "hard", 6),
            ("finance", "medium", 5),
            ("science", "easy", 5),
        ]);
        for seed in 0..50 {
            let s = stratified(&ts, &plan(0.4, seed)).unwrap();
            assert!(
                (s.test.len() as i64 - 8).abs() <= 1,
                "{seed}: {}",
                s.test.len()
            );
            assert_eq!(s.train.len() + s.test.len(), 20);
            for st in &s.strata {
                let n = st.train + st.test;
                let want = n as f64 * 0.4;
                assert!((st.test as f64 - want).abs() < 1.0 + 1e-9, "{seed}: {st:?}");
            }
            // Disjoint and complete.
            for t in &s.test {
                assert!(!s.is_train(t));
            }
        }
    }

    #[test]
    fn the_seed_decides_and_repeats() {
        let ts = tasks(&[("a", "easy", 7), ("b", "hard", 7)]);
        let one = stratified(&ts, &plan(0.3, 11)).unwrap();
        assert_eq!(one, stratified(&ts, &plan(0.3, 11)).unwrap());
        let differ = (0..20).any(|s| stratified(&ts, &plan(0.3, s)).unwrap().test != one.test);
        assert!(differ);
        // The input order does not matter.
        let mut rev = ts.clone();
        rev.reverse();
        assert_eq!(one, stratified(&rev, &plan(0.3, 11)).unwrap());
    }

    #[test]
    fn bad_values_and_empty_sides_are_refused() {
        let ts = tasks(&[("a", "easy", 3)]);
        let e = stratified(&ts, &plan(1.0, 0)).unwrap_err();
        assert!(e.contains("test_fraction"), "{e}");
        let mut p = plan(0.5, 0);
        p.method = "random".into();
        p.test_fraction = 0.0;
        let e = stratified(&ts, &p).unwrap_err();
        assert!(e.contains("method") && e.contains("test_fraction"), "{e}");
        let one = tasks(&[("a", "easy", 1)]);
        assert!(stratified(&one, &plan(0.5, 0)).is_err());
    }

    #[test]
    fn round_two_runs_test_tasks_or_all() {
        let ts = tasks(&[("a", "easy", 4)]);
        let mut s = stratified(&ts, &plan(0.5, 3)).unwrap();
        assert_eq!(s.round2_tasks(), s.test);
        s.round2 = Round2Tasks::All;
        assert_eq!(s.round2_tasks().len(), 4);
    }
}
