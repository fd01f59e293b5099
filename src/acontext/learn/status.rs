//! How a trial's verdict reaches the server: which way the server takes it ([`StatusMode`],
//! probed once per space), then per trial the task statuses set (`patch`) or checked
//! (`criteria`) — a mislabeled task recorded loudly, an undecided failed one rejected (its
//! session deleted so it is never learned as a success).

use serde_json::{Value, json};

use super::{Attempt, LearnError, LearnOptions, Learner, Retried, StatusMode, skill_stamp};
use crate::acontext::client::AcontextError;
use crate::acontext::model::{CreateSession, Task};
use crate::store::learning::{LearnStepRow, SpaceRow, Step, StepPatch};

impl Learner {
    /// Probes the server: a throw-away session asks for `disable_task_status_change`, and a
    /// status PATCH for a task that does not exist tells a missing route (plain 404) from an
    /// existing one (an envelope error). Both → `patch`; otherwise `criteria`.
    pub(super) async fn detect_mode(
        &self,
        opts: &LearnOptions,
        remote: &str,
    ) -> Result<StatusMode, LearnError> {
        let setup_err = |e: Retried| e.into_learn_error(&opts.label);
        let probe_id = uuid::Uuid::new_v5(
            &uuid::Uuid::NAMESPACE_URL,
            format!("skillscope:probe:{remote}").as_bytes(),
        )
        .to_string();
        let req = CreateSession {
            use_uuid: Some(probe_id.clone()),
            configs: Some(json!({ "skillscope": { "probe": true } })),
            user: None,
            disable_task_status_change: Some(true),
            // The probe must never be processed by the task agent, let alone learned.
            disable_task_tracking: Some(true),
        };
        let session = self
            .with_server_wait(opts, || self.client.create_session(&req))
            .await;
        let session = match session {
            Ok(s) => s,
            // Older servers reject a duplicate use_uuid: the probe from an earlier pass is there.
            Err(Retried::Api(AcontextError::Api { status: 409, .. })) => {
                let _ = self.client.delete_session(&probe_id).await;
                self.with_server_wait(opts, || self.client.create_session(&req))
                    .await
                    .map_err(setup_err)?
            }
            Err(e) => return Err(setup_err(e)),
        };
        let flag = session.disable_task_status_change == Some(true);
        let nil = uuid::Uuid::nil().to_string();
        let route = self
            .with_server_wait(opts, || {
                self.client.update_task_status(&probe_id, &nil, "failed")
            })
            .await;
        let has_route = match route {
            Ok(_) => true,
            Err(Retried::Api(AcontextError::RouteMissing { .. })) => false,
            Err(Retried::Api(_)) => true,
            Err(e) => return Err(setup_err(e)),
        };
        let _ = self.client.delete_session(&probe_id).await;
        Ok(if flag && has_route {
            StatusMode::Patch
        } else {
            StatusMode::Criteria
        })
    }

    /// Sets (patch mode) or checks (criteria mode) the task statuses.
    pub(super) async fn label(
        &self,
        space: &SpaceRow,
        opts: &LearnOptions,
        mode: StatusMode,
        row: &LearnStepRow,
    ) -> Result<Attempt, Retried> {
        let remote = space.remote_id.clone().unwrap_or_default();
        let sid = row.session_id.clone();
        let tasks: Vec<Task> = self
            .with_server_wait(opts, || self.client.get_tasks(&sid))
            .await?
            .into_iter()
            .filter(|t| !t.is_planning)
            .collect();
        let ids: Vec<String> = tasks.iter().map(|t| t.id.clone()).collect();
        if tasks.is_empty() {
            return self
                .reject(
                    space,
                    opts,
                    row,
                    ids,
                    vec![],
                    "the task agent extracted no task from the session",
                )
                .await;
        }
        // The space's skills before learning starts, to tell which skills this trial changed.
        let before = self
            .with_server_wait(opts, || self.client.space_skills(&remote))
            .await?;
        let before: serde_json::Map<String, Value> = before
            .into_iter()
            .map(|k| {
                (
                    k.name,
                    Value::String(skill_stamp(&k.updated_at, &k.file_index)),
                )
            })
            .collect();
        let verdict = row.verdict.as_str();
        let statuses: Vec<String> = match mode {
            StatusMode::Patch | StatusMode::Auto => {
                for t in tasks.iter().filter(|t| t.status != verdict) {
                    self.with_server_wait(opts, || {
                        self.client.update_task_status(&sid, &t.id, verdict)
                    })
                    .await?;
                }
                self.with_server_wait(opts, || self.client.get_tasks(&sid))
                    .await?
                    .into_iter()
                    .filter(|t| !t.is_planning)
                    .map(|t| t.status)
                    .collect()
            }
            StatusMode::Criteria => tasks.iter().map(|t| t.status.clone()).collect(),
        };
        let wrong: Vec<&String> = statuses
            .iter()
            .filter(|s| matches!(s.as_str(), "success" | "failed") && s.as_str() != verdict)
            .collect();
        let undecided = statuses
            .iter()
            .any(|s| !matches!(s.as_str(), "success" | "failed"));
        let mut patch = StepPatch {
            mode: Some(mode.as_str().into()),
            task_ids: Some(ids.clone()),
            task_statuses: Some(statuses.clone()),
            skills_before: Some(Value::Object(before)),
            tries: Some(0),
            error: Some(None),
            ..Default::default()
        };
        if !wrong.is_empty() {
            let msg = format!(
                "MISLABELED: the verifier said {verdict} but Acontext marked the task {}; it is being learned with the wrong label",
                wrong[0]
            );
            tracing::error!("{} {}#{}: {msg}", space.label, row.task_id, row.trial_index);
            patch.step = Some(Step::Mislabeled.as_str().into());
            patch.error = Some(Some(msg));
        } else if undecided && (verdict == "failed" || mode == StatusMode::Patch) {
            // A pending learning session with undecided tasks is resolved as success on the
            // server; a failed trial must never get there.
            return self
                .reject(
                    space,
                    opts,
                    row,
                    ids,
                    statuses,
                    "the task status was left undecided; the session was deleted so it is not learned as a success",
                )
                .await;
        } else {
            patch.step = Some(Step::Labeled.as_str().into());
        }
        self.patch_step(space, row.trial_id, patch).await?;
        Ok(Attempt::Moved)
    }

    pub(super) async fn reject(
        &self,
        space: &SpaceRow,
        opts: &LearnOptions,
        row: &LearnStepRow,
        ids: Vec<String>,
        statuses: Vec<String>,
        why: &str,
    ) -> Result<Attempt, Retried> {
        let sid = row.session_id.clone();
        match self
            .with_server_wait(opts, || self.client.delete_session(&sid))
            .await
        {
            Ok(()) | Err(Retried::Api(AcontextError::Api { status: 404, .. })) => {}
            Err(e) => return Err(e),
        }
        tracing::warn!("{} {}#{}: {why}", space.label, row.task_id, row.trial_index);
        self.patch_step(
            space,
            row.trial_id,
            StepPatch {
                step: Some(Step::Rejected.as_str().into()),
                task_ids: Some(ids),
                task_statuses: Some(statuses),
                error: Some(Some(why.to_string())),
                finished: true,
                ..Default::default()
            },
        )
        .await?;
        Ok(Attempt::Stop)
    }
}
