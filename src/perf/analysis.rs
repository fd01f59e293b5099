//! `skillscope bench analysis`: scoring a synthetic store of many trials (the report's and the
//! dashboard's analysis), timed on a cold and a warm connection. Prints figures; asserts nothing.

use std::path::Path;
use std::time::Instant;

use crate::console::table::{Column, fit, terminal_width};
use color_eyre::eyre::Result;

use crate::store::Store;

/// What `skillscope bench analysis` scores.
pub(crate) struct Shape {
    /// An experiment's two runs of two conditions each (A, B, A', B') instead of one run of two.
    pub experiment: bool,
    /// Bootstrap resamples per CI.
    pub resamples: usize,
}

/// `skillscope bench analysis`: builds a store of `trials` finished trials — two conditions over
/// `tasks` tasks, or an experiment's two runs of two conditions each (A, B, A', B') — and times
/// the analysis on a cold and a warm connection, then the whole report, with `shape.resamples`
/// bootstrap resamples per CI.
pub(crate) fn analysis_bench(
    trials: usize,
    tasks: usize,
    shape: Shape,
    keep: Option<&Path>,
) -> Result<()> {
    use crate::analysis::results::Scoring;
    use crate::analysis::results::{Selection, analyze};
    let Shape {
        experiment,
        resamples,
    } = shape;
    let scoring = Scoring::from(crate::analysis::ci::CiMethod {
        resamples,
        ..Default::default()
    });
    let tasks = tasks.max(1);
    let n_conditions = if experiment { 4 } else { 2 };
    let per_task = (trials / (tasks * n_conditions)).max(1) as u32;
    let tmp = tempfile::tempdir()?;
    let root = match keep {
        Some(k) => {
            std::fs::create_dir_all(k)?;
            let _ = std::fs::remove_file(k.join("analysis.db"));
            k.to_path_buf()
        }
        None => tmp.path().to_path_buf(),
    };
    let db = root.join("analysis.db");
    let store = Store::open(&db)?;
    let conn = store.connect()?;
    let t0 = Instant::now();
    let conditions = |keys: &[&str]| keys.iter().map(|k| k.to_string()).collect::<Vec<_>>();
    let run = crate::perf::synthetic::fill_results(
        &conn,
        "bench-analysis",
        tasks,
        &conditions(&["no-skills", "curated"]),
        per_task,
        7,
    )?;
    let selection = if experiment {
        let round2 = crate::perf::synthetic::fill_results(
            &conn,
            "bench-analysis-round2",
            tasks,
            &conditions(&["skills:/data/ls-a-v1", "skills:/data/ls-b-v1"]),
            per_task,
            11,
        )?;
        crate::store::learning::find_or_insert_experiment(
            &conn,
            "bench-experiment",
            &serde_json::json!({}),
            &run.name,
            &round2.name,
        )?;
        Selection::Experiment("bench-experiment".into())
    } else {
        Selection::Runs(vec![run.name.clone()])
    };
    let generated = t0.elapsed();
    let n = crate::store::analysis::count_trials(&conn)?;
    let mut rows = Vec::new();
    // The packed trial facts the analysis reads (`store::slot_facts`): the store's writer keeps
    // them as trials finish; here every group of the generated store is packed at once, timed
    // apart from the analysis.
    let (t, cpu) = (Instant::now(), cpu_seconds());
    let groups = crate::store::slot_facts::refresh_all(&conn, 256)?;
    rows.push((
        "pack trial facts (the writer, as trials finish)",
        t.elapsed(),
        cpu_seconds() - cpu,
        format!("{groups} (run, task, condition) groups"),
    ));
    drop(conn);
    store.writer().stop();
    // The generated store (~450 MB at 10⁶ trials) is written back to disk before anything is
    // timed, so the kernel's write-back of the generator's pages is not in the figures.
    for file in [db.clone(), db.with_extension("db-wal")] {
        if let Ok(f) = std::fs::File::open(&file) {
            f.sync_all()?;
        }
    }
    for label in ["cold (new connection)", "warm (same connection)"] {
        let conn = Store::open_existing(&db)?;
        if label.starts_with("warm") {
            analyze(&conn, &selection, &scoring)?;
        }
        let (t, cpu) = (Instant::now(), cpu_seconds());
        let r = analyze(&conn, &selection, &scoring)?;
        let took = t.elapsed();
        rows.push((
            label,
            took,
            cpu_seconds() - cpu,
            format!(
                "{} tasks, {} conditions, Δ {:+.1} pp",
                r.tasks.len(),
                r.conditions.len(),
                r.comparisons
                    .first()
                    .and_then(|c| c.delta_pp)
                    .unwrap_or(0.0)
            ),
        ));
    }
    // The whole report: analysis, rubric scoring of every invocation, the rubric's queries,
    // Markdown, charts, JSON and CSV. The first report scores every invocation; later ones find
    // the run's invocations up to date.
    for label in [
        "report, first (scores every invocation)",
        "report, again (invocations up to date)",
    ] {
        let conn = Store::open_existing(&db)?;
        let out = root.join("report");
        let (t, cpu) = (Instant::now(), cpu_seconds());
        let report = crate::report::build(&conn, &selection, &scoring)?;
        let written = crate::report::write(
            &report,
            &out,
            &[
                crate::report::Format::Md,
                crate::report::Format::Html,
                crate::report::Format::Json,
                crate::report::Format::Csv,
            ],
        )?;
        rows.push((
            label,
            t.elapsed(),
            cpu_seconds() - cpu,
            format!(
                "{} invocations, {} skills; {} files",
                report.skills.invocations,
                report.skills.scores.len(),
                written.files.len()
            ),
        ));
    }
    let columns = [
        Column::new("analysis"),
        Column::new("trials"),
        Column::new("time"),
        Column::new("cpu"),
        Column::new("result").text(),
    ];
    let mut table: Vec<Vec<String>> = Vec::new();
    for (label, took, cpu, what) in rows {
        table.push(vec![
            label.to_string(),
            n.to_string(),
            format!("{:.3}s", took.as_secs_f64()),
            format!("{cpu:.3}s"),
            what,
        ]);
    }
    println!("{}", fit(&columns, table, terminal_width()));
    println!(
        "({} resamples per CI; cpu = the process's user + system time, all threads, a figure other work on the machine disturbs less than the wall time; load average {}; store generated in {:.1}s; targets at 1,000,000 trials on a quiet 2-core machine: full analysis ≤ 0.5 s, first report ≤ 3 s)",
        crate::format::thousands(resamples),
        load_average(),
        generated.as_secs_f64()
    );
    Ok(())
}

/// The process's CPU time so far, user + system over all its threads, in seconds
/// (`getrusage(RUSAGE_SELF)`); 0 when the call fails.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes a `rusage` into the zeroed value it is given and reads nothing.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// The one-minute load average (`/proc/loadavg`), or "unknown".
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}
