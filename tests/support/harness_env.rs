//! What every test running a real harness CLI against the scripted model shares: where containers
//! on the local daemon reach this machine, and one harness test at a time. The including test
//! binary declares `container_gateway` (`support/container_gateway.rs`) at its root.

use std::path::Path;

/// Where containers on the local daemon reach the scripted server on this machine (found once).
pub async fn gateway() -> String {
    static ADDRESS: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    ADDRESS
        .get_or_init(|| async {
            let docker = bollard::Docker::connect_with_defaults().expect("docker");
            crate::support::container_gateway::host_address(&docker).await
        })
        .await
        .clone()
}

/// One harness test at a time, across threads and processes (`cargo test` runs a file's tests in
/// parallel, nextest in separate processes): each runs a real CLI in a container, and several
/// side by side on a 2-core machine starve each other past any sensible agent budget.
pub struct Serial {
    _lock: std::fs::File,
}

/// Takes the harness-test lock (`target/harness-tests.lock`), waiting for it.
pub async fn serial() -> Serial {
    tokio::task::spawn_blocking(|| {
        use std::os::fd::AsRawFd;
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
        std::fs::create_dir_all(&dir).expect("target folder");
        let f = std::fs::File::create(dir.join("harness-tests.lock")).expect("lock file");
        let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
        assert_eq!(rc, 0, "flock: {}", std::io::Error::last_os_error());
        Serial { _lock: f }
    })
    .await
    .expect("lock")
}
