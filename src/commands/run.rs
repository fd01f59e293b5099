//! `skillscope run`: build the run request from flags and config, start the engine, show progress,
//! stop cleanly on Ctrl-C/SIGTERM, print the pass-rate table.

use std::io::IsTerminal;

use color_eyre::eyre::{Result, WrapErr, eyre};

use super::shared::request::build_request;
use super::shared::signals::Signals;
use super::shared::table::conditions_table;
use super::shared::{headless, progress, resume, theme};
use crate::cli::{RunArgs, exit_code};
use crate::config::FileConfig;
use crate::engine::{Engine, RunOutcome, StopReason, default_run_name};
use crate::store::{Store, queries};
use crate::tui::app::Mode;
use crate::tui::worker::RunSelector;
use crate::tui::{EngineHandle, TuiEnd};

/// Runs `skillscope run`: the dashboard when stdout is a terminal (and not `--headless`), else a
/// progress bar or log lines; with `--detach`, a headless copy of itself in the background.
/// Returns the process exit code (see [`crate::cli::exit_code`]).
///
/// # Errors
/// Setup failures (settings, database, Docker, a conflicting run) and errors that stop the run.
pub async fn execute(args: RunArgs) -> Result<i32> {
    let file = FileConfig::load(args.config.as_deref())?;
    let (mut req, db) = build_request(&args, &file)?;
    let name = req.name.clone().unwrap_or_else(|| default_run_name(&req));
    req.name = Some(name.clone());
    // Before anything is written (the run's log included): a run another live process owns.
    refuse_live_run(&db, &name)?;
    req.resume_command = Some(resume::resume_command(&name));
    // The task set, loaded once — for the preflight and the engine alike — before the database
    // is opened: a tasks folder that cannot be used leaves nothing behind.
    let mut prepared = super::prepare_run(req).await?;
    // An LLM agent spends money from its first trial: check the provider, Docker and the tasks
    // first (the oracle and nop meet any such problem at once, at no cost).
    if crate::runner::agents::harness::Harness::from_name(&prepared.request.agent).is_some() {
        let inputs = crate::preflight::Inputs::of_prepared(prepared, db.clone());
        let checked = crate::preflight::run(&inputs).await;
        super::shared::preflight::print(&checked, true);
        if !checked.passed() {
            return Ok(exit_code::CHECK_FAILED);
        }
        prepared = inputs
            .into_prepared()
            .ok_or_else(|| eyre!("the task set did not load"))?;
    }
    // The jobs folder must take trial folders: found here, not trial by trial.
    check_jobs_dir(&prepared.request.jobs_dir)?;
    if args.detach {
        return detach(&db, &name).await;
    }
    let dashboard = !args.headless && std::io::stdout().is_terminal();
    let theme = match dashboard {
        true => Some(theme::pick_theme(args.theme.as_deref(), &file)?),
        false => None,
    };
    let created = open_store(&db)?;
    let store = created.store.clone();
    let engine = Engine::new(store.clone());
    let log = headless::run_log(&db, &name);
    let signals = Signals::install(Some(log.clone()), true);
    let starts = progress::record_run_starts(&engine);
    let result = if let Some(theme) = theme {
        // The dashboard may still send retries after the last trial: keep the engine up until quit.
        let dashboard_open = tokio_util::sync::CancellationToken::new();
        prepared.request.stay_alive = Some(dashboard_open.clone());
        let events = engine.subscribe();
        let runner = engine.clone();
        let stop = signals.shutdown.clone();
        let done = tokio::spawn(async move { runner.run(prepared, stop).await });
        let dashboard = crate::tui::Dashboard {
            db: &db,
            follow: RunSelector::Name(name.clone()),
            mode: Mode::Run,
            theme,
            mouse: !args.no_mouse,
            resumable: true,
            success: Default::default(),
        };
        let handle = EngineHandle {
            shutdown: signals.shutdown.clone(),
            done,
            events,
            // Quitting once every trial has its verdict lets the engine finish the run.
            finish: Some(dashboard_open.clone()),
            hold_at_end: false,
        };
        // Output moves to the log only once the dashboard has stopped drawing (below).
        let held = signals.hold_terminal();
        let end = crate::tui::open(dashboard, Some(handle), Some(signals.hangup.clone())).await;
        drop(held);
        match end? {
            TuiEnd::Engine(result) => result,
            TuiEnd::Quit => super::shared::signals::quit_at_once(true),
            TuiEnd::Detached(done) => {
                // The terminal is gone: go on headless, into the log beside the database, and
                // end after the last trial (no dashboard will send retries any more).
                dashboard_open.cancel();
                let _ = headless::redirect_output(&log);
                crate::errln!(
                    "[info] the terminal went away; the run goes on headless (log {})",
                    log.display()
                );
                progress::record_headless(&store, &name, &log).await;
                let progress = tokio::spawn(progress::show_progress_from(
                    engine.subscribe(),
                    progress::progress_now(&store, &name),
                ));
                let result = done
                    .await
                    .map_err(|e| eyre!("the engine task failed: {e}"))?;
                progress.abort();
                result
            }
        }
    } else {
        progress::note_where_progress_goes();
        let progress = tokio::spawn(progress::show_progress(engine.subscribe()));
        let result = engine.run(prepared, signals.shutdown.clone()).await;
        // Closing the event channel ends the progress display whatever happened.
        drop(engine);
        let _ = progress.await;
        result
    };
    starts.abort();
    match &result {
        Ok(outcome) => {
            progress::record_run_end(
                &store,
                &name,
                "info",
                crate::experiment::describe_end(outcome),
            )
            .await
        }
        // A request the stored run refuses (another design, other settings) never ran: it
        // leaves nothing recorded, not even its refusal (issue 47).
        Err(crate::engine::EngineError::Mismatch(_)) => {}
        Err(e) => {
            progress::record_run_end(
                &store,
                &name,
                "error",
                format!("run stopped by an error: {e}"),
            )
            .await
        }
    }
    let outcome = match result {
        Ok(o) => o,
        Err(e) => {
            // A start that failed before the run was registered leaves no database behind.
            created.forget_if_empty();
            return Err(e.into());
        }
    };
    print_summary(&store, &outcome)?;
    store.writer().stop();
    Ok(exit_code_of(&outcome))
}

/// Refuses a jobs folder that cannot take trial folders (read-only, not a folder), in one error
/// naming it, before the database is opened: found here, not trial by trial. A nearly full disk
/// is not refused here (the run stops cleanly when it fills; a paid run's preflight refuses it).
///
/// # Errors
/// The failed check, with its fix as the hint.
fn check_jobs_dir(jobs: &std::path::Path) -> Result<()> {
    match crate::preflight::docker::writable_check("jobs folder", jobs) {
        Some(c) => Err(crate::console::hinted(
            format!("jobs folder: {}", c.detail),
            c.fix.unwrap_or_default(),
        )),
        None => Ok(()),
    }
}

/// Opens the store at `db`; when this start fails before a run is registered, a database this
/// command created is removed again (with its `-wal` and `-shm`), so a failed start leaves
/// nothing behind ([`CreatedStore::keep`]).
fn open_store(db: &std::path::Path) -> Result<CreatedStore> {
    let created = !db.exists();
    Ok(CreatedStore {
        store: Store::open(db)?,
        created: created.then(|| db.to_path_buf()),
    })
}

/// A store this command may have created ([`open_store`]).
struct CreatedStore {
    store: Store,
    /// The database's path when this command made it.
    created: Option<std::path::PathBuf>,
}

impl CreatedStore {
    /// Removes the database this command made when it holds no run (the start failed before
    /// registering one): nothing recorded is lost.
    fn forget_if_empty(&self) {
        let Some(db) = &self.created else { return };
        let empty = self
            .store
            .connect()
            .ok()
            .and_then(|c| queries::list_runs(&c).ok())
            .is_some_and(|runs| runs.is_empty());
        if empty {
            self.store.writer().stop();
            for suffix in ["", "-wal", "-shm"] {
                let mut p = db.as_os_str().to_owned();
                p.push(suffix);
                let _ = std::fs::remove_file(std::path::PathBuf::from(p));
            }
        }
    }
}

/// Refuses to start run `name` when a live engine in another process owns it, with the commands
/// that watch and stop that run — what an operator who typed `run` twice wants. Nothing is
/// written: not the database, not the run's log. A database or run that does not exist yet, or a
/// stale owner, is no reason to refuse (the engine takes the run over and says so).
///
/// # Errors
/// A [`Hinted`](crate::console::Hinted) error naming the owner (pid, host, heartbeat age).
fn refuse_live_run(db: &std::path::Path, name: &str) -> Result<()> {
    if !db.exists() {
        return Ok(());
    }
    let Ok(conn) = Store::open_existing(db) else {
        return Ok(());
    };
    let Some(run) = queries::find_run(&conn, name)? else {
        return Ok(());
    };
    let host = crate::store::owner::host_name();
    let mine =
        run.owner_pid == Some(std::process::id()) && run.owner_host.as_deref() == Some(&host);
    match crate::store::Liveness::of(&run, chrono::Utc::now(), &host) {
        crate::store::Liveness::Live { heartbeat_age_secs } if !mine => {
            let db = db.display().to_string();
            Err(crate::console::hinted(
                format!(
                    "run {name} is already running (engine pid {} on {}, heartbeat {heartbeat_age_secs}s ago)",
                    run.owner_pid.unwrap_or_default(),
                    run.owner_host.as_deref().unwrap_or("?"),
                ),
                format!(
                    "watch it: skillscope watch --db {db} {name}\nstop it:  skillscope stop --db {db} {name}"
                ),
            ))
        }
        _ => Ok(()),
    }
}

/// The exit code of a run that ended without an error.
pub fn exit_code_of(outcome: &RunOutcome) -> i32 {
    match &outcome.stop {
        _ if outcome.finished => exit_code::FINISHED,
        Some(StopReason::Operator) => exit_code::INTERRUPTED,
        _ => exit_code::STOPPED,
    }
}

/// `--detach`: starts this same command headless in a new session, its output in the log beside
/// the database, waits until it has registered the run (or failed to), and says how to watch and
/// stop it.
async fn detach(db: &std::path::Path, name: &str) -> Result<i32> {
    use std::os::unix::process::CommandExt;
    let log = headless::run_log(db, name);
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .wrap_err_with(|| format!("opening the run's log {}", log.display()))?;
    let mut args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--detach")
        .collect();
    args.push("--headless".into());
    if !args.iter().any(|a| a == "--run" || a.starts_with("--run=")) {
        args.push("--run".into());
        args.push(name.into());
    }
    let mut child = std::process::Command::new(std::env::current_exe()?);
    child
        .args(&args)
        .stdin(std::process::Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out);
    // A session of its own: the terminal closing (SIGHUP) does not reach it.
    unsafe {
        child.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = child
        .spawn()
        .wrap_err("starting the run in the background")?;
    let pid = child.id();
    let t0 = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Err(eyre!(
                "the background run exited at once ({status}); see {}",
                log.display()
            ));
        }
        let owned = Store::open_existing(db)
            .ok()
            .and_then(|c| queries::find_run(&c, name).ok().flatten())
            .is_some_and(|r| r.status == "running" && r.owner_pid == Some(pid));
        if owned {
            break;
        }
        if t0.elapsed() > std::time::Duration::from_secs(60) {
            crate::errln!(
                "warning: the background run (pid {pid}) has not registered yet; see {}",
                log.display()
            );
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let db = db.display().to_string();
    crate::outln!("run {name} started in the background (pid {pid})");
    crate::outln!("  log:   {}", log.display());
    crate::outln!("  watch: skillscope watch --db {db} {name}");
    crate::outln!("  stop:  skillscope stop --db {db} {name}");
    Ok(exit_code::FINISHED)
}

/// Prints the run's pass-rate table.
fn print_summary(store: &Store, outcome: &RunOutcome) -> Result<()> {
    let conn = store.connect()?;
    let tasks = queries::run_tasks(&conn, outcome.run.id)?;
    let ids: Vec<String> = tasks.iter().map(|t| t.task_id.clone()).collect();
    let results = super::shared::table::run_results(&conn, &outcome.run.name)?;
    let state = match &outcome.stop {
        _ if outcome.finished && outcome.cancelled > 0 => format!(
            "{} (they count 0; `skillscope retry {} --cancelled` and the same command run them)",
            crate::engine::finished_note(outcome.cancelled),
            outcome.run.name
        ),
        _ if outcome.finished => "finished".to_string(),
        Some(reason) => format!(
            "stopped: {}; re-run the same command to resume",
            reason.describe()
        ),
        None => "stopped; re-run the same command to resume".to_string(),
    };
    crate::sayln!(
        "run {} — {} ({}, agent {}{})",
        outcome.run.name,
        state,
        crate::format::tasks_by_trials(ids.len(), outcome.run.n_trials),
        outcome.run.agent,
        outcome
            .run
            .model
            .as_deref()
            .map(|m| format!(", model {m}"))
            .unwrap_or_default()
    );
    crate::outln!("{}", conditions_table(&results));
    let width = crate::console::table::terminal_width();
    for n in super::shared::table::condition_notes(&results) {
        crate::outln!("{}", crate::console::table::note(&n, width));
    }
    crate::outln!(
        "{}",
        crate::console::table::note(
            "pass rate = Method D: per task the mean reward over its trials, averaged over all \
             selected tasks (missing or errored trials count 0)",
            width
        )
    );
    // The trial folders relative to here when they are below it (`jobs/`), else absolute.
    let jobs = std::path::Path::new(&outcome.run.jobs_dir);
    let jobs = std::env::current_dir()
        .ok()
        .and_then(|here| {
            jobs.strip_prefix(here)
                .ok()
                .map(|p| format!("{}/", p.display()))
        })
        .unwrap_or_else(|| outcome.run.jobs_dir.clone());
    crate::sayln!(
        "database {} · trial folders in {jobs}",
        store.path().display()
    );
    Ok(())
}
