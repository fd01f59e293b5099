//! The experiment ledger: the two-round pipeline's typed view of one experiment in the store
//! (`evaluation-plan.md`, "Evaluation flow"). Every write the pipeline makes for an experiment
//! goes through a named method here — registering it, moving its phase, storing its held-out
//! split and the skills each round-2 task received — each one job of the single
//! [`Writer`](super::Writer), as [`RunLedger`](super::RunLedger) does for a run; so do the reads
//! it resumes from (the stored row, a space's exports, what a run cost, the rounds' trials), so
//! `experiment/` reads as the plan's phases rather than SQL.

use rusqlite::Connection;

use super::learning::{self as lq, ExperimentRow, ExportRow, Round2SkillsRow, SpaceRow};
use super::{RunRow, RunTaskRow, Store, StoreError, TrialBrief, TrialPlan, TrialRow, queries};

/// One experiment's ledger. Cheap to clone.
#[derive(Clone)]
pub struct ExperimentLedger {
    store: Store,
    experiment: ExperimentRow,
}

/// One round's run as the experiment's results score it.
#[derive(Debug, Clone)]
pub struct RoundRecord {
    /// 1 (conditions A, B and maybe C) or 2 (A' and B').
    pub round: u8,
    /// The round's run.
    pub run: RunRow,
    /// The tasks the run selected, in its order.
    pub task_ids: Vec<String>,
    /// The latest attempt of every trial, brief.
    pub trials: Vec<TrialBrief>,
    /// The trials planned per task and condition.
    pub plan: TrialPlan,
}

/// What round 2 is given per task: round 1's tasks and where the space's learned skills came
/// from.
#[derive(Debug, Clone)]
pub struct Round2Sources {
    /// Round 1's tasks (each one's domain and folder).
    pub tasks: Vec<RunTaskRow>,
    /// (skill, task it was learned from) of the space's skills.
    pub sources: Vec<(String, String)>,
}

impl ExperimentLedger {
    /// Finds the experiment `name`, or creates it in phase `round1` with its plan (the plan's
    /// public JSON) and the names of its two runs.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] when an experiment of that name was started with another plan;
    /// other database errors.
    pub async fn register(
        store: &Store,
        name: String,
        plan: serde_json::Value,
        round1_run: String,
        round2_run: String,
    ) -> Result<ExperimentLedger, StoreError> {
        let experiment = store
            .writer()
            .write(move |c| {
                lq::find_or_insert_experiment(c, &name, &plan, &round1_run, &round2_run)
            })
            .await?;
        Ok(ExperimentLedger {
            store: store.clone(),
            experiment,
        })
    }

    /// The experiment as registered (its phase then).
    pub fn experiment(&self) -> &ExperimentRow {
        &self.experiment
    }

    /// The experiment's row as stored now.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] when the experiment is gone; database errors.
    pub async fn reload(&self) -> Result<ExperimentRow, StoreError> {
        let name = self.experiment.name.clone();
        self.store
            .writer()
            .write(move |c| {
                lq::find_experiment(c, &name)?
                    .ok_or_else(|| StoreError::NotFound(format!("experiment {name}")))
            })
            .await
    }

    /// Moves the experiment to `phase` (one of `round1`, `learn`, `export`, `round2`, `done`)
    /// with a note (`None` clears it).
    ///
    /// # Errors
    /// Database errors.
    pub async fn set_phase(&self, phase: &str, note: Option<String>) -> Result<(), StoreError> {
        let (name, phase) = (self.experiment.name.clone(), phase.to_string());
        self.store
            .writer()
            .write(move |c| lq::set_experiment_phase(c, &name, &phase, note.as_deref()))
            .await
    }

    /// Stores the experiment's held-out split (its JSON, `experiments.split`).
    ///
    /// # Errors
    /// Database errors.
    pub async fn set_split(&self, split: serde_json::Value) -> Result<(), StoreError> {
        let name = self.experiment.name.clone();
        self.store
            .writer()
            .write(move |c| lq::set_experiment_split(c, &name, &split))
            .await
    }

    /// Records what each round-2 task received from one space (`round2_skills`), replacing
    /// earlier rows of the same space and task.
    ///
    /// # Errors
    /// Database errors.
    pub async fn put_round2_skills(&self, rows: Vec<Round2SkillsRow>) -> Result<(), StoreError> {
        let name = self.experiment.name.clone();
        self.store
            .writer()
            .write(move |c| lq::put_round2_skills(c, &name, &rows))
            .await
    }

    /// Records the experiment's reused baseline (`experiment_baselines`, replacing an earlier
    /// record).
    ///
    /// # Errors
    /// Database errors.
    pub async fn put_baseline(&self, row: lq::BaselineRow) -> Result<(), StoreError> {
        self.store
            .writer()
            .write(move |c| lq::put_baseline(c, &row))
            .await
    }

    /// The learning space `label` learned from run `run`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] `no run <run>` or `no learning space <label>`; database errors.
    pub fn space(&self, run: &str, label: &str) -> Result<SpaceRow, StoreError> {
        let conn = self.store.connect()?;
        let run_row = queries::find_run(&conn, run)?
            .ok_or_else(|| StoreError::NotFound(format!("no run {run}")))?;
        lq::list_spaces(&conn)?
            .into_iter()
            .find(|s| s.run_id == run_row.id && s.label == label)
            .ok_or_else(|| StoreError::NotFound(format!("no learning space {label}")))
    }

    /// The recorded exports of space `space_id`, oldest first.
    ///
    /// # Errors
    /// Database errors.
    pub async fn exports(&self, space_id: i64) -> Result<Vec<ExportRow>, StoreError> {
        self.store
            .writer()
            .write(move |c| lq::exports(c, space_id))
            .await
    }

    /// Round 1's tasks (run `round1_run`) and the provenance of space `space_id`'s skills: what
    /// round 2's per-task selection is made from.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] `no run <round1_run>`; database errors.
    pub fn round2_sources(
        &self,
        round1_run: &str,
        space_id: i64,
    ) -> Result<Round2Sources, StoreError> {
        let conn = self.store.connect()?;
        let run = queries::find_run(&conn, round1_run)?
            .ok_or_else(|| StoreError::NotFound(format!("no run {round1_run}")))?;
        let tasks = queries::run_tasks(&conn, run.id)?;
        let sources = lq::sources(&conn, space_id)?
            .into_iter()
            .map(|s| (s.skill, s.task_id))
            .collect();
        Ok(Round2Sources { tasks, sources })
    }

    /// What run `run` cost, USD: every attempt's cost, superseded ones too (0 when there is no
    /// such run).
    ///
    /// # Errors
    /// Database errors.
    pub async fn run_cost(&self, run: &str) -> Result<f64, StoreError> {
        let run = run.to_string();
        self.store
            .writer()
            .write(move |c| {
                let Some(r) = queries::find_run(c, &run)? else {
                    return Ok(0.0);
                };
                Ok(queries::all_trials(c, r.id)?
                    .iter()
                    .filter_map(|t| t.cost_usd)
                    .sum())
            })
            .await
    }

    /// The rounds of `experiment` that have a run, round 1 first: none before round 1 has a
    /// run (round 2 is not read without it).
    ///
    /// # Errors
    /// Database errors.
    pub fn rounds(&self, experiment: &ExperimentRow) -> Result<Vec<RoundRecord>, StoreError> {
        let conn = self.store.connect()?;
        let mut out = Vec::new();
        for (round, name) in [(1, &experiment.round1_run), (2, &experiment.round2_run)] {
            let Some(run) = queries::find_run(&conn, name)? else {
                if round == 1 {
                    break;
                }
                continue;
            };
            out.push(RoundRecord {
                round,
                task_ids: queries::run_tasks(&conn, run.id)?
                    .into_iter()
                    .map(|t| t.task_id)
                    .collect(),
                trials: queries::current_briefs(&conn, run.id)?,
                plan: queries::trial_plan(&conn, &run)?,
                run,
            });
        }
        Ok(out)
    }
}

/// Reads an experiment's state from one connection for its forecast
/// (`experiment::forecast`): the stored experiment, its runs' latest attempts, and other runs
/// of the same agent and model — the estimates' second source. Cheap; borrows the connection.
#[derive(Clone, Copy)]
pub struct ExperimentReader<'c> {
    conn: &'c Connection,
}

impl<'c> ExperimentReader<'c> {
    /// A reader over `conn` (a writable store's connection or one opened for reading).
    pub fn new(conn: &'c Connection) -> ExperimentReader<'c> {
        ExperimentReader { conn }
    }

    /// The experiment called `name`, if any.
    ///
    /// # Errors
    /// Database errors.
    pub fn experiment(&self, name: &str) -> Result<Option<ExperimentRow>, StoreError> {
        lq::find_experiment(self.conn, name)
    }

    /// Run `name` and the latest attempt of each of its trials, if the run exists.
    ///
    /// # Errors
    /// Database errors.
    pub fn run_trials(&self, name: &str) -> Result<Option<(RunRow, Vec<TrialRow>)>, StoreError> {
        let Some(run) = queries::find_run(self.conn, name)? else {
            return Ok(None);
        };
        let trials = queries::current_trials(self.conn, run.id)?;
        Ok(Some((run, trials)))
    }

    /// Calls `f` with every run of agent `agent` and model `model` not named in `except`, oldest
    /// first, and the latest attempt of each of its trials — one run's trials in memory at a
    /// time.
    ///
    /// # Errors
    /// Database errors.
    pub fn for_each_run_of(
        &self,
        agent: &str,
        model: Option<&str>,
        except: [&str; 2],
        mut f: impl FnMut(RunRow, Vec<TrialRow>),
    ) -> Result<(), StoreError> {
        for run in queries::list_runs(self.conn)? {
            if except.contains(&run.name.as_str())
                || run.agent != agent
                || run.model.as_deref() != model
            {
                continue;
            }
            let trials = queries::current_trials(self.conn, run.id)?;
            f(run, trials);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::store::ledger::Owner;
    use crate::store::queries::NewRun;
    use crate::store::{RunLedger, TrialKey};

    /// Registers run `name` (conditions A and B, one trial each) over tasks `a` and `b` and plans
    /// its trials.
    async fn run(store: &Store, name: &str) -> RunLedger {
        let new = NewRun {
            name: name.into(),
            tasks_dir: "/t".into(),
            agent: "oracle".into(),
            model: None,
            n_trials: 1,
            conditions: vec!["no-skills".into(), "curated".into()],
            jobs_dir: "/j".into(),
            settings: serde_json::json!({}),
        };
        let tasks: Vec<RunTaskRow> = ["a", "b"]
            .iter()
            .map(|t| RunTaskRow {
                task_id: t.to_string(),
                domain: "d".into(),
                difficulty: "easy".into(),
                path: format!("/t/{t}"),
                problems: Vec::new(),
                digest: None,
            })
            .collect();
        let owner = Owner {
            pid: std::process::id(),
            host: "here".into(),
            stale_after_secs: 30,
        };
        let namer = Arc::new(|k: &TrialKey, n: u32| format!("{}__{}{n}", k.task_id, k.condition));
        let ledger = RunLedger::register(store, new, tasks, owner, namer, false)
            .await
            .unwrap();
        ledger.plan(vec!["a".into(), "b".into()]).await.unwrap();
        ledger
    }

    #[tokio::test]
    async fn an_experiment_resumes_from_its_stored_phase_split_and_what_its_runs_cost() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let plan = serde_json::json!({"trials": 1});
        let register = |plan: serde_json::Value| {
            ExperimentLedger::register(
                &store,
                "e".into(),
                plan,
                "e-round1".into(),
                "e-round2".into(),
            )
        };
        let ledger = register(plan.clone()).await.unwrap();
        assert_eq!(ledger.experiment().phase, "round1");
        // Another plan under the same name is refused; the same plan finds the stored one.
        assert!(matches!(
            register(serde_json::json!({"trials": 2})).await,
            Err(StoreError::Conflict(_))
        ));
        ledger
            .set_phase("learn", Some("incomplete".into()))
            .await
            .unwrap();
        ledger
            .set_split(serde_json::json!({"test": ["b"]}))
            .await
            .unwrap();
        let again = register(plan).await.unwrap();
        let row = again.reload().await.unwrap();
        assert_eq!(
            (row.phase.as_str(), row.note.as_deref()),
            ("learn", Some("incomplete"))
        );
        assert_eq!(row.split, Some(serde_json::json!({"test": ["b"]})));

        // Nothing is read before round 1 has a run; a run that does not exist cost nothing.
        assert!(ledger.rounds(&row).unwrap().is_empty());
        assert_eq!(ledger.run_cost("e-round1").await.unwrap(), 0.0);
        assert!(matches!(
            ledger.space("e-round1", "LS-A"),
            Err(StoreError::NotFound(m)) if m == "no run e-round1"
        ));

        // Round 1's cost counts every attempt, superseded ones too.
        let r1 = run(&store, "e-round1").await;
        let queued = r1.queued().await.unwrap();
        let first = queued[0].id;
        let second = r1.requeue(first).await.unwrap().id;
        for (id, cost) in [(first, 0.25), (second, 0.5), (queued[1].id, 1.0)] {
            store
                .writer()
                .write(move |c| {
                    c.execute(
                        "UPDATE trials SET cost_usd = ?2 WHERE id = ?1",
                        rusqlite::params![id, cost],
                    )?;
                    Ok(())
                })
                .await
                .unwrap();
        }
        assert_eq!(ledger.run_cost("e-round1").await.unwrap(), 1.75);
        assert_eq!(ledger.run_cost("e-round2").await.unwrap(), 0.0);
        assert!(matches!(
            ledger.space("e-round1", "LS-A"),
            Err(StoreError::NotFound(m)) if m == "no learning space LS-A"
        ));
        let given = ledger.round2_sources("e-round1", 1).unwrap();
        assert_eq!(given.tasks.len(), 2);
        assert!(given.sources.is_empty());

        // The rounds that have runs, round 1 first, with their tasks and latest attempts.
        run(&store, "e-round2").await;
        let rounds = ledger.rounds(&row).unwrap();
        let seen: Vec<(u8, &str, usize, usize)> = rounds
            .iter()
            .map(|r| {
                (
                    r.round,
                    r.run.name.as_str(),
                    r.task_ids.len(),
                    r.trials.len(),
                )
            })
            .collect();
        assert_eq!(seen, [(1, "e-round1", 2, 4), (2, "e-round2", 2, 4)]);

        // The forecast's reads: the experiment, a run's latest attempts, and the other runs of
        // the same agent and model only.
        let conn = store.connect().unwrap();
        let reader = ExperimentReader::new(&conn);
        assert_eq!(reader.experiment("e").unwrap().unwrap().phase, "learn");
        assert!(reader.experiment("f").unwrap().is_none());
        assert!(reader.run_trials("nope").unwrap().is_none());
        let (r, trials) = reader.run_trials("e-round1").unwrap().unwrap();
        assert_eq!((r.name.as_str(), trials.len()), ("e-round1", 4));
        let others = |agent: &str, model: Option<&str>, except: [&str; 2]| {
            let mut seen = Vec::new();
            reader
                .for_each_run_of(agent, model, except, |run, trials| {
                    seen.push((run.name, trials.len()))
                })
                .unwrap();
            seen
        };
        assert_eq!(
            others("oracle", None, ["e-round1", "x"]),
            [("e-round2".to_string(), 4)]
        );
        assert_eq!(others("oracle", None, ["x", "y"]).len(), 2);
        assert!(others("oracle", None, ["e-round1", "e-round2"]).is_empty());
        assert!(others("oracle", Some("m"), ["x", "y"]).is_empty());
        assert!(others("claude-code", None, ["x", "y"]).is_empty());
    }
}
