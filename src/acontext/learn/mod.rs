//! The learning pipeline: a run's trials of one condition teach one Acontext learning space
//! (`evaluation-plan.md`, "Learning phase"; LS-A learns from condition A, LS-B from condition B).
//!
//! Setup, once per space: find the space by its `meta` (`{"skillscope": {"space": <run uid>/<label>}}`)
//! or create it; take Acontext's default skills (`daily-logs`, `user-general-facts`) out unless
//! told to keep them; for a curated space, upload every task's curated skill as a ZIP and include
//! it (see `curated.rs`); detect how verdicts can reach the server ([`StatusMode`],
//! `status.rs`).
//!
//! Then every trial with a verifier verdict, in learning order (`trials.rs`) — by domain, then
//! difficulty (easy/core → medium/extended → hard/extreme), then task, all trials of a task
//! together — walks these [`Step`]s, each persisted before the next starts so a crash or a dead
//! server resumes at the exact step:
//!
//! 1. `session`: `POST /session` with `use_uuid` = UUIDv5 of (run uid, space label, condition,
//!    task, trial, attempt) — re-sending it returns the same session, never a second one.
//! 2. `attached`: `POST /learning_spaces/{id}/learn` (a 409 is accepted when the space already
//!    lists the session).
//! 3. `messages`: the task instruction (user) and the trajectory summary (assistant), format
//!    `openai`, each tagged in `meta`; on resume the session's messages are read first so none is
//!    stored twice.
//! 4. `flushed`: `POST /session/{id}/flush` must answer `status == 200`.
//! 5. `labeled`: the verifier's verdict becomes the task status. In `patch` mode every extracted
//!    task is set with `PATCH /session/{id}/task/{task_id}/status` and read back. In `criteria`
//!    mode the task agent resolved it from the explicit verdict line and the project's criteria;
//!    the statuses are checked: a failed trial whose task was left undecided has its session
//!    deleted (a pending learning session with undecided tasks would be learned as a success) and
//!    is `rejected`; a task resolved against the verdict is `mislabeled` — recorded and reported
//!    loudly, never silently learned.
//! 6. `done`: the session's learning status is polled (with backoff, bounded by the learning
//!    timeout) until `completed` or `failed`; the skills it created or changed are recorded as
//!    coming from this trial.
//!
//! Trials without a verdict (build or runtime errors, no reward, cancelled) are `skipped`.
//! Transport errors, 5xx and 429 that outlast the client's own retries make the pipeline wait and
//! retry the same step for up to [`LearnOptions::server_wait`], then stop with everything kept;
//! other API errors count against the trial ([`LearnOptions::max_tries`]) and the pass moves on.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub use super::client::public_base_url;
mod curated;
mod status;
mod trials;
mod wait;

pub use trials::{
    difficulty_rank, order_trials, order_trials_tasks, session_uuid, trial_messages, verdict_of,
};

use super::client::{AcontextError, Client};
use super::model::CreateSession;
use crate::domain::{RunRow, RunTaskRow, TrialRow};
use crate::store::learning::Step;
use crate::store::learning::{
    self as lq, LearnStepRow, NewSpace, NewStep, SpacePatch, SpaceRow, StepPatch,
};
use crate::store::{Store, StoreError, queries};

/// Acontext's default skills in a new learning space.
pub const DEFAULT_SKILLS: [&str; 2] = ["daily-logs", "user-general-facts"];

/// The verdict line stored in `criteria` mode, with its value.
pub const VERDICT_PREFIX: &str = "SKILLSCOPE VERIFIER VERDICT:";

/// The project's `task_success_criteria` in `criteria` mode (≤ 2000 characters).
pub const SUCCESS_CRITERIA: &str = "The task succeeded if and only if the assistant's report contains the line \"SKILLSCOPE VERIFIER VERDICT: PASS\" — the benchmark's verifier accepted the result. Without that line the task did not succeed, whatever the report says.";

/// The project's `task_failure_criteria` in `criteria` mode (≤ 2000 characters).
pub const FAILURE_CRITERIA: &str = "The task failed if the assistant's report contains the line \"SKILLSCOPE VERIFIER VERDICT: FAIL\" — the benchmark's verifier rejected the result, whatever the report says otherwise.";

/// How verifier verdicts reach Acontext.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StatusMode {
    /// Detect once per space: `patch` when the server has the status PATCH route and the
    /// `disable_task_status_change` session flag (Acontext's `skill-bench` branch), else
    /// `criteria`.
    Auto,
    /// Sessions are created with `disable_task_status_change`; skillscope sets every task's
    /// status with `PATCH /session/{id}/task/{task_id}/status`.
    Patch,
    /// Released servers: the assistant message ends with an explicit verdict line and the
    /// project's task success/failure criteria tell the task agent to follow it; statuses are
    /// checked after the flush.
    Criteria,
}

impl StatusMode {
    /// Stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            StatusMode::Auto => "auto",
            StatusMode::Patch => "patch",
            StatusMode::Criteria => "criteria",
        }
    }

    /// Parses `auto`, `patch` or `criteria`.
    ///
    /// # Errors
    /// An unknown name.
    pub fn parse(s: &str) -> Result<StatusMode, String> {
        match s {
            "auto" => Ok(StatusMode::Auto),
            "patch" => Ok(StatusMode::Patch),
            "criteria" => Ok(StatusMode::Criteria),
            other => Err(format!(
                "unknown status mode {other:?} (expected auto, patch or criteria)"
            )),
        }
    }
}

/// Settings of one learning pass.
#[derive(Debug, Clone)]
pub struct LearnOptions {
    /// Space label (`LS-A`).
    pub label: String,
    /// Source run name.
    pub run: String,
    /// Condition key of the trials to learn from (`no-skills`, `curated`, …).
    pub condition: String,
    /// Start the space with the tasks' curated skills.
    pub curated: bool,
    /// Keep Acontext's default skills in the space.
    pub keep_defaults: bool,
    /// Experiment name, when part of one.
    pub experiment: Option<String>,
    /// Verdict mode.
    pub status_mode: StatusMode,
    /// Longest wait for one session's learning to finish.
    pub learn_timeout: Duration,
    /// First and longest pause between learning-status polls (default 0.5 s doubling to 30 s:
    /// a session the server learns in a few seconds is seen done within about a second of it,
    /// for two more GETs per session than a 2 s start).
    pub poll: (Duration, Duration),
    /// How long to keep retrying a step while the server is unreachable or failing (5xx).
    pub server_wait: Duration,
    /// API errors (4xx) one trial may hit before the pass moves on without it.
    pub max_tries: u32,
    /// Size limit of the trajectory summary, bytes.
    pub summary_limit: usize,
    /// Learn only from the trials of these tasks (an experiment's train tasks); `None`: every
    /// task's. Curated skills are uploaded for every task either way.
    pub tasks: Option<Vec<String>>,
}

impl LearnOptions {
    /// Defaults for `label` learning from `run`'s `condition` trials.
    pub fn new(label: &str, run: &str, condition: &str) -> LearnOptions {
        LearnOptions {
            label: label.to_string(),
            run: run.to_string(),
            condition: condition.to_string(),
            curated: false,
            keep_defaults: false,
            experiment: None,
            status_mode: StatusMode::Auto,
            learn_timeout: Duration::from_secs(30 * 60),
            poll: (Duration::from_millis(500), Duration::from_secs(30)),
            server_wait: Duration::from_secs(15 * 60),
            max_tries: 3,
            summary_limit: crate::harbor::summary::DEFAULT_LIMIT,
            tasks: None,
        }
    }
}

/// Pipeline errors that stop a pass (per-trial problems are recorded on the trial instead).
#[derive(Debug, thiserror::Error)]
pub enum LearnError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The server stayed unreachable or failing; progress is saved.
    #[error(
        "Acontext unavailable for {waited:?}, learning paused (progress is saved; run the same command again to resume): {source}"
    )]
    Unavailable {
        /// How long the pipeline waited.
        waited: Duration,
        /// The last error (names the endpoint).
        source: AcontextError,
    },
    /// Setting up the space failed.
    #[error("learning space {label}: {source}")]
    Setup {
        /// Space label.
        label: String,
        /// The error (names the endpoint).
        source: AcontextError,
    },
    /// Bad input (no such run, no such condition, a curated skill that cannot be packed).
    #[error("{0}")]
    Input(String),
    /// Stopped by the operator.
    #[error("stopped")]
    Cancelled,
}

/// What a pass did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LearnReport {
    /// The space.
    pub space_id: i64,
    /// Trials per step after the pass.
    pub steps: BTreeMap<String, usize>,
    /// Trials whose task status contradicted the verdict.
    pub mislabeled: Vec<String>,
    /// Trials left with an error this pass (`task#trial: error`).
    pub errors: Vec<String>,
}

/// Progress callback: called with every step row after it changed.
pub type Progress = Arc<dyn Fn(&SpaceRow, &LearnStepRow) + Send + Sync>;

/// Everything a pass needs.
#[derive(Clone)]
pub struct Learner {
    /// The store.
    pub store: Store,
    /// The client.
    pub client: Client,
    /// Stops the pass between steps.
    pub cancel: CancellationToken,
    /// Progress callback.
    pub progress: Option<Progress>,
}

/// What one attempt at a step produced.
enum Attempt {
    /// Moved on (the row was updated).
    Moved,
    /// The trial is finished for this pass.
    Stop,
}

impl Learner {
    async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Connection) -> Result<T, StoreError> + Send + 'static,
    {
        self.store.writer().write(f).await
    }

    async fn patch_step(
        &self,
        space: &SpaceRow,
        trial_id: i64,
        p: StepPatch,
    ) -> Result<LearnStepRow, StoreError> {
        let space_id = space.id;
        let row = self
            .write(move |c| {
                lq::patch_step(c, space_id, trial_id, &p)?;
                lq::steps_of_trial(c, trial_id)?
                    .into_iter()
                    .find(|s| s.space_id == space_id)
                    .ok_or_else(|| StoreError::NotFound(format!("step of trial {trial_id}")))
            })
            .await?;
        if let Some(cb) = &self.progress {
            cb(space, &row);
        }
        Ok(row)
    }

    async fn patch_space(&self, id: i64, p: SpacePatch) -> Result<SpaceRow, StoreError> {
        self.write(move |c| {
            lq::patch_space(c, id, &p)?;
            lq::get_space(c, id)
        })
        .await
    }

    /// Runs one learning pass for `opts`: setup (idempotent), then every trial not yet final.
    ///
    /// # Errors
    /// [`LearnError`]: no such run, store failures, a server unavailable for longer than
    /// `server_wait`, setup failures, cancellation. Per-trial API errors are recorded on the trial.
    pub async fn learn(&self, opts: &LearnOptions) -> Result<LearnReport, LearnError> {
        let conn = self.store.connect()?;
        let run = queries::find_run(&conn, &opts.run)?
            .ok_or_else(|| LearnError::Input(format!("no run named {}", opts.run)))?;
        if !run.conditions.contains(&opts.condition) {
            return Err(LearnError::Input(format!(
                "run {} has no condition {} (it has {})",
                run.name,
                opts.condition,
                run.conditions.join(", ")
            )));
        }
        let tasks: BTreeMap<String, RunTaskRow> = queries::run_tasks(&conn, run.id)?
            .into_iter()
            .map(|t| (t.task_id.clone(), t))
            .collect();
        let trials: Vec<TrialRow> = queries::current_trials(&conn, run.id)?
            .into_iter()
            .filter(|t| t.condition == opts.condition)
            .filter(|t| {
                opts.tasks
                    .as_ref()
                    .is_none_or(|only| only.contains(&t.task_id))
            })
            .collect();
        drop(conn);

        let new = NewSpace {
            label: opts.label.clone(),
            run_id: run.id,
            condition: opts.condition.clone(),
            experiment: opts.experiment.clone(),
            base_url: public_base_url(self.client.base_url()),
            curated: opts.curated,
            keep_defaults: opts.keep_defaults,
        };
        let mut space = self
            .write(move |c| lq::find_or_insert_space(c, &new))
            .await?;
        if space.waiting_since.is_some() {
            // A process stopped while it waited for Acontext: this pass starts afresh.
            self.store_waiting(opts, None).await;
        }
        space = self.setup(&run, &space, opts, &tasks).await?;

        // Plan: every current trial of the condition, in learning order (new attempts of
        // retried trials are added; planned ones keep their progress).
        let ordered = order_trials(&trials, &tasks);
        let new_steps: Vec<NewStep> = ordered
            .iter()
            .map(|t| {
                let verdict = verdict_of(t);
                NewStep {
                    trial_id: t.id,
                    task_id: t.task_id.clone(),
                    trial_index: t.trial_index,
                    verdict: verdict.unwrap_or("none").to_string(),
                    session_id: session_uuid(&run.uid, &opts.label, t),
                    step: if verdict.is_some() {
                        Step::Queued.as_str().into()
                    } else {
                        Step::Skipped.as_str().into()
                    },
                    note: verdict.is_none().then(|| {
                        format!(
                            "no verifier verdict (outcome {}): not learned",
                            t.outcome.map(|o| o.as_str()).unwrap_or("none")
                        )
                    }),
                }
            })
            .collect();
        let sid = space.id;
        self.write(move |c| lq::plan_steps(c, sid, &new_steps))
            .await?;
        // A new pass retries trials that ran out of tries in an earlier one.
        self.write(move |c| lq::reset_unfinished_tries(c, sid))
            .await?;

        let by_id: BTreeMap<i64, &TrialRow> = trials.iter().map(|t| (t.id, t)).collect();
        let mode = match space.status_mode.as_deref() {
            Some("patch") => StatusMode::Patch,
            _ => StatusMode::Criteria,
        };
        let mut report = LearnReport {
            space_id: space.id,
            ..Default::default()
        };
        let sid = space.id;
        let rows = self.write(move |c| lq::steps(c, sid)).await?;
        for row in rows {
            if Step::parse(&row.step).is_final(row.finished_at.is_some()) {
                continue;
            }
            let Some(trial) = by_id.get(&row.trial_id) else {
                continue; // superseded by a newer attempt
            };
            let task_dir = tasks
                .get(&trial.task_id)
                .map(|t| std::path::PathBuf::from(&t.path))
                .unwrap_or_default();
            self.learn_trial(&space, opts, mode, trial, &task_dir, row, &mut report)
                .await?;
        }
        let sid = space.id;
        let rows = self.write(move |c| lq::steps(c, sid)).await?;
        let all_final = rows
            .iter()
            .all(|r| Step::parse(&r.step).is_final(r.finished_at.is_some()));
        for r in &rows {
            *report.steps.entry(r.step.clone()).or_default() += 1;
            if r.step == Step::Mislabeled.as_str() {
                report
                    .mislabeled
                    .push(format!("{}#{}", r.task_id, r.trial_index));
            }
        }
        self.patch_space(
            space.id,
            SpacePatch {
                state: Some(if all_final { "learned" } else { "learning" }.into()),
                error: Some(None),
                ..Default::default()
            },
        )
        .await?;
        Ok(report)
    }

    /// Finds or creates the remote space, removes default skills, uploads curated skills and
    /// detects the status mode. Idempotent.
    async fn setup(
        &self,
        run: &RunRow,
        space: &SpaceRow,
        opts: &LearnOptions,
        tasks: &BTreeMap<String, RunTaskRow>,
    ) -> Result<SpaceRow, LearnError> {
        let setup_err = |e: Retried| e.into_learn_error(&opts.label);
        let mut space = space.clone();
        if space.remote_id.is_none() {
            let key = json!({ "skillscope": { "space": format!("{}/{}", run.uid, opts.label) } });
            let found = self
                .with_server_wait(opts, || self.client.list_learning_spaces(Some(&key)))
                .await
                .map_err(setup_err)?;
            let remote = match found.into_iter().next() {
                Some(s) => s,
                None => {
                    let meta = json!({ "skillscope": {
                        "space": format!("{}/{}", run.uid, opts.label),
                        "label": opts.label, "run": run.name, "condition": opts.condition,
                        "experiment": opts.experiment,
                    }});
                    match self.client.create_learning_space(meta).await {
                        Ok(s) => s,
                        // The answer may have been lost after the space was made: look again.
                        Err(e) if e.is_retryable() => {
                            let again = self
                                .with_server_wait(opts, || {
                                    self.client.list_learning_spaces(Some(&key))
                                })
                                .await
                                .map_err(setup_err)?;
                            match again.into_iter().next() {
                                Some(s) => s,
                                None => {
                                    return Err(LearnError::Setup {
                                        label: opts.label.clone(),
                                        source: e,
                                    });
                                }
                            }
                        }
                        Err(e) => {
                            return Err(LearnError::Setup {
                                label: opts.label.clone(),
                                source: e,
                            });
                        }
                    }
                }
            };
            space = self
                .patch_space(
                    space.id,
                    SpacePatch {
                        remote_id: Some(remote.id),
                        ..Default::default()
                    },
                )
                .await?;
        }
        let remote = space.remote_id.clone().unwrap_or_default();
        if space.state == "setup" {
            if !opts.keep_defaults {
                let skills = self
                    .with_server_wait(opts, || self.client.space_skills(&remote))
                    .await
                    .map_err(setup_err)?;
                for k in skills
                    .iter()
                    .filter(|k| DEFAULT_SKILLS.contains(&k.name.as_str()))
                {
                    self.with_server_wait(opts, || self.client.exclude_skill(&remote, &k.id))
                        .await
                        .map_err(setup_err)?;
                }
            }
            if opts.curated {
                curated::upload_curated(self, opts, &space, run, tasks).await?;
            }
            space = self
                .patch_space(
                    space.id,
                    SpacePatch {
                        state: Some("learning".into()),
                        ..Default::default()
                    },
                )
                .await?;
        }
        if space.status_mode.is_none() {
            let mode = match opts.status_mode {
                StatusMode::Auto => self.detect_mode(opts, &remote).await?,
                m => m,
            };
            space = self
                .patch_space(
                    space.id,
                    SpacePatch {
                        status_mode: Some(mode.as_str().into()),
                        ..Default::default()
                    },
                )
                .await?;
        }
        if space.status_mode.as_deref() == Some("criteria") {
            // Idempotent; re-sent every pass in case someone changed the project's settings.
            let configs = json!({
                "task_success_criteria": SUCCESS_CRITERIA,
                "task_failure_criteria": FAILURE_CRITERIA,
            });
            self.with_server_wait(opts, || self.client.patch_project_configs(configs.clone()))
                .await
                .map_err(setup_err)?;
        }
        Ok(space)
    }

    /// Walks one trial through the steps until it is final, out of tries, or the pass stops.
    #[allow(clippy::too_many_arguments)]
    async fn learn_trial(
        &self,
        space: &SpaceRow,
        opts: &LearnOptions,
        mode: StatusMode,
        trial: &TrialRow,
        task_dir: &Path,
        mut row: LearnStepRow,
        report: &mut LearnReport,
    ) -> Result<(), LearnError> {
        loop {
            let step = Step::parse(&row.step);
            if step.is_final(row.finished_at.is_some()) {
                return Ok(());
            }
            if self.cancel.is_cancelled() {
                return Err(LearnError::Cancelled);
            }
            match self
                .advance(space, opts, mode, trial, task_dir, &row, step)
                .await
            {
                Ok(Attempt::Moved) => {}
                Ok(Attempt::Stop) => return Ok(()),
                Err(Retried::Cancelled) => return Err(LearnError::Cancelled),
                Err(Retried::Store(e)) => return Err(LearnError::Store(e)),
                Err(Retried::Unavailable(waited, e)) => {
                    let msg = e.to_string();
                    self.patch_step(
                        space,
                        row.trial_id,
                        StepPatch {
                            error: Some(Some(msg.clone())),
                            ..Default::default()
                        },
                    )
                    .await?;
                    self.patch_space(
                        space.id,
                        SpacePatch {
                            error: Some(Some(msg)),
                            ..Default::default()
                        },
                    )
                    .await?;
                    return Err(LearnError::Unavailable { waited, source: e });
                }
                Err(Retried::Api(e)) => {
                    let tries = row.tries + 1;
                    let msg = format!("{} failed: {e}", step_action(step));
                    self.patch_step(
                        space,
                        row.trial_id,
                        StepPatch {
                            tries: Some(tries),
                            error: Some(Some(msg.clone())),
                            ..Default::default()
                        },
                    )
                    .await?;
                    if tries >= opts.max_tries {
                        report
                            .errors
                            .push(format!("{}#{}: {msg}", trial.task_id, trial.trial_index));
                        return Ok(());
                    }
                }
            }
            let sid = space.id;
            let tid = row.trial_id;
            row = self
                .write(move |c| {
                    lq::steps_of_trial(c, tid)?
                        .into_iter()
                        .find(|s| s.space_id == sid)
                        .ok_or_else(|| StoreError::NotFound(format!("step of trial {tid}")))
                })
                .await?;
        }
    }

    /// Performs the step after `step`.
    #[allow(clippy::too_many_arguments)]
    async fn advance(
        &self,
        space: &SpaceRow,
        opts: &LearnOptions,
        mode: StatusMode,
        trial: &TrialRow,
        task_dir: &Path,
        row: &LearnStepRow,
        step: Step,
    ) -> Result<Attempt, Retried> {
        let remote = space.remote_id.clone().unwrap_or_default();
        let sid = row.session_id.clone();
        let moved = |to: Step| StepPatch {
            step: Some(to.as_str().into()),
            mode: Some(mode.as_str().into()),
            tries: Some(0),
            error: Some(None),
            ..Default::default()
        };
        match step {
            Step::Queued => {
                let req = CreateSession {
                    use_uuid: Some(sid.clone()),
                    configs: Some(json!({ "skillscope": {
                        "task_id": trial.task_id, "trial_index": trial.trial_index,
                        "attempt": trial.attempt, "condition": trial.condition,
                        "space": opts.label, "run": opts.run,
                    }})),
                    user: None,
                    disable_task_status_change: (mode == StatusMode::Patch).then_some(true),
                    disable_task_tracking: None,
                };
                match self
                    .with_server_wait(opts, || self.client.create_session(&req))
                    .await
                {
                    Ok(_) => {}
                    // Older servers answer a known use_uuid with 409: the session exists.
                    Err(Retried::Api(AcontextError::Api { status: 409, .. })) => {}
                    Err(e) => return Err(e),
                }
                self.patch_step(space, row.trial_id, moved(Step::Session))
                    .await?;
            }
            Step::Session => {
                match self
                    .with_server_wait(opts, || self.client.learn(&remote, &sid))
                    .await
                {
                    Ok(_) => {}
                    Err(Retried::Api(e @ AcontextError::Api { status: 409, .. })) => {
                        // Already attached — here (fine) or elsewhere (an error).
                        let attached = self
                            .with_server_wait(opts, || self.client.space_sessions(&remote))
                            .await?;
                        if !attached.iter().any(|s| s.session_id == sid) {
                            return Err(Retried::Api(e));
                        }
                    }
                    Err(e) => return Err(e),
                }
                self.patch_step(space, row.trial_id, moved(Step::Attached))
                    .await?;
            }
            Step::Attached => {
                let (instruction, summary) =
                    trial_messages(trial, task_dir, mode, &row.verdict, opts.summary_limit);
                // Each attempt reads what the session holds first, so a message whose answer was
                // lost (stored, but the connection dropped) is never stored twice.
                let parts = [
                    ("instruction", "user", instruction),
                    ("summary", "assistant", summary),
                ];
                self.with_server_wait(opts, || async {
                    let existing = self.client.get_messages(&sid).await?;
                    for (part, role, content) in &parts {
                        let has = existing.iter().any(|m| {
                            m.meta.pointer("/skillscope/part").and_then(Value::as_str)
                                == Some(*part)
                        });
                        if has {
                            continue;
                        }
                        let blob = json!({ "role": role, "content": content });
                        let meta = json!({ "skillscope": {
                            "part": part, "task_id": trial.task_id,
                            "trial_index": trial.trial_index,
                        }});
                        self.client
                            .store_message(&sid, blob, "openai", Some(meta))
                            .await?;
                    }
                    Ok(())
                })
                .await?;
                self.patch_step(space, row.trial_id, moved(Step::Messages))
                    .await?;
            }
            Step::Messages => {
                let flag = self
                    .with_server_wait(opts, || self.client.flush(&sid))
                    .await?;
                if flag.status != 200 {
                    return Err(Retried::Api(AcontextError::Api {
                        endpoint: format!(
                            "POST /session/{sid}/flush at {}",
                            self.client.base_url()
                        ),
                        status: 200,
                        code: flag.status,
                        msg: format!("flush reported status {}: {}", flag.status, flag.errmsg),
                    }));
                }
                self.patch_step(space, row.trial_id, moved(Step::Flushed))
                    .await?;
            }
            Step::Flushed => return self.label(space, opts, mode, row).await,
            Step::Labeled | Step::Mislabeled => {
                return self.await_learning(space, opts, row, step).await;
            }
            Step::Done | Step::Rejected | Step::Skipped => return Ok(Attempt::Stop),
        }
        Ok(Attempt::Moved)
    }

    /// Polls the learning status until terminal (bounded), then records which skills changed.
    async fn await_learning(
        &self,
        space: &SpaceRow,
        opts: &LearnOptions,
        row: &LearnStepRow,
        step: Step,
    ) -> Result<Attempt, Retried> {
        let remote = space.remote_id.clone().unwrap_or_default();
        let sid = row.session_id.clone();
        let start = Instant::now();
        let mut pause = opts.poll.0;
        let mut last = row.learning_status.clone();
        let status = loop {
            let ls = self
                .with_server_wait(opts, || self.client.learning_session(&remote, &sid))
                .await?;
            if last.as_deref() != Some(ls.status.as_str()) {
                if ls.is_unknown() {
                    // Neither the released API nor the skill-bench branch reports it: polled on
                    // until completed or failed all the same.
                    tracing::warn!(
                        "{} {}#{}: learning status {:?} is not one Acontext is known to report",
                        space.label,
                        row.task_id,
                        row.trial_index,
                        crate::sanitize::text(&ls.status)
                    );
                }
                last = Some(ls.status.clone());
                self.patch_step(
                    space,
                    row.trial_id,
                    StepPatch {
                        learning_status: Some(ls.status.clone()),
                        ..Default::default()
                    },
                )
                .await?;
            }
            if ls.is_terminal() {
                break ls.status;
            }
            if start.elapsed() >= opts.learn_timeout {
                return Err(Retried::Api(AcontextError::Api {
                    endpoint: format!(
                        "GET /learning_spaces/{remote}/sessions/{sid} at {}",
                        self.client.base_url()
                    ),
                    status: 200,
                    code: 0,
                    msg: format!(
                        "learning still {} after {:?}",
                        ls.status, opts.learn_timeout
                    ),
                }));
            }
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = self.cancel.cancelled() => return Err(Retried::Cancelled),
            }
            pause = (pause * 2).min(opts.poll.1);
        };
        // Which skills this trial's learning created or changed.
        let after = self
            .with_server_wait(opts, || self.client.space_skills(&remote))
            .await?;
        let before = row.skills_before.clone().unwrap_or(Value::Null);
        let mut changes = Vec::new();
        for k in &after {
            let stamp = skill_stamp(&k.updated_at, &k.file_index);
            match before.get(&k.name).and_then(Value::as_str) {
                None => changes.push((k.name.clone(), "created")),
                Some(b) if b != stamp => changes.push((k.name.clone(), "updated")),
                _ => {}
            }
        }
        let space_id = space.id;
        let trial_id = row.trial_id;
        self.write(move |c| {
            for (name, change) in &changes {
                lq::add_source(c, space_id, name, trial_id, change)?;
            }
            Ok(())
        })
        .await?;
        let final_step = if step == Step::Mislabeled {
            Step::Mislabeled
        } else {
            Step::Done
        };
        self.patch_step(
            space,
            row.trial_id,
            StepPatch {
                step: Some(final_step.as_str().into()),
                learning_status: Some(status.clone()),
                error: (status == "failed" && step != Step::Mislabeled).then(|| {
                    Some("Acontext reported learning failed for this session".to_string())
                }),
                finished: true,
                ..Default::default()
            },
        )
        .await?;
        Ok(Attempt::Moved)
    }
}

/// A skill's change stamp: its `updated_at` and file list.
fn skill_stamp(updated_at: &str, files: &[super::model::FileInfo]) -> String {
    let mut paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    paths.sort();
    format!("{updated_at}|{}", paths.join(","))
}

fn step_action(step: Step) -> &'static str {
    match step {
        Step::Queued => "creating the session",
        Step::Session => "attaching the session to the space",
        Step::Attached => "storing the messages",
        Step::Messages => "flushing the session",
        Step::Flushed => "setting the task status",
        Step::Labeled | Step::Mislabeled => "waiting for learning",
        Step::Done | Step::Rejected | Step::Skipped => "finishing",
    }
}

/// Why an operation gave up.
pub(crate) enum Retried {
    /// A non-retryable API error.
    Api(AcontextError),
    /// Retryable errors for longer than allowed.
    Unavailable(Duration, AcontextError),
    /// Stopped.
    Cancelled,
    /// The store failed.
    Store(StoreError),
}

impl From<StoreError> for Retried {
    fn from(e: StoreError) -> Self {
        Retried::Store(e)
    }
}

impl Retried {
    pub(crate) fn into_learn_error(self, label: &str) -> LearnError {
        match self {
            Retried::Api(e) => LearnError::Setup {
                label: label.to_string(),
                source: e,
            },
            Retried::Unavailable(waited, source) => LearnError::Unavailable { waited, source },
            Retried::Cancelled => LearnError::Cancelled,
            Retried::Store(e) => LearnError::Store(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_lose_credentials() {
        assert_eq!(
            public_base_url("https://user:pw@api.acontext.io/api/v1"),
            "https://api.acontext.io/api/v1"
        );
        assert_eq!(
            public_base_url("http://localhost:8029"),
            "http://localhost:8029"
        );
    }

    #[test]
    fn criteria_fit_the_server_limit() {
        assert!(SUCCESS_CRITERIA.chars().count() <= 2000);
        assert!(FAILURE_CRITERIA.chars().count() <= 2000);
        assert!(SUCCESS_CRITERIA.contains(&format!("\"{VERDICT_PREFIX} PASS\"")));
        assert!(FAILURE_CRITERIA.contains(&format!("\"{VERDICT_PREFIX} FAIL\"")));
    }
}
