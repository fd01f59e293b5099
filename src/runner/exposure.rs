//! Reading, inside a trial's container just before its agent starts, every skill the agent could
//! see ([`crate::skillsbench::exposure`]): one `sh` script lists the agent's `$HOME` and working
//! directory, each skill folder with its real path and the skills in it that are links to folders
//! elsewhere, and archives them with the image's `tar` — run as the prelude of the agent's own
//! exec when the agent takes one ([`ExposureScan`]; read before the agent's command starts), else
//! in an exec of its own ([`capture`]). When that archive is not usable, each folder is copied out
//! through the Docker API as a tar spooled to a temporary file (bind mounts included; the image
//! needs no tool beyond `sh`). Every `SKILL.md` found has its folder hashed ([`folder_hash`]), and
//! each skill's origin is decided against what the trial was meant to have, hashed on this
//! machine ([`expected`]).
//!
//! Reading never fails the trial: a folder that cannot be read is named in the record's `error`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::Sandbox;
use super::selfgen::quoted;
use crate::skillsbench::dockerfile::SKILL_DESTINATIONS;
use crate::skillsbench::exposure::{
    Builtins, Expected, ExposedSkill, HASH_DEFINITION, Origin, SYSTEM_FOLDERS, SkillExposure,
    TRIAL_EXPOSURE, relative_skill_folders, skill_folders,
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
pub async fn capture(container: &Sandbox, input: ScanInput<'_>) -> SkillExposure {
    let t0 = std::time::Instant::now();
    let x = scan(container, input).await;
    tracing::debug!(
        container = %container.name(),
        skills = x.skills.len(),
        ms = t0.elapsed().as_millis() as u64,
        "skill exposure read"
    );
    x
}

async fn scan(container: &Sandbox, input: ScanInput<'_>) -> SkillExposure {
    let mut errors: Vec<String> = Vec::new();
    let read = list_and_read(container, &builtin_folders(&input), &mut errors).await;
    assemble(&input, read, errors).await
}

/// The harness's own skill folders (`~/` for the container's `$HOME`), none for other agents.
fn builtin_folders(input: &ScanInput<'_>) -> Vec<String> {
    input
        .builtins
        .as_ref()
        .map(|b| b.folders.clone())
        .unwrap_or_default()
}

/// The record from what was read (`read`: the listing and the files of the folders found, or why
/// nothing could be listed) and the folders that could not be read (`errors`).
async fn assemble(
    input: &ScanInput<'_>,
    read: Result<(Listing, Files), String>,
    mut errors: Vec<String>,
) -> SkillExposure {
    let (listing, files) = match read {
        Ok(x) => x,
        Err(e) => {
            errors.push(e);
            (parse_listing(""), Files::default())
        }
    };
    let Listing {
        home,
        workdir,
        mut folders,
        links,
    } = listing;
    let builtins = input.builtins.clone().map(|mut b| {
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
    // The folders in their documented order ([`skill_folders`]).
    let order = skill_folders(&home, &workdir, &harness_folders);
    folders.sort_by_key(|(p, _)| order.iter().position(|o| o == p).unwrap_or(usize::MAX));
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
        for f in files.skills_under(real) {
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
        captured_at: crate::domain::now_rfc3339(),
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

/// The scan as the prelude of the agent's own exec ([`super::container::Prelude`]): the same
/// script, read and recorded (`agent/skill-exposure.json` written) before the agent's command
/// starts — one exec fewer per trial. When the prelude never ran (the agent failed before its
/// exec), [`ExposureScan::take`] is `None` and the scan is to be run on its own ([`capture`]).
pub struct ExposureScan<'a> {
    input: ScanInput<'a>,
    out: tempfile::NamedTempFile,
    listed: tempfile::NamedTempFile,
    /// The record (or why it could not be written) and how long reading it took on this side.
    taken: std::sync::Mutex<Option<(Result<SkillExposure, super::RunnerError>, Duration)>>,
}

impl<'a> ExposureScan<'a> {
    /// A scan of what the agent of `input` can see, to run first in its exec.
    ///
    /// # Errors
    /// [`super::RunnerError::Io`] when its output files cannot be made.
    pub fn new(input: ScanInput<'a>) -> Result<ExposureScan<'a>, super::RunnerError> {
        let spool = || {
            tempfile::NamedTempFile::new()
                .map_err(|e| super::RunnerError::io(std::env::temp_dir(), e))
        };
        Ok(ExposureScan {
            input,
            out: spool()?,
            listed: spool()?,
            taken: std::sync::Mutex::new(None),
        })
    }

    /// The record once the prelude ran (or the error of writing it), with the time this side
    /// took to read it; `None` when it never ran.
    pub fn take(&self) -> Option<(Result<SkillExposure, super::RunnerError>, Duration)> {
        self.taken.lock().expect("lock").take()
    }
}

#[async_trait::async_trait]
impl super::sandbox::Prelude for ExposureScan<'_> {
    fn script(&self) -> String {
        listing_script(&builtin_folders(&self.input))
    }

    fn timeout(&self) -> Duration {
        LIST_TIMEOUT
    }

    fn outputs(&self) -> (&Path, &Path) {
        (self.out.path(), self.listed.path())
    }

    async fn ended(
        &self,
        container: &Sandbox,
        exit_code: Option<i64>,
    ) -> Result<(), super::RunnerError> {
        let t0 = std::time::Instant::now();
        let mut errors = Vec::new();
        let read = read_listed(
            container,
            exit_code,
            self.out.path(),
            self.listed.path(),
            &mut errors,
        )
        .await;
        let x = assemble(&self.input, read, errors).await;
        tracing::debug!(
            container = %container.name(),
            skills = x.skills.len(),
            ms = t0.elapsed().as_millis() as u64,
            "skill exposure read before the agent"
        );
        let written = write(self.input.trial_dir, &x);
        *self.taken.lock().expect("lock") = Some((written.clone().map(|()| x), t0.elapsed()));
        written
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
    crate::fs::write_fresh(&path, &bytes).map_err(|e| super::RunnerError::io(&path, e))
}

/// Fills in what the agent used — `uses` from its trajectory, `None` when the trajectory cannot
/// say — and writes the record again. `also_own`: skills the agent of a one-pass self-generated
/// trial wrote. A record that cannot be written keeps the one written at the start.
pub fn conclude(
    trial_dir: &Path,
    x: &mut SkillExposure,
    uses: Option<&[crate::domain::SkillUseRow]>,
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

/// What the listing exec found: the agent's `$HOME` and working directory, each skill folder that
/// exists with its real path, and each entry of one that links to a folder elsewhere (`(path, real
/// path)` pairs).
#[derive(Debug, Default, PartialEq)]
struct Listing {
    home: String,
    workdir: String,
    folders: Vec<(String, String)>,
    links: Vec<(String, String)>,
}

/// The script of the one exec that reads the skill folders: every folder [`skill_folders`] names —
/// `builtin` folders may start with `~/` — looked up (paths computed from `$HOME` and `pwd` in
/// the shell), the listing written to stderr, then the real folders found (and the folders that
/// skills in them link to) archived to stdout with the image's `tar`.
fn listing_script(builtin: &[String]) -> String {
    let rel: Vec<String> = relative_skill_folders().iter().map(|r| quoted(r)).collect();
    let mut fixed: Vec<String> = SKILL_DESTINATIONS
        .iter()
        .chain(SYSTEM_FOLDERS)
        .map(|d| quoted(d))
        .collect();
    for b in builtin {
        fixed.push(match b.strip_prefix("~/") {
            Some(rest) => format!("\"$h\"/{}", quoted(rest)),
            None => quoted(b),
        });
    }
    let rel = rel.join(" ");
    format!(
        "h=${{HOME:-/root}}; h=${{h%/}}; w=$(pwd)\n\
         exec 3>&1 1>&2\n\
         printf 'H\\t%s\\nW\\t%s\\n' \"$h\" \"$w\"\n\
         n=''\n\
         look() {{ [ -d \"$1\" ] || return 0; r=$(cd \"$1\" 2>/dev/null && pwd -P) || return 0; \
         printf 'D\\t%s\\t%s\\n' \"$1\" \"$r\"; [ \"$r\" = / ] || n=\"$n${{r#/}}\n\"; \
         for s in \"$1\"/* \"$1\"/.[!.]* \"$1\"/..?*; do \
         if [ -L \"$s\" ] && [ -d \"$s\" ]; then t=$(cd \"$s\" 2>/dev/null && pwd -P) && printf 'L\\t%s\\t%s\\n' \"$s\" \"$t\" && n=\"$n${{t#/}}\n\"; fi; \
         done; }}\n\
         for d in {fixed}; do look \"$d\"; done\n\
         for r in {rel}; do look \"$h/$r\"; done\n\
         a=${{w%/}}\n\
         while :; do for r in {rel}; do look \"$a/$r\"; done; [ -z \"$a\" ] && break; a=${{a%/*}}; done\n\
         [ -n \"$n\" ] || exit 0\n\
         set -f; IFS='\n'\n\
         exec tar -cf - -C / $n >&3",
        fixed = fixed.join(" ")
    )
}

/// Runs the script of [`listing_script`] in the container: the listing, and the files of every
/// folder found — through the image's `tar`, or when that fails (no `tar`, an unreadable file,
/// more than [`super::sandbox::MAX_OUTPUT_BYTES`]) through the Docker API folder by folder
/// (bind mounts included either way; a folder that cannot be read is added to `errors`).
async fn list_and_read(
    container: &Sandbox,
    builtin: &[String],
    errors: &mut Vec<String>,
) -> Result<(Listing, Files), String> {
    let what = |e: String| format!("cannot read the skill folders: {e}");
    let out = tempfile::NamedTempFile::new().map_err(|e| what(e.to_string()))?;
    let listed = tempfile::NamedTempFile::new().map_err(|e| what(e.to_string()))?;
    let never = tokio_util::sync::CancellationToken::new();
    let mut req = super::ExecRequest::sh(listing_script(builtin), &never);
    req.timeout = Some(LIST_TIMEOUT);
    req.stdout = Some(out.path());
    req.stderr = Some(listed.path());
    let r = container.exec(req).await.map_err(|e| what(e.to_string()))?;
    read_listed(container, r.exit_code, out.path(), listed.path(), errors).await
}

/// What the script of [`listing_script`] wrote — the listing in `listed`, the archive in `out`,
/// usable when it exited with `exit_code` 0 — or, when the archive is not, the folders read
/// through the Docker API.
async fn read_listed(
    container: &Sandbox,
    exit_code: Option<i64>,
    out: &Path,
    listed: &Path,
    errors: &mut Vec<String>,
) -> Result<(Listing, Files), String> {
    let what = |e: String| format!("cannot read the skill folders: {e}");
    let listing = parse_listing(&String::from_utf8_lossy(
        &std::fs::read(listed).map_err(|e| what(e.to_string()))?,
    ));
    let size = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    if exit_code == Some(0) && size < super::sandbox::MAX_OUTPUT_BYTES {
        let out = out.to_path_buf();
        let parsed = tokio::task::spawn_blocking(move || {
            let mut files = Files::default();
            let f = std::fs::File::open(&out)?;
            read_tar(std::io::BufReader::new(f), "", &mut files)?;
            Ok::<_, std::io::Error>(files)
        })
        .await
        .map_err(|e| what(e.to_string()))?;
        match parsed {
            Ok(files) => return Ok((listing, files)),
            Err(e) => tracing::debug!(error = %e, "the container's tar wrote no readable archive"),
        }
    }
    tracing::debug!(container = %container.name(), exit = ?exit_code, size, "reading the skill folders through the API");
    let reals: Vec<String> = listing
        .folders
        .iter()
        .chain(&listing.links)
        .map(|(_, r)| r.clone())
        .collect();
    let mut files = Files::default();
    for top in outermost(&reals) {
        if let Err(e) = read_folder(container, &top, &mut files).await {
            errors.push(e);
        }
    }
    Ok((listing, files))
}

/// The folders of `reals` that lie inside no other one of them (a folder's tar holds its
/// subfolders); `/` is never read.
fn outermost(reals: &[String]) -> Vec<String> {
    let mut tops: Vec<String> = Vec::new();
    for r in reals {
        let r = r.trim_end_matches('/');
        if r.is_empty() {
            continue;
        }
        let inside = |o: &String| r == o || r.starts_with(&format!("{o}/"));
        if !tops.iter().any(inside) {
            tops.retain(|t| !t.starts_with(&format!("{r}/")));
            tops.push(r.to_string());
        }
    }
    tops
}

/// Parses the listing's `H`, `W`, `D\tpath\treal` and `L\tpath\treal` lines (others are
/// skipped; a folder listed twice counts once).
fn parse_listing(out: &str) -> Listing {
    let mut l = Listing {
        home: "/root".into(),
        workdir: "/".into(),
        ..Default::default()
    };
    for line in out.lines() {
        let mut p = line.splitn(3, '\t');
        let (Some(kind), Some(path)) = (p.next(), p.next()) else {
            continue;
        };
        let pair = p.next().map(|real| (path.to_string(), real.to_string()));
        match (kind, pair) {
            ("H", None) if !path.is_empty() => l.home = path.to_string(),
            ("W", None) if !path.is_empty() => l.workdir = path.to_string(),
            ("D", Some(pair)) if !l.folders.contains(&pair) => l.folders.push(pair),
            ("L", Some(pair)) if !l.links.contains(&pair) => l.links.push(pair),
            _ => {}
        }
    }
    l
}

/// Every file under the folders read, by absolute container path: its SHA-256 and size; and the
/// text (first [`MAX_SKILL_MD`] bytes) of every `SKILL.md`, by its folder.
#[derive(Debug, Default)]
struct Files {
    files: BTreeMap<String, (String, u64)>,
    skill_md: BTreeMap<String, Vec<u8>>,
}

impl Files {
    /// The skills under folder `real`: every folder holding a `SKILL.md`, hashed over its files.
    fn skills_under(&self, real: &str) -> Vec<Found> {
        let base = real.trim_end_matches('/');
        let within = |p: &str| p == base || p.starts_with(&format!("{base}/"));
        self.skill_md
            .iter()
            .filter(|(dir, _)| within(dir))
            .map(|(dir, md)| {
                let prefix = format!("{dir}/");
                let inside: Vec<(&str, &(String, u64))> = self
                    .files
                    .range(prefix.clone()..)
                    .take_while(|(p, _)| p.starts_with(&prefix))
                    .map(|(p, v)| (&p[prefix.len()..], v))
                    .collect();
                Found {
                    root: dir[base.len()..].trim_start_matches('/').to_string(),
                    name: check_skill_md(&String::from_utf8_lossy(md), None)
                        .0
                        .map(|f| f.name),
                    digest: FolderDigest {
                        sha256: folder_hash(inside.iter().map(|(p, (s, _))| (*p, s.as_str()))),
                        files: inside.len(),
                        bytes: inside.iter().map(|(_, (_, n))| n).sum(),
                    },
                }
            })
            .collect()
    }
}

/// Copies folder `real` out through the Docker API and adds its files to `files`.
async fn read_folder(container: &Sandbox, real: &str, files: &mut Files) -> Result<(), String> {
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
    // Docker names the entries from the folder's own name: they live under its parent.
    let parent = Path::new(real)
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let taken = std::mem::take(files);
    let (back, read) = tokio::task::spawn_blocking(move || {
        let mut files = taken;
        let r = std::fs::File::open(spool.path())
            .and_then(|f| read_tar(std::io::BufReader::new(f), &parent, &mut files));
        (files, r)
    })
    .await
    .map_err(|e| what(e.to_string()))?;
    *files = back;
    read.map_err(|e| what(e.to_string()))?;
    if cut {
        return Err(what(format!(
            "larger than {} GiB, its hashes are of the first part only",
            MAX_FOLDER_BYTES >> 30
        )));
    }
    Ok(())
}

/// Adds the entries of a tar to `into`, each under `parent` (an absolute folder; `""`: the
/// entries' paths are already relative to `/`): regular files by content, links by target, hard
/// links by the file they repeat; every `SKILL.md`'s text by its folder.
fn read_tar<R: Read>(r: R, parent: &str, into: &mut Files) -> std::io::Result<()> {
    let parent = parent.trim_end_matches('/');
    let abs = |p: &str| format!("{parent}/{}", p.trim_start_matches("./").trim_matches('/'));
    let mut archive = tar::Archive::new(r);
    for entry in archive.entries()? {
        let mut e = entry?;
        let path = abs(&e.path()?.to_string_lossy());
        let kind = e.header().entry_type();
        let (sha, size) = if kind.is_file() {
            let mut h = Sha256::new();
            let size = if path.ends_with("/SKILL.md") {
                let mut bytes = Vec::new();
                (&mut e).take(MAX_SKILL_MD).read_to_end(&mut bytes)?;
                h.update(&bytes);
                let rest = std::io::copy(&mut e, &mut h)?;
                let dir = path.strip_suffix("/SKILL.md").unwrap_or("").to_string();
                let n = bytes.len() as u64 + rest;
                into.skill_md.insert(dir, bytes);
                n
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
                .map(|p| abs(&p.to_string_lossy()))
                .unwrap_or_default();
            match into.files.get(&target) {
                Some(x) => x.clone(),
                None => continue,
            }
        } else {
            continue;
        };
        into.files.insert(path, (sha, size));
    }
    Ok(())
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

    /// A tar whose entries are `entries` (regular files) and `links` (symbolic links).
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

    const MD: &[u8] = b"---\nname: mesh-analysis\ndescription: d\n---\nbody\n";

    #[test]
    fn skills_are_hashed_as_on_this_machine_from_either_tar() {
        // As Docker's API archives /root/.claude/skills (the folder's own name first) …
        let api = archive(
            &[
                ("skills/mesh/SKILL.md", MD),
                ("skills/mesh/scripts/v.py", b"print(1)\n"),
                ("skills/.system/creator/SKILL.md", b"no frontmatter"),
                ("skills/stray.txt", b"x"),
            ],
            &[("skills/mesh/data", "/srv/data")],
        );
        let mut a = Files::default();
        read_tar(&api[..], "/root/.claude", &mut a).unwrap();
        // … and as `tar -cf - -C / root/.claude/skills` does.
        let exec = archive(
            &[
                ("root/.claude/skills/mesh/SKILL.md", MD),
                ("root/.claude/skills/mesh/scripts/v.py", b"print(1)\n"),
                (
                    "root/.claude/skills/.system/creator/SKILL.md",
                    b"no frontmatter",
                ),
                ("root/.claude/skills/stray.txt", b"x"),
            ],
            &[("root/.claude/skills/mesh/data", "/srv/data")],
        );
        let mut b = Files::default();
        read_tar(&exec[..], "", &mut b).unwrap();
        let found = a.skills_under("/root/.claude/skills");
        assert_eq!(found, b.skills_under("/root/.claude/skills"));
        assert_eq!(found.len(), 2, "{found:?}");
        let mesh = found.iter().find(|f| f.root == "mesh").unwrap();
        assert_eq!(mesh.name.as_deref(), Some("mesh-analysis"));
        assert_eq!(mesh.digest.files, 3);
        let nested = found.iter().find(|f| f.root == ".system/creator").unwrap();
        assert_eq!(nested.name, None);
        assert!(
            a.skills_under("/root/.claude/skills/mesh/scripts")
                .is_empty()
        );
        // The same folder on disk hashes the same.
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().join("mesh");
        std::fs::create_dir_all(m.join("scripts")).unwrap();
        std::fs::write(m.join("SKILL.md"), MD).unwrap();
        std::fs::write(m.join("scripts/v.py"), b"print(1)\n").unwrap();
        std::os::unix::fs::symlink("/srv/data", m.join("data")).unwrap();
        assert_eq!(hash_skill_dir(&m).unwrap(), mesh.digest);
        assert_eq!(
            hashes_under(dir.path()),
            [mesh.digest.sha256.clone()].into()
        );
    }

    #[test]
    fn listing_lines_are_parsed_and_deduplicated() {
        let l = parse_listing(
            "H\t/home/a\nW\t/app\nD\t/root/.claude/skills\t/root/.claude/skills\nD\t/root/.agents/skills\t/srv/s\nnoise\nL\t/root/.claude/skills/x\t/opt/x\nD\t/root/.claude/skills\t/root/.claude/skills\n",
        );
        assert_eq!((l.home.as_str(), l.workdir.as_str()), ("/home/a", "/app"));
        assert_eq!(l.folders.len(), 2);
        assert_eq!(
            l.links,
            vec![("/root/.claude/skills/x".into(), "/opt/x".into())]
        );
    }

    /// The listing script, run by this machine's `sh`, finds home, project and harness folders
    /// and the skills in them that link elsewhere.
    #[test]
    fn the_listing_script_finds_home_project_and_linked_skills() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let home = root.join("home");
        let work = root.join("proj/sub");
        let elsewhere = root.join("elsewhere/skill");
        for d in [
            home.join(".claude/skills/a"),
            root.join("proj/.agents/skills/b"),
            home.join(".codex/skills/.system"),
            elsewhere.clone(),
            work.clone(),
        ] {
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("SKILL.md"), MD).unwrap();
        }
        std::os::unix::fs::symlink(&elsewhere, home.join(".claude/skills/linked")).unwrap();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(listing_script(&["~/.codex/skills/.system".into()]))
            .env("HOME", &home)
            .current_dir(&work)
            .output()
            .unwrap();
        let l = parse_listing(&String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{out:?}");
        // Its stdout is the tar of every folder found, linked skills included.
        let mut files = Files::default();
        read_tar(&out.stdout[..], "", &mut files).unwrap();
        let shown: Vec<&str> = l.folders.iter().map(|(p, _)| p.as_str()).collect();
        let h = home.display().to_string();
        for want in [
            format!("{h}/.claude/skills"),
            format!("{}/proj/.agents/skills", root.display()),
            format!("{h}/.codex/skills/.system"),
        ] {
            assert!(shown.contains(&want.as_str()), "{want} in {shown:?}");
        }
        assert_eq!(l.workdir, work.display().to_string());
        assert_eq!(
            l.links,
            vec![(
                format!("{h}/.claude/skills/linked"),
                elsewhere.display().to_string()
            )]
        );
        let skills: Vec<String> = files
            .skills_under(&h)
            .into_iter()
            .chain(files.skills_under(&root.display().to_string()))
            .map(|f| f.root)
            .collect();
        assert!(
            skills.contains(&".claude/skills/a".to_string()),
            "{skills:?}"
        );
        assert!(
            skills.contains(&"proj/.agents/skills/b".to_string()),
            "{skills:?}"
        );
        assert!(
            skills.contains(&"elsewhere/skill".to_string()),
            "{skills:?}"
        );
    }
}
