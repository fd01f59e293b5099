//! One trial's detail: its attempts, skill use and log files (tails of the agent's and
//! verifier's output, the trajectory rendered as text), re-read on each poll while it runs.
//! Container output is sanitized when read.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use crate::domain::{SkillUseRow, TrialKey, TrialRow};
use crate::store::{StoreError, queries};

/// Most bytes of a log file shown (its end).
pub const LOG_TAIL_BYTES: u64 = 512 * 1024;

/// A log file of an attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct LogFile {
    /// Tab label.
    pub label: String,
    /// Where it is.
    pub path: PathBuf,
    /// Its text (the end, at most [`LOG_TAIL_BYTES`]), control sequences stripped; or why it
    /// could not be read.
    pub text: String,
    /// True when only the end is shown.
    pub truncated: bool,
}

/// A trial's attempts and the logs of the latest one.
#[derive(Debug, Clone, PartialEq)]
pub struct Detail {
    /// Which trial.
    pub key: TrialKey,
    /// Every attempt, oldest first.
    pub attempts: Vec<TrialRow>,
    /// Logs of the latest attempt: trajectory (rendered), verifier output, agent output, build log.
    pub logs: Vec<LogFile>,
    /// Skills the latest attempt used.
    pub skill_uses: Vec<SkillUseRow>,
}

impl Detail {
    /// The latest attempt.
    pub fn latest(&self) -> Option<&TrialRow> {
        self.attempts.last()
    }
}

/// Reads the end of a log file the container may have written: no symlinks, capped, sanitized.
pub fn read_log(label: &str, path: &Path) -> LogFile {
    let (text, truncated) = match crate::fs::read_tail(path, LOG_TAIL_BYTES) {
        Ok((bytes, longer)) => (crate::sanitize::bytes(&bytes), longer),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            ("(not written yet)".to_string(), false)
        }
        Err(e) => (format!("(cannot read: {e})"), false),
    };
    LogFile {
        label: label.to_string(),
        path: path.to_path_buf(),
        text,
        truncated,
    }
}

/// Reads every attempt of `key` and the logs of the latest one.
///
/// # Errors
/// Database errors.
pub fn load_detail(conn: &Connection, run_id: i64, key: &TrialKey) -> Result<Detail, StoreError> {
    let attempts = queries::trial_attempts(conn, run_id, key)?;
    let mut logs = Vec::new();
    let skill_uses = match attempts.last() {
        Some(a) => queries::skill_uses(conn, a.id)?,
        None => Vec::new(),
    };
    if let Some(dir) = attempts.last().and_then(|a| a.trial_dir.as_ref()) {
        let dir = Path::new(dir);
        let traj = attempts
            .last()
            .and_then(|a| a.trajectory_path.clone())
            .map(PathBuf::from)
            .unwrap_or_else(|| dir.join("agent/trajectory.json"));
        logs.push(read_trajectory(&traj));
        logs.push(read_log("verifier", &dir.join("verifier/test-stdout.txt")));
        logs.push(read_log("agent", &agent_log(dir)));
        logs.push(read_log("build", &dir.join("environment/build.log")));
    }
    Ok(Detail {
        key: key.clone(),
        attempts,
        logs,
        skill_uses,
    })
}

/// Renders an ATIF trajectory as text: one block per step with its source, time, message, tool
/// calls (→) and observations (←), each cut to a few lines. Sanitized like any container output.
pub fn read_trajectory(path: &Path) -> LogFile {
    let text = match crate::harbor::atif::Trajectory::read(path) {
        Ok(t) => render_trajectory(&t),
        Err(e) if !path.exists() => {
            let _ = e;
            "(no trajectory: agent/trajectory.json was not written)".to_string()
        }
        Err(e) => format!("(cannot read the trajectory: {e})"),
    };
    LogFile {
        label: "trajectory".into(),
        path: path.to_path_buf(),
        text: crate::sanitize::text(&text),
        truncated: false,
    }
}

fn clip_lines(s: &str, lines: usize, width: usize) -> Vec<String> {
    let all: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut out: Vec<String> = all
        .iter()
        .take(lines)
        .map(|l| {
            let l = l.trim_end();
            if l.chars().count() > width {
                format!("{}…", l.chars().take(width).collect::<String>())
            } else {
                l.to_string()
            }
        })
        .collect();
    if all.len() > lines {
        out.push(format!("… {} more lines", all.len() - lines));
    }
    out
}

/// The text [`read_trajectory`] shows.
pub fn render_trajectory(t: &crate::harbor::atif::Trajectory) -> String {
    let mut out = format!(
        "{} · {}{} · {} · {}\n",
        t.schema_version,
        t.agent.name,
        t.agent
            .model_name
            .as_deref()
            .map(|m| format!(" ({m})"))
            .unwrap_or_default(),
        crate::format::count(t.steps.len(), "step", "steps"),
        crate::format::count(t.tool_call_count(), "tool call", "tool calls")
    );
    for s in &t.steps {
        let time = s
            .timestamp
            .as_deref()
            .and_then(|ts| ts.get(11..19))
            .unwrap_or("");
        out.push_str(&format!("\n#{} {} {}\n", s.step_id, s.source, time));
        for l in clip_lines(&s.message_text(), 4, 160) {
            out.push_str(&format!("  {l}\n"));
        }
        for c in s.calls() {
            out.push_str(&format!(
                "  → {} {}\n",
                c.function_name,
                clip_lines(&c.brief(), 1, 150).join("")
            ));
        }
        for r in s.results() {
            for (i, l) in clip_lines(&r.text(), 3, 150).into_iter().enumerate() {
                out.push_str(&format!("  {} {l}\n", if i == 0 { "←" } else { " " }));
            }
        }
    }
    out
}

/// The agent's main log: `agent/oracle.txt` for the oracle, else the first `*.txt` in `agent/`.
fn agent_log(trial_dir: &Path) -> PathBuf {
    let oracle = trial_dir.join("agent/oracle.txt");
    if oracle.exists() {
        return oracle;
    }
    std::fs::read_dir(trial_dir.join("agent"))
        .ok()
        .and_then(|rd| {
            let mut txt: Vec<PathBuf> = rd
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "txt"))
                .collect();
            txt.sort();
            txt.into_iter().next()
        })
        .unwrap_or(oracle)
}
