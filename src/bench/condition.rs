//! Skill conditions: which skills, if any, an agent can reach in a trial.
//!
//! The evaluation plan's conditions map onto three kinds: A = [`Condition::NoSkills`],
//! B = [`Condition::Curated`] (the task's own `environment/skills`), and A'/B' =
//! [`Condition::Skills`] (a folder of exported skills that replaces `environment/skills`).

use std::fmt;
use std::path::{Path, PathBuf};

use super::BenchError;

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
}

impl Condition {
    /// Parses `no-skills` (or `A`), `curated` (or `B`), or `skills:<dir>`.
    /// A relative `<dir>` is resolved against the current directory.
    ///
    /// # Errors
    /// [`BenchError::Condition`] for an unknown name or a `skills:` folder that does not exist.
    pub fn parse(spec: &str) -> Result<Condition, BenchError> {
        let spec = spec.trim();
        match spec {
            "no-skills" | "noskills" | "A" => return Ok(Condition::NoSkills),
            "curated" | "B" => return Ok(Condition::Curated),
            _ => {}
        }
        if let Some(dir) = spec.strip_prefix("skills:") {
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
            return Ok(Condition::Skills { dir: abs });
        }
        Err(BenchError::Condition {
            spec: spec.to_string(),
            message: "expected no-skills, curated or skills:<dir>".into(),
        })
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

    /// The stable key stored in the database: `no-skills`, `curated` or `skills:<abs dir>`.
    pub fn key(&self) -> String {
        match self {
            Condition::NoSkills => "no-skills".into(),
            Condition::Curated => "curated".into(),
            Condition::Skills { dir } => format!("skills:{}", dir.display()),
        }
    }

    /// A short slug for folder names: `noskills`, `curated`, `skills-<folder name>`.
    pub fn slug(&self) -> String {
        match self {
            Condition::NoSkills => "noskills".into(),
            Condition::Curated => "curated".into(),
            Condition::Skills { dir } => {
                let base = dir
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "dir".into());
                format!("skills-{}", sanitize_slug(&base))
            }
        }
    }

    /// A short label for tables: `no-skills`, `curated`, `skills:<folder name>`.
    pub fn label(&self) -> String {
        condition_label(&self.key())
    }

    /// True when this condition makes skills reachable by the agent.
    pub fn has_skills(&self) -> bool {
        !matches!(self, Condition::NoSkills)
    }
}

/// Short display label of a stored condition key (see [`Condition::key`]).
pub fn condition_label(key: &str) -> String {
    match key.strip_prefix("skills:") {
        Some(dir) => format!(
            "skills:{}",
            Path::new(dir)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| dir.to_string())
        ),
        None => key.to_string(),
    }
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
        assert!(Condition::parse("self-generated").is_err());
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
