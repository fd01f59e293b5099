//! What a root given to `skillscope import` is, decided before anything is imported: a Harbor
//! jobs folder, a SkillsBench per-trial CSV, or the website's results registry (see
//! [`super::published`]); anything else is an error naming it.

use std::path::Path;

use super::csv::CSV_REQUIRED;
use super::registry::array_elements;
use super::{Format, MAX_FILE};

const WHAT_IS_ACCEPTED: &str = "expected a Harbor jobs folder, a SkillsBench per-trial CSV (*.csv with \
     columns job_name, task, condition, run_index, …, reward) or a results registry (*.json array of \
     {task, harness, model, modelShort, condition, score, trials, passCount, perfectCount})";

/// Tells which published format `path` is, from its extension and contents.
///
/// # Errors
/// A message saying what the file is not (the caller names the file).
pub fn detect(path: &Path) -> Result<Format, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.is_file() {
        return Err(format!(
            "not a folder or a regular file; {WHAT_IS_ACCEPTED}"
        ));
    }
    if meta.len() > MAX_FILE {
        return Err(format!("larger than {MAX_FILE} bytes"));
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("csv") => {
            let mut rdr = csv::ReaderBuilder::new()
                .flexible(true)
                .from_path(path)
                .map_err(|e| format!("cannot read it: {e}"))?;
            let header: Vec<String> = rdr
                .headers()
                .map_err(|e| format!("unreadable CSV header: {e}"))?
                .iter()
                .map(|h| h.trim().to_string())
                .collect();
            let missing: Vec<&str> = CSV_REQUIRED
                .iter()
                .copied()
                .filter(|c| !header.iter().any(|h| h == c))
                .collect();
            if missing.is_empty() {
                Ok(Format::Csv)
            } else {
                Err(format!(
                    "a CSV without the SkillsBench per-trial header (no column {}); {WHAT_IS_ACCEPTED}",
                    missing.join(", ")
                ))
            }
        }
        Some("json") => {
            let bytes = crate::fs::read_capped(path, MAX_FILE).map_err(|e| e.to_string())?;
            let arr = array_elements(&bytes)
                .map_err(|e| format!("not a JSON array ({e}); {WHAT_IS_ACCEPTED}"))?;
            if arr.elements.is_empty() {
                return Err(format!("an empty JSON array; {WHAT_IS_ACCEPTED}"));
            }
            let looks_like_row = arr.elements.iter().take(3).any(|e| {
                serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(
                    &bytes[e.start..e.end],
                )
                .is_ok_and(|m| {
                    ["task", "harness", "condition", "score", "passCount"]
                        .iter()
                        .all(|k| m.contains_key(*k))
                })
            });
            if looks_like_row {
                Ok(Format::Registry)
            } else {
                Err(format!(
                    "a JSON array whose first rows are not results-registry rows; {WHAT_IS_ACCEPTED}"
                ))
            }
        }
        _ => Err(WHAT_IS_ACCEPTED.to_string()),
    }
}
