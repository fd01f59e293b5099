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

mod common;
#[path = "support/container_gateway.rs"]
mod container_gateway;
#[path = "support/docker_tcp_proxy.rs"]
mod docker_tcp_proxy;
#[path = "support/glibc_image.rs"]
mod glibc_image;
#[path = "support/harness_env.rs"]
mod harness_env;
#[path = "support/harness_run.rs"]
mod harness_run;
#[path = "support/private_dockerd.rs"]
mod private_dockerd;
#[path = "support/scripted_model/mod.rs"]
mod scripted_model;

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
}

const CLAUDE: Harness = Harness {
    agent: "claude-code",
    model: "claude-opus-4-6",
    key_var: "ANTHROPIC_API_KEY",
    base_var: "ANTHROPIC_BASE_URL",
    base_path: "",
    skills_dir: "/root/.claude/skills",
};

const CODEX: Harness = Harness {
    agent: "codex",
    model: "gpt-5.2-codex",
    key_var: "OPENAI_API_KEY",
    base_var: "OPENAI_BASE_URL",
    base_path: "/v1",
    skills_dir: "/root/.codex/skills",
};

const GEMINI: Harness = Harness {
    agent: "gemini-cli",
    model: "gemini-3-flash-preview",
    key_var: "GEMINI_API_KEY",
    base_var: "GOOGLE_GEMINI_BASE_URL",
    base_path: "",
    skills_dir: "/root/.gemini/skills",
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
        usage: Usage {
            input: 1000,
            cached: 200,
            output: 50,
        },
        phases: Vec::new(),
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
    require_docker().await;
    let _serial = serial().await;
    glibc_image::ensure_glibc_image().await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("skillscope.toml");
    std::fs::write(&cfg, config).unwrap();
    let base = format!("{}{}", model.base_url(&gateway().await), h.base_path);
    let mut cmd = harness_run::harness_run(h.agent, h.model, run, dir.path());
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
    let model = ScriptedModel::start(Script {
        fail_with: Some(429),
        ..solving_script(h)
    })
    .await;
    let o = run_harness(
        h,
        &model,
        "[harness]\nprovider_retries = 1\nprovider_backoff_secs = 0\n",
        &format!("{}-429", h.agent),
    )
    .await;
    assert_eq!(o.exit, 0, "{}", o.stderr);
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
    let c = skillscope::runner::TrialContainer::start(
        &docker,
        &skillscope::runner::ContainerSpec {
            network_none: false,
            ..skillscope::runner::ContainerSpec::helper(
                skillscope::runner::base_image::BUSYBOX_IMAGE,
                "reach-probe",
            )
        },
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
