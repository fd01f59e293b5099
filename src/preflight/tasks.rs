//! The task set: it loaded (folder, catalog, `--task` ids), every task can run, and every value a
//! task's environment needs is set ([`crate::skillsbench::env`]; the run refuses those otherwise).
//! The set is loaded once by the caller ([`super::Inputs`]) and is the one the engine then runs.

use super::Check;
use crate::engine::{PreparedRun, RunRequest};
use crate::skillsbench::TaskSet;
use crate::skillsbench::env::{self, MissingEnvPolicy};

/// The task checks of `run` over its task set `loaded` (or why it did not load).
pub fn checks(run: &RunRequest, loaded: &Result<TaskSet, String>) -> Vec<Check> {
    let what = "task set loads";
    let set = match loaded {
        Ok(s) => s,
        Err(e) => {
            return vec![Check::fail(
                "tasks",
                what,
                crate::sanitize::text(e),
                "fix the plan's tasks / task (or --tasks, --task): a folder of SkillsBench tasks and ids it holds",
            )];
        }
    };
    let domains: std::collections::BTreeSet<&str> =
        set.tasks.iter().map(|t| t.domain.as_str()).collect();
    let mut out = vec![Check::ok(
        "tasks",
        what,
        format!(
            "{} task(s) in {} domain(s) from {}",
            set.tasks.len(),
            domains.len(),
            set.root.display()
        ),
    )];
    if set.tasks.is_empty() {
        out[0] = Check::fail(
            "tasks",
            what,
            format!("no task in {}", set.root.display()),
            "point the plan's tasks (or --tasks) at a folder of <id>/task.toml folders",
        );
        return out;
    }
    for t in set.tasks.iter().filter(|t| !t.is_runnable()) {
        out.push(Check::warn(
            "tasks",
            format!("task {} can run", t.id),
            crate::sanitize::text(&t.problems.join("; ")),
            "its trials will be build-error and count 0: fix the task, or leave it out (--task / the plan's task)",
        ));
    }
    // The same computation the engine refuses a run over ([`PreparedRun::missing_env`]).
    let missing = PreparedRun::missing_env_of(run, &set.tasks, run.agent == "oracle");
    let mut tasks: Vec<&str> = missing.iter().map(|m| m.task.as_str()).collect();
    tasks.dedup();
    for task in tasks {
        let vars: Vec<String> = missing
            .iter()
            .filter(|m| m.task == task)
            .map(env::MissingEnv::describe)
            .collect();
        let what = format!("task {task} environment values set");
        let detail = format!("not set: {}", vars.join(", "));
        let fix = "set them (--env NAME=VALUE, or export NAME and pass --env NAME), leave the task out, or pass --allow-missing-env (its trials are marked)";
        out.push(match run.settings.missing_env {
            MissingEnvPolicy::RefuseRun => Check::fail("tasks", what, detail, fix),
            _ => Check::warn("tasks", what, detail, fix),
        });
    }
    out
}
