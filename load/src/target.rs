//! The server under load: its endpoints, and the rule that it is this machine.

use std::net::IpAddr;

use reqwest::Url;

use crate::error::LoadError;

/// A server's endpoints, derived from its base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `http://host:port/graphql`
    pub graphql: String,
    /// `ws://host:port/graphql`
    pub websocket: String,
    /// `http://host:port/readyz`
    pub readyz: String,
}

impl Target {
    /// Parse `url` (`http://host:port`, with or without a path) and refuse anything that is not
    /// loopback.
    pub fn parse(url: &str) -> Result<Self, LoadError> {
        let bad = |reason: &str| LoadError::BadUrl { url: url.to_string(), reason: reason.to_string() };
        let parsed = Url::parse(url).map_err(|e| bad(&e.to_string()))?;
        let ws_scheme = match parsed.scheme() {
            "http" => "ws",
            "https" => "wss",
            _ => return Err(bad("the scheme must be http or https")),
        };
        let host = parsed.host_str().ok_or_else(|| bad("no host"))?;
        check_loopback(host)?;
        let authority = match parsed.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        };
        Ok(Self {
            graphql: format!("{}://{authority}/graphql", parsed.scheme()),
            websocket: format!("{ws_scheme}://{authority}/graphql"),
            readyz: format!("{}://{authority}/readyz", parsed.scheme()),
        })
    }
}

/// Accept only this machine: `localhost`, 127.0.0.0/8 or `::1` (brackets allowed). A load
/// generator pointed elsewhere by mistake would be an attack on someone's server.
pub fn check_loopback(host: &str) -> Result<(), LoadError> {
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    let loopback = bare.eq_ignore_ascii_case("localhost") || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if loopback { Ok(()) } else { Err(LoadError::NotLoopback { host: host.to_string() }) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_accepted() {
        for url in [
            "http://127.0.0.1:8080",
            "http://127.9.8.7:1/",
            "http://localhost:80",
            "http://LOCALHOST",
            "http://[::1]:9",
        ] {
            assert!(Target::parse(url).is_ok(), "{url}");
        }
        let t = Target::parse("http://[::1]:9/graphql").unwrap();
        assert_eq!(t.websocket, "ws://[::1]:9/graphql");
        assert_eq!(t.readyz, "http://[::1]:9/readyz");
    }

    #[test]
    fn other_hosts_are_refused() {
        for url in [
            "http://10.0.0.1:8080",
            "http://example.com",
            "http://localhost.example.com",
            "http://[::2]:1",
            "http://0.0.0.0:8080",
            "http://[::ffff:10.0.0.1]:1",
        ] {
            assert!(matches!(Target::parse(url), Err(LoadError::NotLoopback { .. })), "{url}");
        }
        assert!(matches!(Target::parse("ftp://127.0.0.1"), Err(LoadError::BadUrl { .. })));
        assert!(matches!(Target::parse("not a url"), Err(LoadError::BadUrl { .. })));
    }
}
