//! Round-2 skill selection (`round2_skills` in a plan): which skills of a space's export each task
//! gets in round 2.
//!
//! - `all`: the whole export, for every task (the plan as written).
//! - `domain`: the skills whose provenance includes a task of the task's own domain.
//! - `task`: the skills whose provenance includes the task itself.
//!
//! A skill's provenance is the set of tasks it came from: the tasks whose trials created or
//! changed it in learning (`skill_sources`), and, for a curated skill in a space that started with
//! the curated skills, every task whose `environment/skills` holds a skill of that name. A skill
//! with no provenance (Acontext's default skills kept in a space) goes only to `all`. The paper
//! found 2–3 skills per task best and 4+ much worse (SkillsBench §5), which is why the count each
//! task received is stored and reported.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

/// How round 2 selects skills for each task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Round2Skills {
    /// The whole export for every task.
    #[default]
    All,
    /// Skills whose provenance includes tasks of the task's domain.
    Domain,
    /// Skills learned from (or curated for) the task itself.
    Task,
}

impl Round2Skills {
    /// `all`, `domain` or `task`.
    pub fn as_str(self) -> &'static str {
        match self {
            Round2Skills::All => "all",
            Round2Skills::Domain => "domain",
            Round2Skills::Task => "task",
        }
    }
}

/// One exported skill and the tasks it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    /// Its folder in the export.
    pub dir_name: String,
    /// Its name (SKILL.md frontmatter; the folder name when unreadable).
    pub name: String,
    /// The tasks it came from.
    pub tasks: BTreeSet<String>,
}

/// The skills (export folder names, sorted) task `task` of domain `domain` gets under `mode`;
/// `domain_of` gives every task's domain.
pub fn select(
    mode: Round2Skills,
    skills: &[Provenance],
    task: &str,
    domain: &str,
    domain_of: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut out: Vec<String> = skills
        .iter()
        .filter(|s| match mode {
            Round2Skills::All => true,
            Round2Skills::Task => s.tasks.contains(task),
            Round2Skills::Domain => s
                .tasks
                .iter()
                .any(|t| domain_of.get(t).is_some_and(|d| d == domain)),
        })
        .map(|s| s.dir_name.clone())
        .collect();
    out.sort();
    out
}

/// Provenance of the skills in `export_dir`: `sources` are (skill name, task) pairs from
/// learning; `curated_owners` maps a curated skill name to the tasks that hold it (empty for a
/// space that did not start with curated skills). A skill matches by its frontmatter name or its
/// folder name.
pub fn provenance(
    export_dir: &Path,
    sources: &[(String, String)],
    curated_owners: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<Provenance> {
    crate::skillsbench::skill::scan_skills_dir(export_dir)
        .into_iter()
        .map(|s| {
            let name = s
                .frontmatter
                .as_ref()
                .map(|f| f.name.clone())
                .unwrap_or_else(|| s.dir_name.clone());
            let matches = |n: &str| n == name || n == s.dir_name;
            let mut tasks: BTreeSet<String> = sources
                .iter()
                .filter(|(skill, _)| matches(skill))
                .map(|(_, t)| t.clone())
                .collect();
            for (curated, owners) in curated_owners {
                if matches(curated) {
                    tasks.extend(owners.iter().cloned());
                }
            }
            Provenance {
                dir_name: s.dir_name,
                name,
                tasks,
            }
        })
        .collect()
}

/// Writes `out/<task>/<skill>/…` for every task of `selection` (task → skill folder names),
/// copying each skill's folder from `export_dir` (regular files and folders only). A task with
/// no skills gets an empty folder. The tree is built in a hidden folder beside `out` and renamed
/// into place; an existing `out` is left as it is (it was built from the same export and
/// selection).
///
/// # Errors
/// I/O errors naming the path.
pub fn write_by_task(
    export_dir: &Path,
    out: &Path,
    selection: &BTreeMap<String, Vec<String>>,
) -> Result<(), String> {
    if out.is_dir() {
        return Ok(());
    }
    let io = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    let parent = out.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
    let tmp = tempfile::Builder::new()
        .prefix(".round2-skills-")
        .tempdir_in(parent)
        .map_err(|e| io(parent, e))?;
    for (task, skills) in selection {
        let task_dir = tmp.path().join(task);
        std::fs::create_dir_all(&task_dir).map_err(|e| io(&task_dir, e))?;
        for skill in skills {
            copy_tree(&export_dir.join(skill), &task_dir.join(skill))?;
        }
    }
    let kept = tmp.keep();
    std::fs::rename(&kept, out).map_err(|e| {
        let _ = std::fs::remove_dir_all(&kept);
        io(out, e)
    })
}

/// Copies the folder `from` to the new folder `to`: folders and regular files only (a symlink in
/// an export cannot exist — exports refuse them — and is skipped here all the same).
fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    for e in walkdir::WalkDir::new(from).follow_links(false) {
        let e = e.map_err(|e| format!("{}: {e}", from.display()))?;
        let rel = e.path().strip_prefix(from).unwrap_or(e.path());
        let dest = to.join(rel);
        let ft = e.file_type();
        if ft.is_dir() {
            std::fs::create_dir_all(&dest).map_err(|e| format!("{}: {e}", dest.display()))?;
        } else if ft.is_file() {
            std::fs::copy(e.path(), &dest).map_err(|e| format!("{}: {e}", dest.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prov(name: &str, tasks: &[&str]) -> Provenance {
        Provenance {
            dir_name: name.into(),
            name: name.into(),
            tasks: tasks.iter().map(|t| t.to_string()).collect(),
        }
    }

    #[test]
    fn each_mode_selects_by_provenance() {
        let skills = [
            prov("a-learned", &["a"]),
            prov("b-learned", &["b"]),
            prov("c-learned", &["c"]),
            prov("default", &[]),
        ];
        let domain_of: BTreeMap<String, String> = [("a", "x"), ("b", "x"), ("c", "y"), ("d", "x")]
            .iter()
            .map(|(t, d)| (t.to_string(), d.to_string()))
            .collect();
        assert_eq!(
            select(Round2Skills::All, &skills, "d", "x", &domain_of).len(),
            4
        );
        assert_eq!(
            select(Round2Skills::Domain, &skills, "d", "x", &domain_of),
            ["a-learned", "b-learned"]
        );
        assert_eq!(
            select(Round2Skills::Task, &skills, "a", "x", &domain_of),
            ["a-learned"]
        );
        assert!(select(Round2Skills::Task, &skills, "d", "x", &domain_of).is_empty());
    }

    #[test]
    fn provenance_joins_sources_and_curated_owners_and_folders_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let export = dir.path().join("ls-b-v1");
        for (folder, name) in [
            ("unit-conversion", "unit-conversion"),
            ("x-learned", "x-learned"),
        ] {
            std::fs::create_dir_all(export.join(folder).join("scripts")).unwrap();
            std::fs::write(
                export.join(folder).join("SKILL.md"),
                format!("---\nname: {name}\ndescription: d\n---\n"),
            )
            .unwrap();
            std::fs::write(export.join(folder).join("scripts/run.sh"), "true\n").unwrap();
        }
        let sources = vec![
            ("x-learned".to_string(), "x".to_string()),
            ("unit-conversion".to_string(), "t".to_string()),
        ];
        let owners = BTreeMap::from([(
            "unit-conversion".to_string(),
            BTreeSet::from(["t".to_string(), "u".to_string()]),
        )]);
        let p = provenance(&export, &sources, &owners);
        assert_eq!(p.len(), 2);
        assert_eq!(
            p[0].tasks,
            BTreeSet::from(["t".to_string(), "u".to_string()])
        );
        assert_eq!(p[1].tasks, BTreeSet::from(["x".to_string()]));
        let out = dir.path().join("by-task");
        let sel = BTreeMap::from([
            ("t".to_string(), vec!["unit-conversion".to_string()]),
            ("z".to_string(), vec![]),
        ]);
        write_by_task(&export, &out, &sel).unwrap();
        assert!(out.join("t/unit-conversion/scripts/run.sh").is_file());
        assert!(!out.join("t/x-learned").exists());
        assert!(out.join("z").is_dir());
        // Written once.
        write_by_task(&export, &out, &BTreeMap::new()).unwrap();
        assert!(out.join("t/unit-conversion/SKILL.md").is_file());
    }
}
