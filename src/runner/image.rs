//! Task images: the build context per condition, its content hash, build-or-reuse, and the
//! no-skills leak guard; and the images of a compose task's extra services.
//!
//! The context is `environment/` as a deterministic tar (sorted, times and owners zeroed) with:
//! `.dockerignore` applied as Docker applies it ([`crate::skillsbench::dockerignore`]); the Dockerfile
//! rewritten for the condition ([`crate::skillsbench::dockerfile`]) and its heredocs rewritten for the
//! classic builder (their bodies added under `.skillscope/heredoc/`); `skills/` left out
//! (no-skills), the task's own (curated) or the condition's folder (`skills:<dir>`); and the extra
//! CA bundle when one is set. The image tag carries the first 12 hex digits of the tar's SHA-256,
//! so an unchanged task × condition reuses its image across trials, runs and restarts. A compose
//! service's context is its own `build.context` the same way, minus the task's skills, its build
//! arguments hashed in.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bollard::query_parameters::BuildImageOptions;
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use tokio::sync::{Mutex, OnceCell};

use super::container::TrialContainer;
use super::{DockerHost, RunnerError, base_image, labels};
use crate::skillsbench::compose::BuildDef;
use crate::skillsbench::condition::{docker_safe_name, sanitize_slug};
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
}

/// Where one build context comes from.
struct ContextSource<'a> {
    /// The folder whose files form the context.
    root: PathBuf,
    /// The Dockerfile's path inside `root`; the rewritten text takes its place.
    dockerfile: String,
    /// Top-level names of `root` left out (the skills folder, added per condition).
    leave_out: &'a [&'a str],
    /// A folder added as `skills/` (conditions with skills).
    skills: Option<PathBuf>,
    /// The condition's Dockerfile changes.
    rewrite: RewriteOptions,
    /// Build arguments, hashed into the tag.
    args: BTreeMap<String, String>,
    /// Tag up to the hash: `skillscope-task/<task>:<slug>`.
    tag_prefix: String,
}

/// Writes the build context of `task` under `condition` and hashes it. Blocking (reads the
/// whole `environment/` folder); run it on a blocking thread.
///
/// # Errors
/// [`RunnerError::Task`] for a missing Dockerfile or skills folder, a heredoc that cannot be
/// rewritten or a malformed `.dockerignore`; [`RunnerError::Io`] naming the unreadable file.
pub fn prepare_context(
    task: &Task,
    condition: &Condition,
    settings: &ImageSettings,
) -> Result<ContextPlan, RunnerError> {
    let skills = match condition {
        Condition::NoSkills | Condition::SelfGenerated(_) => None,
        Condition::Curated => Some(task.environment_dir().join("skills")),
        Condition::Skills { dir } => {
            if !dir.is_dir() {
                return Err(RunnerError::Task(format!(
                    "skills folder {} does not exist",
                    dir.display()
                )));
            }
            Some(dir.clone())
        }
        Condition::SkillsByTask { dir } => {
            if !dir.is_dir() {
                return Err(RunnerError::Task(format!(
                    "skills folder {} does not exist",
                    dir.display()
                )));
            }
            // A task without a subfolder gets an empty skills folder.
            Some(dir.join(&task.id))
        }
    };
    let mut slug = condition.slug();
    slug.truncate(40);
    let source = ContextSource {
        root: task.environment_dir(),
        dockerfile: "Dockerfile".into(),
        leave_out: &["skills"],
        skills,
        rewrite: RewriteOptions {
            strip_skill_copies: !condition.has_skills(),
            append_skill_destinations: if condition.has_skills() {
                SKILL_DESTINATIONS.iter().map(|s| s.to_string()).collect()
            } else {
                Vec::new()
            },
            ca_bundle_context_path: settings
                .ca_bundle
                .as_ref()
                .map(|_| CA_CONTEXT_PATH.to_string()),
        },
        args: BTreeMap::new(),
        tag_prefix: format!(
            "skillscope-task/{}:{}",
            docker_safe_name(&task.id),
            slug.trim_end_matches(['-', '.'])
        ),
    };
    write_context(&source, settings)
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
        leave_out: if at_env_root { &["skills"] } else { &[] },
        skills: None,
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
    let original = std::fs::read_to_string(&df_path).map_err(|e| {
        RunnerError::Task(format!(
            "missing or unreadable Dockerfile {}: {e}",
            df_path.display()
        ))
    })?;
    let rewrite = dockerfile::rewrite(&original, &source.rewrite);
    let heredocs = dockerfile::rewrite_heredocs(&rewrite.text).map_err(|errors| {
        RunnerError::Task(format!(
            "{}: heredocs the classic builder cannot run: {}",
            df_path.display(),
            errors.join("; ")
        ))
    })?;
    let mut changes = rewrite.changes;
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
    let (ignore, ignore_file) = read_dockerignore(root, &source.dockerfile)?;

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
    walk.append(&mut b, Path::new(""))?;
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

/// A ready image for a trial.
#[derive(Debug, Clone)]
pub struct ReadyImage {
    /// Image tag.
    pub tag: String,
    /// Context hash.
    pub hash: String,
    /// True when this call built it; false when it already existed.
    pub built: bool,
    /// Build log (or a note that the image was reused) for the trial folder.
    pub log: Arc<String>,
}

/// Why an image is not ready: the task's own build failed (its Dockerfile, its context, a skills
/// leak into a no-skills image) or an infrastructure fault got in the way.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildFailure {
    /// What failed, with the end of the build log.
    pub message: String,
    /// Set when the failure is an infrastructure fault (the attempt is re-queued and the build
    /// tried again), `None` when the task's build itself failed (a `build-error` verdict).
    pub fault: Option<super::Fault>,
}

impl BuildFailure {
    /// The task's own build failed.
    pub fn task(message: impl Into<String>) -> BuildFailure {
        BuildFailure {
            message: message.into(),
            fault: None,
        }
    }

    /// A runner error on the way: a fault when it is one.
    pub fn runner(context: &str, e: RunnerError) -> BuildFailure {
        BuildFailure {
            fault: e.fault(),
            message: format!("{context}: {e}"),
        }
    }
}

impl std::fmt::Display for BuildFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Result of a build, shared by every trial waiting on it.
type BuildOutcome = Result<ReadyImage, BuildFailure>;

/// A value computed once and shared by everyone who asks for the same key.
type Shared<T> = Arc<OnceCell<T>>;
/// Key → once-computed value.
type OnceMap<K, T> = Mutex<HashMap<K, Shared<T>>>;

/// Per-process cache of prepared contexts and built images, so the trials of one task × condition
/// build once even when they start together, and a failed build is reported to each of them
/// without rebuilding (until [`ImageCache::forget_failures`]).
#[derive(Default)]
pub struct ImageCache {
    settings: ImageSettings,
    plans: OnceMap<(String, String), Result<Arc<ContextPlan>, BuildFailure>>,
    builds: OnceMap<(String, String), BuildOutcome>,
    base: OnceMap<String, Result<(), BuildFailure>>,
}

impl ImageCache {
    /// A cache using these build settings.
    pub fn new(settings: ImageSettings) -> ImageCache {
        ImageCache {
            settings,
            ..Default::default()
        }
    }

    /// Drops cached failures so the next request builds again (used by retries).
    pub async fn forget_failures(&self) {
        let mut plans = self.plans.lock().await;
        plans.retain(|_, cell| !matches!(cell.get(), Some(Err(_))));
        let mut builds = self.builds.lock().await;
        builds.retain(|_, cell| !matches!(cell.get(), Some(Err(_))));
    }

    /// The image of `task` × `condition` on `host`: reused when the tag exists, built otherwise.
    /// A self-generated condition gets the no-skills image ([`Condition::image_condition`]). An
    /// image without skills is also checked for leaked skills.
    ///
    /// # Errors
    /// [`BuildFailure`]: the task's own failure (the build's, the context's or the leak guard's
    /// message), the same for every trial of the pair until [`ImageCache::forget_failures`]; or
    /// an infrastructure fault, which is not kept (the next attempt builds again).
    pub async fn ensure(
        &self,
        host: &DockerHost,
        task: &Arc<Task>,
        condition: &Condition,
        timeout: Duration,
    ) -> BuildOutcome {
        let condition = condition.image_condition();
        let plan = self.plan(task, condition).await?;
        self.build_plan(host, &plan, task, timeout, !condition.has_skills())
            .await
    }

    async fn plan(
        &self,
        task: &Arc<Task>,
        condition: &Condition,
    ) -> Result<Arc<ContextPlan>, BuildFailure> {
        let (t, c, settings) = (task.clone(), condition.clone(), self.settings.clone());
        self.plan_with((task.id.clone(), condition.key()), move || {
            prepare_context(&t, &c, &settings)
        })
        .await
    }

    /// The context plan under `key`, prepared once on a blocking thread.
    async fn plan_with(
        &self,
        key: (String, String),
        prepare: impl FnOnce() -> Result<ContextPlan, RunnerError> + Send + 'static,
    ) -> Result<Arc<ContextPlan>, BuildFailure> {
        let cell = {
            let mut plans = self.plans.lock().await;
            plans.entry(key.clone()).or_default().clone()
        };
        let result = cell
            .get_or_init(|| async {
                tokio::task::spawn_blocking(prepare)
                    .await
                    .map_err(|e| BuildFailure::task(format!("preparing the build context: {e}")))
                    .and_then(|r| {
                        r.map_err(|e| match e.fault() {
                            Some(_) => BuildFailure::runner("preparing the build context", e),
                            None => BuildFailure::task(e.to_string()),
                        })
                    })
                    .map(Arc::new)
            })
            .await
            .clone();
        if matches!(&result, Err(f) if f.fault.is_some()) {
            forget_cell(&self.plans, &key, &cell).await;
        }
        result
    }

    /// The image of compose service `service` of `task` on `host`, built from `build` (or reused
    /// by its context hash, like a task image; skills are never part of it).
    ///
    /// # Errors
    /// As [`ImageCache::ensure`].
    pub async fn ensure_service(
        &self,
        host: &DockerHost,
        task: &Arc<Task>,
        service: &str,
        build: &BuildDef,
        timeout: Duration,
    ) -> BuildOutcome {
        let key = (
            task.id.clone(),
            format!(
                "service {service} {} {} {:?}",
                build.context.display(),
                build.dockerfile,
                build.args
            ),
        );
        let (t, svc, b, settings) = (
            task.clone(),
            service.to_string(),
            build.clone(),
            self.settings.clone(),
        );
        let plan = self
            .plan_with(key, move || {
                prepare_service_context(&t, &svc, &b, &settings)
            })
            .await?;
        self.build_plan(host, &plan, task, timeout, false).await
    }

    /// Builds (or reuses) a prepared plan once per host and tag; with `check_leaks` the image
    /// must hold no skills (the no-skills condition).
    async fn build_plan(
        &self,
        host: &DockerHost,
        plan: &Arc<ContextPlan>,
        task: &Arc<Task>,
        timeout: Duration,
        check_leaks: bool,
    ) -> BuildOutcome {
        let key = (host.name.clone(), plan.tag.clone());
        let cell = {
            let mut builds = self.builds.lock().await;
            builds.entry(key.clone()).or_default().clone()
        };
        let result = cell
            .get_or_init(|| async {
                for from in &plan.from_images {
                    if base_image::is_own_base_image(from) {
                        self.ensure_base(host, from).await?;
                    }
                }
                let ready = build_or_reuse(host, plan, &task.id, timeout).await?;
                if check_leaks {
                    leak_guard(host, &ready.tag).await?;
                }
                Ok(ready)
            })
            .await
            .clone();
        if matches!(&result, Err(f) if f.fault.is_some()) {
            forget_cell(&self.builds, &key, &cell).await;
        }
        result
    }

    async fn ensure_base(&self, host: &DockerHost, image: &str) -> Result<(), BuildFailure> {
        let key = format!("{}|{image}", host.name);
        let cell = {
            let mut base = self.base.lock().await;
            base.entry(key.clone()).or_default().clone()
        };
        let result = cell
            .get_or_init(|| async {
                base_image::ensure_busybox(&host.docker)
                    .await
                    .map_err(|e| match e.fault() {
                        Some(_) => BuildFailure::runner(&format!("base image {image}"), e),
                        None => BuildFailure::task(e.to_string()),
                    })
            })
            .await
            .clone();
        if matches!(&result, Err(f) if f.fault.is_some()) {
            forget_cell(&self.base, &key, &cell).await;
        }
        result
    }
}

/// Drops `cell` from `map` (a fault is not a result to keep), unless another caller already
/// replaced it.
async fn forget_cell<K: std::hash::Hash + Eq, T>(map: &OnceMap<K, T>, key: &K, cell: &Shared<T>) {
    let mut m = map.lock().await;
    if m.get(key).is_some_and(|c| Arc::ptr_eq(c, cell)) {
        m.remove(key);
    }
}

async fn build_or_reuse(
    host: &DockerHost,
    plan: &ContextPlan,
    task_id: &str,
    timeout: Duration,
) -> BuildOutcome {
    // The log says what the condition changed in the Dockerfile, built or reused alike.
    let changes: String = plan
        .changes
        .iter()
        .map(|c| format!("dockerfile: {c}\n"))
        .collect();
    if host.docker.inspect_image(&plan.tag).await.is_ok() {
        return Ok(ReadyImage {
            tag: plan.tag.clone(),
            hash: plan.hash.clone(),
            built: false,
            log: Arc::new(format!(
                "reused image {} (context sha256 {})\n{changes}",
                plan.tag, plan.hash
            )),
        });
    }
    let mut log = format!(
        "building {} (context sha256 {})\n{changes}",
        plan.tag, plan.hash
    );
    let file = tokio::fs::File::open(plan.tar.path()).await.map_err(|e| {
        BuildFailure::runner(
            "opening the build context",
            RunnerError::io(plan.tar.path(), e),
        )
    })?;
    let body = bollard::body_try_stream(tokio_util::io::ReaderStream::new(file));
    let options = BuildImageOptions {
        dockerfile: plan.dockerfile_path.clone(),
        buildargs: (!plan.build_args.is_empty()).then(|| {
            plan.build_args
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        }),
        t: Some(plan.tag.clone()),
        rm: true,
        forcerm: true,
        labels: Some(HashMap::from([
            (labels::MANAGED.to_string(), "1".to_string()),
            (labels::CONTENT_HASH.to_string(), plan.hash.clone()),
            ("skillscope.task".to_string(), task_id.to_string()),
        ])),
        ..Default::default()
    };
    // A failing step's message is the task's build error unless it names an infrastructure
    // fault (a full disk, the layer store); a broken API call is always a fault.
    let build = async {
        let mut stream = host.docker.build_image(options, None, Some(body));
        while let Some(item) = stream.next().await {
            match item {
                Ok(info) => {
                    if let Some(s) = info.stream {
                        log.push_str(&s);
                    }
                    if let Some(e) = info.error_detail.and_then(|d| d.message) {
                        return Err((super::Fault::of_message(&e), e));
                    }
                }
                // A failing step arrives as a stream error carrying the builder's message.
                Err(bollard::errors::Error::DockerStreamError { error }) => {
                    return Err((super::Fault::of_message(&error), error));
                }
                Err(e) => return Err((Some(super::Fault::of_docker(&e)), e.to_string())),
            }
        }
        Ok(())
    };
    let result = match tokio::time::timeout(timeout, build).await {
        Ok(r) => r,
        Err(_) => Err((
            None,
            format!(
                "timed out after {:.0}s ([environment] build_timeout_sec)",
                timeout.as_secs_f64()
            ),
        )),
    };

    match result {
        Ok(()) => Ok(ReadyImage {
            tag: plan.tag.clone(),
            hash: plan.hash.clone(),
            built: true,
            log: Arc::new(log),
        }),
        Err((fault, e)) => {
            let tail: String = {
                let lines: Vec<&str> = log.lines().collect();
                lines[lines.len().saturating_sub(30)..].join("\n")
            };
            Err(BuildFailure {
                message: format!("{e}\n--- build log (last lines) ---\n{tail}"),
                fault,
            })
        }
    }
}

/// Fails when a no-skills image holds any `SKILL.md` or any file in a harness skills folder.
/// `SKILL.md` files that installed packages ship inside `site-packages`, `dist-packages` or
/// `node_modules` (the `typer` wheel carries one) are a library's, not the task's skills, and are
/// not counted.
async fn leak_guard(host: &DockerHost, tag: &str) -> Result<(), BuildFailure> {
    let dests = SKILL_DESTINATIONS.join(" ");
    let script = format!(
        "find / -xdev -name SKILL.md -not -path '*/site-packages/*' -not -path '*/dist-packages/*' -not -path '*/node_modules/*' 2>/dev/null | head -n 5; \
         for d in {dests} /etc/claude-code/.claude/skills; do [ -d \"$d\" ] && find \"$d\" -type f 2>/dev/null | head -n 5; done; true"
    );
    let spec = host.helper_spec(tag, "leak-check");
    let what = format!("leak check of {tag}");
    let c = TrialContainer::start(&host.docker, &spec)
        .await
        .map_err(|e| BuildFailure::runner(&what, e))?;
    let r = c.sh_output(&script, Duration::from_secs(120)).await;
    c.remove().await;
    let (_, found) = r.map_err(|e| BuildFailure::runner(&what, e))?;
    let found: Vec<&str> = found.lines().filter(|l| !l.trim().is_empty()).collect();
    if found.is_empty() {
        Ok(())
    } else {
        Err(BuildFailure::task(format!(
            "skills leak into the no-skills image {tag}: {}",
            found.join(", ")
        )))
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
