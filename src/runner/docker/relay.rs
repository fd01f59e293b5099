//! Relays from a local Docker daemon's default bridge to model proxies on this machine's
//! loopback (see [`crate::runner::proxy`]).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use bollard::Docker;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;

use super::docker_error;
use crate::runner::RunnerError;

/// Relays from the bridge address to loopback proxies, one listener per proxy, for the life of
/// the process.
#[derive(Default)]
pub struct Relays {
    by_target: Mutex<HashMap<SocketAddr, SocketAddr>>,
}

impl Relays {
    /// The relay address (on the default bridge of the local daemon `docker`) that forwards to
    /// `target`; started on first use.
    ///
    /// # Errors
    /// [`RunnerError::Task`] when the bridge's address on this machine cannot be found or the
    /// relay cannot listen there.
    pub async fn relay_to(
        &self,
        docker: &Docker,
        target: SocketAddr,
    ) -> Result<SocketAddr, RunnerError> {
        let mut map = self.by_target.lock().await;
        if let Some(a) = map.get(&target) {
            return Ok(*a);
        }
        let ip = bridge_address(docker).await?;
        let listener = TcpListener::bind(SocketAddr::new(IpAddr::V4(ip), 0))
            .await
            .map_err(|e| {
                RunnerError::Task(format!(
                    "cannot listen on the Docker bridge address {ip} to relay to the model proxy at {target}: {e}"
                ))
            })?;
        let addr = listener
            .local_addr()
            .map_err(|e| RunnerError::Task(format!("relay to the model proxy at {target}: {e}")))?;
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
        tracing::info!(%target, relay = %addr, "relaying the model proxy to containers");
        map.insert(target, addr);
        Ok(addr)
    }
}

/// The IPv4 address of the local daemon's default bridge on this machine: the interface Docker
/// names in the bridge network's options (`docker0` by default), else the gateway its IPAM
/// config reports.
async fn bridge_address(docker: &Docker) -> Result<Ipv4Addr, RunnerError> {
    let net = docker
        .inspect_network(
            "bridge",
            None::<bollard::query_parameters::InspectNetworkOptions>,
        )
        .await
        .map_err(|e| docker_error("inspecting the default bridge network", e))?;
    let iface = net
        .options
        .as_ref()
        .and_then(|o| o.get("com.docker.network.bridge.name").cloned())
        .unwrap_or_else(|| "docker0".to_string());
    if let Some(ip) = interface_ipv4(&iface) {
        return Ok(ip);
    }
    net.ipam
        .and_then(|i| i.config)
        .into_iter()
        .flatten()
        .find_map(|c| c.gateway.and_then(|g| g.parse().ok()))
        .ok_or_else(|| {
            RunnerError::Task(format!(
                "the Docker bridge interface {iface} has no IPv4 address on this machine; a model proxy on localhost cannot be relayed to containers"
            ))
        })
}

/// The first IPv4 address of network interface `name` on this machine.
fn interface_ipv4(name: &str) -> Option<Ipv4Addr> {
    let mut addrs: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a linked list we free with freeifaddrs below; every pointer is
    // checked for null before it is read.
    unsafe {
        if libc::getifaddrs(&mut addrs) != 0 {
            return None;
        }
        let mut found = None;
        let mut cur = addrs;
        while !cur.is_null() {
            let ifa = &*cur;
            if !ifa.ifa_addr.is_null()
                && (*ifa.ifa_addr).sa_family as i32 == libc::AF_INET
                && !ifa.ifa_name.is_null()
                && std::ffi::CStr::from_ptr(ifa.ifa_name).to_str() == Ok(name)
            {
                let sin = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                found = Some(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
                break;
            }
            cur = ifa.ifa_next;
        }
        libc::freeifaddrs(addrs);
        found
    }
}
