//! The words of a group-sequential design (issues 38, 47, 48): the design, each look's decision
//! and why, the estimate after a stop and the trials an early stop saved — one wording, made here
//! from the stored data (`domain::sequential`), for the report's "Sequential design" section,
//! `skillscope status`, the engine's event log and `skillscope replay`; numbers through
//! [`crate::format`].

use super::Block;
use crate::analysis::results::Results;
use crate::domain::sequential::{
    DesignRow, DesignSpec, EarlyStopRow, LookDecision, LookRow, LookWhy, SequentialRecord,
    Statistic,
};
use crate::format;
use crate::sanitize::one_line;

/// Information fractions as `0.48/0.84/1`.
fn fractions_text(t: &[f64]) -> String {
    t.iter()
        .map(|t| {
            format!("{t:.2}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The design in one line: `3 stages at 1/2/3 trials per task (α spent at information
/// 0.33/0.67/1); O'Brien–Fleming α-spending, one-sided α = 0.025; sign-flip test (65536 flips);
/// non-binding futility β = 0.01 from stage 2; at least 6 tasks`.
pub fn spec_text(s: &DesignSpec) -> String {
    let trials = s
        .stage_trials
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join("/");
    let fractions = fractions_text(&s.fractions);
    let statistic = match s.statistic {
        Statistic::SignFlip { flips, .. } => format!(
            "within-task sign-flip test ({} flips, every flip up to {} tasks)",
            format::thousands(flips as usize),
            flips.max(2).ilog2()
        ),
        Statistic::PairedZ => "paired z against normal bounds (recorded before issue 47)".into(),
    };
    let futility = match s.futility_from {
        Some(f) => format!(
            "non-binding futility β = {} from stage {f}",
            format::probability(s.beta)
        ),
        None => "no futility stop".into(),
    };
    format!(
        "{} stages at {trials} trials per task (α spent at information {fractions}); O'Brien–Fleming α-spending, one-sided α = {}; {statistic}; {futility}; at least {} tasks",
        s.stages,
        format::probability(s.alpha),
        s.min_tasks
    )
}

/// Why look `l` decided what it did, with its numbers: `Z = 4.00 ≥ efficacy bound 3.36: the
/// effect is shown`.
pub fn why_text(l: &LookRow) -> String {
    let z = format::z(l.z);
    let c = format::bound(l.bound);
    let f = format::z(l.futility_bound);
    match l.why {
        LookWhy::EfficacyCrossed => format!("Z = {z} ≥ efficacy bound {c}: the effect is shown"),
        LookWhy::FutilityCrossed => {
            format!("Z = {z} ≤ futility bound {f}: no effect worth going on for")
        }
        LookWhy::LastStageBelow => {
            format!("Z = {z} < efficacy bound {c} at the last stage: no effect shown")
        }
        LookWhy::BetweenBounds => {
            format!("Z = {z} between the futility bound {f} and the efficacy bound {c}")
        }
        LookWhy::BelowEfficacy => format!("Z = {z} below the efficacy bound {c}"),
        LookWhy::Unreachable => format!(
            "Z = {z}; {} are too few for the sign-flip test to show an effect by this stage (bound ∞){}",
            format::count(l.n_tasks, "task", "tasks"),
            if l.decision == LookDecision::Continue {
                ""
            } else {
                ": no effect shown"
            }
        ),
        LookWhy::Undefined => format!(
            "the statistic is undefined (fewer than 2 tasks with rewards on both sides){}",
            if l.decision == LookDecision::Continue {
                ""
            } else {
                ": no effect shown"
            }
        ),
    }
}

/// The verdict of look `l` of a `stages`-stage design: `continues`, `answered early (efficacy)`,
/// `answered at the last stage (no effect shown)`.
pub fn verdict_text(l: &LookRow, stages: usize) -> String {
    let when = if l.stage < stages {
        "early"
    } else {
        "at the last stage"
    };
    match l.decision {
        LookDecision::Continue => "continues".into(),
        LookDecision::Efficacy => format!("answered {when}: effect shown"),
        LookDecision::Futility => format!("answered {when}: no effect shown"),
    }
}

/// The verdict of look `l` in two or three words: `effect shown`, `no effect shown`,
/// `not answered yet`.
pub fn verdict_label(l: &LookRow) -> &'static str {
    match l.decision {
        LookDecision::Efficacy => "effect shown",
        LookDecision::Futility => "no effect shown",
        LookDecision::Continue => "not answered yet",
    }
}

/// The estimate at a stop: `adjusted Δ +33.1 pp (median-unbiased), 95% CI +2.4 pp to +63.4 pp
/// (stage-wise ordering), p 0.0019; naive Δ +36.3 pp` — or the naive Δ alone while it goes on.
pub fn estimate_text(l: &LookRow) -> String {
    let naive = l
        .mean_diff
        .map_or(format::UNDEFINED.to_string(), format::pp_of);
    if l.decision == LookDecision::Continue {
        return format!("naive Δ {naive}");
    }
    match (l.adjusted, l.ci) {
        (Some(a), Some((lo, hi))) => format!(
            "adjusted Δ {} (median-unbiased), 95% CI {} to {} (stage-wise ordering){}; naive Δ {naive}",
            format::pp_of(a),
            format::pp_of(lo),
            format::pp_of(hi),
            l.p_value
                .map(|p| format!(", p {}", format::probability(p)))
                .unwrap_or_default()
        ),
        _ => format!("adjusted Δ — (the statistic is undefined); naive Δ {naive}"),
    }
}

/// Where look `l` is: `stage 2 of 3 (2 trials per task, 8 tasks)`.
fn stage_text(l: &LookRow, stages: usize) -> String {
    format!(
        "stage {} of {stages} ({} per task, {})",
        l.stage,
        format::count(l.trials as usize, "trial", "trials"),
        format::count(l.n_tasks, "task", "tasks")
    )
}

/// The operator's line for look `l` of design `d` (the engine's event log, `replay`):
/// `sequential B-A, stage 2 of 3 (2 trials per task, 8 tasks): Δ +100.0 pp; Z = 8.00 ≥
/// efficacy bound 2.60: the effect is shown — answered early: effect shown`.
pub fn look_line(d: &DesignRow, l: &LookRow) -> String {
    format!(
        "sequential {}, {}: Δ {}; {} — {}",
        one_line(&l.comparison),
        stage_text(l, d.stages()),
        l.mean_diff
            .map_or(format::UNDEFINED.to_string(), format::pp_of),
        why_text(l),
        verdict_text(l, d.stages())
    )
}

/// The line of an early stop: `early stop: B keeps 2 trials per task (B-A, stage 2); 8 queued
/// trials not run, projected $1.20 saved`.
pub fn stop_line(s: &EarlyStopRow, label: &dyn Fn(&str) -> String) -> String {
    format!(
        "early stop: {} keeps {} per task ({}, stage {}); {} not run{}",
        label(&s.condition),
        format::count(s.trials as usize, "trial", "trials"),
        one_line(&s.comparison),
        s.stage,
        format::count(s.not_run, "queued trial", "queued trials"),
        s.cost_saved_usd
            .map(|c| format!(", projected ${c:.2} saved"))
            .unwrap_or_default()
    )
}

/// How design `asked` differs from design `stored` — every field that does, with both values
/// (`stages 3 (now 5)`) — or `None` when they are the same design (its spec, comparisons and
/// early stopping; the bounds follow from the spec).
pub fn conflict_text(stored: &DesignRow, asked: &DesignRow) -> Option<String> {
    let (a, b) = (&stored.spec, &asked.spec);
    fn json<T: serde::Serialize>(v: &T) -> String {
        serde_json::to_string(v).unwrap_or_default()
    }
    let mut diffs = Vec::new();
    let mut field = |name: &str, x: String, y: String| {
        if x != y {
            diffs.push(format!("{name} {x} (now {y})"));
        }
    };
    field("stages", a.stages.to_string(), b.stages.to_string());
    field(
        "trials per stage",
        json(&a.stage_trials),
        json(&b.stage_trials),
    );
    field(
        "fractions",
        fractions_text(&a.fractions),
        fractions_text(&b.fractions),
    );
    field(
        "α",
        format::probability(a.alpha),
        format::probability(b.alpha),
    );
    field(
        "β",
        format::probability(a.beta),
        format::probability(b.beta),
    );
    let from = |f: Option<usize>| f.map_or("none".to_string(), |f| format!("from stage {f}"));
    field("futility", from(a.futility_from), from(b.futility_from));
    field("statistic", json(&a.statistic), json(&b.statistic));
    let on = |e: bool| if e { "on" } else { "off" }.to_string();
    field(
        "early stopping",
        on(stored.early_stop),
        on(asked.early_stop),
    );
    let cmp = |d: &DesignRow| {
        d.comparisons
            .iter()
            .map(|c| one_line(&c.label))
            .collect::<Vec<_>>()
            .join(", ")
    };
    field("comparisons", cmp(stored), cmp(asked));
    (!diffs.is_empty()).then(|| diffs.join(", "))
}

/// The lines that state `rec`'s design and where each comparison stands; `label` names a
/// condition key (A, B, A′, …).
pub fn lines(rec: &SequentialRecord, label: &dyn Fn(&str) -> String) -> Vec<String> {
    let d = &rec.design;
    let mut out = vec![format!(
        "design: {}{}",
        spec_text(&d.spec),
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
        out.push(format!(
            "{name}: {} — {}: {}; {}",
            stage_text(l, d.stages()),
            verdict_text(l, d.stages()),
            why_text(l),
            estimate_text(l)
        ));
    }
    for s in &rec.stops {
        out.push(stop_line(s, label));
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
                spec: crate::analysis::sequential::design::spec(
                    trials,
                    trials as usize,
                    &crate::analysis::sequential::design::Choices::with_futility(None),
                )
                .unwrap(),
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
