//! `skillscope report`: the Markdown (snapshots, on the published Gemini 3 Flash run and on a
//! small run with skill invocations), every chart a valid non-blank PNG, JSON and CSV carrying the
//! same numbers, untrusted names escaped, and write errors naming the path.

use crate::support::common;
use crate::support::common::Scratch;
use common::shared;
use std::path::{Path, PathBuf};

use crate::support::planned_run::{PlannedRun, RunPlan, empty_store};
use rusqlite::Connection;
use skillscope::analysis::results::Scoring;
use skillscope::analysis::results::Selection;
use skillscope::import::{ImportOptions, import};
use skillscope::report::{self, Format, Report, charts, markdown};
use skillscope::store::queries::{self, TrialPatch};
use skillscope::store::{Outcome, SkillUseRow, Store, TrialStatus};

const FIXED_TIME: &str = "2026-11-21T12:00:00Z";

fn flash_csv() -> PathBuf {
    shared()
        .join("skillsbench/published/shenghan/experiment_runs__gemini-cli-gemini3flash_subset.csv")
}

/// A store holding the published Gemini 3 Flash per-trial CSV.
fn flash_store() -> (tempfile::TempDir, Connection) {
    imported_store(flash_csv())
}

/// A store holding the published result file `file`.
fn imported_store(file: PathBuf) -> (tempfile::TempDir, Connection) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("r.db")).unwrap();
    let opts = ImportOptions {
        roots: vec![file],
        condition: None,
        run: None,
        catalog: skillscope::skillsbench::Catalog::shipped(),
        batch: 500,
    };
    import(&store, &opts).unwrap();
    let conn = store.connect().unwrap();
    store.writer().stop();
    (dir, conn)
}

fn flash_report(conn: &Connection) -> Report {
    let mut r = report::build(
        conn,
        &Selection::Runs(vec!["csv-gemini-cli-gemini3flash".into()]),
        &Scoring::default(),
    )
    .unwrap();
    r.results.generated_at = FIXED_TIME.into();
    r
}

#[test]
fn markdown_of_the_published_gemini_flash_run() {
    let (_d, conn) = flash_store();
    let r = flash_report(&conn);
    // The infrastructure failures are shown apart, with the Δ they move.
    let c = &r.results.conditions;
    assert_eq!(
        (c[0].condition.as_str(), c[0].infrastructure()),
        ("no-skills", 16)
    );
    assert_eq!(
        (c[1].condition.as_str(), c[1].infrastructure()),
        ("curated", 2)
    );
    let md = markdown::render(&r, &charts::plan(&r));
    assert!(
        md.contains("over trials with a verdict Δ = +12.5 pp"),
        "{md}"
    );
    insta::assert_snapshot!("flash_report_md", md);
}

/// Width, height and the share of pixels that are not white.
fn decode_png(path: &Path) -> (u32, u32, f64) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let bytes = &buf[..info.buffer_size()];
    let channels = info.color_type.samples();
    let pixels = bytes.len() / channels;
    let ink = bytes
        .chunks(channels)
        .filter(|p| p.iter().take(3).any(|v| *v < 250))
        .count();
    (info.width, info.height, ink as f64 / pixels as f64)
}

#[test]
fn every_format_is_written_and_carries_the_same_numbers() {
    let (_d, conn) = flash_store();
    let r = flash_report(&conn);
    let out = tempfile::tempdir().unwrap();
    let written = report::write(&r, out.path(), &[Format::Md, Format::Json, Format::Csv]).unwrap();
    assert!(written.files.iter().all(|f| f.exists()));

    // Every chart the Markdown names exists and is a real, non-blank image.
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    let specs = charts::plan(&r);
    assert_eq!(specs.len(), 4, "{specs:?}"); // pass rate, domains, one Δ chart, failures
    for s in &specs {
        assert!(md.contains(&format!("]({})", s.file)), "{}", s.file);
        let (w, h, ink) = decode_png(&out.path().join(&s.file));
        assert_eq!(w, 1000, "{}", s.file);
        assert!(h >= 240, "{}", s.file);
        assert!(ink > 0.02 && ink < 0.9, "{}: {ink}", s.file);
    }

    // JSON: the same numbers.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("report.json")).unwrap())
            .unwrap();
    for (i, c) in r.results.conditions.iter().enumerate() {
        assert_eq!(
            json["results"]["conditions"][i]["pass_rate"].as_f64(),
            Some(c.pass_rate)
        );
    }
    assert_eq!(
        json["results"]["comparisons"][0]["delta_pp"].as_f64(),
        r.results.comparisons[0].delta_pp
    );

    // CSV: the per-task table alone gives every condition's pass rate back, and its standard
    // error sd(per-task means)/√n beside the CI (and Δ's, sd of the paired differences/√n).
    let mut per_cond: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    let mut rd = csv::Reader::from_path(out.path().join("per_task.csv")).unwrap();
    for rec in rd.records() {
        let rec = rec.unwrap();
        per_cond
            .entry(rec[3].to_string())
            .or_default()
            .push(rec[4].parse::<f64>().unwrap());
    }
    let se = |x: &[f64]| {
        let n = x.len() as f64;
        let m = x.iter().sum::<f64>() / n;
        (x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0) / n).sqrt()
    };
    let mut rd = csv::Reader::from_path(out.path().join("conditions.csv")).unwrap();
    let head = rd.headers().unwrap().clone();
    let se_col = head.iter().position(|h| h == "se").unwrap();
    let mut n = 0;
    for rec in rd.records() {
        let rec = rec.unwrap();
        let means = &per_cond[&rec[0]];
        assert_eq!(means.len(), 86);
        let rate: f64 = rec[3].parse().unwrap();
        assert!(
            (means.iter().sum::<f64>() / 86.0 - rate).abs() < 1e-12,
            "{}",
            &rec[0]
        );
        let got: f64 = rec[se_col].parse().unwrap();
        assert!((got - se(means)).abs() < 1e-12, "{}: SE {got}", &rec[0]);
        n += 1;
    }
    assert_eq!(n, 2);
    let d: Vec<f64> = per_cond["curated"]
        .iter()
        .zip(&per_cond["no-skills"])
        .map(|(a, b)| a - b)
        .collect();
    let mut rd = csv::Reader::from_path(out.path().join("comparisons.csv")).unwrap();
    let head = rd.headers().unwrap().clone();
    let col = head.iter().position(|h| h == "delta_se_pp").unwrap();
    let rec = rd.records().next().unwrap().unwrap();
    let got: f64 = rec[col].parse().unwrap();
    assert!((got - se(&d) * 100.0).abs() < 1e-9, "Δ SE {got}");
    // In report.md the SE has its own column right after the CI's.
    assert!(md.contains(&format!("] | {:.1} |", se(&d) * 100.0)), "{md}");
    // The no-reward column holds the infrastructure failures.
    let text = std::fs::read_to_string(out.path().join("conditions.csv")).unwrap();
    let head: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let col = head.iter().position(|h| *h == "no_reward").unwrap();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!((rows[0][col], rows[1][col]), ("16", "2"));

    // Writing again replaces the files in place.
    report::write(&r, out.path(), &[Format::Md]).unwrap();
    assert_eq!(
        std::fs::read_to_string(out.path().join("report.md")).unwrap(),
        md
    );
}

/// An oracle run of `ids` (domains `domains`, difficulty medium) × `n_trials` under no-skills and
/// curated, every trial planned (queued).
fn planned_run(
    conn: &Connection,
    name: &str,
    n_trials: u32,
    ids: &[String],
    domains: &[&str],
) -> skillscope::store::RunRow {
    let tasks: Vec<(&str, &str, &str)> = ids
        .iter()
        .zip(domains)
        .map(|(id, d)| (id.as_str(), *d, "medium"))
        .collect();
    let plan = RunPlan {
        name,
        n_trials,
        tasks: &tasks,
        ..Default::default()
    };
    PlannedRun::new(conn, &plan).run
}

/// A run of two tasks × 6 trials under no-skills and curated, whose curated trials use skills.
fn skills_store(run_name: &str, task_ids: [&str; 2]) -> (Scratch, Connection) {
    let (dir, conn) = empty_store();
    let ids: Vec<String> = task_ids.iter().map(|s| s.to_string()).collect();
    let run = planned_run(
        &conn,
        run_name,
        6,
        &ids,
        &["Software Engineering", "Finance"],
    );
    for t in queries::current_trials(&conn, run.id).unwrap() {
        let curated = t.condition == "curated";
        let first = t.task_id == task_ids[0];
        // Curated passes 5 of 6 on the first task, 3 of 6 on the second; no-skills 2 and 1.
        let passes = match (curated, first) {
            (true, true) => t.trial_index <= 5,
            (true, false) => t.trial_index <= 3,
            (false, true) => t.trial_index <= 2,
            (false, false) => t.trial_index <= 1,
        };
        let minute = t.trial_index;
        queries::finish_trial(
            &conn,
            t.id,
            &TrialPatch {
                status: Some(TrialStatus::Done),
                outcome: Some(if passes { Outcome::Pass } else { Outcome::Fail }),
                reward: Some(if passes { 1.0 } else { 0.0 }),
                n_input_tokens: Some(2_000),
                n_output_tokens: Some(500),
                n_tool_calls: Some(8),
                n_error_steps: Some(if passes { 0 } else { 2 }),
                final_message: Some(true),
                tests_total: Some(4),
                tests_passed: Some(if passes { 4 } else { 1 }),
                started_at: Some(format!("2026-11-20T10:{minute:02}:00Z")),
                agent_started_at: Some(format!("2026-11-20T10:{minute:02}:05Z")),
                agent_finished_at: Some(format!("2026-11-20T10:{minute:02}:45Z")),
                finished_at: Some(format!("2026-11-20T10:{minute:02}:50Z")),
                ..Default::default()
            },
        )
        .unwrap();
        if curated {
            let skill = if first { "ledger-mapping" } else { "fx-rates" };
            queries::set_skill_uses(
                &conn,
                t.id,
                &[SkillUseRow {
                    skill: skill.into(),
                    kind: "read".into(),
                    first_step: Some(1),
                    count: 1,
                }],
            )
            .unwrap();
        }
    }
    (dir, conn)
}

#[test]
fn the_skill_section_scores_the_invocations() {
    let (_d, conn) = skills_store("skills-run", ["ledger", "fx"]);
    let mut r = report::build(
        &conn,
        &Selection::Runs(vec!["skills-run".into()]),
        &Scoring::default(),
    )
    .unwrap();
    r.results.generated_at = FIXED_TIME.into();
    // 12 curated trials, one skill each.
    assert_eq!(r.skills.invocations, 12);
    assert_eq!(r.skills.scores.len(), 2);
    assert_eq!(r.skills.leaderboard.len(), 2);
    // The window is anchored at the last invocation.
    assert_eq!(
        r.skills.window.reference.as_deref(),
        Some("2026-11-20 10:06:50")
    );
    let specs = charts::plan(&r);
    assert!(specs.iter().any(|s| s.kind == charts::ChartKind::Skills));
    let out = tempfile::tempdir().unwrap();
    report::write(&r, out.path(), &[Format::Md, Format::Csv]).unwrap();
    let (_, _, ink) = decode_png(&out.path().join("charts/skills.png"));
    assert!(ink > 0.02, "{ink}");
    let skills_csv = std::fs::read_to_string(out.path().join("skills.csv")).unwrap();
    assert_eq!(skills_csv.lines().count(), 3, "{skills_csv}");
    insta::assert_snapshot!("skills_report_md", markdown::render(&r, &specs));
}

#[test]
fn untrusted_names_cannot_break_the_markdown() {
    let evil_run = "evil|run <script>alert(1)</script>\x1b[2J";
    let (_d, conn) = skills_store(evil_run, ["t|1\x1b]0;pwned\x07", "[x](javascript:0)"]);
    let r = report::build(
        &conn,
        &Selection::Runs(vec![evil_run.into()]),
        &Scoring::default(),
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    report::write(&r, out.path(), &[Format::Md, Format::Csv]).unwrap();
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(!md.contains('\x1b') && !md.contains('\x07'));
    assert!(!md.contains("<script>"));
    assert!(!md.contains("[x](javascript"));
    // Every table row has as many cells as its header.
    let mut expected = None;
    for line in md.lines() {
        if !line.starts_with('|') {
            expected = None;
            continue;
        }
        let cells = line.replace("\\|", "").matches('|').count();
        match expected {
            None => expected = Some(cells),
            Some(n) => assert_eq!(cells, n, "{line}"),
        }
    }
    for s in charts::plan(&r) {
        let (_, _, ink) = decode_png(&out.path().join(&s.file));
        assert!(ink > 0.01, "{}", s.file);
    }
    let csv_text = std::fs::read_to_string(out.path().join("task_changes.csv")).unwrap();
    assert!(!csv_text.contains('\x1b'));
}

/// `report --format F` for each format alone, each in a fresh process: the HTML report once
/// failed with `FontUnavailable` when no PNG chart had registered the embedded font before it
/// (plotters draws only with registered fonts, so no system font can stand in: this is the
/// fresh machine's case), and `html,json` failed the same way.
#[test]
fn each_format_alone_is_written_by_a_fresh_process() {
    let s = Scratch::new();
    let opts = ImportOptions {
        roots: vec![flash_csv()],
        condition: None,
        run: None,
        catalog: skillscope::skillsbench::Catalog::shipped(),
        batch: 500,
    };
    import(&s.store, &opts).unwrap();
    s.store.writer().stop();
    let cases: [(&str, &[&str]); 6] = [
        ("html", &["report.html"]),
        ("json", &["report.json"]),
        ("csv", &["conditions.csv"]),
        ("leaderboard", &["leaderboard.json"]),
        ("md", &["report.md", "charts/pass_rate.png"]),
        ("html,json", &["report.html", "report.json"]),
    ];
    for (format, files) in cases {
        let out = format!("out-{format}");
        let o = common::skillscope(&s, &["report", "--format", format, "--out", &out]);
        assert!(
            o.status.success(),
            "--format {format}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        for f in files {
            let path = s.dir.path().join(&out).join(f);
            assert!(
                path.is_file(),
                "--format {format} wrote no {}",
                path.display()
            );
        }
    }
    let html = std::fs::read_to_string(s.dir.path().join("out-html/report.html")).unwrap();
    assert!(html.contains("<svg"), "the charts are inline SVG");
}

#[test]
fn an_unwritable_folder_is_named() {
    let (_d, conn) = flash_store();
    let r = flash_report(&conn);
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("not-a-folder");
    std::fs::write(&blocker, "x").unwrap();
    let err = report::write(&r, &blocker.join("out"), &[Format::Json]).unwrap_err();
    assert!(err.to_string().contains("not-a-folder"), "{err}");
}

/// A stopped run whose latest attempts show every failure mode, one trial still queued and one
/// never planned into a row: the report is interim and every format is written (the failure-mode
/// chart once ran out of colours for the eighth mode and panicked).
#[test]
fn a_stopped_run_with_every_failure_mode_reports_interim_results() {
    let (_dir, conn) = empty_store();
    let ids: Vec<String> = (1..=5).map(|i| format!("t{i}")).collect();
    let domains = ["Finance"; 5];
    let run = planned_run(&conn, "stopped", 2, &ids, &domains);
    let outcomes = [
        (Outcome::Pass, Some(1.0)),
        (Outcome::Fail, Some(0.0)),
        (Outcome::AgentTimeout, Some(0.0)),
        (Outcome::VerifierTimeout, None),
        (Outcome::RuntimeError, None),
        (Outcome::BuildError, None),
        (Outcome::NoReward, None),
        (Outcome::ProviderError, None),
        (Outcome::Cancelled, None),
    ];
    let trials = queries::current_trials(&conn, run.id).unwrap();
    // 20 planned rows: the first 9 get the outcomes above, the rest stay queued.
    for (t, (o, reward)) in trials.iter().zip(outcomes) {
        queries::finish_trial(
            &conn,
            t.id,
            &TrialPatch {
                outcome: Some(o),
                reward,
                ..Default::default()
            },
        )
        .unwrap();
    }
    conn.execute("UPDATE runs SET status = 'stopped' WHERE id = ?1", [run.id])
        .unwrap();
    let r = report::build(
        &conn,
        &Selection::Runs(vec!["stopped".into()]),
        &Scoring::default(),
    )
    .unwrap();
    let res = &r.results;
    let interim = res.interim.as_ref().expect("a stopped run is interim");
    assert_eq!(interim.planned, 20);
    // The cancelled one did not run: 8 done, not 9 (issue 36).
    assert_eq!(interim.done, 8);
    // Pass, fail, agent and verifier timeout have a verdict.
    assert_eq!(interim.judged, 4);
    let modes: usize = res
        .conditions
        .iter()
        .flat_map(|c| c.failures.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    assert_eq!(modes, 8, "every failure mode is present");
    let out = tempfile::tempdir().unwrap();
    report::write(&r, out.path(), &[Format::Md, Format::Json, Format::Csv]).unwrap();
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(md.contains("(interim)"), "{md}");
    assert!(
        md.contains("run stopped is stopped; 4 of 20 planned trials judged (8 finished)"),
        "{md}"
    );
    let (_, _, ink) = decode_png(&out.path().join("charts/failures.png"));
    assert!(ink > 0.02, "{ink}");
    // Its charts say interim, in their titles as drawn and as alt text.
    for spec in charts::plan(&r) {
        assert!(spec.title.ends_with("(interim)"), "{}", spec.title);
        let drawn = charts::render_with_text(&r, &spec).unwrap();
        assert!(
            drawn.text.iter().any(|t| t.text.contains("(interim)")),
            "{}: {:?}",
            spec.file,
            drawn.text
        );
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("report.json")).unwrap())
            .unwrap();
    assert_eq!(json["results"]["interim"]["judged"], 4);
}

/// Every text of every chart lies inside its image and no two texts overlap: nothing is clipped
/// (value labels at 100 %, long condition names) or drawn over another label. Checked on the
/// published results registry (18 runs, 36 conditions with long names, 12 domains, 87 tasks), the
/// Gemini 3 Flash run and a run with skill scores.
#[test]
fn every_chart_keeps_its_text_inside_the_image() {
    let (_r, conn) =
        imported_store(shared().join("skillsbench/published/website-data/results-registry.json"));
    let runs: Vec<String> = queries::list_runs(&conn)
        .unwrap()
        .into_iter()
        .rev()
        .map(|r| r.name)
        .collect();
    assert_eq!(runs.len(), 18);
    let registry = report::build(&conn, &Selection::Runs(runs), &Scoring::default()).unwrap();
    let (_f, flash_conn) = flash_store();
    let flash = flash_report(&flash_conn);
    let (_s, skills_conn) = skills_store("skills-run", ["ledger", "fx"]);
    let skills = report::build(
        &skills_conn,
        &Selection::Runs(vec!["skills-run".into()]),
        &Scoring::default(),
    )
    .unwrap();

    // Every condition is drawn: the registry's 36 conditions on 5 pages of the domain chart,
    // one Δ chart per comparison.
    let specs = charts::plan(&registry);
    let domain_pages = specs
        .iter()
        .filter(|s| matches!(s.kind, charts::ChartKind::Domains(_)))
        .count();
    assert_eq!(domain_pages, 5);
    let deltas = specs
        .iter()
        .filter(|s| matches!(s.kind, charts::ChartKind::TaskDeltas(_)))
        .count();
    assert_eq!(deltas, registry.results.comparisons.len());

    // A run whose curated trials all pass: its value label sits at 100 %.
    let (_dir100, conn100) = empty_store();
    let ids: Vec<String> = (1..=3).map(|i| format!("task-{i}")).collect();
    let run = planned_run(
        &conn100,
        "all-pass",
        1,
        &ids,
        &["Finance", "Energy", "Energy"],
    );
    for t in queries::current_trials(&conn100, run.id).unwrap() {
        let pass = t.condition == "curated";
        queries::finish_trial(
            &conn100,
            t.id,
            &TrialPatch {
                outcome: Some(if pass { Outcome::Pass } else { Outcome::Fail }),
                reward: Some(if pass { 1.0 } else { 0.0 }),
                ..Default::default()
            },
        )
        .unwrap();
    }
    let full = report::build(
        &conn100,
        &Selection::Runs(vec!["all-pass".into()]),
        &Scoring::default(),
    )
    .unwrap();
    assert_eq!(full.results.conditions[1].pass_rate, 1.0);

    let mut checked = 0;
    let mut skill_charts = 0;
    for r in [&registry, &flash, &skills, &full] {
        for spec in charts::plan(r) {
            let out = charts::render_with_text(r, &spec).unwrap();
            assert!(!out.text.is_empty(), "{}", spec.file);
            for t in &out.text {
                assert!(
                    t.inside(out.width, out.height),
                    "{}: {:?} reaches outside {}x{}",
                    spec.file,
                    t,
                    out.width,
                    out.height
                );
            }
            if spec.kind == charts::ChartKind::Skills {
                skill_charts += 1;
                // Each score-threshold line is labelled with its tier and score.
                for label in [
                    "Poor ≥20",
                    "Below Average ≥40",
                    "Acceptable ≥60",
                    "Good ≥75",
                    "Excellent ≥90",
                ] {
                    assert!(
                        out.text.iter().any(|t| t.text == label),
                        "{}: no {label} in {:?}",
                        spec.file,
                        out.text
                    );
                }
            }
            for (i, a) in out.text.iter().enumerate() {
                for b in &out.text[i + 1..] {
                    let overlap = a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
                    assert!(!overlap, "{}: {a:?} overlaps {b:?}", spec.file);
                }
            }
            checked += 1;
        }
    }
    assert!(checked > 30, "{checked}");
    assert!(skill_charts > 0, "no skills chart was drawn");

    // Task-level charts name their tasks.
    let spec = specs
        .iter()
        .find(|s| matches!(s.kind, charts::ChartKind::TaskDeltas(_)))
        .unwrap();
    let out = charts::render_with_text(&registry, spec).unwrap();
    let changed = registry
        .results
        .task_deltas
        .iter()
        .filter(|t| matches!(&spec.kind, charts::ChartKind::TaskDeltas(n) if *n == t.comparison))
        .filter(|t| t.delta_pp.is_some_and(|d| d.abs() > 1e-7))
        .collect::<Vec<_>>();
    assert!(!changed.is_empty());
    for t in changed {
        assert!(
            out.text.iter().any(|b| b.text == t.task),
            "{} not named",
            t.task
        );
    }
}

/// The cells of the rows of table `id` in `html`, as text (entities decoded for `&`).
fn html_rows(html: &str, id: &str) -> Vec<Vec<String>> {
    let dom = tl::parse(html, tl::ParserOptions::default()).unwrap();
    let parser = dom.parser();
    let table = dom
        .get_element_by_id(report::html::table_id(id).as_str())
        .unwrap_or_else(|| panic!("no table #{id} in report.html"))
        .get(parser)
        .unwrap();
    let mut rows = Vec::new();
    for tr in table
        .as_tag()
        .unwrap()
        .query_selector(parser, "tr")
        .unwrap()
    {
        let tr = tr.get(parser).unwrap().as_tag().unwrap();
        let cells: Vec<String> = tr
            .query_selector(parser, "td")
            .unwrap()
            .map(|td| {
                td.get(parser)
                    .unwrap()
                    .inner_text(parser)
                    .replace("&amp;", "&")
                    .to_string()
            })
            .collect();
        // The header row has no td.
        if !cells.is_empty() {
            rows.push(cells);
        }
    }
    rows
}

/// One model, five renderers: every number of the conditions and comparisons tables that CSV,
/// Markdown, HTML, the terminal and the dashboard all show reads the same in each — the human
/// ones as `crate::format` writes it, CSV at full precision parsing back to the same value.
#[test]
fn one_model_renders_the_same_numbers_in_every_format() {
    use skillscope::commands::shared::table::model_table;
    use skillscope::report::model::{self, View};
    let (_d, conn) = flash_store();
    let r = flash_report(&conn);
    let out = tempfile::tempdir().unwrap();
    report::write(&r, out.path(), &Format::DEFAULT).unwrap();
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    let doc = model::document(&r);
    let theme = skillscope::tui::theme::Theme::default_theme();
    let mut checked = 0;
    for name in ["conditions", "comparisons"] {
        let t = doc.table(name).unwrap();
        let every = [
            View::Csv,
            View::Markdown,
            View::Html,
            View::Terminal,
            View::Dashboard,
        ];
        let cols: Vec<usize> = (0..t.columns.len())
            .filter(|&i| t.columns[i].numeric && every.iter().all(|v| t.shown(*v).contains(&i)))
            .collect();
        assert!(cols.len() >= 2, "{name}: {cols:?}");
        let terminal = model_table(t, None).to_string();
        let dashboard: Vec<String> = skillscope::tui::widgets::table::draw(&theme, t, 400, 0)
            .lines
            .iter()
            .map(|l| l.to_string())
            .collect();
        let html_rows = html_rows(&html, name);
        let html_cols = t.shown(View::Html);
        let mut rd = csv::Reader::from_path(out.path().join(format!("{name}.csv"))).unwrap();
        let head = rd.headers().unwrap().clone();
        let csv_rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
        for (k, row) in t.rows.iter().enumerate() {
            let label = row.cells[0].value.human(true);
            let md_line = md
                .lines()
                .find(|l| l.starts_with(&format!("| {label} |")))
                .unwrap_or_else(|| panic!("no Markdown row {label}"));
            let term_line = terminal
                .lines()
                .find(|l| l.contains(&label))
                .unwrap_or_else(|| panic!("no terminal row {label}:\n{terminal}"));
            let dash_line = dashboard
                .iter()
                .find(|l| l.contains(&label))
                .unwrap_or_else(|| panic!("no dashboard row {label}"));
            for &i in &cols {
                let v = &row.cells[i].value;
                if v.undefined_reason().is_some() || v.sort_key().is_none() {
                    continue;
                }
                let shown = v.human(false);
                assert!(
                    md_line.contains(&format!("| {shown} |")),
                    "md {shown}: {md_line}"
                );
                assert!(term_line.contains(&shown), "terminal {shown}: {term_line}");
                assert!(dash_line.contains(&shown), "dashboard {shown}: {dash_line}");
                let h = html_cols.iter().position(|c| *c == i).unwrap();
                assert_eq!(html_rows[k][h].trim(), shown, "html {name} row {k}");
                // CSV: the first field of the column parses back to the model's number.
                let key = &t.columns[i].csv[0];
                let at = head.iter().position(|x| x == key).unwrap();
                let got: f64 = csv_rows[k][at].parse().unwrap();
                assert!(
                    (got - v.sort_key().unwrap()).abs() < 1e-12,
                    "csv {key}: {got}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 10, "{checked} numbers compared");
    // JSON is the model's source: the same pass rates.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("report.json")).unwrap())
            .unwrap();
    for (i, c) in r.results.conditions.iter().enumerate() {
        assert_eq!(
            json["results"]["conditions"][i]["pass_rate"].as_f64(),
            Some(c.pass_rate)
        );
        assert!(html.contains(&skillscope::format::rate(c.pass_rate)));
    }
}

/// A run left `running` by a killed engine (heartbeat old, owner on another host): its interim
/// report says stale, as `status` does — never "is running" (issue 36). A run still open with
/// every planned trial finished is not interim; a finished run whose operator cancelled a trial
/// is not either, and the cancelled trial is not counted done.
#[test]
fn interim_reports_say_stale_and_cancelled_trials_are_not_done() {
    let (_dir, conn) = empty_store();
    let ids: Vec<String> = (1..=3).map(|i| format!("t{i}")).collect();
    let run = planned_run(&conn, "killed", 1, &ids, &["Finance"; 3]);
    let trials = queries::current_trials(&conn, run.id).unwrap();
    // One trial finished, the rest were queued when the engine died.
    queries::finish_trial(
        &conn,
        trials[0].id,
        &TrialPatch {
            status: Some(TrialStatus::Done),
            outcome: Some(Outcome::Pass),
            reward: Some(1.0),
            ..Default::default()
        },
    )
    .unwrap();
    conn.execute(
        "UPDATE runs SET status = 'running', owner_pid = 1, owner_host = 'gone-host',
         heartbeat_at = '2026-11-01T00:00:00.000Z' WHERE id = ?1",
        [run.id],
    )
    .unwrap();
    let scoring = Scoring {
        as_of: Some(chrono::Utc::now()),
        ..Scoring::default()
    };
    let sel = Selection::Runs(vec!["killed".into()]);
    let r = report::build(&conn, &sel, &scoring).unwrap();
    let said = r.results.interim.as_ref().expect("interim").describe();
    assert!(said.contains("run killed is stale"), "{said}");
    assert!(!said.contains("is running"), "{said}");
    let md = markdown::render(&r, &[]);
    assert!(md.contains("is stale"), "{md}");

    // Every trial finished, the run still open for retries: not interim.
    for t in &trials[1..] {
        queries::finish_trial(
            &conn,
            t.id,
            &TrialPatch {
                status: Some(TrialStatus::Done),
                outcome: Some(Outcome::Fail),
                reward: Some(0.0),
                ..Default::default()
            },
        )
        .unwrap();
    }
    let r = report::build(&conn, &sel, &scoring).unwrap();
    assert!(r.results.interim.is_none(), "{:?}", r.results.interim);

    // Finished with one trial cancelled (while queued): complete, and 5 of 6 done.
    queries::finish_trial(
        &conn,
        trials[1].id,
        &TrialPatch {
            status: Some(TrialStatus::Done),
            outcome: Some(Outcome::Cancelled),
            reward: None,
            ..Default::default()
        },
    )
    .unwrap();
    conn.execute(
        "UPDATE runs SET status = 'finished' WHERE id = ?1",
        [run.id],
    )
    .unwrap();
    let r = report::build(&conn, &sel, &scoring).unwrap();
    assert!(r.results.interim.is_none());
    let done: usize = r.results.conditions.iter().map(|c| c.done).sum();
    let planned: usize = r.results.conditions.iter().map(|c| c.planned).sum();
    assert_eq!((done, planned), (planned - 1, 6));
}

/// report.html gives each chart's title once — as the figure's caption, the SVG drawn without
/// it (issue 48: the caption appeared twice) — and every heading an id with a `#` link to it,
/// the ids unique (issue 48: no heading could be linked to).
#[test]
fn the_html_report_titles_each_chart_once_and_anchors_every_heading() {
    let (_d, conn) = flash_store();
    let r = flash_report(&conn);
    let out = tempfile::tempdir().unwrap();
    report::write(&r, out.path(), &[Format::Html]).unwrap();
    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    let specs = charts::plan(&r);
    assert!(specs.len() >= 3, "{specs:?}");
    for spec in &specs {
        let title = report::html::escape(&spec.title);
        assert_eq!(
            html.matches(&title).count(),
            1,
            "{title:?} once in report.html"
        );
        assert!(
            html.contains(&format!("<figure><figcaption>{title}</figcaption><svg")),
            "{title:?} captions its chart"
        );
    }
    let dom = tl::parse(&html, tl::ParserOptions::default()).unwrap();
    let parser = dom.parser();
    let mut ids = std::collections::BTreeSet::new();
    let mut headings = 0;
    for tag in ["h2", "h3", "h4"] {
        for h in dom.query_selector(tag).unwrap() {
            let h = h.get(parser).unwrap().as_tag().unwrap();
            let id = h
                .attributes()
                .id()
                .map(|i| i.as_utf8_str().into_owned())
                .unwrap_or_else(|| panic!("a {tag} without an id: {}", h.inner_text(parser)));
            assert!(ids.insert(id.clone()), "id {id} twice");
            assert!(
                h.inner_html(parser).contains(&format!("href=\"#{id}\"")),
                "{tag}#{id} links to itself"
            );
            headings += 1;
        }
    }
    assert!(headings >= 8, "{headings}");
    assert!(ids.contains("pass-rate-per-condition"), "{ids:?}");
    // No id twice on the page: tables have ids of their own (`conditions-table`).
    let mut every = std::collections::BTreeSet::new();
    for (at, _) in html.match_indices(" id=\"") {
        let id = html[at + 5..].split('"').next().unwrap();
        assert!(every.insert(id.to_string()), "id {id} twice on the page");
    }
    assert!(every.contains("conditions-table"), "{every:?}");
}

/// The pass-rate chart's value label sits at the end of its bar, not at the end of the CI
/// whisker (issue 48): just left of every label the bar's colour is drawn, also where the
/// interval reaches far past the bar.
#[test]
fn a_pass_rate_label_sits_at_the_end_of_its_bar() {
    let (_d, conn) = flash_store();
    let r = flash_report(&conn);
    let spec = charts::plan(&r)
        .into_iter()
        .find(|s| s.kind == charts::ChartKind::PassRate)
        .unwrap();
    let drawn = charts::render_with_text(&r, &spec).unwrap();
    let decoder = png::Decoder::new(std::io::Cursor::new(&drawn.png));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let pixel = |x: i32, y: i32| {
        let i = (y as usize * info.width as usize + x as usize) * channels;
        (buf[i], buf[i + 1], buf[i + 2])
    };
    let mut wide = 0;
    for c in &r.results.conditions {
        let label = format!("{:.1}%", c.pass_rate * 100.0);
        let b = drawn
            .text
            .iter()
            .find(|t| t.text == label)
            .unwrap_or_else(|| panic!("no label {label}: {:?}", drawn.text));
        let y = (b.y0 + b.y1) / 2;
        // A bar pixel is coloured: not white, not the black whisker, not the grey grid.
        let bar = (b.x0 - 12..b.x0).any(|x| {
            let (r, g, bl) = pixel(x, y);
            !(r == g && g == bl)
        });
        assert!(bar, "{label}: no bar just left of its label ({b:?})");
        if c.ci.is_some_and(|ci| ci.high - c.pass_rate > 0.05) {
            wide += 1;
        }
    }
    assert!(wide > 0, "some interval reaches past its bar");
}
