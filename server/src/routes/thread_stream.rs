//! `GET /threads/{id}/stream`: a thread's runs and state updates as one stream
//! ([`crate::lifecycle::follow_thread`]).

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::threads::{ThreadPath, thread};
use crate::app::App;
use crate::error::{ApiError, Refusals};
use crate::lifecycle::follow_thread;

pub(super) fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new().routes(routes!(join_thread))
}

/// Follows the thread: each run's events as the runs come, and its state updates.
#[utoipa::path(get, path = "/threads/{thread_id}/stream", tag = "threads",
    params(ThreadPath,
        ("stream_mode" = Option<Vec<String>>, Query, description = "`run_modes` (the default), `lifecycle`, `state_update`; repeated or comma-separated."),
        ("Last-Event-ID" = Option<String>, Header, description = "The id of the last event received, or -1 for everything kept.")),
    responses((status = 200, description = "Server-sent events, until the thread is deleted.", content_type = "text/event-stream", body = String), Refusals))]
pub(super) async fn join_thread(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    thread(&app, &id).await?;
    let last = headers
        .get("last-event-id")
        .map(|v| v.to_str().map_err(|_| ()));
    follow_thread(app, id, query.as_deref(), last).await
}
