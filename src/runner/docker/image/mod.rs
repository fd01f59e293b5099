//! Task images: build-or-reuse of each task × condition's image, the no-skills leak guard, the
//! verifier's copies of skills, and the images of a compose task's extra services.
//!
//! A condition's image is planned in [`context`]: the no-skills image from the task's own
//! Dockerfile (its agent skill copies left out, those a build step reads kept for it and removed
//! before the agent starts, the verifier's in a stage of their own), and a condition with skills as
//! that image plus its skills as the last layers — or, when a build step reads the task's skills,
//! the whole Dockerfile with them in place. So the task's own steps build once for every condition.
//! Each image is built once per host and tag, even when several trials (or a build ahead of them)
//! ask at once; every build's seconds are recorded ([`ImageBuild`]).

pub mod context;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bollard::query_parameters::BuildImageOptions;
use futures_util::StreamExt;
use tokio::sync::{Mutex, OnceCell, Semaphore};

pub use context::{
    CA_CONTEXT_PATH, ContextPlan, ImagePlan, ImageSettings, VerifierStage, layered, prepare_base,
    prepare_context, prepare_in_place, prepare_layer, prepare_service_context, skill_lines,
};

use super::base_image;
use super::container::DockerContainer;
use super::host::DockerHost;
use crate::runner::image::{BuildFailure, BuildOutcome, ImageBuild, ReadyImage, VerifierFiles};
use crate::runner::sandbox::Sandbox;
use crate::runner::{Fault, RunnerError, labels};
use crate::skillsbench::compose::BuildDef;
use crate::skillsbench::dockerfile::SKILL_DESTINATIONS;
use crate::skillsbench::{Condition, Task};

/// A value computed once and shared by everyone who asks for the same key.
type Shared<T> = Arc<OnceCell<T>>;
/// Key → once-computed value.
type OnceMap<K, T> = Mutex<HashMap<K, Shared<T>>>;

/// Most bytes of the verifier's copies of skills read out of an image.
const MAX_VERIFIER_COPY: u64 = 256 * 1024 * 1024;

/// Per-process cache of prepared contexts and built images, so the trials of one task × condition
/// build once even when they start together, and a failed build is reported to each of them
/// without rebuilding (until [`ImageCache::forget_failures`]).
#[derive(Default)]
pub struct ImageCache {
    settings: ImageSettings,
    plans: OnceMap<(String, String), Result<Arc<ContextPlan>, BuildFailure>>,
    builds: OnceMap<(String, String), BuildOutcome>,
    checks: OnceMap<(String, String), Result<(), BuildFailure>>,
    verifier: OnceMap<(String, String), Result<Arc<VerifierFiles>, BuildFailure>>,
    base: OnceMap<String, Result<(), BuildFailure>>,
    /// Per host: one permit per CPU, held while an image builds (trials' builds and builds ahead
    /// of them alike), so builds stay within the host's CPUs.
    slots: std::sync::Mutex<HashMap<String, Arc<Semaphore>>>,
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
        let mut checks = self.checks.lock().await;
        checks.retain(|_, cell| !matches!(cell.get(), Some(Err(_))));
        let mut verifier = self.verifier.lock().await;
        verifier.retain(|_, cell| !matches!(cell.get(), Some(Err(_))));
    }

    /// The image of `task` × `condition` on `host`: reused when the tag exists, built otherwise
    /// (the no-skills image first when the condition's skills are layered over it). A
    /// self-generated condition gets the no-skills image ([`Condition::image_condition`]). An
    /// image without skills is also checked for leaked skills; the verifier's copies of skills,
    /// when the task has any, are read out of its verifier stage.
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
        let own = self.build_plan(host, plan.own(), task, timeout).await?;
        let mut ready = match &plan {
            ImagePlan::Single(_) => own,
            ImagePlan::Layered { layer, .. } => {
                let top = self.build_plan(host, layer, task, timeout).await?;
                let mut builds = own.builds.clone();
                builds.extend(top.builds.iter().cloned());
                ReadyImage {
                    log: Arc::new(format!("{}\n{}", own.log, top.log)),
                    builds,
                    ..top
                }
            }
        };
        if !condition.has_skills() {
            self.check_leaks(host, &ready.tag).await?;
        }
        if plan.own().verifier.is_some() {
            ready.verifier_files =
                Some(self.verifier_files(host, plan.own(), task, timeout).await?);
        }
        Ok(ready)
    }

    /// The plan of `condition`'s image (its no-skills base prepared once per task).
    ///
    /// # Errors
    /// [`BuildFailure`] when a context cannot be prepared (as [`prepare_context`]).
    pub async fn plan(
        &self,
        task: &Arc<Task>,
        condition: &Condition,
    ) -> Result<ImagePlan, BuildFailure> {
        let (t, settings) = (task.clone(), self.settings.clone());
        let base = self
            .plan_with((task.id.clone(), "no-skills".into()), move || {
                prepare_base(&t, &settings)
            })
            .await?;
        if !condition.has_skills() {
            return Ok(ImagePlan::Single(base));
        }
        let t = task.clone();
        let lines = tokio::task::spawn_blocking(move || skill_lines(&t))
            .await
            .map_err(|e| BuildFailure::task(format!("reading the Dockerfile: {e}")))?
            .map_err(|e| BuildFailure::task(e.to_string()))?;
        let (t, c, settings) = (task.clone(), condition.clone(), self.settings.clone());
        let key = (task.id.clone(), condition.key());
        if layered(condition, &lines) {
            let b = base.clone();
            let layer = self
                .plan_with(key, move || prepare_layer(&t, &c, &b, &settings))
                .await?;
            Ok(ImagePlan::Layered { base, layer })
        } else {
            let whole = self
                .plan_with(key, move || prepare_in_place(&t, &c, &settings))
                .await?;
            Ok(ImagePlan::Single(whole))
        }
    }

    /// The context plan under `key`, prepared once on a blocking thread.
    async fn plan_with(
        &self,
        key: (String, String),
        prepare: impl FnOnce() -> Result<ContextPlan, RunnerError> + Send + 'static,
    ) -> Result<Arc<ContextPlan>, BuildFailure> {
        once(&self.plans, key, || async {
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
        self.build_plan(host, &plan, task, timeout).await
    }

    /// Builds (or reuses) a prepared plan once per host and tag.
    async fn build_plan(
        &self,
        host: &DockerHost,
        plan: &Arc<ContextPlan>,
        task: &Arc<Task>,
        timeout: Duration,
    ) -> BuildOutcome {
        let key = (host.name.clone(), plan.tag.clone());
        once(&self.builds, key, || async {
            for from in &plan.from_images {
                if base_image::is_own_base_image(from) {
                    self.ensure_base(host, from).await?;
                }
            }
            build_or_reuse(host, plan, &task.id, timeout, None, &self.slots(host)).await
        })
        .await
    }

    /// The build permits of `host`: as many as it has CPUs.
    fn slots(&self, host: &DockerHost) -> Arc<Semaphore> {
        self.slots
            .lock()
            .expect("lock")
            .entry(host.name.clone())
            .or_insert_with(|| Arc::new(Semaphore::new(host.ncpu.max(1) as usize)))
            .clone()
    }

    /// The no-skills leak guard on `tag`, once per host and tag.
    async fn check_leaks(&self, host: &DockerHost, tag: &str) -> Result<(), BuildFailure> {
        let key = (host.name.clone(), tag.to_string());
        once(&self.checks, key, || leak_guard(host, tag)).await
    }

    /// The verifier's copies of skills of `plan`'s image, read out of its verifier stage (built
    /// from the same context, tagged `…:verifier-<hash12>`), once per host and image.
    async fn verifier_files(
        &self,
        host: &DockerHost,
        plan: &Arc<ContextPlan>,
        task: &Arc<Task>,
        timeout: Duration,
    ) -> Result<Arc<VerifierFiles>, BuildFailure> {
        let key = (host.name.clone(), plan.tag.clone());
        once(&self.verifier, key, || async {
            let stage = plan.verifier.clone().unwrap_or(VerifierStage {
                target: String::new(),
                paths: Vec::new(),
            });
            let repo = plan
                .tag
                .rsplit_once(':')
                .map_or(plan.tag.as_str(), |(r, _)| r);
            let tag = format!("{repo}:verifier-{}", &plan.hash[..12]);
            let slots = self.slots(host);
            build_or_reuse(
                host,
                plan,
                &task.id,
                timeout,
                Some((&stage.target, &tag)),
                &slots,
            )
            .await?;
            read_verifier_copies(host, &tag, &stage.paths).await
        })
        .await
    }

    async fn ensure_base(&self, host: &DockerHost, image: &str) -> Result<(), BuildFailure> {
        let key = format!("{}|{image}", host.name);
        once(&self.base, key, || async {
            base_image::ensure_busybox(&host.docker)
                .await
                .map_err(|e| match e.fault() {
                    Some(_) => BuildFailure::runner(&format!("base image {image}"), e),
                    None => BuildFailure::task(e.to_string()),
                })
        })
        .await
    }
}

/// Reads `paths` out of image `tag` (a helper container) as Docker archives them.
async fn read_verifier_copies(
    host: &DockerHost,
    tag: &str,
    paths: &[String],
) -> Result<Arc<VerifierFiles>, BuildFailure> {
    let what = format!("reading the verifier's copies of skills out of {tag}");
    let shell = super::static_shell::ensure(host)
        .await
        .map_err(|e| BuildFailure::runner(&what, e))?;
    let spec = host.helper_spec(tag, "verifier-copy", &shell);
    let c = DockerContainer::start(&host.docker, &spec)
        .await
        .map_err(|e| BuildFailure::runner(&what, e))?;
    let sandbox = Sandbox::new(Arc::new(c.clone()));
    let mut files = VerifierFiles::default();
    let mut result = Ok(());
    for p in paths {
        match sandbox.download_tar(p, MAX_VERIFIER_COPY).await {
            Ok((_, true)) => {
                result = Err(BuildFailure::task(format!(
                    "the verifier's copy {p} in {tag} is larger than {} MiB",
                    MAX_VERIFIER_COPY >> 20
                )));
                break;
            }
            Ok((tar, false)) => files.copies.push((p.clone(), Arc::new(tar))),
            Err(e) => {
                result = Err(BuildFailure::runner(&what, e));
                break;
            }
        }
    }
    c.remove_now().await;
    result.map(|()| Arc::new(files))
}

/// The value under `key` in `map`, computed once by `init` and shared by every caller; a fault
/// is not kept (the next caller computes again), the task's own failure is.
async fn once<K, T, F>(
    map: &OnceMap<K, Result<T, BuildFailure>>,
    key: K,
    init: impl FnOnce() -> F,
) -> Result<T, BuildFailure>
where
    K: std::hash::Hash + Eq + Clone,
    T: Clone,
    F: std::future::Future<Output = Result<T, BuildFailure>>,
{
    let cell = {
        let mut m = map.lock().await;
        m.entry(key.clone()).or_default().clone()
    };
    let result = cell.get_or_init(init).await.clone();
    if matches!(&result, Err(f) if f.fault.is_some()) {
        forget_cell(map, &key, &cell).await;
    }
    result
}

/// Drops `cell` from `map` (a fault is not a result to keep), unless another caller already
/// replaced it.
async fn forget_cell<K: std::hash::Hash + Eq, T>(map: &OnceMap<K, T>, key: &K, cell: &Shared<T>) {
    let mut m = map.lock().await;
    if m.get(key).is_some_and(|c| Arc::ptr_eq(c, cell)) {
        m.remove(key);
    }
}

/// Builds `plan` as `plan.tag` unless that image exists; with `stage = Some((target, tag))`, its
/// build stage `target` as `tag` instead. A build holds one of the host's `slots` (its seconds
/// are counted from when it got one); a reuse holds none.
async fn build_or_reuse(
    host: &DockerHost,
    plan: &ContextPlan,
    task_id: &str,
    timeout: Duration,
    stage: Option<(&str, &str)>,
    slots: &Semaphore,
) -> BuildOutcome {
    let tag = stage.map_or(plan.tag.as_str(), |(_, t)| t).to_string();
    // The log says what the condition changed in the Dockerfile, built or reused alike.
    let changes: String = plan
        .changes
        .iter()
        .map(|c| format!("dockerfile: {c}\n"))
        .collect();
    if host.docker.inspect_image(&tag).await.is_ok() {
        return Ok(ReadyImage {
            builds: vec![ImageBuild {
                tag: tag.clone(),
                seconds: 0.0,
                built: false,
            }],
            log: Arc::new(format!(
                "reused image {tag} (context sha256 {})\n{changes}",
                plan.hash
            )),
            tag,
            hash: plan.hash.clone(),
            built: false,
            verifier_files: None,
        });
    }
    let _slot = slots
        .acquire()
        .await
        .map_err(|e| BuildFailure::task(format!("build slots closed: {e}")))?;
    let started = Instant::now();
    let mut log = format!("building {tag} (context sha256 {})\n{changes}", plan.hash);
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
        t: Some(tag.clone()),
        target: stage.map(|(t, _)| t.to_string()).unwrap_or_default(),
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
                        return Err((Fault::of_message(&e), e));
                    }
                }
                // A failing step arrives as a stream error carrying the builder's message.
                Err(bollard::errors::Error::DockerStreamError { error }) => {
                    return Err((Fault::of_message(&error), error));
                }
                Err(e) => return Err((Some(super::fault::fault_of(&e)), e.to_string())),
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
    let seconds = started.elapsed().as_secs_f64();
    match result {
        Ok(()) => {
            log.push_str(&format!("built {tag} in {seconds:.1} s\n"));
            Ok(ReadyImage {
                builds: vec![ImageBuild {
                    tag: tag.clone(),
                    seconds,
                    built: true,
                }],
                tag,
                hash: plan.hash.clone(),
                built: true,
                log: Arc::new(log),
                verifier_files: None,
            })
        }
        Err((fault, e)) => {
            let tail: String = {
                let lines: Vec<&str> = log.lines().collect();
                lines[lines.len().saturating_sub(30)..].join("\n")
            };
            Err(BuildFailure {
                message: format!("{e}\n--- build log (last lines) ---\n{tail}"),
                fault,
                log: Some(Arc::new(log)),
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
    let what = format!("leak check of {tag}");
    let shell = super::static_shell::ensure(host)
        .await
        .map_err(|e| BuildFailure::runner(&what, e))?;
    let spec = host.helper_spec(tag, "leak-check", &shell);
    let c = DockerContainer::start(&host.docker, &spec)
        .await
        .map_err(|e| BuildFailure::runner(&what, e))?;
    let r = Sandbox::new(Arc::new(c.clone()))
        .sh_output(&script, Duration::from_secs(120))
        .await;
    c.remove_now().await;
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
