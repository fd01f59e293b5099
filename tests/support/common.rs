//! Helpers shared by the integration tests. Tests that touch Docker need a real daemon (CI starts
//! one with `scripts/docker-up.sh`); they fail with a clear message when it is missing rather
//! than pass without testing anything.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use skillscope::config::RunSettings;
use skillscope::engine::{Engine, RunOutcome, RunRequest};
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

    /// A run request over fixture tasks.
    pub fn request(
        &self,
        name: &str,
        tasks: &[&str],
        conditions: Vec<Condition>,
        trials: u32,
    ) -> RunRequest {
        RunRequest {
            name: Some(name.to_string()),
            tasks_dir: fixtures(),
            task_filter: tasks.iter().map(|s| s.to_string()).collect(),
            conditions,
            n_trials: trials,
            agent: "oracle".into(),
            model: None,
            jobs_dir: self.jobs(),
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

    /// Runs a request to the end.
    pub async fn run(&self, req: RunRequest) -> RunOutcome {
        require_docker().await;
        Engine::new(self.store.clone())
            .run(req, CancellationToken::new())
            .await
            .expect("run")
    }

    /// Latest attempts of a run.
    pub fn trials(&self, run_id: i64) -> Vec<TrialRow> {
        let c = self.store.connect().expect("connect");
        queries::current_trials(&c, run_id).expect("trials")
    }
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

/// Containers still carrying the run label.
pub async fn containers_of_run(run: &str) -> usize {
    let d = bollard::Docker::connect_with_defaults().expect("docker");
    let filters = std::collections::HashMap::from([(
        "label".to_string(),
        vec![format!("skillscope.run={run}")],
    )]);
    d.list_containers(Some(bollard::query_parameters::ListContainersOptions {
        all: true,
        filters: Some(filters),
        ..Default::default()
    }))
    .await
    .expect("list")
    .len()
}

/// Runs the `skillscope` binary in the scratch folder (its database, a private data folder).
pub fn skillscope(s: &Scratch, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .args(args)
        .env("XDG_DATA_HOME", s.dir.path().join("data"))
        .env("SKILLSCOPE_DB", s.db())
        .current_dir(s.dir.path())
        .output()
        .expect("run skillscope")
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
