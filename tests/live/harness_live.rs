//! Live smoke test: each harness against its real provider, on the harness fixture task. Every test
//! here is `#[ignore]`d (it spends money and needs a key): run them with
//! `cargo test --test live -- --ignored` and the operator's key in the environment
//! (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `GEMINI_API_KEY`); without the key a test fails,
//! saying which variable is missing. Models can be overridden with
//! `SKILLSCOPE_LIVE_<HARNESS>_MODEL`.

use crate::support::{common, glibc_image, harness_run};
use std::io::Write;

use skillscope::store::{Outcome, Store, queries};

fn say(msg: &str) {
    let _ = writeln!(std::io::stderr(), "harness_live: {msg}");
}

async fn live(agent: &str, key_var: &str, model_var: &str, default_model: &str) {
    assert!(
        std::env::var(key_var).is_ok_and(|v| !v.is_empty()),
        "{agent}: {key_var} is not set — a live test needs the provider's real key"
    );
    common::require_docker().await;
    glibc_image::ensure_glibc_image().await;
    let model = std::env::var(model_var).unwrap_or_else(|_| default_model.to_string());
    let dir = tempfile::tempdir().unwrap();
    let out = harness_run::harness_run(agent, &model, "live", dir.path())
        .output()
        .expect("run skillscope");
    let c = Store::open(&dir.path().join("s.db"))
        .unwrap()
        .connect()
        .unwrap();
    let run = queries::find_run(&c, "live").unwrap().expect("the run");
    let t = queries::current_trials(&c, run.id).unwrap().remove(0);
    say(&format!(
        "{agent} {model}: {:?}, {:?} input / {:?} output tokens, ${:.4}",
        t.outcome,
        t.n_input_tokens,
        t.n_output_tokens,
        t.cost_usd.unwrap_or(0.0)
    ));
    assert_eq!(
        t.outcome,
        Some(Outcome::Pass),
        "{:?}\n{}",
        t.error,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(t.n_input_tokens.unwrap_or(0) > 0 && t.cost_usd.unwrap_or(0.0) > 0.0);
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "calls the real provider: needs ANTHROPIC_API_KEY; run with --ignored"]
async fn claude_code_live() {
    live(
        "claude-code",
        "ANTHROPIC_API_KEY",
        "SKILLSCOPE_LIVE_CLAUDE_CODE_MODEL",
        "claude-opus-4-6",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "calls the real provider: needs OPENAI_API_KEY; run with --ignored"]
async fn codex_live() {
    live(
        "codex",
        "OPENAI_API_KEY",
        "SKILLSCOPE_LIVE_CODEX_MODEL",
        "gpt-5.2-codex",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "calls the real provider: needs GEMINI_API_KEY; run with --ignored"]
async fn gemini_cli_live() {
    live(
        "gemini-cli",
        "GEMINI_API_KEY",
        "SKILLSCOPE_LIVE_GEMINI_CLI_MODEL",
        "gemini-3-flash-preview",
    )
    .await;
}
