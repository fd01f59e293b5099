//! What stands in for Acontext's LLMs: the templated learner (an SOP entry for a success, a
//! Warning entry for a failure, in the task's skill), the learning-status steps and the criteria
//! marker the task agent reads. Nothing here learns.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{FakeSkill, FakeState, STANDIN_NOTE};

/// The deterministic learner: appends an SOP or Warning entry for a finished task to its skill in
/// the space (the curated one, or `<task>-learned`, created on first use and included).
pub(super) fn learn_into(state: &mut FakeState, space_id: &str, session_id: &str) {
    let Some(session) = state.sessions.get(session_id).cloned() else {
        return;
    };
    let task_name = session
        .configs
        .pointer("/skillscope/task_id")
        .and_then(Value::as_str)
        .unwrap_or("task")
        .to_string();
    let success = session.tasks.iter().any(|t| t.status == "success");
    let assistant = session
        .messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m["content"].as_str())
        .next_back()
        .unwrap_or("")
        .to_string();
    let first_action = assistant
        .lines()
        .find(|l| l.trim_start().starts_with('['))
        .map(|l| l.trim().to_string())
        .unwrap_or_else(|| "follow the task instructions".into());
    let failure_line = assistant
        .lines()
        .find(|l| l.contains("FAILED") || l.contains("Error"))
        .map(|l| l.trim().to_string())
        .unwrap_or_else(|| "the verifier rejected the output".into());
    let skill_name = format!("{task_name}-learned");
    let entry = if success {
        format!(
            "\n## Solve {task_name} (date: 2026-11-21)\n- Principle: Repeat the approach that passed the verifier.\n- When to Apply: Tasks like {task_name}.\n- Steps: 1. {first_action}\n"
        )
    } else {
        format!(
            "\n## Avoid the {task_name} failure (date: 2026-11-21)\n- Symptom: {failure_line}\n- Root Cause: The output did not match what the verifier checks.\n- Correct Approach: Check the task's requirements before writing the output.\n- Prevention: Verify the result against the instruction.\n"
        )
    };
    let space_skills = state
        .spaces
        .get(space_id)
        .map(|s| s.skills.clone())
        .unwrap_or_default();
    // Like Acontext's skill agent, update the skill the task already has in the space (a
    // curated upload tagged with its source task), else the space's `<task>-learned` skill.
    let existing = space_skills
        .iter()
        .find(|k| {
            state.skills.get(*k).is_some_and(|s| {
                s.meta
                    .pointer("/skillscope/source_task")
                    .and_then(Value::as_str)
                    == Some(task_name.as_str())
            })
        })
        .or_else(|| {
            space_skills
                .iter()
                .find(|k| state.skills.get(*k).is_some_and(|s| s.name == skill_name))
        })
        .cloned();
    let now = state.now();
    match existing {
        Some(id) => {
            let sk = state.skills.get_mut(&id).expect("skill");
            let md = sk.files.entry("SKILL.md".into()).or_default();
            md.extend_from_slice(entry.as_bytes());
            sk.updated_at = now;
        }
        None => {
            let id = state.new_id();
            let md = format!(
                "---\nname: \"{skill_name}\"\ndescription: \"Lessons from {task_name} trials ({STANDIN_NOTE})\"\n---\n# {task_name} lessons\n\n> {STANDIN_NOTE}.\n\n## File Structure\n- SKILL.md\n\n## Guidelines\n{entry}"
            );
            state.skills.insert(
                id.clone(),
                FakeSkill {
                    id: id.clone(),
                    name: skill_name.clone(),
                    description: format!("Lessons from {task_name} trials ({STANDIN_NOTE})"),
                    meta: json!({}),
                    files: BTreeMap::from([("SKILL.md".to_string(), md.into_bytes())]),
                    updated_at: now,
                },
            );
            state.skill_order.push(id.clone());
            if let Some(sp) = state.spaces.get_mut(space_id) {
                sp.skills.push(id);
            }
        }
    }
}

/// A status change to success/failed starts learning when the session is in a space: released
/// servers distil it first (`distilling`), the skill-bench server's learner runs it (`running`).
pub(super) fn on_terminal_status(state: &mut FakeState, session_id: &str) {
    let next = if state.api.released() {
        "distilling"
    } else {
        "running"
    };
    if let Some(space) = state.session_space.get(session_id).cloned()
        && let Some(sp) = state.spaces.get_mut(&space)
    {
        sp.sessions.insert(session_id.to_string(), next.into());
    }
}

pub(super) fn marker_in(criteria: &str) -> Option<String> {
    let start = criteria.find('"')? + 1;
    let len = criteria[start..].find('"')?;
    Some(criteria[start..start + len].to_string())
}

/// One poll: answers the learning status as it is, then moves it a step on (as Acontext's
/// consumers would between two polls), so every status is seen once. Released servers: `pending →
/// distilling → skill_writing [→ queued] → completed`, and a pending session with undecided tasks
/// is promoted to success (the Go server's lazy resolution, `resolvePendingStatus`). The
/// skill-bench server: `pending` until a task is set (then `running`) `→ completed`, nothing
/// resolved lazily.
pub(super) fn advance(st: &mut FakeState, space: &str, sid: &str) -> String {
    let status = st.spaces[space].sessions[sid].clone();
    let next = match status.as_str() {
        "pending" if !st.api.released() => "pending".to_string(),
        "running" => {
            learn_into(st, space, sid);
            "completed".to_string()
        }
        "pending" => {
            let tasks = st
                .sessions
                .get(sid)
                .map(|s| s.tasks.clone())
                .unwrap_or_default();
            if tasks.is_empty() {
                "completed".to_string()
            } else if tasks
                .iter()
                .any(|t| t.status == "success" || t.status == "failed")
            {
                "distilling".to_string()
            } else if let Some(sess) = st.sessions.get_mut(sid) {
                for t in &mut sess.tasks {
                    t.status = "success".into();
                }
                "distilling".to_string()
            } else {
                "failed".to_string()
            }
        }
        "distilling" => "skill_writing".to_string(),
        // The space's skill agent holds its lock for another session: this one waits.
        "skill_writing" if st.queue_learning => "queued".to_string(),
        "skill_writing" | "queued" => {
            learn_into(st, space, sid);
            "completed".to_string()
        }
        other => other.to_string(),
    };
    st.spaces
        .get_mut(space)
        .expect("space")
        .sessions
        .insert(sid.to_string(), next);
    status
}
