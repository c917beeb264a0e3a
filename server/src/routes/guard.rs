//! What a request must be before a route sees it: a span per request, the API key,
//! a JSON body that says so, a `Host` naming this machine (on a keyless loopback
//! server), and no NUL in the path.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::app::App;
use crate::error::ApiError;

/// A span per request, with the method, path and status.
pub(super) async fn trace(req: Request, next: Next) -> Response {
    let span = tracing::info_span!("stategraph.server.request", method = %req.method(), path = %req.uri().path());
    let _enter = span.enter();
    drop(_enter);
    let response = tracing::Instrument::instrument(next.run(req), span.clone()).await;
    let status = response.status();
    span.in_scope(|| {
        if status.is_server_error() {
            tracing::error!(status = status.as_u16(), "failed");
        } else if status.is_client_error() {
            tracing::info!(status = status.as_u16(), "refused");
        } else {
            tracing::debug!(status = status.as_u16(), "answered");
        }
    });
    response
}

/// With a per-client limit, a client (its IP address) past its requests for the
/// minute gets a 429 with `Retry-After`; `/ok` is never limited.
pub(super) async fn limit_clients(
    State(app): State<Arc<App>>,
    req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let Some(limit) = app.limits.requests_per_client_per_minute else {
        return Ok(next.run(req).await);
    };
    if req.uri().path() == "/ok" {
        return Ok(next.run(req).await);
    }
    // The address the connection came from: a header naming a client could be
    // changed on every request.
    let key = req
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip().to_string())
        .unwrap_or_default();
    if let Err(wait) = app.requests_per_client.admit(&key, limit) {
        return Err(ApiError::too_many(
            format!(
                "this client sent {limit} requests in the last minute, the limit: try again later"
            ),
            wait,
        ));
    }
    Ok(next.run(req).await)
}

/// With an API key configured, every route but `/ok` needs it: `x-api-key: KEY` or
/// `Authorization: Bearer KEY`. Missing is a 401, wrong a 403.
pub(super) async fn authorize(
    State(app): State<Arc<App>>,
    req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let Some(key) = &app.api_key else {
        return Ok(next.run(req).await);
    };
    let headers = req.headers();
    let given = headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .or_else(|| {
            headers
                .get(axum::http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
        });
    match given {
        None => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "this server needs an API key: send it in the `x-api-key` header",
        )),
        Some(g) if constant_time_eq(g.as_bytes(), key.as_bytes()) => Ok(next.run(req).await),
        Some(_) => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "the API key is not valid",
        )),
    }
}

/// A request body must say it is JSON. Browsers send `text/plain`, form and
/// multipart bodies to any site without asking it first (no preflight), so reading
/// such a body as JSON would let any web page a user opens start runs on a local
/// server without a key. `text/plain` is read from the origins
/// [`Server::text_plain_json_from`](crate::Server::text_plain_json_from) names.
pub(super) async fn json_bodies(
    State(app): State<Arc<App>>,
    req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let headers = req.headers();
    let has_body = headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|n| n.trim() != "0");
    if !has_body {
        return Ok(next.run(req).await);
    }
    let kind = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let json = kind == "application/json" || kind.ends_with("+json");
    let studio = kind == "text/plain"
        && headers
            .get(header::ORIGIN)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|o| app.text_plain_origins.iter().any(|t| t == o));
    if json || studio {
        return Ok(next.run(req).await);
    }
    let given = if kind.is_empty() {
        "no content type".to_string()
    } else {
        format!("`{kind}`")
    };
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        format!(
            "request bodies are JSON: send `content-type: application/json` (this one has {given})"
        ),
    ))
}

/// A server without a key on loopback answers requests naming this machine (or a
/// name [`Server::allow_hosts`](crate::Server::allow_hosts) adds) only: a page of
/// another site re-pointed at 127.0.0.1 (DNS rebinding) is same-origin to the
/// browser, so CORS and the JSON rule do not stop it, but its `Host` names that site.
pub(super) async fn local_host_only(
    State(app): State<Arc<App>>,
    req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase);
    let Some(host) = host else {
        // HTTP/1.0 without a Host: no browser sends that.
        return Ok(next.run(req).await);
    };
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.split(':').next().unwrap_or_default(),
    };
    if matches!(name, "localhost" | "127.0.0.1" | "::1")
        || app.allowed_hosts.iter().any(|h| h == name || *h == host)
    {
        return Ok(next.run(req).await);
    }
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        format!(
            "Host `{host}` is not this machine: a server without an API key listening on loopback answers `localhost`, `127.0.0.1` and `[::1]`; add the name with `Server::allow_hosts`, or set an API key"
        ),
    ))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Ids in the path (`/threads/{id}`) hold no NUL either: refused before any route.
pub(super) async fn no_nul_in_path(req: Request, next: Next) -> Result<Response, ApiError> {
    let decoded = percent_encoding::percent_decode_str(req.uri().path());
    if decoded.into_iter().any(|b| b == 0) {
        return Err(ApiError::invalid("path", super::extract::NUL));
    }
    Ok(next.run(req).await)
}
