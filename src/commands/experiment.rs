//! `skillscope experiment <plan.toml>`: the whole two-round experiment ([`crate::experiment`]),
//! with progress lines (or the dashboard on a terminal) and the results at the end.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use color_eyre::eyre::Result;

use super::shared::plan_setup::{DryRun, load_plan, run_args};
use super::shared::signals::Signals;
use super::shared::table::{comparisons_table, conditions_table};
use crate::cli::{ExperimentArgs, exit_code};
use crate::engine::Engine;
use crate::experiment::plan::Plan;
use crate::experiment::{Experiment, ExperimentOutcome, ExperimentSetup};
use crate::store::Store;
use crate::tui::TuiEnd;

/// `plan` with the design flags (`--stages`, `--no-early-stop`) over its `[sequential]` table.
fn with_design_flags(args: &ExperimentArgs, mut plan: Plan) -> Plan {
    if let Some(k) = args.stages {
        plan.sequential.stages = Some(k);
    }
    if args.no_early_stop {
        plan.sequential.early_stop = Some(false);
    }
    plan
}

/// Refuses, before the preflight and with nothing written, an experiment that exists in the
/// database with another plan than `plan` with the flags — its `[sequential]` design changed
/// between rounds, say (issue 47). A dry run starts afresh in its own folder: never refused.
///
/// # Errors
/// The plan that differs, naming the tables and both values; a configuration that cannot be
/// read.
fn refuse_changed_plan(args: &ExperimentArgs, plan: &Plan, dry: Option<&DryRun>) -> Result<()> {
    if dry.is_some() {
        return Ok(());
    }
    let plan = with_design_flags(args, plan.clone());
    let round1 = run_args(&plan, args.db.clone());
    let file = crate::config::FileConfig::load(round1.config.as_deref())?;
    let db = round1
        .db
        .or(file.run.db)
        .unwrap_or_else(|| PathBuf::from("skillscope.db"));
    if !db.exists() {
        return Ok(());
    }
    let reading = Store::open_for_reading(&db)?;
    if let Some(row) = crate::store::learning::find_experiment(&reading, &plan.name())?
        && let Some(why) = crate::store::learning::plan_conflict(&row, &plan.public_json())
    {
        return Err(color_eyre::eyre::eyre!("{why}"));
    }
    Ok(())
}

/// Builds the experiment from the plan and flags (for a dry run: against its stand-in, in its
/// folder).
///
/// # Errors
/// A bad plan, settings or database.
pub fn prepare(
    args: &ExperimentArgs,
    plan: Plan,
    dry: Option<&DryRun>,
) -> Result<(ExperimentSetup, PathBuf, Experiment)> {
    let plan = with_design_flags(args, plan);
    plan.check().map_err(|m| color_eyre::eyre::eyre!("{m}"))?;
    let db_flag = if dry.is_some() { None } else { args.db.clone() };
    let round1_args = run_args(&plan, db_flag);
    let file = crate::config::FileConfig::load(round1_args.config.as_deref())?;
    let (round1, db) = super::shared::request::build_request(&round1_args, &file)?;
    let settings =
        super::shared::acontext::acontext_settings(&args.acontext, Some(&plan.acontext))?;
    let (client, mut learn) = match dry {
        Some(d) => (
            crate::acontext::Client::new(&d.config)?,
            super::shared::acontext::learn_defaults(&settings)?,
        ),
        None => (
            super::shared::acontext::client_for(&settings)?,
            super::shared::acontext::learn_defaults(&settings)?,
        ),
    };
    if dry.is_some() {
        // The stand-in moves a learning session on by one state per poll: poll briskly.
        learn.poll = (
            std::time::Duration::from_millis(50),
            std::time::Duration::from_millis(500),
        );
    }
    let exports_root = plan
        .exports_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("exports"));
    let store = Store::open(&db)?;
    let engine = Engine::new(store.clone());
    let exp = Experiment {
        store,
        engine,
        client,
        cancel: tokio_util::sync::CancellationToken::new(),
        progress: None,
        notify: None,
    };
    Ok((
        ExperimentSetup {
            plan,
            round1,
            exports_root,
            learn,
            baseline: args.baseline_from.clone().map(|run| {
                crate::experiment::baseline::BaselineFrom {
                    run,
                    allow: args.allow_drift.clone(),
                }
            }),
        },
        db,
        exp,
    ))
}

/// Runs `skillscope experiment`. Returns the exit code: 0 when done, 130 when stopped.
///
/// # Errors
/// A bad plan, settings or database; a phase that failed (its state is kept).
pub async fn execute(args: ExperimentArgs) -> Result<i32> {
    let (mut plan, dry) = load_plan(args.plan.as_deref(), args.db.clone(), args.dry_run).await?;
    if let Some(c) = args.concurrency {
        plan.concurrency = Some(c);
    }
    if let Some(d) = &dry {
        crate::outln!(
            "dry run of experiment {} in {} — nothing is spent:",
            plan.name(),
            d.root.display()
        );
        for n in &d.notes {
            crate::outln!("  {n}");
        }
    }
    refuse_changed_plan(&args, &plan, dry.as_ref())?;
    // Before anything is spent: every check at once, one table, nothing started on a failure.
    let inputs =
        super::shared::preflight::for_plan(&plan, args.db.clone(), &args.acontext, dry.as_ref())?;
    let checked = crate::preflight::run(&inputs).await;
    super::shared::preflight::print(&checked, true);
    if !checked.passed() {
        if let Some(mut d) = dry {
            d.server.stop().await;
        }
        return Ok(exit_code::CHECK_FAILED);
    }
    let (setup, db, mut exp) = prepare(&args, plan, dry.as_ref())?;
    print_plan(&exp, &setup);
    let starts = super::shared::progress::record_run_starts(&exp.engine);
    let setup_reports = setup.plan.reports_dir.clone();
    let log = super::shared::headless::run_log(&db, &setup.plan.name());
    let signals = Signals::install(Some(log.clone()), dry.is_none());
    exp.cancel = signals.shutdown.clone();
    let headless = |mut exp: Experiment| {
        exp.progress = Some(super::shared::acontext::print_progress());
        exp.notify = Some(Arc::new(|m: &str| {
            crate::errln!("{}", crate::sanitize::text(m))
        }));
        exp.client
            .availability()
            .set_sink(super::shared::acontext::print_availability());
        let engine = exp.engine.clone();
        let progress = tokio::spawn(async move {
            while !super::shared::progress::show_progress(engine.subscribe()).await {}
        });
        (exp, progress)
    };
    let outcome = if !args.headless && std::io::stdout().is_terminal() {
        dashboard(&args, &db, exp.clone(), setup, &signals, &log).await?
    } else {
        super::shared::progress::note_where_progress_goes();
        let (exp, progress) = headless(exp);
        let result = exp.run(&setup).await;
        drop(exp.engine);
        progress.abort();
        result?
    };
    starts.abort();
    print_outcome(&outcome, dry.is_some());
    if outcome.finished {
        let reports = setup_reports.unwrap_or_else(|| super::beside(&db, "reports"));
        write_report(&db, &reports, &outcome.experiment.name);
    }
    if let Some(mut d) = dry {
        d.server.stop().await;
        let db = db.display().to_string();
        crate::outln!(
            "dry run: its skills came from the Acontext stand-in, which learns nothing real; look again with `skillscope watch --db {db} --experiment {}` or `skillscope status --db {db}`",
            outcome.experiment.name
        );
    }
    Ok(if outcome.finished {
        exit_code::FINISHED
    } else if signals.shutdown.is_cancelled() {
        exit_code::INTERRUPTED
    } else {
        exit_code::STOPPED
    })
}

/// Prints what the experiment's remaining trials will cost and take and what its comparisons can
/// detect (`skillscope plan`'s tables), on stderr beside the progress; the round boundary says it
/// again in the event log. A forecast that cannot be made is a one-line note.
fn print_plan(exp: &Experiment, setup: &ExperimentSetup) {
    let inputs = crate::experiment::forecast::Inputs {
        plan: &setup.plan,
        round1: &setup.round1,
        effect_pp: None,
    };
    let f = exp
        .store
        .connect()
        .map_err(color_eyre::eyre::Report::from)
        .and_then(|c| {
            let stored = crate::store::experiment_ledger::ExperimentReader::new(&c);
            Ok(crate::experiment::forecast::forecast(
                Some(stored),
                &inputs,
            )?)
        });
    match f {
        Ok(f) => {
            crate::errln!("plan of experiment {}:", setup.plan.name());
            for line in super::shared::forecast::print_lines(&f) {
                crate::errln!("{line}");
            }
        }
        Err(e) => crate::errln!("note: no plan of the experiment ({e})"),
    }
}

/// Writes the finished experiment's report (Markdown with charts, JSON, CSV) to
/// `<reports>/<experiment>/` (the plan's `reports_dir`: `reports` beside the plan unless it says
/// otherwise). A report that cannot be written is a warning: the experiment's results are in the
/// store and `skillscope report` can write it again.
fn write_report(db: &std::path::Path, reports: &std::path::Path, name: &str) {
    let dir = reports.join(crate::skillsbench::condition::sanitize_slug(name));
    let result = (|| -> Result<usize> {
        let conn = crate::store::Store::open_existing(db)?;
        let report = crate::report::build(
            &conn,
            &crate::analysis::results::Selection::Experiment(name.to_string()),
            &crate::analysis::results::Scoring {
                as_of: Some(chrono::Utc::now()),
                ..Default::default()
            },
        )?;
        let written = crate::report::write(&report, &dir, &crate::report::Format::DEFAULT)?;
        Ok(written.files.len())
    })();
    match result {
        Ok(n) => crate::outln!("report: {} ({n} files)", dir.join("report.md").display()),
        Err(e) => crate::errln!(
            "warning: the report was not written ({}); run `skillscope report --experiment {name}`",
            crate::sanitize::text(&format!("{e:#}"))
        ),
    }
}

/// Prints the phase, the four conditions and the comparisons; a stopped experiment says how it
/// goes on (the same command resumes it; a `dry` run is made afresh instead).
pub fn print_outcome(o: &ExperimentOutcome, dry: bool) {
    crate::outln!(
        "experiment {} — {}",
        o.experiment.name,
        match (o.finished, dry) {
            (true, _) => "done".to_string(),
            (false, false) => format!(
                "stopped in phase {}; run the same command again to resume",
                o.experiment.phase
            ),
            (false, true) => format!(
                "stopped in phase {}; a dry run is not resumed: the same command starts a new one",
                o.experiment.phase
            ),
        }
    );
    for (label, r) in &o.learned {
        super::shared::acontext::print_report(label, r);
    }
    let Some(r) = o.analysis.as_ref().filter(|r| !r.conditions.is_empty()) else {
        return;
    };
    crate::outln!("{}", conditions_table(r));
    let width = crate::console::table::terminal_width();
    for n in super::shared::table::condition_notes(r) {
        crate::outln!("{}", crate::console::table::note(&n, width));
    }
    crate::outln!(
        "{}",
        r.conditions
            .iter()
            .map(|c| format!(
                "{} = {}",
                c.label,
                crate::skillsbench::condition::condition_label(&c.condition)
            ))
            .collect::<Vec<_>>()
            .join(" · ")
    );
    if !r.comparisons.is_empty() {
        crate::outln!("{}", comparisons_table(r));
    }
    if !r.adaptive.is_empty() {
        crate::outln!("{}", super::shared::table::adaptive_table(r));
    }
    if o.finished && !o.hypotheses.is_empty() {
        crate::outln!("hypotheses of the evaluation plan:");
        for h in &o.hypotheses {
            crate::outln!(
                "  H{} [{}] {} — {}: {}",
                h.number,
                h.scope,
                h.claim,
                h.verdict.label(),
                crate::sanitize::text(&h.answer)
            );
        }
    }
    crate::outln!(
        "pass rate = Method D over round 1's tasks (with a held-out split: the tasks round 2 ran; missing or errored trials count 0); Δ in percentage points; g = normalized gain"
    );
    if !o.adaptive.is_empty() {
        crate::outln!(
            "pass@2-adaptive = per task 1 − (1 − p₁)(1 − p₂), p₁ and p₂ each round's pass@1 (success = reward ≥ 1.0); pass@2 = round 1's unbiased pass@2 (Chen et al. 2021), — with fewer than 2 trials per task; gain = their difference, 95% paired bootstrap CI over tasks"
        );
    }
}

/// The experiment under the dashboard: it follows the experiment's current run and shows its
/// phase; quitting stops the pipeline cleanly.
async fn dashboard(
    args: &ExperimentArgs,
    db: &std::path::Path,
    exp: Experiment,
    setup: ExperimentSetup,
    signals: &Signals,
    log: &std::path::Path,
) -> Result<ExperimentOutcome> {
    let file = crate::config::FileConfig::load(args.acontext.config.as_deref())?;
    let theme = super::shared::theme::pick_theme(args.theme.as_deref(), &file)?;
    let events = exp.engine.subscribe();
    let shutdown = exp.cancel.clone();
    let name = setup.plan.name();
    let (engine, store) = (exp.engine.clone(), exp.store.clone());
    let done = tokio::spawn(async move { exp.run(&setup).await });
    let dashboard = crate::tui::Dashboard {
        db,
        follow: crate::tui::worker::RunSelector::Experiment(name.clone()),
        mode: crate::tui::app::Mode::Run,
        theme,
        mouse: !args.no_mouse,
        resumable: signals.resumable,
        success: Default::default(),
    };
    let handle = crate::tui::EngineHandle {
        shutdown,
        done,
        events,
        finish: None,
        // At its end the dashboard stays, saying so, until `q` — as a run's does.
        hold_at_end: true,
    };
    // Output moves to the log only once the dashboard has stopped drawing (below).
    let held = signals.hold_terminal();
    let end = crate::tui::open(dashboard, Some(handle), Some(signals.hangup.clone())).await;
    drop(held);
    match end? {
        TuiEnd::Engine(result) => Ok(result?),
        TuiEnd::Quit => super::shared::signals::quit_at_once(signals.resumable),
        TuiEnd::Detached(done) => {
            // The terminal is gone: go on headless, into the log beside the database.
            let _ = super::shared::headless::redirect_output(log);
            crate::errln!(
                "[info] the terminal went away; the experiment goes on headless (log {})",
                log.display()
            );
            let run = current_run(&store, &name);
            if let Some(run) = &run {
                super::shared::progress::record_headless(&store, run, log).await;
            }
            // Trial lines count against the plan of the run under way, then of each next run.
            let mut from = run.and_then(|run| super::shared::progress::progress_now(&store, &run));
            let progress = tokio::spawn(async move {
                while !super::shared::progress::show_progress_from(engine.subscribe(), from.take())
                    .await
                {}
            });
            let result = done
                .await
                .map_err(|e| color_eyre::eyre::eyre!("the experiment task failed: {e}"));
            progress.abort();
            Ok(result??)
        }
    }
}

/// The run experiment `name` is in now: its round-2 run once round 2 has begun, else round 1's.
fn current_run(store: &Store, name: &str) -> Option<String> {
    let conn = store.connect().ok()?;
    let e = crate::store::learning::find_experiment(&conn, name).ok()??;
    Some(match e.phase.as_str() {
        "round2" | "done" => e.round2_run,
        _ => e.round1_run,
    })
}
