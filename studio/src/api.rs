//! The JSON API's routes, under `/studio/api`. Every error is `{"detail": "..."}`
//! with a 4xx (or, when the saver fails, 500) status.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use crate::Studio;
use crate::data::ThreadQuery;
use crate::error::StudioError;
use crate::status::ThreadStatus;

impl IntoResponse for StudioError {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut detail = self.to_string();
        let mut source = std::error::Error::source(&self);
        while let Some(cause) = source {
            detail.push_str(": ");
            detail.push_str(&cause.to_string());
            source = cause.source();
        }
        (status, Json(json!({ "detail": detail }))).into_response()
    }
}

/// The raw query of the thread list: numbers and the status are checked here, so a
/// bad one is a `{"detail"}` 400 naming it.
#[derive(Debug, Default, Deserialize)]
struct ListParams {
    search: Option<String>,
    status: Option<String>,
    limit: Option<String>,
    offset: Option<String>,
}

fn number(name: &'static str, text: Option<&str>) -> Result<Option<usize>, StudioError> {
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(None),
        Some(t) => t.parse().map(Some).map_err(|_| StudioError::BadQuery {
            name,
            reason: format!("`{t}` is not a whole number of 0 or more"),
        }),
    }
}

impl ListParams {
    fn query(self) -> Result<ThreadQuery, StudioError> {
        let status = match self
            .status
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            None => None,
            Some(s) => Some(ThreadStatus::parse(s).ok_or_else(|| StudioError::BadQuery {
                name: "status",
                reason: format!("`{s}` is not one of running, interrupted, finished, failed"),
            })?),
        };
        Ok(ThreadQuery {
            search: self.search.filter(|s| !s.is_empty()),
            status,
            limit: number("limit", self.limit.as_deref())?,
            offset: number("offset", self.offset.as_deref())?,
        })
    }
}

#[derive(Debug, Default, Deserialize)]
struct DiffParams {
    from: Option<String>,
    to: Option<String>,
}

async fn info(State(studio): State<Studio>) -> Response {
    Json(studio.info()).into_response()
}

async fn threads(
    State(studio): State<Studio>,
    Query(params): Query<ListParams>,
) -> Result<Response, StudioError> {
    let query = params.query()?;
    Ok(Json(studio.threads(&query).await?).into_response())
}

async fn thread(
    State(studio): State<Studio>,
    Path(thread_id): Path<String>,
) -> Result<Response, StudioError> {
    Ok(Json(studio.thread(&thread_id).await?).into_response())
}

async fn checkpoint(
    State(studio): State<Studio>,
    Path((thread_id, checkpoint_id)): Path<(String, String)>,
) -> Result<Response, StudioError> {
    Ok(Json(studio.checkpoint(&thread_id, &checkpoint_id).await?).into_response())
}

async fn diff(
    State(studio): State<Studio>,
    Path(thread_id): Path<String>,
    Query(params): Query<DiffParams>,
) -> Result<Response, StudioError> {
    let need = |name: &'static str, v: Option<String>| {
        v.filter(|s| !s.is_empty()).ok_or(StudioError::BadQuery {
            name,
            reason: "give the id of a checkpoint of the thread".to_string(),
        })
    };
    let from = need("from", params.from)?;
    let to = need("to", params.to)?;
    Ok(Json(studio.diff(&thread_id, &from, &to).await?).into_response())
}

async fn unknown_route(uri: axum::http::Uri) -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({ "detail": format!("route {} not found", uri.path()) })),
    )
        .into_response()
}

/// The API routes, with their state.
pub(crate) fn routes<S: Clone + Send + Sync + 'static>(studio: Studio) -> Router<S> {
    Router::new()
        .route("/studio/api/info", get(info))
        .route("/studio/api/threads", get(threads))
        .route("/studio/api/threads/{thread_id}", get(thread))
        .route(
            "/studio/api/threads/{thread_id}/checkpoints/{checkpoint_id}",
            get(checkpoint),
        )
        .route("/studio/api/threads/{thread_id}/diff", get(diff))
        .route("/studio/api", get(unknown_route))
        .route("/studio/api/", get(unknown_route))
        .route("/studio/api/{*rest}", get(unknown_route))
        .with_state(studio)
}
