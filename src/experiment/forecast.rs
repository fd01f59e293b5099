//! The forecast of an experiment's plan ([`crate::analysis::forecast`]), gathered: its tasks and
//! timeouts, what its runs have done so far, the estimates' best source — round 1's trials, else
//! imported runs of the same harness and model in the store, else the price list and the task
//! timeouts (cost) or the SkillsBench paper's pass rates (a bound on power) — and the plan's
//! hypotheses as comparisons.

use std::collections::BTreeMap;

use super::plan::Plan;
use crate::analysis::forecast::{
    self, ConditionPlan, Estimates, Forecast, NoiseRow, PerTrial, PowerRow,
};
use crate::analysis::noise::{self, NoiseMethod, TaskTrials};
use crate::analysis::power::{self, Components};
use crate::analysis::success::SuccessRule;
use crate::domain::{Outcome, TrialRow, TrialStatus};
use crate::engine::RunRequest;
use crate::skillsbench::TaskSet;
use crate::store::StoreError;
use crate::store::experiment_ledger::ExperimentReader;

/// The effect asked about for the round-2 hypotheses when none is given: a few percentage
/// points, as hypothesis 3 expects of learned over curated skills.
pub const DEFAULT_EFFECT_PP: f64 = crate::analysis::power::DEFAULT_EFFECT_PP;

/// The paper's mean curated-skills effect over its configurations, percentage points (abstract).
pub const PAPER_CURATED_PP: f64 = 16.2;

/// Assumed agent throughput when nothing was measured: prompt tokens per second of agent time
/// (re-sent context, mostly cache hits) and the share of them served from the cache.
pub const ASSUMED_INPUT_TOKENS_PER_SEC: f64 = 5_000.0;
/// The share of those prompt tokens read from the cache.
pub const ASSUMED_CACHED_SHARE: f64 = 0.9;
/// Assumed output tokens per second of agent time.
pub const ASSUMED_OUTPUT_TOKENS_PER_SEC: f64 = 40.0;
/// Assumed session length as a share of the agent timeout: point, low, high.
pub const ASSUMED_SESSION_SHARE: (f64, f64, f64) = (1.0 / 3.0, 0.1, 1.0);

/// What the forecast is of.
#[derive(Debug, Clone)]
pub struct Inputs<'a> {
    /// The plan.
    pub plan: &'a Plan,
    /// Its round-1 request (tasks, catalog, concurrency, hosts).
    pub round1: &'a RunRequest,
    /// The effect the inverse answers are for, percentage points (`None`: the defaults).
    pub effect_pp: Option<f64>,
}

/// Per condition label: the rewards of each task's finished trials as Method D counts them
/// (clamped to [0, 1]; 0 for a trial that ended without a reward, infrastructure failures
/// included), costs and durations.
#[derive(Debug, Default)]
struct Observed {
    per_task: BTreeMap<String, BTreeMap<String, Vec<f64>>>,
    costs: BTreeMap<String, Vec<f64>>,
    seconds: BTreeMap<String, Vec<f64>>,
    done: BTreeMap<String, usize>,
    spent: BTreeMap<String, f64>,
    /// Per label and task: (trials that succeeded, trials with a verdict that did not) — the
    /// flip rate's counts ([`crate::analysis::noise::flip_rate`]).
    outcomes: BTreeMap<String, BTreeMap<String, (usize, usize)>>,
}

fn seconds_between(a: Option<&str>, b: Option<&str>) -> Option<f64> {
    let p = |s: &str| chrono::DateTime::parse_from_rfc3339(s).ok();
    let (a, b) = (p(a?)?, p(b?)?);
    Some((b - a).num_milliseconds() as f64 / 1000.0).filter(|s| *s >= 0.0)
}

impl Observed {
    /// Adds `trials`, keyed by condition key through `label_of`.
    fn add(&mut self, trials: &[TrialRow], label_of: &dyn Fn(&str) -> Option<String>) {
        for t in trials.iter().filter(|t| t.status == TrialStatus::Done) {
            let Some(label) = label_of(&t.condition) else {
                continue;
            };
            // As Method D counts it: every finished trial but a cancelled or interrupted one (not
            // run, queued again), its reward clamped to [0, 1] and 0 without one.
            if !matches!(t.outcome, Some(Outcome::Cancelled | Outcome::Interrupted)) {
                self.per_task
                    .entry(label.clone())
                    .or_default()
                    .entry(t.task_id.clone())
                    .or_default()
                    .push(t.reward.unwrap_or(0.0).clamp(0.0, 1.0));
                *self.done.entry(label.clone()).or_default() += 1;
                let success = t.reward.is_some_and(|r| SuccessRule::default().succeeds(r));
                let failed = !success && crate::analysis::metrics::is_judged(t.outcome);
                let o = self
                    .outcomes
                    .entry(label.clone())
                    .or_default()
                    .entry(t.task_id.clone())
                    .or_default();
                o.0 += usize::from(success);
                o.1 += usize::from(failed);
            }
            if let Some(c) = t.cost_usd {
                self.costs.entry(label.clone()).or_default().push(c);
                *self.spent.entry(label.clone()).or_default() += c;
            }
            if let Some(s) = seconds_between(t.started_at.as_deref(), t.finished_at.as_deref()) {
                self.seconds.entry(label).or_default().push(s);
            }
        }
    }

    /// The noise floor of `label` at `k` trials per task; `None` without a finished trial.
    fn noise_row(&self, label: &str, k: u32, m: &NoiseMethod) -> Option<NoiseRow> {
        let per_task = self.per_task.get(label)?;
        let trials: Vec<TaskTrials<'_>> = per_task
            .iter()
            .map(|(t, r)| TaskTrials {
                task: t,
                rewards: r,
            })
            .collect();
        Some(NoiseRow {
            label: label.to_string(),
            flip: noise::flip_rate(
                self.outcomes
                    .get(label)
                    .into_iter()
                    .flat_map(|o| o.values().copied()),
            ),
            aa_noise: noise::aa_noise_at(label, &trials, m, Some(k)),
        })
    }

    /// The A/A noise of comparison `x` vs `y` over the tasks both measured, as the report takes
    /// it ([`noise::aa_noise_paired_at`], at `k` trials per task); `None` when a side has no
    /// finished trial.
    fn paired_noise(&self, x: &str, y: &str, k: u32, m: &NoiseMethod) -> Option<noise::AaNoise> {
        let (a, b) = (self.per_task.get(x)?, self.per_task.get(y)?);
        let (mut wx, mut wy) = (Vec::new(), Vec::new());
        for (task, rx) in a {
            if let Some(ry) = b.get(task) {
                wx.push(TaskTrials { task, rewards: rx });
                wy.push(TaskTrials { task, rewards: ry });
            }
        }
        Some(noise::aa_noise_paired_at((x, &wx), (y, &wy), m, Some(k)))
    }

    /// Variance components of `y` against `x` over the tasks both ran.
    fn components(&self, x: &str, y: &str) -> Option<Components> {
        let (a, b) = (self.per_task.get(x)?, self.per_task.get(y)?);
        let (mut va, mut vb) = (Vec::new(), Vec::new());
        for (task, ta) in a {
            if let Some(tb) = b.get(task) {
                va.push(ta.clone());
                vb.push(tb.clone());
            }
        }
        power::components(&va, &vb)
    }
}

/// The round-1 labels of condition keys: A, B and C.
fn round1_label(key: &str) -> Option<String> {
    match key {
        "no-skills" => Some("A".into()),
        "curated" => Some("B".into()),
        k if k.starts_with("self-generated") => Some("C".into()),
        _ => None,
    }
}

/// The forecast of `inputs` over the store `stored` reads (none: nothing measured yet).
///
/// # Errors
/// An unreadable task set, or store errors.
pub fn forecast(
    stored: Option<ExperimentReader<'_>>,
    inputs: &Inputs,
) -> Result<Forecast, StoreError> {
    let plan = inputs.plan;
    let req = inputs.round1;
    let tasks = TaskSet::load(&req.tasks_dir, &req.catalog, &req.task_filter)
        .map_err(|e| StoreError::NotFound(e.to_string()))?;
    let n1 = tasks.tasks.len();
    let k = plan.trials;
    let mut notes = Vec::new();
    if k > super::plan::MANY_TRIALS {
        notes.push(format!(
            "trials = {k} per task and condition is {}× the SkillsBench paper's 5: {} trials in round 1 alone — check the plan",
            k / 5,
            crate::format::thousands(n1 * k as usize * 2)
        ));
    }
    let name = plan.name();
    let exp = match stored {
        Some(s) => s.experiment(&name)?,
        None => None,
    };
    let (r1_name, r2_name) = exp
        .as_ref()
        .map(|e| (e.round1_run.clone(), e.round2_run.clone()))
        .unwrap_or_else(|| (format!("{name}-round1"), format!("{name}-round2")));
    // Round 2's tasks: the stored split's, else the plan's fraction (estimated), else all.
    let stored_split = exp
        .as_ref()
        .and_then(|e| e.split.clone())
        .and_then(|s| serde_json::from_value::<super::split::Split>(s).ok());
    let n2 = match (&stored_split, &plan.split) {
        (Some(s), _) => s.round2_tasks().len(),
        (None, Some(p)) if p.round2 == super::split::Round2Tasks::Test => {
            notes.push(format!(
                "round 2's tasks are estimated from the split's test fraction {} (the split is drawn when round 1 starts)",
                p.test_fraction
            ));
            ((n1 as f64) * p.test_fraction).round().max(1.0) as usize
        }
        _ => n1,
    };
    let mut observed = Observed::default();
    if let Some(s) = stored {
        if let Some((_, trials)) = s.run_trials(&r1_name)? {
            observed.add(&trials, &round1_label);
        }
        if let Some((r2, trials)) = s.run_trials(&r2_name)? {
            let labels = r2.conditions.clone();
            let label_of = move |key: &str| match labels.iter().position(|c| c == key) {
                Some(0) => Some("A'".to_string()),
                Some(1) => Some("B'".to_string()),
                _ => None,
            };
            observed.add(&trials, &label_of);
        }
    }
    let mut conditions = vec![("A", 1u8, n1), ("B", 1, n1)];
    if plan.self_generated.is_some() {
        conditions.push(("C", 1, n1));
    }
    conditions.extend([("A'", 2, n2), ("B'", 2, n2)]);
    let plans: Vec<ConditionPlan> = conditions
        .iter()
        .map(|(label, round, n)| ConditionPlan {
            label: label.to_string(),
            round: *round,
            trials: n * k as usize,
            done: observed.done.get(*label).copied().unwrap_or(0),
            spent_usd: observed.spent.get(*label).copied().unwrap_or(0.0),
        })
        .collect();
    // Other runs of the same tasks, harness and model: the second source.
    let task_ids: std::collections::BTreeSet<String> =
        tasks.tasks.iter().map(|t| t.id.clone()).collect();
    let imported = match stored {
        Some(s) if observed.costs.is_empty() || observed.per_task.len() < 2 => {
            other_runs(s, plan, &task_ids, &r1_name, &r2_name)?
        }
        _ => Vec::new(),
    };
    let estimates = estimates(plan, &tasks, req, &observed, &imported, &mut notes);
    let rows = forecast::project(&plans, &estimates);
    let mut power = power_rows(plan, &observed, &imported, n1, n2, inputs.effect_pp);
    let noise = noise_floor(&observed, k, &mut power, &mut notes);
    notes.push(
        "learning and export are not included: their time depends on the Acontext server".into(),
    );
    Ok(Forecast {
        rows,
        estimates,
        power,
        notes,
        noise,
    })
}

/// Runs in the store of the plan's agent and model over exactly the plan's tasks that are not
/// this experiment's, each named as a source (`imported run r1`, `run r1`), with what they
/// measured (their no-skills and curated trials as A and B). A run over other tasks says
/// nothing of these tasks' variances or times and is not borrowed from.
fn other_runs(
    stored: ExperimentReader<'_>,
    plan: &Plan,
    tasks: &std::collections::BTreeSet<String>,
    r1: &str,
    r2: &str,
) -> Result<Vec<(String, Observed)>, StoreError> {
    let mut out = Vec::new();
    stored.for_each_run_of(
        &plan.agent,
        plan.model.as_deref(),
        [r1, r2],
        |run, trials| {
            let ran: std::collections::BTreeSet<&str> =
                trials.iter().map(|t| t.task_id.as_str()).collect();
            if ran.len() != tasks.len() || !tasks.iter().all(|t| ran.contains(t.as_str())) {
                return;
            }
            let mut o = Observed::default();
            o.add(&trials, &round1_label);
            if !o.per_task.is_empty() || !o.costs.is_empty() {
                let what = if run.source == "native" {
                    "run"
                } else {
                    "imported run"
                };
                out.push((format!("{what} {}", run.name), o));
            }
        },
    )?;
    Ok(out)
}

fn agent_label(plan: &Plan) -> String {
    format!(
        "{}{}",
        plan.agent,
        plan.model
            .as_deref()
            .map(|m| format!(" {m}"))
            .unwrap_or_default()
    )
}

/// Per-trial cost and time, from the best source there is.
fn estimates(
    plan: &Plan,
    tasks: &TaskSet,
    req: &RunRequest,
    observed: &Observed,
    imported: &[(String, Observed)],
    notes: &mut Vec<String>,
) -> Estimates {
    let slots = req.settings.concurrency.max(1) * req.settings.docker_hosts.len().max(1);
    let pick = |o: &Observed| -> BTreeMap<String, PerTrial> {
        let get = |l: &str| o.costs.get(l).cloned().filter(|v| !v.is_empty());
        let mut m = BTreeMap::new();
        for (label, from) in [("A", "A"), ("B", "B"), ("C", "C"), ("A'", "A"), ("B'", "B")] {
            if let Some(v) = get(label).or_else(|| get(from)) {
                m.insert(label.to_string(), PerTrial::Measured(v));
            }
        }
        m
    };
    let mean = |f: &dyn Fn(&crate::skillsbench::Task) -> f64| {
        if tasks.tasks.is_empty() {
            0.0
        } else {
            tasks.tasks.iter().map(f).sum::<f64>() / tasks.tasks.len() as f64
        }
    };
    let timeout = mean(&|t| t.config.agent.timeout_sec + t.config.verifier.timeout_sec);
    let agent_timeout = mean(&|t| t.config.agent.timeout_sec);
    let (sp, sl, sh) = ASSUMED_SESSION_SHARE;
    let assumed_secs = PerTrial::Assumed {
        point: sp * timeout,
        low: sl * timeout,
        high: sh * timeout,
    };
    let timeouts_words = format!(
        "assumed: sessions of {:.0}% ({:.0}–{:.0}%) of the tasks' agent and verifier timeouts (mean {timeout:.0} s)",
        sp * 100.0,
        sl * 100.0,
        sh * 100.0
    );
    let (cost, cost_source) = if !observed.costs.is_empty() {
        let n: usize = observed.costs.values().map(Vec::len).sum();
        (
            pick(observed),
            format!("this experiment's {n} priced trial(s) (before round 2: A' as A, B' as B)"),
        )
    } else if let Some((name, o)) = imported.iter().find(|(_, o)| !o.costs.is_empty()) {
        (
            pick(o),
            format!(
                "{name} of {} over the same tasks ({} priced trials)",
                agent_label(plan),
                o.costs.values().map(Vec::len).sum::<usize>()
            ),
        )
    } else if plan.agent == "oracle" || plan.agent == "nop" {
        (
            BTreeMap::from([(
                "A".to_string(),
                PerTrial::Assumed {
                    point: 0.0,
                    low: 0.0,
                    high: 0.0,
                },
            )]),
            format!("the {} agent calls no model: $0", plan.agent),
        )
    } else {
        price_list_cost(plan, agent_timeout, notes)
    };
    // Each condition's own durations, else its round-1 counterpart's (A' takes A's, B' B's).
    let per_label = |o: &Observed| -> BTreeMap<String, PerTrial> {
        let get = |l: &str| o.seconds.get(l).cloned().filter(|v| !v.is_empty());
        let mut m = BTreeMap::new();
        for (label, from) in [("A", "A"), ("B", "B"), ("C", "C"), ("A'", "A"), ("B'", "B")] {
            if let Some(v) = get(label).or_else(|| get(from)) {
                m.insert(label.to_string(), PerTrial::Measured(v));
            }
        }
        m
    };
    let timed = |o: &Observed| o.seconds.values().map(Vec::len).sum::<usize>();
    let (seconds, seconds_source) = if timed(observed) > 0 {
        (
            per_label(observed),
            format!(
                "this experiment's {} timed trial(s), per condition (round 2 from its round-1 counterpart until it ran)",
                timed(observed)
            ),
        )
    } else if let Some((name, o)) = imported.iter().find(|(_, o)| timed(o) > 0) {
        (
            per_label(o),
            format!("{name} over the same tasks ({} timed trials)", timed(o)),
        )
    } else if let Some((point, low, high)) = crate::skillsbench::examples::is_examples(&tasks.root)
        .then(|| crate::skillsbench::examples::reference_seconds(&plan.agent))
        .flatten()
    {
        // The built-in examples' own measured durations beat the timeouts by an order of
        // magnitude (a fresh machine's dry run forecast 20 min for 2).
        (
            BTreeMap::from([("A".to_string(), PerTrial::Assumed { point, low, high })]),
            format!(
                "the built-in example tasks' measured {} trials: {point:.1} s a slot ({low:.1}–{high:.1} s; data/example-durations.toml)",
                plan.agent
            ),
        )
    } else {
        (
            BTreeMap::from([("A".to_string(), assumed_secs)]),
            timeouts_words,
        )
    };
    Estimates {
        cost,
        cost_source,
        seconds,
        seconds_source,
        slots,
    }
}

/// Per-trial cost from the price list at the assumed throughput over the assumed session.
fn price_list_cost(
    plan: &Plan,
    agent_timeout: f64,
    notes: &mut Vec<String>,
) -> (BTreeMap<String, PerTrial>, String) {
    let table = crate::agent_logs::pricing::PriceTable::builtin();
    let Some(row) = plan
        .model
        .as_deref()
        .and_then(|m| table.lookup(m, None).ok())
    else {
        notes.push(format!(
            "cost unknown: {} is not in the price list (data/model-prices.csv); name the model in the plan",
            plan.model.as_deref().unwrap_or("the harness's default model")
        ));
        return (BTreeMap::new(), "unknown (no price for the model)".into());
    };
    let per_sec = (ASSUMED_INPUT_TOKENS_PER_SEC
        * ((1.0 - ASSUMED_CACHED_SHARE) * row.input_usd_per_mtok
            + ASSUMED_CACHED_SHARE * row.cached_input_usd_per_mtok)
        + ASSUMED_OUTPUT_TOKENS_PER_SEC * row.output_usd_per_mtok)
        / 1_000_000.0;
    // Only the agent's session calls the model: price the agent's timeout, not the verifier's.
    let (sp, sl, sh) = ASSUMED_SESSION_SHARE;
    let agent = agent_timeout;
    let point = PerTrial::Assumed {
        point: per_sec * sp * agent,
        low: per_sec * sl * agent,
        high: per_sec * sh * agent,
    };
    (
        BTreeMap::from([("A".to_string(), point)]),
        format!(
            "price list ({}: ${}/${} per Mtok in/out) at an assumed {:.0} prompt tokens/s ({:.0}% cached) and {:.0} output tokens/s, sessions of {:.0}% ({:.0}–{:.0}%) of the agent timeout (mean {agent:.0} s)",
            row.label(),
            row.input_usd_per_mtok,
            row.output_usd_per_mtok,
            ASSUMED_INPUT_TOKENS_PER_SEC,
            ASSUMED_CACHED_SHARE * 100.0,
            ASSUMED_OUTPUT_TOKENS_PER_SEC,
            sp * 100.0,
            sl * 100.0,
            sh * 100.0
        ),
    )
}

/// The B − A components and their source: round 1, else an imported run of the same harness and
/// model, else a bound from the paper's pass rates (or, without them, binary rewards at 50 %).
fn base_components(
    plan: &Plan,
    observed: &Observed,
    imported: &[(String, Observed)],
) -> (Components, String) {
    // Measurements without any variance (every trial of every task gave the same reward, as a
    // deterministic agent's do) are no basis for power: a forecast from them would claim any
    // effect detectable with two tasks. They are passed over, and said so.
    let varies = |c: &Components| c.var_diff > 0.0 || c.within_sum() > 0.0;
    let mut flat: Option<String> = None;
    if let Some(c) = observed.components("A", "B") {
        if varies(&c) {
            return (c, format!("round 1 ({} tasks)", c.n_tasks));
        }
        flat = Some(format!("round 1 ({} tasks)", c.n_tasks));
    }
    if let Some((name, c)) = imported
        .iter()
        .filter_map(|(n, o)| o.components("A", "B").map(|c| (n, c)))
        .filter(|(_, c)| varies(c))
        .max_by_key(|(_, c)| c.n_tasks)
    {
        return (c, format!("{name} ({} tasks)", c.n_tasks));
    }
    let (c, source) = bound_components(plan);
    match flat {
        Some(f) => (
            c,
            format!("{source} — {f} measured no variance (every trial the same reward)"),
        ),
        None => (c, format!("{source}, nothing measured yet")),
    }
}

/// A bound on the B − A components from the paper's pass rates of the plan's agent and model,
/// else binary rewards at 50 % (the worst case), with its source.
fn bound_components(plan: &Plan) -> (Components, String) {
    let paper = crate::analysis::paper::for_run(&plan.agent, plan.model.as_deref());
    let rate = |m: &str| {
        paper
            .iter()
            .find(|v| v.metric == m)
            .and_then(|v| v.value)
            .map(|v| v / 100.0)
    };
    match (rate("pass_no_skills"), rate("pass_curated")) {
        (Some(a), Some(b)) => (
            power::binary_bound(a, b),
            format!(
                "bound from the paper's pass rates of {} (A {:.1}%, B {:.1}%)",
                agent_label(plan),
                a * 100.0,
                b * 100.0
            ),
        ),
        _ => (
            power::binary_bound(0.5, 0.5),
            "worst-case bound (binary rewards at 50%)".into(),
        ),
    }
}

/// Components of a round-2 comparison before it ran: the trial variance of its sides from round 1
/// and the skill-effect heterogeneity of B − A between tasks.
fn proxy(base: &Components, with: Option<f64>, without: Option<f64>) -> Components {
    let wa = without.or(base.within_a);
    let wb = with.or(base.within_b);
    Components {
        n_tasks: 0,
        mean_diff: 0.0,
        var_diff: base.between + wa.unwrap_or(0.0) + wb.unwrap_or(0.0),
        within_a: wa,
        within_b: wb,
        between: base.between,
    }
}

fn within_of(observed: &Observed, label: &str) -> Option<f64> {
    let vars: Vec<f64> = observed
        .per_task
        .get(label)?
        .values()
        .filter(|t| t.len() > 1)
        .filter_map(|t| crate::analysis::spend::mean_sd(t).map(|(_, s)| s * s))
        .collect();
    crate::analysis::spend::mean_sd(&vars).map(|(m, _)| m)
}

/// The noise floor of every condition with finished trials, at `k` trials per task; sets each
/// comparison's A/A noise and notes a planned effect within it.
///
/// A comparison whose two sides both have finished trials takes its noise as the report does
/// ([`noise::aa_noise_paired_at`] over the tasks both measured, the same labels and seed: at the
/// trials they ran, the same number), scaled from the tasks it was measured over to the
/// comparison's as √(measured / compared) (a mean over more tasks is less noisy). A round-2 side
/// not measured yet borrows its round-1 counterpart's (A' from A, B' from B, as the power rows
/// borrow its trial variance); the sides are then pooled as √((h_x² + h_y²)/2), the normal
/// approximation of the per-split pooling.
fn noise_floor(
    observed: &Observed,
    k: u32,
    power: &mut [PowerRow],
    notes: &mut Vec<String>,
) -> Vec<NoiseRow> {
    let m = NoiseMethod::from(&crate::analysis::ci::CiMethod::default());
    let rows: Vec<NoiseRow> = ["A", "B", "C", "A'", "B'"]
        .iter()
        .filter_map(|l| observed.noise_row(l, k, &m))
        .collect();
    let at = |l: &str| {
        rows.iter()
            .find(|r| r.label == l)
            .and_then(|r| Some((r.aa_noise.spread_pp?, r.aa_noise.n_tasks)))
    };
    let side = |l: &str| {
        at(l).or_else(|| match l {
            "A'" => at("A"),
            "B'" => at("B"),
            _ => None,
        })
    };
    for p in power.iter_mut().filter(|p| p.unit == "pp") {
        let (x, y) = if p.hypothesis.starts_with("B − A") {
            ("B", "A")
        } else if p.hypothesis.starts_with("H1") {
            ("A'", "A")
        } else if p.hypothesis.starts_with("H3") {
            ("B'", "B")
        } else if p.hypothesis.starts_with("A' − C") {
            ("A'", "C")
        } else {
            continue;
        };
        let scale = |h: f64, n: usize| h * (n as f64 / p.n_tasks.max(1) as f64).sqrt();
        let h = match observed.paired_noise(x, y, k, &m) {
            Some(n) if n.spread_pp.is_some() => {
                let s = scale(n.spread_pp.unwrap_or(0.0), n.n_tasks);
                p.aa_noise_band_pp = n
                    .band_pp
                    .map(|(lo, hi)| (scale(lo, n.n_tasks), scale(hi, n.n_tasks)));
                s
            }
            _ => {
                let (Some((hx, nx)), Some((hy, ny))) = (side(x), side(y)) else {
                    let short = if side(x).is_none() { x } else { y };
                    p.aa_noise_undefined = Some(format!(
                        "no task of {short} has 2 or more finished trials yet"
                    ));
                    continue;
                };
                ((scale(hx, nx).powi(2) + scale(hy, ny).powi(2)) / 2.0).sqrt()
            }
        };
        p.aa_noise_pp = Some(h);
        p.aa_noise_undefined = None;
        if p.effect.abs() <= h {
            notes.push(format!(
                "{}: the planned effect {:+.1} pp is within the A/A noise ±{h:.1} pp — a Δ that size is what rerunning one condition gives at {} tasks × {} trials; plan a larger effect, more trials per task or more tasks",
                p.hypothesis, p.effect, p.n_tasks, p.trials
            ));
        }
    }
    rows
}

/// The plan's comparisons: the curated effect in round 1, then the hypotheses of round 2.
fn power_rows(
    plan: &Plan,
    observed: &Observed,
    imported: &[(String, Observed)],
    n1: usize,
    n2: usize,
    effect: Option<f64>,
) -> Vec<PowerRow> {
    let k = plan.trials;
    let (base, base_source) = base_components(plan, observed, imported);
    let mut rows = vec![forecast::power_row(
        &format!("B − A: curated skills (the paper: +{PAPER_CURATED_PP} pp)"),
        base,
        n1,
        k,
        effect.unwrap_or(PAPER_CURATED_PP),
        &base_source,
        None,
    )];
    let proxy_source = if base.n_tasks > 0 {
        format!("proxy: {base_source}: the sides' trial variance, B − A's between-task variance")
    } else {
        base_source.clone()
    };
    let side = |x: &str, y: &str, wx: Option<f64>, wy: Option<f64>| match observed.components(x, y)
    {
        Some(c) => (c, format!("round 2 ({} tasks)", c.n_tasks)),
        None => (proxy(&base, wy, wx), proxy_source.clone()),
    };
    let (wa, wb, wc) = (
        within_of(observed, "A"),
        within_of(observed, "B"),
        within_of(observed, "C"),
    );
    let e = effect.unwrap_or(DEFAULT_EFFECT_PP);
    let round2 = |name: &str, (c, source): (Components, String), gap: Option<f64>| {
        forecast::power_row(name, c, n2, k, e, &source, gap)
    };
    let h1 = side("A", "A'", wa, wa);
    rows.push(round2(
        "H1 A' − A: learned skills vs none",
        h1.clone(),
        None,
    ));
    // The gap A' closes is measured against B − A: round 1's, else the paper's.
    let gap = if base.n_tasks > 0 && base.mean_diff > 0.0 {
        base.mean_diff * 100.0
    } else {
        PAPER_CURATED_PP
    };
    rows.push(round2(
        &format!("H2 share of the B − A gap ({gap:.1} pp) A' closes"),
        h1,
        Some(gap),
    ));
    rows.push(round2(
        "H3 B' − B: learned over curated",
        side("B", "B'", wb, wb),
        None,
    ));
    if plan.self_generated.is_some() {
        rows.push(round2(
            "A' − C: learned vs self-generated",
            side("C", "A'", wc.or(wa), wa),
            None,
        ));
    }
    rows
}

impl super::Experiment {
    /// Says the plan of the round about to start — its trials, cost and time, and what the
    /// hypotheses can detect — in the operator's output and run `run`'s event log. A forecast
    /// that cannot be made is said as such; it never stops the experiment.
    pub(super) async fn say_forecast(&self, setup: &super::ExperimentSetup, run: &str, round: u8) {
        let conn = match self.store.connect() {
            Ok(c) => c,
            Err(_) => return,
        };
        let inputs = Inputs {
            plan: &setup.plan,
            round1: &setup.round1,
            effect_pp: None,
        };
        let lines = match forecast(Some(ExperimentReader::new(&conn)), &inputs) {
            Ok(f) => round_lines(&f, round),
            Err(e) => vec![format!("plan of round {round}: not available ({e})")],
        };
        drop(conn);
        for l in lines {
            self.say(run, "info", &l).await;
        }
    }
}

/// What is said at the start of round `round`: its trials, cost and wall time with their
/// sources, and each hypothesis's minimum detectable effect.
pub fn round_lines(f: &Forecast, round: u8) -> Vec<String> {
    let rows: Vec<&forecast::CostRow> = f.rows.iter().filter(|r| r.round == round).collect();
    let remaining: usize = rows.iter().map(|r| r.remaining).sum();
    let cost: forecast::Interval = rows.iter().map(|r| r.cost_usd).sum();
    let wall: forecast::Interval = rows.iter().map(|r| r.wall_secs).sum();
    let mut out = vec![format!(
        "plan of round {round}: {remaining} trial(s) to run; cost {} (from {}); about {} at {} slot(s) (from {})",
        if f.estimates.cost.is_empty() {
            "unknown".to_string()
        } else {
            forecast::usd_interval(cost)
        },
        f.estimates.cost_source,
        forecast::duration_interval(wall),
        f.estimates.slots,
        f.estimates.seconds_source
    )];
    out.extend(f.power.iter().map(|p| {
        format!(
            "minimum detectable effect (80% power, α 0.05): {}{}",
            p.line(),
            p.aa_noise_pp.map_or_else(String::new, |h| format!(
                "; A/A noise ±{} pp{}",
                crate::format::se(h),
                crate::analysis::forecast::band_words(p.aa_noise_band_pp)
            ))
        )
    }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed(a: &[(&str, &[f64])], b: &[(&str, &[f64])]) -> Observed {
        let side = |s: &[(&str, &[f64])]| -> BTreeMap<String, Vec<f64>> {
            s.iter().map(|(t, r)| (t.to_string(), r.to_vec())).collect()
        };
        Observed {
            per_task: BTreeMap::from([("A".into(), side(a)), ("B".into(), side(b))]),
            ..Default::default()
        }
    }

    #[test]
    fn measurements_without_variance_are_no_basis_for_power() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let plan = crate::experiment::plan::Plan::load(&dir.join("plans/examples.toml")).unwrap();
        // Every trial the same reward: the bound, said so — never a variance of 0.
        let flat = observed(
            &[("t1", &[0.0, 0.0]), ("t2", &[0.0, 0.0])],
            &[("t1", &[1.0, 1.0]), ("t2", &[1.0, 1.0])],
        );
        let (c, source) = base_components(&plan, &flat, &[]);
        assert!(c.var_of_mean(2, 1) > 0.0, "{c:?}");
        assert!(
            source.contains("round 1 (2 tasks) measured no variance"),
            "{source}"
        );
        // Some variance: the measurement itself.
        let varied = observed(
            &[("t1", &[0.0, 1.0]), ("t2", &[0.0, 0.0])],
            &[("t1", &[1.0, 1.0]), ("t2", &[1.0, 1.0])],
        );
        let (c, source) = base_components(&plan, &varied, &[]);
        assert_eq!((c.n_tasks, source.as_str()), (2, "round 1 (2 tasks)"));
    }
}
