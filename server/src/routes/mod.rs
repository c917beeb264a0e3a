//! The HTTP API: LangGraph Platform's routes, as `langgraph-sdk` calls them.

mod assistants;
mod cancel;
mod runs;
mod store;
mod stream;
mod threads;

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRequest, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use serde::de::DeserializeOwned;

use crate::app::App;
use crate::error::ApiError;

/// Every route, with the API-key check, the body limit and a span per request. The
/// Studio's page and files (no data) are outside the check; its JSON API, with
/// driving enabled for the served graphs, is inside. With `guard_host` (no key, on
/// loopback) every request must name this machine in `Host`.
pub(crate) fn router(app: Arc<App>, guard_host: bool) -> Router {
    let limit = app.limits.body_bytes;
    let graphs = app
        .assistants
        .iter()
        .map(|(name, a)| (name.clone(), a.graph.shape()))
        .collect();
    let studio = stategraph_studio::Studio::served(app.saver.clone(), graphs);
    let api = Router::new()
        .merge(stategraph_studio::api(studio).with_state(()))
        .merge(assistants::routes())
        .merge(threads::routes())
        .merge(runs::routes())
        .merge(store::routes())
        .route("/info", get(info))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(app.clone(), authorize))
        .layer(middleware::from_fn_with_state(app.clone(), json_bodies));
    let cors = app.cors.clone();
    let router = Router::new()
        .route("/ok", get(ok))
        .merge(stategraph_studio::pages().with_state(()))
        .merge(api)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn(trace))
        .with_state(app.clone());
    let router = if guard_host {
        router.layer(middleware::from_fn_with_state(app, local_host_only))
    } else {
        router
    };
    // Outermost: a browser's preflight is answered before the key is asked for.
    match cors {
        Some(cors) => router.layer(cors),
        None => router,
    }
}

async fn ok() -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::json!({ "ok": true }))
}

async fn info() -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "flags": { "assistants": true, "crons": false, "langsmith": false },
    }))
}

async fn not_found(req: Request) -> ApiError {
    ApiError::not_found(format!("route {} {}", req.method(), req.uri().path()))
}

async fn method_not_allowed(req: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "method {} is not allowed on {} (the `allow` header lists the methods it takes)",
            req.method(),
            req.uri().path()
        ),
    )
}

/// A span per request, with the method, path and status.
async fn trace(req: Request, next: Next) -> Response {
    let span = tracing::info_span!("stategraph.server.request", method = %req.method(), path = %req.uri().path());
    let _enter = span.enter();
    drop(_enter);
    let response = tracing::Instrument::instrument(next.run(req), span.clone()).await;
    span.in_scope(|| tracing::debug!(status = response.status().as_u16(), "answered"));
    response
}

/// With an API key configured, every route but `/ok` needs it: `x-api-key: KEY` or
/// `Authorization: Bearer KEY`. Missing is a 401, wrong a 403.
async fn authorize(
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
async fn json_bodies(
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
async fn local_host_only(
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

/// A JSON body whose errors are API errors: malformed JSON is a 400 saying where,
/// a body of the wrong shape a 422 naming the field, an oversize body a 413. An
/// empty body is the type's default.
pub(crate) struct Body<T>(pub(crate) T);

impl<T: DeserializeOwned + Default, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|e| {
                if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "the request body is larger than this server accepts",
                    )
                } else {
                    ApiError::bad_request(format!("cannot read the request body: {e}"))
                }
            })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Body(T::default()));
        }
        let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
            ApiError::bad_request(format!("the request body is not valid JSON: {e}"))
        })?;
        if value.is_null() {
            return Ok(Body(T::default()));
        }
        serde_path_to_error::deserialize(value)
            .map(Body)
            .map_err(|e| {
                let path = e.path().to_string();
                let path = if path == "." {
                    "$".to_string()
                } else {
                    format!("$.{path}")
                };
                ApiError::invalid(path, e.into_inner().to_string())
            })
    }
}

/// Query-string parameters whose errors are API errors, as [`Body`]'s are: a
/// parameter of the wrong type or an unknown value is a 422 naming it
/// (`query.limit`), in JSON.
pub(crate) struct Params<T>(pub(crate) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or_default();
        let pairs = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize(pairs)
            .map(Params)
            .map_err(|e| {
                let path = e.path().to_string();
                let path = if path == "." {
                    "query".to_string()
                } else {
                    format!("query.{path}")
                };
                ApiError::invalid(path, e.into_inner().to_string())
            })
    }
}

/// A yes/no query parameter as clients send it: `true`/`false` in any case, or
/// `1`/`0` (the JS SDK sends numbers, Python's `True`). For
/// `#[serde(default, deserialize_with = "flag")]` fields.
pub(crate) fn flag<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    use serde::de::{Deserialize, Error, Unexpected};
    let text = String::deserialize(d)?;
    match text.to_ascii_lowercase().as_str() {
        "true" | "1" => Ok(Some(true)),
        "false" | "0" => Ok(Some(false)),
        _ => Err(D::Error::invalid_value(
            Unexpected::Str(&text),
            &"true, false, 1 or 0",
        )),
    }
}

/// A page bound from a request: at most 1000 items.
pub(crate) fn page(limit: Option<usize>, offset: Option<usize>, default: usize) -> (usize, usize) {
    (limit.unwrap_or(default).min(1000), offset.unwrap_or(0))
}
