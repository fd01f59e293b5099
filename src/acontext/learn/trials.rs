//! What a trial gives the learner: its verdict, its place in the learning order, its session's
//! UUID and the two messages its session stores (the instruction and the trajectory summary).

use std::collections::BTreeMap;
use std::path::Path;

use super::{StatusMode, VERDICT_PREFIX};
use crate::domain::{Outcome, RunTaskRow, TrialRow};
use crate::harbor::atif::Trajectory;
use crate::harbor::ctrf::Report;
use crate::harbor::summary::{SummaryInput, summarize};

/// The verdict a trial gives the learner: `success` for full reward, `failed` for a wrong
/// result or a timeout, `None` when the verifier gave no verdict (infrastructure errors). A
/// trial whose agent was flagged for tampering ([`crate::domain::TAMPER_RULE`]) is `failed`,
/// whatever its reward: a forged win is never learned as a success.
pub fn verdict_of(t: &TrialRow) -> Option<&'static str> {
    if t.tamper.is_some() {
        return Some("failed");
    }
    if t.reward.is_some_and(|r| r >= 1.0) {
        return Some("success");
    }
    match t.outcome? {
        Outcome::Pass => Some("success"),
        Outcome::Fail | Outcome::AgentTimeout | Outcome::VerifierTimeout => Some("failed"),
        _ => None,
    }
}

/// Rank of a difficulty label in the learning order (SkillsBench uses easy/medium/hard; the
/// paper core/extended/extreme).
pub fn difficulty_rank(d: &str) -> u8 {
    match d.to_ascii_lowercase().as_str() {
        "easy" | "core" => 0,
        "medium" | "middle" | "extended" => 1,
        "hard" | "extreme" => 2,
        _ => 3,
    }
}

/// The session UUID of a trial in a space: UUIDv5 (URL namespace) of
/// `skillscope:<run uid>:<label>:<condition>:<task>:<trial>:<attempt>`.
pub fn session_uuid(run_uid: &str, label: &str, t: &TrialRow) -> String {
    let name = format!(
        "skillscope:{run_uid}:{label}:{}:{}:{}:{}",
        t.condition, t.task_id, t.trial_index, t.attempt
    );
    uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, name.as_bytes()).to_string()
}

/// The learning order: (domain, difficulty rank, task, trial index).
pub fn order_trials<'a>(
    trials: &'a [TrialRow],
    tasks: &BTreeMap<String, RunTaskRow>,
) -> Vec<&'a TrialRow> {
    let mut out: Vec<&TrialRow> = trials.iter().collect();
    let key = |t: &TrialRow| {
        let task = tasks.get(&t.task_id);
        (
            task.map(|x| x.domain.clone()).unwrap_or_default(),
            task.map(|x| difficulty_rank(&x.difficulty)).unwrap_or(3),
            t.task_id.clone(),
            t.trial_index,
        )
    };
    out.sort_by_key(|t| key(t));
    out
}

/// The run's tasks in learning order: (domain, difficulty rank, task).
pub fn order_trials_tasks(tasks: &BTreeMap<String, RunTaskRow>) -> Vec<&RunTaskRow> {
    let mut out: Vec<&RunTaskRow> = tasks.values().collect();
    out.sort_by_key(|t| {
        (
            t.domain.clone(),
            difficulty_rank(&t.difficulty),
            t.task_id.clone(),
        )
    });
    out
}

/// The instruction and trajectory summary of a trial, as stored in its session.
///
/// The summary is [`crate::harbor::summary`]'s deterministic text from the trial folder
/// (`agent/trajectory.json`, `verifier/ctrf.json`, `verifier/test-stdout.txt`). In `criteria`
/// mode it ends with the verdict line.
pub fn trial_messages(
    t: &TrialRow,
    task_dir: &Path,
    mode: StatusMode,
    verdict: &str,
    limit: usize,
) -> (String, String) {
    let instruction = crate::fs::read_text_capped(&task_dir.join("instruction.md"), 256 * 1024)
        .unwrap_or_else(|_| format!("Solve the SkillsBench task {}.", t.task_id));
    let trial_dir = t.trial_dir.as_deref().map(Path::new);
    let trajectory = t
        .trajectory_path
        .as_deref()
        .map(Path::new)
        .map(Path::to_path_buf)
        .or_else(|| trial_dir.map(|d| d.join("agent/trajectory.json")))
        .and_then(|p| Trajectory::read(&p).ok());
    let ctrf = trial_dir.and_then(|d| Report::read(&d.join("verifier/ctrf.json")).ok());
    let test_output = trial_dir.and_then(|d| {
        crate::fs::read_text_capped(&d.join("verifier/test-stdout.txt"), 1024 * 1024).ok()
    });
    let summary = summarize(
        &SummaryInput {
            trajectory: trajectory.as_ref(),
            instruction: Some(&instruction),
            ctrf: ctrf.as_ref(),
            test_output: test_output.as_deref(),
            outcome: t.outcome,
            reward: t.reward,
        },
        limit,
    );
    let mut text = crate::sanitize::text(&summary.text);
    if mode == StatusMode::Criteria {
        let v = if verdict == "success" { "PASS" } else { "FAIL" };
        text.push_str(&format!("\n\n{VERDICT_PREFIX} {v}\n"));
    }
    (instruction, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(task: &str, idx: u32, outcome: Option<Outcome>, reward: Option<f64>) -> TrialRow {
        TrialRow {
            id: idx as i64,
            task_id: task.into(),
            condition: "no-skills".into(),
            trial_index: idx,
            attempt: 1,
            outcome,
            reward,
            ..Default::default()
        }
    }

    #[test]
    fn verdicts_follow_the_verifier() {
        assert_eq!(
            verdict_of(&trial("t", 0, Some(Outcome::Pass), Some(1.0))),
            Some("success")
        );
        assert_eq!(
            verdict_of(&trial("t", 0, Some(Outcome::Fail), Some(0.5))),
            Some("failed")
        );
        assert_eq!(
            verdict_of(&trial("t", 0, Some(Outcome::AgentTimeout), None)),
            Some("failed")
        );
        assert_eq!(
            verdict_of(&trial("t", 0, Some(Outcome::AgentTimeout), Some(1.0))),
            Some("success")
        );
        assert_eq!(
            verdict_of(&trial("t", 0, Some(Outcome::BuildError), None)),
            None
        );
        assert_eq!(
            verdict_of(&trial("t", 0, Some(Outcome::NoReward), None)),
            None
        );
        // Flagged for tampering: never a success, even with a passing reward recorded.
        let forged = TrialRow {
            tamper: Some(serde_json::json!({"flagged": 1, "paths": ["C /bin/sh"]})),
            ..trial("t", 0, Some(Outcome::Pass), Some(1.0))
        };
        assert_eq!(verdict_of(&forged), Some("failed"));
    }

    #[test]
    fn order_is_domain_difficulty_task_trial() {
        let task = |id: &str, domain: &str, diff: &str| {
            (
                id.to_string(),
                RunTaskRow {
                    task_id: id.into(),
                    domain: domain.into(),
                    difficulty: diff.into(),
                    path: String::new(),
                    problems: vec![],
                    digest: None,
                },
            )
        };
        let tasks: BTreeMap<String, RunTaskRow> = [
            task("z-easy", "Finance", "easy"),
            task("a-hard", "Finance", "hard"),
            task("m-medium", "Finance", "medium"),
            task("b", "Biology", "hard"),
        ]
        .into_iter()
        .collect();
        let trials = vec![
            trial("a-hard", 1, None, None),
            trial("a-hard", 0, None, None),
            trial("z-easy", 0, None, None),
            trial("m-medium", 0, None, None),
            trial("b", 0, None, None),
        ];
        let order: Vec<(String, u32)> = order_trials(&trials, &tasks)
            .iter()
            .map(|t| (t.task_id.clone(), t.trial_index))
            .collect();
        assert_eq!(
            order,
            vec![
                ("b".into(), 0),
                ("z-easy".into(), 0),
                ("m-medium".into(), 0),
                ("a-hard".into(), 0),
                ("a-hard".into(), 1)
            ]
        );
    }

    #[test]
    fn session_uuids_are_stable_and_distinct() {
        let a = trial("t", 0, None, None);
        let b = trial("t", 1, None, None);
        assert_eq!(session_uuid("u", "LS-A", &a), session_uuid("u", "LS-A", &a));
        assert_ne!(session_uuid("u", "LS-A", &a), session_uuid("u", "LS-A", &b));
        assert_ne!(session_uuid("u", "LS-A", &a), session_uuid("u", "LS-B", &a));
        let mut retried = a.clone();
        retried.attempt = 2;
        assert_ne!(
            session_uuid("u", "LS-A", &a),
            session_uuid("u", "LS-A", &retried)
        );
    }
}
