//! Before the money is spent: `experiment` and `run` with an LLM agent check Acontext, the
//! provider, Docker and the tasks first, in seconds, and start nothing when a check fails (exit
//! 4, one table, one line per failure with its fix); `skillscope preflight PLAN.toml` runs the
//! same checks alone. The Acontext stand-in answers a wrong key with 401, the scripted model
//! servers refuse a wrong key and an unknown model on their models endpoints.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use crate::support::common::{self, fixtures};
use crate::support::fake_acontext::{FakeServer, FakeState};
use crate::support::process::{Skillscope, text};
use crate::support::scripted_model::{Script, ScriptedModel};

const KEY: &str = "sk-ac-preflight";
const MODEL_KEY: &str = "sk-model-right";

/// `skillscope` in `dir` as on a fresh machine ([`Skillscope::bare`]) with `vars`, and how long
/// it took.
async fn skillscope(dir: &Path, args: &[&str], vars: &[(&str, String)]) -> (Output, Duration) {
    let cmd = vars
        .iter()
        .fold(Skillscope::new(args).bare(dir), |c, (k, v)| c.env(k, v));
    let t0 = Instant::now();
    let out = cmd.output_async().await;
    (out, t0.elapsed())
}

/// Acceptance: a plan with a wrong Acontext key fails the preflight in under 10 s, before round
/// 1: exit 4, the failure and its fix named, no database, no trial folder, nothing created on the
/// server. `preflight` says the same alone, and passes with the right key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_acontext_key_fails_the_preflight_in_seconds_and_starts_nothing() {
    common::require_docker().await;
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(FakeState::new(KEY, true), ([127, 0, 0, 1], 0).into()).await;
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/examples.toml"),
        dir.path().join("examples.toml"),
    )
    .unwrap();
    let wrong = [
        ("ACONTEXT_BASE_URL", server.base_url()),
        ("ACONTEXT_API_KEY", "sk-ac-wrong".to_string()),
    ];
    let (out, took) = skillscope(
        dir.path(),
        &[
            "experiment",
            "examples.toml",
            "--headless",
            "--db",
            "exp.db",
        ],
        &wrong,
    )
    .await;
    let t = text(&out);
    assert_eq!(out.status.code(), Some(4), "{t}");
    assert!(took < Duration::from_secs(10), "took {took:?}: {t}");
    for want in [
        "FAIL acontext",
        "the server refused the key in ACONTEXT_API_KEY",
        "→ set ACONTEXT_API_KEY to a project key",
        "nothing was started",
    ] {
        assert!(t.contains(want), "{want:?} in {t}");
    }
    assert!(!t.contains("sk-ac-wrong"), "the key is never shown: {t}");
    assert!(!dir.path().join("exp.db").exists(), "no trial started: {t}");
    assert!(
        !dir.path()
            .join("../jobs")
            .join("examples-round1__no-skills")
            .exists()
    );
    let writes: Vec<String> = server
        .state
        .lock()
        .unwrap()
        .log
        .iter()
        .filter(|e| e.method != "GET")
        .map(|e| format!("{} {}", e.method, e.route))
        .collect();
    assert!(
        writes.is_empty(),
        "nothing created on the server: {writes:?}"
    );

    // The same checks alone; with the right key they pass and say what they cost.
    let (out, _) = skillscope(dir.path(), &["preflight", "examples.toml"], &wrong).await;
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let right = [
        ("ACONTEXT_BASE_URL", server.base_url()),
        ("ACONTEXT_API_KEY", KEY.to_string()),
    ];
    let (out, _) = skillscope(
        dir.path(),
        &["preflight", "examples.toml", "--json"],
        &right,
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let checks = v["checks"].as_array().unwrap();
    let acontext: Vec<&serde_json::Value> =
        checks.iter().filter(|c| c["area"] == "acontext").collect();
    assert!(acontext.len() >= 4, "{v:#}");
    assert!(acontext.iter().all(|c| c["verdict"] == "ok"), "{v:#}");
    assert!(
        checks
            .iter()
            .any(|c| c["area"] == "tasks" && c["detail"].as_str().unwrap().contains("5 task(s)")),
        "{v:#}"
    );
    assert!(
        checks
            .iter()
            .any(|c| c["area"] == "docker" && c["verdict"] == "ok"),
        "{v:#}"
    );
    // The local daemon runs containers on this kernel: whether an agent could hold PID 1 with
    // ptrace is said from its Yama setting (a warning does not stop the run).
    let yama = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope").ok();
    let refused = yama
        .as_deref()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .is_some_and(|n| n >= 1);
    let ptrace: Vec<&serde_json::Value> = checks
        .iter()
        .filter(|c| c["area"] == "docker" && c["what"] == "ptrace of an environment's PID 1")
        .collect();
    assert_eq!(ptrace.len(), 1, "{v:#}");
    assert_eq!(
        ptrace[0]["verdict"],
        if refused { "ok" } else { "warn" },
        "{v:#}"
    );

    // A server that is down: one failure naming where it looked, still in seconds.
    let down = [
        ("ACONTEXT_BASE_URL", "http://127.0.0.1:9/api/v1".to_string()),
        ("ACONTEXT_API_KEY", KEY.to_string()),
    ];
    let (out, took) = skillscope(dir.path(), &["preflight", "examples.toml"], &down).await;
    assert_eq!(out.status.code(), Some(4));
    assert!(took < Duration::from_secs(10));
    assert!(text(&out).contains("127.0.0.1:9"), "{}", text(&out));
}

/// Each harness's provider key and model are checked by its free models endpoint: a refused key
/// stops `run` before any trial (exit 4, only the models endpoint was called — no tokens spent);
/// an unknown model fails `preflight`; the right key and model pass, saying the check was free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_keys_and_models_are_checked_for_free_before_a_run() {
    common::require_docker().await;
    let server = FakeServer::start(FakeState::new(KEY, true), ([127, 0, 0, 1], 0).into()).await;
    for (agent, model, key_var, base_var, path) in [
        (
            "claude-code",
            "claude-opus-4-6",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "",
        ),
        (
            "codex",
            "gpt-5.2",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "/v1",
        ),
        (
            "gemini-cli",
            "gemini-3-flash-preview",
            "GEMINI_API_KEY",
            "GOOGLE_GEMINI_BASE_URL",
            "",
        ),
    ] {
        let provider = ScriptedModel::start_loopback(Script {
            accepts_key: Some(MODEL_KEY.into()),
            models: vec![model.into()],
            ..Default::default()
        })
        .await;
        let base = format!("{}{path}", provider.base_url("127.0.0.1"));
        let dir = tempfile::tempdir().unwrap();
        let tasks = fixtures();
        let vars = |key: &str| {
            vec![
                (key_var, key.to_string()),
                (base_var, base.clone()),
                ("ACONTEXT_BASE_URL", server.base_url()),
                ("ACONTEXT_API_KEY", KEY.to_string()),
            ]
        };
        let run_args = [
            "run",
            "--headless",
            "--agent",
            agent,
            "--model",
            model,
            "--tasks",
            tasks.to_str().unwrap(),
            "--task",
            "passes",
            "--trials",
            "1",
            "--db",
            "s.db",
        ];
        let (out, took) = skillscope(dir.path(), &run_args, &vars("sk-model-wrong")).await;
        let t = text(&out);
        assert_eq!(out.status.code(), Some(4), "{agent}: {t}");
        assert!(took < Duration::from_secs(10), "{agent}: {took:?}");
        assert!(
            t.contains(&format!("refused the key in {key_var}")),
            "{agent}: {t}"
        );
        assert!(
            !t.contains("sk-model-wrong"),
            "{agent}: the key is shown: {t}"
        );
        assert!(
            !dir.path().join("s.db").exists(),
            "{agent}: a trial started"
        );
        let calls: Vec<String> = provider
            .state
            .recorded()
            .iter()
            .map(|r| r.line.clone())
            .collect();
        assert!(
            !calls.is_empty()
                && calls
                    .iter()
                    .all(|l| l.starts_with("GET ") && l.contains("models")),
            "{agent}: only the free models endpoint is called: {calls:?}"
        );

        // The plan's model unknown to the provider, then the right key and model.
        let plan = |m: &str| {
            format!(
                "name = \"pf\"\nagent = \"{agent}\"\nmodel = \"{m}\"\ntrials = 1\ntasks = \"{}\"\ntask = [\"passes\"]\n",
                tasks.display()
            )
        };
        std::fs::write(dir.path().join("unknown.toml"), plan("no-such-model-9")).unwrap();
        let (out, _) =
            skillscope(dir.path(), &["preflight", "unknown.toml"], &vars(MODEL_KEY)).await;
        let t = text(&out);
        assert_eq!(out.status.code(), Some(4), "{agent}: {t}");
        assert!(
            t.contains("no-such-model-9") && t.contains("FAIL provider"),
            "{agent}: {t}"
        );
        std::fs::write(dir.path().join("right.toml"), plan(model)).unwrap();
        let (out, _) = skillscope(
            dir.path(),
            &["preflight", "right.toml", "--json"],
            &vars(MODEL_KEY),
        )
        .await;
        assert_eq!(out.status.code(), Some(0), "{agent}: {}", text(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let p = v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["area"] == "provider")
            .cloned()
            .unwrap();
        assert_eq!(p["verdict"], "ok", "{agent}: {p}");
        assert!(
            p["cost"].as_str().unwrap().starts_with("free"),
            "{agent}: {p}"
        );
    }
}
