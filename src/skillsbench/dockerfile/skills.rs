//! Where a task's Dockerfile puts its skills, and what reads them at build time — so that the
//! no-skills image builds wherever the curated one does, and each task's own steps build once.
//!
//! Every `COPY`/`ADD` of `skills…` in the final stage is one of:
//! - **for the agent, read by no later step** (`COPY skills /root/.claude/skills` in 86 of 87 real
//!   tasks): the no-skills image leaves it out; a condition with skills gets it as one of the last
//!   layers, over the no-skills image (its destination made absolute), so the task's own steps build
//!   once for every condition;
//! - **for the agent, read by a later build step** (`RUN cd /root/.claude/skills/gmail-skill && npm
//!   install`): kept where it is so the step runs, and in the no-skills image removed right after
//!   the last step that reads it (`RUN rm -rf` of exactly what it copied), before the agent starts;
//!   the files stay only in a lower layer the container cannot see. A condition with skills keeps
//!   the task's own order;
//! - **for the verifier** (its destination is not a harness skills folder and the task's `tests/`
//!   name it, as scheduling-email-assistant's `COPY skills/gmail-skill /root/verifier-skills/…`):
//!   moved with the steps that read it into a build stage of its own (`skillscope-verifier`), from
//!   which the runner copies that folder into the container when the verifier starts — never part
//!   of the agent's image, in any condition.
//!
//! A step reads a copy when it names its destination (absolute, as written, or under `~`/`$HOME`),
//! names one of the copied skills as `…/skills/<name>` (a loop over harness folders:
//! `/root/.$agent_dir/skills/gmail-skill`), names `SKILL.md`, works inside it (`WORKDIR`), or copies
//! into it. Skill copies in earlier build stages are removed for no-skills as before and keep the
//! task's own order otherwise. Pure: text in, text out.

use super::{Instruction, is_skill_source, parse_instructions, split_copy_args};

/// The harness skills folders the agent looks in (a destination under one is always the agent's).
const AGENT_MARKERS: &[&str] = &[
    "/.claude/",
    "/.codex/",
    "/.opencode/",
    "/.goose/",
    "/.factory/",
    "/.agents/",
    "/.gemini/",
    "/.qwen/",
    "/.cursor/",
    "/.github/skills",
    "/.terminus/",
];

/// The name of the build stage holding the verifier's copies.
pub const VERIFIER_STAGE: &str = "skillscope-verifier";
/// The name given to a final stage that has none, so the verifier stage can start from it.
pub const AGENT_STAGE: &str = "skillscope-agent";

/// What a skill copy is for (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyKind {
    /// For the agent; no later step reads it.
    Agent,
    /// For the agent; later build steps read it.
    BuildTime,
    /// For the verifier.
    Verifier,
    /// In an earlier build stage.
    OtherStage,
}

/// One `COPY`/`ADD` with skill sources.
#[derive(Debug, Clone)]
pub struct SkillCopy {
    /// Index of the instruction.
    pub index: usize,
    /// `COPY` or `ADD`.
    pub keyword: String,
    /// Its `--flags`.
    pub flags: Vec<String>,
    /// Its skill sources (`skills`, `skills/gmail-skill`).
    pub sources: Vec<String>,
    /// Its other sources (kept in place in every image).
    pub others: Vec<String>,
    /// The destination as written.
    pub dest: String,
    /// The destination made absolute with the stage's `WORKDIR`, when that is known.
    pub dest_abs: Option<String>,
    /// What it is for.
    pub kind: CopyKind,
    /// Instructions of the same stage that read it.
    pub readers: Vec<usize>,
    /// The paths it creates (removed after its last reader in the no-skills image).
    pub created: Vec<String>,
}

/// A Dockerfile's skill copies and the facts around them.
#[derive(Debug, Clone)]
pub struct SkillLines {
    /// The instructions.
    pub instructions: Vec<Instruction>,
    /// The skill copies, in order.
    pub copies: Vec<SkillCopy>,
    /// Index of the final stage's `FROM`.
    final_from: Option<usize>,
    /// The final stage's name (`AS name`), when it has one.
    final_name: Option<String>,
    /// `WORKDIR` and `USER` in force before each instruction of the final stage.
    state: Vec<(Option<String>, Option<String>)>,
}

/// True when `hay` names `path` not as a prefix of a longer name (`/root/skills` is not named by
/// `/root/skills2`).
fn names_path(hay: &str, path: &str) -> bool {
    let path = path.trim_end_matches('/');
    if path.is_empty() || path == "/" {
        return false;
    }
    hay.match_indices(path).any(|(i, _)| {
        !hay[i + path.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
    })
}

/// True when `hay` names `…/skills/<name>` or `…/skill/<name>` with `name` a whole path part.
fn names_skill(hay: &str, name: &str) -> bool {
    ["skills/", "skill/"].iter().any(|folder| {
        let needle = format!("{folder}{name}");
        hay.match_indices(&needle).any(|(i, _)| {
            let before = hay[..i].chars().next_back();
            let after = hay[i + needle.len()..].chars().next();
            matches!(
                before,
                Some('/') | Some('.') | Some(' ') | Some('"') | Some('\'') | None
            ) && !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
    })
}

/// `path` resolved against `workdir` (Docker's rule: relative to the current `WORKDIR`).
fn absolute(path: &str, workdir: Option<&str>) -> Option<String> {
    if path.contains('$') {
        return None;
    }
    if path.starts_with('/') {
        return Some(path.to_string());
    }
    let base = workdir?;
    let p = path.trim_start_matches("./");
    Some(format!("{}/{}", base.trim_end_matches('/'), p))
}

/// The forms a step may name an absolute path by: itself, and under `~` / `$HOME` for `/root`.
fn path_forms(abs: &str, written: &str) -> Vec<String> {
    let mut v = vec![abs.to_string()];
    if !written.starts_with('/') && !written.contains('$') {
        v.push(written.trim_start_matches("./").to_string());
    }
    if let Some(rest) = abs.strip_prefix("/root/") {
        for home in ["~/", "$HOME/", "${HOME}/"] {
            v.push(format!("{home}{rest}"));
        }
    }
    v
}

/// What a copy of `sources` to `dest` creates, given the task's skills folder listing
/// (`entries(sub)`: the names in `skills/<sub>`, `None` when it is a file or missing).
fn created_paths(
    sources: &[String],
    dest: &str,
    entries: &dyn Fn(&str) -> Option<Vec<String>>,
) -> Vec<String> {
    let dest = dest.trim_end_matches('/');
    let mut out = Vec::new();
    for s in sources {
        let mut rel = s.trim();
        while let Some(r) = rel.strip_prefix("./") {
            rel = r;
        }
        let rel = rel
            .trim_start_matches('/')
            .trim_end_matches('/')
            .trim_start_matches("skills")
            .trim_start_matches('/');
        if rel.contains(['*', '?', '[']) {
            // A glob: whatever it copies lands in `dest`.
            out.push(dest.to_string());
            continue;
        }
        match entries(rel) {
            Some(names) => out.extend(names.iter().map(|n| format!("{dest}/{n}"))),
            None => {
                let file = rel.rsplit('/').next().unwrap_or(rel);
                out.push(if sources.len() > 1 || dest.ends_with('/') {
                    format!("{dest}/{file}")
                } else {
                    dest.to_string()
                });
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The text of an instruction a reader is looked for in: its arguments and heredoc bodies.
fn text_of(ins: &Instruction) -> String {
    let mut t = ins.command.clone();
    for h in &ins.heredocs {
        t.push('\n');
        t.push_str(&h.body);
    }
    t
}

/// Reads a Dockerfile's skill copies. `tests_text`: the task's `tests/` files, concatenated (a
/// copy they name is the verifier's). `entries(sub)`: the names in the task's `skills/<sub>`
/// (`""`: the skills folder itself), `None` for a file or nothing.
pub fn analyze(
    dockerfile: &str,
    tests_text: &str,
    entries: &dyn Fn(&str) -> Option<Vec<String>>,
) -> SkillLines {
    let instructions = parse_instructions(dockerfile);
    let final_from = instructions.iter().rposition(|i| i.keyword == "FROM");
    let final_name = final_from.and_then(|f| {
        let words: Vec<&str> = instructions[f].args.split_whitespace().collect();
        words
            .iter()
            .position(|w| w.eq_ignore_ascii_case("as"))
            .and_then(|k| words.get(k + 1))
            .map(|n| n.to_string())
    });
    let mut state = Vec::with_capacity(instructions.len());
    let (mut workdir, mut user): (Option<String>, Option<String>) = (None, None);
    for ins in &instructions {
        state.push((workdir.clone(), user.clone()));
        match ins.keyword.as_str() {
            "FROM" => (workdir, user) = (None, None),
            "WORKDIR" => {
                let w = ins.args.trim().to_string();
                workdir = if w.starts_with('/') {
                    Some(w)
                } else {
                    workdir.as_deref().and_then(|b| absolute(&w, Some(b)))
                };
            }
            "USER" => user = Some(ins.args.trim().to_string()),
            _ => {}
        }
    }
    let mut copies = Vec::new();
    for (index, ins) in instructions.iter().enumerate() {
        if !matches!(ins.keyword.as_str(), "COPY" | "ADD") || !ins.heredocs.is_empty() {
            continue;
        }
        let Some((flags, srcs, dest)) = split_copy_args(&ins.args) else {
            continue;
        };
        if flags.iter().any(|f| f.starts_with("--from")) {
            continue;
        }
        let (sources, others): (Vec<String>, Vec<String>) =
            srcs.into_iter().partition(|s| is_skill_source(s));
        if sources.is_empty() {
            continue;
        }
        let in_final = final_from.is_some_and(|f| index > f);
        let dest_abs = absolute(&dest, state[index].0.as_deref());
        let created = dest_abs
            .as_deref()
            .map(|d| created_paths(&sources, d, entries))
            .unwrap_or_default();
        copies.push(SkillCopy {
            index,
            keyword: ins.keyword.clone(),
            flags,
            sources,
            others,
            dest,
            dest_abs,
            kind: if in_final {
                CopyKind::Agent
            } else {
                CopyKind::OtherStage
            },
            readers: Vec::new(),
            created,
        });
    }
    let mut lines = SkillLines {
        instructions,
        copies,
        final_from,
        final_name,
        state,
    };
    lines.find_readers(entries);
    for c in &mut lines.copies {
        if c.kind != CopyKind::Agent {
            continue;
        }
        let verifier = c.dest_abs.as_deref().is_some_and(|d| {
            !AGENT_MARKERS
                .iter()
                .any(|m| d.contains(m) || format!("{d}/").contains(m))
                && names_path(tests_text, d)
        });
        c.kind = if verifier {
            CopyKind::Verifier
        } else if c.readers.is_empty() {
            CopyKind::Agent
        } else {
            CopyKind::BuildTime
        };
    }
    // A step reading both an agent copy and a verifier copy cannot move: the verifier's copy then
    // stays in place too (the leak guard judges it in the no-skills image).
    let agent_readers: Vec<usize> = lines
        .copies
        .iter()
        .filter(|c| c.kind == CopyKind::BuildTime)
        .flat_map(|c| c.readers.clone())
        .collect();
    for c in &mut lines.copies {
        if c.kind == CopyKind::Verifier && c.readers.iter().any(|r| agent_readers.contains(r)) {
            c.kind = CopyKind::BuildTime;
        }
    }
    lines
}

impl SkillLines {
    /// Fills each final-stage copy's readers (see the module docs).
    fn find_readers(&mut self, entries: &dyn Fn(&str) -> Option<Vec<String>>) {
        let skill_names = entries("").unwrap_or_default();
        for c in &mut self.copies {
            if c.kind == CopyKind::OtherStage {
                continue;
            }
            let is_skills_folder = c.dest_abs.as_deref().is_some_and(|d| {
                let last = d.trim_end_matches('/').rsplit('/').next().unwrap_or("");
                last == "skills" || last == "skill"
            });
            // A skills folder (or a folder named as the skill it receives) is named by its own
            // path; a copy into a folder of other things (`COPY skills/ /root/`) by the paths it
            // created there.
            let own_folder = c.dest_abs.as_deref().is_some_and(|d| {
                let last = d.trim_end_matches('/').rsplit('/').next().unwrap_or("");
                c.sources
                    .iter()
                    .any(|s| s.trim_end_matches('/').rsplit('/').next() == Some(last))
            });
            let forms: Vec<String> = match c.dest_abs.as_deref() {
                Some(d) if is_skills_folder || own_folder || c.created.is_empty() => {
                    path_forms(d, &c.dest)
                }
                Some(_) => c.created.iter().flat_map(|p| path_forms(p, p)).collect(),
                None => vec![c.dest.clone()],
            };
            let whole = c
                .sources
                .iter()
                .any(|s| s.trim_start_matches("./").trim_end_matches('/') == "skills");
            let mut inside = false;
            for (k, ins) in self.instructions.iter().enumerate().skip(c.index + 1) {
                let text = text_of(ins);
                let reads = match ins.keyword.as_str() {
                    "WORKDIR" => {
                        let w = self.state.get(k + 1).and_then(|s| s.0.clone());
                        inside = w.is_some_and(|w| forms.iter().any(|f| names_path(&w, f)));
                        inside
                    }
                    "RUN" => {
                        inside
                            || forms.iter().any(|f| names_path(&text, f))
                            || text.contains("SKILL.md")
                            || (is_skills_folder
                                && whole
                                && skill_names.iter().any(|n| names_skill(&text, n)))
                    }
                    "COPY" | "ADD" => split_copy_args(&ins.args).is_some_and(|(_, _, d)| {
                        absolute(&d, self.state[k].0.as_deref())
                            .is_some_and(|d| forms.iter().any(|f| names_path(&d, f)))
                    }),
                    _ => false,
                };
                if reads {
                    c.readers.push(k);
                }
            }
        }
    }

    /// True when a condition with skills can be the no-skills image plus the skills as its last
    /// layers: every skill copy of the final stage is the agent's, read by no later step, with a
    /// destination known as an absolute path, and no earlier stage copies skills.
    pub fn layerable(&self) -> bool {
        self.copies.iter().all(|c| match c.kind {
            CopyKind::Agent => c.dest_abs.is_some(),
            CopyKind::Verifier => true,
            CopyKind::BuildTime | CopyKind::OtherStage => false,
        })
    }

    /// True when a build step needs the task's skills (a build-time or verifier copy): the
    /// no-skills build context must then hold them.
    pub fn needs_skills_in_context(&self) -> bool {
        self.copies
            .iter()
            .any(|c| matches!(c.kind, CopyKind::BuildTime | CopyKind::Verifier))
    }

    /// The container paths of the verifier's copies (each handed to the verifier at verify time).
    pub fn verifier_paths(&self) -> Vec<String> {
        self.copies
            .iter()
            .filter(|c| c.kind == CopyKind::Verifier)
            .filter_map(|c| c.dest_abs.clone())
            .map(|d| d.trim_end_matches('/').to_string())
            .collect()
    }

    /// The copies to layer over the no-skills image, in order: `(keyword flags, sources,
    /// absolute destination)`.
    pub fn agent_layers(&self) -> Vec<(String, Vec<String>, String)> {
        self.copies
            .iter()
            .filter(|c| c.kind == CopyKind::Agent)
            .filter_map(|c| {
                let mut head = vec![c.keyword.clone()];
                head.extend(c.flags.iter().cloned());
                Some((head.join(" "), c.sources.clone(), c.dest_abs.clone()?))
            })
            .collect()
    }
}

/// A copy line with only `sources` (the rest of the instruction as it was).
fn copy_line(c: &SkillCopy, sources: &[String], dest: &str) -> String {
    let mut words = vec![c.keyword.clone()];
    words.extend(c.flags.iter().cloned());
    words.extend(sources.iter().cloned());
    words.push(dest.to_string());
    words.join(" ")
}

/// One physical-line edit of a Dockerfile.
#[derive(Default, Clone)]
struct Edit {
    replace: Option<Vec<String>>,
    after: Vec<String>,
}

/// Which image a rewritten Dockerfile is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The no-skills image (the base of the layered conditions).
    NoSkills,
    /// A condition with skills built from the whole Dockerfile (skills in the task's own order).
    InPlace,
}

/// The Dockerfile for `target`, and what changed. Skill copies of earlier stages are removed for
/// [`Target::NoSkills`]; verifier copies and their readers move to [`VERIFIER_STAGE`] for both.
pub fn rewrite(text: &str, lines: &SkillLines, target: Target) -> (String, Vec<String>) {
    let mut e = Editor::new(text, lines);
    let verifier_stage = e.move_verifier_copies();
    if target == Target::NoSkills {
        e.strip_agent_copies();
    }
    e.finish(verifier_stage)
}

/// Physical-line edits of one Dockerfile and the log of what changed.
struct Editor<'a> {
    physical: Vec<&'a str>,
    lines: &'a SkillLines,
    edits: Vec<Edit>,
    changes: Vec<String>,
}

impl<'a> Editor<'a> {
    fn new(text: &'a str, lines: &'a SkillLines) -> Editor<'a> {
        let physical: Vec<&str> = text.lines().collect();
        Editor {
            edits: vec![Edit::default(); physical.len()],
            physical,
            lines,
            changes: Vec::new(),
        }
    }

    /// An instruction on one line, continuations joined, for messages.
    fn one_line(&self, i: &Instruction) -> String {
        self.physical[i.start..i.end]
            .join(" ")
            .split_whitespace()
            .filter(|w| *w != "\\")
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Replaces an instruction by a comment line.
    fn drop_ins(&mut self, i: &Instruction, note: String) {
        for e in &mut self.edits[i.start..i.end] {
            e.replace = Some(Vec::new());
        }
        self.edits[i.start].replace = Some(vec![note]);
    }

    /// Replaces an instruction by one line.
    fn replace_ins(&mut self, i: &Instruction, line: String) {
        for e in &mut self.edits[i.start..i.end] {
            e.replace = Some(Vec::new());
        }
        self.edits[i.start].replace = Some(vec![line]);
    }

    /// Takes the verifier's copies and the steps that read them out of their places; returns the
    /// lines of the verifier's stage (each step with the `WORKDIR` and `USER` it had).
    fn move_verifier_copies(&mut self) -> Vec<String> {
        let lines = self.lines;
        let ins = &lines.instructions;
        let mut stage: Vec<String> = Vec::new();
        let mut moved: Vec<usize> = Vec::new();
        for c in lines.copies.iter().filter(|c| c.kind == CopyKind::Verifier) {
            let i = &ins[c.index];
            let dest = c.dest_abs.clone().unwrap_or_else(|| c.dest.clone());
            stage.push(copy_line(c, &c.sources, &dest));
            moved.push(c.index);
            moved.extend(c.readers.iter().copied());
            let written = self.one_line(i);
            if c.others.is_empty() {
                self.drop_ins(
                    i,
                    format!("# skillscope: moved to the verifier's stage `{written}`"),
                );
            } else {
                self.replace_ins(i, copy_line(c, &c.others, &c.dest));
            }
            self.changes.push(format!(
                "line {}: `{written}` is the verifier's copy: built in stage {VERIFIER_STAGE} and copied into the container when the verifier starts, never part of the agent's image",
                i.start + 1,
            ));
        }
        moved.sort();
        moved.dedup();
        for r in moved {
            if lines.copies.iter().any(|c| c.index == r) {
                continue;
            }
            let i = &ins[r];
            let (workdir, user) = &lines.state[r];
            if let Some(w) = workdir {
                stage.push(format!("WORKDIR {w}"));
            }
            stage.push(format!("USER {}", user.as_deref().unwrap_or("root")));
            stage.extend(self.physical[i.start..i.end].iter().map(|l| l.to_string()));
            let written = self.one_line(i);
            self.drop_ins(
                i,
                format!("# skillscope: moved to the verifier's stage (reads its copy) `{written}`"),
            );
            self.changes.push(format!(
                "line {}: `{written}` reads the verifier's copy: moved with it",
                i.start + 1,
            ));
        }
        stage
    }

    /// The no-skills image: agent copies no step reads (and earlier stages' copies) removed, the
    /// ones a step reads kept and removed after the last such step.
    fn strip_agent_copies(&mut self) {
        let lines = self.lines;
        let ins = &lines.instructions;
        let mut removal: Vec<String> = Vec::new();
        let mut dirs: Vec<String> = Vec::new();
        let mut last_reader = 0;
        for c in &lines.copies {
            let i = &ins[c.index];
            let written = self.one_line(i);
            match c.kind {
                CopyKind::Agent | CopyKind::OtherStage if c.others.is_empty() => {
                    self.drop_ins(i, format!("# skillscope (no-skills): removed `{written}`"));
                    self.changes
                        .push(format!("removed line {}: {written}", i.start + 1));
                }
                CopyKind::Agent | CopyKind::OtherStage => {
                    let new = copy_line(c, &c.others, &c.dest);
                    self.changes
                        .push(format!("rewrote line {}: {written} -> {new}", i.start + 1));
                    self.replace_ins(i, new);
                }
                CopyKind::BuildTime => {
                    last_reader =
                        last_reader.max(c.readers.iter().copied().max().unwrap_or(c.index));
                    removal.extend(c.created.iter().cloned());
                    dirs.extend(
                        c.dest_abs
                            .iter()
                            .map(|d| d.trim_end_matches('/').to_string()),
                    );
                    self.changes.push(format!(
                        "line {}: `{written}` is read by later build steps (lines {}): kept for them, removed before the agent starts",
                        i.start + 1,
                        c.readers
                            .iter()
                            .map(|r| (ins[*r].start + 1).to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                CopyKind::Verifier => {}
            }
        }
        if removal.is_empty() {
            return;
        }
        dirs.sort();
        dirs.dedup();
        // The reader is not a USER line: the user in force before it stays after it.
        let user = lines.state[last_reader].1.clone();
        let not_root = user.as_deref().is_some_and(|u| u != "root" && u != "0");
        let mut block = vec![
            "# skillscope (no-skills): the skills the build steps above needed are removed before the agent starts".to_string(),
        ];
        if not_root {
            block.push("USER root".into());
        }
        block.push(format!(
            "RUN rm -rf {} && for d in {}; do rmdir \"$d\" 2>/dev/null || true; done",
            removal.join(" "),
            dirs.join(" ")
        ));
        if let (true, Some(u)) = (not_root, user) {
            block.push(format!("USER {u}"));
        }
        let at = ins[last_reader].end - 1;
        self.edits[at].after.extend(block);
        self.changes.push(format!(
            "after line {}: removed {} (what the build steps needed)",
            ins[last_reader].end,
            removal.join(" ")
        ));
    }

    /// The text: every edit applied, then the verifier's stage (the final stage named so it can
    /// start from it) and the final stage again.
    fn finish(mut self, verifier_stage: Vec<String>) -> (String, Vec<String>) {
        let mut tail: Vec<String> = Vec::new();
        if !verifier_stage.is_empty()
            && let Some(f) = self.lines.final_from
        {
            let name = match &self.lines.final_name {
                Some(n) => n.clone(),
                None => {
                    let last = self.lines.instructions[f].end - 1;
                    self.edits[last].replace = Some(vec![format!(
                        "{} AS {AGENT_STAGE}",
                        self.physical[last].trim_end()
                    )]);
                    AGENT_STAGE.to_string()
                }
            };
            tail.push(String::new());
            tail.push(
                "# skillscope: the verifier's copies of skills, in a stage of their own (handed to the verifier when it runs)"
                    .to_string(),
            );
            tail.push(format!("FROM {name} AS {VERIFIER_STAGE}"));
            tail.extend(verifier_stage);
            tail.push(format!("FROM {name}"));
        }
        let mut out = String::new();
        for (i, line) in self.physical.iter().enumerate() {
            match &self.edits[i].replace {
                Some(new) => new.iter().for_each(|l| {
                    out.push_str(l);
                    out.push('\n');
                }),
                None => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
            for l in &self.edits[i].after {
                out.push_str(l);
                out.push('\n');
            }
        }
        for l in tail {
            out.push_str(&l);
            out.push('\n');
        }
        (out, self.changes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The skills folder of scheduling-email-assistant.
    fn entries(sub: &str) -> Option<Vec<String>> {
        match sub {
            "" => Some(vec![
                "constraint-parser".into(),
                "gmail-skill".into(),
                "google-calendar-skill".into(),
            ]),
            "gmail-skill" => Some(vec![
                "SKILL.md".into(),
                "package.json".into(),
                "scripts".into(),
            ]),
            _ => None,
        }
    }

    const SCHEDULING: &str = "FROM ubuntu:24.04\nWORKDIR /root\nCOPY test_input.json /root/test_input.json\n\
COPY skills /root/.claude/skills\nCOPY skills /root/.codex/skills\nCOPY skills /root/.opencode/skill\n\
RUN cd /root/.claude/skills/gmail-skill && npm install\nRUN pip3 install httpx\n\
RUN for agent_dir in codex opencode; do \\\n      ln -sf /x /root/.$agent_dir/skills/gmail-skill/scripts/auth/tokens.json; \\\n    done\n\
RUN mkdir -p /root/auth/gmail\nCOPY skills/gmail-skill /root/verifier-skills/gmail-skill\n\
RUN ln -sf /root/google-auth/gmail/tokens.json /root/verifier-skills/gmail-skill/scripts/auth/tokens.json\n";

    const TESTS: &str = "cd /root/verifier-skills/gmail-skill && npm install --silent\n";

    #[test]
    fn a_build_step_reading_skills_keeps_them_until_it_ran() {
        let l = analyze(SCHEDULING, TESTS, &entries);
        let kinds: Vec<CopyKind> = l.copies.iter().map(|c| c.kind).collect();
        // .claude by its path, .codex by the loop's `skills/gmail-skill`, .opencode/skill too.
        assert_eq!(
            kinds,
            [
                CopyKind::BuildTime,
                CopyKind::BuildTime,
                CopyKind::BuildTime,
                CopyKind::Verifier
            ]
        );
        assert!(!l.layerable() && l.needs_skills_in_context());
        assert_eq!(l.verifier_paths(), ["/root/verifier-skills/gmail-skill"]);
        let (text, changes) = rewrite(SCHEDULING, &l, Target::NoSkills);
        let live: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        // The copies stay for the steps; one removal after the last of them (the loop), of exactly
        // what they created; then the verifier's stage.
        let rm = live
            .iter()
            .position(|l| l.starts_with("RUN rm -rf"))
            .unwrap();
        assert!(live[rm - 1].trim() == "done", "{text}");
        assert!(live[rm].contains(
            "/root/.claude/skills/gmail-skill /root/.claude/skills/google-calendar-skill"
        ));
        assert!(
            !live[rm].contains("rm -rf /root/.claude/skills "),
            "only what was copied: {text}"
        );
        assert!(live[0].ends_with("AS skillscope-agent"), "{text}");
        let stage = live
            .iter()
            .position(|l| *l == "FROM skillscope-agent AS skillscope-verifier")
            .unwrap();
        assert_eq!(
            live[stage + 1],
            "COPY skills/gmail-skill /root/verifier-skills/gmail-skill"
        );
        assert_eq!(live[stage + 2], "WORKDIR /root");
        assert!(live[stage + 4].starts_with("RUN ln -sf /root/google-auth"));
        assert_eq!(*live.last().unwrap(), "FROM skillscope-agent");
        assert!(
            !live[..stage].iter().any(|l| l.contains("verifier-skills")),
            "{text}"
        );
        assert!(
            changes.iter().any(|c| c.contains("kept for them")),
            "{changes:?}"
        );
        // A condition with skills keeps them in place, the verifier's stage the same.
        let (inplace, _) = rewrite(SCHEDULING, &l, Target::InPlace);
        assert!(!inplace.contains("rm -rf"));
        assert!(inplace.contains("\nCOPY skills /root/.claude/skills\n"));
        assert!(inplace.contains("FROM skillscope-agent AS skillscope-verifier"));
    }

    #[test]
    fn copies_no_step_reads_are_layers() {
        let df = "FROM python:3.11-slim AS app\nWORKDIR /root\nCOPY skills .claude/skills\nCOPY --chown=1000 skills data.csv /root/\n\
RUN pip install pandas\nCOPY [\"skills\", \"/root/.qwen/skills\"]\nENV PYTHONPATH=/root/.claude/skills/x/scripts\n";
        let l = analyze(df, "", &|s| (s.is_empty()).then(|| vec!["x".into()]));
        assert!(l.layerable(), "{:?}", l.copies);
        assert!(!l.needs_skills_in_context());
        assert_eq!(
            l.agent_layers(),
            [
                (
                    "COPY".to_string(),
                    vec!["skills".to_string()],
                    "/root/.claude/skills".to_string()
                ),
                (
                    "COPY --chown=1000".to_string(),
                    vec!["skills".to_string()],
                    "/root/".to_string()
                ),
                (
                    "COPY".to_string(),
                    vec!["skills".to_string()],
                    "/root/.qwen/skills".to_string()
                ),
            ]
        );
        let (text, _) = rewrite(df, &l, Target::NoSkills);
        let live: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert!(
            live.contains(&"COPY --chown=1000 data.csv /root/"),
            "{text}"
        );
        assert!(
            !live
                .iter()
                .any(|l| l.contains("skills ") || l.contains("\"skills\"")),
            "{text}"
        );
        assert!(!text.contains("skillscope-verifier"));
        // A relative destination with no WORKDIR yet cannot be made absolute: not layerable.
        let l = analyze("FROM x\nCOPY skills skills\n", "", &|_| None);
        assert!(!l.layerable());
    }

    #[test]
    fn readers_are_named_not_guessed() {
        assert!(names_path("cd /root/skills/a", "/root/skills"));
        assert!(!names_path("cd /root/skills2", "/root/skills"));
        assert!(names_skill(
            "ln -s x /root/.$d/skills/gmail-skill/a",
            "gmail-skill"
        ));
        assert!(!names_skill(
            "/root/verifier-skills/gmail-skill",
            "gmail-skill"
        ));
        assert!(!names_skill(
            "/root/.claude/skills/gmail-skill-2",
            "gmail-skill"
        ));
        // A WORKDIR inside the copy makes the steps after it readers, until the next WORKDIR.
        let df = "FROM x\nCOPY skills /root/.claude/skills\nWORKDIR /root/.claude/skills/a\nRUN npm ci\nWORKDIR /app\nRUN make\n";
        let l = analyze(df, "", &|s| s.is_empty().then(|| vec!["a".into()]));
        assert_eq!(l.copies[0].readers, [2, 3]);
        assert_eq!(l.copies[0].kind, CopyKind::BuildTime);
        let (text, _) = rewrite(df, &l, Target::NoSkills);
        let rm = text
            .lines()
            .position(|l| l.starts_with("RUN rm -rf /root/.claude/skills/a"))
            .unwrap();
        assert_eq!(text.lines().nth(rm - 2), Some("RUN npm ci"));
    }

    #[test]
    fn a_non_root_user_removes_as_root() {
        let df = "FROM x\nUSER app\nCOPY skills /home/app/.claude/skills\nRUN ls /home/app/.claude/skills\nRUN true\n";
        let l = analyze(df, "", &|s| s.is_empty().then(|| vec!["a".into()]));
        let (text, _) = rewrite(df, &l, Target::NoSkills);
        assert!(
            text.contains("USER root\nRUN rm -rf /home/app/.claude/skills/a"),
            "{text}"
        );
        assert!(text.contains("done\nUSER app\nRUN true"), "{text}");
    }
}
