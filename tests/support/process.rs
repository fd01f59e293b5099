//! One way the tests run the `skillscope` binary: [`Skillscope`], a builder of its command line
//! and environment (in a folder, a scratch store, or the bare environment of a fresh machine),
//! run to its end ([`Skillscope::output`], [`Skillscope::output_async`]) or spawned; and for runs
//! that other processes watch, kill and resume: [`spawn_run`] (standard error into a file beside
//! the store, read with [`stderr_of`]) or [`spawn_run_piped`] (read as it comes with
//! [`stderr_lines`]), [`wait`] for the exit code and [`wait_for`] a state of the store.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use skillscope::store::{RunRow, TrialRow, TrialStatus, queries};

use super::common::{Scratch, fixtures};

/// The `PATH` of a fresh machine: the system folders only (no cargo, no test tools).
pub const BARE_PATH: &str = "/usr/sbin:/usr/bin:/sbin:/bin";

/// A `skillscope` command being built.
pub struct Skillscope(Command);

impl Skillscope {
    /// The binary with `args`; `NO_COLOR` set and `SKILLSCOPE_DB` unset, so output is plain and
    /// each test names its own database.
    pub fn new<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> Skillscope {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_skillscope"));
        cmd.args(args)
            .env("NO_COLOR", "1")
            .env_remove("SKILLSCOPE_DB");
        Skillscope(cmd)
    }

    /// The binary without arguments yet ([`Skillscope::arg`], [`Skillscope::args`]).
    pub fn bin() -> Skillscope {
        Skillscope::new::<&str>([])
    }

    /// Runs in `dir`.
    pub fn dir(mut self, dir: &Path) -> Skillscope {
        self.0.current_dir(dir);
        self
    }

    /// In the scratch folder `s`, on its database (`SKILLSCOPE_DB`) with a private data folder
    /// (`XDG_DATA_HOME`: the built-in example tasks are written there).
    pub fn scratch(mut self, s: &Scratch) -> Skillscope {
        self.0
            .current_dir(s.dir.path())
            .env("SKILLSCOPE_DB", s.db())
            .env("XDG_DATA_HOME", s.dir.path().join("data"));
        self
    }

    /// A fresh machine's user in `dir`: nothing of the test's environment but [`BARE_PATH`], a
    /// `HOME` of `dir/home`, `NO_COLOR`, and `DOCKER_HOST` when the tests use one.
    pub fn bare(mut self, dir: &Path) -> Skillscope {
        self.0
            .current_dir(dir)
            .env_clear()
            .env("PATH", BARE_PATH)
            .env("HOME", dir.join("home"))
            .env("NO_COLOR", "1");
        if let Ok(host) = std::env::var("DOCKER_HOST") {
            self.0.env("DOCKER_HOST", host);
        }
        self
    }

    /// One more argument.
    pub fn arg(mut self, a: impl AsRef<OsStr>) -> Skillscope {
        self.0.arg(a);
        self
    }

    /// More arguments.
    pub fn args<S: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Skillscope {
        self.0.args(args);
        self
    }

    /// One variable of its environment.
    pub fn env(mut self, k: &str, v: impl AsRef<OsStr>) -> Skillscope {
        self.0.env(k, v);
        self
    }

    /// Runs it to its end, at most [`OUTPUT_LIMIT`] ([`bounded_output`]).
    pub fn output(mut self) -> Output {
        bounded_output(&mut self.0, OUTPUT_LIMIT)
    }

    /// Runs it to its end without blocking the test's runtime, at most [`OUTPUT_LIMIT`].
    pub async fn output_async(mut self) -> Output {
        tokio::task::spawn_blocking(move || bounded_output(&mut self.0, OUTPUT_LIMIT))
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
    }

    /// Starts it, its output going to `stdout` and `stderr`.
    pub fn spawn(mut self, stdout: Stdio, stderr: Stdio) -> Child {
        self.0
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .expect("spawn skillscope")
    }
}

/// How long one `skillscope` command of a test may take (the slowest takes a few minutes): a
/// hang fails its test with what the command printed, before CI's watch
/// (`scripts/ci-watch.sh`) stops the whole suite for its silence.
pub const OUTPUT_LIMIT: Duration = Duration::from_secs(15 * 60);

/// Runs `cmd` to its end, its standard output and error collected, like
/// [`Command::output`]; past `limit` it is killed and the test fails with the last of what it
/// printed so far.
pub fn bounded_output(cmd: &mut Command, limit: Duration) -> Output {
    use std::io::Read;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {:?}: {e}", cmd.get_program()));
    let collect = |mut r: Box<dyn Read + Send>| {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let into = seen.clone();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = r.read(&mut buf) {
                if n == 0 {
                    break;
                }
                into.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        (seen, reader)
    };
    let (out, out_reader) = collect(Box::new(child.stdout.take().unwrap()));
    let (err, err_reader) = collect(Box::new(child.stderr.take().unwrap()));
    let Some(status) = exit_within(&mut child, limit) else {
        let tail = |b: &std::sync::Mutex<Vec<u8>>| {
            let b = b.lock().unwrap();
            String::from_utf8_lossy(&b[b.len().saturating_sub(6000)..]).into_owned()
        };
        panic!(
            "{:?} {:?} did not end within {limit:?}; it was killed. Its last output:\n\
             --- stdout\n{}\n--- stderr\n{}",
            cmd.get_program(),
            cmd.get_args().collect::<Vec<_>>(),
            tail(&out),
            tail(&err)
        );
    };
    // A grandchild that kept the pipes open does not hold the test: what came is enough.
    for reader in [out_reader, err_reader] {
        let t = Instant::now();
        while !reader.is_finished() && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let take =
        |b: std::sync::Arc<std::sync::Mutex<Vec<u8>>>| std::mem::take(&mut *b.lock().unwrap());
    Output {
        status,
        stdout: take(out),
        stderr: take(err),
    }
}

/// Standard output and error of `o`, one after the other.
pub fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

/// The arguments of a command line written as one line (`--task slow --trials 3`): split at
/// spaces, so no argument may hold one.
pub fn words(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_string).collect()
}

/// `skillscope run --headless` over the fixture tasks into the scratch store `s`, as run `run`,
/// with `extra` arguments.
pub fn headless_run<S: AsRef<OsStr>>(s: &Scratch, run: &str, extra: &[S]) -> Skillscope {
    Skillscope::new(["run", "--headless", "--tasks"])
        .arg(fixtures())
        .arg("--db")
        .arg(s.db())
        .arg("--jobs-dir")
        .arg(s.jobs())
        .args(["--run", run])
        .args(extra)
}

/// [`headless_run`] started, its standard error in `<scratch>/<run>.stderr` ([`stderr_of`]).
pub fn spawn_run<S: AsRef<OsStr>>(s: &Scratch, run: &str, extra: &[S]) -> Child {
    let stderr = std::fs::File::create(s.dir.path().join(format!("{run}.stderr"))).unwrap();
    headless_run(s, run, extra).spawn(Stdio::null(), stderr.into())
}

/// [`headless_run`] started, its standard error a pipe read with [`stderr_lines`] (a pipe, not a
/// file: what `run | tee` gives it).
pub fn spawn_run_piped<S: AsRef<OsStr>>(s: &Scratch, run: &str, extra: &[S]) -> Child {
    headless_run(s, run, extra).spawn(Stdio::null(), Stdio::piped())
}

/// What run `run` of [`spawn_run`] wrote to its standard error so far.
pub fn stderr_of(s: &Scratch, run: &str) -> String {
    std::fs::read_to_string(s.dir.path().join(format!("{run}.stderr"))).unwrap_or_default()
}

/// The child's standard error, line by line, as it comes (read on a thread that ends with the
/// pipe).
pub fn stderr_lines(
    child: &mut Child,
) -> (
    std::sync::mpsc::Receiver<String>,
    std::thread::JoinHandle<()>,
) {
    let stderr = child.stderr.take().expect("a piped standard error");
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)) {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (rx, reader)
}

/// Waits for the process to exit; its exit code. Past `limit` it is killed and the test fails.
pub fn wait(child: &mut Child, limit: Duration) -> i32 {
    match exit_within(child, limit) {
        Some(st) => st.code().unwrap_or(-1),
        None => panic!("skillscope did not exit within {limit:?}"),
    }
}

/// The process's exit status once it exits; `None` when it ran past `limit` (it is then
/// killed and reaped).
fn exit_within(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return Some(st);
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Run `run` of the scratch store and its latest attempts.
pub fn state(s: &Scratch, run: &str) -> Option<(RunRow, Vec<TrialRow>)> {
    let c = s.store.connect().ok()?;
    let r = queries::find_run(&c, run).ok()??;
    let t = queries::current_trials(&c, r.id).ok()?;
    Some((r, t))
}

/// Polls the store until `pred(run, latest attempts)` holds; past `limit` the test fails with
/// the state it saw.
pub fn wait_for(
    s: &Scratch,
    run: &str,
    limit: Duration,
    pred: impl Fn(&RunRow, &[TrialRow]) -> bool,
) {
    let t0 = Instant::now();
    loop {
        if let Some((r, t)) = state(s, run)
            && pred(&r, &t)
        {
            return;
        }
        assert!(
            t0.elapsed() < limit,
            "condition not reached within {limit:?}: {:#?}",
            state(s, run).map(|(r, t)| (
                r.status,
                t.iter()
                    .map(|t| format!("{} {} {:?}", t.trial_name, t.status, t.outcome))
                    .collect::<Vec<_>>()
            ))
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Attempts in a container now.
pub fn active(t: &[TrialRow]) -> usize {
    t.iter().filter(|t| t.status.is_active()).count()
}

/// Finished attempts.
pub fn done(t: &[TrialRow]) -> usize {
    t.iter().filter(|t| t.status == TrialStatus::Done).count()
}
