//! The evaluation plan's hypotheses, answered from an experiment's results
//! (`evaluation-plan.md`, "Hypothesis"). Acontext-learned skills will:
//!
//! 1. give a positive improvement over the baseline — A' vs A, Δ > 0 — unlike SkillsBench's
//!    self-generated skills (−1.3 pp); and, when condition C ran, beat them on the same tasks:
//!    A' vs C;
//! 2. close part of the gap between no skills and curated skills: the share
//!    `(A' − A) / (B − A)` of Method D pass rates, with a paired bootstrap CI over tasks
//!    ([`super::ci::CiMethod::gap_closed`]);
//! 3. possibly improve on curated skills: B' vs B.
//!
//! The verdict reads the 95% interval: **supported** when it lies above 0, **contradicted** when it
//! lies at or below 0 (no positive effect is within it), **inconclusive** when it spans 0,
//! **undefined** when the measure does not exist (curated skills not above no skills: no gap to
//! close), **not measured** when a condition it needs did not run.

use serde::Serialize;

use super::ci::{Ci, CiMethod};
use super::metrics::delta_pp;

/// What a hypothesis reads of one condition's results (a view of
/// [`super::results::ConditionResult`], so this module does not depend on the results pass).
#[derive(Debug, Clone, Copy)]
pub struct Measured<'a> {
    /// The condition's label: `A`, `B`, `A'`, `B'`, `C`.
    pub label: &'a str,
    /// Method D pass rate, fraction.
    pub pass_rate: f64,
    /// Per-task Method D means, in the task order shared by every condition of the set.
    pub per_task: &'a [f64],
    /// Tasks in the denominator.
    pub n_tasks: usize,
}

/// SkillsBench's self-generated Δ over no skills, percentage points (paper, Table 3 average).
pub const PAPER_SELF_GENERATED_PP: f64 = -1.3;

/// How a hypothesis fared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The interval lies on the hypothesis's side of 0.
    Supported,
    /// The interval lies on the other side.
    Contradicted,
    /// The interval spans 0.
    Inconclusive,
    /// The measure does not exist here.
    Undefined,
    /// A condition it needs did not run.
    NotMeasured,
}

impl Verdict {
    /// Text for tables.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Supported => "supported",
            Verdict::Contradicted => "contradicted",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Undefined => "undefined",
            Verdict::NotMeasured => "not measured",
        }
    }
}

/// One hypothesis on one task set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hypothesis {
    /// 1, 2 or 3 (the plan's numbering).
    pub number: u8,
    /// `all tasks`, `same-task` or `held-out`.
    pub scope: String,
    /// The hypothesis, in the plan's words.
    pub claim: String,
    /// What was measured (`Δ A' − A`, `(A' − A) / (B − A)`).
    pub measure: String,
    /// The measured value: percentage points for a Δ, a fraction for the gap share.
    pub value: Option<f64>,
    /// `pp` or `share`.
    pub unit: String,
    /// Its 95% CI, same unit.
    pub ci: Option<Ci>,
    /// Verdict.
    pub verdict: Verdict,
    /// One sentence with the numbers (after the verdict).
    pub answer: String,
    /// Tasks in the denominator.
    pub n_tasks: usize,
}

fn find<'a>(conditions: &[Measured<'a>], label: &str) -> Option<Measured<'a>> {
    conditions.iter().find(|c| c.label == label).copied()
}

/// The verdict on "the measure is positive" from its interval (the point when there is none).
fn verdict_of(ci: Option<Ci>, value: f64) -> Verdict {
    match ci {
        Some(c) if c.low > 0.0 => Verdict::Supported,
        Some(c) if c.high <= 0.0 => Verdict::Contradicted,
        Some(_) => Verdict::Inconclusive,
        None if value > 0.0 => Verdict::Supported,
        None => Verdict::Contradicted,
    }
}

fn fmt_ci_pp(ci: Option<Ci>) -> String {
    ci.map(|c| format!(" (95% CI {:+.1} to {:+.1})", c.low, c.high))
        .unwrap_or_default()
}

/// Which hypothesis, on which tasks, in which words.
struct Claim<'a> {
    number: u8,
    scope: &'a str,
    claim: &'a str,
}

/// A Δ hypothesis: `with` − `without` should be positive; `context` ends the answer.
fn delta(
    Claim {
        number,
        scope,
        claim,
    }: Claim<'_>,
    conditions: &[Measured<'_>],
    (with, without): (&str, &str),
    method: &CiMethod,
    context: &str,
) -> Hypothesis {
    let measure = format!("Δ {with} − {without}");
    let (Some(w), Some(wo)) = (find(conditions, with), find(conditions, without)) else {
        return Hypothesis {
            number,
            scope: scope.into(),
            claim: claim.into(),
            measure,
            value: None,
            unit: "pp".into(),
            ci: None,
            verdict: Verdict::NotMeasured,
            answer: format!("condition {with} or {without} did not run"),
            n_tasks: 0,
        };
    };
    let d = delta_pp(w.pass_rate, wo.pass_rate);
    let ci = method
        .paired_difference(w.per_task, wo.per_task)
        .map(|c| Ci {
            low: c.low * 100.0,
            high: c.high * 100.0,
        });
    let verdict = verdict_of(ci, d);
    let answer = format!(
        "{with} {:.1}% vs {without} {:.1}%, Δ = {d:+.1} pp{} over {} task(s){context}",
        w.pass_rate * 100.0,
        wo.pass_rate * 100.0,
        fmt_ci_pp(ci),
        w.n_tasks
    );
    Hypothesis {
        number,
        scope: scope.into(),
        claim: claim.into(),
        measure,
        value: Some(d),
        unit: "pp".into(),
        ci,
        verdict,
        answer,
        n_tasks: w.n_tasks,
    }
}

/// Hypothesis 2 on `conditions`.
fn gap(scope: &str, conditions: &[Measured<'_>], method: &CiMethod) -> Hypothesis {
    let claim = "A' closes part of the gap between no skills (A) and curated skills (B)";
    let measure = "(A' − A) / (B − A)".to_string();
    let base = Hypothesis {
        number: 2,
        scope: scope.into(),
        claim: claim.into(),
        measure,
        value: None,
        unit: "share".into(),
        ci: None,
        verdict: Verdict::NotMeasured,
        answer: String::new(),
        n_tasks: 0,
    };
    let (Some(a2), Some(a), Some(b)) = (
        find(conditions, "A'"),
        find(conditions, "A"),
        find(conditions, "B"),
    ) else {
        return Hypothesis {
            answer: "A, B or A' did not run".into(),
            ..base
        };
    };
    let gap = b.pass_rate - a.pass_rate;
    if gap <= 1e-12 {
        return Hypothesis {
            verdict: Verdict::Undefined,
            answer: format!(
                "curated skills (B {:.1}%) do not beat no skills (A {:.1}%) here, so there is no gap to close (A' {:.1}%)",
                b.pass_rate * 100.0,
                a.pass_rate * 100.0,
                a2.pass_rate * 100.0
            ),
            n_tasks: a.n_tasks,
            ..base
        };
    }
    let share = (a2.pass_rate - a.pass_rate) / gap;
    let boot = method.gap_closed(a2.per_task, a.per_task, b.per_task);
    let ci = boot.map(|r| r.ci);
    let verdict = verdict_of(ci, share);
    let undefined = boot
        .filter(|r| r.undefined > 0)
        .map(|r| {
            format!(
                "; {} of {} resamples had no gap and were left out",
                r.undefined, r.resamples
            )
        })
        .unwrap_or_default();
    Hypothesis {
        value: Some(share),
        ci,
        verdict,
        answer: format!(
            "A' closes {:.0}% of the A → B gap{} (A {:.1}%, A' {:.1}%, B {:.1}%) over {} task(s){undefined}",
            share * 100.0,
            ci.map(|c| format!(" (95% CI {:.0}% to {:.0}%)", c.low * 100.0, c.high * 100.0))
                .unwrap_or_default(),
            a.pass_rate * 100.0,
            a2.pass_rate * 100.0,
            b.pass_rate * 100.0,
            a.n_tasks
        ),
        n_tasks: a.n_tasks,
        ..base
    }
}

/// The plan's hypotheses on the conditions of one task set (`scope`): 1 (A' vs A, and A' vs C
/// when C ran), 2 (gap share), 3 (B' vs B).
pub fn answer(scope: &str, conditions: &[Measured<'_>], method: &CiMethod) -> Vec<Hypothesis> {
    let claim = |number, claim| Claim {
        number,
        scope,
        claim,
    };
    let mut out = vec![delta(
        claim(1, "Learned skills (A') improve on no skills (A)"),
        conditions,
        ("A'", "A"),
        method,
        "",
    )];
    if let Some(c) = find(conditions, "C") {
        let context = find(conditions, "A")
            .map(|a| {
                format!(
                    "; self-generated vs no skills here: Δ = {:+.1} pp (SkillsBench: {PAPER_SELF_GENERATED_PP:+.1} pp)",
                    delta_pp(c.pass_rate, a.pass_rate)
                )
            })
            .unwrap_or_default();
        out.push(delta(
            claim(1, "Learned skills (A') beat self-generated skills (C)"),
            conditions,
            ("A'", "C"),
            method,
            &context,
        ));
    }
    out.push(gap(scope, conditions, method));
    out.push(delta(
        claim(3, "Learning improves on curated skills (B' vs B)"),
        conditions,
        ("B'", "B"),
        method,
        "",
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond<'a>(label: &'a str, per_task: &'a [f64]) -> Measured<'a> {
        let n = per_task.len();
        Measured {
            label,
            pass_rate: per_task.iter().sum::<f64>() / n as f64,
            per_task,
            n_tasks: n,
        }
    }

    #[test]
    fn each_hypothesis_reads_its_interval() {
        let m = CiMethod::default();
        let a = cond("A", &[0.0, 0.0, 0.2, 0.0, 0.2, 0.0]);
        let b = cond("B", &[1.0, 0.8, 1.0, 0.6, 1.0, 0.8]);
        let a2 = cond("A'", &[0.6, 0.4, 0.6, 0.2, 0.6, 0.4]);
        let b2 = cond("B'", &[1.0, 0.8, 1.0, 0.6, 1.0, 0.8]);
        let c = cond("C", &[0.0, 0.0, 0.0, 0.0, 0.2, 0.0]);
        let h = answer("all tasks", &[a, b, c, a2, b2], &m);
        assert_eq!(h.len(), 4);
        assert_eq!(h[0].verdict, Verdict::Supported);
        assert_eq!(h[1].measure, "Δ A' − C");
        assert!(
            h[1].answer.contains("SkillsBench: -1.3 pp"),
            "{}",
            h[1].answer
        );
        assert_eq!(h[2].number, 2);
        let share = h[2].value.unwrap();
        // A 0.4/6, A' 2.8/6, B 5.2/6: (2.8 − 0.4) / (5.2 − 0.4) = 0.5.
        assert!((share - 0.5).abs() < 1e-12, "{share}");
        assert_eq!(h[2].verdict, Verdict::Supported);
        assert!(h[2].ci.unwrap().low > 0.0 && h[2].ci.unwrap().high < 1.0);
        // B' = B on every task: no positive effect within the interval.
        assert_eq!(h[3].verdict, Verdict::Contradicted);
        // An interval across 0.
        let mixed = answer(
            "all tasks",
            &[
                cond("A", &[0.0, 1.0, 0.0, 1.0]),
                cond("A'", &[1.0, 0.0, 1.0, 0.0]),
            ],
            &m,
        );
        assert_eq!(mixed[0].verdict, Verdict::Inconclusive);
        // No gap to close, and a missing condition.
        let flat = answer("held-out", &[a, cond("B", a.per_task)], &m);
        assert_eq!(flat[0].verdict, Verdict::NotMeasured);
        let g = &flat[1];
        assert_eq!(g.verdict, Verdict::NotMeasured);
        let flat = answer(
            "held-out",
            &[a, cond("B", a.per_task), cond("A'", b.per_task)],
            &m,
        );
        assert_eq!(flat[1].verdict, Verdict::Undefined);
        assert_eq!(flat[0].scope, "held-out");
    }
}
