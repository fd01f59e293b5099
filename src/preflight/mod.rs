//! Preflight: everything that would otherwise fail later, checked in seconds before any trial
//! starts (`skillscope preflight PLAN.toml`, and at the start of `experiment` and of `run` with an
//! LLM agent). One [`Check`] per thing checked, each `ok`, `warn` (the run can start; the detail
//! says what to expect) or `fail` (nothing starts; [`Check::fix`] says what to do):
//!
//! - [`acontext`]: the server answers, the key is accepted by an authenticated read, and the
//!   routes the learning pipeline calls exist (sessions, learning spaces, the skill catalog, the
//!   project's configs, the task-status PATCH when the plan's status mode needs it) — reads and
//!   no-op probes only, nothing is created;
//! - [`provider`]: each LLM harness's key and model accepted by the cheapest call that proves it —
//!   the provider's models endpoint, which costs nothing;
//! - [`docker`]: every Docker host answers, with the disk the task images need on the local ones;
//!   this machine's disk where the database and the trial folders go;
//! - [`tasks`]: the task set loads, every task can run, and every value a task's environment needs
//!   is set ([`crate::skillsbench::env`]).
//!
//! Checks run at once, each bounded by [`TIMEOUT`], so a preflight takes seconds however many
//! fail. Nothing here writes to the store or starts a container.

pub mod acontext;
pub mod docker;
pub mod provider;
pub mod tasks;

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::engine::{PreparedRun, RunRequest};
use crate::skillsbench::TaskSet;

/// The longest any one check may take.
pub const TIMEOUT: Duration = Duration::from_secs(8);

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Fine.
    Ok,
    /// The run can start; the detail says what to expect.
    Warn,
    /// Nothing starts until it is fixed.
    Fail,
}

impl Verdict {
    /// `ok`, `warn` or `FAIL`.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Warn => "warn",
            Verdict::Fail => "FAIL",
        }
    }
}

/// One check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// What it is about: `acontext`, `provider`, `docker`, `disk`, `tasks`.
    pub area: &'static str,
    /// What was checked, e.g. `key accepted (GET /learning_spaces)`.
    pub what: String,
    /// How it came out.
    pub verdict: Verdict,
    /// What was found (never a secret).
    pub detail: String,
    /// What to do, for a warning or a failure.
    pub fix: Option<String>,
    /// What the check itself cost: `free (models listing)`, `—`.
    pub cost: String,
    /// Seconds it took.
    pub seconds: f64,
}

impl Check {
    /// A passed check.
    pub fn ok(area: &'static str, what: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            area,
            what: what.into(),
            verdict: Verdict::Ok,
            detail: detail.into(),
            fix: None,
            cost: "—".into(),
            seconds: 0.0,
        }
    }

    /// A failed check with its fix.
    pub fn fail(
        area: &'static str,
        what: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check {
            verdict: Verdict::Fail,
            fix: Some(fix.into()),
            ..Check::ok(area, what, detail)
        }
    }

    /// A warning with what to do about it.
    pub fn warn(
        area: &'static str,
        what: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check {
            verdict: Verdict::Warn,
            fix: Some(fix.into()),
            ..Check::ok(area, what, detail)
        }
    }

    /// This check with its cost stated.
    pub fn costing(mut self, cost: impl Into<String>) -> Check {
        self.cost = cost.into();
        self
    }
}

/// Every check of one preflight.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Preflight {
    /// In order: Acontext, providers, Docker, disk, tasks.
    pub checks: Vec<Check>,
    /// Seconds the whole preflight took.
    pub seconds: f64,
}

impl Preflight {
    /// No check failed.
    pub fn passed(&self) -> bool {
        !self.checks.iter().any(|c| c.verdict == Verdict::Fail)
    }

    /// The failed checks.
    pub fn failures(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.verdict == Verdict::Fail)
    }
}

/// What to check: the run (tasks, agent and model, Docker hosts, env, database) and, for an
/// experiment, how to reach Acontext.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// The run (round 1 of an experiment).
    pub run: RunRequest,
    /// Its task set, loaded once — for `run`, the set the engine is then handed
    /// ([`Inputs::into_prepared`]) — or why it did not load (a failed check, not an error).
    pub tasks: Result<TaskSet, String>,
    /// The database the run writes.
    pub db: std::path::PathBuf,
    /// Acontext, for an experiment: the settings, or why there are none (no key set).
    pub acontext: Option<Result<acontext::Target, String>>,
}

impl Inputs {
    /// The checks of a prepared run (`skillscope run`): its task set as loaded.
    pub fn of_prepared(run: PreparedRun, db: std::path::PathBuf) -> Inputs {
        Inputs {
            run: run.request,
            tasks: Ok(run.tasks),
            db,
            acontext: None,
        }
    }

    /// The checks of `run`, its task set loaded here (blocking: it reads the task folders); a
    /// folder that cannot be used becomes the failed check "task set loads".
    ///
    /// # Errors
    /// An unknown `--task` id (or a plan's `task`): a mistyped command line, told at once with
    /// the valid ids rather than as a check.
    pub fn loading(
        run: RunRequest,
        db: std::path::PathBuf,
        acontext: Option<Result<acontext::Target, String>>,
    ) -> Result<Inputs, crate::skillsbench::BenchError> {
        let tasks = match TaskSet::load(&run.tasks_dir, &run.catalog, &run.task_filter) {
            Err(e @ crate::skillsbench::BenchError::UnknownTask { .. }) => return Err(e),
            other => other.map_err(|e| e.to_string()),
        };
        Ok(Inputs {
            run,
            tasks,
            db,
            acontext,
        })
    }

    /// The prepared run again, for the engine, when its task set loaded.
    pub fn into_prepared(self) -> Option<PreparedRun> {
        Some(PreparedRun {
            request: self.run,
            tasks: self.tasks.ok()?,
        })
    }
}

/// Runs every check of `inputs` at once (each bounded by [`TIMEOUT`]).
pub async fn run(inputs: &Inputs) -> Preflight {
    let t0 = Instant::now();
    let acontext = async {
        match &inputs.acontext {
            None => Vec::new(),
            Some(Err(why)) => vec![Check::fail(
                "acontext",
                "key set",
                why.clone(),
                "export the server's project key (sk-ac-…) in that variable (the plan's [acontext] api_key_env names it)",
            )],
            Some(Ok(target)) => acontext::checks(target).await,
        }
    };
    let provider = provider::checks(&inputs.run.agent, inputs.run.model.as_deref());
    let docker = docker::checks(&inputs.run, &inputs.db);
    // The task set is loaded already: its checks read no file.
    let tasks = async { tasks::checks(&inputs.run, &inputs.tasks) };
    let (a, p, d, t) = tokio::join!(acontext, provider, docker, tasks);
    let mut checks = a;
    checks.extend(p);
    checks.extend(d);
    checks.extend(t);
    Preflight {
        checks,
        seconds: t0.elapsed().as_secs_f64(),
    }
}

/// Runs `check`, bounded by [`TIMEOUT`], and stamps the seconds it took; a check that runs out of
/// time fails as `what` with `on_timeout` as its fix.
pub(crate) async fn timed(
    area: &'static str,
    what: &str,
    on_timeout: &str,
    check: impl std::future::Future<Output = Check>,
) -> Check {
    let t0 = Instant::now();
    let mut c = match tokio::time::timeout(TIMEOUT, check).await {
        Ok(c) => c,
        Err(_) => Check::fail(
            area,
            what,
            format!("no answer within {}s", TIMEOUT.as_secs()),
            on_timeout,
        ),
    };
    c.seconds = t0.elapsed().as_secs_f64();
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preflight_passes_unless_a_check_failed() {
        let mut p = Preflight {
            checks: vec![Check::ok("docker", "up", "")],
            seconds: 0.0,
        };
        assert!(p.passed());
        p.checks
            .push(Check::warn("disk", "free", "low", "free some"));
        assert!(p.passed());
        p.checks
            .push(Check::fail("acontext", "key", "401", "set the key").costing("free"));
        assert!(!p.passed());
        assert_eq!(p.failures().count(), 1);
        assert_eq!(p.failures().next().unwrap().cost, "free");
    }
}
