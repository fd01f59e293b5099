//! The 87 real SkillsBench task definitions in `../shared/skillsbench/tasks` (task.toml,
//! instruction.md and skills; data only, no Dockerfiles or tests) parse, and agree with the
//! catalog: ids, domains, difficulty, timeouts and skill names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use skillscope::skillsbench::{Catalog, Severity, TaskConfig, TaskSet};

/// The evaluation's shared data: `$SKILLSCOPE_SHARED`, else `../shared` beside the checkout, else
/// `/work/shared`.
fn shared() -> PathBuf {
    let candidates: Vec<PathBuf> = std::env::var_os("SKILLSCOPE_SHARED")
        .map(PathBuf::from)
        .into_iter()
        .chain([
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"),
            PathBuf::from("/work/shared"),
        ])
        .collect();
    candidates
        .iter()
        .find(|p| p.join("skillsbench/tasks").is_dir())
        .cloned()
        .unwrap_or_else(|| panic!("the shared SkillsBench data is not at any of {candidates:?} (set SKILLSCOPE_SHARED)"))
}

/// Skill folders the catalog names but the data-only copy does not hold (a `licenses` folder
/// without SKILL.md, and one skill left out of the copy).
const ABSENT_FROM_COPY: &[(&str, &str)] = &[
    ("earthquake-phase-association", "licenses"),
    ("scheduling-email-assistant", "google-calendar-skill"),
    ("seismic-phase-picking", "licenses"),
];

#[test]
fn all_87_real_tasks_parse_and_match_the_catalog() {
    let root = shared().join("skillsbench/tasks");
    let catalog = Catalog::from_file(&shared().join("skillsbench/catalog.csv")).unwrap();
    let set = TaskSet::load(&root, &catalog, &[]).unwrap();
    assert_eq!(set.tasks.len(), 87);
    assert_eq!(catalog.len(), 87);

    let mut skills_total = 0;
    let mut warned = 0;
    let mut domains: BTreeMap<String, usize> = BTreeMap::new();
    for t in &set.tasks {
        let entry = catalog
            .get(&t.id)
            .unwrap_or_else(|| panic!("{} not in catalog", t.id));
        // task.toml itself parses (the data-only copy lacks Dockerfiles and tests, nothing else).
        let text = std::fs::read_to_string(t.dir.join("task.toml")).unwrap();
        TaskConfig::parse(&text, &t.dir.join("task.toml")).unwrap();
        assert!(
            t.problems
                .iter()
                .all(|p| p.starts_with("missing Dockerfile") || p.starts_with("missing verifier")),
            "{}: {:?}",
            t.id,
            t.problems
        );
        assert_eq!(t.domain, entry.domain, "{}", t.id);
        assert_eq!(t.difficulty, entry.difficulty, "{}", t.id);
        *domains.entry(t.domain.clone()).or_default() += 1;

        let found: BTreeSet<String> = t.skills.iter().map(|s| s.dir_name.clone()).collect();
        let mut listed: BTreeSet<String> =
            entry.skill_names.split(';').map(str::to_string).collect();
        for (task, skill) in ABSENT_FROM_COPY {
            if *task == t.id {
                listed.remove(*skill);
            }
        }
        assert_eq!(found, listed, "{}", t.id);
        for s in &t.skills {
            assert!(s.is_valid(), "{}/{}: {:?}", t.id, s.dir_name, s.problems);
            assert!(
                s.frontmatter
                    .as_ref()
                    .is_some_and(|f| !f.description.is_empty())
            );
            if s.problems.iter().any(|p| p.severity == Severity::Warning) {
                warned += 1;
            }
        }
        skills_total += t.skills.len();
    }
    assert_eq!(skills_total, 229);
    let catalog_total: u32 = catalog.entries().map(|e| e.num_skills.unwrap_or(0)).sum();
    assert_eq!(
        catalog_total as usize,
        skills_total + ABSENT_FROM_COPY.len()
    );
    // Convention breaks (names with capitals/underscores or differing from the folder) are warnings.
    assert_eq!(warned, 20);
    assert_eq!(domains.len(), 11);
    assert_eq!(domains["Office & White Collar"], 15);
    assert_eq!(domains["Healthcare"], 2);
}

#[test]
fn timeouts_and_resources_match_the_catalog() {
    let root = shared().join("skillsbench/tasks");
    let catalog = Catalog::shipped();
    let set = TaskSet::load(&root, &catalog, &[]).unwrap();
    let csv_text = std::fs::read_to_string(shared().join("skillsbench/catalog.csv")).unwrap();
    let mut rdr = csv::Reader::from_reader(csv_text.as_bytes());
    let headers = rdr.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (agent, verifier, cpus, mem, net) = (
        col("agent_timeout_sec"),
        col("verifier_timeout_sec"),
        col("cpus"),
        col("memory_mb"),
        col("allow_internet"),
    );
    let by_id: BTreeMap<String, csv::StringRecord> = rdr
        .records()
        .map(|r| r.unwrap())
        .map(|r| (r[0].to_string(), r))
        .collect();
    for t in &set.tasks {
        let r = &by_id[&t.id];
        assert_eq!(
            t.config.agent.timeout_sec,
            r[agent].parse::<f64>().unwrap(),
            "{}",
            t.id
        );
        assert_eq!(
            t.config.verifier.timeout_sec,
            r[verifier].parse::<f64>().unwrap(),
            "{}",
            t.id
        );
        if !r[cpus].is_empty() {
            assert_eq!(
                t.config.environment.cpus,
                Some(r[cpus].parse::<f64>().unwrap()),
                "{}",
                t.id
            );
        }
        if !r[mem].is_empty() {
            assert_eq!(
                t.config.environment.memory_mb,
                Some(r[mem].parse::<u64>().unwrap()),
                "{}",
                t.id
            );
        }
        if r[net] == *"True" {
            assert!(t.config.environment.allow_internet, "{}", t.id);
        }
    }
}

/// The real tasks whose `task.toml` names outside values: the oracle needs every `[solution]`,
/// `[verifier]` and `[environment]` value; an LLM agent all but the solution's. With nothing set,
/// each is named with its variables and where they are used, before any trial.
#[test]
fn real_tasks_that_need_values_nobody_set_are_named_before_any_trial() {
    use skillscope::skillsbench::env::{self, EnvValues};
    let set = TaskSet::load(
        &shared().join("skillsbench/tasks"),
        &Catalog::shipped(),
        &[],
    )
    .expect("tasks");
    // Data only (no Dockerfiles): each task is checked on its own (`missing_in` leaves out tasks
    // that cannot run anyway).
    let none = EnvValues::only(&[]);
    let all = |solution: bool, values: &EnvValues| -> Vec<env::MissingEnv> {
        set.tasks
            .iter()
            .flat_map(|t| env::missing(t, solution, values))
            .collect()
    };
    let by_task = |solution: bool| -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for m in all(solution, &none) {
            out.entry(m.task.clone())
                .or_default()
                .push(m.variable.clone());
        }
        out
    };
    let oracle = by_task(true);
    let expected: BTreeMap<String, Vec<String>> = [
        (
            "mhc-layer-impl",
            &["MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET"][..],
        ),
        ("pg-essay-to-audiobook", &["OPENAI_API_KEY"]),
        ("scheduling-email-assistant", &["HUGGINGFACE_API_TOKEN"]),
        (
            "trend-anomaly-causal-inference",
            &["ANTHROPIC_API_KEY", "OPENAI_API_KEY"],
        ),
        ("video-filler-word-remover", &["OPENAI_API_KEY"]),
        ("video-tutorial-indexer", &["OPENAI_API_KEY"]),
    ]
    .into_iter()
    .map(|(t, v)| (t.to_string(), v.iter().map(|s| s.to_string()).collect()))
    .collect();
    assert_eq!(oracle, expected);
    // An LLM agent does not run the solution: its table does not count.
    let agent: Vec<String> = by_task(false).into_keys().collect();
    assert_eq!(
        agent,
        [
            "mhc-layer-impl",
            "pg-essay-to-audiobook",
            "trend-anomaly-causal-inference"
        ]
    );
    let text = env::refusal(&all(true, &none));
    assert!(
        text.contains("pg-essay-to-audiobook needs OPENAI_API_KEY ([verifier] env OPENAI_API_KEY, [solution] env OPENAI_API_KEY)"),
        "{text}"
    );
    // Given, they are not missing (and the values never appear in what is said).
    let given = ["OPENAI_API_KEY=sk-x".to_string()];
    let left = all(true, &EnvValues::only(&given));
    assert!(!left.iter().any(|m| m.variable == "OPENAI_API_KEY"));
}

/// docs/tasks.md's health-check block is what the stored check's JSON renders to — generated by
/// `scripts/health-check-doc.sh`, never typed — over all 87 tasks. With `SKILLSCOPE_WRITE_DOCS=1`
/// (the script sets it) the block is written from the JSON by today's renderer instead.
#[test]
fn the_docs_health_check_is_generated_from_the_stored_check() {
    use skillscope::analysis::health_check::{HealthCheck, markdown};
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let json = std::fs::read_to_string(root.join("docs/health-check/skillsbench-87.json"))
        .expect("docs/health-check/skillsbench-87.json");
    let check: HealthCheck = serde_json::from_str(&json).expect("a health check");
    assert_eq!(check.tasks.len(), 87);
    assert_eq!(check.counts.tasks, 87);
    let doc = std::fs::read_to_string(root.join("docs/tasks.md")).unwrap();
    let begin = doc.find("<!-- BEGIN health-check").expect("begin marker");
    let begin = begin + doc[begin..].find('\n').unwrap() + 1;
    let end = doc.find("<!-- END health-check -->").expect("end marker");
    if std::env::var_os("SKILLSCOPE_WRITE_DOCS").is_some_and(|v| v == "1") {
        let text = format!(
            "{}{}{}",
            &doc[..begin],
            markdown::render(&check),
            &doc[end..]
        );
        std::fs::write(root.join("docs/tasks.md"), text).unwrap();
        return;
    }
    assert_eq!(
        &doc[begin..end],
        markdown::render(&check),
        "docs/tasks.md was edited by hand: run scripts/health-check-doc.sh"
    );
}

/// A task's `environment/skills/licenses/` (licence texts beside the skills, as the real
/// SkillsBench tasks ship them) is not a skill: `tasks` notes it, counts it nowhere, and exits 0
/// — its summary line and its exit code agree (issue 36). A folder without SKILL.md under any
/// other name is still an invalid skill (exit 4).
#[test]
fn a_licences_folder_beside_skills_is_noted_and_tasks_exits_0() {
    let root = tempfile::tempdir().unwrap();
    let task = root.path().join("with-licences");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tasks/passes");
    let copy = |from: &std::path::Path, to: &std::path::Path| {
        for e in walkdir::WalkDir::new(from) {
            let e = e.unwrap();
            let dest = to.join(e.path().strip_prefix(from).unwrap());
            if e.file_type().is_dir() {
                std::fs::create_dir_all(&dest).unwrap();
            } else {
                std::fs::copy(e.path(), &dest).unwrap();
            }
        }
    };
    copy(&src, &task);
    let skills = task.join("environment/skills");
    std::fs::create_dir_all(skills.join("greeting")).unwrap();
    std::fs::write(
        skills.join("greeting/SKILL.md"),
        "---\nname: greeting\ndescription: Greets.\n---\n# Greeting\n",
    )
    .unwrap();
    std::fs::create_dir_all(skills.join("licenses")).unwrap();
    std::fs::write(skills.join("licenses/LICENSE-greeting.txt"), "MIT\n").unwrap();
    let run = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_skillscope"))
            .args(["tasks", "--tasks"])
            .arg(root.path())
            .output()
            .unwrap()
    };
    let out = run();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let summary = text.lines().last().unwrap();
    assert!(summary.contains("1 skill (0 invalid)"), "{summary}");
    assert!(
        summary.contains("1 folder beside skills not a skill"),
        "{summary}"
    );
    assert!(summary.contains("0 tasks cannot run"), "{summary}");
    // A real skill that lost its SKILL.md is still an error.
    std::fs::create_dir_all(skills.join("broken")).unwrap();
    std::fs::write(skills.join("broken/notes.md"), "x\n").unwrap();
    let out = run();
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The real tasks' digests equal what Harbor 0.26.0's packager
/// (`Packager.compute_content_hash`) and BenchFlow's `task_digest` (benchflow-ai/benchflow at
/// 62cc7e4) give for the same folders of the shared data-only copy: four named tasks, and all 87
/// through one SHA-256 over the lines `<task> <digest>\n` in task order (computed with the
/// packages on this copy). The copy is read where it lies, as the other tests here read it: the
/// SkillsBench task files are not vendored into this repository.
#[test]
fn real_tasks_digest_as_harbor_and_benchflow_do() {
    use sha2::{Digest, Sha256};
    use skillscope::skillsbench::digest::{benchflow, task_digest};
    let root = shared().join("skillsbench/tasks");
    for (task, harbor, bench) in [
        (
            "hvac-control",
            "sha256:ea07c7b4782aa77881197741e39ff3d27767efed35e03eb58bd0559d62ecaeed",
            "sha256:449291906ebe4de49f65dadde06ab3e07290b69d8df974cba8b3b2db7a39434d",
        ),
        (
            "3d-scan-calc",
            "sha256:b9b988ef09e749bd8d3f99094a4817c8351402fd1a78b66d347d1d714ecf3369",
            "sha256:bdd7d088a60ae0140bad50bf58f185cb835c090bdaa41a5060422963033a4788",
        ),
        (
            "earthquake-phase-association",
            "sha256:37767685c2cb726a5af472a4f26e30329072063b0917ef5342d19164406a0371",
            "sha256:475c51627f2dc2648bf847f7fdd3f2c0408ef431c1f638f51cd65eddc95fded4",
        ),
        (
            "scheduling-email-assistant",
            "sha256:3cff702d60968d165282daa6bd673c30e4fa1632b719c6e121c9938603ca4f78",
            "sha256:b97dc51ef510bcce428b26df03e3e4727183adfdb077871c77c66d6df40236e0",
        ),
    ] {
        assert_eq!(
            task_digest(&root.join(task)).unwrap(),
            harbor,
            "{task}: Harbor"
        );
        assert_eq!(
            benchflow::task_digest(&root.join(task)).unwrap(),
            bench,
            "{task}: BenchFlow"
        );
    }
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 87);
    let (mut h, mut b) = (Sha256::new(), Sha256::new());
    for n in &names {
        h.update(format!("{n} {}\n", task_digest(&root.join(n)).unwrap()));
        b.update(format!(
            "{n} {}\n",
            benchflow::task_digest(&root.join(n)).unwrap()
        ));
    }
    assert_eq!(
        hex::encode(h.finalize()),
        "d55265bd420d9fe35ffa803236577c0fe7342290c6defc59294f2bd1c130f595"
    );
    assert_eq!(
        hex::encode(b.finalize()),
        "c36f749b4901eb22bbaf33a8a28c34738fc18b6c896135faa3793d2a7aec6c35"
    );
}
