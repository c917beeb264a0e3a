//! `/threads/{id}/runs` and stateless `/runs`: queue runs (background, streamed or
//! waited for), read, cancel, join and delete them.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::prepare::prepare_run;
use super::stream::{Detach, tail};
use super::threads::thread;
use super::{Body, Params, page};
use crate::app::App;
use crate::db::{NewRun, RunRow, RunStatus};
use crate::error::ApiError;
use crate::hub::Notice;
use crate::wire::{RUN_FIELDS, RunCreate, check_select, pick, run_json};

pub(super) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/threads/{id}/runs", post(create_background).get(list))
        .route("/threads/{id}/runs/stream", post(create_stream))
        .route("/threads/{id}/runs/wait", post(create_wait))
        .route("/threads/{id}/runs/{run_id}", get(one).delete(delete))
        .route(
            "/threads/{id}/runs/{run_id}/cancel",
            post(super::cancel::cancel),
        )
        .route("/threads/{id}/runs/{run_id}/join", get(join))
        .route("/threads/{id}/runs/{run_id}/stream", get(join_stream))
        .route("/runs", post(stateless_background))
        .route("/runs/stream", post(stateless_stream))
        .route("/runs/wait", post(stateless_wait))
        .route("/runs/batch", post(batch))
        .route("/runs/{run_id}/stream", get(join_stream_by_run))
        .route("/runs/cancel", post(super::cancel::cancel_many))
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
    app.notify(Notice::Queued).await;
    // Thread streams pick the new run up.
    app.notify(Notice::Events(crate::db::thread_events_key(&row.thread_id)))
        .await;
    if row.multitask_strategy == "interrupt" || row.multitask_strategy == "rollback" {
        for other in app
            .db
            .list_runs(row.thread_id.clone(), Some(RunStatus::Running), 100, 0)
            .await?
        {
            app.notify(Notice::Cancel(other.run_id)).await;
        }
    }
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

async fn create_background(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(req): Body<RunCreate>,
) -> Result<Response, ApiError> {
    let row = create_run(&app, Some(id), req).await?;
    Ok(located(&row, Json(run_json(&row))))
}

fn detach_of(req: &RunCreate, stateless: bool) -> Detach {
    Detach {
        cancel: req.on_disconnect.as_deref() == Some("cancel"),
        delete_thread: stateless && req.on_completion.as_deref().unwrap_or("delete") == "delete",
    }
}

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
        );
        Ok::<_, ApiError>(located_stream(&row, stream))
    });
    started.await.map_err(ApiError::internal)?
}

async fn create_wait(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(req): Body<RunCreate>,
) -> Result<Response, ApiError> {
    let row = create_run(&app, Some(id), req).await?;
    let out = wait_for(&app, &row.thread_id, &row.run_id).await?;
    Ok(located(&row, Json(out)))
}

async fn stateless_background(
    State(app): State<Arc<App>>,
    Body(req): Body<RunCreate>,
) -> Result<Response, ApiError> {
    let row = create_run(&app, None, req).await?;
    Ok(located(&row, Json(run_json(&row))))
}

async fn stateless_stream(
    State(app): State<Arc<App>>,
    Body(req): Body<RunCreate>,
) -> Result<Response, ApiError> {
    let detach = detach_of(&req, true);
    start_stream(app, None, req, detach).await
}

async fn stateless_wait(
    State(app): State<Arc<App>>,
    Body(req): Body<RunCreate>,
) -> Result<Response, ApiError> {
    let delete = req.on_completion.as_deref().unwrap_or("delete") == "delete";
    let row = create_run(&app, None, req).await?;
    let out = wait_for(&app, &row.thread_id, &row.run_id).await;
    if delete {
        delete_after(&app, &row.thread_id, &row.run_id).await;
    }
    Ok(located(&row, Json(out?)))
}

/// Deletes a stateless run's thread once the run ended.
pub(crate) async fn delete_after(app: &App, thread_id: &str, run_id: &str) {
    if wait_for(app, thread_id, run_id).await.is_ok() {
        if let Err(e) = app.saver.delete_thread(thread_id).await {
            tracing::warn!(error = %e, "deleting a stateless run's checkpoints failed");
        }
        if let Err(e) = app.db.delete_thread(thread_id.to_string()).await {
            tracing::warn!(error = %e, "deleting a stateless run's thread failed");
        }
    }
}

/// Waits until the run ends; its output (the thread's values, `__interrupt__` when
/// it paused, `__error__` when it failed).
pub(crate) async fn wait_for(app: &App, thread_id: &str, run_id: &str) -> Result<Value, ApiError> {
    let waker = app.hub.run_waker(run_id);
    loop {
        // Listen before looking, so an end stored in between still wakes us.
        let notified = waker.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let run = app
            .db
            .get_run(Some(thread_id.to_string()), run_id.to_string())
            .await?
            .ok_or_else(|| ApiError::not_found(format!("run {run_id} of thread {thread_id}")))?;
        if run.status.is_final() {
            return Ok(run.output.unwrap_or_else(|| json!({})));
        }
        if *app.stopping.borrow() {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "the server is shutting down; run {run_id} goes on elsewhere: join it again"
                ),
            ));
        }
        let mut stopping = app.stopping.clone();
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            tokio::select! {
                () = notified => {}
                _ = stopping.changed() => {}
            }
        })
        .await;
    }
}

#[derive(Debug, Default, Deserialize)]
struct ListParams {
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    status: Option<String>,
}

async fn list(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Params(p): Params<ListParams>,
    RawQuery(query): RawQuery,
) -> Result<Json<Value>, ApiError> {
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
            .map(|r| pick(run_json(r), select.as_deref()))
            .collect(),
    ))
}

async fn run_of(app: &App, thread_id: &str, run_id: &str) -> Result<RunRow, ApiError> {
    app.db
        .get_run(Some(thread_id.to_string()), run_id.to_string())
        .await?
        .ok_or_else(|| ApiError::not_found(format!("run {run_id} of thread {thread_id}")))
}

async fn one(
    State(app): State<Arc<App>>,
    Path((id, run_id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(run_json(&run_of(&app, &id, &run_id).await?)))
}

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

async fn join(
    State(app): State<Arc<App>>,
    Path((id, run_id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    run_of(&app, &id, &run_id).await?;
    Ok(Json(wait_for(&app, &id, &run_id).await?))
}

#[derive(Debug, Default, Deserialize)]
struct JoinStreamParams {
    #[serde(default, deserialize_with = "super::flag")]
    cancel_on_disconnect: Option<bool>,
}

async fn join_stream(
    State(app): State<Arc<App>>,
    Path((id, run_id)): Path<(String, String)>,
    Params(p): Params<JoinStreamParams>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    run_of(&app, &id, &run_id).await?;
    stream_of(app, id, run_id, &p, &headers)
}

/// `GET /runs/{run_id}/stream`: a run's stream found by its id alone (the JS SDK's
/// `joinStream` without a thread).
async fn join_stream_by_run(
    State(app): State<Arc<App>>,
    Path(run_id): Path<String>,
    Params(p): Params<JoinStreamParams>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let run = app
        .db
        .get_run(None, run_id.clone())
        .await?
        .ok_or_else(|| ApiError::not_found(format!("run {run_id}")))?;
    stream_of(app, run.thread_id, run_id, &p, &headers)
}

/// The stream of run `run_id` of `thread_id` from the `Last-Event-ID` it names.
fn stream_of(
    app: Arc<App>,
    thread_id: String,
    run_id: String,
    p: &JoinStreamParams,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
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
    Ok(tail(app, thread_id, run_id, after, detach).into_response())
}

/// `POST /runs/batch`: several stateless background runs at once, all or none.
async fn batch(
    State(app): State<Arc<App>>,
    Body(reqs): Body<Vec<RunCreate>>,
) -> Result<Json<Value>, ApiError> {
    // Every run is checked before any is queued: a bad one queues none.
    let mut prepared = Vec::with_capacity(reqs.len());
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
    for p in prepared {
        out.push(run_json(&queue_run(&app, p).await?));
    }
    Ok(Json(Value::Array(out)))
}
