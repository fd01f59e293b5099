//! `skillscope summarize <trial dir>`: the deterministic trajectory summary the learning phase
//! sends to Acontext, and the skills the trajectory shows in use — for auditing either.

use color_eyre::eyre::{Result, eyre};

use crate::cli::SummarizeArgs;
use crate::harbor::atif::Trajectory;
use crate::harbor::ctrf::Report;
use crate::harbor::reward::scalar_reward;
use crate::harbor::skill_use;
use crate::harbor::summary::{SummaryInput, summarize};
use crate::import::outcome_of;

/// Runs `skillscope summarize`.
///
/// # Errors
/// A folder without a readable `result.json`.
pub fn execute(args: SummarizeArgs) -> Result<()> {
    let dir = &args.trial_dir;
    let result_path = dir.join("result.json");
    let result: serde_json::Value = serde_json::from_slice(
        &crate::fs::read_capped(&result_path, 8 * 1024 * 1024)
            .map_err(|e| eyre!("{}: {e}", result_path.display()))?,
    )
    .map_err(|e| eyre!("{}: {e}", result_path.display()))?;
    let rewards: Option<std::collections::BTreeMap<String, f64>> =
        serde_json::from_value(result["verifier_result"]["rewards"].clone()).ok();
    let reward = rewards.as_ref().and_then(scalar_reward);
    let outcome = outcome_of(result["exception_info"]["exception_type"].as_str(), reward);
    let trajectory = Trajectory::read(&dir.join("agent/trajectory.json"));
    let ctrf = Report::read(&dir.join("verifier/ctrf.json")).ok();
    let test_output =
        crate::fs::read_text_capped(&dir.join("verifier/test-stdout.txt"), 1024 * 1024).ok();
    let summary = summarize(
        &SummaryInput {
            trajectory: trajectory.as_ref().ok(),
            instruction: None,
            ctrf: ctrf.as_ref(),
            test_output: test_output.as_deref(),
            outcome: Some(outcome),
            reward,
        },
        args.limit,
    );
    print!("{}", crate::sanitize::text(&summary.text));
    match &trajectory {
        Ok(t) => {
            let uses = skill_use::detect(t, &[]);
            println!(
                "\nskills used: {}",
                if uses.is_empty() {
                    "none".to_string()
                } else {
                    uses.iter()
                        .map(|u| {
                            format!(
                                "{} ({}, step {}, ×{})",
                                u.skill,
                                u.kind.as_str(),
                                u.first_step,
                                u.count
                            )
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            );
        }
        Err(e) => println!("\nno trajectory: {e}"),
    }
    Ok(())
}
