//! The skill scoring rubric (`skill-scoring-rubric.md`, the user's "Skill Scoring Rubric"), as
//! pure functions: a skill invocation gets 0–100 points from four components — completion (25),
//! efficiency (20), output quality (30) and user satisfaction (25) — and a skill's invocations give
//! it a tier, a trend, a weak component with a recommendation, and quality-gate verdicts.
//!
//! Every formula follows the rubric's Python code literally, including its integer truncations
//! (`int(...)`, i.e. [`f64::trunc`]), its defaults (`.get(key, default)`) and the order of its
//! branches. Where the code cannot run as written, or where this module offers more than the code,
//! the item's docstring says so:
//! - **Efficiency baselines** ([`score_efficiency`]): the code reads `tokens_per_loc` and
//!   `calls_per_file`, which only `code_generation` has — for the three other categories it raises
//!   `KeyError`. Here every category uses its own token baseline (its first entry) and call
//!   baseline (its second entry).
//! - **`COMPONENT_MAX`** is used by the rubric's trend analysis but never defined; it is the
//!   maximum of each component as the rubric's "Component Breakdown" headers give them.
//! - **Tiers** are given as integer ranges (90–100, 75–89, …); a fractional average between two
//!   ranges (89.99) belongs to the lower tier, as the rubric's dashboard SQL (`>= 90`, `>= 75`, …)
//!   decides it.
//! - **Recommendations**: `get_improvement_recommendation` picks level `low` when the weak
//!   component's average is below 50 — an average in raw points, at most 30, so the level is
//!   always `low` and the `medium` texts are never chosen. Kept exactly as written.
//! - **Deprecation gate**: `check_quality_gate` checks only `min_score`, `min_invocations` and
//!   `max_error_rate`, so the deprecation gate's `max_score` and `max_age_without_improvement` are
//!   never applied by it (and it "fails" a skill with fewer than 20 invocations). That is kept;
//!   [`deprecation_review`] is a separate function that applies them.

mod invocation;
mod skill;

pub use invocation::*;
pub use skill::*;

#[cfg(test)]
mod tests {
    use super::invocation::*;
    use super::skill::*;

    fn inv() -> Invocation {
        Invocation::default()
    }

    #[test]
    fn completion_every_branch() {
        assert_eq!(score_completion(&inv()), 25);
        let e = Invocation { errors: 2, ..inv() };
        // Recovered outranks partial, workaround and explanation.
        let all = Invocation {
            recovered: true,
            partial_completion: true,
            workaround_used: true,
            failure_explained: true,
            ..e.clone()
        };
        assert_eq!(score_completion(&all), 20);
        let p = Invocation {
            recovered: false,
            ..all.clone()
        };
        assert_eq!(score_completion(&p), 15);
        let w = Invocation {
            partial_completion: false,
            ..p.clone()
        };
        assert_eq!(score_completion(&w), 10);
        let f = Invocation {
            workaround_used: false,
            ..w.clone()
        };
        assert_eq!(score_completion(&f), 5);
        assert_eq!(score_completion(&e), 0);
        // No errors: 25 whatever the flags.
        assert_eq!(
            score_completion(&Invocation {
                errors: 0,
                ..f.clone()
            }),
            25
        );
    }

    #[test]
    fn efficiency_by_hand_with_truncation() {
        // Defaults: no tokens, no calls, no time → max(x, 1) → full 8 + 6 + 6.
        assert_eq!(score_efficiency(&inv(), SkillCategory::CodeGeneration), 20);
        // code_generation: 8·min(1, 50/100) = 4; 6·min(1, 3/4) = 4.5; 6·min(1, 30000/45000) = 4
        // → int(12.5) = 12.
        let i = Invocation {
            tokens_used: 100,
            tool_calls: 4,
            duration_ms: 45_000,
            ..inv()
        };
        assert_eq!(score_efficiency(&i, SkillCategory::CodeGeneration), 12);
        // analysis: 8·min(1, 200/100) = 8; 6·min(1, 5/4) = 6; 6·(20000/45000) = 2.666… → int(16.67) = 16.
        assert_eq!(score_efficiency(&i, SkillCategory::Analysis), 16);
        // design: 8; 6; 6·min(1, 45000/45000) = 6 → 20.
        assert_eq!(score_efficiency(&i, SkillCategory::Design), 20);
        // research: 8·min(1, 100/100) = 8; 6·min(1, 8/4) = 6; 6 → 20.
        assert_eq!(score_efficiency(&i, SkillCategory::Research), 20);
        // Output size and files changed scale the baselines: 50·3/300 = 0.5 → 4; 3·2/12 = 0.5 → 3;
        // 6·30000/90000 = 2 → 9.
        let j = Invocation {
            tokens_used: 300,
            output_size: 3,
            tool_calls: 12,
            files_changed: 2,
            duration_ms: 90_000,
            ..inv()
        };
        assert_eq!(score_efficiency(&j, SkillCategory::CodeGeneration), 9);
        // Truncation of the sum, not of each term: 8·50/150 = 2.667, 6·3/7 = 2.571,
        // 6·30000/70000 = 2.571 → 7.81 → 7 (per-term truncation would give 6).
        let k = Invocation {
            tokens_used: 150,
            tool_calls: 7,
            duration_ms: 70_000,
            ..inv()
        };
        assert_eq!(score_efficiency(&k, SkillCategory::CodeGeneration), 7);
        // Huge usage → 0.
        let z = Invocation {
            tokens_used: u64::MAX / 2,
            tool_calls: 1 << 40,
            duration_ms: 1 << 50,
            ..inv()
        };
        assert_eq!(score_efficiency(&z, SkillCategory::Analysis), 0);
        // Output size 0: no expected tokens → 0 token points.
        let o = Invocation {
            output_size: 0,
            ..inv()
        };
        assert_eq!(score_efficiency(&o, SkillCategory::Analysis), 12);
    }

    #[test]
    fn category_keys_and_fallback() {
        assert_eq!(
            SkillCategory::from_key("code_generation"),
            SkillCategory::CodeGeneration
        );
        assert_eq!(SkillCategory::from_key("research"), SkillCategory::Research);
        assert_eq!(SkillCategory::from_key("poetry"), SkillCategory::Analysis);
        let b = SkillCategory::Design.baselines();
        assert_eq!(
            (
                b.tokens_key,
                b.tokens,
                b.calls_key,
                b.calls,
                b.time_per_task_ms
            ),
            ("tokens_per_component", 150, "calls_per_design", 4, 45_000)
        );
    }

    #[test]
    fn output_quality_every_branch() {
        // Heuristic: no errors 8 + completeness 10 + non-code 8.
        assert_eq!(score_output_quality(&inv(), None), 26);
        let validated = Invocation {
            output_validated: true,
            ..inv()
        };
        assert_eq!(score_output_quality(&validated, None), 30);
        let errored = Invocation { errors: 1, ..inv() };
        assert_eq!(score_output_quality(&errored, None), 18);
        // Validated wins over errors.
        let both = Invocation {
            errors: 1,
            output_validated: true,
            ..inv()
        };
        assert_eq!(score_output_quality(&both, None), 30);
        // Feedback replaces the heuristic.
        let fb = |a, m, p| {
            Some(Feedback {
                accurate: a,
                mostly_accurate: m,
                partially_accurate: p,
            })
        };
        assert_eq!(
            score_output_quality(&errored, fb(Some(true), None, None)),
            30
        );
        assert_eq!(
            score_output_quality(&validated, fb(Some(false), Some(true), None)),
            27
        );
        assert_eq!(
            score_output_quality(&validated, fb(None, None, Some(true))),
            24
        );
        // A non-empty feedback with nothing true → 0 accuracy even when validated.
        assert_eq!(
            score_output_quality(&validated, fb(Some(false), None, None)),
            18
        );
        // An empty feedback is Python-falsy: heuristic.
        assert_eq!(score_output_quality(&validated, fb(None, None, None)), 30);
        // Completeness: int(10·min(1, 2/3)) = 6; over-delivery capped at 10; requested 0 → max(0,1).
        let part = Invocation {
            requested_items: 3,
            delivered_items: 2,
            ..inv()
        };
        assert_eq!(score_output_quality(&part, None), 8 + 6 + 8);
        let over = Invocation {
            requested_items: 2,
            delivered_items: 5,
            ..inv()
        };
        assert_eq!(score_output_quality(&over, None), 26);
        let none = Invocation {
            requested_items: 0,
            delivered_items: 0,
            ..inv()
        };
        assert_eq!(score_output_quality(&none, None), 16);
        // int(10·7/10) = 7.
        let seven = Invocation {
            requested_items: 10,
            delivered_items: 7,
            ..inv()
        };
        assert_eq!(score_output_quality(&seven, None), 8 + 7 + 8);
        // Code: defaults give linter 3 + types 2, no tests.
        let code = Invocation {
            output_type: OutputType::Code,
            ..inv()
        };
        assert_eq!(score_output_quality(&code, None), 8 + 10 + 5);
        let tested = Invocation {
            code_quality: CodeQuality {
                tests_passed: Some(true),
                ..Default::default()
            },
            ..code.clone()
        };
        assert_eq!(score_output_quality(&tested, None), 8 + 10 + 8);
        let lint_fail = Invocation {
            code_quality: CodeQuality {
                linter_passed: Some(false),
                types_valid: Some(true),
                tests_passed: Some(true),
            },
            ..code.clone()
        };
        assert_eq!(score_output_quality(&lint_fail, None), 8 + 10 + 5);
        let types_fail = Invocation {
            code_quality: CodeQuality {
                linter_passed: None,
                types_valid: Some(false),
                tests_passed: Some(false),
            },
            ..code.clone()
        };
        assert_eq!(score_output_quality(&types_fail, None), 8 + 10 + 3);
    }

    #[test]
    fn satisfaction_every_branch() {
        // Benchmark defaults: not accepted, edit ratio 0.5 → 4, no follow-ups → 7.
        assert_eq!(score_user_satisfaction(&inv()), 11);
        // Accepted, ratio absent → read as 0 for "as-is" (10) but as 0.5 for the ratio points (4).
        let acc = Invocation {
            user_accepted: true,
            ..inv()
        };
        assert_eq!(score_user_satisfaction(&acc), 10 + 4 + 7);
        let as_is = Invocation {
            user_edit_ratio: Some(0.04),
            ..acc.clone()
        };
        // int(8·0.96) = int(7.68) = 7.
        assert_eq!(score_user_satisfaction(&as_is), 10 + 7 + 7);
        let edited = Invocation {
            user_edit_ratio: Some(0.05),
            ..acc.clone()
        };
        // int(8·0.95) = int(7.6) = 7.
        assert_eq!(score_user_satisfaction(&edited), 7 + 7 + 7);
        let used = Invocation {
            user_used_output: true,
            user_edit_ratio: Some(0.3),
            ..inv()
        };
        // int(8·0.7) = int(5.6) = 5.
        assert_eq!(score_user_satisfaction(&used), 5 + 5 + 7);
        let rewritten = Invocation {
            user_edit_ratio: Some(1.7),
            ..inv()
        };
        // Edit ratio above 1 clamps to 0 edit points: 0 + 7.
        assert_eq!(score_user_satisfaction(&rewritten), 7);
        let zero = Invocation {
            user_edit_ratio: Some(0.0),
            follow_ups: Some(vec![]),
            ..inv()
        };
        assert_eq!(score_user_satisfaction(&zero), 8 + 7);
        let fu = |v: &[bool]| Invocation {
            follow_ups: Some(v.iter().map(|&resolved| FollowUp { resolved }).collect()),
            ..inv()
        };
        assert_eq!(score_user_satisfaction(&fu(&[false])), 4 + 4);
        assert_eq!(score_user_satisfaction(&fu(&[true, true])), 4 + 2);
        assert_eq!(score_user_satisfaction(&fu(&[true, false, true])), 4);
    }

    #[test]
    fn total_is_the_sum() {
        let s = score_invocation(&inv(), SkillCategory::Analysis, None);
        assert_eq!(s, Scores::new(25, 20, 26, 11));
        assert_eq!(s.total, 82);
    }

    #[test]
    fn tier_boundaries() {
        let cases = [
            (100.0, Tier::Excellent),
            (90.0, Tier::Excellent),
            (89.99, Tier::Good),
            (75.0, Tier::Good),
            (74.0, Tier::Acceptable),
            (74.99, Tier::Acceptable),
            (60.0, Tier::Acceptable),
            (59.0, Tier::BelowAverage),
            (40.0, Tier::BelowAverage),
            (39.0, Tier::Poor),
            (20.0, Tier::Poor),
            (19.0, Tier::Failing),
            (0.0, Tier::Failing),
            (-1.0, Tier::Failing),
        ];
        for (s, t) in cases {
            assert_eq!(Tier::from_score(s), t, "score {s}");
        }
        assert_eq!(Tier::BelowAverage.label(), "Below Average");
        assert_eq!(Tier::Poor.description(), "Major problems");
        assert_eq!(Tier::Failing.action(), "Investigate root cause");
        assert_eq!(Tier::Excellent.action(), "Document as exemplar");
        assert_eq!(Tier::from_label("Below Average"), Some(Tier::BelowAverage));
        assert_eq!(
            serde_json::to_string(&Tier::BelowAverage).unwrap(),
            "\"Below Average\""
        );
        // Ranges tile 0–100.
        for w in Tier::ALL.windows(2) {
            assert_eq!(w[0].min_score(), w[1].max_score() + 1);
        }
    }

    fn totals(prev: &[i64], recent: &[i64]) -> Vec<Scores> {
        prev.iter()
            .chain(recent)
            .map(|&t| Scores {
                total: t,
                ..Scores::new(20, 10, 25, 11)
            })
            .collect()
    }

    fn analysis(t: Trend) -> TrendAnalysis {
        match t {
            Trend::Analyzed(a) => a,
            Trend::InsufficientData => panic!("insufficient"),
        }
    }

    #[test]
    fn trend_needs_ten() {
        let nine = totals(&[50, 50], &[90; 7]);
        assert_eq!(analyze_trend(&nine), Trend::InsufficientData);
        assert_eq!(
            serde_json::to_value(Trend::InsufficientData).unwrap(),
            serde_json::json!({"status": "insufficient_data"})
        );
        let ten = totals(&[50, 50, 50], &[90; 7]);
        assert!(matches!(analyze_trend(&ten), Trend::Analyzed(_)));
    }

    #[test]
    fn trend_edges() {
        // previous 40, recent 44: (44 − 40) / 40 · 100 = 10.0 exactly → stable.
        let a = analysis(analyze_trend(&totals(&[40, 40, 40], &[44; 7])));
        assert_eq!((a.previous_avg, a.current_avg), (40.0, 44.0));
        assert_eq!(a.change_percent, 10.0);
        assert_eq!(a.trend, Direction::Stable);
        // One more point in the recent week: 44.142… → +10.36 % → improving.
        let a = analysis(analyze_trend(&totals(
            &[40, 40, 40],
            &[44, 44, 44, 44, 44, 44, 45],
        )));
        assert!(a.change_percent > 10.0 && a.change_percent < 10.5);
        assert_eq!(a.trend, Direction::Improving);
        // 36 vs 40: −10.0 exactly → stable; 35.857… → −10.36 % → declining.
        let a = analysis(analyze_trend(&totals(&[40, 40, 40], &[36; 7])));
        assert_eq!(a.change_percent, -10.0);
        assert_eq!(a.trend, Direction::Stable);
        let a = analysis(analyze_trend(&totals(
            &[40, 40, 40],
            &[36, 36, 36, 36, 36, 36, 35],
        )));
        assert_eq!(a.trend, Direction::Declining);
        // Previous of 0 is divided by max(0, 1): 0 → 1 is +100 %.
        let a = analysis(analyze_trend(&totals(&[0, 0, 0], &[1; 7])));
        assert_eq!(a.change_percent, 100.0);
        // More than 10: previous is everything before the last 7.
        let a = analysis(analyze_trend(&totals(&[10, 20, 30, 40, 50], &[60; 7])));
        assert_eq!(a.previous_avg, 30.0);
        assert_eq!(a.current_avg, 60.0);
    }

    #[test]
    fn weak_component_and_recommendation() {
        // completion 20/25 = 0.8, efficiency 10/20 = 0.5, quality 25/30 = 0.83, satisfaction 11/25 = 0.44.
        let a = analysis(analyze_trend(&totals(&[50; 3], &[50; 7])));
        assert_eq!(a.weak_component, Component::Satisfaction);
        assert_eq!(a.component_scores.satisfaction, 11.0);
        assert_eq!(
            a.recommendation,
            "Gather user feedback, analyze edit patterns"
        );
        // Efficiency lowest relative to its max.
        let s: Vec<Scores> = (0..10).map(|_| Scores::new(25, 5, 30, 25)).collect();
        let a = analysis(analyze_trend(&s));
        assert_eq!(a.weak_component, Component::Efficiency);
        assert_eq!(
            a.recommendation,
            "Reduce context size, consider progressive disclosure"
        );
        // Ties go to the first in rubric order: 12.5/25 = 10/20 = 15/30 = 0.5.
        let avgs = ComponentAverages {
            completion: 12.5,
            efficiency: 10.0,
            quality: 15.0,
            satisfaction: 12.5,
        };
        assert_eq!(weak_component(&avgs), Component::Completion);
        let avgs = ComponentAverages {
            quality: 3.0,
            ..avgs
        };
        assert_eq!(weak_component(&avgs), Component::Quality);
        // Raw points are always < 50 → level low; 50 and up → medium.
        assert_eq!(
            get_improvement_recommendation(Component::Quality, 30.0),
            "Add more examples and anti-patterns to skill"
        );
        assert_eq!(
            get_improvement_recommendation(Component::Quality, 50.0),
            "Include validation steps in skill workflow"
        );
        assert_eq!(
            get_improvement_recommendation(Component::Completion, 49.9),
            "Add more error handling and recovery patterns to SKILL.md"
        );
        assert_eq!(
            get_improvement_recommendation(Component::Completion, 80.0),
            "Review common failure cases and add guidance"
        );
        assert_eq!(
            get_improvement_recommendation(Component::Efficiency, 60.0),
            "Optimize tool call patterns, reduce unnecessary reads"
        );
        assert_eq!(
            get_improvement_recommendation(Component::Satisfaction, 60.0),
            "Add clarifying questions to skill workflow"
        );
        assert_eq!(COMPONENT_MAX.iter().map(|(_, m)| m).sum::<i64>(), 100);
    }

    fn stats(avg: f64, n: u64, err: f64) -> SkillStats {
        SkillStats {
            avg_score: avg,
            invocation_count: n,
            error_rate: err,
        }
    }

    #[test]
    fn publish_gate() {
        let r = check_quality_gate(&stats(70.0, 10, 0.1), Gate::Publish);
        assert!(r.passed, "{r:?}");
        assert!(r.failures.is_empty());
        let r = check_quality_gate(&stats(69.95, 9, 0.125), Gate::Publish);
        assert!(!r.passed);
        assert_eq!(
            r.failures,
            vec![
                "Score 70.0 < 70".to_string(),
                "Invocations 9 < 10".into(),
                "Error rate 12.50% > 10.00%".into()
            ]
        );
        let r = check_quality_gate(&stats(68.04, 12, 0.0), Gate::Publish);
        assert_eq!(r.failures, vec!["Score 68.0 < 70".to_string()]);
        let r = check_quality_gate(&stats(90.0, 3, 0.0), Gate::Publish);
        assert_eq!(r.failures, vec!["Invocations 3 < 10".to_string()]);
        let r = check_quality_gate(&stats(90.0, 30, 0.2), Gate::Publish);
        assert_eq!(r.failures, vec!["Error rate 20.00% > 10.00%".to_string()]);
        assert_eq!(r.gate, Gate::Publish);
        assert_eq!(r.stats, stats(90.0, 30, 0.2));
    }

    #[test]
    fn feature_gate() {
        assert!(check_quality_gate(&stats(85.0, 50, 0.05), Gate::Feature).passed);
        let r = check_quality_gate(&stats(84.96, 49, 0.0501), Gate::Feature);
        assert_eq!(
            r.failures,
            vec![
                "Score 85.0 < 85".to_string(),
                "Invocations 49 < 50".into(),
                "Error rate 5.01% > 5.00%".into()
            ]
        );
    }

    #[test]
    fn deprecation_gate_as_the_code_has_it() {
        // Only min_invocations applies: a great skill with 20 invocations "passes", a failing one
        // with 20 passes too, a skill with 19 fails with the invocations message.
        let r = check_quality_gate(&stats(95.0, 20, 0.5), Gate::Deprecation);
        assert!(r.passed);
        assert!(check_quality_gate(&stats(5.0, 20, 1.0), Gate::Deprecation).passed);
        let r = check_quality_gate(&stats(5.0, 19, 1.0), Gate::Deprecation);
        assert_eq!(r.failures, vec!["Invocations 19 < 20".to_string()]);
        assert_eq!(
            Gate::Deprecation.config().description,
            "Triggers deprecation review"
        );
    }

    #[test]
    fn deprecation_review_applies_score_and_age() {
        let r = deprecation_review(&stats(35.0, 25, 0.0), Some(120.0));
        assert!(r.triggered);
        assert_eq!(
            r.reasons,
            vec![
                "Score 35.0 <= 40".to_string(),
                "Invocations 25 >= 20".into(),
                "No improvement for 120 days >= 90".into()
            ]
        );
        // Boundaries are inclusive: 40 and 90 days trigger.
        assert!(deprecation_review(&stats(40.0, 20, 0.0), Some(90.0)).triggered);
        let r = deprecation_review(&stats(40.1, 20, 0.0), Some(90.0));
        assert!(!r.triggered && !r.low_score);
        assert_eq!(r.reasons[0], "Score 40.1 > 40");
        let r = deprecation_review(&stats(30.0, 19, 0.0), Some(200.0));
        assert!(!r.triggered && !r.enough_invocations);
        assert_eq!(r.reasons[1], "Invocations 19 < 20");
        let r = deprecation_review(&stats(30.0, 20, 0.0), Some(89.0));
        assert_eq!(r.stale, Some(false));
        assert!(!r.triggered);
        assert_eq!(r.reasons[2], "No improvement for 89 days < 90");
        // Unknown age: decided by score and invocations.
        let r = deprecation_review(&stats(30.0, 20, 0.0), None);
        assert!(r.triggered);
        assert_eq!(r.stale, None);
        assert_eq!(
            r.reasons[2],
            "Age without improvement unknown (not checked)"
        );
    }

    #[test]
    fn invocation_deserializes_with_rubric_defaults() {
        let i: Invocation =
            serde_json::from_str(r#"{"tokens_used": 10, "duration_ms": 5}"#).unwrap();
        assert_eq!(i.output_size, 1);
        assert_eq!(i.files_changed, 1);
        assert_eq!((i.requested_items, i.delivered_items), (1, 1));
        assert_eq!(i.user_edit_ratio, None);
        assert_eq!(i.output_type, OutputType::Other);
    }
}
