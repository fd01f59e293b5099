//! What each trial's agent could see of skills, read in its real container (the oracle agent:
//! cheap): a skill that reaches a no-skills container after its image was built — a bind mount,
//! as a kit would bring it — passes the build's leak guard but is caught per trial, recorded with
//! its hash and flagged at the top of the report and in `status`; a self-generated trial whose
//! agent writes no valid skill is counted in the report and beside its comparison.

use crate::support::common;
use std::path::PathBuf;

use common::{Scratch, folder_sha256, one, skill_exposure};
use skillscope::analysis::results::Scoring;
use skillscope::analysis::results::Selection;
use skillscope::skillsbench::Condition;
use skillscope::store::Outcome;

fn trial_dir(t: &skillscope::store::TrialRow) -> PathBuf {
    PathBuf::from(t.trial_dir.clone().expect("trial dir"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_planted_after_the_build_is_caught_per_trial_and_flagged() {
    let s = Scratch::new();
    let planted = s.dir.path().join("planted");
    std::fs::create_dir_all(planted.join("scripts")).unwrap();
    std::fs::write(
        planted.join("SKILL.md"),
        "---\nname: planted\ndescription: The answer key, mounted after the build.\n---\n# 42\n",
    )
    .unwrap();
    std::fs::write(planted.join("scripts/key.txt"), "42\n").unwrap();
    let mut req = s.request(
        "planted",
        &["passes", "skill-gated"],
        vec![Condition::NoSkills],
        1,
    );
    req.settings.mounts = vec![format!(
        "{}:/root/.claude/skills/planted:ro",
        planted.display()
    )];
    let out = s.run(req).await;
    let rows = s.trials(out.run.id);
    let want = folder_sha256(&planted);
    for task in ["passes", "skill-gated"] {
        let t = one(&rows, task, "no-skills");
        // The image passed its leak guard: the skill came later.
        assert_ne!(t.outcome, Some(Outcome::BuildError), "{t:#?}");
        let x = skill_exposure(&trial_dir(t));
        let skills = x["skills"].as_array().unwrap();
        assert_eq!(skills.len(), 1, "{x:#}");
        assert_eq!(skills[0]["dir"], "planted");
        assert_eq!(skills[0]["origin"], "other");
        assert_eq!(skills[0]["path"], "/root/.claude/skills/planted");
        assert_eq!(skills[0]["sha256"], want, "hash of the mounted folder");
        assert_eq!(skills[0]["files"], 2);
    }
    // The store has it per trial, the report flags the run at its top, status says so.
    let c = s.store.connect().unwrap();
    let report = skillscope::report::build(
        &c,
        &Selection::Runs(vec!["planted".into()]),
        &Scoring::default(),
    )
    .unwrap();
    let x = &report.results.exposure;
    assert_eq!((x.conditions[0].stray, x.conditions[0].recorded), (2, 2));
    assert_eq!(x.conditions[0].with_skills, 2);
    let md = skillscope::report::markdown::render(&report, &[]);
    let top: String = md.lines().take(6).collect::<Vec<_>>().join("\n");
    assert!(
        top.contains("Skills reached a condition without skills")
            && top.contains("2 of 2 no-skills trials")
            && top.contains("planted (other)"),
        "{top}"
    );
    let st = common::skillscope(&s, &["status", "--json", "planted"]);
    let v: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    let flags = v["runs"][0]["skill_flags"].as_array().unwrap();
    assert_eq!(flags.len(), 1, "{v:#}");
    assert_eq!(v["runs"][0]["skill_exposure"][0]["stray"], 2);
    // The engine warned per trial.
    let events: Vec<String> = skillscope::store::queries::recent_events(&c, out.run.id, 100)
        .unwrap()
        .into_iter()
        .map(|(_, _, m)| m)
        .collect();
    assert_eq!(
        events
            .iter()
            .filter(|e| e.contains("should not show it: planted"))
            .count(),
        2,
        "{events:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn self_generated_trials_without_a_valid_skill_are_counted_in_the_report() {
    let s = Scratch::new();
    let selfgen = Condition::parse("self-generated").unwrap();
    // The oracle runs the task's solution: it writes no skill at all.
    let out = s
        .run(s.request(
            "selfgen-none",
            &["passes", "skill-gated"],
            vec![Condition::NoSkills, selfgen.clone()],
            2,
        ))
        .await;
    let rows = s.trials(out.run.id);
    assert_eq!(rows.len(), 8);
    for t in rows.iter().filter(|t| t.condition == selfgen.key()) {
        let x = skill_exposure(&trial_dir(t));
        assert_eq!(x["skills"], serde_json::json!([]), "{x:#}");
        // The oracle's steps are nobody's choice: use is unknown, not none.
        assert_eq!(x["used"]["state"], "unknown");
    }
    let c = s.store.connect().unwrap();
    let report = skillscope::report::build(
        &c,
        &Selection::Runs(vec!["selfgen-none".into()]),
        &Scoring::default(),
    )
    .unwrap();
    let x = &report.results.exposure;
    let c_selfgen = x
        .conditions
        .iter()
        .find(|c| c.condition == "self-generated")
        .unwrap();
    assert_eq!(c_selfgen.generated_none, Some(4));
    assert!(x.flags.is_empty(), "{:?}", x.flags);
    let cmp = &report.results.comparisons[0];
    assert_eq!(
        x.notes_of(&cmp.name),
        ["4 of 4 self-generated trials produced no valid skill".to_string()]
    );
    let md = skillscope::report::markdown::render(&report, &[]);
    assert!(
        md.contains("(4 of 4 self-generated trials produced no valid skill)"),
        "the comparison's Δ carries the count:\n{md}"
    );
    assert!(md.contains("| self-generated | 4 |"), "{md}");
}
