//! The health check (`skillscope tasks --check`): which tasks build and pass their own reference
//! solution (the oracle) on this machine, under each condition, and why the others do not — so
//! an operator knows before paying for model calls which part of the fixed task denominator can
//! score here. Pure: trial rows and their logs in, rows and counts out (the command gathers them).
//!
//! A failure's cause comes from the first step that failed — the build, the solution
//! (`agent/oracle.txt`, when `solve.sh` exited non-zero), the verifier (its failing tests when
//! tests ran, else its whole output) — read as logical lines ([`logs`]: wrapped messages joined),
//! and within that step in this order: a missing environment value, a missing data file, a
//! missing base image or package, the network (with the host it tried), CPUs or memory below the
//! task's request (the host clamped them), then the oracle's own failure. Every cause names its
//! evidence: the file (relative to the trial folder, or `task.toml` / `environment/Dockerfile`
//! of the task) and line, and the line itself.

pub mod logs;
pub mod markdown;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use self::logs::{Context, Found, Level, Line, Log};
use crate::domain::{Outcome, TrialRow};

/// Why a task does not run to an oracle pass here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "kebab-case")]
pub enum Reason {
    /// The task folder is incomplete or its `task.toml` invalid.
    TaskInvalid(String),
    /// A value the task's env tables or compose file need was not set (the trial was refused, or
    /// ran with it empty under `--allow-missing-env`).
    MissingEnv(String),
    /// The Dockerfile copies (or a step reads) a file the task folder does not have.
    MissingDataFile(String),
    /// A `FROM` image is missing and no registry provides it here.
    MissingBaseImage(String),
    /// A `FROM` image lives on a private registry (`gcr.io/…`, `registry.example:5000/…`).
    PrivateRegistry(String),
    /// A package or interpreter a step installs is not available here (Ubuntu-only apt packages,
    /// Python headers, a Python version the stand-in base image lacks).
    PackageUnavailable(String),
    /// A step needed a host this machine cannot reach.
    NetworkNeeded(String),
    /// The tests failed and the task asked for more CPUs than the host has (they were clamped).
    CpusBelowRequest(String),
    /// The tests failed and the task asked for more memory than the host has (it was clamped).
    MemoryBelowRequest(String),
    /// The verifier ran but left no usable reward (or overran its budget).
    VerifierError(String),
    /// The image did not build for another reason (or the compose file is not supported).
    BuildFailed(String),
    /// Everything ran and the verifier scored the reference solution below 1.
    OracleFailed(String),
    /// The oracle failed without the task's skills and passed with them: the task needs its
    /// skills, by design (the SkillsBench question is whether skills help). Expected, not a
    /// failure of this machine: the task counts as passing where it can.
    NeedsSkills(String),
    /// Docker or skillscope failed, or the oracle overran its budget.
    RuntimeError(String),
    /// The check did not finish this trial (stopped early).
    NotRun(String),
}

impl Reason {
    /// Short label (`missing base image`, …) for tables and counts.
    pub fn label(&self) -> &'static str {
        match self {
            Reason::TaskInvalid(_) => "task invalid",
            Reason::MissingEnv(_) => "missing env value",
            Reason::MissingDataFile(_) => "missing data file",
            Reason::MissingBaseImage(_) => "missing base image",
            Reason::PrivateRegistry(_) => "private registry",
            Reason::PackageUnavailable(_) => "package unavailable",
            Reason::NetworkNeeded(_) => "network needed",
            Reason::CpusBelowRequest(_) => "CPUs below request",
            Reason::MemoryBelowRequest(_) => "memory below request",
            Reason::VerifierError(_) => "verifier error",
            Reason::BuildFailed(_) => "build failed",
            Reason::OracleFailed(_) => "oracle failed",
            Reason::NeedsSkills(_) => "needs its skills (expected)",
            Reason::RuntimeError(_) => "runtime error",
            Reason::NotRun(_) => "not run",
        }
    }

    /// The detail text.
    pub fn detail(&self) -> &str {
        match self {
            Reason::TaskInvalid(d)
            | Reason::MissingEnv(d)
            | Reason::MissingDataFile(d)
            | Reason::MissingBaseImage(d)
            | Reason::PrivateRegistry(d)
            | Reason::PackageUnavailable(d)
            | Reason::NetworkNeeded(d)
            | Reason::CpusBelowRequest(d)
            | Reason::MemoryBelowRequest(d)
            | Reason::VerifierError(d)
            | Reason::BuildFailed(d)
            | Reason::OracleFailed(d)
            | Reason::NeedsSkills(d)
            | Reason::RuntimeError(d)
            | Reason::NotRun(d) => d,
        }
    }
}

/// A reason with its evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    /// What it is (`kind` and `detail` in JSON).
    #[serde(flatten)]
    pub reason: Reason,
    /// The file and 1-based line showing it: `verifier/test-stdout.txt:41` (in the trial
    /// folder), `task.toml:12` or `environment/Dockerfile:3` (in the task folder).
    pub evidence: Option<String>,
    /// That line, unwrapped and cut to 240 bytes.
    pub line: Option<String>,
}

impl Cause {
    fn new(reason: Reason) -> Cause {
        Cause {
            reason,
            evidence: None,
            line: None,
        }
    }

    fn at(reason: Reason, evidence: String, line: &str) -> Cause {
        Cause {
            reason,
            evidence: Some(evidence),
            line: (!line.is_empty()).then(|| crate::sanitize::head(line, 240).to_string()),
        }
    }

    /// `missing data file: dataset.csv (environment/Dockerfile:3)`, the detail cut to `max` bytes
    /// — a cut detail ends in `…` (the JSON and Markdown of the check have it whole).
    pub fn describe(&self, max: usize) -> String {
        let detail = self.reason.detail();
        let cut = crate::sanitize::head(detail, max);
        let mut s = format!(
            "{}: {cut}{}",
            self.reason.label(),
            if cut.len() < detail.len() { "…" } else { "" }
        );
        if let Some(e) = &self.evidence {
            s.push_str(&format!(" ({e})"));
        }
        s
    }
}

/// A name and where a task file gives it (`environment/Dockerfile:3`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Located {
    /// The image or file.
    pub name: String,
    /// The file (relative to the task folder) and line.
    pub at: String,
}

/// What is known about a task before its trials are read.
#[derive(Debug, Clone, Default)]
pub struct TaskFacts {
    /// Problems found loading the task.
    pub problems: Vec<String>,
    /// `FROM` images (of every Dockerfile of its environment) the Docker host lacks.
    pub missing_images: Vec<Located>,
    /// Files its Dockerfiles copy that are not in the task folder.
    pub missing_files: Vec<Located>,
    /// Variables its env tables and compose file name.
    pub env_vars: Vec<String>,
    /// Needed values not set now ([`crate::skillsbench::env::missing`]), with their evidence.
    pub missing_env: Vec<crate::skillsbench::env::MissingEnv>,
}

/// One trial's evidence: its row and its logs.
#[derive(Debug, Clone, Default)]
pub struct TrialEvidence {
    /// The latest attempt.
    pub row: TrialRow,
    /// `environment/build.log`.
    pub build_log: Log,
    /// `environment/services.log` (compose tasks).
    pub services_log: Log,
    /// `agent/oracle.txt`.
    pub agent_log: Log,
    /// `verifier/test-stdout.txt`.
    pub verifier_log: Log,
    /// `verifier/ctrf.json`, when the tests wrote one.
    pub ctrf: Option<crate::harbor::ctrf::Report>,
}

/// One line of the readiness table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskReadiness {
    /// Task id.
    pub task: String,
    /// Whether the images built: `yes`, `no`, `partly` (some conditions), or `refused` (its
    /// trials were refused for missing environment values before any build).
    pub builds: String,
    /// Oracle reward per condition key (`None` when no reward was written).
    pub rewards: BTreeMap<String, Option<f64>>,
    /// Outcome per condition key.
    pub outcomes: BTreeMap<String, String>,
    /// Wall time of the task's trials, seconds.
    pub seconds: f64,
    /// Image build seconds per condition key: each image counted once, for the first condition
    /// (in run order) that built it — a base image shared by the conditions is the first's.
    #[serde(default)]
    pub build_seconds: BTreeMap<String, f64>,
    /// The host's limits below the task's request (`8 CPUs asked, 2 applied`), when clamped.
    #[serde(default)]
    pub clamped: Option<String>,
    /// Why it did not pass in every condition (`None` when it did): the first condition's cause
    /// that has one.
    pub reason: Option<Cause>,
    /// The cause per condition key that did not pass.
    #[serde(default)]
    pub reasons: BTreeMap<String, Cause>,
    /// How the conditions differ (`builds only under curated`, `passes only under curated`),
    /// when they do.
    #[serde(default)]
    pub differ: Option<String>,
}

/// True when `image` names a registry host (`gcr.io/x`, `host:5000/x`, `localhost/x`).
pub fn is_private_registry(image: &str) -> bool {
    match image.split_once('/') {
        Some((first, _)) => first.contains('.') || first.contains(':') || first == "localhost",
        None => false,
    }
}

/// The first line of an error message (build errors carry a log tail after it).
fn first_line(text: &str) -> String {
    crate::sanitize::head(text.lines().next().unwrap_or("").trim(), 240).to_string()
}

/// The last logical line of a log that is not decoration.
fn last_line(lines: &[Line]) -> Option<&Line> {
    lines
        .iter()
        .rev()
        .find(|l| !l.text.is_empty() && !l.text.starts_with("---") && !l.text.starts_with("==="))
}

/// True when the trial was refused for missing environment values (no container started).
fn refused(row: &TrialRow) -> bool {
    row.outcome == Some(Outcome::BuildError)
        && row
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("refused:") && e.contains("environment values"))
}

/// Names of a JSON array of strings.
fn names(v: Option<&serde_json::Value>) -> Vec<String> {
    v.and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Why one trial did not pass (`None` when it passed).
pub fn trial_reason(facts: &TaskFacts, t: &TrialEvidence) -> Option<Cause> {
    let row = &t.row;
    let error = crate::sanitize::text(row.error.as_deref().unwrap_or(""));
    match row.outcome {
        Some(Outcome::Pass) => return None,
        None | Some(Outcome::Cancelled) | Some(Outcome::Interrupted) => {
            return Some(Cause::new(Reason::NotRun(format!("status {}", row.status))));
        }
        _ => {}
    }
    if !facts.problems.is_empty() {
        return Some(Cause::new(Reason::TaskInvalid(facts.problems.join("; "))));
    }
    // A value nobody set: the trial was refused, or ran with it empty (and did not pass).
    let empty = names(row.missing_env.as_ref());
    if refused(row) || !empty.is_empty() {
        let listed: Vec<&crate::skillsbench::env::MissingEnv> = facts
            .missing_env
            .iter()
            .filter(|m| empty.is_empty() || empty.contains(&m.variable))
            .collect();
        let detail = if listed.is_empty() {
            if empty.is_empty() {
                first_line(&error)
            } else {
                empty.join(", ")
            }
        } else {
            listed
                .iter()
                .map(|m| m.describe())
                .collect::<Vec<_>>()
                .join("; ")
        };
        let evidence = listed.first().map(|m| m.evidence.clone());
        return Some(Cause {
            reason: Reason::MissingEnv(detail),
            evidence,
            line: None,
        });
    }
    Some(match row.outcome {
        Some(Outcome::BuildError) => build_cause(facts, &error, t),
        Some(Outcome::RuntimeError) | Some(Outcome::ProviderError) => {
            Cause::new(Reason::RuntimeError(first_line(&error)))
        }
        _ => run_cause(facts, t, &error),
    })
}

/// A found cause as a reason of `step` (`build`, `solution`, `verifier`), evidence in `log`.
fn found_cause(f: Found, step: &str, log: &Log) -> Cause {
    let reason = match f.level {
        Level::Env => Reason::MissingEnv(f.what),
        Level::DataFile => Reason::MissingDataFile(f.what),
        Level::Package if f.what.starts_with("base image ") => {
            Reason::MissingBaseImage(f.what.trim_start_matches("base image ").to_string())
        }
        Level::Package => Reason::PackageUnavailable(f.what),
        Level::Network => Reason::NetworkNeeded(format!("{step}: {}", f.what)),
    };
    Cause::at(reason, log.at(f.line.number), &f.line.text)
}

fn missing_names(l: &[Located]) -> Vec<String> {
    l.iter().map(|x| x.name.clone()).collect()
}

/// Why the image (or a compose task's services) did not come up.
fn build_cause(facts: &TaskFacts, error: &str, t: &TrialEvidence) -> Cause {
    if let Some(f) = facts.missing_files.first() {
        let all = missing_names(&facts.missing_files).join(", ");
        return Cause::at(Reason::MissingDataFile(all), f.at.clone(), "");
    }
    if let Some(p) = facts
        .missing_images
        .iter()
        .find(|i| is_private_registry(&i.name))
    {
        return Cause::at(Reason::PrivateRegistry(p.name.clone()), p.at.clone(), "");
    }
    if let Some(i) = facts.missing_images.first() {
        let all = missing_names(&facts.missing_images).join(", ");
        return Cause::at(Reason::MissingBaseImage(all), i.at.clone(), "");
    }
    let cx = Context {
        env_vars: &facts.env_vars,
        missing_files: &[],
    };
    let services = t.services_log.lines();
    let build = t.build_log.lines();
    let (log, lines) = if !services.is_empty() && error.contains("service") {
        (&t.services_log, &services[..])
    } else {
        (&t.build_log, logs::failing_step(&build))
    };
    // Several packages missing in the failing step are named together.
    let packages: Vec<String> = lines
        .iter()
        .filter_map(|l| logs::unavailable_package(&l.text))
        .fold(Vec::new(), |mut v, p| {
            if !v.contains(&p) {
                v.push(p);
            }
            v
        });
    if let Some(f) = logs::find(lines, &cx) {
        let mut c = found_cause(f, "build", log);
        if matches!(c.reason, Reason::PackageUnavailable(_)) && packages.len() > 1 {
            c.reason = Reason::PackageUnavailable(packages.join(", "));
        }
        return c;
    }
    // Else the builder's own message, at the line that says it.
    let head = first_line(error);
    match lines
        .iter()
        .rev()
        .find(|l| l.text.contains("returned a non-zero code") || l.text.contains("error"))
    {
        Some(l) => Cause::at(Reason::BuildFailed(head), log.at(l.number), &l.text),
        None => Cause::new(Reason::BuildFailed(head)),
    }
}

/// Where the verifier's failure shows: the failing tests when tests ran (pytest's FAILURES /
/// ERRORS sections and its short summary), else its whole output; and the first failing test's
/// line.
fn verifier_scope(lines: &[Line]) -> (&[Line], Option<&Line>) {
    let ran = lines.iter().any(|l| {
        l.text.contains("test session starts")
            || (l.text.starts_with('=')
                && (l.text.contains(" failed") || l.text.contains(" passed")))
    });
    let start = lines.iter().position(|l| {
        l.text.starts_with('=')
            && (l.text.contains(" FAILURES ")
                || l.text.contains(" ERRORS ")
                || l.text.contains("short test summary info"))
    });
    let scope = match (ran, start) {
        (true, Some(s)) => &lines[s..],
        (true, None) => {
            let s = lines
                .iter()
                .position(|l| l.text.contains("test session starts"))
                .unwrap_or(0);
            &lines[s..]
        }
        _ => lines,
    };
    let failing = scope
        .iter()
        .find(|l| l.text.starts_with("FAILED ") || l.text.starts_with("ERROR "))
        .or_else(|| scope.iter().find(|l| l.text.starts_with("E ")));
    (scope, failing)
}

/// A request and what the host applied.
type Cut = Option<(f64, f64)>;

/// The task's CPU and memory requests cut to the host's, from the trial's `clamped` record.
fn clamped_parts(row: &TrialRow) -> (Cut, Cut) {
    let get = |k: &str| {
        let v = row.clamped.as_ref()?.get(k)?;
        Some((v.get("requested")?.as_f64()?, v.get("applied")?.as_f64()?))
    };
    (get("cpus"), get("memory_mb"))
}

/// Why a trial whose image came up did not pass.
fn run_cause(facts: &TaskFacts, t: &TrialEvidence, error: &str) -> Cause {
    let row = &t.row;
    let missing = missing_names(&facts.missing_files);
    let cx = Context {
        env_vars: &facts.env_vars,
        missing_files: &missing,
    };
    let solution = t.agent_log.lines();
    let in_solution = logs::find(&solution, &cx);
    if row.outcome == Some(Outcome::AgentTimeout) {
        return match in_solution {
            Some(f) => found_cause(f, "solution", &t.agent_log),
            None => Cause::new(Reason::RuntimeError(first_line(error))),
        };
    }
    // The solution failed first: its own output says why.
    if let Some(code) = row.agent_exit_code.filter(|c| *c != 0) {
        if let Some(f) = in_solution {
            return found_cause(f, "solution", &t.agent_log);
        }
        return match last_line(&solution) {
            Some(l) => Cause::at(
                Reason::OracleFailed(format!(
                    "solve.sh exited {code}: {}",
                    crate::sanitize::head(&l.text, 160)
                )),
                t.agent_log.at(l.number),
                &l.text,
            ),
            None => Cause::new(Reason::OracleFailed(format!("solve.sh exited {code}"))),
        };
    }
    let verifier = t.verifier_log.lines();
    let (scope, failing) = verifier_scope(&verifier);
    if let Some(f) = logs::find(scope, &cx) {
        return found_cause(f, "verifier", &t.verifier_log);
    }
    // A solution that swallowed its own failure (and exited 0).
    if let Some(f) = in_solution {
        return found_cause(f, "solution", &t.agent_log);
    }
    if matches!(
        row.outcome,
        Some(Outcome::NoReward) | Some(Outcome::VerifierTimeout)
    ) {
        return match last_line(&verifier) {
            Some(l) => Cause::at(
                Reason::VerifierError(format!(
                    "{} (last output: {})",
                    first_line(error),
                    crate::sanitize::head(&l.text, 160)
                )),
                t.verifier_log.at(l.number),
                &l.text,
            ),
            None => Cause::new(Reason::VerifierError(first_line(error))),
        };
    }
    let first_failing = failing
        .map(|l| format!("; {}", crate::sanitize::head(&l.text, 160)))
        .or_else(|| {
            let ctrf = t.ctrf.as_ref()?;
            let f = ctrf.results.tests.iter().find(|x| x.status == "failed")?;
            Some(format!(
                "; {}: {}",
                f.name,
                crate::sanitize::head(
                    f.message
                        .as_deref()
                        .unwrap_or("")
                        .lines()
                        .next()
                        .unwrap_or(""),
                    160
                )
            ))
        })
        .unwrap_or_default();
    let evidence = |reason: Reason| match failing {
        Some(l) => Cause::at(reason, t.verifier_log.at(l.number), &l.text),
        None if t.ctrf.is_some() => Cause::at(reason, "verifier/ctrf.json".into(), ""),
        None => Cause::new(reason),
    };
    let (cpus, memory) = clamped_parts(row);
    if let Some((asked, applied)) = cpus {
        return evidence(Reason::CpusBelowRequest(format!(
            "the task asks {asked} CPUs, the host gave {applied}{first_failing}"
        )));
    }
    if let Some((asked, applied)) = memory {
        return evidence(Reason::MemoryBelowRequest(format!(
            "the task asks {asked} MiB, the host gave {applied}{first_failing}"
        )));
    }
    evidence(Reason::OracleFailed(format!(
        "reward {}{}{first_failing}",
        row.reward
            .map(|r| format!("{r:.2}"))
            .unwrap_or_else(|| "?".into()),
        match (row.tests_total, row.tests_passed) {
            (Some(total), Some(passed)) => format!(", {passed} of {total} tests passed"),
            _ => String::new(),
        }
    )))
}

/// Seconds between two RFC 3339 times (0 when either is missing).
fn seconds_between(a: Option<&str>, b: Option<&str>) -> f64 {
    let parse = |s: Option<&str>| s.and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok());
    match (parse(a), parse(b)) {
        (Some(a), Some(b)) => (b - a).num_milliseconds().max(0) as f64 / 1000.0,
        _ => 0.0,
    }
}

/// `8 CPUs asked, 2 applied; 16384 MiB asked, 7900 applied` from a trial's clamp record.
fn clamp_note(row: &TrialRow) -> Option<String> {
    let (cpus, memory) = clamped_parts(row);
    let mut parts = Vec::new();
    if let Some((a, b)) = cpus {
        parts.push(format!("{a} CPUs asked, {b} applied"));
    }
    if let Some((a, b)) = memory {
        parts.push(format!("{a} MiB asked, {b} applied"));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// One task's row from its trials (one per condition, in `conditions` order).
pub fn task_readiness(
    task: &str,
    conditions: &[String],
    facts: &TaskFacts,
    trials: &[TrialEvidence],
) -> TaskReadiness {
    let mut r = TaskReadiness {
        task: task.to_string(),
        builds: String::new(),
        rewards: BTreeMap::new(),
        outcomes: BTreeMap::new(),
        seconds: 0.0,
        build_seconds: BTreeMap::new(),
        clamped: None,
        reason: None,
        reasons: BTreeMap::new(),
        differ: None,
    };
    let (mut built, mut refusals) = (Vec::new(), 0);
    let mut passed = Vec::new();
    let mut images_seen: Vec<String> = Vec::new();
    for c in conditions {
        let Some(t) = trials.iter().find(|t| &t.row.condition == c) else {
            r.rewards.insert(c.clone(), None);
            r.outcomes.insert(c.clone(), "not run".into());
            let cause = Cause::new(Reason::NotRun(format!("no trial of condition {c}")));
            r.reason.get_or_insert(cause.clone());
            r.reasons.insert(c.clone(), cause);
            continue;
        };
        r.rewards.insert(c.clone(), t.row.reward);
        r.outcomes.insert(
            c.clone(),
            t.row
                .outcome
                .map(|o| o.as_str().to_string())
                .unwrap_or_else(|| t.row.status.to_string()),
        );
        r.seconds += seconds_between(t.row.started_at.as_deref(), t.row.finished_at.as_deref());
        let mut own = 0.0;
        for img in t
            .row
            .image_builds
            .iter()
            .flat_map(|v| v.as_array().into_iter().flatten())
        {
            let tag = img.get("tag").and_then(|x| x.as_str()).unwrap_or_default();
            if !images_seen.iter().any(|s| s == tag) {
                images_seen.push(tag.to_string());
                own += img.get("seconds").and_then(|x| x.as_f64()).unwrap_or(0.0);
            }
        }
        r.build_seconds.insert(c.clone(), own);
        if r.clamped.is_none() {
            r.clamped = clamp_note(&t.row);
        }
        if refused(&t.row) {
            refusals += 1;
        } else if t.row.outcome.is_some_and(|o| o != Outcome::BuildError) {
            built.push(c.clone());
        }
        if t.row.outcome == Some(Outcome::Pass) {
            passed.push(c.clone());
        }
        if let Some(cause) = trial_reason(facts, t) {
            r.reason.get_or_insert(cause.clone());
            r.reasons.insert(c.clone(), cause);
        }
    }
    let n = conditions.len();
    r.builds = if refusals == n {
        "refused"
    } else if built.len() == n {
        "yes"
    } else if built.is_empty() {
        "no"
    } else {
        "partly"
    }
    .into();
    // A task whose oracle passes with its skills and fails only without them needs them, by
    // design: expected under no-skills, and the task passes where it can pass.
    let needs_skills = passed.iter().any(|c| c != "no-skills")
        && r.reasons.len() == 1
        && r.reasons
            .get("no-skills")
            .is_some_and(|c| matches!(c.reason, Reason::OracleFailed(_)));
    if needs_skills && let Some(cause) = r.reasons.remove("no-skills") {
        r.reasons.insert(
            "no-skills".into(),
            Cause {
                reason: Reason::NeedsSkills(format!(
                    "the oracle fails without them and passes with them ({})",
                    cause.reason.detail()
                )),
                ..cause
            },
        );
        r.reason = None;
    }
    let only = |v: &[String]| v.join(", ");
    r.differ = if needs_skills {
        Some(format!(
            "passes only with its skills ({}), as expected",
            only(&passed)
        ))
    } else if !built.is_empty() && built.len() < n && refusals == 0 {
        Some(format!("builds only under {}", only(&built)))
    } else if !passed.is_empty() && passed.len() < n {
        Some(format!("passes only under {}", only(&passed)))
    } else {
        None
    };
    r
}

/// Counts of one condition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConditionCounts {
    /// Tasks whose image built under it.
    pub build: usize,
    /// Tasks whose oracle scored 1 under it.
    pub pass: usize,
    /// Tasks by reason label under it.
    pub reasons: BTreeMap<String, usize>,
    /// Image build seconds attributed to it ([`TaskReadiness::build_seconds`]), summed.
    pub build_seconds: f64,
}

/// Counts over the rows: tasks, how many build and pass in every condition, failures by reason
/// label, the same per condition, and the tasks whose conditions differ.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Deserialize)]
pub struct ReadinessCounts {
    /// Tasks checked.
    pub tasks: usize,
    /// Tasks whose images built in every condition.
    pub build: usize,
    /// Tasks whose oracle scored 1 in every condition it can pass in: every condition, or every
    /// condition with skills for a task that needs its skills ([`Reason::NeedsSkills`]).
    pub pass: usize,
    /// Of those, tasks that need their skills (the oracle fails without them, by design).
    #[serde(default)]
    pub needs_skills: usize,
    /// Tasks by the label of their (first) reason.
    pub reasons: BTreeMap<String, usize>,
    /// Per condition key.
    #[serde(default)]
    pub conditions: BTreeMap<String, ConditionCounts>,
    /// Tasks whose conditions differ in buildability or in the oracle's verdict.
    #[serde(default)]
    pub differ: Vec<String>,
    /// Tasks whose CPU or memory request was clamped to the host's.
    #[serde(default)]
    pub clamped: usize,
}

/// Counts of `rows` over `conditions`.
pub fn counts(conditions: &[String], rows: &[TaskReadiness]) -> ReadinessCounts {
    let mut c = ReadinessCounts {
        tasks: rows.len(),
        build: rows.iter().filter(|r| r.builds == "yes").count(),
        pass: rows.iter().filter(|r| r.reason.is_none()).count(),
        needs_skills: rows
            .iter()
            .filter(|r| {
                r.reasons
                    .values()
                    .any(|c| matches!(c.reason, Reason::NeedsSkills(_)))
            })
            .count(),
        clamped: rows.iter().filter(|r| r.clamped.is_some()).count(),
        ..Default::default()
    };
    for r in rows {
        if let Some(reason) = &r.reason {
            *c.reasons
                .entry(reason.reason.label().to_string())
                .or_insert(0) += 1;
        }
        if r.differ.is_some() {
            c.differ.push(r.task.clone());
        }
        for k in conditions {
            let e = c.conditions.entry(k.clone()).or_default();
            let outcome = r.outcomes.get(k).map(String::as_str).unwrap_or("not run");
            if !matches!(outcome, "build-error" | "not run" | "queued") {
                e.build += 1;
            }
            if outcome == "pass" {
                e.pass += 1;
            }
            if let Some(cause) = r.reasons.get(k) {
                *e.reasons
                    .entry(cause.reason.label().to_string())
                    .or_insert(0) += 1;
            }
            e.build_seconds += r.build_seconds.get(k).copied().unwrap_or(0.0);
        }
    }
    c
}

/// What `skillscope tasks --check` writes to `health-check.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HealthCheck {
    /// The check's run name.
    pub run: String,
    /// Its tasks folder.
    pub tasks_dir: String,
    /// Condition keys, in run order.
    pub conditions: Vec<String>,
    /// Every trial has a verdict.
    pub finished: bool,
    /// Counts.
    pub counts: ReadinessCounts,
    /// One row per task.
    pub tasks: Vec<TaskReadiness>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::TrialStatus;

    fn row(condition: &str, outcome: Outcome, reward: Option<f64>, error: &str) -> TrialRow {
        TrialRow {
            condition: condition.into(),
            status: TrialStatus::Done,
            outcome: Some(outcome),
            reward,
            agent_exit_code: Some(0),
            error: (!error.is_empty()).then(|| error.to_string()),
            started_at: Some("2026-11-23T10:00:00Z".into()),
            finished_at: Some("2026-11-23T10:00:02.500Z".into()),
            ..Default::default()
        }
    }

    fn ev(row: TrialRow, build: &str, agent: &str, verifier: &str) -> TrialEvidence {
        TrialEvidence {
            row,
            build_log: Log::new("environment/build.log", build),
            agent_log: Log::new("agent/oracle.txt", agent),
            verifier_log: Log::new("verifier/test-stdout.txt", verifier),
            ..Default::default()
        }
    }

    fn conds() -> Vec<String> {
        vec!["no-skills".to_string(), "curated".to_string()]
    }

    #[test]
    fn build_reasons_name_their_evidence() {
        let facts = TaskFacts {
            missing_images: vec![
                Located {
                    name: "gcr.io/x/y:1".into(),
                    at: "environment/Dockerfile:1".into(),
                },
                Located {
                    name: "node:20".into(),
                    at: "environment/Dockerfile:5".into(),
                },
            ],
            ..Default::default()
        };
        let b = |c: &str| {
            ev(
                row(c, Outcome::BuildError, None, "pull access denied"),
                "",
                "",
                "",
            )
        };
        let r = task_readiness("t", &conds(), &facts, &[b("no-skills"), b("curated")]);
        assert_eq!(r.builds, "no");
        let cause = r.reason.unwrap();
        assert_eq!(cause.reason, Reason::PrivateRegistry("gcr.io/x/y:1".into()));
        assert_eq!(cause.evidence.as_deref(), Some("environment/Dockerfile:1"));
        assert_eq!(r.seconds, 5.0);
        assert!(r.differ.is_none());

        // Only the failing step is read: an earlier step's harmless network error is not blamed.
        let log = "Step 1/3 : FROM ubuntu:24.04\nStep 2/3 : RUN curl -fsS https://astral.sh/x || true\n\
                   curl: (6) Could not resolve host: astral.sh\nStep 3/3 : RUN apt-get install -y libasound2t64 libgbm1\n\
                   E: Unable to locate package libasound2t64\x1b[0m\nE: Unable to locate package libgbm1\n\
                   The command '/bin/sh -c apt-get install' returned a non-zero code: 100\n";
        let facts = TaskFacts::default();
        let r = trial_reason(
            &facts,
            &ev(
                row("no-skills", Outcome::BuildError, None, "build failed"),
                &crate::sanitize::text(log),
                "",
                "",
            ),
        )
        .unwrap();
        assert_eq!(
            r.reason,
            Reason::PackageUnavailable("libasound2t64, libgbm1".into())
        );
        assert_eq!(r.evidence.as_deref(), Some("environment/build.log:5"));
    }

    #[test]
    fn cpus_clamped_not_the_harmless_network_error() {
        let verifier = "downloading uv\ncurl: (6) Could not resolve host: astral.sh\n\
                        ============================= test session starts ==============================\n\
                        tests/test_outputs.py ..F\n=================================== FAILURES ===================================\n\
                        ____ TestPerf.test_index_speedup ____\nE       AssertionError: Speedup 0.88x below 1.5x\n\
                        =========================== short test summary info ============================\n\
                        FAILED tests/test_outputs.py::TestPerf::test_index_speedup - AssertionError: Speedup 0.88x below 1.5x\n\
                        ========================= 1 failed, 2 passed in 9.12s ==========================\n";
        let mut r = row("no-skills", Outcome::Fail, Some(0.0), "verifier reward 0");
        r.clamped = Some(serde_json::json!({"cpus": {"requested": 8.0, "applied": 2.0}}));
        let c = trial_reason(&TaskFacts::default(), &ev(r.clone(), "", "", verifier)).unwrap();
        assert_eq!(c.reason.label(), "CPUs below request");
        assert!(
            c.reason.detail().contains("asks 8 CPUs, the host gave 2"),
            "{c:?}"
        );
        assert!(c.reason.detail().contains("test_index_speedup"), "{c:?}");
        assert_eq!(c.evidence.as_deref(), Some("verifier/test-stdout.txt:9"));
        // Without the clamp it is the oracle's own failure, at the same line.
        r.clamped = None;
        let c = trial_reason(&TaskFacts::default(), &ev(r, "", "", verifier)).unwrap();
        assert_eq!(c.reason.label(), "oracle failed");
        assert_eq!(c.evidence.as_deref(), Some("verifier/test-stdout.txt:9"));
    }

    #[test]
    fn a_wrapped_network_error_of_the_solution_is_the_cause() {
        let oracle = "Merging...\n[nltk_data] Error loading wordnet: <urlopen error [Errno -2] Name or\n\
                      [nltk_data]     service not known>\nLookupError: Resource wordnet not found.\n";
        let mut r = row("curated", Outcome::Fail, Some(0.0), "verifier reward 0");
        r.agent_exit_code = Some(1);
        let c = trial_reason(&TaskFacts::default(), &ev(r, "", oracle, "")).unwrap();
        assert_eq!(c.reason.label(), "network needed");
        assert_eq!(c.evidence.as_deref(), Some("agent/oracle.txt:2"));
        assert_eq!(
            c.line.as_deref(),
            Some(
                "[nltk_data] Error loading wordnet: <urlopen error [Errno -2] Name or service not known>"
            )
        );
    }

    #[test]
    fn a_python_version_uv_would_download_is_a_package() {
        let verifier = "Downloading cpython-3.12.12-linux-x86_64-gnu (download)\n\
                        error: Failed to download https://github.com/astral-sh/python-build-standalone/releases/download/x/cpython-3.12.12.tar.gz\n  \
                        Caused by: client error (Connect)\n  Caused by: dns error: failed to lookup address information: Name or service not known\n";
        let r = row("no-skills", Outcome::NoReward, None, "no reward file");
        let c = trial_reason(&TaskFacts::default(), &ev(r, "", "", verifier)).unwrap();
        assert_eq!(c.reason.label(), "package unavailable");
        assert!(c.reason.detail().starts_with("Python 3.12.12"), "{c:?}");
        assert_eq!(c.evidence.as_deref(), Some("verifier/test-stdout.txt:2"));
    }

    /// A task whose oracle fails only without its skills needs them, by design: expected, and it
    /// counts as passing where it can (issue 48: the examples' two skill tasks made `tasks
    /// --check` exit 4 with "oracle failed 2"). A failure with the skills stays a failure.
    #[test]
    fn a_task_that_needs_its_skills_fails_without_them_as_expected() {
        let needs = vec![
            ev(
                row("no-skills", Outcome::Fail, Some(0.0), "verifier reward 0"),
                "",
                "",
                "",
            ),
            ev(row("curated", Outcome::Pass, Some(1.0), ""), "", "", ""),
        ];
        let r = task_readiness("ledger", &conds(), &TaskFacts::default(), &needs);
        assert_eq!(r.reason, None, "{r:?}");
        assert_eq!(
            r.reasons["no-skills"].reason.label(),
            "needs its skills (expected)"
        );
        assert!(
            r.differ.as_deref().unwrap().contains("as expected"),
            "{r:?}"
        );
        let broken = vec![
            ev(row("no-skills", Outcome::Pass, Some(1.0), ""), "", "", ""),
            ev(
                row("curated", Outcome::Fail, Some(0.0), "verifier reward 0"),
                "",
                "",
                "",
            ),
        ];
        let b = task_readiness("other", &conds(), &TaskFacts::default(), &broken);
        assert_eq!(b.reason.as_ref().unwrap().reason.label(), "oracle failed");
        let c = counts(&conds(), &[r, b]);
        assert_eq!((c.tasks, c.pass, c.needs_skills), (2, 1, 1));
        assert_eq!(c.reasons.get("oracle failed"), Some(&1));
        assert_eq!(c.reasons.get("needs its skills (expected)"), None);
    }

    #[test]
    fn conditions_that_differ_and_refusals() {
        let built = ev(row("curated", Outcome::Pass, Some(1.0), ""), "", "", "");
        let failed = ev(
            row(
                "no-skills",
                Outcome::BuildError,
                None,
                "The command returned a non-zero code: 1",
            ),
            "",
            "",
            "",
        );
        let r = task_readiness("t", &conds(), &TaskFacts::default(), &[failed, built]);
        assert_eq!(r.builds, "partly");
        assert_eq!(r.differ.as_deref(), Some("builds only under curated"));
        assert_eq!(r.reasons.len(), 1);
        let c = counts(&conds(), &[r]);
        assert_eq!(c.differ, ["t"]);
        assert_eq!(
            (
                c.conditions["curated"].build,
                c.conditions["no-skills"].build
            ),
            (1, 0)
        );
        assert_eq!(c.conditions["curated"].pass, 1);

        let m = crate::skillsbench::env::MissingEnv {
            task: "t".into(),
            variable: "OPENAI_API_KEY".into(),
            used_in: vec!["[solution] env OPENAI_API_KEY".into()],
            evidence: "task.toml:7".into(),
            hint: None,
        };
        let facts = TaskFacts {
            missing_env: vec![m],
            ..Default::default()
        };
        let refused = |c: &str| {
            ev(
                row(
                    c,
                    Outcome::BuildError,
                    None,
                    "refused: task t needs environment values that are not set: OPENAI_API_KEY",
                ),
                "",
                "",
                "",
            )
        };
        let r = task_readiness(
            "t",
            &conds(),
            &facts,
            &[refused("no-skills"), refused("curated")],
        );
        assert_eq!(r.builds, "refused");
        let cause = r.reason.unwrap();
        assert_eq!(cause.reason.label(), "missing env value");
        assert_eq!(cause.evidence.as_deref(), Some("task.toml:7"));
        assert!(
            cause
                .reason
                .detail()
                .contains("[solution] env OPENAI_API_KEY")
        );
        // JSON keeps kind and detail beside the evidence.
        let json = serde_json::to_value(&cause).unwrap();
        assert_eq!(json["kind"], "missing-env");
        assert_eq!(json["evidence"], "task.toml:7");
        let back: Cause = serde_json::from_value(json).unwrap();
        assert_eq!(back, cause);
    }

    #[test]
    fn registry_names() {
        assert!(is_private_registry("gcr.io/proj/img:1"));
        assert!(is_private_registry("localhost:5000/x"));
        assert!(!is_private_registry("bugswarm/cached-images:abc"));
        assert!(!is_private_registry("ubuntu:24.04"));
    }
}
