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
//! [backend]                       # as in skillscope.toml: kind = "kubernetes", namespace, …
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
//!
//! [self_generated]                # optional: round 1 adds condition C (self-generated skills)
//! two_phase = false               # true: self-generated:two-phase
//! prompt = "c6-prompt.md"         # optional: replaces skillscope's generate-first prompt
//! skill_creator = "skill-creator" # optional, two-phase only: a skill-writing skill
//!
//! [split]                         # optional: held-out transfer
//! method = "stratified"           # by domain and difficulty
//! test_fraction = 0.3
//! seed = 1
//! round2 = "test"                 # round 2 runs the test tasks ("all": train tasks too)
//!
//! round2_skills = "all"           # or "domain", "task" (top level, before any table)
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::selection::Round2Skills;
use super::split::SplitPlan;
use crate::config::{AcontextFileSettings, ConfigError, RunFileSettings};
use crate::skillsbench::Condition;

fn default_agent() -> String {
    "oracle".into()
}

/// The most trials per task and condition a plan may ask for: far beyond any evaluation (the
/// paper ran 5, its self-generated condition 3), well below a typo's 4294967295.
pub const MAX_TRIALS: u32 = 1_000;

/// Trials per task above which `plan` warns that the design is unusually large.
pub const MANY_TRIALS: u32 = 20;

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

/// The optional condition C: self-generated skills in round 1 (see [`crate::skillsbench::selfgen`]).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct SelfGeneratedPlan {
    /// `self-generated:two-phase` instead of `self-generated`.
    #[serde(default)]
    pub two_phase: bool,
    /// A prompt file replacing skillscope's own (e.g. the paper's Appendix C.6 text).
    pub prompt: Option<PathBuf>,
    /// A skill-writing skill for the first session (two-phase only).
    pub skill_creator: Option<PathBuf>,
}

/// The plan's `[sequential]` table: the group-sequential design the experiment's rounds apply
/// (docs/scoring.md, "Sequential designs"; `experiment --stages N` and `--no-early-stop` override
/// it).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct SequentialTable {
    /// Stages (looks) per comparison; set (here or by `experiment --stages`), the rounds apply
    /// a group-sequential design; unset, the fixed design.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<u32>,
    /// `false`: the fixed design, every planned trial runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_stop: Option<bool>,
}

impl SequentialTable {
    /// Stages when nothing says otherwise.
    pub const DEFAULT_STAGES: u32 = 3;

    /// Stages K over `trials` per task and condition: as written, else 3 (at most `trials`; what
    /// `plan` prints by default).
    pub fn stages(&self, trials: u32) -> u32 {
        self.stages
            .unwrap_or(Self::DEFAULT_STAGES.min(trials.max(1)))
    }

    /// Whether conditions stop early (on unless `early_stop = false`).
    pub fn early_stop(&self) -> bool {
        self.early_stop.unwrap_or(true)
    }

    /// The design the experiment fixes over `trials` per task and condition
    /// ([`crate::analysis::sequential::design::spec`], the one `plan`, the engine and `replay`
    /// use); `None` without `stages` (the fixed design).
    ///
    /// # Errors
    /// A design that cannot be made (more stages than trials).
    pub fn spec(
        &self,
        trials: u32,
    ) -> Option<
        Result<
            crate::domain::sequential::DesignSpec,
            crate::analysis::sequential::design::SpecError,
        >,
    > {
        use crate::analysis::sequential::design::{Choices, spec};
        self.stages
            .map(|k| spec(trials, k as usize, &Choices::default()))
    }
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
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
    /// Where the rounds' trials run (as `[backend]` of skillscope.toml).
    #[serde(default, skip_serializing_if = "is_default")]
    pub backend: crate::config::BackendFileSettings,
    /// The learning spaces.
    #[serde(default)]
    pub spaces: SpacesPlan,
    /// Condition C (self-generated skills) in round 1, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_generated: Option<SelfGeneratedPlan>,
    /// Held-out transfer: train/test split of the tasks, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<SplitPlan>,
    /// Which skills of an export each task gets in round 2.
    #[serde(default, skip_serializing_if = "is_default")]
    pub round2_skills: Round2Skills,
    /// The group-sequential design of the rounds (early stopping).
    #[serde(default, skip_serializing_if = "is_default")]
    pub sequential: SequentialTable,
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
        let base = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        Plan::parse(&text, path, &base)
    }

    /// A plan from its text: `path` names it in errors and gives the default name; relative
    /// paths are resolved against `base`.
    ///
    /// # Errors
    /// As [`Plan::load`].
    pub fn parse(text: &str, path: &Path, base: &Path) -> Result<Plan, ConfigError> {
        let mut plan: Plan = crate::toml_text::parse_naming_every_key(text).map_err(|message| {
            ConfigError::File {
                path: path.to_path_buf(),
                message,
            }
        })?;
        let base = std::fs::canonicalize(base).unwrap_or_else(|_| base.to_path_buf());
        // Relative paths are taken from the plan's folder and printed canonical: `../reports`
        // of `plans/x.toml` is `<repo>/reports`, never `<repo>/plans/../reports`.
        let fix = |p: &mut Option<PathBuf>| {
            if let Some(x) = p.as_mut().filter(|x| x.is_relative()) {
                *x = lexically_normal(&base.join(&*x));
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
        if let Some(sg) = plan.self_generated.as_mut() {
            fix(&mut sg.prompt);
            fix(&mut sg.skill_creator);
        }
        if plan.name.is_none() {
            plan.name = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        }
        plan.check().map_err(|message| ConfigError::Value {
            setting: format!("plan {}", path.display()),
            message,
        })?;
        Ok(plan)
    }

    /// Checks values a TOML type cannot, reporting every problem (each naming its key).
    ///
    /// # Errors
    /// The problems, joined by `; `.
    pub fn check(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        if self.trials == 0 {
            problems.push("trials must be at least 1".to_string());
        }
        if self.trials > MAX_TRIALS {
            problems.push(format!(
                "trials = {} per task and condition is beyond any evaluation (the SkillsBench paper ran 5; at most {MAX_TRIALS})",
                self.trials
            ));
        }
        let stages = self.sequential.stages(self.trials);
        if !(1..=20).contains(&stages) {
            problems.push(format!("[sequential] stages = {stages} must be 1 to 20"));
        } else if stages > self.trials && self.trials > 0 {
            problems.push(format!(
                "[sequential] stages = {stages} needs at least {stages} trials per task and condition (trials = {}); lower stages or remove the table for the fixed design",
                self.trials
            ));
        }
        let name = self.name();
        if name.is_empty() || crate::skillsbench::condition::sanitize_slug(&name) != name {
            problems.push(format!(
                "name {name:?} must be lowercase letters, digits, '.', '_' or '-'"
            ));
        }
        if self.spaces.a.label == self.spaces.b.label || self.spaces.a.label.is_empty() {
            problems.push("spaces.a.label and spaces.b.label must differ and not be empty".into());
        }
        if let Some(m) = &self.acontext.status_mode
            && let Err(e) = crate::acontext::learn::StatusMode::parse(m)
        {
            problems.push(e);
        }
        if let Some(split) = &self.split {
            problems.extend(split.problems());
        }
        if let Some(sg) = &self.self_generated {
            if let Some(p) = &sg.prompt
                && !p.is_file()
            {
                problems.push(format!(
                    "[self_generated] prompt = {}: no such file",
                    p.display()
                ));
            }
            match &sg.skill_creator {
                Some(_) if !sg.two_phase => problems.push(
                    "[self_generated] skill_creator needs two_phase = true (only the two-phase variant has a skill-writing session)".into(),
                ),
                Some(d) if !d.join("SKILL.md").is_file() => problems.push(format!(
                    "[self_generated] skill_creator = {}: not a skill folder (no SKILL.md)",
                    d.display()
                )),
                _ => {}
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }

    /// Condition C of round 1 (`self-generated` or `self-generated:two-phase` with the plan's
    /// prompt and skill creator), when the plan has one.
    ///
    /// # Errors
    /// [`ConfigError::Value`] naming `[self_generated] prompt` when the file cannot be read.
    pub fn condition_c(&self) -> Result<Option<Condition>, ConfigError> {
        let Some(sg) = &self.self_generated else {
            return Ok(None);
        };
        let prompt = match &sg.prompt {
            Some(p) => Some(std::fs::read_to_string(p).map_err(|e| ConfigError::Value {
                setting: "[self_generated] prompt".into(),
                message: format!("{}: {e}", p.display()),
            })?),
            None => None,
        };
        let base = if sg.two_phase {
            "self-generated:two-phase"
        } else {
            "self-generated"
        };
        let c = Condition::parse(base).map_err(|e| ConfigError::Value {
            setting: "[self_generated]".into(),
            message: e.to_string(),
        })?;
        Ok(Some(c.with_self_generation(
            prompt.as_deref(),
            sg.skill_creator.as_deref(),
        )))
    }

    /// The experiment name.
    pub fn name(&self) -> String {
        self.name.clone().unwrap_or_else(|| "experiment".into())
    }

    /// The plan as stored with the experiment: everything that decides its results (no secret
    /// values exist in a plan — only the name of the key's variable).
    /// A custom self-generation prompt is stored with its SHA-256, so running the plan again with
    /// a changed prompt file is refused as another plan.
    pub fn public_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        if let Some(p) = self.self_generated.as_ref().and_then(|s| s.prompt.as_ref()) {
            use sha2::{Digest, Sha256};
            let sha = std::fs::read(p)
                .map(|b| hex::encode(Sha256::digest(&b)))
                .unwrap_or_else(|e| format!("unreadable: {e}"));
            v["self_generated"]["prompt_sha256"] = serde_json::json!(sha);
        }
        v
    }
}

/// `path` with `.` dropped and each `..` taking away the folder before it (without reading the
/// disk: the folders need not exist yet). `path` should be absolute and free of symbolic links
/// above its first `..` — as a canonical base joined with a relative path is.
pub fn lexically_normal(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(c);
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_printed_canonical() {
        let dir = tempfile::tempdir().unwrap();
        let plans = dir.path().join("plans");
        std::fs::create_dir_all(&plans).unwrap();
        let p = plans.join("exp.toml");
        std::fs::write(
            &p,
            "reports_dir = \"../reports\"\nexports_dir = \"./out/../exports\"\njobs_dir = \"../jobs\"\n",
        )
        .unwrap();
        let plan = Plan::load(&p).unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(plan.reports_dir.unwrap(), root.join("reports"));
        assert_eq!(plan.exports_dir.unwrap(), root.join("plans/exports"));
        assert_eq!(plan.jobs_dir.unwrap(), root.join("jobs"));
        assert_eq!(
            lexically_normal(Path::new("/a/b/../../c/./d")),
            PathBuf::from("/c/d")
        );
    }

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
        // Every wrong value of the new tables is named, not only the first.
        std::fs::write(
            &p,
            "trials = 0\nround2_skills = \"domain\"\n[split]\nmethod = \"random\"\ntest_fraction = 1.5\n[self_generated]\nprompt = \"nope.md\"\nskill_creator = \"sc\"\n",
        )
        .unwrap();
        let e = Plan::load(&p).unwrap_err().to_string();
        for key in [
            "trials",
            "method",
            "test_fraction",
            "prompt",
            "skill_creator",
        ] {
            assert!(e.contains(key), "{key}: {e}");
        }
        std::fs::write(&p, "round2_skills = \"some\"\n").unwrap();
        let e = Plan::load(&p).unwrap_err().to_string();
        assert!(e.contains("round2_skills"), "{e}");
    }

    #[test]
    fn condition_c_split_and_selection() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("c6.md"), "Write skills first.").unwrap();
        let p = dir.path().join("exp.toml");
        std::fs::write(
            &p,
            "round2_skills = \"task\"\n[self_generated]\nprompt = \"c6.md\"\n[split]\ntest_fraction = 0.25\nseed = 3\nround2 = \"all\"\n",
        )
        .unwrap();
        let plan = Plan::load(&p).unwrap();
        let c = plan.condition_c().unwrap().unwrap();
        assert_eq!(c.key(), "self-generated");
        assert_eq!(
            c.self_generation().unwrap().prompt.as_deref(),
            Some("Write skills first.")
        );
        assert_eq!(plan.round2_skills, Round2Skills::Task);
        let split = plan.split.as_ref().unwrap();
        assert_eq!(split.round2, super::super::split::Round2Tasks::All);
        let json = plan.public_json();
        assert_eq!(
            json["self_generated"]["prompt_sha256"]
                .as_str()
                .unwrap()
                .len(),
            64
        );
        // A plan without the new tables stores what it stored before they existed.
        let old: Plan = toml::from_str("trials = 2\n").unwrap();
        let j = old.public_json();
        for key in ["self_generated", "split", "round2_skills"] {
            assert!(j.get(key).is_none(), "{key}: {j}");
        }
    }
}
