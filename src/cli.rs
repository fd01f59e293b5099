//! Command-line interface (clap). Subcommand implementations live in [`crate::commands`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Runs and watches the SkillsBench × Acontext skill-learning evaluation.
#[derive(Debug, Parser)]
#[command(name = "skillscope", version, about, long_about = None)]
pub struct Cli {
    /// Subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// Process exit codes, as the README's "Stopping, resuming, retrying" documents them.
pub mod exit_code {
    /// The command did what it was asked; for `run` and `experiment`: every planned trial has a
    /// verdict.
    pub const FINISHED: i32 = 0;
    /// An error stopped the command (bad settings or input, a database error, a full disk, a
    /// provider refusing the key); the message is on stderr.
    pub const ERROR: i32 = 1;
    /// The command line itself is wrong (unknown flag, missing argument).
    pub const USAGE: i32 = 2;
    /// The run stopped with trials left without a verdict: no Docker host answered for longer
    /// than `--docker-wait`, or trials were cancelled or ran out of automatic retries. Re-run the
    /// same command (or retry the trials) to finish it.
    pub const STOPPED: i32 = 3;
    /// Checks ran and some failed: `tasks` (a task cannot run, an invalid `SKILL.md`), `tasks
    /// --check` (a task did not build, or did not pass the oracle in every condition it can: one
    /// that needs its skills is expected to fail without them), `preflight` and the
    /// preflight of `run` and `experiment` (a check of Acontext, a provider, a Docker host or the
    /// task set failed; nothing was started). The table says which and how to fix each.
    pub const CHECK_FAILED: i32 = 4;
    /// The operator interrupted the run (Ctrl-C, SIGTERM, quitting the dashboard, `skillscope
    /// stop`); re-run the same command to resume.
    pub const INTERRUPTED: i32 = 130;
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run (or resume) SkillsBench trials in Docker and record them. Without --tasks, runs the
    /// example tasks shipped in the binary.
    Run(Box<RunArgs>),
    /// Attach the dashboard to a run (started here or by another process); closing it never stops
    /// the run.
    Watch(WatchArgs),
    /// Import Harbor job folders (results, trajectories, test reports), SkillsBench per-trial CSVs
    /// and the SkillsBench website's results registry as runs.
    Import(ImportArgs),
    /// Print the learning-phase summary of a trial folder's trajectory and the skills it used.
    Summarize(SummarizeArgs),
    /// Print runs, trial counts by outcome and pass rates.
    Status(StatusArgs),
    /// Load a tasks folder and report its tasks and any invalid task.toml or SKILL.md.
    Tasks(TasksArgs),
    /// Teach an Acontext learning space from a run's trials of one condition (resumable).
    Learn(LearnArgs),
    /// Export a learning space's skills into a new versioned SkillsBench skills folder.
    Export(ExportArgs),
    /// Run the whole two-round experiment of a plan file: round 1 (A, B) → learning (LS-A,
    /// LS-B) → export → round 2 (A', B') → results. Resumable at any phase.
    Experiment(Box<ExperimentArgs>),
    /// Check, in seconds and before anything is spent, what an experiment needs: Acontext (reachable,
    /// the key accepted, the routes the pipeline calls), the provider's key and model, every
    /// Docker host and its disk, the task set. One table; exit 4 when a check failed.
    Preflight(PreflightArgs),
    /// What an experiment's plan will cost and take, and what its comparisons can detect: per
    /// condition and in total the trials, the projected cost with its interval and source, the
    /// wall time at the configured concurrency, and each hypothesis's minimum detectable effect
    /// at 80 % power (α = 0.05, paired over tasks) with the tasks or trials an effect needs.
    Plan(PlanArgs),
    /// Apply a group-sequential design (O'Brien–Fleming efficacy, non-binding futility) to
    /// finished runs stage by stage: where it would have stopped, its verdict against the fixed
    /// design's, the share of trials used; --simulate gives its type-I error and power.
    Replay(ReplayArgs),
    /// Ask the engine of a run to retry trials (picked up from the database).
    Retry(RetryArgs),
    /// Ask the engine of a run to cancel a queued or running trial.
    Cancel(TrialSelector),
    /// Ask the engine of a run to stop cleanly (from any shell; running trials are re-queued, so
    /// the same `run` command resumes it).
    Stop(StopArgs),
    /// Write the results of runs or an experiment: Markdown with PNG charts, one self-contained
    /// HTML file, JSON and CSV (Method D pass rates with CIs, comparisons, breakdowns, failure
    /// modes, the paper's numbers, skill rubric scores).
    Report(ReportArgs),
    /// Serve the Acontext stand-in shipped in the binary: its REST API with a fixed template
    /// where Acontext's LLMs would learn — it learns nothing real. For trying the learning
    /// pipeline offline (`experiment --dry-run` starts one in-process by itself).
    AcontextStandin(StandinArgs),
    /// Create skillscope's offline base image (skillscope/busybox:1) on the Docker host.
    BaseImage,
    /// Measure performance (prints figures).
    Bench(BenchArgs),
}

/// Database location.
#[derive(Debug, Args, Clone)]
pub struct DbArgs {
    /// SQLite database.
    #[arg(long, env = "SKILLSCOPE_DB", default_value = "skillscope.db")]
    pub db: PathBuf,
}

/// `skillscope run`.
#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// SkillsBench tasks folder (`<id>/task.toml` …). Default: the built-in example tasks.
    #[arg(long)]
    pub tasks: Option<PathBuf>,
    /// Only these task ids (repeatable).
    #[arg(long = "task", value_name = "ID")]
    pub task: Vec<String>,
    /// Conditions, comma-separated: no-skills (A), curated (B), self-generated (C; the agent
    /// writes its own skills first), self-generated:two-phase (a session writes skills, a fresh
    /// one solves the task with them), skills:<dir>, skills-by-task:<dir>.
    #[arg(long, default_value = "no-skills,curated")]
    pub conditions: String,
    /// The prompt of the self-generated conditions, replacing skillscope's own (e.g. the
    /// SkillsBench paper's Appendix C.6 text); appended to each task's instruction.
    #[arg(long, value_name = "FILE")]
    pub self_gen_prompt: Option<PathBuf>,
    /// A skill-writing skill put where the harness looks for skills during the first session
    /// of self-generated:two-phase (supplied by the operator; none is shipped).
    #[arg(long, value_name = "DIR")]
    pub skill_creator: Option<PathBuf>,
    /// Trials per task and condition (at least 1).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub trials: u32,
    /// Agent (harness): oracle, nop, claude-code, codex or gemini-cli.
    #[arg(long, default_value = "oracle",
          value_parser = clap::builder::PossibleValuesParser::new(crate::runner::agents::AGENT_NAMES))]
    pub agent: String,
    /// Model name, for agents that use one.
    #[arg(long)]
    pub model: Option<String>,
    /// Trials at once per Docker host, at least 1 [default: 4, or the config file's].
    #[arg(long, value_parser = at_least_one)]
    pub concurrency: Option<usize>,
    /// SQLite database [default: skillscope.db].
    #[arg(long, env = "SKILLSCOPE_DB")]
    pub db: Option<PathBuf>,
    /// Folder for Harbor-style job folders [default: jobs].
    #[arg(long)]
    pub jobs_dir: Option<PathBuf>,
    /// Run name; re-using a name resumes that run. Default: derived from the options.
    #[arg(long = "run", value_name = "NAME")]
    pub run: Option<String>,
    /// Plain progress output instead of the dashboard (also when stdout is not a terminal).
    #[arg(long)]
    pub headless: bool,
    /// Dashboard theme: dark, light, mono, or a theme .toml file [default: dark; NO_COLOR honoured].
    #[arg(long)]
    pub theme: Option<String>,
    /// Docker endpoint (repeatable; default DOCKER_HOST or the local socket).
    #[arg(long = "docker-host", value_name = "URL")]
    pub docker_host: Vec<String>,
    /// Where trials run: docker (default) or kubernetes (a trial is a pod; see [backend] in
    /// skillscope.toml).
    #[arg(long, value_name = "KIND")]
    pub backend: Option<String>,
    /// Kubernetes: kubeconfig file [default: KUBECONFIG, else ~/.kube/config].
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubernetes: kubeconfig context [default: its current one].
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Kubernetes: namespace trials run in [default: the context's, else default].
    #[arg(long, value_name = "NAME")]
    pub namespace: Option<String>,
    /// Kubernetes: image registry the cluster pulls from, host:port [default:
    /// SKILLSCOPE_REGISTRY].
    #[arg(long, value_name = "HOST:PORT")]
    pub registry: Option<String>,
    /// Extra CA bundle (PEM) baked into every image, for TLS-intercepting proxies.
    #[arg(long, value_name = "PEM")]
    pub ca_bundle: Option<PathBuf>,
    /// Extra container environment: NAME (pass through) or NAME=VALUE (repeatable).
    #[arg(long = "env", value_name = "NAME[=VALUE]")]
    pub env: Vec<String>,
    /// Extra bind mount host:container[:ro] (repeatable).
    #[arg(long = "mount", value_name = "HOST:CONTAINER[:ro]")]
    pub mount: Vec<String>,
    /// CSV (task_id,domain[,difficulty]) overriding the shipped domain catalog.
    #[arg(long, value_name = "CSV")]
    pub catalog: Option<PathBuf>,
    /// Config file [default: ./skillscope.toml when present].
    #[arg(long, value_name = "TOML")]
    pub config: Option<PathBuf>,
    /// Treat a local Docker daemon as a remote one: copy the agent's read-only files (the
    /// oracle's solution, a harness kit) into the container instead of mounting them. (/logs is
    /// always copied out, never mounted.)
    #[arg(long)]
    pub copy_logs: bool,
    /// How long to wait while no Docker host answers before the run stops, seconds [default:
    /// 1800, or the config file's].
    #[arg(long, value_name = "SECS")]
    pub docker_wait: Option<u64>,
    /// Mark a trial stalled when its agent writes no output for this long, seconds [default:
    /// 600]; it keeps running ([agent] timeout_sec decides).
    #[arg(long, value_name = "SECS")]
    pub stall_after: Option<u64>,
    /// Cost budget, USD: no trial starts that would take what is spent plus the running trials'
    /// projected cost past it; the run stops (exit 3) once they end, and resuming with a higher
    /// budget continues.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Start the run in the background (headless, its log beside the database) and print how to
    /// watch and stop it.
    #[arg(long, conflicts_with = "headless")]
    pub detach: bool,
    /// Leave the mouse to the terminal (text selection) instead of clicks and the wheel.
    #[arg(long)]
    pub no_mouse: bool,
    /// Run tasks whose `task.toml` env tables or compose file need values that are not set (they
    /// stay empty); their trials are marked (`missing_env`) so a report can leave them out.
    /// Without it such a run refuses to start, naming each task, variable and place.
    #[arg(long)]
    pub allow_missing_env: bool,
    /// A pinned task set: a SkillsBench registry.json (FILE#NAME@VERSION when it holds several
    /// datasets), an AgentBeats task set, or a list of task name + Harbor digest (what `tasks
    /// --json` prints). Before anything runs, every task must have its pinned digest: one that
    /// differs or is missing refuses the run by name. The run keeps only the set's tasks and
    /// records the set's name and version.
    #[arg(long, value_name = "FILE")]
    pub task_set: Option<String>,
    /// Run although tasks differ from the pinned task set, or changed since the run began (on
    /// resume); what differed is recorded with the run and in its events.
    #[arg(long)]
    pub allow_drift: bool,
    /// With two conditions, apply a group-sequential design of N stages (looks) to the second
    /// against the first: judged at every task's trials ⌊s·n/K⌋, both stop once it is answered
    /// (docs/scoring.md, "Sequential designs"). Without it, the fixed design.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub stages: Option<u32>,
    /// With --stages: record the looks but run every planned trial.
    #[arg(long)]
    pub no_early_stop: bool,
}

/// `skillscope stop`.
#[derive(Debug, Args, Clone)]
pub struct StopArgs {
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
    /// Run name [default: the newest run].
    pub run: Option<String>,
    /// Return at once instead of waiting (up to 2 minutes) for the engine to stop.
    #[arg(long)]
    pub no_wait: bool,
}

/// `skillscope watch`.
#[derive(Debug, Args, Clone)]
pub struct WatchArgs {
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
    /// Run name [default: the run an engine is running now, else the newest run].
    #[arg(conflicts_with = "experiment")]
    pub run: Option<String>,
    /// Follow an experiment: its round-1 run, then its round-2 run once that starts, with the
    /// phase strip and learning progress in the overview.
    #[arg(long, value_name = "NAME")]
    pub experiment: Option<String>,
    /// Theme: dark, light, mono, or a theme .toml file.
    #[arg(long)]
    pub theme: Option<String>,
    /// Config file [default: ./skillscope.toml when present].
    #[arg(long, value_name = "TOML")]
    pub config: Option<PathBuf>,
    /// Wait for the run (or experiment) to appear instead of failing when the database does
    /// not hold it yet.
    #[arg(long)]
    pub wait: bool,
    /// Leave the mouse to the terminal (text selection) instead of clicks and the wheel.
    #[arg(long)]
    pub no_mouse: bool,
    /// A trial succeeds when its reward is at least this (in (0, 1]): the grid's cells, the trial
    /// detail and the Results view show success as `report --pass-threshold` counts it.
    #[arg(long, default_value_t = crate::analysis::success::DEFAULT_PASS_THRESHOLD, value_parser = pass_threshold)]
    pub pass_threshold: f64,
}

/// `skillscope import`.
#[derive(Debug, Args, Clone)]
pub struct ImportArgs {
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
    /// Harbor jobs folders (walked at any depth), SkillsBench per-trial CSV files, or the
    /// SkillsBench results registry (`registry.json`).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Condition for every trial (no-skills, curated, self-generated, skills:<dir>) instead of
    /// detecting it from folder names and task paths.
    #[arg(long)]
    pub condition: Option<String>,
    /// Put everything into one run with this name [default: one run per agent × model].
    #[arg(long = "run", value_name = "NAME")]
    pub run: Option<String>,
    /// Domain catalog override.
    #[arg(long, value_name = "CSV")]
    pub catalog: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// How to reach Acontext (flags over the config file's `[acontext]` table over the
/// environment's `ACONTEXT_BASE_URL`).
#[derive(Debug, Args, Clone)]
pub struct AcontextArgs {
    /// Acontext API base URL [default: ACONTEXT_BASE_URL, else http://localhost:8029/api/v1].
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Environment variable holding the project key [default: ACONTEXT_API_KEY].
    #[arg(long, value_name = "NAME")]
    pub api_key_env: Option<String>,
    /// How verdicts reach Acontext: auto, patch (status PATCH, skill-bench servers) or criteria
    /// (explicit verdict + project criteria, released servers) [default: auto].
    #[arg(long, value_name = "MODE")]
    pub status_mode: Option<String>,
    /// Config file [default: ./skillscope.toml when present].
    #[arg(long, value_name = "TOML")]
    pub config: Option<PathBuf>,
}

/// `skillscope learn`.
#[derive(Debug, Args, Clone)]
pub struct LearnArgs {
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
    /// The run whose trials teach the space.
    #[arg(long = "run", value_name = "NAME")]
    pub run: String,
    /// Condition of those trials: no-skills (A), curated (B) or skills:<dir>.
    #[arg(long, default_value = "no-skills")]
    pub condition: String,
    /// Space label [default: LS-A for no-skills, LS-B for curated].
    #[arg(long)]
    pub label: Option<String>,
    /// What the space starts with: empty or curated [default: curated for the curated
    /// condition, else empty].
    #[arg(long, value_name = "START")]
    pub start: Option<String>,
    /// Keep Acontext's default skills (daily-logs, user-general-facts) in the space.
    #[arg(long)]
    pub keep_default_skills: bool,
    /// Acontext connection.
    #[command(flatten)]
    pub acontext: AcontextArgs,
}

/// `skillscope export`.
#[derive(Debug, Args, Clone)]
pub struct ExportArgs {
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
    /// The run the space learned from.
    #[arg(long = "run", value_name = "NAME")]
    pub run: String,
    /// Space label.
    #[arg(long, default_value = "LS-A")]
    pub label: String,
    /// Parent folder of the versioned export (`<out>/<label>-v<N>`) [default: exports/<run>].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Acontext connection.
    #[command(flatten)]
    pub acontext: AcontextArgs,
}

/// `skillscope experiment`.
#[derive(Debug, Args, Clone)]
pub struct ExperimentArgs {
    /// The plan (TOML; see docs/learning.md). Optional with --dry-run: the example plan shipped
    /// in the binary.
    #[arg(required_unless_present = "dry_run")]
    pub plan: Option<PathBuf>,
    /// Run the whole experiment now, offline and free: the oracle (or nop) agent, no model, and
    /// an Acontext stand-in in this process that learns nothing real; everything goes to
    /// dry-run/<name>-dry-run/ beside the database (<name>: the plan's), made afresh each time.
    #[arg(long)]
    pub dry_run: bool,
    /// SQLite database [default: skillscope.db].
    #[arg(long, env = "SKILLSCOPE_DB")]
    pub db: Option<PathBuf>,
    /// Plain progress output instead of the dashboard (also when stdout is not a terminal).
    #[arg(long)]
    pub headless: bool,
    /// Dashboard theme: dark, light, mono, or a theme .toml file.
    #[arg(long)]
    pub theme: Option<String>,
    /// Leave the mouse to the terminal (text selection) instead of clicks and the wheel.
    #[arg(long)]
    pub no_mouse: bool,
    /// Reuse run RUN of the database (native, or an imported Harbor job with its trajectories)
    /// as round 1 instead of running it, once it matches the plan: tasks and their digests,
    /// harness and version, model, agent settings, trials per task, conditions.
    #[arg(long, value_name = "RUN")]
    pub baseline_from: Option<String>,
    /// With --baseline-from: accept a difference in FIELD (tasks, task-digest, harness,
    /// harness-version, model, agent-settings, trials, conditions, trajectories), recorded with
    /// the experiment and in its report. Repeatable.
    #[arg(long, value_name = "FIELD", requires = "baseline_from", value_parser = parse_drift_field)]
    pub allow_drift: Vec<crate::domain::provenance::Field>,
    /// Acontext connection (over the plan's `[acontext]`).
    #[command(flatten)]
    pub acontext: AcontextArgs,
    /// Apply a group-sequential design of N stages (looks) to each round (over the plan's
    /// `[sequential] stages`; without either, the fixed design): a comparison is judged at every
    /// task's trials ⌊s·n/K⌋, and a round-2 condition whose questions are answered stops
    /// (docs/scoring.md, "Sequential designs").
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub stages: Option<u32>,
    /// No early stopping: the fixed design runs every planned trial.
    #[arg(long)]
    pub no_early_stop: bool,
    /// Trials at once per Docker host in both rounds, at least 1 (over the plan's `concurrency`
    /// and its `[run]` table's).
    #[arg(long, value_parser = at_least_one)]
    pub concurrency: Option<usize>,
}

/// A count of at least 1 (`--concurrency`): 0 or text is a usage error (exit 2), as clap
/// reports every malformed flag.
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// A drift field `--allow-drift` accepts ([`crate::domain::provenance::Field::parse`]).
fn parse_drift_field(s: &str) -> Result<crate::domain::provenance::Field, String> {
    crate::domain::provenance::Field::parse(s)
}

/// `skillscope preflight`.
#[derive(Debug, Args, Clone)]
pub struct PreflightArgs {
    /// The plan (TOML; see docs/learning.md).
    pub plan: PathBuf,
    /// SQLite database [default: skillscope.db] (its disk is checked).
    #[arg(long, env = "SKILLSCOPE_DB")]
    pub db: Option<PathBuf>,
    /// Print JSON for scripts.
    #[arg(long)]
    pub json: bool,
    /// Acontext connection (over the plan's `[acontext]`).
    #[command(flatten)]
    pub acontext: AcontextArgs,
}

/// `skillscope plan`.
#[derive(Debug, Args, Clone)]
pub struct PlanArgs {
    /// The plan (TOML; see docs/learning.md).
    pub plan: PathBuf,
    /// SQLite database [default: skillscope.db]: round 1's trials, or imported runs of the same
    /// agent and model, make the estimates.
    #[arg(long, env = "SKILLSCOPE_DB")]
    pub db: Option<PathBuf>,
    /// The effect, in percentage points, the inverse answers are for (tasks, or trials per task,
    /// needed to detect it) [default: the paper's +16.2 pp for B − A, 5 pp for the round-2
    /// hypotheses].
    #[arg(long, value_name = "PP")]
    pub effect: Option<f64>,
    /// Stages (looks) of the group-sequential design, over the plan's `[sequential] stages`, as
    /// `experiment --stages` takes them: the design printed is the one the experiment fixes.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub stages: Option<u32>,
    /// As `experiment --no-early-stop`: the design's looks are recorded, every planned trial
    /// runs.
    #[arg(long)]
    pub no_early_stop: bool,
    /// Print JSON for scripts.
    #[arg(long)]
    pub json: bool,
}

/// Parses a β in (0, 0.5).
fn beta_in_range(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if v > 0.0 && v < 0.5 {
        Ok(v)
    } else {
        Err(format!("{v} is not in (0, 0.5)"))
    }
}

/// `skillscope replay`.
#[derive(Debug, Args, Clone)]
pub struct ReplayArgs {
    /// Runs in the store (native or imported, e.g. `registry-claude-code-opus-4.7` after
    /// `skillscope import results-registry.json`); B − A is its second condition against its
    /// first. Without a name: every run with two conditions.
    #[arg(value_name = "RUN")]
    pub runs: Vec<String>,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
    /// Stages (looks) of the design [default: the run's own recorded design, else 3 (or the
    /// trials, when fewer)].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub stages: Option<u32>,
    /// Efficacy bounds only (no futility stop).
    #[arg(long, conflicts_with = "futility_from")]
    pub no_futility: bool,
    /// The stage the non-binding futility bounds apply from [default: 2, the rule chosen from
    /// the published registry (docs/scoring.md, "Futility")].
    #[arg(long, value_name = "STAGE", value_parser = clap::value_parser!(u32).range(1..=19))]
    pub futility_from: Option<u32>,
    /// β of the futility bounds' β-spending (the design has power 1 − β at its drift); smaller
    /// is a more cautious futility stop [default: 0.01, the rule chosen from the published
    /// registry (docs/scoring.md, "Futility")].
    #[arg(long, value_parser = beta_in_range)]
    pub beta: Option<f64>,
    /// The trial noise the design's fractions plan for, `(σ²_A + σ²_B)/ω²` [default: 1.9, the
    /// published registry's median; `inf`: fractions `k_s/n`].
    #[arg(long, value_name = "RHO")]
    pub noise_ratio: Option<f64>,
    /// Spend the α at information fractions re-estimated from the data's variance components
    /// instead of the design's planned `k_s/n` (for comparison: a design fixed before the data
    /// cannot know them).
    #[arg(long)]
    pub data_fractions: bool,
    /// Seed of the trial order where the data does not give it (imported aggregates), of the
    /// random orders and of the simulations.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Also simulate N null experiments (labels swapped within task) and N under the observed
    /// effect (tasks resampled): type-I error (flagged when it exceeds α) and power. With
    /// --sharp-null: the experiments per task count [default there: 2000]. At least 2 (a rate
    /// and its Monte Carlo SE need two draws).
    #[arg(long, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(2..))]
    pub simulate: Option<usize>,
    /// Also replay each run over N random trial orders (each task-condition's trials
    /// reshuffled): the mean share of trials used, the disagreements per order and the rate of
    /// fixed-design effects lost. At least 1.
    #[arg(long, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub orders: Option<usize>,
    /// Instead of runs: the design's type-I error under a sharp null (per task a pass
    /// probability from U(0, 1), the same under both conditions) at each of these task counts,
    /// e.g. `6,13,20,87`.
    #[arg(long, value_name = "TASKS", value_delimiter = ',')]
    pub sharp_null: Vec<u32>,
    /// With --sharp-null: trials per task and condition.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub trials: u32,
}

/// `skillscope acontext-standin`.
#[derive(Debug, Args, Clone)]
pub struct StandinArgs {
    /// Port on 127.0.0.1 (0: any free port, printed).
    #[arg(long, default_value_t = 8029)]
    pub port: u16,
    /// Project key clients must send as `Authorization: Bearer <key>`.
    #[arg(long, default_value = "sk-ac-local")]
    pub key: String,
    /// Behave like a released server without `PATCH /session/{id}/task/{task_id}/status` (the
    /// same as `--api released`).
    #[arg(long, conflicts_with = "api")]
    pub no_status_patch: bool,
    /// Which Acontext to answer as: `released` (main, SDK 0.1.22: project criteria,
    /// download_zip, learning statuses pending/distilling/skill_writing/queued/completed/failed),
    /// `skill-bench` (the branch: manual task status, statuses pending/running/completed/failed,
    /// no criteria, no download_zip) or `released+patch` (released plus the branch's status PATCH
    /// and flag) [default: released+patch].
    #[arg(long, value_name = "API")]
    pub api: Option<String>,
}

/// `skillscope summarize`.
#[derive(Debug, Args, Clone)]
pub struct SummarizeArgs {
    /// A Harbor trial folder (`<task>__<id>/` with result.json, agent/trajectory.json, verifier/).
    pub trial_dir: PathBuf,
    /// Size limit of the summary, bytes.
    #[arg(long, default_value_t = 8192)]
    pub limit: usize,
}

/// `skillscope status`.
#[derive(Debug, Args, Clone)]
pub struct StatusArgs {
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
    /// Print JSON for scripts.
    #[arg(long)]
    pub json: bool,
    /// Only this run.
    pub run: Option<String>,
}

/// `skillscope tasks`.
#[derive(Debug, Args, Clone)]
pub struct TasksArgs {
    /// Tasks folder. Default: the built-in example tasks.
    #[arg(long)]
    pub tasks: Option<PathBuf>,
    /// Domain catalog override.
    #[arg(long, value_name = "CSV")]
    pub catalog: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Health check: build every task's images and run the oracle once per condition, then print
    /// which tasks run on this machine and why the others cannot (stored as a run; re-run the same
    /// command to resume).
    #[arg(long)]
    pub check: bool,
    /// Settings of the health check's run.
    #[command(flatten)]
    pub run: CheckArgs,
}

/// `skillscope tasks --check` settings (as for `skillscope run`).
#[derive(Debug, Args, Clone)]
pub struct CheckArgs {
    /// Only these task ids (repeatable).
    #[arg(long = "task", value_name = "ID", requires = "check")]
    pub task: Vec<String>,
    /// Conditions, comma-separated: no-skills (A), curated (B), skills:<dir>.
    #[arg(long, default_value = "no-skills,curated", requires = "check")]
    pub conditions: String,
    /// Run name [default: check-<tasks folder>-oracle-<conditions>-x1].
    #[arg(long = "run", value_name = "NAME", requires = "check")]
    pub name: Option<String>,
    /// Trials at once per Docker host, at least 1 [default: 4, or the config file's].
    #[arg(long, requires = "check", value_parser = at_least_one)]
    pub concurrency: Option<usize>,
    /// SQLite database [default: skillscope.db].
    #[arg(long, env = "SKILLSCOPE_DB")]
    pub db: Option<PathBuf>,
    /// Folder for Harbor-style job folders [default: jobs].
    #[arg(long, requires = "check")]
    pub jobs_dir: Option<PathBuf>,
    /// Docker endpoint (repeatable).
    #[arg(long = "docker-host", value_name = "URL", requires = "check")]
    pub docker_host: Vec<String>,
    /// Where the checks run: docker (default) or kubernetes (with KUBECONFIG and
    /// SKILLSCOPE_REGISTRY, or the config file's [backend] table).
    #[arg(long, value_name = "KIND", requires = "check")]
    pub backend: Option<String>,
    /// Extra CA bundle (PEM) baked into every image.
    #[arg(long, value_name = "PEM", requires = "check")]
    pub ca_bundle: Option<PathBuf>,
    /// Extra container environment, NAME or NAME=VALUE (repeatable); also the only outside
    /// variables a task's docker-compose file may use.
    #[arg(long = "env", value_name = "NAME[=VALUE]", requires = "check")]
    pub env: Vec<String>,
    /// Extra bind mount host:container[:ro] (repeatable).
    #[arg(long = "mount", value_name = "HOST:CONTAINER[:ro]", requires = "check")]
    pub mount: Vec<String>,
    /// Config file [default: ./skillscope.toml when present].
    #[arg(long, value_name = "TOML", requires = "check")]
    pub config: Option<PathBuf>,
    /// Run tasks that need environment values nobody set (marked) instead of refusing them with
    /// the reason `missing env value`.
    #[arg(long, requires = "check")]
    pub allow_missing_env: bool,
}

/// Which trial(s) a command targets.
#[derive(Debug, Args, Clone)]
pub struct TrialSelector {
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
    /// Run name.
    pub run: String,
    /// Task id.
    #[arg(long)]
    pub task: Option<String>,
    /// Condition (no-skills, curated, skills:<dir>).
    #[arg(long)]
    pub condition: Option<String>,
    /// Trial index (1-based).
    #[arg(long)]
    pub trial: Option<u32>,
}

/// `skillscope retry`.
#[derive(Debug, Args, Clone)]
pub struct RetryArgs {
    /// Which trial.
    #[command(flatten)]
    pub target: TrialSelector,
    /// Retry every finished trial that did not pass (within --task/--condition when given).
    #[arg(long)]
    pub failed: bool,
    /// Retry every cancelled trial (within --task/--condition when given): what a run that
    /// `finished with n cancelled` runs when it is resumed.
    #[arg(long)]
    pub cancelled: bool,
    /// Retry the named trial even when it passed (its pass stays in its history).
    #[arg(long)]
    pub force: bool,
}

/// `skillscope report`.
#[derive(Debug, Args, Clone)]
pub struct ReportArgs {
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
    /// Runs to report (names or shell patterns such as 'registry-*') [default: the newest run,
    /// or its experiment when it is a round of one].
    pub runs: Vec<String>,
    /// Report an experiment: its four conditions A, B, A', B' and the plan's comparisons.
    #[arg(long, conflicts_with = "runs")]
    pub experiment: Option<String>,
    /// Formats to write, comma-separated: md (with PNG charts), html (one self-contained file),
    /// json, csv, leaderboard (SkillsBench's AgentBeats rows) [default: md,html,json,csv].
    #[arg(long, value_enum, value_delimiter = ',', hide_possible_values = true)]
    pub format: Vec<crate::report::Format>,
    /// Output folder [default: reports/<experiment or run> beside the database].
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Bootstrap resamples per confidence interval.
    #[arg(long, default_value_t = crate::analysis::ci::DEFAULT_RESAMPLES)]
    pub resamples: usize,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = crate::analysis::ci::DEFAULT_SEED)]
    pub seed: u64,
    /// A trial succeeds when its reward is at least this (in (0, 1]); pass@1, pass@2,
    /// pass@2-adaptive and flaky tasks count successes by it. Method D stays the mean reward.
    #[arg(long, default_value_t = crate::analysis::success::DEFAULT_PASS_THRESHOLD, value_parser = pass_threshold)]
    pub pass_threshold: f64,
    /// The effect, in percentage points, the hypotheses are judged against: one the study cannot
    /// detect (its minimum detectable effect is larger) makes a hypothesis `inconclusive
    /// (underpowered)`, never supported or contradicted.
    #[arg(long, default_value_t = crate::analysis::power::DEFAULT_EFFECT_PP, value_parser = effect_pp)]
    pub effect: f64,
    /// The agent's registered AgentBeats id for `--format leaderboard` (the board takes only
    /// such ids); without it a stable id is derived from the runs.
    #[arg(long, value_name = "UUID")]
    pub agentbeats_id: Option<String>,
}

/// Parses `--effect`: percentage points above 0 and at most 100.
fn effect_pp(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number of percentage points"))?;
    if v > 0.0 && v <= 100.0 {
        Ok(v)
    } else {
        Err(format!("{v} is not in (0, 100] percentage points"))
    }
}

/// Parses `--pass-threshold`: a number in (0, 1].
fn pass_threshold(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number"))?;
    crate::analysis::success::SuccessRule::new(v).map(|r| r.threshold)
}

/// `skillscope bench`.
#[derive(Debug, Args, Clone)]
pub struct BenchArgs {
    /// What to measure.
    #[command(subcommand)]
    pub what: BenchWhat,
}

/// Benchmarks.
#[derive(Debug, Subcommand, Clone)]
pub enum BenchWhat {
    /// Per-trial orchestration overhead on a trivial task vs `docker run --rm <image> true`, and
    /// concurrent vs serial wall time.
    Runner {
        /// Trivial trials per measurement.
        #[arg(long, default_value_t = 20)]
        trials: u32,
        /// Concurrency of the parallel measurement.
        #[arg(long, default_value_t = 4)]
        concurrency: usize,
        /// Also time one real task folder (e.g. a SkillsBench task with the oracle).
        #[arg(long, value_name = "TASK_DIR")]
        task: Option<PathBuf>,
        /// Trials of the real task.
        #[arg(long, default_value_t = 3)]
        task_trials: u32,
        /// Where the trials run: docker (default; the floor is `docker run --rm`) or kubernetes
        /// (KUBECONFIG and SKILLSCOPE_REGISTRY; the floor is a bare pod's create, exec and
        /// delete through the API).
        #[arg(long, value_name = "KIND")]
        backend: Option<String>,
    },
    /// Import throughput and memory: generates synthetic Harbor trial folders shaped like the
    /// published ones and times `skillscope import` on them (a child process, whose peak memory
    /// is sampled), at a quarter of the size and at the full size.
    Import {
        /// Trial folders at full size.
        #[arg(long, default_value_t = 20_000)]
        trials: usize,
        /// Keep the generated folders here instead of a temporary folder.
        #[arg(long, value_name = "DIR")]
        keep: Option<PathBuf>,
    },
    /// Analysis speed: a store with this many finished synthetic trials (2 conditions, or an
    /// experiment's 4), then the full analysis (Method D, bootstrap CIs, breakdowns, task changes,
    /// failure modes) and the report, timed.
    Analysis {
        /// Trials in the store.
        #[arg(long, default_value_t = 1_000_000)]
        trials: usize,
        /// Tasks (trials are spread over them).
        #[arg(long, default_value_t = 2_000)]
        tasks: usize,
        /// An experiment of two runs and four conditions (A, B, A', B': every comparison,
        /// pass@2-adaptive and hypothesis) instead of one run of two conditions.
        #[arg(long)]
        experiment: bool,
        /// Bootstrap resamples per confidence interval (to compare the cost of a count).
        #[arg(long, default_value_t = crate::analysis::ci::DEFAULT_RESAMPLES)]
        resamples: usize,
        /// Keep the generated database and report here instead of a temporary folder.
        #[arg(long, value_name = "DIR")]
        keep: Option<PathBuf>,
    },
}
