//! What a trial's agent could see of skills when it started, and which of them it used: the
//! record written to `agent/skill-exposure.json` in every trial folder and kept in the store.
//!
//! **Visible** skills are every `SKILL.md` (at any depth) in the skill folders a harness reads —
//! [`skill_folders`]: the SkillsBench destinations under `/root` and under `$HOME`, the same
//! folders relative to the agent's working directory and each folder above it (project skills),
//! and the harnesses' system folders — plus the folders where the harness keeps skills of its own
//! ([`Builtins::folders`]). They are read inside the trial's container just before the agent
//! starts, so a skill that reached the container after its image was built (a mount, a kit) is
//! seen. A skill's folder is the folder holding its `SKILL.md`; its hash is
//! [`super::skill::folder_hash`] over every file in that folder.
//!
//! Each visible skill gets an [`Origin`] by comparing its hash with the skills the trial was
//! meant to have ([`Expected`]): the task's own `environment/skills` (**task**), the condition's
//! skills folder — a learned set for A'/B' (**learned**), what the agent of a two-phase
//! self-generated trial wrote in its first session (**generated**), the harness's own folders
//! (**harness**), anything else (**other**: a skill nobody put there on purpose).
//!
//! **Used** skills come from the trajectory ([`crate::harbor::skill_use`]): a read of a
//! `SKILL.md` or a file beside it, a shell command touching the folder, a skill tool call — with
//! the first step showing it. A trial whose agent leaves no trajectory of a model's choices
//! (oracle, nop; a harness whose log could not be read) is [`UseState::Unknown`], never "none".

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::dockerfile::SKILL_DESTINATIONS;

/// Where a trial keeps its record, relative to the trial folder.
pub const TRIAL_EXPOSURE: &str = "agent/skill-exposure.json";

/// The folder hash, in words (written into every record so that it explains itself).
pub const HASH_DEFINITION: &str = "sha256 over the lines `<path> NUL <sha256 of the file> LF`, one per file in the skill's folder (paths relative to it, `/`-separated, sorted; a symbolic link hashes the path it points to)";

/// System-wide skill folders of the harnesses (Claude Code's managed skills, Codex's admin skills).
pub const SYSTEM_FOLDERS: &[&str] = &["/etc/claude-code/.claude/skills", "/etc/codex/skills"];

/// Where a visible skill came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// The task's own `environment/skills` (the curated skills).
    Task,
    /// The condition's skills folder (`skills:<dir>`, `skills-by-task:<dir>`: a learned set).
    Learned,
    /// Written by the agent of a self-generated trial.
    Generated,
    /// Shipped with the harness CLI.
    Harness,
    /// None of the above: a skill nobody meant the trial to have.
    Other,
}

impl Origin {
    /// Stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Task => "task",
            Origin::Learned => "learned",
            Origin::Generated => "generated",
            Origin::Harness => "harness",
            Origin::Other => "other",
        }
    }

    /// Parses [`Origin::as_str`]; anything else is [`Origin::Other`].
    pub fn parse(s: &str) -> Origin {
        match s {
            "task" => Origin::Task,
            "learned" => Origin::Learned,
            "generated" => Origin::Generated,
            "harness" => Origin::Harness,
            _ => Origin::Other,
        }
    }
}

/// One visible skill: a folder holding a `SKILL.md`, with every place the same files were found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExposedSkill {
    /// The frontmatter `name` of its `SKILL.md`, else its folder name.
    pub name: String,
    /// Its folder name.
    pub dir: String,
    /// The first container path of its folder (in [`skill_folders`] order).
    pub path: String,
    /// Every container path where a folder of the same name and hash was found (the
    /// SkillsBench layout puts each skill in eight harness folders).
    pub paths: Vec<String>,
    /// Where it came from.
    pub origin: Origin,
    /// [`super::skill::folder_hash`] of its folder.
    pub sha256: String,
    /// Files in its folder.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// False only for a harness's own skill that the harness was told not to offer the model.
    pub enabled: bool,
}

/// A harness's own skills: what its pinned CLI ships and whether the trial switched them off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Builtins {
    /// What the CLI bundles or enables by itself.
    pub ships: String,
    /// The names of its own skills that it offers a model unless switched off (at the pinned
    /// version; read from the kit where they lie on disk).
    pub names: Vec<String>,
    /// True when the trial switched them off.
    pub switched_off: bool,
    /// The documented setting that switches them off (empty when the harness has none).
    pub setting: String,
    /// Container folders where the harness keeps them on disk (scanned like skill folders;
    /// what is found there has origin [`Origin::Harness`]).
    pub folders: Vec<String>,
}

/// Whether the trajectory can say which skills were used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UseState {
    /// A model's trajectory was read: the list is complete (it may be empty).
    Known,
    /// No trajectory of a model's choices (oracle, nop, an unreadable log): nothing is known.
    Unknown,
}

impl UseState {
    /// Stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            UseState::Known => "known",
            UseState::Unknown => "unknown",
        }
    }
}

/// One skill the agent used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsedSkill {
    /// The skill name the trajectory names (a folder name, or a skill tool's argument).
    pub skill: String,
    /// The first trajectory step showing its use.
    pub first_step: Option<i64>,
    /// How (`read`, `resource`, `shell`, `invoke`).
    pub kinds: Vec<String>,
    /// True when it is one of the trial's own skills (by name or folder): visible at the start,
    /// or written by the agent of a self-generated trial.
    pub own: bool,
}

/// What the agent used, filled in after it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Used {
    /// Whether the trajectory can say.
    pub state: UseState,
    /// The skills used (empty when unknown).
    pub skills: Vec<UsedSkill>,
}

/// The record of one trial (`agent/skill-exposure.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillExposure {
    /// When the folders were read (RFC 3339), just before the agent started.
    pub captured_at: String,
    /// The agent (harness) name.
    pub agent: String,
    /// The condition key.
    pub condition: String,
    /// The agent's working directory in the container.
    pub workdir: String,
    /// The skill folders that exist in the container (of those looked in).
    pub folders: Vec<String>,
    /// Every visible skill, by folder name then hash.
    pub skills: Vec<ExposedSkill>,
    /// The harness's own skills; `None` for agents that are no harness (oracle, nop).
    pub builtins: Option<Builtins>,
    /// How [`ExposedSkill::sha256`] is computed ([`HASH_DEFINITION`]).
    pub hash: String,
    /// Set when the folders could not be read (then `skills` is incomplete).
    pub error: Option<String>,
    /// The skills the agent used; `None` until it ended.
    pub used: Option<Used>,
}

impl SkillExposure {
    /// True when a skill that is not the harness's own was visible (task, learned, generated or
    /// other).
    pub fn sees_condition_skills(&self) -> bool {
        self.skills.iter().any(|s| s.origin != Origin::Harness)
    }

    /// True when a harness's own skill was offered to the model.
    pub fn sees_builtins(&self) -> bool {
        self.skills
            .iter()
            .any(|s| s.origin == Origin::Harness && s.enabled)
    }

    /// The visible skills a trial should not have seen: under a condition without skills
    /// (`has_skills = false`: no-skills, self-generated) every one that is neither the harness's
    /// own nor written by the agent; under one with skills, those of origin other.
    pub fn stray(&self, has_skills: bool) -> Vec<&ExposedSkill> {
        self.skills
            .iter()
            .filter(|s| is_stray(s.origin, has_skills))
            .collect()
    }

    /// Names (frontmatter names and folder names) of the visible skills that are not the
    /// harness's own: a harness switching off its built-ins by name must spare these.
    pub fn condition_skill_names(&self) -> Vec<String> {
        let mut out: BTreeSet<String> = BTreeSet::new();
        for s in self.skills.iter().filter(|s| s.origin != Origin::Harness) {
            out.insert(s.name.clone());
            out.insert(s.dir.clone());
        }
        out.into_iter().collect()
    }

    /// Fills [`SkillExposure::used`] from the uses a trajectory showed (`(skill, kind, first
    /// step)`), or marks it unknown when there is no trajectory to read (`uses = None`).
    /// `also_own` names skills that are the trial's own without being visible at its start (those
    /// the agent of a one-pass self-generated trial wrote).
    pub fn set_used(
        &mut self,
        uses: Option<&[(String, String, Option<i64>)]>,
        also_own: &[String],
    ) {
        let Some(uses) = uses else {
            self.used = Some(Used {
                state: UseState::Unknown,
                skills: Vec::new(),
            });
            return;
        };
        let mut by: BTreeMap<&str, (Option<i64>, BTreeSet<&str>)> = BTreeMap::new();
        for (skill, kind, step) in uses {
            let e = by.entry(skill).or_insert((*step, BTreeSet::new()));
            e.0 = match (e.0, *step) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            e.1.insert(kind);
        }
        let mut names = self.condition_skill_names();
        names.extend(also_own.iter().cloned());
        let builtin: BTreeSet<&str> = self
            .skills
            .iter()
            .filter(|s| s.origin == Origin::Harness)
            .flat_map(|s| [s.name.as_str(), s.dir.as_str()])
            .collect();
        let skills = by
            .into_iter()
            .map(|(skill, (first_step, kinds))| UsedSkill {
                own: names.iter().any(|n| n == skill) || builtin.contains(skill),
                skill: skill.to_string(),
                first_step,
                kinds: kinds.into_iter().map(str::to_string).collect(),
            })
            .collect();
        self.used = Some(Used {
            state: UseState::Known,
            skills,
        });
    }
}

/// True when a visible skill of `origin` is one a trial should not have seen: under a condition
/// without skills (`has_skills = false`) anything but the harness's own and what the agent
/// generated; under one with skills, origin other.
pub fn is_stray(origin: Origin, has_skills: bool) -> bool {
    match origin {
        Origin::Harness | Origin::Generated => false,
        Origin::Other => true,
        Origin::Task | Origin::Learned => !has_skills,
    }
}

/// The hashes a trial's skills were meant to have, by origin (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct Expected {
    /// Hashes of the task's own skills.
    pub task: BTreeSet<String>,
    /// Hashes of the condition's skills folder.
    pub learned: BTreeSet<String>,
    /// Hashes of the skills the agent generated (two-phase, installed for the solving session).
    pub generated: BTreeSet<String>,
    /// Container folders of the harness's own skills.
    pub harness_folders: Vec<String>,
}

impl Expected {
    /// The origin of a skill at container path `path` with hash `sha256`: the harness's folders
    /// first, then the task's skills, the condition's folder, the generated ones; else other.
    pub fn origin(&self, path: &str, sha256: &str) -> Origin {
        let under = |f: &String| {
            let f = f.trim_end_matches('/');
            path == f || path.starts_with(&format!("{f}/"))
        };
        if self.harness_folders.iter().any(under) {
            Origin::Harness
        } else if self.task.contains(sha256) {
            Origin::Task
        } else if self.learned.contains(sha256) {
            Origin::Learned
        } else if self.generated.contains(sha256) {
            Origin::Generated
        } else {
            Origin::Other
        }
    }
}

/// The folders, relative to a home or project folder, where harnesses read skills: the
/// SkillsBench destinations without their `/root/`.
pub fn relative_skill_folders() -> Vec<&'static str> {
    SKILL_DESTINATIONS
        .iter()
        .filter_map(|d| d.strip_prefix("/root/"))
        .collect()
}

/// Every skill folder looked in, in order: the SkillsBench destinations ([`SKILL_DESTINATIONS`]),
/// the same under `home` (when not `/root`), the harnesses' [`SYSTEM_FOLDERS`], the same under
/// `workdir` and under each folder above it up to `/` (project skills), and `extra` (a harness's
/// own folders). Duplicates are dropped.
pub fn skill_folders(home: &str, workdir: &str, extra: &[String]) -> Vec<String> {
    let rel = relative_skill_folders();
    let mut out: Vec<String> = Vec::new();
    let mut push = |p: String| {
        if !out.contains(&p) {
            out.push(p);
        }
    };
    for d in SKILL_DESTINATIONS {
        push(d.to_string());
    }
    let home = home.trim_end_matches('/');
    if !home.is_empty() {
        for r in &rel {
            push(format!("{home}/{r}"));
        }
    }
    for d in SYSTEM_FOLDERS {
        push(d.to_string());
    }
    let mut dir = workdir.trim_end_matches('/').to_string();
    loop {
        for r in &rel {
            push(format!("{dir}/{r}"));
        }
        if dir.is_empty() {
            break;
        }
        match dir.rfind('/') {
            Some(i) => dir.truncate(i),
            None => dir.clear(),
        }
    }
    for e in extra {
        push(e.trim_end_matches('/').to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_cover_home_system_and_every_project_level() {
        let f = skill_folders("/home/agent", "/app/src", &["/opt/k/builtin/".into()]);
        assert_eq!(f[0], "/root/.claude/skills");
        for want in [
            "/home/agent/.claude/skills",
            "/etc/claude-code/.claude/skills",
            "/app/src/.agents/skills",
            "/app/.claude/skills",
            "/.gemini/skills",
            "/opt/k/builtin",
        ] {
            assert!(f.contains(&want.to_string()), "{want} missing: {f:?}");
        }
        let unique: BTreeSet<&String> = f.iter().collect();
        assert_eq!(unique.len(), f.len());
        // A workdir of /root adds nothing beyond the destinations and the root level.
        let g = skill_folders("/root", "/root", &[]);
        assert!(g.contains(&"/.claude/skills".to_string()));
        assert_eq!(g.iter().filter(|p| p.starts_with("/root/")).count(), 8);
    }

    #[test]
    fn origins_follow_location_then_hash() {
        let e = Expected {
            task: ["t".to_string()].into(),
            learned: ["l".to_string(), "t".to_string()].into(),
            generated: ["g".to_string()].into(),
            harness_folders: vec!["/root/.codex/skills/.system".into()],
        };
        assert_eq!(e.origin("/root/.claude/skills/a", "t"), Origin::Task);
        assert_eq!(e.origin("/root/.claude/skills/a", "l"), Origin::Learned);
        assert_eq!(e.origin("/root/.claude/skills/a", "g"), Origin::Generated);
        assert_eq!(e.origin("/root/.claude/skills/a", "x"), Origin::Other);
        assert_eq!(
            e.origin("/root/.codex/skills/.system/skill-creator", "t"),
            Origin::Harness
        );
        assert_eq!(
            e.origin("/root/.codex/skills/.systemic/x", "x"),
            Origin::Other
        );
    }

    #[test]
    fn used_skills_are_matched_to_visible_ones_and_unknown_is_not_none() {
        let mut x = SkillExposure {
            captured_at: String::new(),
            agent: "claude-code".into(),
            condition: "curated".into(),
            workdir: "/root".into(),
            folders: vec![],
            skills: vec![ExposedSkill {
                name: "greeting".into(),
                dir: "greeting".into(),
                path: "/root/.claude/skills/greeting".into(),
                paths: vec![],
                origin: Origin::Task,
                sha256: "h".into(),
                files: 1,
                bytes: 3,
                enabled: true,
            }],
            builtins: None,
            hash: HASH_DEFINITION.into(),
            error: None,
            used: None,
        };
        x.set_used(None, &[]);
        assert_eq!(x.used.as_ref().unwrap().state, UseState::Unknown);
        x.set_used(
            Some(&[
                ("greeting".into(), "shell".into(), Some(4)),
                ("greeting".into(), "read".into(), Some(3)),
                ("elsewhere".into(), "read".into(), Some(5)),
                ("mine".into(), "read".into(), Some(6)),
            ]),
            &["mine".to_string()],
        );
        let u = x.used.unwrap();
        assert_eq!(u.state, UseState::Known);
        assert_eq!(u.skills[1].skill, "greeting");
        assert_eq!(u.skills[1].first_step, Some(3));
        assert_eq!(u.skills[1].kinds, vec!["read", "shell"]);
        assert!(u.skills[1].own && !u.skills[0].own);
        assert!(u.skills[2].own);
    }
}
