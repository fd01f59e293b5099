//! A store in the middle of an experiment's learn phase, filled through the store API: a synthetic
//! round-1 run (6 tasks × 2 conditions × 2 trials, all finished), experiment `demo` in phase
//! `learn`, LS-A (no skills; learned, exported) and LS-B (curated start; learning, one trial
//! MISLABELED, one with an error, one being learned), skill versions (curated, learned, and a
//! curated skill the learning changed), provenance and exports. The store's own timestamps are
//! never drawn, so views of it are deterministic.

#![allow(dead_code)]

use rusqlite::Connection;
use skillscope::perf::synthetic::{SyntheticRun, fill_store};
use skillscope::store::learning::{
    self as lq, NewSkillVersion, NewSpace, NewStep, SkillFileRow, SpacePatch, SpaceRow, StepPatch,
};
use skillscope::store::{Outcome, RunRow, Store, queries};

/// The curated SKILL.md of `mesh-analysis`.
pub const CURATED_SKILL_MD: &str = "---
name: mesh-analysis
description: Measure the volume and mass of STL meshes with scripts/volume.py
---
# Mesh analysis

Use `scripts/volume.py <file.stl>` to get the volume in cm³, then multiply by the material density given in the task.

## Inputs
- An STL file (binary or ASCII)
- The material density
";

/// The learned SKILL.md of `mesh-analysis`: one line changed, an SOP and a Warning entry added.
pub const LEARNED_SKILL_MD: &str = "---
name: mesh-analysis
description: Measure the volume and mass of STL meshes with scripts/volume.py
---
# Mesh analysis

Use `scripts/volume.py <file.stl>` to get the volume in cm³, then multiply by the material density given in the task.

## Inputs
- An STL file (binary or ASCII)
- The material density, usually in `density.txt`

## Solve 3d-scan-calc (date: 2026-11-21)
- Principle: Compute the volume with the script, never by hand.
- When to Apply: Tasks that ask for the mass of a scanned part.
- Steps: 1. Run scripts/volume.py 2. Read density.txt 3. Multiply and round to 2 decimals

## Avoid the 3d-scan-calc failure (date: 2026-11-21)
- Symptom: The mass was off by a factor of 1000.
- Root Cause: The density was in kg/m³ but the volume in cm³.
- Correct Approach: Convert the density to g/cm³ before multiplying.
- Prevention: Print the units of every input before computing.
";

const VOLUME_PY: &str = "import sys\n\nfrom stl import mesh\n\nm = mesh.Mesh.from_file(sys.argv[1])\nvolume, _, _ = m.get_mass_properties()\nprint(f\"volume {volume / 1000:.2f} cm3\")\n";

/// A file row with a fake (but per-content stable) hash.
pub fn file(path: &str, text: &str) -> SkillFileRow {
    SkillFileRow {
        path: path.into(),
        size: text.len() as u64,
        sha256: format!("{:016x}", fnv(text)),
        text: Some(text.into()),
    }
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A skill version of `files` (content hash from the files).
pub fn version(
    origin: &str,
    name: &str,
    description: &str,
    files: Vec<SkillFileRow>,
) -> NewSkillVersion {
    let hash = format!(
        "{:016x}",
        fnv(&files
            .iter()
            .map(|f| format!("{}:{}", f.path, f.sha256))
            .collect::<Vec<_>>()
            .join(","))
    );
    NewSkillVersion {
        origin: origin.into(),
        name: name.into(),
        description: description.into(),
        content_hash: hash,
        remote_id: None,
        dir: Some(format!("/data/exports/demo/{name}")),
        problems: Vec::new(),
        files,
    }
}

/// What the fixture made.
pub struct Learning {
    /// Kept alive for the test.
    pub dir: tempfile::TempDir,
    /// A connection to it.
    pub conn: Connection,
    /// The round-1 run.
    pub run: RunRow,
    /// LS-A (learned from no-skills).
    pub a: SpaceRow,
    /// LS-B (learning from curated).
    pub b: SpaceRow,
}

fn plan(conn: &Connection, run: &RunRow, space: &SpaceRow, condition: &str) -> Vec<i64> {
    let mut trials: Vec<_> = queries::current_trials(conn, run.id)
        .unwrap()
        .into_iter()
        .filter(|t| t.condition == condition)
        .collect();
    trials.sort_by(|a, b| (&a.task_id, a.trial_index).cmp(&(&b.task_id, b.trial_index)));
    let steps: Vec<NewStep> = trials
        .iter()
        .map(|t| {
            let verdict = match t.outcome {
                Some(Outcome::Pass) => Some("success"),
                Some(Outcome::Fail | Outcome::AgentTimeout) => Some("failed"),
                _ => None,
            };
            NewStep {
                trial_id: t.id,
                task_id: t.task_id.clone(),
                trial_index: t.trial_index,
                verdict: verdict.unwrap_or("none").into(),
                session_id: format!("00000000-0000-5000-8000-{:012x}", t.id),
                step: if verdict.is_some() {
                    "queued"
                } else {
                    "skipped"
                }
                .into(),
                note: verdict.is_none().then(|| {
                    format!(
                        "no verifier verdict (outcome {}): not learned",
                        t.outcome.map(|o| o.as_str()).unwrap_or("none")
                    )
                }),
            }
        })
        .collect();
    lq::plan_steps(conn, space.id, &steps).unwrap();
    lq::steps(conn, space.id)
        .unwrap()
        .into_iter()
        .filter(|s| s.step == "queued")
        .map(|s| s.trial_id)
        .collect()
}

fn step(conn: &Connection, space: i64, trial: i64, p: StepPatch) {
    lq::patch_step(conn, space, trial, &p).unwrap();
}

fn done(conn: &Connection, space: i64, trial: i64) {
    step(
        conn,
        space,
        trial,
        StepPatch {
            step: Some("done".into()),
            mode: Some("criteria".into()),
            learning_status: Some("completed".into()),
            finished: true,
            ..Default::default()
        },
    );
}

/// Builds the fixture.
pub fn learning() -> Learning {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    let conn = store.connect().unwrap();
    let run = fill_store(
        &conn,
        &SyntheticRun {
            name: "demo-round1".into(),
            tasks: 6,
            trials: 2,
            done_fraction: 1.0,
            ..Default::default()
        },
    )
    .unwrap();
    queries::release_run(&conn, run.id, true, None).unwrap();
    let run = queries::get_run(&conn, run.id).unwrap();
    lq::find_or_insert_experiment(
        &conn,
        "demo",
        &serde_json::json!({"tasks": 6, "trials": 2}),
        "demo-round1",
        "demo-round2",
    )
    .unwrap();
    lq::set_experiment_phase(
        &conn,
        "demo",
        "learn",
        Some("resumed after a server outage"),
    )
    .unwrap();

    let space = |label: &str, condition: &str, curated: bool| {
        lq::find_or_insert_space(
            &conn,
            &NewSpace {
                label: label.into(),
                run_id: run.id,
                condition: condition.into(),
                experiment: Some("demo".into()),
                base_url: "http://acontext.test/api/v1".into(),
                curated,
                keep_defaults: false,
            },
        )
        .unwrap()
    };
    let a = space("LS-A", "no-skills", false);
    let b = space("LS-B", "curated", true);
    for (s, state) in [(&a, "learned"), (&b, "learning")] {
        lq::patch_space(
            &conn,
            s.id,
            &SpacePatch {
                remote_id: Some(format!("space-{}", s.label)),
                status_mode: Some("criteria".into()),
                state: Some(state.into()),
                error: None,
            },
        )
        .unwrap();
    }

    // LS-A: every trial learned, the last one rejected.
    let ta = plan(&conn, &run, &a, "no-skills");
    for (i, &t) in ta.iter().enumerate() {
        if i + 1 == ta.len() {
            step(
                &conn,
                a.id,
                t,
                StepPatch {
                    step: Some("rejected".into()),
                    error: Some(Some(
                        "the task status was left undecided; the session was deleted so it is not learned as a success"
                            .into(),
                    )),
                    finished: true,
                    ..Default::default()
                },
            );
        } else {
            done(&conn, a.id, t);
        }
    }

    // LS-B: two learned, one MISLABELED, one being learned, one failing at `attached`.
    let tb = plan(&conn, &run, &b, "curated");
    done(&conn, b.id, tb[0]);
    done(&conn, b.id, tb[1]);
    step(
        &conn,
        b.id,
        tb[2],
        StepPatch {
            step: Some("mislabeled".into()),
            mode: Some("criteria".into()),
            learning_status: Some("completed".into()),
            error: Some(Some(
                "MISLABELED: the verifier said failed but Acontext marked the task success; it is being learned with the wrong label"
                    .into(),
            )),
            finished: true,
            ..Default::default()
        },
    );
    step(
        &conn,
        b.id,
        tb[4],
        StepPatch {
            step: Some("attached".into()),
            tries: Some(2),
            error: Some(Some(
                "storing the messages failed: HTTP 500 internal error".into(),
            )),
            ..Default::default()
        },
    );
    step(
        &conn,
        b.id,
        tb[3],
        StepPatch {
            step: Some("labeled".into()),
            mode: Some("criteria".into()),
            learning_status: Some("distilling".into()),
            ..Default::default()
        },
    );

    // Skill versions.
    let curated = version(
        "curated",
        "mesh-analysis",
        "Measure the volume and mass of STL meshes",
        vec![
            file("SKILL.md", CURATED_SKILL_MD),
            file("scripts/volume.py", VOLUME_PY),
        ],
    );
    let learned = version(
        "learned",
        "mesh-analysis",
        "Measure the volume and mass of STL meshes",
        vec![
            file("SKILL.md", LEARNED_SKILL_MD),
            file(
                "references/density.md",
                "# Densities\n\n| material | g/cm³ |\n|---|---|\n| PLA | 1.24 |\n| ABS | 1.04 |\n",
            ),
            file("scripts/volume.py", VOLUME_PY),
        ],
    );
    let pandas_md = "---\nname: pandas-basics\ndescription: Read and reshape tables with pandas\n---\n# pandas basics\n\nPrefer `pd.read_csv(..., dtype=str)` and convert columns explicitly.\n";
    let pandas = |origin: &str| {
        version(
            origin,
            "pandas-basics",
            "Read and reshape tables with pandas",
            vec![file("SKILL.md", pandas_md)],
        )
    };
    let units_md = "---\nname: verify-units\ndescription: Check units before computing\n---\n# Verify units\n\n## Avoid unit mix-ups (date: 2026-11-21)\n- Symptom: Results off by a power of ten.\n- Root Cause: Inputs in different units.\n- Correct Approach: Normalize every input to SI first.\n- Prevention: Assert the units in the script.\n";
    for v in [
        curated,
        learned,
        pandas("curated"),
        pandas("learned"),
        version(
            "learned",
            "verify-units",
            "Check units before computing",
            vec![file("SKILL.md", units_md)],
        ),
    ] {
        lq::record_version(&conn, b.id, &v).unwrap();
    }
    let stl_md = "---\nname: stl-mass\ndescription: Mass of a scanned part\n---\n# STL mass\n\n## Solve 3d-scan-calc (date: 2026-11-21)\n- Principle: Use numpy-stl for the volume.\n- When to Apply: Mass of a mesh.\n- Steps: 1. Load the mesh 2. get_mass_properties 3. Multiply by density\n";
    lq::record_version(
        &conn,
        a.id,
        &version(
            "learned",
            "stl-mass",
            "Mass of a scanned part",
            vec![file("SKILL.md", stl_md)],
        ),
    )
    .unwrap();

    // Provenance and exports.
    lq::add_source(&conn, b.id, "mesh-analysis", tb[0], "updated").unwrap();
    lq::add_source(&conn, b.id, "mesh-analysis", tb[2], "updated").unwrap();
    lq::add_source(&conn, b.id, "verify-units", tb[1], "created").unwrap();
    lq::add_source(&conn, a.id, "stl-mass", ta[0], "created").unwrap();
    lq::add_export(&conn, a.id, "/data/exports/demo/LS-A-v1", 1, &[]).unwrap();
    lq::add_export(&conn, b.id, "/data/exports/demo/LS-B-v1", 3, &[]).unwrap();

    store.writer().stop();
    let a = lq::get_space(&conn, a.id).unwrap();
    let b = lq::get_space(&conn, b.id).unwrap();
    Learning {
        dir,
        conn,
        run,
        a,
        b,
    }
}

/// Round 2 of the fixture's experiment: run `demo-round2` with A' = `skills:…/LS-A-v1` and
/// B' = `skills:…/LS-B-v1` on the same 6 tasks × 2 trials, 9 of 12 trials per condition
/// finished (seed 11, fixed clock).
pub fn round2(conn: &Connection) -> RunRow {
    fill_store(
        conn,
        &SyntheticRun {
            name: "demo-round2".into(),
            tasks: 6,
            trials: 2,
            conditions: vec![
                "skills:/data/exports/demo/LS-A-v1".into(),
                "skills:/data/exports/demo/LS-B-v1".into(),
            ],
            done_fraction: 0.75,
            seed: 11,
        },
    )
    .unwrap()
}

/// Skill invocations in `runs`' finished trials with skills, with deterministic trajectory facts
/// (tool calls, tokens, error steps, closing message, CTRF tests): every B and B' trial reads
/// `mesh-analysis` (and its second trials `pandas-basics` too), every A' trial `stl-mass`;
/// `verify-units` is never invoked. Returns the number of invocations.
pub fn invoke_skills(conn: &Connection, runs: &[&RunRow]) -> usize {
    let mut n = 0;
    for run in runs {
        for t in queries::current_trials(conn, run.id).unwrap() {
            if t.status != skillscope::store::TrialStatus::Done || t.condition == "no-skills" {
                continue;
            }
            let mut skills = Vec::new();
            if t.condition == "curated" || t.condition.ends_with("LS-B-v1") {
                skills.push("mesh-analysis");
                if t.trial_index == 2 {
                    skills.push("pandas-basics");
                }
            } else if t.condition.ends_with("LS-A-v1") {
                skills.push("stl-mass");
            }
            let uses: Vec<skillscope::store::SkillUseRow> = skills
                .iter()
                .map(|s| skillscope::store::SkillUseRow {
                    skill: (*s).into(),
                    kind: "read".into(),
                    first_step: Some(2),
                    count: 1,
                })
                .collect();
            n += uses.len();
            queries::set_skill_uses(conn, t.id, &uses).unwrap();
            let passed = t.outcome == Some(Outcome::Pass);
            queries::patch_trial(
                conn,
                t.id,
                &queries::TrialPatch {
                    n_tool_calls: Some(2 + t.id % 6),
                    n_input_tokens: Some(600 + 150 * (t.id % 5)),
                    n_output_tokens: Some(120),
                    n_error_steps: Some(t.id % 3),
                    final_message: Some(t.id % 2 == 0),
                    tests_total: Some(4),
                    tests_passed: Some(if passed { 4 } else { t.id % 3 }),
                    ..Default::default()
                },
            )
            .unwrap();
        }
    }
    n
}
