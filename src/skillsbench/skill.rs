//! Skills: `skills/<name>/SKILL.md` folders and their YAML frontmatter.
//!
//! Format: the Agent Skills convention SkillsBench uses — a `SKILL.md` that opens with a YAML
//! frontmatter block between `---` lines holding at least `name` and `description`, followed by
//! Markdown. Rules checked (from the Agent Skills specification): `name` is 1–64 characters of
//! lowercase letters, digits and hyphens, not starting or ending with a hyphen, and matches the folder
//! name; `description` is 1–1024 characters.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Maximum length of a skill `name`, characters.
pub const MAX_NAME_LEN: usize = 64;
/// Maximum length of a skill `description`, characters.
pub const MAX_DESCRIPTION_LEN: usize = 1024;

/// The frontmatter fields skillscope reads from a SKILL.md.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frontmatter {
    /// Skill name (`name:`).
    pub name: String,
    /// One-paragraph description shown to agents (`description:`).
    pub description: String,
}

/// How bad a SKILL.md problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The skill cannot be loaded by a harness (no frontmatter, no name or description).
    Error,
    /// The skill loads but breaks a convention (name format, name ≠ folder, length).
    Warning,
}

/// One problem found in a SKILL.md.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillProblem {
    /// Error or warning.
    pub severity: Severity,
    /// Human-readable description, naming the field.
    pub message: String,
}

/// A skill folder found on disk.
#[derive(Debug, Clone, Serialize)]
pub struct Skill {
    /// Folder name (`skills/<dir_name>/`).
    pub dir_name: String,
    /// Absolute folder path.
    pub dir: PathBuf,
    /// Parsed frontmatter, when it could be read.
    pub frontmatter: Option<Frontmatter>,
    /// Problems found; empty for a clean skill.
    pub problems: Vec<SkillProblem>,
}

impl Skill {
    /// True when no problem of [`Severity::Error`] was found.
    pub fn is_valid(&self) -> bool {
        !self.problems.iter().any(|p| p.severity == Severity::Error)
    }

    /// Loads `<dir>/SKILL.md`. Never fails: an unreadable file becomes a problem.
    pub fn load(dir: &Path) -> Skill {
        let dir_name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let path = dir.join("SKILL.md");
        let (frontmatter, problems) = match std::fs::read_to_string(&path) {
            Ok(text) => check_skill_md(&text, Some(&dir_name)),
            Err(e) => (
                None,
                vec![SkillProblem {
                    severity: Severity::Error,
                    message: format!("{}: {e}", path.display()),
                }],
            ),
        };
        Skill {
            dir_name,
            dir: dir.to_path_buf(),
            frontmatter,
            problems,
        }
    }
}

/// The SHA-256 of a skill folder (lowercase hex): over the lines `path NUL sha256 LF`, one per
/// file, sorted by `path` — the file's path relative to the folder with `/` between components,
/// and the lowercase hex SHA-256 of its bytes (of a symbolic link: of the path it points to; links
/// are never followed). Folders themselves add nothing, so an empty folder and a missing one hash
/// alike. Paths cannot hold NUL or LF in any skill skillscope accepts, so the encoding is
/// unambiguous. Exports, curated snapshots, generated skills and the skills a trial's agent could
/// see ([`super::exposure`]) are all hashed this way, so equal hashes mean equal files.
pub fn folder_hash<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    use sha2::{Digest, Sha256};
    let mut pairs: Vec<(&str, &str)> = files.into_iter().collect();
    pairs.sort_unstable();
    let mut h = Sha256::new();
    for (path, sha) in pairs {
        h.update(path.as_bytes());
        h.update([0u8]);
        h.update(sha.as_bytes());
        h.update([b'\n']);
    }
    hex::encode(h.finalize())
}

/// A skill folder's [`folder_hash`] with its file count and bytes (a link's bytes are its
/// target's path).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FolderDigest {
    /// [`folder_hash`].
    pub sha256: String,
    /// Files (and links) in the folder, at any depth.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
}

/// Hashes the skill folder `dir` on this machine ([`folder_hash`]); `dir` itself may be a link
/// to a folder, nothing inside it is followed.
///
/// # Errors
/// The I/O error of the first entry that cannot be read, naming its path.
pub fn hash_skill_dir(dir: &Path) -> std::io::Result<FolderDigest> {
    use sha2::{Digest, Sha256};
    let mut files: Vec<(String, String)> = Vec::new();
    let mut bytes = 0u64;
    let named = |p: &Path, e: std::io::Error| {
        std::io::Error::new(e.kind(), format!("{}: {e}", p.display()))
    };
    for entry in walkdir::WalkDir::new(dir).follow_links(false).min_depth(1) {
        let entry = entry.map_err(|e| {
            let p = e.path().unwrap_or(dir).to_path_buf();
            named(&p, e.into())
        })?;
        let ft = entry.file_type();
        let content: Vec<u8> = if ft.is_symlink() {
            use std::os::unix::ffi::OsStrExt;
            std::fs::read_link(entry.path())
                .map_err(|e| named(entry.path(), e))?
                .as_os_str()
                .as_bytes()
                .to_vec()
        } else if ft.is_file() {
            std::fs::read(entry.path()).map_err(|e| named(entry.path(), e))?
        } else {
            continue;
        };
        let rel = entry.path().strip_prefix(dir).unwrap_or(entry.path());
        let rel: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        bytes += content.len() as u64;
        files.push((rel.join("/"), hex::encode(Sha256::digest(&content))));
    }
    Ok(FolderDigest {
        sha256: folder_hash(files.iter().map(|(p, s)| (p.as_str(), s.as_str()))),
        files: files.len(),
        bytes,
    })
}

/// Folder names beside skills that are not meant as skills (lower case): licence texts and
/// notices shipped with a task's skills (the real SkillsBench tasks keep theirs in
/// `environment/skills/licenses/`). Hidden folders (`.git`) and `__pycache__`-like ones are not
/// skills either.
pub const NOT_SKILL_DIRS: [&str; 7] = [
    "licenses",
    "licences",
    "license",
    "licence",
    "legal",
    "notices",
    "third_party",
];

/// True when the sub-folder `dir` of a `skills/` folder is not meant as a skill: it has no
/// `SKILL.md` and its name is one of [`NOT_SKILL_DIRS`], or starts with `.` or `_`. A folder
/// without `SKILL.md` under any other name is a skill that lacks it (an error).
pub fn is_not_a_skill(dir: &Path) -> bool {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    !dir.join("SKILL.md").exists()
        && (NOT_SKILL_DIRS.contains(&name.as_str())
            || name.starts_with('.')
            || name.starts_with('_'))
}

/// Lists the skills in a `skills/` folder (every sub-folder is a skill but those
/// [`is_not_a_skill`] leaves out), sorted by folder name. A missing folder gives an empty list.
pub fn scan_skills_dir(dir: &Path) -> Vec<Skill> {
    skill_dirs(dir).0.iter().map(|d| Skill::load(d)).collect()
}

/// The sub-folders of a `skills/` folder, sorted: (the skills, the folders that are not skills —
/// [`is_not_a_skill`]). A missing folder gives two empty lists.
pub fn skill_dirs(dir: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (Vec::new(), Vec::new());
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.into_iter().partition(|d| !is_not_a_skill(d))
}

/// Splits a SKILL.md into its YAML frontmatter text and the Markdown body.
/// Returns `None` when the file does not open with a `---` line closed by another `---` line.
pub fn split_frontmatter(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// Parses and checks a SKILL.md. `dir_name`, when given, must equal the frontmatter `name`.
///
/// Returns the frontmatter (when `name` and `description` could be read) and every problem found.
pub fn check_skill_md(
    text: &str,
    dir_name: Option<&str>,
) -> (Option<Frontmatter>, Vec<SkillProblem>) {
    let mut problems = Vec::new();
    let err = |m: String| SkillProblem {
        severity: Severity::Error,
        message: m,
    };
    let warn = |m: String| SkillProblem {
        severity: Severity::Warning,
        message: m,
    };
    let Some((yaml, _body)) = split_frontmatter(text) else {
        problems.push(err(
            "no YAML frontmatter (the file must open with a `---` block)".into(),
        ));
        return (None, problems);
    };
    let value: serde_yaml_ng::Value = match serde_yaml_ng::from_str(yaml) {
        Ok(v) => v,
        Err(e) => {
            problems.push(err(format!("frontmatter is not valid YAML: {e}")));
            return (None, problems);
        }
    };
    let Some(map) = value.as_mapping() else {
        problems.push(err("frontmatter is not a YAML mapping".into()));
        return (None, problems);
    };
    let field = |key: &str| -> Result<Option<String>, String> {
        match map.get(key) {
            None | Some(serde_yaml_ng::Value::Null) => Ok(None),
            Some(serde_yaml_ng::Value::String(s)) => Ok(Some(s.trim().to_string())),
            Some(_) => Err(format!("`{key}` must be a string")),
        }
    };
    let name = match field("name") {
        Ok(Some(n)) if !n.is_empty() => Some(n),
        Ok(_) => {
            problems.push(err("missing `name`".into()));
            None
        }
        Err(m) => {
            problems.push(err(m));
            None
        }
    };
    let description = match field("description") {
        Ok(Some(d)) if !d.is_empty() => Some(d),
        Ok(_) => {
            problems.push(err("missing `description`".into()));
            None
        }
        Err(m) => {
            problems.push(err(m));
            None
        }
    };
    if let Some(n) = &name {
        if n.chars().count() > MAX_NAME_LEN {
            problems.push(warn(format!(
                "`name` is longer than {MAX_NAME_LEN} characters"
            )));
        }
        let charset_ok = n
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !charset_ok || n.starts_with('-') || n.ends_with('-') {
            problems.push(warn(format!(
                "`name` {n:?} should be lowercase letters, digits and hyphens"
            )));
        }
        if let Some(d) = dir_name
            && d != n
        {
            problems.push(warn(format!("`name` {n:?} differs from its folder {d:?}")));
        }
    }
    if let Some(d) = &description
        && d.chars().count() > MAX_DESCRIPTION_LEN
    {
        problems.push(warn(format!(
            "`description` is longer than {MAX_DESCRIPTION_LEN} characters"
        )));
    }
    let frontmatter = match (name, description) {
        (Some(name), Some(description)) => Some(Frontmatter { name, description }),
        _ => None,
    };
    (frontmatter, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_name_and_description() {
        let (fm, problems) = check_skill_md(
            "---\nname: mesh-analysis\ndescription: |\n  Parse STL files.\n  Compute volume.\n---\n# Body\n",
            Some("mesh-analysis"),
        );
        let fm = fm.unwrap();
        assert_eq!(fm.name, "mesh-analysis");
        assert_eq!(fm.description, "Parse STL files.\nCompute volume.");
        assert!(problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn missing_frontmatter_is_an_error() {
        let (fm, problems) = check_skill_md("# Just markdown\n", None);
        assert!(fm.is_none());
        assert_eq!(problems[0].severity, Severity::Error);
    }

    #[test]
    fn unclosed_frontmatter_is_an_error() {
        let (fm, problems) = check_skill_md("---\nname: x\ndescription: y\n", None);
        assert!(fm.is_none());
        assert!(problems[0].message.contains("frontmatter"));
    }

    #[test]
    fn missing_description_and_bad_yaml() {
        let (_, p) = check_skill_md("---\nname: x\n---\n", None);
        assert!(p.iter().any(|p| p.message.contains("description")));
        let (_, p) = check_skill_md("---\nname: [x\n---\n", None);
        assert!(p[0].message.contains("YAML"), "{p:?}");
    }

    #[test]
    fn name_conventions_are_warnings() {
        let (fm, p) = check_skill_md("---\nname: My_Skill\ndescription: d\n---\n", Some("other"));
        assert!(fm.is_some());
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p.iter().all(|p| p.severity == Severity::Warning));
    }

    #[test]
    fn crlf_and_bom_are_accepted() {
        let (fm, p) = check_skill_md(
            "\u{feff}---\r\nname: a\r\ndescription: b\r\n---\r\nbody",
            None,
        );
        assert_eq!(fm.unwrap().name, "a");
        assert!(p.is_empty());
    }
}
