//! The report's "Sequential design" section (issue 38): per run that applied a group-sequential
//! design, the design (stages, α, β, the trials per task at each stage), each comparison's stage
//! and decision (the boundary crossed, Z against the bound), the naive and the
//! stopping-adjusted estimates with the stage-wise-ordering CI, and the trials the early stops
//! saved. The same lines are what `skillscope status` prints.

use super::Block;
use crate::analysis::results::Results;
use crate::domain::sequential::{LookDecision, SequentialRecord};
use crate::sanitize::one_line;

fn pp(x: f64) -> String {
    format!("{:+.1} pp", x * 100.0)
}

/// The lines that state `rec`'s design and where each comparison stands; `label` names a
/// condition key (A, B, A′, …).
pub fn lines(rec: &SequentialRecord, label: &dyn Fn(&str) -> String) -> Vec<String> {
    let d = &rec.design;
    let trials: Vec<String> = d.stage_trials.iter().map(u32::to_string).collect();
    let mut out = vec![format!(
        "design: {} stages at {} trials per task; O'Brien–Fleming α-spending, one-sided α = {}, non-binding futility β = {}{}",
        d.stages,
        trials.join("/"),
        d.alpha,
        d.beta,
        if d.early_stop {
            ""
        } else {
            "; early stopping off (--no-early-stop): looks only"
        }
    )];
    if let Some(n) = &d.note {
        out.push(format!("note: {}", one_line(n)));
    }
    for c in &d.comparisons {
        let name = format!(
            "{} ({} − {})",
            one_line(&c.label),
            label(&c.with),
            label(&c.without)
        );
        let Some(l) = rec.last_look(&c.label) else {
            out.push(format!(
                "{name}: no stage boundary reached yet (every task's trial 1 in both conditions first)"
            ));
            continue;
        };
        let z = l.z.map_or("—".to_string(), |z| format!("{z:.2}"));
        let bound = l.bound.map_or("—".to_string(), |b| format!("{b:.2}"));
        let naive = l.mean_diff.map_or("—".to_string(), pp);
        let head = format!(
            "{name}: stage {} of {} ({} trials per task, {} tasks)",
            l.stage, d.stages, l.trials, l.n_tasks
        );
        match l.decision {
            LookDecision::Continue => out.push(format!(
                "{head} — continues: {} (Z = {z}, efficacy bound {bound}); naive Δ {naive}",
                one_line(&l.reason)
            )),
            LookDecision::Efficacy | LookDecision::Futility => {
                let what = if l.decision == LookDecision::Efficacy {
                    "answered: efficacy, the effect is shown"
                } else {
                    "answered: futility, no effect shown"
                };
                let adjusted = match (l.adjusted, l.ci) {
                    (Some(a), Some((lo, hi))) => format!(
                        "; adjusted Δ {} (median-unbiased), 95% CI {} to {} (stage-wise ordering)",
                        pp(a),
                        pp(lo),
                        pp(hi)
                    ),
                    _ => "; adjusted estimate — (the statistic is undefined)".to_string(),
                };
                out.push(format!(
                    "{head} — {what}: Z = {z} vs bound {bound}; naive Δ {naive}{adjusted}"
                ));
            }
        }
    }
    for s in &rec.stops {
        out.push(format!(
            "early stop: {} keeps {} trials per task ({}, stage {}); {} queued trials not run{}",
            label(&s.condition),
            s.trials,
            one_line(&s.comparison),
            s.stage,
            s.not_run,
            s.cost_saved_usd
                .map(|c| format!(", projected ${c:.2} saved"))
                .unwrap_or_default()
        ));
    }
    let saved: usize = rec.stops.iter().map(|s| s.not_run).sum();
    if d.early_stop {
        let costs: Vec<f64> = rec.stops.iter().filter_map(|s| s.cost_saved_usd).collect();
        let cost = if saved == 0 {
            String::new()
        } else if costs.is_empty() {
            " (no cost: no finished trial of a stopped condition was priced)".to_string()
        } else {
            format!("; projected cost saved ${:.2}", costs.iter().sum::<f64>())
        };
        out.push(format!("trials saved by early stops: {saved}{cost}"));
    }
    out
}

/// The section: a heading and, per run with a design, its lines.
pub fn blocks(r: &Results) -> Vec<Block> {
    if r.sequential.is_empty() {
        return Vec::new();
    }
    let mut out = vec![
        Block::Heading {
            level: 2,
            text: "Sequential design (early stopping)".into(),
        },
        Block::Text {
            text: "Each comparison is judged at every stage boundary (every task's trials up to the stage's index done in both conditions); a condition stops once its comparisons are answered. The naive Δ at a stop is biased away from 0; the adjusted Δ is the median-unbiased estimate and its 95% interval the stage-wise-ordering one (Jennison & Turnbull 2000, §8.4); see docs/scoring.md, \"Sequential designs\".".into(),
        },
    ];
    for (run, rec) in &r.sequential {
        let label = |key: &str| {
            r.conditions
                .iter()
                .find(|c| c.condition == key)
                .map_or_else(|| one_line(key), |c| c.label.clone())
        };
        out.push(Block::Heading {
            level: 3,
            text: format!("Run {}", crate::report::md_cell(run)),
        });
        out.push(Block::Bullets {
            items: lines(rec, &label)
                .iter()
                .map(|l| crate::report::md_cell(l))
                .collect(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::analysis::results::{Scoring, Selection};
    use crate::domain::sequential::EarlyStopRow;
    use crate::perf::synthetic::{SyntheticRun, fill_store};
    use crate::store::queries;

    /// Acceptance (issue 38): a run whose condition stopped early at stage `k` — with trials of
    /// the next stage already finished when it stopped and the rest of its queue not run — has a
    /// per_task.csv with the same planned trials for every task of each condition (`k` for the
    /// stopped one), and each task's mean reward is over its trials with index ≤ `k` only.
    fn stopped_run_is_balanced(tasks: usize, trials: u32, keep: u32, extra: usize, seed: u64) {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        crate::store::schema::migrations()
            .to_latest(&mut conn)
            .unwrap();
        let conditions = vec!["no-skills".to_string(), "curated".to_string()];
        // Finished: every trial of index ≤ keep in both conditions, plus `extra` of the next.
        let per_stage = tasks * conditions.len();
        let total = per_stage * trials as usize;
        let done = (per_stage * keep as usize + extra).min(total);
        let run = fill_store(
            &conn,
            &SyntheticRun {
                name: "seq".into(),
                tasks,
                conditions: conditions.clone(),
                trials,
                done_fraction: done as f64 / total as f64,
                seed,
            },
        )
        .unwrap();
        let stop = EarlyStopRow {
            condition: "curated".into(),
            trials: keep,
            comparison: "B-A".into(),
            stage: 1,
            not_run: 0,
            cost_saved_usd: None,
            at: crate::domain::now_rfc3339(),
        };
        let not_run = queries::stop_condition(&conn, run.id, &stop, Some(0.25)).unwrap();
        let (cond, kept) = &queries::early_stop_trials(&conn, run.id).unwrap()[0];
        assert_eq!((cond.as_str(), *kept), ("curated", keep));
        queries::put_design(
            &conn,
            &crate::domain::sequential::DesignRow {
                run_id: run.id,
                stages: trials as usize,
                alpha: 0.025,
                beta: 0.2,
                stage_trials: (1..=trials).collect(),
                efficacy: Vec::new(),
                futility: Vec::new(),
                comparisons: Vec::new(),
                early_stop: true,
                note: None,
            },
        )
        .unwrap();
        let rec = queries::sequential_record(&conn, run.id).unwrap().unwrap();
        assert_eq!(rec.stops[0].not_run, not_run.len());
        // The cost saved: 0.25 USD per trial not run.
        assert_eq!(
            rec.stops[0].cost_saved_usd,
            Some(0.25 * not_run.len() as f64)
        );
        for id in &not_run {
            let t = queries::get_trial(&conn, *id).unwrap();
            assert!(t.trial_index > keep && t.outcome.is_none());
        }
        let report = crate::report::build(
            &conn,
            &Selection::Runs(vec!["seq".into()]),
            &Scoring::default(),
        )
        .unwrap();
        let (_, csv) = crate::report::csv::tables(&report)
            .into_iter()
            .find(|(n, _)| n == "per_task.csv")
            .unwrap();
        let mut rd = csv::Reader::from_reader(csv.as_bytes());
        let head = rd.headers().unwrap().clone();
        let col = |n: &str| head.iter().position(|h| h == n).unwrap();
        let (c_cond, c_planned, c_mean, c_task) = (
            col("condition"),
            col("planned"),
            col("mean_reward"),
            col("task"),
        );
        let current = queries::current_trials(&conn, run.id).unwrap();
        let mut planned: std::collections::BTreeMap<String, Vec<u32>> = Default::default();
        for rec in rd.records() {
            let rec = rec.unwrap();
            let cond_label = rec[c_cond].to_string();
            let n: u32 = rec[c_planned].parse().unwrap();
            planned.entry(cond_label.clone()).or_default().push(n);
            // Recompute the stopped condition's task mean from the store's rows with index ≤ n.
            let key = report
                .results
                .conditions
                .iter()
                .find(|c| c.label == cond_label)
                .unwrap()
                .condition
                .clone();
            let sum: f64 = current
                .iter()
                .filter(|t| t.condition == key && t.task_id == rec[c_task] && t.trial_index <= n)
                .map(crate::analysis::metrics::trial_reward)
                .sum();
            let mean: f64 = rec[c_mean].parse().unwrap();
            assert!((mean - sum / f64::from(n)).abs() < 1e-9, "{rec:?}");
        }
        assert_eq!(planned.len(), 2);
        for (cond, ns) in &planned {
            assert_eq!(ns.len(), tasks, "{cond}");
            assert!(ns.iter().all(|n| *n == ns[0]), "{cond}: {ns:?}");
        }
        let stopped = report
            .results
            .conditions
            .iter()
            .find(|c| c.condition == "curated")
            .unwrap();
        assert!(planned[&stopped.label].iter().all(|n| *n == keep));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn a_stopped_runs_per_task_csv_has_equal_trials_per_task_and_condition(
            tasks in 2usize..6,
            trials in 2u32..5,
            keep_frac in 0.0f64..1.0,
            extra in 0usize..4,
            seed in 0u64..1000,
        ) {
            let keep = 1 + ((trials - 1) as f64 * keep_frac) as u32;
            stopped_run_is_balanced(tasks, trials, keep.min(trials - 1), extra, seed);
        }
    }
}
