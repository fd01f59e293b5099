//! Dockerfile rewriting for skill conditions — pure text in, text out.
//!
//! SkillsBench task Dockerfiles copy `environment/skills` into every harness's skills folder with
//! lines such as `COPY skills /root/.claude/skills` (all 87 tasks; some with `skills/` or
//! `skills/<one>`). For the no-skills condition those sources are removed (and the whole line when no
//! source is left) and `skills/` is left out of the build context, so nothing can reach the image. For
//! conditions with skills, a block copying `skills/` to every standard harness folder is appended.
//! The parser follows the Dockerfile reference: `\` line continuations, comment lines, JSON (exec)
//! form, `--flag` options, and heredocs (`<<EOF` … `EOF`) whose bodies are never read as instructions; [`heredoc`]
//! rewrites them for builders that do not read them.

/// Where SkillsBench Dockerfiles put skills for each harness (Claude Code, Codex, OpenCode, Goose,
/// Factory, portable agents, Gemini CLI, Qwen). Conditions with skills copy `skills/` to all of them.
pub const SKILL_DESTINATIONS: &[&str] = &[
    "/root/.claude/skills",
    "/root/.codex/skills",
    "/root/.opencode/skill",
    "/root/.goose/skills",
    "/root/.factory/skills",
    "/root/.agents/skills",
    "/root/.gemini/skills",
    "/root/.qwen/skills",
];

/// Path of the extra CA bundle inside images (see [`RewriteOptions::ca_bundle_context_path`]).
pub const CA_BUNDLE_IMAGE_PATH: &str = "/usr/local/share/skillscope/ca-bundle.crt";

/// Environment variables pointed at the extra CA bundle: OpenSSL/Python/uv, requests, pip, Node,
/// curl and git.
pub const CA_ENV_VARS: &[&str] = &[
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "PIP_CERT",
    "NODE_EXTRA_CA_CERTS",
    "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO",
];

pub mod heredoc;
pub mod skills;

pub use heredoc::{ContextFile, Heredoc, HeredocRewrite, rewrite_heredocs};

/// One logical Dockerfile instruction: physical lines `start..end` (0-based, end exclusive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    /// Upper-cased keyword (`FROM`, `COPY`, …).
    pub keyword: String,
    /// The arguments, continuation lines trimmed and joined with a space.
    pub args: String,
    /// The arguments as BuildKit's parser joins them: each `\` continuation (and the blanks after
    /// it) removed and the lines concatenated as written; comment and blank lines skipped.
    pub command: String,
    /// Heredocs opened by a `RUN`, `COPY` or `ADD`, in order, with their bodies.
    pub heredocs: Vec<Heredoc>,
    /// First physical line.
    pub start: usize,
    /// One past the last physical line, heredoc bodies included.
    pub end: usize,
}

/// Splits a Dockerfile into instructions, skipping comments and blank lines.
pub fn parse_instructions(text: &str) -> Vec<Instruction> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let trimmed = lines[i].trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            i += 1;
            continue;
        }
        let start = i;
        let mut joined = String::new();
        let mut raw = String::new();
        loop {
            let line = lines[i].trim_end();
            let t = line.trim_start();
            let skipped = i != start && (t.starts_with('#') || t.is_empty());
            i += 1;
            if !skipped {
                let (body, cont) = match line.strip_suffix('\\') {
                    Some(b) => (b, true),
                    None => (line, false),
                };
                if !joined.is_empty() {
                    joined.push(' ');
                }
                joined.push_str(body.trim());
                raw.push_str(if i - 1 == start {
                    body.trim_start()
                } else {
                    body
                });
                if !cont {
                    break;
                }
            }
            if i >= lines.len() {
                break;
            }
        }
        let (keyword, args) = match joined.split_once(char::is_whitespace) {
            Some((k, a)) => (k.to_ascii_uppercase(), a.trim().to_string()),
            None => (joined.to_ascii_uppercase(), String::new()),
        };
        let command = match raw.split_once(char::is_whitespace) {
            Some((_, rest)) => rest.trim_start().to_string(),
            None => String::new(),
        };
        // Heredoc bodies follow the instruction line(s).
        let mut heredocs = Vec::new();
        if heredoc::takes_heredocs(&keyword) {
            for (name, chomp, expand) in heredoc::heredocs_in(&command) {
                let mut doc = Heredoc {
                    name,
                    chomp,
                    expand,
                    body: String::new(),
                    terminated: false,
                };
                while i < lines.len() {
                    let l = lines[i];
                    i += 1;
                    if doc.is_end(l) {
                        doc.terminated = true;
                        break;
                    }
                    doc.body.push_str(l);
                    doc.body.push('\n');
                }
                heredocs.push(doc);
            }
        }
        out.push(Instruction {
            keyword,
            args,
            command,
            heredocs,
            start,
            end: i,
        });
    }
    out
}

/// What to change in a Dockerfile.
#[derive(Debug, Clone, Default)]
pub struct RewriteOptions {
    /// Remove every `COPY`/`ADD` source under `skills` (no-skills condition).
    pub strip_skill_copies: bool,
    /// Append `COPY skills/ <dest>/` for each of these destinations (conditions with skills).
    pub append_skill_destinations: Vec<String>,
    /// When set, the build context holds the extra CA bundle at this relative path; it is copied to
    /// [`CA_BUNDLE_IMAGE_PATH`] right after every `FROM` and the [`CA_ENV_VARS`] point at it.
    pub ca_bundle_context_path: Option<String>,
}

/// The rewritten Dockerfile and a log of what changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// New Dockerfile text.
    pub text: String,
    /// Human-readable changes (`removed line 12: COPY skills /root/.claude/skills`, …).
    pub changes: Vec<String>,
}

/// True when a COPY/ADD source refers to the build context's `skills` folder or something in it.
pub fn is_skill_source(src: &str) -> bool {
    let mut s = src.trim();
    while let Some(rest) = s.strip_prefix("./") {
        s = rest;
    }
    let s = s.trim_start_matches('/').trim_end_matches('/');
    if s == "skills" || s.starts_with("skills/") {
        return true;
    }
    if s.contains(['*', '?', '[']) {
        let first = s.split('/').next().unwrap_or(s);
        if let Ok(p) = glob::Pattern::new(first) {
            return p.matches("skills");
        }
    }
    false
}

/// Splits COPY/ADD arguments into (flags, sources, destination). `None` when there is no
/// destination. JSON form (`["a", "b"]`) is accepted.
pub(crate) fn split_copy_args(args: &str) -> Option<(Vec<String>, Vec<String>, String)> {
    let mut flags = Vec::new();
    let mut rest = args.trim();
    while rest.starts_with("--") {
        let (flag, tail) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        flags.push(flag.to_string());
        rest = tail.trim_start();
    }
    let mut parts: Vec<String> = if rest.starts_with('[') {
        serde_json::from_str(rest).ok()?
    } else {
        rest.split_whitespace().map(str::to_string).collect()
    };
    if parts.len() < 2 {
        return None;
    }
    let dest = parts.pop()?;
    Some((flags, parts, dest))
}

/// Applies [`RewriteOptions`] to a Dockerfile.
pub fn rewrite(text: &str, opts: &RewriteOptions) -> Rewrite {
    let lines: Vec<&str> = text.lines().collect();
    // For each physical line: Some(replacement lines) or None = keep.
    let mut replace: Vec<Option<Vec<String>>> = vec![None; lines.len()];
    let mut after: Vec<Vec<String>> = vec![Vec::new(); lines.len()];
    let mut changes = Vec::new();
    for ins in parse_instructions(text) {
        let original = lines[ins.start..ins.end].join("\n");
        if opts.strip_skill_copies && (ins.keyword == "COPY" || ins.keyword == "ADD") {
            let Some((flags, sources, dest)) = split_copy_args(&ins.args) else {
                continue;
            };
            if flags.iter().any(|f| f.starts_with("--from")) {
                continue;
            }
            let kept: Vec<String> = sources
                .iter()
                .filter(|s| !is_skill_source(s))
                .cloned()
                .collect();
            if kept.len() == sources.len() {
                continue;
            }
            for r in &mut replace[ins.start..ins.end] {
                *r = Some(Vec::new());
            }
            if kept.is_empty() {
                changes.push(format!(
                    "removed line {}: {}",
                    ins.start + 1,
                    original.trim()
                ));
                replace[ins.start] = Some(vec![format!(
                    "# skillscope (no-skills): removed `{}`",
                    one_line(&original)
                )]);
            } else {
                let mut words = vec![ins.keyword.clone()];
                words.extend(flags);
                words.extend(kept);
                words.push(dest);
                let new = words.join(" ");
                changes.push(format!(
                    "rewrote line {}: {} -> {new}",
                    ins.start + 1,
                    one_line(&original)
                ));
                replace[ins.start] = Some(vec![new]);
            }
        }
        if ins.keyword == "FROM"
            && let Some(ca) = &opts.ca_bundle_context_path
        {
            let envs: Vec<String> = CA_ENV_VARS
                .iter()
                .map(|v| format!("{v}={CA_BUNDLE_IMAGE_PATH}"))
                .collect();
            after[ins.end - 1] = vec![
                format!("COPY {ca} {CA_BUNDLE_IMAGE_PATH}"),
                format!("ENV {}", envs.join(" ")),
            ];
            changes.push(format!(
                "added the extra CA bundle after line {}",
                ins.start + 1
            ));
        }
    }
    let mut out = String::with_capacity(text.len() + 512);
    for (i, line) in lines.iter().enumerate() {
        match &replace[i] {
            Some(new) => {
                for l in new {
                    out.push_str(l);
                    out.push('\n');
                }
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
        for l in &after[i] {
            out.push_str(l);
            out.push('\n');
        }
    }
    if !opts.append_skill_destinations.is_empty() {
        out.push_str("\n# skillscope: skills for every harness\n");
        for d in &opts.append_skill_destinations {
            out.push_str(&format!("COPY skills/ {}/\n", d.trim_end_matches('/')));
        }
        changes.push(format!(
            "appended COPY skills/ to {} harness folders",
            opts.append_skill_destinations.len()
        ));
    }
    Rewrite { text: out, changes }
}

fn one_line(s: &str) -> String {
    s.split_whitespace()
        .filter(|w| *w != "\\")
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SKILLSBENCH: &str = "FROM ubuntu:24.04\nENV DEBIAN_FRONTEND=noninteractive\n\nRUN apt-get update && apt-get install -y python3 \\\n    python3-pip\n\nWORKDIR /root\nCOPY scan_data.stl /root/\n# Claude Code\nCOPY skills /root/.claude/skills\nCOPY skills/ /root/.codex/skills/\nCOPY ./skills /root/.opencode/skill\nCOPY skills/gmail-skill /root/verifier-skills/gmail-skill\nCOPY --chown=1000 skills data/ /root/\nCOPY [\"skills\", \"/root/.qwen/skills\"]\nADD \\\n  skills \\\n  /root/.goose/skills\nCOPY --from=auto /home /home\nCMD [\"/bin/bash\"]\n";

    fn no_skills() -> RewriteOptions {
        RewriteOptions {
            strip_skill_copies: true,
            ..Default::default()
        }
    }

    #[test]
    fn strips_every_skill_copy_form() {
        let r = rewrite(SKILLSBENCH, &no_skills());
        let live: Vec<&str> = r
            .text
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .collect();
        let live = live.join("\n");
        assert!(!live.contains("skills"), "{live}");
        assert!(live.contains("COPY --chown=1000 data/ /root/"), "{live}");
        assert!(live.contains("COPY scan_data.stl /root/"));
        assert!(live.contains("COPY --from=auto /home /home"));
        assert!(live.contains("python3-pip"));
        assert_eq!(r.changes.len(), 7, "{:#?}", r.changes);
    }

    #[test]
    fn heredoc_bodies_are_not_instructions() {
        let df = "FROM python:3.11-slim\nRUN python3 - <<'PY'\nfrom huggingface_hub import x\nCOPY skills /nope\nPY\nCOPY skills /root/.claude/skills\n";
        let ins = parse_instructions(df);
        assert_eq!(ins.len(), 3);
        assert_eq!(ins[1].keyword, "RUN");
        assert_eq!((ins[1].start, ins[1].end), (1, 5));
        let r = rewrite(
            df,
            &RewriteOptions {
                strip_skill_copies: true,
                ca_bundle_context_path: Some(".skillscope/ca.crt".into()),
                ..Default::default()
            },
        );
        // Only one FROM gets the CA lines, the heredoc line is untouched.
        assert_eq!(r.text.matches("ENV SSL_CERT_FILE").count(), 1);
        assert!(r.text.contains("COPY skills /nope"));
        assert!(!r.text.contains("COPY skills /root/.claude/skills\n"));
    }

    #[test]
    fn ca_bundle_after_each_from_and_skills_block_at_end() {
        let df =
            "FROM a AS build\nRUN make\nFROM --platform=linux/amd64 b\nCOPY --from=build /x /x\n";
        let r = rewrite(
            df,
            &RewriteOptions {
                strip_skill_copies: false,
                append_skill_destinations: SKILL_DESTINATIONS
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
                ca_bundle_context_path: Some(".skillscope/ca-bundle.crt".into()),
            },
        );
        let lines: Vec<&str> = r.text.lines().collect();
        assert_eq!(
            lines[1],
            format!("COPY .skillscope/ca-bundle.crt {CA_BUNDLE_IMAGE_PATH}")
        );
        assert!(lines[2].starts_with("ENV SSL_CERT_FILE="));
        assert_eq!(r.text.matches("COPY .skillscope/ca-bundle.crt").count(), 2);
        assert!(r.text.ends_with("COPY skills/ /root/.qwen/skills/\n"));
    }

    #[test]
    fn skill_source_matching() {
        for s in [
            "skills",
            "skills/",
            "./skills",
            "skills/a/b",
            "skill*",
            "/skills",
        ] {
            assert!(is_skill_source(s), "{s}");
        }
        for s in ["skills2", "data/skills", "x", "*.py"] {
            assert!(!is_skill_source(s), "{s}");
        }
    }

    #[test]
    fn untouched_when_nothing_to_do() {
        let df = "FROM busybox\nRUN true\n";
        let r = rewrite(df, &RewriteOptions::default());
        assert_eq!(r.text, df);
        assert!(r.changes.is_empty());
    }
}
