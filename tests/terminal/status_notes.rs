//! `status` in a real 80×24 terminal: the notes under its table wrap between words, under their
//! explanation, instead of being cut by the terminal mid-word (`pro`/`vider`), and so do the
//! lines above it (a run's header).

use std::time::Duration;

use super::tui_tmux::Tmux;
use crate::support::common::Scratch;

#[test]
fn status_notes_wrap_between_words_at_80_columns() {
    let s = Scratch::new();
    let conn = s.store.connect().unwrap();
    skillscope::perf::synthetic::fill_store(
        &conn,
        &skillscope::perf::synthetic::SyntheticRun {
            name: "notes-run".into(),
            tasks: 4,
            trials: 2,
            done_fraction: 1.0,
            ..Default::default()
        },
    )
    .unwrap();
    drop(conn);
    let bin = env!("CARGO_BIN_EXE_skillscope");
    let tmux = Tmux::start_sized(
        &format!("skillscope-notes-{}", std::process::id()),
        &format!(
            "{bin} status --db {}; echo STATUS-DONE; sleep 60",
            s.db().display()
        ),
        (80, 24),
    );
    let screen = tmux.wait_for("STATUS-DONE", Duration::from_secs(30));
    let lines: Vec<&str> = screen.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("infra = trials"))
        .unwrap_or_else(|| panic!("no infra note:\n{screen}"));
    // Its second line is its own, indented under the explanation, and no word was cut.
    assert!(
        lines[at + 1].starts_with("        ") && !lines[at + 1].starts_with("         "),
        "{screen}"
    );
    let note = format!("{} {}", lines[at], lines[at + 1].trim_start());
    assert!(note.contains("provider error"), "{screen}");
    assert!(note.ends_with("Method D counts them 0"), "{screen}");
    for l in &lines {
        assert!(l.chars().count() <= 80, "{l:?}");
    }
    // The run's header, longer than 80 columns, wraps between words too (its start may have
    // scrolled off the 24 rows): its last line, indented under the run, holds its time whole.
    let created = lines
        .iter()
        .find(|l| l.contains("created 20"))
        .unwrap_or_else(|| panic!("no header:\n{screen}"));
    let time = created.trim_end().rsplit(' ').next().unwrap();
    assert!(created.starts_with("  "), "{screen}");
    assert!(
        time.len() == 24 && time.ends_with('Z'),
        "{time:?} in {screen}"
    );
}
