//! The preflight on the command line ([`crate::preflight`]): its inputs from a plan (or a run's
//! request), and its table — every check with its result, then one line per failure with its fix.

use std::path::PathBuf;

use color_eyre::eyre::Result;

use super::plan_setup::DryRun;
use crate::acontext::AcontextConfig;
use crate::acontext::learn::StatusMode;
use crate::cli::AcontextArgs;
use crate::console::table::{Column, fit, terminal_width};
use crate::experiment::plan::Plan;
use crate::preflight::{Inputs, Preflight, Verdict, acontext::Target};

/// The preflight's inputs for an experiment of `plan` (round 1's request, its database, how to
/// reach Acontext — the dry run's stand-in when there is one).
///
/// # Errors
/// Bad settings of the plan or the config file (what [`super::request::build_request`] refuses).
pub fn for_plan(
    plan: &Plan,
    db: Option<PathBuf>,
    acontext: &AcontextArgs,
    dry: Option<&DryRun>,
) -> Result<Inputs> {
    let args = super::plan_setup::run_args(plan, if dry.is_some() { None } else { db });
    let file = crate::config::FileConfig::load(args.config.as_deref())?;
    let (run, db) = super::request::build_request(&args, &file)?;
    let settings = super::acontext::acontext_settings(acontext, Some(&plan.acontext))?;
    let status_mode = settings
        .status_mode
        .as_deref()
        .map(StatusMode::parse)
        .transpose()
        .map_err(|e| color_eyre::eyre::eyre!(e))?
        .unwrap_or(StatusMode::Auto);
    let target = match dry {
        Some(d) => Ok(Target {
            config: d.config.clone(),
            status_mode,
            key_env: "the stand-in's own key".into(),
        }),
        None => {
            let key_env = settings
                .api_key_env
                .clone()
                .unwrap_or_else(|| "ACONTEXT_API_KEY".into());
            match AcontextConfig::from_settings(&settings) {
                Ok(config) => Ok(Target {
                    config,
                    status_mode,
                    key_env,
                }),
                Err(crate::acontext::AcontextError::Config(_)) => {
                    Err(format!("no key: {key_env} is not set"))
                }
                Err(e) => Err(e.to_string()),
            }
        }
    };
    Inputs::loading(run, db, Some(target)).map_err(crate::commands::task_set_error)
}

/// The checks as a table: area, check, result, what was found, what it cost, seconds.
pub fn table(p: &Preflight) -> super::table::Fitted {
    let rows = p
        .checks
        .iter()
        .map(|c| {
            vec![
                c.area.to_string(),
                crate::sanitize::text(&c.what),
                c.verdict.label().to_string(),
                crate::sanitize::text(&c.detail),
                c.cost.clone(),
                format!("{:.1}", c.seconds),
            ]
        })
        .collect();
    let columns = [
        Column::new("area"),
        Column::new("check"),
        Column::new("result").short("res"),
        Column::new("found").text(),
        Column::new("cost"),
        Column::new("s"),
    ];
    fit(&columns, rows, terminal_width())
}

/// The lines under the table: one per failure (and warning) with its fix, then the verdict.
pub fn summary(p: &Preflight) -> Vec<String> {
    let mut out = Vec::new();
    for c in p.checks.iter().filter(|c| c.verdict != Verdict::Ok) {
        let line = crate::sanitize::text(&format!(
            "{} {} — {}: {}{}",
            c.verdict.label(),
            c.area,
            c.what,
            c.detail,
            c.fix
                .as_deref()
                .map(|f| format!(" → {f}"))
                .unwrap_or_default()
        ));
        // One line, each run of blanks one space (a wrapped message's indentation, a line break
        // of a server's answer).
        out.push(line.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    let failed = p.failures().count();
    let warned = p
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Warn)
        .count();
    out.push(if failed == 0 {
        format!(
            "preflight passed: {} checks in {:.1}s{}",
            p.checks.len(),
            p.seconds,
            if warned > 0 {
                format!(" ({warned} warning(s) above)")
            } else {
                String::new()
            }
        )
    } else {
        format!(
            "preflight failed: {failed} of {} checks in {:.1}s — nothing was started; fix the above and run the same command again",
            p.checks.len(),
            p.seconds
        )
    });
    out
}

/// Prints the table and the summary lines on stdout (`skillscope preflight`) or stderr (before a
/// run or an experiment, beside its progress lines).
pub fn print(p: &Preflight, to_stderr: bool) {
    let text = format!("{}\n{}", table(p), summary(p).join("\n"));
    if to_stderr {
        crate::errln!("{text}");
    } else {
        crate::outln!("{text}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preflight::Check;

    #[test]
    fn a_warning_is_one_line_with_single_spaces() {
        let p = Preflight {
            checks: vec![
                Check::ok("docker", "daemon answers", "20.10"),
                Check::warn(
                    "acontext",
                    "learning spaces",
                    "24 spaces exist:\n                        the run makes 2 more",
                    "remove   unused ones",
                ),
            ],
            seconds: 1.0,
        };
        let lines = summary(&p);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].ends_with("24 spaces exist: the run makes 2 more → remove unused ones"),
            "{}",
            lines[0]
        );
        assert!(lines[1].contains("1 warning(s) above"), "{}", lines[1]);
    }
}
