//! Keys of the dashboard in a real terminal, over stores filled without Docker: `R` at 60×15
//! leaves a cancelled trial alone and its status message neither covers the key hints nor stays;
//! `K` on a plain run opens a curated SKILL.md; `watch` without a name follows the running run
//! (issue 48).

use std::time::{Duration, Instant};

use super::tui_tmux::Tmux;
use crate::support::common::Scratch;
use crate::support::planned_run::{PlannedRun, RunPlan, empty_store, examples_run, mark_live};

/// The trial ids of `run`'s retry commands, in the order queued.
fn retried(s: &Scratch, run: i64) -> Vec<i64> {
    let c = s.store.connect().unwrap();
    c.prepare("SELECT trial_id FROM commands WHERE run_id = ?1 AND kind = 'retry' ORDER BY id")
        .unwrap()
        .query_map([run], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// `watch` at 60×15 over a run with failed trials, one of which the operator cancelled: `R` asks
/// about the failed ones only and queues exactly those (issue 48: "Retry 9 failed trial(s)?"
/// counted the cancelled one, which went back to the queue); the status message that answers
/// sits above the key hints, never over them, and goes by itself (issue 48: it never cleared
/// and covered the hints at 60 columns).
#[test]
fn big_r_at_60x15_skips_a_cancelled_trial_and_its_message_goes() {
    let s = Scratch::new();
    let conn = s.store.connect().unwrap();
    skillscope::perf::synthetic::fill_store(
        &conn,
        &skillscope::perf::synthetic::SyntheticRun {
            name: "keys-run".into(),
            tasks: 12,
            trials: 3,
            done_fraction: 1.0,
            ..Default::default()
        },
    )
    .unwrap();
    let run = skillscope::store::queries::find_run(&conn, "keys-run")
        .unwrap()
        .unwrap()
        .id;
    let failed: Vec<i64> = conn
        .prepare("SELECT id FROM trials WHERE run_id = ?1 AND outcome = 'fail' AND superseded = 0")
        .unwrap()
        .query_map([run], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(failed.len() >= 3, "{failed:?}");
    let cancelled = failed[0];
    conn.execute(
        "UPDATE trials SET outcome = 'cancelled', reward = NULL WHERE id = ?1",
        [cancelled],
    )
    .unwrap();
    drop(conn);

    let bin = env!("CARGO_BIN_EXE_skillscope");
    let tmux = Tmux::start_sized(
        &format!("skillscope-keys-{}", std::process::id()),
        &format!("{bin} watch --db {} keys-run", s.db().display()),
        (60, 15),
    );
    tmux.wait_for("keys-run", Duration::from_secs(30));
    // 12 tasks do not fit 15 rows: the grid says how many are below (issue 48: 2 of 5 showed
    // without a sign).
    tmux.wait_for("more tasks", Duration::from_secs(10));
    tmux.keys(&["R"]);
    let asked = tmux.wait_for("failed trial(s)", Duration::from_secs(5));
    let n: usize = asked
        .split("Retry ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in:\n{asked}"));
    assert!(n >= 2, "{asked}");
    tmux.keys(&["y"]);
    let shown = tmux.wait_for("retry command(s) queued", Duration::from_secs(10));
    let last = shown.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    assert!(last.contains("? help"), "the key hints stay:\n{shown}");
    let ids = retried(&s, run);
    assert_eq!(ids.len(), n, "as many queued as asked about");
    assert!(
        !ids.contains(&cancelled),
        "the cancelled trial is left alone"
    );
    // Exactly the run's other trials without a pass: failures, timeouts, errors.
    let conn = s.store.connect().unwrap();
    let mut unpassed: Vec<i64> = conn
        .prepare(
            "SELECT id FROM trials WHERE run_id = ?1 AND superseded = 0 AND outcome IS NOT NULL
             AND outcome NOT IN ('pass', 'cancelled')",
        )
        .unwrap()
        .query_map([run], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut queued = ids.clone();
    queued.sort_unstable();
    unpassed.sort_unstable();
    assert_eq!(queued, unpassed);

    // No key: the message goes once it was shown long enough; the hints are still there.
    let t0 = Instant::now();
    let gone = loop {
        let now = tmux.screen();
        if !now.contains("retry command(s) queued") {
            break now;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(skillscope::tui::app::STATUS_SECS as u64 + 10),
            "the message stayed:\n{now}"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    assert!(gone.contains("? help"), "{gone}");
    assert!(
        t0.elapsed() >= Duration::from_secs(skillscope::tui::app::STATUS_SECS as u64 - 2),
        "it was readable for a while"
    );
    tmux.keys(&["q"]);
}

/// `K` over a plain run of the built-in examples, in a real terminal at 80×24 and 60×15: the
/// curated skills are a skill set, a cursor moves over them, Enter opens a skill's files and then
/// its SKILL.md, whose text is on screen (issue 48: no cursor, Enter and Tab did nothing).
#[test]
fn big_k_on_a_plain_run_opens_a_curated_skill_md() {
    let (scratch, conn) = empty_store();
    let (examples, _run) = examples_run(&conn, scratch.dir.path());
    let md = std::fs::read_to_string(
        examples.join("sales-region-totals/environment/skills/csv-aggregation/SKILL.md"),
    )
    .unwrap();
    // A line of its body (after the frontmatter), as the screen starts it.
    let body: String = md
        .split("---")
        .nth(2)
        .unwrap()
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| l.len() > 8)
        .unwrap()
        .chars()
        .take(16)
        .collect();
    let bin = env!("CARGO_BIN_EXE_skillscope");
    for size in [(80, 24), (60, 15)] {
        let tmux = Tmux::start_sized(
            &format!("skillscope-skills-{}-{}", size.0, std::process::id()),
            &format!("{bin} watch --db {} examples", scratch.db().display()),
            size,
        );
        tmux.wait_for("examples", Duration::from_secs(30));
        tmux.keys(&["K"]);
        tmux.wait_for("curated", Duration::from_secs(10));
        tmux.keys(&["Enter"]);
        tmux.wait_for("acme-chart-of-accounts", Duration::from_secs(10));
        tmux.keys(&["j", "Enter"]);
        tmux.wait_for("SKILL.md", Duration::from_secs(10));
        tmux.keys(&["Enter"]);
        tmux.wait_for(&body, Duration::from_secs(10));
        tmux.keys(&["q"]);
    }
}

/// `watch` without a name, in a real terminal, shows the run an engine is running now, not the
/// run created after it (issue 48: it picked the run created last).
#[test]
fn watch_without_a_name_shows_the_running_run() {
    let (scratch, conn) = empty_store();
    let plan = |name| RunPlan {
        name,
        n_trials: 1,
        tasks: &[("alpha", "Finance", "easy")],
        ..Default::default()
    };
    let live = PlannedRun::new(&conn, &plan("live-run"));
    PlannedRun::new(&conn, &plan("made-later"));
    // This process is the live run's engine.
    mark_live(&conn, live.run.id);
    let bin = env!("CARGO_BIN_EXE_skillscope");
    let tmux = Tmux::start_sized(
        &format!("skillscope-current-{}", std::process::id()),
        &format!("{bin} watch --db {}", scratch.db().display()),
        (80, 24),
    );
    let screen = tmux.wait_for("live-run", Duration::from_secs(30));
    assert!(!screen.contains("made-later"), "{screen}");
    tmux.keys(&["q"]);
}
