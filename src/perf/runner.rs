//! `skillscope bench runner`: per-trial orchestration overhead measured against the floor
//! `docker run --rm <same image> true`, serial vs concurrent wall time, and optionally a real task.
//! Prints figures; asserts nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::console::table::{Column, fit, terminal_width};
use color_eyre::eyre::{Result, WrapErr, eyre};
use tokio_util::sync::CancellationToken;

use super::pod_floor::Floor;
use super::{mean, median, secs_between};
use crate::config::{BackendSettings, RunSettings};
use crate::domain::TrialRow;
use crate::engine::{Engine, EngineEvent, RunRequest};
use crate::runner::Step;
use crate::skillsbench::{Catalog, Condition};
use crate::store::{Store, queries};

pub(crate) fn write_trivial_task(root: &Path) -> Result<PathBuf> {
    let t = root.join("tasks/trivial");
    for d in ["environment", "solution", "tests"] {
        std::fs::create_dir_all(t.join(d))?;
    }
    std::fs::write(
        t.join("task.toml"),
        "version = \"1.0\"\n[metadata]\ndifficulty = \"easy\"\ncategory = \"benchmark\"\n[agent]\ntimeout_sec = 60\n[verifier]\ntimeout_sec = 60\n[environment]\ncpus = 0.25\nallow_internet = true\n",
    )?;
    std::fs::write(t.join("instruction.md"), "Do nothing.\n")?;
    std::fs::write(
        t.join("environment/Dockerfile"),
        "FROM skillscope/busybox:1\nWORKDIR /root\n",
    )?;
    std::fs::write(t.join("solution/solve.sh"), "#!/bin/sh\ntrue\n")?;
    std::fs::write(
        t.join("tests/test.sh"),
        "#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n",
    )?;
    Ok(root.join("tasks"))
}

/// Time spent per step over a run's attempts: (total, how many times), from the engine's
/// [`EngineEvent::TrialStep`]s.
type StepTimes = BTreeMap<Step, (Duration, u32)>;

/// Collects the step times `events` reports until the run stops.
async fn collect_steps(mut events: tokio::sync::broadcast::Receiver<EngineEvent>) -> StepTimes {
    let mut steps = StepTimes::new();
    loop {
        match events.recv().await {
            Ok(EngineEvent::TrialStep { step, took, .. }) => {
                let e = steps.entry(step).or_default();
                e.0 += took;
                e.1 += 1;
            }
            Ok(EngineEvent::Stopped { .. })
            | Err(tokio::sync::broadcast::error::RecvError::Closed) => return steps,
            _ => {}
        }
    }
}

/// Runs `req` to its end, collecting the time of every step its attempts report; the wall time,
/// the latest attempts and the steps.
async fn run_with_steps(
    store: &Store,
    req: RunRequest,
) -> Result<(Duration, Vec<TrialRow>, StepTimes)> {
    let engine = Engine::new(store.clone());
    engine.report_steps();
    let steps = tokio::spawn(collect_steps(engine.subscribe()));
    let t0 = Instant::now();
    let out = engine
        .run(
            crate::engine::PreparedRun::load_off_thread(req).await?,
            CancellationToken::new(),
        )
        .await?;
    let wall = t0.elapsed();
    drop(engine);
    let steps = steps.await.unwrap_or_default();
    let rows = queries::current_trials(&store.connect()?, out.run.id)?;
    Ok((wall, rows, steps))
}

async fn timed_run(
    store: &Store,
    jobs: &Path,
    tasks: &Path,
    name: &str,
    trials: u32,
    (concurrency, backend): (usize, &BackendSettings),
) -> Result<(Duration, Vec<TrialRow>, StepTimes)> {
    let req = RunRequest {
        name: Some(name.to_string()),
        tasks_dir: tasks.to_path_buf(),
        task_filter: Vec::new(),
        conditions: vec![Condition::NoSkills],
        n_trials: trials,
        agent: "oracle".into(),
        model: None,
        jobs_dir: jobs.to_path_buf(),
        catalog: Catalog::shipped(),
        settings: RunSettings {
            concurrency,
            backend: backend.clone(),
            ..Default::default()
        },
        stay_alive: None,
        resume_command: None,
        pin: Default::default(),
        sequential: None,
    };
    let (wall, rows, steps) = run_with_steps(store, req).await?;
    if let Some(bad) = rows
        .iter()
        .find(|r| r.outcome != Some(crate::domain::Outcome::Pass))
    {
        return Err(eyre!(
            "benchmark trial {} did not pass: {:?} {}",
            bad.trial_name,
            bad.outcome,
            bad.error.as_deref().unwrap_or("")
        ));
    }
    Ok((wall, rows, steps))
}

pub(crate) async fn runner(
    trials: u32,
    concurrency: usize,
    (real_task, task_trials): (Option<PathBuf>, u32),
    backend: BackendSettings,
) -> Result<()> {
    let on_k8s = backend.kind == crate::config::BackendKind::Kubernetes;
    let tmp = tempfile::tempdir()?;
    let tasks = write_trivial_task(tmp.path())?;
    let store = Store::open(&tmp.path().join("bench.db"))?;
    let jobs = tmp.path().join("jobs");
    println!("warming up (base image, task image)…");
    let (_, warm, _) = timed_run(&store, &jobs, &tasks, "warmup", 1, (1, &backend)).await?;
    let image = warm[0]
        .image
        .clone()
        .ok_or_else(|| eyre!("warm-up trial has no image"))?;

    let Floor {
        samples: floor,
        cpu: floor_cpu,
        stack: floor_stack,
        serial: floor_serial,
        concurrent: floor_par,
    } = if on_k8s {
        super::pod_floor::measure(&backend, &image, trials, concurrency).await?
    } else {
        measure_floor(&image, trials, concurrency)?
    };

    let cpu0 = busy_cpu_secs();
    let stack0 = stack_cpu_secs();
    let (serial_wall, serial_rows, serial_steps) =
        timed_run(&store, &jobs, &tasks, "serial", trials, (1, &backend)).await?;
    let ours_cpu = cpu_delta(cpu0).map(|c| c / trials as f64);
    let ours_stack = (stack_cpu_secs() - stack0) / trials as f64;
    let (par_wall, _, _) = timed_run(
        &store,
        &jobs,
        &tasks,
        "parallel",
        trials,
        (concurrency, &backend),
    )
    .await?;
    let per_trial: Vec<f64> = serial_rows
        .iter()
        .filter_map(|r| secs_between(&r.started_at, &r.finished_at))
        .collect();
    let serial_per = serial_wall.as_secs_f64() / trials as f64;
    let cpu = |machine: Option<f64>, stack: f64| {
        if on_k8s {
            return String::new();
        }
        format!(
            " · {stack:.2} CPU-s each (Docker daemon + client){}",
            machine
                .map(|c| format!(", {c:.2} machine-wide"))
                .unwrap_or_default()
        )
    };

    let mut t: Vec<Vec<String>> = Vec::new();
    t.push(vec![
        format!(
            "machine: {} CPUs",
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        ),
        format!("image {image}"),
    ]);
    t.push(vec![
        if on_k8s {
            format!("floor: bare pod create + exec true + delete, API (×{trials}, serial)")
        } else {
            format!("floor: docker run --rm <image> true (×{trials}, serial)")
        },
        format!(
            "mean {:.3}s · median {:.3}s{}",
            mean(&floor),
            median(&floor),
            cpu(floor_cpu, floor_stack)
        ),
    ]);
    t.push(vec![
        format!("skillscope trivial trial (×{trials}, concurrency 1)"),
        format!(
            "wall/trial {serial_per:.3}s · start→end median {:.3}s{}",
            median(&per_trial),
            cpu(ours_cpu, ours_stack)
        ),
    ]);
    t.push(vec![
        "ratio: skillscope wall/trial ÷ floor mean (target ≤ 2.0)".to_string(),
        format!("{:.2}×", serial_per / mean(&floor)),
    ]);
    t.push(vec![
        format!("floor: concurrency {concurrency} vs serial"),
        format!(
            "{floor_par:.2}s vs {floor_serial:.2}s → {:.2} of serial",
            floor_par / floor_serial
        ),
    ]);
    let ours_ratio = par_wall.as_secs_f64() / serial_wall.as_secs_f64();
    let floor_ratio = floor_par / floor_serial;
    t.push(vec![
        format!("skillscope: concurrency {concurrency} vs serial"),
        format!(
            "{:.2}s vs {:.2}s → {ours_ratio:.2} of serial",
            par_wall.as_secs_f64(),
            serial_wall.as_secs_f64(),
        ),
    ]);
    t.push(vec![
        "scaling: skillscope's ratio ÷ the floor's (target ≤ 1.1)".to_string(),
        format!("{:.2}×", ours_ratio / floor_ratio),
    ]);
    let mut real_steps = None;
    if let Some(task_dir) = real_task {
        let (row, steps) =
            real_task_trials(&store, &jobs, &backend, &task_dir, task_trials).await?;
        t.push(row);
        real_steps = Some(steps);
    }
    let columns = [
        Column::new("measurement").text(),
        Column::new("value").text(),
    ];
    println!("{}", fit(&columns, t, terminal_width()));
    println!(
        "{}",
        breakdown(
            "step of a trivial trial (serial)",
            &serial_steps,
            trials,
            serial_per,
            mean(&floor)
        )
    );
    if let Some((id, steps, wall)) = &real_steps {
        println!(
            "{}",
            breakdown(
                &format!("step of a trial of {id} (serial)"),
                steps,
                task_trials,
                *wall,
                mean(&floor)
            )
        );
    }
    store.writer().stop();
    Ok(())
}

/// The oracle's trials of the real task in `task_dir` (its image built first by a warm-up
/// trial), `task_trials` of them, serial: the table's row (wall per trial, the agent's and
/// verifier's part, the overhead, the outcomes) and the task's id, step times and wall seconds
/// per trial.
async fn real_task_trials(
    store: &Store,
    jobs: &std::path::Path,
    backend: &BackendSettings,
    task_dir: &std::path::Path,
    task_trials: u32,
) -> Result<(Vec<String>, (String, StepTimes, f64))> {
    let task_dir =
        std::fs::canonicalize(task_dir).wrap_err_with(|| format!("{}", task_dir.display()))?;
    let parent = task_dir
        .parent()
        .ok_or_else(|| eyre!("task folder has no parent"))?
        .to_path_buf();
    let id = task_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let engine_req = |name: &str, n: u32| RunRequest {
        name: Some(name.to_string()),
        tasks_dir: parent.clone(),
        task_filter: vec![id.clone()],
        conditions: vec![Condition::Curated],
        n_trials: n,
        agent: "oracle".into(),
        model: None,
        jobs_dir: jobs.to_path_buf(),
        catalog: Catalog::shipped(),
        settings: RunSettings {
            concurrency: 1,
            backend: backend.clone(),
            ..Default::default()
        },
        stay_alive: None,
        resume_command: None,
        pin: Default::default(),
        sequential: None,
    };
    println!("real task {id}: warming up (builds the image if needed)…");
    Engine::new(store.clone())
        .run(
            crate::engine::PreparedRun::load_off_thread(engine_req("real-warmup", 1)).await?,
            CancellationToken::new(),
        )
        .await?;
    let (wall, rows, steps) = run_with_steps(store, engine_req("real", task_trials)).await?;
    let wall = wall.as_secs_f64() / task_trials as f64;
    let work: Vec<f64> = rows
        .iter()
        .filter_map(|r| {
            Some(
                secs_between(&r.agent_started_at, &r.agent_finished_at)?
                    + secs_between(&r.verifier_started_at, &r.verifier_finished_at)?,
            )
        })
        .collect();
    let outcomes: Vec<String> = rows
        .iter()
        .map(|r| {
            r.outcome
                .map(|o| o.as_str().to_string())
                .unwrap_or_default()
        })
        .collect();
    let row = vec![
        format!("real task {id}, oracle, cached image (×{task_trials})"),
        format!(
            "wall/trial {wall:.2}s · agent+verifier {:.2}s · overhead {:.2}s · outcomes {}",
            mean(&work),
            wall - mean(&work),
            outcomes.join(",")
        ),
    ];
    Ok((row, (id, steps, wall)))
}

/// Where a serial trivial trial's time goes, step by step (mean seconds per trial and share of
/// its wall time), beside the floor; what no step covers is the engine's own (scheduling, trial
/// files, waits). The background removal overlaps the next trial and is shown apart.
fn breakdown(
    title: &str,
    steps: &StepTimes,
    trials: u32,
    wall_per: f64,
    floor: f64,
) -> crate::console::table::Fitted {
    let per = |d: Duration| d.as_secs_f64() / trials.max(1) as f64;
    let row = |what: String, secs: f64, calls: String| {
        vec![
            what,
            format!("{secs:.3}s"),
            format!("{:.0}%", 100.0 * secs / wall_per.max(f64::EPSILON)),
            calls,
        ]
    };
    let mut rows = Vec::new();
    let mut on_path = 0.0;
    for step in Step::ALL {
        let Some((total, n)) = steps.get(&step) else {
            continue;
        };
        if step != Step::Remove {
            on_path += per(*total);
        }
        rows.push(row(
            step.as_str().to_string(),
            per(*total),
            format!("{:.1}", *n as f64 / trials.max(1) as f64),
        ));
    }
    rows.push(row(
        "engine (no step: scheduling, trial files, waits)".into(),
        (wall_per - on_path).max(0.0),
        String::new(),
    ));
    rows.push(row("wall/trial".into(), wall_per, String::new()));
    rows.push(row(
        "floor (the first table's)".into(),
        floor,
        String::new(),
    ));
    let columns = [
        Column::new(title).text(),
        Column::new("mean per trial"),
        Column::new("of wall"),
        Column::new("times per trial").short("n"),
    ];
    fit(&columns, rows, terminal_width())
}

/// Measures the floor on `image`: `trials` runs serially, then at `concurrency`.
fn measure_floor(image: &str, trials: u32, concurrency: usize) -> Result<Floor> {
    let docker = which_docker()
        .ok_or_else(|| eyre!("the docker CLI is needed for the floor measurement"))?;
    let cpu0 = busy_cpu_secs();
    let stack0 = stack_cpu_secs();
    let mut samples = Vec::new();
    for _ in 0..trials {
        let t0 = Instant::now();
        docker_run_true(&docker, image)?;
        samples.push(t0.elapsed().as_secs_f64());
    }
    Ok(Floor {
        cpu: cpu_delta(cpu0).map(|c| c / trials as f64),
        stack: (stack_cpu_secs() - stack0) / trials as f64,
        serial: samples.iter().sum(),
        samples,
        concurrent: floor_concurrent(&docker, image, trials, concurrency)?,
    })
}

/// Seconds for `trials` runs of the floor, `docker run --rm <image> true`, `concurrency` at a
/// time.
fn floor_concurrent(docker: &Path, image: &str, trials: u32, concurrency: usize) -> Result<f64> {
    let t0 = Instant::now();
    std::thread::scope(|scope| -> Result<()> {
        let handles: Vec<_> = (0..concurrency)
            .map(|w| {
                scope.spawn(move || -> Result<()> {
                    for _ in (w..trials as usize).step_by(concurrency) {
                        docker_run_true(docker, image)?;
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join().map_err(|_| eyre!("floor thread panicked"))??;
        }
        Ok(())
    })?;
    Ok(t0.elapsed().as_secs_f64())
}

fn docker_run_true(docker: &Path, image: &str) -> Result<()> {
    let st = std::process::Command::new(docker)
        .args(["run", "--rm", image, "true"])
        .stdout(std::process::Stdio::null())
        .status()
        .wrap_err("running docker run")?;
    if st.success() {
        Ok(())
    } else {
        Err(eyre!("docker run --rm {image} true failed"))
    }
}

/// Busy CPU time of the whole machine so far (user + nice + system + irq + softirq), seconds,
/// from `/proc/stat`; `None` where it cannot be read.
fn busy_cpu_secs() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let f: Vec<f64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq
    let busy = f.first()? + f.get(1)? + f.get(2)? + f.get(5)? + f.get(6)?;
    Some(busy / 100.0)
}

fn cpu_delta(start: Option<f64>) -> Option<f64> {
    Some(busy_cpu_secs()? - start?)
}

/// CPU seconds used so far by this process and its reaped children (the `docker` CLI of the
/// floor) plus the Docker daemon and containerd: what the measured work costs, apart from the
/// rest of the machine (other builds, other tests). Short-lived processes the daemons start (the
/// runtime, container shims) are counted for neither side.
fn stack_cpu_secs() -> f64 {
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let mut total = 0.0;
    for who in [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN] {
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(who, &mut u) } == 0 {
            let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
            total += tv(u.ru_utime) + tv(u.ru_stime);
        }
    }
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let dir = e.path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if !matches!(comm.trim(), "dockerd" | "containerd") {
            continue;
        }
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
        let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<f64> = after
            .split_whitespace()
            .filter_map(|v| v.parse().ok())
            .collect();
        if f.len() > 12 {
            total += (f[11] + f[12]) / tick;
        }
    }
    total
}

fn which_docker() -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("docker"))
            .find(|p| p.is_file())
    })
}
