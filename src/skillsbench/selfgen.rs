//! The self-generated conditions of the SkillsBench paper (Li et al. 2026, §4 "Self-generated
//! Skills"; its prompt is Appendix C.6): the agent gets no skills, only a prompt asking it to write
//! its own skill documents — first, then solve the task (`self-generated`, as the paper ran it), or
//! in a session of their own before a fresh session solves the task with only those skills
//! installed (`self-generated:two-phase`, as SkillsBench's current runner does it).
//!
//! This module is pure: the prompts (written for skillscope; `--self-gen-prompt FILE` replaces
//! them, e.g. with the paper's exact C.6 text), how the instruction the agent receives is composed,
//! and the record of what an agent generated ([`GeneratedSkills`], stored with the trial as JSON).
//! The container side is [`crate::runner::selfgen`].

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where the agent is asked to write its skills, relative to its working directory.
pub const GENERATED_SKILLS_PATH: &str = "environment/skills";

/// Where a trial keeps the generated skills that passed validation (relative to the trial folder).
pub const TRIAL_GENERATED_DIR: &str = "agent/generated-skills";

/// Where a trial keeps the record of what was generated (relative to the trial folder).
pub const TRIAL_GENERATED_RECORD: &str = "agent/generated-skills.json";

/// Where a trial keeps the exact instruction the agent received (relative to the trial folder).
pub const TRIAL_INSTRUCTION: &str = "agent/instruction.md";

/// The agent folder of the first (skill-writing) session of `self-generated:two-phase`, relative
/// to the trial folder: beside `agent/`, not in it, because `agent/` is mounted into the
/// container and the solving session must not find the first session's transcript.
pub const TRIAL_GENERATION_SESSION: &str = "skill-generation";

/// What both prompts ask the agent to write, and where (steps 1 and 2).
macro_rules! skill_writing_steps {
    () => {
        "\
1. Work out which tools, libraries, APIs or techniques this task calls for. Write between 1 and 5
   skill documents, one for each tool, library, API or technique — keep each one focused on that
   one thing. Every skill document says what it is for, how to set it up (installation or
   configuration steps) and gives short worked examples of using it for work like this task.
2. Save each skill as `environment/skills/<skill-name>/SKILL.md`, relative to the current working
   directory (supporting files may go beside it in the same folder). `<skill-name>` uses lowercase
   letters, digits and hyphens. Every SKILL.md starts with YAML frontmatter holding `name` (the same
   `<skill-name>`) and `description` (one or two sentences on what the skill covers and when to
   use it):

   ```
   ---
   name: <skill-name>
   description: <what the skill covers and when to use it>
   ---
   ```
"
    };
}

/// The generate-first prompt of `self-generated`, appended to the task instruction.
pub const ONE_PASS_PROMPT: &str = concat!(
    "---\n\nBefore you work on the task above, write your own skills for it, then use them.\n\n",
    skill_writing_steps!(),
    "\n3. Then solve the task, using the skills you wrote.\n"
);

/// The prompt of the first session of `self-generated:two-phase`, appended to the task
/// instruction: write skills for the task, do not solve it.
pub const TWO_PHASE_PROMPT: &str = concat!(
    "---\n\nDo NOT solve the task above. In this session your only job is to prepare skills for it: \
     another agent will solve the task later in this same environment, with the skills you write \
     as its only skills.\n\n",
    skill_writing_steps!(),
    "\n3. Stop once the skills are written. Do not create the task's outputs or change other files.\n"
);

/// The note added to the first session's prompt when a skill creator is installed.
pub const SKILL_CREATOR_NOTE: &str = "
A skill for writing skills is installed where you look for skills (`skill-creator`); use it if it \
helps. It is not one of the skills you write and will be removed before the task is solved.\n";

/// How a self-generated condition runs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SelfGeneration {
    /// `false`: one session writes skills first, then solves the task (`self-generated`).
    /// `true`: a session writes skills only; a fresh one solves the task with them
    /// (`self-generated:two-phase`).
    pub two_phase: bool,
    /// The operator's prompt text (`--self-gen-prompt FILE`), replacing [`ONE_PASS_PROMPT`] or
    /// [`TWO_PHASE_PROMPT`]; `None` for skillscope's own.
    pub prompt: Option<String>,
    /// A skill-writing skill mounted for the first session of the two-phase variant
    /// (`--skill-creator DIR`, absolute); never shipped with skillscope.
    pub skill_creator: Option<PathBuf>,
}

impl SelfGeneration {
    /// The prompt appended to the instruction (the operator's, else skillscope's).
    pub fn prompt(&self) -> &str {
        match (&self.prompt, self.two_phase) {
            (Some(p), _) => p,
            (None, false) => ONE_PASS_PROMPT,
            (None, true) => TWO_PHASE_PROMPT,
        }
    }

    /// The instruction of the session that writes skills: the task instruction, a blank line, the
    /// prompt (and, for a two-phase run with a skill creator, a note about it).
    pub fn generation_instruction(&self, task_instruction: &str) -> String {
        let mut out = format!(
            "{}\n\n{}",
            task_instruction.trim_end(),
            self.prompt().trim_end()
        );
        out.push('\n');
        if self.two_phase && self.skill_creator.is_some() {
            out.push_str(SKILL_CREATOR_NOTE);
        }
        out
    }

    /// `one-pass` or `two-phase`.
    pub fn mode(&self) -> &'static str {
        if self.two_phase {
            "two-phase"
        } else {
            "one-pass"
        }
    }
}

/// One generated skill that passed validation (frontmatter, paths, sizes), kept in
/// [`TRIAL_GENERATED_DIR`]`/<dir_name>/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GeneratedSkill {
    /// Frontmatter `name`.
    pub name: String,
    /// Folder under [`TRIAL_GENERATED_DIR`] (the agent's folder name, made a safe path component).
    pub dir_name: String,
    /// Frontmatter `description`.
    pub description: String,
    /// SHA-256 over its files (as [`crate::acontext::export::content_hash`]).
    pub content_hash: String,
    /// Files in the skill.
    pub n_files: usize,
    /// Bytes over its files.
    pub bytes: u64,
    /// SKILL.md warnings (not errors: a skill with an error is refused).
    pub problems: Vec<String>,
}

/// A generated skill that was not kept: a malformed SKILL.md, a bad path, a symlink, too large…
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GeneratedRefusal {
    /// The folder the agent wrote (or the stray file's name).
    pub skill: String,
    /// The offending entry, relative to the skill folder, when one.
    pub path: Option<String>,
    /// Why.
    pub reason: String,
}

/// What the agent of a self-generated trial wrote, as validated after its skill-writing session
/// (stored in `trials.generated_skills` and in [`TRIAL_GENERATED_RECORD`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct GeneratedSkills {
    /// `one-pass` or `two-phase`.
    pub mode: String,
    /// Where the valid skills are kept, relative to the trial folder ([`TRIAL_GENERATED_DIR`]).
    pub dir: String,
    /// Skills that passed validation, by `dir_name`.
    pub skills: Vec<GeneratedSkill>,
    /// Skills (or stray files) that did not.
    pub refused: Vec<GeneratedRefusal>,
    /// Two-phase: the skills installed for the solving session (where every harness looks).
    pub installed: Vec<String>,
    /// Set when the skills could not be read out of the container at all (a Docker error).
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_append_the_prompt() {
        let one = SelfGeneration::default();
        let text = one.generation_instruction("Convert the file.\n\n");
        assert!(text.starts_with("Convert the file.\n\n---"));
        assert!(text.contains("environment/skills/<skill-name>/SKILL.md"));
        assert!(text.contains("Then solve the task"));
        let two = SelfGeneration {
            two_phase: true,
            skill_creator: Some("/x".into()),
            ..Default::default()
        };
        let text = two.generation_instruction("Convert the file.");
        assert!(text.contains("Do NOT solve the task"));
        assert!(text.contains("skill-creator"));
        let custom = SelfGeneration {
            prompt: Some("Write skills (C.6).".into()),
            ..Default::default()
        };
        assert_eq!(
            custom.generation_instruction("Task."),
            "Task.\n\nWrite skills (C.6).\n"
        );
    }
}
