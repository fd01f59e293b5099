//! What the views show, derived from a [`Snapshot`] — pure functions, computed once per snapshot
//! or filter change (never per frame): the trial grid's rows and cells, pass-rate rows per domain
//! or difficulty, and run progress.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};

use super::worker::Snapshot;
use crate::analysis::results::{GroupBy, LiveBreakdown};
use crate::analysis::success::SuccessRule;
use crate::domain::{Outcome, TrialBrief, TrialStatus};

/// A grid cell's state (what its glyph and colour say).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CellState {
    /// No such trial.
    Missing,
    /// Waiting.
    Queued,
    /// Image build / container start.
    Building,
    /// Agent running.
    Agent,
    /// Agent running but silent past the run's stall time (it is not stopped).
    Stalled,
    /// Verifier running.
    Verifying,
    /// Passed.
    Pass,
    /// Wrong output.
    Fail,
    /// Agent or verifier timeout.
    Timeout,
    /// Build or runtime error, or no reward.
    Error,
    /// Cancelled or interrupted.
    Cancelled,
}

impl CellState {
    /// The state of an attempt, its success by `rule` — the report's pass rule
    /// ([`SuccessRule::trial_succeeded`]): a finished trial whose reward reaches the threshold is
    /// [`CellState::Pass`] whatever outcome the runner stored (a `fail` at reward 0.6 under a
    /// threshold of 0.5, an agent timeout the verifier still gave the reward), and a stored
    /// `pass` below it is a [`CellState::Fail`]; the others by their outcome.
    pub fn of(t: &TrialBrief, rule: &SuccessRule) -> CellState {
        match t.status {
            TrialStatus::Queued => CellState::Queued,
            TrialStatus::Building => CellState::Building,
            TrialStatus::Agent => CellState::Agent,
            TrialStatus::Verifying => CellState::Verifying,
            TrialStatus::Done if rule.trial_succeeded(true, t.outcome, t.reward) => CellState::Pass,
            TrialStatus::Done => match t.outcome {
                Some(Outcome::Pass | Outcome::Fail) => CellState::Fail,
                Some(Outcome::AgentTimeout | Outcome::VerifierTimeout) => CellState::Timeout,
                Some(
                    Outcome::BuildError
                    | Outcome::RuntimeError
                    | Outcome::NoReward
                    | Outcome::ProviderError,
                ) => CellState::Error,
                Some(Outcome::Cancelled | Outcome::Interrupted) | None => CellState::Cancelled,
            },
        }
    }

    /// This state, with a running agent shown as [`CellState::Stalled`] when `stalled`.
    pub fn with_stall(self, stalled: bool) -> CellState {
        match self {
            CellState::Agent if stalled => CellState::Stalled,
            st => st,
        }
    }

    /// Running in a container now.
    pub fn is_running(self) -> bool {
        matches!(
            self,
            CellState::Building | CellState::Agent | CellState::Stalled | CellState::Verifying
        )
    }

    /// Finished without passing.
    pub fn is_failed(self) -> bool {
        matches!(
            self,
            CellState::Fail | CellState::Timeout | CellState::Error | CellState::Cancelled
        )
    }

    /// Legend label.
    pub fn label(self) -> &'static str {
        match self {
            CellState::Missing => "—",
            CellState::Queued => "queued",
            CellState::Building => "building",
            CellState::Agent => "agent",
            CellState::Stalled => "stalled",
            CellState::Verifying => "verifying",
            CellState::Pass => "pass",
            CellState::Fail => "fail",
            CellState::Timeout => "timeout",
            CellState::Error => "error",
            CellState::Cancelled => "cancelled",
        }
    }
}

/// The trial detail's outcome line for attempt `a`: its stored outcome (or status while it
/// runs), its reward and rewards, and — once it finished with a reward — whether it succeeded by
/// `rule`, the rule its grid cell and the report use ([`CellState::of`],
/// [`SuccessRule::trial_succeeded`]); with the success (`Some(true)` succeeded, `Some(false)`
/// finished without succeeding, `None` not finished) that styles it.
pub fn outcome_words(a: &crate::domain::TrialRow, rule: &SuccessRule) -> (String, Option<bool>) {
    let done = a.status == TrialStatus::Done;
    let succeeded = rule.trial_succeeded(done, a.outcome, a.reward);
    let outcome = a
        .outcome
        .map(|o| o.as_str().to_string())
        .unwrap_or_else(|| a.status.to_string());
    let reward = a
        .reward
        .map(|r| format!(" · reward {r}"))
        .unwrap_or_default();
    let rewards = a
        .rewards
        .as_ref()
        .filter(|r| r.as_object().is_some_and(|o| o.len() > 1))
        .map(|r| format!(" · rewards {r}"))
        .unwrap_or_default();
    // Said whenever the outcome's name alone could mislead — a success that is not a `pass`, a
    // `pass` that is not one, any verdict under a threshold other than full marks: the reward
    // decides, not the name.
    let surprising = succeeded != (a.outcome == Some(Outcome::Pass)) || rule.threshold < 1.0;
    let verdict = match (done && surprising, succeeded) {
        (true, true) => format!(" · succeeded ({})", rule.describe()),
        (true, false) if a.reward.is_some() => {
            format!(" · did not succeed ({})", rule.describe())
        }
        _ => String::new(),
    };
    (
        format!("{outcome}{reward}{rewards}{verdict}"),
        done.then_some(succeeded),
    )
}

/// Which cells a status filter keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StatusFilter {
    /// Everything.
    #[default]
    All,
    /// Finished without passing.
    Failed,
    /// In a container now.
    Running,
    /// Waiting.
    Queued,
    /// Passed.
    Passed,
    /// Cancelled or interrupted (only by typing `status:cancelled`).
    Cancelled,
}

impl StatusFilter {
    /// Next in the `f` cycle.
    pub fn next(self) -> StatusFilter {
        match self {
            StatusFilter::All => StatusFilter::Failed,
            StatusFilter::Failed => StatusFilter::Running,
            StatusFilter::Running => StatusFilter::Queued,
            StatusFilter::Queued => StatusFilter::Passed,
            StatusFilter::Passed | StatusFilter::Cancelled => StatusFilter::All,
        }
    }

    /// Label.
    pub fn label(self) -> &'static str {
        match self {
            StatusFilter::All => "all",
            StatusFilter::Failed => "failed",
            StatusFilter::Running => "running",
            StatusFilter::Queued => "queued",
            StatusFilter::Passed => "passed",
            StatusFilter::Cancelled => "cancelled",
        }
    }

    /// The values `status:` takes, for error messages.
    pub const VALUES: &'static str = "all, failed, running, queued, passed, cancelled";

    fn parse(s: &str) -> Option<StatusFilter> {
        Some(match s {
            "all" => StatusFilter::All,
            "fail" | "failed" | "error" | "timeout" => StatusFilter::Failed,
            "run" | "running" => StatusFilter::Running,
            "queued" | "queue" => StatusFilter::Queued,
            "pass" | "passed" => StatusFilter::Passed,
            "cancel" | "cancelled" | "canceled" => StatusFilter::Cancelled,
            _ => return None,
        })
    }

    /// True when a cell in `state` is kept.
    pub fn keeps(self, state: CellState) -> bool {
        match self {
            StatusFilter::All => true,
            StatusFilter::Failed => state.is_failed(),
            StatusFilter::Running => state.is_running(),
            StatusFilter::Queued => state == CellState::Queued,
            StatusFilter::Passed => state == CellState::Pass,
            StatusFilter::Cancelled => state == CellState::Cancelled,
        }
    }
}

/// Row order of the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sort {
    /// Grouped by domain, then task id.
    #[default]
    Domain,
    /// Task id.
    Name,
    /// Lowest pass rate first (all conditions together).
    PassRate,
    /// Most failed trials first.
    Failures,
}

impl Sort {
    /// Next in the `s` cycle.
    pub fn next(self) -> Sort {
        match self {
            Sort::Domain => Sort::Name,
            Sort::Name => Sort::PassRate,
            Sort::PassRate => Sort::Failures,
            Sort::Failures => Sort::Domain,
        }
    }

    /// Label.
    pub fn label(self) -> &'static str {
        match self {
            Sort::Domain => "domain",
            Sort::Name => "name",
            Sort::PassRate => "pass rate",
            Sort::Failures => "failures",
        }
    }
}

/// The grid filter: a typed query plus the status cycle.
///
/// Query terms (space-separated, all must match): `domain:<text>`, `status:<all|failed|running|
/// queued|passed>`, `cond:<text>` (keeps matching condition columns), `diff:<text>`, and plain text
/// matched against the task id. Matching is case-insensitive substring.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// The query as typed.
    pub query: String,
    /// The status filter (also settable with `status:` in the query).
    pub status: StatusFilter,
}

#[derive(Debug, Default)]
struct ParsedQuery {
    text: Vec<String>,
    domain: Vec<String>,
    cond: Vec<String>,
    difficulty: Vec<String>,
    status: Option<StatusFilter>,
}

/// True when condition `key` (short label `label`) matches a `cond:` term: the label itself
/// (`A`, `b'`, case-insensitive) or part of the key.
fn cond_matches(key: &str, label: Option<&str>, term: &str) -> bool {
    label.is_some_and(|l| l.eq_ignore_ascii_case(term)) || key.to_lowercase().contains(term)
}

/// The `key:` terms the grid filter takes (their long spellings `condition:` and `difficulty:`
/// too); the help of `/` names each.
pub const FILTER_KEYS: [&str; 4] = ["domain", "status", "cond", "diff"];

impl Filter {
    fn parse(&self) -> ParsedQuery {
        let mut q = ParsedQuery::default();
        for term in self.query.split_whitespace() {
            let lower = term.to_lowercase();
            match lower.split_once(':') {
                Some(("domain", v)) => q.domain.push(v.to_string()),
                Some(("cond", v)) | Some(("condition", v)) => q.cond.push(v.to_string()),
                Some(("diff", v)) | Some(("difficulty", v)) => q.difficulty.push(v.to_string()),
                Some(("status", v)) => q.status = StatusFilter::parse(v),
                _ => q.text.push(lower),
            }
        }
        q
    }

    /// Checks `query` against run `s`: every `status:` value must be one the filter knows, every
    /// `cond:` must match a condition of the run and every `domain:` / `diff:` one of its
    /// tasks', and no other `key:` is allowed. The error says which term and what it could be.
    ///
    /// # Errors
    /// The first term that cannot match, as a sentence for the input line.
    pub fn check(query: &str, s: &Snapshot) -> Result<(), String> {
        for term in query.split_whitespace() {
            let lower = term.to_lowercase();
            let Some((key, v)) = lower.split_once(':') else {
                continue;
            };
            if v.is_empty() {
                continue; // still being typed
            }
            match key {
                "status" => {
                    if StatusFilter::parse(v).is_none() {
                        return Err(format!(
                            "unknown status {v:?} (one of {})",
                            StatusFilter::VALUES
                        ));
                    }
                }
                "cond" | "condition" => {
                    let any = s
                        .run
                        .conditions
                        .iter()
                        .enumerate()
                        .any(|(i, c)| cond_matches(c, s.labels.get(i).map(String::as_str), v));
                    if !any {
                        let known: Vec<String> = s
                            .run
                            .conditions
                            .iter()
                            .enumerate()
                            .map(|(i, c)| match s.labels.get(i) {
                                Some(l) => {
                                    format!(
                                        "{l} {}",
                                        crate::skillsbench::condition::condition_label(c)
                                    )
                                }
                                None => crate::skillsbench::condition::condition_label(c),
                            })
                            .collect();
                        return Err(format!(
                            "no condition matches {v:?} (conditions: {})",
                            known.join(", ")
                        ));
                    }
                }
                "domain" | "diff" | "difficulty" => {
                    let any = s.tasks.iter().any(|t| {
                        let hay = if key == "domain" {
                            &t.domain
                        } else {
                            &t.difficulty
                        };
                        hay.to_lowercase().contains(v)
                    });
                    if !any {
                        let mut known: Vec<&str> = s
                            .tasks
                            .iter()
                            .map(|t| {
                                if key == "domain" {
                                    t.domain.as_str()
                                } else {
                                    t.difficulty.as_str()
                                }
                            })
                            .collect();
                        known.sort();
                        known.dedup();
                        return Err(format!(
                            "no {} matches {v:?} ({})",
                            if key == "domain" {
                                "domain"
                            } else {
                                "difficulty"
                            },
                            known.join(", ")
                        ));
                    }
                }
                other => {
                    return Err(format!(
                        "unknown filter {other}: (text, domain:, status:, cond:, diff:)"
                    ));
                }
            }
        }
        Ok(())
    }

    /// True when nothing is filtered.
    pub fn is_empty(&self) -> bool {
        self.query.trim().is_empty() && self.status == StatusFilter::All
    }
}

/// A column of the grid: one trial index of one condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Condition key.
    pub condition: String,
    /// Trial index (1-based).
    pub trial_index: u32,
}

/// A grid row.
#[derive(Debug, Clone, PartialEq)]
pub enum GridRow {
    /// A domain heading (domain sort only) with its task count.
    Domain {
        /// Domain.
        name: String,
        /// Tasks shown under it.
        tasks: usize,
    },
    /// A task with one cell per column (index into `Snapshot::trials`).
    Task {
        /// Task id.
        task_id: String,
        /// Domain.
        domain: String,
        /// Difficulty.
        difficulty: String,
        /// Cells.
        cells: Vec<Option<usize>>,
    },
}

/// The grid, derived from a snapshot, a filter and a sort.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GridModel {
    /// Columns, condition-major.
    pub columns: Vec<Column>,
    /// Rows (domain headings and tasks).
    pub rows: Vec<GridRow>,
    /// Indices of task rows in `rows`.
    pub task_rows: Vec<usize>,
    /// Ids of the running attempts marked stalled.
    pub stalled: std::collections::HashSet<i64>,
}

impl GridModel {
    /// The state of attempt `k` of `s` (an index into `Snapshot::trials`) as its cell shows it:
    /// [`CellState::of`], with a running agent marked stalled shown as [`CellState::Stalled`].
    pub fn state(&self, s: &Snapshot, k: usize) -> CellState {
        let t = &s.trials[k];
        CellState::of(t, &s.success).with_stall(self.stalled.contains(&t.id))
    }

    /// Builds the grid.
    pub fn build(s: &Snapshot, filter: &Filter, sort: Sort) -> GridModel {
        let q = filter.parse();
        let status = q.status.unwrap_or(filter.status);
        let contains = |hay: &str, needles: &[String]| {
            let hay = hay.to_lowercase();
            needles.iter().all(|n| hay.contains(n.as_str()))
        };
        let columns: Vec<Column> = s
            .run
            .conditions
            .iter()
            .enumerate()
            .filter(|(i, c)| {
                q.cond
                    .iter()
                    .all(|term| cond_matches(c, s.labels.get(*i).map(String::as_str), term))
            })
            .map(|(_, c)| c)
            .flat_map(|c| {
                (1..=s.run.n_trials).map(move |i| Column {
                    condition: c.clone(),
                    trial_index: i,
                })
            })
            .collect();
        let col_of: HashMap<(&str, u32), usize> = columns
            .iter()
            .enumerate()
            .map(|(i, c)| ((c.condition.as_str(), c.trial_index), i))
            .collect();
        let mut cells_by_task: HashMap<&str, Vec<Option<usize>>> = HashMap::new();
        for (i, t) in s.trials.iter().enumerate() {
            if let Some(&c) = col_of.get(&(t.condition.as_str(), t.trial_index)) {
                cells_by_task
                    .entry(t.task_id.as_str())
                    .or_insert_with(|| vec![None; columns.len()])[c] = Some(i);
            }
        }
        let mut tasks: Vec<(&crate::domain::RunTaskRow, Vec<Option<usize>>)> = s
            .tasks
            .iter()
            .filter(|t| {
                contains(&t.task_id, &q.text)
                    && contains(&t.domain, &q.domain)
                    && contains(&t.difficulty, &q.difficulty)
            })
            .map(|t| {
                let cells = cells_by_task
                    .remove(t.task_id.as_str())
                    .unwrap_or_else(|| vec![None; columns.len()]);
                (t, cells)
            })
            .filter(|(_, cells)| {
                status == StatusFilter::All
                    || cells
                        .iter()
                        .flatten()
                        .any(|&i| status.keeps(CellState::of(&s.trials[i], &s.success)))
            })
            .collect();
        let reward_sum = |cells: &[Option<usize>]| -> f64 {
            cells
                .iter()
                .flatten()
                .map(|&i| crate::analysis::metrics::trial_reward(&s.trials[i]))
                .sum()
        };
        let failures = |cells: &[Option<usize>]| {
            cells
                .iter()
                .flatten()
                .filter(|&&i| CellState::of(&s.trials[i], &s.success).is_failed())
                .count()
        };
        match sort {
            Sort::Domain => {
                tasks.sort_by(|a, b| (&a.0.domain, &a.0.task_id).cmp(&(&b.0.domain, &b.0.task_id)))
            }
            Sort::Name => tasks.sort_by(|a, b| a.0.task_id.cmp(&b.0.task_id)),
            Sort::PassRate => tasks.sort_by(|a, b| {
                reward_sum(&a.1)
                    .total_cmp(&reward_sum(&b.1))
                    .then_with(|| a.0.task_id.cmp(&b.0.task_id))
            }),
            Sort::Failures => tasks.sort_by(|a, b| {
                failures(&b.1)
                    .cmp(&failures(&a.1))
                    .then_with(|| a.0.task_id.cmp(&b.0.task_id))
            }),
        }
        let mut rows = Vec::with_capacity(tasks.len() + 16);
        let mut task_rows = Vec::with_capacity(tasks.len());
        let mut i = 0;
        while i < tasks.len() {
            if sort == Sort::Domain {
                let domain = &tasks[i].0.domain;
                let n = tasks[i..]
                    .iter()
                    .take_while(|t| &t.0.domain == domain)
                    .count();
                rows.push(GridRow::Domain {
                    name: domain.clone(),
                    tasks: n,
                });
                for (t, cells) in tasks[i..i + n].iter_mut() {
                    task_rows.push(rows.len());
                    rows.push(GridRow::Task {
                        task_id: t.task_id.clone(),
                        domain: t.domain.clone(),
                        difficulty: t.difficulty.clone(),
                        cells: std::mem::take(cells),
                    });
                }
                i += n;
            } else {
                let (t, cells) = &mut tasks[i];
                task_rows.push(rows.len());
                rows.push(GridRow::Task {
                    task_id: t.task_id.clone(),
                    domain: t.domain.clone(),
                    difficulty: t.difficulty.clone(),
                    cells: std::mem::take(cells),
                });
                i += 1;
            }
        }
        GridModel {
            columns,
            rows,
            task_rows,
            stalled: s
                .activity
                .iter()
                .filter(|a| a.status.is_active() && a.stalled_at.is_some())
                .map(|a| a.id)
                .collect(),
        }
    }

    /// The attempt (index into `Snapshot::trials`) at task row `row` (index into `task_rows`),
    /// column `col`.
    pub fn cell(&self, row: usize, col: usize) -> Option<usize> {
        match self.rows.get(*self.task_rows.get(row)?)? {
            GridRow::Task { cells, .. } => cells.get(col).copied().flatten(),
            GridRow::Domain { .. } => None,
        }
    }

    /// Every attempt shown, row by row.
    pub fn shown_trials(&self) -> impl Iterator<Item = usize> + '_ {
        self.rows.iter().flat_map(|r| match r {
            GridRow::Task { cells, .. } => cells.iter().flatten().copied().collect::<Vec<_>>(),
            GridRow::Domain { .. } => Vec::new(),
        })
    }
}

/// Rows of the pass-rate pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Grouping {
    /// One row per domain.
    #[default]
    Domain,
    /// One row per difficulty.
    Difficulty,
}

/// Method D pass rates per group (`grouping`) and condition, with the overall row last and each
/// row's pass rate over judged trials: the analysis's own breakdown of the snapshot's trials
/// ([`crate::analysis::results::live_breakdown`], the report's tables' rows), never a second
/// computation of it here.
pub fn rate_rows(s: &Snapshot, grouping: Grouping) -> LiveBreakdown {
    crate::analysis::results::live_breakdown(
        &s.run,
        &s.tasks,
        &s.plan,
        &s.trials,
        match grouping {
            Grouping::Domain => GroupBy::Domain,
            Grouping::Difficulty => GroupBy::Difficulty,
        },
        &s.success,
    )
}

/// The event log's filter: space-separated terms, all of which must match — `level:<info|warn|
/// error>` keeps events at that level or above, any other term (`10.0.0.7`, `tcp://…`) is text
/// matched against the message (case-insensitive).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFilter {
    /// Lowest level kept (0 info, 1 warn, 2 error).
    pub min_level: u8,
    /// Text terms, lowercased.
    pub text: Vec<String>,
}

/// Rank of an event level (unknown levels rank as info).
pub fn level_rank(level: &str) -> u8 {
    match level {
        "error" => 2,
        "warn" | "warning" => 1,
        _ => 0,
    }
}

impl EventFilter {
    /// Parses a query.
    ///
    /// # Errors
    /// An unknown level (the message lists the levels).
    pub fn parse(query: &str) -> Result<EventFilter, String> {
        let mut f = EventFilter::default();
        for term in query.split_whitespace() {
            let lower = term.to_lowercase();
            match lower.split_once(':') {
                Some(("level", "")) => {}
                Some(("level", v)) => {
                    f.min_level = match v {
                        "info" => 0,
                        "warn" | "warning" => 1,
                        "error" => 2,
                        _ => return Err(format!("unknown level {v:?} (info, warn, error)")),
                    }
                }
                _ => f.text.push(lower),
            }
        }
        Ok(f)
    }

    /// True when nothing is filtered.
    pub fn is_empty(&self) -> bool {
        self.min_level == 0 && self.text.is_empty()
    }
}

/// Indices into `events` (oldest first) of those `filter` keeps, newest first.
pub fn event_rows(events: &[super::worker::EventRow], filter: &EventFilter) -> Vec<usize> {
    events
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, e)| {
            level_rank(&e.level) >= filter.min_level && {
                let m = e.message.to_lowercase();
                filter.text.iter().all(|t| m.contains(t.as_str()))
            }
        })
        .map(|(i, _)| i)
        .collect()
}

/// Run progress for the overview.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Progress {
    /// Planned trials: per task and condition what the run's plan holds (an import's sources),
    /// never fewer than the latest attempts — the same `m` as `status` and the report's
    /// `n of m`.
    pub total: usize,
    /// Finished.
    pub done: usize,
    /// Passed.
    pub passed: usize,
    /// Finished without passing, cancelled ones aside.
    pub failed: usize,
    /// Cancelled (by the operator) or interrupted.
    pub cancelled: usize,
    /// In a container now (= running containers).
    pub running: usize,
    /// Waiting.
    pub queued: usize,
    /// Per condition: (key, done, total).
    pub per_condition: Vec<(String, usize, usize)>,
    /// Trials finished per minute over the last 10 minutes.
    pub per_minute: Option<f64>,
    /// Estimated time to finish the queue, seconds.
    pub eta_secs: Option<f64>,
    /// Since this session of the run started, seconds.
    pub elapsed_secs: Option<f64>,
    /// Attempts in the run's history (retries and interrupted ones included).
    pub max_attempt: u32,
}

/// Tokens and cost of a run so far (finished attempts and the running ones' figures so far), how
/// fast it spends now, and the cost projected for all its trials. What no attempt reported is
/// unknown (`None`, drawn `—`), never 0; the attempts that lack a figure are counted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Spend {
    /// Input + output tokens over the attempts that reported them; `None` when none did.
    pub tokens: Option<i64>,
    /// USD over the priced attempts; `None` when none is priced (an import whose files have no
    /// cost).
    pub cost_usd: Option<f64>,
    /// Finished attempts without a cost.
    pub unpriced: usize,
    /// Finished attempts without token counts.
    pub untokened: usize,
    /// Per condition: (key, tokens, USD), `None` where unknown.
    pub per_condition: Vec<(String, Option<i64>, Option<f64>)>,
    /// The run's projected total cost with its 95 % interval ([`crate::analysis::spend::project`]);
    /// `None` until a priced attempt has finished.
    pub projection: Option<crate::analysis::spend::Projection>,
    /// USD per hour now ([`burn_rate`]), while the run runs.
    pub burn_usd_per_hour: Option<f64>,
}

/// The costs of every attempt of `s` by condition, as [`crate::analysis::spend`] takes them:
/// finished attempts with their cost (priced ones), running ones with what they spent so far,
/// and the queued count.
pub fn condition_costs(s: &Snapshot) -> BTreeMap<String, crate::analysis::spend::ConditionCosts> {
    let mut out: BTreeMap<String, crate::analysis::spend::ConditionCosts> = BTreeMap::new();
    for a in &s.activity {
        let c = out.entry(a.condition.clone()).or_default();
        match a.status {
            TrialStatus::Done => c.finished.extend(a.cost_usd),
            TrialStatus::Queued => c.queued += 1,
            _ => c.running.push(a.cost_usd.unwrap_or(0.0)),
        }
    }
    out
}

/// How far back [`burn_rate`] looks, seconds.
pub const BURN_WINDOW_SECS: f64 = 30.0 * 60.0;

/// The run's burn rate at `now`, USD per hour: the cost spent within the window — the last
/// [`BURN_WINDOW_SECS`], or since `started` (this session of the run) when that is shorter —
/// divided by the window's length. Each attempt's cost (a running one's so far) is taken as
/// spent evenly over its spending time, from the agent's start to its end (to `now` while it
/// runs); the part of that time inside the window counts, so a long trial that just finished
/// adds only its last half hour. `None` when the window is empty or no priced attempt spent
/// within it.
pub fn burn_rate(
    activity: &[crate::store::queries::AttemptActivity],
    started: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Option<f64> {
    let secs = |a: DateTime<Utc>, b: DateTime<Utc>| (b - a).num_milliseconds() as f64 / 1000.0;
    let window = secs(started, now).min(BURN_WINDOW_SECS);
    if window <= 0.0 {
        return None;
    }
    let from = now - chrono::Duration::milliseconds((window * 1000.0) as i64);
    let mut spent = 0.0;
    let mut any = false;
    for a in activity {
        let (Some(cost), Some(begin)) = (a.cost_usd, parse_time(&a.spend_from)) else {
            continue;
        };
        let end = match a.status {
            TrialStatus::Done => parse_time(&a.spend_to).unwrap_or(begin),
            _ => now,
        };
        if end < from || begin > now {
            continue;
        }
        let length = secs(begin, end);
        let inside = secs(begin.max(from), end.min(now));
        spent += if length > 0.0 {
            cost * (inside / length).clamp(0.0, 1.0)
        } else {
            cost
        };
        any = true;
    }
    any.then(|| spent / window * 3600.0)
}

/// [`Spend`] of a snapshot at `now`; `None` when no attempt reported usage (oracle, nop, imported
/// runs without tokens).
pub fn spend(s: &Snapshot, now: DateTime<Utc>) -> Option<Spend> {
    if s.spend.is_empty() {
        return None;
    }
    let mut out = Spend::default();
    let add = |total: &mut Option<f64>, v: Option<f64>| {
        if let Some(v) = v {
            *total = Some(total.unwrap_or(0.0) + v);
        }
    };
    for c in &s.spend {
        let tokens = (c.attempts > 0).then_some(c.input_tokens + c.output_tokens);
        let cost = (c.priced > 0).then_some(c.cost_usd);
        if let Some(t) = tokens {
            out.tokens = Some(out.tokens.unwrap_or(0) + t);
        }
        add(&mut out.cost_usd, cost);
        out.unpriced += c.unpriced;
        out.untokened += c.untokened;
        out.per_condition.push((c.condition.clone(), tokens, cost));
    }
    out.projection = crate::analysis::spend::project(&condition_costs(s));
    if s.run.status == "running" {
        out.burn_usd_per_hour =
            parse_time(&s.run.started_at).and_then(|st| burn_rate(&s.activity, st, now));
    }
    Some(out)
}

/// The activity of attempt `id` of `s` (`Snapshot::activity` is by id).
pub fn activity_of(s: &Snapshot, id: i64) -> Option<&crate::store::queries::AttemptActivity> {
    s.activity
        .binary_search_by_key(&id, |a| a.id)
        .ok()
        .map(|i| &s.activity[i])
}

fn parse_time(s: &Option<String>) -> Option<DateTime<Utc>> {
    s.as_deref()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
}

/// Progress at time `now`.
pub fn progress(s: &Snapshot, now: DateTime<Utc>) -> Progress {
    let mut p = Progress {
        total: s.trials.len(),
        ..Default::default()
    };
    let mut per: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let window_start = now - chrono::Duration::minutes(10);
    let started = parse_time(&s.run.started_at);
    let mut recent = 0usize;
    for t in &s.trials {
        let e = per.entry(t.condition.as_str()).or_default();
        e.1 += 1;
        p.max_attempt = p.max_attempt.max(t.attempt);
        match CellState::of(t, &s.success) {
            CellState::Queued => p.queued += 1,
            st if st.is_running() => p.running += 1,
            st => {
                // A cancelled trial did not run: it is counted apart, never as done.
                if st != CellState::Cancelled {
                    p.done += 1;
                    e.0 += 1;
                }
                match st {
                    CellState::Pass => p.passed += 1,
                    CellState::Cancelled => p.cancelled += 1,
                    _ => p.failed += 1,
                }
                if let Some(f) = parse_time(&t.finished_at)
                    && f >= window_start
                    && started.is_none_or(|st| f >= st)
                {
                    recent += 1;
                }
            }
        }
    }
    // Planned trials the store holds no row for (an import's listed tasks without a trial) are
    // part of the total: not run.
    p.per_condition = s
        .run
        .conditions
        .iter()
        .map(|c| {
            let (d, rows) = per.get(c.as_str()).copied().unwrap_or((0, 0));
            let planned: usize = s
                .tasks
                .iter()
                .map(|t| s.plan.of(&t.task_id, c) as usize)
                .sum();
            (c.clone(), d, rows.max(planned))
        })
        .collect();
    p.total = p.total.max(p.per_condition.iter().map(|(_, _, t)| t).sum());
    if s.run.status == "running"
        && let Some(st) = started
    {
        let elapsed = (now - st).num_milliseconds().max(0) as f64 / 1000.0;
        p.elapsed_secs = Some(elapsed);
        let window = elapsed.min(600.0);
        if recent > 0 && window > 0.0 {
            let per_min = recent as f64 / (window / 60.0);
            p.per_minute = Some(per_min);
            let left = (p.queued + p.running) as f64;
            p.eta_secs = Some(left / per_min * 60.0);
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{RunRow, RunTaskRow, TrialRow};

    fn trial(
        task: &str,
        cond: &str,
        idx: u32,
        status: TrialStatus,
        outcome: Option<Outcome>,
        reward: Option<f64>,
    ) -> TrialRow {
        TrialRow {
            status,
            outcome,
            reward,
            finished_at: Some("2026-11-21T10:09:00Z".into()),
            ..TrialRow::fixture(task, cond, idx)
        }
    }

    fn snapshot() -> Snapshot {
        let done = TrialStatus::Done;
        Snapshot {
            success: SuccessRule::default(),
            run: RunRow {
                id: 1,
                name: "r".into(),
                created_at: "2026-11-21T10:00:00Z".into(),
                tasks_dir: "/t".into(),
                agent: "oracle".into(),
                model: None,
                n_trials: 2,
                conditions: vec!["no-skills".into(), "curated".into()],
                jobs_dir: "/j".into(),
                status: "running".into(),
                started_at: Some("2026-11-21T10:00:00Z".into()),
                finished_at: None,
                owner_pid: Some(1),
                owner_host: None,
                heartbeat_at: None,
                settings: serde_json::json!({}),
                uid: "0123".into(),
                source: "native".into(),
                stop_reason: None,
                waiting_since: None,
                waiting_reason: None,
                stop_requested_at: None,
                resume_command: None,
                max_cost_usd: None,
                provider_limit: None,
                task_set: None,
            },
            tasks: vec![
                RunTaskRow {
                    task_id: "b-task".into(),
                    domain: "Finance".into(),
                    difficulty: "hard".into(),
                    path: String::new(),
                    problems: vec![],
                    digest: None,
                },
                RunTaskRow {
                    task_id: "a-task".into(),
                    domain: "Finance".into(),
                    difficulty: "easy".into(),
                    path: String::new(),
                    problems: vec![],
                    digest: None,
                },
                RunTaskRow {
                    task_id: "c-task".into(),
                    domain: "Energy".into(),
                    difficulty: "easy".into(),
                    path: String::new(),
                    problems: vec![],
                    digest: None,
                },
            ],
            trials: [
                trial(
                    "a-task",
                    "no-skills",
                    1,
                    done,
                    Some(Outcome::Pass),
                    Some(1.0),
                ),
                trial(
                    "a-task",
                    "no-skills",
                    2,
                    done,
                    Some(Outcome::Fail),
                    Some(0.0),
                ),
                trial("a-task", "curated", 1, done, Some(Outcome::Pass), Some(1.0)),
                trial("a-task", "curated", 2, TrialStatus::Agent, None, None),
                trial(
                    "b-task",
                    "no-skills",
                    1,
                    done,
                    Some(Outcome::AgentTimeout),
                    Some(0.0),
                ),
                trial("b-task", "no-skills", 2, TrialStatus::Queued, None, None),
                trial("c-task", "curated", 1, done, Some(Outcome::Pass), Some(1.0)),
            ]
            .iter()
            .map(TrialRow::brief)
            .collect(),
            events: Default::default(),
            labels: vec!["A".into(), "B".into()],
            pending_commands: 0,
            experiment: None,
            spaces: vec![],
            generated: vec![],
            spend: vec![],
            activity: vec![],
            owner_alive: None,
            hosts: vec![],
            plan: crate::domain::TrialPlan::uniform(2),
            sequential: None,
        }
    }

    #[test]
    fn grid_groups_by_domain_and_places_cells() {
        let s = snapshot();
        let g = GridModel::build(&s, &Filter::default(), Sort::Domain);
        assert_eq!(g.columns.len(), 4);
        let labels: Vec<String> = g
            .rows
            .iter()
            .map(|r| match r {
                GridRow::Domain { name, .. } => format!("#{name}"),
                GridRow::Task { task_id, .. } => task_id.clone(),
            })
            .collect();
        assert_eq!(
            labels,
            ["#Energy", "c-task", "#Finance", "a-task", "b-task"]
        );
        // a-task, curated #2 is column 3 and points at the running attempt.
        let a = 1;
        assert_eq!(g.cell(a, 3), Some(3));
        assert_eq!(CellState::of(&s.trials[3], &s.success), CellState::Agent);
        assert_eq!(g.cell(0, 0), None);
    }

    #[test]
    fn filters_and_sorts() {
        let s = snapshot();
        let f = Filter {
            query: "domain:fin status:failed".into(),
            status: StatusFilter::All,
        };
        let g = GridModel::build(&s, &f, Sort::Name);
        assert_eq!(g.task_rows.len(), 2); // a-task (fail) and b-task (timeout)
        let f = Filter {
            query: "cond:curated".into(),
            status: StatusFilter::Running,
        };
        let g = GridModel::build(&s, &f, Sort::Name);
        assert_eq!(g.columns.len(), 2);
        assert_eq!(g.task_rows.len(), 1);
        let g = GridModel::build(&s, &Filter::default(), Sort::PassRate);
        let first = match &g.rows[g.task_rows[0]] {
            GridRow::Task { task_id, .. } => task_id.clone(),
            _ => unreachable!(),
        };
        assert_eq!(first, "b-task");
    }

    #[test]
    fn rates_by_domain_and_difficulty() {
        let s = snapshot();
        let b = rate_rows(&s, Grouping::Domain);
        assert_eq!(b.rows.len(), 3);
        let fin = b.rows.iter().find(|r| r.group == "Finance").unwrap();
        // no-skills: a-task (1+0)/2 = 0.5, b-task 0 → 0.25
        assert!((fin.rates[0].unwrap() - 0.25).abs() < 1e-12);
        let total = b.rows.last().unwrap();
        assert_eq!(total.group, "overall");
        // curated: a 0.5, b 0, c 0.5 → 1/3
        assert!((total.rates[1].unwrap() - 1.0 / 3.0).abs() < 1e-12);
        // Δ curated − no-skills over the three tasks both planned.
        assert_eq!(total.n_matched[0], 3);
        assert!(
            (total.deltas_pp[0].unwrap()
                - (total.rates[1].unwrap() - total.rates[0].unwrap()) * 100.0)
                .abs()
                < 1e-9
        );
        let by_diff = rate_rows(&s, Grouping::Difficulty);
        assert_eq!(by_diff.rows[0].group, "easy");
    }

    #[test]
    fn progress_counts_and_eta() {
        let s = snapshot();
        let now = DateTime::parse_from_rfc3339("2026-11-21T10:10:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let p = progress(&s, now);
        // 12 planned (3 tasks × 2 conditions × 2 trials) though only 7 have rows: the same total
        // as the report's and status's planned trials.
        assert_eq!(
            (p.total, p.done, p.running, p.queued, p.passed, p.failed),
            (12, 5, 1, 1, 3, 2)
        );
        // 5 finished in the last 10 minutes → 0.5/min; 2 left → 240 s.
        assert!((p.per_minute.unwrap() - 0.5).abs() < 1e-9);
        assert!((p.eta_secs.unwrap() - 240.0).abs() < 1e-6);
        assert_eq!(p.per_condition[0], ("no-skills".into(), 3, 6));
    }

    #[test]
    fn spend_and_projection() {
        use crate::store::queries::{AttemptActivity, ConditionSpend};
        let mut s = snapshot();
        let now = DateTime::parse_from_rfc3339("2026-11-21T10:10:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(spend(&s, now), None, "no usage: unknown, not zero");
        s.spend = vec![ConditionSpend {
            condition: "no-skills".into(),
            attempts: 3,
            input_tokens: 4000,
            output_tokens: 400,
            cost_usd: 3.5,
            priced: 3,
            unpriced: 0,
            untokened: 0,
        }];
        let attempt = |id, status, cost: f64| AttemptActivity {
            id,
            condition: "no-skills".into(),
            status,
            tokens: Some(1000),
            cost_usd: Some(cost),
            spend_from: Some("2026-11-21T10:00:00Z".into()),
            spend_to: (status == TrialStatus::Done).then(|| "2026-11-21T10:05:00Z".into()),
            ..Default::default()
        };
        s.activity = vec![
            attempt(1, TrialStatus::Done, 1.0),
            attempt(2, TrialStatus::Done, 2.0),
            attempt(3, TrialStatus::Agent, 0.5),
            attempt(4, TrialStatus::Queued, 0.0),
        ];
        let sp = spend(&s, now).unwrap();
        assert_eq!(sp.tokens, Some(4400));
        assert!((sp.cost_usd.unwrap() - 3.5).abs() < 1e-12);
        // The one formula of analysis::spend: finished 3.0, the running one at the mean 1.5,
        // the queued one at 1.5.
        let p = sp.projection.clone().unwrap();
        assert!((p.total - 6.0).abs() < 1e-12, "{p:?}");
        assert!(p.plus_minus > 0.0);
        // Burn: the run started 10 minutes ago, so the window is 10 minutes; both finished
        // attempts spent within it (3.0) and the running one 0.5: 3.5 USD in 1/6 h.
        assert!(
            (sp.burn_usd_per_hour.unwrap() - 21.0).abs() < 1e-9,
            "{sp:?}"
        );
        s.run.status = "finished".into();
        assert_eq!(spend(&s, now).unwrap().burn_usd_per_hour, None);
        // Tokens but no cost anywhere (an import whose files have none): cost unknown, not $0.
        s.spend[0].cost_usd = 0.0;
        s.spend[0].priced = 0;
        s.spend[0].unpriced = 3;
        let sp = spend(&s, now).unwrap();
        assert_eq!((sp.cost_usd, sp.unpriced), (None, 3));
        assert_eq!(sp.per_condition[0].2, None);
    }

    #[test]
    fn burn_counts_only_the_part_of_a_trial_inside_the_window() {
        use crate::store::queries::AttemptActivity;
        let t = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
        // A trial of 60 minutes that cost 6 USD and ended now: half of it lies in the last 30
        // minutes, 3 USD in half an hour = 6 USD/h.
        let a = AttemptActivity {
            status: TrialStatus::Done,
            cost_usd: Some(6.0),
            spend_from: Some("2026-11-21T09:00:00Z".into()),
            spend_to: Some("2026-11-21T10:00:00Z".into()),
            ..Default::default()
        };
        let now = t("2026-11-21T10:00:00Z");
        let rate = burn_rate(std::slice::from_ref(&a), t("2026-11-21T08:00:00Z"), now).unwrap();
        assert!((rate - 6.0).abs() < 1e-9, "{rate}");
        // One that ended before the window adds nothing; unpriced attempts neither.
        let old = AttemptActivity {
            spend_to: Some("2026-11-21T09:10:00Z".into()),
            ..a.clone()
        };
        let unpriced = AttemptActivity {
            cost_usd: None,
            ..a
        };
        assert_eq!(
            burn_rate(&[old, unpriced], t("2026-11-21T08:00:00Z"), now),
            None
        );
    }
}
