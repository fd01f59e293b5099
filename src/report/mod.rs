//! `skillscope report`: the evaluation's results ([`crate::analysis::results`]) and the skill
//! rubric's scores ([`crate::analysis::invocations`]) written as a Markdown report with PNG
//! charts, a JSON document and CSV tables — the same numbers in each.
//!
//! Layout of the output folder (default `reports/<name>/`):
//!
//! | File | Format | Content |
//! |---|---|---|
//! | `report.md` | `md` | tables of every section and the charts below |
//! | `report.html` | `html` | the same sections in one self-contained file ([`html`]): inline CSS and SVG charts, sortable tables, links to the trial folders |
//! | `charts/*.png` | `md` | [`charts`]: pass rate with CIs, per-domain bars, Δ per task, failure modes, skill leaderboard |
//! | `report.json` | `json` | the whole [`Report`] (serde) |
//! | `*.csv` | `csv` | one table per section ([`csv`]) |
//! | `leaderboard.json` | `leaderboard` | SkillsBench's AgentBeats leaderboard rows, one per finished trial ([`leaderboard`], written from the store, not from the report) |
//!
//! Every renderer renders one model of the report's sections, [`model`].
//!
//! Files are written to a temporary name and renamed, so a report that fails half-way (a full
//! disk) never leaves a truncated file under a final name.

pub mod charts;
pub mod csv;
pub mod html;
pub mod leaderboard;
pub mod markdown;
pub mod model;
mod skill_sets;
pub mod typeset;

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde::Serialize;

use crate::analysis::invocations::{
    self, CategoryTable, DistributionRow, LeaderboardRow, OpportunityRow, SkillScore, Window,
};
use crate::analysis::results::{self, Results, Scoring, Selection};
use crate::analysis::skill_content;
use crate::store::{StoreError, bulk_read, queries};

/// A report's data: the results, the skill rubric section and the skill content analysis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Pass rates, comparisons, breakdowns, failure modes, paper numbers.
    pub results: Results,
    /// Rubric scores of the skills the agents used.
    pub skills: SkillSection,
    /// What the skill sets the conditions used hold, and pass rates per paper bucket.
    pub skill_content: SkillContentSection,
    /// The folder of the latest attempt of every trial, by condition label (what the HTML
    /// report links its tasks to).
    pub trials: Vec<TrialLink>,
}

/// A trial's folder, for a link from the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialLink {
    /// The condition's label in the results (`A`, `curated`).
    pub condition: String,
    /// Task id.
    pub task: String,
    /// Trial index, 1-based.
    pub trial_index: u32,
    /// Its outcome, once finished.
    pub outcome: Option<crate::domain::Outcome>,
    /// It succeeded by the report's pass rule ([`crate::analysis::success::SuccessRule::trial_succeeded`]):
    /// what its mark says, as the counts do.
    pub succeeded: bool,
    /// The trial folder, as recorded.
    pub dir: String,
    /// The trial finished beyond an early stop of its condition (its index past the trials the
    /// condition keeps): kept, listed as such, in no metric.
    pub beyond_stop: bool,
}

/// The skill content analysis ([`crate::analysis::skill_content`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillContentSection {
    /// The tokenizer that counted SKILL.md bodies.
    pub tokenizer: String,
    /// Each skill set a condition used (curated, each export).
    pub sets: Vec<SkillSet>,
    /// Pass rates per bucket of a task's skills, per condition with skills.
    pub buckets: Vec<BucketRow>,
    /// What the agents of each self-generated condition wrote.
    pub generated: Vec<GeneratedSummary>,
}

/// The skills agents wrote under one self-generated condition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GeneratedSummary {
    /// Condition label (`C` in an experiment).
    pub condition: String,
    /// Trials that recorded what they generated.
    pub trials: usize,
    /// Skills kept (passed validation), over all trials.
    pub kept: usize,
    /// Skills refused.
    pub refused: usize,
    /// Why skills were refused (distinct reasons, at most 10).
    pub reasons: Vec<String>,
}

/// One skill set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillSet {
    /// `curated`, the condition label of an export (`skills:LS-A-v1`, `skills-by-task:…`), or
    /// `self-generated` (every trial's kept skills).
    pub name: String,
    /// Conditions that used it.
    pub conditions: Vec<String>,
    /// Its skills (curated: every task's, one per name and content).
    pub skills: Vec<skill_content::SkillContent>,
    /// Skills the condition's trajectories show it used whose SKILL.md is not on this machine
    /// (an imported condition whose task folders are elsewhere): known by name only.
    pub seen_only: Vec<String>,
}

/// A condition's pass rate over the tasks of one bucket, beside its baseline's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BucketRow {
    /// Condition label.
    pub condition: String,
    /// Baseline condition label (round 1's for round 2, no-skills otherwise), if any.
    pub baseline: Option<String>,
    /// `skills per task` or `skill size`.
    pub kind: String,
    /// `none`, `1`, `2–3`, `4+`, `compact`, `detailed`, `comprehensive`, or `unknown` (no
    /// skills folder and no trajectory; size unknown for skills known only by name).
    pub bucket: String,
    /// Tasks in the bucket.
    pub n_tasks: usize,
    /// Method D pass rate over them, fraction.
    pub pass_rate: f64,
    /// The baseline's.
    pub baseline_rate: Option<f64>,
    /// Δ, percentage points.
    pub delta_pp: Option<f64>,
}

/// The skill rubric section (`skill-scoring-rubric.md`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillSection {
    /// The window of the rubric's queries: the 30 days before the selection's last invocation.
    pub window: Window,
    /// Invocations scored (trials × skills used) in the selected runs.
    pub invocations: usize,
    /// Per skill: score, components, tier, trend, weak component, gates.
    pub scores: Vec<SkillScore>,
    /// The rubric's leaderboard query (skills with ≥ 5 invocations).
    pub leaderboard: Vec<LeaderboardRow>,
    /// The rubric's tier distribution query.
    pub distribution: Vec<DistributionRow>,
    /// The rubric's improvement-opportunities query.
    pub opportunities: Vec<OpportunityRow>,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Markdown with PNG charts.
    Md,
    /// One self-contained HTML file (inline CSS and SVG charts; sortable tables with JavaScript).
    Html,
    /// One JSON document.
    Json,
    /// CSV tables.
    Csv,
    /// SkillsBench's AgentBeats leaderboard rows (`leaderboard.json`; see [`leaderboard`]).
    Leaderboard,
}

impl Format {
    /// What `report` writes when no format is named, and what an experiment writes at its end.
    pub const DEFAULT: [Format; 4] = [Format::Md, Format::Html, Format::Json, Format::Csv];
}

/// A report that could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Reading the store.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A file or folder could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A chart could not be drawn.
    #[error("cannot draw chart {path}: {message}")]
    Chart {
        /// The PNG.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// JSON encoding.
    #[error("cannot encode the report as JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A file that would not pass its own format's rules (a bug, never written).
    #[error("{what} would not be accepted: {problems}")]
    Invalid {
        /// The file.
        what: String,
        /// Every problem.
        problems: String,
    },
}

/// Computes the report of `selection`: [`results::analyze`], then scores the selected runs'
/// skill invocations into `skill_invocations` ([`invocations::score_run`], idempotent: a run whose
/// trials have not changed is skipped) and runs the rubric's queries over them.
///
/// The rubric's 30-day window is anchored at the selection's latest invocation, so a report on an
/// old run shows its skills; with no invocation it is anchored at now.
///
/// When `conn` is a file database, a second read-only connection does what does not read the
/// scores (the analysis, the skill content, the trial folders) while `conn` scores, then the
/// rubric's per-skill report and distribution while `conn` runs its opportunities and
/// leaderboard. (A reader beside the scoring once slowed it threefold: both were reading
/// `trials` pages, the scoring for a foreign-key check per invocation, which it no longer makes —
/// [`crate::store::invocations::without_parent_checks`].) Both connections read the file
/// memory-mapped ([`bulk_read`]). First report at 10⁶ trials: 1.85–2.21 s (docs/performance.md).
///
/// # Errors
/// Unknown runs or experiment ([`StoreError::NotFound`]); SQL errors.
pub fn build(
    conn: &Connection,
    selection: &Selection,
    scoring: &Scoring,
) -> Result<Report, StoreError> {
    let run_ids = selected_runs(conn, selection)?;
    // Scoring and the rubric's sorts touch a few hundred thousand rows at scale: a larger page
    // cache and the file memory-mapped, until the report is built.
    let _tuned = bulk_read::tune(conn)?;
    let second = bulk_read::second_reader(conn);
    std::thread::scope(|s| {
        // What does not read the scores — the analysis, the skill content, the trial folders —
        // on the second connection while this one scores the invocations (mostly one core).
        let early = second.map(|c2| {
            let run_ids = &run_ids;
            s.spawn(move || {
                let got = beside_scoring(&c2, run_ids, selection, scoring);
                (c2, got)
            })
        });
        let table = CategoryTable::default();
        let mut scored = 0;
        for id in &run_ids {
            scored += invocations::score_run(conn, *id, &table)?;
        }
        let latest = crate::store::analysis::latest_invocation(conn, &run_ids)?;
        let window = match latest {
            Some(t) => Window::at(&t, &run_ids),
            None => Window {
                runs: run_ids.clone(),
                ..Window::rubric()
            },
        };
        let (second, (results, skill_content, trials)) = match early {
            Some(h) => {
                let (c2, got) = h.join().map_err(|_| thread_died())?;
                (Some(c2), got?)
            }
            None => (None, beside_scoring(conn, &run_ids, selection, scoring)?),
        };
        // Once the scores are committed: the rubric's per-skill report and distribution on the
        // second connection, beside its opportunities and leaderboard on this one (the halves
        // take about the same time at 10⁶ trials: 0.46 and 0.57 CPU-s, `perf`).
        let (scores, leaderboard, distribution, opportunities) = match second {
            Some(c2) => {
                let w2 = window.clone();
                let other = s.spawn(move || -> Result<_, StoreError> {
                    Ok((
                        invocations::skill_report(&c2, &w2)?,
                        invocations::quality_distribution(&c2, &w2)?,
                    ))
                });
                let opportunities = invocations::improvement_opportunities(conn, &window)?;
                let leaderboard = invocations::leaderboard(conn, &window)?;
                let (scores, distribution) = other.join().map_err(|_| thread_died())??;
                (scores, leaderboard, distribution, opportunities)
            }
            None => (
                invocations::skill_report(conn, &window)?,
                invocations::leaderboard(conn, &window)?,
                invocations::quality_distribution(conn, &window)?,
                invocations::improvement_opportunities(conn, &window)?,
            ),
        };
        Ok(Report {
            skill_content,
            trials,
            skills: SkillSection {
                invocations: scored,
                scores,
                leaderboard,
                distribution,
                opportunities,
                window,
            },
            results,
        })
    })
}

/// The parts of the report that do not read the invocations' scores: the analysis, the skill
/// content of its conditions and the trial folders.
///
/// # Errors
/// As [`build`].
fn beside_scoring(
    conn: &Connection,
    run_ids: &[i64],
    selection: &Selection,
    scoring: &Scoring,
) -> Result<(Results, SkillContentSection, Vec<TrialLink>), StoreError> {
    let results = results::analyze(conn, selection, scoring)?;
    let skill_content = skill_sets::skill_content_of(conn, &results)?;
    let trials = trial_links(conn, run_ids, &results)?;
    Ok((results, skill_content, trials))
}

/// The latest attempt's folder of every trial of the runs `run_ids`, labelled as `results`
/// labels its conditions (a condition the results do not show is left out).
fn trial_links(
    conn: &Connection,
    run_ids: &[i64],
    results: &Results,
) -> Result<Vec<TrialLink>, StoreError> {
    let mut out = Vec::new();
    for id in run_ids {
        let run = queries::get_run(conn, *id)?;
        let kept: std::collections::HashMap<String, u32> =
            queries::early_stop_trials(conn, *id)?.into_iter().collect();
        for f in queries::trial_folders(conn, *id)? {
            let Some(c) = results
                .conditions
                .iter()
                .find(|c| c.run == run.name && c.condition == f.condition)
            else {
                continue;
            };
            out.push(TrialLink {
                condition: c.label.clone(),
                task: f.task_id,
                trial_index: f.trial_index,
                outcome: f.outcome,
                succeeded: results.success.trial_succeeded(f.done, f.outcome, f.reward),
                beyond_stop: kept.get(&f.condition).is_some_and(|k| f.trial_index > *k),
                dir: f.dir,
            });
        }
    }
    Ok(out)
}

fn thread_died() -> StoreError {
    StoreError::Sql("a report worker thread panicked".into())
}

/// Row ids of the runs `selection` names (an experiment: its round-1 and round-2 runs that
/// exist).
///
/// # Errors
/// [`StoreError::NotFound`] for an unknown run or experiment.
fn selected_runs(conn: &Connection, selection: &Selection) -> Result<Vec<i64>, StoreError> {
    let names: Vec<String> = match selection {
        Selection::Runs(r) => r.clone(),
        Selection::Experiment(e) => {
            let e = crate::store::learning::find_experiment(conn, e)?
                .ok_or_else(|| StoreError::NotFound(format!("no experiment named {e:?}")))?;
            vec![e.round1_run, e.round2_run]
        }
    };
    let mut ids = Vec::new();
    for n in names {
        match queries::find_run(conn, &n)? {
            Some(r) => ids.push(r.id),
            None if matches!(selection, Selection::Experiment(_)) => {}
            None => return Err(StoreError::NotFound(format!("no run named {n:?}"))),
        }
    }
    Ok(ids)
}

/// What [`write()`] produced.
#[derive(Debug, Clone, Default)]
pub struct Written {
    /// Every file, in writing order.
    pub files: Vec<PathBuf>,
}

/// Writes `report` into `dir` in each of `formats` (creating `dir`). Markdown comes with its
/// charts in `dir/charts/`.
///
/// # Errors
/// [`ReportError::Write`] naming the file or folder; [`ReportError::Chart`].
pub fn write(report: &Report, dir: &Path, formats: &[Format]) -> Result<Written, ReportError> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut out = Written::default();
    if formats.contains(&Format::Md) {
        let specs = charts::plan(report);
        let chart_dir = dir.join(charts::FOLDER);
        std::fs::create_dir_all(&chart_dir).map_err(|source| ReportError::Write {
            path: chart_dir.clone(),
            source,
        })?;
        for spec in &specs {
            let path = dir.join(&spec.file);
            let png = charts::render(report, spec).map_err(|message| ReportError::Chart {
                path: path.clone(),
                message,
            })?;
            write_file(&path, &png)?;
            out.files.push(path);
        }
        let path = dir.join("report.md");
        write_file(&path, markdown::render(report, &specs).as_bytes())?;
        out.files.push(path);
    }
    if formats.contains(&Format::Html) {
        let path = dir.join("report.html");
        let html = html::render(report, dir).map_err(|message| ReportError::Chart {
            path: path.clone(),
            message,
        })?;
        write_file(&path, html.as_bytes())?;
        out.files.push(path);
    }
    if formats.contains(&Format::Json) {
        let path = dir.join("report.json");
        let mut text = serde_json::to_string_pretty(report)?;
        text.push('\n');
        write_file(&path, text.as_bytes())?;
        out.files.push(path);
    }
    if formats.contains(&Format::Csv) {
        for (name, text) in csv::tables(report) {
            let path = dir.join(name);
            write_file(&path, text.as_bytes())?;
            out.files.push(path);
        }
    }
    Ok(out)
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    let err = |source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    };
    let parent = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(parent).map_err(err)?;
    std::io::Write::write_all(&mut tmp, bytes).map_err(err)?;
    // Temporary files are private (0600); a report is for sharing.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(err)?;
    }
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}

/// Escapes untrusted text (task ids, run names, skill names come from files and the store) for
/// a Markdown table cell: control sequences stripped ([`crate::sanitize::text`]), line breaks
/// folded, and the characters Markdown or HTML would interpret escaped.
pub fn md_cell(raw: &str) -> String {
    let clean = crate::sanitize::text(raw);
    let mut out = String::with_capacity(clean.len());
    for (i, c) in clean.char_indices() {
        match c {
            '\n' | '\r' => out.push(' '),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            // Only where it would start a character reference (`&lt;`, `&#60;`): a plain `&`
            // (`Office & White Collar`) stays as written.
            '&' if starts_reference(&clean[i + 1..]) => out.push_str("&amp;"),
            '|' | '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '!' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// True when `rest` (what follows an `&`) would make it a character reference: a name or `#`
/// and digits, then `;`.
fn starts_reference(rest: &str) -> bool {
    let body: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '#')
        .collect();
    !body.is_empty() && rest[body.len()..].starts_with(';')
}

#[cfg(test)]
mod tests {
    use super::md_cell;

    #[test]
    fn cells_cannot_break_tables_or_inject_html() {
        assert_eq!(md_cell("a|b"), "a\\|b");
        assert_eq!(md_cell("<img src=x>"), "&lt;img src=x&gt;");
        assert_eq!(md_cell("line\nbreak"), "line break");
        assert_eq!(md_cell("\x1b[31mred\x1b[0m"), "red");
        assert_eq!(md_cell("[x](http://e)"), "\\[x\\](http://e)");
        assert_eq!(md_cell("weighted-gdp-calc"), "weighted-gdp-calc");
        assert_eq!(md_cell("Office & White Collar"), "Office & White Collar");
        assert_eq!(md_cell("&lt;script&gt;"), "&amp;lt;script&amp;gt;");
        assert_eq!(md_cell("a &#60; b"), "a &amp;\\#60; b");
    }
}
