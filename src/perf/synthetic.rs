//! Synthetic runs written through the store API — deterministic (seeded), for dashboard snapshot
//! tests and benchmarks of frames and snapshot queries at scale. Task ids, domains and
//! difficulties come from the shipped SkillsBench catalog (cycled with a suffix beyond 87 tasks).

use rusqlite::Connection;

use crate::domain::{Outcome, RunRow, RunTaskRow, SkillUseRow, TrialRow, TrialStatus};
use crate::skillsbench::Catalog;
use crate::store::StoreError;
use crate::store::queries::{self, NewRun, TrialPatch};

/// What to generate.
#[derive(Debug, Clone)]
pub struct SyntheticRun {
    /// Run name.
    pub name: String,
    /// Number of tasks.
    pub tasks: usize,
    /// Condition keys.
    pub conditions: Vec<String>,
    /// Trials per task and condition.
    pub trials: u32,
    /// Fraction of trials already finished (the rest are running or queued), 0–1.
    pub done_fraction: f64,
    /// Seed of the outcome generator.
    pub seed: u64,
}

impl Default for SyntheticRun {
    fn default() -> Self {
        SyntheticRun {
            name: "synthetic".into(),
            tasks: 87,
            conditions: vec!["no-skills".into(), "curated".into()],
            trials: 5,
            done_fraction: 0.7,
            seed: 7,
        }
    }
}

/// splitmix64: a tiny deterministic generator (no statistical claims needed here).
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// When the synthetic run's engine last wrote its heartbeat, on the fixed clock: 3 s before the
/// moment the snapshot tests look at it (`at(900)`), so it reads as a live engine.
pub const HEARTBEAT_SECS: i64 = 897;

/// A fixed clock: 2026-11-21T10:00:00Z plus `secs`.
pub fn at(secs: i64) -> String {
    let base = chrono::DateTime::parse_from_rfc3339("2026-11-21T10:00:00Z").expect("valid");
    (base + chrono::Duration::seconds(secs))
        .with_timezone(&chrono::Utc)
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Writes a synthetic run into `conn` (one transaction) and returns it. Skill conditions pass more
/// often than no-skills; finished trials get Harbor-like phase times on a fixed clock; the run is
/// marked `running` since 10:00:00 and owned by pid 4242 on host `bench`, its last heartbeat at
/// [`HEARTBEAT_SECS`].
///
/// # Errors
/// Database errors.
pub fn fill_store(conn: &Connection, spec: &SyntheticRun) -> Result<RunRow, StoreError> {
    let tx = conn.unchecked_transaction()?;
    let run = queries::insert_run(
        &tx,
        &NewRun {
            name: spec.name.clone(),
            tasks_dir: "/data/skillsbench/tasks".into(),
            agent: "oracle".into(),
            model: None,
            n_trials: spec.trials,
            conditions: spec.conditions.clone(),
            jobs_dir: "/data/jobs".into(),
            settings: serde_json::json!({"concurrency": 4}),
        },
    )?;
    let catalog = Catalog::shipped();
    let entries: Vec<_> = catalog.entries().collect();
    let tasks: Vec<RunTaskRow> = (0..spec.tasks)
        .map(|i| {
            let e = entries[i % entries.len()];
            let id = if i < entries.len() {
                e.task_id.clone()
            } else {
                format!("{}-{}", e.task_id, i / entries.len())
            };
            RunTaskRow {
                task_id: id,
                domain: e.domain.clone(),
                difficulty: e.difficulty.clone(),
                path: format!("/data/skillsbench/tasks/{}", e.task_id),
                problems: Vec::new(),
                digest: None,
            }
        })
        .collect();
    queries::upsert_run_tasks(&tx, run.id, &tasks)?;
    let ids: Vec<String> = tasks.iter().map(|t| t.task_id.clone()).collect();
    let run_name = run.name.clone();
    let namer = move |k: &crate::domain::TrialKey, a: u32| {
        crate::harbor::jobdir::trial_name(&k.task_id, &run_name, &k.condition, k.trial_index, a)
    };
    queries::plan_trials(&tx, &run, &ids, &namer)?;
    queries::set_running_at(&tx, run.id, &at(0), 4242, "bench", &at(HEARTBEAT_SECS))?;
    let mut rng = Mix(spec.seed);
    let queued = queries::queued_trials(&tx, run.id)?;
    let n = queued.len();
    let n_done = (spec.done_fraction.clamp(0.0, 1.0) * n as f64).round() as usize;
    for (i, t) in queued.iter().enumerate() {
        let start = (i as i64) * 7;
        let dir = format!(
            "/data/jobs/{}__{}/{}",
            spec.name,
            t.condition.replace(':', "-"),
            t.trial_name
        );
        if i < n_done {
            let with_skills = t.condition != "no-skills";
            let p_pass = if with_skills { 0.55 } else { 0.35 };
            let r = rng.unit();
            let (outcome, reward, error) = if r < p_pass {
                (Outcome::Pass, Some(1.0), None)
            } else if r < p_pass + 0.3 {
                (
                    Outcome::Fail,
                    Some(0.0),
                    Some("verifier reward 0".to_string()),
                )
            } else if r < p_pass + 0.38 {
                (
                    Outcome::AgentTimeout,
                    Some(0.0),
                    Some("agent exceeded [agent] timeout_sec = 900s".into()),
                )
            } else if r < p_pass + 0.42 {
                (
                    Outcome::VerifierTimeout,
                    None,
                    Some("verifier exceeded [verifier] timeout_sec = 900s".into()),
                )
            } else if r < p_pass + 0.46 {
                (
                    Outcome::NoReward,
                    None,
                    Some("the verifier wrote no reward file".into()),
                )
            } else {
                (
                    Outcome::BuildError,
                    None,
                    Some("image build failed: apt-get exited 100".into()),
                )
            };
            queries::finish_trial(
                &tx,
                t.id,
                &TrialPatch {
                    outcome: Some(outcome),
                    reward,
                    rewards: reward.map(|r| serde_json::json!({ "reward": r })),
                    error,
                    host: Some("unix:///var/run/docker.sock".into()),
                    image: Some(format!(
                        "skillscope-task/{}:{}-0123456789ab",
                        t.task_id,
                        t.condition.replace(':', "-")
                    )),
                    trial_dir: Some(dir),
                    started_at: Some(at(start)),
                    build_started_at: Some(at(start)),
                    build_finished_at: Some(at(start + 1)),
                    agent_started_at: Some(at(start + 1)),
                    agent_finished_at: Some(at(start + 4)),
                    verifier_started_at: Some(at(start + 4)),
                    verifier_finished_at: Some(at(start + 6)),
                    finished_at: Some(at(start + 6)),
                    agent_exit_code: Some(0),
                    verifier_exit_code: Some(0),
                    ..Default::default()
                },
            )?;
        } else if i < n_done + 4 {
            let status = [
                TrialStatus::Building,
                TrialStatus::Agent,
                TrialStatus::Agent,
                TrialStatus::Verifying,
            ][i - n_done];
            queries::patch_trial(
                &tx,
                t.id,
                &TrialPatch {
                    status: Some(status),
                    host: Some("unix:///var/run/docker.sock".into()),
                    trial_dir: Some(dir),
                    started_at: Some(at(start)),
                    build_started_at: Some(at(start)),
                    ..Default::default()
                },
            )?;
        }
    }
    // A run's log as the engine writes it: start, hosts, provider back-offs, operator commands.
    let first = |i: usize| ids.get(i % ids.len().max(1)).cloned().unwrap_or_default();
    let events: [(i64, &str, String); 8] = [
        (
            0,
            "info",
            format!("run started: {} trials planned", spec.tasks * spec.conditions.len() * spec.trials as usize),
        ),
        (1, "info", "Docker host unix:///var/run/docker.sock is up".into()),
        (
            120,
            "info",
            "re-queued 2 trials left running by a stopped process".into(),
        ),
        (
            250,
            "warn",
            format!("{}__no-skills__1: provider rate limit (429) — retry 1 of 3 in 30s", first(1)),
        ),
        (
            430,
            "warn",
            "Docker host tcp://10.0.0.7:2376 is down: connection refused; its trials are queued again for the others".into(),
        ),
        (490, "info", "Docker host tcp://10.0.0.7:2376 is up".into()),
        (
            610,
            "info",
            format!("{}__curated__2: retry asked for; queued as attempt 2", first(2)),
        ),
        (
            780,
            "info",
            format!("{}__no-skills__3: cancel asked for; cancelling", first(3)),
        ),
    ];
    for (secs, level, message) in events {
        queries::add_event_at(&tx, run.id, &at(secs), level, &message)?;
    }
    tx.commit()?;
    queries::get_run(conn, run.id)
}

/// Writes `n` synthetic Harbor trial folders under `dir`, shaped like published SkillsBench runs:
/// jobs of 100 trials named `<agent>-<model>-<noskills|skills>-…`, each trial with `result.json`
/// (Harbor's `TrialResult` fields, naive and offset timestamps mixed as in real files),
/// `config.json`, `agent/trajectory.json` (ATIF v1.2, ~25 steps, ~30 KB, skill reads in the skills
/// jobs), `verifier/reward.txt`, `verifier/ctrf.json` and `verifier/test-stdout.txt`.
/// Deterministic for a given `seed`. Returns the number of trials written.
///
/// # Errors
/// I/O errors writing the folders.
pub fn write_harbor_jobs(dir: &std::path::Path, n: usize, seed: u64) -> std::io::Result<usize> {
    let catalog = Catalog::shipped();
    let tasks: Vec<_> = catalog.entries().collect();
    let mut rng = Mix(seed);
    let per_job = 100;
    for i in 0..n {
        let job = i / per_job;
        let skills = job % 2 == 1;
        let cond = if skills { "skills" } else { "noskills" };
        let job_dir = dir.join(format!("claude-code-opus-4-6-{cond}-batch{job:04}"));
        let task = tasks[(i * 7 + job) % tasks.len()];
        let suffix: String = (0..7)
            .map(|_| {
                b"23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
                    [(rng.next() % 57) as usize] as char
            })
            .collect();
        let trial_name = format!("{}__{suffix}", task.task_id);
        let t = dir.join(&job_dir).join(&trial_name);
        std::fs::create_dir_all(t.join("agent"))?;
        std::fs::create_dir_all(t.join("verifier"))?;
        let reward = if rng.unit() < if skills { 0.45 } else { 0.3 } {
            1.0
        } else {
            0.0
        };
        let timeout = rng.unit() < 0.05;
        let start = 1_000 + i as i64 * 60;
        let naive = |s: i64| at(s).trim_end_matches('Z').to_string();
        let result = serde_json::json!({
            "id": format!("00000000-0000-4000-8000-{:012x}", i as u64 ^ seed),
            "task_name": task.task_id,
            "trial_name": trial_name,
            "trial_uri": format!("file://{}", t.display()),
            "task_id": {"path": format!("/skillsbench/tasks/{}", task.task_id)},
            "source": null,
            "task_checksum": format!("{:064x}", rng.next()),
            "config": {
                "task": {"path": format!("/skillsbench/tasks/{}", task.task_id)},
                "trial_name": trial_name,
                "trials_dir": format!("jobs/{}", job_dir.file_name().unwrap().to_string_lossy()),
                "timeout_multiplier": 1.0,
                "agent": {"name": "claude-code", "model_name": "anthropic/claude-opus-4-6", "kwargs": {}},
                "environment": {"type": "docker", "force_build": false, "delete": true, "kwargs": {}},
                "verifier": {"disable": false}
            },
            "agent_info": {"name": "claude-code", "version": "2.1.12", "model_info": {"name": "claude-opus-4-6", "provider": "anthropic"}},
            "agent_result": {"n_input_tokens": 150_000 + (rng.next() % 200_000) as i64, "n_cache_tokens": 90_000, "n_output_tokens": 6_000 + (rng.next() % 9_000) as i64, "cost_usd": null},
            "verifier_result": {"rewards": {"reward": reward}},
            "exception_info": if timeout { serde_json::json!({"exception_type": "AgentTimeoutError", "exception_message": "Agent execution timed out", "exception_traceback": "", "occurred_at": naive(start + 50)}) } else { serde_json::Value::Null },
            "started_at": if i % 2 == 0 { naive(start) } else { at(start) },
            "finished_at": at(start + 55),
            "environment_setup": {"started_at": at(start), "finished_at": at(start + 5)},
            "agent_setup": {"started_at": at(start + 5), "finished_at": at(start + 8)},
            "agent_execution": {"started_at": at(start + 8), "finished_at": at(start + 48)},
            "verifier": {"started_at": at(start + 48), "finished_at": at(start + 55)}
        });
        std::fs::write(t.join("result.json"), serde_json::to_vec_pretty(&result)?)?;
        std::fs::write(
            t.join("config.json"),
            serde_json::to_vec_pretty(&result["config"])?,
        )?;
        let mut steps = vec![
            serde_json::json!({"step_id": 1, "timestamp": at(start + 8), "source": "user",
            "message": format!("Solve the task {}. Read the inputs in /root, write the outputs the tests expect, and explain what you did. {}", task.task_id, "Details follow. ".repeat(40))}),
        ];
        let skill = task
            .skill_names
            .split(';')
            .next()
            .unwrap_or("skill")
            .to_string();
        for s in 2..=25u64 {
            let call = match s % 4 {
                0 if skills => {
                    serde_json::json!({"tool_call_id": format!("c{s}"), "function_name": "Read", "arguments": {"file_path": format!("/root/.claude/skills/{skill}/SKILL.md")}})
                }
                1 => {
                    serde_json::json!({"tool_call_id": format!("c{s}"), "function_name": "Write", "arguments": {"file_path": "/root/solve.py", "content": "import json\n".repeat(20)}})
                }
                _ => {
                    serde_json::json!({"tool_call_id": format!("c{s}"), "function_name": "Bash", "arguments": {"command": format!("python3 /root/solve.py --step {s}")}})
                }
            };
            steps.push(serde_json::json!({
                "step_id": s, "timestamp": at(start + 8 + s as i64), "source": "agent", "model_name": "claude-opus-4-6",
                "message": format!("Step {s}: I will check the intermediate result and continue with the next part of the plan."),
                "reasoning_content": "Thinking about the data layout and edge cases. ".repeat(6),
                "tool_calls": [call],
                "observation": {"results": [{"source_call_id": format!("c{s}"), "content": format!("Output: {}\nExit Code: {}", "row,value\n1,2\n".repeat(30), if s == 9 { 1 } else { 0 })}]},
                "metrics": {"prompt_tokens": 6000 + s as i64 * 10, "completion_tokens": 250, "cached_tokens": 4000}
            }));
        }
        let traj = serde_json::json!({"schema_version": "ATIF-v1.2", "session_id": format!("s-{i}"),
            "agent": {"name": "claude-code", "version": "2.1.12", "model_name": "claude-opus-4-6"},
            "steps": steps, "final_metrics": {"total_prompt_tokens": 150000, "total_completion_tokens": 6000, "total_cached_tokens": 90000, "total_steps": 25}});
        std::fs::write(t.join("agent/trajectory.json"), serde_json::to_vec(&traj)?)?;
        std::fs::write(
            t.join("verifier/reward.txt"),
            format!("{}\n", reward as i64),
        )?;
        let passed = if reward >= 1.0 { 4 } else { 2 };
        std::fs::write(
            t.join("verifier/ctrf.json"),
            serde_json::to_vec(
                &serde_json::json!({"results": {"tool": {"name": "pytest"}, "summary": {"tests": 4, "passed": passed, "failed": 4 - passed, "skipped": 0},
                "tests": (0..4).map(|k| serde_json::json!({"name": format!("test_outputs.py::test_{k}"), "status": if k < passed { "passed" } else { "failed" },
                    "trace": if k < passed { serde_json::Value::Null } else { serde_json::json!("E   AssertionError: value mismatch") }})).collect::<Vec<_>>()}}),
            )?,
        )?;
        std::fs::write(
            t.join("verifier/test-stdout.txt"),
            format!(
                "collected 4 items\n{} passed, {} failed\n",
                passed,
                4 - passed
            ),
        )?;
    }
    Ok(n)
}

/// Writes a finished run of `tasks × conditions × trials` trials with minimal columns (outcome,
/// reward, finish time) in bulk — for benchmarks of the analysis at a million trials, where
/// [`fill_store`]'s full rows would take minutes to write. Rewards follow [`fill_store`]'s mix
/// (skill conditions pass more often); a few trials end without a reward or with a build error.
///
/// # Errors
/// Database errors.
pub fn fill_results(
    conn: &Connection,
    name: &str,
    tasks: usize,
    conditions: &[String],
    trials: u32,
    seed: u64,
) -> Result<RunRow, StoreError> {
    let tx = conn.unchecked_transaction()?;
    let run = queries::insert_run(
        &tx,
        &NewRun {
            name: name.to_string(),
            tasks_dir: "/data/skillsbench/tasks".into(),
            agent: "oracle".into(),
            model: None,
            n_trials: trials,
            conditions: conditions.to_vec(),
            jobs_dir: "/data/jobs".into(),
            settings: serde_json::json!({}),
        },
    )?;
    let catalog = Catalog::shipped();
    let entries: Vec<_> = catalog.entries().collect();
    let rows: Vec<RunTaskRow> = (0..tasks)
        .map(|i| {
            let e = entries[i % entries.len()];
            RunTaskRow {
                task_id: if i < entries.len() {
                    e.task_id.clone()
                } else {
                    format!("{}-{}", e.task_id, i / entries.len())
                },
                domain: e.domain.clone(),
                difficulty: e.difficulty.clone(),
                path: format!("/data/skillsbench/tasks/{}", e.task_id),
                problems: Vec::new(),
                digest: None,
            }
        })
        .collect();
    queries::upsert_run_tasks(&tx, run.id, &rows)?;
    let mut rng = Mix(seed);
    let when = at(0);
    for (ti, t) in rows.iter().enumerate() {
        for c in conditions {
            let p_pass = if c == "no-skills" { 0.35 } else { 0.55 };
            for i in 1..=trials {
                let r = rng.unit();
                let (outcome, reward) = if r < p_pass {
                    (Outcome::Pass, Some(1.0))
                } else if r < p_pass + 0.38 {
                    (Outcome::Fail, Some(0.0))
                } else if r < p_pass + 0.42 {
                    (Outcome::AgentTimeout, Some(0.0))
                } else if r < p_pass + 0.44 {
                    (Outcome::NoReward, None)
                } else {
                    (Outcome::Fail, Some(0.0))
                };
                let tokens = 2_000 + (rng.unit() * 40_000.0) as i64;
                let id = queries::insert_trial(
                    &tx,
                    &TrialRow {
                        run_id: run.id,
                        task_id: t.task_id.clone(),
                        condition: c.clone(),
                        trial_index: i,
                        attempt: 1,
                        status: TrialStatus::Done,
                        outcome: Some(outcome),
                        reward,
                        agent: "oracle".into(),
                        trial_name: format!("{}__{i}", t.task_id),
                        queued_at: when.clone(),
                        finished_at: Some(when.clone()),
                        n_input_tokens: Some(tokens),
                        n_output_tokens: Some(tokens / 10),
                        n_tool_calls: Some(3 + (rng.unit() * 30.0) as i64),
                        n_error_steps: Some(i64::from(outcome != Outcome::Pass) * 2),
                        final_message: Some(true),
                        ..TrialRow::default()
                    },
                )?;
                // Four of five trials with skills use the task's skill.
                if c != "no-skills" && rng.unit() < 0.8 {
                    let skill = SkillUseRow {
                        skill: format!("skill-{}", ti % 200),
                        kind: "read".into(),
                        first_step: Some(1),
                        count: 1,
                    };
                    queries::set_skill_uses(&tx, id, &[skill])?;
                }
            }
        }
    }
    queries::set_finished_at(&tx, run.id, &when, &when)?;
    tx.commit()?;
    queries::get_run(conn, run.id)
}
