//! The per-trial CSV SkillsBench's authors publish (`experiment_runs__<agent>-<model>_<subset>.csv`):
//! its columns, and agent and model from the file or job names. See [`super::published`] for how
//! its rows become trials.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use super::{FileReport, Format, ImportOptions, NewTrial, RunPlan, condition_from, key_of};
use crate::domain::Outcome;
use crate::harbor::reward::is_pass;
use crate::skillsbench::condition::sanitize_slug;

/// Columns a per-trial CSV must have.
pub const CSV_REQUIRED: [&str; 6] = [
    "job_name",
    "task",
    "condition",
    "run_index",
    "finished_normally",
    "reward",
];

/// Harbor agent names, longest first where one is a prefix of another, to split `<agent>-<model>`.
const AGENTS: [&str; 19] = [
    "claude-code",
    "cline-cli",
    "codex",
    "copilot-cli",
    "cursor-cli",
    "gemini-cli",
    "goose",
    "kimi-cli",
    "mini-swe-agent",
    "swe-agent",
    "nop",
    "opencode",
    "openhands",
    "oracle",
    "qwen-coder",
    "terminus-1",
    "terminus-2",
    "terminus",
    "aider",
];

/// `gemini-cli-gemini3flash` → (`gemini-cli`, `gemini3flash`): a known Harbor agent name and the
/// rest, else split at the last `-`.
pub fn split_agent_model(tag: &str) -> (String, Option<String>) {
    let known = AGENTS
        .iter()
        .filter(|a| tag == **a || tag.starts_with(&format!("{a}-")))
        .max_by_key(|a| a.len());
    match known {
        Some(a) if tag.len() > a.len() => (a.to_string(), Some(tag[a.len() + 1..].to_string())),
        Some(a) => (a.to_string(), None),
        None => match tag.rsplit_once('-') {
            Some((a, m)) if !a.is_empty() && !m.is_empty() => (a.to_string(), Some(m.to_string())),
            _ => (tag.to_string(), None),
        },
    }
}

/// The `<agent>-<model>` tag of `experiment_runs__<agent>-<model>_<subset>.csv`.
fn tag_from_file_name(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    let (_, tail) = stem.rsplit_once("__")?;
    let tag = tail.split('_').next().unwrap_or(tail);
    (!tag.is_empty()).then(|| tag.to_string())
}

/// The `<agent>-<model>` prefix of a job name `<agent>-<model>-<noskills|skills>-<task>-<hash>`.
fn tag_from_job_name(job: &str) -> Option<String> {
    ["-noskills-", "-skills-"]
        .iter()
        .filter_map(|m| job.find(m))
        .min()
        .map(|i| job[..i].to_string())
        .filter(|t| !t.is_empty())
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

/// One well-formed CSV row.
#[derive(Debug)]
struct CsvRow {
    job_name: String,
    task: String,
    condition: &'static str,
    run_index: u64,
    reward: Option<f64>,
    finished_normally: bool,
    tests: Option<(i64, i64)>,
    content: String,
}

/// Reads the per-trial CSV at `path` into its run plan: every well-formed row a trial, malformed
/// and duplicate rows reported in `broken` with the file and line (and counted in `file`).
///
/// # Errors
/// A message when the file cannot be opened or has no readable header.
pub(super) fn parse_csv(
    path: &Path,
    opts: &ImportOptions,
    file: &mut FileReport,
    broken: &mut Vec<(PathBuf, String)>,
) -> Result<Vec<RunPlan>, String> {
    let (tasks, rows) = read_rows(path, file, broken)?;
    file.tasks = tasks.len();
    Ok(vec![run_plan(path, opts, file, tasks, &rows)])
}

/// One record's fields by column name (trimmed; `""` for a column the file lacks).
struct Fields<'a> {
    idx: &'a BTreeMap<&'static str, usize>,
    record: &'a csv::StringRecord,
}

impl Fields<'_> {
    fn get(&self, name: &str) -> &str {
        self.idx
            .get(name)
            .and_then(|&i| self.record.get(i))
            .map(str::trim)
            .unwrap_or("")
    }
}

/// Every task the CSV at `path` names and its well-formed rows, in file order. A malformed row
/// or a second row of the same task, condition and `run_index` goes into `broken` as
/// `line N: why`; blank lines are passed over.
fn read_rows(
    path: &Path,
    file: &mut FileReport,
    broken: &mut Vec<(PathBuf, String)>,
) -> Result<(BTreeSet<String>, Vec<CsvRow>), String> {
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(std::io::BufReader::new(f));
    let header: Vec<String> = rdr
        .headers()
        .map_err(|e| e.to_string())?
        .iter()
        .map(|h| h.trim().to_string())
        .collect();
    let col = |name: &str| header.iter().position(|h| h == name);
    let idx: BTreeMap<&'static str, usize> = CSV_REQUIRED
        .iter()
        .chain(&[
            "tests_total",
            "tests_passed",
            "all_tests_counted",
            "skills_used",
        ])
        .filter_map(|n| col(n).map(|i| (*n, i)))
        .collect();
    let mut tasks = BTreeSet::new();
    let mut rows: Vec<CsvRow> = Vec::new();
    let mut seen: HashMap<(String, &'static str, u64), u64> = HashMap::new();
    let mut record = csv::StringRecord::new();
    loop {
        let line = rdr.position().line();
        match rdr.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                file.rows += 1;
                file.broken_rows += 1;
                let at = e.position().map_or(line, |p| p.line());
                broken.push((path.to_path_buf(), format!("line {at}: {e}")));
                continue;
            }
        }
        let line = record.position().map_or(line, |p| p.line());
        if record.iter().all(|f| f.trim().is_empty()) {
            continue;
        }
        file.rows += 1;
        let fields = Fields {
            idx: &idx,
            record: &record,
        };
        if !fields.get("task").is_empty() {
            tasks.insert(fields.get("task").to_string());
        }
        if fields.get("skills_used").eq_ignore_ascii_case("true") {
            file.skills_used += 1;
        }
        let why = match parse_row(&fields, header.len()) {
            Ok(r) => {
                let k = (r.task.clone(), r.condition, r.run_index);
                match seen.get(&k) {
                    Some(first) => {
                        format!("duplicate of line {first} (same task, condition and run_index)")
                    }
                    None => {
                        seen.insert(k, line);
                        rows.push(r);
                        continue;
                    }
                }
            }
            Err(why) => why,
        };
        file.broken_rows += 1;
        broken.push((path.to_path_buf(), format!("line {line}: {why}")));
    }
    Ok((tasks, rows))
}

/// One record as a row, or what is wrong with it: every wrong field, in column order, joined by
/// "; " (a record whose field count differs from the header's is only that).
fn parse_row(fields: &Fields<'_>, header_len: usize) -> Result<CsvRow, String> {
    let get = |n: &str| fields.get(n);
    let record = fields.record;
    if record.len() != header_len {
        return Err(format!(
            "{} fields, the header has {}",
            record.len(),
            header_len
        ));
    }
    let mut wrong: Vec<String> = Vec::new();
    let mut check = |r: Result<(), String>| {
        if let Err(e) = r {
            wrong.push(e);
        }
    };
    let job_name = get("job_name");
    let task = get("task");
    check(if job_name.is_empty() || task.is_empty() {
        Err("empty job_name or task".into())
    } else {
        Ok(())
    });
    let condition = match get("condition") {
        "noskills" => Some("no-skills"),
        "skills" => Some("curated"),
        other => condition_from(&[other]),
    };
    check(condition.map(|_| ()).ok_or_else(|| {
        format!(
            "condition {:?} is neither noskills nor skills",
            get("condition")
        )
    }));
    let run_index = get("run_index").parse::<u64>().ok();
    check(
        run_index
            .map(|_| ())
            .ok_or_else(|| format!("run_index {:?} is not a number", get("run_index"))),
    );
    let reward = match get("reward") {
        "" => Ok(None),
        r => r
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .map(Some)
            .ok_or_else(|| format!("reward {r:?} is not a number")),
    };
    check(reward.as_ref().map(|_| ()).map_err(String::clone));
    let finished_normally = parse_bool(get("finished_normally"));
    check(finished_normally.map(|_| ()).ok_or_else(|| {
        format!(
            "finished_normally {:?} is not True or False",
            get("finished_normally")
        )
    }));
    let int = |n: &str| -> Result<Option<i64>, String> {
        match get(n) {
            "" => Ok(None),
            v => v
                .parse()
                .map(Some)
                .map_err(|_| format!("{n} {v:?} is not a number")),
        }
    };
    let (total, passed) = (int("tests_total"), int("tests_passed"));
    check(total.as_ref().map(|_| ()).map_err(String::clone));
    check(passed.as_ref().map(|_| ()).map_err(String::clone));
    match (
        condition,
        run_index,
        reward,
        finished_normally,
        total,
        passed,
    ) {
        (
            Some(condition),
            Some(run_index),
            Ok(reward),
            Some(finished_normally),
            Ok(total),
            Ok(passed),
        ) if wrong.is_empty() => {
            let counted = parse_bool(get("all_tests_counted"));
            let tests = match (total, passed) {
                (Some(0), _) if counted == Some(false) => None,
                (Some(t), Some(p)) => Some((t, p)),
                _ => None,
            };
            Ok(CsvRow {
                job_name: job_name.to_string(),
                task: task.to_string(),
                condition,
                run_index,
                reward,
                finished_normally,
                tests,
                content: record.iter().collect::<Vec<_>>().join("\u{1f}"),
            })
        }
        _ => Err(wrong.join("; ")),
    }
}

/// The run plan of the CSV's `rows`: trial k of a condition is its k-th run (distinct
/// `run_index` values in order); agent and model from the file name, else the first job name.
fn run_plan(
    path: &Path,
    opts: &ImportOptions,
    file: &mut FileReport,
    tasks: BTreeSet<String>,
    rows: &[CsvRow],
) -> RunPlan {
    let mut runs_of: BTreeMap<&'static str, BTreeSet<u64>> = BTreeMap::new();
    for r in rows {
        runs_of.entry(r.condition).or_default().insert(r.run_index);
    }
    let rank = |c: &'static str, i: u64| -> u32 {
        runs_of[c].iter().position(|x| *x == i).unwrap_or(0) as u32 + 1
    };
    let n_trials = runs_of.values().map(BTreeSet::len).max().unwrap_or(0) as u32;
    let tag = tag_from_file_name(path)
        .or_else(|| rows.first().and_then(|r| tag_from_job_name(&r.job_name)))
        .unwrap_or_else(|| "unknown".into());
    let (agent, model) = split_agent_model(&tag);
    let name = opts.run.clone().unwrap_or_else(|| {
        sanitize_slug(&format!(
            "csv-{agent}-{}",
            model.as_deref().unwrap_or("no-model")
        ))
    });
    let trials: Vec<NewTrial> = rows
        .iter()
        .map(|r| trial_of(r, rank(r.condition, r.run_index), file))
        .collect();
    RunPlan {
        name,
        agent,
        model,
        source: Format::Csv,
        origin: path.display().to_string(),
        settings: serde_json::json!({
            "imported_from": path.display().to_string(),
            "format": "skillsbench per-trial csv",
        }),
        planned: tasks
            .iter()
            .flat_map(|t| {
                runs_of
                    .iter()
                    .map(move |(c, r)| ((t.clone(), *c), r.len() as u32))
            })
            .collect(),
        tasks: tasks.into_iter().collect(),
        n_trials,
        trials,
    }
}

/// Row `r` as trial `trial_index` of its condition: an empty reward is `no-reward` (counted in
/// `file`), reward 1 a pass, anything else a fail.
fn trial_of(r: &CsvRow, trial_index: u32, file: &mut FileReport) -> NewTrial {
    let outcome = match r.reward {
        Some(x) if is_pass(x) => Outcome::Pass,
        Some(_) => Outcome::Fail,
        None => Outcome::NoReward,
    };
    if outcome == Outcome::NoReward {
        file.no_reward += 1;
    }
    let error = match (r.reward, r.finished_normally) {
        (Some(x), _) if !is_pass(x) => Some(format!("verifier reward {x}")),
        (Some(_), _) => None,
        (None, false) => {
            Some("the run did not finish normally: no verifier reward (infrastructure)".into())
        }
        (None, true) => Some("no verifier reward".into()),
    };
    let identity = format!("csv:{}#{}", r.job_name, r.run_index);
    NewTrial {
        key: key_of(&identity, &r.content),
        identity,
        task_id: r.task.clone(),
        condition: r.condition,
        trial_index,
        outcome,
        reward: r.reward,
        error,
        tests: r.tests,
        trial_name: r.job_name.clone(),
        aggregated: false,
    }
}

// ---------------------------------------------------------------------------------------------
// The results registry

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_and_model_from_names() {
        assert_eq!(
            split_agent_model("gemini-cli-gemini3flash"),
            ("gemini-cli".into(), Some("gemini3flash".into()))
        );
        assert_eq!(
            split_agent_model("claude-code-claude-opus-4-5"),
            ("claude-code".into(), Some("claude-opus-4-5".into()))
        );
        assert_eq!(
            split_agent_model("terminus-2-gpt-5"),
            ("terminus-2".into(), Some("gpt-5".into()))
        );
        assert_eq!(
            split_agent_model("myagent-m1"),
            ("myagent".into(), Some("m1".into()))
        );
        assert_eq!(split_agent_model("oracle"), ("oracle".into(), None));
        assert_eq!(
            tag_from_file_name(Path::new(
                "/x/experiment_runs__gemini-cli-gemini3flash_subset.csv"
            ))
            .as_deref(),
            Some("gemini-cli-gemini3flash")
        );
        assert_eq!(tag_from_file_name(Path::new("runs.csv")), None);
        assert_eq!(
            tag_from_job_name("gemini-cli-gemini3flash-noskills-3d-scan-calc-a2c944").as_deref(),
            Some("gemini-cli-gemini3flash")
        );
    }

    /// A row with several wrong fields names each of them, in column order; a good row parses.
    #[test]
    fn a_row_names_every_wrong_field() {
        let names = [
            "job_name",
            "task",
            "condition",
            "run_index",
            "reward",
            "finished_normally",
            "tests_total",
            "tests_passed",
        ];
        let idx: BTreeMap<&'static str, usize> =
            names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let parse = |cells: &[&str]| {
            let record = csv::StringRecord::from(cells.to_vec());
            parse_row(
                &Fields {
                    idx: &idx,
                    record: &record,
                },
                names.len(),
            )
        };
        let why = parse(&["j", "t", "both", "x", "abc", "maybe", "1", "two"]).unwrap_err();
        assert_eq!(
            why,
            "condition \"both\" is neither noskills nor skills; run_index \"x\" is not a number; \
             reward \"abc\" is not a number; finished_normally \"maybe\" is not True or False; \
             tests_passed \"two\" is not a number"
        );
        let one = parse(&["j", "t", "skills", "1", "abc", "True", "", ""]).unwrap_err();
        assert_eq!(one, "reward \"abc\" is not a number");
        let row = parse(&["j", "t", "noskills", "2", "0.5", "False", "4", "2"]).unwrap();
        assert_eq!(
            (
                row.condition,
                row.run_index,
                row.reward,
                row.finished_normally,
                row.tests
            ),
            ("no-skills", 2, Some(0.5), false, Some((4, 2)))
        );
    }
}
