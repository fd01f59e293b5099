//! `skillscope tasks`: load a tasks folder and report tasks, skills and problems; with `--check`,
//! the benchmark health check.
//!
//! The check is a stored run (`check-<…>`, agent `oracle`, one trial per condition) driven through
//! the engine like any run, so it resumes where it stopped and its trial folders hold every log.
//! When it ends, each task gets a row of [`crate::analysis::health_check`]: builds?, the oracle's
//! reward per condition, time, and the reason of a failure — printed as a table and written with
//! the JSON beside the run's job folder (`health-check.txt`, `health-check.json`).
//!
//! Exit codes a script can gate a run on: 0 when every task loads (and, with `--check`, builds
//! and passes the oracle in every condition), [`exit_code::CHECK_FAILED`] when any task cannot
//! run, any `SKILL.md` is invalid or any check failed (the table and JSON are printed and written
//! first), 1 for an error that kept the check from running.

use std::path::{Path, PathBuf};

use crate::console::table::{Column, Fitted, fit, terminal_width};
use color_eyre::eyre::{Result, WrapErr};

use crate::analysis::health_check::logs::Log;
use crate::analysis::health_check::{
    self, HealthCheck, Located, TaskFacts, TaskReadiness, TrialEvidence,
};
use crate::cli::{RunArgs, TasksArgs, exit_code};
use crate::engine::{Engine, default_run_name};
use crate::runner::Host;
use crate::skillsbench::TaskSet;
use crate::skillsbench::dockerfile::parse_instructions;
use crate::skillsbench::env::{self, EnvValues, MissingEnvPolicy};
use crate::store::{Store, queries};

/// Runs `skillscope tasks`. Returns the exit code (see the module docs).
///
/// # Errors
/// An unreadable tasks folder or catalog; for `--check`, bad settings, an unreachable Docker
/// daemon or a database failure.
pub fn execute(args: TasksArgs) -> Result<i32> {
    if args.check {
        // Called from the binary's runtime (multi-threaded): run the check's async work on it.
        return tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(check(args))
        });
    }
    let dir = super::tasks_dir_or_examples(args.tasks.as_deref())?;
    let catalog = super::catalog_with(args.catalog.as_deref())?;
    let mut set = TaskSet::load(&dir, &catalog, &[])?;
    let bad_tasks = set.tasks.iter().filter(|t| !t.problems.is_empty()).count();
    let invalid_skills: usize = set
        .tasks
        .iter()
        .map(|t| t.skills.iter().filter(|s| !s.is_valid()).count())
        .sum();
    let code = if bad_tasks + invalid_skills > 0 {
        exit_code::CHECK_FAILED
    } else {
        exit_code::FINISHED
    };
    if args.json {
        // Harbor 0.26's digest of each folder: the `task.digest` its trials' lock.json carry, and
        // what a pinned task set (`run --task-set`) of these tasks lists.
        set.compute_digests();
        let tasks: Vec<serde_json::Value> = set
            .tasks
            .iter()
            .map(|t| {
                serde_json::json!({
                    "id": t.id, "domain": t.domain, "difficulty": t.difficulty,
                    "agent_timeout_sec": t.config_read.then_some(t.config.agent.timeout_sec),
                    "verifier_timeout_sec": t.config_read.then_some(t.config.verifier.timeout_sec),
                    "problems": t.problems, "skills": t.skills,
                    "not_skills": t.not_skills,
                    "digest": t.digest, "digest_error": t.digest_error,
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "root": set.root,
                "digest_algorithm": crate::skillsbench::pinned::Algorithm::Harbor.as_str(),
                "tasks": tasks,
                "cannot_run": bad_tasks,
                "invalid_skills": invalid_skills,
            }))?
        );
        return Ok(code);
    }
    println!("{}", tasks_table(&set, terminal_width()));
    let not_skills: usize = set.tasks.iter().map(|t| t.not_skills.len()).sum();
    let noted = if not_skills > 0 {
        format!(
            " · {} beside skills not a skill (no SKILL.md: licence texts and the like, shipped with the skills)",
            crate::format::count(not_skills, "folder", "folders")
        )
    } else {
        String::new()
    };
    println!(
        "{} in {} · {} ({} invalid){noted} · {} cannot run",
        crate::format::count(set.tasks.len(), "task", "tasks"),
        set.root.display(),
        crate::format::count(
            set.tasks.iter().map(|t| t.skills.len()).sum::<usize>(),
            "skill",
            "skills"
        ),
        invalid_skills,
        crate::format::count(bad_tasks, "task", "tasks")
    );
    Ok(code)
}

/// The tasks of `set` as a table fitted to `width` columns ([`crate::console::table`]): id,
/// domain, difficulty, agent and verifier timeouts in seconds (`—` when `task.toml` could not be read: none
/// are made up), skills, and every problem of the task and of its skills.
pub fn tasks_table(set: &TaskSet, width: Option<u16>) -> Fitted {
    let header = [
        Column::new("task"),
        Column::new("domain"),
        Column::new("difficulty").short("diff"),
        Column::new("agent timeout").short("agent t/o"),
        Column::new("verifier timeout").short("verif t/o"),
        Column::new("skills").short("sk"),
        Column::new("problems").text(),
    ];
    let mut rows = Vec::new();
    for task in &set.tasks {
        let bad: Vec<String> = task
            .skills
            .iter()
            .filter(|s| !s.is_valid())
            .map(|s| {
                format!(
                    "skill {}: {}",
                    s.dir_name,
                    s.problems
                        .iter()
                        .map(|p| p.message.as_str())
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            })
            .collect();
        let mut problems = task.problems.clone();
        problems.extend(bad);
        // Task folders are untrusted: their names and metadata reach the terminal sanitized.
        let clean = crate::sanitize::text;
        rows.push(vec![
            clean(&task.id),
            clean(&task.domain),
            clean(&task.difficulty),
            // An invalid task.toml has no timeouts of its own: none are made up.
            timeout_cell(task, task.config.agent.timeout_sec),
            timeout_cell(task, task.config.verifier.timeout_sec),
            task.skills.len().to_string(),
            clean(&problems.join("\n")),
        ]);
    }
    fit(&header, rows, width)
}

/// A timeout of `task` for the table: seconds with their unit (`120 s`), or `—` when its
/// `task.toml` could not be read.
fn timeout_cell(task: &crate::skillsbench::Task, secs: f64) -> String {
    if task.config_read {
        format!("{secs:.0} s")
    } else {
        "—".to_string()
    }
}

/// The health check (see the module docs). Returns the exit code.
async fn check(args: TasksArgs) -> Result<i32> {
    let c = &args.run;
    let run_args = RunArgs {
        tasks: args.tasks.clone(),
        task: c.task.clone(),
        conditions: c.conditions.clone(),
        trials: 1,
        agent: "oracle".into(),
        model: None,
        concurrency: c.concurrency,
        db: c.db.clone(),
        jobs_dir: c.jobs_dir.clone(),
        run: c.name.clone(),
        headless: true,
        theme: None,
        docker_host: c.docker_host.clone(),
        backend: c.backend.clone(),
        kubeconfig: None,
        context: None,
        namespace: None,
        registry: None,
        ca_bundle: c.ca_bundle.clone(),
        env: c.env.clone(),
        mount: c.mount.clone(),
        catalog: args.catalog.clone(),
        config: c.config.clone(),
        copy_logs: false,
        docker_wait: None,
        stall_after: None,
        max_cost: None,
        detach: false,
        no_mouse: true,
        self_gen_prompt: None,
        skill_creator: None,
        allow_missing_env: c.allow_missing_env,
        task_set: None,
        allow_drift: false,
        stages: None,
        no_early_stop: false,
    };
    let (mut req, db) = super::shared::request::build_request(
        &run_args,
        &crate::config::FileConfig::load(run_args.config.as_deref())?,
    )?;
    // A task that needs values nobody set is refused on its own (reason `missing env value`);
    // the others are checked.
    if !c.allow_missing_env {
        req.settings.missing_env = MissingEnvPolicy::RefuseTasks;
    }
    let name = req
        .name
        .clone()
        .unwrap_or_else(|| format!("check-{}", default_run_name(&req)));
    req.name = Some(name);
    let backend = crate::engine::backend_of(&req.settings);
    let env_given = req.settings.container_env();
    // Loaded before the database is opened: a folder that cannot be used leaves nothing behind.
    let prepared = super::prepare_run(req).await?;
    let store = Store::open(&db)?;
    let engine = Engine::new(store.clone());
    let shutdown = super::shared::signals::Signals::install(None, true).shutdown;
    let progress = tokio::spawn(super::shared::progress::show_progress(engine.subscribe()));
    let result = engine.run(prepared, shutdown).await;
    drop(engine);
    let _ = progress.await;
    let outcome = result?;
    let host = backend.connect(0, None).await?;
    let rows = readiness_rows(
        &store,
        &outcome.run,
        host.as_ref(),
        &EnvValues::new(&env_given),
    )
    .await?;
    let counts = health_check::counts(&outcome.run.conditions, &rows);
    // The file is read at any width: its table is not fitted to this terminal.
    let file_table = readiness_table(&outcome.run.conditions, &rows, None);
    let table = readiness_table(&outcome.run.conditions, &rows, terminal_width());
    let summary = summary_line(&outcome.run.conditions, &counts);
    let check = HealthCheck {
        run: outcome.run.name.clone(),
        tasks_dir: outcome.run.tasks_dir.clone(),
        conditions: outcome.run.conditions.clone(),
        finished: outcome.finished,
        counts,
        tasks: rows,
    };
    let out_dir = PathBuf::from(&outcome.run.jobs_dir).join(&outcome.run.name);
    std::fs::create_dir_all(&out_dir).wrap_err_with(|| out_dir.display().to_string())?;
    let json_path = out_dir.join("health-check.json");
    let text_path = out_dir.join("health-check.txt");
    let md_path = out_dir.join("health-check.md");
    let json = serde_json::to_string_pretty(&check)?;
    for (path, text) in [
        (&json_path, json.clone()),
        (&text_path, format!("{file_table}\n{summary}\n")),
        (&md_path, health_check::markdown::render(&check)),
    ] {
        std::fs::write(path, text).wrap_err_with(|| path.display().to_string())?;
    }
    if args.json {
        println!("{json}");
    } else {
        println!("{table}");
        println!("{summary}");
        println!(
            "run {} ({}) · written to {}, {} and {}",
            outcome.run.name,
            if outcome.finished {
                "finished"
            } else {
                "stopped; re-run the same command to resume"
            },
            text_path.display(),
            json_path.display(),
            md_path.display()
        );
    }
    store.writer().stop();
    Ok(
        if outcome.finished && check.counts.tasks > 0 && check.counts.pass == check.counts.tasks {
            exit_code::FINISHED
        } else {
            exit_code::CHECK_FAILED
        },
    )
}

/// The health check's row of every task of check run `run`, read from its trial rows and folders
/// and what `host` has (`values`: the check's `--env`).
///
/// # Errors
/// Database errors.
pub async fn readiness_rows(
    store: &Store,
    run: &crate::domain::RunRow,
    host: &dyn Host,
    values: &EnvValues,
) -> Result<Vec<TaskReadiness>> {
    let conn = store.connect()?;
    let tasks = queries::run_tasks(&conn, run.id)?;
    let trials = queries::current_trials(&conn, run.id)?;
    let mut rows = Vec::new();
    for t in &tasks {
        let facts = task_facts(host, Path::new(&t.path), &t.problems, values).await;
        let evidence: Vec<TrialEvidence> = trials
            .iter()
            .filter(|r| r.task_id == t.task_id)
            .map(|r| evidence(r.clone()))
            .collect();
        rows.push(health_check::task_readiness(
            &t.task_id,
            &run.conditions,
            &facts,
            &evidence,
        ));
    }
    Ok(rows)
}

/// `87 tasks · 44 build in every condition · 22 pass the oracle in every condition · no-skills:
/// 44 build, 22 pass · … · failures: …`.
fn summary_line(conditions: &[String], counts: &health_check::ReadinessCounts) -> String {
    let mut s = format!(
        "{} tasks · {} build in every condition · {} pass the oracle in every condition{}",
        counts.tasks,
        counts.build,
        counts.pass,
        match counts.needs_skills {
            0 => String::new(),
            n => format!(
                " they can ({} only with {} skills, as expected)",
                crate::format::count(n, "task", "tasks"),
                if n == 1 { "its" } else { "their" }
            ),
        }
    );
    for c in conditions {
        if let Some(x) = counts.conditions.get(c) {
            s.push_str(&format!(
                " · {c}: {} build, {} pass, images {:.0} s",
                x.build, x.pass, x.build_seconds
            ));
        }
    }
    if !counts.differ.is_empty() {
        s.push_str(&format!(
            " · conditions differ: {}",
            counts.differ.join(", ")
        ));
    }
    if counts.clamped > 0 {
        s.push_str(&format!(" · {} clamped to the host", counts.clamped));
    }
    if !counts.reasons.is_empty() {
        s.push_str(&format!(
            " · failures: {}",
            counts
                .reasons
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if counts.needs_skills > 0 && counts.reasons.is_empty() {
        s.push_str(" · no failure: this machine runs every task");
    }
    s
}

/// The health check's table fitted to `width` columns ([`crate::console::table`]; `None` for the
/// file): task, builds?, oracle reward per condition, image build seconds per condition, time,
/// and the cause with its evidence (one per condition when they differ).
pub fn readiness_table(
    conditions: &[String],
    rows: &[TaskReadiness],
    width: Option<u16>,
) -> Fitted {
    let mut header = vec![Column::new("task"), Column::new("builds?")];
    header.extend(conditions.iter().map(Column::new));
    header.extend([
        Column::new(format!("build s ({})", conditions.join(" / "))).short("build s"),
        Column::new("time s"),
        Column::new("reason (evidence)").text(),
    ]);
    let mut table = Vec::new();
    for r in rows {
        let mut cells = vec![r.task.clone(), r.builds.clone()];
        for c in conditions {
            cells.push(match r.rewards.get(c).copied().flatten() {
                Some(v) => format!("{v:.2}"),
                None => r.outcomes.get(c).cloned().unwrap_or_default(),
            });
        }
        cells.push(
            conditions
                .iter()
                .map(|c| format!("{:.0}", r.build_seconds.get(c).copied().unwrap_or(0.0)))
                .collect::<Vec<_>>()
                .join(" / "),
        );
        cells.push(format!("{:.0}", r.seconds));
        let mut reason: Vec<String> = if r.differ.is_some()
            || r.reasons.len() > 1 && {
                let first = r.reasons.values().next().map(|c| &c.reason);
                r.reasons.values().any(|c| Some(&c.reason) != first)
            } {
            r.reasons
                .iter()
                .map(|(c, cause)| format!("{c}: {}", cause.describe(300)))
                .collect()
        } else {
            r.reason.iter().map(|c| c.describe(400)).collect()
        };
        if let Some(d) = &r.differ {
            reason.insert(0, format!("conditions differ: {d}"));
        }
        if let Some(note) = &r.clamped {
            reason.push(format!("clamped: {note}"));
        }
        cells.push(crate::sanitize::text(&reason.join("\n")));
        table.push(cells);
    }
    fit(&header, table, width)
}

/// Largest end of a log read for the health check.
const LOG_TAIL: u64 = 4 * 1024 * 1024;

/// A log of a trial (its last [`LOG_TAIL`] bytes), sanitized, with its first line's number.
fn read_log(dir: &Path, rel: &str) -> Log {
    let (bytes, before) = crate::fs::read_tail_lines(&dir.join(rel), LOG_TAIL).unwrap_or_default();
    let mut text = crate::sanitize::bytes(&bytes);
    let mut first_line = before + 1;
    if before > 0 {
        // The tail starts inside a line: that partial line is dropped.
        if let Some(i) = text.find('\n') {
            text.drain(..=i);
            first_line += 1;
        }
    }
    Log {
        file: rel.to_string(),
        text,
        first_line,
    }
}

fn evidence(row: crate::domain::TrialRow) -> TrialEvidence {
    let dir = row.trial_dir.clone().map(PathBuf::from).unwrap_or_default();
    TrialEvidence {
        build_log: read_log(&dir, "environment/build.log"),
        services_log: read_log(&dir, "environment/services.log"),
        verifier_log: read_log(&dir, "verifier/test-stdout.txt"),
        agent_log: read_log(&dir, "agent/oracle.txt"),
        ctrf: crate::harbor::ctrf::Report::read(&dir.join("verifier/ctrf.json")).ok(),
        row,
    }
}

/// What the task folder and the Docker host say before any log is read: `FROM` images of every
/// Dockerfile under `environment/` the host lacks, files those Dockerfiles copy from their folder
/// that are missing (each with its Dockerfile and line), and the environment values the task
/// names and which of them are not set (for the oracle: its `[solution] env` counts).
async fn task_facts(
    host: &dyn Host,
    task_dir: &Path,
    problems: &[String],
    values: &EnvValues,
) -> TaskFacts {
    let env_dir = task_dir.join("environment");
    let dockerfiles: Vec<PathBuf> = walkdir::WalkDir::new(&env_dir)
        .into_iter()
        .filter_entry(|e| e.depth() != 1 || e.file_name() != "skills")
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| {
            let n = e.file_name().to_string_lossy();
            n == "Dockerfile" || n.starts_with("Dockerfile.") || n.ends_with(".Dockerfile")
        })
        .map(|e| e.into_path())
        .collect();
    let mut facts = TaskFacts {
        problems: problems.to_vec(),
        ..Default::default()
    };
    if task_dir.join("task.toml").is_file() {
        let task = crate::skillsbench::Task::load(task_dir, |_| None);
        let mut vars: Vec<String> = env::uses(&task, true)
            .into_iter()
            .map(|u| u.variable)
            .collect();
        vars.dedup();
        facts.env_vars = vars;
        facts.missing_env = env::missing(&task, true, values);
    }
    for df in dockerfiles {
        let Ok(text) = std::fs::read_to_string(&df) else {
            continue;
        };
        let context = df.parent().unwrap_or(&env_dir);
        let rel = df
            .strip_prefix(task_dir)
            .unwrap_or(&df)
            .display()
            .to_string();
        let mut stages: Vec<String> = Vec::new();
        for ins in parse_instructions(&text) {
            let at = format!("{rel}:{}", ins.start + 1);
            let words: Vec<&str> = ins
                .args
                .split_whitespace()
                .filter(|w| !w.starts_with("--"))
                .collect();
            match ins.keyword.as_str() {
                "FROM" => {
                    let Some(image) = words.first().map(|w| w.to_string()) else {
                        continue;
                    };
                    if words.len() >= 3 && words[1].eq_ignore_ascii_case("as") {
                        stages.push(words[2].to_ascii_lowercase());
                    }
                    let known = image == "scratch"
                        || image.contains('$')
                        || stages.contains(&image.to_ascii_lowercase())
                        || crate::runner::docker::base_image::is_own_base_image(&image)
                        || facts.missing_images.iter().any(|m| m.name == image);
                    if !known && !host.has_image(&image).await {
                        facts.missing_images.push(Located { name: image, at });
                    }
                }
                "COPY" | "ADD" if !ins.args.contains("--from") && ins.heredocs.is_empty() => {
                    let srcs = words.len().saturating_sub(1);
                    for src in &words[..srcs] {
                        if src.contains("://") || src.contains('$') || src.starts_with('[') {
                            continue;
                        }
                        let pattern = context.join(src.trim_start_matches('/'));
                        let found = glob::glob(&pattern.to_string_lossy())
                            .map(|mut g| g.next().is_some())
                            .unwrap_or(true);
                        let name = src.trim_end_matches('/').to_string();
                        if !found
                            && !crate::skillsbench::dockerfile::is_skill_source(src)
                            && !facts.missing_files.iter().any(|m| m.name == name)
                        {
                            facts.missing_files.push(Located {
                                name,
                                at: at.clone(),
                            });
                        }
                    }
                }
                _ => {}
            }
        }
    }
    facts
}
