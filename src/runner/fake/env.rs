//! A fake environment: an in-memory filesystem and execs told by their command (see
//! [`super`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use tokio::io::AsyncReadExt;

use super::{FakeCall, FakeHost, FakePhase, FakeTrial, FakeVerdict};
use crate::runner::RunnerError;
use crate::runner::backend::{
    Chunk, Environment, EnvironmentSpec, ExecExit, ExecSpec, ExecStream, Role, TarBody,
};
use crate::runner::work::{FileFact, FileKind};

/// One path of a fake filesystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A folder.
    Dir,
    /// A regular file.
    File(Vec<u8>),
    /// A symbolic link.
    Link(String),
}

/// A fake filesystem: path → (node, mode, changed since the environment started).
#[derive(Debug, Clone, Default)]
pub struct FakeFs {
    nodes: BTreeMap<String, (Node, u32, bool)>,
}

/// The image every fake trial runs.
pub(super) fn image_fs() -> FakeFs {
    let mut fs = FakeFs::default();
    for d in ["/app", "/bin", "/logs", "/root", "/usr", "/usr/bin"] {
        fs.nodes.insert(d.into(), (Node::Dir, 0o755, false));
    }
    for (f, c) in [
        ("/usr/bin/python3", "\x7fELF python"),
        ("/bin/sh", "\x7fELF sh"),
        ("/app/input.txt", "input"),
    ] {
        fs.nodes
            .insert(f.into(), (Node::File(c.as_bytes().to_vec()), 0o755, false));
    }
    fs
}

impl FakeFs {
    /// The image's manifest of this filesystem.
    pub(super) fn manifest(&self) -> Vec<(String, FileFact)> {
        self.nodes
            .iter()
            .map(|(p, (n, mode, _))| {
                let (kind, sha, size, link) = match n {
                    Node::Dir => (FileKind::Dir, None, 0, None),
                    Node::File(b) => {
                        let (sha, n) =
                            crate::runner::work::manifest::sha256_of(&mut &b[..], u64::MAX)
                                .expect("memory");
                        (FileKind::File, Some(sha), n, None)
                    }
                    Node::Link(t) => (FileKind::Link, None, 0, Some(t.clone())),
                };
                (
                    p.clone(),
                    FileFact {
                        kind,
                        mode: *mode,
                        size,
                        sha256: sha,
                        link,
                        script: None,
                        stamp: None,
                        owner: None,
                    },
                )
            })
            .collect()
    }

    /// The content of file `path`.
    pub fn read(&self, path: &str) -> Option<&[u8]> {
        match self.nodes.get(path) {
            Some((Node::File(b), _, _)) => Some(b),
            _ => None,
        }
    }

    /// Writes `node` at `path` (its missing folders made), marked changed.
    pub fn put(&mut self, path: &str, node: Node, mode: u32) {
        let mut dir = String::new();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            dir.push('/');
            dir.push_str(part);
            if dir.len() < path.len() && !self.nodes.contains_key(&dir) {
                self.nodes.insert(dir.clone(), (Node::Dir, 0o755, true));
            }
        }
        self.mark_parent(path);
        self.nodes.insert(path.to_string(), (node, mode, true));
    }

    fn mark_parent(&mut self, path: &str) {
        let parent = crate::runner::work::rule::parent(path).to_string();
        if let Some(n) = self.nodes.get_mut(&parent) {
            n.2 = true;
        }
    }

    /// Removes `path` and everything under it.
    pub fn remove(&mut self, path: &str) {
        let under = format!("{path}/");
        self.nodes
            .retain(|p, _| p != path && !p.starts_with(&under));
        self.mark_parent(path);
    }

    fn append(b: &mut tar::Builder<Vec<u8>>, name: &str, node: &Node, mode: u32) {
        let mut h = tar::Header::new_gnu();
        h.set_mode(mode);
        match node {
            Node::Dir => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_size(0);
                b.append_data(&mut h, name, std::io::empty())
                    .expect("memory");
            }
            Node::File(c) => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_size(c.len() as u64);
                b.append_data(&mut h, name, &c[..]).expect("memory");
            }
            Node::Link(t) => {
                h.set_entry_type(tar::EntryType::Symlink);
                h.set_size(0);
                b.append_link(&mut h, name, t).expect("memory");
            }
        }
    }

    /// What the hand-over script writes after its kill: `== <nonce>`, for every changed folder
    /// and `/` a marker `D<folder>` and its entries, NUL-terminated, one more NUL, then
    /// [`FakeFs::changed_tar`] and the nonce.
    fn after_kill(&self) -> Vec<u8> {
        let nonce = uuid::Uuid::new_v4().hyphenated().to_string();
        let mut out = format!("== {nonce}\n").into_bytes();
        let changed_dirs = self
            .nodes
            .iter()
            .filter(|(_, (n, _, changed))| *changed && matches!(n, Node::Dir))
            .map(|(p, _)| p.as_str());
        for dir in changed_dirs.chain(["/"]) {
            out.extend(format!("D{dir}\0").bytes());
            for c in self.children(dir) {
                out.extend(c.as_bytes());
                out.push(0);
            }
        }
        out.push(0);
        out.extend(self.changed_tar());
        out.extend(nonce.bytes());
        out
    }

    /// A tar of every changed path (relative to `/`).
    fn changed_tar(&self) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (p, (n, mode, changed)) in &self.nodes {
            if *changed {
                Self::append(&mut b, &p[1..], n, *mode);
            }
        }
        b.into_inner().expect("memory")
    }

    /// A tar of `src` as Docker archives it (its own name the top entry), `None` when missing.
    fn tar_of(&self, src: &str) -> Option<Vec<u8>> {
        self.nodes.get(src)?;
        let top = src.rsplit('/').next().unwrap_or_default();
        let under = format!("{src}/");
        let mut b = tar::Builder::new(Vec::new());
        for (p, (n, mode, _)) in &self.nodes {
            if p == src {
                Self::append(&mut b, top, n, *mode);
            } else if let Some(rest) = p.strip_prefix(&under) {
                Self::append(&mut b, &format!("{top}/{rest}"), n, *mode);
            }
        }
        Some(b.into_inner().expect("memory"))
    }

    /// Unpacks `tar` into folder `dir`.
    fn untar(&mut self, tar: &[u8], dir: &str) {
        let mut a = tar::Archive::new(tar);
        let Ok(entries) = a.entries() else { return };
        for e in entries.flatten() {
            let mut e = e;
            let Some(rel) = crate::runner::work::manifest::absolute(&e.path_bytes()) else {
                continue;
            };
            let path = if dir == "/" {
                rel
            } else {
                format!("{}{rel}", dir.trim_end_matches('/'))
            };
            let mode = e.header().mode().unwrap_or(0o644);
            let node = match e.header().entry_type() {
                tar::EntryType::Directory => Node::Dir,
                tar::EntryType::Symlink => Node::Link(
                    e.link_name()
                        .ok()
                        .flatten()
                        .map(|l| l.display().to_string())
                        .unwrap_or_default(),
                ),
                _ => {
                    let mut c = Vec::new();
                    let _ = std::io::Read::read_to_end(&mut e, &mut c);
                    Node::File(c)
                }
            };
            self.put(&path, node, mode);
        }
    }

    /// The entries directly in `dir`, absolute.
    fn children(&self, dir: &str) -> Vec<String> {
        let prefix = if dir == "/" {
            "/".to_string()
        } else {
            format!("{dir}/")
        };
        self.nodes
            .keys()
            .filter(|p| p.starts_with(&prefix) && !p[prefix.len()..].contains('/'))
            .cloned()
            .collect()
    }
}

/// One fake environment.
pub struct FakeEnvironment {
    id: String,
    name: String,
    role: Option<Role>,
    /// Its filesystem.
    pub fs: Arc<Mutex<FakeFs>>,
    host: Arc<FakeHost>,
    trial: FakeTrial,
    /// The agent left a process running, or the tests did (`kill` lists it once).
    leftover: Arc<AtomicBool>,
    /// The user execs that name none run as ([`EnvironmentSpec::user`]).
    user: Option<String>,
}

impl FakeEnvironment {
    pub(super) fn new(
        spec: &EnvironmentSpec,
        host: Arc<FakeHost>,
        _call: FakeCall,
        trial: FakeTrial,
    ) -> FakeEnvironment {
        FakeEnvironment {
            id: format!("fake-{}", uuid::Uuid::new_v4().simple()),
            name: spec.name.clone(),
            role: spec.role,
            fs: Arc::new(Mutex::new(image_fs())),
            host,
            trial,
            leftover: Arc::default(),
            user: spec
                .user
                .clone()
                .or(spec.image_user.clone())
                .filter(|u| !crate::runner::is_root_user(u)),
        }
    }

    /// True for an agent's environment.
    pub(super) fn is_agent(&self) -> bool {
        self.role == Some(Role::Agent)
    }

    fn cut(&self, what: &str) -> RunnerError {
        RunnerError::Backend {
            context: format!("{what} in {}", self.name),
            message: "connection reset by peer".into(),
            fault: crate::runner::Fault::ConnectionLost,
        }
    }
}

/// An exec's exit code, known once its output ended.
struct Exit(Arc<Mutex<Option<i64>>>);

#[async_trait]
impl ExecExit for Exit {
    async fn code(self: Box<Self>) -> Result<Option<i64>, RunnerError> {
        Ok(*self.0.lock().expect("lock"))
    }
}

fn done(out: Vec<u8>, code: i64) -> ExecStream {
    let output = if out.is_empty() {
        futures_util::stream::empty().boxed()
    } else {
        futures_util::stream::once(async move { Ok(Chunk::Stdout(Bytes::from(out))) }).boxed()
    };
    ExecStream {
        output,
        input: None,
        exit: Box::new(Exit(Arc::new(Mutex::new(Some(code))))),
    }
}

/// An exec that reads all of its stdin, then answers with `f` of it.
fn with_stdin(f: impl FnOnce(Vec<u8>) -> Vec<u8> + Send + 'static) -> ExecStream {
    let (writer, mut reader) = tokio::io::duplex(1 << 20);
    let output = futures_util::stream::once(async move {
        let mut input = Vec::new();
        let _ = reader.read_to_end(&mut input).await;
        Ok(Chunk::Stdout(Bytes::from(f(input))))
    })
    .boxed();
    ExecStream {
        output,
        input: Some(Box::pin(writer)),
        exit: Box::new(Exit(Arc::new(Mutex::new(Some(0))))),
    }
}

impl FakeEnvironment {
    /// The agent's or the verifier's own exec: it takes `wait`, then does `act` (or meets a
    /// fault when `fault`), and exits `code`.
    fn session(
        &self,
        wait: Duration,
        fault: bool,
        code: i64,
        act: impl FnOnce() + Send + 'static,
    ) -> ExecStream {
        let host = self.host.clone();
        let cut = self.cut("exec");
        let exit = Arc::new(Mutex::new(None));
        let set = exit.clone();
        let output = futures_util::stream::once(async move {
            let until = tokio::time::Instant::now() + wait;
            while tokio::time::Instant::now() < until {
                if !host.is_up() {
                    return Some(Err(cut));
                }
                tokio::time::sleep(Duration::from_millis(10).min(wait)).await;
            }
            if fault || !host.is_up() {
                return Some(Err(cut));
            }
            act();
            *set.lock().expect("lock") = Some(code);
            None
        })
        .filter_map(|r: Option<Result<Chunk, RunnerError>>| std::future::ready(r))
        .boxed();
        ExecStream {
            output,
            input: None,
            exit: Box::new(Exit(exit)),
        }
    }
}

#[async_trait]
impl Environment for FakeEnvironment {
    fn id(&self) -> &str {
        &self.id
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn default_user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    async fn spawn(&self, exec: &ExecSpec) -> Result<ExecStream, RunnerError> {
        if !self.host.is_up() {
            return Err(self.cut("starting an exec"));
        }
        let text = exec.cmd.join(" ");
        let fs = self.fs.clone();
        if text.contains("kill -9 -1") {
            let left = self.leftover.swap(false, Ordering::SeqCst);
            let mut out = if left && text.contains("/proc/") {
                b"77 1 S leftover\n".to_vec()
            } else {
                Vec::new()
            };
            if text.contains("-cmin") {
                // The hand-over: what the agent changed, after the kill.
                out.extend(fs.lock().expect("lock").after_kill());
            }
            return Ok(done(out, 0));
        }
        if text.contains("rm -rf --") {
            return Ok(with_stdin(move |input| {
                let mut fs = fs.lock().expect("lock");
                for p in input.split(|b| *b == 0).filter(|d| !d.is_empty()) {
                    fs.remove(&String::from_utf8_lossy(p));
                }
                Vec::new()
            }));
        }
        let t = &self.trial;
        if text.contains("/solution/solve.sh") {
            let writes = t.writes.clone();
            let leftover = self.leftover.clone();
            let leaves = t.leaves_process;
            let fault = matches!(t.fault, Some((FakePhase::Agent, _)));
            return Ok(self.session(t.agent, fault, t.exit, move || {
                let mut fs = fs.lock().expect("lock");
                for (p, c) in writes {
                    fs.put(&p, Node::File(c.into_bytes()), 0o644);
                }
                leftover.store(leaves, Ordering::SeqCst);
            }));
        }
        if text.contains("/tests/test.sh") {
            let verdict = t.verdict.clone();
            let fault = matches!(t.fault, Some((FakePhase::Verifier, _)));
            return Ok(self.session(Duration::ZERO, fault, 0, move || {
                let mut fs = fs.lock().expect("lock");
                let reward = match verdict {
                    FakeVerdict::Reward(r) => Some(r),
                    FakeVerdict::RewardIfFile(p, want) => Some(
                        if fs.read(&p) == Some(want.as_bytes()) {
                            "1"
                        } else {
                            "0"
                        }
                        .to_string(),
                    ),
                    FakeVerdict::NoReward => None,
                };
                if let Some(r) = reward {
                    fs.put(
                        "/logs/verifier/reward.txt",
                        Node::File(r.into_bytes()),
                        0o644,
                    );
                }
            }));
        }
        Ok(done(Vec::new(), 0))
    }

    async fn upload_tar(&self, tar: TarBody, dir: &str) -> Result<(), RunnerError> {
        if !self.host.is_up() {
            return Err(self.cut("uploading"));
        }
        let bytes = match tar {
            TarBody::Memory(b) => b,
            TarBody::Spooled(mut f) => {
                let mut b = Vec::new();
                f.read_to_end(&mut b)
                    .await
                    .map_err(|e| RunnerError::io(dir, e))?;
                b
            }
        };
        self.fs.lock().expect("lock").untar(&bytes, dir);
        Ok(())
    }

    async fn download_tar(
        &self,
        src: &str,
    ) -> Result<BoxStream<'static, Result<Bytes, RunnerError>>, RunnerError> {
        if !self.host.is_up() {
            return Err(self.cut("copying out"));
        }
        let tar =
            self.fs
                .lock()
                .expect("lock")
                .tar_of(src)
                .ok_or_else(|| RunnerError::NotFound {
                    path: src.to_string(),
                })?;
        Ok(futures_util::stream::once(async move { Ok(Bytes::from(tar)) }).boxed())
    }

    async fn remove(&self) {
        self.host.forget(&self.id);
    }
}
