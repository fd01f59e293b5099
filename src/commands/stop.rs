//! `skillscope stop`: asks a run's engine to stop cleanly, from any shell that can open its
//! database — the engine notices within a second, interrupts and re-queues its running trials,
//! removes its containers and marks the run stopped. A run whose engine is already gone (stale)
//! is marked stopped here.

use std::time::{Duration, Instant};

use color_eyre::eyre::Result;

use crate::cli::StopArgs;
use crate::store::{Liveness, Store, queries};

/// How long `stop` waits for the engine to stop.
const WAIT: Duration = Duration::from_secs(120);

/// Runs `skillscope stop`.
///
/// # Errors
/// A missing database or run; a database error.
pub fn execute(args: StopArgs) -> Result<()> {
    let conn = Store::open_existing(&args.db.db)?;
    let run = super::find_run(&conn, args.run.as_deref())?;
    match Liveness::of(&run, chrono::Utc::now(), &crate::store::owner::host_name()) {
        Liveness::Idle => {
            println!("run {} is not running ({})", run.name, run.status);
            return Ok(());
        }
        Liveness::Stale { since, .. } => {
            queries::release_run(
                &conn,
                run.id,
                false,
                Some("the engine was gone (marked stopped by `skillscope stop`)"),
            )?;
            println!(
                "run {} had no live engine (gone since {}); marked stopped — resume it with: {}",
                run.name,
                since.as_deref().unwrap_or("?"),
                run.resume_command
                    .as_deref()
                    .unwrap_or("skillscope run --run <name> …")
            );
            return Ok(());
        }
        Liveness::Live { .. } => {}
    }
    queries::request_stop(&conn, run.id)?;
    println!(
        "stop requested for run {} (engine pid {} on {})",
        run.name,
        run.owner_pid.unwrap_or_default(),
        run.owner_host.as_deref().unwrap_or("?")
    );
    if args.no_wait {
        return Ok(());
    }
    let t0 = Instant::now();
    while t0.elapsed() < WAIT {
        std::thread::sleep(Duration::from_millis(200));
        let now = queries::get_run(&conn, run.id)?;
        if now.status != "running" {
            println!(
                "run {} — {}{}",
                now.name,
                now.status,
                now.stop_reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            );
            return Ok(());
        }
    }
    println!(
        "the engine has not stopped within {}s (it may be removing containers); `skillscope status {}` shows it",
        WAIT.as_secs(),
        run.name
    );
    Ok(())
}
