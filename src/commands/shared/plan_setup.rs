//! What a plan stands for on the command line — the round-1 run's flags — and loading it, turned
//! into its dry run (stand-in started, folder made) when asked: shared by `experiment`,
//! `preflight` and `plan`.

use std::path::PathBuf;

use color_eyre::eyre::{Result, eyre};

use crate::cli::RunArgs;
use crate::experiment::plan::Plan;

/// The round-1 run flags a plan stands for.
pub fn run_args(plan: &Plan, db: Option<PathBuf>) -> RunArgs {
    RunArgs {
        tasks: plan.tasks.clone(),
        task: plan.task.clone(),
        // Condition C, when the plan has one, is added by the pipeline from the plan itself.
        conditions: "no-skills,curated".into(),
        self_gen_prompt: None,
        skill_creator: None,
        trials: plan.trials,
        agent: plan.agent.clone(),
        model: plan.model.clone(),
        concurrency: plan.concurrency.or(plan.run.concurrency),
        db: db.or(plan.run.db.clone()),
        jobs_dir: plan.jobs_dir.clone().or(plan.run.jobs_dir.clone()),
        run: Some(format!("{}-round1", plan.name())),
        headless: true,
        theme: None,
        docker_host: plan.run.docker_hosts.clone(),
        backend: plan.backend.kind.clone(),
        kubeconfig: plan.backend.kubeconfig.clone(),
        context: plan.backend.context.clone(),
        namespace: plan.backend.namespace.clone(),
        registry: plan.backend.registry.clone(),
        ca_bundle: plan.run.ca_bundle.clone(),
        env: plan.run.env.clone(),
        mount: plan.run.mounts.clone(),
        catalog: plan.catalog.clone(),
        config: None,
        copy_logs: false,
        docker_wait: plan.run.docker_wait_secs,
        stall_after: plan.run.stall_secs,
        max_cost: plan.run.max_cost_usd,
        detach: false,
        no_mouse: false,
        allow_missing_env: false,
        task_set: None,
        allow_drift: false,
        stages: None,
        no_early_stop: false,
    }
}

/// A dry run's stand-in and folder (see [`crate::experiment::dry_run`]).
pub struct DryRun {
    /// The Acontext stand-in serving this process (stopped when the experiment ends).
    pub server: crate::acontext::standin::FakeServer,
    /// Settings that reach it.
    pub config: crate::acontext::AcontextConfig,
    /// The dry run's folder.
    pub root: PathBuf,
    /// What the dry run changed of the plan, for the operator.
    pub notes: Vec<String>,
}

/// The plan at `path` (without one, the example plan built into the binary), turned into its
/// dry run — its folder beside the database `db` made, its stand-in started — when `dry_run`.
///
/// # Errors
/// A bad plan; for a dry run, a folder that cannot be made or a stand-in that cannot start.
pub async fn load_plan(
    path: Option<&std::path::Path>,
    db: Option<PathBuf>,
    dry_run: bool,
) -> Result<(Plan, Option<DryRun>)> {
    let mut plan = match path {
        Some(p) => Plan::load(p)?,
        None => crate::experiment::dry_run::example_plan()?,
    };
    if !dry_run {
        return Ok((plan, None));
    }
    let db = db
        .or(plan.run.db.clone())
        .unwrap_or_else(|| PathBuf::from("skillscope.db"));
    let name = format!(
        "{}{}",
        plan.name()
            .trim_end_matches(crate::experiment::dry_run::SUFFIX),
        crate::experiment::dry_run::SUFFIX
    );
    let root = crate::experiment::dry_run::prepare_folder(&db, &name).map_err(|e| eyre!(e))?;
    let notes = crate::experiment::dry_run::rewrite(&mut plan, &root);
    plan.run.db = Some(root.join("skillscope.db"));
    let (server, config) = crate::experiment::dry_run::start_standin().await?;
    Ok((
        plan,
        Some(DryRun {
            server,
            config,
            root,
            notes,
        }),
    ))
}
