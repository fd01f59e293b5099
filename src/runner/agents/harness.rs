//! LLM agent harnesses in the trial container: Claude Code, Codex CLI and Gemini CLI behind the
//! [`Agent`] trait. Each CLI comes from its pinned kit ([`kit`]), mounted read-only at
//! `/opt/skillscope/<harness>`; runs headless with permissions bypassed as Harbor runs it
//! (`agents/installed/{claude_code,codex,gemini_cli}.py`) under `[agent] timeout_sec`; reads
//! the skills at its own place in the image (`/root/.claude/skills`, `/root/.codex/skills`,
//! `/root/.gemini/skills`, `/root/.agents/skills` — put there for every skill condition by the image
//! builder, nowhere for no-skills); and leaves its native log in `agent/`, which is read into the
//! ATIF trajectory, token counts, cost and a provider-failure verdict ([`crate::agent_logs`]).
//!
//! Keys and base URLs come from the operator's environment and go only into the agent's exec
//! environment: never the container's configuration, the database or logs; in trial files every
//! form of a key is redacted ([`crate::runner::secrets`], through [`Agent::secrets`]).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

pub use super::kit::{Harness, Kit};
use super::{Activity, Agent, AgentContext, AgentRun, builtins, kit};
use crate::agent_logs::pricing::PriceTable;
use crate::agent_logs::provider::ProviderFailure;
use crate::agent_logs::{NativeLog, TrajectoryOptions, claude_code, codex, gemini_cli};
use crate::config::HarnessSettings;
use crate::harbor::atif::Trajectory;
use crate::runner::backend::Mount;
use crate::runner::sandbox::{ExecEnd, ExecRequest};
use crate::runner::{Host, RunnerError};

/// Environment variables each harness reads from the operator's environment: API keys first,
/// then base URLs.
pub fn provider_vars(h: Harness) -> &'static [&'static str] {
    match h {
        Harness::ClaudeCode => &[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_BASE_URL",
        ],
        Harness::Codex => &["OPENAI_API_KEY", "OPENAI_BASE_URL"],
        Harness::GeminiCli => &["GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"],
    }
}

/// The variables among [`provider_vars`] that authenticate (at least one must be set), the
/// preferred first.
pub fn key_vars(h: Harness) -> &'static [&'static str] {
    match h {
        Harness::ClaudeCode => &["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"],
        Harness::Codex => &["OPENAI_API_KEY"],
        Harness::GeminiCli => &["GEMINI_API_KEY"],
    }
}

/// The operator's provider credentials for one harness, held in memory only. `Debug` prints
/// the variable names, never the values.
#[derive(Clone, Default)]
pub struct ProviderAccess {
    vars: Vec<(String, String)>,
}

impl std::fmt::Debug for ProviderAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.vars.iter().map(|(k, _)| k.as_str()).collect();
        write!(f, "ProviderAccess({names:?})")
    }
}

impl ProviderAccess {
    /// Reads [`provider_vars`] of `h` from this process's environment.
    ///
    /// # Errors
    /// [`RunnerError::Task`] naming the variables when no key is set.
    pub fn from_env(h: Harness) -> Result<ProviderAccess, RunnerError> {
        let vars: Vec<(String, String)> = provider_vars(h)
            .iter()
            .filter_map(|k| {
                std::env::var(k)
                    .ok()
                    .filter(|v| !v.is_empty())
                    .map(|v| (k.to_string(), v))
            })
            .collect();
        let access = ProviderAccess { vars };
        if !key_vars(h).iter().any(|k| access.get(k).is_some()) {
            return Err(RunnerError::Task(format!(
                "agent {} needs an API key: set {} in the environment",
                h.name(),
                key_vars(h).join(" or ")
            )));
        }
        Ok(access)
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One LLM harness with one model.
pub struct CliAgent {
    harness: Harness,
    model: Option<String>,
    version: String,
    settings: HarnessSettings,
    access: ProviderAccess,
    kit: tokio::sync::OnceCell<Kit>,
    /// Per host: the base-URL variables rewritten to reach its relays to model proxies on this
    /// machine's loopback (see [`crate::runner::proxy`]).
    rewrites: std::sync::Mutex<HashMap<String, Vec<(String, String)>>>,
    /// Gemini CLI: the names of the built-in skills in its kit, read once it is fetched.
    builtin_names: std::sync::OnceLock<Vec<String>>,
}

impl CliAgent {
    /// A harness agent. `model` is passed to the CLI (`--model`); Codex and Gemini CLI need one.
    ///
    /// # Errors
    /// [`RunnerError::Task`] when the harness needs a model and none is given.
    pub fn new(
        harness: Harness,
        model: Option<&str>,
        settings: &HarnessSettings,
        access: ProviderAccess,
    ) -> Result<CliAgent, RunnerError> {
        if model.is_none() && harness != Harness::ClaudeCode {
            return Err(RunnerError::Task(format!(
                "agent {} needs --model",
                harness.name()
            )));
        }
        Ok(CliAgent {
            harness,
            model: model.map(str::to_string),
            version: harness.version(settings).to_string(),
            settings: settings.clone(),
            access,
            kit: tokio::sync::OnceCell::new(),
            rewrites: std::sync::Mutex::new(HashMap::new()),
            builtin_names: std::sync::OnceLock::new(),
        })
    }

    /// The base-URL variables that name this machine's loopback (a model proxy on `localhost`),
    /// with the proxy's address.
    fn loopback_urls(&self) -> Vec<(&str, &str, std::net::SocketAddr)> {
        self.access
            .vars
            .iter()
            .filter(|(k, _)| k.ends_with("_BASE_URL"))
            .filter_map(|(k, v)| {
                crate::runner::proxy::loopback_target(v).map(|t| (k.as_str(), v.as_str(), t))
            })
            .collect()
    }

    /// The native log's file name in `agent/`.
    pub fn log_name(&self) -> &'static str {
        match self.harness {
            Harness::ClaudeCode => "claude-code.txt",
            Harness::Codex => "codex.txt",
            Harness::GeminiCli => "gemini-cli.txt",
        }
    }

    /// The exec environment on host `host`: the provider variables (base URLs on this machine's
    /// loopback rewritten to their relays) plus the harness's fixed settings, its built-in skills
    /// switched off ([`builtins`]; Gemini CLI spares those `skills` name); `logs` is the container
    /// folder for the native logs the script copies out (`SKILLSCOPE_LOGS`).
    fn exec_env(
        &self,
        instruction: &str,
        host: &str,
        logs: &str,
        skills: &[String],
    ) -> Vec<String> {
        let rewrites = self
            .rewrites
            .lock()
            .expect("lock")
            .get(host)
            .cloned()
            .unwrap_or_default();
        let value = |k: &str, v: &str| -> String {
            rewrites
                .iter()
                .find(|(name, _)| name == k)
                .map(|(_, url)| url.clone())
                .unwrap_or_else(|| v.to_string())
        };
        let mut env: Vec<String> = self
            .access
            .vars
            .iter()
            .map(|(k, v)| format!("{k}={}", value(k, v)))
            .collect();
        env.push(format!("SKILLSCOPE_INSTRUCTION={instruction}"));
        env.push(format!("SKILLSCOPE_LOGS={logs}"));
        if let Some(m) = &self.model {
            env.push(format!("SKILLSCOPE_MODEL={m}"));
        }
        match self.harness {
            Harness::ClaudeCode => {
                // As Harbor: bypassPermissions is allowed as root only in a sandbox; no
                // telemetry, update checks or other side traffic.
                env.push("IS_SANDBOX=1".into());
                env.push("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1".into());
                env.push("DISABLE_AUTOUPDATER=1".into());
                env.push(builtins::CLAUDE_CODE_SWITCH.into());
            }
            Harness::Codex => {
                let base = self
                    .access
                    .get("OPENAI_BASE_URL")
                    .map(|v| value("OPENAI_BASE_URL", v))
                    .unwrap_or_else(|| "https://api.openai.com/v1".to_string());
                env.push(format!("SKILLSCOPE_OPENAI_BASE={base}"));
            }
            Harness::GeminiCli => {
                // As Harbor: --yolo needs a trusted workspace; no self-relaunch.
                env.push("GEMINI_CLI_TRUST_WORKSPACE=true".into());
                env.push("GEMINI_CLI_NO_RELAUNCH=true".into());
                let names = self.builtin_names.get().map(Vec::as_slice).unwrap_or(&[]);
                env.push(format!(
                    "SKILLSCOPE_GEMINI_SETTINGS={}",
                    builtins::gemini_settings(names, skills)
                ));
            }
        }
        env
    }

    /// The shell script run in the container: checks the kit can run there, runs the CLI with
    /// the instruction from `$SKILLSCOPE_INSTRUCTION`, and keeps the exit code.
    fn script(&self) -> String {
        let kit = self.harness.mount_path();
        let name = self.harness.name();
        let glibc = if self.harness.needs_glibc() {
            format!(
                "if [ ! -e /lib64/ld-linux-x86-64.so.2 ]; then echo \"skillscope: {name} needs glibc (/lib64/ld-linux-x86-64.so.2), which this image lacks\" >&2; exit 127; fi\n"
            )
        } else {
            String::new()
        };
        let model = if self.model.is_some() {
            " --model \"$SKILLSCOPE_MODEL\""
        } else {
            ""
        };
        let run = match self.harness {
            Harness::ClaudeCode => format!(
                "claude --verbose --output-format=stream-json --permission-mode=bypassPermissions{model} -p \"$SKILLSCOPE_INSTRUCTION\" </dev/null\nrc=$?\n"
            ),
            // A provider of our own: the built-in one tries a WebSocket first and reads its key
            // from CODEX_API_KEY only. The key stays out of the agent's commands
            // (shell_environment_policy) and out of every file (env_key, no auth.json).
            Harness::Codex => format!(
                "codex exec --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check --json{model} \\\n\
                 --disable plugins -c analytics.enabled=false -c {switch} -c model_provider=skillscope \\\n\
                 -c \"model_providers.skillscope={{name=\\\"skillscope\\\", base_url=\\\"$SKILLSCOPE_OPENAI_BASE\\\", env_key=\\\"OPENAI_API_KEY\\\", wire_api=\\\"responses\\\", supports_websockets=false, request_max_retries=2, stream_max_retries=2}}\" \\\n\
                 -c 'shell_environment_policy.exclude=[\"OPENAI_API_KEY\",\"CODEX_API_KEY\",\"SKILLSCOPE_OPENAI_BASE\"]' \\\n\
                 -- \"$SKILLSCOPE_INSTRUCTION\" </dev/null\nrc=$?\n\
                 f=$(ls -t \"${{CODEX_HOME:-$HOME/.codex}}\"/sessions/*/*/*/rollout-*.jsonl 2>/dev/null | head -n 1)\n\
                 if [ -n \"$f\" ]; then cp \"$f\" \"$SKILLSCOPE_LOGS\"/codex.rollout.jsonl; fi\n",
                switch = builtins::CODEX_SWITCH
            ),
            // Settings as Harbor writes them, plus: the key hidden from the agent's commands, no
            // usage statistics, telemetry or update checks, the built-in skills off
            // (`SKILLSCOPE_GEMINI_SETTINGS`, [`builtins::gemini_settings`]).
            Harness::GeminiCli => format!(
                "mkdir -p \"$HOME/.gemini\"\n\
                 printf '%s' \"$SKILLSCOPE_GEMINI_SETTINGS\" > \"$HOME/.gemini/settings.json\"\n\
                 unset SKILLSCOPE_GEMINI_SETTINGS\n\
                 gemini --yolo{model_eq} --output-format=stream-json --prompt=\"$SKILLSCOPE_INSTRUCTION\" </dev/null\nrc=$?\n\
                 f=$(ls -t \"$HOME\"/.gemini/tmp/*/chats/session-*.json* 2>/dev/null | head -n 1)\n\
                 if [ -n \"$f\" ]; then cp \"$f\" \"$SKILLSCOPE_LOGS\"/gemini-cli.session.jsonl; fi\n",
                model_eq = if self.model.is_some() {
                    " --model=\"$SKILLSCOPE_MODEL\""
                } else {
                    ""
                }
            ),
        };
        format!(
            "{glibc}if [ ! -x {kit}/{exe} ]; then echo \"skillscope: {name} is not mounted at {kit}\" >&2; exit 127; fi\n\
             mkdir -p \"$SKILLSCOPE_LOGS\"\nexport PATH=\"{kit}/bin:{kit}/path:$PATH\"\n{run}exit $rc\n",
            exe = self.harness.executable()
        )
    }

    /// Reads the native log from `agent/` (what exists of it).
    fn read_log(&self, agent_dir: &Path) -> (Vec<u8>, String) {
        let log = crate::fs::read_tail(&agent_dir.join(self.log_name()), 256 << 20)
            .map(|(b, _)| b)
            .unwrap_or_default();
        let stderr = crate::fs::read_tail(&agent_dir.join(self.stderr_name()), 64 << 10)
            .map(|(b, _)| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        (log, stderr)
    }

    fn stderr_name(&self) -> String {
        format!("{}.stderr.txt", self.harness.name())
    }
}

/// When the agent ran out of time while its CLI was still retrying a failing model request (the
/// last 4 KiB of stderr name a rate limit, overload or server error — Gemini CLI retries a 429
/// for minutes), the provider, not the agent, used the time: a transient provider failure.
fn stalled_on_provider(stderr: &str) -> Option<ProviderFailure> {
    let hit =
        crate::agent_logs::provider::classify_error_text(crate::sanitize::tail(stderr, 4096))?;
    let evidence = crate::agent_logs::provider::Evidence::Stderr;
    hit.0
        .is_transient()
        .then(|| ProviderFailure::seen(hit, evidence))
}

#[async_trait]
impl Agent for CliAgent {
    fn name(&self) -> &str {
        self.harness.name()
    }
    fn version(&self) -> &str {
        &self.version
    }
    fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }
    fn provider(&self) -> Option<&str> {
        Some(match self.harness {
            Harness::ClaudeCode => "anthropic",
            Harness::Codex => "openai",
            Harness::GeminiCli => "google",
        })
    }
    fn builtin_skills(&self) -> Option<crate::skillsbench::exposure::Builtins> {
        let names = self.builtin_names.get().map(Vec::as_slice).unwrap_or(&[]);
        Some(builtins::builtins(self.harness, names))
    }
    fn reports_skill_use(&self) -> bool {
        true
    }
    fn secrets(&self) -> Vec<(String, String)> {
        self.access
            .vars
            .iter()
            .filter(|(k, _)| !k.ends_with("_BASE_URL"))
            .cloned()
            .collect()
    }
    fn unpinned(&self) -> Vec<&'static str> {
        // None of the three CLIs has a flag or setting for the sampling temperature or a seed:
        // runs are not reproducible "with temperature 0" through them.
        vec!["temperature", "seed"]
    }

    fn check_host(&self, endpoint: &str, local: bool) -> Result<(), RunnerError> {
        match self.loopback_urls().first() {
            Some((var, url, _)) if !local => Err(RunnerError::Task(format!(
                "{var} = {url} names this machine's loopback, which the containers of the remote \
                 Docker host {endpoint} cannot reach; point it at an address that host can reach \
                 (a model proxy on localhost works with a local daemon only)"
            ))),
            _ => Ok(()),
        }
    }

    fn extra_hosts(&self) -> Vec<String> {
        if self.loopback_urls().is_empty() {
            Vec::new()
        } else {
            vec![crate::runner::proxy::HOST_GATEWAY_ENTRY.to_string()]
        }
    }

    async fn prepare(&self, host: &dyn Host) -> Result<Vec<Mount>, RunnerError> {
        let loopback: Vec<(String, String, std::net::SocketAddr)> = self
            .loopback_urls()
            .into_iter()
            .map(|(k, v, t)| (k.to_string(), v.to_string(), t))
            .collect();
        if !loopback.is_empty() {
            self.check_host(host.name(), host.local())?;
            let mut rewritten = Vec::new();
            for (var, url, target) in loopback {
                let (alias, relay) = host.relay(target).await?;
                rewritten.push((
                    var,
                    crate::runner::proxy::rewrite_host(&url, &alias, relay.port()),
                ));
            }
            self.rewrites
                .lock()
                .expect("lock")
                .insert(host.name().to_string(), rewritten);
        }
        let kit = self
            .kit
            .get_or_try_init(|| kit::ensure_kit(self.harness, &self.settings))
            .await?;
        let _ = self
            .builtin_names
            .get_or_init(|| builtins::gemini_builtin_names(kit));
        // A local host mounts the kit folder; a remote one gets a copy made once.
        Ok(vec![
            host.kit_mount(&kit.dir, &kit.id(), &self.harness.mount_path())
                .await?,
        ])
    }

    async fn run(&self, ctx: &AgentContext<'_>) -> Result<AgentRun, RunnerError> {
        let out = ctx.agent_dir.join(self.log_name());
        let err = ctx.agent_dir.join(self.stderr_name());
        let req = ExecRequest {
            cmd: vec!["sh".into(), "-c".into(), self.script()],
            env: self.exec_env(ctx.instruction, ctx.host.name(), ctx.logs, ctx.skills),
            user: None,
            timeout: Some(ctx.timeout),
            cancel: ctx.cancel,
            stdout: Some(&out),
            stderr: Some(&err),
            prelude: None,
        };
        let r = ctx.container.exec(req).await?;
        // The native logs the script copied (secrets redacted on the way).
        ctx.container
            .download_dir(
                ctx.logs,
                ctx.agent_dir,
                crate::runner::sandbox::MAX_DOWNLOAD_BYTES,
            )
            .await?;
        let (log, stderr) = self.read_log(ctx.agent_dir);
        // An empty log is still read: the readers then look at stderr alone.
        let parsed = self.parse_native(ctx.agent_dir, &log);
        let provider_failure = match r.end {
            ExecEnd::Exited => parsed.provider_failure(&stderr, r.exit_code),
            ExecEnd::TimedOut => stalled_on_provider(&stderr),
            ExecEnd::Cancelled => None,
        };
        let native = (!log.is_empty()).then_some(parsed);
        Ok(AgentRun {
            end: r.end,
            exit_code: r.exit_code,
            provider_failure,
            native,
        })
    }

    fn activity(&self, agent_dir: &Path, instruction: &str, started: &str) -> Option<Activity> {
        let (log, _) = self.read_log(agent_dir);
        if log.is_empty() {
            return None;
        }
        let native = self.parse_native(agent_dir, &log);
        Some(Activity::of(&self.build_trajectory(
            native.as_ref(),
            instruction,
            started,
        )))
    }

    fn trajectory(
        &self,
        ctx: &AgentContext<'_>,
        run: &AgentRun,
        started: &str,
        _finished: &str,
    ) -> Option<Trajectory> {
        Some(self.build_trajectory(run.native.as_deref()?, ctx.instruction, started))
    }
}

impl CliAgent {
    /// The ATIF trajectory of a parsed native log, with the model filled in and the cost priced
    /// from the dated table when the harness reports none (Codex and Gemini CLI never do).
    fn build_trajectory(
        &self,
        native: &dyn NativeLog,
        instruction: &str,
        started: &str,
    ) -> Trajectory {
        let opts = TrajectoryOptions {
            instruction: Some(instruction),
            started_at: Some(started),
            agent_version: Some(&self.version),
        };
        let mut t = native.to_trajectory(&opts);
        if t.agent.model_name.is_none() {
            t.agent.model_name = native.model().or(self.model.as_deref()).map(str::to_string);
        }
        if let Some(f) = t.final_metrics.as_mut()
            && f.total_cost_usd.is_none()
        {
            let date = chrono::DateTime::parse_from_rfc3339(started)
                .ok()
                .map(|d| d.date_naive());
            f.total_cost_usd =
                native.priced_cost_usd(PriceTable::builtin(), date, self.model.as_deref());
        }
        t
    }
}

impl CliAgent {
    /// Reads the harness's native log: `log` is what the CLI printed (Claude Code's stream-json,
    /// Codex's `--json` events, Gemini CLI's stream-json); Codex's rollout
    /// (`agent/codex.rollout.jsonl`) and Gemini CLI's session file
    /// (`agent/gemini-cli.session.jsonl`) are read beside it, their last 256 MiB at most.
    fn parse_native(&self, agent_dir: &Path, log: &[u8]) -> Arc<dyn NativeLog> {
        let beside = |name: &str| {
            crate::fs::read_tail(&agent_dir.join(name), 256 << 20)
                .map(|(b, _)| b)
                .unwrap_or_default()
        };
        match self.harness {
            Harness::ClaudeCode => Arc::new(claude_code::ClaudeCodeRun::parse(log)),
            Harness::Codex => {
                Arc::new(codex::CodexRun::parse(&beside("codex.rollout.jsonl")).with_events(log))
            }
            Harness::GeminiCli => Arc::new(
                gemini_cli::GeminiCliRun::parse(&beside("gemini-cli.session.jsonl"))
                    .with_output(log),
            ),
        }
    }
}

/// The harness agent named `name` (`claude-code`, `codex`, `gemini-cli`) with the operator's
/// credentials, or `None` for a name that is not a harness.
///
/// # Errors
/// As [`ProviderAccess::from_env`] and [`CliAgent::new`].
pub fn harness_agent(
    name: &str,
    model: Option<&str>,
    settings: &HarnessSettings,
) -> Option<Result<Arc<dyn Agent>, RunnerError>> {
    let h = Harness::from_name(name)?;
    Some(
        ProviderAccess::from_env(h)
            .and_then(|a| CliAgent::new(h, model, settings, a))
            .map(|a| Arc::new(a) as Arc<dyn Agent>),
    )
}
