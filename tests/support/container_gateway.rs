//! Where a container on a daemon's default bridge network reaches the machine the daemon runs on:
//! the gateway of the container's default route, read from `/proc/net/route` inside a throwaway
//! busybox container.
//!
//! Not from `docker network inspect bridge`: Debian's Docker 20.10 reports a `Gateway` in the
//! bridge's IPAM config only when it adopted a `docker0` that already had an address, so a daemon
//! that created `docker0` itself (every fresh machine) reports only the subnet. The route a
//! container really gets is what the harness CLIs use, on fresh and reused daemons alike, local or
//! behind a relay.

#![allow(dead_code)]

use std::net::Ipv4Addr;
use std::time::Duration;

use bollard::Docker;
use skillscope::runner::ExecEnd;
use skillscope::runner::docker::base_image::{BUSYBOX_IMAGE, ensure_busybox};

/// The IPv4 gateway of the default route in a `/proc/net/route` table (hex fields in host byte
/// order, little-endian here), or `None` when the table has no default route.
pub fn default_gateway(route_table: &str) -> Option<Ipv4Addr> {
    route_table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 3 || f[1] != "00000000" {
            return None;
        }
        let raw = u32::from_str_radix(f[2], 16).ok()?;
        Some(Ipv4Addr::from(raw.to_le_bytes())).filter(|a| !a.is_unspecified())
    })
}

/// The address containers on `docker`'s default bridge reach its machine at (e.g. `172.17.0.1`).
///
/// # Panics
/// When the busybox image cannot be made, the container cannot start, or it has no default route:
/// the tests that need this cannot run without it.
pub async fn host_address(docker: &Docker) -> String {
    ensure_busybox(docker).await.expect("busybox base image");
    let daemon = uuid::Uuid::new_v4().to_string();
    let c = skillscope::runner::docker::start_helper(
        docker,
        &daemon,
        BUSYBOX_IMAGE,
        "gateway-probe",
        true,
    )
    .await
    .expect("start a probe container on the default bridge");
    let read = c
        .sh_output("cat /proc/net/route", Duration::from_secs(30))
        .await;
    c.remove().await;
    let (end, table) = read.expect("read /proc/net/route in the probe container");
    assert_eq!(end.end, ExecEnd::Exited, "reading the route table");
    default_gateway(&table)
        .unwrap_or_else(|| panic!("the probe container has no default route:\n{table}"))
        .to_string()
}

#[test]
fn the_default_route_is_read_in_host_byte_order() {
    let table = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
                 eth0\t00000000\t010011AC\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
                 eth0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n";
    assert_eq!(default_gateway(table), Some(Ipv4Addr::new(172, 17, 0, 1)));
    assert_eq!(default_gateway("Iface\tDestination\tGateway\n"), None);
}
