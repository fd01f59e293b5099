//! The example tasks shipped inside the binary (`data/example-tasks/`), used when `run` is given no
//! `--tasks`. They follow the SkillsBench layout and build offline from skillscope's own busybox base
//! image (see [`crate::runner::base_image`]), so the whole job runs on a machine without registries.

use std::path::{Path, PathBuf};

use include_dir::{Dir, include_dir};
use sha2::{Digest, Sha256};

static EXAMPLES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/data/example-tasks");

/// The measured durations of the example tasks (`data/example-durations.toml`: how they were
/// measured is written there).
const DURATIONS: &str = include_str!("../../data/example-durations.toml");

/// Seconds one trial of the example tasks costs a slot under `agent` — (point, low, high), see
/// `data/example-durations.toml` — when they were measured for that agent (the oracle).
pub fn reference_seconds(agent: &str) -> Option<(f64, f64, f64)> {
    #[derive(serde::Deserialize)]
    struct Durations {
        seconds_per_trial: f64,
        low: f64,
        high: f64,
    }
    let all: std::collections::BTreeMap<String, Durations> = toml::from_str(DURATIONS).ok()?;
    all.get(agent).map(|d| (d.seconds_per_trial, d.low, d.high))
}

/// True when `root` is the built-in example tasks' folder (as [`materialize`] writes it).
pub fn is_examples(root: &Path) -> bool {
    root.ancestors().any(|a| a.ends_with("example-tasks"))
}

/// Content hash of the embedded example tasks (first 16 hex digits of SHA-256 over paths and bytes).
pub fn examples_hash() -> String {
    let mut h = Sha256::new();
    let mut files = Vec::new();
    collect(&EXAMPLES, &mut files);
    files.sort_by(|a, b| a.0.cmp(&b.0));
    for (path, bytes) in files {
        h.update(path.to_string_lossy().as_bytes());
        h.update([0]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    }
    hex::encode(h.finalize())[..16].to_string()
}

fn collect<'a>(dir: &'a Dir<'a>, out: &mut Vec<(PathBuf, &'a [u8])>) {
    for f in dir.files() {
        out.push((f.path().to_path_buf(), f.contents()));
    }
    for d in dir.dirs() {
        collect(d, out);
    }
}

/// Writes the example tasks under `base/example-tasks/<hash>/` (once; later calls reuse the folder)
/// and returns that folder. The path depends only on the content, so a resumed run finds it again.
///
/// # Errors
/// I/O errors creating or writing the folder.
pub fn materialize(base: &Path) -> std::io::Result<PathBuf> {
    let target = base.join("example-tasks").join(examples_hash());
    if target.join(".complete").exists() {
        return Ok(target);
    }
    std::fs::create_dir_all(base.join("example-tasks"))?;
    let staging = tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(base.join("example-tasks"))?;
    let mut files = Vec::new();
    collect(&EXAMPLES, &mut files);
    for (rel, bytes) in files {
        let dest = staging.path().join(&rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&dest, bytes)?;
        if rel.extension().is_some_and(|e| e == "sh") {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755))?;
        }
    }
    std::fs::write(staging.path().join(".complete"), examples_hash())?;
    let staged = staging.keep();
    match std::fs::rename(&staged, &target) {
        Ok(()) => Ok(target),
        // Another process won the race: use its copy.
        Err(_) if target.join(".complete").exists() => {
            let _ = std::fs::remove_dir_all(&staged);
            Ok(target)
        }
        Err(e) => Err(e),
    }
}

/// Default place for materialized examples: `$XDG_DATA_HOME/skillscope` (or the OS equivalent),
/// falling back to the system temp folder.
pub fn default_base() -> PathBuf {
    dirs::data_local_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("skillscope")
}

/// Ids of the embedded example tasks.
pub fn example_ids() -> Vec<String> {
    let mut ids: Vec<String> = EXAMPLES
        .dirs()
        .map(|d| d.path().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    ids
}
