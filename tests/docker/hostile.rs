//! The agent under test as an adversary, in real containers: each fixture of
//! `tests/fixtures/hostile/` is a hostile `solution/solve.sh` run by the oracle against an honest
//! verifier that writes reward 0 (the task asks for 42 in `/root/answer.txt`, which none of them
//! writes). Whatever each tries — a leftover loop writing the reward, a replaced shell, python or
//! tool, a watcher stealing and rewriting the tests, a pre-written reward and CTRF report, reward
//! files turned into folders, the verifier's secret read from `/proc`, pytest's configuration
//! planted above `/tests` — the trial is recorded with reward 0, never a pass, and flagged where
//! it changed what a task's work never touches. The host keeps its files (links planted at every
//! name skillscope writes), its process table (1,500 background processes stop at the limit), its
//! disk (1 GiB in `/logs/agent` is copied out capped), its secrets (an `--env` value never in
//! `docker inspect` nor any trial file) and its networks (two `allow_internet` trials each on a
//! bridge of its own, gone after the trial).

use crate::support::common;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use common::{Scratch, one};
use skillscope::config::EnvSetting;
use skillscope::skillsbench::Condition;
use skillscope::store::{Outcome, TrialRow};

fn hostile_tasks() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile")
}

/// A run of the hostile fixtures `tasks` (no-skills, `trials` each).
fn request(s: &Scratch, name: &str, tasks: &[&str], trials: u32) -> skillscope::engine::RunRequest {
    let mut req = s.request(name, tasks, vec![Condition::NoSkills], trials);
    req.tasks_dir = hostile_tasks();
    req
}

fn trial_dir(t: &TrialRow) -> PathBuf {
    PathBuf::from(t.trial_dir.clone().expect("trial dir"))
}

/// Recorded honestly: reward 0 and a failure (never a pass), with the verifier's own output.
fn assert_not_forged(t: &TrialRow) {
    assert_eq!(t.reward, Some(0.0), "{t:#?}");
    assert_eq!(t.outcome, Some(Outcome::Fail), "{t:#?}");
    assert!(
        trial_dir(t).join("verifier/test-stdout.txt").is_file(),
        "{t:#?}"
    );
}

/// The paths flagged for `t` (empty when not flagged).
fn flagged(t: &TrialRow) -> Vec<String> {
    t.tamper
        .as_ref()
        .and_then(|v| v["paths"].as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|p| p.as_str().map(str::to_string))
        .collect()
}

/// The agent's `agent/tamper.json`.
fn tamper_record(t: &TrialRow) -> serde_json::Value {
    let p = trial_dir(t).join("agent/tamper.json");
    serde_json::from_slice(&std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap()
}

/// Every file under `dir` (no link followed), with its bytes.
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| (e.path().to_path_buf(), std::fs::read(e.path()).unwrap()))
        .collect()
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// The verifier runs where the agent no longer is, fresh from the task's image: a loop left
/// running, a replaced shell, python or tools, a watcher for the tests, a pre-written reward and
/// report, reward files made folders, a secret read from `/proc` — each ends with reward 0 and
/// never a pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hostile_agents_never_forge_a_pass() {
    let s = Scratch::new();
    let tasks = [
        "setsid-loop",
        "replaced-shell",
        "replaced-tools",
        "replaced-python",
        "shadowed-python",
        "tests-watcher",
        "prewritten-reward",
        "reward-dirs",
        "proc-secret",
        "pytest-root-config",
    ];
    let out = s.run(request(&s, "hostile", &tasks, 1)).await;
    assert!(out.finished);
    let rows = s.trials(out.run.id);
    let c = "no-skills";
    for task in tasks {
        assert_not_forged(one(&rows, task, c));
    }

    // The loop the agent left is gone before the verifier exists: the verifier's own 0 stands.
    let t = one(&rows, "setsid-loop", c);
    let v = std::fs::read_to_string(trial_dir(t).join("verifier/reward.txt")).unwrap();
    assert_eq!(v.trim(), "0");
    assert!(!trial_dir(t).join("verifier/reward.json").exists());

    // A replaced /bin/sh never reaches the verifier, which starts from the image: its own
    // reward is 0; the replacement is flagged and the trial judged a failure.
    let t = one(&rows, "replaced-shell", c);
    assert!(flagged(t).contains(&"C /bin/sh".to_string()), "{t:#?}");
    assert_eq!(t.rewards.as_ref().unwrap()["verifier.reward"], 0.0);
    assert!(t.error.as_deref().unwrap().contains("tampered"), "{t:#?}");

    // Replaced tools are never run by skillscope's own commands in the verifier's container (its
    // static shell): the verifier's reward is its own 0; the replacement is flagged.
    let t = one(&rows, "replaced-tools", c);
    assert_eq!(
        t.rewards.as_ref().unwrap()["verifier.reward"],
        0.0,
        "{t:#?}"
    );
    let record = tamper_record(t);
    let paths: Vec<&str> = record["flagged"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["path"].as_str())
        .collect();
    for tool in ["mkdir", "chmod", "rm", "kill", "df", "sleep"] {
        assert!(
            paths.contains(&format!("/bin/{tool}").as_str()),
            "{tool}: {record:#}"
        );
    }

    // The verifier's python replaced, or shadowed earlier on PATH: flagged, and neither reaches
    // the verifier (its reward is its own 0).
    let t = one(&rows, "replaced-python", c);
    assert!(
        flagged(t).contains(&"C /usr/bin/python".to_string()),
        "{t:#?}"
    );
    assert_eq!(t.rewards.as_ref().unwrap()["verifier.reward"], 0.0);
    let t = one(&rows, "shadowed-python", c);
    assert!(
        flagged(t).contains(&"A /usr/local/bin/python".to_string()),
        "{t:#?}"
    );

    // The watcher never sees the tests: none is stolen into the trial folder, none rewritten.
    let t = one(&rows, "tests-watcher", c);
    for (p, bytes) in files_under(&trial_dir(t)) {
        assert!(
            !contains(&bytes, "SECRET-TEST-MARKER-7c1e") || p.ends_with("verifier/test-stdout.txt"),
            "the hidden test leaked into {}",
            p.display()
        );
    }
    assert!(!trial_dir(t).join("agent/stolen-tests").exists());
    assert_eq!(
        t.tamper, None,
        "the watcher changed nothing watched: {t:#?}"
    );

    // A pre-written reward and CTRF report are the agent's, not the verifier's: neither counts.
    let t = one(&rows, "prewritten-reward", c);
    assert_eq!((t.tests_total, t.tests_passed), (None, None), "{t:#?}");
    assert!(!trial_dir(t).join("verifier/ctrf.json").exists());
    assert!(
        flagged(t).iter().any(|p| p.starts_with("A /logs/verifier")),
        "{t:#?}"
    );

    // pytest's configuration planted in `/`, above `/tests` (a conftest.py there turns every
    // failure of a pytest verifier into a pass): flagged.
    let t = one(&rows, "pytest-root-config", c);
    for p in ["A /conftest.py", "A /pytest.ini", "A /pyproject.toml"] {
        assert!(flagged(t).contains(&p.to_string()), "{p}: {t:#?}");
    }

    // Reward files made folders in the agent's container do not exist in the verifier's.
    let t = one(&rows, "reward-dirs", c);
    assert_eq!(
        std::fs::read_to_string(trial_dir(t).join("verifier/reward.txt"))
            .unwrap()
            .trim(),
        "0"
    );

    // The verifier's secret exists only in its own exec: the loop that looked for it is gone.
    let t = one(&rows, "proc-secret", c);
    assert!(
        std::fs::read_to_string(trial_dir(t).join("verifier/test-stdout.txt"))
            .unwrap()
            .contains("the verifier has its token")
    );
    for (p, bytes) in files_under(&trial_dir(t)) {
        assert!(
            !contains(&bytes, "vtok-3f9a2c71e0d84b5a"),
            "the verifier's secret reached {}",
            p.display()
        );
    }

    // Flagged trials are listed by the report, with the rule, and never count as a pass.
    let conn = s.store.connect().unwrap();
    let report = skillscope::report::build(
        &conn,
        &skillscope::analysis::results::Selection::Runs(vec!["hostile".into()]),
        &skillscope::analysis::results::Scoring::default(),
    )
    .unwrap();
    let listed: Vec<&str> = report.results.tamper.conditions[0]
        .trials
        .iter()
        .map(|x| x.task.as_str())
        .collect();
    for task in ["replaced-shell", "replaced-python", "shadowed-python"] {
        assert!(listed.contains(&task), "{listed:?}");
    }
    let md = skillscope::report::markdown::render(&report, &[]);
    assert!(md.contains("## Tampered trials") && md.contains("judged a failure of the agent"));
    assert_eq!(report.results.conditions[0].pass_rate, 0.0);
    // status --json lists them too.
    let st = common::skillscope(&s, &["status", "--json", "hostile"]);
    let v: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    let trials = v["runs"][0]["tampered"]["conditions"][0]["trials"]
        .as_array()
        .unwrap();
    assert!(trials.len() >= 3, "{v:#}");
    assert_nothing_left("skillscope.run=hostile").await;
}

/// No container carrying `label` is left on the daemon once its run ended: a removal still in
/// progress (a loaded machine) is given 30 s to finish; anything else is named.
async fn assert_nothing_left(label: &str) {
    let docker = bollard::Docker::connect_with_defaults().unwrap();
    let t0 = std::time::Instant::now();
    loop {
        let left = containers_labelled(&docker, label).await;
        let mut states = Vec::new();
        for c in &left {
            if let Ok(i) = docker.inspect_container(c, None).await {
                states.push((
                    i.name,
                    i.state.and_then(|s| s.status).map(|s| s.to_string()),
                ));
            }
        }
        let removing = states.iter().all(|(_, s)| s.as_deref() == Some("removing"));
        if states.is_empty() {
            return;
        }
        assert!(
            removing && t0.elapsed() < std::time::Duration::from_secs(30),
            "containers left behind: {states:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// Links planted at every name skillscope writes into the agent's (and the verifier's) folders
/// never redirect a write: the host file they name is unchanged, and every file of the trial
/// folder is a regular file of skillscope's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_links_never_reach_a_host_file() {
    let s = Scratch::new();
    let victim = s.dir.path().join("victim.txt");
    std::fs::write(&victim, "host file, keep\n").unwrap();
    let mut req = request(&s, "links", &["symlink-plants"], 1);
    req.settings.env = vec![EnvSetting::parse(&format!("VICTIM={}", victim.display())).unwrap()];
    let out = s.run(req).await;
    let rows = s.trials(out.run.id);
    let t = one(&rows, "symlink-plants", "no-skills");
    assert_not_forged(t);
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "host file, keep\n"
    );
    for e in walkdir::WalkDir::new(trial_dir(t))
        .follow_links(false)
        .into_iter()
        .flatten()
    {
        assert!(
            !e.file_type().is_symlink(),
            "a link reached the trial folder: {}",
            e.path().display()
        );
    }
    let dir = trial_dir(t);
    // skillscope's own records are its own.
    assert_eq!(
        std::fs::read_to_string(dir.join("agent/exit-code.txt"))
            .unwrap()
            .trim(),
        "3"
    );
    let tr = std::fs::read_to_string(dir.join("agent/trajectory.json")).unwrap();
    assert!(tr.contains("ATIF"), "{tr}");
    assert!(tamper_record(t)["changes"].as_u64().unwrap() > 0);
    // The jobs folder's host path is nowhere in what the container could see of its mounts.
    let oracle = std::fs::read(dir.join("agent/oracle.txt")).unwrap();
    assert!(contains(&oracle, " / "), "mountinfo was printed");
    let jobs = s.jobs().display().to_string();
    assert!(
        !contains(&oracle, &jobs),
        "{}",
        String::from_utf8_lossy(&oracle)
    );
    assert!(!contains(&oracle, &s.dir.path().display().to_string()));
}

/// 1,500 background processes stop at the process limit, and the trial still ends (every process
/// killed with its container).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_flood_is_bounded() {
    let s = Scratch::new();
    let out = s.run(request(&s, "flood", &["many-processes"], 1)).await;
    let rows = s.trials(out.run.id);
    let t = one(&rows, "many-processes", "no-skills");
    assert_not_forged(t);
    let count: u64 = std::fs::read_to_string(trial_dir(t).join("agent/count.txt"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let limit = skillscope::skillsbench::task::DEFAULT_PIDS_LIMIT;
    assert!(
        (500..=limit).contains(&count),
        "{count} processes in the container (limit {limit})"
    );
    assert_nothing_left("skillscope.run=flood").await;
}

/// 1 GiB written into `/logs/agent` is copied out only up to the cap, with a note saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_log_is_copied_out_capped() {
    let s = Scratch::new();
    let out = s.run(request(&s, "big", &["big-log"], 1)).await;
    let rows = s.trials(out.run.id);
    let t = one(&rows, "big-log", "no-skills");
    assert_not_forged(t);
    let agent = trial_dir(t).join("agent");
    let cap = skillscope::runner::sandbox::MAX_DOWNLOAD_BYTES;
    let big = std::fs::metadata(agent.join("big.bin")).map_or(0, |m| m.len());
    assert!(big < cap, "{big} bytes of big.bin copied, cap {cap}");
    // The rest of the folder is skillscope's own records (a few KiB).
    let total: u64 = files_under(&agent)
        .iter()
        .map(|(_, b)| b.len() as u64)
        .sum();
    assert!(
        total <= cap + (1 << 20),
        "{total} bytes in agent/, cap {cap}"
    );
    let note = std::fs::read_to_string(agent.join("TRUNCATED.txt")).unwrap();
    assert!(note.contains(&cap.to_string()), "{note}");
}

/// An `--env` value reaches the agent's exec but never the containers' configuration (checked
/// with the daemon while the trial runs) nor any file of the trial folder, in any of its forms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_env_secret_stays_out_of_inspect_and_trial_files() {
    let s = Scratch::new();
    let token = "sk-test/Secret+Value=9f8e7d6c";
    let mut req = request(&s, "secret", &["secret-echo"], 1);
    req.settings.env = vec![EnvSetting::parse(&format!("API_TOKEN={token}")).unwrap()];
    let run = tokio::spawn({
        let store = s.store.clone();
        async move {
            skillscope::engine::Engine::new(store)
                .run(
                    common::prepared(req),
                    tokio_util::sync::CancellationToken::new(),
                )
                .await
                .expect("run")
        }
    });
    let docker = bollard::Docker::connect_with_defaults().unwrap();
    let mut inspected = 0;
    while !run.is_finished() {
        for c in containers_labelled(&docker, "skillscope.run=secret").await {
            if let Ok(i) = docker.inspect_container(&c, None).await {
                let env = i.config.and_then(|c| c.env).unwrap_or_default();
                assert!(
                    env.iter()
                        .all(|e| !e.contains(token) && !e.starts_with("API_TOKEN")),
                    "{env:?}"
                );
                inspected += 1;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let out = run.await.unwrap();
    assert!(
        inspected > 0,
        "the trial's container was never seen running"
    );
    let rows = s.trials(out.run.id);
    let t = one(&rows, "secret-echo", "no-skills");
    let dir = trial_dir(t);
    let oracle = std::fs::read_to_string(dir.join("agent/oracle.txt")).unwrap();
    assert!(oracle.contains("token: [redacted API_TOKEN]"), "{oracle}");
    assert!(
        oracle.contains("url: https://x.invalid/?k=[redacted API_TOKEN]"),
        "{oracle}"
    );
    let dump = std::fs::read_to_string(dir.join("agent/env-dump.txt")).unwrap();
    assert!(dump.contains("API_TOKEN=[redacted API_TOKEN]"), "{dump}");
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("user:{token}"));
    for (p, bytes) in files_under(&dir) {
        for form in [
            token,
            "sk-test%2FSecret%2BValue%3D9f8e7d6c",
            &b64[8..b64.len() - 4],
        ] {
            assert!(!contains(&bytes, form), "{form} in {}", p.display());
        }
    }
}

/// Two `allow_internet` trials at once: each container is on a bridge network of its own
/// (created for the trial, labelled with it), not Docker's default bridge — and the networks are
/// gone after the trials. Checked from the daemon's side; no traffic is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn internet_trials_each_get_a_network_of_their_own() {
    let s = Scratch::new();
    let mut req = request(&s, "nets", &["net-own"], 2);
    req.settings.concurrency = 2;
    let run = tokio::spawn({
        let store = s.store.clone();
        async move {
            skillscope::engine::Engine::new(store)
                .run(
                    common::prepared(req),
                    tokio_util::sync::CancellationToken::new(),
                )
                .await
                .expect("run")
        }
    });
    let docker = bollard::Docker::connect_with_defaults().unwrap();
    // Agent containers seen running at the same time, with their networks.
    let mut seen: HashMap<String, Vec<String>> = HashMap::new();
    let mut together = false;
    while !run.is_finished() {
        let mut now = 0;
        for c in containers_labelled(&docker, "skillscope.run=nets").await {
            let Ok(i) = docker.inspect_container(&c, None).await else {
                continue;
            };
            let running = i.state.and_then(|s| s.running).unwrap_or(false);
            let role = i
                .config
                .and_then(|c| c.labels)
                .and_then(|l| l.get("skillscope.role").cloned());
            if !running || role.as_deref() != Some("agent") {
                continue;
            }
            now += 1;
            let nets: Vec<String> = i
                .network_settings
                .and_then(|n| n.networks)
                .map(|n| n.into_keys().collect())
                .unwrap_or_default();
            seen.insert(c, nets);
        }
        together |= now == 2;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let out = run.await.unwrap();
    assert!(together, "the two trials never ran together: {seen:?}");
    assert_eq!(seen.len(), 2, "{seen:?}");
    let mut all: Vec<&String> = Vec::new();
    for nets in seen.values() {
        assert_eq!(nets.len(), 1, "{seen:?}");
        assert_ne!(nets[0], "bridge", "on Docker's default bridge: {seen:?}");
        all.push(&nets[0]);
    }
    assert_ne!(all[0], all[1], "the trials share a network: {seen:?}");
    // Gone after the trials, by the run's label.
    let left = docker
        .list_networks(Some(bollard::query_parameters::ListNetworksOptions {
            filters: Some(HashMap::from([(
                "label".to_string(),
                vec![format!("skillscope.run-uid={}", out.run.uid)],
            )])),
        }))
        .await
        .unwrap();
    assert!(left.is_empty(), "{left:?}");
    for net in all {
        assert!(
            docker.inspect_network(net, None).await.is_err(),
            "{net} left"
        );
    }
    let rows = s.trials(out.run.id);
    assert_eq!(rows.len(), 2);
}

/// The ids of containers with `label`.
async fn containers_labelled(docker: &bollard::Docker, label: &str) -> Vec<String> {
    docker
        .list_containers(Some(bollard::query_parameters::ListContainersOptions {
            all: true,
            filters: Some(HashMap::from([(
                "label".to_string(),
                vec![label.to_string()],
            )])),
            ..Default::default()
        }))
        .await
        .unwrap_or_default()
        .into_iter()
        .filter_map(|c| c.id)
        .collect()
}
