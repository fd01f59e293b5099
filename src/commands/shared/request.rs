//! The run request from `run`'s flags and the config file — shared by `run`, `tasks check` and the
//! experiment's rounds.

use std::path::PathBuf;

use color_eyre::eyre::{Result, WrapErr, eyre};

use crate::cli::RunArgs;
use crate::config::{
    BackendFileSettings, BackendSettings, EnvSetting, FileConfig, RunSettings, check_mount,
};
use crate::engine::RunRequest;
use crate::skillsbench::Condition;
use crate::skillsbench::env::MissingEnvPolicy;

/// Default trials at once per Docker host.
pub const DEFAULT_CONCURRENCY: usize = 4;

/// The `--backend` flags over the file's `[backend]` table.
///
/// # Errors
/// An unknown backend kind.
pub fn backend_settings(args: &RunArgs, file: &FileConfig) -> Result<BackendSettings> {
    let flags = BackendFileSettings {
        kind: args.backend.clone(),
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
        namespace: args.namespace.clone(),
        registry: args.registry.clone(),
        start_timeout_secs: None,
    };
    Ok(flags.or(&file.backend).resolve()?)
}

/// Turns flags and the config file (`file`, read once by the caller from `args.config`) into a run
/// request and the database path.
///
/// # Errors
/// Bad settings (unknown condition, missing CA bundle, bad mount or env name, unreadable catalog).
pub fn build_request(args: &RunArgs, file: &FileConfig) -> Result<(RunRequest, PathBuf)> {
    let mut env = Vec::new();
    for e in file.run.env.iter().chain(args.env.iter()) {
        env.push(EnvSetting::parse(e)?);
    }
    let mut mounts = Vec::new();
    for m in file.run.mounts.iter().chain(args.mount.iter()) {
        mounts.push(check_mount(m)?);
    }
    let ca_bundle = args.ca_bundle.clone().or(file.run.ca_bundle.clone());
    if let Some(ca) = &ca_bundle {
        std::fs::metadata(ca).wrap_err_with(|| format!("CA bundle {}", ca.display()))?;
    }
    // Refused like `--trials 0`, not quietly raised to 1.
    if args.concurrency == Some(0) {
        return Err(eyre!("--concurrency must be at least 1"));
    }
    if args.concurrency.is_none() && file.run.concurrency == Some(0) {
        return Err(eyre!(
            "concurrency in the settings file's [run] table must be at least 1"
        ));
    }
    let settings = RunSettings {
        concurrency: args
            .concurrency
            .or(file.run.concurrency)
            .unwrap_or(DEFAULT_CONCURRENCY),
        docker_hosts: if args.docker_host.is_empty() {
            file.run.docker_hosts.clone()
        } else {
            args.docker_host.clone()
        },
        ca_bundle,
        env,
        mounts,
        copy_logs: args.copy_logs,
        harness: crate::config::HarnessSettings::from_file(&file.harness),
        docker_wait_secs: args.docker_wait.or(file.run.docker_wait_secs),
        stall_secs: args.stall_after.or(file.run.stall_secs),
        max_cost_usd: args.max_cost.or(file.run.max_cost_usd),
        missing_env: if args.allow_missing_env {
            MissingEnvPolicy::Allow
        } else {
            MissingEnvPolicy::RefuseRun
        },
        backend: backend_settings(args, file)?,
    };
    if let Some(max) = settings.max_cost_usd
        && !(max.is_finite() && max >= 0.0)
    {
        return Err(eyre!(
            "--max-cost must be a number of US dollars ≥ 0, got {max}"
        ));
    }
    let tasks_dir = crate::commands::tasks_dir_or_examples(args.tasks.as_deref())?;
    // Before the database is opened: a wrong path leaves nothing behind.
    if !tasks_dir.is_dir() {
        return Err(match std::fs::metadata(&tasks_dir) {
            Ok(_) => eyre!("--tasks {} is not a folder", tasks_dir.display()),
            Err(e) => eyre!("--tasks {}: {e}", tasks_dir.display()),
        });
    }
    let catalog = crate::commands::catalog_with(args.catalog.as_deref())?;
    let conditions = Condition::parse_list(&args.conditions)?;
    if conditions.is_empty() {
        return Err(eyre!("--conditions names no condition"));
    }
    let conditions = self_generation(
        conditions,
        args.self_gen_prompt.as_deref(),
        args.skill_creator.as_deref(),
    )?;
    if args.trials == 0 {
        return Err(eyre!("--trials must be at least 1"));
    }
    let sequential = match args.stages {
        None => None,
        Some(k) => Some(sequential_of(
            &conditions,
            k,
            args.trials,
            !args.no_early_stop,
        )?),
    };
    let db = args
        .db
        .clone()
        .or(file.run.db.clone())
        .unwrap_or_else(|| PathBuf::from("skillscope.db"));
    let req = RunRequest {
        name: args.run.clone(),
        tasks_dir,
        task_filter: args.task.clone(),
        conditions,
        n_trials: args.trials,
        agent: args.agent.clone(),
        model: args.model.clone(),
        jobs_dir: args
            .jobs_dir
            .clone()
            .or(file.run.jobs_dir.clone())
            .unwrap_or_else(|| PathBuf::from("jobs")),
        catalog,
        settings,
        stay_alive: None,
        resume_command: None,
        pin: crate::engine::Pinning {
            set: match &args.task_set {
                Some(spec) => Some(crate::skillsbench::pinned::PinnedSet::read(spec)?),
                None => None,
            },
            allow_drift: args.allow_drift,
        },
        sequential,
    };
    Ok((req, db))
}

/// Applies `--self-gen-prompt` (read now; the text travels with the condition) and
/// `--skill-creator` (made absolute) to the self-generated conditions of `conditions`.
///
/// # Errors
/// An unreadable prompt file, a skill creator that is not a folder, or either option given
/// without a self-generated condition that uses it.
pub fn self_generation(
    conditions: Vec<Condition>,
    prompt: Option<&std::path::Path>,
    skill_creator: Option<&std::path::Path>,
) -> Result<Vec<Condition>> {
    let any = conditions.iter().any(|c| c.self_generation().is_some());
    let two_phase = conditions
        .iter()
        .any(|c| c.self_generation().is_some_and(|g| g.two_phase));
    if prompt.is_some() && !any {
        return Err(eyre!(
            "--self-gen-prompt needs a self-generated condition in --conditions"
        ));
    }
    if skill_creator.is_some() && !two_phase {
        return Err(eyre!(
            "--skill-creator needs self-generated:two-phase in --conditions"
        ));
    }
    let text = match prompt {
        Some(p) => Some(
            std::fs::read_to_string(p)
                .wrap_err_with(|| format!("--self-gen-prompt {}", p.display()))?,
        ),
        None => None,
    };
    if text.as_deref().is_some_and(|t| t.trim().is_empty()) {
        return Err(eyre!("--self-gen-prompt file is empty"));
    }
    let creator = match skill_creator {
        Some(d) => {
            let abs = std::fs::canonicalize(d)
                .wrap_err_with(|| format!("--skill-creator {}", d.display()))?;
            if !abs.join("SKILL.md").is_file() {
                return Err(eyre!(
                    "--skill-creator {}: a skill folder needs a SKILL.md",
                    abs.display()
                ));
            }
            Some(abs)
        }
        None => None,
    };
    Ok(conditions
        .into_iter()
        .map(|c| c.with_self_generation(text.as_deref(), creator.as_deref()))
        .collect())
}

/// `run --stages K`'s design ([`crate::analysis::sequential::design::spec`]): the second
/// condition against the first (`B-A`), both stopping once it is answered.
///
/// # Errors
/// Not exactly two conditions, or more stages than trials per task.
fn sequential_of(
    conditions: &[crate::skillsbench::Condition],
    stages: u32,
    trials: u32,
    early_stop: bool,
) -> Result<crate::domain::sequential::SequentialPlan> {
    let [a, b] = conditions else {
        return Err(eyre!(
            "--stages needs exactly two conditions (the second is judged against the first), not {}",
            conditions.len()
        ));
    };
    use crate::analysis::sequential::design::{Choices, spec};
    let design = spec(trials, stages as usize, &Choices::default()).map_err(|e| match e {
        crate::analysis::sequential::design::SpecError::Stages { .. } => eyre!(
            "--stages {stages} needs at least {stages} trials per task and condition (--trials {trials})"
        ),
        e => eyre!("--stages {stages}: {e}"),
    })?;
    Ok(crate::domain::sequential::SequentialPlan {
        design,
        comparisons: vec![crate::domain::sequential::Comparison {
            label: "B-A".into(),
            with: b.key(),
            without: a.key(),
            without_run: None,
        }],
        stoppable: vec![a.key(), b.key()],
        early_stop,
        note: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_judge_the_second_condition_against_the_first() {
        let two = Condition::parse_list("no-skills,curated").unwrap();
        let p = sequential_of(&two, 3, 5, true).unwrap();
        assert_eq!(p.comparisons[0].with, "curated");
        assert_eq!(p.comparisons[0].without, "no-skills");
        assert_eq!(p.stoppable, vec!["no-skills", "curated"]);
        assert!(sequential_of(&two, 6, 5, true).is_err());
        let one = Condition::parse_list("no-skills").unwrap();
        assert!(sequential_of(&one, 2, 5, true).is_err());
    }
}
