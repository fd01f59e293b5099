//! `skillscope acontext-standin`: serves the Acontext stand-in ([`crate::acontext::standin`]) on
//! 127.0.0.1 until Ctrl-C or SIGTERM — for trying `learn`, `export` or `experiment` offline against
//! a server that learns nothing real.

use color_eyre::eyre::{Result, WrapErr};

use crate::acontext::standin::{FakeServer, FakeState, STANDIN_LABEL};
use crate::cli::StandinArgs;

/// Runs `skillscope acontext-standin`.
///
/// # Errors
/// The port cannot be bound.
pub async fn execute(args: StandinArgs) -> Result<()> {
    let state = FakeState::new(&args.key, !args.no_status_patch);
    state.lock().map(|mut s| s.keep_log = false).ok();
    let mut server = FakeServer::try_start(state, ([127, 0, 0, 1], args.port).into())
        .await
        .wrap_err_with(|| format!("starting the Acontext stand-in on 127.0.0.1:{}", args.port))?;
    crate::outln!(
        "serving {STANDIN_LABEL} on {} (key {}, status PATCH {}); Ctrl-C stops it",
        server.base_url(),
        args.key,
        if args.no_status_patch { "off" } else { "on" }
    );
    crate::outln!(
        "try: ACONTEXT_BASE_URL={} ACONTEXT_API_KEY={} skillscope experiment plans/examples.toml",
        server.base_url(),
        args.key
    );
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    server.stop().await;
    Ok(())
}
