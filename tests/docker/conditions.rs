//! Skill conditions in real images: no-skills leaves no skill anywhere, curated and `skills:<dir>`
//! put skills where every harness looks, and a skill smuggled into a no-skills image is caught.

use crate::support::common;
use std::collections::HashMap;

use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{CreateContainerOptions, RemoveContainerOptions};
use common::{Scratch, one};
use futures_util::StreamExt;
use skillscope::skillsbench::Condition;
use skillscope::skillsbench::dockerfile::SKILL_DESTINATIONS;
use skillscope::store::Outcome;

/// Runs `script` in a fresh container of `image` and returns its stdout.
async fn sh_in_image(image: &str, script: &str) -> String {
    let d = bollard::Docker::connect_with_defaults().unwrap();
    let c = d
        .create_container(
            None::<CreateContainerOptions>,
            ContainerCreateBody {
                image: Some(image.into()),
                cmd: Some(vec!["sh".into(), "-c".into(), "exec sleep infinity".into()]),
                labels: Some(HashMap::from([("skillscope.managed".into(), "1".into())])),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    d.start_container(&c.id, None).await.unwrap();
    let exec = d
        .create_exec(
            &c.id,
            CreateExecOptions::<String> {
                cmd: Some(vec!["sh".into(), "-c".into(), script.into()]),
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let mut out = String::new();
    if let StartExecResults::Attached { mut output, .. } =
        d.start_exec(&exec.id, None).await.unwrap()
    {
        while let Some(Ok(chunk)) = output.next().await {
            out.push_str(&chunk.to_string());
        }
    }
    d.remove_container(
        &c.id,
        Some(RemoveContainerOptions {
            force: true,
            ..Default::default()
        }),
    )
    .await
    .unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn skills_reach_the_agent_only_in_skill_conditions() {
    let s = Scratch::new();
    let learned = tempfile::tempdir().unwrap();
    let with_key = learned.path().join("learned-with-key");
    std::fs::create_dir_all(with_key.join("answer-key")).unwrap();
    std::fs::write(
        with_key.join("answer-key/SKILL.md"),
        "---\nname: answer-key\ndescription: learned\n---\n",
    )
    .unwrap();
    std::fs::write(with_key.join("answer-key/key.txt"), "42\n").unwrap();
    let without_key = learned.path().join("learned-elsewhere");
    std::fs::create_dir_all(without_key.join("other")).unwrap();
    std::fs::write(
        without_key.join("other/SKILL.md"),
        "---\nname: other\ndescription: unrelated\n---\n",
    )
    .unwrap();
    let with_key = Condition::parse(&format!("skills:{}", with_key.display())).unwrap();
    let without_key = Condition::parse(&format!("skills:{}", without_key.display())).unwrap();
    let conditions = vec![
        Condition::NoSkills,
        Condition::Curated,
        with_key.clone(),
        without_key.clone(),
    ];
    let out = s
        .run(s.request(
            "conditions",
            &["skill-gated", "inline-skill-leak"],
            conditions,
            1,
        ))
        .await;
    let rows = s.trials(out.run.id);

    // The oracle finds the answer only through a skill.
    assert_eq!(
        one(&rows, "skill-gated", "no-skills").outcome,
        Some(Outcome::Fail)
    );
    assert_eq!(
        one(&rows, "skill-gated", "curated").outcome,
        Some(Outcome::Pass)
    );
    assert_eq!(
        one(&rows, "skill-gated", &with_key.key()).outcome,
        Some(Outcome::Pass)
    );
    assert_eq!(
        one(&rows, "skill-gated", &without_key.key()).outcome,
        Some(Outcome::Fail)
    );

    // No skill anywhere in the no-skills image, independent of skillscope's own guard.
    let noskills_image = one(&rows, "skill-gated", "no-skills")
        .image
        .clone()
        .unwrap();
    let dests = SKILL_DESTINATIONS.join(" ");
    let found = sh_in_image(
        &noskills_image,
        &format!("find / -xdev -name SKILL.md 2>/dev/null; for d in {dests}; do [ -e $d ] && echo $d; done; true"),
    )
    .await;
    assert_eq!(
        found.trim(),
        "",
        "skills leaked into {noskills_image}: {found}"
    );

    // Curated: every harness folder holds the skill (the Dockerfile's own COPY lines plus the
    // appended block).
    let curated_image = one(&rows, "skill-gated", "curated").image.clone().unwrap();
    let listing = sh_in_image(
        &curated_image,
        &format!("for d in {dests}; do [ -f $d/answer-key/SKILL.md ] && echo ok $d; done; true"),
    )
    .await;
    assert_eq!(
        listing.lines().count(),
        SKILL_DESTINATIONS.len(),
        "{listing}"
    );

    // skills:<dir> replaces the curated skills: the learned folder is there, nothing else.
    let learned_image = one(&rows, "skill-gated", &without_key.key())
        .image
        .clone()
        .unwrap();
    let listing = sh_in_image(
        &learned_image,
        "ls /root/.claude/skills /root/.gemini/skills",
    )
    .await;
    assert!(
        listing.contains("other") && !listing.contains("answer-key"),
        "{listing}"
    );

    // A SKILL.md written by a RUN line is caught by the leak guard for no-skills.
    let leak = one(&rows, "inline-skill-leak", "no-skills");
    assert_eq!(leak.outcome, Some(Outcome::BuildError));
    assert!(
        leak.error.as_deref().unwrap().contains("skills leak"),
        "{:?}",
        leak.error
    );
    assert_eq!(
        one(&rows, "inline-skill-leak", "curated").outcome,
        Some(Outcome::Pass)
    );

    // The build log says what the no-skills rewrite removed.
    let dir = std::path::PathBuf::from(
        one(&rows, "skill-gated", "no-skills")
            .trial_dir
            .clone()
            .unwrap(),
    );
    let log = std::fs::read_to_string(dir.join("environment/build.log")).unwrap();
    assert!(log.contains("removed line"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_skills_builds_where_a_build_step_needs_the_skills_and_the_verifier_gets_its_copy() {
    let s = Scratch::new();
    let out = s
        .run(s.request(
            "build-time-skills",
            &["skills-at-build-time", "skill-gated"],
            vec![Condition::NoSkills, Condition::Curated],
            1,
        ))
        .await;
    let rows = s.trials(out.run.id);
    // Both conditions build and pass: the verifier found its copy, the agent never saw it.
    for c in ["no-skills", "curated"] {
        let r = one(&rows, "skills-at-build-time", c);
        assert_eq!(r.outcome, Some(Outcome::Pass), "{c}: {:?}", r.error);
    }
    let image = |c: &str| one(&rows, "skills-at-build-time", c).image.clone().unwrap();
    let probe = "find / -xdev -name SKILL.md 2>/dev/null; ls -d /root/.claude/skills/* /root/.codex/skills/* /root/verifier-skills 2>/dev/null; \
                 cat /root/auth/token; ls /root/.claude/skills/mail-skill/node_modules 2>/dev/null; true";
    // No-skills: the steps that needed the skills ran (the step after them too), then the skills
    // went; the verifier's copy was never in the image.
    let seen = sh_in_image(&image("no-skills"), probe).await;
    assert_eq!(seen.trim(), "token", "no-skills image shows: {seen}");
    // Curated: the task's own order, the dependencies installed inside the skill's folder.
    let seen = sh_in_image(&image("curated"), probe).await;
    assert!(seen.contains("installed.json"), "{seen}");
    assert!(seen.contains("/root/.claude/skills/mail-skill"), "{seen}");
    assert!(
        !seen.contains("verifier-skills"),
        "the agent's image holds the verifier's copy: {seen}"
    );
    let log = |task: &str, c: &str| {
        let dir = std::path::PathBuf::from(one(&rows, task, c).trial_dir.clone().unwrap());
        std::fs::read_to_string(dir.join("environment/build.log")).unwrap()
    };
    let l = log("skills-at-build-time", "no-skills");
    assert!(
        l.contains("kept for them, removed before the agent starts"),
        "{l}"
    );
    assert!(l.contains("is the verifier's copy"), "{l}");
    // A task no step of which reads its skills: curated is the no-skills image plus the skills
    // as its last layers, so the task's own steps built once.
    let l = log("skill-gated", "curated");
    assert!(l.contains("layered over the no-skills image"), "{l}");
    let base = one(&rows, "skill-gated", "no-skills")
        .image
        .clone()
        .unwrap();
    assert!(
        l.contains(&format!("FROM {base}")) || l.contains(&base),
        "{l}"
    );
    let builds = one(&rows, "skill-gated", "curated")
        .image_builds
        .clone()
        .unwrap();
    let tags: Vec<&str> = builds
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["tag"].as_str().unwrap())
        .collect();
    assert_eq!(
        tags,
        [
            base.as_str(),
            one(&rows, "skill-gated", "curated")
                .image
                .as_deref()
                .unwrap()
        ]
    );
}
