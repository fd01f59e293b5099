//! Experiment plans (`skillscope experiment <plan.toml>`): the whole two-round evaluation of
//! `evaluation-plan.md` in one file. Every key is optional; relative paths are resolved against
//! the plan file's folder.
//!
//! ```toml
//! name = "opus-skills"            # default: the file name without .toml
//! tasks = "skillsbench/tasks"     # default: the example tasks built into skillscope
//! task = ["3d-scan-calc"]         # only these tasks (default: all)
//! agent = "oracle"
//! model = "claude-opus-4-6"
//! trials = 5
//! concurrency = 4
//! jobs_dir = "jobs"
//! exports_dir = "exports"         # exported skills: <exports_dir>/<name>/LS-A-v1, …
//! reports_dir = "reports"         # the report when done: <reports_dir>/<name>/report.md (default)
//! catalog = "catalog.csv"         # domain/difficulty overrides
//!
//! [run]                           # as in skillscope.toml: docker_hosts, env, mounts, ca_bundle
//! docker_hosts = ["unix:///var/run/docker.sock"]
//!
//! [acontext]                      # as in skillscope.toml
//! base_url = "http://localhost:8029/api/v1"
//! api_key_env = "ACONTEXT_API_KEY"
//! status_mode = "auto"
//!
//! [spaces.a]                      # LS-A: learns from condition A (no skills), starts empty
//! label = "LS-A"
//! keep_default_skills = false
//! [spaces.b]                      # LS-B: learns from condition B, starts with the curated skills
//! label = "LS-B"
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::{AcontextFileSettings, ConfigError, RunFileSettings};

fn default_agent() -> String {
    "oracle".into()
}

fn default_trials() -> u32 {
    5
}

/// One learning space of the plan.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SpacePlan {
    /// Label (unique within the experiment).
    pub label: String,
    /// Keep Acontext's default skills (`daily-logs`, `user-general-facts`) in the space.
    #[serde(default)]
    pub keep_default_skills: bool,
}

/// The two spaces.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SpacesPlan {
    /// LS-A.
    #[serde(default = "SpacesPlan::default_a")]
    pub a: SpacePlan,
    /// LS-B.
    #[serde(default = "SpacesPlan::default_b")]
    pub b: SpacePlan,
}

impl SpacesPlan {
    fn default_a() -> SpacePlan {
        SpacePlan {
            label: "LS-A".into(),
            keep_default_skills: false,
        }
    }
    fn default_b() -> SpacePlan {
        SpacePlan {
            label: "LS-B".into(),
            keep_default_skills: false,
        }
    }
}

impl Default for SpacesPlan {
    fn default() -> Self {
        SpacesPlan {
            a: SpacesPlan::default_a(),
            b: SpacesPlan::default_b(),
        }
    }
}

/// An experiment plan as written.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Experiment name (runs are `<name>-round1` and `<name>-round2`).
    pub name: Option<String>,
    /// Tasks folder.
    pub tasks: Option<PathBuf>,
    /// Task filter.
    #[serde(default)]
    pub task: Vec<String>,
    /// Agent.
    #[serde(default = "default_agent")]
    pub agent: String,
    /// Model.
    pub model: Option<String>,
    /// Trials per task and condition.
    #[serde(default = "default_trials")]
    pub trials: u32,
    /// Trials at once per Docker host.
    pub concurrency: Option<usize>,
    /// Jobs folder.
    pub jobs_dir: Option<PathBuf>,
    /// Exported skills folder.
    pub exports_dir: Option<PathBuf>,
    /// Where the finished experiment's report goes (`<reports_dir>/<name>/report.md` …)
    /// [default: `reports` in the plan's folder].
    pub reports_dir: Option<PathBuf>,
    /// Domain catalog CSV.
    pub catalog: Option<PathBuf>,
    /// Docker hosts, env, mounts, CA bundle.
    #[serde(default)]
    pub run: RunFileSettings,
    /// Acontext connection and pipeline settings.
    #[serde(default)]
    pub acontext: AcontextFileSettings,
    /// The learning spaces.
    #[serde(default)]
    pub spaces: SpacesPlan,
}

impl Plan {
    /// Reads a plan and resolves its relative paths against the plan's folder; the name
    /// defaults to the file stem.
    ///
    /// # Errors
    /// [`ConfigError::File`] naming the file for unreadable or malformed TOML;
    /// [`ConfigError::Value`] for impossible values.
    pub fn load(path: &Path) -> Result<Plan, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::File {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let mut plan: Plan = toml::from_str(&text).map_err(|e| ConfigError::File {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let base = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let base = std::fs::canonicalize(&base).unwrap_or(base);
        let fix = |p: &mut Option<PathBuf>| {
            if let Some(x) = p.as_mut().filter(|x| x.is_relative()) {
                *x = base.join(&*x);
            }
        };
        fix(&mut plan.tasks);
        fix(&mut plan.jobs_dir);
        fix(&mut plan.exports_dir);
        fix(&mut plan.reports_dir);
        if plan.reports_dir.is_none() {
            plan.reports_dir = Some(base.join("reports"));
        }
        fix(&mut plan.catalog);
        fix(&mut plan.run.ca_bundle);
        if plan.name.is_none() {
            plan.name = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        }
        plan.check().map_err(|message| ConfigError::Value {
            setting: format!("plan {}", path.display()),
            message,
        })?;
        Ok(plan)
    }

    /// Checks values a TOML type cannot.
    ///
    /// # Errors
    /// A message naming the key.
    pub fn check(&self) -> Result<(), String> {
        if self.trials == 0 {
            return Err("trials must be at least 1".into());
        }
        let name = self.name();
        if name.is_empty() || crate::bench::condition::sanitize_slug(&name) != name {
            return Err(format!(
                "name {name:?} must be lowercase letters, digits, '.', '_' or '-'"
            ));
        }
        if self.spaces.a.label == self.spaces.b.label || self.spaces.a.label.is_empty() {
            return Err("spaces.a.label and spaces.b.label must differ and not be empty".into());
        }
        if let Some(m) = &self.acontext.status_mode {
            crate::acontext::learn::StatusMode::parse(m)?;
        }
        Ok(())
    }

    /// The experiment name.
    pub fn name(&self) -> String {
        self.name.clone().unwrap_or_else(|| "experiment".into())
    }

    /// The plan as stored with the experiment: everything that decides its results (no secret
    /// values exist in a plan — only the name of the key's variable).
    pub fn public_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_relative_paths() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("my-exp.toml");
        std::fs::write(
            &p,
            "tasks = \"tasks\"\ntrials = 2\n[acontext]\nstatus_mode = \"criteria\"\n",
        )
        .unwrap();
        let plan = Plan::load(&p).unwrap();
        assert_eq!(plan.name(), "my-exp");
        assert_eq!(plan.agent, "oracle");
        assert_eq!(plan.spaces.a.label, "LS-A");
        assert!(plan.tasks.unwrap().is_absolute());
    }

    #[test]
    fn bad_plans_name_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.toml");
        std::fs::write(&p, "trials = 0\n").unwrap();
        assert!(Plan::load(&p).unwrap_err().to_string().contains("trials"));
        std::fs::write(&p, "[acontext]\nstatus_mode = \"maybe\"\n").unwrap();
        assert!(Plan::load(&p).unwrap_err().to_string().contains("maybe"));
        std::fs::write(&p, "trails = 3\n").unwrap();
        let e = Plan::load(&p).unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains("trails"), "{e}");
        std::fs::write(&p, "[spaces.a]\nlabel = \"S\"\n[spaces.b]\nlabel = \"S\"\n").unwrap();
        assert!(Plan::load(&p).is_err());
    }
}
