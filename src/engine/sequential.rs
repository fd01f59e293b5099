//! The run's group-sequential design, carried out (issues 38, 47): the design recorded when the
//! run was created (`register.rs`), the looks taken at stage boundaries and the conditions they
//! stop, in the store. The decisions are pure — where the boundaries are and which conditions
//! stop in `stopping.rs`, each look in `analysis::sequential::live` (the same function `replay`
//! uses) — and the dispatcher only feeds the stops to its schedule
//! ([`super::schedule::Event::EarlyStop`]) and the lines to the operator, worded by
//! `report::model::sequential` from the stored rows.

use std::collections::{BTreeMap, HashMap};

use super::EngineError;
use super::stopping::Stopping;
use crate::domain::sequential::{DesignRow, EarlyStopRow, SequentialPlan};
use crate::report::model::sequential::{look_line, stop_line};
use crate::store::RunLedger;

/// A run's design and where its comparisons stand.
#[derive(Debug, Clone)]
pub(super) struct Sequential {
    plan: SequentialPlan,
    design: DesignRow,
    stopping: Stopping,
}

/// What one round of looks did.
#[derive(Debug, Default)]
pub(super) struct Looked {
    /// The operator's lines, in order.
    pub events: Vec<String>,
    /// Conditions stopped now, with the trials per task each keeps.
    pub stops: Vec<(String, u32)>,
}

impl Sequential {
    /// Takes up `plan`'s design for the run of `ledger` as it was recorded when the run was
    /// created, with the looks and early stops a stopped process recorded.
    ///
    /// # Errors
    /// Database errors; [`EngineError::Internal`] when no design was recorded (registration
    /// records it).
    pub async fn start(
        plan: SequentialPlan,
        ledger: &RunLedger,
    ) -> Result<Sequential, EngineError> {
        let record = ledger.sequential().await?.ok_or_else(|| {
            EngineError::Internal(format!(
                "run {} has no recorded sequential design",
                ledger.run().name
            ))
        })?;
        let plan = SequentialPlan {
            design: record.design.spec.clone(),
            ..plan
        };
        let stopping = Stopping::new(plan.clone(), Some(&record));
        Ok(Sequential {
            plan,
            design: record.design,
            stopping,
        })
    }

    /// Conditions stopped so far, with the trials per task each keeps.
    pub fn stopped(&self) -> Vec<(String, u32)> {
        self.stopping
            .stopped()
            .iter()
            .map(|(c, k)| (c.clone(), *k))
            .collect()
    }

    /// Looks at every comparison that reached a stage boundary (`stopping.rs`) over the run's
    /// `tasks` (put in the order of their ids, which gives each its bit in the sign-flip
    /// reference set): records each look and, once a comparison is answered before its last
    /// stage, stops the conditions whose questions it answered (their queued trials leave the
    /// queue; the cost saved is projected from `finished_costs`, USD per finished trial of each
    /// condition).
    ///
    /// # Errors
    /// Database errors; a design that cannot be applied ([`EngineError::Internal`]).
    pub async fn look(
        &mut self,
        ledger: &RunLedger,
        tasks: &[String],
        finished_costs: &BTreeMap<String, Vec<f64>>,
    ) -> Result<Looked, EngineError> {
        let mut tasks = tasks.to_vec();
        tasks.sort();
        let mut runs: Vec<String> = self
            .plan
            .comparisons
            .iter()
            .filter_map(|c| c.without_run.clone())
            .collect();
        runs.sort();
        runs.dedup();
        let mut baselines = HashMap::new();
        for run in runs {
            let rows = ledger.briefs_of(run.clone()).await?;
            baselines.insert(run, rows);
        }
        let mut out = Looked::default();
        loop {
            let rows = ledger.current().await?;
            let due = self.stopping.due(&tasks, &rows, &baselines);
            if due.is_empty() {
                break;
            }
            for d in due {
                let l =
                    crate::analysis::sequential::live::look(&self.design.spec, d.stage, &d.rewards)
                        .map_err(|e| EngineError::Internal(e.to_string()))?;
                let row = l.row(&d.label, crate::domain::now_rfc3339());
                ledger.look(row.clone()).await?;
                out.events.push(look_line(&self.design, &row));
                for (condition, keep) in self.stopping.looked(&d.label, d.stage, l.judged.stops()) {
                    let stop = EarlyStopRow {
                        condition: condition.clone(),
                        trials: keep,
                        comparison: d.label.clone(),
                        stage: d.stage + 1,
                        not_run: 0,
                        cost_saved_usd: None,
                        at: crate::domain::now_rfc3339(),
                    };
                    let mean_cost = finished_costs
                        .get(&condition)
                        .filter(|c| !c.is_empty())
                        .map(|c| c.iter().sum::<f64>() / c.len() as f64);
                    let ids = ledger.stop_condition(stop.clone(), mean_cost).await?;
                    let recorded = EarlyStopRow {
                        not_run: ids.len(),
                        cost_saved_usd: mean_cost.map(|c| c * ids.len() as f64),
                        ..stop
                    };
                    out.events.push(format!(
                        "{} (running ones finish and are kept, beyond the stop)",
                        stop_line(&recorded, &|c: &str| format!("condition {c}"))
                    ));
                    out.stops.push((condition, keep));
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    //! Acceptance (issue 47): for random runs and designs, `plan`, the engine's looks, `status
    //! --json` and the report's Sequential section give the same bounds, decisions and adjusted
    //! estimate — and `replay` of the same trials with the stored design takes the same looks.

    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::Sequential;
    use crate::analysis::results::{Scoring, Selection};
    use crate::analysis::sequential::design::{Choices, row, spec};
    use crate::analysis::sequential::replay::{PairedTrials, replay};
    use crate::domain::sequential::{Comparison, SequentialPlan};
    use crate::domain::{Outcome, RunTaskRow, TrialStatus};
    use crate::store::ledger::Owner;
    use crate::store::queries::{self, NewRun, TrialPatch};
    use crate::store::{RunLedger, Store};

    /// A run of `n` tasks × `trials` per condition with `stages` stages and futility from
    /// `futility_from`, every trial finished with a reward drawn from `seed` (B better by
    /// `effect`); the engine's looks taken over it. Checks every renderer against them.
    async fn agree(
        n: usize,
        trials: u32,
        stages: usize,
        futility_from: Option<usize>,
        effect: f64,
        seed: u64,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let design = spec(trials, stages, &Choices::with_futility(futility_from)).unwrap();
        let plan = SequentialPlan {
            design: design.clone(),
            comparisons: vec![Comparison {
                label: "B-A".into(),
                with: "curated".into(),
                without: "no-skills".into(),
                without_run: None,
            }],
            stoppable: vec!["no-skills".into(), "curated".into()],
            early_stop: true,
            note: None,
        };
        let tasks: Vec<String> = (0..n).map(|i| format!("t{i:02}")).collect();
        let ledger = RunLedger::register_with_design(
            &store,
            NewRun {
                name: "seq".into(),
                tasks_dir: "/t".into(),
                agent: "oracle".into(),
                model: None,
                n_trials: trials,
                conditions: vec!["no-skills".into(), "curated".into()],
                jobs_dir: "/j".into(),
                settings: serde_json::json!({}),
            },
            tasks
                .iter()
                .map(|t| RunTaskRow {
                    task_id: t.clone(),
                    domain: "d".into(),
                    difficulty: "easy".into(),
                    path: format!("/t/{t}"),
                    problems: Vec::new(),
                    digest: None,
                })
                .collect(),
            Owner {
                pid: std::process::id(),
                host: "here".into(),
                stale_after_secs: 60,
            },
            std::sync::Arc::new(|k: &crate::domain::TrialKey, a: u32| {
                format!("{}__{}-{}-{a}", k.task_id, k.condition, k.trial_index)
            }),
            false,
            Some(row(0, &plan).unwrap()),
        )
        .await
        .unwrap();
        ledger.plan(tasks.clone()).await.unwrap();
        // Rewards: per task a pass probability, B's raised by `effect`.
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let p: BTreeMap<String, f64> = tasks.iter().map(|t| (t.clone(), rng.random())).collect();
        let conn = store.connect().unwrap();
        let run = ledger.run().clone();
        let mut data = PairedTrials {
            tasks: tasks.clone(),
            a: vec![vec![None; trials as usize]; n],
            b: vec![vec![None; trials as usize]; n],
        };
        for t in queries::current_trials(&conn, run.id).unwrap() {
            let lift = if t.condition == "curated" {
                effect
            } else {
                0.0
            };
            let pass = rng.random::<f64>() < (p[&t.task_id] + lift).min(1.0);
            let reward = f64::from(pass);
            queries::finish_trial(
                &conn,
                t.id,
                &TrialPatch {
                    status: Some(TrialStatus::Done),
                    outcome: Some(if pass { Outcome::Pass } else { Outcome::Fail }),
                    reward: Some(reward),
                    ..Default::default()
                },
            )
            .unwrap();
            let i = tasks.iter().position(|x| *x == t.task_id).unwrap();
            let side = if t.condition == "curated" {
                &mut data.b
            } else {
                &mut data.a
            };
            side[i][t.trial_index as usize - 1] = Some(reward);
        }
        // The engine's looks, over the store.
        let mut seq = Sequential::start(plan, &ledger).await.unwrap();
        seq.look(&ledger, &tasks, &BTreeMap::new()).await.unwrap();
        let record = ledger.sequential().await.unwrap().unwrap();
        assert!(!record.looks.is_empty());
        // plan: the bounds of the design the engine applied, from the same function.
        let stored = &record.design;
        assert_eq!(stored.spec, design);
        let c = crate::analysis::power::binary_bound(0.3, 0.5);
        let planned = crate::analysis::sequential::planned::planned(&c, n, &design).unwrap();
        for (s, st) in planned.stages.iter().enumerate() {
            assert_eq!(st.efficacy_z, stored.efficacy[s]);
            if s + 1 < stages {
                assert_eq!(st.futility_z, stored.futility[s]);
            }
        }
        // replay: the same looks from the same trials.
        let replayed = replay(&data, &stored.spec).unwrap();
        assert_eq!(replayed.looks.len(), record.looks.len(), "{record:?}");
        for (r, l) in replayed.looks.iter().zip(&record.looks) {
            let r = r.row(&l.comparison, l.at.clone());
            assert_eq!(&r, l);
        }
        // status --json: the record as stored, and the same lines `status` prints.
        let status = crate::commands::shared::status::run_status(&conn, run.clone()).unwrap();
        let json = serde_json::to_value(&status).unwrap();
        assert_eq!(
            json["sequential"],
            serde_json::to_value(&record).unwrap(),
            "status --json"
        );
        // The report: its results carry the record and the comparison's verdict is its last
        // look; its Sequential section holds the lines status prints.
        let report = crate::report::build(
            &conn,
            &Selection::Runs(vec!["seq".into()]),
            &Scoring::default(),
        )
        .unwrap();
        assert_eq!(
            report.results.sequential,
            vec![("seq".to_string(), record.clone())]
        );
        let verdict = report.results.comparisons[0].sequential.as_ref().unwrap();
        assert_eq!(&verdict.look, record.looks.last().unwrap());
        let label = |k: &str| {
            report
                .results
                .conditions
                .iter()
                .find(|c| c.condition == k)
                .map_or(k.to_string(), |c| c.label.clone())
        };
        let lines = crate::report::model::sequential::lines(&record, &label);
        let blocks = crate::report::model::sequential::blocks(&report.results);
        let text = format!("{blocks:?}");
        for l in &lines {
            assert!(
                text.contains(&crate::report::md_cell(l).replace('"', "\\\"")),
                "{l} not in {text}"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 12, failure_persistence: None, ..ProptestConfig::default() })]
        #[test]
        fn plan_engine_status_report_and_replay_agree(
            // Up to 12 tasks: the reference set is every flip (≤ 4,096) and a case takes a
            // second in a debug build; the drawn set is `signflip`'s own tests'.
            n in 6usize..13,
            trials in 2u32..5,
            stages_frac in 0.0f64..1.0,
            futility in 0usize..3,
            effect in 0.0f64..0.6,
            seed in 0u64..1000,
        ) {
            let stages = 2 + ((trials - 1) as f64 * stages_frac) as usize;
            let stages = stages.min(trials as usize);
            let futility_from = (futility > 0 && futility < stages).then_some(futility);
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(agree(n, trials, stages, futility_from, effect, seed));
        }
    }
}
