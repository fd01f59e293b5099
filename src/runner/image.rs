//! Task images: the build context per condition, its content hash, build-or-reuse, and the
//! no-skills leak guard.
//!
//! The context is `environment/` as a deterministic tar (sorted, times and owners zeroed) with:
//! the Dockerfile rewritten for the condition ([`crate::bench::dockerfile`]); `skills/` left out
//! (no-skills), the task's own (curated) or the condition's folder (`skills:<dir>`); and the extra
//! CA bundle when one is set. The image tag carries the first 12 hex digits of the tar's SHA-256,
//! so an unchanged task × condition reuses its image across trials, runs and restarts.

use std::collections::HashMap;
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
use crate::bench::condition::docker_safe_name;
use crate::bench::dockerfile::{self, RewriteOptions, SKILL_DESTINATIONS};
use crate::bench::{Condition, Task};

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
    /// Image tag, `skillscope-task/<task>:<condition>-<hash12>`.
    pub tag: String,
    /// SHA-256 of the context tar, hex.
    pub hash: String,
    /// The rewritten Dockerfile.
    pub dockerfile: String,
    /// What the rewrite changed.
    pub changes: Vec<String>,
    /// Images named in `FROM` lines.
    pub from_images: Vec<String>,
    /// The context tar on disk (deleted when the plan is dropped).
    pub tar: tempfile::NamedTempFile,
}

/// Writes the build context of `task` under `condition` and hashes it. Blocking (reads the
/// whole `environment/` folder); run it on a blocking thread.
///
/// # Errors
/// [`RunnerError::Task`] for a missing Dockerfile or skills folder; [`RunnerError::Io`] naming
/// the unreadable file.
pub fn prepare_context(
    task: &Task,
    condition: &Condition,
    settings: &ImageSettings,
) -> Result<ContextPlan, RunnerError> {
    let env_dir = task.environment_dir();
    let df_path = task.dockerfile();
    let original = std::fs::read_to_string(&df_path).map_err(|e| {
        RunnerError::Task(format!(
            "missing or unreadable Dockerfile {}: {e}",
            df_path.display()
        ))
    })?;
    let skills_src: Option<PathBuf> = match condition {
        Condition::NoSkills | Condition::SelfGenerated(_) => None,
        Condition::Curated => Some(env_dir.join("skills")),
        Condition::Skills { dir } => Some(dir.clone()),
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
    let opts = RewriteOptions {
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
    };
    let rewrite = dockerfile::rewrite(&original, &opts);
    let from_images = dockerfile::parse_instructions(&rewrite.text)
        .into_iter()
        .filter(|i| i.keyword == "FROM")
        .filter_map(|i| {
            i.args
                .split_whitespace()
                .find(|w| !w.starts_with("--"))
                .map(str::to_string)
        })
        .collect();

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
    // environment/ minus Dockerfile and skills/.
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&env_dir)
        .map_err(io(&env_dir))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name == "Dockerfile" || name == "skills" {
            continue;
        }
        append_path(&mut b, &p, Path::new(&name))?;
    }
    append_bytes(&mut b, "Dockerfile", rewrite.text.as_bytes(), 0o644).map_err(io(&df_path))?;
    if let Some(src) = &skills_src {
        append_dir_entry(&mut b, "skills/").map_err(io(src))?;
        if src.is_dir() {
            append_path(&mut b, src, Path::new("skills"))?;
        } else if matches!(condition, Condition::Skills { .. }) {
            return Err(RunnerError::Task(format!(
                "skills folder {} does not exist",
                src.display()
            )));
        }
    }
    if let Some(ca) = &settings.ca_bundle {
        let pem = std::fs::read(ca).map_err(io(ca))?;
        append_bytes(&mut b, CA_CONTEXT_PATH, &pem, 0o644).map_err(io(ca))?;
    }
    let hasher = b.into_inner().map_err(io(tar_file.path()))?;
    let HashingWriter { mut inner, hash } = hasher;
    inner.flush().map_err(io(tar_file.path()))?;
    let hash = hex::encode(hash.finalize());
    let mut slug = condition.slug();
    slug.truncate(40);
    let tag = format!(
        "skillscope-task/{}:{}-{}",
        docker_safe_name(&task.id),
        slug.trim_end_matches(['-', '.']),
        &hash[..12]
    );
    Ok(ContextPlan {
        tag,
        hash,
        dockerfile: rewrite.text,
        changes: rewrite.changes,
        from_images,
        tar: tar_file,
    })
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
                let ready = build_or_reuse(host, &plan, &task.id, timeout).await?;
                if !condition.has_skills() {
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

    async fn plan(
        &self,
        task: &Arc<Task>,
        condition: &Condition,
    ) -> Result<Arc<ContextPlan>, BuildFailure> {
        let cell = {
            let mut plans = self.plans.lock().await;
            plans
                .entry((task.id.clone(), condition.key()))
                .or_default()
                .clone()
        };
        cell.get_or_init(|| async {
            let (task, condition, settings) =
                (task.clone(), condition.clone(), self.settings.clone());
            tokio::task::spawn_blocking(move || prepare_context(&task, &condition, &settings))
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
        .clone()
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
async fn leak_guard(host: &DockerHost, tag: &str) -> Result<(), BuildFailure> {
    let dests = SKILL_DESTINATIONS.join(" ");
    let script = format!(
        "find / -xdev -name SKILL.md 2>/dev/null | head -n 5; \
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
