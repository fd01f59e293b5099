//! `skillscope replay`: a group-sequential design applied to finished runs stage by stage
//! ([`crate::analysis::sequential::replay`]) — the run's own design when it recorded one, else the
//! one a run would fix for these trials — over their trial order or many random ones, and
//! simulated (a null from the data, a sharp null, the power at the observed effect). The words
//! are the report's (`report::model::sequential`).

use std::collections::BTreeMap;

use color_eyre::eyre::{Result, bail, eyre};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::analysis::metrics::trial_reward;
use crate::analysis::sequential::design::{self, Choices};
use crate::analysis::sequential::replay::{
    FixedVerdict, Fractions, PairedTrials, Replay, Simulated, orders, replay, sharp_null, simulate,
    with_fractions,
};
use crate::cli::ReplayArgs;
use crate::domain::sequential::{Comparison, DesignRow, DesignSpec, SequentialPlan, Statistic};
use crate::domain::{Outcome, RunRow, TrialRow, TrialStatus};
use crate::format;
use crate::report::model::sequential::{estimate_text, look_line, spec_text};
use crate::sanitize;
use crate::store::{Store, queries};

/// Runs `skillscope replay`.
///
/// # Errors
/// A missing database or run, a run without two conditions or enough trials, a design that
/// cannot be made.
pub fn execute(args: ReplayArgs) -> Result<()> {
    if !args.sharp_null.is_empty() {
        return sharp_nulls(&args);
    }
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
    let fractions = if args.data_fractions {
        Fractions::Data
    } else {
        Fractions::Planned
    };
    let mut results = Vec::new();
    let mut sims = Vec::new();
    let mut all_orders: Vec<(String, Vec<Replay>)> = Vec::new();
    for run in &runs {
        let trials = queries::current_trials(conn, run.id)?;
        let tasks: Vec<String> = queries::run_tasks(conn, run.id)?
            .into_iter()
            .map(|t| t.task_id)
            .collect();
        let (mut data, order_known) = paired_of(run, &tasks, &trials);
        let name = sanitize::text(&run.name);
        let stored = queries::sequential_record(conn, run.id)?.map(|r| r.design);
        let (spec, source) = match design_of(&args, &data, stored.as_ref()) {
            Ok(s) => s,
            Err(e) => {
                println!("{name}: — ({e})");
                continue;
            }
        };
        let spec = with_fractions(&spec, &data, fractions);
        if !order_known {
            data.shuffle(&mut ChaCha8Rng::seed_from_u64(args.seed));
        }
        let r = match replay(&data, &spec) {
            Ok(r) => r,
            Err(e) => {
                println!("{name}: — ({e})");
                continue;
            }
        };
        print_replay(&name, run, &r, &source, fractions, order_known, args.seed);
        if let Some(n) = args.simulate {
            let (null, power) = simulate(&data, &spec, n, args.seed)?;
            println!("  {}", simulated_text(n, &null, &power, spec.alpha));
            sims.push((null, power));
        }
        if let Some(n) = args.orders {
            all_orders.push((name.clone(), orders(&data, &spec, n, args.seed)?));
        }
        results.push(r);
    }
    if results.len() > 1 {
        print_summary(&results, &sims);
    }
    if !all_orders.is_empty() {
        for line in orders_lines(&all_orders) {
            println!("{line}");
        }
    }
    Ok(())
}

/// The design to replay, and where it comes from: `--stages` and the futility flags when given;
/// else the run's own recorded design when it has one over the data's trials; else the one a
/// run over these trials would fix (3 stages, or as many as the trials).
fn design_of(
    args: &ReplayArgs,
    data: &PairedTrials,
    stored: Option<&DesignRow>,
) -> Result<(DesignSpec, String)> {
    let trials = data.trials() as u32;
    let flags = args.stages.is_some()
        || args.no_futility
        || args.futility_from.is_some()
        || args.beta.is_some()
        || args.noise_ratio.is_some();
    if !flags
        && let Some(d) = stored
        && matches!(d.spec.statistic, Statistic::SignFlip { .. })
        && d.spec.stage_trials.last() == Some(&trials)
    {
        return Ok((d.spec.clone(), "the run's own design".into()));
    }
    let stages = args
        .stages
        .map_or(3.min(trials.max(1)) as usize, |s| s as usize);
    let spec = design::spec(trials, stages, &choices(args)).map_err(|e| eyre!("{e}"))?;
    let source = match stored {
        Some(_) if !flags => {
            "the design a run fixes today (the run's own is the paired z of before issue 47)"
        }
        _ if flags => "the design the flags give",
        _ => "the design a run over these trials fixes",
    };
    Ok((spec, source.into()))
}

/// The design choices the flags give, the defaults elsewhere.
fn choices(args: &ReplayArgs) -> Choices {
    let d = Choices::default();
    Choices {
        beta: args.beta.unwrap_or(d.beta),
        futility_from: if args.no_futility {
            None
        } else {
            args.futility_from.map(|f| f as usize).or(d.futility_from)
        },
        noise_ratio: args.noise_ratio.unwrap_or(d.noise_ratio),
    }
}

/// The run's paired rewards (B = its second condition, A = its first) per task of the run, in
/// the order of the task ids, by trial index; `false` when the order is unknown (trials
/// synthesized from published aggregates). A cancelled trial has no reward to count (`None`);
/// any other finished trial counts as Method D counts it.
fn paired_of(run: &RunRow, tasks: &[String], trials: &[TrialRow]) -> (PairedTrials, bool) {
    let (ca, cb) = (&run.conditions[0], &run.conditions[1]);
    type Side = BTreeMap<u32, Option<f64>>;
    let mut by: BTreeMap<&str, (Side, Side)> = tasks
        .iter()
        .map(|t| (t.as_str(), Default::default()))
        .collect();
    let mut order_known = true;
    for t in trials {
        if t.superseded || t.status != TrialStatus::Done || t.trial_index == 0 {
            continue;
        }
        order_known &= !t.aggregated;
        let e = by.entry(t.task_id.as_str()).or_default();
        let r = (t.outcome != Some(Outcome::Cancelled)).then(|| trial_reward(t));
        if &t.condition == ca {
            e.0.insert(t.trial_index, r);
        } else if &t.condition == cb {
            e.1.insert(t.trial_index, r);
        }
    }
    let n = by
        .values()
        .flat_map(|(a, b)| a.keys().chain(b.keys()))
        .max()
        .copied()
        .unwrap_or(0);
    let dense =
        |s: &Side| -> Vec<Option<f64>> { (1..=n).map(|i| s.get(&i).copied().flatten()).collect() };
    let mut data = PairedTrials::default();
    for (task, (a, b)) in by {
        data.tasks.push(task.to_string());
        data.a.push(dense(&a));
        data.b.push(dense(&b));
    }
    (data, order_known)
}

fn print_replay(
    name: &str,
    run: &RunRow,
    r: &Replay,
    source: &str,
    fractions: Fractions,
    order_known: bool,
    seed: u64,
) {
    let plan = SequentialPlan {
        design: r.spec.clone(),
        comparisons: vec![Comparison {
            label: "B-A".into(),
            with: run.conditions[1].clone(),
            without: run.conditions[0].clone(),
            without_run: None,
        }],
        stoppable: Vec::new(),
        early_stop: true,
        note: None,
    };
    let row = match design::row(0, &plan) {
        Ok(r) => r,
        Err(e) => {
            println!("{name}: — ({e})");
            return;
        }
    };
    println!(
        "{name}: B − A = {} − {}, {} × {}; {source}: {}",
        sanitize::text(&run.conditions[1]),
        sanitize::text(&run.conditions[0]),
        format::count(r.tasks, "task", "tasks"),
        format::count(r.trials, "trial", "trials"),
        spec_text(&r.spec),
    );
    println!(
        "  information fractions {}; {}",
        match fractions {
            Fractions::Planned => "as planned (k_s/n, fixed before the data)",
            Fractions::Data =>
                "re-estimated from this data's variance components (--data-fractions: for comparison — a design fixed before the data would use k_s/n)",
        },
        if order_known {
            "trial order as run".to_string()
        } else {
            format!("trial order shuffled, seed {seed}")
        },
    );
    for look in &r.looks {
        println!("  {}", look_line(&row, &look.row("B-A", String::new())));
    }
    let fixed = match r.fixed {
        FixedVerdict::Effect => "effect",
        FixedVerdict::Harm => "harm",
        FixedVerdict::Undecided => "undecided",
    };
    let stop = r.stop().row("B-A", String::new());
    println!(
        "  verdict: {} at stage {} of {}; fixed design ({}): {fixed} (sign-flip test at one look; z {}){}; trials used {:.0} %",
        if r.effect() {
            "effect"
        } else {
            "no effect shown"
        },
        r.stop_stage() + 1,
        r.spec.stages,
        format::count(r.trials, "trial", "trials"),
        format::z(Some(r.fixed_z)),
        if r.agrees() {
            ", agrees"
        } else {
            ", DISAGREES"
        },
        r.share_used() * 100.0
    );
    println!("  estimate: {}", estimate_text(&stop));
}

/// `simulated (2000 draws each): type-I error 1.20 % (± 0.24 % MC SE, α 2.5 %) …` — and the flag
/// of a design whose simulated error exceeds its α by more than two Monte Carlo SEs.
fn simulated_text(n: usize, null: &Simulated, power: &Simulated, alpha: f64) -> String {
    let flag = if null.exceeds(alpha) {
        format!(
            " — EXCEEDS α {}: this design is not valid for such data",
            format::probability(alpha)
        )
    } else if null.rejection_rate > alpha {
        " (above α, within 2 Monte Carlo SEs)".to_string()
    } else {
        String::new()
    };
    format!(
        "simulated ({n} draws each): type-I error {:.2} % (± {:.2} % MC SE, α {} %){flag}, trials used {:.0} %; power at the observed effect {:.1} %, trials used {:.0} %",
        null.rejection_rate * 100.0,
        null.mc_se * 100.0,
        format::probability(alpha * 100.0),
        null.mean_share * 100.0,
        power.rejection_rate * 100.0,
        power.mean_share * 100.0
    )
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
        let flagged = sims
            .iter()
            .filter(|s| s.0.exceeds(results[0].spec.alpha))
            .count();
        let pw = sims.iter().map(|s| s.1.rejection_rate).sum::<f64>() / n;
        println!(
            "simulated: mean type-I error {:.2} % (max {:.2} %; {flagged} of {} runs exceed α), mean power at the observed effects {:.1} %",
            t1 * 100.0,
            t1_max * 100.0,
            sims.len(),
            pw * 100.0
        );
    }
}

/// The figures over random trial orders (`--orders N`): the mean share of trials used with its
/// 5–95 % range over orders, the disagreements per order, the lost-effect rate over (order, run)
/// pairs and the orders that lose any, and per run how often it loses its fixed-design effect.
fn orders_lines(all: &[(String, Vec<Replay>)]) -> Vec<String> {
    let n = all.iter().map(|(_, o)| o.len()).min().unwrap_or(0);
    if n == 0 {
        return Vec::new();
    }
    let mut shares = Vec::with_capacity(n);
    let (mut disagreements, mut lost, mut orders_losing, mut pairs) =
        (0usize, 0usize, 0usize, 0usize);
    for i in 0..n {
        let order: Vec<&Replay> = all.iter().map(|(_, o)| &o[i]).collect();
        shares.push(order.iter().map(|r| r.share_used()).sum::<f64>() / order.len() as f64);
        disagreements += order.iter().filter(|r| !r.agrees()).count();
        let l = order.iter().filter(|r| r.lost()).count();
        lost += l;
        orders_losing += usize::from(l > 0);
        pairs += order.len();
    }
    shares.sort_by(f64::total_cmp);
    let q = |p: f64| shares[((shares.len() - 1) as f64 * p).round() as usize];
    let mean = shares.iter().sum::<f64>() / n as f64;
    let rate = lost as f64 / pairs as f64;
    let mut out = vec![format!(
        "\n{n} random trial orders × {} runs: mean share of trials used {mean:.3} (5–95 %: {:.3}–{:.3}); disagreements per order {:.3}; lost effects {lost} of {pairs} (order, run) pairs = {:.2} % (± {:.2} % MC SE), in {orders_losing} of {n} orders",
        all.len(),
        q(0.05),
        q(0.95),
        disagreements as f64 / n as f64,
        rate * 100.0,
        (rate * (1.0 - rate) / pairs as f64).sqrt() * 100.0,
    )];
    for (name, o) in all {
        let l = o.iter().filter(|r| r.lost()).count();
        if l > 0 {
            out.push(format!(
                "  {name}: its fixed-design effect lost in {l} of {} orders ({:.1} %)",
                o.len(),
                l as f64 * 100.0 / o.len() as f64
            ));
        }
    }
    out
}

/// `--sharp-null N,…`: the design's type-I error under a sharp null at each number of tasks.
fn sharp_nulls(args: &ReplayArgs) -> Result<()> {
    let draws = args.simulate.unwrap_or(2_000);
    let trials = args.trials;
    let stages = args.stages.map_or(3.min(trials) as usize, |s| s as usize);
    let spec = design::spec(trials, stages, &choices(args)).map_err(|e| eyre!("{e}"))?;
    println!(
        "sharp null: per task a pass probability from U(0, 1), the same under both conditions, each trial a Bernoulli draw; {draws} experiments per task count, seed {}; {}",
        args.seed,
        spec_text(&spec)
    );
    for n in &args.sharp_null {
        match sharp_null(*n as usize, &spec, draws, args.seed) {
            Ok(s) => println!(
                "  {n} tasks × {trials} trials: type-I error {:.2} % (± {:.2} % MC SE){}; trials used {:.0} %",
                s.rejection_rate * 100.0,
                s.mc_se * 100.0,
                if s.exceeds(spec.alpha) {
                    format!(" — EXCEEDS α {}", format::probability(spec.alpha))
                } else {
                    String::new()
                },
                s.mean_share * 100.0
            ),
            Err(e) => println!("  {n} tasks: — ({e})"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};

    fn parse(extra: &[&str]) -> Result<crate::cli::ReplayArgs, clap::Error> {
        let argv = ["skillscope", "replay", "r1"].iter().chain(extra);
        match Cli::try_parse_from(argv)?.command {
            Command::Replay(a) => Ok(a),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn simulations_need_two_draws_and_orders_one() {
        // Zero or one draw would print a rate with no Monte Carlo error (power 100 % ± 0.00).
        for bad in [["--simulate", "0"], ["--simulate", "1"], ["--orders", "0"]] {
            let e = parse(&bad).expect_err("refused");
            assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{bad:?}");
        }
        assert_eq!(parse(&["--simulate", "2"]).unwrap().simulate, Some(2));
        assert_eq!(parse(&["--orders", "1"]).unwrap().orders, Some(1));
    }
}
