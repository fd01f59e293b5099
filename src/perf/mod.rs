//! Performance tooling, together: `skillscope bench runner|import|analysis` (this module's
//! [`execute`]), the synthetic data they and `benches/` use ([`synthetic`]). Each benchmark prints
//! figures and asserts nothing; the figures and how they were taken are in `docs/performance.md`.
//!
//! - [`runner`]: per-trial orchestration overhead against the floor `docker run --rm <image> true`,
//!   serial vs concurrent wall time, and optionally a real task.
//! - [`import`]: importing synthetic Harbor job folders (wall time, peak memory).
//! - [`analysis`]: scoring a large synthetic store, cold and warm.

pub mod analysis;
pub mod import;
mod pod_floor;
pub mod runner;
pub mod synthetic;

use color_eyre::eyre::Result;

use crate::cli::BenchWhat;

/// Runs a benchmark.
///
/// # Errors
/// Docker or database failures.
pub async fn execute(what: BenchWhat) -> Result<()> {
    match what {
        BenchWhat::Runner {
            trials,
            concurrency,
            task,
            task_trials,
            backend,
        } => {
            let backend = crate::config::BackendFileSettings {
                kind: backend,
                ..Default::default()
            }
            .resolve()?;
            runner::runner(trials, concurrency, (task, task_trials), backend).await
        }
        BenchWhat::Import { trials, keep } => import::import_bench(trials, keep),
        BenchWhat::Analysis {
            trials,
            tasks,
            experiment,
            resamples,
            keep,
        } => analysis::analysis_bench(
            trials,
            tasks,
            analysis::Shape {
                experiment,
                resamples,
            },
            keep.as_deref(),
        ),
    }
}

pub(crate) fn secs_between(a: &Option<String>, b: &Option<String>) -> Option<f64> {
    let a = chrono::DateTime::parse_from_rfc3339(a.as_deref()?).ok()?;
    let b = chrono::DateTime::parse_from_rfc3339(b.as_deref()?).ok()?;
    Some((b - a).num_milliseconds() as f64 / 1000.0)
}

pub(crate) fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

pub(crate) fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() { 0.0 } else { v[v.len() / 2] }
}

/// Peak resident memory of a process so far (`VmHWM` in `/proc/<pid>/status`), KiB.
pub(crate) fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
