//! Builds ahead: while trials run, the images of the trials next in the queue are built, so a
//! trial placed later finds its image ready. A trial reserves its host's CPUs from the moment it
//! is placed — on a host of two CPUs, a task asking for two runs alone — so without building
//! ahead, every later trial's build waits behind it. Builds ahead share the image cache with the
//! trials (an image is built once whoever asks first) and its per-host build permits, one per CPU
//! (the backend's image cache), so builds stay within the host's CPUs. A failed build ahead is
//! not an event: the trial meets the same failure when it runs.

use std::collections::HashSet;
use std::sync::Arc;

use tokio::task::JoinSet;

use super::attempt::Attempts;
use crate::domain::TrialRow;
use crate::runner::Host;
use crate::skillsbench::env::{self, EnvValues, MissingEnvPolicy};

/// Builds ahead of the queue.
#[derive(Default)]
pub(super) struct Prebuilds {
    running: JoinSet<()>,
    /// `(task, image condition key)` pairs already asked for.
    asked: HashSet<(String, String)>,
}

impl Prebuilds {
    /// Starts builds for the first trials of `queue` (in the order they start) whose images were
    /// not asked for yet, up to one per CPU of `host`, the one that will most likely take them
    /// (the up host with the fewest trials; none: nothing is built).
    pub fn top_up<'a>(
        &mut self,
        queue: impl Iterator<Item = &'a TrialRow>,
        attempts: &Arc<Attempts>,
        host: Option<Arc<dyn Host>>,
    ) {
        let Some(host) = host else {
            return;
        };
        let limit = host.capacity().cpus.max(1) as usize;
        let values = EnvValues::new(&attempts.extra_env);
        for row in queue {
            if self.running.len() >= limit {
                break;
            }
            let (Some(task), Some(condition)) = (
                attempts.tasks.get(&row.task_id).cloned(),
                attempts.conditions.get(&row.condition).cloned(),
            ) else {
                continue;
            };
            // A task that cannot run, or whose trials are refused for values nobody set, is
            // not built ahead.
            if !task.is_runnable()
                || (attempts.missing_env != MissingEnvPolicy::Allow
                    && !env::missing(&task, attempts.agent.runs_solution(), &values).is_empty())
            {
                continue;
            }
            let key = (task.id.clone(), condition.image_condition().key());
            if !self.asked.insert(key) {
                continue;
            }
            let host = host.clone();
            self.running.spawn(async move {
                // What the image holds is read ahead too (once per image), off the trial's path.
                if let Ok(image) = host
                    .prepare_image(&task, &condition, task.build_timeout())
                    .await
                {
                    let _ = host.image_facts(&image.tag).await;
                }
            });
        }
    }

    /// Reaps one finished build (pending while none runs).
    pub async fn next(&mut self) {
        if self.running.join_next().await.is_none() {
            std::future::pending::<()>().await;
        }
    }

    /// Stops every build ahead (the run is stopping).
    pub fn stop(&mut self) {
        self.running.abort_all();
    }

    /// Waits until every stopped build ahead has ended, so no request of theirs (a helper
    /// container's create) is still being sent when the stopping run sweeps its containers.
    pub async fn ended(&mut self) {
        self.stop();
        while self.running.join_next().await.is_some() {}
    }
}
