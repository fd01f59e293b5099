//! `skillscope watch`: the dashboard over a run owned by another process (nohup, tmux, another
//! SSH session). It reads the store and writes only commands; quitting never stops the run.

use std::io::IsTerminal;

use color_eyre::eyre::Result;

use crate::cli::WatchArgs;
use crate::config::FileConfig;
use crate::store::Store;
use crate::tui::app::Mode;
use crate::tui::worker::RunSelector;

/// The run `watch` shows: `--experiment NAME` follows that experiment's current run, a run name
/// names one, and otherwise the run an engine is running now (else the newest run).
pub fn selector(args: &WatchArgs) -> RunSelector {
    match (&args.experiment, &args.run) {
        (Some(e), _) => RunSelector::Experiment(e.clone()),
        (None, Some(n)) => RunSelector::Name(n.clone()),
        (None, None) => RunSelector::Current,
    }
}

/// Checks that `watch` has a terminal to draw on: standard input and output must both be one.
///
/// # Errors
/// A [`Hinted`](crate::console::Hinted) error saying which is not and what to use instead.
pub fn require_terminal() -> Result<()> {
    let missing = match (
        std::io::stdin().is_terminal(),
        std::io::stdout().is_terminal(),
    ) {
        (true, true) => return Ok(()),
        (false, true) => "standard input is not a terminal",
        (true, false) => "standard output is not a terminal",
        (false, false) => "neither standard input nor output is a terminal",
    };
    Err(crate::console::hinted(
        format!("the dashboard needs a terminal ({missing})"),
        "for a table use `skillscope status` (or `status --json` in scripts); over SSH use `ssh -t`",
    ))
}

/// Checks that the store holds what `watch` was asked to show (unless `--wait`): an unknown run
/// lists the runs there are.
///
/// # Errors
/// No database, no such run or experiment, or no run at all.
pub fn check_target(args: &WatchArgs) -> Result<()> {
    let reading = Store::open_for_reading(&args.db.db)?;
    let conn: &rusqlite::Connection = &reading;
    let wait_hint = "or pass --wait to wait for it to start";
    match &args.experiment {
        Some(e) => {
            if crate::store::learning::find_experiment(conn, e)?.is_none() {
                let known: Vec<String> = crate::store::learning::list_experiments(conn)?
                    .into_iter()
                    .map(|x| x.name)
                    .collect();
                return Err(crate::console::hinted(
                    format!("no experiment named {e:?}"),
                    if known.is_empty() {
                        format!("the database holds no experiments; {wait_hint}")
                    } else {
                        format!(
                            "experiments in the database: {}; {wait_hint}",
                            known.join(", ")
                        )
                    },
                ));
            }
        }
        None => {
            if let Err(e) = super::find_run(conn, args.run.as_deref()) {
                return Err(e.wrap_err_hint(wait_hint));
            }
        }
    }
    Ok(())
}

/// Adds a sentence to the hint of a [`Hinted`](crate::console::Hinted) error (other errors pass
/// unchanged).
trait MoreHint {
    fn wrap_err_hint(self, more: &str) -> color_eyre::eyre::Report;
}

impl MoreHint for color_eyre::eyre::Report {
    fn wrap_err_hint(self, more: &str) -> color_eyre::eyre::Report {
        match self.downcast::<crate::console::Hinted>() {
            Ok(h) => crate::console::hinted(h.message, format!("{}; {more}", h.hint)),
            Err(other) => other,
        }
    }
}

/// Runs `skillscope watch`.
///
/// # Errors
/// No terminal, a missing database, an unknown run (without `--wait`), a bad theme, or a
/// terminal failure.
pub async fn execute(args: WatchArgs) -> Result<()> {
    require_terminal()?;
    let file = FileConfig::load(args.config.as_deref())?;
    let theme = super::shared::theme::pick_theme(args.theme.as_deref(), &file)?;
    if !args.wait {
        check_target(&args)?;
    }
    let dashboard = crate::tui::Dashboard {
        db: &args.db.db,
        follow: selector(&args),
        mode: Mode::Watch,
        theme,
        mouse: !args.no_mouse,
        resumable: true,
        success: crate::analysis::success::SuccessRule::new(args.pass_threshold)
            .map_err(|e| color_eyre::eyre::eyre!(e))?,
    };
    crate::tui::open::<crate::engine::RunOutcome, crate::engine::EngineError>(
        dashboard, None, None,
    )
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn watch(args: &[&str]) -> WatchArgs {
        let mut argv = vec!["skillscope", "watch"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Watch(w) => w,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn experiment_flag_follows_the_experiment() {
        assert!(matches!(
            selector(&watch(&["--experiment", "demo"])),
            RunSelector::Experiment(n) if n == "demo"
        ));
        assert!(matches!(
            selector(&watch(&["r1"])),
            RunSelector::Name(n) if n == "r1"
        ));
        assert!(matches!(selector(&watch(&[])), RunSelector::Current));
        assert!(
            Cli::try_parse_from(["skillscope", "watch", "r1", "--experiment", "demo"]).is_err(),
            "a run name and an experiment conflict"
        );
    }
}
