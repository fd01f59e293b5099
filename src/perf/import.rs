//! `skillscope bench import`: `skillscope import` of synthetic Harbor job folders in a child
//! process, its wall time and peak memory. Prints figures; asserts nothing.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::console::table::{Column, fit, terminal_width};
use color_eyre::eyre::{Result, WrapErr, eyre};

use super::peak_rss_kib;

/// Runs `skillscope import` on `dir` in a child process; returns (wall seconds, peak KiB, stdout).
pub(crate) fn timed_import(dir: &Path, db: &Path) -> Result<(f64, u64, String)> {
    let exe = std::env::current_exe()?;
    let t0 = Instant::now();
    let mut child = std::process::Command::new(exe)
        .args(["import", "--db"])
        .arg(db)
        .arg(dir)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .wrap_err("starting skillscope import")?;
    let pid = child.id();
    let mut peak = 0;
    while child.try_wait()?.is_none() {
        if let Some(k) = peak_rss_kib(pid) {
            peak = peak.max(k);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let wall = t0.elapsed().as_secs_f64();
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(eyre!("skillscope import failed"));
    }
    Ok((
        wall,
        peak,
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}

pub(crate) fn import_bench(trials: usize, keep: Option<PathBuf>) -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let base = keep.unwrap_or_else(|| tmp.path().to_path_buf());
    let quarter = (trials / 4).max(1);
    let columns = [
        Column::new("trial folders").short("trials"),
        Column::new("generated").short("gen"),
        Column::new("import wall").short("wall"),
        Column::new("trials/s"),
        Column::new("peak memory").short("peak"),
        Column::new("imported").text(),
    ];
    let mut table: Vec<Vec<String>> = Vec::new();
    for (label, n) in [("quarter", quarter), ("full", trials)] {
        let dir = base.join(format!("jobs-{label}"));
        let t0 = Instant::now();
        crate::perf::synthetic::write_harbor_jobs(&dir, n, 42)?;
        let generated = t0.elapsed().as_secs_f64();
        let db = base.join(format!("import-{label}.db"));
        let _ = std::fs::remove_file(&db);
        let (wall, peak, out) = timed_import(&dir, &db)?;
        let imported = out.lines().next().unwrap_or("").to_string();
        table.push(vec![
            n.to_string(),
            format!("{generated:.1}s"),
            format!("{wall:.2}s"),
            format!("{:.0}", n as f64 / wall),
            format!("{:.1} MiB", peak as f64 / 1024.0),
            imported,
        ]);
    }
    println!("{}", fit(&columns, table, terminal_width()));
    println!(
        "(the wall time includes process start and opening the database; target ≥ 2,000 trials/s, memory flat)"
    );
    Ok(())
}
