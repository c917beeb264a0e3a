//! Which web pages may call the server from a browser (CORS): a chat UI on another
//! port or host is a cross-origin page, and the browser asks before every request
//! that is not "simple" (a preflight `OPTIONS`).

use axum::http::{HeaderName, HeaderValue};
use tower_http::cors::{AllowHeaders, AllowMethods, AllowOrigin, CorsLayer};

use crate::error::ServerError;

/// The browsers' view of the server: which origins may call it, and whether they
/// may send cookies or HTTP authentication with it.
///
/// The default, [`Cors::local`], lets pages served from this machine
/// (`http://localhost:3000`, `http://127.0.0.1:5173`, …) call the server, which is
/// what a chat UI in development needs, and no other site. Name the origins of a
/// deployed UI with [`Cors::origins`].
///
/// ```
/// use stategraph_server::{Cors, Server};
///
/// let server = Server::new().cors(
///     Cors::origins(["https://chat.example.com"]).allow_credentials(true),
/// );
/// # drop(server);
/// ```
#[derive(Clone, Debug)]
pub struct Cors {
    origins: Origins,
    credentials: bool,
}

#[derive(Clone, Debug)]
enum Origins {
    Local,
    List(Vec<String>),
    Any,
    Off,
}

/// The response headers a browser page may read: where a streamed run can be
/// joined again.
const EXPOSED: [&str; 2] = ["content-location", "location"];

impl Default for Cors {
    fn default() -> Self {
        Self::local()
    }
}

impl Cors {
    /// Pages from this machine only: any port of `localhost`, `127.0.0.1` or
    /// `[::1]`, over `http` or `https`.
    pub fn local() -> Self {
        Self {
            origins: Origins::Local,
            credentials: false,
        }
    }

    /// Exactly these origins (`scheme://host[:port]`, as the browser sends them in
    /// `Origin`). An origin that is not a valid header value is an error at
    /// [`Server::bind`](crate::Server::bind).
    pub fn origins<I, O>(origins: I) -> Self
    where
        I: IntoIterator<Item = O>,
        O: Into<String>,
    {
        Self {
            origins: Origins::List(origins.into_iter().map(Into::into).collect()),
            credentials: false,
        }
    }

    /// Any origin. Only for a server that needs an API key or sits behind a proxy
    /// that checks callers: any web page a user opens can call it otherwise.
    pub fn any() -> Self {
        Self {
            origins: Origins::Any,
            credentials: false,
        }
    }

    /// No CORS headers at all: browsers refuse cross-origin calls (same-origin
    /// pages, such as the Studio, and non-browser clients are unaffected).
    pub fn off() -> Self {
        Self {
            origins: Origins::Off,
            credentials: false,
        }
    }

    /// Whether pages may send credentials (cookies, HTTP authentication) and read
    /// the answer (`Access-Control-Allow-Credentials`). Off by default.
    #[must_use]
    pub fn allow_credentials(mut self, allow: bool) -> Self {
        self.credentials = allow;
        self
    }

    /// The layer answering preflights and adding the headers, or `None` when off.
    ///
    /// Methods and request headers mirror what the preflight asks for, so any route
    /// and any header a client sends (`x-api-key`, `last-event-id`, …) pass; the
    /// origin is what limits who may call.
    pub(crate) fn layer(&self) -> Result<Option<CorsLayer>, ServerError> {
        let origin = match &self.origins {
            Origins::Off => return Ok(None),
            Origins::Local => AllowOrigin::predicate(|origin, _| is_local(origin)),
            // `*` cannot go with credentials: the request's own origin is echoed.
            Origins::Any => AllowOrigin::mirror_request(),
            Origins::List(list) => AllowOrigin::list(
                list.iter()
                    .map(|o| {
                        origin_value(o).map_err(|reason| ServerError::Cors {
                            origin: o.clone(),
                            reason,
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        Ok(Some(
            CorsLayer::new()
                .allow_origin(origin)
                .allow_methods(AllowMethods::mirror_request())
                .allow_headers(AllowHeaders::mirror_request())
                .expose_headers(EXPOSED.map(HeaderName::from_static))
                .allow_credentials(self.credentials)
                .max_age(std::time::Duration::from_secs(600))
                .vary([
                    axum::http::header::ORIGIN,
                    axum::http::header::ACCESS_CONTROL_REQUEST_METHOD,
                    axum::http::header::ACCESS_CONTROL_REQUEST_HEADERS,
                ]),
        ))
    }
}

/// `origin` as the browser sends it: a scheme and a host (and port), nothing after.
fn origin_value(origin: &str) -> Result<HeaderValue, String> {
    let origin = origin.trim_end_matches('/');
    let Some((scheme, host)) = origin.split_once("://") else {
        return Err("no scheme".into());
    };
    if !matches!(scheme, "http" | "https") {
        return Err(format!("scheme `{scheme}` is not http or https"));
    }
    if host.is_empty() || host.contains(['/', '?', '#', '@', ' ']) {
        return Err("not a bare host".into());
    }
    HeaderValue::from_str(origin).map_err(|e| e.to_string())
}

/// Whether `origin` is a page of this machine.
fn is_local(origin: &HeaderValue) -> bool {
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let (host, port) = match rest.strip_prefix('[') {
        Some(v6) => {
            let Some(split) = v6.split_once(']') else {
                return false;
            };
            split
        }
        None => rest.split_at(rest.find(':').unwrap_or(rest.len())),
    };
    let port_ok = port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| p.parse::<u16>().is_ok());
    port_ok && matches!(host, "localhost" | "127.0.0.1" | "::1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_origins_are_this_machine_on_any_port() {
        for yes in [
            "http://localhost:3000",
            "http://localhost",
            "https://127.0.0.1:5173",
            "http://[::1]:8080",
        ] {
            assert!(is_local(&HeaderValue::from_static(yes)), "{yes}");
        }
        for no in [
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example:80",
            "https://example.com",
            "http://localhost:3000@evil.example",
            "http://localhost:abc",
            "file://localhost",
            "null",
            "http://[::1]x",
        ] {
            assert!(!is_local(&HeaderValue::from_static(no)), "{no}");
        }
    }

    #[test]
    fn listed_origins_are_bare_http_origins() {
        for ok in ["https://chat.example.com", "http://10.1.2.3:3000/"] {
            assert!(origin_value(ok).is_ok(), "{ok}");
        }
        for bad in [
            "chat.example.com",
            "ftp://example.com",
            "https://example.com/chat",
            "https://",
            "https://a b",
        ] {
            assert!(origin_value(bad).is_err(), "{bad}");
        }
    }
}
