//! `skillscope status`: runs, per-condition counts by outcome and Method D pass rates.

use color_eyre::eyre::Result;

use super::shared::status::{RunStatus, engine_line, run_status};
use super::shared::table::conditions_table;
use crate::cli::StatusArgs;
use crate::store::learning as lq;
use crate::store::{Store, queries};

/// Runs `skillscope status`.
///
/// # Errors
/// A missing database or run.
pub fn execute(args: StatusArgs) -> Result<()> {
    let reading = Store::open_for_reading(&args.db.db)?;
    let conn: &rusqlite::Connection = &reading;
    let runs = match &args.run {
        Some(name) => vec![super::find_run(conn, Some(name))?],
        None => queries::list_runs(conn)?,
    };
    let statuses: Vec<RunStatus> = runs
        .into_iter()
        .map(|r| run_status(conn, r))
        .collect::<Result<_>>()?;
    if args.json {
        // Each run with its comparisons as the table shows them (Δ, g, their CIs, A/A noise,
        // each `null` with its reason when undefined).
        let runs: Vec<serde_json::Value> = statuses
            .iter()
            .map(|s| {
                let mut v = serde_json::to_value(s)?;
                let results = super::shared::table::run_results(conn, &s.run.name)?;
                v["comparisons"] = serde_json::to_value(&results.comparisons)?;
                Ok(v)
            })
            .collect::<Result<_>>()?;
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "runs": runs,
                "store": store_json(&reading.access),
            }))?
        );
        return Ok(());
    }
    if let Some(note) = reading.access.note() {
        crate::sayln!("{}", crate::sanitize::text(&note));
    }
    if statuses.is_empty() {
        crate::sayln!("no runs in {}", args.db.db.display());
    }
    let clean = crate::sanitize::one_line;
    for e in lq::list_experiments(conn)? {
        crate::sayln!(
            "experiment {} — phase {} (runs {}, {}){}",
            clean(&e.name),
            clean(&e.phase),
            clean(&e.round1_run),
            clean(&e.round2_run),
            e.note
                .as_deref()
                .map(|n| format!(": {}", crate::sanitize::text(n)))
                .unwrap_or_default()
        );
    }
    // The tables' notes, once for all runs.
    let mut notes: Vec<String> = Vec::new();
    for s in &statuses {
        print_run(conn, s, &mut notes)?;
    }
    super::shared::table::print_notes(&notes);
    Ok(())
}

/// Prints one run's status; adds its tables' notes to `notes` (printed once for all runs).
fn print_run(conn: &rusqlite::Connection, s: &RunStatus, notes: &mut Vec<String>) -> Result<()> {
    let clean = crate::sanitize::one_line;
    print_header(s);
    let results = super::shared::table::run_results(conn, &s.run.name)?;
    println!("{}", conditions_table(&results));
    if let Some(rec) = &s.sequential {
        let label = |key: &str| {
            results
                .conditions
                .iter()
                .find(|c| c.condition == key)
                .map_or_else(|| clean(key), |c| c.label.clone())
        };
        for l in crate::report::model::sequential::lines(rec, &label) {
            crate::sayln!("sequential {l}");
        }
    }
    for n in super::shared::table::condition_notes(&results) {
        if !notes.contains(&n) {
            notes.push(n);
        }
    }
    if let Some(line) = money_line(s) {
        crate::sayln!("{line}");
    }
    for f in &s.skill_flags {
        crate::sayln!("SKILLS WHERE NONE BELONG — {}", crate::sanitize::text(f));
    }
    if !s.liveness.is_stale() {
        for (trial, phase, since) in &s.running {
            crate::sayln!(
                "running now: {} — {phase}{}",
                crate::sanitize::one_line(trial),
                since
                    .as_deref()
                    .map(|t| format!(" since {t}"))
                    .unwrap_or_default()
            );
        }
    }
    for line in flag_lines(s) {
        crate::sayln!("{line}");
    }
    for (trial, since) in &s.stalled {
        crate::sayln!(
            "stalled since {}: {} (no agent output; it keeps running)",
            clean(since),
            clean(trial)
        );
    }
    if s.pending_commands > 0 {
        crate::sayln!("{} operator command(s) pending", s.pending_commands);
    }
    for line in space_lines(s) {
        crate::sayln!("{line}");
    }
    println!();
    Ok(())
}

/// Prints the run's first lines: its name, engine, agent and design; its pinned task set; the
/// wait for Docker; its hosts while it runs.
fn print_header(s: &RunStatus) {
    let clean = crate::sanitize::one_line;
    let r = &s.run;
    // An imported run's name, agent, model and times come from files: untrusted text.
    // What was planned: tasks × trials when every task plans the same, else the count.
    let design = if s.uniform {
        format!(
            "{} × {}",
            crate::format::count(s.n_tasks, "task", "tasks"),
            crate::format::count(r.n_trials as usize, "trial", "trials")
        )
    } else {
        format!(
            "{} planned over {}",
            crate::format::count(s.planned, "trial", "trials"),
            crate::format::count(s.n_tasks, "task", "tasks")
        )
    };
    crate::sayln!(
        "run {} — {} · agent {}{} · {design} · created {}",
        clean(&r.name),
        engine_line(r, &s.liveness),
        clean(&r.agent),
        r.model
            .as_deref()
            .map(|m| format!(" ({})", clean(m)))
            .unwrap_or_default(),
        clean(&r.created_at)
    );
    if let Some(pin) = &r.task_set {
        crate::sayln!(
            "task set {} ({}, {} digests): {} of {} pinned task(s) matched{}",
            crate::sanitize::text(&pin.label()),
            crate::sanitize::text(&pin.file),
            pin.algorithm,
            pin.n_tasks.saturating_sub(pin.drift.len()),
            pin.n_tasks,
            if pin.drift.is_empty() {
                String::new()
            } else {
                format!(
                    "; run with --allow-drift: {}",
                    crate::sanitize::text(&crate::domain::describe_drift(&pin.drift))
                )
            }
        );
    }
    if let (Some(since), false) = (&r.waiting_since, s.liveness.is_stale()) {
        crate::sayln!(
            "waiting for Docker since {since}: {}",
            crate::sanitize::text(r.waiting_reason.as_deref().unwrap_or("no host answers"))
        );
    }
    if r.status == "running" && !s.liveness.is_stale() {
        for h in s
            .hosts
            .iter()
            .filter(|h| h.state != "up" || s.hosts.len() > 1)
        {
            crate::sayln!(
                "docker host {} — {} since {}{} · {}/{} slots busy",
                clean(&h.host),
                clean(&h.state),
                clean(&h.since),
                h.last_error
                    .as_deref()
                    .map(|e| format!(" ({})", crate::sanitize::text(e)))
                    .unwrap_or_default(),
                h.running,
                h.slots
            );
        }
    }
}

/// The run's cost, budget and provider limit on one line, when any is known.
fn money_line(s: &RunStatus) -> Option<String> {
    let r = &s.run;
    let mut money = Vec::new();
    // A cost no trial reported is unknown — never $0 — and the trials without one are counted.
    let unpriced = match s.unpriced {
        0 => String::new(),
        n => format!(
            " ({} without a cost, not counted)",
            crate::format::count(n, "trial", "trials")
        ),
    };
    match &s.cost {
        Some(c) => {
            money.push(format!("cost ${:.2} so far{unpriced}", c.spent));
            if c.total > c.spent + 1e-9 {
                money.push(format!("projected ${:.2} ± {:.2}", c.total, c.plus_minus));
            }
        }
        None if s.unpriced > 0 => money.push(format!(
            "cost unknown ({} without a cost)",
            crate::format::count(s.unpriced, "trial", "trials")
        )),
        None => {}
    }
    if let Some(max) = r.max_cost_usd {
        money.push(format!("budget ${max:.2}"));
    }
    if let Some(limit) = r.provider_limit.filter(|_| r.status == "running") {
        money.push(format!("provider limit {limit} concurrent sessions"));
    }
    (!money.is_empty()).then(|| money.join(" · "))
}

/// The run's flagged trials: tampered, and verdicts the evidence contradicts.
fn flag_lines(s: &RunStatus) -> Vec<String> {
    let mut out = Vec::new();
    for (flags, what) in [
        (
            &s.tampered,
            "TAMPERED — {c} {t}: judged a failure; its agent changed {why}",
        ),
        (
            &s.contradicted,
            "VERDICT CONTRADICTED — {c} {t}: not a pass; {why}",
        ),
    ] {
        for c in &flags.conditions {
            for t in &c.trials {
                let why = crate::domain::TamperFlag {
                    kind: flags.kind,
                    flagged: t.flagged,
                    paths: t.paths.clone(),
                }
                .describe();
                out.push(
                    what.replace("{c}", &crate::sanitize::text(&c.condition))
                        .replace("{t}", &crate::sanitize::text(&t.trial))
                        .replace("{why}", &crate::sanitize::text(&why)),
                );
            }
        }
    }
    out
}

/// The run's learning spaces, a line each (and one more while a space waits for Acontext).
fn space_lines(s: &RunStatus) -> Vec<String> {
    let clean = crate::sanitize::one_line;
    let mut out = Vec::new();
    for sp in &s.spaces {
        let mut steps = sp.by_step.clone();
        steps.sort();
        let steps: Vec<String> = steps.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let mut flags = Vec::new();
        if sp.mislabeled > 0 {
            flags.push(format!("{} MISLABELED", sp.mislabeled));
        }
        if sp.rejected > 0 {
            flags.push(format!("{} rejected", sp.rejected));
        }
        if sp.errors > 0 {
            flags.push(format!("{} with errors", sp.errors));
        }
        if let Some(e) = &sp.export {
            flags.push(format!("exported to {}", e.dir));
        }
        out.push(format!(
            "learning space {} ({}, mode {}) — {} · {}{}",
            clean(&sp.space.label),
            clean(&crate::skillsbench::condition::condition_label(
                &sp.space.condition
            )),
            clean(
                sp.space
                    .status_mode
                    .as_deref()
                    .unwrap_or("not detected yet")
            ),
            clean(&sp.space.state),
            clean(&trials_final(sp.finished, sp.total, &steps)),
            clean(&flags.iter().map(|f| format!(" · {f}")).collect::<String>())
        ));
        if let (Some(since), Some(next)) = (&sp.space.waiting_since, &sp.space.next_retry_at) {
            out.push(format!(
                "  waiting for Acontext since {since}: {}; next retry at {next}",
                crate::sanitize::text(sp.space.waiting_reason.as_deref().unwrap_or("no answer"))
            ));
        }
    }
    out
}

/// How the store was opened, for `status --json`: `{"read_only": false}` or `{"read_only": true,
/// "why": …, "how": …}`.
fn store_json(access: &crate::store::Access) -> serde_json::Value {
    match access {
        crate::store::Access::Writable => serde_json::json!({ "read_only": false }),
        crate::store::Access::ReadOnly { why, how } => {
            serde_json::json!({ "read_only": true, "why": why, "how": how })
        }
    }
}

/// How far a learning space is: `3/12 trials final: session 2 · final 3 · queued 7`, or, before
/// it has a trial to learn from, `no trials to learn from yet` (never a bare `0/0 trials final: `).
fn trials_final(finished: u64, total: u64, steps: &[String]) -> String {
    if total == 0 && steps.is_empty() {
        "no trials to learn from yet".to_string()
    } else if steps.is_empty() {
        format!("{finished}/{total} trials final")
    } else {
        format!("{finished}/{total} trials final: {}", steps.join(" · "))
    }
}

#[cfg(test)]
mod tests {
    use super::trials_final;

    #[test]
    fn a_space_without_trials_says_so() {
        assert_eq!(trials_final(0, 0, &[]), "no trials to learn from yet");
        assert_eq!(
            trials_final(3, 12, &["final 3".into(), "queued 9".into()]),
            "3/12 trials final: final 3 · queued 9"
        );
        assert!(!trials_final(0, 4, &[]).ends_with(": "));
    }
}
