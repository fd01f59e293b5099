//! Snapshots of every dashboard view at 80×24 and 120×40, drawn from a store filled through the
//! store API (a synthetic run on a fixed clock) — `cargo insta review` shows changes.

use crate::support::common::Scratch;
use crate::support::{dashboard, learning_fixture};
use std::path::PathBuf;
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use skillscope::harbor::atif::Trajectory;
use skillscope::perf::synthetic::SyntheticRun;
use skillscope::store::{SkillUseRow, Store};
use skillscope::tui::app::{App, Effect, Mode};
use skillscope::tui::theme::Theme;
use skillscope::tui::views;
use skillscope::tui::worker::analysis::{load_results, load_rubric};
use skillscope::tui::worker::{
    Detail, LogFile, Request, Update, load_detail, load_skills, load_snapshot, render_trajectory,
};

const SIZES: [(u16, u16); 3] = [(60, 15), (80, 24), (120, 40)];

/// A short ATIF trajectory in the shape SkillsBench runs produce.
const TRAJECTORY: &str = r#"{"schema_version":"ATIF-v1.2","agent":{"name":"gemini-cli","version":"unknown","model_name":"gemini-3-flash-preview"},
 "steps":[{"step_id":1,"timestamp":"2026-11-21T10:00:01Z","source":"user","message":"Calculate the mass of the part in /root/scan_data.stl."},
  {"step_id":2,"timestamp":"2026-11-21T10:00:04Z","source":"agent","message":"I will read the mesh-analysis skill first.",
   "tool_calls":[{"tool_call_id":"c1","function_name":"read_file","arguments":{"file_path":"/root/.claude/skills/mesh-analysis/SKILL.md"}}],
   "observation":{"results":[{"source_call_id":"c1","content":"---\nname: mesh-analysis\n---\n# Mesh analysis\nUse scripts/volume.py"}]}},
  {"step_id":3,"timestamp":"2026-11-21T10:00:09Z","source":"agent","message":"Running the volume script.",
   "tool_calls":[{"tool_call_id":"c2","function_name":"run_shell_command","arguments":{"command":"python3 /root/.claude/skills/mesh-analysis/scripts/volume.py scan_data.stl"}}],
   "observation":{"results":[{"source_call_id":"c2","content":"Output: volume 6.24 cm3\nExit Code: 0"}]}},
  {"step_id":4,"timestamp":"2026-11-21T10:00:12Z","source":"agent","message":"The mass is 34.65 g."}]}"#;

fn now() -> chrono::DateTime<chrono::Utc> {
    dashboard::clock()
}

/// An app showing a synthetic run of 12 tasks × 2 conditions × 3 trials, 70 % done.
fn app_with(theme: &str) -> (Scratch, App) {
    synthetic_app(
        theme,
        SyntheticRun {
            name: "snapshot-run".into(),
            tasks: 12,
            trials: 3,
            ..Default::default()
        },
        |_, _| {},
    )
}

/// An app showing the synthetic run `spec`, after `edit` changed the store.
fn synthetic_app(
    theme: &str,
    spec: SyntheticRun,
    edit: impl FnOnce(&rusqlite::Connection, &skillscope::store::RunRow),
) -> (Scratch, App) {
    let f = dashboard::filled(&spec);
    edit(&f.conn, &f.run);
    let app = dashboard::watching(&f.conn, f.run.id, Mode::Watch, theme, now());
    (f.scratch, app)
}

fn key(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}

fn render(app: &mut App, (w, h): (u16, u16)) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| views::draw(f, app)).unwrap();
    t.backend().to_string()
}

fn snap(name: &str, app: &mut App) {
    for size in SIZES {
        insta::assert_snapshot!(format!("{name}_{}x{}", size.0, size.1), render(app, size));
    }
}

/// Opens the detail of the trial under the cursor with fixed logs (the store gives the attempts).
fn open_detail(app: &mut App, dir: &Scratch, logs: Vec<LogFile>) {
    open_detail_with(app, dir, logs, Vec::new());
}

fn open_detail_with(app: &mut App, dir: &Scratch, logs: Vec<LogFile>, uses: Vec<SkillUseRow>) {
    let effects = app.on_key(key(KeyCode::Enter));
    assert_eq!(
        effects.len(),
        1,
        "Enter on a trial asks the worker for its detail"
    );
    let conn = Store::open_existing(&dir.db()).unwrap();
    let det = app.detail.as_ref().unwrap();
    let run_id = app.snapshot.as_ref().unwrap().run.id;
    let mut d: Detail = load_detail(&conn, run_id, &det.key).unwrap();
    d.logs = logs;
    d.skill_uses = uses;
    app.on_update(Update::Detail(Arc::new(d)));
}

fn log(label: &str, text: &str) -> LogFile {
    LogFile {
        label: label.into(),
        path: PathBuf::from(format!(
            "/data/jobs/snapshot-run__noskills/trial/{label}.txt"
        )),
        text: skillscope::sanitize::text(text),
        truncated: false,
    }
}

#[test]
fn main_view() {
    let (_d, mut app) = app_with("dark");
    snap("main", &mut app);
}

/// A run of an LLM harness: finished attempts carry tokens and cost, so the overview shows
/// tokens and cost so far, per condition, and the projected total.
#[test]
fn main_view_with_tokens_and_cost() {
    let (d, mut app) = app_with("dark");
    let conn = Store::open_existing(&d.db()).unwrap();
    conn.execute(
        "UPDATE trials SET n_input_tokens = 120000 + id * 1000, n_cache_tokens = 90000,
                n_output_tokens = 8000, cost_usd = 0.85 + (id % 3) * 0.1
         WHERE status = 'done'",
        [],
    )
    .unwrap();
    let run_id = app.snapshot.as_ref().unwrap().run.id;
    app.on_update(Update::Snapshot(Arc::new(
        load_snapshot(&conn, run_id).unwrap(),
    )));
    snap("main_spend", &mut app);
}

/// Re-reads the snapshot after `sql` changed the store.
fn reload_after(d: &Scratch, app: &mut App, sql: &str) {
    let conn = Store::open_existing(&d.db()).unwrap();
    conn.execute_batch(sql).unwrap();
    let run_id = app.snapshot.as_ref().unwrap().run.id;
    app.on_update(Update::Snapshot(Arc::new(
        load_snapshot(&conn, run_id).unwrap(),
    )));
}

/// An engine on another machine that stopped writing its heartbeat 15 minutes ago: the run is
/// marked running in the store, but the dashboard says its engine is gone and how to resume.
#[test]
fn main_view_of_a_stale_run() {
    let (d, mut app) = app_with("dark");
    reload_after(
        &d,
        &mut app,
        "UPDATE runs SET heartbeat_at = '2026-11-21T10:00:00.000Z',
                         resume_command = 'cd /srv/eval && skillscope run --tasks tasks --trials 3 --run snapshot-run'",
    );
    snap("main_stale", &mut app);
    // `watch` on a stale run: the command that resumes it, whole (as `status` prints it), and
    // none of the dead engine's live figures.
    for size in SIZES {
        let screen = render(&mut app, size);
        let joined: String = screen
            .lines()
            .map(|l| l.trim_matches(|c| c == '"' || c == '│').trim())
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            joined.contains(
                "resume: cd /srv/eval && skillscope run --tasks tasks --trials 3 --run snapshot-run"
            ),
            "{screen}"
        );
        for live in ["ETA", "/min", "throughput", "elapsed", "containers"] {
            assert!(!screen.contains(live), "{live}: {screen}");
        }
    }
}

/// A priced run whose engine died (kill -9, a dead host): what it cost so far stays on screen,
/// but the burn rate, the projected total and the provider limit were the dead engine's live
/// figures and are gone with it.
#[test]
fn a_stale_run_keeps_its_cost_so_far_and_drops_burn_and_projection() {
    let (d, mut app) = app_with("dark");
    reload_after(
        &d,
        &mut app,
        "UPDATE trials SET n_input_tokens = 120000 + id * 1000, n_cache_tokens = 90000,
                n_output_tokens = 8000, cost_usd = 0.85 + (id % 3) * 0.1
         WHERE status = 'done';
         UPDATE runs SET heartbeat_at = '2026-11-21T10:00:00.000Z', provider_limit = 3,
                         resume_command = 'cd /srv/eval && skillscope run --agent claude-code --run snapshot-run'",
    );
    snap("main_stale_spend", &mut app);
    for size in SIZES {
        let screen = render(&mut app, size);
        assert!(screen.contains("cost $49.70"), "{screen}");
        for live in ["burn", "/h", "projected", "provider limit", "ETA"] {
            assert!(!screen.contains(live), "{live}: {screen}");
        }
    }
    // The same run with its engine alive shows them.
    reload_after(
        &d,
        &mut app,
        "UPDATE runs SET heartbeat_at = '2026-11-21T10:14:57.000Z'",
    );
    let screen = render(&mut app, (120, 40));
    for live in ["burn", "projected", "provider limit"] {
        assert!(screen.contains(live), "{live}: {screen}");
    }
}

/// No Docker host answers: the run says since when it waits for Docker, and why.
#[test]
fn main_view_waiting_for_docker() {
    let (d, mut app) = app_with("dark");
    reload_after(
        &d,
        &mut app,
        "UPDATE runs SET waiting_since = '2026-11-21T10:14:30.000Z',
                         waiting_reason = 'unix:///var/run/docker.sock: client error (Connect)';
         INSERT INTO run_hosts (run_id, host, state, since, last_error, slots, running, checked_at)
         SELECT id, 'unix:///var/run/docker.sock', 'down', '2026-11-21T10:14:30.000Z',
                'client error (Connect)', 4, 0, '2026-11-21T10:14:59.000Z' FROM runs",
    );
    snap("main_waiting", &mut app);
}

/// A run of an LLM harness while its agents work: the running attempts carry live activity
/// (steps, last tool call, tokens and cost so far, last output) and one is stalled (its own
/// glyph); finished attempts are priced; the run has a budget and a provider limit. The grid's
/// bottom border describes the running cell under the cursor, the overview shows cost so far,
/// burn rate, projection ± its interval, budget and provider limit, and the detail of the
/// stalled trial says since when.
#[test]
fn running_run_with_live_activity_and_a_stall() {
    let (d, mut app) = app_with("dark");
    reload_after(
        &d,
        &mut app,
        "UPDATE trials SET n_input_tokens = 120000 + id * 1000, n_cache_tokens = 90000,
                n_output_tokens = 8000, cost_usd = 0.85 + (id % 3) * 0.1
         WHERE status = 'done';
         UPDATE trials SET agent_started_at = '2026-11-21T10:11:00.000Z', live_steps = 14,
                live_tool = 'Bash: python3 solve.py --input /root/data/routes.csv --check' ||
                            char(27) || '[2J',
                last_output_at = '2026-11-21T10:14:48.000Z',
                n_input_tokens = 52000, n_output_tokens = 3100, cost_usd = 0.41
         WHERE status = 'agent' AND task_id = 'adaptive-cruise-control';
         UPDATE trials SET agent_started_at = '2026-11-21T10:02:00.000Z', live_steps = 3,
                live_tool = 'Bash: sleep 600', last_output_at = '2026-11-21T10:03:10.000Z',
                stalled_at = '2026-11-21T10:13:10.000Z',
                n_input_tokens = 9000, n_output_tokens = 400, cost_usd = 0.07
         WHERE status = 'agent' AND task_id = 'azure-bgp-oscillation-route-leak';
         UPDATE runs SET max_cost_usd = 120, provider_limit = 2;",
    );
    // The cursor on adaptive-cruise-control A #3 (last task row of the grid, third column).
    let s = app.snapshot.as_ref().unwrap();
    let row = app
        .grid_model
        .task_rows
        .iter()
        .position(|&r| {
            matches!(&app.grid_model.rows[r],
                skillscope::tui::model::GridRow::Task { task_id, .. }
                    if task_id == "adaptive-cruise-control")
        })
        .unwrap();
    let stalled = s
        .trials
        .iter()
        .position(|t| t.task_id == "azure-bgp-oscillation-route-leak" && t.status.is_active())
        .unwrap();
    assert_eq!(
        app.grid_model.state(s, stalled),
        skillscope::tui::model::CellState::Stalled
    );
    for _ in 0..row {
        app.on_key(key(KeyCode::Down));
    }
    app.on_key(key(KeyCode::Right));
    app.on_key(key(KeyCode::Right));
    snap("live_grid", &mut app);
    let screen = render(&mut app, (120, 40));
    assert!(screen.contains("14 steps"), "{screen}");
    assert!(!screen.contains('\u{1b}'));
    // The stalled cell, B #3 of the first task row.
    for _ in 0..row {
        app.on_key(key(KeyCode::Up));
    }
    for _ in 0..3 {
        app.on_key(key(KeyCode::Right));
    }
    snap("live_grid_stalled", &mut app);
    open_detail(&mut app, &d, Vec::new());
    snap("live_detail", &mut app);
}

#[test]
fn main_view_mono_theme() {
    let (_d, mut app) = app_with("mono");
    snap("main_mono", &mut app);
}

#[test]
fn domain_pane_by_difficulty() {
    let (_d, mut app) = app_with("dark");
    app.on_key(key(KeyCode::Tab));
    app.on_key(key(KeyCode::Char('d')));
    snap("domains_by_difficulty", &mut app);
}

/// Before any trial has a verdict the domain pane shows no difference (`—`, not `Δ B +0.0`):
/// a Method D rate of nothing judged is 0 by definition, not a result.
#[test]
fn domain_pane_before_any_trial_is_judged() {
    let (_d, mut app) = synthetic_app(
        "dark",
        SyntheticRun {
            name: "fresh-run".into(),
            tasks: 6,
            trials: 2,
            done_fraction: 0.0,
            ..Default::default()
        },
        |_, _| {},
    );
    app.on_key(key(KeyCode::Tab));
    snap("domains_nothing_judged", &mut app);
    for size in SIZES {
        let screen = render(&mut app, size);
        assert!(screen.contains("Δ B"), "{screen}");
        assert!(!screen.contains("+0.0"), "{screen}");
    }
}

/// The percentages of tokens on the domain pane's rows (the right of the screen at 120×40), by
/// position: A's rate, A's judged rate, B's rate, B's judged rate.
fn pane_columns(screen: &str, pane_x: usize) -> Vec<Vec<String>> {
    let mut cols: Vec<Vec<String>> = Vec::new();
    for line in screen.lines() {
        let right: String = line.chars().skip(pane_x).collect();
        let pcts: Vec<String> = right
            .split_whitespace()
            .filter(|w| w.ends_with('%'))
            .map(str::to_string)
            .collect();
        if pcts.len() == 4 {
            for (i, p) in pcts.into_iter().enumerate() {
                if cols.len() <= i {
                    cols.push(Vec::new());
                }
                cols[i].push(p);
            }
        }
    }
    cols
}

/// One number format per column of the domain pane: a domain at 100 % in a narrow pane writes
/// every rate of its column as a whole number, never `100%` beside `33.3%`.
#[test]
fn domain_pane_keeps_one_number_format_per_column() {
    let (_d, mut app) = synthetic_app(
        "dark",
        SyntheticRun {
            name: "snapshot-run".into(),
            tasks: 12,
            trials: 3,
            ..Default::default()
        },
        |conn, _| {
            conn.execute(
                "UPDATE trials SET status = 'done', outcome = 'pass', reward = 1.0,
                        finished_at = COALESCE(finished_at, queued_at)
                 WHERE task_id = 'civ6-adjacency-optimizer' AND condition = 'curated'",
                [],
            )
            .unwrap();
        },
    );
    app.on_key(key(KeyCode::Tab));
    snap("domains_one_format", &mut app);
    let screen = render(&mut app, (120, 40));
    let x = screen
        .lines()
        .find_map(|l| l.find("┌ pass rate").map(|i| l[..i].chars().count()))
        .expect("the domain pane");
    let cols = pane_columns(&screen, x);
    assert_eq!(cols.len(), 4, "{screen}");
    assert!(cols[2].iter().any(|p| p.starts_with("100")), "{screen}");
    for (i, col) in cols.iter().enumerate() {
        let decimals = col.iter().filter(|p| p.contains('.')).count();
        assert!(
            decimals == 0 || decimals == col.len(),
            "column {i} mixes formats: {col:?}\n{screen}"
        );
    }
}

#[test]
fn filtered_and_sorted_grid_with_cursor_moved() {
    let (_d, mut app) = app_with("dark");
    app.on_key(key(KeyCode::Char('f'))); // failed only
    app.on_key(key(KeyCode::Char('s'))); // sort by name
    app.on_key(key(KeyCode::Char('j')));
    app.on_key(key(KeyCode::Char('l')));
    snap("grid_failed_by_name", &mut app);
}

/// `/` edits the filter in place: the grid follows what is typed, and a term that cannot match
/// (`status:bogus`) is an error in the input line while the grid keeps the last filter that
/// could apply.
#[test]
fn filter_being_typed() {
    let (_d, mut app) = app_with("dark");
    app.on_key(key(KeyCode::Char('/')));
    for c in "domain:off status:bogus".chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
    snap("filter_input", &mut app);
    assert_eq!(
        app.grid_model.task_rows.len(),
        2,
        "domain:off applies as typed"
    );
    let screen = render(&mut app, (80, 24));
    assert!(screen.contains("unknown status \"bogus\""), "{screen}");
}

/// The event log: a pane of its own at 80×24 (Tab, Tab), beside the domain pane at 120×40,
/// newest first, filtered by level as the filter is typed.
#[test]
fn event_log_pane() {
    let (_d, mut app) = app_with("dark");
    app.on_key(key(KeyCode::Char('e')));
    snap("events", &mut app);
    // The overview's last events and the event pane read in one order, newest first (issue 48:
    // the overview ran oldest first beside a pane newest first).
    let screen = render(&mut app, (120, 40));
    // The `HH:MM:SS` before each ` info ` or ` warn ` of `lines`, in the order shown.
    let times = |lines: &[&str]| -> Vec<String> {
        let mut out = Vec::new();
        for l in lines {
            let chars: Vec<char> = l.chars().collect();
            for i in 8..chars.len().saturating_sub(6) {
                let after: String = chars[i..i + 6].iter().collect();
                let stamp: String = chars[i - 8..i].iter().collect();
                if (after == " info " || after == " warn ")
                    && stamp.chars().filter(|c| *c == ':').count() == 2
                    && stamp.chars().all(|c| c.is_ascii_digit() || c == ':')
                {
                    out.push(stamp);
                }
            }
        }
        out
    };
    let lines: Vec<&str> = screen.lines().collect();
    let top_end = lines.iter().position(|l| l.contains('└')).unwrap();
    let pane_start = lines.iter().position(|l| l.contains("event log")).unwrap();
    let overview = times(&lines[..top_end]);
    let pane = times(&lines[pane_start..]);
    for (what, t) in [("overview", &overview), ("event pane", &pane)] {
        assert!(t.len() >= 2, "{what}: {t:?}\n{screen}");
        assert!(
            t.windows(2).all(|w| w[0] >= w[1]),
            "{what} newest first: {t:?}"
        );
    }
    app.on_key(key(KeyCode::Char('/')));
    for c in "level:warn".chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
    app.on_key(key(KeyCode::Enter));
    snap("events_warnings", &mut app);
    let screen = render(&mut app, (80, 24));
    assert!(screen.contains("2 of 8"), "{screen}");
}

/// A run of 12 trials per condition: trial numbers 1 and every fifth over cells two wide (no
/// `0` for trial 10), all of them where cells are wider; cancelled trials counted apart from
/// failures.
#[test]
fn twelve_trials_and_a_cancelled_one() {
    let (_d, mut app) = synthetic_app(
        "dark",
        SyntheticRun {
            name: "twelve".into(),
            tasks: 6,
            trials: 12,
            ..Default::default()
        },
        |conn, _| {
            conn.execute(
                "UPDATE trials SET outcome = 'cancelled', reward = NULL
                 WHERE id = (SELECT MIN(id) FROM trials WHERE status = 'done' AND outcome = 'fail')",
                [],
            )
            .unwrap();
        },
    );
    snap("twelve_trials", &mut app);
    let screen = render(&mut app, (80, 24));
    // At 80 columns the counts take short words so the progress bar and its label stay.
    assert!(screen.contains("canc 1"), "{screen}");
    let counts = screen.lines().nth(1).unwrap();
    assert!(counts.contains("trials █"), "{screen}");
    let wide = render(&mut app, (120, 40));
    assert!(wide.contains("cancelled 1"), "{wide}");
    assert!(screen.contains("10"), "{screen}");
}

/// 30 trials in each of two conditions: the grid cannot show all 60 columns, so a column is
/// kept for the markers and the bottom border names what is off-screen and the key that reaches
/// it; moving right scrolls, and the left marker appears once columns are hidden on the left.
#[test]
fn thirty_trials_say_what_is_off_screen() {
    let (_d, mut app) = synthetic_app(
        "dark",
        SyntheticRun {
            name: "thirty".into(),
            tasks: 12,
            trials: 30,
            ..Default::default()
        },
        |_, _| {},
    );
    snap("thirty_trials", &mut app);
    let screen = render(&mut app, (80, 24));
    assert!(screen.contains("off-screen"), "{screen}");
    assert!(screen.contains('›'), "a right marker: {screen}");
    for _ in 0..40 {
        app.on_key(key(KeyCode::Char('l')));
    }
    snap("thirty_trials_scrolled", &mut app);
    let screen = render(&mut app, (80, 24));
    assert!(screen.contains('‹'), "a left marker: {screen}");
    assert!(screen.contains("← A #1–"), "hidden on both sides: {screen}");
}

/// Round 2 of an experiment: its conditions (two exported skill folders) read A' and B' over
/// the grid, with the folders named in full in the legends and the detail's title.
#[test]
fn round_two_conditions_by_their_labels() {
    let (_d, mut app) = synthetic_app(
        "dark",
        SyntheticRun {
            name: "demo-round2".into(),
            tasks: 6,
            trials: 2,
            conditions: vec![
                "skills:/data/exports/demo/LS-A-v1".into(),
                "skills:/data/exports/demo/LS-B-v1".into(),
            ],
            ..Default::default()
        },
        |conn, _| {
            skillscope::store::learning::find_or_insert_experiment(
                conn,
                "demo",
                &serde_json::json!({}),
                "demo-round1",
                "demo-round2",
            )
            .unwrap();
        },
    );
    assert_eq!(app.snapshot.as_ref().unwrap().labels, ["A'", "B'"]);
    snap("round2_labels", &mut app);
    let wide = render(&mut app, (120, 40));
    assert!(wide.contains("A' skills:LS-A-v1"), "{wide}");
}

#[test]
fn detail_summary_and_logs() {
    let (d, mut app) = app_with("dark");
    let trajectory: Trajectory = serde_json::from_str(TRAJECTORY).unwrap();
    open_detail_with(
        &mut app,
        &d,
        vec![
            LogFile {
                label: "trajectory".into(),
                path: PathBuf::from(
                    "/data/jobs/snapshot-run__noskills/trial/agent/trajectory.json",
                ),
                text: skillscope::sanitize::text(&render_trajectory(&trajectory)),
                truncated: false,
            },
            log(
                "verifier",
                "============ test session starts ============\ncollected 3 items\n\ntests/test_outputs.py::test_volume PASSED\ntests/test_outputs.py::test_mass FAILED\nE   assert 41.2 == 42.0\n=========== 1 failed, 2 passed ===========\n",
            ),
            log(
                "agent",
                "\x1b[2J\x1b]0;pwned\x07reading scan_data.stl\r\nprogress 10%\rprogress 100%\ncomputing mass\n",
            ),
            log(
                "build",
                "reused image skillscope-task/3d-scan-calc:noskills-0123456789ab\n",
            ),
        ],
        vec![SkillUseRow {
            skill: "mesh-analysis".into(),
            kind: "read".into(),
            first_step: Some(2),
            count: 1,
        }],
    );
    snap("detail_summary", &mut app);
    app.on_key(key(KeyCode::Tab));
    snap("detail_trajectory", &mut app);
    app.on_key(key(KeyCode::Tab));
    app.on_key(key(KeyCode::Char('/')));
    for c in "failed".chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
    app.on_key(key(KeyCode::Enter));
    snap("detail_verifier_search", &mut app);
    app.on_key(key(KeyCode::Tab));
    snap("detail_agent_log", &mut app);
}

/// A trial flagged for tampering shows it in the summary, under its outcome: judged a failure,
/// with the paths its agent changed (control sequences in them never reach the terminal).
#[test]
fn detail_of_a_tampered_trial() {
    let (d, mut app) = app_with("dark");
    let effects = app.on_key(key(KeyCode::Enter));
    assert_eq!(effects.len(), 1);
    let det_key = app.detail.as_ref().unwrap().key.clone();
    let conn = Store::open_existing(&d.db()).unwrap();
    conn.execute(
        "UPDATE trials SET outcome = 'fail', reward = 0.0,
                rewards = '{\"reward\": 0.0, \"verifier.reward\": 1.0}',
                error = 'tampered: the agent changed C /bin/sh — judged a failure of the agent',
                tamper = '{\"flagged\": 3, \"paths\": [\"C /bin/sh\", \"A /tests/\\u001b]52;c;x\\u0007test.sh\"]}'
         WHERE task_id = ?1 AND condition = ?2 AND trial_index = ?3",
        rusqlite::params![det_key.task_id, det_key.condition, det_key.trial_index],
    )
    .unwrap();
    let run_id = app.snapshot.as_ref().unwrap().run.id;
    let mut det: Detail = load_detail(&conn, run_id, &det_key).unwrap();
    det.logs = vec![log("build", "reused image\n")];
    app.on_update(Update::Detail(Arc::new(det)));
    for size in SIZES {
        let screen = render(&mut app, size);
        assert!(screen.contains("tampered"), "{screen}");
        assert!(!screen.contains('\u{1b}'), "{screen}");
    }
    snap("detail_tampered", &mut app);
}

/// Long lines in a log tab can be read whole: `w` wraps them (and wraps again to cut them at the
/// edge); the log's path in the header is never cut.
#[test]
fn detail_log_lines_wrap_with_w_and_the_path_is_whole() {
    let (d, mut app) = app_with("dark");
    let goal = "Your goal is to analyze the quarterly sales data in /root/data/sales.xlsx, compute the total revenue per region and write the three largest regions with their totals to /root/answer.txt, one per line, largest first.";
    let path = "/data/jobs/snapshot-run__noskills/azure-bgp-oscillation-route-leak__noskills__1/agent/trajectory.json";
    open_detail(
        &mut app,
        &d,
        vec![LogFile {
            label: "trajectory".into(),
            path: PathBuf::from(path),
            text: format!("step 1 · user\n{goal}\nstep 2 · agent\nI will read the file.\n"),
            truncated: false,
        }],
    );
    app.on_key(key(KeyCode::Tab));
    let joined = |screen: &str| {
        screen
            .lines()
            .map(|l| l.trim_matches(|c| c == '"' || c == '│').trim())
            .collect::<Vec<_>>()
            .join(" ")
    };
    for size in SIZES {
        let screen = render(&mut app, size);
        assert!(!joined(&screen).contains(goal), "cut by default: {screen}");
        // (A path has no spaces: where it wraps, its rows join without one.)
        let tight: String = screen
            .lines()
            .map(|l| l.trim_matches(|c| c == '"' || c == '│').trim())
            .collect();
        assert!(tight.contains(path), "the path whole: {screen}");
    }
    app.on_key(key(KeyCode::Char('w')));
    app.status = None;
    snap("detail_trajectory_wrapped", &mut app);
    for size in SIZES {
        let screen = render(&mut app, size);
        assert!(joined(&screen).contains(goal), "{screen}");
        assert!(joined(&screen).contains("lines 1-4 of 4"), "{screen}");
    }
    app.on_key(key(KeyCode::Char('w')));
    assert!(!app.detail.as_ref().unwrap().wrap);
}

/// The summary tab reads the trial folder whole at 80 columns (wrapped under its label, never
/// cut); `w` wraps every long value of the summary too, and cuts them again.
#[test]
fn detail_summary_path_whole_and_w_wraps_it() {
    let (d, mut app) = app_with("dark");
    open_detail(&mut app, &d, Vec::new());
    let dir = app.detail.as_ref().unwrap().data.as_ref().unwrap().attempts[0]
        .trial_dir
        .clone()
        .unwrap();
    let tight = |screen: &str| -> String {
        screen
            .lines()
            .map(|l| {
                l.trim_matches(|c| c == '"' || c == '│')
                    .trim()
                    .trim_start_matches("trial dir")
                    .trim()
            })
            .collect()
    };
    let narrow = render(&mut app, (80, 24));
    assert!(tight(&narrow).contains(&dir), "{narrow}");
    assert!(!dir.contains("/./"), "{dir}");
    assert!(narrow.contains("(exit 0…"), "cut by default: {narrow}");
    app.on_key(key(KeyCode::Char('w')));
    snap("detail_summary_wrapped", &mut app);
    let narrow = render(&mut app, (80, 24));
    assert!(narrow.contains("total 6.00s"), "{narrow}");
    assert!(
        narrow.contains("│            789ab"),
        "the image whole: {narrow}"
    );
}

/// A status message longer than the screen is read whole: the footer grows to the rows it needs
/// (at most two) above the key hints, which it never covers (issue 48: at 60 columns a message
/// took the hints' row), and it goes after a few seconds without a key.
#[test]
fn a_long_status_message_is_read_whole() {
    let (_d, mut app) = app_with("dark");
    let msg = "run snapshot-run is stopped and has no engine; it applies once the run is resumed: cd /work && skillscope run --run snapshot-run";
    app.status = Some(msg.into());
    snap("status_long", &mut app);
    let screen = render(&mut app, (80, 24));
    let rows: Vec<&str> = screen.lines().rev().take(3).collect();
    let joined = format!(
        "{} {}",
        rows[2].trim_matches('"').trim(),
        rows[1].trim_matches('"').trim()
    );
    assert!(joined.contains(msg), "{screen}");
    for size in SIZES {
        let screen = render(&mut app, size);
        let last = screen.lines().last().unwrap();
        assert!(last.contains("? help"), "the keys stay: {screen}");
    }
    // It goes once shown for STATUS_SECS, without a key.
    let t0 = now();
    app.on_tick(t0);
    app.on_tick(t0 + chrono::Duration::seconds(skillscope::tui::app::STATUS_SECS - 1));
    assert!(app.status.is_some(), "not yet");
    app.on_tick(t0 + chrono::Duration::seconds(skillscope::tui::app::STATUS_SECS));
    assert_eq!(app.status, None, "the message went");
}

/// Help at 120×40 shows every key whole, without scrolling: no description is cut (`…`) and
/// every key has at least two spaces before its description, so no column runs into the next.
#[test]
fn help_overlay() {
    let (_d, mut app) = app_with("dark");
    app.on_key(key(KeyCode::Char('?')));
    snap("help", &mut app);
    let wide = render(&mut app, (120, 40));
    assert!(wide.contains("keys · any key closes"), "{wide}");
    assert!(!wide.contains('…'), "{wide}");
    for (k, _) in skillscope::tui::keymap::help_sections()
        .into_iter()
        .flat_map(|(_, rows)| rows)
    {
        assert!(
            wide.contains(&format!("{k}  ")),
            "{k:?} runs into its description"
        );
    }
}

#[test]
fn confirm_retry_all() {
    let (_d, mut app) = app_with("dark");
    app.on_key(key(KeyCode::Char('R')));
    snap("confirm_retry_all", &mut app);
}

#[test]
fn waiting_for_a_run() {
    let mut app = App::new(
        Mode::Watch,
        Theme::load("dark").unwrap(),
        "skillscope.db".into(),
        now(),
    );
    snap("waiting", &mut app);
}

/// Container output with escape sequences renders as inert text: no ESC, BEL or CR reaches the
/// terminal buffer, in any view.
#[test]
fn control_sequences_never_reach_the_screen() {
    let (d, mut app) = app_with("dark");
    let hostile = "\x1b[2J\x1b[H\x1b]0;owned\x07\x1b[10;10Hmoved\x1b[31mred\x1b[0m \x1bP+q\x1b\\ \u{9b}2J done\r\n";
    open_detail(
        &mut app,
        &d,
        vec![
            log("verifier", hostile),
            log("agent", hostile),
            log("build", hostile),
        ],
    );
    for _ in 0..4 {
        for size in SIZES {
            let screen = render(&mut app, size);
            assert!(
                !screen.chars().any(|c| c.is_control() && c != '\n'),
                "{screen:?}"
            );
            assert!(
                !screen.contains("owned"),
                "OSC title text must not show: {screen}"
            );
        }
        app.on_key(key(KeyCode::Tab));
    }
}

/// An app on the round-1 run of an experiment in its learn phase (see `learning_fixture`).
fn learning_app() -> (learning_fixture::Learning, App) {
    let l = learning_fixture::learning();
    let app = dashboard::watching(&l.conn, l.run.id, Mode::Watch, "dark", now());
    (l, app)
}

/// Presses a key and answers the requests it made from the store, as the worker does: the skill
/// browser's space with the rubric report of the watched runs, and the Results view's analysis.
fn press(app: &mut App, conn: &rusqlite::Connection, k: KeyCode) {
    let run = app.snapshot.as_ref().map(|s| s.run.id);
    for e in app.on_key(key(k)) {
        match (e, run) {
            (Effect::Request(Request::Skills(Some(id))), Some(run)) => {
                app.on_update(Update::Skills(Arc::new(load_skills(conn, id).unwrap())));
                app.on_update(Update::Rubric(Arc::new(load_rubric(conn, run).unwrap())));
            }
            (Effect::Request(Request::Results(true)), Some(run)) => {
                app.on_update(Update::Results(Arc::new(load_results(conn, run).unwrap())));
            }
            _ => {}
        }
    }
}

#[test]
fn overview_with_an_experiment_learning() {
    let (_l, mut app) = learning_app();
    snap("learning_overview", &mut app);
    let screen = render(&mut app, (80, 24));
    assert!(screen.contains("1 MISLABELED"), "{screen}");
    assert!(screen.contains("learn"), "{screen}");
}

/// A run with a group-sequential design (issue 38): the overview says where each comparison
/// stands — answered at a stage with Z against the bound, or going on — and the trials the early
/// stop took out of the queue.
#[test]
fn overview_of_a_run_stopped_early() {
    use skillscope::domain::sequential::{
        Comparison, DesignRow, EarlyStopRow, LookDecision, LookRow, LookWhy,
    };
    use skillscope::store::queries;
    let l = learning_fixture::learning();
    let cmp = |label: &str, with: &str, without: &str| Comparison {
        label: label.into(),
        with: with.into(),
        without: without.into(),
        without_run: Some("round1".into()),
    };
    queries::put_design(
        &l.conn,
        &DesignRow {
            run_id: l.run.id,
            spec: skillscope::analysis::sequential::design::spec(
                5,
                5,
                &skillscope::analysis::sequential::design::Choices::with_futility(Some(1)),
            )
            .unwrap(),
            efficacy: vec![4.877, 3.357, 2.680, 2.290, 2.031],
            futility: vec![Some(-1.29), Some(0.17), Some(0.9), Some(1.5)],
            comparisons: vec![cmp("A'-A", "a2", "a"), cmp("B'-B", "b2", "b")],
            early_stop: true,
            note: None,
        },
    )
    .unwrap();
    let look = |c: &str, stage: usize, z: f64, bound: f64, decision| LookRow {
        comparison: c.into(),
        stage,
        trials: stage as u32,
        n_tasks: 12,
        mean_diff: Some(0.25),
        se: Some(0.06),
        z: Some(z),
        bound: Some(bound),
        futility_bound: None,
        decision,
        why: if decision == LookDecision::Efficacy {
            LookWhy::EfficacyCrossed
        } else {
            LookWhy::BelowEfficacy
        },
        adjusted: None,
        ci: None,
        p_value: None,
        at: "2026-11-22T11:58:00Z".into(),
    };
    for l2 in [
        look("A'-A", 1, 2.1, 4.877, LookDecision::Continue),
        look("B'-B", 1, 0.4, 4.877, LookDecision::Continue),
        look("A'-A", 2, 4.02, 3.357, LookDecision::Efficacy),
    ] {
        queries::insert_look(&l.conn, l.run.id, &l2).unwrap();
    }
    queries::stop_condition(
        &l.conn,
        l.run.id,
        &EarlyStopRow {
            condition: "a2".into(),
            trials: 2,
            comparison: "A'-A".into(),
            stage: 2,
            not_run: 0,
            cost_saved_usd: None,
            at: "2026-11-22T11:58:00Z".into(),
        },
        Some(0.5),
    )
    .unwrap();
    let mut app = dashboard::watching(&l.conn, l.run.id, Mode::Watch, "dark", now());
    snap("sequential_overview", &mut app);
    let wide = render(&mut app, (120, 40));
    assert!(
        wide.contains("A'-A efficacy at 2/5 (Z 4.02 ≥ 3.36)"),
        "{wide}"
    );
    assert!(wide.contains("B'-B goes on after 1/5"), "{wide}");
    let small = render(&mut app, (80, 24));
    assert!(small.contains("A'-A eff 2/5"), "{small}");
}

/// Acontext away during learning: the overview's title says since when, each waiting space its
/// next retry — one state, not a line per request.
#[test]
fn overview_while_acontext_is_away() {
    let l = learning_fixture::learning();
    for label in ["LS-A", "LS-B"] {
        skillscope::store::learning::set_space_waiting(
            &l.conn,
            &l.run.name,
            label,
            Some((
                "2026-11-22T11:58:10Z",
                "GET /learning_spaces at http://acontext:8029/api/v1: cannot connect",
                "2026-11-22T11:58:41Z",
            )),
        )
        .unwrap();
    }
    let mut app = dashboard::watching(&l.conn, l.run.id, Mode::Watch, "dark", now());
    snap("learning_overview_acontext_away", &mut app);
    let screen = render(&mut app, (120, 40));
    assert!(
        screen.contains("waiting for Acontext since 11:58:10"),
        "{screen}"
    );
    assert!(screen.contains("next retry 11:58:41"), "{screen}");
    let small = render(&mut app, (80, 24));
    assert!(small.contains("retry 11:58:41"), "{small}");
}

#[test]
fn skill_browser() {
    let (l, mut app) = learning_app();
    press(&mut app, &l.conn, KeyCode::Char('K'));
    snap("skills_spaces", &mut app);
    press(&mut app, &l.conn, KeyCode::Char('j')); // LS-B
    press(&mut app, &l.conn, KeyCode::Enter); // its skills: mesh-analysis first
    press(&mut app, &l.conn, KeyCode::Enter); // its files: SKILL.md first
    press(&mut app, &l.conn, KeyCode::Enter); // the file
    // At 80×24 scroll to the learned entries (the whole file fits at 120×40).
    render(&mut app, (80, 24));
    for _ in 0..8 {
        press(&mut app, &l.conn, KeyCode::Char('j'));
    }
    snap("skills_learned_skill_md", &mut app);
    app.skills.as_mut().unwrap().scroll = 0;
    press(&mut app, &l.conn, KeyCode::Char('d'));
    app.status = None;
    snap("skills_diff", &mut app);
    // A changed line that wraps keeps its sign on every row.
    let screen = render(&mut app, (80, 24));
    let row = screen
        .lines()
        .find(|l| l.contains("2 decimals"))
        .expect("the wrapped row of an added line");
    assert!(row.starts_with("\"│+ "), "{screen}");
    press(&mut app, &l.conn, KeyCode::Tab);
    snap("skills_sessions", &mut app);
}

/// The skills agents wrote in self-generated trials, in the skill browser: the set with its kept
/// and refused counts, its skills (a kept one with its trials, a refused one with the reason) and
/// a kept skill's SKILL.md. (Escape sequences an agent wrote are shown inert.)
#[test]
fn skill_browser_with_self_generated_skills() {
    let dashboard::Filled {
        scratch, conn, run, ..
    } = dashboard::filled(&SyntheticRun {
        name: "selfgen-run".into(),
        tasks: 3,
        trials: 2,
        conditions: vec!["no-skills".into(), "self-generated".into()],
        done_fraction: 1.0,
        ..Default::default()
    });
    // Every self-generated trial kept `csv-tool`; the first also wrote a malformed skill.
    let ids: Vec<(i64, String)> = {
        let mut st = conn
            .prepare(
                "SELECT id, trial_name FROM trials WHERE condition = 'self-generated' ORDER BY id",
            )
            .unwrap();
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    for (i, (id, name)) in ids.iter().enumerate() {
        let trial = scratch.jobs().join(name);
        let skill = trial.join("agent/generated-skills/csv-tool");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: csv-tool\ndescription: Sums CSV columns with awk.\n---\n# CSV tool\n\nUse `awk -F,` to sum a column.\x1b]0;owned\x07\n",
        )
        .unwrap();
        let mut record = serde_json::json!({
            "mode": "one-pass", "dir": "agent/generated-skills", "installed": [], "error": null,
            "skills": [{"name": "csv-tool", "dir_name": "csv-tool",
                        "description": "Sums CSV columns with awk.", "content_hash": "h",
                        "n_files": 1, "bytes": 90, "problems": []}],
            "refused": [],
        });
        if i == 0 {
            record["refused"] = serde_json::json!([{"skill": "broken", "path": "SKILL.md",
                "reason": "no YAML frontmatter (the file must open with a `---` block)"}]);
        }
        conn.execute(
            "UPDATE trials SET generated_skills = ?1, trial_dir = ?2 WHERE id = ?3",
            rusqlite::params![record.to_string(), trial.display().to_string(), id],
        )
        .unwrap();
    }
    let mut app = dashboard::watching(&conn, run.id, Mode::Watch, "dark", now());
    press(&mut app, &conn, KeyCode::Char('K'));
    snap("skills_generated_sets", &mut app);
    let screen = render(&mut app, (80, 24));
    assert!(screen.contains("self-gen"), "{screen}");
    assert!(screen.contains("6 kept 1 refused"), "{screen}");
    press(&mut app, &conn, KeyCode::Enter); // its skills
    snap("skills_generated_skills", &mut app);
    let screen = render(&mut app, (120, 40));
    assert!(screen.contains("broken (refused)"), "{screen}");
    press(&mut app, &conn, KeyCode::Enter); // csv-tool's files
    press(&mut app, &conn, KeyCode::Enter); // its SKILL.md
    snap("skills_generated_skill_md", &mut app);
    let screen = render(&mut app, (120, 40));
    assert!(screen.contains("awk -F,"), "{screen}");
    assert!(!screen.contains('\x1b'), "{screen}");
}

/// Skill text from the server with escape sequences (clear screen, OSC window title, cursor
/// moves) renders as inert text in every part of the skill browser.
#[test]
fn hostile_skill_files_never_reach_the_screen() {
    let (l, mut app) = learning_app();
    let hostile = "\x1b[2J\x1b[H\x1b]0;owned\x07\x1b[10;10Hmoved\x1b[31mred\x1b[0m \x1bP+q\x1b\\ \u{9b}2J done\r\n";
    let md = format!(
        "---\nname: evil\n---\n# Evil {hostile}\n\n## Solve it\n- Principle: {hostile}\n- Steps: {hostile}\n"
    );
    let mut v = learning_fixture::version(
        "learned",
        &format!("evil{hostile}"),
        hostile,
        vec![learning_fixture::file(&format!("SKILL{hostile}.md"), &md)],
    );
    v.files.push(learning_fixture::file("run.sh", hostile));
    skillscope::store::learning::record_version(&l.conn, l.a.id, &v).unwrap();
    let mut v2 = v.clone();
    v2.origin = "curated".into();
    v2.content_hash = "other".into();
    v2.files[0].sha256 = "other".into();
    v2.files[0].text = Some(format!("{md}{hostile}"));
    skillscope::store::learning::record_version(&l.conn, l.a.id, &v2).unwrap();
    let first = skillscope::store::learning::steps(&l.conn, l.a.id).unwrap()[0].trial_id;
    skillscope::store::learning::patch_step(
        &l.conn,
        l.a.id,
        first,
        &skillscope::store::learning::StepPatch {
            learning_status: Some(hostile.into()),
            error: Some(Some(hostile.into())),
            ..Default::default()
        },
    )
    .unwrap();
    skillscope::store::learning::set_experiment_phase(&l.conn, "demo", "learn", Some(hostile))
        .unwrap();
    app.on_update(Update::Snapshot(Arc::new(
        load_snapshot(&l.conn, l.run.id).unwrap(),
    )));
    let check = |app: &mut App| {
        for size in SIZES {
            let screen = render(app, size);
            assert!(
                !screen.chars().any(|c| c.is_control() && c != '\n'),
                "{screen:?}"
            );
            assert!(
                !screen.contains("owned"),
                "OSC text must not show: {screen}"
            );
        }
    };
    check(&mut app);
    press(&mut app, &l.conn, KeyCode::Char('K'));
    let evil = app
        .skills
        .as_ref()
        .unwrap()
        .data
        .as_ref()
        .unwrap()
        .skills
        .iter()
        .position(|s| s.name.starts_with("evil"))
        .expect("the hostile skill is listed");
    press(&mut app, &l.conn, KeyCode::Enter);
    for _ in 0..evil {
        press(&mut app, &l.conn, KeyCode::Down);
    }
    check(&mut app);
    press(&mut app, &l.conn, KeyCode::Enter);
    check(&mut app);
    press(&mut app, &l.conn, KeyCode::Enter);
    check(&mut app);
    let screen = render(&mut app, (120, 40));
    assert!(
        screen.contains("moved"),
        "the printable part shows: {screen}"
    );
    press(&mut app, &l.conn, KeyCode::Char('d'));
    check(&mut app);
    press(&mut app, &l.conn, KeyCode::Down);
    check(&mut app);
    press(&mut app, &l.conn, KeyCode::Tab);
    check(&mut app);
}

/// The Results view of one run (no-skills vs curated, 70 % finished): conditions with CIs,
/// the comparison, the breakdown by domain (and by difficulty with `d`), failure modes.
#[test]
fn results_of_a_run() {
    let (d, mut app) = app_with("dark");
    let conn = Store::open_existing(&d.db()).unwrap();
    press(&mut app, &conn, KeyCode::Char('a'));
    snap("results_run", &mut app);
    let screen = render(&mut app, (80, 24));
    assert!(screen.contains("curated vs no-skills"), "{screen}");
    press(&mut app, &conn, KeyCode::Char('d'));
    press(&mut app, &conn, KeyCode::Char('G'));
    snap("results_run_by_difficulty_end", &mut app);
}

/// The Results view's skill table: curated trials saw their task's skill and half used it (the
/// comparison says so beside its Δ), no-skills trials saw nothing but one, which saw a planted
/// skill — flagged above the table.
#[test]
fn results_with_skill_exposure() {
    use skillscope::skillsbench::exposure::{ExposedSkill, Origin, SkillExposure};
    let (d, mut app) = synthetic_app(
        "dark",
        SyntheticRun {
            name: "exposure-run".into(),
            tasks: 6,
            trials: 2,
            done_fraction: 1.0,
            ..Default::default()
        },
        |conn, run| {
            let rows = skillscope::store::queries::current_trials(conn, run.id).unwrap();
            let first_no_skills = rows.iter().position(|t| t.condition == "no-skills");
            for (i, t) in rows.iter().enumerate() {
                let curated = t.condition == "curated";
                let planted = Some(i) == first_no_skills;
                let skill = |dir: &str, origin| ExposedSkill {
                    name: dir.into(),
                    dir: dir.into(),
                    path: format!("/root/.claude/skills/{dir}"),
                    paths: vec![format!("/root/.claude/skills/{dir}")],
                    origin,
                    sha256: format!("{dir}-hash"),
                    files: 1,
                    bytes: 10,
                    enabled: true,
                };
                let mut x = SkillExposure {
                    captured_at: "2026-11-21T10:00:00Z".into(),
                    agent: "claude-code".into(),
                    condition: t.condition.clone(),
                    workdir: "/root".into(),
                    folders: vec![],
                    skills: match (curated, planted) {
                        (true, _) => vec![skill(&format!("skill-{}", t.task_id), Origin::Task)],
                        (false, true) => vec![skill("planted", Origin::Other)],
                        _ => vec![],
                    },
                    builtins: None,
                    hash: String::new(),
                    error: None,
                    used: None,
                };
                let used = if curated && i % 3 == 1 {
                    vec![(format!("skill-{}", t.task_id), "read".to_string(), Some(2))]
                } else {
                    vec![]
                };
                x.set_used(Some(&used), &[]);
                skillscope::store::exposure::record(conn, t.id, &x).unwrap();
                let uses: Vec<SkillUseRow> = used
                    .iter()
                    .map(|(skill, kind, step)| SkillUseRow {
                        skill: skill.clone(),
                        kind: kind.clone(),
                        first_step: *step,
                        count: 1,
                    })
                    .collect();
                skillscope::store::queries::set_skill_uses(conn, t.id, &uses).unwrap();
            }
        },
    );
    let conn = Store::open_existing(&d.db()).unwrap();
    press(&mut app, &conn, KeyCode::Char('a'));
    snap("results_exposure", &mut app);
    let screen = render(&mut app, (120, 40));
    // The comparison's note is the report's own sentence (a footnote of its Δ on screen).
    for part in [
        "skills seen/used",
        "planted (other)",
        "4 of 12 treated trials used a skill",
        // Which skills, and who used them, under a legend of the terms.
        "stray: a skill the condition should not show",
        "skill-3d-scan-calc",
        "3d-scan-calc#2",
    ] {
        assert!(screen.contains(part), "{part}: {screen}");
    }
    // K on a run without learning spaces: the skills the conditions' trials saw (curated
    // included) and which trials used each, instead of "no learning space".
    press(&mut app, &conn, KeyCode::Esc);
    assert!(app.results.is_none());
    press(&mut app, &conn, KeyCode::Char('K'));
    snap("skills_seen", &mut app);
    let screen = render(&mut app, (80, 24));
    for part in [
        "No learning space",
        "skill-3d-scan-calc",
        "curated",
        "planted",
    ] {
        assert!(screen.contains(part), "{part}: {screen}");
    }
    let wide = render(&mut app, (120, 40));
    assert!(wide.contains("3d-scan-calc#2"), "{wide}");
    // The list scrolls with the cursor keys, and Esc closes it.
    press(&mut app, &conn, KeyCode::Char('G'));
    let end = render(&mut app, (80, 24));
    assert_ne!(end, screen, "scrolled");
    press(&mut app, &conn, KeyCode::Esc);
    assert!(app.skills.is_none());
}

/// An experiment's Results: A, B (round 1), A', B' (round 2, partly finished) and the plan's
/// four comparisons; scrolled to the end at 80×24 for the breakdown and the notes.
#[test]
fn results_of_an_experiment() {
    let (l, mut app) = experiment_app();
    press(&mut app, &l.conn, KeyCode::Char('a'));
    snap("results_experiment", &mut app);
    let screen = render(&mut app, (120, 40));
    for label in [
        "A' vs A",
        "B' vs B",
        "A' vs B",
        "B' vs A'",
        "skills:LS-A-v1",
    ] {
        assert!(screen.contains(label), "{label}: {screen}");
    }
    render(&mut app, (80, 24));
    for _ in 0..2 {
        press(&mut app, &l.conn, KeyCode::PageDown);
    }
    snap("results_experiment_scrolled", &mut app);
}

/// Before any trial has finished the view says so; before the worker answers it says it is
/// computing.
#[test]
fn results_empty_and_loading() {
    let dashboard::Filled {
        scratch: _scratch,
        conn,
        run,
        ..
    } = dashboard::filled(&SyntheticRun {
        name: "fresh-run".into(),
        tasks: 4,
        trials: 2,
        done_fraction: 0.0,
        ..Default::default()
    });
    let mut app = dashboard::watching(&conn, run.id, Mode::Watch, "dark", now());
    app.on_key(key(KeyCode::Char('a')));
    let screen = render(&mut app, (80, 24));
    assert!(screen.contains("computing the analysis"), "{screen}");
    app.on_update(Update::Results(Arc::new(
        load_results(&conn, run.id).unwrap(),
    )));
    snap("results_empty", &mut app);
}

/// The experiment fixture with round 2 and skill invocations, watched from round 2 (as
/// `watch --experiment demo` shows it once round 2 exists).
fn experiment_app() -> (learning_fixture::Learning, App) {
    let l = learning_fixture::learning();
    let r2 = learning_fixture::round2(&l.conn);
    let n = learning_fixture::invoke_skills(&l.conn, &[&l.run, &r2]);
    assert!(n > 30, "{n} invocations");
    let app = dashboard::watching(&l.conn, r2.id, Mode::Watch, "dark", now());
    (l, app)
}

/// The skill browser with the rubric: the skills list with each skill's average score, and the
/// selected skill's score, tier, components, trend, weak component and gates — beside the file
/// at 120×40, in place of the files list at 80×24.
#[test]
fn skill_browser_with_rubric() {
    let (l, mut app) = experiment_app();
    press(&mut app, &l.conn, KeyCode::Char('K'));
    press(&mut app, &l.conn, KeyCode::Char('j')); // LS-B
    press(&mut app, &l.conn, KeyCode::Enter); // its skills: mesh-analysis first
    snap("skills_rubric", &mut app);
    let screen = render(&mut app, (120, 40));
    for part in [
        "/100",
        "completion",
        "/25",
        "/20",
        "/30",
        "publish gate",
        "feature gate",
    ] {
        assert!(screen.contains(part), "{part}: {screen}");
    }
    // Nothing of the rubric is cut: a gate's reasons wrap under it at either size (at 60×15
    // the panel scrolls: it cannot hold the rubric whole).
    for size in [(80, 24), (120, 40)] {
        let screen = render(&mut app, size);
        assert!(screen.contains("5.00%"), "{screen}");
        assert!(
            screen
                .lines()
                .filter(|l| l.contains("gate") || l.contains("trend") || l.contains("weak"))
                .all(|l| !l.contains('…')),
            "{screen}"
        );
    }
    press(&mut app, &l.conn, KeyCode::Char('j')); // pandas-basics
    snap("skills_rubric_few_invocations", &mut app);
    press(&mut app, &l.conn, KeyCode::Char('j')); // verify-units: never invoked
    snap("skills_rubric_no_invocations", &mut app);
    let screen = render(&mut app, (80, 24));
    assert!(screen.contains("no invocations"), "{screen}");
}

/// Names from the store with escape sequences — a domain, a condition, a run and a skill used in
/// a trajectory — render as inert text in the Results view and the rubric panel.
#[test]
fn hostile_names_in_results_and_rubric_never_reach_the_screen() {
    let (l, mut app) = experiment_app();
    let hostile = "\x1b[2J\x1b[H\x1b]0;owned\x07\x1b[10;10Hmoved\x1b[31mred\x1b[0m \x1bP+q\x1b\\ \u{9b}2J done\r\n";
    l.conn
        .execute(
            "UPDATE run_tasks SET domain = ?1 || domain, difficulty = difficulty || ?1",
            [hostile],
        )
        .unwrap();
    l.conn
        .execute(
            "UPDATE skill_uses SET skill = 'evil' || ?1 WHERE skill = 'pandas-basics'",
            [hostile],
        )
        .unwrap();
    let mut v = learning_fixture::version(
        "learned",
        &format!("evil{hostile}"),
        "evil",
        vec![learning_fixture::file(
            "SKILL.md",
            "---\nname: evil\n---\n# Evil\n",
        )],
    );
    v.dir = None;
    skillscope::store::learning::record_version(&l.conn, l.b.id, &v).unwrap();
    let check = |app: &mut App| {
        for size in SIZES {
            let screen = render(app, size);
            assert!(
                !screen.chars().any(|c| c.is_control() && c != '\n'),
                "{screen:?}"
            );
            assert!(
                !screen.contains("owned"),
                "OSC text must not show: {screen}"
            );
        }
    };
    press(&mut app, &l.conn, KeyCode::Char('a'));
    let data = app.results.as_ref().unwrap().data.clone().unwrap();
    let res = data.results.as_ref().unwrap();
    assert!(res.domains.iter().all(|g| g.group.contains("moved")));
    for _ in 0..6 {
        check(&mut app);
        press(&mut app, &l.conn, KeyCode::PageDown);
    }
    press(&mut app, &l.conn, KeyCode::Char('d'));
    check(&mut app);
    press(&mut app, &l.conn, KeyCode::Esc);
    press(&mut app, &l.conn, KeyCode::Char('K'));
    press(&mut app, &l.conn, KeyCode::Char('j')); // LS-B
    press(&mut app, &l.conn, KeyCode::Enter);
    let sk = app.skills.as_ref().unwrap();
    let evil = sk
        .data
        .as_ref()
        .unwrap()
        .skills
        .iter()
        .position(|s| s.name.starts_with("evil"))
        .expect("the hostile skill is listed");
    assert!(
        sk.rubric
            .as_ref()
            .unwrap()
            .scores
            .iter()
            .any(|s| s.skill_name.starts_with("evil") && s.skill_name.contains("moved")),
        "the hostile skill is scored under its sanitized name"
    );
    for _ in 0..evil {
        press(&mut app, &l.conn, KeyCode::Down);
    }
    check(&mut app);
    let screen = render(&mut app, (120, 40));
    assert!(screen.contains("rubric · evil"), "{screen}");
    assert!(
        screen.contains("score "),
        "the hostile skill has a score: {screen}"
    );
}

/// `K` on a plain run whose task folders are on this machine (the built-in examples) lists the
/// curated skills as a skill set: a cursor moves over its skills, Enter goes to a skill's files
/// and opens its SKILL.md, and the legend names only what is on screen (issue 48: no cursor,
/// Enter and Tab did nothing, so a curated SKILL.md could not be read).
#[test]
fn the_skill_browser_of_a_plain_run_opens_a_curated_skill_md() {
    use crate::support::planned_run::{empty_store, examples_run};
    let (scratch, conn) = empty_store();
    let (examples, run) = examples_run(&conn, scratch.dir.path());
    let mut app = dashboard::watching(&conn, run.run.id, Mode::Watch, "dark", now());
    press(&mut app, &conn, KeyCode::Char('K'));
    press(&mut app, &conn, KeyCode::Enter); // the curated set's skills
    press(&mut app, &conn, KeyCode::Char('j')); // the second skill
    snap("skills_plain_run", &mut app);
    let screen = render(&mut app, (120, 40));
    for part in [
        "skill sets",
        "curated",
        "acme-chart-of-accounts",
        "csv-aggregation",
    ] {
        assert!(screen.contains(part), "{part}: {screen}");
    }
    press(&mut app, &conn, KeyCode::Enter); // its files
    press(&mut app, &conn, KeyCode::Enter); // SKILL.md
    snap("skills_plain_run_skill_md", &mut app);
    for size in SIZES {
        let screen = render(&mut app, size);
        assert!(screen.contains("SKILL.md"), "{screen}");
    }
    let md = std::fs::read_to_string(
        examples.join("sales-region-totals/environment/skills/csv-aggregation/SKILL.md"),
    )
    .unwrap();
    let first_body_line = md
        .lines()
        .skip_while(|l| *l != "---")
        .skip(1)
        .skip_while(|l| *l != "---")
        .skip(1)
        .find(|l| l.trim().len() > 8)
        .unwrap()
        .trim()
        .trim_start_matches('#')
        .trim()
        .to_string();
    let screen = render(&mut app, (120, 40));
    let words: String = first_body_line.chars().take(20).collect();
    assert!(screen.contains(&words), "{words:?} of SKILL.md: {screen}");
}
