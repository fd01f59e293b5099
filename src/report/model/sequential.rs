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
        let name = format!("{} − {}", label(&c.with), label(&c.without));
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
                    "stopped for efficacy"
                } else {
                    "stopped for futility"
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
            "early stop: {} keeps {} trials per task ({} − stage {}); {} queued trials not run",
            label(&s.condition),
            s.trials,
            s.comparison,
            s.stage,
            s.not_run
        ));
    }
    let saved: usize = rec.stops.iter().map(|s| s.not_run).sum();
    if d.early_stop {
        out.push(format!("trials saved by early stops: {saved}"));
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
