//! The API's OpenAPI document (`GET /openapi.json`) and a page that lists it
//! (`GET /docs`). Both come from the routes' own annotations and the wire types:
//! each route is registered by the same call that adds its operation, so the
//! document cannot name a route the server lacks, or miss one.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use serde_json::{Map, Value};
use utoipa::OpenApi as _;
use utoipa::openapi::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::app::App;
use crate::error::{ErrorBody, FieldError, Refusals};
use crate::wire::{Health, Info};

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "stategraph-server",
        description = "Typed Rust graphs served over LangGraph Platform's API: assistants, \
            threads, runs, streams and the store, as LangGraph's SDKs call them."
    ),
    components(schemas(ErrorBody, FieldError)),
    tags(
        (name = "assistants", description = "The served graphs, and assistants made of them."),
        (name = "threads", description = "Conversations: their metadata and status."),
        (name = "state", description = "A thread's state and history."),
        (name = "runs", description = "Runs: queued, streamed, waited for, cancelled."),
        (name = "crons", description = "Runs on a schedule."),
        (name = "store", description = "The long-term memory store."),
        (name = "server", description = "The server itself."),
    )
)]
struct ApiDoc;

/// Every API route, with its operation.
pub(super) fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(super::assistants::routes())
        .merge(super::assistant_edits::routes())
        .merge(super::threads::routes())
        .merge(super::state::routes())
        .merge(super::thread_stream::routes())
        .merge(super::runs::routes())
        .merge(super::cancel::routes())
        .merge(super::crons::routes())
        .merge(super::store::routes())
        .routes(routes!(info))
}

/// The routes outside the API key's check (no data): `/ok`, and the document
/// itself with its page; `api` is the document of the rest.
pub(super) fn open_routes(mut api: OpenApi) -> Router<Arc<App>> {
    let (health, health_doc) = OpenApiRouter::new().routes(routes!(ok)).split_for_parts();
    api.merge(health_doc);
    let page = Html(docs_page(&api));
    let document = serde_json::to_value(&api).unwrap_or_default();
    health
        .route(
            "/openapi.json",
            get(move || {
                let document = document.clone();
                async move { Json(document) }
            }),
        )
        .route(
            "/docs",
            get(move || {
                let page = page.clone();
                async move { ([(header::CACHE_CONTROL, "no-cache")], page).into_response() }
            }),
        )
}

/// Whether the server is up.
#[utoipa::path(get, path = "/ok", tag = "server",
    responses((status = 200, description = "It is.", body = Health)))]
pub(super) async fn ok() -> Json<Health> {
    Json(Health { ok: true })
}

/// What this server is, and which optional parts of the API it serves.
#[utoipa::path(get, path = "/info", tag = "server",
    responses((status = 200, description = "Its version and flags.", body = Info), Refusals))]
async fn info() -> Json<Info> {
    let flags = [("assistants", true), ("crons", true), ("langsmith", false)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), Value::Bool(v)))
        .collect::<Map<_, _>>();
    Json(Info {
        version: env!("CARGO_PKG_VERSION").to_string(),
        flags,
    })
}

/// A page listing every operation of `api` by tag, linking the document.
fn docs_page(api: &OpenApi) -> String {
    let mut rows: Vec<(String, String, String, String)> = Vec::new();
    for (path, item) in &api.paths.paths {
        let methods = [
            ("GET", &item.get),
            ("POST", &item.post),
            ("PUT", &item.put),
            ("PATCH", &item.patch),
            ("DELETE", &item.delete),
        ];
        for (method, op) in methods {
            let Some(op) = op else { continue };
            let tag = op.tags.iter().flatten().next().cloned().unwrap_or_default();
            let summary = op
                .summary
                .clone()
                .or_else(|| op.description.clone())
                .unwrap_or_default();
            rows.push((tag, method.to_string(), path.clone(), summary));
        }
    }
    rows.sort();
    let mut html = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>stategraph-server API</title>\
         <style>body{font:15px system-ui,sans-serif;margin:2em auto;max-width:70em;padding:0 1em}\
         code{font-size:14px}td{padding:.25em .75em;vertical-align:top}\
         th{text-align:left;padding:.75em .75em .25em}</style></head><body>\
         <h1>stategraph-server API</h1><p>Every operation this server answers. The full \
         document, with each request and response schema: <a href=\"/openapi.json\">\
         <code>/openapi.json</code></a> (OpenAPI 3.1).</p><table>",
    );
    let mut last_tag = None;
    for (tag, method, path, summary) in &rows {
        if last_tag != Some(tag) {
            let _ = write!(html, "<tr><th colspan=\"3\">{}</th></tr>", escape(tag));
            last_tag = Some(tag);
        }
        let _ = write!(
            html,
            "<tr><td><code>{method}</code></td><td><code>{}</code></td><td>{}</td></tr>",
            escape(path),
            escape(summary)
        );
    }
    html.push_str("</table></body></html>");
    html
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
