//! Results over part of an experiment's tasks (each side of a held-out split, each side of "saw a
//! skill learned from the task itself"), and which skills each condition's trials could see and
//! used ([`crate::analysis::exposure`]).

use std::collections::BTreeSet;

use rusqlite::Connection;

use super::{Loaded, Results, Scoring, Subset, SubsetCondition, analyze_tasks, measured};
use crate::analysis::exposure::{SPLIT_SCOPES, Scored, compute};
use crate::store::StoreError;

/// Adds which skills each condition's trials could see and used ([`compute`]); for an
/// experiment whose tasks fall on both sides of "saw a skill learned from the task itself", the
/// hypotheses answered over each side.
///
/// # Errors
/// SQL errors.
pub(super) fn attach_exposure(
    conn: &Connection,
    loaded: &Loaded,
    scoring: &Scoring,
    results: &mut Results,
) -> Result<(), StoreError> {
    let scored: Vec<Scored<'_>> = results
        .conditions
        .iter()
        .map(|c| Scored {
            label: &c.label,
            run: &c.run,
            condition: &c.condition,
            done: c.done,
        })
        .collect();
    let compared: Vec<(&str, &str, &str)> = results
        .comparisons
        .iter()
        .map(|c| (c.name.as_str(), c.with.as_str(), c.without.as_str()))
        .collect();
    let tasks: Vec<String> = results.tasks.iter().map(|t| t.id.clone()).collect();
    let experiment = loaded.experiment.is_some();
    let mut x = compute(conn, &tasks, &scored, &compared, experiment)?;
    if let (Some(split), Some(h)) = (&mut x.split, &results.held_out) {
        let side = |name: &str| h.subsets.iter().find(|s| s.name == name).map(|s| &s.tasks);
        split.same_as_split = side("same-task") == Some(&split.same_task)
            && side("held-out") == Some(&split.held_out);
    }
    if let Some(split) = x.split.as_ref().filter(|s| !s.same_as_split) {
        for (scope, ids) in SPLIT_SCOPES.iter().zip([&split.same_task, &split.held_out]) {
            let ids = ids.iter().cloned().collect();
            if let Some(sub) = subset(loaded, scoring, scope, ids) {
                results.hypotheses.extend(sub.hypotheses);
            }
        }
    }
    results.exposure = x;
    Ok(())
}

/// The results over the tasks `ids` (none when empty), named `name`: each condition's pass rate,
/// the comparisons, overall pass@2-adaptive and the hypotheses over them — from the tally
/// `loaded` already holds, without reading the trials again.
pub(super) fn subset(
    loaded: &Loaded,
    scoring: &Scoring,
    name: &str,
    ids: BTreeSet<String>,
) -> Option<Subset> {
    if ids.is_empty() {
        return None;
    }
    let r = analyze_tasks(loaded, scoring, Some(&ids));
    Some(Subset {
        name: name.to_string(),
        tasks: ids.into_iter().collect(),
        hypotheses: crate::analysis::hypotheses::answer(
            name,
            &measured(&r.conditions),
            &scoring.ci,
            scoring.effect_pp,
        ),
        conditions: r
            .conditions
            .iter()
            .map(|c| SubsetCondition {
                label: c.label.clone(),
                pass_rate: c.pass_rate,
                ci: c.ci,
                ci_undefined: c.ci_undefined.clone(),
                se: c.se,
                n_tasks: c.n_tasks,
            })
            .collect(),
        comparisons: r.comparisons,
        adaptive: r
            .adaptive
            .into_iter()
            .filter(|a| a.scope == "overall")
            .collect(),
    })
}
