//! skillscope's own job folders: which attempt of which trial a trial folder holds.
//!
//! skillscope keeps every attempt of a trial in its job folder — a retried trial leaves the
//! folder of each earlier attempt beside the latest, for the audit — where Harbor keeps one
//! folder per trial. Imported as they are, a retried trial would count once per attempt. A
//! folder skillscope wrote is known by its names: the trial's id is
//! [`stable_uuid`]`("<trials_dir>/<trial_name>")` and its name is
//! [`trial_name`]`(task, run, condition, trial index, attempt)` (`harbor/jobdir.rs`), with the
//! run named by the job folder (`<run>__<condition slug>`) and the condition's key in the trial's
//! `config.environment.kwargs.condition`. From these the trial index and attempt are found, and
//! the import keys of the trial's other attempts, so the import records one trial whose latest
//! attempt counts and whose earlier ones are superseded — whichever folder it reads first, in
//! this import or an earlier one.

use crate::harbor::jobdir::{stable_uuid, trial_name};

/// Attempts looked for per trial: a trial retried more often is imported as separate trials
/// past this many (never fewer trials than folders: only what is found is merged).
pub const MAX_ATTEMPTS: u32 = 64;

/// Where a trial folder of skillscope's own sits among its trial's attempts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The trial index skillscope ran it as.
    pub trial_index: u32,
    /// Its attempt (1-based).
    pub attempt: u32,
    /// The import keys of the trial's other attempts (1..=[`MAX_ATTEMPTS`]), with their attempt.
    pub siblings: Vec<(u32, String)>,
}

/// What a trial's `result.json` says that tells a folder skillscope wrote.
#[derive(Debug, Clone, Copy)]
pub struct Written<'a> {
    /// The trial's `id`.
    pub id: &'a str,
    /// `config.trials_dir`: the job folder as skillscope named it when it wrote the trial.
    pub trials_dir: &'a str,
    /// `config.environment.kwargs.condition`: the condition's key.
    pub condition: &'a str,
    /// `task_name`.
    pub task: &'a str,
    /// `trial_name`.
    pub trial_name: &'a str,
}

/// The trial index and attempt of a trial folder skillscope wrote, and its siblings' keys;
/// `None` for any other folder (Harbor's own, or one whose names do not agree). `n_trials` is
/// the job's `n_attempts` when known: trial indices 0..=max(`n_trials`, 4) are tried.
pub fn origin_of(w: Written<'_>, n_trials: Option<u32>) -> Option<Origin> {
    if w.id != stable_uuid(&format!("{}/{}", w.trials_dir, w.trial_name)) {
        return None;
    }
    let job = std::path::Path::new(w.trials_dir.trim_end_matches('/'))
        .file_name()?
        .to_str()?;
    let (run, _slug) = job.rsplit_once("__")?;
    let top = n_trials.unwrap_or(0).clamp(4, 1_000);
    let (trial_index, attempt) = (0..=top).find_map(|i| {
        (1..=MAX_ATTEMPTS)
            .find(|a| trial_name(w.task, run, w.condition, i, *a) == w.trial_name)
            .map(|a| (i, a))
    })?;
    let siblings = (1..=MAX_ATTEMPTS)
        .filter(|a| *a != attempt)
        .map(|a| {
            let name = trial_name(w.task, run, w.condition, trial_index, a);
            (a, stable_uuid(&format!("{}/{name}", w.trials_dir)))
        })
        .collect();
    Some(Origin {
        trial_index,
        attempt,
        siblings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written_by_skillscope(trials_dir: &str, index: u32, attempt: u32) -> (String, String) {
        let run = "r1-oracle-curated-x2";
        let name = trial_name("task-a", run, "curated", index, attempt);
        let id = stable_uuid(&format!("{trials_dir}/{name}"));
        (id, name)
    }

    #[test]
    fn a_skillscope_folder_names_its_trial_and_attempt() {
        let dir = "jobs/r1-oracle-curated-x2__curated";
        let (id, name) = written_by_skillscope(dir, 2, 3);
        let w = Written {
            id: &id,
            trials_dir: dir,
            condition: "curated",
            task: "task-a",
            trial_name: &name,
        };
        let o = origin_of(w, Some(2)).expect("skillscope's folder");
        assert_eq!((o.trial_index, o.attempt), (2, 3));
        assert_eq!(o.siblings.len(), MAX_ATTEMPTS as usize - 1);
        let (first, _) = written_by_skillscope(dir, 2, 1);
        assert!(o.siblings.contains(&(1, first)));
        assert!(!o.siblings.iter().any(|(a, _)| *a == 3));
    }

    /// Harbor's own folders (a random id and suffix), and a folder whose id was not derived from
    /// its names, are not skillscope's: nothing is merged.
    #[test]
    fn other_folders_have_no_origin() {
        let dir = "jobs/r1-oracle-curated-x2__curated";
        let (_, name) = written_by_skillscope(dir, 1, 1);
        let w = Written {
            id: "0f6c1a52-6f3c-4d55-9d0e-2c1f4a1f7c11",
            trials_dir: dir,
            condition: "curated",
            task: "task-a",
            trial_name: &name,
        };
        assert_eq!(origin_of(w, Some(1)), None);
        let id = stable_uuid(&format!("{dir}/task-a__Xy7Zq2w"));
        let w = Written {
            id: &id,
            trial_name: "task-a__Xy7Zq2w",
            ..w
        };
        assert_eq!(origin_of(w, Some(1)), None);
        // The right names under another condition key: no match.
        let (id, name) = written_by_skillscope(dir, 1, 2);
        let w = Written {
            id: &id,
            trials_dir: dir,
            condition: "no-skills",
            task: "task-a",
            trial_name: &name,
        };
        assert_eq!(origin_of(w, None), None);
    }
}
