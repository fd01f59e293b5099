//! Skill content: what a skill set holds, measured the way the SkillsBench paper buckets skills,
//! so the plan's expectations from the paper ("2–3 skills optimal", "detailed beats
//! comprehensive") can be checked on our own data.
//!
//! Per skill: the SKILL.md body length in tokens (after the YAML frontmatter), counted with the
//! `o200k_base` BPE of OpenAI's tiktoken (`tiktoken-rs`, which embeds the encoding), the files
//! beside SKILL.md, the SOP and Warning entries Acontext's learner writes
//! ([`entry_kind`]), and — for a learned version of a curated skill — lines added and removed
//! against the curated SKILL.md (`similar`'s line diff).
//!
//! Buckets (the paper's, from its typical sizes): **compact** (≈ 845 tokens) below
//! [`DETAILED_FROM`], **detailed** (≈ 1,165) up to [`COMPREHENSIVE_FROM`], **comprehensive** from
//! 2,500 tokens; per task **1**, **2–3** or **4+** skills. The compact/detailed boundary is the
//! midpoint of the two typical sizes, 1,005 tokens.

use std::collections::BTreeSet;
use std::path::Path;

use serde::Serialize;

/// The tokenizer, named in reports.
pub const TOKENIZER: &str = "o200k_base (OpenAI tiktoken BPE, via tiktoken-rs 0.12)";

/// First token count of a detailed skill (midpoint of the paper's 845 and 1,165).
pub const DETAILED_FROM: usize = 1_005;
/// First token count of a comprehensive skill.
pub const COMPREHENSIVE_FROM: usize = 2_500;

/// Tokens of `text` in `o200k_base` (special-token text counts as ordinary text).
pub fn count_tokens(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len()
}

/// A learned entry of a SKILL.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// Standard operating procedure (from a trial that passed).
    Sop,
    /// Warning (from a trial that failed).
    Warning,
}

/// Splits Markdown into sections at every `#` or `##` heading outside front matter and code
/// fences; the first section is whatever comes before the first such heading.
pub fn sections(text: &str) -> Vec<&str> {
    let mut cuts = vec![0];
    let mut pos = 0;
    let mut fence: Option<&str> = None;
    let mut front = false;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let t = line.trim_end_matches(['\n', '\r']);
        let lead = t.trim_start();
        if i == 0 && t == "---" {
            front = true;
        } else if front {
            if t == "---" || t == "..." {
                front = false;
            }
        } else if let Some(f) = fence {
            if lead.starts_with(f) {
                fence = None;
            }
        } else if lead.starts_with("```") {
            fence = Some("```");
        } else if lead.starts_with("~~~") {
            fence = Some("~~~");
        } else if pos > 0 && is_top_heading(t) {
            cuts.push(pos);
        }
        pos += line.len();
    }
    cuts.push(text.len());
    cuts.windows(2)
        .map(|w| &text[w[0]..w[1]])
        .filter(|s| !s.is_empty())
        .collect()
}

fn is_top_heading(line: &str) -> bool {
    ["#", "##"]
        .iter()
        .any(|h| line == *h || line.starts_with(&format!("{h} ")))
}

/// The learned-entry kind of a section: a `## …` section whose bullets carry two or more of an
/// SOP's keys (`Principle`, `When to Apply`, `Steps`) or a Warning's (`Symptom`, `Root Cause`,
/// `Correct Approach`, `Prevention`); keys may be bold. `None` for anything else.
pub fn entry_kind(section: &str) -> Option<EntryKind> {
    let mut lines = section.lines();
    if !lines.next()?.starts_with("## ") {
        return None;
    }
    let mut sop = BTreeSet::new();
    let mut warning = BTreeSet::new();
    for line in lines {
        let l = line.trim_start();
        let Some(rest) = ["- ", "* ", "+ "].iter().find_map(|b| l.strip_prefix(b)) else {
            continue;
        };
        let Some((key, _)) = rest.trim_start_matches(['*', '_']).split_once(':') else {
            continue;
        };
        let key = key.trim_end_matches(['*', '_']).trim().to_ascii_lowercase();
        match key.as_str() {
            "principle" | "when to apply" | "steps" => {
                sop.insert(key);
            }
            "symptom" | "root cause" | "correct approach" | "prevention" => {
                warning.insert(key);
            }
            _ => {}
        }
    }
    if sop.len() >= 2 && sop.len() >= warning.len() {
        Some(EntryKind::Sop)
    } else if warning.len() >= 2 {
        Some(EntryKind::Warning)
    } else {
        None
    }
}

/// The SKILL.md body: the text after its YAML frontmatter (all of it without one).
pub fn body(skill_md: &str) -> &str {
    let Some(rest) = skill_md.strip_prefix("---") else {
        return skill_md;
    };
    let rest = rest
        .trim_start_matches(['\r'])
        .strip_prefix('\n')
        .unwrap_or(rest);
    let mut pos = 0;
    for line in rest.split_inclusive('\n') {
        pos += line.len();
        let t = line.trim_end_matches(['\n', '\r']);
        if t == "---" || t == "..." {
            return &rest[pos..];
        }
    }
    skill_md
}

/// The paper's size bucket of a skill (or of a task's skills, by their mean size).
pub fn size_bucket(tokens: f64) -> &'static str {
    if tokens >= COMPREHENSIVE_FROM as f64 {
        "comprehensive"
    } else if tokens >= DETAILED_FROM as f64 {
        "detailed"
    } else {
        "compact"
    }
}

/// The paper's bucket of a task's skill count.
pub fn count_bucket(n: usize) -> &'static str {
    match n {
        0 => "none",
        1 => "1",
        2 | 3 => "2–3",
        _ => "4+",
    }
}

/// What one skill holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillContent {
    /// Folder name.
    pub name: String,
    /// SKILL.md body tokens (`o200k_base`).
    pub body_tokens: usize,
    /// [`size_bucket`] of it.
    pub size: &'static str,
    /// Files beside SKILL.md (any depth).
    pub files: usize,
    /// SOP entries.
    pub sops: usize,
    /// Warning entries.
    pub warnings: usize,
    /// Lines added against the curated SKILL.md of the same name, for a learned version.
    pub lines_added: Option<usize>,
    /// Lines removed against it.
    pub lines_removed: Option<usize>,
}

/// Measures a SKILL.md text; `curated` is the curated SKILL.md of the same skill, when there is
/// one, to count the lines a learned version changed.
pub fn measure(name: &str, skill_md: &str, files: usize, curated: Option<&str>) -> SkillContent {
    let body_tokens = count_tokens(body(skill_md));
    let (mut sops, mut warnings) = (0, 0);
    for s in sections(skill_md) {
        match entry_kind(s) {
            Some(EntryKind::Sop) => sops += 1,
            Some(EntryKind::Warning) => warnings += 1,
            None => {}
        }
    }
    let (lines_added, lines_removed) = match curated {
        Some(old) if old != skill_md => {
            let diff = similar::TextDiff::from_lines(old, skill_md);
            let (mut a, mut r) = (0, 0);
            for c in diff.iter_all_changes() {
                match c.tag() {
                    similar::ChangeTag::Insert => a += 1,
                    similar::ChangeTag::Delete => r += 1,
                    similar::ChangeTag::Equal => {}
                }
            }
            (Some(a), Some(r))
        }
        Some(_) => (Some(0), Some(0)),
        None => (None, None),
    };
    SkillContent {
        name: name.to_string(),
        body_tokens,
        size: size_bucket(body_tokens as f64),
        files,
        sops,
        warnings,
        lines_added,
        lines_removed,
    }
}

/// The skills of a `skills/` folder (`<name>/SKILL.md`), by name, each with its SKILL.md text and
/// the number of other files in its folder. Unreadable skills are left out; symlinks are not
/// followed.
pub fn read_skills_dir(dir: &Path) -> Vec<(String, String, usize)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(String, String, usize)> = rd
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let path = e.path();
            let md = crate::fs::read_capped(&path.join("SKILL.md"), 4 * 1024 * 1024).ok()?;
            let files = walkdir::WalkDir::new(&path)
                .follow_links(false)
                .into_iter()
                .filter_map(Result::ok)
                .filter(|f| f.file_type().is_file() && f.path() != path.join("SKILL.md"))
                .count();
            Some((
                e.file_name().to_string_lossy().into_owned(),
                String::from_utf8_lossy(&md).into_owned(),
                files,
            ))
        })
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_of_known_strings() {
        // o200k_base: "hello world" is two tokens, the empty string none.
        assert_eq!(count_tokens(""), 0);
        assert_eq!(count_tokens("hello world"), 2);
        assert_eq!(count_tokens("Hello, world!"), 4);
    }

    #[test]
    fn bodies_buckets_and_entries() {
        let md = "---\nname: a\ndescription: b\n---\n# A\n\n## Solve it\n- Principle: x\n- Steps: y\n\n## Avoid it\n- **Symptom**: s\n- Root Cause: r\n";
        assert!(body(md).starts_with("# A"));
        assert_eq!(body("# no frontmatter"), "# no frontmatter");
        let c = measure("a", md, 2, None);
        assert_eq!((c.sops, c.warnings, c.files), (1, 1, 2));
        assert_eq!(c.size, "compact");
        assert_eq!((c.lines_added, c.lines_removed), (None, None));
        let curated = "---\nname: a\ndescription: b\n---\n# A\n";
        let l = measure("a", md, 2, Some(curated));
        assert_eq!((l.lines_added, l.lines_removed), (Some(8), Some(0)));
        assert_eq!(size_bucket(1004.0), "compact");
        assert_eq!(size_bucket(1005.0), "detailed");
        assert_eq!(size_bucket(2500.0), "comprehensive");
        assert_eq!(
            [0, 1, 2, 3, 4, 9].map(count_bucket),
            ["none", "1", "2–3", "2–3", "4+", "4+"]
        );
    }
}
