//! `skillscope report`: the results of runs or an experiment as Markdown with charts, JSON and
//! CSV (see [`crate::report`]).

use color_eyre::eyre::{Result, WrapErr, eyre};
use rusqlite::Connection;

use crate::analysis::ci::CiMethod;
use crate::analysis::results::{Scoring, Selection};
use crate::analysis::success::SuccessRule;
use crate::cli::ReportArgs;
use crate::report::{self, Format};
use crate::skillsbench::condition::sanitize_slug;
use crate::store::{learning as lq, queries};

/// Runs `skillscope report`.
///
/// # Errors
/// No database, unknown runs or experiment, or a file that cannot be written (named).
pub fn execute(args: ReportArgs) -> Result<()> {
    // Scoring the rubric's skill invocations caches them in the store: a read-only store is
    // reported from a private copy, which takes them.
    let reading = crate::store::readonly::private_copy(&args.db.db)?;
    if let Some(note) = reading.access.note() {
        crate::errln!("{}", crate::sanitize::text(&note));
    }
    let conn: &Connection = &reading;
    let selection = select(conn, &args)?;
    let scoring = Scoring {
        ci: CiMethod {
            resamples: args.resamples,
            seed: args.seed,
            ..CiMethod::default()
        },
        success: SuccessRule::new(args.pass_threshold).map_err(|e| eyre!(e))?,
        effect_pp: args.effect,
        as_of: Some(chrono::Utc::now()),
    };
    let name = sanitize_slug(&match &selection {
        Selection::Experiment(e) => e.clone(),
        Selection::Runs(r) if r.len() == 1 => r[0].clone(),
        Selection::Runs(r) => format!("{}-and-{}-more", r[0], r.len() - 1),
    });
    let out = match &args.out {
        Some(o) => o.clone(),
        None => default_out(&args.db.db, &name),
    };
    let formats: Vec<Format> = if args.format.is_empty() {
        Format::DEFAULT.to_vec()
    } else {
        args.format.clone()
    };
    if let Some(id) = &args.agentbeats_id
        && !report::leaderboard::is_agentbeats_id(id)
    {
        return Err(eyre!(
            "--agentbeats-id {id:?} is not an AgentBeats agent id (a UUID whose variant digit is 8, 9, a or b)"
        ));
    }
    if formats.iter().any(|f| *f != Format::Leaderboard) {
        full_report(conn, &args, &selection, &scoring, &out, &formats)?;
    }
    if formats.contains(&Format::Leaderboard) {
        let (path, board) = report::leaderboard::write(
            conn,
            &selection,
            args.agentbeats_id.as_deref(),
            &crate::skillsbench::Catalog::shipped(),
            &out,
        )?;
        let rows: Vec<&report::leaderboard::Row> =
            board.results.iter().flat_map(|s| &s.results).collect();
        let ineligible = rows.iter().filter(|r| !r.score_eligible).count();
        println!(
            "wrote {} ({} rows in {} shard(s); {}; participant {}{})",
            path.display(),
            rows.len(),
            board.results.len(),
            match ineligible {
                0 => "every row eligible for a score".to_string(),
                n => format!(
                    "{} not eligible for a score: an infrastructure fault ended them, not a failure of the agent",
                    crate::format::count(n, "row", "rows")
                ),
            },
            board.participants.agent,
            if args.agentbeats_id.is_none() {
                ", derived: pass --agentbeats-id with the agent's registered id to submit"
            } else {
                ""
            }
        );
    }
    Ok(())
}

/// The Markdown, JSON and CSV report of `selection` in `out`, and its summary on stdout.
fn full_report(
    conn: &Connection,
    args: &ReportArgs,
    selection: &Selection,
    scoring: &Scoring,
    out: &std::path::Path,
    formats: &[Format],
) -> Result<()> {
    let t0 = std::time::Instant::now();
    let report = report::build(conn, selection, scoring)
        .wrap_err_with(|| format!("analysing {}", args.db.db.display()))?;
    let analysed = t0.elapsed();
    let written = report::write(&report, out, formats)?;
    let r = &report.results;
    if let Some(i) = &r.interim {
        println!("{}", crate::sanitize::text(&i.describe()));
    }
    println!(
        "{} · {} · {} · {} — analysed in {:.2}s, written in {:.2}s",
        match &r.experiment {
            Some(e) => format!("experiment {e}"),
            None => crate::format::count(r.runs.len(), "run", "runs"),
        },
        crate::format::count(r.tasks.len(), "task", "tasks"),
        crate::format::count(r.conditions.len(), "condition", "conditions"),
        crate::format::count(
            report.skills.invocations,
            "skill invocation",
            "skill invocations"
        ),
        analysed.as_secs_f64(),
        (t0.elapsed() - analysed).as_secs_f64()
    );
    println!("{}", super::shared::table::conditions_table(r));
    if !r.comparisons.is_empty() {
        println!("{}", super::shared::table::comparisons_table(r));
    }
    for n in r.notes.iter().skip(usize::from(r.interim.is_some())) {
        println!("  note: {}", crate::sanitize::text(n));
    }
    println!(
        "wrote {} to {}",
        crate::format::count(written.files.len(), "file", "files"),
        out.display()
    );
    for f in &written.files {
        if f.extension().is_some_and(|e| e == "md") {
            println!("  {}", f.display());
        }
    }
    Ok(())
}

/// `reports/<name>` beside the database — or, when that folder cannot be written (an archive on
/// a read-only mount), `reports/<name>` in the current folder, said on stderr.
fn default_out(db: &std::path::Path, name: &str) -> std::path::PathBuf {
    let beside = super::beside(db, "reports");
    let existing = beside
        .ancestors()
        .find(|a| a.exists())
        .map(std::path::Path::to_path_buf)
        .unwrap_or_else(|| std::path::PathBuf::from("."));
    match crate::store::readonly::why_read_only(&existing) {
        None => beside.join(name),
        Some(why) => {
            let here = std::path::PathBuf::from("reports").join(name);
            crate::errln!(
                "note: the report goes to {} ({why}; --out chooses another folder)",
                here.display()
            );
            here
        }
    }
}

/// What to report: `--experiment`, the named runs (shell-style patterns allowed), or — with
/// neither — the newest run, or its experiment when it is one of an experiment's rounds.
fn select(conn: &Connection, args: &ReportArgs) -> Result<Selection> {
    if let Some(e) = &args.experiment {
        if !args.runs.is_empty() {
            return Err(eyre!("give runs or --experiment, not both"));
        }
        return Ok(Selection::Experiment(e.clone()));
    }
    let all = queries::list_runs(conn)?;
    if args.runs.is_empty() {
        let newest = super::find_run(conn, None)?;
        for e in lq::list_experiments(conn)? {
            if e.round1_run == newest.name || e.round2_run == newest.name {
                return Ok(Selection::Experiment(e.name));
            }
        }
        return Ok(Selection::Runs(vec![newest.name.clone()]));
    }
    let mut names = Vec::new();
    for pattern in &args.runs {
        let p =
            glob::Pattern::new(pattern).wrap_err_with(|| format!("bad run pattern {pattern:?}"))?;
        // Oldest first, so conditions appear in the order the runs were made.
        let hits: Vec<String> = all
            .iter()
            .rev()
            .filter(|r| r.name == *pattern || p.matches(&r.name))
            .map(|r| r.name.clone())
            .collect();
        if hits.is_empty() {
            return Err(super::unknown_run(conn, pattern));
        }
        for h in hits {
            if !names.contains(&h) {
                names.push(h);
            }
        }
    }
    Ok(Selection::Runs(names))
}
