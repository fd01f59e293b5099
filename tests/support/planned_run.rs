//! One way tests fill a store with trial rows: a run planned through the store API (its tasks with
//! domain and difficulty, every trial of every condition queued), whose trials a test then finishes
//! by task, condition and trial index. The analysis, report and rubric tests build their runs here.

use rusqlite::Connection;
use skillscope::store::queries::{self, NewRun, TrialPatch};
use skillscope::store::{Outcome, RunRow, RunTaskRow, TrialKey, TrialRow, TrialStatus};

use super::common::Scratch;

/// What to plan: the run's name, agent, model, trials per task × condition, conditions and tasks
/// as `(id, domain, difficulty)`. Task folders are `/t/<id>`, the jobs folder `/j`.
#[derive(Clone, Debug)]
pub struct RunPlan<'a> {
    /// The run's name.
    pub name: &'a str,
    /// The agent recorded for the run (`oracle` unless a test needs an LLM agent's name).
    pub agent: &'a str,
    /// The model recorded for the run.
    pub model: Option<&'a str>,
    /// Trials per task × condition.
    pub n_trials: u32,
    /// Condition labels, in the run's order.
    pub conditions: &'a [&'a str],
    /// `(task id, domain, difficulty)`, in the run's order.
    pub tasks: &'a [(&'a str, &'a str, &'a str)],
}

impl Default for RunPlan<'_> {
    fn default() -> Self {
        RunPlan {
            name: "run",
            agent: "oracle",
            model: None,
            n_trials: 1,
            conditions: &["no-skills", "curated"],
            tasks: &[],
        }
    }
}

/// The trial names of planned runs: `<task>__<condition>-<trial index>-<attempt>`.
pub fn namer(k: &TrialKey, attempt: u32) -> String {
    format!("{}__{}-{}-{attempt}", k.task_id, k.condition, k.trial_index)
}

/// An empty store in a [`Scratch`] folder, its writer thread stopped: tests write through the
/// connection.
pub fn empty_store() -> (Scratch, Connection) {
    let scratch = Scratch::new();
    let conn = scratch.store.connect().unwrap();
    scratch.store.writer().stop();
    (scratch, conn)
}

/// A planned run and its queued first attempts.
pub struct PlannedRun {
    /// The run's row.
    pub run: RunRow,
    /// The first attempt of every trial, as planned.
    pub trials: Vec<TrialRow>,
}

impl PlannedRun {
    /// Plans `plan` in the store behind `conn`: the run, its tasks and every trial queued.
    pub fn new(conn: &Connection, plan: &RunPlan) -> PlannedRun {
        let run = queries::insert_run(
            conn,
            &NewRun {
                name: plan.name.into(),
                tasks_dir: "/t".into(),
                agent: plan.agent.into(),
                model: plan.model.map(str::to_string),
                n_trials: plan.n_trials,
                conditions: plan.conditions.iter().map(|c| c.to_string()).collect(),
                jobs_dir: "/j".into(),
                settings: serde_json::json!({}),
            },
        )
        .unwrap();
        let tasks: Vec<RunTaskRow> = plan
            .tasks
            .iter()
            .map(|(id, domain, difficulty)| RunTaskRow {
                task_id: id.to_string(),
                domain: domain.to_string(),
                difficulty: difficulty.to_string(),
                path: format!("/t/{id}"),
                problems: vec![],
                digest: None,
            })
            .collect();
        queries::upsert_run_tasks(conn, run.id, &tasks).unwrap();
        let ids: Vec<String> = plan.tasks.iter().map(|t| t.0.to_string()).collect();
        queries::plan_trials(conn, &run, &ids, &namer).unwrap();
        let trials = queries::current_trials(conn, run.id).unwrap();
        PlannedRun { run, trials }
    }

    /// The id of trial `index` (1-based) of `task` × `condition`.
    ///
    /// # Panics
    /// When the run planned no such trial.
    pub fn id(&self, task: &str, condition: &str, index: u32) -> i64 {
        self.trials
            .iter()
            .find(|t| t.task_id == task && t.condition == condition && t.trial_index == index)
            .unwrap_or_else(|| panic!("no trial {task} × {condition} #{index} in the plan"))
            .id
    }

    /// Writes `patch` to trial `index` of `task` × `condition` as the engine ends an attempt.
    pub fn finish(
        &self,
        conn: &Connection,
        task: &str,
        condition: &str,
        index: u32,
        patch: &TrialPatch,
    ) {
        queries::finish_trial(conn, self.id(task, condition, index), patch).unwrap();
    }

    /// Ends trial `index` of `task` × `condition` with a verdict: done, `outcome`, `reward`.
    pub fn verdict(
        &self,
        conn: &Connection,
        (task, condition, index): (&str, &str, u32),
        outcome: Outcome,
        reward: Option<f64>,
    ) {
        self.finish(
            conn,
            task,
            condition,
            index,
            &TrialPatch {
                status: Some(TrialStatus::Done),
                outcome: Some(outcome),
                reward,
                ..Default::default()
            },
        );
    }
}

/// Marks `run` as run by a live engine in this process: status `running`, this process's pid
/// and host as its owner, started and heartbeat now (live for the store's stale-after seconds).
pub fn mark_live(conn: &Connection, run: i64) {
    conn.execute(
        "UPDATE runs SET status = 'running', owner_pid = ?1, owner_host = ?2,
         started_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
         heartbeat_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?3",
        rusqlite::params![
            std::process::id(),
            skillscope::store::owner::host_name(),
            run
        ],
    )
    .unwrap();
}

/// A plain run named `examples` of two of the built-in example tasks (one trial, no-skills and
/// curated), its tasks folder the examples written into `dir`: the skill browser lists their
/// curated skills. Returns the tasks folder and the run.
pub fn examples_run(conn: &Connection, dir: &std::path::Path) -> (std::path::PathBuf, PlannedRun) {
    let examples = skillscope::skillsbench::examples::materialize(dir).unwrap();
    let run = PlannedRun::new(
        conn,
        &RunPlan {
            name: "examples",
            n_trials: 1,
            tasks: &[
                ("ledger-code-mapping", "Office & White Collar", "medium"),
                ("sales-region-totals", "Finance", "easy"),
            ],
            ..Default::default()
        },
    );
    conn.execute(
        "UPDATE runs SET tasks_dir = ?1 WHERE id = ?2",
        rusqlite::params![examples.display().to_string(), run.run.id],
    )
    .unwrap();
    (examples, run)
}
