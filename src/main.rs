//! The `skillscope` binary: parses the command line, runs the subcommand, and turns its result
//! into an exit code ([`skillscope::cli::exit_code`]) and, on failure, one `error: …` line on
//! stderr ([`skillscope::console`]).

use clap::Parser;

use skillscope::cli::{BenchArgs, Cli, Command, exit_code};
use skillscope::{commands, console};

/// Commands that run trials or learning for a long time: a closed pipe must not end them.
fn keeps_running(c: &Command) -> bool {
    matches!(
        c,
        Command::Run(_)
            | Command::Experiment(_)
            | Command::Learn(_)
            | Command::Export(_)
            | Command::AcontextStandin(_)
    )
}

fn main() {
    // Before anything prints: `skillscope status | head -2` ends quietly, like any Unix filter.
    console::default_sigpipe();
    console::install_panic_hook();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SKILLSCOPE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    // Usage errors exit 2 (clap), --help and --version 0.
    let cli = Cli::parse();
    if keeps_running(&cli.command) {
        console::ignore_sigpipe();
        // A run logging into a file: every line says when.
        console::stamp_lines_into_files();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            console::print_error(&color_eyre::eyre::Report::new(e).wrap_err("starting tokio"));
            std::process::exit(exit_code::ERROR);
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Run(args) => commands::run::execute(*args).await,
            Command::Watch(args) => commands::watch::execute(args).await.map(|()| 0),
            Command::Import(args) => commands::import::execute(args).await.map(|()| 0),
            Command::Summarize(args) => commands::summarize::execute(args).map(|()| 0),
            Command::Status(args) => commands::status::execute(args).map(|()| 0),
            Command::Tasks(args) => commands::tasks::execute(args),
            Command::Learn(args) => commands::learn::execute(args).await,
            Command::Export(args) => commands::export::execute(args).await.map(|()| 0),
            Command::Experiment(args) => commands::experiment::execute(*args).await,
            Command::Plan(args) => commands::plan::execute(args).map(|()| 0),
            Command::Preflight(args) => commands::preflight::execute(args).await,
            Command::Replay(args) => commands::replay::execute(args).map(|()| 0),
            Command::Retry(args) => commands::retry::retry(args).map(|()| 0),
            Command::Cancel(sel) => commands::retry::cancel(sel).map(|()| 0),
            Command::Stop(args) => commands::stop::execute(args).map(|()| 0),
            Command::Report(args) => commands::report::execute(args).map(|()| 0),
            Command::AcontextStandin(args) => commands::standin::execute(args).await.map(|()| 0),
            Command::BaseImage => commands::base_image::execute().await.map(|()| 0),
            Command::Bench(BenchArgs { what }) => commands::bench::execute(what).await.map(|()| 0),
        }
    });
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            console::print_error(&e);
            std::process::exit(exit_code::ERROR);
        }
    }
}
