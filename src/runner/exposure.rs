//! Reading, inside a trial's container just before its agent starts, every skill the agent could
//! see ([`crate::skillsbench::exposure`]): which skill folders exist (two small `sh` execs: the
//! agent's `$HOME` and working directory, then each folder with its real path and the skills in
//! it that are links to folders elsewhere), each folder copied out through the Docker API as a tar
//! spooled to a temporary file (bind mounts included; the image needs no tool beyond `sh`), every
//! `SKILL.md` in it found and its folder hashed ([`folder_hash`]), and each skill's origin
//! decided against what the trial was meant to have, hashed on this machine ([`expected`]).
//!
//! Reading never fails the trial: a folder that cannot be read is named in the record's `error`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;
use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::TrialContainer;
use super::selfgen::quoted;
use crate::skillsbench::exposure::{
    Builtins, Expected, ExposedSkill, HASH_DEFINITION, Origin, SkillExposure, TRIAL_EXPOSURE,
    skill_folders,
};
use crate::skillsbench::selfgen::TRIAL_GENERATED_DIR;
use crate::skillsbench::skill::{FolderDigest, check_skill_md, folder_hash, hash_skill_dir};
use crate::skillsbench::{Condition, Task};

/// Longest a listing exec may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(60);

/// Most bytes copied out of one skill folder (beyond it the record says the folder was cut).
const MAX_FOLDER_BYTES: u64 = 2 << 30;

/// Most bytes of a `SKILL.md` read for its frontmatter.
const MAX_SKILL_MD: u64 = 256 << 10;

/// What the scan needs to know of the trial.
pub struct ScanInput<'a> {
    /// The task.
    pub task: &'a Task,
    /// The condition.
    pub condition: &'a Condition,
    /// The trial folder (a two-phase trial's generated skills are in it).
    pub trial_dir: &'a Path,
    /// The agent's name.
    pub agent: &'a str,
    /// The harness's own skills, when the agent is a harness (`~/` in its folders is the
    /// container's `$HOME`).
    pub builtins: Option<Builtins>,
}

/// One `SKILL.md`-holding folder inside a copied-out folder.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Found {
    /// Its path relative to the copied folder (`""`: the folder itself).
    root: String,
    /// Frontmatter name, when its `SKILL.md` has one.
    name: Option<String>,
    /// Its hash.
    digest: FolderDigest,
}

/// Reads the skills visible in `container` now. Never fails: what could not be read is named in
/// [`SkillExposure::error`].
pub async fn capture(container: &TrialContainer, input: ScanInput<'_>) -> SkillExposure {
    let mut errors: Vec<String> = Vec::new();
    let (home, workdir) = match container
        .sh_output("printf '%s\\n' \"$HOME\"; pwd", LIST_TIMEOUT)
        .await
    {
        Ok((_, out)) => {
            let mut l = out.lines();
            (
                l.next().unwrap_or("/root").trim().to_string(),
                l.next().unwrap_or("/").trim().to_string(),
            )
        }
        Err(e) => {
            errors.push(format!(
                "cannot ask the container where the agent runs: {e}"
            ));
            ("/root".to_string(), "/".to_string())
        }
    };
    let builtins = input.builtins.map(|mut b| {
        for f in &mut b.folders {
            if let Some(rest) = f.strip_prefix("~/") {
                *f = format!("{}/{rest}", home.trim_end_matches('/'));
            }
        }
        b
    });
    let harness_folders = builtins
        .as_ref()
        .map(|b| b.folders.clone())
        .unwrap_or_default();
    let candidates = skill_folders(&home, &workdir, &harness_folders);
    let (folders, links) = match list(container, &candidates).await {
        Ok(x) => x,
        Err(e) => {
            errors.push(e);
            (Vec::new(), Vec::new())
        }
    };
    // Each real folder is copied out once, however many names lead to it.
    let mut found: HashMap<String, Vec<Found>> = HashMap::new();
    for (_, real) in folders.iter().chain(&links) {
        if found.contains_key(real) {
            continue;
        }
        match read_folder(container, real).await {
            Ok(f) => {
                found.insert(real.clone(), f);
            }
            Err(e) => errors.push(e),
        }
    }
    let expected = {
        let (task, condition, trial_dir) = (
            input.task.environment_dir().join("skills"),
            input.condition.clone(),
            input.trial_dir.to_path_buf(),
        );
        let task_id = input.task.id.clone();
        let harness_folders = harness_folders.clone();
        tokio::task::spawn_blocking(move || {
            expected(&task, &condition, &task_id, &trial_dir, harness_folders)
        })
        .await
        .unwrap_or_default()
    };
    let switched_off = builtins.as_ref().is_some_and(|b| b.switched_off);
    let mut by: BTreeMap<(String, String), ExposedSkill> = BTreeMap::new();
    for (shown, real) in folders.iter().chain(&links) {
        for f in found.get(real).into_iter().flatten() {
            let path = if f.root.is_empty() {
                shown.clone()
            } else {
                format!("{}/{}", shown.trim_end_matches('/'), f.root)
            };
            let dir = path.rsplit('/').next().unwrap_or("").to_string();
            let origin = expected.origin(&path, &f.digest.sha256);
            let key = (dir.clone(), f.digest.sha256.clone());
            let e = by.entry(key).or_insert_with(|| ExposedSkill {
                name: f.name.clone().unwrap_or_else(|| dir.clone()),
                dir: dir.clone(),
                path: path.clone(),
                paths: Vec::new(),
                origin,
                sha256: f.digest.sha256.clone(),
                files: f.digest.files,
                bytes: f.digest.bytes,
                enabled: !(origin == Origin::Harness && switched_off),
            });
            if origin == Origin::Harness && e.origin != Origin::Harness {
                // Found in a harness folder as well: the harness's copy decides.
                e.origin = Origin::Harness;
                e.enabled = !switched_off;
            }
            if !e.paths.contains(&path) {
                e.paths.push(path);
            }
        }
    }
    SkillExposure {
        captured_at: crate::store::now_rfc3339(),
        agent: input.agent.to_string(),
        condition: input.condition.key(),
        workdir,
        folders: folders.iter().map(|(p, _)| p.clone()).collect(),
        skills: by.into_values().collect(),
        builtins,
        hash: HASH_DEFINITION.to_string(),
        error: (!errors.is_empty()).then(|| errors.join("; ")),
        used: None,
    }
}

/// Writes `x` to the trial's `agent/skill-exposure.json` (replacing an earlier one).
///
/// # Errors
/// [`super::RunnerError::Io`] naming the file.
pub fn write(trial_dir: &Path, x: &SkillExposure) -> Result<(), super::RunnerError> {
    let path = trial_dir.join(TRIAL_EXPOSURE);
    let bytes =
        serde_json::to_vec_pretty(x).map_err(|e| super::RunnerError::Task(e.to_string()))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| super::RunnerError::io(dir, e))?;
    }
    std::fs::write(&path, bytes).map_err(|e| super::RunnerError::io(&path, e))
}

/// Fills in what the agent used — `uses` from its trajectory, `None` when the trajectory cannot
/// say — and writes the record again. `also_own`: skills the agent of a one-pass self-generated
/// trial wrote. A record that cannot be written keeps the one written at the start.
pub fn conclude(
    trial_dir: &Path,
    x: &mut SkillExposure,
    uses: Option<&[crate::store::SkillUseRow]>,
    also_own: &[String],
) {
    let uses: Option<Vec<(String, String, Option<i64>)>> = uses.map(|u| {
        u.iter()
            .map(|u| (u.skill.clone(), u.kind.clone(), u.first_step))
            .collect()
    });
    x.set_used(uses.as_deref(), also_own);
    let _ = write(trial_dir, x);
}

/// `(path, real path)` pairs: each skill folder found, and each entry of one that links to a
/// folder elsewhere.
type Listing = (Vec<(String, String)>, Vec<(String, String)>);

/// Which of `candidates` exist in the container: `(path, real path)` of each folder, and of each
/// entry in one that is a link to a folder elsewhere.
async fn list(container: &TrialContainer, candidates: &[String]) -> Result<Listing, String> {
    let words: Vec<String> = candidates.iter().map(|c| quoted(c)).collect();
    let script = format!(
        "for d in {}; do\n\
         [ -d \"$d\" ] || continue\n\
         r=$(cd \"$d\" 2>/dev/null && pwd -P) || continue\n\
         printf 'D\\t%s\\t%s\\n' \"$d\" \"$r\"\n\
         for s in \"$d\"/* \"$d\"/.[!.]* \"$d\"/..?*; do\n\
         if [ -L \"$s\" ] && [ -d \"$s\" ]; then t=$(cd \"$s\" 2>/dev/null && pwd -P) && printf 'L\\t%s\\t%s\\n' \"$s\" \"$t\"; fi\n\
         done\n\
         done; true",
        words.join(" ")
    );
    let (_, out) = container
        .sh_output(&script, LIST_TIMEOUT)
        .await
        .map_err(|e| format!("cannot list the skill folders: {e}"))?;
    Ok(parse_listing(&out))
}

/// Parses the listing's `D\tpath\treal` and `L\tpath\treal` lines (others are skipped).
fn parse_listing(out: &str) -> Listing {
    let (mut folders, mut links) = (Vec::new(), Vec::new());
    for line in out.lines() {
        let mut p = line.splitn(3, '\t');
        let (Some(kind), Some(path), Some(real)) = (p.next(), p.next(), p.next()) else {
            continue;
        };
        let pair = (path.to_string(), real.to_string());
        match kind {
            "D" if !folders.contains(&pair) => folders.push(pair),
            "L" if !links.contains(&pair) => links.push(pair),
            _ => {}
        }
    }
    (folders, links)
}

/// Copies folder `real` out of the container and finds the skills in it.
async fn read_folder(container: &TrialContainer, real: &str) -> Result<Vec<Found>, String> {
    let what = |e: String| format!("cannot read skill folder {real}: {e}");
    let spool = tempfile::NamedTempFile::new().map_err(|e| what(e.to_string()))?;
    let mut file = tokio::fs::File::from_std(
        spool
            .as_file()
            .try_clone()
            .map_err(|e| what(e.to_string()))?,
    );
    let cut = container
        .download_tar_to(real, &mut file, spool.path(), MAX_FOLDER_BYTES)
        .await
        .map_err(|e| what(e.to_string()))?;
    drop(file);
    let found = tokio::task::spawn_blocking(move || {
        let f = std::fs::File::open(spool.path())?;
        skills_in_tar(std::io::BufReader::new(f))
    })
    .await
    .map_err(|e| what(e.to_string()))?
    .map_err(|e| what(e.to_string()))?;
    if cut {
        return Err(what(format!(
            "larger than {} GiB, its hashes are of the first part only",
            MAX_FOLDER_BYTES >> 30
        )));
    }
    Ok(found)
}

/// The skills in a tar of one folder as Docker archives it (the folder's own name as the first
/// component of every entry): every folder holding a regular file `SKILL.md`, hashed over its
/// files (regular files by content, links by target, hard links by the file they repeat).
fn skills_in_tar<R: Read>(r: R) -> std::io::Result<Vec<Found>> {
    let mut archive = tar::Archive::new(r);
    // Path relative to the folder → (sha256, size).
    let mut files: BTreeMap<String, (String, u64)> = BTreeMap::new();
    // Archive path → path relative to the folder (hard links name the archive path).
    let mut archived: HashMap<String, String> = HashMap::new();
    let mut skill_md: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for entry in archive.entries()? {
        let mut e = entry?;
        let raw = e.path()?.to_string_lossy().into_owned();
        let raw = raw.trim_end_matches('/').to_string();
        let Some((_, rel)) = raw.split_once('/') else {
            continue;
        };
        let rel = rel.to_string();
        let kind = e.header().entry_type();
        let (sha, size) = if kind.is_file() {
            let mut h = Sha256::new();
            let size = if rel == "SKILL.md" || rel.ends_with("/SKILL.md") {
                let mut bytes = Vec::new();
                (&mut e).take(MAX_SKILL_MD).read_to_end(&mut bytes)?;
                h.update(&bytes);
                let rest = std::io::copy(&mut e, &mut h)?;
                let root = rel.strip_suffix("SKILL.md").unwrap_or("");
                skill_md.insert(root.trim_end_matches('/').to_string(), bytes.clone());
                bytes.len() as u64 + rest
            } else {
                std::io::copy(&mut e, &mut h)?
            };
            (hex::encode(h.finalize()), size)
        } else if kind.is_symlink() {
            let target = e
                .link_name_bytes()
                .map(|b| b.into_owned())
                .unwrap_or_default();
            (hex::encode(Sha256::digest(&target)), target.len() as u64)
        } else if kind.is_hard_link() {
            let target = e
                .link_name()?
                .map(|p| p.to_string_lossy().trim_end_matches('/').to_string())
                .unwrap_or_default();
            match archived.get(&target).and_then(|t| files.get(t)) {
                Some(x) => x.clone(),
                None => continue,
            }
        } else {
            continue;
        };
        archived.insert(raw, rel.clone());
        files.insert(rel, (sha, size));
    }
    let mut out = Vec::new();
    for (root, md) in skill_md {
        let prefix = if root.is_empty() {
            String::new()
        } else {
            format!("{root}/")
        };
        let inside: Vec<(&str, &(String, u64))> = files
            .iter()
            .filter_map(|(p, v)| p.strip_prefix(&prefix).map(|r| (r, v)))
            .collect();
        let digest = FolderDigest {
            sha256: folder_hash(inside.iter().map(|(p, (s, _))| (*p, s.as_str()))),
            files: inside.len(),
            bytes: inside.iter().map(|(_, (_, n))| n).sum(),
        };
        let name = check_skill_md(&String::from_utf8_lossy(&md), None)
            .0
            .map(|f| f.name);
        out.push(Found { root, name, digest });
    }
    Ok(out)
}

/// The hashes of every folder under `dir` (at any depth, links to folders followed) that holds a
/// `SKILL.md`; a missing folder gives none.
pub fn hashes_under(dir: &Path) -> BTreeSet<String> {
    walkdir::WalkDir::new(dir)
        .follow_links(true)
        .into_iter()
        .flatten()
        .filter(|e| e.file_name() == "SKILL.md" && e.file_type().is_file())
        .filter_map(|e| e.path().parent().map(Path::to_path_buf))
        .filter_map(|d| hash_skill_dir(&d).ok())
        .map(|d| d.sha256)
        .collect()
}

/// What the trial was meant to have, hashed on this machine: the task's `environment/skills`
/// (`task_skills`), the condition's skills folder (`skills-by-task:` its subfolder for the task),
/// the generated skills kept in the trial folder (self-generated conditions), the harness's own
/// folders.
fn expected(
    task_skills: &Path,
    condition: &Condition,
    task_id: &str,
    trial_dir: &Path,
    harness_folders: Vec<String>,
) -> Expected {
    Expected {
        task: hashes_under(task_skills),
        learned: match condition {
            Condition::Skills { dir } => hashes_under(dir),
            Condition::SkillsByTask { dir } => hashes_under(&dir.join(task_id)),
            _ => BTreeSet::new(),
        },
        generated: match condition {
            Condition::SelfGenerated(_) => hashes_under(&trial_dir.join(TRIAL_GENERATED_DIR)),
            _ => BTreeSet::new(),
        },
        harness_folders,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tar as Docker archives `/root/.claude/skills`: the folder's name first.
    fn archive(entries: &[(&str, &[u8])], links: &[(&str, &str)]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (path, bytes) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(bytes.len() as u64);
            h.set_mode(0o644);
            h.set_entry_type(tar::EntryType::Regular);
            b.append_data(&mut h, path, *bytes).unwrap();
        }
        for (path, target) in links {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_size(0);
            b.append_link(&mut h, path, target).unwrap();
        }
        b.into_inner().unwrap()
    }

    #[test]
    fn skills_in_a_folder_are_hashed_as_on_this_machine() {
        let md = b"---\nname: mesh-analysis\ndescription: d\n---\nbody\n";
        let tar = archive(
            &[
                ("skills/mesh/SKILL.md", md),
                ("skills/mesh/scripts/v.py", b"print(1)\n"),
                ("skills/.system/creator/SKILL.md", b"no frontmatter"),
                ("skills/stray.txt", b"x"),
            ],
            &[("skills/mesh/data", "/srv/data")],
        );
        let found = skills_in_tar(&tar[..]).unwrap();
        assert_eq!(found.len(), 2, "{found:?}");
        let mesh = found.iter().find(|f| f.root == "mesh").unwrap();
        assert_eq!(mesh.name.as_deref(), Some("mesh-analysis"));
        assert_eq!(mesh.digest.files, 3);
        // The same folder on disk hashes the same.
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().join("mesh");
        std::fs::create_dir_all(m.join("scripts")).unwrap();
        std::fs::write(m.join("SKILL.md"), md).unwrap();
        std::fs::write(m.join("scripts/v.py"), b"print(1)\n").unwrap();
        std::os::unix::fs::symlink("/srv/data", m.join("data")).unwrap();
        assert_eq!(hash_skill_dir(&m).unwrap(), mesh.digest);
        assert_eq!(
            hashes_under(dir.path()),
            [mesh.digest.sha256.clone()].into()
        );
        let nested = found.iter().find(|f| f.root == ".system/creator").unwrap();
        assert_eq!(nested.name, None);
    }

    #[test]
    fn listing_lines_are_parsed_and_deduplicated() {
        let (d, l) = parse_listing(
            "D\t/root/.claude/skills\t/root/.claude/skills\nD\t/root/.agents/skills\t/srv/s\nnoise\nL\t/root/.claude/skills/x\t/opt/x\nD\t/root/.claude/skills\t/root/.claude/skills\n",
        );
        assert_eq!(d.len(), 2);
        assert_eq!(l, vec![("/root/.claude/skills/x".into(), "/opt/x".into())]);
    }
}
