//! Dashboard speed: one full frame (overview + grid + domain pane) at 120×40, the derived models,
//! and the store snapshot query, at the evaluation's size (87 tasks × 4 conditions × 5 trials) and
//! at 10,000 trials. Run with `cargo bench --bench dashboard`.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use skillscope::perf::synthetic::{SyntheticRun, at, fill_store};
use skillscope::store::Store;
use skillscope::store::queries;
use skillscope::tui::app::{App, Mode};
use skillscope::tui::model::{Filter, GridModel, Sort};
use skillscope::tui::theme::Theme;
use skillscope::tui::views;
use skillscope::tui::worker::{Update, load_snapshot};

fn setup(tasks: usize) -> (tempfile::TempDir, Store, i64) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("bench.db")).unwrap();
    let conn = store.connect().unwrap();
    let run = fill_store(
        &conn,
        &SyntheticRun {
            tasks,
            trials: 5,
            conditions: vec![
                "no-skills".into(),
                "curated".into(),
                "skills:/data/learned/ls-a".into(),
                "skills:/data/learned/ls-b".into(),
            ],
            ..Default::default()
        },
    )
    .unwrap();
    (dir, store, run.id)
}

fn bench(c: &mut Criterion) {
    for (label, tasks) in [("87x4x5", 87), ("10000-trials", 500)] {
        let (_dir, store, run_id) = setup(tasks);
        let conn = store.connect().unwrap();
        let snapshot = Arc::new(load_snapshot(&conn, run_id).unwrap());
        assert_eq!(snapshot.trials.len(), tasks * 20);
        c.bench_function(&format!("snapshot query {label}"), |b| {
            b.iter(|| black_box(load_snapshot(&conn, run_id).unwrap()))
        });
        c.bench_function(&format!("full trial rows {label} (for comparison)"), |b| {
            b.iter(|| black_box(queries::current_trials(&conn, run_id).unwrap()))
        });
        c.bench_function(&format!("grid model {label}"), |b| {
            b.iter(|| {
                black_box(GridModel::build(
                    &snapshot,
                    &Filter::default(),
                    Sort::Domain,
                ))
            })
        });
        let now = chrono::DateTime::parse_from_rfc3339(&at(900))
            .unwrap()
            .with_timezone(&chrono::Utc);
        let mut app = App::new(
            Mode::Watch,
            Theme::load("dark").unwrap(),
            "bench.db".into(),
            now,
        );
        app.on_update(Update::Snapshot(snapshot.clone()));
        let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
        c.bench_function(&format!("frame 120x40 {label}"), |b| {
            b.iter(|| {
                term.draw(|f| views::draw(f, &mut app)).unwrap();
            })
        });
        store.writer().stop();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
