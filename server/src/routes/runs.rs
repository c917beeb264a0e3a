//! `/threads/{id}/runs` and stateless `/runs`: queue runs (background, streamed or
//! waited for), read, cancel, join and delete them.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::threads::{ThreadPath, thread};
use super::{Body, Params, page};
use crate::app::App;
use crate::db::{NewRun, RunRow, RunStatus};
use crate::error::{ApiError, Refusals};
use crate::events::Modes;
use crate::lifecycle::{Detach, announce_queued, delete_after, prepare_run, tail, wait_for};
use crate::wire::{OnCompletion, OnDisconnect, RUN_FIELDS, Run, RunCreate, check_select, pick};

pub(super) fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(create_background, list))
        .routes(routes!(create_stream))
        .routes(routes!(create_wait))
        .routes(routes!(one, delete))
        .routes(routes!(join))
        .routes(routes!(join_stream))
        .routes(routes!(stateless_background))
        .routes(routes!(stateless_stream))
        .routes(routes!(stateless_wait))
        .routes(routes!(batch))
        .routes(routes!(join_stream_by_run))
}

/// A run named in the path, with its thread.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub(crate) struct RunPath {
    /// The thread's id.
    thread_id: String,
    /// The run's id.
    run_id: String,
}

/// Validates and queues a run on `thread_id` (a new thread for a stateless run).
async fn create_run(
    app: &App,
    thread_id: Option<String>,
    req: RunCreate,
) -> Result<RunRow, ApiError> {
    let prepared = prepare_run(app, thread_id, req).await?;
    queue_run(app, prepared).await
}

/// Queues a checked run (counted against its thread's rate limit).
async fn queue_run(app: &App, new: NewRun) -> Result<RunRow, ApiError> {
    app.admit_run(&new.row.thread_id)?;
    let row = app.db.insert_run(new).await?;
    announce_queued(app, &row).await?;
    Ok(row)
}

fn located(row: &RunRow, body: impl IntoResponse) -> Response {
    let mut response = body.into_response();
    // A stateless run's too names its (temporary) thread, as LangGraph Platform's
    // Python server does: with `on_completion: "keep"` it is how a client finds it.
    let at = format!("/threads/{}/runs/{}", row.thread_id, row.run_id);
    if let Ok(v) = at.parse() {
        response.headers_mut().insert(header::CONTENT_LOCATION, v);
    }
    response
}

/// A streamed run's answer: as [`located`], and `Location` names its stream, where
/// a client whose connection was cut joins it again (with `Last-Event-ID`), as
/// LangGraph's clients do for resumable streams.
fn located_stream(row: &RunRow, body: impl IntoResponse) -> Response {
    let mut response = located(row, body);
    let at = format!("/threads/{}/runs/{}/stream", row.thread_id, row.run_id);
    if let Ok(v) = at.parse() {
        response.headers_mut().insert(header::LOCATION, v);
    }
    response
}

/// Queues a background run on the thread.
#[utoipa::path(post, path = "/threads/{thread_id}/runs", tag = "runs", params(ThreadPath),
    request_body = RunCreate,
    responses((status = 200, description = "The queued run.", body = Run), Refusals))]
async fn create_background(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(req): Body<RunCreate>,
) -> Result<Response, ApiError> {
    let row = create_run(&app, Some(id), req).await?;
    Ok(located(&row, Json(Run::from(&row))))
}

fn detach_of(req: &RunCreate, stateless: bool) -> Detach {
    Detach {
        cancel: req.on_disconnect == Some(OnDisconnect::Cancel),
        delete_thread: stateless
            && req.on_completion.unwrap_or(OnCompletion::Delete) == OnCompletion::Delete,
    }
}

/// Queues a run on the thread and streams its events.
#[utoipa::path(post, path = "/threads/{thread_id}/runs/stream", tag = "runs", params(ThreadPath),
    request_body = RunCreate, responses((status = 200, description = "Server-sent events: `metadata`, one event per stream mode, `end`.", content_type = "text/event-stream", body = String), Refusals))]
async fn create_stream(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(req): Body<RunCreate>,
) -> Result<Response, ApiError> {
    let detach = detach_of(&req, false);
    start_stream(app, Some(id), req, detach).await
}

/// Creates a run and its stream in a task of their own: a client that goes away
/// while the run is being created drops this handler, not that task, so the stream
/// still comes to exist — and, dropped unread, applies `on_disconnect` / deletes
/// a stateless thread as for any client that went away.
async fn start_stream(
    app: Arc<App>,
    thread_id: Option<String>,
    req: RunCreate,
    detach: Detach,
) -> Result<Response, ApiError> {
    let started = tokio::spawn(async move {
        let row = create_run(&app, thread_id, req).await?;
        let stream = tail(
            app.clone(),
            row.thread_id.clone(),
            row.run_id.clone(),
            0,
            detach,
            None,
        );
        Ok::<_, ApiError>(located_stream(&row, stream))
    });
    started.await.map_err(ApiError::internal)?
}

/// Queues a run on the thread and answers its output once it ended.
#[utoipa::path(post, path = "/threads/{thread_id}/runs/wait", tag = "runs", params(ThreadPath),
    request_body = RunCreate,
    responses((status = 200, description = "The thread's values (`__interrupt__` when paused, `__error__` when failed).", body = Object), Refusals))]
async fn create_wait(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(req): Body<RunCreate>,
) -> Result<Response, ApiError> {
    let row = create_run(&app, Some(id), req).await?;
    let out = wait_for(&app, &row.thread_id, &row.run_id).await?;
    Ok(located(&row, Json(out)))
}

/// Queues a background run on a new thread of its own.
#[utoipa::path(post, path = "/runs", tag = "runs", request_body = RunCreate,
    responses((status = 200, description = "The queued run.", body = Run), Refusals))]
async fn stateless_background(
    State(app): State<Arc<App>>,
    Body(req): Body<RunCreate>,
) -> Result<Response, ApiError> {
    let on_completion = req.on_completion;
    let row = create_run(&app, None, req).await?;
    delete_when_done(&app, &row, on_completion);
    Ok(located(&row, Json(Run::from(&row))))
}

/// A stateless background run's thread goes once the run ended, unless the run
/// asked to keep it (`on_completion: "keep"`).
fn delete_when_done(app: &Arc<App>, row: &RunRow, on_completion: Option<OnCompletion>) {
    if on_completion.unwrap_or(OnCompletion::Delete) == OnCompletion::Delete {
        let app = app.clone();
        let (thread, run) = (row.thread_id.clone(), row.run_id.clone());
        tokio::spawn(async move { delete_after(&app, &thread, &run).await });
    }
}

/// Runs on a new thread of its own and streams its events.
#[utoipa::path(post, path = "/runs/stream", tag = "runs", request_body = RunCreate,
    responses((status = 200, description = "Server-sent events: `metadata`, one event per stream mode, `end`.", content_type = "text/event-stream", body = String), Refusals))]
async fn stateless_stream(
    State(app): State<Arc<App>>,
    Body(req): Body<RunCreate>,
) -> Result<Response, ApiError> {
    let detach = detach_of(&req, true);
    start_stream(app, None, req, detach).await
}

/// Runs on a new thread of its own and answers its output once it ended.
#[utoipa::path(post, path = "/runs/wait", tag = "runs", request_body = RunCreate,
    responses((status = 200, description = "The run's output.", body = Object), Refusals))]
async fn stateless_wait(
    State(app): State<Arc<App>>,
    Body(req): Body<RunCreate>,
) -> Result<Response, ApiError> {
    let delete = req.on_completion.unwrap_or(OnCompletion::Delete) == OnCompletion::Delete;
    let row = create_run(&app, None, req).await?;
    let out = wait_for(&app, &row.thread_id, &row.run_id).await;
    if delete {
        delete_after(&app, &row.thread_id, &row.run_id).await;
    }
    Ok(located(&row, Json(out?)))
}

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct ListParams {
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    status: Option<String>,
}

/// The thread's runs, newest first.
#[utoipa::path(get, path = "/threads/{thread_id}/runs", tag = "runs", params(ThreadPath, ListParams),
    responses((status = 200, description = "The runs.", body = Vec<Run>), Refusals))]
async fn list(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Params(p): Params<ListParams>,
    RawQuery(query): RawQuery,
) -> Result<Json<Vec<Value>>, ApiError> {
    // `select` comes once per field (`?select=run_id&select=status`).
    let select: Vec<String> = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .filter(|(k, _)| k == "select")
        .map(|(_, v)| v.into_owned())
        .collect();
    let select = check_select(
        (!select.is_empty()).then_some(select),
        RUN_FIELDS,
        "query.select",
    )?;
    thread(&app, &id).await?;
    let status = match p.status.as_deref() {
        None => None,
        Some(s) => Some(
            RunStatus::parse(s)
                .ok_or_else(|| ApiError::invalid("status", format!("unknown run status `{s}`")))?,
        ),
    };
    let (limit, offset) = page(p.limit, p.offset, 10);
    let rows = app.db.list_runs(id, status, limit, offset).await?;
    Ok(Json(
        rows.iter()
            .map(|r| pick(&Run::from(r), select.as_deref()))
            .collect(),
    ))
}

async fn run_of(app: &App, thread_id: &str, run_id: &str) -> Result<RunRow, ApiError> {
    app.db
        .get_run(Some(thread_id.to_string()), run_id.to_string())
        .await?
        .ok_or_else(|| ApiError::not_found(format!("run {run_id} of thread {thread_id}")))
}

/// A run.
#[utoipa::path(get, path = "/threads/{thread_id}/runs/{run_id}", tag = "runs", params(RunPath),
    responses((status = 200, description = "The run.", body = Run), Refusals))]
async fn one(
    State(app): State<Arc<App>>,
    Path((id, run_id)): Path<(String, String)>,
) -> Result<Json<Run>, ApiError> {
    Ok(Json(Run::from(&run_of(&app, &id, &run_id).await?)))
}

/// Deletes an ended run (a 409 while it is active).
#[utoipa::path(delete, path = "/threads/{thread_id}/runs/{run_id}", tag = "runs", params(RunPath),
    responses((status = 204, description = "Deleted."), Refusals))]
async fn delete(
    State(app): State<Arc<App>>,
    Path((id, run_id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    if app.db.delete_run(id.clone(), run_id.clone()).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(format!("run {run_id} of thread {id}")))
    }
}

/// Waits for a run to end; its output.
#[utoipa::path(get, path = "/threads/{thread_id}/runs/{run_id}/join", tag = "runs", params(RunPath),
    responses((status = 200, description = "The run's output.", body = Object), Refusals))]
async fn join(
    State(app): State<Arc<App>>,
    Path((id, run_id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    run_of(&app, &id, &run_id).await?;
    Ok(Json(wait_for(&app, &id, &run_id).await?))
}

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct JoinStreamParams {
    /// Cancel the run when this client goes away (`true`/`false`/`1`/`0`).
    #[serde(default, deserialize_with = "super::flag")]
    cancel_on_disconnect: Option<bool>,
}

/// A run's events from `Last-Event-ID` (`-1`: from the first), until its end.
#[utoipa::path(get, path = "/threads/{thread_id}/runs/{run_id}/stream", tag = "runs",
    params(RunPath, JoinStreamParams, ("stream_mode" = Option<Vec<String>>, Query, description = "Only these modes' events, once per mode."), ("Last-Event-ID" = Option<String>, Header, description = "The id of the last event received.")),
    responses((status = 200, description = "Server-sent events: `metadata`, one event per stream mode, `end`.", content_type = "text/event-stream", body = String), Refusals))]
async fn join_stream(
    State(app): State<Arc<App>>,
    Path((id, run_id)): Path<(String, String)>,
    Params(p): Params<JoinStreamParams>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    run_of(&app, &id, &run_id).await?;
    stream_of(app, id, run_id, &p, query.as_deref(), &headers)
}

/// A run's events, found by its id alone.
///
/// What the JS SDK's `joinStream` calls without a thread.
#[utoipa::path(get, path = "/runs/{run_id}/stream", tag = "runs",
    params(("run_id" = String, Path, description = "The run's id."), JoinStreamParams,
        ("stream_mode" = Option<Vec<String>>, Query, description = "Only these modes' events, once per mode."),
        ("Last-Event-ID" = Option<String>, Header, description = "The id of the last event received.")),
    responses((status = 200, description = "Server-sent events: `metadata`, one event per stream mode, `end`.", content_type = "text/event-stream", body = String), Refusals))]
async fn join_stream_by_run(
    State(app): State<Arc<App>>,
    Path(run_id): Path<String>,
    Params(p): Params<JoinStreamParams>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let run = app
        .db
        .get_run(None, run_id.clone())
        .await?
        .ok_or_else(|| ApiError::not_found(format!("run {run_id}")))?;
    stream_of(app, run.thread_id, run_id, &p, query.as_deref(), &headers)
}

/// The stream of run `run_id` of `thread_id` from the `Last-Event-ID` it names.
fn stream_of(
    app: Arc<App>,
    thread_id: String,
    run_id: String,
    p: &JoinStreamParams,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    // `stream_mode`, once per mode: only those modes' events (all without it).
    let asked: Vec<Value> = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        // The SDKs send `stream_mode=` (empty) when none was given.
        .filter(|(k, v)| k == "stream_mode" && !v.is_empty())
        .map(|(_, v)| Value::String(v.into_owned()))
        .collect();
    let modes = if asked.is_empty() {
        None
    } else {
        Some(Modes::parse(Some(&Value::Array(asked)), true)?)
    };
    let after = match headers
        .get("last-event-id")
        .map(|v| v.to_str().map(str::parse::<i64>))
    {
        None => 0,
        Some(Ok(Ok(n))) if n >= 0 => n,
        // LangGraph's clients send -1 to replay the run from its first event.
        Some(Ok(Ok(-1))) => 0,
        Some(_) => {
            return Err(ApiError::bad_request(
                "Last-Event-ID must be an event id this server sent (a number), or -1 for every event",
            ));
        }
    };
    let detach = Detach {
        cancel: p.cancel_on_disconnect.unwrap_or(false),
        delete_thread: false,
    };
    Ok(tail(app, thread_id, run_id, after, detach, modes).into_response())
}

/// Queues several stateless background runs, all or none.
#[utoipa::path(post, path = "/runs/batch", tag = "runs", request_body = Vec<RunCreate>,
    responses((status = 200, description = "The queued runs.", body = Vec<Run>), Refusals))]
async fn batch(
    State(app): State<Arc<App>>,
    Body(reqs): Body<Vec<RunCreate>>,
) -> Result<Json<Vec<Run>>, ApiError> {
    // Every run is checked before any is queued: a bad one queues none.
    let mut prepared = Vec::with_capacity(reqs.len());
    let completions: Vec<Option<OnCompletion>> = reqs.iter().map(|r| r.on_completion).collect();
    for (i, req) in reqs.into_iter().enumerate() {
        prepared.push(prepare_run(&app, None, req).await.map_err(|mut e| {
            for (path, _) in &mut e.errors {
                *path = path.replacen('$', &format!("$[{i}]"), 1);
            }
            e.detail = format!("run {i} of the batch: {}", e.detail);
            e
        })?);
    }
    let mut out = Vec::with_capacity(prepared.len());
    for (p, on_completion) in prepared.into_iter().zip(completions) {
        let row = queue_run(&app, p).await?;
        delete_when_done(&app, &row, on_completion);
        out.push(Run::from(&row));
    }
    Ok(Json(out))
}
