//! A Docker daemon that looks remote: a TCP listener on loopback relaying every connection to
//! the local daemon's unix socket, so `--docker-host tcp://127.0.0.1:<port>` takes skillscope's
//! remote-host paths (logs copied out through the API, harness kits in volumes) against the one
//! real daemon of this machine.

use tokio::net::{TcpListener, UnixStream};

/// The local daemon's socket (`DOCKER_HOST` when it names a unix socket).
fn socket_path() -> String {
    std::env::var("DOCKER_HOST")
        .ok()
        .and_then(|h| h.strip_prefix("unix://").map(str::to_string))
        .unwrap_or_else(|| "/var/run/docker.sock".to_string())
}

/// Starts the relay on the current runtime; returns its `tcp://127.0.0.1:<port>` address. It
/// runs until the runtime ends.
pub async fn start() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let socket = socket_path();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let socket = socket.clone();
            tokio::spawn(async move {
                if let Ok(mut unix) = UnixStream::connect(&socket).await {
                    let _ = tokio::io::copy_bidirectional(&mut tcp, &mut unix).await;
                }
            });
        }
    });
    format!("tcp://{addr}")
}
