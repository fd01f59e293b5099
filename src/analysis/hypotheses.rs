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
//! Each is measured over the **matched tasks**: those every condition it reads ran (planned
//! trials of); a task one of them never ran is left out, never counted 0.
//!
//! Where a group-sequential design judged the comparison a Δ hypothesis reads (issue 47), the
//! design's verdict is the hypothesis's ([`apply_sequential`]): **supported** when it showed the
//! effect, **contradicted** when it stopped with its stage-wise interval at or below 0,
//! **inconclusive** otherwise (no effect shown, or not answered yet); the value is the adjusted
//! Δ, and the naive Δ and its bootstrap interval stay in the answer.
//!
//! Otherwise the verdict reads the 95% interval ([`super::ci::Ci::verdict`]): **supported** when it lies
//! above 0, **contradicted** when it lies at or below 0 (no positive effect is within it),
//! **inconclusive** when it spans 0, **borderline** when it touches 0 within its Monte Carlo error
//! (another seed or resample count could move it across 0), **undefined** when the measure or its
//! interval does not exist (curated skills not above no skills: no gap to close; fewer than 2
//! matched tasks), **not measured** when a condition it needs did not run.

use serde::Serialize;

use super::ci::{Ci, CiMethod};
use super::metrics::delta_pp;
use crate::domain::sequential::SequentialVerdict;

/// What a hypothesis reads of one condition's results (a view of
/// [`super::results::ConditionResult`], so this module does not depend on the results pass).
#[derive(Debug, Clone, Copy)]
pub struct Measured<'a> {
    /// The condition's label: `A`, `B`, `A'`, `B'`, `C`.
    pub label: &'a str,
    /// Per-task Method D means, in the task order shared by every condition of the set; `None`
    /// for a task the condition did not run.
    pub per_task: &'a [Option<f64>],
    /// Per task: the rewards of its finished trials (empty: none finished yet); an empty slice
    /// when not known (published aggregates): every task then counts as finished.
    pub finished: &'a [Vec<f64>],
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
    /// The interval touches 0 within its Monte Carlo error: the verdict could change with the
    /// seed or the resample count.
    Borderline,
    /// The measure does not exist here.
    Undefined,
    /// A condition it needs did not run.
    NotMeasured,
    /// The study cannot answer it: its interval is a single point (every resample gave the same
    /// value), or its minimum detectable effect exceeds the effect the hypothesis is judged
    /// against — a verdict either way would not be evidence.
    Underpowered,
}

impl Verdict {
    /// Text for tables.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Supported => "supported",
            Verdict::Contradicted => "contradicted",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Borderline => "borderline",
            Verdict::Undefined => "undefined",
            Verdict::NotMeasured => "not measured",
            Verdict::Underpowered => "inconclusive (underpowered)",
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
    /// Its 95% CI, same unit (with its seed, resamples and Monte Carlo bands).
    pub ci: Option<Ci>,
    /// Verdict.
    pub verdict: Verdict,
    /// One sentence with the numbers (after the verdict).
    pub answer: String,
    /// Matched tasks it is measured over (every condition it reads ran them).
    pub n_tasks: usize,
    /// The minimum detectable effect of its Δ at 80 % power and α 0.05 (two-sided), percentage
    /// points: `(z₀.₉₇₅ + z₀.₈) · SE` with SE the paired standard error of the per-task
    /// differences as run (Miller 2024); `None` without one (fewer than 2 tasks).
    pub mde_pp: Option<f64>,
    /// The effect it is judged against, percentage points (`Scoring::effect_pp`).
    pub effect_pp: f64,
    /// The group-sequential design that judged its comparison, whose verdict this is
    /// ([`apply_sequential`]); `answer` is then the fixed-design reading beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<SequentialVerdict>,
}

fn find<'a>(conditions: &[Measured<'a>], label: &str) -> Option<Measured<'a>> {
    conditions.iter().find(|c| c.label == label).copied()
}

/// The verdict on "the measure is positive" from its interval and the study's power: undefined
/// without an interval; underpowered when the interval is a single point (every resample the
/// same) or the minimum detectable effect `mde_pp` exceeds `effect_pp`; else what the interval
/// says.
fn verdict_of(ci: Option<Ci>, mde_pp: Option<f64>, effect_pp: f64) -> Verdict {
    use super::ci::Side;
    if ci.is_some_and(|c| (c.high - c.low).abs() < 1e-9) || mde_pp.is_some_and(|m| m > effect_pp) {
        return Verdict::Underpowered;
    }
    match ci.map(|c| c.verdict()) {
        None => Verdict::Undefined,
        Some((_, true)) => Verdict::Borderline,
        Some((Side::Above, false)) => Verdict::Supported,
        Some((Side::AtOrBelow, false)) => Verdict::Contradicted,
        Some((Side::Spans, false)) => Verdict::Inconclusive,
    }
}

/// ` (95% CI +1.2 to +9.8; 2000 resamples, seed 7)` for an interval in pp; empty without one.
fn ci_words(ci: Option<Ci>) -> String {
    ci.map(|c| {
        format!(
            " (95% CI {} to {}; {} resamples, seed {})",
            crate::format::pp(c.low),
            crate::format::pp(c.high),
            c.resamples,
            c.seed
        )
    })
    .unwrap_or_default()
}

/// The tasks every one of `conditions` ran, as indices into their per-task slices.
fn matched(conditions: &[&Measured<'_>]) -> Vec<usize> {
    let n = conditions
        .iter()
        .map(|c| c.per_task.len())
        .min()
        .unwrap_or(0);
    (0..n)
        .filter(|&i| conditions.iter().all(|c| c.per_task[i].is_some()))
        .collect()
}

/// Values of `m` at `idx` (tasks it ran).
fn at(m: &Measured<'_>, idx: &[usize]) -> Vec<f64> {
    idx.iter().filter_map(|&i| m.per_task[i]).collect()
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// ` over 3 of 19 task(s) (matched: …)` or ` over 19 task(s)`.
fn over(matched: usize, union: usize) -> String {
    if matched < union {
        format!(
            " over the {matched} of {union} task(s) both ran (the others are left out, not counted 0)"
        )
    } else {
        format!(" over {matched} task(s)")
    }
}

/// Tasks at least one of `conditions` ran.
fn union(conditions: &[&Measured<'_>]) -> usize {
    let n = conditions
        .iter()
        .map(|c| c.per_task.len())
        .max()
        .unwrap_or(0);
    (0..n)
        .filter(|&i| {
            conditions
                .iter()
                .any(|c| c.per_task.get(i).is_some_and(Option::is_some))
        })
        .count()
}

/// Which hypothesis, on which tasks, in which words.
struct Claim<'a> {
    number: u8,
    scope: &'a str,
    claim: &'a str,
}

/// The MDE (pp) of the paired difference of `with` and `without` over the same tasks.
fn mde_pp(with: &[f64], without: &[f64]) -> Option<f64> {
    super::power::se_paired(with, without).map(|se| super::power::Z_SUM * se * 100.0)
}

/// Why a verdict is underpowered, for its answer (empty for any other verdict).
fn underpowered_note(verdict: Verdict, ci: Option<Ci>, mde: Option<f64>, effect_pp: f64) -> String {
    if verdict != Verdict::Underpowered {
        return String::new();
    }
    match (ci, mde) {
        (Some(c), _) if (c.high - c.low).abs() < 1e-9 => {
            "; underpowered: the interval is one point — every resample gave the same value".into()
        }
        (_, Some(m)) => format!(
            "; underpowered: the minimum detectable effect is {} pp (80% power, α 0.05), above the {} pp this hypothesis is judged against",
            crate::format::se(m),
            crate::format::se(effect_pp)
        ),
        _ => String::new(),
    }
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
    effect_pp: f64,
) -> Hypothesis {
    let measure = format!("Δ {with} − {without}");
    // A hypothesis without a number: the verdict says why, the answer in words.
    let unmeasured = |verdict, answer| Hypothesis {
        number,
        scope: scope.into(),
        claim: claim.into(),
        measure: measure.clone(),
        value: None,
        unit: "pp".into(),
        ci: None,
        verdict,
        answer,
        n_tasks: 0,
        mde_pp: None,
        effect_pp,
        sequential: None,
    };
    let (Some(w), Some(wo)) = (find(conditions, with), find(conditions, without)) else {
        return unmeasured(
            Verdict::NotMeasured,
            format!("condition {with} or {without} did not run"),
        );
    };
    let idx = matched(&[&w, &wo]);
    let (pw, pwo) = (at(&w, &idx), at(&wo, &idx));
    if idx.is_empty() {
        return unmeasured(
            Verdict::Undefined,
            format!("no task ran under both {with} and {without}"),
        );
    }
    // Mid-run, a side none of whose trials there has finished scores 0: no Δ against it.
    if let Some(side) = [&w, &wo].into_iter().find(|m| {
        idx.iter()
            .all(|&i| m.finished.get(i).is_some_and(Vec::is_empty))
    }) {
        return unmeasured(
            Verdict::Undefined,
            format!("no trial of {} has finished on these tasks", side.label),
        );
    }
    let (mw, mwo) = (mean(&pw), mean(&pwo));
    let d = delta_pp(mw, mwo);
    let ci = method.paired_difference(&pw, &pwo).map(|c| c.scaled(100.0));
    let mde = mde_pp(&pw, &pwo);
    let verdict = verdict_of(ci, mde, effect_pp);
    let why = super::ci::why_undefined(idx.len())
        .map(|w| format!("; no interval ({w})"))
        .unwrap_or_default();
    let answer = format!(
        "{with} {} vs {without} {}, Δ = {} pp{}{}{why}{}{context}",
        crate::format::rate(mw),
        crate::format::rate(mwo),
        crate::format::pp(d),
        ci_words(ci),
        over(idx.len(), union(&[&w, &wo])),
        underpowered_note(verdict, ci, mde, effect_pp)
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
        n_tasks: idx.len(),
        mde_pp: mde,
        effect_pp,
        sequential: None,
    }
}

/// Hypothesis 2 on `conditions`.
fn gap(scope: &str, conditions: &[Measured<'_>], method: &CiMethod, effect_pp: f64) -> Hypothesis {
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
        mde_pp: None,
        effect_pp,
        sequential: None,
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
    let idx = matched(&[&a2, &a, &b]);
    let (pa2, pa, pb) = (at(&a2, &idx), at(&a, &idx), at(&b, &idx));
    let (ma2, ma, mb) = (mean(&pa2), mean(&pa), mean(&pb));
    let tasks = over(idx.len(), union(&[&a2, &a, &b]));
    if idx.is_empty() {
        return Hypothesis {
            verdict: Verdict::Undefined,
            answer: "no task ran under all of A, B and A'".into(),
            ..base
        };
    }
    let gap = mb - ma;
    if gap <= 1e-12 {
        return Hypothesis {
            verdict: Verdict::Undefined,
            answer: format!(
                "curated skills (B {:.1}%) do not beat no skills (A {:.1}%) here, so there is no gap to close (A' {:.1}%){tasks}",
                mb * 100.0,
                ma * 100.0,
                ma2 * 100.0
            ),
            n_tasks: idx.len(),
            ..base
        };
    }
    let share = (ma2 - ma) / gap;
    let boot = method.gap_closed(&pa2, &pa, &pb);
    let ci = boot.map(|r| r.ci);
    // The gap's share moves with A' − A: its power is that difference's.
    let mde = mde_pp(&pa2, &pa);
    let verdict = verdict_of(ci, mde, effect_pp);
    let undefined = match boot {
        Some(r) if r.undefined > 0 => format!(
            "; {} of {} resamples had no gap and were left out",
            r.undefined, r.resamples
        ),
        Some(_) => String::new(),
        None => format!(
            "; no interval ({})",
            super::ci::why_undefined(idx.len()).unwrap_or_else(|| "no resample has a gap".into())
        ),
    };
    Hypothesis {
        value: Some(share),
        ci,
        verdict,
        answer: format!(
            "A' closes {:.0}% of the A → B gap{} (A {:.1}%, A' {:.1}%, B {:.1}%){tasks}{undefined}{}",
            share * 100.0,
            ci.map(|c| format!(
                " (95% CI {:.0}% to {:.0}%; {} resamples, seed {})",
                c.low * 100.0,
                c.high * 100.0,
                c.resamples,
                c.seed
            ))
            .unwrap_or_default(),
            ma * 100.0,
            ma2 * 100.0,
            mb * 100.0,
            underpowered_note(verdict, ci.map(|c| c.scaled(100.0)), mde, effect_pp),
        ),
        n_tasks: idx.len(),
        mde_pp: mde,
        ..base
    }
}

/// Makes the verdict of a group-sequential design that judged `h`'s comparison the hypothesis's
/// (see the module docs): the verdict, the value (the adjusted Δ at a stop, without a bootstrap
/// interval; the naive Δ while the design goes on) and [`Hypothesis::sequential`], which the
/// report words beside the naive answer.
pub fn apply_sequential(h: &mut Hypothesis, v: &SequentialVerdict) {
    h.verdict = if v.effect() {
        Verdict::Supported
    } else if v.answered() && v.interval_pp().is_some_and(|(_, hi)| hi <= 0.0) {
        Verdict::Contradicted
    } else {
        Verdict::Inconclusive
    };
    if v.answered()
        && let Some(a) = v.adjusted_pp()
    {
        h.value = Some(a);
        h.ci = None;
    }
    h.sequential = Some(v.clone());
}

/// The plan's hypotheses on the conditions of one task set (`scope`): 1 (A' vs A, and A' vs C
/// when C ran), 2 (gap share), 3 (B' vs B).
/// `effect_pp`: the effect each is judged against (a study that cannot detect it is
/// underpowered).
pub fn answer(
    scope: &str,
    conditions: &[Measured<'_>],
    method: &CiMethod,
    effect_pp: f64,
) -> Vec<Hypothesis> {
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
        effect_pp,
    )];
    if let Some(c) = find(conditions, "C") {
        let context = find(conditions, "A")
            .and_then(|a| {
                let idx = matched(&[&c, &a]);
                (!idx.is_empty()).then(|| {
                    format!(
                        "; self-generated vs no skills here: Δ = {} pp over {} task(s) (SkillsBench: {} pp)",
                        crate::format::pp(delta_pp(mean(&at(&c, &idx)), mean(&at(&a, &idx)))),
                        idx.len(),
                        crate::format::pp(PAPER_SELF_GENERATED_PP)
                    )
                })
            })
            .unwrap_or_default();
        out.push(delta(
            claim(1, "Learned skills (A') beat self-generated skills (C)"),
            conditions,
            ("A'", "C"),
            method,
            &context,
            effect_pp,
        ));
    }
    out.push(gap(scope, conditions, method, effect_pp));
    out.push(delta(
        claim(3, "Learning improves on curated skills (B' vs B)"),
        conditions,
        ("B'", "B"),
        method,
        "",
        effect_pp,
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An effect no study misses: these tests read the intervals alone.
    const NO_POWER_GATE: f64 = 1_000.0;

    fn some(v: &[f64]) -> Vec<Option<f64>> {
        v.iter().copied().map(Some).collect()
    }

    fn cond<'a>(label: &'a str, per_task: &'a [Option<f64>]) -> Measured<'a> {
        Measured {
            label,
            per_task,
            finished: &[],
        }
    }

    #[test]
    fn no_delta_against_a_side_with_no_finished_trial() {
        // Mid-run: A' has passed every task, A has finished none (Method D scores it 0).
        let m = CiMethod::default();
        let (va, va2) = (some(&[0.0, 0.0, 0.0]), some(&[1.0, 1.0, 1.0]));
        let (none, done) = (vec![Vec::new(); 3], vec![vec![1.0]; 3]);
        let a = Measured {
            finished: &none,
            ..cond("A", &va)
        };
        let a2 = Measured {
            finished: &done,
            ..cond("A'", &va2)
        };
        let h = answer("all tasks", &[a, a2], &m, NO_POWER_GATE);
        let h1 = h.iter().find(|h| h.measure == "Δ A' − A").unwrap();
        assert_eq!(h1.verdict, Verdict::Undefined);
        assert_eq!(h1.value, None);
        assert!(
            h1.answer.contains("no trial of A has finished"),
            "{}",
            h1.answer
        );
        // Once one of A's trials has finished, the Δ is measured.
        let one = vec![vec![0.0], Vec::new(), Vec::new()];
        let a = Measured {
            finished: &one,
            ..cond("A", &va)
        };
        let h = answer("all tasks", &[a, a2], &m, NO_POWER_GATE);
        let h1 = h.iter().find(|h| h.measure == "Δ A' − A").unwrap();
        assert!(h1.value.is_some(), "{}", h1.answer);
    }

    #[test]
    fn each_hypothesis_reads_its_interval() {
        let m = CiMethod::default();
        let (va, vb) = (
            some(&[0.0, 0.0, 0.2, 0.0, 0.2, 0.0]),
            some(&[1.0, 0.8, 1.0, 0.6, 1.0, 0.8]),
        );
        let (va2, vc) = (
            some(&[0.6, 0.4, 0.6, 0.2, 0.6, 0.4]),
            some(&[0.0, 0.0, 0.0, 0.0, 0.2, 0.0]),
        );
        let a = cond("A", &va);
        let b = cond("B", &vb);
        let a2 = cond("A'", &va2);
        let b2 = cond("B'", &vb);
        let c = cond("C", &vc);
        let h = answer("all tasks", &[a, b, c, a2, b2], &m, NO_POWER_GATE);
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
        // B' = B on every task: every resample gives 0, an interval of one point — the study
        // cannot tell (issue 36: a degenerate interval is never "contradicted").
        assert_eq!(h[3].verdict, Verdict::Underpowered);
        // An interval across 0.
        let (x, y) = (some(&[0.0, 1.0, 0.0, 1.0]), some(&[1.0, 0.0, 1.0, 0.0]));
        let mixed = answer(
            "all tasks",
            &[cond("A", &x), cond("A'", &y)],
            &m,
            NO_POWER_GATE,
        );
        assert_eq!(mixed[0].verdict, Verdict::Inconclusive);
        // No gap to close, and a missing condition.
        let flat = answer("held-out", &[a, cond("B", &va)], &m, NO_POWER_GATE);
        assert_eq!(flat[0].verdict, Verdict::NotMeasured);
        let g = &flat[1];
        assert_eq!(g.verdict, Verdict::NotMeasured);
        let flat = answer(
            "held-out",
            &[a, cond("B", &va), cond("A'", &vb)],
            &m,
            NO_POWER_GATE,
        );
        assert_eq!(flat[1].verdict, Verdict::Undefined);
        assert_eq!(flat[0].scope, "held-out");
    }

    /// A task one condition never ran is left out of the comparison, never counted 0; with one
    /// matched task there is no interval and no verdict.
    #[test]
    fn hypotheses_read_only_the_tasks_both_conditions_ran() {
        let m = CiMethod::default();
        let a = vec![Some(1.0), None, Some(0.0), Some(0.0)];
        let a2 = vec![None, Some(1.0), Some(1.0), Some(1.0)];
        let h = answer(
            "all tasks",
            &[cond("A", &a), cond("A'", &a2)],
            &m,
            NO_POWER_GATE,
        );
        assert_eq!(h[0].n_tasks, 2);
        assert_eq!(h[0].value, Some(100.0));
        assert!(
            h[0].answer.contains("2 of 4 task(s) both ran"),
            "{}",
            h[0].answer
        );
        let one = vec![Some(0.0), None, None, None];
        let h = answer(
            "all tasks",
            &[cond("A", &one), cond("A'", &a2)],
            &m,
            NO_POWER_GATE,
        );
        assert_eq!(h[0].n_tasks, 0);
        assert_eq!(h[0].verdict, Verdict::Undefined);
        let h = answer(
            "all tasks",
            &[cond("A", &a), cond("A'", &one)],
            &m,
            NO_POWER_GATE,
        );
        assert_eq!((h[0].n_tasks, h[0].verdict), (1, Verdict::Undefined));
        assert!(h[0].answer.contains("no interval"), "{}", h[0].answer);
    }

    #[test]
    fn an_underpowered_study_gives_no_verdict_either_way() {
        let m = CiMethod::default();
        // Every task passes under both: the interval is one point, [+0.0, +0.0].
        let all = some(&[1.0; 5]);
        let h = answer("all tasks", &[cond("A", &all), cond("A'", &all)], &m, 5.0);
        assert_eq!(h[0].verdict, Verdict::Underpowered, "{}", h[0].answer);
        assert!(h[0].answer.contains("one point"), "{}", h[0].answer);
        // A clear positive Δ over 4 noisy tasks: the interval lies above 0, but a study whose
        // MDE is tens of points cannot support a hypothesis judged against 5 pp.
        let (a, a2) = (some(&[0.0, 0.5, 0.0, 0.5]), some(&[1.0, 0.5, 1.0, 1.0]));
        let h = answer("all tasks", &[cond("A", &a), cond("A'", &a2)], &m, 5.0);
        let mde = h[0].mde_pp.unwrap();
        assert!(mde > 5.0, "{mde}");
        assert_eq!(h[0].verdict, Verdict::Underpowered, "{}", h[0].answer);
        assert!(
            h[0].answer.contains("minimum detectable effect"),
            "{}",
            h[0].answer
        );
        // The same data judged against an effect it can detect: the interval decides.
        let h = answer(
            "all tasks",
            &[cond("A", &a), cond("A'", &a2)],
            &m,
            mde + 1.0,
        );
        assert_eq!(h[0].verdict, Verdict::Supported, "{}", h[0].answer);
    }
}
