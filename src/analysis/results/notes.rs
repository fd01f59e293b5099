//! What a reader must not miss: the runs' agent settings, infrastructure failures that move Δ,
//! trials that have not run, comparisons over fewer than all tasks, and whether the results are
//! interim.

use serde::Serialize;

use super::tally::RunFacts;
use super::{Comparison, ConditionResult, FailureMode, RunInfo};
use crate::domain::RunRow;

/// Why and how far results are interim.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interim {
    /// Runs neither `finished` nor `imported`, with their status (`running`, `stopped`).
    pub runs: Vec<(String, String)>,
    /// Trials with a verdict (pass, fail, timeouts), over every condition.
    pub judged: usize,
    /// Trials finished (verdict or not).
    pub done: usize,
    /// Trials planned.
    pub planned: usize,
}

impl Interim {
    /// One sentence: `interim: run r1 is running; 12 of 40 planned trials judged (14 finished)`.
    pub fn describe(&self) -> String {
        let runs = self
            .runs
            .iter()
            .map(|(r, s)| format!("run {r} is {s}"))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "interim results{}{} {} of {} planned trials judged ({} finished). Method D counts every unfinished trial 0; the pass rate over trials with a verdict leaves them out.",
            if runs.is_empty() { "" } else { ": " },
            if runs.is_empty() {
                String::new()
            } else {
                format!("{runs};")
            },
            self.judged,
            self.planned,
            self.done
        )
    }

    /// The interim state of `conditions` of `runs`: `None` when every planned trial finished and
    /// no run is still running.
    pub(super) fn of(
        runs: &[RunRow],
        conditions: &[ConditionResult],
        as_of: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Option<Interim> {
        // A running run whose engine is gone (as of `as_of`) is stale, as `status` says, never
        // "running".
        let here = crate::store::owner::host_name();
        let unfinished: Vec<(String, String)> = runs
            .iter()
            .filter(|r| r.status != "finished" && r.status != "imported")
            .map(|r| {
                let liveness = as_of.map(|now| crate::store::Liveness::of(r, now, &here));
                let status = match liveness {
                    Some(crate::store::Liveness::Stale { since, .. }) => format!(
                        "stale (its engine is gone; last seen {})",
                        since.as_deref().unwrap_or("never")
                    ),
                    _ => r.status.clone(),
                };
                (r.name.clone(), status)
            })
            .collect();
        let planned: usize = conditions.iter().map(|c| c.planned).sum();
        let done: usize = conditions.iter().map(|c| c.done).sum();
        let judged: usize = conditions
            .iter()
            .map(|c| c.per_task_judged.iter().sum::<usize>())
            .sum();
        // Complete when every planned trial finished, however its run stands (a run kept open
        // for retries is not interim), and when every run finished (the operator cancelled the
        // rest: they count 0, listed as not run).
        let all_finished = runs.iter().all(|r| r.status == "finished");
        (done < planned && !all_finished).then_some(Interim {
            runs: unfinished,
            judged,
            done,
            planned,
        })
    }
}

/// Report notes that several conditions or runs share, kept in first-seen order: each message
/// with the conditions or runs it is about.
#[derive(Default)]
struct GroupedNotes {
    notes: Vec<(String, Vec<String>, bool)>,
}

impl GroupedNotes {
    /// Adds condition `label` to `message`.
    fn condition(&mut self, message: &str, label: &str) {
        self.add(message, label, false);
    }

    /// Adds run `name` to `message`.
    fn run(&mut self, message: &str, name: &str) {
        self.add(message, name, true);
    }

    fn add(&mut self, message: &str, subject: &str, is_run: bool) {
        match self.notes.iter_mut().find(|(m, _, _)| m == message) {
            Some((_, subjects, _)) => subjects.push(subject.to_string()),
            None => self
                .notes
                .push((message.to_string(), vec![subject.to_string()], is_run)),
        }
    }

    /// One line per message: `subject: message` for one, `every condition (36): message` when all
    /// share it, else `N runs (a, b, c, d, e, f and 3 more): message`.
    fn lines(self, n_conditions: usize, n_runs: usize) -> Vec<String> {
        self.notes
            .into_iter()
            .map(|(message, subjects, is_run)| {
                let (noun, all) = if is_run {
                    ("run", n_runs)
                } else {
                    ("condition", n_conditions)
                };
                let who = match subjects.len() {
                    1 => subjects[0].clone(),
                    n if n == all => format!("every {noun} ({n})"),
                    n => {
                        let shown = subjects
                            .iter()
                            .take(6)
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ");
                        if n > 6 {
                            format!("{n} {noun}s ({shown} and {} more)", n - 6)
                        } else {
                            format!("{n} {noun}s ({shown})")
                        }
                    }
                };
                format!("{who}: {message}")
            })
            .collect()
    }
}

/// A list of task ids for a sentence: all of them up to 8, else the first 8 and how many more.
fn task_list(ids: &[String]) -> String {
    if ids.len() <= 8 {
        ids.join(", ")
    } else {
        format!("{} and {} more", ids[..8].join(", "), ids.len() - 8)
    }
}

/// The notes about `conditions` and `comparisons`, and each run's [`RunInfo`] with the notes
/// about its agent settings and environment marks (`facts[i]` of run `i`, from the tally).
pub(super) fn notes_and_runs(
    runs: &[RunRow],
    facts: &[RunFacts],
    conditions: &[ConditionResult],
    comparisons: &[Comparison],
) -> (Vec<String>, Vec<RunInfo>) {
    let find = |l: &str| conditions.iter().find(|c| c.label == l);
    let mut notes = Vec::new();
    for c in comparisons {
        if c.is_partial() {
            let mut parts = Vec::new();
            if !c.not_run_with.is_empty() {
                parts.push(format!(
                    "not run under {}: {}",
                    c.with,
                    task_list(&c.not_run_with)
                ));
            }
            if !c.not_run_without.is_empty() {
                parts.push(format!(
                    "not run under {}: {}",
                    c.without,
                    task_list(&c.not_run_without)
                ));
            }
            notes.push(format!(
                "{}: compared over the {} of {} task(s) both conditions ran; the others are not run on one side and left out, never counted 0{}.",
                c.name,
                c.n_tasks,
                c.n_tasks_total,
                if parts.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", parts.join("; "))
                }
            ));
        }
        let (Some(w), Some(wo)) = (find(&c.with), find(&c.without)) else {
            continue;
        };
        let (iw, iwo) = (w.infrastructure(), wo.infrastructure());
        if let (Some(j), Some(d)) = (c.delta_pp_judged, c.delta_pp)
            && (iw + iwo > 0)
            && (j - d).abs() >= 1.0
        {
            notes.push(format!(
                "{}: {} of {} trials ({}) and {} of {} ({}) ended without a verdict (no reward, build or runtime error). Method D counts them 0: Δ = {:+.1} pp; over trials with a verdict Δ = {:+.1} pp.",
                c.name, iw, w.planned, w.label, iwo, wo.planned, wo.label, d, j
            ));
        }
    }
    // Notes that many conditions or runs share are grouped: one line names them all.
    let mut grouped = GroupedNotes::default();
    for c in conditions {
        if c.aggregated {
            grouped.condition(
                "trials reconstructed from published aggregates (mean reward per task is exact; individual trials are not).",
                &c.label,
            );
        }
        let not_run = c.failures.get(&FailureMode::NotRun).copied().unwrap_or(0);
        if not_run > 0 {
            notes.push(format!(
                "{}: {not_run} of {} planned trials have not run (counted 0).",
                c.label, c.planned
            ));
        }
    }

    // What decided the agents' behaviour, and what could not be pinned.
    let mut run_infos = Vec::new();
    for (r, facts) in runs.iter().zip(facts) {
        let agent_settings: Vec<serde_json::Value> = facts
            .agent_settings
            .iter()
            .filter_map(|t| serde_json::from_str(t).ok())
            .collect();
        let mut unpinned: Vec<String> = agent_settings
            .iter()
            .filter_map(|v| v.get("unpinned").and_then(|u| u.as_array()).cloned())
            .flatten()
            .filter_map(|u| u.as_str().map(String::from))
            .collect();
        unpinned.sort();
        unpinned.dedup();
        if agent_settings.is_empty() {
            grouped.run(
                "trials recorded no agent settings (imported, or run before they were recorded): whether sampling was pinned is unknown.",
                &r.name,
            );
        } else if !unpinned.is_empty() {
            grouped.run(
                &format!(
                    "{} could not be pinned for agent {} (the harness accepts no such setting), so these trials are not reproducible \"with temperature 0\".",
                    unpinned.join(", "),
                    r.agent
                ),
                &r.name,
            );
        }
        notes.extend(environment_notes(&r.name, &facts.environment));
        if let Some(pin) = &r.task_set {
            notes.push(task_set_note(&r.name, pin));
        }
        run_infos.push(RunInfo {
            name: r.name.clone(),
            agent: r.agent.clone(),
            model: r.model.clone(),
            source: r.source.clone(),
            n_trials: r.n_trials,
            status: r.status.clone(),
            agent_settings,
            unpinned,
            settings: r.settings.clone(),
            task_set: r.task_set.clone(),
        });
    }
    notes.extend(grouped.lines(conditions.len(), runs.len()));
    (notes, run_infos)
}

/// The task set a run was pinned to, and what of it differed when it began: `r1: tasks pinned
/// to task set skillsbench@1.1 (registry.json, benchflow digests), all 87 matched.`
fn task_set_note(run: &str, pin: &crate::domain::TaskSetPin) -> String {
    let matched = pin.n_tasks.saturating_sub(pin.drift.len());
    let drift = if pin.drift.is_empty() {
        format!("all {} matched", pin.n_tasks)
    } else {
        format!(
            "{matched} of {} matched; run anyway with --allow-drift: {}",
            pin.n_tasks,
            crate::domain::describe_drift(&pin.drift)
        )
    };
    format!(
        "{run}: tasks pinned to task set {} ({}, {} digests), {drift}.",
        pin.label(),
        pin.file,
        pin.algorithm
    )
}

/// Notes on a run's trials whose environment was not what their task asked (issue 27): needed
/// values left empty under `--allow-missing-env` (those trials did not test the agent), and CPU
/// or memory requests cut to the host's (`clamped`: a test that measures speed may fail for the
/// machine's size).
fn environment_notes(run: &str, marks: &[crate::store::queries::EnvironmentMark]) -> Vec<String> {
    type Mark = crate::store::queries::EnvironmentMark;
    let tasks = |pick: &dyn Fn(&Mark) -> Option<String>| {
        let mut seen: Vec<String> = Vec::new();
        let mut n = 0;
        for m in marks {
            if let Some(t) = pick(m) {
                n += 1;
                if !seen.contains(&t) {
                    seen.push(t);
                }
            }
        }
        (n, seen)
    };
    let mut out = Vec::new();
    let (n, empty) = tasks(&|m: &Mark| {
        (!m.missing_env.is_empty()).then(|| format!("{} ({})", m.task_id, m.missing_env.join(", ")))
    });
    if n > 0 {
        out.push(format!(
            "{run}: {n} trial(s) ran with environment values their task needs left empty (--allow-missing-env), marked `missing_env`: {}. They did not test the agent; compare without those tasks.",
            empty.join(", ")
        ));
    }
    let (n, cut) = tasks(&|m: &Mark| {
        let c = m.clamped.as_ref()?;
        let part = |k: &str, unit: &str| {
            let r = c.pointer(&format!("/{k}/requested"))?.as_f64()?;
            let a = c.pointer(&format!("/{k}/applied"))?.as_f64()?;
            Some(format!("{r}→{a} {unit}"))
        };
        let parts: Vec<String> = [part("cpus", "CPUs"), part("memory_mb", "MiB")]
            .into_iter()
            .flatten()
            .collect();
        Some(format!("{} ({})", m.task_id, parts.join(", ")))
    });
    if n > 0 {
        out.push(format!(
            "{run}: {n} trial(s) ran clamped — their task asks more CPUs or memory than the Docker host has: {}. A test that measures speed can fail for the machine's size.",
            cut.join(", ")
        ));
    }
    out
}
