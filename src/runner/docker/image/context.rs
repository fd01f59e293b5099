//! Build contexts: `environment/` as a deterministic tar (sorted, times and owners zeroed) with
//! `.dockerignore` applied as Docker applies it ([`crate::skillsbench::dockerignore`]), the
//! Dockerfile rewritten for its image ([`crate::skillsbench::dockerfile`] and
//! [`crate::skillsbench::dockerfile::skills`]) and its heredocs rewritten for the classic builder
//! (their bodies added under `.skillscope/heredoc/`), the skills it needs, and the extra CA bundle
//! when one is set. The tag carries the first 12 hex digits of the tar's SHA-256, so an unchanged
//! image is reused across trials, runs and restarts.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::runner::RunnerError;
use crate::skillsbench::compose::BuildDef;
use crate::skillsbench::condition::{docker_safe_name, sanitize_slug};
use crate::skillsbench::dockerfile::skills::{self, SkillLines, Target, VERIFIER_STAGE};
use crate::skillsbench::dockerfile::{self, RewriteOptions, SKILL_DESTINATIONS};
use crate::skillsbench::dockerignore::DockerIgnore;
use crate::skillsbench::{Condition, Task};

/// Relative path of the extra CA bundle inside build contexts.
pub const CA_CONTEXT_PATH: &str = ".skillscope/ca-bundle.crt";

/// Build settings shared by every image of a run.
#[derive(Debug, Clone, Default)]
pub struct ImageSettings {
    /// Extra CA bundle (PEM) baked into every image, for TLS-intercepting proxies.
    pub ca_bundle: Option<PathBuf>,
    /// Folder for build contexts (a temp folder when `None`).
    pub work_dir: Option<PathBuf>,
}

/// The build stage of an image that holds the verifier's copies of skills
/// ([`crate::skillsbench::dockerfile::skills`]): built with the image, never part of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifierStage {
    /// The stage's name (the API's `target`).
    pub target: String,
    /// The container paths to hand to the verifier.
    pub paths: Vec<String>,
}

/// A prepared build context.
#[derive(Debug)]
pub struct ContextPlan {
    /// Image tag, `skillscope-task/<task>:<condition>-<hash12>` (`…:svc-<service>-<hash12>` for a
    /// compose service).
    pub tag: String,
    /// SHA-256 of the context tar (and the build arguments), hex.
    pub hash: String,
    /// The rewritten Dockerfile.
    pub dockerfile: String,
    /// Its path inside the context (the API's `dockerfile` parameter).
    pub dockerfile_path: String,
    /// Build arguments (`build.args` of a compose service).
    pub build_args: BTreeMap<String, String>,
    /// What the rewrite (and `.dockerignore`) changed.
    pub changes: Vec<String>,
    /// Images named in `FROM` lines.
    pub from_images: Vec<String>,
    /// The context tar on disk (deleted when the plan is dropped).
    pub tar: tempfile::NamedTempFile,
    /// The stage holding the verifier's copies, when the task has any.
    pub verifier: Option<VerifierStage>,
}

/// Where one build context comes from.
struct ContextSource<'a> {
    /// The folder whose files form the context.
    root: PathBuf,
    /// The Dockerfile's path inside `root`; the rewritten text takes its place.
    dockerfile: String,
    /// The Dockerfile's text when it is not `root`'s (a layer over another image).
    text: Option<String>,
    /// Top-level names of `root` left out (the skills folder, added per condition).
    leave_out: &'a [&'a str],
    /// A folder added as `skills/` (conditions with skills).
    skills: Option<PathBuf>,
    /// How the task's skill copies are placed before the rest of the rewrite.
    placement: Option<(SkillLines, Target)>,
    /// The condition's Dockerfile changes.
    rewrite: RewriteOptions,
    /// Build arguments, hashed into the tag.
    args: BTreeMap<String, String>,
    /// Tag up to the hash: `skillscope-task/<task>:<slug>`.
    tag_prefix: String,
    /// Leave the root out entirely (a layer's context holds only its Dockerfile and skills).
    root_files: bool,
}

/// The task's skill copies, read from its Dockerfile, its `tests/` files (the copies they name
/// are the verifier's) and its `environment/skills` listing. Blocking.
///
/// # Errors
/// [`RunnerError::Task`] for a missing or unreadable Dockerfile.
pub fn skill_lines(task: &Task) -> Result<SkillLines, RunnerError> {
    let df = task.dockerfile();
    let text = std::fs::read_to_string(&df).map_err(|e| {
        RunnerError::Task(format!(
            "missing or unreadable Dockerfile {}: {e}",
            df.display()
        ))
    })?;
    let mut tests = String::new();
    for e in walkdir::WalkDir::new(task.tests_dir())
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| e.metadata().is_ok_and(|m| m.len() <= 1 << 20))
    {
        if let Ok(bytes) = std::fs::read(e.path()) {
            tests.push_str(&String::from_utf8_lossy(&bytes));
            tests.push('\n');
        }
    }
    let skills = task.environment_dir().join("skills");
    let entries = |sub: &str| -> Option<Vec<String>> {
        let dir = skills.join(sub);
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Some(names)
    };
    Ok(skills::analyze(&text, &tests, &entries))
}

/// How a task × condition's image is built: one Dockerfile, or the no-skills image with the
/// condition's skills as its last layers (so the task's own steps build once for every condition).
#[derive(Debug, Clone)]
pub enum ImagePlan {
    /// One image from the task's (rewritten) Dockerfile.
    Single(Arc<ContextPlan>),
    /// `layer` is built `FROM` `base`'s tag.
    Layered {
        /// The no-skills image.
        base: Arc<ContextPlan>,
        /// The skills over it.
        layer: Arc<ContextPlan>,
    },
}

impl ImagePlan {
    /// The plan of the image the trial runs.
    pub fn top(&self) -> &Arc<ContextPlan> {
        match self {
            ImagePlan::Single(p) | ImagePlan::Layered { layer: p, .. } => p,
        }
    }

    /// The plan built from the task's own Dockerfile (the one with a verifier stage, if any).
    pub fn own(&self) -> &Arc<ContextPlan> {
        match self {
            ImagePlan::Single(p) | ImagePlan::Layered { base: p, .. } => p,
        }
    }
}

/// True when `condition`'s image is the no-skills image with skills layered over it rather than
/// the task's whole Dockerfile: always for a skills folder (`skills:<dir>`, `skills-by-task:<dir>`),
/// and for `curated` when no build step reads the task's skills.
pub fn layered(condition: &Condition, lines: &SkillLines) -> bool {
    match condition {
        Condition::NoSkills | Condition::SelfGenerated(_) => false,
        Condition::Curated => lines.layerable(),
        Condition::Skills { .. } | Condition::SkillsByTask { .. } => true,
    }
}

/// The condition's skills folder (`None` for no skills); an error naming a folder that does not
/// exist.
fn condition_skills(task: &Task, condition: &Condition) -> Result<Option<PathBuf>, RunnerError> {
    let missing =
        |dir: &Path| RunnerError::Task(format!("skills folder {} does not exist", dir.display()));
    Ok(match condition {
        Condition::NoSkills | Condition::SelfGenerated(_) => None,
        Condition::Curated => Some(task.environment_dir().join("skills")),
        Condition::Skills { dir } => {
            if !dir.is_dir() {
                return Err(missing(dir));
            }
            Some(dir.clone())
        }
        Condition::SkillsByTask { dir } => {
            if !dir.is_dir() {
                return Err(missing(dir));
            }
            // A task without a subfolder gets an empty skills folder.
            Some(dir.join(&task.id))
        }
    })
}

fn tag_prefix(task: &Task, slug: &str) -> String {
    let mut slug = slug.to_string();
    slug.truncate(40);
    format!(
        "skillscope-task/{}:{}",
        docker_safe_name(&task.id),
        slug.trim_end_matches(['-', '.'])
    )
}

fn ca_path(settings: &ImageSettings) -> Option<String> {
    settings
        .ca_bundle
        .as_ref()
        .map(|_| CA_CONTEXT_PATH.to_string())
}

/// Writes the build context of the no-skills image of `task` (also the base the layered
/// conditions build on): the task's own steps, its agent skill copies left out, those a build step
/// reads kept for it and removed before the agent starts, the verifier's in a stage of their own
/// ([`crate::skillsbench::dockerfile::skills`]). The task's skills are in the context only when a
/// build step needs them. Blocking.
///
/// # Errors
/// As [`prepare_context`].
pub fn prepare_base(task: &Task, settings: &ImageSettings) -> Result<ContextPlan, RunnerError> {
    let lines = skill_lines(task)?;
    let needs = lines.needs_skills_in_context();
    let source = ContextSource {
        root: task.environment_dir(),
        dockerfile: "Dockerfile".into(),
        text: None,
        leave_out: &["skills"],
        skills: needs.then(|| task.environment_dir().join("skills")),
        placement: Some((lines, Target::NoSkills)),
        rewrite: RewriteOptions {
            ca_bundle_context_path: ca_path(settings),
            ..Default::default()
        },
        args: BTreeMap::new(),
        tag_prefix: tag_prefix(task, "noskills"),
        root_files: true,
    };
    write_context(&source, settings)
}

/// Writes the build context of `condition`'s image from the task's whole Dockerfile, the skills in
/// the task's own order (a build step reads them) plus a block copying them to every harness
/// folder. Blocking.
///
/// # Errors
/// As [`prepare_context`].
pub fn prepare_in_place(
    task: &Task,
    condition: &Condition,
    settings: &ImageSettings,
) -> Result<ContextPlan, RunnerError> {
    let lines = skill_lines(task)?;
    let source = ContextSource {
        root: task.environment_dir(),
        dockerfile: "Dockerfile".into(),
        text: None,
        leave_out: &["skills"],
        skills: condition_skills(task, condition)?,
        placement: Some((lines, Target::InPlace)),
        rewrite: RewriteOptions {
            append_skill_destinations: SKILL_DESTINATIONS.iter().map(|s| s.to_string()).collect(),
            ca_bundle_context_path: ca_path(settings),
            ..Default::default()
        },
        args: BTreeMap::new(),
        tag_prefix: tag_prefix(task, &condition.slug()),
        root_files: true,
    };
    write_context(&source, settings)
}

/// Writes the build context of `condition`'s skills as the last layers over `base` (the
/// no-skills image's plan): `FROM <base tag>`, then each agent copy of the task's Dockerfile with
/// its destination made absolute (one naming a part of the skills folder only when the
/// condition's folder has it), then the block copying `skills/` to every harness folder. The
/// context holds the Dockerfile and the condition's skills only. Blocking.
///
/// # Errors
/// As [`prepare_context`].
pub fn prepare_layer(
    task: &Task,
    condition: &Condition,
    base: &ContextPlan,
    settings: &ImageSettings,
) -> Result<ContextPlan, RunnerError> {
    let lines = skill_lines(task)?;
    let skills = condition_skills(task, condition)?;
    let mut text = format!(
        "FROM {}\n# skillscope: the condition's skills as the last layers over the no-skills image (no build step reads them)\n",
        base.tag
    );
    let mut changes = vec![format!(
        "layered over the no-skills image {} (the task's own steps build once)",
        base.tag
    )];
    for (head, sources, dest) in lines.agent_layers() {
        let present: Vec<String> = sources
            .iter()
            .filter(|s| {
                let rel = s.trim_start_matches("./").trim_start_matches('/');
                let sub = rel.trim_start_matches("skills").trim_start_matches('/');
                sub.is_empty()
                    || skills.as_ref().is_some_and(|d| {
                        glob::glob(&d.join(sub).to_string_lossy())
                            .map(|mut g| g.next().is_some())
                            .unwrap_or(false)
                    })
            })
            .cloned()
            .collect();
        if present.is_empty() {
            changes.push(format!(
                "left out `{head} {} {dest}`: the condition's skills have no such part",
                sources.join(" ")
            ));
            continue;
        }
        text.push_str(&format!("{head} {} {dest}\n", present.join(" ")));
    }
    let source = ContextSource {
        root: task.environment_dir(),
        dockerfile: "Dockerfile".into(),
        text: Some(text),
        leave_out: &[],
        skills,
        placement: None,
        rewrite: RewriteOptions {
            append_skill_destinations: SKILL_DESTINATIONS.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        },
        args: BTreeMap::new(),
        tag_prefix: tag_prefix(task, &condition.slug()),
        root_files: false,
    };
    let mut plan = write_context(&source, settings)?;
    changes.append(&mut plan.changes);
    plan.changes = changes;
    Ok(plan)
}

/// Writes the build context of the image a trial of `task` under `condition` runs in: the
/// no-skills image for no-skills and self-generated; for a condition with skills, the layer over
/// it ([`prepare_layer`], whose base this prepares too) or the whole Dockerfile
/// ([`prepare_in_place`]) when a build step reads the task's skills. Blocking (reads the whole
/// `environment/` folder); run it on a blocking thread.
///
/// # Errors
/// [`RunnerError::Task`] for a missing Dockerfile or skills folder, a heredoc that cannot be
/// rewritten or a malformed `.dockerignore`; [`RunnerError::Io`] naming the unreadable file.
pub fn prepare_context(
    task: &Task,
    condition: &Condition,
    settings: &ImageSettings,
) -> Result<ContextPlan, RunnerError> {
    let condition = condition.image_condition();
    if !condition.has_skills() {
        return prepare_base(task, settings);
    }
    if layered(condition, &skill_lines(task)?) {
        let base = prepare_base(task, settings)?;
        prepare_layer(task, condition, &base, settings)
    } else {
        prepare_in_place(task, condition, settings)
    }
}

/// Writes the build context of compose service `service` of `task`: its context folder (the
/// task's skills left out: skills go into `main` only) with `.dockerignore` applied, and its
/// Dockerfile with skill copies removed, heredocs rewritten and the extra CA bundle added.
/// Blocking.
///
/// # Errors
/// As [`prepare_context`].
pub fn prepare_service_context(
    task: &Task,
    service: &str,
    build: &BuildDef,
    settings: &ImageSettings,
) -> Result<ContextPlan, RunnerError> {
    let at_env_root = std::fs::canonicalize(&build.context).ok()
        == std::fs::canonicalize(task.environment_dir()).ok();
    let mut slug = format!("svc-{}", sanitize_slug(service));
    slug.truncate(40);
    let source = ContextSource {
        root: build.context.clone(),
        dockerfile: build.dockerfile.clone(),
        text: None,
        leave_out: if at_env_root { &["skills"] } else { &[] },
        skills: None,
        placement: None,
        root_files: true,
        rewrite: RewriteOptions {
            strip_skill_copies: true,
            append_skill_destinations: Vec::new(),
            ca_bundle_context_path: settings
                .ca_bundle
                .as_ref()
                .map(|_| CA_CONTEXT_PATH.to_string()),
        },
        args: build.args.clone(),
        tag_prefix: format!(
            "skillscope-task/{}:{}",
            docker_safe_name(&task.id),
            slug.trim_end_matches(['-', '.'])
        ),
    };
    write_context(&source, settings)
}

/// The `.dockerignore` of a context: `<dockerfile>.dockerignore` beside the Dockerfile when
/// present (BuildKit's rule), else `.dockerignore` at the root; empty when neither exists.
fn read_dockerignore(root: &Path, dockerfile: &str) -> Result<(DockerIgnore, String), RunnerError> {
    let specific = format!("{dockerfile}.dockerignore");
    for name in [specific.as_str(), ".dockerignore"] {
        let path = root.join(name);
        if !path.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|e| RunnerError::io(&path, e))?;
        let ignore = DockerIgnore::parse(&text).map_err(|errors| {
            RunnerError::Task(format!("{}: {}", path.display(), errors.join("; ")))
        })?;
        return Ok((ignore, name.to_string()));
    }
    Ok((DockerIgnore::default(), String::new()))
}

fn write_context(
    source: &ContextSource<'_>,
    settings: &ImageSettings,
) -> Result<ContextPlan, RunnerError> {
    let root = &source.root;
    let df_path = root.join(&source.dockerfile);
    let mut original = match &source.text {
        Some(t) => t.clone(),
        None => std::fs::read_to_string(&df_path).map_err(|e| {
            RunnerError::Task(format!(
                "missing or unreadable Dockerfile {}: {e}",
                df_path.display()
            ))
        })?,
    };
    let mut changes = Vec::new();
    let mut verifier = None;
    if let Some((lines, target)) = &source.placement {
        let (text, placed) = skills::rewrite(&original, lines, *target);
        original = text;
        changes = placed;
        let paths = lines.verifier_paths();
        if !paths.is_empty() {
            verifier = Some(VerifierStage {
                target: VERIFIER_STAGE.to_string(),
                paths,
            });
        }
    }
    let rewrite = dockerfile::rewrite(&original, &source.rewrite);
    let heredocs = dockerfile::rewrite_heredocs(&rewrite.text).map_err(|errors| {
        RunnerError::Task(format!(
            "{}: heredocs the classic builder cannot run: {}",
            df_path.display(),
            errors.join("; ")
        ))
    })?;
    changes.extend(rewrite.changes);
    changes.extend(heredocs.changes.iter().map(|c| format!("heredoc {c}")));
    let text = heredocs.text;
    let from_images = dockerfile::parse_instructions(&text)
        .into_iter()
        .filter(|i| i.keyword == "FROM")
        .filter_map(|i| {
            i.args
                .split_whitespace()
                .find(|w| !w.starts_with("--"))
                .map(str::to_string)
        })
        .collect();
    let (ignore, ignore_file) = if source.root_files {
        read_dockerignore(root, &source.dockerfile)?
    } else {
        (DockerIgnore::default(), String::new())
    };

    let tmp_dir = settings.work_dir.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&tmp_dir).map_err(|e| RunnerError::io(&tmp_dir, e))?;
    let tar_file = tempfile::Builder::new()
        .prefix("skillscope-context-")
        .suffix(".tar")
        .tempfile_in(&tmp_dir)
        .map_err(|e| RunnerError::io(&tmp_dir, e))?;
    let hasher = HashingWriter {
        inner: std::io::BufWriter::new(
            tar_file
                .reopen()
                .map_err(|e| RunnerError::io(tar_file.path(), e))?,
        ),
        hash: Sha256::new(),
    };
    let mut b = tar::Builder::new(hasher);
    b.follow_symlinks(false);
    b.mode(tar::HeaderMode::Deterministic);
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e: std::io::Error| RunnerError::io(&p, e)
    };
    let mut walk = ContextWalk {
        root,
        ignore: &ignore,
        always: [ignore_file.as_str(), ".dockerignore"],
        dockerfile: &source.dockerfile,
        leave_out: source.leave_out,
        left_out: Vec::new(),
    };
    if source.root_files {
        walk.append(&mut b, Path::new(""))?;
    }
    if !walk.left_out.is_empty() {
        let n = walk.left_out.len();
        let shown: Vec<&str> = walk.left_out.iter().take(10).map(String::as_str).collect();
        changes.push(format!(
            "{ignore_file}: left out {n} path(s): {}{}",
            shown.join(", "),
            if n > 10 { ", …" } else { "" }
        ));
    }
    append_bytes(&mut b, &source.dockerfile, text.as_bytes(), 0o644).map_err(io(&df_path))?;
    for f in &heredocs.files {
        append_bytes(&mut b, &f.path, &f.data, f.mode).map_err(io(&df_path))?;
    }
    if let Some(src) = &source.skills {
        append_dir_entry(&mut b, "skills/").map_err(io(src))?;
        if src.is_dir() {
            append_path(&mut b, src, Path::new("skills"))?;
        }
    }
    if let Some(ca) = &settings.ca_bundle {
        let pem = std::fs::read(ca).map_err(io(ca))?;
        append_bytes(&mut b, CA_CONTEXT_PATH, &pem, 0o644).map_err(io(ca))?;
    }
    let hasher = b.into_inner().map_err(io(tar_file.path()))?;
    let HashingWriter {
        mut inner,
        hash: mut hasher,
    } = hasher;
    inner.flush().map_err(io(tar_file.path()))?;
    for (k, v) in &source.args {
        hasher.update(format!("build-arg {k}={v}\n").as_bytes());
    }
    let hash = hex::encode(hasher.finalize());
    Ok(ContextPlan {
        tag: format!("{}-{}", source.tag_prefix, &hash[..12]),
        hash,
        dockerfile: text,
        dockerfile_path: source.dockerfile.clone(),
        build_args: source.args.clone(),
        changes,
        from_images,
        tar: tar_file,
        verifier,
    })
}

/// Walks a context folder in sorted order, applying `.dockerignore` as the Docker CLI does: an
/// excluded folder is skipped whole unless an exception pattern may re-include something in it
/// (then only the kept files are sent); the ignore file itself is always sent.
struct ContextWalk<'a> {
    root: &'a Path,
    ignore: &'a DockerIgnore,
    always: [&'a str; 2],
    dockerfile: &'a str,
    leave_out: &'a [&'a str],
    /// Paths left out by `.dockerignore`, relative.
    left_out: Vec<String>,
}

impl ContextWalk<'_> {
    fn append<W: Write>(&mut self, b: &mut tar::Builder<W>, rel: &Path) -> Result<(), RunnerError> {
        let dir = self.root.join(rel);
        let mut children: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(|e| RunnerError::io(&dir, e))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        children.sort();
        for path in children {
            let name = path.file_name().expect("entry has a name");
            let child = rel.join(name);
            let rel_str = child.to_string_lossy().replace('\\', "/");
            if (rel.as_os_str().is_empty() && self.leave_out.iter().any(|l| name == *l))
                || rel_str == self.dockerfile
            {
                continue;
            }
            let excluded =
                !self.always.contains(&rel_str.as_str()) && self.ignore.excludes(&rel_str);
            let meta = std::fs::symlink_metadata(&path).map_err(|e| RunnerError::io(&path, e))?;
            if meta.is_dir() {
                if !excluded {
                    b.append_path_with_name(&path, &child)
                        .map_err(|e| RunnerError::io(&path, e))?;
                    self.append(b, &child)?;
                } else {
                    self.left_out.push(format!("{rel_str}/"));
                    if self.ignore.has_exceptions() {
                        self.append(b, &child)?;
                    }
                }
            } else if excluded {
                self.left_out.push(rel_str);
            } else {
                b.append_path_with_name(&path, &child)
                    .map_err(|e| RunnerError::io(&path, e))?;
            }
        }
        Ok(())
    }
}

/// Appends a file or folder (recursively, sorted) under `name`.
fn append_path<W: Write>(
    b: &mut tar::Builder<W>,
    path: &Path,
    name: &Path,
) -> Result<(), RunnerError> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| RunnerError::io(path, e))?;
    if meta.is_dir() {
        b.append_path_with_name(path, name)
            .map_err(|e| RunnerError::io(path, e))?;
        let mut children: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| RunnerError::io(path, e))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        children.sort();
        for c in children {
            let child_name = name.join(c.file_name().expect("entry has a name"));
            append_path(b, &c, &child_name)?;
        }
        Ok(())
    } else {
        b.append_path_with_name(path, name)
            .map_err(|e| RunnerError::io(path, e))
    }
}

fn append_bytes<W: Write>(
    b: &mut tar::Builder<W>,
    name: &str,
    data: &[u8],
    mode: u32,
) -> std::io::Result<()> {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Regular);
    h.set_size(data.len() as u64);
    h.set_mode(mode);
    h.set_mtime(0);
    b.append_data(&mut h, name, data)
}

fn append_dir_entry<W: Write>(b: &mut tar::Builder<W>, name: &str) -> std::io::Result<()> {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Directory);
    h.set_size(0);
    h.set_mode(0o755);
    h.set_mtime(0);
    b.append_data(&mut h, name, std::io::empty())
}

struct HashingWriter<W> {
    inner: W,
    hash: Sha256,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task_with(df: &str, skill: bool) -> (tempfile::TempDir, Task) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("t1");
        std::fs::create_dir_all(dir.join("environment/skills/s1")).unwrap();
        std::fs::create_dir_all(dir.join("tests")).unwrap();
        std::fs::write(dir.join("environment/Dockerfile"), df).unwrap();
        std::fs::write(dir.join("environment/data.txt"), "data").unwrap();
        if skill {
            std::fs::write(
                dir.join("environment/skills/s1/SKILL.md"),
                "---\nname: s1\ndescription: d\n---\n",
            )
            .unwrap();
        }
        std::fs::write(dir.join("instruction.md"), "do it").unwrap();
        std::fs::write(dir.join("tests/test.sh"), "#!/bin/sh\n").unwrap();
        let task = Task::load(&dir, |_| None);
        (tmp, task)
    }

    fn tar_names(plan: &ContextPlan) -> Vec<String> {
        let f = std::fs::File::open(plan.tar.path()).unwrap();
        let mut a = tar::Archive::new(f);
        a.entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn no_skills_context_has_no_skills() {
        let (_t, task) = task_with(
            "FROM x\nCOPY data.txt /root/\nCOPY skills /root/.claude/skills\n",
            true,
        );
        let plan = prepare_context(&task, &Condition::NoSkills, &ImageSettings::default()).unwrap();
        let names = tar_names(&plan);
        assert!(names.iter().all(|n| !n.starts_with("skills")), "{names:?}");
        assert!(names.contains(&"data.txt".to_string()));
        assert!(
            !plan
                .dockerfile
                .lines()
                .any(|l| l.starts_with("COPY skills"))
        );
        assert!(plan.tag.starts_with("skillscope-task/t1:noskills-"));
    }

    #[test]
    fn curated_and_dir_conditions_differ_and_hash_is_stable() {
        let (_t, task) = task_with("FROM x\nCOPY skills /root/.claude/skills\n", true);
        let s = ImageSettings::default();
        let a = prepare_context(&task, &Condition::Curated, &s).unwrap();
        let b = prepare_context(&task, &Condition::Curated, &s).unwrap();
        assert_eq!(a.hash, b.hash);
        assert!(tar_names(&a).contains(&"skills/s1/SKILL.md".to_string()));
        let other = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(other.path().join("learned")).unwrap();
        std::fs::write(
            other.path().join("learned/SKILL.md"),
            "---\nname: learned\ndescription: d\n---\n",
        )
        .unwrap();
        let c = prepare_context(
            &task,
            &Condition::Skills {
                dir: other.path().to_path_buf(),
            },
            &s,
        )
        .unwrap();
        assert_ne!(a.hash, c.hash);
        let names = tar_names(&c);
        assert!(
            names.contains(&"skills/learned/SKILL.md".to_string()),
            "{names:?}"
        );
        assert!(!names.contains(&"skills/s1/SKILL.md".to_string()));
        assert!(c.dockerfile.contains("COPY skills/ /root/.gemini/skills/"));
    }

    #[test]
    fn ca_bundle_goes_into_context_and_changes_hash() {
        let (_t, task) = task_with("FROM x\n", false);
        let pem = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(pem.path(), "-----BEGIN CERTIFICATE-----\n").unwrap();
        let plain =
            prepare_context(&task, &Condition::NoSkills, &ImageSettings::default()).unwrap();
        let with_ca = prepare_context(
            &task,
            &Condition::NoSkills,
            &ImageSettings {
                ca_bundle: Some(pem.path().to_path_buf()),
                work_dir: None,
            },
        )
        .unwrap();
        assert_ne!(plain.hash, with_ca.hash);
        assert!(tar_names(&with_ca).contains(&CA_CONTEXT_PATH.to_string()));
        assert!(with_ca.dockerfile.contains("REQUESTS_CA_BUNDLE="));
    }

    #[test]
    fn missing_dockerfile_is_named() {
        let (_t, task) = task_with("FROM x\n", false);
        std::fs::remove_file(task.dockerfile()).unwrap();
        let e =
            prepare_context(&task, &Condition::NoSkills, &ImageSettings::default()).unwrap_err();
        assert!(e.to_string().contains("Dockerfile"), "{e}");
    }
}
