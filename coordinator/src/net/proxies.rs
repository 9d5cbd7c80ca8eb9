//! Trusted reverse proxies (`serve --trusted-proxy IP|CIDR`, repeatable): which address a
//! request is from.
//!
//! Behind a reverse proxy every TCP connection comes from the proxy, so the per-address rate
//! limit, the address blocks (registration limits, replica separation) and the log lines would
//! all see one address. A proxy names the client in `X-Forwarded-For`, appending the address it
//! received the connection from; but any client can write that header, so it is believed only
//! when the TCP peer is a proxy the operator named, and then only as far as the chain of
//! trusted proxies reaches: the client is the rightmost address of the header that is not
//! itself a trusted proxy (everything left of it was written by someone untrusted). Without a
//! trusted peer the header is ignored. The rule is the pure [`client_address`].

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use ipnet::IpNet;

/// The operator's trusted proxies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// These addresses and networks.
    pub fn new(nets: Vec<IpNet>) -> TrustedProxies {
        TrustedProxies(nets)
    }

    /// Whether there are none (the header is never believed).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `ip` is one of them.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|n| n.contains(&ip))
    }
}

/// Parses `--trusted-proxy`: an IP address (one host) or a CIDR block.
pub fn parse_proxy(text: &str) -> Result<IpNet, String> {
    let text = text.trim();
    IpNet::from_str(text)
        .or_else(|_| IpAddr::from_str(text).map(IpNet::from))
        .map(|n| n.trunc())
        .map_err(|_| format!("{text:?} is not an IP address or a CIDR block (e.g. 10.0.0.0/8)"))
}

/// One `X-Forwarded-For` entry: an address, perhaps with a port (`1.2.3.4:5`, `[::1]:5`).
fn forwarded_entry(text: &str) -> Option<IpAddr> {
    let text = text.trim();
    IpAddr::from_str(text)
        .ok()
        .or_else(|| SocketAddr::from_str(text).ok().map(|s| s.ip()))
        .map(|ip| ip.to_canonical())
}

/// The client's address: the TCP `peer` unless it is a trusted proxy; then the rightmost
/// address of the `X-Forwarded-For` values (`forwarded`, in header order) that is not a trusted
/// proxy. When every listed address is trusted, the leftmost one; when an entry cannot be read,
/// the nearest trusted hop before it (nothing left of garbage is believed).
pub fn client_address<'a>(
    proxies: &TrustedProxies,
    peer: IpAddr,
    forwarded: impl DoubleEndedIterator<Item = &'a str>,
) -> IpAddr {
    let mut client = peer.to_canonical();
    if !proxies.contains(client) {
        return client;
    }
    let entries: Vec<&str> = forwarded.flat_map(|v| v.split(',')).collect();
    for entry in entries.iter().rev() {
        let Some(ip) = forwarded_entry(entry) else {
            return client;
        };
        client = ip;
        if !proxies.contains(ip) {
            return ip;
        }
    }
    client
}

/// The client's address of a request, as [`client_address`] found it (put in the request's
/// extensions by the API's outermost layer; absent without connect info).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

impl ClientAddr {
    /// The client's address of a request with these extensions, if it was found.
    pub fn of(extensions: &axum::http::Extensions) -> Option<IpAddr> {
        extensions.get::<ClientAddr>().map(|c| c.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxies(list: &[&str]) -> TrustedProxies {
        TrustedProxies::new(list.iter().map(|p| parse_proxy(p).unwrap()).collect())
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_header_is_believed_only_from_a_trusted_peer_and_only_as_far_as_the_trusted_chain() {
        let p = proxies(&["127.0.0.1", "10.0.0.0/8"]);
        let at = |peer: &str, headers: &[&str]| {
            client_address(&p, ip(peer), headers.iter().copied()).to_string()
        };
        // An untrusted peer: the header is ignored, whatever it says.
        assert_eq!(at("203.0.113.7", &["198.51.100.1"]), "203.0.113.7");
        assert_eq!(at("203.0.113.7", &[]), "203.0.113.7");
        // A trusted peer: the rightmost untrusted entry; a client's own spoofed entries to its
        // left change nothing.
        assert_eq!(at("127.0.0.1", &["198.51.100.1"]), "198.51.100.1");
        assert_eq!(
            at("127.0.0.1", &["1.1.1.1, 198.51.100.1, 10.1.2.3"]),
            "198.51.100.1"
        );
        // Several header lines are one list, in order.
        assert_eq!(
            at("127.0.0.1", &["1.1.1.1", "198.51.100.2 , 10.0.0.9"]),
            "198.51.100.2"
        );
        // No header, or only trusted hops: the leftmost trusted address.
        assert_eq!(at("10.0.0.1", &[]), "10.0.0.1");
        assert_eq!(at("127.0.0.1", &["10.0.0.5, 10.0.0.6"]), "10.0.0.5");
        // Garbage stops the walk at the nearest trusted hop before it.
        assert_eq!(at("127.0.0.1", &["1.1.1.1, nonsense"]), "127.0.0.1");
        assert_eq!(at("127.0.0.1", &["1.1.1.1, unknown, 10.0.0.7"]), "10.0.0.7");
        // Ports and IPv6, mapped IPv4 as the plain address.
        assert_eq!(at("127.0.0.1", &["198.51.100.3:4711"]), "198.51.100.3");
        assert_eq!(at("127.0.0.1", &["[2001:db8::1]:80"]), "2001:db8::1");
        assert_eq!(at("::ffff:127.0.0.1", &["2001:db8::2"]), "2001:db8::2");
        assert_eq!(at("::ffff:203.0.113.9", &["1.1.1.1"]), "203.0.113.9");
        // None trusted: the peer always.
        let none = TrustedProxies::default();
        assert_eq!(
            client_address(&none, ip("127.0.0.1"), ["1.1.1.1"].into_iter()).to_string(),
            "127.0.0.1"
        );
    }

    #[test]
    fn a_proxy_is_an_address_or_a_cidr_block() {
        assert_eq!(
            parse_proxy("127.0.0.1").unwrap().to_string(),
            "127.0.0.1/32"
        );
        assert_eq!(parse_proxy("10.1.2.3/8").unwrap().to_string(), "10.0.0.0/8");
        assert_eq!(parse_proxy("::1").unwrap().to_string(), "::1/128");
        assert!(parse_proxy("10.0.0.0/33").is_err());
        let e = parse_proxy("localhost").unwrap_err();
        assert!(e.contains("not an IP address"), "{e}");
    }
}
