//! The container side of the self-generated conditions ([`crate::skillsbench::selfgen`]): reading the
//! skills an agent wrote out of its container (validated like exports, kept in the trial's
//! `agent/generated-skills/`, recorded in `agent/generated-skills.json`), putting a skill creator
//! where every harness looks for a two-phase run's first session, and installing the generated
//! skills — only those — there for its solving session.

use std::path::Path;
use std::time::Duration;

use super::{RunnerError, Sandbox};
use crate::acontext::export::{ExportError, ExportLimits, import_skills_tar};
use crate::skillsbench::dockerfile::SKILL_DESTINATIONS;
use crate::skillsbench::selfgen::{
    GENERATED_SKILLS_PATH, GeneratedRefusal, GeneratedSkill, GeneratedSkills, SelfGeneration,
    TRIAL_GENERATED_DIR, TRIAL_GENERATED_RECORD,
};

/// Most bytes of generated skills read out of a container (64 MiB); more refuses them all.
pub const MAX_GENERATED_BYTES: u64 = 64 << 20;

/// Longest a helper command of this module may take.
const HELPER_TIMEOUT: Duration = Duration::from_secs(120);

/// The name a skill creator gets where the harnesses look for skills.
pub const SKILL_CREATOR_NAME: &str = "skill-creator";

/// A path as one single-quoted shell word.
pub(crate) fn quoted(path: &str) -> String {
    format!("'{}'", path.replace('\'', r"'\''"))
}

/// Reads the skills the agent wrote (`environment/skills/` under its working directory) out of
/// `container` into `<trial_dir>/agent/generated-skills/`, keeping only those that pass the export
/// checks ([`import_skills_tar`]: frontmatter, paths, entry types, sizes); writes the record to
/// `<trial_dir>/agent/generated-skills.json` and returns it. No folder in the container gives an
/// empty set.
///
/// # Errors
/// [`RunnerError::Backend`] when the container cannot be read (an infrastructure fault);
/// [`RunnerError::Io`] when the trial folder cannot be written.
pub async fn capture(
    container: &Sandbox,
    workdir: &str,
    trial_dir: &Path,
    generation: &SelfGeneration,
) -> Result<GeneratedSkills, RunnerError> {
    let wd = workdir;
    let src = format!("{}/{GENERATED_SKILLS_PATH}", wd.trim_end_matches('/'));
    let (tar, truncated) = match container.download_tar(&src, MAX_GENERATED_BYTES).await {
        Ok(t) => t,
        Err(RunnerError::NotFound { .. }) => (empty_tar(), false),
        Err(e) => return Err(e),
    };
    let out = trial_dir.join(TRIAL_GENERATED_DIR);
    // A folder of that name copied out of the container's /logs/agent is the agent's, not the
    // record: kept beside it under another name.
    if std::fs::symlink_metadata(&out).is_ok() {
        let aside = trial_dir.join(format!("{TRIAL_GENERATED_DIR}.from-container"));
        let _ = std::fs::remove_dir_all(&aside).or_else(|_| std::fs::remove_file(&aside));
        std::fs::rename(&out, &aside).map_err(|e| RunnerError::io(&out, e))?;
    }
    let out2 = out.clone();
    let report = tokio::task::spawn_blocking(move || {
        import_skills_tar(&tar, truncated, &ExportLimits::default(), &out2)
    })
    .await
    .map_err(|e| RunnerError::Task(e.to_string()))?
    .map_err(|e| match e {
        ExportError::Io { path, message } => RunnerError::Io {
            disk_full: message.contains("No space left") || message.contains("quota"),
            path,
            message,
        },
        other => RunnerError::Task(other.to_string()),
    })?;
    let record = GeneratedSkills {
        mode: generation.mode().to_string(),
        dir: TRIAL_GENERATED_DIR.to_string(),
        skills: report
            .skills
            .iter()
            .map(|s| GeneratedSkill {
                name: s.name.clone(),
                dir_name: s.dir_name.clone(),
                description: s.description.clone(),
                content_hash: s.content_hash.clone(),
                n_files: s.files.len(),
                bytes: s.files.iter().map(|f| f.size).sum(),
                problems: s.problems.clone(),
            })
            .collect(),
        refused: report
            .refused
            .iter()
            .map(|r| GeneratedRefusal {
                skill: r.skill.clone(),
                path: r.path.clone(),
                reason: r.reason.clone(),
            })
            .collect(),
        installed: Vec::new(),
        error: None,
    };
    write_record(trial_dir, &record)?;
    Ok(record)
}

/// Writes `record` to `<trial_dir>/agent/generated-skills.json` (replacing an earlier one).
///
/// # Errors
/// [`RunnerError::Io`] naming the file.
pub fn write_record(trial_dir: &Path, record: &GeneratedSkills) -> Result<(), RunnerError> {
    let path = trial_dir.join(TRIAL_GENERATED_RECORD);
    let bytes = serde_json::to_vec_pretty(record).map_err(|e| RunnerError::Task(e.to_string()))?;
    crate::fs::write_fresh(&path, &bytes).map_err(|e| RunnerError::io(&path, e))
}

/// A tar holding only an empty `skills/` folder.
fn empty_tar() -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Directory);
    h.set_size(0);
    h.set_mode(0o755);
    let _ = b.append_data(&mut h, "skills/", std::io::empty());
    b.into_inner().unwrap_or_default()
}

/// Empties every skills folder a harness reads ([`SKILL_DESTINATIONS`]).
async fn clear_destinations(container: &Sandbox) -> Result<(), RunnerError> {
    let dests: Vec<String> = SKILL_DESTINATIONS.iter().map(|d| quoted(d)).collect();
    let (r, out) = container
        .sh_output(&format!("rm -rf {} 2>&1", dests.join(" ")), HELPER_TIMEOUT)
        .await?;
    match r.exit_code {
        Some(0) => Ok(()),
        _ => Err(RunnerError::Task(format!(
            "cannot empty the skills folders: {}",
            out.trim()
        ))),
    }
}

/// Copies host folder `src` to `<dest>/<name>` for every skills folder a harness reads
/// (one upload, then copies inside the container).
async fn put_everywhere(
    container: &Sandbox,
    src: &Path,
    name: Option<&str>,
) -> Result<(), RunnerError> {
    let join = |d: &str| match name {
        Some(n) => format!("{d}/{n}"),
        None => d.to_string(),
    };
    let first = join(SKILL_DESTINATIONS[0]);
    container.upload_dir(src, &first).await?;
    let mut script = String::from("set -e\n");
    for d in &SKILL_DESTINATIONS[1..] {
        let to = join(d);
        let parent = Path::new(&to)
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "/".into());
        script.push_str(&format!(
            "mkdir -p {}\nrm -rf {}\ncp -a {} {}\n",
            quoted(&parent),
            quoted(&to),
            quoted(&first),
            quoted(&to)
        ));
    }
    script.push_str("echo done\n");
    let (r, out) = container
        .sh_output(&format!("({script}) 2>&1"), HELPER_TIMEOUT)
        .await?;
    if r.exit_code != Some(0) {
        return Err(RunnerError::Task(format!(
            "cannot copy skills into place: {}",
            out.trim()
        )));
    }
    Ok(())
}

/// Puts the operator's skill creator at `<dest>/skill-creator` for every skills folder a harness
/// reads, for the first session of a two-phase run.
///
/// # Errors
/// [`RunnerError::Task`] when the folder is missing; Docker errors of the upload.
pub async fn install_skill_creator(
    container: &Sandbox,
    skill_creator: &Path,
) -> Result<(), RunnerError> {
    if !skill_creator.is_dir() {
        return Err(RunnerError::Task(format!(
            "skill creator {} is not a folder",
            skill_creator.display()
        )));
    }
    put_everywhere(container, skill_creator, Some(SKILL_CREATOR_NAME)).await
}

/// Between the two sessions of a two-phase run: removes everything from the skills folders (the
/// skill creator included) and the agent's `environment/skills` from its working directory, then
/// installs the validated generated skills of `<trial_dir>/agent/generated-skills/` — only those —
/// where every harness looks. Returns the folders installed.
///
/// # Errors
/// Docker errors; [`RunnerError::Task`] when a helper command fails.
pub async fn install_generated(
    container: &Sandbox,
    workdir: &str,
    trial_dir: &Path,
    record: &GeneratedSkills,
) -> Result<Vec<String>, RunnerError> {
    clear_destinations(container).await?;
    let wd = workdir;
    let staged = format!("{}/{GENERATED_SKILLS_PATH}", wd.trim_end_matches('/'));
    let (r, out) = container
        .sh_output(
            &format!(
                "rm -rf {} 2>&1; rmdir {} 2>/dev/null; true",
                quoted(&staged),
                quoted(
                    &Path::new(&staged)
                        .parent()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default()
                )
            ),
            HELPER_TIMEOUT,
        )
        .await?;
    if r.exit_code != Some(0) {
        return Err(RunnerError::Task(format!(
            "cannot remove {staged}: {}",
            out.trim()
        )));
    }
    if record.skills.is_empty() {
        return Ok(Vec::new());
    }
    put_everywhere(container, &trial_dir.join(TRIAL_GENERATED_DIR), None).await?;
    Ok(record.skills.iter().map(|s| s.dir_name.clone()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_quoted_for_the_shell() {
        assert_eq!(quoted("/root/a b"), "'/root/a b'");
        assert_eq!(quoted("it's"), r"'it'\''s'");
    }

    #[test]
    fn an_empty_folder_imports_as_no_skills() {
        let dir = tempfile::tempdir().unwrap();
        let r = import_skills_tar(
            &empty_tar(),
            false,
            &ExportLimits::default(),
            &dir.path().join("g"),
        )
        .unwrap();
        assert!(r.skills.is_empty() && r.refused.is_empty());
        assert!(dir.path().join("g").is_dir());
    }
}
