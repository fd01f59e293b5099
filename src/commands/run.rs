//! `skillscope run`: build the run request from flags and config, start the engine, show progress,
//! stop cleanly on Ctrl-C/SIGTERM, print the pass-rate table.

use std::io::IsTerminal;
use std::path::PathBuf;

use color_eyre::eyre::{Result, WrapErr, eyre};
use indicatif::{ProgressBar, ProgressStyle};
use tokio_util::sync::CancellationToken;

use super::table::conditions_table;
use crate::analysis::metrics::summarize;
use crate::bench::Condition;
use crate::bench::condition::condition_label;
use crate::cli::RunArgs;
use crate::config::{EnvSetting, FileConfig, RunSettings, check_mount};
use crate::engine::{Engine, EngineEvent, RunOutcome, RunRequest, default_run_name};
use crate::store::{Outcome, Store, TrialRow, queries};
use crate::tui::EngineHandle;
use crate::tui::app::{App, Mode};
use crate::tui::data::{DataWorker, RunSelector};

/// Default trials at once per Docker host.
pub const DEFAULT_CONCURRENCY: usize = 4;

/// Turns flags and the config file into a run request and the database path.
///
/// # Errors
/// Bad settings (unknown condition, missing CA bundle, bad mount or env name, unreadable catalog).
pub fn build_request(args: &RunArgs) -> Result<(RunRequest, PathBuf)> {
    let file = FileConfig::load(args.config.as_deref())?;
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
    let settings = RunSettings {
        concurrency: args
            .concurrency
            .or(file.run.concurrency)
            .unwrap_or(DEFAULT_CONCURRENCY)
            .max(1),
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
    };
    let tasks_dir = super::tasks_dir_or_examples(args.tasks.as_deref())?;
    let catalog = super::catalog_with(args.catalog.as_deref())?;
    let conditions = Condition::parse_list(&args.conditions)?;
    if conditions.is_empty() {
        return Err(eyre!("--conditions names no condition"));
    }
    if args.trials == 0 {
        return Err(eyre!("--trials must be at least 1"));
    }
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
        stay_alive: false,
    };
    Ok((req, db))
}

/// Runs `skillscope run`: the dashboard when stdout is a terminal (and not `--headless`), else a
/// progress bar or log lines. Returns the process exit code (0 finished, 130 stopped early).
///
/// # Errors
/// Setup failures (settings, database, Docker, a conflicting run).
pub async fn execute(args: RunArgs) -> Result<i32> {
    let (mut req, db) = build_request(&args)?;
    let store = Store::open(&db)?;
    let engine = Engine::new(store.clone());
    let shutdown = CancellationToken::new();
    spawn_signal_handler(shutdown.clone());
    let outcome = if !args.headless && std::io::stdout().is_terminal() {
        let file = FileConfig::load(args.config.as_deref())?;
        let theme = super::watch::pick_theme(args.theme.as_deref(), &file)?;
        // The dashboard may still send retries after the last trial: keep the engine up until quit.
        req.stay_alive = true;
        let name = req.name.clone().unwrap_or_else(|| default_run_name(&req));
        req.name = Some(name.clone());
        let events = engine.subscribe();
        let runner = engine.clone();
        let stop = shutdown.clone();
        let done = tokio::spawn(async move { runner.run(req, stop).await });
        let worker = DataWorker::start(&db, RunSelector::Name(name), super::watch::WATCH_POLL)?;
        let app = App::new(
            Mode::Run,
            theme,
            db.display().to_string(),
            chrono::Utc::now(),
        );
        let handle = EngineHandle {
            shutdown,
            done,
            events,
        };
        crate::tui::run(app, worker, Some(handle))
            .await?
            .ok_or_else(|| eyre!("the dashboard closed before the engine stopped"))?
    } else {
        let progress = tokio::spawn(show_progress(engine.subscribe()));
        let result = engine.run(req, shutdown).await;
        // Closing the event channel ends the progress display whatever happened.
        drop(engine);
        let _ = progress.await;
        result?
    };
    print_summary(&store, &outcome)?;
    store.writer().stop();
    Ok(if outcome.finished { 0 } else { 130 })
}

/// Prints the run's pass-rate table.
fn print_summary(store: &Store, outcome: &RunOutcome) -> Result<()> {
    let conn = store.connect()?;
    let tasks = queries::run_tasks(&conn, outcome.run.id)?;
    let trials = queries::current_briefs(&conn, outcome.run.id)?;
    let ids: Vec<String> = tasks.iter().map(|t| t.task_id.clone()).collect();
    let summaries = summarize(&ids, outcome.run.n_trials, &outcome.run.conditions, &trials);
    println!(
        "run {} — {} ({} tasks × {} trials, agent {}{})",
        outcome.run.name,
        if outcome.finished {
            "finished"
        } else {
            "stopped; re-run the same command to resume"
        },
        ids.len(),
        outcome.run.n_trials,
        outcome.run.agent,
        outcome
            .run
            .model
            .as_deref()
            .map(|m| format!(", model {m}"))
            .unwrap_or_default()
    );
    println!("{}", conditions_table(&summaries));
    println!(
        "pass rate = Method D: per task the mean reward over its trials, averaged over all selected tasks (missing or errored trials count 0)"
    );
    println!(
        "database {} · jobs {}",
        store.path().display(),
        outcome.run.jobs_dir
    );
    Ok(())
}

/// First Ctrl-C or SIGTERM: stop cleanly. Second: exit at once (the next run recovers).
pub(crate) fn spawn_signal_handler(shutdown: CancellationToken) {
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let term_recv = async {
            match term.as_mut() {
                Some(t) => {
                    t.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term_recv => {}
        }
        eprintln!(
            "\nstopping: removing containers and saving state (Ctrl-C again to quit at once)"
        );
        shutdown.cancel();
        let _ = tokio::signal::ctrl_c().await;
        std::process::exit(130);
    });
}

/// A progress bar on a terminal; one line per finished trial otherwise (nohup logs).
/// Returns true when the event channel closed (the engine is gone), false after one run stopped.
pub(crate) async fn show_progress(
    mut events: tokio::sync::broadcast::Receiver<EngineEvent>,
) -> bool {
    let tty = std::io::stderr().is_terminal();
    let bar = ProgressBar::hidden();
    let mut counts = Counts::default();
    loop {
        match events.recv().await {
            Ok(EngineEvent::Started { total, done, .. }) => {
                if tty {
                    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                    bar.set_style(
                        ProgressStyle::with_template(
                            "{elapsed_precise} [{bar:30}] {pos}/{len} trials · {msg} · ETA {eta}",
                        )
                        .expect("template")
                        .progress_chars("=> "),
                    );
                }
                bar.set_length(total as u64);
                bar.set_position(done as u64);
                counts.total = total;
                counts.done = done;
            }
            Ok(EngineEvent::TrialDone { row }) => {
                if row.outcome == Some(Outcome::Interrupted) {
                    continue;
                }
                counts.record(&row);
                bar.set_position(counts.done as u64);
                bar.set_message(counts.message());
                let line = trial_line(&row, counts.done, counts.total);
                if tty {
                    if row.outcome != Some(Outcome::Pass) {
                        bar.println(line);
                    }
                } else {
                    eprintln!("{line}");
                }
            }
            Ok(EngineEvent::Notice { level, message }) => {
                let line = format!("[{level}] {message}");
                if tty {
                    bar.println(line);
                } else {
                    eprintln!("{line}");
                }
            }
            Ok(EngineEvent::Stopped { .. }) => {
                bar.finish_and_clear();
                return false;
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            Ok(EngineEvent::TrialProgress { .. })
            | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
        }
    }
    bar.finish_and_clear();
    true
}

fn trial_line(row: &TrialRow, done: usize, total: usize) -> String {
    let outcome = row.outcome.map(|o| o.as_str()).unwrap_or("?");
    let reward = row
        .reward
        .map(|r| format!(" reward {r}"))
        .unwrap_or_default();
    let error = row
        .error
        .as_deref()
        .filter(|_| row.outcome != Some(Outcome::Pass))
        .map(|e| format!(" — {}", e.lines().next().unwrap_or_default()))
        .unwrap_or_default();
    format!(
        "[{done}/{total}] {} {} #{} (attempt {}): {outcome}{reward}{error}",
        row.task_id,
        condition_label(&row.condition),
        row.trial_index,
        row.attempt
    )
}

#[derive(Default)]
struct Counts {
    total: usize,
    done: usize,
    pass: usize,
    fail: usize,
    errors: usize,
}

impl Counts {
    fn record(&mut self, row: &TrialRow) {
        self.done += 1;
        match row.outcome {
            Some(Outcome::Pass) => self.pass += 1,
            Some(Outcome::Fail) => self.fail += 1,
            _ => self.errors += 1,
        }
    }
    fn message(&self) -> String {
        format!(
            "pass {} · fail {} · other {}",
            self.pass, self.fail, self.errors
        )
    }
}
