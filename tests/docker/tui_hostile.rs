//! Control-sequence injection: a container that prints escape sequences (clear screen, OSC window
//! title, cursor moves) and plants a symlink in its log folder; the dashboard shows its output as
//! inert text.

use crate::support::{common, dashboard};
use std::sync::Arc;

use common::{Scratch, one};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use skillscope::skillsbench::Condition;
use skillscope::tui::app::Mode;
use skillscope::tui::views;
use skillscope::tui::worker::{Update, load_detail};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn container_escape_sequences_render_as_inert_text() {
    let s = Scratch::new();
    let out = s
        .run(s.request("hostile", &["hostile-logs"], vec![Condition::NoSkills], 1))
        .await;
    let rows = s.trials(out.run.id);
    let trial = one(&rows, "hostile-logs", "no-skills");
    // The raw log really holds the escapes.
    let raw = std::fs::read(
        std::path::Path::new(trial.trial_dir.as_ref().unwrap()).join("agent/oracle.txt"),
    )
    .unwrap();
    assert!(
        raw.windows(2).any(|w| w == b"\x1b]"),
        "fixture should print an OSC sequence"
    );

    let conn = s.store.connect().unwrap();
    let mut app = dashboard::watching(&conn, out.run.id, Mode::Watch, "dark", chrono::Utc::now());
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    let detail = load_detail(&conn, out.run.id, &trial.key()).unwrap();
    let agent_log = detail.logs.iter().find(|l| l.label == "agent").unwrap();
    assert!(agent_log.text.contains("hello"), "{:?}", agent_log.text);
    app.on_update(Update::Detail(Arc::new(detail)));
    let mut seen_hello = false;
    for _ in 0..4 {
        let mut t = Terminal::new(TestBackend::new(120, 40)).unwrap();
        t.draw(|f| views::draw(f, &mut app)).unwrap();
        let screen = t.backend().to_string();
        assert!(
            !screen.chars().any(|c| c.is_control() && c != '\n'),
            "{screen:?}"
        );
        assert!(
            !screen.contains("pwned"),
            "the OSC title must not show as text: {screen}"
        );
        seen_hello |= screen.contains("hello");
        app.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
    }
    assert!(seen_hello, "the printable part of the output is shown");
}
