//! Skill conditions: which skills, if any, an agent can reach in a trial.
//!
//! The evaluation plan's conditions map onto these kinds: A = [`Condition::NoSkills`],
//! B = [`Condition::Curated`] (the task's own `environment/skills`), A'/B' =
//! [`Condition::Skills`] (a folder of exported skills that replaces `environment/skills`) or
//! [`Condition::SkillsByTask`] (one such folder per task, for round-2 skill selection), and
//! C = [`Condition::SelfGenerated`] (no skills, the agent writes its own; see
//! [`super::selfgen`]).

use std::fmt;
use std::path::{Path, PathBuf};

use super::BenchError;
use super::selfgen::SelfGeneration;

/// A skill condition.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Condition {
    /// Condition A: no skills reachable anywhere in the container.
    NoSkills,
    /// Condition B: the task's curated `environment/skills`.
    Curated,
    /// A folder of `<name>/SKILL.md` skills replacing `environment/skills` (conditions A', B').
    Skills {
        /// Absolute path of the skills folder.
        dir: PathBuf,
    },
    /// A folder holding one skills folder per task, `<dir>/<task id>/<name>/SKILL.md`: each task
    /// gets only its own subfolder (none when it has no subfolder). Round 2 of an experiment with
    /// `round2_skills = "domain"` or `"task"`.
    SkillsByTask {
        /// Absolute path of the folder of per-task skills folders.
        dir: PathBuf,
    },
    /// Condition C: no skills in the image (the same checks as no-skills); the agent is asked to
    /// write its own skills (`self-generated`, `self-generated:two-phase`).
    SelfGenerated(SelfGeneration),
}

impl Condition {
    /// Parses `no-skills` (or `A`), `curated` (or `B`), `self-generated` (or `C`),
    /// `self-generated:two-phase`, `skills:<dir>` or `skills-by-task:<dir>`. A relative `<dir>` is
    /// resolved against the current directory. A self-generated condition parses with
    /// skillscope's own prompt and no skill creator ([`Condition::with_self_generation`] sets them).
    ///
    /// # Errors
    /// [`BenchError::Condition`] for an unknown name or a folder that does not exist.
    pub fn parse(spec: &str) -> Result<Condition, BenchError> {
        let spec = spec.trim();
        match spec {
            "no-skills" | "noskills" | "A" => return Ok(Condition::NoSkills),
            "curated" | "B" => return Ok(Condition::Curated),
            "self-generated" | "C" => {
                return Ok(Condition::SelfGenerated(SelfGeneration::default()));
            }
            "self-generated:two-phase" => {
                return Ok(Condition::SelfGenerated(SelfGeneration {
                    two_phase: true,
                    ..Default::default()
                }));
            }
            _ => {}
        }
        let (dir, by_task) = match (
            spec.strip_prefix("skills:"),
            spec.strip_prefix("skills-by-task:"),
        ) {
            (Some(d), _) => (Some(d), false),
            (_, Some(d)) => (Some(d), true),
            _ => (None, false),
        };
        if let Some(dir) = dir {
            let path = Path::new(dir);
            let abs = std::fs::canonicalize(path).map_err(|e| BenchError::Condition {
                spec: spec.to_string(),
                message: format!("skills folder {}: {e}", path.display()),
            })?;
            if !abs.is_dir() {
                return Err(BenchError::Condition {
                    spec: spec.to_string(),
                    message: format!("{} is not a folder", abs.display()),
                });
            }
            return Ok(if by_task {
                Condition::SkillsByTask { dir: abs }
            } else {
                Condition::Skills { dir: abs }
            });
        }
        Err(BenchError::Condition {
            spec: spec.to_string(),
            message: "expected no-skills, curated, self-generated, self-generated:two-phase, \
                      skills:<dir> or skills-by-task:<dir>"
                .into(),
        })
    }

    /// This condition with the operator's self-generation settings when it is a self-generated
    /// one (`prompt`: the text of `--self-gen-prompt`; `skill_creator`: the absolute folder of
    /// `--skill-creator`, used by the two-phase variant only); any other condition unchanged.
    pub fn with_self_generation(
        self,
        prompt: Option<&str>,
        skill_creator: Option<&Path>,
    ) -> Condition {
        match self {
            Condition::SelfGenerated(mut s) => {
                s.prompt = prompt.map(str::to_string);
                s.skill_creator = skill_creator.filter(|_| s.two_phase).map(Path::to_path_buf);
                Condition::SelfGenerated(s)
            }
            other => other,
        }
    }

    /// The condition whose image this one runs in: a self-generated condition runs in the
    /// no-skills image (same build, same leak check); every other condition in its own.
    pub fn image_condition(&self) -> &Condition {
        match self {
            Condition::SelfGenerated(_) => &Condition::NoSkills,
            other => other,
        }
    }

    /// The self-generation settings of a self-generated condition.
    pub fn self_generation(&self) -> Option<&SelfGeneration> {
        match self {
            Condition::SelfGenerated(s) => Some(s),
            _ => None,
        }
    }

    /// Parses a comma-separated list, keeping order and dropping duplicates.
    ///
    /// # Errors
    /// The first entry that does not parse.
    pub fn parse_list(list: &str) -> Result<Vec<Condition>, BenchError> {
        let mut out: Vec<Condition> = Vec::new();
        for part in list.split(',').filter(|p| !p.trim().is_empty()) {
            let c = Condition::parse(part)?;
            if !out.contains(&c) {
                out.push(c);
            }
        }
        Ok(out)
    }

    /// The stable key stored in the database: `no-skills`, `curated`, `self-generated`,
    /// `self-generated:two-phase`, `skills:<abs dir>` or `skills-by-task:<abs dir>`. (A
    /// self-generated condition's prompt is not part of its key: each trial records the exact
    /// instruction it received in `agent/instruction.md`.)
    pub fn key(&self) -> String {
        match self {
            Condition::NoSkills => "no-skills".into(),
            Condition::Curated => "curated".into(),
            Condition::Skills { dir } => format!("skills:{}", dir.display()),
            Condition::SkillsByTask { dir } => format!("skills-by-task:{}", dir.display()),
            Condition::SelfGenerated(s) if s.two_phase => "self-generated:two-phase".into(),
            Condition::SelfGenerated(_) => "self-generated".into(),
        }
    }

    /// A short slug for folder names: `noskills`, `curated`, `selfgen`, `selfgen-2phase`,
    /// `skills-<folder name>`, `skills-by-task-<folder name>`.
    pub fn slug(&self) -> String {
        let base = |dir: &Path| {
            dir.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "dir".into())
        };
        match self {
            Condition::NoSkills => "noskills".into(),
            Condition::Curated => "curated".into(),
            Condition::Skills { dir } => format!("skills-{}", sanitize_slug(&base(dir))),
            Condition::SkillsByTask { dir } => {
                format!("skills-by-task-{}", sanitize_slug(&base(dir)))
            }
            Condition::SelfGenerated(s) if s.two_phase => "selfgen-2phase".into(),
            Condition::SelfGenerated(_) => "selfgen".into(),
        }
    }

    /// A short label for tables: `no-skills`, `curated`, `self-generated`, `skills:<folder name>`,
    /// `skills-by-task:<folder name>`.
    pub fn label(&self) -> String {
        condition_label(&self.key())
    }

    /// True when the image of this condition holds skills (no-skills and self-generated: none).
    pub fn has_skills(&self) -> bool {
        !matches!(self, Condition::NoSkills | Condition::SelfGenerated(_))
    }

    /// The folder of skills this condition gives the agent of task `task_dir` (`task_id`): the
    /// task's `environment/skills` (curated), the condition's folder (`skills:<dir>`), the task's
    /// subfolder of it (`skills-by-task:<dir>`); `None` for the conditions without skills.
    pub fn skills_root(&self, task_id: &str, task_dir: &Path) -> Option<PathBuf> {
        match self {
            Condition::Curated => Some(task_dir.join("environment/skills")),
            Condition::Skills { dir } => Some(dir.clone()),
            Condition::SkillsByTask { dir } => Some(dir.join(task_id)),
            Condition::NoSkills | Condition::SelfGenerated(_) => None,
        }
    }
}

/// True for the key of a self-generated condition (`self-generated`, `self-generated:two-phase`).
pub fn is_self_generated_key(key: &str) -> bool {
    key == "self-generated" || key.starts_with("self-generated:")
}

/// True when a condition of stored key `key` gives its trials skills (every condition but
/// no-skills and the self-generated ones; see [`Condition::has_skills`]).
pub fn key_has_skills(key: &str) -> bool {
    key != "no-skills" && !is_self_generated_key(key)
}

/// Short display label of a stored condition key (see [`Condition::key`]).
pub fn condition_label(key: &str) -> String {
    for prefix in ["skills:", "skills-by-task:"] {
        if let Some(dir) = key.strip_prefix(prefix) {
            return format!(
                "{prefix}{}",
                Path::new(dir)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| dir.to_string())
            );
        }
    }
    key.to_string()
}

/// Short labels of a run's conditions (keys, in run order), as the evaluation plan names them:
/// `A` no skills and `B` curated skills (round 1 of an experiment), `A'` and `B'` the skills
/// learned from A's and B's trials (round 2, or a `skills:<dir>` that is a recorded export of a
/// space learning from that condition), and `C`, `D`, … for any other skills folder. `round` is
/// the run's round in an experiment (1 or 2), if any: its first two conditions take that round's
/// labels. `learned_from(dir)` tells the condition key the space whose export `dir` is learned
/// from. A label used twice gets a number (`A'2`).
pub fn short_labels(
    conditions: &[String],
    round: Option<u8>,
    learned_from: impl Fn(&str) -> Option<String>,
) -> Vec<String> {
    let mut next_other = b'C';
    let mut out: Vec<String> = Vec::with_capacity(conditions.len());
    for (i, key) in conditions.iter().enumerate() {
        let base = match (round, i) {
            (Some(1), 0) => "A".to_string(),
            (Some(1), 1) => "B".to_string(),
            (Some(2), 0) => "A'".to_string(),
            (Some(2), 1) => "B'".to_string(),
            _ => match key.as_str() {
                "no-skills" => "A".to_string(),
                "curated" => "B".to_string(),
                k => match k.strip_prefix("skills:").and_then(&learned_from).as_deref() {
                    Some("no-skills") => "A'".to_string(),
                    Some("curated") => "B'".to_string(),
                    _ => {
                        let l = (next_other as char).to_string();
                        next_other = next_other.saturating_add(1).min(b'Z');
                        l
                    }
                },
            },
        };
        let mut label = base.clone();
        let mut n = 2;
        while out.contains(&label) {
            label = format!("{base}{n}");
            n += 1;
        }
        out.push(label);
    }
    out
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key())
    }
}

/// Lowercases and keeps `[a-z0-9._-]`, replacing other characters by `-`.
pub fn sanitize_slug(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    out.trim_matches('-').to_string()
}

/// A name Docker accepts as a container name or an image repository component, for an id that
/// may hold any Unicode letters (`unicodé-tâsk`): lower-case ASCII letters, digits, `.`, `_` and
/// `-` are kept, every other character becomes `-` (a run of them one `-`) and separators are
/// trimmed from the ends; when anything was changed, the first 8 hex digits of the id's SHA-256
/// are appended, so ids that differ only in changed characters stay apart. Never empty. The id
/// itself stays as written everywhere else (store, trial folders, reports).
pub fn docker_safe_name(id: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut out = String::with_capacity(id.len());
    let mut replaced = false;
    for c in id.chars() {
        let lower = c.to_ascii_lowercase();
        if lower.is_ascii_lowercase() || lower.is_ascii_digit() || matches!(c, '.' | '_' | '-') {
            replaced |= lower != c;
            out.push(lower);
        } else {
            replaced = true;
            if !out.ends_with('-') {
                out.push('-');
            }
        }
    }
    let trimmed = out.trim_matches(['-', '.', '_']);
    replaced |= trimmed.len() != out.len();
    let mut out = trimmed.to_string();
    if replaced || out.is_empty() {
        let hash = hex::encode(Sha256::digest(id.as_bytes()));
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&hash[..8]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_names_of_unicode_ids_are_valid_and_distinct() {
        let valid = |n: &str| {
            !n.is_empty()
                && n.chars().next().unwrap().is_ascii_alphanumeric()
                && n.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c))
        };
        assert_eq!(docker_safe_name("3d-scan-calc"), "3d-scan-calc");
        let a = docker_safe_name("unicodé-tâsk");
        let b = docker_safe_name("unicodë-tásk");
        assert!(a.starts_with("unicod--t-sk-"), "{a}");
        assert_ne!(a, b);
        for id in ["unicodé-tâsk", "日本語", "-x-", "Upper", "a b/c", "ñ"] {
            let n = docker_safe_name(id);
            assert!(valid(&n), "{id:?} → {n:?}");
        }
        assert_ne!(docker_safe_name("Upper"), docker_safe_name("upper"));
        assert_ne!(docker_safe_name("-x-"), docker_safe_name("x"));
    }

    #[test]
    fn parses_names_and_aliases() {
        assert_eq!(Condition::parse("no-skills").unwrap(), Condition::NoSkills);
        assert_eq!(Condition::parse("A").unwrap(), Condition::NoSkills);
        assert_eq!(Condition::parse("curated").unwrap(), Condition::Curated);
        let c = Condition::parse("self-generated").unwrap();
        assert_eq!(
            (c.key(), c.slug()),
            ("self-generated".into(), "selfgen".into())
        );
        assert!(!c.has_skills());
        assert_eq!(c.image_condition(), &Condition::NoSkills);
        let two = Condition::parse("self-generated:two-phase").unwrap();
        assert_eq!(two.key(), "self-generated:two-phase");
        assert_eq!(Condition::parse(&two.key()).unwrap(), two);
        let set = two.with_self_generation(Some("p"), Some(Path::new("/sc")));
        let s = set.self_generation().unwrap();
        assert_eq!(
            (s.prompt.as_deref(), s.skill_creator.is_some()),
            (Some("p"), true)
        );
        // The one-pass variant has no first session to mount a skill creator for.
        let one = c.with_self_generation(None, Some(Path::new("/sc")));
        assert!(one.self_generation().unwrap().skill_creator.is_none());
        assert!(Condition::parse("self-generated:other").is_err());
    }

    #[test]
    fn skills_dir_condition() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("Learned Skills");
        std::fs::create_dir(&dir).unwrap();
        let c = Condition::parse(&format!("skills:{}", dir.display())).unwrap();
        assert_eq!(c.slug(), "skills-learned-skills");
        assert_eq!(c.label(), "skills:Learned Skills");
        assert!(c.key().starts_with("skills:/"));
        assert!(Condition::parse("skills:/definitely/not/here").is_err());
        let by = Condition::parse(&format!("skills-by-task:{}", dir.display())).unwrap();
        assert_eq!(by.slug(), "skills-by-task-learned-skills");
        assert_eq!(by.label(), "skills-by-task:Learned Skills");
        assert_eq!(Condition::parse(&by.key()).unwrap(), by);
    }

    #[test]
    fn list_dedups() {
        let l = Condition::parse_list("no-skills, curated,A").unwrap();
        assert_eq!(l, vec![Condition::NoSkills, Condition::Curated]);
    }

    #[test]
    fn short_labels_follow_the_evaluation_plan() {
        let keys = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let none = |_: &str| None;
        assert_eq!(
            short_labels(&keys(&["no-skills", "curated"]), None, none),
            ["A", "B"]
        );
        assert_eq!(
            short_labels(
                &keys(&["skills:/e/LS-A-v1", "skills:/e/LS-B-v1"]),
                Some(2),
                none
            ),
            ["A'", "B'"]
        );
        let from = |d: &str| match d {
            "/e/LS-A-v1" => Some("no-skills".to_string()),
            "/e/LS-B-v1" => Some("curated".to_string()),
            _ => None,
        };
        assert_eq!(
            short_labels(
                &keys(&[
                    "no-skills",
                    "skills:/e/LS-B-v1",
                    "skills:/x",
                    "skills:/y",
                    "skills:/e/LS-A-v1"
                ]),
                None,
                from
            ),
            ["A", "B'", "C", "D", "A'"]
        );
        assert_eq!(
            short_labels(
                &keys(&["skills:/e/LS-A-v1", "skills:/e/LS-A-v1"]),
                None,
                from
            ),
            ["A'", "A'2"]
        );
    }
}
