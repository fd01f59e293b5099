//! The skills each harness CLI brings of its own, and how a trial switches them off. What the
//! pinned versions ship (read from the kits; docs/harnesses.md says the same):
//!
//! - **Claude Code** compiles its bundled skills into the binary (none on disk) and offers the
//!   model `dataviz`, `update-config`, `keybindings-help`, `code-review`, `simplify`,
//!   `fewer-permission-prompts`, `loop`, `claude-api`, `workflow-authoring`, `run`,
//!   `plugin-authoring`, `init` and `security-review` beside the task's skills.
//!   `CLAUDE_CODE_DISABLE_BUNDLED_SKILLS=1` (the settings key `disableBundledSkills`) removes them;
//!   the few that survive it are user-invocable only.
//! - **Codex CLI** embeds its system skills (`imagegen`, `openai-docs`, `skill-creator`,
//!   `skill-installer`), installs them in `$CODEX_HOME/skills/.system` and offers them;
//!   `-c skills.bundled.enabled=false` (config `[skills.bundled] enabled`) stops offering them.
//! - **Gemini CLI** loads the skills in its bundle's `builtin/` folder (`skill-creator`,
//!   `antigravity-support`); `skills.disabled` in `~/.gemini/settings.json` switches skills off by
//!   name, so it lists each built-in except those a visible skill of the same name replaces.

use super::kit::{Harness, Kit};
use crate::skillsbench::exposure::Builtins;

/// Where Gemini CLI's built-in skills lie inside its kit.
const GEMINI_BUILTIN: &str = "lib/node_modules/@google/gemini-cli/bundle/builtin";

/// The environment variable that switches Claude Code's bundled skills off.
pub const CLAUDE_CODE_SWITCH: &str = "CLAUDE_CODE_DISABLE_BUNDLED_SKILLS=1";

/// The Codex option that switches its bundled system skills off.
pub const CODEX_SWITCH: &str = "skills.bundled.enabled=false";

/// The model-invocable skills Claude Code 2.1.330 bundles (from the first request it sends a
/// model without the switch).
pub const CLAUDE_CODE_BUNDLED: &[&str] = &[
    "dataviz",
    "update-config",
    "keybindings-help",
    "code-review",
    "simplify",
    "fewer-permission-prompts",
    "loop",
    "claude-api",
    "workflow-authoring",
    "run",
    "plugin-authoring",
    "init",
    "security-review",
];

/// The system skills Codex CLI 0.169.0 embeds (likewise).
pub const CODEX_SYSTEM: &[&str] = &[
    "imagegen",
    "openai-docs",
    "skill-creator",
    "skill-installer",
];

/// What `h` brings of its own and how the trial switches it off (see the module doc);
/// `gemini_names` are the built-in names found in Gemini CLI's kit.
pub fn builtins(h: Harness, gemini_names: &[String]) -> Builtins {
    let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect();
    match h {
        Harness::ClaudeCode => Builtins {
            ships: "bundled skills compiled into the CLI (none on disk)".into(),
            names: names(CLAUDE_CODE_BUNDLED),
            switched_off: true,
            setting: format!("{CLAUDE_CODE_SWITCH} (settings key disableBundledSkills)"),
            folders: Vec::new(),
        },
        Harness::Codex => Builtins {
            ships: "system skills embedded in the CLI, installed in $CODEX_HOME/skills/.system"
                .into(),
            names: names(CODEX_SYSTEM),
            switched_off: true,
            setting: format!("-c {CODEX_SWITCH}"),
            folders: vec!["~/.codex/skills/.system".into()],
        },
        Harness::GeminiCli => Builtins {
            ships: "built-in skills in the CLI's bundle/builtin/ (in the kit)".into(),
            names: gemini_names.to_vec(),
            switched_off: true,
            setting: "skills.disabled in ~/.gemini/settings.json, naming each built-in".into(),
            folders: vec![format!("{}/{GEMINI_BUILTIN}", h.mount_path())],
        },
    }
}

/// The frontmatter names of the built-in skills in Gemini CLI's kit, sorted (none for other
/// kits or an unreadable folder).
pub fn gemini_builtin_names(kit: &Kit) -> Vec<String> {
    if kit.harness != Harness::GeminiCli {
        return Vec::new();
    }
    let mut names: Vec<String> =
        crate::skillsbench::skill::scan_skills_dir(&kit.dir.join(GEMINI_BUILTIN))
            .into_iter()
            .map(|s| s.frontmatter.map_or(s.dir_name, |f| f.name))
            .collect();
    names.sort();
    names.dedup();
    names
}

/// Gemini CLI's `~/.gemini/settings.json` (no secret in it): API-key auth pre-selected (headless
/// mode cannot ask), environment-variable redaction on (the key is otherwise visible to the
/// agent's shell commands), no usage statistics, telemetry, IDE or update traffic, one attempt
/// per model request (the engine retries whole trials with backoff; Gemini CLI 0.61 lets a
/// model's own policy override it — `gemini-3-flash-preview` retries a 429 ten times, 5–30 s
/// apart, and a trial whose time ends meanwhile is a provider failure), skills on with the
/// built-ins `builtin` off except those named in `spare` (a visible skill of that name replaces
/// the built-in, and Gemini CLI switches skills off by name).
pub fn gemini_settings(builtin: &[String], spare: &[String]) -> String {
    let off: Vec<&String> = builtin
        .iter()
        .filter(|b| !spare.iter().any(|s| s.eq_ignore_ascii_case(b)))
        .collect();
    serde_json::json!({
        "security": {
            "auth": {"selectedType": "gemini-api-key"},
            "environmentVariableRedaction": {"enabled": true}
        },
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "general": {
            "enableAutoUpdate": false,
            "enableAutoUpdateNotification": false,
            "maxAttempts": 1
        },
        "ide": {"enabled": false},
        "skills": {"enabled": true, "disabled": off}
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_spares_builtins_a_visible_skill_replaces() {
        let s = gemini_settings(
            &["antigravity-support".into(), "skill-creator".into()],
            &["Skill-Creator".into()],
        );
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(
            v["skills"]["disabled"],
            serde_json::json!(["antigravity-support"])
        );
        assert_eq!(v["skills"]["enabled"], true);
        assert_eq!(v["security"]["auth"]["selectedType"], "gemini-api-key");
    }

    #[test]
    fn every_harness_switches_its_builtins_off() {
        for h in Harness::ALL {
            let b = builtins(h, &["skill-creator".into()]);
            assert!(b.switched_off && !b.setting.is_empty(), "{h:?}");
        }
        assert!(
            builtins(Harness::GeminiCli, &[]).folders[0].starts_with("/opt/skillscope/gemini-cli/")
        );
    }
}
