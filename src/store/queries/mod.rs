//! SQL for runs, tasks, trials, commands and events, one file per table group. Every function
//! takes a `&Connection`, so it works inside a writer job (a transaction) and on a reader
//! connection alike.

mod commands;
mod events;
mod patch;
mod plans;
mod runs;
mod sequential;
mod skill_uses;
mod summaries;
mod trials;

pub use commands::*;
pub use events::*;
pub use patch::*;
pub use plans::*;
pub use runs::*;
pub use sequential::*;
pub use skill_uses::*;
pub use summaries::*;
pub use trials::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreError;
    use crate::store::model::*;
    use rusqlite::Connection;

    fn db() -> Connection {
        crate::store::schema::migrated_in_memory()
    }

    fn new_run(c: &Connection) -> RunRow {
        insert_run(
            c,
            &NewRun {
                name: "r".into(),
                tasks_dir: "/t".into(),
                agent: "oracle".into(),
                model: None,
                n_trials: 2,
                conditions: vec!["no-skills".into(), "curated".into()],
                jobs_dir: "/j".into(),
                settings: serde_json::json!({}),
            },
        )
        .unwrap()
    }

    fn name(k: &TrialKey, a: u32) -> String {
        format!("{}__{}{}{}", k.task_id, k.condition, k.trial_index, a)
    }

    #[test]
    fn plan_is_idempotent_and_ordered() {
        let c = db();
        let run = new_run(&c);
        let tasks = vec!["b".to_string(), "a".to_string()];
        assert_eq!(plan_trials(&c, &run, &tasks, &name).unwrap(), 8);
        assert_eq!(plan_trials(&c, &run, &tasks, &name).unwrap(), 0);
        let q = queued_trials(&c, run.id).unwrap();
        let order: Vec<(u32, &str)> = q
            .iter()
            .map(|t| (t.trial_index, t.task_id.as_str()))
            .collect();
        assert_eq!(order[..4], [(1, "a"), (1, "a"), (1, "b"), (1, "b")]);
    }

    #[test]
    fn retry_and_requeue_keep_history() {
        let c = db();
        let run = new_run(&c);
        plan_trials(&c, &run, &["a".to_string()], &name).unwrap();
        let t = queued_trials(&c, run.id).unwrap().remove(0);
        patch_trial(
            &c,
            t.id,
            &TrialPatch {
                status: Some(TrialStatus::Agent),
                ..Default::default()
            },
        )
        .unwrap();
        let closed = requeue_active(&c, run.id, &name).unwrap();
        assert_eq!(closed.len(), 1);
        let attempts = trial_attempts(&c, run.id, &t.key()).unwrap();
        assert_eq!(attempts.len(), 2);
        assert_eq!(attempts[0].outcome, Some(Outcome::Interrupted));
        assert!(attempts[0].superseded);
        assert_eq!(attempts[1].status, TrialStatus::Queued);
        assert_eq!(attempts[1].attempt, 2);
        assert_eq!(current_trials(&c, run.id).unwrap().len(), 4);
    }

    #[test]
    fn narrow_reads_agree_with_the_whole_rows() {
        let c = db();
        let run = new_run(&c);
        let tasks: Vec<String> = ["a", "b", "c"].iter().map(|t| t.to_string()).collect();
        plan_trials(&c, &run, &tasks, &name).unwrap();
        // Every status on some trial, costs on some, and a superseded attempt.
        let queued = queued_trials(&c, run.id).unwrap();
        for (i, t) in queued.iter().enumerate() {
            patch_trial(
                &c,
                t.id,
                &TrialPatch {
                    status: Some(TrialStatus::ALL[i % TrialStatus::ALL.len()]),
                    cost_usd: (i % 3 != 0).then_some(i as f64 / 10.0),
                    ..Default::default()
                },
            )
            .unwrap();
        }
        requeue_active(&c, run.id, &name).unwrap();
        let requeued = queued_trials(&c, run.id).unwrap();
        for (t, status) in requeued
            .iter()
            .zip([TrialStatus::Verifying, TrialStatus::Building])
        {
            patch_trial(
                &c,
                t.id,
                &TrialPatch {
                    status: Some(status),
                    ..Default::default()
                },
            )
            .unwrap();
        }
        let whole: Vec<TrialRow> = current_trials(&c, run.id)
            .unwrap()
            .into_iter()
            .filter(|t| t.status.is_active())
            .collect();
        assert!(!whole.is_empty());
        assert_eq!(active_trials(&c, run.id).unwrap(), whole);
        let mut costs = Vec::new();
        for_each_attempt_cost(&c, run.id, |cond, status, cost| {
            costs.push((cond.to_string(), status, cost));
        })
        .unwrap();
        let want: Vec<_> = all_trials(&c, run.id)
            .unwrap()
            .into_iter()
            .map(|t| (t.condition, t.status, t.cost_usd))
            .collect();
        assert!(
            want.len() > tasks.len() * 4,
            "superseded attempts are counted"
        );
        assert_eq!(costs, want);
    }

    #[test]
    fn claim_refuses_live_owner() {
        let c = db();
        let run = new_run(&c);
        let me = std::process::id();
        let dead = {
            let mut child = std::process::Command::new("true").spawn().unwrap();
            let pid = child.id();
            child.wait().unwrap();
            pid
        };
        // A fresh owner on another host blocks; the same owner may re-claim.
        claim_run(&c, run.id, me, "other-host", 30).unwrap();
        assert!(matches!(
            claim_run(&c, run.id, dead, "this-host", 30),
            Err(StoreError::Conflict(_))
        ));
        claim_run(&c, run.id, me, "other-host", 30).unwrap();
        // After a release anyone may.
        release_run(&c, run.id, false, Some("test")).unwrap();
        claim_run(&c, run.id, dead, "this-host", 30).unwrap();
        // An owner on this host whose process is gone (kill -9) is stale at once…
        claim_run(&c, run.id, me, "this-host", 30).unwrap();
        // …but a live one is not.
        assert!(matches!(
            claim_run(&c, run.id, dead, "this-host", 30),
            Err(StoreError::Conflict(_))
        ));
    }

    #[test]
    fn commands_round_trip() {
        let c = db();
        let run = new_run(&c);
        plan_trials(&c, &run, &["a".to_string()], &name).unwrap();
        let t = queued_trials(&c, run.id).unwrap().remove(0);
        let id = insert_command(&c, run.id, CommandKind::Retry, t.id).unwrap();
        let p = pending_commands(&c, run.id).unwrap();
        assert_eq!(p[0].kind, CommandKind::Retry);
        close_command(&c, id, false, "still queued").unwrap();
        assert!(pending_commands(&c, run.id).unwrap().is_empty());
    }

    /// What each task's latest attempts show of skills: an attempt counts once whether it kept a
    /// trajectory, recorded uses, or both (several uses of one skill included); an attempt with
    /// neither is not counted; a superseded attempt and another condition are not read.
    #[test]
    fn skills_seen_counts_each_attempt_once_and_each_skill_once() {
        let c = db();
        let run = new_run(&c);
        let add = |task: &str, cond: &str, i: u32, a: u32, superseded: bool, traj: bool| {
            insert_trial(
                &c,
                &TrialRow {
                    run_id: run.id,
                    task_id: task.into(),
                    condition: cond.into(),
                    trial_index: i,
                    attempt: a,
                    superseded,
                    trial_name: format!("{task}-{cond}-{i}-{a}"),
                    trajectory_path: traj.then(|| "agent/trajectory.json".to_string()),
                    ..Default::default()
                },
            )
            .unwrap()
        };
        let uses = |names: &[(&str, &str)]| -> Vec<SkillUseRow> {
            names
                .iter()
                .map(|(skill, kind)| SkillUseRow {
                    skill: skill.to_string(),
                    kind: kind.to_string(),
                    first_step: Some(1),
                    count: 1,
                })
                .collect()
        };
        let both = add("a", "curated", 1, 1, false, true);
        let uses_only = add("a", "curated", 2, 1, false, false);
        let _neither = add("a", "curated", 3, 1, false, false);
        let old = add("b", "curated", 1, 1, true, true);
        let _latest = add("b", "curated", 1, 2, false, false);
        let other = add("a", "no-skills", 1, 1, false, true);
        set_skill_uses(
            &c,
            both,
            &uses(&[("pdf", "read"), ("pdf", "shell"), ("xlsx", "read")]),
        )
        .unwrap();
        set_skill_uses(&c, uses_only, &uses(&[("pdf", "invoke")])).unwrap();
        set_skill_uses(&c, old, &uses(&[("stale", "read")])).unwrap();
        set_skill_uses(&c, other, &uses(&[("elsewhere", "read")])).unwrap();
        let seen = crate::store::invocations::skills_seen(&c, run.id, "curated").unwrap();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen["a"].with_trajectory, 2);
        assert_eq!(
            seen["a"].skills.iter().collect::<Vec<_>>(),
            vec!["pdf", "xlsx"]
        );
        assert_eq!(seen["b"].with_trajectory, 0);
        assert!(seen["b"].skills.is_empty());
    }

    /// The flagged latest attempts, found through the partial index.
    #[test]
    fn tampered_trials_lists_only_flagged_latest_attempts() {
        let c = db();
        let run = new_run(&c);
        let flag = Some(serde_json::json!({"flagged": 1, "paths": ["C /bin/sh"]}));
        for (task, attempt, superseded, tamper) in [
            ("b", 1, false, flag.clone()),
            ("a", 1, true, flag.clone()),
            ("a", 2, false, flag.clone()),
            ("c", 1, false, None),
        ] {
            insert_trial(
                &c,
                &TrialRow {
                    run_id: run.id,
                    task_id: task.into(),
                    condition: "curated".into(),
                    trial_index: 1,
                    attempt,
                    superseded,
                    trial_name: format!("{task}-{attempt}"),
                    tamper,
                    ..Default::default()
                },
            )
            .unwrap();
        }
        let got: Vec<(String, u32)> = tampered_trials(&c, run.id)
            .unwrap()
            .into_iter()
            .map(|t| (t.task_id, t.attempt))
            .collect();
        assert_eq!(got, vec![("a".to_string(), 2), ("b".to_string(), 1)]);
    }
}
