//! The HTTP API: LangGraph Platform's routes, as `langgraph-sdk` calls them.

mod assistant_edits;
mod assistants;
mod cancel;
mod crons;
mod extract;
mod guard;
mod openapi;
mod runs;
mod state;
mod store;
mod thread_stream;
mod threads;

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::StatusCode;
use axum::middleware;

use crate::app::App;
use crate::error::ApiError;

pub(crate) use extract::{Body, Params, flag, page};
use guard::{authorize, json_bodies, limit_clients, local_host_only, no_nul_in_path, trace};

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
    let (routes, document) = openapi::routes().split_for_parts();
    let api = Router::new()
        .merge(stategraph_studio::api(studio).with_state(()))
        .merge(routes)
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(app.clone(), authorize))
        .layer(middleware::from_fn_with_state(app.clone(), json_bodies))
        .layer(middleware::from_fn(no_nul_in_path));
    let cors = app.cors.clone();
    let router = Router::new()
        .merge(openapi::open_routes(document))
        .merge(stategraph_studio::pages().with_state(()))
        .merge(api)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .layer(tower_http::timeout::RequestBodyTimeoutLayer::new(
            app.limits.body_read,
        ))
        .layer(middleware::from_fn_with_state(app.clone(), limit_clients))
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
