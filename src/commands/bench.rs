//! `skillscope bench …`: the performance tooling of [`crate::perf`], run from the command line.

use color_eyre::eyre::Result;

use crate::cli::BenchWhat;

/// Runs the benchmark `what` and prints its figures.
///
/// # Errors
/// As [`crate::perf::execute`]: Docker or database failures.
pub async fn execute(what: BenchWhat) -> Result<()> {
    crate::perf::execute(what).await
}
