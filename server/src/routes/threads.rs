//! `/threads`: create, read, search, patch, copy and delete threads; read and
//! write their state; read their history.

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use stategraph::checkpoint::ListOptions;

use super::{Body, Params, page};
use crate::app::App;
use crate::db::{ThreadOrder, ThreadQuery, ThreadRow, ThreadStatus};
use crate::error::ApiError;
use crate::served::Served;
use crate::wire::{
    HistoryQuery, STATE_FIELDS, SortOrder, StateUpdate, THREAD_FIELDS, ThreadCreate, ThreadPatch,
    ThreadSearch, ThreadSortBy, check_select, pick, thread_json,
};

pub(super) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/threads", post(create))
        .route("/threads/search", post(search))
        .route("/threads/count", post(count))
        .route("/threads/{id}", get(one).patch(patch).delete(delete))
        .route("/threads/{id}/copy", post(copy))
        .route("/threads/{id}/state", get(state).post(update_state))
        .route("/threads/{id}/state/checkpoint", post(state_at_body))
        .route("/threads/{id}/state/{checkpoint_id}", get(state_at))
        .route("/threads/{id}/history", get(history_get).post(history))
        .route(
            "/threads/{id}/stream",
            get(super::thread_stream::join_thread),
        )
}

/// The thread, or a 404.
pub(crate) async fn thread(app: &App, id: &str) -> Result<ThreadRow, ApiError> {
    app.db
        .get_thread(id.to_string())
        .await?
        .ok_or_else(|| ApiError::not_found(format!("thread {id}")))
}

/// The graph a thread runs: the one its metadata names, else the only one served.
pub(crate) fn graph_of(app: &App, t: &ThreadRow) -> Result<Option<Arc<dyn Served>>, ApiError> {
    if let Some(id) = t.metadata.get("graph_id").and_then(Value::as_str) {
        return Ok(Some(app.assistant(id)?.graph.clone()));
    }
    if app.assistants.len() == 1 {
        return Ok(app.assistants.values().next().map(|a| a.graph.clone()));
    }
    Ok(None)
}

async fn create(
    State(app): State<Arc<App>>,
    Body(req): Body<ThreadCreate>,
) -> Result<Json<Value>, ApiError> {
    let id = req
        .thread_id
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let do_nothing = match req.if_exists.as_deref() {
        None | Some("raise") => false,
        Some("do_nothing") => true,
        Some(other) => {
            return Err(ApiError::invalid(
                "$.if_exists",
                format!("expected `raise` or `do_nothing`, not `{other}`"),
            ));
        }
    };
    for (field, given) in [("supersteps", &req.supersteps), ("ttl", &req.ttl)] {
        if given.as_ref().is_some_and(|v| !v.is_null()) {
            return Err(ApiError::invalid(
                format!("$.{field}"),
                "not supported by this server: leave it out",
            ));
        }
    }
    let mut metadata = req.metadata.unwrap_or_default();
    if let Some(graph) = &req.graph_id {
        let assistant = app.assistant(graph)?;
        metadata.insert("graph_id".into(), json!(assistant.graph.name()));
        metadata.insert("assistant_id".into(), json!(assistant.id));
    }
    let row = app.db.create_thread(id, metadata, do_nothing).await?;
    Ok(Json(thread_json(&row)))
}

fn query_of(req: ThreadSearch) -> Result<ThreadQuery, ApiError> {
    let status = match req.status.as_deref() {
        None => None,
        Some(s) => Some(ThreadStatus::parse(s).ok_or_else(|| {
            ApiError::invalid(
                "$.status",
                format!("unknown thread status `{s}`; known: idle, busy, interrupted, error"),
            )
        })?),
    };
    let (limit, offset) = page(req.limit, req.offset, 10);
    Ok(ThreadQuery {
        metadata: req.metadata.unwrap_or_default(),
        values: req.values.unwrap_or_default(),
        status,
        ids: req.ids,
        order: match req.sort_by {
            Some(ThreadSortBy::ThreadId) => ThreadOrder::ThreadId,
            Some(ThreadSortBy::Status) => ThreadOrder::Status,
            Some(ThreadSortBy::CreatedAt) => ThreadOrder::CreatedAt,
            None | Some(ThreadSortBy::UpdatedAt | ThreadSortBy::StateUpdatedAt) => {
                ThreadOrder::UpdatedAt
            }
        },
        ascending: req.sort_order == Some(SortOrder::Asc),
        limit,
        offset,
    })
}

/// At most this many `extract` paths per search, as LangGraph Platform allows.
const MAX_EXTRACT: usize = 10;

async fn search(
    State(app): State<Arc<App>>,
    Body(mut req): Body<ThreadSearch>,
) -> Result<Json<Value>, ApiError> {
    let select = check_select(req.select.take(), THREAD_FIELDS, "$.select")?;
    let extract = extract_paths(req.extract.take())?;
    let rows = app.db.search_threads(query_of(req)?).await?;
    let shown = rows.iter().map(|t| {
        let full = thread_json(t);
        let extracted: Map<String, Value> = extract
            .iter()
            .map(|(alias, path)| {
                let v = crate::wire::extract(&full, path).unwrap_or(Value::Null);
                (alias.clone(), v)
            })
            .collect();
        let mut shown = pick(full, select.as_deref());
        if !extract.is_empty() {
            shown["extracted"] = Value::Object(extracted);
        }
        shown
    });
    Ok(Json(shown.collect()))
}

/// A search's `extract`: aliases of paths (strings), at most [`MAX_EXTRACT`].
fn extract_paths(extract: Option<Map<String, Value>>) -> Result<Vec<(String, String)>, ApiError> {
    let extract = extract.unwrap_or_default();
    if extract.len() > MAX_EXTRACT {
        return Err(ApiError::invalid(
            "$.extract",
            format!("at most {MAX_EXTRACT} paths, not {}", extract.len()),
        ));
    }
    extract
        .into_iter()
        .map(|(alias, path)| match path {
            Value::String(p) if !p.is_empty() => Ok((alias, p)),
            _ => Err(ApiError::invalid(
                format!("$.extract.{alias}"),
                "expected a path such as `values.messages[-1]`",
            )),
        })
        .collect()
}

async fn count(
    State(app): State<Arc<App>>,
    Body(req): Body<ThreadSearch>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(json!(app.db.count_threads(query_of(req)?).await?)))
}

async fn one(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    Ok(Json(thread_json(&thread(&app, &id).await?)))
}

async fn patch(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(req): Body<ThreadPatch>,
) -> Result<Json<Value>, ApiError> {
    if req.ttl.as_ref().is_some_and(|v| !v.is_null()) {
        return Err(ApiError::invalid(
            "$.ttl",
            "not supported by this server: leave it out",
        ));
    }
    let row = app
        .db
        .patch_thread(id.clone(), req.metadata.unwrap_or_default())
        .await?
        .ok_or_else(|| ApiError::not_found(format!("thread {id}")))?;
    Ok(Json(thread_json(&row)))
}

async fn delete(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let t = thread(&app, &id).await?;
    if t.status == ThreadStatus::Busy {
        return Err(ApiError::conflict(format!(
            "thread {id} has an active run: cancel it before deleting the thread"
        )));
    }
    app.saver
        .delete_thread(&id)
        .await
        .map_err(ApiError::internal)?;
    app.db.delete_thread(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn copy(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let t = thread(&app, &id).await?;
    let new_id = uuid::Uuid::new_v4().to_string();
    app.saver
        .copy_thread(&id, &new_id)
        .await
        .map_err(ApiError::internal)?;
    app.db
        .create_thread(new_id.clone(), t.metadata.clone(), false)
        .await?;
    let status = if t.status == ThreadStatus::Busy {
        ThreadStatus::Idle
    } else {
        t.status
    };
    app.db
        .set_thread_values(
            new_id.clone(),
            t.values.clone(),
            t.interrupts.clone(),
            status,
        )
        .await?;
    Ok(Json(thread_json(&thread(&app, &new_id).await?)))
}

/// The state of a thread without checkpoints.
fn empty_state(thread_id: &str) -> Value {
    json!({
        "values": {}, "next": [], "tasks": [], "metadata": {}, "created_at": null,
        "checkpoint": { "thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": null, "checkpoint_map": null },
        "parent_checkpoint": null, "checkpoint_id": null, "parent_checkpoint_id": null, "interrupts": [],
    })
}

async fn read_state(
    app: &App,
    id: &str,
    checkpoint: Option<String>,
    subgraphs: bool,
) -> Result<Json<Value>, ApiError> {
    let t = thread(app, id).await?;
    let Some(graph) = graph_of(app, &t)? else {
        return Ok(Json(empty_state(id)));
    };
    let wanted = checkpoint.clone();
    match graph.state(id, checkpoint, subgraphs).await? {
        Some(s) => Ok(Json(s)),
        None if wanted.is_some() => Err(ApiError::not_found(format!(
            "checkpoint {} of thread {id}",
            wanted.unwrap_or_default()
        ))),
        None => Ok(Json(empty_state(id))),
    }
}

#[derive(Debug, Default, Deserialize)]
struct StateParams {
    #[serde(default, deserialize_with = "super::flag")]
    subgraphs: Option<bool>,
}

async fn state(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Params(p): Params<StateParams>,
) -> Result<Json<Value>, ApiError> {
    read_state(&app, &id, None, p.subgraphs.unwrap_or(false)).await
}

async fn state_at(
    State(app): State<Arc<App>>,
    Path((id, checkpoint_id)): Path<(String, String)>,
    Params(p): Params<StateParams>,
) -> Result<Json<Value>, ApiError> {
    read_state(&app, &id, Some(checkpoint_id), p.subgraphs.unwrap_or(false)).await
}

#[derive(Debug, Default, Deserialize)]
struct StateAt {
    #[serde(default)]
    checkpoint: Option<crate::wire::CheckpointRef>,
    #[serde(default)]
    subgraphs: Option<bool>,
}

async fn state_at_body(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(req): Body<StateAt>,
) -> Result<Json<Value>, ApiError> {
    let checkpoint = crate::wire::checkpoint_id(None, req.checkpoint.as_ref());
    read_state(&app, &id, checkpoint, req.subgraphs.unwrap_or(false)).await
}

async fn update_state(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(req): Body<StateUpdate>,
) -> Result<Json<Value>, ApiError> {
    let t = thread(&app, &id).await?;
    if t.status == ThreadStatus::Busy {
        return Err(ApiError::conflict(format!(
            "thread {id} has an active run: wait for it before updating its state"
        )));
    }
    let Some(graph) = graph_of(&app, &t)? else {
        return Err(ApiError::conflict(format!(
            "thread {id} has no graph yet: start a run on it first, or create it with metadata `graph_id`"
        )));
    };
    // Bound first: a crash after the write below must not leave checkpoints the
    // thread cannot name the graph of.
    if !t.metadata.contains_key("graph_id") {
        let mut m = Map::new();
        m.insert("graph_id".into(), json!(graph.name()));
        app.db.patch_thread(id.clone(), m).await?;
    }
    let checkpoint =
        crate::wire::checkpoint_id(req.checkpoint_id.as_ref(), req.checkpoint.as_ref());
    let values = req.values.unwrap_or_else(|| json!({}));
    let saved = graph
        .update_state(&id, values, req.as_node, checkpoint)
        .await?;
    if let Some((values, interrupts)) = graph.latest(&id).await? {
        let status = if interrupts.as_array().is_some_and(|a| !a.is_empty()) {
            ThreadStatus::Interrupted
        } else {
            ThreadStatus::Idle
        };
        app.db
            .set_thread_values(id.clone(), values, interrupts, status)
            .await?;
    }
    let Json(state) = read_state(&app, &id, None, false).await?;
    if let Err(e) = super::thread_stream::publish_state_update(&app, &id, state).await {
        // The update is saved; only the thread streams miss it.
        tracing::warn!(error = %e.detail, thread = %id, "storing a state update event failed");
    }
    Ok(Json(saved))
}

async fn list_history(app: &App, id: &str, q: HistoryQuery) -> Result<Json<Value>, ApiError> {
    let checkpoint = q.checkpoint.as_ref();
    let in_subgraph = checkpoint.is_some_and(|c| {
        c.checkpoint_ns.as_deref().is_some_and(|ns| !ns.is_empty())
            || c.checkpoint_map
                .as_ref()
                .and_then(Value::as_object)
                .is_some_and(|m| !m.is_empty())
    });
    if in_subgraph {
        return Err(ApiError::invalid(
            "$.checkpoint.checkpoint_ns",
            "a subgraph's history is not served: read subgraph states with get_state(subgraphs=True)",
        ));
    }
    if let Some(other) = checkpoint
        .and_then(|c| c.thread_id.as_deref())
        .filter(|t| *t != id)
    {
        return Err(ApiError::invalid(
            "$.checkpoint.thread_id",
            format!("names thread {other}, not {id}"),
        ));
    }
    let select = check_select(q.select.clone(), STATE_FIELDS, "$.select")?;
    let t = thread(app, id).await?;
    let Some(graph) = graph_of(app, &t)? else {
        return Ok(Json(json!([])));
    };
    if let Some(at) = checkpoint.and_then(|c| c.checkpoint_id.clone()) {
        let state = graph.state(id, Some(at), false).await?;
        return Ok(Json(
            state
                .into_iter()
                .map(|s| pick(s, select.as_deref()))
                .collect(),
        ));
    }
    let before = match &q.before {
        Some(Value::String(s)) => Some(s.clone()),
        Some(v) => v
            .get("checkpoint_id")
            .or_else(|| v.get("configurable").and_then(|c| c.get("checkpoint_id")))
            .and_then(Value::as_str)
            .map(str::to_string),
        None => None,
    };
    let options = ListOptions {
        filter: q.metadata.unwrap_or_default(),
        before,
        limit: Some(q.limit.unwrap_or(10).min(1000)),
    };
    let states = graph.history(id, options).await?;
    Ok(Json(
        states
            .into_iter()
            .map(|state| pick(state, select.as_deref()))
            .collect(),
    ))
}

async fn history(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(q): Body<HistoryQuery>,
) -> Result<Json<Value>, ApiError> {
    list_history(&app, &id, q).await
}

#[derive(Debug, Default, Deserialize)]
struct HistoryParams {
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    before: Option<String>,
}

async fn history_get(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Params(p): Params<HistoryParams>,
) -> Result<Json<Value>, ApiError> {
    let q = HistoryQuery {
        limit: p.limit,
        before: p.before.map(Value::String),
        ..HistoryQuery::default()
    };
    list_history(&app, &id, q).await
}
