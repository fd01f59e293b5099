//! A private Docker daemon for one test: its own network namespace (created here with
//! `ip netns add`, entered with `nsenter --net` so the host's cgroup mounts stay visible), its own
//! `--data-root`, `--exec-root`, `--pidfile` and unix socket. It creates its own `docker0` inside
//! that namespace, exactly as a daemon does on a fresh machine, and can be killed and restarted
//! to play a daemon that dies mid-run.
//!
//! Never a second daemon in the host's namespace: with `--bridge none` Docker 20.10 deletes the
//! host's `docker0`, and with a bridge it would fight the host daemon over it.
//!
//! Everything is removed when the value is dropped: containers, the daemon and its containerd
//! (ended by pid, and any process left in the namespace), mounts under the data root, the
//! namespace and the folders.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a daemon may take to answer `/_ping` after it was started.
const START_BUDGET: Duration = Duration::from_secs(90);

/// A private `dockerd`.
pub struct PrivateDockerd {
    /// Name of the network namespace (under `/var/run/netns`).
    pub netns: String,
    dir: PathBuf,
    child: Option<Child>,
}

impl PrivateDockerd {
    /// Creates a network namespace and starts a daemon in it; returns once it answers.
    ///
    /// # Panics
    /// When `ip`, `nsenter` or `dockerd` are missing (this test needs root and Debian's
    /// `docker.io`, which `scripts/docker-up.sh` installs) or the daemon does not come up.
    pub fn start() -> PrivateDockerd {
        PrivateDockerd::start_with(None)
    }

    /// As [`start`](Self::start), with the data root on a tmpfs of `disk_mb` MiB when given: a
    /// daemon whose disk (image store, containers' file systems) fills up quickly.
    pub fn start_with(disk_mb: Option<u32>) -> PrivateDockerd {
        static N: AtomicUsize = AtomicUsize::new(0);
        let id = format!(
            "{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        let netns = format!("ss-test-{id}");
        // Short: containerd's socket lives under the exec root and unix socket paths are ≤ 107 bytes.
        let dir = PathBuf::from(format!("/tmp/ssd-{id}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("private daemon folder");
        if let Some(mb) = disk_mb {
            let data = dir.join("data");
            std::fs::create_dir_all(&data).expect("data root");
            run(Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={mb}m"), "tmpfs"])
                .arg(&data));
        }
        run(Command::new("ip").args(["netns", "add", &netns]));
        let mut d = PrivateDockerd {
            netns,
            dir,
            child: None,
        };
        run(Command::new("ip").args(["netns", "exec", &d.netns, "ip", "link", "set", "lo", "up"]));
        d.launch();
        d
    }

    /// The daemon's socket file.
    pub fn socket(&self) -> PathBuf {
        self.dir.join("docker.sock")
    }

    /// `unix://<socket>`, for `--docker-host`.
    pub fn endpoint(&self) -> String {
        format!("unix://{}", self.socket().display())
    }

    /// A bollard client for this daemon.
    pub fn docker(&self) -> bollard::Docker {
        bollard::Docker::connect_with_unix(&self.endpoint(), 600, bollard::API_DEFAULT_VERSION)
            .expect("connect to the private daemon")
    }

    /// The daemon's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("dockerd.log")).unwrap_or_default()
    }

    /// True while the daemon answers `/_ping`.
    pub fn answers(&self) -> bool {
        ping(&self.socket())
    }

    fn launch(&mut self) {
        if let Err(e) = self.try_launch() {
            panic!("{e}");
        }
    }

    /// Starts dockerd and waits for it; never panics (also used while cleaning up).
    fn try_launch(&mut self) -> Result<(), String> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("dockerd.log"))
            .map_err(|e| format!("daemon log: {e}"))?;
        let child = Command::new("nsenter")
            .arg(format!("--net=/var/run/netns/{}", self.netns))
            .arg("dockerd")
            .arg("--data-root")
            .arg(self.dir.join("data"))
            .arg("--exec-root")
            .arg(self.dir.join("e"))
            .arg("--pidfile")
            .arg(self.dir.join("dockerd.pid"))
            .arg("-H")
            .arg(self.endpoint())
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| format!("daemon log: {e}"))?)
            .stderr(log)
            .spawn()
            .map_err(|e| {
                format!(
                    "start dockerd (is docker.io installed? scripts/docker-up.sh installs it): {e}"
                )
            })?;
        self.child = Some(child);
        let t0 = Instant::now();
        while !self.answers() {
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                self.child = None;
                return Err(format!(
                    "the private dockerd exited ({status}):\n{}",
                    self.log()
                ));
            }
            if t0.elapsed() > START_BUDGET {
                return Err(format!(
                    "the private dockerd did not answer within {START_BUDGET:?}:\n{}",
                    self.log()
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(())
    }

    /// Kills the daemon at once (SIGKILL), as a crash or an OOM kill would; its containerd and
    /// containers are left as such a death leaves them.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Stops the daemon the way `systemctl stop docker` does (SIGTERM, then wait).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(30) {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the daemon again on the same roots (after [`kill`](Self::kill) or
    /// [`stop`](Self::stop)); returns once it answers.
    pub fn restart(&mut self) {
        self.kill();
        self.launch();
    }

    /// A TCP listener on every address of the daemon's namespace (bound on a thread that entered
    /// the namespace; the socket stays there): what containers of this daemon reach through its
    /// bridge gateway, as they reach a server on a real machine.
    pub fn listen(&self) -> std::net::TcpListener {
        let path = format!("/var/run/netns/{}", self.netns);
        std::thread::spawn(move || {
            let ns = std::fs::File::open(&path).expect("open the namespace");
            use std::os::fd::AsRawFd;
            let rc = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
            std::net::TcpListener::bind("0.0.0.0:0").expect("bind in the namespace")
        })
        .join()
        .expect("listener thread")
    }

    /// Pids of processes whose network namespace is this daemon's.
    fn processes_inside(&self) -> Vec<i32> {
        let Ok(ns) = std::fs::metadata(format!("/var/run/netns/{}", self.netns)) else {
            return Vec::new();
        };
        use std::os::unix::fs::MetadataExt;
        let inode = ns.ino();
        let me = std::process::id() as i32;
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| *pid != me)
            .filter(|pid| {
                std::fs::metadata(format!("/proc/{pid}/ns/net")).is_ok_and(|m| m.ino() == inode)
            })
            .collect()
    }

    /// The ids of the containers under this daemon's data root.
    fn container_ids(&self) -> std::collections::HashSet<String> {
        std::fs::read_dir(self.dir.join("data/containers"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .collect()
    }

    /// The processes of containers `ids`, whatever their network namespace: those whose cgroup
    /// is `…/docker/<id>`. A container with a network of its own is outside the daemon's
    /// namespace, and one whose shim outlived a killed daemon stays running after the restarted
    /// daemon removed its record: its processes would outlive the test.
    pub fn container_processes(ids: &std::collections::HashSet<String>) -> Vec<i32> {
        if ids.is_empty() {
            return Vec::new();
        }
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/cgroup")).is_ok_and(|c| {
                    c.lines().any(|l| {
                        l.rsplit_once("/docker/")
                            .is_some_and(|(_, id)| ids.contains(id.trim()))
                    })
                })
            })
            .collect()
    }
}

impl Drop for PrivateDockerd {
    fn drop(&mut self) {
        // Taken first: removing the containers below deletes their records, not always their
        // processes.
        let containers = self.container_ids();
        if self.child.is_none() && self.dir.join("data").exists() {
            // Killed earlier: start it once more so it cleans up its containers itself.
            let _ = self.try_launch();
        }
        if self.answers() {
            let ids = Command::new("docker")
                .args(["-H", &self.endpoint(), "ps", "-aq"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            let ids: Vec<&str> = ids.split_whitespace().collect();
            if !ids.is_empty() {
                let _ = Command::new("docker")
                    .args(["-H", &self.endpoint(), "rm", "-f"])
                    .args(&ids)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
        }
        self.stop();
        // containerd, shims: whatever is still inside the namespace was started by this daemon.
        // And its containers' processes, which have network namespaces of their own.
        for _ in 0..50 {
            let mut left = self.processes_inside();
            left.extend(Self::container_processes(&containers));
            if left.is_empty() {
                break;
            }
            for pid in left {
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        unmount_under(&self.dir);
        let _ = Command::new("ip")
            .args(["netns", "del", &self.netns])
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Detaches every mount below `dir` (a killed daemon leaves its overlay and shm mounts).
fn unmount_under(dir: &Path) {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return;
    };
    let prefix = dir.display().to_string();
    let mut points: Vec<&str> = info
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|p| p.starts_with(&prefix))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in points {
        if let Ok(c) = std::ffi::CString::new(p) {
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
    }
}

/// `GET /_ping` over the unix socket.
fn ping(socket: &Path) -> bool {
    let Ok(mut s) = UnixStream::connect(socket) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    reply.starts_with("HTTP/1.") && reply.ends_with("OK")
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
