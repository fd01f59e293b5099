//! An in-memory backend, for offline tests of the engine: hosts that can be taken down and
//! brought back, environments with a filesystem of their own, and execs whose effect a test
//! scripts ([`FakeScript`]). The real trial protocol runs on it unchanged — the agent's exec,
//! every process ended, the changes read and sorted, the verifier's environment fresh from the
//! image with the work carried in, the reward copied out — so dispatch, attempts, retries,
//! failover, cancels and stops are tested without Docker.
//!
//! What an exec does is told by its command: skillscope's own scripts (ending processes, reading
//! changes, listing folders, deleting) are carried out on the filesystem; the oracle's
//! `solve.sh` and the verifier's `test.sh` do what the script says for the trial; anything else
//! exits 0.

mod env;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use super::backend::{
    Backend, BackendKind, Capacity, Environment, EnvironmentSpec, Host, Mount, MountSource, Place,
    SiteError, SiteSpec, Sweep, TrialSite,
};
use super::image::{BuildOutcome, ImageFacts, ReadyImage};
use super::work::{Manifest, Toolchain};
use super::{Fault, RunnerError, labels};
use crate::skillsbench::{Condition, Task};
pub use env::{FakeEnvironment, FakeFs, Node};

/// The phase of a trial a scripted fault strikes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FakePhase {
    /// Building the image.
    Image,
    /// Starting the agent's environment.
    Start,
    /// During the agent's exec (its stream is cut).
    Agent,
    /// During the verifier's exec.
    Verifier,
}

/// What the verifier's `test.sh` does.
#[derive(Debug, Clone, PartialEq)]
pub enum FakeVerdict {
    /// Writes this to `/logs/verifier/reward.txt`.
    Reward(String),
    /// Writes 1 when the file holds the text (the agent's work carried over), else 0.
    RewardIfFile(String, String),
    /// Writes no reward.
    NoReward,
}

/// What one trial does on the fake backend.
#[derive(Debug, Clone)]
pub struct FakeTrial {
    /// How long the agent's exec takes.
    pub agent: Duration,
    /// Files the agent writes (path, content).
    pub writes: Vec<(String, String)>,
    /// The agent's exit code.
    pub exit: i64,
    /// What the verifier does.
    pub verdict: FakeVerdict,
    /// An infrastructure fault, and where it strikes.
    pub fault: Option<(FakePhase, Fault)>,
    /// The agent leaves a process running (the kill ends it).
    pub leaves_process: bool,
    /// The site lets the verifier's environment start beside the agent's
    /// ([`TrialSite::verifier_may_wait`], as a Docker trial without services does).
    pub verifier_waits: bool,
}

impl FakeTrial {
    /// A trial that passes in `agent` time.
    pub fn pass(agent: Duration) -> FakeTrial {
        FakeTrial {
            agent,
            writes: Vec::new(),
            exit: 0,
            verdict: FakeVerdict::Reward("1".into()),
            fault: None,
            leaves_process: false,
            verifier_waits: false,
        }
    }

    /// A trial that fails (reward 0) in `agent` time.
    pub fn fail(agent: Duration) -> FakeTrial {
        FakeTrial {
            verdict: FakeVerdict::Reward("0".into()),
            ..FakeTrial::pass(agent)
        }
    }
}

/// Who asks: the trial an exec or a build belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeCall {
    /// The host's index.
    pub host: usize,
    /// The task.
    pub task: String,
    /// The trial's name.
    pub trial: String,
    /// The attempt's row id.
    pub attempt_id: i64,
}

/// What each trial does, by test.
pub trait FakeScript: Send + Sync {
    /// The behaviour of the trial `call` belongs to.
    fn trial(&self, call: &FakeCall) -> FakeTrial;
}

impl<F: Fn(&FakeCall) -> FakeTrial + Send + Sync> FakeScript for F {
    fn trial(&self, call: &FakeCall) -> FakeTrial {
        self(call)
    }
}

/// What a fake host counts, for tests to assert on.
#[derive(Debug, Default)]
pub struct FakeCounts {
    /// Environments started.
    pub started: AtomicUsize,
    /// Environments alive now.
    pub alive: AtomicUsize,
    /// The most agent environments alive at once.
    pub peak_agents: AtomicUsize,
    /// Agent environments alive now.
    pub agents: AtomicUsize,
    /// Environments removed by a sweep.
    pub swept: AtomicUsize,
}

/// A live environment, with the run uid and attempt id it carries.
type Alive = (Arc<FakeEnvironment>, String, i64);

/// One fake host.
pub struct FakeHost {
    index: usize,
    name: String,
    slots: usize,
    cpus: u32,
    up: AtomicBool,
    script: Arc<dyn FakeScript>,
    /// What it counts.
    pub counts: FakeCounts,
    /// Environments by id.
    envs: Mutex<BTreeMap<String, Alive>>,
}

impl FakeHost {
    /// Takes the host down (`false`: every call fails as an unreachable daemon's would, and
    /// running execs are cut) or brings it back.
    pub fn set_up(&self, up: bool) {
        self.up.store(up, Ordering::SeqCst);
    }

    /// True while the host answers.
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::SeqCst)
    }

    fn down_error(&self, what: &str) -> RunnerError {
        RunnerError::Backend {
            context: format!("{what} on {}", self.name),
            message: "connection refused".into(),
            fault: Fault::DaemonUnreachable,
        }
    }

    fn call(&self, labels: &BTreeMap<String, String>) -> FakeCall {
        let trial = labels.get(labels::TRIAL).cloned().unwrap_or_default();
        FakeCall {
            host: self.index,
            task: trial.split("__").next().unwrap_or_default().to_string(),
            trial,
            attempt_id: labels
                .get(labels::ATTEMPT_ID)
                .and_then(|a| a.parse().ok())
                .unwrap_or(0),
        }
    }

    fn forget(&self, id: &str) {
        if let Some((env, _, _)) = self.envs.lock().expect("lock").remove(id) {
            self.counts.alive.fetch_sub(1, Ordering::SeqCst);
            if env.is_agent() {
                self.counts.agents.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}

/// The fake backend: `n` hosts of `slots` trials each.
pub struct FakeBackend {
    hosts: Vec<Arc<FakeHost>>,
}

impl FakeBackend {
    /// `n` hosts (`fake-0`, …) of `slots` trials and 2 CPUs each, every trial passing at once.
    pub fn new(n: usize, slots: usize) -> FakeBackend {
        FakeBackend::scripted(
            n,
            slots,
            Arc::new(|_: &FakeCall| FakeTrial::pass(Duration::ZERO)),
        )
    }

    /// `n` hosts of `slots` trials each, trials doing what `script` says.
    pub fn scripted(n: usize, slots: usize, script: Arc<dyn FakeScript>) -> FakeBackend {
        FakeBackend {
            hosts: (0..n)
                .map(|index| {
                    Arc::new(FakeHost {
                        index,
                        name: format!("fake-{index}"),
                        slots,
                        cpus: 2,
                        up: AtomicBool::new(true),
                        script: script.clone(),
                        counts: FakeCounts::default(),
                        envs: Mutex::default(),
                    })
                })
                .collect(),
        }
    }

    /// Host `i`.
    pub fn host(&self, i: usize) -> &Arc<FakeHost> {
        &self.hosts[i]
    }
}

#[async_trait]
impl Backend for FakeBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Fake
    }

    fn places(&self) -> Vec<Place> {
        self.hosts
            .iter()
            .map(|h| Place {
                name: h.name.clone(),
                slots: h.slots,
            })
            .collect()
    }

    async fn connect(
        &self,
        index: usize,
        _run_uid: Option<&str>,
    ) -> Result<Arc<dyn Host>, RunnerError> {
        let h = self
            .hosts
            .get(index)
            .ok_or_else(|| RunnerError::Task(format!("no fake host {index}")))?;
        if !h.is_up() {
            return Err(h.down_error("connecting"));
        }
        Ok(Arc::new(HostHandle(h.clone())))
    }

    async fn forget_build_failures(&self) {}
}

/// The image every fake trial runs: a working folder `/app`, a Python on `PATH`.
fn image_facts(reference: &str) -> ImageFacts {
    let mut files = Manifest::default();
    for (p, fact) in env::image_fs().manifest() {
        files.files.insert(p, fact);
    }
    ImageFacts {
        id: reference.to_string(),
        working_dir: "/app".into(),
        files,
        toolchain: Toolchain {
            path: vec!["/usr/bin".into(), "/bin".into()],
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A connection to a fake host.
struct HostHandle(Arc<FakeHost>);

impl std::ops::Deref for HostHandle {
    type Target = FakeHost;
    fn deref(&self) -> &FakeHost {
        &self.0
    }
}

#[async_trait]
impl Host for HostHandle {
    fn name(&self) -> &str {
        &self.name
    }

    fn capacity(&self) -> Capacity {
        Capacity {
            cpus: self.cpus,
            memory_bytes: 8 << 30,
            slots: self.slots,
        }
    }

    fn local(&self) -> bool {
        false
    }

    fn version(&self) -> &str {
        "fake"
    }

    fn data_root(&self) -> Option<&str> {
        None
    }

    async fn ping(&self) -> Result<(), RunnerError> {
        if self.is_up() {
            Ok(())
        } else {
            Err(self.down_error("ping"))
        }
    }

    async fn sweep(&self, sweep: &Sweep) -> Result<usize, RunnerError> {
        if !self.is_up() {
            return Err(self.down_error("sweep"));
        }
        let ids: Vec<String> = {
            let envs = self.envs.lock().expect("lock");
            envs.iter()
                .filter(|(_, (_, uid, attempt))| match sweep {
                    Sweep::Run { uid: u, keep } => uid == u && !keep.contains(attempt),
                    Sweep::StaleHelpers(_) => false,
                })
                .map(|(id, _)| id.clone())
                .collect()
        };
        for id in &ids {
            self.forget(id);
        }
        self.counts.swept.fetch_add(ids.len(), Ordering::SeqCst);
        Ok(ids.len())
    }

    async fn has_image(&self, _reference: &str) -> bool {
        true
    }

    async fn prepare_image(
        &self,
        task: &Arc<Task>,
        condition: &Condition,
        _timeout: Duration,
    ) -> BuildOutcome {
        if !self.is_up() {
            return Err(super::image::BuildFailure::runner(
                "building",
                self.down_error("building"),
            ));
        }
        let tag = format!("fake/{}:{}", task.id, condition.image_condition().key());
        Ok(ReadyImage {
            tag: tag.clone(),
            hash: format!("{:0>64}", task.id.len()),
            built: false,
            log: Arc::new(format!("fake image {tag}\n")),
            builds: Vec::new(),
            verifier_files: None,
        })
    }

    async fn image_facts(&self, reference: &str) -> Result<Arc<ImageFacts>, RunnerError> {
        Ok(Arc::new(image_facts(reference)))
    }

    async fn open_site(&self, spec: &SiteSpec<'_>) -> Result<Box<dyn TrialSite>, SiteError> {
        if !self.is_up() {
            return Err(SiteError::Runner(self.down_error("opening a site")));
        }
        let call = self.call(&spec.labels);
        Ok(Box::new(FakeSite {
            host: self.0.clone(),
            trial: self.script.trial(&call),
            call,
            started: Mutex::default(),
        }))
    }

    async fn kit_mount(
        &self,
        _dir: &std::path::Path,
        id: &str,
        target: &str,
    ) -> Result<Mount, RunnerError> {
        Ok(Mount {
            source: MountSource::Volume(format!("fake-kit-{id}")),
            target: target.to_string(),
            read_only: true,
        })
    }

    async fn relay(&self, target: SocketAddr) -> Result<(String, SocketAddr), RunnerError> {
        Ok(("host.fake.internal".into(), target))
    }
}

/// One fake trial's site.
struct FakeSite {
    host: Arc<FakeHost>,
    call: FakeCall,
    trial: FakeTrial,
    started: Mutex<Vec<String>>,
}

#[async_trait]
impl TrialSite for FakeSite {
    async fn start(&self, spec: &EnvironmentSpec) -> Result<Arc<dyn Environment>, RunnerError> {
        let host = &self.host;
        if !host.is_up() {
            return Err(host.down_error("starting an environment"));
        }
        let agent = spec.role == Some(super::backend::Role::Agent);
        if agent && matches!(self.trial.fault, Some((FakePhase::Start, _))) {
            let (_, fault) = self.trial.fault.expect("fault");
            return Err(RunnerError::Backend {
                context: format!("starting {}", spec.name),
                message: "scripted fault".into(),
                fault,
            });
        }
        let env = Arc::new(FakeEnvironment::new(
            spec,
            host.clone(),
            self.call.clone(),
            self.trial.clone(),
        ));
        let id = env.id().to_string();
        let uid = spec
            .labels
            .get(labels::RUN_UID)
            .cloned()
            .unwrap_or_default();
        host.envs
            .lock()
            .expect("lock")
            .insert(id.clone(), (env.clone(), uid, self.call.attempt_id));
        host.counts.started.fetch_add(1, Ordering::SeqCst);
        host.counts.alive.fetch_add(1, Ordering::SeqCst);
        if agent {
            let now = host.counts.agents.fetch_add(1, Ordering::SeqCst) + 1;
            host.counts.peak_agents.fetch_max(now, Ordering::SeqCst);
        }
        self.started.lock().expect("lock").push(id);
        Ok(env)
    }

    fn verifier_may_wait(&self) -> bool {
        self.trial.verifier_waits
    }

    async fn close(self: Box<Self>) {
        for id in self.started.lock().expect("lock").iter() {
            self.host.forget(id);
        }
    }
}
