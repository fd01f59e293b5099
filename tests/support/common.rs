//! Helpers shared by the integration tests. Tests that touch Docker need a real daemon (CI starts
//! one with `scripts/docker-up.sh`); they fail with a clear message when it is missing rather
//! than pass without testing anything.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use skillscope::config::RunSettings;
use skillscope::engine::{Engine, PreparedRun, RunOutcome, RunRequest};
use skillscope::skillsbench::{Catalog, Condition};
use skillscope::store::{Store, TrialRow, queries};
use tokio_util::sync::CancellationToken;

/// The shared data folder (`../shared`, or `$SKILLSCOPE_SHARED`) holding `skillsbench/`: real
/// task definitions, the catalog, and published Harbor runs and result files.
pub fn shared() -> PathBuf {
    let candidates = [
        std::env::var_os("SKILLSCOPE_SHARED").map(PathBuf::from),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared")),
        Some(PathBuf::from("/work/shared")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| p.join("skillsbench/published").is_dir())
        .expect("the shared SkillsBench data (set SKILLSCOPE_SHARED)")
}

/// The fixture tasks folder.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tasks")
}

/// A scratch folder with a database and a jobs folder.
pub struct Scratch {
    /// Kept alive for the test.
    pub dir: tempfile::TempDir,
    /// The store.
    pub store: Store,
}

impl Scratch {
    /// A new scratch folder and store.
    pub fn new() -> Scratch {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("test.db")).expect("store");
        Scratch { dir, store }
    }

    /// The jobs folder.
    pub fn jobs(&self) -> PathBuf {
        self.dir.path().join("jobs")
    }

    /// The database file.
    pub fn db(&self) -> PathBuf {
        self.dir.path().join("test.db")
    }

    /// A run request over fixture tasks ([`oracle_request`] into this folder's jobs).
    pub fn request(
        &self,
        name: &str,
        tasks: &[&str],
        conditions: Vec<Condition>,
        trials: u32,
    ) -> RunRequest {
        oracle_request(name, &fixtures(), tasks, conditions, trials, &self.jobs())
    }

    /// Runs a request to the end.
    pub async fn run(&self, req: RunRequest) -> RunOutcome {
        require_docker().await;
        Engine::new(self.store.clone())
            .run(prepared(req), CancellationToken::new())
            .await
            .expect("run")
    }

    /// Latest attempts of a run.
    pub fn trials(&self, run_id: i64) -> Vec<TrialRow> {
        let c = self.store.connect().expect("connect");
        queries::current_trials(&c, run_id).expect("trials")
    }
}

/// The tests' one run request: the `oracle` agent over the tasks `filter` of `tasks` (all when
/// empty) under `conditions`, `trials` each, 4 at once, trial folders into `jobs`.
pub fn oracle_request(
    name: &str,
    tasks: &Path,
    filter: &[&str],
    conditions: Vec<Condition>,
    trials: u32,
    jobs: &Path,
) -> RunRequest {
    RunRequest {
        name: Some(name.to_string()),
        tasks_dir: tasks.to_path_buf(),
        task_filter: filter.iter().map(|s| s.to_string()).collect(),
        conditions,
        n_trials: trials,
        agent: "oracle".into(),
        model: None,
        jobs_dir: jobs.to_path_buf(),
        catalog: Catalog::shipped(),
        settings: RunSettings {
            concurrency: 4,
            ..Default::default()
        },
        stay_alive: None,
        resume_command: None,
        pin: Default::default(),
        sequential: None,
    }
}

/// `req` with its task set loaded, as the engine takes it ([`PreparedRun::load`]).
pub fn prepared(req: RunRequest) -> PreparedRun {
    PreparedRun::load(req).expect("the task set loads")
}

/// The one trial of `task` × `condition` in `rows`.
pub fn one<'a>(rows: &'a [TrialRow], task: &str, condition: &str) -> &'a TrialRow {
    let matches: Vec<&TrialRow> = rows
        .iter()
        .filter(|r| r.task_id == task && r.condition == condition)
        .collect();
    assert_eq!(matches.len(), 1, "{task} {condition}: {matches:#?}");
    matches[0]
}

/// Panics with instructions when no Docker daemon answers.
pub async fn require_docker() {
    let ok = match bollard::Docker::connect_with_defaults() {
        Ok(d) => d.ping().await.is_ok(),
        Err(_) => false,
    };
    assert!(
        ok,
        "these tests need a Docker daemon: run `sudo scripts/docker-up.sh` (installs docker.io and starts dockerd)"
    );
}

/// Containers still carrying the uid of run `run` of `s`'s database. By uid, not by name: tests
/// running at once may give their runs the same name (`outcomes`, `cancel`).
pub async fn containers_of_run(s: &Scratch, run: &str) -> usize {
    containers_of_run_described(s, run).await.len()
}

/// The containers of run `run` left on the default daemon (as [`containers_of_run`]), one
/// `name state (status) labels` each: what a failed "nothing left" assertion shows.
pub async fn containers_of_run_described(s: &Scratch, run: &str) -> Vec<String> {
    let uid = skillscope::store::queries::find_run(&s.store.connect().unwrap(), run)
        .unwrap()
        .unwrap_or_else(|| panic!("no run {run} in {}", s.db().display()))
        .uid;
    let d = bollard::Docker::connect_with_defaults().expect("docker");
    labelled(&d, &format!("skillscope.run-uid={uid}"))
        .await
        .into_iter()
        .map(|c| {
            format!(
                "{} {:?} ({}) labels {:?}",
                c.names.unwrap_or_default().join(","),
                c.state,
                c.status.unwrap_or_default(),
                c.labels.unwrap_or_default()
            )
        })
        .collect()
}

/// The names of the containers of `docker` (running or not) that carry `label` (`key=value`).
pub async fn containers_labelled(docker: &bollard::Docker, label: &str) -> Vec<String> {
    labelled(docker, label)
        .await
        .into_iter()
        .map(|c| c.names.unwrap_or_default().join(","))
        .collect()
}

/// The containers of `docker` (running or not) that carry `label` (`key=value`).
async fn labelled(docker: &bollard::Docker, label: &str) -> Vec<bollard::models::ContainerSummary> {
    let filters = std::collections::HashMap::from([("label".to_string(), vec![label.to_string()])]);
    docker
        .list_containers(Some(bollard::query_parameters::ListContainersOptions {
            all: true,
            filters: Some(filters),
            ..Default::default()
        }))
        .await
        .expect("list containers")
}

/// Runs the `skillscope` binary in the scratch folder (its database, a private data folder):
/// [`super::process::Skillscope::scratch`].
pub fn skillscope(s: &Scratch, args: &[&str]) -> std::process::Output {
    super::process::Skillscope::new(args).scratch(s).output()
}

/// The SHA-256 of a skill folder as docs/scoring.md defines it, computed here independently of
/// skillscope: over the lines `<path> NUL <sha256 of the file> LF` of every file under `dir`
/// (relative paths with `/`, sorted; no links in test fixtures), lowercase hex.
pub fn folder_sha256(dir: &Path) -> String {
    use sha2::{Digest, Sha256};
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
        for e in std::fs::read_dir(dir).expect("read skill folder") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap();
                let rel: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                let bytes = std::fs::read(&p).expect("read file");
                out.push((rel.join("/"), format!("{:x}", Sha256::digest(&bytes))));
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    files.sort();
    let mut h = Sha256::new();
    for (path, sha) in files {
        h.update(format!("{path}\0{sha}\n").as_bytes());
    }
    format!("{:x}", h.finalize())
}

/// The `agent/skill-exposure.json` of a trial folder.
pub fn skill_exposure(trial_dir: &Path) -> serde_json::Value {
    let path = trial_dir.join("agent/skill-exposure.json");
    serde_json::from_slice(
        &std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

/// Copies the folder `from` to `to` (created), files and sub-folders; `rename` replaces a
/// string in every file name and file text on the way (a fixture task copied under another id).
pub fn copy_tree(from: &Path, to: &Path, rename: Option<(&str, &str)>) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        let name = rename.map_or(name.clone(), |(a, b)| name.replace(a, b));
        let target = to.join(name);
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target, rename);
        } else {
            let bytes = std::fs::read(e.path()).unwrap();
            let bytes = match (rename, String::from_utf8(bytes.clone())) {
                (Some((a, b)), Ok(text)) => text.replace(a, b).into_bytes(),
                _ => bytes,
            };
            std::fs::write(&target, bytes).unwrap();
            let mode = std::fs::metadata(e.path()).unwrap().permissions();
            std::fs::set_permissions(&target, mode).unwrap();
        }
    }
}
