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
use serde_json::{Map, Value, json};

use super::stream::{Detach, tail};
use super::threads::thread;
use super::{Body, Params, page};
use crate::app::App;
use crate::db::{NewRun, RunRow, RunStatus, ThreadStatus};
use crate::error::ApiError;
use crate::events::Modes;
use crate::hub::Notice;
use crate::served::RunRequest;
use crate::wire::{CommandRequest, DurabilityRequest, RunConfigRequest, RunKwargs};
use crate::wire::{RUN_FIELDS, RunCreate, check_select, node_list, pick, run_json};

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
        .route("/runs/cancel", post(super::cancel::cancel_many))
}

const STRATEGIES: &[&str] = &["reject", "enqueue", "interrupt", "rollback"];

/// Checks a run request for `thread_id` (a new thread for a stateless run) without
/// writing anything.
async fn prepare_run(
    app: &App,
    thread_id: Option<String>,
    mut req: RunCreate,
) -> Result<NewRun, ApiError> {
    if req.assistant_id.is_empty() {
        return Err(ApiError::invalid(
            "$.assistant_id",
            "required: the graph to run (its name or assistant id)",
        ));
    }
    let assistant = app.assistant(&req.assistant_id)?;
    let graph = assistant.graph.clone();
    let stateless = thread_id.is_none();
    let thread_id = thread_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let strategy = req
        .multitask_strategy
        .clone()
        .unwrap_or_else(|| "enqueue".into());
    if !STRATEGIES.contains(&strategy.as_str()) {
        return Err(ApiError::invalid(
            "$.multitask_strategy",
            format!(
                "unknown strategy `{strategy}`; known: {}",
                STRATEGIES.join(", ")
            ),
        ));
    }
    let create_thread = stateless
        || match req.if_not_exists.as_deref() {
            None | Some("reject") => false,
            Some("create") => true,
            Some(other) => {
                return Err(ApiError::invalid(
                    "$.if_not_exists",
                    format!("expected `create` or `reject`, not `{other}`"),
                ));
            }
        };
    let existing = app.db.get_thread(thread_id.clone()).await?;
    match &existing {
        None if !create_thread => return Err(ApiError::not_found(format!("thread {thread_id}"))),
        Some(t) => {
            if let Some(bound) = t.metadata.get("graph_id").and_then(Value::as_str)
                && bound != graph.name()
            {
                return Err(ApiError::conflict(format!(
                    "thread {thread_id} runs graph `{bound}`, not `{}`: start a new thread for it",
                    graph.name()
                )));
            }
        }
        None => {}
    }
    if req.after_seconds.is_some() || req.webhook.is_some() {
        let field = if req.after_seconds.is_some() {
            "after_seconds"
        } else {
            "webhook"
        };
        return Err(ApiError::invalid(
            format!("$.{field}"),
            "not supported by this server: leave it out",
        ));
    }
    // Both: the command runs, as on LangGraph Platform (CopilotKit's adapter sends
    // its state beside a resume); strict input refuses it.
    let input_ignored = req.input.as_ref().is_some_and(|v| !v.is_null())
        && req.command.as_ref().is_some_and(|v| !v.is_null());
    if input_ignored {
        if app.limits.strict_input {
            return Err(ApiError::invalid(
                "$",
                "give `input` or `command`, not both",
            ));
        }
        req.input = None;
    }
    let command = match &req.command {
        None | Some(Value::Null) => None,
        Some(c) => Some(
            serde_json::from_value::<CommandRequest>(c.clone())
                .map_err(|e| ApiError::invalid("$.command", e.to_string()))?,
        ),
    };
    let dropped = if app.limits.strict_input {
        Vec::new()
    } else {
        drop_unknown_keys(&mut req.input, &graph.channel_names())
    };
    let subgraphs = req.stream_subgraphs.unwrap_or(false);
    Modes::parse(req.stream_mode.as_ref(), subgraphs)?;
    let config = run_config(req.config.as_ref())?;
    let nodes = graph.node_names();
    let kwargs = RunKwargs {
        input: req.input.clone(),
        command,
        stream_mode: match &req.stream_mode {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => vec!["values".to_string()],
        },
        stream_subgraphs: subgraphs,
        interrupt_before: node_list(req.interrupt_before.as_ref(), &nodes, "interrupt_before")?,
        interrupt_after: node_list(req.interrupt_after.as_ref(), &nodes, "interrupt_after")?,
        // LangGraph's clients may name the checkpoint in `configurable`.
        checkpoint_id: crate::wire::checkpoint_id(
            req.checkpoint_id.as_ref(),
            req.checkpoint.as_ref(),
        )
        .or_else(|| {
            config
                .as_ref()
                .and_then(|c| c.configurable.get("checkpoint_id"))
                .and_then(Value::as_str)
                .map(str::to_string)
        }),
        config,
        durability: req.durability.or(req.checkpoint_during.map(|during| {
            if during {
                DurabilityRequest::Async
            } else {
                DurabilityRequest::Exit
            }
        })),
        context: req.context.clone().filter(|c| !c.is_null()),
        on_completion: req.on_completion.clone().unwrap_or_else(|| {
            if stateless {
                "delete".into()
            } else {
                "keep".into()
            }
        }),
    };
    let request = RunRequest::of(&thread_id, "", kwargs.clone(), Map::new())?;
    graph.check(&request)?;
    if let Some(id) = &request.checkpoint_id {
        // A run from a checkpoint the thread does not have would be queued only to
        // fail: refuse it now.
        let at = stategraph::checkpoint::CheckpointConfig::thread(thread_id.clone()).at(id);
        let known = existing.is_some()
            && app
                .saver
                .get_tuple(&at)
                .await
                .map_err(ApiError::internal)?
                .is_some();
        if !known {
            return Err(ApiError::new(
                axum::http::StatusCode::NOT_FOUND,
                format!("thread {thread_id} has no checkpoint `{id}`: pick one from its history"),
            ));
        }
    }
    // A resume needs a thread that waits on an interrupt (or a run that may leave
    // it waiting).
    if request.command.as_ref().is_some_and(|c| c.resume.is_some())
        && existing.as_ref().is_none_or(|t| {
            t.status != ThreadStatus::Busy && t.interrupts.as_array().is_none_or(Vec::is_empty)
        })
    {
        return Err(ApiError::conflict(format!(
            "thread {thread_id} is not waiting on an interrupt: there is nothing to resume"
        )));
    }
    let kwargs = serde_json::to_value(&kwargs).map_err(ApiError::internal)?;
    let mut thread_metadata = Map::new();
    thread_metadata.insert("graph_id".into(), json!(graph.name()));
    thread_metadata.insert("assistant_id".into(), json!(assistant.id));
    let mut metadata = req.metadata.unwrap_or_default();
    if input_ignored {
        tracing::warn!(graph = graph.name(), thread_id = %thread_id, "a run's input was ignored: it has a command");
        metadata.insert(
            "input_ignored".into(),
            json!("the run has a command, which runs instead"),
        );
    }
    if !dropped.is_empty() {
        tracing::warn!(
            graph = graph.name(),
            thread_id = %thread_id,
            keys = ?dropped,
            "dropped input keys the graph's state lacks (Server::strict_input refuses them)"
        );
        metadata.insert("dropped_input_keys".into(), json!(dropped));
    }
    let run = RunRow {
        run_id: uuid::Uuid::new_v4().to_string(),
        thread_id: thread_id.clone(),
        assistant_id: assistant.id.clone(),
        created_at: 0,
        updated_at: 0,
        status: RunStatus::Pending,
        metadata,
        multitask_strategy: strategy,
        kwargs,
        attempt: 0,
        cancel: None,
        output: None,
    };
    Ok(NewRun {
        row: run,
        create_thread,
        thread_metadata,
    })
}

/// A run request's `config`: each field it honours, any other a 422 naming it.
fn run_config(config: Option<&Value>) -> Result<Option<RunConfigRequest>, ApiError> {
    let config = match config {
        None | Some(Value::Null) => return Ok(None),
        Some(v) => serde_json::from_value::<RunConfigRequest>(v.clone())
            .map_err(|e| ApiError::invalid("$.config", e.to_string()))?,
    };
    for (field, value) in [
        ("recursion_limit", config.recursion_limit),
        ("max_concurrency", config.max_concurrency),
    ] {
        if value == Some(0) {
            return Err(ApiError::invalid(
                format!("$.config.{field}"),
                "must be at least 1",
            ));
        }
    }
    Ok(Some(config))
}

/// Takes the keys a run's input names that its graph's state lacks out of it, as
/// LangGraph drops them; their names, in order.
fn drop_unknown_keys(input: &mut Option<Value>, known: &[&str]) -> Vec<String> {
    let Some(Value::Object(map)) = input else {
        return Vec::new();
    };
    let dropped: Vec<String> = map
        .keys()
        .filter(|k| !known.contains(&k.as_str()))
        .cloned()
        .collect();
    for key in &dropped {
        map.remove(key);
    }
    dropped
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
    Ok(tail(app.clone(), id, run_id, after, detach).into_response())
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
