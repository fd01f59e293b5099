//! The seam between the engine and the machines that run trials, as nextest's executor sits
//! behind its runner: a [`Backend`] (a pool of Docker daemons, a Kubernetes cluster, the
//! in-memory fake of the tests) gives connected [`Host`]s; a host builds images and opens a
//! [`TrialSite`] per attempt (its networks and services); a site starts [`Environment`]s (the
//! agent's, then the verifier's), which run execs and copy tar streams in and out.
//!
//! Everything above this file — the trial's protocol ([`super::trial`]), the agents, the engine,
//! preflight and the commands — is written against these traits and the neutral types here;
//! the Docker code ([`super::docker`]) is private behind them. Nothing in the protocol needs a
//! backend to commit or diff a filesystem: an environment only runs processes and moves tar
//! streams.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::stream::BoxStream;

use super::RunnerError;
use super::image::{BuildOutcome, ImageFacts};
use crate::skillsbench::{Condition, Task};

/// Which kind of machine runs the trials (chosen in the run's settings).
pub use crate::config::BackendKind;

/// One configured place where trials run (a Docker daemon's endpoint; a cluster's namespace),
/// before it is connected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// Its name for labels, tables and events (`unix:///var/run/docker.sock`, …).
    pub name: String,
    /// How many trials it may run at once.
    pub slots: usize,
}

/// What a connected host offers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Capacity {
    /// CPUs (a task's CPU limit is clamped to it).
    pub cpus: u32,
    /// Memory, bytes (0: unknown).
    pub memory_bytes: i64,
    /// How many trials may run on it at once.
    pub slots: usize,
}

/// Where trials run: a pool of places, connected on demand.
#[async_trait]
pub trait Backend: Send + Sync {
    /// Which kind it is.
    fn kind(&self) -> BackendKind;

    /// The configured places, in configuration order.
    fn places(&self) -> Vec<Place>;

    /// Connects to place `index` (an index into [`Backend::places`]); helpers made through the
    /// connection carry `run_uid` when given, so the run's sweep removes them.
    ///
    /// # Errors
    /// [`RunnerError::Backend`] naming the place when it does not answer.
    async fn connect(
        &self,
        index: usize,
        run_uid: Option<&str>,
    ) -> Result<Arc<dyn Host>, RunnerError>;

    /// Forgets the task builds that failed, so the next attempt builds again (an operator's
    /// retry).
    async fn forget_build_failures(&self);
}

/// What a sweep removes from a host: what a stopped or killed process left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sweep {
    /// Everything of run `uid` (environments, sites, helpers).
    Run {
        /// The run's uid.
        uid: String,
        /// Attempt ids whose environments stay (they are running now).
        keep: Vec<i64>,
    },
    /// Helpers of any run created at least this long ago.
    StaleHelpers(Duration),
}

/// A mount an environment gets from outside the image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// What is mounted.
    pub source: MountSource,
    /// Where, in the environment (absolute).
    pub target: String,
    /// Mounted read-only.
    pub read_only: bool,
}

/// The source of a [`Mount`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MountSource {
    /// A folder of this machine (only on a host where [`Host::local`] holds).
    HostDir(std::path::PathBuf),
    /// A named volume of the host (a harness kit copied to a remote daemon).
    Volume(String),
}

impl Mount {
    /// The operator's `--mount host:container[:ro]`, parsed; `None` when malformed.
    pub fn parse_bind(spec: &str) -> Option<Mount> {
        let mut parts = spec.splitn(3, ':');
        let (host, target) = (parts.next()?, parts.next()?);
        let read_only = match parts.next() {
            None | Some("rw") => false,
            Some("ro") => true,
            Some(_) => return None,
        };
        if host.is_empty() || !target.starts_with('/') {
            return None;
        }
        let source = if host.starts_with('/') {
            MountSource::HostDir(host.into())
        } else {
            MountSource::Volume(host.to_string())
        };
        Some(Mount {
            source,
            target: target.to_string(),
            read_only,
        })
    }
}

/// What an environment is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The agent's: the image's ENTRYPOINT runs (in the background, under skillscope's PID 1).
    Agent,
    /// The verifier's: nothing of the image runs but what skillscope execs.
    Verifier,
    /// A short-lived helper of skillscope's (reading an image's facts, filling a volume).
    Helper,
}

impl Role {
    /// `agent`, `verifier` or `helper` (the role label's value).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Agent => "agent",
            Role::Verifier => "verifier",
            Role::Helper => "helper",
        }
    }
}

/// One environment to start in a trial's site.
#[derive(Debug, Clone, Default)]
pub struct EnvironmentSpec {
    /// Image reference.
    pub image: String,
    /// A name unique on the host (container or pod name).
    pub name: String,
    /// Labels (see [`super::labels`]).
    pub labels: BTreeMap<String, String>,
    /// CPU limit, cores.
    pub cpus: Option<f64>,
    /// Memory limit, bytes.
    pub memory_bytes: Option<i64>,
    /// Most processes at once; `None`: no limit.
    pub pids_limit: Option<i64>,
    /// Mounts from outside the image.
    pub mounts: Vec<Mount>,
    /// Folders that start empty (whatever the image holds there is hidden).
    pub empty_dirs: Vec<String>,
    /// Extra `/etc/hosts` lines, `host:ip`.
    pub extra_hosts: Vec<String>,
    /// What runs as PID 1; see [`Role`]. Every role's PID 1 is skillscope's static shell.
    pub role: Option<Role>,
    /// The image's ENTRYPOINT and CMD to start in the background under skillscope's PID 1
    /// ([`Role::Agent`] only): Harbor's environments keep the image's ENTRYPOINT. With a
    /// [`EnvironmentSpec::user`], the caller starts it as that user
    /// ([`crate::runner::as_user`]).
    pub image_entry: Vec<String>,
    /// The user an exec that names none runs as, when the task names one for this role
    /// (`[agent] user`, `[verifier] user`; `0` for root): it wins over a compose file's `main`
    /// user, which wins over [`EnvironmentSpec::image_user`], as in Harbor. PID 1 and
    /// skillscope's own scripts run as root whatever it is — they must see and end every
    /// process of the environment (the hand-over reads which program each runs, which takes
    /// root of the same user without `CAP_SYS_PTRACE`).
    pub user: Option<String>,
    /// The image's `USER` when it is not root ([`crate::runner::is_root_user`]): the user of
    /// an exec that names none when neither the task nor a compose file names one.
    pub image_user: Option<String>,
}

/// What a trial's site needs: the task's networks and services.
pub struct SiteSpec<'a> {
    /// The task.
    pub task: &'a Arc<Task>,
    /// The trial folder (services write `environment/services.log` there).
    pub trial_dir: &'a std::path::Path,
    /// The labels of everything the site makes.
    pub labels: BTreeMap<String, String>,
    /// A name prefix unique on the host.
    pub name: String,
    /// The operator's values for the task's `${NAME}` references.
    pub env_values: &'a crate::skillsbench::env::EnvValues,
    /// The main image's reference (`MAIN_IMAGE_NAME` of a compose file).
    pub main_image: &'a str,
    /// Stops waits and builds.
    pub cancel: &'a tokio_util::sync::CancellationToken,
}

/// Why a site could not be opened.
#[derive(Debug)]
pub enum SiteError {
    /// The task's environment cannot run as defined (a compose file, a service's build, a service
    /// that exits or never becomes healthy): a build error of the trial.
    Task(String),
    /// The backend failed.
    Runner(RunnerError),
    /// The attempt was cancelled meanwhile.
    Cancelled,
}

/// One connected place.
#[async_trait]
pub trait Host: Send + Sync {
    /// Its name for labels, tables and events.
    fn name(&self) -> &str;

    /// What it offers.
    fn capacity(&self) -> Capacity;

    /// True when it can mount this machine's folders (a local Docker daemon).
    fn local(&self) -> bool;

    /// The server's version, for preflight and the run's record.
    fn version(&self) -> &str;

    /// Where a local host keeps its images, on this machine (Docker's data root), for
    /// preflight's disk check; `None` for a remote host.
    fn data_root(&self) -> Option<&str>;

    /// Asks the host whether it answers.
    ///
    /// # Errors
    /// [`RunnerError::Backend`] when it does not.
    async fn ping(&self) -> Result<(), RunnerError>;

    /// Removes what `sweep` names; returns how many environments went.
    ///
    /// # Errors
    /// [`RunnerError::Backend`] when the host cannot list them.
    async fn sweep(&self, sweep: &Sweep) -> Result<usize, RunnerError>;

    /// True when the host has image `reference` (a task's `FROM`) without building or pulling.
    async fn has_image(&self, reference: &str) -> bool;

    /// The image of `task` under `condition`, built or found (cached per host).
    async fn prepare_image(
        &self,
        task: &Arc<Task>,
        condition: &Condition,
        timeout: Duration,
    ) -> BuildOutcome;

    /// What the image `reference` holds: its configuration and its files by content (taken once
    /// per image and kept).
    ///
    /// # Errors
    /// [`RunnerError`] when the image cannot be read.
    async fn image_facts(&self, reference: &str) -> Result<Arc<ImageFacts>, RunnerError>;

    /// Opens the site of one trial: its own network when the task reaches the internet, a
    /// compose task's services.
    ///
    /// # Errors
    /// [`SiteError`].
    async fn open_site(&self, spec: &SiteSpec<'_>) -> Result<Box<dyn TrialSite>, SiteError>;

    /// A mount of folder `dir` (a harness kit, known as `id`) at `target`, read-only: the folder
    /// itself on a local host, else a copy made once per host.
    ///
    /// # Errors
    /// [`RunnerError`] when the copy cannot be made.
    async fn kit_mount(
        &self,
        dir: &std::path::Path,
        id: &str,
        target: &str,
    ) -> Result<Mount, RunnerError>;

    /// An address the host's environments reach that forwards to `target` on this machine's
    /// loopback (a model proxy), and the host name environments use for it.
    ///
    /// # Errors
    /// [`RunnerError::Task`] when this host cannot relay to this machine.
    async fn relay(&self, target: SocketAddr) -> Result<(String, SocketAddr), RunnerError>;
}

/// What a [`TrialSite`] sets in the environments it starts, over the image's own settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MainSettings {
    /// Variables, `NAME=value` each (later ones win).
    pub env: Vec<String>,
    /// The working folder, absolute (`None`: the image's `WORKDIR`).
    pub working_dir: Option<String>,
    /// The user an exec that names none runs as, before the image's `USER` (`None`: the
    /// image's).
    pub user: Option<String>,
}

/// The networks and services one trial's environments share.
#[async_trait]
pub trait TrialSite: Send + Sync {
    /// Starts an environment in the site.
    ///
    /// # Errors
    /// [`RunnerError`] when it cannot be created or started.
    async fn start(&self, spec: &EnvironmentSpec) -> Result<Arc<dyn Environment>, RunnerError>;

    /// True when the verifier's environment may start beside the agent's and wait, idle, while
    /// the agent works: it then holds nothing another trial needs (no capacity reserved for it)
    /// and no service of the site can mistake it for the agent's (no shared `main` alias). The
    /// verifier's environment is made the same either way — fresh from the task's image,
    /// skillscope's static shell its only process, nothing of the agent's in it until the carry;
    /// what changes is that it exists while the agent works (on an `allow_internet` trial's
    /// network, reachable by address, with nothing listening). Default: `false` (it starts once
    /// the agent is gone).
    fn verifier_may_wait(&self) -> bool {
        false
    }

    /// What the site sets in every environment it starts beyond the image and the task's
    /// tables (a compose file's `main` service: its `environment`, `working_dir` and `user`).
    /// The verifier's work rule reads the environment as the verifier's exec gets it.
    /// Default: nothing.
    fn main_settings(&self) -> MainSettings {
        MainSettings::default()
    }

    /// What the site mounts writable over the image in every environment it starts (a compose
    /// file's writable bind mounts, each a fresh copy of its host folder per environment), as
    /// each mount's target and its files (absolute paths at the target). The agent found them
    /// there and the verifier finds them there again: what the agent changed is measured against
    /// them as against the image's files. Default: none.
    fn mounted(&self) -> &[(String, crate::runner::work::Manifest)] {
        &[]
    }

    /// Removes the site's environments (the last started first), services and networks. Never
    /// fails.
    async fn close(self: Box<Self>);
}

/// One chunk of an exec's output.
#[derive(Debug, Clone)]
pub enum Chunk {
    /// From its stdout.
    Stdout(Bytes),
    /// From its stderr.
    Stderr(Bytes),
}

/// A process to run in an environment.
#[derive(Debug, Clone, Default)]
pub struct ExecSpec {
    /// Command and arguments.
    pub cmd: Vec<String>,
    /// `KEY=VALUE` environment (never logged).
    pub env: Vec<String>,
    /// User to run as (`None`: the image's).
    pub user: Option<String>,
    /// Working folder (`None`: the image's).
    pub working_dir: Option<String>,
    /// Keep its stdin open for writing. The protocol never needs it closed: a script of
    /// skillscope's reads its input by length (`head -c`), and a prelude waits for one line.
    pub stdin: bool,
}

/// A started exec: its output as it comes, its stdin, and its exit code once the output ended.
pub struct ExecStream {
    /// Output chunks; the stream ends when the process's output does. An error is a fault
    /// (the connection was cut), never the process's own end.
    pub output: BoxStream<'static, Result<Chunk, RunnerError>>,
    /// Its stdin, when asked for.
    pub input: Option<std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>>,
    /// Tells how it ended once `output` has.
    pub exit: Box<dyn ExecExit>,
}

/// How a finished exec ended.
#[async_trait]
pub trait ExecExit: Send {
    /// The exit code of an exec whose output ended (`None` when the backend has none). An exec
    /// the backend cannot report on, or one still running after its output ended, is a fault.
    ///
    /// # Errors
    /// [`RunnerError::Backend`] as said.
    async fn code(self: Box<Self>) -> Result<Option<i64>, RunnerError>;
}

/// A tar archive to upload: in memory, or spooled to a file and streamed (hundreds of MB).
pub enum TarBody {
    /// In memory.
    Memory(Vec<u8>),
    /// A spool file, read from its start.
    Spooled(tokio::fs::File),
}

impl From<Vec<u8>> for TarBody {
    fn from(bytes: Vec<u8>) -> TarBody {
        TarBody::Memory(bytes)
    }
}

/// One running environment (a container; a pod). Every process in it but skillscope's PID 1 is
/// ended by the protocol itself (`kill -9 -1` from the static shell), on every backend alike —
/// by PID 1 asked from outside when an exec was ended ([`Environment::end_all_from_pid_1`]).
#[async_trait]
pub trait Environment: Send + Sync {
    /// Its id on the host.
    fn id(&self) -> &str;

    /// Its name.
    fn name(&self) -> &str;

    /// The user an exec that names none runs as ([`EnvironmentSpec::user`]); `None`: root.
    fn default_user(&self) -> Option<&str>;

    /// Starts a process.
    ///
    /// # Errors
    /// [`RunnerError::Backend`] when it cannot be started.
    async fn spawn(&self, exec: &ExecSpec) -> Result<ExecStream, RunnerError>;

    /// Unpacks `tar` into the folder `dir` (which must exist).
    ///
    /// # Errors
    /// [`RunnerError::Backend`] for the transfer.
    async fn upload_tar(&self, tar: TarBody, dir: &str) -> Result<(), RunnerError>;

    /// The tar of `src` (an absolute path; its own name the top entry), as a stream.
    ///
    /// # Errors
    /// [`RunnerError::NotFound`] when `src` does not exist; [`RunnerError::Backend`] for the
    /// transfer.
    async fn download_tar(
        &self,
        src: &str,
    ) -> Result<BoxStream<'static, Result<Bytes, RunnerError>>, RunnerError>;

    /// Removes it (forced). Never fails: one already gone is fine.
    async fn remove(&self);

    /// Asks skillscope's PID 1, **from outside the environment**, to end every other process
    /// (`kill -9 -1`: [`crate::runner::docker::OWN_INIT`]'s `USR1`), where the backend can;
    /// whether it was asked. Asked only once an exec of skillscope's was ended before it could
    /// finish — by a process that kills every new one, say: PID 1 cannot be ended or stopped
    /// from inside its namespace, so once its handler has run no such process is left, and the
    /// exec is run again. Never asked before an exec as a rule: the handler may run late, and it
    /// ends an exec starting at that instant too (which is then run again). `Ok(false)` where
    /// the backend has no such way (Kubernetes: a pod's PID 1 can be signalled only by an exec,
    /// which such a process ends first; docs/limitations.md).
    ///
    /// # Errors
    /// [`RunnerError::Backend`] when the environment cannot be asked (a fault).
    async fn end_all_from_pid_1(&self) -> Result<bool, RunnerError> {
        Ok(false)
    }

    /// Ends every process but skillscope's PID 1 **without an exec**, where the backend can:
    /// lists them from outside ([`Environment::processes_seen_from_outside`]'s lines), asks
    /// PID 1 to end the rest ([`Environment::end_all_from_pid_1`]'s signal) and waits until its
    /// own listing confirms the handler ran and nothing but an exec's process tree is left.
    /// Returns the listing taken before the signal. Asked before skillscope's hand-over and at
    /// the end of the tests: no process the agent (or the tests) left can then stop or end the
    /// exec that follows (a stopped runtime setup process holds the container's lock in the
    /// daemon: no inspect, kill or remove answers after it). `None` where the backend has no
    /// such way (Kubernetes: the kill script's exec does it, docs/limitations.md).
    ///
    /// `execs_ended`: no exec of skillscope's can be running (the tests' exec exited): then an
    /// exec's process tree is no exemption — every process but PID 1's own is listed, and one
    /// the listing could not catch (a process that forks and exits) is added as a line where
    /// the backend can count it. Otherwise a process whose parent is outside the environment is
    /// taken for a running exec's and left out of the listing.
    ///
    /// # Errors
    /// [`RunnerError::Backend`] when the backend does not answer, or the end is not confirmed
    /// in its limit (a fault).
    async fn end_all_from_outside(
        &self,
        execs_ended: bool,
    ) -> Option<Result<Vec<String>, RunnerError>> {
        let _ = execs_ended;
        None
    }

    /// Lifts the environment's CPU limit to the whole host's, where the backend can: called by
    /// the hand-over once every process of the agent's was ended from outside
    /// ([`Environment::end_all_from_outside`]), so that skillscope's own reading of what the
    /// agent changed is not held to the task's CPUs (a task of 0.25 CPU doubles a hand-over's
    /// time: docs/performance.md). The verifier's environment keeps its limit: the tests run
    /// under the task's. Never fails: a limit that stays only costs time. Nothing where the
    /// backend cannot (Kubernetes 1.20: a pod's resources cannot change).
    async fn lift_cpu_limit(&self) {}

    /// Its processes as seen from outside, without an exec (one `pid ppid state name` line
    /// each, pids as the host numbers them; PID 1, the one `sleep` it runs and zombies left
    /// out), where the backend can: evidence of what ended an exec of skillscope's. A listing at
    /// one instant: a process that only forks and exits can be missed. `None` where the
    /// backend cannot, or the listing failed.
    async fn processes_seen_from_outside(&self) -> Option<Vec<String>> {
        None
    }
}

/// The capabilities a trial's environment keeps (all others dropped): what package managers and
/// real SkillsBench `test.sh` scripts use — file ownership and modes (`CHOWN`, `DAC_OVERRIDE`,
/// `FOWNER`, `FSETID`), dropping to another user (`SETUID`, `SETGID`: apt runs its downloads as
/// `_apt`), signalling its own processes (`KILL`) and serving on ports below 1024
/// (`NET_BIND_SERVICE`). Dropped from Docker's default set: `NET_RAW` (raw sockets, spoofing on
/// the bridge), `MKNOD`, `SETFCAP`, `SETPCAP`, `SYS_CHROOT`, `AUDIT_WRITE`.
pub const KEPT_CAPABILITIES: &[&str] = &[
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "NET_BIND_SERVICE",
    "SETGID",
    "SETUID",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binds_parse_into_mounts() {
        assert_eq!(
            Mount::parse_bind("/data:/data:ro"),
            Some(Mount {
                source: MountSource::HostDir("/data".into()),
                target: "/data".into(),
                read_only: true
            })
        );
        assert_eq!(
            Mount::parse_bind("kit:/opt/kit").map(|m| (m.source, m.read_only)),
            Some((MountSource::Volume("kit".into()), false))
        );
        assert_eq!(Mount::parse_bind("/data:relative"), None);
        assert_eq!(Mount::parse_bind("/data:/d:rx"), None);
    }
}
