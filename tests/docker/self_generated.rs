//! The self-generated conditions end to end: the real Claude Code CLI in a real container against
//! the scripted model server, run through `skillscope run`.
//!
//! - `self-generated`: the image holds no skill before the agent runs; `agent/instruction.md`
//!   carries the generate-first prompt (and so does the model's conversation); the agent writes two
//!   skills, one malformed — the good one is kept in `agent/generated-skills/`, recorded with the
//!   trial (store, skill use, the report's skill content), the malformed one reported.
//! - `self-generated:two-phase`: two sessions; the first (with a skill creator where it looks for
//!   skills) only writes skills; the second sees only the valid generated skills, where the
//!   harness looks, and nothing else; the trial's tokens cover both sessions.

use crate::support::{common, glibc_image, harness_env, harness_run, scripted_model};
use std::path::{Path, PathBuf};

use common::require_docker;
use harness_env::{gateway, serial};
use scripted_model::{Script, ScriptedModel, Usage};
use skillscope::store::{Outcome, Store, TrialRow, queries};

const DUMMY_KEY: &str = "sk-test-dummy-key-7c1e";

/// Counts the SKILL.md files on the container's own filesystem (not the kit or log mounts).
const COUNT_SKILLS: &str =
    "n=$(find / -xdev -name SKILL.md 2>/dev/null | wc -l); echo \"skills-in-image=$n\"";
const WRITE_GOOD: &str = "mkdir -p environment/skills/greeting-notes && printf -- '---\\nname: greeting-notes\\ndescription: The greeting this task expects.\\n---\\n# Greeting notes\\nWrite: hello from the greeting skill\\n' > environment/skills/greeting-notes/SKILL.md";
const WRITE_BROKEN: &str = "mkdir -p environment/skills/broken && printf '# A skill without frontmatter\\n' > environment/skills/broken/SKILL.md";
const ANSWER: &str = "echo 'hello from the greeting skill' > /root/answer.txt";
/// The marker of the skill-writing session's prompt.
const GENERATION_MARKER: &str = "Do NOT solve the task above";

struct Ran {
    dir: tempfile::TempDir,
    trial: TrialRow,
    /// How the model answered each request (`command N`, `final`, `phase 1 …`).
    seen: Vec<String>,
}

async fn run(conditions: &str, run: &str, model: &ScriptedModel, extra: &[&str]) -> Ran {
    require_docker().await;
    let _serial = serial().await;
    glibc_image::ensure_glibc_image().await;
    let dir = tempfile::tempdir().unwrap();
    let out = harness_run::harness_run_under(
        "claude-code",
        "claude-opus-4-6",
        run,
        dir.path(),
        conditions,
        1,
        &harness_run::harness_tasks(),
    )
    .args(extra)
    .env("ANTHROPIC_API_KEY", DUMMY_KEY)
    .env("ANTHROPIC_BASE_URL", model.base_url(&gateway().await))
    .output()
    .expect("run skillscope");
    let store = Store::open(&dir.path().join("s.db")).expect("store");
    let c = store.connect().unwrap();
    let r = queries::find_run(&c, run)
        .unwrap()
        .unwrap_or_else(|| panic!("no run: {}", String::from_utf8_lossy(&out.stderr)));
    let mut current = queries::current_trials(&c, r.id).unwrap();
    assert_eq!(current.len(), 1, "{current:#?}");
    let seen: Vec<String> = model
        .state
        .recorded()
        .iter()
        .map(|x| x.answer.clone())
        .collect();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}\nmodel saw {seen:?}");
    let trial = current.remove(0);
    assert_eq!(
        trial.outcome,
        Some(Outcome::Pass),
        "{trial:#?}; model saw {seen:?}"
    );
    Ran { dir, trial, seen }
}

fn trial_dir(t: &TrialRow) -> PathBuf {
    PathBuf::from(t.trial_dir.clone().expect("trial dir"))
}

/// Every tool result text of an ATIF trajectory file, joined.
fn observations(path: &Path) -> String {
    let traj: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).unwrap_or_else(|e| panic!("{path:?}: {e}")))
            .unwrap();
    let mut out = String::new();
    for step in traj["steps"].as_array().unwrap() {
        for r in step["observation"]["results"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(t) = r["content"].as_str() {
                out.push_str(t);
                out.push('\n');
            }
        }
    }
    out
}

fn usage() -> Usage {
    Usage {
        input: 1000,
        cached: 200,
        output: 50,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn self_generated_keeps_the_good_skill_and_reports_the_malformed_one() {
    let model = ScriptedModel::start(Script {
        commands: vec![
            COUNT_SKILLS.into(),
            WRITE_GOOD.into(),
            WRITE_BROKEN.into(),
            "cat environment/skills/greeting-notes/SKILL.md".into(),
            ANSWER.into(),
        ],
        final_text: "Done.".into(),
        usage: usage(),
        ..Default::default()
    })
    .await;
    let r = run("self-generated", "selfgen-one", &model, &[]).await;
    let t = &r.trial;
    let dir = trial_dir(t);

    // The instruction the agent received: the task's, then the generate-first prompt — on disk
    // and in the conversation the model was sent.
    let instruction = std::fs::read_to_string(dir.join("agent/instruction.md")).unwrap();
    let task =
        std::fs::read_to_string(harness_run::harness_tasks().join("hello-skill/instruction.md"))
            .unwrap();
    assert!(instruction.starts_with(task.trim_end()), "{instruction}");
    assert!(
        instruction.contains("environment/skills/<skill-name>/SKILL.md")
            && instruction.contains("Then solve the task"),
        "{instruction}"
    );
    assert!(
        model.state.recorded().iter().any(|x| x
            .body
            .to_string()
            .contains("Before you work on the task above")),
        "the model never saw the generate-first prompt"
    );

    // No skill in the image before the agent ran (the curated `greeting` is not there either).
    let obs = observations(&dir.join("agent/trajectory.json"));
    assert!(obs.contains("skills-in-image=0"), "{obs}");

    // The good skill is kept and recorded, the malformed one reported.
    assert!(
        dir.join("agent/generated-skills/greeting-notes/SKILL.md")
            .is_file()
    );
    assert!(!dir.join("agent/generated-skills/broken").exists());
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("agent/generated-skills.json")).unwrap())
            .unwrap();
    assert_eq!(record["mode"], "one-pass");
    assert_eq!(record["skills"][0]["name"], "greeting-notes");
    assert_eq!(record["skills"].as_array().unwrap().len(), 1);
    assert_eq!(record["refused"][0]["skill"], "broken");
    assert!(
        record["refused"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("frontmatter"),
        "{record:#}"
    );
    let store = Store::open(&r.dir.path().join("s.db")).unwrap();
    let c = store.connect().unwrap();
    let stored = queries::generated_skills(&c, t.run_id).unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].generated.skills[0].dir_name, "greeting-notes");
    assert_eq!(stored[0].generated.refused.len(), 1);
    // The agent's use of its own skill is detected, and the report measures the skill set.
    let uses = queries::skill_uses(&c, t.id).unwrap();
    assert!(uses.iter().any(|u| u.skill == "greeting-notes"), "{uses:?}");
    let report = skillscope::report::build(
        &c,
        &skillscope::analysis::results::Selection::Runs(vec!["selfgen-one".into()]),
        &skillscope::analysis::results::Scoring::default(),
    )
    .unwrap();
    let g = &report.skill_content.generated;
    assert_eq!((g.len(), g[0].kept, g[0].refused), (1, 1, 1), "{g:?}");
    // At the start the agent could see no skill (the harness's own are switched off); the skill
    // it wrote and read counts as its own use.
    let x = common::skill_exposure(&dir);
    assert!(
        x["skills"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["origin"] == "harness" && s["enabled"] == false),
        "{x:#}"
    );
    let used = x["used"]["skills"].as_array().unwrap();
    assert!(
        used.iter()
            .any(|u| u["skill"] == "greeting-notes" && u["own"] == true),
        "{x:#}"
    );
    let e = &report.results.exposure.conditions[0];
    assert_eq!(
        (e.generated_none, e.use_known, e.used),
        (Some(0), 1, 1),
        "{e:#?}"
    );
    let set = report
        .skill_content
        .sets
        .iter()
        .find(|s| s.name == "self-generated")
        .expect("a self-generated skill set");
    assert_eq!(set.skills[0].name, "greeting-notes");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_phase_runs_two_sessions_and_the_solver_sees_only_generated_skills() {
    let creator = tempfile::tempdir().unwrap();
    std::fs::write(
        creator.path().join("SKILL.md"),
        "---\nname: skill-creator\ndescription: Writes skills.\n---\n# Skill creator\n",
    )
    .unwrap();
    let model = ScriptedModel::start(Script {
        // The solving session.
        commands: vec![
            "ls /root/.claude/skills; ls environment 2>&1; echo solver-probe-end".into(),
            "cat /root/.claude/skills/greeting-notes/SKILL.md".into(),
            ANSWER.into(),
        ],
        final_text: "Solved.".into(),
        usage: usage(),
        // The skill-writing session.
        phases: vec![(
            GENERATION_MARKER.into(),
            vec![
                "ls /root/.claude/skills; echo writer-probe-end".into(),
                WRITE_GOOD.into(),
                WRITE_BROKEN.into(),
            ],
            "Skills written.".into(),
        )],
        ..Default::default()
    })
    .await;
    let creator_arg = creator.path().display().to_string();
    let r = run(
        "self-generated:two-phase",
        "selfgen-two",
        &model,
        &["--skill-creator", &creator_arg],
    )
    .await;
    let (t, seen) = (&r.trial, &r.seen);
    // Two sessions, each run to its end.
    assert!(seen.contains(&"phase 1 final".to_string()), "{seen:?}");
    assert!(seen.contains(&"final".to_string()), "{seen:?}");
    let dir = trial_dir(t);

    // What each session was asked.
    let writer = std::fs::read_to_string(dir.join("skill-generation/instruction.md")).unwrap();
    assert!(writer.contains(GENERATION_MARKER) && writer.contains("skill-creator"));
    let task =
        std::fs::read_to_string(harness_run::harness_tasks().join("hello-skill/instruction.md"))
            .unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("agent/instruction.md")).unwrap(),
        task,
        "the solving session gets the task's instruction alone"
    );

    // The writer found the skill creator; the solver finds only the valid generated skill where
    // Claude Code looks, and the writer's folder is gone from its working directory.
    let writer_obs = observations(&dir.join("skill-generation/trajectory.json"));
    assert!(writer_obs.contains("skill-creator"), "{writer_obs}");
    let solver_obs = observations(&dir.join("agent/trajectory.json"));
    let listing = solver_obs
        .split("solver-probe-end")
        .next()
        .unwrap_or_default();
    assert!(listing.contains("greeting-notes"), "{solver_obs}");
    assert!(!listing.contains("broken"), "{solver_obs}");
    assert!(!listing.contains("skill-creator"), "{solver_obs}");
    assert!(listing.contains("No such file"), "{solver_obs}");
    // The solver's record: the valid generated skill alone, as generated — not the writer's skill
    // creator, not the refused one.
    let x = common::skill_exposure(&dir);
    let seen: Vec<(&str, &str)> = x["skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["origin"] != "harness")
        .map(|s| (s["dir"].as_str().unwrap(), s["origin"].as_str().unwrap()))
        .collect();
    assert_eq!(seen, [("greeting-notes", "generated")], "{x:#}");
    // The first session's transcript is not where the solver's agent writes its logs.
    assert!(!dir.join("agent/skill-generation").exists());
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("agent/generated-skills.json")).unwrap())
            .unwrap();
    assert_eq!(record["mode"], "two-phase");
    assert_eq!(record["installed"], serde_json::json!(["greeting-notes"]));
    assert_eq!(record["refused"][0]["skill"], "broken");

    // The trial's tokens are both sessions'.
    let prompt_tokens = |p: &Path| -> i64 {
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
        v["final_metrics"]["total_prompt_tokens"].as_i64().unwrap()
    };
    let both = prompt_tokens(&dir.join("skill-generation/trajectory.json"))
        + prompt_tokens(&dir.join("agent/trajectory.json"));
    assert_eq!(t.n_input_tokens, Some(both));
}
