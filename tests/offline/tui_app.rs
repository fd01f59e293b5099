//! Dashboard behaviour without a terminal: keys in, effects out (retry, retry all, cancel, quit,
//! the skill browser's navigation).

use crate::support::{dashboard, learning_fixture};
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use skillscope::perf::synthetic::SyntheticRun;
use skillscope::store::{Outcome, TrialStatus};
use skillscope::tui::app::{App, Confirm, Effect, Mode, Popup};
use skillscope::tui::screens::skills::SkillsFocus;
use skillscope::tui::state::Pane;
use skillscope::tui::worker::{Request, SkillOrigin, Update, load_skills};

fn key(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}

/// An app in `mode` on a synthetic run of 10 tasks × 3 trials.
fn app(mode: Mode) -> App {
    let f = synthetic();
    dashboard::watching(&f.conn, f.run.id, mode, "dark", chrono::Utc::now())
}

fn synthetic() -> dashboard::Filled {
    dashboard::filled(&SyntheticRun {
        tasks: 10,
        trials: 3,
        ..Default::default()
    })
}

/// Moves the cursor to the first cell whose attempt satisfies `pred`.
fn go_to(app: &mut App, pred: impl Fn(&skillscope::store::TrialBrief) -> bool) -> i64 {
    for _ in 0..200 {
        if let Some(t) = app.selected_trial()
            && pred(t)
        {
            return t.id;
        }
        let before = (app.grid.row, app.grid.col);
        app.on_key(key(KeyCode::Right));
        if (app.grid.row, app.grid.col) == before {
            app.grid.col = 0;
            app.on_key(key(KeyCode::Down));
        }
    }
    panic!("no such cell");
}

#[test]
fn r_retries_a_failed_trial_and_refuses_others() {
    let mut a = app(Mode::Watch);
    let id = go_to(&mut a, |t| t.outcome == Some(Outcome::Fail));
    assert_eq!(
        a.on_key(key(KeyCode::Char('r'))),
        vec![Effect::Request(Request::Retry(vec![id]))]
    );
    go_to(&mut a, |t| t.outcome == Some(Outcome::Pass));
    assert!(a.on_key(key(KeyCode::Char('r'))).is_empty());
    assert!(a.status.as_deref().unwrap().contains("passed"));
    go_to(&mut a, |t| t.status == TrialStatus::Queued);
    assert!(a.on_key(key(KeyCode::Char('r'))).is_empty());
}

#[test]
fn big_r_asks_then_retries_every_failed_trial_in_the_filter() {
    let mut a = app(Mode::Watch);
    a.on_key(key(KeyCode::Char('/')));
    for c in "domain:office".chars() {
        a.on_key(key(KeyCode::Char(c)));
    }
    a.on_key(key(KeyCode::Enter));
    let s = a.snapshot.clone().unwrap();
    let expected: Vec<i64> = a
        .grid_model
        .shown_trials()
        .map(|i| &s.trials[i])
        .filter(|t| t.status == TrialStatus::Done && t.outcome != Some(Outcome::Pass))
        .map(|t| t.id)
        .collect();
    assert!(!expected.is_empty());
    assert!(a.on_key(key(KeyCode::Char('R'))).is_empty());
    assert_eq!(
        a.popup,
        Some(Popup::Confirm(Confirm::RetryAll(expected.clone())))
    );
    assert_eq!(
        a.on_key(key(KeyCode::Char('y'))),
        vec![Effect::Request(Request::Retry(expected))]
    );
    assert_eq!(a.popup, None);
    // Saying no does nothing.
    a.on_key(key(KeyCode::Char('R')));
    assert!(a.on_key(key(KeyCode::Char('n'))).is_empty());
}

/// `R` retries failed trials as `retry --failed` does: a trial the operator cancelled is a
/// decision, not a failure, and stays out of the question (issue 48: "Retry 9 failed trial(s)?"
/// counted the one just cancelled); with only cancelled ones left, the status names the command
/// that runs them.
#[test]
fn big_r_leaves_cancelled_trials_alone() {
    let f = synthetic();
    let failed: Vec<i64> = f
        .conn
        .prepare("SELECT id FROM trials WHERE run_id = ?1 AND outcome = 'fail' AND superseded = 0")
        .unwrap()
        .query_map([f.run.id], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(failed.len() >= 2, "{failed:?}");
    let cancelled = failed[0];
    f.conn
        .execute(
            "UPDATE trials SET outcome = 'cancelled' WHERE id = ?1",
            [cancelled],
        )
        .unwrap();
    let mut a = dashboard::watching(&f.conn, f.run.id, Mode::Watch, "dark", chrono::Utc::now());
    a.on_key(key(KeyCode::Char('R')));
    let Some(Popup::Confirm(Confirm::RetryAll(ids))) = a.popup.clone() else {
        panic!("R asks: {:?}", a.popup)
    };
    assert!(
        !ids.contains(&cancelled),
        "the cancelled trial is not retried"
    );
    assert!(ids.contains(&failed[1]));
    a.on_key(key(KeyCode::Char('n')));
    // The cancelled trial the only one without a pass: nothing to ask, the way to run it named.
    f.conn
        .execute(
            "UPDATE trials SET outcome = 'pass', reward = 1.0 WHERE run_id = ?1 AND status = 'done' AND outcome != 'pass' AND id != ?2",
            [f.run.id, cancelled],
        )
        .unwrap();
    let mut a = dashboard::watching(&f.conn, f.run.id, Mode::Watch, "dark", chrono::Utc::now());
    assert!(a.on_key(key(KeyCode::Char('R'))).is_empty());
    assert_eq!(a.popup, None);
    let status = a.status.clone().unwrap_or_default();
    assert!(status.contains("1 cancelled"), "{status}");
    assert!(status.contains("--cancelled"), "{status}");
}

#[test]
fn c_cancels_a_running_trial_after_confirming() {
    let mut a = app(Mode::Watch);
    let id = go_to(&mut a, |t| t.status.is_active());
    assert!(a.on_key(key(KeyCode::Char('c'))).is_empty());
    assert!(matches!(
        a.popup,
        Some(Popup::Confirm(Confirm::Cancel { .. }))
    ));
    assert_eq!(
        a.on_key(key(KeyCode::Enter)),
        vec![Effect::Request(Request::Cancel(id))]
    );
}

#[test]
fn quitting_watch_never_stops_the_run_but_run_mode_asks() {
    let mut w = app(Mode::Watch);
    assert_eq!(w.on_key(key(KeyCode::Char('q'))), vec![Effect::Quit]);
    let mut r = app(Mode::Run);
    assert!(r.on_key(key(KeyCode::Char('q'))).is_empty());
    assert_eq!(r.popup, Some(Popup::Confirm(Confirm::StopRun)));
    assert_eq!(r.on_key(key(KeyCode::Char('y'))), vec![Effect::StopRun]);
    assert!(r.stopping);
}

/// Ctrl-C in a run's dashboard asks to stop the run; a second Ctrl-C — with the question open, or
/// once the run is stopping — quits at once, as docs/operations.md says of a second Ctrl-C. In
/// `watch` it just closes the dashboard; with another question open it answers no.
#[test]
fn a_second_ctrl_c_quits_at_once() {
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    let mut r = app(Mode::Run);
    assert!(r.on_key(ctrl_c).is_empty());
    assert_eq!(r.popup, Some(Popup::Confirm(Confirm::StopRun)));
    assert!(
        Confirm::StopRun
            .answers()
            .contains(&("[Ctrl-C]", " quit without waiting")),
        "the dialog says what a second Ctrl-C does"
    );
    assert!(Confirm::StopRun.question(true).contains("resumes it"));
    assert!(
        Confirm::StopRun
            .question(false)
            .contains("A dry run is not resumed"),
        "a dry run's dialog does not promise a resume"
    );
    assert_eq!(r.on_key(ctrl_c), vec![Effect::Quit]);
    // Confirmed with y, the run stops cleanly; Ctrl-C while it stops quits at once.
    let mut r = app(Mode::Run);
    r.on_key(ctrl_c);
    assert_eq!(r.on_key(key(KeyCode::Char('y'))), vec![Effect::StopRun]);
    assert_eq!(r.on_key(ctrl_c), vec![Effect::Quit]);
    // The help open: Ctrl-C is the first one (asks).
    let mut r = app(Mode::Run);
    r.on_key(key(KeyCode::Char('?')));
    assert!(r.on_key(ctrl_c).is_empty());
    assert_eq!(r.popup, Some(Popup::Confirm(Confirm::StopRun)));
    // Watch: quits; another question open: Ctrl-C answers no.
    let mut w = app(Mode::Watch);
    assert_eq!(w.on_key(ctrl_c), vec![Effect::Quit]);
    let mut w = app(Mode::Watch);
    go_to(&mut w, |t| t.status.is_active());
    w.on_key(key(KeyCode::Char('c')));
    assert!(w.on_key(ctrl_c).is_empty());
    assert_eq!(w.popup, None);
}

#[test]
fn enter_opens_detail_and_esc_closes_it() {
    let mut a = app(Mode::Watch);
    let id = go_to(&mut a, |t| t.status == TrialStatus::Done);
    let key_of = a.selected_trial().unwrap().key();
    assert_eq!(
        a.on_key(key(KeyCode::Enter)),
        vec![Effect::Request(Request::Detail(Some(key_of)))]
    );
    assert!(a.detail.is_some());
    assert_eq!(
        a.on_key(key(KeyCode::Esc)),
        vec![Effect::Request(Request::Detail(None))]
    );
    assert!(a.detail.is_none());
    assert!(id > 0);
}

fn learning_app() -> (learning_fixture::Learning, App) {
    let l = learning_fixture::learning();
    let app = dashboard::watching(&l.conn, l.run.id, Mode::Watch, "dark", chrono::Utc::now());
    (l, app)
}

/// Presses a key; answers skill browser requests from the store as the worker does, and returns
/// the effects.
fn press(app: &mut App, conn: &rusqlite::Connection, c: KeyCode) -> Vec<Effect> {
    let effects = app.on_key(key(c));
    for e in &effects {
        if let Effect::Request(Request::Skills(Some(id))) = e {
            app.on_update(Update::Skills(Arc::new(load_skills(conn, *id).unwrap())));
        }
    }
    effects
}

#[test]
fn snapshot_has_the_experiment_and_its_spaces_counted() {
    let (l, app) = learning_app();
    let s = app.snapshot.clone().unwrap();
    assert_eq!(s.experiment.as_ref().unwrap().phase, "learn");
    let labels: Vec<&str> = s.spaces.iter().map(|p| p.space.label.as_str()).collect();
    assert_eq!(labels, ["LS-A", "LS-B"]);
    let a = &s.spaces[0];
    assert_eq!(a.finished, a.total, "LS-A is learned");
    assert_eq!(
        (a.rejected, a.mislabeled, a.current.is_none()),
        (1, 0, true)
    );
    let b = &s.spaces[1];
    assert_eq!((b.mislabeled, b.errors), (1, 1));
    let steps = skillscope::store::learning::steps(&l.conn, l.b.id).unwrap();
    // The current trial is the first one in learning order that is not final: the one waiting
    // for its learning.
    let cur = b.current.as_ref().unwrap();
    assert_eq!(
        (cur.step.as_str(), cur.learning_status.as_deref()),
        ("labeled", Some("distilling"))
    );
    assert_eq!(
        cur.seq,
        steps
            .iter()
            .find(|s| !skillscope::store::learning::Step::parse(&s.step)
                .is_final(s.finished_at.is_some()))
            .unwrap()
            .seq
    );
    assert_eq!(b.total as usize, steps.len());
    assert_eq!(
        b.by_step.iter().map(|(_, n)| *n).sum::<u64>(),
        b.total,
        "{:?}",
        b.by_step
    );
    // Pipeline order.
    assert_eq!(b.by_step.first().unwrap().0, "queued");
    assert!(b.export.as_ref().unwrap().dir.ends_with("LS-B-v1"));
}

#[test]
fn skill_browser_navigates_spaces_skills_files_and_back() {
    let (l, mut a) = learning_app();
    assert_eq!(
        press(&mut a, &l.conn, KeyCode::Char('K')),
        vec![Effect::Request(Request::Skills(Some(l.a.id)))]
    );
    let sk = a.skills.as_ref().unwrap();
    assert_eq!(sk.focus, SkillsFocus::Spaces);
    assert_eq!(sk.data.as_ref().unwrap().space.label, "LS-A");
    // Down selects LS-B and asks for its data.
    assert_eq!(
        press(&mut a, &l.conn, KeyCode::Char('j')),
        vec![Effect::Request(Request::Skills(Some(l.b.id)))]
    );
    press(&mut a, &l.conn, KeyCode::Enter);
    let sk = a.skills.as_ref().unwrap();
    assert_eq!(sk.focus, SkillsFocus::Skills);
    let names: Vec<(&str, SkillOrigin)> = sk
        .data
        .as_ref()
        .unwrap()
        .skills
        .iter()
        .map(|s| (s.name.as_str(), s.origin))
        .collect();
    assert_eq!(
        names,
        [
            ("mesh-analysis", SkillOrigin::CuratedLearned),
            ("pandas-basics", SkillOrigin::Curated),
            ("verify-units", SkillOrigin::Learned),
        ]
    );
    press(&mut a, &l.conn, KeyCode::Right);
    assert_eq!(a.skills.as_ref().unwrap().focus, SkillsFocus::Files);
    press(&mut a, &l.conn, KeyCode::Char('j'));
    let sk = a.skills.as_ref().unwrap();
    let skill = sk.selected_skill().unwrap();
    assert_eq!(skill.files[sk.file].path, "references/density.md");
    press(&mut a, &l.conn, KeyCode::Char('k'));
    press(&mut a, &l.conn, KeyCode::Enter);
    let sk = a.skills.as_ref().unwrap();
    assert_eq!(sk.focus, SkillsFocus::Doc);
    let doc: Vec<String> = sk.doc.iter().map(|d| d.line.to_string()).collect();
    assert!(
        doc.iter().any(|l| l.contains("Solve 3d-scan-calc")),
        "{doc:?}"
    );

    // d shows the diff curated → learned, and again the file.
    press(&mut a, &l.conn, KeyCode::Char('d'));
    let sk = a.skills.as_ref().unwrap();
    assert!(sk.diff);
    let doc: Vec<String> = sk.doc.iter().map(|d| d.line.to_string()).collect();
    assert_eq!(doc[0], "--- curated/SKILL.md");
    assert!(
        sk.doc.iter().any(|d| d.line.to_string()
            == "- Principle: Compute the volume with the script, never by hand."
            && d.mark == skillscope::tui::skilldoc::Mark::Diff(similar::ChangeTag::Insert)),
        "{doc:?}"
    );
    assert!(
        sk.doc
            .iter()
            .any(|d| d.line.to_string() == "- The material density"
                && d.mark == skillscope::tui::skilldoc::Mark::Diff(similar::ChangeTag::Delete)),
        "{doc:?}"
    );
    press(&mut a, &l.conn, KeyCode::Char('d'));
    assert!(!a.skills.as_ref().unwrap().diff);

    // Esc goes back one level at a time, then closes the browser.
    for focus in [SkillsFocus::Files, SkillsFocus::Skills, SkillsFocus::Spaces] {
        assert!(press(&mut a, &l.conn, KeyCode::Esc).is_empty());
        assert_eq!(a.skills.as_ref().unwrap().focus, focus);
    }
    assert_eq!(
        press(&mut a, &l.conn, KeyCode::Esc),
        vec![Effect::Request(Request::Skills(None))]
    );
    assert!(a.skills.is_none());
}

#[test]
fn skill_browser_sessions_tab_and_q_closes() {
    let (l, mut a) = learning_app();
    press(&mut a, &l.conn, KeyCode::Char('K'));
    press(&mut a, &l.conn, KeyCode::Char('j'));
    press(&mut a, &l.conn, KeyCode::Tab);
    let sk = a.skills.as_ref().unwrap();
    assert_eq!(sk.tab, 1);
    let n = sk.data.as_ref().unwrap().steps.len();
    press(&mut a, &l.conn, KeyCode::End);
    assert_eq!(a.skills.as_ref().unwrap().session, n - 1);
    // Esc leaves the sessions tab; q closes the browser from anywhere.
    press(&mut a, &l.conn, KeyCode::Esc);
    assert_eq!(a.skills.as_ref().unwrap().tab, 0);
    assert_eq!(
        press(&mut a, &l.conn, KeyCode::Char('q')),
        vec![Effect::Request(Request::Skills(None))]
    );
    assert!(a.skills.is_none());
    // Updates for a closed browser are ignored.
    a.on_update(Update::Skills(Arc::new(
        load_skills(&l.conn, l.a.id).unwrap(),
    )));
    assert!(a.skills.is_none());
}

/// Without a learning space the browser lists the skills the trials saw: it asks the worker for
/// the analysis (not for a space), Enter opens nothing, and closing stops the analysis.
#[test]
fn skill_browser_without_spaces_asks_for_the_skills_the_trials_saw() {
    let mut a = app(Mode::Watch);
    assert_eq!(
        a.on_key(key(KeyCode::Char('K'))),
        vec![Effect::Request(Request::Results(true))]
    );
    assert!(a.skills.is_some());
    assert!(a.on_key(key(KeyCode::Enter)).is_empty());
    assert_eq!(
        a.on_key(key(KeyCode::Esc)),
        vec![Effect::Request(Request::Results(false))]
    );
}

/// The data worker follows an experiment's run and answers skill browser requests, re-reading
/// them when the store changes.
#[test]
fn worker_follows_the_experiment_and_loads_a_space() {
    use skillscope::tui::worker::{DataWorker, RunSelector};
    let l = learning_fixture::learning();
    let mut w = DataWorker::start(
        &l.dir.path().join("s.db"),
        RunSelector::Experiment("demo".into()),
        std::time::Duration::from_millis(20),
    )
    .unwrap();
    let requests = w.sender();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut next = |what: &str| loop {
        assert!(
            std::time::Instant::now() < deadline,
            "no {what} from the worker"
        );
        match w.updates.try_recv() {
            Ok(u) => break u,
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    };
    loop {
        if let Update::Snapshot(s) = next("snapshot") {
            assert_eq!(s.run.name, "demo-round1");
            assert_eq!(s.spaces.len(), 2);
            break;
        }
    }
    requests.send(Request::Skills(Some(l.b.id))).unwrap();
    let b = loop {
        if let Update::Skills(b) = next("skill browser data") {
            break b;
        }
    };
    assert_eq!(b.space.id, l.b.id);
    assert_eq!(b.skills.len(), 3);
    // A change in the store is sent again.
    skillscope::store::learning::add_source(
        &l.conn,
        l.b.id,
        "pandas-basics",
        b.steps[0].trial_id,
        "updated",
    )
    .unwrap();
    loop {
        if let Update::Skills(b) = next("the changed skill browser data") {
            let pandas = b.skills.iter().find(|s| s.name == "pandas-basics").unwrap();
            assert_eq!(pandas.sources.len(), 1);
            break;
        }
    }
}

#[test]
fn a_opens_results_from_either_pane_and_esc_closes_it() {
    use skillscope::tui::keymap::Context;
    use skillscope::tui::model::Grouping;
    let mut a = app(Mode::Watch);
    assert_eq!(
        a.on_key(key(KeyCode::Char('a'))),
        vec![Effect::Request(Request::Results(true))]
    );
    assert_eq!(a.context(), Context::Results);
    let r = a.results.as_ref().unwrap();
    assert_eq!(
        (r.grouping, r.scroll, r.data.is_none()),
        (Grouping::Domain, 0, true)
    );
    a.on_key(key(KeyCode::Char('d')));
    assert_eq!(a.results.as_ref().unwrap().grouping, Grouping::Difficulty);
    // Nothing drawn yet: nothing to scroll.
    a.on_key(key(KeyCode::Down));
    a.on_key(key(KeyCode::End));
    assert_eq!(a.results.as_ref().unwrap().scroll, 0);
    // Keys of the grid do nothing here.
    assert!(a.on_key(key(KeyCode::Char('r'))).is_empty());
    assert_eq!(
        a.on_key(key(KeyCode::Esc)),
        vec![Effect::Request(Request::Results(false))]
    );
    assert!(a.results.is_none());
    assert_eq!(a.context(), Context::Grid);
    // From the domain pane too, and q goes back rather than quitting.
    a.on_key(key(KeyCode::Tab));
    assert_eq!(a.context(), Context::Domains);
    assert_eq!(
        a.on_key(key(KeyCode::Char('a'))),
        vec![Effect::Request(Request::Results(true))]
    );
    assert_eq!(
        a.on_key(key(KeyCode::Char('q'))),
        vec![Effect::Request(Request::Results(false))]
    );
    // The skill browser's key works from the domain pane as well.
    a.on_key(key(KeyCode::Char('K')));
    assert!(a.skills.is_some());
}

#[test]
fn results_scroll_within_the_drawn_lines() {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    let mut a = app(Mode::Watch);
    a.on_key(key(KeyCode::Char('a')));
    let mut t = Terminal::new(TestBackend::new(80, 12)).unwrap();
    // The analysis, as the worker would send it.
    let f = synthetic();
    a.on_update(Update::Results(Arc::new(
        skillscope::tui::worker::analysis::load_results(&f.conn, f.run.id).unwrap(),
    )));
    t.draw(|f| skillscope::tui::views::draw(f, &mut a)).unwrap();
    let r = a.results.as_ref().unwrap();
    let (lines, page) = (r.lines, r.page);
    assert!(lines > page, "{lines} lines in {page}");
    a.on_key(key(KeyCode::End));
    assert_eq!(a.results.as_ref().unwrap().scroll, lines - page);
    a.on_key(key(KeyCode::Down));
    assert_eq!(a.results.as_ref().unwrap().scroll, lines - page);
    a.on_key(key(KeyCode::PageUp));
    assert_eq!(
        a.results.as_ref().unwrap().scroll,
        (lines - page).saturating_sub(page)
    );
    a.on_key(key(KeyCode::Home));
    assert_eq!(a.results.as_ref().unwrap().scroll, 0);
}

/// The worker computes the Results view's analysis and the skill browser's rubric while they
/// are open, re-sends the cached values when a view reopens, and recomputes only when a trial
/// finishes — not when something else in the store changes.
#[test]
fn worker_caches_results_and_rubric_by_finished_trials() {
    use skillscope::store::queries;
    use skillscope::tui::worker::{DataWorker, RunSelector};
    let l = learning_fixture::learning();
    let r2 = learning_fixture::round2(&l.conn);
    learning_fixture::invoke_skills(&l.conn, &[&l.run, &r2]);
    let mut w = DataWorker::start(
        &l.dir.path().join("s.db"),
        RunSelector::Experiment("demo".into()),
        std::time::Duration::from_millis(20),
    )
    .unwrap();
    let requests = w.sender();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut next = |what: &str| loop {
        assert!(
            std::time::Instant::now() < deadline,
            "no {what} from the worker"
        );
        match w.updates.try_recv() {
            Ok(Update::Notice(n)) => panic!("worker notice: {n}"),
            Ok(u) => break Some(u),
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) if what.is_empty() => break None,
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    };
    loop {
        if let Some(Update::Snapshot(s)) = next("snapshot") {
            assert_eq!(s.run.name, "demo-round2");
            break;
        }
    }
    requests.send(Request::Results(true)).unwrap();
    let first = loop {
        if let Some(Update::Results(r)) = next("results") {
            break r;
        }
    };
    assert_eq!(first.title, "experiment demo");
    let res = first.results.as_ref().unwrap();
    let labels: Vec<&str> = res.conditions.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels, ["A", "B", "A'", "B'"]);
    assert_eq!(first.done, 24 + 18);
    requests.send(Request::Skills(Some(l.b.id))).unwrap();
    let rubric = loop {
        if let Some(Update::Rubric(r)) = next("rubric") {
            break r;
        }
    };
    assert_eq!(rubric.runs, ["demo-round1", "demo-round2"]);
    let mesh = rubric.skill("mesh-analysis").unwrap();
    assert!(mesh.invocations >= 12, "{}", mesh.invocations);
    assert!(rubric.skill("verify-units").is_none());

    // Something else changes (an event): a new snapshot, but neither analysis is recomputed.
    // Waits for the snapshot however slow the machine, then watches 600 ms more for a recompute.
    queries::add_event(&l.conn, r2.id, "info", "operator note").unwrap();
    let mut snapshots = 0;
    let mut quiet_until = None;
    loop {
        let u = if quiet_until.is_some() {
            next("")
        } else {
            next("snapshot after an event")
        };
        match u {
            Some(Update::Snapshot(_)) => {
                snapshots += 1;
                quiet_until.get_or_insert(
                    std::time::Instant::now() + std::time::Duration::from_millis(600),
                );
            }
            Some(Update::Results(_) | Update::Rubric(_)) => panic!("recomputed without a change"),
            Some(_) => {}
            None if quiet_until.is_some_and(|t| std::time::Instant::now() >= t) => break,
            None => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    }
    assert!(snapshots >= 1);

    // Closing and reopening the view re-sends the cached analysis as is.
    requests.send(Request::Results(false)).unwrap();
    requests.send(Request::Results(true)).unwrap();
    let again = loop {
        if let Some(Update::Results(r)) = next("cached results") {
            break r;
        }
    };
    assert!(Arc::ptr_eq(&first, &again), "the cached value");

    // A trial finishes: both are recomputed.
    let open = queries::current_trials(&l.conn, r2.id)
        .unwrap()
        .into_iter()
        .find(|t| t.status != TrialStatus::Done)
        .unwrap();
    queries::finish_trial(
        &l.conn,
        open.id,
        &queries::TrialPatch {
            outcome: Some(Outcome::Pass),
            reward: Some(1.0),
            finished_at: Some(skillscope::perf::synthetic::at(600)),
            ..Default::default()
        },
    )
    .unwrap();
    let (mut results, mut rubric2) = (None, None);
    while results.is_none() || rubric2.is_none() {
        match next("recomputed results and rubric") {
            Some(Update::Results(r)) => results = Some(r),
            Some(Update::Rubric(r)) => rubric2 = Some(r),
            _ => {}
        }
    }
    assert_eq!(results.unwrap().done, first.done + 1);
    assert!(!Arc::ptr_eq(&rubric, &rubric2.unwrap()));
}

/// The dashboard scores in memory, writing nothing to the store; its report is the one
/// `score_run` followed by `skill_report` gives.
#[test]
fn rubric_in_memory_matches_score_run_and_skill_report() {
    use skillscope::analysis::invocations::{CategoryTable, Window, score_run, skill_report};
    let l = learning_fixture::learning();
    let r2 = learning_fixture::round2(&l.conn);
    learning_fixture::invoke_skills(&l.conn, &[&l.run, &r2]);
    let count = |conn: &rusqlite::Connection| -> i64 {
        conn.query_row("SELECT COUNT(*) FROM skill_invocations", [], |r| r.get(0))
            .unwrap()
    };
    let mem = skillscope::tui::worker::analysis::load_rubric(&l.conn, r2.id).unwrap();
    assert_eq!(count(&l.conn), 0, "nothing written");
    assert_eq!(mem.window_end.as_deref(), Some("2026-11-21T10:02:40Z"));
    for r in [&l.run, &r2] {
        score_run(&l.conn, r.id, &CategoryTable::default()).unwrap();
    }
    assert_eq!(count(&l.conn) as usize, mem.invocations);
    let stored = skill_report(
        &l.conn,
        &Window::at(mem.window_end.as_deref().unwrap(), &[l.run.id, r2.id]),
    )
    .unwrap();
    assert_eq!(mem.scores, stored);
    let names: Vec<&str> = stored.iter().map(|s| s.skill_name.as_str()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
}

/// Draws `app` on a test terminal of `w`×`h` (filling its click map) and returns the screen.
fn draw(app: &mut App, w: u16, h: u16) -> String {
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
    t.draw(|f| skillscope::tui::views::draw(f, app)).unwrap();
    t.backend().to_string()
}

fn mouse(kind: MouseEventKind, column: u16, row: u16) -> MouseEvent {
    MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    }
}

fn click(column: u16, row: u16) -> MouseEvent {
    mouse(MouseEventKind::Down(MouseButton::Left), column, row)
}

/// Where `needle` first shows on a screen drawn by [`draw`]: (column, row).
fn find(screen: &str, needle: &str) -> (u16, u16) {
    for (row, line) in screen.lines().enumerate() {
        // TestBackend's lines are quoted: drop the quote before counting columns.
        let line = line.trim_start_matches('"');
        if let Some(i) = line.find(needle) {
            return (line[..i].chars().count() as u16, row as u16);
        }
    }
    panic!("{needle:?} not on screen:\n{screen}");
}

#[test]
fn a_click_selects_the_cell_under_it_and_a_second_click_opens_it() {
    let mut a = app(Mode::Watch);
    let screen = draw(&mut a, 120, 40);
    let task = a.grid_model.rows.iter().find_map(|r| match r {
        skillscope::tui::model::GridRow::Task { task_id, .. } => Some(task_id.clone()),
        _ => None,
    });
    let second = a
        .grid_model
        .task_rows
        .get(2)
        .and_then(|&i| match &a.grid_model.rows[i] {
            skillscope::tui::model::GridRow::Task { task_id, .. } => Some(task_id.clone()),
            _ => None,
        })
        .unwrap();
    assert!(task.is_some());
    // The third task row, the fifth column: its cell's x comes from the click map.
    let (_, y) = find(&screen, &second);
    let cols = a.hits.grid.clone().unwrap().cols;
    let (x, _, col) = cols[4];
    assert!(a.on_mouse(click(x, y)).is_empty());
    assert_eq!((a.grid.row, a.grid.col), (2, col));
    // Clicking the selected cell again opens its detail.
    let key_of = a.selected_trial().map(|t| t.key());
    let effects = a.on_mouse(click(x, y));
    assert_eq!(effects, vec![Effect::Request(Request::Detail(key_of))]);
    assert!(a.detail.is_some());
    // In the detail a click on a tab selects it.
    let screen = draw(&mut a, 120, 40);
    let (x, y) = find(&screen, "verifier");
    a.on_mouse(click(x + 1, y));
    assert_eq!(a.detail.as_ref().unwrap().tab, 2);
}

#[test]
fn the_wheel_scrolls_what_is_under_the_pointer_and_clicks_focus_panes() {
    let mut a = app(Mode::Watch);
    let screen = draw(&mut a, 120, 40);
    // The wheel over the grid moves the cursor three rows a notch.
    let (x, y) = find(&screen, "task ");
    a.on_mouse(mouse(MouseEventKind::ScrollDown, x + 2, y + 4));
    assert_eq!(a.grid.row, 3);
    a.on_mouse(mouse(MouseEventKind::ScrollUp, x + 2, y + 4));
    assert_eq!(a.grid.row, 0);
    // A click in the event log focuses it; the wheel scrolls it.
    let (x, y) = find(&screen, "event log");
    a.on_mouse(click(x, y + 2));
    assert_eq!(a.pane, Pane::Events);
    a.on_mouse(mouse(MouseEventKind::ScrollDown, x, y + 2));
    assert_eq!(a.events.scroll, 3);
    // At 80×24 one pane shows: the wheel scrolls it.
    let screen = draw(&mut a, 80, 24);
    assert!(screen.contains("event log"), "{screen}");
    a.on_mouse(mouse(MouseEventKind::ScrollUp, 10, 10));
    assert_eq!(a.events.scroll, 0);
    // Help: the wheel scrolls it, a click closes it.
    a.on_key(key(KeyCode::Char('?')));
    draw(&mut a, 80, 24);
    a.on_mouse(mouse(MouseEventKind::ScrollDown, 10, 10));
    assert_eq!(a.help_scroll, 3);
    a.on_mouse(click(10, 10));
    assert!(a.popup.is_none());
}

/// `/` starts from the filter in force (with a space after it), the grid follows each key, an
/// unknown `status:` or `cond:` value is an error that keeps the grid and Enter, and Esc puts
/// back the filter from before.
#[test]
fn the_filter_is_edited_in_place_and_applied_as_typed() {
    let mut a = app(Mode::Watch);
    let all = a.grid_model.task_rows.len();
    let type_in = |a: &mut App, s: &str| {
        for c in s.chars() {
            a.on_key(key(KeyCode::Char(c)));
        }
    };
    a.on_key(key(KeyCode::Char('/')));
    type_in(&mut a, "status:failed");
    assert_eq!(a.grid.filter.query, "status:failed", "applied as typed");
    assert!(a.grid_model.task_rows.len() <= all);
    a.on_key(key(KeyCode::Enter));
    assert!(a.grid.editing.is_none());
    // Again: the text so far and a space, so a new term does not run into the last.
    a.on_key(key(KeyCode::Char('/')));
    assert_eq!(a.grid.editing.as_deref(), Some("status:failed "));
    type_in(&mut a, "cond:zzz");
    let err = a.grid.error.clone().unwrap();
    assert!(err.contains("no condition matches \"zzz\""), "{err}");
    assert!(err.contains("A no-skills"), "{err}");
    // The last text that applies (`cond:` with no value yet keeps every condition).
    assert!(
        !a.grid.filter.query.contains("zzz"),
        "{}",
        a.grid.filter.query
    );
    assert!(a.grid.filter.query.starts_with("status:failed"));
    a.on_key(key(KeyCode::Enter));
    assert!(a.grid.editing.is_some(), "Enter does not accept an error");
    // Ctrl-W drops the bad term; cond:B (the label) applies.
    a.on_key(KeyEvent::new(KeyCode::Char('w'), KeyModifiers::CONTROL));
    type_in(&mut a, "cond:B");
    assert!(a.grid.error.is_none());
    assert!(
        a.grid_model
            .columns
            .iter()
            .all(|c| c.condition == "curated")
    );
    // Esc restores the filter from before `/`.
    a.on_key(key(KeyCode::Esc));
    assert_eq!(a.grid.filter.query, "status:failed");
    a.on_key(key(KeyCode::Char('/')));
    type_in(&mut a, "x status:bogus");
    assert!(
        a.grid
            .error
            .as_deref()
            .is_some_and(|e| e.contains("unknown status \"bogus\""))
    );
}

/// Tab goes grid → domains → event log → grid; `e` jumps to the event log; Esc leaves it.
#[test]
fn tab_reaches_every_pane() {
    let mut a = app(Mode::Watch);
    assert_eq!(a.pane, Pane::Grid);
    for want in [Pane::Domains, Pane::Events, Pane::Grid] {
        a.on_key(key(KeyCode::Tab));
        assert_eq!(a.pane, want);
    }
    a.on_key(key(KeyCode::Char('e')));
    assert_eq!(a.pane, Pane::Events);
    assert!(!a.events.rows.is_empty());
    a.on_key(key(KeyCode::Esc));
    assert_eq!(a.pane, Pane::Grid);
}

/// The dashboard's footer at 120 columns.
fn footer_of(app: &mut App) -> String {
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40)).unwrap();
    t.draw(|f| skillscope::tui::views::draw(f, app)).unwrap();
    t.backend().to_string()
}

/// Every trial has its verdict: `q` finishes a run (its engine stays up only for retries from
/// the dashboard) and the footer says so; an experiment's engine is still at work then
/// (learning, export, the next round), so its footer says `q` stops it, and `q` asks first.
#[test]
fn q_finishes_a_run_but_asks_before_stopping_an_experiment() {
    let q = key(KeyCode::Char('q'));
    // Every trial judged, and the engine alive (the fixture's owner process is gone).
    let all_judged = |a: &mut App| {
        a.progress.running = 0;
        a.progress.queued = 0;
        std::sync::Arc::make_mut(a.snapshot.as_mut().unwrap()).owner_alive = Some(true);
    };
    let mut r = app(Mode::Run);
    all_judged(&mut r);
    let screen = footer_of(&mut r);
    assert!(screen.contains("finish the run"), "{screen}");
    assert!(
        screen.contains("every trial judged · q finishes the run"),
        "{screen}"
    );
    // With a trial cancelled, the title says every trial ended, and how many were cancelled.
    r.progress.cancelled = 2;
    let screen = footer_of(&mut r);
    assert!(
        screen.contains("every trial ended (2 trials cancelled)"),
        "{screen}"
    );
    assert_eq!(r.on_key(q), vec![Effect::FinishRun]);
    let mut e = app(Mode::Run);
    e.works_past_its_trials = true;
    all_judged(&mut e);
    let footer = footer_of(&mut e);
    assert!(
        footer.contains("stop the run")
            && !footer.contains("finish the run")
            && !footer.contains("q finishes")
            && footer.contains("every trial judged · r retries"),
        "{footer}"
    );
    assert!(e.on_key(q).is_empty());
    assert_eq!(e.popup, Some(Popup::Confirm(Confirm::StopRun)));
    assert_eq!(e.on_key(key(KeyCode::Char('y'))), vec![Effect::StopRun]);
}
