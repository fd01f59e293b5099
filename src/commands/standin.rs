//! `skillscope acontext-standin`: serves the Acontext stand-in ([`crate::acontext::standin`]) on
//! 127.0.0.1 until Ctrl-C or SIGTERM — for trying `learn`, `export` or `experiment` offline against
//! a server that learns nothing real.

use color_eyre::eyre::{Result, WrapErr};

use crate::acontext::standin::{Api, FakeServer, FakeState, STANDIN_LABEL};
use crate::cli::StandinArgs;

/// Runs `skillscope acontext-standin`.
///
/// # Errors
/// The port cannot be bound.
pub async fn execute(args: StandinArgs) -> Result<()> {
    let api = match &args.api {
        Some(name) => Api::parse(name).map_err(|e| color_eyre::eyre::eyre!(e))?,
        None if args.no_status_patch => Api::Released,
        None => Api::ReleasedWithStatusPatch,
    };
    let state = FakeState::with_api(&args.key, api);
    state.lock().map(|mut s| s.keep_log = false).ok();
    let mut server = FakeServer::try_start(state, ([127, 0, 0, 1], args.port).into())
        .await
        .wrap_err_with(|| format!("starting the Acontext stand-in on 127.0.0.1:{}", args.port))?;
    crate::outln!(
        "serving {STANDIN_LABEL} on {} (key {}, API {}: status PATCH {}); Ctrl-C stops it",
        server.base_url(),
        args.key,
        api.as_str(),
        if api.status_patch() { "on" } else { "off" }
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
