//! `skillscope replay`: a group-sequential design applied to finished runs stage by stage
//! ([`crate::analysis::sequential::replay`]), and simulated.

use std::collections::BTreeMap;

use color_eyre::eyre::{Result, bail};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::analysis::metrics::trial_reward;
use crate::analysis::sequential::design::{ContinueReason, Decision};
use crate::analysis::sequential::replay::{
    FixedVerdict, PairedTrials, Replay, Settings, Simulated, design_for, replay, simulate,
};
use crate::cli::ReplayArgs;
use crate::domain::{RunRow, TrialRow, TrialStatus};
use crate::sanitize;
use crate::store::{Store, queries};

/// Runs `skillscope replay`.
///
/// # Errors
/// A missing database or run, a run without two conditions or enough trials.
pub fn execute(args: ReplayArgs) -> Result<()> {
    let reading = Store::open_for_reading(&args.db.db)?;
    let conn: &rusqlite::Connection = &reading;
    let runs: Vec<RunRow> = if args.runs.is_empty() {
        queries::list_runs(conn)?
            .into_iter()
            .filter(|r| r.conditions.len() >= 2)
            .collect()
    } else {
        args.runs
            .iter()
            .map(|n| super::find_run(conn, Some(n)))
            .collect::<Result<_>>()?
    };
    if runs.is_empty() {
        bail!("no run with two conditions in {}", args.db.db.display());
    }
    let settings = Settings {
        stages: args.stages as usize,
        futility: !args.no_futility,
        beta: args.beta,
        ..Settings::default()
    };
    let mut results = Vec::new();
    let mut sims = Vec::new();
    for run in &runs {
        let trials = queries::current_trials(conn, run.id)?;
        let (mut data, order_known) = paired_of(run, &trials);
        let name = sanitize::text(&run.name);
        if !order_known {
            data.shuffle(&mut ChaCha8Rng::seed_from_u64(args.seed));
        }
        let design = match design_for(&data, &settings) {
            Ok(d) => d,
            Err(e) => {
                println!("{name}: — ({e})");
                continue;
            }
        };
        let r = replay(&data, &design)?;
        print_replay(&name, run, &r, order_known, args.seed);
        if let Some(n) = args.simulate {
            let (null, power) = simulate(&data, &design, n, args.seed)?;
            println!(
                "  simulated ({n} draws each): type-I error {:.2} % (± {:.2} MC SE), trials used {:.0} %; power at the observed effect {:.1} %, trials used {:.0} %",
                null.rejection_rate * 100.0,
                null.mc_se * 100.0,
                null.mean_share * 100.0,
                power.rejection_rate * 100.0,
                power.mean_share * 100.0
            );
            sims.push((null, power));
        }
        results.push(r);
    }
    if results.len() > 1 {
        print_summary(&results, &sims);
    }
    Ok(())
}

/// Rewards with their trial index.
type Indexed = Vec<(u32, f64)>;

/// The run's paired rewards (B = its second condition, A = its first) over the tasks with
/// judged trials in both, in trial-index order; `false` when the order is unknown (trials
/// synthesized from published aggregates).
fn paired_of(run: &RunRow, trials: &[TrialRow]) -> (PairedTrials, bool) {
    let (ca, cb) = (&run.conditions[0], &run.conditions[1]);
    let mut by: BTreeMap<&str, (Indexed, Indexed)> = BTreeMap::new();
    let mut order_known = true;
    for t in trials {
        if t.superseded || t.status != TrialStatus::Done || t.trial_index == 0 {
            continue;
        }
        order_known &= !t.aggregated;
        let e = by.entry(t.task_id.as_str()).or_default();
        let r = (t.trial_index, trial_reward(t));
        if &t.condition == ca {
            e.0.push(r);
        } else if &t.condition == cb {
            e.1.push(r);
        }
    }
    let mut data = PairedTrials::default();
    for (task, (mut a, mut b)) in by {
        if a.is_empty() || b.is_empty() {
            continue;
        }
        a.sort_by_key(|x| x.0);
        b.sort_by_key(|x| x.0);
        data.tasks.push(task.to_string());
        data.a.push(a.into_iter().map(|x| x.1).collect());
        data.b.push(b.into_iter().map(|x| x.1).collect());
    }
    (data, order_known)
}

fn pp(x: f64) -> String {
    format!("{:+.1} pp", x * 100.0)
}

fn decision_text(d: &Decision, z: f64) -> String {
    match d {
        Decision::StopEfficacy { bound } => {
            format!("stop: efficacy (z {z:.2} ≥ {bound:.3})")
        }
        Decision::StopFutility { bound } => {
            format!("stop: futility (z {z:.2} < {bound:.3})")
        }
        Decision::Continue {
            reason, efficacy, ..
        } => match reason {
            ContinueReason::BetweenBounds => format!("continue (z {z:.2} between the bounds)"),
            ContinueReason::BelowEfficacy => format!("continue (z {z:.2} < {efficacy:.3})"),
            ContinueReason::Undefined => "continue (z undefined)".to_string(),
        },
    }
}

fn print_replay(name: &str, run: &RunRow, r: &Replay, order_known: bool, seed: u64) {
    let d = &r.design;
    let fractions: Vec<String> = d.fractions.iter().map(|t| format!("{t:.3}")).collect();
    println!(
        "{name}: B − A = {} − {}, {} tasks × {} trials; {} stages at information {} ({}), O'Brien–Fleming α = {} one-sided{}",
        sanitize::text(&run.conditions[1]),
        sanitize::text(&run.conditions[0]),
        r.tasks,
        r.trials,
        d.stages(),
        fractions.join(", "),
        if order_known {
            "trial order as run".to_string()
        } else {
            format!("trial order shuffled, seed {seed}")
        },
        d.alpha,
        if d.futility.is_empty() {
            String::new()
        } else {
            format!(", non-binding futility β = {}", d.beta)
        }
    );
    for (s, look) in r.looks.iter().enumerate() {
        let fut = d
            .futility_bound(s)
            .map_or("—".to_string(), |f| format!("{f:.3}"));
        println!(
            "  stage {} ({} trial{}/task): Δ {}  z {:.2}  bounds [futility {fut}, efficacy {:.3}]  {}",
            s + 1,
            look.trials,
            if look.trials == 1 { "" } else { "s" },
            pp(look.mean_diff),
            look.z,
            d.efficacy[s],
            decision_text(&look.decision, look.z)
        );
    }
    let fixed = match r.fixed {
        FixedVerdict::Effect => "effect",
        FixedVerdict::Harm => "harm",
        FixedVerdict::Undecided => "undecided",
    };
    println!(
        "  verdict: {} at stage {} of {}; fixed design ({} trials): {fixed} (z {:.2}){}; trials used {:.0} %",
        if r.effect() {
            "effect"
        } else {
            "no effect shown"
        },
        r.stop_stage() + 1,
        d.stages(),
        r.trials,
        r.fixed_z,
        if r.agrees() {
            ", agrees"
        } else {
            ", DISAGREES"
        },
        r.share_used() * 100.0
    );
    match &r.adjusted {
        Some(a) => println!(
            "  estimate: median-unbiased {} [{}, {}] (stage-wise ordering, 95 %); naive {} [{}, {}]",
            pp(a.median_unbiased),
            pp(a.ci.0),
            pp(a.ci.1),
            pp(a.naive),
            pp(a.naive_ci.0),
            pp(a.naive_ci.1)
        ),
        None => println!("  estimate: — (the statistic is infinite: no spread between tasks)"),
    }
}

fn print_summary(results: &[Replay], sims: &[(Simulated, Simulated)]) {
    let decisive = results
        .iter()
        .filter(|r| r.fixed != FixedVerdict::Undecided)
        .count();
    let early = results.iter().filter(|r| r.decided_early()).count();
    let disagree = results.iter().filter(|r| !r.agrees()).count();
    let share = results.iter().map(Replay::share_used).sum::<f64>() / results.len() as f64;
    println!(
        "\n{} runs: the fixed design decides {decisive}; the sequential design decides {early} of them before its last stage with the same verdict, disagrees on {disagree}; mean share of trials used {:.3}",
        results.len(),
        share
    );
    if !sims.is_empty() {
        let n = sims.len() as f64;
        let t1 = sims.iter().map(|s| s.0.rejection_rate).sum::<f64>() / n;
        let t1_max = sims.iter().map(|s| s.0.rejection_rate).fold(0.0, f64::max);
        let pw = sims.iter().map(|s| s.1.rejection_rate).sum::<f64>() / n;
        println!(
            "simulated: mean type-I error {:.2} % (max {:.2} %), mean power at the observed effects {:.1} %",
            t1 * 100.0,
            t1_max * 100.0,
            pw * 100.0
        );
    }
}
