//! The webhook SSRF guard: which addresses a call may reach, checked on the URL
//! when a run is created, and by the HTTP client's resolver and redirect policy on
//! every connection the call makes.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Whether an address is internal: loopback, private, link-local (cloud metadata),
/// shared, unspecified, multicast, broadcast, documentation or reserved — for IPv6
/// also unique-local, and IPv4 addresses mapped or translated into IPv6.
pub(crate) fn internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => internal_v4(v4),
        IpAddr::V6(v6) => internal_v6(v6),
    }
}

fn internal_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240
}

fn internal_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return internal_v4(v4);
    }
    let s = ip.segments();
    // 64:ff9b::/96 translates to an IPv4 address.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        let [a, b] = s[6].to_be_bytes();
        let [c, d] = s[7].to_be_bytes();
        return internal_v4(Ipv4Addr::new(a, b, c, d));
    }
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (s[0] & 0xfe00) == 0xfc00
        || (s[0] & 0xffc0) == 0xfe80
        || (s[0] == 0x2001 && s[1] == 0x0db8)
        || s[..6] == [0, 0, 0, 0, 0, 0]
}

/// Whether `host` (as written in a URL, lowercased) is allowed.
fn allowed(host: &str, allow: &[String]) -> bool {
    let host = host.trim_matches(['[', ']']);
    allow.iter().any(|a| a.eq_ignore_ascii_case(host))
}

/// Why an address may not be called.
fn refusal(host: &str, ip: IpAddr) -> String {
    format!(
        "`{host}` is or resolves to {ip}, an internal address: webhooks go to public \
         hosts unless the server allows this one (`Webhooks::allow`)"
    )
}

/// Checks a webhook URL: http or https, with a host that is allowed or is (and
/// resolves to) no internal address. The reason when not.
pub(crate) async fn check_url(text: &str, allow: &[String]) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("`{text}` is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "`{}` is not a webhook scheme: use http or https",
            url.scheme()
        ));
    }
    let Some(host) = url.host_str().map(str::to_string) else {
        return Err(format!("`{text}` names no host"));
    };
    if allowed(&host, allow) {
        return Ok(url);
    }
    if let Ok(ip) = host.trim_matches(['[', ']']).parse::<IpAddr>() {
        return if internal(ip) {
            Err(refusal(&host, ip))
        } else {
            Ok(url)
        };
    }
    let port = url.port_or_known_default().unwrap_or(80);
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|e| format!("`{host}` does not resolve: {e}"))?
        .collect();
    match addrs.iter().find(|a| internal(a.ip())) {
        Some(bad) => Err(refusal(&host, bad.ip())),
        None if addrs.is_empty() => Err(format!("`{host}` resolves to no address")),
        None => Ok(url),
    }
}

/// The HTTP client's resolver: a name that is not allowed and resolves to an
/// internal address is an error, so no connection (a redirect's included) reaches
/// one through DNS.
pub(crate) struct Guarded {
    pub(crate) allow: Arc<Vec<String>>,
}

impl Resolve for Guarded {
    fn resolve(&self, name: Name) -> Resolving {
        let allow = self.allow.clone();
        Box::pin(async move {
            let host = name.as_str().to_string();
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if !allowed(&host, &allow)
                && let Some(bad) = addrs.iter().find(|a| internal(a.ip()))
            {
                return Err(refusal(&host, bad.ip()).into());
            }
            let addrs: Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// Follows at most 5 redirects, each to http(s) and — when its host is an address
/// — to no internal one (names are checked by [`Guarded`]).
pub(crate) fn redirects(allow: Arc<Vec<String>>) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= 5 {
            return attempt.error("more than 5 redirects");
        }
        let url = attempt.url();
        if !matches!(url.scheme(), "http" | "https") {
            let why = format!("a redirect to `{}`, not http(s)", url.scheme());
            return attempt.error(why);
        }
        let host = url.host_str().unwrap_or("").to_string();
        match host.trim_matches(['[', ']']).parse::<IpAddr>() {
            Ok(ip) if internal(ip) && !allowed(&host, &allow) => {
                let why = refusal(&host, ip);
                attempt.error(why)
            }
            _ => attempt.follow(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_recognised() {
        for ip in [
            "127.0.0.1",
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "64:ff9b::a9fe:a9fe",
            "::127.0.0.1",
        ] {
            assert!(internal(ip.parse().expect(ip)), "{ip} is internal");
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(!internal(ip.parse().expect(ip)), "{ip} is public");
        }
    }

    #[tokio::test]
    async fn urls_to_internal_hosts_are_refused_unless_allowed() {
        for url in [
            "http://127.0.0.1:9/hook",
            "http://10.0.0.1/hook",
            "http://169.254.169.254/latest/meta-data",
            "http://[::1]:9/hook",
            "http://localhost:9/hook",
        ] {
            let why = check_url(url, &[]).await.expect_err(url);
            assert!(why.contains("internal address"), "{url}: {why}");
        }
        for url in ["ftp://example.com/hook", "not a url", "file:///etc/passwd"] {
            assert!(check_url(url, &[]).await.is_err(), "{url}");
        }
        let allow = vec![
            "127.0.0.1".to_string(),
            "::1".to_string(),
            "localhost".to_string(),
        ];
        for url in [
            "http://127.0.0.1:9/hook",
            "http://[::1]:9/hook",
            "http://localhost:9/",
        ] {
            assert!(check_url(url, &allow).await.is_ok(), "{url}");
        }
        assert!(check_url("https://93.184.216.34/hook", &[]).await.is_ok());
    }
}
