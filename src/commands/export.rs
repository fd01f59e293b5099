//! `skillscope export`: a learning space's skills into a new versioned SkillsBench skills folder
//! (`<out>/<label>-v<N>/<skill>/SKILL.md …`), usable as the condition `skills:<folder>`.

use std::path::PathBuf;

use color_eyre::eyre::{Result, eyre};

use crate::acontext::versions::export_version;
use crate::cli::ExportArgs;
use crate::store::learning as lq;
use crate::store::{Store, queries};

/// Runs `skillscope export`.
///
/// # Errors
/// A missing database, run or space; Acontext or file errors (naming the endpoint or file).
pub async fn execute(args: ExportArgs) -> Result<()> {
    if !args.db.db.exists() {
        return Err(eyre!("no database at {}", args.db.db.display()));
    }
    let settings = super::shared::acontext::acontext_settings(&args.acontext, None)?;
    let client = super::shared::acontext::client_for(&settings)?;
    let store = Store::open(&args.db.db)?;
    let conn = store.connect()?;
    let run = super::find_run(&conn, Some(&args.run))?;
    let space = lq::list_spaces(&conn)?
        .into_iter()
        .find(|s| s.run_id == run.id && s.label == args.label)
        .ok_or_else(|| {
            eyre!(
                "run {} has no learning space {} (run `skillscope learn` first)",
                run.name,
                args.label
            )
        })?;
    let _ = queries::run_tasks(&conn, run.id)?;
    let root = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("exports").join(&run.name));
    let (row, report) = export_version(&store, &client, &space, &root).await?;
    store.writer().stop();
    crate::outln!(
        "{}: {} skill(s) exported to {}",
        space.label,
        row.n_skills,
        row.dir
    );
    for s in &report.skills {
        let problems = if s.problems.is_empty() {
            String::new()
        } else {
            format!(" (warnings: {})", s.problems.join("; "))
        };
        crate::outln!(
            "  {}/ — {} file(s), {}{}",
            s.dir_name,
            s.files.len(),
            &s.content_hash[..12.min(s.content_hash.len())],
            crate::sanitize::text(&problems)
        );
    }
    for r in &report.refused {
        crate::outln!("  refused: {}", crate::sanitize::text(&r.to_string()));
    }
    crate::outln!("use it as a condition: --conditions skills:{}", row.dir);
    Ok(())
}
