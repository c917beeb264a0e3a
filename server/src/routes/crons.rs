//! `/runs/crons` and `/threads/{id}/runs/crons`: scheduled runs — create, read,
//! change, pause, search, count and delete.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::threads::ThreadPath;
use super::{Body, page};
use crate::app::App;
use crate::db::{CronOrder, CronQuery, CronRow};
use crate::error::{ApiError, Refusals};
use crate::lifecycle::{cron_of, patch_cron};
use crate::wire::{
    CRON_FIELDS, Cron, CronCreate, CronPatch, CronSearch, CronSortBy, SortOrder, check_select, pick,
};

pub(super) fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(create))
        .routes(routes!(create_for_thread))
        .routes(routes!(one, patch, delete))
        .routes(routes!(search))
        .routes(routes!(count))
}

/// A cron named in the path.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
struct CronPath {
    /// The cron's id.
    cron_id: String,
}

async fn cron(app: &App, id: &str) -> Result<CronRow, ApiError> {
    app.db
        .get_cron(id.to_string())
        .await?
        .ok_or_else(|| ApiError::not_found(format!("cron {id}")))
}

/// Creates a cron whose every run starts a new thread.
#[utoipa::path(post, path = "/runs/crons", tag = "crons", request_body = CronCreate,
    responses((status = 200, description = "The cron.", body = Cron), Refusals))]
async fn create(
    State(app): State<Arc<App>>,
    Body(req): Body<CronCreate>,
) -> Result<Json<Cron>, ApiError> {
    let row = cron_of(&app, None, req).await?;
    Ok(Json(Cron::from(&app.db.insert_cron(row).await?)))
}

/// Creates a cron whose runs run on the thread (deleted with it).
#[utoipa::path(post, path = "/threads/{thread_id}/runs/crons", tag = "crons", params(ThreadPath),
    request_body = CronCreate,
    responses((status = 200, description = "The cron.", body = Cron), Refusals))]
async fn create_for_thread(
    State(app): State<Arc<App>>,
    Path(thread_id): Path<String>,
    Body(req): Body<CronCreate>,
) -> Result<Json<Cron>, ApiError> {
    let row = cron_of(&app, Some(thread_id), req).await?;
    Ok(Json(Cron::from(&app.db.insert_cron(row).await?)))
}

/// A cron.
#[utoipa::path(get, path = "/runs/crons/{cron_id}", tag = "crons", params(CronPath),
    responses((status = 200, description = "The cron.", body = Cron), Refusals))]
async fn one(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<Json<Cron>, ApiError> {
    Ok(Json(Cron::from(&cron(&app, &id).await?)))
}

/// Changes a cron: its schedule, time zone, end, whether it is paused, and the run
/// it makes. A changed schedule (or a cron turned back on) fires next at its first
/// tick from now.
#[utoipa::path(patch, path = "/runs/crons/{cron_id}", tag = "crons", params(CronPath),
    request_body = CronPatch,
    responses((status = 200, description = "The cron.", body = Cron), Refusals))]
async fn patch(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(req): Body<CronPatch>,
) -> Result<Json<Cron>, ApiError> {
    let (row, reschedule) = patch_cron(&app, cron(&app, &id).await?, req).await?;
    let row = app
        .db
        .update_cron(row, reschedule)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("cron {id}")))?;
    Ok(Json(Cron::from(&row)))
}

/// Deletes a cron (its runs so far stay).
#[utoipa::path(delete, path = "/runs/crons/{cron_id}", tag = "crons", params(CronPath),
    responses((status = 204, description = "Deleted."), Refusals))]
async fn delete(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    if app.db.delete_cron(id.clone()).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(format!("cron {id}")))
    }
}

/// The query a search asks for.
fn query_of(app: &App, req: &CronSearch) -> CronQuery {
    // A served graph's name stands for its assistant; any other id as it is.
    let assistant_id = req.assistant_id.as_ref().map(|a| {
        app.assistant(a)
            .map_or_else(|_| a.clone(), |s| s.id.clone())
    });
    let (limit, offset) = page(req.limit, req.offset, 10);
    CronQuery {
        assistant_id,
        thread_id: req.thread_id.clone(),
        enabled: req.enabled,
        metadata: req.metadata.clone().unwrap_or_default(),
        order: match req.sort_by {
            Some(CronSortBy::CronId) => CronOrder::CronId,
            Some(CronSortBy::AssistantId) => CronOrder::AssistantId,
            Some(CronSortBy::ThreadId) => CronOrder::ThreadId,
            Some(CronSortBy::UpdatedAt) => CronOrder::UpdatedAt,
            Some(CronSortBy::NextRunDate) => CronOrder::NextRunAt,
            Some(CronSortBy::EndTime) => CronOrder::EndTime,
            Some(CronSortBy::CreatedAt) | None => CronOrder::CreatedAt,
        },
        ascending: req.sort_order != Some(SortOrder::Desc),
        limit,
        offset,
    }
}

/// The crons matching a filter.
#[utoipa::path(post, path = "/runs/crons/search", tag = "crons", request_body = CronSearch,
    responses((status = 200, description = "The crons.", body = Vec<Cron>), Refusals))]
async fn search(
    State(app): State<Arc<App>>,
    Body(mut req): Body<CronSearch>,
) -> Result<Response, ApiError> {
    let select = check_select(req.select.take(), CRON_FIELDS, "$.select")?;
    let mut query = query_of(&app, &req);
    let (limit, offset) = (query.limit, query.offset);
    // One more than the page: whether a next page exists.
    query.limit = limit.saturating_add(1);
    let rows = app.db.search_crons(query).await?;
    let list: Vec<Value> = rows
        .iter()
        .take(limit)
        .map(|c| pick(&Cron::from(c), select.as_deref()))
        .collect();
    let mut response = Json(list).into_response();
    if rows.len() > limit {
        response.headers_mut().insert(
            "x-pagination-next",
            axum::http::HeaderValue::from(offset.saturating_add(limit)),
        );
    }
    Ok(response)
}

/// How many crons match a filter.
#[utoipa::path(post, path = "/runs/crons/count", tag = "crons", request_body = CronSearch,
    responses((status = 200, description = "How many.", content_type = "application/json", body = u64), Refusals))]
async fn count(
    State(app): State<Arc<App>>,
    Body(req): Body<CronSearch>,
) -> Result<Json<u64>, ApiError> {
    Ok(Json(app.db.count_crons(query_of(&app, &req)).await?))
}
