//! Acontext away mid-experiment is one "waiting for Acontext" state with its next retry — one line
//! per retry cycle in the output and the run's event log, whatever number of requests both
//! learning spaces make meanwhile — shown by `status` (and the dashboard's overview, see the
//! snapshot tests), and one line when it is back; the experiment then finishes.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::acontext_experiment::{KEY, experiment};
use crate::support::common;
use crate::support::fake_acontext::{FakeServer, FakeState};
use skillscope::experiment::plan::Plan;
use skillscope::store::learning as lq;
use skillscope::store::{Store, queries};

/// How long the server stays away once learning first waits for it.
const OUTAGE: Duration = Duration::from_secs(60);

/// Acceptance: the server down for 60 s mid-experiment leaves one waiting line per retry cycle,
/// not per request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acontext_away_for_a_minute_is_one_waiting_state_per_retry_cycle() {
    common::require_docker().await;
    let dir = tempfile::tempdir().unwrap();
    let tasks = skillscope::skillsbench::examples::materialize(dir.path()).unwrap();
    let db = dir.path().join("exp.db");
    let store = Store::open(&db).unwrap();
    let mut server = FakeServer::start(FakeState::new(KEY, true), ([127, 0, 0, 1], 0).into()).await;
    let plan: Plan = toml::from_str("name = \"away\"\ntrials = 1\n").unwrap();
    let (mut setup, exp) = experiment(&store, &server, plan, &tasks, dir.path());
    setup.learn.server_wait = Duration::from_secs(600);
    let lines: Arc<Mutex<Vec<(Instant, String)>>> = Arc::default();
    let sink = lines.clone();
    exp.client.availability().set_sink(Arc::new(move |l: &str| {
        sink.lock().unwrap().push((Instant::now(), l.to_string()))
    }));

    // The server goes away: every connection to its address is accepted and dropped (counted —
    // each is one request of a learner), as a dead backend behind a proxy does.
    server.stop().await;
    let listener = tokio::net::TcpListener::bind(server.addr).await.unwrap();
    let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = connections.clone();
    let sink_hole = tokio::spawn(async move {
        loop {
            if let Ok((sock, _)) = listener.accept().await {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                drop(sock);
            }
        }
    });
    let running = tokio::spawn({
        let (exp, setup) = (exp.clone(), setup.clone());
        async move { exp.run(&setup).await }
    });

    // Round 1 runs; learning then meets the dead server and waits.
    let t0 = Instant::now();
    while lines.lock().unwrap().is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(300),
            "learning never waited"
        );
        assert!(!running.is_finished(), "{:?}", running.await);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let waiting_from = Instant::now();
    let before = connections.load(std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(OUTAGE / 2).await;
    // `status` shows the state, since when and the next retry.
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_skillscope"))
        .args(["status", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("waiting for Acontext since") && text.contains("next retry at"),
        "{text}"
    );
    tokio::time::sleep(OUTAGE / 2).await;
    sink_hole.abort();
    let _ = sink_hole.await;
    let during = connections.load(std::sync::atomic::Ordering::SeqCst) - before;
    let waiting: Vec<(Instant, String)> = lines
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, l)| l.starts_with("waiting for Acontext"))
        .cloned()
        .collect();
    server.restart().await;
    let out = running
        .await
        .unwrap()
        .expect("the experiment finishes once it is back");
    assert!(out.finished);

    // One line per retry cycle: pauses double from 0.5 s to 30 s, so a minute holds at most 8
    // cycles — while both spaces made many more requests.
    let n = waiting.len();
    eprintln!("{n} waiting line(s) for {during} request(s) in {OUTAGE:?}");
    assert!((2..=8).contains(&n), "{n} waiting lines: {waiting:#?}");
    assert!(during >= 2 * n, "{during} requests for {n} lines");
    for pair in waiting.windows(2) {
        let gap = pair[1].0 - pair[0].0;
        assert!(
            gap >= Duration::from_millis(400),
            "two lines in one cycle ({gap:?}): {pair:#?}"
        );
    }
    assert!(waiting_from.elapsed() >= OUTAGE);
    let back = lines
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, l)| l.starts_with("Acontext is back after"))
        .count();
    assert_eq!(back, 1, "{:#?}", lines.lock().unwrap());

    // The run's event log says the same, once per cycle; the spaces no longer wait.
    let conn = store.connect().unwrap();
    let r1 = queries::find_run(&conn, "away-round1").unwrap().unwrap();
    let events: Vec<String> = queries::recent_events(&conn, r1.id, 1000)
        .unwrap()
        .into_iter()
        .map(|(_, _, m)| m)
        .collect();
    let logged = events
        .iter()
        .filter(|m| m.starts_with("waiting for Acontext"))
        .count();
    assert_eq!(logged, lines.lock().unwrap().len() - 1, "{events:#?}");
    assert_eq!(
        events
            .iter()
            .filter(|m| m.starts_with("Acontext is back after"))
            .count(),
        1
    );
    for s in lq::list_spaces(&conn).unwrap() {
        assert_eq!(s.waiting_since, None, "{s:?}");
        assert_eq!(s.state, "learned");
    }
}
