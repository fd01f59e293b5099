//! The real harness CLIs (Claude Code, Codex CLI, Gemini CLI), installed from their pinned npm
//! packages and run in real containers, against a scripted model server that speaks each
//! provider's HTTP API and replies with fixed tool calls solving a fixture task. No API key is
//! needed: the key is a dummy, the base URL points at the scripted server on the Docker bridge.
//!
//! What is checked end to end through `skillscope run`: the verifier passes, the trajectory is
//! ATIF with the skill read detected, tokens and cost land in the trial record and Harbor's
//! `agent_result`, the dummy key is written nowhere; a 401 stops the run with a provider-error
//! trial queued again, a 429 is retried with backoff and then left as provider-error — neither
//! counts as a task failure.

use crate::support::{
    common, container_gateway, docker_tcp_proxy, glibc_image, harness_env, harness_run,
    private_dockerd, scripted_model,
};
use std::path::{Path, PathBuf};

use common::require_docker;
use harness_env::{gateway, serial};
use scripted_model::{Script, ScriptedModel, Usage};
use skillscope::store::{Outcome, Store, TrialRow, queries};

/// The dummy key; it must not appear in anything skillscope writes.
const DUMMY_KEY: &str = "sk-test-dummy-key-9f3a";

struct Harness {
    agent: &'static str,
    model: &'static str,
    key_var: &'static str,
    base_var: &'static str,
    /// Base URL path the CLI appends its routes to.
    base_path: &'static str,
    skills_dir: &'static str,
    /// A skill the pinned CLI brings of its own, named in the model's requests unless it is
    /// switched off.
    builtin: &'static str,
}

const CLAUDE: Harness = Harness {
    agent: "claude-code",
    model: "claude-opus-4-6",
    key_var: "ANTHROPIC_API_KEY",
    base_var: "ANTHROPIC_BASE_URL",
    base_path: "",
    skills_dir: "/root/.claude/skills",
    builtin: "update-config",
};

const CODEX: Harness = Harness {
    agent: "codex",
    model: "gpt-5.2-codex",
    key_var: "OPENAI_API_KEY",
    base_var: "OPENAI_BASE_URL",
    base_path: "/v1",
    skills_dir: "/root/.codex/skills",
    builtin: "skill-installer",
};

const GEMINI: Harness = Harness {
    agent: "gemini-cli",
    model: "gemini-3-flash-preview",
    key_var: "GEMINI_API_KEY",
    base_var: "GOOGLE_GEMINI_BASE_URL",
    base_path: "",
    skills_dir: "/root/.gemini/skills",
    builtin: "antigravity-support",
};

fn solving_script(h: &Harness) -> Script {
    Script {
        commands: vec![
            format!("cat {}/greeting/SKILL.md", h.skills_dir),
            "echo 'hello from the greeting skill' > /root/answer.txt".into(),
            // An agent printing its environment must not put the key into the trial folder.
            "env".into(),
        ],
        final_text: "I wrote the greeting to /root/answer.txt.".into(),
        fail_with: None,
        fail_first: 0,
        usage: Usage {
            input: 1000,
            cached: 200,
            output: 50,
        },
        phases: Vec::new(),
        hold: None,
        ..Default::default()
    }
}

struct Outcomes {
    dir: tempfile::TempDir,
    exit: i32,
    stderr: String,
    attempts: Vec<TrialRow>,
}

/// Runs `skillscope run` on the harness fixture task, condition curated, one trial, on the local
/// daemon or on `docker_host`.
async fn run_harness_on(
    h: &Harness,
    model: &ScriptedModel,
    config: &str,
    run: &str,
    docker_host: Option<&str>,
) -> Outcomes {
    run_harness_from(
        h,
        model,
        config,
        run,
        docker_host,
        &harness_run::harness_tasks(),
    )
    .await
}

/// [`run_harness_on`] on the task folders in `tasks`.
async fn run_harness_from(
    h: &Harness,
    model: &ScriptedModel,
    config: &str,
    run: &str,
    docker_host: Option<&str>,
    tasks: &Path,
) -> Outcomes {
    require_docker().await;
    let _serial = serial().await;
    glibc_image::ensure_glibc_image().await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("skillscope.toml");
    std::fs::write(&cfg, config).unwrap();
    let base = format!("{}{}", model.base_url(&gateway().await), h.base_path);
    let mut cmd =
        harness_run::harness_run_under(h.agent, h.model, run, dir.path(), "curated", 1, tasks);
    if let Some(host) = docker_host {
        cmd.args(["--docker-host", host]);
    }
    let out = cmd
        .arg("--config")
        .arg(&cfg)
        .env(h.key_var, DUMMY_KEY)
        .env(h.base_var, base)
        .output()
        .expect("run skillscope");
    let store = Store::open(&dir.path().join("s.db")).expect("store");
    let c = store.connect().unwrap();
    let run = queries::find_run(&c, run)
        .expect("store")
        .unwrap_or_else(|| panic!("no run recorded: {}", String::from_utf8_lossy(&out.stderr)));
    let current = queries::current_trials(&c, run.id).expect("trials");
    assert_eq!(current.len(), 1, "{current:#?}");
    let attempts = queries::trial_attempts(&c, run.id, &current[0].key()).expect("attempts");
    Outcomes {
        exit: out.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        attempts,
        dir,
    }
}

async fn run_harness(h: &Harness, model: &ScriptedModel, config: &str, run: &str) -> Outcomes {
    run_harness_on(h, model, config, run, None).await
}

/// The end of the harness's stderr and log of attempt `t`, for failure messages.
fn agent_logs(t: &TrialRow) -> String {
    let Some(dir) = &t.trial_dir else {
        return String::new();
    };
    let mut out = String::new();
    for e in std::fs::read_dir(Path::new(dir).join("agent"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let text =
            String::from_utf8_lossy(&std::fs::read(e.path()).unwrap_or_default()).into_owned();
        let tail: String = text
            .chars()
            .rev()
            .take(1500)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        out.push_str(&format!("\n--- {}\n{tail}", e.path().display()));
    }
    out
}

/// Fails when `needle` occurs in any file under `root`.
fn assert_not_written(root: &Path, needle: &str) {
    for e in walkdir::WalkDir::new(root).into_iter().flatten() {
        if e.file_type().is_file() {
            let bytes = std::fs::read(e.path()).unwrap_or_default();
            assert!(
                !bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
                "the API key was written to {}",
                e.path().display()
            );
        }
    }
}

async fn solves_the_task(h: &Harness) {
    solves_the_task_on(h, None).await;
}

async fn solves_the_task_on(h: &Harness, docker_host: Option<&str>) {
    let model = ScriptedModel::start(solving_script(h)).await;
    let o = run_harness_on(h, &model, "", &format!("{}-solves", h.agent), docker_host).await;
    let answers: Vec<String> = model
        .state
        .recorded()
        .iter()
        .map(|r| r.answer.clone())
        .collect();
    assert_eq!(
        o.exit, 0,
        "skillscope run failed: {}\nmodel saw: {answers:?}",
        o.stderr
    );
    assert_eq!(o.attempts.len(), 1, "{:#?}", o.attempts);
    let t = &o.attempts[0];
    assert_eq!(
        t.outcome,
        Some(Outcome::Pass),
        "{:?}: {:?}; model saw {answers:?}",
        t.outcome,
        t.error
    );
    assert!(answers.contains(&"command 0".to_string()) && answers.contains(&"final".to_string()));
    // The key reached the model server, in the provider's header.
    let first = &model.state.recorded()[0];
    assert!(
        first.headers.iter().any(|(_, v)| v.contains(DUMMY_KEY)),
        "no request carried the key: {:?}",
        first.headers.iter().map(|(k, _)| k).collect::<Vec<_>>()
    );
    // Trajectory: ATIF, the instruction first, both commands as tool calls, the skill read.
    let trial_dir = PathBuf::from(t.trial_dir.clone().expect("trial dir"));
    let traj: serde_json::Value = serde_json::from_slice(
        &std::fs::read(trial_dir.join("agent/trajectory.json")).expect("agent/trajectory.json"),
    )
    .unwrap();
    assert!(traj["schema_version"].as_str().unwrap().starts_with("ATIF"));
    assert_eq!(traj["agent"]["name"], h.agent);
    // The instruction is the first step after any system preamble (Gemini CLI's session context).
    let first_turn = traj["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|st| st["source"] != "system")
        .unwrap();
    assert_eq!(first_turn["source"], "user", "{traj:#}");
    assert_eq!(t.n_tool_calls, Some(3), "{traj:#}");
    let c = Store::open(&o.dir.path().join("s.db"))
        .unwrap()
        .connect()
        .unwrap();
    let uses = queries::skill_uses(&c, t.id).unwrap();
    assert!(
        uses.iter().any(|u| u.skill == "greeting"),
        "skill use not detected: {uses:?}"
    );
    // Tokens: four model responses of 1000 fresh + 200 cached input and 50 output.
    assert_eq!(
        t.n_input_tokens,
        Some(4 * 1200),
        "prompt tokens incl. cache"
    );
    assert_eq!(t.n_cache_tokens, Some(4 * 200));
    assert_eq!(t.n_output_tokens, Some(4 * 50));
    let cost = t.cost_usd.expect("cost");
    assert!(cost > 0.0, "{cost}");
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(trial_dir.join("result.json")).unwrap()).unwrap();
    assert_eq!(result["agent_result"]["n_input_tokens"], 4800);
    assert_eq!(result["agent_result"]["n_output_tokens"], 200);
    assert_eq!(result["agent_info"]["name"], h.agent);
    assert_not_written(o.dir.path(), DUMMY_KEY);
    assert_exposure(h, &model, &trial_dir, &c, t.id, true);
}

/// What the trial's agent could see and used: the task's skill alone (hashed as its files are),
/// the harness's own skills switched off — the model's requests name the task's skill and not the
/// built-in — and, when `reads` (the script reads the skill), its use with the step; else none,
/// known.
fn assert_exposure(
    h: &Harness,
    model: &ScriptedModel,
    trial_dir: &Path,
    c: &rusqlite::Connection,
    trial_id: i64,
    reads: bool,
) {
    let x = common::skill_exposure(trial_dir);
    // The harness's own skills found on disk (Gemini CLI's, in its kit) are listed, switched off.
    let (own, skills): (Vec<&serde_json::Value>, Vec<&serde_json::Value>) = x["skills"]
        .as_array()
        .unwrap()
        .iter()
        .partition(|s| s["origin"] == "harness");
    assert!(own.iter().all(|s| s["enabled"] == false), "{x:#}");
    if h.agent == "gemini-cli" {
        assert!(own.iter().any(|s| s["dir"] == h.builtin), "{x:#}");
    }
    assert_eq!(skills.len(), 1, "{x:#}");
    assert_eq!(skills[0]["dir"], "greeting");
    assert_eq!(skills[0]["origin"], "task");
    assert_eq!(
        skills[0]["sha256"],
        common::folder_sha256(
            &harness_run::harness_tasks().join("hello-skill/environment/skills/greeting")
        )
    );
    assert_eq!(x["builtins"]["switched_off"], true, "{x:#}");
    assert!(
        x["builtins"]["names"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == h.builtin),
        "the record names what the CLI ships: {x:#}"
    );
    assert_eq!(x["used"]["state"], "known", "{x:#}");
    let used = x["used"]["skills"].as_array().unwrap();
    if reads {
        let g = used
            .iter()
            .find(|u| u["skill"] == "greeting")
            .unwrap_or_else(|| panic!("the read of the skill was not recorded: {x:#}"));
        assert_eq!(g["own"], true);
        assert!(g["first_step"].as_i64().is_some_and(|s| s >= 2), "{x:#}");
    } else {
        assert_eq!(used.len(), 0, "{x:#}");
    }
    let stored: (String, i64) = c
        .query_row(
            "SELECT e.skill_use, (SELECT COUNT(*) FROM skill_uses u WHERE u.trial_id = e.trial_id)
             FROM trial_exposures e WHERE e.trial_id = ?1",
            [trial_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(stored.0, "known");
    assert_eq!(stored.1 > 0, reads, "{stored:?}");
    let recorded = model.state.recorded();
    // Offered before the agent did anything: the first request of the conversation.
    let first = recorded
        .iter()
        .find(|r| r.answer == "command 0")
        .expect("a first model request");
    assert!(
        first
            .body
            .to_string()
            .contains("The greeting this task expects"),
        "the model was not offered the task's skill: {}",
        first.body
    );
    assert!(
        !first.body.to_string().contains(h.builtin),
        "the model was offered the harness's own skill {}: {}",
        h.builtin,
        first.body
    );
}

async fn provider_failures(h: &Harness) {
    // 401: the key is refused — no verdict, the run stops, the trial is queued again.
    let model = ScriptedModel::start(Script {
        fail_with: Some(401),
        ..solving_script(h)
    })
    .await;
    let o = run_harness(h, &model, "", &format!("{}-401", h.agent)).await;
    assert_ne!(o.exit, 0, "a refused key must stop the run");
    assert!(o.stderr.contains("key was refused"), "{}", o.stderr);
    let first = &o.attempts[0];
    assert_eq!(first.outcome, Some(Outcome::ProviderError), "{first:#?}");
    assert!(
        first.error.as_deref().unwrap().contains("HTTP 401"),
        "{:?}",
        first.error
    );
    assert_eq!(
        first.reward, None,
        "the verifier must not judge a provider failure"
    );
    assert_eq!(o.attempts.len(), 2, "queued again: {:#?}", o.attempts);
    assert_eq!(o.attempts[1].outcome, None);
    assert_not_written(o.dir.path(), DUMMY_KEY);

    // 429: retried automatically (here once, without waiting), then left as provider-error.
    // Gemini CLI retries a 429 itself before it gives up: 10 attempts 5–30 s apart for a model
    // whose policy names them (gemini-3-flash-preview; the settings' `maxAttempts` yields to
    // it), 3.5 minutes per trial. Its case runs the task with a 20 s agent timeout instead: the
    // agent's time ends while the CLI still retries, which is the provider's failure too
    // (`stalled_on_provider`) — what a SkillsBench task with a short agent timeout meets.
    let model = ScriptedModel::start(Script {
        fail_with: Some(429),
        ..solving_script(h)
    })
    .await;
    let short = tempfile::tempdir().unwrap();
    let tasks = if h.agent == GEMINI.agent {
        common::copy_tree(&harness_run::harness_tasks(), short.path(), None);
        let toml = short.path().join("hello-skill/task.toml");
        let text = std::fs::read_to_string(&toml).unwrap();
        assert!(text.contains("[agent]\ntimeout_sec = 300\n"), "{text}");
        std::fs::write(
            &toml,
            text.replace(
                "[agent]\ntimeout_sec = 300\n",
                "[agent]\ntimeout_sec = 20\n",
            ),
        )
        .unwrap();
        short.path().to_path_buf()
    } else {
        harness_run::harness_tasks()
    };
    let o = run_harness_from(
        h,
        &model,
        "[harness]\nprovider_retries = 1\nprovider_backoff_secs = 0\n",
        &format!("{}-429", h.agent),
        None,
        &tasks,
    )
    .await;
    // The trial is left without a verdict once its retries are used up: the run stops with
    // trials left (exit code 3), it does not finish.
    assert_eq!(o.exit, 3, "{}", o.stderr);
    assert!(o.stderr.contains("retries used up"), "{}", o.stderr);
    assert_eq!(
        o.attempts.len(),
        2,
        "one automatic retry: {:#?}{}",
        o.attempts,
        agent_logs(&o.attempts[0])
    );
    for a in &o.attempts {
        assert_eq!(
            a.outcome,
            Some(Outcome::ProviderError),
            "{a:#?}{}",
            agent_logs(a)
        );
        assert!(
            a.error.as_deref().unwrap().contains("rate limit"),
            "{:?}",
            a.error
        );
        assert_eq!(a.reward, None);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_solves_a_task_against_the_scripted_model() {
    solves_the_task(&CLAUDE).await;
}

/// A scripted agent that never opens its skill: the trial is recorded as not using it (known, no
/// use) — not as unknown.
#[tokio::test(flavor = "multi_thread")]
async fn claude_code_that_never_reads_its_skill_is_recorded_as_not_using_it() {
    let model = ScriptedModel::start(Script {
        commands: vec!["echo 'hello from the greeting skill' > /root/answer.txt".into()],
        ..solving_script(&CLAUDE)
    })
    .await;
    let o = run_harness(&CLAUDE, &model, "", "claude-code-no-read").await;
    assert_eq!(o.exit, 0, "{}", o.stderr);
    let t = &o.attempts[0];
    assert_eq!(t.outcome, Some(Outcome::Pass), "{t:#?}");
    let c = Store::open(&o.dir.path().join("s.db"))
        .unwrap()
        .connect()
        .unwrap();
    let dir = PathBuf::from(t.trial_dir.clone().unwrap());
    assert_exposure(&CLAUDE, &model, &dir, &c, t.id, false);
    let report = skillscope::report::build(
        &c,
        &skillscope::analysis::results::Selection::Runs(vec!["claude-code-no-read".into()]),
        &skillscope::analysis::results::Scoring::default(),
    )
    .unwrap();
    let e = &report.results.exposure.conditions[0];
    assert_eq!((e.use_known, e.used, e.use_unknown), (1, 0, 0), "{e:#?}");
    assert_eq!(e.never_used, vec!["greeting".to_string()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_provider_failures_are_not_task_failures() {
    provider_failures(&CLAUDE).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_solves_a_task_against_the_scripted_model() {
    solves_the_task(&CODEX).await;
}

/// A daemon that cannot see this machine's folders: the kit travels in a volume filled through
/// the API, the agent's logs come back through the API; everything else as on a local daemon.
#[tokio::test(flavor = "multi_thread")]
async fn codex_solves_a_task_on_a_remote_docker_host() {
    require_docker().await;
    let docker = bollard::Docker::connect_with_defaults().expect("docker");
    let volume = "skillscope-kit-codex-0.169.0";
    // Start from no volume, so the copy is made (and checked) on every run of this test.
    match docker
        .remove_volume(
            volume,
            None::<bollard::query_parameters::RemoveVolumeOptions>,
        )
        .await
    {
        Ok(()) => {}
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        }) => {}
        Err(e) => panic!("cannot start without the kit volume {volume}: {e}"),
    }
    let remote = docker_tcp_proxy::start().await;
    solves_the_task_on(&CODEX, Some(&remote)).await;
    let v = docker
        .inspect_volume(volume)
        .await
        .expect("the kit volume was created on the remote host");
    assert_eq!(
        v.labels.get("skillscope.managed").map(String::as_str),
        Some("1")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_provider_failures_are_not_task_failures() {
    provider_failures(&CODEX).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_cli_solves_a_task_against_the_scripted_model() {
    solves_the_task(&GEMINI).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_cli_provider_failures_are_not_task_failures() {
    provider_failures(&GEMINI).await;
}

/// What every test above relies on — a container on the default bridge reaches a server on the
/// daemon's machine at [`gateway`]'s address — holds on a daemon that has never run before and on
/// one that has: a private `dockerd` in a network namespace of its own first creates its `docker0`
/// itself (the case in which Docker 20.10 reports no gateway for the bridge network), then is
/// restarted and adopts the `docker0` it left (the case in which it does).
#[tokio::test(flavor = "multi_thread")]
async fn containers_reach_this_machine_on_fresh_and_reused_daemons() {
    let daemon = tokio::task::spawn_blocking(private_dockerd::PrivateDockerd::start)
        .await
        .expect("start a private daemon");
    let fresh = reaches_this_machine(&daemon, "fresh").await;
    let daemon = tokio::task::spawn_blocking(move || {
        let mut daemon = daemon;
        daemon.stop();
        daemon.restart();
        daemon
    })
    .await
    .expect("restart the private daemon");
    let reused = reaches_this_machine(&daemon, "reused").await;
    eprintln!("bridge IPAM gateway: fresh {fresh:?}, reused {reused:?}");
    tokio::task::spawn_blocking(move || drop(daemon))
        .await
        .expect("remove the private daemon");
}

/// Checks that a container of `daemon` reaches a scripted server in the daemon's namespace at
/// [`container_gateway::host_address`]; returns the gateway the bridge network reports, if any.
async fn reaches_this_machine(
    daemon: &private_dockerd::PrivateDockerd,
    case: &str,
) -> Option<String> {
    let docker = daemon.docker();
    let reported = docker
        .inspect_network(
            "bridge",
            None::<bollard::query_parameters::InspectNetworkOptions>,
        )
        .await
        .expect("inspect the bridge network")
        .ipam
        .and_then(|i| i.config)
        .into_iter()
        .flatten()
        .find_map(|c| c.gateway);
    let address = container_gateway::host_address(&docker).await;
    let model = ScriptedModel::start_on(daemon.listen(), solving_script(&CLAUDE));
    let url = format!("{}/probe", model.base_url(&address));
    let c = skillscope::runner::docker::start_helper(
        &docker,
        &uuid::Uuid::new_v4().to_string(),
        skillscope::runner::docker::BUSYBOX_IMAGE,
        "reach-probe",
        true,
    )
    .await
    .expect("a container on the private daemon");
    // The scripted server answers unknown routes with 404; what counts is that it was reached.
    // (No `wget -T`: busybox's static wget crashes with it.)
    let fetched = c
        .sh_output(
            &format!("wget -q -O- {url} 2>&1; true"),
            std::time::Duration::from_secs(60),
        )
        .await;
    c.remove().await;
    let (_, output) = fetched.expect("wget in the container");
    let seen: Vec<String> = model
        .state
        .recorded()
        .iter()
        .map(|r| r.line.clone())
        .collect();
    assert!(
        seen.iter().any(|l| l == "GET /probe"),
        "{case} daemon: a container did not reach {url} (wget said {output:?}; the server saw \
         {seen:?}); daemon log:\n{}",
        daemon.log()
    );
    reported
}

/// `skillscope run` of `trials` trials of the harness fixture task against `base` (the model's
/// base URL), spawned; its stderr in `dir/stderr.txt`.
fn spawn_harness(
    h: &Harness,
    base: &str,
    run: &str,
    dir: &Path,
    trials: u32,
    extra: &[&str],
    config: &str,
) -> std::process::Child {
    let cfg = dir.join("skillscope.toml");
    std::fs::write(&cfg, config).unwrap();
    let stderr = std::fs::File::create(dir.join("stderr.txt")).unwrap();
    harness_run::harness_run_n(h.agent, h.model, run, dir, trials)
        .args(extra)
        .arg("--config")
        .arg(&cfg)
        .env(h.key_var, DUMMY_KEY)
        .env(h.base_var, format!("{base}{}", h.base_path))
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("run skillscope")
}

/// Waits for `child`; its exit code and stderr.
fn finish(
    child: &mut std::process::Child,
    dir: &Path,
    limit: std::time::Duration,
) -> (i32, String) {
    let t0 = std::time::Instant::now();
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code().unwrap_or(-1);
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            panic!(
                "skillscope did not finish within {limit:?}: {}",
                std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    (
        code,
        std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default(),
    )
}

fn run_events(dir: &Path, run: &str) -> Vec<String> {
    let c = Store::open(&dir.join("s.db")).unwrap().connect().unwrap();
    let r = queries::find_run(&c, run).unwrap().expect("run");
    queries::recent_events(&c, r.id, 1000)
        .unwrap()
        .into_iter()
        .map(|(_, _, m)| m)
        .collect()
}

/// A scripted agent that pauses mid-trial (its tool sleeps, the CLI writes nothing): while it
/// runs the store shows its steps, last tool call, tokens and cost so far; after the short stall
/// time it is marked stalled (and the event log says so), not stopped; when it writes again the
/// mark goes, and the trial passes.
#[tokio::test(flavor = "multi_thread")]
async fn live_activity_and_a_stall_of_a_running_agent() {
    require_docker().await;
    let _serial = serial().await;
    glibc_image::ensure_glibc_image().await;
    let mut script = solving_script(&CLAUDE);
    script.commands.insert(0, "sleep 8".into());
    let model = ScriptedModel::start(script).await;
    let dir = tempfile::tempdir().unwrap();
    let base = model.base_url(&gateway().await);
    let mut child = spawn_harness(
        &CLAUDE,
        &base,
        "live",
        dir.path(),
        1,
        &["--stall-after", "3"],
        "",
    );
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    let (mut saw_live, mut saw_stall) = (None, false);
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() && t0.elapsed().as_secs() < 300 {
        if let Ok(c) = store.connect()
            && let Ok(Some(r)) = queries::find_run(&c, "live")
            && let Ok(rows) = queries::current_trials(&c, r.id)
            && let Some(t) = rows.first()
            && t.status == skillscope::store::TrialStatus::Agent
        {
            if t.live_steps.is_some_and(|n| n >= 2) && t.n_input_tokens.is_some_and(|n| n > 0) {
                saw_live.get_or_insert(t.clone());
            }
            saw_stall |= t.stalled_at.is_some();
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let (code, stderr) = finish(&mut child, dir.path(), std::time::Duration::from_secs(60));
    assert_eq!(code, 0, "{stderr}");
    let live = saw_live.expect("no live steps and tokens were seen while the agent ran");
    assert!(
        live.live_tool
            .as_deref()
            .is_some_and(|t| t.contains("sleep 8")),
        "{live:#?}"
    );
    assert!(
        live.last_output_at.is_some() && live.cost_usd.is_some_and(|c| c > 0.0),
        "{live:#?}"
    );
    assert!(saw_stall, "the silent agent was never marked stalled");
    let events = run_events(dir.path(), "live");
    assert!(events.iter().any(|e| e.contains("stalled")), "{events:#?}");
    assert!(
        events.iter().any(|e| e.contains("writes output again")),
        "{events:#?}"
    );
    let c = store.connect().unwrap();
    let r = queries::find_run(&c, "live").unwrap().unwrap();
    let t = &queries::current_trials(&c, r.id).unwrap()[0];
    assert_eq!(t.outcome, Some(Outcome::Pass), "{t:#?}");
    assert_eq!(t.stalled_at, None, "a finished trial is not stalled");
}

/// A budget smaller than two trials' cost: the first trial runs, then no other starts and the run
/// stops with `budget reached` (exit 3); resumed with a higher budget, it finishes.
#[tokio::test(flavor = "multi_thread")]
async fn a_cost_budget_stops_the_run_and_a_higher_one_resumes_it() {
    require_docker().await;
    let _serial = serial().await;
    glibc_image::ensure_glibc_image().await;
    let model = ScriptedModel::start(solving_script(&CLAUDE)).await;
    let dir = tempfile::tempdir().unwrap();
    let base = model.base_url(&gateway().await);
    let args = ["--concurrency", "1", "--max-cost", "0.000001"];
    let mut child = spawn_harness(&CLAUDE, &base, "budget", dir.path(), 3, &args, "");
    let (code, stderr) = finish(&mut child, dir.path(), std::time::Duration::from_secs(300));
    assert_eq!(code, 3, "{stderr}");
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    let c = store.connect().unwrap();
    let r = queries::find_run(&c, "budget").unwrap().unwrap();
    assert_eq!(r.status, "stopped");
    assert!(
        r.stop_reason
            .as_deref()
            .unwrap_or("")
            .contains("budget reached"),
        "{:?}",
        r.stop_reason
    );
    assert_eq!(r.max_cost_usd, Some(0.000001));
    let rows = queries::current_trials(&c, r.id).unwrap();
    let done: Vec<_> = rows.iter().filter(|t| t.outcome.is_some()).collect();
    assert_eq!(done.len(), 1, "{rows:#?}");
    assert_eq!(done[0].outcome, Some(Outcome::Pass));
    let args = ["--concurrency", "1", "--max-cost", "100"];
    let mut child = spawn_harness(&CLAUDE, &base, "budget", dir.path(), 3, &args, "");
    let (code, stderr) = finish(&mut child, dir.path(), std::time::Duration::from_secs(600));
    assert_eq!(code, 0, "{stderr}");
    let rows = queries::current_trials(&c, r.id).unwrap();
    assert!(
        rows.iter().all(|t| t.outcome == Some(Outcome::Pass)),
        "{rows:#?}"
    );
}

/// A burst of rate limits under concurrency: the adaptive limit on concurrent sessions with the
/// provider halves, the rate-limited trials are retried, and as sessions succeed the limit grows
/// back (the store's events say each change).
#[tokio::test(flavor = "multi_thread")]
async fn rate_limits_halve_the_provider_limit_and_it_recovers() {
    require_docker().await;
    let _serial = serial().await;
    glibc_image::ensure_glibc_image().await;
    // Claude Code gives up at once on a 429 the server marks not to retry, so each of the first
    // two sessions ends with a rate limit.
    let model = ScriptedModel::start(Script {
        fail_first: 2,
        ..solving_script(&CLAUDE)
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let base = model.base_url(&gateway().await);
    let mut child = spawn_harness(
        &CLAUDE,
        &base,
        "aimd",
        dir.path(),
        3,
        &["--concurrency", "2"],
        "[harness]\nprovider_retries = 3\nprovider_backoff_secs = 0\n",
    );
    let (code, stderr) = finish(&mut child, dir.path(), std::time::Duration::from_secs(900));
    assert_eq!(code, 0, "{stderr}");
    let events = run_events(dir.path(), "aimd");
    let answers: Vec<String> = model
        .state
        .recorded()
        .iter()
        .map(|r| r.answer.clone())
        .collect();
    let events = {
        let mut e = events;
        e.push(format!("model answers: {answers:?}"));
        e.push(stderr);
        e
    };
    assert!(
        events
            .iter()
            .any(|e| e.contains("provider limit (anthropic): 2 → 1")),
        "{events:#?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e.contains("provider limit (anthropic): 1 → 2")),
        "{events:#?}"
    );
}

/// A model proxy on this machine's loopback (`http://127.0.0.1:PORT`, listening on 127.0.0.1
/// only, as LiteLLM or a company gateway may): reached from the container through skillscope's
/// relay on a local daemon; refused with a clear message for a remote one.
#[tokio::test(flavor = "multi_thread")]
async fn a_model_proxy_on_localhost_is_reached_from_local_containers_only() {
    require_docker().await;
    let _serial = serial().await;
    glibc_image::ensure_glibc_image().await;
    let model = ScriptedModel::start_loopback(solving_script(&CODEX)).await;
    let base = model.base_url("127.0.0.1");
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_harness(&CODEX, &base, "loopback", dir.path(), 1, &[], "");
    let (code, stderr) = finish(&mut child, dir.path(), std::time::Duration::from_secs(300));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        model.state.recorded().iter().any(|r| r.answer == "final"),
        "the proxy on loopback was not reached"
    );
    // A remote daemon's containers cannot reach this machine's loopback: refused up front.
    let remote = docker_tcp_proxy::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_harness(
        &CODEX,
        &base,
        "loopback-remote",
        dir.path(),
        1,
        &["--docker-host", &remote],
        "",
    );
    let (code, stderr) = finish(&mut child, dir.path(), std::time::Duration::from_secs(60));
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("OPENAI_BASE_URL")
            && stderr.contains("loopback")
            && stderr.contains(&remote),
        "{stderr}"
    );
}
