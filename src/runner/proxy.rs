//! Model proxies on this machine. Operators often point `ANTHROPIC_BASE_URL` or `OPENAI_BASE_URL`
//! at a proxy on the host (LiteLLM, a company gateway on `localhost:4000`), which the agent in a
//! container cannot reach as `localhost` (that is the container itself). For a local Docker daemon
//! skillscope relays (the Docker backend's `relay`): it listens on the address of the daemon's default bridge on this machine
//! (what Docker's `host-gateway` resolves to), forwards every connection to the proxy's loopback
//! address, and gives the container the base URL with `host.docker.internal:<relay port>` and the
//! extra host `host.docker.internal:host-gateway`. A proxy bound to `127.0.0.1` only is reached as
//! well as one on every interface. A remote daemon's containers cannot reach this machine's
//! loopback at all: such a base URL is refused with a clear message.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// The name containers use for this machine.
pub const HOST_ALIAS: &str = "host.docker.internal";
/// The extra host entry that makes [`HOST_ALIAS`] resolve to the bridge gateway.
pub const HOST_GATEWAY_ENTRY: &str = "host.docker.internal:host-gateway";

/// The loopback address and port a URL names, when it names `localhost`, `127.0.0.0/8` or `::1`
/// (the scheme's default port when none is given).
pub fn loopback_target(url: &str) -> Option<SocketAddr> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, tail) = v6.split_once(']')?;
        let port = tail.strip_prefix(':').map(str::parse).transpose().ok()?;
        (h.to_string(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p.parse().ok()?)),
            None => (authority.to_string(), None),
        }
    };
    let ip: IpAddr = if host.eq_ignore_ascii_case("localhost") {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        host.parse().ok()?
    };
    ip.is_loopback()
        .then(|| SocketAddr::new(ip, port.unwrap_or(default_port)))
}

/// `url` with its host and port replaced by `host:port` (scheme, path and query kept).
pub fn rewrite_host(url: &str, host: &str, port: u16) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let cut = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    format!("{scheme}://{host}:{port}{}", &rest[cut..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_urls_are_recognised() {
        let t = |u: &str| loopback_target(u);
        assert_eq!(
            t("http://localhost:4000"),
            Some("127.0.0.1:4000".parse().unwrap())
        );
        assert_eq!(
            t("http://127.0.0.1:4000/v1"),
            Some("127.0.0.1:4000".parse().unwrap())
        );
        assert_eq!(
            t("https://LOCALHOST/v1"),
            Some("127.0.0.1:443".parse().unwrap())
        );
        assert_eq!(
            t("http://[::1]:8080/x"),
            Some("[::1]:8080".parse().unwrap())
        );
        assert_eq!(
            t("http://user:pw@127.0.0.2:9/"),
            Some("127.0.0.2:9".parse().unwrap())
        );
        assert_eq!(t("https://api.anthropic.com"), None);
        assert_eq!(t("http://10.0.0.5:4000"), None);
        assert_eq!(t("not a url"), None);
    }

    #[test]
    fn rewriting_keeps_scheme_and_path() {
        assert_eq!(
            rewrite_host("http://localhost:4000/v1?x=1", HOST_ALIAS, 39001),
            "http://host.docker.internal:39001/v1?x=1"
        );
        assert_eq!(
            rewrite_host("http://127.0.0.1:4000", HOST_ALIAS, 5),
            "http://host.docker.internal:5"
        );
    }
}
