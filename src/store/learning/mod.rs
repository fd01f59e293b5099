//! Rows and queries of the learning phase (schema migration 5): learning spaces, each trial's
//! step in the learning pipeline, curated skills uploaded into a space, skill versions and their
//! files (curated and learned, for diffs), which trials changed which skill, exports, and
//! experiments and their reused baselines — one file per table group. Timestamps are RFC 3339 UTC text; JSON columns hold
//! arrays of strings.

mod baselines;
mod curated;
mod experiments;
mod exports;
mod progress;
mod provenance;
mod skill_versions;
mod spaces;
mod steps;

pub use baselines::*;
pub use curated::*;
pub use experiments::*;
pub use exports::*;
pub use progress::*;
pub use provenance::*;
pub use skill_versions::*;
pub use spaces::*;
pub use steps::*;

use rusqlite::{Connection, Row};

use super::StoreError;

pub(super) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Every row of `sql` mapped by `f`.
pub(super) fn all<T, P: rusqlite::Params>(
    conn: &Connection,
    sql: &str,
    params: P,
    f: impl FnMut(&Row) -> rusqlite::Result<T>,
) -> Result<Vec<T>, StoreError> {
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt.query_map(params, f)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub(super) fn json_list(text: String) -> Vec<String> {
    serde_json::from_str(&text).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn conn_with_run() -> (tempfile::TempDir, Connection, i64, i64) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let conn = store.connect().unwrap();
        store.writer().stop();
        conn.execute_batch(
            "INSERT INTO runs (name, created_at, tasks_dir, agent, n_trials, conditions, jobs_dir, status)
             VALUES ('r', 'now', '/t', 'oracle', 1, '[\"no-skills\"]', '/j', 'finished');
             INSERT INTO trials (run_id, task_id, condition, trial_index, attempt, status, agent, trial_name, queued_at)
             VALUES (1, 'a', 'no-skills', 0, 1, 'done', 'oracle', 'a__1', 'now');",
        )
        .unwrap();
        (dir, conn, 1, 1)
    }

    #[test]
    fn spaces_steps_versions_and_experiments_round_trip() {
        let (_d, conn, run, trial) = conn_with_run();
        let new = NewSpace {
            label: "LS-A".into(),
            run_id: run,
            condition: "no-skills".into(),
            experiment: None,
            base_url: "http://h/api/v1".into(),
            curated: false,
            keep_defaults: false,
        };
        let s = find_or_insert_space(&conn, &new).unwrap();
        assert_eq!(find_or_insert_space(&conn, &new).unwrap().id, s.id);
        let other = NewSpace {
            condition: "curated".into(),
            ..new.clone()
        };
        assert!(matches!(
            find_or_insert_space(&conn, &other),
            Err(StoreError::Conflict(_))
        ));
        patch_space(
            &conn,
            s.id,
            &SpacePatch {
                remote_id: Some("u".into()),
                status_mode: Some("patch".into()),
                ..Default::default()
            },
        )
        .unwrap();
        let s = get_space(&conn, s.id).unwrap();
        assert_eq!(s.remote_id.as_deref(), Some("u"));

        let step = NewStep {
            trial_id: trial,
            task_id: "a".into(),
            trial_index: 0,
            verdict: "success".into(),
            session_id: "sid".into(),
            step: "queued".into(),
            note: None,
        };
        assert_eq!(
            plan_steps(&conn, s.id, std::slice::from_ref(&step)).unwrap(),
            1
        );
        assert_eq!(plan_steps(&conn, s.id, &[step]).unwrap(), 0);
        patch_step(
            &conn,
            s.id,
            trial,
            &StepPatch {
                step: Some("attached".into()),
                task_ids: Some(vec!["t1".into()]),
                error: Some(Some("boom".into())),
                ..Default::default()
            },
        )
        .unwrap();
        let st = &steps(&conn, s.id).unwrap()[0];
        assert_eq!(
            (st.step.as_str(), st.task_ids.clone()),
            ("attached", vec!["t1".to_string()])
        );
        assert_eq!(st.error.as_deref(), Some("boom"));

        let v = NewSkillVersion {
            origin: "learned".into(),
            name: "x".into(),
            description: "d".into(),
            content_hash: "h1".into(),
            remote_id: None,
            dir: None,
            problems: vec![],
            files: vec![SkillFileRow {
                path: "SKILL.md".into(),
                size: 3,
                sha256: "s".into(),
                text: Some("abc".into()),
            }],
        };
        let (id, new_v) = record_version(&conn, s.id, &v).unwrap();
        assert!(new_v);
        assert_eq!(record_version(&conn, s.id, &v).unwrap(), (id, false));
        assert_eq!(
            version_files(&conn, id).unwrap()[0].text.as_deref(),
            Some("abc")
        );
        add_source(&conn, s.id, "x", trial, "created").unwrap();
        assert_eq!(sources(&conn, s.id).unwrap()[0].task_id, "a");

        // Progress: one open step with an error, then a mislabeled one once finished.
        let p = space_progress(&conn, get_space(&conn, s.id).unwrap()).unwrap();
        assert_eq!((p.total, p.finished, p.errors), (1, 0, 1));
        assert_eq!(p.current.as_ref().map(|c| c.trial_id), Some(trial));
        assert_eq!(p.by_step, vec![("attached".to_string(), 1)]);
        patch_step(
            &conn,
            s.id,
            trial,
            &StepPatch {
                step: Some("mislabeled".into()),
                finished: true,
                ..Default::default()
            },
        )
        .unwrap();
        let ex = add_export(&conn, s.id, "/x/ls-a-v1", 1, &[]).unwrap();
        let p = space_progress(&conn, get_space(&conn, s.id).unwrap()).unwrap();
        assert_eq!((p.total, p.finished, p.mislabeled, p.errors), (1, 1, 1, 0));
        assert!(p.current.is_none());
        assert_eq!(p.export, Some(ex));
        assert_eq!(spaces_of_runs(&conn, &[run]).unwrap().len(), 1);
        assert!(spaces_of_runs(&conn, &[run + 1]).unwrap().is_empty());

        let plan = serde_json::json!({"trials": 1});
        let e = find_or_insert_experiment(&conn, "e", &plan, "e-round1", "e-round2").unwrap();
        assert_eq!(e.phase, "round1");
        set_experiment_phase(&conn, "e", "learn", None).unwrap();
        assert_eq!(
            experiment_of_run(&conn, "e-round2").unwrap().unwrap().name,
            "e"
        );
        assert!(experiment_of_run(&conn, "other").unwrap().is_none());
        assert_eq!(find_experiment(&conn, "e").unwrap().unwrap().phase, "learn");
        assert!(find_or_insert_experiment(&conn, "e", &serde_json::json!({}), "a", "b").is_err());
    }
}
