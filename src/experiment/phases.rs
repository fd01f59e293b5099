//! The experiment's phases as steps (`evaluation-plan.md`, "Evaluation flow"): round 1,
//! learning, export, round 2 and the report of what was reached. Each step is resumable and ends
//! by moving the experiment's stored phase on — or by saying that the process stopped first;
//! [`super::Experiment::run`] calls them in the order the stored phase names.

use std::path::PathBuf;

use super::selection::{self, Round2Skills};
use super::split::{self, Split};
use super::{
    ConditionResult, Experiment, ExperimentError, ExperimentOutcome, ExperimentSetup,
    learn_summary, results, round2_selection,
};
use crate::acontext::learn::{LearnError, LearnOptions, LearnReport, Learner};
use crate::acontext::versions::export_version;
use crate::engine::EngineError;
use crate::skillsbench::Condition;
use crate::store::learning::{ExperimentRow, ExportRow, SpaceRow};
use crate::store::{ExperimentLedger, StoreError};

/// How a phase step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// The phase is complete and the stored phase moved on.
    Next,
    /// The process was asked to stop (or a round stopped) before the phase was complete.
    Stopped,
}

/// One experiment being carried out: its ledger, its row as last read, its runs and what this
/// process learned so far.
pub(super) struct Pipeline<'a> {
    x: &'a Experiment,
    setup: &'a ExperimentSetup,
    ledger: ExperimentLedger,
    /// The experiment's row as last read (its phase says which step is next).
    pub(super) exp: ExperimentRow,
    name: String,
    r1: String,
    r2: String,
    split: Option<Split>,
    condition_c: Option<Condition>,
    learned: Vec<(String, LearnReport)>,
    /// A new experiment's `--baseline-from` run, checked before it was registered (so a refused
    /// run leaves no experiment behind).
    prechecked: Option<crate::store::learning::BaselineRow>,
}

impl<'a> Pipeline<'a> {
    /// Registers the experiment (or finds it, with the same plan), its held-out split and
    /// condition C.
    pub(super) async fn start(
        x: &'a Experiment,
        setup: &'a ExperimentSetup,
    ) -> Result<Pipeline<'a>, ExperimentError> {
        let name = setup.plan.name();
        let r1 = match &setup.baseline {
            Some(b) => b.run.clone(),
            None => format!("{name}-round1"),
        };
        let r2 = format!("{name}-round2");
        let prechecked = match &setup.baseline {
            Some(b) if Self::is_new(x, &name)? => {
                let plan =
                    super::baseline::planned(setup, &Self::round1_conditions(setup)?).await?;
                Some(Self::check_baseline(x, &name, b.clone(), plan).await?)
            }
            _ => None,
        };
        let ledger = ExperimentLedger::register(
            &x.store,
            name.clone(),
            setup.plan.public_json(),
            r1.clone(),
            r2.clone(),
        )
        .await?;
        let exp = ledger.experiment().clone();
        if setup.baseline.is_some() && exp.round1_run != r1 {
            return Err(ExperimentError::Baseline(format!(
                "--baseline-from {r1}: experiment {name} already has round 1 as run {}; give the plan another name to reuse {r1}",
                exp.round1_run
            )));
        }
        // A resumed experiment keeps the round-1 run it was registered with.
        let (r1, r2) = (exp.round1_run.clone(), exp.round2_run.clone());
        let mut p = Pipeline {
            x,
            setup,
            ledger,
            exp,
            name,
            r1,
            r2,
            split: None,
            condition_c: None,
            learned: Vec::new(),
            prechecked,
        };
        p.split = p.ensure_split().await?;
        p.condition_c = setup
            .plan
            .condition_c()
            .map_err(|e| ExperimentError::Plan(e.to_string()))?;
        Ok(p)
    }

    /// True when no experiment `name` is stored yet.
    fn is_new(x: &Experiment, name: &str) -> Result<bool, ExperimentError> {
        let conn = x.store.connect()?;
        let stored =
            crate::store::experiment_ledger::ExperimentReader::new(&conn).experiment(name)?;
        Ok(stored.is_none())
    }

    /// Round 1's conditions: A and B, and C when the plan has `[self_generated]`.
    fn round1_conditions(setup: &ExperimentSetup) -> Result<Vec<Condition>, ExperimentError> {
        let mut conditions = vec![Condition::NoSkills, Condition::Curated];
        conditions.extend(
            setup
                .plan
                .condition_c()
                .map_err(|e| ExperimentError::Plan(e.to_string()))?,
        );
        Ok(conditions)
    }

    /// [`super::baseline::check`] off the async threads.
    async fn check_baseline(
        x: &Experiment,
        name: &str,
        from: super::baseline::BaselineFrom,
        plan: crate::domain::provenance::Provenance,
    ) -> Result<crate::store::learning::BaselineRow, ExperimentError> {
        let (store, name) = (x.store.clone(), name.to_string());
        tokio::task::spawn_blocking(move || super::baseline::check(&store, &name, &from, &plan))
            .await
            .map_err(|e| ExperimentError::Plan(e.to_string()))?
    }

    /// Reads the experiment's row again (after a step moved its phase).
    pub(super) async fn reload(&mut self) -> Result<(), StoreError> {
        self.exp = self.ledger.reload().await?;
        Ok(())
    }

    /// Round 1: conditions A and B (and C) on the selected tasks.
    pub(super) async fn round1(&mut self) -> Result<Step, ExperimentError> {
        let (name, r1) = (&self.name, &self.r1);
        let mut conditions = vec![Condition::NoSkills, Condition::Curated];
        conditions.extend(self.condition_c.clone());
        if self.setup.baseline.is_some() || *r1 != format!("{name}-round1") {
            return self.reuse_baseline(&conditions).await;
        }
        let which = if conditions.len() == 3 {
            "A, B and C"
        } else {
            "A and B"
        };
        let message = format!("{name}: round 1 (conditions {which}) as run {r1}");
        self.x.say(r1, "info", &message).await;
        let mut req = self.setup.round1.clone();
        req.name = Some(r1.clone());
        req.sequential = sequential_round1(&self.setup.plan, &conditions);
        req.conditions = conditions;
        if !self.x.round(req).await?.finished {
            return Ok(Step::Stopped);
        }
        self.ledger.set_phase("learn", None).await?;
        Ok(Step::Next)
    }

    /// Round 1 reused from the stored run the experiment was registered with
    /// (`--baseline-from`): checked against the plan's round 1 ([`super::baseline::check`]),
    /// recorded, and the experiment moves on to learning. Resumed without the flag, the run is
    /// checked again with no drift accepted.
    async fn reuse_baseline(&mut self, conditions: &[Condition]) -> Result<Step, ExperimentError> {
        let (name, r1) = (self.name.clone(), self.r1.clone());
        let from = self
            .setup
            .baseline
            .clone()
            .unwrap_or_else(|| super::baseline::BaselineFrom {
                run: r1.clone(),
                allow: Vec::new(),
            });
        let checked = match self.prechecked.take() {
            Some(c) => c,
            None => {
                let plan = super::baseline::planned(self.setup, conditions).await?;
                Self::check_baseline(self.x, &name, from, plan).await?
            }
        };
        let accepted = if checked.accepted.is_empty() {
            String::new()
        } else {
            format!(
                "; drift accepted with --allow-drift: {}",
                checked
                    .accepted
                    .iter()
                    .map(|m| m.describe("run", "plan"))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        };
        let message = format!(
            "{}: round 1 reused from run {} ({}, database {}) — not run again{accepted}",
            self.name, checked.run, checked.source, checked.db
        );
        self.ledger.put_baseline(checked).await?;
        self.x.say(&r1, "info", &message).await;
        self.ledger.set_phase("learn", None).await?;
        Ok(Step::Next)
    }

    /// Learning: LS-A from the A trials and LS-B (starting with the curated skills) from the B
    /// trials, both at once; with a split, only the train tasks' trials.
    pub(super) async fn learn(&mut self) -> Result<Step, ExperimentError> {
        let (setup, r1) = (self.setup, self.r1.clone());
        let spaces = &setup.plan.spaces;
        let message = format!(
            "{}: learning ({} from A, {} from B)",
            self.name, spaces.a.label, spaces.b.label
        );
        self.x.say(&r1, "info", &message).await;
        let learner = Learner {
            store: self.x.store.clone(),
            client: self.x.client.clone(),
            cancel: self.x.cancel.clone(),
            progress: self.x.progress.clone(),
        };
        let opts = |space: &super::plan::SpacePlan, condition: Condition, curated| LearnOptions {
            label: space.label.clone(),
            run: r1.clone(),
            condition: condition.key(),
            curated,
            keep_defaults: space.keep_default_skills,
            experiment: Some(self.name.clone()),
            tasks: self.split.as_ref().map(|s| s.train.clone()),
            ..setup.learn.clone()
        };
        let opts_a = opts(&spaces.a, Condition::NoSkills, false);
        let opts_b = opts(&spaces.b, Condition::Curated, true);
        let (ra, rb) = tokio::join!(learner.learn(&opts_a), learner.learn(&opts_b));
        if matches!(ra, Err(LearnError::Cancelled)) || matches!(rb, Err(LearnError::Cancelled)) {
            return Ok(Step::Stopped);
        }
        for (label, r) in [(&opts_a.label, &ra), (&opts_b.label, &rb)] {
            if let Err(e) = r {
                let message = format!(
                    "{label}: learning stopped by an error (run the plan again to resume): {e}"
                );
                self.x.say(&r1, "error", &message).await;
            }
        }
        let learned = [(opts_a.label, ra?), (opts_b.label, rb?)];
        let left = self.say_learned(&learned).await;
        self.learned.extend(learned);
        if !left.is_empty() {
            let note = format!(
                "learning incomplete (run the plan again to retry): {}",
                left.join(" | ")
            );
            self.x.say(&r1, "warn", &note).await;
            self.ledger.set_phase("learn", Some(note.clone())).await?;
            return Err(ExperimentError::Incomplete(note));
        }
        self.ledger.set_phase("export", None).await?;
        Ok(Step::Next)
    }

    /// Says what each space's learning pass did — trials the server's task agent mislabeled,
    /// then a summary per space — and returns the spaces' errors (`<label>: <errors>`).
    async fn say_learned(&self, learned: &[(String, LearnReport); 2]) -> Vec<String> {
        let r1 = &self.r1;
        let mut left = Vec::new();
        for (label, r) in learned {
            if !r.mislabeled.is_empty() {
                let message = format!(
                    "{label}: {} trial(s) MISLABELED by the server's task agent (learned with the wrong verdict): {}",
                    r.mislabeled.len(),
                    r.mislabeled.join(", ")
                );
                self.x.say(r1, "warn", &message).await;
            }
            if !r.errors.is_empty() {
                left.push(format!("{label}: {}", r.errors.join("; ")));
            }
        }
        for (label, r) in learned {
            let message = format!("{label}: learning pass finished ({})", learn_summary(r));
            self.x.say(r1, "info", &message).await;
        }
        left
    }

    /// Export: each space not yet exported to `<exports>/<name>/<label>-v<N>`.
    pub(super) async fn export(&mut self) -> Result<Step, ExperimentError> {
        let (setup, r1) = (self.setup, &self.r1);
        let root = setup.exports_root.join(&self.name);
        for label in [&setup.plan.spaces.a.label, &setup.plan.spaces.b.label] {
            let (space, have) = self.exports_of(r1, label).await?;
            if let Some(e) = have.last() {
                let message = format!("{label}: already exported to {}", e.dir);
                self.x.say(r1, "info", &message).await;
                continue;
            }
            let (row, report) =
                export_version(&self.x.store, &self.x.client, &space, &root).await?;
            let refused = if report.refused.is_empty() {
                String::new()
            } else {
                format!(
                    "; refused {}: {}",
                    report.refused.len(),
                    report
                        .refused
                        .iter()
                        .map(|r| r.to_string())
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            };
            let message = format!(
                "{label}: exported {} skill(s) to {}{refused}",
                row.n_skills, row.dir
            );
            self.x.say(r1, "info", &message).await;
        }
        self.ledger.set_phase("round2", None).await?;
        Ok(Step::Next)
    }

    /// Round 2: A' and B' with the exports (on the held-out tasks with a split), its plan said
    /// first, its budget what round 1 left.
    pub(super) async fn round2(&mut self) -> Result<Step, ExperimentError> {
        let (setup, name, r1, r2) = (self.setup, &self.name, &self.r1, &self.r2);
        let mut conditions = Vec::new();
        for label in [&setup.plan.spaces.a.label, &setup.plan.spaces.b.label] {
            conditions.push(self.round2_condition(label).await?);
        }
        let mut req = setup.round1.clone();
        if let Some(s) = &self.split {
            req.task_filter = s.round2_tasks();
        }
        let tasks = match &self.split {
            Some(s) => format!(
                "; {} task(s): {}",
                req.task_filter.len(),
                if s.round2 == split::Round2Tasks::All {
                    "train and test"
                } else {
                    "the held-out test tasks"
                }
            ),
            None => String::new(),
        };
        let message = format!("{name}: round 2 (conditions A' and B'{tasks}) as run {r2}");
        self.x.say(r2, "info", &message).await;
        req.name = Some(r2.clone());
        req.sequential = sequential_round2(&setup.plan, &conditions, self.condition_c.as_ref(), r1);
        req.conditions = conditions;
        // Before round 2 is paid for: what it costs and what it can detect.
        self.x.say_forecast(setup, r1, 2).await;
        // The budget is the experiment's: round 2 gets what round 1 left (all of it when round 1
        // was a reused baseline: this experiment spent nothing on it).
        let reused = *r1 != format!("{name}-round1");
        if let Some(max) = req.settings.max_cost_usd {
            let spent = if reused {
                0.0
            } else {
                self.ledger.run_cost(r1).await?
            };
            req.settings.max_cost_usd = Some((max - spent).max(0.0));
        }
        if !self.x.round(req).await?.finished {
            return Ok(Step::Stopped);
        }
        self.ledger.set_phase("done", None).await?;
        Ok(Step::Next)
    }

    /// How the experiment stands after the process stopped before `done`.
    pub(super) fn stopped(self) -> Result<ExperimentOutcome, ExperimentError> {
        let Pipeline {
            x,
            ledger,
            exp,
            learned,
            ..
        } = self;
        outcome(x, &ledger, exp, learned, false)
    }

    /// The experiment reached `done`: its results as stored now.
    pub(super) async fn done(self) -> Result<ExperimentOutcome, ExperimentError> {
        let exp = self.ledger.reload().await?;
        outcome(self.x, &self.ledger, exp, self.learned, true)
    }

    /// The experiment's held-out split: the stored one, or — the first time, when the plan has a
    /// `[split]` — computed from the round-1 task selection and stored.
    async fn ensure_split(&self) -> Result<Option<Split>, ExperimentError> {
        let (setup, exp) = (self.setup, &self.exp);
        let Some(plan) = &setup.plan.split else {
            return Ok(None);
        };
        if let Some(stored) = &exp.split {
            return serde_json::from_value(stored.clone())
                .map(Some)
                .map_err(|e| {
                    ExperimentError::Plan(format!("the stored split is unreadable: {e}"))
                });
        }
        let (dir, catalog, filter) = (
            setup.round1.tasks_dir.clone(),
            setup.round1.catalog.clone(),
            setup.round1.task_filter.clone(),
        );
        let taskset = tokio::task::spawn_blocking(move || {
            crate::skillsbench::TaskSet::load(&dir, &catalog, &filter)
        })
        .await
        .map_err(|e| ExperimentError::Plan(e.to_string()))?
        .map_err(EngineError::from)?;
        let tasks: Vec<split::SplitTask> = taskset
            .tasks
            .iter()
            .map(|t| split::SplitTask {
                id: t.id.clone(),
                domain: t.domain.clone(),
                difficulty: t.difficulty.clone(),
            })
            .collect();
        let computed = split::stratified(&tasks, plan).map_err(ExperimentError::Plan)?;
        let json =
            serde_json::to_value(&computed).map_err(|e| ExperimentError::Plan(e.to_string()))?;
        self.ledger.set_split(json).await?;
        let message = format!(
            "{}: held-out split ({}, test fraction {}, seed {}): {} train, {} test task(s): {}",
            exp.name,
            computed.method,
            computed.test_fraction,
            computed.seed,
            computed.train.len(),
            computed.test.len(),
            computed.test.join(", ")
        );
        self.x.say(&exp.round1_run, "info", &message).await;
        Ok(Some(computed))
    }

    /// Round 2's condition for space `label`: its latest export, each round-2 task given the
    /// skills `round2_skills` selects (recorded in `round2_skills`) — `skills:<export>` for `all`,
    /// else `skills-by-task:<export>-<mode>` holding one folder per task.
    async fn round2_condition(&self, label: &str) -> Result<Condition, ExperimentError> {
        let r1 = &self.r1;
        let (space, exports) = self.exports_of(r1, label).await?;
        let last = exports
            .last()
            .ok_or_else(|| ExperimentError::Incomplete(format!("{label} has no export")))?;
        let export_dir = PathBuf::from(&last.dir);
        if !export_dir.is_dir() {
            return Err(ExperimentError::Incomplete(format!(
                "the export of {label} ({}) is gone; export again with `skillscope export`",
                last.dir
            )));
        }
        let mode = self.setup.plan.round2_skills;
        let given = self
            .ledger
            .round2_sources(r1, space.id)
            .map_err(incomplete)?;
        let (rows, by_task) = tokio::task::spawn_blocking({
            let export_dir = export_dir.clone();
            let round2: Option<Vec<String>> = self.split.as_ref().map(Split::round2_tasks);
            let label = label.to_string();
            let curated = space.curated;
            move || {
                round2_selection(
                    &export_dir,
                    &given.tasks,
                    &given.sources,
                    curated,
                    round2,
                    mode,
                    &label,
                )
            }
        })
        .await
        .map_err(|e| ExperimentError::Plan(e.to_string()))?;
        self.ledger.put_round2_skills(rows).await?;
        let spec = match mode {
            Round2Skills::All => format!("skills:{}", export_dir.display()),
            _ => {
                let base = export_dir
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| label.to_lowercase());
                let out = export_dir.with_file_name(format!("{base}-by-{}", mode.as_str()));
                let out2 = out.clone();
                tokio::task::spawn_blocking(move || {
                    selection::write_by_task(&export_dir, &out2, &by_task)
                })
                .await
                .map_err(|e| ExperimentError::Plan(e.to_string()))?
                .map_err(|e| {
                    ExperimentError::Incomplete(format!("writing round 2's skills of {label}: {e}"))
                })?;
                format!("skills-by-task:{}", out.display())
            }
        };
        Condition::parse(&spec).map_err(|e| {
            ExperimentError::Incomplete(format!(
                "the export of {label} is gone ({e}); export again with `skillscope export`"
            ))
        })
    }

    /// The recorded exports of space `label` of run `run`, oldest first.
    async fn exports_of(
        &self,
        run: &str,
        label: &str,
    ) -> Result<(SpaceRow, Vec<ExportRow>), ExperimentError> {
        let space = self.ledger.space(run, label).map_err(incomplete)?;
        let exports = self.ledger.exports(space.id).await?;
        Ok((space, exports))
    }
}

/// A store lookup that found nothing (`no run …`, `no learning space …`) is a phase that cannot
/// complete yet; other store errors stay store errors.
fn incomplete(e: StoreError) -> ExperimentError {
    match e {
        StoreError::NotFound(m) => ExperimentError::Incomplete(m),
        e => e.into(),
    }
}

/// The experiment's outcome: its conditions' results and, once round 1 has a run, the
/// analysis's pass@2-adaptive and hypotheses.
fn outcome(
    x: &Experiment,
    ledger: &ExperimentLedger,
    experiment: ExperimentRow,
    learned: Vec<(String, LearnReport)>,
    finished: bool,
) -> Result<ExperimentOutcome, ExperimentError> {
    let results: Vec<ConditionResult> = results(&experiment, &ledger.rounds(&experiment)?);
    let conn = x.store.connect()?;
    let analysis = match crate::analysis::results::analyze(
        &conn,
        &crate::analysis::results::Selection::Experiment(experiment.name.clone()),
        &crate::analysis::results::Scoring::default(),
    ) {
        Ok(r) => Some(r),
        // Before round 1 has a run there is nothing to analyse.
        Err(StoreError::NotFound(_)) => None,
        Err(e) => return Err(e.into()),
    };
    let (adaptive, hypotheses) = analysis
        .as_ref()
        .map(|r| (r.adaptive.clone(), r.hypotheses.clone()))
        .unwrap_or_default();
    Ok(ExperimentOutcome {
        experiment,
        finished,
        results,
        learned,
        adaptive,
        hypotheses,
        analysis,
    })
}

/// Round 1's sequential design: B − A (and C − A when C runs) looked at and recorded at each
/// stage boundary; nothing stops, since learning learns from every trial of A and B and round 2
/// compares against them (`None` without a design: no `[sequential] stages` in the plan and no
/// `--stages`).
fn sequential_round1(
    plan: &super::plan::Plan,
    conditions: &[Condition],
) -> Option<crate::domain::sequential::SequentialPlan> {
    use crate::domain::sequential::{Comparison, SequentialPlan};
    let a = Condition::NoSkills.key();
    let mut comparisons = vec![Comparison {
        label: "B-A".into(),
        with: Condition::Curated.key(),
        without: a.clone(),
        without_run: None,
    }];
    if let Some(c) = conditions.get(2) {
        comparisons.push(Comparison {
            label: "C-A".into(),
            with: c.key(),
            without: a,
            without_run: None,
        });
    }
    Some(SequentialPlan {
        design: plan.sequential.spec(plan.trials)?.ok()?,
        comparisons,
        stoppable: Vec::new(),
        early_stop: plan.sequential.early_stop(),
        note: Some(
            "round 1's conditions run every trial: learning learns from them and round 2 compares against them".into(),
        ),
    })
}

/// Round 2's sequential design: A′ − A and B′ − B against round 1's A and B (run `r1`) over the
/// same trial indices, and A′ − C when C ran; A′ stops once its comparisons are answered, B′ once
/// B′ − B is.
fn sequential_round2(
    plan: &super::plan::Plan,
    conditions: &[Condition],
    c: Option<&Condition>,
    r1: &str,
) -> Option<crate::domain::sequential::SequentialPlan> {
    use crate::domain::sequential::{Comparison, SequentialPlan};
    let [a2, b2] = conditions else {
        return None;
    };
    let against = |label: &str, with: &Condition, without: String| Comparison {
        label: label.into(),
        with: with.key(),
        without,
        without_run: Some(r1.to_string()),
    };
    let mut comparisons = vec![
        against("A'-A", a2, Condition::NoSkills.key()),
        against("B'-B", b2, Condition::Curated.key()),
    ];
    if let Some(c) = c {
        comparisons.push(against("A'-C", a2, c.key()));
    }
    Some(SequentialPlan {
        design: plan.sequential.spec(plan.trials)?.ok()?,
        comparisons,
        stoppable: vec![a2.key(), b2.key()],
        early_stop: plan.sequential.early_stop(),
        note: None,
    })
}
