//! Flagged trials, per condition and per kind of flag (`trials.tamper`): **tampered** — the
//! latest attempts whose agent changed what a task's work never touches (the rules are in
//! docs/scoring.md, "Tamper evidence"), with the paths flagged — and **verdict contradicted** —
//! those whose verifier's evidence contradicts their reward, with the reasons. They are already
//! judged failures with reward 0 in every pass rate ([`crate::domain::TAMPER_RULE`],
//! [`crate::domain::CONTRADICTION_RULE`]): this lists them, so a reader can see which trials and
//! why. Shown in the report, `status --json` and the dashboard.

use rusqlite::Connection;
use serde::Serialize;

use crate::domain::{CONTRADICTION_RULE, FlagKind, TAMPER_RULE, TamperFlag, TrialRow};
use crate::store::{StoreError, queries};

/// One flagged trial.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TamperedTrial {
    /// Its Harbor trial name.
    pub trial: String,
    /// Its task.
    pub task: String,
    /// Its index (1-based).
    pub trial_index: u32,
    /// Its recorded outcome (`fail`, or `agent-timeout`).
    pub outcome: Option<String>,
    /// How many changes (or contradictions) were flagged.
    pub flagged: usize,
    /// The first of them, `"<kind> <path>"`, or the contradictions' reasons (untrusted text:
    /// sanitize to draw).
    pub paths: Vec<String>,
}

/// The flagged trials of one condition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TamperedCondition {
    /// Its label in the results (`A`, `no-skills`, …).
    pub label: String,
    /// Its run.
    pub run: String,
    /// Its condition key.
    pub condition: String,
    /// Its flagged trials, by task and trial.
    pub trials: Vec<TamperedTrial>,
}

/// Every condition's trials carrying one kind of flag, and the rule they were scored by.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tampering {
    /// Which flag.
    pub kind: FlagKind,
    /// How a flagged trial is counted ([`TAMPER_RULE`], [`CONTRADICTION_RULE`]).
    pub rule: String,
    /// The conditions with at least one flagged trial.
    pub conditions: Vec<TamperedCondition>,
    /// Runs whose trials were never checked: imported ones (Harbor records no filesystem diff).
    pub unchecked_runs: Vec<String>,
    /// How many of the selected runs were checked (run here).
    pub checked_runs: usize,
}

impl Default for Tampering {
    fn default() -> Self {
        Tampering::of(FlagKind::Tampered)
    }
}

impl Tampering {
    /// No trial flagged `kind` yet, with its rule.
    pub fn of(kind: FlagKind) -> Tampering {
        Tampering {
            kind,
            rule: match kind {
                FlagKind::Tampered => TAMPER_RULE,
                FlagKind::Contradicted => CONTRADICTION_RULE,
            }
            .to_string(),
            conditions: Vec::new(),
            unchecked_runs: Vec::new(),
            checked_runs: 0,
        }
    }

    /// How many trials were flagged in all.
    pub fn total(&self) -> usize {
        self.conditions.iter().map(|c| c.trials.len()).sum()
    }
}

/// The trials among `rows` flagged `kind` (latest attempts).
pub fn of_rows(rows: &[TrialRow], kind: FlagKind) -> Vec<TamperedTrial> {
    rows.iter()
        .filter(|r| !r.superseded)
        .filter_map(|r| {
            let flag = TamperFlag::of_json(r.tamper.as_ref()?).filter(|f| f.kind == kind)?;
            Some(TamperedTrial {
                trial: r.trial_name.clone(),
                task: r.task_id.clone(),
                trial_index: r.trial_index,
                outcome: r.outcome.map(|o| o.as_str().to_string()),
                flagged: flag.flagged,
                paths: flag.paths,
            })
        })
        .collect()
}

/// One condition of the results to look at: its label, run id and name, and condition key.
pub struct Scope<'a> {
    /// Label.
    pub label: &'a str,
    /// Run id.
    pub run_id: i64,
    /// Run name.
    pub run: &'a str,
    /// Condition key.
    pub condition: &'a str,
}

/// The trials flagged `kind` of each condition in `scopes`, in their order (conditions without
/// any are left out); only tasks in `tasks` count when it is given.
///
/// # Errors
/// [`StoreError`] from SQLite.
pub fn compute(
    conn: &Connection,
    scopes: &[Scope<'_>],
    tasks: Option<&std::collections::BTreeSet<String>>,
    kind: FlagKind,
) -> Result<Tampering, StoreError> {
    let mut by_run: std::collections::HashMap<i64, Vec<TrialRow>> = Default::default();
    let mut out = Tampering::of(kind);
    for s in scopes {
        let rows = match by_run.entry(s.run_id) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(queries::tampered_trials(conn, s.run_id)?)
            }
        };
        let rows: Vec<TrialRow> = rows
            .iter()
            .filter(|r| r.condition == s.condition)
            .filter(|r| tasks.is_none_or(|t| t.contains(&r.task_id)))
            .cloned()
            .collect();
        let trials = of_rows(&rows, kind);
        if !trials.is_empty() {
            out.conditions.push(TamperedCondition {
                label: s.label.to_string(),
                run: s.run.to_string(),
                condition: s.condition.to_string(),
                trials,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Outcome;

    #[test]
    fn only_latest_flagged_attempts_are_listed() {
        let flagged = TrialRow {
            trial_name: "t__a".into(),
            task_id: "t".into(),
            trial_index: 1,
            outcome: Some(Outcome::Fail),
            tamper: Some(serde_json::json!({"flagged": 2, "paths": ["C /bin/sh", "A /tests"]})),
            ..Default::default()
        };
        let superseded = TrialRow {
            superseded: true,
            ..flagged.clone()
        };
        let clean = TrialRow {
            tamper: None,
            ..flagged.clone()
        };
        let got = of_rows(&[flagged, superseded, clean], FlagKind::Tampered);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].flagged, 2);
        assert_eq!(got[0].outcome.as_deref(), Some("fail"));
        assert_eq!(got[0].paths, vec!["C /bin/sh", "A /tests"]);
    }
}
